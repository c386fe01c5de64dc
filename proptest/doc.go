// Package proptest holds property-based tests for any model.Store, built on
// pgregory.net/rapid: a state machine that checks the invariants of
// lua-semantics §6 after every step, a differential run that applies the
// same operations to two stores and compares everything they show, and a
// hostile-input property for go test -fuzz.
//
// # Entry points
//
//	proptest.RunStateMachine(t, newStore, proptest.Options{})
//	proptest.RunDifferential(t, newMemstore, newValkeystore, proptest.Options{Checks: 500})
//	proptest.RunHostileInputs(t, newStore, proptest.Options{})
//	f.Fuzz(rapid.MakeFuzz(proptest.InputProperty(f, newStore, proptest.Options{})))
//
// newStore opens an empty store per sequence; the testing.TB it gets belongs
// to that sequence (Cleanup runs when the sequence ends). The machine calls
// every operation, the optional ones too, so the store must also implement
// model.IndexInspector, model.Blocker, model.GrantReclaimer, model.FlowStore,
// model.SuspendStore, model.AdmissionStore, model.StreamStore,
// model.FeedStore, model.RetentionStore, model.LaneStore,
// model.IndexRepairer and its test hook model.IndexTamperer; a sequence refuses one that does not, naming the
// interface. Event feeds are a store option: each sequence draws the
// feeds its stores keep (both with the default length, both keeping 8 or
// 3 events so that trimming and Behind happen, one of them, or none), and
// a NewStoreFunc wrapped in WithFeeds builds its stores with them:
//
//	proptest.RunStateMachine(t, proptest.WithFeeds(func(t testing.TB, f model.Feeds) model.Store {
//		return memstore.New(&memstore.Options{Feeds: f})
//	}), proptest.Options{})
//
// A store from a NewStoreFunc not wrapped keeps the feeds it was built
// with; the stores of a differential run must keep the same ones. The pieces are
// exported for other tests: Observe reads everything a store shows at one
// instant, Observation.Violations checks one observation, StepViolations
// two consecutive ones, CheckInvariants does both for a single check, and
// ViewError turns an error into a comparable value.
//
// # A sequence
//
// Each sequence opens the store(s), starts a model.SimClock at
// 2025-01-01T00:00:00Z and runs Options.Steps steps (default 50). A step is
// one action drawn by weight: advancing the clock (by a drawn amount, or to
// exactly a lease, grant, delay, deadline, timer, worker, idempotency or
// best-effort stream expiry ±1 ms); creating executions (delays,
// priorities, required capabilities, retry policies, reclaim and replay
// caps, attempt timeouts, deadlines, idempotency keys and TTLs, ids on the
// lane's partition, spread or anywhere); claim grant, claim,
// grant-then-claim, grant-and-claim, claim-next (with live capabilities
// drawn or from the registry); block,
// unblock, route unblock; renew, progress, complete, fail, cancel, delay (by
// the worker with its latest fence, an older one, a corrupted one, none or
// a partial one; or by an operator); change priority; revoke (with no,
// the right or a wrong expected lease); mark expired; reclaim grant,
// reclaim; recover; replay; expire (both reasons); promote; a scanner pass
// (due scan in pages, then mark expired + recover, expire or promote for
// each item); worker register, heartbeat, deregister, expire; reads; and a
// few flows that reach deep states in one step (grant then claim, reclaim
// grant then reclaim, revoke then recover in rounds, replay then cancel in
// rounds, an attempt running into its timeout); and flow graphs
// (model.FlowStore): create, add members, stage edges, set group
// policies, seal, cancel, read, and a
// running member of a sealed flow awaiting children
// (ExecutionAwaitChildren: built on purpose, retried so it replays,
// refused for a stale fence, a parent in no flow or in an unsealed or
// cancelled flow, an existing child or edge id, invalid children, and
// sometimes driven on in the same step: children ended every way, the
// parent resumed, awaiting again, completed and replayed); and suspension
// (model.SuspendStore, suspend.go): pending waitpoints of a running
// attempt (replayed, taken ids, the limit), suspends over composite
// conditions of the execution's pending waitpoints with a few names and
// sources, timeouts of every behaviour and resume policies (Delay,
// KeepWaitpoints, KeepSignals), refused (fence, not found, not pending,
// taken, limit) or replayed, already satisfied by buffered signals;
// signals to waitpoints that exist (buffered, accepted, ignored, resumed,
// replayed ids, duplicate keys and keys whose TTL passed, wrong tokens,
// closed, over the limit); operator resumes; the two scanners' steps
// (SuspensionExpire, WaitpointExpire) at and around their times; and
// resumed executions claimed again (the same attempt, epoch + 1); and
// admission (model.AdmissionStore, admission.go and admission_claim.go):
// three budgets and three quota policies (each also redefined), reports
// with and without dedup keys and executions up to the soft and hard
// limits, releases, resets, the reset and reconcile scanners' steps,
// admissions to a few buckets with a few tokens, releases by the right,
// a wrong or no token, the quota reconciler; executions created with
// budgets, a quota and a key; the engine's claim path (claim-next's Admit
// candidate, the budget reads, the admission, a block on a refusal, the
// claim with a fresh token or none, the lease's end and the releaser
// draining the outbox), the blocked groups and their unblock (with a
// tenant filter), and timer scans with a filter; and attempt output
// streams (model.StreamStore, stream.go): appends by the holder with its
// latest fence or an older, corrupted, missing or partial one, in the
// three modes (binary, empty and text payloads, a few types, durable
// MaxLen 1–4, best-effort TTLs 1–5 s, summary documents on the observed
// version or a wrong one), a scenario that appends several frames to a
// running attempt in one step and then lets its best-effort frames expire
// or closes it (revoke, complete, lease marked expired at its expiry) and
// appends again, and reads and summary reads of any attempt (one past the
// end too) after 0, a kept sequence, the last one or beyond, with and
// without best-effort frames; and event feeds (model.FeedStore, feed.go):
// reads of a random partition's feed after 0, 1, a kept sequence, just
// below the oldest kept, the last one, past it or far past it, with small
// counts or MaxFeedRead, of a feed the stores keep or not. About one call
// in twenty gets one invalid input and must be
// refused as a validation error naming its field. Ids (execution, lease,
// attempt) come from a counter and a drawn byte, so a sequence is fully
// determined by rapid's draws; nothing reads the wall clock or sleeps.
//
// # What is checked
//
// After every step, on every store, through the read methods only
// (Observation):
//
//   - the state vector passes StateVector.Check (terminal ⇔ outcome,
//     phase/eligibility/ownership, running_attempt ⇔ active ∧ leased); the
//     public state is DerivePublicState; the blocking reason is the one the
//     transition writes;
//   - a runnable execution is in exactly the lane index of its eligibility
//     state, an active one in lane:L:active, a terminal one in
//     lane:L:terminal, and in no other lane index; every execution is in
//     all_executions; no unknown index;
//   - lease_expiry ⇔ active; attempt_timeout ⇔ active with a timeout;
//     execution_deadline ⇔ non-terminal with a deadline; so a terminal
//     execution is in no live index;
//   - leased ⇒ a current lease (epoch = the execution's) in
//     worker:<holder>:leases; expired-reclaimable ⇒ still in lease_expiry,
//     active and the holder's worker index; revoked ⇒ no lease, no worker
//     index, still in active and lease_expiry; unowned ⇒ neither;
//   - at most one grant, of the kind the phase allows (claim: runnable and
//     eligible; reclaim: active and reclaimable);
//   - attempts contiguous from 0, total_attempts = max index + 1, distinct
//     ids, epochs rising with the index, at most one open attempt (the
//     current, last one), started while active, suspended exactly when a
//     runnable execution's attempt is interrupted, none open when terminal;
//     pending-attempt lineage matches the attempt state;
//   - a result exactly when completed; lease history sequence numbers rise
//     and its epochs never fall;
//   - ExecutionList pages: every execution created is listed (none lost),
//     once, in its partition, in order;
//   - timer indexes agree with the records: an entry is due at Now exactly
//     when the lease expiry, revocation, attempt timeout, delay or deadline
//     in the record has come, with that time as its score (and the delayed
//     entry names the lane); every due item is in the index it came from;
//   - the live workers are ordered, unexpired, and the ones the stores' own
//     answers imply;
//   - suspension (suspend_observe.go and internal/invariant): a
//     suspended execution is in its lane's suspended index, the
//     partition's suspended set and SuspendedList (with its open
//     suspension), and has exactly one open suspension, whose waitpoints
//     are active and hold exactly its signals, which do not satisfy its
//     condition; a closed suspension leaves no waitpoint active under it
//     and, closed by a signal, was satisfied; a terminal execution has no
//     open waitpoint; suspension_timeout and pending_waitpoint_expiry
//     hold exactly the timed suspensions and the executions with a
//     pending waitpoint, scored by the timeout and the earliest pending
//     expiry (IndexScanDue and PartitionDue);
//   - admission (admission_observe.go and internal/invariant): a
//     budget's usage is at most every positive hard limit and Exhausted
//     names the first dimension at one; a bucket holds at most Rate
//     admissions in its window and Concurrency admissions, Free and
//     RetryAfter follow, and Active and InWindow equal the admissions and
//     window entries the machine's model of QuotaAdmit and QuotaRelease
//     answers holds (which also predicts every admission's outcome and
//     every release); the blocked groups count exactly the partition's
//     budget- and quota-blocked executions per lane and reason and per
//     bucket; an admission token only while active and with a quota; an
//     outbox entry is of the execution's bucket, oldest first, never the
//     token its lease holds now, and a lease that ends holding a token
//     leaves it there; PartitionDue's admission flags agree;
//   - streams (stream_observe.go; every attempt's whole stream and
//     summary): the kept frames are the newest ones (consecutive
//     sequences ending at LastSequence, times not after Now), valid, with
//     a summary version exactly on summary frames, those consecutive and
//     the newest the document's Version (set exactly when Version > 0);
//     an open stream names no close, a never-opened closed one reads
//     no_frames without a time, an opened one a time after its frames; an
//     ended attempt's stream is closed, for its status at its end, and the
//     current attempt's once its lease is marked expired or revoked; and
//     each stream's LastSequence counts the machine's successful appends
//     to it, its Version the summary ones, and a stream that only had
//     best-effort frames keeps them until 2 × TTL after the last one and
//     none from then on;
//   - event feeds (feed_observe.go; every partition's feeds the store
//     keeps, read whole from 0 in pages of MaxFeedRead, and read after 1
//     and after Last + 1): the kept events are the newest ones
//     (consecutive sequences ending at Last, as many as the feed's length
//     allows), each of the partition read and of a listed execution of
//     it, repeating its namespace, lane, kind and flow, with the fields of
//     its feed; a terminal execution's newest kept completion is its
//     outcome at its TerminalAt with its result's size; a read after 0
//     is never behind, one after 1 exactly when events it had not read
//     were dropped, one past Last always; times never fall and are not
//     after Now;
//   - flows: members and edges agree at both ends, the graph is acyclic,
//     the revision counts members plus edges; a group counts only its
//     current generation's edges (0: the flow as built; n: the member's
//     nth await, whose edges are satisfied by any end of their child and
//     decide as AllOf), is sized by them once sealed, and decides exactly
//     when its edges allow;
//
// and between consecutive steps (StepViolations): nothing lost; immutable
// fields unchanged; the lease epoch never falls and rises by exactly one
// per acquisition; attempts and lease history only grow and ended attempts
// never change; terminal records are frozen until replayed; retry and
// reclaim counts fall only on replay; a closed suspension and a closed
// waitpoint are frozen, an open suspension keeps its identity and its
// signals only grow, escalation only sets, and an execution keeps its
// last suspension until it suspends again; a group decides once per
// generation and a generation rises only by an await, above every earlier
// one, and falls only to 0 by a replay; a stream's LastSequence and
// summary version never fall, a frame never changes, the kept frames
// change without an append only by best-effort expiry (all of them), and
// a closed stream stays closed (same time and reason) and takes no frame;
// a feed's Last never falls and an event never changes, and its new
// events are exactly the step's transitions, timed within the step: one
// completion per time an execution became terminal (replays + terminal
// now − terminal before), the newest with its current outcome, and one
// lease event per lease history entry added (same kind, epoch, attempt,
// holder, reason and time, in order) plus a renewed one per successful
// LeaseRenew of the step (its fence's epoch and attempt, the holder, the
// call's time), nothing for any other execution (only what both the feed
// and the history still keep is compared when either dropped some)
// (a stream never opened that read closed while its lease was marked
// expired or revoked may read open again once an operator's delay pauses
// its attempt, as the contract's "a paused attempt reads as open" has
// it); a state change stamps
// last_transition_at and any change last_mutation_at with Now; a step whose
// every call failed changed nothing ("an error means nothing was written").
//
// Answers are checked against the state before the call: a worker's fenced
// operation fails exactly as the fence check order predicts (phase,
// revoked, expired, identity) unless it is a replay; operators fail only on
// a missing or inactive execution; every claim mints epoch+1 with the
// requested lease and the right attempt (resumed or new) and timeout;
// claim-next claims, skips and route-blocks exactly the heads the eligible
// order (priority, creation time, id), grants and capabilities say;
// grants, claims, reclaims, recoveries, revokes, expiries, promotions,
// mark-expired, replays, retries (delay = BackoffMs), creates and
// idempotency keys, awaits (their refusals in order, the generation they
// open, the held parent and new children right after), the worker
// registry, stream appends (a closed stream of the fence's attempt when
// it is the current one first, then the fence order, then the summary's
// base version; a success is LastSequence + 1, the next summary version,
// and keeps one frame more up to the mode's limit) and stream reads (the
// page the observed whole stream implies, attempt_not_found past the last
// attempt) and feed reads (the page the observed whole feed implies,
// Behind when the cursor is past Last or below the oldest kept event but
// 0, feed_disabled for a feed the stores do not keep) answer as their
// preconditions say. A differential run also compares every answer and every observation
// of the two stores (go-cmp, nil and empty equal) and reports the first
// difference as a diff (-A +B).
//
// # Size and flags
//
// RunStateMachine runs Options.Checks sequences (default 1000) of
// Options.Steps steps; RunDifferential defaults to 100 sequences and
// RunHostileInputs to 300 (each a few steps and one hostile call). rapid's
// flags (or their RAPID_* environment variables) override:
//
//	go test ./proptest/ -rapid.checks=10000 -rapid.steps=200
//	go test ./proptest/ -run TestStateMachineMemstore -rapid.v
//
// Unlike rapid's Repeat, a sequence has exactly Steps steps. rapid reads its
// check count from a global flag, so without an explicit -rapid.checks the
// run calls rapid.Check as many times as needed to reach Options.Checks.
//
// # Failures: shrinking and replay
//
// A failure is shrunk (up to -rapid.shrinktime, default 30s; steps the
// failure does not need are dropped or turned into zero clock advances)
// and printed as the trace of the remaining steps, each call with its
// parameters and answer, followed by the violated properties. rapid then
// prints how to replay it:
//
//	To reproduce, specify -run="TestStateMachineMemstore" -rapid.failfile="testdata/rapid/…fail" (or -rapid.seed=…)
//
// and saves the shrunk case in that fail file, under testdata/rapid/<Test>/
// of the package that ran the test (git-ignored); the test replays every
// fail file there first on each run, so keep the file until the bug is
// fixed, then delete it (-rapid.nofailfile skips writing one).
// -rapid.seed=N reruns the sequence of that seed deterministically and
// shrinks it again.
//
// Known store bugs can be tolerated, narrowly and temporarily, with
// Options.KnownViolations (substrings of violation messages), so the rest
// stays checked until they are fixed.
package proptest

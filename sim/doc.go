// Package sim is a deterministic simulator of whole flowfabric engines
// with injected faults: one seed gives one exact history.
//
// A run starts engine processes (an Engine, one or two Workers, the
// engine's scanners) over one memstore, behind a fault-injecting Store,
// under Sched, a clock that also schedules every goroutine the engines
// start. A seeded driver then takes steps: run one runnable goroutine to
// its next yield point (a clock Wait or a store call), move the clock,
// jump it, submit, act as an operator (cancel, revoke, replay, reclaim,
// change priority), run a scanner pass, kill a process (its goroutines
// never run again; its leases are left), stop one gracefully, start a new
// one. The store wrapper fails calls before they apply, loses replies of
// calls that applied, delivers calls twice, makes calls slow, and drops
// or duplicates work, lease and stream notifications. Handlers of three kinds
// suspend (sim/suspend.go) and an outside-world actor signals them with
// the tokens it learns, redelivers, and resumes or cancels them as an
// operator. Submissions carry budgets and keyed quotas, a kind spends on
// budgets, and an admission actor resets budgets, reports operator usage
// and creates the policies (sim/admission.go). A stream kind appends
// durable, best-effort and summary frames to its attempt's stream, other
// handlers sometimes a frame or two first, and an observer follows
// streams a page at a time (Engine.ReadStream, Engine.TailStream woken by
// stream notices the wrapper drops or duplicates; sim/stream.go). A
// quarter of the plain kinds' submissions carry a short retention, so the
// engines' retention trimmers delete them during the run, and an operator
// deletes executions (sim/retention.go). After
// the workload the faults stop and a drain runs until every acknowledged
// execution is terminal.
//
// Checked throughout: the store's invariants (proptest's), retry, reclaim
// and replay caps, that a worker's outcome is accepted only from the
// execution's live lease (so a handler's success after its lease was lost
// is refused), that no execution completes twice without a replay in
// between, that no engine goroutine panics, that signals are taken only by
// open waitpoints, never counted twice for one idempotency key, and that a
// resumed handler reads the signals that satisfied it; that no quota
// bucket runs more handlers under live leases than its concurrency nor
// admits more than its rate in a window, that no budget's usage passes a
// hard limit and that a claim follows a read of each budget not
// exhausted; that a stream takes frames only from the live lease and
// while open, numbers them one after another, keeps what it was given
// (every acknowledged append at its sequence, handler runs in order, a
// second copy of a retried or repeated append counted, not reported:
// appends are not idempotent), versions its summary by the patches
// applied and merges them in order, and closes when its attempt ends, by
// the attempt's status or its lease, at the closing call's Now, never to
// take a frame again; that only terminal executions outside flows are
// deleted, by the trimmer only once their retention ran out; at the end, that nothing acknowledged is lost (the
// outside world answers, or an operator resumes, what is still suspended
// at the drain; budgets are reset), that every quota admission is
// released and every release outbox empty, and that every attempt that
// ended reads closed.
//
// Run returns the event log (same options, byte-identical log) and the
// violations; Shrink finds a shorter failing run of a failing seed. See
// docs/ARCHITECTURE.md, "Simulator", for how determinism is obtained and
// how to extend the simulator with new features.
package sim

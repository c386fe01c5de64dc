package valkeystore

import (
	"github.com/flowfabric/flowfabric/model"
)

// Key schema. P is Options.Prefix (default "ff"), T a partition's hash tag
// "{fp:N}", X an execution's base "P:exec:T:<id>" (the id repeats the tag:
// "ff:exec:{fp:7}:{fp:7}:<uuid>"), and I a partition's index base "P:idx:T:".
// Every key of one script carries the same tag, so each script runs on one
// cluster slot.
//
// Execution (X):
//
//	X:core            HASH    the record (record.go): n the hot numbers and
//	                          s the hot strings (JSON arrays, read on every
//	                          operation), c the cold fields
//	                          ([[numbers],[strings]], read by the operations
//	                          that use them): state vector, times (Unix ms),
//	                          policy, counters, current lease (lease_*),
//	                          grant (grant_*), pending attempt (pending_*),
//	                          the last replayable operation (op_*); and,
//	                          while a stream is open, sf the fence copy
//	                          an append checks (stream_fence,
//	                          lua/lib/record.lua) and, once that stream
//	                          is persistent and server-numbered, sp its
//	                          attempt index (the append's fast path)
//	X:payload         STRING  the payload; absent when empty
//	X:result          STRING  the result; present once completed
//	X:tags            HASH    tags
//	X:attempt:<i>     HASH    attempt i (0-based); total_attempts counts them
//	X:lease:history   LIST    lease history, oldest first, one entry per
//	                          event "<seq>|<epoch>|<attempt>|<at>|<kind>|
//	                          <lease id>|<instance>|<reason>" (sequence
//	                          numbers hist_seq-LLEN+1 .. hist_seq), trimmed
//	                          to the newest model.DefaultLeaseHistory
//	X:stream:<i>      STREAM  attempt i's output frames (model.StreamStore;
//	                          lua/lib/stream.lua), entry ids 0-<seq> (the
//	                          server numbers them once the stream is
//	                          persistent) or, in a stream stored before
//	                          that (its meta has no fmt), <seq>-0; fields
//	                          t type, p payload, e encoding, c correlation
//	                          id, m mode, ts time (ms), v summary version;
//	                          trimmed exactly to the append's limit. While
//	                          the stream has had no durable or summary frame
//	                          it has a server TTL of 2 × TTL + GCSlack
//	                          (garbage only: reads obey the meta's
//	                          expires_at)
//	X:stream:<i>:meta HASH    attempt i's stream: last_seq, closed (1 once
//	                          closed), closed_at, closed_reason, persistent,
//	                          expires_at, be_rate, be_at, doc (the summary
//	                          document), version, doc_first, doc_at, len
//	                          (the frames the stream holds, as of the last
//	                          append that wrote the meta), fmt (2: entry
//	                          ids 0-<seq>). A persistent fmt-2 stream's
//	                          durable frames skip the meta, so its last_seq
//	                          and len lag: its last entry is its last
//	                          sequence. Both exist once the attempt
//	                          appended a frame; the record's stream_open
//	                          is the index + 1 of the attempt whose stream
//	                          is open (0: none)
//
// Partition indexes (I):
//
//	I:lanes                       ZSET (score 0)  lanes of the partition,
//	                                              in byte order: a create
//	                                              lists its lane, the
//	                                              delete of its last
//	                                              execution unlists it
//	                                              (lane_release)
//	I:lane:<L>:eligible           ZSET  −priority·10¹² + created_at
//	I:lane:<L>:delayed            ZSET  delay_until
//	I:lane:<L>:terminal           ZSET  terminal time
//	I:lane:<L>:suspended          ZSET  suspension timeout (9999999999999:
//	                                    none)
//	I:lane:<L>:blocked:<reason>   ZSET  block time; reason dependencies,
//	                                    budget, quota, route, operator,
//	                                    lane_state
//	I:lane:<L>:route:<ns>:<csv>   ZSET  route-blocked executions of
//	                                    namespace <ns> whose required
//	                                    capabilities are <csv>
//	I:lane:<L>:paused             STRING  "<at ms>|<reason>" while the lane is
//	                                      paused (model.LaneStore, lane_ops.go)
//	I:lane:<L>:route_groups       ZSET (score 0)  the non-empty <ns>:<csv>s
//	                                    (a namespace has no ':'; read by
//	                                    lexical range per namespace)
//	I:lease_expiry                ZSET  lease expiry (revoke: revoke time)
//	I:attempt_timeout             ZSET  attempt timeout
//	I:execution_deadline          ZSET  deadline
//	I:all_executions              ZSET (score 0)  every execution, paged
//	                                    with ZRANGEBYLEX
//	I:suspended                   ZSET (score 0)  the suspended executions,
//	                                    paged with ZRANGEBYLEX
//	I:suspension_timeout          ZSET  the open suspension's timeout
//	I:signal_feed                 STREAM  the signal-delivery feed, entry
//	                              ids 0-<seq>, the newest SignalFeedLen
//	I:signal_feed:seq             STR   the last seq written
//	I:pending_waitpoint_expiry    ZSET  the earliest expiry of the
//	                                    execution's pending waitpoints
//	I:retention                   ZSET  when a terminal execution's
//	                                    retention runs out (model.
//	                                    RetentionStore;
//	                                    execution_delete.lua); a flow
//	                                    member's entry stands for its
//	                                    flow and may be moved to the
//	                                    flow's due time (flow_delete.lua)
//	I:counts                      HASH  "<ns>|<lane>|<state>|<kind>" →
//	                                    executions in that public state
//	                                    (model.CountStore; save_exec)
//	I:feed:completions            STREAM  the completions feed
//	                              (model.FeedStore; lua/lib/feed.lua), kept
//	                              only by a store built with it: entry ids
//	                              0-<seq> from the server's auto-sequence,
//	                              fields at, id, ns, lane, kind, flow,
//	                              outcome, bytes; the newest Feeds.Len
//	I:feed:leases                 STREAM  the lease events feed, likewise:
//	                              fields at, id, ns, lane, kind, flow,
//	                              event, epoch, attempt, instance, reason
//
// Suspension, waitpoints and signals (lua/lib/wait.lua): W =
// P:wp:T:<waitpoint> HASH (id, exec, state, created_at, expires_at,
// keep_at, limit, susp, closed_at, closed_by), W:sigs LIST (its signal
// ids), W:dedup HASH (idempotency key → "<expires ms>:<signal id>", with
// a server TTL for garbage only); X:wps ZSET (its waitpoints, by creation
// time), X:susp HASH (its open or last suspension), X:susp:sigs LIST (that
// suspension's signal ids), X:sig HASH (signal id → its fields as
// netstrings), X:sigpay HASH (signal id → payload), X:sigseq STRING (the
// delivery counter). The record's wp_open counts the open waitpoints.
//
// Two indexes of the spec are not stored, because only ExecutionIndexes
// reads them and the records hold them exactly: a lane's active index
// ("lane:<L>:active": the executions whose phase is active) and a worker
// instance's lease index ("worker:<wi>:leases": the executions whose lease
// is held by wi). ExecutionIndexes reports them from the record, so a claim
// and a completion do not write them.
//
// Flows (F = P:flow:T:<flow>, T the flow's partition; docs/ARCHITECTURE.md
// "Flows"; lua/lib/flow.lua):
//
//	F:core          HASH  state, created_at, last_mutation_at,
//	                      member_count, edge_count, graph_revision
//	F:tags          HASH  tags
//	F:members       ZSET (score 0)  member ids
//	F:edge:<edge>   HASH  id, upstream, downstream, pass_result, state,
//	                      revision, created_at
//	F:out:<up>      HASH  downstream → edge id
//	F:in:<down>     HASH  upstream → edge id
//	F:group:<down>  HASH  kind, quorum, on_satisfied (absent: all_of)
//	X:flow          STRING  a member's flow
//	I:flows         ZSET (score 0)  the partition's flows, paged with
//	                      ZRANGEBYLEX (I:flows_done its finished ones);
//	                      flow_delete.lua deletes a finished flow's keys
//	                      and its members
//
// Admission (model.AdmissionStore; lua/lib/admission.lua, budget.lua,
// quota.lua). On the execution partition:
//
//	X:core adm, budgets, quota, quota_key, adm_token, blocked_budget
//	                      the record's attachments, held token, and the
//	                      budget it is blocked on (record.go)
//	I:lane:<L>:adm:b:<budget>        ZSET  block time; the lane's
//	                                       executions blocked on budget
//	I:lane:<L>:adm:q:<quota>:<key>   ZSET  block time; those blocked on
//	                                       that quota bucket
//	I:adm_groups     ZSET (score 0)  the non-empty groups, lane first:
//	                 "<L>\tb\t<budget>", "<L>\tq\t<quota>\t<key>"
//	I:adm_by         ZSET (score 0)  the same, budget or bucket first:
//	                 "b\t<budget>\t<L>", "q\t<quota>\t<key>\t<L>"
//	I:quota_outbox       ZSET  the quota release outbox: score the time
//	                           the lease ended, member "<exec>\t<token>"
//	I:quota_outbox:data  HASH  member → "<quota>\t<key>"
//
// A budget (B = P:budget:{b:M}:<id>, M its budget partition):
//
//	B                   HASH    def, dims, h:<dim>, s:<dim> (limits),
//	                            u:<dim> (usage), created_at,
//	                            interval, action, next_reset, reset_count,
//	                            hard_breaches, soft_breaches, breached_at
//	B:spend:<exec>      HASH    an execution's ledger, dim → amount
//	B:dedup:<key>       STRING  a report's dedup record: its expiry (ms),
//	                            with a server TTL for garbage only
//	P:idx:{b:M}:budgets        ZSET (score 0)  the partition's budgets
//	P:idx:{b:M}:budget_resets  ZSET  next reset time → budget
//
// A quota policy (Q = P:quota:{q:K}:<id>):
//
//	Q                 HASH    rate, window, jitter, concurrency, created_at
//	Q:w:<key>         ZSET    bucket key's rate window: admission time →
//	                          a number from Q:seq:<key>
//	Q:seq:<key>       STRING  the bucket's window sequence
//	Q:a:<key>         HASH    the bucket's admissions: execution →
//	                          "<admitted at ms>:<token>"
//	P:idx:{q:K}:quotas         ZSET (score 0)  the partition's policies
//	P:idx:{q:K}:quota_buckets  ZSET (score 0)  its buckets, "<id>:<key>"
//
// Idempotency: P:idem:T:<ns>:<key> HASH {id, expires_at} in the
// partition of the execution it names.
//
// Worker registry of namespace ns (tag W = "{w:<ns>}"):
//
//	P:worker:W:<wi>   HASH    one registration
//	P:idx:W:workers   ZSET (score 0)  instance ids in byte order
//
// Expiry is decided by comparing the stored expires_at with Now. Idempotency
// and worker records also get a server TTL (their lifetime plus
// Options.GCSlack) so abandoned ones are collected; nothing depends on it.
//
// Work notifications are published on the channel P:work:<lane>, lease
// notices for a worker instance on P:lease:<instance>, changes of the
// attempt streams of partition T on P:stream:T ("<execution id>|<attempt
// index>"), new events of feed <feed> on P:feed:<feed> (the partition's
// number; once per script and feed).

// keyspace builds the keys of one store.
type keyspace struct {
	prefix string
}

func (k keyspace) execBase(id model.ExecutionID) string {
	return k.prefix + ":exec:" + model.PartitionTag(id.Partition()) + ":" + id.String()
}

func (k keyspace) idx(part int) string {
	return k.prefix + ":idx:" + model.PartitionTag(part) + ":"
}

// partKeys are the named keys of partition part.
func (k keyspace) partKeys(part int) map[string]string {
	i := k.idx(part)
	return map[string]string{
		"lanes":           i + "lanes",
		"all":             i + "all_executions",
		"lease_expiry":    i + "lease_expiry",
		"attempt_timeout": i + "attempt_timeout",
		"deadline":        i + "execution_deadline",
		"adm_groups":      i + "adm_groups",
		"adm_by":          i + "adm_by",
		"outbox":          i + "quota_outbox",
		"outbox_data":     i + "quota_outbox:data",
		"retention":       i + "retention",
	}
}

// suspKeys are partKeys plus the partition's suspension indexes.
func (k keyspace) suspKeys(part int) map[string]string {
	m := k.partKeys(part)
	addSuspKeys(k, m, part)
	return m
}

func addSuspKeys(k keyspace, m map[string]string, part int) {
	i := k.idx(part)
	m["suspended"] = i + "suspended"
	m["susp_timeout"] = i + "suspension_timeout"
	m["wp_expiry"] = i + "pending_waitpoint_expiry"
}

// feedKeys are the partition's signal-delivery feed: a stream whose entry
// ids are 0-<seq>, and the last seq written.
func (k keyspace) feedKeys(m map[string]string, part int) map[string]string {
	i := k.idx(part)
	m["feed"] = i + "signal_feed"
	m["feed_seq"] = i + "signal_feed:seq"
	return m
}

// execSuspKeys are execKeys plus the partition's suspension indexes.
func (k keyspace) execSuspKeys(id model.ExecutionID) map[string]string {
	m := k.execKeys(id)
	addSuspKeys(k, m, id.Partition())
	return m
}

// execKeys are the named keys of an execution and of its partition.
func (k keyspace) execKeys(id model.ExecutionID) map[string]string {
	m := k.partKeys(id.Partition())
	x := k.execBase(id)
	m["core"] = x + ":core"
	m["payload"] = x + ":payload"
	m["result"] = x + ":result"
	m["tags"] = x + ":tags"
	m["history"] = x + ":lease:history"
	return m
}

// execFlowKeys are execKeys plus the execution's flow key (X:flow), for
// the reads that name a member's flow; the claim and completion paths use
// execKeys and never touch it.
func (k keyspace) execFlowKeys(id model.ExecutionID) map[string]string {
	m := k.execKeys(id)
	m["exec_flow"] = k.execBase(id) + ":flow"
	return m
}

// flowKeys are the named keys of flow f and of its partition (the
// partition's keys too: resolving a flow's dependencies moves members
// between lane indexes).
func (k keyspace) flowKeys(cfg model.PartitionConfig, f model.FlowID) map[string]string {
	part := cfg.FlowPartition(f)
	base := k.prefix + ":flow:" + model.PartitionTag(part) + ":" + f.String()
	m := k.partKeys(part)
	m["flow_core"] = base + ":core"
	m["flow_tags"] = base + ":tags"
	m["members"] = base + ":members"
	m["flows"] = k.idx(part) + "flows"
	return m
}

// memberKeys are flowKeys plus the keys of member id (in f's partition).
func (k keyspace) memberKeys(cfg model.PartitionConfig, f model.FlowID, id model.ExecutionID) map[string]string {
	m := k.flowKeys(cfg, f)
	x := k.execBase(id)
	m["core"] = x + ":core"
	m["exec_flow"] = x + ":flow"
	return m
}

// budgetPartKeys are the named keys of budget partition part.
func (k keyspace) budgetPartKeys(part int) map[string]string {
	i := k.prefix + ":idx:" + model.BudgetTag(part) + ":"
	return map[string]string{"budgets": i + "budgets", "resets": i + "budget_resets"}
}

// budgetKeys are budgetPartKeys plus budget id's hash (B).
func (k keyspace) budgetKeys(cfg model.PartitionConfig, id model.BudgetID) map[string]string {
	part := cfg.BudgetPartition(id)
	m := k.budgetPartKeys(part)
	m["budget"] = k.prefix + ":budget:" + model.BudgetTag(part) + ":" + id.String()
	return m
}

// quotaPartKeys are the named keys of quota partition part.
func (k keyspace) quotaPartKeys(part int) map[string]string {
	i := k.prefix + ":idx:" + model.QuotaTag(part) + ":"
	return map[string]string{"quotas": i + "quotas", "buckets": i + "quota_buckets"}
}

// quotaKeys are quotaPartKeys plus policy id's hash (Q).
func (k keyspace) quotaKeys(cfg model.PartitionConfig, id model.QuotaID) map[string]string {
	part := cfg.QuotaPartition(id)
	m := k.quotaPartKeys(part)
	m["quota"] = k.prefix + ":quota:" + model.QuotaTag(part) + ":" + id.String()
	return m
}

func (k keyspace) idem(part int, ns model.Namespace, key string) string {
	return k.prefix + ":idem:" + model.PartitionTag(part) + ":" + string(ns) + ":" + key
}

// workerKeys are the named keys of a namespace's registry and, when wi is
// set, of one instance's record.
func (k keyspace) workerKeys(ns model.Namespace, wi model.WorkerInstanceID) map[string]string {
	tag := model.WorkerTag(ns)
	m := map[string]string{"workers": k.prefix + ":idx:" + tag + ":workers"}
	if wi != "" {
		m["worker"] = k.prefix + ":worker:" + tag + ":" + string(wi)
	}
	return m
}

func (k keyspace) workChannel(lane model.LaneID) string {
	return k.prefix + ":work:" + string(lane)
}

func (k keyspace) leaseChannel(wi model.WorkerInstanceID) string {
	return k.prefix + ":lease:" + string(wi)
}

func (k keyspace) streamChannel(part int) string {
	return k.prefix + ":stream:" + model.PartitionTag(part)
}

// eventFeed is partition part's feed f (I:feed:<feed>; not the signal
// feed of feedKeys).
func (k keyspace) eventFeed(part int, f model.FeedKind) string {
	return k.idx(part) + "feed:" + string(f)
}

func (k keyspace) feedChannel(f model.FeedKind) string {
	return k.prefix + ":feed:" + string(f)
}

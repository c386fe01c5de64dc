// Package memstore is the in-memory Store: deterministic, driven only by the
// Now of each call, laid out like the Valkey keyspace (per-partition and
// per-lane sorted sets on tidwall/btree). It is the embedded default and the
// oracle the Valkey store is compared with.
//
// All operations run under one mutex. Iteration orders are those of the
// sorted sets (score, then member bytes) or of sorted names, never of Go
// maps, so the same operations at the same times give the same results.
//
// # Files mirror valkeystore
//
// The operations live in the files of model's sub-interfaces, as in
// valkeystore: execution_ops.go, claim_ops.go, lease_ops.go, scan_ops.go,
// worker_ops.go, read_ops.go, flow_ops.go. The helpers they share live in
// one file per topic, named as the Lua library's topic files
// valkeystore/lua/lib/<topic>.lua:
//
//	keys.go      the layout: partitions, lane sets, route groups, idempotency keys
//	record.go    the execution record, loading it, the describe view
//	state.go     the state vector and the fields that go with it
//	fence.go     fences and replays (validateLease, recordOp, checkFencedOp)
//	attempt.go   attempts and the lease history
//	index.go     the lane indexes (removeFromLane, makeRunnable, releaseLease, terminate)
//	policy.go    retries
//	claim.go     claiming and blocking
//	recovery.go  reclaiming expired and revoked leases
//	front.go     the common front of every operation (lock, load the execution)
//	worker.go    the worker registry
//	create.go    a new execution's record and its partition entries (newExec)
//	flow.go      flows: members, edges, edge groups, the cycle check
//	wait.go      waitpoints and suspensions: their records, indexes, and closing them when an execution ends
//	suspend.go   suspending, signals and resume conditions, resuming, escalating
//	budget.go    budgets on their partitions: usage, breaches, resets, ledgers, report dedup
//	quota.go     quota policies on their partitions: buckets, rate windows, admissions
//	admission.go admission on the execution partition: tokens, claim-next candidates, blocked groups, the release outbox
//	stream.go    attempt output streams: frames, trims, best-effort expiry, summaries, closing
//	feed.go      event feeds: completions and lease events per partition
//	retention.go deleting executions and finished flows, and a flow's retention entries
//
// A helper that does what a Lua helper does has its name in Go case
// (check_fenced_op is checkFencedOp) and lives in the file of the same
// topic, and the record's fields have the Lua record's names (record.go in
// valkeystore), so one case-insensitive grep, underscores aside, finds both
// halves of a rule. A new topic (flows, waitpoints) adds memstore/<topic>.go
// beside lua/lib/<topic>.lua. The other files have no Lua counterpart:
// store.go (Store, New), zset.go (the sorted sets), notify.go and
// lease_notify.go (the watchers, as in valkeystore).
package memstore

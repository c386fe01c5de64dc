package model

// Store is the seam between the engine and its state: the operations the
// engine calls, which every store implements. Each method is one atomic
// transition (or one consistent read) of lua-semantics.md; memstore runs it
// under its lock, valkeystore as one Lua script on one cluster slot.
//
// Every method takes (ctx, *Params) and returns (*Result, error). Params
// carry Now, read once from the engine's clock; stores never read a clock.
// An error means nothing was written. Bad input yields an *Error whose Field
// names the input and that matches ErrValidation.
//
// Required and optional, as in database/sql/driver: Store is required. The
// operations the engine does not call are in optional interfaces that a
// store may implement and a caller finds by a type assertion:
//
//   - IndexInspector: ExecutionIndexes, a test inspection. The
//     conformance suite and the differential need it.
//   - Blocker: ExecutionBlock and ExecutionUnblock, blocks by reason
//     (budget, quota, operator, lane state). The engine's own route
//     blocks go through Store (ExecutionClaimNext, RouteUnblock).
//   - GrantReclaimer: ReclaimGrantIssue and ExecutionReclaim, reclaim by a
//     grant to a chosen worker; the engine recovers with ExecutionRecover.
//   - FlowStore (flow_ops.go): flows, members, dependency edges, edge-group
//     policies and their reads (issue 10, first slice). The conformance
//     suite skips its flow tests without it; proptest requires it.
//   - SuspendStore (suspend_ops.go): suspension, waitpoints and signals
//     (issue 11). The engine asserts it when a handler suspends or a
//     signal is delivered, and runs the suspension scanners only with it.
//   - LaneStore (lane_ops.go): pausing and resuming lanes (issue 14).
//     Every store that runs claims should have it; the engine's
//     PauseLane, ResumeLane and LaneState need it.
//   - CountStore (count_ops.go): executions counted by namespace, lane,
//     kind and public state, for the inspector (issue 14).
//   - TagStore (tag_ops.go): changing an execution's or a flow's tags
//     after create (issue 14). The engine's SetTags and SetFlowTags
//     need it.
//   - IndexRepairer (repair_ops.go): the repairing index reconciler,
//     IndexRepair (issue 14); the engine runs scan.IndexReconciler only
//     with it. IndexTamperer, in the same file, is a test hook that
//     damages one index entry, for the suites only.
//   - RetentionStore (retention_ops.go): ExecutionDelete, deleting one
//     terminal execution (issue 14); FlowDeleter beside it: FlowDelete,
//     deleting a finished flow with all its members in one step. The
//     engine's Delete and DeleteFlow and the retention trimmer assert
//     them.
//   - WorkNotifier and LeaseNotifier (notify.go, lease_notice.go): push
//     instead of polling; the engine uses them when present.
//
// memstore and valkeystore implement all of them. A feature that starts
// calling an optional operation either asserts it (and is unavailable
// without it) or moves it into Store.
//
// Outsiders may implement Store, but it grows with the engine; run
// storetest.Exercise against any implementation (it skips the tests of a
// missing Blocker or GrantReclaimer, naming it).
//
// Each sub-interface has its own file holding its operations' Params,
// Result and Validate: execution_ops.go, claim_ops.go, lease_ops.go,
// scan_ops.go, worker_ops.go and read_ops.go, named like the stores' files.
// The optional interfaces live in the file of their operations.
type Store interface {
	ExecutionStore
	ClaimStore
	LeaseStore
	ScanStore
	WorkerStore
	ReadStore
	// Partitions returns the partition counts the store was opened with.
	Partitions() PartitionConfig
}

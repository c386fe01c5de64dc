// Package model holds the types every other package shares, in two parts.
//
// The part users meet, re-exported by package flowfabric as aliases
// (types.go there): the ids (ExecutionID, LaneID, Kind, Namespace,
// WorkerID, WorkerInstanceID), ExecutionSnapshot (flowfabric.Snapshot)
// with its StateVector, PublicState, Attempt, AttemptType, AttemptStatus,
// LeaseEvent and Fence, RetryPolicy and BackoffKind, FailureCategory,
// Error with its codes and sentinels, and Clock/SimClock. A program and its
// tests need only import flowfabric; importing model for them works too and
// names the same types.
//
// The store seam, for store authors (memstore, valkeystore), the
// conformance suite (storetest), the differential (proptest) and the
// engine; programs do not use it:
//
//   - Store, what the engine calls and every store implements, made of
//     ExecutionStore, ClaimStore, LeaseStore, ScanStore, WorkerStore and
//     ReadStore.
//   - The optional interfaces, found by a type assertion as in
//     database/sql/driver: IndexInspector (ExecutionIndexes, a test
//     inspection), Blocker (ExecutionBlock, ExecutionUnblock),
//     GrantReclaimer (ReclaimGrantIssue, ExecutionReclaim), WorkNotifier
//     and LeaseNotifier. The engine calls none of the first three. The
//     rest are listed in store.go (IndexRepairer and the test hook
//     IndexTamperer among them, repair_ops.go).
//   - Per operation, its Params with Validate, its Result and, where it
//     reports what it did, its outcome type (ExpireOutcome, ...), all in
//     the file of its interface (execution_ops.go, claim_ops.go, ...).
//   - What both stores must compute alike: partition math, EligibleScore,
//     the eligibility → index mapping (IndexFor), the capability rules.
//
// The package imports only the standard library.
package model

// Package model holds the types every other package shares, in two parts.
//
// The part users meet: ids (ExecutionID, LaneID, Kind), the state model
// (PublicState and the seven dimensions behind it), RetryPolicy,
// FailureCategory, AttemptType, Attempt, ExecutionSnapshot, Error with its
// codes and sentinels, and Clock/SimClock. Package flowfabric re-exports
// all of these as aliases (flowfabric.PublicCompleted,
// flowfabric.FailurePermanent, flowfabric.SimClock, ...), so a program and
// its tests need only import flowfabric; importing model for them works
// too and names the same types.
//
// The store seam: Store and its parts (ExecutionStore, ClaimStore,
// LeaseStore, ScanStore, WorkerStore, ReadStore), one Params/Result pair
// per operation with its Validate method, partition math, EligibleScore and
// the capability rules. Store authors (memstore, valkeystore), the
// conformance suite and the engine use this part; programs do not.
//
// The package imports only the standard library.
package model

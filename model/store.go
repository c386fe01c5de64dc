package model

// Store is the seam between the engine and its state. Each method is one
// atomic transition (or one consistent read) of lua-semantics.md; memstore
// runs it under its lock, valkeystore as one Lua script on one cluster slot.
//
// Every method takes (ctx, *Params) and returns (*Result, error). Params
// carry Now, read once from the engine's clock; stores never read a clock.
// An error means nothing was written. Bad input yields an *Error whose Field
// names the input and that matches ErrValidation.
//
// Outsiders may implement Store, but it grows with the engine; run
// storetest.Exercise against any implementation.
//
// Each sub-interface has its own file holding its operations' Params,
// Result and Validate: execution_ops.go, claim_ops.go, lease_ops.go,
// scan_ops.go, worker_ops.go and read_ops.go, named like the stores' files.
// The optional notifiers are in notify.go and lease_notice.go.
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

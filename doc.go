// Package flowfabric is a durable execution engine that Go programs embed.
//
// A program creates an engine over a store, submits executions (jobs), and
// runs workers that claim them under leases:
//
//	engine := flowfabric.New(memstore.New(nil), nil)
//	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"default"}})
//	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[SendEmail]) error {
//		return send(ctx, t.Args.To)
//	}))
//	_ = engine.Start(ctx) // background scanners
//	_ = w.Start(ctx)
//	res, _ := engine.Submit(ctx, SendEmail{To: "a@example.com"}, nil)
//
// # Guarantees
//
// An execution is owned by at most one lease holder at a time. A lease has
// an epoch that grows with every acquisition; handlers get it as a fencing
// token (TaskInfo.LeaseEpoch), and the store refuses a complete, fail or
// renew from an older holder with ErrStaleLease. A worker that dies stops
// renewing; when its lease expires the lease-expiry scanner recovers the
// execution as a new attempt (within its reclaim cap) with no operator
// action. Terminal operations replay idempotently: the same holder asking
// again gets the same answer.
//
// # Stores
//
// memstore keeps state in memory, deterministically, and is the default for
// tests and single-process programs. valkeystore keeps it in Valkey or
// Redis (standalone or cluster) for many processes on many hosts. Both pass
// the same conformance suite (storetest) and are compared operation by
// operation by a differential property test (proptest).
//
// # Time
//
// All time comes from the engine's Clock. Tests use a *model.SimClock;
// package flowfabrictest wires one with auto-advance so minutes of retries
// run in milliseconds.
package flowfabric

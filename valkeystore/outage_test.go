package valkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
)

// TestStopDuringOutage kills the server under a running engine (scanners,
// a worker with a handler in flight, a subscription for wake-ups and lease
// notices) and never brings it back: Stop of the worker and the engine
// still returns (the worker's with the transport error of its deregister),
// and nothing they started keeps running (TestMain's
// goleak check fails the package otherwise).
func TestStopDuringOutage(t *testing.T) {
	srv := redisserver.Start(t, nil)
	s := newStoreWith(t, newClient(t, srv.Addr()), nil)
	e := fastEngine(t, s)
	started := make(chan struct{}, 1)
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{LeaseTTL: 2 * time.Second, PollInterval: 20 * time.Millisecond, DrainTimeout: time.Millisecond})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(ctx context.Context, _ *flowfabric.Task[job]) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a failing test
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(ctx, job{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the handler did not start")
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	// The worker cannot hand its task back or deregister: Stop says so
	// (the lease and the registration expire on the server's clock) and
	// still stops everything it started.
	if err := w.Stop(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("worker stop during the outage: err = %v, ctx = %v; want the deregister's transport error before the bound", err, ctx.Err())
	}
	select {
	case <-w.Stopped():
	default:
		t.Fatal("worker not stopped")
	}
	if err := e.Stop(ctx); err != nil {
		t.Fatalf("engine stop during the outage: %v", err)
	}
}

package flowfabric_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

type ctxIgnorer struct{}

func (ctxIgnorer) Kind() string { return "ctx_ignorer" }

// A handler that ignores its context may still be running when its
// execution, its attempt timed out, is retried on the same worker. The
// worker tracked its tasks by execution id, so the end of the old task
// dropped the new one from the worker's books: the new attempt's lease
// was never renewed and expired while its handler ran, and the execution
// was reclaimed and run a third time. Found by the simulator (sim,
// TestCalm seed 78).
func TestSameExecutionTwiceOnOneWorker(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{LeaseTTL: 1500 * time.Millisecond})
	var calls atomic.Int32
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[ctxIgnorer](func(ctx context.Context, _ *flowfabric.Task[ctxIgnorer]) error {
		if calls.Add(1) == 1 {
			// runs on past its attempt timeout, ignoring its context
			_ = h.Clock.Wait(context.Background(), 8*time.Second, nil)
			return nil
		}
		// the retry runs long enough to need its lease renewed
		return h.Clock.Wait(ctx, 4*time.Second, nil)
	}))
	h.StartWorker(w)
	id := mustSubmit(t, h, ctxIgnorer{}, &flowfabric.SubmitOpts{AttemptTimeout: 5 * time.Second,
		RetryPolicy: &model.RetryPolicy{MaxRetries: 1, InitialDelay: 100 * time.Millisecond}})
	s := h.WaitTerminal(id)
	if s.PublicState != model.PublicCompleted || s.ReclaimCount != 0 || calls.Load() != 2 {
		t.Fatalf("state %s, reclaims %d, handler calls %d; want completed by the retry: 0 reclaims, 2 calls",
			s.PublicState, s.ReclaimCount, calls.Load())
	}
}

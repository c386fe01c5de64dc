package flowfabric_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// BenchmarkDrainMemstore measures the engine's hot path on memstore: b.N
// queued executions with a 4 KiB payload drained by 16 single-slot workers
// with a raw no-op handler.
func BenchmarkDrainMemstore(b *testing.B) {
	ctx := context.Background()
	engine := flowfabric.New(memstore.New(nil), nil)
	payload := make([]byte, 4096)
	for range b.N {
		if _, err := engine.SubmitRaw(ctx, "bench", payload, nil); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Add(b.N)
	var workers []*flowfabric.Worker
	b.ResetTimer()
	for i := range 16 {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("w%d", i)), MaxConcurrent: 1})
		if err := w.HandleRaw("bench", func(context.Context, *flowfabric.TaskInfo) error { wg.Done(); return nil }); err != nil {
			b.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			b.Fatal(err)
		}
		workers = append(workers, w)
	}
	wg.Wait()
	b.StopTimer()
	for _, w := range workers {
		_ = w.Stop(ctx)
	}
}

package flowfabric_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// rapidTB lets a harness report to a rapid check (so failures shrink) and
// runs its cleanups when the check ends.
type rapidTB struct {
	testing.TB
	rt       *rapid.T
	mu       sync.Mutex
	cleanups []func()
}

func (r *rapidTB) Helper()                           {}
func (r *rapidTB) Fatal(args ...any)                 { r.rt.Fatal(args...) }
func (r *rapidTB) Fatalf(format string, args ...any) { r.rt.Fatalf(format, args...) }
func (r *rapidTB) Error(args ...any)                 { r.rt.Error(args...) }
func (r *rapidTB) Errorf(format string, args ...any) { r.rt.Errorf(format, args...) }
func (r *rapidTB) Logf(format string, args ...any)   { r.rt.Logf(format, args...) }
func (r *rapidTB) Cleanup(f func()) {
	r.mu.Lock()
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

func (r *rapidTB) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// completeCounter counts the completions the store accepted (not replays)
// per execution.
type completeCounter struct {
	*memstore.Store
	mu    sync.Mutex
	count map[model.ExecutionID]int
}

func (c *completeCounter) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	r, err := c.Store.ExecutionComplete(ctx, p)
	if err == nil && !r.Replayed {
		c.mu.Lock()
		c.count[p.ID]++
		c.mu.Unlock()
	}
	return r, err
}

type workload struct {
	FailTimes int   `json:"fail_times"`
	WorkMs    int64 `json:"work_ms"`
}

func (workload) Kind() string { return "workload" }

// TestPropertyCrashRecovery drives the engine, workers and scanners on a
// simulated clock while workers crash at random points: no execution is
// lost, none is completed twice, and every execution ends terminal.
func TestPropertyCrashRecovery(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb := &rapidTB{TB: t, rt: rt}
		defer tb.close()
		var counter *completeCounter
		h := flowfabrictest.New(tb, &flowfabrictest.Options{
			Partitions: model.PartitionConfig{FlowPartitions: 8},
			WrapStore: func(s *memstore.Store) model.Store {
				counter = &completeCounter{Store: s, count: map[model.ExecutionID]int{}}
				return counter
			},
		})
		handler := flowfabric.HandlerFunc[workload](func(ctx context.Context, task *flowfabric.Task[workload]) error {
			if task.Args.WorkMs > 0 {
				if err := h.Clock.Wait(ctx, time.Duration(task.Args.WorkMs)*time.Millisecond, nil); err != nil {
					return err
				}
			}
			if task.RetryCount < task.Args.FailTimes {
				return fmt.Errorf("planned failure %d", task.RetryCount)
			}
			return nil
		})
		lanes := []model.LaneID{"a", "b"}
		workerN := 0
		newWorker := func() *flowfabric.Worker {
			workerN++
			w := h.NewWorker(&flowfabric.WorkerConfig{
				WorkerID:      model.WorkerID(fmt.Sprintf("w%d", workerN)),
				Lanes:         lanes,
				MaxConcurrent: rapid.IntRange(1, 3).Draw(rt, "max_concurrent"),
				LeaseTTL:      time.Duration(rapid.IntRange(5, 60).Draw(rt, "lease_s")) * time.Second,
			})
			flowfabric.AddHandler(w, handler)
			h.StartWorker(w)
			return w
		}
		workers := []*flowfabric.Worker{newWorker()}
		var ids []model.ExecutionID
		retries := map[model.ExecutionID]int{}
		steps := rapid.IntRange(5, 30).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0, 1, 2, 3: // submit
				maxRetries := rapid.IntRange(0, 3).Draw(rt, "max_retries")
				args := workload{
					FailTimes: rapid.IntRange(0, 4).Draw(rt, "fail_times"),
					WorkMs:    rapid.Int64Range(0, 90_000).Draw(rt, "work_ms"),
				}
				r, err := h.Engine.Submit(h.Ctx, args, &flowfabric.SubmitOpts{
					Lane:        rapid.SampledFrom(lanes).Draw(rt, "lane"),
					Priority:    rapid.IntRange(0, 3).Draw(rt, "priority"),
					Delay:       time.Duration(rapid.IntRange(0, 120).Draw(rt, "delay_s")) * time.Second,
					RetryPolicy: &model.RetryPolicy{MaxRetries: maxRetries, InitialDelay: time.Second},
				})
				if err != nil {
					rt.Fatalf("submit: %v", err)
				}
				ids = append(ids, r.ID)
				retries[r.ID] = maxRetries
			case 4, 5, 6: // time passes
				h.Advance(time.Duration(rapid.IntRange(1, 120).Draw(rt, "advance_s")) * time.Second)
			case 7, 8: // a worker's process dies and a new one starts
				i := rapid.IntRange(0, len(workers)-1).Draw(rt, "crash")
				workers[i].Crash()
				workers[i] = newWorker()
			case 9:
				if len(workers) < 3 {
					workers = append(workers, newWorker())
				}
			}
		}
		h.RunUntilIdle()
		for _, w := range workers {
			h.StopWorker(w) // their last store calls are done once Stop returns
		}

		seen := map[model.ExecutionID]bool{}
		for _, s := range h.Executions() {
			seen[s.ID] = true
		}
		counter.mu.Lock()
		defer counter.mu.Unlock()
		for _, id := range ids {
			if !seen[id] {
				rt.Fatalf("execution %s was lost", id)
			}
			s, err := h.Engine.Describe(h.Ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			if !s.PublicState.IsTerminal() {
				rt.Fatalf("execution %s ended %s", id, s.PublicState)
			}
			if n := counter.count[id]; n > 1 {
				rt.Fatalf("execution %s completed %d times", id, n)
			}
			if (s.PublicState == model.PublicCompleted) != (counter.count[id] == 1) {
				rt.Fatalf("execution %s is %s but the store accepted %d completions", id, s.PublicState, counter.count[id])
			}
			if c := s.State.Check(); c != "" {
				rt.Fatalf("execution %s: %s", id, c)
			}
		}
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// S6Result is the cancel latency: an operator's Engine.Cancel of a running
// execution → its handler's context done, next to the idle wake (submit →
// handler start) of the same jobs, per store.
type S6Result struct {
	Runs []S6Run `json:"runs"`
}

// S6Run is one store's measurement.
type S6Run struct {
	Store   string `json:"store"`
	Error   string `json:"error,omitempty"`
	Workers int    `json:"workers"`
	// Wake is submit → handler start of a job submitted while every worker
	// idles; Cancel is the start of the Engine.Cancel call → the handler
	// seeing its context done (cause ErrExecutionCancelled), with the lease
	// at its default length (renewed every 20 s).
	Wake       Latency `json:"idle_wake"`
	Cancel     Latency `json:"cancel_to_handler"`
	CancelCall Latency `json:"cancel_call"`
	// Ratio is Cancel.P50 / Wake.P50 (target ≤ 2).
	Ratio float64 `json:"cancel_p50_over_wake_p50"`
	// Causes counts handler context causes that were not
	// ErrExecutionCancelled (0 expected).
	OtherCauses int `json:"other_causes"`
}

type s6Config struct {
	Samples int
}

// runS6 measures cancel latency on memstore and, when addrs is set, on
// valkeystore at addrs.
func runS6(ctx context.Context, addrs []string, c s6Config) S6Result {
	var res S6Result
	res.Runs = append(res.Runs, runS6Store(ctx, "memstore", nil, c))
	if addrs != nil {
		res.Runs = append(res.Runs, runS6Store(ctx, "valkey", addrs, c))
	}
	return res
}

func runS6Store(ctx context.Context, name string, addrs []string, c s6Config) (run S6Run) {
	run.Store, run.Workers = name, 4
	fail := func(err error) S6Run {
		run.Error = err.Error()
		logf("  S6 %s: %v", name, err)
		return run
	}
	engine, stop, err := startEngine(ctx, addrs)
	if err != nil {
		return fail(err)
	}
	defer stop()

	type event struct {
		id    model.ExecutionID
		at    time.Time
		cause error
	}
	started := make(chan event, 1)
	done := make(chan event, 1)
	h := flowfabric.HandlerFunc[benchArgs](func(ctx context.Context, t *flowfabric.Task[benchArgs]) error {
		started <- event{id: t.ID, at: time.Now()}
		<-ctx.Done()
		done <- event{id: t.ID, at: time.Now(), cause: context.Cause(ctx)}
		return ctx.Err()
	})
	var workers []*flowfabric.Worker
	defer func() {
		for _, w := range workers {
			_ = w.Stop(context.Background())
		}
	}()
	for i := range run.Workers {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("cancel-%d", i))})
		flowfabric.AddHandler(w, h)
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
		workers = append(workers, w)
	}
	sleep(ctx, 200*time.Millisecond) // let the workers settle idle

	wait := func(ch <-chan event, what string, i int) (event, error) {
		select {
		case ev := <-ch:
			return ev, nil
		case <-time.After(30 * time.Second): // beyond a renewal: the notice failed
			return event{}, fmt.Errorf("sample %d: %s did not happen within 30 s", i, what)
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
	gap := func() { sleep(ctx, 20*time.Millisecond+time.Duration(rand.IntN(40))*time.Millisecond) }
	var wakes, cancels, calls []time.Duration
	for i := range c.Samples {
		gap()
		t0 := time.Now()
		r, err := engine.Submit(ctx, benchArgs{Seq: int64(i)}, nil)
		if err != nil {
			return fail(err)
		}
		st, err := wait(started, "the handler start", i)
		if err != nil {
			return fail(err)
		}
		wakes = append(wakes, st.at.Sub(t0))
		gap() // the handler runs; the other workers idle
		t1 := time.Now()
		if err := engine.Cancel(ctx, r.ID, "bench"); err != nil {
			return fail(err)
		}
		calls = append(calls, time.Since(t1))
		ev, err := wait(done, "the handler's context done", i)
		if err != nil {
			return fail(err)
		}
		cancels = append(cancels, ev.at.Sub(t1))
		if !errors.Is(ev.cause, flowfabric.ErrExecutionCancelled) {
			run.OtherCauses++
		}
	}
	run.Wake, run.Cancel, run.CancelCall = summarize(wakes), summarize(cancels), summarize(calls)
	if run.Wake.P50 > 0 {
		run.Ratio = run.Cancel.P50 / run.Wake.P50
	}
	return run
}

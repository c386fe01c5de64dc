package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// S7Result is the delay error of timed work on an idle engine: how late
// (start − due) a delayed submission and a retry after a failure start,
// with the scanners at their default intervals.
type S7Result struct {
	Jobs int     `json:"jobs_per_kind"`
	Rows []S7Row `json:"rows"`
	Note string  `json:"note"`
}

// S7Row is one store.
type S7Row struct {
	Store string `json:"store"`
	Error string `json:"error,omitempty"`
	// Delay: Submit with RunAt = now + d (d uniform in 20–100 ms); due is
	// RunAt. Retry: the handler fails the first attempt under a fixed
	// policy of d; due is the failure's return + d (the store's own due
	// time is a little later, so this over-states the error).
	Delay Latency `json:"delay_error"`
	Retry Latency `json:"retry_error"`
}

type s7Args struct {
	Seq   int  `json:"seq"`
	Retry bool `json:"retry"`
}

func (s7Args) Kind() string { return "s7_timed" }

// runS7 measures both kinds, one job at a time (the engine is otherwise
// idle), on memstore and, when addrs is set, valkeystore.
func runS7(ctx context.Context, addrs []string, jobs int) S7Result {
	res := S7Result{Jobs: jobs, Note: "one job at a time on an idle engine, scanners at their default intervals (delayed promoter 750 ms, sweep 1 min)"}
	res.Rows = append(res.Rows, runS7Store(ctx, "memstore", nil, jobs))
	if addrs != nil {
		res.Rows = append(res.Rows, runS7Store(ctx, "valkey", addrs, jobs))
	}
	return res
}

func runS7Store(ctx context.Context, name string, addrs []string, jobs int) (row S7Row) {
	row.Store = name
	fail := func(err error) S7Row {
		row.Error = err.Error()
		logf("  S7 %s: %v", name, err)
		return row
	}
	engine, stop, err := startEngine(ctx, addrs)
	if err != nil {
		return fail(err)
	}
	defer stop()

	var mu sync.Mutex
	failedAt := map[int]time.Time{}
	started := make(chan time.Time, 1)
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "s7", MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[s7Args](func(_ context.Context, t *flowfabric.Task[s7Args]) error {
		now := time.Now()
		if t.Args.Retry && t.Attempt == 0 {
			mu.Lock()
			failedAt[t.Args.Seq] = time.Now()
			mu.Unlock()
			return errors.New("fail once")
		}
		started <- now
		return nil
	}))
	if err := w.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	sleep(ctx, 200*time.Millisecond) // the first sweep

	rng := rand.New(rand.NewPCG(6, 6))
	var delays, retries []time.Duration
	for i := range 2 * jobs {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		retry := i%2 == 1
		d := time.Duration(20+rng.IntN(81)) * time.Millisecond
		opts := &flowfabric.SubmitOpts{}
		var due time.Time
		if retry {
			opts.RetryPolicy = &model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: d}
		} else {
			due = time.Now().Add(d)
			opts.RunAt = due
		}
		if _, err := engine.Submit(ctx, s7Args{Seq: i, Retry: retry}, opts); err != nil {
			return fail(err)
		}
		var at time.Time
		select {
		case at = <-started:
		case <-time.After(30 * time.Second):
			return fail(fmt.Errorf("job %d did not start within 30 s", i))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
		if retry {
			mu.Lock()
			due = failedAt[i].Add(d)
			mu.Unlock()
			retries = append(retries, at.Sub(due))
		} else {
			delays = append(delays, at.Sub(due))
		}
	}
	row.Delay, row.Retry = summarize(delays), summarize(retries)
	return row
}

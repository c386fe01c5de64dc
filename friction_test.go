package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

type withRetryOpts struct{}

func (withRetryOpts) Kind() string { return "with_retry_opts" }

func (withRetryOpts) SubmitOpts() flowfabric.SubmitOpts {
	return flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 3}}
}

// TestDefaultRetryPolicy: an execution submitted without a policy gets the
// engine's default (25 retries unless configured); the args' options and
// the submit's options override it, and NoRetries turns retries off.
func TestDefaultRetryPolicy(t *testing.T) {
	submitPolicy := func(t *testing.T, cfg *flowfabric.Config, args flowfabric.Args, opts *flowfabric.SubmitOpts) flowfabric.RetryPolicy {
		t.Helper()
		h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: cfg})
		res, err := h.Engine.Submit(h.Ctx, args, opts)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := h.Engine.Describe(h.Ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		return snap.RetryPolicy
	}
	def := flowfabric.DefaultRetryPolicy()
	if def.MaxRetries != 25 {
		t.Fatalf("DefaultRetryPolicy().MaxRetries = %d, want 25", def.MaxRetries)
	}
	custom := &flowfabric.RetryPolicy{MaxRetries: 7, InitialDelay: 2 * time.Second}
	for _, tc := range []struct {
		name string
		cfg  *flowfabric.Config
		args flowfabric.Args
		opts *flowfabric.SubmitOpts
		want int
	}{
		{"zero config", nil, greet{}, nil, 25},
		{"engine default", &flowfabric.Config{DefaultRetryPolicy: custom}, greet{}, nil, 7},
		{"engine no retries", &flowfabric.Config{DefaultRetryPolicy: flowfabric.NoRetries()}, greet{}, nil, 0},
		{"per kind", &flowfabric.Config{DefaultRetryPolicy: custom}, withRetryOpts{}, nil, 3},
		{"per submit", &flowfabric.Config{DefaultRetryPolicy: custom}, withRetryOpts{}, &flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 1}}, 1},
		{"per submit none", nil, greet{}, &flowfabric.SubmitOpts{RetryPolicy: flowfabric.NoRetries()}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := submitPolicy(t, tc.cfg, tc.args, tc.opts); got.MaxRetries != tc.want {
				t.Errorf("MaxRetries = %d, want %d (policy %+v)", got.MaxRetries, tc.want, got)
			}
		})
	}
	// The engine copies the configured policy: changing it later changes nothing.
	cfg := &flowfabric.Config{DefaultRetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 2}}
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: cfg})
	cfg.DefaultRetryPolicy.MaxRetries = 9
	res, err := h.Engine.Submit(h.Ctx, greet{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap, _ := h.Engine.Describe(h.Ctx, res.ID); snap.RetryPolicy.MaxRetries != 2 {
		t.Errorf("MaxRetries = %d after changing the config's policy, want 2", snap.RetryPolicy.MaxRetries)
	}
}

// TestTaskInfoLastAttempt: a handler sees the retry limit and knows when a
// failure is final.
func TestTaskInfoLastAttempt(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	var seen []string
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[flaky]) error {
		seen = append(seen, fmt.Sprintf("%d/%d last=%v", t.RetryCount, t.MaxRetries, t.LastAttempt()))
		return errors.New("boom")
	}))
	h.StartWorker(w)
	res, err := h.Engine.Submit(h.Ctx, flaky{}, &flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if snap := h.WaitTerminal(res.ID); snap.PublicState != flowfabric.PublicFailed {
		t.Fatalf("state %s", snap.PublicState)
	}
	want := []string{"0/2 last=false", "1/2 last=false", "2/2 last=true"}
	if !slices.Equal(seen, want) {
		t.Fatalf("handler saw %q, want %q", seen, want)
	}
}

type seqJob struct {
	N int `json:"n"`
}

func (seqJob) Kind() string { return "seq_job" }

// TestFIFOWithinOneInstant: executions of equal priority submitted at the
// same instant (every submission between two harness calls shares one
// simulated instant) run in submission order.
func TestFIFOWithinOneInstant(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 1})
	var order []int
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(_ context.Context, t *flowfabric.Task[seqJob]) error {
		order = append(order, t.Args.N)
		return nil
	}))
	const n = 200
	for i := range n {
		if _, err := h.Engine.Submit(h.Ctx, seqJob{N: i}, &flowfabric.SubmitOpts{Priority: 5}); err != nil {
			t.Fatal(err)
		}
	}
	h.StartWorker(w)
	h.RunUntilIdle()
	if len(order) != n {
		t.Fatalf("ran %d of %d", len(order), n)
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("run order %v, want 0..%d in order", order, n-1)
		}
	}
}

// TestPastAndNegativeTimes: one rule for every SubmitOpts field: a past
// time is already due, a negative duration is an error naming the field
// the user set (never the store's DelayUntil).
func TestPastAndNegativeTimes(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	now := h.Clock.Now()
	for _, tc := range []struct {
		name  string
		opts  flowfabric.SubmitOpts
		field string
	}{
		{"negative delay", flowfabric.SubmitOpts{Delay: -time.Second}, "Delay"},
		{"negative attempt timeout", flowfabric.SubmitOpts{AttemptTimeout: -time.Second}, "AttemptTimeout"},
		{"negative idempotency ttl", flowfabric.SubmitOpts{IdempotencyKey: "k", IdempotencyTTL: -time.Second}, "IdempotencyTTL"},
		{"run at before 1970", flowfabric.SubmitOpts{RunAt: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}, "RunAt"},
		{"run at after 9999", flowfabric.SubmitOpts{RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "RunAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Engine.Submit(h.Ctx, greet{}, &tc.opts)
			var fe *flowfabric.Error
			if !errors.Is(err, flowfabric.ErrValidation) || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a validation error naming %s", err, tc.field)
			}
		})
	}
	for _, tc := range []struct {
		name string
		opts flowfabric.SubmitOpts
		want flowfabric.PublicState
	}{
		{"past run at runs now", flowfabric.SubmitOpts{RunAt: now.Add(-time.Hour)}, flowfabric.PublicWaiting},
		{"zero delay runs now", flowfabric.SubmitOpts{}, flowfabric.PublicWaiting},
		{"future run at waits", flowfabric.SubmitOpts{RunAt: now.Add(time.Hour)}, flowfabric.PublicDelayed},
		{"positive delay waits", flowfabric.SubmitOpts{Delay: time.Minute}, flowfabric.PublicDelayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.Engine.Submit(h.Ctx, greet{}, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.PublicState != tc.want {
				t.Fatalf("state %s, want %s", res.PublicState, tc.want)
			}
		})
	}
}

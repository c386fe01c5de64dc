package flowfabric_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

// hookJob is the payload of the outcome hook tests.
type hookJob struct {
	Do string `json:"do"` // "ok", "fail", "snooze", "cancel", "suspend", "hang"
}

func (hookJob) Kind() string { return "hook_job" }

// TestWorkerOnOutcome: OnOutcome hears, once per run of a handler and
// after the engine recorded it, what became of it: completed, failed
// (retrying at a time, or for good), snoozed until a time, suspended,
// cancelled by the handler, and not recorded when the lease was taken
// away (with the cause the handler's context ended with).
func TestWorkerOnOutcome(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	type told struct {
		id      flowfabric.ExecutionID
		resumed bool
		o       flowfabric.AttemptOutcome
	}
	var mu sync.Mutex
	var got []told
	var hanging bool
	outcomes := func(id flowfabric.ExecutionID) []told {
		mu.Lock()
		defer mu.Unlock()
		var r []told
		for _, g := range got {
			if g.id == id {
				r = append(r, g)
			}
		}
		return r
	}
	w := h.NewWorker(&flowfabric.WorkerConfig{
		WorkerID: "outcomes",
		OnOutcome: func(ctx context.Context, t *flowfabric.TaskInfo, o *flowfabric.AttemptOutcome) {
			mu.Lock()
			got = append(got, told{t.ID, t.Resumed, *o})
			mu.Unlock()
		},
	})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[hookJob]) error {
		switch t.Args.Do {
		case "fail":
			return errors.New("flaky")
		case "snooze":
			if !t.Resumed {
				return flowfabric.Snooze(time.Minute)
			}
		case "cancel":
			return flowfabric.Cancel(errors.New("not wanted"))
		case "suspend":
			if !t.Resumed {
				return flowfabric.Suspend(flowfabric.OperatorOnly(), nil)
			}
		case "hang":
			mu.Lock()
			hanging = true
			mu.Unlock()
			_ = h.Clock.Wait(ctx, 0, nil) // until the lease is taken away (idle on the simulated clock)
			return ctx.Err()
		}
		return nil
	}))
	h.StartWorker(w)
	start := h.Clock.Now()

	ok := mustSubmit(t, h, hookJob{Do: "ok"}, nil)
	h.WaitTerminal(ok)
	h.RunUntil(func() bool { return len(outcomes(ok)) == 1 })
	if o := outcomes(ok)[0].o; o.Kind != flowfabric.AttemptCompleted || o.Kind.String() != "completed" {
		t.Fatalf("ok: %+v", o)
	}

	retryOnce := &flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 1, Backoff: flowfabric.BackoffFixed, Delay: time.Second}}
	fail := mustSubmit(t, h, hookJob{Do: "fail"}, retryOnce)
	h.WaitTerminal(fail)
	h.RunUntil(func() bool { return len(outcomes(fail)) == 2 })
	fo := outcomes(fail)
	if f := fo[0].o; f.Kind != flowfabric.AttemptFailed || !f.Failure.Retrying || f.Failure.RetryAt.Before(start) {
		t.Fatalf("first failure: %+v", f)
	}
	if f := fo[1].o; f.Kind != flowfabric.AttemptFailed || f.Failure.Retrying || f.Failure.Err == nil {
		t.Fatalf("last failure: %+v", f)
	}

	snooze := mustSubmit(t, h, hookJob{Do: "snooze"}, nil)
	h.WaitTerminal(snooze)
	h.RunUntil(func() bool { return len(outcomes(snooze)) == 2 })
	so := outcomes(snooze)
	if so[0].o.Kind != flowfabric.AttemptSnoozed || so[0].o.Until.Before(start.Add(time.Minute)) ||
		so[1].o.Kind != flowfabric.AttemptCompleted || !so[1].resumed {
		t.Fatalf("snooze: %+v", so)
	}

	cancel := mustSubmit(t, h, hookJob{Do: "cancel"}, nil)
	h.WaitTerminal(cancel)
	h.RunUntil(func() bool { return len(outcomes(cancel)) == 1 })
	if o := outcomes(cancel)[0].o; o.Kind != flowfabric.AttemptCancelled || o.Err == nil || o.Err.Error() != "not wanted" {
		t.Fatalf("cancel: %+v", o)
	}

	susp := mustSubmit(t, h, hookJob{Do: "suspend"}, nil)
	h.RunUntil(func() bool { return len(outcomes(susp)) == 1 })
	if o := outcomes(susp)[0].o; o.Kind != flowfabric.AttemptSuspended || o.Again {
		t.Fatalf("suspend: %+v", o)
	}
	if err := h.Engine.Resume(h.Ctx, susp); err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(susp)
	h.RunUntil(func() bool { return len(outcomes(susp)) == 2 })
	if g := outcomes(susp)[1]; g.o.Kind != flowfabric.AttemptCompleted || !g.resumed {
		t.Fatalf("resumed: %+v", g)
	}

	hang := mustSubmit(t, h, hookJob{Do: "hang"}, nil)
	h.RunUntil(func() bool { mu.Lock(); defer mu.Unlock(); return hanging })
	if err := h.Engine.Cancel(h.Ctx, hang, "operator"); err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool { return len(outcomes(hang)) == 1 })
	o := outcomes(hang)[0].o
	if o.Kind != flowfabric.AttemptNotRecorded || !errors.Is(o.Err, flowfabric.ErrLeaseLost) ||
		!errors.Is(o.Err, flowfabric.ErrExecutionCancelled) || o.Kind.String() != "not_recorded" {
		t.Fatalf("lost lease: %+v (%v)", o, o.Err)
	}
}

// TestOnScannerPass: Config.OnScannerPass is told about the scanners'
// passes, with their names, what they did and how long they took on the
// engine's clock.
func TestOnScannerPass(t *testing.T) {
	var mu sync.Mutex
	passes := map[string]flowfabric.ScannerPass{}
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		OnScannerPass: func(p flowfabric.ScannerPass) {
			mu.Lock()
			if p.Result.Acted > 0 || passes[p.Scanner].Scanner == "" {
				passes[p.Scanner] = p
			}
			mu.Unlock()
		},
	}})
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[hookJob]) error { return nil }))
	h.StartWorker(w)
	id := mustSubmit(t, h, hookJob{Do: "ok"}, &flowfabric.SubmitOpts{Delay: time.Minute})
	h.WaitTerminal(id)
	h.RunUntil(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return passes["delayed_promoter"].Result.Acted > 0 && passes["sweeper"].Scanner != ""
	})
	mu.Lock()
	defer mu.Unlock()
	for name, p := range passes {
		if p.Scanner != name || p.Took < 0 || p.Err != nil || p.Panicked {
			t.Fatalf("pass %s: %+v", name, p)
		}
	}
}

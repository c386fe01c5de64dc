package flowfabrictest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ping struct {
	N int `json:"n"`
}

func (ping) Kind() string { return "ping" }

// Time stands still while the test body runs and moves only inside harness
// calls; a day of delays passes in milliseconds.
func TestHarnessTime(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[ping](func(context.Context, *flowfabric.Task[ping]) error { return nil }))
	h.StartWorker(w)
	start := h.Clock.Now()
	r, err := h.Engine.Submit(h.Ctx, ping{N: 1}, &flowfabric.SubmitOpts{Delay: 6 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Clock.Now().Equal(start) {
		t.Fatal("time moved while the test body ran")
	}
	snap := h.WaitTerminal(r.ID)
	if snap.PublicState != model.PublicCompleted || snap.StartedAt.Before(start.Add(6*time.Hour)) {
		t.Fatalf("%s started %s", snap.PublicState, snap.StartedAt)
	}
	got := flowfabrictest.RequireSubmitted(h, ping{N: 1})
	if got.Snapshot.ID != r.ID {
		t.Fatalf("found %s", got.Snapshot.ID)
	}
	flowfabrictest.RequireNotSubmitted(h, func(p ping) bool { return p.N == 2 })
	if all := h.RunUntilIdle(); len(all) != 1 {
		t.Fatalf("%d executions", len(all))
	}
}

// fakeTB records a fatal failure instead of stopping the test.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.failed = true
	panic(f)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestRequireSubmittedFails(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	if _, err := h.Engine.Submit(h.Ctx, ping{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	fake := &fakeTB{TB: t}
	h.T = fake
	func() {
		defer func() { _ = recover() }()
		flowfabrictest.RequireSubmitted(h, ping{N: 7})
	}()
	h.T = t
	if !fake.failed {
		t.Fatal("RequireSubmitted accepted args that were never submitted")
	}
}

// RunUntil gives up after MaxSimulated of simulated time.
func TestRunUntilBounded(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{MaxSimulated: time.Hour})
	fake := &fakeTB{TB: t}
	h.T = fake
	func() {
		defer func() { _ = recover() }()
		h.RunUntil(func() bool { return false })
	}()
	h.T = t
	if !fake.failed {
		t.Fatal("RunUntil never gave up")
	}
	if h.Clock.Now().Before(flowfabrictest.DefaultStart.Add(time.Hour)) {
		t.Fatalf("gave up at %s", h.Clock.Now())
	}
}

// WaitTerminal's failure says what the execution waits on.
func TestWaitTerminalSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *flowfabric.SubmitOpts
		want string
	}{
		{"no worker", nil, `waiting for a worker on lane "default" to claim kind "ping"`},
		{"capability", &flowfabric.SubmitOpts{RequiredCapabilities: []string{"gpu"}}, "waiting for a worker with capabilities [gpu]"},
		{"delayed", &flowfabric.SubmitOpts{Delay: 48 * time.Hour}, "delayed until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := flowfabrictest.New(t, &flowfabrictest.Options{MaxSimulated: time.Hour})
			if tc.opts != nil && tc.opts.RequiredCapabilities != nil {
				// a worker without the capability parks the execution as blocked by route
				w := h.NewWorker(nil)
				flowfabric.AddHandler(w, flowfabric.WorkFunc(func(context.Context, *flowfabric.Task[ping]) error { return nil }))
				h.StartWorker(w)
			}
			res, err := h.Engine.Submit(h.Ctx, ping{N: 1}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			fake := &fakeTB{TB: t}
			h.T = fake
			func() {
				defer func() { _ = recover() }()
				h.WaitTerminal(res.ID)
			}()
			h.T = t
			if !fake.failed || !strings.Contains(fake.msg, tc.want) {
				t.Fatalf("WaitTerminal failed=%v with %q, want it to say %q", fake.failed, fake.msg, tc.want)
			}
		})
	}
}

type mail struct {
	To string `json:"to"`
}

func (mail) Kind() string { return "mail" }

// Work runs one handler inline with a real TaskInfo and reports every kind
// of outcome.
func TestWork(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	handler := flowfabric.WorkFunc(func(ctx context.Context, task *flowfabric.Task[mail]) error {
		if err := task.Progress(ctx, 50, "halfway"); err != nil {
			return err
		}
		switch task.Args.To {
		case "ok":
			return task.SetResult([]byte("sent"))
		case "snooze":
			return flowfabric.Snooze(time.Minute)
		case "cancel":
			return flowfabric.Cancel(errors.New("unsubscribed"))
		case "permanent":
			return flowfabric.Permanent(errors.New("bad address"))
		case "panic":
			panic("boom")
		case "big":
			if err := task.SetResult(make([]byte, flowfabric.MaxResultBytes+1)); !errors.Is(err, flowfabric.ErrValidation) {
				return fmt.Errorf("SetResult of a too large result: %w", err)
			}
			return nil // ignores the refusal
		}
		return fmt.Errorf("attempt %d/%d (epoch %d)", task.RetryCount, task.MaxRetries, task.LeaseEpoch)
	})
	for _, tc := range []struct {
		to    string
		check func(t *testing.T, r *flowfabric.WorkResult)
	}{
		{"ok", func(t *testing.T, r *flowfabric.WorkResult) {
			if !r.Completed || r.Err != nil || string(r.Result) != "sent" || r.Snapshot.PublicState != flowfabric.PublicCompleted {
				t.Fatalf("%+v", r)
			}
			if r.Snapshot.ProgressPercent != 50 || r.Snapshot.ProgressMessage != "halfway" {
				t.Fatalf("progress %d %q", r.Snapshot.ProgressPercent, r.Snapshot.ProgressMessage)
			}
		}},
		{"big", func(t *testing.T, r *flowfabric.WorkResult) {
			if r.Completed || r.FailureCategory != flowfabric.FailureInvalidOutcome || r.Snapshot.PublicState != flowfabric.PublicFailed {
				t.Fatalf("%+v", r)
			}
		}},
		{"snooze", func(t *testing.T, r *flowfabric.WorkResult) {
			if !r.Snoozed || r.SnoozeFor != time.Minute || r.Snapshot.PublicState != flowfabric.PublicDelayed {
				t.Fatalf("%+v", r)
			}
		}},
		{"cancel", func(t *testing.T, r *flowfabric.WorkResult) {
			if !r.Cancelled || r.Snapshot.PublicState != flowfabric.PublicCancelled {
				t.Fatalf("%+v", r)
			}
		}},
		{"permanent", func(t *testing.T, r *flowfabric.WorkResult) {
			if r.FailureCategory != flowfabric.FailurePermanent || r.Snapshot.PublicState != flowfabric.PublicFailed {
				t.Fatalf("%+v", r)
			}
		}},
		{"panic", func(t *testing.T, r *flowfabric.WorkResult) {
			if r.FailureCategory != flowfabric.FailurePanic || r.Snapshot.PublicState != flowfabric.PublicDelayed {
				t.Fatalf("%+v", r)
			}
		}},
		{"transient", func(t *testing.T, r *flowfabric.WorkResult) {
			if r.FailureCategory != flowfabric.FailureTransient || r.Err == nil || r.Err.Error() != "attempt 0/25 (epoch 1)" ||
				r.Snapshot.PublicState != flowfabric.PublicDelayed || r.Snapshot.RetryCount != 1 {
				t.Fatalf("%+v", r)
			}
		}},
	} {
		t.Run(tc.to, func(t *testing.T) { tc.check(t, flowfabrictest.Work(h, handler, mail{To: tc.to}, nil)) })
	}
}

// A handler called directly with a hand-built Task can report progress.
func TestHandBuiltTaskProgress(t *testing.T) {
	task := &flowfabric.Task[mail]{Args: mail{To: "x"}, TaskInfo: &flowfabric.TaskInfo{}}
	if err := task.Progress(context.Background(), 10, "hi"); err != nil {
		t.Fatal(err)
	}
	if !task.Fence().IsZero() {
		t.Fatal("fence of a hand-built task")
	}
}

// downComplete fails every completion with a transport error (the store
// is unreachable) and counts the calls.
type downComplete struct {
	*memstore.Store
	calls atomic.Int64
}

func (s *downComplete) ExecutionComplete(context.Context, *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	s.calls.Add(1)
	return nil, errors.New("connection refused")
}

// StopWorker never deadlocks on the harness's own clock, even while a
// completion backs off on it (issue 18, defect 8): the worker's stop waits
// for its tasks on the clock, so simulated time still moves.
func TestStopWorkerWhileCompletionBacksOff(t *testing.T) {
	var st *downComplete
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(m *memstore.Store) model.Store {
		st = &downComplete{Store: m}
		return st
	}})
	w := h.NewWorker(&flowfabric.WorkerConfig{DrainTimeout: time.Nanosecond})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[ping](func(context.Context, *flowfabric.Task[ping]) error { return nil }))
	h.StartWorker(w)
	if _, err := h.Engine.Submit(h.Ctx, ping{}, nil); err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool { return st.calls.Load() > 0 })
	// bounded in real time so the old deadlock fails instead of hanging
	ctx, cancel := context.WithTimeout(h.Ctx, 20*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("stop while a completion backs off on the simulated clock: %v", err)
	}
}

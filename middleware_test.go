package flowfabric_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

type ctxKey struct{}

// mwJob is the payload of the middleware tests.
type mwJob struct {
	Do string `json:"do"` // "ok", "fail", "panic", "mwpanic"
}

func (mwJob) Kind() string { return "mw_job" }

// TestWorkerMiddleware: middleware wraps every handler, the first
// outermost; it sees the task, passes values in the context, can turn an
// error into another, and a panic inside it is caught like a handler's.
func TestWorkerMiddleware(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var mu sync.Mutex
	var trace []string
	record := func(s string) {
		mu.Lock()
		trace = append(trace, s)
		mu.Unlock()
	}
	outer := func(next flowfabric.WorkFn) flowfabric.WorkFn {
		return func(ctx context.Context, t *flowfabric.TaskInfo) error {
			record("outer>" + string(t.Kind))
			err := next(context.WithValue(ctx, ctxKey{}, "from outer"), t)
			record("outer<")
			if err != nil && strings.Contains(err.Error(), "soft") {
				return nil // swallowed: the attempt succeeds
			}
			return err
		}
	}
	inner := func(next flowfabric.WorkFn) flowfabric.WorkFn {
		return func(ctx context.Context, t *flowfabric.TaskInfo) error {
			record("inner>")
			if strings.Contains(string(t.Payload), "mwpanic") {
				panic("middleware panic")
			}
			return next(ctx, t)
		}
	}
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "mw", Middleware: []flowfabric.Middleware{outer, inner}})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[mwJob]) error {
		record("handler " + ctx.Value(ctxKey{}).(string))
		if t.Args.Do == "fail" {
			return errors.New("soft failure")
		}
		return nil
	}))
	h.StartWorker(w)
	noRetry := &flowfabric.SubmitOpts{RetryPolicy: flowfabric.NoRetries()}
	ok := mustSubmit(t, h, mwJob{Do: "ok"}, noRetry)
	if s := h.WaitTerminal(ok); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("ok: %s", s.PublicState)
	}
	mu.Lock()
	got := strings.Join(trace, " | ")
	trace = nil
	mu.Unlock()
	if want := "outer>mw_job | inner> | handler from outer | outer<"; got != want {
		t.Fatalf("trace %q, want %q", got, want)
	}
	soft := mustSubmit(t, h, mwJob{Do: "fail"}, noRetry)
	if s := h.WaitTerminal(soft); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("a failure the middleware swallowed: %s", s.PublicState)
	}
	boom := mustSubmit(t, h, mwJob{Do: "mwpanic"}, noRetry)
	s := h.WaitTerminal(boom)
	if s.PublicState != flowfabric.PublicFailed || s.FailureCategory != flowfabric.FailurePanic {
		t.Fatalf("a middleware panic: %s %s", s.PublicState, s.FailureCategory)
	}
}

// TestWorkerOnError: OnError hears about every failed attempt after the
// engine recorded what comes next: a retry (with its time), failed for
// good, or a panic (with its stack).
func TestWorkerOnError(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var mu sync.Mutex
	var got []*flowfabric.AttemptError
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "errs", OnError: func(ctx context.Context, t *flowfabric.TaskInfo, e *flowfabric.AttemptError) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[mwJob]) error {
		switch t.Args.Do {
		case "panic":
			panic("handler panic")
		case "fail":
			return errors.New("flaky")
		}
		return nil
	}))
	h.StartWorker(w)
	start := h.Clock.Now()
	retryOnce := &flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 1, Backoff: flowfabric.BackoffFixed, Delay: time.Second}}
	id := mustSubmit(t, h, mwJob{Do: "fail"}, retryOnce)
	if s := h.WaitTerminal(id); s.PublicState != flowfabric.PublicFailed {
		t.Fatalf("fail: %s", s.PublicState)
	}
	p := mustSubmit(t, h, mwJob{Do: "panic"}, &flowfabric.SubmitOpts{RetryPolicy: flowfabric.NoRetries()})
	h.WaitTerminal(p)
	ok := mustSubmit(t, h, mwJob{Do: "ok"}, nil)
	h.WaitTerminal(ok)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("OnError called %d times, want 3: %+v", len(got), got)
	}
	if e := got[0]; !e.Retrying || e.RetryAt.Before(start.Add(time.Second)) || e.Err == nil || e.Err.Error() != "flaky" {
		t.Fatalf("first attempt: %+v", e)
	}
	if e := got[1]; e.Retrying || !e.RetryAt.IsZero() || e.Category != flowfabric.FailureTransient {
		t.Fatalf("second attempt: %+v", e)
	}
	if e := got[2]; !e.Panicked() || e.Retrying || !strings.Contains(e.Err.Error(), "handler panic") || !strings.Contains(e.Err.Error(), "goroutine") {
		t.Fatalf("panic: %+v", e)
	}
}

var errForbidden = errors.New("forbidden kind")

// TestSubmitHooks: hooks see every submission (Submit, SubmitMany, each
// node of SubmitFlow) and may amend it or refuse it; a refusal stores
// nothing of the call, and the hook's error is returned wrapped.
func TestSubmitHooks(t *testing.T) {
	var seen []string
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{SubmitHooks: []flowfabric.SubmitHook{
		func(ctx context.Context, s *flowfabric.Submission) error {
			seen = append(seen, string(s.Kind))
			if strings.Contains(string(s.Payload), "forbidden") {
				return errForbidden
			}
			tags := map[string]string{"app.hooked": "yes"}
			for k, v := range s.Opts.Tags {
				tags[k] = v
			}
			s.Opts.Tags = tags
			return nil
		},
	}}})
	if err := h.Engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Engine.Submit(h.Ctx, mwJob{Do: "ok"}, &flowfabric.SubmitOpts{Tags: map[string]string{"app.mine": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := h.Engine.Describe(h.Ctx, r.ID); s.Tags["app.hooked"] != "yes" || s.Tags["app.mine"] != "1" {
		t.Fatalf("tags after the hook: %v", s.Tags)
	}
	_, err = h.Engine.SubmitMany(h.Ctx, []flowfabric.SubmitParams{{Args: mwJob{Do: "ok"}}, {Args: mwJob{Do: "forbidden"}}})
	if !errors.Is(err, errForbidden) || !strings.Contains(err.Error(), "entry 1: hook: forbidden") {
		t.Fatalf("SubmitMany with a refused entry: %v", err)
	}
	f := flowfabric.NewFlow()
	o := &flowfabric.SubmitOpts{Lane: "flows"}
	f.Add(mwJob{Do: "ok"}, o).After(f.Add(mwJob{Do: "forbidden"}, o))
	if _, err := h.Engine.SubmitFlow(h.Ctx, f, nil); !errors.Is(err, errForbidden) {
		t.Fatalf("SubmitFlow with a refused node: %v", err)
	}
	if n := len(h.Executions()); n != 1 {
		t.Fatalf("%d executions stored; the refused calls stored nothing, want 1", n)
	}
	if len(seen) != 5 {
		t.Fatalf("hooks saw %d submissions, want 5: %v", len(seen), seen)
	}
}

package flowfabric_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

func TestWorkerHandlerOutcomes(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		switch t.Args.Name {
		case "panic":
			panic("boom")
		case "cancel":
			return flowfabric.Cancel(errors.New("not wanted"))
		case "category":
			return flowfabric.Fail("rate_limited", errors.New("429"))
		}
		return nil
	}))
	h.StartWorker(w)
	policy := &model.RetryPolicy{MaxRetries: 1, InitialDelay: time.Second}

	panicked := h.WaitTerminal(mustSubmit(t, h, greet{Name: "panic"}, &flowfabric.SubmitOpts{RetryPolicy: policy}))
	if panicked.PublicState != model.PublicFailed || panicked.FailureCategory != model.FailurePanic ||
		panicked.TotalAttempts != 2 {
		t.Errorf("panic: %s %s attempts=%d", panicked.PublicState, panicked.FailureCategory, panicked.TotalAttempts)
	}
	cancelled := h.WaitTerminal(mustSubmit(t, h, greet{Name: "cancel"}, nil))
	if cancelled.PublicState != model.PublicCancelled || cancelled.CancellationReason != "not wanted" || cancelled.CancelledBy != "worker" {
		t.Errorf("cancel: %s %q by %q", cancelled.PublicState, cancelled.CancellationReason, cancelled.CancelledBy)
	}
	custom := h.WaitTerminal(mustSubmit(t, h, greet{Name: "category"}, &flowfabric.SubmitOpts{RetryPolicy: policy}))
	if custom.FailureCategory != "rate_limited" || custom.TotalAttempts != 2 {
		t.Errorf("unknown category must retry: %s attempts=%d", custom.FailureCategory, custom.TotalAttempts)
	}

	// a payload that does not decode fails at once, without retries
	bad, err := h.Engine.SubmitRaw(h.Ctx, "greet", []byte(`{"name": 42}`), &flowfabric.SubmitOpts{RetryPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	s := h.WaitTerminal(bad.ID)
	if s.FailureCategory != model.FailurePayloadInvalid || s.TotalAttempts != 1 {
		t.Errorf("bad payload: %s attempts=%d", s.FailureCategory, s.TotalAttempts)
	}
	// a kind this worker has no handler for
	unknown, err := h.Engine.SubmitRaw(h.Ctx, "mystery", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := h.WaitTerminal(unknown.ID); s.FailureCategory != model.FailureUnknownKind {
		t.Errorf("unknown kind: %s", s.FailureCategory)
	}
}

// An idle worker is woken by a submission: the task starts at the very
// time it was submitted, though the poll interval is an hour.
func TestWorkerIdleWake(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{PollInterval: time.Hour})
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	h.Advance(10 * time.Minute) // the worker is idle, waiting
	id := mustSubmit(t, h, greet{Name: "now"}, nil)
	snap := h.WaitTerminal(id)
	if !snap.StartedAt.Equal(snap.CreatedAt) {
		t.Fatalf("submitted at %s, started at %s: the idle worker was not woken", snap.CreatedAt, snap.StartedAt)
	}
}

// The lease epoch reaches the handler as a fencing token, and long tasks
// keep their lease through renewals.
func TestWorkerFencingTokenAndRenewal(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var epoch atomic.Uint64
	w := h.NewWorker(&flowfabric.WorkerConfig{LeaseTTL: 30 * time.Second})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		epoch.Store(t.LeaseEpoch)
		return h.Clock.Wait(ctx, 10*time.Minute, nil) // 20 lease lifetimes
	}))
	h.StartWorker(w)
	id := mustSubmit(t, h, greet{Name: "long"}, nil)
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || snap.ReclaimCount != 0 || snap.TotalAttempts != 1 {
		t.Fatalf("long task: %s reclaims=%d attempts=%d", snap.PublicState, snap.ReclaimCount, snap.TotalAttempts)
	}
	if epoch.Load() != snap.LeaseEpoch || epoch.Load() == 0 {
		t.Fatalf("handler saw epoch %d, lease had %d", epoch.Load(), snap.LeaseEpoch)
	}
}

// A revoked lease cancels the handler's context with ErrLeaseLost, and
// its late completion is fenced off.
func TestWorkerLeaseLost(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		Scanners: flowfabric.ScannerConfig{LeaseExpiry: flowfabric.LeaseExpiryConfig{NoRecover: true}},
	}})
	cause := make(chan error, 1)
	g := newGate(h.Clock)
	w := h.NewWorker(&flowfabric.WorkerConfig{LeaseTTL: 30 * time.Second})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[blocker](func(ctx context.Context, t *flowfabric.Task[blocker]) error {
		err := g.hold(ctx, t.Args.Key)
		cause <- err
		return err
	}))
	h.StartWorker(w)
	id := mustSubmit(t, h, blocker{Key: "x"}, nil)
	<-g.startedCh("x")
	if err := h.Engine.RevokeLease(h.Ctx, id, "operator"); err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool { return len(cause) == 1 })
	if err := <-cause; !errors.Is(err, flowfabric.ErrLeaseLost) {
		t.Fatalf("handler context cause = %v, want ErrLeaseLost", err)
	}
	s, _ := h.Engine.Describe(h.Ctx, id)
	if s.State.OwnershipState != model.OwnershipLeaseRevoked {
		t.Fatalf("after revoke: %s", s.State.OwnershipState)
	}
}

// Stop lets running tasks finish within the drain timeout and deregisters
// the instance.
func TestWorkerGracefulDrain(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{DrainTimeout: time.Minute})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		return h.Clock.Wait(ctx, 20*time.Second, nil)
	}))
	h.StartWorker(w)
	id := mustSubmit(t, h, greet{Name: "drain"}, nil)
	h.RunUntil(func() bool { return w.Running() == 1 })
	h.StopWorker(w)
	s, _ := h.Engine.Describe(h.Ctx, id)
	if s.PublicState != model.PublicCompleted {
		t.Fatalf("after a graceful stop the task is %s", s.PublicState)
	}
	list, _ := h.Store.WorkerList(h.Ctx, &model.WorkerListParams{Namespace: "default", Now: h.Clock.Now()})
	if len(list.Workers) != 0 {
		t.Fatalf("worker still registered: %+v", list.Workers)
	}
	if err := w.Stop(h.Ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

// Past the drain timeout, Stop cancels the task and releases its lease so
// another worker takes the execution at once, not after the lease expires.
func TestWorkerDrainTimeoutReleasesLease(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w1 := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "slow", DrainTimeout: 5 * time.Second, LeaseTTL: time.Hour})
	flowfabric.AddHandler(w1, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		return h.Clock.Wait(ctx, 24*time.Hour, nil)
	}))
	h.StartWorker(w1)
	id := mustSubmit(t, h, greet{Name: "stuck"}, nil)
	h.RunUntil(func() bool { return w1.Running() == 1 })
	stoppedAt := h.Clock.Now()
	h.StopWorker(w1)
	s, _ := h.Engine.Describe(h.Ctx, id)
	if s.PublicState != model.PublicWaiting || s.Pending == nil || s.Pending.Type != model.AttemptReclaim {
		t.Fatalf("after stop: %s pending=%+v", s.PublicState, s.Pending)
	}
	if took := h.Clock.Now().Sub(stoppedAt); took > 5*time.Second {
		t.Fatalf("stop took %s, more than the drain timeout", took)
	}
	w2 := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "fast"})
	flowfabric.AddHandler(w2, greetHandler())
	h.StartWorker(w2)
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || !snap.TerminalAt.Before(stoppedAt.Add(time.Hour)) {
		t.Fatalf("released execution: %s at %s", snap.PublicState, snap.TerminalAt)
	}
}

// Two live processes may not share an instance id.
func TestWorkerDuplicateInstance(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	cfg := &flowfabric.WorkerConfig{WorkerID: "w", InstanceID: "w-1"}
	a := h.NewWorker(cfg)
	flowfabric.AddHandler(a, greetHandler())
	h.StartWorker(a)
	b := h.NewWorker(cfg)
	flowfabric.AddHandler(b, greetHandler())
	if err := b.Start(h.Ctx); !errors.Is(err, flowfabric.ErrDuplicateWorker) {
		t.Fatalf("duplicate start: %v", err)
	}
	h.StopWorker(a)
	c := h.NewWorker(cfg)
	flowfabric.AddHandler(c, greetHandler())
	h.StartWorker(c) // the instance id is free again after a clean stop
}

func TestWorkerConfigValidation(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	for field, cfg := range map[string]*flowfabric.WorkerConfig{
		"MaxConcurrent": {MaxConcurrent: -1},
		"LeaseTTL":      {LeaseTTL: time.Millisecond},
		"Lanes":         {Lanes: []model.LaneID{"bad lane"}},
		"WorkerID":      {WorkerID: "a{b}"},
		"Capabilities":  {Capabilities: []string{"x,y"}},
	} {
		w := flowfabric.NewWorker(h.Engine, cfg)
		flowfabric.AddHandler(w, greetHandler())
		err := w.Start(h.Ctx)
		var me *model.Error
		if !errors.As(err, &me) || me.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	w := flowfabric.NewWorker(h.Engine, nil)
	if err := w.Start(h.Ctx); err == nil {
		t.Error("a worker without handlers started")
	}
	flowfabric.AddHandler(w, greetHandler())
	if err := flowfabric.AddHandlerSafe(w, greetHandler()); err == nil {
		t.Error("a duplicate kind was registered")
	}
	if err := w.Stop(h.Ctx); err != nil {
		t.Errorf("stop before start: %v", err)
	}
	if err := w.Start(h.Ctx); err == nil {
		t.Error("a stopped worker started")
	}
}

func TestSubmitManyAndIdempotency(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	res, err := h.Engine.SubmitMany(h.Ctx, []flowfabric.SubmitParams{
		{Args: greet{Name: "a"}},
		{Kind: "raw", Payload: []byte{0, 1, 2}},
		{Args: greet{Name: "b"}, Opts: &flowfabric.SubmitOpts{IdempotencyKey: "k1"}},
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("batch: %v %v", res, err)
	}
	again, err := h.Engine.Submit(h.Ctx, greet{Name: "b"}, &flowfabric.SubmitOpts{IdempotencyKey: "k1"})
	if err != nil || !again.Duplicate || again.ID != res[2].ID {
		t.Fatalf("idempotent resubmit: %+v %v", again, err)
	}
	// a bad entry stores nothing
	_, err = h.Engine.SubmitMany(h.Ctx, []flowfabric.SubmitParams{
		{Args: greet{Name: "c"}},
		{Kind: "bad kind", Payload: nil},
	})
	if !errors.Is(err, model.ErrValidation) {
		t.Fatalf("bad batch: %v", err)
	}
	if n := len(h.Executions()); n != 3 {
		t.Fatalf("%d executions after a rejected batch, want 3", n)
	}
	kinds := []model.Kind{}
	for _, s := range h.Executions() {
		kinds = append(kinds, s.Kind)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []model.Kind{"greet", "greet", "raw"}) {
		t.Fatalf("kinds = %v", kinds)
	}
}

// claimCounter counts claim attempts that reach the store.
type claimCounter struct {
	*memstore.Store
	calls atomic.Int64
}

func (c *claimCounter) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	c.calls.Add(1)
	return c.Store.ExecutionClaimNext(ctx, p)
}

// A submission wakes one idle worker, not all of them; a woken worker that
// cannot serve the job passes the wake on, so the capable one starts it at
// once even though every worker polls only hourly.
func TestWakeOneIdleWorker(t *testing.T) {
	var counter *claimCounter
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		counter = &claimCounter{Store: s}
		return counter
	}})
	var ran atomic.Int32
	newW := func(name string, caps ...string) {
		w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: model.WorkerID(name), Capabilities: caps, PollInterval: time.Hour})
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[gpuJob](func(context.Context, *flowfabric.Task[gpuJob]) error {
			ran.Add(1)
			return nil
		}))
		h.StartWorker(w)
	}
	for i := range 4 {
		newW(fmt.Sprintf("cpu%d", i))
	}
	newW("gpu", "gpu")
	h.Advance(time.Minute) // all idle
	before := counter.calls.Load()
	id := mustSubmit(t, h, gpuJob{N: 1}, nil)
	snap := h.WaitTerminal(id)
	if !snap.StartedAt.Equal(snap.CreatedAt) || ran.Load() != 1 {
		t.Fatalf("started %s after submission, ran %d times", snap.StartedAt.Sub(snap.CreatedAt), ran.Load())
	}
	// the woken worker claims it, and looks once more for a free slot
	if n := counter.calls.Load() - before; n > 2 {
		t.Fatalf("one submission caused %d claim calls; a wake reached more than one idle worker", n)
	}
	// a job only the gpu worker can serve: the wake is passed along
	before = counter.calls.Load()
	id = mustSubmit(t, h, gpuJob{N: 2}, &flowfabric.SubmitOpts{RequiredCapabilities: []string{"gpu"}})
	snap = h.WaitTerminal(id)
	if !snap.StartedAt.Equal(snap.CreatedAt) {
		t.Fatalf("capable worker started %s after submission: the wake was not passed on", snap.StartedAt.Sub(snap.CreatedAt))
	}
	if n := counter.calls.Load() - before; n > 6 {
		t.Fatalf("%d claim calls for one job among five idle workers", n)
	}
}

// racingStore lets a worker of another process win the race for the next
// claim: armed, the next ExecutionClaimNext first claims the lane's head
// for "elsewhere", then runs the caller's claim, which finds the lane empty.
type racingStore struct {
	claimCounter
	armed  atomic.Bool
	stolen atomic.Pointer[model.ClaimResult]
}

func (s *racingStore) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	if s.armed.CompareAndSwap(true, false) {
		q := *p
		q.LeaseRequest = model.LeaseRequest{WorkerID: "elsewhere", WorkerInstanceID: "elsewhere-1",
			LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{1})), AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{2})),
			LeaseTTL: time.Hour}
		if res, err := s.Store.ExecutionClaimNext(ctx, &q); err == nil {
			s.stolen.Store(res.Claimed)
		}
	}
	return s.claimCounter.ExecutionClaimNext(ctx, p)
}

// A woken worker that finds its lane empty (the job went to a worker that
// was quicker, here in another process; in a busy engine usually one
// completing with its next claim) does not pass the wake on: every other
// idle worker would make an empty claim for nothing. The bench saw 4-5
// empty claims per job in its latency stream before.
func TestWakeNotPassedOnForTakenWork(t *testing.T) {
	var store *racingStore
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		store = &racingStore{claimCounter: claimCounter{Store: s}}
		return store
	}})
	for i := range 5 {
		w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("w%d", i)), PollInterval: time.Hour})
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[gpuJob](func(context.Context, *flowfabric.Task[gpuJob]) error { return nil }))
		h.StartWorker(w)
	}
	h.Advance(time.Minute) // all idle
	before := store.calls.Load()
	store.armed.Store(true)
	id := mustSubmit(t, h, gpuJob{N: 1}, nil)
	h.Advance(time.Second) // the wake and whatever it sets off run at the submission's time
	if c := store.stolen.Load(); c == nil || c.ID != id {
		t.Fatalf("the other process did not take the job: %+v", c)
	}
	if n := store.calls.Load() - before; n != 1 {
		t.Fatalf("%d claim calls after the job was taken elsewhere, want 1 (the woken worker's)", n)
	}
}

// downUntil fails completions with a transport error until a simulated
// time, as a store that is unreachable for a while.
type downUntil struct {
	*memstore.Store
	clock model.Clock
	until time.Time
	fails atomic.Int32
}

func (s *downUntil) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	if s.clock.Now().Before(s.until) {
		s.fails.Add(1)
		return nil, errors.New("connection refused")
	}
	return s.Store.ExecutionComplete(ctx, p)
}

// A completion is retried while the store is unreachable for as long as
// the lease lasts, not for a fixed ~1.55s: with the store down for 5s the
// job is not re-run (issue 18, defect 6).
func TestCompletionRetriedWhileLeaseLasts(t *testing.T) {
	var st *downUntil
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(m *memstore.Store) model.Store {
		st = &downUntil{Store: m}
		return st
	}})
	st.clock, st.until = h.Clock, h.Clock.Now().Add(5*time.Second)
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(context.Context, *flowfabric.Task[greet]) error {
		calls.Add(1)
		return nil
	}))
	h.StartWorker(w)
	snap := h.WaitTerminal(mustSubmit(t, h, greet{Name: "x"}, nil))
	if snap.PublicState != model.PublicCompleted || snap.TotalAttempts != 1 || calls.Load() != 1 {
		t.Fatalf("%s after %d attempts, %d runs (%d refused completions): want completed by the first run",
			snap.PublicState, snap.TotalAttempts, calls.Load(), st.fails.Load())
	}
}

type panicky struct{}

func (panicky) Kind() string { return "panicky" }

// Each job's life is logged at Debug (claimed, completed, failed with the
// retry time, panicked with the stack), so a failing handler is never
// silent; nothing per job is logged at Info (issue 18).
func TestPerJobLogsAtDebug(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{Logger: logger}})
	w := h.NewWorker(nil)
	var calls atomic.Int32
	flowfabric.AddHandler(w, flakyHandler(&calls))
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[panicky](func(context.Context, *flowfabric.Task[panicky]) error {
		panic("handler exploded")
	}))
	h.StartWorker(w)
	h.WaitTerminal(mustSubmit(t, h, flaky{FailTimes: 1}, &flowfabric.SubmitOpts{RetryPolicy: &model.RetryPolicy{MaxRetries: 1}}))
	h.WaitTerminal(mustSubmit(t, h, panicky{}, nil))
	// A task logs its outcome just after the store call that made the
	// execution terminal: stop the worker, which waits for its tasks, before
	// reading the log.
	if err := w.Stop(h.Ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"level=DEBUG msg=\"task claimed\"", "level=DEBUG msg=\"task completed\"",
		"level=DEBUG msg=\"task failed; retry scheduled\"", "retry_at=", "level=DEBUG msg=\"task panicked\"",
		"handler exploded", "stack=", "level=DEBUG msg=\"task failed; no retry left\""} {
		if !strings.Contains(out, want) {
			t.Errorf("debug log lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=INFO") && strings.Contains(line, "execution=") {
			t.Errorf("per-job log at Info: %s", line)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

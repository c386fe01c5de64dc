package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// Args types used across the engine tests.
type greet struct {
	Name string `json:"name"`
}

func (greet) Kind() string { return "greet" }

type flaky struct {
	FailTimes int `json:"fail_times"`
}

func (flaky) Kind() string { return "flaky" }

type gpuJob struct {
	N int `json:"n"`
}

func (gpuJob) Kind() string { return "gpu_job" }

type blocker struct {
	Key string `json:"key"`
}

func (blocker) Kind() string { return "blocker" }

// gate lets a test hold handlers and release them. A held handler waits
// on the engine's clock (not on a bare channel), so simulated time can
// still pass while it waits.
type gate struct {
	clock   model.Clock
	mu      sync.Mutex
	release map[string]bool
	signals map[string]*model.Signal
	started map[string]chan struct{}
}

func newGate(clock model.Clock) *gate {
	return &gate{clock: clock, release: map[string]bool{}, signals: map[string]*model.Signal{}, started: map[string]chan struct{}{}}
}

func (g *gate) startedCh(k string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.started[k]
	if c == nil {
		c = make(chan struct{})
		g.started[k] = c
	}
	return c
}

func (g *gate) signal(k string) *model.Signal {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.signals[k]
	if s == nil {
		s = g.clock.NewSignal()
		g.signals[k] = s
	}
	return s
}

// open releases the handler of key k.
func (g *gate) open(k string) {
	g.mu.Lock()
	g.release[k] = true
	g.mu.Unlock()
	g.signal(k).Notify()
}

// hold blocks until key k is opened or ctx is done.
func (g *gate) hold(ctx context.Context, k string) error {
	close(g.startedCh(k))
	for {
		g.mu.Lock()
		done := g.release[k]
		g.mu.Unlock()
		if done {
			return nil
		}
		if err := g.clock.Wait(ctx, 0, g.signal(k)); err != nil {
			return context.Cause(ctx)
		}
	}
}

func (g *gate) handler() flowfabric.HandlerFunc[blocker] {
	return func(ctx context.Context, t *flowfabric.Task[blocker]) error {
		if err := g.hold(ctx, t.Args.Key); err != nil {
			return err
		}
		return t.SetResult([]byte("released:" + t.Args.Key))
	}
}

func mustSubmit(t *testing.T, h *flowfabrictest.Harness, args flowfabric.Args, opts *flowfabric.SubmitOpts) model.ExecutionID {
	t.Helper()
	r, err := h.Engine.Submit(h.Ctx, args, opts)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return r.ID
}

func greetHandler() flowfabric.HandlerFunc[greet] {
	return func(ctx context.Context, t *flowfabric.Task[greet]) error {
		if err := t.Progress(ctx, 50, "halfway"); err != nil {
			return err
		}
		return t.SetResultJSON(map[string]string{"hello": t.Args.Name})
	}
}

// Scenario 1: create → claim → progress → complete.
func TestScenario01HappyPath(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)

	id := mustSubmit(t, h, greet{Name: "ada"}, nil)
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted {
		t.Fatalf("state = %s, want completed", snap.PublicState)
	}
	if snap.ProgressPercent != 50 || snap.ProgressMessage != "halfway" {
		t.Errorf("progress = %d %q", snap.ProgressPercent, snap.ProgressMessage)
	}
	res, err := h.Engine.Result(h.Ctx, id)
	if err != nil || string(res) != `{"hello":"ada"}` {
		t.Fatalf("result = %q, %v", res, err)
	}
	hist, err := h.Engine.LeaseHistory(h.Ctx, id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []model.LeaseEventKind
	for _, ev := range hist {
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []model.LeaseEventKind{model.LeaseAcquired, model.LeaseReleased}) {
		t.Errorf("lease history = %v", kinds)
	}
	flowfabrictest.RequireSubmitted(h, greet{Name: "ada"})
	flowfabrictest.RequireNotSubmitted(h, func(g greet) bool { return g.Name == "bob" })
}

func flakyHandler(calls *atomic.Int32) flowfabric.HandlerFunc[flaky] {
	return func(ctx context.Context, t *flowfabric.Task[flaky]) error {
		calls.Add(1)
		if t.Attempt < t.Args.FailTimes {
			return fmt.Errorf("attempt %d fails", t.Attempt)
		}
		return nil
	}
}

// Scenario 2: a retryable failure is retried, not before the backoff, as a
// second attempt of type retry.
func TestScenario02RetryBackoff(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flakyHandler(&calls))
	h.StartWorker(w)

	policy := &model.RetryPolicy{MaxRetries: 3, InitialDelay: 10 * time.Second}
	id := mustSubmit(t, h, flaky{FailTimes: 1}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted {
		t.Fatalf("state = %s", snap.PublicState)
	}
	atts, err := h.Engine.Attempts(h.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 || atts[0].Status != model.AttemptEndedFailure || atts[1].Type != model.AttemptRetry ||
		atts[1].Status != model.AttemptEndedSuccess {
		t.Fatalf("attempts = %+v", atts)
	}
	if gap := atts[1].StartedAt.Sub(atts[0].EndedAt); gap < 10*time.Second {
		t.Errorf("retry started %s after the failure, before the 10s backoff", gap)
	}
	if snap.RetryCount != 1 || calls.Load() != 2 {
		t.Errorf("retry count %d, calls %d", snap.RetryCount, calls.Load())
	}
}

// Scenario 3: retries exhausted ⇒ terminal failed; a permanent error does
// not retry at all.
func TestScenario03RetriesExhausted(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flakyHandler(&calls))
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(context.Context, *flowfabric.Task[greet]) error {
		return flowfabric.Permanent(errors.New("bad address"))
	}))
	h.StartWorker(w)

	policy := &model.RetryPolicy{MaxRetries: 2, InitialDelay: time.Second}
	id := mustSubmit(t, h, flaky{FailTimes: 10}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicFailed || snap.RetryCount != 2 || snap.TotalAttempts != 3 {
		t.Fatalf("state %s retries %d attempts %d", snap.PublicState, snap.RetryCount, snap.TotalAttempts)
	}
	if snap.FailureReason != "attempt 2 fails" || snap.FailureCategory != model.FailureTransient {
		t.Errorf("failure = %q %q", snap.FailureReason, snap.FailureCategory)
	}
	perm := mustSubmit(t, h, greet{Name: "x"}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	snap = h.WaitTerminal(perm)
	if snap.PublicState != model.PublicFailed || snap.TotalAttempts != 1 || snap.FailureCategory != model.FailurePermanent {
		t.Fatalf("permanent: state %s attempts %d category %s", snap.PublicState, snap.TotalAttempts, snap.FailureCategory)
	}
}

// claimDirect claims one execution for a pretend worker that talks to the
// store itself.
func claimDirect(t *testing.T, h *flowfabrictest.Harness, worker string, lane model.LaneID) *model.ClaimResult {
	t.Helper()
	p := h.Store.Partitions().SoloPartition(lane)
	r, err := h.Store.ExecutionClaimNext(h.Ctx, &model.ExecutionClaimNextParams{
		Partition: p, Lane: lane, ScanLimit: 10,
		LeaseRequest: model.LeaseRequest{
			WorkerID: model.WorkerID(worker), WorkerInstanceID: model.WorkerInstanceID(worker + "-1"),
			LeaseID: model.LeaseID(newUUID()), AttemptID: model.AttemptID(newUUID()), LeaseTTL: 30 * time.Second,
		},
		Now: h.Clock.Now(),
	})
	if err != nil || r.Claimed == nil {
		t.Fatalf("claim: %v %+v", err, r)
	}
	return r.Claimed
}

var uuidSeq atomic.Uint64

func newUUID() model.UUID {
	n := uuidSeq.Add(1)
	var b [16]byte
	for i := range 8 {
		b[15-i] = byte(n >> (8 * i))
	}
	b[0] = 0xee
	return model.NewUUIDv4(b)
}

// Scenario 4: a terminal operation replayed by the same lease returns the
// original outcome; after another terminal operation the caller gets
// ErrNotActive carrying the stored outcome.
func TestScenario04TerminalReplay(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	id := mustSubmit(t, h, greet{Name: "r"}, nil)
	c := claimDirect(t, h, "direct", model.DefaultLane)
	complete := func() (*model.ExecutionCompleteResult, error) {
		return h.Store.ExecutionComplete(h.Ctx, &model.ExecutionCompleteParams{
			ID: id, Fence: c.Fence(), Result: []byte("done"), Now: h.Clock.Now(),
		})
	}
	if r, err := complete(); err != nil || r.Replayed {
		t.Fatalf("first complete: %+v %v", r, err)
	}
	r, err := complete()
	if err != nil || !r.Replayed {
		t.Fatalf("replayed complete: %+v %v", r, err)
	}
	_, err = h.Store.ExecutionFail(h.Ctx, &model.ExecutionFailParams{ID: id, Fence: c.Fence(), Reason: "late", Now: h.Clock.Now()})
	var me *model.Error
	if !errors.Is(err, model.ErrNotActive) || !errors.As(err, &me) || me.State == nil ||
		me.State.TerminalOutcome != model.OutcomeSuccess || me.State.LeaseEpoch != c.Lease.Epoch {
		t.Fatalf("fail after complete: %v", err)
	}
	if err := h.Engine.Cancel(h.Ctx, id, "too late"); !errors.Is(err, flowfabric.ErrNotActive) {
		t.Fatalf("cancel after complete: %v", err)
	}
}

// Scenario 5 and crash recovery: a lease that is not renewed expires, the
// scanner marks it and recovers the execution as a new attempt (epoch + 1)
// with no operator action; the stale holder is fenced.
func TestScenario05LeaseExpiryRecovery(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	id := mustSubmit(t, h, greet{Name: "crash"}, nil)
	stale := claimDirect(t, h, "ghost", model.DefaultLane) // never renews: a dead process

	g := newGate(h.Clock)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		return g.hold(ctx, "new")
	}))
	h.StartWorker(w)
	h.RunUntil(func() bool {
		s, _ := h.Engine.Describe(h.Ctx, id)
		return s.State.OwnershipState == model.OwnershipLeased && s.LeaseEpoch == stale.Lease.Epoch+1
	})
	<-g.startedCh("new")
	// the ghost comes back with its old lease: fenced, nothing changes
	before, _ := h.Engine.Describe(h.Ctx, id)
	_, err := h.Store.ExecutionComplete(h.Ctx, &model.ExecutionCompleteParams{ID: id, Fence: stale.Fence(), Now: h.Clock.Now()})
	if !errors.Is(err, model.ErrStaleLease) {
		t.Fatalf("stale complete: %v", err)
	}
	after, _ := h.Engine.Describe(h.Ctx, id)
	if before.LastMutationAt != after.LastMutationAt || after.State != before.State {
		t.Fatal("a fenced complete changed the execution")
	}
	g.open("new")
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || snap.ReclaimCount != 1 {
		t.Fatalf("state %s reclaims %d", snap.PublicState, snap.ReclaimCount)
	}
	atts, _ := h.Engine.Attempts(h.Ctx, id)
	if len(atts) != 2 || atts[0].Status != model.AttemptInterruptedReclaimed || atts[1].Type != model.AttemptReclaim {
		t.Fatalf("attempts = %+v", atts)
	}
	hist, _ := h.Engine.LeaseHistory(h.Ctx, id, 0, 100)
	var kinds []model.LeaseEventKind
	for _, ev := range hist {
		kinds = append(kinds, ev.Kind)
	}
	want := []model.LeaseEventKind{model.LeaseAcquired, model.LeaseExpired, model.LeaseRecovered, model.LeaseAcquired, model.LeaseReleased}
	if !slices.Equal(kinds, want) {
		t.Errorf("lease history = %v, want %v", kinds, want)
	}
}

// Crash a real worker mid-task: another worker finishes the execution
// after the lease expires, and the crashed worker's lease is fenced.
func TestWorkerCrashRecovery(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	g := newGate(h.Clock)
	w1 := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "w1", LeaseTTL: 10 * time.Second})
	flowfabric.AddHandler(w1, g.handler())
	h.StartWorker(w1)
	id := mustSubmit(t, h, blocker{Key: "a"}, nil)
	<-g.startedCh("a")
	first, _ := h.Engine.Describe(h.Ctx, id)
	w1.Crash()

	var done atomic.Int32
	w2 := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "w2"})
	flowfabric.AddHandler(w2, flowfabric.HandlerFunc[blocker](func(ctx context.Context, t *flowfabric.Task[blocker]) error {
		done.Add(1)
		return nil
	}))
	h.StartWorker(w2)
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || done.Load() != 1 {
		t.Fatalf("state %s, handled %d times", snap.PublicState, done.Load())
	}
	if snap.LeaseEpoch <= first.LeaseEpoch {
		t.Errorf("epoch %d not above the crashed lease's %d", snap.LeaseEpoch, first.LeaseEpoch)
	}
	fence := model.Fence{LeaseID: first.CurrentLease.ID, LeaseEpoch: first.LeaseEpoch, AttemptID: first.CurrentAttempt.ID}
	_, err := h.Store.ExecutionComplete(h.Ctx, &model.ExecutionCompleteParams{ID: id, Fence: fence, Now: h.Clock.Now()})
	if !errors.Is(err, model.ErrNotActive) {
		t.Fatalf("crashed worker's late complete: %v", err)
	}
}

// Scenario 6: reclaim by grant: a new attempt for a chosen worker, the old
// worker's lease index cleaned, the cap enforced, a missing grant refused.
func TestScenario06ReclaimGrant(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	id := mustSubmit(t, h, greet{Name: "g"}, &flowfabric.SubmitOpts{MaxReclaims: 1})
	old := claimDirect(t, h, "old", model.DefaultLane)
	if err := h.Engine.RevokeLease(h.Ctx, id, "operator"); err != nil {
		t.Fatal(err)
	}
	req := model.LeaseRequest{WorkerID: "new", WorkerInstanceID: "new-1", LeaseID: model.LeaseID(newUUID()),
		AttemptID: model.AttemptID(newUUID()), LeaseTTL: time.Minute}
	_, err := h.Store.ExecutionReclaim(h.Ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: req, Now: h.Clock.Now()})
	if !errors.Is(err, model.ErrInvalidClaimGrant) {
		t.Fatalf("reclaim without grant: %v", err)
	}
	if _, err := h.Store.ReclaimGrantIssue(h.Ctx, &model.ReclaimGrantIssueParams{ID: id, WorkerID: "new",
		WorkerInstanceID: "new-1", GrantTTL: time.Second, Now: h.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Store.ExecutionReclaim(h.Ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: req, Now: h.Clock.Now()})
	if err != nil || r.Outcome != model.ReclaimClaimed || r.Claimed.AttemptIndex != 1 ||
		r.Claimed.AttemptType != model.AttemptReclaim || r.Claimed.Lease.Epoch != old.Lease.Epoch+1 {
		t.Fatalf("reclaim: %+v %v", r, err)
	}
	ix, _ := h.Store.ExecutionIndexes(h.Ctx, &model.ExecutionIndexesParams{ID: id})
	if slices.Contains(ix.Indexes, "worker:old-1:leases") || !slices.Contains(ix.Indexes, "worker:new-1:leases") {
		t.Fatalf("indexes after reclaim = %v", ix.Indexes)
	}
	// the cap: a second reclaim fails the execution
	if err := h.Engine.RevokeLease(h.Ctx, id, "again"); err != nil {
		t.Fatal(err)
	}
	ok, err := h.Engine.Reclaim(h.Ctx, id)
	if err != nil || ok {
		t.Fatalf("reclaim over the cap: requeued=%v %v", ok, err)
	}
	snap, _ := h.Engine.Describe(h.Ctx, id)
	if snap.PublicState != model.PublicFailed || snap.FailureReason != "max_reclaims_exceeded" {
		t.Fatalf("after cap: %s %q", snap.PublicState, snap.FailureReason)
	}
}

type snoozer struct{}

func (snoozer) Kind() string { return "snoozer" }

// Scenario 7: a delayed execution is promoted by the scanner; a handler's
// Snooze resumes the same attempt later.
func TestScenario07DelayAndPromotion(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs []time.Time
	var mu sync.Mutex
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[snoozer](func(ctx context.Context, t *flowfabric.Task[snoozer]) error {
		mu.Lock()
		runs = append(runs, h.Clock.Now())
		n := len(runs)
		mu.Unlock()
		if n == 1 {
			return flowfabric.Snooze(time.Minute)
		}
		if !t.Resumed || t.Attempt != 0 {
			return flowfabric.Permanent(fmt.Errorf("resumed=%v attempt=%d", t.Resumed, t.Attempt))
		}
		return nil
	}))
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)

	start := h.Clock.Now()
	delayed := mustSubmit(t, h, greet{Name: "later"}, &flowfabric.SubmitOpts{Delay: 5 * time.Minute})
	if s, _ := h.Engine.Describe(h.Ctx, delayed); s.PublicState != model.PublicDelayed {
		t.Fatalf("delayed submit is %s", s.PublicState)
	}
	snap := h.WaitTerminal(delayed)
	if snap.StartedAt.Before(start.Add(5 * time.Minute)) {
		t.Fatalf("started at %s, before its delay", snap.StartedAt)
	}
	sn := mustSubmit(t, h, snoozer{}, nil)
	snap = h.WaitTerminal(sn)
	if snap.PublicState != model.PublicCompleted || snap.TotalAttempts != 1 {
		t.Fatalf("snoozed: %s attempts %d (%s)", snap.PublicState, snap.TotalAttempts, snap.FailureReason)
	}
	if gap := runs[1].Sub(runs[0]); gap < time.Minute {
		t.Errorf("resumed after %s, before the snooze ended", gap)
	}
}

// Scenario 8: priorities are clamped and the highest runs first.
func TestScenario08Priority(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var order []string
	var mu sync.Mutex
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 1})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[greet](func(ctx context.Context, t *flowfabric.Task[greet]) error {
		mu.Lock()
		order = append(order, t.Args.Name)
		mu.Unlock()
		return nil
	}))
	var ids []model.ExecutionID
	for _, p := range []struct {
		name string
		prio int
	}{{"low", 1}, {"high", 50_000}, {"mid", 10}, {"neg", -5}, {"mid2", 10}} {
		ids = append(ids, mustSubmit(t, h, greet{Name: p.name}, &flowfabric.SubmitOpts{Priority: p.prio}))
		h.Advance(time.Millisecond) // FIFO within a priority is by creation millisecond
	}
	s, _ := h.Engine.Describe(h.Ctx, ids[1])
	if s.Priority != model.MaxPriority {
		t.Fatalf("priority not clamped: %d", s.Priority)
	}
	h.StartWorker(w)
	h.RunUntilIdle()
	if want := []string{"high", "mid", "mid2", "low", "neg"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
}

// Scenario 9: the concurrency cap holds, and a grant offered to a worker at
// capacity is not consumed.
func TestScenario09ConcurrencyCapAndGrant(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	g := newGate(h.Clock)
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 1, Lanes: []model.LaneID{"busy"}})
	flowfabric.AddHandler(w, g.handler())
	h.StartWorker(w)
	a := mustSubmit(t, h, blocker{Key: "a"}, &flowfabric.SubmitOpts{Lane: "busy"})
	<-g.startedCh("a")
	b := mustSubmit(t, h, blocker{Key: "b"}, &flowfabric.SubmitOpts{Lane: "busy"})
	h.Advance(5 * time.Second)
	if s, _ := h.Engine.Describe(h.Ctx, b); s.PublicState != model.PublicWaiting || w.Running() != 1 {
		t.Fatalf("b is %s with %d running; the cap of 1 was not held", s.PublicState, w.Running())
	}
	grant, err := h.Engine.IssueGrant(h.Ctx, b, w, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ClaimGrant(h.Ctx, grant); !errors.Is(err, flowfabric.ErrWorkerAtCapacity) {
		t.Fatalf("claim grant at capacity: %v", err)
	}
	if s, _ := h.Engine.Describe(h.Ctx, b); s.Grant == nil || s.PublicState != model.PublicWaiting {
		t.Fatalf("grant consumed at capacity: %+v", s.Grant)
	}
	g.open("a")
	h.WaitTerminal(a)
	g.open("b")
	if snap := h.WaitTerminal(b); snap.PublicState != model.PublicCompleted {
		t.Fatalf("b = %s", snap.PublicState)
	}
}

// Scenario 10: a capability mismatch blocks the execution on route, off
// the eligible index; a capable worker's arrival unblocks it.
func TestScenario10CapabilityRouting(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var cpuRuns, gpuRuns atomic.Int32
	cpu := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "cpu", Capabilities: []string{"linux"}})
	flowfabric.AddHandler(cpu, flowfabric.HandlerFunc[gpuJob](func(context.Context, *flowfabric.Task[gpuJob]) error {
		cpuRuns.Add(1)
		return nil
	}))
	h.StartWorker(cpu)
	id := mustSubmit(t, h, gpuJob{N: 1}, &flowfabric.SubmitOpts{RequiredCapabilities: []string{"gpu", "linux"}})
	h.RunUntil(func() bool {
		s, _ := h.Engine.Describe(h.Ctx, id)
		return s.State.EligibilityState == model.BlockedByRoute
	})
	ix, _ := h.Store.ExecutionIndexes(h.Ctx, &model.ExecutionIndexesParams{ID: id})
	if !slices.Contains(ix.Indexes, "lane:default:blocked:route") || slices.Contains(ix.Indexes, "lane:default:eligible") {
		t.Fatalf("indexes = %v", ix.Indexes)
	}
	s, _ := h.Engine.Describe(h.Ctx, id)
	if s.PublicState != model.PublicWaiting || s.State.BlockingReason != model.WaitingForCapableWorker {
		t.Fatalf("blocked as %s / %s", s.PublicState, s.State.BlockingReason)
	}
	h.Advance(time.Minute) // no hot loop: it stays blocked, the cpu worker never runs it
	if cpuRuns.Load() != 0 {
		t.Fatal("a worker without the capability ran it")
	}
	gpu := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "gpu", Capabilities: []string{"linux", "gpu", "cuda"}})
	flowfabric.AddHandler(gpu, flowfabric.HandlerFunc[gpuJob](func(context.Context, *flowfabric.Task[gpuJob]) error {
		gpuRuns.Add(1)
		return nil
	}))
	h.StartWorker(gpu)
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || gpuRuns.Load() != 1 || cpuRuns.Load() != 0 {
		t.Fatalf("state %s gpu %d cpu %d", snap.PublicState, gpuRuns.Load(), cpuRuns.Load())
	}
}

// Scenario 11: capability ingress is fail-closed, naming the field.
func TestScenario11CapabilityIngress(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	for _, caps := range [][]string{{"gpu,cuda"}, {""}, {"gpu "}, {"a\x01"}, {"tab\t"}} {
		w := h.NewWorker(&flowfabric.WorkerConfig{Capabilities: caps})
		flowfabric.AddHandler(w, greetHandler())
		err := w.Start(h.Ctx)
		var me *model.Error
		if !errors.Is(err, model.ErrValidation) || !errors.As(err, &me) || me.Field != "Capabilities" {
			t.Errorf("worker caps %q: %v", caps, err)
		}
		_, err = h.Engine.Submit(h.Ctx, greet{}, &flowfabric.SubmitOpts{RequiredCapabilities: caps})
		if !errors.As(err, &me) || me.Field != "RequiredCapabilities" {
			t.Errorf("required caps %q: %v", caps, err)
		}
	}
	many := make([]string, 257)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	_, err := h.Engine.Submit(h.Ctx, greet{}, &flowfabric.SubmitOpts{RequiredCapabilities: many})
	if !errors.Is(err, model.ErrInvalidCapabilities) {
		t.Errorf("257 tokens: %v", err)
	}
	if n := len(h.Executions()); n != 0 {
		t.Fatalf("rejected submissions stored %d executions", n)
	}
}

// Scenario 28: an execution deadline expires never-claimed work.
func TestScenario28DeadlineOnUnclaimedWork(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	id := mustSubmit(t, h, greet{Name: "nobody"}, &flowfabric.SubmitOpts{
		Lane: "unserved", Deadline: h.Clock.Now().Add(10 * time.Minute),
	})
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicExpired || snap.FailureReason != "execution_deadline" {
		t.Fatalf("state %s reason %q", snap.PublicState, snap.FailureReason)
	}
	if snap.TerminalAt.Before(flowfabrictest.DefaultStart.Add(10 * time.Minute)) {
		t.Fatalf("expired at %s, before the deadline", snap.TerminalAt)
	}
}

// Five retries with exponential backoff: minutes of simulated time, run in
// milliseconds.
func TestRetriesRunOnSimulatedTime(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flakyHandler(&calls))
	h.StartWorker(w)
	policy := &model.RetryPolicy{MaxRetries: 5, InitialDelay: 30 * time.Second, MaxDelay: time.Hour}
	start := h.Clock.Now()
	id := mustSubmit(t, h, flaky{FailTimes: 5}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	snap := h.WaitTerminal(id)
	if snap.PublicState != model.PublicCompleted || calls.Load() != 6 {
		t.Fatalf("state %s calls %d", snap.PublicState, calls.Load())
	}
	// 30+60+120+240+480 seconds of backoff
	if elapsed := snap.TerminalAt.Sub(start); elapsed < 930*time.Second {
		t.Fatalf("finished after %s of simulated time, before the backoff allows", elapsed)
	}
}

// Delayed work starts exactly when it is due, in simulated time: the
// delayed promoter wakes at the earliest due time the engine hinted, not at
// its next interval tick (issue 18, defect 4). Retries of 10s and 20s, a
// 1ms snooze and a 50ms delay, each measured from the moment it was
// scheduled.
func TestDelayedWorkStartsWhenDue(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var mu sync.Mutex
	var runs []time.Time
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[flaky](func(ctx context.Context, t *flowfabric.Task[flaky]) error {
		mu.Lock()
		runs = append(runs, h.Clock.Now())
		mu.Unlock()
		if t.Attempt < t.Args.FailTimes {
			return fmt.Errorf("attempt %d fails", t.Attempt)
		}
		return nil
	}))
	var snoozes []time.Time
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[snoozer](func(ctx context.Context, t *flowfabric.Task[snoozer]) error {
		mu.Lock()
		defer mu.Unlock()
		snoozes = append(snoozes, h.Clock.Now())
		if len(snoozes) == 1 {
			return flowfabric.Snooze(time.Millisecond)
		}
		return nil
	}))
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)

	policy := &model.RetryPolicy{MaxRetries: 2, InitialDelay: 10 * time.Second}
	id := mustSubmit(t, h, flaky{FailTimes: 2}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	if s := h.WaitTerminal(id); s.PublicState != model.PublicCompleted || len(runs) != 3 {
		t.Fatalf("state %s after %d runs", s.PublicState, len(runs))
	}
	if a, b := runs[1].Sub(runs[0]), runs[2].Sub(runs[1]); a != 10*time.Second || b != 20*time.Second {
		t.Errorf("retries started %s and %s after their failures, want exactly 10s and 20s", a, b)
	}
	if s := h.WaitTerminal(mustSubmit(t, h, snoozer{}, nil)); s.PublicState != model.PublicCompleted || len(snoozes) != 2 {
		t.Fatalf("snoozer %s after %d runs", s.PublicState, len(snoozes))
	}
	if d := snoozes[1].Sub(snoozes[0]); d != time.Millisecond {
		t.Errorf("a 1ms snooze resumed after %s", d)
	}
	at := h.Clock.Now()
	s := h.WaitTerminal(mustSubmit(t, h, greet{Name: "later"}, &flowfabric.SubmitOpts{Delay: 50 * time.Millisecond}))
	if d := s.StartedAt.Sub(at); d != 50*time.Millisecond {
		t.Errorf("a 50ms delay started after %s", d)
	}
}

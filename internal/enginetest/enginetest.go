// Package enginetest holds engine scenarios that must hold on every store:
// the root package runs them on memstore, valkeystore on each of its
// backends. Each scenario runs an engine on the wall clock and waits on
// signals, never on sleeps; its only timeout is the one that fails a hung
// test.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// timeout fails a scenario that hangs.
const timeout = 30 * time.Second

// wrapped is a store with hooks; it forwards work notifications so idle
// workers still wake at once, and reports when the engine's first sweep
// (one PartitionDue call per partition) is over, so a scenario starts from
// a known state.
type wrapped struct {
	model.Store
	mu    sync.Mutex
	calls int
	swept chan struct{}
}

func wrap(s model.Store) *wrapped { return &wrapped{Store: s, swept: make(chan struct{})} }

func (s *wrapped) PartitionDue(ctx context.Context, p *model.PartitionDueParams) (*model.PartitionDueResult, error) {
	r, err := s.Store.PartitionDue(ctx, p)
	s.mu.Lock()
	s.calls++
	if s.calls == s.Partitions().WithDefaults().FlowPartitions {
		close(s.swept)
	}
	s.mu.Unlock()
	return r, err
}

// waitSwept waits for the engine's first sweep.
func (s *wrapped) waitSwept(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-s.swept:
	case <-ctx.Done():
		t.Fatal("the engine's first sweep did not finish")
	}
}

func (s *wrapped) WatchWork(lane model.LaneID, f func(partition int)) (stop func()) {
	return s.Store.(model.WorkNotifier).WatchWork(lane, f)
}

type step struct{}

func (step) Kind() string { return "enginetest_step" }

type tick struct{}

func (tick) Kind() string { return "enginetest_tick" }

// stallScan holds the first delayed-index scan of one partition after it
// read the store, until release is closed.
type stallScan struct {
	*wrapped
	part     int
	once     sync.Once
	scanning chan struct{}
	release  chan struct{}
}

func (s *stallScan) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	r, err := s.Store.IndexScanDue(ctx, p)
	if p.Index != model.IndexDelayed || p.Partition != s.part {
		return r, err
	}
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.scanning)
		select {
		case <-s.release:
		case <-ctx.Done():
		}
	}
	return r, err
}

// HintDuringScan: a retry scheduled while the delayed promoter is scanning
// the retry's partition is promoted when due, not at the next sweep (issue
// 18, defect 5). The promoter's first scan of the partition is held, after
// it read the store, until the engine has recorded the failure and hinted
// the retry; the sweep interval is an hour, so only that hint can bring the
// retry back.
func HintDuringScan(t *testing.T, store model.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const lane = "enginetest_hint"
	part := store.Partitions().WithDefaults().SoloPartition(lane)
	st := &stallScan{wrapped: wrap(store), part: part, scanning: make(chan struct{}), release: make(chan struct{})}
	var failed sync.Once
	var failedSeen bool
	var mu sync.Mutex
	e := flowfabric.New(st, &flowfabric.Config{
		Scanners: flowfabric.ScannerConfig{
			SweepInterval:   time.Hour,
			DelayedPromoter: flowfabric.TimerConfig{Interval: 10 * time.Millisecond},
		},
		// runs after the worker recorded an outcome and gave its hints
		OnActivity: func() {
			mu.Lock()
			seen := failedSeen
			mu.Unlock()
			if seen {
				failed.Do(func() { close(st.release) })
			}
		},
	})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{Lanes: []model.LaneID{lane}, MaxConcurrent: 2})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[step](func(ctx context.Context, task *flowfabric.Task[step]) error {
		if task.Attempt > 0 {
			return nil
		}
		select { // fail while the promoter scans this partition
		case <-st.scanning:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		failedSeen = true
		mu.Unlock()
		return errors.New("fail once")
	}))
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[tick](func(context.Context, *flowfabric.Task[tick]) error { return nil }))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	st.waitSwept(ctx, t)
	// a delayed execution on the same partition makes the promoter scan it
	if _, err := e.Submit(ctx, tick{}, &flowfabric.SubmitOpts{Lane: lane, Delay: 30 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r, err := e.Submit(ctx, step{}, &flowfabric.SubmitOpts{Lane: lane,
		RetryPolicy: &model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.Wait(ctx, r.ID, 0)
	if err != nil {
		t.Fatalf("the 1ms retry scheduled during a promoter scan was not run (lost hint): %v", err)
	}
	if snap.PublicState != model.PublicCompleted {
		t.Fatalf("state %s, want completed", snap.PublicState)
	}
}

// expireSignal closes expired once the attempt-timeout scanner expired an
// attempt.
type expireSignal struct {
	*wrapped
	once    sync.Once
	expired chan struct{}
}

func (s *expireSignal) ExecutionExpire(ctx context.Context, p *model.ExecutionExpireParams) (*model.ExecutionExpireResult, error) {
	r, err := s.Store.ExecutionExpire(ctx, p)
	if err == nil && r.Outcome == model.ExpireRetryScheduled {
		s.once.Do(func() { close(s.expired) })
	}
	return r, err
}

// TimersWakeWhenDue: timer scanners wake at the earliest due time the
// engine knows, not at their interval (issue 18, defect 4). Every timer
// scanner and the sweep wait an hour between passes, yet a delayed
// submission, a retry after a failure and a retry after an attempt timeout
// (the attempt-timeout scanner hints the promoter) all run.
func TimersWakeWhenDue(t *testing.T, store model.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const lane = "enginetest_timers"
	st := &expireSignal{wrapped: wrap(store), expired: make(chan struct{})}
	hour := flowfabric.TimerConfig{Interval: time.Hour}
	e := flowfabric.New(st, &flowfabric.Config{Scanners: flowfabric.ScannerConfig{
		SweepInterval: time.Hour, DelayedPromoter: hour, AttemptTimeout: hour,
		LeaseExpiry: flowfabric.LeaseExpiryConfig{TimerConfig: hour}, ExecutionDeadline: hour,
	}})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{Lanes: []model.LaneID{lane}, MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[tick](func(context.Context, *flowfabric.Task[tick]) error { return nil }))
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[step](func(ctx context.Context, task *flowfabric.Task[step]) error {
		switch {
		case task.Attempt > 0:
			return nil
		case task.Tags["t.mode"] == "timeout":
			select { // outlive the attempt timeout
			case <-st.expired:
			case <-ctx.Done():
			}
			return nil
		}
		return errors.New("fail once")
	}))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	st.waitSwept(ctx, t)
	retry := &model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Millisecond}
	var ids []model.ExecutionID
	for _, o := range []*flowfabric.SubmitOpts{
		{Lane: lane, Delay: 50 * time.Millisecond},
		{Lane: lane, RetryPolicy: retry},
		{Lane: lane, RetryPolicy: retry, AttemptTimeout: 20 * time.Millisecond, Tags: map[string]string{"t.mode": "timeout"}},
	} {
		var args flowfabric.Args = step{}
		if o.Delay > 0 {
			args = tick{}
		}
		r, err := e.Submit(ctx, args, o)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for i, id := range ids {
		snap, err := e.Wait(ctx, id, 0)
		if err != nil {
			t.Fatalf("execution %d did not finish: its scanner did not wake when it was due: %v", i, err)
		}
		if snap.PublicState != model.PublicCompleted {
			t.Fatalf("execution %d: %s", i, snap.PublicState)
		}
	}
}

// holdNext holds the reply of the first completion that claims a next
// execution, after the store made it, until the stopping worker has begun
// handing back its leases (its first LeaseRevoke).
type holdNext struct {
	*wrapped
	once, revokeOnce sync.Once
	held, revoked    chan struct{}
}

func (s *holdNext) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	r, err := s.Store.ExecutionComplete(ctx, p)
	if p.Next == nil || err != nil || r.Next == nil || r.Next.Claimed == nil {
		return r, err
	}
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.held)
		select {
		case <-s.revoked:
		case <-ctx.Done():
		}
	}
	return r, err
}

func (s *holdNext) LeaseRevoke(ctx context.Context, p *model.LeaseRevokeParams) (*model.LeaseRevokeResult, error) {
	s.revokeOnce.Do(func() { close(s.revoked) })
	return s.Store.LeaseRevoke(ctx, p)
}

// ClaimedDuringStopIsHandedBack: an execution claimed by a
// complete-and-claim-next call whose reply arrives after Stop began is
// handed back for immediate recovery and never run by the stopping worker
// (issue 18, defect 7). MaxConcurrent 1 and DrainTimeout 1ns, so Stop
// cancels at once.
func ClaimedDuringStopIsHandedBack(t *testing.T, store model.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const lane = "enginetest_stop"
	st := &holdNext{wrapped: wrap(store), held: make(chan struct{}), revoked: make(chan struct{})}
	e := flowfabric.New(st, nil)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	var mu sync.Mutex
	ran := map[model.ExecutionID]int{}
	handler := flowfabric.HandlerFunc[step](func(ctx context.Context, task *flowfabric.Task[step]) error {
		mu.Lock()
		ran[task.ID]++
		mu.Unlock()
		return ctx.Err() // a stopping worker would fail what it runs
	})
	var ids []model.ExecutionID
	for range 2 {
		r, err := e.Submit(ctx, step{}, &flowfabric.SubmitOpts{Lane: lane})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{WorkerID: "stopping", Lanes: []model.LaneID{lane},
		MaxConcurrent: 1, DrainTimeout: time.Nanosecond})
	flowfabric.AddHandler(w, handler)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.held:
	case <-ctx.Done():
		t.Fatal("no completion claimed the next execution")
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	var second model.ExecutionID
	for _, id := range ids {
		if ran[id] == 0 {
			second = id
		}
	}
	n := len(ran)
	mu.Unlock()
	if n != 1 || second.IsZero() {
		t.Fatalf("the stopping worker ran %d executions, want only the first: what it claimed after Stop began must not run", n)
	}
	snap, err := e.Describe(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.LifecyclePhase != model.PhaseRunnable || snap.State.EligibilityState != model.EligibleNow {
		t.Fatalf("the execution claimed during Stop is %s (%s/%s), want handed back and eligible",
			snap.PublicState, snap.State.LifecyclePhase, snap.State.EligibilityState)
	}
	// another worker runs it
	w2 := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{WorkerID: "next", Lanes: []model.LaneID{lane}})
	flowfabric.AddHandler(w2, handler)
	if err := w2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w2.Stop(context.Background()) }()
	if snap, err = e.Wait(ctx, second, 0); err != nil || snap.PublicState != model.PublicCompleted {
		t.Fatalf("after the hand-back: %v %v", snap.PublicState, err)
	}
}

// refuseComplete refuses the completions of chosen executions (those whose
// payload names mode "refused") with a validation error, as a store with a
// smaller limit would, and refuses the next-claim request carried by the
// completions of executions whose payload names mode "next_refused".
type refuseComplete struct {
	*wrapped
	mu         sync.Mutex
	refuse     map[model.ExecutionID]bool
	refuseNext map[model.ExecutionID]bool
	nextSeen   bool // a completion of a next_refused execution carried a next claim
}

func (s *refuseComplete) ExecutionCreate(ctx context.Context, p *model.ExecutionCreateParams) (*model.ExecutionCreateResult, error) {
	s.mu.Lock()
	if bytes.Contains(p.Payload, []byte(`"refused"`)) {
		s.refuse[p.ID] = true
	}
	if bytes.Contains(p.Payload, []byte(`"next_refused"`)) {
		s.refuseNext[p.ID] = true
	}
	s.mu.Unlock()
	return s.Store.ExecutionCreate(ctx, p)
}

func (s *refuseComplete) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	s.mu.Lock()
	bad := s.refuse[p.ID]
	badNext := s.refuseNext[p.ID] && p.Next != nil
	s.nextSeen = s.nextSeen || badNext
	s.mu.Unlock()
	if bad {
		return nil, model.InvalidField("result", "too_large")
	}
	if badNext {
		return nil, model.InvalidField("Next.Capabilities", "too_many")
	}
	return s.Store.ExecutionComplete(ctx, p)
}

type outcomeArgs struct {
	Mode string `json:"mode"`
}

func (outcomeArgs) Kind() string { return "enginetest_outcome" }

// RefusedOutcomeFailsAtOnce: an outcome that cannot be recorded for a
// reason retrying cannot fix fails the attempt at once with category
// invalid_outcome, not retried, instead of leaving the execution active
// until its lease expires and re-running it (issue 18, defect 6): a result
// over MaxResultBytes (SetResult refuses it), Fail with a malformed
// category, and a completion the store refuses as invalid.
func RefusedOutcomeFailsAtOnce(t *testing.T, store model.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const lane = "enginetest_outcome"
	st := &refuseComplete{wrapped: wrap(store), refuse: map[model.ExecutionID]bool{}, refuseNext: map[model.ExecutionID]bool{}}
	e := flowfabric.New(st, nil)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	var mu sync.Mutex
	runs := map[string]int{}
	var setErr error
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{Lanes: []model.LaneID{lane}})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[outcomeArgs](func(ctx context.Context, task *flowfabric.Task[outcomeArgs]) error {
		mu.Lock()
		runs[task.Args.Mode]++
		mu.Unlock()
		switch task.Args.Mode {
		case "big":
			err := task.SetResult(make([]byte, model.MaxResultBytes+1))
			mu.Lock()
			setErr = err
			mu.Unlock()
			return nil // ignores the error
		case "category":
			return flowfabric.Fail("Not A Category!", errors.New("boom"))
		}
		return nil
	}))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	retry := &model.RetryPolicy{MaxRetries: 3, Backoff: model.BackoffFixed, Delay: time.Millisecond}
	ids := map[string]model.ExecutionID{}
	for _, mode := range []string{"big", "category", "refused"} {
		r, err := e.Submit(ctx, outcomeArgs{Mode: mode}, &flowfabric.SubmitOpts{Lane: lane, RetryPolicy: retry})
		if err != nil {
			t.Fatal(err)
		}
		ids[mode] = r.ID
	}
	for mode, id := range ids {
		snap, err := e.Wait(ctx, id, 0)
		if err != nil {
			t.Fatalf("%s: not failed at once (left active until its lease expires?): %v", mode, err)
		}
		if snap.PublicState != model.PublicFailed || snap.FailureCategory != model.FailureInvalidOutcome || snap.TotalAttempts != 1 {
			t.Errorf("%s: %s category %q after %d attempts (%s), want failed, invalid_outcome, 1 attempt",
				mode, snap.PublicState, snap.FailureCategory, snap.TotalAttempts, snap.FailureReason)
		}
		t.Logf("%s: %s", mode, snap.FailureReason)
	}
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(setErr, model.ErrValidation) {
		t.Errorf("SetResult of %d bytes returned %v, want a validation error", model.MaxResultBytes+1, setErr)
	}
	for mode, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", mode, n)
		}
	}
	// A refused next-claim request is the worker's, not the handler's: the
	// handler's success is recorded without it.
	r, err := e.Submit(ctx, outcomeArgs{Mode: "next_refused"}, &flowfabric.SubmitOpts{Lane: lane, RetryPolicy: retry})
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	snap, err := e.Wait(ctx, r.ID, 0)
	mu.Lock()
	if err != nil {
		t.Fatalf("next_refused: %v", err)
	}
	if snap.PublicState != model.PublicCompleted || snap.TotalAttempts != 1 || runs["next_refused"] != 1 {
		t.Errorf("next_refused: %s after %d attempts and %d runs (%s), want completed once",
			snap.PublicState, snap.TotalAttempts, runs["next_refused"], snap.FailureReason)
	}
	st.mu.Lock()
	seen := st.nextSeen
	st.mu.Unlock()
	if !seen {
		t.Error("next_refused: no completion carried a next claim; the case proves nothing")
	}
}

type fanOut struct {
	Numbers []int `json:"numbers"`
}

func (fanOut) Kind() string { return "enginetest_fan_out" }

type square struct {
	N int `json:"n"`
}

func (square) Kind() string { return "enginetest_square" }

// AwaitChildren: a flow node fans out to children with AwaitChildren and
// parks; it resumes (the same attempt) once every child has ended, a
// failed one included, and reads their results with TaskInfo.Children.
func AwaitChildren(t *testing.T, store model.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const lane = "enginetest_children"
	e := flowfabric.New(store, nil)
	if err := e.RegisterLane(lane, flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(context.Background()) }()
	opts := &flowfabric.SubmitOpts{Lane: lane}
	var mu sync.Mutex
	var seen []string // what the resumed parent read: each child's state and result
	runs := 0
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{Lanes: []model.LaneID{lane}, MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, task *flowfabric.Task[fanOut]) error {
		mu.Lock()
		runs++
		mu.Unlock()
		if !task.Resumed {
			var kids []flowfabric.Child
			for _, n := range task.Args.Numbers {
				kids = append(kids, flowfabric.NewChild(square{N: n}, opts))
			}
			return flowfabric.AwaitChildren(kids...)
		}
		kids, err := task.Children(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range kids {
			seen = append(seen, k.State.String()+":"+string(k.Result))
		}
		return nil
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, task *flowfabric.Task[square]) error {
		if task.Args.N < 0 {
			return flowfabric.Permanent(errors.New("negative"))
		}
		return task.SetResultJSON(task.Args.N * task.Args.N)
	}))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	f := flowfabric.NewFlow()
	parent := f.Add(fanOut{Numbers: []int{2, -1, 3}}, opts)
	res, err := e.SubmitFlow(ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.Wait(ctx, res.Of(parent), 0)
	if err != nil {
		t.Fatal(err)
	}
	if snap.PublicState != model.PublicCompleted || snap.TotalAttempts != 1 {
		t.Fatalf("parent: %s after %d attempts (%s)", snap.PublicState, snap.TotalAttempts, snap.FailureReason)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen)
	if want := []string{"completed:4", "completed:9", "failed:"}; runs != 2 || !slices.Equal(seen, want) {
		t.Fatalf("parent ran %d times and read %v, want 2 runs reading %v", runs, seen, want)
	}
}

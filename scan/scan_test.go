package scan_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var base = time.UnixMilli(1_700_000_000_000)

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clock *model.SimClock
	store *memstore.Store
	seq   uint64
}

func newFixture(t *testing.T, parts int) *fixture {
	return &fixture{t: t, ctx: context.Background(), clock: model.NewSimClock(base),
		store: memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: parts}})}
}

func (f *fixture) uuid() model.UUID {
	f.seq++
	var b [16]byte
	for i := range 8 {
		b[15-i] = byte(f.seq >> (8 * i))
	}
	return model.NewUUIDv4(b)
}

func (f *fixture) create(part int, lane model.LaneID, mod func(*model.ExecutionCreateParams)) model.ExecutionID {
	f.t.Helper()
	p := &model.ExecutionCreateParams{ID: model.NewExecutionID(part, f.uuid()), Namespace: "default",
		Lane: lane, Kind: "k", Now: f.clock.Now()}
	if mod != nil {
		mod(p)
	}
	if _, err := f.store.ExecutionCreate(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p.ID
}

// sweep runs one sweeper pass for the given scanners, as the engine does
// when it starts.
func (f *fixture) sweep(u *scan.Unblock, timers ...scan.Hinter) {
	f.t.Helper()
	if _, err := scan.NewSweeper(f.store, 0, u, timers...).RunOnce(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) claimAll(part int, lane model.LaneID, ttl time.Duration, caps model.Capabilities) int {
	f.t.Helper()
	n := 0
	for {
		r, err := f.store.ExecutionClaimNext(f.ctx, &model.ExecutionClaimNextParams{
			Partition: part, Lane: lane, Capabilities: caps, LiveCapabilities: caps, ScanLimit: 10,
			LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1",
				LeaseID: model.LeaseID(f.uuid()), AttemptID: model.AttemptID(f.uuid()), LeaseTTL: ttl},
			Now: f.clock.Now(),
		})
		if err != nil {
			f.t.Fatal(err)
		}
		if r.Claimed == nil {
			return n
		}
		n++
	}
}

// 10,000 expired leases in one partition are all recovered in
// ceil(10,000 / batch) passes: recovered entries leave the index, and no
// pass re-reads the same head.
func TestLeaseExpiryRecoversBacklogInBoundedPasses(t *testing.T) {
	f := newFixture(t, 4)
	const n, batch = 10_000, 50
	for range n {
		f.create(2, "l", nil)
	}
	if got := f.claimAll(2, "l", time.Second, nil); got != n {
		t.Fatalf("claimed %d", got)
	}
	f.clock.Advance(time.Minute)
	s := scan.NewLeaseExpiry(f.store, f.clock, scan.LeaseExpiryConfig{TimerConfig: scan.TimerConfig{Batch: batch}})
	f.sweep(nil, s)
	passes, acted := 0, 0
	for {
		res, err := s.RunOnce(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		passes++
		acted += res.Acted
		if !res.More {
			break
		}
		if passes > n {
			t.Fatal("no progress")
		}
	}
	if want := (n + batch - 1) / batch; passes > want+1 {
		t.Fatalf("%d passes, want at most %d", passes, want+1)
	}
	if acted != n {
		t.Fatalf("acted on %d, want %d", acted, n)
	}
	due, _ := f.store.IndexScanDue(f.ctx, &model.IndexScanDueParams{Partition: 2, Index: model.IndexLeaseExpiry, Now: f.clock.Now(), Limit: 10})
	if len(due.Items) != 0 {
		t.Fatalf("%d leases left", len(due.Items))
	}
}

// failingRecover fails ExecutionRecover for chosen executions.
type failingRecover struct {
	*memstore.Store
	bad   map[model.ExecutionID]bool
	calls atomic.Int64
}

func (s *failingRecover) ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error) {
	s.calls.Add(1)
	if s.bad[p.ID] {
		return nil, errors.New("injected failure")
	}
	return s.Store.ExecutionRecover(ctx, p)
}

// Entries the scanner cannot act on never hold back those behind them.
func TestScannerMovesPastFailingEntries(t *testing.T) {
	f := newFixture(t, 1)
	var ids []model.ExecutionID
	for range 30 {
		ids = append(ids, f.create(0, "l", nil))
	}
	f.claimAll(0, "l", time.Second, nil)
	f.clock.Advance(time.Minute)
	bad := map[model.ExecutionID]bool{}
	// the first batch of the index is all poison
	due, _ := f.store.IndexScanDue(f.ctx, &model.IndexScanDueParams{Partition: 0, Index: model.IndexLeaseExpiry, Now: f.clock.Now(), Limit: 10})
	for _, it := range due.Items {
		bad[it.ID] = true
	}
	st := &failingRecover{Store: f.store, bad: bad}
	s := scan.NewLeaseExpiry(st, f.clock, scan.LeaseExpiryConfig{TimerConfig: scan.TimerConfig{Batch: 10}})
	f.sweep(nil, s)
	for range 5 {
		if _, err := s.RunOnce(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		snap, _ := f.store.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: id})
		recovered := snap.State.LifecyclePhase == model.PhaseRunnable
		if recovered == bad[id] {
			t.Fatalf("%s: recovered=%v poison=%v", id, recovered, bad[id])
		}
	}
	// a poison entry is skipped for a while after failing repeatedly
	before := st.calls.Load()
	if _, err := s.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if st.calls.Load() != before {
		t.Fatalf("poison entries retried every pass (%d calls)", st.calls.Load()-before)
	}
}

// countingWorkers counts WorkerList calls and can fail them.
type countingWorkers struct {
	*memstore.Store
	lists atomic.Int64
	fail  atomic.Bool
}

func (s *countingWorkers) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	s.lists.Add(1)
	if s.fail.Load() {
		return nil, errors.New("injected read failure")
	}
	return s.Store.WorkerList(ctx, p)
}

func (f *fixture) blockRoute(part int, req ...string) model.ExecutionID {
	f.t.Helper()
	caps, _ := model.ParseCapabilities("RequiredCapabilities", req)
	id := f.create(part, "l", func(p *model.ExecutionCreateParams) { p.RequiredCapabilities = caps })
	if _, err := f.store.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForCapableWorker, Now: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) register(instance string, caps ...string) {
	f.t.Helper()
	c, _ := model.ParseCapabilities("Capabilities", caps)
	if _, err := f.store.WorkerRegister(f.ctx, &model.WorkerRegisterParams{Namespace: "default", WorkerID: "w",
		WorkerInstanceID: model.WorkerInstanceID(instance), SessionID: "s-" + instance, Lanes: []model.LaneID{"l"},
		Capabilities: c, TTL: time.Hour, Now: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) phase(id model.ExecutionID) model.EligibilityState {
	s, err := f.store.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return s.State.EligibilityState
}

// The unblock scanner reads the live workers' capabilities once per pass
// for every partition, unblocks what they cover, and fails open when it
// cannot read them.
func TestUnblockUnionOncePerPassAndFailOpen(t *testing.T) {
	f := newFixture(t, 8)
	gpu := f.blockRoute(1, "gpu")
	tpu := f.blockRoute(5, "tpu")
	st := &countingWorkers{Store: f.store}
	s := scan.NewUnblock(st, f.clock, scan.UnblockConfig{})
	f.sweep(s)
	f.register("a", "gpu")
	res, err := s.RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.lists.Load() != 1 || res.Partitions != 2 {
		t.Fatalf("worker list read %d times over %d partitions (want once, over the 2 with route blocks)", st.lists.Load(), res.Partitions)
	}
	if f.phase(gpu) != model.EligibleNow || f.phase(tpu) != model.BlockedByRoute {
		t.Fatalf("gpu %s tpu %s", f.phase(gpu), f.phase(tpu))
	}
	// the union did not change: a pass visits no partition
	res, _ = s.RunOnce(f.ctx)
	if res.Partitions != 0 {
		t.Fatalf("unchanged union visited %d partitions", res.Partitions)
	}
	// a new worker changes the union: only the partitions known to have had
	// route blocks since the last sweep are visited, not all eight
	f.register("b", "fpga")
	res, _ = s.RunOnce(f.ctx)
	if res.Partitions != 2 {
		t.Fatalf("changed union visited %d partitions, want the 2 with route blocks", res.Partitions)
	}
	// cannot read the workers: fail open, unblock
	st.fail.Store(true)
	res, _ = s.RunOnce(f.ctx)
	if f.phase(tpu) != model.EligibleNow || res.Errors != 1 {
		t.Fatalf("fail-open: tpu %s, errors %d", f.phase(tpu), res.Errors)
	}
}

// The unblock scanner of one namespace never unblocks another namespace's
// execution, even when its own live workers have the capability, nor in
// fail-open mode (issue 18, defect 2).
func TestUnblockStaysInNamespace(t *testing.T) {
	f := newFixture(t, 4)
	caps := model.Capabilities{"gpu"}
	blocked := func(ns model.Namespace) model.ExecutionID {
		id := f.create(1, "l", func(p *model.ExecutionCreateParams) { p.Namespace, p.RequiredCapabilities = ns, caps })
		if _, err := f.store.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForCapableWorker, Now: f.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b := blocked("tenant-a"), blocked("tenant-b")
	if _, err := f.store.WorkerRegister(f.ctx, &model.WorkerRegisterParams{Namespace: "tenant-a", WorkerID: "w",
		WorkerInstanceID: "wa", SessionID: "s", Lanes: []model.LaneID{"l"}, Capabilities: caps,
		TTL: time.Hour, Now: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	st := &countingWorkers{Store: f.store}
	s := scan.NewUnblock(st, f.clock, scan.UnblockConfig{Namespace: "tenant-a"})
	f.sweep(s)
	if _, err := s.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if f.phase(a) != model.EligibleNow || f.phase(b) != model.BlockedByRoute {
		t.Fatalf("tenant-a scanner: tenant-a's %s, tenant-b's %s (want eligible, blocked)", f.phase(a), f.phase(b))
	}
	st.fail.Store(true)
	s.Hint(1, f.clock.Now())
	if _, err := s.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if f.phase(b) != model.BlockedByRoute {
		t.Fatalf("tenant-a scanner failing open unblocked tenant-b's execution")
	}
}

// Unblock cost does not grow with executions that stay blocked.
func TestUnblockCostIndependentOfStuckBacklog(t *testing.T) {
	f := newFixture(t, 1)
	for range 500 {
		f.blockRoute(0, "never")
	}
	ok := f.blockRoute(0, "gpu")
	f.register("a", "gpu")
	s := scan.NewUnblock(f.store, f.clock, scan.UnblockConfig{Batch: 10})
	f.sweep(s)
	res, err := s.RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Acted != 1 || f.phase(ok) != model.EligibleNow {
		t.Fatalf("acted %d", res.Acted)
	}
}

// A timer scanner visits only partitions with something due: it learns
// due times from the sweeper, from its own scans and from hints.
func TestDelayedPromoterAndHints(t *testing.T) {
	f := newFixture(t, 4)
	id := f.create(3, "l", func(p *model.ExecutionCreateParams) { p.DelayUntil = base.Add(time.Minute) })
	s := scan.NewDelayedPromoter(f.store, f.clock, scan.TimerConfig{})
	if res, _ := s.RunOnce(f.ctx); res.Partitions != 0 {
		t.Fatalf("a pass before any sweep or hint visited %d partitions", res.Partitions)
	}
	f.sweep(nil, s)
	if res, _ := s.RunOnce(f.ctx); res.Partitions != 0 {
		t.Fatalf("nothing due yet, yet the pass visited %d partitions", res.Partitions)
	}
	f.clock.Advance(time.Minute)
	res, _ := s.RunOnce(f.ctx) // partition 3 is due now
	if res.Partitions != 1 || res.Acted != 1 || f.phase(id) != model.EligibleNow {
		t.Fatalf("due pass: %+v, %s", res, f.phase(id))
	}
	// a new delayed execution elsewhere is found through a hint
	other := f.create(1, "l", func(p *model.ExecutionCreateParams) { p.DelayUntil = f.clock.Now().Add(time.Second) })
	s.Hint(1, f.clock.Now().Add(time.Second))
	f.clock.Advance(time.Second)
	if res, _ = s.RunOnce(f.ctx); res.Acted != 1 || f.phase(other) != model.EligibleNow {
		t.Fatalf("hinted pass: %+v", res)
	}
}

// The sweeper costs one store call per partition and tells each scanner
// what is due where.
func TestSweeper(t *testing.T) {
	f := newFixture(t, 4)
	f.create(2, "l", func(p *model.ExecutionCreateParams) { p.DelayUntil = base.Add(time.Minute) })
	blocked := f.blockRoute(3, "gpu")
	d := scan.NewDelayedPromoter(f.store, f.clock, scan.TimerConfig{})
	u := scan.NewUnblock(f.store, f.clock, scan.UnblockConfig{})
	sw := scan.NewSweeper(f.store, 0, u, d)
	res, err := sw.RunOnce(f.ctx)
	if err != nil || res.Partitions != 4 || sw.Interval() != scan.DefaultSweepInterval {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	f.clock.Advance(time.Minute)
	if res, _ := d.RunOnce(f.ctx); res.Partitions != 1 || res.Acted != 1 {
		t.Fatalf("promoter after the sweep: %+v", res)
	}
	f.register("g", "gpu")
	if res, _ := u.RunOnce(f.ctx); res.Partitions != 1 || f.phase(blocked) != model.EligibleNow {
		t.Fatalf("unblock after the sweep: %+v %s", res, f.phase(blocked))
	}
}

func TestAttemptTimeoutScanner(t *testing.T) {
	f := newFixture(t, 1)
	retried := f.create(0, "l", func(p *model.ExecutionCreateParams) {
		p.AttemptTimeout = time.Second
		p.RetryPolicy = model.RetryPolicy{MaxRetries: 1}
	})
	expired := f.create(0, "l", func(p *model.ExecutionCreateParams) { p.AttemptTimeout = time.Second })
	f.claimAll(0, "l", time.Hour, nil)
	f.clock.Advance(2 * time.Second)
	s := scan.NewAttemptTimeout(f.store, f.clock, scan.TimerConfig{})
	f.sweep(nil, s)
	if res, err := s.RunOnce(f.ctx); err != nil || res.Acted != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if f.phase(retried) != model.NotEligibleUntilTime {
		t.Errorf("retried: %s", f.phase(retried))
	}
	snap, _ := f.store.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: expired})
	if snap.PublicState != model.PublicExpired {
		t.Errorf("expired: %s", snap.PublicState)
	}
}

type panicky struct {
	passes atomic.Int64
}

func (p *panicky) Name() string            { return "panicky" }
func (p *panicky) Interval() time.Duration { return time.Second }
func (p *panicky) RunOnce(context.Context) (scan.Result, error) {
	if p.passes.Add(1) == 1 {
		panic("first pass explodes")
	}
	return scan.Result{}, nil
}

// A panicking scanner is restarted; Stop is idempotent, safe before Start,
// and leaves no goroutine behind (goleak checks in TestMain).
func TestRunnerRestartsPanickedScanner(t *testing.T) {
	clock := model.NewSimClock(base)
	p := &panicky{}
	r := scan.NewRunner(scan.RunnerConfig{Clock: clock, RestartDelay: 5 * time.Second}, p)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = scan.NewRunner(scan.RunnerConfig{Clock: clock, RestartDelay: 5 * time.Second}, p)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	for p.passes.Load() < 3 {
		clock.AdvanceToNext()
	}
	for range 2 {
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunnerStartStopStress(t *testing.T) {
	for i := range 20 {
		clock := model.NewSimClock(base)
		f := newFixture(t, 2)
		r := scan.NewRunner(scan.RunnerConfig{Clock: clock},
			scan.NewDelayedPromoter(f.store, clock, scan.TimerConfig{}),
			scan.NewLeaseExpiry(f.store, clock, scan.LeaseExpiryConfig{}))
		var wg sync.WaitGroup
		for j := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if (i+j)%2 == 0 {
					_ = r.Start(context.Background())
				}
				_ = r.Stop(context.Background())
			}()
		}
		wg.Wait()
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(fmt.Sprint(i, err))
		}
	}
}

// hintingScan runs a callback after its delayed-index scan read the
// store and before it returns: a hint that arrives while the scanner is
// in a pass.
type hintingScan struct {
	*memstore.Store
	during func()
}

func (s *hintingScan) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	r, err := s.Store.IndexScanDue(ctx, p)
	if f := s.during; f != nil {
		s.during = nil
		f()
	}
	return r, err
}

// A hint that arrives while its partition is being scanned is kept: the
// scan's finding (nothing more due) does not overwrite it (issue 18,
// defect 5).
func TestHintDuringPassIsKept(t *testing.T) {
	f := newFixture(t, 2)
	first := f.create(1, "l", func(p *model.ExecutionCreateParams) { p.DelayUntil = base.Add(time.Second) })
	st := &hintingScan{Store: f.store}
	s := scan.NewDelayedPromoter(st, f.clock, scan.TimerConfig{})
	s.Hint(1, base.Add(time.Second))
	f.clock.Advance(time.Second)
	var late model.ExecutionID
	st.during = func() {
		late = f.create(1, "l", func(p *model.ExecutionCreateParams) { p.DelayUntil = f.clock.Now().Add(time.Millisecond) })
		s.Hint(1, f.clock.Now().Add(time.Millisecond))
	}
	if res, err := s.RunOnce(f.ctx); err != nil || res.Acted != 1 || f.phase(first) != model.EligibleNow {
		t.Fatalf("first pass: %+v %v", res, err)
	}
	f.clock.Advance(time.Millisecond)
	if res, err := s.RunOnce(f.ctx); err != nil || res.Acted != 1 || f.phase(late) != model.EligibleNow {
		t.Fatalf("the hint given during the first pass was lost: %+v %v, %s", res, err, f.phase(late))
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// countingStore wraps a store: it counts calls per method (for valkeystore
// every call is one script, one round trip) and successful completions.
type countingStore struct {
	model.Store
	comp  *counter
	mu    sync.Mutex
	calls map[string]*atomic.Int64
}

func newCountingStore(s model.Store, comp *counter) *countingStore {
	return &countingStore{Store: s, comp: comp, calls: map[string]*atomic.Int64{}}
}

func (c *countingStore) count(name string) {
	c.mu.Lock()
	n := c.calls[name]
	if n == nil {
		n = new(atomic.Int64)
		c.calls[name] = n
	}
	c.mu.Unlock()
	n.Add(1)
}

func (c *countingStore) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		out[k] = v.Load()
	}
	return out
}

// WatchWork implements model.WorkNotifier when the wrapped store does.
func (c *countingStore) WatchWork(lane model.LaneID, f func(partition int)) func() {
	if n, ok := c.Store.(model.WorkNotifier); ok {
		return n.WatchWork(lane, func(partition int) {
			c.count("WatchWork(notified)")
			f(partition)
		})
	}
	return func() {}
}

// WatchLeases implements model.LeaseNotifier when the wrapped store does.
func (c *countingStore) WatchLeases(wi model.WorkerInstanceID, f func(model.LeaseNotice)) func() {
	if n, ok := c.Store.(model.LeaseNotifier); ok {
		return n.WatchLeases(wi, f)
	}
	return func() {}
}

func (c *countingStore) ExecutionCreate(ctx context.Context, p *model.ExecutionCreateParams) (*model.ExecutionCreateResult, error) {
	c.count("ExecutionCreate")
	return c.Store.ExecutionCreate(ctx, p)
}

func (c *countingStore) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	c.count("ExecutionClaimNext")
	r, err := c.Store.ExecutionClaimNext(ctx, p)
	if err == nil && r.Claimed == nil {
		c.count("ExecutionClaimNext(empty)")
	}
	return r, err
}

func (c *countingStore) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	c.count("ExecutionComplete")
	r, err := c.Store.ExecutionComplete(ctx, p)
	if err == nil && !r.Replayed && c.comp != nil {
		c.comp.add(1)
	}
	return r, err
}

func (c *countingStore) ExecutionClaim(ctx context.Context, p *model.ExecutionClaimParams) (*model.ClaimResult, error) {
	c.count("ExecutionClaim")
	return c.Store.ExecutionClaim(ctx, p)
}

func (c *countingStore) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	c.count("WorkerList")
	return c.Store.WorkerList(ctx, p)
}

func (c *countingStore) WorkerHeartbeat(ctx context.Context, p *model.WorkerHeartbeatParams) (*model.WorkerHeartbeatResult, error) {
	c.count("WorkerHeartbeat")
	return c.Store.WorkerHeartbeat(ctx, p)
}

func (c *countingStore) WorkerRegister(ctx context.Context, p *model.WorkerRegisterParams) (*model.WorkerRegisterResult, error) {
	c.count("WorkerRegister")
	return c.Store.WorkerRegister(ctx, p)
}

func (c *countingStore) WorkerExpire(ctx context.Context, p *model.WorkerExpireParams) (*model.WorkerExpireResult, error) {
	c.count("WorkerExpire")
	return c.Store.WorkerExpire(ctx, p)
}

func (c *countingStore) LeaseRenew(ctx context.Context, p *model.LeaseRenewParams) (*model.LeaseRenewResult, error) {
	c.count("LeaseRenew")
	return c.Store.LeaseRenew(ctx, p)
}

func (c *countingStore) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	c.count("IndexScanDue")
	return c.Store.IndexScanDue(ctx, p)
}

func (c *countingStore) RouteUnblock(ctx context.Context, p *model.RouteUnblockParams) (*model.RouteUnblockResult, error) {
	c.count("RouteUnblock")
	return c.Store.RouteUnblock(ctx, p)
}

func (c *countingStore) LeaseMarkExpired(ctx context.Context, p *model.LeaseMarkExpiredParams) (*model.LeaseMarkExpiredResult, error) {
	c.count("LeaseMarkExpired")
	return c.Store.LeaseMarkExpired(ctx, p)
}

func (c *countingStore) ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error) {
	c.count("ExecutionRecover")
	return c.Store.ExecutionRecover(ctx, p)
}

var (
	_ model.WorkNotifier  = (*countingStore)(nil)
	_ model.LeaseNotifier = (*countingStore)(nil)
)

// ffSystem is flowfabric: the real engine (flowfabric.New, scanners
// started at default intervals) and the real worker runtime
// (flowfabric.NewWorker with a typed handler).
// benchKind is the kind of every flowfabric bench execution.
const benchKind flowfabric.Kind = "bench"

type ffSystem struct {
	name  string
	addrs []string // nil: memstore
	// workers × perWorker handler slots: "16x1" is 16 Workers with
	// MaxConcurrent 1 (16 claim loops); "1x16" one Worker with
	// MaxConcurrent 16 (one claim loop).
	shape string
	// adm attaches a non-limiting budget and quota to every job (S10): the
	// engine runs the admission steps of the claim path, and nothing is
	// ever refused.
	adm  bool
	opts *flowfabric.SubmitOpts
	// feeds builds the store with these event feeds (S13); wrap, when
	// set, wraps the counting store before the engine gets it (S13's
	// stream-forwarding wrapper).
	feeds model.Feeds
	wrap  func(*countingStore) (model.Store, error)
	// warmUp (memstore-warm) drains one untimed S1 of the same size on a
	// throwaway memstore in this process before the measured one, so the
	// measured drain runs on a Go heap that has been through a drain and
	// reuses freed memory, as a long-running process does, instead of
	// touching fresh pages (11 µs each on this machine kind; see
	// docs/ARCHITECTURE.md "memstore and fresh memory").
	warmUp bool
	// spread (valkey-spread, valkey-cluster-spread) registers the bench's
	// lane as a spread lane: each job lands on a partition chosen from its
	// id, so on a cluster the jobs, their scripts and their work notices
	// are spread over every master instead of the one that owns the lane's
	// solo partition.
	spread bool

	client  valkey.Client
	vs      *valkeystore.Store
	store   *countingStore
	engine  *flowfabric.Engine
	workers []*flowfabric.Worker
	comp    *counter
	onStart atomic.Pointer[func(int64)]
}

func newFF(name string, addrs []string, shape string) *ffSystem {
	return &ffSystem{name: name, addrs: addrs, shape: shape}
}

func (s *ffSystem) Name() string { return s.name }

func (s *ffSystem) Describe() string {
	st := "memstore (in process)"
	if s.warmUp {
		st = "memstore (in process), measured after one untimed drain of the same size on another memstore in this process"
	}
	if s.addrs != nil {
		st = fmt.Sprintf("valkeystore on %d node(s), valkey-go client (auto-pipelining, no client cache)", len(s.addrs))
	}
	lane := `lane "default"`
	if s.spread {
		lane = `lane "default" registered as a spread lane (LaneConfig.Spread: each job on a partition of its own id)`
	}
	return fmt.Sprintf("flowfabric engine (scanners at defaults) on %s; worker shape %s (Workers × MaxConcurrent), %s, raw handler (8-byte sequence + 4 KiB opaque payload)", st, s.shape, lane)
}

func (s *ffSystem) probe() *serverProbe {
	if s.addrs == nil {
		return nil
	}
	return &serverProbe{addrs: s.addrs}
}

func (s *ffSystem) open(ctx context.Context) error {
	s.comp = newCounter()
	var base model.Store
	if s.addrs == nil {
		base = memstore.New(&memstore.Options{Feeds: s.feeds})
	} else {
		if err := s.probe().flushAll(); err != nil {
			return err
		}
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: s.addrs, DisableCache: true})
		if err != nil {
			return err
		}
		s.client = c
		vs, err := valkeystore.New(c, &valkeystore.Options{Feeds: s.feeds})
		if err != nil {
			c.Close()
			s.client = nil
			return err
		}
		s.vs = vs
		base = vs
	}
	s.store = newCountingStore(base, s.comp)
	if s.wrap != nil {
		st, err := s.wrap(s.store)
		if err != nil {
			s.close()
			return err
		}
		if err := s.newEngine(st); err != nil {
			s.close()
			return err
		}
		if err := s.engine.Start(ctx); err != nil {
			s.close()
			return err
		}
		return nil
	}
	if !s.adm {
		if err := s.newEngine(s.store); err != nil {
			return err
		}
		return s.engine.Start(ctx)
	}
	as, ok := base.(model.AdmissionStore)
	bl, ok2 := base.(model.Blocker)
	if !ok || !ok2 {
		return fmt.Errorf("%T has no budgets and quotas", base)
	}
	if err := s.newEngine(newAdmCountingStore(s.store, as, bl)); err != nil {
		return err
	}
	opts, err := nonLimitingAdmission(ctx, s.engine)
	if err != nil {
		return err
	}
	s.opts = opts
	return s.engine.Start(ctx)
}

// newEngine builds the engine on st, with the bench's lane spread when
// s.spread is set.
func (s *ffSystem) newEngine(st model.Store) error {
	s.engine = flowfabric.New(st, nil)
	if s.spread {
		return s.engine.RegisterLane(model.DefaultLane, flowfabric.LaneConfig{Spread: true})
	}
	return nil
}

// nonLimitingAdmission creates a budget with a hard limit no run reaches
// and a quota whose rate and concurrency are far above what any run
// reaches, and returns the options that attach both to a job (S10).
func nonLimitingAdmission(ctx context.Context, e *flowfabric.Engine) (*flowfabric.SubmitOpts, error) {
	b, _, err := e.CreateBudget(ctx, flowfabric.BudgetSpec{
		Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: model.MaxBudgetAmount}}})
	if err != nil {
		return nil, err
	}
	q, _, err := e.CreateQuota(ctx, flowfabric.QuotaSpec{Rate: s10QuotaRate, Window: time.Second, Concurrency: s10QuotaConcurrency})
	if err != nil {
		return nil, err
	}
	return &flowfabric.SubmitOpts{Budgets: []flowfabric.BudgetID{b}, Quota: q, QuotaKey: "k"}, nil
}

// The S10 quota: 100,000 starts per second and 10,000 running per key,
// against at most a few ten thousand jobs/s and 16 slots.
const (
	s10QuotaRate        = 100_000
	s10QuotaConcurrency = 10_000
)

func (s *ffSystem) submit(ctx context.Context, a benchArgs) error {
	_, err := s.engine.SubmitRaw(ctx, benchKind, encode(a), s.opts)
	return err
}

func (s *ffSystem) submitBatch(ctx context.Context, as []benchArgs) error {
	batch := make([]flowfabric.SubmitParams, len(as))
	for i, a := range as {
		batch[i] = flowfabric.SubmitParams{Kind: benchKind, Payload: encode(a), Opts: s.opts}
	}
	_, err := s.engine.SubmitMany(ctx, batch)
	return err
}

func parseShape(shape string, slots int) (workers, per int) {
	if shape == "1x16" || shape == "1xN" {
		return 1, slots
	}
	return slots, 1
}

func (s *ffSystem) startWorkers(ctx context.Context, slots int, onStart func(int64)) error {
	s.onStart.Store(&onStart)
	n, per := parseShape(s.shape, slots)
	// a raw handler: the payload is opaque bytes, as for raw and Asynq
	h := func(_ context.Context, t *flowfabric.TaskInfo) error {
		a, err := decode(t.Payload)
		if err != nil {
			return flowfabric.Permanent(err)
		}
		(*s.onStart.Load())(a.Seq)
		return nil
	}
	for i := range n {
		w := flowfabric.NewWorker(s.engine, &flowfabric.WorkerConfig{
			WorkerID: model.WorkerID(fmt.Sprintf("bench-%d", i)), MaxConcurrent: per,
		})
		if err := w.HandleRaw(benchKind, h); err != nil {
			return err
		}
		s.workers = append(s.workers, w)
	}
	// start them together so the first claims race as they would in a
	// fleet of processes
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Start(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (s *ffSystem) completions() *counter { return s.comp }

func (s *ffSystem) storeCalls() map[string]int64 { return s.store.snapshot() }

func (s *ffSystem) stopWorkers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Stop(ctx); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.workers = nil
	return first
}

func (s *ffSystem) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(s.workers) > 0 {
		_ = s.stopWorkers(ctx)
	}
	if s.engine != nil {
		_ = s.engine.Stop(ctx)
	}
	if s.vs != nil {
		s.vs.Close()
	}
	if s.client != nil {
		s.client.Close()
	}
	s.engine, s.vs, s.client = nil, nil, nil
}

// callsDelta returns b − a per method, sorted by name, as "name=n/job".
func callsDelta(a, b map[string]int64, per float64) (map[string]float64, float64) {
	out := map[string]float64{}
	var total float64
	for k, v := range b {
		d := float64(v - a[k])
		if d == 0 {
			continue
		}
		out[k] = d / per
		if k != "ExecutionClaimNext(empty)" {
			total += d / per
		}
	}
	return out, total
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

package scan

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Default intervals (FlowFabric's).
const (
	DefaultLeaseExpiryInterval       = 1500 * time.Millisecond
	DefaultDelayedPromoterInterval   = 750 * time.Millisecond
	DefaultAttemptTimeoutInterval    = 2 * time.Second
	DefaultExecutionDeadlineInterval = 5 * time.Second
	DefaultUnblockInterval           = 5 * time.Second
	DefaultWorkerExpiryInterval      = 30 * time.Second
)

// TimerConfig configures a timer scanner. Zero values mean the defaults.
type TimerConfig struct {
	// Interval is the pause between passes.
	Interval time.Duration
	// Batch is how many due entries one partition visit handles (1–1000).
	Batch int
	// Filter limits the scanner to the executions it matches (the seed-000
	// tenant filter: a namespace and an instance tag); the zero value
	// matches every execution.
	Filter model.ScannerFilter
}

func (c TimerConfig) withDefaults(interval time.Duration) TimerConfig {
	c.Interval = cmp.Or(c.Interval, interval)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	return c
}

// Validate checks the config.
func (c TimerConfig) Validate(name string) error {
	if c.Interval < 0 {
		return model.OutOfRange(name+".Interval", c.Interval, "0 (the default) or more")
	}
	if c.Batch < 0 || c.Batch > model.MaxPageSize {
		return model.OutOfRange(name+".Batch", c.Batch, "0 (the default) to "+strconv.Itoa(model.MaxPageSize))
	}
	return c.Filter.Validate(name + ".Filter")
}

// timer is the shared part of the timer scanners.
type timer struct {
	name  string
	clock model.Clock
	cfg   TimerConfig
	w     *walker
	scan  scanFunc
	passN atomic.Int64
	// release, when set, is hinted with the partition of every execution
	// the scanner acted on: an ended lease may leave a quota slot to free.
	release Hinter
}

// HintReleases makes the scanner hint h (the quota releaser) with the
// partition of every execution it acts on. Call it before the scanner
// runs.
func (t *timer) HintReleases(h Hinter) { t.release = h }

func newTimer(name string, parts int, idx model.IndexKind, clock model.Clock, cfg TimerConfig,
	interval time.Duration, scan scanFunc) timer {
	if err := cfg.Validate(name); err != nil {
		panic("scan: " + err.Error())
	}
	cfg = cfg.withDefaults(interval)
	w := newWalker(parts, idx, cfg.Batch, cfg.Interval)
	w.filter = cfg.Filter
	return timer{name: name, clock: clock, cfg: cfg, w: w, scan: scan}
}

func (t *timer) Name() string                     { return t.name }
func (t *timer) Interval() time.Duration          { return t.cfg.Interval }
func (t *timer) Hint(partition int, at time.Time) { t.w.Hint(partition, at) }

// plan implements planner: the loop wakes at the earliest due time known.
func (t *timer) plan(interval time.Duration) time.Duration {
	return t.w.plan(t.clock.Now(), interval)
}
func (t *timer) setWake(f func()) { t.w.setWake(f) }

func (t *timer) run(ctx context.Context, handle func(context.Context, model.DueItem) (bool, error)) (Result, error) {
	n := int(t.passN.Add(1))
	if t.release != nil {
		inner := handle
		handle = func(ctx context.Context, it model.DueItem) (bool, error) {
			acted, err := inner(ctx, it)
			if acted {
				t.release.Hint(it.ID.Partition(), time.Time{})
			}
			return acted, err
		}
	}
	return t.w.pass(ctx, t.clock.Now(), n, t.scan, handle)
}

// LeaseExpiryStore is what the lease-expiry scanner uses.
type LeaseExpiryStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	LeaseMarkExpired(ctx context.Context, p *model.LeaseMarkExpiredParams) (*model.LeaseMarkExpiredResult, error)
	ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error)
	Partitions() model.PartitionConfig
}

// LeaseExpiry marks expired leases and recovers their executions: the old
// attempt ends interrupted and the execution returns to the eligible index
// as a new reclaim attempt (epoch + 1 at its next claim), within its
// reclaim cap. Revoked leases are recovered the same way.
type LeaseExpiry struct {
	timer
	store LeaseExpiryStore
	// manual disables recovery: leases are only marked expired, for
	// deployments that reclaim by grant.
	manual bool
}

// LeaseExpiryConfig configures the lease-expiry scanner.
type LeaseExpiryConfig struct {
	TimerConfig
	// NoRecover only marks expired leases; executions then wait for a
	// reclaim grant or an operator.
	NoRecover bool
}

// NewLeaseExpiry returns the lease-expiry scanner.
func NewLeaseExpiry(store LeaseExpiryStore, clock model.Clock, cfg LeaseExpiryConfig) *LeaseExpiry {
	s := &LeaseExpiry{store: store, manual: cfg.NoRecover}
	s.timer = newTimer("lease_expiry", store.Partitions().WithDefaults().FlowPartitions, model.IndexLeaseExpiry,
		clock, cfg.TimerConfig, DefaultLeaseExpiryInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *LeaseExpiry) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		now := s.clock.Now()
		m, err := s.store.LeaseMarkExpired(ctx, &model.LeaseMarkExpiredParams{ID: it.ID, Now: now})
		if err != nil {
			return false, err
		}
		switch m.Outcome {
		case model.MarkExpiredMarked, model.MarkExpiredAlreadyExpired, model.MarkExpiredAlreadyRevoked:
		default:
			return false, nil
		}
		acted := m.Outcome == model.MarkExpiredMarked
		if s.manual {
			return acted, nil
		}
		_, err = s.store.ExecutionRecover(ctx, &model.ExecutionRecoverParams{ID: it.ID, Now: now})
		if errors.Is(err, model.ErrNotReclaimable) || errors.Is(err, model.ErrNotFound) {
			return acted, nil // raced with a reclaim, cancel or completion
		}
		if err != nil {
			return acted, err
		}
		return true, nil
	})
}

// DelayedStore is what the delayed promoter uses.
type DelayedStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	ExecutionPromoteDelayed(ctx context.Context, p *model.ExecutionPromoteDelayedParams) (*model.ExecutionPromoteDelayedResult, error)
	Partitions() model.PartitionConfig
}

// DelayedPromoter makes delayed executions eligible when their time comes.
type DelayedPromoter struct {
	timer
	store DelayedStore
}

// NewDelayedPromoter returns the delayed promoter.
func NewDelayedPromoter(store DelayedStore, clock model.Clock, cfg TimerConfig) *DelayedPromoter {
	s := &DelayedPromoter{store: store}
	s.timer = newTimer("delayed_promoter", store.Partitions().WithDefaults().FlowPartitions, model.IndexDelayed,
		clock, cfg, DefaultDelayedPromoterInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *DelayedPromoter) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		r, err := s.store.ExecutionPromoteDelayed(ctx, &model.ExecutionPromoteDelayedParams{
			ID: it.ID, Lane: it.Lane, Now: s.clock.Now(),
		})
		if err != nil {
			return false, err
		}
		return r.Outcome == model.PromotePromoted, nil
	})
}

// ExpireStore is what the attempt-timeout and deadline scanners use.
type ExpireStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	ExecutionExpire(ctx context.Context, p *model.ExecutionExpireParams) (*model.ExecutionExpireResult, error)
	Partitions() model.PartitionConfig
}

// Expirer expires executions whose attempt timeout or execution deadline
// passed. An attempt timeout retries when the retry policy allows.
type Expirer struct {
	timer
	store  ExpireStore
	reason model.ExpireReason
	retry  Hinter
}

// HintRetries makes the scanner hint h (the delayed promoter) with the time
// of every retry it schedules, so the retry starts when due. Call it before
// the scanner runs.
func (s *Expirer) HintRetries(h Hinter) { s.retry = h }

// NewAttemptTimeout returns the attempt-timeout scanner.
func NewAttemptTimeout(store ExpireStore, clock model.Clock, cfg TimerConfig) *Expirer {
	s := &Expirer{store: store, reason: model.ExpireAttemptTimeout}
	s.timer = newTimer("attempt_timeout", store.Partitions().WithDefaults().FlowPartitions, model.IndexAttemptTimeout,
		clock, cfg, DefaultAttemptTimeoutInterval, store.IndexScanDue)
	return s
}

// NewExecutionDeadline returns the execution-deadline scanner.
func NewExecutionDeadline(store ExpireStore, clock model.Clock, cfg TimerConfig) *Expirer {
	s := &Expirer{store: store, reason: model.ExpireExecutionDeadline}
	s.timer = newTimer("execution_deadline", store.Partitions().WithDefaults().FlowPartitions, model.IndexExecutionDeadline,
		clock, cfg, DefaultExecutionDeadlineInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *Expirer) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		r, err := s.store.ExecutionExpire(ctx, &model.ExecutionExpireParams{ID: it.ID, Reason: s.reason, Now: s.clock.Now()})
		if err != nil {
			return false, err
		}
		if r.Outcome == model.ExpireRetryScheduled && s.retry != nil && !r.DelayUntil.IsZero() {
			s.retry.Hint(it.ID.Partition(), r.DelayUntil)
		}
		return r.Outcome == model.ExpireExpired || r.Outcome == model.ExpireRetryScheduled, nil
	})
}

// UnblockStore is what the unblock scanner uses.
type UnblockStore interface {
	RouteUnblock(ctx context.Context, p *model.RouteUnblockParams) (*model.RouteUnblockResult, error)
	WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error)
	Partitions() model.PartitionConfig
}

// UnblockConfig configures the unblock scanner. Zero values mean the
// defaults.
type UnblockConfig struct {
	Interval time.Duration
	// Namespace whose route-blocked executions are considered and whose
	// live workers' capabilities count (default "default"): a scanner
	// never unblocks another namespace's execution.
	Namespace model.Namespace
	// Batch bounds the executions unblocked per partition per pass.
	Batch int
	// Filter limits the scanner to the executions it matches (the seed-000
	// tenant filter); its Namespace, when set, must be Namespace.
	Filter model.ScannerFilter
}

// Unblock is scanner 11 (seeds 000/001). Its route half returns
// route-blocked executions to the eligible index when the
// union of the live workers' capabilities covers their requirements. The
// union is read once per pass and shared by every partition; if it cannot
// be read, the pass fails open and unblocks (the claim path re-blocks what
// still cannot be served). A pass visits the partitions known to hold
// route-blocked executions when the union changed, and the partitions
// hinted since the last pass (a local block, or the Sweeper finding
// route-blocked executions); its cost does not grow with the executions
// that stay blocked.
//
// Its budget and quota half (SetAdmission) visits the partitions known to
// hold budget- or quota-blocked executions, reads each budget and quota
// bucket they are blocked on once per pass (shared by every partition),
// and unblocks the executions of a budget no longer exhausted and, up to
// the free slots, of a bucket with room; the store re-checks each one's
// reason in the same step. A read error keeps them blocked
// (fail-closed). It wakes early when a rate window frees a slot, a
// concurrency slot is released or a budget is reset. A pass costs the
// number of partitions and distinct budgets and buckets blocked on, not
// the number of blocked executions.
type Unblock struct {
	store UnblockStore
	clock model.Clock
	cfg   UnblockConfig
	parts int

	adm *admissionHalf // nil: route half only

	mu        sync.Mutex
	lastUnion string
	lastKnown bool
	blocked   map[int]bool // partitions known to hold route-blocked executions
	hinted    map[int]bool
}

// NewUnblock returns the unblock scanner.
func NewUnblock(store UnblockStore, clock model.Clock, cfg UnblockConfig) *Unblock {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultUnblockInterval)
	cfg.Namespace = cmp.Or(cfg.Namespace, model.DefaultNamespace)
	cfg.Batch = cmp.Or(cfg.Batch, 100)
	if err := cfg.Namespace.Validate(); err != nil {
		panic("scan: unblock: " + err.Error())
	}
	if cfg.Batch < 1 || cfg.Batch > model.MaxPageSize {
		panic("scan: unblock: batch out of range")
	}
	return &Unblock{store: store, clock: clock, cfg: cfg, parts: store.Partitions().WithDefaults().FlowPartitions,
		blocked: make(map[int]bool), hinted: make(map[int]bool)}
}

// Name implements Scanner.
func (s *Unblock) Name() string { return "unblock" }

// Interval implements Scanner.
func (s *Unblock) Interval() time.Duration { return s.cfg.Interval }

// Hint marks a partition that has (new) route-blocked executions.
func (s *Unblock) Hint(partition int, _ time.Time) {
	s.mu.Lock()
	s.hinted[partition] = true
	s.blocked[partition] = true
	s.mu.Unlock()
}

// RunOnce implements Scanner.
func (s *Unblock) RunOnce(ctx context.Context) (Result, error) {
	now := s.clock.Now()
	var res Result
	list, listErr := s.store.WorkerList(ctx, &model.WorkerListParams{Namespace: s.cfg.Namespace, Now: now})
	var live model.Capabilities
	failOpen := listErr != nil
	if !failOpen {
		live = list.LiveCapabilities()
	} else {
		res.Errors++
	}
	s.mu.Lock()
	union := live.CSV()
	changed := failOpen || !s.lastKnown || union != s.lastUnion
	if !failOpen {
		s.lastUnion, s.lastKnown = union, true
	}
	var todo []int
	for p := range s.parts {
		if s.hinted[p] || (changed && s.blocked[p]) {
			todo = append(todo, p)
		}
	}
	clear(s.hinted)
	s.mu.Unlock()
	for _, p := range todo {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.store.RouteUnblock(ctx, &model.RouteUnblockParams{
			Partition: p, Namespace: s.cfg.Namespace, Live: live, All: failOpen, Filter: s.cfg.Filter, Limit: s.cfg.Batch, Now: now,
		})
		res.Partitions++
		if err != nil {
			res.Errors++
			s.Hint(p, now)
			continue
		}
		res.Acted += len(r.Unblocked)
		if r.More {
			res.More = true
			s.Hint(p, now)
		}
	}
	if s.adm != nil {
		if err := s.runAdmission(ctx, now, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// settle records what the Sweeper found about partition p.
func (s *Unblock) settle(p int, routeBlocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if routeBlocked {
		s.blocked[p] = true
		s.hinted[p] = true
	} else {
		delete(s.blocked, p)
	}
}

// WorkerExpiryStore is what the worker-registry expiry scanner uses.
type WorkerExpiryStore interface {
	WorkerExpire(ctx context.Context, p *model.WorkerExpireParams) (*model.WorkerExpireResult, error)
}

// WorkerExpiry drops worker registrations whose TTL ran out.
type WorkerExpiry struct {
	store      WorkerExpiryStore
	clock      model.Clock
	interval   time.Duration
	namespaces []model.Namespace
}

// NewWorkerExpiry returns the worker-registry expiry scanner for the given
// namespaces (none: the default namespace).
func NewWorkerExpiry(store WorkerExpiryStore, clock model.Clock, interval time.Duration, namespaces ...model.Namespace) *WorkerExpiry {
	if len(namespaces) == 0 {
		namespaces = []model.Namespace{model.DefaultNamespace}
	}
	return &WorkerExpiry{store: store, clock: clock, interval: cmp.Or(interval, DefaultWorkerExpiryInterval), namespaces: namespaces}
}

// Name implements Scanner.
func (s *WorkerExpiry) Name() string { return "worker_expiry" }

// Interval implements Scanner.
func (s *WorkerExpiry) Interval() time.Duration { return s.interval }

// RunOnce implements Scanner.
func (s *WorkerExpiry) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	const batch = 100
	for _, ns := range s.namespaces {
		for range 100 { // bounded: at most 10,000 removals per namespace per pass
			r, err := s.store.WorkerExpire(ctx, &model.WorkerExpireParams{Namespace: ns, Limit: batch, Now: s.clock.Now()})
			if err != nil {
				res.Errors++
				break
			}
			res.Acted += len(r.Removed)
			if len(r.Removed) < batch {
				break
			}
		}
	}
	return res, nil
}

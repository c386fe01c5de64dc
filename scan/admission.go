package scan

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Default intervals of the budget and quota scanners (FlowFabric's
// scanners 8–10) and of the quota releaser.
const (
	DefaultBudgetResetInterval     = 15 * time.Second
	DefaultBudgetReconcileInterval = 30 * time.Second
	DefaultQuotaReconcileInterval  = 30 * time.Second
	DefaultQuotaReleaseInterval    = 5 * time.Second
	// DefaultAdmissionGrace is how old an admission must be before the
	// quota reconciler checks whether its execution still holds it: more
	// than any claim takes between admission and claim (grants last at
	// most model.MaxGrantTTL).
	DefaultAdmissionGrace = 2 * time.Minute
)

// ---- the admission half of the unblock scanner ----

// AdmissionUnblockStore is what the unblock scanner's budget and quota
// half uses.
type AdmissionUnblockStore interface {
	AdmissionBlocked(ctx context.Context, p *model.AdmissionBlockedParams) (*model.AdmissionBlockedResult, error)
	AdmissionUnblock(ctx context.Context, p *model.AdmissionUnblockParams) (*model.AdmissionUnblockResult, error)
	BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error)
	QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error)
}

// admissionHalf is the state of the unblock scanner's budget and quota
// half: the partitions known to hold budget- or quota-blocked executions
// and when a rate window next frees a slot.
type admissionHalf struct {
	store AdmissionUnblockStore

	mu      sync.Mutex
	blocked map[int]bool
	nextAt  int64 // ms; math.MaxInt64: nothing scheduled
	planned int64
	wake    func()
}

// SetAdmission gives the unblock scanner its budget and quota half (a
// store with model.AdmissionStore). Call it before the scanner runs.
func (s *Unblock) SetAdmission(store AdmissionUnblockStore) {
	s.adm = &admissionHalf{store: store, blocked: make(map[int]bool), nextAt: math.MaxInt64, planned: math.MinInt64}
}

// HintAdmission records that partition holds (new) budget- or
// quota-blocked executions and, when at is set, that a slot of their
// quota frees then: the scanner wakes at that time.
func (s *Unblock) HintAdmission(partition int, at time.Time) {
	a := s.adm
	if a == nil {
		return
	}
	a.mu.Lock()
	if partition >= 0 {
		a.blocked[partition] = true
	}
	ms := int64(math.MinInt64 + 1) // now
	if !at.IsZero() {
		ms = at.UnixMilli()
	}
	a.nextAt = min(a.nextAt, ms)
	wake := a.wake
	if ms >= a.planned {
		wake = nil
	} else {
		a.planned = ms
	}
	a.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// KickAdmission makes the next pass re-check the blocked budgets and
// quotas now (a concurrency slot was released, a budget was reset).
func (s *Unblock) KickAdmission() { s.HintAdmission(-1, time.Time{}) }

func (s *Unblock) settleAdmission(p int, blocked bool) {
	a := s.adm
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if blocked {
		a.blocked[p] = true
	} else {
		delete(a.blocked, p)
	}
}

// plan implements planner: the loop wakes at the interval, or earlier
// when a quota's window frees a slot sooner.
func (s *Unblock) plan(interval time.Duration) time.Duration {
	a := s.adm
	if a == nil {
		return interval
	}
	now := s.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	d := interval
	if a.nextAt != math.MaxInt64 {
		d = max(min(d, time.UnixMilli(a.nextAt).Sub(now)), 0)
	}
	a.planned = now.Add(d).UnixMilli()
	if d == 0 {
		a.planned = math.MinInt64
	}
	return d
}

func (s *Unblock) setWake(f func()) {
	if a := s.adm; a != nil {
		a.mu.Lock()
		a.wake = f
		a.mu.Unlock()
	}
}

// runAdmission is one pass of the budget and quota half. Each budget and
// each quota bucket blocked on is read once per pass, whatever the number
// of partitions and executions blocked on it (the seeds' per-cycle
// cache); a read error keeps its executions blocked (fail-closed).
func (s *Unblock) runAdmission(ctx context.Context, now time.Time, res *Result) error {
	a := s.adm
	a.mu.Lock()
	a.planned = math.MinInt64
	a.nextAt = math.MaxInt64
	parts := make([]int, 0, len(a.blocked))
	for p := range a.blocked {
		if p >= 0 {
			parts = append(parts, p)
		}
	}
	a.mu.Unlock()
	slices.Sort(parts)

	type partGroups struct {
		p      int
		groups []model.AdmissionGroup
	}
	var todo []partGroups
	budgets := map[model.BudgetID]bool{} // true: cleared
	buckets := map[model.QuotaBucket]int{}
	var budgetOrder []model.BudgetID
	var bucketOrder []model.QuotaBucket
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := a.store.AdmissionBlocked(ctx, &model.AdmissionBlockedParams{Partition: p, Limit: model.MaxPageSize})
		res.Partitions++
		if err != nil {
			res.Errors++
			continue
		}
		if len(r.Groups) == 0 {
			s.settleAdmission(p, false)
			continue
		}
		todo = append(todo, partGroups{p, r.Groups})
		for _, g := range r.Groups {
			switch g.Reason {
			case model.WaitingForBudget:
				if _, ok := budgets[g.Budget]; !ok {
					budgets[g.Budget] = false
					budgetOrder = append(budgetOrder, g.Budget)
				}
			case model.WaitingForQuota:
				b := model.QuotaBucket{ID: g.Quota, Key: g.QuotaKey}
				if _, ok := buckets[b]; !ok {
					buckets[b] = 0
					bucketOrder = append(bucketOrder, b)
				}
			}
		}
	}
	retry := int64(math.MaxInt64)
	for _, b := range budgetOrder {
		st, err := a.store.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now})
		if err != nil {
			if !errors.Is(err, model.ErrBudgetNotFound) {
				res.Errors++
			}
			continue // fail-closed: stays blocked
		}
		budgets[b] = st.Exhausted == ""
	}
	for _, b := range bucketOrder {
		st, err := a.store.QuotaStatus(ctx, &model.QuotaStatusParams{ID: b.ID, Key: b.Key, Now: now})
		if err != nil {
			if !errors.Is(err, model.ErrQuotaNotFound) {
				res.Errors++
			}
			continue
		}
		buckets[b] = st.Free
		if st.Free == 0 && st.RetryAfter > 0 {
			retry = min(retry, now.Add(st.RetryAfter).UnixMilli())
		}
	}
	for _, pg := range todo {
		var bs []model.BudgetID
		var qs []model.QuotaUnblock
		for _, g := range pg.groups {
			switch g.Reason {
			case model.WaitingForBudget:
				if budgets[g.Budget] && !slices.Contains(bs, g.Budget) {
					bs = append(bs, g.Budget)
				}
			case model.WaitingForQuota:
				b := model.QuotaBucket{ID: g.Quota, Key: g.QuotaKey}
				if free := buckets[b]; free > 0 && !slices.ContainsFunc(qs, func(q model.QuotaUnblock) bool { return q.QuotaBucket == b }) {
					qs = append(qs, model.QuotaUnblock{QuotaBucket: b, Max: free})
				}
			}
		}
		if len(bs) == 0 && len(qs) == 0 {
			continue
		}
		r, err := a.store.AdmissionUnblock(ctx, &model.AdmissionUnblockParams{
			Partition: pg.p, Budgets: bs, Quotas: qs, Filter: s.cfg.Filter, Limit: s.cfg.Batch, Now: now,
		})
		if err != nil {
			res.Errors++
			continue
		}
		res.Acted += len(r.Unblocked)
		if r.More {
			res.More = true
		}
	}
	if retry != math.MaxInt64 {
		a.mu.Lock()
		a.nextAt = min(a.nextAt, retry)
		a.mu.Unlock()
	}
	return nil
}

// ---- budget reset (scanner 8) and reconciler (scanner 9) ----

// BudgetScanStore is what the budget scanners use.
type BudgetScanStore interface {
	BudgetResetDue(ctx context.Context, p *model.BudgetResetDueParams) (*model.BudgetResetDueResult, error)
	BudgetReconcile(ctx context.Context, p *model.BudgetReconcileParams) (*model.BudgetReconcileResult, error)
	Partitions() model.PartitionConfig
}

// BudgetConfig configures a budget or quota scanner. Zero values mean
// the defaults.
type BudgetConfig struct {
	Interval time.Duration
	// Batch bounds the budgets (or admissions) handled per partition call
	// (1–1000, default 100).
	Batch int
}

func (c BudgetConfig) withDefaults(interval time.Duration) BudgetConfig {
	c.Interval = cmp.Or(c.Interval, interval)
	c.Batch = cmp.Or(c.Batch, 100)
	if c.Interval < 0 || c.Batch < 1 || c.Batch > model.MaxPageSize {
		panic("scan: budget/quota scanner config out of range")
	}
	return c
}

// Validate checks the config.
func (c BudgetConfig) Validate(name string) error {
	if c.Interval < 0 {
		return model.OutOfRange(name+".Interval", c.Interval, "0 (the default) or more")
	}
	if c.Batch < 0 || c.Batch > model.MaxPageSize {
		return model.OutOfRange(name+".Batch", c.Batch, "0 (the default) to 1000")
	}
	return nil
}

// BudgetReset zeroes the usage of budgets whose reset interval came round
// (scanner 8), on every budget partition, and re-checks blocked
// executions when it reset any.
type BudgetReset struct {
	store   BudgetScanStore
	clock   model.Clock
	cfg     BudgetConfig
	parts   int
	unblock *Unblock
}

// NewBudgetReset returns the budget reset scanner; unblock (may be nil)
// is kicked after a reset.
func NewBudgetReset(store BudgetScanStore, clock model.Clock, cfg BudgetConfig, unblock *Unblock) *BudgetReset {
	return &BudgetReset{store: store, clock: clock, cfg: cfg.withDefaults(DefaultBudgetResetInterval),
		parts: store.Partitions().WithDefaults().BudgetPartitions, unblock: unblock}
}

// Name implements Scanner.
func (s *BudgetReset) Name() string { return "budget_reset" }

// Interval implements Scanner.
func (s *BudgetReset) Interval() time.Duration { return s.cfg.Interval }

// RunOnce implements Scanner.
func (s *BudgetReset) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	now := s.clock.Now()
	for p := range s.parts {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.store.BudgetResetDue(ctx, &model.BudgetResetDueParams{Partition: p, Limit: s.cfg.Batch, Now: now})
		res.Partitions++
		if err != nil {
			res.Errors++
			continue
		}
		res.Acted += len(r.Reset)
		res.More = res.More || r.More
	}
	if res.Acted > 0 && s.unblock != nil {
		s.unblock.KickAdmission()
	}
	return res, nil
}

// BudgetReconcile sets and clears budgets' breached marks (scanner 9),
// never dropping a budget's index entry unless its definition is gone
// (engine.md §9 bug 2).
type BudgetReconcile struct {
	store BudgetScanStore
	clock model.Clock
	cfg   BudgetConfig
	parts int
}

// NewBudgetReconcile returns the budget reconciler.
func NewBudgetReconcile(store BudgetScanStore, clock model.Clock, cfg BudgetConfig) *BudgetReconcile {
	return &BudgetReconcile{store: store, clock: clock, cfg: cfg.withDefaults(DefaultBudgetReconcileInterval),
		parts: store.Partitions().WithDefaults().BudgetPartitions}
}

// Name implements Scanner.
func (s *BudgetReconcile) Name() string { return "budget_reconciler" }

// Interval implements Scanner.
func (s *BudgetReconcile) Interval() time.Duration { return s.cfg.Interval }

// RunOnce implements Scanner.
func (s *BudgetReconcile) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	now := s.clock.Now()
	for p := range s.parts {
		var after model.BudgetID
		for range 100 { // bounded: 100 pages per partition per pass
			if err := ctx.Err(); err != nil {
				return res, err
			}
			r, err := s.store.BudgetReconcile(ctx, &model.BudgetReconcileParams{Partition: p, After: after, Limit: s.cfg.Batch, Now: now})
			res.Partitions++
			if err != nil {
				res.Errors++
				break
			}
			res.Scanned += r.Checked
			res.Acted += len(r.Breached) + len(r.Cleared) + len(r.Dropped)
			if !r.More {
				break
			}
			after = r.Last
		}
	}
	return res, nil
}

// ---- quota reconciler (scanner 10) and releaser ----

// QuotaScanStore is what the quota reconciler and releaser use.
type QuotaScanStore interface {
	QuotaReconcile(ctx context.Context, p *model.QuotaReconcileParams) (*model.QuotaReconcileResult, error)
	QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error)
	QuotaReleasePending(ctx context.Context, p *model.QuotaReleasePendingParams) (*model.QuotaReleasePendingResult, error)
	QuotaReleaseAck(ctx context.Context, p *model.QuotaReleaseAckParams) (*model.QuotaReleaseAckResult, error)
	ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error)
	Partitions() model.PartitionConfig
}

// QuotaReconcileConfig configures the quota reconciler.
type QuotaReconcileConfig struct {
	BudgetConfig
	// Grace is how old an admission must be before its execution is
	// checked (default DefaultAdmissionGrace).
	Grace time.Duration
}

// QuotaReconcile trims quota windows and releases admissions no
// execution holds (scanner 10): an admission older than the grace whose
// execution's record does not hold its token (the claimer died between
// admission and claim, or the execution moved on) is released, with its
// token, so an admission taken over meanwhile is never freed.
type QuotaReconcile struct {
	store   QuotaScanStore
	clock   model.Clock
	cfg     QuotaReconcileConfig
	parts   int
	unblock *Unblock
}

// NewQuotaReconcile returns the quota reconciler; unblock (may be nil) is
// kicked when it released a slot.
func NewQuotaReconcile(store QuotaScanStore, clock model.Clock, cfg QuotaReconcileConfig, unblock *Unblock) *QuotaReconcile {
	cfg.BudgetConfig = cfg.withDefaults(DefaultQuotaReconcileInterval)
	cfg.Grace = cmp.Or(cfg.Grace, DefaultAdmissionGrace)
	return &QuotaReconcile{store: store, clock: clock, cfg: cfg, parts: store.Partitions().WithDefaults().QuotaPartitions, unblock: unblock}
}

// Name implements Scanner.
func (s *QuotaReconcile) Name() string { return "quota_reconciler" }

// Interval implements Scanner.
func (s *QuotaReconcile) Interval() time.Duration { return s.cfg.Interval }

// RunOnce implements Scanner.
func (s *QuotaReconcile) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	now := s.clock.Now()
	for p := range s.parts {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.store.QuotaReconcile(ctx, &model.QuotaReconcileParams{
			Partition: p, StaleBefore: now.Add(-s.cfg.Grace), Limit: s.cfg.Batch, Now: now,
		})
		res.Partitions++
		if err != nil {
			res.Errors++
			continue
		}
		res.More = res.More || r.More
		for _, a := range r.Stale {
			res.Scanned++
			snap, err := s.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: a.Execution})
			switch {
			case errors.Is(err, model.ErrNotFound):
			case err != nil:
				res.Errors++
				continue
			case snap.AdmissionToken == a.Token:
				continue // held by the running attempt
			}
			rr, err := s.store.QuotaRelease(ctx, &model.QuotaReleaseParams{
				ID: a.ID, Key: a.Key, Execution: a.Execution, Token: a.Token, Now: s.clock.Now(),
			})
			if err != nil {
				res.Errors++
				continue
			}
			if rr.Released {
				res.Acted++
			}
		}
	}
	if res.Acted > 0 && s.unblock != nil {
		s.unblock.KickAdmission()
	}
	return res, nil
}

// QuotaRelease drains the quota release outboxes of execution partitions:
// each admission a lease held when it ended is released in its quota
// bucket (naming its token), then acknowledged. It visits the partitions
// hinted by this process's workers and those the Sweeper finds with a
// pending release; a hint wakes it at once.
type QuotaRelease struct {
	store   QuotaScanStore
	clock   model.Clock
	cfg     BudgetConfig
	unblock *Unblock

	mu      sync.Mutex
	pending map[int]bool // hinted: drained at once
	failed  map[int]bool // failed: tried again at the next pass
	wake    func()
	waiting bool
}

// NewQuotaRelease returns the quota releaser; unblock (may be nil) is
// kicked when it released a slot.
func NewQuotaRelease(store QuotaScanStore, clock model.Clock, cfg BudgetConfig, unblock *Unblock) *QuotaRelease {
	return &QuotaRelease{store: store, clock: clock, cfg: cfg.withDefaults(DefaultQuotaReleaseInterval),
		unblock: unblock, pending: make(map[int]bool), failed: make(map[int]bool)}
}

// Name implements Scanner.
func (s *QuotaRelease) Name() string { return "quota_release" }

// Interval implements Scanner.
func (s *QuotaRelease) Interval() time.Duration { return s.cfg.Interval }

// Hint records that partition's outbox has an entry and wakes the
// releaser.
func (s *QuotaRelease) Hint(partition int, _ time.Time) {
	s.mu.Lock()
	s.pending[partition] = true
	wake := s.wake
	if !s.waiting {
		wake = nil
	}
	s.waiting = false
	s.mu.Unlock()
	if wake != nil {
		wake()
	}
}

func (s *QuotaRelease) plan(interval time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		return 0
	}
	s.waiting = true
	return interval
}

func (s *QuotaRelease) setWake(f func()) {
	s.mu.Lock()
	s.wake = f
	s.mu.Unlock()
}

func (s *QuotaRelease) settle(p int, pending bool) {
	if pending {
		s.Hint(p, time.Time{})
	}
}

// RunOnce implements Scanner.
func (s *QuotaRelease) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	s.mu.Lock()
	s.waiting = false
	parts := make([]int, 0, len(s.pending)+len(s.failed))
	for p := range s.pending {
		parts = append(parts, p)
	}
	for p := range s.failed {
		if !s.pending[p] {
			parts = append(parts, p)
		}
	}
	clear(s.pending)
	clear(s.failed)
	s.mu.Unlock()
	slices.Sort(parts)
	released := 0
	for _, p := range parts {
		for round := range 10 { // bounded per pass; More brings the partition back
			if err := ctx.Err(); err != nil {
				return res, err
			}
			r, err := s.store.QuotaReleasePending(ctx, &model.QuotaReleasePendingParams{Partition: p, Limit: s.cfg.Batch})
			res.Partitions++
			if err != nil {
				res.Errors++
				s.again(p)
				break
			}
			done := make([]model.QuotaHold, 0, len(r.Items))
			for _, it := range r.Items {
				res.Scanned++
				rr, err := s.store.QuotaRelease(ctx, &model.QuotaReleaseParams{
					ID: it.Quota, Key: it.Key, Execution: it.Execution, Token: it.Token, Now: s.clock.Now(),
				})
				if err != nil && !errors.Is(err, model.ErrQuotaNotFound) {
					res.Errors++
					s.again(p)
					continue
				}
				if err == nil && rr.Released {
					released++
				}
				done = append(done, it)
			}
			if len(done) > 0 {
				if _, err := s.store.QuotaReleaseAck(ctx, &model.QuotaReleaseAckParams{Partition: p, Items: done}); err != nil {
					res.Errors++
					s.again(p)
					break
				}
				res.Acted += len(done)
			}
			if !r.More || len(done) < len(r.Items) {
				break
			}
			if round == 9 {
				s.Hint(p, time.Time{}) // a backlog: the next pass goes on at once
			}
		}
	}
	if released > 0 && s.unblock != nil {
		s.unblock.KickAdmission()
	}
	return res, nil
}

// again brings a partition back after a failure, at the next pass (the
// interval, or a hint), not in a tight loop.
func (s *QuotaRelease) again(p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[p] = true
}

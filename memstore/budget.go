package memstore

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets (model.AdmissionStore; valkeystore's budget.lua): each on its
// budget partition, with its usage, breach counters, reset schedule,
// per-execution ledgers and the dedup records of its reports.

// budgetPart is one budget partition ({b:M}).
type budgetPart struct {
	defs map[model.BudgetID]*budgetRec
	// index holds every budget created, by id (BudgetReconcile walks it);
	// resets the budgets with a schedule, by next reset then id.
	index  *btree.BTreeG[model.BudgetID]
	resets *btree.BTreeG[budgetDue]
	// dedupGC orders the partition's dedup records by expiry, so reports
	// drop a few expired ones each time.
	dedupGC *btree.BTreeG[dedupItem]
}

type budgetDue struct {
	at int64
	id model.BudgetID
}

type dedupItem struct {
	expiresAt int64
	id        model.BudgetID
	key       string
}

// budgetRec is one budget.
type budgetRec struct {
	id            model.BudgetID
	limits        map[string]model.BudgetLimit
	onHardBreach  model.BudgetBreachAction
	resetInterval int64 // ms; 0: no schedule
	nextResetAt   int64 // 0: no schedule
	resetCount    int
	hardBreaches  int
	softBreaches  int
	breachedAt    int64
	createdAt     int64
	// usage holds the usage of each dimension reported so far (a reset
	// or a release leaves it at 0, the dimension kept); ledger each
	// execution's charges; dedup each remembered key's report time.
	usage  map[string]int64
	ledger map[model.ExecutionID]map[string]int64
	dedup  map[string]int64
}

func budgetLess(a, b model.BudgetID) bool { return bytes.Compare(a[:], b[:]) < 0 }

func (s *Store) budgetPart(id model.BudgetID) *budgetPart {
	n := s.cfg.BudgetPartition(id)
	return s.budgetPartN(n)
}

func (s *Store) budgetPartN(n int) *budgetPart {
	if s.bparts == nil {
		s.bparts = make([]*budgetPart, s.cfg.BudgetPartitions)
	}
	bp := s.bparts[n]
	if bp == nil {
		bp = &budgetPart{
			defs:  make(map[model.BudgetID]*budgetRec),
			index: btree.NewBTreeGOptions(budgetLess, btree.Options{NoLocks: true}),
			resets: btree.NewBTreeGOptions(func(a, b budgetDue) bool {
				if a.at != b.at {
					return a.at < b.at
				}
				return budgetLess(a.id, b.id)
			}, btree.Options{NoLocks: true}),
			dedupGC: btree.NewBTreeGOptions(func(a, b dedupItem) bool {
				if a.expiresAt != b.expiresAt {
					return a.expiresAt < b.expiresAt
				}
				if a.id != b.id {
					return budgetLess(a.id, b.id)
				}
				return a.key < b.key
			}, btree.Options{NoLocks: true}),
		}
		s.bparts[n] = bp
	}
	return bp
}

// loadBudget returns the budget id, or model.ErrBudgetNotFound.
func (s *Store) loadBudget(id model.BudgetID) (*budgetPart, *budgetRec, error) {
	bp := s.budgetPart(id)
	b := bp.defs[id]
	if b == nil {
		return nil, nil, model.ErrBudgetNotFound
	}
	return bp, b, nil
}

// budgetExhausted is b's first dimension, in name order, whose usage is at or
// above a positive hard limit ("": none).
func budgetExhausted(b *budgetRec) string {
	for _, d := range sortedNames(b.limits) {
		if h := b.limits[d].Hard; h > 0 && b.usage[d] >= h {
			return d
		}
	}
	return ""
}

// budgetZero zeroes b's usage of every dimension reported so far (ledgers
// stay) and counts the reset.
func budgetZero(b *budgetRec) {
	for d := range b.usage {
		b.usage[d] = 0
	}
	b.resetCount++
}

// budgetNextReset is the first time of b's schedule (creation +
// k·interval, k ≥ 1) after now.
func budgetNextReset(b *budgetRec, now int64) int64 {
	iv := b.resetInterval
	if now < b.createdAt {
		return b.createdAt + iv
	}
	return b.createdAt + ((now-b.createdAt)/iv+1)*iv
}

// addCapped adds v to m[k], saturating at model.MaxBudgetAmount.
func addCapped(m map[string]int64, k string, v int64) int64 {
	n := m[k] + v
	if n > model.MaxBudgetAmount {
		n = model.MaxBudgetAmount
	}
	m[k] = n
	return n
}

func sortedNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// gcDedup drops up to n dedup records of bp that expired by now.
func (bp *budgetPart) gcDedup(now int64, n int) {
	for range n {
		it, ok := bp.dedupGC.Min()
		if !ok || it.expiresAt > now {
			return
		}
		bp.dedupGC.Delete(it)
		if b := bp.defs[it.id]; b != nil {
			if at, ok := b.dedup[it.key]; ok && at+model.BudgetDedupTTL.Milliseconds() == it.expiresAt {
				delete(b.dedup, it.key)
			}
		}
	}
}

// BudgetCreate implements model.AdmissionStore.
func (s *Store) BudgetCreate(ctx context.Context, p *model.BudgetCreateParams) (*model.BudgetCreateResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetCreateResult, error) {
		bp := s.budgetPart(p.ID)
		iv := p.ResetInterval.Milliseconds()
		if b := bp.defs[p.ID]; b != nil {
			if b.resetInterval != iv || b.onHardBreach != p.OnHardBreach || !maps.Equal(b.limits, p.Limits) {
				return nil, model.ErrIdempotencyConflict
			}
			return &model.BudgetCreateResult{}, nil
		}
		now := ms(p.Now)
		b := &budgetRec{
			id: p.ID, limits: maps.Clone(p.Limits), onHardBreach: p.OnHardBreach,
			resetInterval: iv, createdAt: now,
			usage: make(map[string]int64), ledger: make(map[model.ExecutionID]map[string]int64),
			dedup: make(map[string]int64),
		}
		bp.defs[p.ID] = b
		bp.index.Set(p.ID)
		if iv > 0 {
			b.nextResetAt = now + iv
			bp.resets.Set(budgetDue{b.nextResetAt, p.ID})
		}
		return &model.BudgetCreateResult{Created: true}, nil
	})
}

// BudgetReport implements model.AdmissionStore.
func (s *Store) BudgetReport(ctx context.Context, p *model.BudgetReportParams) (*model.BudgetReportResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetReportResult, error) {
		bp, b, err := s.loadBudget(p.ID)
		if err != nil {
			return nil, err
		}
		now := ms(p.Now)
		res := &model.BudgetReportResult{OnHardBreach: b.onHardBreach}
		if p.DedupKey != "" {
			if at, ok := b.dedup[p.DedupKey]; ok && now < at+model.BudgetDedupTTL.Milliseconds() {
				res.Outcome = model.ReportAlreadyApplied
				return res, nil
			}
		}
		dims := sortedNames(p.Deltas)
		for _, d := range dims {
			if h := b.limits[d].Hard; h > 0 && b.usage[d]+p.Deltas[d] > h {
				b.hardBreaches++
				res.Outcome, res.Dimension, res.Usage, res.Limit = model.ReportHardBreach, d, b.usage[d]+p.Deltas[d], h
				return res, nil
			}
		}
		var spend map[string]int64
		if !p.Execution.IsZero() {
			spend = b.ledger[p.Execution]
			if spend == nil {
				spend = make(map[string]int64, len(dims))
				b.ledger[p.Execution] = spend
			}
		}
		res.Outcome = model.ReportApplied
		for _, d := range dims {
			u := addCapped(b.usage, d, p.Deltas[d])
			if spend != nil {
				addCapped(spend, d, p.Deltas[d])
			}
			if sl := b.limits[d].Soft; sl > 0 && u > sl && res.Outcome == model.ReportApplied {
				res.Outcome, res.Dimension, res.Usage, res.Limit = model.ReportSoftBreach, d, u, sl
			}
		}
		if res.Outcome == model.ReportSoftBreach {
			b.softBreaches++
		}
		if p.DedupKey != "" {
			bp.gcDedup(now, 16)
			b.dedup[p.DedupKey] = now
			bp.dedupGC.Set(dedupItem{now + model.BudgetDedupTTL.Milliseconds(), p.ID, p.DedupKey})
		}
		return res, nil
	})
}

// BudgetRelease implements model.AdmissionStore.
func (s *Store) BudgetRelease(ctx context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetReleaseResult, error) {
		_, b, err := s.loadBudget(p.ID)
		if err != nil {
			return nil, err
		}
		spend, ok := b.ledger[p.Execution]
		if !ok {
			return &model.BudgetReleaseResult{}, nil
		}
		delete(b.ledger, p.Execution)
		if !p.Forget {
			for _, d := range sortedNames(spend) {
				b.usage[d] = max(0, b.usage[d]-spend[d])
			}
		}
		return &model.BudgetReleaseResult{Released: true, Returned: spend}, nil
	})
}

// BudgetReset implements model.AdmissionStore.
func (s *Store) BudgetReset(ctx context.Context, p *model.BudgetResetParams) (*model.BudgetResetResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetResetResult, error) {
		_, b, err := s.loadBudget(p.ID)
		if err != nil {
			return nil, err
		}
		budgetZero(b)
		return &model.BudgetResetResult{ResetCount: b.resetCount, NextResetAt: tm(b.nextResetAt)}, nil
	})
}

// BudgetResetDue implements model.AdmissionStore.
func (s *Store) BudgetResetDue(ctx context.Context, p *model.BudgetResetDueParams) (*model.BudgetResetDueResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetResetDueResult, error) {
		res := &model.BudgetResetDueResult{}
		if s.bparts == nil || s.bparts[p.Partition] == nil {
			return res, nil
		}
		bp := s.bparts[p.Partition]
		now := ms(p.Now)
		for len(res.Reset) < p.Limit {
			it, ok := bp.resets.Min()
			if !ok || it.at > now {
				break
			}
			bp.resets.Delete(it)
			b := bp.defs[it.id]
			if b == nil || b.nextResetAt != it.at {
				continue // not a budget's schedule any more
			}
			budgetZero(b)
			b.nextResetAt = budgetNextReset(b, now)
			bp.resets.Set(budgetDue{b.nextResetAt, b.id})
			res.Reset = append(res.Reset, b.id)
		}
		if it, ok := bp.resets.Min(); ok {
			res.More = it.at <= now
			res.NextDueAt = tm(it.at)
		}
		return res, nil
	})
}

// BudgetReconcile implements model.AdmissionStore.
func (s *Store) BudgetReconcile(ctx context.Context, p *model.BudgetReconcileParams) (*model.BudgetReconcileResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetReconcileResult, error) {
		res := &model.BudgetReconcileResult{}
		if s.bparts == nil || s.bparts[p.Partition] == nil {
			return res, nil
		}
		bp := s.bparts[p.Partition]
		now := ms(p.Now)
		var ids []model.BudgetID
		bp.index.Ascend(p.After, func(id model.BudgetID) bool {
			if id == p.After {
				return true // the cursor is exclusive
			}
			if len(ids) == p.Limit {
				res.More = true
				return false
			}
			ids = append(ids, id)
			return true
		})
		for _, id := range ids {
			res.Checked++
			b := bp.defs[id]
			if b == nil {
				bp.index.Delete(id)
				res.Dropped = append(res.Dropped, id)
				continue
			}
			switch breached := budgetExhausted(b) != ""; {
			case breached && b.breachedAt == 0:
				b.breachedAt = now
				res.Breached = append(res.Breached, id)
			case !breached && b.breachedAt != 0:
				b.breachedAt = 0
				res.Cleared = append(res.Cleared, id)
			}
		}
		if res.More {
			res.Last = ids[len(ids)-1]
		}
		return res, nil
	})
}

// BudgetStatus implements model.AdmissionStore.
func (s *Store) BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.BudgetStatus, error) {
		_, b, err := s.loadBudget(p.ID)
		if err != nil {
			return nil, err
		}
		st := &model.BudgetStatus{
			ID: b.id, Limits: maps.Clone(b.limits), OnHardBreach: b.onHardBreach,
			Usage:         maps.Clone(b.usage),
			ResetInterval: time.Duration(b.resetInterval) * time.Millisecond,
			NextResetAt:   tm(b.nextResetAt),
			ResetCount:    b.resetCount, HardBreaches: b.hardBreaches, SoftBreaches: b.softBreaches,
			BreachedAt: tm(b.breachedAt), CreatedAt: tm(b.createdAt),
			Exhausted: budgetExhausted(b),
		}
		if !p.Execution.IsZero() {
			if spend := b.ledger[p.Execution]; len(spend) > 0 {
				st.Spend = maps.Clone(spend)
			}
		}
		return st, nil
	})
}

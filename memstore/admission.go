package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// Admission on the execution partition (model.AdmissionStore): an
// execution's admission token, the admission candidates of claim-next,
// the blocked-on-budget and blocked-on-quota groups, and the quota release
// outbox. Budgets are in budget.go, quota policies in quota.go.

// takeAdmission checks a claim's admission token against e and stores it
// in the record: required when e has a quota (model.ErrAdmissionRequired),
// ignored (not stored) when it has none. It is a claim's last check, so
// nothing is written when it fails.
func takeAdmission(e *execution, token string) error {
	if !e.admit || model.UUID(e.quota).IsZero() {
		return nil
	}
	if token == "" {
		return model.ErrAdmissionRequired
	}
	e.admissionToken = token
	return nil
}

// admitCandidate grants e, a head of the eligible index that needs
// admission, to the claiming worker (replacing the grant it held) and
// describes it for the caller.
func (s *Store) admitCandidate(e *execution, n *model.NextClaim, now int64) *model.AdmissionCandidate {
	ttl := n.AdmissionGrantTTL
	if ttl == 0 {
		ttl = model.DefaultAdmissionGrantTTL
	}
	e.grant = &grantRec{kind: model.GrantClaim, workerID: n.WorkerID, workerInstanceID: n.WorkerInstanceID,
		createdAt: now, expiresAt: now + ttl.Milliseconds()}
	e.lastMutationAt = now
	return &model.AdmissionCandidate{
		ID: e.id, Budgets: cloneBudgets(e.budgets), Quota: e.quota, QuotaKey: e.quotaKey,
		GrantExpiresAt: tm(e.grant.expiresAt),
	}
}

// InlineAdmission implements model.InlineAdmitter: one lock covers every
// partition, so memstore always admits inline.
func (s *Store) InlineAdmission() bool { return true }

// admitInline is model.InlineAdmission's step for e, a head with budgets
// or a quota (valkeystore's inline_admit, lib/claim.lua): when n.Inline
// covers its attachments, every budget exists and is not exhausted and
// its bucket admits it now, the admission is recorded with the new
// lease's id as the token, and the token ("" without a quota) is returned
// with ok. Otherwise nothing is written for the admission (a rate
// window's trim aside) and ok is false. The window is trimmed only when it
// holds as many entries as the rate, as valkeystore's inline_admit does.
func (s *Store) admitInline(e *execution, n *model.NextClaim, now int64) (token string, ok bool) {
	if !n.Inline.Covers(e.budgets, e.quota) {
		return "", false
	}
	for _, b := range e.budgets {
		_, rec, err := s.loadBudget(b)
		if err != nil || budgetExhausted(rec) != "" {
			return "", false
		}
	}
	if model.UUID(e.quota).IsZero() {
		return "", true
	}
	q, err := s.loadQuota(e.quota)
	if err != nil {
		return "", false
	}
	bk := q.buckets[e.quotaKey]
	if bk == nil {
		bk = &quotaBucket{admissions: make(map[model.ExecutionID]*admissionRec)}
	}
	if q.rate > 0 && len(bk.window) >= q.rate {
		// trimmed only when it looks full, as valkeystore does (what a
		// reconcile reports trimming stays the same on both)
		if bk.trim(q, now); len(bk.window) >= q.rate {
			return "", false
		}
	}
	if (q.concurrency > 0 && len(bk.admissions) >= q.concurrency) || bk.admissions[e.id] != nil {
		return "", false
	}
	token = n.LeaseID.String()
	s.quotaRecord(q, e.quotaKey, bk, e.id, token, now)
	return token, true
}

func cloneBudgets(bs []model.BudgetID) []model.BudgetID {
	if len(bs) == 0 {
		return nil
	}
	return append([]model.BudgetID(nil), bs...)
}

// ---- blocked groups ----

func bucketOf(e *execution) model.QuotaBucket {
	return model.QuotaBucket{ID: e.quota, Key: e.quotaKey}
}

// admJoinGroup puts e, blocked in state es (BlockedByBudget on budget b,
// or BlockedByQuota), in its group of l: b's, or its bucket's.
func (l *laneIndexes) admJoinGroup(e *execution, es model.EligibilityState, b model.BudgetID, now int64) {
	var g *zset
	if es == model.BlockedByBudget {
		if l.budgetGroups == nil {
			l.budgetGroups = make(map[model.BudgetID]*zset)
		}
		if g = l.budgetGroups[b]; g == nil {
			g = newZset()
			l.budgetGroups[b] = g
		}
		e.blockedBudget = b
	} else {
		if l.quotaGroups == nil {
			l.quotaGroups = make(map[model.QuotaBucket]*zset)
		}
		k := bucketOf(e)
		if g = l.quotaGroups[k]; g == nil {
			g = newZset()
			l.quotaGroups[k] = g
		}
	}
	g.add(e.id, now)
}

// admLeaveGroup takes e, blocked on a budget or a quota, out of its
// group, dropping the group when it empties.
func (l *laneIndexes) admLeaveGroup(e *execution) {
	if e.eligibilityState == model.BlockedByBudget {
		b := e.blockedBudget
		e.blockedBudget = model.BudgetID{}
		if g := l.budgetGroups[b]; g != nil {
			g.remove(e.id)
			if g.len() == 0 {
				delete(l.budgetGroups, b)
			}
		}
		return
	}
	k := bucketOf(e)
	if g := l.quotaGroups[k]; g != nil {
		g.remove(e.id)
		if g.len() == 0 {
			delete(l.quotaGroups, k)
		}
	}
}

func compareBudget(a, b model.BudgetID) int { return bytes.Compare(a[:], b[:]) }

func compareBucket(a, b model.QuotaBucket) int {
	if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// sortedBudgetGroups and sortedQuotaGroups list a lane's group keys in
// order (never a map's order).
func (l *laneIndexes) sortedBudgetGroups() []model.BudgetID {
	ks := make([]model.BudgetID, 0, len(l.budgetGroups))
	for k := range l.budgetGroups {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareBudget)
	return ks
}

func (l *laneIndexes) sortedQuotaGroups() []model.QuotaBucket {
	ks := make([]model.QuotaBucket, 0, len(l.quotaGroups))
	for k := range l.quotaGroups {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareBucket)
	return ks
}

// hasAdmissionGroups reports whether some execution of l is blocked on a
// budget or a quota.
func (l *laneIndexes) hasAdmissionGroups() bool {
	return len(l.budgetGroups) > 0 || len(l.quotaGroups) > 0
}

// AdmissionBlocked implements model.AdmissionStore.
func (s *Store) AdmissionBlocked(ctx context.Context, p *model.AdmissionBlockedParams) (*model.AdmissionBlockedResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.AdmissionBlockedResult, error) {
		res := &model.AdmissionBlockedResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		add := func(g model.AdmissionGroup) bool {
			if len(res.Groups) == p.Limit {
				res.More = true
				return false
			}
			res.Groups = append(res.Groups, g)
			return true
		}
		for _, name := range pt.laneNames {
			l := pt.lanes[name]
			if !l.hasAdmissionGroups() {
				continue
			}
			for _, b := range l.sortedBudgetGroups() {
				if !add(model.AdmissionGroup{Lane: name, Reason: model.WaitingForBudget, Budget: b, Count: l.budgetGroups[b].len()}) {
					return res, nil
				}
			}
			for _, k := range l.sortedQuotaGroups() {
				if !add(model.AdmissionGroup{Lane: name, Reason: model.WaitingForQuota, Quota: k.ID, QuotaKey: k.Key, Count: l.quotaGroups[k].len()}) {
					return res, nil
				}
			}
		}
		return res, nil
	})
}

// AdmissionUnblock implements model.AdmissionStore.
func (s *Store) AdmissionUnblock(ctx context.Context, p *model.AdmissionUnblockParams) (*model.AdmissionUnblockResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.AdmissionUnblockResult, error) {
		res := &model.AdmissionUnblockResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		u := &admissionUnblock{s: s, res: res, filter: p.Filter, limit: p.Limit, now: ms(p.Now)}
		for _, b := range p.Budgets {
			for _, name := range pt.laneNames {
				l := pt.lanes[name]
				g := l.budgetGroups[b]
				if g == nil {
					continue
				}
				still := func(e *execution) bool {
					return e.eligibilityState == model.BlockedByBudget && e.blockingReason == model.WaitingForBudget && e.blockedBudget == b
				}
				done := u.group(l, g, model.BlockedByBudget, still, nil)
				if g.len() == 0 {
					delete(l.budgetGroups, b)
				}
				if done {
					return res, nil
				}
			}
		}
		for _, q := range p.Quotas {
			k := q.QuotaBucket
			left := -1 // no bound
			if q.Max > 0 {
				left = q.Max
			}
			for _, name := range pt.laneNames {
				if left == 0 {
					break
				}
				l := pt.lanes[name]
				g := l.quotaGroups[k]
				if g == nil {
					continue
				}
				still := func(e *execution) bool {
					return e.eligibilityState == model.BlockedByQuota && e.blockingReason == model.WaitingForQuota && bucketOf(e) == k
				}
				done := u.group(l, g, model.BlockedByQuota, still, &left)
				if g.len() == 0 {
					delete(l.quotaGroups, k)
				}
				if done {
					return res, nil
				}
			}
		}
		return res, nil
	})
}

// admissionUnblock is one AdmissionUnblock step.
type admissionUnblock struct {
	s      *Store
	res    *model.AdmissionUnblockResult
	filter model.ScannerFilter
	limit  int
	now    int64
}

// group unblocks the executions of one blocked group g (of lane l, blocked
// state es), oldest block first, that are still blocked for its reason
// (still) and match the filter, while the step's Limit and the bucket's
// bound (left: the unblocks the bucket may still make, -1 unbounded; nil
// for a budget) allow. An entry whose execution is gone or no longer
// blocked for the reason leaves the group. It reports whether Limit
// stopped the step.
func (u *admissionUnblock) group(l *laneIndexes, g *zset, es model.EligibilityState, still func(*execution) bool, left *int) bool {
	var ids, stale []model.ExecutionID
	stopped := false
	g.scan(func(it zitem) bool {
		if left != nil && *left == 0 {
			return false
		}
		if len(u.res.Unblocked)+len(ids) >= u.limit {
			u.res.More, stopped = true, true
			return false
		}
		e := u.s.execs[it.id]
		if e == nil || e.lifecyclePhase != model.PhaseRunnable || !still(e) {
			stale = append(stale, it.id)
			return true
		}
		if !u.filter.Matches(e.namespace, e.tags) {
			return true
		}
		ids = append(ids, it.id)
		if left != nil && *left > 0 {
			*left--
		}
		return true
	})
	for _, id := range stale {
		g.remove(id)
		if e := u.s.execs[id]; e == nil || e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != es {
			l.blocked[es].remove(id)
		}
	}
	for _, id := range ids {
		u.s.unblock(u.s.execs[id], u.now)
		u.res.Unblocked = append(u.res.Unblocked, id)
	}
	return stopped
}

// ---- the quota release outbox ----

// releaseOutbox is a partition's quota release outbox: the admissions of
// leases that ended, oldest first, then by execution and token, and each
// entry's time by execution and token.
type releaseOutbox struct {
	tree *btree.BTreeG[holdItem]
	at   map[holdKey]int64
}

type holdKey struct {
	id    model.ExecutionID
	token string
}

type holdItem struct {
	at    int64
	id    model.ExecutionID
	token string
	quota model.QuotaID
	key   string
}

func holdLess(a, b holdItem) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.id != b.id {
		return idless(a.id, b.id) // one partition: the order of the ids' text
	}
	return a.token < b.token
}

// admOutbox moves the admission e's ending lease held to the quota
// release outbox of e's partition and clears it from the record.
func (s *Store) admOutbox(e *execution, now int64) {
	pt := s.part(e.id.Partition())
	o := pt.releases
	if o == nil {
		o = &releaseOutbox{tree: btree.NewBTreeGOptions(holdLess, btree.Options{NoLocks: true}), at: make(map[holdKey]int64)}
		pt.releases = o
	}
	k := holdKey{e.id, e.admissionToken}
	if old, ok := o.at[k]; ok {
		o.tree.Delete(holdItem{at: old, id: k.id, token: k.token})
	}
	o.at[k] = now
	o.tree.Set(holdItem{at: now, id: e.id, token: e.admissionToken, quota: e.quota, key: e.quotaKey})
	e.admissionToken = ""
}

func (o *releaseOutbox) len() int {
	if o == nil {
		return 0
	}
	return len(o.at)
}

// QuotaReleasePending implements model.AdmissionStore.
func (s *Store) QuotaReleasePending(ctx context.Context, p *model.QuotaReleasePendingParams) (*model.QuotaReleasePendingResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaReleasePendingResult, error) {
		res := &model.QuotaReleasePendingResult{}
		pt := s.parts[p.Partition]
		if pt == nil || pt.releases.len() == 0 {
			return res, nil
		}
		pt.releases.tree.Scan(func(it holdItem) bool {
			if len(res.Items) == p.Limit {
				res.More = true
				return false
			}
			res.Items = append(res.Items, model.QuotaHold{Execution: it.id, Quota: it.quota, Key: it.key, Token: it.token, At: tm(it.at)})
			return true
		})
		return res, nil
	})
}

// QuotaReleaseAck implements model.AdmissionStore.
func (s *Store) QuotaReleaseAck(ctx context.Context, p *model.QuotaReleaseAckParams) (*model.QuotaReleaseAckResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaReleaseAckResult, error) {
		res := &model.QuotaReleaseAckResult{}
		pt := s.parts[p.Partition]
		if pt == nil || pt.releases.len() == 0 {
			return res, nil
		}
		o := pt.releases
		for _, it := range p.Items {
			k := holdKey{it.Execution, it.Token}
			at, ok := o.at[k]
			if !ok {
				continue
			}
			delete(o.at, k)
			o.tree.Delete(holdItem{at: at, id: k.id, token: k.token})
			res.Acked++
		}
		return res, nil
	})
}

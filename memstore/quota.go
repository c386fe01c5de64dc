package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// Quota policies (model.AdmissionStore; valkeystore's quota.lua): each on
// its quota partition, with one bucket per key: the bucket's sliding rate
// window and its admissions.

// quotaPart is one quota partition ({q:K}).
type quotaPart struct {
	defs map[model.QuotaID]*quotaRec
	ids  *btree.BTreeG[model.QuotaID] // the policies, by id
}

// quotaRec is one quota policy.
type quotaRec struct {
	id          model.QuotaID
	rate        int
	window      int64 // ms
	jitter      int64 // ms
	concurrency int
	createdAt   int64
	buckets     map[string]*quotaBucket
}

// quotaBucket is one key's bucket: the rate window's entries (admission
// times, a unique sequence number breaking ties), oldest first, and the
// admissions held, by execution.
type quotaBucket struct {
	window     []windowEntry
	admissions map[model.ExecutionID]*admissionRec
}

type windowEntry struct {
	at  int64
	seq uint64
}

type admissionRec struct {
	token      string
	admittedAt int64
}

func quotaLess(a, b model.QuotaID) bool { return bytes.Compare(a[:], b[:]) < 0 }

func (s *Store) quotaPart(id model.QuotaID) *quotaPart {
	return s.quotaPartN(s.cfg.QuotaPartition(id))
}

func (s *Store) quotaPartN(n int) *quotaPart {
	if s.qparts == nil {
		s.qparts = make([]*quotaPart, s.cfg.QuotaPartitions)
	}
	qp := s.qparts[n]
	if qp == nil {
		qp = &quotaPart{
			defs: make(map[model.QuotaID]*quotaRec),
			ids:  btree.NewBTreeGOptions(quotaLess, btree.Options{NoLocks: true}),
		}
		s.qparts[n] = qp
	}
	return qp
}

// loadQuota returns the policy id, or model.ErrQuotaNotFound.
func (s *Store) loadQuota(id model.QuotaID) (*quotaRec, error) {
	q := s.quotaPart(id).defs[id]
	if q == nil {
		return nil, model.ErrQuotaNotFound
	}
	return q, nil
}

// windowStart is the first index of bk's window entries after
// now − window (those before it have left the window).
func (bk *quotaBucket) windowStart(q *quotaRec, now int64) int {
	edge := now - q.window
	i, _ := slices.BinarySearchFunc(bk.window, edge, func(w windowEntry, t int64) int {
		if w.at <= t {
			return -1
		}
		return 1
	})
	return i
}

// trim drops the window entries at or before now − window and returns how
// many it dropped. It reslices rather than moving the rest down (a full
// window of a high rate would be copied on every admission); the next
// growth of the slice copies only the entries left.
func (bk *quotaBucket) trim(q *quotaRec, now int64) int {
	i := bk.windowStart(q, now)
	if i > 0 {
		bk.window = bk.window[i:]
	}
	return i
}

// quotaInWindow counts bk's entries within the window ending at now.
func quotaInWindow(bk *quotaBucket, q *quotaRec, now int64) int {
	if q.rate == 0 {
		return 0
	}
	return len(bk.window) - bk.windowStart(q, now)
}

// quotaRetryAfter is when bk's oldest entry within the window ending at
// now leaves it (at least 0).
func quotaRetryAfter(bk *quotaBucket, q *quotaRec, now int64) time.Duration {
	i := bk.windowStart(q, now)
	if i >= len(bk.window) {
		return 0
	}
	return time.Duration(max(0, bk.window[i].at+q.window-now)) * time.Millisecond
}

func (bk *quotaBucket) empty() bool { return len(bk.window) == 0 && len(bk.admissions) == 0 }

// QuotaCreate implements model.AdmissionStore.
func (s *Store) QuotaCreate(ctx context.Context, p *model.QuotaCreateParams) (*model.QuotaCreateResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaCreateResult, error) {
		qp := s.quotaPart(p.ID)
		win, jit := p.Window.Milliseconds(), p.Jitter.Milliseconds()
		if q := qp.defs[p.ID]; q != nil {
			if q.rate != p.Rate || q.window != win || q.jitter != jit || q.concurrency != p.Concurrency {
				return nil, model.ErrIdempotencyConflict
			}
			return &model.QuotaCreateResult{}, nil
		}
		qp.defs[p.ID] = &quotaRec{
			id: p.ID, rate: p.Rate, window: win, jitter: jit, concurrency: p.Concurrency,
			createdAt: ms(p.Now), buckets: make(map[string]*quotaBucket),
		}
		qp.ids.Set(p.ID)
		return &model.QuotaCreateResult{Created: true}, nil
	})
}

// QuotaAdmit implements model.AdmissionStore.
func (s *Store) QuotaAdmit(ctx context.Context, p *model.QuotaAdmitParams) (*model.QuotaAdmitResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaAdmitResult, error) {
		q, err := s.loadQuota(p.ID)
		if err != nil {
			return nil, err
		}
		now := ms(p.Now)
		bk := q.buckets[p.Key]
		if bk != nil {
			if a := bk.admissions[p.Execution]; a != nil {
				a.token, a.admittedAt = p.Token, now
				return &model.QuotaAdmitResult{Outcome: model.QuotaAlreadyAdmitted,
					InWindow: quotaInWindow(bk, q, now), Active: len(bk.admissions)}, nil
			}
			bk.trim(q, now)
		} else {
			bk = &quotaBucket{admissions: make(map[model.ExecutionID]*admissionRec)}
		}
		if q.rate > 0 && len(bk.window) >= q.rate {
			ra := quotaRetryAfter(bk, q, now) + time.Duration(min(p.Jitter.Milliseconds(), q.jitter))*time.Millisecond
			return &model.QuotaAdmitResult{Outcome: model.QuotaRateExceeded, RetryAfter: ra,
				InWindow: len(bk.window), Active: len(bk.admissions)}, nil
		}
		if q.concurrency > 0 && len(bk.admissions) >= q.concurrency {
			return &model.QuotaAdmitResult{Outcome: model.QuotaConcurrencyExceeded,
				InWindow: quotaInWindow(bk, q, now), Active: len(bk.admissions)}, nil
		}
		s.quotaRecord(q, p.Key, bk, p.Execution, p.Token, now)
		return &model.QuotaAdmitResult{Outcome: model.QuotaAdmitted,
			InWindow: quotaInWindow(bk, q, now), Active: len(bk.admissions)}, nil
	})
}

// quotaRecord records a new admission of x with token in bucket bk (key)
// of q: an entry in the rate window (with a rate) and the admission held.
func (s *Store) quotaRecord(q *quotaRec, key string, bk *quotaBucket, x model.ExecutionID, token string, now int64) {
	q.buckets[key] = bk
	if q.rate > 0 {
		s.quotaSeq++
		e := windowEntry{at: now, seq: s.quotaSeq}
		i, _ := slices.BinarySearchFunc(bk.window, e, func(a, b windowEntry) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
		bk.window = slices.Insert(bk.window, i, e)
	}
	bk.admissions[x] = &admissionRec{token: token, admittedAt: now}
}

// QuotaRelease implements model.AdmissionStore.
func (s *Store) QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaReleaseResult, error) {
		q, err := s.loadQuota(p.ID)
		if err != nil {
			return nil, err
		}
		bk := q.buckets[p.Key]
		if bk == nil {
			return &model.QuotaReleaseResult{}, nil
		}
		a := bk.admissions[p.Execution]
		if a == nil || (p.Token != "" && p.Token != a.token) {
			return &model.QuotaReleaseResult{}, nil
		}
		delete(bk.admissions, p.Execution)
		return &model.QuotaReleaseResult{Released: true}, nil
	})
}

// QuotaStatus implements model.AdmissionStore.
func (s *Store) QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaStatus, error) {
		q, err := s.loadQuota(p.ID)
		if err != nil {
			return nil, err
		}
		now := ms(p.Now)
		st := &model.QuotaStatus{
			ID: q.id, Key: p.Key, Rate: q.rate,
			Window:      time.Duration(q.window) * time.Millisecond,
			Jitter:      time.Duration(q.jitter) * time.Millisecond,
			Concurrency: q.concurrency, CreatedAt: tm(q.createdAt),
		}
		if bk := q.buckets[p.Key]; bk != nil {
			st.InWindow = quotaInWindow(bk, q, now)
			st.Active = len(bk.admissions)
			if q.rate > 0 && st.InWindow >= q.rate {
				st.RetryAfter = quotaRetryAfter(bk, q, now)
			}
		}
		free := -1
		if q.rate > 0 {
			free = q.rate - st.InWindow
		}
		if q.concurrency > 0 && (free < 0 || q.concurrency-st.Active < free) {
			free = q.concurrency - st.Active
		}
		st.Free = max(0, free)
		return st, nil
	})
}

// QuotaReconcile implements model.AdmissionStore.
func (s *Store) QuotaReconcile(ctx context.Context, p *model.QuotaReconcileParams) (*model.QuotaReconcileResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.QuotaReconcileResult, error) {
		res := &model.QuotaReconcileResult{}
		if s.qparts == nil || s.qparts[p.Partition] == nil {
			return res, nil
		}
		qp := s.qparts[p.Partition]
		now, stale := ms(p.Now), ms(p.StaleBefore)
		qp.ids.Scan(func(id model.QuotaID) bool {
			q := qp.defs[id]
			keys := make([]string, 0, len(q.buckets))
			for k := range q.buckets {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				bk := q.buckets[k]
				res.Trimmed += bk.trim(q, now)
				if bk.empty() {
					delete(q.buckets, k)
					continue
				}
				res.Buckets++
				var found []model.QuotaAdmission
				for ex, a := range bk.admissions {
					if a.admittedAt < stale {
						found = append(found, model.QuotaAdmission{ID: id, Key: k, Execution: ex, Token: a.token, AdmittedAt: tm(a.admittedAt)})
					}
				}
				slices.SortFunc(found, func(a, b model.QuotaAdmission) int { return a.Execution.Compare(b.Execution) })
				res.Stale = append(res.Stale, found...)
			}
			return true
		})
		if len(res.Stale) > p.Limit {
			res.Stale, res.More = res.Stale[:p.Limit], true
		}
		return res, nil
	})
}

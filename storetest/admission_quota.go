package storetest

import (
	"errors"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Quotas (model/admission_ops.go "quotas"): QuotaCreate, QuotaAdmit,
// QuotaRelease, QuotaStatus and QuotaReconcile.

// wantAdmit checks an admission's outcome and the admissions held after
// it (for policies without a rate, whose window the contract leaves
// unsaid).
func (h *admissionHarness) wantAdmit(q model.QuotaID, key string, x model.ExecutionID, token string, now time.Time, outcome model.QuotaOutcome, active int) {
	h.t.Helper()
	res := h.admit(q, key, x, token, 0, now)
	if res.Outcome != outcome || res.Active != active || res.RetryAfter != 0 {
		h.t.Fatalf("QuotaAdmit %v/%q %v at %v: %+v, want %v with %d active", q, key, x, now, res, outcome, active)
	}
}

// quotaCreate: a create reports Created, the same definition again
// Created false, another definition ErrIdempotencyConflict with nothing
// changed.
func quotaCreate(h *admissionHarness) {
	q := h.quotaID()
	def := func(now time.Time) *model.QuotaCreateParams {
		return &model.QuotaCreateParams{ID: q, Rate: 2, Window: 10 * time.Second, Jitter: time.Second, Concurrency: 3, Now: now}
	}
	if res := call(h.as.QuotaCreate(h.ctx, def(at(0)))).must(h.t); !res.Created {
		h.t.Fatalf("first create: Created false")
	}
	want := model.QuotaStatus{ID: q, Key: "k", Rate: 2, Window: 10 * time.Second, Jitter: time.Second, Concurrency: 3, CreatedAt: at(0), Free: 2}
	wantEqual(h.t, "status", want, *h.quotaStatus(q, "k", at(time.Second)))
	if res := call(h.as.QuotaCreate(h.ctx, def(at(time.Minute)))).must(h.t); res.Created {
		h.t.Fatalf("same definition again: Created true")
	}
	for _, c := range []struct {
		name string
		mut  func(*model.QuotaCreateParams)
	}{
		{"rate", func(p *model.QuotaCreateParams) { p.Rate = 3 }},
		{"window", func(p *model.QuotaCreateParams) { p.Window = 20 * time.Second }},
		{"jitter", func(p *model.QuotaCreateParams) { p.Jitter = 0 }},
		{"concurrency", func(p *model.QuotaCreateParams) { p.Concurrency = 0 }},
		{"no_rate", func(p *model.QuotaCreateParams) { p.Rate, p.Window, p.Jitter = 0, 0, 0 }},
	} {
		p := def(at(time.Minute))
		c.mut(p)
		h.unchangedAdm(at(2*time.Minute), nil, []model.QuotaBucket{{ID: q, Key: "k"}}, nil, func() {
			_, err := h.as.QuotaCreate(h.ctx, p)
			wantErr(h.t, err, model.ErrIdempotencyConflict)
		})
	}
	wantEqual(h.t, "status after the conflicts", want, *h.quotaStatus(q, "k", at(time.Second)))
}

// quotaRate: a window admits Rate executions; the next is refused with
// RetryAfter = oldest + Window − Now plus min(the caller's jitter, the
// policy's); an entry leaves the window once Now − Window reaches it.
func quotaRate(h *admissionHarness) {
	q := h.newQuota(&model.QuotaCreateParams{Rate: 2, Window: 10 * time.Second, Jitter: 300 * time.Millisecond, Now: at(0)})
	e1, e2, e3, e4 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p1), h.newID(h.p0)
	h.admitted(q, "", e1, "t1", at(0), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 1, Active: 1})
	h.admitted(q, "", e2, "t2", at(time.Second), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 2, Active: 2})
	for _, c := range []struct {
		jitter, want time.Duration
		now          time.Time
	}{
		{500 * time.Millisecond, 6*time.Second + 300*time.Millisecond, at(4 * time.Second)},
		{100 * time.Millisecond, 6*time.Second + 100*time.Millisecond, at(4 * time.Second)},
		{0, 6 * time.Second, at(4 * time.Second)},
		{0, time.Millisecond, at(10*time.Second - time.Millisecond)},
	} {
		res := h.admit(q, "", e3, "t3", c.jitter, c.now)
		wantEqual(h.t, "refusal at "+c.now.String(), model.QuotaAdmitResult{Outcome: model.QuotaRateExceeded, RetryAfter: c.want, InWindow: 2, Active: 2}, *res)
	}
	h.wantBucket(q, "", at(4*time.Second), 2, 2, 0, 6*time.Second)
	h.admitted(q, "", e3, "t3", at(10*time.Second), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 2, Active: 3})
	h.wantBucket(q, "", at(10*time.Second), 2, 3, 0, time.Second)
	h.wantBucket(q, "", at(11*time.Second), 1, 3, 1, 0)
	h.admitted(q, "", e4, "t4", at(11*time.Second), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 2, Active: 4})
}

// quotaConcurrency: a cap admits Concurrency executions at once; a
// release with the admission's token or "" frees a slot, one with another
// token or of an execution without an admission frees nothing.
func quotaConcurrency(h *admissionHarness) {
	q := h.capQuota(2, at(0))
	e1, e2, e3 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p0)
	h.wantAdmit(q, "", e1, "t1", at(0), model.QuotaAdmitted, 1)
	h.wantAdmit(q, "", e2, "t2", at(time.Second), model.QuotaAdmitted, 2)
	h.wantAdmit(q, "", e3, "t3", at(2*time.Second), model.QuotaConcurrencyExceeded, 2)
	bucket := []model.QuotaBucket{{ID: q}}
	h.unchangedAdm(at(3*time.Second), nil, bucket, nil, func() {
		if h.release(q, "", e1, "t9", at(3*time.Second)) {
			h.t.Fatalf("a release with another token released")
		}
		if h.release(q, "", e3, "t3", at(3*time.Second)) {
			h.t.Fatalf("a release of an execution without an admission released")
		}
		if h.release(q, "other", e1, "t1", at(3*time.Second)) {
			h.t.Fatalf("a release in another bucket released")
		}
	})
	if st := h.quotaStatus(q, "", at(3*time.Second)); st.Active != 2 || st.Free != 0 {
		h.t.Fatalf("full: %+v", st)
	}
	if !h.release(q, "", e1, "t1", at(3*time.Second)) {
		h.t.Fatalf("a release with the token did not release")
	}
	if st := h.quotaStatus(q, "", at(3*time.Second)); st.Active != 1 || st.Free != 1 {
		h.t.Fatalf("one released: %+v", st)
	}
	h.wantAdmit(q, "", e3, "t3", at(4*time.Second), model.QuotaAdmitted, 2)
	if !h.release(q, "", e2, "", at(5*time.Second)) {
		h.t.Fatalf("a release without a token did not release")
	}
	if h.release(q, "", e2, "", at(5*time.Second)) {
		h.t.Fatalf("a second release released")
	}
	if !h.release(q, "", e3, "t3", at(5*time.Second)) {
		h.t.Fatalf("release of e3")
	}
	if st := h.quotaStatus(q, "", at(6*time.Second)); st.Active != 0 || st.Free != 2 {
		h.t.Fatalf("all released: %+v", st)
	}
}

// quotaRateBeforeConcurrency: with both limits, a full window refuses on
// the rate even with slots free, and a full cap refuses while the window
// has room; a refusal adds no window entry.
func quotaRateBeforeConcurrency(h *admissionHarness) {
	q := h.newQuota(&model.QuotaCreateParams{Rate: 2, Window: time.Minute, Concurrency: 1, Now: at(0)})
	e1, e2, e3 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p0)
	h.admitted(q, "", e1, "t1", at(0), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 1, Active: 1})
	h.admitted(q, "", e2, "t2", at(time.Second), model.QuotaAdmitResult{Outcome: model.QuotaConcurrencyExceeded, InWindow: 1, Active: 1})
	h.release(q, "", e1, "t1", at(2*time.Second))
	h.admitted(q, "", e2, "t2", at(2*time.Second), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 2, Active: 1})
	h.release(q, "", e2, "t2", at(3*time.Second))
	h.admitted(q, "", e3, "t3", at(3*time.Second), model.QuotaAdmitResult{Outcome: model.QuotaRateExceeded, RetryAfter: 57 * time.Second, InWindow: 2, Active: 0})
	wantEqual(h.t, "status", model.QuotaStatus{ID: q, Rate: 2, Window: time.Minute, Concurrency: 1, CreatedAt: at(0), InWindow: 2, RetryAfter: 57 * time.Second},
		*h.quotaStatus(q, "", at(3*time.Second)))
}

// quotaAlreadyAdmitted: an execution holding an admission in the bucket
// is admitted again whatever the limits, charging nothing; the admission
// now carries the new token, so a release naming the old one frees
// nothing.
func quotaAlreadyAdmitted(h *admissionHarness) {
	q := h.newQuota(&model.QuotaCreateParams{Rate: 1, Window: time.Minute, Concurrency: 1, Now: at(0)})
	e1 := h.newID(h.p0)
	h.admitted(q, "k", e1, "t1", at(0), model.QuotaAdmitResult{Outcome: model.QuotaAdmitted, InWindow: 1, Active: 1})
	h.admitted(q, "k", e1, "t2", at(5*time.Second), model.QuotaAdmitResult{Outcome: model.QuotaAlreadyAdmitted, InWindow: 1, Active: 1})
	h.wantBucket(q, "k", at(6*time.Second), 1, 1, 0, 54*time.Second)
	if h.release(q, "k", e1, "t1", at(7*time.Second)) {
		h.t.Fatalf("a release with the replaced token released")
	}
	if !h.release(q, "k", e1, "t2", at(7*time.Second)) {
		h.t.Fatalf("a release with the new token did not release")
	}
	h.wantBucket(q, "k", at(8*time.Second), 1, 0, 0, 52*time.Second)
}

// quotaBuckets: each key is its own bucket; a bucket never used reads
// empty.
func quotaBuckets(h *admissionHarness) {
	q := h.capQuota(1, at(0))
	e1, e2, e3 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p0)
	h.wantAdmit(q, "a", e1, "t1", at(0), model.QuotaAdmitted, 1)
	h.wantAdmit(q, "b", e2, "t2", at(0), model.QuotaAdmitted, 1)
	h.wantAdmit(q, "a", e3, "t3", at(time.Second), model.QuotaConcurrencyExceeded, 1)
	h.wantAdmit(q, "", e3, "t3", at(time.Second), model.QuotaAdmitted, 1)
	for _, k := range []string{"a", "b", ""} {
		if st := h.quotaStatus(q, k, at(2*time.Second)); st.Active != 1 || st.Free != 0 || st.Key != k {
			h.t.Fatalf("bucket %q: %+v", k, st)
		}
	}
	wantEqual(h.t, "unused bucket", model.QuotaStatus{ID: q, Key: "c", Concurrency: 1, CreatedAt: at(0), Free: 1},
		*h.quotaStatus(q, "c", at(2*time.Second)))
}

// quotaStatusCase: QuotaStatus counts the window at Now and the
// admissions held; Free is the least room left over the limits set;
// RetryAfter shows only while the rate is full. Reading writes nothing.
func quotaStatusCase(h *admissionHarness) {
	q := h.newQuota(&model.QuotaCreateParams{Rate: 3, Window: 10 * time.Second, Jitter: 2 * time.Second, Concurrency: 2, Now: at(0)})
	e1, e2, e3 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p0)
	want := model.QuotaStatus{ID: q, Key: "k", Rate: 3, Window: 10 * time.Second, Jitter: 2 * time.Second, Concurrency: 2, CreatedAt: at(0), Free: 2}
	wantEqual(h.t, "empty", want, *h.quotaStatus(q, "k", at(0)))
	h.admit(q, "k", e1, "t1", 0, at(0))
	h.admit(q, "k", e2, "t2", 0, at(time.Second))
	want.InWindow, want.Active, want.Free = 2, 2, 0
	wantEqual(h.t, "cap full", want, *h.quotaStatus(q, "k", at(2*time.Second)))
	h.release(q, "k", e1, "t1", at(3*time.Second))
	want.Active, want.Free = 1, 1
	wantEqual(h.t, "one released", want, *h.quotaStatus(q, "k", at(3*time.Second)))
	h.admit(q, "k", e3, "t3", 0, at(3*time.Second))
	want.InWindow, want.Active, want.Free, want.RetryAfter = 3, 2, 0, 6*time.Second
	wantEqual(h.t, "both full", want, *h.quotaStatus(q, "k", at(4*time.Second)))
	want.InWindow, want.RetryAfter = 2, 0
	wantEqual(h.t, "the first entry out", want, *h.quotaStatus(q, "k", at(10*time.Second)))
	want.InWindow, want.RetryAfter = 3, 6*time.Second
	wantEqual(h.t, "a read wrote nothing", want, *h.quotaStatus(q, "k", at(4*time.Second)))
}

// quotaReconcile: a pass over one quota partition drops the window
// entries at or before Now − Window, forgets buckets left empty, and
// reports the admissions admitted before StaleBefore in (policy, key,
// execution) order, up to Limit.
func quotaReconcile(h *admissionHarness) {
	part := 4 % h.cfg.QuotaPartitions
	mk := func(on int) model.QuotaID {
		return h.newQuota(&model.QuotaCreateParams{ID: h.quotaID(on), Rate: 5, Window: 10 * time.Second, Now: at(0)})
	}
	q1, q2 := mk(part), mk(part)
	other := mk((part + 1) % h.cfg.QuotaPartitions)
	e1, e2, e3, e4, e5, e6 := h.newID(h.p0), h.newID(h.p0), h.newID(h.p0), h.newID(h.p0), h.newID(h.p0), h.newID(h.p0)
	ok := func(q model.QuotaID, key string, x model.ExecutionID, token string, now time.Time, want model.QuotaOutcome) {
		h.t.Helper()
		if res := h.admit(q, key, x, token, 0, now); res.Outcome != want {
			h.t.Fatalf("admit %v: %+v, want %v", x, res, want)
		}
	}
	ok(q1, "b", e1, "t1", at(0), model.QuotaAdmitted)
	ok(q1, "a", e2, "t2", at(0), model.QuotaAdmitted)
	ok(q2, "", e3, "t3", at(0), model.QuotaAdmitted)
	ok(q1, "c", e5, "t5", at(0), model.QuotaAdmitted)
	ok(other, "", e6, "t6", at(0), model.QuotaAdmitted)
	h.release(q1, "c", e5, "t5", at(time.Second))
	h.release(q1, "a", e2, "t2", at(time.Second))
	ok(q1, "b", e1, "t1b", at(15*time.Second), model.QuotaAlreadyAdmitted)
	ok(q1, "a", e4, "t4", at(20*time.Second), model.QuotaAdmitted) // drops e2's entry from bucket a

	pass := func(stale time.Time, limit int, now time.Time) *model.QuotaReconcileResult {
		return call(h.as.QuotaReconcile(h.ctx, &model.QuotaReconcileParams{Partition: part, StaleBefore: stale, Limit: limit, Now: now})).must(h.t)
	}
	a4 := model.QuotaAdmission{ID: q1, Key: "a", Execution: e4, Token: "t4", AdmittedAt: at(20 * time.Second)}
	a1 := model.QuotaAdmission{ID: q1, Key: "b", Execution: e1, Token: "t1b", AdmittedAt: at(15 * time.Second)}
	a3 := model.QuotaAdmission{ID: q2, Key: "", Execution: e3, Token: "t3", AdmittedAt: at(0)}
	wantEqual(h.t, "first pass", model.QuotaReconcileResult{Trimmed: 3, Buckets: 3, Stale: []model.QuotaAdmission{a4, a1, a3}},
		*pass(at(25*time.Second), 10, at(29*time.Second)))
	wantEqual(h.t, "stale strictly before", model.QuotaReconcileResult{Buckets: 3, Stale: []model.QuotaAdmission{a1, a3}},
		*pass(at(20*time.Second), 2, at(29*time.Second)))
	wantEqual(h.t, "limit", model.QuotaReconcileResult{Buckets: 3, Stale: []model.QuotaAdmission{a4}, More: true},
		*pass(at(25*time.Second), 1, at(29*time.Second)))
	h.wantBucket(q1, "a", at(29*time.Second), 1, 1, 4, 0)
	h.wantBucket(q1, "c", at(29*time.Second), 0, 0, 5, 0)
}

// quotaNotFound: admit, release and status of an unknown policy are
// ErrQuotaNotFound and create nothing.
func quotaNotFound(h *admissionHarness) {
	q := h.quotaID()
	x := h.newID(h.p0)
	_, err := h.as.QuotaAdmit(h.ctx, &model.QuotaAdmitParams{ID: q, Key: "k", Execution: x, Token: "t", Now: at(0)})
	wantErr(h.t, err, model.ErrQuotaNotFound)
	_, err = h.as.QuotaRelease(h.ctx, &model.QuotaReleaseParams{ID: q, Key: "k", Execution: x, Token: "t", Now: at(0)})
	wantErr(h.t, err, model.ErrQuotaNotFound)
	_, err = h.as.QuotaStatus(h.ctx, &model.QuotaStatusParams{ID: q, Key: "k", Now: at(0)})
	if !errors.Is(err, model.ErrQuotaNotFound) {
		h.t.Fatalf("status of an unknown policy: %v", err)
	}
	res := call(h.as.QuotaReconcile(h.ctx, &model.QuotaReconcileParams{Partition: h.cfg.QuotaPartition(q), StaleBefore: at(time.Hour), Limit: 10, Now: at(time.Hour)})).must(h.t)
	wantEqual(h.t, "reconcile", model.QuotaReconcileResult{}, *res)
}

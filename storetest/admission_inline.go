package storetest

import (
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Inline admission (model.InlineAdmission): a claim-next, or a
// completion's next claim, that admits a head with budgets or a quota in
// its own step.

// inlineOK reports whether the store admits inline (model.InlineAdmitter).
func inlineOK(h *harness) bool {
	var s model.Store = h.s
	if p, ok := h.s.(*partialStore); ok {
		s = p.Store
	}
	ia, ok := s.(model.InlineAdmitter)
	return ok && ia.InlineAdmission()
}

func (h *admissionHarness) needInline() {
	if !inlineOK(h.harness) {
		h.t.Skipf("storetest: %T does not admit inline", h.s)
	}
}

// claimNextInline is a claim-next of laneA in p0 by w with in.
func (h *admissionHarness) claimNextInline(w workerRef, in *model.InlineAdmission, now time.Time) (*model.ExecutionClaimNextResult, model.LeaseRequest) {
	h.t.Helper()
	req := h.leaseReq(w, leaseTTL)
	res := call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, Capabilities: w.Caps, ScanLimit: 10, Inline: in, LeaseRequest: req, Now: now,
	})).must(h.t)
	return res, req
}

// inlineAdmit: a head whose budgets and quota the request lists, with
// room in all of them, is claimed in the claim-next's step: the bucket
// records the admission (a window entry and an admission held) with the
// new lease's id as the token, which the claim result and the record
// carry. The walk stops there (the next head is not looked at). Ids the
// head does not use may be listed too.
func inlineAdmit(h *admissionHarness) {
	h.needInline()
	b := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	q := h.newQuota(&model.QuotaCreateParams{Rate: 2, Window: time.Minute, Concurrency: 5, Now: at(0)})
	x := h.create(at(0), withBudgets(b), withQuota(q, "k"))
	y := h.create(at(time.Millisecond), withQuota(q, "k"))
	in := &model.InlineAdmission{Budgets: []model.BudgetID{h.budgetID(), b}, Quotas: []model.QuotaID{h.quotaID(), q}}

	now := at(time.Second)
	res, req := h.claimNextInline(wA, in, now)
	if res.Admit != nil || res.Claimed == nil || len(res.Blocked) != 0 || res.Skipped != 0 {
		h.t.Fatalf("inline claim-next: %+v, want x claimed", res)
	}
	tok := req.LeaseID.String()
	lease := model.Lease{ID: req.LeaseID, Epoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
		AcquiredAt: now, ExpiresAt: now.Add(leaseTTL), RenewBy: now.Add(renewIn)}
	wantEqual(h.t, "claim result", &model.ClaimResult{
		ID: x, Lease: lease, AttemptID: req.AttemptID, AttemptType: model.AttemptInitial,
		Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("payload"), CreatedAt: at(0),
		Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", AdmissionToken: tok,
	}, res.Claimed)
	if s := h.wantState(x, stActive); s.AdmissionToken != tok || s.Grant != nil {
		h.t.Fatalf("claimed inline: token %q grant %+v", s.AdmissionToken, s.Grant)
	}
	h.wantState(y, stEligible(model.AttemptPendingFirst))
	if st := h.quotaStatus(q, "k", now); st.InWindow != 1 || st.Active != 1 || st.Free != 1 {
		h.t.Fatalf("bucket after the inline admission: %+v, want 1 in window, 1 active, 1 free", st)
	}

	// y takes the rate's second slot; a third head would find it full
	res, req = h.claimNextInline(wB, in, at(2*time.Second))
	if res.Claimed == nil || res.Claimed.ID != y || res.Claimed.AdmissionToken != req.LeaseID.String() {
		h.t.Fatalf("second inline claim-next: %+v, want y claimed with its lease id", res)
	}
	h.wantBucket(q, "k", at(2*time.Second), 2, 2, 0, time.Minute-time.Second)

	// the bucket holds each admission under its lease's id
	if !h.release(q, "k", x, tok, at(3*time.Second)) {
		h.t.Fatal("releasing x's inline admission by its lease id: not released")
	}
}

// inlineBudgetOnly: a head with budgets and no quota is claimed inline
// without a token once its budgets are checked.
func inlineBudgetOnly(h *admissionHarness) {
	h.needInline()
	b := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	x := h.create(at(0), withBudgets(b))
	res, _ := h.claimNextInline(wA, &model.InlineAdmission{Budgets: []model.BudgetID{b}}, at(time.Second))
	if res.Claimed == nil || res.Claimed.ID != x || res.Claimed.AdmissionToken != "" {
		h.t.Fatalf("inline claim-next: %+v, want x claimed without a token", res)
	}
	h.wantToken(x, "")
}

// inlineGrantsInstead: whenever inline admission cannot admit the head
// (an attachment the request does not list, the first or a later one, a missing or exhausted
// budget, a missing policy, a full rate window, a full concurrency cap,
// an admission the bucket already holds), the claim-next grants it and
// returns it as Admit exactly as without Inline, and nothing of the
// budgets, buckets, outbox or blocked groups changes.
func inlineGrantsInstead(h *admissionHarness) {
	h.needInline()
	b := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	spare := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	spent := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	h.reported(spent, map[string]int64{"tokens": 10}, at(0), model.ReportApplied)
	q := h.capQuota(5, at(0))
	rateFull := h.newQuota(&model.QuotaCreateParams{Rate: 1, Window: time.Minute, Now: at(0)})
	capFull := h.capQuota(1, at(0))
	missingB, missingQ := h.budgetID(), h.quotaID()
	other := h.create(at(0), withQuota(rateFull, "k"))
	h.admit(rateFull, "k", other, "tok-other", 0, at(0))
	h.admit(capFull, "k", other, "tok-other", 0, at(0))
	h.cancelOp(other, at(0)) // its admissions stay held: nothing released them

	all := &model.InlineAdmission{
		Budgets: []model.BudgetID{b, spent, missingB},
		Quotas:  []model.QuotaID{q, rateFull, capFull, missingQ},
	}
	now := at(time.Second)
	for _, c := range []struct {
		name    string
		budgets []model.BudgetID
		quota   model.QuotaID
		in      *model.InlineAdmission
		before  func(x model.ExecutionID)
	}{
		{name: "budget not listed", budgets: []model.BudgetID{b}, quota: q, in: &model.InlineAdmission{Quotas: []model.QuotaID{q}}},
		// a regression: valkeystore's check looked only at the first
		// budget's listing
		{name: "second budget not listed", budgets: []model.BudgetID{b, spare}, quota: q, in: &model.InlineAdmission{
			Budgets: []model.BudgetID{b}, Quotas: []model.QuotaID{q}}},
		{name: "quota not listed", budgets: []model.BudgetID{b}, quota: q, in: &model.InlineAdmission{Budgets: []model.BudgetID{b}}},
		{name: "budget missing", budgets: []model.BudgetID{b, missingB}, quota: q, in: all},
		{name: "budget exhausted", budgets: []model.BudgetID{spent}, in: all},
		{name: "policy missing", quota: missingQ, in: all},
		{name: "rate full", quota: rateFull, in: all},
		{name: "concurrency full", quota: capFull, in: all},
		{name: "already admitted", quota: q, in: all, before: func(x model.ExecutionID) { h.admit(q, "k", x, "tok-old", 0, now) }},
	} {
		opts := []createOpt{withQuota(c.quota, "k")}
		if model.UUID(c.quota).IsZero() {
			opts = []createOpt{withQuota(c.quota, "")}
		}
		if len(c.budgets) > 0 {
			opts = append(opts, withBudgets(c.budgets...))
		}
		x := h.create(now, opts...)
		if c.before != nil {
			c.before(x)
		}
		var buckets []model.QuotaBucket
		for _, p := range []model.QuotaID{q, rateFull, capFull} {
			buckets = append(buckets, model.QuotaBucket{ID: p, Key: "k"})
		}
		want := &model.AdmissionCandidate{ID: x, Budgets: c.budgets, Quota: c.quota, GrantExpiresAt: now.Add(model.DefaultAdmissionGrantTTL)}
		if !model.UUID(c.quota).IsZero() {
			want.QuotaKey = "k"
		}
		h.unchangedAdm(now, []model.BudgetID{b, spare, spent}, buckets, nil, func() {
			res, _ := h.claimNextInline(wA, c.in, now)
			wantEqual(h.t, c.name+": claim-next", model.ExecutionClaimNextResult{Admit: want}, *res)
		})
		if g := h.describe(x).Grant; g == nil || g.WorkerID != wA.ID {
			h.t.Fatalf("%s: grant %+v, want wA's", c.name, g)
		}
		h.wantState(x, stEligible(model.AttemptPendingFirst))
		h.cancelOp(x, now) // the next case's head
	}
}

// inlineCompleteNext: a completion's next claim admits inline too.
func inlineCompleteNext(h *admissionHarness) {
	h.needInline()
	q := h.capQuota(5, at(0))
	p := h.create(at(0))
	x := h.create(at(time.Millisecond), withQuota(q, "k"))
	cr := h.claim(p, wA, at(time.Second))
	req := h.leaseReq(wA, leaseTTL)
	res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
		ID: p, Fence: cr.Fence(), Now: at(2 * time.Second),
		Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, Inline: &model.InlineAdmission{Quotas: []model.QuotaID{q}}, LeaseRequest: req},
	})).must(h.t)
	if res.Next == nil || res.Next.Claimed == nil || res.Next.Claimed.ID != x || res.Next.Claimed.AdmissionToken != req.LeaseID.String() {
		h.t.Fatalf("completion's next: %+v, want x claimed inline", res.Next)
	}
	h.wantToken(x, req.LeaseID.String())
	h.wantBucket(q, "k", at(2*time.Second), 0, 1, 4, 0)
}

// inlineRefused: an Inline with too many or zero ids is a validation
// error naming the list, on every store; a store that cannot admit
// inline (model.InlineAdmitter) refuses any Inline, naming Inline. Either
// way nothing changes.
func inlineRefused(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	p := h.create(at(0))
	x := h.create(at(time.Millisecond), withQuota(q, "k"))
	cr := h.claim(p, wA, at(time.Second))
	many := make([]model.BudgetID, model.MaxInlineAdmissionIDs+1)
	for i := range many {
		many[i] = h.budgetID()
	}
	type refusal struct {
		in    *model.InlineAdmission
		field string
	}
	cases := []refusal{
		{&model.InlineAdmission{Budgets: many}, "Inline.Budgets"},
		{&model.InlineAdmission{Quotas: []model.QuotaID{{}}}, "Inline.Quotas"},
		{&model.InlineAdmission{Budgets: []model.BudgetID{{}}}, "Inline.Budgets"},
	}
	if !inlineOK(h.harness) {
		cases = append(cases, refusal{&model.InlineAdmission{Quotas: []model.QuotaID{q}}, "Inline"})
	}
	for _, c := range cases {
		h.unchanged(x, func() {
			h.unchanged(p, func() {
				_, err := h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
					Partition: h.p0, Lane: laneA, ScanLimit: 10, Inline: c.in, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second),
				})
				wantField(h.t, err, c.field)
				_, err = h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
					ID: p, Fence: cr.Fence(), Now: at(2 * time.Second),
					Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, Inline: c.in, LeaseRequest: h.leaseReq(wA, leaseTTL)},
				})
				wantField(h.t, err, "Next."+c.field)
			})
		})
	}
	h.wantBucket(q, "k", at(2*time.Second), 0, 0, 5, 0)
}

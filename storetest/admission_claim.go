package storetest

import (
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// The claim path of executions with budgets or a quota
// (ExecutionClaimNextResult, ExecutionClaimParams.AdmissionToken,
// ClaimResult's admission fields).

// claimNextAdmitPerInstance: a head granted to one instance for
// admission is passed by another instance of the same worker id, which
// gets the next head (granted to it in turn); each instance claims its
// own with its admission token.
func claimNextAdmitPerInstance(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	x := h.create(at(0), withQuota(q, "k"))
	y := h.create(at(time.Millisecond), withQuota(q, "k"))
	wA2 := workerRef{ID: wA.ID, Instance: "worker-a-2"}
	res := h.claimNext(wA, nil, 10, at(time.Second))
	if res.Admit == nil || res.Admit.ID != x {
		h.t.Fatalf("wA's claim-next: %+v, want x for admission", res)
	}
	res = h.claimNext(wA2, nil, 10, at(time.Second))
	if res.Admit == nil || res.Admit.ID != y || res.Skipped != 1 {
		h.t.Fatalf("wA2's claim-next while wA's grant on x lives: %+v, want y for admission, x skipped", res)
	}
	if g := h.describe(x).Grant; g == nil || g.WorkerInstanceID != wA.Instance {
		h.t.Fatalf("x's grant after wA2's claim-next: %+v, want still wA's", g)
	}
	for _, c := range []struct {
		id    model.ExecutionID
		w     workerRef
		token string
	}{{x, wA, "tok-x"}, {y, wA2, "tok-y"}} {
		req := h.leaseReq(c.w, leaseTTL)
		cr := call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: c.id, AdmissionToken: c.token, LeaseRequest: req, Now: at(2 * time.Second)})).must(h.t)
		if cr.Lease.WorkerInstanceID != c.w.Instance || cr.AdmissionToken != c.token {
			h.t.Fatalf("claim of %v by %s: %+v", c.id, c.w.Instance, cr)
		}
	}
}

// claimNextAdmit: claim-next never claims a head with budgets or a quota:
// it grants it to the claiming worker for DefaultAdmissionGrantTTL and
// returns it as Admit, with Claimed nil. Another worker's claim-next
// passes it while the grant lives (up to and including its expiry) and
// gets it once the grant lapsed; the same worker's claim-next replaces
// its own grant. The grant is claimed with an admission token, which the
// claim result and the record carry.
func claimNextAdmit(h *admissionHarness) {
	b := h.budget(limits{"tokens": {Hard: 10}}, at(0))
	q := h.capQuota(5, at(0))
	x := h.create(at(0), withBudgets(b), withQuota(q, "k"))
	y := h.create(at(time.Millisecond))
	created := h.describe(x)
	if !cmp.Equal(created.Budgets, []model.BudgetID{b}) || created.Quota != q || created.QuotaKey != "k" || created.AdmissionToken != "" {
		h.t.Fatalf("created snapshot: budgets %v quota %v key %q token %q", created.Budgets, created.Quota, created.QuotaKey, created.AdmissionToken)
	}

	res := h.claimNext(wA, nil, 10, at(time.Second))
	wantEqual(h.t, "claim-next", model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
		ID: x, Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", GrantExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL),
	}}, *res)
	want := cloneSnapshot(created)
	want.LastMutationAt = at(time.Second)
	want.Grant = &model.Grant{Kind: model.GrantClaim, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
		CreatedAt: at(time.Second), ExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL)}
	h.wantSnapshot(want)
	h.wantIndexes(x, ixAll, ixLane(laneA, "eligible"))
	h.wantState(y, stEligible(model.AttemptPendingFirst))

	// wB passes x, granted to wA, and claims y.
	res = h.claimNext(wB, nil, 10, at(2*time.Second))
	if res.Admit != nil || res.Claimed == nil || res.Claimed.ID != y {
		h.t.Fatalf("wB's claim-next while wA's grant lives: admit %+v claimed %+v, want %v claimed", res.Admit, res.Claimed, y)
	}
	expiry := at(time.Second + model.DefaultAdmissionGrantTTL)
	h.unchanged(x, func() {
		if res := h.claimNext(wB, nil, 10, expiry); res.Admit != nil || res.Claimed != nil {
			h.t.Fatalf("wB's claim-next at wA's grant expiry: %+v", res)
		}
	})
	res = h.claimNext(wB, nil, 10, expiry.Add(time.Millisecond))
	wantEqual(h.t, "wB after the grant lapsed", model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
		ID: x, Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", GrantExpiresAt: expiry.Add(time.Millisecond + model.DefaultAdmissionGrantTTL),
	}}, *res)
	res = h.claimNext(wB, nil, 10, expiry.Add(time.Second))
	if res.Admit == nil || res.Admit.ID != x || !res.Admit.GrantExpiresAt.Equal(expiry.Add(time.Second+model.DefaultAdmissionGrantTTL)) {
		h.t.Fatalf("wB's claim-next on its own grant: %+v", res.Admit)
	}
	if g := h.describe(x).Grant; g == nil || g.WorkerID != wB.ID || !g.ExpiresAt.Equal(res.Admit.GrantExpiresAt) {
		h.t.Fatalf("grant after wB's second claim-next: %+v", g)
	}

	now := expiry.Add(2 * time.Second)
	req := h.leaseReq(wB, leaseTTL)
	cr := call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: x, AdmissionToken: "tok-1", LeaseRequest: req, Now: now})).must(h.t)
	lease := model.Lease{ID: req.LeaseID, Epoch: 1, WorkerID: wB.ID, WorkerInstanceID: wB.Instance,
		AcquiredAt: now, ExpiresAt: now.Add(leaseTTL), RenewBy: now.Add(renewIn)}
	wantEqual(h.t, "claim result", &model.ClaimResult{
		ID: x, Lease: lease, AttemptID: req.AttemptID, AttemptType: model.AttemptInitial,
		Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("payload"), CreatedAt: at(0),
		Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", AdmissionToken: "tok-1",
	}, cr)
	s := h.wantState(x, stActive)
	if s.AdmissionToken != "tok-1" || s.Grant != nil {
		h.t.Fatalf("claimed: token %q grant %+v", s.AdmissionToken, s.Grant)
	}
}

// claimNextGrantTTL: the admission grant lasts AdmissionGrantTTL when
// the request says.
func claimNextGrantTTL(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	x := h.create(at(0), withQuota(q, ""))
	res := call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, ScanLimit: 10, AdmissionGrantTTL: 2 * time.Second,
		LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(time.Second),
	})).must(h.t)
	wantEqual(h.t, "claim-next", model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
		ID: x, Quota: q, GrantExpiresAt: at(3 * time.Second),
	}}, *res)
	if g := h.describe(x).Grant; g == nil || !g.ExpiresAt.Equal(at(3*time.Second)) {
		h.t.Fatalf("grant %+v", g)
	}
}

// claimNextWalkStops: the walk stops at the head that needs admission:
// a plain execution behind it is not claimed in that call.
func claimNextWalkStops(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	x := h.create(at(0), withBudgets(b))
	y := h.create(at(time.Millisecond))
	h.unchanged(y, func() {
		res := h.claimNext(wA, nil, 10, at(time.Second))
		wantEqual(h.t, "claim-next", model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
			ID: x, Budgets: []model.BudgetID{b}, GrantExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL),
		}}, *res)
	})
}

// claimNextCapabilitiesFirst: the capability check comes first: a head
// with a quota that no live worker can serve is blocked on route, one a
// live worker but not this one can serve is skipped, and neither is ever
// returned as Admit nor granted.
func claimNextCapabilitiesFirst(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	gpu := h.create(at(0), withCaps("gpu"), withQuota(q, "k"))
	x := h.create(at(time.Millisecond), withQuota(q, "k"))
	res := h.claimNext(wA, nil, 10, at(time.Second))
	wantEqual(h.t, "no live gpu", model.ExecutionClaimNextResult{
		Admit:   &model.AdmissionCandidate{ID: x, Quota: q, QuotaKey: "k", GrantExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL)},
		Blocked: []model.ExecutionID{gpu},
	}, *res)
	h.wantIndexes(gpu, ixAll, ixLane(laneA, "blocked:route"))
	if g := h.describe(gpu).Grant; g != nil {
		h.t.Fatalf("route-blocked head granted: %+v", g)
	}

	gpuB := h.create(at(0), withLane(laneB), withCaps("gpu"), withQuota(q, "k"))
	xB := h.create(at(time.Millisecond), withLane(laneB), withQuota(q, "k"))
	res = call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneB, LiveCapabilities: model.Capabilities{"gpu"}, ScanLimit: 10,
		LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(time.Second),
	})).must(h.t)
	wantEqual(h.t, "live gpu elsewhere", model.ExecutionClaimNextResult{
		Admit:   &model.AdmissionCandidate{ID: xB, Quota: q, QuotaKey: "k", GrantExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL)},
		Skipped: 1,
	}, *res)
	h.wantIndexes(gpuB, ixAll, ixLane(laneB, "eligible"))
	if g := h.describe(gpuB).Grant; g != nil {
		h.t.Fatalf("skipped head granted: %+v", g)
	}
}

// claimRequiresToken: a claim (or grant-and-claim) of an execution with a
// quota without an admission token is ErrAdmissionRequired and changes
// nothing; with one, the claim result and the record carry it.
func claimRequiresToken(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	x := h.create(at(0), withQuota(q, "k"))
	z := h.create(at(0), withQuota(q, ""))
	if res := h.claimNext(wA, nil, 10, at(time.Second)); res.Admit == nil || res.Admit.ID != x {
		h.t.Fatalf("claim-next: %+v", res)
	}
	h.unchanged(x, func() {
		_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: x, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second)})
		wantErr(h.t, err, model.ErrAdmissionRequired)
	})
	h.unchanged(z, func() {
		_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: z, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second)})
		wantErr(h.t, err, model.ErrAdmissionRequired)
	})
	cr := h.claimWith(x, wA, "tok-x", at(3*time.Second))
	if cr.Quota != q || cr.QuotaKey != "k" || cr.AdmissionToken != "tok-x" || len(cr.Budgets) != 0 {
		h.t.Fatalf("claim result: quota %v key %q token %q budgets %v", cr.Quota, cr.QuotaKey, cr.AdmissionToken, cr.Budgets)
	}
	h.wantToken(x, "tok-x")
	cr = h.grantClaimWith(z, wA, "tok-z", at(3*time.Second))
	if cr.Quota != q || cr.QuotaKey != "" || cr.AdmissionToken != "tok-z" {
		h.t.Fatalf("grant-and-claim result: quota %v key %q token %q", cr.Quota, cr.QuotaKey, cr.AdmissionToken)
	}
	h.wantToken(z, "tok-z")
}

// claimBudgetOnly: an execution with budgets and no quota claims without
// a token (a token given is ignored); a plain execution's claim result
// has no admission fields.
func claimBudgetOnly(h *admissionHarness) {
	b1 := h.budget(limits{"tokens": {}}, at(0))
	b2 := h.budget(limits{"tokens": {}}, at(0))
	x := h.create(at(0), withBudgets(b1, b2))
	y := h.create(at(0), withBudgets(b2))
	res := h.claimNext(wA, nil, 10, at(time.Second))
	wantEqual(h.t, "claim-next", model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
		ID: x, Budgets: []model.BudgetID{b1, b2}, GrantExpiresAt: at(time.Second + model.DefaultAdmissionGrantTTL),
	}}, *res)
	cr := h.claimWith(x, wA, "", at(2*time.Second))
	if !cmp.Equal(cr.Budgets, []model.BudgetID{b1, b2}) || !model.UUID(cr.Quota).IsZero() || cr.AdmissionToken != "" {
		h.t.Fatalf("claim result: budgets %v quota %v token %q", cr.Budgets, cr.Quota, cr.AdmissionToken)
	}
	h.wantToken(x, "")
	cr = h.grantClaimWith(y, wA, "tok-ignored", at(2*time.Second))
	if !cmp.Equal(cr.Budgets, []model.BudgetID{b2}) || cr.AdmissionToken != "" {
		h.t.Fatalf("grant-and-claim result: budgets %v token %q", cr.Budgets, cr.AdmissionToken)
	}
	h.wantToken(y, "")
	_, pcr := h.active(at(3 * time.Second))
	if len(pcr.Budgets) != 0 || !model.UUID(pcr.Quota).IsZero() || pcr.QuotaKey != "" || pcr.AdmissionToken != "" {
		h.t.Fatalf("plain claim result: %+v", pcr)
	}
}

// completeNextAdmit: a completion's next claim is a claim-next: it
// returns a head with a quota as Next.Admit, granted to the worker for
// Next.AdmissionGrantTTL, and claims nothing.
func completeNextAdmit(h *admissionHarness) {
	q := h.capQuota(5, at(0))
	p := h.create(at(0))
	x := h.create(at(time.Millisecond), withQuota(q, "k"))
	cr := h.claim(p, wA, at(time.Second))
	res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
		ID: p, Fence: cr.Fence(), Now: at(2 * time.Second),
		Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, AdmissionGrantTTL: 3 * time.Second, LeaseRequest: h.leaseReq(wA, leaseTTL)},
	})).must(h.t)
	wantEqual(h.t, "next", &model.ExecutionClaimNextResult{Admit: &model.AdmissionCandidate{
		ID: x, Quota: q, QuotaKey: "k", GrantExpiresAt: at(5 * time.Second),
	}}, res.Next)
	if g := h.describe(x).Grant; g == nil || g.WorkerID != wA.ID || !g.ExpiresAt.Equal(at(5*time.Second)) {
		h.t.Fatalf("grant %+v", g)
	}
	h.wantState(x, stEligible(model.AttemptPendingFirst))
	h.claimWith(x, wA, "tok-x", at(3*time.Second))
	h.wantToken(x, "tok-x")
}

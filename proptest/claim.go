package proptest

import (
	"errors"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actClaimGrant(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ClaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance,
		Capabilities: drawCaps(t, "caps", 60),
		GrantTTL:     ms(genGrantTTL.Draw(t, "grant_ttl_ms")),
		Now:          m.now(),
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.GrantTTL = 0
	case 1:
		p.GrantTTL = model.MaxGrantTTL + time.Millisecond
	case 2:
		p.Capabilities = model.Capabilities{"a,b"}
	case 3:
		p.WorkerID = "bad id!"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ClaimGrantIssue", p, model.Store.ClaimGrantIssue)
	if bad >= 0 {
		m.expectValidation(t, "ClaimGrantIssue", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && isEligible(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities),
			"ClaimGrantIssue succeeded on %+v", prev)
		m.expect(t, res.ExpiresAt.Equal(m.now().Add(p.GrantTTL)), "grant expires at %v", res.ExpiresAt)
	} else if model.CodeOf(err) == model.CodeCapabilityMismatch {
		m.expect(t, prev != nil, "capability mismatch for a missing execution")
		var e *model.Error
		errors.As(err, &e)
		want := prev.RequiredCapabilities.Missing(p.Capabilities).CSV()
		m.expect(t, e.Detail == want, "capability_mismatch detail %q, want %q", e.Detail, want)
	}
}

func (m *machine) actClaim(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return isEligible(s) && s.Grant != nil })
	m.claim(t, id, m.drawWorker(t, id), m.drawClaimerCaps(t, id), m.drawClaimToken(t))
}

// drawClaimToken draws a claim's admission token: often none (refused as
// admission_required for an execution with a quota, ignored otherwise),
// else a fresh one (see freshToken).
func (m *machine) drawClaimToken(t *rapid.T) string {
	if chance(t, 50, "no_token") {
		return ""
	}
	return m.freshToken()
}

// drawClaimerCaps draws a claimer's capabilities: mostly exactly what id
// requires, sometimes anything.
func (m *machine) drawClaimerCaps(t *rapid.T, id model.ExecutionID) model.Capabilities {
	if s := m.snap(id); s != nil && chance(t, 70, "claimer_capable") {
		return s.RequiredCapabilities
	}
	return drawCaps(t, "claim_caps", 60)
}

// actGrantThenClaim is what a scheduler does: issue a claim grant, then
// claim for that worker (sometimes for another).
func (m *machine) actGrantThenClaim(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 30)
	p := &model.ClaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: caps,
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	if _, err := call(m, t, "ClaimGrantIssue", p, model.Store.ClaimGrantIssue); err != nil {
		return
	}
	m.observeQuiet(t)
	if chance(t, 20, "other_worker") {
		w = drawFrom(t, workerPool, "worker")
	}
	if chance(t, 20, "other_caps") {
		caps = drawCaps(t, "claim_caps", 50) // the claimer's capabilities changed
	}
	m.claim(t, id, w, caps, m.drawClaimToken(t))
}

// claim consumes a claim grant for worker instance w holding caps: only
// the instance the grant was issued to, and only while caps cover the
// execution's requirement, succeeds.
//
// An execution with a quota needs an admission token (otherwise
// admission_required); the claim stores it in the record (ignored
// without a quota).
func (m *machine) claim(t *rapid.T, id model.ExecutionID, w poolWorker, caps model.Capabilities, token string) *model.ClaimResult {
	p := &model.ExecutionClaimParams{ID: id, Capabilities: caps, AdmissionToken: token, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	bad := invalid(t, leaseCorruptions)
	corruptLease(&p.LeaseRequest, bad)
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionClaim", p, model.Store.ExecutionClaim)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionClaim", err)
		return nil
	}
	if err == nil {
		m.expect(t, prev != nil, "ExecutionClaim of an unlisted execution succeeded")
		g := prev.Grant
		m.expect(t, isEligible(prev) && g != nil && g.Kind == model.GrantClaim && g.WorkerID == w.id &&
			g.WorkerInstanceID == w.instance && !g.ExpiresAt.Before(m.now()) && prev.RequiredCapabilities.SubsetOf(caps),
			"ExecutionClaim by %s/%s with %v succeeded on %+v grant %+v", w.id, w.instance, caps, prev.State, g)
		m.acquire(t, "ExecutionClaim", prev, w, p.LeaseRequest, res)
		m.checkAdmissionToken(t, "ExecutionClaim", prev, token, res)
	} else if model.CodeOf(err) == model.CodeAdmissionRequired {
		m.expect(t, prev != nil && !noQuota(prev.Quota) && token == "", "ExecutionClaim with token %q refused as admission_required: %+v", token, prev)
	}
	if err != nil {
		return nil
	}
	return res
}

// checkAdmissionToken checks a claim's admission fields: the
// execution's attachments, and the token it holds (only with a quota,
// where it is required).
func (m *machine) checkAdmissionToken(t *rapid.T, op string, prev *model.ExecutionSnapshot, token string, r *model.ClaimResult) {
	t.Helper()
	want := ""
	if !noQuota(prev.Quota) {
		want = token
		m.expect(t, token != "", "%s of %v with a quota succeeded without an admission token", op, r.ID)
	}
	m.expect(t, r.AdmissionToken == want && r.Quota == prev.Quota && r.QuotaKey == prev.QuotaKey && slices.Equal(r.Budgets, prev.Budgets),
		"%s: admission %q %v/%q %v, want %q %v/%q %v", op, r.AdmissionToken, r.Quota, r.QuotaKey, r.Budgets, want, prev.Quota, prev.QuotaKey, prev.Budgets)
}

func (m *machine) actGrantAndClaim(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ExecutionGrantAndClaimParams{
		ID: id, Capabilities: drawCaps(t, "caps", 60), AdmissionToken: m.drawClaimToken(t), LeaseRequest: m.leaseRequest(t, w), Now: m.now(),
	}
	bad := invalid(t, leaseCorruptions+1)
	if bad == leaseCorruptions {
		p.Capabilities = model.Capabilities{"tab\tcap"}
	} else {
		corruptLease(&p.LeaseRequest, bad)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionGrantAndClaim", p, model.Store.ExecutionGrantAndClaim)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionGrantAndClaim", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil, "ExecutionGrantAndClaim of an unlisted execution succeeded")
		m.expect(t, isEligible(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities),
			"ExecutionGrantAndClaim succeeded on %+v grant %+v", prev.State, prev.Grant)
		m.acquire(t, "ExecutionGrantAndClaim", prev, w, p.LeaseRequest, res)
		m.checkAdmissionToken(t, "ExecutionGrantAndClaim", prev, p.AdmissionToken, res)
	} else if model.CodeOf(err) == model.CodeAdmissionRequired {
		m.expect(t, prev != nil && !noQuota(prev.Quota) && p.AdmissionToken == "", "ExecutionGrantAndClaim refused as admission_required: %+v", prev)
	}
}

func unionCaps(a, b model.Capabilities) model.Capabilities {
	c, _ := model.ParseCapabilities("capabilities", append(slices.Clone(a), b...))
	return c
}

func (m *machine) actClaimNext(t *rapid.T) {
	lane := drawFrom(t, lanes, "lane")
	part := m.cfg.SoloPartition(lane)
	if chance(t, 15, "other_partition") {
		part = drawIndex(t, m.cfg.FlowPartitions, "partition")
	}
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 60)
	ns := drawClaimNamespace(t)
	var live model.Capabilities
	switch rapid.IntRange(0, 2).Draw(t, "live_kind") {
	case 0:
		live = unionCaps(caps, drawCaps(t, "live", 50))
	case 1:
		var ws []model.WorkerInfo
		for _, x := range namespaces {
			if ns == "" || x == ns {
				ws = append(ws, m.obs[0].Workers[x]...)
			}
		}
		live = (&model.WorkerListResult{Workers: ws}).LiveCapabilities()
	default:
		live = drawCaps(t, "live", 50)
	}
	p := &model.ExecutionClaimNextParams{
		Partition: part, Lane: lane, Namespace: ns, Capabilities: caps, LiveCapabilities: live,
		ScanLimit:    rapid.IntRange(1, 4).Draw(t, "scan_limit"),
		LeaseRequest: m.leaseRequest(t, w), Now: m.now(),
	}
	bad := invalid(t, leaseCorruptions+4)
	switch bad {
	case leaseCorruptions:
		p.ScanLimit = model.MaxPageSize + 1
	case leaseCorruptions + 1:
		p.Partition = m.cfg.FlowPartitions
	case leaseCorruptions + 2:
		p.Lane = ""
	case leaseCorruptions + 3:
		p.Namespace = "UPPER"
	default:
		corruptLease(&p.LeaseRequest, bad)
	}
	if chance(t, 20, "admission_grant_ttl") {
		p.AdmissionGrantTTL = ms(genGrantTTL.Draw(t, "admission_grant_ttl_ms"))
	}
	m.claimNext(t, p, w, bad)
}

// claimNext calls ExecutionClaimNext and checks its answer against the
// eligible heads; it returns the answer (nil on an error).
func (m *machine) claimNext(t *rapid.T, p *model.ExecutionClaimNextParams, w poolWorker, bad int) *model.ExecutionClaimNextResult {
	res, err := call(m, t, "ExecutionClaimNext", p, model.Store.ExecutionClaimNext)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionClaimNext", err)
		return nil
	}
	m.expect(t, err == nil, "ExecutionClaimNext with valid input failed: %v", err)
	want := m.predictClaimNext(p)
	var got claimNextOutcome
	got.blocked, got.skipped, got.paused = res.Blocked, res.Skipped, res.Paused
	if res.Claimed != nil {
		got.claimed = res.Claimed.ID
	}
	if res.Admit != nil {
		got.admit = res.Admit.ID
	}
	m.expect(t, cmpEqual(got, want), "ExecutionClaimNext: claimed %v, admit %v, blocked %v, skipped %d, paused %v; the eligible heads say %v, %v, %v, %d, %v",
		got.claimed, got.admit, got.blocked, got.skipped, got.paused, want.claimed, want.admit, want.blocked, want.skipped, want.paused)
	if c := res.Claimed; c != nil {
		prev := m.snap(c.ID)
		m.acquire(t, "ExecutionClaimNext", prev, w, p.LeaseRequest, c)
		if prev != nil && needsAdmission(prev) {
			m.admittedInline(t, prev, p.LeaseRequest, c)
		}
	}
	if a := res.Admit; a != nil {
		m.reached("ExecutionClaimNext admit")
		s := m.snap(a.ID)
		ttl := p.AdmissionGrantTTL
		if ttl == 0 {
			ttl = model.DefaultAdmissionGrantTTL
		}
		m.expect(t, res.Claimed == nil && s != nil && slices.Equal(a.Budgets, s.Budgets) && a.Quota == s.Quota && a.QuotaKey == s.QuotaKey &&
			a.GrantExpiresAt.Equal(p.Now.Add(ttl)), "ExecutionClaimNext: Admit %+v (claimed %v) of %+v, grant ttl %v", *a, res.Claimed, s, ttl)
	}
	return res
}

type claimNextOutcome struct {
	claimed model.ExecutionID
	admit   model.ExecutionID
	blocked []model.ExecutionID
	skipped int
	paused  bool
}

// needsAdmission reports whether s has budgets or a quota.
func needsAdmission(s *model.ExecutionSnapshot) bool { return len(s.Budgets) > 0 || !noQuota(s.Quota) }

// predictClaimNext walks the lane's eligible executions in index order
// (higher priority first, then creation time, then id) as claim-next must,
// unless the lane is paused (then it walks nothing and reports paused):
// a head with another worker's live grant is skipped; the first head whose
// required capabilities the worker has is claimed, or returned as Admit
// when it has budgets or a quota that Inline does not admit it to
// (admitsInline); a head no live worker can serve is
// route-blocked; the others are skipped.
func (m *machine) predictClaimNext(p *model.ExecutionClaimNextParams) claimNextOutcome {
	type head struct {
		score int64
		s     *model.ExecutionSnapshot
	}
	if m.lanePaused(p.Lane) {
		return claimNextOutcome{paused: true}
	}
	var heads []head
	for _, x := range m.obs[0].Execs {
		s := x.Snapshot
		if isEligible(s) && s.Lane == p.Lane && s.ID.Partition() == p.Partition {
			heads = append(heads, head{model.EligibleScore(s.Priority, s.CreatedAt.UnixMilli()), s})
		}
	}
	slices.SortFunc(heads, func(a, b head) int {
		if a.score != b.score {
			return cmpInt(a.score, b.score)
		}
		return a.s.ID.Compare(b.s.ID)
	})
	var out claimNextOutcome
	for _, h := range heads[:min(len(heads), p.ScanLimit)] {
		s := h.s
		switch {
		case p.Namespace != "" && s.Namespace != p.Namespace:
			out.skipped++ // another namespace's: never claimed nor blocked
		case s.Grant != nil && !s.Grant.ExpiresAt.Before(p.Now) &&
			(s.Grant.WorkerID != p.WorkerID || s.Grant.WorkerInstanceID != p.WorkerInstanceID):
			out.skipped++ // another instance's grant, even under the same worker id
		case s.RequiredCapabilities.SubsetOf(p.Capabilities) && needsAdmission(s) && m.admitsInline(p.Inline, s, p.Now):
			out.claimed = s.ID // admitted in the claim's step
			return out
		case s.RequiredCapabilities.SubsetOf(p.Capabilities) && needsAdmission(s):
			out.admit = s.ID // granted to the claimer, admitted by the caller
			return out
		case s.RequiredCapabilities.SubsetOf(p.Capabilities):
			out.claimed = s.ID
			return out
		case s.RequiredCapabilities.SubsetOf(p.LiveCapabilities):
			out.skipped++
		default:
			out.blocked = append(out.blocked, s.ID)
		}
	}
	return out
}

// drawClaimNamespace draws a claim's namespace: mostly one of the
// namespaces, sometimes "" (every namespace).
func drawClaimNamespace(t *rapid.T) model.Namespace {
	if chance(t, 30, "any_namespace") {
		return ""
	}
	return drawFrom(t, namespaces, "claim_namespace")
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var admissionReasons = []model.BlockingReason{
	model.WaitingForBudget, model.WaitingForQuota, model.WaitingForCapableWorker,
	model.PausedByOperator, model.PausedByPolicy,
}

func isBlocked(s *model.ExecutionSnapshot) bool {
	_, ok := model.BlockedEligibility(s.State.BlockingReason)
	return s.State.LifecyclePhase == model.PhaseRunnable && ok
}

func (m *machine) actBlock(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	p := &model.ExecutionBlockParams{
		ID: id, Reason: drawFrom(t, admissionReasons, "reason"),
		Detail: drawFrom(t, []string{"", "budget b1 exhausted"}, "detail"), Now: m.now(),
	}
	if p.Reason == model.WaitingForBudget {
		_, p.Budget = m.drawBudget(t) // a budget block names its budget
	}
	bad := invalid(t, 5)
	switch bad {
	case 4:
		p.Reason, p.Budget = model.WaitingForQuota, budgetIDs[0]
	case 0:
		p.Reason = model.WaitingForWorker
	case 1:
		p.Reason = 0
	case 2:
		p.Detail = "\xff"
	case 3:
		p.ID = model.ExecutionID{}
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionBlock", p, optional(model.Blocker.ExecutionBlock))
	if bad >= 0 {
		m.expectValidation(t, "ExecutionBlock", err)
		return
	}
	if err == nil {
		want, _ := model.BlockedEligibility(p.Reason)
		m.expect(t, prev != nil && isEligible(prev) && res.EligibilityState == want && (p.Reason != model.WaitingForQuota || !noQuota(prev.Quota)),
			"ExecutionBlock succeeded on %+v with %v", prev, res.EligibilityState)
	} else if p.Reason == model.WaitingForQuota && prev != nil && isEligible(prev) && noQuota(prev.Quota) {
		m.expect(t, model.CodeOf(err) == model.CodeInvalidBlockingReason, "ExecutionBlock on a quota of an execution without one: %v", err)
	}
}

func (m *machine) actUnblock(t *rapid.T) {
	id := m.pickExec(t, isBlocked)
	reason := drawFrom(t, admissionReasons, "reason")
	if s := m.snap(id); s != nil && isBlocked(s) && !chance(t, 20, "other_reason") {
		reason = s.State.BlockingReason
	}
	p := &model.ExecutionUnblockParams{ID: id, ExpectedReason: reason, Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.ExpectedReason = model.WaitingForDelay
	case 1:
		p.Now = time.Time{}
	}
	prev := m.snap(id)
	_, err := call(m, t, "ExecutionUnblock", p, optional(model.Blocker.ExecutionUnblock))
	if bad >= 0 {
		m.expectValidation(t, "ExecutionUnblock", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && isBlocked(prev) && prev.State.BlockingReason == reason,
			"ExecutionUnblock(%v) succeeded on %+v", reason, prev)
	}
}

package proptest

import (
	"errors"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actRenew(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	p := &model.LeaseRenewParams{ID: id, Fence: m.drawFence(t, id), LeaseTTL: drawLeaseTTL(t), Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.LeaseTTL = 0
	case 1:
		p.LeaseTTL = model.MaxLeaseTTL + time.Millisecond
	}
	prev := m.snap(id)
	res, err := call(m, t, "LeaseRenew", p, model.Store.LeaseRenew)
	if bad >= 0 {
		m.expectValidation(t, "LeaseRenew", err)
		return
	}
	m.checkFenced(t, "LeaseRenew", prev, model.SourceWorker, p.Fence, false, false, err)
	if err == nil {
		now, ttl := m.now(), p.LeaseTTL.Milliseconds()
		m.expect(t, res.ExpiresAt.Equal(now.Add(p.LeaseTTL)) && res.RenewBy.UnixMilli() == model.RenewDeadline(now.UnixMilli(), ttl),
			"LeaseRenew: expires %v renew by %v for ttl %v", res.ExpiresAt, res.RenewBy, p.LeaseTTL)
	}
}

func (m *machine) actRevoke(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	prev := m.snap(id)
	p := &model.LeaseRevokeParams{ID: id, Reason: drawFrom(t, reasons, "reason"), Now: m.now()}
	switch rapid.IntRange(0, 2).Draw(t, "expected_lease") {
	case 1:
		if prev != nil && prev.CurrentLease != nil {
			p.ExpectedLeaseID = prev.CurrentLease.ID
		}
	case 2:
		p.ExpectedLeaseID = model.LeaseID(m.nextUUID(t, ""))
	}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Reason = "\xff\xfe"
	}
	res, err := call(m, t, "LeaseRevoke", p, model.Store.LeaseRevoke)
	if bad >= 0 {
		m.expectValidation(t, "LeaseRevoke", err)
		return
	}
	if err != nil {
		return
	}
	m.expect(t, prev != nil && prev.State.LifecyclePhase == model.PhaseActive, "LeaseRevoke succeeded on %+v", prev)
	switch os := prev.State.OwnershipState; res.Outcome {
	case model.RevokeRevoked:
		l := prev.CurrentLease
		m.expect(t, os == model.OwnershipLeased && l != nil && (p.ExpectedLeaseID.IsZero() || p.ExpectedLeaseID == l.ID) &&
			res.LeaseID == l.ID && res.LeaseEpoch == prev.LeaseEpoch, "LeaseRevoke revoked %+v (was %v, lease %+v)", res, os, l)
	case model.RevokeAlreadyRevoked:
		m.expect(t, os == model.OwnershipLeaseRevoked, "LeaseRevoke: already_revoked, but was %v", os)
	case model.RevokeAlreadyExpired:
		m.expect(t, os == model.OwnershipLeaseExpiredReclaimable, "LeaseRevoke: already_expired, but was %v", os)
	default:
		m.fatalf(t, "LeaseRevoke: unknown status %q", res.Outcome)
	}
}

func (m *machine) actMarkExpired(t *rapid.T) {
	now := m.now()
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return isOwned(model.OwnershipLeased)(s) && !s.CurrentLease.ExpiresAt.After(now)
	})
	p := &model.LeaseMarkExpiredParams{ID: id, Now: now}
	bad := invalid(t, 1)
	if bad == 0 {
		p.ID = model.NewExecutionID(m.cfg.FlowPartitions+3, id.UUID())
	}
	prev := m.snap(id)
	res, err := call(m, t, "LeaseMarkExpired", p, model.Store.LeaseMarkExpired)
	if bad >= 0 {
		m.expectValidation(t, "LeaseMarkExpired", err)
		return
	}
	m.expect(t, err == nil, "LeaseMarkExpired failed: %v", err)
	var want model.MarkExpiredOutcome
	switch {
	case prev == nil:
		want = model.MarkExpiredNotFoundCleaned
	case prev.State.LifecyclePhase != model.PhaseActive:
		want = model.MarkExpiredNotActiveCleaned
	case prev.State.OwnershipState == model.OwnershipLeaseExpiredReclaimable:
		want = model.MarkExpiredAlreadyExpired
	case prev.State.OwnershipState == model.OwnershipLeaseRevoked:
		want = model.MarkExpiredAlreadyRevoked
	case prev.CurrentLease != nil && prev.CurrentLease.ExpiresAt.After(now):
		want = model.MarkExpiredNotYetExpired
	default:
		want = model.MarkExpiredMarked
	}
	m.expect(t, res.Outcome == want, "LeaseMarkExpired: %s, want %s", res.Outcome, want)
}

func reclaimable(s *model.ExecutionSnapshot) bool {
	return isOwned(model.OwnershipLeaseExpiredReclaimable, model.OwnershipLeaseRevoked)(s)
}

func (m *machine) actReclaimGrant(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ReclaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: drawCaps(t, "caps", 60),
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.GrantTTL = -time.Second
	case 1:
		p.WorkerInstanceID = ""
	}
	prev := m.snap(id)
	res, err := call(m, t, "ReclaimGrantIssue", p, optional(model.GrantReclaimer.ReclaimGrantIssue))
	if bad >= 0 {
		m.expectValidation(t, "ReclaimGrantIssue", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && reclaimable(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities) &&
			res.ExpiresAt.Equal(m.now().Add(p.GrantTTL)), "ReclaimGrantIssue succeeded on %+v grant %+v", prev, prev.Grant)
	}
}

func (m *machine) actReclaim(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return reclaimable(s) && s.Grant != nil })
	m.reclaim(t, id, m.drawWorker(t, id), m.drawClaimerCaps(t, id))
}

// actReclaimFlow is what an operator's reclaim tool does: issue a reclaim
// grant, then reclaim for that worker (sometimes for another).
func (m *machine) actReclaimFlow(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 30)
	p := &model.ReclaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: caps,
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	if _, err := call(m, t, "ReclaimGrantIssue", p, optional(model.GrantReclaimer.ReclaimGrantIssue)); err != nil {
		return
	}
	m.observeQuiet(t)
	if chance(t, 20, "other_worker") {
		w = drawFrom(t, workerPool, "worker")
	}
	if chance(t, 20, "other_caps") {
		caps = drawCaps(t, "claim_caps", 50)
	}
	if s := m.snap(id); s != nil && chance(t, 15, "pause_before_reclaim") {
		m.pauseLane(t, s.Lane) // the reclaim must be refused (acquire)
	}
	m.reclaim(t, id, w, caps)
}

// reclaim consumes a reclaim grant for worker instance w holding caps, as
// claim does.
func (m *machine) reclaim(t *rapid.T, id model.ExecutionID, w poolWorker, caps model.Capabilities) {
	p := &model.ExecutionReclaimParams{ID: id, Capabilities: caps, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	bad := invalid(t, leaseCorruptions)
	corruptLease(&p.LeaseRequest, bad)
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionReclaim", p, optional(model.GrantReclaimer.ExecutionReclaim))
	if bad >= 0 {
		m.expectValidation(t, "ExecutionReclaim", err)
		return
	}
	if err != nil {
		return
	}
	m.expect(t, prev != nil, "ExecutionReclaim of an unlisted execution succeeded")
	g := prev.Grant
	m.expect(t, reclaimable(prev) && g != nil && g.Kind == model.GrantReclaim && g.WorkerID == w.id &&
		g.WorkerInstanceID == w.instance && !g.ExpiresAt.Before(m.now()) && prev.RequiredCapabilities.SubsetOf(caps),
		"ExecutionReclaim by %s/%s with %v succeeded on %+v grant %+v", w.id, w.instance, caps, prev.State, g)
	capped := prev.ReclaimCount >= prev.MaxReclaims
	switch res.Outcome {
	case model.ReclaimClaimed:
		m.expect(t, !capped && res.Claimed != nil && res.Claimed.AttemptType == model.AttemptReclaim,
			"ExecutionReclaim claimed at %d of %d reclaims: %+v", prev.ReclaimCount, prev.MaxReclaims, res.Claimed)
		m.acquire(t, "ExecutionReclaim", prev, w, p.LeaseRequest, res.Claimed)
	case model.ReclaimCapExceeded:
		m.expect(t, capped && res.Claimed == nil, "ExecutionReclaim: cap exceeded at %d of %d", prev.ReclaimCount, prev.MaxReclaims)
	default:
		m.fatalf(t, "ExecutionReclaim: unknown status %q", res.Outcome)
	}
}

func (m *machine) actRecover(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	p := &model.ExecutionRecoverParams{ID: id, Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Now = time.UnixMilli(253402300799999 + 1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionRecover", p, model.Store.ExecutionRecover)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionRecover", err)
		return
	}
	m.recovered(t, prev, res, err)
}

// actRevokeThenRecover is an operator's crash recovery: revoke a lease and
// requeue the execution at once (so reclaim caps are reached).
// Up to three rounds: after a requeue, the execution is claimed again
// (grant-and-claim by a worker with every capability) for the next round.
func (m *machine) actRevokeThenRecover(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	rounds := rapid.IntRange(1, 3).Draw(t, "rounds")
	for round := 1; ; round++ {
		p := &model.LeaseRevokeParams{ID: id, Reason: "operator", Now: m.now()}
		if r, err := call(m, t, "LeaseRevoke", p, model.Store.LeaseRevoke); err != nil || r.Outcome != model.RevokeRevoked {
			return
		}
		m.observeQuiet(t)
		prev := m.snap(id)
		res, err := call(m, t, "ExecutionRecover", &model.ExecutionRecoverParams{ID: id, Now: m.now()}, model.Store.ExecutionRecover)
		m.recovered(t, prev, res, err)
		if err != nil || res.Outcome != model.RecoverRequeued || round == rounds {
			return
		}
		m.observeQuiet(t)
		w := drawFrom(t, workerPool, "worker")
		g := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: capUniverse, AdmissionToken: m.freshToken(), LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
		prev = m.snap(id)
		c, err := call(m, t, "ExecutionGrantAndClaim", g, model.Store.ExecutionGrantAndClaim)
		if err != nil {
			return
		}
		m.acquire(t, "ExecutionGrantAndClaim", prev, w, g.LeaseRequest, c)
		m.observeQuiet(t)
	}
}

func (m *machine) recovered(t *rapid.T, prev *model.ExecutionSnapshot, res *model.ExecutionRecoverResult, err error) {
	t.Helper()
	switch {
	case prev == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionRecover of a missing execution: %v", err)
	case !reclaimable(prev):
		m.expect(t, errors.Is(err, model.ErrNotReclaimable), "ExecutionRecover of %+v: %v", prev.State, err)
	case err != nil:
		m.fatalf(t, "ExecutionRecover of %+v failed: %v", prev.State, err)
	case prev.ReclaimCount >= prev.MaxReclaims:
		m.expect(t, res.Outcome == model.RecoverCapExceeded, "ExecutionRecover at %d of %d: %s", prev.ReclaimCount, prev.MaxReclaims, res.Outcome)
	default:
		m.expect(t, res.Outcome == model.RecoverRequeued, "ExecutionRecover at %d of %d: %s", prev.ReclaimCount, prev.MaxReclaims, res.Outcome)
	}
}

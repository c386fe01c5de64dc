package memstore

import (
	"maps"
	"math"

	"github.com/flowfabric/flowfabric/model"
)

// checkClaimable is the shared front of claim, grant-and-claim and
// claim-next.
func checkClaimable(e *execution) error {
	if e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != model.EligibleNow || e.terminalOutcome != model.OutcomeNone {
		return model.ErrNotLeaseable
	}
	if e.ownershipState != model.OwnershipUnowned {
		return model.ErrLeaseConflict
	}
	if e.attemptState == model.AttemptRunning {
		return model.ErrActiveAttemptExists
	}
	return nil
}

// lanePaused reports whether lane is paused (lane_ops.go).
func (s *Store) lanePaused(lane model.LaneID) bool {
	return s.paused[lane] != nil
}

// checkGrant verifies that e holds a live grant of kind issued to the
// claiming worker instance r, and that the claimer's capabilities still
// cover e's requirement.
func checkGrant(e *execution, kind model.GrantKind, r *model.LeaseRequest, caps model.Capabilities, now int64) error {
	g := e.grant
	if g == nil || g.kind != kind || g.workerID != r.WorkerID || g.workerInstanceID != r.WorkerInstanceID {
		return model.ErrInvalidClaimGrant
	}
	if !grantLive(e, now) {
		return model.ErrClaimGrantExpired
	}
	caps, _ = model.NormalizeCapabilities("capabilities", caps)
	if missing := e.requiredCaps.Missing(caps); len(missing) > 0 {
		return model.NewError(model.CodeCapabilityMismatch, missing.CSV())
	}
	return nil
}

// claim starts (or resumes) an attempt under a new lease. The caller has
// checked that e is claimable.
func (s *Store) claim(e *execution, r *model.LeaseRequest, now int64) *model.ClaimResult {
	p, l := s.indexesOf(e)
	l.eligible.remove(e.id)
	clearGrant(e)
	e.epoch++
	ttl := r.LeaseTTL.Milliseconds()
	e.lease = &leaseRec{
		id: r.LeaseID, workerID: r.WorkerID, workerInstanceID: r.WorkerInstanceID,
		acquiredAt: now, expiresAt: now + ttl, renewBy: model.RenewDeadline(now, ttl),
	}
	resumed := e.attemptState == model.AttemptInterrupted && e.curAttempt >= 0
	var a *model.Attempt
	if resumed {
		a = &e.attempts[e.curAttempt]
		a.Status = model.AttemptStarted
	} else {
		typ := model.AttemptInitial
		if e.pending != nil {
			typ = e.pending.Type
		}
		e.attempts = append(e.attempts, model.Attempt{
			Index: e.totalAttempts, ID: r.AttemptID, Type: typ, Status: model.AttemptStarted,
			StartedAt: tm(now),
		})
		e.curAttempt = e.totalAttempts
		e.totalAttempts++
		a = &e.attempts[e.curAttempt]
	}
	a.LeaseID = r.LeaseID
	a.LeaseEpoch = e.epoch
	a.WorkerID = r.WorkerID
	a.WorkerInstanceID = r.WorkerInstanceID
	clearPending(e)
	e.delayUntil = 0
	e.leaseExpiredAt, e.leaseRevokedAt, e.revokeReason = 0, 0, ""
	if e.startedAt == 0 {
		e.startedAt = now
	}
	s.setState(e, now, model.PhaseActive, model.OwnershipLeased, model.NotApplicable, model.BlockingNone, model.OutcomeNone, model.AttemptRunning)
	p.leaseExpiry.add(e.id, e.lease.expiresAt)
	l.active.add(e.id, e.lease.expiresAt)
	p.wl(r.WorkerInstanceID).add(e.id)
	if e.attemptTimeout > 0 {
		e.timeoutAt = now + e.attemptTimeout
		p.attemptTimeout.add(e.id, e.timeoutAt)
	}
	kind := model.LeaseAcquired
	if resumed {
		kind = model.LeaseResumed
	}
	s.addHistory(e, now, kind, "")
	return s.claimResult(e, resumed)
}

// claimResult is the ClaimResult of e's new lease and current attempt.
func (s *Store) claimResult(e *execution, resumed bool) *model.ClaimResult {
	a := e.currentAttempt()
	r := &model.ClaimResult{
		ID: e.id,
		Lease: model.Lease{
			ID: e.lease.id, Epoch: e.epoch, WorkerID: e.lease.workerID,
			WorkerInstanceID: e.lease.workerInstanceID,
			AcquiredAt:       tm(e.lease.acquiredAt), ExpiresAt: tm(e.lease.expiresAt), RenewBy: tm(e.lease.renewBy),
		},
		AttemptID: a.ID, AttemptIndex: a.Index, AttemptType: a.Type, Resumed: resumed,
		Namespace: e.namespace, Lane: e.lane, Kind: e.kind, Priority: e.priority,
		Payload: e.payload, RetryCount: e.retryCount, MaxRetries: e.retry.MaxRetries, CreatedAt: tm(e.createdAt), // read-only, see model.ClaimResult
		Tags: maps.Clone(e.tags), Metadata: maps.Clone(e.meta), TimeoutAt: tm(e.timeoutAt),
	}
	if e.admit {
		r.Budgets, r.Quota, r.QuotaKey, r.AdmissionToken = cloneBudgets(e.budgets), e.quota, e.quotaKey, e.admissionToken
	}
	return r
}

// block moves an eligible execution to the blocked set of reason; a
// budget block joins budget's group, a quota block its bucket's
// (admission.go).
func (s *Store) block(e *execution, now int64, reason model.BlockingReason, detail string, budget model.BudgetID) {
	es, _ := model.BlockedEligibility(reason)
	_, l := s.indexesOf(e)
	l.eligible.remove(e.id)
	s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, es, reason, model.OutcomeNone, e.attemptState)
	e.blockingDetail = detail
	clearGrant(e)
	l.blocked[es].add(e.id, now)
	switch es {
	case model.BlockedByRoute:
		key := routeMember(e.namespace, e.requiredCaps.CSV())
		g := l.routeGroups[key]
		if g == nil {
			g = newZset()
			l.routeGroups[key] = g
		}
		g.add(e.id, now)
	case model.BlockedByBudget, model.BlockedByQuota:
		l.admJoinGroup(e, es, budget, now)
	}
}

// unblock makes a blocked execution eligible.
func (s *Store) unblock(e *execution, now int64) {
	s.removeFromLane(e)
	s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, model.EligibleNow, model.WaitingForWorker, model.OutcomeNone, e.attemptState)
	s.addEligible(e)
}

// claimNext claims the best eligible execution of n.Lane in partition part
// that the worker can serve, walking at most n.ScanLimit heads (see
// model.ExecutionClaimNextParams).
func (s *Store) claimNext(part int, n *model.NextClaim, now int64) *model.ExecutionClaimNextResult {
	caps, _ := model.NormalizeCapabilities("capabilities", n.Capabilities)
	live, _ := model.NormalizeCapabilities("live_capabilities", n.LiveCapabilities)
	res := &model.ExecutionClaimNextResult{}
	if s.lanePaused(n.Lane) {
		res.Paused = true
		return res
	}
	pt := s.parts[part]
	if pt == nil {
		return res
	}
	l := pt.lanes[n.Lane]
	if l == nil {
		return res
	}
	// Heads are read a few at a time: usually the first one is claimed.
	var heads []model.ExecutionID
	var buf [4]model.ExecutionID
	pivot, seen := zitem{score: math.MinInt64}, 0
	for seen < n.ScanLimit {
		if len(heads) == 0 {
			heads = buf[:0]
			l.eligible.ascend(pivot, func(it zitem) bool {
				if seen > 0 && !zless(pivot, it) {
					return true // the last head read, already handled
				}
				heads = append(heads, it.id)
				pivot = it
				return len(heads) < min(len(buf), n.ScanLimit-seen)
			})
			if len(heads) == 0 {
				break
			}
		}
		id := heads[0]
		heads = heads[1:]
		seen++
		e := s.execs[id]
		if e == nil || checkClaimable(e) != nil || (n.Namespace != "" && e.namespace != n.Namespace) {
			res.Skipped++
			continue
		}
		if grantLive(e, now) && (e.grant.workerID != n.WorkerID || e.grant.workerInstanceID != n.WorkerInstanceID) {
			// a grant is an instance's: another instance of the worker id passes it
			res.Skipped++
			continue
		}
		if len(e.requiredCaps.Missing(caps)) == 0 {
			if e.admit {
				token, ok := s.admitInline(e, n, now)
				if !ok {
					res.Admit = s.admitCandidate(e, n, now)
					return res
				}
				_ = takeAdmission(e, token) // token is set when e has a quota
			}
			res.Claimed = s.claim(e, &n.LeaseRequest, now)
			return res
		}
		if e.requiredCaps.SubsetOf(live) {
			res.Skipped++
			continue
		}
		e.lastCapMismatchAt = now
		s.block(e, now, model.WaitingForCapableWorker, "no live worker has: "+e.requiredCaps.Missing(live).CSV(), model.BudgetID{})
		res.Blocked = append(res.Blocked, id)
	}
	return res
}

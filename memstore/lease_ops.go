package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// LeaseRenew implements model.LeaseStore.
func (s *Store) LeaseRenew(ctx context.Context, p *model.LeaseRenewParams) (*model.LeaseRenewResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.LeaseRenewResult, error) {
		now := ms(p.Now)
		if err := validateLease(e, p.Fence, now); err != nil {
			return nil, err
		}
		ttl := p.LeaseTTL.Milliseconds()
		e.lease.expiresAt = now + ttl
		e.lease.renewBy = model.RenewDeadline(now, ttl)
		e.lastMutationAt = now
		pt, _ := s.indexesOf(e)
		pt.leaseExpiry.add(e.id, e.lease.expiresAt)
		s.feedLease(e, now, model.LeaseRenewed, "")
		return &model.LeaseRenewResult{ExpiresAt: tm(e.lease.expiresAt), RenewBy: tm(e.lease.renewBy)}, nil
	})
}

// LeaseMarkExpired implements model.LeaseStore.
func (s *Store) LeaseMarkExpired(ctx context.Context, p *model.LeaseMarkExpiredParams) (*model.LeaseMarkExpiredResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.LeaseMarkExpiredResult, error) {
		now := ms(p.Now)
		pt := s.part(p.ID.Partition())
		e := s.execs[p.ID]
		status := func(st model.MarkExpiredOutcome) (*model.LeaseMarkExpiredResult, error) {
			return &model.LeaseMarkExpiredResult{Outcome: st}, nil
		}
		switch {
		case e == nil:
			pt.leaseExpiry.remove(p.ID)
			return status(model.MarkExpiredNotFoundCleaned)
		case e.lifecyclePhase != model.PhaseActive:
			pt.leaseExpiry.remove(p.ID)
			return status(model.MarkExpiredNotActiveCleaned)
		case e.ownershipState == model.OwnershipUnowned:
			pt.leaseExpiry.remove(p.ID)
			return status(model.MarkExpiredUnownedCleaned)
		case e.ownershipState == model.OwnershipLeaseExpiredReclaimable:
			return status(model.MarkExpiredAlreadyExpired)
		case e.ownershipState == model.OwnershipLeaseRevoked:
			return status(model.MarkExpiredAlreadyRevoked)
		case e.lease.expiresAt > now:
			return status(model.MarkExpiredNotYetExpired)
		}
		s.notifyLease(e, model.LeaseNoticeExpired)
		s.setState(e, now, model.PhaseActive, model.OwnershipLeaseExpiredReclaimable, model.NotApplicable,
			model.WaitingForWorker, model.OutcomeNone, model.AttemptInterrupted)
		e.leaseExpiredAt = now
		s.addHistory(e, now, model.LeaseExpired, "")
		s.closeLostStream(e, now, model.StreamClosedLeaseExpired)
		return status(model.MarkExpiredMarked)
	})
}

// LeaseRevoke implements model.LeaseStore.
func (s *Store) LeaseRevoke(ctx context.Context, p *model.LeaseRevokeParams) (*model.LeaseRevokeResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.LeaseRevokeResult, error) {
		if e.lifecyclePhase != model.PhaseActive {
			return nil, e.notActive()
		}
		switch e.ownershipState {
		case model.OwnershipLeaseRevoked:
			return &model.LeaseRevokeResult{Outcome: model.RevokeAlreadyRevoked, LeaseEpoch: e.epoch}, nil
		case model.OwnershipLeaseExpiredReclaimable:
			return &model.LeaseRevokeResult{Outcome: model.RevokeAlreadyExpired, LeaseID: e.lease.id, LeaseEpoch: e.epoch}, nil
		}
		if e.ownershipState != model.OwnershipLeased || e.lease == nil {
			return nil, model.ErrNoActiveLease
		}
		if !p.ExpectedLeaseID.IsZero() && p.ExpectedLeaseID != e.lease.id {
			return nil, model.ErrStaleLease
		}
		now := ms(p.Now)
		old := e.lease.id
		pt, _ := s.indexesOf(e)
		s.addHistory(e, now, model.LeaseRevoked, p.Reason)
		s.closeLostStream(e, now, model.StreamClosedLeaseRevoked)
		s.notifyLease(e, model.LeaseNoticeRevoked)
		s.clearLease(e)
		// A revoked lease stays discoverable for recovery: its lease-expiry
		// entry moves to now, so the lease-expiry scanner recovers it at once.
		pt.leaseExpiry.add(e.id, now)
		s.setState(e, now, model.PhaseActive, model.OwnershipLeaseRevoked, model.NotApplicable,
			model.WaitingForWorker, model.OutcomeNone, model.AttemptInterrupted)
		e.leaseRevokedAt = now
		e.revokeReason = p.Reason
		return &model.LeaseRevokeResult{Outcome: model.RevokeRevoked, LeaseID: old, LeaseEpoch: e.epoch}, nil
	})
}

// ReclaimGrantIssue implements model.LeaseStore.
func (s *Store) ReclaimGrantIssue(ctx context.Context, p *model.ReclaimGrantIssueParams) (*model.ReclaimGrantIssueResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ReclaimGrantIssueResult, error) {
		caps, _ := model.NormalizeCapabilities("capabilities", p.Capabilities)
		now := ms(p.Now)
		if !reclaimable(e) {
			return nil, model.ErrNotReclaimable
		}
		if grantLive(e, now) {
			return nil, model.ErrGrantAlreadyExists
		}
		if missing := e.requiredCaps.Missing(caps); len(missing) > 0 {
			return nil, model.NewError(model.CodeCapabilityMismatch, missing.CSV())
		}
		e.grant = &grantRec{kind: model.GrantReclaim, workerID: p.WorkerID, workerInstanceID: p.WorkerInstanceID,
			createdAt: now, expiresAt: now + p.GrantTTL.Milliseconds()}
		e.lastMutationAt = now
		return &model.ReclaimGrantIssueResult{ExpiresAt: tm(e.grant.expiresAt)}, nil
	})
}

// ExecutionReclaim implements model.LeaseStore.
func (s *Store) ExecutionReclaim(ctx context.Context, p *model.ExecutionReclaimParams) (*model.ExecutionReclaimResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionReclaimResult, error) {
		now := ms(p.Now)
		if !reclaimable(e) {
			return nil, model.ErrNotReclaimable
		}
		if err := checkGrant(e, model.GrantReclaim, &p.LeaseRequest, p.Capabilities, now); err != nil {
			return nil, err
		}
		if s.lanePaused(e.lane) {
			return nil, model.ErrLanePaused
		}
		if s.reclaimCapReached(e, now) {
			return &model.ExecutionReclaimResult{Outcome: model.ReclaimCapExceeded}, nil
		}
		s.endAttempt(e, now, model.AttemptInterruptedReclaimed, "", "")
		// the reclaimer inherits the old lease's quota admission
		s.endLease(e, now, model.LeaseReclaimed, "")
		e.reclaimCount++
		setPending(e, model.AttemptReclaim, "", "")
		// The execution goes straight from its old lease to the new one.
		e.attemptState = model.AttemptPendingRetry
		r := s.claim(e, &p.LeaseRequest, now)
		return &model.ExecutionReclaimResult{Outcome: model.ReclaimClaimed, Claimed: r}, nil
	})
}

// ExecutionRecover implements model.LeaseStore.
func (s *Store) ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionRecoverResult, error) {
		now := ms(p.Now)
		if !reclaimable(e) {
			return nil, model.ErrNotReclaimable
		}
		if s.reclaimCapReached(e, now) {
			return &model.ExecutionRecoverResult{Outcome: model.RecoverCapExceeded}, nil
		}
		reason := "lease_expired"
		if e.ownershipState == model.OwnershipLeaseRevoked {
			reason = "lease_revoked"
		}
		s.endAttempt(e, now, model.AttemptInterruptedReclaimed, reason, model.FailureInfraCrash)
		s.removeFromLane(e)
		s.releaseLease(e, now, model.LeaseRecovered, reason)
		clearGrant(e)
		e.reclaimCount++
		setPending(e, model.AttemptReclaim, reason, "")
		s.makeRunnable(e, now, 0, model.WaitingForWorker, model.AttemptPendingRetry)
		return &model.ExecutionRecoverResult{Outcome: model.RecoverRequeued}, nil
	})
}

package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// ClaimGrantIssue implements model.ClaimStore.
func (s *Store) ClaimGrantIssue(ctx context.Context, p *model.ClaimGrantIssueParams) (*model.ClaimGrantIssueResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ClaimGrantIssueResult, error) {
		caps, _ := model.NormalizeCapabilities("capabilities", p.Capabilities)
		now := ms(p.Now)
		if e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != model.EligibleNow {
			return nil, model.ErrNotEligible
		}
		if grantLive(e, now) {
			return nil, model.ErrGrantAlreadyExists
		}
		if _, l := s.indexesOf(e); !l.eligible.has(e.id) {
			return nil, model.ErrNotInEligibleSet
		}
		if missing := e.requiredCaps.Missing(caps); len(missing) > 0 {
			return nil, model.NewError(model.CodeCapabilityMismatch, missing.CSV())
		}
		e.grant = &grantRec{kind: model.GrantClaim, workerID: p.WorkerID, workerInstanceID: p.WorkerInstanceID,
			createdAt: now, expiresAt: now + p.GrantTTL.Milliseconds()}
		e.lastMutationAt = now
		return &model.ClaimGrantIssueResult{ExpiresAt: tm(e.grant.expiresAt)}, nil
	})
}

// ExecutionClaim implements model.ClaimStore.
func (s *Store) ExecutionClaim(ctx context.Context, p *model.ExecutionClaimParams) (*model.ClaimResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ClaimResult, error) {
		now := ms(p.Now)
		if err := checkClaimable(e); err != nil {
			return nil, err
		}
		if err := checkGrant(e, model.GrantClaim, &p.LeaseRequest, p.Capabilities, now); err != nil {
			return nil, err
		}
		if s.lanePaused(e.lane) {
			return nil, model.ErrLanePaused
		}
		if err := takeAdmission(e, p.AdmissionToken); err != nil {
			return nil, err
		}
		return s.claim(e, &p.LeaseRequest, now), nil
	})
}

// ExecutionGrantAndClaim implements model.ClaimStore.
func (s *Store) ExecutionGrantAndClaim(ctx context.Context, p *model.ExecutionGrantAndClaimParams) (*model.ClaimResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ClaimResult, error) {
		caps, _ := model.NormalizeCapabilities("capabilities", p.Capabilities)
		now := ms(p.Now)
		if e.lifecyclePhase != model.PhaseRunnable || e.terminalOutcome != model.OutcomeNone {
			return nil, model.ErrNotEligible
		}
		if e.ownershipState != model.OwnershipUnowned {
			return nil, model.ErrLeaseConflict
		}
		if e.attemptState == model.AttemptRunning {
			return nil, model.ErrActiveAttemptExists
		}
		if grantLive(e, now) {
			return nil, model.ErrGrantAlreadyExists
		}
		if e.eligibilityState != model.EligibleNow {
			return nil, model.ErrNotEligible
		}
		if _, l := s.indexesOf(e); !l.eligible.has(e.id) {
			return nil, model.ErrNotInEligibleSet
		}
		if missing := e.requiredCaps.Missing(caps); len(missing) > 0 {
			return nil, model.NewError(model.CodeCapabilityMismatch, missing.CSV())
		}
		if s.lanePaused(e.lane) {
			return nil, model.ErrLanePaused
		}
		if err := takeAdmission(e, p.AdmissionToken); err != nil {
			return nil, err
		}
		return s.claim(e, &p.LeaseRequest, now), nil
	})
}

// ExecutionClaimNext implements model.ClaimStore.
func (s *Store) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionClaimNextResult, error) {
		return s.claimNext(p.Partition, &model.NextClaim{Lane: p.Lane, Namespace: p.Namespace, Capabilities: p.Capabilities,
			LiveCapabilities: p.LiveCapabilities, ScanLimit: p.ScanLimit, AdmissionGrantTTL: p.AdmissionGrantTTL,
			Inline: p.Inline, LeaseRequest: p.LeaseRequest}, ms(p.Now)), nil
	})
}

// ExecutionBlock implements model.ClaimStore.
func (s *Store) ExecutionBlock(ctx context.Context, p *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionBlockResult, error) {
		if e.lifecyclePhase == model.PhaseTerminal {
			return nil, e.notActive()
		}
		if e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != model.EligibleNow {
			return nil, model.ErrNotEligible
		}
		if p.Reason == model.WaitingForQuota && model.UUID(e.quota).IsZero() {
			return nil, &model.Error{Code: model.CodeInvalidBlockingReason, Field: "Reason", Detail: "execution_has_no_quota"}
		}
		s.block(e, ms(p.Now), p.Reason, p.Detail, p.Budget)
		return &model.ExecutionBlockResult{EligibilityState: e.eligibilityState}, nil
	})
}

// ExecutionUnblock implements model.ClaimStore.
func (s *Store) ExecutionUnblock(ctx context.Context, p *model.ExecutionUnblockParams) (*model.ExecutionUnblockResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionUnblockResult, error) {
		want, _ := model.BlockedEligibility(p.ExpectedReason)
		if e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != want || e.blockingReason != p.ExpectedReason {
			return nil, model.ErrNotEligible
		}
		s.unblock(e, ms(p.Now))
		return &model.ExecutionUnblockResult{}, nil
	})
}

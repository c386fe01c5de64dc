package valkeystore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// LeaseRenew implements model.LeaseStore.
func (s *Store) LeaseRenew(ctx context.Context, p *model.LeaseRenewParams) (*model.LeaseRenewResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptLeaseRenew, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "lease_ttl": p.LeaseTTL,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.LeaseRenewResult{ExpiresAt: r.time("expires_at"), RenewBy: r.time("renew_by")}
	return res, r.err()
}

// LeaseMarkExpired implements model.LeaseStore.
func (s *Store) LeaseMarkExpired(ctx context.Context, p *model.LeaseMarkExpiredParams) (*model.LeaseMarkExpiredResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptLeaseMarkExpired, s.keys.execKeys(p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.LeaseMarkExpiredResult{Outcome: enum(r, "status", false, model.ParseMarkExpiredOutcome)}
	return res, r.err()
}

// LeaseRevoke implements model.LeaseStore.
func (s *Store) LeaseRevoke(ctx context.Context, p *model.LeaseRevokeParams) (*model.LeaseRevokeResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptLeaseRevoke, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "expected_lease_id": p.ExpectedLeaseID, "reason": p.Reason,
	})
	if err != nil {
		return nil, err
	}
	res := &model.LeaseRevokeResult{
		Outcome:    enum(r, "status", false, model.ParseRevokeOutcome),
		LeaseID:    model.LeaseID(r.uuid("lease_id")),
		LeaseEpoch: r.u64("epoch"),
	}
	return res, r.err()
}

// ReclaimGrantIssue implements model.LeaseStore.
func (s *Store) ReclaimGrantIssue(ctx context.Context, p *model.ReclaimGrantIssueParams) (*model.ReclaimGrantIssueResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptReclaimGrantIssue, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "worker_id": p.WorkerID, "worker_instance_id": p.WorkerInstanceID,
		"capabilities": normCaps("capabilities", p.Capabilities), "grant_ttl": p.GrantTTL,
	})
	if err != nil {
		return nil, err
	}
	res := &model.ReclaimGrantIssueResult{ExpiresAt: r.time("expires_at")}
	return res, r.err()
}

// ExecutionReclaim implements model.LeaseStore.
func (s *Store) ExecutionReclaim(ctx context.Context, p *model.ExecutionReclaimParams) (*model.ExecutionReclaimResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionReclaim, s.keys.execKeys(p.ID), leaseArgs(args{
		"now": p.Now, "id": p.ID, "capabilities": normCaps("capabilities", p.Capabilities),
	}, &p.LeaseRequest))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionReclaimResult{Outcome: enum(r, "status", false, model.ParseReclaimOutcome)}
	if r.has("claimed") {
		res.Claimed = claimResult(r)
	}
	return res, r.err()
}

// ExecutionRecover implements model.LeaseStore.
func (s *Store) ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionRecover, s.keys.execKeys(p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionRecoverResult{Outcome: enum(r, "status", false, model.ParseRecoverOutcome)}
	return res, r.err()
}

package model

import (
	"context"
	"time"
)

// LeaseStore holds the lease transitions and crash recovery.
type LeaseStore interface {
	ExecutionReclaim(ctx context.Context, p *ExecutionReclaimParams) (*ExecutionReclaimResult, error)
	ExecutionRecover(ctx context.Context, p *ExecutionRecoverParams) (*ExecutionRecoverResult, error)
	LeaseMarkExpired(ctx context.Context, p *LeaseMarkExpiredParams) (*LeaseMarkExpiredResult, error)
	LeaseRenew(ctx context.Context, p *LeaseRenewParams) (*LeaseRenewResult, error)
	LeaseRevoke(ctx context.Context, p *LeaseRevokeParams) (*LeaseRevokeResult, error)
	ReclaimGrantIssue(ctx context.Context, p *ReclaimGrantIssueParams) (*ReclaimGrantIssueResult, error)
}

// LeaseRenewParams extends the caller's lease to Now + LeaseTTL.
type LeaseRenewParams struct {
	ID       ExecutionID
	Fence    Fence
	LeaseTTL time.Duration
	Now      time.Time
}

// Validate checks every field.
func (p *LeaseRenewParams) Validate(cfg PartitionConfig) error {
	if err := checkDuration("LeaseTTL", p.LeaseTTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now)
}

// LeaseRenewResult reports a renewal.
type LeaseRenewResult struct {
	ExpiresAt time.Time
	RenewBy   time.Time
}

// LeaseMarkExpiredParams marks an execution whose lease has run out as
// reclaimable.
type LeaseMarkExpiredParams struct {
	ID  ExecutionID
	Now time.Time
}

// Validate checks every field.
func (p *LeaseMarkExpiredParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Mark-expired outcomes.
const (
	MarkExpiredMarked         = "marked_expired"
	MarkExpiredNotFound       = "not_found_cleaned"
	MarkExpiredNotActive      = "not_active_cleaned"
	MarkExpiredUnowned        = "unowned_cleaned"
	MarkExpiredAlreadyExpired = "already_expired"
	MarkExpiredAlreadyRevoked = "already_revoked"
	MarkExpiredNotYet         = "not_yet_expired"
)

// LeaseMarkExpiredResult reports a mark.
type LeaseMarkExpiredResult struct {
	// Status is one of the MarkExpired* outcomes.
	Status string
}

// LeaseRevokeParams takes the lease away from its holder; the execution
// becomes reclaimable.
type LeaseRevokeParams struct {
	ID ExecutionID
	// ExpectedLeaseID, when set, must be the current lease.
	ExpectedLeaseID LeaseID
	Reason          string
	Now             time.Time
}

// Validate checks every field.
func (p *LeaseRevokeParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Revoke outcomes.
const (
	RevokeRevoked        = "revoked"
	RevokeAlreadyRevoked = "already_revoked"
	RevokeAlreadyExpired = "already_expired"
)

// LeaseRevokeResult reports a revoke.
type LeaseRevokeResult struct {
	Status     string
	LeaseID    LeaseID
	LeaseEpoch uint64
}

// ReclaimGrantIssueParams grants one worker the right to reclaim an active
// execution whose lease expired or was revoked.
type ReclaimGrantIssueParams struct {
	ID               ExecutionID
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	Capabilities     Capabilities
	GrantTTL         time.Duration
	Now              time.Time
}

// Validate checks every field.
func (p *ReclaimGrantIssueParams) Validate(cfg PartitionConfig) error {
	return validateGrant(cfg, p.ID, p.WorkerID, p.WorkerInstanceID, p.Capabilities, p.GrantTTL, p.Now)
}

// ReclaimGrantIssueResult reports a reclaim grant.
type ReclaimGrantIssueResult struct {
	ExpiresAt time.Time
}

// ExecutionReclaimParams consumes a reclaim grant: the old attempt ends
// interrupted, a new attempt of type reclaim starts under a new lease with
// the next epoch. As for ExecutionClaimParams, the grant must have been
// issued to the claiming worker instance and its Capabilities must still
// cover the execution's required capabilities.
type ExecutionReclaimParams struct {
	ID ExecutionID
	// Capabilities are the claiming worker's.
	Capabilities Capabilities
	LeaseRequest
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionReclaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Reclaim and recover outcomes.
const (
	ReclaimClaimed     = "claimed"
	ReclaimRequeued    = "requeued"
	ReclaimCapExceeded = "reclaim_cap_exceeded"
)

// ExecutionReclaimResult reports a reclaim.
type ExecutionReclaimResult struct {
	// Status is ReclaimClaimed or ReclaimCapExceeded (the execution then
	// failed terminally with reason "max_reclaims_exceeded").
	Status  string
	Claimed *ClaimResult
}

// ExecutionRecoverParams returns an active execution whose lease expired or
// was revoked to the eligible index, to run again as a new attempt of type
// reclaim. This is the automatic crash recovery the lease-expiry scanner
// performs.
type ExecutionRecoverParams struct {
	ID  ExecutionID
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionRecoverParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionRecoverResult reports a recovery.
type ExecutionRecoverResult struct {
	// Status is ReclaimRequeued or ReclaimCapExceeded.
	Status string
}

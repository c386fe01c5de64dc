package model

import (
	"context"
	"time"
)

// LeaseStore holds the lease transitions and crash recovery.
type LeaseStore interface {
	ExecutionRecover(ctx context.Context, p *ExecutionRecoverParams) (*ExecutionRecoverResult, error)
	LeaseMarkExpired(ctx context.Context, p *LeaseMarkExpiredParams) (*LeaseMarkExpiredResult, error)
	LeaseRenew(ctx context.Context, p *LeaseRenewParams) (*LeaseRenewResult, error)
	LeaseRevoke(ctx context.Context, p *LeaseRevokeParams) (*LeaseRevokeResult, error)
}

// GrantReclaimer is optional (see Store): reclaim by grant, handing an
// execution whose lease expired or was revoked straight to a chosen worker
// (the spec's reclaim grant, then a claim). The engine does not call it: it
// recovers with ExecutionRecover, which returns the execution to the
// eligible index.
type GrantReclaimer interface {
	ReclaimGrantIssue(ctx context.Context, p *ReclaimGrantIssueParams) (*ReclaimGrantIssueResult, error)
	ExecutionReclaim(ctx context.Context, p *ExecutionReclaimParams) (*ExecutionReclaimResult, error)
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

// MarkExpiredOutcome is what LeaseMarkExpired did; its String is the wire
// name.
type MarkExpiredOutcome uint8

// Mark-expired outcomes. Only Marked changes the execution; the *Cleaned
// ones drop its stale lease-expiry index entry.
const (
	MarkExpiredMarked           MarkExpiredOutcome = iota + 1 // "marked_expired": the lease is now expired and the execution reclaimable
	MarkExpiredNotFoundCleaned                                // "not_found_cleaned": no such execution
	MarkExpiredNotActiveCleaned                               // "not_active_cleaned": the execution is not active
	MarkExpiredUnownedCleaned                                 // "unowned_cleaned": no lease is held
	MarkExpiredAlreadyExpired                                 // "already_expired": already marked
	MarkExpiredAlreadyRevoked                                 // "already_revoked": the lease was revoked
	MarkExpiredNotYetExpired                                  // "not_yet_expired": the lease runs past Now
)

var markExpiredOutcomeNames = enumNames{
	"marked_expired", "not_found_cleaned", "not_active_cleaned", "unowned_cleaned",
	"already_expired", "already_revoked", "not_yet_expired",
}

func (v MarkExpiredOutcome) String() string { return markExpiredOutcomeNames.name(uint8(v)) }

// ParseMarkExpiredOutcome parses a wire name.
func ParseMarkExpiredOutcome(s string) (MarkExpiredOutcome, bool) {
	v, ok := markExpiredOutcomeNames.parse(s)
	return MarkExpiredOutcome(v), ok
}

// LeaseMarkExpiredResult reports a mark.
type LeaseMarkExpiredResult struct {
	// Outcome is one of the MarkExpired* outcomes.
	Outcome MarkExpiredOutcome
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

// RevokeOutcome is what LeaseRevoke did; its String is the wire name.
type RevokeOutcome uint8

// Revoke outcomes.
const (
	RevokeRevoked        RevokeOutcome = iota + 1 // "revoked": the lease was taken away
	RevokeAlreadyRevoked                          // "already_revoked": nothing changed
	RevokeAlreadyExpired                          // "already_expired": the lease had expired; nothing changed
)

var revokeOutcomeNames = enumNames{"revoked", "already_revoked", "already_expired"}

func (v RevokeOutcome) String() string { return revokeOutcomeNames.name(uint8(v)) }

// ParseRevokeOutcome parses a wire name.
func ParseRevokeOutcome(s string) (RevokeOutcome, bool) {
	v, ok := revokeOutcomeNames.parse(s)
	return RevokeOutcome(v), ok
}

// LeaseRevokeResult reports a revoke.
type LeaseRevokeResult struct {
	// Outcome is one of the Revoke* outcomes.
	Outcome RevokeOutcome
	// LeaseID is the revoked (or expired) lease; zero for
	// RevokeAlreadyRevoked.
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

// ReclaimOutcome is what ExecutionReclaim did; its String is the wire name.
type ReclaimOutcome uint8

// Reclaim outcomes.
const (
	ReclaimClaimed     ReclaimOutcome = iota + 1 // "claimed": a new attempt runs under Claimed
	ReclaimCapExceeded                           // "reclaim_cap_exceeded": the execution failed terminally, reason "max_reclaims_exceeded"
)

var reclaimOutcomeNames = enumNames{"claimed", "reclaim_cap_exceeded"}

func (v ReclaimOutcome) String() string { return reclaimOutcomeNames.name(uint8(v)) }

// ParseReclaimOutcome parses a wire name.
func ParseReclaimOutcome(s string) (ReclaimOutcome, bool) {
	v, ok := reclaimOutcomeNames.parse(s)
	return ReclaimOutcome(v), ok
}

// ExecutionReclaimResult reports a reclaim.
type ExecutionReclaimResult struct {
	// Outcome is ReclaimClaimed or ReclaimCapExceeded.
	Outcome ReclaimOutcome
	// Claimed is set for ReclaimClaimed only.
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

// RecoverOutcome is what ExecutionRecover did; its String is the wire name.
type RecoverOutcome uint8

// Recover outcomes.
const (
	RecoverRequeued    RecoverOutcome = iota + 1 // "requeued": eligible again, a reclaim attempt pending
	RecoverCapExceeded                           // "reclaim_cap_exceeded": the execution failed terminally, reason "max_reclaims_exceeded"
)

var recoverOutcomeNames = enumNames{"requeued", "reclaim_cap_exceeded"}

func (v RecoverOutcome) String() string { return recoverOutcomeNames.name(uint8(v)) }

// ParseRecoverOutcome parses a wire name.
func ParseRecoverOutcome(s string) (RecoverOutcome, bool) {
	v, ok := recoverOutcomeNames.parse(s)
	return RecoverOutcome(v), ok
}

// ExecutionRecoverResult reports a recovery.
type ExecutionRecoverResult struct {
	// Outcome is RecoverRequeued or RecoverCapExceeded.
	Outcome RecoverOutcome
}

package model

import (
	"context"
	"time"
)

// LaneStore is optional (see Store): pausing and resuming a lane
// (FlowFabric's blocked_by_lane_state / paused_by_policy, issue 14). The
// engine asserts it in Engine.PauseLane, ResumeLane and LaneState.
//
// A paused lane starts no attempt, in any namespace and any partition:
// ExecutionClaimNext (and ExecutionComplete's Next) reports Paused and
// examines nothing; ExecutionClaim, ExecutionGrantAndClaim and
// ExecutionReclaim fail with ErrLanePaused after their other checks,
// writing nothing. Everything else goes on: running attempts renew,
// complete, fail, delay, suspend and are cancelled; executions are
// created, promoted, recovered, unblocked and resumed into the lane's
// eligible index, where they keep their order; grants may still be
// issued (consuming one is a claim, refused while paused). Resume makes
// the lane's eligible work claimable at once and tells a WorkNotifier's
// watchers of the lane (partition PartitionAll), so idle workers look
// without waiting for a poll.
//
// A pause is kept per partition, beside the lane's indexes, so the claim
// path reads it in its own atomic step. The lane's home partition
// (PartitionConfig.SoloPartition) holds the authoritative state; a store
// that cannot write every partition in one step (valkeystore on a
// cluster) writes the home partition first on pause and last on resume,
// so a pause or resume that failed part-way is finished by retrying
// either operation, and LaneState says how many partitions refuse claims.
type LaneStore interface {
	LanePause(ctx context.Context, p *LanePauseParams) (*LanePauseResult, error)
	LaneResume(ctx context.Context, p *LaneResumeParams) (*LaneResumeResult, error)
	LaneState(ctx context.Context, p *LaneStateParams) (*LaneStateResult, error)
}

// LanePauseParams pauses a lane. Pausing a paused lane changes nothing:
// the first pause's time and reason stay.
type LanePauseParams struct {
	Lane LaneID
	// Reason is free text for operators (at most MaxReasonBytes of UTF-8;
	// may be empty).
	Reason string
	Now    time.Time
}

// Validate checks every field.
func (p *LanePauseParams) Validate() error {
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// LanePauseResult reports a pause.
type LanePauseResult struct {
	// AlreadyPaused is true when the lane was paused before the call
	// (State is then the earlier pause's).
	AlreadyPaused bool
	State         LaneState
}

// LaneResumeParams resumes a lane. Resuming a lane that is not paused
// changes nothing (but still tells the watchers).
type LaneResumeParams struct {
	Lane LaneID
	Now  time.Time
}

// Validate checks every field.
func (p *LaneResumeParams) Validate() error {
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// LaneResumeResult reports a resume.
type LaneResumeResult struct {
	// WasPaused is true when the lane was paused before the call.
	WasPaused bool
}

// LaneStateParams reads a lane's pause state.
type LaneStateParams struct {
	Lane LaneID
}

// Validate checks every field.
func (p *LaneStateParams) Validate() error { return p.Lane.Validate() }

// LaneStateResult is a lane's pause state.
type LaneStateResult struct {
	LaneState
}

// LaneState is whether a lane is paused, since when and why.
type LaneState struct {
	Lane   LaneID
	Paused bool
	// PausedAt and Reason are the pause's (zero and empty when not
	// paused).
	PausedAt time.Time
	Reason   string
	// Partitions counts the partitions that refuse claims on the lane:
	// every partition when Paused, none when not, anything else after a
	// pause or resume that failed part-way (retry it to finish).
	Partitions int
}

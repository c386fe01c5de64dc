package model

// The state of an execution is a vector of seven dimensions. Every
// transition writes all of them; PublicState is derived from the others by
// DerivePublicState and never stored on its own.

// enumNames maps an enum's values (starting at 1) to their spec names.
type enumNames []string

func (n enumNames) name(v uint8) string {
	if v == 0 || int(v) > len(n) {
		return ""
	}
	return n[v-1]
}

func (n enumNames) parse(s string) (uint8, bool) {
	for i, name := range n {
		if name == s {
			return uint8(i + 1), true
		}
	}
	return 0, false
}

// LifecyclePhase is where an execution is in its life.
type LifecyclePhase uint8

// Lifecycle phases.
const (
	PhaseSubmitted LifecyclePhase = iota + 1 // enum-only; never stored
	PhaseRunnable
	PhaseActive
	PhaseSuspended
	PhaseTerminal
)

var phaseNames = enumNames{"submitted", "runnable", "active", "suspended", "terminal"}

func (v LifecyclePhase) String() string { return phaseNames.name(uint8(v)) }

// ParseLifecyclePhase parses a spec name.
func ParseLifecyclePhase(s string) (LifecyclePhase, bool) {
	v, ok := phaseNames.parse(s)
	return LifecyclePhase(v), ok
}

// OwnershipState says whether a worker holds the execution.
type OwnershipState uint8

// Ownership states.
const (
	OwnershipUnowned OwnershipState = iota + 1
	OwnershipLeased
	OwnershipLeaseExpiredReclaimable
	OwnershipLeaseRevoked
)

var ownershipNames = enumNames{"unowned", "leased", "lease_expired_reclaimable", "lease_revoked"}

func (v OwnershipState) String() string { return ownershipNames.name(uint8(v)) }

// ParseOwnershipState parses a spec name.
func ParseOwnershipState(s string) (OwnershipState, bool) {
	v, ok := ownershipNames.parse(s)
	return OwnershipState(v), ok
}

// EligibilityState says whether a runnable execution may be claimed now.
type EligibilityState uint8

// Eligibility states.
const (
	EligibleNow EligibilityState = iota + 1
	NotEligibleUntilTime
	BlockedByDependencies
	BlockedByBudget
	BlockedByQuota
	BlockedByRoute
	BlockedByLaneState
	BlockedByOperator
	NotApplicable
)

var eligibilityNames = enumNames{
	"eligible_now", "not_eligible_until_time", "blocked_by_dependencies", "blocked_by_budget",
	"blocked_by_quota", "blocked_by_route", "blocked_by_lane_state", "blocked_by_operator",
	"not_applicable",
}

func (v EligibilityState) String() string { return eligibilityNames.name(uint8(v)) }

// ParseEligibilityState parses a spec name.
func ParseEligibilityState(s string) (EligibilityState, bool) {
	v, ok := eligibilityNames.parse(s)
	return EligibilityState(v), ok
}

// BlockingReason says what a not-yet-running execution waits for.
type BlockingReason uint8

// Blocking reasons.
const (
	BlockingNone BlockingReason = iota + 1
	WaitingForWorker
	WaitingForRetryBackoff
	WaitingForResumeDelay
	WaitingForDelay
	WaitingForSignal
	WaitingForApproval
	WaitingForCallback
	WaitingForToolResult
	WaitingForChildren
	WaitingForBudget
	WaitingForQuota
	WaitingForCapableWorker
	PausedByOperator
	PausedByPolicy
)

var blockingNames = enumNames{
	"none", "waiting_for_worker", "waiting_for_retry_backoff", "waiting_for_resume_delay",
	"waiting_for_delay", "waiting_for_signal", "waiting_for_approval", "waiting_for_callback",
	"waiting_for_tool_result", "waiting_for_children", "waiting_for_budget", "waiting_for_quota",
	"waiting_for_capable_worker", "paused_by_operator", "paused_by_policy",
}

func (v BlockingReason) String() string { return blockingNames.name(uint8(v)) }

// ParseBlockingReason parses a spec name.
func ParseBlockingReason(s string) (BlockingReason, bool) {
	v, ok := blockingNames.parse(s)
	return BlockingReason(v), ok
}

// BlockedEligibility maps an admission blocking reason to the eligibility
// state (and blocked index) it puts an execution in. ok is false for reasons
// that are not admission blocks.
func BlockedEligibility(r BlockingReason) (EligibilityState, bool) {
	switch r {
	case WaitingForBudget:
		return BlockedByBudget, true
	case WaitingForQuota:
		return BlockedByQuota, true
	case WaitingForCapableWorker:
		return BlockedByRoute, true
	case PausedByOperator:
		return BlockedByOperator, true
	case PausedByPolicy:
		return BlockedByLaneState, true
	}
	return 0, false
}

// TerminalOutcome says how a terminal execution ended.
type TerminalOutcome uint8

// Terminal outcomes.
const (
	OutcomeNone TerminalOutcome = iota + 1
	OutcomeSuccess
	OutcomeFailed
	OutcomeCancelled
	OutcomeExpired
	OutcomeSkipped
)

var outcomeNames = enumNames{"none", "success", "failed", "cancelled", "expired", "skipped"}

func (v TerminalOutcome) String() string { return outcomeNames.name(uint8(v)) }

// ParseTerminalOutcome parses a spec name.
func ParseTerminalOutcome(s string) (TerminalOutcome, bool) {
	v, ok := outcomeNames.parse(s)
	return TerminalOutcome(v), ok
}

// AttemptState is the execution-level view of its current attempt.
type AttemptState uint8

// Attempt states.
const (
	AttemptPendingFirst AttemptState = iota + 1
	AttemptRunning
	AttemptInterrupted
	AttemptPendingRetry
	AttemptPendingReplay
	AttemptTerminal
	AttemptNone
)

var attemptStateNames = enumNames{
	"pending_first_attempt", "running_attempt", "attempt_interrupted", "pending_retry_attempt",
	"pending_replay_attempt", "attempt_terminal", "none",
}

func (v AttemptState) String() string { return attemptStateNames.name(uint8(v)) }

// ParseAttemptState parses a spec name.
func ParseAttemptState(s string) (AttemptState, bool) {
	v, ok := attemptStateNames.parse(s)
	return AttemptState(v), ok
}

// PublicState is the one-word state shown to users.
type PublicState uint8

// Public states.
const (
	PublicWaiting PublicState = iota + 1
	PublicDelayed
	PublicRateLimited
	PublicWaitingChildren
	PublicActive
	PublicSuspended
	PublicCompleted
	PublicFailed
	PublicCancelled
	PublicExpired
	PublicSkipped
)

var publicNames = enumNames{
	"waiting", "delayed", "rate_limited", "waiting_children", "active", "suspended",
	"completed", "failed", "cancelled", "expired", "skipped",
}

func (v PublicState) String() string { return publicNames.name(uint8(v)) }

// ParsePublicState parses a spec name.
func ParsePublicState(s string) (PublicState, bool) {
	v, ok := publicNames.parse(s)
	return PublicState(v), ok
}

// IsTerminal reports whether the public state is final.
func (v PublicState) IsTerminal() bool { return v >= PublicCompleted }

// DerivePublicState is the single derivation of the public state.
func DerivePublicState(lp LifecyclePhase, es EligibilityState, to TerminalOutcome) PublicState {
	switch lp {
	case PhaseTerminal:
		switch to {
		case OutcomeSuccess:
			return PublicCompleted
		case OutcomeCancelled:
			return PublicCancelled
		case OutcomeExpired:
			return PublicExpired
		case OutcomeSkipped:
			return PublicSkipped
		default:
			return PublicFailed
		}
	case PhaseSuspended:
		return PublicSuspended
	case PhaseActive:
		return PublicActive
	}
	switch es {
	case NotEligibleUntilTime:
		return PublicDelayed
	case BlockedByDependencies:
		return PublicWaitingChildren
	case BlockedByBudget, BlockedByQuota:
		return PublicRateLimited
	}
	return PublicWaiting
}

// AttemptType says why an attempt was started.
type AttemptType uint8

// Attempt types.
const (
	AttemptInitial AttemptType = iota + 1
	AttemptRetry
	AttemptReplay
	AttemptReclaim
)

var attemptTypeNames = enumNames{"initial", "retry", "replay", "reclaim"}

func (v AttemptType) String() string { return attemptTypeNames.name(uint8(v)) }

// ParseAttemptType parses a spec name.
func ParseAttemptType(s string) (AttemptType, bool) {
	v, ok := attemptTypeNames.parse(s)
	return AttemptType(v), ok
}

// AttemptStatus is the state of one attempt record.
type AttemptStatus uint8

// Attempt statuses.
const (
	AttemptStarted AttemptStatus = iota + 1
	AttemptSuspended
	AttemptEndedSuccess
	AttemptEndedFailure
	AttemptEndedCancelled
	AttemptInterruptedReclaimed
)

var attemptStatusNames = enumNames{
	"started", "suspended", "ended_success", "ended_failure", "ended_cancelled",
	"interrupted_reclaimed",
}

func (v AttemptStatus) String() string { return attemptStatusNames.name(uint8(v)) }

// ParseAttemptStatus parses a spec name.
func ParseAttemptStatus(s string) (AttemptStatus, bool) {
	v, ok := attemptStatusNames.parse(s)
	return AttemptStatus(v), ok
}

// IsOpen reports whether the attempt may still end.
func (v AttemptStatus) IsOpen() bool { return v == AttemptStarted || v == AttemptSuspended }

// StateVector is the seven dimensions plus the blocking detail.
type StateVector struct {
	LifecyclePhase   LifecyclePhase
	OwnershipState   OwnershipState
	EligibilityState EligibilityState
	BlockingReason   BlockingReason
	BlockingDetail   string
	TerminalOutcome  TerminalOutcome
	AttemptState     AttemptState
}

// PublicState derives the public state of the vector.
func (s StateVector) PublicState() PublicState {
	return DerivePublicState(s.LifecyclePhase, s.EligibilityState, s.TerminalOutcome)
}

// Check verifies the structural invariants of lua-semantics §6.1–2 and 7
// that hold for any single vector. It returns a description of the first
// violation, or "".
func (s StateVector) Check() string {
	if s.LifecyclePhase == 0 || s.OwnershipState == 0 || s.EligibilityState == 0 ||
		s.BlockingReason == 0 || s.TerminalOutcome == 0 || s.AttemptState == 0 {
		return "a dimension is unset"
	}
	if (s.LifecyclePhase == PhaseTerminal) != (s.TerminalOutcome != OutcomeNone) {
		return "terminal phase and terminal outcome disagree"
	}
	if s.LifecyclePhase != PhaseRunnable && s.EligibilityState != NotApplicable {
		return "non-runnable execution has an eligibility state"
	}
	if s.LifecyclePhase == PhaseRunnable && s.EligibilityState == NotApplicable {
		return "runnable execution has no eligibility state"
	}
	if s.LifecyclePhase == PhaseActive && s.OwnershipState == OwnershipUnowned {
		return "active execution is unowned"
	}
	if s.LifecyclePhase != PhaseActive && s.OwnershipState != OwnershipUnowned {
		return "inactive execution is owned"
	}
	if (s.AttemptState == AttemptRunning) != (s.LifecyclePhase == PhaseActive && s.OwnershipState == OwnershipLeased) {
		return "running_attempt does not match active and leased"
	}
	return ""
}

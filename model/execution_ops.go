package model

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// ExecutionStore holds the transitions that create and end executions.
type ExecutionStore interface {
	ExecutionCancel(ctx context.Context, p *ExecutionCancelParams) (*ExecutionCancelResult, error)
	ExecutionChangePriority(ctx context.Context, p *ExecutionChangePriorityParams) (*ExecutionChangePriorityResult, error)
	ExecutionComplete(ctx context.Context, p *ExecutionCompleteParams) (*ExecutionCompleteResult, error)
	ExecutionCreate(ctx context.Context, p *ExecutionCreateParams) (*ExecutionCreateResult, error)
	ExecutionDelay(ctx context.Context, p *ExecutionDelayParams) (*ExecutionDelayResult, error)
	ExecutionExpire(ctx context.Context, p *ExecutionExpireParams) (*ExecutionExpireResult, error)
	ExecutionFail(ctx context.Context, p *ExecutionFailParams) (*ExecutionFailResult, error)
	ExecutionReplay(ctx context.Context, p *ExecutionReplayParams) (*ExecutionReplayResult, error)
	ExecutionUpdateProgress(ctx context.Context, p *ExecutionUpdateProgressParams) (*ExecutionUpdateProgressResult, error)
}

// ExecutionCreateParams creates one execution.
type ExecutionCreateParams struct {
	// ID is the new execution's id; its partition decides where it lives.
	ID        ExecutionID
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	Payload   []byte
	// Priority is clamped to [0, 9000]; higher runs first.
	Priority int
	Tags     map[string]string
	// Metadata (headers) is carried from create to every claim and read
	// back with describe; nil or empty means none (ValidateMetadata).
	Metadata             map[string]string
	RequiredCapabilities Capabilities
	RetryPolicy          RetryPolicy
	// MaxReclaims caps crash recoveries (0: DefaultMaxReclaims).
	MaxReclaims int
	// MaxReplays caps replays of the terminal execution (0: DefaultMaxReplays).
	MaxReplays int
	// AttemptTimeout limits each attempt (0: none).
	AttemptTimeout time.Duration
	// Deadline expires the execution, whatever its phase, when reached
	// (zero: none).
	Deadline time.Time
	// DelayUntil makes the execution eligible only from then on; a time not
	// after Now means eligible now.
	DelayUntil time.Time
	// IdempotencyKey, when set, makes a second create with the same key in
	// the same namespace and partition within IdempotencyTTL return the
	// first id. (The engine derives the partition from the lane, or from the
	// key itself for spread lanes, so a key is scoped to namespace and lane.)
	IdempotencyKey string
	// IdempotencyTTL defaults to DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// IdempotencyStates, when set (only with IdempotencyKey), are the
	// public states in which the execution the key names still blocks a
	// new one: a create whose key names an execution in another state
	// (say completed), or one no longer stored, creates a new execution
	// and points the key at it for IdempotencyTTL. Empty: the key blocks
	// whatever the state, until it expires. (A set of bits rather than a
	// slice keeps these params in their allocation size class.)
	IdempotencyStates PublicStateSet
	// Flow, when set, creates the execution as a member of that flow,
	// held (see FlowStore) in the same step, so no worker can claim it
	// between its creation and its joining. ID must name the flow's
	// partition. Errors (after a duplicate is reported, so a retried
	// create still finds its first answer): ErrFlowNotFound,
	// ErrFlowTerminal, ErrFlowSealed. Stores without FlowStore refuse it
	// as invalid input.
	Flow FlowID
	// Budgets are checked by the claim path before each attempt: while
	// one is exhausted the execution is blocked on it (AdmissionStore).
	// At most MaxExecutionBudgets, distinct.
	Budgets []BudgetID
	// Quota, when set, admits each attempt to the bucket QuotaKey of that
	// quota policy before its claim (AdmissionStore). QuotaKey is set
	// only with Quota.
	Quota    QuotaID
	QuotaKey string
	// Retention is how long the execution is kept once terminal, per
	// outcome (RetentionStore); zero fields keep it for good.
	Retention Retention
	Now       time.Time
}

// Validate checks every field.
func (p *ExecutionCreateParams) Validate(cfg PartitionConfig) error {
	if err := p.Retention.Validate("Retention"); err != nil {
		return err
	}
	if err := validateBudgets("Budgets", p.Budgets); err != nil {
		return err
	}
	if UUID(p.Quota).IsZero() && p.QuotaKey != "" {
		return invalidField("QuotaKey", "set_without_quota")
	}
	if err := ValidateQuotaKey("QuotaKey", p.QuotaKey); err != nil {
		return err
	}
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if !p.Flow.IsZero() {
		if err := checkMember(cfg, "ID", p.ID, p.Flow); err != nil {
			return err
		}
	}
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	if err := p.Kind.Validate(); err != nil {
		return err
	}
	if len(p.Payload) > MaxPayloadBytes {
		return invalidField("Payload", "too_large")
	}
	if err := ValidateTags(p.Tags); err != nil {
		return err
	}
	if err := ValidateMetadata(p.Metadata); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("RequiredCapabilities", p.RequiredCapabilities); err != nil {
		return err
	}
	if err := p.RetryPolicy.Validate(); err != nil {
		return err
	}
	if p.MaxReclaims < 0 || p.MaxReclaims > 1_000_000 {
		return OutOfRange("MaxReclaims", p.MaxReclaims, "0..1000000 (0 means the default)")
	}
	if p.MaxReplays < 0 || p.MaxReplays > 1_000_000 {
		return OutOfRange("MaxReplays", p.MaxReplays, "0..1000000 (0 means the default)")
	}
	if err := checkDuration("AttemptTimeout", p.AttemptTimeout, 0, MaxPolicyDelay); err != nil {
		return err
	}
	if p.AttemptTimeout > 0 && p.AttemptTimeout < time.Millisecond {
		return OutOfRange("AttemptTimeout", p.AttemptTimeout, "0 (none) or 1ms.."+MaxPolicyDelay.String())
	}
	if err := checkOptionalTime("Deadline", p.Deadline); err != nil {
		return err
	}
	if err := checkOptionalTime("DelayUntil", p.DelayUntil); err != nil {
		return err
	}
	if err := ValidateIdempotencyKey(p.IdempotencyKey); err != nil {
		return err
	}
	if p.IdempotencyTTL != 0 {
		if err := checkDuration("IdempotencyTTL", p.IdempotencyTTL, time.Second, MaxIdempotencyTTL); err != nil {
			return err
		}
	}
	if err := validateIdempotencyStates(p.IdempotencyStates, p.IdempotencyKey); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// validateIdempotencyStates checks ExecutionCreateParams.IdempotencyStates:
// known public states, and only with a key.
func validateIdempotencyStates(states PublicStateSet, key string) error {
	if states == 0 {
		return nil
	}
	if key == "" {
		return invalidField("IdempotencyStates", "set_without_idempotency_key")
	}
	if bad := states &^ allPublicStates; bad != 0 {
		return &Error{Code: CodeInvalidInput, Field: "IdempotencyStates", Detail: "unknown_state",
			Got: "bits " + strconv.FormatUint(uint64(bad), 2), Want: "public states (PublicWaiting..PublicSkipped)"}
	}
	return nil
}

// PublicStateSet is a set of public states, one bit each (1 << state).
type PublicStateSet uint16

// allPublicStates holds every public state.
const allPublicStates = PublicStateSet(1<<(PublicSkipped+1)) - 1<<PublicWaiting

// PublicStates returns the set of states. A value that is not a public
// state makes a set that fails validation.
func PublicStates(states ...PublicState) PublicStateSet {
	var s PublicStateSet
	for _, st := range states {
		if st >= 16 {
			st = 0 // never a public state
		}
		s |= 1 << st
	}
	return s
}

// Has reports whether st is in the set.
func (s PublicStateSet) Has(st PublicState) bool { return st < 16 && s&(1<<st) != 0 }

// String lists the set's states by name, comma-separated, in state order
// ("waiting,active"); unknown bits are shown as numbers.
func (s PublicStateSet) String() string {
	var b strings.Builder
	for st := range PublicState(16) {
		if !s.Has(st) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if name := st.String(); name != "" {
			b.WriteString(name)
		} else {
			b.WriteString(strconv.Itoa(int(st)))
		}
	}
	return b.String()
}

// IdempotencyStatesText is the text of a set as stores match a state's
// name in it: a comma before and after each name (",waiting,active,");
// "" for the empty set.
func IdempotencyStatesText(s PublicStateSet) string {
	if s == 0 {
		return ""
	}
	return "," + s.String() + ","
}

// ExecutionCreateResult reports a create.
type ExecutionCreateResult struct {
	ID ExecutionID
	// Duplicate is true when the idempotency key or the id already existed;
	// ID is then the existing execution.
	Duplicate   bool
	PublicState PublicState
}

// ExecutionCancelParams cancels an execution in any non-terminal phase. A
// worker cancels its own active execution with its fence; an operator
// (SourceOperator) cancels anything without one.
type ExecutionCancelParams struct {
	ID     ExecutionID
	Reason string
	Source Source
	Fence  Fence
	Now    time.Time
}

// Validate checks every field.
func (p *ExecutionCancelParams) Validate(cfg PartitionConfig) error {
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// ExecutionCancelResult reports a cancel.
type ExecutionCancelResult struct {
	PriorPhase LifecyclePhase
	// Replayed is true when the same caller had already cancelled it.
	Replayed bool
}

// ExecutionChangePriorityParams changes the priority of a non-terminal
// execution; an eligible one is re-ordered at once.
type ExecutionChangePriorityParams struct {
	ID       ExecutionID
	Priority int
	Now      time.Time
}

// Validate checks every field.
func (p *ExecutionChangePriorityParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionChangePriorityResult reports the old and new (clamped) priority.
type ExecutionChangePriorityResult struct {
	Old, New int
}

// ExecutionCompleteParams completes the caller's active execution.
type ExecutionCompleteParams struct {
	ID     ExecutionID
	Fence  Fence
	Source Source
	// Result is stored as given (binary-safe), at most MaxResultBytes.
	Result []byte
	// Next, when set, claims the worker's next execution in the same atomic
	// step, as ExecutionClaimNext would on the completed execution's
	// partition: a worker keeps its slot busy with one store call per
	// execution instead of two. It runs only when the completion applies:
	// a replayed completion (Result.Replayed) claims nothing and returns no
	// Next, because the request may be a retransmission whose claim, with
	// the same lease and attempt ids, already happened.
	Next *NextClaim
	Now  time.Time
}

// Validate checks every field.
func (p *ExecutionCompleteParams) Validate(cfg PartitionConfig) error {
	if len(p.Result) > MaxResultBytes {
		return invalidField("Result", "too_large")
	}
	if p.Next != nil {
		if err := p.Next.validate(); err != nil {
			return err
		}
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// NextClaim asks for the next execution within a completion. It has the
// meaning of ExecutionClaimNextParams, on the completed execution's
// partition.
type NextClaim struct {
	Lane LaneID
	// Namespace, when set, restricts the claim to executions of that
	// namespace (see ExecutionClaimNextParams.Namespace).
	Namespace        Namespace
	Capabilities     Capabilities
	LiveCapabilities Capabilities
	ScanLimit        int
	// AdmissionGrantTTL and Inline are as in ExecutionClaimNextParams.
	AdmissionGrantTTL time.Duration
	Inline            *InlineAdmission
	LeaseRequest
}

func (n *NextClaim) validate() error {
	prefix := func(err error) error {
		var e *Error
		if errors.As(err, &e) {
			c := *e
			c.Field = "Next." + c.Field
			return &c
		}
		return err
	}
	if err := n.Lane.Validate(); err != nil {
		return prefix(err)
	}
	if n.Namespace != "" {
		if err := n.Namespace.Validate(); err != nil {
			return prefix(err)
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", n.Capabilities); err != nil {
		return prefix(err)
	}
	if _, err := NormalizeCapabilities("LiveCapabilities", n.LiveCapabilities); err != nil {
		return prefix(err)
	}
	if err := checkLimit("ScanLimit", n.ScanLimit); err != nil {
		return prefix(err)
	}
	if err := checkDuration("AdmissionGrantTTL", n.AdmissionGrantTTL, 0, MaxGrantTTL); err != nil {
		return prefix(err)
	}
	if err := n.Inline.validate(); err != nil {
		return prefix(err)
	}
	return prefix(n.LeaseRequest.validate())
}

// ExecutionCompleteResult reports a completion.
type ExecutionCompleteResult struct {
	// Replayed is true when the same lease had already completed it.
	Replayed bool
	// Next is the outcome of Params.Next (nil when it was not asked for).
	Next *ExecutionClaimNextResult
}

// ExecutionDelayParams hands the caller's active execution back until
// DelayUntil; the same attempt resumes when it is claimed again.
type ExecutionDelayParams struct {
	ID         ExecutionID
	Fence      Fence
	Source     Source
	DelayUntil time.Time
	Now        time.Time
}

// Validate checks every field.
func (p *ExecutionDelayParams) Validate(cfg PartitionConfig) error {
	if p.DelayUntil.IsZero() {
		return invalidField("DelayUntil", "missing")
	}
	if err := checkOptionalTime("DelayUntil", p.DelayUntil); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// ExecutionDelayResult reports a delay.
type ExecutionDelayResult struct {
	DelayUntil time.Time
	Replayed   bool
}

// ExecutionExpireParams expires an execution whose attempt timeout or
// execution deadline has passed. It does nothing to an execution that is not
// due (the index entry may be stale).
type ExecutionExpireParams struct {
	ID     ExecutionID
	Reason ExpireReason
	Now    time.Time
}

// Validate checks every field.
func (p *ExecutionExpireParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if p.Reason != ExpireAttemptTimeout && p.Reason != ExpireExecutionDeadline {
		return invalidField("Reason", "unknown")
	}
	return checkNow(p.Now)
}

// ExpireOutcome is what ExecutionExpire did. Its String is the name the
// stores use on the wire (valkeystore's Lua returns it), such as
// "not_found_cleaned"; ParseExpireOutcome reads it back.
type ExpireOutcome uint8

// Expire outcomes. Only Expired and RetryScheduled change the execution;
// the others leave it as it is, and all but NotYetDue drop its stale
// timer-index entry.
const (
	ExpireExpired          ExpireOutcome = iota + 1 // "expired": the execution ended terminal, outcome expired
	ExpireRetryScheduled                            // "retry_scheduled": an attempt timeout with retries left scheduled a retry (category timeout)
	ExpireNotFoundCleaned                           // "not_found_cleaned": no such execution
	ExpireAlreadyTerminal                           // "already_terminal": it had already ended
	ExpireNotActiveCleaned                          // "not_active_cleaned": nothing to expire (no active attempt with a timeout, or no deadline)
	ExpireNotYetDue                                 // "not_yet_due": the timeout or deadline is later than Now
)

var expireOutcomeNames = enumNames{
	"expired", "retry_scheduled", "not_found_cleaned", "already_terminal", "not_active_cleaned", "not_yet_due",
}

func (v ExpireOutcome) String() string { return expireOutcomeNames.name(uint8(v)) }

// ParseExpireOutcome parses a wire name.
func ParseExpireOutcome(s string) (ExpireOutcome, bool) {
	v, ok := expireOutcomeNames.parse(s)
	return ExpireOutcome(v), ok
}

// ExecutionExpireResult reports an expiry.
type ExecutionExpireResult struct {
	// Outcome is one of the Expire* outcomes.
	Outcome ExpireOutcome
	// PriorPhase is the lifecycle phase before the call (zero when the
	// execution does not exist).
	PriorPhase LifecyclePhase
	// DelayUntil is when the scheduled retry becomes eligible
	// (ExpireRetryScheduled only).
	DelayUntil time.Time
}

// ExecutionFailParams fails the caller's current attempt.
type ExecutionFailParams struct {
	ID       ExecutionID
	Fence    Fence
	Source   Source
	Reason   string
	Category FailureCategory
	Now      time.Time
}

// Validate checks every field.
func (p *ExecutionFailParams) Validate(cfg PartitionConfig) error {
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	if err := ValidateFailureCategory(p.Category); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// FailOutcome is what ExecutionFail did; its String is the wire name.
type FailOutcome uint8

// Fail outcomes.
const (
	FailRetryScheduled FailOutcome = iota + 1 // "retry_scheduled": the policy allows a retry after DelayUntil
	FailTerminal                              // "terminal_failed": the execution ended terminal, outcome failed
)

var failOutcomeNames = enumNames{"retry_scheduled", "terminal_failed"}

func (v FailOutcome) String() string { return failOutcomeNames.name(uint8(v)) }

// ParseFailOutcome parses a wire name.
func ParseFailOutcome(s string) (FailOutcome, bool) {
	v, ok := failOutcomeNames.parse(s)
	return FailOutcome(v), ok
}

// ExecutionFailResult reports a failure.
type ExecutionFailResult struct {
	// Outcome is FailRetryScheduled or FailTerminal; a replay reports the
	// first call's outcome.
	Outcome FailOutcome
	// DelayUntil is when the retry becomes eligible (FailRetryScheduled
	// only).
	DelayUntil time.Time
	Replayed   bool
}

// ExecutionReplayParams makes a terminal execution runnable again with a new
// attempt of type replay.
type ExecutionReplayParams struct {
	ID          ExecutionID
	Reason      string
	RequestedBy string
	Now         time.Time
}

// Validate checks every field.
func (p *ExecutionReplayParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	if err := ValidateText("RequestedBy", p.RequestedBy); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionReplayResult reports a replay.
type ExecutionReplayResult struct {
	PublicState PublicState
}

// ExecutionUpdateProgressParams records progress of the caller's attempt.
type ExecutionUpdateProgressParams struct {
	ID      ExecutionID
	Fence   Fence
	Percent int // 0–100
	Message string
	Now     time.Time
}

// Validate checks every field.
func (p *ExecutionUpdateProgressParams) Validate(cfg PartitionConfig) error {
	if p.Percent < 0 || p.Percent > 100 {
		return OutOfRange("Percent", p.Percent, "0..100")
	}
	if err := ValidateText("Message", p.Message); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now)
}

// ExecutionUpdateProgressResult is empty.
type ExecutionUpdateProgressResult struct{}

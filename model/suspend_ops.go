package model

import (
	"context"
	"strconv"
	"time"
)

// SuspendStore holds suspension, waitpoints and signals (issue 11): a
// running attempt parks until outside signals — an approval, a webhook, a
// tool result — satisfy its resume condition, and the next claim resumes
// the same attempt.
//
// The life of a waitpoint: a running attempt creates it pending
// (WaitpointCreate) so its token can be sent out before the attempt
// suspends, and signals delivered to it meanwhile are buffered; a
// suspension binds it (or creates a fresh one) and it is active; it closes
// when its suspension ends, when it expires pending (WaitpointExpire), or
// when its execution ends. Tokens are not the store's business: the engine
// verifies a token (KeyRing.Verify, no store read) and calls SignalDeliver
// with what the token names.
//
// The life of a suspension: ExecutionSuspend opens it from a running
// attempt (the lease is released, the attempt is paused, the execution is
// suspended: lane index "suspended", the partition's suspended list, and
// IndexSuspensionTimeout when it has a timeout; ExecutionIndexes names
// them "lane:<lane>:suspended", "suspended" and "suspension_timeout", and
// IndexWaitpointExpiry "pending_waitpoint_expiry"); a signal that satisfies
// its condition, ExecutionResume (an operator) or a timeout with
// TimeoutAutoResume resumes it: the execution is runnable again (eligible,
// or delayed by the policy's Delay) with attempt state
// AttemptInterrupted, and its next claim resumes the same attempt
// (ClaimResult.Resumed, epoch + 1). A timeout may instead fail, cancel or
// expire the execution, or escalate (the suspension stays open for an
// operator, without a timeout). Any terminal transition of a suspended
// execution (cancel, expire at the deadline, a flow skip or cancel)
// closes its suspension; any terminal transition closes every open
// waitpoint of the execution. An execution keeps its open suspension or,
// once closed, its last one with the signals it saw
// (SuspensionDescribe), until it suspends again.
//
// Both stores implement it; the conformance suite skips its tests without
// it and the differential requires it.
type SuspendStore interface {
	WaitpointCreate(ctx context.Context, p *WaitpointCreateParams) (*WaitpointCreateResult, error)
	ExecutionSuspend(ctx context.Context, p *ExecutionSuspendParams) (*ExecutionSuspendResult, error)
	SignalDeliver(ctx context.Context, p *SignalDeliverParams) (*SignalDeliverResult, error)
	ExecutionResume(ctx context.Context, p *ExecutionResumeParams) (*ExecutionResumeResult, error)
	SuspensionExpire(ctx context.Context, p *SuspensionExpireParams) (*SuspensionExpireResult, error)
	WaitpointExpire(ctx context.Context, p *WaitpointExpireParams) (*WaitpointExpireResult, error)
	SuspensionDescribe(ctx context.Context, p *SuspensionDescribeParams) (*SuspensionSnapshot, error)
	WaitpointList(ctx context.Context, p *WaitpointListParams) (*WaitpointListResult, error)
	SuspendedList(ctx context.Context, p *SuspendedListParams) (*SuspendedListResult, error)
	SignalFeed(ctx context.Context, p *SignalFeedParams) (*SignalFeedResult, error)
}

// Limits of suspension, waitpoints and signals.
const (
	// MaxOpenWaitpoints bounds the open (pending or active) waitpoints of
	// one execution.
	MaxOpenWaitpoints = 16
	// DefaultSignalLimit is a waitpoint's SignalLimit when none is given.
	DefaultSignalLimit = 100
	// MaxSignalLimit bounds a waitpoint's SignalLimit.
	MaxSignalLimit = 10000
	// MaxSignalPayloadBytes bounds one signal's payload.
	MaxSignalPayloadBytes = 64 << 10
	// MaxSignalSourceBytes bounds a signal's Source.
	MaxSignalSourceBytes = 256
	// DefaultSignalDedupTTL is how long a signal's idempotency key is
	// remembered when SignalDeliverParams.DedupTTL is zero.
	DefaultSignalDedupTTL = 24 * time.Hour
	// MaxSignalDedupTTL bounds DedupTTL.
	MaxSignalDedupTTL = 30 * 24 * time.Hour
	// MaxWaitpointTTL bounds how far ahead a pending waitpoint expires.
	MaxWaitpointTTL = 365 * 24 * time.Hour
	// MaxSuspendTimeout bounds how far ahead a suspension times out.
	MaxSuspendTimeout = 365 * 24 * time.Hour
	// SignalFeedLen is how many signal-delivery events a partition's
	// feed keeps (the oldest are dropped).
	SignalFeedLen = 10000
)

// SuspendReason says what a suspended execution waits for; it sets the
// execution's blocking reason.
type SuspendReason uint8

// Suspend reasons.
const (
	SuspendForSignal         SuspendReason = iota + 1 // "signal": BlockingReason waiting_for_signal
	SuspendForApproval                                // "approval": waiting_for_approval
	SuspendForCallback                                // "callback": waiting_for_callback
	SuspendForToolResult                              // "tool_result": waiting_for_tool_result
	SuspendForOperatorReview                          // "operator_review": paused_by_operator (also where an escalated timeout leaves it)
)

var suspendReasonNames = enumNames{"signal", "approval", "callback", "tool_result", "operator_review"}

func (v SuspendReason) String() string { return suspendReasonNames.name(uint8(v)) }

// ParseSuspendReason parses a wire name.
func ParseSuspendReason(s string) (SuspendReason, bool) {
	v, ok := suspendReasonNames.parse(s)
	return SuspendReason(v), ok
}

// BlockingReason is the blocking reason a suspension for r stores.
func (v SuspendReason) BlockingReason() BlockingReason {
	switch v {
	case SuspendForApproval:
		return WaitingForApproval
	case SuspendForCallback:
		return WaitingForCallback
	case SuspendForToolResult:
		return WaitingForToolResult
	case SuspendForOperatorReview:
		return PausedByOperator
	}
	return WaitingForSignal
}

// TimeoutBehavior is what a suspension's timeout does.
type TimeoutBehavior uint8

// Timeout behaviours. The zero value is TimeoutFail.
const (
	// TimeoutFail ends the execution failed (reason
	// "suspension_timeout", category timeout; not retried).
	TimeoutFail TimeoutBehavior = iota + 1 // "fail"
	// TimeoutCancel ends it cancelled (reason "suspension_timeout").
	TimeoutCancel // "cancel"
	// TimeoutExpire ends it expired.
	TimeoutExpire // "expire"
	// TimeoutAutoResume resumes it as a satisfying signal would.
	TimeoutAutoResume // "auto_resume"
	// TimeoutEscalate leaves it suspended for an operator: reason
	// SuspendForOperatorReview, no timeout any more; signals that satisfy
	// the condition still resume it.
	TimeoutEscalate // "escalate"
)

var timeoutBehaviorNames = enumNames{"fail", "cancel", "expire", "auto_resume", "escalate"}

func (v TimeoutBehavior) String() string { return timeoutBehaviorNames.name(uint8(v)) }

// ParseTimeoutBehavior parses a wire name.
func ParseTimeoutBehavior(s string) (TimeoutBehavior, bool) {
	v, ok := timeoutBehaviorNames.parse(s)
	return TimeoutBehavior(v), ok
}

// ResumePolicy says what resuming does besides making the execution
// runnable. The zero value resumes at once and closes the suspension's
// waitpoints.
type ResumePolicy struct {
	// Delay holds the resumed execution delayed (blocking reason
	// waiting_for_resume_delay) this long before it may be claimed.
	Delay time.Duration
	// KeepWaitpoints returns the suspension's waitpoints to pending
	// (with their expiry: each keeps the ExpiresAt it was created with;
	// the suspension's fresh waitpoint, which had none, expires
	// MaxWaitpointTTL after it was created) instead of closing them, so
	// the resumed attempt can suspend on them again.
	KeepWaitpoints bool
	// KeepSignals (with KeepWaitpoints) leaves the signals the kept
	// waitpoints hold buffered for the next suspension; without it they
	// are consumed and the next suspension starts from none.
	KeepSignals bool
}

// Validate checks every field.
func (p *ResumePolicy) Validate(field string) error {
	if err := checkDuration(field+".Delay", p.Delay, 0, MaxSuspendTimeout); err != nil {
		return err
	}
	if p.Delay%time.Millisecond != 0 {
		return &Error{Code: CodeInvalidInput, Field: field + ".Delay", Detail: "sub_millisecond", Got: p.Delay.String()}
	}
	if p.KeepSignals && !p.KeepWaitpoints {
		return invalidField(field+".KeepSignals", "needs_keep_waitpoints")
	}
	return nil
}

// WaitpointState is where a waitpoint is in its life.
type WaitpointState uint8

// Waitpoint states.
const (
	WaitpointPending WaitpointState = iota + 1 // "pending": created by a running attempt; buffers signals
	WaitpointActive                            // "active": bound to the open suspension
	WaitpointClosed                            // "closed": takes no more signals
)

var waitpointStateNames = enumNames{"pending", "active", "closed"}

func (v WaitpointState) String() string { return waitpointStateNames.name(uint8(v)) }

// ParseWaitpointState parses a wire name.
func ParseWaitpointState(s string) (WaitpointState, bool) {
	v, ok := waitpointStateNames.parse(s)
	return WaitpointState(v), ok
}

// CloseReason says why a suspension or a waitpoint closed.
type CloseReason uint8

// Close reasons.
const (
	ClosedBySignal      CloseReason = iota + 1 // "signal": a signal satisfied the condition
	ClosedSatisfied                            // "satisfied": buffered signals satisfied it at suspend (AlreadySatisfied)
	ClosedByOperator                           // "operator": ExecutionResume
	ClosedTimeoutResume                        // "timeout_resume": TimeoutAutoResume
	ClosedTimeoutFail                          // "timeout_fail"
	ClosedTimeoutCancel                        // "timeout_cancel"
	ClosedTimeoutExpire                        // "timeout_expire"
	ClosedCancelled                            // "cancelled": the execution was cancelled (an operator, its flow)
	ClosedExpired                              // "expired": the execution expired (deadline)
	ClosedSkipped                              // "skipped": a flow skipped the execution
	ClosedEnded                                // "ended": a waitpoint only: its execution ended while it was pending
	ClosedWaitpointTTL                         // "waitpoint_expired": a waitpoint only: it expired pending
)

var closeReasonNames = enumNames{
	"signal", "satisfied", "operator", "timeout_resume", "timeout_fail", "timeout_cancel",
	"timeout_expire", "cancelled", "expired", "skipped", "ended", "waitpoint_expired",
}

func (v CloseReason) String() string { return closeReasonNames.name(uint8(v)) }

// ParseCloseReason parses a wire name.
func ParseCloseReason(s string) (CloseReason, bool) {
	v, ok := closeReasonNames.parse(s)
	return CloseReason(v), ok
}

// SignalEffect is what a delivered signal did.
type SignalEffect uint8

// Signal effects.
const (
	// SignalBuffered: held by a pending waitpoint for the suspension
	// that binds it.
	SignalBuffered SignalEffect = iota + 1 // "buffered"
	// SignalAccepted: counted toward the open suspension's condition,
	// which is not yet satisfied.
	SignalAccepted // "accepted"
	// SignalResumed: it satisfied the condition and the execution
	// resumed.
	SignalResumed // "resumed"
	// SignalDuplicate: its idempotency key was seen within the dedup TTL;
	// nothing was written, and Signal is the first delivery's id.
	SignalDuplicate // "duplicate"
	// SignalIgnored: recorded, but no part of the condition reads it
	// (IgnoredReason says why).
	SignalIgnored // "ignored"
)

var signalEffectNames = enumNames{"buffered", "accepted", "resumed", "duplicate", "ignored"}

func (v SignalEffect) String() string { return signalEffectNames.name(uint8(v)) }

// ParseSignalEffect parses a wire name.
func ParseSignalEffect(s string) (SignalEffect, bool) {
	v, ok := signalEffectNames.parse(s)
	return SignalEffect(v), ok
}

// Why a signal was ignored (SignalDeliverResult.IgnoredReason).
const (
	IgnoredNotInCondition = "not_in_condition" // no leaf reads its waitpoint and name
	IgnoredOperatorOnly   = "operator_only"    // the condition is CondOperator
	IgnoredTimeoutOnly    = "timeout_only"     // the condition is CondTimeout
)

// WaitpointCreateParams creates a pending waitpoint for the caller's
// running attempt (fenced), so its token can go out before the attempt
// suspends. It stays pending — buffering the signals delivered to it —
// until a suspension binds it, it expires at ExpiresAt (WaitpointExpire
// closes it, reason ClosedWaitpointTTL), or its execution ends (ClosedEnded).
// A retry with the same Waitpoint id while it is still a pending
// waitpoint of this execution and the lease is still held replays
// (Replayed, the first CreatedAt).
//
// Errors: the fence checks of a fenced operation; a validation error
// naming Waitpoint (Detail "exists") when a waitpoint with that id exists
// in the partition; ErrWaitpointLimit when the execution has
// MaxOpenWaitpoints open.
type WaitpointCreateParams struct {
	ID        ExecutionID
	Fence     Fence
	Waitpoint WaitpointID
	// ExpiresAt closes the waitpoint if no suspension bound it by then:
	// after Now, at most MaxWaitpointTTL ahead.
	ExpiresAt time.Time
	// SignalLimit bounds the signals the waitpoint takes (0:
	// DefaultSignalLimit; at most MaxSignalLimit).
	SignalLimit int
	Now         time.Time
}

// Validate checks every field.
func (p *WaitpointCreateParams) Validate(cfg PartitionConfig) error {
	if err := checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now); err != nil {
		return err
	}
	if p.Waitpoint.IsZero() {
		return invalidField("Waitpoint", "empty")
	}
	if err := checkSignalLimit(p.SignalLimit); err != nil {
		return err
	}
	return checkAhead("ExpiresAt", p.ExpiresAt, p.Now, MaxWaitpointTTL, true)
}

func checkSignalLimit(n int) error {
	if n < 0 || n > MaxSignalLimit {
		return OutOfRange("SignalLimit", n, "0.."+strconv.Itoa(MaxSignalLimit))
	}
	return nil
}

// checkAhead checks a time that must lie after now and at most max ahead
// (zero allowed unless required).
func checkAhead(field string, t, now time.Time, maxAhead time.Duration, required bool) error {
	if t.IsZero() {
		if required {
			return invalidField(field, "missing")
		}
		return nil
	}
	if err := checkOptionalTime(field, t); err != nil {
		return err
	}
	if t.UnixMilli() <= now.UnixMilli() || t.Sub(now) > maxAhead {
		return OutOfRange(field, t.UTC().Format(time.RFC3339Nano), "after Now, at most "+maxAhead.String()+" ahead")
	}
	return nil
}

// WaitpointCreateResult reports a created waitpoint. CreatedAt (whole
// milliseconds) is what its token signs.
type WaitpointCreateResult struct {
	CreatedAt time.Time
	Replayed  bool
}

// SuspendOutcome is what ExecutionSuspend did.
type SuspendOutcome uint8

// Suspend outcomes.
const (
	// Suspended: the execution is suspended and its lease released.
	Suspended SuspendOutcome = iota + 1 // "suspended"
	// SuspendAlreadySatisfied: the buffered signals of the bound pending
	// waitpoints already satisfy the condition. The waitpoints and the
	// suspension are recorded closed (ClosedSatisfied) with those
	// signals, and the attempt keeps its lease and goes on (scenario 15).
	SuspendAlreadySatisfied // "already_satisfied"
)

var suspendOutcomeNames = enumNames{"suspended", "already_satisfied"}

func (v SuspendOutcome) String() string { return suspendOutcomeNames.name(uint8(v)) }

// ParseSuspendOutcome parses a wire name.
func ParseSuspendOutcome(s string) (SuspendOutcome, bool) {
	v, ok := suspendOutcomeNames.parse(s)
	return SuspendOutcome(v), ok
}

// ExecutionSuspendParams suspends the caller's running attempt (fenced)
// until Condition is satisfied, an operator resumes it, or TimeoutAt.
//
// The suspension's own waitpoint (what a condition's zero Waitpoint
// means) is Waitpoint: with UsePending a pending waitpoint of this
// execution, otherwise a new id for a fresh one (active at once, created
// at Now, with SignalLimit). Every other waitpoint the condition names
// must be a pending waitpoint of this execution; the suspension binds
// them all, and the buffered signals of every bound waitpoint count, in
// delivery order, before any new one. Suspend (either outcome) first
// drops the execution's previous suspension and every closed waitpoint of
// the execution, with their signals.
//
// A call whose Suspension id is the execution's current or last
// suspension replays (Replayed, the stored outcome), whatever the
// execution's state now, so a retry after a lost reply is safe: this is
// checked first, before the fence.
//
// Errors, in this order: the fence checks of a fenced operation;
// with UsePending ErrWaitpointNotFound (Field "Waitpoint"; also for a
// waitpoint of another execution) or ErrWaitpointNotPending; without, a
// validation error naming Waitpoint (Detail "exists") when a waitpoint
// with that id exists in the partition, and ErrWaitpointLimit when a fresh waitpoint would
// exceed MaxOpenWaitpoints; for another waitpoint the condition names,
// ErrWaitpointNotFound or ErrWaitpointNotPending with Field "Condition"
// and the id as Detail. Nothing is written on any error.
type ExecutionSuspendParams struct {
	ID         ExecutionID
	Fence      Fence
	Suspension SuspensionID
	Waitpoint  WaitpointID
	UsePending bool
	Reason     SuspendReason
	Condition  ResumeCondition
	// TimeoutAt applies TimeoutBehavior (zero: no timeout); after Now, at
	// most MaxSuspendTimeout ahead. CondTimeout needs one.
	TimeoutAt       time.Time
	TimeoutBehavior TimeoutBehavior // zero: TimeoutFail
	Policy          ResumePolicy
	// SignalLimit of a fresh waitpoint (0: DefaultSignalLimit); must be
	// zero with UsePending.
	SignalLimit int
	Now         time.Time
}

// Validate checks every field.
func (p *ExecutionSuspendParams) Validate(cfg PartitionConfig) error {
	if err := checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now); err != nil {
		return err
	}
	if p.Suspension.IsZero() {
		return invalidField("Suspension", "empty")
	}
	if p.Waitpoint.IsZero() {
		return invalidField("Waitpoint", "empty")
	}
	if p.Reason < SuspendForSignal || p.Reason > SuspendForOperatorReview {
		return &Error{Code: CodeInvalidInput, Field: "Reason", Detail: "unknown", Got: strconv.Itoa(int(p.Reason))}
	}
	if err := p.Condition.Validate("Condition"); err != nil {
		return err
	}
	if b, err := EncodeCondition(p.Condition); err != nil {
		return err
	} else if len(b) > MaxConditionBytes {
		return invalidField("Condition", "too_large")
	}
	if err := checkAhead("TimeoutAt", p.TimeoutAt, p.Now, MaxSuspendTimeout, p.Condition.Kind == CondTimeout); err != nil {
		return err
	}
	if p.TimeoutBehavior > TimeoutEscalate {
		return &Error{Code: CodeInvalidInput, Field: "TimeoutBehavior", Detail: "unknown", Got: strconv.Itoa(int(p.TimeoutBehavior))}
	}
	if p.Condition.Kind == CondTimeout && p.TimeoutBehavior == TimeoutEscalate {
		return invalidField("TimeoutBehavior", "escalate_never_ends_timeout_only")
	}
	if err := p.Policy.Validate("Policy"); err != nil {
		return err
	}
	if err := checkSignalLimit(p.SignalLimit); err != nil {
		return err
	}
	if p.UsePending && p.SignalLimit != 0 {
		return invalidField("SignalLimit", "set_by_pending_waitpoint")
	}
	return nil
}

// Behavior is TimeoutBehavior with its default applied.
func (p *ExecutionSuspendParams) Behavior() TimeoutBehavior {
	if p.TimeoutBehavior == 0 {
		return TimeoutFail
	}
	return p.TimeoutBehavior
}

// BoundWaitpoints lists the waitpoints a suspension binds: the own one
// first, then the others the condition names in the order they first
// appear (depth first).
func (p *ExecutionSuspendParams) BoundWaitpoints() []WaitpointID {
	out := []WaitpointID{p.Waitpoint}
	seen := map[WaitpointID]bool{p.Waitpoint: true}
	var walk func(c *ResumeCondition)
	walk = func(c *ResumeCondition) {
		add := func(w WaitpointID) {
			if !w.IsZero() && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
		add(c.Waitpoint)
		for _, w := range c.Waitpoints {
			add(w)
		}
		for i := range c.Of {
			walk(&c.Of[i])
		}
	}
	walk(&p.Condition)
	return out
}

// ExecutionSuspendResult reports a suspend.
type ExecutionSuspendResult struct {
	Outcome    SuspendOutcome
	Suspension SuspensionID
	Waitpoint  WaitpointID
	// CreatedAt is the own waitpoint's creation time, what its token
	// signs.
	CreatedAt time.Time
	// Signals are the buffered signals of the bound waitpoints, which
	// satisfied the condition (SuspendAlreadySatisfied only), in
	// delivery order, with the effect they were delivered with
	// (SignalBuffered); the suspension records the same list.
	Signals  []SignalRecord
	Replayed bool
}

// SignalDeliverParams delivers a signal to a waitpoint, named by a token
// the engine verified. The waitpoint takes it if it is pending (buffered)
// or active; with an active one the open suspension's condition decides:
// ignored (no leaf reads it), accepted, or resumed (the condition is now
// satisfied over every signal of the suspension, and the execution
// resumes as ExecutionResume would, reason ClosedBySignal).
//
// Order of checks: the execution and the waitpoint must exist with the
// token's creation time (ErrNotFound; ErrWaitpointNotFound, or
// ErrInvalidToken when the creation time differs); a Signal id the
// execution still keeps (on any of its waitpoints, or its open or last
// suspension) replays (the stored signal's id, effect and ignored reason, Replayed,
// the state now), writing nothing, so a request applied twice stores one
// signal; a non-empty
// IdempotencyKey seen on this waitpoint within its TTL returns
// SignalDuplicate with the first signal's id, even after the waitpoint
// closed (a webhook's retry learns its first delivery counted), writing
// nothing but its feed event; then ErrWaitpointClosed; then
// ErrSignalLimit.
//
// Every delivery that returns a result, except a replay, appends one
// event to its partition's signal feed (SignalFeed): the signal, its
// waitpoint and execution, and its effect (duplicate included).
type SignalDeliverParams struct {
	Execution ExecutionID
	Waitpoint WaitpointID
	// WaitpointCreatedAt is the creation time the token signed.
	WaitpointCreatedAt time.Time
	// Signal is the new signal's id.
	Signal SignalID
	// Name is what conditions match on (may be empty).
	Name string
	// Source names who sent it, as "type:identity" ("approver:alice"),
	// for DistinctSources; at most MaxSignalSourceBytes.
	Source  string
	Payload []byte
	// IdempotencyKey dedups deliveries on this waitpoint within DedupTTL
	// ("": none).
	IdempotencyKey string
	DedupTTL       time.Duration // 0: DefaultSignalDedupTTL
	Now            time.Time
}

// Validate checks every field.
func (p *SignalDeliverParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.Execution); err != nil {
		return prefixField(err, "Execution.")
	}
	if p.Waitpoint.IsZero() {
		return invalidField("Waitpoint", "empty")
	}
	if err := checkOptionalTime("WaitpointCreatedAt", p.WaitpointCreatedAt); err != nil {
		return err
	}
	if p.WaitpointCreatedAt.IsZero() {
		return invalidField("WaitpointCreatedAt", "missing")
	}
	if p.Signal.IsZero() {
		return invalidField("Signal", "empty")
	}
	if err := ValidateText("Name", p.Name); err != nil {
		return err
	}
	if len(p.Source) > MaxSignalSourceBytes {
		return OutOfRange("Source", len(p.Source), "at most "+strconv.Itoa(MaxSignalSourceBytes)+" bytes")
	}
	if err := ValidateText("Source", p.Source); err != nil {
		return err
	}
	if len(p.Payload) > MaxSignalPayloadBytes {
		return OutOfRange("Payload", len(p.Payload), "at most "+strconv.Itoa(MaxSignalPayloadBytes)+" bytes")
	}
	if err := ValidateIdempotencyKey(p.IdempotencyKey); err != nil {
		return err
	}
	if err := checkDuration("DedupTTL", p.DedupTTL, 0, MaxSignalDedupTTL); err != nil {
		return err
	}
	if p.DedupTTL%time.Millisecond != 0 {
		return &Error{Code: CodeInvalidInput, Field: "DedupTTL", Detail: "sub_millisecond", Got: p.DedupTTL.String()}
	}
	return checkNow(p.Now)
}

// SignalDeliverResult reports a delivery.
type SignalDeliverResult struct {
	// Signal is the stored signal's id (the first delivery's for a
	// duplicate).
	Signal        SignalID
	Effect        SignalEffect
	IgnoredReason string
	// State is the execution's public state after the delivery.
	State PublicState
	// DelayUntil is set when the signal resumed the execution into the
	// delayed index (ResumePolicy.Delay), so the caller can schedule its
	// promotion.
	DelayUntil time.Time
	// Replayed: the Signal id was already stored; nothing was written.
	Replayed bool
}

// SignalRecord is one delivered signal as stored.
type SignalRecord struct {
	ID             SignalID
	Waitpoint      WaitpointID
	Name           string
	Source         string
	Payload        []byte
	IdempotencyKey string
	Effect         SignalEffect
	IgnoredReason  string
	DeliveredAt    time.Time
}

// Delivered is what a resume condition reads of s.
func (s *SignalRecord) Delivered() DeliveredSignal {
	return DeliveredSignal{ID: s.ID.String(), Waitpoint: s.Waitpoint, Name: s.Name, Source: s.Source}
}

// ExecutionResumeParams resumes a suspended execution whatever its
// condition (an operator's act; reason ClosedByOperator), applying its
// resume policy. ErrNotSuspended when it has no open suspension.
type ExecutionResumeParams struct {
	ID  ExecutionID
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionResumeParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionResumeResult reports a resume.
type ExecutionResumeResult struct {
	// State is the execution's public state after it (waiting, or
	// delayed by the policy's Delay).
	State PublicState
	// DelayUntil is when a delayed resume becomes eligible (zero: it is
	// eligible now).
	DelayUntil time.Time
}

// SuspensionExpireOutcome is what SuspensionExpire did.
type SuspensionExpireOutcome uint8

// Suspension-expire outcomes. The *Cleaned ones drop a stale
// IndexSuspensionTimeout entry and change nothing else.
const (
	SuspensionExpireNotFoundCleaned     SuspensionExpireOutcome = iota + 1 // "not_found_cleaned"
	SuspensionExpireNotSuspendedCleaned                                    // "not_suspended_cleaned": no open suspension with a timeout
	SuspensionExpireNotYetDue                                              // "not_yet_due"
	SuspensionExpireFailed                                                 // "failed"
	SuspensionExpireCancelled                                              // "cancelled"
	SuspensionExpireExpired                                                // "expired"
	SuspensionExpireResumed                                                // "auto_resumed"
	SuspensionExpireEscalated                                              // "escalated"
)

var suspensionExpireOutcomeNames = enumNames{
	"not_found_cleaned", "not_suspended_cleaned", "not_yet_due", "failed", "cancelled", "expired",
	"auto_resumed", "escalated",
}

func (v SuspensionExpireOutcome) String() string { return suspensionExpireOutcomeNames.name(uint8(v)) }

// ParseSuspensionExpireOutcome parses a wire name.
func ParseSuspensionExpireOutcome(s string) (SuspensionExpireOutcome, bool) {
	v, ok := suspensionExpireOutcomeNames.parse(s)
	return SuspensionExpireOutcome(v), ok
}

// SuspensionExpireParams applies the timeout behaviour of an execution
// whose suspension timed out (scanner 5): fail, cancel or expire it
// (closing the suspension ClosedTimeoutFail/Cancel/Expire; the paused
// attempt ends failed or cancelled with reason "suspension_timeout"),
// resume it (ClosedTimeoutResume), or escalate it. It re-checks that the
// timeout is due at Now.
type SuspensionExpireParams struct {
	ID  ExecutionID
	Now time.Time
}

// Validate checks every field.
func (p *SuspensionExpireParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// SuspensionExpireResult reports a suspension timeout.
type SuspensionExpireResult struct {
	Outcome SuspensionExpireOutcome
	// DelayUntil is set when an auto-resume held the execution delayed
	// (ResumePolicy.Delay).
	DelayUntil time.Time
}

// WaitpointExpireParams closes the pending waitpoints of an execution
// whose ExpiresAt has passed at Now (scanner 6; reason
// ClosedWaitpointTTL) and moves its IndexWaitpointExpiry entry to the
// next pending waitpoint's expiry, or drops it.
type WaitpointExpireParams struct {
	ID  ExecutionID
	Now time.Time
}

// Validate checks every field.
func (p *WaitpointExpireParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WaitpointExpireResult reports a waitpoint expiry pass.
type WaitpointExpireResult struct {
	// Closed counts the waitpoints closed.
	Closed int
	// NextDueAt is the execution's next pending expiry (zero: none).
	NextDueAt time.Time
}

// SuspensionDescribeParams reads an execution's open suspension or, when
// none is open, its last one. ErrNotFound for no execution,
// ErrSuspensionNotFound when it has none.
type SuspensionDescribeParams struct {
	ID ExecutionID
}

// Validate checks every field.
func (p *SuspensionDescribeParams) Validate(cfg PartitionConfig) error {
	return cfg.CheckExecutionID(p.ID)
}

// SuspensionSnapshot is one suspension as stored.
type SuspensionSnapshot struct {
	ID        SuspensionID
	Execution ExecutionID
	// AttemptIndex is the attempt it paused.
	AttemptIndex int
	Reason       SuspendReason
	Condition    ResumeCondition
	// Waitpoint is its own waitpoint; Waitpoints every bound one, own
	// first (ExecutionSuspendParams.BoundWaitpoints).
	Waitpoint       WaitpointID
	Waitpoints      []WaitpointID
	SuspendedAt     time.Time
	TimeoutAt       time.Time // zero: none (or cleared by an escalation)
	TimeoutBehavior TimeoutBehavior
	Policy          ResumePolicy
	// Escalated is set when a TimeoutEscalate timeout fired.
	Escalated bool
	// ClosedAt and ClosedBy are zero while it is open.
	ClosedAt time.Time
	ClosedBy CloseReason
	// Signals are the signals of its waitpoints it counted or ignored
	// (the buffered ones it found first), in delivery order.
	Signals []SignalRecord
}

// WaitpointListParams reads every waitpoint an execution keeps: the open
// ones and those that closed with its last suspension or since.
type WaitpointListParams struct {
	ID ExecutionID
}

// Validate checks every field.
func (p *WaitpointListParams) Validate(cfg PartitionConfig) error {
	return cfg.CheckExecutionID(p.ID)
}

// WaitpointSnapshot is one waitpoint as stored.
type WaitpointSnapshot struct {
	ID        WaitpointID
	Execution ExecutionID
	State     WaitpointState
	CreatedAt time.Time
	// ExpiresAt is when a pending waitpoint closes (zero while active).
	ExpiresAt   time.Time
	SignalLimit int
	// Suspension is the suspension that bound it (zero: none yet).
	Suspension SuspensionID
	ClosedAt   time.Time
	ClosedBy   CloseReason
	// Signals are the signals it holds, in delivery order.
	Signals []SignalRecord
}

// WaitpointListResult lists waitpoints by creation time, then id.
type WaitpointListResult struct {
	Waitpoints []WaitpointSnapshot
}

// SuspendedListParams lists one partition's suspended executions by id
// after an exclusive cursor.
type SuspendedListParams struct {
	Partition int
	After     ExecutionID
	Limit     int // 1–1000
}

// Validate checks every field.
func (p *SuspendedListParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if !p.After.IsZero() {
		if err := checkCursor(cfg, "After", p.After, p.Partition); err != nil {
			return err
		}
	}
	return checkLimit("Limit", p.Limit)
}

// SuspendedEntry is one suspended execution.
type SuspendedEntry struct {
	ID          ExecutionID
	Lane        LaneID
	Suspension  SuspensionID
	Reason      SuspendReason
	SuspendedAt time.Time
	TimeoutAt   time.Time
}

// SuspendedListResult is one page.
type SuspendedListResult struct {
	Entries []SuspendedEntry
	// Next is the cursor for the next page; zero when this page is the
	// last.
	Next ExecutionID
}

// SignalFeedParams reads a partition's signal-delivery feed after an
// exclusive sequence number (0: from the oldest kept).
type SignalFeedParams struct {
	Partition int
	After     uint64
	Limit     int // 1–1000
}

// Validate checks every field.
func (p *SignalFeedParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	return checkLimit("Limit", p.Limit)
}

// SignalFeedEvent is one signal delivery as the feed records it.
type SignalFeedEvent struct {
	// Seq numbers the partition's events from 1, without gaps.
	Seq       uint64
	Execution ExecutionID
	Waitpoint WaitpointID
	// Signal is the delivered signal (for a duplicate, the first
	// delivery's).
	Signal SignalID
	Effect SignalEffect
	At     time.Time
}

// SignalFeedResult is one page, oldest first.
type SignalFeedResult struct {
	Events []SignalFeedEvent
	// Last is the newest sequence number the partition has written (0:
	// none), so a reader knows how far behind it is.
	Last uint64
}

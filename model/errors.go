package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Code names one error condition. The values are the spec's error codes, so
// a code seen in a log matches the FlowFabric catalogue.
type Code string

// Class says what a caller should do about an error.
type Class uint8

// The error classes.
const (
	// ClassTerminal: the operation cannot succeed as asked; do not retry it.
	ClassTerminal Class = iota + 1
	// ClassRetryable: a race or a transient condition; retrying may succeed.
	ClassRetryable
	// ClassInformational: the state already is (or is not) what was asked;
	// nothing to do.
	ClassInformational
	// ClassBug: an invariant was broken inside the engine.
	ClassBug
)

func (c Class) String() string {
	switch c {
	case ClassTerminal:
		return "terminal"
	case ClassRetryable:
		return "retryable"
	case ClassInformational:
		return "informational"
	case ClassBug:
		return "bug"
	}
	return "unknown"
}

// The error codes used by the operations of this module.
const (
	CodeInvalidInput          Code = "invalid_input"
	CodeInvalidCapabilities   Code = "invalid_capabilities"
	CodeInvalidPolicy         Code = "invalid_policy"
	CodeInvalidTagKey         Code = "invalid_tag_key"
	CodeFenceRequired         Code = "fence_required"
	CodePartialFenceTriple    Code = "partial_fence_triple"
	CodeExecutionNotFound     Code = "execution_not_found"
	CodeExecutionNotActive    Code = "execution_not_active"
	CodeExecutionNotTerminal  Code = "execution_not_terminal"
	CodeStaleLease            Code = "stale_lease"
	CodeLeaseExpired          Code = "lease_expired"
	CodeLeaseRevoked          Code = "lease_revoked"
	CodeMaxReplaysExhausted   Code = "max_replays_exhausted"
	CodeMaxRetriesExhausted   Code = "max_retries_exhausted"
	CodeInvalidBlockingReason Code = "invalid_blocking_reason"

	CodeExecutionNotLeaseable Code = "execution_not_leaseable"
	CodeLeaseConflict         Code = "lease_conflict"
	CodeInvalidClaimGrant     Code = "invalid_claim_grant"
	CodeClaimGrantExpired     Code = "claim_grant_expired"
	CodeCapabilityMismatch    Code = "capability_mismatch"

	CodeExecutionNotEligible      Code = "execution_not_eligible"
	CodeExecutionNotInEligibleSet Code = "execution_not_in_eligible_set"
	CodeGrantAlreadyExists        Code = "grant_already_exists"
	CodeExecutionNotReclaimable   Code = "execution_not_reclaimable"
	CodeNoActiveLease             Code = "no_active_lease"

	CodeActiveAttemptExists Code = "active_attempt_exists"

	CodeDuplicateWorkerInstance Code = "duplicate_worker_instance"
	CodeWorkerNotRegistered     Code = "worker_not_registered"
	CodeCorruption              Code = "corruption"
	CodeResultNotFound          Code = "result_not_found"

	// Flow codes (issue 10).
	CodeFlowNotFound           Code = "flow_not_found"
	CodeFlowAlreadyTerminal    Code = "flow_already_terminal"
	CodeExecutionNotInFlow     Code = "execution_not_in_flow"
	CodeExecutionAlreadyInFlow Code = "execution_already_in_flow"
	CodeExecutionInFlow        Code = "execution_in_flow"
	CodeSelfReferencingEdge    Code = "self_referencing_edge"
	CodeStaleGraphRevision     Code = "stale_graph_revision"
	CodeDependencyExists       Code = "dependency_already_exists"
	CodeCycleDetected          Code = "cycle_detected"
	CodeGraphSearchLimit       Code = "graph_search_limit"
	CodeEdgeNotFound           Code = "edge_not_found"
	CodeEdgeGroupFixed         Code = "edge_group_fixed"
	CodeFlowSealed             Code = "flow_sealed"
	CodeDownstreamStarted      Code = "downstream_not_held"
	CodeFlowNotSealed          Code = "flow_not_sealed"
	CodeFlowTooLarge           Code = "flow_too_large"
	CodeInvalidToken           Code = "invalid_token"
	CodeIdempotencyConflict    Code = "idempotency_key_conflict"
	CodeSubmissionRefused      Code = "submission_refused"

	CodeExecutionNotSuspended Code = "execution_not_suspended"
	CodeSuspensionNotFound    Code = "suspension_not_found"
	CodeWaitpointNotFound     Code = "waitpoint_not_found"
	CodeWaitpointClosed       Code = "waitpoint_closed"
	CodeWaitpointNotPending   Code = "waitpoint_not_pending"
	CodeWaitpointLimit        Code = "waitpoint_limit_exceeded"
	CodeSignalLimit           Code = "signal_limit_exceeded"

	CodeBudgetNotFound    Code = "budget_not_found"
	CodeQuotaNotFound     Code = "quota_not_found"
	CodeBudgetExceeded    Code = "budget_exceeded"
	CodeAdmissionRequired Code = "admission_required"

	CodeStreamClosed    Code = "stream_closed"
	CodeSummaryConflict Code = "summary_version_conflict"
	CodeAttemptNotFound Code = "attempt_not_found"
	CodeFeedDisabled    Code = "feed_disabled"

	CodeLanePaused Code = "lane_paused"

	// Engine (worker lifecycle) codes, not store codes.
	CodeWorkerAlreadyStarted     Code = "worker_already_started"
	CodeWorkerHasNoHandlers      Code = "worker_has_no_handlers"
	CodeHandlerAlreadyRegistered Code = "handler_already_registered"
	CodeWorkerAtCapacity         Code = "worker_at_capacity"
	CodeWorkerStopped            Code = "worker_stopped"
)

var codeClass = map[Code]Class{
	CodeInvalidInput:          ClassTerminal,
	CodeInvalidCapabilities:   ClassTerminal,
	CodeInvalidPolicy:         ClassTerminal,
	CodeInvalidTagKey:         ClassTerminal,
	CodeFenceRequired:         ClassTerminal,
	CodePartialFenceTriple:    ClassTerminal,
	CodeExecutionNotFound:     ClassTerminal,
	CodeExecutionNotActive:    ClassTerminal,
	CodeExecutionNotTerminal:  ClassTerminal,
	CodeStaleLease:            ClassTerminal,
	CodeLeaseExpired:          ClassTerminal,
	CodeLeaseRevoked:          ClassTerminal,
	CodeMaxReplaysExhausted:   ClassTerminal,
	CodeMaxRetriesExhausted:   ClassTerminal,
	CodeInvalidBlockingReason: ClassTerminal,
	CodeCorruption:            ClassTerminal,

	CodeWorkerAlreadyStarted:     ClassTerminal,
	CodeWorkerHasNoHandlers:      ClassTerminal,
	CodeHandlerAlreadyRegistered: ClassTerminal,
	CodeWorkerStopped:            ClassTerminal,
	CodeWorkerAtCapacity:         ClassRetryable,

	CodeExecutionNotLeaseable:   ClassRetryable,
	CodeLeaseConflict:           ClassRetryable,
	CodeInvalidClaimGrant:       ClassRetryable,
	CodeClaimGrantExpired:       ClassRetryable,
	CodeCapabilityMismatch:      ClassRetryable,
	CodeDuplicateWorkerInstance: ClassRetryable,

	CodeExecutionNotEligible:      ClassInformational,
	CodeExecutionNotInEligibleSet: ClassInformational,
	CodeGrantAlreadyExists:        ClassInformational,
	CodeExecutionNotReclaimable:   ClassInformational,
	CodeNoActiveLease:             ClassInformational,
	CodeWorkerNotRegistered:       ClassInformational,
	CodeResultNotFound:            ClassInformational,

	CodeActiveAttemptExists: ClassBug,

	CodeFlowNotFound:           ClassTerminal,
	CodeFlowAlreadyTerminal:    ClassTerminal,
	CodeExecutionNotInFlow:     ClassTerminal,
	CodeExecutionAlreadyInFlow: ClassTerminal,
	CodeExecutionInFlow:        ClassTerminal,
	CodeSelfReferencingEdge:    ClassTerminal,
	CodeStaleGraphRevision:     ClassRetryable,
	CodeDependencyExists:       ClassTerminal,
	CodeCycleDetected:          ClassTerminal,
	CodeGraphSearchLimit:       ClassTerminal,
	CodeEdgeNotFound:           ClassTerminal,
	CodeEdgeGroupFixed:         ClassTerminal,
	CodeFlowSealed:             ClassTerminal,
	CodeDownstreamStarted:      ClassTerminal,
	CodeFlowNotSealed:          ClassTerminal,
	CodeFlowTooLarge:           ClassTerminal,
	CodeInvalidToken:           ClassTerminal,
	CodeIdempotencyConflict:    ClassTerminal,
	CodeSubmissionRefused:      ClassTerminal,

	CodeExecutionNotSuspended: ClassInformational,
	CodeSuspensionNotFound:    ClassInformational,
	CodeWaitpointNotFound:     ClassTerminal,
	CodeWaitpointClosed:       ClassInformational,
	CodeWaitpointNotPending:   ClassTerminal,
	CodeWaitpointLimit:        ClassTerminal,
	CodeSignalLimit:           ClassTerminal,

	CodeBudgetNotFound:    ClassTerminal,
	CodeQuotaNotFound:     ClassTerminal,
	CodeBudgetExceeded:    ClassTerminal,
	CodeAdmissionRequired: ClassTerminal,

	CodeStreamClosed:    ClassTerminal,
	CodeSummaryConflict: ClassRetryable,
	CodeAttemptNotFound: ClassTerminal,
	CodeFeedDisabled:    ClassTerminal,

	CodeLanePaused: ClassRetryable,
}

// ClassOf returns the class of a code; unknown codes are terminal.
func ClassOf(c Code) Class {
	if cl, ok := codeClass[c]; ok {
		return cl
	}
	return ClassTerminal
}

// Error is the one coded error type of the engine. errors.Is matches two
// *Error values when their codes are equal, so the exported sentinels below
// work with errors.Is; ErrValidation matches every validation error.
type Error struct {
	Code Code
	// Field names the offending input of a validation error by its Go
	// field path ("Lane", "RetryPolicy.InitialDelay",
	// "RequiredCapabilities").
	Field string
	// Detail carries the spec's detail text: the reason of a validation
	// error, the sorted missing capabilities of a mismatch, and so on.
	Detail string
	// Got is the rejected value of a validation error, when it can be
	// shown; Want says what is accepted ("1ms..24h", "1..1000"). Both are
	// for people: errors.Is ignores them.
	Got, Want string
	// State is set on execution_not_active: the execution's state when the
	// operation was refused, so a caller can tell a replay of its own
	// terminal operation from somebody else's.
	State *NotActiveState
}

// NotActiveState is what execution_not_active carries.
type NotActiveState struct {
	LifecyclePhase  LifecyclePhase
	TerminalOutcome TerminalOutcome
	LeaseEpoch      uint64
	AttemptID       AttemptID
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Got != "" || e.Want != "" {
		b.WriteString(" (")
		if e.Got != "" {
			b.WriteString("got ")
			b.WriteString(e.Got)
		}
		if e.Got != "" && e.Want != "" {
			b.WriteString("; ")
		}
		if e.Want != "" {
			b.WriteString("want ")
			b.WriteString(e.Want)
		}
		b.WriteString(")")
	}
	if e.State != nil {
		b.WriteString(" (phase=")
		b.WriteString(e.State.LifecyclePhase.String())
		b.WriteString(" outcome=")
		b.WriteString(e.State.TerminalOutcome.String())
		b.WriteString(" epoch=")
		b.WriteString(strconv.FormatUint(e.State.LeaseEpoch, 10))
		b.WriteString(")")
	}
	return b.String()
}

// Class returns the error's class.
func (e *Error) Class() Class { return ClassOf(e.Code) }

// Retryable reports whether retrying the operation may succeed.
func (e *Error) Retryable() bool { return e.Class() == ClassRetryable }

// IsValidation reports whether the error rejects bad input.
func (e *Error) IsValidation() bool {
	switch e.Code {
	case CodeInvalidInput, CodeInvalidCapabilities, CodeInvalidPolicy, CodeInvalidTagKey,
		CodeFenceRequired, CodePartialFenceTriple, CodeInvalidBlockingReason, CodeSelfReferencingEdge:
		return true
	}
	return false
}

// Is implements errors.Is: equal codes match, and ErrValidation matches any
// validation error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t == ErrValidation {
		return e.IsValidation()
	}
	return t.Code == e.Code && (t.Field == "" || t.Field == e.Field)
}

// Sentinels for errors.Is.
var (
	// ErrValidation matches every error that rejects bad input.
	ErrValidation = &Error{Code: "validation"}

	ErrInvalidInput          = &Error{Code: CodeInvalidInput}
	ErrInvalidCapabilities   = &Error{Code: CodeInvalidCapabilities}
	ErrInvalidPolicy         = &Error{Code: CodeInvalidPolicy}
	ErrInvalidTagKey         = &Error{Code: CodeInvalidTagKey}
	ErrFenceRequired         = &Error{Code: CodeFenceRequired}
	ErrPartialFenceTriple    = &Error{Code: CodePartialFenceTriple}
	ErrNotFound              = &Error{Code: CodeExecutionNotFound}
	ErrNotActive             = &Error{Code: CodeExecutionNotActive}
	ErrNotTerminal           = &Error{Code: CodeExecutionNotTerminal}
	ErrStaleLease            = &Error{Code: CodeStaleLease}
	ErrLeaseExpired          = &Error{Code: CodeLeaseExpired}
	ErrLeaseRevoked          = &Error{Code: CodeLeaseRevoked}
	ErrMaxReplaysExhausted   = &Error{Code: CodeMaxReplaysExhausted}
	ErrMaxRetriesExhausted   = &Error{Code: CodeMaxRetriesExhausted}
	ErrInvalidBlockingReason = &Error{Code: CodeInvalidBlockingReason}
	ErrNotLeaseable          = &Error{Code: CodeExecutionNotLeaseable}
	ErrLeaseConflict         = &Error{Code: CodeLeaseConflict}
	ErrInvalidClaimGrant     = &Error{Code: CodeInvalidClaimGrant}
	ErrClaimGrantExpired     = &Error{Code: CodeClaimGrantExpired}
	ErrCapabilityMismatch    = &Error{Code: CodeCapabilityMismatch}
	ErrNotEligible           = &Error{Code: CodeExecutionNotEligible}
	ErrNotInEligibleSet      = &Error{Code: CodeExecutionNotInEligibleSet}
	ErrGrantAlreadyExists    = &Error{Code: CodeGrantAlreadyExists}
	ErrNotReclaimable        = &Error{Code: CodeExecutionNotReclaimable}
	ErrNoActiveLease         = &Error{Code: CodeNoActiveLease}
	ErrActiveAttemptExists   = &Error{Code: CodeActiveAttemptExists}
	ErrDuplicateWorker       = &Error{Code: CodeDuplicateWorkerInstance}
	ErrWorkerNotRegistered   = &Error{Code: CodeWorkerNotRegistered}
	ErrCorrupt               = &Error{Code: CodeCorruption}
	ErrResultNotFound        = &Error{Code: CodeResultNotFound}

	// Flow errors (flow_ops.go).
	ErrFlowNotFound  = &Error{Code: CodeFlowNotFound}
	ErrFlowTerminal  = &Error{Code: CodeFlowAlreadyTerminal}
	ErrNotInFlow     = &Error{Code: CodeExecutionNotInFlow}
	ErrAlreadyInFlow = &Error{Code: CodeExecutionAlreadyInFlow}
	// ErrInFlow: the execution is a flow member, deleted only with its
	// flow.
	ErrInFlow             = &Error{Code: CodeExecutionInFlow}
	ErrSelfEdge           = &Error{Code: CodeSelfReferencingEdge}
	ErrStaleGraphRevision = &Error{Code: CodeStaleGraphRevision}
	ErrDependencyExists   = &Error{Code: CodeDependencyExists}
	ErrCycle              = &Error{Code: CodeCycleDetected}
	ErrGraphSearchLimit   = &Error{Code: CodeGraphSearchLimit}
	ErrEdgeNotFound       = &Error{Code: CodeEdgeNotFound}
	ErrEdgeGroupFixed     = &Error{Code: CodeEdgeGroupFixed}
	// ErrFlowSealed: the flow is sealed; its graph takes no more members,
	// edges or group policies.
	ErrFlowSealed = &Error{Code: CodeFlowSealed}
	// ErrDownstreamStarted: the edge's downstream is not held waiting for
	// its dependencies (it joined the flow running, or has left the hold).
	ErrDownstreamStarted = &Error{Code: CodeDownstreamStarted}
	// ErrFlowNotSealed: the flow is still being built; a running member
	// can await children only in a sealed flow.
	ErrFlowNotSealed = &Error{Code: CodeFlowNotSealed}
	// ErrFlowTooLarge: the flow has more than MaxFlowDeleteMembers
	// members, more than one step deletes.
	ErrFlowTooLarge = &Error{Code: CodeFlowTooLarge}
	// ErrInvalidToken: a waitpoint token was refused (malformed,
	// tampered, forged, or signed by an unknown or retired key); the
	// error says no more, on purpose.
	ErrInvalidToken = &Error{Code: CodeInvalidToken}
	// ErrIdempotencyConflict: an idempotency key was used again for a
	// different request (a flow with another graph).
	ErrIdempotencyConflict = &Error{Code: CodeIdempotencyConflict}
	// ErrSubmissionRefused: a submit hook refused the submission.
	ErrSubmissionRefused = &Error{Code: CodeSubmissionRefused}
	// ErrNotSuspended: the execution has no open suspension to resume.
	ErrNotSuspended = &Error{Code: CodeExecutionNotSuspended}
	// ErrSuspensionNotFound: the execution has never suspended (or its
	// last suspension was dropped).
	ErrSuspensionNotFound = &Error{Code: CodeSuspensionNotFound}
	// ErrWaitpointNotFound: the execution has no such waitpoint.
	ErrWaitpointNotFound = &Error{Code: CodeWaitpointNotFound}
	// ErrWaitpointClosed: the waitpoint is closed (its suspension ended,
	// it expired, or its execution ended) and takes no more signals.
	ErrWaitpointClosed = &Error{Code: CodeWaitpointClosed}
	// ErrWaitpointNotPending: a suspension can bind only a pending
	// waitpoint of its own execution.
	ErrWaitpointNotPending = &Error{Code: CodeWaitpointNotPending}
	// ErrWaitpointLimit: the execution already has MaxOpenWaitpoints open
	// waitpoints.
	ErrWaitpointLimit = &Error{Code: CodeWaitpointLimit}
	// ErrSignalLimit: the waitpoint already holds its SignalLimit signals.
	ErrSignalLimit = &Error{Code: CodeSignalLimit}
	// ErrBudgetNotFound: no budget has the id.
	ErrBudgetNotFound = &Error{Code: CodeBudgetNotFound}
	// ErrQuotaNotFound: no quota policy has the id.
	ErrQuotaNotFound = &Error{Code: CodeQuotaNotFound}
	// ErrBudgetExceeded: a usage report would pass a hard limit; nothing
	// of it applied (the engine's error for ReportHardBreach).
	ErrBudgetExceeded = &Error{Code: CodeBudgetExceeded}
	// ErrAdmissionRequired: a claim of an execution with a quota named no
	// admission token.
	ErrAdmissionRequired = &Error{Code: CodeAdmissionRequired}
	// ErrStreamClosed: the attempt's stream is closed (its attempt ended,
	// or its lease was marked expired or revoked) and takes no frame.
	ErrStreamClosed = &Error{Code: CodeStreamClosed}
	// ErrSummaryConflict: a summary frame's base version is no longer the
	// document's version; re-read the summary, re-apply and retry.
	ErrSummaryConflict = &Error{Code: CodeSummaryConflict}
	// ErrAttemptNotFound: the execution has no attempt of that index.
	ErrAttemptNotFound = &Error{Code: CodeAttemptNotFound}
	// ErrFeedDisabled: the store was not built to keep that feed.
	ErrFeedDisabled = &Error{Code: CodeFeedDisabled}
	// ErrLanePaused: the execution's lane is paused (LaneStore); no
	// attempt starts on it until the lane is resumed.
	ErrLanePaused = &Error{Code: CodeLanePaused}

	ErrWorkerAlreadyStarted     = &Error{Code: CodeWorkerAlreadyStarted}
	ErrWorkerHasNoHandlers      = &Error{Code: CodeWorkerHasNoHandlers}
	ErrHandlerAlreadyRegistered = &Error{Code: CodeHandlerAlreadyRegistered}
	ErrWorkerAtCapacity         = &Error{Code: CodeWorkerAtCapacity}
	ErrWorkerStopped            = &Error{Code: CodeWorkerStopped}
)

// NewError builds an *Error with a detail.
func NewError(code Code, detail string) *Error { return &Error{Code: code, Detail: detail} }

// invalidField is the validation error for one named field.
func invalidField(field, reason string) *Error {
	return &Error{Code: CodeInvalidInput, Field: field, Detail: reason}
}

// InvalidField returns a validation error (code invalid_input) naming field.
func InvalidField(field, reason string) *Error { return invalidField(field, reason) }

// OutOfRange returns an invalid_input error for field with reason
// out_of_range, the rejected value and the accepted range.
func OutOfRange(field string, got any, want string) *Error {
	return &Error{Code: CodeInvalidInput, Field: field, Detail: "out_of_range", Got: fmt.Sprint(got), Want: want}
}

// CodeOf returns the code of err if it wraps an *Error, else "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// showValue quotes a rejected string for an error message, cut short when
// long.
func showValue(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return strconv.Quote(s)
}

package model

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestErrorIs(t *testing.T) {
	t.Parallel()
	stale := &Error{Code: CodeStaleLease, Detail: "x"}
	if !errors.Is(stale, ErrStaleLease) {
		t.Fatal("equal codes must match")
	}
	if errors.Is(stale, ErrLeaseExpired) || errors.Is(stale, ErrValidation) {
		t.Fatal("other codes and ErrValidation must not match")
	}
	if !errors.Is(fmt.Errorf("store: renew: %w", stale), ErrStaleLease) {
		t.Fatal("a wrapped error must match")
	}
	if errors.Is(stale, errors.New("stale_lease")) {
		t.Fatal("a non-*Error target must not match")
	}

	lane := InvalidField("Lane", "empty")
	if !errors.Is(lane, ErrInvalidInput) || !errors.Is(lane, &Error{Code: CodeInvalidInput, Field: "Lane"}) {
		t.Fatal("a target without a field matches any field; one with a field matches that field")
	}
	if errors.Is(lane, &Error{Code: CodeInvalidInput, Field: "Kind"}) {
		t.Fatal("a target naming another field must not match")
	}

	validation := []Code{CodeInvalidInput, CodeInvalidCapabilities, CodeInvalidPolicy,
		CodeInvalidTagKey, CodeFenceRequired, CodePartialFenceTriple, CodeInvalidBlockingReason}
	for _, c := range validation {
		e := &Error{Code: c, Field: "f"}
		if !errors.Is(e, ErrValidation) || !e.IsValidation() {
			t.Errorf("%s must match ErrValidation", c)
		}
	}
	for _, c := range []Code{CodeExecutionNotFound, CodeStaleLease, CodeLeaseConflict,
		CodeExecutionNotEligible, CodeActiveAttemptExists, "made_up"} {
		if errors.Is(&Error{Code: c}, ErrValidation) {
			t.Errorf("%s must not match ErrValidation", c)
		}
	}
	// ErrValidation is a target only: it does not match itself as a code.
	if errors.Is(ErrValidation, ErrInvalidInput) {
		t.Fatal("ErrValidation has no code of its own")
	}
}

// Every Validate rejection is a validation error: a blocking reason that is
// not an admission reason is bad input too.
func TestInvalidBlockingReasonIsValidation(t *testing.T) {
	t.Parallel()
	u, _ := ParseUUID(sampleUUID)
	id := NewExecutionID(0, u)
	now := time.UnixMilli(1735689600000)
	cfg := PartitionConfig{}
	err := (&ExecutionBlockParams{ID: id, Reason: WaitingForWorker, Now: now}).Validate(cfg)
	if e := requireValidation(t, err, "Reason"); e.Code != CodeInvalidBlockingReason {
		t.Fatal(err)
	}
	err = (&ExecutionUnblockParams{ID: id, ExpectedReason: 0, Now: now}).Validate(cfg)
	requireValidation(t, err, "ExpectedReason")
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    *Error
		want string
	}{
		{&Error{Code: CodeExecutionNotFound}, "execution_not_found"},
		{InvalidField("Lane", "empty"), "invalid_input: Lane: empty"},
		{NewError(CodeCapabilityMismatch, "gpu"), "capability_mismatch: gpu"},
		{&Error{Code: CodeExecutionNotActive, State: &NotActiveState{
			LifecyclePhase: PhaseTerminal, TerminalOutcome: OutcomeSuccess, LeaseEpoch: 3}},
			"execution_not_active (phase=terminal outcome=success epoch=3)"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	for c, want := range map[Code]Class{
		CodeStaleLease:              ClassTerminal,
		CodeInvalidInput:            ClassTerminal,
		CodeLeaseConflict:           ClassRetryable,
		CodeClaimGrantExpired:       ClassRetryable,
		CodeDuplicateWorkerInstance: ClassRetryable,
		CodeExecutionNotEligible:    ClassInformational,
		CodeGrantAlreadyExists:      ClassInformational,
		CodeActiveAttemptExists:     ClassBug,
		"never_heard_of_it":         ClassTerminal,
	} {
		e := &Error{Code: c}
		if ClassOf(c) != want || e.Class() != want || e.Retryable() != (want == ClassRetryable) {
			t.Errorf("%s: class %v, want %v", c, ClassOf(c), want)
		}
	}
	for c, s := range map[Class]string{ClassTerminal: "terminal", ClassRetryable: "retryable",
		ClassInformational: "informational", ClassBug: "bug", 0: "unknown"} {
		if c.String() != s {
			t.Errorf("%d.String() = %q", c, c.String())
		}
	}
}

func TestCodeOf(t *testing.T) {
	t.Parallel()
	if CodeOf(fmt.Errorf("x: %w", ErrNotFound)) != CodeExecutionNotFound {
		t.Fatal("CodeOf a wrapped *Error")
	}
	if CodeOf(errors.New("plain")) != "" || CodeOf(nil) != "" {
		t.Fatal("CodeOf a plain error or nil must be empty")
	}
}

func TestCheckFence(t *testing.T) {
	t.Parallel()
	u, _ := ParseUUID(sampleUUID)
	full := Fence{LeaseID: LeaseID(u), LeaseEpoch: 1, AttemptID: AttemptID(u)}
	if err := CheckFence(SourceWorker, full); err != nil || !full.IsComplete() || full.IsZero() {
		t.Fatalf("complete fence: %v", err)
	}
	if err := CheckFence(SourceOperator, Fence{}); err != nil {
		t.Fatalf("operator without a fence: %v", err)
	}
	for _, tc := range []struct {
		src  Source
		f    Fence
		code Code
	}{
		{SourceWorker, Fence{}, CodeFenceRequired},
		{SourceWorker, Fence{LeaseEpoch: 1}, CodePartialFenceTriple},
		{SourceWorker, Fence{LeaseID: LeaseID(u), AttemptID: AttemptID(u)}, CodePartialFenceTriple},
		{SourceOperator, full, CodeInvalidInput},
		{"bogus", Fence{}, CodeInvalidInput},
	} {
		err := CheckFence(tc.src, tc.f)
		if e := requireValidation(t, err, ""); e.Code != tc.code {
			t.Errorf("CheckFence(%q, %+v) = %v, want %s", tc.src, tc.f, err, tc.code)
		}
	}
}

func TestRenewDeadline(t *testing.T) {
	t.Parallel()
	if got := RenewDeadline(1000, 3000); got != 3000 {
		t.Fatalf("RenewDeadline(1000, 3000) = %d", got)
	}
	if got := RenewDeadline(0, 1); got != 0 {
		t.Fatalf("RenewDeadline(0, 1) = %d (floor of 2/3 ms)", got)
	}
	if got := RenewDeadline(0, 1000); got != 666 {
		t.Fatalf("RenewDeadline(0, 1000) = %d", got)
	}
}

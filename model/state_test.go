package model

import (
	"testing"
)

var (
	allPhases = []LifecyclePhase{PhaseSubmitted, PhaseRunnable, PhaseActive,
		PhaseSuspended, PhaseTerminal}
	allEligibility = []EligibilityState{EligibleNow, NotEligibleUntilTime, BlockedByDependencies,
		BlockedByBudget, BlockedByQuota, BlockedByRoute, BlockedByLaneState,
		BlockedByOperator, NotApplicable}
	allOutcomes = []TerminalOutcome{OutcomeNone, OutcomeSuccess, OutcomeFailed,
		OutcomeCancelled, OutcomeExpired, OutcomeSkipped}
)

// TestDerivePublicState checks the spec's derivation table for every
// phase, eligibility state and outcome.
func TestDerivePublicState(t *testing.T) {
	t.Parallel()
	terminal := map[TerminalOutcome]PublicState{
		OutcomeSuccess:   PublicCompleted,
		OutcomeFailed:    PublicFailed,
		OutcomeCancelled: PublicCancelled,
		OutcomeExpired:   PublicExpired,
		OutcomeSkipped:   PublicSkipped,
		OutcomeNone:      PublicFailed,
	}
	runnable := map[EligibilityState]PublicState{
		EligibleNow:           PublicWaiting,
		NotEligibleUntilTime:  PublicDelayed,
		BlockedByDependencies: PublicWaitingChildren,
		BlockedByBudget:       PublicRateLimited,
		BlockedByQuota:        PublicRateLimited,
		BlockedByRoute:        PublicWaiting,
		BlockedByLaneState:    PublicWaiting,
		BlockedByOperator:     PublicWaiting,
		NotApplicable:         PublicWaiting,
	}
	for _, lp := range allPhases {
		for _, es := range allEligibility {
			for _, to := range allOutcomes {
				var want PublicState
				switch lp {
				case PhaseTerminal:
					want = terminal[to]
				case PhaseSuspended:
					want = PublicSuspended
				case PhaseActive:
					want = PublicActive
				default: // runnable (and the enum-only submitted)
					want = runnable[es]
				}
				got := DerivePublicState(lp, es, to)
				if got != want {
					t.Errorf("DerivePublicState(%v, %v, %v) = %v, want %v", lp, es, to, got, want)
				}
				v := StateVector{LifecyclePhase: lp, EligibilityState: es, TerminalOutcome: to}
				if v.PublicState() != got {
					t.Errorf("StateVector.PublicState() disagrees for %+v", v)
				}
				if got.IsTerminal() != (lp == PhaseTerminal) {
					t.Errorf("%v.IsTerminal() for phase %v", got, lp)
				}
			}
		}
	}
}

func TestStateVectorCheck(t *testing.T) {
	t.Parallel()
	vec := func(lp LifecyclePhase, os OwnershipState, es EligibilityState, br BlockingReason,
		to TerminalOutcome, as AttemptState) StateVector {
		return StateVector{LifecyclePhase: lp, OwnershipState: os, EligibilityState: es, BlockingReason: br,
			TerminalOutcome: to, AttemptState: as}
	}
	valid := []StateVector{
		vec(PhaseRunnable, OwnershipUnowned, EligibleNow, WaitingForWorker, OutcomeNone, AttemptPendingFirst),
		vec(PhaseRunnable, OwnershipUnowned, NotEligibleUntilTime, WaitingForRetryBackoff, OutcomeNone, AttemptPendingRetry),
		vec(PhaseRunnable, OwnershipUnowned, BlockedByRoute, WaitingForCapableWorker, OutcomeNone, AttemptInterrupted),
		vec(PhaseActive, OwnershipLeased, NotApplicable, BlockingNone, OutcomeNone, AttemptRunning),
		vec(PhaseActive, OwnershipLeaseExpiredReclaimable, NotApplicable, WaitingForWorker, OutcomeNone, AttemptInterrupted),
		vec(PhaseActive, OwnershipLeaseRevoked, NotApplicable, WaitingForWorker, OutcomeNone, AttemptInterrupted),
		vec(PhaseSuspended, OwnershipUnowned, NotApplicable, WaitingForSignal, OutcomeNone, AttemptInterrupted),
		vec(PhaseTerminal, OwnershipUnowned, NotApplicable, BlockingNone, OutcomeSuccess, AttemptTerminal),
		vec(PhaseTerminal, OwnershipUnowned, NotApplicable, BlockingNone, OutcomeCancelled, AttemptNone),
	}
	for _, v := range valid {
		if msg := v.Check(); msg != "" {
			t.Errorf("%+v: %s", v, msg)
		}
	}
	ok := valid[0]
	for _, tc := range []struct {
		v    StateVector
		want string
	}{
		{StateVector{}, "a dimension is unset"},
		{func() StateVector { v := ok; v.AttemptState = 0; return v }(), "a dimension is unset"},
		{vec(PhaseTerminal, OwnershipUnowned, NotApplicable, BlockingNone, OutcomeNone, AttemptTerminal),
			"terminal phase and terminal outcome disagree"},
		{vec(PhaseRunnable, OwnershipUnowned, EligibleNow, WaitingForWorker, OutcomeFailed, AttemptPendingFirst),
			"terminal phase and terminal outcome disagree"},
		{vec(PhaseActive, OwnershipLeased, EligibleNow, BlockingNone, OutcomeNone, AttemptRunning),
			"non-runnable execution has an eligibility state"},
		{vec(PhaseRunnable, OwnershipUnowned, NotApplicable, WaitingForWorker, OutcomeNone, AttemptPendingFirst),
			"runnable execution has no eligibility state"},
		{vec(PhaseActive, OwnershipUnowned, NotApplicable, BlockingNone, OutcomeNone, AttemptRunning),
			"active execution is unowned"},
		{vec(PhaseRunnable, OwnershipLeased, EligibleNow, WaitingForWorker, OutcomeNone, AttemptPendingFirst),
			"inactive execution is owned"},
		{vec(PhaseActive, OwnershipLeaseRevoked, NotApplicable, WaitingForWorker, OutcomeNone, AttemptRunning),
			"running_attempt does not match active and leased"},
		{vec(PhaseActive, OwnershipLeased, NotApplicable, BlockingNone, OutcomeNone, AttemptInterrupted),
			"running_attempt does not match active and leased"},
	} {
		if got := tc.v.Check(); got != tc.want {
			t.Errorf("%+v: Check() = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Every enum prints its spec name and parses it back; 0 and out-of-range
// values print as "".
func TestEnumNames(t *testing.T) {
	t.Parallel()
	check := func(kind string, n int, name func(uint8) string, parse func(string) (uint8, bool)) {
		for v := 1; v <= n; v++ {
			s := name(uint8(v))
			if s == "" {
				t.Errorf("%s %d has no name", kind, v)
			}
			if back, ok := parse(s); !ok || back != uint8(v) {
				t.Errorf("%s %q parses to %d %v", kind, s, back, ok)
			}
		}
		if name(0) != "" || name(uint8(n+1)) != "" {
			t.Errorf("%s: 0 or %d has a name", kind, n+1)
		}
		if _, ok := parse("nonsense"); ok {
			t.Errorf("%s parses nonsense", kind)
		}
	}
	check("phase", 5, func(v uint8) string { return LifecyclePhase(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseLifecyclePhase(s); return uint8(v), ok })
	check("ownership", 4, func(v uint8) string { return OwnershipState(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseOwnershipState(s); return uint8(v), ok })
	check("eligibility", 9, func(v uint8) string { return EligibilityState(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseEligibilityState(s); return uint8(v), ok })
	check("blocking", 15, func(v uint8) string { return BlockingReason(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseBlockingReason(s); return uint8(v), ok })
	check("outcome", 6, func(v uint8) string { return TerminalOutcome(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseTerminalOutcome(s); return uint8(v), ok })
	check("attempt state", 7, func(v uint8) string { return AttemptState(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseAttemptState(s); return uint8(v), ok })
	check("public", 11, func(v uint8) string { return PublicState(v).String() },
		func(s string) (uint8, bool) { v, ok := ParsePublicState(s); return uint8(v), ok })
	check("attempt type", 4, func(v uint8) string { return AttemptType(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseAttemptType(s); return uint8(v), ok })
	check("attempt status", 6, func(v uint8) string { return AttemptStatus(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseAttemptStatus(s); return uint8(v), ok })
	check("grant kind", 2, func(v uint8) string { return GrantKind(v).String() },
		func(s string) (uint8, bool) { v, ok := ParseGrantKind(s); return uint8(v), ok })
}

func TestBlockedEligibility(t *testing.T) {
	t.Parallel()
	want := map[BlockingReason]EligibilityState{
		WaitingForBudget:        BlockedByBudget,
		WaitingForQuota:         BlockedByQuota,
		WaitingForCapableWorker: BlockedByRoute,
		PausedByOperator:        BlockedByOperator,
		PausedByPolicy:          BlockedByLaneState,
	}
	for r := BlockingReason(0); r <= 16; r++ {
		es, ok := BlockedEligibility(r)
		w, admission := want[r]
		if ok != admission || es != w {
			t.Errorf("BlockedEligibility(%v) = %v %v, want %v %v", r, es, ok, w, admission)
		}
	}
}

func TestAttemptStatusIsOpen(t *testing.T) {
	t.Parallel()
	for s := AttemptStarted; s <= AttemptInterruptedReclaimed; s++ {
		if s.IsOpen() != (s == AttemptStarted || s == AttemptSuspended) {
			t.Errorf("%v.IsOpen() = %v", s, s.IsOpen())
		}
	}
}

package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// active is a consistent active, leased execution with one attempt.
func active() *Exec {
	id := model.NewExecutionID(3, model.NewUUIDv4([16]byte{1}))
	lease := &model.Lease{ID: model.LeaseID(model.NewUUIDv4([16]byte{2})), Epoch: 1, WorkerInstanceID: "w1",
		AcquiredAt: t0, ExpiresAt: t0.Add(time.Minute)}
	att := model.AttemptID(model.NewUUIDv4([16]byte{3}))
	v := model.StateVector{
		LifecyclePhase: model.PhaseActive, OwnershipState: model.OwnershipLeased,
		EligibilityState: model.NotApplicable, BlockingReason: model.BlockingNone,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptRunning,
	}
	return &Exec{
		ID: id,
		Snapshot: &model.ExecutionSnapshot{
			ID: id, Lane: "l", State: v, PublicState: v.PublicState(),
			TotalAttempts: 1, CurrentAttempt: &model.AttemptRef{ID: att}, LeaseEpoch: 1, CurrentLease: lease,
		},
		Indexes: []string{"all_executions", "lane:l:active", "lease_expiry", "worker:w1:leases"},
		Attempts: []model.Attempt{{ID: att, Type: model.AttemptInitial, Status: model.AttemptStarted,
			LeaseID: lease.ID, LeaseEpoch: 1, WorkerInstanceID: "w1", StartedAt: t0}},
		History: []model.LeaseEvent{{Seq: 1, Kind: model.LeaseAcquired, LeaseID: lease.ID, LeaseEpoch: 1}},
	}
}

// TestRules breaks one thing at a time in a consistent execution and
// expects the rule that owns it to say so.
func TestRules(t *testing.T) {
	if v := Violations(active()); len(v) > 0 {
		t.Fatalf("consistent execution: %q", v)
	}
	for _, tc := range []struct {
		name   string
		rule   Rule
		mutate func(x *Exec)
		want   string
	}{
		{"public state", StateVector, func(x *Exec) { x.Snapshot.PublicState = model.PublicCompleted }, "public state"},
		{"blocking reason", BlockingReason, func(x *Exec) { x.Snapshot.State.BlockingReason = model.WaitingForWorker }, "blocking reason"},
		{"terminal_at", RecordFields, func(x *Exec) { x.Snapshot.TerminalAt = t0 }, "terminal_at"},
		{"two lanes", LaneIndex, func(x *Exec) {
			x.Indexes = []string{"all_executions", "lane:l:active", "lane:l:eligible", "lease_expiry", "worker:w1:leases"}
		}, "lane indexes"},
		{"unknown index", LaneIndex, func(x *Exec) { x.Indexes = append(x.Indexes, "zzz") }, "unknown index"},
		{"worker index", Lease, func(x *Exec) { x.Indexes = x.Indexes[:3] }, "worker indexes"},
		{"lease_expiry", Lease, func(x *Exec) {
			x.Indexes = []string{"all_executions", "lane:l:active", "worker:w1:leases"}
		}, "lease_expiry"},
		{"attempt timeout", TimerIndexes, func(x *Exec) { x.Snapshot.AttemptTimeout = time.Second }, "attempt_timeout"},
		{"token without quota", Admission, func(x *Exec) { x.Snapshot.AdmissionToken = "t1" }, "admission token"},
		{"quota key without quota", Admission, func(x *Exec) { x.Snapshot.QuotaKey = "k1" }, "quota key"},
		{"budget twice", Admission, func(x *Exec) {
			b := model.BudgetID(model.NewUUIDv4([16]byte{9}))
			x.Snapshot.Budgets = []model.BudgetID{b, b}
		}, "attached twice"},
		{"claim grant", Grant, func(x *Exec) { x.Snapshot.Grant = &model.Grant{Kind: model.GrantClaim} }, "claim grant"},
		{"attempt count", Attempts, func(x *Exec) { x.Snapshot.TotalAttempts = 2 }, "total_attempts"},
		{"history seq", LeaseHistory, func(x *Exec) { x.History[0].Seq = 0 }, "seq 0"},
	} {
		x := active()
		tc.mutate(x)
		got := strings.Join(tc.rule(x), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: rule says %q, want it to mention %q", tc.name, got, tc.want)
		}
	}
}

// suspended is a consistent suspended execution (issue 11): its attempt
// paused, an open suspension with a timeout binding one active waitpoint,
// and a second waitpoint still pending.
func suspended() *Exec {
	x := active()
	s := x.Snapshot
	s.State = model.StateVector{
		LifecyclePhase: model.PhaseSuspended, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.NotApplicable, BlockingReason: model.WaitingForApproval,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptInterrupted,
	}
	s.PublicState = s.State.PublicState()
	s.CurrentLease = nil
	x.Attempts[0].Status = model.AttemptSuspended
	x.Indexes = []string{"all_executions", "lane:l:suspended", "pending_waitpoint_expiry", "suspended", "suspension_timeout"}
	sp := model.SuspensionID(model.NewUUIDv4([16]byte{4}))
	w1, w2 := model.WaitpointID(model.NewUUIDv4([16]byte{5})), model.WaitpointID(model.NewUUIDv4([16]byte{6}))
	x.Suspend = &SuspendView{
		Suspension: &model.SuspensionSnapshot{ID: sp, Execution: x.ID, Reason: model.SuspendForApproval,
			Waitpoint: w1, Waitpoints: []model.WaitpointID{w1}, SuspendedAt: t0, TimeoutAt: t0.Add(time.Hour)},
		Waitpoints: []model.WaitpointSnapshot{
			{ID: w1, Execution: x.ID, State: model.WaitpointActive, CreatedAt: t0, Suspension: sp},
			{ID: w2, Execution: x.ID, State: model.WaitpointPending, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		},
	}
	return x
}

// TestSuspendRules does the same for the suspension rules, and checks
// that they are skipped for a store without model.SuspendStore.
func TestSuspendRules(t *testing.T) {
	if v := Violations(suspended()); len(v) > 0 {
		t.Fatalf("consistent suspended execution: %q", v)
	}
	for _, tc := range []struct {
		name   string
		rule   Rule
		mutate func(x *Exec)
		want   string
	}{
		{"not in suspended set", Suspension, func(x *Exec) {
			x.Indexes = []string{"all_executions", "lane:l:suspended", "pending_waitpoint_expiry", "suspension_timeout"}
		}, "suspended set"},
		{"closed suspension", Suspension, func(x *Exec) {
			x.Suspend.Suspension.ClosedAt, x.Suspend.Suspension.ClosedBy = t0, model.ClosedBySignal
		}, "open suspension"},
		{"no suspension", Suspension, func(x *Exec) { x.Suspend.Suspension = nil }, "open suspension"},
		{"timeout index", Suspension, func(x *Exec) { x.Suspend.Suspension.TimeoutAt = time.Time{} }, "suspension_timeout"},
		{"reason", Suspension, func(x *Exec) { x.Suspend.Suspension.Reason = model.SuspendForCallback }, "blocking reason"},
		{"suspended blocking reason", BlockingReason, func(x *Exec) { x.Snapshot.State.BlockingReason = model.WaitingForWorker }, "suspended with blocking reason"},
		{"attempt not paused", Attempts, func(x *Exec) { x.Attempts[0].Status = model.AttemptStarted }, "paused"},
		{"pending index", Waitpoints, func(x *Exec) {
			x.Suspend.Waitpoints[1].State, x.Suspend.Waitpoints[1].ClosedAt, x.Suspend.Waitpoints[1].ClosedBy =
				model.WaitpointClosed, t0, model.ClosedWaitpointTTL
		}, "pending_waitpoint_expiry"},
		{"active unbound", Waitpoints, func(x *Exec) { x.Suspend.Waitpoints[0].Suspension = model.SuspensionID{} }, "not bound"},
		{"terminal open waitpoint", Waitpoints, func(x *Exec) {
			x.Snapshot.State = model.StateVector{LifecyclePhase: model.PhaseTerminal, OwnershipState: model.OwnershipUnowned,
				EligibilityState: model.NotApplicable, BlockingReason: model.BlockingNone,
				TerminalOutcome: model.OutcomeCancelled, AttemptState: model.AttemptTerminal}
		}, "terminal with 2 open waitpoints"},
	} {
		x := suspended()
		tc.mutate(x)
		got := strings.Join(tc.rule(x), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: rule says %q, want it to mention %q", tc.name, got, tc.want)
		}
	}
	x := suspended()
	x.Suspend = nil
	x.Indexes = []string{"all_executions", "lane:l:suspended"}
	if v := Violations(x); len(v) > 0 {
		t.Fatalf("without model.SuspendStore the suspension rules must be skipped: %q", v)
	}
}

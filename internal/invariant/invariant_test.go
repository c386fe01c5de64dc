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

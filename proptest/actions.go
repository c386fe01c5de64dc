package proptest

import (
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// This file holds the action table, the helpers several areas share and
// the clock actions. The actions of each area live in the file named like
// its storetest and store file: create.go, claim.go, lease.go,
// terminal.go, scan.go, worker.go, reads.go, flow.go, flow_await.go,
// suspend.go, admission.go, stream.go, feed.go, retention.go, lane.go,
// tags.go, repair.go.

// action is one kind of step. Its weight is how often it is drawn.
type action struct {
	name   string
	weight int
	run    func(m *machine, t *rapid.T)
}

// actions lists every kind of step. The first one, a clock advance by a
// drawn amount, is what shrinking turns unneeded steps into (it shrinks to
// an advance by zero, a no-op).
var actions []*action

// actionNames repeats each name by its weight, so drawing from it draws
// actions by weight and the trace shows names.
var (
	actionNames []string
	actionByKey = map[string]*action{}
	genAction   *rapid.Generator[string]
)

func init() {
	actions = []*action{
		{"AdvanceTime", 6, (*machine).actAdvance},
		{"AdvanceToDue", 3, (*machine).actAdvanceToDue},
		{"Create", 10, (*machine).actCreate},
		{"ClaimGrantIssue", 4, (*machine).actClaimGrant},
		{"ExecutionClaim", 5, (*machine).actClaim},
		{"GrantThenClaim", 2, (*machine).actGrantThenClaim},
		{"ExecutionGrantAndClaim", 5, (*machine).actGrantAndClaim},
		{"ExecutionClaimNext", 6, (*machine).actClaimNext},
		{"ExecutionBlock", 2, (*machine).actBlock},
		{"ExecutionUnblock", 2, (*machine).actUnblock},
		{"RouteUnblock", 4, (*machine).actRouteUnblock},
		{"LeaseRenew", 3, (*machine).actRenew},
		{"ExecutionUpdateProgress", 2, (*machine).actProgress},
		{"ExecutionComplete", 4, (*machine).actComplete},
		{"ExecutionFail", 4, (*machine).actFail},
		{"ExecutionCancel", 3, (*machine).actCancel},
		{"ExecutionDelay", 3, (*machine).actDelay},
		{"ExecutionChangePriority", 2, (*machine).actChangePriority},
		{"LeaseRevoke", 3, (*machine).actRevoke},
		{"LeaseMarkExpired", 3, (*machine).actMarkExpired},
		{"ReclaimGrantIssue", 3, (*machine).actReclaimGrant},
		{"ExecutionReclaim", 4, (*machine).actReclaim},
		{"ReclaimFlow", 3, (*machine).actReclaimFlow},
		{"ExecutionRecover", 2, (*machine).actRecover},
		{"RevokeThenRecover", 2, (*machine).actRevokeThenRecover},
		{"ExecutionReplay", 3, (*machine).actReplay},
		{"ReplayThenCancel", 2, (*machine).actReplayThenCancel},
		{"ExecutionExpire", 3, (*machine).actExpire},
		{"TimeoutFlow", 3, (*machine).actTimeoutFlow},
		{"ExecutionPromoteDelayed", 2, (*machine).actPromote},
		{"Scanner", 5, (*machine).actScanner},
		{"WorkerRegister", 3, (*machine).actWorkerRegister},
		{"WorkerHeartbeat", 2, (*machine).actWorkerHeartbeat},
		{"WorkerDeregister", 1, (*machine).actWorkerDeregister},
		{"WorkerExpire", 2, (*machine).actWorkerExpire},
		{"Read", 2, (*machine).actRead},
		{"ExecutionDelete", 2, (*machine).actDelete},
		{"RetentionTrim", 3, (*machine).actRetentionTrim},
		{"LaneRelease", 1, (*machine).actLaneRelease},
		{"FlowDelete", 2, (*machine).actFlowDelete},
		{"FlowRetire", 1, (*machine).actFlowRetire},
		{"PartitionDue", 1, (*machine).actPartitionDue},
		{"FlowCreate", 2, (*machine).actFlowCreate},
		{"FlowAddMember", 3, (*machine).actFlowAddMember},
		{"EdgeStage", 4, (*machine).actEdgeStage},
		{"EdgeGroupSet", 2, (*machine).actEdgeGroupSet},
		{"FlowRead", 2, (*machine).actFlowRead},
		{"FlowGraph", 5, (*machine).actFlowGraph},
		{"FlowSeal", 3, (*machine).actFlowSeal},
		{"FlowForeignMember", 1, (*machine).actFlowForeignMember},
		{"FlowOpenRefusals", 1, (*machine).actFlowOpenRefusals},
		{"FlowCancel", 1, (*machine).actFlowCancel},
		{"ExecutionAwaitChildren", 4, (*machine).actAwaitChildren},
		{"WaitpointCreate", 3, (*machine).actWaitpointCreate},
		{"ExecutionSuspend", 5, (*machine).actSuspend},
		{"SignalDeliver", 5, (*machine).actSignal},
		{"ExecutionResume", 2, (*machine).actResume},
		{"SuspensionExpire", 4, (*machine).actSuspensionExpire},
		{"SuspendScenario", 2, (*machine).actSuspendScenario},
		{"WaitpointExpire", 1, (*machine).actWaitpointExpire},
		{"SuspendRead", 1, (*machine).actSuspendRead},
		// admission (admission.go, admission_claim.go)
		{"BudgetCreate", 2, (*machine).actBudgetCreate},
		{"BudgetReport", 4, (*machine).actBudgetReport},
		{"BudgetRelease", 1, (*machine).actBudgetRelease},
		{"BudgetReset", 1, (*machine).actBudgetReset},
		{"BudgetResetDue", 1, (*machine).actBudgetResetDue},
		{"BudgetReconcile", 1, (*machine).actBudgetReconcile},
		{"BudgetStatus", 1, (*machine).actBudgetStatus},
		{"QuotaCreate", 2, (*machine).actQuotaCreate},
		{"QuotaAdmit", 3, (*machine).actQuotaAdmit},
		{"QuotaRelease", 2, (*machine).actQuotaRelease},
		{"QuotaStatus", 1, (*machine).actQuotaStatus},
		{"QuotaReconcile", 1, (*machine).actQuotaReconcile},
		{"AdmitFlow", 8, (*machine).actAdmitFlow},
		{"AdmissionBlocked", 1, (*machine).actAdmissionBlocked},
		{"AdmissionUnblock", 4, (*machine).actAdmissionUnblock},
		{"ReleaseOutbox", 2, (*machine).actReleaseOutbox},
		{"ScanFiltered", 1, (*machine).actScanFiltered},
		{"BudgetScenario", 2, (*machine).actBudgetScenario},
		{"QuotaScenario", 2, (*machine).actQuotaScenario},
		// attempt streams (stream.go)
		{"StreamAppend", 4, (*machine).actStreamAppend},
		{"StreamScenario", 2, (*machine).actStreamScenario},
		{"StreamRead", 2, (*machine).actStreamRead},
		{"StreamSummary", 1, (*machine).actStreamSummary},
		// event feeds (feed.go)
		{"FeedRead", 3, (*machine).actFeedRead},
		// lane pause (lane.go)
		{"LanePause", 2, (*machine).actLanePause},
		{"LaneResume", 3, (*machine).actLaneResume},
		{"LaneState", 1, (*machine).actLaneState},
		{"LaneScenario", 2, (*machine).actLaneScenario},
		// tags after create (tags.go)
		{"ExecutionTagsSet", 3, (*machine).actExecutionTagsSet},
		{"FlowTagsSet", 1, (*machine).actFlowTagsSet},
		// index repair (repair.go)
		{"IndexRepair", 2, (*machine).actIndexRepair},
		{"TamperRepair", 3, (*machine).actTamperRepair},
	}
	for _, a := range actions {
		actionByKey[a.name] = a
		for range a.weight {
			actionNames = append(actionNames, a.name)
		}
	}
	genAction = rapid.SampledFrom(actionNames)
}

func pickAction(t *rapid.T) *action { return actionByKey[genAction.Draw(t, "action")] }

// pickAction draws the step's action: by weight, or, when the options
// boost some actions (the coverage test's extra rounds), one of those in a
// third of the steps.
func (m *machine) pickAction(t *rapid.T) *action {
	if len(m.opts.boost) > 0 && chance(t, 33, "boosted") {
		return actionByKey[drawFrom(t, m.opts.boost, "boosted_action")]
	}
	return pickAction(t)
}

// invalid draws whether a call gets one invalid input (1 in 20) and which of
// n; -1 means none.
func invalid(t *rapid.T, n int) int {
	if !chance(t, 5, "invalid") {
		return -1
	}
	return drawIndex(t, n, "invalid_field")
}

const leaseCorruptions = 6

func corruptLease(r *model.LeaseRequest, k int) {
	switch k {
	case 0:
		r.LeaseTTL = 0
	case 1:
		r.LeaseTTL = model.MaxLeaseTTL + time.Millisecond
	case 2:
		r.LeaseID = model.LeaseID{}
	case 3:
		r.AttemptID = model.AttemptID{}
	case 4:
		r.WorkerID = ""
	case 5:
		r.WorkerInstanceID = "has space"
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

var (
	genSmallMs  = rapid.Int64Range(0, 1000)
	genMediumMs = rapid.Int64Range(0, 30_000)
	genLargeMs  = rapid.Int64Range(0, 600_000)
	genGrantTTL = rapid.Int64Range(1, model.MaxGrantTTL.Milliseconds())
)

// ---- time ----

func (m *machine) actAdvance(t *rapid.T) {
	var d int64
	switch scale := genPercent.Draw(t, "scale"); {
	case scale < 50:
		d = genSmallMs.Draw(t, "advance_ms")
	case scale < 85:
		d = genMediumMs.Draw(t, "advance_ms")
	default:
		d = genLargeMs.Draw(t, "advance_ms")
	}
	if d > 0 {
		t.Logf("step %d: advance %v", m.step, ms(d))
	}
	m.clock.Advance(ms(d))
}

// actAdvanceToDue jumps to one of the times the state is waiting for (a
// lease or grant expiry, a delay, a deadline, a timer, a worker or
// idempotency expiry, a best-effort stream's expiry), give or take a
// millisecond, to hit the boundaries.
func (m *machine) actAdvanceToDue(t *rapid.T) {
	now := m.now()
	var cands []time.Time
	add := func(ts time.Time) {
		if ts.After(now) {
			cands = append(cands, ts)
		}
	}
	for _, r := range m.obs[0].Due {
		add(r.NextDueAt)
	}
	for _, x := range m.obs[0].Execs {
		s := x.Snapshot
		if s.CurrentLease != nil {
			add(s.CurrentLease.ExpiresAt)
			add(s.CurrentLease.AcquiredAt.Add(s.AttemptTimeout))
		}
		if s.Grant != nil {
			add(s.Grant.ExpiresAt)
		}
		add(s.DelayUntil)
		add(s.Deadline)
		if so := x.Suspend; so != nil {
			add(so.timeoutAt(s.State))
			for _, w := range so.Waitpoints {
				if w.State == model.WaitpointPending {
					add(w.ExpiresAt)
				}
			}
		}
	}
	for _, d := range m.susp.dedup {
		add(d.expiresAt)
	}
	for _, ws := range m.workers {
		for _, w := range ws {
			add(w.expiresAt)
		}
	}
	for _, v := range m.idem {
		add(v.expiresAt)
	}
	for _, at := range m.admissionDue() {
		add(at)
	}
	for _, at := range m.streamDue() {
		add(at)
	}
	if len(cands) == 0 {
		m.clock.Advance(time.Millisecond)
		return
	}
	slices.SortFunc(cands, time.Time.Compare)
	cands = slices.CompactFunc(cands, time.Time.Equal)
	target := drawFrom(t, cands, "due").Add(ms(int64(rapid.IntRange(-1, 1).Draw(t, "off_by_ms"))))
	if target.After(now) {
		t.Logf("step %d: advance to %v", m.step, target)
		m.clock.Set(target)
	}
}

// ---- shared by several areas ----

func (m *machine) drawSource(t *rapid.T) model.Source {
	if chance(t, 25, "operator") {
		return model.SourceOperator
	}
	return model.SourceWorker
}

// fencedSource draws the source and fence of a complete/fail/delay/cancel.
func (m *machine) fencedSource(t *rapid.T, id model.ExecutionID) (model.Source, model.Fence) {
	src := m.drawSource(t)
	if src == model.SourceOperator {
		return src, model.Fence{}
	}
	return src, m.drawFence(t, id)
}

// corruptSource makes the source or fence invalid for k 0 (an operator
// with a fence) and 1 (an unknown source).
func (m *machine) corruptSource(src *model.Source, f *model.Fence, k int) {
	switch k {
	case 0:
		*src, *f = model.SourceOperator, model.Fence{LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{1})), LeaseEpoch: 1, AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{2}))}
	case 1:
		*src = "bogus"
	}
}

var (
	reasons    = []string{"", "boom", "ünïcødé"}
	categories = []model.FailureCategory{"", model.FailureTransient, model.FailurePermanent, model.FailureTimeout,
		model.FailureCancelled, model.FailureInfraCrash, model.FailurePanic, model.FailurePayloadInvalid,
		model.FailureUnknownKind, "custom_cat"}
)

// observeQuiet refreshes store A's observation between the calls of one
// step, so the next call's predictions use the state it acts on.
func (m *machine) observeQuiet(t *rapid.T) {
	t.Helper()
	o, err := Observe(m.ctx, m.stores[0], m.now(), m.observeOptions())
	if err != nil {
		m.fatalf(t, "observe: %v", err)
	}
	m.obs[0] = o
}

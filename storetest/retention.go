package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Retention and delete (model.RetentionStore): the retention index, the
// operator delete and the retention scanner's delete.

const ixRetention = "retention" // model.IndexRetention

// keepAll is a retention that differs per outcome class, so a test sees
// which one an ending used.
var keepAll = model.Retention{Completed: time.Hour, Failed: 7 * time.Hour, Cancelled: 3 * time.Hour}

func withRetention(r model.Retention) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Retention = r }
}

func testRetention(t *testing.T, newStore NewStoreFunc) {
	cases := []struct {
		name string
		run  func(*retentionHarness)
	}{
		{"IndexedByOutcome", retentionIndexedByOutcome},
		{"ZeroKeepsForGood", retentionZeroKeeps},
		{"ReplayLeavesIndex", retentionReplayLeaves},
		{"DeleteRefusals", retentionDeleteRefusals},
		{"DeleteTerminal", retentionDeleteTerminal},
		{"DeleteDue", retentionDeleteDue},
		{"DeleteFreesIdempotencyKey", retentionDeleteFreesKey},
		{"DeleteOwnedRecords", retentionDeleteOwned},
		{"FlowMemberKept", retentionFlowMember},
		{"DeleteReportsBudgets", retentionDeleteBudgets},
		{"DeleteReleasesLane", retentionReleasesLane},
	}
	for _, c := range flowRetentionCases { // retention_flow.go
		cases = append(cases, struct {
			name string
			run  func(*retentionHarness)
		}{c.name, func(h *retentionHarness) { c.run(newFlowRetention(h)) }})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			rs, ok := optionalOf[model.RetentionStore](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.RetentionStore", h.s)
			}
			c.run(&retentionHarness{harness: h, rs: rs})
		})
	}
}

// retentionHarness is a harness with the store's retention operations.
type retentionHarness struct {
	*harness
	rs model.RetentionStore
}

func (h *retentionHarness) del(id model.ExecutionID, due bool, now time.Time) (*model.ExecutionDeleteResult, error) {
	return h.rs.ExecutionDelete(h.ctx, &model.ExecutionDeleteParams{ID: id, Due: due, Now: now})
}

// deleted deletes id (due or not) and checks it is gone from every read.
func (h *retentionHarness) deleted(id model.ExecutionID, due bool, now time.Time) *model.ExecutionDeleteResult {
	h.t.Helper()
	res := call(h.del(id, due, now)).must(h.t)
	if res.Outcome != model.DeleteDeleted {
		h.t.Fatalf("delete %v (due %v) at %v: %v, want deleted", id, due, now, res.Outcome)
	}
	h.wantGone(id)
	return res
}

// wantGone checks that no read finds id and no index holds it.
func (h *retentionHarness) wantGone(id model.ExecutionID) {
	h.t.Helper()
	_, err := h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: id})
	wantErr(h.t, err, model.ErrNotFound)
	_, err = h.s.AttemptList(h.ctx, &model.AttemptListParams{ID: id})
	wantErr(h.t, err, model.ErrNotFound)
	_, err = h.s.LeaseHistory(h.ctx, &model.LeaseHistoryParams{ID: id, Limit: 10})
	wantErr(h.t, err, model.ErrNotFound)
	_, err = h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: id})
	wantErr(h.t, err, model.ErrNotFound)
	h.wantIndexes(id)
	for _, got := range h.listAll() {
		if got == id {
			h.t.Fatalf("%v still listed", id)
		}
	}
}

// dueAt returns when id's retention entry is due (zero: none), scanning
// its partition's retention index far ahead.
func (h *retentionHarness) dueAt(id model.ExecutionID) time.Time {
	h.t.Helper()
	res := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
		Partition: id.Partition(), Index: model.IndexRetention, Now: at(model.MaxRetention), Limit: model.MaxPageSize,
	})).must(h.t)
	for _, it := range res.Items {
		if it.ID == id {
			return it.DueAt
		}
	}
	return time.Time{}
}

func (h *retentionHarness) wantDueAt(id model.ExecutionID, want time.Time) {
	h.t.Helper()
	if got := h.dueAt(id); !got.Equal(want) {
		h.t.Fatalf("retention of %v due at %v, want %v", id, got, want)
	}
}

// retentionIndexedByOutcome: each ending files the execution in the
// retention index at its terminal time plus its outcome class's retention;
// PartitionDue reports the earliest.
func retentionIndexedByOutcome(h *retentionHarness) {
	ok, okf := h.active(at(0), withRetention(keepAll))
	h.complete(ok, okf.Fence(), at(time.Second))
	h.wantIndexes(ok, ixAll, ixLane(laneA, "terminal"), ixRetention)
	h.wantDueAt(ok, at(time.Second+time.Hour))
	if s := h.describe(ok); s.Retention != keepAll {
		h.t.Fatalf("snapshot retention %+v, want %+v", s.Retention, keepAll)
	}

	bad, badf := h.active(at(0), withRetention(keepAll))
	if res := h.fail(bad, badf.Fence(), model.FailurePermanent, at(2*time.Second)); res.Outcome != model.FailTerminal {
		h.t.Fatalf("fail: %+v", res)
	}
	h.wantDueAt(bad, at(2*time.Second+7*time.Hour))

	gone := h.create(at(0), withRetention(keepAll))
	h.cancelOp(gone, at(3*time.Second))
	h.wantDueAt(gone, at(3*time.Second+3*time.Hour))

	pd := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: h.p0})).must(h.t)
	if !pd.Retention.Equal(at(time.Second + time.Hour)) {
		h.t.Fatalf("PartitionDue retention %v, want %v", pd.Retention, at(time.Second+time.Hour))
	}
}

// retentionZeroKeeps: a zero retention for the outcome keeps the
// execution out of the index (for good); a live execution is never in it.
func retentionZeroKeeps(h *retentionHarness) {
	live := h.create(at(0), withRetention(keepAll))
	h.wantIndexes(live, ixAll, ixLane(laneA, "eligible"))
	id, c := h.active(at(0), withRetention(model.Retention{Failed: time.Hour}))
	h.complete(id, c.Fence(), at(time.Second))
	h.wantIndexes(id, ixAll, ixLane(laneA, "terminal"))
	pd := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: h.p0})).must(h.t)
	if !pd.Retention.IsZero() {
		h.t.Fatalf("PartitionDue retention %v, want none", pd.Retention)
	}
}

// retentionReplayLeaves: a replay takes the execution out of the index;
// its next ending files it again from the new terminal time.
func retentionReplayLeaves(h *retentionHarness) {
	id, c := h.active(at(0), withRetention(keepAll))
	h.complete(id, c.Fence(), at(time.Second))
	call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "again", RequestedBy: "op", Now: at(time.Minute)})).must(h.t)
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
	res, err := h.del(id, true, at(2*time.Hour))
	if err != nil || res.Outcome != model.DeleteNotTerminalCleaned {
		h.t.Fatalf("due delete of a replayed execution: %+v %v", res, err)
	}
	c2 := h.claim(id, wA, at(2*time.Minute))
	h.complete(id, c2.Fence(), at(2*time.Minute+time.Second))
	h.wantDueAt(id, at(2*time.Minute+time.Second+time.Hour))
}

// retentionDeleteRefusals: an operator delete refuses an unknown and a
// live execution and changes nothing.
func retentionDeleteRefusals(h *retentionHarness) {
	_, err := h.del(h.newID(h.p0), false, at(0))
	wantErr(h.t, err, model.ErrNotFound)
	for _, mk := range []func() model.ExecutionID{
		func() model.ExecutionID { return h.create(at(0), withRetention(keepAll)) },
		func() model.ExecutionID { id, _ := h.active(at(0), withRetention(keepAll)); return id },
		func() model.ExecutionID {
			id := h.create(at(0), withDelay(at(time.Hour)))
			return id
		},
	} {
		id := mk()
		h.unchanged(id, func() {
			_, err := h.del(id, false, at(time.Second))
			wantErr(h.t, err, model.ErrNotTerminal)
		})
	}
}

// retentionDeleteTerminal: an operator deletes a terminal execution at
// once, whatever its retention (none included); a second delete finds
// nothing.
func retentionDeleteTerminal(h *retentionHarness) {
	id, c := h.active(at(0))
	h.complete(id, c.Fence(), at(time.Second))
	other := h.create(at(0))
	before := h.view(other)
	res := h.deleted(id, false, at(2*time.Second))
	if len(res.Budgets) != 0 {
		h.t.Fatalf("budgets %v, want none", res.Budgets)
	}
	_, err := h.del(id, false, at(3*time.Second))
	wantErr(h.t, err, model.ErrNotFound)
	wantEqual(h.t, "the other execution", before, h.view(other))
}

// retentionDeleteDue: the scanner's delete waits for the entry's time,
// then deletes; it drops a stale entry rather than failing.
func retentionDeleteDue(h *retentionHarness) {
	id, c := h.active(at(0), withRetention(keepAll))
	h.complete(id, c.Fence(), at(time.Second))
	due := at(time.Second + time.Hour)
	h.unchanged(id, func() {
		res := call(h.del(id, true, due.Add(-time.Millisecond))).must(h.t)
		if res.Outcome != model.DeleteNotYetDue {
			h.t.Fatalf("a millisecond early: %v", res.Outcome)
		}
	})
	h.deleted(id, true, due)
	res := call(h.del(id, true, due)).must(h.t)
	if res.Outcome != model.DeleteNotFoundCleaned {
		h.t.Fatalf("due delete of a deleted execution: %v", res.Outcome)
	}
	// a terminal execution without a retention is not the scanner's
	kept, kc := h.active(at(0))
	h.complete(kept, kc.Fence(), at(time.Second))
	h.unchanged(kept, func() {
		res := call(h.del(kept, true, at(model.MaxRetention))).must(h.t)
		if res.Outcome != model.DeleteNotYetDue {
			h.t.Fatalf("due delete without an entry: %v", res.Outcome)
		}
	})
}

// retentionDeleteFreesKey: once deleted, an execution's idempotency key
// names nothing: a create with it makes a new execution.
func retentionDeleteFreesKey(h *retentionHarness) {
	key := func(p *model.ExecutionCreateParams) { p.IdempotencyKey = "order-7" }
	id, c := h.active(at(0), key)
	h.complete(id, c.Fence(), at(time.Second))
	dup := call(h.s.ExecutionCreate(h.ctx, h.createParams(at(2*time.Second), key))).must(h.t)
	if !dup.Duplicate || dup.ID != id {
		h.t.Fatalf("before the delete: %+v, want a duplicate of %v", dup, id)
	}
	h.deleted(id, false, at(3*time.Second))
	p := h.createParams(at(4*time.Second), key)
	res := call(h.s.ExecutionCreate(h.ctx, p)).must(h.t)
	if res.Duplicate || res.ID != p.ID {
		h.t.Fatalf("after the delete: %+v, want a new execution %v", res, p.ID)
	}
}

// retentionDeleteOwned: a delete takes what the execution owns: result,
// tags, attempts and history of several attempts, stream frames, and its
// suspension, waitpoints and signals.
func retentionDeleteOwned(h *retentionHarness) {
	tags := func(p *model.ExecutionCreateParams) { p.Tags = map[string]string{"app.k": "v"} }
	id, c := h.active(at(0), tags, withRetry(model.RetryPolicy{MaxRetries: 2, Backoff: model.BackoffFixed, Delay: 0}))
	if st, ok := optionalOf[model.StreamStore](h.harness); ok {
		sh := &streamHarness{harness: h.harness, st: st}
		sh.append(durable(id, c.Fence(), "one", at(time.Millisecond)))
	}
	retry := h.fail(id, c.Fence(), model.FailureTransient, at(time.Second)).DelayUntil
	if h.promote(id, laneA, retry) != model.PromotePromoted {
		h.t.Fatal("the retry was not promoted")
	}
	t0 := retry.Sub(base)
	c2 := h.claim(id, wA, at(t0+time.Second))
	if ss, ok := suspendStoreOf(h.harness); ok {
		sh := &suspendHarness{harness: h.harness, ss: ss}
		p := sh.suspendParams(id, c2.Fence(), signalOn(model.WaitpointID{}, "go"), at(t0+3*time.Second))
		p.Condition.Waitpoint = p.Waitpoint
		res := sh.suspend(p)
		sh.sent(sh.signalParams(id, p.Waitpoint, res.CreatedAt, "go", at(t0+4*time.Second)), model.SignalResumed, "", model.PublicWaiting)
		c2 = h.claim(id, wA, at(t0+5*time.Second))
	}
	h.complete(id, c2.Fence(), at(t0+6*time.Second))
	if len(h.attempts(id)) < 2 {
		h.t.Fatalf("attempts: %d", len(h.attempts(id)))
	}
	h.deleted(id, false, at(t0+7*time.Second))
	if st, ok := optionalOf[model.StreamStore](h.harness); ok {
		_, err := st.StreamRead(h.ctx, &model.StreamReadParams{ID: id, Attempt: 0, Count: 10, Now: at(8 * time.Second)})
		wantErr(h.t, err, model.ErrNotFound)
	}
	if ss, ok := suspendStoreOf(h.harness); ok {
		_, err := ss.WaitpointList(h.ctx, &model.WaitpointListParams{ID: id})
		wantErr(h.t, err, model.ErrNotFound)
	}
}

// retentionFlowMember: a flow member is deleted only with its flow: an
// operator delete refuses it, and the scanner's delete of its due entry
// names the flow (in_flow) and leaves the entry and the member for
// FlowDelete (retention_flow.go).
func retentionFlowMember(h *retentionHarness) {
	fs, ok := optionalOf[model.FlowStore](h.harness)
	if !ok {
		h.t.Skip("storetest: the store has no model.FlowStore")
	}
	fh := &flowHarness{harness: h.harness, fs: fs}
	f := fh.newFlow(at(0), nil)
	id := h.create(at(0), inPartition(h.harness, h.cfg.FlowPartition(f)), withRetention(keepAll))
	call(fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: at(0)})).must(h.t)
	fh.seal(f, at(time.Second), 1, 0)
	c := h.claim(id, wA, at(time.Second))
	h.complete(id, c.Fence(), at(2*time.Second))
	h.unchanged(id, func() {
		_, err := h.del(id, false, at(3*time.Second))
		wantErr(h.t, err, model.ErrInFlow)
	})
	res := call(h.del(id, true, at(time.Hour))).must(h.t)
	if res.Outcome != model.DeleteNotYetDue {
		h.t.Fatalf("due delete of a member before its entry is due: %v", res.Outcome)
	}
	h.unchanged(id, func() {
		res = call(h.del(id, true, at(3*time.Hour))).must(h.t)
	})
	if res.Outcome != model.DeleteInFlow || res.Flow != f {
		h.t.Fatalf("due delete of a member: %+v, want in_flow of %v", res, f)
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "terminal"), ixRetention)
	if s := h.describe(id); s.State.LifecyclePhase != model.PhaseTerminal {
		h.t.Fatalf("member after the scanner: %v", s.State)
	}
}

// retentionDeleteBudgets: a delete names the execution's budgets, whose
// ledgers the caller forgets: BudgetRelease with Forget drops the ledger
// and keeps the usage.
func retentionDeleteBudgets(h *retentionHarness) {
	as, ok := admissionStoreOf(h.harness)
	if !ok {
		h.t.Skip("storetest: the store has no model.AdmissionStore")
	}
	b := h.budgetID()
	call(as.BudgetCreate(h.ctx, &model.BudgetCreateParams{ID: b, Limits: map[string]model.BudgetLimit{"tokens": {Hard: 100}}, Now: at(0)})).must(h.t)
	id := h.create(at(0), func(p *model.ExecutionCreateParams) { p.Budgets = []model.BudgetID{b} })
	call(as.BudgetReport(h.ctx, &model.BudgetReportParams{ID: b, Execution: id, Deltas: map[string]int64{"tokens": 30}, Now: at(time.Second)})).must(h.t)
	h.cancelOp(id, at(2*time.Second))
	res := h.deleted(id, false, at(3*time.Second))
	wantEqual(h.t, "budgets", []model.BudgetID{b}, res.Budgets)
	rel := call(as.BudgetRelease(h.ctx, &model.BudgetReleaseParams{ID: b, Execution: id, Forget: true, Now: at(4 * time.Second)})).must(h.t)
	if !rel.Released || rel.Returned["tokens"] != 30 {
		h.t.Fatalf("forget: %+v", rel)
	}
	st := call(as.BudgetStatus(h.ctx, &model.BudgetStatusParams{ID: b, Now: at(5 * time.Second)})).must(h.t)
	if got := st.Usage["tokens"]; got != 30 {
		h.t.Fatalf("usage after forgetting the ledger: %d, want 30", got)
	}
	again := call(as.BudgetRelease(h.ctx, &model.BudgetReleaseParams{ID: b, Execution: id, Forget: true, Now: at(6 * time.Second)})).must(h.t)
	if again.Released {
		h.t.Fatalf("a second forget released %+v", again)
	}
}

// retentionReleasesLane: deleting the last execution of a lane in a
// partition makes the partition forget the lane, so its scanners stop
// walking it (FlowFabric's lane set only grew). IndexTamper is the one
// operation that names a lane's index without an execution of it, and it
// refuses a lane the partition does not have (unknown_lane). An execution
// of the lane in another state or namespace keeps it, another lane is
// untouched, and the next create lists it again.
func retentionReleasesLane(h *retentionHarness) {
	tm, ok := optionalOf[model.IndexTamperer](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.IndexTamperer", h.s)
	}
	const lane model.LaneID = "short-lived"
	probe := h.newID(h.p0)
	listedLane := func(lane model.LaneID, want bool, when string) {
		h.t.Helper()
		err := tm.IndexTamper(h.ctx, &model.IndexTamperParams{ID: probe, Index: ixLane(lane, "eligible"), Action: model.RepairRemoved})
		if want {
			if err != nil {
				h.t.Fatalf("%s: the lane is not listed: %v", when, err)
			}
			return
		}
		wantField(h.t, err, "Index")
		var me *model.Error
		if !errors.As(err, &me) || me.Detail != "unknown_lane" {
			h.t.Fatalf("%s: %v, want unknown_lane", when, err)
		}
	}
	listed := func(want bool, when string) { h.t.Helper(); listedLane(lane, want, when) }
	listed(false, "before any create")
	kept := h.create(at(0))
	done, c := h.active(at(0), withLane(lane))
	h.complete(done, c.Fence(), at(time.Second))
	running, _ := h.active(at(0), withLane(lane))
	other := h.create(at(0), withLane(lane), withNamespace("ns-b"))
	h.cancelOp(other, at(time.Second))
	h.deleted(done, false, at(2*time.Second))
	listed(true, "an active execution of the lane is left")
	h.deleted(other, false, at(2*time.Second))
	listed(true, "the active execution is still there")
	h.cancelOp(running, at(3*time.Second))
	listed(true, "a terminal execution of the lane is left")
	h.deleted(running, false, at(4*time.Second))
	listed(false, "every execution of the lane is deleted")
	listedLane(laneA, true, "another lane of the partition, after the release")
	h.wantIndexes(kept, ixLane(laneA, "eligible"), ixAll)
	again := h.create(at(5*time.Second), withLane(lane))
	listed(true, "a new create")
	h.wantIndexes(again, ixLane(lane, "eligible"), ixAll)
}

package storetest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Deleting finished flows (model.FlowDeleter): the operator's FlowDelete,
// the retention scanner's (Due), and the one retention entry a finished
// flow's members collapse into. Registered with the Retention group.

var flowRetentionCases = []struct {
	name string
	run  func(*flowRetentionHarness)
}{
	{"FlowDeleteFinished", flowDeleteFinished},
	{"FlowDeleteRefusesLive", flowDeleteRefusesLive},
	{"FlowDeleteDue", flowDeleteDue},
	{"FlowDeleteKeptForGood", flowDeleteKeptForGood},
	{"FlowSealAndCancelFileFlow", flowSealCancelFile},
	{"FlowDeleteReportsBudgets", flowDeleteBudgets},
	{"FlowDeleteValidation", flowDeleteValidation},
	{"FlowDeleteTooLarge", flowDeleteTooLarge},
}

// flowRetentionHarness is a retention harness with the store's flow
// operations and FlowDelete.
type flowRetentionHarness struct {
	*retentionHarness
	fh *flowHarness
	fd model.FlowDeleter
}

// newFlowRetention returns the harness, skipping a store without flows or
// FlowDelete.
func newFlowRetention(h *retentionHarness) *flowRetentionHarness {
	fs, ok := optionalOf[model.FlowStore](h.harness)
	if !ok {
		h.t.Skip("storetest: the store has no model.FlowStore")
	}
	fd, ok := optionalOf[model.FlowDeleter](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FlowDeleter", h.s)
	}
	return &flowRetentionHarness{retentionHarness: h, fh: &flowHarness{harness: h.harness, fs: fs}, fd: fd}
}

func (h *flowRetentionHarness) fdel(f model.FlowID, due bool, now time.Time) (*model.FlowDeleteResult, error) {
	return h.fd.FlowDelete(h.ctx, &model.FlowDeleteParams{Flow: f, Due: due, Now: now})
}

// heldMember creates an execution with retention r in f's partition and
// adds it to open flow f (it is held).
func (h *flowRetentionHarness) heldMember(f model.FlowID, r model.Retention, now time.Time) model.ExecutionID {
	h.t.Helper()
	id := h.create(now, inPartition(h.harness, h.cfg.FlowPartition(f)), withRetention(r))
	h.fh.join(f, id, now)
	return id
}

// finish claims a released member and completes it a second later.
func (h *flowRetentionHarness) finish(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	c := h.claim(id, wA, now)
	h.complete(id, c.Fence(), now.Add(time.Second))
}

// byString returns ids in id order (the order FlowDelete reports them in).
func byString(ids ...model.ExecutionID) []model.ExecutionID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b model.ExecutionID) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// wantFlowGone checks that no read finds flow f, that its partition's
// flow lists do not hold it, and that every member is gone.
func (h *flowRetentionHarness) wantFlowGone(f model.FlowID, members ...model.ExecutionID) {
	h.t.Helper()
	_, err := h.fh.fs.FlowDescribe(h.ctx, &model.FlowDescribeParams{Flow: f})
	wantErr(h.t, err, model.ErrFlowNotFound)
	for _, finished := range []bool{false, true} {
		res := call(h.fh.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.cfg.FlowPartition(f), Finished: finished, Limit: model.MaxPageSize})).must(h.t)
		if slices.Contains(res.IDs, f) {
			h.t.Fatalf("flow %v still listed (finished %v)", f, finished)
		}
	}
	for _, id := range members {
		h.wantGone(id)
		_, err := h.fh.fs.EdgeListOutgoing(h.ctx, &model.EdgeListParams{Execution: id})
		wantErr(h.t, err, model.ErrNotFound)
	}
}

// chain builds a sealed flow a → b plus c, all with keepAll, runs a and b
// to success and cancels c: a finished flow of three members.
func (h *flowRetentionHarness) chain() (f model.FlowID, a, b, c model.ExecutionID) {
	h.t.Helper()
	f = h.fh.newFlow(at(0), map[string]string{"app.k": "v"})
	a = h.heldMember(f, keepAll, at(0))
	b = h.heldMember(f, keepAll, at(0))
	c = h.heldMember(f, keepAll, at(0))
	h.fh.stage(f, a, b, at(0))
	h.fh.seal(f, at(time.Second), 2, 0)
	h.finish(a, at(2*time.Second))
	h.finish(b, at(4*time.Second))
	h.cancelOp(c, at(6*time.Second))
	return f, a, b, c
}

// flowDeleteFinished: the operator deletes a finished flow with all its
// members and everything they own; the flow and its members are gone
// from every read, and a second delete finds nothing.
func flowDeleteFinished(h *flowRetentionHarness) {
	f, a, b, c := h.chain()
	if st := h.fh.flow(f); st.State != model.FlowFailed || st.MemberCount != 3 || st.EdgeCount != 1 {
		h.t.Fatalf("flow before the delete: %+v", st)
	}
	res := call(h.fdel(f, false, at(7*time.Second))).must(h.t)
	want := &model.FlowDeleteResult{Outcome: model.DeleteDeleted}
	for _, id := range byString(a, b, c) {
		want.Members = append(want.Members, model.DeletedMember{ID: id})
	}
	wantEqual(h.t, "FlowDelete", want, res)
	h.wantFlowGone(f, a, b, c)
	_, err := h.fdel(f, false, at(8*time.Second))
	wantErr(h.t, err, model.ErrFlowNotFound)
	again := call(h.fdel(f, true, at(8*time.Second))).must(h.t)
	if again.Outcome != model.DeleteNotFoundCleaned {
		h.t.Fatalf("due delete of a deleted flow: %v", again.Outcome)
	}
	_, err = h.del(a, false, at(9*time.Second))
	wantErr(h.t, err, model.ErrNotFound)
}

// flowDeleteRefusesLive: an open flow and a sealed flow with a member not
// terminal are refused, naming why, with nothing written; the scanner's
// delete drops the members' entries (a member that ends later files its
// own) and keeps everything else.
func flowDeleteRefusesLive(h *flowRetentionHarness) {
	f := h.fh.newFlow(at(0), nil)
	a := h.heldMember(f, keepAll, at(0))
	b := h.heldMember(f, keepAll, at(0))
	h.fh.stage(f, a, b, at(0))
	refused := func(detail string) {
		h.t.Helper()
		before := h.fh.flow(f)
		h.unchanged(a, func() {
			h.unchanged(b, func() {
				_, err := h.fdel(f, false, at(time.Hour))
				if e := modelErr(h.t, err, &model.Error{Code: model.CodeExecutionNotTerminal, Field: "Flow"}); e.Detail != detail {
					h.t.Fatalf("refusal detail %q, want %q", e.Detail, detail)
				}
			})
		})
		h.fh.unchanged(f, before)
	}
	refused("open")
	h.fh.seal(f, at(time.Second), 1, 0)
	h.finish(a, at(2*time.Second)) // b released, not run
	h.wantDueAt(a, at(3*time.Second+time.Hour))
	refused(b.String())

	// the scanner's delete of a's entry: the flow is not finished
	res := call(h.del(a, true, at(2*time.Hour))).must(h.t)
	if res.Outcome != model.DeleteInFlow || res.Flow != f {
		h.t.Fatalf("due delete of a: %+v", res)
	}
	before := h.fh.flow(f)
	fres := call(h.fdel(f, true, at(2*time.Hour))).must(h.t)
	if fres.Outcome != model.DeleteNotTerminalCleaned || len(fres.Members) != 0 {
		h.t.Fatalf("due delete of an unfinished flow: %+v", fres)
	}
	h.fh.unchanged(f, before)
	h.wantIndexes(a, ixAll, ixLane(laneA, "terminal"))
	// b ends: it files its own entry, and the flow goes once both are due
	h.finish(b, at(3*time.Hour))
	h.wantDueAt(b, at(3*time.Hour+time.Second+time.Hour))
	if fres := call(h.fdel(f, true, at(4*time.Hour+time.Second))).must(h.t); fres.Outcome != model.DeleteDeleted || len(fres.Members) != 2 {
		h.t.Fatalf("due delete of the finished flow: %+v", fres)
	}
	h.wantFlowGone(f, a, b)
}

// flowDeleteDue: a finished flow is due when all its members are. The
// first member entry to come due names the flow; the scanner's FlowDelete
// before then collapses the members' entries into one, on the first
// member, at the flow's due time, and deletes the flow at that time.
func flowDeleteDue(h *flowRetentionHarness) {
	f, a, b, c := h.chain()
	// a completed at 3s (1h), b at 5s (1h), c cancelled at 6s (3h)
	h.wantDueAt(a, at(3*time.Second+time.Hour))
	h.wantDueAt(b, at(5*time.Second+time.Hour))
	h.wantDueAt(c, at(6*time.Second+3*time.Hour))
	flowDue := at(6*time.Second + 3*time.Hour)

	if res := call(h.del(a, true, at(time.Hour))).must(h.t); res.Outcome != model.DeleteNotYetDue {
		h.t.Fatalf("due delete of a before its entry: %+v", res)
	}
	res := call(h.del(a, true, at(2*time.Hour))).must(h.t)
	if res.Outcome != model.DeleteInFlow || res.Flow != f || len(res.Budgets) != 0 {
		h.t.Fatalf("due delete of a: %+v", res)
	}
	fres := call(h.fdel(f, true, at(2*time.Hour))).must(h.t)
	wantEqual(h.t, "FlowDelete not yet due", &model.FlowDeleteResult{Outcome: model.DeleteNotYetDue, DueAt: flowDue}, fres)
	first := byString(a, b, c)[0]
	for _, id := range []model.ExecutionID{a, b, c} {
		want := time.Time{}
		if id == first {
			want = flowDue
		}
		h.wantDueAt(id, want)
	}
	// again a millisecond early: nothing changes
	before := h.fh.flow(f)
	h.unchanged(first, func() {
		fres = call(h.fdel(f, true, flowDue.Add(-time.Millisecond))).must(h.t)
	})
	wantEqual(h.t, "FlowDelete a millisecond early", &model.FlowDeleteResult{Outcome: model.DeleteNotYetDue, DueAt: flowDue}, fres)
	h.fh.unchanged(f, before)
	// the one entry comes due: the flow goes
	if res := call(h.del(first, true, flowDue)).must(h.t); res.Outcome != model.DeleteInFlow || res.Flow != f {
		h.t.Fatalf("due delete of the flow's entry: %+v", res)
	}
	fres = call(h.fdel(f, true, flowDue)).must(h.t)
	if fres.Outcome != model.DeleteDeleted || len(fres.Members) != 3 {
		h.t.Fatalf("due delete at the flow's due time: %+v", fres)
	}
	h.wantFlowGone(f, a, b, c)
}

// flowDeleteKeptForGood: a member kept for good keeps its flow: the
// scanner's delete drops the members' entries and reports no due time;
// the operator may still delete it.
func flowDeleteKeptForGood(h *flowRetentionHarness) {
	f := h.fh.newFlow(at(0), nil)
	a := h.heldMember(f, keepAll, at(0))
	b := h.heldMember(f, model.Retention{Failed: time.Hour}, at(0)) // completed: kept for good
	h.fh.seal(f, at(time.Second), 2, 0)
	h.finish(a, at(2*time.Second))
	h.finish(b, at(2*time.Second))
	h.wantDueAt(a, at(3*time.Second+time.Hour))
	h.wantDueAt(b, time.Time{})
	fres := call(h.fdel(f, true, at(2*time.Hour))).must(h.t)
	wantEqual(h.t, "FlowDelete of a flow kept for good", &model.FlowDeleteResult{Outcome: model.DeleteNotYetDue}, fres)
	h.wantDueAt(a, time.Time{})
	h.wantIndexes(a, ixAll, ixLane(laneA, "terminal"))
	if st := h.fh.flow(f); st.State != model.FlowCompleted {
		h.t.Fatalf("flow: %+v", st)
	}
	res := call(h.fdel(f, false, at(3*time.Hour))).must(h.t)
	if res.Outcome != model.DeleteDeleted || len(res.Members) != 2 {
		h.t.Fatalf("operator delete: %+v", res)
	}
	h.wantFlowGone(f, a, b)
}

// flowSealCancelFile: FlowSeal and FlowCancel can finish a flow whose
// members have all ended; they file its one retention entry then.
func flowSealCancelFile(h *flowRetentionHarness) {
	for _, cancel := range []bool{false, true} {
		f := h.fh.newFlow(at(0), nil)
		var ids []model.ExecutionID
		for i := range 2 {
			id, cr := h.active(at(0), inPartition(h.harness, h.cfg.FlowPartition(f)), withRetention(keepAll))
			h.fh.join(f, id, at(0))
			h.complete(id, cr.Fence(), at(time.Duration(i+1)*time.Second))
			ids = append(ids, id)
		}
		h.wantDueAt(ids[0], at(time.Second+time.Hour))
		h.wantDueAt(ids[1], at(2*time.Second+time.Hour))
		if cancel {
			res := call(h.fh.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Reason: "stop", Now: at(3 * time.Second)})).must(h.t)
			if len(res.Cancelled) != 0 {
				h.t.Fatalf("cancel: %+v", res)
			}
		} else {
			h.fh.seal(f, at(3*time.Second), 0, 0)
		}
		first := byString(ids...)
		h.wantDueAt(first[0], at(2*time.Second+time.Hour))
		h.wantDueAt(first[1], time.Time{})
		res := call(h.fdel(f, true, at(2*time.Second+time.Hour))).must(h.t)
		if res.Outcome != model.DeleteDeleted {
			h.t.Fatalf("due delete after the seal/cancel (cancel %v): %+v", cancel, res)
		}
		h.wantFlowGone(f, ids...)
	}
}

// flowDeleteBudgets: the delete reports each member's budgets, whose
// ledgers the caller forgets.
func flowDeleteBudgets(h *flowRetentionHarness) {
	as, ok := admissionStoreOf(h.harness)
	if !ok {
		h.t.Skip("storetest: the store has no model.AdmissionStore")
	}
	b1, b2 := h.budgetID(), h.budgetID()
	for _, b := range []model.BudgetID{b1, b2} {
		call(as.BudgetCreate(h.ctx, &model.BudgetCreateParams{ID: b, Limits: map[string]model.BudgetLimit{"tokens": {Hard: 100}}, Now: at(0)})).must(h.t)
	}
	f := h.fh.newFlow(at(0), nil)
	part := h.cfg.FlowPartition(f)
	x := h.create(at(0), inPartition(h.harness, part), func(p *model.ExecutionCreateParams) { p.Budgets = []model.BudgetID{b1, b2} })
	y := h.create(at(0), inPartition(h.harness, part))
	h.fh.join(f, x, at(0))
	h.fh.join(f, y, at(0))
	h.fh.seal(f, at(time.Second), 2, 0)
	call(as.BudgetReport(h.ctx, &model.BudgetReportParams{ID: b1, Execution: x, Deltas: map[string]int64{"tokens": 5}, Now: at(time.Second)})).must(h.t)
	cr := call(h.fh.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Reason: "stop", Now: at(2 * time.Second)})).must(h.t)
	wantEqual(h.t, "cancelled", byString(x, y), cr.Cancelled)
	del := call(h.fdel(f, false, at(3*time.Second))).must(h.t)
	want := map[model.ExecutionID][]model.BudgetID{x: {b1, b2}, y: nil}
	if del.Outcome != model.DeleteDeleted || len(del.Members) != 2 {
		h.t.Fatalf("delete: %+v", del)
	}
	for _, m := range del.Members {
		wantEqual(h.t, "budgets of "+m.ID.String(), want[m.ID], m.Budgets)
	}
	rel := call(as.BudgetRelease(h.ctx, &model.BudgetReleaseParams{ID: b1, Execution: x, Forget: true, Now: at(4 * time.Second)})).must(h.t)
	if !rel.Released || rel.Returned["tokens"] != 5 {
		h.t.Fatalf("forget: %+v", rel)
	}
	h.wantFlowGone(f, x, y)
}

// flowDeleteValidation: bad params are refused naming the field.
func flowDeleteValidation(h *flowRetentionHarness) {
	_, err := h.fdel(model.FlowID{}, false, at(0))
	wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Flow"})
	_, err = h.fdel(h.fh.flowIn(h.p0), true, time.Time{})
	wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Now"})
}

// flowDeleteTooLarge: a finished flow of more than MaxFlowDeleteMembers
// members is refused, naming the count, with nothing written; the
// scanner's delete drops its members' entries and keeps it.
func flowDeleteTooLarge(h *flowRetentionHarness) {
	if testing.Short() {
		h.t.Skip("storetest: a flow of MaxFlowDeleteMembers+1 members (-short)")
	}
	if h.interpreted {
		// on miniredis its 10,001-member cancel took 228 s under -race
		// (past the client's timeout) and 9 min without on a loaded
		// machine; the real servers take seconds
		h.t.Skip("storetest: a flow of MaxFlowDeleteMembers+1 members does not run on an interpreted store (storetest.Interpreted)")
	}
	if h.cfg.WithDefaults().FlowPartitions == 1 {
		h.t.Skip("storetest: a flow of MaxFlowDeleteMembers+1 members runs in the default partitioning only (12-26 s on Valkey)")
	}
	f := h.fh.newFlow(at(0), nil)
	part := h.cfg.FlowPartition(f)
	n := model.MaxFlowDeleteMembers + 1
	var first model.ExecutionID
	for i := range n {
		p := h.createParams(at(0), inPartition(h.harness, part), withRetention(keepAll))
		p.Flow = f
		call(h.s.ExecutionCreate(h.ctx, p)).must(h.t)
		if i == 0 || p.ID.Compare(first) < 0 {
			first = p.ID
		}
	}
	cr := call(h.fh.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Reason: "stop", Now: at(time.Second)})).must(h.t)
	if len(cr.Cancelled) != n {
		h.t.Fatalf("cancelled %d members, want %d", len(cr.Cancelled), n)
	}
	// the cancel finished the flow: its one entry, at its due time
	h.wantDueAt(first, at(time.Second+3*time.Hour))
	before := h.fh.flow(f)
	h.unchanged(first, func() {
		_, err := h.fdel(f, false, at(4*time.Hour))
		if e := modelErr(h.t, err, &model.Error{Code: model.CodeFlowTooLarge, Field: "Flow"}); e.Detail != strconv.Itoa(n) {
			h.t.Fatalf("too large: detail %q, want %d", e.Detail, n)
		}
	})
	h.fh.unchanged(f, before)
	res := call(h.fdel(f, true, at(4*time.Hour))).must(h.t)
	if res.Outcome != model.DeleteTooLargeCleaned || len(res.Members) != 0 {
		h.t.Fatalf("due delete of a flow too large: %+v", res)
	}
	h.wantDueAt(first, time.Time{})
	h.fh.unchanged(f, before)
}

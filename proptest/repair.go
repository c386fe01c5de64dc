package proptest

import (
	"context"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// The repairing index reconciler (model.IndexRepairer): a repair pass over
// a partition answers alike on every store and repairs nothing, since no
// operation leaves an index inconsistent with its record; and a damage
// done alike to every store through the test hook (model.IndexTamperer)
// is reported alike and undone, a blocked execution's group membership
// included.

// repairPass pages IndexRepair over partition part with limit (dry or
// not) and returns every repair.
func (m *machine) repairPass(t *rapid.T, part, limit int, dry bool, f model.ScannerFilter) ([]model.IndexRepair, bool) {
	var out []model.IndexRepair
	var cur model.ExecutionID
	for {
		p := &model.IndexRepairParams{Partition: part, Cursor: cur, Limit: limit, DryRun: dry, Filter: f, Now: m.now()}
		res, err := call(m, t, "IndexRepair", p, optional(model.IndexRepairer.IndexRepair))
		m.expect(t, err == nil, "IndexRepair(%+v): %v", *p, err)
		if err != nil {
			return nil, false
		}
		m.expect(t, res.Examined <= limit && (res.Next.IsZero() || res.Examined == limit),
			"IndexRepair limit %d examined %d next %v", limit, res.Examined, res.Next)
		out = append(out, res.Repairs...)
		if res.Next.IsZero() {
			return out, true
		}
		cur = res.Next
	}
}

// actIndexRepair is the reconciler's visit of one partition: nothing to
// repair, on every store.
func (m *machine) actIndexRepair(t *rapid.T) {
	part := m.drawPartition(t, nil)
	limit := rapid.IntRange(1, 5).Draw(t, "limit")
	if invalid(t, 1) == 0 {
		p := &model.IndexRepairParams{Partition: part, Limit: model.MaxPageSize + 1, Now: m.now()}
		_, err := call(m, t, "IndexRepair", p, optional(model.IndexRepairer.IndexRepair))
		m.expectValidation(t, "IndexRepair", err)
		return
	}
	var f model.ScannerFilter
	if chance(t, 30, "repair_filter") {
		f = drawFilter(t)
	}
	reps, ok := m.repairPass(t, part, limit, genBool.Draw(t, "dry"), f)
	if ok {
		m.expect(t, len(reps) == 0, "IndexRepair of a healthy partition %d repaired %+v", part, reps)
	}
}

// tamperable lists the indexes the hook may damage for an execution of
// lane: the partition's and the lane indexes of every lane.
func tamperable() []string {
	out := slices.Clone(model.TamperIndexes)
	for _, l := range lanes {
		for _, n := range model.TamperLaneIndexes() {
			out = append(out, "lane:"+string(l)+":"+n)
		}
	}
	return out
}

// groupsOf names the blocked group x's record puts it in (a
// budget-blocked execution's budget is not in the snapshot: any of its
// budgets, whose group it is not in when it was blocked on another, and
// then the damage is a no-op alike on every store).
func groupsOf(x *model.ExecutionSnapshot) []string {
	if x == nil || x.State.LifecyclePhase != model.PhaseRunnable {
		return nil
	}
	switch x.State.EligibilityState {
	case model.BlockedByRoute:
		return []string{model.RouteGroupIndex(x.Lane, x.Namespace, x.RequiredCapabilities.CSV())}
	case model.BlockedByBudget:
		var out []string
		for _, b := range x.Budgets {
			out = append(out, model.BudgetGroupIndex(x.Lane, b))
		}
		return out
	case model.BlockedByQuota:
		if !model.UUID(x.Quota).IsZero() {
			return []string{model.QuotaGroupIndex(x.Lane, x.Quota, x.QuotaKey)}
		}
	}
	return nil
}

func tamperOn(s model.Store, ctx context.Context, p *model.IndexTamperParams) (struct{}, error) {
	return struct{}{}, any(s).(model.IndexTamperer).IndexTamper(ctx, p)
}

// actTamperRepair damages one index entry of an execution alike on every
// store, then repairs its partition: the stores report the same repairs,
// all of that execution, and its indexes are what they were.
func (m *machine) actTamperRepair(t *rapid.T) {
	id := m.pickExec(t, nil)
	known := m.snap(id) != nil
	idx := func() []string {
		r, err := call(m, t, "ExecutionIndexes", &model.ExecutionIndexesParams{ID: id}, optional(model.IndexInspector.ExecutionIndexes))
		m.expect(t, err == nil, "ExecutionIndexes(%v): %v", id, err)
		if err != nil {
			return nil
		}
		return r.Indexes
	}
	before := idx()
	index := drawFrom(t, tamperable(), "tamper_index")
	action := model.RepairAction(rapid.IntRange(1, 3).Draw(t, "tamper_action"))
	score := drawFrom(t, []int64{0, 1, m.now().UnixMilli(), model.SuspendedNoTimeoutScore}, "tamper_score")
	if gs := groupsOf(m.snap(id)); len(gs) > 0 && chance(t, 50, "tamper_group") {
		// take a blocked execution out of its group
		index, action = drawFrom(t, gs, "tamper_group_index"), model.RepairRemoved
	}
	switch {
	case known && index == "all_executions" && action == model.RepairRemoved:
		// the walk would never meet it again: not repaired (see
		// model.IndexRepairer)
		return
	case known && index == model.IndexRetention.String() && !m.snap(id).Flow.IsZero():
		// a flow member's retention entry stands for its flow (FlowDelete
		// moves and drops it): the repair leaves it to the flow
		return
	case strings.Contains(index, ":blocked:") && action != model.RepairRemoved && slices.Contains(before, index):
		// a blocked entry's score is not checked: changing it would
		// not be undone
		return
	}
	if !known {
		// a dangling member: the walk meets it through all_executions
		_, err := call(m, t, "IndexTamper", &model.IndexTamperParams{ID: id, Index: "all_executions", Action: model.RepairAdded}, tamperOn)
		m.expect(t, err == nil, "IndexTamper(all_executions) of %v: %v", id, err)
	}
	_, err := call(m, t, "IndexTamper", &model.IndexTamperParams{ID: id, Index: index, Action: action, Score: score}, tamperOn)
	if err != nil {
		// an unknown lane of the partition or a rescore of an unscored
		// index, alike on every store
		m.expect(t, model.CodeOf(err) == model.CodeInvalidInput, "IndexTamper(%s %s) of %v: %v", action, index, id, err)
	}
	dry, ok := m.repairPass(t, id.Partition(), rapid.IntRange(1, 5).Draw(t, "repair_limit"), true, model.ScannerFilter{})
	if !ok {
		return
	}
	reps, ok := m.repairPass(t, id.Partition(), 100, false, model.ScannerFilter{})
	if !ok {
		return
	}
	m.expect(t, cmpEqual(dry, reps), "IndexRepair dry run %+v, then %+v", dry, reps)
	maxReps := 1
	if !known {
		maxReps = 2
	}
	m.expect(t, len(reps) <= maxReps, "IndexRepair after one damage (%s %s %d of %v) repaired %+v", action, index, score, id, reps)
	for _, r := range reps {
		m.expect(t, r.ExecutionID == id, "IndexRepair after damaging %v repaired %+v", id, r)
	}
	after := idx()
	if known {
		m.expect(t, slices.Equal(before, after), "indexes of %v before the damage %v, after the repair %v", id, before, after)
	} else {
		m.expect(t, len(after) == 0, "a dangling %v is still in %v", id, after)
	}
	again, ok := m.repairPass(t, id.Partition(), 100, false, model.ScannerFilter{})
	m.expect(t, !ok || len(again) == 0, "a second repair pass repaired %+v", again)
}

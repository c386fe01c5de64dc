package storetest

import (
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Blocked groups: ExecutionBlock on WaitingForBudget (naming the budget)
// or WaitingForQuota (an execution with a quota) joins the group of its
// lane and budget or bucket; AdmissionBlocked lists the groups and
// AdmissionUnblock returns them to the eligible index.

// blockBudget: a budget block clears the grant, moves the execution to
// blocked:budget (public state rate_limited) and into its lane's group of
// that budget; Budget with another reason is a validation error.
func blockBudget(h *admissionHarness) {
	b := h.budget(limits{"tokens": {Hard: 1}}, at(0))
	x := h.create(at(0), withBudgets(b))
	y := h.create(at(0), withBudgets(b))
	z := h.create(at(0), withBudgets(b), withLane(laneB))
	if res := h.claimNext(wA, nil, 10, at(time.Second)); res.Admit == nil || res.Admit.ID != x {
		h.t.Fatalf("claim-next: %+v", res)
	}
	before := h.describe(x)
	res := call(h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: x, Reason: model.WaitingForBudget, Budget: b, Detail: "budget", Now: at(2 * time.Second)})).must(h.t)
	if res.EligibilityState != model.BlockedByBudget {
		h.t.Fatalf("block: %+v", res)
	}
	want := cloneSnapshot(before)
	want.State = stBlocked(model.BlockedByBudget, model.WaitingForBudget, "budget", model.AttemptPendingFirst)
	want.PublicState = model.PublicRateLimited
	want.LastMutationAt, want.LastTransitionAt = at(2*time.Second), at(2*time.Second)
	want.Grant = nil
	h.wantSnapshot(want)
	h.wantIndexes(x, ixAll, ixBudget(laneA))
	h.wantGroups(h.p0, budgetGroup(laneA, b, 1))
	h.blockOn(y, b, at(3*time.Second))
	h.blockOn(z, b, at(3*time.Second))
	h.wantIndexes(z, ixAll, ixBudget(laneB))
	h.wantGroups(h.p0, budgetGroup(laneA, b, 2), budgetGroup(laneB, b, 1))

	w := h.create(at(0))
	h.unchangedAdm(at(4*time.Second), nil, nil, []model.ExecutionID{w}, func() {
		_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: w, Reason: model.PausedByOperator, Budget: b, Now: at(4 * time.Second)})
		e := modelErr(h.t, err, model.ErrValidation)
		if e.Field != "Budget" {
			h.t.Fatalf("Budget with another reason: field %q (%v)", e.Field, err)
		}
	})
}

// blockQuota: a quota block moves an execution with a quota to
// blocked:quota and into its lane's group of its bucket. Groups sort by
// lane, reason, budget, quota, key.
func blockQuota(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	q := h.capQuota(1, at(0))
	x := h.create(at(0), withQuota(q, "k"))
	y := h.create(at(0), withQuota(q, ""), withBudgets(b))
	u := h.create(at(0), withQuota(q, "k"))
	v := h.create(at(0), withBudgets(b))
	h.blockQuotaOf(x, at(time.Second))
	s := h.wantState(x, stBlocked(model.BlockedByQuota, model.WaitingForQuota, "quota", model.AttemptPendingFirst))
	if s.PublicState != model.PublicRateLimited {
		h.t.Fatalf("public state %v", s.PublicState)
	}
	h.wantIndexes(x, ixAll, ixQuota(laneA))
	h.wantGroups(h.p0, quotaGroup(laneA, q, "k", 1))
	h.blockQuotaOf(y, at(2*time.Second))
	h.blockQuotaOf(u, at(2*time.Second))
	h.blockOn(v, b, at(2*time.Second))
	h.wantGroups(h.p0, budgetGroup(laneA, b, 1), quotaGroup(laneA, q, "", 1), quotaGroup(laneA, q, "k", 2))
}

// blockQuotaWithoutQuota: a quota block of an execution without a quota
// is ErrInvalidBlockingReason and changes nothing.
func blockQuotaWithoutQuota(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	plain := h.create(at(0))
	budgeted := h.create(at(0), withBudgets(b))
	for _, id := range []model.ExecutionID{plain, budgeted} {
		h.unchangedAdm(at(time.Second), nil, nil, []model.ExecutionID{id}, func() {
			_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForQuota, Now: at(time.Second)})
			wantErr(h.t, err, model.ErrInvalidBlockingReason)
		})
	}
	h.wantGroups(h.p0)
}

// blockedGroupsPage: AdmissionBlocked lists up to Limit groups and says
// whether more exist.
func blockedGroupsPage(h *admissionHarness) {
	b1 := h.budget(limits{"tokens": {}}, at(0))
	b2 := h.budget(limits{"tokens": {}}, at(0))
	for _, c := range []struct {
		b    model.BudgetID
		lane model.LaneID
	}{{b2, laneB}, {b1, laneA}, {b2, laneA}} {
		h.blockOn(h.create(at(0), withBudgets(c.b), withLane(c.lane)), c.b, at(time.Second))
	}
	all := []model.AdmissionGroup{budgetGroup(laneA, b1, 1), budgetGroup(laneA, b2, 1), budgetGroup(laneB, b2, 1)}
	h.wantGroups(h.p0, all...)
	res := call(h.as.AdmissionBlocked(h.ctx, &model.AdmissionBlockedParams{Partition: h.p0, Limit: 2})).must(h.t)
	wantEqual(h.t, "limit 2", model.AdmissionBlockedResult{Groups: all[:2], More: true}, *res)
	if h.p1 != h.p0 {
		h.wantGroups(h.p1)
	}
}

// blocked creates an execution of lane l (with opts) and blocks it on
// budget b at d.
func (h *admissionHarness) blockedOn(b model.BudgetID, l model.LaneID, d time.Duration, opts ...createOpt) model.ExecutionID {
	h.t.Helper()
	id := h.create(at(0), append([]createOpt{withBudgets(b), withLane(l)}, opts...)...)
	h.blockOn(id, b, at(d))
	return id
}

// blockedQuota creates an execution of lane l with bucket q/key and
// blocks it at d.
func (h *admissionHarness) blockedQuota(q model.QuotaID, key string, l model.LaneID, d time.Duration) model.ExecutionID {
	h.t.Helper()
	id := h.create(at(0), withQuota(q, key), withLane(l))
	h.blockQuotaOf(id, at(d))
	return id
}

// wantEligible checks that ids are eligible again, unblocked at now.
func (h *admissionHarness) wantEligible(now time.Time, ids ...model.ExecutionID) {
	h.t.Helper()
	for _, id := range ids {
		s := h.wantState(id, stEligible(model.AttemptPendingFirst))
		if !s.LastTransitionAt.Equal(now) {
			h.t.Fatalf("%v: last transition %v, want %v", id, s.LastTransitionAt, now)
		}
		h.wantIndexes(id, ixAll, ixLane(s.Lane, "eligible"))
	}
}

// unblockBudgetOrder: AdmissionUnblock takes each budget in the order
// given, its lanes in name order, each group oldest block first (then
// id), then each bucket likewise.
func unblockBudgetOrder(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	b2 := h.budget(limits{"tokens": {}}, at(0))
	q := h.capQuota(1, at(0))
	yB := h.blockedOn(b, laneB, time.Second)
	x1 := h.blockedOn(b, laneA, 3*time.Second)
	x2 := h.blockedOn(b, laneA, time.Second)
	x3 := h.blockedOn(b, laneA, 2*time.Second)
	x4 := h.blockedOn(b, laneA, time.Second)
	z := h.blockedOn(b2, laneA, 4*time.Second)
	qB := h.blockedQuota(q, "k", laneB, time.Second)
	qA := h.blockedQuota(q, "k", laneA, 2*time.Second)
	now := at(10 * time.Second)
	res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b2, b}, Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "k"}}}, Now: now})
	wantEqual(h.t, "unblocked", model.AdmissionUnblockResult{Unblocked: []model.ExecutionID{z, x2, x4, x3, x1, yB, qA, qB}}, *res)
	h.wantEligible(now, res.Unblocked...)
	h.wantGroups(h.p0)
}

// unblockLimit: Limit bounds the executions unblocked in one call; More
// says the groups still hold some.
func unblockLimit(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	var ids []model.ExecutionID
	for i := range 4 {
		ids = append(ids, h.blockedOn(b, laneA, time.Duration(i+1)*time.Second))
	}
	res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b}, Limit: 2, Now: at(10 * time.Second)})
	wantEqual(h.t, "first call", model.AdmissionUnblockResult{Unblocked: ids[:2], More: true}, *res)
	h.wantEligible(at(10*time.Second), ids[:2]...)
	h.wantGroups(h.p0, budgetGroup(laneA, b, 2))
	res = h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b}, Limit: 10, Now: at(11 * time.Second)})
	wantEqual(h.t, "second call", model.AdmissionUnblockResult{Unblocked: ids[2:]}, *res)
	h.wantGroups(h.p0)
}

// unblockMax: a bucket's Max bounds its executions unblocked over all
// lanes (lanes in name order, oldest first); other buckets stay.
func unblockMax(h *admissionHarness) {
	q := h.capQuota(1, at(0))
	a1 := h.blockedQuota(q, "k", laneA, 2*time.Second)
	bl := h.blockedQuota(q, "k", laneB, time.Second)
	a2 := h.blockedQuota(q, "k", laneA, 3*time.Second)
	j := h.blockedQuota(q, "j", laneA, time.Second)
	bucket := func(max int) []model.QuotaUnblock {
		return []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "k"}, Max: max}}
	}
	res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Quotas: bucket(2), Now: at(10 * time.Second)})
	wantEqual(h.t, "max 2", model.AdmissionUnblockResult{Unblocked: []model.ExecutionID{a1, a2}}, *res)
	h.wantGroups(h.p0, quotaGroup(laneA, q, "j", 1), quotaGroup(laneB, q, "k", 1))
	res = h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Quotas: bucket(0), Now: at(11 * time.Second)})
	wantEqual(h.t, "no bound", model.AdmissionUnblockResult{Unblocked: []model.ExecutionID{bl}}, *res)
	h.wantIndexes(j, ixAll, ixQuota(laneA))
	h.wantGroups(h.p0, quotaGroup(laneA, q, "j", 1))
}

// unblockFilter: an execution the Filter does not match stays blocked.
func unblockFilter(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	a := h.blockedOn(b, laneA, time.Second)
	other := h.blockedOn(b, laneA, 2*time.Second, withNamespace(nsB))
	tagged := h.blockedOn(b, laneA, 3*time.Second, withTags("app.tenant", "x"))
	taggedY := h.blockedOn(b, laneA, 4*time.Second, withTags("app.tenant", "y"))
	unblock := func(f model.ScannerFilter, now time.Time) []model.ExecutionID {
		h.t.Helper()
		res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b}, Filter: f, Now: now})
		if res.More {
			h.t.Fatalf("More with a limit of 100")
		}
		return res.Unblocked
	}
	wantEqual(h.t, "tag filter", []model.ExecutionID{tagged}, unblock(model.ScannerFilter{TagKey: "app.tenant", TagValue: "x"}, at(10*time.Second)))
	h.wantGroups(h.p0, budgetGroup(laneA, b, 3))
	wantEqual(h.t, "namespace filter", []model.ExecutionID{a, taggedY}, unblock(model.ScannerFilter{Namespace: nsA}, at(11*time.Second)))
	h.wantIndexes(other, ixAll, ixBudget(laneA))
	h.wantGroups(h.p0, budgetGroup(laneA, b, 1))
	wantEqual(h.t, "no filter", []model.ExecutionID{other}, unblock(model.ScannerFilter{}, at(12*time.Second)))
	h.wantGroups(h.p0)
}

// unblockUnlisted: groups not named stay as they are.
func unblockUnlisted(h *admissionHarness) {
	b1 := h.budget(limits{"tokens": {}}, at(0))
	b2 := h.budget(limits{"tokens": {}}, at(0))
	q := h.capQuota(1, at(0))
	x := h.blockedOn(b1, laneA, time.Second)
	y := h.blockedQuota(q, "k", laneA, time.Second)
	groups := []model.AdmissionGroup{budgetGroup(laneA, b1, 1), quotaGroup(laneA, q, "k", 1)}
	h.unchangedAdm(at(10*time.Second), nil, nil, []model.ExecutionID{x, y}, func() {
		res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b2},
			Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "other"}}}, Now: at(10 * time.Second)})
		wantEqual(h.t, "nothing", model.AdmissionUnblockResult{}, *res)
	})
	h.wantGroups(h.p0, groups...)
	if h.p1 != h.p0 {
		res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p1, Budgets: []model.BudgetID{b1}, Now: at(10 * time.Second)})
		wantEqual(h.t, "another partition", model.AdmissionUnblockResult{}, *res)
		h.wantGroups(h.p0, groups...)
	}
}

// cancelLeavesGroup: a cancelled blocked execution leaves its group; the
// group goes with its last one.
func cancelLeavesGroup(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	q := h.capQuota(1, at(0))
	x := h.blockedOn(b, laneA, time.Second)
	y := h.blockedOn(b, laneA, time.Second)
	z := h.blockedQuota(q, "k", laneA, time.Second)
	h.cancelOp(x, at(2*time.Second))
	h.wantIndexes(x, terminalIndexes(laneA)...)
	h.wantGroups(h.p0, budgetGroup(laneA, b, 1), quotaGroup(laneA, q, "k", 1))
	h.cancelOp(y, at(3*time.Second))
	h.cancelOp(z, at(3*time.Second))
	h.wantGroups(h.p0)
	res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b},
		Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "k"}}}, Now: at(4 * time.Second)})
	wantEqual(h.t, "unblock after the cancels", model.AdmissionUnblockResult{}, *res)
	for _, id := range []model.ExecutionID{x, y, z} {
		h.wantState(id, stTerminal(model.OutcomeCancelled, model.AttemptNone))
	}
}

// executionUnblockLeavesGroup: ExecutionUnblock takes the execution out
// of its group too.
func executionUnblockLeavesGroup(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	q := h.capQuota(1, at(0))
	x := h.blockedOn(b, laneA, time.Second)
	y := h.blockedQuota(q, "k", laneA, time.Second)
	z := h.blockedOn(b, laneA, time.Second)
	call(h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: x, ExpectedReason: model.WaitingForBudget, Now: at(2 * time.Second)})).must(h.t)
	call(h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: y, ExpectedReason: model.WaitingForQuota, Now: at(2 * time.Second)})).must(h.t)
	h.wantEligible(at(2*time.Second), x, y)
	h.wantGroups(h.p0, budgetGroup(laneA, b, 1))
	res := h.unblock(&model.AdmissionUnblockParams{Partition: h.p0, Budgets: []model.BudgetID{b},
		Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "k"}}}, Now: at(3 * time.Second)})
	if !slices.Equal(res.Unblocked, []model.ExecutionID{z}) {
		h.t.Fatalf("unblock: %+v, want only %v", res, z)
	}
	h.wantGroups(h.p0)
}

package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// The repairing index reconciler (model.IndexRepairer), tested by damaging
// one index entry at a time with the test hook model.IndexTamperer: the
// repair reports exactly that entry and ExecutionIndexes afterwards is
// what it was before the damage.

func testRepair(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*repairHarness)
	}{
		{"HealthyRepairsNothing", repairHealthy},
		{"MissingEligible", repairMissingEligible},
		{"DelayedAfterPromotion", repairStaleDelayed},
		{"LeaseExpiryScore", repairLeaseScore},
		{"MissingRetention", repairMissingRetention},
		{"StrayBlocked", repairStrayBlocked},
		{"StrayOtherLane", repairStrayOtherLane},
		{"MissingRouteGroup", repairRouteGroup},
		{"MissingBudgetGroup", func(h *repairHarness) { repairAdmissionGroup(h, model.WaitingForBudget) }},
		{"MissingQuotaGroup", func(h *repairHarness) { repairAdmissionGroup(h, model.WaitingForQuota) }},
		{"MissingTerminalAndDeadline", repairTerminalDeadline},
		{"Suspended", repairSuspended},
		{"Dangling", repairDangling},
		{"DryRunWritesNothing", repairDryRun},
		{"Paging", repairPaging},
		{"Filter", repairFilter},
		{"Validation", repairValidation},
		{"TamperValidation", repairTamperValidation},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			r, ok := optionalOf[model.IndexRepairer](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.IndexRepairer", h.s)
			}
			tm, ok := optionalOf[model.IndexTamperer](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.IndexTamperer", h.s)
			}
			c.run(&repairHarness{harness: h, r: r, tm: tm})
		})
	}
}

// repairHarness is a harness with the store's repair and its test hook.
type repairHarness struct {
	*harness
	r  model.IndexRepairer
	tm model.IndexTamperer
}

func (h *repairHarness) tamper(id model.ExecutionID, index string, a model.RepairAction, score int64) {
	h.t.Helper()
	if err := h.tm.IndexTamper(h.ctx, &model.IndexTamperParams{ID: id, Index: index, Action: a, Score: score}); err != nil {
		h.t.Fatalf("tamper %s %v %s: %v", a, id, index, err)
	}
}

// repairAll runs IndexRepair over partition part in pages of limit and
// returns every repair.
func (h *repairHarness) repairAll(part, limit int, dry bool, now time.Time) []model.IndexRepair {
	h.t.Helper()
	var out []model.IndexRepair
	var cur model.ExecutionID
	for {
		res := call(h.r.IndexRepair(h.ctx, &model.IndexRepairParams{
			Partition: part, Cursor: cur, Limit: limit, DryRun: dry, Now: now,
		})).must(h.t)
		if res.Examined > limit {
			h.t.Fatalf("examined %d, limit %d", res.Examined, limit)
		}
		out = append(out, res.Repairs...)
		if res.Next.IsZero() {
			return out
		}
		if res.Examined != limit {
			h.t.Fatalf("a page of %d of limit %d has a next cursor", res.Examined, limit)
		}
		cur = res.Next
	}
}

// wantRepairs repairs every used partition and checks the repairs; a
// second pass then finds nothing.
func (h *repairHarness) wantRepairs(now time.Time, want ...model.IndexRepair) {
	h.t.Helper()
	var got []model.IndexRepair
	for p := range h.parts {
		got = append(got, h.repairAll(p, 100, false, now)...)
	}
	model.SortRepairs(got)
	model.SortRepairs(want)
	wantEqual(h.t, "repairs", want, got)
	for p := range h.parts {
		if again := h.repairAll(p, 100, false, now); len(again) > 0 {
			h.t.Fatalf("a second pass repaired %+v", again)
		}
	}
}

// damaged checks that damage changes id's indexes and that a repair
// reports want and restores them.
func (h *repairHarness) damaged(id model.ExecutionID, damage func(), now time.Time, want ...model.IndexRepair) {
	h.t.Helper()
	before := h.indexes(id)
	damage()
	wantEqual(h.t, "dry run", sorted(want), h.dry(now))
	h.wantRepairs(now, want...)
	wantEqual(h.t, "indexes after the repair", before, h.indexes(id))
}

// dry returns what a dry run over the used partitions reports, checking
// that it wrote nothing.
func (h *repairHarness) dry(now time.Time) []model.IndexRepair {
	h.t.Helper()
	before := h.world(now)
	var got []model.IndexRepair
	for p := range h.parts {
		got = append(got, h.repairAll(p, 100, true, now)...)
	}
	wantEqual(h.t, "the world after a dry run", before, h.world(now))
	return sorted(got)
}

func sorted(rs []model.IndexRepair) []model.IndexRepair {
	model.SortRepairs(rs)
	return rs
}

func rep(id model.ExecutionID, index string, a model.RepairAction, score, old int64) model.IndexRepair {
	return model.IndexRepair{ExecutionID: id, Index: index, Action: a, Score: score, OldScore: old}
}

// repairFixture makes executions in many states in both partitions.
func (h *repairHarness) repairFixture() []model.ExecutionID {
	eligible := h.create(at(0), withPriority(3), withDeadline(at(time.Hour)))
	delayed := h.create(at(0), withDelay(at(time.Minute)))
	act, _ := h.active(at(0), withTimeout(time.Minute), withDeadline(at(time.Hour)))
	done, donef := h.active(at(0), withRetention(keepAll))
	h.complete(done, donef.Fence(), at(time.Second))
	gone := h.create(at(0), withRetention(keepAll))
	h.cancelOp(gone, at(2*time.Second))
	other := h.create(at(0), withLane(laneB), func(p *model.ExecutionCreateParams) { p.ID = h.newID(h.p1) })
	ids := []model.ExecutionID{eligible, delayed, act, done, gone, other}
	if has[model.Blocker](h.harness) {
		b := h.create(at(0))
		h.block(b, model.PausedByOperator, at(3*time.Second))
		ids = append(ids, b)
	}
	rv, _ := h.active(at(0))
	h.revoke(rv, at(4*time.Second))
	ex, _ := h.active(at(0))
	h.markExpired(ex, at(leaseTTL+time.Second))
	return append(ids, rv, ex)
}

// repairHealthy: the operations leave every index as the records say.
func repairHealthy(h *repairHarness) {
	ids := h.repairFixture()
	var before [][]string
	for _, id := range ids {
		before = append(before, h.indexes(id))
	}
	h.wantRepairs(at(time.Hour))
	for i, id := range ids {
		wantEqual(h.t, "indexes of "+id.String(), before[i], h.indexes(id))
	}
}

func repairMissingEligible(h *repairHarness) {
	id := h.create(at(0), withPriority(2))
	ix := ixLane(laneA, "eligible")
	h.damaged(id, func() { h.tamper(id, ix, model.RepairRemoved, 0) }, at(time.Second),
		rep(id, ix, model.RepairAdded, model.EligibleScore(2, at(0).UnixMilli()), 0))
	// the refiled entry is claimable
	res := h.claimNext(wA, nil, 10, at(2*time.Second))
	if res.Claimed == nil || res.Claimed.ID != id {
		h.t.Fatalf("claim next after the repair: %+v", res)
	}
}

func repairStaleDelayed(h *repairHarness) {
	id := h.create(at(0), withDelay(at(time.Minute)))
	if o := h.promote(id, laneA, at(time.Minute)); o != model.PromotePromoted {
		h.t.Fatalf("promote: %v", o)
	}
	ix := ixLane(laneA, "delayed")
	stale := at(time.Minute).UnixMilli()
	h.damaged(id, func() { h.tamper(id, ix, model.RepairAdded, stale) }, at(2*time.Minute),
		rep(id, ix, model.RepairRemoved, 0, stale))
}

func repairLeaseScore(h *repairHarness) {
	id, _ := h.active(at(0))
	h.damaged(id, func() { h.tamper(id, ixLease, model.RepairRescored, 5) }, at(time.Second),
		rep(id, ixLease, model.RepairRescored, at(leaseTTL).UnixMilli(), 5))
	// the lease-expiry scanner finds it due when its lease runs out, not before
	due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
		Partition: id.Partition(), Index: model.IndexLeaseExpiry, Now: at(time.Second), Limit: 10,
	})).must(h.t)
	if len(due.Items) != 0 {
		h.t.Fatalf("due before its lease runs out: %+v", due.Items)
	}
}

func repairMissingRetention(h *repairHarness) {
	id, f := h.active(at(0), withRetention(keepAll))
	if res := h.fail(id, f.Fence(), model.FailurePermanent, at(time.Second)); res.Outcome != model.FailTerminal {
		h.t.Fatalf("fail: %+v", res)
	}
	h.damaged(id, func() { h.tamper(id, ixRetention, model.RepairRemoved, 0) }, at(time.Minute),
		rep(id, ixRetention, model.RepairAdded, at(time.Second+keepAll.Failed).UnixMilli(), 0))
}

func repairStrayBlocked(h *repairHarness) {
	id := h.create(at(0))
	ix := ixLane(laneA, "blocked:operator")
	h.damaged(id, func() { h.tamper(id, ix, model.RepairAdded, 7) }, at(time.Second),
		rep(id, ix, model.RepairRemoved, 0, 7))
}

// repairRouteGroup: a route-blocked execution taken out of its route group
// is filed in it again (at its block time), after which RouteUnblock with
// a capable live worker unblocks it; before the repair it does not.
func repairRouteGroup(h *repairHarness) {
	if !has[model.Blocker](h.harness) {
		h.t.Skip("storetest: the store does not block")
	}
	id := h.create(at(0), withCaps("gpu"))
	h.block(id, model.WaitingForCapableWorker, at(time.Second))
	g := model.RouteGroupIndex(laneA, nsA, "gpu")
	ms := at(time.Second).UnixMilli()
	h.tamper(id, g, model.RepairRemoved, 0)
	unblock := func(now time.Time) []model.ExecutionID {
		return call(h.s.RouteUnblock(h.ctx, &model.RouteUnblockParams{Partition: h.p0, Namespace: nsA,
			Live: model.Capabilities{"gpu"}, Limit: 10, Now: now})).must(h.t).Unblocked
	}
	wantEqual(h.t, "unblocked while out of its group", []model.ExecutionID(nil), unblock(at(2*time.Second)))
	want := rep(id, g, model.RepairAdded, ms, 0)
	wantEqual(h.t, "dry run", []model.IndexRepair{want}, h.dry(at(3*time.Second)))
	wantEqual(h.t, "dry run again (it wrote nothing)", []model.IndexRepair{want}, h.dry(at(3*time.Second)))
	h.wantRepairs(at(3*time.Second), want)
	wantEqual(h.t, "unblocked after the repair", []model.ExecutionID{id}, unblock(at(4*time.Second)))
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
}

// repairAdmissionGroup: an execution blocked on a budget or a quota (r)
// taken out of its admission group is filed in it again, after which
// AdmissionUnblock of that budget or bucket unblocks it; before the
// repair it does not.
func repairAdmissionGroup(h *repairHarness, r model.BlockingReason) {
	as, ok := admissionStoreOf(h.harness)
	if !ok || !has[model.Blocker](h.harness) {
		h.t.Skip("storetest: the store has no admission")
	}
	id := h.create(at(0), blockable(r))
	h.block(id, r, at(time.Second))
	p := &model.AdmissionUnblockParams{Partition: h.p0, Limit: 10}
	g := model.BudgetGroupIndex(laneA, heldBudget)
	if r == model.WaitingForBudget {
		p.Budgets = []model.BudgetID{heldBudget}
	} else {
		g = model.QuotaGroupIndex(laneA, heldQuota, "")
		p.Quotas = []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: heldQuota}}}
	}
	h.wantRepairs(at(2 * time.Second))
	h.tamper(id, g, model.RepairRemoved, 0)
	unblock := func(now time.Time) []model.ExecutionID {
		p.Now = now
		return call(as.AdmissionUnblock(h.ctx, p)).must(h.t).Unblocked
	}
	wantEqual(h.t, "unblocked while out of its group", []model.ExecutionID(nil), unblock(at(2*time.Second)))
	want := rep(id, g, model.RepairAdded, at(time.Second).UnixMilli(), 0)
	wantEqual(h.t, "dry run", []model.IndexRepair{want}, h.dry(at(3*time.Second)))
	h.wantRepairs(at(3*time.Second), want)
	wantEqual(h.t, "unblocked after the repair", []model.ExecutionID{id}, unblock(at(4*time.Second)))
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
}

// repairStrayOtherLane: an entry in another lane's index goes.
func repairStrayOtherLane(h *repairHarness) {
	h.create(at(0), withLane(laneB)) // the partition has lane B
	id := h.create(at(0))
	ix := ixLane(laneB, "eligible")
	h.damaged(id, func() { h.tamper(id, ix, model.RepairAdded, 9) }, at(time.Second),
		rep(id, ix, model.RepairRemoved, 0, 9))
}

// repairTerminalDeadline: several entries of one execution at once, in
// index name order.
func repairTerminalDeadline(h *repairHarness) {
	id := h.create(at(0), withDeadline(at(time.Hour)))
	done, f := h.active(at(0))
	h.complete(done, f.Fence(), at(time.Second))
	term := ixLane(laneA, "terminal")
	h.damaged(done, func() {
		h.tamper(done, term, model.RepairRemoved, 0)
		h.tamper(done, ixDeadline, model.RepairAdded, 11)
		h.tamper(id, ixDeadline, model.RepairRescored, 12)
	}, at(time.Minute),
		rep(id, ixDeadline, model.RepairRescored, at(time.Hour).UnixMilli(), 12),
		rep(done, ixDeadline, model.RepairRemoved, 0, 11),
		rep(done, term, model.RepairAdded, at(time.Second).UnixMilli(), 0))
}

// repairSuspended: the suspended phase's indexes and the pending
// waitpoint expiry index are scored from the suspension and the
// waitpoints.
func repairSuspended(h *repairHarness) {
	ss, ok := optionalOf[model.SuspendStore](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
	}
	sh := &suspendHarness{harness: h.harness, ss: ss}
	id, c := h.active(at(0))
	sh.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	p := sh.suspendParams(id, c.Fence(), model.ResumeCondition{}, at(2*time.Second))
	p.Condition = signalOn(p.Waitpoint, "go")
	p.TimeoutAt = at(10 * time.Minute)
	sh.suspend(p)
	h.wantIndexes(id, suspendedIndexes(laneA, ixSuspTimeout, ixWpExpiry)...)
	lane := ixLane(laneA, "suspended")
	timeout := at(10 * time.Minute).UnixMilli()
	h.damaged(id, func() {
		h.tamper(id, lane, model.RepairRescored, model.SuspendedNoTimeoutScore)
		h.tamper(id, ixSuspTimeout, model.RepairRemoved, 0)
		h.tamper(id, ixWpExpiry, model.RepairRescored, 1)
		h.tamper(id, ixSuspended, model.RepairRemoved, 0)
	}, at(time.Minute),
		rep(id, lane, model.RepairRescored, timeout, model.SuspendedNoTimeoutScore),
		rep(id, ixWpExpiry, model.RepairRescored, at(time.Hour).UnixMilli(), 1),
		rep(id, ixSuspended, model.RepairAdded, 0, 0),
		rep(id, ixSuspTimeout, model.RepairAdded, timeout, 0))
}

// repairDangling: an all_executions member without a record is dropped
// from every index that holds it.
func repairDangling(h *repairHarness) {
	h.create(at(0))
	ghost := h.newID(h.p0)
	el := ixLane(laneA, "eligible")
	h.tamper(ghost, ixAll, model.RepairAdded, 0)
	h.tamper(ghost, el, model.RepairAdded, 3)
	h.tamper(ghost, ixLease, model.RepairAdded, 4)
	h.wantIndexes(ghost, ixAll, el, ixLease)
	h.wantRepairs(at(time.Second),
		rep(ghost, ixAll, model.RepairRemoved, 0, 0),
		rep(ghost, el, model.RepairRemoved, 0, 3),
		rep(ghost, ixLease, model.RepairRemoved, 0, 4))
	h.wantIndexes(ghost)
}

// repairDryRun: a dry run reports and writes nothing, as often as it runs.
func repairDryRun(h *repairHarness) {
	id := h.create(at(0))
	h.tamper(id, ixLane(laneA, "eligible"), model.RepairRemoved, 0)
	want := []model.IndexRepair{rep(id, ixLane(laneA, "eligible"), model.RepairAdded, model.EligibleScore(0, at(0).UnixMilli()), 0)}
	wantEqual(h.t, "dry run", want, h.dry(at(time.Second)))
	wantEqual(h.t, "second dry run", want, h.dry(at(time.Second)))
	h.wantIndexes(id, ixAll)
	h.wantRepairs(at(time.Second), want...)
}

// repairPaging: Limit bounds the executions examined; the cursor resumes
// after the last one, and the pages repair what one call would.
func repairPaging(h *repairHarness) {
	for range 5 {
		h.create(at(0))
	}
	ids := h.listAll() // in id order
	rm := func(id model.ExecutionID) { h.tamper(id, ixLane(laneA, "eligible"), model.RepairRemoved, 0) }
	rm(ids[0])
	rm(ids[3])
	rm(ids[4])
	var cur model.ExecutionID
	var pages [][]model.IndexRepair
	for {
		res := call(h.r.IndexRepair(h.ctx, &model.IndexRepairParams{Partition: h.p0, Cursor: cur, Limit: 2, Now: at(time.Second)})).must(h.t)
		pages = append(pages, res.Repairs)
		if res.Next.IsZero() {
			if res.Examined != 1 {
				h.t.Fatalf("last page examined %d, want 1", res.Examined)
			}
			break
		}
		if res.Examined != 2 || res.Next != ids[2*len(pages)-1] {
			h.t.Fatalf("page %d: examined %d next %v, want 2 and %v", len(pages), res.Examined, res.Next, ids[2*len(pages)-1])
		}
		cur = res.Next
	}
	score := model.EligibleScore(0, at(0).UnixMilli())
	add := func(id model.ExecutionID) []model.IndexRepair {
		return []model.IndexRepair{rep(id, ixLane(laneA, "eligible"), model.RepairAdded, score, 0)}
	}
	wantEqual(h.t, "pages", [][]model.IndexRepair{add(ids[0]), add(ids[3]), add(ids[4])}, pages)
	// from the last execution on there is nothing left
	res := call(h.r.IndexRepair(h.ctx, &model.IndexRepairParams{Partition: h.p0, Cursor: ids[4], Limit: 2, Now: at(time.Second)})).must(h.t)
	if res.Examined != 0 || !res.Next.IsZero() || len(res.Repairs) != 0 {
		h.t.Fatalf("past the end: %+v", res)
	}
}

// repairFilter: the filter's executions are repaired, the others examined
// and left alone.
func repairFilter(h *repairHarness) {
	a := h.create(at(0))
	b := h.create(at(0), withNamespace(nsB))
	ix := ixLane(laneA, "eligible")
	h.tamper(a, ix, model.RepairRemoved, 0)
	h.tamper(b, ix, model.RepairRemoved, 0)
	res := call(h.r.IndexRepair(h.ctx, &model.IndexRepairParams{
		Partition: h.p0, Limit: 10, Filter: model.ScannerFilter{Namespace: nsB}, Now: at(time.Second),
	})).must(h.t)
	score := model.EligibleScore(0, at(0).UnixMilli())
	wantEqual(h.t, "filtered repairs", []model.IndexRepair{rep(b, ix, model.RepairAdded, score, 0)}, res.Repairs)
	if res.Examined != 2 {
		h.t.Fatalf("examined %d, want 2", res.Examined)
	}
	h.wantIndexes(a, ixAll)
	h.wantRepairs(at(time.Second), rep(a, ix, model.RepairAdded, score, 0))
}

// wantField checks that err is a validation error naming field.
func wantField(t testing.TB, err error, field string) {
	t.Helper()
	e := modelErr(t, err, model.ErrValidation)
	if e.Field != field {
		t.Fatalf("error %v names %q, want %q", err, e.Field, field)
	}
	if !errors.Is(err, model.ErrValidation) {
		t.Fatalf("%v does not match ErrValidation", err)
	}
}

// repairValidation: bad input fails naming its field and repairs nothing.
func repairValidation(h *repairHarness) {
	id := h.create(at(0))
	h.tamper(id, ixLane(laneA, "eligible"), model.RepairRemoved, 0)
	valid := func() *model.IndexRepairParams {
		return &model.IndexRepairParams{Partition: h.p0, Limit: 10, Now: at(time.Second)}
	}
	other := model.NewExecutionID((h.p0+1)%h.cfg.FlowPartitions, h.uuid())
	for _, c := range []struct {
		field string
		mut   func(*model.IndexRepairParams)
	}{
		{"Partition", func(p *model.IndexRepairParams) { p.Partition = -1 }},
		{"Partition", func(p *model.IndexRepairParams) { p.Partition = h.cfg.FlowPartitions }},
		{"Limit", func(p *model.IndexRepairParams) { p.Limit = 0 }},
		{"Limit", func(p *model.IndexRepairParams) { p.Limit = model.MaxPageSize + 1 }},
		{"Filter.TagValue", func(p *model.IndexRepairParams) { p.Filter.TagValue = "v" }},
		{"Now", func(p *model.IndexRepairParams) { p.Now = time.Time{} }},
	} {
		p := valid()
		c.mut(p)
		before := h.world(at(time.Second))
		_, err := h.r.IndexRepair(h.ctx, p)
		wantField(h.t, err, c.field)
		wantEqual(h.t, "the world after a refused repair", before, h.world(at(time.Second)))
	}
	if h.cfg.FlowPartitions > 1 {
		p := valid()
		p.Cursor = other
		_, err := h.r.IndexRepair(h.ctx, p)
		wantField(h.t, err, "Cursor")
	}
	h.wantIndexes(id, ixAll)
	h.wantRepairs(at(time.Second), rep(id, ixLane(laneA, "eligible"), model.RepairAdded, model.EligibleScore(0, at(0).UnixMilli()), 0))
}

// repairTamperValidation: the hook refuses the indexes valkeystore does
// not store, unknown indexes and lanes, and rescoring a score-less index.
func repairTamperValidation(h *repairHarness) {
	id := h.create(at(0))
	for _, c := range []struct {
		index, field string
		a            model.RepairAction
	}{
		{ixLane(laneA, "active"), "Index", model.RepairAdded},
		{ixWorker(wA.Instance), "Index", model.RepairAdded},
		{"signal_feed", "Index", model.RepairAdded},
		{"nonsense", "Index", model.RepairRemoved},
		{ixLane("no-such-lane", "eligible"), "Index", model.RepairAdded},
		{ixAll, "Action", model.RepairRescored},
		{ixLease, "Action", 0},
		{model.RouteGroupIndex(laneA, nsA, "gpu"), "Action", model.RepairAdded},
		{model.BudgetGroupIndex(laneA, heldBudget), "Action", model.RepairRescored},
		{model.QuotaGroupIndex("no-such-lane", heldQuota, "k"), "Index", model.RepairRemoved},
	} {
		before := h.world(at(time.Second))
		err := h.tm.IndexTamper(h.ctx, &model.IndexTamperParams{ID: id, Index: c.index, Action: c.a, Score: 1})
		wantField(h.t, err, c.field)
		wantEqual(h.t, "the world after a refused tamper", before, h.world(at(time.Second)))
	}
}

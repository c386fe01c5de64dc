package storetest

import (
	"errors"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets (model/admission_ops.go "budgets"): BudgetCreate, BudgetReport,
// BudgetRelease, BudgetReset, BudgetResetDue, BudgetReconcile and
// BudgetStatus.

var noExec model.ExecutionID

// budgetCreate: a create reports Created, a second create with the same
// definition (at another time) reports Created false, and one with
// another definition is ErrIdempotencyConflict and changes nothing. The
// status shows the definition, the creation time and the first reset
// (creation + interval).
func budgetCreate(h *admissionHarness) {
	b := h.budgetID()
	def := func(now time.Time) *model.BudgetCreateParams {
		return &model.BudgetCreateParams{
			ID: b, Limits: limits{"tokens": {Hard: 100, Soft: 80}, "calls": {}},
			ResetInterval: time.Hour, OnHardBreach: model.BreachCancelFlow, Now: now,
		}
	}
	if res := call(h.as.BudgetCreate(h.ctx, def(at(0)))).must(h.t); !res.Created {
		h.t.Fatalf("first create: Created false")
	}
	want := model.BudgetStatus{
		ID: b, Limits: limits{"tokens": {Hard: 100, Soft: 80}, "calls": {}}, OnHardBreach: model.BreachCancelFlow,
		ResetInterval: time.Hour, NextResetAt: at(time.Hour), CreatedAt: at(0),
	}
	h.wantBudget(want, noExec, at(time.Second))
	if res := call(h.as.BudgetCreate(h.ctx, def(at(time.Minute)))).must(h.t); res.Created {
		h.t.Fatalf("same definition again: Created true")
	}
	h.wantBudget(want, noExec, at(2*time.Minute))

	for _, c := range []struct {
		name string
		mut  func(*model.BudgetCreateParams)
	}{
		{"hard", func(p *model.BudgetCreateParams) { p.Limits["tokens"] = model.BudgetLimit{Hard: 200, Soft: 80} }},
		{"soft", func(p *model.BudgetCreateParams) { p.Limits["tokens"] = model.BudgetLimit{Hard: 100, Soft: 90} }},
		{"dimension_added", func(p *model.BudgetCreateParams) { p.Limits["images"] = model.BudgetLimit{Hard: 1} }},
		{"dimension_removed", func(p *model.BudgetCreateParams) { delete(p.Limits, "calls") }},
		{"reset_interval", func(p *model.BudgetCreateParams) { p.ResetInterval = 2 * time.Hour }},
		{"no_reset", func(p *model.BudgetCreateParams) { p.ResetInterval = 0 }},
		{"action", func(p *model.BudgetCreateParams) { p.OnHardBreach = model.BreachNone }},
	} {
		p := def(at(time.Minute))
		c.mut(p)
		h.unchangedAdm(at(2*time.Minute), []model.BudgetID{b}, nil, nil, func() {
			_, err := h.as.BudgetCreate(h.ctx, p)
			wantErr(h.t, err, model.ErrIdempotencyConflict)
		})
	}
	h.wantBudget(want, noExec, at(2*time.Minute))
}

// budgetReportApplied: deltas within every limit apply (usage exactly at
// a soft limit is not above it); dimensions without limits, defined or
// not, are tracked.
func budgetReportApplied(h *admissionHarness) {
	b := h.budget(limits{"tokens": {Hard: 100, Soft: 50}, "calls": {}}, at(0))
	wantReport(h.t, "first report", model.BudgetReportResult{Outcome: model.ReportApplied},
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": 30, "calls": 2}, Now: at(time.Second)}))
	h.wantUsage(b, at(time.Second), map[string]int64{"tokens": 30, "calls": 2})
	wantReport(h.t, "up to the soft limit", model.BudgetReportResult{Outcome: model.ReportApplied},
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": 20}, Now: at(2 * time.Second)}))
	wantReport(h.t, "a dimension without a definition", model.BudgetReportResult{Outcome: model.ReportApplied},
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"images": 3, "calls": 1000}, Now: at(3 * time.Second)}))
	h.wantBudget(model.BudgetStatus{
		ID: b, Limits: limits{"tokens": {Hard: 100, Soft: 50}, "calls": {}},
		Usage: map[string]int64{"tokens": 50, "calls": 1002, "images": 3}, CreatedAt: at(0),
	}, noExec, at(4*time.Second))
}

// budgetReportSoftBreach: a report that takes a dimension above a soft
// limit applies and names the first such dimension in name order, with
// the usage reached and the limit; the soft breach count goes up.
func budgetReportSoftBreach(h *admissionHarness) {
	b := h.budget(limits{"a": {Hard: 100, Soft: 10}, "b": {Hard: 100, Soft: 10}}, at(0))
	wantReport(h.t, "b passes", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "b", Usage: 20, Limit: 10},
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"a": 5, "b": 20}, Now: at(time.Second)}))
	wantReport(h.t, "a and b above", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "a", Usage: 25, Limit: 10},
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"b": 1, "a": 20}, Now: at(2 * time.Second)}))
	h.wantBudget(model.BudgetStatus{
		ID: b, Limits: limits{"a": {Hard: 100, Soft: 10}, "b": {Hard: 100, Soft: 10}},
		Usage: map[string]int64{"a": 25, "b": 21}, SoftBreaches: 2, CreatedAt: at(0),
	}, noExec, at(3*time.Second))
}

// budgetReportHardBreach: a report that would take a dimension above a
// hard limit applies nothing (not its other deltas, not the execution's
// ledger), names the first such dimension in name order with the usage it
// would have reached, and counts a hard breach. Usage may reach the hard
// limit exactly.
func budgetReportHardBreach(h *admissionHarness) {
	lims := limits{"tokens": {Hard: 100, Soft: 50}, "calls": {Hard: 10}}
	b := h.budget(lims, at(0))
	x := h.newID(h.p0)
	rep := func(d map[string]int64, now time.Time) *model.BudgetReportResult {
		return h.report(&model.BudgetReportParams{ID: b, Deltas: d, Execution: x, Now: now})
	}
	wantReport(h.t, "soft", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "tokens", Usage: 60, Limit: 50},
		rep(map[string]int64{"tokens": 60, "calls": 1}, at(time.Second)))
	wantReport(h.t, "tokens hard", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "tokens", Usage: 101, Limit: 100},
		rep(map[string]int64{"tokens": 41, "calls": 1}, at(2*time.Second)))
	want := model.BudgetStatus{
		ID: b, Limits: lims, Usage: map[string]int64{"tokens": 60, "calls": 1},
		SoftBreaches: 1, HardBreaches: 1, CreatedAt: at(0), Spend: map[string]int64{"tokens": 60, "calls": 1},
	}
	h.wantBudget(want, x, at(3*time.Second))
	wantReport(h.t, "both hard", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "calls", Usage: 11, Limit: 10},
		rep(map[string]int64{"tokens": 41, "calls": 10}, at(3*time.Second)))
	want.HardBreaches = 2
	h.wantBudget(want, x, at(4*time.Second))

	wantReport(h.t, "exactly at the hard limit", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "tokens", Usage: 100, Limit: 50},
		rep(map[string]int64{"tokens": 40}, at(4*time.Second)))
	wantReport(h.t, "one above", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "tokens", Usage: 101, Limit: 100},
		rep(map[string]int64{"tokens": 1}, at(5*time.Second)))
	want.Usage, want.Spend = map[string]int64{"tokens": 100, "calls": 1}, map[string]int64{"tokens": 100, "calls": 1}
	want.SoftBreaches, want.HardBreaches, want.Exhausted = 2, 3, "tokens"
	h.wantBudget(want, x, at(6*time.Second))
}

// budgetReportDedup: a dedup key seen makes a report AlreadyApplied,
// whatever its deltas, and changes nothing; a soft breach remembers its
// key (it applied), a hard breach does not.
func budgetReportDedup(h *admissionHarness) {
	lims := limits{"tokens": {Hard: 100, Soft: 50}}
	b := h.budget(lims, at(0))
	x := h.newID(h.p0)
	rep := func(d int64, key string, x model.ExecutionID, now time.Time) *model.BudgetReportResult {
		return h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": d}, DedupKey: key, Execution: x, Now: now})
	}
	applied := model.BudgetReportResult{Outcome: model.ReportApplied}
	again := model.BudgetReportResult{Outcome: model.ReportAlreadyApplied}
	wantReport(h.t, "k1", applied, rep(10, "k1", noExec, at(time.Second)))
	wantReport(h.t, "k1 again", again, rep(10, "k1", noExec, at(2*time.Second)))
	wantReport(h.t, "k1 other deltas", again, rep(20, "k1", noExec, at(2*time.Second)))
	wantReport(h.t, "k2 with a ledger", applied, rep(5, "k2", x, at(3*time.Second)))
	wantReport(h.t, "k2 again", again, rep(5, "k2", x, at(4*time.Second)))
	want := model.BudgetStatus{ID: b, Limits: lims, Usage: map[string]int64{"tokens": 15}, CreatedAt: at(0), Spend: map[string]int64{"tokens": 5}}
	h.wantBudget(want, x, at(5*time.Second))

	wantReport(h.t, "k3 soft", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "tokens", Usage: 65, Limit: 50},
		rep(50, "k3", noExec, at(5*time.Second)))
	wantReport(h.t, "k3 again", again, rep(50, "k3", noExec, at(6*time.Second)))
	wantReport(h.t, "k4 hard", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "tokens", Usage: 105, Limit: 100},
		rep(40, "k4", noExec, at(6*time.Second)))
	wantReport(h.t, "k4 not remembered", model.BudgetReportResult{Outcome: model.ReportSoftBreach, Dimension: "tokens", Usage: 66, Limit: 50},
		rep(1, "k4", noExec, at(7*time.Second)))
	wantReport(h.t, "k4 now remembered", again, rep(1, "k4", noExec, at(8*time.Second)))
	want.Usage, want.SoftBreaches, want.HardBreaches = map[string]int64{"tokens": 66}, 2, 1
	h.wantBudget(want, x, at(9*time.Second))
}

// budgetReportDedupTTL: a dedup key is remembered for BudgetDedupTTL; a
// report after it applies again (and is remembered anew).
func budgetReportDedupTTL(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	rep := func(now time.Time) model.BudgetReportOutcome {
		return h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": 1}, DedupKey: "req-1", Now: now}).Outcome
	}
	t0 := at(time.Second)
	for _, c := range []struct {
		now  time.Time
		want model.BudgetReportOutcome
	}{
		{t0, model.ReportApplied},
		{t0.Add(model.BudgetDedupTTL - time.Millisecond), model.ReportAlreadyApplied},
		{t0.Add(model.BudgetDedupTTL + time.Second), model.ReportApplied},
		{t0.Add(model.BudgetDedupTTL + 2*time.Second), model.ReportAlreadyApplied},
	} {
		if got := rep(c.now); got != c.want {
			h.t.Fatalf("report at %v: %v, want %v", c.now, got, c.want)
		}
	}
	h.wantUsage(b, t0.Add(model.BudgetDedupTTL+3*time.Second), map[string]int64{"tokens": 2})
}

// budgetLedger: a report with an execution charges its ledger;
// BudgetRelease gives it back (usage drops, never below 0) and deletes
// it; a second release changes nothing. A reset keeps ledgers.
func budgetLedger(h *admissionHarness) {
	lims := limits{"tokens": {Hard: 1000}, "calls": {}}
	b := h.budget(lims, at(0))
	x1, x2, x3 := h.newID(h.p0), h.newID(h.p1), h.newID(h.p0)
	charge := func(x model.ExecutionID, d map[string]int64, now time.Time) {
		h.t.Helper()
		wantReport(h.t, "charge", model.BudgetReportResult{Outcome: model.ReportApplied},
			h.report(&model.BudgetReportParams{ID: b, Deltas: d, Execution: x, Now: now}))
	}
	charge(x1, map[string]int64{"tokens": 10, "calls": 1}, at(time.Second))
	charge(x1, map[string]int64{"tokens": 5}, at(2*time.Second))
	charge(x2, map[string]int64{"tokens": 7}, at(3*time.Second))
	charge(noExec, map[string]int64{"tokens": 100}, at(4*time.Second))
	want := model.BudgetStatus{ID: b, Limits: lims, Usage: map[string]int64{"tokens": 122, "calls": 1}, CreatedAt: at(0),
		Spend: map[string]int64{"tokens": 15, "calls": 1}}
	h.wantBudget(want, x1, at(5*time.Second))

	rel := func(x model.ExecutionID, now time.Time) *model.BudgetReleaseResult {
		return call(h.as.BudgetRelease(h.ctx, &model.BudgetReleaseParams{ID: b, Execution: x, Now: now})).must(h.t)
	}
	res := rel(x1, at(5*time.Second))
	res.Returned = usageOf(res.Returned)
	wantEqual(h.t, "release x1", model.BudgetReleaseResult{Released: true, Returned: map[string]int64{"tokens": 15, "calls": 1}}, *res)
	want.Usage, want.Spend = map[string]int64{"tokens": 107}, nil
	h.wantBudget(want, x1, at(6*time.Second))
	for _, x := range []model.ExecutionID{x1, x3} {
		h.unchangedAdm(at(6*time.Second), []model.BudgetID{b}, nil, nil, func() {
			if res := rel(x, at(6*time.Second)); res.Released || len(usageOf(res.Returned)) != 0 {
				h.t.Fatalf("release of %v without a ledger: %+v", x, res)
			}
		})
	}

	// A reset keeps x2's ledger; its release then stops at 0.
	call(h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: b, Now: at(7 * time.Second)})).must(h.t)
	charge(noExec, map[string]int64{"tokens": 3}, at(8*time.Second))
	want.Usage, want.Spend, want.ResetCount = map[string]int64{"tokens": 3}, map[string]int64{"tokens": 7}, 1
	h.wantBudget(want, x2, at(8*time.Second))
	res = rel(x2, at(9*time.Second))
	res.Returned = usageOf(res.Returned)
	wantEqual(h.t, "release x2", model.BudgetReleaseResult{Released: true, Returned: map[string]int64{"tokens": 7}}, *res)
	want.Usage, want.Spend = nil, nil
	h.wantBudget(want, x2, at(10*time.Second))
}

// budgetReset: an operator's reset zeroes the usage, counts a reset and
// leaves the schedule as it was.
func budgetReset(h *admissionHarness) {
	lims := limits{"tokens": {Hard: 100}}
	b := h.newBudget(&model.BudgetCreateParams{Limits: lims, ResetInterval: time.Hour, Now: at(0)})
	plain := h.budget(lims, at(0))
	for _, id := range []model.BudgetID{b, plain} {
		h.reported(id, map[string]int64{"tokens": 40}, at(time.Second), model.ReportApplied)
	}
	for i, now := range []time.Time{at(10 * time.Minute), at(20 * time.Minute)} {
		res := call(h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: b, Now: now})).must(h.t)
		wantEqual(h.t, "reset", model.BudgetResetResult{ResetCount: i + 1, NextResetAt: at(time.Hour)}, *res)
	}
	h.wantBudget(model.BudgetStatus{ID: b, Limits: lims, ResetInterval: time.Hour, NextResetAt: at(time.Hour), ResetCount: 2, CreatedAt: at(0)},
		noExec, at(21*time.Minute))
	res := call(h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: plain, Now: at(10 * time.Minute)})).must(h.t)
	wantEqual(h.t, "reset without a schedule", model.BudgetResetResult{ResetCount: 1}, *res)
	h.wantBudget(model.BudgetStatus{ID: plain, Limits: lims, ResetCount: 1, CreatedAt: at(0)}, noExec, at(21*time.Minute))
}

// budgetResetDue: the reset scanner resets, on one budget partition, the
// budgets due at Now in (due, id) order, up to Limit, and moves each one's
// next reset to the first time of its grid (creation + k·interval)
// strictly after Now, however many intervals passed; NextDueAt is the
// earliest next reset after the pass. Budgets without a schedule and of
// other partitions are left alone.
func budgetResetDue(h *admissionHarness) {
	part := 3 % h.cfg.BudgetPartitions
	lims := limits{"tokens": {}}
	mk := func(interval, created time.Duration) model.BudgetID {
		return h.newBudget(&model.BudgetCreateParams{ID: h.budgetID(part), Limits: lims, ResetInterval: interval, Now: at(created)})
	}
	bA := mk(10*time.Minute, 0)
	bB := mk(time.Hour, 0)
	bC := mk(10*time.Minute, 5*time.Minute)
	bD := mk(0, 0)
	bE := mk(30*time.Minute, 0)
	other := h.newBudget(&model.BudgetCreateParams{ID: h.budgetID((part + 1) % h.cfg.BudgetPartitions), Limits: lims, ResetInterval: 10 * time.Minute, Now: at(0)})
	all := []model.BudgetID{bA, bB, bC, bD, bE, other}
	for _, b := range all {
		h.reported(b, map[string]int64{"tokens": 5}, at(6*time.Minute), model.ReportApplied)
	}
	due := func(limit int, now time.Time) *model.BudgetResetDueResult {
		return call(h.as.BudgetResetDue(h.ctx, &model.BudgetResetDueParams{Partition: part, Limit: limit, Now: now})).must(h.t)
	}

	wantEqual(h.t, "nothing due", model.BudgetResetDueResult{NextDueAt: at(10 * time.Minute)}, *due(10, at(9*time.Minute)))
	if res := due(1, at(20*time.Minute)); len(res.Reset) != 1 || res.Reset[0] != bA || !res.More {
		h.t.Fatalf("limit 1 at 20m: %+v, want [%v] and More", res, bA)
	}
	wantEqual(h.t, "the rest at 20m", model.BudgetResetDueResult{Reset: []model.BudgetID{bC}, NextDueAt: at(25 * time.Minute)}, *due(10, at(20*time.Minute)))
	for _, c := range []struct {
		b     model.BudgetID
		next  time.Duration
		count int
	}{{bA, 30 * time.Minute, 1}, {bC, 25 * time.Minute, 1}, {bB, time.Hour, 0}, {bE, 30 * time.Minute, 0}} {
		st := h.budgetStatus(c.b, noExec, at(21*time.Minute))
		if !st.NextResetAt.Equal(at(c.next)) || st.ResetCount != c.count {
			h.t.Fatalf("budget %v after 20m: next reset %v count %d, want %v %d", c.b, st.NextResetAt, st.ResetCount, at(c.next), c.count)
		}
	}
	h.wantUsage(bA, at(21*time.Minute), nil)
	h.wantUsage(bB, at(21*time.Minute), map[string]int64{"tokens": 5})

	for _, b := range all {
		h.reported(b, map[string]int64{"tokens": 5}, at(time.Hour+time.Minute), model.ReportApplied)
	}
	now := at(2*time.Hour + 55*time.Minute) // on bC's grid: its next reset is the one after
	wantEqual(h.t, "hours later", model.BudgetResetDueResult{Reset: []model.BudgetID{bC, bA, bE, bB}, NextDueAt: at(3 * time.Hour)}, *due(10, now))
	for _, c := range []struct {
		b     model.BudgetID
		next  time.Duration
		count int
	}{{bA, 3 * time.Hour, 2}, {bC, 3*time.Hour + 5*time.Minute, 2}, {bB, 3 * time.Hour, 1}, {bE, 3 * time.Hour, 1}} {
		st := h.budgetStatus(c.b, noExec, now)
		if !st.NextResetAt.Equal(at(c.next)) || st.ResetCount != c.count || len(usageOf(st.Usage)) != 0 {
			h.t.Fatalf("budget %v at %v: next reset %v count %d usage %v, want %v %d none", c.b, now, st.NextResetAt, st.ResetCount, st.Usage, at(c.next), c.count)
		}
	}
	h.wantBudget(model.BudgetStatus{ID: bD, Limits: lims, Usage: map[string]int64{"tokens": 10}, CreatedAt: at(0)}, noExec, now)
	h.wantBudget(model.BudgetStatus{ID: other, Limits: lims, Usage: map[string]int64{"tokens": 10}, ResetInterval: 10 * time.Minute,
		NextResetAt: at(10 * time.Minute), CreatedAt: at(0)}, noExec, now)
	wantEqual(h.t, "nothing due after", model.BudgetResetDueResult{NextDueAt: at(3 * time.Hour)}, *due(10, now))
}

// wantReconcile compares a reconcile result; Last only counts with More.
func wantReconcile(h *admissionHarness, what string, want model.BudgetReconcileResult, got *model.BudgetReconcileResult) {
	h.t.Helper()
	g := *got
	if !want.More {
		g.Last = want.Last
	}
	wantEqual(h.t, what, want, g)
}

// budgetReconcile: a pass marks BreachedAt = Now on a budget with a
// dimension at or above a positive hard limit (once: a marked budget
// keeps its time) and clears the mark of one without.
func budgetReconcile(h *admissionHarness) {
	part := 7 % h.cfg.BudgetPartitions
	mk := func(l limits, usage int64) model.BudgetID {
		b := h.newBudget(&model.BudgetCreateParams{ID: h.budgetID(part), Limits: l, Now: at(0)})
		h.report(&model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": usage}, Now: at(time.Second)})
		return b
	}
	atHard := mk(limits{"tokens": {Hard: 10}}, 10)
	below := mk(limits{"tokens": {Hard: 10}}, 5)
	tracked := mk(limits{"tokens": {}}, 50)
	soft := mk(limits{"tokens": {Hard: 100, Soft: 5}}, 50)
	pass := func(now time.Time) *model.BudgetReconcileResult {
		return call(h.as.BudgetReconcile(h.ctx, &model.BudgetReconcileParams{Partition: part, Limit: 10, Now: now})).must(h.t)
	}
	breachedAt := func(b model.BudgetID) time.Time { return h.budgetStatus(b, noExec, at(time.Hour)).BreachedAt }

	wantReconcile(h, "first pass", model.BudgetReconcileResult{Checked: 4, Breached: []model.BudgetID{atHard}}, pass(at(time.Minute)))
	wantReconcile(h, "second pass", model.BudgetReconcileResult{Checked: 4}, pass(at(2*time.Minute)))
	if got := breachedAt(atHard); !got.Equal(at(time.Minute)) {
		h.t.Fatalf("BreachedAt %v, want %v", got, at(time.Minute))
	}
	for _, b := range []model.BudgetID{below, tracked, soft} {
		if got := breachedAt(b); !got.IsZero() {
			h.t.Fatalf("budget %v without a dimension at hard: BreachedAt %v", b, got)
		}
	}

	h.reported(below, map[string]int64{"tokens": 5}, at(3*time.Minute), model.ReportApplied)
	call(h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: atHard, Now: at(3 * time.Minute)})).must(h.t)
	wantReconcile(h, "after a reset", model.BudgetReconcileResult{Checked: 4, Breached: []model.BudgetID{below}, Cleared: []model.BudgetID{atHard}}, pass(at(4*time.Minute)))
	if got := breachedAt(atHard); !got.IsZero() {
		h.t.Fatalf("reset budget: BreachedAt %v after the pass", got)
	}
	if got := breachedAt(below); !got.Equal(at(4 * time.Minute)) {
		h.t.Fatalf("BreachedAt %v, want %v", got, at(4*time.Minute))
	}
}

// budgetReconcilePages: a pass checks up to Limit budgets in id order
// after After; Last is the next call's After while More.
func budgetReconcilePages(h *admissionHarness) {
	part := 9 % h.cfg.BudgetPartitions
	var bs []model.BudgetID
	for range 3 {
		b := h.newBudget(&model.BudgetCreateParams{ID: h.budgetID(part), Limits: limits{"tokens": {Hard: 10}}, Now: at(0)})
		h.reported(b, map[string]int64{"tokens": 10}, at(time.Second), model.ReportApplied)
		bs = append(bs, b)
	}
	page := func(after model.BudgetID) *model.BudgetReconcileResult {
		return call(h.as.BudgetReconcile(h.ctx, &model.BudgetReconcileParams{Partition: part, After: after, Limit: 2, Now: at(time.Minute)})).must(h.t)
	}
	first := page(model.BudgetID{})
	wantReconcile(h, "first page", model.BudgetReconcileResult{Checked: 2, Breached: bs[:2], Last: bs[1], More: true}, first)
	wantReconcile(h, "second page", model.BudgetReconcileResult{Checked: 1, Breached: bs[2:]}, page(first.Last))
}

// budgetExhausted: BudgetStatus.Exhausted is the first dimension in name
// order at or above a hard limit.
func budgetExhausted(h *admissionHarness) {
	b := h.budget(limits{"a": {Hard: 10}, "b": {Hard: 10}, "c": {}}, at(0))
	ex := func() string { return h.budgetStatus(b, noExec, at(time.Minute)).Exhausted }
	h.reported(b, map[string]int64{"c": 100, "a": 9}, at(time.Second), model.ReportApplied)
	if got := ex(); got != "" {
		h.t.Fatalf("below every hard limit: Exhausted %q", got)
	}
	h.reported(b, map[string]int64{"b": 10}, at(2*time.Second), model.ReportApplied)
	if got := ex(); got != "b" {
		h.t.Fatalf("b at its limit: Exhausted %q", got)
	}
	h.reported(b, map[string]int64{"a": 1}, at(3*time.Second), model.ReportApplied)
	if got := ex(); got != "a" {
		h.t.Fatalf("a and b at their limits: Exhausted %q", got)
	}
	call(h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: b, Now: at(4 * time.Second)})).must(h.t)
	if got := ex(); got != "" {
		h.t.Fatalf("after a reset: Exhausted %q", got)
	}
}

// budgetNotFound: every operation on an unknown budget is
// ErrBudgetNotFound and creates nothing.
func budgetNotFound(h *admissionHarness) {
	b := h.budgetID()
	x := h.newID(h.p0)
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"report", func() error {
			_, err := h.as.BudgetReport(h.ctx, &model.BudgetReportParams{ID: b, Deltas: map[string]int64{"t": 1}, DedupKey: "k", Execution: x, Now: at(0)})
			return err
		}},
		{"reset", func() error {
			_, err := h.as.BudgetReset(h.ctx, &model.BudgetResetParams{ID: b, Now: at(0)})
			return err
		}},
		{"release", func() error {
			_, err := h.as.BudgetRelease(h.ctx, &model.BudgetReleaseParams{ID: b, Execution: x, Now: at(0)})
			return err
		}},
		{"status", func() error {
			_, err := h.as.BudgetStatus(h.ctx, &model.BudgetStatusParams{ID: b, Execution: x, Now: at(0)})
			return err
		}},
	} {
		if err := c.do(); !errors.Is(err, model.ErrBudgetNotFound) {
			h.t.Fatalf("%s of an unknown budget: %v, want %s", c.name, err, model.CodeBudgetNotFound)
		}
	}
	_, err := h.as.BudgetStatus(h.ctx, &model.BudgetStatusParams{ID: b, Now: at(time.Second)})
	wantErr(h.t, err, model.ErrBudgetNotFound)
}

// budgetOnHardBreach: a hard breach's result carries the budget's breach
// action.
func budgetOnHardBreach(h *admissionHarness) {
	cancel := h.newBudget(&model.BudgetCreateParams{Limits: limits{"tokens": {Hard: 1}}, OnHardBreach: model.BreachCancelFlow, Now: at(0)})
	none := h.budget(limits{"tokens": {Hard: 1}}, at(0))
	wantReport(h.t, "cancel_flow", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "tokens", Usage: 2, Limit: 1, OnHardBreach: model.BreachCancelFlow},
		h.reported(cancel, map[string]int64{"tokens": 2}, at(time.Second), model.ReportHardBreach))
	wantReport(h.t, "none", model.BudgetReportResult{Outcome: model.ReportHardBreach, Dimension: "tokens", Usage: 2, Limit: 1},
		h.reported(none, map[string]int64{"tokens": 2}, at(time.Second), model.ReportHardBreach))
	if got := h.budgetStatus(cancel, noExec, at(time.Second)).OnHardBreach; got != model.BreachCancelFlow {
		h.t.Fatalf("status OnHardBreach %q", got)
	}
}

package storetest

import (
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// The scanner filter (model.ScannerFilter): IndexScanDue leaves out the
// entries of executions the filter does not match, counting them towards
// Limit and moving LastSeen past them; RouteUnblock keeps them blocked.

// deadlines creates executions due in the deadline index at 1s, 2s, ...
// with the given options each.
func (h *admissionHarness) deadlines(opts ...[]createOpt) []model.DueItem {
	h.t.Helper()
	var items []model.DueItem
	for i, o := range opts {
		d := time.Duration(i+1) * time.Second
		id := h.create(at(0), append([]createOpt{withDeadline(at(d))}, o...)...)
		items = append(items, model.DueItem{ID: id, DueAt: at(d)})
	}
	return items
}

func (h *admissionHarness) scanDue(f model.ScannerFilter, after *model.DueCursor, limit int) model.IndexScanDueResult {
	h.t.Helper()
	return *call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
		Partition: h.p0, Index: model.IndexExecutionDeadline, Now: at(time.Minute), After: after, Limit: limit, Filter: f,
	})).must(h.t)
}

func cursorOf(it model.DueItem) *model.DueCursor { return &model.DueCursor{DueAt: it.DueAt, ID: it.ID} }

// scanFilter: a namespace filter leaves out the other namespace's
// entries, which still count towards Limit and move LastSeen.
func scanFilter(h *admissionHarness) {
	it := h.deadlines(nil, []createOpt{withNamespace(nsB)}, nil, []createOpt{withTags("app.tenant", "x")})
	f := model.ScannerFilter{Namespace: nsA}
	wantEqual(h.t, "all", model.IndexScanDueResult{Items: []model.DueItem{it[0], it[2], it[3]}, LastSeen: cursorOf(it[3])}, h.scanDue(f, nil, 10))
	wantEqual(h.t, "limit 2", model.IndexScanDueResult{Items: it[:1], More: true, LastSeen: cursorOf(it[1])}, h.scanDue(f, nil, 2))
	wantEqual(h.t, "after it", model.IndexScanDueResult{Items: it[2:], LastSeen: cursorOf(it[3])}, h.scanDue(f, cursorOf(it[1]), 2))
	wantEqual(h.t, "only a filtered one", model.IndexScanDueResult{More: true, LastSeen: cursorOf(it[1])}, h.scanDue(f, cursorOf(it[0]), 1))
	wantEqual(h.t, "namespace B", model.IndexScanDueResult{Items: it[1:2], More: true, LastSeen: cursorOf(it[1])}, h.scanDue(model.ScannerFilter{Namespace: nsB}, nil, 2))
}

// scanFilterTag: a tag filter keeps only the executions whose tag has the
// value.
func scanFilterTag(h *admissionHarness) {
	it := h.deadlines([]createOpt{withTags("app.tenant", "y")}, []createOpt{withTags("app.tenant", "x")}, nil,
		[]createOpt{withNamespace(nsB), withTags("app.tenant", "x")})
	f := model.ScannerFilter{TagKey: "app.tenant", TagValue: "x"}
	wantEqual(h.t, "tag x", model.IndexScanDueResult{Items: []model.DueItem{it[1], it[3]}, LastSeen: cursorOf(it[3])}, h.scanDue(f, nil, 10))
	f.Namespace = nsA
	wantEqual(h.t, "tag x in A", model.IndexScanDueResult{Items: it[1:2], LastSeen: cursorOf(it[3])}, h.scanDue(f, nil, 10))
}

// scanLastSeen: without a filter, LastSeen is the last item (nil when
// nothing is due).
func scanLastSeen(h *admissionHarness) {
	it := h.deadlines(nil, nil, nil)
	wantEqual(h.t, "all", model.IndexScanDueResult{Items: it, LastSeen: cursorOf(it[2])}, h.scanDue(model.ScannerFilter{}, nil, 10))
	wantEqual(h.t, "page", model.IndexScanDueResult{Items: it[:2], More: true, LastSeen: cursorOf(it[1])}, h.scanDue(model.ScannerFilter{}, nil, 2))
	res := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{Partition: h.p0, Index: model.IndexExecutionDeadline, Now: at(500 * time.Millisecond), Limit: 10})).must(h.t)
	wantEqual(h.t, "nothing due", model.IndexScanDueResult{NextDueAt: at(time.Second)}, *res)
}

// routeUnblockFilter: RouteUnblock with a tag filter keeps the executions
// it does not match blocked on route.
func routeUnblockFilter(h *admissionHarness) {
	routed := func(opts ...createOpt) model.ExecutionID {
		id := h.create(at(0), opts...)
		h.block(id, model.WaitingForCapableWorker, at(time.Second))
		return id
	}
	x := routed(withTags("app.tenant", "x"))
	plain := routed()
	y := routed(withTags("app.tenant", "y"))
	unblock := func(f model.ScannerFilter, now time.Time) []model.ExecutionID {
		res := call(h.s.RouteUnblock(h.ctx, &model.RouteUnblockParams{Partition: h.p0, Namespace: nsA, Filter: f, Limit: 10, Now: now})).must(h.t)
		return slices.SortedFunc(slices.Values(res.Unblocked), model.ExecutionID.Compare)
	}
	wantEqual(h.t, "tag x", []model.ExecutionID{x}, unblock(model.ScannerFilter{TagKey: "app.tenant", TagValue: "x"}, at(2*time.Second)))
	h.wantEligible(at(2*time.Second), x)
	for _, id := range []model.ExecutionID{plain, y} {
		h.wantIndexes(id, ixAll, ixLane(laneA, "blocked:route"))
	}
	want := slices.SortedFunc(slices.Values([]model.ExecutionID{plain, y}), model.ExecutionID.Compare)
	wantEqual(h.t, "namespace filter", want, unblock(model.ScannerFilter{Namespace: nsA}, at(3*time.Second)))
}

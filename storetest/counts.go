package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Counts by public state (model.CountStore). Every case's cleanup also
// compares the counters with a full listing (checkCounts), so each
// transition of the whole suite is checked; these cases pin the reads.

func testCounts(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*countsHarness)
	}{
		{"Lifecycle", countsLifecycle},
		{"Filters", countsFilters},
		{"DeleteDropsRow", countsDelete},
		{"CompleteNext", countsCompleteNext},
		{"Validation", countsValidation},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			cs, ok := optionalOf[model.CountStore](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.CountStore", h.s)
			}
			c.run(&countsHarness{harness: h, cs: cs})
		})
	}
}

type countsHarness struct {
	*harness
	cs model.CountStore
}

// counts reads the counters of the subtest's partitions with the filter
// of p (its Partitions are set here).
func (h *countsHarness) counts(p model.ExecutionCountsParams) []model.CountRow {
	h.t.Helper()
	p.Partitions = slices.Compact(slices.Sorted(maps.Keys(map[int]bool{h.p0: true, h.p1: true})))
	return call(h.cs.ExecutionCounts(h.ctx, &p)).must(h.t).Rows
}

func (h *countsHarness) want(what string, p model.ExecutionCountsParams, want ...model.CountRow) {
	h.t.Helper()
	wantEqual(h.t, what, want, h.counts(p))
}

func row(ns model.Namespace, lane model.LaneID, kind model.Kind, st model.PublicState, n int64) model.CountRow {
	return model.CountRow{Namespace: ns, Lane: lane, Kind: kind, State: st, Count: n}
}

// countsLifecycle follows executions through waiting, delayed, active and
// the terminal states.
func countsLifecycle(h *countsHarness) {
	all := model.ExecutionCountsParams{}
	h.want("empty store", all)
	a := h.create(at(0))
	h.create(at(0), withDelay(at(time.Hour)))
	h.want("created", all,
		row(nsA, laneA, kindA, model.PublicWaiting, 1), row(nsA, laneA, kindA, model.PublicDelayed, 1))
	ca := h.claim(a, wA, at(time.Second))
	h.want("claimed", all,
		row(nsA, laneA, kindA, model.PublicDelayed, 1), row(nsA, laneA, kindA, model.PublicActive, 1))
	h.complete(a, ca.Fence(), at(2*time.Second))
	b, cb := h.active(at(3 * time.Second))
	h.fail(b, cb.Fence(), model.FailurePermanent, at(4*time.Second))
	c := h.create(at(5 * time.Second))
	h.cancelOp(c, at(6*time.Second))
	h.want("ended", all,
		row(nsA, laneA, kindA, model.PublicDelayed, 1), row(nsA, laneA, kindA, model.PublicCompleted, 1),
		row(nsA, laneA, kindA, model.PublicFailed, 1), row(nsA, laneA, kindA, model.PublicCancelled, 1))
	call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: a, RequestedBy: "op", Now: at(7 * time.Second)})).must(h.t)
	h.want("replayed", all,
		row(nsA, laneA, kindA, model.PublicWaiting, 1), row(nsA, laneA, kindA, model.PublicDelayed, 1),
		row(nsA, laneA, kindA, model.PublicFailed, 1), row(nsA, laneA, kindA, model.PublicCancelled, 1))
}

// countsFilters counts over two partitions, namespaces, lanes and kinds,
// and narrows by each.
func countsFilters(h *countsHarness) {
	onP1 := func(p *model.ExecutionCreateParams) { p.ID = h.newID(h.p1) }
	kindB := model.Kind("report|pdf") // a kind may hold the separator of valkeystore's fields
	withKind := func(k model.Kind) createOpt { return func(p *model.ExecutionCreateParams) { p.Kind = k } }
	h.create(at(0))
	h.create(at(0), onP1)
	h.create(at(0), onP1, withKind(kindB))
	h.create(at(0), withLane(laneB))
	h.create(at(0), withNamespace(nsB), onP1)
	h.want("all", model.ExecutionCountsParams{},
		row(nsA, laneA, kindA, model.PublicWaiting, 2), row(nsA, laneA, kindB, model.PublicWaiting, 1),
		row(nsA, laneB, kindA, model.PublicWaiting, 1), row(nsB, laneA, kindA, model.PublicWaiting, 1))
	h.want("namespace", model.ExecutionCountsParams{Namespace: nsB}, row(nsB, laneA, kindA, model.PublicWaiting, 1))
	h.want("lane", model.ExecutionCountsParams{Lane: laneB}, row(nsA, laneB, kindA, model.PublicWaiting, 1))
	h.want("kind", model.ExecutionCountsParams{Kind: kindB}, row(nsA, laneA, kindB, model.PublicWaiting, 1))
	h.want("unknown lane", model.ExecutionCountsParams{Lane: "nobody"})
	if h.p0 != h.p1 {
		got := call(h.cs.ExecutionCounts(h.ctx, &model.ExecutionCountsParams{Partitions: []int{h.p1}})).must(h.t).Rows
		wantEqual(h.t, "one partition", []model.CountRow{row(nsA, laneA, kindA, model.PublicWaiting, 1),
			row(nsA, laneA, kindB, model.PublicWaiting, 1), row(nsB, laneA, kindA, model.PublicWaiting, 1)}, got)
	}
	got := call(h.cs.ExecutionCounts(h.ctx, &model.ExecutionCountsParams{Partitions: []int{}})).must(h.t).Rows
	wantEqual(h.t, "no partition", nil, got)
}

// countsCompleteNext completes with a next claim: the completed
// execution leaves "active" and the claimed one enters it, in one step,
// whether the two share a row (valkeystore's script then moves neither:
// count_hold), differ in kind, or nothing is claimed.
func countsCompleteNext(h *countsHarness) {
	kindB := model.Kind("kind-b")
	// completeNext completes id and returns the next claim, which must be
	// of want (none when want is the zero id)
	completeNext := func(id model.ExecutionID, c *model.ClaimResult, now time.Time, want model.ExecutionID) *model.ClaimResult {
		h.t.Helper()
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
			ID: id, Fence: c.Fence(), Result: []byte("r"), Now: now,
			Next: &model.NextClaim{Lane: laneA, Capabilities: wA.Caps, ScanLimit: 10, LeaseRequest: h.leaseReq(wA, leaseTTL)},
		})).must(h.t)
		if res.Next == nil {
			h.t.Fatalf("complete with next at %v: no next result", now)
		}
		got := res.Next.Claimed
		if (got == nil) != (want == model.ExecutionID{}) || got != nil && got.ID != want {
			h.t.Fatalf("complete with next at %v claimed %+v, want %v", now, got, want)
		}
		return got
	}
	a, ca := h.active(at(0))
	b := h.create(at(time.Second))
	c := h.create(at(2*time.Second), func(p *model.ExecutionCreateParams) { p.Kind = kindB })
	all := model.ExecutionCountsParams{}
	h.want("one active, two waiting", all,
		row(nsA, laneA, kindA, model.PublicWaiting, 1), row(nsA, laneA, kindA, model.PublicActive, 1),
		row(nsA, laneA, kindB, model.PublicWaiting, 1))

	cb := completeNext(a, ca, at(3*time.Second), b)
	h.want("same kind next", all,
		row(nsA, laneA, kindA, model.PublicActive, 1), row(nsA, laneA, kindA, model.PublicCompleted, 1),
		row(nsA, laneA, kindB, model.PublicWaiting, 1))

	cc := completeNext(b, cb, at(4*time.Second), c)
	h.want("other kind next", all,
		row(nsA, laneA, kindA, model.PublicCompleted, 2), row(nsA, laneA, kindB, model.PublicActive, 1))

	completeNext(c, cc, at(5*time.Second), model.ExecutionID{})
	h.want("nothing next", all,
		row(nsA, laneA, kindA, model.PublicCompleted, 2), row(nsA, laneA, kindB, model.PublicCompleted, 1))
}

// countsDelete deletes the only execution of a row: the row goes.
func countsDelete(h *countsHarness) {
	rs, ok := optionalOf[model.RetentionStore](h.harness)
	if !ok {
		h.t.Skip("storetest: no model.RetentionStore")
	}
	id, c := h.active(at(0))
	h.complete(id, c.Fence(), at(time.Second))
	h.create(at(time.Second))
	h.want("before", model.ExecutionCountsParams{},
		row(nsA, laneA, kindA, model.PublicWaiting, 1), row(nsA, laneA, kindA, model.PublicCompleted, 1))
	call(rs.ExecutionDelete(h.ctx, &model.ExecutionDeleteParams{ID: id, Now: at(2 * time.Second)})).must(h.t)
	h.want("after", model.ExecutionCountsParams{}, row(nsA, laneA, kindA, model.PublicWaiting, 1))
}

func countsValidation(h *countsHarness) {
	n := h.cfg.FlowPartitions
	for _, c := range []struct {
		name  string
		p     model.ExecutionCountsParams
		field string
	}{
		{"partition out of range", model.ExecutionCountsParams{Partitions: []int{n}}, "Partitions"},
		{"negative partition", model.ExecutionCountsParams{Partitions: []int{-1}}, "Partitions"},
		{"duplicate partition", model.ExecutionCountsParams{Partitions: []int{1, 1}}, "Partitions"},
		{"bad namespace", model.ExecutionCountsParams{Namespace: "Upper"}, "Namespace"},
		{"bad lane", model.ExecutionCountsParams{Lane: "a b"}, "Lane"},
		{"bad kind", model.ExecutionCountsParams{Kind: "a b"}, "Kind"},
	} {
		h.t.Run(c.name, func(t *testing.T) {
			_, err := h.cs.ExecutionCounts(h.ctx, &c.p)
			if e := modelErr(t, err, model.ErrValidation); e.Field != c.field {
				t.Fatalf("field %q, want %q", e.Field, c.field)
			}
		})
	}
}

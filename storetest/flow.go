package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testFlows covers model.FlowStore (issue 10, first slice): flows,
// members, edges, edge groups and their reads, with every error path
// writing nothing. A store without the optional interface skips them.
func testFlows(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*flowHarness)
	}{
		{"Create", flowCreate},
		{"AddMember", flowAddMember},
		{"StageEdge", flowStageEdge},
		{"Cycle", flowCycle},
		{"SearchLimit", flowSearchLimit},
		{"GroupPolicy", flowGroupPolicy},
		{"EdgeReads", flowEdgeReads},
		{"List", flowList},
		{"MemberList", flowMemberList},
		{"Validation", flowValidation},
		{"Hold", flowHold},
		{"Seal", flowSeal},
		{"AllOfChain", flowAllOfChain},
		{"AnyOf", flowAnyOf},
		{"Quorum", flowQuorum},
		{"ResolveBeforeSeal", flowResolveBeforeSeal},
		{"PassResult", flowPassResult},
		{"CancelHeld", flowCancelHeld},
		{"Replay", flowReplay},
		{"SiblingCancel", flowSiblingCancel},
		{"CreateMember", flowCreateMember},
		{"SkipPausedAttempt", flowSkipPausedAttempt},
		{"Cancel", flowCancel},
		{"State", flowState},
		{"Diamond", flowDiamond},
		{"AwaitChildren", flowAwaitChildren},
		{"AwaitRoot", flowAwaitRoot},
		{"AwaitRefused", flowAwaitRefused},
		{"AwaitNotSiblings", flowAwaitNotSiblings},
		{"Finished", flowFinished},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			var s model.Store = h.s
			if p, ok := h.s.(*partialStore); ok {
				s = p.Store
			}
			fs, ok := s.(model.FlowStore)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.FlowStore", h.s)
			}
			c.run(&flowHarness{harness: h, fs: fs})
		})
	}
}

// flowHarness is a harness with the store's flow operations.
type flowHarness struct {
	*harness
	fs model.FlowStore
}

// flowIn returns a new flow id whose partition is part (the first of the
// subtest's fresh ids that lands there).
func (h *flowHarness) flowIn(part int) model.FlowID {
	for {
		f := model.FlowID(h.uuid())
		if h.cfg.FlowPartition(f) == part {
			return f
		}
	}
}

// newFlow creates a flow in partition p0 at now.
func (h *flowHarness) newFlow(now time.Time, tags map[string]string) model.FlowID {
	h.t.Helper()
	f := h.flowIn(h.p0)
	res := call(h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: f, Tags: tags, Now: now})).must(h.t)
	if res.Outcome != model.FlowCreated || res.Partition != h.p0 {
		h.t.Fatalf("FlowCreate: %+v, want created in %d", res, h.p0)
	}
	return f
}

// member creates an execution in f's partition and adds it to f.
func (h *flowHarness) member(f model.FlowID, now time.Time) model.ExecutionID {
	h.t.Helper()
	id := h.create(now, inPartition(h.harness, h.cfg.FlowPartition(f)))
	res := call(h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: now})).must(h.t)
	if res.Outcome != model.MemberAdded {
		h.t.Fatalf("FlowAddMember %v: %+v", id, res)
	}
	return id
}

func (h *flowHarness) flow(f model.FlowID) *model.FlowSnapshot {
	h.t.Helper()
	return call(h.fs.FlowDescribe(h.ctx, &model.FlowDescribeParams{Flow: f})).must(h.t)
}

// stage stages up → down at the flow's current revision and returns the
// edge's id.
func (h *flowHarness) stage(f model.FlowID, up, down model.ExecutionID, now time.Time) model.EdgeID {
	h.t.Helper()
	e := model.EdgeID(h.uuid())
	rev := h.flow(f).GraphRevision
	res := call(h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: e, Upstream: up, Downstream: down, ExpectedGraphRevision: rev, Now: now,
	})).must(h.t)
	if res.GraphRevision != rev+1 {
		h.t.Fatalf("EdgeStage: revision %d, want %d", res.GraphRevision, rev+1)
	}
	return e
}

// stageErr stages up → down at the current revision, expects want (with
// the field and detail, unless "") and checks that nothing changed.
func (h *flowHarness) stageErr(f model.FlowID, up, down model.ExecutionID, limit int, want *model.Error, field, detail string) {
	h.t.Helper()
	before := h.flow(f)
	_, err := h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: model.EdgeID(h.uuid()), Upstream: up, Downstream: down,
		ExpectedGraphRevision: before.GraphRevision, MaxSearchEdges: limit, Now: at(time.Hour),
	})
	e := modelErr(h.t, err, want)
	if (field != "" && e.Field != field) || (detail != "" && e.Detail != detail) {
		h.t.Fatalf("%s: field %q detail %q, want %q %q", want.Code, e.Field, e.Detail, field, detail)
	}
	h.unchanged(f, before)
}

func (h *flowHarness) unchanged(f model.FlowID, before *model.FlowSnapshot) {
	h.t.Helper()
	if d := cmp.Diff(before, h.flow(f), cmpOpts...); d != "" {
		h.t.Fatalf("a refused operation changed the flow (-before +after):\n%s", d)
	}
}

func (h *flowHarness) edges(id model.ExecutionID, outgoing bool) *model.EdgeListResult {
	h.t.Helper()
	p := &model.EdgeListParams{Execution: id}
	if outgoing {
		return call(h.fs.EdgeListOutgoing(h.ctx, p)).must(h.t)
	}
	return call(h.fs.EdgeListIncoming(h.ctx, p)).must(h.t)
}

func (h *flowHarness) group(f model.FlowID, down model.ExecutionID) *model.EdgeGroupSnapshot {
	h.t.Helper()
	return call(h.fs.EdgeGroupDescribe(h.ctx, &model.EdgeGroupDescribeParams{Flow: f, Downstream: down})).must(h.t)
}

func flowCreate(h *flowHarness) {
	tags := map[string]string{"app.team": "build", "app.run": "42"}
	f := h.newFlow(at(0), tags)
	want := &model.FlowSnapshot{
		ID: f, Partition: h.p0, State: model.FlowOpen, CreatedAt: at(0), LastMutationAt: at(0), Tags: tags,
	}
	if d := cmp.Diff(want, h.flow(f), cmpOpts...); d != "" {
		h.t.Fatalf("FlowDescribe (-want +got):\n%s", d)
	}
	// Idempotent: a second create changes nothing, not even the tags.
	res := call(h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: f, Tags: map[string]string{"app.x": "y"}, Now: at(time.Second)})).must(h.t)
	if res.Outcome != model.FlowAlreadyExists || res.Partition != h.p0 {
		h.t.Fatalf("second FlowCreate: %+v", res)
	}
	h.unchanged(f, want)
	// A flow without tags has nil Tags.
	g := h.newFlow(at(0), nil)
	if snap := h.flow(g); snap.Tags != nil || snap.MemberCount != 0 {
		h.t.Fatalf("untagged flow: %+v", snap)
	}
	_, err := h.fs.FlowDescribe(h.ctx, &model.FlowDescribeParams{Flow: h.flowIn(h.p0)})
	wantErr(h.t, err, model.ErrFlowNotFound)
}

func flowAddMember(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a := h.member(f, at(time.Second))
	snap := h.flow(f)
	if snap.MemberCount != 1 || snap.GraphRevision != 1 || !snap.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("after one member: %+v", snap)
	}
	if got := h.describe(a); got.Flow != f || !got.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("ExecutionDescribe(member): Flow %v LastMutationAt %v, want %v and %v", got.Flow, got.LastMutationAt, f, at(time.Second))
	}
	// Adding again is a no-op.
	res := call(h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: a, Now: at(time.Minute)})).must(h.t)
	if res.Outcome != model.AlreadyMember || res.MemberCount != 1 || res.GraphRevision != 1 {
		h.t.Fatalf("re-add: %+v", res)
	}
	h.unchanged(f, snap)
	// A member of one flow joins no other.
	g := h.flowIn(h.p0)
	call(h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: g, Now: at(0)})).must(h.t)
	gs := h.flow(g)
	_, err := h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: g, Execution: a, Now: at(time.Minute)})
	if e := modelErr(h.t, err, model.ErrAlreadyInFlow); e.Field != "Execution" || e.Detail != f.String() {
		h.t.Fatalf("already in flow: %+v", e)
	}
	h.unchanged(g, gs)
	// Unknown flow, unknown execution.
	_, err = h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: h.flowIn(h.p0), Execution: a, Now: at(time.Minute)})
	wantErr(h.t, err, model.ErrFlowNotFound)
	_, err = h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: h.newID(h.p0), Now: at(time.Minute)})
	wantErr(h.t, err, model.ErrNotFound)
	h.unchanged(f, snap)
	// A terminal execution joins no flow: its record is frozen.
	done, c := h.active(at(0), inPartition(h.harness, h.p0))
	h.complete(done, c.Fence(), at(time.Second))
	_, err = h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: done, Now: at(time.Minute)})
	wantNotActive(h.t, err, model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeSuccess, LeaseEpoch: 1, AttemptID: c.AttemptID})
	h.unchanged(f, snap)
	// A standalone execution names no flow.
	solo := h.create(at(0), inPartition(h.harness, h.p0))
	if got := h.describe(solo).Flow; !got.IsZero() {
		h.t.Fatalf("standalone execution names flow %v", got)
	}
	// An execution outside the flow's partition is refused by validation.
	if h.cfg.FlowPartitions > 1 {
		other := h.create(at(0), inPartition(h.harness, h.p1))
		_, err = h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: other, Now: at(time.Minute)})
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != "Execution" || e.Detail != "not_in_flow_partition" {
			h.t.Fatalf("other partition: %+v", e)
		}
		h.unchanged(f, snap)
	}
}

func flowStageEdge(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b, c := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	ab := h.stage(f, a, b, at(time.Second))
	snap := h.flow(f)
	if snap.EdgeCount != 1 || snap.GraphRevision != 4 || !snap.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("after one edge: %+v", snap)
	}
	// Stale revision.
	_, err := h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: model.EdgeID(h.uuid()), Upstream: a, Downstream: c, ExpectedGraphRevision: 3, Now: at(time.Hour),
	})
	if e := modelErr(h.t, err, model.ErrStaleGraphRevision); !e.Retryable() || e.Detail != "current:4" {
		h.t.Fatalf("stale revision: %+v", e)
	}
	h.unchanged(f, snap)
	// Non-members: a standalone execution, and a member of another flow.
	solo := h.create(at(0), inPartition(h.harness, h.p0))
	h.stageErr(f, solo, b, 0, model.ErrNotInFlow, "Upstream", "")
	h.stageErr(f, a, solo, 0, model.ErrNotInFlow, "Downstream", "")
	g := h.newFlow(at(0), nil)
	x := h.member(g, at(0))
	h.stageErr(f, a, x, 0, model.ErrNotInFlow, "", "")
	// Duplicates: the same pair under a new id, and the same id.
	h.stageErr(f, a, b, 0, model.ErrDependencyExists, "Downstream", ab.String())
	_, err = h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: ab, Upstream: a, Downstream: c, ExpectedGraphRevision: 4, Now: at(time.Hour),
	})
	if e := modelErr(h.t, err, model.ErrDependencyExists); e.Field != "Edge" {
		h.t.Fatalf("duplicate id: %+v", e)
	}
	h.unchanged(f, snap)
	// Unknown flow.
	_, err = h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: h.flowIn(h.p0), Edge: model.EdgeID(h.uuid()), Upstream: a, Downstream: c, Now: at(time.Hour),
	})
	wantErr(h.t, err, model.ErrFlowNotFound)
	// The reverse of an edge is a cycle; the same pair the other way in
	// another flow is unrelated.
	h.stageErr(f, b, a, 0, model.ErrCycle, "", "")
	y := h.member(g, at(0))
	h.stage(g, x, y, at(0))
	// A diamond is no cycle, nor is a transitive shortcut.
	d := h.member(f, at(0))
	h.stage(f, a, c, at(0))
	h.stage(f, b, d, at(0))
	h.stage(f, c, d, at(0))
	h.stage(f, a, d, at(0))
	snap = h.flow(f)
	if snap.MemberCount != 4 || snap.EdgeCount != 5 || snap.GraphRevision != 9 {
		h.t.Fatalf("diamond: %+v", snap)
	}
}

func flowCycle(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	var n []model.ExecutionID
	for range 5 {
		n = append(n, h.member(f, at(0)))
	}
	// A chain n0 → n1 → ... → n4, staged out of order.
	h.stage(f, n[2], n[3], at(0))
	h.stage(f, n[0], n[1], at(0))
	h.stage(f, n[3], n[4], at(0))
	h.stage(f, n[1], n[2], at(0))
	for _, c := range [][2]int{{4, 0}, {3, 0}, {4, 2}, {1, 0}, {2, 1}} {
		h.stageErr(f, n[c[0]], n[c[1]], 0, model.ErrCycle, "Upstream", "")
	}
	// Forward shortcuts close no cycle.
	h.stage(f, n[0], n[4], at(0))
	h.stage(f, n[1], n[3], at(0))
}

// flowSearchLimit: the cycle check walks at most MaxSearchEdges edges and
// says so rather than guessing; the bound is exact (a walk of exactly the
// bound is answered) and the outcome does not depend on whether the walk
// would have found the upstream.
func flowSearchLimit(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	var n []model.ExecutionID
	for range 6 {
		n = append(n, h.member(f, at(0)))
	}
	// n1 → n2 → n3 → n4: 3 edges reachable from n1.
	h.stage(f, n[1], n[2], at(0))
	h.stage(f, n[2], n[3], at(0))
	h.stage(f, n[3], n[4], at(0))
	h.stageErr(f, n[0], n[1], 2, model.ErrGraphSearchLimit, "MaxSearchEdges", "2")
	// With the upstream reachable, still the limit, not a guess.
	h.stageErr(f, n[4], n[1], 2, model.ErrGraphSearchLimit, "", "")
	// A bound equal to the reachable edges answers exactly.
	h.stageErr(f, n[4], n[1], 3, model.ErrCycle, "", "")
	before := h.flow(f)
	res := call(h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: model.EdgeID(h.uuid()), Upstream: n[0], Downstream: n[1],
		ExpectedGraphRevision: before.GraphRevision, MaxSearchEdges: 3, Now: at(0),
	})).must(h.t)
	if res.GraphRevision != before.GraphRevision+1 {
		h.t.Fatalf("stage within the bound: %+v", res)
	}
	// A fresh downstream needs no walk, whatever the bound.
	h.stage(f, n[4], n[5], at(0))
}

func flowGroupPolicy(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b, d := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	if g := h.group(f, d); g.Policy != model.AllOf || g.Explicit || g.Edges != 0 || g.Flow != f || g.Downstream != d {
		h.t.Fatalf("default group: %+v", g)
	}
	set := func(pol model.EdgeGroupPolicy, now time.Time) model.EdgeGroupSetOutcome {
		h.t.Helper()
		return call(h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: d, Policy: pol, Now: now})).must(h.t).Outcome
	}
	anyOf := model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsCancelRemaining}
	if got := set(anyOf, at(time.Second)); got != model.GroupSet {
		h.t.Fatalf("set: %v", got)
	}
	snap := h.flow(f)
	if !snap.LastMutationAt.Equal(at(time.Second)) || snap.GraphRevision != 3 {
		h.t.Fatalf("after set: %+v", snap)
	}
	if got := set(anyOf, at(time.Minute)); got != model.GroupAlreadySet {
		h.t.Fatalf("same again: %v", got)
	}
	h.unchanged(f, snap)
	quorum := model.EdgeGroupPolicy{Kind: model.GroupQuorum, Quorum: 2, OnSatisfied: model.SiblingsLetRun}
	if got := set(quorum, at(2*time.Second)); got != model.GroupSet {
		h.t.Fatalf("change before the first edge: %v", got)
	}
	h.stage(f, a, d, at(3*time.Second))
	h.stage(f, b, d, at(3*time.Second))
	if g := h.group(f, d); g.Policy != quorum || !g.Explicit || g.Edges != 2 {
		h.t.Fatalf("group: %+v", g)
	}
	// Fixed once an edge is in.
	snap = h.flow(f)
	for _, pol := range []model.EdgeGroupPolicy{anyOf, quorum, model.AllOf} {
		_, err := h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: d, Policy: pol, Now: at(time.Hour)})
		if e := modelErr(h.t, err, model.ErrEdgeGroupFixed); e.Field != "Downstream" || e.Detail != "edges:2" {
			h.t.Fatalf("fixed: %+v", e)
		}
	}
	h.unchanged(f, snap)
	// An upstream's own group is untouched; an explicit AllOf is explicit.
	if got := call(h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: a, Policy: model.AllOf, Now: at(time.Hour)})).must(h.t).Outcome; got != model.GroupSet {
		h.t.Fatalf("explicit AllOf: %v", got)
	}
	if g := h.group(f, a); g.Policy != model.AllOf || !g.Explicit || g.Edges != 0 {
		h.t.Fatalf("explicit AllOf: %+v", g)
	}
	// Non-members and unknown flows.
	solo := h.create(at(0), inPartition(h.harness, h.p0))
	_, err := h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: solo, Policy: anyOf, Now: at(time.Hour)})
	if e := modelErr(h.t, err, model.ErrNotInFlow); e.Field != "Downstream" {
		h.t.Fatalf("non-member: %+v", e)
	}
	_, err = h.fs.EdgeGroupDescribe(h.ctx, &model.EdgeGroupDescribeParams{Flow: f, Downstream: solo})
	wantErr(h.t, err, model.ErrNotInFlow)
	_, err = h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: h.flowIn(h.p0), Downstream: d, Policy: anyOf, Now: at(time.Hour)})
	wantErr(h.t, err, model.ErrFlowNotFound)
	_, err = h.fs.EdgeGroupDescribe(h.ctx, &model.EdgeGroupDescribeParams{Flow: h.flowIn(h.p0), Downstream: d})
	wantErr(h.t, err, model.ErrFlowNotFound)
}

func flowEdgeReads(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b, c := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	ab := h.stage(f, a, b, at(time.Second))
	rev := h.flow(f).GraphRevision
	ac := model.EdgeID(h.uuid())
	call(h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: ac, Upstream: a, Downstream: c, ExpectedGraphRevision: rev, PassResult: true, Now: at(2 * time.Second),
	})).must(h.t)
	bc := h.stage(f, b, c, at(3*time.Second))
	wantAB := model.EdgeSnapshot{ID: ab, Flow: f, Upstream: a, Downstream: b, State: model.EdgePending, GraphRevision: 4, CreatedAt: at(time.Second)}
	wantAC := model.EdgeSnapshot{ID: ac, Flow: f, Upstream: a, Downstream: c, PassResult: true, State: model.EdgePending, GraphRevision: 5, CreatedAt: at(2 * time.Second)}
	wantBC := model.EdgeSnapshot{ID: bc, Flow: f, Upstream: b, Downstream: c, State: model.EdgePending, GraphRevision: 6, CreatedAt: at(3 * time.Second)}
	got := call(h.fs.EdgeDescribe(h.ctx, &model.EdgeDescribeParams{Flow: f, Edge: ac})).must(h.t)
	if d := cmp.Diff(&wantAC, got, cmpOpts...); d != "" {
		h.t.Fatalf("EdgeDescribe (-want +got):\n%s", d)
	}
	for _, c := range []struct {
		id       model.ExecutionID
		outgoing bool
		want     []model.EdgeSnapshot
	}{
		{a, true, []model.EdgeSnapshot{wantAB, wantAC}},
		{a, false, nil},
		{b, true, []model.EdgeSnapshot{wantBC}},
		{b, false, []model.EdgeSnapshot{wantAB}},
		{c, true, nil},
		{c, false, []model.EdgeSnapshot{wantAC, wantBC}},
	} {
		want := &model.EdgeListResult{Flow: f, Edges: sortEdges(c.want)}
		if d := cmp.Diff(want, h.edges(c.id, c.outgoing), cmpOpts...); d != "" {
			h.t.Fatalf("edges of %v (outgoing %v) (-want +got):\n%s", c.id, c.outgoing, d)
		}
	}
	// A standalone execution has no flow and no edges; an unknown one is
	// not found.
	solo := h.create(at(0), inPartition(h.harness, h.p0))
	for _, out := range []bool{true, false} {
		if r := h.edges(solo, out); !r.Flow.IsZero() || len(r.Edges) != 0 {
			h.t.Fatalf("standalone: %+v", r)
		}
	}
	_, err := h.fs.EdgeListOutgoing(h.ctx, &model.EdgeListParams{Execution: h.newID(h.p0)})
	wantErr(h.t, err, model.ErrNotFound)
	_, err = h.fs.EdgeListIncoming(h.ctx, &model.EdgeListParams{Execution: h.newID(h.p0)})
	wantErr(h.t, err, model.ErrNotFound)
	// Unknown edges and flows.
	_, err = h.fs.EdgeDescribe(h.ctx, &model.EdgeDescribeParams{Flow: f, Edge: model.EdgeID(h.uuid())})
	wantErr(h.t, err, model.ErrEdgeNotFound)
	g := h.newFlow(at(0), nil)
	_, err = h.fs.EdgeDescribe(h.ctx, &model.EdgeDescribeParams{Flow: g, Edge: ab})
	wantErr(h.t, err, model.ErrEdgeNotFound)
	_, err = h.fs.EdgeDescribe(h.ctx, &model.EdgeDescribeParams{Flow: h.flowIn(h.p0), Edge: ab})
	wantErr(h.t, err, model.ErrFlowNotFound)
}

// sortEdges orders edges as the lists do: by edge id bytes.
func sortEdges(es []model.EdgeSnapshot) []model.EdgeSnapshot {
	out := append([]model.EdgeSnapshot(nil), es...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && model.CompareFlowIDs(model.FlowID(out[j].ID), model.FlowID(out[j-1].ID)) < 0; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func flowList(h *flowHarness) {
	var want []model.FlowID
	for range 5 {
		want = append(want, h.newFlow(at(0), nil))
	}
	if h.cfg.FlowPartitions > 1 {
		g := h.flowIn(h.p1)
		call(h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: g, Now: at(0)})).must(h.t)
		page := call(h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.p1, Limit: 10})).must(h.t)
		if d := cmp.Diff(&model.FlowListResult{IDs: []model.FlowID{g}}, page, cmpOpts...); d != "" {
			h.t.Fatalf("other partition (-want +got):\n%s", d)
		}
		_, err := h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.p0, After: g, Limit: 10})
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != "After" {
			h.t.Fatalf("cursor of another partition: %+v", e)
		}
	}
	for i := 1; i < len(want); i++ {
		for j := i; j > 0 && model.CompareFlowIDs(want[j], want[j-1]) < 0; j-- {
			want[j], want[j-1] = want[j-1], want[j]
		}
	}
	var got []model.FlowID
	var after model.FlowID
	for pages := 0; ; pages++ {
		page := call(h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.p0, After: after, Limit: 2})).must(h.t)
		got = append(got, page.IDs...)
		if page.Next.IsZero() {
			if pages != 2 {
				h.t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		after = page.Next
	}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		h.t.Fatalf("FlowList (-want +got):\n%s", d)
	}
}

// flowMemberList: a flow's members page in id order, whatever order they
// joined in and whatever other executions share the partition; an
// unknown flow is not found; a cursor of another partition, or a limit
// out of range, is refused naming the field.
func flowMemberList(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	var want []model.ExecutionID
	for range 5 {
		want = append(want, h.member(f, at(0)))
		h.create(at(0), inPartition(h.harness, h.cfg.FlowPartition(f))) // a neighbour, not a member
	}
	slices.SortFunc(want, model.ExecutionID.Compare)
	var got []model.ExecutionID
	var after model.ExecutionID
	for pages := 0; ; pages++ {
		page := call(h.fs.FlowMemberList(h.ctx, &model.FlowMemberListParams{Flow: f, After: after, Limit: 2})).must(h.t)
		got = append(got, page.IDs...)
		if page.Next.IsZero() {
			if pages != 2 {
				h.t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		after = page.Next
	}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		h.t.Fatalf("FlowMemberList (-want +got):\n%s", d)
	}
	empty := h.newFlow(at(0), nil)
	page := call(h.fs.FlowMemberList(h.ctx, &model.FlowMemberListParams{Flow: empty, Limit: 10})).must(h.t)
	if len(page.IDs) != 0 || !page.Next.IsZero() {
		h.t.Fatalf("members of an empty flow: %+v", page)
	}
	_, err := h.fs.FlowMemberList(h.ctx, &model.FlowMemberListParams{Flow: h.flowIn(h.p0), Limit: 10})
	wantErr(h.t, err, model.ErrFlowNotFound)
	_, err = h.fs.FlowMemberList(h.ctx, &model.FlowMemberListParams{Flow: f, Limit: 0})
	if e := modelErr(h.t, err, model.ErrValidation); e.Field != "Limit" {
		h.t.Fatalf("limit 0: %+v", e)
	}
	if h.cfg.FlowPartitions > 1 {
		other := h.create(at(0), inPartition(h.harness, h.p1))
		_, err = h.fs.FlowMemberList(h.ctx, &model.FlowMemberListParams{Flow: f, After: other, Limit: 10})
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != "After" {
			h.t.Fatalf("cursor of another partition: %+v", e)
		}
	}
}

func flowValidation(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b := h.member(f, at(0)), h.member(f, at(0))
	snap := h.flow(f)
	stage := func(mod func(*model.EdgeStageParams)) error {
		p := &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(h.uuid()), Upstream: a, Downstream: b,
			ExpectedGraphRevision: snap.GraphRevision, Now: at(time.Hour)}
		mod(p)
		_, err := h.fs.EdgeStage(h.ctx, p)
		return err
	}
	group := func(pol model.EdgeGroupPolicy) error {
		_, err := h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: b, Policy: pol, Now: at(time.Hour)})
		return err
	}
	for _, c := range []struct {
		name  string
		err   error
		field string
	}{
		{"create/flow", func() error {
			_, err := h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Now: at(0)})
			return err
		}(), "Flow"},
		{"create/tags", func() error {
			_, err := h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: h.flowIn(h.p0), Tags: map[string]string{"nodot": "x"}, Now: at(0)})
			return err
		}(), "Tags"},
		{"create/now", func() error {
			_, err := h.fs.FlowCreate(h.ctx, &model.FlowCreateParams{Flow: h.flowIn(h.p0)})
			return err
		}(), "Now"},
		{"add/execution", func() error {
			_, err := h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Now: at(0)})
			return err
		}(), "Execution"},
		{"stage/edge", stage(func(p *model.EdgeStageParams) { p.Edge = model.EdgeID{} }), "Edge"},
		{"stage/upstream", stage(func(p *model.EdgeStageParams) { p.Upstream = model.ExecutionID{} }), "Upstream"},
		{"stage/self", stage(func(p *model.EdgeStageParams) { p.Downstream = a }), "Downstream"},
		{"stage/limit", stage(func(p *model.EdgeStageParams) { p.MaxSearchEdges = model.MaxGraphSearchEdges + 1 }), "MaxSearchEdges"},
		{"stage/now", stage(func(p *model.EdgeStageParams) { p.Now = time.Time{} }), "Now"},
		{"group/kind", group(model.EdgeGroupPolicy{}), "Policy.Kind"},
		{"group/allof-quorum", group(model.EdgeGroupPolicy{Kind: model.GroupAllOf, Quorum: 2}), "Policy.Quorum"},
		{"group/allof-siblings", group(model.EdgeGroupPolicy{Kind: model.GroupAllOf, OnSatisfied: model.SiblingsLetRun}), "Policy.OnSatisfied"},
		{"group/anyof-siblings", group(model.EdgeGroupPolicy{Kind: model.GroupAnyOf}), "Policy.OnSatisfied"},
		{"group/quorum-zero", group(model.EdgeGroupPolicy{Kind: model.GroupQuorum, OnSatisfied: model.SiblingsLetRun}), "Policy.Quorum"},
		{"list/partition", func() error {
			_, err := h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: -1, Limit: 1})
			return err
		}(), "Partition"},
		{"list/limit", func() error {
			_, err := h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.p0})
			return err
		}(), "Limit"},
		{"describe/flow", func() error {
			_, err := h.fs.FlowDescribe(h.ctx, &model.FlowDescribeParams{})
			return err
		}(), "Flow"},
		{"edges/execution", func() error {
			_, err := h.fs.EdgeListOutgoing(h.ctx, &model.EdgeListParams{})
			return err
		}(), "Execution"},
	} {
		e := modelErr(h.t, c.err, model.ErrValidation)
		if e.Field != c.field {
			h.t.Errorf("%s: field %q, want %q (%v)", c.name, e.Field, c.field, e)
		}
	}
	wantErr(h.t, stage(func(p *model.EdgeStageParams) { p.Downstream = a }), model.ErrSelfEdge)
	h.unchanged(f, snap)
}

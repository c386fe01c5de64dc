package storetest

import (
	"bytes"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Dependency resolution (issue 10, second slice): holding members in an
// open flow, FlowSeal, resolution on terminal transitions, skip cascades,
// PassResult, and replay re-opening what a member decided (the FlowStore
// contract in model/flow_ops.go). Every subtest runs on the flow harness
// of flow.go, whose setup checks the per-execution invariants (a terminal
// member in no live index among them) when the subtest ends; settled
// checks them in between as well.

// anyOfLetRun and quorumLetRun are the policies of the fan-in tests: the
// siblings run on (SiblingsLetRun).
var anyOfLetRun = model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsLetRun}

func quorumLetRun(k int) model.EdgeGroupPolicy {
	return model.EdgeGroupPolicy{Kind: model.GroupQuorum, Quorum: k, OnSatisfied: model.SiblingsLetRun}
}

// join adds the existing execution id to f at now.
func (h *flowHarness) join(f model.FlowID, id model.ExecutionID, now time.Time) {
	h.t.Helper()
	res := call(h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: now})).must(h.t)
	if res.Outcome != model.MemberAdded {
		h.t.Fatalf("FlowAddMember %v: %+v", id, res)
	}
}

// activeMember creates an execution in f's partition, claims it for wA and
// adds it to f: it joins running.
func (h *flowHarness) activeMember(f model.FlowID, now time.Time) (model.ExecutionID, *model.ClaimResult) {
	h.t.Helper()
	id, cr := h.active(now, inPartition(h.harness, h.cfg.FlowPartition(f)))
	h.join(f, id, now)
	return id, cr
}

// stagePass stages up → down with PassResult at the flow's revision.
func (h *flowHarness) stagePass(f model.FlowID, up, down model.ExecutionID, now time.Time) model.EdgeID {
	h.t.Helper()
	e := model.EdgeID(h.uuid())
	call(h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
		Flow: f, Edge: e, Upstream: up, Downstream: down, ExpectedGraphRevision: h.flow(f).GraphRevision,
		PassResult: true, Now: now,
	})).must(h.t)
	return e
}

func (h *flowHarness) setGroup(f model.FlowID, down model.ExecutionID, pol model.EdgeGroupPolicy, now time.Time) {
	h.t.Helper()
	res := call(h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: down, Policy: pol, Now: now})).must(h.t)
	if res.Outcome != model.GroupSet {
		h.t.Fatalf("EdgeGroupSet %v: %v", down, res.Outcome)
	}
}

// seal seals f at now, expecting a first seal with these counts.
func (h *flowHarness) seal(f model.FlowID, now time.Time, released, skipped int) {
	h.t.Helper()
	res := call(h.fs.FlowSeal(h.ctx, &model.FlowSealParams{Flow: f, Now: now})).must(h.t)
	want := model.FlowSealResult{Outcome: model.FlowSealedNow, Released: released, Skipped: skipped}
	wantEqual(h.t, "FlowSeal", want, *res)
	h.settled()
}

// succeed claims a released member for wA at now and completes it a
// second later with result.
func (h *flowHarness) succeed(id model.ExecutionID, result []byte, now time.Time) {
	h.t.Helper()
	cr := h.claim(id, wA, now)
	h.completeWith(id, cr.Fence(), result, now.Add(time.Second))
}

// completeWith completes an active member with result; the resolution it
// triggers is checked by settled.
func (h *flowHarness) completeWith(id model.ExecutionID, f model.Fence, result []byte, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Result: result, Now: now})).must(h.t)
	h.settled()
}

// failNow fails an active member terminally (a permanent failure, no
// retry).
func (h *flowHarness) failNow(id model.ExecutionID, f model.Fence, now time.Time) {
	h.t.Helper()
	if res := h.fail(id, f, model.FailurePermanent, now); res.Outcome != model.FailTerminal {
		h.t.Fatalf("fail %v: %+v, want terminal", id, res)
	}
	h.settled()
}

// failHard claims a released member for wA at now and fails it terminally
// a second later.
func (h *flowHarness) failHard(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	cr := h.claim(id, wA, now)
	h.failNow(id, cr.Fence(), now.Add(time.Second))
}

func (h *flowHarness) replay(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "again", Now: now})).must(h.t)
	h.settled()
}

// settled checks the invariants of every execution now (the harness checks
// them again when the subtest ends): a transition that resolved edges left
// no member in an index its state does not name.
func (h *flowHarness) settled() {
	h.t.Helper()
	h.checkInvariants()
	if h.t.Failed() {
		h.t.FailNow()
	}
}

// wantHeld checks that id is held for its dependencies: runnable,
// BlockedByDependencies / WaitingForChildren (public waiting_children),
// in blocked:dependencies only.
func (h *flowHarness) wantHeld(id model.ExecutionID, as model.AttemptState) {
	h.t.Helper()
	s := h.wantState(id, stBlocked(model.BlockedByDependencies, model.WaitingForChildren, "", as))
	if s.PublicState != model.PublicWaitingChildren {
		h.t.Fatalf("public state of held %v: %v", id, s.PublicState)
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "blocked:dependencies"))
}

// wantReleased checks that id is eligible now.
func (h *flowHarness) wantReleased(id model.ExecutionID, as model.AttemptState) {
	h.t.Helper()
	if s := h.wantState(id, stEligible(as)); !s.DelayUntil.IsZero() {
		h.t.Fatalf("released %v: DelayUntil %v", id, s.DelayUntil)
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
}

// wantSkipped checks that id, which never ran, was skipped: terminal with
// outcome skipped (public skipped), in the terminal index only.
func (h *flowHarness) wantSkipped(id model.ExecutionID) {
	h.t.Helper()
	s := h.wantState(id, stTerminal(model.OutcomeSkipped, model.AttemptNone))
	if s.PublicState != model.PublicSkipped {
		h.t.Fatalf("public state of skipped %v: %v", id, s.PublicState)
	}
	h.wantIndexes(id, terminalIndexes(laneA)...)
}

func (h *flowHarness) wantEdge(f model.FlowID, e model.EdgeID, want model.EdgeState) {
	h.t.Helper()
	if got := call(h.fs.EdgeDescribe(h.ctx, &model.EdgeDescribeParams{Flow: f, Edge: e})).must(h.t).State; got != want {
		h.t.Fatalf("edge %v: %v, want %v", e, got, want)
	}
}

// groupCount is what a test checks of a group.
type groupCount struct {
	Size, Succeeded, Impossible int
	State                       model.GroupState
}

func (h *flowHarness) wantGroup(f model.FlowID, down model.ExecutionID, want groupCount) {
	h.t.Helper()
	g := h.group(f, down)
	wantEqual(h.t, "group of "+down.String(), want, groupCount{g.Size, g.Succeeded, g.Impossible, g.State})
}

func (h *flowHarness) payload(id model.ExecutionID) []byte {
	h.t.Helper()
	return call(h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: id})).must(h.t).Payload
}

func (h *flowHarness) wantPayload(id model.ExecutionID, want string) {
	h.t.Helper()
	if got := h.payload(id); !bytes.Equal(got, []byte(want)) {
		h.t.Fatalf("payload of %v: %q, want %q", id, got, want)
	}
}

// flowWorld is everything the store shows of flow f and of the
// executions of the partitions used.
type flowWorld struct {
	Flow     *model.FlowSnapshot
	World    worldView
	Out      map[string][]model.EdgeSnapshot
	Groups   map[string]*model.EdgeGroupSnapshot
	Payloads map[string][]byte
}

func (h *flowHarness) flowWorld(f model.FlowID) flowWorld {
	h.t.Helper()
	w := flowWorld{
		Flow: h.flow(f), World: h.world(at(0)),
		Out: map[string][]model.EdgeSnapshot{}, Groups: map[string]*model.EdgeGroupSnapshot{}, Payloads: map[string][]byte{},
	}
	for _, id := range h.listAll() {
		w.Payloads[id.String()] = h.payload(id)
		if h.describe(id).Flow != f {
			continue
		}
		w.Out[id.String()] = h.edges(id, true).Edges
		w.Groups[id.String()] = h.group(f, id)
	}
	return w
}

// refused runs op, a call the store must refuse (op checks the error),
// and checks that it changed nothing: not the flow, its edges and groups,
// nor any execution.
func (h *flowHarness) refused(f model.FlowID, op func()) {
	h.t.Helper()
	before := h.flowWorld(f)
	op()
	if d := cmp.Diff(before, h.flowWorld(f), cmpOpts...); d != "" {
		h.t.Fatalf("a refused call changed the store (-before +after):\n%s", d)
	}
}

// flowHold: a runnable execution joining an open flow is held, in
// blocked:dependencies, and no worker can claim it; a delayed one is held
// too. An execution joining active runs on; it can be an upstream, but an
// edge into it (or into a held member that has ended) is refused with
// ErrDownstreamStarted, before the cycle check, and changes nothing.
func flowHold(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	x := h.member(f, at(time.Second))
	h.wantHeld(x, model.AttemptPendingFirst)
	if got := h.describe(x).LastMutationAt; !got.Equal(at(time.Second)) {
		h.t.Fatalf("held member: LastMutationAt %v, want %v", got, at(time.Second))
	}
	h.harness.unchanged(x, func() {
		if res := h.claimNext(wA, nil, 10, at(2*time.Second)); res.Claimed != nil || len(res.Blocked) != 0 {
			h.t.Fatalf("claim-next found a held member: %+v", res)
		}
		_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
			ID: x, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second),
		})
		wantErr(h.t, err, model.ErrNotEligible)
	})
	late := h.create(at(0), inPartition(h.harness, h.p0), withDelay(at(time.Hour)))
	h.join(f, late, at(time.Second))
	h.wantHeld(late, model.AttemptPendingFirst)

	act, _ := h.activeMember(f, at(2*time.Second))
	h.wantState(act, stActive)
	h.wantIndexes(act, activeIndexes(laneA, wA.Instance)...)
	h.refused(f, func() { h.stageErr(f, x, act, 0, model.ErrDownstreamStarted, "Downstream", "") })
	// An active member is an upstream like any other; the reverse edge
	// would close a cycle, but the downstream check comes first.
	ax := h.stage(f, act, x, at(3*time.Second))
	h.wantEdge(f, ax, model.EdgePending)
	h.refused(f, func() { h.stageErr(f, x, act, 0, model.ErrDownstreamStarted, "Downstream", "") })
	// A held member that ended (cancelled) is no longer held.
	gone := h.member(f, at(3*time.Second))
	h.cancelOp(gone, at(4*time.Second))
	h.refused(f, func() { h.stageErr(f, x, gone, 0, model.ErrDownstreamStarted, "Downstream", "") })
	h.wantHeld(x, model.AttemptPendingFirst)
	h.settled()
}

// flowSeal: FlowSeal fixes every group's size, releases the held members
// without incoming edges (eligible, or delayed until a RunAt still to
// come), leaves the others held, and closes the graph: a second seal and
// every graph change are refused or no-ops and change nothing.
func flowSeal(h *flowHarness) {
	_, err := h.fs.FlowSeal(h.ctx, &model.FlowSealParams{Flow: h.flowIn(h.p0), Now: at(0)})
	wantErr(h.t, err, model.ErrFlowNotFound)
	for _, c := range []struct {
		p     model.FlowSealParams
		field string
	}{
		{model.FlowSealParams{Now: at(0)}, "Flow"},
		{model.FlowSealParams{Flow: h.flowIn(h.p0)}, "Now"},
	} {
		_, err := h.fs.FlowSeal(h.ctx, &c.p)
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != c.field {
			h.t.Fatalf("FlowSeal validation: %+v, want field %s", e, c.field)
		}
	}

	f := h.newFlow(at(0), nil)
	a, b, d := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	// late's RunAt is after the seal, early's before it.
	late := h.create(at(0), inPartition(h.harness, h.p0), withDelay(at(time.Hour)))
	early := h.create(at(0), inPartition(h.harness, h.p0), withDelay(at(time.Second)))
	h.join(f, late, at(0))
	h.join(f, early, at(0))
	ad, bd := h.stage(f, a, d, at(time.Second)), h.stage(f, b, d, at(time.Second))
	if g := h.group(f, d); g.Edges != 2 || g.Size != 0 || g.State != model.GroupWaiting {
		h.t.Fatalf("group before the seal: %+v", g)
	}
	for _, id := range []model.ExecutionID{a, b, d, late, early} {
		h.wantHeld(id, model.AttemptPendingFirst)
	}

	h.seal(f, at(time.Minute), 4, 0)
	snap := h.flow(f)
	if !snap.Sealed || !snap.LastMutationAt.Equal(at(time.Minute)) || snap.State != model.FlowOpen {
		h.t.Fatalf("sealed flow: %+v", snap)
	}
	h.wantReleased(a, model.AttemptPendingFirst)
	h.wantReleased(b, model.AttemptPendingFirst)
	h.wantReleased(early, model.AttemptPendingFirst)
	if s := h.wantState(late, stDelayed(model.WaitingForDelay, model.AttemptPendingFirst)); !s.DelayUntil.Equal(at(time.Hour)) {
		h.t.Fatalf("released late: DelayUntil %v, want %v", s.DelayUntil, at(time.Hour))
	}
	h.wantIndexes(late, ixAll, ixLane(laneA, "delayed"))
	h.wantHeld(d, model.AttemptPendingFirst)
	h.wantGroup(f, d, groupCount{Size: 2, State: model.GroupWaiting})
	h.wantEdge(f, ad, model.EdgePending)
	h.wantEdge(f, bd, model.EdgePending)
	if g := h.group(f, a); g.Size != 0 || g.Edges != 0 || g.State != model.GroupWaiting {
		h.t.Fatalf("group of a member without incoming edges: %+v", g)
	}

	// Sealing again changes nothing.
	h.refused(f, func() {
		res := call(h.fs.FlowSeal(h.ctx, &model.FlowSealParams{Flow: f, Now: at(2 * time.Minute)})).must(h.t)
		wantEqual(h.t, "second FlowSeal", model.FlowSealResult{Outcome: model.FlowAlreadySealed}, *res)
	})
	// The graph is closed: no member, edge or policy, whatever else is
	// wrong with the call; an existing member is still a member.
	solo := h.create(at(0), inPartition(h.harness, h.p0))
	done, c := h.active(at(0), inPartition(h.harness, h.p0))
	h.complete(done, c.Fence(), at(time.Second))
	now := at(2 * time.Minute)
	h.refused(f, func() {
		for _, id := range []model.ExecutionID{solo, done} {
			_, err := h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: now})
			wantErr(h.t, err, model.ErrFlowSealed)
		}
		res := call(h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: d, Now: now})).must(h.t)
		if res.Outcome != model.AlreadyMember || res.MemberCount != 5 || res.GraphRevision != snap.GraphRevision {
			h.t.Fatalf("re-add to a sealed flow: %+v", res)
		}
		h.stageErr(f, a, b, 0, model.ErrFlowSealed, "", "")
		_, err := h.fs.EdgeStage(h.ctx, &model.EdgeStageParams{
			Flow: f, Edge: model.EdgeID(h.uuid()), Upstream: a, Downstream: b, ExpectedGraphRevision: 1, Now: now,
		})
		wantErr(h.t, err, model.ErrFlowSealed)
		for _, down := range []model.ExecutionID{a, d} {
			_, err = h.fs.EdgeGroupSet(h.ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: down, Policy: anyOfLetRun, Now: now})
			wantErr(h.t, err, model.ErrFlowSealed)
		}
	})
	// A member of another flow is still refused as such.
	g := h.newFlow(at(0), nil)
	other := h.member(g, at(0))
	h.refused(f, func() {
		_, err := h.fs.FlowAddMember(h.ctx, &model.FlowAddMemberParams{Flow: f, Execution: other, Now: now})
		wantErr(h.t, err, model.ErrAlreadyInFlow)
	})
	// An empty flow seals too.
	h.seal(h.newFlow(at(0), nil), at(time.Minute), 0, 0)
}

// flowAllOfChain: in a sealed chain a → b → c, a's success satisfies its
// edge and releases b (delayed until its RunAt for a downstream that has
// one) while c stays held; a terminal failure instead skips b and, in the
// same call, c.
func flowAllOfChain(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b, c := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	late := h.create(at(0), inPartition(h.harness, h.p0), withDelay(at(time.Hour)))
	h.join(f, late, at(0))
	ab, bc, al := h.stage(f, a, b, at(0)), h.stage(f, b, c, at(0)), h.stage(f, a, late, at(0))
	h.seal(f, at(time.Second), 1, 0)
	h.wantReleased(a, model.AttemptPendingFirst)
	h.wantHeld(b, model.AttemptPendingFirst)
	h.wantHeld(c, model.AttemptPendingFirst)

	h.succeed(a, nil, at(2*time.Second))
	h.wantEdge(f, ab, model.EdgeSatisfied)
	h.wantEdge(f, al, model.EdgeSatisfied)
	h.wantEdge(f, bc, model.EdgePending)
	h.wantGroup(f, b, groupCount{Size: 1, Succeeded: 1, State: model.GroupSatisfied})
	h.wantGroup(f, c, groupCount{Size: 1, State: model.GroupWaiting})
	h.wantReleased(b, model.AttemptPendingFirst)
	h.wantHeld(c, model.AttemptPendingFirst)
	if s := h.wantState(late, stDelayed(model.WaitingForDelay, model.AttemptPendingFirst)); !s.DelayUntil.Equal(at(time.Hour)) {
		h.t.Fatalf("released late: DelayUntil %v, want %v", s.DelayUntil, at(time.Hour))
	}
	h.wantIndexes(late, ixAll, ixLane(laneA, "delayed"))
	// b's failure skips c.
	h.failHard(b, at(4*time.Second))
	h.wantEdge(f, bc, model.EdgeImpossible)
	h.wantGroup(f, c, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantSkipped(c)

	// Another chain: the head's failure skips the whole chain at once.
	g := h.newFlow(at(0), nil)
	x, y, z := h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0))
	xy, yz := h.stage(g, x, y, at(0)), h.stage(g, y, z, at(0))
	h.seal(g, at(time.Second), 1, 0)
	h.failHard(x, at(2*time.Second))
	h.wantState(x, stTerminal(model.OutcomeFailed, model.AttemptTerminal))
	h.wantEdge(g, xy, model.EdgeImpossible)
	h.wantEdge(g, yz, model.EdgeImpossible)
	h.wantGroup(g, y, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantGroup(g, z, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantSkipped(y)
	h.wantSkipped(z)
}

// fanIn makes a sealed flow of three upstreams into d under pol; the
// upstreams are released and claimed for wA at 2s (their fences are
// returned), d is held.
func (h *flowHarness) fanIn(pol model.EdgeGroupPolicy) (f model.FlowID, ups [3]model.ExecutionID, fences [3]model.Fence, edges [3]model.EdgeID, d model.ExecutionID) {
	h.t.Helper()
	f = h.newFlow(at(0), nil)
	d = h.member(f, at(0))
	h.setGroup(f, d, pol, at(0))
	for i := range ups {
		ups[i] = h.member(f, at(0))
		edges[i] = h.stage(f, ups[i], d, at(0))
	}
	h.seal(f, at(time.Second), 3, 0)
	h.wantHeld(d, model.AttemptPendingFirst)
	for i, u := range ups {
		fences[i] = h.claim(u, wA, at(2*time.Second)).Fence()
	}
	return f, ups, fences, edges, d
}

// flowAnyOf: an AnyOf group fires on its first success and decides once: a
// later failure (or success) is counted but changes no decision, and the
// siblings run on (LetRun); it is impossible only when every upstream
// failed.
func flowAnyOf(h *flowHarness) {
	f, ups, fences, edges, d := h.fanIn(anyOfLetRun)
	h.completeWith(ups[0], fences[0], nil, at(3*time.Second))
	h.wantEdge(f, edges[0], model.EdgeSatisfied)
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 1, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingFirst)
	h.wantState(ups[1], stActive)
	h.wantState(ups[2], stActive)
	h.failNow(ups[1], fences[1], at(4*time.Second))
	h.wantEdge(f, edges[1], model.EdgeImpossible)
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 1, Impossible: 1, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingFirst)
	h.completeWith(ups[2], fences[2], nil, at(5*time.Second))
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 2, Impossible: 1, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingFirst)

	f, ups, fences, edges, d = h.fanIn(anyOfLetRun)
	for i := range 2 {
		h.failNow(ups[i], fences[i], at(3*time.Second))
		h.wantGroup(f, d, groupCount{Size: 3, Impossible: i + 1, State: model.GroupWaiting})
		h.wantHeld(d, model.AttemptPendingFirst)
	}
	h.failNow(ups[2], fences[2], at(4*time.Second))
	h.wantEdge(f, edges[2], model.EdgeImpossible)
	h.wantGroup(f, d, groupCount{Size: 3, Impossible: 3, State: model.GroupImpossible})
	h.wantSkipped(d)
}

// flowQuorum: Quorum(2) of three is satisfied by the second success and
// impossible after the second failure (Decide: more than 3-2 impossible);
// a quorum larger than the group is impossible at the seal, which skips
// the downstream and its own downstream and counts both.
func flowQuorum(h *flowHarness) {
	pol := quorumLetRun(2)
	if pol.Decide(3, 0, 2) != model.GroupImpossible || pol.Decide(3, 1, 1) != model.GroupWaiting || pol.Decide(3, 2, 0) != model.GroupSatisfied {
		h.t.Fatal("Decide disagrees with the cases below")
	}
	f, ups, fences, _, d := h.fanIn(pol)
	h.completeWith(ups[0], fences[0], nil, at(3*time.Second))
	h.failNow(ups[1], fences[1], at(3*time.Second))
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 1, Impossible: 1, State: model.GroupWaiting})
	h.wantHeld(d, model.AttemptPendingFirst)
	h.completeWith(ups[2], fences[2], nil, at(4*time.Second))
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 2, Impossible: 1, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingFirst)

	f, ups, fences, _, d = h.fanIn(pol)
	h.failNow(ups[0], fences[0], at(3*time.Second))
	h.wantGroup(f, d, groupCount{Size: 3, Impossible: 1, State: model.GroupWaiting})
	h.wantHeld(d, model.AttemptPendingFirst)
	h.failNow(ups[1], fences[1], at(4*time.Second))
	h.wantGroup(f, d, groupCount{Size: 3, Impossible: 2, State: model.GroupImpossible})
	h.wantSkipped(d)
	h.wantState(ups[2], stActive)

	// Quorum(3) over two edges: impossible at the seal.
	g := h.newFlow(at(0), nil)
	x, y, big, after := h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0))
	h.setGroup(g, big, quorumLetRun(3), at(0))
	h.stage(g, x, big, at(0))
	h.stage(g, y, big, at(0))
	ba := h.stage(g, big, after, at(0))
	h.seal(g, at(time.Second), 2, 2)
	h.wantGroup(g, big, groupCount{Size: 2, State: model.GroupImpossible})
	h.wantSkipped(big)
	h.wantEdge(g, ba, model.EdgeImpossible)
	h.wantGroup(g, after, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantSkipped(after)
	h.wantReleased(x, model.AttemptPendingFirst)
	h.wantReleased(y, model.AttemptPendingFirst)
}

// flowResolveBeforeSeal: in an open flow an upstream's end (or the staging
// of an edge from an upstream that has ended) resolves the edge and counts
// it, but no group decides until FlowSeal, which then releases or skips.
// An AnyOf group whose first edge is impossible before its second is
// staged is not decided early (FlowFabric §7): its size is the seal's.
func flowResolveBeforeSeal(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	u, uc := h.activeMember(f, at(0))
	d := h.member(f, at(0))
	ud := h.stage(f, u, d, at(time.Second))
	h.completeWith(u, uc.Fence(), nil, at(2*time.Second))
	h.wantEdge(f, ud, model.EdgeSatisfied)
	h.wantGroup(f, d, groupCount{Succeeded: 1, State: model.GroupWaiting})
	h.wantHeld(d, model.AttemptPendingFirst)
	// Staging from an upstream that has ended resolves the edge at once.
	v, vc := h.activeMember(f, at(0))
	w, wc := h.activeMember(f, at(0))
	h.completeWith(v, vc.Fence(), nil, at(3*time.Second))
	h.failNow(w, wc.Fence(), at(3*time.Second))
	ok, ko := h.member(f, at(0)), h.member(f, at(0))
	vok, wko := h.stage(f, v, ok, at(4*time.Second)), h.stage(f, w, ko, at(4*time.Second))
	h.wantEdge(f, vok, model.EdgeSatisfied)
	h.wantEdge(f, wko, model.EdgeImpossible)
	h.wantGroup(f, ok, groupCount{Succeeded: 1, State: model.GroupWaiting})
	h.wantGroup(f, ko, groupCount{Impossible: 1, State: model.GroupWaiting})
	h.wantHeld(ok, model.AttemptPendingFirst)
	h.wantHeld(ko, model.AttemptPendingFirst)

	h.seal(f, at(5*time.Second), 2, 1)
	h.wantGroup(f, d, groupCount{Size: 1, Succeeded: 1, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingFirst)
	h.wantGroup(f, ok, groupCount{Size: 1, Succeeded: 1, State: model.GroupSatisfied})
	h.wantReleased(ok, model.AttemptPendingFirst)
	h.wantGroup(f, ko, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantSkipped(ko)

	// FlowFabric §7: AnyOf of two, the first upstream failing before the
	// second edge is staged.
	g := h.newFlow(at(0), nil)
	p, pc := h.activeMember(g, at(0))
	q, qc := h.activeMember(g, at(0))
	either := h.member(g, at(0))
	h.setGroup(g, either, anyOfLetRun, at(0))
	pa := h.stage(g, p, either, at(time.Second))
	h.failNow(p, pc.Fence(), at(2*time.Second))
	h.wantEdge(g, pa, model.EdgeImpossible)
	h.wantGroup(g, either, groupCount{Impossible: 1, State: model.GroupWaiting})
	qa := h.stage(g, q, either, at(3*time.Second))
	h.seal(g, at(4*time.Second), 0, 0)
	h.wantGroup(g, either, groupCount{Size: 2, Impossible: 1, State: model.GroupWaiting})
	h.wantHeld(either, model.AttemptPendingFirst)
	h.completeWith(q, qc.Fence(), nil, at(5*time.Second))
	h.wantEdge(g, qa, model.EdgeSatisfied)
	h.wantGroup(g, either, groupCount{Size: 2, Succeeded: 1, Impossible: 1, State: model.GroupSatisfied})
	h.wantReleased(either, model.AttemptPendingFirst)
}

// flowPassResult: a satisfied PassResult edge copies its upstream's result
// into the downstream's payload while the downstream waits; an edge
// without PassResult leaves the payload, and a success after the group
// decided (AnyOf) does not overwrite it.
func flowPassResult(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	u1, u2, d, plain := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	h.setGroup(f, d, anyOfLetRun, at(0))
	h.stagePass(f, u1, d, at(0))
	h.stagePass(f, u2, d, at(0))
	h.stage(f, u1, plain, at(0))
	h.seal(f, at(time.Second), 2, 0)
	c2 := h.claim(u2, wA, at(2*time.Second))
	h.succeed(u1, []byte{'o', 0, 'n', 'e'}, at(2*time.Second))
	h.wantReleased(d, model.AttemptPendingFirst)
	h.wantPayload(d, "o\x00ne")
	h.wantPayload(plain, "payload")
	h.completeWith(u2, c2.Fence(), []byte("two"), at(4*time.Second))
	h.wantGroup(f, d, groupCount{Size: 2, Succeeded: 2, State: model.GroupSatisfied})
	h.wantPayload(d, "o\x00ne")
	// The payload passed is what the claim hands the worker.
	if cr := h.claim(d, wA, at(5*time.Second)); !bytes.Equal(cr.Payload, []byte("o\x00ne")) {
		h.t.Fatalf("claimed payload %q", cr.Payload)
	}
}

// flowCancelHeld: an operator cancelling a held member ends it (terminal
// index only); its outgoing edges become impossible and skip what they
// doom, at once in a sealed flow and at the seal in an open one.
func flowCancelHeld(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b, c := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	ab, bc := h.stage(f, a, b, at(0)), h.stage(f, b, c, at(0))
	h.seal(f, at(time.Second), 1, 0)
	if res := h.cancelOp(b, at(2*time.Second)); res.PriorPhase != model.PhaseRunnable {
		h.t.Fatalf("cancel: %+v", res)
	}
	h.settled()
	h.wantState(b, stTerminal(model.OutcomeCancelled, model.AttemptNone))
	h.wantIndexes(b, terminalIndexes(laneA)...)
	h.wantEdge(f, bc, model.EdgeImpossible)
	h.wantGroup(f, c, groupCount{Size: 1, Impossible: 1, State: model.GroupImpossible})
	h.wantSkipped(c)
	h.wantEdge(f, ab, model.EdgePending)
	h.wantReleased(a, model.AttemptPendingFirst)

	g := h.newFlow(at(0), nil)
	x, y, z := h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0))
	h.stage(g, x, y, at(0))
	yz := h.stage(g, y, z, at(0))
	h.cancelOp(y, at(time.Second))
	h.settled()
	h.wantIndexes(y, terminalIndexes(laneA)...)
	h.wantEdge(g, yz, model.EdgeImpossible)
	h.wantGroup(g, z, groupCount{Impossible: 1, State: model.GroupWaiting})
	h.wantHeld(z, model.AttemptPendingFirst)
	h.seal(g, at(2*time.Second), 1, 1)
	h.wantSkipped(z)
}

// flowReplay: replaying a member re-opens what it decided. A replayed
// skipped member is held again, its group counting only the upstreams
// that succeeded; replaying and completing its failed upstream then
// releases it. A replayed upstream's edge into a group still waiting
// returns to pending; into a decided group it stays.
func flowReplay(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	ok, bad, d := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	okd, badd := h.stage(f, ok, d, at(0)), h.stage(f, bad, d, at(0))
	h.seal(f, at(time.Second), 2, 0)
	h.succeed(ok, nil, at(2*time.Second))
	h.failHard(bad, at(2*time.Second))
	h.wantSkipped(d)
	h.wantGroup(f, d, groupCount{Size: 2, Succeeded: 1, Impossible: 1, State: model.GroupImpossible})

	h.replay(d, at(time.Minute))
	h.wantHeld(d, model.AttemptPendingReplay)
	h.wantGroup(f, d, groupCount{Size: 2, Succeeded: 1, State: model.GroupWaiting})
	h.wantEdge(f, okd, model.EdgeSatisfied)
	h.wantEdge(f, badd, model.EdgePending)
	h.replay(bad, at(2*time.Minute))
	h.wantReleased(bad, model.AttemptPendingReplay)
	h.wantHeld(d, model.AttemptPendingReplay)
	h.succeed(bad, nil, at(3*time.Minute))
	h.wantEdge(f, badd, model.EdgeSatisfied)
	h.wantGroup(f, d, groupCount{Size: 2, Succeeded: 2, State: model.GroupSatisfied})
	h.wantReleased(d, model.AttemptPendingReplay)

	// An upstream replayed while its downstream's group waits.
	g := h.newFlow(at(0), nil)
	u1, u2, e := h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0))
	e1, e2 := h.stage(g, u1, e, at(0)), h.stage(g, u2, e, at(0))
	h.seal(g, at(time.Second), 2, 0)
	h.succeed(u1, nil, at(2*time.Second))
	h.wantGroup(g, e, groupCount{Size: 2, Succeeded: 1, State: model.GroupWaiting})
	h.replay(u1, at(time.Minute))
	h.wantEdge(g, e1, model.EdgePending)
	h.wantGroup(g, e, groupCount{Size: 2, State: model.GroupWaiting})
	h.wantReleased(u1, model.AttemptPendingReplay)
	h.wantHeld(e, model.AttemptPendingFirst)
	h.succeed(u1, nil, at(2*time.Minute))
	h.succeed(u2, nil, at(2*time.Minute))
	h.wantEdge(g, e2, model.EdgeSatisfied)
	h.wantGroup(g, e, groupCount{Size: 2, Succeeded: 2, State: model.GroupSatisfied})
	h.wantReleased(e, model.AttemptPendingFirst)
	// The group has decided: replaying an upstream re-opens nothing.
	h.replay(u2, at(3*time.Minute))
	h.wantEdge(g, e2, model.EdgeSatisfied)
	h.wantGroup(g, e, groupCount{Size: 2, Succeeded: 2, State: model.GroupSatisfied})
	h.wantReleased(e, model.AttemptPendingFirst)
}

// wantSiblingCancelled checks that id, an upstream its group no longer
// needed, was cancelled by the flow with reason.
func (h *flowHarness) wantSiblingCancelled(id model.ExecutionID, reason string) {
	h.t.Helper()
	s := h.describe(id)
	if s.PublicState != model.PublicCancelled || s.CancellationReason != reason || s.CancelledBy != model.CancelledByFlow {
		h.t.Fatalf("sibling %v: %s reason %q by %q, want cancelled, %q by %q",
			id, s.PublicState, s.CancellationReason, s.CancelledBy, reason, model.CancelledByFlow)
	}
	h.wantIndexes(id, "all_executions", "lane:"+string(laneA)+":terminal")
}

// flowSiblingCancel: when an AnyOf or Quorum group with
// SiblingsCancelRemaining decides, its upstreams that have not ended are
// cancelled in the same step (reason sibling_quorum_satisfied or
// sibling_quorum_impossible, by the flow), a running one's holder is told
// as an operator cancel tells it, and a cancelled sibling's own
// downstream is skipped in turn. Upstreams that had ended are untouched.
func flowSiblingCancel(h *flowHarness) {
	var notices *noticeLog
	if _, ok := h.s.(model.LeaseNotifier); ok {
		notices = h.watchLeases(wA)
	}
	anyCancel := model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsCancelRemaining}
	f, ups, fences, edges, d := h.fanIn(anyCancel)
	h.failNow(ups[2], fences[2], at(3*time.Second))
	h.completeWith(ups[0], fences[0], nil, at(4*time.Second))
	h.wantReleased(d, model.AttemptPendingFirst)
	h.wantSiblingCancelled(ups[1], model.ReasonSiblingSatisfied)
	h.wantEdge(f, edges[1], model.EdgeImpossible)
	h.wantGroup(f, d, groupCount{Size: 3, Succeeded: 1, Impossible: 2, State: model.GroupSatisfied})
	if s := h.describe(ups[2]); s.PublicState != model.PublicFailed {
		h.t.Fatalf("an upstream that had ended was touched: %s", s.PublicState)
	}
	if notices != nil {
		want := model.LeaseNotice{Kind: model.LeaseNoticeCancelled, ID: ups[1], LeaseEpoch: fences[1].LeaseEpoch}
		if got := notices.next(h.t); got != want {
			h.t.Fatalf("the cancelled sibling's holder was told %+v, want %+v", got, want)
		}
		h.wantNoNotice(notices, wA)
	}

	// Quorum(2) of three, impossible after two failures: the third,
	// released but never claimed, is cancelled, and its own downstream
	// skipped.
	g := h.newFlow(at(0), nil)
	down := h.member(g, at(0))
	h.setGroup(g, down, model.EdgeGroupPolicy{Kind: model.GroupQuorum, Quorum: 2, OnSatisfied: model.SiblingsCancelRemaining}, at(0))
	var us [3]model.ExecutionID
	for i := range us {
		us[i] = h.member(g, at(0))
		h.stage(g, us[i], down, at(0))
	}
	after := h.member(g, at(0))
	h.stage(g, us[2], after, at(0))
	h.seal(g, at(time.Second), 3, 0)
	h.failHard(us[0], at(2*time.Second))
	h.wantGroup(g, down, groupCount{Size: 3, Impossible: 1, State: model.GroupWaiting})
	h.failHard(us[1], at(4*time.Second))
	h.wantGroup(g, down, groupCount{Size: 3, Impossible: 3, State: model.GroupImpossible})
	h.wantSkipped(down)
	h.wantSiblingCancelled(us[2], model.ReasonSiblingImpossible)
	h.wantSkipped(after)
	h.settled()
}

// flowCreateMember: ExecutionCreate with Flow makes the execution a held
// member in the same step (no worker can claim it between create and
// join), keeps its RunAt for its release, and refuses, creating nothing, a
// missing or sealed flow and an id outside the flow's partition; a
// duplicate is reported as such even once the flow is sealed.
func flowCreateMember(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	intoF := func(p *model.ExecutionCreateParams) { p.ID, p.Flow = h.newID(h.cfg.FlowPartition(f)), f }
	a := h.create(at(time.Second), intoF)
	later := h.create(at(time.Second), intoF, withDelay(at(time.Hour)), func(p *model.ExecutionCreateParams) {
		p.IdempotencyKey = "member-later"
	})
	h.wantHeld(a, model.AttemptPendingFirst)
	h.wantHeld(later, model.AttemptPendingFirst)
	if s := h.describe(a); s.Flow != f {
		h.t.Fatalf("created member names flow %v, want %v", s.Flow, f)
	}
	if snap := h.flow(f); snap.MemberCount != 2 || snap.GraphRevision != 2 || !snap.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("flow after two created members: %+v", snap)
	}
	h.stage(f, a, later, at(time.Second))

	// Refusals create nothing.
	for _, c := range []struct {
		flow model.FlowID
		want *model.Error
	}{{h.flowIn(h.p0), model.ErrFlowNotFound}} {
		p := h.createParams(at(time.Second))
		p.ID, p.Flow = h.newID(h.cfg.FlowPartition(c.flow)), c.flow
		_, err := h.s.ExecutionCreate(h.ctx, p)
		wantErr(h.t, err, c.want)
		_, err = h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: p.ID})
		wantErr(h.t, err, model.ErrNotFound)
	}
	other := (h.cfg.FlowPartition(f) + 1) % h.cfg.WithDefaults().FlowPartitions
	if other != h.cfg.FlowPartition(f) {
		p := h.createParams(at(time.Second))
		p.ID, p.Flow = h.newID(other), f
		_, err := h.s.ExecutionCreate(h.ctx, p)
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != "ID" || e.Detail != "not_in_flow_partition" {
			h.t.Fatalf("member outside the flow's partition: %+v", e)
		}
	}

	// Sealed: the member without edges is released (eligible now), the
	// delayed one waits for its RunAt; no new member is accepted, but a
	// retried create still finds its first answer.
	h.seal(f, at(2*time.Second), 1, 0)
	h.wantReleased(a, model.AttemptPendingFirst)
	h.succeed(a, nil, at(3*time.Second))
	if s := h.describe(later); s.PublicState != model.PublicDelayed || !s.DelayUntil.Equal(at(time.Hour)) {
		h.t.Fatalf("released member with a RunAt: %s until %v, want delayed until %v", s.PublicState, s.DelayUntil, at(time.Hour))
	}
	before := h.flow(f)
	p := h.createParams(at(5 * time.Second))
	p.ID, p.Flow = h.newID(h.cfg.FlowPartition(f)), f
	_, err := h.s.ExecutionCreate(h.ctx, p)
	wantErr(h.t, err, model.ErrFlowSealed)
	_, err = h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: p.ID})
	wantErr(h.t, err, model.ErrNotFound)
	h.unchanged(f, before)
	dup := h.createParams(at(5*time.Second), func(p *model.ExecutionCreateParams) {
		p.ID, p.Flow, p.IdempotencyKey = h.newID(h.cfg.FlowPartition(f)), f, "member-later"
	})
	res := call(h.s.ExecutionCreate(h.ctx, dup)).must(h.t)
	if !res.Duplicate || res.ID != later {
		h.t.Fatalf("retried member create: %+v, want the duplicate %v", res, later)
	}
	h.unchanged(f, before)
	h.settled()
}

// flowSkipPausedAttempt (a regression the differential found): a member
// whose attempt a worker paused (ExecutionDelay) before it joined is
// skipped with that attempt ended cancelled (dependency_impossible), not
// left open under a terminal execution.
func flowSkipPausedAttempt(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	up, upc := h.activeMember(f, at(0))
	x, xc := h.active(at(0), inPartition(h.harness, h.cfg.FlowPartition(f)))
	h.delay(x, xc.Fence(), at(time.Hour), at(time.Second))
	h.join(f, x, at(time.Second))
	h.stage(f, up, x, at(time.Second))
	h.failNow(up, upc.Fence(), at(2*time.Second))
	h.seal(f, at(3*time.Second), 0, 1)
	h.wantState(x, model.StateVector{LifecyclePhase: model.PhaseTerminal, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.NotApplicable, BlockingReason: model.BlockingNone, TerminalOutcome: model.OutcomeSkipped,
		AttemptState: model.AttemptTerminal})
	atts := h.attempts(x)
	if len(atts) != 1 || atts[0].Status != model.AttemptEndedCancelled || atts[0].FailureReason != model.ReasonDependencyImpossible {
		h.t.Fatalf("the paused attempt of a skipped member: %+v", atts)
	}
	h.settled()
}

// cancelFlow cancels f with policy at now and returns what it cancelled.
func (h *flowHarness) cancelFlow(f model.FlowID, policy model.FlowCancelPolicy, now time.Time) []model.ExecutionID {
	h.t.Helper()
	res := call(h.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: policy, Reason: "stop", Now: now})).must(h.t)
	h.settled()
	return res.Cancelled
}

func (h *flowHarness) wantFlowCancelled(id model.ExecutionID) {
	h.t.Helper()
	s := h.describe(id)
	if s.PublicState != model.PublicCancelled || s.CancellationReason != "stop" || s.CancelledBy != model.CancelledByFlow {
		h.t.Fatalf("%v: %s %q by %q, want cancelled \"stop\" by the flow", id, s.PublicState, s.CancellationReason, s.CancelledBy)
	}
}

// sortedIDs returns ids in id order (the order FlowCancel reports).
func sortedIDs(ids ...model.ExecutionID) []model.ExecutionID {
	out := append([]model.ExecutionID(nil), ids...)
	slices.SortFunc(out, func(a, b model.ExecutionID) int {
		ua, ub := a.UUID(), b.UUID()
		return bytes.Compare(ua[:], ub[:])
	})
	return out
}

// flowCancel: FlowCancel marks the flow cancelled in one step and, by
// policy, cancels its members that have not ended (CancelAll, telling a
// running one's holder) or not started (CancelPending), reporting them in
// id order; the members it cancels resolve nothing, so a held downstream
// is cancelled, not skipped. A cancelled flow takes nothing more, and a
// second cancel is refused; CancelFlowOnly leaves the members running and
// resolving.
func flowCancel(h *flowHarness) {
	_, err := h.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: h.flowIn(h.p0), Policy: model.CancelAll, Now: at(0)})
	wantErr(h.t, err, model.ErrFlowNotFound)
	_, err = h.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: h.flowIn(h.p0), Now: at(0)})
	if e := modelErr(h.t, err, model.ErrValidation); e.Field != "Policy" {
		h.t.Fatalf("policy missing: %+v", e)
	}

	var notices *noticeLog
	if _, ok := h.s.(model.LeaseNotifier); ok {
		notices = h.watchLeases(wA)
	}
	f := h.newFlow(at(0), nil)
	done, running, waiting, held := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	h.stage(f, running, held, at(0))
	h.seal(f, at(time.Second), 3, 0)
	h.succeed(done, nil, at(2*time.Second))
	rc := h.claim(running, wA, at(3*time.Second))
	got := h.cancelFlow(f, model.CancelAll, at(4*time.Second))
	if want := sortedIDs(running, waiting, held); !slices.Equal(got, want) {
		h.t.Fatalf("CancelAll cancelled %v, want %v", got, want)
	}
	for _, id := range got {
		h.wantFlowCancelled(id)
	}
	if s := h.describe(done); s.PublicState != model.PublicCompleted {
		h.t.Fatalf("an ended member was touched: %s", s.PublicState)
	}
	h.wantGroup(f, held, groupCount{Size: 1, State: model.GroupWaiting})
	snap := h.flow(f)
	if snap.State != model.FlowCancelled || snap.CancelPolicy != model.CancelAll || snap.CancelReason != "stop" ||
		!snap.CancelledAt.Equal(at(4*time.Second)) || !snap.LastMutationAt.Equal(at(4*time.Second)) {
		h.t.Fatalf("cancelled flow: %+v", snap)
	}
	if notices != nil {
		want := model.LeaseNotice{Kind: model.LeaseNoticeCancelled, ID: running, LeaseEpoch: rc.Lease.Epoch}
		if n := notices.next(h.t); n != want {
			h.t.Fatalf("the running member's holder was told %+v, want %+v", n, want)
		}
	}
	// A cancelled flow takes nothing more.
	h.refused(f, func() {
		_, err := h.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Now: at(5 * time.Second)})
		if e := modelErr(h.t, err, model.ErrFlowTerminal); e.Detail != "cancelled" {
			h.t.Fatalf("second cancel: %+v", e)
		}
		_, err = h.fs.FlowSeal(h.ctx, &model.FlowSealParams{Flow: f, Now: at(5 * time.Second)})
		wantErr(h.t, err, model.ErrFlowTerminal)
		p := h.createParams(at(5 * time.Second))
		p.ID, p.Flow = h.newID(h.cfg.FlowPartition(f)), f
		_, err = h.s.ExecutionCreate(h.ctx, p)
		wantErr(h.t, err, model.ErrFlowTerminal)
	})
	// A member of a cancelled flow replays as a plain execution.
	h.replay(held, at(6*time.Second))
	h.wantReleased(held, model.AttemptPendingReplay)

	// CancelPending: the running member finishes; when it ends, its
	// downstream (cancelled) is not touched.
	g := h.newFlow(at(0), nil)
	up, down, idle := h.member(g, at(0)), h.member(g, at(0)), h.member(g, at(0))
	h.stage(g, up, down, at(0))
	h.seal(g, at(time.Second), 2, 0)
	uc := h.claim(up, wA, at(2*time.Second))
	if got := h.cancelFlow(g, model.CancelPending, at(3*time.Second)); !slices.Equal(got, sortedIDs(down, idle)) {
		h.t.Fatalf("CancelPending cancelled %v, want %v", got, sortedIDs(down, idle))
	}
	h.wantState(up, stActive)
	h.completeWith(up, uc.Fence(), nil, at(4*time.Second))
	h.wantFlowCancelled(down)
	if notices != nil {
		h.wantNoNotice(notices, wA)
	}

	// CancelFlowOnly: nothing is cancelled and resolution goes on.
	k, a, b := h.sealedPair(false)
	if got := h.cancelFlow(k, model.CancelFlowOnly, at(2*time.Second)); len(got) != 0 {
		h.t.Fatalf("CancelFlowOnly cancelled %v", got)
	}
	h.succeed(a, nil, at(3*time.Second))
	h.wantReleased(b, model.AttemptPendingFirst)
	h.settled()
}

// flowState: a sealed flow is completed once every member completed,
// failed once all ended and one did not complete, and open until then;
// Counts counts every member by public state; a completed or failed flow
// cannot be cancelled.
func flowState(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	a, b := h.member(f, at(0)), h.member(f, at(0))
	h.stage(f, a, b, at(0))
	if s := h.flow(f); s.State != model.FlowOpen || s.Counts[model.PublicWaitingChildren] != 2 {
		h.t.Fatalf("open flow: %+v", s)
	}
	h.seal(f, at(time.Second), 1, 0)
	h.succeed(a, nil, at(2*time.Second))
	if s := h.flow(f); s.State != model.FlowOpen || s.Counts[model.PublicCompleted] != 1 || s.Counts[model.PublicWaiting] != 1 {
		h.t.Fatalf("half-done flow: %+v", s)
	}
	h.succeed(b, nil, at(3*time.Second))
	if s := h.flow(f); s.State != model.FlowCompleted || s.Counts[model.PublicCompleted] != 2 || len(s.Counts) != 1 {
		h.t.Fatalf("completed flow: %+v", s)
	}
	h.refused(f, func() {
		_, err := h.fs.FlowCancel(h.ctx, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Now: at(4 * time.Second)})
		if e := modelErr(h.t, err, model.ErrFlowTerminal); e.Detail != "completed" {
			h.t.Fatalf("cancel of a completed flow: %+v", e)
		}
	})

	g, x, _ := h.sealedPair(false)
	h.failHard(x, at(2*time.Second))
	if s := h.flow(g); s.State != model.FlowFailed || s.Counts[model.PublicFailed] != 1 || s.Counts[model.PublicSkipped] != 1 {
		h.t.Fatalf("failed flow: %+v", s)
	}
	// Replaying a member makes the flow open again.
	h.replay(x, at(3*time.Second))
	if s := h.flow(g); s.State != model.FlowOpen {
		h.t.Fatalf("flow after a replay: %+v", s)
	}
}

// sealedPair builds and seals up → down (with PassResult when pass),
// which releases up.
func (h *flowHarness) sealedPair(pass bool) (f model.FlowID, up, down model.ExecutionID) {
	h.t.Helper()
	f = h.newFlow(at(0), nil)
	up, down = h.member(f, at(0)), h.member(f, at(0))
	if pass {
		h.stagePass(f, up, down, at(0))
	} else {
		h.stage(f, up, down, at(0))
	}
	h.seal(f, at(time.Second), 1, 0)
	return f, up, down
}

// diamond builds and seals fetch → {build, test} → publish, build
// passing its result to publish.
func (h *flowHarness) diamond() (f model.FlowID, fetch, build, test, publish model.ExecutionID) {
	h.t.Helper()
	f = h.newFlow(at(0), nil)
	fetch, build, test, publish = h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	h.stage(f, fetch, build, at(0))
	h.stage(f, fetch, test, at(0))
	h.stagePass(f, build, publish, at(0))
	h.stage(f, test, publish, at(0))
	h.seal(f, at(time.Second), 1, 0)
	return f, fetch, build, test, publish
}

// flowDiamond (engine.md §6 scenarios 20–21): fetch → {build, test} →
// publish. The happy run releases each step once its upstreams succeed;
// a failed branch skips publish (AllOf), and a result passed to a member
// that already ended (cancelled by an operator) is not written into it.
func flowDiamond(h *flowHarness) {
	f, fetch, build, test, publish := h.diamond()
	h.succeed(fetch, nil, at(2*time.Second))
	h.wantReleased(build, model.AttemptPendingFirst)
	h.wantReleased(test, model.AttemptPendingFirst)
	h.wantHeld(publish, model.AttemptPendingFirst)
	h.succeed(build, []byte("artifact"), at(3*time.Second))
	h.wantHeld(publish, model.AttemptPendingFirst)
	h.succeed(test, nil, at(4*time.Second))
	h.wantReleased(publish, model.AttemptPendingFirst)
	h.wantPayload(publish, "artifact")
	h.succeed(publish, nil, at(5*time.Second))
	if s := h.flow(f); s.State != model.FlowCompleted {
		h.t.Fatalf("happy diamond: %+v", s)
	}

	// A failed branch skips publish.
	g, fetch, build, test, publish := h.diamond()
	h.succeed(fetch, nil, at(2*time.Second))
	h.failHard(test, at(3*time.Second))
	h.wantSkipped(publish)
	// build's result is not passed into the skipped publish.
	h.succeed(build, []byte("late"), at(5*time.Second))
	h.wantPayload(publish, "payload")
	if s := h.flow(g); s.State != model.FlowFailed {
		h.t.Fatalf("failed diamond: %+v", s)
	}

	// Nor into a member an operator cancelled while it waited.
	_, up, down := h.sealedPair(true)
	h.cancelOp(down, at(2*time.Second))
	h.succeed(up, []byte("late"), at(3*time.Second))
	h.wantPayload(down, "payload")
	h.settled()
}

// listed reports whether FlowList names f among the live flows and among
// the finished ones.
func (h *flowHarness) listed(f model.FlowID) (live, finished bool) {
	h.t.Helper()
	for _, fin := range []bool{false, true} {
		var after model.FlowID
		for {
			page := call(h.fs.FlowList(h.ctx, &model.FlowListParams{Partition: h.cfg.FlowPartition(f), After: after, Limit: 100, Finished: fin})).must(h.t)
			if slices.Contains(page.IDs, f) {
				if fin {
					finished = true
				} else {
					live = true
				}
			}
			if page.Next.IsZero() {
				break
			}
			after = page.Next
		}
	}
	return live, finished
}

func (h *flowHarness) wantListed(f model.FlowID, finished bool, when string) {
	h.t.Helper()
	live, fin := h.listed(f)
	if live == finished || fin != finished {
		h.t.Fatalf("%s: listed live %v, finished %v; want finished %v", when, live, fin, finished)
	}
}

// flowFinished (the projector's "a flow leaves the index"): a flow is
// listed live until every member has ended and it is sealed or
// cancelled, then finished; a replay makes it live again. An open flow
// whose members have all ended is still live (it can take more), and a
// cancelled one is finished only once its running members end.
func flowFinished(h *flowHarness) {
	f, up, down := h.sealedPair(false)
	h.wantListed(f, false, "sealed pair")
	h.succeed(up, nil, at(2*time.Second))
	h.wantListed(f, false, "half done")
	h.succeed(down, nil, at(3*time.Second))
	h.wantListed(f, true, "both done")
	h.replay(down, at(4*time.Second))
	h.wantListed(f, false, "a member replayed")
	h.succeed(down, nil, at(5*time.Second))
	h.wantListed(f, true, "the replayed member done")

	// skips count as ends: a failed upstream finishes the flow
	g, x, _ := h.sealedPair(false)
	h.failHard(x, at(2*time.Second))
	h.wantListed(g, true, "failed and skipped")

	// open: members that joined running and ended leave it live
	k := h.newFlow(at(0), nil)
	y, yc := h.activeMember(k, at(0))
	h.completeWith(y, yc.Fence(), nil, at(time.Second))
	h.wantListed(k, false, "open flow, its only member done")
	h.seal(k, at(2*time.Second), 0, 0)
	h.wantListed(k, true, "sealed after its members ended")

	// cancelled with a running member: finished when it ends
	c, a, b := h.sealedPair(false)
	ac := h.claim(a, wA, at(2*time.Second))
	h.cancelFlow(c, model.CancelPending, at(3*time.Second))
	h.wantFlowCancelled(b)
	h.wantListed(c, false, "cancelled, a member still running")
	h.completeWith(a, ac.Fence(), nil, at(4*time.Second))
	h.wantListed(c, true, "cancelled, all ended")

	// cancel all: finished at once; an empty cancelled flow too
	d, _, _ := h.sealedPair(false)
	h.cancelFlow(d, model.CancelAll, at(2*time.Second))
	h.wantListed(d, true, "cancel all")
	empty := h.newFlow(at(0), nil)
	h.wantListed(empty, false, "new flow")
	h.cancelFlow(empty, model.CancelFlowOnly, at(time.Second))
	h.wantListed(empty, true, "empty flow cancelled")

	// awaiting children keeps it live until they and the parent end
	w, parent := h.soloFlow()
	pc := h.claim(parent, wA, at(2*time.Second))
	p := h.awaitChildren(parent, pc.Fence(), 1, time.Time{}, at(3*time.Second))
	h.awaitOK(p, w, 1)
	h.succeed(p.Children[0].Create.ID, nil, at(4*time.Second))
	h.wantListed(w, false, "parent released")
	h.succeed(parent, nil, at(5*time.Second))
	h.wantListed(w, true, "parent done")
}

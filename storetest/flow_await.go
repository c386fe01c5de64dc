package storetest

import (
	"strconv"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Waiting on children from a running member (ExecutionAwaitChildren,
// model/flow_await.go): the step creates the children in the parent's
// flow, parks the parent with its attempt paused, and the parent's group
// opens a new generation that decides once every child has ended.

// awaitChildren builds the params of an await of n fresh children of
// parent (the first delayed until delayFirst when it is not zero).
func (h *flowHarness) awaitChildren(parent model.ExecutionID, f model.Fence, n int, delayFirst, now time.Time) *model.ExecutionAwaitChildrenParams {
	p := &model.ExecutionAwaitChildrenParams{ID: parent, Fence: f, Now: now}
	for i := range n {
		c := h.createParams(time.Time{})
		c.ID, c.Now = h.newID(parent.Partition()), time.Time{}
		c.Payload = []byte("child " + strconv.Itoa(i))
		if i == 0 && !delayFirst.IsZero() {
			c.DelayUntil = delayFirst
		}
		p.Children = append(p.Children, model.AwaitChild{Create: *c, Edge: model.EdgeID(h.uuid())})
	}
	return p
}

// awaitOK runs p and checks its result.
func (h *flowHarness) awaitOK(p *model.ExecutionAwaitChildrenParams, f model.FlowID, gen int) {
	h.t.Helper()
	res := call(h.fs.ExecutionAwaitChildren(h.ctx, p)).must(h.t)
	wantEqual(h.t, "ExecutionAwaitChildren", model.ExecutionAwaitChildrenResult{Flow: f, Generation: gen}, *res)
	h.settled()
}

// soloFlow builds and seals a flow of one member, released.
func (h *flowHarness) soloFlow() (model.FlowID, model.ExecutionID) {
	h.t.Helper()
	f := h.newFlow(at(0), nil)
	x := h.member(f, at(0))
	h.seal(f, at(time.Second), 1, 0)
	return f, x
}

// flowAwaitChildren: a running member awaits children; it is held with
// its attempt paused and its lease released, the children run (one
// delayed to its RunAt), each child's end satisfies its edge whatever
// the outcome, and the last one releases the parent, whose claim resumes
// the same attempt. A retry of the call replays it. A second await opens
// generation 2; the first generation's edges stay and no longer count.
// A replay of the parent returns its group to the edges staged while the
// flow was built.
func flowAwaitChildren(h *flowHarness) {
	f, up, parent := h.sealedPair(false)
	h.succeed(up, nil, at(2*time.Second))
	pc := h.claim(parent, wA, at(3*time.Second))
	p := h.awaitChildren(parent, pc.Fence(), 2, at(time.Hour), at(4*time.Second))
	h.awaitOK(p, f, 1)
	c1, c2 := p.Children[0].Create.ID, p.Children[1].Create.ID
	h.wantHeld(parent, model.AttemptInterrupted)
	if s := h.describe(parent); s.CurrentLease != nil || s.CurrentAttempt == nil || s.CurrentAttempt.Index != pc.AttemptIndex {
		h.t.Fatalf("parent awaiting children: lease %+v attempt %+v, want no lease and attempt %d", s.CurrentLease, s.CurrentAttempt, pc.AttemptIndex)
	}
	if atts := h.attempts(parent); atts[len(atts)-1].Status != model.AttemptSuspended {
		h.t.Fatalf("parent's attempt while it awaits: %+v", atts[len(atts)-1])
	}
	if s := h.describe(c1); s.PublicState != model.PublicDelayed || !s.DelayUntil.Equal(at(time.Hour)) || s.Flow != f {
		h.t.Fatalf("delayed child: %s until %v in %v", s.PublicState, s.DelayUntil, s.Flow)
	}
	h.wantReleased(c2, model.AttemptPendingFirst)
	if got := h.payload(c2); string(got) != "child 1" {
		h.t.Fatalf("child payload %q", got)
	}
	if snap := h.flow(f); snap.MemberCount != 4 || snap.EdgeCount != 3 || snap.GraphRevision != 7 {
		h.t.Fatalf("flow after the await: members %d edges %d revision %d, want 4, 3, 7", snap.MemberCount, snap.EdgeCount, snap.GraphRevision)
	}
	h.wantGroup(f, parent, groupCount{Size: 2, State: model.GroupWaiting})
	if g := h.group(f, parent); g.Generation != 1 || g.Edges != 3 {
		h.t.Fatalf("parent's group: generation %d edges %d, want 1 and 3", g.Generation, g.Edges)
	}
	in := h.edges(parent, false).Edges
	gens := map[model.ExecutionID]int{}
	for _, e := range in {
		gens[e.Upstream] = e.Generation
	}
	if gens[up] != 0 || gens[c1] != 1 || gens[c2] != 1 || len(in) != 3 {
		h.t.Fatalf("parent's incoming edges by generation: %v", gens)
	}

	// A retry of the call replays it and changes nothing.
	h.refused(f, func() {
		res := call(h.fs.ExecutionAwaitChildren(h.ctx, p)).must(h.t)
		wantEqual(h.t, "replayed await", model.ExecutionAwaitChildrenResult{Flow: f, Generation: 1, Replayed: true}, *res)
	})

	// A failed child satisfies its edge too; the parent waits for the
	// delayed one.
	h.failHard(c2, at(5*time.Second))
	h.wantHeld(parent, model.AttemptInterrupted)
	h.wantGroup(f, parent, groupCount{Size: 2, Succeeded: 1, State: model.GroupWaiting})
	h.promote(c1, laneA, at(time.Hour))
	h.succeed(c1, []byte("one"), at(time.Hour))
	h.wantReleased(parent, model.AttemptInterrupted)
	h.wantGroup(f, parent, groupCount{Size: 2, Succeeded: 2, State: model.GroupSatisfied})
	rc := h.claim(parent, wA, at(time.Hour+time.Second))
	if !rc.Resumed || rc.AttemptIndex != pc.AttemptIndex || rc.Lease.Epoch <= pc.Lease.Epoch {
		h.t.Fatalf("parent's claim after its children: %+v, want the same attempt %d resumed under a new lease", rc, pc.AttemptIndex)
	}

	// A second await: generation 2.
	q := h.awaitChildren(parent, rc.Fence(), 1, time.Time{}, at(time.Hour+2*time.Second))
	h.awaitOK(q, f, 2)
	h.wantGroup(f, parent, groupCount{Size: 1, State: model.GroupWaiting})
	c3 := q.Children[0].Create.ID
	h.succeed(c3, nil, at(time.Hour+3*time.Second))
	h.wantReleased(parent, model.AttemptInterrupted)
	h.succeed(parent, []byte("done"), at(time.Hour+4*time.Second))
	if s := h.flow(f); s.State != model.FlowFailed || s.Counts[model.PublicCompleted] != 4 || s.Counts[model.PublicFailed] != 1 {
		h.t.Fatalf("flow after the parent completed (one child failed): %+v", s)
	}

	// A replay of the parent: its group returns to generation 0 (up
	// succeeded, so it is released at once); a later await is generation
	// 3.
	h.replay(parent, at(2*time.Hour))
	h.wantReleased(parent, model.AttemptPendingReplay)
	h.wantGroup(f, parent, groupCount{Size: 1, Succeeded: 1, State: model.GroupSatisfied})
	if g := h.group(f, parent); g.Generation != 0 {
		h.t.Fatalf("replayed parent's group generation %d, want 0", g.Generation)
	}
	rc = h.claim(parent, wA, at(2*time.Hour+time.Second))
	h.awaitOK(h.awaitChildren(parent, rc.Fence(), 1, time.Time{}, at(2*time.Hour+2*time.Second)), f, 3)
	h.settled()
}

// flowAwaitRoot: a member without upstreams awaits; cancelling the
// waiting parent leaves its children running, and their ends change
// nothing; a replay of a root parent runs it at once.
func flowAwaitRoot(h *flowHarness) {
	f, parent := h.soloFlow()
	pc := h.claim(parent, wA, at(2*time.Second))
	p := h.awaitChildren(parent, pc.Fence(), 2, time.Time{}, at(3*time.Second))
	h.awaitOK(p, f, 1)
	h.cancelOp(parent, at(4*time.Second))
	c1 := p.Children[0].Create.ID
	h.wantReleased(c1, model.AttemptPendingFirst)
	h.succeed(c1, nil, at(5*time.Second))
	h.wantGroup(f, parent, groupCount{Size: 2, Succeeded: 1, State: model.GroupWaiting})
	if s := h.describe(parent); s.PublicState != model.PublicCancelled {
		h.t.Fatalf("cancelled parent: %s", s.PublicState)
	}
	h.replay(parent, at(6*time.Second))
	h.wantReleased(parent, model.AttemptPendingReplay)
	h.wantGroup(f, parent, groupCount{State: model.GroupSatisfied})
	// the old child ending now resolves its edge and decides nothing
	h.succeed(p.Children[1].Create.ID, nil, at(7*time.Second))
	h.wantReleased(parent, model.AttemptPendingReplay)
	h.settled()
}

// flowAwaitRefused: the refusals of ExecutionAwaitChildren, each
// changing nothing: a stale fence, a parent in no flow, a cancelled
// flow, an unsealed flow, an existing child id or edge id; and the
// validation of the children.
func flowAwaitRefused(h *flowHarness) {
	f, parent := h.soloFlow()
	pc := h.claim(parent, wA, at(2*time.Second))
	now := at(3 * time.Second)
	other := h.create(now, inPartition(h.harness, parent.Partition()))
	h.refused(f, func() {
		stale := pc.Fence()
		stale.LeaseEpoch++
		_, err := h.fs.ExecutionAwaitChildren(h.ctx, h.awaitChildren(parent, stale, 1, time.Time{}, now))
		wantErr(h.t, err, model.ErrStaleLease)

		// the parent as its own child, and a child id that exists
		p := h.awaitChildren(parent, pc.Fence(), 2, time.Time{}, now)
		p.Children[1].Create.ID = parent
		_, err = h.fs.ExecutionAwaitChildren(h.ctx, p)
		if e := modelErr(h.t, err, model.ErrSelfEdge); e.Field != "Children[1].Create.ID" {
			h.t.Fatalf("the parent as its own child: %+v", e)
		}
		p = h.awaitChildren(parent, pc.Fence(), 2, time.Time{}, now)
		p.Children[1].Create.ID = other
		_, err = h.fs.ExecutionAwaitChildren(h.ctx, p)
		if e := modelErr(h.t, err, model.ErrValidation); e.Field != "Children[1].Create.ID" || e.Detail != "exists" {
			h.t.Fatalf("an existing child id: %+v", e)
		}
	})

	// an edge id the flow already has
	g, up, _ := h.sealedPair(false)
	uc := h.claim(up, wA, at(2*time.Second))
	edge := h.edges(up, true).Edges[0].ID
	h.refused(g, func() {
		p := h.awaitChildren(up, uc.Fence(), 2, time.Time{}, now)
		p.Children[1].Edge = edge
		_, err := h.fs.ExecutionAwaitChildren(h.ctx, p)
		if e := modelErr(h.t, err, model.ErrDependencyExists); e.Field != "Children[1].Edge" {
			h.t.Fatalf("an existing edge id: %+v", e)
		}
	})

	// validation: nothing reaches the store
	for _, c := range []struct {
		field string
		edit  func(p *model.ExecutionAwaitChildrenParams)
	}{
		{"Children", func(p *model.ExecutionAwaitChildrenParams) { p.Children = nil }},
		{"Children[0].Create.Lane", func(p *model.ExecutionAwaitChildrenParams) { p.Children[0].Create.Lane = "" }},
		{"Children[0].Create.Flow", func(p *model.ExecutionAwaitChildrenParams) { p.Children[0].Create.Flow = f }},
		{"Children[0].Create.IdempotencyKey", func(p *model.ExecutionAwaitChildrenParams) { p.Children[0].Create.IdempotencyKey = "k" }},
		{"Children[1].Create.ID", func(p *model.ExecutionAwaitChildrenParams) { p.Children[1].Create.ID = p.Children[0].Create.ID }},
		{"Children[1].Edge", func(p *model.ExecutionAwaitChildrenParams) { p.Children[1].Edge = p.Children[0].Edge }},
		{"Children[0].Edge", func(p *model.ExecutionAwaitChildrenParams) { p.Children[0].Edge = model.EdgeID{} }},
	} {
		h.refused(f, func() {
			p := h.awaitChildren(parent, pc.Fence(), 2, time.Time{}, now)
			c.edit(p)
			_, err := h.fs.ExecutionAwaitChildren(h.ctx, p)
			if e := modelErr(h.t, err, model.ErrValidation); e.Field != c.field {
				h.t.Fatalf("%s: %+v", c.field, e)
			}
		})
	}
	if n := h.cfg.WithDefaults().FlowPartitions; n > 1 {
		h.refused(f, func() {
			p := h.awaitChildren(parent, pc.Fence(), 1, time.Time{}, now)
			p.Children[0].Create.ID = h.newID((parent.Partition() + 1) % n)
			_, err := h.fs.ExecutionAwaitChildren(h.ctx, p)
			if e := modelErr(h.t, err, model.ErrValidation); e.Field != "Children[0].Create.ID" || e.Detail != "not_in_parent_partition" {
				h.t.Fatalf("a child outside the parent's partition: %+v", e)
			}
		})
	}

	// a parent in no flow
	x, xc := h.active(now, inPartition(h.harness, h.p0))
	h.harness.unchanged(x, func() {
		_, err := h.fs.ExecutionAwaitChildren(h.ctx, h.awaitChildren(x, xc.Fence(), 1, time.Time{}, now))
		if e := modelErr(h.t, err, model.ErrNotInFlow); e.Field != "ID" {
			h.t.Fatalf("a parent in no flow: %+v", e)
		}
	})

	// an unsealed flow (the parent joined it running)
	k := h.newFlow(at(0), nil)
	y, yc := h.activeMember(k, now)
	h.refused(k, func() {
		_, err := h.fs.ExecutionAwaitChildren(h.ctx, h.awaitChildren(y, yc.Fence(), 1, time.Time{}, now))
		wantErr(h.t, err, model.ErrFlowNotSealed)
	})

	// a cancelled flow
	h.cancelFlow(f, model.CancelFlowOnly, at(4*time.Second))
	h.refused(f, func() {
		_, err := h.fs.ExecutionAwaitChildren(h.ctx, h.awaitChildren(parent, pc.Fence(), 1, time.Time{}, at(5*time.Second)))
		if e := modelErr(h.t, err, model.ErrFlowTerminal); e.Detail != "cancelled" {
			h.t.Fatalf("a cancelled flow: %+v", e)
		}
	})
	h.settled()
}

// flowAwaitNotSiblings (a regression the property test raised): when a
// replayed parent's own group (AnyOf, CancelRemaining) decides again,
// it cancels its upstreams that still run, but not a child of an earlier
// await: that child is no sibling.
func flowAwaitNotSiblings(h *flowHarness) {
	f := h.newFlow(at(0), nil)
	u1, u2, parent := h.member(f, at(0)), h.member(f, at(0)), h.member(f, at(0))
	h.setGroup(f, parent, model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsCancelRemaining}, at(0))
	h.stage(f, u1, parent, at(0))
	h.stage(f, u2, parent, at(0))
	h.seal(f, at(time.Second), 2, 0)
	h.succeed(u1, nil, at(2*time.Second))
	h.wantSiblingCancelled(u2, model.ReasonSiblingSatisfied)
	pc := h.claim(parent, wA, at(3*time.Second))
	p := h.awaitChildren(parent, pc.Fence(), 1, time.Time{}, at(4*time.Second))
	h.awaitOK(p, f, 1)
	child := p.Children[0].Create.ID
	h.claim(child, wA, at(5*time.Second))
	h.cancelOp(parent, at(6*time.Second))
	h.replay(parent, at(7*time.Second))
	h.wantReleased(parent, model.AttemptPendingReplay)
	h.wantGroup(f, parent, groupCount{Size: 2, Succeeded: 1, State: model.GroupSatisfied})
	h.wantState(child, stActive)
	h.settled()
}

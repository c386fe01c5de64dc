package proptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Flows (model.FlowStore, issue 10 first slice): the actions that create
// flows, add members, stage edges and set group policies, the flow part of
// an observation, and its invariants (lua-semantics §6.10 and the graph's:
// acyclic, edges only between members, the graph revision counts members
// plus edges and grows by one per change).

// refFlow is the machine's view of a flow, from store A's answers.
type refFlow struct {
	id    model.FlowID
	edges []model.EdgeID
}

// FlowObservation is everything read about one flow.
type FlowObservation struct {
	Snapshot *model.FlowSnapshot
	// Members are the listed executions whose snapshot names the flow, in
	// id order.
	Members []model.ExecutionID
	// Out and In are the members' outgoing and incoming edges.
	Out, In map[model.ExecutionID][]model.EdgeSnapshot
	// Groups are the members' edge groups.
	Groups map[model.ExecutionID]*model.EdgeGroupSnapshot
	// Finished: FlowList lists the flow among the finished ones.
	Finished bool
}

// observeFlows lists every partition's flows, live and finished (page by
// page), and reads each; a store without model.FlowStore has none to
// observe.
func observeFlows(ctx context.Context, s model.Store, o *Observation, page int) error {
	fs, ok := s.(model.FlowStore)
	if !ok {
		return nil
	}
	o.Flows = map[model.FlowID]*FlowObservation{}
	for i := range 2 * o.Partitions.FlowPartitions {
		part, finished := i/2, i%2 == 1
		var after model.FlowID
		for pages := 0; ; pages++ {
			r, err := fs.FlowList(ctx, &model.FlowListParams{Partition: part, After: after, Limit: page, Finished: finished})
			if err != nil {
				return fmt.Errorf("FlowList(p%d after %v): %w", part, after, err)
			}
			for _, id := range r.IDs {
				if o.Partitions.FlowPartition(id) != part {
					return fmt.Errorf("FlowList(p%d) lists %v of partition %d", part, id, o.Partitions.FlowPartition(id))
				}
				if o.Flows[id] != nil {
					return fmt.Errorf("FlowList(p%d) lists %v both live and finished", part, id)
				}
				snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: id})
				if err != nil {
					return fmt.Errorf("FlowDescribe(%v): %w", id, err)
				}
				o.Flows[id] = &FlowObservation{Snapshot: snap, Finished: finished,
					Out: map[model.ExecutionID][]model.EdgeSnapshot{}, In: map[model.ExecutionID][]model.EdgeSnapshot{},
					Groups: map[model.ExecutionID]*model.EdgeGroupSnapshot{}}
			}
			if r.Next.IsZero() {
				break
			}
			if (!after.IsZero() && model.CompareFlowIDs(r.Next, after) <= 0) || pages > 100_000 {
				return fmt.Errorf("FlowList(p%d): cursor %v does not advance past %v", part, r.Next, after)
			}
			after = r.Next
		}
	}
	ids := make([]model.ExecutionID, 0, len(o.Execs))
	for id := range o.Execs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.ExecutionID.Compare)
	for _, id := range ids {
		x := o.Execs[id]
		out, err := fs.EdgeListOutgoing(ctx, &model.EdgeListParams{Execution: id})
		if err != nil {
			return fmt.Errorf("EdgeListOutgoing(%v): %w", id, err)
		}
		in, err := fs.EdgeListIncoming(ctx, &model.EdgeListParams{Execution: id})
		if err != nil {
			return fmt.Errorf("EdgeListIncoming(%v): %w", id, err)
		}
		f := x.Snapshot.Flow
		if out.Flow != f || in.Flow != f {
			return fmt.Errorf("%v: describe names flow %v, the edge lists %v and %v", id, f, out.Flow, in.Flow)
		}
		if f.IsZero() {
			if len(out.Edges)+len(in.Edges) > 0 {
				return fmt.Errorf("%v: in no flow, yet has edges", id)
			}
			continue
		}
		fo := o.Flows[f]
		if fo == nil {
			return fmt.Errorf("%v: names flow %v, which is not listed", id, f)
		}
		fo.Members = append(fo.Members, id)
		fo.Out[id], fo.In[id] = out.Edges, in.Edges
		g, err := fs.EdgeGroupDescribe(ctx, &model.EdgeGroupDescribeParams{Flow: f, Downstream: id})
		if err != nil {
			return fmt.Errorf("EdgeGroupDescribe(%v, %v): %w", f, id, err)
		}
		fo.Groups[id] = g
	}
	// FlowMemberList pages exactly the executions that name the flow, in
	// id order
	for _, f := range slices.SortedFunc(maps.Keys(o.Flows), model.CompareFlowIDs) {
		var listed []model.ExecutionID
		var after model.ExecutionID
		for pages := 0; ; pages++ {
			r, err := fs.FlowMemberList(ctx, &model.FlowMemberListParams{Flow: f, After: after, Limit: page})
			if err != nil {
				return fmt.Errorf("FlowMemberList(%v after %v): %w", f, after, err)
			}
			listed = append(listed, r.IDs...)
			if r.Next.IsZero() {
				break
			}
			if (!after.IsZero() && r.Next.Compare(after) <= 0) || pages > 100_000 {
				return fmt.Errorf("FlowMemberList(%v): cursor %v does not advance past %v", f, r.Next, after)
			}
			after = r.Next
		}
		if !slices.Equal(listed, o.Flows[f].Members) {
			return fmt.Errorf("FlowMemberList(%v) lists %v; the executions naming the flow are %v", f, listed, o.Flows[f].Members)
		}
	}
	return nil
}

// flowViolations checks every observed flow: §6.10 (a member's flow field
// and the flow's member count agree, one flow per execution, members on
// the flow's partition), the edges (between members of the flow, each
// listed at both ends, the counts), the graph acyclic, the revision equal
// to members + edges, and the groups.
func (o *Observation) flowViolations() []string {
	var out []string
	ids := make([]model.FlowID, 0, len(o.Flows))
	for id := range o.Flows {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.CompareFlowIDs)
	for _, id := range ids {
		fo := o.Flows[id]
		bad := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("flow %v: ", id)+fmt.Sprintf(format, args...))
		}
		s := fo.Snapshot
		if s.ID != id || s.Partition != o.Partitions.FlowPartition(id) || s.State == 0 {
			bad("snapshot %+v", s)
		}
		if s.MemberCount != len(fo.Members) {
			bad("§6.10: member_count %d, but %d executions name the flow", s.MemberCount, len(fo.Members))
		}
		// the projection: counts of every member by public state, and the
		// state derived from them
		counts := map[model.PublicState]int{}
		for _, m := range fo.Members {
			if x := o.Execs[m]; x != nil {
				counts[x.Snapshot.PublicState]++
			}
		}
		if !maps.Equal(counts, s.Counts) && !cmpEqual(counts, s.Counts) {
			bad("counts %v, members' states %v", s.Counts, counts)
		}
		stored := model.FlowOpen
		if s.CancelPolicy != 0 {
			stored = model.FlowCancelled
		}
		if want := model.DeriveFlowState(stored, s.Sealed, counts); s.State != want {
			bad("state %v, derived %v", s.State, want)
		}
		ended := 0
		for st, n := range counts {
			if st.IsTerminal() {
				ended += n
			}
		}
		if want := ended == len(fo.Members) && (s.Sealed || stored == model.FlowCancelled); fo.Finished != want {
			bad("listed finished %v, want %v (%d of %d members ended, sealed %v, %v)", fo.Finished, want, ended, len(fo.Members), s.Sealed, stored)
		}
		members := map[model.ExecutionID]bool{}
		for _, m := range fo.Members {
			members[m] = true
			if m.Partition() != s.Partition {
				bad("member %v is not on the flow's partition %d", m, s.Partition)
			}
		}
		edges := map[model.EdgeID]model.EdgeSnapshot{}
		succ := map[model.ExecutionID][]model.ExecutionID{}
		for _, m := range fo.Members {
			for _, e := range fo.Out[m] {
				if e.Upstream != m || e.Flow != id || !members[e.Downstream] || e.Upstream == e.Downstream {
					bad("edge %v listed out of %v is not between two members: %+v", e.ID, m, e)
				}
				if _, dup := edges[e.ID]; dup {
					bad("edge %v listed twice", e.ID)
				}
				if e.GraphRevision == 0 || e.GraphRevision > s.GraphRevision || e.State == 0 {
					bad("edge %v: %+v (flow revision %d)", e.ID, e, s.GraphRevision)
				}
				// a child joins a sealed flow, which takes no more edges:
				// its edge into its parent is its only one out
				if e.Generation > 0 && len(fo.Out[m]) != 1 {
					bad("edge %v of an await (generation %d), yet its upstream %v has %d edges out", e.ID, e.Generation, m, len(fo.Out[m]))
				}
				edges[e.ID] = e
				succ[m] = append(succ[m], e.Downstream)
			}
		}
		in := 0
		for _, m := range fo.Members {
			for _, e := range fo.In[m] {
				in++
				if e.Downstream != m || !sameEdge(edges[e.ID], e) {
					bad("edge %v listed into %v differs from its outgoing listing: %+v", e.ID, m, e)
				}
			}
			if g := fo.Groups[m]; g == nil || g.Edges != len(fo.In[m]) || g.Policy.Validate("Policy") != nil ||
				(!g.Explicit && g.Policy != model.AllOf) {
				bad("group of %v: %+v with %d incoming edges", m, g, len(fo.In[m]))
				continue
			}
			for _, msg := range o.groupViolations(s, m, fo.Groups[m], fo.In[m]) {
				bad("group of %v: %s", m, msg)
			}
		}
		if in != len(edges) || s.EdgeCount != len(edges) {
			bad("edge_count %d, %d listed out, %d listed in", s.EdgeCount, len(edges), in)
		}
		if s.GraphRevision != uint64(s.MemberCount+s.EdgeCount) {
			bad("graph revision %d, members %d + edges %d", s.GraphRevision, s.MemberCount, s.EdgeCount)
		}
		if c := findCycle(fo.Members, succ); c != nil {
			bad("the graph has a cycle through %v", c)
		}
	}
	for id, x := range o.Execs {
		if f := x.Snapshot.Flow; !f.IsZero() && o.Flows != nil && o.Flows[f] == nil {
			out = append(out, fmt.Sprintf("%v: names flow %v, which is not listed", id, f))
		}
		if o.Flows != nil && x.Snapshot.State.EligibilityState == model.BlockedByDependencies && x.Snapshot.Flow.IsZero() {
			out = append(out, fmt.Sprintf("%v: held for dependencies but in no flow", id))
		}
	}
	return out
}

// groupViolations checks the group of member m of flow s (§6.11, the
// resolution contract and the generations of ExecutionAwaitChildren): its
// counters are the states of its current generation's edges (an older
// generation's edge never counts); its size is fixed at seal, then is the
// number of the current generation's edges; while it waits, an edge of
// the flow as built (generation 0) is satisfied exactly when its upstream
// ended successfully, an await's edge (generation > 0) exactly when its
// child ended whatever the outcome, and either is pending while its
// upstream has not ended; a sealed waiting group with a held downstream
// cannot be decided yet (resolution is never left for later; an await's
// generation decides as AllOf whatever the policy); a decided group's
// counters still decide it so; an await's generation is never impossible;
// an impossible group's downstream has ended (skipped), unless its flow
// was cancelled and it was replayed since; no decided group's downstream
// is held. A group back at generation 0 with no edge of it (a parent
// without upstreams, replayed after an await) is satisfied with size 0.
// In a cancelled flow the edges of members the cancel ended stay pending.
func (o *Observation) groupViolations(s *model.FlowSnapshot, m model.ExecutionID, g *model.EdgeGroupSnapshot, in []model.EdgeSnapshot) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	var cur []model.EdgeSnapshot // the current generation's edges
	succ, imp := 0, 0
	for _, e := range in {
		switch {
		case e.Generation < 0 || (e.Generation > 0 && !s.Sealed):
			bad("edge %v of generation %d in a flow sealed %v", e.ID, e.Generation, s.Sealed)
		case e.Generation > 0 && e.State == model.EdgeImpossible:
			bad("edge %v of an await (generation %d) is impossible", e.ID, e.Generation)
		case g.Generation > 0 && e.Generation > g.Generation:
			bad("edge %v of generation %d, later than its group's %d", e.ID, e.Generation, g.Generation)
		}
		if e.Generation != g.Generation {
			continue // an older generation's edge never counts
		}
		cur = append(cur, e)
		switch e.State {
		case model.EdgeSatisfied:
			succ++
		case model.EdgeImpossible:
			imp++
		}
	}
	if g.Succeeded != succ || g.Impossible != imp {
		bad("§6.11: counters %d/%d, the generation-%d edges satisfied %d impossible %d", g.Succeeded, g.Impossible, g.Generation, succ, imp)
	}
	if len(in) == 0 {
		if g.State != model.GroupWaiting || g.Size != 0 || g.Generation != 0 {
			bad("no edges, yet %+v", g)
		}
		return out
	}
	x := o.Execs[m]
	isHeld := x != nil && x.Snapshot.State.LifecyclePhase == model.PhaseRunnable &&
		x.Snapshot.State.EligibilityState == model.BlockedByDependencies
	if len(cur) == 0 {
		// only a replay returns a group to generation 0 with edges of
		// awaits alone: nothing to wait for
		if g.Generation != 0 || g.Size != 0 || g.State != model.GroupSatisfied || !s.Sealed || isHeld {
			bad("no edge of its generation %d, yet %+v (held %v)", g.Generation, g, isHeld)
		}
		return out
	}
	if want := 0; s.Sealed {
		want = len(cur)
		if g.Size != want {
			bad("size %d in a sealed flow, %d edges of generation %d", g.Size, want, g.Generation)
		}
	} else if g.Size != 0 || g.State != model.GroupWaiting {
		bad("decided or sized before the seal: %+v", g)
	}
	if x == nil {
		return out
	}
	d := x.Snapshot
	pol := g.Policy
	if g.Generation > 0 {
		pol = model.AllOf // an await waits for every child
	}
	// (counters only grow once a group decided, and a decision stays
	// what its counters say)
	if st := pol.Decide(g.Size, g.Succeeded, g.Impossible); g.State != model.GroupWaiting && st != g.State {
		bad("decided %v, but its generation-%d edges decide it %v under %+v: %+v", g.State, g.Generation, st, pol, g)
	}
	switch g.State {
	case model.GroupWaiting:
		if s.State == model.FlowCancelled {
			break // the members FlowCancel cancelled resolved nothing
		}
		for _, e := range cur {
			u := o.Execs[e.Upstream]
			if u == nil {
				continue
			}
			ended := u.Snapshot.State.LifecyclePhase == model.PhaseTerminal
			won := ended && (u.Snapshot.State.TerminalOutcome == model.OutcomeSuccess || e.Generation > 0)
			if (e.State == model.EdgeSatisfied) != won || (!ended && e.State != model.EdgePending) {
				bad("waiting, edge %v (generation %d) is %v with its upstream %v", e.ID, e.Generation, e.State, u.Snapshot.State)
			}
		}
		if s.Sealed && isHeld {
			if st := pol.Decide(g.Size, g.Succeeded, g.Impossible); st != model.GroupWaiting {
				bad("sealed and held, but its edges decide it %v: %+v", st, g)
			}
		}
	case model.GroupImpossible:
		if g.Generation > 0 {
			bad("an await's generation %d is impossible", g.Generation)
		}
		// (a member of a cancelled flow replays as a plain execution: its
		// group keeps the decision it had)
		if d.State.LifecyclePhase != model.PhaseTerminal && s.State != model.FlowCancelled {
			bad("impossible, yet its downstream is %v", d.State)
		}
	}
	if g.State != model.GroupWaiting && isHeld {
		bad("decided %v, yet its downstream is held", g.State)
	}
	return out
}

// sameEdge reports whether two listings of an edge agree (== first: the
// checks run after every step, and go-cmp is slow).
func sameEdge(a, b model.EdgeSnapshot) bool { return a == b || cmpEqual(a, b) }

// findCycle returns the nodes of a cycle of the graph, nil when it is
// acyclic (Kahn's algorithm).
func findCycle(nodes []model.ExecutionID, succ map[model.ExecutionID][]model.ExecutionID) []model.ExecutionID {
	indeg := map[model.ExecutionID]int{}
	for _, n := range nodes {
		for _, d := range succ[n] {
			indeg[d]++
		}
	}
	var queue []model.ExecutionID
	for _, n := range nodes {
		if indeg[n] == 0 {
			queue = append(queue, n)
		}
	}
	seen := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		seen++
		for _, d := range succ[n] {
			if indeg[d]--; indeg[d] == 0 {
				queue = append(queue, d)
			}
		}
	}
	if seen == len(nodes) {
		return nil
	}
	var left []model.ExecutionID
	for _, n := range nodes {
		if indeg[n] > 0 {
			left = append(left, n)
		}
	}
	return left
}

// flowStepViolations checks a flow across two observations: a flow is
// never lost, its creation time and partition do not change, its revision
// grows by exactly the members and edges added, an edge never changes or
// disappears (but for its state), a group decides once per generation
// (only a new await's generation or a replay of its downstream re-opens
// it), its generation grows only by an await, to one above every earlier
// generation of the member, and falls only to 0 with a replay of the
// member, and an execution's flow never changes once set.
func flowStepViolations(prev, cur *Observation) []string {
	var out []string
	for id, pf := range prev.Flows {
		cf := cur.Flows[id]
		if cf == nil {
			out = append(out, fmt.Sprintf("flow %v: lost", id))
			continue
		}
		p, c := pf.Snapshot, cf.Snapshot
		if !p.CreatedAt.Equal(c.CreatedAt) || p.Partition != c.Partition {
			out = append(out, fmt.Sprintf("flow %v: an immutable field changed: %+v -> %+v", id, p, c))
		}
		added := uint64(c.MemberCount-p.MemberCount) + uint64(c.EdgeCount-p.EdgeCount)
		if c.MemberCount < p.MemberCount || c.EdgeCount < p.EdgeCount || c.GraphRevision != p.GraphRevision+added {
			out = append(out, fmt.Sprintf("flow %v: revision %d -> %d with members %d -> %d and edges %d -> %d",
				id, p.GraphRevision, c.GraphRevision, p.MemberCount, c.MemberCount, p.EdgeCount, c.EdgeCount))
		}
		if p.Sealed && !c.Sealed {
			out = append(out, fmt.Sprintf("flow %v: unsealed", id))
		}
		for m, es := range pf.Out {
			now := map[model.EdgeID]model.EdgeSnapshot{}
			for _, e := range cf.Out[m] {
				now[e.ID] = e
			}
			for _, e := range es {
				ce, ok := now[e.ID]
				ce.State = e.State // resolution changes only the state
				if !ok || !sameEdge(ce, e) {
					out = append(out, fmt.Sprintf("flow %v: edge %v changed or vanished: %+v -> %+v", id, e.ID, e, ce))
				}
			}
		}
		// A group that decided in this step with SiblingsCancelRemaining
		// left none of its upstreams running.
		for m, cg := range cf.Groups {
			pg := pf.Groups[m]
			// (an await's generation decides as AllOf; a group with no
			// edge of its generation decided nothing by its policy)
			if cg.State == model.GroupWaiting || (pg != nil && pg.State != model.GroupWaiting) ||
				cg.Policy.Kind == model.GroupAllOf || cg.Policy.OnSatisfied != model.SiblingsCancelRemaining ||
				cg.Generation > 0 || cg.Size == 0 {
				continue
			}
			for _, e := range cf.In[m] {
				u := cur.Execs[e.Upstream]
				if u == nil {
					continue
				}
				if e.Generation != cg.Generation {
					// a child of an earlier await is not a sibling
					if pu := prev.Execs[e.Upstream]; pu != nil && pu.Snapshot.State.LifecyclePhase != model.PhaseTerminal &&
						u.Snapshot.CancelledBy == model.CancelledByFlow {
						out = append(out, fmt.Sprintf("flow %v: the group of %v (generation %d) cancelled %v, a child of generation %d",
							id, m, cg.Generation, e.Upstream, e.Generation))
					}
					continue
				}
				if u.Snapshot.State.LifecyclePhase != model.PhaseTerminal {
					out = append(out, fmt.Sprintf("flow %v: the group of %v decided %v (cancel remaining), yet its upstream %v is %v",
						id, m, cg.State, e.Upstream, u.Snapshot.State))
				}
			}
		}
		// A flow cancelled in this step left, by policy, no member that
		// had not ended (CancelAll) or started (CancelPending).
		if p.State == model.FlowOpen && c.State == model.FlowCancelled {
			for _, m := range cf.Members {
				x := cur.Execs[m]
				if x == nil {
					continue
				}
				st := x.Snapshot.State
				if (c.CancelPolicy == model.CancelAll && st.LifecyclePhase != model.PhaseTerminal) ||
					(c.CancelPolicy == model.CancelPending && st.LifecyclePhase == model.PhaseRunnable) {
					out = append(out, fmt.Sprintf("flow %v: cancelled (%v), yet member %v is %v", id, c.CancelPolicy, m, st))
				}
			}
		}
		// A group decides once: only a replay of its downstream, or an
		// await opening a new generation, re-opens it. A generation
		// grows only by an await, past every generation the member's
		// edges name, and falls only to 0 with a replay.
		for m, pg := range pf.Groups {
			cg := cf.Groups[m]
			if cg == nil {
				continue
			}
			px, cx := prev.Execs[m], cur.Execs[m]
			replayed := px != nil && cx != nil && cx.Snapshot.ReplayCount > px.Snapshot.ReplayCount
			awaited := cg.Generation > pg.Generation
			if pg.State != model.GroupWaiting && cg.State != pg.State && !replayed && !awaited {
				out = append(out, fmt.Sprintf("flow %v: the group of %v decided %v, then %v (generation %d -> %d)",
					id, m, pg.State, cg.State, pg.Generation, cg.Generation))
			}
			if cg.Generation < pg.Generation && (cg.Generation != 0 || !replayed) {
				out = append(out, fmt.Sprintf("flow %v: the group of %v went from generation %d to %d without a replay",
					id, m, pg.Generation, cg.Generation))
			}
			if awaited {
				earlier := pg.Generation
				for _, e := range pf.In[m] {
					earlier = max(earlier, e.Generation)
				}
				if cg.Generation <= earlier {
					out = append(out, fmt.Sprintf("flow %v: the group of %v opened generation %d, not above the earlier %d",
						id, m, cg.Generation, earlier))
				}
			}
		}
	}
	for id, px := range prev.Execs {
		if cx := cur.Execs[id]; cx != nil && !px.Snapshot.Flow.IsZero() && cx.Snapshot.Flow != px.Snapshot.Flow {
			out = append(out, fmt.Sprintf("%v: flow changed from %v to %v", id, px.Snapshot.Flow, cx.Snapshot.Flow))
		}
	}
	return out
}

// ---- actions ----

func flowOp[P, R any](f func(model.FlowStore, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return optional(f)
}

// pickFlow draws a known flow, or (sometimes, or when there is none) a new
// id co-located with an execution the machine made, so that members are
// executions the other actions also run.
func (m *machine) pickFlow(t *rapid.T, fresh int) model.FlowID {
	if len(m.flows) > 0 && !chance(t, fresh, "new_flow") {
		// Mostly a flow with members, where edges and groups can go.
		var grown []model.FlowID
		for _, f := range m.flows {
			if fo := m.flowObs(f.id); fo != nil && len(fo.Members) > 1 {
				grown = append(grown, f.id)
			}
		}
		if len(grown) > 0 && !chance(t, 20, "any_flow") {
			return drawFrom(t, grown, "grown_flow")
		}
		return drawFrom(t, m.flows, "flow").id
	}
	part := m.cfg.SoloPartition(drawFrom(t, lanes, "flow_lane"))
	if len(m.execs) > 0 && chance(t, 50, "flow_near_exec") {
		part = drawFrom(t, m.execs, "flow_exec").id.Partition()
	} else if len(m.flows) > 0 && chance(t, 40, "flow_near_flow") {
		// Beside another flow, so an execution can be offered to two flows.
		part = m.cfg.FlowPartition(drawFrom(t, m.flows, "flow_near").id)
	}
	return m.newFlowIn(t, part)
}

// newFlowIn returns a new flow id of partition part.
func (m *machine) newFlowIn(t *rapid.T, part int) model.FlowID {
	for {
		f := model.FlowID(m.nextUUID(t, ""))
		if m.cfg.FlowPartition(f) == part {
			return f
		}
	}
}

func (m *machine) refFlow(id model.FlowID) *refFlow {
	for _, f := range m.flows {
		if f.id == id {
			return f
		}
	}
	return nil
}

// flowObs is store A's latest observation of flow f (nil: none).
func (m *machine) flowObs(f model.FlowID) *FlowObservation {
	if m.obs[0] == nil || m.obs[0].Flows == nil {
		return nil
	}
	return m.obs[0].Flows[f]
}

// pickMember draws a member of f, or sometimes any execution (a
// non-member, or one of another partition).
func (m *machine) pickMember(t *rapid.T, f model.FlowID, label string) model.ExecutionID {
	if fo := m.flowObs(f); fo != nil && len(fo.Members) > 0 && !chance(t, 10, label+"_any") {
		return drawFrom(t, fo.Members, label)
	}
	return m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return s.ID.Partition() == m.cfg.FlowPartition(f) })
}

type flowExec struct {
	flow model.FlowID
	exec model.ExecutionID
}

// foreignMembers lists (flow, execution) pairs where the execution is a
// member of another flow in the same partition.
func (m *machine) foreignMembers() []flowExec {
	var out []flowExec
	for _, g := range m.flows {
		fo := m.flowObs(g.id)
		if fo == nil {
			continue
		}
		for _, f := range m.flows {
			if f.id != g.id && m.flowObs(f.id) != nil && m.cfg.FlowPartition(f.id) == m.cfg.FlowPartition(g.id) {
				for _, x := range fo.Members {
					out = append(out, flowExec{flow: f.id, exec: x})
				}
			}
		}
	}
	return out
}

// actFlowForeignMember offers a member of one flow to a second flow of
// its partition, made for the purpose when there is none: the single
// actions rarely line that up.
func (m *machine) actFlowForeignMember(t *rapid.T) {
	var cands []flowExec
	for _, g := range m.flows {
		if fo := m.flowObs(g.id); fo != nil {
			for _, x := range fo.Members {
				cands = append(cands, flowExec{flow: g.id, exec: x})
			}
		}
	}
	if len(cands) == 0 {
		return
	}
	c := drawFrom(t, cands, "foreign_candidate")
	part := m.cfg.FlowPartition(c.flow)
	var f model.FlowID
	var open []flowExec // pairs whose second flow takes members
	for _, pair := range m.foreignMembers() {
		if fo := m.flowObs(pair.flow); fo != nil && fo.Snapshot.State != model.FlowCancelled {
			open = append(open, pair)
		}
	}
	if len(open) > 0 && chance(t, 50, "existing_second_flow") {
		pair := drawFrom(t, open, "foreign_pair")
		f, c.exec = pair.flow, pair.exec
	} else {
		f = m.newFlowIn(t, part)
		if _, err := call(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate)); err != nil {
			m.fatalf(t, "FlowCreate: %v", err)
		}
		m.flows = append(m.flows, &refFlow{id: f})
	}
	_, err := call(m, t, "FlowAddMember", &model.FlowAddMemberParams{Flow: f, Execution: c.exec, Now: m.now()},
		flowOp(model.FlowStore.FlowAddMember))
	m.expect(t, errors.Is(err, model.ErrAlreadyInFlow), "FlowAddMember of a member of another flow: %v", err)
}

// actFlowOpenRefusals builds an open graph of two members created into a
// new flow (held at once) and one edge, then makes the two refusals only
// an open graph gives: a stage at a stale revision, and a group policy
// for a downstream that has an edge. Each changes nothing (the
// observation after the step checks it).
func (m *machine) actFlowOpenRefusals(t *rapid.T) {
	lane := drawFrom(t, lanes, "refusal_lane")
	f := m.newFlowIn(t, m.cfg.SoloPartition(lane))
	if _, err := call(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate)); err != nil {
		m.fatalf(t, "FlowCreate: %v", err)
	}
	m.flows = append(m.flows, &refFlow{id: f})
	var ids [2]model.ExecutionID
	for i := range ids {
		u := m.nextUUID(t, "")
		ids[i] = model.NewExecutionID(m.cfg.FlowPartition(f), u)
		p := &model.ExecutionCreateParams{ID: ids[i], Namespace: model.DefaultNamespace, Lane: lane, Kind: kinds[0], Flow: f,
			Retention: drawRetention(t), Now: m.now()}
		if _, err := call(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate); err != nil {
			m.fatalf(t, "ExecutionCreate into a flow: %v", err)
		}
		r := &refExec{id: ids[i], lane: lane}
		m.execs = append(m.execs, r)
		m.byID[ids[i]] = r
	}
	edge := model.EdgeID(m.nextUUID(t, "edge_order"))
	res, err := call(m, t, "EdgeStage", &model.EdgeStageParams{Flow: f, Edge: edge, Upstream: ids[0], Downstream: ids[1],
		ExpectedGraphRevision: 2, Now: m.now()}, flowOp(model.FlowStore.EdgeStage))
	if err != nil || res.GraphRevision != 3 {
		m.fatalf(t, "EdgeStage in a new graph: %+v %v", res, err)
	}
	m.refFlow(f).edges = append(m.refFlow(f).edges, edge)
	_, err = call(m, t, "EdgeStage", &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(m.nextUUID(t, "edge_order")),
		Upstream: ids[1], Downstream: ids[0], ExpectedGraphRevision: 2, Now: m.now()}, flowOp(model.FlowStore.EdgeStage))
	m.expect(t, errors.Is(err, model.ErrStaleGraphRevision), "EdgeStage at a stale revision: %v", err)
	_, err = call(m, t, "EdgeGroupSet", &model.EdgeGroupSetParams{Flow: f, Downstream: ids[1],
		Policy: model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsLetRun}, Now: m.now()},
		flowOp(model.FlowStore.EdgeGroupSet))
	m.expect(t, errors.Is(err, model.ErrEdgeGroupFixed), "EdgeGroupSet after an edge: %v", err)
}

func (m *machine) actFlowCreate(t *rapid.T) {
	p := &model.FlowCreateParams{Flow: m.pickFlow(t, 40), Tags: drawFrom(t, tagSets, "flow_tags"), Now: m.now()}
	if bad := invalid(t, 2); bad == 0 {
		p.Flow = model.FlowID{}
	} else if bad == 1 {
		p.Tags = map[string]string{"no-namespace": "x"}
	}
	res, err := call(m, t, "FlowCreate", p, flowOp(model.FlowStore.FlowCreate))
	if err != nil {
		m.expectValidation(t, "FlowCreate", err)
		return
	}
	known := m.refFlow(p.Flow) != nil
	m.expect(t, (res.Outcome == model.FlowAlreadyExists) == known && res.Partition == m.cfg.FlowPartition(p.Flow),
		"FlowCreate(%v): %+v (known %v)", p.Flow, res, known)
	if !known {
		m.flows = append(m.flows, &refFlow{id: p.Flow})
	}
}

func (m *machine) actFlowAddMember(t *rapid.T) {
	f := m.pickFlow(t, 5)
	p := &model.FlowAddMemberParams{Flow: f, Now: m.now()}
	if pairs := m.foreignMembers(); len(pairs) > 0 && chance(t, 20, "member_of_other_flow") {
		// A member of one flow offered to another flow of its partition.
		pair := drawFrom(t, pairs, "foreign_member")
		f, p.Flow, p.Execution = pair.flow, pair.flow, pair.exec
	} else {
		p.Execution = m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
			return s.Flow.IsZero() && s.ID.Partition() == m.cfg.FlowPartition(f)
		})
	}
	prev := m.snap(p.Execution)
	res, err := call(m, t, "FlowAddMember", p, flowOp(model.FlowStore.FlowAddMember))
	fo := m.flowObs(f)
	switch {
	case p.Execution.Partition() != m.cfg.FlowPartition(f):
		m.expectValidation(t, "FlowAddMember (other partition)", err)
	case fo == nil:
		m.expect(t, errors.Is(err, model.ErrFlowNotFound), "FlowAddMember to an unknown flow: %v", err)
	case fo.Snapshot.State == model.FlowCancelled:
		m.expect(t, errors.Is(err, model.ErrFlowTerminal), "FlowAddMember to a %v flow: %v", fo.Snapshot.State, err)
	case prev == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "FlowAddMember of an unknown execution: %v", err)
	case prev.Flow == f:
		m.expect(t, err == nil && res.Outcome == model.AlreadyMember && res.GraphRevision == fo.Snapshot.GraphRevision,
			"FlowAddMember again: %+v %v", res, err)
	case !prev.Flow.IsZero():
		m.expect(t, errors.Is(err, model.ErrAlreadyInFlow), "FlowAddMember of a member of another flow: %v", err)
	case fo.Snapshot.Sealed:
		m.expect(t, errors.Is(err, model.ErrFlowSealed), "FlowAddMember to a sealed flow: %v", err)
	case prev.State.LifecyclePhase == model.PhaseTerminal:
		m.expect(t, errors.Is(err, model.ErrNotActive), "FlowAddMember of a terminal execution: %v", err)
	default:
		m.expect(t, err == nil && res.Outcome == model.MemberAdded && res.MemberCount == fo.Snapshot.MemberCount+1 &&
			res.GraphRevision == fo.Snapshot.GraphRevision+1, "FlowAddMember: %+v %v (before %+v)", res, err, fo.Snapshot)
	}
}

func (m *machine) actEdgeStage(t *rapid.T) {
	f := m.pickFlow(t, 3)
	open := false
	if of, ok := m.openFlow(t); ok && chance(t, 25, "open_graph") {
		f, open = of, true // an open graph, where the revision is compared
	}
	p := &model.EdgeStageParams{
		Flow: f, Upstream: m.pickMember(t, f, "upstream"), Downstream: m.pickMember(t, f, "downstream"),
		PassResult: genBool.Draw(t, "pass_result"), Now: m.now(),
	}
	fo := m.flowObs(f)
	if fo != nil {
		p.ExpectedGraphRevision = fo.Snapshot.GraphRevision
	}
	if chance(t, 8, "stale_revision") || (open && chance(t, 25, "stale_open_revision")) {
		p.ExpectedGraphRevision += uint64(rapid.IntRange(1, 2).Draw(t, "revision_off"))
	}
	if chance(t, 25, "search_bound") {
		p.MaxSearchEdges = rapid.IntRange(1, 4).Draw(t, "max_search_edges")
	}
	if r := m.refFlow(f); r != nil && len(r.edges) > 0 && chance(t, 5, "reuse_edge") {
		p.Edge = drawFrom(t, r.edges, "edge")
	} else {
		p.Edge = model.EdgeID(m.nextUUID(t, "edge_order"))
	}
	if invalid(t, 1) == 0 {
		p.Edge = model.EdgeID{}
	}
	res, err := call(m, t, "EdgeStage", p, flowOp(model.FlowStore.EdgeStage))
	if err != nil {
		var e *model.Error
		m.expect(t, errors.As(err, &e), "EdgeStage: untyped error %v", err)
		if p.Upstream == p.Downstream && !p.Edge.IsZero() && p.Upstream.Partition() == m.cfg.FlowPartition(f) {
			m.expect(t, errors.Is(err, model.ErrSelfEdge) && errors.Is(err, model.ErrValidation), "self edge: %v", err)
		}
		if fo != nil && errors.Is(err, model.ErrCycle) {
			m.expect(t, m.reaches(fo, p.Downstream, p.Upstream), "EdgeStage refused %v -> %v as a cycle, but there is no path back", p.Upstream, p.Downstream)
		}
		if errors.Is(err, model.ErrFlowSealed) {
			m.expect(t, fo != nil && fo.Snapshot.Sealed, "EdgeStage: flow_sealed for an open flow")
		}
		if errors.Is(err, model.ErrFlowTerminal) {
			m.expect(t, fo != nil && fo.Snapshot.State == model.FlowCancelled, "EdgeStage: flow_already_terminal for an open flow")
		}
		if errors.Is(err, model.ErrDownstreamStarted) {
			m.expect(t, !m.isHeld(p.Downstream), "EdgeStage: downstream_not_held for a held downstream")
		}
		return
	}
	m.expect(t, fo != nil && res.GraphRevision == fo.Snapshot.GraphRevision+1 && p.Upstream != p.Downstream &&
		!m.reaches(fo, p.Downstream, p.Upstream) && !fo.Snapshot.Sealed && fo.Snapshot.State != model.FlowCancelled && m.isHeld(p.Downstream),
		"EdgeStage %v -> %v accepted: %+v (before %+v)", p.Upstream, p.Downstream, res, fo)
	r := m.refFlow(f)
	r.edges = append(r.edges, p.Edge)
}

// isHeld reports whether store A's latest observation has id held for its
// dependencies.
func (m *machine) isHeld(id model.ExecutionID) bool {
	x := m.snap(id)
	return x != nil && x.State.LifecyclePhase == model.PhaseRunnable && x.State.EligibilityState == model.BlockedByDependencies
}

// actFlowCancel cancels a flow with a drawn policy (the observation after
// the step checks what it left).
func (m *machine) actFlowCancel(t *rapid.T) {
	f := m.pickFlow(t, 5)
	p := &model.FlowCancelParams{Flow: f, Policy: drawFrom(t, []model.FlowCancelPolicy{model.CancelFlowOnly, model.CancelAll, model.CancelPending}, "cancel_policy"),
		Reason: "stop", Now: m.now()}
	if invalid(t, 1) == 0 {
		p.Policy = 0
	}
	res, err := call(m, t, "FlowCancel", p, flowOp(model.FlowStore.FlowCancel))
	fo := m.flowObs(f)
	switch {
	case p.Policy == 0:
		m.expectValidation(t, "FlowCancel", err)
	case fo == nil:
		m.expect(t, errors.Is(err, model.ErrFlowNotFound), "FlowCancel of an unknown flow: %v", err)
	case fo.Snapshot.State != model.FlowOpen:
		m.expect(t, errors.Is(err, model.ErrFlowTerminal), "FlowCancel of a %v flow: %v", fo.Snapshot.State, err)
	default:
		ok := err == nil && (p.Policy != model.CancelFlowOnly || len(res.Cancelled) == 0)
		for _, id := range res.Cancelled {
			ok = ok && slices.Contains(fo.Members, id)
		}
		m.expect(t, ok, "FlowCancel(%v): %+v %v", p.Policy, res, err)
	}
}

// actFlowSeal seals a flow: the first seal releases and decides, a second
// changes nothing (the observation after the step checks the groups).
func (m *machine) actFlowSeal(t *rapid.T) {
	f := m.pickFlow(t, 5)
	res, err := call(m, t, "FlowSeal", &model.FlowSealParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowSeal))
	fo := m.flowObs(f)
	switch {
	case fo == nil:
		m.expect(t, errors.Is(err, model.ErrFlowNotFound), "FlowSeal of an unknown flow: %v", err)
	case fo.Snapshot.State == model.FlowCancelled:
		m.expect(t, errors.Is(err, model.ErrFlowTerminal), "FlowSeal of a %v flow: %v", fo.Snapshot.State, err)
	case fo.Snapshot.Sealed:
		m.expect(t, err == nil && res.Outcome == model.FlowAlreadySealed && res.Released == 0 && res.Skipped == 0,
			"FlowSeal again: %+v %v", res, err)
	default:
		m.expect(t, err == nil && res.Outcome == model.FlowSealedNow && res.Released <= len(fo.Members) &&
			res.Skipped <= len(fo.Members), "FlowSeal: %+v %v (members %d)", res, err, len(fo.Members))
	}
}

// reaches reports whether to is reachable from from in the observed graph.
func (m *machine) reaches(fo *FlowObservation, from, to model.ExecutionID) bool {
	seen := map[model.ExecutionID]bool{from: true}
	stack := []model.ExecutionID{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		for _, e := range fo.Out[n] {
			if !seen[e.Downstream] {
				seen[e.Downstream] = true
				stack = append(stack, e.Downstream)
			}
		}
	}
	return false
}

var groupPolicies = []model.EdgeGroupPolicy{
	model.AllOf,
	{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsCancelRemaining},
	{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsLetRun},
	{Kind: model.GroupQuorum, Quorum: 2, OnSatisfied: model.SiblingsCancelRemaining},
	{Kind: model.GroupQuorum, Quorum: 1, OnSatisfied: model.SiblingsLetRun},
	{Kind: model.GroupQuorum, OnSatisfied: model.SiblingsLetRun}, // invalid: no quorum
	{Kind: model.GroupAllOf, OnSatisfied: model.SiblingsLetRun},  // invalid: siblings of an AllOf
}

// openFlow returns an observed open (unsealed) flow with two members or
// more (room for an edge); ok is
// false when there is none.
func (m *machine) openFlow(t *rapid.T) (model.FlowID, bool) {
	var fs []model.FlowID
	for _, r := range m.flows {
		if fo := m.flowObs(r.id); fo != nil && !fo.Snapshot.Sealed && len(fo.Members) > 1 {
			fs = append(fs, r.id)
		}
	}
	if len(fs) == 0 {
		return model.FlowID{}, false
	}
	return drawFrom(t, fs, "open_flow_id"), true
}

// openFlowWith returns an observed open (unsealed) flow with a member
// that has incoming edges, and that member; ok is false when there is
// none. Sealing ends most graphs, so the refusals that only an open graph
// gives (a fixed group, a stale revision) need one picked on purpose.
func (m *machine) openFlowWith(t *rapid.T) (model.FlowID, model.ExecutionID, bool) {
	var fs []model.FlowID
	var ds []model.ExecutionID
	for _, r := range m.flows {
		fo := m.flowObs(r.id)
		if fo == nil || fo.Snapshot.Sealed {
			continue
		}
		for _, id := range fo.Members {
			if len(fo.In[id]) > 0 {
				fs, ds = append(fs, r.id), append(ds, id)
			}
		}
	}
	if len(fs) == 0 {
		return model.FlowID{}, model.ExecutionID{}, false
	}
	i := drawIndex(t, len(fs), "open_flow")
	return fs[i], ds[i], true
}

func (m *machine) actEdgeGroupSet(t *rapid.T) {
	f := m.pickFlow(t, 3)
	var fixed model.ExecutionID // a downstream whose group is fixed by its edges
	if of, d, ok := m.openFlowWith(t); ok && chance(t, 25, "fixed_group") {
		f, fixed = of, d
	}
	p := &model.EdgeGroupSetParams{Flow: f, Downstream: m.pickMember(t, f, "downstream"),
		Policy: drawFrom(t, groupPolicies, "policy"), Now: m.now()}
	if !fixed.IsZero() {
		p.Downstream = fixed
	}
	if fo := m.flowObs(f); fo != nil && chance(t, 40, "same_policy") {
		var set []model.ExecutionID
		for _, id := range fo.Members {
			if fo.Groups[id].Explicit {
				set = append(set, id)
			}
		}
		if len(set) > 0 {
			p.Downstream = drawFrom(t, set, "set_downstream")
			p.Policy = fo.Groups[p.Downstream].Policy
		}
	}
	res, err := call(m, t, "EdgeGroupSet", p, flowOp(model.FlowStore.EdgeGroupSet))
	if p.Policy.Validate("Policy") != nil {
		m.expectValidation(t, "EdgeGroupSet", err)
		return
	}
	fo := m.flowObs(f)
	if err != nil || fo == nil {
		return
	}
	prev := fo.Groups[p.Downstream]
	m.expect(t, prev != nil && prev.Edges == 0 && !fo.Snapshot.Sealed && fo.Snapshot.State != model.FlowCancelled, "EdgeGroupSet accepted for %v with edges in or sealed: %+v %+v", p.Downstream, prev, fo.Snapshot)
	same := prev.Explicit && prev.Policy == p.Policy
	m.expect(t, (res.Outcome == model.GroupAlreadySet) == same, "EdgeGroupSet: %v, before %+v", res.Outcome, prev)
}

func (m *machine) actFlowRead(t *rapid.T) {
	f := m.pickFlow(t, 10)
	fo := m.flowObs(f)
	switch rapid.IntRange(0, 2).Draw(t, "flow_read") {
	case 0:
		snap, err := call(m, t, "FlowDescribe", &model.FlowDescribeParams{Flow: f}, flowOp(model.FlowStore.FlowDescribe))
		if fo == nil {
			m.expect(t, errors.Is(err, model.ErrFlowNotFound), "FlowDescribe of an unknown flow: %v", err)
		} else {
			m.expect(t, err == nil && cmpEqual(snap, fo.Snapshot), "FlowDescribe: %+v %v, observed %+v", snap, err, fo.Snapshot)
		}
	case 1:
		var e model.EdgeID
		if r := m.refFlow(f); r != nil && len(r.edges) > 0 && !chance(t, 10, "unknown_edge") {
			e = drawFrom(t, r.edges, "edge")
		} else {
			e = model.EdgeID(m.nextUUID(t, ""))
		}
		_, err := call(m, t, "EdgeDescribe", &model.EdgeDescribeParams{Flow: f, Edge: e}, flowOp(model.FlowStore.EdgeDescribe))
		if fo == nil {
			m.expect(t, errors.Is(err, model.ErrFlowNotFound), "EdgeDescribe in an unknown flow: %v", err)
		}
	case 2:
		part := drawIndex(t, m.cfg.FlowPartitions, "flow_partition")
		if len(m.flows) > 0 && genBool.Draw(t, "known_partition") {
			part = m.cfg.FlowPartition(drawFrom(t, m.flows, "list_flow").id)
		}
		limit := rapid.IntRange(1, 3).Draw(t, "limit")
		res, err := call(m, t, "FlowList", &model.FlowListParams{Partition: part, Limit: limit}, flowOp(model.FlowStore.FlowList))
		m.expect(t, err == nil && len(res.IDs) <= limit, "FlowList: %+v %v", res, err)
	}
}

// actFlowGraph grows one flow by a few members and edges in one step (the
// single actions rarely line up two members of one flow): it creates the
// flow if needed, then adds executions of its partition or stages edges
// between its members at the flow's current revision. The observation
// after the step checks the graph.
func (m *machine) actFlowGraph(t *rapid.T) {
	f := m.pickFlow(t, 15)
	if m.refFlow(f) == nil {
		if _, err := call(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate)); err != nil {
			m.fatalf(t, "FlowCreate: %v", err)
		}
		m.flows = append(m.flows, &refFlow{id: f})
	}
	r := m.refFlow(f)
	part := m.cfg.FlowPartition(f)
	var members []model.ExecutionID
	if fo := m.flowObs(f); fo != nil {
		if fo.Snapshot.Sealed || fo.Snapshot.State != model.FlowOpen {
			return // a sealed or cancelled graph takes nothing more
		}
		members = slices.Clone(fo.Members)
	}
	// Often seal what was built, so groups decide and members run.
	defer func() {
		if chance(t, 30, "graph_seal") {
			if _, err := call(m, t, "FlowSeal", &model.FlowSealParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowSeal)); err != nil {
				m.fatalf(t, "FlowSeal: %v", err)
			}
		}
	}()
	for range rapid.IntRange(1, 5).Draw(t, "graph_ops") {
		if len(members) < 2 || chance(t, 30, "graph_add") {
			var cands []model.ExecutionID
			for _, x := range m.execs {
				if s := m.snap(x.id); s != nil && x.id.Partition() == part && s.Flow.IsZero() &&
					s.State.LifecyclePhase != model.PhaseTerminal && !slices.Contains(members, x.id) {
					cands = append(cands, x.id)
				}
			}
			if len(cands) == 0 {
				return
			}
			id := drawFrom(t, cands, "graph_member")
			if _, err := call(m, t, "FlowAddMember", &model.FlowAddMemberParams{Flow: f, Execution: id, Now: m.now()},
				flowOp(model.FlowStore.FlowAddMember)); err != nil {
				m.fatalf(t, "FlowAddMember of a fresh execution: %v", err)
			}
			members = append(members, id)
			continue
		}
		snap, err := call(m, t, "FlowDescribe", &model.FlowDescribeParams{Flow: f}, flowOp(model.FlowStore.FlowDescribe))
		if err != nil {
			m.fatalf(t, "FlowDescribe: %v", err)
		}
		i := drawIndex(t, len(members), "graph_up")
		j := drawIndex(t, len(members)-1, "graph_down")
		if j >= i && !chance(t, 3, "graph_self") {
			j++ // any other member; sometimes the same one
		}
		up, down := members[i], members[min(j, len(members)-1)]
		p := &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(m.nextUUID(t, "edge_order")), Upstream: up, Downstream: down,
			ExpectedGraphRevision: snap.GraphRevision, Now: m.now()}
		if chance(t, 30, "graph_bound") {
			p.MaxSearchEdges = rapid.IntRange(1, 2).Draw(t, "graph_max_search")
		}
		if len(r.edges) > 0 && chance(t, 5, "graph_reuse_edge") {
			p.Edge = drawFrom(t, r.edges, "graph_edge")
		}
		if _, err := call(m, t, "EdgeStage", p, flowOp(model.FlowStore.EdgeStage)); err == nil {
			r.edges = append(r.edges, p.Edge)
		}
	}
}

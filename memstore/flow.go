package memstore

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// Flows (valkeystore/lua/lib/flow.lua): a flow's record, members, edges
// and groups, laid out as valkeystore's flow keys (keys.go there; the
// Flows section of docs/ARCHITECTURE.md). A member's flow is kept beside
// the execution record (flowOf, valkeystore's X:flow), not in it.

// flowRec is one flow: F:core, F:tags, F:members, F:edge:*, F:out:*,
// F:in:* and F:group:*.
type flowRec struct {
	id             model.FlowID
	state          model.FlowState
	createdAt      int64
	lastMutationAt int64
	memberCount    int
	edgeCount      int
	graphRevision  uint64
	tags           map[string]string
	members        *idset
	edges          map[model.EdgeID]*edgeRec
	out            map[model.ExecutionID]map[model.ExecutionID]model.EdgeID // up → down → edge
	in             map[model.ExecutionID]map[model.ExecutionID]model.EdgeID // down → up → edge
	groups         map[model.ExecutionID]model.EdgeGroupPolicy
	sealed         bool
	// live counts the members that have not ended (F:core live).
	live         int
	cancelPolicy model.FlowCancelPolicy
	cancelReason string
	cancelledAt  int64
	// gstate is each downstream's group record (F:gstate:<down>), made
	// when its first edge is staged.
	gstate map[model.ExecutionID]*groupRec
}

// groupRec is F:gstate:<down>: the group's size (fixed at seal), its
// resolved edges, and its decision.
type groupRec struct {
	size, succeeded, impossible int
	state                       model.GroupState
	// gen is the generation whose edges count (0: the edges staged while
	// the flow was built; n: the downstream's nth await of children), and
	// gens the awaits so far, so a generation number is never reused.
	gen, gens int
}

// edgeRec is F:edge:<edge>.
type edgeRec struct {
	id         model.EdgeID
	upstream   model.ExecutionID
	downstream model.ExecutionID
	passResult bool
	state      model.EdgeState
	revision   uint64
	createdAt  int64
	gen        int
}

func flowLess(a, b model.FlowID) bool { return model.CompareFlowIDs(a, b) < 0 }

// flowIndex is the partition's live flows (P:idx:{fp:N}:flows), or its
// finished ones (flows_done), in id order.
func (s *Store) flowIndex(part int, finished bool) *btree.BTreeG[model.FlowID] {
	m := s.flowIdx
	if finished {
		m = s.flowDone
	}
	t := m[part]
	if t == nil {
		t = btree.NewBTreeGOptions(flowLess, btree.Options{NoLocks: true, Degree: 32})
		m[part] = t
	}
	return t
}

// flowLive adds d to f's live members and files f as live or finished
// (model.FlowListParams): finished once no member is live and it is sealed
// or cancelled.
func (s *Store) flowLive(f *flowRec, d int) {
	f.live += d
	part := s.cfg.FlowPartition(f.id)
	finished := f.live == 0 && (f.sealed || f.state == model.FlowCancelled)
	if finished {
		s.flowIndex(part, false).Delete(f.id)
		s.flowIndex(part, true).Set(f.id)
	} else if _, ok := s.flowIndex(part, true).Delete(f.id); ok {
		s.flowIndex(part, false).Set(f.id)
	}
}

// flowLoad returns the flow, or ErrFlowNotFound.
func (s *Store) flowLoad(id model.FlowID) (*flowRec, error) {
	f := s.flows[id]
	if f == nil {
		return nil, model.ErrFlowNotFound
	}
	return f, nil
}

// flowOpen refuses a terminal flow.
func flowOpen(f *flowRec) error {
	if f.state.Terminal() {
		return &model.Error{Code: model.CodeFlowAlreadyTerminal, Detail: f.state.String()}
	}
	return nil
}

// flowUnsealed refuses a sealed flow.
func flowUnsealed(f *flowRec) error {
	if f.sealed {
		return model.ErrFlowSealed
	}
	return nil
}

// downstreamStarted is the refusal of an edge into a member that is not
// held (d nil: the member's record is gone).
func downstreamStarted(d *execution) error {
	detail := "missing"
	if d != nil {
		detail = d.lifecyclePhase.String()
		if d.lifecyclePhase == model.PhaseRunnable {
			detail = d.eligibilityState.String()
		}
	}
	return &model.Error{Code: model.CodeDownstreamStarted, Field: "Downstream", Detail: detail}
}

// flowMember refuses an execution that is not a member of f, naming the
// parameter.
func flowMember(f *flowRec, id model.ExecutionID, field string) error {
	if !f.members.has(id) {
		return &model.Error{Code: model.CodeExecutionNotInFlow, Field: field, Detail: id.String()}
	}
	return nil
}

// graphReaches reports whether target is reachable from start along
// outgoing edges. It visits every reachable node once and does not stop on
// finding target, so its outcome does not depend on the order it walks in;
// exceeded is set (and found is false) when the reachable edges number more
// than limit.
func graphReaches(f *flowRec, start, target model.ExecutionID, limit int) (found, exceeded bool) {
	seen := map[model.ExecutionID]bool{start: true}
	stack := []model.ExecutionID{start}
	examined := 0
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == target {
			found = true
		}
		outs := f.out[n]
		examined += len(outs)
		if examined > limit {
			return false, true
		}
		for d := range outs {
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return found, false
}

// flowCounts counts f's members by public state.
func (s *Store) flowCounts(f *flowRec) map[model.PublicState]int {
	counts := map[model.PublicState]int{}
	f.members.each(func(id model.ExecutionID) {
		if e := s.execs[id]; e != nil {
			counts[e.vector().PublicState()]++
		}
	})
	return counts
}

// flowSnapshot is the describe view of f.
func (s *Store) flowSnapshot(f *flowRec) *model.FlowSnapshot {
	counts := s.flowCounts(f)
	snap := &model.FlowSnapshot{
		ID: f.id, Partition: s.cfg.FlowPartition(f.id), State: model.DeriveFlowState(f.state, f.sealed, counts), Counts: counts,
		MemberCount: f.memberCount, EdgeCount: f.edgeCount, GraphRevision: f.graphRevision,
		Sealed: f.sealed, CreatedAt: tm(f.createdAt),
		CancelPolicy: f.cancelPolicy, CancelReason: f.cancelReason, CancelledAt: tm(f.cancelledAt), LastMutationAt: tm(f.lastMutationAt),
	}
	if len(f.tags) > 0 {
		snap.Tags = maps.Clone(f.tags)
	}
	return snap
}

// edgeSnapshot is the describe view of an edge of f.
func edgeSnapshot(f *flowRec, e *edgeRec) model.EdgeSnapshot {
	return model.EdgeSnapshot{
		ID: e.id, Flow: f.id, Upstream: e.upstream, Downstream: e.downstream,
		PassResult: e.passResult, State: e.state, GraphRevision: e.revision,
		Generation: e.gen, CreatedAt: tm(e.createdAt),
	}
}

// edgeList lists the edges of one end (ends maps the other end to the
// edge id) in edge-id order.
func edgeList(f *flowRec, ends map[model.ExecutionID]model.EdgeID) []model.EdgeSnapshot {
	out := make([]model.EdgeSnapshot, 0, len(ends))
	for _, id := range ends {
		out = append(out, edgeSnapshot(f, f.edges[id]))
	}
	slices.SortFunc(out, func(a, b model.EdgeSnapshot) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}

// Dependency resolution (the FlowStore contract in model/flow_ops.go).
// A member ending resolves its pending outgoing edges and decides the
// groups it completes; a skip ends a member and so cascades. The cascade
// is a work list drained by the outermost call (flowEnded), not
// recursion, so a long chain needs no deep stack; each step's effects
// commute, so the order the list is drained in does not change the
// result.

// flowTally counts what one step released and skipped (FlowSeal reports
// it).
type flowTally struct{ released, skipped int }

// hold parks a runnable member until its dependencies resolve: out of its
// lane index into blocked:dependencies, its RunAt (delayUntil) kept for
// its release.
func (s *Store) hold(e *execution, now int64, as model.AttemptState) {
	s.removeFromLane(e)
	_, l := s.indexesOf(e)
	s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, model.BlockedByDependencies, model.WaitingForChildren, model.OutcomeNone, as)
	clearGrant(e)
	l.blocked[model.BlockedByDependencies].add(e.id, now)
}

// flowJoin records e as a member of f (its hold is the caller's).
func (s *Store) flowJoin(f *flowRec, e *execution, now int64) {
	f.members.add(e.id)
	s.flowOf[e.id] = f.id
	s.flowOfPeak = max(s.flowOfPeak, len(s.flowOf))
	f.memberCount++
	f.graphRevision++
	f.lastMutationAt = now
	s.flowLive(f, 1)
}

// flowLoadOpen returns the flow, refusing one that is missing or
// terminal.
func (s *Store) flowLoadOpen(id model.FlowID) (*flowRec, error) {
	f, err := s.flowLoad(id)
	if err != nil {
		return nil, err
	}
	if err := flowOpen(f); err != nil {
		return nil, err
	}
	return f, nil
}

// flowJoinable returns the flow an execution is created into, refusing
// one that is missing, terminal or sealed.
func (s *Store) flowJoinable(id model.FlowID) (*flowRec, error) {
	f, err := s.flowLoadOpen(id)
	if err != nil {
		return nil, err
	}
	if err := flowUnsealed(f); err != nil {
		return nil, err
	}
	return f, nil
}

// held reports whether e is held for its dependencies.
func held(e *execution) bool {
	return e.lifecyclePhase == model.PhaseRunnable && e.eligibilityState == model.BlockedByDependencies
}

// releaseHeld lets a held member run: eligible now, or delayed until its
// RunAt.
func (s *Store) releaseHeld(e *execution, now int64) {
	s.removeFromLane(e)
	s.makeRunnable(e, now, e.delayUntil, model.WaitingForDelay, e.attemptState)
	s.tally.released++
}

// skipMember ends a held member whose group became impossible; an
// attempt it had open (one paused by a worker's delay before it joined)
// ends cancelled.
func (s *Store) skipMember(e *execution, now int64) {
	s.removeFromLane(e)
	s.endAttempt(e, now, model.AttemptEndedCancelled, model.ReasonDependencyImpossible, "")
	s.tally.skipped++
	s.terminate(e, now, model.OutcomeSkipped)
}

// groupDecide decides d's group in a sealed flow once its edges allow it,
// releasing or skipping d (when d is held; a terminal d is left waiting:
// its replay re-opens the group).
func (s *Store) groupDecide(f *flowRec, d model.ExecutionID, now int64) {
	g := f.gstate[d]
	if !f.sealed || g == nil || g.state != model.GroupWaiting {
		return
	}
	de := s.execs[d]
	if de == nil || de.lifecyclePhase == model.PhaseTerminal {
		return
	}
	pol, ok := f.groups[d]
	if !ok || g.gen > 0 {
		pol = model.AllOf // an await's generation waits for every child
	}
	st := pol.Decide(g.size, g.succeeded, g.impossible)
	if st == model.GroupWaiting {
		return
	}
	g.state = st
	if held(de) {
		if st == model.GroupSatisfied {
			s.releaseHeld(de, now)
		} else {
			s.skipMember(de, now)
		}
	}
	if pol.Kind != model.GroupAllOf && pol.OnSatisfied == model.SiblingsCancelRemaining {
		reason := model.ReasonSiblingSatisfied
		if st == model.GroupImpossible {
			reason = model.ReasonSiblingImpossible
		}
		for _, up := range byID(f.in[d]) {
			if f.edges[f.in[d][up]].gen != g.gen {
				continue // a child of an earlier await is not a sibling
			}
			if u := s.execs[up]; u != nil && u.lifecyclePhase != model.PhaseTerminal {
				s.cancelExec(u, now, reason, model.CancelledByFlow, true)
			}
		}
	}
}

// edgeResolve resolves a pending edge from its ended upstream u: success
// satisfies it (and passes u's result on when asked, while the
// downstream still waits), and so does any end of a child an await
// created; anything else makes it impossible. Only an edge of its
// group's current generation counts.
func (s *Store) edgeResolve(f *flowRec, ed *edgeRec, u *execution) {
	g := f.gstate[ed.downstream]
	counts := ed.gen == g.gen
	if u.terminalOutcome == model.OutcomeSuccess || ed.gen > 0 {
		ed.state = model.EdgeSatisfied
		if !counts {
			return
		}
		g.succeeded++
		if d := s.execs[ed.downstream]; ed.passResult && u.hasResult && g.state == model.GroupWaiting &&
			d != nil && d.lifecyclePhase != model.PhaseTerminal {
			d.payload = cloneBytes(u.result)
		}
		return
	}
	ed.state = model.EdgeImpossible
	if counts {
		g.impossible++
	}
}

// flowEnded is called by terminate for every execution that ends: for a
// member, its pending outgoing edges resolve and their groups decide,
// cascading through skips.
func (s *Store) flowEnded(e *execution, now int64) {
	fid, ok := s.flowOf[e.id]
	if !ok {
		return
	}
	s.flowLive(s.flows[fid], -1)
	if s.flowCancelling {
		return
	}
	s.flowQueue = append(s.flowQueue, e)
	if s.flowDraining {
		return
	}
	s.flowDraining = true
	for i := 0; i < len(s.flowQueue); i++ {
		u := s.flowQueue[i]
		f := s.flows[s.flowOf[u.id]]
		for _, d := range byID(f.out[u.id]) {
			if ed := f.edges[f.out[u.id][d]]; ed.state == model.EdgePending {
				s.edgeResolve(f, ed, u)
				s.groupDecide(f, d, now)
			}
		}
	}
	s.flowQueue = s.flowQueue[:0]
	s.flowDraining = false
}

// byID returns the other ends of a member's edges (f.out or f.in of it)
// in id order, as valkeystore's flow library sorts them: the order
// decisions and sibling cancels cascade in must not be a map's (seed 1 of
// the simulator claimed different executions in two runs of one history).
func byID(ends map[model.ExecutionID]model.EdgeID) []model.ExecutionID {
	ds := make([]model.ExecutionID, 0, len(ends))
	for d := range ends {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b model.ExecutionID) int { return strings.Compare(a.String(), b.String()) })
	return ds
}

// flowReplayed re-opens what a replayed member decided (see the
// FlowStore contract): its resolved edges into waiting groups return to
// pending, and when it has incoming edges (or its flow is not sealed) it
// is held again with its group reset and decided again. It reports
// whether it took care of e's runnable state; if not, the caller makes e
// eligible.
func (s *Store) flowReplayed(e *execution, now int64, as model.AttemptState) bool {
	fid, ok := s.flowOf[e.id]
	if !ok {
		return false
	}
	f := s.flows[fid]
	s.flowLive(f, 1)
	if f.state != model.FlowOpen {
		return false // a cancelled flow decides nothing more
	}
	for _, d := range byID(f.out[e.id]) {
		ed, g := f.edges[f.out[e.id][d]], f.gstate[d]
		if ed.state == model.EdgePending || g.state != model.GroupWaiting || ed.gen != g.gen {
			continue
		}
		if ed.state == model.EdgeSatisfied {
			g.succeeded--
		} else {
			g.impossible--
		}
		ed.state = model.EdgePending
	}
	// the group returns to the edges staged while the flow was built; an
	// await's edges stay as they are and no longer count
	ins, built := f.in[e.id], 0
	for _, id := range ins {
		if f.edges[id].gen == 0 {
			built++
		}
	}
	g := f.gstate[e.id]
	if g != nil && g.gen != 0 {
		g.gen, g.size, g.succeeded, g.impossible, g.state = 0, built, 0, 0, model.GroupSatisfied
	}
	if f.sealed && built == 0 {
		return false
	}
	// e is out of its lane index; hold puts it in blocked:dependencies.
	s.hold(e, now, as)
	if g != nil {
		g.succeeded, g.impossible, g.state = 0, 0, model.GroupWaiting
		for up, id := range ins {
			ed := f.edges[id]
			if ed.gen != 0 {
				continue
			}
			if u := s.execs[up]; u != nil && u.lifecyclePhase == model.PhaseTerminal && u.terminalOutcome == model.OutcomeSuccess {
				ed.state = model.EdgeSatisfied
				g.succeeded++
			} else {
				ed.state = model.EdgePending
			}
		}
		s.groupDecide(f, e.id, now)
	}
	return true
}

// addEdge records the pending edge ed (its id, ends, pass_result and
// generation set) as staged now.
func (f *flowRec) addEdge(ed *edgeRec, now int64) {
	f.graphRevision++
	f.edgeCount++
	f.lastMutationAt = now
	ed.state, ed.revision, ed.createdAt = model.EdgePending, f.graphRevision, now
	f.edges[ed.id] = ed
	if f.out[ed.upstream] == nil {
		f.out[ed.upstream] = make(map[model.ExecutionID]model.EdgeID)
	}
	f.out[ed.upstream][ed.downstream] = ed.id
	if f.in[ed.downstream] == nil {
		f.in[ed.downstream] = make(map[model.ExecutionID]model.EdgeID)
	}
	f.in[ed.downstream][ed.upstream] = ed.id
}

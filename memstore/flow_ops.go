package memstore

import (
	"context"
	"maps"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

var _ model.FlowStore = (*Store)(nil)

// FlowCreate implements model.FlowStore.
func (s *Store) FlowCreate(ctx context.Context, p *model.FlowCreateParams) (*model.FlowCreateResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.FlowCreateResult, error) {
		part := s.cfg.FlowPartition(p.Flow)
		if s.flows[p.Flow] != nil {
			return &model.FlowCreateResult{Outcome: model.FlowAlreadyExists, Partition: part}, nil
		}
		now := ms(p.Now)
		f := &flowRec{
			id: p.Flow, state: model.FlowOpen, createdAt: now, lastMutationAt: now,
			members: newIDSet(),
			edges:   make(map[model.EdgeID]*edgeRec),
			out:     make(map[model.ExecutionID]map[model.ExecutionID]model.EdgeID),
			in:      make(map[model.ExecutionID]map[model.ExecutionID]model.EdgeID),
			groups:  make(map[model.ExecutionID]model.EdgeGroupPolicy),
			gstate:  make(map[model.ExecutionID]*groupRec),
		}
		if len(p.Tags) > 0 {
			f.tags = maps.Clone(p.Tags)
		}
		s.flows[p.Flow] = f
		s.flowsPeak = max(s.flowsPeak, len(s.flows))
		s.flowIndex(part, false).Set(p.Flow)
		return &model.FlowCreateResult{Outcome: model.FlowCreated, Partition: part}, nil
	})
}

// FlowAddMember implements model.FlowStore.
func (s *Store) FlowAddMember(ctx context.Context, p *model.FlowAddMemberParams) (*model.FlowAddMemberResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.FlowAddMemberResult, error) {
		f, err := s.flowLoadOpen(p.Flow)
		if err != nil {
			return nil, err
		}
		e, err := s.loadExec(p.Execution)
		if err != nil {
			return nil, err
		}
		if cur, ok := s.flowOf[p.Execution]; ok {
			if cur != p.Flow {
				return nil, &model.Error{Code: model.CodeExecutionAlreadyInFlow, Field: "Execution", Detail: cur.String()}
			}
			return &model.FlowAddMemberResult{Outcome: model.AlreadyMember, MemberCount: f.memberCount, GraphRevision: f.graphRevision}, nil
		}
		if err := flowUnsealed(f); err != nil {
			return nil, err
		}
		if e.lifecyclePhase == model.PhaseTerminal {
			// A terminal execution's record is frozen (replay aside),
			// and its outcome could resolve no edge.
			return nil, e.notActive()
		}
		// Joining a flow mutates the execution (its Flow); a runnable
		// one is held until the flow is sealed.
		e.lastMutationAt = ms(p.Now)
		if e.lifecyclePhase == model.PhaseRunnable {
			s.hold(e, ms(p.Now), e.attemptState)
		}
		s.flowJoin(f, e, ms(p.Now))
		return &model.FlowAddMemberResult{Outcome: model.MemberAdded, MemberCount: f.memberCount, GraphRevision: f.graphRevision}, nil
	})
}

// EdgeStage implements model.FlowStore.
func (s *Store) EdgeStage(ctx context.Context, p *model.EdgeStageParams) (*model.EdgeStageResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.EdgeStageResult, error) {
		f, err := s.flowLoadOpen(p.Flow)
		if err != nil {
			return nil, err
		}
		if err := flowUnsealed(f); err != nil {
			return nil, err
		}
		if f.graphRevision != p.ExpectedGraphRevision {
			return nil, &model.Error{Code: model.CodeStaleGraphRevision, Field: "ExpectedGraphRevision",
				Detail: "current:" + strconv.FormatUint(f.graphRevision, 10)}
		}
		if err := flowMember(f, p.Upstream, "Upstream"); err != nil {
			return nil, err
		}
		if err := flowMember(f, p.Downstream, "Downstream"); err != nil {
			return nil, err
		}
		if _, ok := f.edges[p.Edge]; ok {
			return nil, &model.Error{Code: model.CodeDependencyExists, Field: "Edge", Detail: p.Edge.String()}
		}
		if id, ok := f.out[p.Upstream][p.Downstream]; ok {
			return nil, &model.Error{Code: model.CodeDependencyExists, Field: "Downstream", Detail: id.String()}
		}
		if d := s.execs[p.Downstream]; d == nil || !held(d) {
			return nil, downstreamStarted(d)
		}
		found, exceeded := graphReaches(f, p.Downstream, p.Upstream, p.SearchLimit())
		if exceeded {
			return nil, &model.Error{Code: model.CodeGraphSearchLimit, Field: "MaxSearchEdges", Detail: strconv.Itoa(p.SearchLimit())}
		}
		if found {
			return nil, &model.Error{Code: model.CodeCycleDetected, Field: "Upstream", Detail: p.Upstream.String()}
		}
		now := ms(p.Now)
		f.addEdge(&edgeRec{id: p.Edge, upstream: p.Upstream, downstream: p.Downstream, passResult: p.PassResult}, now)
		if f.gstate[p.Downstream] == nil {
			f.gstate[p.Downstream] = &groupRec{state: model.GroupWaiting}
		}
		if u := s.execs[p.Upstream]; u != nil && u.lifecyclePhase == model.PhaseTerminal {
			// The upstream has ended: its outcome resolves the edge now
			// (the flow is open, so no group decides).
			s.edgeResolve(f, f.edges[p.Edge], u)
		}
		return &model.EdgeStageResult{GraphRevision: f.graphRevision}, nil
	})
}

// EdgeGroupSet implements model.FlowStore.
func (s *Store) EdgeGroupSet(ctx context.Context, p *model.EdgeGroupSetParams) (*model.EdgeGroupSetResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.EdgeGroupSetResult, error) {
		f, err := s.flowLoadOpen(p.Flow)
		if err != nil {
			return nil, err
		}
		if err := flowUnsealed(f); err != nil {
			return nil, err
		}
		if err := flowMember(f, p.Downstream, "Downstream"); err != nil {
			return nil, err
		}
		if n := len(f.in[p.Downstream]); n > 0 {
			return nil, &model.Error{Code: model.CodeEdgeGroupFixed, Field: "Downstream", Detail: "edges:" + strconv.Itoa(n)}
		}
		if cur, ok := f.groups[p.Downstream]; ok && cur == p.Policy {
			return &model.EdgeGroupSetResult{Outcome: model.GroupAlreadySet}, nil
		}
		f.groups[p.Downstream] = p.Policy
		f.lastMutationAt = ms(p.Now)
		return &model.EdgeGroupSetResult{Outcome: model.GroupSet}, nil
	})
}

// FlowSeal implements model.FlowStore.
func (s *Store) FlowSeal(ctx context.Context, p *model.FlowSealParams) (*model.FlowSealResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.FlowSealResult, error) {
		f, err := s.flowLoadOpen(p.Flow)
		if err != nil {
			return nil, err
		}
		if f.sealed {
			return &model.FlowSealResult{Outcome: model.FlowAlreadySealed}, nil
		}
		now := ms(p.Now)
		f.sealed = true
		f.lastMutationAt = now
		s.tally = flowTally{}
		f.members.each(func(id model.ExecutionID) {
			if g := f.gstate[id]; g != nil {
				g.size = len(f.in[id])
			}
		})
		f.members.each(func(id model.ExecutionID) {
			if f.gstate[id] != nil {
				s.groupDecide(f, id, now)
			} else if e := s.execs[id]; held(e) {
				s.releaseHeld(e, now)
			}
		})
		s.flowLive(f, 0) // a flow whose members have all ended is finished
		s.flowFinishedRefile(f)
		return &model.FlowSealResult{Outcome: model.FlowSealedNow, Released: s.tally.released, Skipped: s.tally.skipped}, nil
	})
}

// FlowCancel implements model.FlowStore.
func (s *Store) FlowCancel(ctx context.Context, p *model.FlowCancelParams) (*model.FlowCancelResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.FlowCancelResult, error) {
		f, err := s.flowLoadOpen(p.Flow)
		if err != nil {
			return nil, err
		}
		if f.sealed {
			// a sealed flow whose members all ended is completed or failed
			if st := model.DeriveFlowState(f.state, f.sealed, s.flowCounts(f)); st != model.FlowOpen {
				return nil, &model.Error{Code: model.CodeFlowAlreadyTerminal, Detail: st.String()}
			}
		}
		now := ms(p.Now)
		f.state = model.FlowCancelled
		f.cancelPolicy, f.cancelReason, f.cancelledAt = p.Policy, p.Reason, now
		f.lastMutationAt = now
		res := &model.FlowCancelResult{Cancelled: []model.ExecutionID{}}
		defer func() {
			s.flowLive(f, 0) // finished once its members have all ended
			s.flowFinishedRefile(f)
		}()
		if p.Policy == model.CancelFlowOnly {
			return res, nil
		}
		// the members cancelled here resolve no edge (model.FlowCancelParams)
		s.flowCancelling = true
		f.members.each(func(id model.ExecutionID) {
			e := s.execs[id]
			if e == nil || e.lifecyclePhase == model.PhaseTerminal ||
				(p.Policy == model.CancelPending && e.lifecyclePhase != model.PhaseRunnable) {
				return
			}
			s.cancelExec(e, now, p.Reason, model.CancelledByFlow, true)
			res.Cancelled = append(res.Cancelled, id)
		})
		s.flowCancelling = false
		return res, nil
	})
}

// FlowDescribe implements model.FlowStore.
func (s *Store) FlowDescribe(ctx context.Context, p *model.FlowDescribeParams) (*model.FlowSnapshot, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.FlowSnapshot, error) {
		f, err := s.flowLoad(p.Flow)
		if err != nil {
			return nil, err
		}
		return s.flowSnapshot(f), nil
	})
}

// FlowList implements model.FlowStore.
func (s *Store) FlowList(ctx context.Context, p *model.FlowListParams) (*model.FlowListResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.FlowListResult, error) {
		res := &model.FlowListResult{}
		idx := s.flowIdx[p.Partition]
		if p.Finished {
			idx = s.flowDone[p.Partition]
		}
		if idx == nil {
			return res, nil
		}
		res.IDs, res.Next = pageAfter(idx.Ascend, p.After, p.Limit)
		return res, nil
	})
}

// pageAfter reads one page of an ordered set through ascend (a btree's
// Ascend, which starts at its pivot, inclusive): up to limit items after
// the exclusive cursor after (zero: from the start), and the last of them
// as next when more remain (zero otherwise).
func pageAfter[T comparable](ascend func(pivot T, iter func(T) bool), after T, limit int) (items []T, next T) {
	var zero T
	more := false
	ascend(after, func(x T) bool {
		if after != zero && x == after {
			return true
		}
		if len(items) == limit {
			more = true
			return false
		}
		items = append(items, x)
		return true
	})
	if more {
		next = items[len(items)-1]
	}
	return items, next
}

// FlowMemberList implements model.FlowStore.
func (s *Store) FlowMemberList(ctx context.Context, p *model.FlowMemberListParams) (*model.FlowMemberListResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.FlowMemberListResult, error) {
		f, err := s.flowLoad(p.Flow)
		if err != nil {
			return nil, err
		}
		res := &model.FlowMemberListResult{}
		res.IDs, res.Next = pageAfter(f.members.tree.Ascend, p.After, p.Limit)
		return res, nil
	})
}

// EdgeDescribe implements model.FlowStore.
func (s *Store) EdgeDescribe(ctx context.Context, p *model.EdgeDescribeParams) (*model.EdgeSnapshot, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.EdgeSnapshot, error) {
		f, err := s.flowLoad(p.Flow)
		if err != nil {
			return nil, err
		}
		e := f.edges[p.Edge]
		if e == nil {
			return nil, model.ErrEdgeNotFound
		}
		snap := edgeSnapshot(f, e)
		return &snap, nil
	})
}

// EdgeGroupDescribe implements model.FlowStore.
func (s *Store) EdgeGroupDescribe(ctx context.Context, p *model.EdgeGroupDescribeParams) (*model.EdgeGroupSnapshot, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.EdgeGroupSnapshot, error) {
		f, err := s.flowLoad(p.Flow)
		if err != nil {
			return nil, err
		}
		if err := flowMember(f, p.Downstream, "Downstream"); err != nil {
			return nil, err
		}
		g := &model.EdgeGroupSnapshot{Flow: f.id, Downstream: p.Downstream, Policy: model.AllOf, Edges: len(f.in[p.Downstream]),
			State: model.GroupWaiting}
		if pol, ok := f.groups[p.Downstream]; ok {
			g.Policy, g.Explicit = pol, true
		}
		if gs := f.gstate[p.Downstream]; gs != nil {
			g.Size, g.Succeeded, g.Impossible, g.State, g.Generation = gs.size, gs.succeeded, gs.impossible, gs.state, gs.gen
		}
		return g, nil
	})
}

// EdgeListOutgoing implements model.FlowStore.
func (s *Store) EdgeListOutgoing(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.edgeEnds(ctx, p, true)
}

// EdgeListIncoming implements model.FlowStore.
func (s *Store) EdgeListIncoming(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.edgeEnds(ctx, p, false)
}

func (s *Store) edgeEnds(ctx context.Context, p *model.EdgeListParams, outgoing bool) (*model.EdgeListResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.Execution, func(*execution) (*model.EdgeListResult, error) {
		res := &model.EdgeListResult{Edges: []model.EdgeSnapshot{}}
		fid, ok := s.flowOf[p.Execution]
		if !ok {
			return res, nil
		}
		f := s.flows[fid]
		res.Flow = fid
		ends := f.in[p.Execution]
		if outgoing {
			ends = f.out[p.Execution]
		}
		res.Edges = edgeList(f, ends)
		return res, nil
	})
}

// ExecutionAwaitChildren implements model.FlowStore
// (valkeystore/lua/execution_await_children.lua is the same step).
func (s *Store) ExecutionAwaitChildren(ctx context.Context, p *model.ExecutionAwaitChildrenParams) (*model.ExecutionAwaitChildrenResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionAwaitChildrenResult, error) {
		now := ms(p.Now)
		replay, err := checkFencedOp(e, opAwait, model.SourceWorker, p.Fence, now)
		if err != nil {
			return nil, err
		}
		fid, inFlow := s.flowOf[e.id]
		if replay != nil {
			return &model.ExecutionAwaitChildrenResult{Flow: fid, Generation: s.flows[fid].gstate[e.id].gens, Replayed: true}, nil
		}
		if !inFlow {
			return nil, &model.Error{Code: model.CodeExecutionNotInFlow, Field: "ID", Detail: e.id.String()}
		}
		f := s.flows[fid]
		if err := flowOpen(f); err != nil {
			return nil, err
		}
		if !f.sealed {
			return nil, model.ErrFlowNotSealed
		}
		for i := range p.Children {
			c := &p.Children[i]
			pre := "Children[" + strconv.Itoa(i) + "]."
			if _, ok := s.execs[c.Create.ID]; ok {
				return nil, &model.Error{Code: model.CodeInvalidInput, Field: pre + "Create.ID", Detail: "exists"}
			}
			if _, ok := f.edges[c.Edge]; ok {
				return nil, &model.Error{Code: model.CodeDependencyExists, Field: pre + "Edge", Detail: c.Edge.String()}
			}
		}

		// the parent: lease released, attempt paused, held
		if a := e.currentAttempt(); a != nil {
			a.Status = model.AttemptSuspended
		}
		s.removeFromLane(e)
		s.releaseLease(e, now, model.LeaseReleased, "await_children")
		e.delayUntil = 0
		s.hold(e, now, model.AttemptInterrupted)
		recordOp(e, opAwait, model.SourceWorker, p.Fence)
		g := f.gstate[e.id]
		if g == nil {
			g = &groupRec{}
			f.gstate[e.id] = g
		}
		g.gens++
		g.gen, g.size, g.succeeded, g.impossible, g.state = g.gens, len(p.Children), 0, 0, model.GroupWaiting

		// the children: members of the sealed flow with nothing to wait for
		for i := range p.Children {
			c := &p.Children[i]
			ce := s.newExec(&c.Create, now)
			s.makeRunnable(ce, now, ms(c.Create.DelayUntil), model.WaitingForDelay, model.AttemptPendingFirst)
			s.flowJoin(f, ce, now)
			f.addEdge(&edgeRec{id: c.Edge, upstream: ce.id, downstream: e.id, gen: g.gen}, now)
		}
		return &model.ExecutionAwaitChildrenResult{Flow: fid, Generation: g.gen}, nil
	})
}

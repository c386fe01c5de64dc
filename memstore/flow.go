package memstore

import (
	"bytes"
	"maps"
	"slices"

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
}

func flowLess(a, b model.FlowID) bool { return model.CompareFlowIDs(a, b) < 0 }

// flowIndex is the partition's flows (P:idx:{fp:N}:flows), in id order.
func (s *Store) flowIndex(part int) *btree.BTreeG[model.FlowID] {
	t := s.flowIdx[part]
	if t == nil {
		t = btree.NewBTreeGOptions(flowLess, btree.Options{NoLocks: true, Degree: 32})
		s.flowIdx[part] = t
	}
	return t
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

// flowSnapshot is the describe view of f.
func (s *Store) flowSnapshot(f *flowRec) *model.FlowSnapshot {
	snap := &model.FlowSnapshot{
		ID: f.id, Partition: s.cfg.FlowPartition(f.id), State: f.state,
		MemberCount: f.memberCount, EdgeCount: f.edgeCount, GraphRevision: f.graphRevision,
		CreatedAt: tm(f.createdAt), LastMutationAt: tm(f.lastMutationAt),
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
		CreatedAt: tm(e.createdAt),
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

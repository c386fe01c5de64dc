package valkeystore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

var _ model.FlowStore = (*Store)(nil)

// FlowCreate implements model.FlowStore.
func (s *Store) FlowCreate(ctx context.Context, p *model.FlowCreateParams) (*model.FlowCreateResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowCreate, s.keys.flowKeys(s.cfg, p.Flow), args{
		"now": p.Now, "flow": p.Flow, "tags": encodeTags(p.Tags),
	})
	if err != nil {
		return nil, err
	}
	res := &model.FlowCreateResult{
		Outcome:   enum(r, "status", false, model.ParseFlowCreateOutcome),
		Partition: s.cfg.FlowPartition(p.Flow),
	}
	return res, r.err()
}

// FlowAddMember implements model.FlowStore.
func (s *Store) FlowAddMember(ctx context.Context, p *model.FlowAddMemberParams) (*model.FlowAddMemberResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowAddMember, s.keys.memberKeys(s.cfg, p.Flow, p.Execution), args{
		"now": p.Now, "flow": p.Flow, "id": p.Execution,
	})
	if err != nil {
		return nil, err
	}
	res := &model.FlowAddMemberResult{
		Outcome:       enum(r, "status", false, model.ParseFlowAddMemberOutcome),
		MemberCount:   r.int("member_count"),
		GraphRevision: r.u64("graph_revision"),
	}
	return res, r.err()
}

// EdgeStage implements model.FlowStore.
func (s *Store) EdgeStage(ctx context.Context, p *model.EdgeStageParams) (*model.EdgeStageResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowEdgeStage, s.keys.flowKeys(s.cfg, p.Flow), args{
		"now": p.Now, "edge": p.Edge, "upstream": p.Upstream, "downstream": p.Downstream,
		"expected": p.ExpectedGraphRevision, "pass_result": p.PassResult, "limit": p.SearchLimit(),
	})
	if err != nil {
		return nil, err
	}
	res := &model.EdgeStageResult{GraphRevision: r.u64("graph_revision")}
	return res, r.err()
}

// EdgeGroupSet implements model.FlowStore.
func (s *Store) EdgeGroupSet(ctx context.Context, p *model.EdgeGroupSetParams) (*model.EdgeGroupSetResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowEdgeGroupSet, s.keys.flowKeys(s.cfg, p.Flow), args{
		"now": p.Now, "downstream": p.Downstream, "kind": p.Policy.Kind,
		"quorum": p.Policy.Quorum, "on_satisfied": p.Policy.OnSatisfied,
	})
	if err != nil {
		return nil, err
	}
	res := &model.EdgeGroupSetResult{Outcome: enum(r, "status", false, model.ParseEdgeGroupSetOutcome)}
	return res, r.err()
}

// FlowSeal implements model.FlowStore.
func (s *Store) FlowSeal(ctx context.Context, p *model.FlowSealParams) (*model.FlowSealResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowSeal, s.keys.flowKeys(s.cfg, p.Flow), args{"now": p.Now, "flow": p.Flow.String()})
	if err != nil {
		return nil, err
	}
	res := &model.FlowSealResult{
		Outcome:  enum(r, "status", false, model.ParseFlowSealOutcome),
		Released: r.int("released"),
		Skipped:  r.int("skipped"),
	}
	return res, r.err()
}

// FlowCancel implements model.FlowStore.
func (s *Store) FlowCancel(ctx context.Context, p *model.FlowCancelParams) (*model.FlowCancelResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowCancel, s.keys.flowKeys(s.cfg, p.Flow), args{
		"now": p.Now, "policy": p.Policy, "reason": p.Reason, "flow": p.Flow.String(),
	})
	if err != nil {
		return nil, err
	}
	res := &model.FlowCancelResult{Cancelled: []model.ExecutionID{}}
	res.Cancelled = append(res.Cancelled, r.execIDs("cancelled")...)
	return res, r.err()
}

// FlowDescribe implements model.FlowStore.
func (s *Store) FlowDescribe(ctx context.Context, p *model.FlowDescribeParams) (*model.FlowSnapshot, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowDescribe, s.keys.flowKeys(s.cfg, p.Flow), args{})
	if err != nil {
		return nil, err
	}
	c := r.obj("core")
	res := &model.FlowSnapshot{
		ID: p.Flow, Partition: s.cfg.FlowPartition(p.Flow),
		State:          enum(c, "state", false, model.ParseFlowState),
		MemberCount:    c.int("member_count"),
		EdgeCount:      c.int("edge_count"),
		GraphRevision:  c.u64("graph_revision"),
		Sealed:         c.has("sealed") && c.bool("sealed"), // absent until sealed
		CreatedAt:      c.time("created_at"),
		LastMutationAt: c.time("last_mutation_at"),
	}
	res.Counts = map[model.PublicState]int{}
	for _, st := range r.strs("members") {
		var v [3]string
		if n, _ := fmt.Sscan(st, &v[0], &v[1], &v[2]); n != 3 {
			r.fail("members: %q", st)
			continue
		}
		lp, ok1 := model.ParseLifecyclePhase(v[0])
		es, ok2 := model.ParseEligibilityState(v[1])
		to, ok3 := model.ParseTerminalOutcome(v[2])
		if !ok1 || !ok2 || !ok3 {
			r.fail("members: %q", st)
			continue
		}
		res.Counts[model.DerivePublicState(lp, es, to)]++
	}
	res.State = model.DeriveFlowState(res.State, res.Sealed, res.Counts)
	if c.has("cancel_policy") { // absent until cancelled
		res.CancelPolicy = enum(c, "cancel_policy", false, model.ParseFlowCancelPolicy)
		res.CancelReason = c.str("cancel_reason")
		res.CancelledAt = c.time("cancelled_at")
	}
	if tags := r.strMap("tags"); len(tags) > 0 {
		res.Tags = tags
	}
	return res, r.err()
}

// FlowList implements model.FlowStore.
func (s *Store) FlowList(ctx context.Context, p *model.FlowListParams) (*model.FlowListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	// The members are canonical lower-case UUIDs, whose text order is
	// their byte order (memstore's). The cursor is exclusive.
	after := ""
	if !p.After.IsZero() {
		after = "(" + p.After.String()
	}
	index := "flows"
	if p.Finished {
		index = "flows_done"
	}
	r, err := s.run(ctx, scriptFlowList, map[string]string{"flows": s.keys.idx(p.Partition) + index}, args{
		"after": after, "limit": p.Limit,
	})
	if err != nil {
		return nil, err
	}
	res := &model.FlowListResult{}
	for _, id := range r.strs("ids") {
		f, perr := model.ParseFlowID(id)
		if perr != nil {
			r.fail("ids: %v", perr)
		}
		res.IDs = append(res.IDs, f)
	}
	res.Next = model.FlowID(r.uuid("next"))
	return res, r.err()
}

// FlowMemberList implements model.FlowStore (lua/flow_member_list.lua).
func (s *Store) FlowMemberList(ctx context.Context, p *model.FlowMemberListParams) (*model.FlowMemberListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	// The members are ids of the flow's partition: their text order is
	// the UUID order memstore lists in. The cursor is exclusive.
	after := ""
	if !p.After.IsZero() {
		after = "(" + p.After.String()
	}
	r, err := s.run(ctx, scriptFlowMemberList, s.keys.flowKeys(s.cfg, p.Flow), args{"after": after, "limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.FlowMemberListResult{}
	res.IDs = append(res.IDs, r.execIDs("ids")...)
	res.Next = r.execID("next")
	return res, r.err()
}

// EdgeDescribe implements model.FlowStore.
func (s *Store) EdgeDescribe(ctx context.Context, p *model.EdgeDescribeParams) (*model.EdgeSnapshot, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowEdgeDescribe, s.keys.flowKeys(s.cfg, p.Flow), args{"edge": p.Edge})
	if err != nil {
		return nil, err
	}
	res := edgeSnapshot(p.Flow, r.obj("edge"))
	return &res, r.err()
}

// EdgeGroupDescribe implements model.FlowStore.
func (s *Store) EdgeGroupDescribe(ctx context.Context, p *model.EdgeGroupDescribeParams) (*model.EdgeGroupSnapshot, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowEdgeGroupDescribe, s.keys.flowKeys(s.cfg, p.Flow), args{"downstream": p.Downstream})
	if err != nil {
		return nil, err
	}
	res := &model.EdgeGroupSnapshot{Flow: p.Flow, Downstream: p.Downstream, Policy: model.AllOf, Edges: r.int("edges"),
		State: model.GroupWaiting}
	if g := r.obj("gstate"); g.has("state") {
		res.Size, res.Succeeded, res.Impossible = g.int("size"), g.int("succeeded"), g.int("impossible")
		res.State = enum(g, "state", false, model.ParseGroupState)
		if g.has("gen") {
			res.Generation = g.int("gen")
		}
	}
	if g := r.obj("group"); g.has("kind") {
		res.Explicit = true
		res.Policy = model.EdgeGroupPolicy{
			Kind:        enum(g, "kind", false, model.ParseEdgeGroupKind),
			Quorum:      g.int("quorum"),
			OnSatisfied: enum(g, "on_satisfied", true, model.ParseSiblingPolicy),
		}
	}
	return res, r.err()
}

// EdgeListOutgoing implements model.FlowStore.
func (s *Store) EdgeListOutgoing(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.edgeEnds(ctx, p, "out")
}

// EdgeListIncoming implements model.FlowStore.
func (s *Store) EdgeListIncoming(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.edgeEnds(ctx, p, "in")
}

func (s *Store) edgeEnds(ctx context.Context, p *model.EdgeListParams, dir string) (*model.EdgeListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowEdgeList, s.keys.execFlowKeys(p.Execution), args{"dir": dir, "id": p.Execution})
	if err != nil {
		return nil, err
	}
	res := &model.EdgeListResult{Flow: model.FlowID(r.uuid("flow")), Edges: []model.EdgeSnapshot{}}
	for _, e := range r.objs("edges") {
		res.Edges = append(res.Edges, edgeSnapshot(res.Flow, e))
	}
	slices.SortFunc(res.Edges, func(a, b model.EdgeSnapshot) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return res, r.err()
}

// edgeSnapshot decodes an edge's hash (F:edge:<edge>, keys.go).
func edgeSnapshot(f model.FlowID, e *reply) model.EdgeSnapshot {
	gen := 0
	if e.has("gen") { // only an await's edges store one
		gen = e.int("gen")
	}
	return model.EdgeSnapshot{
		Generation:    gen,
		ID:            model.EdgeID(e.uuid("id")),
		Flow:          f,
		Upstream:      e.execID("upstream"),
		Downstream:    e.execID("downstream"),
		PassResult:    e.bool("pass_result"),
		State:         enum(e, "state", false, model.ParseEdgeState),
		GraphRevision: e.u64("revision"),
		CreatedAt:     e.time("created_at"),
	}
}

// flowID reads a flow id field ("" is zero).
func (r *reply) flowID(name string) model.FlowID { return model.FlowID(r.uuid(name)) }

// flowArg is a flow id argument: "" for none.
func flowArg(f model.FlowID) string {
	if f.IsZero() {
		return ""
	}
	return f.String()
}

// ExecutionAwaitChildren implements model.FlowStore
// (lua/execution_await_children.lua).
func (s *Store) ExecutionAwaitChildren(ctx context.Context, p *model.ExecutionAwaitChildrenParams) (*model.ExecutionAwaitChildrenResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	var b strings.Builder
	for i := range p.Children {
		c := &p.Children[i]
		a := createArgs(&c.Create)
		for _, name := range createFields {
			netstring(&b, argString(a[name]))
		}
		netstring(&b, c.Edge.String())
	}
	r, err := s.run(ctx, scriptExecutionAwaitChildren, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "children": b.String(),
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionAwaitChildrenResult{Flow: r.flowID("flow"), Generation: r.int("generation"), Replayed: r.bool("replayed")}
	return res, r.err()
}

package valkeystore

import (
	"context"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionDelete implements model.RetentionStore
// (lua/execution_delete.lua).
func (s *Store) ExecutionDelete(ctx context.Context, p *model.ExecutionDeleteParams) (*model.ExecutionDeleteResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionDelete, s.keys.execKeys(p.ID), args{"now": p.Now, "id": p.ID, "due": p.Due})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionDeleteResult{Outcome: enum(r, "outcome", false, model.ParseDeleteOutcome)}
	switch res.Outcome {
	case model.DeleteDeleted:
		res.Budgets = parseBudgets(r, r.str("budgets"))
	case model.DeleteInFlow:
		res.Flow = r.flowID("flow")
	}
	return res, r.err()
}

// FlowDelete implements model.FlowDeleter (lua/flow_delete.lua).
func (s *Store) FlowDelete(ctx context.Context, p *model.FlowDeleteParams) (*model.FlowDeleteResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowDelete, s.keys.flowKeys(s.cfg, p.Flow),
		args{"now": p.Now, "flow": p.Flow.String(), "due": p.Due, "max": strconv.Itoa(model.MaxFlowDeleteMembers)})
	if err != nil {
		return nil, err
	}
	res := &model.FlowDeleteResult{Outcome: enum(r, "outcome", false, model.ParseDeleteOutcome)}
	switch res.Outcome {
	case model.DeleteDeleted:
		m := r.strs("members")
		for i := 0; i+1 < len(m); i += 2 {
			id, perr := model.ParseExecutionID(m[i])
			if perr != nil {
				r.fail("members: malformed id %q", m[i])
				break
			}
			res.Members = append(res.Members, model.DeletedMember{ID: id, Budgets: parseBudgets(r, m[i+1])})
		}
	case model.DeleteNotYetDue:
		res.DueAt = r.time("due_at")
	}
	return res, r.err()
}

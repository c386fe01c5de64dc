package valkeystore

import (
	"context"

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
	if res.Outcome == model.DeleteDeleted {
		res.Budgets = parseBudgets(r, r.str("budgets"))
	}
	return res, r.err()
}

package memstore

import (
	"context"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

// Retention and delete (model.RetentionStore; valkeystore's
// lua/execution_delete.lua). A terminal execution whose retention for its
// outcome is positive is in its partition's retention set, scored by its
// terminal time plus that retention (retentionAdd); leaving the terminal
// phase (a replay) takes it out (removeFromLane).

// retentionAdd files a terminal e in the retention set when its outcome
// has a retention.
func (s *Store) retentionAdd(e *execution, now int64, to model.TerminalOutcome) {
	if d := e.keeps().For(to); d > 0 {
		s.part(e.id.Partition()).retention.add(e.id, now+d.Milliseconds())
	}
}

// keeps is e's retention (zero: kept for good).
func (e *execution) keeps() model.Retention {
	if e.retention == nil {
		return model.Retention{}
	}
	return *e.retention
}

// internRetention returns the shared copy of r (nil for zero).
func (s *Store) internRetention(r model.Retention) *model.Retention {
	if r == (model.Retention{}) {
		return nil
	}
	if p := s.retentions[r]; p != nil {
		return p
	}
	if s.retentions == nil {
		s.retentions = make(map[model.Retention]*model.Retention)
	}
	p := &r
	s.retentions[r] = p
	return p
}

// ExecutionDelete implements model.RetentionStore.
func (s *Store) ExecutionDelete(ctx context.Context, p *model.ExecutionDeleteParams) (*model.ExecutionDeleteResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionDeleteResult, error) {
		now := ms(p.Now)
		pt := s.part(p.ID.Partition())
		clean := func(o model.DeleteOutcome) (*model.ExecutionDeleteResult, error) {
			pt.retention.remove(p.ID)
			return &model.ExecutionDeleteResult{Outcome: o}, nil
		}
		e := s.execs[p.ID]
		fid, inFlow := s.flowOf[p.ID]
		switch {
		case e == nil && p.Due:
			return clean(model.DeleteNotFoundCleaned)
		case e == nil:
			return nil, model.ErrNotFound
		case e.lifecyclePhase != model.PhaseTerminal && p.Due:
			return clean(model.DeleteNotTerminalCleaned)
		case e.lifecyclePhase != model.PhaseTerminal:
			return nil, model.ErrNotTerminal
		case inFlow && !p.Due:
			return nil, model.ErrInFlow
		}
		if p.Due {
			if at, ok := pt.retention.scores[p.ID]; !ok || at > now {
				return &model.ExecutionDeleteResult{Outcome: model.DeleteNotYetDue}, nil
			}
			if inFlow {
				// the entry stands for its flow: FlowDelete decides
				return &model.ExecutionDeleteResult{Outcome: model.DeleteInFlow, Flow: fid}, nil
			}
		}
		s.deleteExec(pt, e)
		res := &model.ExecutionDeleteResult{Outcome: model.DeleteDeleted}
		if len(e.budgets) > 0 {
			res.Budgets = cloneBudgets(e.budgets)
		}
		return res, nil
	})
}

// FlowDelete implements model.FlowDeleter: the flow and every member go in
// one step, each member through deleteExec as ExecutionDelete deletes it.
func (s *Store) FlowDelete(ctx context.Context, p *model.FlowDeleteParams) (*model.FlowDeleteResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.FlowDeleteResult, error) {
		now := ms(p.Now)
		f := s.flows[p.Flow]
		if f == nil {
			if p.Due {
				return &model.FlowDeleteResult{Outcome: model.DeleteNotFoundCleaned}, nil
			}
			return nil, model.ErrFlowNotFound
		}
		if n := f.members.len(); n > model.MaxFlowDeleteMembers {
			if p.Due {
				s.flowRefile(f, 0, true)
				return &model.FlowDeleteResult{Outcome: model.DeleteTooLargeCleaned}, nil
			}
			return nil, &model.Error{Code: model.CodeFlowTooLarge, Field: "Flow", Detail: strconv.Itoa(n)}
		}
		if live := s.flowUnfinished(f); live != "" {
			if p.Due {
				s.flowRefile(f, 0, true)
				return &model.FlowDeleteResult{Outcome: model.DeleteNotTerminalCleaned}, nil
			}
			return nil, &model.Error{Code: model.CodeExecutionNotTerminal, Field: "Flow", Detail: live}
		}
		if p.Due {
			if at, keep := s.flowDue(f); keep || at > now {
				s.flowRefile(f, at, keep)
				res := &model.FlowDeleteResult{Outcome: model.DeleteNotYetDue}
				if !keep {
					res.DueAt = tm(at)
				}
				return res, nil
			}
		}
		res := &model.FlowDeleteResult{Outcome: model.DeleteDeleted}
		part := s.cfg.FlowPartition(f.id)
		pt := s.part(part)
		f.members.each(func(id model.ExecutionID) {
			if e := s.execs[id]; e != nil {
				s.deleteExec(pt, e)
				res.Members = append(res.Members, model.DeletedMember{ID: id, Budgets: cloneBudgets(e.budgets)})
			}
			delete(s.flowOf, id)
		})
		s.flowIndex(part, false).Delete(f.id)
		s.flowIndex(part, true).Delete(f.id)
		delete(s.flows, f.id)
		s.flows = shrink(s.flows, &s.flowsPeak)
		s.flowOf = shrink(s.flowOf, &s.flowOfPeak)
		return res, nil
	})
}

package memstore

import (
	"context"

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
		_, inFlow := s.flowOf[p.ID]
		switch {
		case e == nil && p.Due:
			return clean(model.DeleteNotFoundCleaned)
		case e == nil:
			return nil, model.ErrNotFound
		case e.lifecyclePhase != model.PhaseTerminal && p.Due:
			return clean(model.DeleteNotTerminalCleaned)
		case e.lifecyclePhase != model.PhaseTerminal:
			return nil, model.ErrNotTerminal
		case inFlow && p.Due:
			return clean(model.DeleteInFlowCleaned)
		case inFlow:
			return nil, model.ErrInFlow
		}
		if p.Due {
			if at, ok := pt.retention.scores[p.ID]; !ok || at > now {
				return &model.ExecutionDeleteResult{Outcome: model.DeleteNotYetDue}, nil
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

// deleteExec removes terminal e and everything it owns from the store:
// its record (attempts, history, streams, suspension and signals are
// fields of it), its waitpoints and every index entry.
func (s *Store) deleteExec(pt *partition, e *execution) {
	s.countMove(e, e.counted(), 0)
	s.removeFromLane(e)
	pt.retention.remove(e.id)
	pt.all.remove(e.id)
	pt.wpExpiry.remove(e.id)
	pt.suspTimeout.remove(e.id)
	pt.suspended.remove(e.id)
	for _, w := range e.waitpoints {
		delete(pt.waitpoints, w.id)
	}
	if e.idemKey != "" {
		ik := idemKey{e.id.Partition(), e.namespace, e.idemKey}
		if ent, ok := s.idem[ik]; ok && ent.id == e.id {
			delete(s.idem, ik)
			s.idemGC.tree.Delete(idemItem{ent.expiresAt, ik})
		}
	}
	delete(s.execs, e.id)
	s.execs = shrink(s.execs, &s.execPeak)
}

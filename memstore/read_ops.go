package memstore

import (
	"context"
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionDescribe implements model.ReadStore.
func (s *Store) ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error) {
	return withExec(s, ctx, s.cfg.CheckExecutionID(p.ID), p.ID, func(e *execution) (*model.ExecutionSnapshot, error) {
		snap := e.snapshot()
		snap.Flow = s.flowOf[p.ID]
		return snap, nil
	})
}

// ExecutionList implements model.ReadStore.
func (s *Store) ExecutionList(ctx context.Context, p *model.ExecutionListParams) (*model.ExecutionListResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionListResult, error) {
		res := &model.ExecutionListResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		more, seen := false, 0
		var last model.ExecutionID
		filter := !p.Filter.IsZero()
		pt.all.tree.Ascend(p.After, func(id model.ExecutionID) bool {
			if !p.After.IsZero() && id == p.After {
				return true
			}
			if seen == p.Limit {
				more = true
				return false
			}
			seen++
			last = id
			if filter {
				e := s.execs[id]
				if e == nil || !p.Filter.Matches(e.namespace, e.lane, e.kind, e.vector().PublicState(), e.tags) {
					return true
				}
			}
			res.IDs = append(res.IDs, id)
			return true
		})
		if more {
			res.Next = last
		}
		res.Examined = seen
		return res, nil
	})
}

// ExecutionResult implements model.ReadStore.
func (s *Store) ExecutionResult(ctx context.Context, p *model.ExecutionResultParams) (*model.ExecutionResultResult, error) {
	return withExec(s, ctx, s.cfg.CheckExecutionID(p.ID), p.ID, func(e *execution) (*model.ExecutionResultResult, error) {
		if !e.hasResult {
			return nil, model.ErrResultNotFound
		}
		return &model.ExecutionResultResult{Result: cloneBytes(e.result)}, nil
	})
}

// ExecutionPayload implements model.ReadStore.
func (s *Store) ExecutionPayload(ctx context.Context, p *model.ExecutionPayloadParams) (*model.ExecutionPayloadResult, error) {
	return withExec(s, ctx, s.cfg.CheckExecutionID(p.ID), p.ID, func(e *execution) (*model.ExecutionPayloadResult, error) {
		return &model.ExecutionPayloadResult{Payload: cloneBytes(e.payload)}, nil
	})
}

// AttemptList implements model.ReadStore.
func (s *Store) AttemptList(ctx context.Context, p *model.AttemptListParams) (*model.AttemptListResult, error) {
	return withExec(s, ctx, s.cfg.CheckExecutionID(p.ID), p.ID, func(e *execution) (*model.AttemptListResult, error) {
		return &model.AttemptListResult{Attempts: slices.Clone(e.attempts)}, nil
	})
}

// LeaseHistory implements model.ReadStore.
func (s *Store) LeaseHistory(ctx context.Context, p *model.LeaseHistoryParams) (*model.LeaseHistoryResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.LeaseHistoryResult, error) {
		res := &model.LeaseHistoryResult{}
		for _, ev := range e.history {
			if ev.Seq <= p.AfterSeq {
				continue
			}
			if len(res.Events) == p.Limit {
				break
			}
			res.Events = append(res.Events, ev)
		}
		return res, nil
	})
}

// ExecutionIndexes implements model.IndexInspector.
func (s *Store) ExecutionIndexes(ctx context.Context, p *model.ExecutionIndexesParams) (*model.ExecutionIndexesResult, error) {
	return withLock(s, ctx, s.cfg.CheckExecutionID(p.ID), func() (*model.ExecutionIndexesResult, error) {
		res := &model.ExecutionIndexesResult{}
		pt := s.parts[p.ID.Partition()]
		if pt == nil {
			return res, nil
		}
		id := p.ID
		add := func(name string) { res.Indexes = append(res.Indexes, name) }
		for _, name := range pt.laneNames {
			l := pt.lanes[name]
			prefix := "lane:" + string(name) + ":"
			for _, z := range []struct {
				n string
				z *zset
			}{{"eligible", l.eligible}, {"delayed", l.delayed}, {"active", l.active},
				{"terminal", l.terminal}, {"suspended", l.suspended}} {
				if z.z.has(id) {
					add(prefix + z.n)
				}
			}
			for _, es := range blockedStates {
				if l.blocked[es].has(id) {
					add(prefix + blockedIndex(es))
				}
			}
		}
		if pt.leaseExpiry.has(id) {
			add("lease_expiry")
		}
		if pt.attemptTimeout.has(id) {
			add("attempt_timeout")
		}
		if pt.deadline.has(id) {
			add("execution_deadline")
		}
		if pt.suspended.has(id) {
			add("suspended")
		}
		if pt.suspTimeout.has(id) {
			add(model.IndexSuspensionTimeout.String())
		}
		if pt.wpExpiry.has(id) {
			add(model.IndexWaitpointExpiry.String())
		}
		if pt.retention.has(id) {
			add(model.IndexRetention.String())
		}
		for w, set := range pt.workerLeases {
			if set.has(id) {
				add("worker:" + string(w) + ":leases")
			}
		}
		if pt.all.has(id) {
			add("all_executions")
		}
		slices.Sort(res.Indexes)
		return res, nil
	})
}

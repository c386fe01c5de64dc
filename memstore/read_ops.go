package memstore

import (
	"context"
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionDescribe implements model.ReadStore.
func (s *Store) ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, err := s.lookup(p.ID)
	if err != nil {
		return nil, err
	}
	return e.snapshot(), nil
}

// ExecutionList implements model.ReadStore.
func (s *Store) ExecutionList(ctx context.Context, p *model.ExecutionListParams) (*model.ExecutionListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	res := &model.ExecutionListResult{}
	pt := s.parts[p.Partition]
	if pt == nil {
		return res, nil
	}
	more := false
	pt.all.tree.Ascend(p.After, func(id model.ExecutionID) bool {
		if !p.After.IsZero() && id == p.After {
			return true
		}
		if len(res.IDs) == p.Limit {
			more = true
			return false
		}
		res.IDs = append(res.IDs, id)
		return true
	})
	if more {
		res.Next = res.IDs[len(res.IDs)-1]
	}
	return res, nil
}

// ExecutionResult implements model.ReadStore.
func (s *Store) ExecutionResult(ctx context.Context, p *model.ExecutionResultParams) (*model.ExecutionResultResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, err := s.lookup(p.ID)
	if err != nil {
		return nil, err
	}
	if !e.hasResult {
		return nil, model.ErrResultNotFound
	}
	return &model.ExecutionResultResult{Result: cloneBytes(e.result)}, nil
}

// ExecutionPayload implements model.ReadStore.
func (s *Store) ExecutionPayload(ctx context.Context, p *model.ExecutionPayloadParams) (*model.ExecutionPayloadResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, err := s.lookup(p.ID)
	if err != nil {
		return nil, err
	}
	return &model.ExecutionPayloadResult{Payload: cloneBytes(e.payload)}, nil
}

// AttemptList implements model.ReadStore.
func (s *Store) AttemptList(ctx context.Context, p *model.AttemptListParams) (*model.AttemptListResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, err := s.lookup(p.ID)
	if err != nil {
		return nil, err
	}
	return &model.AttemptListResult{Attempts: slices.Clone(e.attempts)}, nil
}

// LeaseHistory implements model.ReadStore.
func (s *Store) LeaseHistory(ctx context.Context, p *model.LeaseHistoryParams) (*model.LeaseHistoryResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, err := s.lookup(p.ID)
	if err != nil {
		return nil, err
	}
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
}

// ExecutionIndexes implements model.ReadStore.
func (s *Store) ExecutionIndexes(ctx context.Context, p *model.ExecutionIndexesParams) (*model.ExecutionIndexesResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
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
				add(prefix + blockedIndexName[es])
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
}

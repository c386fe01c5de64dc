package memstore

import (
	"context"
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// WorkerRegister implements model.WorkerStore.
func (s *Store) WorkerRegister(ctx context.Context, p *model.WorkerRegisterParams) (*model.WorkerRegisterResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	caps, _ := model.NormalizeCapabilities("capabilities", p.Capabilities)
	lanes := slices.Clone(p.Lanes)
	slices.Sort(lanes)
	lanes = slices.Compact(lanes)
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := ms(p.Now)
	m := s.ns(p.Namespace)
	old := m[p.WorkerInstanceID]
	status := model.WorkerRegistered
	registeredAt := now
	if old != nil && workerAlive(old, now) {
		if old.session != p.SessionID {
			return nil, model.NewError(model.CodeDuplicateWorkerInstance, string(p.WorkerInstanceID))
		}
		status = model.WorkerRefreshed
		registeredAt = old.registeredAt
	}
	ttl := p.TTL.Milliseconds()
	m[p.WorkerInstanceID] = &workerRec{
		workerID: p.WorkerID, instance: p.WorkerInstanceID, session: p.SessionID,
		lanes: lanes, caps: caps, ttl: ttl, registeredAt: registeredAt,
		heartbeatAt: now, expiresAt: now + ttl,
	}
	return &model.WorkerRegisterResult{Outcome: status, ExpiresAt: tm(now + ttl)}, nil
}

// WorkerHeartbeat implements model.WorkerStore.
func (s *Store) WorkerHeartbeat(ctx context.Context, p *model.WorkerHeartbeatParams) (*model.WorkerHeartbeatResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.WorkerHeartbeatResult, error) {
		now := ms(p.Now)
		w := s.workers[p.Namespace][p.WorkerInstanceID]
		if w == nil || !workerAlive(w, now) {
			return nil, model.ErrWorkerNotRegistered
		}
		if w.session != p.SessionID {
			return nil, model.NewError(model.CodeDuplicateWorkerInstance, string(p.WorkerInstanceID))
		}
		w.ttl = p.TTL.Milliseconds()
		w.heartbeatAt = now
		w.expiresAt = now + w.ttl
		return &model.WorkerHeartbeatResult{ExpiresAt: tm(w.expiresAt)}, nil
	})
}

// WorkerDeregister implements model.WorkerStore.
func (s *Store) WorkerDeregister(ctx context.Context, p *model.WorkerDeregisterParams) (*model.WorkerDeregisterResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.WorkerDeregisterResult, error) {
		m := s.workers[p.Namespace]
		w := m[p.WorkerInstanceID]
		if w == nil || w.session != p.SessionID {
			return &model.WorkerDeregisterResult{}, nil
		}
		delete(m, p.WorkerInstanceID)
		return &model.WorkerDeregisterResult{Removed: true}, nil
	})
}

// WorkerExpire implements model.WorkerStore.
func (s *Store) WorkerExpire(ctx context.Context, p *model.WorkerExpireParams) (*model.WorkerExpireResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.WorkerExpireResult, error) {
		now := ms(p.Now)
		m := s.workers[p.Namespace]
		res := &model.WorkerExpireResult{}
		for _, id := range sortedInstances(m) {
			if len(res.Removed) >= p.Limit {
				break
			}
			if !workerAlive(m[id], now) {
				delete(m, id)
				res.Removed = append(res.Removed, id)
			}
		}
		return res, nil
	})
}

// WorkerList implements model.WorkerStore.
func (s *Store) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.WorkerListResult, error) {
		now := ms(p.Now)
		m := s.workers[p.Namespace]
		res := &model.WorkerListResult{}
		for _, id := range sortedInstances(m) {
			if w := m[id]; workerAlive(w, now) {
				res.Workers = append(res.Workers, w.info(p.Namespace))
			}
		}
		return res, nil
	})
}

package valkeystore

import (
	"context"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// WorkerRegister implements model.WorkerStore.
func (s *Store) WorkerRegister(ctx context.Context, p *model.WorkerRegisterParams) (*model.WorkerRegisterResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lanes := make([]string, 0, len(p.Lanes))
	for _, l := range p.Lanes {
		lanes = append(lanes, string(l))
	}
	slices.Sort(lanes)
	lanes = slices.Compact(lanes)
	r, err := s.run(ctx, scriptWorkerRegister, s.keys.workerKeys(p.Namespace, p.WorkerInstanceID), args{
		"now": p.Now, "worker_id": p.WorkerID, "worker_instance_id": p.WorkerInstanceID,
		"session_id": p.SessionID, "lanes": strings.Join(lanes, ","),
		"capabilities": normCaps("capabilities", p.Capabilities), "ttl": p.TTL, "gc_slack": s.gcSlack,
	})
	if err != nil {
		return nil, err
	}
	res := &model.WorkerRegisterResult{Outcome: enum(r, "status", false, model.ParseWorkerRegisterOutcome), ExpiresAt: r.time("expires_at")}
	return res, r.err()
}

// WorkerHeartbeat implements model.WorkerStore.
func (s *Store) WorkerHeartbeat(ctx context.Context, p *model.WorkerHeartbeatParams) (*model.WorkerHeartbeatResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWorkerHeartbeat, s.keys.workerKeys(p.Namespace, p.WorkerInstanceID), args{
		"now": p.Now, "worker_instance_id": p.WorkerInstanceID, "session_id": p.SessionID,
		"ttl": p.TTL, "gc_slack": s.gcSlack,
	})
	if err != nil {
		return nil, err
	}
	res := &model.WorkerHeartbeatResult{ExpiresAt: r.time("expires_at")}
	return res, r.err()
}

// WorkerDeregister implements model.WorkerStore.
func (s *Store) WorkerDeregister(ctx context.Context, p *model.WorkerDeregisterParams) (*model.WorkerDeregisterResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWorkerDeregister, s.keys.workerKeys(p.Namespace, p.WorkerInstanceID), args{
		"now": p.Now, "worker_instance_id": p.WorkerInstanceID, "session_id": p.SessionID,
	})
	if err != nil {
		return nil, err
	}
	res := &model.WorkerDeregisterResult{Removed: r.bool("removed")}
	return res, r.err()
}

// WorkerExpire implements model.WorkerStore.
func (s *Store) WorkerExpire(ctx context.Context, p *model.WorkerExpireParams) (*model.WorkerExpireResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWorkerExpire, s.keys.workerKeys(p.Namespace, ""), args{
		"now": p.Now, "limit": p.Limit,
	})
	if err != nil {
		return nil, err
	}
	res := &model.WorkerExpireResult{}
	for _, wi := range r.strs("removed") {
		res.Removed = append(res.Removed, model.WorkerInstanceID(wi))
	}
	return res, r.err()
}

// WorkerList implements model.WorkerStore.
func (s *Store) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWorkerList, s.keys.workerKeys(p.Namespace, ""), args{"now": p.Now})
	if err != nil {
		return nil, err
	}
	res := &model.WorkerListResult{}
	for _, w := range r.objs("workers") {
		res.Workers = append(res.Workers, worker(p.Namespace, w))
	}
	return res, r.err()
}

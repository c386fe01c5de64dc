package valkeystore

import (
	"context"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionDescribe implements model.ReadStore.
func (s *Store) ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionDescribe, s.keys.execFlowKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	res := snapshot(r.obj("core"), r.strMap("tags"))
	res.Flow = r.flowID("flow")
	res.Metadata = nilIfEmpty(r.strMap("meta"))
	return res, r.err()
}

// ExecutionList implements model.ReadStore.
func (s *Store) ExecutionList(ctx context.Context, p *model.ExecutionListParams) (*model.ExecutionListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	// Members of all_executions are ids of one partition: their text order
	// is the UUID order memstore lists in. The cursor is exclusive.
	after := ""
	if !p.After.IsZero() {
		after = "(" + p.After.String()
	}
	f := &p.Filter
	states := make([]string, len(f.States))
	for i, st := range f.States {
		states[i] = st.String()
	}
	r, err := s.run(ctx, scriptExecutionList, s.keys.partKeys(p.Partition), args{
		"after": after, "limit": p.Limit, "filter_namespace": f.Namespace, "filter_tag_key": f.TagKey,
		"filter_tag_value": f.TagValue, "filter_lane": f.Lane, "filter_kind": f.Kind, "filter_states": strings.Join(states, ","),
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionListResult{}
	res.IDs = append(res.IDs, r.execIDs("ids")...)
	res.Next = r.execID("next")
	res.Examined = r.int("examined")
	return res, r.err()
}

// ExecutionResult implements model.ReadStore.
func (s *Store) ExecutionResult(ctx context.Context, p *model.ExecutionResultParams) (*model.ExecutionResultResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionResult, s.keys.execKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionResultResult{Result: r.bytes("result")}
	return res, r.err()
}

// ExecutionPayload implements model.ReadStore.
func (s *Store) ExecutionPayload(ctx context.Context, p *model.ExecutionPayloadParams) (*model.ExecutionPayloadResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionPayload, s.keys.execKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionPayloadResult{Payload: r.bytes("payload")}
	return res, r.err()
}

// AttemptList implements model.ReadStore.
func (s *Store) AttemptList(ctx context.Context, p *model.AttemptListParams) (*model.AttemptListResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptAttemptList, s.keys.execKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	res := &model.AttemptListResult{}
	for _, a := range r.objs("attempts") {
		res.Attempts = append(res.Attempts, attempt(a))
	}
	return res, r.err()
}

// LeaseHistory implements model.ReadStore.
func (s *Store) LeaseHistory(ctx context.Context, p *model.LeaseHistoryParams) (*model.LeaseHistoryResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	// sequence numbers are Lua numbers, far below 2^53: a larger cursor is
	// past every entry, and every server parses 2^53
	r, err := s.run(ctx, scriptLeaseHistory, s.keys.execKeys(p.ID), args{
		"after": min(p.AfterSeq, 1<<53), "limit": p.Limit,
	})
	if err != nil {
		return nil, err
	}
	res := &model.LeaseHistoryResult{}
	for _, e := range r.strs("events") {
		res.Events = append(res.Events, leaseEvent(r, e))
	}
	return res, r.err()
}

// ExecutionIndexes implements model.IndexInspector.
func (s *Store) ExecutionIndexes(ctx context.Context, p *model.ExecutionIndexesParams) (*model.ExecutionIndexesResult, error) {
	if err := s.cfg.CheckExecutionID(p.ID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionIndexes, s.keys.execSuspKeys(p.ID), args{"id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionIndexesResult{Indexes: r.strs("indexes")}
	slices.Sort(res.Indexes)
	return res, r.err()
}

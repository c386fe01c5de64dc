package valkeystore

import (
	"context"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Suspension, waitpoints and signals (model.SuspendStore). Each operation
// is one script on the execution's partition; lua/lib/wait.lua and
// lua/lib/suspend.lua hold what they share, keys.go the keys.

var _ model.SuspendStore = (*Store)(nil)

// WaitpointCreate implements model.SuspendStore.
func (s *Store) WaitpointCreate(ctx context.Context, p *model.WaitpointCreateParams) (*model.WaitpointCreateResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	limit := p.SignalLimit
	if limit == 0 {
		limit = model.DefaultSignalLimit
	}
	r, err := s.run(ctx, scriptWaitpointCreate, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "waitpoint": p.Waitpoint, "expires_at": p.ExpiresAt, "signal_limit": limit,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.WaitpointCreateResult{CreatedAt: r.time("created_at"), Replayed: r.bool("replayed")}
	return res, r.err()
}

// ExecutionSuspend implements model.SuspendStore.
func (s *Store) ExecutionSuspend(ctx context.Context, p *model.ExecutionSuspendParams) (*model.ExecutionSuspendResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	cond, err := model.EncodeCondition(p.Condition)
	if err != nil {
		return nil, err
	}
	var others []string
	for _, w := range p.BoundWaitpoints()[1:] {
		others = append(others, w.String())
	}
	limit := p.SignalLimit
	if limit == 0 {
		limit = model.DefaultSignalLimit
	}
	r, err := s.run(ctx, scriptExecutionSuspend, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "suspension": p.Suspension, "waitpoint": p.Waitpoint,
		"use_pending": p.UsePending, "others": strings.Join(others, ","), "reason": p.Reason,
		"blocking_reason": p.Reason.BlockingReason(), "condition": cond, "timeout_at": p.TimeoutAt,
		"behavior": p.Behavior(), "delay": p.Policy.Delay, "keep_wps": p.Policy.KeepWaitpoints,
		"keep_sigs": p.Policy.KeepSignals, "signal_limit": limit,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionSuspendResult{
		Outcome:    enum(r, "outcome", false, model.ParseSuspendOutcome),
		Suspension: p.Suspension,
		Waitpoint:  model.WaitpointID(r.uuid("waitpoint")),
		CreatedAt:  r.time("created_at"),
		Signals:    signals(r, "signals"),
		Replayed:   r.bool("replayed"),
	}
	return res, r.err()
}

// SignalDeliver implements model.SuspendStore.
func (s *Store) SignalDeliver(ctx context.Context, p *model.SignalDeliverParams) (*model.SignalDeliverResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	ttl := p.DedupTTL
	if ttl == 0 {
		ttl = model.DefaultSignalDedupTTL
	}
	r, err := s.run(ctx, scriptSignalDeliver, s.keys.feedKeys(s.keys.execKeys(p.Execution), p.Execution.Partition()), args{
		"now": p.Now, "id": p.Execution, "waitpoint": p.Waitpoint, "created_at": p.WaitpointCreatedAt,
		"signal": p.Signal, "name": p.Name, "source": p.Source, "payload": p.Payload,
		"idem": p.IdempotencyKey, "dedup_ttl": ttl, "gc_slack": s.gcSlack,
	})
	if err != nil {
		return nil, err
	}
	res := &model.SignalDeliverResult{
		Signal:        model.SignalID(r.uuid("signal")),
		Effect:        enum(r, "effect", false, model.ParseSignalEffect),
		IgnoredReason: r.str("ignored_reason"),
		State:         publicState(r.obj("state")),
		DelayUntil:    r.time("delay_until"),
		Replayed:      r.has("replayed") && r.bool("replayed"),
	}
	return res, r.err()
}

// ExecutionResume implements model.SuspendStore.
func (s *Store) ExecutionResume(ctx context.Context, p *model.ExecutionResumeParams) (*model.ExecutionResumeResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionResume, s.keys.execKeys(p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionResumeResult{State: publicState(r.obj("state")), DelayUntil: r.time("delay_until")}
	return res, r.err()
}

// SuspensionExpire implements model.SuspendStore.
func (s *Store) SuspensionExpire(ctx context.Context, p *model.SuspensionExpireParams) (*model.SuspensionExpireResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptSuspensionExpire, s.keys.execSuspKeys(p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.SuspensionExpireResult{
		Outcome:    enum(r, "outcome", false, model.ParseSuspensionExpireOutcome),
		DelayUntil: r.time("delay_until"),
	}
	return res, r.err()
}

// WaitpointExpire implements model.SuspendStore.
func (s *Store) WaitpointExpire(ctx context.Context, p *model.WaitpointExpireParams) (*model.WaitpointExpireResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWaitpointExpire, s.keys.execSuspKeys(p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.WaitpointExpireResult{Closed: r.int("closed"), NextDueAt: r.time("next_due")}
	return res, r.err()
}

// SuspensionDescribe implements model.SuspendStore.
func (s *Store) SuspensionDescribe(ctx context.Context, p *model.SuspensionDescribeParams) (*model.SuspensionSnapshot, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptSuspensionDescribe, s.keys.execKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	h := r.obj("susp")
	res := &model.SuspensionSnapshot{
		ID:              model.SuspensionID(h.uuid("id")),
		Execution:       p.ID,
		AttemptIndex:    h.int("attempt"),
		Reason:          enum(h, "reason", false, model.ParseSuspendReason),
		Waitpoint:       model.WaitpointID(h.uuid("wp")),
		SuspendedAt:     h.time("suspended_at"),
		TimeoutAt:       h.time("timeout_at"),
		TimeoutBehavior: enum(h, "behavior", false, model.ParseTimeoutBehavior),
		Policy: model.ResumePolicy{
			Delay:          h.ms("delay"),
			KeepWaitpoints: h.bool("keep_wps"),
			KeepSignals:    h.bool("keep_sigs"),
		},
		Escalated: h.bool("escalated"),
		ClosedAt:  h.time("closed_at"),
		ClosedBy:  enum(h, "closed_by", true, model.ParseCloseReason),
		Signals:   signals(r, "signals"),
	}
	if cond := h.str("cond"); r.err() == nil {
		c, cerr := model.ParseCondition([]byte(cond))
		if cerr != nil {
			r.fail("cond: %v", cerr)
		}
		res.Condition = c
	}
	for _, w := range strings.Split(h.str("wps"), ",") {
		id, werr := model.ParseWaitpointID(w)
		if werr != nil {
			r.fail("wps: %v", werr)
			break
		}
		res.Waitpoints = append(res.Waitpoints, id)
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return res, nil
}

// WaitpointList implements model.SuspendStore.
func (s *Store) WaitpointList(ctx context.Context, p *model.WaitpointListParams) (*model.WaitpointListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptWaitpointList, s.keys.execKeys(p.ID), args{})
	if err != nil {
		return nil, err
	}
	res := &model.WaitpointListResult{}
	items := r.list("waitpoints")
	if len(items)%2 != 0 {
		r.fail("waitpoints: %d items, not pairs", len(items))
	}
	for i := 0; i+1 < len(items) && r.err() == nil; i += 2 {
		h := r.nested(items[i])
		w := model.WaitpointSnapshot{
			ID:          model.WaitpointID(h.uuid("id")),
			Execution:   h.execID("exec"),
			State:       enum(h, "state", false, model.ParseWaitpointState),
			CreatedAt:   h.time("created_at"),
			ExpiresAt:   h.time("expires_at"),
			SignalLimit: h.int("limit"),
			Suspension:  model.SuspensionID(h.uuid("susp")),
			ClosedAt:    h.time("closed_at"),
			ClosedBy:    enum(h, "closed_by", true, model.ParseCloseReason),
		}
		sr := &reply{op: r.op, root: r.root, fields: map[string]valkey.ValkeyMessage{"s": items[i+1]}}
		w.Signals = signals(sr, "s")
		res.Waitpoints = append(res.Waitpoints, w)
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return res, nil
}

// SignalFeed implements model.SuspendStore.
func (s *Store) SignalFeed(ctx context.Context, p *model.SignalFeedParams) (*model.SignalFeedResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptSignalFeed, s.keys.feedKeys(map[string]string{}, p.Partition), args{"after": p.After, "limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.SignalFeedResult{Last: r.u64("last")}
	for _, row := range r.rows("rows", 6) {
		seq, qerr := strconv.ParseUint(row[0], 10, 64)
		id, ierr := model.ParseExecutionID(row[1])
		wp, werr := model.ParseWaitpointID(row[2])
		sig, serr := model.ParseSignalID(row[3])
		effect, eok := model.ParseSignalEffect(row[4])
		at, aerr := strconv.ParseInt(row[5], 10, 64)
		if qerr != nil || ierr != nil || werr != nil || serr != nil || !eok || aerr != nil {
			r.fail("rows: malformed feed entry %q", row)
			break
		}
		res.Events = append(res.Events, model.SignalFeedEvent{
			Seq: seq, Execution: id, Waitpoint: wp, Signal: sig, Effect: effect, At: model.FromMillis(at),
		})
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return res, nil
}

// SuspendedList implements model.SuspendStore.
func (s *Store) SuspendedList(ctx context.Context, p *model.SuspendedListParams) (*model.SuspendedListResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	after := ""
	if !p.After.IsZero() {
		after = "(" + p.After.String()
	}
	r, err := s.run(ctx, scriptSuspendedList, s.keys.suspKeys(p.Partition), args{"after": after, "limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.SuspendedListResult{}
	for _, row := range r.rows("rows", 6) {
		id, ierr := model.ParseExecutionID(row[0])
		sp, serr := model.ParseSuspensionID(row[2])
		reason, rok := model.ParseSuspendReason(row[3])
		at, aerr := strconv.ParseInt(row[4], 10, 64)
		to, terr := strconv.ParseInt(row[5], 10, 64)
		if ierr != nil || serr != nil || !rok || aerr != nil || terr != nil {
			r.fail("rows: malformed entry %q", row)
			break
		}
		res.Entries = append(res.Entries, model.SuspendedEntry{
			ID: id, Lane: model.LaneID(row[1]), Suspension: sp, Reason: reason,
			SuspendedAt: model.FromMillis(at), TimeoutAt: model.FromMillis(to),
		})
	}
	res.Next = r.execID("next")
	if err := r.err(); err != nil {
		return nil, err
	}
	return res, nil
}

// signals decodes a list field of stored signals: (fields, payload)
// pairs, the fields as netstrings (lua/lib/suspend.lua's sig_encode: seq
// id waitpoint name source idem effect ignored delivered_at). Empty is
// nil.
func signals(r *reply, name string) []model.SignalRecord {
	flat := r.strs(name)
	if len(flat)%2 != 0 {
		r.fail("field %q: %d strings, not pairs", name, len(flat))
		return nil
	}
	var out []model.SignalRecord
	for i := 0; i < len(flat); i += 2 {
		f, ok := parseNetstrings(flat[i])
		if !ok || len(f) != 9 {
			r.fail("field %q: malformed signal %q", name, flat[i])
			return nil
		}
		id, ierr := model.ParseSignalID(f[1])
		wp, werr := model.ParseWaitpointID(f[2])
		effect, eok := model.ParseSignalEffect(f[6])
		at, aerr := strconv.ParseInt(f[8], 10, 64)
		if ierr != nil || werr != nil || !eok || aerr != nil {
			r.fail("field %q: malformed signal %q", name, flat[i])
			return nil
		}
		var payload []byte
		if flat[i+1] != "" {
			payload = []byte(flat[i+1])
		}
		out = append(out, model.SignalRecord{
			ID: id, Waitpoint: wp, Name: f[3], Source: f[4], Payload: payload, IdempotencyKey: f[5],
			Effect: effect, IgnoredReason: f[7], DeliveredAt: model.FromMillis(at),
		})
	}
	return out
}

// parseNetstrings splits "<len>:<bytes>" repeated.
func parseNetstrings(s string) ([]string, bool) {
	var out []string
	for len(s) > 0 {
		c := strings.IndexByte(s, ':')
		if c < 0 {
			return nil, false
		}
		n, err := strconv.Atoi(s[:c])
		if err != nil || n < 0 || c+1+n > len(s) {
			return nil, false
		}
		out = append(out, s[c+1:c+1+n])
		s = s[c+1+n:]
	}
	return out, true
}

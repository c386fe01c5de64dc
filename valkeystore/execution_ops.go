package valkeystore

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionCreate implements model.ExecutionStore.
func (s *Store) ExecutionCreate(ctx context.Context, p *model.ExecutionCreateParams) (*model.ExecutionCreateResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	keys := s.keys.execKeys(p.ID)
	keys["idem"] = s.keys.idem(p.ID.Partition(), p.Namespace, p.IdempotencyKey)
	ttl := p.IdempotencyTTL
	if ttl == 0 {
		ttl = model.DefaultIdempotencyTTL
	}
	a := createArgs(p)
	a["now"], a["idem_key"], a["flow"], a["idem_ttl"], a["gc_slack"] = p.Now, p.IdempotencyKey, flowArg(p.Flow), ttl, s.gcSlack
	a["idem_states"] = model.IdempotencyStatesText(p.IdempotencyStates)
	r, err := s.run(ctx, scriptExecutionCreate, keys, a)
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionCreateResult{ID: r.execID("id"), Duplicate: r.bool("duplicate")}
	if r.has("state") {
		res.PublicState = publicState(r.obj("state"))
	}
	return res, r.err()
}

// createFields are the fields of a new execution in the order the Lua
// library's new_exec reads them (lua/lib/create.lua).
var createFields = []string{"id", "namespace", "lane", "kind", "payload", "priority", "tags", "required_caps",
	"retry_max", "retry_backoff", "retry_delay_ms", "retry_initial_ms", "retry_multiplier", "retry_max_delay_ms",
	"max_reclaims", "max_replays", "attempt_timeout", "deadline", "delay_until", "budgets", "quota", "quota_key",
	"ret_ok", "ret_failed", "ret_cancelled", "metadata"}

// createArgs are the arguments createFields names for p, defaults
// applied.
func createArgs(p *model.ExecutionCreateParams) args {
	maxReclaims, maxReplays := p.MaxReclaims, p.MaxReplays
	if maxReclaims == 0 {
		maxReclaims = model.DefaultMaxReclaims
	}
	if maxReplays == 0 {
		maxReplays = model.DefaultMaxReplays
	}
	rp := p.RetryPolicy
	return args{
		"id":                 p.ID,
		"namespace":          p.Namespace,
		"lane":               p.Lane,
		"kind":               p.Kind,
		"payload":            p.Payload,
		"priority":           model.ClampPriority(p.Priority),
		"tags":               encodeTags(p.Tags),
		"required_caps":      normCaps("required_capabilities", p.RequiredCapabilities),
		"retry_max":          rp.MaxRetries,
		"retry_backoff":      rp.Backoff.String(),
		"retry_delay_ms":     rp.Delay,
		"retry_initial_ms":   rp.InitialDelay,
		"retry_multiplier":   strconv.FormatFloat(rp.Multiplier, 'g', -1, 64),
		"retry_max_delay_ms": rp.MaxDelay,
		"max_reclaims":       maxReclaims,
		"max_replays":        maxReplays,
		"attempt_timeout":    p.AttemptTimeout,
		"deadline":           p.Deadline,
		"delay_until":        p.DelayUntil,
		"budgets":            budgetsCSV(p.Budgets),
		"quota":              p.Quota.String(),
		"quota_key":          p.QuotaKey,
		"ret_ok":             p.Retention.Completed,
		"ret_failed":         p.Retention.Failed,
		"ret_cancelled":      p.Retention.Cancelled,
		"metadata":           encodeTags(p.Metadata),
	}
}

// budgetsCSV is an execution's budgets as the record keeps them: their
// ids, comma-separated, in the given order.
func budgetsCSV(bs []model.BudgetID) string {
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.String()
	}
	return strings.Join(ids, ",")
}

// netstring appends s to b as a netstring "<len>:<bytes>".
func netstring(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// encodeTags writes tags (or metadata) as netstrings "<len>:<bytes>", key then value, in
// key order.
func encodeTags(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		netstring(&b, k)
		netstring(&b, tags[k])
	}
	return b.String()
}

// ExecutionComplete implements model.ExecutionStore.
func (s *Store) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	if p.Next != nil && p.Next.Inline != nil && !s.InlineAdmission() {
		return nil, model.InlineUnsupported("Next.Inline")
	}
	a := fenceArgs(args{"now": p.Now, "id": p.ID, "source": p.Source, "result": p.Result, "has_next": p.Next != nil}, p.Fence)
	n := p.Next
	if n == nil {
		n = &model.NextClaim{}
	}
	a["next_lane"] = n.Lane
	a["next_namespace"] = n.Namespace
	a["next_capabilities"] = normCaps("capabilities", n.Capabilities)
	a["next_live_capabilities"] = normCaps("live_capabilities", n.LiveCapabilities)
	a["next_scan_limit"] = n.ScanLimit
	a["next_worker_id"] = n.WorkerID
	a["next_worker_instance_id"] = n.WorkerInstanceID
	a["next_lease_id"] = n.LeaseID
	a["next_attempt_id"] = n.AttemptID
	a["next_lease_ttl"] = n.LeaseTTL
	a["next_admission_grant_ttl"] = admissionGrantTTL(n.AdmissionGrantTTL)
	a["next_inline"] = s.inlineArg(n.Inline)
	r, err := s.run(ctx, scriptExecutionComplete, s.keys.execKeys(p.ID), a)
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionCompleteResult{Replayed: r.bool("replayed")}
	if p.Next != nil && !res.Replayed {
		res.Next = claimNextResult(r)
	}
	return res, r.err()
}

// ExecutionFail implements model.ExecutionStore.
func (s *Store) ExecutionFail(ctx context.Context, p *model.ExecutionFailParams) (*model.ExecutionFailResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	cat := p.Category
	if cat == "" {
		cat = model.FailureTransient
	}
	r, err := s.run(ctx, scriptExecutionFail, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "source": p.Source, "reason": p.Reason, "category": cat,
		"retryable": cat.Retryable(),
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionFailResult{
		Outcome: enum(r, "outcome", false, model.ParseFailOutcome), DelayUntil: r.time("delay_until"), Replayed: r.bool("replayed"),
	}
	return res, r.err()
}

// ExecutionDelay implements model.ExecutionStore.
func (s *Store) ExecutionDelay(ctx context.Context, p *model.ExecutionDelayParams) (*model.ExecutionDelayResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionDelay, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "source": p.Source, "delay_until": p.DelayUntil,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionDelayResult{DelayUntil: r.time("delay_until"), Replayed: r.bool("replayed")}
	return res, r.err()
}

// ExecutionCancel implements model.ExecutionStore.
func (s *Store) ExecutionCancel(ctx context.Context, p *model.ExecutionCancelParams) (*model.ExecutionCancelResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionCancel, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "source": p.Source, "reason": p.Reason,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionCancelResult{
		PriorPhase: enum(r, "prior_phase", false, model.ParseLifecyclePhase),
		Replayed:   r.bool("replayed"),
	}
	return res, r.err()
}

// ExecutionChangePriority implements model.ExecutionStore.
func (s *Store) ExecutionChangePriority(ctx context.Context, p *model.ExecutionChangePriorityParams) (*model.ExecutionChangePriorityResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionChangePriority, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "priority": model.ClampPriority(p.Priority),
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionChangePriorityResult{Old: r.int("old"), New: r.int("new")}
	return res, r.err()
}

// ExecutionReplay implements model.ExecutionStore.
func (s *Store) ExecutionReplay(ctx context.Context, p *model.ExecutionReplayParams) (*model.ExecutionReplayResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionReplay, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "reason": p.Reason, "requested_by": p.RequestedBy,
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionReplayResult{PublicState: publicState(r.obj("state"))}
	return res, r.err()
}

// ExecutionUpdateProgress implements model.ExecutionStore.
func (s *Store) ExecutionUpdateProgress(ctx context.Context, p *model.ExecutionUpdateProgressParams) (*model.ExecutionUpdateProgressResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	_, err := s.run(ctx, scriptExecutionUpdateProgress, s.keys.execKeys(p.ID), fenceArgs(args{
		"now": p.Now, "id": p.ID, "percent": p.Percent, "message": p.Message,
	}, p.Fence))
	if err != nil {
		return nil, err
	}
	return &model.ExecutionUpdateProgressResult{}, nil
}

// ExecutionExpire implements model.ExecutionStore.
func (s *Store) ExecutionExpire(ctx context.Context, p *model.ExecutionExpireParams) (*model.ExecutionExpireResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionExpire, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "reason": p.Reason.String(),
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionExpireResult{
		Outcome:    enum(r, "status", false, model.ParseExpireOutcome),
		PriorPhase: enum(r, "prior_phase", true, model.ParseLifecyclePhase),
		DelayUntil: r.time("delay_until"),
	}
	return res, r.err()
}

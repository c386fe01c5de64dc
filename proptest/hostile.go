package proptest

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Hostile generators: each field of a hostile call is either a plausible
// value or one drawn from these.
var (
	oddStrings = []string{
		"", " ", "a", "a b", "{fp:0}", "x,y", "\x00", "\t", "é", "\xff", "\xc3\x28", "UPPER", "lower.dot",
		"a..b", "app.k", "app..k", "1app.k", "app.", "-", "_", ".", "日本",
		strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 128), strings.Repeat("a", 129),
		strings.Repeat("a", 256), strings.Repeat("a", 257), strings.Repeat("x", model.MaxReasonBytes+1),
	}
	genOddString = rapid.OneOf(
		rapid.SampledFrom(oddStrings),
		rapid.StringN(0, 12, -1),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 24), func(b []byte) string { return string(b) }),
	)
	oddInts = []int{0, -1, 1, 100, 101, model.MaxPriority, model.MaxPriority + 1, model.MaxRetries,
		model.MaxRetries + 1, model.MaxPageSize, model.MaxPageSize + 1, 1_000_000, 1_000_001, math.MinInt, math.MaxInt}
	genOddInt    = rapid.OneOf(rapid.SampledFrom(oddInts), rapid.Int(), rapid.IntRange(-3, 3))
	oddDurations = []time.Duration{0, -1, 1, time.Microsecond, time.Millisecond - 1, time.Millisecond, 1500 * time.Microsecond,
		time.Second, model.MaxGrantTTL, model.MaxGrantTTL + time.Millisecond, model.MaxLeaseTTL, model.MaxLeaseTTL + time.Millisecond,
		model.MaxPolicyDelay, model.MaxPolicyDelay + time.Millisecond, math.MinInt64, math.MaxInt64}
	genOddDuration = rapid.OneOf(rapid.SampledFrom(oddDurations), rapid.Map(rapid.Int64(), func(n int64) time.Duration { return time.Duration(n) }))
	genOddMillis   = rapid.OneOf(rapid.SampledFrom([]int64{-1, 0, 1, 253402300799999, 253402300800000, math.MaxInt64 / 1000}), rapid.Int64())
	genOddFloat    = rapid.OneOf(rapid.SampledFrom([]float64{0, 0.5, 1, 100, 100.5, -1, math.NaN(), math.Inf(1)}), rapid.Float64())
)

// plausibleOr draws one of the plausible values, or a hostile one.
func plausibleOr[T any](t *rapid.T, label string, hostile *rapid.Generator[T], plausible ...T) T {
	if len(plausible) > 0 && genBool.Draw(t, label+"_plausible") {
		return drawFrom(t, plausible, label)
	}
	return hostile.Draw(t, label)
}

func hStr[T ~string](t *rapid.T, label string, plausible ...T) T {
	if len(plausible) > 0 && genBool.Draw(t, label+"_plausible") {
		return drawFrom(t, plausible, label)
	}
	return T(genOddString.Draw(t, label))
}

func (m *machine) hID(t *rapid.T) model.ExecutionID {
	switch rapid.IntRange(0, 4).Draw(t, "id_kind") {
	case 0:
		if len(m.execs) > 0 {
			return drawFrom(t, m.execs, "exec").id
		}
	case 1:
		return model.ExecutionID{}
	case 2:
		return model.NewExecutionID(int(rapid.Uint16().Draw(t, "partition")), m.nextUUID(t, "id_order"))
	}
	return m.newExecID(t, drawFrom(t, lanes, "lane"))
}

func (m *machine) hTime(t *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 3).Draw(t, label+"_kind") {
	case 0:
		return m.now().Add(ms(rapid.Int64Range(-10_000, 100_000).Draw(t, label+"_ms")))
	case 1:
		return time.Time{}
	}
	return time.UnixMilli(genOddMillis.Draw(t, label+"_ms"))
}

func hDuration(t *rapid.T, label string, plausible ...time.Duration) time.Duration {
	return plausibleOr(t, label, genOddDuration, plausible...)
}

func hCaps(t *rapid.T, label string) model.Capabilities {
	switch rapid.IntRange(0, 3).Draw(t, label+"_kind") {
	case 0:
		return drawCaps(t, label, 50)
	case 1:
		n := rapid.IntRange(model.MaxCapabilityTokens-1, model.MaxCapabilityTokens+2).Draw(t, label+"_n")
		c := make(model.Capabilities, n)
		for i := range c {
			c[i] = strings.Repeat("c", 1+i%20) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		return c
	}
	return rapid.SliceOfN(genOddString, 0, 4).Draw(t, label)
}

func hTags(t *rapid.T) map[string]string {
	switch rapid.IntRange(0, 2).Draw(t, "tags_kind") {
	case 0:
		return drawFrom(t, tagSets, "tags")
	case 1:
		n := rapid.IntRange(model.MaxTags, model.MaxTags+1).Draw(t, "tags_n")
		m := make(map[string]string, n)
		for i := range n {
			m["app.k"+strings.Repeat("x", i)] = "v"
		}
		return m
	}
	return rapid.MapOfN(genOddString, genOddString, 0, 3).Draw(t, "tags")
}

// hMeta draws metadata: plausible, over the entry or size limits, or odd
// strings as keys and values.
func hMeta(t *rapid.T) map[string]string {
	switch rapid.IntRange(0, 3).Draw(t, "metadata_kind") {
	case 0:
		return drawFrom(t, metaSets, "metadata")
	case 1:
		n := rapid.IntRange(model.MaxMetadataEntries, model.MaxMetadataEntries+1).Draw(t, "metadata_n")
		m := make(map[string]string, n)
		for i := range n {
			m["k"+strings.Repeat("x", i)] = "v"
		}
		return m
	case 2:
		return map[string]string{"big": strings.Repeat("v", rapid.IntRange(model.MaxMetadataBytes-8, model.MaxMetadataBytes).Draw(t, "metadata_size"))}
	}
	return rapid.MapOfN(genOddString, genOddString, 0, 3).Draw(t, "metadata")
}

// hTagKeys draws the keys a tag change removes: plausible ones, odd
// strings, or more than MaxTags.
func hTagKeys(t *rapid.T) []string {
	switch rapid.IntRange(0, 2).Draw(t, "remove_kind") {
	case 0:
		return []string{"app.k", "ops.team"}[:rapid.IntRange(0, 2).Draw(t, "remove_n")]
	case 1:
		out := make([]string, model.MaxTags+1)
		for i := range out {
			out[i] = "app.r" + strings.Repeat("x", i)
		}
		return out
	}
	return rapid.SliceOfN(genOddString, 0, 3).Draw(t, "remove")
}

func hBytes(t *rapid.T, label string, limit int) []byte {
	switch rapid.IntRange(0, 9).Draw(t, label+"_kind") {
	case 0:
		return make([]byte, limit+1)
	case 1:
		return make([]byte, limit)
	}
	return rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, label)
}

func (m *machine) hFence(t *rapid.T, id model.ExecutionID) model.Fence {
	if genBool.Draw(t, "fence_plausible") {
		return m.drawFence(t, id)
	}
	var f model.Fence
	if genBool.Draw(t, "fence_lease") {
		f.LeaseID = model.LeaseID(m.nextUUID(t, ""))
	}
	if genBool.Draw(t, "fence_attempt") {
		f.AttemptID = model.AttemptID(m.nextUUID(t, ""))
	}
	f.LeaseEpoch = rapid.Uint64().Draw(t, "fence_epoch")
	return f
}

func hSource(t *rapid.T) model.Source {
	return drawFrom(t, []model.Source{model.SourceWorker, model.SourceOperator, "bogus", "worker"}, "source")
}

func (m *machine) hLease(t *rapid.T) model.LeaseRequest {
	w := drawFrom(t, workerPool, "worker")
	r := m.leaseRequest(t, w)
	r.WorkerID = hStr(t, "worker_id", w.id)
	r.WorkerInstanceID = hStr(t, "worker_instance_id", w.instance)
	r.LeaseTTL = hDuration(t, "lease_ttl", r.LeaseTTL)
	if !genBool.Draw(t, "lease_id_set") {
		r.LeaseID = model.LeaseID{}
	}
	if !genBool.Draw(t, "attempt_id_set") {
		r.AttemptID = model.AttemptID{}
	}
	return r
}

func hPolicy(t *rapid.T) model.RetryPolicy {
	if genBool.Draw(t, "policy_plausible") {
		return drawRetryPolicy(t)
	}
	return model.RetryPolicy{
		MaxRetries:   plausibleOr(t, "max_retries", genOddInt, 0, 3),
		Backoff:      model.BackoffKind(rapid.IntRange(0, 3).Draw(t, "backoff")),
		Delay:        genOddDuration.Draw(t, "delay"),
		InitialDelay: genOddDuration.Draw(t, "initial_delay"),
		Multiplier:   genOddFloat.Draw(t, "multiplier"),
		MaxDelay:     genOddDuration.Draw(t, "max_delay"),
	}
}

func hEnum[T ~uint8](t *rapid.T, label string, max int) T {
	return T(rapid.IntRange(0, max).Draw(t, label))
}

// hostile calls op with p on every store. When p fails validate, every
// store must refuse it with exactly that error, a validation error naming
// its field; the step's observation then checks that nothing changed.
// It returns store A's result (the zero R when the call failed).
func hostile[P, R any](m *machine, t *rapid.T, op string, p *P, validate func(*P) error, f func(model.Store, context.Context, *P) (R, error)) R {
	t.Helper()
	q := *p
	verr := validate(&q)
	r, err := call(m, t, op, p, f)
	if verr != nil {
		var e *model.Error
		m.expect(t, errors.As(verr, &e) && errors.Is(verr, model.ErrValidation) && e.Field != "",
			"%s: Validate returned %v, not a validation error naming its field", op, verr)
		m.expect(t, cmpEqual(ViewError(err), ViewError(verr)), "%s(%+v): store error %v, Validate says %v", op, *p, err, verr)
	}
	if err != nil {
		var zero R
		return zero
	}
	return r
}

func (m *machine) claimed(r *model.ClaimResult) {
	if r != nil {
		m.acquired[r.ID]++
	}
}

// actHostile makes one call with hostile parameters. It does not keep the
// reference model up to date, so it ends a sequence.
func (m *machine) actHostile(t *rapid.T) {
	cfg := m.cfg
	id := m.hID(t)
	now := m.now()
	if chance(t, 10, "bad_now") {
		// Only invalid: a valid Now other than the clock's would move the
		// store's time behind the observations.
		now = drawFrom(t, []time.Time{{}, time.UnixMilli(0), time.UnixMilli(-1), time.UnixMilli(253402300800000)}, "now")
	}
	switch op := rapid.IntRange(0, 69).Draw(t, "hostile_op"); op {
	case 0:
		p := &model.ExecutionCreateParams{
			ID: id, Namespace: hStr(t, "namespace", namespaces...), Lane: hStr(t, "lane", lanes...),
			Kind: hStr(t, "kind", kinds...), Payload: hBytes(t, "payload", model.MaxPayloadBytes),
			Priority: plausibleOr(t, "priority", genOddInt, 0, 5), Tags: hTags(t), Metadata: hMeta(t),
			RequiredCapabilities: hCaps(t, "required"), RetryPolicy: hPolicy(t),
			MaxReclaims: plausibleOr(t, "max_reclaims", genOddInt, 0, 1), MaxReplays: plausibleOr(t, "max_replays", genOddInt, 0, 1),
			AttemptTimeout: hDuration(t, "attempt_timeout", 0, time.Second), Deadline: m.hTime(t, "deadline"),
			DelayUntil: m.hTime(t, "delay_until"), IdempotencyKey: hStr(t, "idempotency_key", idemKeys...),
			IdempotencyTTL: hDuration(t, "idempotency_ttl", 0, time.Second), Now: now,
		}
		if chance(t, 30, "admission") {
			p.Budgets, p.Quota, p.QuotaKey = []model.BudgetID{hBudget(t), hBudget(t)}[:rapid.IntRange(0, 2).Draw(t, "budgets")], hQuota(t), hStr(t, "quota_key", quotaKeys...)
		}
		hostile(m, t, "ExecutionCreate", p, func(p *model.ExecutionCreateParams) error { return p.Validate(cfg) }, model.Store.ExecutionCreate)
	case 1:
		p := &model.ExecutionCancelParams{ID: id, Reason: hStr(t, "reason", reasons...), Source: hSource(t), Fence: m.hFence(t, id), Now: now}
		hostile(m, t, "ExecutionCancel", p, func(p *model.ExecutionCancelParams) error { return p.Validate(cfg) }, model.Store.ExecutionCancel)
	case 2:
		p := &model.ExecutionChangePriorityParams{ID: id, Priority: genOddInt.Draw(t, "priority"), Now: now}
		hostile(m, t, "ExecutionChangePriority", p, func(p *model.ExecutionChangePriorityParams) error { return p.Validate(cfg) }, model.Store.ExecutionChangePriority)
	case 3:
		p := &model.ExecutionCompleteParams{ID: id, Fence: m.hFence(t, id), Source: hSource(t), Result: hBytes(t, "result", model.MaxResultBytes), Now: now}
		hostile(m, t, "ExecutionComplete", p, func(p *model.ExecutionCompleteParams) error { return p.Validate(cfg) }, model.Store.ExecutionComplete)
	case 4:
		p := &model.ExecutionDelayParams{ID: id, Fence: m.hFence(t, id), Source: hSource(t), DelayUntil: m.hTime(t, "delay_until"), Now: now}
		hostile(m, t, "ExecutionDelay", p, func(p *model.ExecutionDelayParams) error { return p.Validate(cfg) }, model.Store.ExecutionDelay)
	case 5:
		p := &model.ExecutionExpireParams{ID: id, Reason: hEnum[model.ExpireReason](t, "reason", 3), Now: now}
		hostile(m, t, "ExecutionExpire", p, func(p *model.ExecutionExpireParams) error { return p.Validate(cfg) }, model.Store.ExecutionExpire)
	case 6:
		p := &model.ExecutionFailParams{ID: id, Fence: m.hFence(t, id), Source: hSource(t), Reason: hStr(t, "reason", reasons...),
			Category: hStr(t, "category", categories...), Now: now}
		hostile(m, t, "ExecutionFail", p, func(p *model.ExecutionFailParams) error { return p.Validate(cfg) }, model.Store.ExecutionFail)
	case 7:
		p := &model.ExecutionReplayParams{ID: id, Reason: hStr(t, "reason", reasons...), RequestedBy: hStr(t, "requested_by", "ops"), Now: now}
		hostile(m, t, "ExecutionReplay", p, func(p *model.ExecutionReplayParams) error { return p.Validate(cfg) }, model.Store.ExecutionReplay)
	case 8:
		p := &model.ExecutionUpdateProgressParams{ID: id, Fence: m.hFence(t, id), Percent: plausibleOr(t, "percent", genOddInt, 0, 50, 100),
			Message: hStr(t, "message", "halfway"), Now: now}
		hostile(m, t, "ExecutionUpdateProgress", p, func(p *model.ExecutionUpdateProgressParams) error { return p.Validate(cfg) }, model.Store.ExecutionUpdateProgress)
	case 9:
		w := drawFrom(t, workerPool, "worker")
		p := &model.ClaimGrantIssueParams{ID: id, WorkerID: hStr(t, "worker_id", w.id), WorkerInstanceID: hStr(t, "worker_instance_id", w.instance),
			Capabilities: hCaps(t, "caps"), GrantTTL: hDuration(t, "grant_ttl", time.Second), Now: now}
		hostile(m, t, "ClaimGrantIssue", p, func(p *model.ClaimGrantIssueParams) error { return p.Validate(cfg) }, model.Store.ClaimGrantIssue)
	case 10:
		p := &model.ExecutionBlockParams{ID: id, Reason: hEnum[model.BlockingReason](t, "reason", 16), Detail: hStr(t, "detail", ""), Now: now}
		hostile(m, t, "ExecutionBlock", p, func(p *model.ExecutionBlockParams) error { return p.Validate(cfg) }, optional(model.Blocker.ExecutionBlock))
	case 11:
		p := &model.ExecutionClaimParams{ID: id, Capabilities: hCaps(t, "caps"), LeaseRequest: m.hLease(t), Now: now}
		m.claimed(hostile(m, t, "ExecutionClaim", p, func(p *model.ExecutionClaimParams) error { return p.Validate(cfg) }, model.Store.ExecutionClaim))
	case 12:
		p := &model.ExecutionClaimNextParams{
			Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), Lane: hStr(t, "lane", lanes...), Namespace: hStr(t, "namespace", namespaces...),
			Capabilities: hCaps(t, "caps"), LiveCapabilities: hCaps(t, "live"),
			ScanLimit: plausibleOr(t, "scan_limit", genOddInt, 1, 3), LeaseRequest: m.hLease(t), Now: now,
		}
		if r := hostile(m, t, "ExecutionClaimNext", p, func(p *model.ExecutionClaimNextParams) error { return p.Validate(cfg) }, model.Store.ExecutionClaimNext); r != nil {
			m.claimed(r.Claimed)
		}
	case 13:
		p := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: hCaps(t, "caps"), LeaseRequest: m.hLease(t), Now: now}
		m.claimed(hostile(m, t, "ExecutionGrantAndClaim", p, func(p *model.ExecutionGrantAndClaimParams) error { return p.Validate(cfg) }, model.Store.ExecutionGrantAndClaim))
	case 14:
		p := &model.ExecutionUnblockParams{ID: id, ExpectedReason: hEnum[model.BlockingReason](t, "reason", 16), Now: now}
		hostile(m, t, "ExecutionUnblock", p, func(p *model.ExecutionUnblockParams) error { return p.Validate(cfg) }, optional(model.Blocker.ExecutionUnblock))
	case 15:
		p := &model.ExecutionReclaimParams{ID: id, Capabilities: hCaps(t, "caps"), LeaseRequest: m.hLease(t), Now: now}
		if r := hostile(m, t, "ExecutionReclaim", p, func(p *model.ExecutionReclaimParams) error { return p.Validate(cfg) }, optional(model.GrantReclaimer.ExecutionReclaim)); r != nil {
			m.claimed(r.Claimed)
		}
	case 16:
		p := &model.ExecutionRecoverParams{ID: id, Now: now}
		hostile(m, t, "ExecutionRecover", p, func(p *model.ExecutionRecoverParams) error { return p.Validate(cfg) }, model.Store.ExecutionRecover)
	case 17:
		p := &model.LeaseMarkExpiredParams{ID: id, Now: now}
		hostile(m, t, "LeaseMarkExpired", p, func(p *model.LeaseMarkExpiredParams) error { return p.Validate(cfg) }, model.Store.LeaseMarkExpired)
	case 18:
		p := &model.LeaseRenewParams{ID: id, Fence: m.hFence(t, id), LeaseTTL: hDuration(t, "lease_ttl", time.Second), Now: now}
		hostile(m, t, "LeaseRenew", p, func(p *model.LeaseRenewParams) error { return p.Validate(cfg) }, model.Store.LeaseRenew)
	case 19:
		p := &model.LeaseRevokeParams{ID: id, Reason: hStr(t, "reason", reasons...), Now: now}
		if genBool.Draw(t, "expected_lease") {
			p.ExpectedLeaseID = model.LeaseID(m.nextUUID(t, ""))
		}
		hostile(m, t, "LeaseRevoke", p, func(p *model.LeaseRevokeParams) error { return p.Validate(cfg) }, model.Store.LeaseRevoke)
	case 20:
		w := drawFrom(t, workerPool, "worker")
		p := &model.ReclaimGrantIssueParams{ID: id, WorkerID: hStr(t, "worker_id", w.id), WorkerInstanceID: hStr(t, "worker_instance_id", w.instance),
			Capabilities: hCaps(t, "caps"), GrantTTL: hDuration(t, "grant_ttl", time.Second), Now: now}
		hostile(m, t, "ReclaimGrantIssue", p, func(p *model.ReclaimGrantIssueParams) error { return p.Validate(cfg) }, optional(model.GrantReclaimer.ReclaimGrantIssue))
	case 21:
		p := &model.ExecutionPromoteDelayedParams{ID: id, Lane: hStr(t, "lane", lanes...), Now: now}
		hostile(m, t, "ExecutionPromoteDelayed", p, func(p *model.ExecutionPromoteDelayedParams) error { return p.Validate(cfg) }, model.Store.ExecutionPromoteDelayed)
	case 22:
		p := &model.IndexScanDueParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), Index: hEnum[model.IndexKind](t, "index", 5),
			Now: now, Limit: plausibleOr(t, "limit", genOddInt, 1, 10)}
		if genBool.Draw(t, "after") {
			p.After = &model.DueCursor{DueAt: m.hTime(t, "after_due"), ID: m.hID(t)}
		}
		hostile(m, t, "IndexScanDue", p, func(p *model.IndexScanDueParams) error { return p.Validate(cfg) }, model.Store.IndexScanDue)
	case 23:
		p := &model.RouteUnblockParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3),
			Namespace: hStr(t, "namespace", namespaces...), Live: hCaps(t, "live"),
			All: genBool.Draw(t, "all"), Limit: plausibleOr(t, "limit", genOddInt, 1, 10), Now: now}
		hostile(m, t, "RouteUnblock", p, func(p *model.RouteUnblockParams) error { return p.Validate(cfg) }, model.Store.RouteUnblock)
	case 24, 25, 26, 27, 28:
		m.hostileWorker(t, op, now)
	case 34, 35, 36, 37, 38, 39, 40, 41:
		m.hostileFlow(t, op, id, now)
	case 42, 43, 44, 45, 46, 47, 48, 49, 50:
		m.hostileSuspend(t, op, id, now)
	case 51, 52, 53, 54, 55, 56, 57, 58:
		m.hostileAdmission(t, op, id, now)
	case 59, 60, 61:
		m.hostileStream(t, op, id, now)
	case 62:
		m.hostileFeed(t)
	case 66:
		p := &model.ExecutionTagsSetParams{ID: id, Set: hTags(t), Remove: hTagKeys(t), Now: now}
		hostile(m, t, "ExecutionTagsSet", p, func(p *model.ExecutionTagsSetParams) error { return p.Validate(cfg) },
			optional(model.TagStore.ExecutionTagsSet))
	case 67:
		p := &model.FlowTagsSetParams{Flow: m.hFlow(t), Set: hTags(t), Remove: hTagKeys(t), Now: now}
		hostile(m, t, "FlowTagsSet", p, func(p *model.FlowTagsSetParams) error { return p.Validate() },
			optional(model.TagStore.FlowTagsSet))
	case 68:
		p := &model.IndexRepairParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), Limit: plausibleOr(t, "limit", genOddInt, 1, 2),
			DryRun: genBool.Draw(t, "dry"), Filter: drawFilter(t), Now: now}
		if genBool.Draw(t, "cursor") {
			p.Cursor = m.hID(t)
		}
		hostile(m, t, "IndexRepair", p, func(p *model.IndexRepairParams) error { return p.Validate(cfg) }, optional(model.IndexRepairer.IndexRepair))
	case 69:
		hostile(m, t, "FlowMemberList", &model.FlowMemberListParams{Flow: m.hFlow(t), After: m.hID(t), Limit: plausibleOr(t, "limit", genOddInt, 1, 2)},
			func(p *model.FlowMemberListParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.FlowMemberList))
	case 29:
		p := &model.ExecutionListParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), Limit: plausibleOr(t, "limit", genOddInt, 1, 2)}
		if genBool.Draw(t, "after") {
			p.After = m.hID(t)
		}
		hostile(m, t, "ExecutionList", p, func(p *model.ExecutionListParams) error { return p.Validate(cfg) }, model.Store.ExecutionList)
	case 30:
		p := &model.LeaseHistoryParams{ID: id, AfterSeq: rapid.Uint64().Draw(t, "after_seq"), Limit: plausibleOr(t, "limit", genOddInt, 1, 2)}
		hostile(m, t, "LeaseHistory", p, func(p *model.LeaseHistoryParams) error { return p.Validate(cfg) }, model.Store.LeaseHistory)
	default:
		checkID := func(id model.ExecutionID) error { return cfg.CheckExecutionID(id) }
		switch op {
		case 31:
			hostile(m, t, "ExecutionDescribe", &model.ExecutionDescribeParams{ID: id},
				func(p *model.ExecutionDescribeParams) error { return checkID(p.ID) }, model.Store.ExecutionDescribe)
		case 32:
			hostile(m, t, "ExecutionIndexes", &model.ExecutionIndexesParams{ID: id},
				func(p *model.ExecutionIndexesParams) error { return checkID(p.ID) }, optional(model.IndexInspector.ExecutionIndexes))
		default:
			hostile(m, t, "ExecutionPayload", &model.ExecutionPayloadParams{ID: id},
				func(p *model.ExecutionPayloadParams) error { return checkID(p.ID) }, model.Store.ExecutionPayload)
			hostile(m, t, "AttemptList", &model.AttemptListParams{ID: id},
				func(p *model.AttemptListParams) error { return checkID(p.ID) }, model.Store.AttemptList)
			hostile(m, t, "ExecutionResult", &model.ExecutionResultParams{ID: id},
				func(p *model.ExecutionResultParams) error { return checkID(p.ID) }, model.Store.ExecutionResult)
		}
	}
}

func (m *machine) hostileWorker(t *rapid.T, op int, now time.Time) {
	w := drawFrom(t, workerPool, "worker")
	ns := hStr(t, "namespace", namespaces...)
	inst := hStr(t, "worker_instance_id", w.instance)
	session := hStr(t, "session", sessions...)
	ttl := hDuration(t, "ttl", time.Second)
	m.workersUnknown = true
	switch op {
	case 24:
		lanesIn := []model.LaneID{hStr(t, "lane", lanes...)}
		if chance(t, 10, "no_lanes") {
			lanesIn = nil
		}
		p := &model.WorkerRegisterParams{Namespace: ns, WorkerID: hStr(t, "worker_id", w.id), WorkerInstanceID: inst, SessionID: session,
			Lanes: lanesIn, Capabilities: hCaps(t, "caps"), TTL: ttl, Now: now}
		hostile(m, t, "WorkerRegister", p, func(p *model.WorkerRegisterParams) error { return p.Validate() }, model.Store.WorkerRegister)
	case 25:
		p := &model.WorkerHeartbeatParams{Namespace: ns, WorkerInstanceID: inst, SessionID: session, TTL: ttl, Now: now}
		hostile(m, t, "WorkerHeartbeat", p, func(p *model.WorkerHeartbeatParams) error { return p.Validate() }, model.Store.WorkerHeartbeat)
	case 26:
		p := &model.WorkerDeregisterParams{Namespace: ns, WorkerInstanceID: inst, SessionID: session, Now: now}
		hostile(m, t, "WorkerDeregister", p, func(p *model.WorkerDeregisterParams) error { return p.Validate() }, model.Store.WorkerDeregister)
	case 27:
		p := &model.WorkerExpireParams{Namespace: ns, Limit: plausibleOr(t, "limit", genOddInt, 1, 5), Now: now}
		hostile(m, t, "WorkerExpire", p, func(p *model.WorkerExpireParams) error { return p.Validate() }, model.Store.WorkerExpire)
	default:
		p := &model.WorkerListParams{Namespace: ns, Now: now}
		hostile(m, t, "WorkerList", p, func(p *model.WorkerListParams) error { return p.Validate() }, model.Store.WorkerList)
	}
}

// hFlow is a flow id: one the machine made, a zero one, or a fresh one.
func (m *machine) hFlow(t *rapid.T) model.FlowID {
	switch rapid.IntRange(0, 2).Draw(t, "flow_kind") {
	case 0:
		if len(m.flows) > 0 {
			return drawFrom(t, m.flows, "flow").id
		}
	case 1:
		return model.FlowID{}
	}
	return model.FlowID(m.nextUUID(t, "flow_id"))
}

// hostileFlow makes one flow call with hostile parameters.
func (m *machine) hostileFlow(t *rapid.T, op int, id model.ExecutionID, now time.Time) {
	cfg := m.cfg
	f := m.hFlow(t)
	edge := func(label string) model.EdgeID {
		if genBool.Draw(t, label+"_zero") {
			return model.EdgeID{}
		}
		return model.EdgeID(m.nextUUID(t, label))
	}
	policy := func() model.EdgeGroupPolicy {
		return model.EdgeGroupPolicy{Kind: hEnum[model.EdgeGroupKind](t, "group_kind", 4),
			Quorum: plausibleOr(t, "quorum", genOddInt, 0, 1, 2), OnSatisfied: hEnum[model.SiblingPolicy](t, "siblings", 3)}
	}
	switch op {
	case 34:
		p := &model.FlowCreateParams{Flow: f, Tags: hTags(t), Now: now}
		hostile(m, t, "FlowCreate", p, func(p *model.FlowCreateParams) error { return p.Validate() }, flowOp(model.FlowStore.FlowCreate))
	case 35:
		p := &model.FlowAddMemberParams{Flow: f, Execution: id, Now: now}
		hostile(m, t, "FlowAddMember", p, func(p *model.FlowAddMemberParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.FlowAddMember))
	case 36:
		p := &model.EdgeStageParams{Flow: f, Edge: edge("edge"), Upstream: id, Downstream: m.hID(t),
			ExpectedGraphRevision: rapid.Uint64Range(0, 8).Draw(t, "revision"), PassResult: genBool.Draw(t, "pass"),
			MaxSearchEdges: plausibleOr(t, "max_search", genOddInt, 0, 10), Now: now}
		hostile(m, t, "EdgeStage", p, func(p *model.EdgeStageParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.EdgeStage))
	case 37:
		p := &model.EdgeGroupSetParams{Flow: f, Downstream: id, Policy: policy(), Now: now}
		hostile(m, t, "EdgeGroupSet", p, func(p *model.EdgeGroupSetParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.EdgeGroupSet))
	case 38:
		p := &model.FlowSealParams{Flow: f, Now: now}
		hostile(m, t, "FlowSeal", p, func(p *model.FlowSealParams) error { return p.Validate() }, flowOp(model.FlowStore.FlowSeal))
	case 39:
		p := &model.FlowCancelParams{Flow: f, Policy: hEnum[model.FlowCancelPolicy](t, "cancel_policy", 4),
			Reason: hStr(t, "reason", reasons...), Now: now}
		hostile(m, t, "FlowCancel", p, func(p *model.FlowCancelParams) error { return p.Validate() }, flowOp(model.FlowStore.FlowCancel))
	case 40:
		p := &model.ExecutionAwaitChildrenParams{ID: id, Fence: m.hFence(t, id), Now: now}
		for i := range rapid.IntRange(0, 3).Draw(t, "children") {
			c := model.ExecutionCreateParams{ID: m.hID(t), Namespace: hStr(t, "namespace", namespaces...), Lane: hStr(t, "lane", lanes...),
				Kind: hStr(t, "kind", kinds...), Payload: hBytes(t, "payload", model.MaxPayloadBytes), Tags: hTags(t),
				Metadata: hMeta(t), RetryPolicy: hPolicy(t), DelayUntil: m.hTime(t, "delay_until")}
			if chance(t, 10, "child_flow") {
				c.Flow = f
			}
			if i == 0 && chance(t, 20, "same_id_as_parent") {
				c.ID = id
			}
			p.Children = append(p.Children, model.AwaitChild{Create: c, Edge: edge("child_edge")})
		}
		hostile(m, t, "ExecutionAwaitChildren", p, func(p *model.ExecutionAwaitChildrenParams) error { return p.Validate(cfg) },
			flowOp(model.FlowStore.ExecutionAwaitChildren))
	default:
		hostile(m, t, "FlowList", &model.FlowListParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), After: m.hFlow(t),
			Limit: plausibleOr(t, "limit", genOddInt, 1, 2), Finished: genBool.Draw(t, "finished")},
			func(p *model.FlowListParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.FlowList))
		hostile(m, t, "EdgeDescribe", &model.EdgeDescribeParams{Flow: f, Edge: edge("edge")},
			func(p *model.EdgeDescribeParams) error { return p.Validate() }, flowOp(model.FlowStore.EdgeDescribe))
		hostile(m, t, "EdgeGroupDescribe", &model.EdgeGroupDescribeParams{Flow: f, Downstream: id},
			func(p *model.EdgeGroupDescribeParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.EdgeGroupDescribe))
		hostile(m, t, "EdgeListIncoming", &model.EdgeListParams{Execution: id},
			func(p *model.EdgeListParams) error { return p.Validate(cfg) }, flowOp(model.FlowStore.EdgeListIncoming))
	}
}

// hWaitpoint is a waitpoint id: one of the execution's, another one the
// machine saw, a zero one, or a fresh one.
func (m *machine) hWaitpoint(t *rapid.T, id model.ExecutionID) model.WaitpointID {
	switch rapid.IntRange(0, 3).Draw(t, "wp_kind") {
	case 0:
		if so := m.suspObs(id); so != nil && len(so.Waitpoints) > 0 {
			return drawFrom(t, so.Waitpoints, "wp").ID
		}
	case 1:
		if ws := sortedWaitpoints(m.partitionWaitpoints(id.Partition())); len(ws) > 0 {
			return drawFrom(t, ws, "wp_any")
		}
	case 2:
		return model.WaitpointID{}
	}
	return m.newWaitpointID(t)
}

// hCondition is a resume condition with hostile kinds, names, counts and
// nesting.
func (m *machine) hCondition(t *rapid.T, id model.ExecutionID, depth int) model.ResumeCondition {
	c := model.ResumeCondition{Kind: hEnum[model.ConditionKind](t, "cond_kind", 6), Name: hStr(t, "cond_name", condNames...)}
	if genBool.Draw(t, "cond_wp_set") {
		c.Waitpoint = m.hWaitpoint(t, id)
	}
	c.N = plausibleOr(t, "cond_n", genOddInt, 0, 1, 2)
	c.Distinct = hEnum[model.CountDistinct](t, "cond_distinct", 4)
	for range rapid.IntRange(0, 3).Draw(t, "cond_wps") {
		c.Waitpoints = append(c.Waitpoints, m.hWaitpoint(t, id))
	}
	if depth < 6 {
		for range rapid.IntRange(0, 2).Draw(t, "cond_of") {
			c.Of = append(c.Of, m.hCondition(t, id, depth+1))
		}
	}
	if chance(t, 3, "cond_wide") {
		for range model.MaxConditionChildren + 1 {
			c.Of = append(c.Of, model.SignalFor("x"))
		}
	}
	return c
}

// hostileSuspend makes one model.SuspendStore call with hostile
// parameters.
func (m *machine) hostileSuspend(t *rapid.T, op int, id model.ExecutionID, now time.Time) {
	cfg := m.cfg
	switch op {
	case 42:
		p := &model.WaitpointCreateParams{ID: id, Fence: m.hFence(t, id), Waitpoint: m.hWaitpoint(t, id),
			ExpiresAt: m.hTime(t, "expires_at"), SignalLimit: plausibleOr(t, "signal_limit", genOddInt, 0, 1, model.MaxSignalLimit, model.MaxSignalLimit+1), Now: now}
		hostile(m, t, "WaitpointCreate", p, func(p *model.WaitpointCreateParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.WaitpointCreate))
	case 43:
		p := &model.ExecutionSuspendParams{ID: id, Fence: m.hFence(t, id), Waitpoint: m.hWaitpoint(t, id),
			UsePending: genBool.Draw(t, "use_pending"), Reason: hEnum[model.SuspendReason](t, "reason", 7),
			Condition: m.hCondition(t, id, 1), TimeoutAt: m.hTime(t, "timeout_at"),
			TimeoutBehavior: hEnum[model.TimeoutBehavior](t, "behavior", 7),
			Policy: model.ResumePolicy{Delay: hDuration(t, "delay", 0, time.Second), KeepWaitpoints: genBool.Draw(t, "keep_wps"),
				KeepSignals: genBool.Draw(t, "keep_signals")},
			SignalLimit: plausibleOr(t, "signal_limit", genOddInt, 0, 1), Now: now}
		if genBool.Draw(t, "suspension_set") {
			p.Suspension = model.SuspensionID(m.nextUUID(t, "susp"))
		}
		hostile(m, t, "ExecutionSuspend", p, func(p *model.ExecutionSuspendParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.ExecutionSuspend))
	case 44:
		p := &model.SignalDeliverParams{Execution: id, Waitpoint: m.hWaitpoint(t, id), WaitpointCreatedAt: m.hTime(t, "created_at"),
			Name: hStr(t, "name", signalNames...), Source: hStr(t, "source", sigSources...),
			Payload: hBytes(t, "payload", model.MaxSignalPayloadBytes), IdempotencyKey: hStr(t, "key", sigKeys...),
			DedupTTL: hDuration(t, "dedup_ttl", 0, time.Second, model.MaxSignalDedupTTL), Now: now}
		if w := m.suspObs(id).waitpoint(p.Waitpoint); w != nil && genBool.Draw(t, "token_right") {
			p.WaitpointCreatedAt = w.CreatedAt
		}
		if genBool.Draw(t, "signal_set") {
			p.Signal = model.SignalID(m.nextUUID(t, "sig"))
		}
		hostile(m, t, "SignalDeliver", p, func(p *model.SignalDeliverParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.SignalDeliver))
	case 45:
		p := &model.ExecutionResumeParams{ID: id, Now: now}
		hostile(m, t, "ExecutionResume", p, func(p *model.ExecutionResumeParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.ExecutionResume))
	case 46:
		p := &model.SuspensionExpireParams{ID: id, Now: now}
		hostile(m, t, "SuspensionExpire", p, func(p *model.SuspensionExpireParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.SuspensionExpire))
	case 47:
		p := &model.WaitpointExpireParams{ID: id, Now: now}
		hostile(m, t, "WaitpointExpire", p, func(p *model.WaitpointExpireParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.WaitpointExpire))
	case 48:
		hostile(m, t, "SuspensionDescribe", &model.SuspensionDescribeParams{ID: id},
			func(p *model.SuspensionDescribeParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.SuspensionDescribe))
	case 49:
		hostile(m, t, "WaitpointList", &model.WaitpointListParams{ID: id},
			func(p *model.WaitpointListParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.WaitpointList))
	default:
		p := &model.SuspendedListParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3),
			Limit: plausibleOr(t, "limit", genOddInt, 1, 2)}
		if genBool.Draw(t, "after") {
			p.After = m.hID(t)
		}
		hostile(m, t, "SuspendedList", p, func(p *model.SuspendedListParams) error { return p.Validate(cfg) }, suspOp(model.SuspendStore.SuspendedList))
	}
}

func hBudget(t *rapid.T) model.BudgetID {
	if chance(t, 20, "zero_budget") {
		return model.BudgetID{}
	}
	return drawFrom(t, budgetIDs, "budget")
}

func hQuota(t *rapid.T) model.QuotaID {
	if chance(t, 20, "zero_quota") {
		return model.QuotaID{}
	}
	return drawFrom(t, quotaIDs, "quota")
}

// hostileAdmission makes one model.AdmissionStore call (or a create with
// attachments) with hostile parameters. The admission model is no longer
// known afterwards.
func (m *machine) hostileAdmission(t *rapid.T, op int, id model.ExecutionID, now time.Time) {
	cfg := m.cfg
	m.adm.unknown = true
	switch op {
	case 51:
		p := &model.BudgetCreateParams{ID: hBudget(t), Limits: map[string]model.BudgetLimit{
			hStr(t, "dim", budgetDims...): {Hard: genOddMillis.Draw(t, "hard"), Soft: genOddMillis.Draw(t, "soft")}},
			ResetInterval: hDuration(t, "reset", 0, time.Second), OnHardBreach: hStr(t, "action", model.BreachNone, model.BreachCancelFlow), Now: now}
		hostile(m, t, "BudgetCreate", p, func(p *model.BudgetCreateParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.BudgetCreate))
	case 52:
		p := &model.BudgetReportParams{ID: hBudget(t), Deltas: map[string]int64{hStr(t, "dim", budgetDims...): genOddMillis.Draw(t, "delta")},
			DedupKey: hStr(t, "dedup_key", dedupKeys...), Execution: m.hID(t), Now: now}
		hostile(m, t, "BudgetReport", p, func(p *model.BudgetReportParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.BudgetReport))
	case 53:
		p := &model.QuotaCreateParams{ID: hQuota(t), Rate: plausibleOr(t, "rate", genOddInt, 0, 2), Window: hDuration(t, "window", 0, time.Second),
			Jitter: hDuration(t, "jitter", 0), Concurrency: plausibleOr(t, "concurrency", genOddInt, 0, 1), Now: now}
		hostile(m, t, "QuotaCreate", p, func(p *model.QuotaCreateParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.QuotaCreate))
	case 54:
		p := &model.QuotaAdmitParams{ID: hQuota(t), Key: hStr(t, "key", quotaKeys...), Execution: id, Token: hStr(t, "token", admitTokens...),
			Jitter: hDuration(t, "jitter", 0), Now: now}
		hostile(m, t, "QuotaAdmit", p, func(p *model.QuotaAdmitParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.QuotaAdmit))
	case 55:
		p := &model.QuotaReleaseParams{ID: hQuota(t), Key: hStr(t, "key", quotaKeys...), Execution: id, Token: hStr(t, "token", admitTokens...), Now: now}
		hostile(m, t, "QuotaRelease", p, func(p *model.QuotaReleaseParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.QuotaRelease))
	case 56:
		p := &model.AdmissionUnblockParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3), Budgets: []model.BudgetID{hBudget(t)},
			Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: hQuota(t), Key: hStr(t, "key", quotaKeys...)}, Max: plausibleOr(t, "max", genOddInt, 0, 1)}},
			Filter: model.ScannerFilter{Namespace: hStr(t, "filter_ns", namespaces...), TagKey: hStr(t, "tag_key", "", "app.k"), TagValue: hStr(t, "tag_value", "", "v")},
			Limit:  plausibleOr(t, "limit", genOddInt, 1, 10), Now: now}
		hostile(m, t, "AdmissionUnblock", p, func(p *model.AdmissionUnblockParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.AdmissionUnblock))
	case 57:
		p := &model.QuotaReleaseAckParams{Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3),
			Items: []model.QuotaHold{{Execution: id, Quota: hQuota(t), Token: hStr(t, "token", admitTokens...)}}}
		hostile(m, t, "QuotaReleaseAck", p, func(p *model.QuotaReleaseAckParams) error { return p.Validate(cfg) }, admOp(model.AdmissionStore.QuotaReleaseAck))
	default:
		p := &model.ExecutionClaimParams{ID: id, Capabilities: hCaps(t, "caps"), AdmissionToken: hStr(t, "token", "", "t1"), LeaseRequest: m.hLease(t), Now: now}
		m.claimed(hostile(m, t, "ExecutionClaim", p, func(p *model.ExecutionClaimParams) error { return p.Validate(cfg) }, model.Store.ExecutionClaim))
	}
}

// hostileStream makes one model.StreamStore call with hostile parameters:
// odd modes and types, payloads and documents at and past their limits,
// odd MaxLens and TTLs, a summary where none belongs or none where one
// does, negative and far attempts, odd counts and cursors. A successful
// append is recorded in the stream model (its effect is the one the
// model knows).
func (m *machine) hostileStream(t *rapid.T, op int, id model.ExecutionID, now time.Time) {
	cfg := m.cfg
	switch op {
	case 59:
		p := &model.StreamAppendParams{ID: id, Fence: m.hFence(t, id), Mode: hStr(t, "mode", streamModes...),
			Type: hStr(t, "type", frameTypes...), Payload: hBytes(t, "payload", model.MaxFramePayloadBytes),
			Encoding: hStr(t, "encoding", frameEncodings...), CorrelationID: hStr(t, "correlation_id", frameCorrIDs...),
			MaxLen: plausibleOr(t, "max_len", genOddInt, 0, 1, 4, model.MaxStreamMaxLen, model.MaxStreamMaxLen+1),
			TTL:    hDuration(t, "ttl", 0, time.Second, 5*time.Second, time.Hour, time.Hour+time.Millisecond), Now: now}
		if genBool.Draw(t, "summary_set") {
			p.Summary = &model.SummaryUpdate{BaseVersion: rapid.Uint64Range(0, 3).Draw(t, "base_version"),
				Document: hBytes(t, "document", model.MaxSummaryBytes)}
		}
		prev := m.snap(id)
		r := hostile(m, t, "StreamAppend", p, func(p *model.StreamAppendParams) error { return p.Validate(cfg) }, streamOp(model.StreamStore.StreamAppend))
		if r != nil && prev != nil && prev.CurrentAttempt != nil {
			m.noteAppend(id, prev.CurrentAttempt.Index, p)
		}
	case 60:
		p := &model.StreamReadParams{ID: id, Attempt: plausibleOr(t, "attempt", genOddInt, 0, 1),
			After: plausibleOr(t, "after", rapid.Uint64(), 0, 1), Count: plausibleOr(t, "count", genOddInt, 1, 5, model.MaxStreamRead, model.MaxStreamRead+1),
			ExcludeBestEffort: genBool.Draw(t, "exclude_best_effort"), Now: now}
		hostile(m, t, "StreamRead", p, func(p *model.StreamReadParams) error { return p.Validate(cfg) }, streamOp(model.StreamStore.StreamRead))
	case 61:
		p := &model.LanePauseParams{Lane: hStr(t, "lane", lanes...), Reason: hStr(t, "reason", reasons...), Now: now}
		hostile(m, t, "LanePause", p, (*model.LanePauseParams).Validate, optional(model.LaneStore.LanePause))
	case 62:
		p := &model.LaneResumeParams{Lane: hStr(t, "lane", lanes...), Now: now}
		hostile(m, t, "LaneResume", p, (*model.LaneResumeParams).Validate, optional(model.LaneStore.LaneResume))
	case 63:
		p := &model.LaneStateParams{Lane: hStr(t, "lane", lanes...)}
		hostile(m, t, "LaneState", p, (*model.LaneStateParams).Validate, optional(model.LaneStore.LaneState))
	default:
		p := &model.StreamSummaryParams{ID: id, Attempt: plausibleOr(t, "attempt", genOddInt, 0, 1), Now: now}
		hostile(m, t, "StreamSummary", p, func(p *model.StreamSummaryParams) error { return p.Validate(cfg) }, streamOp(model.StreamStore.StreamSummary))
	}
}

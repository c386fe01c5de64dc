package storetest

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// badInput is one call with one bad input. It must fail with code (and
// ErrValidation) naming field, and must leave the store as it was.
type badInput struct {
	name  string
	field string
	code  *model.Error
	call  func() error
}

// caseMaker builds a badInput from a mutation of a valid parameter set.
type caseMaker[P any] func(name, field string, code *model.Error, mut func(*P)) badInput

// maker returns the caseMaker of one store method: base returns valid
// parameters, do is the method.
func maker[P, R any](ctx context.Context, base func() *P, do func(context.Context, *P) (R, error)) caseMaker[P] {
	return func(name, field string, code *model.Error, mut func(*P)) badInput {
		return badInput{name: name, field: field, code: code, call: func() error {
			p := base()
			mut(p)
			_, err := do(ctx, p)
			return err
		}}
	}
}

// fixture is a store holding one execution in each state the validated
// methods act on, and a registered worker, so that a bad input that slipped
// through validation would change something.
type fixture struct {
	*harness
	now time.Time
	// eligible has a deadline already passed; due has a lease and an
	// attempt timeout already due; expired has a marked lease and a live
	// reclaim grant for wA; granted has a live claim grant for wA; delayed
	// is due for promotion; routed is route-blocked with no requirements.
	// (A store without model.GrantReclaimer or model.Blocker gets no
	// reclaim grant or block: only the tests of those operations use
	// them, and they skip.)
	eligible, active, due, expired, granted, delayed, routed, terminal model.ExecutionID
	fence                                                              model.Fence
	// out is an id whose partition the store does not have.
	out model.ExecutionID
	// adm is the admission fixture (withAdmission), for the groups of
	// model.AdmissionStore only.
	adm *admFixture
}

func newFixture(h *harness) *fixture {
	h.t.Helper()
	f := &fixture{harness: h, now: at(time.Second)}
	f.eligible = h.create(at(0), withDeadline(at(500*time.Millisecond)))
	var cr *model.ClaimResult
	f.active, cr = h.active(at(0))
	f.fence = cr.Fence()
	claimShort := func(id model.ExecutionID) {
		call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
			ID: id, LeaseRequest: h.leaseReq(wA, time.Millisecond), Now: at(0),
		})).must(h.t)
	}
	f.due = h.create(at(0), withTimeout(time.Millisecond))
	claimShort(f.due)
	f.expired = h.create(at(0))
	claimShort(f.expired)
	h.markExpired(f.expired, at(time.Millisecond))
	if has[model.GrantReclaimer](h) {
		h.reclaimGrant(f.expired, wA, at(time.Millisecond))
	}
	f.granted = h.create(at(0))
	h.grant(f.granted, wA, at(0))
	f.delayed = h.create(at(0), withDelay(at(500*time.Millisecond)))
	f.routed = h.create(at(0))
	if has[model.Blocker](h) {
		h.block(f.routed, model.WaitingForCapableWorker, at(0))
	}
	f.terminal = h.create(at(0))
	h.cancelOp(f.terminal, at(0))
	call(h.s.WorkerRegister(h.ctx, &model.WorkerRegisterParams{
		Namespace: nsA, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, SessionID: "s1",
		Lanes: []model.LaneID{laneA}, TTL: time.Minute, Now: at(0),
	})).must(h.t)
	f.out = model.NewExecutionID(h.cfg.FlowPartitions, h.uuid())
	return f
}

// testValidation states, for every method, that each bad input is refused
// with a validation error naming it, and that nothing was written.
func testValidation(t *testing.T, newStore NewStoreFunc) {
	groups := []struct {
		name  string
		cases func(f *fixture) []badInput
	}{
		{"ExecutionCreate", (*fixture).createCases},
		{"ExecutionCancel", (*fixture).cancelCases},
		{"ExecutionChangePriority", (*fixture).changePriorityCases},
		{"ExecutionComplete", (*fixture).completeCases},
		{"ExecutionDelay", (*fixture).delayCases},
		{"ExecutionExpire", (*fixture).expireCases},
		{"ExecutionFail", (*fixture).failCases},
		{"ExecutionReplay", (*fixture).replayCases},
		{"ExecutionDelete", (*fixture).deleteCases},
		{"ExecutionUpdateProgress", (*fixture).progressCases},
		{"ClaimGrantIssue", (*fixture).claimGrantCases},
		{"ExecutionBlock", (*fixture).blockCases},
		{"ExecutionClaim", (*fixture).claimCases},
		{"ExecutionClaimNext", (*fixture).claimNextCases},
		{"ExecutionGrantAndClaim", (*fixture).grantAndClaimCases},
		{"ExecutionUnblock", (*fixture).unblockCases},
		{"ExecutionReclaim", (*fixture).reclaimCases},
		{"ExecutionRecover", (*fixture).recoverCases},
		{"LeaseMarkExpired", (*fixture).markExpiredCases},
		{"LeaseRenew", (*fixture).renewCases},
		{"LeaseRevoke", (*fixture).revokeCases},
		{"ReclaimGrantIssue", (*fixture).reclaimGrantCases},
		{"ExecutionPromoteDelayed", (*fixture).promoteCases},
		{"IndexScanDue", (*fixture).scanCases},
		{"PartitionDue", (*fixture).partitionDueCases},
		{"RouteUnblock", (*fixture).routeUnblockCases},
		{"WorkerDeregister", (*fixture).deregisterCases},
		{"WorkerExpire", (*fixture).workerExpireCases},
		{"WorkerHeartbeat", (*fixture).heartbeatCases},
		{"WorkerList", (*fixture).workerListCases},
		{"WorkerRegister", (*fixture).registerCases},
		{"Reads", (*fixture).readCases},
		{"ExecutionList", (*fixture).listCases},
		{"LeaseHistory", (*fixture).historyCases},
	}
	// The groups of optional operations skip at once on a store without
	// them (their cases call in subtests, which cannot skip the group).
	optional := map[string]func(*harness){
		"ExecutionBlock":    skipWithout[model.Blocker],
		"ExecutionUnblock":  skipWithout[model.Blocker],
		"ExecutionReclaim":  skipWithout[model.GrantReclaimer],
		"ReclaimGrantIssue": skipWithout[model.GrantReclaimer],
		"ExecutionDelete":   skipWithout[model.RetentionStore],
	}
	groups = append(groups, suspendValidation...)
	for _, g := range suspendValidation {
		optional[g.name] = skipWithoutSuspend
	}
	groups = append(groups, admissionFieldValidation...)
	groups = append(groups, admissionValidation...)
	admission := map[string]bool{}
	for _, g := range admissionValidation {
		optional[g.name] = skipWithoutAdmission
		admission[g.name] = true
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			if skip := optional[g.name]; skip != nil {
				skip(h)
			}
			f := newFixture(h)
			if admission[g.name] {
				f.withAdmission()
			}
			before := f.validationView(h)
			for _, c := range g.cases(f) {
				t.Run(c.name, func(t *testing.T) {
					err := c.call()
					if !errors.Is(err, model.ErrValidation) {
						t.Fatalf("err = %v, want a validation error", err)
					}
					e := modelErr(t, err, c.code)
					if e.Field != c.field {
						t.Fatalf("field %q, want %q (%v)", e.Field, c.field, err)
					}
					if e.Detail == "out_of_range" && (e.Got == "" || e.Want == "") {
						t.Fatalf("%v: an out-of-range error must say the rejected value and the accepted range", err)
					}
					if d := cmp.Diff(before, f.validationView(f.on(t)), cmpOpts...); d != "" {
						t.Fatalf("store changed (-before +after):\n%s", d)
					}
				})
			}
		})
	}
}

// Shared bad inputs.

var (
	tooLongText = strings.Repeat("x", model.MaxReasonBytes+1)
	invalidUTF8 = "ok\xff\xfe"
	year10000   = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	epoch       = time.UnixMilli(0)
)

func idCases[P any](mk caseMaker[P], out model.ExecutionID, set func(*P, model.ExecutionID)) []badInput {
	return []badInput{
		mk("id_zero", "ID", model.ErrInvalidInput, func(p *P) { set(p, model.ExecutionID{}) }),
		mk("id_partition_out_of_range", "ID", model.ErrInvalidInput, func(p *P) { set(p, out) }),
	}
}

func nowCases[P any](mk caseMaker[P], set func(*P, time.Time)) []badInput {
	return timeCases(mk, "Now", true, set)
}

// timeCases are the bad values of a time input; required adds the zero time.
func timeCases[P any](mk caseMaker[P], field string, required bool, set func(*P, time.Time)) []badInput {
	cs := []badInput{
		mk(field+"_unix_epoch", field, model.ErrInvalidInput, func(p *P) { set(p, epoch) }),
		mk(field+"_before_epoch", field, model.ErrInvalidInput, func(p *P) { set(p, time.UnixMilli(-1)) }),
		mk(field+"_after_9999", field, model.ErrInvalidInput, func(p *P) { set(p, year10000) }),
	}
	if required {
		cs = append(cs, mk(field+"_zero", field, model.ErrInvalidInput, func(p *P) { set(p, time.Time{}) }))
	}
	return cs
}

func textCases[P any](mk caseMaker[P], field string, set func(*P, string)) []badInput {
	return []badInput{
		mk(field+"_too_long", field, model.ErrInvalidInput, func(p *P) { set(p, tooLongText) }),
		mk(field+"_invalid_utf8", field, model.ErrInvalidInput, func(p *P) { set(p, invalidUTF8) }),
	}
}

// nameCases are the bad values of a name-shaped id (lane, worker id, …).
func nameCases[P any](mk caseMaker[P], field string, maxLen int, set func(*P, string)) []badInput {
	return []badInput{
		mk(field+"_empty", field, model.ErrInvalidInput, func(p *P) { set(p, "") }),
		mk(field+"_too_long", field, model.ErrInvalidInput, func(p *P) { set(p, strings.Repeat("a", maxLen+1)) }),
		mk(field+"_space", field, model.ErrInvalidInput, func(p *P) { set(p, "a b") }),
		mk(field+"_brace", field, model.ErrInvalidInput, func(p *P) { set(p, "{fp:1}") }),
		mk(field+"_colon", field, model.ErrInvalidInput, func(p *P) { set(p, "a:b") }),
		mk(field+"_non_ascii", field, model.ErrInvalidInput, func(p *P) { set(p, "lané") }),
	}
}

func namespaceCases[P any](mk caseMaker[P], set func(*P, model.Namespace)) []badInput {
	cs := nameCases(mk, "Namespace", 64, func(p *P, s string) { set(p, model.Namespace(s)) })
	return append(cs, mk("namespace_upper_case", "Namespace", model.ErrInvalidInput, func(p *P) { set(p, "Tenant") }))
}

func laneCases[P any](mk caseMaker[P], set func(*P, model.LaneID)) []badInput {
	return nameCases(mk, "Lane", 64, func(p *P, s string) { set(p, model.LaneID(s)) })
}

func workerIDCases[P any](mk caseMaker[P], set func(*P, model.WorkerID)) []badInput {
	return nameCases(mk, "WorkerID", 128, func(p *P, s string) { set(p, model.WorkerID(s)) })
}

func instanceCases[P any](mk caseMaker[P], set func(*P, model.WorkerInstanceID)) []badInput {
	return nameCases(mk, "WorkerInstanceID", 128, func(p *P, s string) { set(p, model.WorkerInstanceID(s)) })
}

// capCases are the bad capability sets of every kind.
func capCases[P any](mk caseMaker[P], field string, set func(*P, model.Capabilities)) []badInput {
	many := make(model.Capabilities, model.MaxCapabilityTokens+1)
	for i := range many {
		many[i] = "cap-" + strconv.Itoa(i)
	}
	bad := []struct {
		name string
		caps model.Capabilities
	}{
		{"empty_token", model.Capabilities{"gpu", ""}},
		{"comma", model.Capabilities{"gpu,cpu"}},
		{"space", model.Capabilities{"gpu cpu"}},
		{"tab", model.Capabilities{"gpu\t"}},
		{"newline", model.Capabilities{"gpu\n"}},
		{"control", model.Capabilities{"gpu\x01"}},
		{"del", model.Capabilities{"gpu\x7f"}},
		{"unicode_space", model.Capabilities{"gpu\u00a0x"}},
		{"invalid_utf8", model.Capabilities{"gpu\xff"}},
		{"too_many_tokens", many},
		{"too_many_bytes", model.Capabilities{strings.Repeat("a", 2100), strings.Repeat("b", 2100)}},
		{"token_too_long", model.Capabilities{strings.Repeat("a", model.MaxCapabilityBytes+1)}},
	}
	var cs []badInput
	for _, b := range bad {
		cs = append(cs, mk(field+"_"+b.name, field, model.ErrInvalidCapabilities, func(p *P) { set(p, b.caps) }))
	}
	return cs
}

// fenceCases are the missing, partial and misplaced fences. setSource may
// be nil for methods only workers call.
func fenceCases[P any](mk caseMaker[P], good model.Fence, setFence func(*P, model.Fence), setSource func(*P, model.Source)) []badInput {
	cs := []badInput{
		mk("fence_missing", "Fence", model.ErrFenceRequired, func(p *P) { setFence(p, model.Fence{}) }),
		mk("fence_lease_id_only", "Fence", model.ErrPartialFenceTriple, func(p *P) { setFence(p, model.Fence{LeaseID: good.LeaseID}) }),
		mk("fence_epoch_only", "Fence", model.ErrPartialFenceTriple, func(p *P) { setFence(p, model.Fence{LeaseEpoch: good.LeaseEpoch}) }),
		mk("fence_no_epoch", "Fence", model.ErrPartialFenceTriple, func(p *P) {
			setFence(p, model.Fence{LeaseID: good.LeaseID, AttemptID: good.AttemptID})
		}),
		mk("fence_no_attempt_id", "Fence", model.ErrPartialFenceTriple, func(p *P) {
			setFence(p, model.Fence{LeaseID: good.LeaseID, LeaseEpoch: good.LeaseEpoch})
		}),
		mk("fence_no_lease_id", "Fence", model.ErrPartialFenceTriple, func(p *P) {
			setFence(p, model.Fence{LeaseEpoch: good.LeaseEpoch, AttemptID: good.AttemptID})
		}),
	}
	if setSource != nil {
		cs = append(cs,
			mk("operator_with_fence", "Fence", model.ErrInvalidInput, func(p *P) { setSource(p, model.SourceOperator) }),
			mk("unknown_source", "Source", model.ErrInvalidInput, func(p *P) { setSource(p, "flow_cascade") }),
		)
	}
	return cs
}

// leaseRequestCases are the bad lease requests.
func leaseRequestCases[P any](mk caseMaker[P], get func(*P) *model.LeaseRequest) []badInput {
	cs := workerIDCases(mk, func(p *P, w model.WorkerID) { get(p).WorkerID = w })
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { get(p).WorkerInstanceID = w })...)
	return append(cs,
		mk("lease_id_zero", "LeaseID", model.ErrInvalidInput, func(p *P) { get(p).LeaseID = model.LeaseID{} }),
		mk("attempt_id_zero", "AttemptID", model.ErrInvalidInput, func(p *P) { get(p).AttemptID = model.AttemptID{} }),
		mk("lease_ttl_zero", "LeaseTTL", model.ErrInvalidInput, func(p *P) { get(p).LeaseTTL = 0 }),
		mk("lease_ttl_below_1ms", "LeaseTTL", model.ErrInvalidInput, func(p *P) { get(p).LeaseTTL = time.Microsecond }),
		mk("lease_ttl_negative", "LeaseTTL", model.ErrInvalidInput, func(p *P) { get(p).LeaseTTL = -time.Second }),
		mk("lease_ttl_too_long", "LeaseTTL", model.ErrInvalidInput, func(p *P) { get(p).LeaseTTL = model.MaxLeaseTTL + time.Millisecond }),
	)
}

func limitCases[P any](mk caseMaker[P], field string, set func(*P, int)) []badInput {
	return []badInput{
		mk(field+"_zero", field, model.ErrInvalidInput, func(p *P) { set(p, 0) }),
		mk(field+"_negative", field, model.ErrInvalidInput, func(p *P) { set(p, -1) }),
		mk(field+"_too_large", field, model.ErrInvalidInput, func(p *P) { set(p, model.MaxPageSize+1) }),
	}
}

func partitionCases[P any](mk caseMaker[P], n int, set func(*P, int)) []badInput {
	return []badInput{
		mk("partition_negative", "Partition", model.ErrInvalidInput, func(p *P) { set(p, -1) }),
		mk("partition_out_of_range", "Partition", model.ErrInvalidInput, func(p *P) { set(p, n) }),
	}
}

func grantTTLCases[P any](mk caseMaker[P], set func(*P, time.Duration)) []badInput {
	return []badInput{
		mk("grant_ttl_zero", "GrantTTL", model.ErrInvalidInput, func(p *P) { set(p, 0) }),
		mk("grant_ttl_below_1ms", "GrantTTL", model.ErrInvalidInput, func(p *P) { set(p, time.Microsecond) }),
		mk("grant_ttl_too_long", "GrantTTL", model.ErrInvalidInput, func(p *P) { set(p, model.MaxGrantTTL+time.Millisecond) }),
	}
}

func sessionCases[P any](mk caseMaker[P], set func(*P, string)) []badInput {
	return []badInput{
		mk("session_empty", "SessionID", model.ErrInvalidInput, func(p *P) { set(p, "") }),
		mk("session_too_long", "SessionID", model.ErrInvalidInput, func(p *P) { set(p, strings.Repeat("s", 129)) }),
		mk("session_invalid_utf8", "SessionID", model.ErrInvalidInput, func(p *P) { set(p, invalidUTF8) }),
	}
}

func workerTTLCases[P any](mk caseMaker[P], set func(*P, time.Duration)) []badInput {
	return []badInput{
		mk("ttl_zero", "TTL", model.ErrInvalidInput, func(p *P) { set(p, 0) }),
		mk("ttl_too_long", "TTL", model.ErrInvalidInput, func(p *P) { set(p, model.MaxLeaseTTL+time.Millisecond) }),
	}
}

// Per-method cases.

func (f *fixture) createCases() []badInput {
	type P = model.ExecutionCreateParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: model.NewExecutionID(f.p0, f.uuid()), Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("p"), Now: f.now}
	}, f.s.ExecutionCreate)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })...)
	cs = append(cs, laneCases(mk, func(p *P, l model.LaneID) { p.Lane = l })...)
	cs = append(cs,
		mk("kind_empty", "Kind", model.ErrInvalidInput, func(p *P) { p.Kind = "" }),
		mk("kind_space", "Kind", model.ErrInvalidInput, func(p *P) { p.Kind = "send email" }),
		mk("kind_control", "Kind", model.ErrInvalidInput, func(p *P) { p.Kind = "send\x7f" }),
		mk("kind_non_ascii", "Kind", model.ErrInvalidInput, func(p *P) { p.Kind = "envoyé" }),
		mk("kind_too_long", "Kind", model.ErrInvalidInput, func(p *P) { p.Kind = model.Kind(strings.Repeat("k", 129)) }),
		mk("payload_too_large", "Payload", model.ErrInvalidInput, func(p *P) { p.Payload = make([]byte, model.MaxPayloadBytes+1) }),
		mk("retention_negative", "Retention.Completed", model.ErrInvalidInput, func(p *P) { p.Retention.Completed = -time.Hour }),
		mk("retention_sub_ms", "Retention.Failed", model.ErrInvalidInput, func(p *P) { p.Retention.Failed = time.Microsecond }),
		mk("retention_fraction_ms", "Retention.Cancelled", model.ErrInvalidInput, func(p *P) { p.Retention.Cancelled = time.Second + time.Microsecond }),
		mk("retention_too_long", "Retention.Completed", model.ErrInvalidInput, func(p *P) { p.Retention.Completed = model.MaxRetention + time.Millisecond }),
	)
	for _, k := range []string{"nodot", "A.b", "a..b", "a.", ".b", "1a.b", "a.b c", "a-b.c", "ab", "a.b\x7f", "a.é", "_a.b", strings.Repeat("a", 127) + ".b"} {
		cs = append(cs, mk("tag_key_"+strconv.Quote(k), "Tags", model.ErrInvalidTagKey, func(p *P) { p.Tags = map[string]string{"app.ok": "1", k: "v"} }))
	}
	manyTags := map[string]string{}
	for i := range model.MaxTags + 1 {
		manyTags["app.t"+strconv.Itoa(i)] = "v"
	}
	cs = append(cs,
		mk("tags_too_many", "Tags", model.ErrInvalidInput, func(p *P) { p.Tags = manyTags }),
		mk("tag_value_too_long", "Tags", model.ErrInvalidInput, func(p *P) {
			p.Tags = map[string]string{"app.v": strings.Repeat("v", model.MaxTagValueBytes+1)}
		}),
		mk("tag_value_invalid_utf8", "Tags", model.ErrInvalidInput, func(p *P) { p.Tags = map[string]string{"app.v": invalidUTF8} }),
	)
	for _, k := range []string{"", "has space", "tab\t", "ctl\x01", "é", "del\x7f", strings.Repeat("k", model.MaxMetadataKeyBytes+1)} {
		cs = append(cs, mk("metadata_key_"+strconv.Quote(k), "Metadata", model.ErrInvalidInput, func(p *P) { p.Metadata = map[string]string{"ok": "1", k: "v"} }))
	}
	manyMeta := map[string]string{}
	for i := range model.MaxMetadataEntries + 1 {
		manyMeta["m"+strconv.Itoa(i)] = "v"
	}
	cs = append(cs,
		mk("metadata_too_many", "Metadata", model.ErrInvalidInput, func(p *P) { p.Metadata = manyMeta }),
		mk("metadata_value_invalid_utf8", "Metadata", model.ErrInvalidInput, func(p *P) { p.Metadata = map[string]string{"v": invalidUTF8} }),
		mk("metadata_too_large", "Metadata", model.ErrInvalidInput, func(p *P) {
			p.Metadata = map[string]string{"a": strings.Repeat("v", model.MaxMetadataBytes/2), "b": strings.Repeat("v", model.MaxMetadataBytes/2)}
		}),
	)
	cs = append(cs, capCases(mk, "RequiredCapabilities", func(p *P, c model.Capabilities) { p.RequiredCapabilities = c })...)
	policies := []struct {
		name   string
		field  string
		policy model.RetryPolicy
	}{
		{"max_retries_negative", "MaxRetries", model.RetryPolicy{MaxRetries: -1}},
		{"max_retries_too_many", "MaxRetries", model.RetryPolicy{MaxRetries: model.MaxRetries + 1}},
		{"backoff_unknown", "Backoff", model.RetryPolicy{Backoff: model.BackoffFixed + 1}},
		{"delay_negative", "Delay", model.RetryPolicy{Backoff: model.BackoffFixed, Delay: -time.Millisecond}},
		{"delay_fractional", "Delay", model.RetryPolicy{Backoff: model.BackoffFixed, Delay: 1500 * time.Microsecond}},
		{"delay_too_long", "Delay", model.RetryPolicy{Backoff: model.BackoffFixed, Delay: model.MaxPolicyDelay + time.Millisecond}},
		{"initial_delay_negative", "InitialDelay", model.RetryPolicy{InitialDelay: -time.Second}},
		{"initial_delay_fractional", "InitialDelay", model.RetryPolicy{InitialDelay: 2500 * time.Microsecond}},
		{"initial_delay_too_long", "InitialDelay", model.RetryPolicy{InitialDelay: model.MaxPolicyDelay + time.Millisecond}},
		{"max_delay_negative", "MaxDelay", model.RetryPolicy{MaxDelay: -time.Second}},
		{"max_delay_fractional", "MaxDelay", model.RetryPolicy{MaxDelay: time.Minute + time.Microsecond}},
		{"max_delay_too_long", "MaxDelay", model.RetryPolicy{MaxDelay: model.MaxPolicyDelay + time.Millisecond}},
		{"max_delay_below_initial", "MaxDelay", model.RetryPolicy{InitialDelay: 10 * time.Second, MaxDelay: 5 * time.Second}},
		{"max_delay_below_default_initial", "MaxDelay", model.RetryPolicy{MaxDelay: 500 * time.Millisecond}},
		{"multiplier_below_one", "Multiplier", model.RetryPolicy{Multiplier: 0.5}},
		{"multiplier_negative", "Multiplier", model.RetryPolicy{Multiplier: -2}},
		{"multiplier_too_large", "Multiplier", model.RetryPolicy{Multiplier: 100.5}},
		{"multiplier_nan", "Multiplier", model.RetryPolicy{Multiplier: math.NaN()}},
		{"multiplier_inf", "Multiplier", model.RetryPolicy{Multiplier: math.Inf(1)}},
	}
	for _, b := range policies {
		cs = append(cs, mk("retry_policy_"+b.name, "RetryPolicy."+b.field, model.ErrInvalidPolicy, func(p *P) { p.RetryPolicy = b.policy }))
	}
	cs = append(cs,
		mk("max_reclaims_negative", "MaxReclaims", model.ErrInvalidInput, func(p *P) { p.MaxReclaims = -1 }),
		mk("max_reclaims_too_many", "MaxReclaims", model.ErrInvalidInput, func(p *P) { p.MaxReclaims = 1_000_001 }),
		mk("max_replays_negative", "MaxReplays", model.ErrInvalidInput, func(p *P) { p.MaxReplays = -1 }),
		mk("max_replays_too_many", "MaxReplays", model.ErrInvalidInput, func(p *P) { p.MaxReplays = 1_000_001 }),
		mk("attempt_timeout_negative", "AttemptTimeout", model.ErrInvalidInput, func(p *P) { p.AttemptTimeout = -time.Second }),
		mk("attempt_timeout_below_1ms", "AttemptTimeout", model.ErrInvalidInput, func(p *P) { p.AttemptTimeout = 500 * time.Microsecond }),
		mk("attempt_timeout_too_long", "AttemptTimeout", model.ErrInvalidInput, func(p *P) { p.AttemptTimeout = model.MaxPolicyDelay + time.Millisecond }),
		mk("idempotency_key_too_long", "IdempotencyKey", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey = strings.Repeat("k", model.MaxIdempotencyKeyBytes+1)
		}),
		mk("idempotency_key_invalid_utf8", "IdempotencyKey", model.ErrInvalidInput, func(p *P) { p.IdempotencyKey = invalidUTF8 }),
		mk("idempotency_key_control", "IdempotencyKey", model.ErrInvalidInput, func(p *P) { p.IdempotencyKey = "a\nb" }),
		mk("idempotency_ttl_below_1s", "IdempotencyTTL", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey, p.IdempotencyTTL = "k", 999*time.Millisecond
		}),
		mk("idempotency_ttl_too_long", "IdempotencyTTL", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey, p.IdempotencyTTL = "k", model.MaxIdempotencyTTL+time.Second
		}),
		mk("idempotency_states_without_key", "IdempotencyStates", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyStates = model.PublicStates(model.PublicWaiting)
		}),
		mk("idempotency_states_unknown", "IdempotencyStates", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey, p.IdempotencyStates = "k", model.PublicStates(model.PublicWaiting, 0)
		}),
		mk("idempotency_states_out_of_range", "IdempotencyStates", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey, p.IdempotencyStates = "k", model.PublicStates(model.PublicSkipped+1)
		}),
		mk("idempotency_states_beyond_the_set", "IdempotencyStates", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey, p.IdempotencyStates = "k", model.PublicStates(200)
		}),
	)
	cs = append(cs, timeCases(mk, "Deadline", false, func(p *P, t time.Time) { p.Deadline = t })...)
	cs = append(cs, timeCases(mk, "DelayUntil", false, func(p *P, t time.Time) { p.DelayUntil = t })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) cancelCases() []badInput {
	type P = model.ExecutionCancelParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Fence: f.fence, Reason: "r", Now: f.now} }, f.s.ExecutionCancel)
	op := maker(f.ctx, func() *P { return &P{ID: f.eligible, Source: model.SourceOperator, Now: f.now} }, f.s.ExecutionCancel)
	cs := idCases(op, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, textCases(mk, "Reason", func(p *P, s string) { p.Reason = s })...)
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, func(p *P, s model.Source) { p.Source = s })...)
	return append(cs, nowCases(op, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) changePriorityCases() []badInput {
	type P = model.ExecutionChangePriorityParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.eligible, Priority: 9, Now: f.now} }, f.s.ExecutionChangePriority)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) completeCases() []badInput {
	type P = model.ExecutionCompleteParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Fence: f.fence, Result: []byte("r"), Now: f.now} }, f.s.ExecutionComplete)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, mk("result_too_large", "Result", model.ErrInvalidInput, func(p *P) { p.Result = make([]byte, model.MaxResultBytes+1) }))
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, func(p *P, s model.Source) { p.Source = s })...)
	// the next claim's inputs are checked too, named under "Next."
	withNext := func(p *P) *model.NextClaim {
		if p.Next == nil {
			p.Next = &model.NextClaim{Lane: laneA, ScanLimit: 10, LeaseRequest: f.leaseReq(wA, leaseTTL)}
		}
		return p.Next
	}
	nk := prefixed(mk, "Next.")
	cs = append(cs, laneCases(nk, func(p *P, l model.LaneID) { withNext(p).Lane = l })...)
	cs = append(cs, capCases(nk, "Capabilities", func(p *P, c model.Capabilities) { withNext(p).Capabilities = c })...)
	cs = append(cs, capCases(nk, "LiveCapabilities", func(p *P, c model.Capabilities) { withNext(p).LiveCapabilities = c })...)
	cs = append(cs, limitCases(nk, "ScanLimit", func(p *P, n int) { withNext(p).ScanLimit = n })...)
	cs = append(cs, leaseRequestCases(nk, func(p *P) *model.LeaseRequest { return &withNext(p).LeaseRequest })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

// prefixed is mk for inputs nested under prefix ("Next.").
func prefixed[P any](mk caseMaker[P], prefix string) caseMaker[P] {
	return func(name, field string, code *model.Error, mut func(*P)) badInput {
		return mk(strings.ToLower(prefix)+name, prefix+field, code, mut)
	}
}

func (f *fixture) partitionDueCases() []badInput {
	type P = model.PartitionDueParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0} }, f.s.PartitionDue)
	return partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
}

func (f *fixture) delayCases() []badInput {
	type P = model.ExecutionDelayParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Fence: f.fence, DelayUntil: at(time.Hour), Now: f.now} }, f.s.ExecutionDelay)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, timeCases(mk, "DelayUntil", true, func(p *P, t time.Time) { p.DelayUntil = t })...)
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, func(p *P, s model.Source) { p.Source = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) expireCases() []badInput {
	type P = model.ExecutionExpireParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.eligible, Reason: model.ExpireExecutionDeadline, Now: f.now} }, f.s.ExecutionExpire)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs,
		mk("reason_zero", "Reason", model.ErrInvalidInput, func(p *P) { p.Reason = 0 }),
		mk("reason_unknown", "Reason", model.ErrInvalidInput, func(p *P) { p.Reason = model.ExpireExecutionDeadline + 1 }),
	)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) failCases() []badInput {
	type P = model.ExecutionFailParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.active, Fence: f.fence, Reason: "r", Category: model.FailurePermanent, Now: f.now}
	}, f.s.ExecutionFail)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, textCases(mk, "Reason", func(p *P, s string) { p.Reason = s })...)
	cs = append(cs,
		mk("category_upper_case", "FailureCategory", model.ErrInvalidInput, func(p *P) { p.Category = "Permanent" }),
		mk("category_dash", "FailureCategory", model.ErrInvalidInput, func(p *P) { p.Category = "infra-crash" }),
		mk("category_space", "FailureCategory", model.ErrInvalidInput, func(p *P) { p.Category = "a b" }),
		mk("category_too_long", "FailureCategory", model.ErrInvalidInput, func(p *P) { p.Category = model.FailureCategory(strings.Repeat("c", 65)) }),
	)
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, func(p *P, s model.Source) { p.Source = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) replayCases() []badInput {
	type P = model.ExecutionReplayParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.terminal, Reason: "r", RequestedBy: "me", Now: f.now} }, f.s.ExecutionReplay)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, textCases(mk, "Reason", func(p *P, s string) { p.Reason = s })...)
	cs = append(cs, textCases(mk, "RequestedBy", func(p *P, s string) { p.RequestedBy = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) deleteCases() []badInput {
	type P = model.ExecutionDeleteParams
	rs, _ := optionalOf[model.RetentionStore](f.harness)
	mk := maker(f.ctx, func() *P { return &P{ID: f.terminal, Now: f.now} }, rs.ExecutionDelete)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) progressCases() []badInput {
	type P = model.ExecutionUpdateProgressParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Fence: f.fence, Percent: 50, Message: "m", Now: f.now} }, f.s.ExecutionUpdateProgress)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs,
		mk("percent_negative", "Percent", model.ErrInvalidInput, func(p *P) { p.Percent = -1 }),
		mk("percent_over_100", "Percent", model.ErrInvalidInput, func(p *P) { p.Percent = 101 }),
	)
	cs = append(cs, textCases(mk, "Message", func(p *P, s string) { p.Message = s })...)
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, nil)...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) claimGrantCases() []badInput {
	type P = model.ClaimGrantIssueParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.eligible, WorkerID: wB.ID, WorkerInstanceID: wB.Instance, GrantTTL: grantTTL, Now: f.now}
	}, f.s.ClaimGrantIssue)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, workerIDCases(mk, func(p *P, w model.WorkerID) { p.WorkerID = w })...)
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { p.WorkerInstanceID = w })...)
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, grantTTLCases(mk, func(p *P, d time.Duration) { p.GrantTTL = d })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) reclaimGrantCases() []badInput {
	type P = model.ReclaimGrantIssueParams
	// The fixture's reclaim grant has lapsed by then, so a valid call would
	// issue a new one.
	later := at(time.Minute)
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.expired, WorkerID: wB.ID, WorkerInstanceID: wB.Instance, GrantTTL: grantTTL, Now: later}
	}, f.s.ReclaimGrantIssue)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, workerIDCases(mk, func(p *P, w model.WorkerID) { p.WorkerID = w })...)
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { p.WorkerInstanceID = w })...)
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, grantTTLCases(mk, func(p *P, d time.Duration) { p.GrantTTL = d })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) blockCases() []badInput {
	type P = model.ExecutionBlockParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.eligible, Reason: model.WaitingForBudget, Budget: heldBudget, Detail: "d", Now: f.now}
	}, f.s.ExecutionBlock)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	for _, r := range []model.BlockingReason{0, model.BlockingNone, model.WaitingForWorker, model.WaitingForDelay, model.WaitingForChildren, model.PausedByPolicy + 1} {
		cs = append(cs, mk("reason_"+strconv.Itoa(int(r)), "Reason", model.ErrInvalidBlockingReason, func(p *P) { p.Reason = r }))
	}
	cs = append(cs, textCases(mk, "Detail", func(p *P, s string) { p.Detail = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) unblockCases() []badInput {
	type P = model.ExecutionUnblockParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.routed, ExpectedReason: model.WaitingForCapableWorker, Now: f.now} }, f.s.ExecutionUnblock)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	for _, r := range []model.BlockingReason{0, model.BlockingNone, model.WaitingForDelay, model.PausedByPolicy + 1} {
		cs = append(cs, mk("expected_reason_"+strconv.Itoa(int(r)), "ExpectedReason", model.ErrInvalidBlockingReason, func(p *P) { p.ExpectedReason = r }))
	}
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) claimCases() []badInput {
	type P = model.ExecutionClaimParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.granted, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now} }, f.s.ExecutionClaim)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, leaseRequestCases(mk, func(p *P) *model.LeaseRequest { return &p.LeaseRequest })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) grantAndClaimCases() []badInput {
	type P = model.ExecutionGrantAndClaimParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.eligible, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now} }, f.s.ExecutionGrantAndClaim)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, leaseRequestCases(mk, func(p *P) *model.LeaseRequest { return &p.LeaseRequest })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) claimNextCases() []badInput {
	type P = model.ExecutionClaimNextParams
	mk := maker(f.ctx, func() *P {
		return &P{Partition: f.p0, Lane: laneA, ScanLimit: 10, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now}
	}, f.s.ExecutionClaimNext)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, laneCases(mk, func(p *P, l model.LaneID) { p.Lane = l })...)
	// An empty namespace is valid here (every namespace).
	cs = append(cs, namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })[1:]...)
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, capCases(mk, "LiveCapabilities", func(p *P, c model.Capabilities) { p.LiveCapabilities = c })...)
	cs = append(cs, limitCases(mk, "ScanLimit", func(p *P, n int) { p.ScanLimit = n })...)
	cs = append(cs, leaseRequestCases(mk, func(p *P) *model.LeaseRequest { return &p.LeaseRequest })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) reclaimCases() []badInput {
	type P = model.ExecutionReclaimParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.expired, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now} }, f.s.ExecutionReclaim)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, leaseRequestCases(mk, func(p *P) *model.LeaseRequest { return &p.LeaseRequest })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) recoverCases() []badInput {
	type P = model.ExecutionRecoverParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.expired, Now: f.now} }, f.s.ExecutionRecover)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) markExpiredCases() []badInput {
	type P = model.LeaseMarkExpiredParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.due, Now: f.now} }, f.s.LeaseMarkExpired)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) renewCases() []badInput {
	type P = model.LeaseRenewParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Fence: f.fence, LeaseTTL: time.Hour, Now: f.now} }, f.s.LeaseRenew)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs,
		mk("lease_ttl_zero", "LeaseTTL", model.ErrInvalidInput, func(p *P) { p.LeaseTTL = 0 }),
		mk("lease_ttl_below_1ms", "LeaseTTL", model.ErrInvalidInput, func(p *P) { p.LeaseTTL = time.Microsecond }),
		mk("lease_ttl_too_long", "LeaseTTL", model.ErrInvalidInput, func(p *P) { p.LeaseTTL = model.MaxLeaseTTL + time.Millisecond }),
	)
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, nil)...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) revokeCases() []badInput {
	type P = model.LeaseRevokeParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Reason: "r", Now: f.now} }, f.s.LeaseRevoke)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, textCases(mk, "Reason", func(p *P, s string) { p.Reason = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) promoteCases() []badInput {
	type P = model.ExecutionPromoteDelayedParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.delayed, Lane: laneA, Now: f.now} }, f.s.ExecutionPromoteDelayed)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, laneCases(mk, func(p *P, l model.LaneID) { p.Lane = l })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) scanCases() []badInput {
	type P = model.IndexScanDueParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Index: model.IndexDelayed, Limit: 10, Now: f.now} }, f.s.IndexScanDue)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs,
		mk("index_zero", "Index", model.ErrInvalidInput, func(p *P) { p.Index = 0 }),
		mk("index_unknown", "Index", model.ErrInvalidInput, func(p *P) { p.Index = model.IndexRetention + 1 }),
		mk("after_id_zero", "After.ID", model.ErrInvalidInput, func(p *P) { p.After = &model.DueCursor{DueAt: f.now} }),
		mk("after_id_partition_out_of_range", "After.ID", model.ErrInvalidInput, func(p *P) { p.After = &model.DueCursor{DueAt: f.now, ID: f.out} }),
	)
	if f.p1 != f.p0 {
		cs = append(cs, mk("after_id_other_partition", "After.ID", model.ErrInvalidInput, func(p *P) {
			p.After = &model.DueCursor{DueAt: f.now, ID: model.NewExecutionID(f.p1, f.uuid())}
		}))
	}
	cs = append(cs, timeCases(mk, "After.DueAt", false, func(p *P, t time.Time) { p.After = &model.DueCursor{DueAt: t, ID: f.delayed} })...)
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) routeUnblockCases() []badInput {
	type P = model.RouteUnblockParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Namespace: nsA, Limit: 10, Now: f.now} }, f.s.RouteUnblock)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })...)
	cs = append(cs, capCases(mk, "Live", func(p *P, c model.Capabilities) { p.Live = c })...)
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) registerCases() []badInput {
	type P = model.WorkerRegisterParams
	mk := maker(f.ctx, func() *P {
		return &P{Namespace: nsA, WorkerID: wB.ID, WorkerInstanceID: wB.Instance, SessionID: "s2",
			Lanes: []model.LaneID{laneA}, TTL: time.Minute, Now: f.now}
	}, f.s.WorkerRegister)
	cs := namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })
	cs = append(cs, workerIDCases(mk, func(p *P, w model.WorkerID) { p.WorkerID = w })...)
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { p.WorkerInstanceID = w })...)
	cs = append(cs, sessionCases(mk, func(p *P, s string) { p.SessionID = s })...)
	manyLanes := make([]model.LaneID, 257)
	for i := range manyLanes {
		manyLanes[i] = model.LaneID("lane-" + strconv.Itoa(i))
	}
	cs = append(cs,
		mk("lanes_empty", "Lanes", model.ErrInvalidInput, func(p *P) { p.Lanes = nil }),
		mk("lanes_too_many", "Lanes", model.ErrInvalidInput, func(p *P) { p.Lanes = manyLanes }),
		mk("lanes_bad_lane", "Lanes", model.ErrInvalidInput, func(p *P) { p.Lanes = []model.LaneID{laneA, "bad lane"} }),
		mk("lanes_empty_lane", "Lanes", model.ErrInvalidInput, func(p *P) { p.Lanes = []model.LaneID{""} }),
	)
	cs = append(cs, capCases(mk, "Capabilities", func(p *P, c model.Capabilities) { p.Capabilities = c })...)
	cs = append(cs, workerTTLCases(mk, func(p *P, d time.Duration) { p.TTL = d })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) heartbeatCases() []badInput {
	type P = model.WorkerHeartbeatParams
	mk := maker(f.ctx, func() *P {
		return &P{Namespace: nsA, WorkerInstanceID: wA.Instance, SessionID: "s1", TTL: time.Hour, Now: f.now}
	}, f.s.WorkerHeartbeat)
	cs := namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { p.WorkerInstanceID = w })...)
	cs = append(cs, sessionCases(mk, func(p *P, s string) { p.SessionID = s })...)
	cs = append(cs, workerTTLCases(mk, func(p *P, d time.Duration) { p.TTL = d })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) deregisterCases() []badInput {
	type P = model.WorkerDeregisterParams
	mk := maker(f.ctx, func() *P { return &P{Namespace: nsA, WorkerInstanceID: wA.Instance, SessionID: "s1", Now: f.now} }, f.s.WorkerDeregister)
	cs := namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })
	cs = append(cs, instanceCases(mk, func(p *P, w model.WorkerInstanceID) { p.WorkerInstanceID = w })...)
	cs = append(cs, sessionCases(mk, func(p *P, s string) { p.SessionID = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) workerExpireCases() []badInput {
	type P = model.WorkerExpireParams
	// A valid call at this time would drop the fixture's registration.
	mk := maker(f.ctx, func() *P { return &P{Namespace: nsA, Limit: 10, Now: at(time.Hour)} }, f.s.WorkerExpire)
	cs := namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) workerListCases() []badInput {
	type P = model.WorkerListParams
	mk := maker(f.ctx, func() *P { return &P{Namespace: nsA, Now: f.now} }, f.s.WorkerList)
	cs := namespaceCases(mk, func(p *P, ns model.Namespace) { p.Namespace = ns })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) listCases() []badInput {
	type P = model.ExecutionListParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Limit: 10} }, f.s.ExecutionList)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, mk("after_partition_out_of_range", "After", model.ErrInvalidInput, func(p *P) { p.After = f.out }))
	if f.p1 != f.p0 {
		cs = append(cs, mk("after_other_partition", "After", model.ErrInvalidInput, func(p *P) { p.After = model.NewExecutionID(f.p1, f.uuid()) }))
	}
	cs = append(cs,
		mk("filter_lane", "Filter.Lane", model.ErrInvalidInput, func(p *P) { p.Filter.Lane = "a b" }),
		mk("filter_kind", "Filter.Kind", model.ErrInvalidInput, func(p *P) { p.Filter.Kind = "no kind" }),
		mk("filter_namespace", "Filter.Namespace", model.ErrInvalidInput, func(p *P) { p.Filter.Namespace = "UPPER" }),
		mk("filter_tag_value_alone", "Filter.TagValue", model.ErrInvalidInput, func(p *P) { p.Filter.TagValue = "v" }),
		mk("filter_state_unknown", "Filter.States", model.ErrInvalidInput, func(p *P) { p.Filter.States = []model.PublicState{0} }),
		mk("filter_state_past_last", "Filter.States", model.ErrInvalidInput, func(p *P) {
			p.Filter.States = []model.PublicState{model.PublicSkipped + 1}
		}),
	)
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

func (f *fixture) historyCases() []badInput {
	type P = model.LeaseHistoryParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Limit: 10} }, f.s.LeaseHistory)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

// readCases covers the reads that take only an execution id.
func (f *fixture) readCases() []badInput {
	var cs []badInput
	for _, r := range []struct {
		name string
		do   func(id model.ExecutionID) error
	}{
		{"AttemptList", func(id model.ExecutionID) error {
			_, err := f.s.AttemptList(f.ctx, &model.AttemptListParams{ID: id})
			return err
		}},
		{"ExecutionDescribe", func(id model.ExecutionID) error {
			_, err := f.s.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: id})
			return err
		}},
		{"ExecutionIndexes", func(id model.ExecutionID) error {
			_, err := f.s.ExecutionIndexes(f.ctx, &model.ExecutionIndexesParams{ID: id})
			return err
		}},
		{"ExecutionPayload", func(id model.ExecutionID) error {
			_, err := f.s.ExecutionPayload(f.ctx, &model.ExecutionPayloadParams{ID: id})
			return err
		}},
		{"ExecutionResult", func(id model.ExecutionID) error {
			_, err := f.s.ExecutionResult(f.ctx, &model.ExecutionResultParams{ID: id})
			return err
		}},
	} {
		cs = append(cs,
			badInput{r.name + "_id_zero", "ID", model.ErrInvalidInput, func() error { return r.do(model.ExecutionID{}) }},
			badInput{r.name + "_id_partition_out_of_range", "ID", model.ErrInvalidInput, func() error { return r.do(f.out) }},
		)
	}
	return cs
}

// Suspension, waitpoints and signals (model.SuspendStore): the groups
// skip on a store without it. A valid call of each base would write
// (suspend the fixture's active execution, create a waitpoint, ...),
// except SignalDeliver's, whose waitpoint does not exist.
var suspendValidation = []struct {
	name  string
	cases func(f *fixture) []badInput
}{
	{"WaitpointCreate", (*fixture).waitpointCreateCases},
	{"ExecutionSuspend", (*fixture).suspendCases},
	{"SignalDeliver", (*fixture).signalCases},
	{"ExecutionResume", (*fixture).resumeCases},
	{"SuspensionExpire", (*fixture).suspensionExpireCases},
	{"WaitpointExpire", (*fixture).waitpointExpireCases},
	{"SuspendReads", (*fixture).suspendReadCases},
	{"SuspendedList", (*fixture).suspendedListCases},
	{"SignalFeed", (*fixture).signalFeedCases},
}

func skipWithoutSuspend(h *harness) {
	h.t.Helper()
	if _, ok := suspendStoreOf(h); !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
	}
}

func (f *fixture) suspendStore() model.SuspendStore {
	ss, _ := suspendStoreOf(f.harness)
	return ss
}

func signalLimitCases[P any](mk caseMaker[P], set func(*P, int)) []badInput {
	return []badInput{
		mk("signal_limit_negative", "SignalLimit", model.ErrInvalidInput, func(p *P) { set(p, -1) }),
		mk("signal_limit_too_large", "SignalLimit", model.ErrInvalidInput, func(p *P) { set(p, model.MaxSignalLimit+1) }),
	}
}

func (f *fixture) waitpointCreateCases() []badInput {
	type P = model.WaitpointCreateParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.active, Fence: f.fence, Waitpoint: model.WaitpointID(f.uuid()), ExpiresAt: f.now.Add(time.Hour), Now: f.now}
	}, f.suspendStore().WaitpointCreate)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, nil)...)
	cs = append(cs,
		mk("waitpoint_empty", "Waitpoint", model.ErrInvalidInput, func(p *P) { p.Waitpoint = model.WaitpointID{} }),
		mk("expires_at_now", "ExpiresAt", model.ErrInvalidInput, func(p *P) { p.ExpiresAt = f.now }),
		mk("expires_at_past", "ExpiresAt", model.ErrInvalidInput, func(p *P) { p.ExpiresAt = f.now.Add(-time.Second) }),
		mk("expires_at_too_far", "ExpiresAt", model.ErrInvalidInput, func(p *P) { p.ExpiresAt = f.now.Add(model.MaxWaitpointTTL + time.Millisecond) }),
	)
	cs = append(cs, timeCases(mk, "ExpiresAt", true, func(p *P, t time.Time) { p.ExpiresAt = t })...)
	cs = append(cs, signalLimitCases(mk, func(p *P, n int) { p.SignalLimit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) suspendCases() []badInput {
	type P = model.ExecutionSuspendParams
	type C = model.ResumeCondition
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.active, Fence: f.fence, Suspension: model.SuspensionID(f.uuid()), Waitpoint: model.WaitpointID(f.uuid()),
			Reason: model.SuspendForSignal, Condition: model.SignalFor("go"), Now: f.now}
	}, f.suspendStore().ExecutionSuspend)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, nil)...)
	cs = append(cs,
		mk("suspension_empty", "Suspension", model.ErrInvalidInput, func(p *P) { p.Suspension = model.SuspensionID{} }),
		mk("waitpoint_empty", "Waitpoint", model.ErrInvalidInput, func(p *P) { p.Waitpoint = model.WaitpointID{} }),
		mk("reason_zero", "Reason", model.ErrInvalidInput, func(p *P) { p.Reason = 0 }),
		mk("reason_unknown", "Reason", model.ErrInvalidInput, func(p *P) { p.Reason = model.SuspendForOperatorReview + 1 }),
	)
	w1, w2 := model.WaitpointID(f.uuid()), model.WaitpointID(f.uuid())
	deep := C{Kind: model.CondSignal}
	for range model.MaxConditionDepth {
		deep = C{Kind: model.CondAllOf, Of: []C{deep}}
	}
	for _, c := range []struct {
		name, field string
		cond        C
	}{
		{"condition_zero", "Condition.Kind", C{}},
		{"condition_kind_unknown", "Condition.Kind", C{Kind: model.CondTimeout + 1}},
		{"condition_signal_with_n", "Condition", C{Kind: model.CondSignal, N: 1}},
		{"condition_name_invalid_utf8", "Condition.Name", C{Kind: model.CondSignal, Name: invalidUTF8}},
		{"condition_all_of_empty", "Condition.Of", C{Kind: model.CondAllOf}},
		{"condition_nested_count_n", "Condition.Of[1].N", C{Kind: model.CondAllOf, Of: []C{
			model.SignalFor("a"), {Kind: model.CondCount, Distinct: model.DistinctSignals},
		}}},
		{"condition_nested_kind", "Condition.Of[0].Of[1].Kind", C{Kind: model.CondAllOf, Of: []C{
			{Kind: model.CondAllOf, Of: []C{model.SignalFor("a"), {}}},
		}}},
		{"condition_nested_operator_only", "Condition.Of[0]", C{Kind: model.CondAllOf, Of: []C{{Kind: model.CondOperator}}}},
		{"condition_count_distinct", "Condition.Distinct", C{Kind: model.CondCount, N: 1}},
		{"condition_count_duplicate_waitpoint", "Condition.Waitpoints[1]", C{Kind: model.CondCount, N: 1,
			Distinct: model.DistinctSignals, Waitpoints: []model.WaitpointID{w1, w1}}},
		{"condition_count_empty_waitpoint", "Condition.Waitpoints[1]", C{Kind: model.CondCount, N: 1,
			Distinct: model.DistinctSignals, Waitpoints: []model.WaitpointID{w1, {}}}},
		{"condition_count_more_than_waitpoints", "Condition.N", C{Kind: model.CondCount, N: 3,
			Distinct: model.DistinctWaitpoints, Waitpoints: []model.WaitpointID{w1, w2}}},
		{"condition_too_deep", "Condition.Of[0].Of[0].Of[0].Of[0]", deep},
	} {
		cs = append(cs, mk(c.name, c.field, model.ErrInvalidInput, func(p *P) { p.Condition = c.cond }))
	}
	timeoutOnly := func(p *P) { p.Condition = C{Kind: model.CondTimeout} }
	cs = append(cs,
		mk("timeout_at_now", "TimeoutAt", model.ErrInvalidInput, func(p *P) { p.TimeoutAt = f.now }),
		mk("timeout_at_past", "TimeoutAt", model.ErrInvalidInput, func(p *P) { p.TimeoutAt = f.now.Add(-time.Minute) }),
		mk("timeout_at_too_far", "TimeoutAt", model.ErrInvalidInput, func(p *P) { p.TimeoutAt = f.now.Add(model.MaxSuspendTimeout + time.Millisecond) }),
		mk("timeout_at_missing_for_timeout_only", "TimeoutAt", model.ErrInvalidInput, timeoutOnly),
		mk("timeout_behavior_unknown", "TimeoutBehavior", model.ErrInvalidInput, func(p *P) {
			p.TimeoutAt, p.TimeoutBehavior = f.now.Add(time.Hour), model.TimeoutEscalate+1
		}),
		mk("escalate_timeout_only", "TimeoutBehavior", model.ErrInvalidInput, func(p *P) {
			timeoutOnly(p)
			p.TimeoutAt, p.TimeoutBehavior = f.now.Add(time.Hour), model.TimeoutEscalate
		}),
		mk("policy_delay_negative", "Policy.Delay", model.ErrInvalidInput, func(p *P) { p.Policy.Delay = -time.Second }),
		mk("policy_delay_sub_millisecond", "Policy.Delay", model.ErrInvalidInput, func(p *P) { p.Policy.Delay = time.Second + time.Microsecond }),
		mk("policy_delay_too_long", "Policy.Delay", model.ErrInvalidInput, func(p *P) { p.Policy.Delay = model.MaxSuspendTimeout + time.Millisecond }),
		mk("policy_keep_signals_alone", "Policy.KeepSignals", model.ErrInvalidInput, func(p *P) { p.Policy.KeepSignals = true }),
		mk("signal_limit_with_pending", "SignalLimit", model.ErrInvalidInput, func(p *P) { p.UsePending, p.SignalLimit = true, 5 }),
	)
	cs = append(cs, timeCases(mk, "TimeoutAt", false, func(p *P, t time.Time) { p.TimeoutAt = t })...)
	cs = append(cs, signalLimitCases(mk, func(p *P, n int) { p.SignalLimit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) signalCases() []badInput {
	type P = model.SignalDeliverParams
	mk := maker(f.ctx, func() *P {
		return &P{Execution: f.active, Waitpoint: model.WaitpointID(f.uuid()), WaitpointCreatedAt: f.now,
			Signal: model.SignalID(f.uuid()), Name: "go", Source: "test:go", Now: f.now}
	}, f.suspendStore().SignalDeliver)
	cs := []badInput{
		mk("execution_zero", "Execution.ID", model.ErrInvalidInput, func(p *P) { p.Execution = model.ExecutionID{} }),
		mk("execution_partition_out_of_range", "Execution.ID", model.ErrInvalidInput, func(p *P) { p.Execution = f.out }),
		mk("waitpoint_empty", "Waitpoint", model.ErrInvalidInput, func(p *P) { p.Waitpoint = model.WaitpointID{} }),
		mk("signal_empty", "Signal", model.ErrInvalidInput, func(p *P) { p.Signal = model.SignalID{} }),
		mk("source_too_long", "Source", model.ErrInvalidInput, func(p *P) { p.Source = strings.Repeat("s", model.MaxSignalSourceBytes+1) }),
		mk("payload_too_large", "Payload", model.ErrInvalidInput, func(p *P) { p.Payload = make([]byte, model.MaxSignalPayloadBytes+1) }),
		mk("idempotency_key_too_long", "IdempotencyKey", model.ErrInvalidInput, func(p *P) {
			p.IdempotencyKey = strings.Repeat("k", model.MaxIdempotencyKeyBytes+1)
		}),
		mk("idempotency_key_control", "IdempotencyKey", model.ErrInvalidInput, func(p *P) { p.IdempotencyKey = "k\n" }),
		mk("dedup_ttl_negative", "DedupTTL", model.ErrInvalidInput, func(p *P) { p.DedupTTL = -time.Second }),
		mk("dedup_ttl_too_long", "DedupTTL", model.ErrInvalidInput, func(p *P) { p.DedupTTL = model.MaxSignalDedupTTL + time.Millisecond }),
		mk("dedup_ttl_sub_millisecond", "DedupTTL", model.ErrInvalidInput, func(p *P) { p.DedupTTL = time.Second + time.Microsecond }),
		mk("Source_invalid_utf8", "Source", model.ErrInvalidInput, func(p *P) { p.Source = invalidUTF8 }),
	}
	cs = append(cs, textCases(mk, "Name", func(p *P, s string) { p.Name = s })...)
	cs = append(cs, timeCases(mk, "WaitpointCreatedAt", true, func(p *P, t time.Time) { p.WaitpointCreatedAt = t })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) resumeCases() []badInput {
	type P = model.ExecutionResumeParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Now: f.now} }, f.suspendStore().ExecutionResume)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) suspensionExpireCases() []badInput {
	type P = model.SuspensionExpireParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Now: f.now} }, f.suspendStore().SuspensionExpire)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) waitpointExpireCases() []badInput {
	type P = model.WaitpointExpireParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Now: f.now} }, f.suspendStore().WaitpointExpire)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

// suspendReadCases covers SuspensionDescribe and WaitpointList.
func (f *fixture) suspendReadCases() []badInput {
	ss := f.suspendStore()
	var cs []badInput
	for _, r := range []struct {
		name string
		do   func(id model.ExecutionID) error
	}{
		{"SuspensionDescribe", func(id model.ExecutionID) error {
			_, err := ss.SuspensionDescribe(f.ctx, &model.SuspensionDescribeParams{ID: id})
			return err
		}},
		{"WaitpointList", func(id model.ExecutionID) error {
			_, err := ss.WaitpointList(f.ctx, &model.WaitpointListParams{ID: id})
			return err
		}},
	} {
		cs = append(cs,
			badInput{r.name + "_id_zero", "ID", model.ErrInvalidInput, func() error { return r.do(model.ExecutionID{}) }},
			badInput{r.name + "_id_partition_out_of_range", "ID", model.ErrInvalidInput, func() error { return r.do(f.out) }},
		)
	}
	return cs
}

func (f *fixture) signalFeedCases() []badInput {
	type P = model.SignalFeedParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Limit: 10} }, f.suspendStore().SignalFeed)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

func (f *fixture) suspendedListCases() []badInput {
	type P = model.SuspendedListParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Limit: 10} }, f.suspendStore().SuspendedList)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, mk("after_partition_out_of_range", "After", model.ErrInvalidInput, func(p *P) { p.After = f.out }))
	if f.p1 != f.p0 {
		cs = append(cs, mk("after_other_partition", "After", model.ErrInvalidInput, func(p *P) { p.After = model.NewExecutionID(f.p1, f.uuid()) }))
	}
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

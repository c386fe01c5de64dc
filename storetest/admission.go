package storetest

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets, quotas and admission (model.AdmissionStore, issue 12,
// model/admission.go and model/admission_ops.go): budgets with limits,
// reports, ledgers, resets and reconcile passes; quota policies with
// their buckets, admissions and reconcile passes; and what the claim
// path does with executions that carry them (admission candidates on
// claim-next, admission tokens, the quota release outbox, the budget and
// quota blocked groups) and the scanner filter. A store without the
// optional interface skips these tests.
// ExerciseAdmission runs only Exercise's Admission group (budgets,
// quotas, the claim path's admission, inline admission): for a store
// configuration that differs from another only there, such as a client
// that makes valkeystore admit inline.
func ExerciseAdmission(t *testing.T, newStore NewStoreFunc) {
	testAdmission(t, newStore)
}

func testAdmission(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*admissionHarness)
	}{
		// budgets (admission_budget.go)
		{"BudgetCreate", budgetCreate},
		{"BudgetReportApplied", budgetReportApplied},
		{"BudgetReportSoftBreach", budgetReportSoftBreach},
		{"BudgetReportHardBreach", budgetReportHardBreach},
		{"BudgetReportDedup", budgetReportDedup},
		{"BudgetReportDedupTTL", budgetReportDedupTTL},
		{"BudgetLedger", budgetLedger},
		{"BudgetReset", budgetReset},
		{"BudgetResetDue", budgetResetDue},
		{"BudgetReconcile", budgetReconcile},
		{"BudgetReconcilePages", budgetReconcilePages},
		{"BudgetExhausted", budgetExhausted},
		{"BudgetNotFound", budgetNotFound},
		{"BudgetOnHardBreach", budgetOnHardBreach},
		// quotas (admission_quota.go)
		{"QuotaCreate", quotaCreate},
		{"QuotaRate", quotaRate},
		{"QuotaConcurrency", quotaConcurrency},
		{"QuotaRateBeforeConcurrency", quotaRateBeforeConcurrency},
		{"QuotaAlreadyAdmitted", quotaAlreadyAdmitted},
		{"QuotaBuckets", quotaBuckets},
		{"QuotaStatus", quotaStatusCase},
		{"QuotaReconcile", quotaReconcile},
		{"QuotaNotFound", quotaNotFound},
		// the claim path (admission_claim.go)
		{"ClaimNextAdmit", claimNextAdmit},
		{"ClaimNextAdmitPerInstance", claimNextAdmitPerInstance},
		{"ClaimNextGrantTTL", claimNextGrantTTL},
		{"ClaimNextWalkStops", claimNextWalkStops},
		{"ClaimNextCapabilitiesFirst", claimNextCapabilitiesFirst},
		{"ClaimRequiresToken", claimRequiresToken},
		{"ClaimBudgetOnly", claimBudgetOnly},
		{"CompleteNextAdmit", completeNextAdmit},
		// inline admission (admission_inline.go)
		{"InlineAdmit", inlineAdmit},
		{"InlineBudgetOnly", inlineBudgetOnly},
		{"InlineGrantsInstead", inlineGrantsInstead},
		{"InlineCompleteNext", inlineCompleteNext},
		{"InlineRefused", inlineRefused},
		// the quota release outbox (admission_outbox.go)
		{"OutboxTransitions", outboxTransitions},
		{"OutboxSuspend", outboxSuspend},
		{"OutboxRecover", outboxRecover},
		{"OutboxRevoke", outboxRevoke},
		{"OutboxReclaim", outboxReclaim},
		{"OutboxAck", outboxAck},
		{"OutboxBudgetOnly", outboxBudgetOnly},
		// blocked groups (admission_block.go)
		{"BlockBudget", blockBudget},
		{"BlockQuota", blockQuota},
		{"BlockQuotaWithoutQuota", blockQuotaWithoutQuota},
		{"BlockedGroupsPage", blockedGroupsPage},
		{"UnblockBudgetOrder", unblockBudgetOrder},
		{"UnblockLimit", unblockLimit},
		{"UnblockMax", unblockMax},
		{"UnblockFilter", unblockFilter},
		{"UnblockUnlisted", unblockUnlisted},
		{"CancelLeavesGroup", cancelLeavesGroup},
		{"ExecutionUnblockLeavesGroup", executionUnblockLeavesGroup},
		// the scanner filter (admission_filter.go)
		{"ScanFilter", scanFilter},
		{"ScanFilterTag", scanFilterTag},
		{"ScanLastSeen", scanLastSeen},
		{"RouteUnblockFilter", routeUnblockFilter},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			as, ok := admissionStoreOf(h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.AdmissionStore", h.s)
			}
			c.run(&admissionHarness{harness: h, as: as})
		})
	}
}

// admissionStoreOf returns the store's model.AdmissionStore, if it has
// one.
func admissionStoreOf(h *harness) (model.AdmissionStore, bool) {
	var s model.Store = h.s
	if p, ok := h.s.(*partialStore); ok {
		s = p.Store
	}
	as, ok := s.(model.AdmissionStore)
	return as, ok
}

// admissionHarness is a harness with the store's admission operations.
type admissionHarness struct {
	*harness
	as model.AdmissionStore
}

// Index names of admission blocks as ExecutionIndexes reports them.
func ixBudget(l model.LaneID) string { return ixLane(l, "blocked:budget") }
func ixQuota(l model.LaneID) string  { return ixLane(l, "blocked:quota") }

// heldBudget is the budget the suite's other groups name when they block
// an execution on WaitingForBudget (a block names the exhausted budget;
// the budget need not exist on the budget partition).
var heldBudget = model.BudgetID(model.NewUUIDv4([16]byte{0xb0, 0xd9, 0xe7, 15: 1}))

// heldQuota is the quota of the executions the suite's other groups
// block on WaitingForQuota (only an execution with a quota can be).
var heldQuota = model.QuotaID(model.NewUUIDv4([16]byte{0x90, 0x07, 0xa0, 15: 1}))

// blockable makes an execution that can be blocked for r: one blocked on
// its quota needs a quota (heldQuota).
func blockable(r model.BlockingReason) createOpt {
	return func(p *model.ExecutionCreateParams) {
		if r == model.WaitingForQuota {
			p.Quota = heldQuota
		}
	}
}

func withBudgets(bs ...model.BudgetID) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Budgets = bs }
}

func withQuota(q model.QuotaID, key string) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Quota, p.QuotaKey = q, key }
}

func withTags(kv ...string) createOpt {
	return func(p *model.ExecutionCreateParams) {
		p.Tags = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Tags[kv[i]] = kv[i+1]
		}
	}
}

// budgetID returns a fresh budget id; on, when given, picks one of that
// budget partition.
func (h *harness) budgetID(on ...int) model.BudgetID {
	for {
		b := model.BudgetID(h.uuid())
		if len(on) == 0 || h.cfg.BudgetPartition(b) == on[0] {
			return b
		}
	}
}

// quotaID returns a fresh quota id; on, when given, picks one of that
// quota partition.
func (h *harness) quotaID(on ...int) model.QuotaID {
	for {
		q := model.QuotaID(h.uuid())
		if len(on) == 0 || h.cfg.QuotaPartition(q) == on[0] {
			return q
		}
	}
}

// limits is a budget definition's limits, {dim: {hard, soft}}.
type limits = map[string]model.BudgetLimit

// newBudget creates a budget and checks that it was created.
func (h *admissionHarness) newBudget(p *model.BudgetCreateParams) model.BudgetID {
	h.t.Helper()
	if model.UUID(p.ID).IsZero() {
		p.ID = h.budgetID()
	}
	res := call(h.as.BudgetCreate(h.ctx, p)).must(h.t)
	if !res.Created {
		h.t.Fatalf("BudgetCreate %v: Created false for a new budget", p.ID)
	}
	return p.ID
}

// budget creates a budget with lims, no reset and no breach action at now.
func (h *admissionHarness) budget(lims limits, now time.Time) model.BudgetID {
	h.t.Helper()
	return h.newBudget(&model.BudgetCreateParams{Limits: lims, Now: now})
}

func (h *admissionHarness) report(p *model.BudgetReportParams) *model.BudgetReportResult {
	h.t.Helper()
	return call(h.as.BudgetReport(h.ctx, p)).must(h.t)
}

// reported reports deltas to b at now (no dedup key, no execution) and
// checks the outcome.
func (h *admissionHarness) reported(b model.BudgetID, deltas map[string]int64, now time.Time, want model.BudgetReportOutcome) *model.BudgetReportResult {
	h.t.Helper()
	res := h.report(&model.BudgetReportParams{ID: b, Deltas: deltas, Now: now})
	if res.Outcome != want {
		h.t.Fatalf("BudgetReport %v: %v (%+v), want %v", deltas, res.Outcome, res, want)
	}
	return res
}

// wantReport compares a report's result; OnHardBreach is compared on a
// hard breach only (the result carries it "for the engine, on a hard
// breach").
func wantReport(t testing.TB, what string, want model.BudgetReportResult, got *model.BudgetReportResult) {
	t.Helper()
	g := *got
	if want.Outcome != model.ReportHardBreach {
		g.OnHardBreach = want.OnHardBreach
	}
	wantEqual(t, what, want, g)
}

func (h *admissionHarness) budgetStatus(b model.BudgetID, x model.ExecutionID, now time.Time) *model.BudgetStatus {
	h.t.Helper()
	return call(h.as.BudgetStatus(h.ctx, &model.BudgetStatusParams{ID: b, Execution: x, Now: now})).must(h.t)
}

// usageOf drops the zero entries of a usage or ledger (absent means 0).
func usageOf(m map[string]int64) map[string]int64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ string, v int64) bool { return v == 0 })
	return out
}

// wantUsage checks b's usage at now (dimensions absent or 0 alike).
func (h *admissionHarness) wantUsage(b model.BudgetID, now time.Time, want map[string]int64) *model.BudgetStatus {
	h.t.Helper()
	st := h.budgetStatus(b, model.ExecutionID{}, now)
	wantEqual(h.t, "usage of budget "+b.String(), usageOf(want), usageOf(st.Usage))
	return st
}

// wantBudget compares the whole status of b (Usage and Spend without
// their zero entries).
func (h *admissionHarness) wantBudget(want model.BudgetStatus, x model.ExecutionID, now time.Time) {
	h.t.Helper()
	got := *h.budgetStatus(want.ID, x, now)
	got.Usage, got.Spend = usageOf(got.Usage), usageOf(got.Spend)
	want.Usage, want.Spend = usageOf(want.Usage), usageOf(want.Spend)
	wantEqual(h.t, "status of budget "+want.ID.String(), want, got)
}

// newQuota creates a quota policy and checks that it was created.
func (h *admissionHarness) newQuota(p *model.QuotaCreateParams) model.QuotaID {
	h.t.Helper()
	if model.UUID(p.ID).IsZero() {
		p.ID = h.quotaID()
	}
	res := call(h.as.QuotaCreate(h.ctx, p)).must(h.t)
	if !res.Created {
		h.t.Fatalf("QuotaCreate %v: Created false for a new policy", p.ID)
	}
	return p.ID
}

// capQuota creates a policy with a concurrency cap only.
func (h *admissionHarness) capQuota(n int, now time.Time) model.QuotaID {
	h.t.Helper()
	return h.newQuota(&model.QuotaCreateParams{Concurrency: n, Now: now})
}

func (h *admissionHarness) admit(q model.QuotaID, key string, x model.ExecutionID, token string, jitter time.Duration, now time.Time) *model.QuotaAdmitResult {
	h.t.Helper()
	return call(h.as.QuotaAdmit(h.ctx, &model.QuotaAdmitParams{ID: q, Key: key, Execution: x, Token: token, Jitter: jitter, Now: now})).must(h.t)
}

// admitted admits x and checks the whole result.
func (h *admissionHarness) admitted(q model.QuotaID, key string, x model.ExecutionID, token string, now time.Time, want model.QuotaAdmitResult) {
	h.t.Helper()
	got := h.admit(q, key, x, token, 0, now)
	wantEqual(h.t, "QuotaAdmit "+x.String()+" at "+now.Format(time.RFC3339Nano), want, *got)
}

func (h *admissionHarness) release(q model.QuotaID, key string, x model.ExecutionID, token string, now time.Time) bool {
	h.t.Helper()
	return call(h.as.QuotaRelease(h.ctx, &model.QuotaReleaseParams{ID: q, Key: key, Execution: x, Token: token, Now: now})).must(h.t).Released
}

func (h *admissionHarness) quotaStatus(q model.QuotaID, key string, now time.Time) *model.QuotaStatus {
	h.t.Helper()
	return call(h.as.QuotaStatus(h.ctx, &model.QuotaStatusParams{ID: q, Key: key, Now: now})).must(h.t)
}

// wantBucket checks the counters of one bucket at now.
func (h *admissionHarness) wantBucket(q model.QuotaID, key string, now time.Time, inWindow, active, free int, retry time.Duration) {
	h.t.Helper()
	st := h.quotaStatus(q, key, now)
	if st.InWindow != inWindow || st.Active != active || st.Free != free || st.RetryAfter != retry {
		h.t.Fatalf("bucket %v/%q at %v: in window %d active %d free %d retry %v, want %d %d %d %v",
			q, key, now, st.InWindow, st.Active, st.Free, st.RetryAfter, inWindow, active, free, retry)
	}
}

// pending reads the whole quota release outbox of partition part.
func (h *admissionHarness) pending(part int) []model.QuotaHold {
	h.t.Helper()
	res := call(h.as.QuotaReleasePending(h.ctx, &model.QuotaReleasePendingParams{Partition: part, Limit: model.MaxPageSize})).must(h.t)
	if res.More {
		h.t.Fatalf("QuotaReleasePending: More with fewer than %d entries", model.MaxPageSize)
	}
	return res.Items
}

// wantPending checks the outbox of part, and PartitionDue's flag for it.
func (h *admissionHarness) wantPending(part int, want ...model.QuotaHold) {
	h.t.Helper()
	wantEqual(h.t, "quota release outbox", want, h.pending(part))
	due := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: part})).must(h.t)
	if due.QuotaReleasePending != (len(want) > 0) {
		h.t.Fatalf("PartitionDue.QuotaReleasePending = %v with %d outbox entries", due.QuotaReleasePending, len(want))
	}
}

// groups reads every admission-blocked group of partition part.
func (h *admissionHarness) groups(part int) []model.AdmissionGroup {
	h.t.Helper()
	res := call(h.as.AdmissionBlocked(h.ctx, &model.AdmissionBlockedParams{Partition: part, Limit: model.MaxPageSize})).must(h.t)
	if res.More {
		h.t.Fatalf("AdmissionBlocked: More with fewer than %d groups", model.MaxPageSize)
	}
	return res.Groups
}

// wantGroups checks the blocked groups of part, and PartitionDue's flag
// for them.
func (h *admissionHarness) wantGroups(part int, want ...model.AdmissionGroup) {
	h.t.Helper()
	wantEqual(h.t, "admission-blocked groups", want, h.groups(part))
	due := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: part})).must(h.t)
	if due.AdmissionBlocked != (len(want) > 0) {
		h.t.Fatalf("PartitionDue.AdmissionBlocked = %v with %d groups", due.AdmissionBlocked, len(want))
	}
}

func budgetGroup(l model.LaneID, b model.BudgetID, n int) model.AdmissionGroup {
	return model.AdmissionGroup{Lane: l, Reason: model.WaitingForBudget, Budget: b, Count: n}
}

func quotaGroup(l model.LaneID, q model.QuotaID, key string, n int) model.AdmissionGroup {
	return model.AdmissionGroup{Lane: l, Reason: model.WaitingForQuota, Quota: q, QuotaKey: key, Count: n}
}

// blockOn blocks id on budget b at now.
func (h *admissionHarness) blockOn(id model.ExecutionID, b model.BudgetID, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForBudget, Budget: b, Detail: "budget", Now: now})).must(h.t)
}

// blockQuotaOf blocks id (which has a quota) on its bucket at now.
func (h *admissionHarness) blockQuotaOf(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForQuota, Detail: "quota", Now: now})).must(h.t)
}

func (h *admissionHarness) unblock(p *model.AdmissionUnblockParams) *model.AdmissionUnblockResult {
	h.t.Helper()
	if p.Limit == 0 {
		p.Limit = 100
	}
	return call(h.as.AdmissionUnblock(h.ctx, p)).must(h.t)
}

// claimWith claims a granted execution for w with an admission token.
func (h *admissionHarness) claimWith(id model.ExecutionID, w workerRef, token string, now time.Time) *model.ClaimResult {
	h.t.Helper()
	return call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{
		ID: id, Capabilities: w.Caps, AdmissionToken: token, LeaseRequest: h.leaseReq(w, leaseTTL), Now: now,
	})).must(h.t)
}

// grantClaimWith grants and claims id for w with an admission token.
func (h *admissionHarness) grantClaimWith(id model.ExecutionID, w workerRef, token string, now time.Time) *model.ClaimResult {
	h.t.Helper()
	return call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
		ID: id, Capabilities: w.Caps, AdmissionToken: token, LeaseRequest: h.leaseReq(w, leaseTTL), Now: now,
	})).must(h.t)
}

// wantToken checks the admission token id's record holds.
func (h *admissionHarness) wantToken(id model.ExecutionID, token string) {
	h.t.Helper()
	if got := h.describe(id).AdmissionToken; got != token {
		h.t.Fatalf("AdmissionToken of %v = %q, want %q", id, got, token)
	}
}

// admView is what the admission reads show of the given budgets and
// buckets at a fixed time, beside the executions' views.
type admView struct {
	Budgets  []*model.BudgetStatus
	Buckets  []*model.QuotaStatus
	Pending  []model.QuotaHold
	Groups   []model.AdmissionGroup
	Stale    []model.QuotaAdmission
	Executes map[string]execView
}

// admissionView reads b's budgets, q's buckets, the outbox and groups of
// p0 and the execution views of ids at now.
func (h *admissionHarness) admissionView(now time.Time, bs []model.BudgetID, qs []model.QuotaBucket, ids ...model.ExecutionID) admView {
	h.t.Helper()
	v := admView{Pending: h.pending(h.p0), Groups: h.groups(h.p0), Executes: map[string]execView{}}
	for _, b := range bs {
		v.Budgets = append(v.Budgets, h.budgetStatus(b, model.ExecutionID{}, now))
	}
	for _, q := range qs {
		v.Buckets = append(v.Buckets, h.quotaStatus(q.ID, q.Key, now))
	}
	for _, id := range ids {
		v.Executes[id.String()] = h.view(id)
	}
	return v
}

// unchangedAdm runs op and checks that the admission view stayed as it
// was.
func (h *admissionHarness) unchangedAdm(now time.Time, bs []model.BudgetID, qs []model.QuotaBucket, ids []model.ExecutionID, op func()) {
	h.t.Helper()
	before := h.admissionView(now, bs, qs, ids...)
	op()
	if d := cmp.Diff(before, h.admissionView(now, bs, qs, ids...), cmpOpts...); d != "" {
		h.t.Fatalf("changed (-before +after):\n%s", d)
	}
}

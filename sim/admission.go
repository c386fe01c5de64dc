package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Budgets, quotas and admission in the simulation (issue 12). The store
// wrapper faults the model.AdmissionStore calls like any other, so the
// engine's claim path (budget reads, QuotaAdmit, the claim with its
// admission token, the release after a failed claim), the quota releaser,
// the budget and quota scanners and the unblock scanner's admission half
// run against lost replies, repeated deliveries, slow calls and crashes
// between admission and claim.
//
// Policies: three budgets (one reset every 45 s, one whose hard breach
// cancels a flow) and two quota policies (a concurrency cap of 2; a rate
// of 3 per 5 s with jitter and a cap of 2), with three bucket keys. Their
// ids are drawn from the seed; both first processes create all of them at
// the start, concurrently (creates are idempotent), and the outside
// actor creates what is missing later.
//
// Workload: a submission is sometimes of kind "spend", which reports
// usage (TaskInfo.ReportUsage, with dedup keys, some repeated, sometimes
// on a budget it is not attached to) on its budgets, and on a hard breach
// fails permanently or goes on; and any submission may carry budgets
// and/or a quota with a key. The admission actor (a driver actor, like
// the outside world of sim/suspend.go) resets budgets, reports operator
// usage (dedup keys fresh or reused), gives back an execution's spend,
// reads statuses, creates the policies again and tries to raise a budget
// (a create with other limits: refused, budgets are immutable). At the
// drain it creates what is missing and resets the budgets executions are
// blocked on.
//
// Checks: after every call, a QuotaAdmit that admitted keeps the bucket
// within Rate admissions in any Window (over the admitted outcomes the
// wrapper saw, at the store's Now, among the steps made in Now order: a
// step at an older Now than the window was trimmed at, from a slow
// request or a stalled claimer, meets a window that already dropped
// entries, as the contract says; seed 963) and its reported Active within
// Concurrency; a budget report leaves every usage
// at most its positive hard limit. A claim of an execution with budgets
// (ExecutionClaim from the claim path) comes after the claiming goroutine
// read each budget and found it not exhausted (an operator's explicit
// grant skips the budget check by design); a claim-next never claims an
// execution with attachments directly. A handler of a quota execution
// starting under its live lease finds at most Concurrency handlers of its
// bucket running under their live leases (a handler whose lease was lost
// is a zombie and is not counted, as elsewhere). Every checkpoint: usage
// within the hard limits, definitions unchanged, Active within
// Concurrency. The drain: every acknowledged execution ends; then, the
// clock moved past the reconciler's grace and the releaser and the
// reconciler run, every bucket used has no admission left and every
// partition's quota release outbox is empty.

var _ model.AdmissionStore = (*Store)(nil)

func (s *Store) adm() model.AdmissionStore { return s.Store.(model.AdmissionStore) }

// BudgetCreate implements model.AdmissionStore.
func (s *Store) BudgetCreate(ctx context.Context, p *model.BudgetCreateParams) (*model.BudgetCreateResult, error) {
	return call(s, "BudgetCreate", p, s.adm().BudgetCreate)
}

// BudgetReport implements model.AdmissionStore.
func (s *Store) BudgetReport(ctx context.Context, p *model.BudgetReportParams) (*model.BudgetReportResult, error) {
	return call(s, "BudgetReport", p, s.adm().BudgetReport)
}

// BudgetRelease implements model.AdmissionStore.
func (s *Store) BudgetRelease(ctx context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error) {
	return call(s, "BudgetRelease", p, s.adm().BudgetRelease)
}

// BudgetReset implements model.AdmissionStore.
func (s *Store) BudgetReset(ctx context.Context, p *model.BudgetResetParams) (*model.BudgetResetResult, error) {
	return call(s, "BudgetReset", p, s.adm().BudgetReset)
}

// BudgetResetDue implements model.AdmissionStore.
func (s *Store) BudgetResetDue(ctx context.Context, p *model.BudgetResetDueParams) (*model.BudgetResetDueResult, error) {
	return call(s, "BudgetResetDue", p, s.adm().BudgetResetDue)
}

// BudgetReconcile implements model.AdmissionStore.
func (s *Store) BudgetReconcile(ctx context.Context, p *model.BudgetReconcileParams) (*model.BudgetReconcileResult, error) {
	return call(s, "BudgetReconcile", p, s.adm().BudgetReconcile)
}

// InlineAdmission implements model.InlineAdmitter as the wrapped store
// does, so the engines admit inline (through the faults of
// ExecutionClaimNext and ExecutionComplete) when it can.
func (s *Store) InlineAdmission() bool {
	ia, ok := s.Store.(model.InlineAdmitter)
	return ok && ia.InlineAdmission()
}

// BudgetStatus implements model.AdmissionStore.
func (s *Store) BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error) {
	return call(s, "BudgetStatus", p, s.adm().BudgetStatus)
}

// QuotaCreate implements model.AdmissionStore.
func (s *Store) QuotaCreate(ctx context.Context, p *model.QuotaCreateParams) (*model.QuotaCreateResult, error) {
	return call(s, "QuotaCreate", p, s.adm().QuotaCreate)
}

// QuotaAdmit implements model.AdmissionStore.
func (s *Store) QuotaAdmit(ctx context.Context, p *model.QuotaAdmitParams) (*model.QuotaAdmitResult, error) {
	return call(s, "QuotaAdmit", p, s.adm().QuotaAdmit)
}

// QuotaRelease implements model.AdmissionStore.
func (s *Store) QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error) {
	return call(s, "QuotaRelease", p, s.adm().QuotaRelease)
}

// QuotaStatus implements model.AdmissionStore.
func (s *Store) QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error) {
	return call(s, "QuotaStatus", p, s.adm().QuotaStatus)
}

// QuotaReconcile implements model.AdmissionStore.
func (s *Store) QuotaReconcile(ctx context.Context, p *model.QuotaReconcileParams) (*model.QuotaReconcileResult, error) {
	return call(s, "QuotaReconcile", p, s.adm().QuotaReconcile)
}

// AdmissionBlocked implements model.AdmissionStore.
func (s *Store) AdmissionBlocked(ctx context.Context, p *model.AdmissionBlockedParams) (*model.AdmissionBlockedResult, error) {
	return call(s, "AdmissionBlocked", p, s.adm().AdmissionBlocked)
}

// AdmissionUnblock implements model.AdmissionStore.
func (s *Store) AdmissionUnblock(ctx context.Context, p *model.AdmissionUnblockParams) (*model.AdmissionUnblockResult, error) {
	return call(s, "AdmissionUnblock", p, s.adm().AdmissionUnblock)
}

// QuotaReleasePending implements model.AdmissionStore.
func (s *Store) QuotaReleasePending(ctx context.Context, p *model.QuotaReleasePendingParams) (*model.QuotaReleasePendingResult, error) {
	return call(s, "QuotaReleasePending", p, s.adm().QuotaReleasePending)
}

// QuotaReleaseAck implements model.AdmissionStore.
func (s *Store) QuotaReleaseAck(ctx context.Context, p *model.QuotaReleaseAckParams) (*model.QuotaReleaseAckResult, error) {
	return call(s, "QuotaReleaseAck", p, s.adm().QuotaReleaseAck)
}

// simBudget and simQuota are the run's policies.
type simBudget struct {
	name string
	spec flowfabric.BudgetSpec
}

type simQuota struct {
	name string
	spec flowfabric.QuotaSpec
}

// quotaKeys are the bucket keys executions use ("" is the default bucket).
var quotaKeys = []string{"acme", "zeta", ""}

// handlerRun is a handler running, for the concurrency check.
type handlerRun struct {
	exec   model.ExecutionID
	epoch  uint64
	bucket model.QuotaBucket
}

// AdmissionStats count what the admission workload did in a run.
type AdmissionStats struct {
	// Admitted counts QuotaAdmit steps that admitted (the store's, a
	// repeated delivery's included), Refused those refused (rate or
	// concurrency), Taken those that took an admission over; LateAdmits
	// the admissions at a Now before one the bucket was trimmed at (not
	// rate-checked).
	Admitted, Refused, Taken, LateAdmits int
	// Inline counts claims that admitted their execution in the claim's
	// own step (model.InlineAdmission).
	Inline int
	// BlockedBudget and BlockedQuota count ExecutionBlock steps on a
	// budget or a quota.
	BlockedBudget, BlockedQuota int
	// Reports counts applied usage reports, HardBreaches refused ones,
	// Resets the budget resets (operator and scheduled).
	Reports, HardBreaches, Resets int
	// QuotaRuns counts handlers of quota executions started under a live
	// lease; MaxRunning the most running at once in one bucket.
	QuotaRuns, MaxRunning int
	// ClaimedExhausted counts claims of an execution one of whose budgets
	// was exhausted when the claim applied (by a report after the claim
	// path read it: allowed).
	ClaimedExhausted int
}

// Add adds o's counts to s.
func (s *AdmissionStats) Add(o AdmissionStats) {
	s.Admitted += o.Admitted
	s.Refused += o.Refused
	s.Taken += o.Taken
	s.LateAdmits += o.LateAdmits
	s.Inline += o.Inline
	s.BlockedBudget += o.BlockedBudget
	s.BlockedQuota += o.BlockedQuota
	s.Reports += o.Reports
	s.HardBreaches += o.HardBreaches
	s.Resets += o.Resets
	s.QuotaRuns += o.QuotaRuns
	s.MaxRunning = max(s.MaxRunning, o.MaxRunning)
	s.ClaimedExhausted += o.ClaimedExhausted
}

// admState is the world's admission part.
type admState struct {
	budgets []simBudget
	quotas  []simQuota
	// buckets are the buckets executions were submitted to, in first-use
	// order (seen: membership).
	buckets []model.QuotaBucket
	seen    map[model.QuotaBucket]bool
	// admits are the store times of the admitted QuotaAdmit steps made in
	// Now order, per bucket; trimmed is the latest Now of a QuotaAdmit
	// step on the bucket, reconciled of a QuotaReconcile step (on any
	// partition): each trims windows.
	admits     map[model.QuotaBucket][]time.Time
	trimmed    map[model.QuotaBucket]time.Time
	reconciled time.Time
	// running are the handlers of quota executions running.
	running []handlerRun
	// reads are the last budget status each goroutine read (true:
	// exhausted or missing), by proc id.
	reads map[int]map[model.BudgetID]bool
	// grantProcs are the goroutines of an operator's explicit grant (the
	// budget check is skipped by design).
	grantProcs map[int]bool
	// execs are the executions created with a quota (not flow members:
	// a flow whose submission failed may never run them), in creation
	// order (created: membership).
	execs     []model.ExecutionID
	created   map[model.ExecutionID]bool
	nrep      int
	lastReset time.Time // the drain's last reset
	stats     AdmissionStats
}

// newAdmState draws the run's policies (ids from the seed).
func newAdmState(w *world) admState {
	id := func() model.UUID {
		var b [16]byte
		for i := range b {
			b[i] = byte(w.rng.IntN(256))
		}
		return model.NewUUIDv4(b)
	}
	a := admState{seen: map[model.QuotaBucket]bool{}, admits: map[model.QuotaBucket][]time.Time{}, trimmed: map[model.QuotaBucket]time.Time{},
		reads: map[int]map[model.BudgetID]bool{}, grantProcs: map[int]bool{}, created: map[model.ExecutionID]bool{}}
	a.budgets = []simBudget{
		{"B0", flowfabric.BudgetSpec{ID: model.BudgetID(id()), Limits: map[string]model.BudgetLimit{
			"tokens": {Hard: 150, Soft: 100}, "calls": {Soft: 8}}}},
		{"B1", flowfabric.BudgetSpec{ID: model.BudgetID(id()), Limits: map[string]model.BudgetLimit{
			"tokens": {Hard: 70}}, ResetEvery: 45 * time.Second}},
		{"B2", flowfabric.BudgetSpec{ID: model.BudgetID(id()), Limits: map[string]model.BudgetLimit{
			"tokens": {Hard: 80, Soft: 50}}, OnHardBreach: model.BreachCancelFlow}},
	}
	a.quotas = []simQuota{
		{"Q0", flowfabric.QuotaSpec{ID: model.QuotaID(id()), Concurrency: 2}},
		{"Q1", flowfabric.QuotaSpec{ID: model.QuotaID(id()), Rate: 3, Window: 5 * time.Second, Jitter: time.Second, Concurrency: 2}},
	}
	return a
}

func (w *world) budgetName(id model.BudgetID) string {
	for _, b := range w.adm.budgets {
		if b.spec.ID == id {
			return b.name
		}
	}
	return "B?" + id.String()
}

func (w *world) quotaOf(id model.QuotaID) *simQuota {
	for i := range w.adm.quotas {
		if w.adm.quotas[i].spec.ID == id {
			return &w.adm.quotas[i]
		}
	}
	return nil
}

func (w *world) bucketName(b model.QuotaBucket) string {
	n := "Q?"
	if q := w.quotaOf(b.ID); q != nil {
		n = q.name
	}
	return fmt.Sprintf("%s/%q", n, b.Key)
}

// admissionOpts attaches budgets and a quota to a submission: always
// budgets for a spend kind, sometimes for any other.
func (w *world) admissionOpts(o *flowfabric.SubmitOpts, kind model.Kind) {
	a := &w.adm
	if kind == "spend" || w.rng.IntN(6) == 0 {
		for _, b := range a.budgets {
			if w.rng.IntN(3) == 0 {
				o.Budgets = append(o.Budgets, b.spec.ID)
			}
		}
		if kind == "spend" && len(o.Budgets) == 0 {
			o.Budgets = []model.BudgetID{pick(w, a.budgets).spec.ID}
		}
	}
	if w.rng.IntN(5) == 0 || (kind == "spend" && w.rng.IntN(2) == 0) {
		q := pick(w, a.quotas)
		o.Quota, o.QuotaKey = q.spec.ID, pick(w, quotaKeys)
		b := model.QuotaBucket{ID: o.Quota, Key: o.QuotaKey}
		if !a.seen[b] {
			a.seen[b] = true
			a.buckets = append(a.buckets, b)
		}
	}
}

// describeAdmission summarises the attachments of a submission.
func (w *world) describeAdmission(o *flowfabric.SubmitOpts) string {
	var parts []string
	for _, b := range o.Budgets {
		parts = append(parts, w.budgetName(b))
	}
	if !model.UUID(o.Quota).IsZero() {
		parts = append(parts, w.bucketName(model.QuotaBucket{ID: o.Quota, Key: o.QuotaKey}))
	}
	if len(parts) == 0 {
		return ""
	}
	return " admission " + strings.Join(parts, ",")
}

// spendHandler is the handler of kind spend: it reports usage on its
// budgets (see the top of this file).
func (w *world) spendHandler(ctx context.Context, info *flowfabric.TaskInfo) error {
	snap, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: info.ID})
	if err != nil {
		return err
	}
	targets := slices.Clone(snap.Budgets)
	if len(targets) == 0 || w.rng.IntN(5) == 0 {
		targets = append(targets, pick(w, w.adm.budgets).spec.ID)
	}
	a := w.alias(info.ID)
	for i := range 1 + w.rng.IntN(3) {
		b := pick(w, targets)
		deltas := map[string]int64{"tokens": int64(1 + w.rng.IntN(40))}
		if w.rng.IntN(3) == 0 {
			deltas["calls"] = 1
		}
		key := fmt.Sprintf("r%d", i)
		if i > 0 && w.rng.IntN(4) == 0 {
			key = "r0" // the same report again: applied once per attempt
		}
		rep, err := info.ReportUsage(ctx, b, deltas, &flowfabric.UsageOpts{DedupKey: key})
		switch {
		case errors.Is(err, flowfabric.ErrBudgetExceeded):
			w.logf("%s %s spends %v on %s key %s: hard breach %s at %d of %d", w.who(), a, deltas["tokens"], w.budgetName(b), key,
				rep.Dimension, rep.Usage, rep.Limit)
			if w.rng.IntN(2) == 0 {
				return flowfabric.Permanent(err)
			}
			continue
		case err != nil:
			w.logf("%s %s spends on %s: %s", w.who(), a, w.budgetName(b), errCode(err))
			return err
		}
		w.logf("%s %s spends %v on %s key %s: %s", w.who(), a, deltas["tokens"], w.budgetName(b), key, rep.Outcome)
		if err := w.sched.Wait(ctx, w.dur(10*time.Millisecond, 800*time.Millisecond), nil); err != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// admTrack wraps a handler with the concurrency check of its execution's
// quota bucket. Not deferred: see scanPass.
func (w *world) admTrack(h func(context.Context, *flowfabric.TaskInfo) error) func(context.Context, *flowfabric.TaskInfo) error {
	return func(ctx context.Context, info *flowfabric.TaskInfo) error {
		tracked := w.handlerStarts(info)
		err := h(ctx, info)
		if tracked {
			w.adm.running = slices.DeleteFunc(w.adm.running, func(r handlerRun) bool {
				return r.exec == info.ID && r.epoch == info.LeaseEpoch
			})
		}
		return err
	}
}

// liveLease reports whether epoch is id's current lease in the store.
func (w *world) liveLease(id model.ExecutionID, epoch uint64) (*model.ExecutionSnapshot, bool) {
	s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		return nil, false
	}
	return s, s.State.LifecyclePhase == model.PhaseActive && s.CurrentLease != nil && s.CurrentLease.Epoch == epoch
}

// handlerStarts checks and records a handler's start (true: tracked).
func (w *world) handlerStarts(info *flowfabric.TaskInfo) bool {
	s, live := w.liveLease(info.ID, info.LeaseEpoch)
	if s == nil || model.UUID(s.Quota).IsZero() {
		return false
	}
	a := w.alias(info.ID)
	if !live {
		w.logf("%s %s starts under a lost lease e%d (a zombie: not counted)", w.who(), a, info.LeaseEpoch)
		return false
	}
	b := model.QuotaBucket{ID: s.Quota, Key: s.QuotaKey}
	// forget the handlers whose lease is gone (zombies and ended ones)
	w.adm.running = slices.DeleteFunc(w.adm.running, func(r handlerRun) bool {
		_, ok := w.liveLease(r.exec, r.epoch)
		return !ok || (r.exec == info.ID && r.epoch == info.LeaseEpoch)
	})
	w.adm.running = append(w.adm.running, handlerRun{exec: info.ID, epoch: info.LeaseEpoch, bucket: b})
	w.adm.stats.QuotaRuns++
	var in []string
	for _, r := range w.adm.running {
		if r.bucket == b {
			in = append(in, fmt.Sprintf("%s e%d", w.alias(r.exec), r.epoch))
		}
	}
	w.adm.stats.MaxRunning = max(w.adm.stats.MaxRunning, len(in))
	if q := w.quotaOf(b.ID); q != nil && q.spec.Concurrency > 0 && len(in) > q.spec.Concurrency {
		w.violate("%s e%d starts in quota bucket %s with %d handlers running under live leases (%s), cap %d", a, info.LeaseEpoch,
			w.bucketName(b), len(in), strings.Join(in, ", "), q.spec.Concurrency)
	}
	return true
}

// beforeAdmission runs before an admission call applies.
func (w *world) beforeAdmission(op string, p any) {}

// afterAdmission checks an admission call just applied, with its reply.
func (w *world) afterAdmission(op string, p any, r any, err error) {
	ctx := context.Background()
	switch op {
	case "BudgetStatus":
		pp := p.(*model.BudgetStatusParams)
		if w.sched.cur == nil {
			return
		}
		st, _ := r.(*model.BudgetStatus)
		switch {
		case err == nil && st != nil:
			w.recordRead(pp.ID, st.Exhausted != "")
		case errors.Is(err, model.ErrBudgetNotFound):
			w.recordRead(pp.ID, true)
		}
	case "BudgetReport":
		res, _ := r.(*model.BudgetReportResult)
		if err != nil || res == nil {
			return
		}
		switch res.Outcome {
		case model.ReportApplied, model.ReportSoftBreach:
			w.adm.stats.Reports++
		case model.ReportHardBreach:
			w.adm.stats.HardBreaches++
		}
		w.checkBudget(p.(*model.BudgetReportParams).ID)
	case "BudgetReset":
		if err == nil {
			w.adm.stats.Resets++
		}
	case "BudgetResetDue":
		if res, _ := r.(*model.BudgetResetDueResult); err == nil && res != nil {
			w.adm.stats.Resets += len(res.Reset)
		}
	case "QuotaAdmit":
		pp := p.(*model.QuotaAdmitParams)
		res, _ := r.(*model.QuotaAdmitResult)
		if err != nil || res == nil {
			return
		}
		b := model.QuotaBucket{ID: pp.ID, Key: pp.Key}
		q := w.quotaOf(pp.ID)
		w.noteTrim(b, pp.Now)
		switch res.Outcome {
		case model.QuotaAdmitted:
			w.noteAdmitted(b, pp.Now)
		case model.QuotaAlreadyAdmitted:
			w.adm.stats.Taken++
		default:
			w.adm.stats.Refused++
		}
		if q != nil && q.spec.Concurrency > 0 && res.Active > q.spec.Concurrency {
			w.violate("QuotaAdmit %s to %s: %s with %d admissions held, cap %d", w.alias(pp.Execution), w.bucketName(b), res.Outcome,
				res.Active, q.spec.Concurrency)
		}
	case "Create":
		res, _ := r.(*model.ExecutionCreateResult)
		if err != nil || res == nil || w.adm.created[res.ID] {
			return
		}
		if s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: res.ID}); err == nil &&
			!model.UUID(s.Quota).IsZero() && s.Flow.IsZero() {
			w.adm.created[res.ID] = true
			w.adm.execs = append(w.adm.execs, res.ID)
		}
	case "QuotaReconcile":
		if pp := p.(*model.QuotaReconcileParams); err == nil && pp.Now.After(w.adm.reconciled) {
			w.adm.reconciled = pp.Now // it trims the windows of its partition's buckets
		}
	case "Block":
		if pp, ok := p.(*model.ExecutionBlockParams); ok && err == nil {
			switch pp.Reason {
			case model.WaitingForBudget:
				w.adm.stats.BlockedBudget++
			case model.WaitingForQuota:
				w.adm.stats.BlockedQuota++
			}
		}
	case "Claim":
		pp := p.(*model.ExecutionClaimParams)
		if err != nil {
			return
		}
		s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: pp.ID})
		if err != nil {
			return
		}
		w.checkBudgetsRead(s, "claimed")
	}
}

// noteTrim notes a step that trimmed bucket b's window at now (an
// admission's, whatever its outcome) and reports whether it came in Now
// order. A step at a Now before one the window was trimmed at (a slow
// request, a stalled claimer's stale Now) meets a window that lost
// entries it would have counted: the contract bounds only the admissions
// made in Now order.
func (w *world) noteTrim(b model.QuotaBucket, now time.Time) bool {
	inOrder := !now.Before(w.adm.trimmed[b]) && !now.Before(w.adm.reconciled)
	if inOrder {
		w.adm.trimmed[b] = now
	}
	return inOrder
}

// noteAdmitted counts a new admission to bucket b at now, whose window
// was just trimmed at now (noteTrim said inOrder), and checks its rate.
func (w *world) noteAdmitted(b model.QuotaBucket, now time.Time) {
	w.adm.stats.Admitted++
	if now.Before(w.adm.trimmed[b]) || now.Before(w.adm.reconciled) {
		w.adm.stats.LateAdmits++
		return
	}
	w.adm.admits[b] = append(w.adm.admits[b], now)
	if q := w.quotaOf(b.ID); q != nil && q.spec.Rate > 0 {
		w.checkRate(b, q, now)
	}
}

// unacked are the executions with a quota that exist but were never
// acknowledged (the submission's reply was lost): the drain
// waits for them too, since their quota slots must free.
func (a *admState) unacked(w *world) []model.ExecutionID {
	var out []model.ExecutionID
	for _, id := range a.execs {
		if !w.isAcked[id] {
			out = append(out, id)
		}
	}
	return out
}

// recordRead notes a budget status the running goroutine read.
func (w *world) recordRead(id model.BudgetID, exhausted bool) {
	pid := w.sched.cur.id
	m := w.adm.reads[pid]
	if m == nil {
		m = map[model.BudgetID]bool{}
		w.adm.reads[pid] = m
	}
	m[id] = exhausted
}

// checkBudgetsRead checks that the goroutine claiming s read each of its
// budgets not exhausted (not for an operator's explicit grant).
func (w *world) checkBudgetsRead(s *model.ExecutionSnapshot, what string) {
	if len(s.Budgets) == 0 {
		return
	}
	cur := w.sched.cur
	if cur == nil || w.adm.grantProcs[cur.id] {
		return
	}
	a := w.alias(s.ID)
	counted := false
	for _, b := range s.Budgets {
		exh, ok := w.adm.reads[cur.id][b]
		switch {
		case !ok:
			w.violate("%s %s without the claim path reading its budget %s", a, what, w.budgetName(b))
		case exh:
			w.violate("%s %s although the claim path read its budget %s exhausted", a, what, w.budgetName(b))
		}
		if st, err := w.raw.BudgetStatus(context.Background(), &model.BudgetStatusParams{ID: b, Now: w.sched.now}); err == nil &&
			st.Exhausted != "" && !counted {
			counted = true
			w.adm.stats.ClaimedExhausted++
		}
	}
}

// checkClaimAdmission checks a claim c of s that a claim-next (or a
// completion's next claim) made at now with inline admission in: of an
// execution that needs admission only when in lists its budgets and
// quota, no budget was missing or exhausted, and its bucket holds the
// admission under the new lease's id; the admission joins the rate check
// as a QuotaAdmit's would.
func (w *world) checkClaimAdmission(s *model.ExecutionSnapshot, c *model.ClaimResult, in *model.InlineAdmission, now time.Time) {
	if len(s.Budgets) == 0 && model.UUID(s.Quota).IsZero() {
		return
	}
	a := w.alias(s.ID)
	if !in.Covers(s.Budgets, s.Quota) {
		w.violate("%s claimed directly by a claim-next although it has budgets %d or a quota that its inline admission does not list",
			a, len(s.Budgets))
		return
	}
	w.adm.stats.Inline++
	ctx := context.Background()
	for _, b := range s.Budgets {
		// the claim changed no usage: the budget is as the step saw it
		st, err := w.raw.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now})
		switch {
		case err != nil:
			w.violate("%s admitted inline although its budget %s cannot be read: %v", a, w.budgetName(b), errCode(err))
		case st.Exhausted != "":
			w.violate("%s admitted inline although its budget %s is exhausted (%s)", a, w.budgetName(b), st.Exhausted)
		}
	}
	if model.UUID(s.Quota).IsZero() {
		return
	}
	b := model.QuotaBucket{ID: s.Quota, Key: s.QuotaKey}
	if c.AdmissionToken != c.Lease.ID.String() || s.AdmissionToken != c.AdmissionToken {
		w.violate("%s admitted inline to %s holds token %q (claim %q), want its lease id", a, w.bucketName(b), s.AdmissionToken, c.AdmissionToken)
	}
	w.noteTrim(b, now)
	w.noteAdmitted(b, now)
}

// checkRate checks that no window of b's policy holds more than Rate
// admissions, over the windows that contain t.
func (w *world) checkRate(b model.QuotaBucket, q *simQuota, t time.Time) {
	ts := w.adm.admits[b]
	// forget what no window can meet again (keep a margin for slow
	// requests' older Now)
	horizon := w.sched.now.Add(-q.spec.Window - time.Minute)
	ts = slices.DeleteFunc(ts, func(x time.Time) bool { return x.Before(horizon) })
	w.adm.admits[b] = ts
	for _, end := range ts {
		if end.Before(t) || !end.Before(t.Add(q.spec.Window)) {
			continue
		}
		// the window (end − Window, end]
		n := 0
		for _, x := range ts {
			if x.After(end.Add(-q.spec.Window)) && !x.After(end) {
				n++
			}
		}
		if n > q.spec.Rate {
			w.violate("quota bucket %s admitted %d executions in the %v window ending at %v, rate %d", w.bucketName(b), n,
				q.spec.Window, end.Sub(start), q.spec.Rate)
			return
		}
	}
}

// checkBudget checks one budget in the store: usage within the positive
// hard limits, and the definition unchanged (budgets are immutable).
func (w *world) checkBudget(id model.BudgetID) {
	st, err := w.raw.BudgetStatus(context.Background(), &model.BudgetStatusParams{ID: id, Now: w.sched.now})
	if err != nil {
		return // not created yet
	}
	n := w.budgetName(id)
	for _, d := range slices.Sorted(maps.Keys(st.Limits)) {
		if l := st.Limits[d]; l.Hard > 0 && st.Usage[d] > l.Hard {
			w.violate("budget %s: %s usage %d above its hard limit %d", n, d, st.Usage[d], l.Hard)
		}
	}
	for _, b := range w.adm.budgets {
		if b.spec.ID == id && (!maps.Equal(b.spec.Limits, st.Limits) || b.spec.ResetEvery != st.ResetInterval || b.spec.OnHardBreach != st.OnHardBreach) {
			w.violate("budget %s: its definition changed: %v reset %v, created as %v reset %v", n, st.Limits, st.ResetInterval,
				b.spec.Limits, b.spec.ResetEvery)
		}
	}
}

// checkAdmission is the checkpoint's part: every budget, and every used
// bucket's admissions within its cap.
func (w *world) checkAdmission() {
	for _, b := range w.adm.budgets {
		w.checkBudget(b.spec.ID)
	}
	for _, b := range w.adm.buckets {
		st, err := w.raw.QuotaStatus(context.Background(), &model.QuotaStatusParams{ID: b.ID, Key: b.Key, Now: w.sched.now})
		if err != nil {
			continue
		}
		if st.Concurrency > 0 && st.Active > st.Concurrency {
			w.violate("quota bucket %s holds %d admissions, cap %d", w.bucketName(b), st.Active, st.Concurrency)
		}
	}
}

// createPolicies creates every policy through p's engine, in a proc of p
// (only those missing in the store, unless all).
func (w *world) createPolicies(p *process, all bool) {
	ctx := context.Background()
	var bs []simBudget
	var qs []simQuota
	for _, b := range w.adm.budgets {
		if _, err := w.raw.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b.spec.ID, Now: w.sched.now}); all || err != nil {
			bs = append(bs, b)
		}
	}
	for _, q := range w.adm.quotas {
		if _, err := w.raw.QuotaStatus(ctx, &model.QuotaStatusParams{ID: q.spec.ID, Now: w.sched.now}); all || err != nil {
			qs = append(qs, q)
		}
	}
	if len(bs)+len(qs) == 0 {
		return
	}
	w.spawn(p, func() {
		for _, b := range bs {
			_, created, err := p.engine.CreateBudget(ctx, b.spec)
			w.logf("P%d admission: create budget %s: created %v %s", p.n, b.name, created, errCode(err))
		}
		for _, q := range qs {
			_, created, err := p.engine.CreateQuota(ctx, q.spec)
			w.logf("P%d admission: create quota %s: created %v %s", p.n, q.name, created, errCode(err))
		}
	})
}

// admActor takes one step of the admission actor through p's engine.
func (w *world) admActor(p *process) {
	ctx := context.Background()
	a := &w.adm
	switch r := w.rng.IntN(20); {
	case r < 3:
		b := pick(w, a.budgets)
		w.spawn(p, func() {
			w.logf("P%d admission: reset budget %s: %s", p.n, b.name, errCode(p.engine.ResetBudget(ctx, b.spec.ID)))
		})
	case r < 10:
		b := pick(w, a.budgets)
		a.nrep++
		key := fmt.Sprintf("op%d", a.nrep)
		if a.nrep > 1 && w.rng.IntN(3) == 0 {
			key = fmt.Sprintf("op%d", 1+w.rng.IntN(a.nrep-1)) // a retried report
		}
		deltas := map[string]int64{"tokens": int64(1 + w.rng.IntN(60))}
		w.spawn(p, func() {
			rep, err := p.engine.ReportUsage(ctx, b.spec.ID, deltas, &flowfabric.UsageOpts{DedupKey: key})
			out := errCode(err)
			if rep != nil {
				out = rep.Outcome.String()
			}
			w.logf("P%d admission: operator usage %d on %s key %s: %s", p.n, deltas["tokens"], b.name, key, out)
		})
	case r < 12:
		// give back an execution's spend
		var ids []model.ExecutionID
		for _, id := range w.acked {
			if s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id}); err == nil && len(s.Budgets) > 0 {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return
		}
		id := pick(w, ids)
		w.spawn(p, func() {
			w.logf("P%d admission: release spend of %s: %s", p.n, w.alias(id), errCode(p.engine.ReleaseBudgetSpend(ctx, id)))
		})
	case r < 14:
		b, q := pick(w, a.budgets), pick(w, a.quotas)
		key := pick(w, quotaKeys)
		w.spawn(p, func() {
			if st, err := p.engine.BudgetStatus(ctx, b.spec.ID); err == nil {
				w.logf("P%d admission: budget %s usage %v exhausted %q", p.n, b.name, st.Usage, st.Exhausted)
			}
			if st, err := p.engine.QuotaStatus(ctx, q.spec.ID, key); err == nil {
				w.logf("P%d admission: quota %s/%q active %d in window %d free %d", p.n, q.name, key, st.Active, st.InWindow, st.Free)
			}
		})
	case r < 16:
		w.createPolicies(p, true)
	case r < 17:
		// try to raise a budget: refused, budgets are immutable (one
		// that does not exist yet would be created so: not tried)
		b := pick(w, a.budgets)
		if _, err := w.raw.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b.spec.ID, Now: w.sched.now}); err != nil {
			return
		}
		spec := b.spec
		spec.Limits = map[string]model.BudgetLimit{"tokens": {Hard: spec.Limits["tokens"].Hard * 2}}
		w.spawn(p, func() {
			_, created, err := p.engine.CreateBudget(ctx, spec)
			w.logf("P%d admission: raise budget %s: created %v %s", p.n, b.name, created, errCode(err))
		})
	default:
		w.createPolicies(p, false)
	}
}

// admDrain is the admission actor at the drain: it creates what is
// missing and, every 10 s, resets the budgets executions are blocked on.
func (w *world) admDrain(left []*model.ExecutionSnapshot) {
	live := w.live()
	if len(live) == 0 {
		return
	}
	p := pick(w, live)
	w.createPolicies(p, false)
	if w.sched.now.Before(w.adm.lastReset.Add(10 * time.Second)) {
		return
	}
	blocked := false
	for _, s := range left {
		if s.State.BlockingReason == model.WaitingForBudget {
			blocked = true
		}
	}
	if !blocked {
		return
	}
	w.adm.lastReset = w.sched.now
	ctx := context.Background()
	for _, b := range w.adm.budgets {
		w.spawn(p, func() {
			w.logf("P%d drain: reset budget %s: %s", p.n, b.name, errCode(p.engine.ResetBudget(ctx, b.spec.ID)))
		})
	}
}

// admFinish runs after every acknowledged execution ended and either the
// admissions were all released or the quota reconciler's grace passed
// with the scanners running: no bucket may hold an admission and no
// outbox an entry.
func (w *world) admFinish() {
	ctx := context.Background()
	for _, b := range w.adm.buckets {
		st, err := w.raw.QuotaStatus(ctx, &model.QuotaStatusParams{ID: b.ID, Key: b.Key, Now: w.sched.now})
		if err != nil {
			w.violate("drain: quota bucket %s: %v", w.bucketName(b), errCode(err))
			continue
		}
		if st.Active != 0 {
			w.violate("drain: quota bucket %s still holds %d admissions after the releaser and the reconciler ran", w.bucketName(b), st.Active)
		}
	}
	for part := range w.raw.Partitions().WithDefaults().FlowPartitions {
		res, err := w.raw.QuotaReleasePending(ctx, &model.QuotaReleasePendingParams{Partition: part, Limit: 10})
		if err != nil {
			w.violate("drain: quota release outbox of partition %d: %v", part, errCode(err))
			continue
		}
		for _, it := range res.Items {
			w.violate("drain: quota release outbox of partition %d still holds %s's admission %s in %s", part, w.alias(it.Execution),
				it.Token, w.bucketName(model.QuotaBucket{ID: it.Quota, Key: it.Key}))
		}
	}
	w.logf("drain: quota buckets empty, release outboxes empty")
}

// admSettled reports whether no bucket used holds an admission and no
// partition's quota release outbox an entry.
func (w *world) admSettled() bool {
	ctx := context.Background()
	for _, b := range w.adm.buckets {
		if st, err := w.raw.QuotaStatus(ctx, &model.QuotaStatusParams{ID: b.ID, Key: b.Key, Now: w.sched.now}); err != nil || st.Active != 0 {
			return false
		}
	}
	for part := range w.raw.Partitions().WithDefaults().FlowPartitions {
		if res, err := w.raw.QuotaReleasePending(ctx, &model.QuotaReleasePendingParams{Partition: part, Limit: 1}); err != nil || len(res.Items) > 0 {
			return false
		}
	}
	return true
}

// describeAdmissionParams summarises an admission call's parameters ("":
// not one).
func describeAdmissionParams(w *world, p any) string {
	switch pp := p.(type) {
	case *model.BudgetCreateParams:
		return w.budgetName(pp.ID)
	case *model.BudgetReportParams:
		return fmt.Sprintf("%s %s %v key %q", w.budgetName(pp.ID), w.alias(pp.Execution), pp.Deltas, pp.DedupKey)
	case *model.BudgetReleaseParams:
		return fmt.Sprintf("%s %s", w.budgetName(pp.ID), w.alias(pp.Execution))
	case *model.BudgetResetParams:
		return w.budgetName(pp.ID)
	case *model.BudgetStatusParams:
		return w.budgetName(pp.ID)
	case *model.QuotaCreateParams:
		if q := w.quotaOf(pp.ID); q != nil {
			return q.name
		}
	case *model.QuotaAdmitParams:
		return fmt.Sprintf("%s %s token %.8s", w.alias(pp.Execution), w.bucketName(model.QuotaBucket{ID: pp.ID, Key: pp.Key}), pp.Token)
	case *model.QuotaReleaseParams:
		return fmt.Sprintf("%s %s token %.8s", w.alias(pp.Execution), w.bucketName(model.QuotaBucket{ID: pp.ID, Key: pp.Key}), pp.Token)
	case *model.QuotaStatusParams:
		return w.bucketName(model.QuotaBucket{ID: pp.ID, Key: pp.Key})
	}
	return ""
}

// describeAdmissionResult summarises an admission call's result ("": not
// one).
func describeAdmissionResult(w *world, r any) string {
	switch rr := r.(type) {
	case *model.BudgetStatus:
		return fmt.Sprintf("ok usage %v exhausted %q", rr.Usage, rr.Exhausted)
	case *model.BudgetReportResult:
		if rr.Dimension != "" {
			return fmt.Sprintf("ok %s %s %d/%d", rr.Outcome, rr.Dimension, rr.Usage, rr.Limit)
		}
		return "ok " + rr.Outcome.String()
	case *model.QuotaStatus:
		return fmt.Sprintf("ok active %d in window %d free %d", rr.Active, rr.InWindow, rr.Free)
	case *model.QuotaAdmitResult:
		return fmt.Sprintf("ok %s active %d in window %d", rr.Outcome, rr.Active, rr.InWindow)
	case *model.QuotaReleaseResult:
		return fmt.Sprintf("ok released %v", rr.Released)
	case *model.QuotaReleasePendingResult:
		return fmt.Sprintf("ok items=%d", len(rr.Items))
	}
	return ""
}

package proptest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets, quotas and admission (model.AdmissionStore, issue 12): a small
// fixed world of three budgets and three quota policies (each with an
// alternative definition, a redefinition the store must refuse), three
// bucket keys and three admission tokens; the operations on them; the
// engine's claim path for executions that carry them (AdmitFlow:
// claim-next's Admit, the budget reads, the admission, the block on a
// refusal, the claim with the token); the unblock scanner's half
// (AdmissionBlocked, AdmissionUnblock); and the quota release outbox
// (QuotaReleasePending, QuotaRelease, QuotaReleaseAck).
//
// The machine keeps a model of what only the stores' answers decide: the
// definitions created, the dedup keys remembered, and every bucket's
// window entries and held admissions (from QuotaAdmit's and QuotaRelease's
// answers, which are the only operations that change them), so a
// QuotaAdmit's outcome and a QuotaRelease's answer are predicted exactly
// and every bucket's QuotaStatus is checked against it after every step.

type budgetDef struct {
	limits map[string]model.BudgetLimit
	reset  time.Duration
	action model.BudgetBreachAction
}

type quotaDef struct {
	rate        int
	window      time.Duration
	jitter      time.Duration
	concurrency int
}

func fixedUUID(kind, n byte) model.UUID { return model.NewUUIDv4([16]byte{0: kind, 15: n}) }

var (
	budgetIDs = []model.BudgetID{model.BudgetID(fixedUUID(0xb0, 1)), model.BudgetID(fixedUUID(0xb0, 2)), model.BudgetID(fixedUUID(0xb0, 3))}
	// budgetDefs are each budget's definition, then its redefinition.
	budgetDefs = [][2]budgetDef{
		{
			{limits: map[string]model.BudgetLimit{"tokens": {Hard: 100, Soft: 60}}, reset: 10 * time.Second},
			{limits: map[string]model.BudgetLimit{"tokens": {Hard: 200}}, reset: 10 * time.Second},
		},
		{
			{limits: map[string]model.BudgetLimit{"calls": {Hard: 5, Soft: 3}, "tokens": {Hard: 50}}},
			{limits: map[string]model.BudgetLimit{"calls": {Hard: 5, Soft: 3}, "tokens": {Hard: 50}}, reset: time.Hour},
		},
		{
			{limits: map[string]model.BudgetLimit{"cost": {Soft: 20}}, action: model.BreachCancelFlow},
			{limits: map[string]model.BudgetLimit{"cost": {Soft: 20}}},
		},
	}
	budgetDims   = []string{"tokens", "calls", "cost", "other"}
	budgetSizes  = []int64{1, 2, 5, 20, 40, 60}
	dedupKeys    = []string{"", "", "r1", "r2"}
	quotaIDs     = []model.QuotaID{model.QuotaID(fixedUUID(0xc0, 1)), model.QuotaID(fixedUUID(0xc0, 2)), model.QuotaID(fixedUUID(0xc0, 3))}
	quotaKeys    = []string{"", "k1", "k2"}
	admitTokens  = []string{"t1", "t2", "t3"}
	admitJitters = []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}
	// quotaDefs are each policy's definition, then its redefinition: a
	// rate, a concurrency cap, both.
	quotaDefs = [][2]quotaDef{
		{{rate: 2, window: time.Second}, {rate: 3, window: time.Second}},
		{{concurrency: 1}, {concurrency: 2}},
		{{rate: 3, window: 2 * time.Second, jitter: 100 * time.Millisecond, concurrency: 2}, {rate: 3, window: 2 * time.Second, concurrency: 2}},
	}
	quotaBuckets = func() []model.QuotaBucket {
		var out []model.QuotaBucket
		for _, q := range quotaIDs {
			for _, k := range quotaKeys {
				out = append(out, model.QuotaBucket{ID: q, Key: k})
			}
		}
		return out
	}()
)

// admModel is what the machine knows of budgets and quotas.
type admModel struct {
	budgets map[model.BudgetID]budgetDef // created
	quotas  map[model.QuotaID]quotaDef   // created
	dedup   map[budgetDedup]time.Time    // remembered until
	buckets map[model.QuotaBucket]*refBucket
	// unknown is set once a hostile call may have changed them behind
	// the model's back.
	unknown bool
}

type budgetDedup struct {
	budget model.BudgetID
	key    string
}

// refBucket is one bucket: its window entries (the times of its
// admissions, oldest first) and the admissions it holds.
type refBucket struct {
	window []time.Time
	held   map[model.ExecutionID]string // token
}

func newAdmModel() admModel {
	return admModel{
		budgets: map[model.BudgetID]budgetDef{}, quotas: map[model.QuotaID]quotaDef{},
		dedup: map[budgetDedup]time.Time{}, buckets: map[model.QuotaBucket]*refBucket{},
	}
}

func (a *admModel) bucket(b model.QuotaBucket) *refBucket {
	r := a.buckets[b]
	if r == nil {
		r = &refBucket{held: map[model.ExecutionID]string{}}
		a.buckets[b] = r
	}
	return r
}

// inWindow counts the entries of the window ending at now (the entries
// after now − window).
func (r *refBucket) inWindow(d quotaDef, now time.Time) int {
	if d.rate == 0 {
		return 0
	}
	n := 0
	for _, at := range r.window {
		if at.After(now.Add(-d.window)) {
			n++
		}
	}
	return n
}

// oldest is the oldest entry within the window ending at now.
func (r *refBucket) oldest(d quotaDef, now time.Time) (time.Time, bool) {
	for _, at := range r.window {
		if at.After(now.Add(-d.window)) {
			return at, true
		}
	}
	return time.Time{}, false
}

func (d quotaDef) params(id model.QuotaID, now time.Time) *model.QuotaCreateParams {
	return &model.QuotaCreateParams{ID: id, Rate: d.rate, Window: d.window, Jitter: d.jitter, Concurrency: d.concurrency, Now: now}
}

// admOp adapts a model.AdmissionStore method to call's shape
// (checkOptional requires the interface).
func admOp[P, R any](f func(model.AdmissionStore, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return optional(f)
}

// ---- budgets ----

func (m *machine) drawBudget(t *rapid.T) (int, model.BudgetID) {
	i := drawIndex(t, len(budgetIDs), "budget")
	return i, budgetIDs[i]
}

func (m *machine) budgetObs(b model.BudgetID) *model.BudgetStatus {
	if a := m.obs[0].Admission; a != nil {
		return a.Budgets[b]
	}
	return nil
}

func (m *machine) actBudgetCreate(t *rapid.T) {
	i, _ := m.drawBudget(t)
	m.budgetCreate(t, i)
}

func (m *machine) budgetCreate(t *rapid.T, i int) {
	b := budgetIDs[i]
	alt := chance(t, 15, "redefine")
	d := budgetDefs[i][0]
	if alt {
		d = budgetDefs[i][1]
	}
	p := &model.BudgetCreateParams{ID: b, Limits: maps.Clone(d.limits), ResetInterval: d.reset, OnHardBreach: d.action, Now: m.now()}
	bad := invalid(t, 5)
	switch bad {
	case 0:
		p.Limits = nil
	case 1:
		p.Limits = map[string]model.BudgetLimit{"bad dim": {Hard: 1}}
	case 2:
		p.Limits = map[string]model.BudgetLimit{"tokens": {Hard: -1}}
	case 3:
		p.ResetInterval = time.Millisecond
	case 4:
		p.OnHardBreach = "explode"
	}
	res, err := call(m, t, "BudgetCreate", p, admOp(model.AdmissionStore.BudgetCreate))
	if bad >= 0 {
		m.expectValidation(t, "BudgetCreate", err)
		return
	}
	cur, exists := m.adm.budgets[b]
	switch {
	case !exists:
		m.expect(t, err == nil && res.Created, "BudgetCreate of a new budget: %+v %v", res, err)
		m.adm.budgets[b] = d
	case !sameBudgetDef(cur, d):
		m.expect(t, errors.Is(err, model.ErrIdempotencyConflict), "BudgetCreate redefining a budget: %+v %v", res, err)
	default:
		m.expect(t, err == nil && !res.Created, "BudgetCreate of an existing budget, same definition: %+v %v", res, err)
	}
}

func sameBudgetDef(a, b budgetDef) bool {
	return maps.Equal(a.limits, b.limits) && a.reset == b.reset && a.action == b.action
}

func (m *machine) drawDeltas(t *rapid.T) map[string]int64 {
	d := map[string]int64{drawFrom(t, budgetDims, "dim"): drawFrom(t, budgetSizes, "size")}
	if chance(t, 25, "second_dim") {
		d[drawFrom(t, budgetDims, "dim2")] = drawFrom(t, budgetSizes, "size2")
	}
	return d
}

// drawBudgetExec draws an execution to charge: none, or one attached to
// the budget, or any.
func (m *machine) drawBudgetExec(t *rapid.T, b model.BudgetID) model.ExecutionID {
	if chance(t, 40, "no_exec") {
		return model.ExecutionID{}
	}
	return m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return slices.Contains(s.Budgets, b) })
}

func (m *machine) actBudgetReport(t *rapid.T) {
	_, b := m.drawBudget(t)
	m.budgetReport(t, b)
}

func (m *machine) budgetReport(t *rapid.T, b model.BudgetID) {
	m.budgetReportDeltas(t, b, m.drawDeltas(t))
}

// budgetReportDeltas reports deltas to b (with a drawn dedup key and
// execution, sometimes made invalid) and checks the answer.
func (m *machine) budgetReportDeltas(t *rapid.T, b model.BudgetID, deltas map[string]int64) {
	p := &model.BudgetReportParams{ID: b, Deltas: deltas, DedupKey: drawFrom(t, dedupKeys, "dedup_key"),
		Execution: m.drawBudgetExec(t, b), Now: m.now()}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Deltas = map[string]int64{"tokens": 0}
	case 1:
		p.Deltas = nil
	case 2:
		p.DedupKey = "bad\x01key"
	case 3:
		p.Deltas = map[string]int64{"tokens": model.MaxBudgetAmount + 1}
	}
	prev := m.budgetObs(b)
	res, err := call(m, t, "BudgetReport", p, admOp(model.AdmissionStore.BudgetReport))
	if bad >= 0 {
		m.expectValidation(t, "BudgetReport", err)
		return
	}
	if m.adm.unknown {
		return
	}
	d, exists := m.adm.budgets[b]
	if !exists {
		m.expect(t, errors.Is(err, model.ErrBudgetNotFound), "BudgetReport of a budget never created: %+v %v", res, err)
		return
	}
	m.expect(t, err == nil && prev != nil, "BudgetReport with valid input failed: %v (status %+v)", err, prev)
	dk := budgetDedup{b, p.DedupKey}
	if until, ok := m.adm.dedup[dk]; ok && p.DedupKey != "" && m.now().Before(until) {
		m.expect(t, res.Outcome == model.ReportAlreadyApplied, "BudgetReport with a dedup key seen until %v: %v", until, res.Outcome)
		return
	}
	hard := ""
	for _, dim := range sortedDims(p.Deltas) {
		if l := d.limits[dim]; l.Hard > 0 && prev.Usage[dim]+p.Deltas[dim] > l.Hard && hard == "" {
			hard = dim
		}
	}
	if hard != "" {
		m.expect(t, res.Outcome == model.ReportHardBreach && res.Dimension == hard && res.Limit == d.limits[hard].Hard &&
			res.Usage == prev.Usage[hard]+p.Deltas[hard] && res.OnHardBreach == d.action,
			"BudgetReport over the hard limit of %s (usage %d + %d > %d): %+v", hard, prev.Usage[hard], p.Deltas[hard], d.limits[hard].Hard, res)
		return
	}
	soft := false
	for dim, n := range p.Deltas {
		if l := d.limits[dim]; l.Soft > 0 && prev.Usage[dim]+n > l.Soft {
			soft = true
		}
	}
	anyAbove := soft
	for dim, l := range d.limits {
		if l.Soft > 0 && prev.Usage[dim] > l.Soft {
			anyAbove = true
		}
	}
	switch {
	case soft:
		m.expect(t, res.Outcome == model.ReportSoftBreach, "BudgetReport past a soft limit: %+v", res)
	case !anyAbove:
		m.expect(t, res.Outcome == model.ReportApplied, "BudgetReport within every limit: %+v", res)
	}
	if res.Outcome == model.ReportApplied || res.Outcome == model.ReportSoftBreach {
		if p.DedupKey != "" {
			m.adm.dedup[dk] = m.now().Add(model.BudgetDedupTTL)
		}
		m.reached("BudgetReport applied " + withExec(p.Execution))
	}
}

func withExec(id model.ExecutionID) string {
	if id.IsZero() {
		return "without execution"
	}
	return "with execution"
}

func sortedDims(d map[string]int64) []string {
	ks := slices.Collect(maps.Keys(d))
	slices.Sort(ks)
	return ks
}

func (m *machine) actBudgetRelease(t *rapid.T) {
	_, b := m.drawBudget(t)
	p := &model.BudgetReleaseParams{ID: b, Execution: m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return slices.Contains(s.Budgets, b) }), Now: m.now()}
	if invalid(t, 1) == 0 {
		p.Execution = model.ExecutionID{}
		_, err := call(m, t, "BudgetRelease", p, admOp(model.AdmissionStore.BudgetRelease))
		m.expectValidation(t, "BudgetRelease", err)
		return
	}
	_, err := call(m, t, "BudgetRelease", p, admOp(model.AdmissionStore.BudgetRelease))
	if _, ok := m.adm.budgets[b]; !ok && !m.adm.unknown {
		m.expect(t, errors.Is(err, model.ErrBudgetNotFound), "BudgetRelease of a budget never created: %v", err)
	}
}

func (m *machine) actBudgetReset(t *rapid.T) {
	_, b := m.drawBudget(t)
	prev := m.budgetObs(b)
	res, err := call(m, t, "BudgetReset", &model.BudgetResetParams{ID: b, Now: m.now()}, admOp(model.AdmissionStore.BudgetReset))
	if prev != nil && err == nil {
		m.expect(t, res.ResetCount == prev.ResetCount+1 && res.NextResetAt.Equal(prev.NextResetAt),
			"BudgetReset: count %d next %v, before %d %v", res.ResetCount, res.NextResetAt, prev.ResetCount, prev.NextResetAt)
	}
}

// drawBudgetPartition draws the budget partition of a known budget,
// sometimes any.
func (m *machine) drawBudgetPartition(t *rapid.T) int {
	if chance(t, 15, "any_budget_partition") {
		return drawIndex(t, m.cfg.BudgetPartitions, "budget_partition")
	}
	_, b := m.drawBudget(t)
	return m.cfg.BudgetPartition(b)
}

// actBudgetResetDue runs a partition's due resets; sometimes it first
// moves the clock to a budget's next reset and runs that budget's
// partition, so resets do not wait on the clock's own draws.
func (m *machine) actBudgetResetDue(t *rapid.T) {
	part := -1
	if chance(t, 50, "to_reset") {
		var due []model.BudgetID
		for _, b := range budgetIDs {
			if st := m.budgetObs(b); st != nil && !st.NextResetAt.IsZero() {
				due = append(due, b)
			}
		}
		if len(due) > 0 {
			b := drawFrom(t, due, "reset_budget")
			m.jumpTo(t, m.budgetObs(b).NextResetAt)
			part = m.cfg.BudgetPartition(b)
		}
	}
	if part < 0 {
		part = m.drawBudgetPartition(t)
	}
	m.budgetResetDue(t, part)
}

func (m *machine) budgetResetDue(t *rapid.T, part int) {
	p := &model.BudgetResetDueParams{Partition: part, Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now()}
	if invalid(t, 1) == 0 {
		p.Limit = 0
		_, err := call(m, t, "BudgetResetDue", p, admOp(model.AdmissionStore.BudgetResetDue))
		m.expectValidation(t, "BudgetResetDue", err)
		return
	}
	res, err := call(m, t, "BudgetResetDue", p, admOp(model.AdmissionStore.BudgetResetDue))
	m.expect(t, err == nil, "BudgetResetDue with valid input failed: %v", err)
	m.expect(t, len(res.Reset) <= p.Limit, "BudgetResetDue reset %d, limit %d", len(res.Reset), p.Limit)
	for _, b := range res.Reset {
		prev := m.budgetObs(b)
		m.expect(t, prev != nil && m.cfg.BudgetPartition(b) == p.Partition && !prev.NextResetAt.IsZero() && !prev.NextResetAt.After(m.now()),
			"BudgetResetDue reset %v, which was %+v", b, prev)
	}
	if len(res.Reset) > 0 {
		m.reached("BudgetResetDue reset")
	}
}

func (m *machine) actBudgetReconcile(t *rapid.T) {
	m.budgetReconcile(t, m.drawBudgetPartition(t))
}

func (m *machine) budgetReconcile(t *rapid.T, partition int) {
	p := &model.BudgetReconcileParams{Partition: partition, Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now()}
	if chance(t, 20, "after") {
		_, p.After = m.drawBudget(t)
	}
	res, err := call(m, t, "BudgetReconcile", p, admOp(model.AdmissionStore.BudgetReconcile))
	m.expect(t, err == nil, "BudgetReconcile with valid input failed: %v", err)
	for _, b := range res.Breached {
		prev := m.budgetObs(b)
		m.expect(t, prev != nil && prev.Exhausted != "" && prev.BreachedAt.IsZero(), "BudgetReconcile marked %v, which was %+v", b, prev)
	}
	for _, b := range res.Cleared {
		prev := m.budgetObs(b)
		m.expect(t, prev != nil && prev.Exhausted == "" && !prev.BreachedAt.IsZero(), "BudgetReconcile cleared %v, which was %+v", b, prev)
	}
	if len(res.Breached) > 0 {
		m.reached("BudgetReconcile breached")
	}
}

func (m *machine) actBudgetStatus(t *rapid.T) {
	_, b := m.drawBudget(t)
	p := &model.BudgetStatusParams{ID: b, Now: m.now()}
	if chance(t, 50, "with_exec") {
		p.Execution = m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return slices.Contains(s.Budgets, b) })
	}
	res, err := call(m, t, "BudgetStatus", p, admOp(model.AdmissionStore.BudgetStatus))
	if _, ok := m.adm.budgets[b]; !m.adm.unknown {
		m.expect(t, ok == (err == nil), "BudgetStatus of a budget created=%v: %v", ok, err)
	}
	if prev := m.budgetObs(b); err == nil && prev != nil {
		q := *res
		q.Spend = nil
		m.expect(t, cmpEqual(&q, prev), "BudgetStatus differs from the observation: %+v vs %+v", q, *prev)
	}
}

// ---- quotas ----

func (m *machine) quotaObs(b model.QuotaBucket) *model.QuotaStatus {
	if a := m.obs[0].Admission; a != nil {
		return a.Quotas[b]
	}
	return nil
}

func (m *machine) actQuotaCreate(t *rapid.T) {
	m.quotaCreate(t, drawIndex(t, len(quotaIDs), "quota"))
}

func (m *machine) quotaCreate(t *rapid.T, i int) {
	q := quotaIDs[i]
	d := quotaDefs[i][0]
	if chance(t, 15, "redefine") {
		d = quotaDefs[i][1]
	}
	p := d.params(q, m.now())
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Rate, p.Concurrency, p.Window, p.Jitter = 0, 0, 0, 0
	case 1:
		p.Rate, p.Window = 1, 0
	case 2:
		p.Concurrency = -1
	case 3:
		p.Rate, p.Window, p.Jitter = 1, time.Second, 2*time.Second
	}
	res, err := call(m, t, "QuotaCreate", p, admOp(model.AdmissionStore.QuotaCreate))
	if bad >= 0 {
		m.expectValidation(t, "QuotaCreate", err)
		return
	}
	cur, exists := m.adm.quotas[q]
	switch {
	case !exists:
		m.expect(t, err == nil && res.Created, "QuotaCreate of a new policy: %+v %v", res, err)
		m.adm.quotas[q] = d
	case cur != d:
		m.expect(t, errors.Is(err, model.ErrIdempotencyConflict), "QuotaCreate redefining a policy: %+v %v", res, err)
	default:
		m.expect(t, err == nil && !res.Created, "QuotaCreate of an existing policy, same definition: %+v %v", res, err)
	}
}

// drawAdmitTarget draws an execution and the bucket to admit it to:
// usually an execution with a quota and its own bucket.
func (m *machine) drawAdmitTarget(t *rapid.T) (model.ExecutionID, model.QuotaBucket) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return !noQuota(s.Quota) })
	if s := m.snap(id); s != nil && !noQuota(s.Quota) && !chance(t, 10, "other_bucket") {
		return id, model.QuotaBucket{ID: s.Quota, Key: s.QuotaKey}
	}
	return id, drawFrom(t, quotaBuckets, "bucket")
}

func drawToken(t *rapid.T) string { return drawFrom(t, admitTokens, "token") }

func (m *machine) actQuotaAdmit(t *rapid.T) {
	id, b := m.drawAdmitTarget(t)
	_, _ = m.quotaAdmit(t, id, b, drawToken(t)) // checked inside
}

// quotaAdmit admits id to bucket b, predicting the outcome from the
// model, and returns the answer.
func (m *machine) quotaAdmit(t *rapid.T, id model.ExecutionID, b model.QuotaBucket, token string) (*model.QuotaAdmitResult, error) {
	p := &model.QuotaAdmitParams{ID: b.ID, Key: b.Key, Execution: id, Token: token, Jitter: drawFrom(t, admitJitters, "jitter"), Now: m.now()}
	bad := invalid(t, 3)
	switch bad {
	case 0:
		p.Token = ""
	case 1:
		p.Token = "bad token"
	case 2:
		p.Key = "\x00"
	}
	res, err := call(m, t, "QuotaAdmit", p, admOp(model.AdmissionStore.QuotaAdmit))
	if bad >= 0 {
		m.expectValidation(t, "QuotaAdmit", err)
		return nil, err
	}
	if m.adm.unknown {
		return res, err
	}
	d, exists := m.adm.quotas[b.ID]
	if !exists {
		m.expect(t, errors.Is(err, model.ErrQuotaNotFound), "QuotaAdmit to a policy never created: %+v %v", res, err)
		return res, err
	}
	m.expect(t, err == nil, "QuotaAdmit with valid input failed: %v", err)
	rb := m.adm.bucket(b)
	now := m.now()
	in := rb.inWindow(d, now)
	want := model.QuotaAdmitResult{InWindow: in, Active: len(rb.held)}
	switch _, held := rb.held[id]; {
	case held:
		want.Outcome = model.QuotaAlreadyAdmitted
		rb.held[id] = token
	case d.rate > 0 && in >= d.rate:
		want.Outcome = model.QuotaRateExceeded
		oldest, _ := rb.oldest(d, now)
		want.RetryAfter = max(0, oldest.Add(d.window).Sub(now)) + min(p.Jitter, d.jitter)
	case d.concurrency > 0 && len(rb.held) >= d.concurrency:
		want.Outcome = model.QuotaConcurrencyExceeded
	default:
		want.Outcome = model.QuotaAdmitted
		rb.held[id] = token
		if d.rate > 0 {
			rb.window = append(rb.window, now)
			want.InWindow++
			m.expect(t, want.InWindow <= d.rate, "model: %d admissions in the window of %v, rate %d", want.InWindow, b, d.rate)
		}
		want.Active++
		m.expect(t, d.concurrency == 0 || want.Active <= d.concurrency, "model: %d admissions held in %v, cap %d", want.Active, b, d.concurrency)
	}
	m.expect(t, *res == want, "QuotaAdmit of %v to %v: %+v, the bucket's admissions say %+v", id, b, *res, want)
	return res, err
}

func (m *machine) actQuotaRelease(t *rapid.T) {
	id, b := m.drawAdmitTarget(t)
	token := drawToken(t)
	if rb := m.adm.buckets[b]; rb != nil {
		if held, ok := rb.held[id]; ok && chance(t, 50, "right_token") {
			token = held
		}
	}
	if chance(t, 20, "empty_token") {
		token = ""
	}
	m.quotaRelease(t, id, b, token)
}

func (m *machine) quotaRelease(t *rapid.T, id model.ExecutionID, b model.QuotaBucket, token string) {
	p := &model.QuotaReleaseParams{ID: b.ID, Key: b.Key, Execution: id, Token: token, Now: m.now()}
	res, err := call(m, t, "QuotaRelease", p, admOp(model.AdmissionStore.QuotaRelease))
	if m.adm.unknown {
		return
	}
	if _, ok := m.adm.quotas[b.ID]; !ok {
		m.expect(t, errors.Is(err, model.ErrQuotaNotFound), "QuotaRelease in a policy never created: %v", err)
		return
	}
	m.expect(t, err == nil, "QuotaRelease with valid input failed: %v", err)
	rb := m.adm.bucket(b)
	held, ok := rb.held[id]
	want := ok && (token == "" || token == held)
	m.expect(t, res.Released == want, "QuotaRelease of %v in %v with token %q: released %v, the bucket holds %q (%v)", id, b, token, res.Released, held, ok)
	if want {
		delete(rb.held, id)
		kind := "right"
		if token == "" {
			kind = "empty"
		}
		m.reached("QuotaRelease released " + kind)
	} else if ok {
		m.reached("QuotaRelease wrong token")
	}
}

func (m *machine) actQuotaStatus(t *rapid.T) {
	b := drawFrom(t, quotaBuckets, "bucket")
	res, err := call(m, t, "QuotaStatus", &model.QuotaStatusParams{ID: b.ID, Key: b.Key, Now: m.now()}, admOp(model.AdmissionStore.QuotaStatus))
	if _, ok := m.adm.quotas[b.ID]; !m.adm.unknown {
		m.expect(t, ok == (err == nil), "QuotaStatus of a policy created=%v: %v", ok, err)
	}
	if prev := m.quotaObs(b); err == nil {
		m.expect(t, cmpEqual(res, prev), "QuotaStatus differs from the observation: %+v vs %+v", res, prev)
	}
}

func (m *machine) actQuotaReconcile(t *rapid.T) {
	part := m.cfg.QuotaPartition(drawFrom(t, quotaIDs, "quota"))
	if chance(t, 10, "any_quota_partition") {
		part = drawIndex(t, m.cfg.QuotaPartitions, "quota_partition")
	}
	p := &model.QuotaReconcileParams{Partition: part, Limit: rapid.IntRange(1, 4).Draw(t, "limit"), Now: m.now()}
	if chance(t, 70, "stale_before") {
		p.StaleBefore = m.now().Add(-ms(rapid.Int64Range(0, 5000).Draw(t, "grace_ms")))
	}
	res, err := call(m, t, "QuotaReconcile", p, admOp(model.AdmissionStore.QuotaReconcile))
	m.expect(t, err == nil, "QuotaReconcile with valid input failed: %v", err)
	m.expect(t, len(res.Stale) <= p.Limit, "QuotaReconcile reported %d stale, limit %d", len(res.Stale), p.Limit)
	for _, a := range res.Stale {
		rb := m.adm.buckets[model.QuotaBucket{ID: a.ID, Key: a.Key}]
		m.expect(t, m.adm.unknown || (rb != nil && rb.held[a.Execution] == a.Token && a.AdmittedAt.Before(p.StaleBefore) &&
			m.cfg.QuotaPartition(a.ID) == part), "QuotaReconcile reports %+v, not a stale admission of the partition", a)
	}
	if len(res.Stale) > 0 {
		m.reached("QuotaReconcile stale")
	}
}

// drawAttachments draws an execution's budgets (some never created) and
// quota bucket (the policy sometimes never created).
func drawAttachments(t *rapid.T) ([]model.BudgetID, model.QuotaID, string) {
	var bs []model.BudgetID
	mask := 0
	if chance(t, 50, "budgets_set") {
		mask = rapid.IntRange(0, 1<<len(budgetIDs)-1).Draw(t, "budgets")
	}
	for i, b := range budgetIDs {
		if mask&(1<<i) != 0 {
			bs = append(bs, b)
		}
	}
	if !chance(t, 60, "quota_set") {
		return bs, model.QuotaID{}, ""
	}
	return bs, drawFrom(t, quotaIDs, "quota"), drawFrom(t, quotaKeys, "quota_key")
}

func noQuota(q model.QuotaID) bool { return model.UUID(q).IsZero() }

// actBudgetScenario creates a budget (or finds it), reports to it a few
// times (dedup keys repeat, sizes reach the limits), and sometimes
// reconciles its partition: deep budget states in one step.
//
// A report over a hard limit is refused, so usage reaches a limit only on
// an exact sum; the scenario sometimes reports exactly what is left of a
// hard limit, and its reconcile scans the budget's own partition, so the
// reconcile's "breached" transition is not left to rare draws.
//
// When the budget already has a reset scheduled, the scenario sometimes
// starts at that time and runs its partition's due resets after the
// reports.
func (m *machine) actBudgetScenario(t *rapid.T) {
	i, b := m.drawBudget(t)
	reset := false
	if st := m.budgetObs(b); st != nil && !st.NextResetAt.IsZero() && chance(t, 30, "to_reset") {
		m.jumpTo(t, st.NextResetAt)
		reset = true
	}
	m.budgetCreate(t, i)
	for n := rapid.IntRange(2, 5).Draw(t, "reports"); n > 0; n-- {
		m.observeQuiet(t)
		if deltas := m.budgetFill(b); deltas != nil && chance(t, 25, "fill") {
			m.budgetReportDeltas(t, b, deltas)
			continue
		}
		m.budgetReport(t, b)
	}
	if reset {
		m.observeQuiet(t)
		m.budgetResetDue(t, m.cfg.BudgetPartition(b))
	}
	if chance(t, 60, "reconcile") {
		m.observeQuiet(t)
		m.budgetReconcile(t, m.cfg.BudgetPartition(b))
	}
}

// budgetFill is a report that brings b's first hard dimension still
// under its limit exactly to the limit (nil: b unobserved or none left).
func (m *machine) budgetFill(b model.BudgetID) map[string]int64 {
	st := m.budgetObs(b)
	if st == nil {
		return nil
	}
	for _, d := range slices.Sorted(maps.Keys(st.Limits)) {
		if h := st.Limits[d].Hard; h > 0 && st.Usage[d] < h {
			return map[string]int64{d: h - st.Usage[d]}
		}
	}
	return nil
}

// actQuotaScenario creates a policy (or finds it) and admits a few
// executions to one of its buckets (some twice), releases some and
// sometimes reconciles its partition.
func (m *machine) actQuotaScenario(t *rapid.T) {
	i := drawIndex(t, len(quotaIDs), "quota")
	m.quotaCreate(t, i)
	if len(m.execs) == 0 {
		return
	}
	b := model.QuotaBucket{ID: quotaIDs[i], Key: drawFrom(t, quotaKeys, "key")}
	for n := rapid.IntRange(2, 5).Draw(t, "admits"); n > 0; n-- {
		id := drawFrom(t, m.execs, "exec").id
		if chance(t, 40, "release") {
			m.quotaRelease(t, id, b, drawFrom(t, append([]string{""}, admitTokens...), "release_token"))
			continue
		}
		_, _ = m.quotaAdmit(t, id, b, drawToken(t)) // checked inside
	}
	if chance(t, 40, "reconcile") {
		m.observeQuiet(t)
		m.actQuotaReconcile(t)
	}
}

package storetest

import (
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets, quotas and admission (model.AdmissionStore): the groups skip
// on a store without it. The admission fixture holds a budget at its hard
// limit and due for its reset, with a ledger; a quota with an admission
// held by a running execution; an outbox entry and a budget-blocked
// execution, so that a valid call of each base would write (or, for the
// reads, would answer); the comparison covers their reads too.
var admissionValidation = []struct {
	name  string
	cases func(f *fixture) []badInput
}{
	{"BudgetCreate", (*fixture).budgetCreateCases},
	{"BudgetReport", (*fixture).budgetReportCases},
	{"BudgetRelease", (*fixture).budgetReleaseCases},
	{"BudgetReset", (*fixture).budgetResetCases},
	{"BudgetResetDue", (*fixture).budgetResetDueCases},
	{"BudgetReconcile", (*fixture).budgetReconcileCases},
	{"BudgetStatus", (*fixture).budgetStatusCases},
	{"QuotaCreate", (*fixture).quotaCreateCases},
	{"QuotaAdmit", (*fixture).quotaAdmitCases},
	{"QuotaRelease", (*fixture).quotaReleaseCases},
	{"QuotaStatus", (*fixture).quotaStatusCases},
	{"QuotaReconcile", (*fixture).quotaReconcileCases},
	{"AdmissionBlocked", (*fixture).admissionBlockedCases},
	{"AdmissionUnblock", (*fixture).admissionUnblockCases},
	{"QuotaReleasePending", (*fixture).releasePendingCases},
	{"QuotaReleaseAck", (*fixture).releaseAckCases},
}

// admissionFieldValidation covers the admission fields of the required
// operations (ExecutionCreate, the claims, IndexScanDue, RouteUnblock);
// it runs on every store.
var admissionFieldValidation = []struct {
	name  string
	cases func(f *fixture) []badInput
}{
	{"AdmissionFields", (*fixture).admissionFieldCases},
}

func skipWithoutAdmission(h *harness) {
	h.t.Helper()
	if _, ok := admissionStoreOf(h); !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.AdmissionStore", h.s)
	}
}

// admFixture is the admission part of a fixture.
type admFixture struct {
	as         model.AdmissionStore
	budget     model.BudgetID
	budgetPart int
	ledger     model.ExecutionID
	quota      model.QuotaID
	quotaPart  int
	running    model.ExecutionID // holds token "tok-f" of quota/"k"
	hold       model.QuotaHold   // the outbox entry of a completed one
}

// withAdmission adds the admission fixture to f.
func (f *fixture) withAdmission() {
	f.t.Helper()
	as, _ := admissionStoreOf(f.harness)
	ah := &admissionHarness{harness: f.harness, as: as}
	a := &admFixture{as: as}
	a.budget = ah.newBudget(&model.BudgetCreateParams{Limits: limits{"tokens": {Hard: 10}, "calls": {}}, ResetInterval: time.Second, Now: at(0)})
	a.budgetPart = f.cfg.BudgetPartition(a.budget)
	a.ledger = f.newID(f.p0)
	ah.report(&model.BudgetReportParams{ID: a.budget, Deltas: map[string]int64{"tokens": 10}, Execution: a.ledger, Now: at(0)})
	a.quota = ah.newQuota(&model.QuotaCreateParams{Rate: 10, Window: 100 * time.Millisecond, Concurrency: 5, Now: at(0)})
	a.quotaPart = f.cfg.QuotaPartition(a.quota)
	a.running, _ = ah.running(a.quota, "tok-f", at(0))
	ah.admit(a.quota, "k", a.running, "tok-f", 0, at(0))
	done, cr := ah.running(a.quota, "tok-d", at(0))
	ah.complete(done, cr.Fence(), at(0))
	a.hold = hold(done, a.quota, "tok-d", at(0))
	ah.blockedOn(a.budget, laneA, 0)
	f.adm = a
}

// validationView is what a validation case must leave as it was.
type validationView struct {
	World worldView
	Adm   *admView
}

func (f *fixture) validationView(h *harness) validationView {
	h.t.Helper()
	v := validationView{World: h.world(f.now, nsA)}
	if f.adm != nil {
		ah := &admissionHarness{harness: h, as: f.adm.as}
		av := ah.admissionView(f.now, []model.BudgetID{f.adm.budget}, []model.QuotaBucket{{ID: f.adm.quota, Key: "k"}})
		v.Adm = &av
	}
	return v
}

func budgetIDCases[P any](mk caseMaker[P], set func(*P, model.BudgetID)) []badInput {
	return []badInput{mk("id_empty", "ID", model.ErrInvalidInput, func(p *P) { set(p, model.BudgetID{}) })}
}

func quotaIDCases[P any](mk caseMaker[P], set func(*P, model.QuotaID)) []badInput {
	return []badInput{mk("id_empty", "ID", model.ErrInvalidInput, func(p *P) { set(p, model.QuotaID{}) })}
}

// execRefCases are the bad execution references of an optional or
// required execution field (the error names field + ".ID").
func execRefCases[P any](mk caseMaker[P], field string, required bool, out model.ExecutionID, set func(*P, model.ExecutionID)) []badInput {
	cs := []badInput{mk(strings.ToLower(field)+"_partition_out_of_range", field+".ID", model.ErrInvalidInput, func(p *P) { set(p, out) })}
	if required {
		cs = append(cs, mk(strings.ToLower(field)+"_zero", field+".ID", model.ErrInvalidInput, func(p *P) { set(p, model.ExecutionID{}) }))
	}
	return cs
}

// dimensionCases are the bad dimension names of a map field.
func dimensionCases[P any](mk caseMaker[P], field string, set func(*P, string)) []badInput {
	var cs []badInput
	for _, d := range []string{"", "a b", "a:b", "{b:1}", "tökens", strings.Repeat("d", 65)} {
		cs = append(cs, mk(strings.ToLower(field)+"_dimension_"+strconv.Quote(d), field, model.ErrInvalidInput, func(p *P) { set(p, d) }))
	}
	return cs
}

// keyCases are the bad quota keys of field.
func keyCases[P any](mk caseMaker[P], field string, set func(*P, string)) []badInput {
	return []badInput{
		mk(field+"_too_long", field, model.ErrInvalidInput, func(p *P) { set(p, strings.Repeat("k", model.MaxQuotaKeyBytes+1)) }),
		mk(field+"_invalid_utf8", field, model.ErrInvalidInput, func(p *P) { set(p, invalidUTF8) }),
		mk(field+"_control", field, model.ErrInvalidInput, func(p *P) { set(p, "a\x01") }),
		mk(field+"_del", field, model.ErrInvalidInput, func(p *P) { set(p, "a\x7f") }),
	}
}

// tokenCases are the bad admission tokens of field ("" is valid).
func tokenCases[P any](mk caseMaker[P], field string, set func(*P, string)) []badInput {
	return []badInput{
		mk(field+"_too_long", field, model.ErrInvalidInput, func(p *P) { set(p, strings.Repeat("t", model.MaxAdmissionTokenBytes+1)) }),
		mk(field+"_space", field, model.ErrInvalidInput, func(p *P) { set(p, "a b") }),
		mk(field+"_colon", field, model.ErrInvalidInput, func(p *P) { set(p, "a:b") }),
		mk(field+"_non_ascii", field, model.ErrInvalidInput, func(p *P) { set(p, "tök") }),
	}
}

// filterCases are the bad scanner filters of field.
func filterCases[P any](mk caseMaker[P], field string, set func(*P, model.ScannerFilter)) []badInput {
	return []badInput{
		mk("filter_namespace_upper", field+".Namespace", model.ErrInvalidInput, func(p *P) { set(p, model.ScannerFilter{Namespace: "Tenant"}) }),
		mk("filter_namespace_colon", field+".Namespace", model.ErrInvalidInput, func(p *P) { set(p, model.ScannerFilter{Namespace: "a:b"}) }),
		mk("filter_value_without_key", field+".TagValue", model.ErrInvalidInput, func(p *P) { set(p, model.ScannerFilter{TagValue: "x"}) }),
		mk("filter_tag_key_bad", field+".Tags", model.ErrInvalidTagKey, func(p *P) { set(p, model.ScannerFilter{TagKey: "nodot", TagValue: "x"}) }),
		mk("filter_tag_value_too_long", field+".Tags", model.ErrInvalidInput, func(p *P) {
			set(p, model.ScannerFilter{TagKey: "app.t", TagValue: strings.Repeat("v", model.MaxTagValueBytes+1)})
		}),
	}
}

// named is mk with prefix before each case's name (the field as is).
func named[P any](mk caseMaker[P], prefix string) caseMaker[P] {
	return func(name, field string, code *model.Error, mut func(*P)) badInput {
		return mk(prefix+name, field, code, mut)
	}
}

func manyDims(n int) map[string]int64 {
	m := map[string]int64{}
	for i := range n {
		m["d"+strconv.Itoa(i)] = 1
	}
	return m
}

func (f *fixture) budgetCreateCases() []badInput {
	type P = model.BudgetCreateParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.budgetID(), Limits: limits{"tokens": {Hard: 10, Soft: 5}}, ResetInterval: time.Hour, OnHardBreach: model.BreachCancelFlow, Now: f.now}
	}, f.adm.as.BudgetCreate)
	cs := budgetIDCases(mk, func(p *P, b model.BudgetID) { p.ID = b })
	many := limits{}
	for d := range manyDims(model.MaxBudgetDimensions + 1) {
		many[d] = model.BudgetLimit{Hard: 1}
	}
	cs = append(cs,
		mk("limits_none", "Limits", model.ErrInvalidInput, func(p *P) { p.Limits = nil }),
		mk("limits_too_many", "Limits", model.ErrInvalidInput, func(p *P) { p.Limits = many }),
		mk("hard_negative", "Limits[tokens].Hard", model.ErrInvalidInput, func(p *P) { p.Limits["tokens"] = model.BudgetLimit{Hard: -1} }),
		mk("hard_too_large", "Limits[tokens].Hard", model.ErrInvalidInput, func(p *P) { p.Limits["tokens"] = model.BudgetLimit{Hard: model.MaxBudgetAmount + 1} }),
		mk("soft_negative", "Limits[tokens].Soft", model.ErrInvalidInput, func(p *P) { p.Limits["tokens"] = model.BudgetLimit{Soft: -1} }),
		mk("soft_too_large", "Limits[tokens].Soft", model.ErrInvalidInput, func(p *P) { p.Limits["tokens"] = model.BudgetLimit{Soft: model.MaxBudgetAmount + 1} }),
		mk("reset_interval_below_1s", "ResetInterval", model.ErrInvalidInput, func(p *P) { p.ResetInterval = 999 * time.Millisecond }),
		mk("reset_interval_negative", "ResetInterval", model.ErrInvalidInput, func(p *P) { p.ResetInterval = -time.Second }),
		mk("reset_interval_too_long", "ResetInterval", model.ErrInvalidInput, func(p *P) { p.ResetInterval = model.MaxBudgetResetInterval + time.Second }),
		mk("on_hard_breach_unknown", "OnHardBreach", model.ErrInvalidInput, func(p *P) { p.OnHardBreach = "cancel_everything" }),
	)
	cs = append(cs, dimensionCases(mk, "Limits", func(p *P, d string) { p.Limits[d] = model.BudgetLimit{Hard: 1} })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetReportCases() []badInput {
	type P = model.BudgetReportParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.adm.budget, Deltas: map[string]int64{"calls": 1}, DedupKey: "dedup-1", Execution: f.adm.ledger, Now: f.now}
	}, f.adm.as.BudgetReport)
	cs := budgetIDCases(mk, func(p *P, b model.BudgetID) { p.ID = b })
	cs = append(cs,
		mk("deltas_none", "Deltas", model.ErrInvalidInput, func(p *P) { p.Deltas = nil }),
		mk("deltas_too_many", "Deltas", model.ErrInvalidInput, func(p *P) { p.Deltas = manyDims(model.MaxBudgetDimensions + 1) }),
		mk("delta_zero", "Deltas[calls]", model.ErrInvalidInput, func(p *P) { p.Deltas["calls"] = 0 }),
		mk("delta_negative", "Deltas[calls]", model.ErrInvalidInput, func(p *P) { p.Deltas["calls"] = -5 }),
		mk("delta_too_large", "Deltas[calls]", model.ErrInvalidInput, func(p *P) { p.Deltas["calls"] = model.MaxBudgetAmount + 1 }),
		mk("dedup_key_too_long", "DedupKey", model.ErrInvalidInput, func(p *P) { p.DedupKey = strings.Repeat("k", model.MaxIdempotencyKeyBytes+1) }),
		mk("dedup_key_invalid_utf8", "DedupKey", model.ErrInvalidInput, func(p *P) { p.DedupKey = invalidUTF8 }),
		mk("dedup_key_control", "DedupKey", model.ErrInvalidInput, func(p *P) { p.DedupKey = "k\n" }),
	)
	cs = append(cs, dimensionCases(mk, "Deltas", func(p *P, d string) { p.Deltas[d] = 1 })...)
	cs = append(cs, execRefCases(mk, "Execution", false, f.out, func(p *P, x model.ExecutionID) { p.Execution = x })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetReleaseCases() []badInput {
	type P = model.BudgetReleaseParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.adm.budget, Execution: f.adm.ledger, Now: f.now} }, f.adm.as.BudgetRelease)
	cs := budgetIDCases(mk, func(p *P, b model.BudgetID) { p.ID = b })
	cs = append(cs, execRefCases(mk, "Execution", true, f.out, func(p *P, x model.ExecutionID) { p.Execution = x })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetResetCases() []badInput {
	type P = model.BudgetResetParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.adm.budget, Now: f.now} }, f.adm.as.BudgetReset)
	cs := budgetIDCases(mk, func(p *P, b model.BudgetID) { p.ID = b })
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetResetDueCases() []badInput {
	type P = model.BudgetResetDueParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.adm.budgetPart, Limit: 10, Now: f.now} }, f.adm.as.BudgetResetDue)
	cs := partitionCases(mk, f.cfg.BudgetPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetReconcileCases() []badInput {
	type P = model.BudgetReconcileParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.adm.budgetPart, Limit: 10, Now: f.now} }, f.adm.as.BudgetReconcile)
	cs := partitionCases(mk, f.cfg.BudgetPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) budgetStatusCases() []badInput {
	type P = model.BudgetStatusParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.adm.budget, Execution: f.adm.ledger, Now: f.now} }, f.adm.as.BudgetStatus)
	cs := budgetIDCases(mk, func(p *P, b model.BudgetID) { p.ID = b })
	cs = append(cs, execRefCases(mk, "Execution", false, f.out, func(p *P, x model.ExecutionID) { p.Execution = x })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) quotaCreateCases() []badInput {
	type P = model.QuotaCreateParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.quotaID(), Rate: 5, Window: time.Second, Jitter: 100 * time.Millisecond, Concurrency: 2, Now: f.now}
	}, f.adm.as.QuotaCreate)
	cs := quotaIDCases(mk, func(p *P, q model.QuotaID) { p.ID = q })
	cs = append(cs,
		mk("rate_negative", "Rate", model.ErrInvalidInput, func(p *P) { p.Rate = -1 }),
		mk("rate_too_large", "Rate", model.ErrInvalidInput, func(p *P) { p.Rate = model.MaxQuotaRate + 1 }),
		mk("concurrency_negative", "Concurrency", model.ErrInvalidInput, func(p *P) { p.Concurrency = -1 }),
		mk("concurrency_too_large", "Concurrency", model.ErrInvalidInput, func(p *P) { p.Concurrency = model.MaxQuotaRate + 1 }),
		mk("no_limit", "Rate", model.ErrInvalidInput, func(p *P) { p.Rate, p.Window, p.Jitter, p.Concurrency = 0, 0, 0, 0 }),
		mk("window_without_rate", "Window", model.ErrInvalidInput, func(p *P) { p.Rate, p.Jitter = 0, 0 }),
		mk("jitter_without_rate", "Jitter", model.ErrInvalidInput, func(p *P) { p.Rate, p.Window = 0, 0 }),
		mk("window_zero", "Window", model.ErrInvalidInput, func(p *P) { p.Window = 0 }),
		mk("window_below_1ms", "Window", model.ErrInvalidInput, func(p *P) { p.Window = time.Microsecond }),
		mk("window_too_long", "Window", model.ErrInvalidInput, func(p *P) { p.Window = model.MaxQuotaWindow + time.Millisecond }),
		mk("jitter_negative", "Jitter", model.ErrInvalidInput, func(p *P) { p.Jitter = -time.Millisecond }),
		mk("jitter_above_window", "Jitter", model.ErrInvalidInput, func(p *P) { p.Jitter = time.Second + time.Millisecond }),
	)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) quotaAdmitCases() []badInput {
	type P = model.QuotaAdmitParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.adm.quota, Key: "k", Execution: f.newID(f.p0), Token: "tok-n", Jitter: time.Millisecond, Now: f.now}
	}, f.adm.as.QuotaAdmit)
	cs := quotaIDCases(mk, func(p *P, q model.QuotaID) { p.ID = q })
	cs = append(cs, keyCases(mk, "Key", func(p *P, k string) { p.Key = k })...)
	cs = append(cs, execRefCases(mk, "Execution", true, f.out, func(p *P, x model.ExecutionID) { p.Execution = x })...)
	cs = append(cs, tokenCases(mk, "Token", func(p *P, s string) { p.Token = s })...)
	cs = append(cs,
		mk("token_empty", "Token", model.ErrInvalidInput, func(p *P) { p.Token = "" }),
		mk("jitter_negative", "Jitter", model.ErrInvalidInput, func(p *P) { p.Jitter = -time.Millisecond }),
		mk("jitter_too_long", "Jitter", model.ErrInvalidInput, func(p *P) { p.Jitter = model.MaxQuotaWindow + time.Millisecond }),
	)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) quotaReleaseCases() []badInput {
	type P = model.QuotaReleaseParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.adm.quota, Key: "k", Execution: f.adm.running, Token: "tok-f", Now: f.now}
	}, f.adm.as.QuotaRelease)
	cs := quotaIDCases(mk, func(p *P, q model.QuotaID) { p.ID = q })
	cs = append(cs, keyCases(mk, "Key", func(p *P, k string) { p.Key = k })...)
	cs = append(cs, execRefCases(mk, "Execution", true, f.out, func(p *P, x model.ExecutionID) { p.Execution = x })...)
	cs = append(cs, tokenCases(mk, "Token", func(p *P, s string) { p.Token = s })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) quotaStatusCases() []badInput {
	type P = model.QuotaStatusParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.adm.quota, Key: "k", Now: f.now} }, f.adm.as.QuotaStatus)
	cs := quotaIDCases(mk, func(p *P, q model.QuotaID) { p.ID = q })
	cs = append(cs, keyCases(mk, "Key", func(p *P, k string) { p.Key = k })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) quotaReconcileCases() []badInput {
	type P = model.QuotaReconcileParams
	mk := maker(f.ctx, func() *P {
		return &P{Partition: f.adm.quotaPart, StaleBefore: f.now, Limit: 10, Now: f.now}
	}, f.adm.as.QuotaReconcile)
	cs := partitionCases(mk, f.cfg.QuotaPartitions, func(p *P, n int) { p.Partition = n })
	cs = append(cs, timeCases(mk, "StaleBefore", false, func(p *P, t time.Time) { p.StaleBefore = t })...)
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) admissionBlockedCases() []badInput {
	type P = model.AdmissionBlockedParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Limit: 10} }, f.adm.as.AdmissionBlocked)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

func (f *fixture) admissionUnblockCases() []badInput {
	type P = model.AdmissionUnblockParams
	mk := maker(f.ctx, func() *P {
		return &P{Partition: f.p0, Budgets: []model.BudgetID{f.adm.budget},
			Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: f.adm.quota, Key: "k"}, Max: 1}}, Limit: 10, Now: f.now}
	}, f.adm.as.AdmissionUnblock)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	many := make([]model.BudgetID, model.MaxPageSize)
	for i := range many {
		many[i] = model.BudgetID(f.uuid())
	}
	cs = append(cs,
		mk("too_many_groups", "Budgets", model.ErrInvalidInput, func(p *P) { p.Budgets = many }),
		mk("budget_empty", "Budgets[1]", model.ErrInvalidInput, func(p *P) { p.Budgets = append(p.Budgets, model.BudgetID{}) }),
		mk("quota_empty", "Quotas[0].ID", model.ErrInvalidInput, func(p *P) { p.Quotas[0].ID = model.QuotaID{} }),
		mk("quota_max_negative", "Quotas[0].Max", model.ErrInvalidInput, func(p *P) { p.Quotas[0].Max = -1 }),
	)
	cs = append(cs, keyCases(mk, "Quotas[0].Key", func(p *P, k string) { p.Quotas[0].Key = k })...)
	cs = append(cs, filterCases(mk, "Filter", func(p *P, fl model.ScannerFilter) { p.Filter = fl })...)
	cs = append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
	return append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
}

func (f *fixture) releasePendingCases() []badInput {
	type P = model.QuotaReleasePendingParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Limit: 10} }, f.adm.as.QuotaReleasePending)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	return append(cs, limitCases(mk, "Limit", func(p *P, n int) { p.Limit = n })...)
}

func (f *fixture) releaseAckCases() []badInput {
	type P = model.QuotaReleaseAckParams
	mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Items: []model.QuotaHold{f.adm.hold}} }, f.adm.as.QuotaReleaseAck)
	cs := partitionCases(mk, f.cfg.FlowPartitions, func(p *P, n int) { p.Partition = n })
	many := make([]model.QuotaHold, model.MaxPageSize+1)
	for i := range many {
		many[i] = f.adm.hold
	}
	cs = append(cs,
		mk("items_none", "Items", model.ErrInvalidInput, func(p *P) { p.Items = nil }),
		mk("items_too_many", "Items", model.ErrInvalidInput, func(p *P) { p.Items = many }),
		mk("item_execution_zero", "Items[0].Execution.ID", model.ErrInvalidInput, func(p *P) { p.Items[0].Execution = model.ExecutionID{} }),
		mk("item_execution_out_of_range", "Items[0].Execution.ID", model.ErrInvalidInput, func(p *P) { p.Items[0].Execution = f.out }),
	)
	if f.p1 != f.p0 {
		cs = append(cs, mk("item_other_partition", "Items[0].Execution", model.ErrInvalidInput, func(p *P) {
			p.Items[0].Execution = model.NewExecutionID(f.p1, f.uuid())
		}))
	}
	return append(cs, tokenCases(mk, "Items[0].Token", func(p *P, s string) { p.Items[0].Token = s })...)
}

// admissionFieldCases are the bad admission fields of the required
// operations.
func (f *fixture) admissionFieldCases() []badInput {
	var cs []badInput
	{
		type P = model.ExecutionCreateParams
		mk := maker(f.ctx, func() *P {
			return &P{ID: model.NewExecutionID(f.p0, f.uuid()), Namespace: nsA, Lane: laneA, Kind: kindA, Now: f.now}
		}, f.s.ExecutionCreate)
		b := model.BudgetID(f.uuid())
		many := make([]model.BudgetID, model.MaxExecutionBudgets+1)
		for i := range many {
			many[i] = model.BudgetID(f.uuid())
		}
		cs = append(cs,
			mk("create_budgets_too_many", "Budgets", model.ErrInvalidInput, func(p *P) { p.Budgets = many }),
			mk("create_budget_empty", "Budgets[1]", model.ErrInvalidInput, func(p *P) { p.Budgets = []model.BudgetID{b, {}} }),
			mk("create_budget_duplicate", "Budgets[1]", model.ErrInvalidInput, func(p *P) { p.Budgets = []model.BudgetID{b, b} }),
			mk("create_quota_key_without_quota", "QuotaKey", model.ErrInvalidInput, func(p *P) { p.QuotaKey = "k" }),
		)
		cs = append(cs, keyCases(named(mk, "create_"), "QuotaKey", func(p *P, k string) { p.Quota, p.QuotaKey = heldQuota, k })...)
	}
	{
		type P = model.ExecutionBlockParams
		mk := maker(f.ctx, func() *P {
			return &P{ID: f.eligible, Reason: model.WaitingForBudget, Budget: heldBudget, Now: f.now}
		}, f.s.ExecutionBlock)
		if has[model.Blocker](f.harness) {
			cs = append(cs,
				mk("block_budget_empty", "Budget", model.ErrInvalidInput, func(p *P) { p.Budget = model.BudgetID{} }),
				mk("block_budget_with_operator_reason", "Budget", model.ErrInvalidInput, func(p *P) { p.Reason = model.PausedByOperator }),
				mk("block_budget_with_quota_reason", "Budget", model.ErrInvalidInput, func(p *P) { p.Reason = model.WaitingForQuota }),
			)
		}
	}
	{
		type P = model.ExecutionClaimParams
		mk := maker(f.ctx, func() *P { return &P{ID: f.granted, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now} }, f.s.ExecutionClaim)
		cs = append(cs, tokenCases(named(mk, "claim_"), "AdmissionToken", func(p *P, s string) { p.AdmissionToken = s })...)
	}
	{
		type P = model.ExecutionGrantAndClaimParams
		mk := maker(f.ctx, func() *P { return &P{ID: f.eligible, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now} }, f.s.ExecutionGrantAndClaim)
		cs = append(cs, tokenCases(named(mk, "grant_and_claim_"), "AdmissionToken", func(p *P, s string) { p.AdmissionToken = s })...)
	}
	{
		type P = model.ExecutionClaimNextParams
		mk := maker(f.ctx, func() *P {
			return &P{Partition: f.p0, Lane: laneA, ScanLimit: 10, LeaseRequest: f.leaseReq(wA, leaseTTL), Now: f.now}
		}, f.s.ExecutionClaimNext)
		cs = append(cs,
			mk("claim_next_grant_ttl_negative", "AdmissionGrantTTL", model.ErrInvalidInput, func(p *P) { p.AdmissionGrantTTL = -time.Millisecond }),
			mk("claim_next_grant_ttl_too_long", "AdmissionGrantTTL", model.ErrInvalidInput, func(p *P) { p.AdmissionGrantTTL = model.MaxGrantTTL + time.Millisecond }),
		)
	}
	{
		type P = model.ExecutionCompleteParams
		mk := maker(f.ctx, func() *P {
			return &P{ID: f.active, Fence: f.fence, Now: f.now,
				Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, LeaseRequest: f.leaseReq(wA, leaseTTL)}}
		}, f.s.ExecutionComplete)
		cs = append(cs,
			mk("complete_next_grant_ttl_negative", "Next.AdmissionGrantTTL", model.ErrInvalidInput, func(p *P) { p.Next.AdmissionGrantTTL = -time.Millisecond }),
			mk("complete_next_grant_ttl_too_long", "Next.AdmissionGrantTTL", model.ErrInvalidInput, func(p *P) { p.Next.AdmissionGrantTTL = model.MaxGrantTTL + time.Millisecond }),
		)
	}
	{
		type P = model.IndexScanDueParams
		mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Index: model.IndexDelayed, Limit: 10, Now: f.now} }, f.s.IndexScanDue)
		cs = append(cs, filterCases(named(mk, "scan_"), "Filter", func(p *P, fl model.ScannerFilter) { p.Filter = fl })...)
	}
	{
		type P = model.RouteUnblockParams
		mk := maker(f.ctx, func() *P { return &P{Partition: f.p0, Namespace: nsA, Limit: 10, Now: f.now} }, f.s.RouteUnblock)
		cs = append(cs, filterCases(named(mk, "route_"), "Filter", func(p *P, fl model.ScannerFilter) { p.Filter = fl })...)
		cs = append(cs, mk("route_filter_other_namespace", "Filter.Namespace", model.ErrInvalidInput, func(p *P) { p.Filter = model.ScannerFilter{Namespace: nsB} }))
	}
	return cs
}

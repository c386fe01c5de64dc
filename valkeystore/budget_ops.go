package valkeystore

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets (model.AdmissionStore): one script per operation on the budget's
// partition {b:M} (lua/budget_*.lua, lua/lib/budget.lua). Amounts are at
// most model.MaxBudgetAmount, so a sum of two is exact in a Lua number.

// budgetDef is the definition BudgetCreate compares: the interval (ms),
// the action and each dimension's limits, in name order.
func budgetDef(p *model.BudgetCreateParams) (def, limits string) {
	var b strings.Builder
	for i, d := range slices.Sorted(maps.Keys(p.Limits)) {
		if i > 0 {
			b.WriteByte(',')
		}
		l := p.Limits[d]
		b.WriteString(d + "=" + strconv.FormatInt(l.Hard, 10) + "/" + strconv.FormatInt(l.Soft, 10))
	}
	limits = b.String()
	return strconv.FormatInt(p.ResetInterval.Milliseconds(), 10) + "|" + string(p.OnHardBreach) + "|" + limits, limits
}

// BudgetCreate implements model.AdmissionStore.
func (s *Store) BudgetCreate(ctx context.Context, p *model.BudgetCreateParams) (*model.BudgetCreateResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	def, limits := budgetDef(p)
	r, err := s.run(ctx, scriptBudgetCreate, s.keys.budgetKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "def": def, "limits": limits, "interval": p.ResetInterval,
		"action": string(p.OnHardBreach),
	})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetCreateResult{Created: r.bool("created")}
	return res, r.err()
}

// BudgetReport implements model.AdmissionStore.
func (s *Store) BudgetReport(ctx context.Context, p *model.BudgetReportParams) (*model.BudgetReportResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	dims := slices.Sorted(maps.Keys(p.Deltas))
	deltas := make([]string, len(dims))
	for i, d := range dims {
		deltas[i] = strconv.FormatInt(p.Deltas[d], 10)
	}
	r, err := s.run(ctx, scriptBudgetReport, s.keys.budgetKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "dims": strings.Join(dims, ","), "deltas": strings.Join(deltas, ","),
		"dedup_key": p.DedupKey, "execution": p.Execution, "dedup_ttl": model.BudgetDedupTTL, "gc_slack": s.gcSlack,
	})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetReportResult{
		Outcome:      outcomeNamed[model.BudgetReportOutcome](r, "outcome"),
		Dimension:    r.str("dimension"),
		Usage:        r.i64("usage"),
		Limit:        r.i64("limit"),
		OnHardBreach: model.BudgetBreachAction(r.str("action")),
	}
	return res, r.err()
}

// outcomeNamed reads an outcome by its String name (the model's outcome
// types without a parser).
func outcomeNamed[T interface {
	~int
	String() string
}](r *reply, name string) T {
	s := r.str(name)
	if r.err() != nil {
		return 0
	}
	for v := T(1); v.String() != "unknown"; v++ {
		if v.String() == s {
			return v
		}
	}
	r.fail("field %q: unknown value %q", name, s)
	return 0
}

// BudgetRelease implements model.AdmissionStore.
func (s *Store) BudgetRelease(ctx context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptBudgetRelease, s.keys.budgetKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "execution": p.Execution, "forget": p.Forget,
	})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetReleaseResult{Released: r.bool("released")}
	if res.Released {
		res.Returned = amounts(r, r.rows("returned", 2), "")
	}
	return res, r.err()
}

// amounts reads (name, decimal amount) rows whose name starts with
// prefix (the prefix dropped) into a map (never nil).
func amounts(r *reply, rows [][]string, prefix string) map[string]int64 {
	m := make(map[string]int64, len(rows))
	for _, row := range rows {
		name, ok := strings.CutPrefix(row[0], prefix)
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(row[1], 10, 64)
		if err != nil {
			r.fail("amount %q: %q", row[0], row[1])
			return m
		}
		m[name] = v
	}
	return m
}

// BudgetReset implements model.AdmissionStore.
func (s *Store) BudgetReset(ctx context.Context, p *model.BudgetResetParams) (*model.BudgetResetResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptBudgetReset, s.keys.budgetKeys(s.cfg, p.ID), args{"now": p.Now, "id": p.ID})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetResetResult{ResetCount: r.int("reset_count"), NextResetAt: r.time("next_reset")}
	return res, r.err()
}

// BudgetResetDue implements model.AdmissionStore.
func (s *Store) BudgetResetDue(ctx context.Context, p *model.BudgetResetDueParams) (*model.BudgetResetDueResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptBudgetResetDue, s.keys.budgetPartKeys(p.Partition), args{"now": p.Now, "limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetResetDueResult{Reset: budgetIDs(r, "reset"), More: r.bool("more"), NextDueAt: r.time("next_due")}
	return res, r.err()
}

// budgetIDs reads a list of budget ids (empty: nil).
func budgetIDs(r *reply, name string) []model.BudgetID {
	var out []model.BudgetID
	for _, s := range r.strs(name) {
		u, err := model.ParseUUID(s)
		if err != nil {
			r.fail("field %q: malformed id %q", name, s)
			return nil
		}
		out = append(out, model.BudgetID(u))
	}
	return out
}

// BudgetReconcile implements model.AdmissionStore.
func (s *Store) BudgetReconcile(ctx context.Context, p *model.BudgetReconcileParams) (*model.BudgetReconcileResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptBudgetReconcile, s.keys.budgetPartKeys(p.Partition), args{
		"now": p.Now, "after": p.After.String(), "limit": p.Limit,
	})
	if err != nil {
		return nil, err
	}
	res := &model.BudgetReconcileResult{
		Checked:  r.int("checked"),
		Breached: budgetIDs(r, "breached"),
		Cleared:  budgetIDs(r, "cleared"),
		Dropped:  budgetIDs(r, "dropped"),
		Last:     model.BudgetID(r.uuid("last")),
		More:     r.bool("more"),
	}
	return res, r.err()
}

// BudgetStatus implements model.AdmissionStore. The script returns the
// budget's hash (lua/lib/budget.lua); the status is read from it here.
func (s *Store) BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptBudgetStatus, s.keys.budgetKeys(s.cfg, p.ID), args{"now": p.Now, "execution": p.Execution})
	if err != nil {
		return nil, err
	}
	rows := r.rows("fields", 2)
	f := make(map[string]string, len(rows))
	for _, row := range rows {
		f[row[0]] = row[1]
	}
	num := func(name string) int64 {
		v, err := strconv.ParseInt(f[name], 10, 64)
		if err != nil {
			r.fail("budget field %q: %q", name, f[name])
		}
		return v
	}
	st := &model.BudgetStatus{
		ID:            p.ID,
		Limits:        make(map[string]model.BudgetLimit),
		OnHardBreach:  model.BudgetBreachAction(f["action"]),
		Usage:         amounts(r, rows, "u:"),
		ResetInterval: time.Duration(num("interval")) * time.Millisecond,
		NextResetAt:   model.FromMillis(num("next_reset")),
		ResetCount:    int(num("reset_count")),
		HardBreaches:  int(num("hard_breaches")),
		SoftBreaches:  int(num("soft_breaches")),
		BreachedAt:    model.FromMillis(num("breached_at")),
		CreatedAt:     model.FromMillis(num("created_at")),
	}
	hard, soft := amounts(r, rows, "h:"), amounts(r, rows, "s:")
	for _, d := range splitCSV(f["dims"]) {
		st.Limits[d] = model.BudgetLimit{Hard: hard[d], Soft: soft[d]}
	}
	for _, d := range splitCSV(f["dims"]) { // in name order
		if h := hard[d]; h > 0 && st.Usage[d] >= h {
			st.Exhausted = d
			break
		}
	}
	if spend := amounts(r, r.rows("spend", 2), ""); len(spend) > 0 {
		st.Spend = spend
	}
	return st, r.err()
}

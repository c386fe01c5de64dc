package httpapi

import (
	"net/http"
	"strconv"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Budget and quota routes (engine.md §5): create and read budgets, report
// usage as an operator, reset; create and read quota policies. Attaching
// them to executions is part of the submit options (budgets, quota,
// quota_key).

type budgetRequest struct {
	ID           string                            `json:"id"`
	Limits       map[string]flowfabric.BudgetLimit `json:"limits"`
	ResetEvery   string                            `json:"reset_every"`
	OnHardBreach string                            `json:"on_hard_breach"`
}

type createdView struct {
	ID      string `json:"id"`
	Created bool   `json:"created"`
}

func (a *api) createBudget(w http.ResponseWriter, r *http.Request) error {
	var req budgetRequest
	if err := decodeBody(w, r, a.maxControl, &req, true); err != nil {
		return err
	}
	var spec flowfabric.BudgetSpec
	var err error
	if req.ID != "" {
		if spec.ID, err = parseBudgetID("id", req.ID); err != nil {
			return err
		}
	}
	if spec.ResetEvery, err = parseDuration("reset_every", req.ResetEvery); err != nil {
		return err
	}
	spec.Limits, spec.OnHardBreach = req.Limits, flowfabric.BudgetBreachAction(req.OnHardBreach)
	id, created, err := a.e.CreateBudget(r.Context(), spec)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, createdView{ID: id.String(), Created: created})
	return nil
}

type budgetView struct {
	ID           string                            `json:"id"`
	Limits       map[string]flowfabric.BudgetLimit `json:"limits"`
	OnHardBreach string                            `json:"on_hard_breach,omitempty"`
	Usage        map[string]int64                  `json:"usage"`
	ResetEveryMs int64                             `json:"reset_every_ms,omitempty"`
	NextResetAt  jsonTime                          `json:"next_reset_at"`
	ResetCount   int                               `json:"reset_count"`
	HardBreaches int                               `json:"hard_breaches"`
	SoftBreaches int                               `json:"soft_breaches"`
	BreachedAt   jsonTime                          `json:"breached_at"`
	CreatedAt    jsonTime                          `json:"created_at"`
	Exhausted    string                            `json:"exhausted,omitempty"`
}

func viewBudget(s *flowfabric.BudgetStatus) budgetView {
	return budgetView{
		ID: s.ID.String(), Limits: s.Limits, OnHardBreach: string(s.OnHardBreach), Usage: s.Usage,
		ResetEveryMs: s.ResetInterval.Milliseconds(), NextResetAt: jsonTime(s.NextResetAt), ResetCount: s.ResetCount,
		HardBreaches: s.HardBreaches, SoftBreaches: s.SoftBreaches, BreachedAt: jsonTime(s.BreachedAt),
	}
}

func (a *api) budget(w http.ResponseWriter, r *http.Request) error {
	id, err := parseBudgetID("id", r.PathValue("id"))
	if err != nil {
		return err
	}
	s, err := a.e.BudgetStatus(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewBudget(s))
	return nil
}

func (a *api) resetBudget(w http.ResponseWriter, r *http.Request) error {
	id, err := parseBudgetID("id", r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := a.e.ResetBudget(r.Context(), id); err != nil {
		return err
	}
	return a.budget(w, r)
}

type usageRequest struct {
	Deltas   map[string]int64 `json:"deltas"`
	DedupKey string           `json:"dedup_key"`
}

type usageView struct {
	Outcome   string `json:"outcome"`
	Dimension string `json:"dimension,omitempty"`
	Usage     int64  `json:"usage,omitempty"`
	Limit     int64  `json:"limit,omitempty"`
}

// reportUsage reports usage as an operator. A hard breach is 409
// (budget_exceeded) and applies nothing.
func (a *api) reportUsage(w http.ResponseWriter, r *http.Request) error {
	id, err := parseBudgetID("id", r.PathValue("id"))
	if err != nil {
		return err
	}
	var req usageRequest
	if err := decodeBody(w, r, a.maxControl, &req, true); err != nil {
		return err
	}
	rep, err := a.e.ReportUsage(r.Context(), id, req.Deltas, &flowfabric.UsageOpts{DedupKey: req.DedupKey})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, usageView{Outcome: rep.Outcome.String(), Dimension: rep.Dimension, Usage: rep.Usage, Limit: rep.Limit})
	return nil
}

type quotaRequest struct {
	ID          string `json:"id"`
	Rate        int    `json:"rate"`
	Window      string `json:"window"`
	Jitter      string `json:"jitter"`
	Concurrency int    `json:"concurrency"`
}

func (a *api) createQuota(w http.ResponseWriter, r *http.Request) error {
	var req quotaRequest
	if err := decodeBody(w, r, a.maxControl, &req, true); err != nil {
		return err
	}
	spec := flowfabric.QuotaSpec{Rate: req.Rate, Concurrency: req.Concurrency}
	var err error
	if req.ID != "" {
		if spec.ID, err = parseQuotaID("id", req.ID); err != nil {
			return err
		}
	}
	if spec.Window, err = parseDuration("window", req.Window); err != nil {
		return err
	}
	if spec.Jitter, err = parseDuration("jitter", req.Jitter); err != nil {
		return err
	}
	id, created, err := a.e.CreateQuota(r.Context(), spec)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, createdView{ID: id.String(), Created: created})
	return nil
}

type quotaView struct {
	ID           string   `json:"id"`
	Key          string   `json:"key"`
	Rate         int      `json:"rate,omitempty"`
	WindowMs     int64    `json:"window_ms,omitempty"`
	JitterMs     int64    `json:"jitter_ms,omitempty"`
	Concurrency  int      `json:"concurrency,omitempty"`
	CreatedAt    jsonTime `json:"created_at"`
	InWindow     int      `json:"in_window"`
	Active       int      `json:"active"`
	Free         int      `json:"free"`
	RetryAfterMs int64    `json:"retry_after_ms"`
}

// quota reads one bucket: GET /v1/quotas/{id}?key=acme.
func (a *api) quota(w http.ResponseWriter, r *http.Request) error {
	id, err := parseQuotaID("id", r.PathValue("id"))
	if err != nil {
		return err
	}
	s, err := a.e.QuotaStatus(r.Context(), id, r.URL.Query().Get("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, quotaView{
		ID: s.ID.String(), Key: s.Key, Rate: s.Rate, WindowMs: s.Window.Milliseconds(), JitterMs: s.Jitter.Milliseconds(),
		Concurrency: s.Concurrency, CreatedAt: jsonTime(s.CreatedAt), InWindow: s.InWindow, Active: s.Active,
		Free: s.Free, RetryAfterMs: s.RetryAfter.Milliseconds(),
	})
	return nil
}

func parseBudgetID(field, s string) (flowfabric.BudgetID, error) {
	id, err := model.ParseBudgetID(s)
	if err != nil {
		return id, &model.Error{Code: model.CodeInvalidInput, Field: field, Detail: "malformed budget id",
			Got: strconv.Quote(s), Want: "a UUID"}
	}
	return id, nil
}

func parseQuotaID(field, s string) (flowfabric.QuotaID, error) {
	id, err := model.ParseQuotaID(s)
	if err != nil {
		return id, &model.Error{Code: model.CodeInvalidInput, Field: field, Detail: "malformed quota id",
			Got: strconv.Quote(s), Want: "a UUID"}
	}
	return id, nil
}

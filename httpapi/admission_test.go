package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/model"
)

type created struct {
	ID      string `json:"id"`
	Created bool   `json:"created"`
}

type budgetRead struct {
	ID           string                            `json:"id"`
	Limits       map[string]flowfabric.BudgetLimit `json:"limits"`
	Usage        map[string]int64                  `json:"usage"`
	HardBreaches int                               `json:"hard_breaches"`
	ResetCount   int                               `json:"reset_count"`
	Exhausted    string                            `json:"exhausted"`
}

type usageRead struct {
	Outcome   string `json:"outcome"`
	Dimension string `json:"dimension"`
	Usage     int64  `json:"usage"`
}

type quotaRead struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	Concurrency int    `json:"concurrency"`
	Active      int    `json:"active"`
	Free        int    `json:"free"`
}

// TestBudgetsAndQuotasOverHTTP creates a budget and a quota, reports
// usage up to a hard breach (409, nothing applied), resets, submits an
// execution attached to both and reads the quota bucket it ran in.
func TestBudgetsAndQuotasOverHTTP(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	c := newClient(t, h.Engine, &httpapi.Options{Token: "t"})
	b := ok[created](c, http.StatusCreated, "POST", "/v1/budgets", `{"limits":{"tokens":{"hard":100,"soft":50}},"reset_every":"24h"}`)
	if !b.Created || b.ID == "" {
		t.Fatalf("create budget: %+v", b)
	}
	again := ok[created](c, http.StatusOK, "POST", "/v1/budgets", `{"id":"`+b.ID+`","limits":{"tokens":{"hard":100,"soft":50}},"reset_every":"24h"}`)
	if again.Created {
		t.Fatal("a repeated create created again")
	}
	if rec := c.do("POST", "/v1/budgets", `{"id":"`+b.ID+`","limits":{"tokens":{"hard":1}}}`); rec.Code != http.StatusConflict {
		t.Fatalf("redefinition: %d %s", rec.Code, rec.Body)
	}
	u := ok[usageRead](c, http.StatusOK, "POST", "/v1/budgets/"+b.ID+"/usage", `{"deltas":{"tokens":60},"dedup_key":"r1"}`)
	if u.Outcome != "soft_breach" || u.Usage != 60 {
		t.Fatalf("report: %+v", u)
	}
	if u := ok[usageRead](c, http.StatusOK, "POST", "/v1/budgets/"+b.ID+"/usage", `{"deltas":{"tokens":60},"dedup_key":"r1"}`); u.Outcome != "already_applied" {
		t.Fatalf("dedup: %+v", u)
	}
	if rec := c.do("POST", "/v1/budgets/"+b.ID+"/usage", `{"deltas":{"tokens":41}}`); rec.Code != http.StatusConflict {
		t.Fatalf("hard breach: %d %s", rec.Code, rec.Body)
	}
	st := ok[budgetRead](c, http.StatusOK, "GET", "/v1/budgets/"+b.ID, "")
	if st.Usage["tokens"] != 60 || st.HardBreaches != 1 || st.Limits["tokens"].Hard != 100 {
		t.Fatalf("status: %+v", st)
	}
	if st := ok[budgetRead](c, http.StatusOK, "POST", "/v1/budgets/"+b.ID+"/reset", ""); st.Usage["tokens"] != 0 || st.ResetCount != 1 {
		t.Fatalf("reset: %+v", st)
	}
	if rec := c.do("GET", "/v1/budgets/not-a-uuid", ""); rec.Code != http.StatusBadRequest {
		t.Fatalf("bad id: %d", rec.Code)
	}
	if rec := c.do("GET", "/v1/budgets/00000000-0000-4000-8000-000000000001", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown budget: %d", rec.Code)
	}

	q := ok[created](c, http.StatusCreated, "POST", "/v1/quotas", `{"rate":10,"window":"1m","concurrency":2}`)
	if rec := c.do("POST", "/v1/quotas", `{"rate":10}`); rec.Code != http.StatusBadRequest {
		t.Fatalf("a rate without a window: %d %s", rec.Code, rec.Body)
	}
	w := h.NewWorker(nil)
	if err := w.HandleRaw("ping", func(_ context.Context, _ *flowfabric.TaskInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h.StartWorker(w)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions",
		`{"kind":"ping","budgets":["`+b.ID+`"],"quota":"`+q.ID+`","quota_key":"acme"}`)
	id, err := model.ParseExecutionID(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap := h.WaitTerminal(id); snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("execution: %s", snap.PublicState)
	}
	qs := ok[quotaRead](c, http.StatusOK, "GET", "/v1/quotas/"+q.ID+"?key=acme", "")
	if qs.Key != "acme" || qs.Concurrency != 2 || qs.Free > 2 {
		t.Fatalf("quota: %+v", qs)
	}
	if rec := c.do("POST", "/v1/executions", `{"kind":"ping","budgets":["nope"]}`); rec.Code != http.StatusBadRequest {
		t.Fatalf("bad budget id: %d", rec.Code)
	}
}

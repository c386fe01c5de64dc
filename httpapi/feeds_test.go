package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

type feedPage struct {
	Events []struct {
		Seq       uint64 `json:"seq"`
		Execution string `json:"execution"`
		Outcome   string `json:"outcome"`
		Kind      string `json:"kind"`
	} `json:"events"`
	Cursor string `json:"cursor"`
	Behind []struct {
		Partition int    `json:"partition"`
		After     uint64 `json:"after"`
	} `json:"behind"`
}

// The completions feed over HTTP: events after the cursor and the next
// cursor; a read at the head is empty and keeps the cursor; a feed the
// store does not keep is 404; bad queries are 400.
func TestFeedsOverHTTP(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Feeds: model.Feeds{Completions: true}})
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[talker]) error { return nil }))
	h.StartWorker(w)
	c := newClient(t, h.Engine, nil)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"talker","payload":{}}`)
	id, err := model.ParseExecutionID(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(id)
	p := ok[feedPage](c, http.StatusOK, "GET", "/v1/feeds/completions?kind=talker", "")
	if len(p.Events) != 1 || p.Events[0].Execution != s.ID || p.Events[0].Outcome != "success" || p.Cursor == "" {
		t.Fatalf("page: %+v", p)
	}
	q := ok[feedPage](c, http.StatusOK, "GET", "/v1/feeds/completions?cursor="+url.QueryEscape(p.Cursor), "")
	if len(q.Events) != 0 || q.Cursor != p.Cursor {
		t.Fatalf("at the head: %+v", q)
	}
	if f := ok[feedPage](c, http.StatusOK, "GET", "/v1/feeds/completions?kind=other", ""); len(f.Events) != 0 || f.Cursor != p.Cursor {
		t.Fatalf("filtered out, the cursor still moves: %+v", f)
	}
	c.fails(http.StatusNotFound, "feed_disabled", "GET", "/v1/feeds/leases", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/feeds/nope", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/feeds/completions?cursor=zz", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/feeds/completions?limit=1001", "")
}

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/model"
)

type flowCreated struct {
	ID         string   `json:"id"`
	Executions []string `json:"executions"`
	Duplicate  bool     `json:"duplicate"`
}

type flowDescribed struct {
	ID           string         `json:"id"`
	State        string         `json:"state"`
	Sealed       bool           `json:"sealed"`
	MemberCount  int            `json:"member_count"`
	EdgeCount    int            `json:"edge_count"`
	Counts       map[string]int `json:"counts"`
	CancelPolicy string         `json:"cancel_policy"`
	CancelReason string         `json:"cancel_reason"`
	CancelledAt  string         `json:"cancelled_at"`
	CreatedAt    string         `json:"created_at"`
	Tags         map[string]string
}

// TestFlowRunsToCompletion submits a flow over HTTP and runs it with a
// worker: a binary result passes from one node to the next, and an
// AnyOf node runs on the first result.
func TestFlowRunsToCompletion(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	if err := h.Engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, h.Engine, &httpapi.Options{Token: "t"})
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"flows"}})
	echo := func(_ context.Context, info *flowfabric.TaskInfo) error { return info.SetResult(info.Payload) }
	reverse := func(_ context.Context, info *flowfabric.TaskInfo) error {
		out := slices.Clone(info.Payload)
		slices.Reverse(out)
		return info.SetResult(out)
	}
	for kind, f := range map[flowfabric.Kind]func(context.Context, *flowfabric.TaskInfo) error{
		"fetch": echo, "join": reverse, "race": echo,
	} {
		if err := w.HandleRaw(kind, f); err != nil {
			t.Fatal(err)
		}
	}
	h.StartWorker(w)

	blob := []byte{0, 1, 2, 0xfe, 0xff, 0xc3, 0x28, '"', '\\', 0}
	body := `{"idempotency_key":"build-1","tags":{"team.owner":"build"},"nodes":[
		{"kind":"fetch","lane":"flows","payload_base64":"` + base64.StdEncoding.EncodeToString(blob) + `"},
		{"kind":"fetch","lane":"flows","payload":{"mirror":"us"},"priority":5},
		{"kind":"join","lane":"flows","after_result":0,"after":[1]},
		{"kind":"race","lane":"flows","after_result":[1,0],"group":{"kind":"any_of","siblings":"let_run"}}
	]}`
	f := ok[flowCreated](c, http.StatusCreated, "POST", "/v1/flows", body)
	if len(f.Executions) != 4 || f.ID == "" {
		t.Fatalf("submit flow: %+v", f)
	}
	// The same key and graph: the same flow, 200 and a duplicate.
	if again := ok[flowCreated](c, http.StatusOK, "POST", "/v1/flows", body); again.ID != f.ID || !slices.Equal(again.Executions, f.Executions) ||
		!again.Duplicate || f.Duplicate {
		t.Fatalf("repeated flow: %+v, want %+v as a duplicate", again, f)
	}
	for _, id := range f.Executions {
		if s := h.WaitTerminal(model.MustParseExecutionID(id)); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("node %s: %s", id, s.PublicState)
		}
	}
	d := ok[flowDescribed](c, http.StatusOK, "GET", "/v1/flows/"+f.ID, "")
	if d.ID != f.ID || d.State != "completed" || !d.Sealed || d.MemberCount != 4 || d.EdgeCount != 4 ||
		d.Counts["completed"] != 4 || len(d.Counts) != 1 || d.CancelPolicy != "" || !msTime.MatchString(d.CreatedAt) ||
		d.Tags["team.owner"] != "build" {
		t.Fatalf("describe flow: %+v", d)
	}
	x := ok[execution](c, http.StatusOK, "GET", ep(f.Executions[2]), "")
	if x.FlowID != f.ID || x.Kind != "join" {
		t.Fatalf("node 2: %+v", x)
	}
	want := slices.Clone(blob)
	slices.Reverse(want)
	if rec := c.do("GET", ep(f.Executions[2], "/result"), ""); rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("join result: %d %q, want %q", rec.Code, rec.Body.Bytes(), want)
	}
	if rec := c.do("GET", ep(f.Executions[2], "/payload"), ""); !bytes.Equal(rec.Body.Bytes(), blob) {
		t.Fatalf("join payload (node 0's result): %q, want %q", rec.Body.Bytes(), blob)
	}
	// race ran on whichever fetch ended first: its result is one of them.
	rec := c.do("GET", ep(f.Executions[3], "/result"), "")
	if !bytes.Equal(rec.Body.Bytes(), blob) && rec.Body.String() != `{"mirror":"us"}` {
		t.Fatalf("race result: %q", rec.Body)
	}
	// Completed: cancelling it is a conflict.
	c.fails(http.StatusConflict, "flow_already_terminal", "POST", "/v1/flows/"+f.ID+"/cancel", `{"policy":"cancel_all"}`)
	// The key with another graph.
	c.fails(http.StatusConflict, "idempotency_key_conflict", "POST", "/v1/flows",
		`{"idempotency_key":"build-1","nodes":[{"kind":"other","lane":"flows"}]}`)
	// Finished: a member goes only with its flow, and the flow goes whole.
	c.fails(http.StatusConflict, "execution_in_flow", "DELETE", ep(f.Executions[0]), "")
	c.fails(http.StatusBadRequest, "bad_request", "DELETE", "/v1/flows/"+f.ID, `{"id":"`+model.FlowID(model.UUID{7}).String()+`"}`)
	if del := ok[map[string]any](c, http.StatusOK, "DELETE", "/v1/flows/"+f.ID, `{"id":"`+f.ID+`"}`); del["id"] != f.ID {
		t.Fatalf("delete flow: %+v", del)
	}
	c.fails(http.StatusNotFound, "flow_not_found", "GET", "/v1/flows/"+f.ID, "")
	c.fails(http.StatusNotFound, "flow_not_found", "DELETE", "/v1/flows/"+f.ID, "")
	for _, id := range f.Executions {
		c.fails(http.StatusNotFound, "execution_not_found", "GET", ep(id), "")
	}
}

func TestFlowErrors(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	for _, l := range []flowfabric.LaneID{"flows", "idle"} {
		if err := h.Engine.RegisterLane(l, flowfabric.LaneConfig{Spread: true}); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, h.Engine, &httpapi.Options{MaxBodyBytes: 1024, MaxControlBodyBytes: 128})
	for _, tc := range []struct {
		status     int
		kind, body string
	}{
		{400, "bad_request", ``},
		{400, "bad_request", `{"nodes":[{"kind":"a","lane":"flows"}],"extra":1}`},
		{400, "bad_request", `{"nodes":[{"kind":"a","lane":"flows","idempotency_key":"k"}]}`},
		{400, "bad_request", `{"nodes":[{"kind":"a","lane":"flows","group":{"kind":"any_of","siblings":"let_run","x":1}}]}`},
		{400, "invalid_input", `{}`},
		{400, "invalid_input", `{"nodes":[]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a"}]}`}, // the default lane is not spread
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","after":[1]}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","after":[-1]}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","after_result":"x"}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","after":[0]}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"after_result":0}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"group":{"kind":"most_of"}}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"group":{"kind":"any_of"}}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"group":{"kind":"any_of","siblings":"maybe"}}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"group":{"kind":"quorum","siblings":"let_run"}}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0],"group":{"siblings":"let_run"}}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","payload":1,"payload_base64":"AA=="}]}`},
		{400, "invalid_input", `{"nodes":[{"kind":"a","lane":"flows","delay":"soon"}]}`},
		{400, "invalid_tag_key", `{"tags":{"x":"y"},"nodes":[{"kind":"a","lane":"flows"}]}`},
		{409, "cycle_detected", `{"nodes":[{"kind":"a","lane":"flows","after":[1]},{"kind":"b","lane":"flows","after":[0]}]}`},
		{413, "body_too_large", `{"nodes":[{"kind":"a","lane":"flows","payload":"` + strings.Repeat("x", 2000) + `"}]}`},
	} {
		c.fails(tc.status, tc.kind, "POST", "/v1/flows", tc.body)
	}
	if n := len(h.Executions()); n != 0 {
		t.Fatalf("%d executions stored by refused flows", n)
	}

	// Cancel: nothing runs on lane idle, so both nodes are pending.
	f := ok[flowCreated](c, http.StatusCreated, "POST", "/v1/flows",
		`{"nodes":[{"kind":"a","lane":"idle"},{"kind":"b","lane":"idle","after":[0]}]}`)
	other := ok[flowCreated](c, http.StatusCreated, "POST", "/v1/flows", `{"nodes":[{"kind":"a","lane":"idle"}]}`)
	cancel := "/v1/flows/" + f.ID + "/cancel"
	for _, body := range []string{`{"id":"` + other.ID + `","policy":"cancel_all"}`, `{"id":"nope","policy":"cancel_all"}`,
		`{"policy":"cancel_all","why":"typo"}`, ``} {
		c.fails(http.StatusBadRequest, "bad_request", "POST", cancel, body)
	}
	for _, body := range []string{`{}`, `{"policy":"everything"}`} {
		c.fails(http.StatusBadRequest, "invalid_input", "POST", cancel, body)
	}
	c.fails(http.StatusRequestEntityTooLarge, "body_too_large", "POST", cancel, `{"policy":"cancel_all","reason":"`+strings.Repeat("x", 200)+`"}`)
	c.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/flows/nope/cancel", `{"policy":"cancel_all"}`)
	got := ok[struct {
		ID        string   `json:"id"`
		Cancelled []string `json:"cancelled"`
	}](c, http.StatusOK, "POST", cancel, `{"id":"`+f.ID+`","policy":"cancel_all","reason":"stop"}`)
	slices.Sort(got.Cancelled)
	want := slices.Sorted(slices.Values(f.Executions))
	if got.ID != f.ID || !slices.Equal(got.Cancelled, want) {
		t.Fatalf("cancel flow: %+v, want %v", got, want)
	}
	d := ok[flowDescribed](c, http.StatusOK, "GET", "/v1/flows/"+f.ID, "")
	if d.State != "cancelled" || d.CancelPolicy != "cancel_all" || d.CancelReason != "stop" || d.Counts["cancelled"] != 2 ||
		!msTime.MatchString(d.CancelledAt) {
		t.Fatalf("cancelled flow: %+v", d)
	}
	c.fails(http.StatusConflict, "flow_already_terminal", "POST", cancel, `{"policy":"cancel_all"}`)
	// flow_only leaves the nodes be.
	ok[map[string]any](c, http.StatusOK, "POST", "/v1/flows/"+other.ID+"/cancel", `{"policy":"flow_only"}`)
	if x := ok[execution](c, http.StatusOK, "GET", ep(other.Executions[0]), ""); x.State != "waiting" {
		t.Fatalf("flow_only cancelled its node: %s", x.State)
	}
}

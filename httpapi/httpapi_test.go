package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// client sends requests straight to the handler, on the test goroutine
// (so a harness's simulated time stands still while it runs).
type client struct {
	t     *testing.T
	h     http.Handler
	token string
}

func newClient(t *testing.T, e *flowfabric.Engine, opts *httpapi.Options) *client {
	c := &client{t: t, h: httpapi.New(e, opts)}
	if opts != nil {
		c.token = opts.Token
	}
	return c
}

func (c *client) do(method, path, body string) *httptest.ResponseRecorder {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec
}

// ok sends a request that must answer status, and decodes its JSON body.
func ok[T any](c *client, status int, method, path, body string) T {
	c.t.Helper()
	rec := c.do(method, path, body)
	if rec.Code != status {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		c.t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	var v T
	dec := json.NewDecoder(rec.Body)
	if err := dec.Decode(&v); err != nil {
		c.t.Fatalf("%s %s: decode %T: %v", method, path, v, err)
	}
	return v
}

type errorBody struct {
	Error     string `json:"error"`
	Kind      string `json:"kind"`
	Retryable bool   `json:"retryable"`
}

// fails sends a request that must fail with status and kind.
func (c *client) fails(status int, kind, method, path, body string) errorBody {
	c.t.Helper()
	rec := c.do(method, path, body)
	if rec.Code != status {
		c.t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, rec.Code, status, rec.Body)
	}
	var e errorBody
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		c.t.Fatalf("%s %s: error body: %v", method, path, err)
	}
	if e.Kind != kind || e.Error == "" {
		c.t.Fatalf("%s %s %s: error %+v, want kind %q", method, path, body, e, kind)
	}
	return e
}

func ep(id string, suffix ...string) string {
	return "/v1/executions/" + url.PathEscape(id) + strings.Join(suffix, "")
}

type submitted struct {
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
	State     string `json:"state"`
}

type execution struct {
	ID          string            `json:"id"`
	Namespace   string            `json:"namespace"`
	Lane        string            `json:"lane"`
	Kind        string            `json:"kind"`
	Priority    int               `json:"priority"`
	FlowID      string            `json:"flow_id"`
	State       string            `json:"state"`
	StateVector map[string]string `json:"state_vector"`
	Tags        map[string]string `json:"tags"`
	Metadata    map[string]string `json:"metadata"`
	Caps        []string          `json:"required_capabilities"`
	RetryPolicy struct {
		MaxRetries int    `json:"max_retries"`
		Backoff    string `json:"backoff"`
	} `json:"retry_policy"`
	AttemptTimeout     string         `json:"attempt_timeout"`
	Deadline           string         `json:"deadline"`
	Attempts           int            `json:"attempts"`
	CurrentAttempt     map[string]any `json:"current_attempt"`
	Lease              map[string]any `json:"lease"`
	LeaseEpoch         uint64         `json:"lease_epoch"`
	CancellationReason string         `json:"cancellation_reason"`
	CancelledBy        string         `json:"cancelled_by"`
	FailureReason      string         `json:"failure_reason"`
	RevokeReason       string         `json:"revoke_reason"`
	ReplayCount        int            `json:"replay_count"`
	CreatedAt          string         `json:"created_at"`
	DelayUntil         string         `json:"delay_until"`
	TerminalAt         string         `json:"terminal_at"`
}

var msTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestHealthzNeedsNoToken(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, &httpapi.Options{Token: "s3cret"})
	c.token = ""
	got := ok[map[string]bool](c, http.StatusOK, "GET", "/healthz", "")
	if !got["ok"] {
		t.Fatalf("healthz: %v", got)
	}
}

func TestAuth(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, &httpapi.Options{Token: "s3cret"})
	body := `{"kind":"k"}`
	ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", body)

	for _, header := range []string{"", "Bearer", "Bearer wrong", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer  "} {
		req := httptest.NewRequest("POST", "/v1/executions", strings.NewReader(body))
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"kind":"unauthorized"`) {
			t.Fatalf("Authorization %q: %d %s", header, rec.Code, rec.Body)
		}
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("Authorization %q: no WWW-Authenticate", header)
		}
	}
	// the scheme is case-insensitive
	req := httptest.NewRequest("GET", "/v1/executions", nil)
	req.Header.Set("Authorization", "bearer s3cret")
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("lower-case scheme: %d %s", rec.Code, rec.Body)
	}

	// Unknown routes are not revealed without the token.
	anon := &client{t: t, h: c.h}
	anon.fails(http.StatusUnauthorized, "unauthorized", "GET", "/v1/nothing", "")
	anon.fails(http.StatusUnauthorized, "unauthorized", "GET", "/v1/executions", "")
	c.fails(http.StatusNotFound, "not_found", "GET", "/v1/nothing", "")

	// Without a token, nothing is asked for.
	open := newClient(t, h.Engine, nil)
	ok[map[string]any](open, http.StatusOK, "GET", "/v1/executions", "")
}

func TestSubmitAndRead(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	body := `{"kind":"send_email","payload":{"to": "ada@example.com"},"lane":"mail","priority":42,
		"tags":{"team.owner":"growth"},"metadata":{"traceparent":"tp"},"delay":"90s","retry_policy":{"max_retries":3,"backoff":"fixed","delay_ms":500},
		"attempt_timeout":"1m","deadline":"2026-01-02T00:00:00Z","required_capabilities":["smtp"],
		"max_reclaims":5,"max_replays":2,"idempotency_key":"welcome:ada","idempotency_ttl":"1h"}`
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", body)
	if s.Duplicate || s.State != "delayed" || s.ID == "" {
		t.Fatalf("submit: %+v", s)
	}
	again := ok[submitted](c, http.StatusOK, "POST", "/v1/executions", body)
	if !again.Duplicate || again.ID != s.ID {
		t.Fatalf("repeated submit: %+v, want a duplicate of %s", again, s.ID)
	}

	x := ok[execution](c, http.StatusOK, "GET", ep(s.ID), "")
	if x.ID != s.ID || x.Kind != "send_email" || x.Lane != "mail" || x.Priority != 42 || x.State != "delayed" ||
		x.Namespace != "default" || x.Tags["team.owner"] != "growth" || len(x.Metadata) != 1 || x.Metadata["traceparent"] != "tp" || !slices.Equal(x.Caps, []string{"smtp"}) ||
		x.RetryPolicy.MaxRetries != 3 || x.RetryPolicy.Backoff != "fixed" || x.AttemptTimeout != "1m0s" ||
		x.Deadline != "2026-01-02T00:00:00.000Z" || x.Attempts != 0 || x.FlowID != "" || x.Lease != nil {
		t.Fatalf("describe: %+v", x)
	}
	if x.StateVector["lifecycle_phase"] != "runnable" || x.StateVector["eligibility_state"] != "not_eligible_until_time" ||
		x.StateVector["terminal_outcome"] != "none" {
		t.Fatalf("state vector: %v", x.StateVector)
	}
	if !msTime.MatchString(x.CreatedAt) || x.CreatedAt != "2026-01-01T00:00:00.000Z" || x.DelayUntil != "2026-01-01T00:01:30.000Z" {
		t.Fatalf("times: created %q, delay until %q", x.CreatedAt, x.DelayUntil)
	}
	if x.TerminalAt != "" {
		t.Fatalf("terminal_at of a delayed execution: %q", x.TerminalAt)
	}

	st := ok[map[string]string](c, http.StatusOK, "GET", ep(s.ID, "/state"), "")
	if st["state"] != "delayed" || st["id"] != s.ID {
		t.Fatalf("state: %v", st)
	}
	// The raw id (braces unescaped) routes too.
	if rec := c.do("GET", "/v1/executions/"+s.ID+"/state", ""); rec.Code != http.StatusOK {
		t.Fatalf("unescaped id: %d %s", rec.Code, rec.Body)
	}

	rec := c.do("GET", ep(s.ID, "/payload"), "")
	if rec.Code != http.StatusOK || rec.Body.String() != `{"to": "ada@example.com"}` ||
		rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("payload: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	c.fails(http.StatusNotFound, "result_not_found", "GET", ep(s.ID, "/result"), "")

	atts := ok[map[string][]any](c, http.StatusOK, "GET", ep(s.ID, "/attempts"), "")
	if a, present := atts["attempts"]; !present || len(a) != 0 {
		t.Fatalf("attempts: %v", atts)
	}
	hist := ok[map[string]any](c, http.StatusOK, "GET", ep(s.ID, "/lease-history"), "")
	if evs, _ := hist["events"].([]any); evs == nil || len(evs) != 0 {
		t.Fatalf("lease history: %v", hist)
	}

	// A payload as base64, an empty one, a null one.
	b := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k","payload_base64":"AP8="}`)
	if rec := c.do("GET", ep(b.ID, "/payload"), ""); rec.Body.String() != "\x00\xff" {
		t.Fatalf("base64 payload: %q", rec.Body)
	}
	for _, body := range []string{`{"kind":"k"}`, `{"kind":"k","payload":null}`} {
		e := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", body)
		if rec := c.do("GET", ep(e.ID, "/payload"), ""); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Fatalf("%s: payload %d %q", body, rec.Code, rec.Body)
		}
	}
	// run_at wins over delay; a past run_at runs now.
	past := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k","run_at":"2020-01-01T00:00:00Z","delay":"1h"}`)
	if past.State != "waiting" {
		t.Fatalf("past run_at: %+v", past)
	}
}

func TestList(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	var ids []string
	for range 3 {
		ids = append(ids, ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k"}`).ID)
	}
	part := model.MustParseExecutionID(ids[0]).Partition()
	type page struct {
		IDs        []string `json:"ids"`
		Next       string   `json:"next"`
		Partitions int      `json:"partitions"`
	}
	base := "/v1/executions?partition=" + itoa(part)
	all := ok[page](c, http.StatusOK, "GET", base, "")
	if !slices.Equal(all.IDs, ids) || all.Next != "" || all.Partitions != h.Engine.Partitions() {
		t.Fatalf("list: %+v, want %v", all, ids)
	}
	var got []string
	after := ""
	for {
		p := ok[page](c, http.StatusOK, "GET", base+"&limit=2&after="+url.QueryEscape(after), "")
		got = append(got, p.IDs...)
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("paged list: %v, want %v", got, ids)
	}
	if other := ok[page](c, http.StatusOK, "GET", "/v1/executions?partition="+itoa((part+1)%h.Engine.Partitions()), ""); len(other.IDs) != 0 {
		t.Fatalf("another partition: %+v", other)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "partition=-1", "partition=" + itoa(h.Engine.Partitions()),
		"after=nope", "partition=" + itoa((part+1)%h.Engine.Partitions()) + "&after=" + url.QueryEscape(ids[0])} {
		c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/executions?"+q, "")
	}
}

// TestSearch lists across partitions by lane, kind, state and tag, page
// by page with the cursor, and refuses bad queries naming the parameter.
func TestSearch(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	var mine []string
	for i, lane := range []string{"a", "b", "c"} {
		ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k","lane":"`+lane+`"}`)
		mine = append(mine, ok[submitted](c, http.StatusCreated, "POST", "/v1/executions",
			`{"kind":"other","lane":"`+lane+`","delay":"1h","tags":{"app.n":"`+itoa(i)+`"}}`).ID)
	}
	slices.SortFunc(mine, func(a, b string) int {
		x, y := model.MustParseExecutionID(a), model.MustParseExecutionID(b)
		if x.Partition() != y.Partition() {
			return x.Partition() - y.Partition()
		}
		return x.Compare(y)
	})
	type page struct {
		IDs      []string `json:"ids"`
		Next     string   `json:"next"`
		Examined int      `json:"examined"`
	}
	var got []string
	cursor := ""
	for range 100 {
		p := ok[page](c, http.StatusOK, "GET", "/v1/executions/search?kind=other&state=delayed,waiting&limit=1&cursor="+url.QueryEscape(cursor), "")
		got = append(got, p.IDs...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if !slices.Equal(got, mine) {
		t.Fatalf("search: %v, want %v", got, mine)
	}
	one := ok[page](c, http.StatusOK, "GET", "/v1/executions/search?tag=app.n=1&lane=b", "")
	if len(one.IDs) != 1 || one.Next != "" || one.Examined == 0 {
		t.Fatalf("search by tag and lane: %+v", one)
	}
	for q, field := range map[string]string{"state=gone": "state", "tag=nokey": "tag", "limit=0": "limit", "cursor=x": "Cursor",
		"lane=a%20b": "Lane", "max_examined=0": "max_examined"} {
		if e := c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/executions/search?"+q, ""); !strings.Contains(e.Error, field) {
			t.Errorf("%s: %q does not name %s", q, e.Error, field)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSubmitErrors(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, &httpapi.Options{MaxBodyBytes: 256})
	for _, tc := range []struct{ body, kind string }{
		{``, "bad_request"},
		{`{`, "bad_request"},
		{`[]`, "bad_request"},
		{`{"kind":"k","lanee":"x"}`, "bad_request"},
		{`{"kind":"k"} {"kind":"k"}`, "bad_request"},
		{`{"kind":"k","priority":"high"}`, "bad_request"},
		{`{"kind":"k","priority":1.5}`, "bad_request"},
		{`{"kind":""}`, "invalid_input"},
		{`{"kind":"k","payload":1,"payload_base64":"AA=="}`, "invalid_input"},
		{`{"kind":"k","payload_base64":"not base64!"}`, "invalid_input"},
		{`{"kind":"k","delay":"5 parsecs"}`, "invalid_input"},
		{`{"kind":"k","delay":"-1s"}`, "invalid_input"},
		{`{"kind":"k","run_at":"tomorrow"}`, "invalid_input"},
		{`{"kind":"k","deadline":"2026-13-01T00:00:00Z"}`, "invalid_input"},
		{`{"kind":"k","attempt_timeout":"-1s"}`, "invalid_input"},
		{`{"kind":"k","idempotency_ttl":"forever"}`, "invalid_input"},
		{`{"kind":"k","lane":"no spaces"}`, "invalid_input"},
		{`{"kind":"k","tags":{"nodot":"v"}}`, "invalid_tag_key"},
		{`{"kind":"k","metadata":{"no spaces":"v"}}`, "invalid_input"},
		{`{"kind":"k","required_capabilities":["a,b"]}`, "invalid_capabilities"},
		{`{"kind":"k","retry_policy":{"max_retries":-1}}`, "invalid_policy"},
		{`{"kind":"k","retry_policy":{"retries":1}}`, "invalid_policy"},
	} {
		status := http.StatusBadRequest
		e := c.fails(status, tc.kind, "POST", "/v1/executions", tc.body)
		if e.Retryable {
			t.Fatalf("%s: retryable", tc.body)
		}
	}
	big := `{"kind":"k","payload":"` + strings.Repeat("x", 300) + `"}`
	c.fails(http.StatusRequestEntityTooLarge, "body_too_large", "POST", "/v1/executions", big)
	c.fails(http.StatusMethodNotAllowed, "method_not_allowed", "DELETE", "/v1/executions", "")
	if rec := c.do("DELETE", "/v1/executions", ""); !strings.Contains(rec.Header().Get("Allow"), "POST") {
		t.Fatalf("405 without Allow: %v", rec.Header())
	}
	// Nothing was stored by any of them.
	if n := len(h.Executions()); n != 0 {
		t.Fatalf("%d executions stored by refused submissions", n)
	}
}

func TestNotFoundAndMalformedIDs(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k"}`)
	id := model.MustParseExecutionID(s.ID)
	u := id.UUID()
	u[15] ^= 1
	unknown := model.NewExecutionID(id.Partition(), u).String()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "", ""}, {"GET", "/state", ""}, {"GET", "/payload", ""}, {"GET", "/result", ""},
		{"GET", "/attempts", ""}, {"GET", "/lease-history", ""},
		{"POST", "/cancel", ""}, {"POST", "/replay", `{}`}, {"POST", "/revoke-lease", ""},
		{"POST", "/reclaim", ""}, {"PUT", "/priority", `{"priority":1}`}, {"POST", "/retry-now", ""},
		{"DELETE", "", ""},
	} {
		c.fails(http.StatusNotFound, "execution_not_found", r.method, ep(unknown, r.path), r.body)
		for _, bad := range []string{"nope", "{fp:1}:not-a-uuid", "{fp:99999}:" + u.String()} {
			c.fails(http.StatusBadRequest, "invalid_input", r.method, ep(bad, r.path), r.body)
		}
	}
	// A partition the store does not have.
	c.fails(http.StatusBadRequest, "invalid_input", "GET", ep(model.NewExecutionID(h.Engine.Partitions(), u).String()), "")
	c.fails(http.StatusNotFound, "flow_not_found", "GET", "/v1/flows/"+u.String(), "")
	c.fails(http.StatusNotFound, "flow_not_found", "POST", "/v1/flows/"+u.String()+"/cancel", `{"policy":"cancel_all"}`)
	c.fails(http.StatusNotFound, "flow_not_found", "DELETE", "/v1/flows/"+u.String(), "")
	c.fails(http.StatusBadRequest, "invalid_input", "DELETE", "/v1/flows/nope", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows/nope", "")
	c.fails(http.StatusNotFound, "not_found", "GET", "/v1/executions/"+url.PathEscape(s.ID)+"/nothing", "")
	c.fails(http.StatusNotFound, "not_found", "GET", "/nothing", "") // GET / redirects to the dashboard
}

func TestOperatorActions(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, &httpapi.Options{MaxControlBodyBytes: 128})
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k"}`)
	other := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k"}`)

	// Priority: clamped, path id = body id accepted.
	p := ok[map[string]any](c, http.StatusOK, "PUT", ep(s.ID, "/priority"), `{"id":"`+s.ID+`","priority":99999}`)
	if p["priority"] != float64(9000) || p["id"] != s.ID {
		t.Fatalf("priority: %v", p)
	}
	c.fails(http.StatusBadRequest, "invalid_input", "PUT", ep(s.ID, "/priority"), `{}`)
	c.fails(http.StatusBadRequest, "invalid_input", "PUT", ep(s.ID, "/priority"), ``)

	// Path id ≠ body id, unknown fields, fields of another action, size.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/cancel", `{"id":"` + other.ID + `","reason":"x"}`},
		{"POST", "/replay", `{"id":"` + other.ID + `"}`},
		{"POST", "/revoke-lease", `{"id":"` + other.ID + `"}`},
		{"POST", "/reclaim", `{"id":"` + other.ID + `"}`},
		{"PUT", "/priority", `{"id":"` + other.ID + `","priority":1}`},
		{"POST", "/cancel", `{"reasn":"typo"}`},
		{"POST", "/reclaim", `{"reason":"not taken"}`},
		{"POST", "/cancel", `{"priority":3}`},
		{"PUT", "/priority", `{"priority":1,"reason":"x"}`},
		{"POST", "/cancel", `{"reason":7}`},
	} {
		c.fails(http.StatusBadRequest, "bad_request", tc.method, ep(s.ID, tc.path), tc.body)
	}
	c.fails(http.StatusBadRequest, "invalid_input", "POST", ep(s.ID, "/cancel"), `{"id":"garbage"}`)
	c.fails(http.StatusRequestEntityTooLarge, "body_too_large", "POST", ep(s.ID, "/cancel"),
		`{"reason":"`+strings.Repeat("x", 200)+`"}`)
	c.fails(http.StatusMethodNotAllowed, "method_not_allowed", "GET", ep(s.ID, "/cancel"), "")

	// State conflicts: replay of a live execution, reclaim and revoke of
	// one nobody holds.
	c.fails(http.StatusConflict, "execution_not_terminal", "POST", ep(s.ID, "/replay"), "")
	c.fails(http.StatusConflict, "execution_not_reclaimable", "POST", ep(s.ID, "/reclaim"), "")
	c.fails(http.StatusConflict, "execution_not_terminal", "DELETE", ep(s.ID, ""), "")
	// Retry now: a waiting execution is not waiting for a time; a delayed
	// one becomes eligible at once.
	c.fails(http.StatusConflict, "execution_not_eligible", "POST", ep(s.ID, "/retry-now"), "")
	later := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k","delay":"1h"}`)
	ok[map[string]any](c, http.StatusOK, "POST", ep(later.ID, "/retry-now"), "")
	if st := ok[map[string]any](c, http.StatusOK, "GET", ep(later.ID, "/state"), ""); st["state"] != "waiting" {
		t.Fatalf("after retry-now: %v", st)
	}
	e := c.fails(http.StatusConflict, "execution_not_active", "POST", ep(s.ID, "/revoke-lease"), `{"reason":"x"}`)
	if e.Retryable {
		t.Fatalf("revoke without a lease: retryable")
	}

	// Cancel, then it is terminal: cancel again is fine, priority is a
	// conflict, replay runs it again.
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/cancel"), `{"id":"`+s.ID+`","reason":"operator said so"}`)
	x := ok[execution](c, http.StatusOK, "GET", ep(s.ID), "")
	if x.State != "cancelled" || x.CancellationReason != "operator said so" || x.TerminalAt == "" {
		t.Fatalf("after cancel: %+v", x)
	}
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/cancel"), "")
	c.fails(http.StatusConflict, "execution_not_eligible", "PUT", ep(s.ID, "/priority"), `{"priority":1}`)
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/replay"), `{"reason":"try again","requested_by":"ops"}`)
	x = ok[execution](c, http.StatusOK, "GET", ep(s.ID), "")
	if x.State != "waiting" || x.ReplayCount != 1 {
		t.Fatalf("after replay: %+v", x)
	}
	// Delete: a terminal execution goes at once and is then not found.
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/cancel"), "")
	ok[map[string]any](c, http.StatusOK, "DELETE", ep(s.ID), "")
	c.fails(http.StatusNotFound, "execution_not_found", "GET", ep(s.ID), "")
}

// TestRevokeAndReclaim drives the lease actions against a running
// handler: revoke takes its lease (its context ends), reclaim makes the
// execution eligible again as a new attempt, which completes.
func TestRevokeAndReclaim(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	started := make(chan int, 2)
	lost := make(chan error, 1)
	w := h.NewWorker(nil)
	if err := w.HandleRaw("hold", func(ctx context.Context, info *flowfabric.TaskInfo) error {
		started <- info.Attempt
		if info.Attempt == 0 {
			<-ctx.Done()
			lost <- context.Cause(ctx)
			return ctx.Err()
		}
		return info.SetResult([]byte("second time lucky"))
	}); err != nil {
		t.Fatal(err)
	}
	h.StartWorker(w)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"hold"}`)
	// The submit wakes the idle worker at once: no simulated time needs
	// to pass, so the test waits on the handler's own signal.
	if n := <-started; n != 0 {
		t.Fatalf("first attempt has index %d", n)
	}

	x := ok[execution](c, http.StatusOK, "GET", ep(s.ID), "")
	if x.State != "active" || x.Lease == nil || x.Lease["worker_instance_id"] == "" || x.CurrentAttempt == nil || x.Attempts != 1 {
		t.Fatalf("running: %+v", x)
	}
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/revoke-lease"), `{"reason":"stuck"}`)
	// The store tells the worker at once (lease notices).
	if err := <-lost; !errors.Is(err, flowfabric.ErrLeaseRevoked) {
		t.Fatalf("handler's cause: %v", err)
	}
	x = ok[execution](c, http.StatusOK, "GET", ep(s.ID), "")
	if x.StateVector["ownership_state"] != "lease_revoked" || x.RevokeReason != "stuck" {
		t.Fatalf("revoked: %+v", x)
	}
	r := ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/reclaim"), "")
	if r["requeued"] != true {
		t.Fatalf("reclaim: %v", r)
	}
	id := model.MustParseExecutionID(s.ID)
	if snap := h.WaitTerminal(id); snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("after reclaim: %s", snap.PublicState)
	}
	rec := c.do("GET", ep(s.ID, "/result"), "")
	if rec.Code != http.StatusOK || rec.Body.String() != "second time lucky" {
		t.Fatalf("result: %d %q", rec.Code, rec.Body)
	}
	atts := ok[struct {
		Attempts []struct {
			Index  int    `json:"index"`
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"attempts"`
	}](c, http.StatusOK, "GET", ep(s.ID, "/attempts"), "")
	if len(atts.Attempts) != 2 || atts.Attempts[1].Type != "reclaim" || atts.Attempts[1].Status != "ended_success" {
		t.Fatalf("attempts: %+v", atts)
	}
	type events struct {
		Events []struct {
			Seq  uint64 `json:"seq"`
			Kind string `json:"kind"`
			At   string `json:"at"`
		} `json:"events"`
		Next uint64 `json:"next"`
	}
	all := ok[events](c, http.StatusOK, "GET", ep(s.ID, "/lease-history"), "")
	var kinds []string
	for _, e := range all.Events {
		kinds = append(kinds, e.Kind)
		if !msTime.MatchString(e.At) {
			t.Fatalf("event time %q", e.At)
		}
	}
	if !slices.Contains(kinds, "revoked") || len(kinds) < 3 || all.Next != 0 {
		t.Fatalf("lease history: %v (next %d)", kinds, all.Next)
	}
	// Paged one at a time, the same events.
	var paged []string
	var after uint64
	for {
		p := ok[events](c, http.StatusOK, "GET", ep(s.ID, "/lease-history?limit=1&after="+itoa(int(after))), "")
		for _, e := range p.Events {
			paged = append(paged, e.Kind)
		}
		if p.Next == 0 {
			break
		}
		after = p.Next
	}
	if !slices.Equal(paged, kinds) {
		t.Fatalf("paged lease history %v, want %v", paged, kinds)
	}
	c.fails(http.StatusBadRequest, "invalid_input", "GET", ep(s.ID, "/lease-history?limit=0"), "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", ep(s.ID, "/lease-history?after=-1"), "")
	// Cancelling a completed execution is a conflict.
	c.fails(http.StatusConflict, "execution_not_active", "POST", ep(s.ID, "/cancel"), "")
}

// TestBinaryRoundTrip sends bytes that are not UTF-8 as a payload and
// reads them back, and the handler's result, byte for byte.
func TestBinaryRoundTrip(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	c := newClient(t, h.Engine, nil)
	w := h.NewWorker(nil)
	if err := w.HandleRaw("reverse", func(_ context.Context, info *flowfabric.TaskInfo) error {
		out := slices.Clone(info.Payload)
		slices.Reverse(out)
		return info.SetResult(out)
	}); err != nil {
		t.Fatal(err)
	}
	h.StartWorker(w)
	payload := make([]byte, 512)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions",
		`{"kind":"reverse","payload_base64":"`+base64.StdEncoding.EncodeToString(payload)+`"}`)
	h.WaitTerminal(model.MustParseExecutionID(s.ID))
	if rec := c.do("GET", ep(s.ID, "/payload"), ""); !bytes.Equal(rec.Body.Bytes(), payload) {
		t.Fatalf("payload came back as %d bytes, not the %d sent", rec.Body.Len(), len(payload))
	}
	want := slices.Clone(payload)
	slices.Reverse(want)
	rec := c.do("GET", ep(s.ID, "/result"), "")
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) ||
		rec.Header().Get("Content-Type") != "application/octet-stream" || rec.Header().Get("Content-Length") != "512" {
		t.Fatalf("result: %d %v, %d bytes", rec.Code, rec.Header(), rec.Body.Len())
	}
}

// downStore is a store that cannot be reached for describes.
type downStore struct{ *memstore.Store }

func (downStore) ExecutionDescribe(context.Context, *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error) {
	return nil, errors.New("dial tcp 10.0.0.5:6379: connect: connection refused")
}

func (downStore) ExecutionList(context.Context, *model.ExecutionListParams) (*model.ExecutionListResult, error) {
	return nil, errors.New("dial tcp 10.0.0.5:6379: connect: connection refused")
}

func TestStoreUnavailable(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true,
		WrapStore: func(s *memstore.Store) model.Store { return downStore{s} }})
	var logs bytes.Buffer
	c := newClient(t, h.Engine, &httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"k"}`)
	e := c.fails(http.StatusServiceUnavailable, "unavailable", "GET", ep(s.ID), "")
	if !e.Retryable || strings.Contains(e.Error, "10.0.0.5") {
		t.Fatalf("503: %+v (retryable, and without the store's detail)", e)
	}
	if !strings.Contains(logs.String(), "connection refused") || !strings.Contains(logs.String(), "status=503") {
		t.Fatalf("the store's error was not logged: %s", logs.String())
	}
	// /healthz asks the store, so it says the store is down too.
	c.fails(http.StatusServiceUnavailable, "unavailable", "GET", "/healthz", "")
}

// TestSubmitHookRefusal: a submission a submit hook refuses is 422
// submission_refused (the host's policy), not a server error, and a hook
// that refuses with a validation error keeps its 400.
func TestSubmitHookRefusal(t *testing.T) {
	errForbidden := errors.New("kind not allowed here")
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true, Engine: &flowfabric.Config{
		SubmitHooks: []flowfabric.SubmitHook{func(ctx context.Context, s *flowfabric.Submission) error {
			switch s.Kind {
			case "forbidden":
				return errForbidden
			case "malformed":
				return model.InvalidField("Kind", "malformed")
			}
			return nil
		}},
	}})
	c := newClient(t, h.Engine, nil)
	c.fails(http.StatusUnprocessableEntity, "submission_refused", "POST", "/v1/executions", `{"kind":"forbidden"}`)
	c.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/executions", `{"kind":"malformed"}`)
	ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"fine"}`)
	_, err := h.Engine.SubmitRaw(h.Ctx, "forbidden", nil, nil)
	if !errors.Is(err, flowfabric.ErrSubmissionRefused) || !errors.Is(err, errForbidden) {
		t.Fatalf("a refused submission: %v", err)
	}
}

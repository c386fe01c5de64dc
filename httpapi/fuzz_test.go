package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/memstore"
)

// fuzzDecoder feeds arbitrary bodies to one route: whatever the body, the
// answer is a success or a client error with a well-formed error body,
// never a panic or a 5xx.
func fuzzDecoder(f *testing.F, method, path string, seeds ...string) {
	engine := flowfabric.New(memstore.New(nil), nil)
	if err := engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(engine, &httpapi.Options{MaxBodyBytes: 4096})
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		if rec.Code < 300 {
			return
		}
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
		var e struct {
			Error     string `json:"error"`
			Kind      string `json:"kind"`
			Retryable *bool  `json:"retryable"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Kind == "" || e.Retryable == nil {
			t.Fatalf("%s: error body %s (%v)", body, rec.Body, err)
		}
	})
}

func FuzzSubmit(f *testing.F) {
	fuzzDecoder(f, "POST", "/v1/executions",
		`{"kind":"k","payload":{"a":[1,2]},"lane":"l","priority":3,"delay":"1s","tags":{"a.b":"c"}}`,
		`{"kind":"k","payload_base64":"AAE=","retry_policy":{"max_retries":2,"backoff":"fixed","delay_ms":5}}`,
		`{"kind":"k","run_at":"2026-01-01T00:00:00Z","deadline":"2026-01-02T00:00:00.5Z","required_capabilities":["gpu"]}`,
		`{"kind":"k","idempotency_key":"x","idempotency_ttl":"1h","attempt_timeout":"1m"}`,
		`{"kind":1}`, `null`, ``, `{"kind":"k"}{}`)
}

func FuzzSubmitFlow(f *testing.F) {
	fuzzDecoder(f, "POST", "/v1/flows",
		`{"nodes":[{"kind":"a","lane":"flows"},{"kind":"b","lane":"flows","after":[0]}]}`,
		`{"idempotency_key":"k","tags":{"a.b":"c"},"nodes":[{"kind":"a","lane":"flows","payload":1},`+
			`{"kind":"a","lane":"flows"},{"kind":"c","lane":"flows","after_result":[0,1],"group":{"kind":"quorum","quorum":1,"siblings":"cancel_remaining"}}]}`,
		`{"nodes":[{"kind":"a","lane":"flows","after":[1]},{"kind":"b","lane":"flows","after":[0]}]}`,
		`{"nodes":[{"kind":"a","lane":"flows","after_result":null}]}`)
}

func FuzzControl(f *testing.F) {
	engine := flowfabric.New(memstore.New(nil), nil)
	res, err := engine.SubmitRaw(f.Context(), "k", nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	id := res.ID.String()
	h := httpapi.New(engine, nil)
	for _, s := range []string{`{"reason":"x"}`, `{"id":"` + id + `","priority":5}`, `{"requested_by":"me"}`, ``, `{"id":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, r := range []struct{ method, action string }{
			{"POST", "/cancel"}, {"POST", "/replay"}, {"POST", "/revoke-lease"}, {"POST", "/reclaim"}, {"POST", "/retry-now"}, {"PUT", "/priority"}, {"DELETE", ""},
		} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(r.method, ep(id, r.action), strings.NewReader(body)))
			if rec.Code >= 500 || !strings.Contains(rec.Body.String(), "{") {
				t.Fatalf("%s %s: %d %s", r.action, body, rec.Code, rec.Body)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/flows/00000000-0000-4000-8000-000000000001/cancel", strings.NewReader(body)))
		if rec.Code >= 500 || rec.Code < 400 && rec.Code != http.StatusOK {
			t.Fatalf("flow cancel %s: %d %s", body, rec.Code, rec.Body)
		}
	})
}

// FuzzReadQueries feeds arbitrary query strings to the stream and feed
// reads (without waits): a success or a client error with a well-formed
// error body, never a panic or a 5xx.
func FuzzReadQueries(f *testing.F) {
	engine := flowfabric.New(memstore.New(&memstore.Options{Feeds: flowfabric.Feeds{Completions: true}}), nil)
	res, err := engine.SubmitRaw(f.Context(), "k", nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(engine, nil)
	paths := []string{"/v1/executions/" + res.ID.String() + "/attempts/0/stream", "/v1/feeds/completions", "/v1/feeds/leases"}
	for _, s := range []string{"after=3&limit=10", "exclude_best_effort=true", "cursor=0:1,3:7&kind=k&lane=l", "limit=0", "cursor=%zz", "after=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		if strings.Contains(query, "wait_ms") {
			t.Skip("waits are not fuzzed")
		}
		for _, p := range paths {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.Path, req.URL.RawQuery = p, query
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s?%s: %d %s", p, query, rec.Code, rec.Body)
			}
			if rec.Code >= 300 {
				var e struct {
					Error string `json:"error"`
					Kind  string `json:"kind"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Kind == "" {
					t.Fatalf("%s?%s: error body %s (%v)", p, query, rec.Body, err)
				}
			}
		}
	})
}

// FuzzFlowQueries feeds arbitrary query strings to the flow list and the
// flow graph (the dashboard's reads): a success or a client error with a
// well-formed error body, never a panic or a 5xx.
func FuzzFlowQueries(f *testing.F) {
	engine := flowfabric.New(memstore.New(nil), nil)
	if err := engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		f.Fatal(err)
	}
	fl := flowfabric.NewFlow()
	fl.AddRaw("b", nil, &flowfabric.SubmitOpts{Lane: "flows"}).After(fl.AddRaw("a", nil, &flowfabric.SubmitOpts{Lane: "flows"}))
	res, err := engine.SubmitFlow(f.Context(), fl, nil)
	if err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(engine, nil)
	paths := []string{"/v1/flows", "/v1/flows/" + res.ID.String() + "/graph"}
	for _, s := range []string{"limit=2&cursor=3", "finished=true", "cursor=7:" + res.ID.String(),
		"cursor=-1", "cursor=9999", "limit=abc", "finished=x", "cursor=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, p := range paths {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.Path, req.URL.RawQuery = p, query
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s?%s: %d %s", p, query, rec.Code, rec.Body)
			}
			if rec.Code >= 300 {
				var e struct {
					Error string `json:"error"`
					Kind  string `json:"kind"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Kind == "" {
					t.Fatalf("%s?%s: error body %s (%v)", p, query, rec.Body, err)
				}
			}
		}
	})
}

package httpapi_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/memstore"
)

// TestDashboardAssets checks the embedded dashboard: / redirects to ui/
// (relative, so a prefix survives), the page and its files are served
// with a Content-Security-Policy and need no token, a missing file is a
// JSON 404, and the page loads nothing from another origin.
func TestDashboardAssets(t *testing.T) {
	e := flowfabric.New(memstore.New(nil), nil)
	h := httpapi.New(e, &httpapi.Options{Token: "s3cret"})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	rec := get("/")
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "ui/" {
		t.Fatalf("GET /: %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
	for path, ctype := range map[string]string{
		"/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css",
	} {
		rec := get(path)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, ct, ctype)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		body := rec.Body.String()
		for _, banned := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(body, banned) && !(banned == "http://" && strings.Contains(body, "http://www.w3.org/2000/svg")) {
				t.Errorf("GET %s: contains %q", path, banned)
			}
		}
	}
	if rec := get("/ui/nope.js"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"kind":"not_found"`) {
		t.Errorf("GET /ui/nope.js: %d %s", rec.Code, rec.Body)
	}
	// the API behind the page still needs the token
	if rec := get("/v1/lanes"); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/lanes without token: %d", rec.Code)
	}
	// nor does a path that only starts like the dashboard's
	for _, path := range []string{"/ui/../v1/lanes", "/ui/./../v1/counts"} {
		if rec := get(path); rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d", path, rec.Code)
		}
	}
	// a write under /ui/ is not exempt
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/ui/", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("POST /ui/ without token: %d", rec.Code)
	}
}

// TestDashboardUnderPrefix mounts the handler under a prefix: the page
// is served there and its redirect stays under it.
func TestDashboardUnderPrefix(t *testing.T) {
	e := flowfabric.New(memstore.New(nil), nil)
	mux := http.NewServeMux()
	mux.Handle("/ff/", http.StripPrefix("/ff", httpapi.New(e, nil)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/ff/")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/ff/ui/" {
		t.Fatalf("GET /ff/: %d at %s", res.StatusCode, res.Request.URL.Path)
	}
}

// TestAuthorize checks Options.Authorize: it decides every guarded route
// in place of the bearer token, its error is the 401's message, and the
// exempt routes never reach it.
func TestAuthorize(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var seen []string
	opts := &httpapi.Options{
		Token: "ignored",
		Authorize: func(r *http.Request) error {
			seen = append(seen, r.Method+" "+r.URL.Path)
			if r.Header.Get("X-Role") != "operator" {
				return errors.New("an operator role is required")
			}
			return nil
		},
	}
	handler := httpapi.New(h.Engine, opts)
	do := func(method, path, role, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if role != "" {
			req.Header.Set("X-Role", role)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	if rec := do("GET", "/v1/lanes", "operator", ""); rec.Code != http.StatusOK {
		t.Fatalf("operator: %d %s", rec.Code, rec.Body)
	}
	rec := do("GET", "/v1/counts", "", "ignored")
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "an operator role is required") ||
		!strings.Contains(rec.Body.String(), `"kind":"unauthorized"`) {
		t.Fatalf("the bearer token must not pass when Authorize is set: %d %s", rec.Code, rec.Body)
	}
	// unknown paths are decided before routing, so they are not revealed
	if rec := do("GET", "/v1/nope", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("unknown path without role: %d", rec.Code)
	}
	seen = nil
	for _, path := range []string{"/healthz", "/ui/", "/ui/app.js", "/"} {
		if rec := do("GET", path, "", ""); rec.Code >= 400 {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := do("POST", "/v1/signals", "", ""); rec.Code == http.StatusUnauthorized {
		t.Errorf("POST /v1/signals reached the authorizer: %s", rec.Body)
	}
	if len(seen) != 0 {
		t.Errorf("exempt routes reached the authorizer: %v", seen)
	}
	// an error without text still says something
	empty := httpapi.New(h.Engine, &httpapi.Options{Authorize: func(*http.Request) error { return errors.New("") }})
	rec = httptest.NewRecorder()
	empty.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/lanes", nil))
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"error":"unauthorized"`) {
		t.Errorf("empty error: %d %s", rec.Code, rec.Body)
	}
}

type flowList struct {
	Flows []flowDescribed `json:"flows"`
	Next  string          `json:"next"`
}

type flowGraph struct {
	Flow  flowDescribed `json:"flow"`
	Nodes []struct {
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		Lane  string `json:"lane"`
		State string `json:"state"`
	} `json:"nodes"`
	Edges []struct {
		ID         string `json:"id"`
		Upstream   string `json:"upstream"`
		Downstream string `json:"downstream"`
		PassResult bool   `json:"pass_result"`
		State      string `json:"state"`
	} `json:"edges"`
}

// TestFlowListAndGraph lists flows across partitions page by page, and
// reads a diamond flow's graph: every member with its state and every
// edge, among executions that are not members.
func TestFlowListAndGraph(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	if err := h.Engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, h.Engine, nil)
	for range 5 {
		ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"loose","lane":"flows"}`)
	}
	var flows []flowCreated
	for range 5 {
		flows = append(flows, ok[flowCreated](c, http.StatusCreated, "POST", "/v1/flows", `{"nodes":[
			{"kind":"root","lane":"flows"},
			{"kind":"left","lane":"flows","after":[0]},
			{"kind":"right","lane":"flows","after_result":0},
			{"kind":"join","lane":"flows","after":[1,2]}]}`))
	}

	var listed []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page := ok[flowList](c, http.StatusOK, "GET", "/v1/flows?limit=2&cursor="+cursor, "")
		if len(page.Flows) > 2 {
			t.Fatalf("page of %d flows, limit 2", len(page.Flows))
		}
		for _, f := range page.Flows {
			if f.MemberCount != 4 || f.State != "open" {
				t.Errorf("flow %+v", f)
			}
			listed = append(listed, f.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	var want []string
	for _, f := range flows {
		want = append(want, f.ID)
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %v, want %v", listed, want)
	}
	if fin := ok[flowList](c, http.StatusOK, "GET", "/v1/flows?finished=true", ""); len(fin.Flows) != 0 || fin.Next != "" {
		t.Fatalf("finished flows: %+v", fin)
	}

	f := flows[2]
	g := ok[flowGraph](c, http.StatusOK, "GET", "/v1/flows/"+f.ID+"/graph", "")
	if g.Flow.ID != f.ID || len(g.Nodes) != 4 || len(g.Edges) != 4 {
		t.Fatalf("graph %+v", g)
	}
	kinds := map[string]string{}
	for _, n := range g.Nodes {
		kinds[n.ID] = n.Kind
		if n.Lane != "flows" || n.State == "" {
			t.Errorf("node %+v", n)
		}
	}
	for i, k := range []string{"root", "left", "right", "join"} {
		if kinds[f.Executions[i]] != k {
			t.Errorf("node %d (%s) kind %q, want %q", i, f.Executions[i], kinds[f.Executions[i]], k)
		}
	}
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, kinds[e.Upstream]+">"+kinds[e.Downstream])
		if e.State != "pending" || e.PassResult != (kinds[e.Upstream] == "root" && kinds[e.Downstream] == "right") {
			t.Errorf("edge %+v", e)
		}
	}
	slices.Sort(edges)
	if want := []string{"left>join", "right>join", "root>left", "root>right"}; !slices.Equal(edges, want) {
		t.Errorf("edges %v, want %v", edges, want)
	}

	c.fails(http.StatusNotFound, "flow_not_found", "GET", "/v1/flows/00000000-0000-4000-8000-000000000001/graph", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows/nope/graph", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows?cursor=x", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows?cursor=1:nope", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows?finished=maybe", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/flows?limit=0", "")
}

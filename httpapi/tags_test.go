package httpapi_test

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

type tagsBody struct {
	ID   string            `json:"id"`
	Tags map[string]string `json:"tags"`
}

func wantTagsBody(t *testing.T, what string, got tagsBody, id string, want map[string]string) {
	t.Helper()
	if got.ID != id || got.Tags == nil || !maps.Equal(got.Tags, want) {
		t.Fatalf("%s: %+v, want id %s and tags %v", what, got, id, want)
	}
}

// TestExecutionTags reads and changes an execution's tags, in a terminal
// state too; the search by tag follows; bad requests change nothing.
func TestExecutionTags(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions",
		`{"kind":"send_email","delay":"1h","tags":{"team.owner":"growth","app.x":"1"}}`)
	wantTagsBody(t, "GET", ok[tagsBody](c, http.StatusOK, "GET", ep(s.ID, "/tags"), ""), s.ID,
		map[string]string{"team.owner": "growth", "app.x": "1"})

	got := ok[tagsBody](c, http.StatusOK, "PATCH", ep(s.ID, "/tags"), `{"set":{"team.owner":"core","app.y":""},"remove":["app.x","app.none"]}`)
	want := map[string]string{"team.owner": "core", "app.y": ""}
	wantTagsBody(t, "PATCH", got, s.ID, want)
	if x := ok[execution](c, http.StatusOK, "GET", ep(s.ID), ""); !maps.Equal(x.Tags, want) {
		t.Fatalf("describe after PATCH: tags %v, want %v", x.Tags, want)
	}
	type page struct {
		IDs []string `json:"ids"`
	}
	if p := ok[page](c, http.StatusOK, "GET", "/v1/executions/search?tag=team.owner=core", ""); len(p.IDs) != 1 || p.IDs[0] != s.ID {
		t.Fatalf("search by the new tag: %+v", p)
	}

	// in a terminal state, with the body repeating the id
	ok[map[string]any](c, http.StatusOK, "POST", ep(s.ID, "/cancel"), `{"reason":"stop"}`)
	got = ok[tagsBody](c, http.StatusOK, "PATCH", ep(s.ID, "/tags"), `{"id":"`+s.ID+`","remove":["app.y"]}`)
	want = map[string]string{"team.owner": "core"}
	wantTagsBody(t, "PATCH after cancel", got, s.ID, want)

	many := make([]string, 0, model.MaxTags)
	for i := range model.MaxTags {
		many = append(many, fmt.Sprintf(`"app.k%02d":"v"`, i))
	}
	other := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"send_email","delay":"1h"}`)
	for _, bad := range []struct {
		status     int
		kind, body string
	}{
		{http.StatusBadRequest, "invalid_tag_key", `{"set":{"NoDot":"x"}}`},
		{http.StatusBadRequest, "invalid_tag_key", `{"remove":["app.a b"]}`},
		{http.StatusBadRequest, "invalid_input", `{"set":{"app.k":"v"},"remove":["app.k"]}`},
		{http.StatusBadRequest, "invalid_input", `{"set":{` + strings.Join(many, ",") + `}}`},
		{http.StatusBadRequest, "bad_request", `{"sett":{"app.k":"v"}}`},
		{http.StatusBadRequest, "bad_request", ``},
		{http.StatusBadRequest, "bad_request", `{"id":"` + other.ID + `","set":{"app.k":"v"}}`},
	} {
		c.fails(bad.status, bad.kind, "PATCH", ep(s.ID, "/tags"), bad.body)
	}
	wantTagsBody(t, "GET after refused requests", ok[tagsBody](c, http.StatusOK, "GET", ep(s.ID, "/tags"), ""), s.ID, want)

	unknown := model.NewExecutionID(0, model.NewUUIDv4([16]byte{7})).String()
	c.fails(http.StatusNotFound, "execution_not_found", "GET", ep(unknown, "/tags"), "")
	c.fails(http.StatusNotFound, "execution_not_found", "PATCH", ep(unknown, "/tags"), `{"set":{"app.k":"v"}}`)
	c.fails(http.StatusBadRequest, "invalid_input", "GET", ep("nope", "/tags"), "")
	c.fails(http.StatusMethodNotAllowed, "method_not_allowed", "POST", ep(s.ID, "/tags"), `{}`)
}

// TestFlowTags reads and changes a flow's tags; its nodes keep theirs.
func TestFlowTags(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	if err := h.Engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, h.Engine, nil)
	f := ok[flowCreated](c, http.StatusCreated, "POST", "/v1/flows",
		`{"tags":{"team.owner":"build"},"nodes":[{"kind":"fetch","lane":"flows","tags":{"app.node":"0"}}]}`)
	wantTagsBody(t, "GET", ok[tagsBody](c, http.StatusOK, "GET", "/v1/flows/"+f.ID+"/tags", ""), f.ID,
		map[string]string{"team.owner": "build"})
	got := ok[tagsBody](c, http.StatusOK, "PATCH", "/v1/flows/"+f.ID+"/tags", `{"id":"`+f.ID+`","set":{"app.build":"7"},"remove":["team.owner"]}`)
	wantTagsBody(t, "PATCH", got, f.ID, map[string]string{"app.build": "7"})
	if d := ok[flowDescribed](c, http.StatusOK, "GET", "/v1/flows/"+f.ID, ""); !maps.Equal(d.Tags, map[string]string{"app.build": "7"}) {
		t.Fatalf("describe flow after PATCH: %v", d.Tags)
	}
	wantTagsBody(t, "the node's tags", ok[tagsBody](c, http.StatusOK, "GET", ep(f.Executions[0], "/tags"), ""), f.Executions[0],
		map[string]string{"app.node": "0"})
	got = ok[tagsBody](c, http.StatusOK, "PATCH", "/v1/flows/"+f.ID+"/tags", `{"remove":["app.build"]}`)
	wantTagsBody(t, "removing every tag", got, f.ID, map[string]string{})

	c.fails(http.StatusBadRequest, "invalid_tag_key", "PATCH", "/v1/flows/"+f.ID+"/tags", `{"set":{"x":"y"}}`)
	c.fails(http.StatusBadRequest, "bad_request", "PATCH", "/v1/flows/"+f.ID+"/tags",
		`{"id":"00000000-0000-4000-8000-000000000001","set":{"app.k":"v"}}`)
	unknown := "00000000-0000-4000-8000-0000000000ff"
	c.fails(http.StatusNotFound, "flow_not_found", "GET", "/v1/flows/"+unknown+"/tags", "")
	c.fails(http.StatusNotFound, "flow_not_found", "PATCH", "/v1/flows/"+unknown+"/tags", `{"set":{"app.k":"v"}}`)
	c.fails(http.StatusBadRequest, "invalid_input", "PATCH", "/v1/flows/nope/tags", `{"set":{"app.k":"v"}}`)
}

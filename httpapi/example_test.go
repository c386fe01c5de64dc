package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/memstore"
)

// Mount the API under a prefix of the host's own mux, behind a bearer
// token, and submit an execution over HTTP.
func Example() {
	engine := flowfabric.New(memstore.New(nil), nil)

	mux := http.NewServeMux()
	mux.Handle("/flowfabric/", http.StripPrefix("/flowfabric",
		httpapi.New(engine, &httpapi.Options{Token: "s3cret"})))
	srv := httptest.NewServer(mux) // the host's server; any will do
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/flowfabric/v1/executions",
		strings.NewReader(`{"kind":"send_email","payload":{"to":"ada@example.com"},"priority":10}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close() //nolint:errcheck // a read body
	var out struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
		State     string `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, out.State, out.Duplicate, strings.HasPrefix(out.ID, "{fp:"))
	// Output: 201 Created waiting false true
}

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// TestValkeyEndToEnd runs the API over a real HTTP server on valkeystore:
// on miniredis always, and on a real server when one is on PATH (skipped,
// saying why, otherwise).
func TestValkeyEndToEnd(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		endToEnd(t, valkeyStore(t, miniredis.RunT(t).Addr()))
	})
	t.Run("server", func(t *testing.T) {
		srv := redisserver.Start(t, nil)
		endToEnd(t, valkeyStore(t, srv.Addr()))
	})
}

func valkeyStore(t *testing.T, addr string) *valkeystore.Store {
	t.Helper()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("httpapi%d", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// httpClient talks to a real server.
type httpClient struct {
	t     *testing.T
	base  string
	token string
}

func (c *httpClient) do(method, path, body string, out any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // a read body
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

func endToEnd(t *testing.T, store flowfabric.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	engine := flowfabric.New(store, nil)
	if err := engine.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	if err := engine.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer engine.Stop(context.Background()) //nolint:errcheck // best effort
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"default", "flows"}})
	if err := w.HandleRaw("xor", func(_ context.Context, info *flowfabric.TaskInfo) error {
		out := make([]byte, len(info.Payload))
		for i, b := range info.Payload {
			out[i] = b ^ 0xff
		}
		return info.SetResult(out)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background()) //nolint:errcheck // best effort

	mux := http.NewServeMux()
	mux.Handle("/ff/", http.StripPrefix("/ff", httpapi.New(engine, &httpapi.Options{Token: "e2e"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &httpClient{t: t, base: srv.URL + "/ff", token: "e2e"}

	if status, _ := c.do("GET", "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("healthz: %d", status)
	}
	payload := []byte{0x00, 0xff, 0x80, 'a', 0xc3}
	var s submitted
	status, body := c.do("POST", "/v1/executions",
		`{"kind":"xor","payload_base64":"`+base64.StdEncoding.EncodeToString(payload)+`","idempotency_key":"e2e-1"}`, &s)
	if status != http.StatusCreated {
		t.Fatalf("submit: %d %s", status, body)
	}
	id := model.MustParseExecutionID(s.ID)
	if snap, err := engine.Wait(ctx, id, 0); err != nil || snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("wait: %v %v", snap, err)
	}
	status, res := c.do("GET", ep(s.ID, "/result"), "", nil)
	if status != http.StatusOK || !bytes.Equal(res, []byte{0xff, 0x00, 0x7f, 'a' ^ 0xff, 0x3c}) {
		t.Fatalf("result: %d %x", status, res)
	}
	var x execution
	if status, body := c.do("GET", ep(s.ID), "", &x); status != http.StatusOK || x.State != "completed" || x.Attempts != 1 {
		t.Fatalf("describe: %d %s", status, body)
	}
	if status, body := c.do("POST", "/v1/executions", `{"kind":"xor","idempotency_key":"e2e-1"}`, &s); status != http.StatusOK || !s.Duplicate {
		t.Fatalf("duplicate: %d %s", status, body)
	}
	if status, body := c.do("POST", ep(s.ID, "/replay"), `{"id":"`+s.ID+`","reason":"again"}`, nil); status != http.StatusOK {
		t.Fatalf("replay: %d %s", status, body)
	}
	if snap, err := engine.Wait(ctx, id, 0); err != nil || snap.ReplayCount != 1 || snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("replayed: %+v %v", snap, err)
	}

	var f flowCreated
	status, body = c.do("POST", "/v1/flows", `{"nodes":[
		{"kind":"xor","lane":"flows","payload_base64":"AAEC"},
		{"kind":"xor","lane":"flows","after_result":0}]}`, &f)
	if status != http.StatusCreated || len(f.Executions) != 2 {
		t.Fatalf("flow: %d %s", status, body)
	}
	for _, e := range f.Executions {
		if snap, err := engine.Wait(ctx, model.MustParseExecutionID(e), 0); err != nil || snap.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("node %s: %v %v", e, snap, err)
		}
	}
	// xor twice gives the payload back.
	if status, res := c.do("GET", ep(f.Executions[1], "/result"), "", nil); status != http.StatusOK || !bytes.Equal(res, []byte{0, 1, 2}) {
		t.Fatalf("flow result: %d %x", status, res)
	}
	var d flowDescribed
	if status, body := c.do("GET", "/v1/flows/"+f.ID, "", &d); status != http.StatusOK || d.State != "completed" || d.Counts["completed"] != 2 {
		t.Fatalf("describe flow: %d %s", status, body)
	}
	wrong := &httpClient{t: t, base: c.base, token: "guess"}
	if status, body := wrong.do("GET", ep(s.ID), "", nil); status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s", status, body)
	}
}

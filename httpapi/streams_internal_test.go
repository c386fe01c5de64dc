package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flowfabric/flowfabric/flowfabrictest"
)

// Past Options.MaxTails open tails a tail is refused with 429, retryable,
// before it reads anything.
func TestTailCapacity(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	a := New(h.Engine, &Options{MaxTails: 2}).(*api)
	a.tails <- struct{}{}
	a.tails <- struct{}{}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/executions/{fp:0}:00000000-0000-7000-8000-000000000001/attempts/0/stream/tail", nil))
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	<-a.tails
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/executions/{fp:0}:00000000-0000-7000-8000-000000000001/attempts/0/stream/tail", nil))
	if rec.Code == http.StatusTooManyRequests {
		t.Fatalf("a free slot still refused: %s", rec.Body)
	}
}

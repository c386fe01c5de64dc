package main

import (
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// want is what the example reports, in order: every frame once, in
// sequence order, whichever way the tail's wake-ups batched them.
const want = `submitted "fix the flaky test"; following attempt 0 before any worker runs
  #1 summary v1 patch {"task":"fix the flaky test","status":"working","done":0}
  #2 step {"n":1,"title":"read the failing test"}
    live: read the failing test
  #7 summary v2 patch {"done":1,"last":"read the failing test"}
  #8 step {"n":2,"title":"find the race"}
    live: find the race
  #12 summary v3 patch {"done":2,"last":"find the race"}
  #13 step {"n":3,"title":"add a lock"}
    live: add a lock
  #17 summary v4 patch {"done":3,"last":"add a lock"}
  #18 summary v5 patch {"status":"done","last":null}
stream closed (ended_success) after 18 frames, 8 of them durable or summary
summary v5: {"done":3,"status":"done","task":"fix the flaky test"}
completed: 3 steps done`

// TestStream keeps the example running on memstore.
func TestStream(t *testing.T) {
	var lines []string
	if err := run(memstore.New(nil), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the example reported:\n%s\nwant:\n%s", got, want)
	}
}

// TestStreamValkey runs it on a real server (skipped, with the reason,
// when no redis-server or valkey-server is on PATH).
func TestStreamValkey(t *testing.T) {
	srv := redisserver.Start(t, nil)
	store, closeStore, err := openStore(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	var lines []string
	if err := run(store, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the example reported:\n%s\nwant:\n%s", got, want)
	}
}

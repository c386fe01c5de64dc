package main

import (
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// want is what the example reports, in order.
const want = `periodic job "heartbeat": every second, added in 2 processes
at least 3 ticks, each submitted once between the processes: true
refresh acme again while the first waits or runs: duplicate true, same execution true
refresh bolt: duplicate false
refresh acme after the first completed: a new execution true
the new refresh: completed`

// TestPeriodic keeps the example running on memstore.
func TestPeriodic(t *testing.T) {
	var lines []string
	if err := run(memstore.New(nil), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the example reported:\n%s\nwant:\n%s", got, want)
	}
}

// TestPeriodicValkey runs it on a real server (skipped, with the reason,
// when no redis-server or valkey-server is on PATH).
func TestPeriodicValkey(t *testing.T) {
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

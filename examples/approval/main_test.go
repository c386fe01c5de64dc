package main

import (
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// want is what the example reports, in order.
const want = `v1.2: approval mailed to alice and bob
alice approved: accepted
alice clicked again: duplicate
bob approved: resumed
deployed v1.2 (approved by alice, bob)
v1.3: approval mailed to alice and bob
v1.3: nobody approved in time: escalated to operator review
v1.3: an operator resumed it
deployed v1.3 (operator override)
forged link: invalid token`

// TestApproval keeps the example running on memstore.
func TestApproval(t *testing.T) {
	var lines []string
	if err := run(memstore.New(nil), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the example reported:\n%s\nwant:\n%s", got, want)
	}
}

// TestApprovalValkey runs it on a real server (skipped, with the reason,
// when no redis-server or valkey-server is on PATH).
func TestApprovalValkey(t *testing.T) {
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

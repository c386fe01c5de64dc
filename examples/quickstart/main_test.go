package main

import (
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// TestQuickstart keeps the README's main example running.
func TestQuickstart(t *testing.T) {
	if err := run(memstore.New(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestQuickstartValkey runs the tour on a real server (skipped, with the
// reason, when no redis-server or valkey-server is on PATH).
func TestQuickstartValkey(t *testing.T) {
	srv := redisserver.Start(t, nil)
	store, closeStore, err := openStore(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if err := run(store); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// want is what the pipeline reports, in order.
const want = `download mirror-eu   completed
download mirror-us   cancelled (sibling_quorum_satisfied)
fetch                completed
build linux          completed
build mac            completed
build windows        completed
release              completed
released sha256:5e1f from mirror-eu to eu, us, ap
losing download's handler stopped: flowfabric: lease lost: execution cancelled`

// TestPipeline keeps the example running on memstore.
func TestPipeline(t *testing.T) {
	var lines []string
	if err := run(memstore.New(nil), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the pipeline reported:\n%s\nwant:\n%s", got, want)
	}
}

// TestPipelineValkey runs it on a real server (skipped, with the reason,
// when no redis-server or valkey-server is on PATH).
func TestPipelineValkey(t *testing.T) {
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
		t.Fatalf("the pipeline reported:\n%s\nwant:\n%s", got, want)
	}
}

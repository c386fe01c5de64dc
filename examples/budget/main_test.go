package main

import (
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/memstore"
)

// want is what the example reports, in order.
const want = `agent run: 5 calls of 40 tokens, one after another, on a budget of 100 tokens
  call 1: completed: answer to "step 1" (40 tokens)
  call 2: completed: answer to "step 2" (40 tokens)
  call 3: failed: flowfabric: report usage: budget_exceeded: tokens would reach 120, above its hard limit 100
  call 4: cancelled: the run's budget hard limit reached
  call 5: cancelled: the run's budget hard limit reached
budget: 80 of 100 tokens used, 1 hard breach (the refused report applied nothing)
customers: quota of 2 calls at once and 10 per minute, per customer
  acme submits 3 calls that take a while, bolt 1
  running: 2 of acme, 1 of bolt; acme's third call is rate_limited
  quota acme: 2 active, 0 free
  quota bolt: 1 active, 1 free
  the calls end; acme's third ran once a slot freed: all 4 completed
  acme's calls 4 to 10 completed
  acme call 11: rate_limited (10 calls in the window, 0 free, room again within the minute)
  bolt call 2: completed at once
  acme call 11: cancelled (the example does not wait the minute)`

// TestBudget keeps the example running on memstore.
func TestBudget(t *testing.T) {
	var lines []string
	if err := run(memstore.New(nil), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("the example reported:\n%s\nwant:\n%s", got, want)
	}
}

// TestBudgetValkey runs it on a real server (skipped, with the reason,
// when no redis-server or valkey-server is on PATH).
func TestBudgetValkey(t *testing.T) {
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

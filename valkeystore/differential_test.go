package valkeystore

import (
	"flag"
	"sync/atomic"
	"testing"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/proptest"
)

var diffChecks = flag.Int("valkeystore.diffchecks", 0,
	"sequences per backend for TestDifferentialProperty (0: 500 on miniredis, 100 on a real server, 50 on a cluster; a tenth under -race)")

// TestDifferentialProperty applies the same rapid-generated operation
// sequences (with their times) to memstore and to valkeystore and
// compares every answer at once and the full observations (describe,
// indexes, attempts, history, results, listings, due timers, workers,
// the event feeds each sequence builds both stores with) every
// 25 steps and at the end of each sequence; memstore is also checked
// against the invariants after every step. Every other sequence's store
// runs its scripts with EVALSHA, the others as functions (on a real
// server). A failure prints the seed;
// replay it with -rapid.seed or the fail file rapid names.
func TestDifferentialProperty(t *testing.T) {
	parts := model.PartitionConfig{FlowPartitions: 4}
	defaults := map[string]int{"miniredis": 500, "standalone": 100, "cluster": 50, "second-server": 50}
	forEachBackend(t, func(t *testing.T, b backend) {
		client := b.client(t)
		checks := defaults[b.name]
		if *diffChecks > 0 {
			checks = *diffChecks
		}
		if raceEnabled {
			checks = max(checks/10, 5)
		}
		// every other sequence runs its scripts with EVALSHA, the rest as
		// functions where the server has them
		var stores atomic.Int64
		proptest.RunDifferential(t,
			proptest.WithFeeds(func(_ testing.TB, f model.Feeds) model.Store {
				return memstore.New(&memstore.Options{Partitions: parts, Feeds: f})
			}),
			proptest.WithFeeds(func(st testing.TB, f model.Feeds) model.Store {
				calls := ScriptCallsAuto
				if stores.Add(1)%2 == 0 {
					calls = ScriptCallsEval
				}
				s := newStoreWith(st, client, &Options{Partitions: parts, Feeds: f, ScriptCalls: calls})
				// the fence copies are as current as the records they
				// copy (stream_fence_test.go)
				st.Cleanup(func() { checkFenceCopies(st, client, s) })
				return s
			}),
			proptest.Options{Checks: checks, CompareEvery: 25, LeaseNotices: true})
	})
}

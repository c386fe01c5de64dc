package valkeystore

import (
	"testing"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// valkeystore implements the seam and every optional interface, so the
// conformance suite and the differential cover all of it (storetest skips
// the operations a store lacks, proptest refuses such a store).
var (
	_ model.Store             = (*Store)(nil)
	_ model.IndexInspector    = (*Store)(nil)
	_ model.Blocker           = (*Store)(nil)
	_ model.GrantReclaimer    = (*Store)(nil)
	_ model.WorkNotifier      = (*Store)(nil)
	_ model.LeaseNotifier     = (*Store)(nil)
	_ model.FlowStore         = (*Store)(nil)
	_ model.LaneStore         = (*Store)(nil)
	_ model.AdmissionStore    = (*Store)(nil)
	_ model.StreamStore       = (*Store)(nil)
	_ model.StreamNotifier    = (*Store)(nil)
	_ model.FeedStore         = (*Store)(nil)
	_ model.FeedNotifier      = (*Store)(nil)
	_ model.FeedEventNotifier = (*Store)(nil)
	_ model.TagStore          = (*Store)(nil)
)

// TestConformance runs the store conformance suite on every backend:
// miniredis in-process, a real standalone server and a real 3-master
// cluster (the real ones skip only when no server binary is on PATH). Each
// subtest's store has its own key prefix, so subtests share a server.
// Default runs the scripts as functions on the real servers (the default
// there), OnePartition with EVALSHA, so both ways are covered on
// standalone and cluster; miniredis has only EVALSHA. The
// Feeds group's tests build theirs with the feeds they ask for
// (storetest.WithFeeds).
func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			mark := func(f storetest.NewStoreFunc) storetest.NewStoreFunc {
				if b.name == "miniredis" {
					return storetest.Interpreted(f)
				}
				return f
			}
			t.Run("Default", func(t *testing.T) {
				storetest.Exercise(t, mark(storetest.WithFeeds(func(t *testing.T, f model.Feeds) model.Store {
					return newStore(t, b, &Options{Feeds: f})
				})))
			})
			t.Run("OnePartition", func(t *testing.T) {
				storetest.Exercise(t, mark(storetest.WithFeeds(func(t *testing.T, f model.Feeds) model.Store {
					return newStore(t, b, &Options{Partitions: model.PartitionConfig{FlowPartitions: 1}, Feeds: f, ScriptCalls: ScriptCallsEval})
				})))
			})
		})
	}
}

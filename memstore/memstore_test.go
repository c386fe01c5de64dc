package memstore_test

import (
	"testing"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// memstore implements the seam and every optional interface, so the
// conformance suite and the differential cover all of it (storetest skips
// the operations a store lacks, proptest refuses such a store).
var (
	_ model.Store          = (*memstore.Store)(nil)
	_ model.IndexInspector = (*memstore.Store)(nil)
	_ model.Blocker        = (*memstore.Store)(nil)
	_ model.GrantReclaimer = (*memstore.Store)(nil)
	_ model.WorkNotifier   = (*memstore.Store)(nil)
	_ model.LeaseNotifier  = (*memstore.Store)(nil)
	_ model.FlowStore      = (*memstore.Store)(nil)
)

// TestConformance runs the store conformance suite on memstore, with the
// default partition counts and with a single partition.
func TestConformance(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		storetest.Exercise(t, storetest.WithFeeds(func(_ *testing.T, f model.Feeds) model.Store {
			return memstore.New(&memstore.Options{Feeds: f})
		}))
	})
	t.Run("OnePartition", func(t *testing.T) {
		storetest.Exercise(t, storetest.WithFeeds(func(_ *testing.T, f model.Feeds) model.Store {
			return memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: 1}, Feeds: f})
		}))
	})
}

package memstore_test

import (
	"testing"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// TestConformance runs the store conformance suite on memstore, with the
// default partition counts and with a single partition.
func TestConformance(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		storetest.Exercise(t, func(*testing.T) model.Store { return memstore.New(nil) })
	})
	t.Run("OnePartition", func(t *testing.T) {
		storetest.Exercise(t, func(*testing.T) model.Store {
			return memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: 1}})
		})
	})
}

package memstore_test

import (
	"testing"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// TestTranscripts runs the transcripts of storetest/testdata/transcripts
// on memstore, with the default partition counts and with a single
// partition; the output must be the files' (go test -run TestTranscripts
// -rewrite rewrites them).
func TestTranscripts(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		storetest.RunTranscripts(t, func(*testing.T) model.Store { return memstore.New(nil) }, storetest.TranscriptDir)
	})
	t.Run("OnePartition", func(t *testing.T) {
		storetest.RunTranscripts(t, func(*testing.T) model.Store {
			return memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: 1}})
		}, storetest.TranscriptDir)
	})
}

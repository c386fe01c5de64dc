package valkeystore

import (
	"testing"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// TestTranscripts runs the transcripts of storetest/testdata/transcripts
// on every backend (miniredis, a real standalone server, a real cluster),
// with the default partition counts and with a single partition. The
// output must be the files', which memstore prints too.
func TestTranscripts(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			t.Run("Default", func(t *testing.T) {
				storetest.RunTranscripts(t, func(t *testing.T) model.Store { return newStore(t, b, nil) }, storetest.TranscriptDir)
			})
			t.Run("OnePartition", func(t *testing.T) {
				storetest.RunTranscripts(t, func(t *testing.T) model.Store {
					return newStore(t, b, &Options{Partitions: model.PartitionConfig{FlowPartitions: 1}})
				}, storetest.TranscriptDir)
			})
		})
	}
}

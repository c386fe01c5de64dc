package proptest_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/proptest"
)

// newMemstore opens a memstore with 4 partitions, so that lanes share
// partitions and sequences stay small, and the feeds the sequence drew.
var newMemstore = proptest.WithFeeds(func(_ testing.TB, f model.Feeds) model.Store {
	return memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: 4}, Feeds: f})
})

// memstoreKnown tolerates open memstore bugs the state machine found (see
// TestStateMachineMemstore); keep it empty.
var memstoreKnown []string

func TestDifferentialMemstoreMemstore(t *testing.T) {
	proptest.RunDifferential(t, newMemstore, newMemstore, proptest.Options{Checks: 100, KnownViolations: memstoreKnown, LeaseNotices: true})
}

func TestHostileInputMemstore(t *testing.T) {
	proptest.RunHostileInputs(t, newMemstore, proptest.Options{KnownViolations: memstoreKnown})
}

func FuzzHostileInputMemstore(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xff, 0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0})
	f.Fuzz(rapid.MakeFuzz(proptest.InputProperty(f, newMemstore, proptest.Options{KnownViolations: memstoreKnown})))
}

func FuzzStateMachineMemstore(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(rapid.MakeFuzz(proptest.StateMachineProperty(f, newMemstore, proptest.Options{Steps: 30, KnownViolations: memstoreKnown})))
}

package storetest

import (
	"testing"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// minimalStore is a store with only what the engine needs, and the index
// inspection the suite reads.
type minimalStore struct {
	model.Store
	model.IndexInspector
}

// A store with only the required seam and model.IndexInspector passes the
// suite: the tests of model.Blocker and model.GrantReclaimer skip, naming
// the interface.
func TestExerciseMinimalStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite")
	}
	Exercise(t, func(*testing.T) model.Store {
		m := memstore.New(nil)
		return minimalStore{m, m}
	})
}

func TestCompleteStore(t *testing.T) {
	t.Parallel()
	m := memstore.New(nil)
	if s := complete(t, m); s != fullStore(m) {
		t.Fatalf("a full store is wrapped: %T", s)
	}
	p, ok := complete(t, minimalStore{m, m}).(*partialStore)
	if !ok {
		t.Fatal("a minimal store is not completed")
	}
	t.Run("skips", func(t *testing.T) {
		_, _ = rebind(p, t).ExecutionBlock(t.Context(), &model.ExecutionBlockParams{})
		t.Error("ExecutionBlock of a store without Blocker did not skip")
	})
}

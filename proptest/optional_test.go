package proptest

import (
	"context"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// The machine calls every operation, so it refuses a store without an
// optional interface up front, naming it, rather than covering less.
func TestMachineNeedsOptionalInterfaces(t *testing.T) {
	t.Parallel()
	full := newMemstore(t)
	if _, err := newMachine(context.Background(), []model.Store{full}, Options{}); err != nil {
		t.Fatalf("memstore refused: %v", err)
	}
	type minimal struct {
		model.Store
		model.IndexInspector
	}
	_, err := newMachine(context.Background(), []model.Store{full, minimal{full, full.(model.IndexInspector)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "store 1") || !strings.Contains(err.Error(), "model.Blocker") {
		t.Fatalf("a store without model.Blocker: %v", err)
	}
	if _, err := Observe(context.Background(), struct{ model.Store }{full}, startTime, ObserveOptions{}); err != nil {
		t.Fatalf("Observe of an empty store without IndexInspector: %v", err)
	}
}

package flowfabric_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// TestIndexReconcilerRuns: the engine runs the index reconciler on a
// store that repairs (ScannerConfig.IndexRepair); a damaged index entry
// is back after its interval, reported through OnRepair.
func TestIndexReconcilerRuns(t *testing.T) {
	var mu sync.Mutex
	var seen []model.IndexRepair
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{Scanners: flowfabric.ScannerConfig{
		IndexRepair: flowfabric.IndexRepairConfig{Interval: time.Minute, OnRepair: func(r model.IndexRepair) {
			mu.Lock()
			seen = append(seen, r)
			mu.Unlock()
		}},
	}}})
	names := make([]string, 0)
	for _, s := range h.Engine.Scanners() {
		names = append(names, s.Name())
	}
	if !slices.Contains(names, "index_reconciler") {
		t.Fatalf("scanners %v lack the index reconciler", names)
	}
	r, err := h.Engine.Submit(h.Ctx, greet{Name: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	indexes := func() []string {
		res, err := h.Store.ExecutionIndexes(h.Ctx, &model.ExecutionIndexesParams{ID: r.ID})
		if err != nil {
			t.Fatal(err)
		}
		return res.Indexes
	}
	before := indexes()
	var eligible string
	for _, ix := range before {
		if strings.HasSuffix(ix, ":eligible") {
			eligible = ix
		}
	}
	if eligible == "" {
		t.Fatalf("a new submission is in %v", before)
	}
	if err := h.Store.IndexTamper(h.Ctx, &model.IndexTamperParams{ID: r.ID, Index: eligible, Action: model.RepairRemoved}); err != nil {
		t.Fatal(err)
	}
	h.Advance(2 * time.Minute)
	if got := indexes(); !slices.Equal(got, before) {
		t.Fatalf("indexes %v, want %v again", got, before)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].ExecutionID != r.ID || seen[0].Index != eligible || seen[0].Action != model.RepairAdded {
		t.Fatalf("repairs %+v", seen)
	}
}

// TestIndexRepairConfigChecked: New refuses a bad reconciler config,
// naming the field.
func TestIndexRepairConfigChecked(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Scanners.IndexRepair.Batch") {
			t.Fatalf("recovered %v", r)
		}
	}()
	flowfabric.New(flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true}).Store,
		&flowfabric.Config{Scanners: flowfabric.ScannerConfig{IndexRepair: flowfabric.IndexRepairConfig{Batch: -1}}})
}

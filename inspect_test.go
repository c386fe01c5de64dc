package flowfabric_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

// TestCountsAndLanes counts executions by state, lane and kind as they
// run and end, and lists the lanes with their workers: a lane with work
// and no worker shows as unserved.
func TestCountsAndLanes(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"served"}})
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	if err := h.Engine.RegisterLane("configured", flowfabric.LaneConfig{}); err != nil {
		t.Fatal(err)
	}
	var done []flowfabric.ExecutionID
	for range 3 {
		done = append(done, mustSubmit(t, h, greet{Name: "x"}, &flowfabric.SubmitOpts{Lane: "served"}))
	}
	mustSubmit(t, h, greet{Name: "later"}, &flowfabric.SubmitOpts{Lane: "served", Delay: time.Hour})
	mustSubmit(t, h, greet{Name: "stuck"}, &flowfabric.SubmitOpts{Lane: "orphan"})
	mustSubmit(t, h, greet{Name: "stuck"}, &flowfabric.SubmitOpts{Lane: "orphan"})
	for _, id := range done {
		h.WaitTerminal(id)
	}

	c, err := h.Engine.Counts(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := h.Engine.Namespace()
	wantRows := []flowfabric.CountRow{
		{Namespace: ns, Lane: "orphan", Kind: "greet", State: flowfabric.PublicWaiting, Count: 2},
		{Namespace: ns, Lane: "served", Kind: "greet", State: flowfabric.PublicDelayed, Count: 1},
		{Namespace: ns, Lane: "served", Kind: "greet", State: flowfabric.PublicCompleted, Count: 3},
	}
	if d := cmp.Diff(wantRows, c.Rows); d != "" {
		t.Fatalf("Counts rows (-want +got):\n%s", d)
	}
	if c.Total != 6 || c.ByState[flowfabric.PublicCompleted] != 3 || c.ByState[flowfabric.PublicWaiting] != 2 {
		t.Fatalf("Counts totals: %+v", c)
	}
	c, err = h.Engine.Counts(h.Ctx, &flowfabric.CountOpts{Lane: "orphan"})
	if err != nil || c.Total != 2 {
		t.Fatalf("Counts of lane orphan: %+v, %v", c, err)
	}
	if _, err := h.Engine.Counts(h.Ctx, &flowfabric.CountOpts{Lane: "a b"}); !errors.Is(err, flowfabric.ErrValidation) {
		t.Fatalf("Counts with a bad lane: %v, want a validation error", err)
	}

	if _, _, err := h.Engine.PauseLane(h.Ctx, "orphan", "maintenance"); err != nil {
		t.Fatal(err)
	}
	lanes, err := h.Engine.ListLanes(h.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[flowfabric.LaneID]flowfabric.LaneInfo{}
	var order []flowfabric.LaneID
	for _, l := range lanes {
		got[l.Lane] = l
		order = append(order, l.Lane)
	}
	if d := cmp.Diff([]flowfabric.LaneID{"configured", "orphan", "served"}, order); d != "" {
		t.Fatalf("ListLanes order (-want +got):\n%s", d)
	}
	served, orphan, configured := got["served"], got["orphan"], got["configured"]
	if served.Workers != 1 || served.Unserved() || served.Backlog() != 1 || served.Counts[flowfabric.PublicCompleted] != 3 || served.Paused {
		t.Errorf("served lane: %+v", served)
	}
	if orphan.Workers != 0 || !orphan.Unserved() || orphan.Backlog() != 2 || !orphan.Paused {
		t.Errorf("orphan lane: %+v", orphan)
	}
	if configured.Workers != 0 || configured.Unserved() || len(configured.Counts) != 0 {
		t.Errorf("configured lane: %+v", configured)
	}
}

package flowfabric_test

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// Work queued on a spread lane before an idle worker starts (so no wake-up
// names its partitions) all runs within a bounded number of polls: the
// worker's cursor reaches every partition within 256/32 = 8 empty polls.
// The old probe window moved with time and revisited the same two blocks
// of partitions at a 5 s poll, so most of the jobs never ran (issue 18,
// defect 9).
func TestSpreadLaneBacklogRunsWithinBoundedPolls(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		Lanes: map[model.LaneID]flowfabric.LaneConfig{"spread": {Spread: true}},
	}})
	var ids []model.ExecutionID
	for i := range 8 {
		ids = append(ids, mustSubmit(t, h, greet{Name: string(rune('a' + i))}, &flowfabric.SubmitOpts{Lane: "spread"}))
	}
	const poll = 5 * time.Second
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []model.LaneID{"spread"}, PollInterval: poll})
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	const bound = 256/32 + 1
	for range bound {
		h.Advance(poll)
	}
	for _, id := range ids {
		if s, _ := h.Engine.Describe(h.Ctx, id); s.PublicState != model.PublicCompleted {
			t.Errorf("%v (partition %d) is %s after %d polls", id, id.Partition(), s.PublicState, bound)
		}
	}
}

package flowfabric_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
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

// A worker's claims on a spread lane skip the partitions the engine's
// probes found empty recently, with no notification naming them since.
// So a trickle of jobs costs about one claim call each instead of the
// window of 32 empty probes that followed every claim and completion
// (ffbench S1's latency stream on a spread lane made 49 empty claims per
// job, and its p50 grew from 0.6 to 5.8 ms; ARCHITECTURE "Spread lanes:
// what the probes learn"). Every job still starts at its submission: its
// notification makes its partition unknown again. What is known expires
// with the worker's poll interval, so the idle polls probe again and a
// notification the store lost costs no more than before.
func TestSpreadLaneSkipsPartitionsKnownEmpty(t *testing.T) {
	var counter *claimCounter
	h := flowfabrictest.New(t, &flowfabrictest.Options{
		Engine: &flowfabric.Config{Lanes: map[model.LaneID]flowfabric.LaneConfig{"spread": {Spread: true}}},
		WrapStore: func(s *memstore.Store) model.Store {
			counter = &claimCounter{Store: s}
			return counter
		}})
	const poll = time.Hour
	const workers = 4
	for i := range workers {
		w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("w%d", i)),
			Lanes: []model.LaneID{"spread"}, PollInterval: poll})
		flowfabric.AddHandler(w, greetHandler())
		h.StartWorker(w)
	}
	h.Advance(time.Second) // every worker looked once and idles
	run := func(n int) (calls int64) {
		before := counter.calls.Load()
		for i := range n {
			snap := h.WaitTerminal(mustSubmit(t, h, greet{Name: fmt.Sprint(i)}, &flowfabric.SubmitOpts{Lane: "spread"}))
			if !snap.StartedAt.Equal(snap.CreatedAt) {
				t.Fatalf("job %d started %s after its submission", i, snap.StartedAt.Sub(snap.CreatedAt))
			}
			h.Advance(time.Millisecond)
		}
		return counter.calls.Load() - before
	}
	run(16) // the looks after the first jobs learn the partitions their windows cover
	const jobs = 40
	if calls := run(jobs); calls > 2*jobs {
		t.Fatalf("%d jobs, one at a time, made %d claim calls; want at most 2 per job once every partition is known empty", jobs, calls)
	}
	// Knowledge as old as the poll interval is not trusted: the idle polls
	// probe the partitions they learned before their last wait again.
	before := counter.calls.Load()
	h.Advance(poll + time.Minute)
	if calls := counter.calls.Load() - before; calls < 32 {
		t.Fatalf("the idle polls after the poll interval made %d claim calls; want them to probe again (≥ 32)", calls)
	}
	run(1)
}

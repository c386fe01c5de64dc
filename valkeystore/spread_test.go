package valkeystore

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/claim"
	"github.com/flowfabric/flowfabric/model"
)

// A backlog of 8 jobs on a spread lane, queued before the worker looks, is
// claimed within a bounded number of claim calls (polls) by one worker:
// its cursor reaches every one of the 256 partitions within 256/32 = 8
// calls that find nothing, whatever the clock does between polls (issue
// 18, defect 9; the engine-level test runs on memstore).
func TestSpreadLaneBacklogBoundedPolls(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, nil)
		clock := model.NewSimClock(t0)
		var sq seq
		const spreadLane = model.LaneID("spread")
		want := map[model.ExecutionID]bool{}
		for i := range 8 {
			// partitions far apart, as spread ids land
			id := sq.exec((i*97 + 13) % model.DefaultFlowPartitions)
			c := createP(id, clock.Now())
			c.Lane = spreadLane
			if _, err := s.ExecutionCreate(bg, c); err != nil {
				t.Fatal(err)
			}
			want[id] = true
		}
		sched := claim.New(s, clock, claim.Config{Namespace: ns, Spread: func(l model.LaneID) bool { return l == spreadLane }})
		cur := &claim.Cursor{}
		const bound = 8 + 256/32
		calls := 0
		for ; calls < bound && len(want) > 0; calls++ {
			out, err := sched.Claim(bg, &claim.Request{
				Lanes: []model.LaneID{spreadLane}, WorkerID: "w", WorkerInstanceID: "w-1",
				LeaseTTL: time.Minute, Cursor: cur,
				NewIDs: func() (model.LeaseID, model.AttemptID) { return sq.lease(), sq.attempt() },
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Claimed != nil {
				delete(want, out.Claimed.ID)
			}
			clock.Advance(5 * time.Second) // the idle poll interval
		}
		if len(want) > 0 {
			t.Fatalf("%d of 8 jobs not claimed after %d polls: %v", len(want), calls, want)
		}
	})
}

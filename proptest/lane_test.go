package proptest

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// laneStepViolations flags a lease acquired on a lane paused before and
// after the step, and nothing else: not one on a lane resumed (or paused)
// within the step, nor an unchanged epoch on a paused lane.
func TestLaneStepViolations(t *testing.T) {
	t.Parallel()
	id := model.NewExecutionID(0, model.NewUUIDv4([16]byte{15: 1}))
	obs := func(epoch uint64, paused bool) *Observation {
		return &Observation{
			Now:   startTime,
			Execs: map[model.ExecutionID]*ExecObservation{id: {Snapshot: &model.ExecutionSnapshot{ID: id, Lane: "alpha", LeaseEpoch: epoch}}},
			Lanes: map[model.LaneID]model.LaneState{"alpha": {Lane: "alpha", Paused: paused, PausedAt: startTime.Add(-time.Second)}},
		}
	}
	for _, c := range []struct {
		name           string
		prev, cur      *Observation
		wantViolations int
	}{
		{"claimed while paused", obs(1, true), obs(2, true), 1},
		{"claimed after a resume", obs(1, true), obs(2, false), 0},
		{"claimed before a pause", obs(1, false), obs(2, true), 0},
		{"paused, not claimed", obs(1, true), obs(1, true), 0},
	} {
		if got := laneStepViolations(c.prev, c.cur); len(got) != c.wantViolations {
			t.Errorf("%s: %q, want %d violation(s)", c.name, got, c.wantViolations)
		}
	}
}

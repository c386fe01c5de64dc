package valkeystore

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// A pause or resume that stopped part-way (here: made by running the
// per-partition steps by hand) shows in LaneState's Partitions; the
// partitions holding the flag refuse claims and the others do not; and
// retrying either operation finishes it: a pause keeps the home
// partition's time and reason and copies them everywhere, a resume clears
// every partition and reports the lane was paused.
func TestLanePausePartial(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, &Options{Partitions: model.PartitionConfig{FlowPartitions: 8}})
		const l model.LaneID = "partial"
		home := s.cfg.SoloPartition(l)
		other := (home + 1) % 8
		t0 := time.UnixMilli(1_700_000_000_000).UTC()
		state := func() model.LaneState {
			t.Helper()
			r, err := s.LaneState(bg, &model.LaneStateParams{Lane: l})
			if err != nil {
				t.Fatal(err)
			}
			return r.LaneState
		}
		claimNext := func(part int) *model.ExecutionClaimNextResult {
			t.Helper()
			r, err := s.ExecutionClaimNext(bg, &model.ExecutionClaimNextParams{Partition: part, Lane: l, ScanLimit: 1,
				LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{1})),
					AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{2})), LeaseTTL: time.Minute}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		step := func(sc *script, part int, a args) {
			t.Helper()
			a["lane"] = l
			if _, err := s.run(bg, sc, s.keys.partKeys(part), a); err != nil {
				t.Fatal(err)
			}
		}

		// A pause that wrote only its home partition.
		step(scriptLanePause, home, args{"state": laneFlag(t0, "first"), "home": true})
		want := model.LaneState{Lane: l, Paused: true, PausedAt: t0, Reason: "first", Partitions: 1}
		if got := state(); got != want {
			t.Fatalf("after a pause of the home partition only: %+v, want %+v", got, want)
		}
		if !claimNext(home).Paused || claimNext(other).Paused {
			t.Fatal("the home partition must refuse claims, the others not yet")
		}
		// Retried (later, with another reason): the first pause stays, everywhere.
		r, err := s.LanePause(bg, &model.LanePauseParams{Lane: l, Reason: "retry", Now: t0.Add(time.Minute)})
		want.Partitions = 8
		if err != nil || !r.AlreadyPaused || r.State != want {
			t.Fatalf("retried pause: %+v %v, want already paused, %+v", r, err, want)
		}
		if got := state(); got != want || !claimNext(other).Paused {
			t.Fatalf("after the retried pause: %+v, want %+v and claims refused everywhere", got, want)
		}

		// A resume that cleared some partitions but not the home one.
		step(scriptLaneResume, other, args{"home": false})
		want.Partitions = 7
		if got := state(); got != want {
			t.Fatalf("after a resume of one partition: %+v, want %+v", got, want)
		}
		if claimNext(other).Paused || !claimNext(home).Paused {
			t.Fatal("the resumed partition must claim, the home one not yet")
		}
		rr, err := s.LaneResume(bg, &model.LaneResumeParams{Lane: l, Now: t0.Add(2 * time.Minute)})
		if err != nil || !rr.WasPaused {
			t.Fatalf("retried resume: %+v %v, want WasPaused", rr, err)
		}
		if got := state(); got != (model.LaneState{Lane: l}) || claimNext(home).Paused {
			t.Fatalf("after the retried resume: %+v", got)
		}

		// A resume that cleared the home partition only (out of order) is
		// finished by a resume too; a pause would re-pause every partition.
		if _, err := s.LanePause(bg, &model.LanePauseParams{Lane: l, Reason: "again", Now: t0.Add(3 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		step(scriptLaneResume, home, args{"home": true})
		if got := state(); got.Paused || got.Partitions != 7 {
			t.Fatalf("after clearing the home partition only: %+v", got)
		}
		if rr, err := s.LaneResume(bg, &model.LaneResumeParams{Lane: l, Now: t0.Add(4 * time.Minute)}); err != nil || rr.WasPaused {
			t.Fatalf("resume after the home partition was cleared: %+v %v", rr, err)
		}
		if got := state(); got != (model.LaneState{Lane: l}) {
			t.Fatalf("after the resume: %+v", got)
		}
	})
}

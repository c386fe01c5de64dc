package proptest

import (
	"context"
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Lane pause (model.LaneStore). The actions pause and resume the
// machine's lanes and read their state; the observation holds every
// lane's state, so the differential compares them; the invariants are
// that a lane is paused in every partition or in none (no call fails
// part-way here), and that no lease is acquired on a lane that stayed
// paused across the step (acquire checks each claim as it happens, too).

// observeLanes reads the state of opts.Lanes (nothing for a store without
// model.LaneStore).
func observeLanes(ctx context.Context, s model.Store, o *Observation, opts ObserveOptions) error {
	ls, ok := s.(model.LaneStore)
	if !ok || len(opts.Lanes) == 0 {
		return nil
	}
	o.Lanes = map[model.LaneID]model.LaneState{}
	for _, l := range opts.Lanes {
		r, err := ls.LaneState(ctx, &model.LaneStateParams{Lane: l})
		if err != nil {
			return fmt.Errorf("LaneState(%s): %w", l, err)
		}
		o.Lanes[l] = r.LaneState
	}
	return nil
}

// laneViolations checks each lane's state on its own: paused in every
// partition, with a time, or in none, with neither time nor reason.
func (o *Observation) laneViolations() []string {
	var out []string
	for l, st := range o.Lanes {
		switch {
		case st.Lane != l:
			out = append(out, fmt.Sprintf("lane %s: state names lane %s", l, st.Lane))
		case st.Paused && (st.Partitions != o.Partitions.FlowPartitions || st.PausedAt.IsZero() || st.PausedAt.After(o.Now)):
			out = append(out, fmt.Sprintf("lane %s: paused %+v, want every one of %d partitions and a past time", l, st, o.Partitions.FlowPartitions))
		case !st.Paused && (st.Partitions != 0 || !st.PausedAt.IsZero() || st.Reason != ""):
			out = append(out, fmt.Sprintf("lane %s: not paused, yet %+v", l, st))
		}
	}
	return out
}

// laneStepViolations: no execution of a lane paused before and after the
// step acquired a lease in it (its epoch rose).
func laneStepViolations(prev, cur *Observation) []string {
	var out []string
	for id, cx := range cur.Execs {
		px := prev.Execs[id]
		if px == nil || px.Snapshot == nil || cx.Snapshot == nil {
			continue
		}
		l := cx.Snapshot.Lane
		if cx.Snapshot.LeaseEpoch > px.Snapshot.LeaseEpoch && prev.Lanes[l].Paused && cur.Lanes[l].Paused {
			out = append(out, fmt.Sprintf("%v: claimed (epoch %d -> %d) on lane %s, paused throughout", id,
				px.Snapshot.LeaseEpoch, cx.Snapshot.LeaseEpoch, l))
		}
	}
	return out
}

// lanePaused reports whether lane was paused at the latest observation.
func (m *machine) lanePaused(lane model.LaneID) bool {
	return m.obs[0].Lanes[lane].Paused
}

// pausedLanes are the lanes paused at the latest observation.
func (m *machine) pausedLanes() []model.LaneID {
	var out []model.LaneID
	for _, l := range lanes {
		if m.lanePaused(l) {
			out = append(out, l)
		}
	}
	return out
}

// openLane resumes lane when it is paused, for a scenario that must claim
// on it, and observes store A.
func (m *machine) openLane(t *rapid.T, lane model.LaneID) {
	t.Helper()
	if !m.lanePaused(lane) {
		return
	}
	res := mustCall(m, t, "LaneResume", &model.LaneResumeParams{Lane: lane, Now: m.now()}, optional(model.LaneStore.LaneResume))
	m.expect(t, res.WasPaused, "LaneResume of paused lane %s: %+v", lane, res)
	m.observeQuiet(t)
}

// pauseLane pauses lane within a scenario and observes store A.
func (m *machine) pauseLane(t *rapid.T, lane model.LaneID) {
	t.Helper()
	mustCall(m, t, "LanePause", &model.LanePauseParams{Lane: lane, Reason: "scenario", Now: m.now()}, optional(model.LaneStore.LanePause))
	m.observeQuiet(t)
}

// actLaneScenario pauses a lane, then drives its claim paths: a worker
// completing an execution of the lane asks for its next one there (the
// completion applies, the next claim reports Paused), a claim-next on the
// lane's partition reports Paused (predicted), a grant-and-claim of its
// waiting work is refused with lane_paused; then it sometimes resumes.
func (m *machine) actLaneScenario(t *rapid.T) {
	lane := drawFrom(t, lanes, "scenario_lane")
	if !m.lanePaused(lane) {
		m.pauseLane(t, lane)
	}
	of := func(want func(*model.ExecutionSnapshot) bool) []*model.ExecutionSnapshot {
		var out []*model.ExecutionSnapshot
		for _, r := range m.execs {
			if s := m.snap(r.id); s != nil && s.Lane == lane && want(s) {
				out = append(out, s)
			}
		}
		return out
	}
	running := of(func(s *model.ExecutionSnapshot) bool {
		return s.State.LifecyclePhase == model.PhaseActive && m.predictFenced(s, currentFence(s)) == nil
	})
	w := drawFrom(t, workerPool, "scenario_worker")
	if len(running) > 0 {
		s := drawFrom(t, running, "scenario_running")
		p := &model.ExecutionCompleteParams{ID: s.ID, Fence: currentFence(s), Source: model.SourceWorker, Now: m.now(),
			Next: &model.NextClaim{Lane: lane, Capabilities: capUniverse, LiveCapabilities: capUniverse, ScanLimit: 4, LeaseRequest: m.leaseRequest(t, w)}}
		res := mustCall(m, t, "ExecutionComplete", p, model.Store.ExecutionComplete)
		m.expect(t, !res.Replayed && res.Next != nil && res.Next.Paused && res.Next.Claimed == nil && res.Next.Admit == nil,
			"ExecutionComplete with a next claim on paused lane %s: %+v", lane, res.Next)
		m.observeQuiet(t)
	}
	p := &model.ExecutionClaimNextParams{Partition: m.cfg.SoloPartition(lane), Lane: lane, Namespace: drawClaimNamespace(t),
		Capabilities: capUniverse, LiveCapabilities: capUniverse, ScanLimit: 4, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	m.claimNext(t, p, w, -1)
	// (a grant, even an expired one, is left alone: grant_already_exists
	// comes first while it lives)
	if waiting := of(func(s *model.ExecutionSnapshot) bool { return isEligible(s) && s.Grant == nil }); len(waiting) > 0 {
		s := drawFrom(t, waiting, "scenario_waiting")
		g := &model.ExecutionGrantAndClaimParams{ID: s.ID, Capabilities: capUniverse, AdmissionToken: m.freshToken(),
			LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
		_, err := call(m, t, "ExecutionGrantAndClaim", g, model.Store.ExecutionGrantAndClaim)
		m.expect(t, model.CodeOf(err) == model.CodeLanePaused, "ExecutionGrantAndClaim on paused lane %s: %v, want lane_paused", lane, err)
	}
	if chance(t, 50, "scenario_resume") {
		m.openLane(t, lane)
	}
}

func (m *machine) actLanePause(t *rapid.T) {
	p := &model.LanePauseParams{Lane: drawFrom(t, lanes, "lane"), Reason: drawFrom(t, reasons, "reason"), Now: m.now()}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Lane = ""
	case 1:
		p.Lane = "has space"
	case 2:
		p.Reason = "\xff"
	case 3:
		p.Now = time.Time{}
	}
	prev := m.obs[0].Lanes[p.Lane]
	res, err := call(m, t, "LanePause", p, optional(model.LaneStore.LanePause))
	if bad >= 0 {
		m.expectValidation(t, "LanePause", err)
		return
	}
	m.expect(t, err == nil, "LanePause with valid input failed: %v", err)
	want := model.LanePauseResult{AlreadyPaused: prev.Paused, State: prev}
	if !prev.Paused {
		want.State = model.LaneState{Lane: p.Lane, Paused: true, PausedAt: p.Now, Reason: p.Reason, Partitions: m.cfg.FlowPartitions}
	}
	m.expect(t, cmpEqual(*res, want), "LanePause(%s): %+v, want %+v", p.Lane, *res, want)
}

func (m *machine) actLaneResume(t *rapid.T) {
	p := &model.LaneResumeParams{Lane: drawFrom(t, lanes, "lane"), Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Lane = ""
	case 1:
		p.Now = time.Time{}
	}
	was := m.lanePaused(p.Lane)
	res, err := call(m, t, "LaneResume", p, optional(model.LaneStore.LaneResume))
	if bad >= 0 {
		m.expectValidation(t, "LaneResume", err)
		return
	}
	m.expect(t, err == nil && res.WasPaused == was, "LaneResume(%s): %+v %v, want WasPaused %v", p.Lane, res, err, was)
}

func (m *machine) actLaneState(t *rapid.T) {
	p := &model.LaneStateParams{Lane: drawFrom(t, lanes, "lane")}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Lane = "has space"
	}
	res, err := call(m, t, "LaneState", p, optional(model.LaneStore.LaneState))
	if bad >= 0 {
		m.expectValidation(t, "LaneState", err)
		return
	}
	want := m.obs[0].Lanes[p.Lane]
	m.expect(t, err == nil && cmpEqual(res.LaneState, want), "LaneState(%s): %+v %v, observed %+v", p.Lane, res, err, want)
}

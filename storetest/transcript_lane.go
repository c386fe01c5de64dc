package storetest

import (
	"fmt"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

// laneStore is the store's LaneStore; without one the transcript skips.
func (r *transcriptRun) laneStore() model.LaneStore {
	var s model.Store = r.s
	if p, ok := r.s.(*partialStore); ok {
		s = p.Store
	}
	ls, ok := s.(model.LaneStore)
	if !ok {
		r.t.Skipf("storetest: %T does not implement the optional model.LaneStore", r.s)
	}
	return ls
}

// doLane runs a lane command (pause-lane, resume-lane, lane-state, each
// naming one lane); ok is false for other commands.
func (r *transcriptRun) doLane(cmd string, a *args) (out string, ok bool, err error) {
	switch cmd {
	case "pause-lane", "resume-lane", "lane-state":
	default:
		return "", false, nil
	}
	if len(a.pos) != 1 {
		return "", true, fmt.Errorf("%s takes one lane, got %q", cmd, a.pos)
	}
	ls, lane := r.laneStore(), model.LaneID(a.pos[0])
	switch cmd {
	case "pause-lane":
		res, err := ls.LanePause(r.ctx, &model.LanePauseParams{Lane: lane, Reason: a.str("reason", ""), Now: r.now})
		if err != nil {
			return "", true, err
		}
		return "already_paused=" + strconv.FormatBool(res.AlreadyPaused) + " " + r.fmtLane(res.State), true, nil
	case "resume-lane":
		res, err := ls.LaneResume(r.ctx, &model.LaneResumeParams{Lane: lane, Now: r.now})
		if err != nil {
			return "", true, err
		}
		return "was_paused=" + strconv.FormatBool(res.WasPaused), true, nil
	}
	res, err := ls.LaneState(r.ctx, &model.LaneStateParams{Lane: lane})
	if err != nil {
		return "", true, err
	}
	return r.fmtLane(res.LaneState), true, nil
}

// fmtLane prints a lane's state whatever the partition count: the
// partitions refusing claims as all or none.
func (r *transcriptRun) fmtLane(st model.LaneState) string {
	parts := strconv.Itoa(st.Partitions)
	switch st.Partitions {
	case r.cfg.FlowPartitions:
		parts = "all"
	case 0:
		parts = "none"
	}
	if !st.Paused {
		return fmt.Sprintf("%s: not paused, partitions=%s", st.Lane, parts)
	}
	return fmt.Sprintf("%s: paused since %s reason=%q partitions=%s", st.Lane, r.rel(st.PausedAt), st.Reason, parts)
}

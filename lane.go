package flowfabric

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// LaneState is whether a lane is paused, since when and why (see
// Engine.PauseLane).
type LaneState = model.LaneState

// ErrLanePaused: the execution's lane is paused, so no attempt of it
// starts (a claim by id: Worker.ClaimGrant, Work) until the lane is
// resumed. Workers claiming a paused lane get nothing and idle.
var ErrLanePaused = model.ErrLanePaused

// PauseLane pauses lane for every process and namespace sharing the store:
// from the call's return no attempt of the lane starts, in any partition,
// until ResumeLane. Workers claiming it get nothing and idle (they do not
// poll faster); attempts already running are not touched and finish,
// renew, fail or retry as usual (a retry waits for the resume). Work keeps
// arriving (submissions, delays coming due, recoveries) and waits in the
// lane's eligible order; nothing is lost or reordered.
//
// It returns the lane's state and whether it was paused already. Pausing
// a paused lane changes nothing: the state returned is the first pause's,
// with the same time and reason. reason is free text for
// operators (at most model.MaxReasonBytes of UTF-8). The call is
// idempotent, so an error (a connection lost part-way on a store that
// writes partitions one by one) is fixed by calling it again.
func (e *Engine) PauseLane(ctx context.Context, lane LaneID, reason string) (st *LaneState, alreadyPaused bool, err error) {
	ls, err := e.laneStore()
	if err != nil {
		return nil, false, wrap("pause lane", err)
	}
	r, err := ls.LanePause(ctx, &model.LanePauseParams{Lane: lane, Reason: reason, Now: e.clock.Now()})
	if err != nil {
		return nil, false, wrap("pause lane", err)
	}
	s := r.State
	return &s, r.AlreadyPaused, nil
}

// ResumeLane resumes a paused lane: its waiting work is claimable at once
// and every idle worker of the lane, in any process, is woken to claim it
// (on stores that notify; others wait for their next poll). It reports
// whether the lane was paused; resuming a lane that is not paused changes
// nothing. Like PauseLane it is idempotent: retry it after an error.
func (e *Engine) ResumeLane(ctx context.Context, lane LaneID) (wasPaused bool, err error) {
	ls, err := e.laneStore()
	if err != nil {
		return false, wrap("resume lane", err)
	}
	r, err := ls.LaneResume(ctx, &model.LaneResumeParams{Lane: lane, Now: e.clock.Now()})
	if err != nil {
		return false, wrap("resume lane", err)
	}
	if _, ok := e.store.(model.WorkNotifier); !ok {
		e.workArrived(lane, model.PartitionAll, -1) // this process's workers, at least
	}
	return r.WasPaused, nil
}

// LaneState reads whether lane is paused. Partitions counts the partitions
// that refuse claims on it: all of them when paused, none otherwise, and
// anything in between only after a PauseLane or ResumeLane that failed
// part-way (call it again to finish).
func (e *Engine) LaneState(ctx context.Context, lane LaneID) (*LaneState, error) {
	ls, err := e.laneStore()
	if err != nil {
		return nil, wrap("lane state", err)
	}
	r, err := ls.LaneState(ctx, &model.LaneStateParams{Lane: lane})
	if err != nil {
		return nil, wrap("lane state", err)
	}
	st := r.LaneState
	return &st, nil
}

// laneStore returns the store's LaneStore.
func (e *Engine) laneStore() (model.LaneStore, error) {
	ls, ok := e.store.(model.LaneStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store", Detail: "no_lane_support",
			Want: "a store implementing model.LaneStore (memstore, valkeystore)"}
	}
	return ls, nil
}

package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// lanePause is a paused lane's state (model.LaneStore). memstore changes
// every partition in one step, so a lane is paused everywhere or nowhere.
type lanePause struct {
	at     int64
	reason string
}

// LanePause implements model.LaneStore.
func (s *Store) LanePause(ctx context.Context, p *model.LanePauseParams) (*model.LanePauseResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.LanePauseResult, error) {
		lp := s.paused[p.Lane]
		already := lp != nil
		if !already {
			lp = &lanePause{at: ms(p.Now), reason: p.Reason}
			s.paused[p.Lane] = lp
		}
		return &model.LanePauseResult{AlreadyPaused: already, State: s.laneState(p.Lane)}, nil
	})
}

// LaneResume implements model.LaneStore. Watchers of the lane are told
// with model.PartitionAll, paused or not: a resume retried after a
// failure must still wake them.
func (s *Store) LaneResume(ctx context.Context, p *model.LaneResumeParams) (*model.LaneResumeResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.LaneResumeResult, error) {
		was := s.lanePaused(p.Lane)
		delete(s.paused, p.Lane)
		s.notifyLane(p.Lane, model.PartitionAll)
		return &model.LaneResumeResult{WasPaused: was}, nil
	})
}

// LaneState implements model.LaneStore.
func (s *Store) LaneState(ctx context.Context, p *model.LaneStateParams) (*model.LaneStateResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.LaneStateResult, error) {
		return &model.LaneStateResult{LaneState: s.laneState(p.Lane)}, nil
	})
}

func (s *Store) laneState(lane model.LaneID) model.LaneState {
	st := model.LaneState{Lane: lane}
	if lp := s.paused[lane]; lp != nil {
		st.Paused, st.PausedAt, st.Reason, st.Partitions = true, tm(lp.at), lp.reason, s.cfg.FlowPartitions
	}
	return st
}

package valkeystore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Lane pause (model.LaneStore). A paused lane has the flag
// I:lane:<L>:paused ("<at ms>|<reason>") in every partition, so the claim
// scripts (lib/claim.lua lane_paused) read it on their own slot with one
// EXISTS. The partitions are written one script each, pipelined: the
// lane's home partition (its solo partition) first on a pause, where the
// first pause's value wins and is then copied to the others, and last on
// a resume, whose home step publishes the wake-up. A pause or resume that
// failed part-way leaves the home partition saying what was asked last
// that got that far; retrying either operation finishes it (each step is
// idempotent), and LaneState counts the partitions that hold the flag.

// LanePause implements model.LaneStore.
func (s *Store) LanePause(ctx context.Context, p *model.LanePauseParams) (*model.LanePauseResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	home := s.cfg.SoloPartition(p.Lane)
	r, err := s.run(ctx, scriptLanePause, s.keys.partKeys(home), args{
		"lane": p.Lane, "state": laneFlag(p.Now, p.Reason), "home": true,
	})
	if err != nil {
		return nil, err
	}
	flag, already := r.str("state"), r.int("already") == 1
	if err := r.err(); err != nil {
		return nil, err
	}
	st, err := parseLaneFlag(p.Lane, flag)
	if err != nil {
		return nil, err
	}
	if _, err := s.runEach(ctx, scriptLanePause, s.laneCalls(p.Lane, home, args{"state": flag, "home": false})); err != nil {
		return nil, fmt.Errorf("valkeystore: lane pause: %w (the lane's home partition is paused; retry to pause the rest)", err)
	}
	st.Paused, st.Partitions = true, s.cfg.FlowPartitions
	return &model.LanePauseResult{AlreadyPaused: already, State: st}, nil
}

// LaneResume implements model.LaneStore.
func (s *Store) LaneResume(ctx context.Context, p *model.LaneResumeParams) (*model.LaneResumeResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	home := s.cfg.SoloPartition(p.Lane)
	if _, err := s.runEach(ctx, scriptLaneResume, s.laneCalls(p.Lane, home, args{"home": false})); err != nil {
		return nil, fmt.Errorf("valkeystore: lane resume: %w (the lane is still paused; retry to resume it)", err)
	}
	r, err := s.run(ctx, scriptLaneResume, s.keys.partKeys(home), args{"lane": p.Lane, "home": true})
	if err != nil {
		return nil, err
	}
	res := &model.LaneResumeResult{WasPaused: r.int("was") == 1}
	return res, r.err()
}

// LaneState implements model.LaneStore: the home partition's flag, and how
// many partitions hold one.
func (s *Store) LaneState(ctx context.Context, p *model.LaneStateParams) (*model.LaneStateResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	calls := make([]scriptCall, s.cfg.FlowPartitions)
	for i := range calls {
		calls[i] = scriptCall{keys: s.keys.partKeys(i), args: args{"lane": p.Lane}}
	}
	rs, err := s.runEach(ctx, scriptLaneState, calls)
	if err != nil {
		return nil, err
	}
	res := &model.LaneStateResult{LaneState: model.LaneState{Lane: p.Lane}}
	home := s.cfg.SoloPartition(p.Lane)
	for i, r := range rs {
		if r.int("paused") == 0 {
			continue
		}
		res.Partitions++
		if i == home {
			st, err := parseLaneFlag(p.Lane, r.str("state"))
			if err != nil {
				return nil, err
			}
			res.Paused, res.PausedAt, res.Reason = true, st.PausedAt, st.Reason
		}
		if err := r.err(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// laneCalls are the calls of a lane script on every partition but home,
// with the lane and a's arguments.
func (s *Store) laneCalls(lane model.LaneID, home int, a args) []scriptCall {
	calls := make([]scriptCall, 0, s.cfg.FlowPartitions-1)
	for i := range s.cfg.FlowPartitions {
		if i == home {
			continue
		}
		ca := args{"lane": lane}
		for k, v := range a {
			ca[k] = v
		}
		calls = append(calls, scriptCall{keys: s.keys.partKeys(i), args: ca})
	}
	return calls
}

// laneFlag is the value of a lane's pause flag.
func laneFlag(at time.Time, reason string) string {
	return strconv.FormatInt(at.UnixMilli(), 10) + "|" + reason
}

// parseLaneFlag reads a lane's pause flag.
func parseLaneFlag(lane model.LaneID, flag string) (model.LaneState, error) {
	at, reason, ok := strings.Cut(flag, "|")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return model.LaneState{}, fmt.Errorf("valkeystore: lane %s: %w: malformed pause flag %q", lane, model.ErrCorrupt, flag)
	}
	return model.LaneState{Lane: lane, Paused: true, PausedAt: model.FromMillis(n), Reason: reason}, nil
}

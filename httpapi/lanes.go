package httpapi

import (
	"net/http"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Lane pause: POST /v1/lanes/{lane}/pause (body {"reason": "..."},
// optional), POST /v1/lanes/{lane}/resume (no body, or {}) and
// GET /v1/lanes/{lane}; each answers the lane's state (see
// flowfabric.Engine.PauseLane).

// laneView is a lane's pause state.
type laneView struct {
	Lane     string   `json:"lane"`
	Paused   bool     `json:"paused"`
	PausedAt jsonTime `json:"paused_at,omitzero"`
	Reason   string   `json:"reason,omitempty"`
	// Partitions counts the partitions that refuse claims on the lane
	// (all when paused, none otherwise; in between only after a pause or
	// resume that failed part-way: repeat it).
	Partitions int `json:"partitions"`
	// AlreadyPaused is set by pause: the lane was paused before (the
	// state is that earlier pause's).
	AlreadyPaused *bool `json:"already_paused,omitempty"`
	// WasPaused is set by resume.
	WasPaused *bool `json:"was_paused,omitempty"`
}

func viewLane(s *flowfabric.LaneState) laneView {
	return laneView{Lane: string(s.Lane), Paused: s.Paused, PausedAt: jsonTime(s.PausedAt), Reason: s.Reason, Partitions: s.Partitions}
}

type pauseRequest struct {
	Reason string `json:"reason"`
}

func (a *api) pauseLane(w http.ResponseWriter, r *http.Request) error {
	lane := model.LaneID(r.PathValue("lane"))
	var req pauseRequest
	if err := decodeBody(w, r, a.maxControl, &req, false); err != nil {
		return err
	}
	s, already, err := a.e.PauseLane(r.Context(), lane, req.Reason)
	if err != nil {
		return err
	}
	v := viewLane(s)
	v.AlreadyPaused = &already
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (a *api) resumeLane(w http.ResponseWriter, r *http.Request) error {
	lane := model.LaneID(r.PathValue("lane"))
	var req struct{}
	if err := decodeBody(w, r, a.maxControl, &req, false); err != nil {
		return err
	}
	was, err := a.e.ResumeLane(r.Context(), lane)
	if err != nil {
		return err
	}
	s, err := a.e.LaneState(r.Context(), lane)
	if err != nil {
		return err
	}
	v := viewLane(s)
	v.WasPaused = &was
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (a *api) lane(w http.ResponseWriter, r *http.Request) error {
	s, err := a.e.LaneState(r.Context(), model.LaneID(r.PathValue("lane")))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewLane(s))
	return nil
}

package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

type laneState struct {
	Lane          string `json:"lane"`
	Paused        bool   `json:"paused"`
	PausedAt      string `json:"paused_at"`
	Reason        string `json:"reason"`
	Partitions    int    `json:"partitions"`
	AlreadyPaused *bool  `json:"already_paused"`
	WasPaused     *bool  `json:"was_paused"`
}

func TestLanePauseResume(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	parts := h.Engine.Partitions()

	if st := ok[laneState](c, http.StatusOK, "GET", "/v1/lanes/emails", ""); st != (laneState{Lane: "emails"}) {
		t.Fatalf("a lane never paused: %+v", st)
	}
	st := ok[laneState](c, http.StatusOK, "POST", "/v1/lanes/emails/pause", `{"reason":"deploy"}`)
	if !st.Paused || st.Reason != "deploy" || !msTime.MatchString(st.PausedAt) || st.Partitions != parts ||
		st.AlreadyPaused == nil || *st.AlreadyPaused || st.WasPaused != nil {
		t.Fatalf("pause: %+v", st)
	}
	first := st
	h.Advance(time.Second)
	st = ok[laneState](c, http.StatusOK, "POST", "/v1/lanes/emails/pause", "")
	if st.AlreadyPaused == nil || !*st.AlreadyPaused || st.PausedAt != first.PausedAt || st.Reason != "deploy" {
		t.Fatalf("second pause: %+v, first %+v", st, first)
	}
	first.AlreadyPaused = nil
	if got := ok[laneState](c, http.StatusOK, "GET", "/v1/lanes/emails", ""); got != first {
		t.Fatalf("state: %+v, want %+v", got, first)
	}
	if got := ok[laneState](c, http.StatusOK, "GET", "/v1/lanes/other", ""); got.Paused {
		t.Fatalf("another lane: %+v", got)
	}

	// Bad input changes nothing.
	c.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/lanes/bad%20lane/pause", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/lanes/bad%20lane", "")
	c.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/lanes/bad%20lane/resume", "")
	c.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/lanes/emails/pause",
		`{"reason":"`+strings.Repeat("x", model.MaxReasonBytes+1)+`"}`)
	c.fails(http.StatusBadRequest, "bad_request", "POST", "/v1/lanes/emails/pause", `{"reasn":"typo"}`)
	c.fails(http.StatusBadRequest, "bad_request", "POST", "/v1/lanes/emails/resume", `{"reason":"x"}`)
	c.fails(http.StatusMethodNotAllowed, "method_not_allowed", "GET", "/v1/lanes/emails/pause", "")
	if got := ok[laneState](c, http.StatusOK, "GET", "/v1/lanes/emails", ""); got != first {
		t.Fatalf("state after refused requests: %+v, want %+v", got, first)
	}

	st = ok[laneState](c, http.StatusOK, "POST", "/v1/lanes/emails/resume", "")
	if st.Paused || st.Partitions != 0 || st.PausedAt != "" || st.Reason != "" || st.WasPaused == nil || !*st.WasPaused {
		t.Fatalf("resume: %+v", st)
	}
	st = ok[laneState](c, http.StatusOK, "POST", "/v1/lanes/emails/resume", `{}`)
	if st.WasPaused == nil || *st.WasPaused {
		t.Fatalf("second resume: %+v", st)
	}
}

type countsResp struct {
	Rows []struct {
		Namespace, Lane, Kind, State string
		Count                        int64
	} `json:"rows"`
	ByState map[string]int64 `json:"by_state"`
	Total   int64            `json:"total"`
}

type lanesResp struct {
	Lanes []struct {
		Lane     string           `json:"lane"`
		Counts   map[string]int64 `json:"counts"`
		Backlog  int64            `json:"backlog"`
		Workers  int              `json:"workers"`
		Unserved bool             `json:"unserved"`
		Paused   bool             `json:"paused"`
	} `json:"lanes"`
}

// TestCountsAndLanes reads the counters and the lane listing over HTTP.
func TestCountsAndLanes(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	c := newClient(t, h.Engine, nil)
	for _, lane := range []string{"emails", "emails", "reports"} {
		ok[map[string]any](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"send","lane":"`+lane+`","payload":{}}`)
	}
	got := ok[countsResp](c, http.StatusOK, "GET", "/v1/counts", "")
	if got.Total != 3 || got.ByState["waiting"] != 3 || len(got.Rows) != 2 || got.Rows[0].Lane != "emails" || got.Rows[0].Count != 2 ||
		got.Rows[0].State != "waiting" || got.Rows[0].Kind != "send" {
		t.Fatalf("counts: %+v", got)
	}
	if got := ok[countsResp](c, http.StatusOK, "GET", "/v1/counts?lane=reports&kind=send", ""); got.Total != 1 {
		t.Fatalf("counts of lane reports: %+v", got)
	}
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/counts?lane=bad%20lane", "")
	ok[laneState](c, http.StatusOK, "POST", "/v1/lanes/reports/pause", "")
	ls := ok[lanesResp](c, http.StatusOK, "GET", "/v1/lanes", "")
	if len(ls.Lanes) != 2 || ls.Lanes[0].Lane != "emails" || ls.Lanes[0].Backlog != 2 || !ls.Lanes[0].Unserved ||
		ls.Lanes[0].Workers != 0 || ls.Lanes[0].Paused || ls.Lanes[1].Lane != "reports" || !ls.Lanes[1].Paused ||
		ls.Lanes[1].Counts["waiting"] != 1 {
		t.Fatalf("lanes: %+v", ls)
	}
}

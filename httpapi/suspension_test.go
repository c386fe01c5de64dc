package httpapi_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/model"
)

// gate suspends until one signal named "go" arrives, then stores its
// payload.
type gate struct{}

func (gate) Kind() string { return "gate" }

type waitpointsBody struct {
	Waitpoints []struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Token string `json:"token"`
	} `json:"waitpoints"`
}

type signalBody struct {
	Signal    string `json:"signal"`
	Effect    string `json:"effect"`
	Ignored   string `json:"ignored"`
	State     string `json:"state"`
	Execution string `json:"execution"`
	Waitpoint string `json:"waitpoint"`
}

// A third party delivers a signal with nothing but the token (no API
// token); an operator reads the suspension and the suspended list and can
// resume.
func TestSignalsOverHTTP(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[gate]) error {
		if !t.Resumed {
			return flowfabric.Suspend(flowfabric.SignalFor("go"), &flowfabric.SuspendOpts{Reason: flowfabric.SuspendForCallback})
		}
		sigs, err := t.Signals(ctx)
		if err != nil || len(sigs) == 0 {
			return flowfabric.Permanent(err)
		}
		return t.SetResult(sigs[len(sigs)-1].Payload)
	}))
	h.StartWorker(w)
	op := newClient(t, h.Engine, &httpapi.Options{Token: "operator-secret"})
	anon := &client{t: t, h: op.h} // no bearer token

	s := ok[submitted](op, http.StatusCreated, "POST", "/v1/executions", `{"kind":"gate","payload":{}}`)
	id := model.MustParseExecutionID(s.ID)
	h.WaitSuspended(id)

	// The operator's reads: the suspended list, the suspension, the
	// waitpoints with their tokens (the reads need the bearer token).
	anon.fails(http.StatusUnauthorized, "unauthorized", "GET", ep(s.ID, "/waitpoints"), "")
	list := ok[map[string]any](op, http.StatusOK, "GET", "/v1/suspended?partition="+strconv.Itoa(id.Partition()), "")
	if entries, _ := list["suspended"].([]any); len(entries) != 1 || entries[0].(map[string]any)["id"] != s.ID ||
		entries[0].(map[string]any)["reason"] != "callback" {
		t.Fatalf("suspended list: %v", list)
	}
	susp := ok[map[string]any](op, http.StatusOK, "GET", ep(s.ID, "/suspension"), "")
	if susp["reason"] != "callback" || susp["closed_at"] != nil || susp["condition"].(map[string]any)["name"] != "go" {
		t.Fatalf("suspension: %v", susp)
	}
	desc := ok[map[string]any](op, http.StatusOK, "GET", ep(s.ID), "")
	if cur, _ := desc["suspension"].(map[string]any); cur == nil || cur["current_waitpoint"] != susp["waitpoint"] || cur["reason"] != "callback" {
		t.Fatalf("describe of a suspended execution: suspension %v", desc["suspension"])
	}
	wps := ok[waitpointsBody](op, http.StatusOK, "GET", ep(s.ID, "/waitpoints"), "")
	if len(wps.Waitpoints) != 1 || wps.Waitpoints[0].State != "active" || wps.Waitpoints[0].Token == "" {
		t.Fatalf("waitpoints: %+v", wps)
	}
	tok := wps.Waitpoints[0].Token

	// Deliveries: a bad token is 403 and says nothing; a signal no part
	// of the condition reads is ignored; the right one resumes.
	bad := anon.fails(http.StatusForbidden, "invalid_token", "POST", "/v1/signals", `{"token":"ffw1.AAAA","name":"go"}`)
	if strings.Contains(bad.Error, "waitpoint") && strings.Contains(bad.Error, s.ID) {
		t.Fatalf("a refused token's error names the execution: %q", bad.Error)
	}
	ign := ok[signalBody](anon, http.StatusOK, "POST", "/v1/signals", `{"token":"`+tok+`","name":"stop"}`)
	if ign.Effect != "ignored" || ign.Ignored != "not_in_condition" || ign.Execution != s.ID {
		t.Fatalf("ignored signal: %+v", ign)
	}
	payload := base64.StdEncoding.EncodeToString([]byte{0, 1, 2})
	res := ok[signalBody](anon, http.StatusOK, "POST", "/v1/signals",
		`{"token":"`+tok+`","name":"go","source":"ci:build-7","payload_base64":"`+payload+`","idempotency_key":"k1","dedup_ttl":"1h"}`)
	if res.Effect != "resumed" || res.State != "waiting" {
		t.Fatalf("resuming signal: %+v", res)
	}
	dup := ok[signalBody](anon, http.StatusOK, "POST", "/v1/signals", `{"token":"`+tok+`","name":"go","idempotency_key":"k1"}`)
	if dup.Effect != "duplicate" || dup.Signal != res.Signal {
		t.Fatalf("redelivery: %+v, want a duplicate of %s", dup, res.Signal)
	}
	h.WaitTerminal(id)
	anon.fails(http.StatusGone, "waitpoint_closed", "POST", "/v1/signals", `{"token":"`+tok+`","name":"go"}`)
	anon.fails(http.StatusBadRequest, "bad_request", "POST", "/v1/signals", `{"token":"`+tok+`","label":"go"}`)
	anon.fails(http.StatusBadRequest, "invalid_input", "POST", "/v1/signals", `{"token":"`+tok+`","dedup_ttl":"soon"}`)
	anon.fails(http.StatusRequestEntityTooLarge, "body_too_large", "POST", "/v1/signals",
		`{"token":"`+tok+`","payload_base64":"`+strings.Repeat("A", httpapi.DefaultMaxSignalBodyBytes)+`"}`)

	feed := ok[map[string]any](op, http.StatusOK, "GET", "/v1/signal-feed?partition="+strconv.Itoa(id.Partition())+"&after=1", "")
	if evs, _ := feed["events"].([]any); feed["last"] != float64(3) || len(evs) != 2 ||
		evs[0].(map[string]any)["effect"] != "resumed" || evs[1].(map[string]any)["effect"] != "duplicate" {
		t.Fatalf("signal feed after 1: %v", feed)
	}
	op.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/signal-feed?after=-1", "")

	// After the run: the closed suspension keeps its signals; a resume of
	// a finished execution is a conflict.
	closed := ok[map[string]any](op, http.StatusOK, "GET", ep(s.ID, "/suspension"), "")
	if closed["closed_by"] != "signal" || len(closed["signals"].([]any)) != 2 {
		t.Fatalf("closed suspension: %v", closed)
	}
	op.fails(http.StatusConflict, "execution_not_suspended", "POST", ep(s.ID, "/resume"), "")
	other := ok[submitted](op, http.StatusCreated, "POST", "/v1/executions", `{"kind":"nobody-handles-it"}`)
	op.fails(http.StatusNotFound, "suspension_not_found", "GET", ep(other.ID, "/suspension"), "")
}

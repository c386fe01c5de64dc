package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Suspension routes: signal delivery by token (open: the token is the
// credential), operator resume, and the reads an approval screen needs.

// DefaultMaxSignalBodyBytes caps the body of a signal delivery.
const DefaultMaxSignalBodyBytes = 256 << 10

// signalPath is the one route a token authenticates instead of the
// bearer token.
const signalPath = "/v1/signals"

// signalRequest is the body of POST /v1/signals.
type signalRequest struct {
	Token  string `json:"token"`
	Name   string `json:"name"`
	Source string `json:"source"`
	payloadJSON
	IdempotencyKey string `json:"idempotency_key"`
	// DedupTTL is a Go duration ("24h"; default 24h).
	DedupTTL string `json:"dedup_ttl"`
}

type signalResponse struct {
	Signal    string `json:"signal"`
	Effect    string `json:"effect"`
	Ignored   string `json:"ignored,omitempty"`
	State     string `json:"state"`
	Execution string `json:"execution"`
	Waitpoint string `json:"waitpoint"`
}

// deliverSignal delivers a signal with the token in the body. A refused
// token is 403 with nothing more said; a closed waitpoint 410.
func (a *api) deliverSignal(w http.ResponseWriter, r *http.Request) error {
	var req signalRequest
	if err := decodeBody(w, r, DefaultMaxSignalBodyBytes, &req, true); err != nil {
		return err
	}
	payload, err := req.bytes("")
	if err != nil {
		return err
	}
	ttl, err := parseDuration("dedup_ttl", req.DedupTTL)
	if err != nil {
		return err
	}
	d, err := a.e.DeliverSignal(r.Context(), req.Token, &flowfabric.SignalInput{
		Name: req.Name, Source: req.Source, Payload: payload, IdempotencyKey: req.IdempotencyKey, DedupTTL: ttl,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, signalResponse{
		Signal: d.Signal.String(), Effect: d.Effect.String(), Ignored: d.Ignored, State: d.State.String(),
		Execution: d.Execution.String(), Waitpoint: d.Waitpoint.String(),
	})
	return nil
}

type signalView struct {
	ID             string   `json:"id"`
	Waitpoint      string   `json:"waitpoint"`
	Name           string   `json:"name,omitempty"`
	Source         string   `json:"source,omitempty"`
	PayloadBase64  string   `json:"payload_base64,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	Effect         string   `json:"effect"`
	Ignored        string   `json:"ignored,omitempty"`
	DeliveredAt    jsonTime `json:"delivered_at"`
}

func viewSignals(sigs []flowfabric.SignalRecord) []signalView {
	out := make([]signalView, len(sigs))
	for i, s := range sigs {
		out[i] = signalView{
			ID: s.ID.String(), Waitpoint: s.Waitpoint.String(), Name: s.Name, Source: s.Source,
			IdempotencyKey: s.IdempotencyKey, Effect: s.Effect.String(), Ignored: s.IgnoredReason,
			DeliveredAt: jsonTime(s.DeliveredAt),
		}
		if len(s.Payload) > 0 {
			out[i].PayloadBase64 = base64.StdEncoding.EncodeToString(s.Payload)
		}
	}
	return out
}

type suspensionView struct {
	ID              string       `json:"id"`
	Execution       string       `json:"execution"`
	Attempt         int          `json:"attempt"`
	Reason          string       `json:"reason"`
	Condition       rawJSON      `json:"condition"`
	Waitpoint       string       `json:"waitpoint"`
	Waitpoints      []string     `json:"waitpoints"`
	SuspendedAt     jsonTime     `json:"suspended_at"`
	TimeoutAt       jsonTime     `json:"timeout_at,omitzero"`
	TimeoutBehavior string       `json:"timeout_behavior"`
	ResumeDelay     jsonDuration `json:"resume_delay,omitzero"`
	KeepWaitpoints  bool         `json:"keep_waitpoints,omitempty"`
	KeepSignals     bool         `json:"keep_signals,omitempty"`
	Escalated       bool         `json:"escalated,omitempty"`
	ClosedAt        jsonTime     `json:"closed_at,omitzero"`
	ClosedBy        string       `json:"closed_by,omitempty"`
	Signals         []signalView `json:"signals"`
}

// rawJSON is JSON written as is.
type rawJSON []byte

func (j rawJSON) MarshalJSON() ([]byte, error) { return j, nil }

func (a *api) suspension(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	s, err := a.e.Suspension(r.Context(), id)
	if err != nil {
		return err
	}
	cond, err := model.EncodeCondition(s.Condition)
	if err != nil {
		return err
	}
	v := suspensionView{
		ID: s.ID.String(), Execution: s.Execution.String(), Attempt: s.AttemptIndex, Reason: s.Reason.String(),
		Condition: cond, Waitpoint: s.Waitpoint.String(), SuspendedAt: jsonTime(s.SuspendedAt),
		TimeoutAt: jsonTime(s.TimeoutAt), TimeoutBehavior: s.TimeoutBehavior.String(),
		ResumeDelay: jsonDuration(s.Policy.Delay), KeepWaitpoints: s.Policy.KeepWaitpoints, KeepSignals: s.Policy.KeepSignals,
		Escalated: s.Escalated, ClosedAt: jsonTime(s.ClosedAt), Signals: viewSignals(s.Signals),
	}
	if s.ClosedBy != 0 {
		v.ClosedBy = s.ClosedBy.String()
	}
	for _, wp := range s.Waitpoints {
		v.Waitpoints = append(v.Waitpoints, wp.String())
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

type waitpointView struct {
	ID          string       `json:"id"`
	State       string       `json:"state"`
	CreatedAt   jsonTime     `json:"created_at"`
	ExpiresAt   jsonTime     `json:"expires_at,omitzero"`
	SignalLimit int          `json:"signal_limit"`
	Suspension  string       `json:"suspension,omitempty"`
	ClosedAt    jsonTime     `json:"closed_at,omitzero"`
	ClosedBy    string       `json:"closed_by,omitempty"`
	Token       string       `json:"token,omitempty"`
	Signals     []signalView `json:"signals"`
}

// waitpoints lists an execution's waitpoints with the tokens of the open
// ones (responses are never cached).
func (a *api) waitpoints(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	wps, err := a.e.Waitpoints(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]waitpointView, len(wps))
	for i, wp := range wps {
		out[i] = waitpointView{
			ID: wp.ID.String(), State: wp.State.String(), CreatedAt: jsonTime(wp.CreatedAt), ExpiresAt: jsonTime(wp.ExpiresAt),
			SignalLimit: wp.SignalLimit, ClosedAt: jsonTime(wp.ClosedAt), Token: wp.Token, Signals: viewSignals(wp.Signals),
		}
		if !wp.Suspension.IsZero() {
			out[i].Suspension = wp.Suspension.String()
		}
		if wp.ClosedBy != 0 {
			out[i].ClosedBy = wp.ClosedBy.String()
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"waitpoints": out})
	return nil
}

type suspendedEntryView struct {
	ID          string   `json:"id"`
	Lane        string   `json:"lane"`
	Suspension  string   `json:"suspension"`
	Reason      string   `json:"reason"`
	SuspendedAt jsonTime `json:"suspended_at"`
	TimeoutAt   jsonTime `json:"timeout_at,omitzero"`
}

// listSuspended pages through one partition's suspended executions.
func (a *api) listSuspended(w http.ResponseWriter, r *http.Request) error {
	opts, err := a.pageQuery(r)
	if err != nil {
		return err
	}
	page, err := a.e.ListSuspended(r.Context(), opts)
	if err != nil {
		return err
	}
	out := make([]suspendedEntryView, len(page.Entries))
	for i, s := range page.Entries {
		out[i] = suspendedEntryView{
			ID: s.ID.String(), Lane: string(s.Lane), Suspension: s.Suspension.String(), Reason: s.Reason.String(),
			SuspendedAt: jsonTime(s.SuspendedAt), TimeoutAt: jsonTime(s.TimeoutAt),
		}
	}
	resp := map[string]any{"suspended": out, "partitions": a.e.Partitions()}
	if !page.Next.IsZero() {
		resp["next"] = page.Next.String()
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

type feedEventView struct {
	Seq       uint64   `json:"seq"`
	Execution string   `json:"execution"`
	Waitpoint string   `json:"waitpoint"`
	Signal    string   `json:"signal"`
	Effect    string   `json:"effect"`
	At        jsonTime `json:"at"`
}

// signalFeed pages through a partition's signal-delivery feed by seq.
func (a *api) signalFeed(w http.ResponseWriter, r *http.Request) error {
	part, err := queryInt(r, "partition", 0, 0, a.e.Partitions()-1)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 50, 1, model.MaxPageSize)
	if err != nil {
		return err
	}
	var after uint64
	if s := r.URL.Query().Get("after"); s != "" {
		if after, err = strconv.ParseUint(s, 10, 64); err != nil {
			return model.OutOfRange("after", strconv.Quote(s), "a sequence number (0 or more)")
		}
	}
	events, last, err := a.e.SignalFeed(r.Context(), part, after, limit)
	if err != nil {
		return err
	}
	out := make([]feedEventView, len(events))
	for i, ev := range events {
		out[i] = feedEventView{Seq: ev.Seq, Execution: ev.Execution.String(), Waitpoint: ev.Waitpoint.String(),
			Signal: ev.Signal.String(), Effect: ev.Effect.String(), At: jsonTime(ev.At)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out, "last": last})
	return nil
}

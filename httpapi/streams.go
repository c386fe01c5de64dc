package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Attempt streams.

// Stream read limits of the HTTP surface (engine.md §5: read ≤ 1000 frames,
// tail ≤ 30 s).
const (
	maxHTTPStreamRead = 1000
	maxHTTPTailWait   = 30 * time.Second
	// DefaultMaxTails is Options.MaxTails's default.
	DefaultMaxTails = 64
)

// frameView is one frame on the wire: the payload as text when it is valid
// UTF-8, else as base64.
type frameView struct {
	Seq            uint64   `json:"seq"`
	Time           jsonTime `json:"time"`
	Type           string   `json:"type"`
	Mode           string   `json:"mode"`
	Payload        *string  `json:"payload,omitempty"`
	PayloadBase64  string   `json:"payload_base64,omitempty"`
	Encoding       string   `json:"encoding,omitempty"`
	CorrelationID  string   `json:"correlation_id,omitempty"`
	SummaryVersion uint64   `json:"summary_version,omitempty"`
}

type streamPageView struct {
	Frames       []frameView `json:"frames"`
	Next         uint64      `json:"next"`
	LastSequence uint64      `json:"last_sequence"`
	Closed       bool        `json:"closed"`
	ClosedAt     jsonTime    `json:"closed_at,omitzero"`
	ClosedReason string      `json:"closed_reason,omitempty"`
	Done         bool        `json:"done"`
}

func viewFrame(f flowfabric.Frame) frameView {
	v := frameView{Seq: f.Sequence, Time: jsonTime(f.Time), Type: f.Type, Mode: string(f.Mode), Encoding: f.Encoding,
		CorrelationID: f.CorrelationID, SummaryVersion: f.SummaryVersion}
	if utf8.Valid(f.Payload) {
		s := string(f.Payload)
		v.Payload = &s
	} else {
		v.PayloadBase64 = base64.StdEncoding.EncodeToString(f.Payload)
	}
	return v
}

func viewStreamPage(p *flowfabric.StreamPage) streamPageView {
	out := streamPageView{Frames: make([]frameView, len(p.Frames)), Next: p.Next, LastSequence: p.LastSequence,
		Closed: p.Closed, ClosedAt: jsonTime(p.ClosedAt), ClosedReason: string(p.ClosedReason), Done: p.Done}
	for i, f := range p.Frames {
		out.Frames[i] = viewFrame(f)
	}
	return out
}

// streamQuery reads the execution id and attempt index from the path and
// after, limit and exclude_best_effort from the query.
func streamQuery(r *http.Request, defLimit int) (flowfabric.ExecutionID, int, *flowfabric.StreamReadOpts, error) {
	id, err := pathID(r)
	if err != nil {
		return id, 0, nil, err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 {
		return id, 0, nil, model.OutOfRange("attempt", strconv.Quote(r.PathValue("n")), "an attempt index (0 or more)")
	}
	o := &flowfabric.StreamReadOpts{}
	if o.Limit, err = queryInt(r, "limit", defLimit, 1, maxHTTPStreamRead); err != nil {
		return id, 0, nil, err
	}
	if s := r.URL.Query().Get("after"); s != "" {
		if o.After, err = strconv.ParseUint(s, 10, 64); err != nil {
			return id, 0, nil, model.OutOfRange("after", strconv.Quote(s), "a sequence number (0 or more)")
		}
	}
	switch s := r.URL.Query().Get("exclude_best_effort"); s {
	case "", "0", "false":
	case "1", "true":
		o.ExcludeBestEffort = true
	default:
		return id, 0, nil, model.OutOfRange("exclude_best_effort", strconv.Quote(s), "true or false")
	}
	return id, n, o, nil
}

func (a *api) readStream(w http.ResponseWriter, r *http.Request) error {
	id, n, o, err := streamQuery(r, 100)
	if err != nil {
		return err
	}
	p, err := a.e.ReadStream(r.Context(), id, n, o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewStreamPage(p))
	return nil
}

// tailStream waits (wait_ms, default and at most 30 000) for frames after
// the cursor. Open tails are capped (Options.MaxTails): one more is 429.
func (a *api) tailStream(w http.ResponseWriter, r *http.Request) error {
	id, n, o, err := streamQuery(r, 50)
	if err != nil {
		return err
	}
	wait, err := queryInt(r, "wait_ms", int(maxHTTPTailWait/time.Millisecond), 0, int(maxHTTPTailWait/time.Millisecond))
	if err != nil {
		return err
	}
	o.MaxWait = time.Duration(wait) * time.Millisecond
	if o.MaxWait == 0 {
		o.MaxWait = time.Millisecond // 0 would mean the engine's default; 0 here asks for no wait
	}
	select {
	case a.tails <- struct{}{}:
		defer func() { <-a.tails }()
	default:
		return &httpError{status: http.StatusTooManyRequests, kind: "too_many_tails",
			msg: "too many open stream tails (" + strconv.Itoa(cap(a.tails)) + "); retry later"}
	}
	p, err := a.e.TailStream(r.Context(), id, n, o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewStreamPage(p))
	return nil
}

type summaryView struct {
	Document       rawJSON  `json:"document"`
	Version        uint64   `json:"version"`
	FirstAppliedAt jsonTime `json:"first_applied_at,omitzero"`
	UpdatedAt      jsonTime `json:"updated_at,omitzero"`
}

func (a *api) streamSummary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 {
		return model.OutOfRange("attempt", strconv.Quote(r.PathValue("n")), "an attempt index (0 or more)")
	}
	s, err := a.e.StreamSummary(r.Context(), id, n)
	if err != nil {
		return err
	}
	doc := rawJSON("null")
	if len(s.Document) > 0 {
		doc = rawJSON(s.Document)
	}
	writeJSON(w, http.StatusOK, summaryView{Document: doc, Version: s.Version,
		FirstAppliedAt: jsonTime(s.FirstAppliedAt), UpdatedAt: jsonTime(s.UpdatedAt)})
	return nil
}

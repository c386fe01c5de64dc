package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Execution routes.

// optsJSON are the submit options a submission and a flow node share.
type optsJSON struct {
	Lane     string `json:"lane"`
	Priority int    `json:"priority"`
	// RunAt is an RFC 3339 time; Delay a Go duration ("90s"). RunAt wins
	// when both are set (as in SubmitOpts).
	RunAt string `json:"run_at"`
	Delay string `json:"delay"`
	// RetryPolicy is model.RetryPolicy's wire form:
	// {"max_retries":3,"backoff":"exponential","initial_delay_ms":1000,...}.
	RetryPolicy          *model.RetryPolicy `json:"retry_policy"`
	MaxReclaims          int                `json:"max_reclaims"`
	MaxReplays           int                `json:"max_replays"`
	AttemptTimeout       string             `json:"attempt_timeout"`
	Deadline             string             `json:"deadline"`
	Tags                 map[string]string  `json:"tags"`
	Metadata             map[string]string  `json:"metadata"`
	RequiredCapabilities []string           `json:"required_capabilities"`
	// Budgets and Quota are ids (UUIDs); QuotaKey chooses the bucket.
	Budgets  []string `json:"budgets"`
	Quota    string   `json:"quota"`
	QuotaKey string   `json:"quota_key"`
}

// payloadJSON is a payload as a JSON value or as base64.
type payloadJSON struct {
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 *string         `json:"payload_base64"`
}

// submitRequest is the body of POST /v1/executions.
type submitRequest struct {
	Kind string `json:"kind"`
	payloadJSON
	optsJSON
	IdempotencyKey string `json:"idempotency_key"`
	IdempotencyTTL string `json:"idempotency_ttl"`
}

// bytes returns the payload: the JSON value as sent, or the decoded
// base64; nil when neither is given (or the value is null).
func (p *payloadJSON) bytes(field string) ([]byte, error) {
	raw := p.Payload
	if bytes.Equal(raw, []byte("null")) {
		raw = nil
	}
	switch {
	case raw != nil && p.PayloadBase64 != nil:
		return nil, model.InvalidField(field+"payload_base64", "payload and payload_base64 are exclusive: send one")
	case p.PayloadBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*p.PayloadBase64)
		if err != nil {
			return nil, model.InvalidField(field+"payload_base64", "malformed base64 (standard encoding, padded): "+err.Error())
		}
		return b, nil
	case raw != nil:
		return []byte(raw), nil
	}
	return nil, nil
}

// opts converts the wire options, naming the JSON field of a bad value
// (field prefixes nested ones, "nodes[2].").
func (o *optsJSON) opts(field string) (*flowfabric.SubmitOpts, error) {
	s := &flowfabric.SubmitOpts{
		Lane: flowfabric.LaneID(o.Lane), Priority: o.Priority, RetryPolicy: o.RetryPolicy,
		MaxReclaims: o.MaxReclaims, MaxReplays: o.MaxReplays, Tags: o.Tags, Metadata: o.Metadata,
		RequiredCapabilities: o.RequiredCapabilities,
	}
	var err error
	if s.RunAt, err = parseTime(field+"run_at", o.RunAt); err != nil {
		return nil, err
	}
	if s.Deadline, err = parseTime(field+"deadline", o.Deadline); err != nil {
		return nil, err
	}
	if s.Delay, err = parseDuration(field+"delay", o.Delay); err != nil {
		return nil, err
	}
	if s.AttemptTimeout, err = parseDuration(field+"attempt_timeout", o.AttemptTimeout); err != nil {
		return nil, err
	}
	for i, b := range o.Budgets {
		id, err := parseBudgetID(field+"budgets["+strconv.Itoa(i)+"]", b)
		if err != nil {
			return nil, err
		}
		s.Budgets = append(s.Budgets, id)
	}
	if o.Quota != "" {
		if s.Quota, err = parseQuotaID(field+"quota", o.Quota); err != nil {
			return nil, err
		}
	}
	s.QuotaKey = o.QuotaKey
	return s, nil
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &model.Error{Code: model.CodeInvalidInput, Field: field, Detail: "malformed",
			Got: strconv.Quote(s), Want: "an RFC 3339 time such as 2026-01-02T15:04:05.000Z"}
	}
	return t, nil
}

func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, &model.Error{Code: model.CodeInvalidInput, Field: field, Detail: "malformed",
			Got: strconv.Quote(s), Want: `a Go duration such as "1.5s" or "10m"`}
	}
	return d, nil
}

// submitResponse answers a submission.
type submitResponse struct {
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
	State     string `json:"state"`
}

func (a *api) submit(w http.ResponseWriter, r *http.Request) error {
	var req submitRequest
	if err := decodeBody(w, r, a.maxBody, &req, true); err != nil {
		return err
	}
	payload, err := req.bytes("")
	if err != nil {
		return err
	}
	opts, err := req.opts("")
	if err != nil {
		return err
	}
	opts.IdempotencyKey = req.IdempotencyKey
	if opts.IdempotencyTTL, err = parseDuration("idempotency_ttl", req.IdempotencyTTL); err != nil {
		return err
	}
	res, err := a.e.SubmitRaw(r.Context(), flowfabric.Kind(req.Kind), payload, opts)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, submitResponse{ID: res.ID.String(), Duplicate: res.Duplicate, State: res.PublicState.String()})
	return nil
}

// Query parameters.

// queryInt reads an integer query parameter (def when absent) within
// [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, model.OutOfRange(name, strconv.Quote(s), strconv.Itoa(lo)+".."+strconv.Itoa(hi))
	}
	return n, nil
}

type listResponse struct {
	IDs  []string `json:"ids"`
	Next string   `json:"next,omitempty"`
	// Partitions is how many partitions there are to page through.
	Partitions int `json:"partitions"`
}

// pageQuery reads a partition page's query: partition, after, limit
// (default 50).
func (a *api) pageQuery(r *http.Request) (*flowfabric.ListOpts, error) {
	part, err := queryInt(r, "partition", 0, 0, a.e.Partitions()-1)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", 50, 1, model.MaxPageSize)
	if err != nil {
		return nil, err
	}
	var after flowfabric.ExecutionID
	if s := r.URL.Query().Get("after"); s != "" {
		if after, err = parseExecutionID("after", s); err != nil {
			return nil, err
		}
	}
	return &flowfabric.ListOpts{Partition: part, After: after, Limit: limit}, nil
}

func (a *api) list(w http.ResponseWriter, r *http.Request) error {
	opts, err := a.pageQuery(r)
	if err != nil {
		return err
	}
	res, err := a.e.List(r.Context(), opts)
	if err != nil {
		return err
	}
	out := listResponse{IDs: make([]string, len(res.IDs)), Next: res.Next.String(), Partitions: a.e.Partitions()}
	for i, id := range res.IDs {
		out.IDs[i] = id.String()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type searchResponse struct {
	IDs      []string `json:"ids"`
	Next     string   `json:"next,omitempty"`
	Examined int      `json:"examined"`
}

// search is Engine.Find: namespace, lane, kind, state (comma-separated
// public states), tag ("key=value"), cursor, limit (default 50),
// max_examined.
func (a *api) search(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", 50, 1, model.MaxPageSize)
	if err != nil {
		return err
	}
	maxExamined, err := queryInt(r, "max_examined", 0, 1, 100_000)
	if err != nil {
		return err
	}
	o := &flowfabric.FindOpts{Namespace: flowfabric.Namespace(q.Get("namespace")), Lane: flowfabric.LaneID(q.Get("lane")),
		Kind: flowfabric.Kind(q.Get("kind")), Cursor: q.Get("cursor"), Limit: limit, MaxExamined: maxExamined}
	if s := q.Get("state"); s != "" {
		for name := range strings.SplitSeq(s, ",") {
			st, ok := model.ParsePublicState(name)
			if !ok {
				return &model.Error{Code: model.CodeInvalidInput, Field: "state", Detail: "unknown state", Got: strconv.Quote(name),
					Want: "public states, comma-separated"}
			}
			o.States = append(o.States, st)
		}
	}
	if s := q.Get("tag"); s != "" {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return &model.Error{Code: model.CodeInvalidInput, Field: "tag", Detail: "malformed tag", Got: strconv.Quote(s), Want: "key=value"}
		}
		o.TagKey, o.TagValue = k, v
	}
	page, err := a.e.Find(r.Context(), o)
	if err != nil {
		return err
	}
	out := searchResponse{IDs: make([]string, len(page.IDs)), Next: page.Next, Examined: page.Examined}
	for i, id := range page.IDs {
		out.IDs[i] = id.String()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parseExecutionID parses an id, naming field in the error.
func parseExecutionID(field, s string) (flowfabric.ExecutionID, error) {
	id, err := model.ParseExecutionID(s)
	if err != nil {
		return id, &model.Error{Code: model.CodeInvalidInput, Field: field, Detail: "malformed execution id",
			Got: strconv.Quote(s), Want: "{fp:N}:<uuid>"}
	}
	return id, nil
}

// pathID is the execution id of the path.
func pathID(r *http.Request) (flowfabric.ExecutionID, error) {
	return parseExecutionID("id", r.PathValue("id"))
}

func (a *api) describe(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	s, err := a.e.Describe(r.Context(), id)
	if err != nil {
		return err
	}
	v := viewExecution(s)
	if s.PublicState == flowfabric.PublicSuspended {
		susp, err := a.e.Suspension(r.Context(), id)
		if err == nil && susp.ClosedAt.IsZero() {
			v.Suspension = &currentSuspensionView{
				ID: susp.ID.String(), Reason: susp.Reason.String(), CurrentWaitpoint: susp.Waitpoint.String(),
				TimeoutAt: jsonTime(susp.TimeoutAt), Escalated: susp.Escalated,
			}
		} else if err != nil && model.CodeOf(err) != model.CodeSuspensionNotFound {
			return err
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (a *api) state(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	s, err := a.e.Describe(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": s.ID.String(), "state": s.PublicState.String()})
	return nil
}

// raw answers the bytes read returns for the path's execution (its
// payload or its result).
func raw(read func(context.Context, flowfabric.ExecutionID) ([]byte, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		b, err := read(r.Context(), id)
		if err != nil {
			return err
		}
		writeRaw(w, b)
		return nil
	}
}

func (a *api) attempts(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	as, err := a.e.Attempts(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]attemptView, len(as))
	for i, at := range as {
		out[i] = viewAttempt(at)
	}
	writeJSON(w, http.StatusOK, map[string]any{"attempts": out})
	return nil
}

type leaseHistoryResponse struct {
	Events []leaseEventView `json:"events"`
	// Next is the after of the next page; left out after a page that was
	// not full (the last).
	Next uint64 `json:"next,omitempty"`
}

func (a *api) leaseHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, model.MaxPageSize)
	if err != nil {
		return err
	}
	var after uint64
	if s := r.URL.Query().Get("after"); s != "" {
		if after, err = strconv.ParseUint(s, 10, 64); err != nil {
			return model.OutOfRange("after", strconv.Quote(s), "a sequence number (0 or more)")
		}
	}
	evs, err := a.e.LeaseHistory(r.Context(), id, after, limit)
	if err != nil {
		return err
	}
	out := leaseHistoryResponse{Events: make([]leaseEventView, len(evs))}
	for i, ev := range evs {
		out.Events[i] = viewLeaseEvent(ev)
	}
	if len(evs) == limit {
		out.Next = evs[len(evs)-1].Seq
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Operator actions.

// controlRequest is the body of an operator action: every field is
// optional, and each action refuses the ones it does not take.
type controlRequest struct {
	// ID may repeat the path's id; another id is refused.
	ID string `json:"id"`
	// Reason is for cancel, replay and revoke-lease.
	Reason *string `json:"reason"`
	// RequestedBy is for replay.
	RequestedBy *string `json:"requested_by"`
	// Priority is for priority (required there).
	Priority *int `json:"priority"`
}

// control decodes an operator action's body and checks its id against
// the path's. allowed names the fields the action takes besides id.
func (a *api) control(w http.ResponseWriter, r *http.Request, allowed ...string) (flowfabric.ExecutionID, *controlRequest, error) {
	id, err := pathID(r)
	if err != nil {
		return id, nil, err
	}
	var req controlRequest
	if err := decodeBody(w, r, a.maxControl, &req, false); err != nil {
		return id, nil, err
	}
	if req.ID != "" {
		bodyID, err := parseExecutionID("body id", req.ID)
		if err != nil {
			return id, nil, err
		}
		if bodyID != id {
			return id, nil, badRequest("the body's id " + strconv.Quote(req.ID) + " is not the path's " + strconv.Quote(id.String()))
		}
	}
	given := map[string]bool{"reason": req.Reason != nil, "requested_by": req.RequestedBy != nil, "priority": req.Priority != nil}
	for _, f := range allowed {
		delete(given, f)
	}
	for f, set := range given {
		if set {
			return id, nil, badRequest("malformed JSON body: unknown field " + strconv.Quote(f) + " for " + r.URL.Path)
		}
	}
	return id, &req, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// actionResponse answers an operator action.
type actionResponse struct {
	ID string `json:"id"`
	// Requeued is set by reclaim: false when the reclaim cap was reached
	// and the execution failed instead.
	Requeued *bool `json:"requeued,omitempty"`
	// Priority is set by priority: the value stored (clamped).
	Priority *int `json:"priority,omitempty"`
}

// reasonAction is an operator action that takes only a reason (cancel,
// revoke-lease).
func (a *api) reasonAction(act func(context.Context, flowfabric.ExecutionID, string) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, req, err := a.control(w, r, "reason")
		if err != nil {
			return err
		}
		if err := act(r.Context(), id, deref(req.Reason)); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, actionResponse{ID: id.String()})
		return nil
	}
}

func (a *api) replay(w http.ResponseWriter, r *http.Request) error {
	id, req, err := a.control(w, r, "reason", "requested_by")
	if err != nil {
		return err
	}
	opts := &flowfabric.ReplayOpts{Reason: deref(req.Reason), RequestedBy: deref(req.RequestedBy)}
	if err := a.e.Replay(r.Context(), id, opts); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, actionResponse{ID: id.String()})
	return nil
}

func (a *api) reclaim(w http.ResponseWriter, r *http.Request) error {
	id, _, err := a.control(w, r)
	if err != nil {
		return err
	}
	requeued, err := a.e.Reclaim(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, actionResponse{ID: id.String(), Requeued: &requeued})
	return nil
}

// plainAction is an operator action that takes no field (retry-now,
// resume).
func (a *api) plainAction(act func(context.Context, flowfabric.ExecutionID) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, _, err := a.control(w, r)
		if err != nil {
			return err
		}
		if err := act(r.Context(), id); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, actionResponse{ID: id.String()})
		return nil
	}
}

func (a *api) priority(w http.ResponseWriter, r *http.Request) error {
	id, req, err := a.control(w, r, "priority")
	if err != nil {
		return err
	}
	if req.Priority == nil {
		return model.InvalidField("priority", "required")
	}
	p, err := a.e.ChangePriority(r.Context(), id, *req.Priority)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, actionResponse{ID: id.String(), Priority: &p})
	return nil
}

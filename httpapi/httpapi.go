package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Default body caps (engine.md §5).
const (
	DefaultMaxBodyBytes        = 1 << 20  // submissions
	DefaultMaxControlBodyBytes = 64 << 10 // operator actions
)

// Options configures the handler. The zero value (or nil) means the
// defaults.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz and POST /v1/signals (a waitpoint token in
	// the body is that route's credential, so a third party can deliver
	// a signal without an API token) (compared in constant time; 401
	// otherwise). Empty: no authentication (put the handler behind the
	// host's own). The dashboard's static files (GET /, GET /ui/…) hold
	// no data and are served without it; the page asks for the token
	// once, keeps it in the tab's session storage and sends it with
	// every API call.
	Token string
	// Authorize, when set, decides every request Token would guard (all
	// but /healthz, POST /v1/signals and the dashboard's static files)
	// and replaces the bearer token check: Token is then ignored. A nil
	// error lets the request through; an error refuses it with 401
	// unauthorized and the error's text as the message (so say what is
	// missing, not why a secret did not match). It runs before routing,
	// with the body unread, and may be called concurrently.
	Authorize func(*http.Request) error
	// MaxBodyBytes caps the body of a submission (POST /v1/executions,
	// POST /v1/flows) (default 1 MiB). A binary payload sent as
	// payload_base64 grows by a third on the wire.
	MaxBodyBytes int64
	// MaxControlBodyBytes caps the body of an operator action (cancel,
	// replay, revoke-lease, reclaim, priority, tags, flow cancel and tags,
	// lane pause and resume) (default 64 KiB).
	MaxControlBodyBytes int64
	// MaxTails caps the stream tails and feed waits open at once (each
	// holds its request for up to 30 s); one more is refused with 429
	// (default DefaultMaxTails).
	MaxTails int
	// Logger receives a line per failed request: 5xx at error level
	// (with the store's error, which the client is not shown), others at
	// debug (nil: discarded).
	Logger *slog.Logger
}

// api serves one engine.
type api struct {
	e          *flowfabric.Engine
	token      [sha256.Size]byte
	auth       bool
	authorize  func(*http.Request) error
	maxBody    int64
	maxControl int64
	log        *slog.Logger
	mux        *http.ServeMux
	// tails holds a token per open stream tail (Options.MaxTails).
	tails chan struct{}
}

// New returns the HTTP handler over e. It panics when e is nil, a
// programming error.
func New(e *flowfabric.Engine, opts *Options) http.Handler {
	if e == nil {
		panic("httpapi: New with a nil engine")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	a := &api{
		e: e, maxBody: o.MaxBodyBytes, maxControl: o.MaxControlBodyBytes, log: o.Logger,
		mux: http.NewServeMux(),
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	if a.maxControl <= 0 {
		a.maxControl = DefaultMaxControlBodyBytes
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if o.MaxTails <= 0 {
		o.MaxTails = DefaultMaxTails
	}
	a.tails = make(chan struct{}, o.MaxTails)
	switch {
	case o.Authorize != nil:
		a.auth, a.authorize = true, o.Authorize
	case o.Token != "":
		a.auth, a.token = true, sha256.Sum256([]byte(o.Token))
	}
	routes := []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request) error
	}{
		{"GET /healthz", a.healthz},
		{"POST /v1/executions", a.submit},
		{"GET /v1/executions", a.list},
		{"GET /v1/executions/search", a.search},
		{"GET /v1/executions/{id}", a.describe},
		{"DELETE /v1/executions/{id}", a.plainAction(e.Delete)},
		{"GET /v1/executions/{id}/state", a.state},
		{"GET /v1/executions/{id}/payload", raw(e.Payload)},
		{"GET /v1/executions/{id}/result", raw(e.Result)},
		{"GET /v1/executions/{id}/attempts", a.attempts},
		{"GET /v1/executions/{id}/lease-history", a.leaseHistory},
		{"GET /v1/executions/{id}/attempts/{n}/stream", a.readStream},
		{"GET /v1/executions/{id}/attempts/{n}/stream/tail", a.tailStream},
		{"GET /v1/executions/{id}/attempts/{n}/summary", a.streamSummary},
		{"POST /v1/executions/{id}/cancel", a.reasonAction(e.Cancel)},
		{"POST /v1/executions/{id}/replay", a.replay},
		{"POST /v1/executions/{id}/revoke-lease", a.reasonAction(e.RevokeLease)},
		{"POST /v1/executions/{id}/reclaim", a.reclaim},
		{"POST /v1/executions/{id}/retry-now", a.plainAction(e.RetryNow)},
		{"PUT /v1/executions/{id}/priority", a.priority},
		{"GET /v1/executions/{id}/tags", a.executionTags},
		{"PATCH /v1/executions/{id}/tags", a.setExecutionTags},
		{"POST /v1/executions/{id}/resume", a.plainAction(e.Resume)},
		{"GET /v1/executions/{id}/suspension", a.suspension},
		{"GET /v1/executions/{id}/waitpoints", a.waitpoints},
		{"GET /v1/suspended", a.listSuspended},
		{"GET /v1/signal-feed", a.signalFeed},
		{"GET /v1/feeds/{feed}", a.readFeed},
		{"POST " + signalPath, a.deliverSignal},
		{"POST /v1/flows", a.submitFlow},
		{"GET /v1/flows/{id}", a.describeFlow},
		{"POST /v1/flows/{id}/cancel", a.cancelFlow},
		{"GET /v1/flows/{id}/tags", a.flowTags},
		{"PATCH /v1/flows/{id}/tags", a.setFlowTags},
		{"DELETE /v1/flows/{id}", a.deleteFlow},
		{"POST /v1/budgets", a.createBudget},
		{"GET /v1/budgets/{id}", a.budget},
		{"POST /v1/budgets/{id}/usage", a.reportUsage},
		{"POST /v1/budgets/{id}/reset", a.resetBudget},
		{"POST /v1/quotas", a.createQuota},
		{"GET /v1/quotas/{id}", a.quota},
		{"POST /v1/lanes/{lane}/pause", a.pauseLane},
		{"POST /v1/lanes/{lane}/resume", a.resumeLane},
		{"GET /v1/lanes/{lane}", a.lane},
		{"GET /v1/lanes", a.lanes},
		{"GET /v1/counts", a.counts},
		{"GET /v1/flows", a.listFlows},
		{"GET /v1/flows/{id}/graph", a.flowGraph},
		{"GET /{$}", a.uiRedirect},
		{"GET /ui/", a.uiAsset},
	}
	for _, rt := range routes {
		a.mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.h(w, r); err != nil {
				a.writeError(w, r, err)
			}
		})
	}
	return a
}

// ServeHTTP authenticates (every route but /healthz, POST /v1/signals,
// whose waitpoint token is its credential, and the dashboard's static
// files), then routes; an unknown path or method gets a JSON 404 or 405
// like every other error.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.auth && !exempt(r) {
		if err := a.check(r); err != nil {
			a.writeError(w, r, &httpError{status: http.StatusUnauthorized, kind: kindUnauthorized, msg: err.Error()})
			return
		}
	}
	if _, pattern := a.mux.Handler(r); pattern == "" {
		a.unrouted(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// exempt reports a request that needs no credential: /healthz, a
// signal (its waitpoint token is the credential) and a read of the
// dashboard's static files, which hold no data.
func exempt(r *http.Request) bool {
	switch p := r.URL.Path; {
	case p == "/healthz", p == signalPath:
		return true
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return false
	default:
		// cleaned, so "/ui/../v1/…" is not taken for a dashboard file
		c := path.Clean(p)
		return c == "/" || c == "/ui" || strings.HasPrefix(c, "/ui/")
	}
}

// check runs Options.Authorize when set, else the bearer token check.
func (a *api) check(r *http.Request) error {
	if a.authorize != nil {
		if err := a.authorize(r); err != nil {
			if err.Error() == "" {
				return errors.New("unauthorized")
			}
			return err
		}
		return nil
	}
	if !a.authorized(r) {
		return errors.New("missing or wrong bearer token")
	}
	return nil
}

// authorized compares the bearer token in constant time: both sides are
// hashed first, so not even the length leaks.
func (a *api) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], a.token[:]) == 1
}

// unrouted answers a request no route matched: 405 (with Allow) when the
// path exists with other methods, 404 otherwise.
func (a *api) unrouted(w http.ResponseWriter, r *http.Request) {
	h, _ := a.mux.Handler(r)
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		a.writeError(w, r, &httpError{status: http.StatusMethodNotAllowed, kind: kindMethodNotAllowed,
			msg: r.Method + " is not allowed on " + r.URL.Path})
		return
	}
	a.writeError(w, r, &httpError{status: http.StatusNotFound, kind: kindNotFound, msg: "no route for " + r.URL.Path})
}

// statusProbe records what the mux's own not-found or
// method-not-allowed handler would answer, discarding its text body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (a *api) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := a.e.Ping(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// every response type marshals; this is a programming error
		status, b = http.StatusInternalServerError,
			[]byte(`{"error":"encoding the response failed","kind":"`+kindInternal+`","retryable":false}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeRaw answers bytes as they are stored.
func writeRaw(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// decodeBody decodes the request body into v strictly (no unknown
// fields, one JSON value) under limit. An empty body is an error when
// required, and leaves v as it is otherwise.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, required bool) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			if required {
				return badRequest("a JSON body is required")
			}
			return nil
		}
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err)
		}
		return badRequest("malformed JSON body: more than one JSON value")
	}
	return nil
}

// bodyError keeps the errors classify knows (an oversized body, the
// engine's validation of a field such as retry_policy) and turns the
// others into a 400 that quotes the decoder.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	var me *model.Error
	if errors.As(err, &mbe) || errors.As(err, &me) {
		return err
	}
	return badRequest("malformed JSON body: " + strings.TrimPrefix(err.Error(), "json: "))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

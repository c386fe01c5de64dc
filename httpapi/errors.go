package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/flowfabric/flowfabric/model"
)

// Kinds of the errors of the HTTP layer (the engine's own errors carry
// their model.Code as their kind).
const (
	kindBadRequest       = "bad_request"
	kindUnauthorized     = "unauthorized"
	kindNotFound         = "not_found"
	kindMethodNotAllowed = "method_not_allowed"
	kindBodyTooLarge     = "body_too_large"
	kindUnavailable      = "unavailable"
	kindInternal         = "internal"
)

// codeStatus is the HTTP status of every engine error code. A test
// parses package model and fails when a code is missing here, so a new
// code cannot be forgotten.
var codeStatus = map[model.Code]int{
	// Validation: the request is wrong as sent.
	model.CodeInvalidInput:          http.StatusBadRequest,
	model.CodeInvalidCapabilities:   http.StatusBadRequest,
	model.CodeInvalidPolicy:         http.StatusBadRequest,
	model.CodeInvalidTagKey:         http.StatusBadRequest,
	model.CodeFenceRequired:         http.StatusBadRequest,
	model.CodePartialFenceTriple:    http.StatusBadRequest,
	model.CodeInvalidBlockingReason: http.StatusBadRequest,
	model.CodeSelfReferencingEdge:   http.StatusBadRequest,

	// Not found.
	model.CodeExecutionNotFound:   http.StatusNotFound,
	model.CodeResultNotFound:      http.StatusNotFound,
	model.CodeFlowNotFound:        http.StatusNotFound,
	model.CodeEdgeNotFound:        http.StatusNotFound,
	model.CodeExecutionNotInFlow:  http.StatusNotFound,
	model.CodeWorkerNotRegistered: http.StatusNotFound,

	// State: the execution or flow is not in a state that allows it.
	model.CodeExecutionNotActive:        http.StatusConflict,
	model.CodeExecutionNotTerminal:      http.StatusConflict,
	model.CodeStaleLease:                http.StatusConflict,
	model.CodeLeaseExpired:              http.StatusConflict,
	model.CodeLeaseRevoked:              http.StatusConflict,
	model.CodeMaxReplaysExhausted:       http.StatusConflict,
	model.CodeMaxRetriesExhausted:       http.StatusConflict,
	model.CodeExecutionNotLeaseable:     http.StatusConflict,
	model.CodeLeaseConflict:             http.StatusConflict,
	model.CodeInvalidClaimGrant:         http.StatusConflict,
	model.CodeClaimGrantExpired:         http.StatusConflict,
	model.CodeCapabilityMismatch:        http.StatusConflict,
	model.CodeExecutionNotEligible:      http.StatusConflict,
	model.CodeExecutionNotInEligibleSet: http.StatusConflict,
	model.CodeGrantAlreadyExists:        http.StatusConflict,
	model.CodeExecutionNotReclaimable:   http.StatusConflict,
	model.CodeNoActiveLease:             http.StatusConflict,
	model.CodeDuplicateWorkerInstance:   http.StatusConflict,
	model.CodeWorkerAlreadyStarted:      http.StatusConflict,
	model.CodeWorkerHasNoHandlers:       http.StatusConflict,
	model.CodeHandlerAlreadyRegistered:  http.StatusConflict,
	model.CodeWorkerStopped:             http.StatusConflict,

	// Flows: the graph or the flow refuses the change.
	model.CodeFlowAlreadyTerminal:    http.StatusConflict,
	model.CodeExecutionAlreadyInFlow: http.StatusConflict,
	model.CodeExecutionInFlow:        http.StatusConflict,
	model.CodeStaleGraphRevision:     http.StatusConflict,
	model.CodeDependencyExists:       http.StatusConflict,
	model.CodeCycleDetected:          http.StatusConflict,
	model.CodeGraphSearchLimit:       http.StatusConflict,
	model.CodeEdgeGroupFixed:         http.StatusConflict,
	model.CodeFlowSealed:             http.StatusConflict,
	model.CodeDownstreamStarted:      http.StatusConflict,
	model.CodeFlowNotSealed:          http.StatusConflict,
	model.CodeFlowTooLarge:           http.StatusConflict,
	model.CodeIdempotencyConflict:    http.StatusConflict,

	// A submit hook refused the submission (the host's policy).
	model.CodeSubmissionRefused: http.StatusUnprocessableEntity,

	// A waitpoint token was refused: the token is the credential.
	model.CodeInvalidToken: http.StatusForbidden,

	// Suspension and signals.
	model.CodeExecutionNotSuspended: http.StatusConflict,
	model.CodeSuspensionNotFound:    http.StatusNotFound,
	model.CodeWaitpointNotFound:     http.StatusNotFound,
	model.CodeWaitpointClosed:       http.StatusGone,
	model.CodeWaitpointNotPending:   http.StatusConflict,
	model.CodeWaitpointLimit:        http.StatusConflict,
	model.CodeSignalLimit:           http.StatusConflict,
	model.CodeBudgetNotFound:        http.StatusNotFound,
	model.CodeQuotaNotFound:         http.StatusNotFound,
	model.CodeBudgetExceeded:        http.StatusConflict,
	model.CodeAdmissionRequired:     http.StatusConflict,
	model.CodeStreamClosed:          http.StatusConflict,
	model.CodeSummaryConflict:       http.StatusConflict,
	model.CodeAttemptNotFound:       http.StatusNotFound,
	model.CodeFeedDisabled:          http.StatusNotFound,
	model.CodeLanePaused:            http.StatusConflict,

	// Capacity.
	model.CodeWorkerAtCapacity: http.StatusTooManyRequests,

	// Broken invariants and unreadable records: the server's fault.
	model.CodeActiveAttemptExists: http.StatusInternalServerError,
	model.CodeCorruption:          http.StatusInternalServerError,
}

// httpError is an error of the HTTP layer: a malformed body or query, a
// missing token, an unknown route.
type httpError struct {
	status int
	kind   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) error {
	return &httpError{status: http.StatusBadRequest, kind: kindBadRequest, msg: msg}
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error     string `json:"error"`
	Kind      string `json:"kind"`
	Retryable bool   `json:"retryable"`
}

// classify maps err to its status and body. Errors that are neither the
// HTTP layer's nor the engine's (*model.Error) come from the store not
// answering (a connection error, a context deadline): 503, retryable,
// with a generic message (the detail goes to the log).
func classify(err error) (int, errorBody) {
	var he *httpError
	if errors.As(err, &he) {
		return he.status, errorBody{Error: he.msg, Kind: he.kind}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, errorBody{
			Error: "request body larger than " + itoa(mbe.Limit) + " bytes", Kind: kindBodyTooLarge}
	}
	var me *model.Error
	if errors.As(err, &me) {
		status, ok := codeStatus[me.Code]
		switch {
		case errors.Is(err, model.ErrValidation):
			status = http.StatusBadRequest
		case !ok:
			status = http.StatusInternalServerError
		}
		retry := me.Retryable() || status == http.StatusTooManyRequests
		return status, errorBody{Error: err.Error(), Kind: string(me.Code), Retryable: retry}
	}
	msg := "the store did not answer"
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		msg = "the request ran out of time"
	}
	return http.StatusServiceUnavailable, errorBody{Error: msg, Kind: kindUnavailable, Retryable: true}
}

// writeError answers err, logging what the client is not told.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := classify(err)
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	a.log.Log(r.Context(), level, "flowfabric http: request failed",
		"method", r.Method, "path", r.URL.Path, "status", status, "kind", body.Kind, "err", err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="flowfabric"`)
	}
	writeJSON(w, status, body)
}

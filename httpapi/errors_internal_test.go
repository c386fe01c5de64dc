package httpapi

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// modelCodes parses package model and returns every constant of type
// Code, so the test below learns of a new code without being edited.
func modelCodes(t *testing.T) map[model.Code]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "model", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	codes := map[model.Code]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: code %s is not a string literal", path, name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes[model.Code(v)] = name.Name
				}
			}
		}
	}
	if len(codes) < 40 {
		t.Fatalf("found only %d codes in package model: is the parse right?", len(codes))
	}
	return codes
}

// TestEveryCodeHasAStatus fails when package model gains a code that
// codeStatus does not map (or codeStatus keeps one model dropped).
func TestEveryCodeHasAStatus(t *testing.T) {
	codes := modelCodes(t)
	for c, name := range codes {
		status, ok := codeStatus[c]
		if !ok {
			t.Errorf("model.%s (%q) has no HTTP status in codeStatus", name, c)
			continue
		}
		e := &model.Error{Code: c}
		got, body := classify(fmt.Errorf("flowfabric: op: %w", e))
		want := status
		if e.IsValidation() {
			want = http.StatusBadRequest
		}
		if got != want || body.Kind != string(c) {
			t.Errorf("model.%s: classify gives %d %q, want %d %q", name, got, body.Kind, want, c)
		}
		// The classes agree with the statuses: a validation error is 400,
		// a retryable one is never a client error that repeating cannot
		// fix, unless it is a conflict of a race.
		if e.IsValidation() && status != http.StatusBadRequest {
			t.Errorf("model.%s is a validation error mapped to %d", name, status)
		}
		if body.Retryable != (e.Retryable() || status == http.StatusTooManyRequests) {
			t.Errorf("model.%s: retryable %v", name, body.Retryable)
		}
	}
	for c := range codeStatus {
		if _, ok := codes[c]; !ok {
			t.Errorf("codeStatus maps %q, which package model does not define", c)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		status    int
		kind      string
		retryable bool
	}{
		{fmt.Errorf("flowfabric: describe: %w", model.ErrNotFound), 404, "execution_not_found", false},
		{model.ErrResultNotFound, 404, "result_not_found", false},
		{model.ErrFlowNotFound, 404, "flow_not_found", false},
		{model.InvalidField("Lane", "bad"), 400, "invalid_input", false},
		{model.ErrInvalidPolicy, 400, "invalid_policy", false},
		{model.ErrNotActive, 409, "execution_not_active", false},
		{model.ErrNotTerminal, 409, "execution_not_terminal", false},
		{model.ErrNotEligible, 409, "execution_not_eligible", false},
		{model.ErrFlowTerminal, 409, "flow_already_terminal", false},
		{model.ErrFlowSealed, 409, "flow_sealed", false},
		{model.ErrIdempotencyConflict, 409, "idempotency_key_conflict", false},
		{model.ErrDependencyExists, 409, "dependency_already_exists", false},
		{model.ErrCycle, 409, "cycle_detected", false},
		{model.ErrLeaseConflict, 409, "lease_conflict", true},
		{model.ErrStaleGraphRevision, 409, "stale_graph_revision", true},
		{fmt.Errorf("x: %w", model.ErrWorkerAtCapacity), 429, "worker_at_capacity", true},
		{model.ErrCorrupt, 500, "corruption", false},
		{model.ErrActiveAttemptExists, 500, "active_attempt_exists", false},
		{&model.Error{Code: "made_up_code"}, 500, "made_up_code", false},
		{errors.New("dial tcp: connection refused"), 503, "unavailable", true},
		{fmt.Errorf("flowfabric: describe: %w", context.DeadlineExceeded), 503, "unavailable", true},
		{context.Canceled, 503, "unavailable", true},
		{&http.MaxBytesError{Limit: 10}, 413, "body_too_large", false},
		{badRequest("no"), 400, "bad_request", false},
	} {
		status, body := classify(tc.err)
		if status != tc.status || body.Kind != tc.kind || body.Retryable != tc.retryable || body.Error == "" {
			t.Errorf("classify(%v) = %d %+v, want %d %q retryable=%v", tc.err, status, body, tc.status, tc.kind, tc.retryable)
		}
	}
}

package flowfabric_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// TestErrorTexts: every entry point prefixes its errors with
// "flowfabric: <op>: ", a validation error names the Go field, the rejected
// value and the accepted range, and errors.Is keeps matching.
func TestErrorTexts(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	ctx := h.Ctx
	unknown, err := model.ParseExecutionID("{fp:0}:00000000-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		call   func() error
		is     []error
		prefix string
		has    []string
		hasNot []string
	}{
		{
			name: "retry policy field",
			call: func() error {
				_, err := h.Engine.SubmitRaw(ctx, "k", nil, &flowfabric.SubmitOpts{RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 3, InitialDelay: -time.Second}})
				return err
			},
			is:     []error{flowfabric.ErrInvalidPolicy, flowfabric.ErrValidation},
			prefix: "flowfabric: submit: ",
			has:    []string{"RetryPolicy.InitialDelay", "got -1s", "want 0..720h0m0s"},
			hasNot: []string{"initial_delay_ms"},
		},
		{
			name: "typed submit",
			call: func() error {
				_, err := h.Engine.Submit(ctx, nil, nil)
				return err
			},
			is:     []error{flowfabric.ErrInvalidInput},
			prefix: "flowfabric: submit: ",
			has:    []string{"Args"},
		},
		{
			name: "tag key",
			call: func() error {
				_, err := h.Engine.SubmitRaw(ctx, "k", nil, &flowfabric.SubmitOpts{Tags: map[string]string{"UserID": "1"}})
				return err
			},
			is:     []error{flowfabric.ErrInvalidTagKey, flowfabric.ErrValidation},
			prefix: "flowfabric: submit: ",
			has:    []string{`got "UserID"`, `want "<namespace>.<name>", e.g. "app.user_id"`},
		},
		{
			name: "submit many",
			call: func() error {
				_, err := h.Engine.SubmitMany(ctx, []flowfabric.SubmitParams{{Kind: "k"}, {Kind: ""}})
				return err
			},
			is:     []error{flowfabric.ErrInvalidInput},
			prefix: "flowfabric: submit many: entry 1: ",
			has:    []string{"Kind"},
		},
		{
			name: "wait on an unknown id",
			call: func() error {
				_, err := h.Engine.Wait(ctx, unknown, 0)
				return err
			},
			is:     []error{flowfabric.ErrNotFound},
			prefix: "flowfabric: wait: ",
			hasNot: []string{"describe"},
		},
		{
			name: "describe an unknown id",
			call: func() error {
				_, err := h.Engine.Describe(ctx, unknown)
				return err
			},
			is:     []error{flowfabric.ErrNotFound},
			prefix: "flowfabric: describe: ",
		},
		{
			name: "wait cancelled",
			call: func() error {
				r, err := h.Engine.SubmitRaw(ctx, "k", nil, nil)
				if err != nil {
					return err
				}
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				_, err = h.Engine.Wait(cctx, r.ID, 0)
				return err
			},
			is:     []error{context.Canceled},
			prefix: "flowfabric: wait: ",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if err == nil {
				t.Fatal("no error")
			}
			for _, target := range c.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.prefix) {
				t.Errorf("%q does not start with %q", msg, c.prefix)
			}
			for _, s := range c.has {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(msg, s) {
					t.Errorf("%q says %q", msg, s)
				}
			}
		})
	}
}

// TestConfigErrorTexts: an invalid worker config names the Go field, the
// value and the accepted range.
func TestConfigErrorTexts(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: -2})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(context.Context, *flowfabric.Task[greet]) error { return nil }))
	err := w.Start(h.Ctx)
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.HasPrefix(err.Error(), "flowfabric: start worker: ") {
		t.Errorf("%q does not start with %q", err, "flowfabric: start worker: ")
	}
	for _, s := range []string{"MaxConcurrent", "got -2", "want at least 1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
	if !errors.Is(err, flowfabric.ErrValidation) {
		t.Errorf("%v is not a validation error", err)
	}
}

// TestNewPanicText: New's panic on an invalid config says "flowfabric:
// new: " and names the field.
func TestNewPanicText(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "flowfabric: new: ") || !strings.Contains(msg, "Scanners.SweepInterval") || !strings.Contains(msg, "got -1s") {
			t.Fatalf("panic %q", msg)
		}
	}()
	flowfabric.New(memstore.New(nil), &flowfabric.Config{Scanners: flowfabric.ScannerConfig{SweepInterval: -time.Second}})
}

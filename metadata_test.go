package flowfabric_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// mdJob carries default metadata in its SubmitOpts.
type mdJob struct{}

func (mdJob) Kind() string { return "md_job" }

func (mdJob) SubmitOpts() flowfabric.SubmitOpts {
	return flowfabric.SubmitOpts{Metadata: map[string]string{"from-args": "a", "both": "args"}}
}

// TestMetadata: metadata travels from the submission to the handler and to
// Describe: the args' metadata and the call's are merged (the call's wins
// per key), a submit hook adds to it on its own copy (the caller's map is
// untouched), and invalid metadata is refused naming the field, storing
// nothing.
func TestMetadata(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		SubmitHooks: []flowfabric.SubmitHook{func(_ context.Context, s *flowfabric.Submission) error {
			if s.Opts.Metadata == nil {
				s.Opts.Metadata = map[string]string{}
			}
			s.Opts.Metadata["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			return nil
		}},
	}})
	var mu sync.Mutex
	seen := map[model.ExecutionID]map[string]string{}
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "md"})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(_ context.Context, t *flowfabric.Task[mdJob]) error {
		mu.Lock()
		seen[t.ID] = maps.Clone(t.Metadata)
		mu.Unlock()
		return nil
	}))
	h.StartWorker(w)

	call := map[string]string{"both": "call", "x-user": "42"}
	id := mustSubmit(t, h, mdJob{}, &flowfabric.SubmitOpts{Metadata: call})
	if s := h.WaitTerminal(id); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state %s", s.PublicState)
	}
	want := map[string]string{"from-args": "a", "both": "call", "x-user": "42",
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	mu.Lock()
	got := seen[id]
	mu.Unlock()
	if !maps.Equal(got, want) {
		t.Fatalf("handler saw %v, want %v", got, want)
	}
	if !maps.Equal(call, map[string]string{"both": "call", "x-user": "42"}) {
		t.Fatalf("the caller's map was changed: %v", call)
	}
	d, err := h.Engine.Describe(h.Ctx, id)
	if err != nil || !maps.Equal(d.Metadata, want) {
		t.Fatalf("described metadata %v (%v), want %v", d.Metadata, err, want)
	}

	before, err := h.Engine.Counts(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Engine.Submit(h.Ctx, mdJob{}, &flowfabric.SubmitOpts{Metadata: map[string]string{"bad key": "v"}})
	var me *model.Error
	if !errors.Is(err, flowfabric.ErrValidation) || !errors.As(err, &me) || me.Field != "Metadata" {
		t.Fatalf("invalid metadata: %v, want a validation error naming Metadata", err)
	}
	after, err := h.Engine.Counts(h.Ctx, nil)
	if err != nil || after.Total != before.Total {
		t.Fatalf("a refused submission stored something: %d executions, was %d (%v)", after.Total, before.Total, err)
	}
}

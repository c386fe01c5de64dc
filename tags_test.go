package flowfabric_test

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// findTagged lists the executions Find finds with tag k = v.
func findTagged(t *testing.T, h *flowfabrictest.Harness, k, v string) []flowfabric.ExecutionID {
	t.Helper()
	page, err := h.Engine.Find(h.Ctx, &flowfabric.FindOpts{TagKey: k, TagValue: v})
	if err != nil {
		t.Fatal(err)
	}
	if page.Next != "" {
		t.Fatalf("Find(%s=%s): more than one page", k, v)
	}
	return page.IDs
}

func wantTags(t *testing.T, what string, got, want map[string]string, err error) {
	t.Helper()
	if err != nil || !maps.Equal(got, want) || got == nil {
		t.Fatalf("%s: %v %v, want %v", what, got, err, want)
	}
}

// TestSetTags: tags change after submission, in a terminal state too;
// Tags and Find see the change at once; a delayed execution stays
// delayed.
func TestSetTags(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	done := mustSubmit(t, h, greet{Name: "ada"}, &flowfabric.SubmitOpts{Tags: map[string]string{"app.batch": "a", "app.note": "n"}})
	later := mustSubmit(t, h, greet{Name: "later"}, &flowfabric.SubmitOpts{Delay: time.Hour})
	h.WaitTerminal(done)

	got, err := h.Engine.SetTags(h.Ctx, done, map[string]string{"app.batch": "b", "ops.owner": "x"}, "app.note")
	wantTags(t, "SetTags of a completed execution", got, map[string]string{"app.batch": "b", "ops.owner": "x"}, err)
	got, err = h.Engine.Tags(h.Ctx, done)
	wantTags(t, "Tags", got, map[string]string{"app.batch": "b", "ops.owner": "x"}, err)
	if ids := findTagged(t, h, "app.batch", "b"); len(ids) != 1 || ids[0] != done {
		t.Fatalf("Find app.batch=b: %v, want %v", ids, done)
	}
	if ids := findTagged(t, h, "app.batch", "a"); len(ids) != 0 {
		t.Fatalf("Find app.batch=a after the change: %v", ids)
	}

	got, err = h.Engine.Tags(h.Ctx, later)
	wantTags(t, "Tags of an untagged execution", got, map[string]string{}, err)
	now := h.Clock.Now()
	got, err = h.Engine.SetTags(h.Ctx, later, map[string]string{"app.batch": "b"})
	wantTags(t, "SetTags of a delayed execution", got, map[string]string{"app.batch": "b"}, err)
	s, err := h.Engine.Describe(h.Ctx, later)
	if err != nil || s.PublicState != flowfabric.PublicDelayed || !s.LastMutationAt.Equal(now) {
		t.Fatalf("delayed execution after SetTags: %v %v, last mutation %v (want %v)", s.PublicState, err, s.LastMutationAt, now)
	}
	got, err = h.Engine.SetTags(h.Ctx, later, nil, "app.batch", "app.absent")
	wantTags(t, "removing every tag", got, map[string]string{}, err)
}

// TestSetTagsRefusals: bad keys and values, a key both set and removed
// and a result over MaxTags fail as validation errors naming the field
// and change nothing; an unknown execution is ErrNotFound; a store
// without model.TagStore is refused.
func TestSetTagsRefusals(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	id := mustSubmit(t, h, greet{Name: "x"}, &flowfabric.SubmitOpts{Delay: time.Hour, Tags: map[string]string{"app.k": "v"}})
	many := map[string]string{}
	for i := range flowfabric.MaxTags {
		many[fmt.Sprintf("app.k%02d", i)] = "v"
	}
	for _, c := range []struct {
		name   string
		set    map[string]string
		remove []string
		field  string
	}{
		{"key without namespace", map[string]string{"nodot": "x"}, nil, "Set"},
		{"remove key with a space", nil, []string{"app.a b"}, "Remove"},
		{"value not UTF-8", map[string]string{"app.k": "\xff"}, nil, "Set"},
		{"set and removed", map[string]string{"app.k": "w"}, []string{"app.k"}, "Remove"},
		{"over MaxTags", many, nil, "Set"},
	} {
		_, err := h.Engine.SetTags(h.Ctx, id, c.set, c.remove...)
		var me *model.Error
		if !errors.Is(err, flowfabric.ErrValidation) || !errors.As(err, &me) || me.Field != c.field {
			t.Errorf("%s: %v, want a validation error on %s", c.name, err, c.field)
		}
	}
	got, err := h.Engine.Tags(h.Ctx, id)
	wantTags(t, "tags after the refusals", got, map[string]string{"app.k": "v"}, err)

	unknown := model.NewExecutionID(id.Partition(), model.NewUUIDv4([16]byte{1, 2, 3}))
	if _, err := h.Engine.SetTags(h.Ctx, unknown, map[string]string{"app.k": "v"}); !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatalf("SetTags of an unknown execution: %v", err)
	}
	if _, err := h.Engine.Tags(h.Ctx, unknown); !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatalf("Tags of an unknown execution: %v", err)
	}

	bare := flowfabric.New(struct{ model.Store }{memstore.New(nil)}, nil)
	if _, err := bare.SetTags(h.Ctx, id, map[string]string{"app.k": "v"}); !errors.Is(err, flowfabric.ErrValidation) {
		t.Fatalf("SetTags on a store without model.TagStore: %v", err)
	}
	if _, err := bare.SetFlowTags(h.Ctx, flowfabric.FlowID(model.NewUUIDv4([16]byte{4})), nil, "app.k"); !errors.Is(err, flowfabric.ErrValidation) {
		t.Fatalf("SetFlowTags on a store without model.TagStore: %v", err)
	}
}

// TestSetFlowTags: a flow's tags change after submission, also once it
// finished; its nodes keep theirs; an unknown flow is ErrFlowNotFound.
func TestSetFlowTags(t *testing.T) {
	h, _ := newFlowHarness(t, nil)
	f := flowfabric.NewFlow()
	a := f.Add(step{Name: "a"}, &flowfabric.SubmitOpts{Lane: flowLane, Tags: map[string]string{"app.node": "a"}})
	res, err := h.Engine.SubmitFlow(h.Ctx, f, &flowfabric.FlowOpts{Tags: map[string]string{"app.build": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.Of(a))
	got, err := h.Engine.SetFlowTags(h.Ctx, res.ID, map[string]string{"app.build": "43", "app.env": "ci"})
	wantTags(t, "SetFlowTags", got, map[string]string{"app.build": "43", "app.env": "ci"}, err)
	got, err = h.Engine.FlowTags(h.Ctx, res.ID)
	wantTags(t, "FlowTags", got, map[string]string{"app.build": "43", "app.env": "ci"}, err)
	got, err = h.Engine.Tags(h.Ctx, res.Of(a))
	wantTags(t, "the node's tags", got, map[string]string{"app.node": "a"}, err)
	got, err = h.Engine.SetFlowTags(h.Ctx, res.ID, nil, "app.build", "app.env")
	wantTags(t, "removing every flow tag", got, map[string]string{}, err)
	got, err = h.Engine.FlowTags(h.Ctx, res.ID)
	wantTags(t, "FlowTags without tags", got, map[string]string{}, err)

	if _, err := h.Engine.SetFlowTags(h.Ctx, res.ID, map[string]string{"Bad": "x"}); !errors.Is(err, flowfabric.ErrInvalidTagKey) {
		t.Fatalf("SetFlowTags with a bad key: %v", err)
	}
	unknown := flowfabric.FlowID(model.NewUUIDv4([16]byte{9}))
	if _, err := h.Engine.SetFlowTags(h.Ctx, unknown, map[string]string{"app.k": "v"}); !errors.Is(err, flowfabric.ErrFlowNotFound) {
		t.Fatalf("SetFlowTags of an unknown flow: %v", err)
	}
	if _, err := h.Engine.FlowTags(h.Ctx, unknown); !errors.Is(err, flowfabric.ErrFlowNotFound) {
		t.Fatalf("FlowTags of an unknown flow: %v", err)
	}
}

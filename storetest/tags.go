package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Tags after create (model.TagStore): setting and removing an
// execution's or a flow's tags, the limit on the resulting set, the
// refusals that write nothing, and the filters that see the new tags.

func testTags(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name  string
		flows bool
		run   func(*tagHarness)
	}{
		{"SetAndRemove", false, tagsSetAndRemove},
		{"NoChangeWritesNothing", false, tagsNoChange},
		{"RemoveAll", false, tagsRemoveAll},
		{"AnyState", false, tagsAnyState},
		{"NotFound", false, tagsNotFound},
		{"Validation", false, tagsValidation},
		{"Limit", false, tagsLimit},
		{"Filters", false, tagsFilters},
		{"Flow", true, tagsFlow},
		{"FlowLimitAndRefusals", true, tagsFlowRefusals},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			ts, ok := optionalOf[model.TagStore](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.TagStore", h.s)
			}
			th := &tagHarness{harness: h, ts: ts}
			if c.flows {
				fs, ok := optionalOf[model.FlowStore](h)
				if !ok {
					t.Skipf("storetest: %T does not implement the optional model.FlowStore", h.s)
				}
				th.fh = &flowHarness{harness: h, fs: fs}
			}
			c.run(th)
		})
	}
}

// tagHarness is a harness with the store's tag operations (and its flow
// operations for the flow tests).
type tagHarness struct {
	*harness
	ts model.TagStore
	fh *flowHarness
}

func (h *tagHarness) setTags(id model.ExecutionID, set map[string]string, remove []string, now time.Time) (*model.TagsSetResult, error) {
	return h.ts.ExecutionTagsSet(h.ctx, &model.ExecutionTagsSetParams{ID: id, Set: set, Remove: remove, Now: now})
}

func (h *tagHarness) setFlowTags(f model.FlowID, set map[string]string, remove []string, now time.Time) (*model.TagsSetResult, error) {
	return h.ts.FlowTagsSet(h.ctx, &model.FlowTagsSetParams{Flow: f, Set: set, Remove: remove, Now: now})
}

// tagsN returns n tags "app.k<i>": "v<i>" from i = from.
func tagsN(from, n int) map[string]string {
	m := make(map[string]string, n)
	for i := from; i < from+n; i++ {
		m[fmt.Sprintf("app.k%02d", i)] = fmt.Sprintf("v%d", i)
	}
	return m
}

// tagsSetAndRemove: a change removes and sets keys (a set key that is
// present gets the new value), returns the full set, stamps
// LastMutationAt and changes nothing else of the execution.
func tagsSetAndRemove(h *tagHarness) {
	id := h.create(at(0), withTags("app.a", "1", "app.b", "2", "ops.c", "3"))
	before := h.view(id)
	res := call(h.setTags(id, map[string]string{"app.b": "20", "app.d": ""}, []string{"app.a", "app.zz"}, at(time.Second))).must(h.t)
	want := map[string]string{"app.b": "20", "ops.c": "3", "app.d": ""}
	wantEqual(h.t, "result", &model.TagsSetResult{Tags: want, Changed: true}, res)
	after := h.view(id)
	if !after.Snapshot.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("LastMutationAt %v, want %v", after.Snapshot.LastMutationAt, at(time.Second))
	}
	before.Snapshot.Tags, before.Snapshot.LastMutationAt = want, at(time.Second)
	wantEqual(h.t, "execution after the change", before, after)
}

// tagsNoChange: setting present values and removing absent keys changes
// nothing and writes nothing (LastMutationAt stays).
func tagsNoChange(h *tagHarness) {
	id := h.create(at(0), withTags("app.a", "1"))
	h.unchanged(id, func() {
		res := call(h.setTags(id, map[string]string{"app.a": "1"}, []string{"app.b"}, at(time.Second))).must(h.t)
		wantEqual(h.t, "result", &model.TagsSetResult{Tags: map[string]string{"app.a": "1"}}, res)
		res = call(h.setTags(id, nil, nil, at(2*time.Second))).must(h.t)
		wantEqual(h.t, "empty change", &model.TagsSetResult{Tags: map[string]string{"app.a": "1"}}, res)
	})
}

// tagsRemoveAll: removing every tag leaves none; an execution created
// without tags gets some.
func tagsRemoveAll(h *tagHarness) {
	id := h.create(at(0), withTags("app.a", "1", "app.b", "2"))
	res := call(h.setTags(id, nil, []string{"app.a", "app.b"}, at(time.Second))).must(h.t)
	if !res.Changed || res.Tags == nil || len(res.Tags) != 0 {
		h.t.Fatalf("remove all: %+v, want changed and an empty, non-nil map", res)
	}
	if tags := h.describe(id).Tags; len(tags) != 0 {
		h.t.Fatalf("tags after removing all: %v", tags)
	}
	bare := h.create(at(0))
	res = call(h.setTags(bare, map[string]string{"app.x": "y"}, nil, at(time.Second))).must(h.t)
	wantEqual(h.t, "first tag", &model.TagsSetResult{Tags: map[string]string{"app.x": "y"}, Changed: true}, res)
	wantEqual(h.t, "described", map[string]string{"app.x": "y"}, h.describe(bare).Tags)
}

// tagsAnyState: tags change in every state, terminal ones included, and
// the change leaves the state, the lease and the indexes alone: a leased
// execution completes with its fence afterwards.
func tagsAnyState(h *tagHarness) {
	check := func(what string, id model.ExecutionID, now time.Time) {
		h.t.Helper()
		before := h.view(id)
		call(h.setTags(id, map[string]string{"app.state": what}, nil, now)).must(h.t)
		after := h.view(id)
		before.Snapshot.Tags = map[string]string{"app.state": what}
		before.Snapshot.LastMutationAt = now
		if d := cmp.Diff(before, after, cmpOpts...); d != "" {
			h.t.Fatalf("%s: the change touched more than the tags (-want +got):\n%s", what, d)
		}
	}
	waiting := h.create(at(0))
	check("waiting", waiting, at(time.Second))
	delayed := h.create(at(0), withDelay(at(time.Hour)))
	check("delayed", delayed, at(time.Second))
	active, c := h.active(at(0))
	check("active", active, at(time.Second))
	h.complete(active, c.Fence(), at(2*time.Second))
	check("completed", active, at(3*time.Second))
	failed, fc := h.active(at(0), withRetry(model.RetryPolicy{}))
	h.fail(failed, fc.Fence(), model.FailurePermanent, at(time.Second))
	check("failed", failed, at(2*time.Second))
	cancelled := h.create(at(0))
	h.cancelOp(cancelled, at(time.Second))
	check("cancelled", cancelled, at(2*time.Second))
}

// tagsNotFound: an unknown execution or flow fails with not-found.
func tagsNotFound(h *tagHarness) {
	_, err := h.setTags(h.newID(h.p0), map[string]string{"app.a": "1"}, nil, at(0))
	wantErr(h.t, err, model.ErrNotFound)
	if fs, ok := optionalOf[model.FlowStore](h.harness); ok {
		fh := &flowHarness{harness: h.harness, fs: fs}
		_, err = h.setFlowTags(fh.flowIn(h.p0), nil, []string{"app.a"}, at(0))
		wantErr(h.t, err, model.ErrFlowNotFound)
	}
}

// tagBadChanges are changes every store refuses before it looks at the
// execution or flow, with the error each gets.
func tagBadChanges() []struct {
	name   string
	set    map[string]string
	remove []string
	want   *model.Error
} {
	return []struct {
		name   string
		set    map[string]string
		remove []string
		want   *model.Error
	}{
		{"set key without namespace", map[string]string{"nodot": "x"}, nil, &model.Error{Code: model.CodeInvalidTagKey, Field: "Set"}},
		{"set key with upper case namespace", map[string]string{"App.x": "x", "app.ok": "y"}, nil, &model.Error{Code: model.CodeInvalidTagKey, Field: "Set"}},
		{"remove key with a space", nil, []string{"app.a b"}, &model.Error{Code: model.CodeInvalidTagKey, Field: "Remove"}},
		{"value too long", map[string]string{"app.a": strings.Repeat("v", model.MaxTagValueBytes+1)}, nil, &model.Error{Code: model.CodeInvalidInput, Field: "Set"}},
		{"value not UTF-8", map[string]string{"app.a": "\xff"}, nil, &model.Error{Code: model.CodeInvalidInput, Field: "Set"}},
		{"set and removed", map[string]string{"app.a": "1"}, []string{"app.a"}, &model.Error{Code: model.CodeInvalidInput, Field: "Remove"}},
		{"too many set", tagsN(0, model.MaxTags+1), nil, &model.Error{Code: model.CodeInvalidInput, Field: "Set"}},
		{"too many removed", nil, func() []string {
			var r []string
			for k := range tagsN(0, model.MaxTags+1) {
				r = append(r, k)
			}
			return r
		}(), &model.Error{Code: model.CodeInvalidInput, Field: "Remove"}},
	}
}

// tagsValidation: bad input fails with a validation error naming the
// field and writes nothing, also for an unknown execution.
func tagsValidation(h *tagHarness) {
	id := h.create(at(0), withTags("app.a", "1"))
	for _, c := range tagBadChanges() {
		h.unchanged(id, func() {
			_, err := h.setTags(id, c.set, c.remove, at(time.Second))
			if e := modelErr(h.t, err, c.want); !e.IsValidation() {
				h.t.Fatalf("%s: %v is not a validation error", c.name, err)
			}
		})
		_, err := h.setTags(h.newID(h.p0), c.set, c.remove, at(time.Second))
		wantErr(h.t, err, c.want)
	}
	h.unchanged(id, func() {
		_, err := h.setTags(id, map[string]string{"app.b": "2"}, nil, time.Time{})
		wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Now"})
		_, err = h.setTags(model.ExecutionID{}, map[string]string{"app.b": "2"}, nil, at(time.Second))
		wantErr(h.t, err, model.ErrValidation)
	})
}

// tagsLimit: the resulting set may hold MaxTags keys; a change that would
// leave more is refused (invalid_input on Set) and writes nothing; removes
// count before sets, and replacing a value does not add a key.
func tagsLimit(h *tagHarness) {
	id := h.create(at(0), func(p *model.ExecutionCreateParams) { p.Tags = tagsN(0, model.MaxTags-4) })
	h.unchanged(id, func() {
		_, err := h.setTags(id, tagsN(100, 5), nil, at(time.Second))
		wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Set"})
	})
	// 60 − 1 + 5 = 64
	res := call(h.setTags(id, tagsN(100, 5), []string{"app.k00"}, at(2*time.Second))).must(h.t)
	if len(res.Tags) != model.MaxTags {
		h.t.Fatalf("%d tags, want %d", len(res.Tags), model.MaxTags)
	}
	call(h.setTags(id, map[string]string{"app.k01": "new", "app.k100": "new"}, nil, at(3*time.Second))).must(h.t)
	h.unchanged(id, func() {
		_, err := h.setTags(id, map[string]string{"app.k01": "newer", "app.one_more": "x"}, nil, at(4*time.Second))
		wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Set"})
	})
	snap := h.describe(id)
	if len(snap.Tags) != model.MaxTags || snap.Tags["app.k01"] != "new" || snap.Tags["app.k100"] != "new" {
		h.t.Fatalf("tags after the refused change: %d, app.k01 %q, app.k100 %q", len(snap.Tags), snap.Tags["app.k01"], snap.Tags["app.k100"])
	}
}

// tagsFilters: ExecutionList's tag filter and a scanner's tag filter
// (IndexScanDue) see a changed tag from the next call on.
func tagsFilters(h *tagHarness) {
	x := h.create(at(0), withTags("app.team", "a"), withDeadline(at(time.Second)))
	y := h.create(at(0), withTags("app.team", "b"), withDeadline(at(2*time.Second)))
	f := model.ScannerFilter{TagKey: "app.team", TagValue: "a"}
	list := func() []model.ExecutionID {
		h.t.Helper()
		return call(h.s.ExecutionList(h.ctx, &model.ExecutionListParams{
			Partition: h.p0, Limit: 10, Filter: model.ListFilter{ScannerFilter: f},
		})).must(h.t).IDs
	}
	scan := func() []model.ExecutionID {
		h.t.Helper()
		res := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
			Partition: h.p0, Index: model.IndexExecutionDeadline, Now: at(time.Minute), Limit: 10, Filter: f,
		})).must(h.t)
		var ids []model.ExecutionID
		for _, it := range res.Items {
			ids = append(ids, it.ID)
		}
		return ids
	}
	wantEqual(h.t, "listed before", []model.ExecutionID{x}, list())
	wantEqual(h.t, "scanned before", []model.ExecutionID{x}, scan())

	call(h.setTags(y, map[string]string{"app.team": "a"}, nil, at(time.Second))).must(h.t)
	call(h.setTags(x, nil, []string{"app.team"}, at(time.Second))).must(h.t)
	wantEqual(h.t, "listed after", []model.ExecutionID{y}, list())
	wantEqual(h.t, "scanned after", []model.ExecutionID{y}, scan())

	call(h.setTags(x, map[string]string{"app.team": "a"}, nil, at(2*time.Second))).must(h.t)
	wantEqual(h.t, "listed both", []model.ExecutionID{x, y}, list())
	wantEqual(h.t, "scanned both", []model.ExecutionID{x, y}, scan())
}

// tagsFlow: a flow's tags change in any state; FlowDescribe shows them
// and LastMutationAt; an unchanged set writes nothing.
func tagsFlow(h *tagHarness) {
	fh := h.fh
	f := fh.newFlow(at(0), map[string]string{"app.a": "1", "app.b": "2"})
	res := call(h.setFlowTags(f, map[string]string{"app.c": "3", "app.a": "10"}, []string{"app.b"}, at(time.Second))).must(h.t)
	want := map[string]string{"app.a": "10", "app.c": "3"}
	wantEqual(h.t, "result", &model.TagsSetResult{Tags: want, Changed: true}, res)
	snap := fh.flow(f)
	wantEqual(h.t, "described", want, snap.Tags)
	if !snap.LastMutationAt.Equal(at(time.Second)) {
		h.t.Fatalf("LastMutationAt %v, want %v", snap.LastMutationAt, at(time.Second))
	}

	res = call(h.setFlowTags(f, map[string]string{"app.c": "3"}, []string{"app.zz"}, at(2*time.Second))).must(h.t)
	wantEqual(h.t, "no change", &model.TagsSetResult{Tags: want}, res)
	wantEqual(h.t, "flow after no change", snap, fh.flow(f))

	// a cancelled flow, and removing every tag
	m := fh.member(f, at(2*time.Second))
	fh.cancelFlow(f, model.CancelAll, at(3*time.Second))
	before := h.describe(m)
	res = call(h.setFlowTags(f, nil, []string{"app.a", "app.c"}, at(4*time.Second))).must(h.t)
	if !res.Changed || res.Tags == nil || len(res.Tags) != 0 {
		h.t.Fatalf("remove all: %+v, want changed and an empty, non-nil map", res)
	}
	snap = fh.flow(f)
	if len(snap.Tags) != 0 || !snap.LastMutationAt.Equal(at(4*time.Second)) || !snap.State.Terminal() {
		h.t.Fatalf("cancelled flow after removing its tags: tags %v, last mutation %v, state %v", snap.Tags, snap.LastMutationAt, snap.State)
	}
	// the flow's tags are not its members'
	wantEqual(h.t, "member", before, h.describe(m))
}

// tagsFlowRefusals: bad input, the limit and an unknown flow write
// nothing to a flow.
func tagsFlowRefusals(h *tagHarness) {
	fh := h.fh
	f := fh.newFlow(at(0), tagsN(0, model.MaxTags-1))
	before := fh.flow(f)
	for _, c := range tagBadChanges() {
		_, err := h.setFlowTags(f, c.set, c.remove, at(time.Second))
		wantErr(h.t, err, c.want)
	}
	_, err := h.setFlowTags(f, tagsN(100, 2), nil, at(time.Second))
	wantErr(h.t, err, &model.Error{Code: model.CodeInvalidInput, Field: "Set"})
	_, err = h.setFlowTags(model.FlowID{}, map[string]string{"app.a": "1"}, nil, at(time.Second))
	wantErr(h.t, err, model.ErrValidation)
	wantEqual(h.t, "flow after the refusals", before, fh.flow(f))

	res := call(h.setFlowTags(f, tagsN(100, 1), nil, at(2*time.Second))).must(h.t)
	if len(res.Tags) != model.MaxTags {
		h.t.Fatalf("%d tags, want %d", len(res.Tags), model.MaxTags)
	}
}

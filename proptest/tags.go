package proptest

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Tags after create (model.TagStore): the actions set and remove drawn
// tags of drawn executions and flows, in any state, and predict the
// outcome from the latest observation (not found, the MaxTags limit, the
// resulting set, whether it changed). The observation reads the tags
// back, so the differential compares them and every later filtered read
// (the ListFilter reads, the filtered scans and unblocks) filters by the
// new tags.

// tagKeys are the keys the tag actions draw: those of tagSets and
// filterTags, so a change moves executions in and out of the filters, and
// one no create uses.
var (
	tagKeys   = []string{"app.k", "ops.team", "app.x"}
	tagValues = []string{"v", "w", "x", ""}
)

// tagChange is a drawn change, or a drawn invalid one.
type tagChange struct {
	set    map[string]string
	remove []string
	now    time.Time
}

// drawTagChange draws a change of the small universe; sometimes a bulk
// set near MaxTags (so the result's limit is reached) or a bulk remove;
// sometimes (bad) one invalid input.
func (m *machine) drawTagChange(t *rapid.T) (c tagChange, bad bool) {
	c.now = m.now()
	c.set = map[string]string{}
	for _, k := range tagKeys {
		switch rapid.IntRange(0, 3).Draw(t, "tag_op") {
		case 1:
			c.set[k] = drawFrom(t, tagValues, "tag_value")
		case 2:
			c.remove = append(c.remove, k)
		}
	}
	if chance(t, 10, "tag_bulk") {
		n := rapid.IntRange(model.MaxTags-3, model.MaxTags).Draw(t, "tag_bulk_n")
		for i := range n - len(c.set) {
			c.set[fmt.Sprintf("bulk.k%02d", i)] = "b"
		}
	}
	if chance(t, 10, "tag_bulk_remove") {
		for i := range model.MaxTags - len(c.remove) {
			if k := fmt.Sprintf("bulk.k%02d", i); !has(c.set, k) {
				c.remove = append(c.remove, k)
			}
		}
	}
	switch invalid(t, 6) {
	case 0:
		c.set["NoDot"] = "x"
	case 1:
		c.remove = append(c.remove, "app.has space")
	case 2:
		c.set["app.k"] = "\xff"
	case 3:
		c.set["app.both"] = "x"
		c.remove = append(c.remove, "app.both")
	case 4:
		c.now = time.Time{}
	case 5:
		for i := range model.MaxTags + 1 {
			c.set[fmt.Sprintf("bulk.k%02d", i)] = "b"
		}
	default:
		return c, false
	}
	return c, true
}

func has(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// wantTags predicts a valid change of tags: the resulting set and
// whether it changed, or the limit's error.
func wantTags(tags map[string]string, c tagChange) (*model.TagsSetResult, *model.Error) {
	out, changed := model.ApplyTagChange(tags, c.set, c.remove)
	if len(out) > model.MaxTags {
		return nil, model.TooManyTags()
	}
	if !changed {
		out = maps.Clone(tags)
		if out == nil {
			out = map[string]string{}
		}
	}
	return &model.TagsSetResult{Tags: out, Changed: changed}, nil
}

// checkTags checks a tag change's answer against the prediction from
// tags (exists false: the execution or flow was not there, notFound the
// error then).
func (m *machine) checkTags(t *rapid.T, op string, exists bool, tags map[string]string, c tagChange, bad bool,
	notFound *model.Error, res *model.TagsSetResult, err error) {
	t.Helper()
	switch {
	case bad:
		m.expectValidation(t, op, err)
	case !exists:
		m.expect(t, errors.Is(err, notFound), "%s of an unknown target: %+v %v, want %s", op, res, err, notFound.Code)
	default:
		want, wantErr := wantTags(tags, c)
		if wantErr != nil {
			var e *model.Error
			m.expect(t, errors.As(err, &e) && e.Code == wantErr.Code && e.Field == wantErr.Field && e.Detail == wantErr.Detail,
				"%s over the limit (%d tags, set %d, remove %d): %+v %v, want %v", op, len(tags), len(c.set), len(c.remove), res, err, wantErr)
			return
		}
		m.expect(t, err == nil && res.Changed == want.Changed && maps.Equal(res.Tags, want.Tags) && res.Tags != nil,
			"%s of %v (set %v remove %v): %+v %v, want %+v", op, tags, c.set, c.remove, res, err, want)
	}
}

// actExecutionTagsSet changes the tags of a drawn execution (any state).
func (m *machine) actExecutionTagsSet(t *rapid.T) {
	id := m.pickExec(t, nil)
	c, bad := m.drawTagChange(t)
	prev := m.snap(id)
	p := &model.ExecutionTagsSetParams{ID: id, Set: c.set, Remove: c.remove, Now: c.now}
	res, err := call(m, t, "ExecutionTagsSet", p, optional(model.TagStore.ExecutionTagsSet))
	var tags map[string]string
	if prev != nil {
		tags = prev.Tags
	}
	m.checkTags(t, "ExecutionTagsSet", prev != nil, tags, c, bad, model.ErrNotFound, res, err)
}

// actFlowTagsSet changes the tags of a drawn flow (any state).
func (m *machine) actFlowTagsSet(t *rapid.T) {
	f := m.pickFlow(t, 5)
	c, bad := m.drawTagChange(t)
	fo := m.flowObs(f)
	p := &model.FlowTagsSetParams{Flow: f, Set: c.set, Remove: c.remove, Now: c.now}
	res, err := call(m, t, "FlowTagsSet", p, optional(model.TagStore.FlowTagsSet))
	var tags map[string]string
	if fo != nil {
		tags = fo.Snapshot.Tags
	}
	m.checkTags(t, "FlowTagsSet", fo != nil, tags, c, bad, model.ErrFlowNotFound, res, err)
}

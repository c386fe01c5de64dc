package flowfabric

import (
	"context"
	"maps"

	"github.com/flowfabric/flowfabric/model"
)

// Tags after submission (issue 14). An execution's or a flow's tags are
// namespaced labels ("team.owner" = "billing") given at submission and
// changed later with SetTags and SetFlowTags. Find's tag filter and the
// scanners' tenant filter (ScannerConfig.Filter) read the current tags.

// MaxTags bounds the tags of one execution or flow.
const MaxTags = model.MaxTags

// SetTags changes the tags of an execution in one atomic step and returns
// its full tag set afterwards. It sets each key of set (replacing a
// present value) and removes each key of remove (an absent one is
// ignored); a key may not be in both. It works in any state, terminal
// ones included, and does not touch the execution's state, lease or
// attempts, so a running handler is not disturbed. A call that changes
// something stamps the execution's LastMutationAt; one that changes
// nothing writes nothing.
//
// Keys are "<namespace>.<name>" (see SubmitOpts.Tags), values valid UTF-8
// of at most 4096 bytes. Bad input, or a result over MaxTags tags, fails
// with an error matching ErrValidation whose *model.Error names the field
// (Set or Remove) and writes nothing; an unknown execution fails with
// ErrNotFound. The store must implement model.TagStore (memstore and
// valkeystore do).
func (e *Engine) SetTags(ctx context.Context, id ExecutionID, set map[string]string, remove ...string) (map[string]string, error) {
	ts, err := e.tagStore()
	if err != nil {
		return nil, wrap("set tags", err)
	}
	r, err := ts.ExecutionTagsSet(ctx, &model.ExecutionTagsSetParams{ID: id, Set: set, Remove: remove, Now: e.clock.Now()})
	if err != nil {
		return nil, wrap("set tags", err)
	}
	return r.Tags, nil
}

// Tags returns an execution's tags (an empty map when it has none), or
// ErrNotFound.
func (e *Engine) Tags(ctx context.Context, id ExecutionID) (map[string]string, error) {
	s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		return nil, wrap("tags", err)
	}
	return nonNilTags(s.Tags), nil
}

// SetFlowTags changes the tags of a flow as SetTags does an execution's
// (the flow's nodes keep theirs), in any state of the flow, and returns
// its full tag set afterwards. An unknown flow fails with
// ErrFlowNotFound.
func (e *Engine) SetFlowTags(ctx context.Context, id FlowID, set map[string]string, remove ...string) (map[string]string, error) {
	ts, err := e.tagStore()
	if err != nil {
		return nil, wrap("set flow tags", err)
	}
	r, err := ts.FlowTagsSet(ctx, &model.FlowTagsSetParams{Flow: id, Set: set, Remove: remove, Now: e.clock.Now()})
	if err != nil {
		return nil, wrap("set flow tags", err)
	}
	return r.Tags, nil
}

// FlowTags returns a flow's tags (an empty map when it has none), or
// ErrFlowNotFound. It reads the flow as DescribeFlow does, so its cost
// grows with the flow.
func (e *Engine) FlowTags(ctx context.Context, id FlowID) (map[string]string, error) {
	s, err := e.DescribeFlow(ctx, id)
	if err != nil {
		return nil, err
	}
	return nonNilTags(s.Tags), nil
}

func nonNilTags(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return maps.Clone(t)
}

// tagStore returns the store's TagStore.
func (e *Engine) tagStore() (model.TagStore, error) {
	ts, ok := e.store.(model.TagStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store", Detail: "no_tag_support",
			Want: "a store implementing model.TagStore (memstore, valkeystore)"}
	}
	return ts, nil
}

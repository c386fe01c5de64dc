package model

import (
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"
)

// TagStore is optional (see Store): changing the tags of an execution or
// a flow after it was created (issue 14; lua-semantics ff_set_execution_tags
// and ff_set_flow_tags). The engine asserts it in Engine.SetTags and
// Engine.SetFlowTags. The tags are read back with ExecutionDescribe and
// FlowDescribe.
//
// A change sets and removes keys in one atomic step, in any state of the
// execution or flow, terminal ones included. Every read that filters by a
// tag (ExecutionList's ListFilter, the scanners' ScannerFilter) sees the
// new tags from the next call on.
type TagStore interface {
	ExecutionTagsSet(ctx context.Context, p *ExecutionTagsSetParams) (*TagsSetResult, error)
	FlowTagsSet(ctx context.Context, p *FlowTagsSetParams) (*TagsSetResult, error)
}

// ValidateTagChange checks a change of a tag set: the keys to set (a
// key that is present gets the new value) and the keys to remove
// (removing an absent key is not an error). Errors name the field Set or
// Remove.
//
// Keys follow the namespaced rule of ValidateTagKey and values the limits
// of ValidateTags; a key may not be both set and removed; set and remove
// hold at most MaxTags keys each. The size of the resulting set is the
// store's to check (TooManyTags).
func ValidateTagChange(set map[string]string, remove []string) error {
	if len(set) > MaxTags {
		return invalidField("Set", "too_many_tags")
	}
	if len(remove) > MaxTags {
		return invalidField("Remove", "too_many_tags")
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the error names the first bad key, whatever the map order
	for _, k := range keys {
		if err := ValidateTagKey(k); err != nil {
			return renameField(err, "Set")
		}
		v := set[k]
		if len(v) > MaxTagValueBytes {
			return invalidField("Set", "value_too_long:"+k)
		}
		if !utf8.ValidString(v) {
			return invalidField("Set", "value_invalid_utf8:"+k)
		}
	}
	for _, k := range remove {
		if err := ValidateTagKey(k); err != nil {
			return renameField(err, "Remove")
		}
		if _, ok := set[k]; ok {
			return invalidField("Remove", "also_set:"+k)
		}
	}
	return nil
}

// ApplyTagChange returns tags with remove removed and set set (a new
// map; tags is not modified) and whether that differs from tags. It does
// not check the result's size.
func ApplyTagChange(tags, set map[string]string, remove []string) (map[string]string, bool) {
	out := make(map[string]string, len(tags)+len(set))
	for k, v := range tags {
		out[k] = v
	}
	changed := false
	for _, k := range remove {
		if _, ok := out[k]; ok {
			delete(out, k)
			changed = true
		}
	}
	for k, v := range set {
		if old, ok := out[k]; !ok || old != v {
			out[k] = v
			changed = true
		}
	}
	return out, changed
}

// TooManyTags is the error of a tag change that would leave more than
// MaxTags tags: invalid_input, Field "Set", Detail "too_many_tags".
// Nothing is written then.
func TooManyTags() *Error { return invalidField("Set", "too_many_tags") }

// renameField returns err (an *Error of ValidateTagKey) naming field.
func renameField(err error, field string) error {
	var me *Error
	if !errors.As(err, &me) {
		return err
	}
	c := *me
	c.Field = field
	return &c
}

// ExecutionTagsSetParams changes the tags of an execution, in any state.
// An unknown execution fails with ErrNotFound. A change that changes
// something stamps the execution's LastMutationAt with Now; one that
// changes nothing (setting present values, removing absent keys) writes
// nothing.
type ExecutionTagsSetParams struct {
	ID     ExecutionID
	Set    map[string]string
	Remove []string
	Now    time.Time
}

// Validate checks every field.
func (p *ExecutionTagsSetParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := ValidateTagChange(p.Set, p.Remove); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowTagsSetParams changes the tags of a flow, in any state. An unknown
// flow fails with ErrFlowNotFound. A change that changes something stamps
// the flow's LastMutationAt with Now.
type FlowTagsSetParams struct {
	Flow   FlowID
	Set    map[string]string
	Remove []string
	Now    time.Time
}

// Validate checks every field.
func (p *FlowTagsSetParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if err := ValidateTagChange(p.Set, p.Remove); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// TagsSetResult reports a tag change.
type TagsSetResult struct {
	// Tags is the full tag set after the change (empty, not nil, when
	// there are none).
	Tags map[string]string
	// Changed is false when the change left the tags as they were.
	Changed bool
}

package memstore

import (
	"context"
	"maps"

	"github.com/flowfabric/flowfabric/model"
)

// Tags (model.TagStore; valkeystore's lua/execution_tags_set.lua and
// lua/flow_tags_set.lua). An execution's tags are its record's tags map
// (X:tags), a flow's its flowRec's (F:tags); every filter reads them
// there, so a change needs no index update.

var _ model.TagStore = (*Store)(nil)

// ExecutionTagsSet implements model.TagStore.
func (s *Store) ExecutionTagsSet(ctx context.Context, p *model.ExecutionTagsSetParams) (*model.TagsSetResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.TagsSetResult, error) {
		tags, changed, err := changeTags(e.tags, p.Set, p.Remove)
		if err != nil {
			return nil, err
		}
		if changed {
			e.tags = tags
			e.lastMutationAt = ms(p.Now)
		}
		return tagsResult(e.tags, changed), nil
	})
}

// FlowTagsSet implements model.TagStore.
func (s *Store) FlowTagsSet(ctx context.Context, p *model.FlowTagsSetParams) (*model.TagsSetResult, error) {
	return withLock(s, ctx, p.Validate(), func() (*model.TagsSetResult, error) {
		f, err := s.flowLoad(p.Flow)
		if err != nil {
			return nil, err
		}
		tags, changed, err := changeTags(f.tags, p.Set, p.Remove)
		if err != nil {
			return nil, err
		}
		if changed {
			f.tags = tags
			f.lastMutationAt = ms(p.Now)
		}
		return tagsResult(f.tags, changed), nil
	})
}

// changeTags applies a validated change to tags: the new map (nil when
// empty, as create leaves an execution without tags) and whether it
// differs, or the error of a result over model.MaxTags.
func changeTags(tags, set map[string]string, remove []string) (map[string]string, bool, error) {
	out, changed := model.ApplyTagChange(tags, set, remove)
	if len(out) > model.MaxTags {
		return nil, false, model.TooManyTags()
	}
	if len(out) == 0 {
		out = nil
	}
	return out, changed, nil
}

func tagsResult(tags map[string]string, changed bool) *model.TagsSetResult {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	return &model.TagsSetResult{Tags: out, Changed: changed}
}

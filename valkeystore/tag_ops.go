package valkeystore

import (
	"context"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

var _ model.TagStore = (*Store)(nil)

// ExecutionTagsSet implements model.TagStore
// (lua/execution_tags_set.lua). The tags stay in X:tags, where create
// wrote them and every tag filter reads them.
func (s *Store) ExecutionTagsSet(ctx context.Context, p *model.ExecutionTagsSetParams) (*model.TagsSetResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionTagsSet, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "set": encodeTags(p.Set), "remove": encodeKeys(p.Remove), "max_tags": model.MaxTags,
	})
	if err != nil {
		return nil, err
	}
	return tagsSetResult(r)
}

// FlowTagsSet implements model.TagStore (lua/flow_tags_set.lua): F:tags.
func (s *Store) FlowTagsSet(ctx context.Context, p *model.FlowTagsSetParams) (*model.TagsSetResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptFlowTagsSet, s.keys.flowKeys(s.cfg, p.Flow), args{
		"now": p.Now, "set": encodeTags(p.Set), "remove": encodeKeys(p.Remove), "max_tags": model.MaxTags,
	})
	if err != nil {
		return nil, err
	}
	return tagsSetResult(r)
}

func tagsSetResult(r *reply) (*model.TagsSetResult, error) {
	res := &model.TagsSetResult{Changed: r.bool("changed"), Tags: r.strMap("tags")}
	return res, r.err()
}

// encodeKeys writes keys as netstrings "<len>:<bytes>", in the given
// order.
func encodeKeys(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		netstring(&b, k)
	}
	return b.String()
}

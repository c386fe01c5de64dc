package proptest

import (
	"context"
	"fmt"

	"github.com/flowfabric/flowfabric/model"
)

// The machine drives every operation of the seam, the optional ones too
// (model.IndexInspector, model.Blocker, model.GrantReclaimer):
// checkOptional refuses a store that lacks one, so the differential never
// silently covers less.
func checkOptional(i int, s model.Store) error {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"IndexInspector", is[model.IndexInspector](s)},
		{"Blocker", is[model.Blocker](s)},
		{"GrantReclaimer", is[model.GrantReclaimer](s)},
		{"FlowStore", is[model.FlowStore](s)},
		{"SuspendStore", is[model.SuspendStore](s)},
		{"AdmissionStore", is[model.AdmissionStore](s)},
		{"StreamStore", is[model.StreamStore](s)},
		{"FeedStore", is[model.FeedStore](s)},
		{"RetentionStore", is[model.RetentionStore](s)},
		{"LaneStore", is[model.LaneStore](s)},
		{"TagStore", is[model.TagStore](s)},
		{"IndexRepairer", is[model.IndexRepairer](s)},
		{"IndexTamperer", is[model.IndexTamperer](s)},
	} {
		if !c.ok {
			return fmt.Errorf("proptest: store %d (%T) does not implement model.%s; the machine calls every operation", i, s, c.name)
		}
	}
	return nil
}

func is[I any](s model.Store) bool {
	_, ok := any(s).(I)
	return ok
}

// optional adapts the method expression of an optional interface
// (model.Blocker.ExecutionBlock) to call's shape; checkOptional made sure
// every store implements it.
func optional[I, P, R any](f func(I, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return func(s model.Store, ctx context.Context, p *P) (R, error) {
		return f(any(s).(I), ctx, p)
	}
}

package proptest

import (
	"context"
	"fmt"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Counts by public state (model.CountStore): every observation reads the
// counters of every partition, so the differential compares them between
// the stores after each step, and countViolations checks them against the
// listing.

// observeCounts reads every partition's counters (nothing for a store
// without model.CountStore).
func observeCounts(ctx context.Context, s model.Store, o *Observation) error {
	cs, ok := s.(model.CountStore)
	if !ok {
		return nil
	}
	r, err := cs.ExecutionCounts(ctx, &model.ExecutionCountsParams{})
	if err != nil {
		return fmt.Errorf("ExecutionCounts: %w", err)
	}
	o.Counts = r.Rows
	if o.Counts == nil {
		o.Counts = []model.CountRow{}
	}
	return nil
}

// countViolations checks that the counters equal a tally of the listed
// executions: no transition, create or delete left one behind.
func (o *Observation) countViolations() []string {
	if o.Counts == nil {
		return nil
	}
	var want []model.CountRow
	for _, x := range o.Execs {
		s := x.Snapshot
		want = append(want, model.CountRow{Namespace: s.Namespace, Lane: s.Lane, Kind: s.Kind, State: s.PublicState, Count: 1})
	}
	want = model.MergeCountRows(want)
	if len(want) == 0 && len(o.Counts) == 0 {
		return nil
	}
	if d := cmp.Diff(want, o.Counts); d != "" {
		return []string{"the counters differ from the listing (-listing +counters):\n" + d}
	}
	return nil
}

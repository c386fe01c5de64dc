package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// Counts by public state (model.CountStore; valkeystore keeps the same
// counters in I:counts, lua/lib/record.lua). Every state change goes
// through setState, which moves e from its old public state's counter to
// the new one; a new execution (phase zero) is added by its first
// setState, and deleteExec takes it out. A counter that reaches zero is
// removed, as the Lua's HDEL does.

// countKey is one counter of a partition.
type countKey struct {
	ns    model.Namespace
	lane  model.LaneID
	kind  model.Kind
	state model.PublicState
}

// countMove moves e from state from (0: not counted yet) to state to (0:
// no longer counted).
func (s *Store) countMove(e *execution, from, to model.PublicState) {
	if from == to {
		return
	}
	pt := s.part(e.id.Partition())
	k := countKey{e.namespace, e.lane, e.kind, from}
	if from != 0 {
		if n := pt.counts[k] - 1; n == 0 {
			delete(pt.counts, k)
		} else {
			pt.counts[k] = n
		}
	}
	if to != 0 {
		if pt.counts == nil {
			pt.counts = make(map[countKey]int64)
		}
		k.state = to
		pt.counts[k]++
	}
}

// counted is e's counted public state, 0 before its first transition.
func (e *execution) counted() model.PublicState {
	if e.lifecyclePhase == 0 {
		return 0
	}
	return model.DerivePublicState(e.lifecyclePhase, e.eligibilityState, e.terminalOutcome)
}

// ExecutionCounts implements model.CountStore.
func (s *Store) ExecutionCounts(ctx context.Context, p *model.ExecutionCountsParams) (*model.ExecutionCountsResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionCountsResult, error) {
		parts := p.Partitions
		if parts == nil {
			parts = make([]int, len(s.parts))
			for i := range parts {
				parts[i] = i
			}
		}
		var rows []model.CountRow
		for _, n := range parts {
			pt := s.parts[n]
			if pt == nil {
				continue
			}
			for k, c := range pt.counts {
				r := model.CountRow{Namespace: k.ns, Lane: k.lane, Kind: k.kind, State: k.state, Count: c}
				if p.Matches(&r) {
					rows = append(rows, r)
				}
			}
		}
		return &model.ExecutionCountsResult{Rows: model.MergeCountRows(rows)}, nil
	})
}

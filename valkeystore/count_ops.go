package valkeystore

import (
	"context"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Counts by public state (model.CountStore). Each partition keeps its
// counters in one hash, I:counts, field "<ns>|<lane>|<state>|<kind>" (only
// the kind may hold '|'), moved by save_exec and execution_delete
// (lua/lib/record.lua) in the same script as the transition. A count reads
// one hash per partition, pipelined.

// ExecutionCounts implements model.CountStore.
func (s *Store) ExecutionCounts(ctx context.Context, p *model.ExecutionCountsParams) (*model.ExecutionCountsResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	parts := p.Partitions
	if parts == nil {
		parts = make([]int, s.cfg.FlowPartitions)
		for i := range parts {
			parts[i] = i
		}
	}
	if len(parts) == 0 {
		return &model.ExecutionCountsResult{}, ctx.Err()
	}
	cmds := make(valkey.Commands, len(parts))
	for i, n := range parts {
		cmds[i] = s.client.B().Hgetall().Key(s.keys.idx(n) + "counts").Build()
	}
	var rows []model.CountRow
	for _, res := range s.client.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err != nil {
			return nil, transportError("execution_counts", err)
		}
		for f, v := range m {
			r, ok := parseCountField(f, v)
			if !ok {
				return nil, &model.Error{Code: model.CodeCorruption, Detail: "counts field " + strconv.Quote(f) + " = " + strconv.Quote(v)}
			}
			if p.Matches(&r) {
				rows = append(rows, r)
			}
		}
	}
	return &model.ExecutionCountsResult{Rows: model.MergeCountRows(rows)}, nil
}

// parseCountField reads one counter of I:counts.
func parseCountField(f, v string) (model.CountRow, bool) {
	parts := strings.SplitN(f, "|", 4)
	if len(parts) != 4 {
		return model.CountRow{}, false
	}
	st, ok := model.ParsePublicState(parts[2])
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		return model.CountRow{}, false
	}
	return model.CountRow{Namespace: model.Namespace(parts[0]), Lane: model.LaneID(parts[1]),
		Kind: model.Kind(parts[3]), State: st, Count: n}, true
}

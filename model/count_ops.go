package model

import (
	"cmp"
	"context"
	"slices"
	"strconv"
)

// CountStore counts executions by public state (issue 14, the inspector).
// Both stores keep a counter per partition, namespace, lane, public state
// and kind, moved by the same atomic step as the transition that changes
// the state (created, every state change, deleted), so a count costs the
// number of distinct (namespace, lane, state, kind) rows, never the number
// of executions.
type CountStore interface {
	ExecutionCounts(ctx context.Context, p *ExecutionCountsParams) (*ExecutionCountsResult, error)
}

// ExecutionCountsParams asks for the counters of some partitions.
type ExecutionCountsParams struct {
	// Partitions are the execution partitions to read (each at most once);
	// nil reads every partition.
	Partitions []int
	// Namespace, Lane and Kind, when set, keep only the rows that match.
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
}

// Validate checks every field.
func (p *ExecutionCountsParams) Validate(cfg PartitionConfig) error {
	np := cfg.WithDefaults().FlowPartitions
	if len(p.Partitions) > np {
		return OutOfRange("Partitions", len(p.Partitions), "at most "+strconv.Itoa(np)+" partitions")
	}
	seen := make(map[int]bool, len(p.Partitions))
	for _, n := range p.Partitions {
		if n < 0 || n >= np {
			return OutOfRange("Partitions", n, "0.."+strconv.Itoa(np-1))
		}
		if seen[n] {
			return invalidField("Partitions", "duplicate")
		}
		seen[n] = true
	}
	if p.Namespace != "" {
		if err := p.Namespace.Validate(); err != nil {
			return err
		}
	}
	if p.Lane != "" {
		if err := p.Lane.Validate(); err != nil {
			return err
		}
	}
	if p.Kind != "" {
		if err := p.Kind.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Matches reports whether a row passes the filter.
func (p *ExecutionCountsParams) Matches(r *CountRow) bool {
	return (p.Namespace == "" || p.Namespace == r.Namespace) &&
		(p.Lane == "" || p.Lane == r.Lane) && (p.Kind == "" || p.Kind == r.Kind)
}

// CountRow is how many executions of a namespace, lane and kind are in a
// public state.
type CountRow struct {
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	State     PublicState
	Count     int64
}

// CompareCountRows orders rows by namespace, lane, kind, then state.
func CompareCountRows(a, b CountRow) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Lane, b.Lane),
		cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.State, b.State))
}

// MergeCountRows adds rows of the same namespace, lane, kind and state,
// drops zero sums, and returns them in CompareCountRows order.
func MergeCountRows(rows []CountRow) []CountRow {
	slices.SortFunc(rows, CompareCountRows)
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && CompareCountRows(out[n-1], r) == 0 {
			out[n-1].Count += r.Count
			continue
		}
		out = append(out, r)
	}
	return slices.DeleteFunc(out, func(r CountRow) bool { return r.Count == 0 })
}

// ExecutionCountsResult holds the nonzero counters, summed over the
// partitions read, in CompareCountRows order.
type ExecutionCountsResult struct {
	Rows []CountRow
}

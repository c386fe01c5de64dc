package flowfabric

import (
	"context"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// CountRow is how many executions of a namespace, lane and kind are in a
// public state.
type CountRow = model.CountRow

// CountOpts narrow Counts; the zero value counts every execution.
type CountOpts struct {
	// Namespace, Lane and Kind, when set, must equal the execution's.
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
}

// Counts is what Counts found.
type Counts struct {
	// Rows holds the nonzero counts by namespace, lane, kind and public
	// state, in that order.
	Rows []CountRow
	// ByState sums Rows per public state.
	ByState map[PublicState]int64
	// Total sums Rows.
	Total int64
}

// Counts counts executions by public state, per namespace, lane and kind.
// The stores keep the counters, moved by the same atomic step as each
// transition, so a call reads one small hash per partition whatever the
// number of executions (docs/ARCHITECTURE.md, "Inspector"). Partitions
// are read one after another, not in one snapshot: under load the sum may
// mix moments a few milliseconds apart, but never counts an execution
// twice or in a state it was never in.
func (e *Engine) Counts(ctx context.Context, opts *CountOpts) (*Counts, error) {
	var o CountOpts
	if opts != nil {
		o = *opts
	}
	rows, err := e.countRows(ctx, &model.ExecutionCountsParams{Namespace: o.Namespace, Lane: o.Lane, Kind: o.Kind})
	if err != nil {
		return nil, wrap("counts", err)
	}
	c := &Counts{Rows: rows, ByState: map[PublicState]int64{}}
	for _, r := range rows {
		c.ByState[r.State] += r.Count
		c.Total += r.Count
	}
	return c, nil
}

// countRows reads the counters of every partition.
func (e *Engine) countRows(ctx context.Context, p *model.ExecutionCountsParams) ([]CountRow, error) {
	cs, ok := e.store.(model.CountStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store", Detail: "no_count_support",
			Want: "a store implementing model.CountStore (memstore, valkeystore)"}
	}
	r, err := cs.ExecutionCounts(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.Rows, nil
}

// LaneInfo describes one lane of the engine's namespace.
type LaneInfo struct {
	Lane LaneID
	// Counts holds the lane's executions per public state, over every kind.
	Counts map[PublicState]int64
	// Workers counts the live worker instances registered for the lane.
	Workers int
	// Paused reports a paused lane (PauseLane).
	Paused bool
}

// Backlog is the lane's work that has not started: waiting, delayed,
// rate limited and waiting for children.
func (l *LaneInfo) Backlog() int64 {
	return l.Counts[PublicWaiting] + l.Counts[PublicDelayed] + l.Counts[PublicRateLimited] + l.Counts[PublicWaitingChildren]
}

// Unserved reports a lane with a backlog and no live worker: work that
// nothing will run until a worker for the lane starts.
func (l *LaneInfo) Unserved() bool { return l.Workers == 0 && l.Backlog() > 0 }

// ListLanes lists the lanes of the engine's namespace: every lane that
// holds an execution, is served by a live worker or was registered with
// RegisterLane, in name order, with its
// counts, its live workers and whether it is paused. A lane with work and
// no worker is listed (Unserved), not silently left waiting.
func (e *Engine) ListLanes(ctx context.Context) ([]LaneInfo, error) {
	rows, err := e.countRows(ctx, &model.ExecutionCountsParams{Namespace: e.ns})
	if err != nil {
		return nil, wrap("lanes", err)
	}
	byLane := map[LaneID]*LaneInfo{}
	lane := func(l LaneID) *LaneInfo {
		if li := byLane[l]; li != nil {
			return li
		}
		li := &LaneInfo{Lane: l, Counts: map[PublicState]int64{}}
		byLane[l] = li
		return li
	}
	for _, r := range rows {
		lane(r.Lane).Counts[r.State] += r.Count
	}
	for l := range e.Lanes() {
		lane(l)
	}
	ws, err := e.store.WorkerList(ctx, &model.WorkerListParams{Namespace: e.ns, Now: e.clock.Now()})
	if err != nil {
		return nil, wrap("lanes", err)
	}
	for _, w := range ws.Workers {
		for _, l := range w.Lanes {
			lane(l).Workers++
		}
	}
	if ls, ok := e.store.(model.LaneStore); ok {
		for l, li := range byLane {
			st, err := ls.LaneState(ctx, &model.LaneStateParams{Lane: l})
			if err != nil {
				return nil, wrap("lanes", err)
			}
			li.Paused = st.Paused
		}
	}
	out := make([]LaneInfo, 0, len(byLane))
	for _, li := range byLane {
		out = append(out, *li)
	}
	slices.SortFunc(out, func(a, b LaneInfo) int { return strings.Compare(string(a.Lane), string(b.Lane)) })
	return out, nil
}

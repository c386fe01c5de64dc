package storetest

import (
	"maps"
	"slices"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

// checkInvariants checks, for every execution of the partitions the
// subtest used, the per-execution invariants of lua-semantics §6 (as
// adapted by ARCHITECTURE.md) that the Store interface can observe. The
// rules are internal/invariant's, the same proptest checks after every
// step: the state vector and its public state, the blocking reason, the
// lane, lease, worker and timer indexes, grants, attempts and the lease
// history.
//
// With a model.CountStore, the counters of those partitions must also
// equal what the listing finds: every transition, create and delete of
// every conformance case moves them.
func (h *harness) checkInvariants() {
	h.t.Helper()
	ids := h.listAll()
	for _, id := range ids {
		for _, msg := range h.violations(id) {
			h.t.Errorf("invariant: %v: %s", id, msg)
		}
	}
	h.checkCounts(ids)
}

// checkCounts compares the store's counters of the subtest's partitions
// with a tally of ids (every execution in them).
func (h *harness) checkCounts(ids []model.ExecutionID) {
	h.t.Helper()
	cs, ok := optionalOf[model.CountStore](h)
	if !ok || len(h.parts) == 0 {
		return
	}
	var want []model.CountRow
	for _, id := range ids {
		d := h.describe(id)
		want = append(want, model.CountRow{Namespace: d.Namespace, Lane: d.Lane, Kind: d.Kind, State: d.PublicState, Count: 1})
	}
	want = model.MergeCountRows(want)
	got, err := cs.ExecutionCounts(h.ctx, &model.ExecutionCountsParams{Partitions: slices.Sorted(maps.Keys(h.parts))})
	if err != nil {
		h.t.Errorf("invariant: ExecutionCounts: %v", err)
		return
	}
	if d := cmp.Diff(want, got.Rows, cmpopts.EquateEmpty()); d != "" {
		h.t.Errorf("invariant: the counters differ from a full listing (-listing +counters):\n%s", d)
	}
}

func (h *harness) violations(id model.ExecutionID) []string {
	return invariant.Violations(&invariant.Exec{
		ID:       id,
		Snapshot: h.describe(id),
		Indexes:  h.indexes(id),
		Attempts: h.attempts(id),
		History:  h.history(id),
		Suspend:  h.suspendView(id),
	})
}

package storetest

import (
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
func (h *harness) checkInvariants() {
	h.t.Helper()
	for _, id := range h.listAll() {
		for _, msg := range h.violations(id) {
			h.t.Errorf("invariant: %v: %s", id, msg)
		}
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

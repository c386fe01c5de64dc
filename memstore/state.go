package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// The blocked eligibility states, in the order ExecutionIndexes checks
// them (Lua's BLOCKED_NAMES): model's list.
var blockedStates = model.BlockedStates

// blockedIndex names the index of a blocked eligibility state
// (BlockedByRoute: "blocked:route"). The mapping is model.IndexFor, the one
// every store and suite uses.
func blockedIndex(es model.EligibilityState) string {
	return model.IndexFor(es)
}

// setState writes all seven dimensions, stamps the transition and moves e
// between the counters of its old and new public state (count_ops.go).
func (s *Store) setState(e *execution, now int64, lp model.LifecyclePhase, os model.OwnershipState,
	es model.EligibilityState, br model.BlockingReason, to model.TerminalOutcome, as model.AttemptState) {
	s.countMove(e, e.counted(), model.DerivePublicState(lp, es, to))
	e.lifecyclePhase, e.ownershipState, e.eligibilityState = lp, os, es
	e.blockingReason, e.terminalOutcome, e.attemptState = br, to, as
	e.blockingDetail = ""
	e.lastTransitionAt = now
	e.lastMutationAt = now
}

// vector is the state vector.
func (e *execution) vector() model.StateVector {
	return model.StateVector{
		LifecyclePhase: e.lifecyclePhase, OwnershipState: e.ownershipState, EligibilityState: e.eligibilityState,
		BlockingReason: e.blockingReason, BlockingDetail: e.blockingDetail,
		TerminalOutcome: e.terminalOutcome, AttemptState: e.attemptState,
	}
}

// notActive is the execution_not_active error with e's state.
func (e *execution) notActive() error {
	st := &model.NotActiveState{
		LifecyclePhase: e.lifecyclePhase, TerminalOutcome: e.terminalOutcome, LeaseEpoch: e.epoch,
	}
	if e.curAttempt >= 0 {
		st.AttemptID = e.attempts[e.curAttempt].ID
	}
	return &model.Error{Code: model.CodeExecutionNotActive, State: st}
}

// grantLive reports whether e holds a grant that may still be used at now.
func grantLive(e *execution, now int64) bool {
	return e.grant != nil && e.grant.expiresAt >= now
}

// clearGrant drops the grant.
func clearGrant(e *execution) { e.grant = nil }

// clearPending drops the pending attempt.
func clearPending(e *execution) { e.pending = nil }

// setPending records the attempt the next claim starts; it follows the
// current one.
func setPending(e *execution, typ model.AttemptType, reason, requestedBy string) {
	e.pending = &model.PendingAttempt{Type: typ, Reason: reason, RequestedBy: requestedBy, PreviousIndex: e.curAttempt}
}

// notifyLease queues a notice of kind for the holder of e's lease, if it
// has one (lease_notify.go). The caller holds the store's lock and has not
// cleared the lease yet; the holder's own operations never call it.
func (s *Store) notifyLease(e *execution, kind model.LeaseNoticeKind) {
	if e.lease == nil {
		return
	}
	s.leaseOut = append(s.leaseOut, leaseNote{
		instance: e.lease.workerInstanceID,
		n:        model.LeaseNotice{Kind: kind, ID: e.id, LeaseEpoch: e.epoch},
	})
}

// clearLease drops the lease and its entry in the holder's lease index
// (workerLeases).
func (s *Store) clearLease(e *execution) {
	if e.lease != nil {
		p := s.part(e.id.Partition())
		if w := p.workerLeases[e.lease.workerInstanceID]; w != nil {
			w.remove(e.id)
			if w.len() == 0 {
				delete(p.workerLeases, e.lease.workerInstanceID)
			}
		}
	}
	e.lease = nil
}

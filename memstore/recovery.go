package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// reclaimable reports whether e is active with an expired or revoked lease.
func reclaimable(e *execution) bool {
	return e.lifecyclePhase == model.PhaseActive &&
		(e.ownershipState == model.OwnershipLeaseExpiredReclaimable || e.ownershipState == model.OwnershipLeaseRevoked)
}

// reclaimCapReached fails e terminally when its recoveries are used up.
func (s *Store) reclaimCapReached(e *execution, now int64) bool {
	if e.reclaimCount < e.maxReclaims {
		return false
	}
	const reason = "max_reclaims_exceeded"
	s.endAttempt(e, now, model.AttemptInterruptedReclaimed, reason, model.FailureInfraCrash)
	s.removeFromLane(e)
	s.releaseLease(e, now, model.LeaseReleased, reason)
	e.failureReason = reason
	e.failureCategory = model.FailureInfraCrash
	s.terminate(e, now, model.OutcomeFailed)
	return true
}

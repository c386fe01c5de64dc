package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// opKind names the worker-facing terminal-ish operations that replay
// idempotently.
type opKind uint8

const (
	opComplete opKind = iota + 1
	opFail
	opDelay
	opCancel
	opAwait
)

// opRecord remembers the last replayable operation (the record's op_*
// fields in valkeystore) and its outcome so that the same caller asking
// again gets the same answer. Only fail, delay and cancel set results.
type opRecord struct {
	kind       opKind
	operator   bool
	fence      model.Fence
	failResult model.FailOutcome
	delayUntil int64
	priorPhase model.LifecyclePhase
}

// fenceMatches reports whether f is e's current lease, epoch and attempt.
func fenceMatches(e *execution, f model.Fence) bool {
	cur := model.Fence{LeaseEpoch: e.epoch}
	if e.lease != nil {
		cur.LeaseID = e.lease.id
	}
	if a := e.currentAttempt(); a != nil {
		cur.AttemptID = a.ID
	}
	return cur == f
}

// validateLease is the spec's VL check for a worker's fenced operation on an
// active execution: phase, revocation, expiry, then identity.
func validateLease(e *execution, f model.Fence, now int64) error {
	if e.lifecyclePhase != model.PhaseActive {
		return e.notActive()
	}
	if e.ownershipState == model.OwnershipLeaseRevoked {
		return model.ErrLeaseRevoked
	}
	if e.ownershipState == model.OwnershipLeaseExpiredReclaimable || e.lease == nil || e.lease.expiresAt <= now {
		return model.ErrLeaseExpired
	}
	if !fenceMatches(e, f) {
		return model.ErrStaleLease
	}
	return nil
}

// opMatches reports whether the last replayable operation was kind by the
// same caller.
func opMatches(e *execution, kind opKind, src model.Source, f model.Fence) bool {
	o := e.op
	if o == nil || o.kind != kind {
		return false
	}
	if src == model.SourceOperator {
		return o.operator
	}
	return !o.operator && o.fence == f
}

// recordOp records the operation and returns the record; the caller sets
// its results.
func recordOp(e *execution, kind opKind, src model.Source, f model.Fence) *opRecord {
	e.op = &opRecord{kind: kind, operator: src == model.SourceOperator, fence: f}
	return e.op
}

// clearOp forgets the last replayable operation.
func clearOp(e *execution) { e.op = nil }

// checkFencedOp is the common front of complete, fail and delay: a replay of
// the same caller's operation returns its record; otherwise the lease must
// be valid (workers) or the execution active (operators).
func checkFencedOp(e *execution, kind opKind, src model.Source, f model.Fence, now int64) (replay *opRecord, err error) {
	if opMatches(e, kind, src, f) && src == model.SourceWorker {
		return e.op, nil
	}
	if src == model.SourceOperator {
		if e.lifecyclePhase != model.PhaseActive {
			return nil, e.notActive()
		}
		return nil, nil
	}
	return nil, validateLease(e, f, now)
}

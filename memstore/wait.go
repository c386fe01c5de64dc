package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// Waitpoints and suspensions, the part every ending execution needs
// (valkeystore/lua/lib/wait.lua): their records, closing them, the
// pending-waitpoint expiry index and the suspended indexes. The
// operations that open, signal and resume suspensions are suspend.go's.
//
// A waitpoint is a record of its partition, keyed by id
// (partition.waitpoints), that knows its execution; an execution keeps its
// waitpoints by creation time, then id, and its open or last suspension.
// Indexes: the lane's "suspended" set (scored by the suspension's timeout,
// noTimeoutScore without one) and the partition's suspended set hold
// exactly the suspended executions; IndexSuspensionTimeout those whose
// suspension has a timeout; IndexWaitpointExpiry each execution with a
// pending waitpoint, scored by the earliest pending expiry.

// waitpointRec is one waitpoint.
type waitpointRec struct {
	id        model.WaitpointID
	exec      model.ExecutionID
	state     model.WaitpointState
	createdAt int64
	// expiresAt is when a pending waitpoint closes (0 while active; a
	// closed one keeps what it had). keepAt is the expiry it returns to
	// pending with when a resume keeps it (0 for a suspension's fresh
	// waitpoint until its first return, see keepExpiry).
	expiresAt, keepAt int64
	signalLimit       int
	suspension        model.SuspensionID
	closedAt          int64
	closedBy          model.CloseReason
	signals           []signalRec
	// dedup maps an idempotency key to the first delivery that used it.
	dedup map[string]dedupEntry
}

// signalRec is one stored signal; seq is its execution's delivery order,
// which merges the signals of several waitpoints.
type signalRec struct {
	seq uint64
	rec model.SignalRecord
}

// storedSignal returns the signal id that e still keeps (on one of its
// waitpoints or its open or last suspension: a delivery applied twice),
// or nil.
func storedSignal(e *execution, id model.SignalID) *model.SignalRecord {
	for _, w := range e.waitpoints {
		for i := range w.signals {
			if w.signals[i].rec.ID == id {
				return &w.signals[i].rec
			}
		}
	}
	if e.susp != nil {
		for i := range e.susp.signals {
			if e.susp.signals[i].rec.ID == id {
				return &e.susp.signals[i].rec
			}
		}
	}
	return nil
}

// dedupEntry remembers a delivery's idempotency key until expiresAt.
type dedupEntry struct {
	signal    model.SignalID
	expiresAt int64
}

// suspensionRec is one suspension of an execution, open until closedBy is
// set.
type suspensionRec struct {
	id           model.SuspensionID
	attemptIndex int
	reason       model.SuspendReason
	// cond is the condition as stored (parsed from condJSON, its
	// canonical form).
	cond        model.ResumeCondition
	condJSON    []byte
	bound       []*waitpointRec // its own waitpoint first
	suspendedAt int64
	timeoutAt   int64
	behavior    model.TimeoutBehavior
	policy      model.ResumePolicy
	escalated   bool
	closedAt    int64
	closedBy    model.CloseReason
	// signals are the signals it counted or ignored, in delivery order.
	signals []signalRec
	// outcome is what ExecutionSuspend answered, for its replay.
	outcome model.SuspendOutcome
}

// own is the suspension's own waitpoint.
func (sp *suspensionRec) own() *waitpointRec { return sp.bound[0] }

// open reports whether the suspension has not closed.
func (sp *suspensionRec) open() bool { return sp.closedBy == 0 }

// openSuspension is e's open suspension, or nil.
func (e *execution) openSuspension() *suspensionRec {
	if e.susp != nil && e.susp.open() {
		return e.susp
	}
	return nil
}

// closeWaitpoint closes w (why: the close reason).
func closeWaitpoint(w *waitpointRec, now int64, why model.CloseReason) {
	w.state, w.closedAt, w.closedBy = model.WaitpointClosed, now, why
}

// keepExpiry is the expiry w returns to pending with when a resume keeps
// it: the one it was created with; for a suspension's fresh waitpoint
// (created active, without one), MaxWaitpointTTL after its creation.
func keepExpiry(w *waitpointRec) int64 {
	if w.keepAt == 0 {
		w.keepAt = w.createdAt + model.MaxWaitpointTTL.Milliseconds()
	}
	return w.keepAt
}

// suspClose closes sp with reason why. Its active waitpoints close with it
// or, when a resume keeps them (resuming and the policy's KeepWaitpoints),
// return to pending with the expiry they keep, their signals consumed
// unless KeepSignals. The indexes are the caller's (removeFromLane,
// wpExpirySync).
func suspClose(sp *suspensionRec, now int64, why model.CloseReason, resuming bool) {
	sp.closedAt, sp.closedBy = now, why
	keep := resuming && sp.policy.KeepWaitpoints
	for _, w := range sp.bound {
		switch {
		case w.state != model.WaitpointActive:
		case keep:
			w.state, w.expiresAt = model.WaitpointPending, keepExpiry(w)
			if !sp.policy.KeepSignals {
				w.signals = nil
			}
		default:
			closeWaitpoint(w, now, why)
		}
	}
}

// wpExpirySync scores e in IndexWaitpointExpiry by its earliest pending
// waitpoint's expiry, or drops it when none is pending. Every change to
// e's waitpoints ends with it.
func (s *Store) wpExpirySync(e *execution) {
	next := e.nextPendingExpiry()
	idx := s.part(e.id.Partition()).wpExpiry
	if next == 0 {
		idx.remove(e.id)
		return
	}
	idx.add(e.id, next)
}

// nextPendingExpiry is the earliest expiry of e's pending waitpoints (0:
// none pending): its IndexWaitpointExpiry score.
func (e *execution) nextPendingExpiry() int64 {
	next := int64(0)
	for _, w := range e.waitpoints {
		if w.state == model.WaitpointPending && (next == 0 || w.expiresAt < next) {
			next = w.expiresAt
		}
	}
	return next
}

// leaveSuspended takes e out of every index of the suspended phase
// (removeFromLane calls it for a suspended e).
func (s *Store) leaveSuspended(e *execution) {
	p, l := s.indexesOf(e)
	l.suspended.remove(e.id)
	p.suspended.remove(e.id)
	p.suspTimeout.remove(e.id)
}

// waitsEnd closes what an ending execution holds open (terminate calls
// it with the outcome to): its open suspension with its active waitpoints
// (the reason follows the outcome; a timeout closed it already), and its
// pending waitpoints (ClosedEnded). The suspended indexes are
// removeFromLane's.
func (s *Store) waitsEnd(e *execution, now int64, to model.TerminalOutcome) {
	if sp := e.openSuspension(); sp != nil {
		why := model.ClosedCancelled
		switch to {
		case model.OutcomeExpired:
			why = model.ClosedExpired
		case model.OutcomeSkipped:
			why = model.ClosedSkipped
		}
		suspClose(sp, now, why, false)
	}
	for _, w := range e.waitpoints {
		if w.state == model.WaitpointPending {
			closeWaitpoint(w, now, model.ClosedEnded)
		}
	}
	s.wpExpirySync(e)
}

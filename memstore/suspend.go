package memstore

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Suspensions, waitpoints and signals (model.SuspendStore, whose
// contract is model/suspend_ops.go; valkeystore/lua/lib/suspend.lua): a
// new suspension binding its waitpoints, signal delivery and the resume
// condition, resume and escalation, and the read views. The records and
// what an ending execution closes are wait.go's.

// noTimeoutScore is the lane "suspended" score of a suspension without a
// timeout.
const noTimeoutScore = model.SuspendedNoTimeoutScore

// reasonSuspensionTimeout is the failure or cancellation reason of an
// execution a suspension timeout ends.
const reasonSuspensionTimeout = "suspension_timeout"

// cancelledByTimeout is the CancelledBy of an execution a suspension
// timeout (TimeoutCancel) cancels.
const cancelledByTimeout = "suspension_timeout"

// delivered is what the condition reads of the suspension's signals, with
// extra appended.
func (sp *suspensionRec) delivered(extra ...model.DeliveredSignal) []model.DeliveredSignal {
	out := make([]model.DeliveredSignal, 0, len(sp.signals)+len(extra))
	for i := range sp.signals {
		out = append(out, sp.signals[i].rec.Delivered())
	}
	return append(out, extra...)
}

// judge sets the effect of a signal delivered to the open suspension:
// ignored (with the reason) when no leaf of the condition reads it,
// resumed when it satisfies the condition, accepted otherwise.
func (sp *suspensionRec) judge(r *model.SignalRecord) {
	own := sp.own().id
	switch {
	case sp.cond.Kind == model.CondOperator:
		r.Effect, r.IgnoredReason = model.SignalIgnored, model.IgnoredOperatorOnly
	case sp.cond.Kind == model.CondTimeout:
		r.Effect, r.IgnoredReason = model.SignalIgnored, model.IgnoredTimeoutOnly
	case !sp.cond.Accepts(own, r.Delivered()):
		r.Effect, r.IgnoredReason = model.SignalIgnored, model.IgnoredNotInCondition
	case sp.cond.Satisfied(own, sp.delivered(r.Delivered())):
		r.Effect = model.SignalResumed
	default:
		r.Effect = model.SignalAccepted
	}
}

// suspendedScore is the lane "suspended" score of a suspension.
func (sp *suspensionRec) suspendedScore() int64 {
	if sp.timeoutAt != 0 {
		return sp.timeoutAt
	}
	return noTimeoutScore
}

// openWaitpoints counts e's pending and active waitpoints.
func (e *execution) openWaitpoints() int {
	n := 0
	for _, w := range e.waitpoints {
		if w.state != model.WaitpointClosed {
			n++
		}
	}
	return n
}

// waitpointOf is waitpoint id if it is e's, else nil.
func (s *Store) waitpointOf(e *execution, id model.WaitpointID) *waitpointRec {
	w := s.part(e.id.Partition()).waitpoints[id]
	if w == nil || w.exec != e.id {
		return nil
	}
	return w
}

// waitpointExists reports whether a waitpoint with id exists in e's
// partition.
func (s *Store) waitpointExists(e *execution, id model.WaitpointID) bool {
	_, ok := s.part(e.id.Partition()).waitpoints[id]
	return ok
}

// waitpointCmp orders an execution's waitpoints: creation time, then id.
func waitpointCmp(a, b *waitpointRec) int {
	if c := cmp.Compare(a.createdAt, b.createdAt); c != 0 {
		return c
	}
	return bytes.Compare(a.id[:], b.id[:])
}

// newWaitpoint stores a waitpoint of e created at now.
func (s *Store) newWaitpoint(e *execution, id model.WaitpointID, state model.WaitpointState, now, expiresAt int64, limit int) *waitpointRec {
	if limit == 0 {
		limit = model.DefaultSignalLimit
	}
	w := &waitpointRec{id: id, exec: e.id, state: state, createdAt: now, expiresAt: expiresAt, keepAt: expiresAt, signalLimit: limit}
	s.part(e.id.Partition()).waitpoints[id] = w
	i, _ := slices.BinarySearchFunc(e.waitpoints, w, waitpointCmp)
	e.waitpoints = slices.Insert(e.waitpoints, i, w)
	return w
}

// dropClosed forgets e's last suspension and its closed waitpoints, with
// their signals, as a new suspension does first.
func (s *Store) dropClosed(e *execution) {
	e.susp = nil
	wps := s.part(e.id.Partition()).waitpoints
	e.waitpoints = slices.DeleteFunc(e.waitpoints, func(w *waitpointRec) bool {
		if w.state != model.WaitpointClosed {
			return false
		}
		delete(wps, w.id)
		return true
	})
}

// bind makes the pending or fresh waitpoint w active under sp.
func bind(w *waitpointRec, sp *suspensionRec) {
	w.state, w.suspension, w.expiresAt = model.WaitpointActive, sp.id, 0
}

// indexSuspended files the suspended e under sp: the lane's suspended set
// (scored by the timeout), the partition's suspended set, and
// IndexSuspensionTimeout exactly when sp has a timeout.
func (s *Store) indexSuspended(e *execution, sp *suspensionRec) {
	p, l := s.indexesOf(e)
	l.suspended.add(e.id, sp.suspendedScore())
	p.suspended.add(e.id)
	if sp.timeoutAt != 0 {
		p.suspTimeout.add(e.id, sp.timeoutAt)
	} else {
		p.suspTimeout.remove(e.id)
	}
}

// suspend parks e's running attempt under the open suspension sp: the
// attempt is paused, the lease released as a worker's delay releases it,
// and e is suspended with sp's blocking reason.
func (s *Store) suspend(e *execution, sp *suspensionRec, now int64) {
	if a := e.currentAttempt(); a != nil {
		a.Status = model.AttemptSuspended
	}
	s.removeFromLane(e)
	s.releaseLease(e, now, model.LeaseReleased, "suspend")
	e.delayUntil = 0
	s.setState(e, now, model.PhaseSuspended, model.OwnershipUnowned, model.NotApplicable,
		sp.reason.BlockingReason(), model.OutcomeNone, model.AttemptInterrupted)
	s.indexSuspended(e, sp)
}

// suspResume ends e's open suspension sp (why) and makes e runnable again with
// its paused attempt interrupted, so the next claim resumes it: eligible
// now (the lane is notified), or delayed by the policy's Delay. The
// suspension's waitpoints close with it, or return to pending
// (KeepWaitpoints). It returns when a delayed e becomes eligible (zero:
// it is eligible now).
func (s *Store) suspResume(e *execution, sp *suspensionRec, now int64, why model.CloseReason) time.Time {
	suspClose(sp, now, why, true)
	s.wpExpirySync(e)
	s.removeFromLane(e)
	s.makeRunnable(e, now, now+sp.policy.Delay.Milliseconds(), model.WaitingForResumeDelay, model.AttemptInterrupted)
	return tm(e.delayUntil)
}

// escalate leaves e suspended for an operator after sp's timeout fired
// with TimeoutEscalate: reason operator review, no timeout any more.
func (s *Store) escalate(e *execution, sp *suspensionRec, now int64) {
	sp.reason, sp.timeoutAt, sp.escalated = model.SuspendForOperatorReview, 0, true
	s.setState(e, now, model.PhaseSuspended, model.OwnershipUnowned, model.NotApplicable,
		sp.reason.BlockingReason(), model.OutcomeNone, model.AttemptInterrupted)
	s.indexSuspended(e, sp)
}

// deliver stores signal r on w (and on sp, the open suspension w is bound
// to, if any) with e's next delivery sequence, and remembers its
// idempotency key until now+ttl.
func deliver(e *execution, w *waitpointRec, sp *suspensionRec, r model.SignalRecord, now, ttl int64) {
	e.sigSeq++
	sr := signalRec{seq: e.sigSeq, rec: r}
	w.signals = append(w.signals, sr)
	if sp != nil {
		sp.signals = append(sp.signals, sr)
	}
	if r.IdempotencyKey == "" {
		return
	}
	if w.dedup == nil {
		w.dedup = make(map[string]dedupEntry)
	}
	for k, d := range w.dedup {
		if d.expiresAt <= now {
			delete(w.dedup, k) // forgotten already: no delivery sees it
		}
	}
	w.dedup[r.IdempotencyKey] = dedupEntry{signal: r.ID, expiresAt: now + ttl}
}

// duplicateOf is the first delivery's id when key was seen on w within
// its TTL at now.
func duplicateOf(w *waitpointRec, key string, now int64) (model.SignalID, bool) {
	if key == "" {
		return model.SignalID{}, false
	}
	d, ok := w.dedup[key]
	if !ok || d.expiresAt <= now {
		return model.SignalID{}, false
	}
	return d.signal, true
}

// buffered collects the signals the waitpoints hold, in delivery order.
func buffered(wps []*waitpointRec) []signalRec {
	var out []signalRec
	for _, w := range wps {
		out = append(out, w.signals...)
	}
	slices.SortFunc(out, func(a, b signalRec) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// cloneSignals copies stored signals out (nil for none).
func cloneSignals(in []signalRec) []model.SignalRecord {
	if len(in) == 0 {
		return nil
	}
	out := make([]model.SignalRecord, len(in))
	for i := range in {
		out[i] = in[i].rec
		out[i].Payload = cloneBytes(in[i].rec.Payload)
	}
	return out
}

// snapshot is the SuspensionDescribe view of sp, a suspension of e.
func (sp *suspensionRec) snapshot(e *execution) *model.SuspensionSnapshot {
	cond, _ := model.ParseCondition(sp.condJSON) // stored canonical: a fresh copy
	snap := &model.SuspensionSnapshot{
		ID: sp.id, Execution: e.id, AttemptIndex: sp.attemptIndex, Reason: sp.reason, Condition: cond,
		Waitpoint: sp.own().id, SuspendedAt: tm(sp.suspendedAt), TimeoutAt: tm(sp.timeoutAt),
		TimeoutBehavior: sp.behavior, Policy: sp.policy, Escalated: sp.escalated,
		ClosedAt: tm(sp.closedAt), ClosedBy: sp.closedBy, Signals: cloneSignals(sp.signals),
	}
	for _, w := range sp.bound {
		snap.Waitpoints = append(snap.Waitpoints, w.id)
	}
	return snap
}

// snapshot is the WaitpointList view of w.
func (w *waitpointRec) snapshot() model.WaitpointSnapshot {
	return model.WaitpointSnapshot{
		ID: w.id, Execution: w.exec, State: w.state, CreatedAt: tm(w.createdAt), ExpiresAt: tm(w.expiresAt),
		SignalLimit: w.signalLimit, Suspension: w.suspension, ClosedAt: tm(w.closedAt), ClosedBy: w.closedBy,
		Signals: cloneSignals(w.signals),
	}
}

// suspendResult is ExecutionSuspend's answer for sp.
func (sp *suspensionRec) suspendResult(replayed bool) *model.ExecutionSuspendResult {
	r := &model.ExecutionSuspendResult{
		Outcome: sp.outcome, Suspension: sp.id, Waitpoint: sp.own().id, CreatedAt: tm(sp.own().createdAt), Replayed: replayed,
	}
	if sp.outcome == model.SuspendAlreadySatisfied {
		r.Signals = cloneSignals(sp.signals)
	}
	return r
}

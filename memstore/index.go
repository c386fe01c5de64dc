package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// runnableIndex returns the lane sorted set that holds a runnable execution in
// eligibility state es: eligible, delayed or the blocked set of es; nil for
// a state no runnable set holds.
func (l *laneIndexes) runnableIndex(es model.EligibilityState) *zset {
	switch es {
	case model.EligibleNow:
		return l.eligible
	case model.NotEligibleUntilTime:
		return l.delayed
	}
	return l.blocked[es]
}

// removeFromLane removes e from whichever lane set its state puts it in
// (valkeystore has no active set: its records hold the phase); a
// suspended e leaves the partition's suspended indexes too.
func (s *Store) removeFromLane(e *execution) {
	_, l := s.indexesOf(e)
	switch e.lifecyclePhase {
	case model.PhaseRunnable:
		if z := l.runnableIndex(e.eligibilityState); z != nil {
			z.remove(e.id)
		}
		switch e.eligibilityState {
		case model.BlockedByRoute:
			l.removeRouteGroup(e)
		case model.BlockedByBudget, model.BlockedByQuota:
			l.admLeaveGroup(e)
		}
	case model.PhaseActive:
		l.active.remove(e.id)
	case model.PhaseSuspended:
		s.leaveSuspended(e)
	case model.PhaseTerminal:
		l.terminal.remove(e.id)
		s.part(e.id.Partition()).retention.remove(e.id)
	}
}

// removeRouteGroup takes e out of its route group, dropping the group
// when it empties.
func (l *laneIndexes) removeRouteGroup(e *execution) {
	key := routeMember(e.namespace, e.requiredCaps.CSV())
	if g := l.routeGroups[key]; g != nil {
		g.remove(e.id)
		if g.len() == 0 {
			delete(l.routeGroups, key)
		}
	}
}

// addEligible puts e in its lane's eligible set with the priority score.
func (s *Store) addEligible(e *execution) {
	_, l := s.indexesOf(e)
	l.eligible.add(e.id, model.EligibleScore(e.priority, e.createdAt))
	s.notifyLane(e.lane, e.id.Partition())
}

// makeRunnable sets e runnable, eligible now or delayed until delayUntil,
// and indexes it. The caller has already removed e from its previous lane
// set.
func (s *Store) makeRunnable(e *execution, now, delayUntil int64, delayReason model.BlockingReason, as model.AttemptState) {
	if delayUntil > now {
		s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, model.NotEligibleUntilTime, delayReason, model.OutcomeNone, as)
		e.delayUntil = delayUntil
		_, l := s.indexesOf(e)
		l.delayed.add(e.id, delayUntil)
		return
	}
	s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, model.EligibleNow, model.WaitingForWorker, model.OutcomeNone, as)
	e.delayUntil = 0
	s.addEligible(e)
}

// releaseLease drops the lease and every index entry that belongs to it.
// The active period ends, so a reclaim grant issued during it goes too,
// and the quota admission the lease held moves to the partition's quota
// release outbox (admission.go).
func (s *Store) releaseLease(e *execution, now int64, kind model.LeaseEventKind, reason string) {
	s.endLease(e, now, kind, reason)
	if e.admissionToken != "" {
		s.admOutbox(e, now)
	}
}

// endLease is releaseLease keeping the admission token in the record:
// ExecutionReclaim's new lease inherits the old one's admission.
func (s *Store) endLease(e *execution, now int64, kind model.LeaseEventKind, reason string) {
	p, l := s.indexesOf(e)
	s.addHistory(e, now, kind, reason)
	clearGrant(e)
	p.leaseExpiry.remove(e.id)
	p.attemptTimeout.remove(e.id)
	l.active.remove(e.id)
	s.clearLease(e)
	e.timeoutAt = 0
}

// terminate makes e terminal with outcome to and closes what it holds
// open (waitsEnd). The caller has released the lease and removed e from
// its lane set.
func (s *Store) terminate(e *execution, now int64, to model.TerminalOutcome) {
	p, l := s.indexesOf(e)
	as := model.AttemptTerminal
	if e.totalAttempts == 0 {
		as = model.AttemptNone
	}
	s.setState(e, now, model.PhaseTerminal, model.OwnershipUnowned, model.NotApplicable, model.BlockingNone, to, as)
	e.terminalAt = now
	e.delayUntil = 0
	clearPending(e)
	clearGrant(e)
	p.deadline.remove(e.id)
	p.attemptTimeout.remove(e.id)
	l.terminal.add(e.id, now)
	s.retentionAdd(e, now, to)
	s.feedCompletion(e, now, to)
	s.waitsEnd(e, now, to)
	s.flowEnded(e, now)
}

// cancelExec ends a non-terminal e cancelled with reason, by by
// (cancelledBy); notify tells an active holder that its lease is gone. It
// returns e's phase before.
func (s *Store) cancelExec(e *execution, now int64, reason, by string, notify bool) model.LifecyclePhase {
	prior := e.lifecyclePhase
	s.removeFromLane(e)
	if prior == model.PhaseActive {
		if notify {
			s.notifyLease(e, model.LeaseNoticeCancelled)
		}
		s.releaseLease(e, now, model.LeaseCancelled, reason)
	}
	s.endAttempt(e, now, model.AttemptEndedCancelled, reason, "")
	s.terminate(e, now, model.OutcomeCancelled)
	e.cancellationReason = reason
	e.cancelledBy = by
	return prior
}

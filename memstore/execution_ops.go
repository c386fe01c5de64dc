package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionCreate implements model.ExecutionStore.
func (s *Store) ExecutionCreate(ctx context.Context, p *model.ExecutionCreateParams) (*model.ExecutionCreateResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionCreateResult, error) {
		now := ms(p.Now)
		s.gcIdem(now, 16)

		ik := idemKey{p.ID.Partition(), p.Namespace, p.IdempotencyKey}
		if p.IdempotencyKey != "" {
			// a key naming a deleted execution is free again
			if ent, ok := s.idem[ik]; ok && ent.expiresAt > now && s.execs[ent.id] != nil && s.idemBlocks(ent.id, p.IdempotencyStates) {
				return s.duplicate(ent.id), nil
			}
		}
		if _, ok := s.execs[p.ID]; ok {
			return s.duplicate(p.ID), nil
		}
		var flow *flowRec
		if !p.Flow.IsZero() {
			f, err := s.flowJoinable(p.Flow)
			if err != nil {
				return nil, err
			}
			flow = f
		}

		e := s.newExec(p, now)
		if flow != nil {
			// born held, its RunAt kept for its release
			if d := ms(p.DelayUntil); d > now {
				e.delayUntil = d
			}
			s.hold(e, now, model.AttemptPendingFirst)
			s.flowJoin(flow, e, now)
		} else {
			s.makeRunnable(e, now, ms(p.DelayUntil), model.WaitingForDelay, model.AttemptPendingFirst)
		}

		if p.IdempotencyKey != "" {
			ttl := p.IdempotencyTTL
			if ttl == 0 {
				ttl = model.DefaultIdempotencyTTL
			}
			exp := now + ttl.Milliseconds()
			s.idem[ik] = idemEntry{id: p.ID, expiresAt: exp}
			s.idemGC.tree.Set(idemItem{exp, ik})
		}
		return &model.ExecutionCreateResult{ID: p.ID, PublicState: e.vector().PublicState()}, nil
	})
}

// idemBlocks reports whether the execution an idempotency key names
// blocks a new one: always without states; with states, while it is
// stored and in one of them.
func (s *Store) idemBlocks(id model.ExecutionID, states model.PublicStateSet) bool {
	if states == 0 {
		return true
	}
	e := s.execs[id]
	return e != nil && states.Has(e.vector().PublicState())
}

func (s *Store) duplicate(id model.ExecutionID) *model.ExecutionCreateResult {
	r := &model.ExecutionCreateResult{ID: id, Duplicate: true}
	if e := s.execs[id]; e != nil {
		r.PublicState = e.vector().PublicState()
	}
	return r
}

// ExecutionComplete implements model.ExecutionStore.
func (s *Store) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionCompleteResult, error) {
		now := ms(p.Now)
		replay, err := checkFencedOp(e, opComplete, p.Source, p.Fence, now)
		if err != nil {
			return nil, err
		}
		res := &model.ExecutionCompleteResult{Replayed: replay != nil}
		if replay == nil {
			if p.Source == model.SourceOperator {
				s.notifyLease(e, model.LeaseNoticeOverridden)
			}
			s.endAttempt(e, now, model.AttemptEndedSuccess, "", "")
			e.result = nonEmpty(p.Result)
			e.hasResult = true
			s.removeFromLane(e)
			s.releaseLease(e, now, model.LeaseReleased, "completed")
			s.terminate(e, now, model.OutcomeSuccess)
			recordOp(e, opComplete, p.Source, p.Fence)
		}
		if p.Next != nil && replay == nil {
			res.Next = s.claimNext(p.ID.Partition(), p.Next, now)
		}
		return res, nil
	})
}

// ExecutionFail implements model.ExecutionStore.
func (s *Store) ExecutionFail(ctx context.Context, p *model.ExecutionFailParams) (*model.ExecutionFailResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionFailResult, error) {
		now := ms(p.Now)
		replay, err := checkFencedOp(e, opFail, p.Source, p.Fence, now)
		if err != nil {
			return nil, err
		}
		if replay != nil {
			return &model.ExecutionFailResult{Outcome: replay.failResult, DelayUntil: tm(replay.delayUntil), Replayed: true}, nil
		}
		cat := p.Category
		if cat == "" {
			cat = model.FailureTransient
		}
		if p.Source == model.SourceOperator {
			s.notifyLease(e, model.LeaseNoticeOverridden)
		}
		s.endAttempt(e, now, model.AttemptEndedFailure, p.Reason, cat)
		s.removeFromLane(e)
		s.releaseLease(e, now, model.LeaseReleased, "failed")
		res := s.failOrRetry(e, now, p.Reason, cat)
		op := recordOp(e, opFail, p.Source, p.Fence)
		op.failResult, op.delayUntil = res.Outcome, ms(res.DelayUntil)
		return res, nil
	})
}

// ExecutionDelay implements model.ExecutionStore.
func (s *Store) ExecutionDelay(ctx context.Context, p *model.ExecutionDelayParams) (*model.ExecutionDelayResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionDelayResult, error) {
		now := ms(p.Now)
		replay, err := checkFencedOp(e, opDelay, p.Source, p.Fence, now)
		if err != nil {
			return nil, err
		}
		if replay != nil {
			return &model.ExecutionDelayResult{DelayUntil: tm(replay.delayUntil), Replayed: true}, nil
		}
		until := ms(p.DelayUntil)
		if p.Source == model.SourceOperator {
			s.notifyLease(e, model.LeaseNoticeOverridden)
		}
		if a := e.currentAttempt(); a != nil {
			a.Status = model.AttemptSuspended
		}
		s.removeFromLane(e)
		s.releaseLease(e, now, model.LeaseReleased, "worker_delay")
		s.makeRunnable(e, now, until, model.WaitingForDelay, model.AttemptInterrupted)
		recordOp(e, opDelay, p.Source, p.Fence).delayUntil = until
		return &model.ExecutionDelayResult{DelayUntil: tm(until)}, nil
	})
}

// ExecutionCancel implements model.ExecutionStore.
func (s *Store) ExecutionCancel(ctx context.Context, p *model.ExecutionCancelParams) (*model.ExecutionCancelResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionCancelResult, error) {
		now := ms(p.Now)
		if e.lifecyclePhase == model.PhaseTerminal && opMatches(e, opCancel, p.Source, p.Fence) {
			return &model.ExecutionCancelResult{PriorPhase: e.op.priorPhase, Replayed: true}, nil
		}
		if p.Source == model.SourceWorker {
			if err := validateLease(e, p.Fence, now); err != nil {
				return nil, err
			}
		} else if e.lifecyclePhase == model.PhaseTerminal {
			return nil, e.notActive()
		}
		by := "worker"
		if p.Source == model.SourceOperator {
			by = string(model.SourceOperator)
		}
		prior := s.cancelExec(e, now, p.Reason, by, p.Source == model.SourceOperator)
		recordOp(e, opCancel, p.Source, p.Fence).priorPhase = prior
		return &model.ExecutionCancelResult{PriorPhase: prior}, nil
	})
}

// ExecutionChangePriority implements model.ExecutionStore.
func (s *Store) ExecutionChangePriority(ctx context.Context, p *model.ExecutionChangePriorityParams) (*model.ExecutionChangePriorityResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionChangePriorityResult, error) {
		if e.lifecyclePhase == model.PhaseTerminal {
			return nil, model.ErrNotEligible
		}
		old := e.priority
		e.priority = model.ClampPriority(p.Priority)
		e.lastMutationAt = ms(p.Now)
		if e.lifecyclePhase == model.PhaseRunnable && e.eligibilityState == model.EligibleNow {
			_, l := s.indexesOf(e)
			l.eligible.add(e.id, model.EligibleScore(e.priority, e.createdAt))
		}
		return &model.ExecutionChangePriorityResult{Old: old, New: e.priority}, nil
	})
}

// ExecutionReplay implements model.ExecutionStore.
func (s *Store) ExecutionReplay(ctx context.Context, p *model.ExecutionReplayParams) (*model.ExecutionReplayResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionReplayResult, error) {
		if e.lifecyclePhase != model.PhaseTerminal {
			return nil, model.ErrNotTerminal
		}
		if e.replayCount >= e.maxReplays {
			return nil, model.ErrMaxReplaysExhausted
		}
		now := ms(p.Now)
		s.removeFromLane(e)
		e.replayCount++
		e.retryCount = 0
		e.reclaimCount = 0
		e.terminalAt = 0
		e.failureReason, e.failureCategory = "", ""
		e.cancellationReason, e.cancelledBy = "", ""
		e.result, e.hasResult = nil, false
		clearOp(e)
		setPending(e, model.AttemptReplay, p.Reason, p.RequestedBy)
		if e.deadline > now {
			pt, _ := s.indexesOf(e)
			pt.deadline.add(e.id, e.deadline)
		} else {
			e.deadline = 0 // a replay runs again; a deadline already passed is dropped
		}
		if !s.flowReplayed(e, now, model.AttemptPendingReplay) {
			s.makeRunnable(e, now, 0, model.WaitingForWorker, model.AttemptPendingReplay)
		}
		s.addHistory(e, now, model.LeaseReplayed, p.Reason)
		return &model.ExecutionReplayResult{PublicState: e.vector().PublicState()}, nil
	})
}

// ExecutionUpdateProgress implements model.ExecutionStore.
func (s *Store) ExecutionUpdateProgress(ctx context.Context, p *model.ExecutionUpdateProgressParams) (*model.ExecutionUpdateProgressResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionUpdateProgressResult, error) {
		now := ms(p.Now)
		if err := validateLease(e, p.Fence, now); err != nil {
			return nil, err
		}
		e.progressPct = p.Percent
		e.progressMsg = p.Message
		e.progressAt = now
		e.lastMutationAt = now
		return &model.ExecutionUpdateProgressResult{}, nil
	})
}

// ExecutionExpire implements model.ExecutionStore.
func (s *Store) ExecutionExpire(ctx context.Context, p *model.ExecutionExpireParams) (*model.ExecutionExpireResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionExpireResult, error) {
		now := ms(p.Now)
		pt := s.part(p.ID.Partition())
		idx := pt.deadline
		if p.Reason == model.ExpireAttemptTimeout {
			idx = pt.attemptTimeout
		}
		e := s.execs[p.ID]
		if e == nil {
			idx.remove(p.ID)
			return &model.ExecutionExpireResult{Outcome: model.ExpireNotFoundCleaned}, nil
		}
		if e.lifecyclePhase == model.PhaseTerminal {
			idx.remove(p.ID)
			return &model.ExecutionExpireResult{Outcome: model.ExpireAlreadyTerminal, PriorPhase: e.lifecyclePhase}, nil
		}
		prior := e.lifecyclePhase
		if p.Reason == model.ExpireAttemptTimeout {
			if e.lifecyclePhase != model.PhaseActive || e.timeoutAt == 0 {
				idx.remove(p.ID)
				return &model.ExecutionExpireResult{Outcome: model.ExpireNotActiveCleaned, PriorPhase: prior}, nil
			}
			if e.timeoutAt > now {
				return &model.ExecutionExpireResult{Outcome: model.ExpireNotYetDue, PriorPhase: prior}, nil
			}
			reason := model.ExpireAttemptTimeout.String()
			s.notifyLease(e, model.LeaseNoticeTimedOut)
			s.endAttempt(e, now, model.AttemptEndedFailure, reason, model.FailureTimeout)
			s.removeFromLane(e)
			s.releaseLease(e, now, model.LeaseReleased, reason)
			if e.retryCount < e.retry.MaxRetries {
				r := s.failOrRetry(e, now, reason, model.FailureTimeout)
				return &model.ExecutionExpireResult{Outcome: model.ExpireRetryScheduled, PriorPhase: prior, DelayUntil: r.DelayUntil}, nil
			}
			e.failureReason = reason
			e.failureCategory = model.FailureTimeout
			s.terminate(e, now, model.OutcomeExpired)
			return &model.ExecutionExpireResult{Outcome: model.ExpireExpired, PriorPhase: prior}, nil
		}
		if e.deadline == 0 {
			idx.remove(p.ID)
			return &model.ExecutionExpireResult{Outcome: model.ExpireNotActiveCleaned, PriorPhase: prior}, nil
		}
		if e.deadline > now {
			return &model.ExecutionExpireResult{Outcome: model.ExpireNotYetDue, PriorPhase: prior}, nil
		}
		reason := model.ExpireExecutionDeadline.String()
		s.removeFromLane(e)
		if prior == model.PhaseActive {
			s.notifyLease(e, model.LeaseNoticeTimedOut)
			s.releaseLease(e, now, model.LeaseReleased, reason)
		}
		s.endAttempt(e, now, model.AttemptEndedFailure, reason, model.FailureTimeout)
		e.failureReason = reason
		e.failureCategory = model.FailureTimeout
		s.terminate(e, now, model.OutcomeExpired)
		return &model.ExecutionExpireResult{Outcome: model.ExpireExpired, PriorPhase: prior}, nil
	})
}

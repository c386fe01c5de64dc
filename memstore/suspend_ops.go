package memstore

import (
	"context"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

var _ model.SuspendStore = (*Store)(nil)

// WaitpointCreate implements model.SuspendStore: a pending waitpoint of
// the caller's running attempt, in IndexWaitpointExpiry until a
// suspension binds it.
func (s *Store) WaitpointCreate(ctx context.Context, p *model.WaitpointCreateParams) (*model.WaitpointCreateResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.WaitpointCreateResult, error) {
		now := ms(p.Now)
		if err := validateLease(e, p.Fence, now); err != nil {
			return nil, err
		}
		if w := s.waitpointOf(e, p.Waitpoint); w != nil && w.state == model.WaitpointPending {
			return &model.WaitpointCreateResult{CreatedAt: tm(w.createdAt), Replayed: true}, nil
		}
		if s.waitpointExists(e, p.Waitpoint) {
			return nil, waitpointExistsErr()
		}
		if e.openWaitpoints() >= model.MaxOpenWaitpoints {
			return nil, model.ErrWaitpointLimit
		}
		w := s.newWaitpoint(e, p.Waitpoint, model.WaitpointPending, now, ms(p.ExpiresAt), p.SignalLimit)
		s.wpExpirySync(e)
		e.lastMutationAt = now
		return &model.WaitpointCreateResult{CreatedAt: tm(w.createdAt)}, nil
	})
}

// waitpointExistsErr refuses a new waitpoint whose id is taken.
func waitpointExistsErr() error {
	return &model.Error{Code: model.CodeInvalidInput, Field: "Waitpoint", Detail: "exists"}
}

// ExecutionSuspend implements model.SuspendStore: it opens a suspension
// from the caller's running attempt, binding its waitpoints; when their
// buffered signals already satisfy the condition it is recorded closed
// (SuspendAlreadySatisfied) and the attempt keeps its lease, otherwise
// the execution is suspended. The execution's current or last suspension
// id replays.
func (s *Store) ExecutionSuspend(ctx context.Context, p *model.ExecutionSuspendParams) (*model.ExecutionSuspendResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionSuspendResult, error) {
		if e.susp != nil && e.susp.id == p.Suspension {
			return e.susp.suspendResult(true), nil
		}
		now := ms(p.Now)
		if err := validateLease(e, p.Fence, now); err != nil {
			return nil, err
		}
		pending, err := s.pendingToBind(e, p)
		if err != nil {
			return nil, err
		}
		s.dropClosed(e)
		bound := pending
		if !p.UsePending {
			fresh := s.newWaitpoint(e, p.Waitpoint, model.WaitpointActive, now, 0, p.SignalLimit)
			bound = append([]*waitpointRec{fresh}, pending...)
		}
		sp := newSuspension(e, p, bound, now)
		e.susp = sp
		e.lastMutationAt = now
		if sp.cond.Satisfied(sp.own().id, sp.delivered()) {
			sp.outcome = model.SuspendAlreadySatisfied
			suspClose(sp, now, model.ClosedSatisfied, false)
		} else {
			sp.outcome = model.Suspended
			s.suspend(e, sp, now)
		}
		s.wpExpirySync(e)
		return sp.suspendResult(false), nil
	})
}

// pendingToBind checks the waitpoints a suspension binds and returns the
// pending ones in BoundWaitpoints order (its own first with UsePending;
// without, its fresh own id must be free and within MaxOpenWaitpoints).
func (s *Store) pendingToBind(e *execution, p *model.ExecutionSuspendParams) ([]*waitpointRec, error) {
	ids := p.BoundWaitpoints()
	var out []*waitpointRec
	if p.UsePending {
		w, err := s.pendingWaitpoint(e, p.Waitpoint, "Waitpoint", "")
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	} else if s.waitpointExists(e, p.Waitpoint) {
		return nil, waitpointExistsErr()
	} else if e.openWaitpoints() >= model.MaxOpenWaitpoints {
		return nil, model.ErrWaitpointLimit
	}
	for _, id := range ids[1:] {
		w, err := s.pendingWaitpoint(e, id, "Condition", id.String())
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// pendingWaitpoint returns e's pending waitpoint id, or
// ErrWaitpointNotFound / ErrWaitpointNotPending naming field and detail.
func (s *Store) pendingWaitpoint(e *execution, id model.WaitpointID, field, detail string) (*waitpointRec, error) {
	w := s.waitpointOf(e, id)
	if w == nil {
		return nil, &model.Error{Code: model.CodeWaitpointNotFound, Field: field, Detail: detail}
	}
	if w.state != model.WaitpointPending {
		return nil, &model.Error{Code: model.CodeWaitpointNotPending, Field: field, Detail: detail}
	}
	return w, nil
}

// newSuspension opens the suspension p describes over bound (its own
// waitpoint first), binding them; the buffered signals they hold are its
// first signals.
func newSuspension(e *execution, p *model.ExecutionSuspendParams, bound []*waitpointRec, now int64) *suspensionRec {
	condJSON, _ := model.EncodeCondition(p.Condition) // validated
	cond, _ := model.ParseCondition(condJSON)
	sp := &suspensionRec{
		id: p.Suspension, attemptIndex: e.curAttempt, reason: p.Reason, cond: cond, condJSON: condJSON,
		bound: bound, suspendedAt: now, timeoutAt: ms(p.TimeoutAt), behavior: p.Behavior(), policy: p.Policy,
		signals: buffered(bound),
	}
	for _, w := range bound {
		bind(w, sp)
	}
	return sp
}

// SignalDeliver implements model.SuspendStore: a pending waitpoint
// buffers the signal; an active one records it for its open suspension,
// whose condition decides whether it is ignored, accepted, or resumes the
// execution.
func (s *Store) SignalDeliver(ctx context.Context, p *model.SignalDeliverParams) (*model.SignalDeliverResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.Execution, func(e *execution) (*model.SignalDeliverResult, error) {
		now := ms(p.Now)
		w := s.waitpointOf(e, p.Waitpoint)
		if w == nil {
			return nil, &model.Error{Code: model.CodeWaitpointNotFound, Field: "Waitpoint"}
		}
		if w.createdAt != ms(p.WaitpointCreatedAt) {
			return nil, model.ErrInvalidToken
		}
		if r := storedSignal(e, p.Signal); r != nil {
			return &model.SignalDeliverResult{Signal: r.ID, Effect: r.Effect, IgnoredReason: r.IgnoredReason,
				State: e.vector().PublicState(), Replayed: true}, nil
		}
		if first, dup := duplicateOf(w, p.IdempotencyKey, now); dup {
			s.feedAppend(p, first, model.SignalDuplicate)
			return &model.SignalDeliverResult{Signal: first, Effect: model.SignalDuplicate, State: e.vector().PublicState()}, nil
		}
		if w.state == model.WaitpointClosed {
			return nil, model.ErrWaitpointClosed
		}
		if len(w.signals) >= w.signalLimit {
			return nil, model.ErrSignalLimit
		}
		r := model.SignalRecord{
			ID: p.Signal, Waitpoint: p.Waitpoint, Name: p.Name, Source: p.Source, Payload: nonEmpty(p.Payload),
			IdempotencyKey: p.IdempotencyKey, Effect: model.SignalBuffered, DeliveredAt: tm(now),
		}
		var sp *suspensionRec
		if w.state == model.WaitpointActive {
			sp = e.openSuspension() // an active waitpoint's suspension is open
			sp.judge(&r)
		}
		ttl := p.DedupTTL
		if ttl == 0 {
			ttl = model.DefaultSignalDedupTTL
		}
		deliver(e, w, sp, r, now, ttl.Milliseconds())
		s.feedAppend(p, r.ID, r.Effect)
		e.lastMutationAt = now
		res := &model.SignalDeliverResult{Signal: r.ID, Effect: r.Effect, IgnoredReason: r.IgnoredReason}
		if r.Effect == model.SignalResumed {
			res.DelayUntil = s.suspResume(e, sp, now, model.ClosedBySignal)
		}
		res.State = e.vector().PublicState()
		return res, nil
	})
}

// ExecutionResume implements model.SuspendStore: an operator resumes a
// suspended execution whatever its condition.
func (s *Store) ExecutionResume(ctx context.Context, p *model.ExecutionResumeParams) (*model.ExecutionResumeResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.ExecutionResumeResult, error) {
		sp := e.openSuspension()
		if sp == nil {
			return nil, model.ErrNotSuspended
		}
		until := s.suspResume(e, sp, ms(p.Now), model.ClosedByOperator)
		return &model.ExecutionResumeResult{State: e.vector().PublicState(), DelayUntil: until}, nil
	})
}

// SuspensionExpire implements model.SuspendStore: the suspension-timeout
// scanner's step for one IndexSuspensionTimeout entry.
func (s *Store) SuspensionExpire(ctx context.Context, p *model.SuspensionExpireParams) (*model.SuspensionExpireResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.SuspensionExpireResult, error) {
		now := ms(p.Now)
		out := func(o model.SuspensionExpireOutcome) (*model.SuspensionExpireResult, error) {
			return &model.SuspensionExpireResult{Outcome: o}, nil
		}
		idx := s.part(p.ID.Partition()).suspTimeout
		e := s.execs[p.ID]
		if e == nil {
			idx.remove(p.ID)
			return out(model.SuspensionExpireNotFoundCleaned)
		}
		sp := e.openSuspension()
		if sp == nil || sp.timeoutAt == 0 {
			idx.remove(p.ID)
			return out(model.SuspensionExpireNotSuspendedCleaned)
		}
		if sp.timeoutAt > now {
			return out(model.SuspensionExpireNotYetDue)
		}
		o, until := s.timeOut(e, sp, now)
		return &model.SuspensionExpireResult{Outcome: o, DelayUntil: until}, nil
	})
}

// timeOut applies the behaviour of sp's timeout, due at now; an
// auto-resume into the delayed index reports when it becomes eligible.
func (s *Store) timeOut(e *execution, sp *suspensionRec, now int64) (model.SuspensionExpireOutcome, time.Time) {
	switch sp.behavior {
	case model.TimeoutAutoResume:
		return model.SuspensionExpireResumed, s.suspResume(e, sp, now, model.ClosedTimeoutResume)
	case model.TimeoutEscalate:
		s.escalate(e, sp, now)
		return model.SuspensionExpireEscalated, time.Time{}
	case model.TimeoutCancel:
		suspClose(sp, now, model.ClosedTimeoutCancel, false)
		s.cancelExec(e, now, reasonSuspensionTimeout, cancelledByTimeout, false)
		return model.SuspensionExpireCancelled, time.Time{}
	case model.TimeoutExpire:
		s.endTimedOut(e, sp, now, model.ClosedTimeoutExpire, model.OutcomeExpired)
		return model.SuspensionExpireExpired, time.Time{}
	}
	s.endTimedOut(e, sp, now, model.ClosedTimeoutFail, model.OutcomeFailed)
	return model.SuspensionExpireFailed, time.Time{}
}

// endTimedOut ends a suspended e whose timeout fails or expires it: the
// suspension closes (why), the paused attempt ends failed, and e ends
// with outcome to (reason "suspension_timeout", category timeout; never
// retried).
func (s *Store) endTimedOut(e *execution, sp *suspensionRec, now int64, why model.CloseReason, to model.TerminalOutcome) {
	suspClose(sp, now, why, false)
	s.endAttempt(e, now, model.AttemptEndedFailure, reasonSuspensionTimeout, model.FailureTimeout)
	s.removeFromLane(e)
	e.failureReason, e.failureCategory = reasonSuspensionTimeout, model.FailureTimeout
	s.terminate(e, now, to)
}

// WaitpointExpire implements model.SuspendStore: the pending-waitpoint
// expiry scanner's step for one IndexWaitpointExpiry entry (an entry of
// an execution that no longer exists is dropped).
func (s *Store) WaitpointExpire(ctx context.Context, p *model.WaitpointExpireParams) (*model.WaitpointExpireResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.WaitpointExpireResult, error) {
		now := ms(p.Now)
		idx := s.part(p.ID.Partition()).wpExpiry
		res := &model.WaitpointExpireResult{}
		e := s.execs[p.ID]
		if e == nil {
			idx.remove(p.ID)
			return res, nil
		}
		for _, w := range e.waitpoints {
			if w.state == model.WaitpointPending && w.expiresAt <= now {
				closeWaitpoint(w, now, model.ClosedWaitpointTTL)
				res.Closed++
			}
		}
		if res.Closed > 0 {
			e.lastMutationAt = now
		}
		s.wpExpirySync(e)
		if next, ok := idx.scores[e.id]; ok {
			res.NextDueAt = tm(next)
		}
		return res, nil
	})
}

// SuspensionDescribe implements model.SuspendStore.
func (s *Store) SuspensionDescribe(ctx context.Context, p *model.SuspensionDescribeParams) (*model.SuspensionSnapshot, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.SuspensionSnapshot, error) {
		if e.susp == nil {
			return nil, model.ErrSuspensionNotFound
		}
		return e.susp.snapshot(e), nil
	})
}

// WaitpointList implements model.SuspendStore.
func (s *Store) WaitpointList(ctx context.Context, p *model.WaitpointListParams) (*model.WaitpointListResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.WaitpointListResult, error) {
		res := &model.WaitpointListResult{}
		for _, w := range e.waitpoints {
			res.Waitpoints = append(res.Waitpoints, w.snapshot())
		}
		return res, nil
	})
}

// SignalFeed implements model.SuspendStore: one page of a partition's
// signal-delivery feed.
func (s *Store) SignalFeed(ctx context.Context, p *model.SignalFeedParams) (*model.SignalFeedResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.SignalFeedResult, error) {
		res := &model.SignalFeedResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		res.Last = pt.feedSeq
		// events carry consecutive seqs: the first after p.After is at
		// its distance from the oldest kept
		i := 0
		if n := len(pt.feed); n > 0 && p.After >= pt.feed[0].Seq {
			i = int(p.After-pt.feed[0].Seq) + 1 //nolint:gosec // bounded by the feed's length below
		}
		for ; i < len(pt.feed) && len(res.Events) < p.Limit; i++ {
			res.Events = append(res.Events, pt.feed[i])
		}
		return res, nil
	})
}

// feedAppend records a delivery of p in its partition's signal feed.
func (s *Store) feedAppend(p *model.SignalDeliverParams, sig model.SignalID, effect model.SignalEffect) {
	pt := s.part(p.Execution.Partition())
	pt.feedSeq++
	pt.feed = append(pt.feed, model.SignalFeedEvent{
		Seq: pt.feedSeq, Execution: p.Execution, Waitpoint: p.Waitpoint, Signal: sig, Effect: effect,
		At: tm(ms(p.Now)),
	})
	if len(pt.feed) > model.SignalFeedLen {
		pt.feed = append(pt.feed[:0:0], pt.feed[len(pt.feed)-model.SignalFeedLen:]...)
	}
}

// SuspendedList implements model.SuspendStore.
func (s *Store) SuspendedList(ctx context.Context, p *model.SuspendedListParams) (*model.SuspendedListResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.SuspendedListResult, error) {
		res := &model.SuspendedListResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		more := false
		pt.suspended.tree.Ascend(p.After, func(id model.ExecutionID) bool {
			if !p.After.IsZero() && id == p.After {
				return true
			}
			if len(res.Entries) == p.Limit {
				more = true
				return false
			}
			e := s.execs[id]
			sp := e.susp
			res.Entries = append(res.Entries, model.SuspendedEntry{
				ID: id, Lane: e.lane, Suspension: sp.id, Reason: sp.reason,
				SuspendedAt: tm(sp.suspendedAt), TimeoutAt: tm(sp.timeoutAt),
			})
			return true
		})
		if more {
			res.Next = res.Entries[len(res.Entries)-1].ID
		}
		return res, nil
	})
}

package storetest

import (
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Resuming, timeouts, waitpoint expiry and the terminal transitions of a
// suspended execution.

// suspendResumeClaim: a satisfying signal resumes the execution (eligible,
// its attempt still paused), and the next claim resumes the same attempt
// under a new lease with epoch + 1; it runs to completion, and the
// execution keeps its last suspension and its closed waitpoint.
func suspendResumeClaim(h *suspendHarness) {
	id, c := h.active(at(0), withTimeout(time.Minute))
	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), at(time.Second))
	p.TimeoutAt = at(time.Hour)
	h.suspend(p)
	s := h.signalParams(id, p.Waitpoint, at(time.Second), "go", at(2*time.Second))
	s.Payload = []byte(`{"ok":true}`)
	h.sent(s, model.SignalResumed, "", model.PublicWaiting)
	snap := h.wantState(id, stEligible(model.AttemptInterrupted))
	if snap.CurrentLease != nil || snap.Pending != nil || !snap.LastTransitionAt.Equal(at(2*time.Second)) {
		h.t.Fatalf("resumed: lease %+v pending %+v transition %v", snap.CurrentLease, snap.Pending, snap.LastTransitionAt)
	}
	if atts := h.attempts(id); len(atts) != 1 || atts[0].Status != model.AttemptSuspended {
		h.t.Fatalf("attempts of a resumed execution: %+v", atts)
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
	h.wantNotDue(id, model.IndexSuspensionTimeout)
	sp := h.wantClosed(id, model.ClosedBySignal, at(2*time.Second))
	wantEqual(h.t, "signals", []model.SignalRecord{record(s, model.SignalResumed, "")}, sp.Signals)
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedBySignal, at(2*time.Second))
	if got := h.suspendedList(id.Partition()); len(got) != 0 {
		h.t.Fatalf("SuspendedList: %+v", got)
	}
	_, err := h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: id, Now: at(3 * time.Second)})
	wantErr(h.t, err, model.ErrNotSuspended)

	rc := h.claim(id, wB, at(4*time.Second))
	if !rc.Resumed || rc.AttemptIndex != 0 || rc.AttemptID != c.AttemptID || rc.Lease.Epoch != 2 || rc.AttemptType != model.AttemptInitial {
		h.t.Fatalf("claim after the resume: %+v, want attempt 0 resumed at epoch 2", rc)
	}
	h.wantState(id, stActive)
	h.wantIndexes(id, activeIndexes(laneA, wB.Instance, ixTimeout)...)
	atts := h.attempts(id)
	if len(atts) != 1 || atts[0].Status != model.AttemptStarted || atts[0].LeaseEpoch != 2 || atts[0].WorkerInstanceID != wB.Instance {
		h.t.Fatalf("the resumed attempt: %+v", atts)
	}
	if kinds := h.historyKinds(id); !slices.Equal(kinds, []model.LeaseEventKind{model.LeaseAcquired, model.LeaseReleased, model.LeaseResumed}) {
		h.t.Fatalf("lease history kinds %v", kinds)
	}
	h.complete(id, rc.Fence(), at(5*time.Second))
	h.wantState(id, stTerminal(model.OutcomeSuccess, model.AttemptTerminal))
	if got := h.susp(id); got.ID != p.Suspension || got.ClosedBy != model.ClosedBySignal {
		h.t.Fatalf("the last suspension after the completion: %+v", got)
	}
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedBySignal, at(2*time.Second))
}

// suspendResumeDelay: with Policy.Delay a resume holds the execution
// delayed (waiting_for_resume_delay) until Now + Delay, when it is
// promoted and claimed as the same attempt.
func suspendResumeDelay(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), at(time.Second))
	p.Policy.Delay = 10 * time.Second
	h.suspend(p)
	s := h.signalParams(id, p.Waitpoint, at(time.Second), "go", at(2*time.Second))
	h.signal(s, model.SignalDeliverResult{Signal: s.Signal, Effect: model.SignalResumed, State: model.PublicDelayed, DelayUntil: at(12 * time.Second)})
	snap := h.wantState(id, stDelayed(model.WaitingForResumeDelay, model.AttemptInterrupted))
	if !snap.DelayUntil.Equal(at(12 * time.Second)) {
		h.t.Fatalf("delay_until %v, want %v", snap.DelayUntil, at(12*time.Second))
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
	h.wantDue(id, model.IndexDelayed, at(12*time.Second))
	if got := h.promote(id, laneA, at(12*time.Second-time.Millisecond)); got != model.PromoteNotYetDue {
		h.t.Fatalf("promote before the delay: %v", got)
	}
	if got := h.promote(id, laneA, at(12*time.Second)); got != model.PromotePromoted {
		h.t.Fatalf("promote at the delay: %v", got)
	}
	h.wantState(id, stEligible(model.AttemptInterrupted))
	if rc := h.claim(id, wA, at(13*time.Second)); !rc.Resumed || rc.AttemptID != c.AttemptID || rc.Lease.Epoch != 2 {
		h.t.Fatalf("claim after the resume delay: %+v", rc)
	}
}

// keepSetup suspends a running execution on a fresh waitpoint and a
// pending one (expiring at 1h), for "a" on its own and "b" on the pending
// one, with policy pol and timeout, and resumes it by the two signals.
func (h *suspendHarness) keepSetup(pol model.ResumePolicy, timeout time.Time) (id model.ExecutionID, p *model.ExecutionSuspendParams, w1 model.WaitpointID, sigs [2]*model.SignalDeliverParams) {
	h.t.Helper()
	id, c := h.active(at(0))
	w1, w1c := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	p = h.suspendParams(id, c.Fence(), allOf(model.SignalFor("a"), signalOn(w1, "b")), at(2*time.Second))
	p.Policy, p.TimeoutAt = pol, timeout
	h.suspend(p)
	sigs[0] = h.signalParams(id, p.Waitpoint, at(2*time.Second), "a", at(3*time.Second))
	h.sent(sigs[0], model.SignalAccepted, "", model.PublicSuspended)
	sigs[1] = h.signalParams(id, w1, w1c, "b", at(4*time.Second))
	h.sent(sigs[1], model.SignalResumed, "", model.PublicWaiting)
	h.wantClosed(id, model.ClosedBySignal, at(4*time.Second))
	// both back to pending, with their expiry
	h.wantWaitpoint(id, w1, model.WaitpointPending, 0, time.Time{})
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointPending, 0, time.Time{})
	if got := h.wp(id, w1); !got.ExpiresAt.Equal(at(time.Hour)) {
		h.t.Fatalf("kept pending waitpoint expires %v, want its own %v", got.ExpiresAt, at(time.Hour))
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"), ixWpExpiry)
	return id, p, w1, sigs
}

// suspendKeepWaitpoints: KeepWaitpoints returns the waitpoints to pending
// (a fresh one expiring MaxWaitpointTTL after its creation without a
// timeout); their signals are consumed, so the next suspension on them
// starts from none.
func suspendKeepWaitpoints(h *suspendHarness) {
	id, p, w1, _ := h.keepSetup(model.ResumePolicy{KeepWaitpoints: true}, time.Time{})
	if got := h.wp(id, p.Waitpoint); !got.ExpiresAt.Equal(at(2 * time.Second).Add(model.MaxWaitpointTTL)) {
		h.t.Fatalf("kept fresh waitpoint expires %v, want %v", got.ExpiresAt, at(2*time.Second).Add(model.MaxWaitpointTTL))
	}
	rc := h.claim(id, wA, at(5*time.Second))
	q := h.suspendParams(id, rc.Fence(), allOf(model.SignalFor("a"), signalOn(w1, "b")), at(6*time.Second))
	q.Waitpoint, q.UsePending = p.Waitpoint, true
	h.suspend(q)
	s := h.susp(id)
	if s.ID != q.Suspension || len(s.Signals) != 0 || !slices.Equal(s.Waitpoints, []model.WaitpointID{p.Waitpoint, w1}) {
		h.t.Fatalf("the second suspension: %+v, want no signals and both waitpoints bound", s)
	}
	h.wantState(id, stSuspended(model.WaitingForSignal))
}

// suspendKeepSignals: with KeepSignals the kept waitpoints keep their
// signals (a fresh one expiring MaxWaitpointTTL after its creation even
// with a timeout: an expiry at the timeout would close it at once after
// an auto-resume), so a second suspend with the same condition is
// already satisfied.
func suspendKeepSignals(h *suspendHarness) {
	id, p, w1, sigs := h.keepSetup(model.ResumePolicy{KeepWaitpoints: true, KeepSignals: true}, at(2*time.Hour))
	if got, want := h.wp(id, p.Waitpoint).ExpiresAt, at(2*time.Second).Add(model.MaxWaitpointTTL); !got.Equal(want) {
		h.t.Fatalf("kept fresh waitpoint expires %v, want %v (MaxWaitpointTTL after its creation)", got, want)
	}
	if got := signalIDs(h.wp(id, w1).Signals); len(got) != 1 || got[0] != sigs[1].Signal {
		h.t.Fatalf("signals kept on %v: %v", w1, got)
	}
	rc := h.claim(id, wA, at(5*time.Second))
	q := h.suspendParams(id, rc.Fence(), allOf(model.SignalFor("a"), signalOn(w1, "b")), at(6*time.Second))
	q.Waitpoint, q.UsePending = p.Waitpoint, true
	res := call(h.ss.ExecutionSuspend(h.ctx, q)).must(h.t)
	if res.Outcome != model.SuspendAlreadySatisfied {
		h.t.Fatalf("a second suspend on kept signals: %+v, want already satisfied", res)
	}
	if ids := signalIDs(res.Signals); !slices.Equal(ids, []model.SignalID{sigs[0].Signal, sigs[1].Signal}) {
		h.t.Fatalf("the satisfying signals %v, want %v and %v", ids, sigs[0].Signal, sigs[1].Signal)
	}
	h.wantState(id, stActive)
	h.complete(id, rc.Fence(), at(7*time.Second))
}

// suspendOperatorResume: ExecutionResume resumes whatever the condition
// (closing it "operator"), applying the policy's delay; it is refused
// without an open suspension.
func suspendOperatorResume(h *suspendHarness) {
	id, c := h.active(at(0))
	idle := h.create(at(0))
	for _, x := range []model.ExecutionID{id, idle} {
		h.refused(func() {
			_, err := h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: x, Now: at(time.Second)})
			wantErr(h.t, err, model.ErrNotSuspended)
		}, x)
	}
	_, err := h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: h.newID(h.p0), Now: at(time.Second)})
	wantErr(h.t, err, model.ErrNotFound)

	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondOperator}, at(time.Second))
	p.Reason, p.Policy.Delay = model.SuspendForOperatorReview, 5*time.Second
	h.suspend(p)
	h.wantState(id, stSuspended(model.PausedByOperator))
	wantEqual(h.t, "ExecutionResume", model.ExecutionResumeResult{State: model.PublicDelayed, DelayUntil: at(7 * time.Second)}, *h.resume(id, at(2*time.Second)))
	h.wantState(id, stDelayed(model.WaitingForResumeDelay, model.AttemptInterrupted))
	h.wantClosed(id, model.ClosedByOperator, at(2*time.Second))
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedByOperator, at(2*time.Second))
	h.refused(func() {
		_, err := h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: id, Now: at(3 * time.Second)})
		wantErr(h.t, err, model.ErrNotSuspended)
	}, id)

	// without a delay: eligible at once
	id2, c2 := h.active(at(0))
	h.suspend(h.suspendParams(id2, c2.Fence(), model.SignalFor("never"), at(time.Second)))
	wantEqual(h.t, "ExecutionResume", model.ExecutionResumeResult{State: model.PublicWaiting}, *h.resume(id2, at(2*time.Second)))
	h.wantState(id2, stEligible(model.AttemptInterrupted))
}

// timedSuspend suspends a new running execution (besides an unbound
// pending waitpoint expiring at 2h) until at(1m) with behaviour b, and
// checks that the timeout is not due a millisecond before.
func (h *suspendHarness) timedSuspend(b model.TimeoutBehavior, opts ...createOpt) (model.ExecutionID, *model.ClaimResult, *model.ExecutionSuspendParams, model.WaitpointID) {
	h.t.Helper()
	id, c := h.active(at(0), opts...)
	pw, _ := h.waitpoint(id, c.Fence(), at(2*time.Hour), at(time.Second))
	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), at(2*time.Second))
	p.TimeoutAt, p.TimeoutBehavior = at(time.Minute), b
	h.suspend(p)
	want := suspendedIndexes(laneA, ixSuspTimeout, ixWpExpiry)
	if !h.describe(id).Deadline.IsZero() {
		want = append(want, ixDeadline)
	}
	h.wantIndexes(id, want...)
	h.wantDue(id, model.IndexSuspensionTimeout, at(time.Minute))
	h.refused(func() {
		wantEqual(h.t, "SuspensionExpire before the timeout", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotYetDue},
			*h.expireSuspension(id, at(time.Minute-time.Millisecond)))
	}, id)
	return id, c, p, pw
}

// wantTimedOutTerminal checks a suspension that timed out into a
// terminal state: closed by by, every waitpoint closed (the unbound
// pending one "ended"), the attempt ended, terminal indexes only, and
// nothing left to expire.
func (h *suspendHarness) wantTimedOutTerminal(id model.ExecutionID, by model.CloseReason, pw model.WaitpointID) model.Attempt {
	h.t.Helper()
	h.wantClosed(id, by, at(time.Minute))
	h.wantAllClosed(id)
	h.wantWaitpoint(id, pw, model.WaitpointClosed, model.ClosedEnded, at(time.Minute))
	h.wantIndexes(id, terminalIndexes(laneA)...)
	atts := h.attempts(id)
	if len(atts) != 1 || atts[0].Status.IsOpen() || !atts[0].EndedAt.Equal(at(time.Minute)) {
		h.t.Fatalf("attempts after the timeout: %+v", atts)
	}
	h.refused(func() {
		wantEqual(h.t, "SuspensionExpire again", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotSuspendedCleaned},
			*h.expireSuspension(id, at(2*time.Minute)))
	}, id)
	return atts[0]
}

// suspendTimeoutFail: TimeoutFail fails the execution (not retried).
func suspendTimeoutFail(h *suspendHarness) {
	id, _, _, pw := h.timedSuspend(0, withRetry(model.RetryPolicy{MaxRetries: 3}))
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireFailed}, *h.expireSuspension(id, at(time.Minute)))
	snap := h.wantState(id, stTerminal(model.OutcomeFailed, model.AttemptTerminal))
	if snap.FailureReason != "suspension_timeout" || snap.FailureCategory != model.FailureTimeout || !snap.TerminalAt.Equal(at(time.Minute)) {
		h.t.Fatalf("failed by the timeout: %q %q at %v", snap.FailureReason, snap.FailureCategory, snap.TerminalAt)
	}
	if a := h.wantTimedOutTerminal(id, model.ClosedTimeoutFail, pw); a.Status != model.AttemptEndedFailure || a.FailureReason != "suspension_timeout" {
		h.t.Fatalf("the attempt: %+v", a)
	}
}

// suspendTimeoutCancel: TimeoutCancel cancels it.
func suspendTimeoutCancel(h *suspendHarness) {
	id, _, _, pw := h.timedSuspend(model.TimeoutCancel)
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireCancelled}, *h.expireSuspension(id, at(time.Minute)))
	snap := h.wantState(id, stTerminal(model.OutcomeCancelled, model.AttemptTerminal))
	if snap.CancellationReason != "suspension_timeout" {
		h.t.Fatalf("cancelled by the timeout: reason %q", snap.CancellationReason)
	}
	if a := h.wantTimedOutTerminal(id, model.ClosedTimeoutCancel, pw); a.Status != model.AttemptEndedCancelled {
		h.t.Fatalf("the attempt: %+v", a)
	}
}

// suspendTimeoutExpire: TimeoutExpire expires it.
func suspendTimeoutExpire(h *suspendHarness) {
	id, _, _, pw := h.timedSuspend(model.TimeoutExpire)
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireExpired}, *h.expireSuspension(id, at(time.Minute)))
	h.wantState(id, stTerminal(model.OutcomeExpired, model.AttemptTerminal))
	h.wantTimedOutTerminal(id, model.ClosedTimeoutExpire, pw)
}

// suspendTimeoutAutoResume: TimeoutAutoResume resumes it as a signal
// would; the unbound pending waitpoint stays.
func suspendTimeoutAutoResume(h *suspendHarness) {
	id, c, p, pw := h.timedSuspend(model.TimeoutAutoResume)
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireResumed}, *h.expireSuspension(id, at(time.Minute)))
	h.wantState(id, stEligible(model.AttemptInterrupted))
	h.wantClosed(id, model.ClosedTimeoutResume, at(time.Minute))
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedTimeoutResume, at(time.Minute))
	h.wantWaitpoint(id, pw, model.WaitpointPending, 0, time.Time{})
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"), ixWpExpiry)
	h.wantNotDue(id, model.IndexSuspensionTimeout)
	if rc := h.claim(id, wA, at(2*time.Minute)); !rc.Resumed || rc.AttemptID != c.AttemptID {
		h.t.Fatalf("claim after the auto-resume: %+v", rc)
	}
}

// suspendTimeoutAutoResumeDelay: an auto-resume applies the policy's
// delay and reports when the execution becomes eligible.
func suspendTimeoutAutoResumeDelay(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondTimeout}, at(time.Second))
	p.TimeoutAt, p.TimeoutBehavior, p.Policy.Delay = at(time.Minute), model.TimeoutAutoResume, 5*time.Second
	h.suspend(p)
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireResumed, DelayUntil: at(time.Minute + 5*time.Second)},
		*h.expireSuspension(id, at(time.Minute)))
	snap := h.wantState(id, stDelayed(model.WaitingForResumeDelay, model.AttemptInterrupted))
	if !snap.DelayUntil.Equal(at(time.Minute + 5*time.Second)) {
		h.t.Fatalf("delay_until %v", snap.DelayUntil)
	}
	h.wantClosed(id, model.ClosedTimeoutResume, at(time.Minute))
	h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
}

// suspendTimeoutEscalate: TimeoutEscalate leaves it suspended for an
// operator, without a timeout; a satisfying signal still resumes it.
func suspendTimeoutEscalate(h *suspendHarness) {
	id, _, p, _ := h.timedSuspend(model.TimeoutEscalate)
	wantEqual(h.t, "SuspensionExpire", model.SuspensionExpireResult{Outcome: model.SuspensionExpireEscalated}, *h.expireSuspension(id, at(time.Minute)))
	h.wantState(id, stSuspended(model.PausedByOperator))
	s := h.susp(id)
	if s.ID != p.Suspension || s.Reason != model.SuspendForOperatorReview || !s.TimeoutAt.IsZero() || !s.Escalated || !s.ClosedAt.IsZero() || s.ClosedBy != 0 {
		h.t.Fatalf("the escalated suspension: %+v", s)
	}
	h.wantIndexes(id, suspendedIndexes(laneA, ixWpExpiry)...)
	h.wantNotDue(id, model.IndexSuspensionTimeout)
	wantEqual(h.t, "SuspendedList", []model.SuspendedEntry{{
		ID: id, Lane: laneA, Suspension: p.Suspension, Reason: model.SuspendForOperatorReview, SuspendedAt: at(2 * time.Second),
	}}, h.suspendedList(id.Partition()))
	h.refused(func() {
		wantEqual(h.t, "SuspensionExpire after the escalation", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotSuspendedCleaned},
			*h.expireSuspension(id, at(2*time.Minute)))
	}, id)
	h.sent(h.signalParams(id, p.Waitpoint, at(2*time.Second), "go", at(3*time.Minute)), model.SignalResumed, "", model.PublicWaiting)
	h.wantClosed(id, model.ClosedBySignal, at(3*time.Minute))
}

// suspendTimeoutCleaned: SuspensionExpire of no execution, of one never
// suspended and of one suspended without a timeout changes nothing.
func suspendTimeoutCleaned(h *suspendHarness) {
	res := h.expireSuspension(h.newID(h.p0), at(time.Hour))
	wantEqual(h.t, "no execution", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotFoundCleaned}, *res)
	id, c := h.active(at(0))
	h.refused(func() {
		wantEqual(h.t, "never suspended", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotSuspendedCleaned}, *h.expireSuspension(id, at(time.Second)))
	}, id)
	h.suspend(h.suspendParams(id, c.Fence(), model.SignalFor(""), at(time.Second)))
	h.refused(func() {
		wantEqual(h.t, "no timeout", model.SuspensionExpireResult{Outcome: model.SuspensionExpireNotSuspendedCleaned}, *h.expireSuspension(id, at(time.Hour)))
	}, id)
}

// suspendWaitpointExpire: WaitpointExpire closes the pending waitpoints
// whose expiry passed ("waitpoint_expired"), keeps the later ones and
// moves the index entry to the next expiry, which the scans report.
func suspendWaitpointExpire(h *suspendHarness) {
	id, c := h.active(at(0))
	w1, w1c := h.waitpoint(id, c.Fence(), at(10*time.Second), at(time.Second))
	w2, _ := h.waitpoint(id, c.Fence(), at(20*time.Second), at(time.Second))
	h.wantDue(id, model.IndexWaitpointExpiry, at(10*time.Second))
	if due := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: id.Partition()})).must(h.t); !due.WaitpointExpiry.Equal(at(10 * time.Second)) {
		h.t.Fatalf("PartitionDue.WaitpointExpiry = %v, want %v", due.WaitpointExpiry, at(10*time.Second))
	}
	h.refused(func() {
		wantEqual(h.t, "WaitpointExpire early", model.WaitpointExpireResult{NextDueAt: at(10 * time.Second)},
			*h.expireWaitpoints(id, at(10*time.Second-time.Millisecond)))
	}, id)
	wantEqual(h.t, "WaitpointExpire", model.WaitpointExpireResult{Closed: 1, NextDueAt: at(20 * time.Second)}, *h.expireWaitpoints(id, at(10*time.Second)))
	h.wantWaitpoint(id, w1, model.WaitpointClosed, model.ClosedWaitpointTTL, at(10*time.Second))
	h.wantWaitpoint(id, w2, model.WaitpointPending, 0, time.Time{})
	h.wantDue(id, model.IndexWaitpointExpiry, at(20*time.Second))
	h.signalErr(h.signalParams(id, w1, w1c, "late", at(11*time.Second)), model.ErrWaitpointClosed)
	wantEqual(h.t, "WaitpointExpire", model.WaitpointExpireResult{Closed: 1}, *h.expireWaitpoints(id, at(25*time.Second)))
	h.wantAllClosed(id)
	h.wantIndexes(id, activeIndexes(laneA, wA.Instance)...)
	h.wantNotDue(id, model.IndexWaitpointExpiry)
	h.refused(func() {
		wantEqual(h.t, "WaitpointExpire with none pending", model.WaitpointExpireResult{}, *h.expireWaitpoints(id, at(26*time.Second)))
	}, id)
}

// suspendCompleteCloses: completing with a pending waitpoint open closes
// it "ended".
func suspendCompleteCloses(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	h.complete(id, c.Fence(), at(2*time.Second))
	h.wantWaitpoint(id, w, model.WaitpointClosed, model.ClosedEnded, at(2*time.Second))
	h.wantIndexes(id, terminalIndexes(laneA)...)
	h.wantNotDue(id, model.IndexWaitpointExpiry)
	h.signalErr(h.signalParams(id, w, wc, "late", at(3*time.Second)), model.ErrWaitpointClosed)
}

// suspendCancelSuspended: an operator's cancel of a suspended execution
// closes its suspension "cancelled", ends the paused attempt cancelled,
// closes every waitpoint and leaves only the terminal indexes.
func suspendCancelSuspended(h *suspendHarness) {
	id, _, p, pw := h.timedSuspend(model.TimeoutFail)
	res := h.cancelOp(id, at(30*time.Second))
	if res.Replayed {
		h.t.Fatalf("cancel: %+v", res)
	}
	h.wantState(id, stTerminal(model.OutcomeCancelled, model.AttemptTerminal))
	if atts := h.attempts(id); atts[0].Status != model.AttemptEndedCancelled || !atts[0].EndedAt.Equal(at(30*time.Second)) {
		h.t.Fatalf("the paused attempt after the cancel: %+v", atts[0])
	}
	h.wantClosed(id, model.ClosedCancelled, at(30*time.Second))
	h.wantWaitpoint(id, pw, model.WaitpointClosed, model.ClosedEnded, at(30*time.Second))
	if w := h.wp(id, p.Waitpoint); w.State != model.WaitpointClosed || !w.ClosedAt.Equal(at(30*time.Second)) {
		h.t.Fatalf("the suspension's waitpoint after the cancel: %+v", w)
	}
	h.wantIndexes(id, terminalIndexes(laneA)...)
	h.wantNotDue(id, model.IndexSuspensionTimeout)
	h.wantNotDue(id, model.IndexWaitpointExpiry)
	if got := h.suspendedList(id.Partition()); len(got) != 0 {
		h.t.Fatalf("SuspendedList: %+v", got)
	}
	h.refused(func() {
		_, err := h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: id, Now: at(31 * time.Second)})
		wantErr(h.t, err, model.ErrNotSuspended)
	}, id)
	h.signalErr(h.signalParams(id, p.Waitpoint, at(2*time.Second), "go", at(31*time.Second)), model.ErrWaitpointClosed)
}

// suspendDeadlineSuspended: the execution deadline expires a suspended
// execution, closing its suspension "expired".
func suspendDeadlineSuspended(h *suspendHarness) {
	id, _, _, _ := h.timedSuspend(model.TimeoutFail, withDeadline(at(30*time.Second)))
	res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireExecutionDeadline, Now: at(30 * time.Second)})).must(h.t)
	wantEqual(h.t, "ExecutionExpire", model.ExecutionExpireResult{Outcome: model.ExpireExpired, PriorPhase: model.PhaseSuspended}, *res)
	h.wantState(id, stTerminal(model.OutcomeExpired, model.AttemptTerminal))
	h.wantClosed(id, model.ClosedExpired, at(30*time.Second))
	h.wantAllClosed(id)
	h.wantIndexes(id, terminalIndexes(laneA)...)
	if atts := h.attempts(id); atts[0].Status.IsOpen() {
		h.t.Fatalf("the paused attempt after the deadline: %+v", atts[0])
	}
}

// suspendFlowCancelSuspended: a flow cancel (CancelAll) of a suspended
// member closes its suspension "cancelled".
func suspendFlowCancelSuspended(h *suspendHarness) {
	var s model.Store = h.s
	if p, ok := h.s.(*partialStore); ok {
		s = p.Store
	}
	fs, ok := s.(model.FlowStore)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FlowStore", s)
	}
	fh := &flowHarness{harness: h.harness, fs: fs}
	f, x := fh.soloFlow()
	xc := h.claim(x, wA, at(2*time.Second))
	w, _ := h.waitpoint(x, xc.Fence(), at(time.Hour), at(2*time.Second))
	p := h.suspendParams(x, xc.Fence(), model.SignalFor("go"), at(3*time.Second))
	p.TimeoutAt = at(time.Hour)
	h.suspend(p)
	if got := fh.cancelFlow(f, model.CancelAll, at(4*time.Second)); !slices.Equal(got, []model.ExecutionID{x}) {
		h.t.Fatalf("FlowCancel cancelled %v, want %v", got, x)
	}
	fh.wantFlowCancelled(x)
	h.wantClosed(x, model.ClosedCancelled, at(4*time.Second))
	h.wantAllClosed(x)
	h.wantWaitpoint(x, w, model.WaitpointClosed, model.ClosedEnded, at(4*time.Second))
	for _, ix := range h.indexes(x) {
		if ix == ixSuspended || ix == ixSuspTimeout || ix == ixWpExpiry || ix == ixLane(laneA, "suspended") {
			h.t.Fatalf("a cancelled member still in %s", ix)
		}
	}
}

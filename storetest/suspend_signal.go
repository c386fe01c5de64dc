package storetest

import (
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Signals and resume conditions (model.SignalDeliverParams,
// model/resume.go).

// suspendSignalEffects: a signal to a pending waitpoint is buffered (and
// held by it); to the open suspension's waitpoint it is ignored when no
// leaf reads it and resumes when it satisfies the condition; the
// suspension records both, in delivery order, and a pending waitpoint it
// did not bind stays pending through the resume.
func suspendSignalEffects(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	b := h.signalParams(id, w, wc, "note", at(2*time.Second))
	b.Payload, b.IdempotencyKey = []byte("hello"), "note-1"
	h.sent(b, model.SignalBuffered, "", model.PublicActive)
	wantEqual(h.t, "signals of the pending waitpoint", []model.SignalRecord{record(b, model.SignalBuffered, "")}, h.wp(id, w).Signals)

	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), at(3*time.Second))
	h.suspend(p)
	own := p.Waitpoint
	ign := h.signalParams(id, own, at(3*time.Second), "other", at(4*time.Second))
	h.sent(ign, model.SignalIgnored, model.IgnoredNotInCondition, model.PublicSuspended)
	h.wantState(id, stSuspended(model.WaitingForSignal))
	// the pending waitpoint the suspension did not bind still buffers
	b2 := h.signalParams(id, w, wc, "go", at(5*time.Second))
	h.sent(b2, model.SignalBuffered, "", model.PublicSuspended)
	h.wantState(id, stSuspended(model.WaitingForSignal))
	goSig := h.signalParams(id, own, at(3*time.Second), "go", at(6*time.Second))
	h.sent(goSig, model.SignalResumed, "", model.PublicWaiting)
	h.wantState(id, stEligible(model.AttemptInterrupted))
	s := h.wantClosed(id, model.ClosedBySignal, at(6*time.Second))
	wantEqual(h.t, "signals of the suspension", []model.SignalRecord{
		record(ign, model.SignalIgnored, model.IgnoredNotInCondition), record(goSig, model.SignalResumed, ""),
	}, s.Signals)
	h.wantWaitpoint(id, own, model.WaitpointClosed, model.ClosedBySignal, at(6*time.Second))
	pend := h.wantWaitpoint(id, w, model.WaitpointPending, 0, time.Time{})
	if ids := signalIDs(pend.Signals); len(ids) != 2 || ids[0] != b.Signal || ids[1] != b2.Signal {
		h.t.Fatalf("signals of the unbound pending waitpoint: %v", ids)
	}
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"), ixWpExpiry)
	// the closed waitpoint takes no more
	h.signalErr(h.signalParams(id, own, at(3*time.Second), "go", at(7*time.Second)), model.ErrWaitpointClosed)
}

// suspendSignalOperatorOnly: under CondOperator every signal is ignored.
func suspendSignalOperatorOnly(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondOperator}, at(time.Second))
	p.Reason = model.SuspendForOperatorReview
	h.suspend(p)
	s := h.signalParams(id, p.Waitpoint, at(time.Second), "go", at(2*time.Second))
	h.sent(s, model.SignalIgnored, model.IgnoredOperatorOnly, model.PublicSuspended)
	h.wantState(id, stSuspended(model.PausedByOperator))
	wantEqual(h.t, "signals", []model.SignalRecord{record(s, model.SignalIgnored, model.IgnoredOperatorOnly)}, h.susp(id).Signals)
}

// suspendSignalTimeoutOnly: under CondTimeout every signal is ignored.
func suspendSignalTimeoutOnly(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondTimeout}, at(time.Second))
	p.TimeoutAt, p.TimeoutBehavior = at(time.Hour), model.TimeoutAutoResume
	h.suspend(p)
	s := h.signalParams(id, p.Waitpoint, at(time.Second), "", at(2*time.Second))
	h.sent(s, model.SignalIgnored, model.IgnoredTimeoutOnly, model.PublicSuspended)
	h.wantState(id, stSuspended(model.WaitingForSignal))
	h.wantIndexes(id, suspendedIndexes(laneA, ixSuspTimeout)...)
}

// suspendSignalDuplicate: a repeated idempotency key returns the first
// signal's id and writes nothing, also after the waitpoint closed (where
// a new key is refused).
func suspendSignalDuplicate(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondCount, N: 3, Distinct: model.DistinctSignals, Name: "vote"}, at(time.Second))
	h.suspend(p)
	first := h.signalParams(id, p.Waitpoint, at(time.Second), "vote", at(2*time.Second))
	first.IdempotencyKey = "k1"
	h.sent(first, model.SignalAccepted, "", model.PublicSuspended)
	again := func(now time.Time, state model.PublicState) {
		h.t.Helper()
		h.refused(func() {
			d := h.signalParams(id, p.Waitpoint, at(time.Second), "vote", now)
			d.IdempotencyKey = "k1"
			h.signal(d, model.SignalDeliverResult{Signal: first.Signal, Effect: model.SignalDuplicate, State: state})
		}, id)
	}
	again(at(3*time.Second), model.PublicSuspended)
	if got := signalIDs(h.susp(id).Signals); len(got) != 1 {
		h.t.Fatalf("signals after a duplicate: %v", got)
	}
	h.resume(id, at(4*time.Second))
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedByOperator, at(4*time.Second))
	again(at(5*time.Second), model.PublicWaiting)
	other := h.signalParams(id, p.Waitpoint, at(time.Second), "vote", at(5*time.Second))
	other.IdempotencyKey = "k2"
	h.signalErr(other, model.ErrWaitpointClosed)
}

// suspendSignalReplayByID: the same delivery applied twice (a request
// retried after a lost reply, without idempotency key) stores one signal
// and replays the first result, even once the signal resumed the
// execution and its waitpoint closed. Regression: the simulator's
// delivered-twice fault stored one signal id twice (seed 1102).
func suspendSignalReplayByID(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	buffered := h.signalParams(id, w, wc, "a", at(2*time.Second))
	h.sent(buffered, model.SignalBuffered, "", model.PublicActive)
	h.refused(func() {
		h.signal(buffered, model.SignalDeliverResult{Signal: buffered.Signal, Effect: model.SignalBuffered, State: model.PublicActive, Replayed: true})
	}, id)
	p := h.suspendParams(id, c.Fence(), allOf(signalOn(w, "a"), model.SignalFor("b")), at(3*time.Second))
	h.suspend(p)
	last := h.signalParams(id, p.Waitpoint, at(3*time.Second), "b", at(4*time.Second))
	h.sent(last, model.SignalResumed, "", model.PublicWaiting)
	again := *last
	again.Now = at(5 * time.Second)
	h.refused(func() {
		h.signal(&again, model.SignalDeliverResult{Signal: last.Signal, Effect: model.SignalResumed, State: model.PublicWaiting, Replayed: true})
	}, id)
	if got := signalIDs(h.susp(id).Signals); len(got) != 2 {
		h.t.Fatalf("signals after replays: %v, want the two delivered once each", got)
	}
}

// suspendSignalFeed: every delivery that returns a result appends one
// event to its partition's feed, a duplicate included and a replay not,
// numbered from 1; a page starts after an exclusive seq and Last says
// how far the partition has written.
func suspendSignalFeed(h *suspendHarness) {
	part := h.p0
	empty := call(h.ss.SignalFeed(h.ctx, &model.SignalFeedParams{Partition: part, Limit: 10})).must(h.t)
	wantEqual(h.t, "empty feed", model.SignalFeedResult{}, *empty)
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	buffered := h.signalParams(id, w, wc, "a", at(2*time.Second))
	buffered.IdempotencyKey = "k"
	h.sent(buffered, model.SignalBuffered, "", model.PublicActive)
	dup := h.signalParams(id, w, wc, "a", at(3*time.Second))
	dup.IdempotencyKey = "k"
	h.signal(dup, model.SignalDeliverResult{Signal: buffered.Signal, Effect: model.SignalDuplicate, State: model.PublicActive})
	h.signal(buffered, model.SignalDeliverResult{Signal: buffered.Signal, Effect: model.SignalBuffered, State: model.PublicActive, Replayed: true})
	p := h.suspendParams(id, c.Fence(), allOf(signalOn(w, "a"), model.SignalFor("b")), at(4*time.Second))
	h.suspend(p)
	noise := h.signalParams(id, p.Waitpoint, at(4*time.Second), "zzz", at(5*time.Second))
	h.sent(noise, model.SignalIgnored, model.IgnoredNotInCondition, model.PublicSuspended)
	last := h.signalParams(id, p.Waitpoint, at(4*time.Second), "b", at(6*time.Second))
	h.sent(last, model.SignalResumed, "", model.PublicWaiting)
	want := []model.SignalFeedEvent{
		{Seq: 1, Execution: id, Waitpoint: w, Signal: buffered.Signal, Effect: model.SignalBuffered, At: at(2 * time.Second)},
		{Seq: 2, Execution: id, Waitpoint: w, Signal: buffered.Signal, Effect: model.SignalDuplicate, At: at(3 * time.Second)},
		{Seq: 3, Execution: id, Waitpoint: p.Waitpoint, Signal: noise.Signal, Effect: model.SignalIgnored, At: at(5 * time.Second)},
		{Seq: 4, Execution: id, Waitpoint: p.Waitpoint, Signal: last.Signal, Effect: model.SignalResumed, At: at(6 * time.Second)},
	}
	all := call(h.ss.SignalFeed(h.ctx, &model.SignalFeedParams{Partition: part, Limit: 10})).must(h.t)
	wantEqual(h.t, "feed", model.SignalFeedResult{Events: want, Last: 4}, *all)
	page := call(h.ss.SignalFeed(h.ctx, &model.SignalFeedParams{Partition: part, After: 1, Limit: 2})).must(h.t)
	wantEqual(h.t, "feed after 1, 2 events", model.SignalFeedResult{Events: want[1:3], Last: 4}, *page)
	tail := call(h.ss.SignalFeed(h.ctx, &model.SignalFeedParams{Partition: part, After: 4, Limit: 2})).must(h.t)
	wantEqual(h.t, "feed after the last", model.SignalFeedResult{Last: 4}, *tail)
}

// suspendSignalDedupTTL: a key is remembered for DedupTTL; after it the
// same key is a new signal.
func suspendSignalDedupTTL(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	send := func(now time.Time) *model.SignalDeliverParams {
		s := h.signalParams(id, w, wc, "hook", now)
		s.IdempotencyKey, s.DedupTTL = "delivery-7", time.Minute
		return s
	}
	first := send(at(2 * time.Second))
	h.sent(first, model.SignalBuffered, "", model.PublicActive)
	h.refused(func() {
		h.signal(send(at(61*time.Second)), model.SignalDeliverResult{Signal: first.Signal, Effect: model.SignalDuplicate, State: model.PublicActive})
	}, id)
	later := send(at(63 * time.Second))
	h.sent(later, model.SignalBuffered, "", model.PublicActive)
	if got := signalIDs(h.wp(id, w).Signals); len(got) != 2 || got[0] != first.Signal || got[1] != later.Signal {
		h.t.Fatalf("signals after the TTL: %v", got)
	}
}

// suspendSignalLimit: a waitpoint takes SignalLimit signals; the
// duplicate check comes before the limit.
func suspendSignalLimit(h *suspendHarness) {
	id, c := h.active(at(0))
	w := h.wpID()
	wc := call(h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{
		ID: id, Fence: c.Fence(), Waitpoint: w, ExpiresAt: at(time.Hour), SignalLimit: 2, Now: at(time.Second),
	})).must(h.t).CreatedAt
	var firstID model.SignalID
	for i, k := range []string{"k1", "k2"} {
		s := h.signalParams(id, w, wc, "n", at(time.Duration(2+i)*time.Second))
		s.IdempotencyKey = k
		h.sent(s, model.SignalBuffered, "", model.PublicActive)
		if i == 0 {
			firstID = s.Signal
		}
	}
	third := h.signalParams(id, w, wc, "n", at(5*time.Second))
	third.IdempotencyKey = "k3"
	h.signalErr(third, model.ErrSignalLimit)
	h.refused(func() {
		d := h.signalParams(id, w, wc, "n", at(5*time.Second))
		d.IdempotencyKey = "k1"
		h.signal(d, model.SignalDeliverResult{Signal: firstID, Effect: model.SignalDuplicate, State: model.PublicActive})
	}, id)

	// a fresh waitpoint takes the suspend's SignalLimit
	x, xc := h.active(at(0))
	p := h.suspendParams(x, xc.Fence(), model.ResumeCondition{Kind: model.CondCount, N: 2, Distinct: model.DistinctSignals}, at(time.Second))
	p.SignalLimit = 1
	h.suspend(p)
	if got := h.wp(x, p.Waitpoint); got.SignalLimit != 1 {
		h.t.Fatalf("the fresh waitpoint's signal limit: %d, want 1", got.SignalLimit)
	}
	h.sent(h.signalParams(x, p.Waitpoint, at(time.Second), "n", at(2*time.Second)), model.SignalAccepted, "", model.PublicSuspended)
	h.signalErr(h.signalParams(x, p.Waitpoint, at(time.Second), "n", at(3*time.Second)), model.ErrSignalLimit)
}

// suspendSignalErrors: the execution and the waitpoint must exist with
// the token's creation time; a payload at the cap is taken whole.
func suspendSignalErrors(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	o, oc := h.active(at(0), inPartition(h.harness, id.Partition()))
	ow, owc := h.waitpoint(o, oc.Fence(), at(time.Hour), at(time.Second))

	h.signalErr(h.signalParams(id, w, wc.Add(time.Millisecond), "x", at(2*time.Second)), model.ErrInvalidToken)
	h.signalErr(h.signalParams(id, h.wpID(), wc, "x", at(2*time.Second)), model.ErrWaitpointNotFound)
	h.signalErr(h.signalParams(id, ow, owc, "x", at(2*time.Second)), model.ErrWaitpointNotFound)
	h.refused(func() {
		_, err := h.ss.SignalDeliver(h.ctx, h.signalParams(h.newID(id.Partition()), w, wc, "x", at(2*time.Second)))
		wantErr(h.t, err, model.ErrNotFound)
	}, id)

	big := h.signalParams(id, w, wc, "big", at(2*time.Second))
	big.Payload = []byte(strings.Repeat("p", model.MaxSignalPayloadBytes))
	big.Source = strings.Repeat("s", model.MaxSignalSourceBytes)
	h.sent(big, model.SignalBuffered, "", model.PublicActive)
	wantEqual(h.t, "the signal at the caps", []model.SignalRecord{record(big, model.SignalBuffered, "")}, h.wp(id, w).Signals)
}

// suspendAllOf: AllOf over two named signals resumes on the second name.
func suspendAllOf(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), allOf(model.SignalFor("a"), model.SignalFor("b")), at(time.Second))
	h.suspend(p)
	sig := func(name string, sec int) *model.SignalDeliverParams {
		return h.signalParams(id, p.Waitpoint, at(time.Second), name, at(time.Duration(sec)*time.Second))
	}
	h.sent(sig("a", 2), model.SignalAccepted, "", model.PublicSuspended)
	h.sent(sig("a", 3), model.SignalAccepted, "", model.PublicSuspended)
	h.sent(sig("c", 4), model.SignalIgnored, model.IgnoredNotInCondition, model.PublicSuspended)
	h.sent(sig("b", 5), model.SignalResumed, "", model.PublicWaiting)
	if s := h.wantClosed(id, model.ClosedBySignal, at(5*time.Second)); len(s.Signals) != 4 {
		h.t.Fatalf("signals of the suspension: %+v", s.Signals)
	}
}

// suspendCountSources: two approvals from one source count once.
func suspendCountSources(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondCount, N: 2, Distinct: model.DistinctSources, Name: "approve"}, at(time.Second))
	p.Reason = model.SuspendForApproval
	h.suspend(p)
	sig := func(source string, sec int) *model.SignalDeliverParams {
		s := h.signalParams(id, p.Waitpoint, at(time.Second), "approve", at(time.Duration(sec)*time.Second))
		s.Source = source
		return s
	}
	h.sent(sig("approver:alice", 2), model.SignalAccepted, "", model.PublicSuspended)
	h.sent(sig("approver:alice", 3), model.SignalAccepted, "", model.PublicSuspended)
	h.wantState(id, stSuspended(model.WaitingForApproval))
	h.sent(sig("approver:bob", 4), model.SignalResumed, "", model.PublicWaiting)
}

// suspendCountWaitpoints: Count over two pending waitpoints the
// condition binds (with their buffered signals) resumes when both have a
// signal; the suspension's own waitpoint is not among them.
func suspendCountWaitpoints(h *suspendHarness) {
	id, c := h.active(at(0))
	w1, w1c := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	w2, w2c := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	buf := h.signalParams(id, w1, w1c, "done", at(2*time.Second))
	h.sent(buf, model.SignalBuffered, "", model.PublicActive)
	cond := model.ResumeCondition{Kind: model.CondCount, N: 2, Distinct: model.DistinctWaitpoints, Waitpoints: []model.WaitpointID{w1, w2}}
	p := h.suspendParams(id, c.Fence(), cond, at(3*time.Second))
	h.suspend(p)
	s := h.susp(id)
	wantEqual(h.t, "bound waitpoints", []model.WaitpointID{p.Waitpoint, w1, w2}, s.Waitpoints)
	if ids := signalIDs(s.Signals); len(ids) != 1 || ids[0] != buf.Signal {
		h.t.Fatalf("the suspension's signals: %v, want the buffered one", ids)
	}
	for _, w := range []model.WaitpointID{p.Waitpoint, w1, w2} {
		if got := h.wp(id, w); got.State != model.WaitpointActive || got.Suspension != p.Suspension {
			h.t.Fatalf("bound waitpoint %v: %+v", w, got)
		}
	}
	h.wantIndexes(id, suspendedIndexes(laneA)...)
	h.sent(h.signalParams(id, w1, w1c, "done", at(4*time.Second)), model.SignalAccepted, "", model.PublicSuspended)
	h.sent(h.signalParams(id, p.Waitpoint, at(3*time.Second), "done", at(5*time.Second)), model.SignalIgnored, model.IgnoredNotInCondition, model.PublicSuspended)
	h.sent(h.signalParams(id, w2, w2c, "done", at(6*time.Second)), model.SignalResumed, "", model.PublicWaiting)
	h.wantClosed(id, model.ClosedBySignal, at(6*time.Second))
	h.wantAllClosed(id)
	h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
}

// suspendCountSignals: Count of distinct signals accepts until N.
func suspendCountSignals(h *suspendHarness) {
	id, c := h.active(at(0))
	p := h.suspendParams(id, c.Fence(), model.ResumeCondition{Kind: model.CondCount, N: 2, Distinct: model.DistinctSignals}, at(time.Second))
	h.suspend(p)
	h.sent(h.signalParams(id, p.Waitpoint, at(time.Second), "x", at(2*time.Second)), model.SignalAccepted, "", model.PublicSuspended)
	h.sent(h.signalParams(id, p.Waitpoint, at(time.Second), "x", at(3*time.Second)), model.SignalResumed, "", model.PublicWaiting)
}

// suspendAlreadySatisfied (scenario 15): the buffered signal of the
// pending waitpoint already satisfies the condition, so the attempt keeps
// its lease and goes on; the suspension and the waitpoint are recorded
// closed "satisfied" with that signal; a retry replays.
func suspendAlreadySatisfied(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	b := h.signalParams(id, w, wc, "go", at(2*time.Second))
	b.Payload = []byte("early")
	h.sent(b, model.SignalBuffered, "", model.PublicActive)
	before := h.describe(id)
	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), at(3*time.Second))
	p.Waitpoint, p.UsePending, p.TimeoutAt = w, true, at(time.Hour)
	res := call(h.ss.ExecutionSuspend(h.ctx, p)).must(h.t)
	if res.Outcome != model.SuspendAlreadySatisfied || res.Replayed || res.Suspension != p.Suspension || res.Waitpoint != w || !res.CreatedAt.Equal(wc) {
		h.t.Fatalf("ExecutionSuspend with a satisfying buffered signal: %+v", res)
	}
	if ids := signalIDs(res.Signals); len(ids) != 1 || ids[0] != b.Signal || string(res.Signals[0].Payload) != "early" {
		h.t.Fatalf("the satisfying signals: %+v", res.Signals)
	}
	snap := h.wantState(id, stActive)
	if snap.CurrentLease == nil || snap.CurrentLease.ID != c.Lease.ID || snap.LeaseEpoch != before.LeaseEpoch || !snap.LastTransitionAt.Equal(before.LastTransitionAt) {
		h.t.Fatalf("the lease after an already-satisfied suspend: %+v epoch %d", snap.CurrentLease, snap.LeaseEpoch)
	}
	if atts := h.attempts(id); atts[0].Status != model.AttemptStarted {
		h.t.Fatalf("attempt after an already-satisfied suspend: %+v", atts[0])
	}
	h.wantIndexes(id, activeIndexes(laneA, wA.Instance)...)
	s := h.wantClosed(id, model.ClosedSatisfied, at(3*time.Second))
	if ids := signalIDs(s.Signals); len(ids) != 1 || ids[0] != b.Signal || s.ID != p.Suspension {
		h.t.Fatalf("the satisfied suspension: %+v", s)
	}
	h.wantWaitpoint(id, w, model.WaitpointClosed, model.ClosedSatisfied, at(3*time.Second))
	if got := h.suspendedList(id.Partition()); len(got) != 0 {
		h.t.Fatalf("SuspendedList: %+v", got)
	}
	h.wantNotDue(id, model.IndexSuspensionTimeout)
	h.refused(func() {
		q := *p
		q.Now = at(4 * time.Second)
		res := call(h.ss.ExecutionSuspend(h.ctx, &q)).must(h.t)
		if res.Outcome != model.SuspendAlreadySatisfied || !res.Replayed || res.Suspension != p.Suspension {
			h.t.Fatalf("replayed ExecutionSuspend: %+v", res)
		}
	}, id)
	// the fence still holds: the attempt goes on and completes
	h.complete(id, c.Fence(), at(5*time.Second))
	h.wantState(id, stTerminal(model.OutcomeSuccess, model.AttemptTerminal))
	// a retry still replays, whatever the state now
	h.refused(func() {
		q := *p
		q.Now = at(6 * time.Second)
		res := call(h.ss.ExecutionSuspend(h.ctx, &q)).must(h.t)
		if res.Outcome != model.SuspendAlreadySatisfied || !res.Replayed || res.Suspension != p.Suspension {
			h.t.Fatalf("ExecutionSuspend replayed after the completion: %+v", res)
		}
	}, id)
}

// suspendAlreadySatisfiedTwo: a fresh own waitpoint and a pending one
// whose buffered signal satisfies the condition: both close "satisfied".
func suspendAlreadySatisfiedTwo(h *suspendHarness) {
	id, c := h.active(at(0))
	w, wc := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	b := h.signalParams(id, w, wc, "result", at(2*time.Second))
	h.sent(b, model.SignalBuffered, "", model.PublicActive)
	p := h.suspendParams(id, c.Fence(), signalOn(w, "result"), at(3*time.Second))
	p.Reason = model.SuspendForToolResult
	res := call(h.ss.ExecutionSuspend(h.ctx, p)).must(h.t)
	if res.Outcome != model.SuspendAlreadySatisfied || res.Waitpoint != p.Waitpoint || !res.CreatedAt.Equal(at(3*time.Second)) {
		h.t.Fatalf("ExecutionSuspend: %+v", res)
	}
	h.wantState(id, stActive)
	h.wantWaitpoint(id, w, model.WaitpointClosed, model.ClosedSatisfied, at(3*time.Second))
	h.wantWaitpoint(id, p.Waitpoint, model.WaitpointClosed, model.ClosedSatisfied, at(3*time.Second))
	h.signalErr(h.signalParams(id, w, wc, "result", at(4*time.Second)), model.ErrWaitpointClosed)
	h.wantIndexes(id, activeIndexes(laneA, wA.Instance)...)
}

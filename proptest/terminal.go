package proptest

import (
	"errors"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actProgress(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	p := &model.ExecutionUpdateProgressParams{
		ID: id, Fence: m.drawFence(t, id), Percent: rapid.IntRange(0, 100).Draw(t, "percent"),
		Message: drawFrom(t, []string{"", "halfway", "ünïcødé"}, "message"), Now: m.now(),
	}
	bad := invalid(t, 3)
	switch bad {
	case 0:
		p.Percent = 101
	case 1:
		p.Percent = -1
	case 2:
		p.Message = strings.Repeat("x", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	_, err := call(m, t, "ExecutionUpdateProgress", p, model.Store.ExecutionUpdateProgress)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionUpdateProgress", err)
		return
	}
	m.checkFenced(t, "ExecutionUpdateProgress", prev, model.SourceWorker, p.Fence, false, false, err)
}

func (m *machine) actComplete(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionCompleteParams{ID: id, Fence: f, Source: src, Result: drawFrom(t, payloads, "result"), Now: m.now()}
	var w poolWorker
	// a next claim is rare, but common on a paused lane (lane.go)
	paused := m.pausedLanes()
	if chance(t, 3, "with_next") || (len(paused) > 0 && chance(t, 20, "next_on_paused")) {
		lane := drawFrom(t, lanes, "next_lane")
		if prev := m.snap(id); prev != nil && chance(t, 2, "next_same_lane") {
			lane = prev.Lane
		}
		if len(paused) > 0 && chance(t, 50, "next_paused_lane") {
			lane = drawFrom(t, paused, "next_paused")
		}
		w = drawFrom(t, workerPool, "next_worker")
		caps := drawCaps(t, "next_caps", 60)
		p.Next = &model.NextClaim{Lane: lane, Namespace: drawClaimNamespace(t), Capabilities: caps, LiveCapabilities: unionCaps(caps, drawCaps(t, "next_live", 50)),
			ScanLimit: rapid.IntRange(1, 4).Draw(t, "next_scan_limit"), LeaseRequest: m.leaseRequest(t, w)}
	}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		if p.Next == nil {
			p.Next = &model.NextClaim{Lane: lanes[0], ScanLimit: 1, LeaseRequest: m.leaseRequest(t, drawFrom(t, workerPool, "next_worker"))}
		}
		p.Next.ScanLimit = 0
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionComplete", p, model.Store.ExecutionComplete)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionComplete", err)
		return
	}
	m.checkFenced(t, "ExecutionComplete", prev, p.Source, p.Fence, false, err == nil && res.Replayed, err)
	if err != nil {
		return
	}
	if p.Next == nil || res.Replayed {
		// a replay claims nothing (a retransmission's claim already happened)
		m.expect(t, res.Next == nil, "ExecutionComplete without Next, or replayed, reported a next claim %+v", res.Next)
		return
	}
	m.expect(t, res.Next != nil, "ExecutionComplete with Next reported no next claim")
	if res.Next == nil {
		return
	}
	want := m.predictClaimNext(&model.ExecutionClaimNextParams{Partition: id.Partition(), Lane: p.Next.Lane, Namespace: p.Next.Namespace,
		Capabilities: p.Next.Capabilities, LiveCapabilities: p.Next.LiveCapabilities, ScanLimit: p.Next.ScanLimit,
		LeaseRequest: p.Next.LeaseRequest, Now: p.Now})
	var got claimNextOutcome
	got.blocked, got.skipped, got.paused = res.Next.Blocked, res.Next.Skipped, res.Next.Paused
	if res.Next.Claimed != nil {
		got.claimed = res.Next.Claimed.ID
	}
	if res.Next.Admit != nil {
		got.admit = res.Next.Admit.ID
		m.reached("ExecutionComplete next admit")
	}
	// A completion that resolves edges may release downstreams before its
	// next claim, in the same step, and the claim may take one of them:
	// the heads before the step predict it only when nothing was released.
	var released []model.ExecutionID
	if prev != nil && !prev.Flow.IsZero() {
		if fo := m.flowObs(prev.Flow); fo != nil {
			for _, e := range fo.Out[id] {
				released = append(released, e.Downstream)
			}
		}
	}
	if len(released) == 0 {
		m.expect(t, cmpEqual(got, want), "ExecutionComplete next: claimed %v, admit %v, blocked %v, skipped %d; the eligible heads say %v, %v, %v, %d",
			got.claimed, got.admit, got.blocked, got.skipped, want.claimed, want.admit, want.blocked, want.skipped)
	} else {
		// (the released heads may also use up the scan limit, as blocked
		// or skipped heads, before the predicted one)
		m.expect(t, got.claimed == want.claimed || slices.Contains(released, got.claimed) || got.claimed.IsZero(),
			"ExecutionComplete next: claimed %v; the eligible heads say %v, or a downstream of %v: %v", got.claimed, want.claimed, id, released)
	}
	if c := res.Next.Claimed; c != nil {
		m.acquire(t, "ExecutionComplete next", m.snap(c.ID), w, p.Next.LeaseRequest, c)
	}
}

func (m *machine) actFail(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionFailParams{
		ID: id, Fence: f, Source: src, Reason: drawFrom(t, reasons, "reason"),
		Category: drawFrom(t, categories, "category"), Now: m.now(),
	}
	bad := invalid(t, 4)
	m.corruptSource(&p.Source, &p.Fence, bad)
	switch bad {
	case 2:
		p.Category = "Bad-Cat"
	case 3:
		p.Reason = "\xc3\x28"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionFail", p, model.Store.ExecutionFail)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionFail", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionFail", prev, p.Source, p.Fence, false, replayed, err)
	if err == nil && !replayed {
		cat := p.Category
		if cat == "" {
			cat = model.FailureTransient
		}
		retry := cat.Retryable() && prev.RetryCount < prev.RetryPolicy.MaxRetries
		if retry {
			until := m.now().Add(ms(prev.RetryPolicy.BackoffMs(prev.RetryCount)))
			m.expect(t, res.Outcome == model.FailRetryScheduled && res.DelayUntil.Equal(until),
				"ExecutionFail: %s until %v, want retry until %v", res.Outcome, res.DelayUntil, until)
		} else {
			m.expect(t, res.Outcome == model.FailTerminal, "ExecutionFail: %s, want %s (category %s, retries %d of %d)",
				res.Outcome, model.FailTerminal, cat, prev.RetryCount, prev.RetryPolicy.MaxRetries)
		}
	}
}

func (m *machine) actCancel(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return s.State.LifecyclePhase != model.PhaseTerminal })
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionCancelParams{ID: id, Reason: drawFrom(t, reasons, "reason"), Source: src, Fence: f, Now: m.now()}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		p.Reason = strings.Repeat("r", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionCancel", p, model.Store.ExecutionCancel)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionCancel", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionCancel", prev, p.Source, p.Fence, true, replayed, err)
	if err == nil && !replayed {
		m.expect(t, res.PriorPhase == prev.State.LifecyclePhase, "ExecutionCancel: prior phase %v, was %v", res.PriorPhase, prev.State.LifecyclePhase)
	}
}

func (m *machine) actDelay(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionDelayParams{
		ID: id, Fence: f, Source: src,
		DelayUntil: m.now().Add(ms(rapid.Int64Range(-2_000, 20_000).Draw(t, "delay_ms"))), Now: m.now(),
	}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		p.DelayUntil = time.Time{}
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionDelay", p, model.Store.ExecutionDelay)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionDelay", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionDelay", prev, p.Source, p.Fence, false, replayed, err)
	if err == nil && !replayed {
		m.expect(t, res.DelayUntil.Equal(p.DelayUntil), "ExecutionDelay: until %v, asked %v", res.DelayUntil, p.DelayUntil)
	}
}

func (m *machine) actChangePriority(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	p := &model.ExecutionChangePriorityParams{ID: id, Priority: drawFrom(t, priorities, "priority"), Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.ID = model.ExecutionID{}
	case 1:
		p.Now = time.UnixMilli(0)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionChangePriority", p, model.Store.ExecutionChangePriority)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionChangePriority", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && prev.State.LifecyclePhase != model.PhaseTerminal &&
			res.Old == prev.Priority && res.New == model.ClampPriority(p.Priority),
			"ExecutionChangePriority(%d): %+v on %+v", p.Priority, res, prev)
	}
}

// actTimeoutFlow lets an active execution's attempt time out: the clock
// moves to its attempt deadline, then the expiry runs.
func (m *machine) actTimeoutFlow(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return isOwned(model.OwnershipLeased)(s) && s.AttemptTimeout > 0
	})
	if s := m.snap(id); s != nil && s.CurrentLease != nil && s.AttemptTimeout > 0 {
		if due := s.CurrentLease.AcquiredAt.Add(s.AttemptTimeout); due.After(m.now()) {
			m.clock.Set(due) // before any call, so every write of the step is at Now
			m.observeQuiet(t)
		}
	}
	prev := m.snap(id)
	p := &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: m.now()}
	res, err := call(m, t, "ExecutionExpire", p, model.Store.ExecutionExpire)
	m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
	m.checkExpire(t, prev, p.Reason, res)
}

// actReplayThenCancel replays a terminal execution and cancels it at once
// as an operator, so that it can be replayed again (and replay caps are
// reached).
func (m *machine) actReplayThenCancel(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseTerminal))
	rounds := rapid.IntRange(1, 3).Draw(t, "rounds")
	for range rounds {
		prev := m.snap(id)
		p := &model.ExecutionReplayParams{ID: id, Reason: "again", Now: m.now()}
		_, err := call(m, t, "ExecutionReplay", p, model.Store.ExecutionReplay)
		if prev != nil && prev.State.LifecyclePhase == model.PhaseTerminal && prev.ReplayCount >= prev.MaxReplays {
			m.expect(t, errors.Is(err, model.ErrMaxReplaysExhausted), "ExecutionReplay at %d of %d replays: %v", prev.ReplayCount, prev.MaxReplays, err)
		}
		if err != nil {
			return
		}
		m.observeQuiet(t)
		prev = m.snap(id)
		c := &model.ExecutionCancelParams{ID: id, Reason: "enough", Source: model.SourceOperator, Now: m.now()}
		res, err := call(m, t, "ExecutionCancel", c, model.Store.ExecutionCancel)
		m.checkFenced(t, "ExecutionCancel", prev, model.SourceOperator, model.Fence{}, true, err == nil && res.Replayed, err)
		m.observeQuiet(t)
	}
}

func (m *machine) actReplay(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseTerminal))
	p := &model.ExecutionReplayParams{
		ID: id, Reason: drawFrom(t, reasons, "reason"),
		RequestedBy: drawFrom(t, []string{"", "ops"}, "requested_by"), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Reason = "\xff"
	case 1:
		p.RequestedBy = strings.Repeat("o", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionReplay", p, model.Store.ExecutionReplay)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionReplay", err)
		return
	}
	var want *model.Error
	switch {
	case prev == nil:
		want = model.ErrNotFound
	case prev.State.LifecyclePhase != model.PhaseTerminal:
		want = model.ErrNotTerminal
	case prev.ReplayCount >= prev.MaxReplays:
		want = model.ErrMaxReplaysExhausted
	}
	if want != nil {
		m.expect(t, errors.Is(err, want), "ExecutionReplay of %+v: %v, want %s", prev, err, want.Code)
		return
	}
	// A flow member may be held again, released at once, or (a group
	// that can never be satisfied) skipped again.
	ok := err == nil && (res.PublicState == model.PublicWaiting || (!prev.Flow.IsZero() &&
		(res.PublicState == model.PublicWaitingChildren || res.PublicState == model.PublicSkipped)))
	m.expect(t, ok, "ExecutionReplay: %+v %v", res, err)
}

func (m *machine) actExpire(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return s.State.LifecyclePhase != model.PhaseTerminal && (!s.Deadline.IsZero() || s.AttemptTimeout > 0)
	})
	p := &model.ExecutionExpireParams{
		ID:     id,
		Reason: drawFrom(t, []model.ExpireReason{model.ExpireAttemptTimeout, model.ExpireExecutionDeadline}, "reason"),
		Now:    m.now(),
	}
	if s := m.snap(id); s != nil && s.State.LifecyclePhase == model.PhaseActive && s.AttemptTimeout > 0 && !chance(t, 20, "other_reason") {
		p.Reason = model.ExpireAttemptTimeout
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Reason = 0
	case 1:
		p.Reason = 7
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionExpire", p, model.Store.ExecutionExpire)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionExpire", err)
		return
	}
	m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
	m.checkExpire(t, prev, p.Reason, res)
}

// checkExpire checks an expiry's status against the state before it.
func (m *machine) checkExpire(t *rapid.T, prev *model.ExecutionSnapshot, reason model.ExpireReason, res *model.ExecutionExpireResult) {
	t.Helper()
	now := m.now()
	var want model.ExpireOutcome
	switch {
	case prev == nil:
		want = model.ExpireNotFoundCleaned
	case prev.State.LifecyclePhase == model.PhaseTerminal:
		want = model.ExpireAlreadyTerminal
	case reason == model.ExpireExecutionDeadline && prev.Deadline.IsZero():
		want = model.ExpireNotActiveCleaned
	case reason == model.ExpireExecutionDeadline && prev.Deadline.After(now):
		want = model.ExpireNotYetDue
	case reason == model.ExpireExecutionDeadline:
		want = model.ExpireExpired
	case prev.State.LifecyclePhase != model.PhaseActive || prev.AttemptTimeout == 0:
		want = model.ExpireNotActiveCleaned
	case prev.CurrentLease == nil:
		return // revoked: the timer's time is not in the record
	case prev.CurrentLease.AcquiredAt.Add(prev.AttemptTimeout).After(now):
		want = model.ExpireNotYetDue
	case prev.RetryCount < prev.RetryPolicy.MaxRetries:
		want = model.ExpireRetryScheduled
	default:
		want = model.ExpireExpired
	}
	m.expect(t, res.Outcome == want, "ExecutionExpire(%v): %s, want %s (state %+v)", reason, res.Outcome, want, prev)
	if res.Outcome == model.ExpireRetryScheduled {
		until := now.Add(ms(prev.RetryPolicy.BackoffMs(prev.RetryCount)))
		m.expect(t, res.DelayUntil.Equal(until), "ExecutionExpire retry until %v, want %v", res.DelayUntil, until)
	}
}

package proptest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Suspension, waitpoints and signals (model.SuspendStore,
// model/suspend_ops.go). The actions target what makes the calls
// meaningful: a running execution (built on purpose when none is at hand)
// creates pending waitpoints and suspends on a condition over its own
// waitpoint and the pending ones (signals, all-of, counts of distinct
// waitpoints, signals or sources, operator-only, timeout-only), with
// timeouts of every behaviour and resume policies (Delay,
// KeepWaitpoints, KeepSignals); signals go to waitpoints that exist, with
// names and sources the conditions read, idempotency keys and short
// dedup TTLs; operators resume; the two scanners' steps run at and
// around their due times; and a suspension is sometimes driven on in the
// same step (signalled until it resumes, resumed, claimed again — the
// resumed attempt, epoch + 1 — and suspended again on the kept
// waitpoints, or cancelled). Every answer is predicted from the state
// before the call (store A's observation and the dedup keys the machine
// remembers): Validate's error exactly, the fence checks, the refusals
// in the contract's order, replays, effects and outcomes.

var (
	condNames   = []string{"", "approve", "reject"}
	signalNames = []string{"", "approve", "reject", "other"}
	sigSources  = []string{"", "approver:alice", "approver:bob"}
	sigKeys     = []string{"k1", "k2"}
)

// suspendModel is what the machine remembers of suspension beyond the
// observations: the idempotency keys of deliveries (their TTL is not
// stored where a read shows it) and each execution's latest accepted
// suspend (to retry it).
type suspendModel struct {
	dedup   map[dedupRef]dedupVal
	suspend map[model.ExecutionID]*model.ExecutionSuspendParams
}

type dedupRef struct {
	exec model.ExecutionID
	wp   model.WaitpointID
	key  string
}

type dedupVal struct {
	signal    model.SignalID
	expiresAt time.Time
}

func suspOp[P, R any](f func(model.SuspendStore, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return optional(f)
}

// reached records an outcome no single answer shows (a dedup key that
// expired, a kept waitpoint, a resumed claim) for the coverage test.
func (m *machine) reached(label string) {
	if m.opts.onCall != nil {
		m.opts.onCall(label, nil, nil)
	}
}

func (m *machine) suspObs(id model.ExecutionID) *SuspendObservation {
	if x := m.obs[0].Execs[id]; x != nil {
		return x.Suspend
	}
	return nil
}

// partitionWaitpoints lists every waitpoint of the executions of part.
func (m *machine) partitionWaitpoints(part int) map[model.WaitpointID]model.ExecutionID {
	out := map[model.WaitpointID]model.ExecutionID{}
	for id, x := range m.obs[0].Execs {
		if id.Partition() != part || x.Suspend == nil {
			continue
		}
		for _, w := range x.Suspend.Waitpoints {
			out[w.ID] = id
		}
	}
	return out
}

func sortedWaitpoints(wps map[model.WaitpointID]model.ExecutionID) []model.WaitpointID {
	out := make([]model.WaitpointID, 0, len(wps))
	for w := range wps {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b model.WaitpointID) int { return slices.Compare(a[:], b[:]) })
	return out
}

func (m *machine) newWaitpointID(t *rapid.T) model.WaitpointID {
	return model.WaitpointID(m.nextUUID(t, "wp_order"))
}

func isSuspended(s *model.ExecutionSnapshot) bool {
	return s.State.LifecyclePhase == model.PhaseSuspended
}

// buildRunning creates an execution (sometimes with a deadline or an
// attempt timeout) and claims it, so a suspension has a running attempt.
func (m *machine) buildRunning(t *rapid.T) model.ExecutionID {
	t.Helper()
	lane := drawFrom(t, lanes, "susp_lane")
	id := model.NewExecutionID(m.cfg.SoloPartition(lane), m.nextUUID(t, "id_order"))
	p := &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane, Kind: kinds[0], Now: m.now(),
		RetryPolicy: drawRetryPolicy(t)}
	if chance(t, 15, "susp_deadline") {
		p.Deadline = m.now().Add(ms(rapid.Int64Range(1_000, 60_000).Draw(t, "susp_deadline_ms")))
	}
	mustCall(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate)
	m.learn(id, lane)
	m.claimNow(t, id)
	return id
}

// suspendTarget draws a running execution under a live lease, built when
// there is none (or sometimes anyway); rarely any execution.
func (m *machine) suspendTarget(t *rapid.T) model.ExecutionID {
	if len(m.execs) > 0 && chance(t, 8, "susp_any_exec") {
		return m.pickExec(t, nil)
	}
	ids := m.leasedWhere(func(*model.ExecutionSnapshot) bool { return true })
	if m.awaitRoom() && (len(ids) == 0 || chance(t, 25, "susp_build")) {
		return m.buildRunning(t)
	}
	if len(ids) == 0 {
		return m.pickExec(t, nil)
	}
	return drawFrom(t, ids, "susp_exec")
}

// drawHeldFence is the current fence, or sometimes one drawFence draws.
func (m *machine) drawHeldFence(t *rapid.T, id model.ExecutionID) model.Fence {
	if s := m.snap(id); s != nil && !chance(t, 12, "susp_other_fence") {
		return currentFence(s)
	}
	return m.drawFence(t, id)
}

// ---- waitpoint create ----

func (m *machine) actWaitpointCreate(t *rapid.T) {
	id := m.suspendTarget(t)
	n := rapid.IntRange(1, 3).Draw(t, "wp_count")
	if chance(t, 4, "wp_to_limit") {
		n = model.MaxOpenWaitpoints + 1
	}
	f := m.drawHeldFence(t, id)
	for range n {
		m.waitpointCreate(t, id, f)
	}
}

// waitpointCreate creates one pending waitpoint (sometimes with an id that
// exists: a replay, or refused) and checks the answer.
func (m *machine) waitpointCreate(t *rapid.T, id model.ExecutionID, f model.Fence) {
	t.Helper()
	const op = "WaitpointCreate"
	p := &model.WaitpointCreateParams{ID: id, Fence: f, Waitpoint: m.newWaitpointID(t),
		ExpiresAt: m.now().Add(ms(rapid.Int64Range(1, 40_000).Draw(t, "wp_ttl_ms"))), Now: m.now()}
	if chance(t, 30, "wp_limit_set") {
		p.SignalLimit = rapid.IntRange(1, 3).Draw(t, "wp_signal_limit")
	}
	if wps := m.partitionWaitpoints(id.Partition()); len(wps) > 0 && chance(t, 10, "wp_existing") {
		p.Waitpoint = drawFrom(t, sortedWaitpoints(wps), "wp_existing_id")
	}
	switch bad := invalid(t, 5); bad {
	case 0:
		p.Waitpoint = model.WaitpointID{}
	case 1:
		p.ExpiresAt = m.now()
	case 2:
		p.ExpiresAt = m.now().Add(model.MaxWaitpointTTL + time.Millisecond)
	case 3:
		p.SignalLimit = model.MaxSignalLimit + 1
	case 4:
		p.ExpiresAt = time.Time{}
	}
	prev := m.snap(id)
	so := m.suspObs(id)
	res, err := call(m, t, op, p, suspOp(model.SuspendStore.WaitpointCreate))
	q := *p
	if verr := q.Validate(m.cfg); verr != nil {
		m.expectValidation(t, op, err)
		m.expect(t, cmpEqual(ViewError(err), ViewError(verr)), "%s: %v, Validate says %v", op, err, verr)
		return
	}
	if m.predictFenced(prev, p.Fence) != nil {
		m.checkFenced(t, op, prev, model.SourceWorker, p.Fence, false, false, err)
		return
	}
	var want *ErrorView
	w := so.waitpoint(p.Waitpoint)
	switch {
	case w != nil && w.State == model.WaitpointPending:
		m.expect(t, err == nil && res.Replayed && res.CreatedAt.Equal(w.CreatedAt),
			"%s of its pending waitpoint %v: %+v %v, want a replay created at %v", op, w.ID, res, err, w.CreatedAt)
		return
	case m.partitionWaitpoints(id.Partition())[p.Waitpoint] != (model.ExecutionID{}):
		want = &ErrorView{Code: model.CodeInvalidInput, Field: "Waitpoint", Detail: "exists"}
	case so.openWaitpoints() >= model.MaxOpenWaitpoints:
		want = &ErrorView{Code: model.CodeWaitpointLimit}
	}
	if want != nil {
		m.expect(t, cmpEqual(ViewError(err), want), "%s: %v, want %+v", op, err, *want)
		return
	}
	m.expect(t, err == nil && !res.Replayed && res.CreatedAt.Equal(m.now().Truncate(time.Millisecond)),
		"%s of a new waitpoint: %+v %v, want created now", op, res, err)
	m.observeQuiet(t)
	nw := m.suspObs(id).waitpoint(p.Waitpoint)
	m.expect(t, nw != nil && nw.State == model.WaitpointPending && nw.ExpiresAt.Equal(p.ExpiresAt) && len(nw.Signals) == 0,
		"%s: the new waitpoint is %+v, want pending until %v", op, nw, p.ExpiresAt)
}

// ---- suspend ----

func (m *machine) actSuspend(t *rapid.T) {
	switch k := rapid.IntRange(0, 9).Draw(t, "susp_case"); {
	case k < 7:
		m.suspendRunning(t)
	case k < 8:
		m.suspendRetry(t)
	default:
		// refused: a suspended, terminal or unclaimed execution
		id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return s.State.LifecyclePhase != model.PhaseActive })
		p := m.suspendParams(t, id, m.drawFence(t, id))
		_, _ = m.suspend(t, p, -1) // checked inside
	}
}

// suspendRunning suspends a running execution (with pending waitpoints
// made first, sometimes), sometimes retries at once and drives on.
func (m *machine) suspendRunning(t *rapid.T) {
	id := m.suspendTarget(t)
	if s := m.leasedNow(m.snap(id)); s != nil && chance(t, 35, "susp_make_pending") {
		for range rapid.IntRange(1, 3).Draw(t, "susp_pending_n") {
			m.waitpointCreate(t, id, currentFence(s))
		}
		if chance(t, 40, "susp_buffer_first") {
			// signals buffered before the suspend (scenario 15: they
			// may satisfy it at once)
			for range rapid.IntRange(1, 3).Draw(t, "susp_buffered_n") {
				m.signal(t, m.signalTo(t, id, true))
			}
		}
	}
	p := m.suspendParams(t, id, m.drawHeldFence(t, id))
	bad := m.corruptSuspend(t, p)
	res, err := m.suspend(t, p, bad)
	if err != nil || res.Replayed {
		return
	}
	if chance(t, 20, "susp_retry_now") || (res.Outcome == model.SuspendAlreadySatisfied && chance(t, 50, "susp_retry_satisfied")) {
		q := *p
		r, err := m.suspend(t, &q, -1)
		m.expect(t, err == nil && r.Replayed && r.Outcome == res.Outcome && r.Suspension == res.Suspension,
			"ExecutionSuspend retried at once: %+v %v, want a replay of %+v", r, err, res)
	}
	if res.Outcome == model.Suspended && chance(t, 45, "susp_drive") {
		m.driveSuspension(t, id)
	}
}

// suspendRetry sends an execution's latest accepted suspend again, later:
// it replays while that suspension is the execution's current or last
// one, and is otherwise an ordinary suspend.
func (m *machine) suspendRetry(t *rapid.T) {
	var ids []model.ExecutionID
	for _, r := range m.execs {
		if m.susp.suspend[r.id] != nil {
			ids = append(ids, r.id)
		}
	}
	if len(ids) == 0 {
		m.suspendRunning(t)
		return
	}
	q := *m.susp.suspend[drawFrom(t, ids, "susp_retry")]
	q.Now = m.now()
	_, _ = m.suspend(t, &q, -1) // checked inside
}

// suspendParams draws a suspend of id: its own waitpoint fresh or one of
// its pending ones, a condition over it and the other pending ones, a
// reason, sometimes a timeout with a behaviour, and a resume policy;
// sometimes a refusal on purpose (an own or named waitpoint that is not
// pending, not the execution's, or taken).
func (m *machine) suspendParams(t *rapid.T, id model.ExecutionID, f model.Fence) *model.ExecutionSuspendParams {
	so := m.suspObs(id)
	var pending, closed []model.WaitpointID
	if so != nil {
		for _, w := range so.Waitpoints {
			switch w.State {
			case model.WaitpointPending:
				pending = append(pending, w.ID)
			case model.WaitpointClosed:
				closed = append(closed, w.ID)
			}
		}
	}
	p := &model.ExecutionSuspendParams{ID: id, Fence: f, Suspension: model.SuspensionID(m.nextUUID(t, "susp_order")),
		Reason: model.SuspendReason(rapid.IntRange(1, 5).Draw(t, "susp_reason")), Now: m.now()}
	if len(pending) > 0 && chance(t, 35, "susp_use_pending") {
		i := drawIndex(t, len(pending), "susp_own_pending")
		p.UsePending, p.Waitpoint = true, pending[i]
		pending = slices.Delete(slices.Clone(pending), i, i+1)
	} else {
		p.Waitpoint = m.newWaitpointID(t)
		if chance(t, 25, "susp_signal_limit") {
			p.SignalLimit = rapid.IntRange(1, 3).Draw(t, "susp_signal_limit_n")
		}
	}
	others := pending
	if len(others) > 0 {
		others = others[:1+drawIndex(t, len(others), "susp_others")]
	}
	// a refusal on purpose, now and then
	switch rapid.IntRange(0, 16).Draw(t, "susp_refusal") {
	case 0: // own: taken (a closed one, or another execution's)
		if len(closed) > 0 && genBool.Draw(t, "susp_own_closed") {
			p.Waitpoint, p.UsePending, p.SignalLimit = drawFrom(t, closed, "susp_closed_own"), genBool.Draw(t, "susp_taken_pending"), 0
		} else if taken := sortedWaitpoints(m.partitionWaitpoints(id.Partition())); len(taken) > 0 {
			p.Waitpoint = drawFrom(t, taken, "susp_taken")
			p.UsePending, p.SignalLimit = genBool.Draw(t, "susp_taken_pending"), 0
		}
	case 1:
		p.UsePending, p.SignalLimit, p.Waitpoint = true, 0, m.newWaitpointID(t)
	case 2: // a named waitpoint that is closed, unknown or another's
		if len(closed) > 0 && genBool.Draw(t, "susp_name_closed") {
			others = append(others, drawFrom(t, closed, "susp_closed"))
		} else {
			others = append(others, m.newWaitpointID(t))
		}
	}
	p.Condition = m.drawCondition(t, p.Waitpoint, others)
	if p.Condition.Kind == model.CondTimeout || chance(t, 50, "susp_timeout") {
		p.TimeoutAt = m.now().Add(ms(rapid.Int64Range(1, 10_000).Draw(t, "susp_timeout_ms")))
		p.TimeoutBehavior = model.TimeoutBehavior(rapid.IntRange(0, 5).Draw(t, "susp_behavior"))
		if p.Condition.Kind == model.CondTimeout && p.TimeoutBehavior == model.TimeoutEscalate {
			p.TimeoutBehavior = model.TimeoutAutoResume
		}
	}
	if chance(t, 25, "susp_delay") {
		p.Policy.Delay = ms(rapid.Int64Range(1, 5_000).Draw(t, "susp_delay_ms"))
	}
	if chance(t, 35, "susp_keep") {
		p.Policy.KeepWaitpoints = true
		p.Policy.KeepSignals = genBool.Draw(t, "susp_keep_signals")
	}
	return p
}

// drawCondition draws a resume condition over own (the zero waitpoint)
// and others, with a few names: mostly a leaf or an all-of (sometimes
// nested), sometimes operator-only or timeout-only.
func (m *machine) drawCondition(t *rapid.T, own model.WaitpointID, others []model.WaitpointID) model.ResumeCondition {
	all := append([]model.WaitpointID{own}, others...)
	used := map[model.WaitpointID]bool{}
	leaf := func() model.ResumeCondition {
		name := drawFrom(t, condNames, "cond_name")
		if rapid.IntRange(0, 2).Draw(t, "cond_leaf") < 2 {
			c := model.ResumeCondition{Kind: model.CondSignal, Name: name}
			if len(others) > 0 && chance(t, 50, "cond_on_other") {
				c.Waitpoint = drawFrom(t, others, "cond_wp")
				used[c.Waitpoint] = true
			}
			return c
		}
		c := model.ResumeCondition{Kind: model.CondCount, Name: name,
			Distinct: model.CountDistinct(rapid.IntRange(1, 3).Draw(t, "cond_distinct"))}
		if len(others) > 0 && chance(t, 70, "cond_count_wps") {
			for i, w := range all {
				if (i == 0 && chance(t, 60, "cond_count_own")) || (i > 0 && genBool.Draw(t, "cond_count_wp")) {
					c.Waitpoints = append(c.Waitpoints, w)
					used[w] = true
				}
			}
		}
		maxN := 3
		if c.Distinct == model.DistinctWaitpoints {
			maxN = max(1, len(c.Waitpoints))
		}
		c.N = rapid.IntRange(1, maxN).Draw(t, "cond_n")
		return c
	}
	var c model.ResumeCondition
	switch k := rapid.IntRange(0, 19).Draw(t, "cond_root"); {
	case k < 9:
		c = leaf()
	case k < 16:
		c = model.ResumeCondition{Kind: model.CondAllOf}
		for range rapid.IntRange(1, 3).Draw(t, "cond_of") {
			if chance(t, 15, "cond_nested") {
				c.Of = append(c.Of, model.ResumeCondition{Kind: model.CondAllOf, Of: []model.ResumeCondition{leaf(), leaf()}})
			} else {
				c.Of = append(c.Of, leaf())
			}
		}
	case k < 18:
		return model.ResumeCondition{Kind: model.CondOperator}
	default:
		return model.ResumeCondition{Kind: model.CondTimeout}
	}
	// every waitpoint drawn for it is bound: name the unused ones in an
	// all-of leaf, so the refusals of named waitpoints are reached
	var rest []model.ResumeCondition
	for _, w := range others {
		if !used[w] {
			rest = append(rest, model.ResumeCondition{Kind: model.CondSignal, Waitpoint: w, Name: drawFrom(t, condNames, "cond_name")})
		}
	}
	if len(rest) == 0 {
		return c
	}
	if c.Kind != model.CondAllOf {
		c = model.ResumeCondition{Kind: model.CondAllOf, Of: []model.ResumeCondition{c}}
	}
	c.Of = append(c.Of, rest...)
	if len(c.Of) > model.MaxConditionChildren {
		c.Of = c.Of[:model.MaxConditionChildren]
	}
	return c
}

// corruptSuspend makes p invalid 1 time in 20 and returns which way.
func (m *machine) corruptSuspend(t *rapid.T, p *model.ExecutionSuspendParams) int {
	bad := invalid(t, 10)
	switch bad {
	case 0:
		p.Suspension = model.SuspensionID{}
	case 1:
		p.Waitpoint = model.WaitpointID{}
	case 2:
		p.Reason = 9
	case 3:
		p.Condition = model.ResumeCondition{Kind: model.CondAllOf}
	case 4:
		p.TimeoutAt = m.now()
	case 5:
		p.TimeoutBehavior = 9
	case 6:
		p.Policy = model.ResumePolicy{KeepSignals: true}
	case 7:
		p.Policy.Delay = time.Microsecond
	case 8:
		p.Condition = model.ResumeCondition{Kind: model.CondTimeout}
		p.TimeoutAt = time.Time{}
	case 9:
		p.UsePending, p.SignalLimit = true, 2
	}
	return bad
}

// boundSignals is the buffered signals of the waitpoints p binds (the
// pending ones of so).
func boundSignals(p *model.ExecutionSuspendParams, so *SuspendObservation) []model.SignalRecord {
	var out []model.SignalRecord
	for _, w := range p.BoundWaitpoints() {
		if ws := so.waitpoint(w); ws != nil && ws.State == model.WaitpointPending {
			out = append(out, ws.Signals...)
		}
	}
	return out
}

func delivered(rs []model.SignalRecord) []model.DeliveredSignal {
	out := make([]model.DeliveredSignal, len(rs))
	for i := range rs {
		out[i] = rs[i].Delivered()
	}
	return out
}

// suspend calls ExecutionSuspend and checks the answer against the state
// before it: Validate's error; a replay of the current or last suspension
// id (whatever the state); the fence checks; the own waitpoint (pending
// with UsePending, else free and within the limit); each other named
// waitpoint pending and the execution's; then already satisfied by the
// buffered signals of the bound waitpoints, or suspended. A success is
// checked at once on store A.
func (m *machine) suspend(t *rapid.T, p *model.ExecutionSuspendParams, bad int) (*model.ExecutionSuspendResult, error) {
	t.Helper()
	const op = "ExecutionSuspend"
	prev := m.snap(p.ID)
	so := m.suspObs(p.ID)
	res, err := call(m, t, op, p, suspOp(model.SuspendStore.ExecutionSuspend))
	q := *p
	if verr := q.Validate(m.cfg); verr != nil || bad >= 0 {
		m.expectValidation(t, op, err)
		m.expect(t, cmpEqual(ViewError(err), ViewError(verr)), "%s with invalid input: %v, Validate says %v", op, err, verr)
		return res, err
	}
	if so != nil && so.Suspension != nil && so.Suspension.ID == p.Suspension {
		sp := so.Suspension
		want := model.Suspended
		if sp.ClosedBy == model.ClosedSatisfied {
			want = model.SuspendAlreadySatisfied
		}
		m.expect(t, err == nil && res.Replayed && res.Outcome == want && res.Suspension == sp.ID && res.Waitpoint == sp.Waitpoint,
			"%s with the id of its suspension %v (closed by %v): %+v %v, want a replay of %v", op, sp.ID, sp.ClosedBy, res, err, want)
		return res, err
	}
	if m.predictFenced(prev, p.Fence) != nil {
		m.checkFenced(t, op, prev, model.SourceWorker, p.Fence, false, false, err)
		return res, err
	}
	var want *ErrorView
	notPending := func(id model.WaitpointID, field, detail string) *ErrorView {
		w := so.waitpoint(id)
		switch {
		case w == nil:
			return &ErrorView{Code: model.CodeWaitpointNotFound, Field: field, Detail: detail}
		case w.State != model.WaitpointPending:
			return &ErrorView{Code: model.CodeWaitpointNotPending, Field: field, Detail: detail}
		}
		return nil
	}
	switch {
	case p.UsePending:
		want = notPending(p.Waitpoint, "Waitpoint", "")
	case m.partitionWaitpoints(p.ID.Partition())[p.Waitpoint] != (model.ExecutionID{}):
		want = &ErrorView{Code: model.CodeInvalidInput, Field: "Waitpoint", Detail: "exists"}
	case so.openWaitpoints() >= model.MaxOpenWaitpoints:
		want = &ErrorView{Code: model.CodeWaitpointLimit}
	}
	if want == nil {
		for _, w := range p.BoundWaitpoints()[1:] {
			if want = notPending(w, "Condition", w.String()); want != nil {
				break
			}
		}
	}
	if want != nil {
		m.expect(t, cmpEqual(ViewError(err), want), "%s: %v, want %+v", op, err, *want)
		return res, err
	}
	buffered := boundSignals(p, so)
	satisfied := p.Condition.Satisfied(p.Waitpoint, delivered(buffered))
	wantOutcome := model.Suspended
	if satisfied {
		wantOutcome = model.SuspendAlreadySatisfied
	}
	m.expect(t, err == nil && !res.Replayed && res.Outcome == wantOutcome && res.Suspension == p.Suspension && res.Waitpoint == p.Waitpoint,
		"%s of a running execution: %+v %v, want %v (buffered %d signals)", op, res, err, wantOutcome, len(buffered))
	if satisfied {
		m.expect(t, len(res.Signals) == len(buffered), "%s already satisfied: %d signals, %d buffered", op, len(res.Signals), len(buffered))
	} else {
		m.expect(t, len(res.Signals) == 0, "%s suspended, yet answered signals %+v", op, res.Signals)
	}
	if w := so.waitpoint(p.Waitpoint); p.UsePending && w != nil {
		m.expect(t, res.CreatedAt.Equal(w.CreatedAt), "%s on pending %v: created at %v, want %v", op, w.ID, res.CreatedAt, w.CreatedAt)
	} else if !p.UsePending {
		m.expect(t, res.CreatedAt.Equal(m.now().Truncate(time.Millisecond)), "%s: fresh waitpoint created at %v", op, res.CreatedAt)
	}
	if len(p.BoundWaitpoints()) > 1 || p.Condition.Kind == model.CondAllOf {
		m.reached("ExecutionSuspend composite")
	}
	q = *p
	m.susp.suspend[p.ID] = &q
	m.observeQuiet(t)
	s, sp := m.snap(p.ID), m.suspObs(p.ID)
	m.expect(t, s != nil && sp != nil && sp.Suspension != nil && sp.Suspension.ID == p.Suspension,
		"after %s the execution shows suspension %v", op, suspensionID(sp.suspension()))
	if satisfied {
		m.expect(t, s.State.LifecyclePhase == model.PhaseActive && s.LeaseEpoch == prev.LeaseEpoch && liveLease(s) != nil &&
			sp.Suspension.ClosedBy == model.ClosedSatisfied,
			"after %s already satisfied: %+v, suspension closed by %v; want the attempt running on", op, s.State, sp.Suspension.ClosedBy)
		return res, err
	}
	m.expect(t, isSuspended(s) && s.CurrentLease == nil && s.State.BlockingReason == p.Reason.BlockingReason() &&
		s.LeaseEpoch == prev.LeaseEpoch && sp.open() != nil,
		"after %s: %+v lease %+v, want suspended for %v without a lease", op, s.State, s.CurrentLease, p.Reason)
	return res, err
}

func (so *SuspendObservation) suspension() *model.SuspensionSnapshot {
	if so == nil {
		return nil
	}
	return so.Suspension
}

// driveSuspension drives a suspended execution on in the same step:
// signals that satisfy a leaf until it resumes (or a few), an operator
// resume, an early timeout scan, or a cancel; then, when it is eligible,
// a claim (the resumed attempt) and sometimes a suspend again (on the
// waitpoints it kept).
func (m *machine) driveSuspension(t *rapid.T, id model.ExecutionID) {
	switch k := rapid.IntRange(0, 9).Draw(t, "drive_how"); {
	case k < 5:
		for range rapid.IntRange(1, 4).Draw(t, "drive_signals") {
			if sp := m.suspObs(id).open(); sp == nil {
				break
			}
			m.signal(t, m.signalTo(t, id, true))
		}
	case k < 8:
		m.resume(t, id)
	case k < 9:
		m.suspensionExpire(t, id) // not due yet: its timeout is ahead
	default:
		p := &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Reason: "boom", Now: m.now()}
		_, err := call(m, t, "ExecutionCancel", p, model.Store.ExecutionCancel)
		m.expect(t, err == nil, "operator cancel of a suspended execution: %v", err)
		m.observeQuiet(t)
	}
	m.claimResumed(t, id)
}

// claimResumed claims id when it is eligible and, sometimes, suspends it
// again.
func (m *machine) claimResumed(t *rapid.T, id model.ExecutionID) {
	s := m.snap(id)
	if s == nil || !isEligible(s) || m.liveGrant(s) || !chance(t, 70, "drive_claim") {
		return
	}
	w := drawFrom(t, workerPool, "drive_worker")
	p := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: capUniverse, AdmissionToken: m.freshToken(), LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	res, err := call(m, t, "ExecutionGrantAndClaim", p, model.Store.ExecutionGrantAndClaim)
	if err != nil {
		return
	}
	m.acquire(t, "ExecutionGrantAndClaim", s, w, p.LeaseRequest, res)
	if res.Resumed {
		m.reached("ExecutionClaim resumed")
	}
	m.observeQuiet(t)
	if chance(t, 40, "drive_suspend_again") {
		q := m.suspendParams(t, id, res.Fence())
		_, _ = m.suspend(t, q, -1) // checked inside
	}
}

// ---- signals ----

func (m *machine) actSignal(t *rapid.T) {
	var p *model.SignalDeliverParams
	switch k := rapid.IntRange(0, 19).Draw(t, "sig_target"); {
	case k == 0 || len(m.execs) == 0:
		// an unknown waitpoint, or an unknown execution
		id := m.pickExec(t, nil)
		p = &model.SignalDeliverParams{Execution: id, Waitpoint: m.newWaitpointID(t), WaitpointCreatedAt: m.now(),
			Signal: model.SignalID(m.nextUUID(t, "sig_order")), Now: m.now()}
	case k <= 3 && len(m.susp.dedup) > 0:
		// a key delivered before, again: a duplicate within its TTL, a
		// new delivery after it
		refs := make([]dedupRef, 0, len(m.susp.dedup))
		for r := range m.susp.dedup {
			refs = append(refs, r)
		}
		slices.SortFunc(refs, func(a, b dedupRef) int {
			if c := a.exec.Compare(b.exec); c != 0 {
				return c
			}
			if c := slices.Compare(a.wp[:], b.wp[:]); c != 0 {
				return c
			}
			return strings.Compare(a.key, b.key)
		})
		r := drawFrom(t, refs, "sig_key_again")
		if w := m.suspObs(r.exec).waitpoint(r.wp); w != nil && w.State != model.WaitpointClosed &&
			len(w.Signals) < w.SignalLimit && chance(t, 50, "sig_key_expiry") {
			// to the key's expiry, give or take a millisecond: the
			// delivery below is taken either way
			m.jumpTo(t, m.susp.dedup[r].expiresAt)
		}
		p = m.signalTo(t, r.exec, false)
		if w := m.suspObs(r.exec).waitpoint(r.wp); w != nil {
			p.Waitpoint, p.WaitpointCreatedAt = w.ID, w.CreatedAt
		}
		p.IdempotencyKey = r.key
	default:
		var ids []model.ExecutionID
		open := k < 12
		for _, r := range m.execs {
			so := m.suspObs(r.id)
			if so == nil || len(so.Waitpoints) == 0 || (open && so.openWaitpoints() == 0) {
				continue
			}
			ids = append(ids, r.id)
		}
		if len(ids) == 0 {
			m.suspendRunning(t)
			return
		}
		p = m.signalTo(t, drawFrom(t, ids, "sig_exec"), open)
	}
	bad := invalid(t, 7)
	switch bad {
	case 0:
		p.Signal = model.SignalID{}
	case 1:
		p.Waitpoint = model.WaitpointID{}
	case 2:
		p.WaitpointCreatedAt = time.Time{}
	case 3:
		p.Source = string(make([]byte, model.MaxSignalSourceBytes+1))
	case 4:
		p.DedupTTL = model.MaxSignalDedupTTL + time.Millisecond
	case 5:
		p.Payload = make([]byte, model.MaxSignalPayloadBytes+1)
	case 6:
		p.DedupTTL = time.Microsecond
	}
	if bad >= 0 {
		_, err := call(m, t, "SignalDeliver", p, suspOp(model.SuspendStore.SignalDeliver))
		q := *p
		verr := q.Validate(m.cfg)
		m.expectValidation(t, "SignalDeliver", err)
		m.expect(t, cmpEqual(ViewError(err), ViewError(verr)), "SignalDeliver with invalid input: %v, Validate says %v", err, verr)
		return
	}
	m.signal(t, p)
	if chance(t, 25, "sig_again") {
		q := *p
		if chance(t, 50, "sig_again_fresh") {
			q.Signal = model.SignalID(m.nextUUID(t, "sig_order"))
		}
		m.signal(t, &q)
	}
}

// signalTo draws a delivery to a waitpoint of id: an open one when open
// (often one its open suspension reads, with a name it matches), else
// any; with a name, a source, sometimes an idempotency key with a short
// TTL, and rarely a wrong creation time (a token that does not match).
func (m *machine) signalTo(t *rapid.T, id model.ExecutionID, open bool) *model.SignalDeliverParams {
	so := m.suspObs(id)
	p := &model.SignalDeliverParams{Execution: id, Signal: model.SignalID(m.nextUUID(t, "sig_order")),
		Name: drawFrom(t, signalNames, "sig_name"), Source: drawFrom(t, sigSources, "sig_source"), Now: m.now()}
	var wps []model.WaitpointSnapshot
	if so != nil {
		for _, w := range so.Waitpoints {
			if !open || w.State != model.WaitpointClosed {
				wps = append(wps, w)
			}
		}
	}
	if len(wps) == 0 {
		p.Waitpoint, p.WaitpointCreatedAt = m.newWaitpointID(t), m.now()
		return p
	}
	w := drawFrom(t, wps, "sig_wp")
	if sp := so.open(); sp != nil && chance(t, 60, "sig_aim") {
		// a leaf of its condition: its waitpoint and name
		var leaves []model.ResumeCondition
		var walk func(c *model.ResumeCondition)
		walk = func(c *model.ResumeCondition) {
			switch c.Kind {
			case model.CondAllOf:
				for i := range c.Of {
					walk(&c.Of[i])
				}
			case model.CondSignal, model.CondCount:
				leaves = append(leaves, *c)
			}
		}
		walk(&sp.Condition)
		if len(leaves) > 0 {
			l := drawFrom(t, leaves, "sig_leaf")
			target := sp.Waitpoint
			switch {
			case l.Kind == model.CondSignal && !l.Waitpoint.IsZero():
				target = l.Waitpoint
			case l.Kind == model.CondCount && len(l.Waitpoints) > 0:
				target = drawFrom(t, l.Waitpoints, "sig_leaf_wp")
			}
			if tw := so.waitpoint(target); tw != nil {
				w = *tw
			}
			if l.Name != "" {
				p.Name = l.Name
			}
		}
	}
	p.Waitpoint, p.WaitpointCreatedAt = w.ID, w.CreatedAt
	if chance(t, 4, "sig_bad_token") {
		p.WaitpointCreatedAt = w.CreatedAt.Add(time.Millisecond)
	}
	if chance(t, 40, "sig_key") {
		p.IdempotencyKey = drawFrom(t, sigKeys, "sig_key_name")
		if genBool.Draw(t, "sig_ttl_set") {
			p.DedupTTL = ms(rapid.Int64Range(1, 5_000).Draw(t, "sig_ttl_ms"))
		}
	}
	if chance(t, 20, "sig_payload") {
		p.Payload = []byte(`{"ok":true}`)
	}
	return p
}

// heldSignal is the signal id the waitpoint w or the execution's open or
// last suspension holds, or nil (a delivery of it replays).
func heldSignal(w *model.WaitpointSnapshot, so *SuspendObservation, id model.SignalID) *model.SignalRecord {
	for i := range w.Signals {
		if w.Signals[i].ID == id {
			return &w.Signals[i]
		}
	}
	if sp := so.suspension(); sp != nil {
		for i := range sp.Signals {
			if sp.Signals[i].ID == id {
				return &sp.Signals[i]
			}
		}
	}
	return nil
}

// signal calls SignalDeliver with valid parameters and checks the answer
// against the state before it, in the contract's order: the execution,
// the waitpoint (of this execution), its creation time (the token), a
// signal id it holds already (a replay), a dedup hit within its TTL
// (even closed), closed, the signal limit; then
// buffered by a pending waitpoint, or judged by the open suspension's
// condition (ignored and why, accepted, resumed: runnable or delayed by
// the policy).
func (m *machine) signal(t *rapid.T, p *model.SignalDeliverParams) {
	t.Helper()
	const op = "SignalDeliver"
	prev := m.snap(p.Execution)
	so := m.suspObs(p.Execution)
	res, err := call(m, t, op, p, suspOp(model.SuspendStore.SignalDeliver))
	var want *ErrorView
	w := so.waitpoint(p.Waitpoint)
	ref := dedupRef{p.Execution, p.Waitpoint, p.IdempotencyKey}
	d, known := m.susp.dedup[ref]
	switch {
	case prev == nil:
		want = &ErrorView{Code: model.CodeExecutionNotFound}
	case w == nil:
		want = &ErrorView{Code: model.CodeWaitpointNotFound, Field: "Waitpoint"}
	case w.CreatedAt.UnixMilli() != p.WaitpointCreatedAt.UnixMilli():
		want = &ErrorView{Code: model.CodeInvalidToken}
	case heldSignal(w, so, p.Signal) != nil:
		r := heldSignal(w, so, p.Signal)
		m.expect(t, err == nil && res.Replayed && res.Signal == p.Signal && res.Effect == r.Effect && res.IgnoredReason == r.IgnoredReason &&
			res.State == prev.PublicState,
			"%s of a signal id it holds (%+v): %+v %v, want a replay in state %v", op, *r, res, err, prev.PublicState)
		return
	case p.IdempotencyKey != "" && known && d.expiresAt.After(m.now()):
		m.expect(t, err == nil && res.Effect == model.SignalDuplicate && !res.Replayed && res.Signal == d.signal && res.State == prev.PublicState,
			"%s with key %q seen until %v: %+v %v, want a duplicate of %v in state %v", op, p.IdempotencyKey, d.expiresAt, res, err, d.signal, prev.PublicState)
		return
	case w.State == model.WaitpointClosed:
		want = &ErrorView{Code: model.CodeWaitpointClosed}
	case len(w.Signals) >= w.SignalLimit:
		want = &ErrorView{Code: model.CodeSignalLimit}
	}
	if want != nil {
		m.expect(t, cmpEqual(ViewError(err), want), "%s to %+v: %v, want %+v", op, w, err, *want)
		return
	}
	if known && p.IdempotencyKey != "" {
		m.reached("SignalDeliver dedup_expired")
	}
	r := model.SignalRecord{ID: p.Signal, Waitpoint: p.Waitpoint, Name: p.Name, Source: p.Source}
	wantEffect, reason := model.SignalBuffered, ""
	var sp *model.SuspensionSnapshot
	if w.State == model.WaitpointActive {
		sp = so.open()
		m.expect(t, sp != nil, "active waitpoint %v without an open suspension", w.ID)
		switch {
		case sp.Condition.Kind == model.CondOperator:
			wantEffect, reason = model.SignalIgnored, model.IgnoredOperatorOnly
		case sp.Condition.Kind == model.CondTimeout:
			wantEffect, reason = model.SignalIgnored, model.IgnoredTimeoutOnly
		case !sp.Condition.Accepts(sp.Waitpoint, r.Delivered()):
			wantEffect, reason = model.SignalIgnored, model.IgnoredNotInCondition
		case sp.Condition.Satisfied(sp.Waitpoint, append(delivered(sp.Signals), r.Delivered())):
			wantEffect = model.SignalResumed
		default:
			wantEffect = model.SignalAccepted
		}
	}
	wantState := prev.PublicState
	var until time.Time
	if wantEffect == model.SignalResumed {
		wantState = model.PublicWaiting
		if sp.Policy.Delay > 0 {
			wantState, until = model.PublicDelayed, m.now().Add(sp.Policy.Delay).Truncate(time.Millisecond)
		}
	}
	m.expect(t, err == nil && !res.Replayed && res.Signal == p.Signal && res.Effect == wantEffect && res.IgnoredReason == reason &&
		res.State == wantState && res.DelayUntil.Equal(until),
		"%s to %v waitpoint %v: %+v %v, want %v %q in state %v until %v", op, w.State, w.ID, res, err, wantEffect, reason, wantState, until)
	if p.IdempotencyKey != "" {
		ttl := p.DedupTTL
		if ttl == 0 {
			ttl = model.DefaultSignalDedupTTL
		}
		m.susp.dedup[ref] = dedupVal{signal: p.Signal, expiresAt: m.now().Truncate(time.Millisecond).Add(ttl)}
	}
	m.observeQuiet(t)
	if wantEffect == model.SignalResumed {
		m.checkResumed(t, "resumed by a signal", p.Execution, sp, model.ClosedBySignal)
	}
}

// checkResumed checks store A right after sp was resumed (why): the
// suspension closed, its waitpoints closed or (KeepWaitpoints) pending
// again with their signals kept or consumed; the execution runnable,
// its paused attempt interrupted, eligible or delayed by the policy.
func (m *machine) checkResumed(t *rapid.T, how string, id model.ExecutionID, sp *model.SuspensionSnapshot, why model.CloseReason) {
	t.Helper()
	s, so := m.snap(id), m.suspObs(id)
	if s == nil {
		m.fatalf(t, "%s: %v is gone", how, id)
		return
	}
	m.expect(t, so.Suspension != nil && so.Suspension.ID == sp.ID && so.Suspension.ClosedBy == why &&
		so.Suspension.ClosedAt.Equal(m.now().Truncate(time.Millisecond)),
		"%s: suspension %+v, want %v closed by %v now", how, so.suspension(), sp.ID, why)
	want := model.PublicWaiting
	if sp.Policy.Delay > 0 {
		want = model.PublicDelayed
		m.reached("Resume delayed")
	}
	m.expect(t, s.State.LifecyclePhase == model.PhaseRunnable && s.State.AttemptState == model.AttemptInterrupted && s.PublicState == want,
		"%s: %+v (%v), want runnable %v with its attempt interrupted", how, s.State, s.PublicState, want)
	for _, wid := range sp.Waitpoints {
		w := so.waitpoint(wid)
		switch {
		case w == nil:
			m.fatalf(t, "%s: bound waitpoint %v vanished", how, wid)
		case sp.Policy.KeepWaitpoints:
			m.expect(t, w.State == model.WaitpointPending && w.ExpiresAt.After(time.Time{}),
				"%s keeping waitpoints: %v is %+v, want pending", how, wid, *w)
			if !sp.Policy.KeepSignals {
				m.expect(t, len(w.Signals) == 0, "%s without KeepSignals: %v still holds %d signals", how, wid, len(w.Signals))
			} else if len(w.Signals) > 0 {
				m.reached("Resume kept_signals")
			}
			m.reached("Resume kept_waitpoints")
		default:
			m.expect(t, w.State == model.WaitpointClosed && w.ClosedBy == why, "%s: bound waitpoint %v is %+v, want closed by %v", how, wid, *w, why)
		}
	}
}

// ---- resume, timeouts, waitpoint expiry ----

func (m *machine) actResume(t *rapid.T) {
	id := m.pickExec(t, isSuspended)
	m.resume(t, id)
	m.claimResumed(t, id)
}

// resume calls ExecutionResume: refused for no execution or no open
// suspension, else the execution is runnable (delayed by the policy).
func (m *machine) resume(t *rapid.T, id model.ExecutionID) {
	t.Helper()
	const op = "ExecutionResume"
	p := &model.ExecutionResumeParams{ID: id, Now: m.now()}
	if invalid(t, 1) == 0 {
		p.Now = time.Time{}
		_, err := call(m, t, op, p, suspOp(model.SuspendStore.ExecutionResume))
		m.expectValidation(t, op, err)
		return
	}
	prev, sp := m.snap(id), m.suspObs(id).open()
	res, err := call(m, t, op, p, suspOp(model.SuspendStore.ExecutionResume))
	switch {
	case prev == nil:
		m.expect(t, cmpEqual(ViewError(err), &ErrorView{Code: model.CodeExecutionNotFound}), "%s of an unknown execution: %v", op, err)
		return
	case sp == nil:
		m.expect(t, cmpEqual(ViewError(err), &ErrorView{Code: model.CodeExecutionNotSuspended}), "%s of %v: %v, want not suspended", op, prev.State, err)
		return
	}
	var until time.Time
	want := model.PublicWaiting
	if sp.Policy.Delay > 0 {
		want, until = model.PublicDelayed, m.now().Truncate(time.Millisecond).Add(sp.Policy.Delay)
	}
	m.expect(t, err == nil && res.State == want && res.DelayUntil.Equal(until), "%s: %+v %v, want %v until %v", op, res, err, want, until)
	m.observeQuiet(t)
	m.checkResumed(t, op, id, sp, model.ClosedByOperator)
}

func (m *machine) actSuspensionExpire(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return isSuspended(s) && !m.suspObs(s.ID).timeoutAt(s.State).IsZero()
	})
	if at := m.suspObs(id).timeoutAt(m.snapState(id)); !at.IsZero() && chance(t, 80, "to_timeout") {
		m.jumpTo(t, at)
	}
	m.suspensionExpire(t, id)
	m.claimResumed(t, id)
}

func (m *machine) snapState(id model.ExecutionID) model.StateVector {
	if s := m.snap(id); s != nil {
		return s.State
	}
	return model.StateVector{}
}

// jumpTo sets the clock to at, give or take a millisecond, when that is
// ahead. Only before the step's first call, and only for a step whose
// calls cannot all fail (a differential run holds a step whose every
// call failed to the observation before it).
func (m *machine) jumpTo(t *rapid.T, at time.Time) {
	t.Helper()
	target := at.Add(ms(int64(rapid.IntRange(-1, 1).Draw(t, "jump_off_ms"))))
	if m.calls == 0 && target.After(m.now()) {
		t.Logf("step %d: advance to %v", m.step, target)
		m.clock.Set(target)
		m.observeQuiet(t)
	}
}

// suspensionExpire calls SuspensionExpire and checks its outcome against
// the state before it, then the state after a timeout that fired.
func (m *machine) suspensionExpire(t *rapid.T, id model.ExecutionID) {
	t.Helper()
	const op = "SuspensionExpire"
	prev := m.snap(id)
	sp := m.suspObs(id).open()
	res, err := call(m, t, op, &model.SuspensionExpireParams{ID: id, Now: m.now()}, suspOp(model.SuspendStore.SuspensionExpire))
	m.expect(t, err == nil, "%s: %v", op, err)
	var want model.SuspensionExpireOutcome
	switch {
	case prev == nil:
		want = model.SuspensionExpireNotFoundCleaned
	case sp == nil || sp.TimeoutAt.IsZero():
		want = model.SuspensionExpireNotSuspendedCleaned
	case sp.TimeoutAt.After(m.now()):
		want = model.SuspensionExpireNotYetDue
	default:
		want = map[model.TimeoutBehavior]model.SuspensionExpireOutcome{
			model.TimeoutFail: model.SuspensionExpireFailed, model.TimeoutCancel: model.SuspensionExpireCancelled,
			model.TimeoutExpire: model.SuspensionExpireExpired, model.TimeoutAutoResume: model.SuspensionExpireResumed,
			model.TimeoutEscalate: model.SuspensionExpireEscalated,
		}[sp.TimeoutBehavior]
	}
	var until time.Time
	if want == model.SuspensionExpireResumed && sp.Policy.Delay > 0 {
		until = m.now().Truncate(time.Millisecond).Add(sp.Policy.Delay)
	}
	m.expect(t, res.Outcome == want && res.DelayUntil.Equal(until), "%s: %+v, want %v until %v (suspension %+v)", op, res, want, until, sp)
	switch want {
	case model.SuspensionExpireNotFoundCleaned, model.SuspensionExpireNotSuspendedCleaned, model.SuspensionExpireNotYetDue:
		return
	}
	m.observeQuiet(t)
	s, so := m.snap(id), m.suspObs(id)
	switch want {
	case model.SuspensionExpireResumed:
		m.checkResumed(t, op, id, sp, model.ClosedTimeoutResume)
	case model.SuspensionExpireEscalated:
		m.expect(t, isSuspended(s) && so.open() != nil && so.Suspension.Escalated && so.Suspension.TimeoutAt.IsZero() &&
			so.Suspension.Reason == model.SuspendForOperatorReview && s.State.BlockingReason == model.PausedByOperator,
			"%s escalated: %+v, suspension %+v", op, s.State, so.suspension())
	default:
		outcome := map[model.SuspensionExpireOutcome]model.TerminalOutcome{model.SuspensionExpireFailed: model.OutcomeFailed,
			model.SuspensionExpireCancelled: model.OutcomeCancelled, model.SuspensionExpireExpired: model.OutcomeExpired}[want]
		why := map[model.SuspensionExpireOutcome]model.CloseReason{model.SuspensionExpireFailed: model.ClosedTimeoutFail,
			model.SuspensionExpireCancelled: model.ClosedTimeoutCancel, model.SuspensionExpireExpired: model.ClosedTimeoutExpire}[want]
		m.expect(t, s.State.LifecyclePhase == model.PhaseTerminal && s.State.TerminalOutcome == outcome &&
			so.Suspension.ClosedBy == why && so.openWaitpoints() == 0,
			"%s %v: %+v, suspension closed by %v, %d open waitpoints", op, want, s.State, so.Suspension.ClosedBy, so.openWaitpoints())
	}
}

func (m *machine) actWaitpointExpire(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return !m.suspObs(s.ID).earliestPending().IsZero() })
	if at := m.suspObs(id).earliestPending(); !at.IsZero() && chance(t, 50, "to_wp_expiry") {
		m.jumpTo(t, at)
	}
	m.waitpointExpire(t, id)
}

// waitpointExpire calls WaitpointExpire: it closes exactly the pending
// waitpoints whose expiry has come and reports the next one.
func (m *machine) waitpointExpire(t *rapid.T, id model.ExecutionID) {
	t.Helper()
	const op = "WaitpointExpire"
	so := m.suspObs(id)
	res, err := call(m, t, op, &model.WaitpointExpireParams{ID: id, Now: m.now()}, suspOp(model.SuspendStore.WaitpointExpire))
	m.expect(t, err == nil, "%s: %v", op, err)
	closed, next := 0, time.Time{}
	var expired []model.WaitpointID
	if so != nil {
		for _, w := range so.Waitpoints {
			if w.State != model.WaitpointPending {
				continue
			}
			if !w.ExpiresAt.After(m.now()) {
				closed++
				expired = append(expired, w.ID)
			} else if next.IsZero() || w.ExpiresAt.Before(next) {
				next = w.ExpiresAt
			}
		}
	}
	m.expect(t, res.Closed == closed && res.NextDueAt.Equal(next), "%s: %+v, want %d closed, next due %v", op, res, closed, next)
	if closed == 0 {
		return
	}
	m.observeQuiet(t)
	for _, wid := range expired {
		w := m.suspObs(id).waitpoint(wid)
		m.expect(t, w != nil && w.State == model.WaitpointClosed && w.ClosedBy == model.ClosedWaitpointTTL,
			"%s: expired waitpoint %v is %+v", op, wid, w)
	}
}

// ---- reads ----

// actSuspendRead reads one execution's suspension and waitpoints and one
// partition's suspended list (in pages of a drawn size), and checks them
// against the observation.
func (m *machine) actSuspendRead(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return m.suspObs(s.ID).suspension() != nil })
	so := m.suspObs(id)
	sp, err := call(m, t, "SuspensionDescribe", &model.SuspensionDescribeParams{ID: id}, suspOp(model.SuspendStore.SuspensionDescribe))
	switch {
	case m.snap(id) == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "SuspensionDescribe of an unknown execution: %v", err)
	case so.suspension() == nil:
		m.expect(t, errors.Is(err, model.ErrSuspensionNotFound), "SuspensionDescribe of an execution without one: %v", err)
	default:
		m.expect(t, err == nil && cmpEqual(sp, so.Suspension), "SuspensionDescribe: %+v %v, observed %+v", sp, err, so.Suspension)
	}
	wl, err := call(m, t, "WaitpointList", &model.WaitpointListParams{ID: id}, suspOp(model.SuspendStore.WaitpointList))
	if m.snap(id) == nil {
		m.expect(t, errors.Is(err, model.ErrNotFound), "WaitpointList of an unknown execution: %v", err)
	} else {
		m.expect(t, err == nil && cmpEqual(wl.Waitpoints, so.Waitpoints), "WaitpointList: %+v %v, observed %+v", wl, err, so.Waitpoints)
	}
	part := m.drawPartition(t, isSuspended)
	limit := rapid.IntRange(1, 3).Draw(t, "susp_list_limit")
	p := &model.SuspendedListParams{Partition: part, Limit: limit}
	if invalid(t, 1) == 0 {
		p.Limit = 0
		_, err := call(m, t, "SuspendedList", p, suspOp(model.SuspendStore.SuspendedList))
		m.expectValidation(t, "SuspendedList", err)
		return
	}
	var got []model.SuspendedEntry
	for page := 0; page < 100; page++ {
		r, err := call(m, t, "SuspendedList", p, suspOp(model.SuspendStore.SuspendedList))
		m.expect(t, err == nil && len(r.Entries) <= limit, "SuspendedList: %+v %v (limit %d)", r, err, limit)
		got = append(got, r.Entries...)
		if r.Next.IsZero() {
			break
		}
		p.After = r.Next
	}
	if want := m.obs[0].Suspended[part]; want != nil {
		m.expect(t, cmpEqual(got, want.Entries), "SuspendedList pages of %d: %+v, observed %+v", limit, got, want.Entries)
	}
}

// actSuspendScenario plays one of the paths single draws rarely line up,
// on a running execution built for it: signals buffered on pending
// waitpoints that satisfy the suspend at once (scenario 15) and its
// replay; a suspend, a resume and a claim, then a suspend on the closed
// waitpoint (not pending) and on the kept ones; waitpoints up to the
// limit.
func (m *machine) actSuspendScenario(t *rapid.T) {
	if !m.awaitRoom() {
		m.suspendRunning(t)
		return
	}
	id := m.buildRunning(t)
	f := currentFence(m.snap(id))
	switch rapid.IntRange(0, 2).Draw(t, "scenario") {
	case 0:
		for range rapid.IntRange(1, 2).Draw(t, "scenario_wps") {
			m.waitpointCreate(t, id, f)
		}
		for range rapid.IntRange(1, 3).Draw(t, "scenario_signals") {
			p := m.signalTo(t, id, true)
			p.Name = "approve"
			m.signal(t, p)
		}
		p := m.suspendParams(t, id, f)
		if so := m.suspObs(id); so != nil && len(so.Waitpoints) > 0 && chance(t, 70, "scenario_on_pending") {
			w := drawFrom(t, so.Waitpoints, "scenario_own")
			p.UsePending, p.Waitpoint, p.SignalLimit = true, w.ID, 0
			p.Condition = model.ResumeCondition{Kind: model.CondSignal, Name: drawFrom(t, condNames[:2], "scenario_name")}
		}
		res, err := m.suspend(t, p, -1)
		if err == nil && !res.Replayed {
			q := *p
			_, _ = m.suspend(t, &q, -1) // checked inside
		}
	case 1:
		p := m.suspendParams(t, id, f)
		p.Condition, p.UsePending, p.TimeoutAt = model.ResumeCondition{Kind: model.CondOperator}, false, time.Time{}
		p.Waitpoint = m.newWaitpointID(t)
		if res, err := m.suspend(t, p, -1); err != nil || res.Outcome != model.Suspended {
			return
		}
		m.resume(t, id)
		s := m.snap(id)
		if s == nil || !isEligible(s) {
			return
		}
		m.openLane(t, s.Lane)
		w := drawFrom(t, workerPool, "scenario_worker")
		cp := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: capUniverse, AdmissionToken: m.freshToken(), LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
		cr := mustCall(m, t, "ExecutionGrantAndClaim", cp, model.Store.ExecutionGrantAndClaim)
		m.acquire(t, "ExecutionGrantAndClaim", s, w, cp.LeaseRequest, cr)
		m.observeQuiet(t)
		q := m.suspendParams(t, id, cr.Fence())
		q.UsePending, q.Waitpoint, q.SignalLimit = true, p.Waitpoint, 0
		q.Condition = model.SignalFor("")
		_, _ = m.suspend(t, q, -1) // checked inside
	default:
		for range model.MaxOpenWaitpoints + 1 {
			m.waitpointCreate(t, id, f)
		}
	}
}

package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

// Suspension, waitpoints and signals (model.SuspendStore, issue 11,
// model/suspend_ops.go): a running attempt creates pending waitpoints,
// suspends until signals satisfy its resume condition, an operator
// resumes it or its timeout fires, and the next claim resumes the same
// attempt. Every refusal writes nothing. A store without the optional
// interface skips these tests.
func testSuspend(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*suspendHarness)
	}{
		{"WaitpointCreate", suspendWaitpointCreate},
		{"WaitpointLimit", suspendWaitpointLimit},
		{"Fresh", suspendFresh},
		{"NoTimeout", suspendNoTimeout},
		{"Refused", suspendRefused},
		{"SignalEffects", suspendSignalEffects},
		{"SignalIgnoredOperatorOnly", suspendSignalOperatorOnly},
		{"SignalIgnoredTimeoutOnly", suspendSignalTimeoutOnly},
		{"SignalDuplicate", suspendSignalDuplicate},
		{"SignalDedupTTL", suspendSignalDedupTTL},
		{"SignalReplayByID", suspendSignalReplayByID},
		{"SignalFeed", suspendSignalFeed},
		{"SignalLimit", suspendSignalLimit},
		{"SignalErrors", suspendSignalErrors},
		{"AllOf", suspendAllOf},
		{"CountSources", suspendCountSources},
		{"CountWaitpoints", suspendCountWaitpoints},
		{"CountSignals", suspendCountSignals},
		{"AlreadySatisfied", suspendAlreadySatisfied},
		{"AlreadySatisfiedTwoWaitpoints", suspendAlreadySatisfiedTwo},
		{"ResumeClaim", suspendResumeClaim},
		{"ResumeDelay", suspendResumeDelay},
		{"KeepWaitpoints", suspendKeepWaitpoints},
		{"KeepSignals", suspendKeepSignals},
		{"OperatorResume", suspendOperatorResume},
		{"TimeoutFail", suspendTimeoutFail},
		{"TimeoutCancel", suspendTimeoutCancel},
		{"TimeoutExpire", suspendTimeoutExpire},
		{"TimeoutAutoResume", suspendTimeoutAutoResume},
		{"TimeoutAutoResumeDelay", suspendTimeoutAutoResumeDelay},
		{"TimeoutEscalate", suspendTimeoutEscalate},
		{"TimeoutCleaned", suspendTimeoutCleaned},
		{"WaitpointExpire", suspendWaitpointExpire},
		{"CompleteClosesWaitpoints", suspendCompleteCloses},
		{"CancelSuspended", suspendCancelSuspended},
		{"DeadlineSuspended", suspendDeadlineSuspended},
		{"FlowCancelSuspended", suspendFlowCancelSuspended},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			ss, ok := suspendStoreOf(h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
			}
			c.run(&suspendHarness{harness: h, ss: ss})
		})
	}
}

// suspendStoreOf returns the store's model.SuspendStore, if it has one.
func suspendStoreOf(h *harness) (model.SuspendStore, bool) {
	var s model.Store = h.s
	if p, ok := h.s.(*partialStore); ok {
		s = p.Store
	}
	ss, ok := s.(model.SuspendStore)
	return ss, ok
}

// suspendView reads what the SuspendStore shows of id for the invariants;
// nil without the interface.
func (h *harness) suspendView(id model.ExecutionID) *invariant.SuspendView {
	h.t.Helper()
	ss, ok := suspendStoreOf(h)
	if !ok {
		return nil
	}
	v := &invariant.SuspendView{}
	sp, err := ss.SuspensionDescribe(h.ctx, &model.SuspensionDescribeParams{ID: id})
	switch {
	case err == nil:
		v.Suspension = sp
	case !errors.Is(err, model.ErrSuspensionNotFound):
		h.t.Errorf("SuspensionDescribe %v: %v", id, err)
		return nil
	}
	wl, err := ss.WaitpointList(h.ctx, &model.WaitpointListParams{ID: id})
	if err != nil {
		h.t.Errorf("WaitpointList %v: %v", id, err)
		return nil
	}
	v.Waitpoints = wl.Waitpoints
	return v
}

// suspendHarness is a harness with the store's suspend operations.
type suspendHarness struct {
	*harness
	ss model.SuspendStore
}

// Index names of suspension as ExecutionIndexes reports them.
const (
	ixSuspended   = "suspended"                // the partition's suspended list
	ixSuspTimeout = "suspension_timeout"       // model.IndexSuspensionTimeout
	ixWpExpiry    = "pending_waitpoint_expiry" // model.IndexWaitpointExpiry
)

// suspendedIndexes are the indexes of a suspended execution of lane l.
func suspendedIndexes(l model.LaneID, extra ...string) []string {
	return append([]string{ixAll, ixLane(l, "suspended"), ixSuspended}, extra...)
}

func stSuspended(br model.BlockingReason) model.StateVector {
	return model.StateVector{
		LifecyclePhase: model.PhaseSuspended, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.NotApplicable, BlockingReason: br,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptInterrupted,
	}
}

func (h *suspendHarness) wpID() model.WaitpointID  { return model.WaitpointID(h.uuid()) }
func (h *suspendHarness) spID() model.SuspensionID { return model.SuspensionID(h.uuid()) }
func (h *suspendHarness) sigID() model.SignalID    { return model.SignalID(h.uuid()) }
func msOf(t time.Time) time.Time                   { return time.UnixMilli(t.UnixMilli()).UTC() }
func signalOn(w model.WaitpointID, name string) model.ResumeCondition {
	return model.ResumeCondition{Kind: model.CondSignal, Name: name, Waitpoint: w}
}
func allOf(cs ...model.ResumeCondition) model.ResumeCondition {
	return model.ResumeCondition{Kind: model.CondAllOf, Of: cs}
}

// waitpoint creates a pending waitpoint of id's running attempt expiring
// at expires, and returns it with its creation time.
func (h *suspendHarness) waitpoint(id model.ExecutionID, f model.Fence, expires, now time.Time) (model.WaitpointID, time.Time) {
	h.t.Helper()
	w := h.wpID()
	res := call(h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{ID: id, Fence: f, Waitpoint: w, ExpiresAt: expires, Now: now})).must(h.t)
	if res.Replayed || !res.CreatedAt.Equal(msOf(now)) {
		h.t.Fatalf("WaitpointCreate at %v: %+v", now, res)
	}
	return w, res.CreatedAt
}

// suspendParams are the params of a suspend of id's running attempt on a
// fresh waitpoint, for a signal, without a timeout.
func (h *suspendHarness) suspendParams(id model.ExecutionID, f model.Fence, cond model.ResumeCondition, now time.Time) *model.ExecutionSuspendParams {
	return &model.ExecutionSuspendParams{
		ID: id, Fence: f, Suspension: h.spID(), Waitpoint: h.wpID(),
		Reason: model.SuspendForSignal, Condition: cond, Now: now,
	}
}

// suspend runs p and checks it suspended (not replayed).
func (h *suspendHarness) suspend(p *model.ExecutionSuspendParams) *model.ExecutionSuspendResult {
	h.t.Helper()
	res := call(h.ss.ExecutionSuspend(h.ctx, p)).must(h.t)
	if res.Outcome != model.Suspended || res.Replayed || res.Suspension != p.Suspension || res.Waitpoint != p.Waitpoint || len(res.Signals) != 0 {
		h.t.Fatalf("ExecutionSuspend: %+v, want suspended on %v/%v", res, p.Suspension, p.Waitpoint)
	}
	if !p.UsePending && !res.CreatedAt.Equal(msOf(p.Now)) {
		h.t.Fatalf("ExecutionSuspend: a fresh waitpoint created at %v, want %v", res.CreatedAt, msOf(p.Now))
	}
	return res
}

// signalParams are the params of a signal named name to waitpoint w of x
// (created at created), from source "test:<name>".
func (h *suspendHarness) signalParams(x model.ExecutionID, w model.WaitpointID, created time.Time, name string, now time.Time) *model.SignalDeliverParams {
	return &model.SignalDeliverParams{
		Execution: x, Waitpoint: w, WaitpointCreatedAt: created, Signal: h.sigID(),
		Name: name, Source: "test:" + name, Now: now,
	}
}

// signal delivers p and checks the whole result.
func (h *suspendHarness) signal(p *model.SignalDeliverParams, want model.SignalDeliverResult) {
	h.t.Helper()
	res := call(h.ss.SignalDeliver(h.ctx, p)).must(h.t)
	wantEqual(h.t, "SignalDeliver "+p.Name, want, *res)
}

// sent signals p and expects effect (ignored: with reason) and the
// execution's public state after it.
func (h *suspendHarness) sent(p *model.SignalDeliverParams, effect model.SignalEffect, ignored string, state model.PublicState) {
	h.t.Helper()
	h.signal(p, model.SignalDeliverResult{Signal: p.Signal, Effect: effect, IgnoredReason: ignored, State: state})
}

// record is the stored form of signal p with effect.
func record(p *model.SignalDeliverParams, effect model.SignalEffect, ignored string) model.SignalRecord {
	return model.SignalRecord{
		ID: p.Signal, Waitpoint: p.Waitpoint, Name: p.Name, Source: p.Source, Payload: p.Payload,
		IdempotencyKey: p.IdempotencyKey, Effect: effect, IgnoredReason: ignored, DeliveredAt: msOf(p.Now),
	}
}

func signalIDs(rs []model.SignalRecord) []model.SignalID {
	var out []model.SignalID
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func (h *suspendHarness) susp(id model.ExecutionID) *model.SuspensionSnapshot {
	h.t.Helper()
	return call(h.ss.SuspensionDescribe(h.ctx, &model.SuspensionDescribeParams{ID: id})).must(h.t)
}

func (h *suspendHarness) wps(id model.ExecutionID) []model.WaitpointSnapshot {
	h.t.Helper()
	return call(h.ss.WaitpointList(h.ctx, &model.WaitpointListParams{ID: id})).must(h.t).Waitpoints
}

// wp returns waitpoint w of id from WaitpointList.
func (h *suspendHarness) wp(id model.ExecutionID, w model.WaitpointID) model.WaitpointSnapshot {
	h.t.Helper()
	for _, s := range h.wps(id) {
		if s.ID == w {
			return s
		}
	}
	h.t.Fatalf("WaitpointList of %v has no waitpoint %v", id, w)
	return model.WaitpointSnapshot{}
}

// wantWaitpoint checks w's state, and for a closed one when and why.
func (h *suspendHarness) wantWaitpoint(id model.ExecutionID, w model.WaitpointID, st model.WaitpointState, by model.CloseReason, closedAt time.Time) model.WaitpointSnapshot {
	h.t.Helper()
	s := h.wp(id, w)
	if s.State != st || s.ClosedBy != by || !s.ClosedAt.Equal(closedAt) {
		h.t.Fatalf("waitpoint %v: %v closed by %q at %v, want %v closed by %q at %v", w, s.State, s.ClosedBy, s.ClosedAt, st, by, closedAt)
	}
	return s
}

// wantClosed checks that the suspension of id is closed by by at at.
func (h *suspendHarness) wantClosed(id model.ExecutionID, by model.CloseReason, at time.Time) *model.SuspensionSnapshot {
	h.t.Helper()
	s := h.susp(id)
	if s.ClosedBy != by || !s.ClosedAt.Equal(at) {
		h.t.Fatalf("suspension %v of %v: closed by %q at %v, want %q at %v", s.ID, id, s.ClosedBy, s.ClosedAt, by, at)
	}
	return s
}

// wantAllClosed checks that no waitpoint of id is open.
func (h *suspendHarness) wantAllClosed(id model.ExecutionID) {
	h.t.Helper()
	for _, w := range h.wps(id) {
		if w.State != model.WaitpointClosed || w.ClosedAt.IsZero() || w.ClosedBy == 0 {
			h.t.Fatalf("waitpoint %v of %v: %v closed by %q at %v, want closed", w.ID, id, w.State, w.ClosedBy, w.ClosedAt)
		}
	}
}

func (h *suspendHarness) suspendedList(part int) []model.SuspendedEntry {
	h.t.Helper()
	var out []model.SuspendedEntry
	var after model.ExecutionID
	for {
		page := call(h.ss.SuspendedList(h.ctx, &model.SuspendedListParams{Partition: part, After: after, Limit: 2})).must(h.t)
		out = append(out, page.Entries...)
		if page.Next.IsZero() {
			return out
		}
		after = page.Next
	}
}

func (h *suspendHarness) resume(id model.ExecutionID, now time.Time) *model.ExecutionResumeResult {
	h.t.Helper()
	return call(h.ss.ExecutionResume(h.ctx, &model.ExecutionResumeParams{ID: id, Now: now})).must(h.t)
}

func (h *suspendHarness) expireSuspension(id model.ExecutionID, now time.Time) *model.SuspensionExpireResult {
	h.t.Helper()
	return call(h.ss.SuspensionExpire(h.ctx, &model.SuspensionExpireParams{ID: id, Now: now})).must(h.t)
}

func (h *suspendHarness) expireWaitpoints(id model.ExecutionID, now time.Time) *model.WaitpointExpireResult {
	h.t.Helper()
	return call(h.ss.WaitpointExpire(h.ctx, &model.WaitpointExpireParams{ID: id, Now: now})).must(h.t)
}

// due scans index k of partition part at now and returns the due ids
// with their due times.
func (h *suspendHarness) due(part int, k model.IndexKind, now time.Time) (map[model.ExecutionID]time.Time, time.Time) {
	h.t.Helper()
	res := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{Partition: part, Index: k, Now: now, Limit: 100})).must(h.t)
	out := map[model.ExecutionID]time.Time{}
	for _, it := range res.Items {
		out[it.ID] = it.DueAt
	}
	return out, res.NextDueAt
}

// wantDue checks that id is due in index k at exactly at: not a
// millisecond before, listed with that due time at it.
func (h *suspendHarness) wantDue(id model.ExecutionID, k model.IndexKind, at time.Time) {
	h.t.Helper()
	got, next := h.due(id.Partition(), k, at.Add(-time.Millisecond))
	if _, ok := got[id]; ok || next.After(at) || next.IsZero() {
		h.t.Fatalf("%v scan a millisecond before %v: %v due, next %v", k, at, got, next)
	}
	got, _ = h.due(id.Partition(), k, at)
	if d, ok := got[id]; !ok || !d.Equal(at) {
		h.t.Fatalf("%v scan at %v: %v not due at it (%v)", k, at, id, got)
	}
}

// wantNotDue checks that id is in no entry of index k (scanning far
// ahead).
func (h *suspendHarness) wantNotDue(id model.ExecutionID, k model.IndexKind) {
	h.t.Helper()
	got, _ := h.due(id.Partition(), k, at(2*model.MaxSuspendTimeout))
	if _, ok := got[id]; ok {
		h.t.Fatalf("%v still in %v", id, k)
	}
}

// suspView is everything the reads show of one execution, suspension
// included.
type suspView struct {
	Exec       execView
	Suspension *model.SuspensionSnapshot
	SuspErr    string
	Waitpoints []model.WaitpointSnapshot
	Suspended  []model.SuspendedEntry
}

func (h *suspendHarness) sview(id model.ExecutionID) suspView {
	h.t.Helper()
	v := suspView{Exec: h.view(id), Waitpoints: h.wps(id), Suspended: h.suspendedList(id.Partition())}
	sp, err := h.ss.SuspensionDescribe(h.ctx, &model.SuspensionDescribeParams{ID: id})
	if err != nil {
		v.SuspErr = err.Error()
	}
	v.Suspension = sp
	return v
}

// refused runs op and checks that it left every execution of ids, their
// suspensions and waitpoints exactly as they were.
func (h *suspendHarness) refused(op func(), ids ...model.ExecutionID) {
	h.t.Helper()
	before := make([]suspView, len(ids))
	for i, id := range ids {
		before[i] = h.sview(id)
	}
	op()
	for i, id := range ids {
		if d := cmp.Diff(before[i], h.sview(id), cmpOpts...); d != "" {
			h.t.Fatalf("%v changed (-before +after):\n%s", id, d)
		}
	}
}

// suspendErr runs p, expects want (with field and detail unless "") and
// checks that nothing changed.
func (h *suspendHarness) suspendErr(p *model.ExecutionSuspendParams, want *model.Error, field, detail string, ids ...model.ExecutionID) {
	h.t.Helper()
	h.refused(func() {
		_, err := h.ss.ExecutionSuspend(h.ctx, p)
		e := modelErr(h.t, err, want)
		if (field != "" && e.Field != field) || (detail != "" && e.Detail != detail) {
			h.t.Fatalf("%s: field %q detail %q, want %q %q", want.Code, e.Field, e.Detail, field, detail)
		}
	}, append([]model.ExecutionID{p.ID}, ids...)...)
}

// signalErr delivers p, expects want and checks that nothing changed.
func (h *suspendHarness) signalErr(p *model.SignalDeliverParams, want *model.Error) {
	h.t.Helper()
	h.refused(func() {
		_, err := h.ss.SignalDeliver(h.ctx, p)
		wantErr(h.t, err, want)
	}, p.Execution)
}

// suspendWaitpointCreate: a running attempt creates a pending waitpoint
// (fenced), created at Now's millisecond, listed with its expiry and the
// default signal limit, in pending_waitpoint_expiry; a retry replays; an
// id that exists in the partition is refused.
func suspendWaitpointCreate(h *suspendHarness) {
	id, c := h.active(at(0))
	now := at(time.Second).Add(123456 * time.Nanosecond)
	p := &model.WaitpointCreateParams{ID: id, Fence: c.Fence(), Waitpoint: h.wpID(), ExpiresAt: at(time.Hour), Now: now}

	// fenced: a stale lease, an execution that is not active, none
	h.refused(func() {
		q := *p
		q.Fence.LeaseEpoch++
		_, err := h.ss.WaitpointCreate(h.ctx, &q)
		wantErr(h.t, err, model.ErrStaleLease)
		q = *p
		q.Fence.AttemptID = h.attemptID()
		_, err = h.ss.WaitpointCreate(h.ctx, &q)
		wantErr(h.t, err, model.ErrStaleLease)
	}, id)
	idle := h.create(at(0))
	h.refused(func() {
		q := *p
		q.ID = idle
		_, err := h.ss.WaitpointCreate(h.ctx, &q)
		wantErr(h.t, err, model.ErrNotActive)
		q.ID = h.newID(h.p0)
		_, err = h.ss.WaitpointCreate(h.ctx, &q)
		wantErr(h.t, err, model.ErrNotFound)
	}, id, idle)

	res := call(h.ss.WaitpointCreate(h.ctx, p)).must(h.t)
	wantEqual(h.t, "WaitpointCreate", model.WaitpointCreateResult{CreatedAt: at(time.Second)}, *res)
	want := model.WaitpointSnapshot{
		ID: p.Waitpoint, Execution: id, State: model.WaitpointPending, CreatedAt: at(time.Second),
		ExpiresAt: at(time.Hour), SignalLimit: model.DefaultSignalLimit,
	}
	wantEqual(h.t, "WaitpointList", []model.WaitpointSnapshot{want}, h.wps(id))
	h.wantState(id, stActive)
	h.wantIndexes(id, activeIndexes(laneA, wA.Instance, ixWpExpiry)...)
	_, err := h.ss.SuspensionDescribe(h.ctx, &model.SuspensionDescribeParams{ID: id})
	wantErr(h.t, err, model.ErrSuspensionNotFound)

	// a retry replays with the first creation time
	h.refused(func() {
		q := *p
		q.Now = at(2 * time.Second)
		res := call(h.ss.WaitpointCreate(h.ctx, &q)).must(h.t)
		wantEqual(h.t, "replayed WaitpointCreate", model.WaitpointCreateResult{CreatedAt: at(time.Second), Replayed: true}, *res)
	}, id)

	// the id exists in the partition: another execution cannot take it
	other, oc := h.active(at(0), inPartition(h.harness, id.Partition()))
	h.refused(func() {
		_, err := h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{
			ID: other, Fence: oc.Fence(), Waitpoint: p.Waitpoint, ExpiresAt: at(time.Hour), Now: at(2 * time.Second),
		})
		if e := modelErr(h.t, err, model.ErrInvalidInput); e.Field != "Waitpoint" || e.Detail != "exists" {
			h.t.Fatalf("an existing waitpoint id: %+v", e)
		}
	}, id, other)

	// a signal limit is kept; waitpoints list by creation time
	w2 := h.wpID()
	call(h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{
		ID: id, Fence: c.Fence(), Waitpoint: w2, ExpiresAt: at(30 * time.Minute), SignalLimit: 7, Now: at(3 * time.Second),
	})).must(h.t)
	wantEqual(h.t, "WaitpointList", []model.WaitpointSnapshot{want, {
		ID: w2, Execution: id, State: model.WaitpointPending, CreatedAt: at(3 * time.Second),
		ExpiresAt: at(30 * time.Minute), SignalLimit: 7,
	}}, h.wps(id))
	h.wantDue(id, model.IndexWaitpointExpiry, at(30*time.Minute))
}

// suspendWaitpointLimit: an execution holds at most MaxOpenWaitpoints
// open waitpoints; WaitpointCreate and a suspend on a fresh waitpoint are
// refused beyond, a suspend on a pending one is not.
func suspendWaitpointLimit(h *suspendHarness) {
	id, c := h.active(at(0))
	var first model.WaitpointID
	for i := range model.MaxOpenWaitpoints {
		w, _ := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
		if i == 0 {
			first = w
		}
	}
	h.refused(func() {
		_, err := h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{
			ID: id, Fence: c.Fence(), Waitpoint: h.wpID(), ExpiresAt: at(time.Hour), Now: at(2 * time.Second),
		})
		wantErr(h.t, err, model.ErrWaitpointLimit)
	}, id)
	h.suspendErr(h.suspendParams(id, c.Fence(), model.SignalFor(""), at(2*time.Second)), model.ErrWaitpointLimit, "", "")
	p := h.suspendParams(id, c.Fence(), model.SignalFor(""), at(2*time.Second))
	p.Waitpoint, p.UsePending = first, true
	h.suspend(p)
	h.wantState(id, stSuspended(model.WaitingForSignal))
	h.wantIndexes(id, suspendedIndexes(laneA, ixWpExpiry)...)
}

// suspendFresh: a suspend on a fresh waitpoint writes the suspended
// state vector, pauses the attempt, releases the lease, moves the
// execution to the suspended indexes (with its timeout), lists it, and
// describes the suspension and its active waitpoint; a retry replays,
// even after the execution moved on.
func suspendFresh(h *suspendHarness) {
	id, c := h.active(at(0), withTimeout(time.Minute))
	p := h.suspendParams(id, c.Fence(), model.SignalFor("approve"), at(2*time.Second))
	p.Reason, p.TimeoutAt = model.SuspendForApproval, at(time.Hour)
	res := h.suspend(p)
	wantEqual(h.t, "ExecutionSuspend", model.ExecutionSuspendResult{
		Outcome: model.Suspended, Suspension: p.Suspension, Waitpoint: p.Waitpoint, CreatedAt: at(2 * time.Second),
	}, *res)

	snap := h.wantState(id, stSuspended(model.WaitingForApproval))
	if snap.CurrentLease != nil || snap.LeaseEpoch != 1 || snap.CurrentAttempt == nil || snap.CurrentAttempt.Index != 0 ||
		!snap.LastTransitionAt.Equal(at(2*time.Second)) {
		h.t.Fatalf("suspended: lease %+v epoch %d attempt %+v transition %v", snap.CurrentLease, snap.LeaseEpoch, snap.CurrentAttempt, snap.LastTransitionAt)
	}
	atts := h.attempts(id)
	if len(atts) != 1 || atts[0].Status != model.AttemptSuspended || !atts[0].EndedAt.IsZero() || atts[0].ID != c.AttemptID {
		h.t.Fatalf("attempts of a suspended execution: %+v", atts)
	}
	hist := h.history(id)
	if ev := hist[len(hist)-1]; ev.Kind != model.LeaseReleased || ev.LeaseID != c.Lease.ID || ev.LeaseEpoch != 1 ||
		!ev.At.Equal(at(2*time.Second)) || ev.WorkerInstanceID != wA.Instance {
		h.t.Fatalf("lease history after the suspend ends with %+v, want the lease released", ev)
	}
	h.wantIndexes(id, suspendedIndexes(laneA, ixSuspTimeout)...)
	wantSusp := &model.SuspensionSnapshot{
		ID: p.Suspension, Execution: id, Reason: model.SuspendForApproval, Condition: p.Condition,
		Waitpoint: p.Waitpoint, Waitpoints: []model.WaitpointID{p.Waitpoint}, SuspendedAt: at(2 * time.Second),
		TimeoutAt: at(time.Hour), TimeoutBehavior: model.TimeoutFail,
	}
	wantEqual(h.t, "SuspensionDescribe", wantSusp, h.susp(id))
	wantEqual(h.t, "WaitpointList", []model.WaitpointSnapshot{{
		ID: p.Waitpoint, Execution: id, State: model.WaitpointActive, CreatedAt: at(2 * time.Second),
		SignalLimit: model.DefaultSignalLimit, Suspension: p.Suspension,
	}}, h.wps(id))
	wantEqual(h.t, "SuspendedList", []model.SuspendedEntry{{
		ID: id, Lane: laneA, Suspension: p.Suspension, Reason: model.SuspendForApproval,
		SuspendedAt: at(2 * time.Second), TimeoutAt: at(time.Hour),
	}}, h.suspendedList(id.Partition()))
	h.wantDue(id, model.IndexSuspensionTimeout, at(time.Hour))
	if due := call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: id.Partition()})).must(h.t); !due.SuspensionTimeout.Equal(at(time.Hour)) {
		h.t.Fatalf("PartitionDue.SuspensionTimeout = %v, want %v", due.SuspensionTimeout, at(time.Hour))
	}

	// the old fence is refused now: the execution is not active
	h.refused(func() {
		_, err := h.ss.WaitpointCreate(h.ctx, &model.WaitpointCreateParams{
			ID: id, Fence: c.Fence(), Waitpoint: h.wpID(), ExpiresAt: at(time.Hour), Now: at(3 * time.Second),
		})
		wantErr(h.t, err, model.ErrNotActive)
		_, err = h.ss.ExecutionSuspend(h.ctx, h.suspendParams(id, c.Fence(), model.SignalFor(""), at(3*time.Second)))
		wantErr(h.t, err, model.ErrNotActive)
	}, id)

	// a retry replays the stored outcome and writes nothing
	replay := func(now time.Time) {
		h.t.Helper()
		h.refused(func() {
			q := *p
			q.Now = now
			res := call(h.ss.ExecutionSuspend(h.ctx, &q)).must(h.t)
			wantEqual(h.t, "replayed ExecutionSuspend", model.ExecutionSuspendResult{
				Outcome: model.Suspended, Suspension: p.Suspension, Waitpoint: p.Waitpoint,
				CreatedAt: at(2 * time.Second), Replayed: true,
			}, *res)
		}, id)
	}
	replay(at(3 * time.Second))
	// ... whatever the state now
	h.resume(id, at(4*time.Second))
	h.wantState(id, stEligible(model.AttemptInterrupted))
	replay(at(5 * time.Second))
	if got := h.suspendedList(id.Partition()); len(got) != 0 {
		h.t.Fatalf("SuspendedList after the resume: %+v", got)
	}
	h.wantNotDue(id, model.IndexSuspensionTimeout)
}

// suspendNoTimeout: a suspend without a timeout is in no timeout index;
// each reason sets its blocking reason.
func suspendNoTimeout(h *suspendHarness) {
	for i, r := range []model.SuspendReason{
		model.SuspendForSignal, model.SuspendForApproval, model.SuspendForCallback,
		model.SuspendForToolResult, model.SuspendForOperatorReview,
	} {
		id, c := h.active(at(0))
		p := h.suspendParams(id, c.Fence(), model.SignalFor(""), at(time.Duration(i+1)*time.Second))
		p.Reason = r
		h.suspend(p)
		h.wantState(id, stSuspended(r.BlockingReason()))
		h.wantIndexes(id, suspendedIndexes(laneA)...)
		if s := h.susp(id); s.Reason != r || !s.TimeoutAt.IsZero() {
			h.t.Fatalf("suspension for %v: reason %v timeout %v", r, s.Reason, s.TimeoutAt)
		}
	}
	got := h.suspendedList(h.p0)
	var ids []model.ExecutionID
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if len(got) != 5 || !slices.Equal(ids, sortedIDs(ids...)) {
		h.t.Fatalf("SuspendedList (pages of 2): %v, want 5 entries by id", ids)
	}
}

// suspendRefused: each refusal of ExecutionSuspend, in the contract's
// order, writes nothing; then a suspend on the pending waitpoint drops
// the closed one.
func suspendRefused(h *suspendHarness) {
	id, c := h.active(at(0))
	o, oc := h.active(at(0), inPartition(h.harness, id.Partition()))
	ow, _ := h.waitpoint(o, oc.Fence(), at(time.Hour), at(time.Second))
	pw, _ := h.waitpoint(id, c.Fence(), at(time.Hour), at(time.Second))
	cw, _ := h.waitpoint(id, c.Fence(), at(10*time.Second), at(time.Second))
	wantEqual(h.t, "WaitpointExpire", model.WaitpointExpireResult{Closed: 1, NextDueAt: at(time.Hour)}, *h.expireWaitpoints(id, at(10*time.Second)))
	now := at(11 * time.Second)
	missing := h.wpID()
	try := func(want *model.Error, field, detail string, edit func(p *model.ExecutionSuspendParams)) {
		h.t.Helper()
		p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), now)
		edit(p)
		h.suspendErr(p, want, field, detail, o)
	}
	// the fence first
	try(model.ErrStaleLease, "", "", func(p *model.ExecutionSuspendParams) { p.Fence.LeaseEpoch++ })
	try(model.ErrStaleLease, "", "", func(p *model.ExecutionSuspendParams) {
		p.Fence.AttemptID = h.attemptID()
		p.UsePending, p.Waitpoint = true, missing
	})
	// with UsePending: a pending waitpoint of this execution
	try(model.ErrWaitpointNotFound, "Waitpoint", "", func(p *model.ExecutionSuspendParams) { p.UsePending, p.Waitpoint = true, missing })
	try(model.ErrWaitpointNotFound, "Waitpoint", "", func(p *model.ExecutionSuspendParams) { p.UsePending, p.Waitpoint = true, ow })
	try(model.ErrWaitpointNotPending, "", "", func(p *model.ExecutionSuspendParams) { p.UsePending, p.Waitpoint = true, cw })
	// without: a new id
	for _, w := range []model.WaitpointID{pw, cw, ow} {
		try(model.ErrInvalidInput, "Waitpoint", "exists", func(p *model.ExecutionSuspendParams) { p.Waitpoint = w })
	}
	// the other waitpoints the condition names
	try(model.ErrWaitpointNotFound, "Condition", missing.String(), func(p *model.ExecutionSuspendParams) {
		p.Condition = allOf(model.SignalFor("go"), signalOn(missing, ""))
	})
	try(model.ErrWaitpointNotFound, "Condition", ow.String(), func(p *model.ExecutionSuspendParams) { p.Condition = signalOn(ow, "") })
	try(model.ErrWaitpointNotPending, "Condition", cw.String(), func(p *model.ExecutionSuspendParams) { p.Condition = signalOn(cw, "") })
	try(model.ErrWaitpointNotPending, "Condition", cw.String(), func(p *model.ExecutionSuspendParams) {
		p.Condition = model.ResumeCondition{Kind: model.CondCount, N: 1, Distinct: model.DistinctWaitpoints, Waitpoints: []model.WaitpointID{pw, cw}}
	})

	// a suspend on the pending waitpoint drops the closed one
	p := h.suspendParams(id, c.Fence(), model.SignalFor("go"), now)
	p.Waitpoint, p.UsePending = pw, true
	res := h.suspend(p)
	if !res.CreatedAt.Equal(at(time.Second)) {
		h.t.Fatalf("suspend on a pending waitpoint: CreatedAt %v, want its creation %v", res.CreatedAt, at(time.Second))
	}
	got := h.wps(id)
	if len(got) != 1 || got[0].ID != pw || got[0].State != model.WaitpointActive || got[0].Suspension != p.Suspension || !got[0].ExpiresAt.IsZero() {
		h.t.Fatalf("waitpoints after a suspend on %v: %+v, want it alone and active", pw, got)
	}
	h.wantIndexes(id, suspendedIndexes(laneA)...)
	h.wantIndexes(o, activeIndexes(laneA, wA.Instance, ixWpExpiry)...)
}

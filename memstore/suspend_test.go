package memstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// Focused tests of memstore's SuspendStore; the conformance suite
// (storetest) covers the contract on every store.

var t0 = time.UnixMilli(1_700_000_000_000).UTC()

// sfix is one store, one running execution and the ids a test draws.
type sfix struct {
	t     *testing.T
	s     *memstore.Store
	ctx   context.Context
	seq   uint64
	id    model.ExecutionID
	fence model.Fence
}

func newSfix(t *testing.T, opts ...func(*model.ExecutionCreateParams)) *sfix {
	f := &sfix{t: t, s: memstore.New(nil), ctx: context.Background()}
	cp := &model.ExecutionCreateParams{
		ID: model.NewExecutionID(3, f.uuid()), Namespace: "ns", Lane: "lane", Kind: "kind", Now: t0,
	}
	for _, o := range opts {
		o(cp)
	}
	if _, err := f.s.ExecutionCreate(f.ctx, cp); err != nil {
		t.Fatal(err)
	}
	f.id = cp.ID
	f.claim(t0)
	return f
}

func (f *sfix) uuid() model.UUID {
	f.seq++
	var b [16]byte
	binary.BigEndian.PutUint64(b[8:], f.seq)
	return model.NewUUIDv4(b)
}

func (f *sfix) wp() model.WaitpointID   { return model.WaitpointID(f.uuid()) }
func (f *sfix) sus() model.SuspensionID { return model.SuspensionID(f.uuid()) }

// claim claims the execution and keeps its fence.
func (f *sfix) claim(now time.Time) *model.ClaimResult {
	f.t.Helper()
	r, err := f.s.ExecutionGrantAndClaim(f.ctx, &model.ExecutionGrantAndClaimParams{ID: f.id, Now: now,
		LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(f.uuid()),
			AttemptID: model.AttemptID(f.uuid()), LeaseTTL: 10 * time.Minute}})
	if err != nil {
		f.t.Fatalf("claim: %v", err)
	}
	f.fence = model.Fence{LeaseID: r.Lease.ID, LeaseEpoch: r.Lease.Epoch, AttemptID: r.AttemptID}
	return r
}

// pending creates a pending waitpoint expiring at exp.
func (f *sfix) pending(exp time.Time) (model.WaitpointID, time.Time) {
	f.t.Helper()
	w := f.wp()
	r, err := f.s.WaitpointCreate(f.ctx, &model.WaitpointCreateParams{ID: f.id, Fence: f.fence, Waitpoint: w, ExpiresAt: exp, Now: t0})
	if err != nil {
		f.t.Fatalf("waitpoint create: %v", err)
	}
	return w, r.CreatedAt
}

// suspend suspends on a fresh waitpoint (adjusted by opts).
func (f *sfix) suspend(now time.Time, cond model.ResumeCondition, opts ...func(*model.ExecutionSuspendParams)) *model.ExecutionSuspendResult {
	f.t.Helper()
	p := &model.ExecutionSuspendParams{ID: f.id, Fence: f.fence, Suspension: f.sus(), Waitpoint: f.wp(),
		Reason: model.SuspendForApproval, Condition: cond, Now: now}
	for _, o := range opts {
		o(p)
	}
	r, err := f.s.ExecutionSuspend(f.ctx, p)
	if err != nil {
		f.t.Fatalf("suspend: %v", err)
	}
	return r
}

func (f *sfix) signal(w model.WaitpointID, created time.Time, name, key string, now time.Time) (*model.SignalDeliverResult, error) {
	return f.s.SignalDeliver(f.ctx, &model.SignalDeliverParams{Execution: f.id, Waitpoint: w, WaitpointCreatedAt: created,
		Signal: model.SignalID(f.uuid()), Name: name, Source: "approver:alice", IdempotencyKey: key, Now: now})
}

func (f *sfix) mustSignal(w model.WaitpointID, created time.Time, name string, now time.Time, want model.SignalEffect) *model.SignalDeliverResult {
	f.t.Helper()
	r, err := f.signal(w, created, name, "", now)
	if err != nil {
		f.t.Fatalf("signal %q: %v", name, err)
	}
	if r.Effect != want {
		f.t.Fatalf("signal %q: effect %v, want %v", name, r.Effect, want)
	}
	return r
}

func (f *sfix) describe() *model.ExecutionSnapshot {
	f.t.Helper()
	s, err := f.s.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *sfix) suspension() *model.SuspensionSnapshot {
	f.t.Helper()
	s, err := f.s.SuspensionDescribe(f.ctx, &model.SuspensionDescribeParams{ID: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *sfix) waitpoints() []model.WaitpointSnapshot {
	f.t.Helper()
	r, err := f.s.WaitpointList(f.ctx, &model.WaitpointListParams{ID: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Waitpoints
}

func (f *sfix) attempts() []model.Attempt {
	f.t.Helper()
	r, err := f.s.AttemptList(f.ctx, &model.AttemptListParams{ID: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Attempts
}

func (f *sfix) indexes() []string {
	f.t.Helper()
	r, err := f.s.ExecutionIndexes(f.ctx, &model.ExecutionIndexesParams{ID: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Indexes
}

// check applies every invariant and compares the index memberships.
func (f *sfix) check(wantIndexes ...string) {
	f.t.Helper()
	h, err := f.s.LeaseHistory(f.ctx, &model.LeaseHistoryParams{ID: f.id, Limit: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	x := &invariant.Exec{ID: f.id, Snapshot: f.describe(), Indexes: f.indexes(), Attempts: f.attempts(), History: h.Events,
		Suspend: &invariant.SuspendView{Waitpoints: f.waitpoints()}}
	if sp, err := f.s.SuspensionDescribe(f.ctx, &model.SuspensionDescribeParams{ID: f.id}); err == nil {
		x.Suspend.Suspension = sp
	} else if !errors.Is(err, model.ErrSuspensionNotFound) {
		f.t.Fatal(err)
	}
	for _, v := range invariant.Violations(x) {
		f.t.Errorf("invariant: %s", v)
	}
	slices.Sort(wantIndexes)
	if got := x.Indexes; !slices.Equal(got, wantIndexes) {
		f.t.Errorf("indexes %q, want %q", got, wantIndexes)
	}
}

func (f *sfix) expire(now time.Time) *model.SuspensionExpireResult {
	f.t.Helper()
	r, err := f.s.SuspensionExpire(f.ctx, &model.SuspensionExpireParams{ID: f.id, Now: now})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func closedBy(ws []model.WaitpointSnapshot) []model.CloseReason {
	var out []model.CloseReason
	for _, w := range ws {
		out = append(out, w.ClosedBy)
	}
	return out
}

func TestSuspendAlreadySatisfiedByBufferedSignal(t *testing.T) {
	f := newSfix(t)
	w, created := f.pending(t0.Add(time.Hour))
	f.check("all_executions", "lane:lane:active", "lease_expiry", "worker:w-1:leases", "pending_waitpoint_expiry")
	f.mustSignal(w, created, "approve", t0.Add(time.Second), model.SignalBuffered)

	p := &model.ExecutionSuspendParams{ID: f.id, Fence: f.fence, Suspension: f.sus(), Waitpoint: w, UsePending: true,
		Reason: model.SuspendForApproval, Condition: model.SignalFor("approve"), Now: t0.Add(2 * time.Second)}
	r, err := f.s.ExecutionSuspend(f.ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != model.SuspendAlreadySatisfied || len(r.Signals) != 1 || r.Signals[0].Name != "approve" || !r.CreatedAt.Equal(created) {
		t.Fatalf("suspend: %+v", r)
	}
	// the attempt goes on under its lease; the waitpoint and suspension closed
	f.check("all_executions", "lane:lane:active", "lease_expiry", "worker:w-1:leases")
	if sp := f.suspension(); sp.ClosedBy != model.ClosedSatisfied || len(sp.Signals) != 1 {
		t.Fatalf("suspension: %+v", sp)
	}
	if got := closedBy(f.waitpoints()); !slices.Equal(got, []model.CloseReason{model.ClosedSatisfied}) {
		t.Fatalf("waitpoints closed by %v", got)
	}
	again, err := f.s.ExecutionSuspend(f.ctx, p)
	if err != nil || !again.Replayed || again.Outcome != model.SuspendAlreadySatisfied || len(again.Signals) != 1 {
		t.Fatalf("replay: %+v, %v", again, err)
	}
	if _, err := f.s.ExecutionComplete(f.ctx, &model.ExecutionCompleteParams{ID: f.id, Source: model.SourceWorker, Fence: f.fence, Now: t0.Add(3 * time.Second)}); err != nil {
		t.Fatalf("complete after an already-satisfied suspend: %v", err)
	}
}

func TestSuspendSignalResumesSameAttempt(t *testing.T) {
	f := newSfix(t)
	first := f.fence
	r := f.suspend(t0.Add(time.Second), model.SignalFor("approve"))
	if r.Outcome != model.Suspended {
		t.Fatalf("outcome %v", r.Outcome)
	}
	f.check("all_executions", "lane:lane:suspended", "suspended")
	if st := f.describe().State; st.BlockingReason != model.WaitingForApproval || st.AttemptState != model.AttemptInterrupted {
		t.Fatalf("state %+v", st)
	}
	if a := f.attempts(); a[0].Status != model.AttemptSuspended {
		t.Fatalf("attempt %+v", a[0])
	}
	list, err := f.s.SuspendedList(f.ctx, &model.SuspendedListParams{Partition: 3, Limit: 10})
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Suspension != r.Suspension {
		t.Fatalf("suspended list %+v, %v", list, err)
	}

	f.mustSignal(r.Waitpoint, r.CreatedAt, "other", t0.Add(2*time.Second), model.SignalIgnored)
	if _, err := f.signal(r.Waitpoint, r.CreatedAt.Add(time.Millisecond), "approve", "", t0.Add(2*time.Second)); !errors.Is(err, model.ErrInvalidToken) {
		t.Fatalf("wrong creation time: %v", err)
	}
	res, err := f.signal(r.Waitpoint, r.CreatedAt, "approve", "k", t0.Add(3*time.Second))
	if err != nil || res.Effect != model.SignalResumed || res.State != model.PublicWaiting {
		t.Fatalf("resume by signal: %+v, %v", res, err)
	}
	f.check("all_executions", "lane:lane:eligible")
	dup, err := f.signal(r.Waitpoint, r.CreatedAt, "approve", "k", t0.Add(4*time.Second))
	if err != nil || dup.Effect != model.SignalDuplicate || dup.Signal != res.Signal {
		t.Fatalf("duplicate after close: %+v, %v", dup, err)
	}
	if _, err := f.signal(r.Waitpoint, r.CreatedAt, "approve", "", t0.Add(4*time.Second)); !errors.Is(err, model.ErrWaitpointClosed) {
		t.Fatalf("signal to a closed waitpoint: %v", err)
	}
	if sp := f.suspension(); sp.ClosedBy != model.ClosedBySignal || len(sp.Signals) != 2 {
		t.Fatalf("suspension %+v", sp)
	}

	c := f.claim(t0.Add(5 * time.Second))
	if !c.Resumed || c.AttemptID != first.AttemptID || c.Lease.Epoch != first.LeaseEpoch+1 || c.AttemptIndex != 0 {
		t.Fatalf("claim after resume: %+v", c)
	}
	f.check("all_executions", "lane:lane:active", "lease_expiry", "worker:w-1:leases")
}

func TestSuspensionTimeouts(t *testing.T) {
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		b       model.TimeoutBehavior
		outcome model.SuspensionExpireOutcome
		state   model.PublicState
		closed  model.CloseReason
		status  model.AttemptStatus
		indexes []string
	}{
		{model.TimeoutFail, model.SuspensionExpireFailed, model.PublicFailed, model.ClosedTimeoutFail, model.AttemptEndedFailure,
			[]string{"all_executions", "lane:lane:terminal"}},
		{model.TimeoutCancel, model.SuspensionExpireCancelled, model.PublicCancelled, model.ClosedTimeoutCancel, model.AttemptEndedCancelled,
			[]string{"all_executions", "lane:lane:terminal"}},
		{model.TimeoutExpire, model.SuspensionExpireExpired, model.PublicExpired, model.ClosedTimeoutExpire, model.AttemptEndedFailure,
			[]string{"all_executions", "lane:lane:terminal"}},
		{model.TimeoutAutoResume, model.SuspensionExpireResumed, model.PublicWaiting, model.ClosedTimeoutResume, model.AttemptSuspended,
			[]string{"all_executions", "lane:lane:eligible"}},
		{model.TimeoutEscalate, model.SuspensionExpireEscalated, model.PublicSuspended, 0, model.AttemptSuspended,
			[]string{"all_executions", "lane:lane:suspended", "suspended"}},
	} {
		t.Run(tc.b.String(), func(t *testing.T) {
			f := newSfix(t)
			f.pending(t0.Add(time.Hour)) // never bound: ends with the execution
			f.suspend(t0, model.SignalFor("approve"), func(p *model.ExecutionSuspendParams) {
				p.TimeoutAt, p.TimeoutBehavior = at, tc.b
			})
			f.check("all_executions", "lane:lane:suspended", "suspended", "suspension_timeout", "pending_waitpoint_expiry")
			due, err := f.s.IndexScanDue(f.ctx, &model.IndexScanDueParams{Partition: 3, Index: model.IndexSuspensionTimeout, Limit: 10, Now: at})
			if err != nil || len(due.Items) != 1 || due.Items[0].ID != f.id || !due.Items[0].DueAt.Equal(at) {
				t.Fatalf("scan due: %+v, %v", due, err)
			}
			if o := f.expire(at.Add(-time.Millisecond)).Outcome; o != model.SuspensionExpireNotYetDue {
				t.Fatalf("early: %v", o)
			}
			if o := f.expire(at).Outcome; o != tc.outcome {
				t.Fatalf("outcome %v, want %v", o, tc.outcome)
			}
			snap := f.describe()
			if snap.PublicState != tc.state {
				t.Fatalf("state %v, want %v", snap.PublicState, tc.state)
			}
			sp := f.suspension()
			if sp.ClosedBy != tc.closed {
				t.Fatalf("suspension closed by %v, want %v", sp.ClosedBy, tc.closed)
			}
			if a := f.attempts()[0]; a.Status != tc.status {
				t.Fatalf("attempt %v, want %v", a.Status, tc.status)
			}
			switch tc.b {
			case model.TimeoutFail, model.TimeoutExpire:
				if snap.FailureReason != "suspension_timeout" || snap.FailureCategory != model.FailureTimeout {
					t.Fatalf("failure %q %q", snap.FailureReason, snap.FailureCategory)
				}
			case model.TimeoutCancel:
				if snap.CancellationReason != "suspension_timeout" {
					t.Fatalf("cancellation %q", snap.CancellationReason)
				}
			case model.TimeoutEscalate:
				if sp.Reason != model.SuspendForOperatorReview || !sp.Escalated || !sp.TimeoutAt.IsZero() ||
					snap.State.BlockingReason != model.PausedByOperator {
					t.Fatalf("escalated: %+v / %+v", sp, snap.State)
				}
			}
			if snap.PublicState.IsTerminal() {
				if got := closedBy(f.waitpoints()); !slices.Equal(got, []model.CloseReason{model.ClosedEnded, tc.closed}) {
					t.Fatalf("waitpoints closed by %v", got)
				}
			} else {
				tc.indexes = append(tc.indexes, "pending_waitpoint_expiry")
			}
			f.check(tc.indexes...)
		})
	}
}

func TestCancelSuspendedClosesEverything(t *testing.T) {
	f := newSfix(t)
	w, _ := f.pending(t0.Add(time.Hour))
	f.pending(t0.Add(2 * time.Hour)) // not bound: ends with the execution
	f.suspend(t0.Add(time.Second), model.ResumeCondition{Kind: model.CondAllOf, Of: []model.ResumeCondition{
		model.SignalFor("a"), {Kind: model.CondSignal, Waitpoint: w},
	}}, func(p *model.ExecutionSuspendParams) { p.TimeoutAt = t0.Add(time.Hour) })
	f.check("all_executions", "lane:lane:suspended", "suspended", "suspension_timeout", "pending_waitpoint_expiry")

	if _, err := f.s.ExecutionCancel(f.ctx, &model.ExecutionCancelParams{ID: f.id, Source: model.SourceOperator, Reason: "stop", Now: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	f.check("all_executions", "lane:lane:terminal")
	if sp := f.suspension(); sp.ClosedBy != model.ClosedCancelled || len(sp.Waitpoints) != 2 {
		t.Fatalf("suspension %+v", sp)
	}
	// by creation time: the two pending ones (bound w, unbound extra), then the fresh one
	want := []model.CloseReason{model.ClosedCancelled, model.ClosedEnded, model.ClosedCancelled}
	if got := closedBy(f.waitpoints()); !slices.Equal(got, want) {
		t.Fatalf("waitpoints closed by %v, want %v", got, want)
	}
	if a := f.attempts()[0]; a.Status != model.AttemptEndedCancelled {
		t.Fatalf("attempt %v", a.Status)
	}
	if _, err := f.s.ExecutionResume(f.ctx, &model.ExecutionResumeParams{ID: f.id, Now: t0.Add(3 * time.Second)}); !errors.Is(err, model.ErrNotSuspended) {
		t.Fatalf("resume after cancel: %v", err)
	}
}

func TestResumeKeepsWaitpointsAndDelays(t *testing.T) {
	f := newSfix(t)
	r := f.suspend(t0, model.ResumeCondition{Kind: model.CondOperator}, func(p *model.ExecutionSuspendParams) {
		p.Policy = model.ResumePolicy{Delay: 10 * time.Second, KeepWaitpoints: true, KeepSignals: true}
	})
	res := f.mustSignal(r.Waitpoint, r.CreatedAt, "x", t0.Add(time.Second), model.SignalIgnored)
	if res.DelayUntil != (time.Time{}) {
		t.Fatalf("delay until %v", res.DelayUntil)
	}
	rr, err := f.s.ExecutionResume(f.ctx, &model.ExecutionResumeParams{ID: f.id, Now: t0.Add(2 * time.Second)})
	if err != nil || rr.State != model.PublicDelayed || !rr.DelayUntil.Equal(t0.Add(12*time.Second)) {
		t.Fatalf("resume: %+v, %v", rr, err)
	}
	f.check("all_executions", "lane:lane:delayed", "pending_waitpoint_expiry")
	ws := f.waitpoints()
	if len(ws) != 1 || ws[0].State != model.WaitpointPending || len(ws[0].Signals) != 1 ||
		!ws[0].ExpiresAt.Equal(r.CreatedAt.Add(model.MaxWaitpointTTL)) {
		t.Fatalf("kept waitpoint %+v", ws)
	}
	if st := f.describe().State.BlockingReason; st != model.WaitingForResumeDelay {
		t.Fatalf("blocking reason %v", st)
	}
}

func TestWaitpointExpire(t *testing.T) {
	f := newSfix(t)
	f.pending(t0.Add(time.Minute))
	f.pending(t0.Add(time.Hour))
	due, err := f.s.PartitionDue(f.ctx, &model.PartitionDueParams{Partition: 3})
	if err != nil || !due.WaitpointExpiry.Equal(t0.Add(time.Minute)) {
		t.Fatalf("partition due %+v, %v", due, err)
	}
	r, err := f.s.WaitpointExpire(f.ctx, &model.WaitpointExpireParams{ID: f.id, Now: t0.Add(time.Minute)})
	if err != nil || r.Closed != 1 || !r.NextDueAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("expire: %+v, %v", r, err)
	}
	if got := closedBy(f.waitpoints()); !slices.Equal(got, []model.CloseReason{model.ClosedWaitpointTTL, 0}) {
		t.Fatalf("closed by %v", got)
	}
	f.check("all_executions", "lane:lane:active", "lease_expiry", "worker:w-1:leases", "pending_waitpoint_expiry")
	// a terminal fail ends the pending waitpoint
	if _, err := f.s.ExecutionFail(f.ctx, &model.ExecutionFailParams{ID: f.id, Source: model.SourceWorker, Fence: f.fence,
		Reason: "boom", Category: model.FailurePermanent, Now: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	f.check("all_executions", "lane:lane:terminal")
	if got := closedBy(f.waitpoints()); !slices.Equal(got, []model.CloseReason{model.ClosedWaitpointTTL, model.ClosedEnded}) {
		t.Fatalf("closed by %v", got)
	}
}

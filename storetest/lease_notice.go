package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testLeaseNotices states model.LeaseNotifier, for stores that implement
// it: every transition that takes a lease from its holder sends the
// holder's instance one notice (kind, execution, epoch), after the
// transition committed; the holder's own operations, transitions of
// executions without a live lease, and other instances' leases send
// nothing.
func testLeaseNotices(t *testing.T, newStore NewStoreFunc) {
	if _, ok := newStore(t).(model.LeaseNotifier); !ok {
		t.Skip("the store does not implement model.LeaseNotifier")
	}

	operator := func(h *harness, id model.ExecutionID, now time.Time) error {
		_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Reason: "stop", Source: model.SourceOperator, Now: now})
		return err
	}
	cases := []struct {
		name string
		opts []createOpt
		do   func(h *harness, id model.ExecutionID, now time.Time) error
		kind model.LeaseNoticeKind
		// want is the state the transition left, which the watcher must
		// see once notified.
		want model.PublicState
		own  model.OwnershipState // when set, the ownership it left
	}{
		{"OperatorCancel", nil, operator, model.LeaseNoticeCancelled, model.PublicCancelled, 0},
		{"Revoke", nil, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, Reason: "operator", Now: now})
			return err
		}, model.LeaseNoticeRevoked, model.PublicActive, model.OwnershipLeaseRevoked},
		{"MarkExpired", nil, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now.Add(leaseTTL)})
			return err
		}, model.LeaseNoticeExpired, model.PublicActive, model.OwnershipLeaseExpiredReclaimable},
		{"AttemptTimeout", []createOpt{withTimeout(time.Second)}, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: now.Add(time.Second)})
			return err
		}, model.LeaseNoticeTimedOut, model.PublicExpired, 0},
		{"Deadline", []createOpt{withDeadline(at(time.Second))}, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireExecutionDeadline, Now: at(time.Second)})
			return err
		}, model.LeaseNoticeTimedOut, model.PublicExpired, 0},
		{"OperatorComplete", nil, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Source: model.SourceOperator, Now: now})
			return err
		}, model.LeaseNoticeOverridden, model.PublicCompleted, 0},
		{"OperatorFail", nil, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Source: model.SourceOperator, Reason: "x", Category: model.FailurePermanent, Now: now})
			return err
		}, model.LeaseNoticeOverridden, model.PublicFailed, 0},
		{"OperatorDelay", nil, func(h *harness, id model.ExecutionID, now time.Time) error {
			_, err := h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Source: model.SourceOperator, DelayUntil: now.Add(time.Hour), Now: now})
			return err
		}, model.LeaseNoticeOverridden, model.PublicDelayed, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			mine := h.watchLeases(wA)
			other := h.watchLeases(wB)
			id, cr := h.active(at(0), c.opts...)
			// a second claim: the epoch in the notice is the lease's
			if _, err := h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, Reason: "again", Now: at(0)}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(0)}); err != nil {
				t.Fatal(err)
			}
			want0 := model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: id, LeaseEpoch: cr.Lease.Epoch}
			if got := mine.next(t); got != want0 {
				t.Fatalf("notice of the first revoke: %+v, want %+v", got, want0)
			}
			cr2 := h.claim(id, wA, at(0))
			if err := c.do(h, id, at(0)); err != nil {
				t.Fatal(err)
			}
			want := model.LeaseNotice{Kind: c.kind, ID: id, LeaseEpoch: cr2.Lease.Epoch}
			if got := mine.next(t); got != want {
				t.Fatalf("notice: %+v, want %+v", got, want)
			}
			if s := h.describe(id); s.PublicState != c.want || (c.own != 0 && s.State.OwnershipState != c.own) {
				t.Fatalf("after the notice the watcher sees %s/%s, want %s", s.PublicState, s.State.OwnershipState, c.want)
			}
			// nothing for another instance: its first notice is its own
			sid, scr := h.activeFor(wB, at(0))
			h.revoke(sid, at(0))
			wantB := model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: sid, LeaseEpoch: scr.Lease.Epoch}
			if got := other.next(t); got != wantB {
				t.Fatalf("other instance's first notice: %+v, want %+v", got, wantB)
			}
			h.wantNoNotice(mine, wA)
		})
	}

	// The holder's own operations, and transitions that find no live
	// lease, send nothing: the next notice the holder gets is a later
	// revoke's.
	t.Run("Silent", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		mine := h.watchLeases(wA)
		now := at(0)
		id, cr := h.active(now)
		call(h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: cr.Fence(), LeaseTTL: leaseTTL, Now: now})).must(t)
		call(h.s.ExecutionUpdateProgress(h.ctx, &model.ExecutionUpdateProgressParams{ID: id, Fence: cr.Fence(), Percent: 1, Now: now})).must(t)
		h.complete(id, cr.Fence(), now)
		id, cr = h.active(now)
		h.fail(id, cr.Fence(), model.FailurePermanent, now)
		id, cr = h.active(now)
		h.delay(id, cr.Fence(), at(time.Hour), now)
		id, cr = h.active(now)
		call(h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: cr.Fence(), Reason: "mine", Now: now})).must(t)
		// a holder's completion that claims its next execution
		next := h.create(now)
		id, cr = h.active(now)
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Now: now,
			Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, LeaseRequest: h.leaseReq(wA, leaseTTL)}})).must(t)
		if res.Next == nil || res.Next.Claimed == nil || res.Next.Claimed.ID != next {
			t.Fatalf("complete with next: %+v", res.Next)
		}
		h.complete(next, res.Next.Claimed.Fence(), now)
		// no live lease: a runnable execution cancelled, a revoked lease
		// revoked again, marked expired, recovered, cancelled
		h.cancelOp(h.create(now), now)
		id, _ = h.active(now)
		h.revoke(id, now)
		mine.next(t) // the revoke's own notice
		h.revoke(id, now)
		call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: at(time.Hour)})).must(t)
		h.cancelOp(id, now)
		id, _ = h.active(now)
		h.revoke(id, now)
		mine.next(t)
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: now})).must(t)
		// a timer not yet due
		id, _ = h.active(now, withTimeout(time.Minute), withDeadline(at(time.Hour)))
		call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: now})).must(t)
		call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireExecutionDeadline, Now: now})).must(t)
		call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now})).must(t)
		h.wantNoNotice(mine, wA)
	})

	// A stopped watch is not called again; another watch of the same
	// instance still is.
	t.Run("Stop", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		ln := h.s.(model.LeaseNotifier)
		first := newNoticeLog()
		stop := ln.WatchLeases(wA.Instance, first.f)
		second := h.watchLeases(wA)
		id, cr := h.active(at(0))
		h.revoke(id, at(0))
		want := model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: id, LeaseEpoch: cr.Lease.Epoch}
		for _, l := range []*noticeLog{first, second} {
			if got := l.next(t); got != want {
				t.Fatalf("notice %+v, want %+v", got, want)
			}
		}
		stop()
		stop() // idempotent
		h.wantNoNotice(second, wA)
		if len(first.ch) != 0 {
			t.Fatalf("stopped watch called: %+v", <-first.ch)
		}
	})
}

// noticeLog collects the notices of one watch.
type noticeLog struct {
	ch chan model.LeaseNotice
}

func newNoticeLog() *noticeLog { return &noticeLog{ch: make(chan model.LeaseNotice, 100)} }

func (l *noticeLog) f(n model.LeaseNotice) {
	if n.Kind == model.LeaseNoticeRecheck {
		return // a reconnect of the store; the leases here are checked directly
	}
	select {
	case l.ch <- n:
	default:
		panic("storetest: too many lease notices")
	}
}

// next waits for the next notice; the bound only ends a failing test (a
// notice crosses a network to a subscription on some stores).
func (l *noticeLog) next(t *testing.T) model.LeaseNotice {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	select {
	case n := <-l.ch:
		return n
	case <-ctx.Done():
		t.Fatal("no lease notice")
		return model.LeaseNotice{}
	}
}

// noticeWait bounds the wait for a notice that does not come.
const noticeWait = 30 * time.Second

// watchLeases watches the leases of w until the test ends.
func (h *harness) watchLeases(w workerRef) *noticeLog {
	l := newNoticeLog()
	stop := h.s.(model.LeaseNotifier).WatchLeases(w.Instance, l.f)
	h.t.Cleanup(stop)
	return l
}

// activeFor creates an execution at now and claims it for w.
func (h *harness) activeFor(w workerRef, now time.Time) (model.ExecutionID, *model.ClaimResult) {
	h.t.Helper()
	id := h.create(now)
	return id, h.claim(id, w, now)
}

// wantNoNotice checks that l holds no notice: it revokes a fresh lease of
// w in the harness's partition, whose notice (published after everything
// before it, on the same node) must be the next one.
func (h *harness) wantNoNotice(l *noticeLog, w workerRef) {
	h.t.Helper()
	id, cr := h.activeFor(w, at(0))
	h.revoke(id, at(0))
	want := model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: id, LeaseEpoch: cr.Lease.Epoch}
	if got := l.next(h.t); got != want {
		h.t.Fatalf("unexpected lease notice (-want +got):\n%s", cmp.Diff(want, got, cmpOpts...))
	}
}

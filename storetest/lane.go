package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Lane pause (model.LaneStore, model/lane_ops.go): a paused lane starts no
// attempt in any partition or namespace (claim-next and a completion's
// next claim report Paused and touch nothing; claim, grant-and-claim and
// reclaim fail with lane_paused and write nothing), while its running
// attempts renew and complete, and its work is still created and stays in
// order; a resume makes it claimable at once, in the same order, and tells
// the lane's watchers with model.PartitionAll. Pause and resume are
// idempotent (the first pause's time and reason stay); bad input is
// refused naming the field and changes nothing. A store without
// model.LaneStore skips these tests.
func testLanes(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*laneHarness)
	}{
		{"PauseStopsClaims", lanePauseStopsClaims},
		{"PauseKeepsRunning", lanePauseKeepsRunning},
		{"PauseEveryPartitionAndNamespace", lanePauseEverywhere},
		{"ResumeClaimsInOrder", laneResumeInOrder},
		{"Idempotent", laneIdempotent},
		{"State", laneStateRead},
		{"Validation", laneValidation},
		{"ResumeNotifies", laneResumeNotifies},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			ls, ok := optionalOf[model.LaneStore](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.LaneStore", h.s)
			}
			c.run(&laneHarness{harness: h, ls: ls})
		})
	}
}

// laneHarness is a harness with the store's lane operations.
type laneHarness struct {
	*harness
	ls model.LaneStore
}

func (h *laneHarness) pause(lane model.LaneID, reason string, now time.Time) *model.LanePauseResult {
	h.t.Helper()
	return call(h.ls.LanePause(h.ctx, &model.LanePauseParams{Lane: lane, Reason: reason, Now: now})).must(h.t)
}

func (h *laneHarness) resume(lane model.LaneID, now time.Time) *model.LaneResumeResult {
	h.t.Helper()
	return call(h.ls.LaneResume(h.ctx, &model.LaneResumeParams{Lane: lane, Now: now})).must(h.t)
}

func (h *laneHarness) state(lane model.LaneID) model.LaneState {
	h.t.Helper()
	return call(h.ls.LaneState(h.ctx, &model.LaneStateParams{Lane: lane})).must(h.t).LaneState
}

// pausedState is the state of lane paused at at for reason.
func (h *laneHarness) pausedState(lane model.LaneID, at time.Time, reason string) model.LaneState {
	return model.LaneState{Lane: lane, Paused: true, PausedAt: at, Reason: reason, Partitions: h.cfg.FlowPartitions}
}

// claimNextOn is claimNext on lane in partition part.
func (h *laneHarness) claimNextOn(part int, lane model.LaneID, ns model.Namespace, now time.Time) *model.ExecutionClaimNextResult {
	h.t.Helper()
	return call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: part, Lane: lane, Namespace: ns, ScanLimit: 10, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: now,
	})).must(h.t)
}

// wantPaused checks a claim-next on a paused lane: Paused, and nothing
// else.
func wantPaused(t testing.TB, res *model.ExecutionClaimNextResult) {
	t.Helper()
	wantEqual(t, "claim-next on a paused lane", model.ExecutionClaimNextResult{Paused: true}, *res)
}

// lanePauseStopsClaims: no claim path starts an attempt on a paused lane,
// and none of them changes anything there; another lane is unaffected.
func lanePauseStopsClaims(h *laneHarness) {
	ids := []model.ExecutionID{h.create(at(0)), h.create(at(0)), h.create(at(0))}
	granted := ids[2]
	h.grant(granted, wA, at(time.Second))
	other := h.create(at(0), withLane(laneB), inPartition(h.harness, h.p0))
	before := h.world(at(2 * time.Second))
	res := h.pause(laneA, "deploy", at(2*time.Second))
	wantEqual(h.t, "pause", model.LanePauseResult{State: h.pausedState(laneA, at(2*time.Second), "deploy")}, *res)
	for _, id := range ids {
		h.unchanged(id, func() {
			wantPaused(h.t, h.claimNextOn(h.p0, laneA, "", at(3*time.Second)))
			wantPaused(h.t, h.claimNextOn(h.p0, laneA, nsA, at(3*time.Second)))
			if id == granted {
				return // grant-and-claim: grant_already_exists comes first
			}
			_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
				ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(3 * time.Second),
			})
			wantErr(h.t, err, model.ErrLanePaused)
		})
	}
	h.unchanged(granted, func() {
		_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{
			ID: granted, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(3 * time.Second),
		})
		wantErr(h.t, err, model.ErrLanePaused)
	})
	// a grant may still be issued: consuming it is the claim
	h.grant(ids[0], wB, at(3*time.Second))
	// the other checks come first
	_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{
		ID: ids[1], LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(3 * time.Second),
	})
	wantErr(h.t, err, model.ErrInvalidClaimGrant)
	for _, id := range ids {
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
	}
	// lane B is not paused
	c := h.claimNextOn(h.p0, laneB, "", at(4*time.Second))
	if c.Paused || c.Claimed == nil || c.Claimed.ID != other {
		h.t.Fatalf("claim-next on lane B: %+v, want %v claimed", c, other)
	}
	delete(before.Execs, other.String())
	after := h.world(at(4 * time.Second))
	delete(after.Execs, other.String())
	after.Execs[ids[0].String()] = before.Execs[ids[0].String()] // the new grant
	if d := cmp.Diff(before, after, cmpOpts...); d != "" {
		h.t.Fatalf("the paused lane changed (-before +after):\n%s", d)
	}
}

// lanePauseKeepsRunning: an attempt running when its lane is paused
// renews and completes; the completion's next claim reports Paused; an
// expired lease is recovered to the eligible index but not reclaimed.
func lanePauseKeepsRunning(h *laneHarness) {
	id, c := h.active(at(0))
	id2, _ := h.active(at(0))
	waiting := h.create(at(0))
	h.pause(laneA, "", at(time.Second))
	call(h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: c.Fence(), LeaseTTL: leaseTTL, Now: at(2 * time.Second)})).must(h.t)
	res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
		ID: id, Fence: c.Fence(), Result: []byte("ok"), Now: at(3 * time.Second),
		Next: &model.NextClaim{Lane: laneA, ScanLimit: 10, LeaseRequest: h.leaseReq(wA, leaseTTL)},
	})).must(h.t)
	if res.Replayed || res.Next == nil {
		h.t.Fatalf("complete with next on a paused lane: %+v", res)
	}
	wantPaused(h.t, res.Next)
	if s := h.describe(id); s.State.LifecyclePhase != model.PhaseTerminal || s.State.TerminalOutcome != model.OutcomeSuccess {
		h.t.Fatalf("completed execution: %+v", s.State)
	}
	h.wantIndexes(waiting, ixAll, ixLane(laneA, "eligible"))

	// a lease that expires is recovered, not reclaimed, while paused
	h.markExpired(id2, at(leaseTTL+time.Second))
	h.reclaimGrant(id2, wB, at(leaseTTL+2*time.Second))
	h.unchanged(id2, func() {
		_, err := h.s.(model.GrantReclaimer).ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{
			ID: id2, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL + 3*time.Second),
		})
		wantErr(h.t, err, model.ErrLanePaused)
	})
	rec := call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id2, Now: at(leaseTTL + 4*time.Second)})).must(h.t)
	if rec.Outcome != model.RecoverRequeued {
		h.t.Fatalf("recover: %v", rec.Outcome)
	}
	h.wantIndexes(id2, ixAll, ixLane(laneA, "eligible"))
	wantPaused(h.t, h.claimNextOn(h.p0, laneA, "", at(leaseTTL+5*time.Second)))
}

// lanePauseEverywhere: the pause holds in every partition the lane's work
// can be in and for every namespace.
func lanePauseEverywhere(h *laneHarness) {
	ids := []model.ExecutionID{
		h.create(at(0), inPartition(h.harness, h.p1)),
		h.create(at(0), withNamespace(nsB)),
	}
	h.pause(laneA, "all", at(time.Second))
	for p := range h.cfg.FlowPartitions {
		wantPaused(h.t, h.claimNextOn(p, laneA, "", at(2*time.Second)))
	}
	wantPaused(h.t, h.claimNextOn(h.p0, laneA, nsB, at(2*time.Second)))
	for _, id := range ids {
		_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
			ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second),
		})
		wantErr(h.t, err, model.ErrLanePaused)
	}
	// created while paused: eligible, waiting
	late := h.create(at(3*time.Second), inPartition(h.harness, h.p1))
	h.wantIndexes(late, ixAll, ixLane(laneA, "eligible"))
	wantPaused(h.t, h.claimNextOn(h.p1, laneA, "", at(4*time.Second)))
	h.resume(laneA, at(5*time.Second))
	if c := h.claimNextOn(h.p1, laneA, "", at(6*time.Second)); c.Paused || c.Claimed == nil || c.Claimed.ID != ids[0] {
		h.t.Fatalf("claim-next on partition %d after the resume: %+v, want %v", h.p1, c, ids[0])
	}
	if c := h.claimNextOn(h.p0, laneA, nsB, at(6*time.Second)); c.Claimed == nil || c.Claimed.ID != ids[1] {
		h.t.Fatalf("claim-next of namespace %s after the resume: %+v, want %v", nsB, c, ids[1])
	}
}

// laneResumeInOrder: work waiting on a paused lane (created before and
// during the pause, promoted, re-prioritised) is claimed after the resume
// in the order it would have been without the pause.
func laneResumeInOrder(h *laneHarness) {
	first := h.create(at(0))
	high := h.create(at(time.Millisecond), withPriority(5))
	h.pause(laneA, "", at(time.Second))
	during := h.create(at(2 * time.Second))
	delayed := h.create(at(2*time.Second), withDelay(at(3*time.Second)))
	if o := h.promote(delayed, laneA, at(4*time.Second)); o != model.PromotePromoted {
		h.t.Fatalf("promote while paused: %v", o)
	}
	if r := h.resume(laneA, at(5*time.Second)); !r.WasPaused {
		h.t.Fatalf("resume: %+v, want WasPaused", r)
	}
	var got []model.ExecutionID
	for i := range 4 {
		c := h.claimNextOn(h.p0, laneA, "", at(6*time.Second+time.Duration(i)*time.Millisecond))
		if c.Paused || c.Claimed == nil {
			h.t.Fatalf("claim %d after the resume: %+v", i, c)
		}
		got = append(got, c.Claimed.ID)
	}
	wantEqual(h.t, "claim order after the resume", []model.ExecutionID{high, first, during, delayed}, got)
}

// laneIdempotent: a second pause changes nothing (the first one's time
// and reason stay); resuming twice, or a lane never paused, is harmless.
func laneIdempotent(h *laneHarness) {
	id := h.create(at(0))
	want := h.pausedState(laneA, at(time.Second), "first")
	wantEqual(h.t, "pause", model.LanePauseResult{State: want}, *h.pause(laneA, "first", at(time.Second)))
	wantEqual(h.t, "second pause", model.LanePauseResult{AlreadyPaused: true, State: want}, *h.pause(laneA, "second", at(2*time.Second)))
	wantEqual(h.t, "state after two pauses", want, h.state(laneA))
	wantPaused(h.t, h.claimNextOn(h.p0, laneA, "", at(3*time.Second)))
	wantEqual(h.t, "resume", model.LaneResumeResult{WasPaused: true}, *h.resume(laneA, at(4*time.Second)))
	wantEqual(h.t, "second resume", model.LaneResumeResult{}, *h.resume(laneA, at(5*time.Second)))
	wantEqual(h.t, "never paused", model.LaneResumeResult{}, *h.resume(laneB, at(5*time.Second)))
	wantEqual(h.t, "state after two resumes", model.LaneState{Lane: laneA}, h.state(laneA))
	// paused again: a new pause, with its own time and reason
	again := h.pausedState(laneA, at(6*time.Second), "again")
	wantEqual(h.t, "pause after resume", model.LanePauseResult{State: again}, *h.pause(laneA, "again", at(6*time.Second)))
	h.resume(laneA, at(7*time.Second))
	if c := h.claimNextOn(h.p0, laneA, "", at(8*time.Second)); c.Claimed == nil || c.Claimed.ID != id {
		h.t.Fatalf("claim after pause/resume twice: %+v, want %v", c, id)
	}
}

// laneStateRead: the state read of a lane never paused, paused, resumed,
// and of one lane while another is paused; a reason is kept as given.
func laneStateRead(h *laneHarness) {
	wantEqual(h.t, "never paused", model.LaneState{Lane: laneA}, h.state(laneA))
	reason := "maintenance | window: ünïcødé"
	h.pause(laneA, reason, at(time.Second))
	wantEqual(h.t, "paused", h.pausedState(laneA, at(time.Second), reason), h.state(laneA))
	wantEqual(h.t, "another lane", model.LaneState{Lane: laneB}, h.state(laneB))
	h.pause(laneB, "", at(2*time.Second))
	wantEqual(h.t, "paused without a reason", h.pausedState(laneB, at(2*time.Second), ""), h.state(laneB))
	h.resume(laneA, at(3*time.Second))
	wantEqual(h.t, "resumed", model.LaneState{Lane: laneA}, h.state(laneA))
	wantEqual(h.t, "the other still paused", h.pausedState(laneB, at(2*time.Second), ""), h.state(laneB))
}

// laneValidation: bad input is refused naming the field and changes
// nothing.
func laneValidation(h *laneHarness) {
	id := h.create(at(0))
	h.pause(laneB, "held", at(time.Second))
	badLane := model.LaneID("has space")
	for _, c := range []struct {
		field string
		do    func() error
	}{
		{"Lane", func() error {
			_, err := h.ls.LanePause(h.ctx, &model.LanePauseParams{Lane: badLane, Now: at(2 * time.Second)})
			return err
		}},
		{"Lane", func() error {
			_, err := h.ls.LanePause(h.ctx, &model.LanePauseParams{Now: at(2 * time.Second)})
			return err
		}},
		{"Reason", func() error {
			_, err := h.ls.LanePause(h.ctx, &model.LanePauseParams{Lane: laneA, Reason: "\xff", Now: at(2 * time.Second)})
			return err
		}},
		{"Reason", func() error {
			_, err := h.ls.LanePause(h.ctx, &model.LanePauseParams{Lane: laneA, Reason: strings.Repeat("x", model.MaxReasonBytes+1), Now: at(2 * time.Second)})
			return err
		}},
		{"Now", func() error {
			_, err := h.ls.LanePause(h.ctx, &model.LanePauseParams{Lane: laneA})
			return err
		}},
		{"Lane", func() error {
			_, err := h.ls.LaneResume(h.ctx, &model.LaneResumeParams{Lane: badLane, Now: at(2 * time.Second)})
			return err
		}},
		{"Now", func() error {
			_, err := h.ls.LaneResume(h.ctx, &model.LaneResumeParams{Lane: laneB})
			return err
		}},
		{"Lane", func() error {
			_, err := h.ls.LaneState(h.ctx, &model.LaneStateParams{Lane: badLane})
			return err
		}},
	} {
		h.unchanged(id, func() {
			err := c.do()
			var e *model.Error
			if !errors.As(err, &e) || !errors.Is(err, model.ErrValidation) || e.Field != c.field {
				h.t.Fatalf("got %v, want a validation error naming %s", err, c.field)
			}
		})
		wantEqual(h.t, "lane A after a refused call", model.LaneState{Lane: laneA}, h.state(laneA))
		wantEqual(h.t, "lane B after a refused call", h.pausedState(laneB, at(time.Second), "held"), h.state(laneB))
	}
	if c := h.claimNextOn(h.p0, laneA, "", at(3*time.Second)); c.Claimed == nil || c.Claimed.ID != id {
		h.t.Fatalf("lane A after refused pauses: %+v, want %v claimed", c, id)
	}
}

// laneResumeNotifies: a resume tells the lane's work watchers with
// model.PartitionAll (a store without model.WorkNotifier skips).
func laneResumeNotifies(h *laneHarness) {
	n, ok := optionalOf[model.WorkNotifier](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.WorkNotifier", h.s)
	}
	ch := make(chan int, 64)
	stop := n.WatchWork(laneA, func(p int) {
		select {
		case ch <- p:
		default:
		}
	})
	h.t.Cleanup(stop)
	h.create(at(0))
	h.pause(laneA, "", at(time.Second))
	h.resume(laneA, at(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	for {
		select {
		case p := <-ch:
			if p == model.PartitionAll {
				return
			}
		case <-ctx.Done():
			h.t.Fatal("no work notification with model.PartitionAll after a resume")
		}
	}
}

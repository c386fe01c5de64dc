package storetest

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// testHotPath states the operations that keep a busy worker and an idle
// scanner cheap: completing with the next claim in the same step, and the
// one-call summary of a partition's timers.
func testHotPath(t *testing.T, newStore NewStoreFunc) {
	next := func(h *harness, w workerRef, live model.Capabilities) *model.NextClaim {
		return &model.NextClaim{Lane: laneA, Capabilities: w.Caps, LiveCapabilities: live, ScanLimit: 10,
			LeaseRequest: h.leaseReq(w, leaseTTL)}
	}

	// Completing with Next completes exactly as without it, then claims the
	// best eligible execution of the lane for the same worker.
	t.Run("CompleteNext", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		low := h.create(at(time.Second), withPriority(1))
		high := h.create(at(2*time.Second), withPriority(5))
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
			ID: id, Fence: cr.Fence(), Result: []byte("r"), Next: next(h, wA, nil), Now: at(3 * time.Second),
		})).must(t)
		if res.Replayed || res.Next == nil || res.Next.Claimed == nil || res.Next.Claimed.ID != high {
			t.Fatalf("complete with next: %+v", res)
		}
		if got := h.describe(id).PublicState; got != model.PublicCompleted {
			t.Fatalf("completed execution is %v", got)
		}
		h.wantIndexes(id, ixAll, ixLane(laneA, "terminal"))
		c := res.Next.Claimed
		if c.Lease.WorkerInstanceID != wA.Instance || c.AttemptType != model.AttemptInitial || c.Lease.Epoch != 1 {
			t.Fatalf("next claim %+v", c)
		}
		h.wantIndexes(high, ixAll, ixLane(laneA, "active"), ixLease, ixWorker(wA.Instance))
		h.wantIndexes(low, ixAll, ixLane(laneA, "eligible"))

		// A replayed completion claims nothing: the request may be a
		// retransmission of the first, whose claim (same lease and attempt
		// ids) already happened; claiming again would give a second
		// execution those ids. The worker claims through its usual path.
		// (The simulator found the duplicate attempt id.)
		res = call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
			ID: id, Fence: cr.Fence(), Result: []byte("r"), Next: next(h, wA, nil), Now: at(4 * time.Second),
		})).must(t)
		if !res.Replayed || res.Next != nil {
			t.Fatalf("replayed complete with next: %+v", res)
		}
		h.wantIndexes(low, ixAll, ixLane(laneA, "eligible"))
		cl := call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
			Partition: id.Partition(), Lane: laneA, Capabilities: wA.Caps, ScanLimit: 10,
			LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(4 * time.Second),
		})).must(t)
		if cl.Claimed == nil || cl.Claimed.ID != low {
			t.Fatalf("claim after the replay: %+v", cl)
		}
		// nothing left: an empty claim
		res = call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
			ID: high, Fence: c.Fence(), Next: next(h, wA, nil), Now: at(5 * time.Second),
		})).must(t)
		if res.Next == nil || res.Next.Claimed != nil {
			t.Fatalf("complete with nothing next: %+v", res.Next)
		}
		// without Next, no Next in the result
		id2, cr2 := h.active(at(6 * time.Second))
		res = call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id2, Fence: cr2.Fence(), Now: at(7 * time.Second)})).must(t)
		if res.Next != nil {
			t.Fatalf("next without asking: %+v", res.Next)
		}
	})

	// The next claim applies admission like ExecutionClaimNext: heads a live
	// worker could serve are skipped, heads nobody can serve are blocked.
	t.Run("CompleteNextAdmission", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		gpu := h.create(at(time.Second), withPriority(9), withCaps("gpu"))
		alien := h.create(at(2*time.Second), withPriority(8), withCaps("alien"))
		plain := h.create(at(3 * time.Second))
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
			ID: id, Fence: cr.Fence(), Next: next(h, wA, model.Capabilities{"gpu"}), Now: at(4 * time.Second),
		})).must(t)
		n := res.Next
		if n == nil || n.Claimed == nil || n.Claimed.ID != plain || n.Skipped != 1 || len(n.Blocked) != 1 || n.Blocked[0] != alien {
			t.Fatalf("next %+v", n)
		}
		h.wantIndexes(gpu, ixAll, ixLane(laneA, "eligible"))
		h.wantIndexes(alien, ixAll, ixLane(laneA, "blocked:route"))
	})

	// A completion that fails claims nothing and changes nothing.
	t.Run("CompleteNextRefused", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		waiting := h.create(at(time.Second))
		stale := cr.Fence()
		stale.LeaseEpoch++
		h.unchanged(waiting, func() {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{
					ID: id, Fence: stale, Next: next(h, wA, nil), Now: at(2 * time.Second),
				})
				wantErr(t, err, model.ErrStaleLease)
			})
		})
	})

	// PartitionDue reports the earliest entry of every timer index, whether
	// any execution is route-blocked, and how many executions there are.
	t.Run("PartitionDue", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		due := func() *model.PartitionDueResult {
			return call(h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: h.p0})).must(t)
		}
		if got := due(); *got != (model.PartitionDueResult{}) {
			t.Fatalf("empty partition: %+v", got)
		}
		h.create(at(0), withDelay(at(time.Hour)))
		h.create(at(0), withLane(laneB), withDelay(at(30*time.Minute)), withDeadline(at(2*time.Hour)))
		_, cr := h.active(at(time.Second), withTimeout(time.Minute))
		blocked := h.create(at(2*time.Second), withCaps("gpu"))
		h.block(blocked, model.WaitingForCapableWorker, at(3*time.Second))
		want := model.PartitionDueResult{
			LeaseExpiry:       cr.Lease.ExpiresAt,
			AttemptTimeout:    at(time.Second + time.Minute),
			ExecutionDeadline: at(2 * time.Hour),
			Delayed:           at(30 * time.Minute),
			RouteBlocked:      true,
			Executions:        4,
		}
		wantEqual(t, "partition due", &want, due())
		if want.Due(model.IndexDelayed) != want.Delayed || want.Due(model.IndexLeaseExpiry) != want.LeaseExpiry {
			t.Fatal("Due does not map the indexes")
		}
		_, err := h.s.PartitionDue(h.ctx, &model.PartitionDueParams{Partition: h.cfg.WithDefaults().FlowPartitions})
		wantErr(t, err, model.ErrValidation)
	})
}

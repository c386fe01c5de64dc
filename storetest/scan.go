package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testScan states what the background scanners rely on: delayed
// promotion, the timer index scan, and route unblocking.
func testScan(t *testing.T, newStore NewStoreFunc) {
	// Promotion makes a delayed execution eligible from its delay time on,
	// keeping its attempt state, and reports (and cleans) every other case.
	t.Run("PromoteDelayed", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withDelay(at(time.Minute)))
		h.unchanged(id, func() {
			if st := h.promote(id, laneA, at(time.Minute-time.Millisecond)); st != model.PromoteNotYetDue {
				t.Fatalf("before the delay: %q", st)
			}
		})
		before := h.describe(id)
		if st := h.promote(id, laneA, at(time.Minute)); st != model.PromotePromoted {
			t.Fatalf("at the delay: %q", st)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stEligible(model.AttemptPendingFirst), model.PublicWaiting
		want.LastMutationAt, want.LastTransitionAt = at(time.Minute), at(time.Minute)
		want.DelayUntil = time.Time{}
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))

		// Forced (an operator's retry now): eligible before its time, a
		// retry backoff cut short with its retry still pending.
		early := h.create(at(0), withDelay(at(time.Hour)))
		res := call(h.s.ExecutionPromoteDelayed(h.ctx, &model.ExecutionPromoteDelayedParams{ID: early, Lane: laneA, Force: true, Now: at(time.Second)})).must(t)
		if res.Outcome != model.PromotePromoted {
			t.Fatalf("forced before its time: %q", res.Outcome)
		}
		h.wantState(early, stEligible(model.AttemptPendingFirst))
		h.wantIndexes(early, ixAll, ixLane(laneA, "eligible"))
		retrying, rc := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Hour}))
		if fr := h.fail(retrying, rc.Fence(), model.FailureTransient, at(time.Second)); fr.Outcome != model.FailRetryScheduled {
			t.Fatalf("fail with a retry left: %+v", fr)
		}
		res = call(h.s.ExecutionPromoteDelayed(h.ctx, &model.ExecutionPromoteDelayedParams{ID: retrying, Lane: laneA, Force: true, Now: at(2 * time.Second)})).must(t)
		if res.Outcome != model.PromotePromoted {
			t.Fatalf("forced retry: %q", res.Outcome)
		}
		h.wantState(retrying, stEligible(model.AttemptPendingRetry))
		if cr := h.claim(retrying, wA, at(3*time.Second)); cr.AttemptType != model.AttemptRetry {
			t.Fatalf("the forced retry claimed as %v", cr.AttemptType)
		}

		blocked := h.create(at(0))
		h.block(blocked, model.PausedByOperator, at(0))
		active, _ := h.active(at(0))
		terminal := h.create(at(0), withDelay(at(time.Minute)))
		h.cancelOp(terminal, at(time.Second))
		for _, c := range []struct {
			name string
			id   model.ExecutionID
			want model.PromoteOutcome
		}{
			{"eligible", id, model.PromoteNotDelayedCleaned},
			{"blocked", blocked, model.PromoteNotDelayedCleaned},
			{"active", active, model.PromoteNotRunnableCleaned},
			{"terminal", terminal, model.PromoteNotRunnableCleaned},
		} {
			h.unchanged(c.id, func() {
				if st := h.promote(c.id, laneA, at(time.Hour)); st != c.want {
					t.Fatalf("%s: %q, want %q", c.name, st, c.want)
				}
			})
		}
		if st := h.promote(h.newID(h.p0), laneA, at(time.Hour)); st != model.PromoteNotFoundCleaned {
			t.Fatalf("unknown execution: %q", st)
		}
	})

	// IndexScanDue returns one partition's due entries of a timer index in
	// (due time, id) order after an exclusive cursor, at most Limit of them,
	// says whether more are due, and when the next entry falls due. The
	// delayed index covers every lane and names each entry's lane.
	t.Run("IndexScanDue", func(t *testing.T) {
		t.Parallel()
		dues := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second, 10 * time.Second}
		kinds := []struct {
			kind  model.IndexKind
			lanes bool
			// add makes an entry of the index due at base+d, in partition part.
			add func(h *harness, i int, d time.Duration, part int) model.ExecutionID
		}{
			{model.IndexLeaseExpiry, false, func(h *harness, _ int, d time.Duration, part int) model.ExecutionID {
				id := h.create(at(0), inPartition(h, part))
				call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, d), Now: at(0)})).must(h.t)
				return id
			}},
			{model.IndexAttemptTimeout, false, func(h *harness, _ int, d time.Duration, part int) model.ExecutionID {
				id := h.create(at(0), inPartition(h, part), withTimeout(d))
				h.claim(id, wA, at(0))
				return id
			}},
			{model.IndexExecutionDeadline, false, func(h *harness, _ int, d time.Duration, part int) model.ExecutionID {
				return h.create(at(0), inPartition(h, part), withDeadline(at(d)))
			}},
			{model.IndexDelayed, true, func(h *harness, i int, d time.Duration, part int) model.ExecutionID {
				return h.create(at(0), inPartition(h, part), withDelay(at(d)), withLane(laneOf(i)))
			}},
		}
		for _, k := range kinds {
			t.Run(k.kind.String(), func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				var items []model.DueItem
				for i, d := range dues {
					it := model.DueItem{ID: k.add(h, i, d, h.p0), DueAt: at(d)}
					if k.lanes {
						it.Lane = laneOf(i)
					}
					items = append(items, it)
				}
				if h.p1 != h.p0 {
					k.add(h, 0, 500*time.Millisecond, h.p1)
				}
				scan := func(now time.Time, after *model.DueCursor, limit int) *model.IndexScanDueResult {
					return call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
						Partition: h.p0, Index: k.kind, Now: now, After: after, Limit: limit,
					})).must(t)
				}
				cursor := func(it model.DueItem) *model.DueCursor { return &model.DueCursor{DueAt: it.DueAt, ID: it.ID} }

				wantEqual(t, "nothing due yet", seen(model.IndexScanDueResult{NextDueAt: at(time.Second)}), *scan(at(500*time.Millisecond), nil, 10))
				wantEqual(t, "due at 3s", seen(model.IndexScanDueResult{Items: items[:4], NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), nil, 10))
				wantEqual(t, "exactly Limit due", seen(model.IndexScanDueResult{Items: items[:4], NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), nil, 4))
				wantEqual(t, "first page", seen(model.IndexScanDueResult{Items: items[:2], More: true, NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), nil, 2))
				wantEqual(t, "second page", seen(model.IndexScanDueResult{Items: items[2:4], NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), cursor(items[1]), 2))
				wantEqual(t, "after a tie", seen(model.IndexScanDueResult{Items: items[2:3], More: true, NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), cursor(items[1]), 1))
				wantEqual(t, "after the last due", seen(model.IndexScanDueResult{NextDueAt: at(10 * time.Second)}), *scan(at(3*time.Second), cursor(items[3]), 10))
				wantEqual(t, "everything due", seen(model.IndexScanDueResult{Items: items}), *scan(at(time.Hour), nil, 10))
			})
		}
	})

	// A scan of a partition with nothing in it is empty.
	t.Run("IndexScanDueEmpty", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		for _, k := range []model.IndexKind{model.IndexLeaseExpiry, model.IndexAttemptTimeout, model.IndexExecutionDeadline, model.IndexDelayed} {
			res := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{Partition: h.p0, Index: k, Now: at(time.Hour), Limit: 10})).must(t)
			wantEqual(t, k.String(), model.IndexScanDueResult{}, *res)
		}
	})

	// RouteUnblock returns to the eligible index the route-blocked
	// executions of a partition, in every lane, whose required capabilities
	// are within Live, at most Limit per call, and says whether more remain.
	t.Run("RouteUnblock", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		routed := func(lane model.LaneID, caps ...string) model.ExecutionID {
			id := h.create(at(0), withLane(lane), withCaps(caps...))
			h.block(id, model.WaitingForCapableWorker, at(time.Second))
			return id
		}
		a := routed(laneA, "a")
		b := routed(laneA, "b")
		ab := routed(laneA, "b", "a")
		none := routed(laneA)
		laneBA := routed(laneB, "a")
		budget := h.create(at(0))
		h.block(budget, model.WaitingForBudget, at(time.Second))
		gone := routed(laneA, "a")
		h.cancelOp(gone, at(2*time.Second))

		unblock := func(live model.Capabilities, limit int) *model.RouteUnblockResult {
			return call(h.s.RouteUnblock(h.ctx, &model.RouteUnblockParams{Partition: h.p0, Namespace: nsA, Live: live, Limit: limit, Now: at(10 * time.Second)})).must(t)
		}
		sorted := func(ids []model.ExecutionID) []model.ExecutionID {
			return slices.SortedFunc(slices.Values(ids), model.ExecutionID.Compare)
		}

		res := unblock(model.Capabilities{"a"}, 10)
		if got, want := sorted(res.Unblocked), sorted([]model.ExecutionID{a, none, laneBA}); !cmp.Equal(got, want, cmpOpts...) || res.More {
			t.Fatalf("live {a}: unblocked %v more %v, want %v", got, res.More, want)
		}
		for _, id := range []model.ExecutionID{a, none, laneBA} {
			s := h.wantState(id, stEligible(model.AttemptPendingFirst))
			if !s.LastTransitionAt.Equal(at(10 * time.Second)) {
				t.Fatalf("last transition %v", s.LastTransitionAt)
			}
			h.wantIndexes(id, ixAll, ixLane(s.Lane, "eligible"))
		}
		for _, id := range []model.ExecutionID{b, ab} {
			h.wantIndexes(id, ixAll, ixLane(laneA, "blocked:route"))
		}

		first := unblock(model.Capabilities{"b", "a"}, 1)
		if len(first.Unblocked) != 1 || !first.More {
			t.Fatalf("limit 1: %+v", first)
		}
		second := unblock(model.Capabilities{"a", "b"}, 1)
		if len(second.Unblocked) != 1 || second.More {
			t.Fatalf("the rest: %+v", second)
		}
		if got, want := sorted(append(first.Unblocked, second.Unblocked...)), sorted([]model.ExecutionID{b, ab}); !cmp.Equal(got, want, cmpOpts...) {
			t.Fatalf("unblocked %v, want %v", got, want)
		}
		if res := unblock(model.Capabilities{"a", "b", "c"}, 10); len(res.Unblocked) != 0 || res.More {
			t.Fatalf("nothing left: %+v", res)
		}
		h.wantState(budget, stBlocked(model.BlockedByBudget, model.WaitingForBudget, "held", model.AttemptPendingFirst))
		h.wantState(gone, stTerminal(model.OutcomeCancelled, model.AttemptNone))
	})

	t.Run("RouteUnblockAll", func(t *testing.T) { routeUnblockAll(t, newStore) })
	t.Run("RouteNamespaces", func(t *testing.T) { routeNamespaces(t, newStore) })
}

// RouteNamespaces: route blocks and unblocks stay within a namespace. A
// RouteUnblock of namespace A (with A's live capabilities) never returns
// B's executions, in fail-open mode either; a claim-next of namespace A
// neither claims nor blocks B's heads, which it cannot judge (engine.md
// §1, scanner 11).
func routeNamespaces(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	h := setup(t, newStore)
	aGPU := h.create(at(0), withCaps("gpu"))
	bGPU := h.create(at(0), withCaps("gpu"), withNamespace(nsB))
	for _, id := range []model.ExecutionID{aGPU, bGPU} {
		h.block(id, model.WaitingForCapableWorker, at(time.Second))
	}
	unblock := func(ns model.Namespace, all bool) []model.ExecutionID {
		return call(h.s.RouteUnblock(h.ctx, &model.RouteUnblockParams{Partition: h.p0, Namespace: ns,
			Live: model.Capabilities{"gpu"}, All: all, Limit: 10, Now: at(2 * time.Second)})).must(t).Unblocked
	}
	if got := unblock(nsA, false); !cmp.Equal(got, []model.ExecutionID{aGPU}, cmpOpts...) {
		t.Fatalf("namespace A unblocked %v, want only %v", got, aGPU)
	}
	h.wantIndexes(bGPU, ixAll, ixLane(laneA, "blocked:route"))
	if got := unblock(nsA, true); len(got) != 0 {
		t.Fatalf("namespace A fail-open unblocked %v", got)
	}
	if got := unblock(nsB, false); !cmp.Equal(got, []model.ExecutionID{bGPU}, cmpOpts...) {
		t.Fatalf("namespace B unblocked %v, want %v", got, bGPU)
	}

	// Both heads are eligible again. A's claim-next with a gpu worker and
	// no live gpu in A skips B's head and blocks only A's own; B's claim-next
	// then claims B's.
	res := call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, Namespace: nsA, ScanLimit: 10,
		LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(3 * time.Second),
	})).must(t)
	if res.Claimed != nil || !cmp.Equal(res.Blocked, []model.ExecutionID{aGPU}, cmpOpts...) || res.Skipped != 1 {
		t.Fatalf("namespace A claim-next: claimed %v blocked %v skipped %d", res.Claimed, res.Blocked, res.Skipped)
	}
	h.wantIndexes(bGPU, ixAll, ixLane(laneA, "eligible"))
	gpuB := workerRef{ID: wB.ID, Instance: wB.Instance, Caps: model.Capabilities{"gpu"}}
	res = call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, Namespace: nsA, Capabilities: gpuB.Caps, ScanLimit: 10,
		LeaseRequest: h.leaseReq(gpuB, leaseTTL), Now: at(3 * time.Second),
	})).must(t)
	if res.Claimed != nil || res.Skipped != 1 {
		t.Fatalf("namespace A claim-next claimed B's %v (skipped %d)", res.Claimed, res.Skipped)
	}
	res = call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, Namespace: nsB, Capabilities: gpuB.Caps, ScanLimit: 10,
		LeaseRequest: h.leaseReq(gpuB, leaseTTL), Now: at(3 * time.Second),
	})).must(t)
	if res.Claimed == nil || res.Claimed.ID != bGPU {
		t.Fatalf("namespace B claim-next: %+v", res)
	}
}

// RouteUnblockAll is RouteUnblock in fail-open mode: every route-blocked
// execution of the partition returns whatever Live says; other blocks
// stay.
func routeUnblockAll(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	h := setup(t, newStore)
	tpu := h.create(at(0), withCaps("tpu"))
	h.block(tpu, model.WaitingForCapableWorker, at(0))
	plain := h.create(at(0), withLane(laneB))
	h.block(plain, model.WaitingForCapableWorker, at(0))
	budget := h.create(at(0))
	h.block(budget, model.WaitingForBudget, at(0))
	res := call(h.s.RouteUnblock(h.ctx, &model.RouteUnblockParams{Partition: h.p0, Namespace: nsA, Live: model.Capabilities{"cpu"}, All: true, Limit: 10, Now: at(time.Second)})).must(t)
	got := slices.SortedFunc(slices.Values(res.Unblocked), model.ExecutionID.Compare)
	if want := []model.ExecutionID{tpu, plain}; !cmp.Equal(got, want, cmpOpts...) || res.More {
		t.Fatalf("unblocked %v more %v, want %v", got, res.More, want)
	}
	h.wantState(tpu, stEligible(model.AttemptPendingFirst))
	h.wantState(plain, stEligible(model.AttemptPendingFirst))
	h.wantIndexes(budget, ixAll, ixLane(laneA, "blocked:budget"))
}

// seen sets the LastSeen of an unfiltered scan's result: its last item
// (nil when none).
func seen(r model.IndexScanDueResult) model.IndexScanDueResult {
	if n := len(r.Items); n > 0 {
		r.LastSeen = &model.DueCursor{DueAt: r.Items[n-1].DueAt, ID: r.Items[n-1].ID}
	}
	return r
}

// inPartition makes the execution in partition part.
func inPartition(h *harness, part int) createOpt {
	return func(p *model.ExecutionCreateParams) { p.ID = h.newID(part) }
}

// laneOf alternates lanes B and A.
func laneOf(i int) model.LaneID {
	if i%2 == 0 {
		return laneB
	}
	return laneA
}

package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testClaim states the claim paths (grant then claim, grant-and-claim,
// claim-next), capability admission, resuming an interrupted attempt, and
// admission blocks.
func testClaim(t *testing.T, newStore NewStoreFunc) {
	// A grant leaves the execution eligible; the claim consumes it and
	// starts attempt 0 under a lease of epoch 1.
	t.Run("GrantThenClaim", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withTimeout(time.Minute), withDeadline(at(time.Hour)), withRetry(model.RetryPolicy{MaxRetries: 4}))
		created := h.describe(id)

		g := h.grant(id, wA, at(time.Second))
		if !g.ExpiresAt.Equal(at(time.Second + grantTTL)) {
			t.Fatalf("grant expires at %v", g.ExpiresAt)
		}
		want := cloneSnapshot(created)
		want.LastMutationAt = at(time.Second)
		want.Grant = &model.Grant{
			Kind: model.GrantClaim, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			CreatedAt: at(time.Second), ExpiresAt: at(time.Second + grantTTL),
		}
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"), ixDeadline)

		req := h.leaseReq(wA, leaseTTL)
		cr := call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: req, Now: at(2 * time.Second)})).must(t)
		lease := model.Lease{
			ID: req.LeaseID, Epoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			AcquiredAt: at(2 * time.Second), ExpiresAt: at(2*time.Second + leaseTTL), RenewBy: at(2*time.Second + renewIn),
		}
		wantCR := &model.ClaimResult{
			ID: id, Lease: lease, AttemptID: req.AttemptID, AttemptIndex: 0, AttemptType: model.AttemptInitial,
			Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("payload"), CreatedAt: at(0),
			TimeoutAt: at(2*time.Second + time.Minute), MaxRetries: 4,
		}
		if d := cmp.Diff(wantCR, cr, cmpOpts...); d != "" {
			t.Fatalf("claim result (-want +got):\n%s", d)
		}
		if cr.Fence() != (model.Fence{LeaseID: req.LeaseID, LeaseEpoch: 1, AttemptID: req.AttemptID}) {
			t.Fatalf("fence %+v", cr.Fence())
		}
		want = cloneSnapshot(want)
		want.State, want.PublicState = stActive, model.PublicActive
		want.LastMutationAt, want.LastTransitionAt, want.StartedAt = at(2*time.Second), at(2*time.Second), at(2*time.Second)
		want.TotalAttempts = 1
		want.CurrentAttempt = &model.AttemptRef{ID: req.AttemptID, Index: 0}
		want.LeaseEpoch = 1
		want.CurrentLease = &lease
		want.Grant = nil
		h.wantSnapshot(want)
		h.wantIndexes(id, activeIndexes(laneA, wA.Instance, ixTimeout, ixDeadline)...)
		h.wantAttempts(id, []model.Attempt{{
			Index: 0, ID: req.AttemptID, Type: model.AttemptInitial, Status: model.AttemptStarted,
			LeaseID: req.LeaseID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			StartedAt: at(2 * time.Second),
		}})
		h.wantHistory(id, []model.LeaseEvent{{
			Kind: model.LeaseAcquired, LeaseID: req.LeaseID, LeaseEpoch: 1, AttemptIndex: 0,
			WorkerInstanceID: wA.Instance, At: at(2 * time.Second),
		}})
		due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
			Partition: h.p0, Index: model.IndexAttemptTimeout, Now: at(2*time.Second + time.Minute), Limit: 10,
		})).must(t)
		if len(due.Items) != 1 || due.Items[0].ID != id || !due.Items[0].DueAt.Equal(at(2*time.Second+time.Minute)) {
			t.Fatalf("attempt timeout index: %+v", due.Items)
		}
	})

	// ClaimGrantIssue refuses anything but an eligible execution without a
	// live grant whose required capabilities the worker has; a refusal
	// writes nothing.
	t.Run("GrantIssueErrors", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			setup  func(h *harness) model.ExecutionID
			worker workerRef
			want   *model.Error
			detail string
		}{
			{"delayed", func(h *harness) model.ExecutionID { return h.create(at(0), withDelay(at(time.Hour))) }, wA, model.ErrNotEligible, ""},
			{"blocked", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.block(id, model.WaitingForBudget, at(0))
				return id
			}, wA, model.ErrNotEligible, ""},
			{"active", func(h *harness) model.ExecutionID { id, _ := h.active(at(0)); return id }, wA, model.ErrNotEligible, ""},
			{"terminal", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.cancelOp(id, at(0))
				return id
			}, wA, model.ErrNotEligible, ""},
			{"live_grant_of_other_worker", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wB, at(0))
				return id
			}, wA, model.ErrGrantAlreadyExists, ""},
			{"own_grant_live_at_expiry", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(time.Second-grantTTL))
				return id
			}, wA, model.ErrGrantAlreadyExists, ""},
			{"capability_mismatch", func(h *harness) model.ExecutionID {
				return h.create(at(0), withCaps("zeta", "gpu", "avx"))
			}, workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"avx", "other"}}, model.ErrCapabilityMismatch, "gpu,zeta"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := c.setup(h)
				h.unchanged(id, func() {
					_, err := h.s.ClaimGrantIssue(h.ctx, &model.ClaimGrantIssueParams{
						ID: id, WorkerID: c.worker.ID, WorkerInstanceID: c.worker.Instance,
						Capabilities: c.worker.Caps, GrantTTL: grantTTL, Now: at(time.Second),
					})
					if e := modelErr(t, err, c.want); e.Detail != c.detail {
						t.Fatalf("detail %q, want %q", e.Detail, c.detail)
					}
				})
			})
		}
	})

	// A lapsed grant is replaced by a new one.
	t.Run("GrantReplacesExpired", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0))
		h.grant(id, wB, at(0))
		h.grant(id, wA, at(grantTTL+time.Millisecond))
		g := h.describe(id).Grant
		if g == nil || g.WorkerID != wA.ID || !g.ExpiresAt.Equal(at(2*grantTTL+time.Millisecond)) {
			t.Fatalf("grant %+v", g)
		}
	})

	// ExecutionClaim needs a claimable execution and the caller's own live
	// grant; a grant is valid up to and including its expiry time.
	t.Run("ClaimErrors", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name  string
			setup func(h *harness) model.ExecutionID
			now   time.Time
			want  *model.Error
		}{
			{"no_grant", func(h *harness) model.ExecutionID { return h.create(at(0)) }, at(time.Second), model.ErrInvalidClaimGrant},
			{"grant_of_other_worker", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wB, at(0))
				return id
			}, at(time.Second), model.ErrInvalidClaimGrant},
			{"grant_expired", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				return id
			}, at(grantTTL + time.Millisecond), model.ErrClaimGrantExpired},
			{"grant_at_expiry", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				return id
			}, at(grantTTL), nil},
			{"delayed", func(h *harness) model.ExecutionID { return h.create(at(0), withDelay(at(time.Hour))) }, at(time.Second), model.ErrNotLeaseable},
			{"blocked", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				h.block(id, model.PausedByOperator, at(0))
				return id
			}, at(time.Second), model.ErrNotLeaseable},
			{"grant_already_consumed", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(0)})).must(h.t)
				return id
			}, at(time.Second), model.ErrNotLeaseable},
			{"terminal", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				h.cancelOp(id, at(0))
				return id
			}, at(time.Second), model.ErrNotLeaseable},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := c.setup(h)
				p := &model.ExecutionClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: c.now}
				if c.want == nil {
					cr := call(h.s.ExecutionClaim(h.ctx, p)).must(t)
					if cr.Lease.ID != p.LeaseID {
						t.Fatalf("claimed with lease %v", cr.Lease.ID)
					}
					h.wantState(id, stActive)
					return
				}
				h.unchanged(id, func() {
					_, err := h.s.ExecutionClaim(h.ctx, p)
					wantErr(t, err, c.want)
				})
			})
		}
	})

	// A claim or reclaim grant is consumed only by the worker instance it
	// was issued to, and only while that claimer's capabilities (given at
	// the claim) still cover the execution's requirement: another
	// instance, or another worker with the capabilities, is refused with
	// invalid_claim_grant; a claimer without them with capability_mismatch.
	// A refusal changes nothing and leaves the grant usable by its owner.
	t.Run("GrantBelongsToClaimer", func(t *testing.T) {
		t.Parallel()
		gpuA := workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"gpu"}}
		cases := []struct {
			name    string
			claimer workerRef
			want    *model.Error
		}{
			{"other_worker", workerRef{ID: wB.ID, Instance: wB.Instance, Caps: model.Capabilities{"gpu"}}, model.ErrInvalidClaimGrant},
			{"other_instance", workerRef{ID: wA.ID, Instance: "worker-a-2", Caps: model.Capabilities{"gpu"}}, model.ErrInvalidClaimGrant},
			{"capability_lost", workerRef{ID: wA.ID, Instance: wA.Instance}, model.ErrCapabilityMismatch},
			{"capability_other", workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"cpu"}}, model.ErrCapabilityMismatch},
		}
		for _, c := range cases {
			t.Run("claim/"+c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := h.create(at(0), withCaps("gpu"))
				h.grant(id, gpuA, at(0))
				h.unchanged(id, func() {
					_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{
						ID: id, Capabilities: c.claimer.Caps, LeaseRequest: h.leaseReq(c.claimer, leaseTTL), Now: at(time.Second)})
					wantErr(t, err, c.want)
				})
				cr := call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{
					ID: id, Capabilities: gpuA.Caps, LeaseRequest: h.leaseReq(gpuA, leaseTTL), Now: at(time.Second)})).must(t)
				if cr.Lease.WorkerInstanceID != gpuA.Instance {
					t.Fatalf("lease under %v", cr.Lease.WorkerInstanceID)
				}
			})
			t.Run("reclaim/"+c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := h.create(at(0), withCaps("gpu"))
				h.claim(id, gpuA, at(0))
				h.markExpired(id, at(leaseTTL))
				h.reclaimGrant(id, gpuA, at(leaseTTL))
				h.unchanged(id, func() {
					_, err := h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{
						ID: id, Capabilities: c.claimer.Caps, LeaseRequest: h.leaseReq(c.claimer, leaseTTL), Now: at(leaseTTL)})
					wantErr(t, err, c.want)
				})
				res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{
					ID: id, Capabilities: gpuA.Caps, LeaseRequest: h.leaseReq(gpuA, leaseTTL), Now: at(leaseTTL)})).must(t)
				if res.Claimed == nil || res.Claimed.Lease.WorkerInstanceID != gpuA.Instance {
					t.Fatalf("reclaim %+v", res)
				}
			})
		}
	})

	// ExecutionGrantAndClaim needs an eligible execution without a live
	// grant whose capabilities the worker has.
	t.Run("GrantAndClaimErrors", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			setup  func(h *harness) model.ExecutionID
			caps   model.Capabilities
			want   *model.Error
			detail string
		}{
			{"delayed", func(h *harness) model.ExecutionID { return h.create(at(0), withDelay(at(time.Hour))) }, nil, model.ErrNotEligible, ""},
			{"blocked", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.block(id, model.WaitingForBudget, at(0))
				return id
			}, nil, model.ErrNotEligible, ""},
			{"active", func(h *harness) model.ExecutionID { id, _ := h.active(at(0)); return id }, nil, model.ErrNotEligible, ""},
			{"terminal", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.cancelOp(id, at(0))
				return id
			}, nil, model.ErrNotEligible, ""},
			{"live_grant_of_other_worker", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wB, at(0))
				return id
			}, nil, model.ErrGrantAlreadyExists, ""},
			{"own_live_grant", func(h *harness) model.ExecutionID {
				id := h.create(at(0))
				h.grant(id, wA, at(0))
				return id
			}, nil, model.ErrGrantAlreadyExists, ""},
			{"capability_mismatch", func(h *harness) model.ExecutionID {
				return h.create(at(0), withCaps("b", "a", "c"))
			}, model.Capabilities{"b"}, model.ErrCapabilityMismatch, "a,c"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := c.setup(h)
				h.unchanged(id, func() {
					_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
						ID: id, Capabilities: c.caps, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(time.Second),
					})
					if e := modelErr(t, err, c.want); e.Detail != c.detail {
						t.Fatalf("detail %q, want %q", e.Detail, c.detail)
					}
				})
			})
		}
	})

	// A lapsed grant of another worker does not stop grant-and-claim, and a
	// worker with a superset of the required capabilities may claim.
	t.Run("GrantAndClaim", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withCaps("gpu"))
		h.grant(id, workerRef{ID: wB.ID, Instance: wB.Instance, Caps: model.Capabilities{"gpu"}}, at(0))
		cr := h.claim(id, workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"cpu", "gpu"}}, at(grantTTL+time.Millisecond))
		if cr.Lease.WorkerID != wA.ID || cr.Lease.Epoch != 1 || cr.AttemptType != model.AttemptInitial {
			t.Fatalf("claim result %+v", cr)
		}
		if g := h.describe(id).Grant; g != nil {
			t.Fatalf("grant %+v left after the claim", g)
		}
	})

	// An execution a worker delayed resumes its attempt on the next claim,
	// by any claim path: same attempt id and index, the next epoch, a new
	// lease.
	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		paths := []struct {
			name  string
			claim func(h *harness, id model.ExecutionID, req model.LeaseRequest, now time.Time) *model.ClaimResult
		}{
			{"ClaimNext", func(h *harness, id model.ExecutionID, req model.LeaseRequest, now time.Time) *model.ClaimResult {
				res := call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
					Partition: id.Partition(), Lane: laneA, ScanLimit: 10, LeaseRequest: req, Now: now,
				})).must(h.t)
				return res.Claimed
			}},
			{"GrantThenClaim", func(h *harness, id model.ExecutionID, req model.LeaseRequest, now time.Time) *model.ClaimResult {
				h.grant(id, wB, now)
				return call(h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: req, Now: now})).must(h.t)
			}},
			{"GrantAndClaim", func(h *harness, id model.ExecutionID, req model.LeaseRequest, now time.Time) *model.ClaimResult {
				return call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: req, Now: now})).must(h.t)
			}},
		}
		for _, path := range paths {
			t.Run(path.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, first := h.active(at(0))
				h.delay(id, first.Fence(), at(10*time.Second), at(time.Second))
				if st := h.promote(id, laneA, at(10*time.Second)); st != model.PromotePromoted {
					t.Fatalf("promote: %s", st)
				}
				before := h.describe(id)
				req := h.leaseReq(wB, leaseTTL)
				cr := path.claim(h, id, req, at(11*time.Second))
				if cr == nil {
					t.Fatal("nothing claimed")
				}
				lease := model.Lease{
					ID: req.LeaseID, Epoch: 2, WorkerID: wB.ID, WorkerInstanceID: wB.Instance,
					AcquiredAt: at(11 * time.Second), ExpiresAt: at(11*time.Second + leaseTTL), RenewBy: at(11*time.Second + renewIn),
				}
				if !cr.Resumed || cr.AttemptID != first.AttemptID || cr.AttemptIndex != 0 || cr.AttemptType != model.AttemptInitial {
					t.Fatalf("resume claim %+v", cr)
				}
				wantEqual(t, "resumed lease", lease, cr.Lease)
				want := cloneSnapshot(before)
				want.State, want.PublicState = stActive, model.PublicActive
				want.LastMutationAt, want.LastTransitionAt = at(11*time.Second), at(11*time.Second)
				want.LeaseEpoch = 2
				want.CurrentLease = &lease
				want.Grant = nil
				h.wantSnapshot(want)
				h.wantIndexes(id, activeIndexes(laneA, wB.Instance)...)
				h.wantAttempts(id, []model.Attempt{{
					Index: 0, ID: first.AttemptID, Type: model.AttemptInitial, Status: model.AttemptStarted,
					LeaseID: req.LeaseID, LeaseEpoch: 2, WorkerID: wB.ID, WorkerInstanceID: wB.Instance,
					StartedAt: at(0),
				}})
				if got, want := h.historyKinds(id), []model.LeaseEventKind{model.LeaseAcquired, model.LeaseReleased, model.LeaseResumed}; !cmp.Equal(got, want) {
					t.Fatalf("history %v, want %v", got, want)
				}
			})
		}
	})

	// Claim-next walks at most ScanLimit heads in priority order; heads a
	// live worker could serve are skipped and left eligible.
	t.Run("ClaimNextScanLimit", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		gpu1 := h.create(at(0), withPriority(3), withCaps("gpu"))
		gpu2 := h.create(at(0), withPriority(2), withCaps("gpu"))
		plain := h.create(at(0), withPriority(1))
		live := model.Capabilities{"gpu"}
		res := h.claimNext(wA, live, 2, at(time.Second))
		if res.Claimed != nil || res.Skipped != 2 || len(res.Blocked) != 0 {
			t.Fatalf("scan limit 2: %+v", res)
		}
		for _, id := range []model.ExecutionID{gpu1, gpu2, plain} {
			h.wantState(id, stEligible(model.AttemptPendingFirst))
		}
		res = h.claimNext(wA, live, 3, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != plain || res.Skipped != 2 || len(res.Blocked) != 0 {
			t.Fatalf("scan limit 3: %+v", res)
		}
		res = h.claimNext(workerRef{ID: wB.ID, Instance: wB.Instance, Caps: live}, live, 1, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != gpu1 || res.Skipped != 0 {
			t.Fatalf("capable worker: %+v", res)
		}
	})

	// A head no live worker can serve moves to blocked:route with the
	// missing capabilities in its detail; the walk goes on.
	t.Run("ClaimNextBlocksUnservable", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		tpu := h.create(at(0), withPriority(3), withCaps("tpu", "gpu", "aaa"))
		gpu := h.create(at(0), withPriority(2), withCaps("gpu"))
		plain := h.create(at(0), withPriority(1))
		before := h.describe(tpu)
		res := h.claimNext(wA, model.Capabilities{"gpu"}, 10, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != plain || res.Skipped != 1 ||
			!cmp.Equal(res.Blocked, []model.ExecutionID{tpu}, cmpOpts...) {
			t.Fatalf("claim next: %+v", res)
		}
		want := cloneSnapshot(before)
		want.State = stBlocked(model.BlockedByRoute, model.WaitingForCapableWorker, "no live worker has: aaa,tpu", model.AttemptPendingFirst)
		want.PublicState = model.PublicWaiting
		want.LastMutationAt, want.LastTransitionAt = at(time.Second), at(time.Second)
		want.LastCapabilityMismatchAt = at(time.Second)
		h.wantSnapshot(want)
		h.wantIndexes(tpu, ixAll, ixLane(laneA, "blocked:route"))
		h.wantState(gpu, stEligible(model.AttemptPendingFirst))
	})

	// A head with another worker's live grant is skipped; the caller's own
	// grant is claimed; a lapsed grant binds nobody.
	t.Run("ClaimNextGrants", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		others := h.create(at(0), withPriority(9))
		mine := h.create(at(0), withPriority(8))
		h.grant(others, wB, at(0))
		h.grant(mine, wA, at(0))
		res := h.claimNext(wA, nil, 10, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != mine || res.Skipped != 1 {
			t.Fatalf("own grant: %+v", res)
		}
		h.wantState(others, stEligible(model.AttemptPendingFirst))
		res = h.claimNext(wA, nil, 10, at(grantTTL+time.Millisecond))
		if res.Claimed == nil || res.Claimed.ID != others || res.Skipped != 0 {
			t.Fatalf("lapsed grant of another worker: %+v", res)
		}
	})

	// A grant names a worker instance: another instance with the same
	// worker id passes it as it passes another worker's. (Every process
	// left at the default WorkerID shares one id; when an instance could
	// take another's grant, they all chased the same head, and a claim
	// with admission ran about one at a time across a fleet: found by the
	// chaos admission drain, internal/chaos/quota_test.go.)
	t.Run("ClaimNextGrantsPerInstance", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		wA2 := workerRef{ID: wA.ID, Instance: "worker-a-2"}
		granted := h.create(at(0), withPriority(9))
		next := h.create(at(0), withPriority(8))
		h.grant(granted, wA, at(0))
		res := h.claimNext(wA2, nil, 10, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != next || res.Skipped != 1 {
			t.Fatalf("another instance's grant: %+v", res)
		}
		h.wantState(granted, stEligible(model.AttemptPendingFirst))
		res = h.claimNext(wA, nil, 10, at(time.Second))
		if res.Claimed == nil || res.Claimed.ID != granted || res.Skipped != 0 {
			t.Fatalf("the granted instance's claim-next: %+v", res)
		}
	})

	// Claim-next only looks at the given lane of the given partition.
	t.Run("ClaimNextScope", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		res := h.claimNext(wA, nil, 10, at(0))
		if res.Claimed != nil || res.Skipped != 0 || len(res.Blocked) != 0 {
			t.Fatalf("empty store: %+v", res)
		}
		h.create(at(0), withLane(laneB))
		h.create(at(0), withDelay(at(time.Hour)))
		if h.p1 != h.p0 {
			h.create(at(0), func(p *model.ExecutionCreateParams) { p.ID = h.newID(h.p1) })
		}
		if res := h.claimNext(wA, nil, 10, at(time.Second)); res.Claimed != nil || res.Skipped != 0 {
			t.Fatalf("claimed outside the lane's eligible index: %+v", res)
		}
	})

	// Every admission block moves an eligible execution to the blocked index
	// of its reason, drops its grant and keeps its attempt state; unblock
	// with the same reason returns it to the eligible index.
	t.Run("BlockUnblock", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			reason model.BlockingReason
			es     model.EligibilityState
			index  string
		}{
			{model.WaitingForBudget, model.BlockedByBudget, "blocked:budget"},
			{model.WaitingForQuota, model.BlockedByQuota, "blocked:quota"},
			{model.WaitingForCapableWorker, model.BlockedByRoute, "blocked:route"},
			{model.PausedByOperator, model.BlockedByOperator, "blocked:operator"},
			{model.PausedByPolicy, model.BlockedByLaneState, "blocked:lane_state"},
		}
		for _, c := range cases {
			t.Run(c.reason.String(), func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := h.create(at(0), blockable(c.reason))
				h.grant(id, wA, at(0))
				before := h.describe(id)
				p := &model.ExecutionBlockParams{ID: id, Reason: c.reason, Detail: "held by admission", Now: at(time.Second)}
				if c.reason == model.WaitingForBudget {
					p.Budget = heldBudget
				}
				res := call(h.s.ExecutionBlock(h.ctx, p)).must(t)
				if res.EligibilityState != c.es {
					t.Fatalf("eligibility %v, want %v", res.EligibilityState, c.es)
				}
				want := cloneSnapshot(before)
				want.State = stBlocked(c.es, c.reason, "held by admission", model.AttemptPendingFirst)
				want.PublicState = want.State.PublicState()
				want.LastMutationAt, want.LastTransitionAt = at(time.Second), at(time.Second)
				want.Grant = nil
				h.wantSnapshot(want)
				h.wantIndexes(id, ixAll, ixLane(laneA, c.index))

				other := model.PausedByOperator
				if c.reason == other {
					other = model.WaitingForBudget
				}
				h.unchanged(id, func() {
					_, err := h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: id, ExpectedReason: other, Now: at(2 * time.Second)})
					wantErr(t, err, model.ErrNotEligible)
				})
				call(h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: id, ExpectedReason: c.reason, Now: at(2 * time.Second)})).must(t)
				want = cloneSnapshot(before)
				want.LastMutationAt, want.LastTransitionAt = at(2*time.Second), at(2*time.Second)
				want.Grant = nil
				h.wantSnapshot(want)
				h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
			})
		}
	})

	// Blocking keeps the attempt state: a blocked interrupted attempt still
	// resumes once unblocked.
	t.Run("BlockKeepsAttempt", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.delay(id, cr.Fence(), at(0), at(time.Second))
		h.block(id, model.WaitingForBudget, at(2*time.Second))
		h.wantState(id, stBlocked(model.BlockedByBudget, model.WaitingForBudget, "held", model.AttemptInterrupted))
		call(h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: id, ExpectedReason: model.WaitingForBudget, Now: at(3 * time.Second)})).must(t)
		h.wantState(id, stEligible(model.AttemptInterrupted))
		if res := h.claim(id, wA, at(4*time.Second)); !res.Resumed || res.AttemptID != cr.AttemptID {
			t.Fatalf("claim after unblock: %+v", res)
		}
	})

	// Only an eligible execution can be blocked (a terminal one reports
	// execution_not_active); only an execution blocked for the expected
	// reason can be unblocked.
	t.Run("BlockErrors", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		delayed := h.create(at(0), withDelay(at(time.Hour)))
		active, _ := h.active(at(0))
		blocked := h.create(at(0), blockable(model.WaitingForQuota))
		h.block(blocked, model.WaitingForQuota, at(0))
		terminal := h.create(at(0))
		h.cancelOp(terminal, at(0))
		eligible := h.create(at(0))
		for _, id := range []model.ExecutionID{delayed, active, blocked} {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForBudget, Budget: heldBudget, Now: at(time.Second)})
				wantErr(t, err, model.ErrNotEligible)
			})
		}
		h.unchanged(terminal, func() {
			_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: terminal, Reason: model.WaitingForBudget, Budget: heldBudget, Now: at(time.Second)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeCancelled})
		})
		for _, id := range []model.ExecutionID{delayed, active, terminal, eligible} {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: id, ExpectedReason: model.WaitingForBudget, Now: at(time.Second)})
				wantErr(t, err, model.ErrNotEligible)
			})
		}
	})
}

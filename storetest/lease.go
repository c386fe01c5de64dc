package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testLease states renewal, fencing, expiry marks, revocation, reclaim
// grants, reclaims and crash recovery.
func testLease(t *testing.T, newStore NewStoreFunc) {
	// Renewal moves the lease's expiry and its lease_expiry entry, and
	// nothing else.
	t.Run("Renew", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		before := h.describe(id)
		res := call(h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{
			ID: id, Fence: cr.Fence(), LeaseTTL: time.Minute, Now: at(10 * time.Second),
		})).must(t)
		if !res.ExpiresAt.Equal(at(70*time.Second)) || !res.RenewBy.Equal(at(50*time.Second)) {
			t.Fatalf("renew result %+v", res)
		}
		want := cloneSnapshot(before)
		want.LastMutationAt = at(10 * time.Second)
		want.CurrentLease.ExpiresAt, want.CurrentLease.RenewBy = at(70*time.Second), at(50*time.Second)
		h.wantSnapshot(want)
		h.wantIndexes(id, activeIndexes(laneA, wA.Instance)...)
		h.wantHistory(id, []model.LeaseEvent{{
			Kind: model.LeaseAcquired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(0),
		}})
		due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
			Partition: h.p0, Index: model.IndexLeaseExpiry, Now: at(leaseTTL), Limit: 10,
		})).must(t)
		if len(due.Items) != 0 || !due.NextDueAt.Equal(at(70*time.Second)) {
			t.Fatalf("lease_expiry after renew: %+v", due)
		}
	})

	// Every fenced worker operation checks, in order, the phase (not active:
	// execution_not_active with the state), revocation, expiry (marked, or
	// the expiry time reached) and then all three parts of the fence; a
	// refusal writes nothing.
	t.Run("Fencing", func(t *testing.T) {
		t.Parallel()
		ops := []struct {
			name string
			do   func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error
		}{
			{"Renew", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: f, LeaseTTL: leaseTTL, Now: now})
				return err
			}},
			{"UpdateProgress", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.ExecutionUpdateProgress(h.ctx, &model.ExecutionUpdateProgressParams{ID: id, Fence: f, Percent: 50, Message: "half", Now: now})
				return err
			}},
			{"Complete", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Result: []byte("r"), Now: now})
				return err
			}},
			{"Fail", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: f, Reason: "x", Now: now})
				return err
			}},
			{"Delay", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: f, DelayUntil: now.Add(time.Hour), Now: now})
				return err
			}},
			{"Cancel", func(h *harness, id model.ExecutionID, f model.Fence, now time.Time) error {
				_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Reason: "x", Fence: f, Now: now})
				return err
			}},
		}
		// Each case brings an execution claimed at 0 by wA (fence f) into a
		// state and says which fence to present when, and what comes back.
		type scenario struct {
			fence     model.Fence
			now       time.Time
			want      *model.Error
			notActive *model.NotActiveState
		}
		cases := []struct {
			name string
			prep func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario
		}{
			{"not_active_runnable", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				h.markExpired(id, at(leaseTTL))
				call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL)})).must(h.t)
				stale := cr.Fence()
				stale.LeaseEpoch = 7
				return scenario{fence: stale, now: at(leaseTTL + time.Second), want: model.ErrNotActive,
					notActive: &model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone, LeaseEpoch: 1, AttemptID: cr.AttemptID}}
			}},
			{"not_active_terminal", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				h.cancelOp(id, at(time.Second))
				return scenario{fence: cr.Fence(), now: at(2 * time.Second), want: model.ErrNotActive,
					notActive: &model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeCancelled, LeaseEpoch: 1, AttemptID: cr.AttemptID}}
			}},
			{"revoked_before_expired_and_identity", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				h.revoke(id, at(time.Second))
				stale := cr.Fence()
				stale.LeaseID = h.leaseID()
				return scenario{fence: stale, now: at(leaseTTL + time.Second), want: model.ErrLeaseRevoked}
			}},
			{"marked_expired_before_identity", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				h.markExpired(id, at(leaseTTL))
				stale := cr.Fence()
				stale.AttemptID = h.attemptID()
				return scenario{fence: stale, now: at(leaseTTL), want: model.ErrLeaseExpired}
			}},
			{"expiry_time_reached", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				return scenario{fence: cr.Fence(), now: at(leaseTTL), want: model.ErrLeaseExpired}
			}},
			{"expired_before_identity", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				stale := cr.Fence()
				stale.LeaseEpoch++
				return scenario{fence: stale, now: at(leaseTTL + time.Second), want: model.ErrLeaseExpired}
			}},
			{"stale_lease_id", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				stale := cr.Fence()
				stale.LeaseID = h.leaseID()
				return scenario{fence: stale, now: at(time.Second), want: model.ErrStaleLease}
			}},
			{"stale_epoch", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				stale := cr.Fence()
				stale.LeaseEpoch++
				return scenario{fence: stale, now: at(time.Second), want: model.ErrStaleLease}
			}},
			{"stale_attempt_id", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				stale := cr.Fence()
				stale.AttemptID = h.attemptID()
				return scenario{fence: stale, now: at(time.Second), want: model.ErrStaleLease}
			}},
			{"reclaimed_by_another_worker", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				h.markExpired(id, at(leaseTTL))
				h.reclaimGrant(id, wB, at(leaseTTL))
				call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL)})).must(h.t)
				return scenario{fence: cr.Fence(), now: at(leaseTTL + time.Second), want: model.ErrStaleLease}
			}},
			{"valid", func(h *harness, id model.ExecutionID, cr *model.ClaimResult) scenario {
				return scenario{fence: cr.Fence(), now: at(leaseTTL - time.Millisecond)}
			}},
		}
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				t.Parallel()
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						h := setup(t, newStore)
						id, cr := h.active(at(0))
						sc := c.prep(h, id, cr)
						if sc.want == nil {
							if err := op.do(h, id, sc.fence, sc.now); err != nil {
								t.Fatalf("valid fence refused: %v", err)
							}
							return
						}
						h.unchanged(id, func() {
							err := op.do(h, id, sc.fence, sc.now)
							if sc.notActive != nil {
								wantNotActive(t, err, *sc.notActive)
								return
							}
							wantErr(t, err, sc.want)
						})
					})
				}
			})
		}
	})

	// Mark-expired marks a lease whose expiry time has come (the expiry
	// time itself included) and reports every other case by status.
	t.Run("MarkExpired", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withTimeout(time.Hour))
		before := h.describe(id)
		mark := func(id model.ExecutionID, now time.Time) model.MarkExpiredOutcome {
			return call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now})).must(t).Outcome
		}
		h.unchanged(id, func() {
			if st := mark(id, at(leaseTTL-time.Millisecond)); st != model.MarkExpiredNotYetExpired {
				t.Fatalf("before expiry: %q", st)
			}
		})
		if st := mark(id, at(leaseTTL)); st != model.MarkExpiredMarked {
			t.Fatalf("at expiry: %q", st)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stLeaseExpired, model.PublicActive
		want.LastMutationAt, want.LastTransitionAt = at(leaseTTL), at(leaseTTL)
		want.LeaseExpiredAt = at(leaseTTL)
		h.wantSnapshot(want)
		h.wantIndexes(id, activeIndexes(laneA, wA.Instance, ixTimeout)...)
		h.wantHistory(id, []model.LeaseEvent{
			{Kind: model.LeaseAcquired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(0)},
			{Kind: model.LeaseExpired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(leaseTTL)},
		})
		h.unchanged(id, func() {
			if st := mark(id, at(leaseTTL+time.Second)); st != model.MarkExpiredAlreadyExpired {
				t.Fatalf("marked twice: %q", st)
			}
		})

		revoked, _ := h.active(at(0))
		h.revoke(revoked, at(time.Second))
		eligible := h.create(at(0))
		terminal := h.create(at(0))
		h.cancelOp(terminal, at(0))
		for _, c := range []struct {
			id   model.ExecutionID
			want model.MarkExpiredOutcome
		}{
			{revoked, model.MarkExpiredAlreadyRevoked},
			{eligible, model.MarkExpiredNotActiveCleaned},
			{terminal, model.MarkExpiredNotActiveCleaned},
		} {
			h.unchanged(c.id, func() {
				if st := mark(c.id, at(time.Hour)); st != c.want {
					t.Fatalf("mark %v: %q, want %q", c.id, st, c.want)
				}
			})
		}
		if st := mark(h.newID(h.p0), at(time.Hour)); st != model.MarkExpiredNotFoundCleaned {
			t.Fatalf("unknown execution: %q", st)
		}
	})

	// Revoke takes the lease away: no current lease, out of the worker's
	// lease index, still active and in lease_expiry, re-scored to the
	// revoke time so the lease-expiry scan recovers it.
	t.Run("Revoke", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withTimeout(time.Hour))
		before := h.describe(id)
		h.unchanged(id, func() {
			_, err := h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, ExpectedLeaseID: h.leaseID(), Now: at(time.Second)})
			wantErr(t, err, model.ErrStaleLease)
		})
		res := call(h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{
			ID: id, ExpectedLeaseID: cr.Lease.ID, Reason: "drain", Now: at(5 * time.Second),
		})).must(t)
		if *res != (model.LeaseRevokeResult{Outcome: model.RevokeRevoked, LeaseID: cr.Lease.ID, LeaseEpoch: 1}) {
			t.Fatalf("revoke result %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stLeaseRevoked, model.PublicActive
		want.LastMutationAt, want.LastTransitionAt = at(5*time.Second), at(5*time.Second)
		want.CurrentLease = nil
		want.LeaseRevokedAt, want.RevokeReason = at(5*time.Second), "drain"
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "active"), ixLease, ixTimeout)
		h.wantHistory(id, []model.LeaseEvent{
			{Kind: model.LeaseAcquired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(0)},
			{Kind: model.LeaseRevoked, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(5 * time.Second), Reason: "drain"},
		})
		due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{
			Partition: h.p0, Index: model.IndexLeaseExpiry, Now: at(5 * time.Second), Limit: 10,
		})).must(t)
		if len(due.Items) != 1 || due.Items[0].ID != id || !due.Items[0].DueAt.Equal(at(5*time.Second)) {
			t.Fatalf("lease_expiry after revoke: %+v", due.Items)
		}
		h.unchanged(id, func() {
			res := call(h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, Now: at(6 * time.Second)})).must(t)
			if res.Outcome != model.RevokeAlreadyRevoked || res.LeaseEpoch != 1 {
				t.Fatalf("revoked twice: %+v", res)
			}
		})
	})

	// Revoke reports an expired lease by status and refuses an execution
	// that is not active.
	t.Run("RevokeStatuses", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		expired, cr := h.active(at(0))
		h.markExpired(expired, at(leaseTTL))
		h.unchanged(expired, func() {
			res := call(h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: expired, Now: at(leaseTTL)})).must(t)
			if *res != (model.LeaseRevokeResult{Outcome: model.RevokeAlreadyExpired, LeaseID: cr.Lease.ID, LeaseEpoch: 1}) {
				t.Fatalf("revoke of an expired lease: %+v", res)
			}
		})
		eligible := h.create(at(0))
		done, dcr := h.active(at(0))
		h.complete(done, dcr.Fence(), at(time.Second))
		for _, c := range []struct {
			id   model.ExecutionID
			want model.NotActiveState
		}{
			{eligible, model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone}},
			{done, model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeSuccess, LeaseEpoch: 1, AttemptID: dcr.AttemptID}},
		} {
			h.unchanged(c.id, func() {
				_, err := h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: c.id, Now: at(2 * time.Second)})
				wantNotActive(t, err, c.want)
			})
		}
	})

	// A reclaim grant needs an active execution whose lease expired or was
	// revoked, no live grant, and the required capabilities.
	t.Run("ReclaimGrant", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withCaps("gpu"))
		h.claim(id, workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"gpu"}}, at(0))
		gpuB := workerRef{ID: wB.ID, Instance: wB.Instance, Caps: model.Capabilities{"gpu"}}
		issue := func(w workerRef, now time.Time) error {
			_, err := h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{
				ID: id, WorkerID: w.ID, WorkerInstanceID: w.Instance, Capabilities: w.Caps, GrantTTL: grantTTL, Now: now,
			})
			return err
		}
		h.unchanged(id, func() { wantErr(t, issue(gpuB, at(time.Second)), model.ErrNotReclaimable) })
		h.markExpired(id, at(leaseTTL))
		h.unchanged(id, func() {
			e := modelErr(t, issue(wB, at(leaseTTL)), model.ErrCapabilityMismatch)
			if e.Detail != "gpu" {
				t.Fatalf("detail %q", e.Detail)
			}
		})
		before := h.describe(id)
		res := call(h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{
			ID: id, WorkerID: gpuB.ID, WorkerInstanceID: gpuB.Instance, Capabilities: gpuB.Caps, GrantTTL: grantTTL, Now: at(leaseTTL + time.Second),
		})).must(t)
		if !res.ExpiresAt.Equal(at(leaseTTL + time.Second + grantTTL)) {
			t.Fatalf("grant expires at %v", res.ExpiresAt)
		}
		want := cloneSnapshot(before)
		want.LastMutationAt = at(leaseTTL + time.Second)
		want.Grant = &model.Grant{Kind: model.GrantReclaim, WorkerID: wB.ID, WorkerInstanceID: wB.Instance,
			CreatedAt: at(leaseTTL + time.Second), ExpiresAt: at(leaseTTL + time.Second + grantTTL)}
		h.wantSnapshot(want)
		h.wantIndexes(id, activeIndexes(laneA, wA.Instance)...)
		h.unchanged(id, func() {
			wantErr(t, issue(gpuB, at(leaseTTL+time.Second+grantTTL)), model.ErrGrantAlreadyExists)
		})
		call(h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{
			ID: id, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, Capabilities: model.Capabilities{"gpu"},
			GrantTTL: grantTTL, Now: at(leaseTTL + time.Second + grantTTL + time.Millisecond),
		})).must(t)

		for _, c := range []struct {
			name  string
			setup func() model.ExecutionID
		}{
			{"eligible", func() model.ExecutionID { return h.create(at(0)) }},
			{"terminal", func() model.ExecutionID {
				id := h.create(at(0))
				h.cancelOp(id, at(0))
				return id
			}},
		} {
			id := c.setup()
			h.unchanged(id, func() {
				_, err := h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{
					ID: id, WorkerID: wB.ID, WorkerInstanceID: wB.Instance, GrantTTL: grantTTL, Now: at(time.Minute),
				})
				wantErr(t, err, model.ErrNotReclaimable)
			})
		}
	})

	// Reclaim ends the old attempt interrupted_reclaimed and starts a new
	// attempt of type reclaim for the grant's worker, with the next epoch;
	// the old holder's lease index entry goes.
	t.Run("Reclaim", func(t *testing.T) {
		t.Parallel()
		for _, how := range []string{"expired", "revoked"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, first := h.active(at(0), withTimeout(time.Hour))
				now := at(leaseTTL)
				if how == "expired" {
					h.markExpired(id, now)
				} else {
					h.revoke(id, now)
				}
				h.reclaimGrant(id, wB, now)
				before := h.describe(id)
				req := h.leaseReq(wB, leaseTTL)
				res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: req, Now: now.Add(time.Second)})).must(t)
				t1 := now.Add(time.Second)
				lease := model.Lease{ID: req.LeaseID, Epoch: 2, WorkerID: wB.ID, WorkerInstanceID: wB.Instance,
					AcquiredAt: t1, ExpiresAt: t1.Add(leaseTTL), RenewBy: t1.Add(renewIn)}
				wantCR := &model.ClaimResult{
					ID: id, Lease: lease, AttemptID: req.AttemptID, AttemptIndex: 1, AttemptType: model.AttemptReclaim,
					Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("payload"), CreatedAt: at(0),
					TimeoutAt: t1.Add(time.Hour),
				}
				if res.Outcome != model.ReclaimClaimed {
					t.Fatalf("status %q", res.Outcome)
				}
				if d := cmp.Diff(wantCR, res.Claimed, cmpOpts...); d != "" {
					t.Fatalf("reclaim claim (-want +got):\n%s", d)
				}
				want := cloneSnapshot(before)
				want.State, want.PublicState = stActive, model.PublicActive
				want.LastMutationAt, want.LastTransitionAt = t1, t1
				want.TotalAttempts, want.ReclaimCount = 2, 1
				want.CurrentAttempt = &model.AttemptRef{ID: req.AttemptID, Index: 1}
				want.LeaseEpoch = 2
				want.CurrentLease = &lease
				want.LeaseExpiredAt, want.LeaseRevokedAt, want.RevokeReason = time.Time{}, time.Time{}, ""
				want.Grant = nil
				h.wantSnapshot(want)
				h.wantIndexes(id, activeIndexes(laneA, wB.Instance, ixTimeout)...)
				h.wantAttempts(id, []model.Attempt{
					{Index: 0, ID: first.AttemptID, Type: model.AttemptInitial, Status: model.AttemptInterruptedReclaimed,
						LeaseID: first.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
						StartedAt: at(0), EndedAt: t1},
					{Index: 1, ID: req.AttemptID, Type: model.AttemptReclaim, Status: model.AttemptStarted,
						LeaseID: req.LeaseID, LeaseEpoch: 2, WorkerID: wB.ID, WorkerInstanceID: wB.Instance, StartedAt: t1},
				})
				hist := h.history(id)
				kinds := []model.LeaseEventKind{model.LeaseAcquired, model.LeaseExpired, model.LeaseReclaimed, model.LeaseAcquired}
				if how == "revoked" {
					kinds[1] = model.LeaseRevoked
				}
				if got := h.historyKinds(id); !cmp.Equal(got, kinds) {
					t.Fatalf("history %v, want %v", got, kinds)
				}
				last := hist[len(hist)-1]
				if last.LeaseID != req.LeaseID || last.LeaseEpoch != 2 || last.AttemptIndex != 1 || last.WorkerInstanceID != wB.Instance {
					t.Fatalf("acquired event %+v", last)
				}
			})
		}
	})

	// Reclaim needs a reclaimable execution and the caller's own live
	// reclaim grant, valid up to and including its expiry.
	t.Run("ReclaimErrors", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name  string
			setup func(h *harness) model.ExecutionID
			now   time.Time
			want  *model.Error
		}{
			{"leased", func(h *harness) model.ExecutionID { id, _ := h.active(at(0)); return id }, at(time.Second), model.ErrNotReclaimable},
			{"eligible", func(h *harness) model.ExecutionID { return h.create(at(0)) }, at(time.Second), model.ErrNotReclaimable},
			{"no_grant", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0))
				h.markExpired(id, at(leaseTTL))
				return id
			}, at(leaseTTL), model.ErrInvalidClaimGrant},
			{"grant_of_other_worker", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0))
				h.markExpired(id, at(leaseTTL))
				h.reclaimGrant(id, wA, at(leaseTTL))
				return id
			}, at(leaseTTL), model.ErrInvalidClaimGrant},
			{"grant_expired", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0))
				h.markExpired(id, at(leaseTTL))
				h.reclaimGrant(id, wB, at(leaseTTL))
				return id
			}, at(leaseTTL + grantTTL + time.Millisecond), model.ErrClaimGrantExpired},
			{"grant_at_expiry", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0))
				h.markExpired(id, at(leaseTTL))
				h.reclaimGrant(id, wB, at(leaseTTL))
				return id
			}, at(leaseTTL + grantTTL), nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := c.setup(h)
				p := &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: c.now}
				if c.want == nil {
					res := call(h.s.ExecutionReclaim(h.ctx, p)).must(t)
					if res.Outcome != model.ReclaimClaimed || res.Claimed == nil {
						t.Fatalf("reclaim %+v", res)
					}
					return
				}
				h.unchanged(id, func() {
					_, err := h.s.ExecutionReclaim(h.ctx, p)
					wantErr(t, err, c.want)
				})
			})
		}
	})

	// Past MaxReclaims a reclaim fails the execution terminally with reason
	// max_reclaims_exceeded, closes the attempt, cleans every live index and
	// reports reclaim_cap_exceeded instead of an error.
	t.Run("ReclaimCap", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withMaxReclaims(1), withTimeout(time.Hour), withDeadline(at(24*time.Hour)))
		h.markExpired(id, at(leaseTTL))
		h.reclaimGrant(id, wB, at(leaseTTL))
		second := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL)})).must(t).Claimed
		t1 := at(2 * leaseTTL)
		h.markExpired(id, t1)
		h.reclaimGrant(id, wA, t1)
		before := h.describe(id)
		res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: t1})).must(t)
		if res.Outcome != model.ReclaimCapExceeded || res.Claimed != nil {
			t.Fatalf("reclaim over the cap: %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stTerminal(model.OutcomeFailed, model.AttemptTerminal), model.PublicFailed
		want.LastMutationAt, want.LastTransitionAt, want.TerminalAt = t1, t1, t1
		want.CurrentLease, want.Grant = nil, nil
		want.FailureReason, want.FailureCategory = "max_reclaims_exceeded", model.FailureInfraCrash
		h.wantSnapshot(want)
		h.wantIndexes(id, terminalIndexes(laneA)...)
		atts := h.attempts(id)
		if len(atts) != 2 || atts[1].ID != second.AttemptID || atts[1].Status != model.AttemptInterruptedReclaimed || !atts[1].EndedAt.Equal(t1) {
			t.Fatalf("attempts %+v", atts)
		}
	})

	// Recover returns an expired or revoked execution to the eligible index
	// to run as a new attempt of type reclaim; the retry count is untouched.
	t.Run("Recover", func(t *testing.T) {
		t.Parallel()
		for _, how := range []string{"lease_expired", "lease_revoked"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, first := h.active(at(0), withTimeout(time.Hour), withRetry(model.RetryPolicy{MaxRetries: 1}))
				now := at(leaseTTL)
				if how == "lease_expired" {
					h.markExpired(id, now)
				} else {
					h.revoke(id, now)
				}
				h.reclaimGrant(id, wB, now)
				before := h.describe(id)
				t1 := now.Add(time.Second)
				res := call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: t1})).must(t)
				if res.Outcome != model.RecoverRequeued {
					t.Fatalf("status %q", res.Outcome)
				}
				want := cloneSnapshot(before)
				want.State, want.PublicState = stEligible(model.AttemptPendingRetry), model.PublicWaiting
				want.LastMutationAt, want.LastTransitionAt = t1, t1
				want.CurrentLease, want.Grant = nil, nil
				want.ReclaimCount = 1
				want.Pending = &model.PendingAttempt{Type: model.AttemptReclaim, Reason: how, PreviousIndex: 0}
				h.wantSnapshot(want)
				h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
				h.wantAttempts(id, []model.Attempt{{
					Index: 0, ID: first.AttemptID, Type: model.AttemptInitial, Status: model.AttemptInterruptedReclaimed,
					LeaseID: first.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
					StartedAt: at(0), EndedAt: t1, FailureReason: how, FailureCategory: model.FailureInfraCrash,
				}})
				hist := h.history(id)
				if last := hist[len(hist)-1]; last.Kind != model.LeaseRecovered || last.Reason != how || !last.At.Equal(t1) {
					t.Fatalf("last history event %+v", last)
				}

				cr := h.claim(id, wB, t1)
				if cr.AttemptType != model.AttemptReclaim || cr.AttemptIndex != 1 || cr.Lease.Epoch != 2 || cr.Resumed || cr.RetryCount != 0 {
					t.Fatalf("claim after recover: %+v", cr)
				}
				s := h.describe(id)
				if s.Pending != nil || s.ReclaimCount != 1 || s.RetryCount != 0 {
					t.Fatalf("after the reclaim attempt started: pending %+v, reclaims %d, retries %d", s.Pending, s.ReclaimCount, s.RetryCount)
				}
			})
		}
	})

	// Recover refuses a leased or runnable execution, and past MaxReclaims
	// fails the execution terminally.
	t.Run("RecoverCap", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withMaxReclaims(1))
		h.unchanged(id, func() {
			_, err := h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(time.Second)})
			wantErr(t, err, model.ErrNotReclaimable)
		})
		h.markExpired(id, at(leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL)})).must(t)
		h.unchanged(id, func() {
			_, err := h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL)})
			wantErr(t, err, model.ErrNotReclaimable)
		})
		cr := h.claim(id, wA, at(leaseTTL))
		t1 := at(leaseTTL + time.Minute)
		h.markExpired(id, t1)
		res := call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: t1})).must(t)
		if res.Outcome != model.RecoverCapExceeded {
			t.Fatalf("recover over the cap: %q", res.Outcome)
		}
		s := h.wantState(id, stTerminal(model.OutcomeFailed, model.AttemptTerminal))
		if s.FailureReason != "max_reclaims_exceeded" || s.ReclaimCount != 1 || !s.TerminalAt.Equal(t1) {
			t.Fatalf("after the cap: reason %q, reclaims %d, terminal at %v", s.FailureReason, s.ReclaimCount, s.TerminalAt)
		}
		h.wantIndexes(id, terminalIndexes(laneA)...)
		if a := h.attempts(id)[1]; a.ID != cr.AttemptID || a.Status != model.AttemptInterruptedReclaimed {
			t.Fatalf("last attempt %+v", a)
		}
	})
}

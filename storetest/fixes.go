package storetest

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// testFixes pins, one subtest each, the FlowFabric defects that
// docs/ARCHITECTURE.md lists as fixed, stating the Go behaviour.
func testFixes(t *testing.T, newStore NewStoreFunc) {
	// FlowFabric stored a create with a past delay_until in the delayed
	// index with an eligible score; here it is eligible and in the eligible
	// index only.
	t.Run("CreatePastDelay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		p := h.createParams(at(time.Minute), withDelay(at(0)))
		res := call(h.s.ExecutionCreate(h.ctx, p)).must(t)
		if res.PublicState != model.PublicWaiting {
			t.Fatalf("public state %v", res.PublicState)
		}
		s := h.wantState(p.ID, stEligible(model.AttemptPendingFirst))
		if !s.DelayUntil.IsZero() {
			t.Fatalf("delay until %v", s.DelayUntil)
		}
		h.wantIndexes(p.ID, ixAll, ixLane(laneA, "eligible"))
		due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{Partition: h.p0, Index: model.IndexDelayed, Now: at(time.Hour), Limit: 10})).must(t)
		if len(due.Items) != 0 {
			t.Fatalf("delayed index holds %+v", due.Items)
		}
		if c := h.claimNext(wA, nil, 1, at(time.Minute)); c.Claimed == nil || c.Claimed.ID != p.ID {
			t.Fatalf("claim next %+v", c)
		}
	})

	// Regression (found by proptest): a reclaim grant issued while a lease
	// was revoked outlived the active period when an operator delayed the
	// execution instead of reclaiming it, blocking every claim until it
	// lapsed. Releasing a lease now drops the grant with it.
	t.Run("ReclaimGrantEndsWithLease", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0))
		h.revoke(id, at(time.Second))
		h.reclaimGrant(id, wA, at(time.Second))
		call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Source: model.SourceOperator,
			DelayUntil: at(2 * time.Second), Now: at(2 * time.Second)})).must(t)
		if g := h.describe(id).Grant; g != nil {
			t.Fatalf("grant survived the lease: %+v", g)
		}
		h.grant(id, wB, at(3*time.Second)) // another worker can be granted at once
	})

	// FlowFabric's grant-and-claim skipped the eligibility check; here a
	// delayed or blocked execution is refused.
	t.Run("GrantAndClaimEligibility", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		delayed := h.create(at(0), withDelay(at(time.Hour)))
		blocked := h.create(at(0))
		h.block(blocked, model.PausedByOperator, at(0))
		for _, id := range []model.ExecutionID{delayed, blocked} {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(time.Second)})
				wantErr(t, err, model.ErrNotEligible)
			})
		}
	})

	// FlowFabric's resume paths claimed a worker-delayed execution straight
	// out of the delayed index; here an interrupted attempt resumes only once
	// its execution is eligible again.
	t.Run("ResumeEligibility", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.delay(id, cr.Fence(), at(time.Minute), at(time.Second))
		h.unchanged(id, func() {
			_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second)})
			wantErr(t, err, model.ErrNotEligible)
			_, err = h.s.ClaimGrantIssue(h.ctx, &model.ClaimGrantIssueParams{ID: id, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, GrantTTL: grantTTL, Now: at(2 * time.Second)})
			wantErr(t, err, model.ErrNotEligible)
			_, err = h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: at(2 * time.Second)})
			wantErr(t, err, model.ErrNotLeaseable)
			if res := h.claimNext(wA, nil, 10, at(2*time.Second)); res.Claimed != nil {
				t.Fatalf("claim next resumed %v", res.Claimed.ID)
			}
		})
		h.promote(id, laneA, at(time.Minute))
		if res := h.claim(id, wA, at(time.Minute)); !res.Resumed || res.AttemptID != cr.AttemptID {
			t.Fatalf("claim after promotion %+v", res)
		}
	})

	// FlowFabric never checked a claim grant's expiry against now (expired
	// keys just vanished); here a lapsed grant is claim_grant_expired.
	t.Run("ClaimGrantExpiry", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0))
		g := h.grant(id, wA, at(0))
		h.unchanged(id, func() {
			_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: g.ExpiresAt.Add(time.Millisecond)})
			wantErr(t, err, model.ErrClaimGrantExpired)
		})
	})

	// FlowFabric's reclaim ignored the grant's expiry; here a lapsed reclaim
	// grant is claim_grant_expired.
	t.Run("ReclaimGrantExpiry", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0))
		h.markExpired(id, at(leaseTTL))
		h.reclaimGrant(id, wB, at(leaseTTL))
		h.unchanged(id, func() {
			_, err := h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL + grantTTL + time.Millisecond)})
			wantErr(t, err, model.ErrClaimGrantExpired)
		})
	})

	// FlowFabric blocked for admission whatever the eligibility; here only
	// an eligible execution can be blocked.
	t.Run("BlockRequiresEligible", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		delayed := h.create(at(0), withDelay(at(time.Hour)))
		workerDelayed, cr := h.active(at(0))
		h.delay(workerDelayed, cr.Fence(), at(time.Hour), at(0))
		active, _ := h.active(at(0))
		for _, id := range []model.ExecutionID{delayed, workerDelayed, active} {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForBudget, Budget: heldBudget, Now: at(time.Second)})
				wantErr(t, err, model.ErrNotEligible)
			})
		}
	})

	// FlowFabric stored rate_limited for every admission block; here the
	// public state is derived: rate_limited for budget and quota, waiting
	// for route, operator and lane-state blocks.
	t.Run("BlockPublicState", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		for _, c := range []struct {
			reason model.BlockingReason
			want   model.PublicState
		}{
			{model.WaitingForBudget, model.PublicRateLimited},
			{model.WaitingForQuota, model.PublicRateLimited},
			{model.WaitingForCapableWorker, model.PublicWaiting},
			{model.PausedByOperator, model.PublicWaiting},
			{model.PausedByPolicy, model.PublicWaiting},
		} {
			id := h.create(at(0), blockable(c.reason))
			h.block(id, c.reason, at(time.Second))
			if s := h.describe(id); s.PublicState != c.want {
				t.Errorf("%v: public state %v, want %v", c.reason, s.PublicState, c.want)
			}
		}
	})

	// FlowFabric's reclaim over its cap wrote the terminal state, left the
	// attempt open and then returned an error; here it reports
	// reclaim_cap_exceeded, closes the attempt and cleans every live index,
	// including the old holder's lease index.
	t.Run("ReclaimCap", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withMaxReclaims(1), withTimeout(time.Hour))
		h.markExpired(id, at(leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL)})).must(t)
		h.claim(id, wA, at(leaseTTL))
		h.markExpired(id, at(2*leaseTTL))
		h.reclaimGrant(id, wB, at(2*leaseTTL))
		res, err := h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(2 * leaseTTL)})
		if err != nil || res.Outcome != model.ReclaimCapExceeded {
			t.Fatalf("reclaim over the cap: %+v, %v", res, err)
		}
		s := h.wantState(id, stTerminal(model.OutcomeFailed, model.AttemptTerminal))
		if s.FailureReason != "max_reclaims_exceeded" {
			t.Fatalf("failure reason %q", s.FailureReason)
		}
		h.wantIndexes(id, terminalIndexes(laneA)...)
		for _, a := range h.attempts(id) {
			if a.Status.IsOpen() {
				t.Fatalf("attempt %d left %v", a.Index, a.Status)
			}
		}
	})

	// FlowFabric's default execution policy capped reclaims at 100 while the
	// Rust default was 1000; here one default applies.
	t.Run("DefaultMaxReclaims", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0))
		if s := h.describe(id); s.MaxReclaims != model.DefaultMaxReclaims || model.DefaultMaxReclaims != 1000 {
			t.Fatalf("max reclaims %d (default %d)", s.MaxReclaims, model.DefaultMaxReclaims)
		}
	})

	// FlowFabric let a cancel without operator override and without a lease
	// id through; here a worker's cancel of an active execution needs its
	// complete, valid fence.
	t.Run("WorkerCancelFence", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		stale := cr.Fence()
		stale.LeaseEpoch++
		h.unchanged(id, func() {
			_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Now: at(time.Second)})
			wantErr(t, err, model.ErrFenceRequired)
			_, err = h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: model.Fence{LeaseEpoch: 1}, Now: at(time.Second)})
			wantErr(t, err, model.ErrPartialFenceTriple)
			_, err = h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: stale, Now: at(time.Second)})
			wantErr(t, err, model.ErrStaleLease)
		})
		call(h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: cr.Fence(), Now: at(time.Second)})).must(t)
		h.wantState(id, stTerminal(model.OutcomeCancelled, model.AttemptTerminal))
	})

	// FlowFabric's update_progress ignored the attempt id; here the whole
	// fence is checked.
	t.Run("ProgressAttemptID", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		stale := cr.Fence()
		stale.AttemptID = h.attemptID()
		h.unchanged(id, func() {
			_, err := h.s.ExecutionUpdateProgress(h.ctx, &model.ExecutionUpdateProgressParams{ID: id, Fence: stale, Percent: 10, Now: at(time.Second)})
			wantErr(t, err, model.ErrStaleLease)
		})
	})

	// FlowFabric's cancel of a runnable execution left a paused attempt
	// suspended; here it ends cancelled.
	t.Run("CancelPausedAttempt", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.delay(id, cr.Fence(), at(time.Hour), at(time.Second))
		h.cancelOp(id, at(2*time.Second))
		atts := h.attempts(id)
		if len(atts) != 1 || atts[0].Status != model.AttemptEndedCancelled || !atts[0].EndedAt.Equal(at(2*time.Second)) {
			t.Fatalf("attempts %+v", atts)
		}
		h.wantState(id, stTerminal(model.OutcomeCancelled, model.AttemptTerminal))
	})

	// FlowFabric's revoke dropped the lease_expiry entry, so nothing found
	// the execution again; here it stays there, due at the revoke time, and
	// the lease-expiry scanner's steps recover it.
	t.Run("RevokeRecoverable", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0))
		h.revoke(id, at(time.Second))
		due := call(h.s.IndexScanDue(h.ctx, &model.IndexScanDueParams{Partition: h.p0, Index: model.IndexLeaseExpiry, Now: at(time.Second), Limit: 10})).must(t)
		if len(due.Items) != 1 || due.Items[0].ID != id {
			t.Fatalf("lease_expiry scan %+v", due.Items)
		}
		if st := call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: at(time.Second)})).must(t).Outcome; st != model.MarkExpiredAlreadyRevoked {
			t.Fatalf("mark expired: %q", st)
		}
		if st := call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(time.Second)})).must(t).Outcome; st != model.RecoverRequeued {
			t.Fatalf("recover: %q", st)
		}
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))
	})

	// FlowFabric's reclaim left the old holder's worker lease index entry;
	// here revoke and reclaim both remove it.
	t.Run("WorkerIndexCleaned", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		revoked, _ := h.active(at(0))
		h.revoke(revoked, at(time.Second))
		h.wantIndexes(revoked, ixAll, ixLane(laneA, "active"), ixLease)

		reclaimed, _ := h.active(at(0))
		h.markExpired(reclaimed, at(leaseTTL))
		h.wantIndexes(reclaimed, activeIndexes(laneA, wA.Instance)...)
		h.reclaimGrant(reclaimed, wB, at(leaseTTL))
		call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: reclaimed, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL)})).must(t)
		h.wantIndexes(reclaimed, activeIndexes(laneA, wB.Instance)...)
	})

	// FlowFabric's fail-retry cleared current_attempt_id; here the failed
	// attempt stays current until the retry starts.
	t.Run("FailRetryCurrentAttempt", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		h.fail(id, cr.Fence(), model.FailureTransient, at(time.Second))
		s := h.describe(id)
		if s.CurrentAttempt == nil || *s.CurrentAttempt != (model.AttemptRef{ID: cr.AttemptID, Index: 0}) {
			t.Fatalf("current attempt %+v", s.CurrentAttempt)
		}
	})

	// FlowFabric's replay left the lineage empty and kept the previous run's
	// failure and cancellation; here replay records reason, requester and
	// previous attempt, and clears failure, cancellation and result.
	t.Run("ReplayLineage", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		failed, fcr := h.active(at(0))
		h.fail(failed, fcr.Fence(), model.FailurePermanent, at(time.Second))
		cancelled, _ := h.active(at(0))
		h.cancelOp(cancelled, at(time.Second))
		done, dcr := h.active(at(0))
		h.complete(done, dcr.Fence(), at(time.Second))
		for _, id := range []model.ExecutionID{failed, cancelled, done} {
			call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "fixed the bug", RequestedBy: "bob", Now: at(time.Minute)})).must(t)
			s := h.describe(id)
			want := model.PendingAttempt{Type: model.AttemptReplay, Reason: "fixed the bug", RequestedBy: "bob", PreviousIndex: 0}
			if s.Pending == nil || *s.Pending != want {
				t.Fatalf("pending %+v, want %+v", s.Pending, want)
			}
			if s.FailureReason != "" || s.FailureCategory != "" || s.CancellationReason != "" || s.CancelledBy != "" {
				t.Fatalf("previous run kept: %q %q %q %q", s.FailureReason, s.FailureCategory, s.CancellationReason, s.CancelledBy)
			}
			_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
			wantErr(t, err, model.ErrResultNotFound)
		}
	})

	// FlowFabric's replay kept the retry and reclaim counts, so a replayed
	// execution had no retries left; here they start again from zero.
	t.Run("ReplayResetsCounts", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		h.markExpired(id, at(leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL)})).must(t)
		cr := h.claim(id, wA, at(leaseTTL))
		h.fail(id, cr.Fence(), model.FailureTransient, at(leaseTTL))
		h.promote(id, laneA, at(leaseTTL+time.Second))
		cr = h.claim(id, wA, at(leaseTTL+time.Second))
		h.fail(id, cr.Fence(), model.FailureTransient, at(leaseTTL+2*time.Second))
		if s := h.describe(id); s.RetryCount != 1 || s.ReclaimCount != 1 {
			t.Fatalf("before replay: retries %d reclaims %d", s.RetryCount, s.ReclaimCount)
		}
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Now: at(time.Hour)})).must(t)
		if s := h.describe(id); s.RetryCount != 0 || s.ReclaimCount != 0 {
			t.Fatalf("after replay: retries %d reclaims %d", s.RetryCount, s.ReclaimCount)
		}
		cr = h.claim(id, wA, at(time.Hour))
		if res := h.fail(id, cr.Fence(), model.FailureTransient, at(time.Hour+time.Second)); res.Outcome != model.FailRetryScheduled {
			t.Fatalf("fail after replay: %+v", res)
		}
	})

	// FlowFabric's Valkey backend expired on an attempt timeout while its
	// Postgres backend retried; here the timeout is a failure of category
	// timeout that retries while the policy allows.
	t.Run("AttemptTimeoutRetries", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withTimeout(time.Second), withRetry(model.RetryPolicy{MaxRetries: 1}))
		res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: at(time.Second)})).must(t)
		if res.Outcome != model.ExpireRetryScheduled {
			t.Fatalf("expire %+v", res)
		}
		if a := h.attempts(id)[0]; a.FailureCategory != model.FailureTimeout || a.Status != model.AttemptEndedFailure {
			t.Fatalf("attempt %+v", a)
		}
	})

	// FlowFabric's expire trusted the index entry; here a stale
	// attempt_timeout entry of an earlier lease never kills the resumed
	// attempt.
	t.Run("ExpireRechecksDue", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withTimeout(10*time.Second))
		h.delay(id, cr.Fence(), at(5*time.Second), at(time.Second))
		h.promote(id, laneA, at(5*time.Second))
		h.claim(id, wA, at(5*time.Second))
		h.unchanged(id, func() {
			res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: at(10 * time.Second)})).must(t)
			if res.Outcome != model.ExpireNotYetDue {
				t.Fatalf("expire at the first lease's timeout: %+v", res)
			}
		})
	})

	// An unknown failure category must never burn the remaining retries.
	t.Run("UnknownCategoryRetries", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		if res := h.fail(id, cr.Fence(), "quota_of_downstream", at(time.Second)); res.Outcome != model.FailRetryScheduled {
			t.Fatalf("fail %+v", res)
		}
	})

	// FlowFabric's renew after expiry marked the lease expired and then
	// returned an error; here the error writes nothing.
	t.Run("RenewAfterExpiry", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.unchanged(id, func() {
			_, err := h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: cr.Fence(), LeaseTTL: leaseTTL, Now: at(leaseTTL)})
			wantErr(t, err, model.ErrLeaseExpired)
		})
		h.wantState(id, stActive)
	})
}

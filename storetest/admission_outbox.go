package storetest

import (
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// The quota release outbox: every transition that ends the lease of an
// execution holding an admission token moves the token to its
// partition's outbox in the same step (QuotaReleasePending), which
// QuotaReleaseAck empties.

// running creates an execution with quota q (bucket "k") and claims it
// for wA with token at now.
func (h *admissionHarness) running(q model.QuotaID, token string, now time.Time, opts ...createOpt) (model.ExecutionID, *model.ClaimResult) {
	h.t.Helper()
	id := h.create(now, append([]createOpt{withQuota(q, "k")}, opts...)...)
	cr := h.grantClaimWith(id, wA, token, now)
	h.wantToken(id, token)
	return id, cr
}

func hold(id model.ExecutionID, q model.QuotaID, token string, now time.Time) model.QuotaHold {
	return model.QuotaHold{Execution: id, Quota: q, Key: "k", Token: token, At: now}
}

// outboxTransitions: complete, a failure with a retry left, a terminal
// failure, a cancel and a delay each add exactly one outbox entry
// (execution, quota, key, token, At = Now) and clear the record's token.
func outboxTransitions(h *admissionHarness) {
	q := h.capQuota(100, at(0))
	h.wantPending(h.p0)
	var want []model.QuotaHold
	step := func(token string, d time.Duration, opts []createOpt, end func(id model.ExecutionID, f model.Fence, now time.Time)) {
		h.t.Helper()
		id, cr := h.running(q, token, at(0), opts...)
		h.wantPending(h.p0, want...)
		end(id, cr.Fence(), at(d))
		h.wantToken(id, "")
		want = append(want, hold(id, q, token, at(d)))
		h.wantPending(h.p0, want...)
	}
	step("tok-complete", 10*time.Second, nil, func(id model.ExecutionID, f model.Fence, now time.Time) { h.complete(id, f, now) })
	step("tok-retry", 11*time.Second, []createOpt{withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Hour})},
		func(id model.ExecutionID, f model.Fence, now time.Time) {
			if res := h.fail(id, f, model.FailureTransient, now); res.Outcome != model.FailRetryScheduled {
				h.t.Fatalf("fail with a retry left: %+v", res)
			}
		})
	step("tok-fail", 12*time.Second, nil, func(id model.ExecutionID, f model.Fence, now time.Time) {
		if res := h.fail(id, f, model.FailureTransient, now); res.Outcome != model.FailTerminal {
			h.t.Fatalf("terminal fail: %+v", res)
		}
	})
	step("tok-cancel", 13*time.Second, nil, func(id model.ExecutionID, _ model.Fence, now time.Time) { h.cancelOp(id, now) })
	step("tok-delay", 14*time.Second, nil, func(id model.ExecutionID, f model.Fence, now time.Time) { h.delay(id, f, at(time.Hour), now) })
	step("tok-worker-cancel", 15*time.Second, nil, func(id model.ExecutionID, f model.Fence, now time.Time) {
		call(h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: f, Reason: "done", Now: now})).must(h.t)
	})
}

// outboxSuspend: a suspension ends the lease too.
func outboxSuspend(h *admissionHarness) {
	ss, ok := suspendStoreOf(h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
	}
	sh := &suspendHarness{harness: h.harness, ss: ss}
	q := h.capQuota(100, at(0))
	id, cr := h.running(q, "tok-s", at(0))
	sh.suspend(sh.suspendParams(id, cr.Fence(), model.SignalFor("go"), at(time.Second)))
	h.wantToken(id, "")
	h.wantPending(h.p0, hold(id, q, "tok-s", at(time.Second)))
}

// outboxRecover: an expired lease keeps its token (a reclaimer would
// inherit the slot); ExecutionRecover ends it and moves the token to the
// outbox.
func outboxRecover(h *admissionHarness) {
	q := h.capQuota(100, at(0))
	id, _ := h.running(q, "tok-r", at(0))
	h.markExpired(id, at(leaseTTL+time.Second))
	h.wantToken(id, "tok-r")
	h.wantPending(h.p0)
	res := call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL + 2*time.Second)})).must(h.t)
	if res.Outcome != model.RecoverRequeued {
		h.t.Fatalf("recover: %+v", res)
	}
	h.wantToken(id, "")
	h.wantPending(h.p0, hold(id, q, "tok-r", at(leaseTTL+2*time.Second)))
}

// outboxRevoke: a revoked lease keeps its token; no entry until the
// recovery.
func outboxRevoke(h *admissionHarness) {
	q := h.capQuota(100, at(0))
	id, _ := h.running(q, "tok-v", at(0))
	if res := h.revoke(id, at(time.Second)); res.Outcome != model.RevokeRevoked {
		h.t.Fatalf("revoke: %+v", res)
	}
	h.wantToken(id, "tok-v")
	h.wantPending(h.p0)
	call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(2 * time.Second)})).must(h.t)
	h.wantToken(id, "")
	h.wantPending(h.p0, hold(id, q, "tok-v", at(2*time.Second)))
}

// outboxReclaim: ExecutionReclaim keeps the record's token (the
// reclaimer inherits the slot); the reclaimer's completion moves it.
func outboxReclaim(h *admissionHarness) {
	skipWithout[model.GrantReclaimer](h.harness)
	q := h.capQuota(100, at(0))
	id, _ := h.running(q, "tok-c", at(0))
	h.markExpired(id, at(leaseTTL+time.Second))
	h.reclaimGrant(id, wB, at(leaseTTL+time.Second))
	res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL + 2*time.Second)})).must(h.t)
	if res.Outcome != model.ReclaimClaimed || res.Claimed == nil {
		h.t.Fatalf("reclaim: %+v", res)
	}
	h.wantToken(id, "tok-c")
	h.wantPending(h.p0)
	h.complete(id, res.Claimed.Fence(), at(leaseTTL+3*time.Second))
	h.wantToken(id, "")
	h.wantPending(h.p0, hold(id, q, "tok-c", at(leaseTTL+3*time.Second)))
}

// outboxAck: the outbox lists oldest first, Limit at a time; an ack
// removes the entries matching execution and token (At ignored), counts
// them, and ignores the others. An execution's retry holds its own token,
// so its two leases make two entries.
func outboxAck(h *admissionHarness) {
	q := h.capQuota(100, at(0))
	a, acr := h.running(q, "tok-a", at(0))
	r, rcr := h.running(q, "tok-r1", at(0), withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Hour}))
	h.complete(a, acr.Fence(), at(time.Second))
	h.fail(r, rcr.Fence(), model.FailureTransient, at(2*time.Second))
	call(h.s.ExecutionPromoteDelayed(h.ctx, &model.ExecutionPromoteDelayedParams{ID: r, Lane: laneA, Force: true, Now: at(3 * time.Second)})).must(h.t)
	rcr = h.grantClaimWith(r, wA, "tok-r2", at(4*time.Second))
	h.complete(r, rcr.Fence(), at(5*time.Second))
	ha, hr1, hr2 := hold(a, q, "tok-a", at(time.Second)), hold(r, q, "tok-r1", at(2*time.Second)), hold(r, q, "tok-r2", at(5*time.Second))
	h.wantPending(h.p0, ha, hr1, hr2)
	page := call(h.as.QuotaReleasePending(h.ctx, &model.QuotaReleasePendingParams{Partition: h.p0, Limit: 2})).must(h.t)
	wantEqual(h.t, "first page", model.QuotaReleasePendingResult{Items: []model.QuotaHold{ha, hr1}, More: true}, *page)

	ack := func(items ...model.QuotaHold) int {
		h.t.Helper()
		return call(h.as.QuotaReleaseAck(h.ctx, &model.QuotaReleaseAckParams{Partition: h.p0, Items: items})).must(h.t).Acked
	}
	unknown := model.QuotaHold{Execution: h.newID(h.p0), Quota: q, Key: "k", Token: "tok-x"}
	wrongToken := model.QuotaHold{Execution: r, Quota: q, Key: "k", Token: "tok-a"}
	noTime := ha
	noTime.At = time.Time{}
	if n := ack(noTime, unknown, wrongToken); n != 1 {
		h.t.Fatalf("ack: %d acked, want 1", n)
	}
	h.wantPending(h.p0, hr1, hr2)
	if n := ack(hr1); n != 1 {
		h.t.Fatalf("ack r1: %d", n)
	}
	if n := ack(hr1, ha); n != 0 {
		h.t.Fatalf("ack of entries gone: %d", n)
	}
	h.wantPending(h.p0, hr2)
	if n := ack(hr2); n != 1 {
		h.t.Fatalf("ack r2: %d", n)
	}
	h.wantPending(h.p0)
}

// outboxBudgetOnly: an execution without a quota holds no token, so its
// lease's end adds nothing.
func outboxBudgetOnly(h *admissionHarness) {
	b := h.budget(limits{"tokens": {}}, at(0))
	id := h.create(at(0), withBudgets(b))
	cr := h.grantClaimWith(id, wA, "", at(0))
	h.complete(id, cr.Fence(), at(time.Second))
	h.wantPending(h.p0)
}

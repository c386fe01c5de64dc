package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// WorkResult is the outcome of one handler run by Work.
type WorkResult struct {
	// ID is the execution that was submitted and run.
	ID ExecutionID
	// Err is what the handler returned (nil: it completed).
	Err error
	// Result is what the handler set with SetResult or SetResultJSON.
	Result []byte
	// Completed is true when the handler returned nil.
	Completed bool
	// Snoozed is true when the handler returned Snooze(SnoozeFor).
	Snoozed   bool
	SnoozeFor time.Duration
	// Cancelled is true when the handler returned Cancel(err).
	Cancelled bool
	// FailureCategory is the category of a failed attempt ("" otherwise):
	// FailureTransient for a plain error, FailurePermanent for
	// Permanent(err), FailurePanic for a panic, FailurePayloadInvalid when
	// the payload did not decode, FailureInvalidOutcome when the outcome
	// cannot be recorded (a result SetResult refused, a malformed category
	// given to Fail), or the category given to Fail.
	FailureCategory FailureCategory
	// Snapshot is the execution after the outcome was recorded: completed,
	// failed, delayed (a retry or a snooze is scheduled) or cancelled.
	Snapshot *Snapshot
}

// Work runs handler h once, on the calling goroutine, for unit tests of a
// handler (like rivertest.Worker): it submits args to e with opts (RunAt
// and Delay are ignored: it runs now), claims the execution under a real
// lease, calls h with a real Task (Progress, SetResult, LeaseEpoch all
// work), records the handler's return as a worker would (complete, retry,
// fail, snooze or cancel) and reports the outcome. No worker needs to be
// started, and none of e's workers should serve opts' lane while it runs.
// The returned error is about running (the submit or the claim failed),
// never the handler's own: that is WorkResult.Err.
//
// flowfabrictest.Work calls it on a test harness.
func Work[T Args](ctx context.Context, e *Engine, h Handler[T], args T, opts *SubmitOpts) (*WorkResult, error) {
	kind, payload, defaults, err := encodeArgs(args)
	if err != nil {
		return nil, wrap("work", err)
	}
	o := defaults.merge(opts)
	o.RunAt, o.Delay = time.Time{}, 0
	p, err := e.createParams(kind, payload, o)
	if err != nil {
		return nil, wrap("work", err)
	}
	sub, err := e.create(ctx, p)
	if err != nil {
		return nil, err
	}
	w := NewWorker(e, &WorkerConfig{WorkerID: "inline", Lanes: []LaneID{p.Lane}, Capabilities: p.RequiredCapabilities})
	if w.cfgErr != nil {
		return nil, wrap("work", w.cfgErr)
	}
	w.taskCtx = ctx
	leaseID, attemptID := e.newLeaseIDs()
	token, err := e.admitInline(ctx, p, sub.ID, leaseID)
	if err != nil {
		return nil, wrap("work: admission", err)
	}
	c, err := e.store.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{
		ID: sub.ID, Capabilities: w.caps, AdmissionToken: token, Now: e.clock.Now(),
		LeaseRequest: model.LeaseRequest{
			WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
			LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: w.cfg.LeaseTTL,
		},
	})
	if err != nil {
		if token != "" {
			e.releaseAdmission(ctx, p.Quota, p.QuotaKey, sub.ID, token)
		}
		return nil, wrap("work: claim", err)
	}
	taskCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &running{claim: c, fence: c.Fence(), renewBy: c.Lease.RenewBy, expiresAt: c.Lease.ExpiresAt, cancel: cancel}
	info := newTaskInfo(c, w, r)
	herr := callHandler(taskCtx, typedEntry(h), info)
	if herr == nil && info.resultErr != nil {
		herr = invalidOutcome(info.resultErr) // as finish records it
	}
	w.finish(r, info, herr)
	for info.again { // a Suspend its buffered signals satisfied: run on
		info.again = false
		herr = callHandler(taskCtx, typedEntry(h), info)
		if herr == nil && info.resultErr != nil {
			herr = invalidOutcome(info.resultErr)
		}
		w.finish(r, info, herr)
	}
	e.activity()

	out := &WorkResult{ID: c.ID, Err: herr, Result: info.result}
	if herr == nil {
		out.Completed = true
	} else {
		o := classify(herr)
		switch o.kind {
		case outcomeSnooze:
			out.Snoozed, out.SnoozeFor = true, o.delay
		case outcomeCancel:
			out.Cancelled = true
		default:
			out.FailureCategory = o.category
		}
	}
	snap, err := e.Describe(ctx, c.ID)
	if err != nil {
		return out, err
	}
	out.Snapshot = snap
	return out, nil
}

// ErrAdmissionRefused is returned by Work when the execution's budget is
// exhausted or its quota refuses it: Work runs it now or not at all (the
// execution stays waiting for a worker).
var ErrAdmissionRefused = errors.New("flowfabric: admission refused")

// admitInline runs the claim path's admission for Work: every budget must
// have room and the quota must admit the execution; it returns the
// admission's token ("" without a quota).
func (e *Engine) admitInline(ctx context.Context, p *model.ExecutionCreateParams, id ExecutionID, lease model.LeaseID) (string, error) {
	if len(p.Budgets) == 0 && model.UUID(p.Quota).IsZero() {
		return "", nil
	}
	as, err := e.admissionStore()
	if err != nil {
		return "", err
	}
	now := e.clock.Now()
	for _, b := range p.Budgets {
		st, err := as.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now})
		if err != nil {
			return "", err
		}
		if st.Exhausted != "" {
			return "", fmt.Errorf("%w: budget %s exhausted (%s)", ErrAdmissionRefused, b, st.Exhausted)
		}
	}
	if model.UUID(p.Quota).IsZero() {
		return "", nil
	}
	token := lease.String()
	r, err := as.QuotaAdmit(ctx, &model.QuotaAdmitParams{ID: p.Quota, Key: p.QuotaKey, Execution: id, Token: token, Now: now})
	if err != nil {
		return "", err
	}
	if r.Outcome != model.QuotaAdmitted && r.Outcome != model.QuotaAlreadyAdmitted {
		return "", fmt.Errorf("%w: quota %s: %s", ErrAdmissionRefused, p.Quota, r.Outcome)
	}
	return token, nil
}

// releaseAdmission frees an admission whose claim did not happen; a
// failure is left to the quota reconciler.
func (e *Engine) releaseAdmission(ctx context.Context, q QuotaID, key string, id ExecutionID, token string) {
	if as, err := e.admissionStore(); err == nil {
		_, _ = as.QuotaRelease(ctx, &model.QuotaReleaseParams{ID: q, Key: key, Execution: id, Token: token, Now: e.clock.Now()})
	}
}

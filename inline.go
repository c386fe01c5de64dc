package flowfabric

import (
	"context"
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
	c, err := e.store.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{
		ID: sub.ID, Capabilities: w.caps, Now: e.clock.Now(),
		LeaseRequest: model.LeaseRequest{
			WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
			LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: w.cfg.LeaseTTL,
		},
	})
	if err != nil {
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

package flowfabric

import (
	"context"
	"time"

	"github.com/flowfabric/flowfabric/claim"
	"github.com/flowfabric/flowfabric/model"
)

// Describe returns the full state of an execution.
func (e *Engine) Describe(ctx context.Context, id ExecutionID) (*Snapshot, error) {
	s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	return s, wrap("describe", err)
}

// Payload returns the payload an execution was submitted with.
func (e *Engine) Payload(ctx context.Context, id ExecutionID) ([]byte, error) {
	r, err := e.store.ExecutionPayload(ctx, &model.ExecutionPayloadParams{ID: id})
	if err != nil {
		return nil, wrap("payload", err)
	}
	return r.Payload, nil
}

// Result returns a completed execution's result bytes, or an error matching
// ErrResultNotFound before it completes.
func (e *Engine) Result(ctx context.Context, id ExecutionID) ([]byte, error) {
	r, err := e.store.ExecutionResult(ctx, &model.ExecutionResultParams{ID: id})
	if err != nil {
		return nil, wrap("result", err)
	}
	return r.Result, nil
}

// Attempts returns every attempt of an execution, oldest first.
func (e *Engine) Attempts(ctx context.Context, id ExecutionID) ([]Attempt, error) {
	r, err := e.store.AttemptList(ctx, &model.AttemptListParams{ID: id})
	if err != nil {
		return nil, wrap("attempts", err)
	}
	return r.Attempts, nil
}

// LeaseHistory returns up to limit (1–1000) lease events after sequence
// number after.
func (e *Engine) LeaseHistory(ctx context.Context, id ExecutionID, after uint64, limit int) ([]LeaseEvent, error) {
	r, err := e.store.LeaseHistory(ctx, &model.LeaseHistoryParams{ID: id, AfterSeq: after, Limit: limit})
	if err != nil {
		return nil, wrap("lease history", err)
	}
	return r.Events, nil
}

// ListOpts pages through one partition's executions.
type ListOpts struct {
	Partition int
	// After is the exclusive cursor: the Next of the previous page.
	After ExecutionID
	// Limit is the page size (1–1000; 0: 100).
	Limit int
}

// withDefaults returns the options with the default page size applied
// (nil: the first page of partition 0).
func (opts *ListOpts) withDefaults() ListOpts {
	var o ListOpts
	if opts != nil {
		o = *opts
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	return o
}

// ListResult is one page.
type ListResult struct {
	IDs []ExecutionID
	// Next is the cursor of the next page; zero after the last page.
	Next ExecutionID
}

// List returns one page of a partition's executions in id order.
func (e *Engine) List(ctx context.Context, opts *ListOpts) (*ListResult, error) {
	o := opts.withDefaults()
	r, err := e.store.ExecutionList(ctx, &model.ExecutionListParams{Partition: o.Partition, After: o.After, Limit: o.Limit})
	if err != nil {
		return nil, wrap("list", err)
	}
	return &ListResult{IDs: r.IDs, Next: r.Next}, nil
}

// Partitions returns the number of execution partitions (for List).
func (e *Engine) Partitions() int { return e.parts.WithDefaults().FlowPartitions }

// Cancel cancels an execution in any non-terminal phase, as an operator:
// a running attempt's lease is taken away and its worker is fenced off;
// the handler's context is cancelled with cause ErrExecutionCancelled
// (within milliseconds on stores that notify, see model.LeaseNotifier).
// Cancelling an execution an operator already cancelled succeeds again.
func (e *Engine) Cancel(ctx context.Context, id ExecutionID, reason string) error {
	_, err := e.store.ExecutionCancel(ctx, &model.ExecutionCancelParams{
		ID: id, Reason: reason, Source: model.SourceOperator, Now: e.clock.Now(),
	})
	if err == nil {
		e.quotaRel.Hint(id.Partition(), time.Time{}) // a running attempt's quota slot frees
	}
	return wrap("cancel", err)
}

// ReplayOpts describes a replay.
type ReplayOpts struct {
	Reason      string
	RequestedBy string
}

// Replay runs a terminal execution again as a new attempt of type replay.
func (e *Engine) Replay(ctx context.Context, id ExecutionID, opts *ReplayOpts) error {
	var o ReplayOpts
	if opts != nil {
		o = *opts
	}
	_, err := e.store.ExecutionReplay(ctx, &model.ExecutionReplayParams{
		ID: id, Reason: o.Reason, RequestedBy: o.RequestedBy, Now: e.clock.Now(),
	})
	return wrap("replay", err)
}

// ChangePriority sets a non-terminal execution's priority (clamped to
// [0, 9000]) and returns the value stored.
func (e *Engine) ChangePriority(ctx context.Context, id ExecutionID, priority int) (int, error) {
	r, err := e.store.ExecutionChangePriority(ctx, &model.ExecutionChangePriorityParams{ID: id, Priority: priority, Now: e.clock.Now()})
	if err != nil {
		return 0, wrap("change priority", err)
	}
	return r.New, nil
}

// Ping checks that the store answers (one cheap read).
func (e *Engine) Ping(ctx context.Context) error {
	_, err := e.store.ExecutionList(ctx, &model.ExecutionListParams{Partition: 0, Limit: 1})
	return wrap("ping", err)
}

// RetryNow makes an execution that waits for a time — a delayed
// submission, a retry backoff, a snooze — eligible at once; the attempt
// that was waiting is the one that runs (a retry stays a retry). An
// execution not waiting for a time is ErrNotEligible (replay a terminal
// one instead); an unknown one ErrNotFound.
func (e *Engine) RetryNow(ctx context.Context, id ExecutionID) error {
	s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		return wrap("retry now", err)
	}
	r, err := e.store.ExecutionPromoteDelayed(ctx, &model.ExecutionPromoteDelayedParams{ID: id, Lane: s.Lane, Force: true, Now: e.clock.Now()})
	if err != nil {
		return wrap("retry now", err)
	}
	switch r.Outcome {
	case model.PromotePromoted:
		return nil
	case model.PromoteNotFoundCleaned:
		return wrap("retry now", model.ErrNotFound)
	}
	return wrap("retry now", &model.Error{Code: model.CodeExecutionNotEligible,
		Detail: "not waiting for a time (" + s.PublicState.String() + ")"})
}

// RevokeLease takes the lease of a running execution away from its worker
// (which is fenced from then on; its handler's context is cancelled with
// cause ErrLeaseRevoked). The lease-expiry scanner then recovers
// the execution as a new attempt; Reclaim does it at once.
func (e *Engine) RevokeLease(ctx context.Context, id ExecutionID, reason string) error {
	now := e.clock.Now()
	_, err := e.store.LeaseRevoke(ctx, &model.LeaseRevokeParams{ID: id, Reason: reason, Now: now})
	if err == nil {
		e.hint(e.lease, id, now)
	}
	return wrap("revoke lease", err)
}

// Reclaim recovers an execution whose lease expired or was revoked now,
// instead of waiting for the lease-expiry scanner: the old attempt ends and
// the execution is eligible again as a new reclaim attempt. It reports
// false when the reclaim cap was reached and the execution failed instead.
func (e *Engine) Reclaim(ctx context.Context, id ExecutionID) (bool, error) {
	r, err := e.store.ExecutionRecover(ctx, &model.ExecutionRecoverParams{ID: id, Now: e.clock.Now()})
	if err != nil {
		return false, wrap("reclaim", err)
	}
	return r.Outcome == model.RecoverRequeued, nil
}

// IssueGrant grants one worker the right to claim one eligible execution
// within ttl (for schedulers that route work explicitly); the worker
// consumes it with Worker.ClaimGrant.
func (e *Engine) IssueGrant(ctx context.Context, id ExecutionID, w *Worker, ttl time.Duration) (*claim.Grant, error) {
	if w == nil {
		return nil, wrap("issue grant", model.InvalidField("Worker", "nil: pass the worker the grant is for"))
	}
	g, err := e.sched.IssueGrant(ctx, id, w.cfg.WorkerID, w.cfg.InstanceID, w.caps, ttl)
	return g, wrap("issue grant", err)
}

// Wait blocks until the execution is terminal (completed, failed,
// cancelled, expired or skipped) or ctx is done. On a store that keeps the
// completions feed it follows the execution's partition feed (woken by the
// store's notices, so a completion in any process ends the wait within
// milliseconds) and re-reads every poll interval (0: 1s) as a backstop;
// otherwise it checks every poll interval (0: 100ms) and whenever a worker
// of this engine finishes a task.
func (e *Engine) Wait(ctx context.Context, id ExecutionID, poll time.Duration) (*Snapshot, error) {
	if fs, ok := e.store.(model.FeedStore); ok && fs.FeedEnabled(model.FeedCompletions) {
		return e.waitFeed(ctx, fs, id, poll)
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	sig := e.clock.NewSignal()
	stop := e.watchTerminal(sig)
	defer stop()
	for {
		s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
		if err != nil {
			return nil, wrap("wait", err)
		}
		if s.PublicState.IsTerminal() {
			return s, nil
		}
		if err := e.clock.Wait(ctx, poll, sig); err != nil {
			return s, wrap("wait", err)
		}
	}
}

// waitFeed is Wait on the completions feed: it takes the partition feed's
// head, then reads the execution, then reads the feed from the head on,
// re-reading the execution only when an event names it (or the feed says
// events were missed, or the backstop interval passed).
func (e *Engine) waitFeed(ctx context.Context, fs model.FeedStore, id ExecutionID, poll time.Duration) (*Snapshot, error) {
	if poll <= 0 {
		poll = feedRecheck
	}
	if err := e.parts.WithDefaults().CheckExecutionID(id); err != nil {
		return nil, wrap("wait", err)
	}
	part := id.Partition()
	sig := e.clock.NewSignal()
	if n, ok := e.store.(model.FeedNotifier); ok {
		stop := n.WatchFeed(model.FeedCompletions, func(p int) {
			if p == part || p < 0 {
				sig.Notify()
			}
		})
		defer stop()
	}
	head, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: model.FeedCompletions, Partition: part, Count: 1})
	if err != nil {
		return nil, wrap("wait", err)
	}
	after := head.Last
	for {
		s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
		if err != nil {
			return nil, wrap("wait", err)
		}
		if s.PublicState.IsTerminal() {
			return s, nil
		}
		backstop := e.clock.Now().Add(poll)
		for named := false; !named; {
			r, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: model.FeedCompletions, Partition: part, After: after, Count: model.MaxFeedRead})
			if err != nil {
				return nil, wrap("wait", err)
			}
			after = r.Next
			if r.Behind {
				after = r.Last
				break
			}
			for _, ev := range r.Events {
				named = named || ev.Execution == id
			}
			if named || len(r.Events) == model.MaxFeedRead {
				continue // re-read the execution, or the rest of the page
			}
			left := backstop.Sub(e.clock.Now())
			if left <= 0 {
				break // the backstop interval passed: read the execution
			}
			if err := e.clock.Wait(ctx, left, sig); err != nil {
				return s, wrap("wait", err)
			}
		}
	}
}

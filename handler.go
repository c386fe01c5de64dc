package flowfabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Handler runs executions whose payload decodes into T. The kind it
// handles is T's Kind().
type Handler[T Args] interface {
	Work(ctx context.Context, task *Task[T]) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc[T Args] func(ctx context.Context, task *Task[T]) error

// Work implements Handler.
func (f HandlerFunc[T]) Work(ctx context.Context, task *Task[T]) error { return f(ctx, task) }

// WorkFunc returns a Handler that calls f. Unlike the conversion
// HandlerFunc[T](f), it infers T from f:
//
//	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[SendEmail]) error {
//		return send(ctx, t.Args.To)
//	}))
func WorkFunc[T Args](f func(ctx context.Context, task *Task[T]) error) Handler[T] {
	return HandlerFunc[T](f)
}

// Task is one claimed execution handed to a handler.
//
// The handler's return decides the outcome: nil completes the execution
// (with the result set by SetResult); an error fails the attempt and
// retries per the retry policy; Permanent(err) fails without retry;
// Snooze(d) hands the execution back for d and resumes the same attempt
// later; AwaitChildren(...) (a flow node) parks it until the children it
// creates have ended, then resumes the same attempt; Suspend(cond, opts)
// parks it until signals satisfy cond, then resumes the same attempt;
// Cancel(err) cancels it. A panic fails the attempt with category
// "panic".
//
// The context is cancelled when the lease is taken away, within
// milliseconds on stores that notify (memstore, valkeystore) and at the
// next renewal otherwise, or when the worker stops past its drain deadline
// (cause ErrWorkerStopped). The cause of a lost lease matches ErrLeaseLost
// and, with errors.Is, what happened: ErrExecutionCancelled (an operator
// cancelled it), ErrLeaseRevoked, context.DeadlineExceeded (attempt
// timeout or execution deadline), ErrNotActive (an operator completed,
// failed or delayed it), ErrLeaseExpired.
type Task[T Args] struct {
	// Args is the decoded payload.
	Args T
	*TaskInfo
}

// TaskInfo is what a handler knows about its execution.
type TaskInfo struct {
	ID        ExecutionID
	Kind      Kind
	Lane      LaneID
	Namespace Namespace
	Priority  int
	Tags      map[string]string
	// Metadata is what the submission carried in SubmitOpts.Metadata (nil:
	// none). It is the handler's own copy.
	Metadata  map[string]string
	CreatedAt time.Time
	// Payload is the raw payload. It is read-only (the in-memory store
	// hands out the bytes it keeps): copy it before changing it.
	Payload []byte
	// Attempt is the attempt's index (0 for the first) and AttemptType why
	// it started (initial, retry, replay, reclaim).
	Attempt     int
	AttemptType AttemptType
	// Resumed is true when this attempt resumed after a Snooze, after
	// the children of an AwaitChildren ended, or after a Suspend (read
	// what the signals said with Signals).
	Resumed bool
	// RetryCount is how many retries came before this attempt, and
	// MaxRetries the limit of the execution's retry policy. See
	// LastAttempt.
	RetryCount int
	MaxRetries int
	// LeaseEpoch is the fencing token of this attempt's lease: it grows with
	// every acquisition, so downstream systems can reject writes from an
	// older holder.
	LeaseEpoch uint64

	w      *Worker
	run    *running
	result []byte
	// resultErr is why the last SetResult was refused; a handler that
	// returns nil anyway fails with category invalid_outcome.
	resultErr error
	// again asks for the handler to run once more in the same attempt:
	// its Suspend was already satisfied by satisfied.
	again     bool
	satisfied []SignalRecord
}

// newTaskInfo is what the handler of claim c, run by w as r, is told.
func newTaskInfo(c *model.ClaimResult, w *Worker, r *running) *TaskInfo {
	return &TaskInfo{
		ID: c.ID, Kind: c.Kind, Lane: c.Lane, Namespace: c.Namespace, Priority: c.Priority,
		Tags: c.Tags, Metadata: c.Metadata, CreatedAt: c.CreatedAt, Payload: c.Payload, Attempt: c.AttemptIndex,
		AttemptType: c.AttemptType, Resumed: c.Resumed, RetryCount: c.RetryCount, MaxRetries: c.MaxRetries,
		LeaseEpoch: c.Lease.Epoch, w: w, run: r,
	}
}

// LastAttempt reports whether a failure of this attempt fails the
// execution for good: no retries are left (RetryCount >= MaxRetries). A
// crash recovery (AttemptReclaim) does not use up a retry, so the last
// attempt may still run again if its worker dies.
func (t *TaskInfo) LastAttempt() bool { return t.RetryCount >= t.MaxRetries }

// Fence returns the full fence (lease id, epoch, attempt id) of the task;
// zero for a TaskInfo built by hand.
func (t *TaskInfo) Fence() Fence {
	if t.run == nil {
		return Fence{}
	}
	return t.run.fence
}

// SetResult sets the bytes stored when the handler returns nil. A result
// over MaxResultBytes (1 MiB) is refused with a validation error
// (errors.Is(err, ErrValidation)); if the handler returns nil anyway, the
// attempt fails at once with category invalid_outcome (not retried).
func (t *TaskInfo) SetResult(b []byte) error {
	if len(b) > model.MaxResultBytes {
		err := fmt.Errorf("flowfabric: set result: %w", &model.Error{Code: model.CodeInvalidInput, Field: "TaskInfo.SetResult",
			Detail: fmt.Sprintf("result is %d bytes; at most %d (MaxResultBytes)", len(b), model.MaxResultBytes)})
		t.resultErr = err
		return err
	}
	t.result, t.resultErr = b, nil
	return nil
}

// SetResultJSON sets the result to the JSON encoding of v, under the same
// limit as SetResult.
func (t *TaskInfo) SetResultJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("flowfabric: set result: %w", err)
	}
	return t.SetResult(b)
}

// Progress records progress (0–100) and a message on the execution. On a
// TaskInfo built by hand (a unit test that calls a handler directly, not
// through a worker or Work) it records nothing and returns nil.
func (t *TaskInfo) Progress(ctx context.Context, percent int, message string) error {
	if t.w == nil || t.run == nil {
		return nil
	}
	_, err := t.w.engine.store.ExecutionUpdateProgress(ctx, &model.ExecutionUpdateProgressParams{
		ID: t.ID, Fence: t.run.fence, Percent: percent, Message: message, Now: t.w.engine.clock.Now(),
	})
	return wrap("progress", err)
}

// outcome is what a handler's return asks for.
type outcome struct {
	kind     outcomeKind
	err      error
	category FailureCategory
	delay    time.Duration
	children []Child
	// Suspend: the condition, the options and, once drawn, the store
	// step (its ids stay the same across retries).
	cond          ResumeCondition
	suspend       SuspendOpts
	suspendParams *model.ExecutionSuspendParams
}

type outcomeKind uint8

const (
	outcomeFail outcomeKind = iota + 1
	outcomeSnooze
	outcomeCancel
	outcomeAwait
	outcomeSuspend
)

func (o *outcome) Error() string {
	switch o.kind {
	case outcomeSnooze:
		return fmt.Sprintf("snooze %s", o.delay)
	case outcomeCancel:
		return fmt.Sprintf("cancel: %v", o.err)
	case outcomeAwait:
		return fmt.Sprintf("await %d children", len(o.children))
	case outcomeSuspend:
		return fmt.Sprintf("suspend until %s", o.cond.Kind)
	}
	return fmt.Sprintf("%s: %v", o.category, o.err)
}

func (o *outcome) Unwrap() error { return o.err }

// Permanent marks err as not worth retrying: the execution fails now,
// whatever retries remain.
func Permanent(err error) error {
	return &outcome{kind: outcomeFail, err: err, category: model.FailurePermanent}
}

// Fail fails the attempt with an explicit category. Categories other than
// permanent, cancelled, payload_invalid and invalid_outcome retry per the
// policy. A malformed category (more than 64 bytes, or a byte outside
// [a-z0-9_]) fails the attempt with category invalid_outcome instead, not
// retried, with a reason naming the category.
func Fail(category FailureCategory, err error) error {
	if verr := model.ValidateFailureCategory(category); verr != nil {
		return invalidOutcome(fmt.Errorf("flowfabric: Fail: category %q: %w (handler error: %w)", category, verr, err))
	}
	return &outcome{kind: outcomeFail, err: err, category: category}
}

// invalidOutcome fails the attempt because its outcome cannot be recorded.
func invalidOutcome(err error) *outcome {
	return &outcome{kind: outcomeFail, err: err, category: model.FailureInvalidOutcome}
}

// Snooze hands the execution back to run again after d, resuming the same
// attempt. It does not count as a failure.
func Snooze(d time.Duration) error { return &outcome{kind: outcomeSnooze, delay: d} }

// Cancel cancels the execution with err as the reason.
func Cancel(err error) error { return &outcome{kind: outcomeCancel, err: err} }

// classify turns a handler's return into an outcome.
func classify(err error) *outcome {
	var o *outcome
	if errors.As(err, &o) {
		return o
	}
	return &outcome{kind: outcomeFail, err: err, category: model.FailureTransient}
}

// handlerEntry runs one kind.
type handlerEntry func(ctx context.Context, info *TaskInfo) error

// WorkFn is a handler as middleware sees it: the task, its payload not
// yet decoded (the typed handler inside decodes it).
type WorkFn func(ctx context.Context, t *TaskInfo) error

// Middleware wraps a handler: it returns a WorkFn that may run code
// before and after calling next, change the context it passes, or turn
// next's error into another (Snooze, Cancel, Permanent and Fail keep
// their meaning). See WorkerConfig.Middleware.
type Middleware func(next WorkFn) WorkFn

// wrapMiddleware applies mw to h, the first outermost.
func wrapMiddleware(h handlerEntry, mw []Middleware) handlerEntry {
	f := WorkFn(h)
	for i := len(mw) - 1; i >= 0; i-- {
		f = mw[i](f)
	}
	return handlerEntry(f)
}

// AttemptError tells WorkerConfig.OnError about a failed attempt and what
// the engine recorded for it.
type AttemptError struct {
	// Err is what the handler returned (for a panic: the panic value and
	// the stack, category FailurePanic).
	Err      error
	Category FailureCategory
	// Retrying reports a retry scheduled at RetryAt; false: the execution
	// failed for good.
	Retrying bool
	RetryAt  time.Time
}

// Panicked reports whether the attempt failed because its handler (or a
// middleware) panicked.
func (e *AttemptError) Panicked() bool { return e.Category == model.FailurePanic }

// errPayload marks a payload that did not decode.
type errPayload struct{ err error }

func (e errPayload) Error() string { return "decode payload: " + e.err.Error() }
func (e errPayload) Unwrap() error { return e.err }

// AddHandler registers h for the kind of T on w. It panics when the kind
// is invalid or already registered, or w has started (programming
// errors); AddHandlerSafe returns the error instead.
func AddHandler[T Args](w *Worker, h Handler[T]) {
	if err := AddHandlerSafe(w, h); err != nil {
		panic(err)
	}
}

// AddHandlerSafe registers h for the kind of T on w.
func AddHandlerSafe[T Args](w *Worker, h Handler[T]) error {
	var zero T
	return w.addHandler(Kind(zero.Kind()), typedEntry(h))
}

// typedEntry decodes the payload into T and calls h.
func typedEntry[T Args](h Handler[T]) handlerEntry {
	return func(ctx context.Context, info *TaskInfo) error {
		var args T
		if err := json.Unmarshal(info.Payload, &args); err != nil {
			return errPayload{err}
		}
		return h.Work(ctx, &Task[T]{Args: args, TaskInfo: info})
	}
}

// HandleRaw registers a handler for kind that receives the raw payload.
func (w *Worker) HandleRaw(kind Kind, f func(ctx context.Context, info *TaskInfo) error) error {
	return w.addHandler(kind, f)
}

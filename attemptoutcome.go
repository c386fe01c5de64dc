package flowfabric

import (
	"context"
	"time"
)

// AttemptOutcomeKind says what became of a run of a handler (see
// AttemptOutcome).
type AttemptOutcomeKind uint8

// Outcomes of a handler's run, as WorkerConfig.OnOutcome is told them.
const (
	// AttemptCompleted: the execution completed.
	AttemptCompleted AttemptOutcomeKind = iota + 1
	// AttemptFailed: the attempt failed; AttemptOutcome.Failure says
	// whether a retry is scheduled (and when) or the execution failed for
	// good, and whether the handler panicked.
	AttemptFailed
	// AttemptSnoozed: the handler snoozed (Snooze); the same attempt
	// resumes at AttemptOutcome.Until.
	AttemptSnoozed
	// AttemptSuspended: the handler suspended (Suspend) and the execution
	// is parked until signals satisfy its condition. With
	// AttemptOutcome.Again, signals buffered on its waitpoint satisfied it
	// already: the handler runs again at once in the same attempt.
	AttemptSuspended
	// AttemptAwaitingChildren: the handler's AwaitChildren was recorded;
	// the same attempt resumes when the children have ended.
	AttemptAwaitingChildren
	// AttemptCancelled: the handler cancelled its execution (Cancel).
	AttemptCancelled
	// AttemptNotRecorded: no outcome was stored. AttemptOutcome.Err says
	// why: the lease was lost (errors.Is ErrLeaseLost; its cause says
	// what happened, as for the handler's context), the worker stopped
	// and handed the execution back (ErrWorkerStopped), or the store
	// refused the outcome for good. The engine recovers the execution as
	// a new attempt, or an operator or a scanner already ended it.
	AttemptNotRecorded
)

var attemptOutcomeNames = [...]string{"", "completed", "failed", "snoozed", "suspended", "awaiting_children", "cancelled", "not_recorded"}

// String returns the outcome's name ("completed", "failed", "snoozed",
// "suspended", "awaiting_children", "cancelled", "not_recorded").
func (k AttemptOutcomeKind) String() string {
	if int(k) < len(attemptOutcomeNames) && k != 0 {
		return attemptOutcomeNames[k]
	}
	return "unknown"
}

// AttemptOutcome tells WorkerConfig.OnOutcome what the engine recorded
// after a run of a handler.
type AttemptOutcome struct {
	Kind AttemptOutcomeKind
	// Failure is set for AttemptFailed: what OnError is told.
	Failure *AttemptError
	// Until is when a snoozed attempt resumes (AttemptSnoozed).
	Until time.Time
	// Again reports a suspension already satisfied (AttemptSuspended): the
	// handler runs again at once, in the same attempt.
	Again bool
	// Err is the reason a handler gave for cancelling (AttemptCancelled),
	// or why no outcome was stored (AttemptNotRecorded).
	Err error
}

// tellOutcome calls WorkerConfig.OnOutcome, if set.
func (w *Worker) tellOutcome(ctx context.Context, info *TaskInfo, o *AttemptOutcome) {
	if w.cfg.OnOutcome != nil {
		w.cfg.OnOutcome(ctx, info, o)
	}
}

// notRecorded is why r's outcome was not stored: the cause its handler's
// context ended with (a lost lease, a stopped worker), else the lease loss
// the store's refusal err means, else err.
func notRecorded(r *running, err error) error {
	if r.ctx != nil {
		if cause := context.Cause(r.ctx); cause != nil {
			return cause
		}
	}
	if loss, ok := lossOfError(err); ok {
		return loss
	}
	return err
}

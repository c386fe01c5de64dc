package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/flowfabric/flowfabric/model"
)

// ErrExecutionCancelled is the cause of a task context cancelled because
// an operator cancelled the execution (Engine.Cancel). Like every cause of
// a lost lease it also matches ErrLeaseLost.
var ErrExecutionCancelled = errors.New("flowfabric: execution cancelled")

// A task's context is cancelled when its lease is taken away. The cause
// matches ErrLeaseLost and, with errors.Is, what happened:
//
//	ErrExecutionCancelled     an operator cancelled the execution
//	ErrLeaseRevoked           the lease was revoked (Engine.RevokeLease)
//	ErrNotActive              an operator completed, failed or delayed the
//	                          execution, or it ended elsewhere
//	context.DeadlineExceeded  the attempt timeout or the execution deadline
//	                          passed
//	ErrLeaseExpired           the lease expired before it was renewed
//	ErrStaleLease             a newer lease replaced it
//
// On a store that implements model.LeaseNotifier (memstore, valkeystore)
// the worker learns it within milliseconds; otherwise, and whenever a
// notice is lost, at the lease's next renewal.

// leaseLost is the cause of a task context cancelled because the lease was
// taken away.
type leaseLost struct {
	what  string     // what happened, as logged
	err   error      // the specific cause
	level slog.Level // how it is logged
}

func (e *leaseLost) Error() string { return "flowfabric: lease lost: " + e.what }

// Is makes every lost lease match ErrLeaseLost.
func (e *leaseLost) Is(target error) bool { return target == ErrLeaseLost }

func (e *leaseLost) Unwrap() error { return e.err }

// lossOfNotice is the cause a lease notice of kind reports.
func lossOfNotice(kind model.LeaseNoticeKind) *leaseLost {
	switch kind {
	case model.LeaseNoticeCancelled:
		return &leaseLost{"execution cancelled", ErrExecutionCancelled, slog.LevelInfo}
	case model.LeaseNoticeRevoked:
		return &leaseLost{"lease revoked", model.ErrLeaseRevoked, slog.LevelInfo}
	case model.LeaseNoticeOverridden:
		return &leaseLost{"execution completed, failed or delayed by operator", model.ErrNotActive, slog.LevelInfo}
	case model.LeaseNoticeTimedOut:
		return &leaseLost{"attempt timed out", context.DeadlineExceeded, slog.LevelDebug}
	case model.LeaseNoticeExpired:
		return &leaseLost{"lease expired before it was renewed", model.ErrLeaseExpired, slog.LevelWarn}
	}
	return &leaseLost{"lease taken away (" + string(kind) + ")", model.ErrNotActive, slog.LevelWarn}
}

// lossOfError is the cause a store's refusal of a fenced call (a renewal,
// an outcome) reports; ok is false for any other error.
func lossOfError(err error) (loss *leaseLost, ok bool) {
	var me *model.Error
	if !errors.As(err, &me) {
		return nil, false
	}
	switch me.Code {
	case model.CodeExecutionNotActive:
		st := me.State
		switch {
		case st == nil:
			return &leaseLost{"execution no longer active", me, slog.LevelWarn}, true
		case st.TerminalOutcome == model.OutcomeCancelled:
			return &leaseLost{"execution cancelled", &joined{ErrExecutionCancelled, me}, slog.LevelInfo}, true
		case st.TerminalOutcome == model.OutcomeExpired:
			return &leaseLost{"execution timed out", &joined{context.DeadlineExceeded, me}, slog.LevelDebug}, true
		case st.LifecyclePhase == model.PhaseTerminal:
			return &leaseLost{"execution ended elsewhere (" + st.TerminalOutcome.String() + ")", me, slog.LevelInfo}, true
		}
		return &leaseLost{"execution taken over (now " + st.LifecyclePhase.String() + ")", me, slog.LevelWarn}, true
	case model.CodeLeaseRevoked:
		return &leaseLost{"lease revoked", me, slog.LevelInfo}, true
	case model.CodeLeaseExpired:
		return &leaseLost{"lease expired before it was renewed", me, slog.LevelWarn}, true
	case model.CodeStaleLease:
		return &leaseLost{"lease replaced by a newer one", me, slog.LevelWarn}, true
	}
	return nil, false
}

// joined matches two errors (a sentinel and the store's error).
type joined struct{ a, b error }

func (j *joined) Error() string   { return fmt.Sprintf("%v: %v", j.a, j.b) }
func (j *joined) Unwrap() []error { return []error{j.a, j.b} }

// leaseWatch is a worker's watch of its leases (model.LeaseNotifier).
type leaseWatch struct {
	stop func()
	// early holds notices for executions not (yet) in flight: a notice can
	// overtake the start of the task it concerns (w.mu).
	early map[model.ExecutionID]model.LeaseNotice
}

// maxEarlyNotices bounds leaseWatch.early; notices for tasks that never
// start (or already ended) are dropped when it is full.
const maxEarlyNotices = 256

// watchLeases subscribes to the store's lease notices for this instance.
func (w *Worker) watchLeases() {
	ln, ok := w.engine.store.(model.LeaseNotifier)
	if !ok {
		return
	}
	stop := ln.WatchLeases(w.cfg.InstanceID, w.onLeaseNotice)
	w.mu.Lock()
	w.leases.stop = stop
	w.mu.Unlock()
}

// unwatchLeases ends the watch.
func (w *Worker) unwatchLeases() {
	w.mu.Lock()
	stop := w.leases.stop
	w.leases.stop = nil
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// onLeaseNotice cancels the task whose lease was taken away. It runs on
// the store's goroutine (memstore: the caller of the transition) and does
// not block.
func (w *Worker) onLeaseNotice(n model.LeaseNotice) {
	if n.Kind == model.LeaseNoticeRecheck {
		w.recheckLeases()
		return
	}
	w.mu.Lock()
	r := w.inflight[taskKey{n.ID, n.LeaseEpoch}]
	if r == nil {
		if w.leases.early == nil || len(w.leases.early) >= maxEarlyNotices {
			w.leases.early = make(map[model.ExecutionID]model.LeaseNotice)
		}
		w.leases.early[n.ID] = n
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.noticeLost(r, n)
}

// checkEarlyNotice applies a notice that arrived before r was in flight.
// r is in w.inflight already, so later notices find it.
func (w *Worker) checkEarlyNotice(r *running) {
	w.mu.Lock()
	n, ok := w.leases.early[r.claim.ID]
	if ok {
		delete(w.leases.early, r.claim.ID)
	}
	w.mu.Unlock()
	if ok {
		w.noticeLost(r, n)
	}
}

// noticeLost cancels r when notice n is about r's lease.
func (w *Worker) noticeLost(r *running, n model.LeaseNotice) {
	if n.LeaseEpoch != r.fence.LeaseEpoch {
		return // an older lease of the execution
	}
	w.leaseLost(r, lossOfNotice(n.Kind))
}

// leaseLost marks r's lease lost, cancels its context with the cause and
// logs what happened. A task already lost or handed back by Stop is left
// alone.
func (w *Worker) leaseLost(r *running, loss *leaseLost) {
	w.mu.Lock()
	if r.lost || r.released {
		w.mu.Unlock()
		return
	}
	r.lost = true
	w.mu.Unlock()
	// log first: once cancelled, the handler may return and the task end
	// before a log written afterwards
	w.log.Log(context.Background(), loss.level, loss.what, "execution", r.claim.ID.String(),
		"lease_epoch", r.fence.LeaseEpoch)
	r.cancel(loss)
}

// recheckLeases renews every lease held now: notices may have been lost,
// and a renewal finds out whether the lease is still held.
func (w *Worker) recheckLeases() {
	now := w.engine.clock.Now()
	w.mu.Lock()
	n := 0
	for _, r := range w.inflight {
		if !r.lost && !r.released {
			r.renewBy = now
			n++
		}
	}
	wake := w.renewWake
	w.mu.Unlock()
	if n > 0 && wake != nil {
		wake.Notify()
	}
}

// outcomeRefused is the level and message of the log of an outcome the
// store refused: what happened to the lease, when it was taken away.
func (w *Worker) outcomeRefused(r *running, err error) (slog.Level, string) {
	w.mu.Lock()
	gone := r.lost || r.released
	w.mu.Unlock()
	if gone {
		return slog.LevelDebug, "task outcome discarded: the lease was lost or handed back"
	}
	if loss, ok := lossOfError(err); ok {
		return loss.level, "task outcome discarded: " + loss.what
	}
	return slog.LevelWarn, "recording task outcome failed"
}

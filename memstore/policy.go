package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// failOrRetry schedules a retry when the category allows it and retries
// remain, and fails the execution terminally otherwise. The lease is already
// released. The backoff is model.RetryPolicy.BackoffMs (Lua's backoff_ms
// computes the same bit for bit).
func (s *Store) failOrRetry(e *execution, now int64, reason string, cat model.FailureCategory) *model.ExecutionFailResult {
	if cat.Retryable() && e.retryCount < e.retry.MaxRetries {
		until := now + e.retry.BackoffMs(e.retryCount)
		e.retryCount++
		setPending(e, model.AttemptRetry, reason, "")
		s.makeRunnable(e, now, until, model.WaitingForRetryBackoff, model.AttemptPendingRetry)
		return &model.ExecutionFailResult{Outcome: model.FailRetryScheduled, DelayUntil: tm(until)}
	}
	e.failureReason = reason
	e.failureCategory = cat
	s.terminate(e, now, model.OutcomeFailed)
	return &model.ExecutionFailResult{Outcome: model.FailTerminal}
}

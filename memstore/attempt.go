package memstore

import (
	"github.com/flowfabric/flowfabric/model"
)

// endAttempt closes the current attempt if it is open, and its stream.
func (s *Store) endAttempt(e *execution, now int64, status model.AttemptStatus, reason string, cat model.FailureCategory) {
	a := e.currentAttempt()
	if a == nil || !a.Status.IsOpen() {
		return
	}
	s.closeStream(e, now, model.StreamCloseReason(status.String()))
	a.Status = status
	a.EndedAt = tm(now)
	a.FailureReason = reason
	a.FailureCategory = cat
}

// currentAttempt is the current attempt (nil before the first claim).
func (e *execution) currentAttempt() *model.Attempt {
	if e.curAttempt < 0 {
		return nil
	}
	return &e.attempts[e.curAttempt]
}

// addHistory appends an event to the lease history, keeping the newest
// model.DefaultLeaseHistory.
func (s *Store) addHistory(e *execution, now int64, kind model.LeaseEventKind, reason string) {
	s.feedLease(e, now, kind, reason)
	e.histSeq++
	ev := model.LeaseEvent{
		Seq: e.histSeq, Kind: kind, LeaseEpoch: e.epoch, AttemptIndex: e.curAttempt,
		At: model.FromMillis(now), Reason: reason,
	}
	if e.lease != nil {
		ev.LeaseID = e.lease.id
		ev.WorkerInstanceID = e.lease.workerInstanceID
	}
	if e.history == nil {
		// room for the usual pair (acquired, released) at once: growing
		// from one entry would leave a dead copy per job, and on a heap
		// that is still growing every dead byte is a fresh page
		// (docs/ARCHITECTURE.md "memstore and fresh memory")
		e.history = make([]model.LeaseEvent, 0, 2)
	}
	e.history = append(e.history, ev)
	if over := len(e.history) - model.DefaultLeaseHistory; over > 0 {
		e.history = append(e.history[:0:0], e.history[over:]...)
	}
}

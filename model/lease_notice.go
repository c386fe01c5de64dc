package model

// LeaseNotifier is implemented by stores that can tell a worker instance,
// within milliseconds and across processes, that a lease it holds was taken
// away by someone else. The engine finds it by a type assertion on the
// store; lease renewal stays the backstop (a notice may be lost).
//
// Notices are sent only by transitions that take a lease from its holder:
// an operator's cancel, complete, fail or delay of an active execution, a
// revoke, a lease marked expired, an attempt timeout and an execution
// deadline. A holder's own complete, fail, delay or cancel sends nothing, so
// the hot path does not pay.
type LeaseNotifier interface {
	// WatchLeases calls f with every notice for leases held by instance,
	// after the transition that caused it has been committed. f must not
	// block and must not call the store. A store that may have lost notices
	// (a subscription that was down) calls f with a LeaseNoticeRecheck
	// notice, asking the watcher to re-check every lease it holds. The
	// returned func stops the watch.
	WatchLeases(instance WorkerInstanceID, f func(LeaseNotice)) (stop func())
}

// LeaseNoticeKind says how a lease was taken from its holder.
type LeaseNoticeKind string

// Lease notice kinds.
const (
	// LeaseNoticeCancelled: an operator cancelled the execution.
	LeaseNoticeCancelled LeaseNoticeKind = "cancelled"
	// LeaseNoticeRevoked: the lease was revoked (LeaseRevoke).
	LeaseNoticeRevoked LeaseNoticeKind = "revoked"
	// LeaseNoticeExpired: the lease expired and was marked reclaimable.
	LeaseNoticeExpired LeaseNoticeKind = "expired"
	// LeaseNoticeOverridden: an operator completed, failed or delayed the
	// execution in the holder's place.
	LeaseNoticeOverridden LeaseNoticeKind = "overridden"
	// LeaseNoticeTimedOut: the attempt timeout or the execution deadline
	// passed.
	LeaseNoticeTimedOut LeaseNoticeKind = "timed_out"
	// LeaseNoticeRecheck: notices may have been lost (the store's
	// connection was down); re-check every lease held. ID and LeaseEpoch
	// are zero.
	LeaseNoticeRecheck LeaseNoticeKind = "recheck"
)

// LeaseNotice tells a worker instance that its lease of execution ID at
// epoch LeaseEpoch is gone.
type LeaseNotice struct {
	Kind       LeaseNoticeKind
	ID         ExecutionID
	LeaseEpoch uint64
}

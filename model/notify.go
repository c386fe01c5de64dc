package model

// PartitionAll is the partition a WorkNotifier reports when a whole lane
// may have work at once (a resumed lane, LaneStore): every idle worker of
// the lane should look, not just one.
const PartitionAll = -2

// WorkNotifier is implemented by stores that can tell a waiting worker that
// a lane may have new eligible work, so idle workers need not poll.
type WorkNotifier interface {
	// WatchWork calls f whenever an execution of lane may have become
	// eligible (created, promoted, unblocked, requeued), possibly by another
	// process, with the partition the execution lives on (-1 when unknown,
	// as after a lost subscription; PartitionAll after the lane was
	// resumed). f must not block and must not call the
	// store. Spurious calls are allowed. The returned func stops the watch.
	WatchWork(lane LaneID, f func(partition int)) (stop func())
}

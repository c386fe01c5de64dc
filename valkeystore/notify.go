package valkeystore

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Work notifications.
//
// Every script that puts an execution into a lane's eligible index (create,
// promote, unblock, recover, replay, a past-due delay) publishes on the
// channel P:work:<lane> in the same atomic step, and so does the last step
// of a lane's resume (the message '*': the whole lane). WatchWork subscribes to the
// lane's channel (one subscription per lane and store, shared by all its
// watchers) and calls the watchers' functions for each message, so an idle
// worker in any process wakes without polling.
//
// Trade-offs of pub/sub (against, say, a per-lane ready list popped with a
// blocking command):
//   - Delivery is at most once and only to connected subscribers. A message
//     published while a subscription is down is lost, so after every
//     reconnect the watchers are called once (a spurious wake-up is allowed
//     and makes them look at the eligible index themselves). Workers should
//     still re-check on their idle timer: the notification shortens the
//     wait, it is not the only way work is found.
//   - It costs nothing when nobody listens, adds no keys, and needs no
//     cleanup; a ready list would grow while no worker drains it and would
//     need its own trimming and per-partition slots.
//   - On a cluster, PUBLISH is broadcast to every node over the cluster bus
//     (any node's subscribers hear it), so one subscription per lane suffices
//     whatever slot the lane's partitions live on; the broadcast costs bus
//     traffic proportional to the publish rate. Sharded pub/sub would avoid
//     that but ties a channel to one slot, while a spread lane's executions
//     live on many.
//   - A message that crosses the cluster bus arrives late: the bench saw a
//     p50 of 12 ms from submit to a worker starting when the subscription
//     sat on another node, against 0.7 ms on the publishing node (the same
//     delay is reported in redis/redis#11869). So the subscription is pinned
//     to the node that owns the lane's solo partition, where every
//     execution of a solo lane (the default) is created and published: the
//     dedicated connection first runs EXISTS on a key of that partition,
//     which binds it to the slot's node, then subscribes there. A spread
//     lane's other partitions still reach it over the bus.
//   - Each watched lane holds one dedicated connection of the client while
//     it is watched (a subscribed connection accepts no other command on
//     RESP2 servers and miniredis). f runs on that connection's reader
//     goroutine and so must not block, as model.WorkNotifier requires.

// subscribeTimeout bounds how long WatchWork waits for the subscription to be
// confirmed before it returns.
const subscribeTimeout = 5 * time.Second

// resubscribeDelay is the pause before a lost subscription is retried.
const resubscribeDelay = 250 * time.Millisecond

// WatchWork implements model.WorkNotifier. It returns once the lane's
// subscription is confirmed (or after a few seconds if the server does not
// answer, in which case the subscription keeps being retried).
func (s *Store) WatchWork(lane model.LaneID, f func(partition int)) (stop func()) {
	return addWatch(s, s.watches, lane, f, func() subscription[int] {
		return subscription[int]{
			channel: s.keys.workChannel(lane),
			// Bind the connection to the node of the lane's solo partition
			// (a no-op on a single server): the subscription then hears
			// that partition's publishes first-hand.
			pin: func(ctx context.Context, dc valkey.DedicatedClient) error {
				return dc.Do(ctx, dc.B().Exists().Key(s.keys.idx(s.cfg.SoloPartition(lane))+"lanes").Build()).Error()
			},
			// The message is the execution's id, which names its partition,
			// or '*' from a resume of the lane (lane_resume.lua).
			parse: func(msg string) (int, bool) {
				if msg == "*" {
					return model.PartitionAll, true
				}
				if id, err := model.ParseExecutionID(msg); err == nil {
					return id.Partition(), true
				}
				return -1, true
			},
			lost: -1, // work may have been published meanwhile, on any partition
		}
	})
}

// Close stops every watch of the store (work, lease, stream and feed
// watches). It does not close the client.
func (s *Store) Close() {
	s.watchMu.Lock()
	s.closed = true
	s.watchMu.Unlock()
	closeWatches(s, s.watches)
	closeWatches(s, s.leaseWatches)
	closeWatches(s, s.streamWatches)
	closeWatches(s, s.feedWatches)
}

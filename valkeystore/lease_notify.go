package valkeystore

import (
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// Lease notices.
//
// Every script that takes a lease away from its holder (an operator's
// cancel, complete, fail or delay, a revoke, a lease marked expired, an
// attempt timeout or execution deadline) publishes "<kind>|<epoch>|<id>" on
// the channel P:lease:<instance> of the holder in the same atomic step
// (notify_lease in lua/lib/state.lua). The holder's own complete, fail, delay and
// cancel publish nothing, so the hot path pays nothing. WatchLeases
// subscribes to an instance's channel (one subscription per instance and
// store, shared by its watchers).
//
// The trade-offs are those of the work notifications (notify.go): delivery
// is at most once and only to a connected subscriber, so after every
// resubscription the watchers get a LeaseNoticeRecheck notice (re-check
// every lease held), and the worker's lease renewal stays the backstop. On
// a cluster PUBLISH reaches every node, so the subscription may sit on any
// node (a worker's leases live on many partitions; there is no node to pin
// it to).

// WatchLeases implements model.LeaseNotifier. It returns once the
// instance's subscription is confirmed (or after a few seconds if the
// server does not answer, in which case the subscription keeps being
// retried). f runs on the subscription's reader goroutine.
func (s *Store) WatchLeases(instance model.WorkerInstanceID, f func(model.LeaseNotice)) (stop func()) {
	return addWatch(s, s.leaseWatches, instance, f, func() subscription[model.LeaseNotice] {
		return subscription[model.LeaseNotice]{
			channel: s.keys.leaseChannel(instance),
			parse:   parseLeaseNotice,
			lost:    model.LeaseNotice{Kind: model.LeaseNoticeRecheck},
		}
	})
}

// parseLeaseNotice parses notify_lease's "<kind>|<epoch>|<id>".
func parseLeaseNotice(msg string) (model.LeaseNotice, bool) {
	kind, rest, ok1 := strings.Cut(msg, "|")
	epoch, id, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 {
		return model.LeaseNotice{}, false
	}
	e, err := strconv.ParseUint(epoch, 10, 64)
	if err != nil {
		return model.LeaseNotice{}, false
	}
	eid, err := model.ParseExecutionID(id)
	if err != nil {
		return model.LeaseNotice{}, false
	}
	return model.LeaseNotice{Kind: model.LeaseNoticeKind(kind), ID: eid, LeaseEpoch: e}, true
}

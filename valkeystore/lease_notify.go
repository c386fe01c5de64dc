package valkeystore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Lease notices.
//
// Every script that takes a lease away from its holder (an operator's
// cancel, complete, fail or delay, a revoke, a lease marked expired, an
// attempt timeout or execution deadline) publishes "<kind>|<epoch>|<id>" on
// the channel P:lease:<instance> of the holder in the same atomic step
// (notify_lease in lib.lua). The holder's own complete, fail, delay and
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

// leaseWatch is the subscription of one worker instance.
type leaseWatch struct {
	fs     map[int]func(model.LeaseNotice)
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once the first subscription is confirmed
}

// WatchLeases implements model.LeaseNotifier. It returns once the
// instance's subscription is confirmed (or after a few seconds if the
// server does not answer, in which case the subscription keeps being
// retried). f runs on the subscription's reader goroutine.
func (s *Store) WatchLeases(instance model.WorkerInstanceID, f func(model.LeaseNotice)) (stop func()) {
	s.watchMu.Lock()
	if s.closed {
		s.watchMu.Unlock()
		return func() {}
	}
	w := s.leaseWatches[instance]
	if w == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w = &leaseWatch{fs: make(map[int]func(model.LeaseNotice)), cancel: cancel,
			done: make(chan struct{}), ready: make(chan struct{})}
		s.leaseWatches[instance] = w
		go s.subscribeLeases(ctx, instance, w)
	}
	s.watchSeq++
	id := s.watchSeq
	w.fs[id] = f
	s.watchMu.Unlock()

	// Real time on purpose, as in WatchWork.
	wctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	select {
	case <-w.ready:
	case <-w.done:
	case <-wctx.Done():
	}
	cancel()

	return func() {
		s.watchMu.Lock()
		delete(w.fs, id)
		last := len(w.fs) == 0 && s.leaseWatches[instance] == w
		if last {
			delete(s.leaseWatches, instance)
		}
		s.watchMu.Unlock()
		if last {
			w.cancel()
			<-w.done
		}
	}
}

// closeLeaseWatches stops every lease watch; the caller has set s.closed.
func (s *Store) closeLeaseWatches() {
	s.watchMu.Lock()
	ws := make([]*leaseWatch, 0, len(s.leaseWatches))
	for wi, w := range s.leaseWatches {
		ws = append(ws, w)
		delete(s.leaseWatches, wi)
	}
	s.watchMu.Unlock()
	for _, w := range ws {
		w.cancel()
		<-w.done
	}
}

// subscribeLeases keeps instance's channel subscribed until ctx ends.
func (s *Store) subscribeLeases(ctx context.Context, instance model.WorkerInstanceID, w *leaseWatch) {
	defer close(w.done)
	ch := s.keys.leaseChannel(instance)
	var confirmed atomic.Bool
	for {
		rctx := valkey.WithOnSubscriptionHook(ctx, func(sub valkey.PubSubSubscription) {
			if sub.Kind != "subscribe" {
				return
			}
			if confirmed.CompareAndSwap(false, true) {
				close(w.ready)
				return
			}
			// Resubscribed after a loss: notices may have been published
			// meanwhile.
			s.fireLease(w, model.LeaseNotice{Kind: model.LeaseNoticeRecheck})
		})
		dc, release := s.client.Dedicate()
		_ = dc.Receive(rctx, dc.B().Subscribe().Channel(ch).Build(), func(m valkey.PubSubMessage) {
			if n, ok := parseLeaseNotice(m.Message); ok {
				s.fireLease(w, n)
			}
		})
		release()
		if ctx.Err() != nil {
			return
		}
		pause, cancel := context.WithTimeout(ctx, resubscribeDelay)
		<-pause.Done()
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
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

// fireLease calls w's functions in registration order.
func (s *Store) fireLease(w *leaseWatch, n model.LeaseNotice) {
	s.watchMu.Lock()
	ids := make([]int, 0, len(w.fs))
	for id := range w.fs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	calls := make([]func(model.LeaseNotice), 0, len(ids))
	for _, id := range ids {
		calls = append(calls, w.fs[id])
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f(n)
	}
}

package valkeystore

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"
)

// The subscription machinery shared by work notifications (notify.go,
// one channel per lane, message = a partition) and lease notices
// (lease_notify.go, one channel per worker instance, message = a notice).

// watch is the subscription of one channel, shared by its watchers.
type watch[M any] struct {
	fs     map[int]func(M)
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once the first subscription is confirmed
	// linger is set while the watch has no watchers and waits out
	// s.watchLinger before it ends (s.watchMu guards it)
	linger context.Context
	// endLinger cancels linger: a watcher came back, or the store closed
	endLinger context.CancelFunc
}

// watchLinger is how long a subscription outlives its last watcher
// (Store.watchLinger, which tests shorten). A reader that waits again
// soon after it stopped (TailStream called in a loop, one Subscribe after
// another) finds the subscription still in place and confirmed: a new one
// would cost a connection and a few commands, and its first notice
// reached the bench's tail about 0.25 ms later than an established
// subscription's.
const watchLinger = 2 * time.Second

// subscription says how to keep one channel subscribed.
type subscription[M any] struct {
	channel string
	// pin, if set, runs on the dedicated connection before it subscribes
	// (to bind it to a cluster node); a failure retries the subscription.
	pin func(ctx context.Context, dc valkey.DedicatedClient) error
	// parse turns a message into what the watchers get; false drops it.
	parse func(msg string) (M, bool)
	// lost is what the watchers get after a resubscription: messages may
	// have been published while the subscription was down.
	lost M
}

// addWatch registers f on the watch of key in ws, starting its
// subscription if it is the first, and waits until the subscription is
// confirmed (or subscribeTimeout passed; it keeps being retried). The
// returned stop (idempotent) unregisters f; the subscription ends
// s.watchLinger after its last watcher stopped, unless one registers
// meanwhile and takes it over.
func addWatch[K comparable, M any](s *Store, ws map[K]*watch[M], key K, f func(M), sub func() subscription[M]) (stop func()) {
	s.watchMu.Lock()
	if s.closed {
		s.watchMu.Unlock()
		return func() {}
	}
	w := ws[key]
	if w != nil && w.linger != nil {
		w.endLinger()
		w.linger, w.endLinger = nil, nil
	}
	if w == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w = &watch[M]{fs: make(map[int]func(M)), cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
		ws[key] = w
		go keepSubscribed(ctx, s, w, sub())
	}
	s.watchSeq++
	id := s.watchSeq
	w.fs[id] = f
	s.watchMu.Unlock()

	// Real time on purpose: this bounds a wait on the network, not engine
	// time (context timers are not the engine's clock).
	wctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	select {
	case <-w.ready:
	case <-w.done:
	case <-wctx.Done():
	}
	cancel()

	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		delete(w.fs, id)
		if len(w.fs) > 0 || ws[key] != w || w.linger != nil {
			return
		}
		// the last watcher left: the subscription ends after watchLinger
		// unless a watcher comes back meanwhile
		lctx, endLinger := context.WithTimeout(context.Background(), s.watchLinger)
		w.linger, w.endLinger = lctx, endLinger
		context.AfterFunc(lctx, func() {
			s.watchMu.Lock()
			last := w.linger == lctx && ws[key] == w && len(w.fs) == 0
			if last {
				delete(ws, key)
				w.linger, w.endLinger = nil, nil
			}
			s.watchMu.Unlock()
			endLinger()
			if last {
				w.cancel()
				<-w.done
			}
		})
	}
}

// closeWatches stops every watch in ws; the caller has set s.closed.
func closeWatches[K comparable, M any](s *Store, ws map[K]*watch[M]) {
	s.watchMu.Lock()
	all := make([]*watch[M], 0, len(ws))
	for k, w := range ws {
		all = append(all, w)
		delete(ws, k)
		if w.linger != nil {
			w.endLinger()
			w.linger, w.endLinger = nil, nil
		}
	}
	s.watchMu.Unlock()
	for _, w := range all {
		w.cancel()
		<-w.done
	}
}

// keepSubscribed keeps sub's channel subscribed until ctx ends.
func keepSubscribed[M any](ctx context.Context, s *Store, w *watch[M], sub subscription[M]) {
	defer close(w.done)
	var confirmed atomic.Bool
	for {
		rctx := valkey.WithOnSubscriptionHook(ctx, func(ps valkey.PubSubSubscription) {
			if ps.Kind != "subscribe" {
				return
			}
			if confirmed.CompareAndSwap(false, true) {
				close(w.ready)
				return
			}
			fire(s, w, sub.lost)
		})
		// A dedicated connection: miniredis (and RESP2 servers) accept no
		// other command on a subscribed connection. Releasing it makes the
		// client unsubscribe it before reuse.
		dc, release := s.client.Dedicate()
		if sub.pin == nil || sub.pin(rctx, dc) == nil {
			_ = dc.Receive(rctx, dc.B().Subscribe().Channel(sub.channel).Build(), func(m valkey.PubSubMessage) {
				if msg, ok := sub.parse(m.Message); ok {
					fire(s, w, msg)
				}
			})
		}
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

// fire calls w's functions in registration order with msg.
func fire[M any](s *Store, w *watch[M], msg M) {
	s.watchMu.Lock()
	ids := make([]int, 0, len(w.fs))
	for id := range w.fs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	calls := make([]func(M), 0, len(ids))
	for _, id := range ids {
		calls = append(calls, w.fs[id])
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f(msg)
	}
}

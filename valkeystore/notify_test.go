package valkeystore

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// waitSignal waits for a notification; the deadline only bounds a failing
// test.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notification: %s", what)
	}
}

func notifier() (func(), <-chan struct{}, *atomic.Int64) {
	ch := make(chan struct{}, 100)
	var n atomic.Int64
	return func() {
		n.Add(1)
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch, &n
}

// TestWatchWork checks that a watcher of one store (one process) is woken
// by work a second store (another process, another client) makes eligible.
func TestWatchWork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		opts := &Options{Prefix: "notify" + b.name, Partitions: model.PartitionConfig{FlowPartitions: 4}}
		clients := b.server(t)
		watcher := newStoreWith(t, clients(), opts)
		producer := newStoreWith(t, clients(), opts)
		var sq seq

		f1, ch1, n1 := notifier()
		stop1 := watcher.WatchWork(lane, f1)
		fOther, _, nOther := notifier()
		stopOther := watcher.WatchWork(lane2, fOther)
		defer stopOther()

		// work on another lane first, then on the watched lane: messages
		// arrive in publish order, so once lane's arrives lane2's has too
		create := func(l model.LaneID, delay time.Time) model.ExecutionID {
			id := sq.exec(1)
			c := createP(id, at(0))
			c.Lane, c.DelayUntil = l, delay
			if _, err := producer.ExecutionCreate(bg, c); err != nil {
				t.Fatal(err)
			}
			return id
		}
		create(lane2, time.Time{})
		create(lane, time.Time{})
		waitSignal(t, ch1, "create on the watched lane")
		if got := n1.Load(); got != 1 {
			t.Fatalf("watcher of %s called %d times, want 1", lane, got)
		}
		_ = nOther

		// a delayed create does not notify; its promotion does
		d := create(lane, at(time.Hour))
		if _, err := producer.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: d, Lane: lane, Now: at(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, ch1, "promotion")
		if got := n1.Load(); got != 2 {
			t.Fatalf("watcher called %d times, want 2", got)
		}

		// a second watcher shares the subscription; a stopped one is not
		// called again
		f2, ch2, _ := notifier()
		stop2 := watcher.WatchWork(lane, f2)
		stop1()
		create(lane, time.Time{})
		waitSignal(t, ch2, "second watcher")
		if got := n1.Load(); got != 2 {
			t.Fatalf("stopped watcher called: %d", got)
		}
		stop2()
		stop2() // idempotent
	})
}

// TestWatchWorkRace creates work right after WatchWork returns: the
// subscription is confirmed by then, so the notification is not lost.
func TestWatchWorkRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		opts := &Options{Prefix: "race" + b.name}
		s := newStore(t, b, opts)
		var sq seq
		for i := range 5 {
			f, ch, _ := notifier()
			l := model.LaneID("race-" + string(rune('a'+i)))
			stop := s.WatchWork(l, f)
			c := createP(sq.exec(0), at(0))
			c.Lane = l
			if _, err := s.ExecutionCreate(bg, c); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, ch, string(l))
			stop()
		}
	})
}

func TestCloseStopsWatches(t *testing.T) {
	s := newStore(t, backends[0], nil)
	f, _, _ := notifier()
	stop := s.WatchWork(lane, f)
	s.Close()
	stop() // after Close: harmless
	if len(s.watches) != 0 {
		t.Fatal("watches left after Close")
	}
	stop2 := s.WatchWork(lane, f) // after Close: a no-op
	stop2()
}

// TestWatchWorkSurvivesRestart restarts the server under a watch: the
// watcher is called once the subscription is back (work may have been
// published while it was down), and notifications flow again.
func TestWatchWorkSurvivesRestart(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	watcherStore := newStoreWith(t, newClient(t, srv.Addr()), &Options{Prefix: "restart"})
	f, ch, _ := notifier()
	stop := watcherStore.WatchWork(lane, f)
	defer stop()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "resubscription after restart")
	producer := newStoreWith(t, newClient(t, srv.Addr()), &Options{Prefix: "restart"})
	var sq seq
	// the wake-up above is made on the resubscription's confirmation, so
	// the subscription is live now
	for len(ch) > 0 {
		<-ch
	}
	if _, err := producer.ExecutionCreate(bg, createP(sq.exec(0), at(0))); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "create after restart")
}

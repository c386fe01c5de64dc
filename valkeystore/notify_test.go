package valkeystore

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

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

func notifier() (func(int), <-chan struct{}, *atomic.Int64) {
	ch := make(chan struct{}, 100)
	var n atomic.Int64
	return func(partition int) {
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

		notify1, ch1, n1 := notifier()
		var part1 atomic.Int64 // the partition the last call reported
		stop1 := watcher.WatchWork(lane, func(p int) { part1.Store(int64(p)); notify1(p) })
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
		created := create(lane, time.Time{})
		waitSignal(t, ch1, "create on the watched lane")
		if got := n1.Load(); got != 1 {
			t.Fatalf("watcher of %s called %d times, want 1", lane, got)
		}
		if got := part1.Load(); got != int64(created.Partition()) {
			t.Fatalf("notified partition %d, want %d", got, created.Partition())
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

// TestWatchLingers checks that a subscription outlives its last watcher
// by watchLinger: a watcher that comes back meanwhile (a reader calling
// TailStream in a loop) gets the same confirmed subscription and its
// notices, and one that does not lets it end.
func TestWatchLingers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, nil)
		linger := func(d time.Duration) {
			s.watchMu.Lock()
			s.watchLinger = d
			s.watchMu.Unlock()
		}
		linger(time.Hour)
		var sq seq
		f, ch, _ := notifier()
		stop := s.WatchWork(lane, f)
		s.watchMu.Lock()
		w := s.watches[lane]
		s.watchMu.Unlock()
		stop()
		stop = s.WatchWork(lane, f)
		s.watchMu.Lock()
		same := s.watches[lane] == w
		s.watchMu.Unlock()
		if !same {
			t.Fatal("a watcher that came back within watchLinger got a new subscription")
		}
		if _, err := s.ExecutionCreate(bg, createP(sq.exec(0), at(0))); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, ch, "create after the watcher came back")
		stop()

		// a subscription nobody comes back to ends after watchLinger
		linger(time.Millisecond)
		stop = s.WatchWork(lane2, f)
		s.watchMu.Lock()
		w = s.watches[lane2]
		s.watchMu.Unlock()
		stop()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the subscription did not end after watchLinger")
		}
		s.watchMu.Lock()
		_, left := s.watches[lane2]
		s.watchMu.Unlock()
		if left {
			t.Fatal("an ended subscription is still in the store's watches")
		}
		// Close ends the lingering one of lane at once
		s.watchMu.Lock()
		w = s.watches[lane]
		s.watchMu.Unlock()
		s.Close()
		select {
		case <-w.done:
		default:
			t.Fatal("Close left a lingering subscription running")
		}
	})
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

// TestWatchWorkOnSlotOwner checks that on a cluster a lane's subscription
// sits on the node that owns the lane's solo partition, the node whose
// scripts publish the lane's work: a message from another node would
// cross the cluster bus, which delays it by milliseconds (redis#11869).
func TestWatchWorkOnSlotOwner(t *testing.T) {
	clusterClient(t) // skips when no server is installed
	opts := &Options{Prefix: "pin", Partitions: model.PartitionConfig{FlowPartitions: 16}}
	s := newStoreWith(t, clusterClient(t), opts)
	lanes := []model.LaneID{"alpha", "beta", "gamma", "delta", "epsilon"}
	owners := map[string]bool{}
	for _, l := range lanes {
		f, ch, _ := notifier()
		stop := s.WatchWork(l, f)
		channel := s.keys.workChannel(l)
		key := s.keys.idx(s.cfg.SoloPartition(l)) + "lanes"
		var subscribedOn, ownedBy []string
		for _, addr := range clusterSrv.Addrs() {
			node := newNodeClient(t, addr)
			n, err := node.Do(bg, node.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
			if err != nil {
				t.Fatal(err)
			}
			if n[channel] > 0 {
				subscribedOn = append(subscribedOn, addr)
			}
			// only the slot's owner answers for the key; the others redirect
			if err := node.Do(bg, node.B().Exists().Key(key).Build()).Error(); err == nil {
				ownedBy = append(ownedBy, addr)
			} else if !strings.Contains(err.Error(), "MOVED") {
				t.Fatal(err)
			}
		}
		if len(ownedBy) != 1 || len(subscribedOn) != 1 || subscribedOn[0] != ownedBy[0] {
			t.Fatalf("lane %s: subscribed on %v, partition %d owned by %v", l, subscribedOn, s.cfg.SoloPartition(l), ownedBy)
		}
		owners[ownedBy[0]] = true
		// and it hears the lane's work
		c := createP(model.NewExecutionID(s.cfg.SoloPartition(l), model.NewUUIDv4([16]byte{byte(len(owners)), 7})), at(0))
		c.Lane = l
		if _, err := s.ExecutionCreate(bg, c); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, ch, "create on "+string(l))
		stop()
	}
	if len(owners) < 2 {
		t.Logf("the lanes' partitions fell on %d node(s) only", len(owners))
	}
}

// newNodeClient is a client of one cluster node that does not follow
// redirections.
func newNodeClient(t *testing.T, addr string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

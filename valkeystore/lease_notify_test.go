package valkeystore

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// leaseNotices returns a watcher function and the channel it feeds.
func leaseNotices() (func(model.LeaseNotice), chan model.LeaseNotice) {
	ch := make(chan model.LeaseNotice, 100)
	return func(n model.LeaseNotice) {
		select {
		case ch <- n:
		default:
		}
	}, ch
}

// nextNotice waits for a notice; the deadline only bounds a failing test.
func nextNotice(t *testing.T, ch <-chan model.LeaseNotice, what string) model.LeaseNotice {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("no lease notice: %s", what)
		return model.LeaseNotice{}
	}
}

// TestWatchLeasesAcrossProcesses: an operator's cancel in one process (its
// own client and store) reaches the lease holder's watch in another.
func TestWatchLeasesAcrossProcesses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		opts := &Options{Prefix: "leasenotice" + b.name, Partitions: model.PartitionConfig{FlowPartitions: 4}}
		clients := b.server(t)
		holder := newStoreWith(t, clients(), opts)
		operator := newStoreWith(t, clients(), opts)
		var sq seq
		f, ch := leaseNotices()
		stop := holder.WatchLeases("wi1", f)
		defer stop()
		id := sq.exec(2)
		if _, err := holder.ExecutionCreate(bg, createP(id, at(0))); err != nil {
			t.Fatal(err)
		}
		cr, err := holder.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi1", ttl), Now: at(0)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := operator.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: id, Reason: "no longer wanted", Source: model.SourceOperator, Now: at(time.Second)}); err != nil {
			t.Fatal(err)
		}
		want := model.LeaseNotice{Kind: model.LeaseNoticeCancelled, ID: id, LeaseEpoch: cr.Lease.Epoch}
		if got := nextNotice(t, ch, "operator cancel"); got != want {
			t.Fatalf("notice %+v, want %+v", got, want)
		}
	})
}

// TestWatchLeasesRecheckAfterRestart restarts the server under a watch:
// notices published while the subscription was down are lost, so the
// watcher is told to re-check its leases once it is back, and notices flow
// again.
func TestWatchLeasesRecheckAfterRestart(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	s := newStoreWith(t, newClient(t, srv.Addr()), &Options{Prefix: "leaserestart"})
	f, ch := leaseNotices()
	stop := s.WatchLeases("wi1", f)
	defer stop()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := nextNotice(t, ch, "recheck after restart"); got != (model.LeaseNotice{Kind: model.LeaseNoticeRecheck}) {
		t.Fatalf("after restart: %+v, want a recheck", got)
	}
	// a fresh client: the first one's pooled connection died with the
	// server
	s = newStoreWith(t, newClient(t, srv.Addr()), &Options{Prefix: "leaserestart"})
	var sq seq
	id := sq.exec(0)
	if _, err := s.ExecutionCreate(bg, createP(id, at(0))); err != nil {
		t.Fatal(err)
	}
	cr, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi1", ttl), Now: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: id, Reason: "operator", Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	want := model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: id, LeaseEpoch: cr.Lease.Epoch}
	if got := nextNotice(t, ch, "revoke after restart"); got != want {
		t.Fatalf("notice %+v, want %+v", got, want)
	}
}

func TestParseLeaseNotice(t *testing.T) {
	id := model.NewExecutionID(7, model.NewUUIDv4([16]byte{1, 2, 3}))
	n, ok := parseLeaseNotice("revoked|12|" + id.String())
	if !ok || n != (model.LeaseNotice{Kind: model.LeaseNoticeRevoked, ID: id, LeaseEpoch: 12}) {
		t.Fatalf("parse: %+v %v", n, ok)
	}
	for _, bad := range []string{"", "revoked", "revoked|x|" + id.String(), "revoked|1|nope"} {
		if _, ok := parseLeaseNotice(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

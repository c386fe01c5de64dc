package memstore

import (
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// Lease notices: a transition that takes a lease from its holder queues a
// notice for the holder's instance while it runs under the store's lock;
// the notices are handed to the watchers once the lock is released, so a
// watcher sees the transition committed.

type leaseNote struct {
	instance model.WorkerInstanceID
	n        model.LeaseNotice
}

// WatchLeases implements model.LeaseNotifier: f is called with every notice
// for leases held by instance, in the goroutine of the store call that
// caused it, after the store's lock is released. f must not block and must
// not call the store. memstore never loses notices, so it never sends
// LeaseNoticeRecheck.
func (s *Store) WatchLeases(instance model.WorkerInstanceID, f func(model.LeaseNotice)) (stop func()) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchSeq++
	id := s.watchSeq
	if s.leaseWatchers[instance] == nil {
		s.leaseWatchers[instance] = make(map[int]func(model.LeaseNotice))
	}
	s.leaseWatchers[instance][id] = f
	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		delete(s.leaseWatchers[instance], id)
		if len(s.leaseWatchers[instance]) == 0 {
			delete(s.leaseWatchers, instance)
		}
	}
}

// unlock releases the store's lock and then delivers the lease, stream and
// feed notices the transition queued.
func (s *Store) unlock() {
	out, sout, fout := s.leaseOut, s.streamOut, s.feedOut
	s.leaseOut, s.streamOut, s.feedOut = nil, nil, nil
	s.mu.Unlock()
	for _, ln := range out {
		s.deliverLease(ln)
	}
	if len(sout) > 0 {
		s.deliverStreams(sout)
	}
	if len(fout) > 0 {
		s.deliverFeeds(fout)
	}
}

func (s *Store) deliverLease(ln leaseNote) {
	s.watchMu.Lock()
	fs := s.leaseWatchers[ln.instance]
	ids := make([]int, 0, len(fs))
	for id := range fs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	calls := make([]func(model.LeaseNotice), 0, len(ids))
	for _, id := range ids {
		calls = append(calls, fs[id])
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f(ln.n)
	}
}

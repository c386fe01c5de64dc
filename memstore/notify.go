package memstore

import (
	"slices"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// WatchWork implements model.WorkNotifier: f is called whenever an
// execution of lane becomes eligible (created, promoted, unblocked,
// requeued), with the execution's partition. f runs while the store is locked: it must not block and must
// not call the store; notifying a model.Signal is the intended use.
func (s *Store) WatchWork(lane model.LaneID, f func(partition int)) (stop func()) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchSeq++
	id := s.watchSeq
	if s.watchers[lane] == nil {
		s.watchers[lane] = make(map[int]func(int))
	}
	s.watchers[lane][id] = f
	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		delete(s.watchers[lane], id)
	}
}

func (s *Store) notifyLane(lane model.LaneID, partition int) {
	s.watchMu.Lock()
	fs := s.watchers[lane]
	if len(fs) == 0 {
		s.watchMu.Unlock()
		return
	}
	ids := make([]int, 0, len(fs))
	for id := range fs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	calls := make([]func(int), 0, len(ids))
	for _, id := range ids {
		calls = append(calls, fs[id])
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f(partition)
	}
}

// idemKey scopes an idempotency key to a partition and a namespace, as the
// Valkey key ff:idem:{fp:N}:<ns>:<key> does.
type idemKey struct {
	part int
	ns   model.Namespace
	key  string
}

type idemEntry struct {
	id        model.ExecutionID
	expiresAt int64
}

// idemQueue orders idempotency entries by expiry so creates can drop a few
// expired ones each time and the map does not grow without bound.
type idemQueue struct {
	tree *btree.BTreeG[idemItem]
}

type idemItem struct {
	expiresAt int64
	key       idemKey
}

func newIdemQueue() *idemQueue {
	return &idemQueue{tree: btree.NewBTreeGOptions(func(a, b idemItem) bool {
		if a.expiresAt != b.expiresAt {
			return a.expiresAt < b.expiresAt
		}
		if a.key.part != b.key.part {
			return a.key.part < b.key.part
		}
		if a.key.ns != b.key.ns {
			return a.key.ns < b.key.ns
		}
		return a.key.key < b.key.key
	}, btree.Options{NoLocks: true})}
}

// gcIdem drops up to n idempotency entries that expired by now.
func (s *Store) gcIdem(now int64, n int) {
	for range n {
		it, ok := s.idemGC.tree.Min()
		if !ok || it.expiresAt > now {
			return
		}
		s.idemGC.tree.Delete(it)
		if cur, ok := s.idem[it.key]; ok && cur.expiresAt == it.expiresAt {
			delete(s.idem, it.key)
		}
	}
}

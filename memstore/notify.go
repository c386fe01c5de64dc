package memstore

import (
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// WatchWork implements model.WorkNotifier: f is called whenever an
// execution of lane becomes eligible (created, promoted, unblocked,
// requeued; addEligible, as Lua's add_eligible publishes on the lane's work
// channel), with the execution's partition. f runs while the store is
// locked: it must not block and must not call the store; notifying a
// model.Signal is the intended use.
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

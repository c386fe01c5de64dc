package memstore

import (
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// workerRec is one registered worker instance.
type workerRec struct {
	workerID     model.WorkerID
	instance     model.WorkerInstanceID
	session      string
	lanes        []model.LaneID
	caps         model.Capabilities
	ttl          int64
	registeredAt int64
	heartbeatAt  int64
	expiresAt    int64
}

// workerAlive reports whether w is registered at now.
func workerAlive(w *workerRec, now int64) bool { return w.expiresAt > now }

// info is w as the model reports it.
func (w *workerRec) info(ns model.Namespace) model.WorkerInfo {
	return model.WorkerInfo{
		Namespace: ns, WorkerID: w.workerID, WorkerInstanceID: w.instance,
		Lanes:           slices.Clone(w.lanes),
		Capabilities:    cloneCaps(w.caps),
		TTL:             time.Duration(w.ttl) * time.Millisecond,
		RegisteredAt:    tm(w.registeredAt),
		LastHeartbeatAt: tm(w.heartbeatAt),
		ExpiresAt:       tm(w.expiresAt),
	}
}

// ns returns the worker instances of namespace n, creating the map.
func (s *Store) ns(n model.Namespace) map[model.WorkerInstanceID]*workerRec {
	m := s.workers[n]
	if m == nil {
		m = make(map[model.WorkerInstanceID]*workerRec)
		s.workers[n] = m
	}
	return m
}

// sortedInstances returns the instances of m in byte order.
func sortedInstances(m map[model.WorkerInstanceID]*workerRec) []model.WorkerInstanceID {
	ids := make([]model.WorkerInstanceID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

package memstore

import (
	"slices"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// The layout of the store, mirroring valkeystore's key schema
// (valkeystore/keys.go): per partition, the lanes of the partition in byte
// order, each lane's sorted sets (eligible, delayed, terminal, suspended,
// one blocked set per blocking eligibility state, and the route groups),
// the lease-expiry, attempt-timeout and deadline sets, every execution, the
// suspended executions, the suspension-timeout and waitpoint-expiry sets,
// the waitpoints, and the idempotency keys of ExecutionCreate. Two indexes
// valkeystore derives from its records are kept here as sets: a lane's
// active set and a worker instance's leases (workerLeases); they cost
// nothing in memory.

// partition holds one partition's indexes.
type partition struct {
	lanes          map[model.LaneID]*laneIndexes
	laneNames      []model.LaneID // sorted
	leaseExpiry    *zset
	attemptTimeout *zset
	deadline       *zset
	workerLeases   map[model.WorkerInstanceID]*idset
	all            *idset
	// suspended holds the suspended executions (SuspendedList),
	// suspTimeout those whose suspension has a timeout
	// (IndexSuspensionTimeout), wpExpiry those with a pending waitpoint
	// (IndexWaitpointExpiry), and waitpoints every waitpoint by id
	// (wait.go).
	suspended   *idset
	suspTimeout *zset
	wpExpiry    *zset
	waitpoints  map[model.WaitpointID]*waitpointRec
	// retention holds the terminal executions the retention scanner
	// deletes, by when (IndexRetention; retention_ops.go).
	retention *zset
	// feed is the signal-delivery feed: the newest SignalFeedLen events,
	// oldest first, and feedSeq the last sequence number written.
	feed    []model.SignalFeedEvent
	feedSeq uint64
	// releases is the quota release outbox (admission.go), nil until
	// first used.
	releases *releaseOutbox
	// feeds holds the event feeds (feed.go), nil until first used.
	feeds map[model.FeedKind]*feedLog
	// counts holds the executions per namespace, lane, kind and public
	// state (count_ops.go), nil until first used.
	counts map[countKey]int64
}

// laneIndexes holds one lane's sorted sets in one partition.
type laneIndexes struct {
	eligible, delayed, active, terminal, suspended *zset
	blocked                                        map[model.EligibilityState]*zset
	// routeGroups groups route-blocked executions by namespace and
	// required-capability CSV (routeMember), so an unblock pass costs the
	// number of distinct sets of its namespace, not the number of blocked
	// executions.
	routeGroups map[string]*zset
	// budgetGroups and quotaGroups group the executions blocked on a
	// budget (by budget) and on a quota (by bucket), like routeGroups
	// (admission.go); nil until first used.
	budgetGroups map[model.BudgetID]*zset
	quotaGroups  map[model.QuotaBucket]*zset
}

func newLaneIndexes() *laneIndexes {
	l := &laneIndexes{
		eligible: newZset(), delayed: newZset(), active: newZset(), terminal: newZset(),
		suspended:   newZset(),
		blocked:     make(map[model.EligibilityState]*zset),
		routeGroups: make(map[string]*zset),
	}
	for _, es := range blockedStates {
		l.blocked[es] = newZset()
	}
	return l
}

func (s *Store) part(n int) *partition {
	p := s.parts[n]
	if p == nil {
		p = &partition{
			lanes:          make(map[model.LaneID]*laneIndexes),
			leaseExpiry:    newZset(),
			attemptTimeout: newZset(),
			deadline:       newZset(),
			workerLeases:   make(map[model.WorkerInstanceID]*idset),
			all:            newIDSet(),
			suspended:      newIDSet(),
			suspTimeout:    newZset(),
			wpExpiry:       newZset(),
			retention:      newZset(),
			waitpoints:     make(map[model.WaitpointID]*waitpointRec),
		}
		s.parts[n] = p
	}
	return p
}

func (p *partition) lane(l model.LaneID) *laneIndexes {
	li := p.lanes[l]
	if li == nil {
		li = newLaneIndexes()
		p.lanes[l] = li
		i, _ := slices.BinarySearch(p.laneNames, l)
		p.laneNames = slices.Insert(p.laneNames, i, l)
	}
	return li
}

func (p *partition) wl(w model.WorkerInstanceID) *idset {
	s := p.workerLeases[w]
	if s == nil {
		s = newIDSet()
		p.workerLeases[w] = s
	}
	return s
}

func (s *Store) indexesOf(e *execution) (*partition, *laneIndexes) {
	p := s.part(e.id.Partition())
	return p, p.lane(e.lane)
}

// routeMember names the route group of namespace ns and required
// capabilities csv in a lane's routeGroups: "<ns>:<csv>"; a namespace has
// no ':', so the name splits at its first ':'.
func routeMember(ns model.Namespace, csv string) string {
	return string(ns) + ":" + csv
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

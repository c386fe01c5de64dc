// Package memstore is the in-memory Store: deterministic, driven only by the
// Now of each call, laid out like the Valkey keyspace (per-partition and
// per-lane sorted sets on tidwall/btree). It is the embedded default and the
// oracle the Valkey store is compared with.
//
// All operations run under one mutex. Iteration orders are those of the
// sorted sets (score, then member bytes) or of sorted names, never of Go
// maps, so the same operations at the same times give the same results.
package memstore

import (
	"context"
	"sync"

	"github.com/flowfabric/flowfabric/model"
)

// Options configures a Store. The zero value means the defaults.
type Options struct {
	// Partitions sets the partition counts (zero: the defaults).
	Partitions model.PartitionConfig
}

// Store is the in-memory model.Store. Create it with New.
type Store struct {
	mu      sync.Mutex
	cfg     model.PartitionConfig
	parts   []*partition
	execs   map[model.ExecutionID]*execution
	idem    map[idemKey]idemEntry
	idemGC  *idemQueue
	workers map[model.Namespace]map[model.WorkerInstanceID]*workerRec

	// leaseOut holds the lease notices of the transition in progress (mu).
	leaseOut []leaseNote

	watchMu       sync.Mutex
	watchers      map[model.LaneID]map[int]func(int)
	leaseWatchers map[model.WorkerInstanceID]map[int]func(model.LeaseNotice)
	watchSeq      int
}

var (
	_ model.Store         = (*Store)(nil)
	_ model.WorkNotifier  = (*Store)(nil)
	_ model.LeaseNotifier = (*Store)(nil)
)

// New returns an empty store. It panics on an invalid partition config,
// which is a programming error.
func New(opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Partitions.Validate(); err != nil {
		panic("memstore: " + err.Error())
	}
	cfg := o.Partitions.WithDefaults()
	return &Store{
		cfg:      cfg,
		parts:    make([]*partition, cfg.FlowPartitions),
		execs:    make(map[model.ExecutionID]*execution),
		idem:     make(map[idemKey]idemEntry),
		idemGC:   newIdemQueue(),
		workers:  make(map[model.Namespace]map[model.WorkerInstanceID]*workerRec),
		watchers: make(map[model.LaneID]map[int]func(int)),

		leaseWatchers: make(map[model.WorkerInstanceID]map[int]func(model.LeaseNotice)),
	}
}

// Partitions implements model.Store.
func (s *Store) Partitions() model.PartitionConfig { return s.cfg }

// runnableSet returns the lane sorted set that holds a runnable execution in
// eligibility state es: eligible, delayed or the blocked set of es; nil for
// a state no runnable set holds.
func (l *laneIndexes) runnableSet(es model.EligibilityState) *zset {
	switch es {
	case model.EligibleNow:
		return l.eligible
	case model.NotEligibleUntilTime:
		return l.delayed
	}
	return l.blocked[es]
}

// removeFromLane removes e from whichever lane set its state puts it in.
func (s *Store) removeFromLane(e *execution) {
	_, l := s.indexesOf(e)
	switch e.lp {
	case model.PhaseRunnable:
		if z := l.runnableSet(e.es); z != nil {
			z.remove(e.id)
		}
		if e.es == model.BlockedByRoute {
			l.removeRouteGroup(e)
		}
	case model.PhaseActive:
		l.active.remove(e.id)
	case model.PhaseSuspended:
		l.suspended.remove(e.id)
	case model.PhaseTerminal:
		l.terminal.remove(e.id)
	}
}

func (l *laneIndexes) removeRouteGroup(e *execution) {
	key := routeMember(e.namespace, e.requiredCaps.CSV())
	if g := l.routeGroups[key]; g != nil {
		g.remove(e.id)
		if g.len() == 0 {
			delete(l.routeGroups, key)
		}
	}
}

// addEligible puts e in its lane's eligible set with the priority score.
func (s *Store) addEligible(e *execution) {
	_, l := s.indexesOf(e)
	l.eligible.add(e.id, model.EligibleScore(e.priority, e.createdAt))
	s.notifyLane(e.lane, e.id.Partition())
}

// makeRunnable sets e runnable, eligible now or delayed until delayUntil,
// and indexes it. The caller has already removed e from its previous lane
// set.
func (s *Store) makeRunnable(e *execution, now, delayUntil int64, delayReason model.BlockingReason, as model.AttemptState) {
	if delayUntil > now {
		e.setState(now, model.PhaseRunnable, model.OwnershipUnowned, model.NotEligibleUntilTime, delayReason, model.OutcomeNone, as)
		e.delayUntil = delayUntil
		_, l := s.indexesOf(e)
		l.delayed.add(e.id, delayUntil)
		return
	}
	e.setState(now, model.PhaseRunnable, model.OwnershipUnowned, model.EligibleNow, model.WaitingForWorker, model.OutcomeNone, as)
	e.delayUntil = 0
	s.addEligible(e)
}

// releaseLease drops the lease and every index entry that belongs to it.
// The active period ends, so a reclaim grant issued during it goes too.
func (s *Store) releaseLease(e *execution, now int64, kind model.LeaseEventKind, reason string) {
	p, l := s.indexesOf(e)
	e.addHistory(now, kind, reason)
	clearGrant(e)
	p.leaseExpiry.remove(e.id)
	p.attemptTimeout.remove(e.id)
	l.active.remove(e.id)
	s.clearLease(e)
	e.timeoutAt = 0
}

// terminate makes e terminal with outcome to. The caller has released the
// lease and removed e from its runnable set.
func (s *Store) terminate(e *execution, now int64, to model.TerminalOutcome) {
	p, l := s.indexesOf(e)
	as := model.AttemptTerminal
	if e.totalAttempts == 0 {
		as = model.AttemptNone
	}
	e.setState(now, model.PhaseTerminal, model.OwnershipUnowned, model.NotApplicable, model.BlockingNone, to, as)
	e.terminalAt = now
	e.delayUntil = 0
	clearPending(e)
	clearGrant(e)
	p.deadline.remove(e.id)
	p.attemptTimeout.remove(e.id)
	l.terminal.add(e.id, now)
}

func (s *Store) lookup(id model.ExecutionID) (*execution, error) {
	e := s.execs[id]
	if e == nil {
		return nil, model.ErrNotFound
	}
	return e, nil
}

func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	return nil
}

// withLock runs f under the store's lock once the parameters validated.
func withLock[R any](s *Store, ctx context.Context, invalid error, f func() (R, error)) (R, error) {
	var zero R
	if invalid != nil {
		return zero, invalid
	}
	if err := s.lock(ctx); err != nil {
		return zero, err
	}
	defer s.unlock()
	return f()
}

// withExec is withLock for operations on one existing execution.
func withExec[R any](s *Store, ctx context.Context, invalid error, id model.ExecutionID, f func(e *execution) (R, error)) (R, error) {
	return withLock(s, ctx, invalid, func() (R, error) {
		e, err := s.lookup(id)
		if err != nil {
			var zero R
			return zero, err
		}
		return f(e)
	})
}

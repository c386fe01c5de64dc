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

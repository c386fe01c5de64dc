package scan

import (
	"cmp"
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Index reconciler defaults.
const (
	// DefaultIndexRepairInterval is the reconciler's pause between passes.
	DefaultIndexRepairInterval = 45 * time.Second
	// DefaultIndexRepairBatch is how many executions one partition visit
	// examines.
	DefaultIndexRepairBatch = 100
)

// IndexRepairStore is what the index reconciler uses.
type IndexRepairStore interface {
	IndexRepair(ctx context.Context, p *model.IndexRepairParams) (*model.IndexRepairResult, error)
	Partitions() model.PartitionConfig
}

// IndexRepairConfig configures the index reconciler. Zero values mean the
// defaults.
type IndexRepairConfig struct {
	// Interval is the pause between passes (default 45s).
	Interval time.Duration
	// Batch is how many executions a pass examines per partition
	// (1–1000, default 100).
	Batch int
	// Filter limits the reconciler to the executions it matches; the zero
	// value matches every execution.
	Filter model.ScannerFilter
	// DryRun reports what is damaged and repairs nothing.
	DryRun bool
	// Logger receives a warning for every repair (nil: discard).
	Logger *slog.Logger
	// OnRepair, when set, is called for every repair (a metrics hook). It
	// runs on the scanner's goroutine.
	OnRepair func(model.IndexRepair)
}

// Validate checks the config.
func (c IndexRepairConfig) Validate(name string) error {
	if c.Interval < 0 {
		return model.OutOfRange(name+".Interval", c.Interval, "0 (the default) or more")
	}
	if c.Batch < 0 || c.Batch > model.MaxPageSize {
		return model.OutOfRange(name+".Batch", c.Batch, "0 (the default) to "+strconv.Itoa(model.MaxPageSize))
	}
	return c.Filter.Validate(name + ".Filter")
}

// IndexRepairStats counts what the reconciler did since it was made.
type IndexRepairStats struct {
	// Passes, Examined (executions) and Repaired (index entries; with
	// DryRun, those found damaged).
	Passes, Examined, Repaired int64
	// Errors counts the partition visits that failed.
	Errors int64
}

// IndexReconciler is the repairing index reconciler (engine.md §1
// scanner 3, which FlowFabric only logs): each pass visits every
// partition, examines the next Batch executions of its all_executions
// after the cursor it keeps for that partition, and repairs their index
// entries (model.IndexRepairer); a partition's cursor starts over when it
// reaches the end. So a pass costs at most partitions × Batch executions,
// and a partition of N executions is checked once every ⌈N / Batch⌉
// passes.
type IndexReconciler struct {
	store IndexRepairStore
	clock model.Clock
	cfg   IndexRepairConfig
	log   *slog.Logger

	mu      sync.Mutex
	cursors []model.ExecutionID

	passes, examined, repaired, errors atomic.Int64
}

// NewIndexReconciler returns the index reconciler. It panics when cfg is
// invalid, a programming error.
func NewIndexReconciler(store IndexRepairStore, clock model.Clock, cfg IndexRepairConfig) *IndexReconciler {
	if err := cfg.Validate("IndexRepair"); err != nil {
		panic("scan: " + err.Error())
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultIndexRepairInterval)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultIndexRepairBatch)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &IndexReconciler{store: store, clock: clock, cfg: cfg, log: log,
		cursors: make([]model.ExecutionID, store.Partitions().WithDefaults().FlowPartitions)}
}

// Name implements Scanner.
func (s *IndexReconciler) Name() string { return "index_reconciler" }

// Interval implements Scanner.
func (s *IndexReconciler) Interval() time.Duration { return s.cfg.Interval }

// Stats returns the counts so far.
func (s *IndexReconciler) Stats() IndexRepairStats {
	return IndexRepairStats{Passes: s.passes.Load(), Examined: s.examined.Load(),
		Repaired: s.repaired.Load(), Errors: s.errors.Load()}
}

// RunOnce implements Scanner: one batch per partition. Result.Scanned
// counts the executions examined, Acted the repairs, More whether some
// partition has executions left before its cursor starts over.
func (s *IndexReconciler) RunOnce(ctx context.Context) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.passes.Add(1)
	var res Result
	now := s.clock.Now()
	for p := range s.cursors {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.store.IndexRepair(ctx, &model.IndexRepairParams{
			Partition: p, Cursor: s.cursors[p], Limit: s.cfg.Batch, DryRun: s.cfg.DryRun, Filter: s.cfg.Filter, Now: now,
		})
		res.Partitions++
		if err != nil {
			res.Errors++
			s.errors.Add(1)
			s.log.Warn("index reconciler: partition failed", "partition", p, "err", err)
			continue
		}
		s.cursors[p] = r.Next
		res.Scanned += r.Examined
		res.Acted += len(r.Repairs)
		res.More = res.More || !r.Next.IsZero()
		s.examined.Add(int64(r.Examined))
		s.repaired.Add(int64(len(r.Repairs)))
		for _, rp := range r.Repairs {
			s.log.Warn("index reconciler: index entry repaired", "execution", rp.ExecutionID.String(),
				"index", rp.Index, "action", rp.Action.String(), "score", rp.Score, "old_score", rp.OldScore,
				"dry_run", s.cfg.DryRun)
			if s.cfg.OnRepair != nil {
				s.cfg.OnRepair(rp)
			}
		}
	}
	return res, nil
}

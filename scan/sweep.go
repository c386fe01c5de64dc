package scan

import (
	"cmp"
	"context"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// DefaultSweepInterval is how often the Sweeper reads every partition.
const DefaultSweepInterval = time.Minute

// SweepStore is what the Sweeper uses.
type SweepStore interface {
	PartitionDue(ctx context.Context, p *model.PartitionDueParams) (*model.PartitionDueResult, error)
	Partitions() model.PartitionConfig
}

// Sweeper reads, once per interval, when each partition's timer indexes
// next come due (one PartitionDue call per partition) and passes that to
// the timer scanners, and which partitions hold route-blocked executions to
// the unblock scanner. It is how a process learns about work other
// processes scheduled; what this process schedules it hints directly. Its
// first pass runs at Start.
type Sweeper struct {
	store    SweepStore
	interval time.Duration
	parts    int
	timers   []*timer
	unblock  *Unblock
	release  *QuotaRelease
}

// SetQuotaRelease makes the sweeper tell the quota releaser which
// partitions have a pending release.
func (s *Sweeper) SetQuotaRelease(r *QuotaRelease) { s.release = r }

// NewSweeper returns a sweeper feeding the given scanners (nil ones are
// skipped).
func NewSweeper(store SweepStore, interval time.Duration, unblock *Unblock, timers ...Hinter) *Sweeper {
	s := &Sweeper{store: store, interval: cmp.Or(interval, DefaultSweepInterval),
		parts: store.Partitions().WithDefaults().FlowPartitions, unblock: unblock}
	for _, h := range timers {
		if t, ok := h.(interface{ timerOf() *timer }); ok {
			s.timers = append(s.timers, t.timerOf())
		}
	}
	return s
}

func (t *timer) timerOf() *timer { return t }

// Name implements Scanner.
func (s *Sweeper) Name() string { return "sweeper" }

// Interval implements Scanner.
func (s *Sweeper) Interval() time.Duration { return s.interval }

// RunOnce implements Scanner.
func (s *Sweeper) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	for p := range s.parts {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.store.PartitionDue(ctx, &model.PartitionDueParams{Partition: p})
		res.Partitions++
		if err != nil {
			res.Errors++
			for _, t := range s.timers {
				t.Hint(p, time.Time{}) // unknown: let the scanner look
			}
			continue
		}
		for _, t := range s.timers {
			if due := r.Due(t.w.index); !due.IsZero() {
				t.Hint(p, due)
			}
		}
		if s.unblock != nil {
			s.unblock.settle(p, r.RouteBlocked)
			s.unblock.settleAdmission(p, r.AdmissionBlocked)
		}
		if s.release != nil {
			s.release.settle(p, r.QuotaReleasePending)
		}
	}
	return res, nil
}

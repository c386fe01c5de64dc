package scan

import (
	"context"
	"errors"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// DefaultRetentionInterval is the retention trimmer's pause between passes
// (FlowFabric's).
const DefaultRetentionInterval = time.Minute

// RetentionStore is what the retention trimmer uses.
type RetentionStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	ExecutionDelete(ctx context.Context, p *model.ExecutionDeleteParams) (*model.ExecutionDeleteResult, error)
	Partitions() model.PartitionConfig
}

// LedgerForgetter drops a deleted execution's budget ledgers
// (model.AdmissionStore's BudgetRelease with Forget).
type LedgerForgetter interface {
	BudgetRelease(ctx context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error)
}

// Retention is the retention trimmer (engine.md §1 scanner 7): it deletes
// terminal executions whose retention ran out, with everything they own.
// It walks the partitions' retention index (model.IndexRetention), which
// is ordered by when each execution may go, so executions kept longer
// never hold up the others; each partition visit deletes at most
// TimerConfig.Batch.
type Retention struct {
	timer
	store   RetentionStore
	ledgers LedgerForgetter
}

// NewRetention returns the retention trimmer. ledgers, when not nil,
// forgets the budget ledgers of the executions it deletes.
func NewRetention(store RetentionStore, ledgers LedgerForgetter, clock model.Clock, cfg TimerConfig) *Retention {
	s := &Retention{store: store, ledgers: ledgers}
	s.timer = newTimer("retention", store.Partitions().WithDefaults().FlowPartitions, model.IndexRetention,
		clock, cfg, DefaultRetentionInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *Retention) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		now := s.clock.Now()
		r, err := s.store.ExecutionDelete(ctx, &model.ExecutionDeleteParams{ID: it.ID, Due: true, Now: now})
		if err != nil {
			return false, err
		}
		if r.Outcome != model.DeleteDeleted {
			return false, nil
		}
		return true, ForgetLedgers(ctx, s.ledgers, it.ID, r.Budgets, now)
	})
}

// ForgetLedgers drops deleted execution id's ledgers in budgets (nothing
// without a forgetter). A failure leaves a ledger behind: it names an
// execution that no longer exists and changes no usage.
func ForgetLedgers(ctx context.Context, f LedgerForgetter, id model.ExecutionID, budgets []model.BudgetID, now time.Time) error {
	if f == nil {
		return nil
	}
	for _, b := range budgets {
		_, err := f.BudgetRelease(ctx, &model.BudgetReleaseParams{ID: b, Execution: id, Forget: true, Now: now})
		if err != nil && !errors.Is(err, model.ErrBudgetNotFound) {
			return err
		}
	}
	return nil
}

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

// FlowDeleter deletes finished flows (model.FlowDeleter): the retention
// trimmer uses it when the store has it.
type FlowDeleter interface {
	FlowDelete(ctx context.Context, p *model.FlowDeleteParams) (*model.FlowDeleteResult, error)
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
//
// A flow member's due entry stands for its flow (model.FlowDeleter): the
// trimmer deletes the whole flow once its retention is due, or the store
// moves the flow's entries to one at its due time (the trimmer hints
// that time). Without a FlowDeleter in the store the trimmer leaves
// members' entries where they are.
type Retention struct {
	timer
	store   RetentionStore
	flows   FlowDeleter
	ledgers LedgerForgetter
}

// NewRetention returns the retention trimmer. ledgers, when not nil,
// forgets the budget ledgers of the executions it deletes. When store is
// also a FlowDeleter, the trimmer deletes finished flows.
func NewRetention(store RetentionStore, ledgers LedgerForgetter, clock model.Clock, cfg TimerConfig) *Retention {
	s := &Retention{store: store, ledgers: ledgers}
	s.flows, _ = store.(FlowDeleter)
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
		switch {
		case r.Outcome == model.DeleteInFlow && s.flows != nil:
			return s.deleteFlow(ctx, r.Flow, it.ID.Partition(), now)
		case r.Outcome != model.DeleteDeleted:
			return false, nil
		}
		return true, ForgetLedgers(ctx, s.ledgers, it.ID, r.Budgets, now)
	})
}

// deleteFlow deletes flow f (on partition part) when its retention is
// due, forgetting its members' ledgers; a flow not yet due is filed at its
// due time, which the trimmer is told.
func (s *Retention) deleteFlow(ctx context.Context, f model.FlowID, part int, now time.Time) (bool, error) {
	r, err := s.flows.FlowDelete(ctx, &model.FlowDeleteParams{Flow: f, Due: true, Now: now})
	if err != nil {
		return false, err
	}
	switch r.Outcome {
	case model.DeleteDeleted:
		var errs []error
		for _, m := range r.Members {
			errs = append(errs, ForgetLedgers(ctx, s.ledgers, m.ID, m.Budgets, now))
		}
		return true, errors.Join(errs...)
	case model.DeleteNotYetDue:
		if !r.DueAt.IsZero() {
			s.Hint(part, r.DueAt)
		}
	}
	return false, nil
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

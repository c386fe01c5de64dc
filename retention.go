package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// Retention is how long a terminal execution is kept, per outcome class,
// before the retention trimmer deletes it with everything it owns
// (attempts, lease history, result, payload, streams, signals, its
// idempotency key). Completed applies to executions that succeeded,
// Failed to failed and expired ones, Cancelled to cancelled and skipped
// ones.
//
// In Config, LaneConfig and SubmitOpts a zero field inherits: a
// submission's retention falls back, field by field, to its lane's, then
// to the engine's, then to DefaultRetention. KeepForever (any negative
// duration) keeps that class for good. Otherwise a field is 1ms–3650 days
// in whole milliseconds. The retention is fixed when the execution is
// submitted: changing the configuration later applies to new submissions.
type Retention = model.Retention

// KeepForever, as a Retention field, keeps that outcome class for good.
const KeepForever time.Duration = -1

// DefaultRetention returns the retention of a submission that sets none
// anywhere, in the spirit of River's: completed and cancelled executions
// are kept 24 hours, failed ones 7 days.
func DefaultRetention() Retention {
	return Retention{Completed: 24 * time.Hour, Failed: 7 * 24 * time.Hour, Cancelled: 24 * time.Hour}
}

// validateRetention checks a Retention of Config, LaneConfig or
// SubmitOpts: each field 0, negative (KeepForever) or a valid retention.
func validateRetention(field string, r Retention) error {
	pos := func(d time.Duration) time.Duration { return max(d, 0) }
	return model.Retention{Completed: pos(r.Completed), Failed: pos(r.Failed), Cancelled: pos(r.Cancelled)}.Validate(field)
}

// retentionFor resolves a submission's retention on lane (see Retention)
// into what the store keeps: a positive duration, or 0 for good.
func (e *Engine) retentionFor(lane LaneID, sub Retention) model.Retention {
	e.lanesMu.RLock()
	lc := e.lanes[lane].Retention
	e.lanesMu.RUnlock()
	def := DefaultRetention()
	pick := func(s, l, c, d time.Duration) time.Duration {
		for _, v := range []time.Duration{s, l, c} {
			if v != 0 {
				return max(v, 0)
			}
		}
		return d
	}
	c := e.cfg.Retention
	return model.Retention{
		Completed: pick(sub.Completed, lc.Completed, c.Completed, def.Completed),
		Failed:    pick(sub.Failed, lc.Failed, c.Failed, def.Failed),
		Cancelled: pick(sub.Cancelled, lc.Cancelled, c.Cancelled, def.Cancelled),
	}
}

// keepAtLeast makes o's retention, resolved as its submission's would be,
// at least d for every outcome (kept for good stays so): a periodic tick's
// execution must outlive the tick's idempotency key, or a process
// catching up after a delete would submit the tick again.
func (e *Engine) keepAtLeast(o *SubmitOpts, d time.Duration) {
	lane := o.Lane
	if lane == "" {
		lane = model.DefaultLane
	}
	r := e.retentionFor(lane, o.Retention)
	fix := func(v time.Duration) time.Duration {
		if v == 0 {
			return KeepForever
		}
		return max(v, d)
	}
	o.Retention = Retention{Completed: fix(r.Completed), Failed: fix(r.Failed), Cancelled: fix(r.Cancelled)}
}

// Delete deletes a terminal execution now, whatever its retention, with
// everything it owns (see Retention); its idempotency key is free again.
// It refuses an unknown execution (ErrNotFound), a live one
// (ErrNotTerminal: cancel it first) and a flow member (ErrInFlow), and
// changes nothing then. On a store without model.RetentionStore it
// fails with an invalid-input error naming the store.
func (e *Engine) Delete(ctx context.Context, id ExecutionID) error {
	rs, ok := e.store.(model.RetentionStore)
	if !ok {
		return wrap("delete", &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.RetentionStore", e.store)})
	}
	now := e.clock.Now()
	r, err := rs.ExecutionDelete(ctx, &model.ExecutionDeleteParams{ID: id, Now: now})
	if err != nil {
		return wrap("delete", err)
	}
	as, _ := e.store.(model.AdmissionStore)
	var f scan.LedgerForgetter
	if as != nil {
		f = as
	}
	if err := scan.ForgetLedgers(ctx, f, id, r.Budgets, now); err != nil {
		return wrap("delete", errors.Join(errors.New("deleted, but its budget ledgers were not all forgotten"), err))
	}
	return nil
}

// DeleteFlow deletes a finished flow now, whatever its retention, with
// all its members and everything they own (as Delete deletes one
// execution), in one step. It refuses an unknown flow (ErrFlowNotFound),
// one not finished (ErrNotTerminal: a member is live, or the flow is
// neither sealed nor cancelled; cancel it first) and one of more than
// model.MaxFlowDeleteMembers members (ErrFlowTooLarge), and changes
// nothing then. On a store without model.FlowDeleter it fails with an
// invalid-input error naming the store.
func (e *Engine) DeleteFlow(ctx context.Context, id FlowID) error {
	fd, ok := e.store.(model.FlowDeleter)
	if !ok {
		return wrap("delete flow", &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.FlowDeleter", e.store)})
	}
	now := e.clock.Now()
	r, err := fd.FlowDelete(ctx, &model.FlowDeleteParams{Flow: id, Now: now})
	if err != nil {
		return wrap("delete flow", err)
	}
	as, _ := e.store.(model.AdmissionStore)
	var f scan.LedgerForgetter
	if as != nil {
		f = as
	}
	var errs []error
	for _, m := range r.Members {
		errs = append(errs, scan.ForgetLedgers(ctx, f, m.ID, m.Budgets, now))
	}
	if err := errors.Join(errs...); err != nil {
		return wrap("delete flow", errors.Join(errors.New("deleted, but its members' budget ledgers were not all forgotten"), err))
	}
	return nil
}

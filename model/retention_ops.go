package model

import (
	"context"
	"time"
)

// RetentionStore deletes terminal executions: one at a time by an
// operator, or by the retention scanner when their retention has run out.
// memstore and valkeystore implement it.
//
// A terminal execution whose Retention for its outcome is positive is in
// the partition's timer index IndexRetention ("retention"), scored by its
// terminal time plus that retention; a replay takes it out again. The
// retention scanner walks that index with IndexScanDue and deletes each
// due entry with ExecutionDelete{Due: true}, so long retentions never hold
// up short ones.
type RetentionStore interface {
	ExecutionDelete(ctx context.Context, p *ExecutionDeleteParams) (*ExecutionDeleteResult, error)
}

// MaxRetention bounds a retention (ten years).
const MaxRetention = 3650 * 24 * time.Hour

// Retention is how long a terminal execution is kept, per outcome class,
// before the retention scanner deletes it. A zero field keeps that class
// for good (a store user's default; the engine fills in its own defaults).
type Retention struct {
	// Completed applies to outcome success.
	Completed time.Duration
	// Failed applies to outcomes failed and expired.
	Failed time.Duration
	// Cancelled applies to outcomes cancelled and skipped.
	Cancelled time.Duration
}

// For returns the retention of outcome to (0: kept for good).
func (r Retention) For(to TerminalOutcome) time.Duration {
	switch to {
	case OutcomeSuccess:
		return r.Completed
	case OutcomeFailed, OutcomeExpired:
		return r.Failed
	case OutcomeCancelled, OutcomeSkipped:
		return r.Cancelled
	}
	return 0
}

// Validate checks each field: 0 or 1ms..MaxRetention, whole milliseconds.
func (r Retention) Validate(field string) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"Completed", r.Completed}, {"Failed", r.Failed}, {"Cancelled", r.Cancelled}} {
		if f.d == 0 {
			continue
		}
		if err := checkDuration(field+"."+f.name, f.d, time.Millisecond, MaxRetention); err != nil {
			return err
		}
		if f.d%time.Millisecond != 0 {
			return OutOfRange(field+"."+f.name, f.d, "whole milliseconds")
		}
	}
	return nil
}

// ExecutionDeleteParams deletes a terminal execution with everything it
// owns: its record, payload, result, tags, attempts, lease history,
// streams, suspension, waitpoints, signals and index entries. Its
// idempotency key stops naming it (a create with that key makes a new
// execution). A flow member is deleted only with its flow.
//
// An operator delete (Due false) refuses an unknown execution
// (ErrNotFound), a live one (ErrNotTerminal) and a flow member
// (ErrInFlow), and changes nothing then.
//
// The retention scanner's delete (Due true) acts on an IndexRetention
// entry: it deletes the execution only when the entry is due at Now
// (DeleteNotYetDue otherwise, nothing changed), and drops an entry that no
// longer applies (the execution is gone, is not terminal, or is a flow
// member) rather than failing.
type ExecutionDeleteParams struct {
	ID  ExecutionID
	Due bool
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionDeleteParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// DeleteOutcome is what ExecutionDelete did; its String is the wire name.
type DeleteOutcome uint8

// Delete outcomes. Only DeleteDeleted deletes the execution; the *Cleaned
// ones (Due only) drop its stale IndexRetention entry.
const (
	DeleteDeleted            DeleteOutcome = iota + 1 // "deleted"
	DeleteNotYetDue                                   // "not_yet_due": its retention runs to after Now
	DeleteNotFoundCleaned                             // "not_found_cleaned": no such execution
	DeleteNotTerminalCleaned                          // "not_terminal_cleaned": the execution is live
	DeleteInFlowCleaned                               // "in_flow_cleaned": a flow member; its flow decides
)

var deleteOutcomeNames = enumNames{
	"deleted", "not_yet_due", "not_found_cleaned", "not_terminal_cleaned", "in_flow_cleaned",
}

func (v DeleteOutcome) String() string { return deleteOutcomeNames.name(uint8(v)) }

// ParseDeleteOutcome parses a wire name.
func ParseDeleteOutcome(s string) (DeleteOutcome, bool) {
	v, ok := deleteOutcomeNames.parse(s)
	return DeleteOutcome(v), ok
}

// ExecutionDeleteResult reports a delete.
type ExecutionDeleteResult struct {
	Outcome DeleteOutcome
	// Budgets are the deleted execution's budgets: their spend ledgers
	// for it live on the budget partitions, and the caller drops them
	// (BudgetRelease with Forget).
	Budgets []BudgetID
}

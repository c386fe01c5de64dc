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
// up short ones. A flow member's due entry is its flow's (DeleteInFlow):
// the scanner then calls FlowDelete{Due: true} (FlowDeleter).
type RetentionStore interface {
	ExecutionDelete(ctx context.Context, p *ExecutionDeleteParams) (*ExecutionDeleteResult, error)
}

// FlowDeleter deletes a finished flow with all its members in one atomic
// step (the flow and its members share one partition). memstore and
// valkeystore implement it beside RetentionStore.
//
// A flow's retention is its members': it is due once every member's is,
// at the latest of their terminal times plus their retentions, and kept
// for good when one member is. Its members' entries in IndexRetention
// stand for it: when the first comes due, ExecutionDelete{Due} reports
// DeleteInFlow and FlowDelete{Due} either deletes the flow or replaces
// all its members' entries by one, on its first member still terminal,
// scored by the flow's due time (none when it is kept for good or not
// finished), so a flow costs the trimmer at most two visits and never
// holds up the entries behind it. FlowSeal and FlowCancel file that one
// entry too when they finish a flow whose members have all ended.
type FlowDeleter interface {
	FlowDelete(ctx context.Context, p *FlowDeleteParams) (*FlowDeleteResult, error)
}

// MaxFlowDeleteMembers bounds the members one FlowDelete deletes: a flow
// with more is refused (ErrFlowTooLarge; the retention scanner's delete
// drops its entries and keeps it), so one step never blocks a Valkey
// server for long.
const MaxFlowDeleteMembers = 10000

// FlowDeleteParams deletes a finished flow: its record, tags, members
// set, edges, groups and index entries, and every member with everything
// it owns (as ExecutionDelete deletes one). A flow is finished when it is
// sealed or cancelled and every member is terminal; nothing live is ever
// deleted.
//
// An operator delete (Due false) refuses an unknown flow
// (ErrFlowNotFound), one not finished (ErrNotTerminal, Field "Flow",
// Detail the first member not terminal, or "open") and one of more than
// MaxFlowDeleteMembers members (ErrFlowTooLarge), and changes nothing
// then.
//
// The retention scanner's delete (Due true) deletes the flow only when
// its retention is due at Now (see FlowDeleter). Otherwise it reports
// DeleteNotYetDue and files the flow's one IndexRetention entry at its
// due time (DueAt; zero, with no entry, when a member is kept for good),
// DeleteNotFoundCleaned for an unknown flow, DeleteNotTerminalCleaned for
// one not finished and DeleteTooLargeCleaned for one too large, dropping
// its members' entries (a member that ends later files its own).
type FlowDeleteParams struct {
	Flow FlowID
	Due  bool
	Now  time.Time
}

// Validate checks every field.
func (p *FlowDeleteParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowDeleteResult reports a flow delete.
type FlowDeleteResult struct {
	Outcome DeleteOutcome
	// Members are the deleted members in id order, each with its
	// budgets: the caller drops their spend ledgers (BudgetRelease with
	// Forget), as for ExecutionDelete.
	Members []DeletedMember
	// DueAt is when the flow's retention runs out (DeleteNotYetDue; zero:
	// kept for good).
	DueAt time.Time
}

// DeletedMember is one member a FlowDelete deleted.
type DeletedMember struct {
	ID      ExecutionID
	Budgets []BudgetID
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
// longer applies (the execution is gone or is not terminal) rather than
// failing. A flow member's due entry is left for its flow: the outcome is
// DeleteInFlow with the result's Flow set, and the caller goes on with
// FlowDelete{Due: true}.
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

// Delete outcomes (of ExecutionDelete and FlowDelete). Only DeleteDeleted
// deletes; the *Cleaned ones (Due only) drop stale IndexRetention
// entries.
const (
	DeleteDeleted            DeleteOutcome = iota + 1 // "deleted"
	DeleteNotYetDue                                   // "not_yet_due": its retention runs to after Now
	DeleteNotFoundCleaned                             // "not_found_cleaned": no such execution or flow
	DeleteNotTerminalCleaned                          // "not_terminal_cleaned": the execution is live, or the flow not finished
	DeleteInFlow                                      // "in_flow": a flow member's due entry, left for FlowDelete
	DeleteTooLargeCleaned                             // "too_large_cleaned": the flow has more than MaxFlowDeleteMembers members
)

var deleteOutcomeNames = enumNames{
	"deleted", "not_yet_due", "not_found_cleaned", "not_terminal_cleaned", "in_flow", "too_large_cleaned",
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
	// Flow is the member's flow (DeleteInFlow).
	Flow FlowID
}

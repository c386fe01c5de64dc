package model

import (
	"context"
	"time"
)

// ScanStore holds what the background scanners read and do.
type ScanStore interface {
	ExecutionPromoteDelayed(ctx context.Context, p *ExecutionPromoteDelayedParams) (*ExecutionPromoteDelayedResult, error)
	IndexScanDue(ctx context.Context, p *IndexScanDueParams) (*IndexScanDueResult, error)
	PartitionDue(ctx context.Context, p *PartitionDueParams) (*PartitionDueResult, error)
	RouteUnblock(ctx context.Context, p *RouteUnblockParams) (*RouteUnblockResult, error)
}

// ExecutionPromoteDelayedParams makes a delayed execution eligible once its
// time has come, and drops stale delayed-index entries. With Force (an
// operator's "retry now") it makes it eligible whatever its time: a delay,
// a retry backoff or a resume delay is cut short, and the attempt that
// was waiting (a retry, a paused attempt) is the one that runs.
type ExecutionPromoteDelayedParams struct {
	ID   ExecutionID
	Lane LaneID
	// Force promotes an execution whose time has not come yet.
	Force bool
	Now   time.Time
}

// Validate checks every field.
func (p *ExecutionPromoteDelayedParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// PromoteOutcome is what ExecutionPromoteDelayed did; its String is the
// wire name.
type PromoteOutcome uint8

// Promote outcomes. Only Promoted changes the execution; the *Cleaned ones
// drop its stale delayed-index entry.
const (
	PromotePromoted           PromoteOutcome = iota + 1 // "promoted": eligible now
	PromoteNotFoundCleaned                              // "not_found_cleaned": no such execution
	PromoteNotRunnableCleaned                           // "not_runnable_cleaned": the execution is not runnable
	PromoteNotDelayedCleaned                            // "not_delayed_cleaned": runnable but not waiting for a time
	PromoteNotYetDue                                    // "not_yet_due": its time is later than Now
)

var promoteOutcomeNames = enumNames{
	"promoted", "not_found_cleaned", "not_runnable_cleaned", "not_delayed_cleaned", "not_yet_due",
}

func (v PromoteOutcome) String() string { return promoteOutcomeNames.name(uint8(v)) }

// ParsePromoteOutcome parses a wire name.
func ParsePromoteOutcome(s string) (PromoteOutcome, bool) {
	v, ok := promoteOutcomeNames.parse(s)
	return PromoteOutcome(v), ok
}

// ExecutionPromoteDelayedResult reports a promotion.
type ExecutionPromoteDelayedResult struct {
	// Outcome is one of the Promote* outcomes.
	Outcome PromoteOutcome
}

// DueCursor is an exclusive position in a timer index: (DueAt, ID).
type DueCursor struct {
	DueAt time.Time
	ID    ExecutionID
}

// IndexScanDueParams reads the entries of one partition's timer index that
// are due at Now, in (due time, id) order, after the cursor.
type IndexScanDueParams struct {
	Partition int
	Index     IndexKind
	Now       time.Time
	After     *DueCursor
	Limit     int // 1–1000
	// Filter, when set, leaves out the entries of executions it does not
	// match (an entry whose execution is gone matches): they count
	// towards Limit and move LastSeen, so a scanner's cursor passes them.
	Filter ScannerFilter
}

// Validate checks every field.
func (p *IndexScanDueParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if p.Index < IndexLeaseExpiry || p.Index > IndexRetention {
		return invalidField("Index", "unknown")
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	if err := p.Filter.Validate("Filter"); err != nil {
		return err
	}
	if p.After != nil {
		if err := checkCursor(cfg, "After.ID", p.After.ID, p.Partition); err != nil {
			return err
		}
		if err := checkOptionalTime("After.DueAt", p.After.DueAt); err != nil {
			return err
		}
	}
	return checkNow(p.Now)
}

// DueItem is one due entry.
type DueItem struct {
	ID    ExecutionID
	Lane  LaneID // set for the delayed index
	DueAt time.Time
}

// IndexScanDueResult reports a scan.
type IndexScanDueResult struct {
	Items []DueItem
	// More is true when due entries remain after the last item.
	More bool
	// NextDueAt is the earliest entry due after Now (zero: none), so a
	// scanner can sleep until then.
	NextDueAt time.Time
	// LastSeen is the last due entry examined, matched or filtered out
	// (nil when none was): with a Filter, the cursor to continue from.
	LastSeen *DueCursor
}

// PartitionDueParams asks what one partition has scheduled, so a sweep
// costs one call per partition rather than one per scanner.
type PartitionDueParams struct {
	Partition int
}

// Validate checks every field.
func (p *PartitionDueParams) Validate(cfg PartitionConfig) error {
	return checkPartition(cfg, p.Partition)
}

// PartitionDueResult tells when each timer index of a partition next comes
// due (the earliest entry, possibly already past; zero when the index is
// empty), whether any execution waits blocked on route, and how many
// executions the partition holds.
type PartitionDueResult struct {
	LeaseExpiry       time.Time
	AttemptTimeout    time.Time
	ExecutionDeadline time.Time
	Delayed           time.Time // earliest over every lane
	SuspensionTimeout time.Time
	WaitpointExpiry   time.Time
	Retention         time.Time
	RouteBlocked      bool
	// AdmissionBlocked: some execution waits blocked on a budget or a
	// quota. QuotaReleasePending: the quota release outbox is not empty.
	AdmissionBlocked    bool
	QuotaReleasePending bool
	Executions          int
}

// Due returns the earliest entry of timer index k (zero: none).
func (r *PartitionDueResult) Due(k IndexKind) time.Time {
	switch k {
	case IndexLeaseExpiry:
		return r.LeaseExpiry
	case IndexAttemptTimeout:
		return r.AttemptTimeout
	case IndexExecutionDeadline:
		return r.ExecutionDeadline
	case IndexDelayed:
		return r.Delayed
	case IndexSuspensionTimeout:
		return r.SuspensionTimeout
	case IndexWaitpointExpiry:
		return r.WaitpointExpiry
	case IndexRetention:
		return r.Retention
	}
	return time.Time{}
}

// RouteUnblockParams returns to the eligible index up to Limit
// route-blocked executions of a partition whose required capabilities are
// within Live (the union of the live workers' capabilities). Its cost does
// not grow with the number of executions that stay blocked.
//
// Only executions of Namespace are considered, and Live must be the union
// of that namespace's live workers: a worker of one namespace never
// unblocks another namespace's execution (engine.md §1, scanner 11).
type RouteUnblockParams struct {
	Partition int
	Namespace Namespace
	Live      Capabilities
	// All unblocks regardless of capabilities (Live is ignored): the
	// fail-open mode the unblock scanner uses when the live workers'
	// capabilities cannot be read.
	All bool
	// Filter's tag condition, when set, keeps the executions it does not
	// match blocked (its Namespace must be empty or Namespace).
	Filter ScannerFilter
	Limit  int // 1–1000
	Now    time.Time
}

// Validate checks every field.
func (p *RouteUnblockParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Live", p.Live); err != nil {
		return err
	}
	if err := p.Filter.Validate("Filter"); err != nil {
		return err
	}
	if p.Filter.Namespace != "" && p.Filter.Namespace != p.Namespace {
		return invalidField("Filter.Namespace", "differs_from_namespace")
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// RouteUnblockResult reports the unblocked executions.
type RouteUnblockResult struct {
	Unblocked []ExecutionID
	More      bool
}

package model

import (
	"context"
	"slices"
	"strconv"
)

// ReadStore holds the reads.
type ReadStore interface {
	AttemptList(ctx context.Context, p *AttemptListParams) (*AttemptListResult, error)
	ExecutionDescribe(ctx context.Context, p *ExecutionDescribeParams) (*ExecutionSnapshot, error)
	ExecutionList(ctx context.Context, p *ExecutionListParams) (*ExecutionListResult, error)
	ExecutionPayload(ctx context.Context, p *ExecutionPayloadParams) (*ExecutionPayloadResult, error)
	ExecutionResult(ctx context.Context, p *ExecutionResultParams) (*ExecutionResultResult, error)
	LeaseHistory(ctx context.Context, p *LeaseHistoryParams) (*LeaseHistoryResult, error)
}

// IndexInspector is optional (see Store): a test inspection of which
// indexes hold an execution. The engine never calls it; the conformance
// suite (storetest), its transcripts and the differential (proptest) read
// it to check the indexes, and fail, naming it, without it.
type IndexInspector interface {
	ExecutionIndexes(ctx context.Context, p *ExecutionIndexesParams) (*ExecutionIndexesResult, error)
}

// ExecutionDescribeParams reads one execution.
type ExecutionDescribeParams struct {
	ID ExecutionID
}

// ExecutionListParams pages through one partition's executions in id order.
type ExecutionListParams struct {
	Partition int
	// After is an exclusive cursor (zero: from the start).
	After ExecutionID
	// Limit bounds the executions examined, in id order after After
	// (1–1000); those Filter matches are listed.
	Limit int
	// Filter, when set, lists only the executions it matches (each
	// examined one is read): the cost of a page is Limit, whatever it
	// lists.
	Filter ListFilter
}

// ListFilter narrows a listing; the zero value matches every execution.
// Set fields must all match: the namespace and the tag (ScannerFilter's
// rules), the lane, the kind, and one of States.
type ListFilter struct {
	ScannerFilter
	Lane   LaneID
	Kind   Kind
	States []PublicState
}

// IsZero reports whether the filter matches everything.
func (f *ListFilter) IsZero() bool {
	return f.ScannerFilter.IsZero() && f.Lane == "" && f.Kind == "" && len(f.States) == 0
}

// Matches reports whether an execution of namespace ns, lane, kind,
// public state ps and tags matches.
func (f *ListFilter) Matches(ns Namespace, lane LaneID, kind Kind, ps PublicState, tags map[string]string) bool {
	if (f.Lane != "" && f.Lane != lane) || (f.Kind != "" && f.Kind != kind) {
		return false
	}
	if len(f.States) > 0 && !slices.Contains(f.States, ps) {
		return false
	}
	return f.ScannerFilter.Matches(ns, tags)
}

// Validate checks the filter's fields (prefixed by field).
func (f *ListFilter) Validate(field string) error {
	if err := f.ScannerFilter.Validate(field); err != nil {
		return err
	}
	if f.Lane != "" {
		if err := f.Lane.Validate(); err != nil {
			return prefixField(err, field+".")
		}
	}
	if f.Kind != "" {
		if err := f.Kind.Validate(); err != nil {
			return prefixField(err, field+".")
		}
	}
	if len(f.States) > int(PublicSkipped) {
		return OutOfRange(field+".States", len(f.States), "at most "+strconv.Itoa(int(PublicSkipped))+" states")
	}
	for _, s := range f.States {
		if s < PublicWaiting || s > PublicSkipped {
			return invalidField(field+".States", "unknown_state")
		}
	}
	return nil
}

// Validate checks every field.
func (p *ExecutionListParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if err := p.Filter.Validate("Filter"); err != nil {
		return err
	}
	if !p.After.IsZero() {
		if err := checkCursor(cfg, "After", p.After, p.Partition); err != nil {
			return err
		}
	}
	return checkLimit("Limit", p.Limit)
}

// ExecutionListResult is one page.
type ExecutionListResult struct {
	IDs []ExecutionID
	// Next is the cursor for the next page (the last execution examined);
	// zero when this page is the last.
	Next ExecutionID
	// Examined is how many executions the page examined (≤ Limit).
	Examined int
}

// ExecutionPayloadParams reads an execution's payload.
type ExecutionPayloadParams struct {
	ID ExecutionID
}

// ExecutionPayloadResult holds the payload bytes (nil when empty).
type ExecutionPayloadResult struct {
	Payload []byte
}

// ExecutionResultParams reads a completed execution's result.
type ExecutionResultParams struct {
	ID ExecutionID
}

// ExecutionResultResult holds the result bytes. A non-completed execution
// yields ErrResultNotFound.
type ExecutionResultResult struct {
	Result []byte
}

// AttemptListParams reads every attempt of an execution.
type AttemptListParams struct {
	ID ExecutionID
}

// AttemptListResult lists attempts in index order.
type AttemptListResult struct {
	Attempts []Attempt
}

// LeaseHistoryParams reads an execution's lease history.
type LeaseHistoryParams struct {
	ID ExecutionID
	// AfterSeq returns only entries with a larger sequence number.
	AfterSeq uint64
	Limit    int // 1–1000
}

// Validate checks every field.
func (p *LeaseHistoryParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkLimit("Limit", p.Limit)
}

// LeaseHistoryResult lists history entries, oldest first.
type LeaseHistoryResult struct {
	Events []LeaseEvent
}

// ExecutionIndexesParams asks which indexes hold an execution.
type ExecutionIndexesParams struct {
	ID ExecutionID
}

// ExecutionIndexesResult names the indexes holding the execution, sorted,
// in the spec's naming: "lane:<L>:eligible", "lease_expiry",
// "worker:<wiid>:leases", "all_executions", ...
type ExecutionIndexesResult struct {
	Indexes []string
}

package model

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// Validation of store parameters. Every store calls these before touching
// state, so both stores reject the same inputs with the same errors.

// maxTimestamp bounds stored times (year 9999), far below 2^53 ms.
const maxTimestampMs = 253402300799999

// timeRange is the accepted range of a stored time.
const timeRange = "a time after 1970-01-01 and before year 10000"

func checkNow(now time.Time) error {
	if now.IsZero() {
		return invalidField("Now", "missing")
	}
	if ms := now.UnixMilli(); ms <= 0 || ms > maxTimestampMs {
		return OutOfRange("Now", now.UTC().Format(time.RFC3339Nano), timeRange)
	}
	return nil
}

func checkOptionalTime(field string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if ms := t.UnixMilli(); ms <= 0 || ms > maxTimestampMs {
		return OutOfRange(field, t.UTC().Format(time.RFC3339Nano), timeRange)
	}
	return nil
}

func checkDuration(field string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return OutOfRange(field, d, lo.String()+".."+hi.String())
	}
	return nil
}

func checkLimit(field string, n int) error {
	if n < 1 || n > MaxPageSize {
		return OutOfRange(field, n, "1.."+strconv.Itoa(MaxPageSize))
	}
	return nil
}

// NormalizeCapabilities validates caps and returns them sorted and
// de-duplicated.
func NormalizeCapabilities(field string, caps Capabilities) (Capabilities, error) {
	return ParseCapabilities(field, caps)
}

func (r LeaseRequest) validate() error {
	if err := r.WorkerID.Validate(); err != nil {
		return err
	}
	if err := r.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if r.LeaseID.IsZero() {
		return invalidField("LeaseID", "empty")
	}
	if r.AttemptID.IsZero() {
		return invalidField("AttemptID", "empty")
	}
	return checkDuration("LeaseTTL", r.LeaseTTL, time.Millisecond, MaxLeaseTTL)
}

func checkFenced(cfg PartitionConfig, id ExecutionID, src Source, f Fence, now time.Time) error {
	if err := cfg.CheckExecutionID(id); err != nil {
		return err
	}
	if err := CheckFence(src, f); err != nil {
		return err
	}
	return checkNow(now)
}

// Validate checks every field.
func (p *ExecutionCreateParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	if err := p.Kind.Validate(); err != nil {
		return err
	}
	if len(p.Payload) > MaxPayloadBytes {
		return invalidField("Payload", "too_large")
	}
	if err := ValidateTags(p.Tags); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("RequiredCapabilities", p.RequiredCapabilities); err != nil {
		return err
	}
	if err := p.RetryPolicy.Validate(); err != nil {
		return err
	}
	if p.MaxReclaims < 0 || p.MaxReclaims > 1_000_000 {
		return OutOfRange("MaxReclaims", p.MaxReclaims, "0..1000000 (0 means the default)")
	}
	if p.MaxReplays < 0 || p.MaxReplays > 1_000_000 {
		return OutOfRange("MaxReplays", p.MaxReplays, "0..1000000 (0 means the default)")
	}
	if err := checkDuration("AttemptTimeout", p.AttemptTimeout, 0, MaxPolicyDelay); err != nil {
		return err
	}
	if p.AttemptTimeout > 0 && p.AttemptTimeout < time.Millisecond {
		return OutOfRange("AttemptTimeout", p.AttemptTimeout, "0 (none) or 1ms.."+MaxPolicyDelay.String())
	}
	if err := checkOptionalTime("Deadline", p.Deadline); err != nil {
		return err
	}
	if err := checkOptionalTime("DelayUntil", p.DelayUntil); err != nil {
		return err
	}
	if err := ValidateIdempotencyKey(p.IdempotencyKey); err != nil {
		return err
	}
	if p.IdempotencyTTL != 0 {
		if err := checkDuration("IdempotencyTTL", p.IdempotencyTTL, time.Second, MaxIdempotencyTTL); err != nil {
			return err
		}
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionCancelParams) Validate(cfg PartitionConfig) error {
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// Validate checks every field.
func (p *ExecutionChangePriorityParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionCompleteParams) Validate(cfg PartitionConfig) error {
	if len(p.Result) > MaxResultBytes {
		return invalidField("Result", "too_large")
	}
	if p.Next != nil {
		if err := p.Next.validate(); err != nil {
			return err
		}
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

func (n *NextClaim) validate() error {
	prefix := func(err error) error {
		var e *Error
		if errors.As(err, &e) {
			c := *e
			c.Field = "Next." + c.Field
			return &c
		}
		return err
	}
	if err := n.Lane.Validate(); err != nil {
		return prefix(err)
	}
	if n.Namespace != "" {
		if err := n.Namespace.Validate(); err != nil {
			return prefix(err)
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", n.Capabilities); err != nil {
		return prefix(err)
	}
	if _, err := NormalizeCapabilities("LiveCapabilities", n.LiveCapabilities); err != nil {
		return prefix(err)
	}
	if err := checkLimit("ScanLimit", n.ScanLimit); err != nil {
		return prefix(err)
	}
	return prefix(n.LeaseRequest.validate())
}

// Validate checks every field.
func (p *PartitionDueParams) Validate(cfg PartitionConfig) error {
	return checkPartition(cfg, p.Partition)
}

// Validate checks every field.
func (p *ExecutionDelayParams) Validate(cfg PartitionConfig) error {
	if p.DelayUntil.IsZero() {
		return invalidField("DelayUntil", "missing")
	}
	if err := checkOptionalTime("DelayUntil", p.DelayUntil); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// Validate checks every field.
func (p *ExecutionExpireParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if p.Reason != ExpireAttemptTimeout && p.Reason != ExpireExecutionDeadline {
		return invalidField("Reason", "unknown")
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionFailParams) Validate(cfg PartitionConfig) error {
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	if err := ValidateFailureCategory(p.Category); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, p.Source, p.Fence, p.Now)
}

// Validate checks every field.
func (p *ExecutionReplayParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	if err := ValidateText("RequestedBy", p.RequestedBy); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionUpdateProgressParams) Validate(cfg PartitionConfig) error {
	if p.Percent < 0 || p.Percent > 100 {
		return OutOfRange("Percent", p.Percent, "0..100")
	}
	if err := ValidateText("Message", p.Message); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now)
}

// Validate checks every field.
func (p *ClaimGrantIssueParams) Validate(cfg PartitionConfig) error {
	return validateGrant(cfg, p.ID, p.WorkerID, p.WorkerInstanceID, p.Capabilities, p.GrantTTL, p.Now)
}

// Validate checks every field.
func (p *ReclaimGrantIssueParams) Validate(cfg PartitionConfig) error {
	return validateGrant(cfg, p.ID, p.WorkerID, p.WorkerInstanceID, p.Capabilities, p.GrantTTL, p.Now)
}

func validateGrant(cfg PartitionConfig, id ExecutionID, w WorkerID, wi WorkerInstanceID, caps Capabilities, ttl time.Duration, now time.Time) error {
	if err := cfg.CheckExecutionID(id); err != nil {
		return err
	}
	if err := w.Validate(); err != nil {
		return err
	}
	if err := wi.Validate(); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", caps); err != nil {
		return err
	}
	if err := checkDuration("GrantTTL", ttl, time.Millisecond, MaxGrantTTL); err != nil {
		return err
	}
	return checkNow(now)
}

// Validate checks every field.
func (p *ExecutionBlockParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, ok := BlockedEligibility(p.Reason); !ok {
		return &Error{Code: CodeInvalidBlockingReason, Field: "Reason", Detail: p.Reason.String()}
	}
	if err := ValidateText("Detail", p.Detail); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionClaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionGrantAndClaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionClaimNextParams) Validate(cfg PartitionConfig) error {
	if p.Partition < 0 || p.Partition >= cfg.WithDefaults().FlowPartitions {
		return OutOfRange("Partition", p.Partition, "0.."+strconv.Itoa(cfg.WithDefaults().FlowPartitions-1))
	}
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	if p.Namespace != "" {
		if err := p.Namespace.Validate(); err != nil {
			return err
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("LiveCapabilities", p.LiveCapabilities); err != nil {
		return err
	}
	if err := checkLimit("ScanLimit", p.ScanLimit); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionUnblockParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, ok := BlockedEligibility(p.ExpectedReason); !ok {
		return &Error{Code: CodeInvalidBlockingReason, Field: "ExpectedReason", Detail: p.ExpectedReason.String()}
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *LeaseRenewParams) Validate(cfg PartitionConfig) error {
	if err := checkDuration("LeaseTTL", p.LeaseTTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now)
}

// Validate checks every field.
func (p *LeaseMarkExpiredParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *LeaseRevokeParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionReclaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionRecoverParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkNow(p.Now)
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

func checkPartition(cfg PartitionConfig, n int) error {
	if n < 0 || n >= cfg.WithDefaults().FlowPartitions {
		return OutOfRange("Partition", n, "0.."+strconv.Itoa(cfg.WithDefaults().FlowPartitions-1))
	}
	return nil
}

// checkCursor checks an exclusive cursor into one partition's index: an
// execution id of that partition, reported under field.
func checkCursor(cfg PartitionConfig, field string, id ExecutionID, partition int) error {
	if id.IsZero() {
		return invalidField(field, "empty")
	}
	if id.Partition() >= cfg.WithDefaults().FlowPartitions {
		return invalidField(field, "partition_out_of_range")
	}
	if id.Partition() != partition {
		return invalidField(field, "other_partition")
	}
	return nil
}

// Validate checks every field.
func (p *IndexScanDueParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if p.Index < IndexLeaseExpiry || p.Index > IndexDelayed {
		return invalidField("Index", "unknown")
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
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
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

func checkSession(s string) error {
	if s == "" {
		return invalidField("SessionID", "empty")
	}
	if len(s) > 128 || !utf8.ValidString(s) {
		return invalidField("SessionID", "malformed")
	}
	return nil
}

// Validate checks every field.
func (p *WorkerRegisterParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerID.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	if len(p.Lanes) == 0 {
		return invalidField("Lanes", "empty")
	}
	if len(p.Lanes) > 256 {
		return invalidField("Lanes", "too_many")
	}
	for _, l := range p.Lanes {
		if err := validName("Lanes", string(l), 64, false); err != nil {
			return err
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := checkDuration("TTL", p.TTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *WorkerHeartbeatParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	if err := checkDuration("TTL", p.TTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *WorkerDeregisterParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *WorkerExpireParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *WorkerListParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// Validate checks every field.
func (p *ExecutionListParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if !p.After.IsZero() {
		if err := checkCursor(cfg, "After", p.After, p.Partition); err != nil {
			return err
		}
	}
	return checkLimit("Limit", p.Limit)
}

// Validate checks every field.
func (p *LeaseHistoryParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	return checkLimit("Limit", p.Limit)
}

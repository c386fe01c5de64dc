package model

import (
	"strconv"
	"time"
)

// Validation helpers shared by the store parameters. Each operation's
// Validate method sits beside its Params in the file of its sub-interface
// (execution_ops.go, claim_ops.go, …). Every store calls Validate before
// touching state, so both stores reject the same inputs with the same errors.

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

func checkFenced(cfg PartitionConfig, id ExecutionID, src Source, f Fence, now time.Time) error {
	if err := cfg.CheckExecutionID(id); err != nil {
		return err
	}
	if err := CheckFence(src, f); err != nil {
		return err
	}
	return checkNow(now)
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

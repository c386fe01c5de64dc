package model

import "strconv"

// MaxPartitions bounds every partition count: partition numbers must fit the
// hash tags and a uint16.
const MaxPartitions = 16384

// Default partition counts.
const (
	DefaultFlowPartitions   = 256
	DefaultBudgetPartitions = 32
	DefaultQuotaPartitions  = 32
)

// PartitionConfig holds the partition counts. The zero value means the
// defaults (256 execution/flow partitions, 32 budget, 32 quota). Every
// process sharing a store must use the same counts.
type PartitionConfig struct {
	// FlowPartitions is the number of execution and flow partitions.
	FlowPartitions int
	// BudgetPartitions is the number of budget partitions.
	BudgetPartitions int
	// QuotaPartitions is the number of quota partitions.
	QuotaPartitions int
}

// WithDefaults fills zero counts with the defaults.
func (c PartitionConfig) WithDefaults() PartitionConfig {
	if c.FlowPartitions == 0 {
		c.FlowPartitions = DefaultFlowPartitions
	}
	if c.BudgetPartitions == 0 {
		c.BudgetPartitions = DefaultBudgetPartitions
	}
	if c.QuotaPartitions == 0 {
		c.QuotaPartitions = DefaultQuotaPartitions
	}
	return c
}

// Validate checks the counts after defaults.
func (c PartitionConfig) Validate() error {
	c = c.WithDefaults()
	for _, f := range []struct {
		name string
		n    int
	}{
		{"Partitions.FlowPartitions", c.FlowPartitions},
		{"Partitions.BudgetPartitions", c.BudgetPartitions},
		{"Partitions.QuotaPartitions", c.QuotaPartitions},
	} {
		if f.n < 1 || f.n > MaxPartitions {
			return OutOfRange(f.name, f.n, "1.."+strconv.Itoa(MaxPartitions))
		}
	}
	return nil
}

// CRC16 computes CRC16-XMODEM (polynomial 0x1021, initial 0), the checksum
// Valkey Cluster uses for slots and FlowFabric uses for partitions.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// FlowPartition is the partition of a flow: CRC16 of its 16 raw bytes.
func (c PartitionConfig) FlowPartition(f FlowID) int {
	return int(CRC16(f[:])) % c.WithDefaults().FlowPartitions
}

// SoloPartition is the partition of an execution that belongs to no flow:
// CRC16 of the lane name. All of a lane's solo executions share one
// partition, so one claim call on one cluster slot finds the lane's head.
func (c PartitionConfig) SoloPartition(lane LaneID) int {
	return int(CRC16([]byte(lane))) % c.WithDefaults().FlowPartitions
}

// SpreadPartition is the partition chosen from an execution's own UUID, for
// lanes configured to spread across partitions (and cluster slots).
func (c PartitionConfig) SpreadPartition(u UUID) int {
	return int(CRC16(u[:])) % c.WithDefaults().FlowPartitions
}

// BudgetPartition is the partition of a budget.
func (c PartitionConfig) BudgetPartition(b BudgetID) int {
	return int(CRC16(b[:])) % c.WithDefaults().BudgetPartitions
}

// QuotaPartition is the partition of a quota policy.
func (c PartitionConfig) QuotaPartition(q QuotaID) int {
	return int(CRC16(q[:])) % c.WithDefaults().QuotaPartitions
}

// CheckExecutionID verifies that id's partition exists in this config.
func (c PartitionConfig) CheckExecutionID(id ExecutionID) error {
	if id.IsZero() {
		return invalidField("ID", "empty")
	}
	if id.Partition() >= c.WithDefaults().FlowPartitions {
		return invalidField("ID", "partition_out_of_range")
	}
	return nil
}

// PartitionTag is the hash tag of an execution/flow partition: "{fp:N}".
func PartitionTag(n int) string { return "{fp:" + strconv.Itoa(n) + "}" }

// BudgetTag is the hash tag of a budget partition: "{b:N}".
func BudgetTag(n int) string { return "{b:" + strconv.Itoa(n) + "}" }

// QuotaTag is the hash tag of a quota partition: "{q:N}".
func QuotaTag(n int) string { return "{q:" + strconv.Itoa(n) + "}" }

// WorkerTag is the hash tag of a namespace's worker registry: "{w:<ns>}".
// Every worker key of one namespace shares one slot, so registration is one
// atomic step even on a cluster.
func WorkerTag(ns Namespace) string { return "{w:" + string(ns) + "}" }

package model

import (
	"testing"
)

// crc16Table is an independent, table-driven CRC16-XMODEM.
func crc16Table(b []byte) uint16 {
	var table [256]uint16
	for i := range table {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		table[i] = c
	}
	var crc uint16
	for _, x := range b {
		crc = crc<<8 ^ table[byte(crc>>8)^x]
	}
	return crc
}

func TestCRC16(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint16{
		"123456789": 0x31C3, // the CRC16-XMODEM check value
		"":          0,
		"foo":       0xAF96, // Valkey CLUSTER KEYSLOT foo = 12182
		"bar":       0x93C5, // CLUSTER KEYSLOT bar = 5061
	} {
		if got := CRC16([]byte(in)); got != want {
			t.Errorf("CRC16(%q) = %#04x, want %#04x", in, got, want)
		}
	}
	if got := CRC16([]byte("foo")) % 16384; got != 12182 {
		t.Fatalf("slot of foo = %d", got)
	}
}

func FuzzCRC16(f *testing.F) {
	f.Add([]byte("123456789"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := CRC16(b), crc16Table(b); got != want {
			t.Fatalf("CRC16(%q) = %#04x, table says %#04x", b, got, want)
		}
	})
}

func TestPartitionConfig(t *testing.T) {
	t.Parallel()
	d := PartitionConfig{}.WithDefaults()
	if d != (PartitionConfig{FlowPartitions: 256, BudgetPartitions: 32, QuotaPartitions: 32}) {
		t.Fatalf("defaults: %+v", d)
	}
	if got := (PartitionConfig{FlowPartitions: 4}).WithDefaults(); got.FlowPartitions != 4 || got.BudgetPartitions != 32 {
		t.Fatalf("partial defaults: %+v", got)
	}
	for _, tc := range []struct {
		c     PartitionConfig
		field string
	}{
		{PartitionConfig{FlowPartitions: -1}, "Partitions.FlowPartitions"},
		{PartitionConfig{FlowPartitions: MaxPartitions + 1}, "Partitions.FlowPartitions"},
		{PartitionConfig{BudgetPartitions: -1}, "Partitions.BudgetPartitions"},
		{PartitionConfig{QuotaPartitions: MaxPartitions + 1}, "Partitions.QuotaPartitions"},
	} {
		requireValidation(t, tc.c.Validate(), tc.field)
	}
	for _, c := range []PartitionConfig{{}, {FlowPartitions: 1}, {FlowPartitions: MaxPartitions, BudgetPartitions: 1, QuotaPartitions: 1}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestPartitionFunctions(t *testing.T) {
	t.Parallel()
	u, _ := ParseUUID(sampleUUID)
	for _, n := range []int{1, 4, 256, MaxPartitions} {
		c := PartitionConfig{FlowPartitions: n, BudgetPartitions: n, QuotaPartitions: n}
		for _, lane := range []LaneID{"alpha", "default", "emails"} {
			if got, want := c.SoloPartition(lane), int(crc16Table([]byte(lane)))%n; got != want {
				t.Errorf("n=%d SoloPartition(%s) = %d, want %d", n, lane, got, want)
			}
		}
		want := int(crc16Table(u[:])) % n
		if c.SpreadPartition(u) != want || c.FlowPartition(FlowID(u)) != want ||
			c.BudgetPartition(BudgetID(u)) != want || c.QuotaPartition(QuotaID(u)) != want {
			t.Errorf("n=%d: partitions of a uuid must be CRC16 of its 16 bytes mod n (%d)", n, want)
		}
	}
	// The zero config uses the defaults.
	if got := (PartitionConfig{}).SoloPartition("alpha"); got != 0x8361%256 {
		t.Fatalf("default SoloPartition(alpha) = %d", got)
	}
	if got := (PartitionConfig{}).BudgetPartition(BudgetID(u)); got != int(crc16Table(u[:]))%32 {
		t.Fatalf("default BudgetPartition = %d", got)
	}
}

func TestCheckExecutionID(t *testing.T) {
	t.Parallel()
	u, _ := ParseUUID(sampleUUID)
	c := PartitionConfig{FlowPartitions: 4}
	if err := c.CheckExecutionID(NewExecutionID(3, u)); err != nil {
		t.Fatal(err)
	}
	if e := requireValidation(t, c.CheckExecutionID(NewExecutionID(4, u)), "ID"); e.Detail != "partition_out_of_range" {
		t.Fatal(e)
	}
	if e := requireValidation(t, c.CheckExecutionID(ExecutionID{}), "ID"); e.Detail != "empty" {
		t.Fatal(e)
	}
}

func TestTags(t *testing.T) {
	t.Parallel()
	for got, want := range map[string]string{
		PartitionTag(0):         "{fp:0}",
		PartitionTag(16383):     "{fp:16383}",
		BudgetTag(7):            "{b:7}",
		QuotaTag(31):            "{q:31}",
		WorkerTag("default"):    "{w:default}",
		WorkerTag("team.a-b_c"): "{w:team.a-b_c}",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

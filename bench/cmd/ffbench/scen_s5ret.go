package main

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// RetentionRow is S5's retention measurement on one store: n completed
// executions (created, claimed and completed with a retention of an
// hour), the memory they hold, and the memory once the retention ran out
// and the trimmer deleted them, against the memory before the fill.
type RetentionRow struct {
	Store     string  `json:"store"`
	Completed int     `json:"completed"`
	Before    int64   `json:"before_bytes"`
	Full      int64   `json:"full_bytes"`
	After     int64   `json:"after_bytes"`
	PerExec   float64 `json:"bytes_per_completed_execution"`
	// Trim is how long deleting them took (TrimDue: one IndexScanDue
	// per 1000 due entries, one ExecutionDelete each).
	TrimMs float64 `json:"trim_ms"`
	Error  string  `json:"error,omitempty"`
}

// returned says whether memory came back within 5 % of before.
func (r RetentionRow) returned() bool { return r.Error == "" && r.After <= r.Before+r.Before/20 }

var retentionKeep = model.Retention{Completed: time.Hour}

// retentionRows measures memstore and, with a server, valkeystore.
func retentionRows(ctx context.Context, addrs []string, n int) []RetentionRow {
	rows := []RetentionRow{memstoreRetention(ctx, n)}
	if addrs != nil {
		rows = append(rows, serverRetention(ctx, addrs, n))
	}
	return rows
}

func memstoreRetention(ctx context.Context, n int) RetentionRow {
	row := RetentionRow{Store: "memstore (Go heap)", Completed: n}
	s := memstore.New(nil)
	now := time.UnixMilli(1_700_000_000_000)
	if err := retentionWarm(ctx, s, now); err != nil {
		row.Error = err.Error()
		return row
	}
	row.Before = int64(heapAlloc())
	if _, err := storetest.FillCompleted(ctx, s, n, 1, "s5", retentionKeep, now.Add(time.Second)); err != nil {
		row.Error = err.Error()
		return row
	}
	row.Full = int64(heapAlloc())
	start := time.Now()
	if d, err := storetest.TrimDue(ctx, s, now.Add(2*time.Hour)); err != nil || d != n {
		row.Error = fmt.Sprintf("trim deleted %d of %d: %v", d, n, err)
		return row
	}
	row.TrimMs = float64(time.Since(start).Microseconds()) / 1000
	row.After = int64(heapAlloc())
	row.PerExec = float64(row.Full-row.Before) / float64(n)
	return row
}

// retentionWarm takes one execution through the whole cycle, so what every
// store keeps once used (a lane's sets, loaded scripts) is in the
// baseline.
func retentionWarm(ctx context.Context, s model.Store, now time.Time) error {
	if _, err := storetest.FillCompleted(ctx, s, 1, 1, "s5", retentionKeep, now); err != nil {
		return err
	}
	d, err := storetest.TrimDue(ctx, s, now.Add(time.Hour))
	if err != nil {
		return fmt.Errorf("warm-up trim: %w", err)
	}
	if d != 1 {
		return fmt.Errorf("warm-up trim deleted %d executions, want 1", d)
	}
	return nil
}

// serverRetention measures used_memory on the standalone server. The
// server shrinks its key table in its periodic task, so after the trim
// used_memory is read until it is back within 5 % or 20 s passed.
func serverRetention(ctx context.Context, addrs []string, n int) RetentionRow {
	row := RetentionRow{Store: "valkeystore (server used_memory)", Completed: n}
	probe := &serverProbe{addrs: addrs}
	if err := probe.flushAll(); err != nil {
		row.Error = err.Error()
		return row
	}
	defer func() { _ = probe.flushAll() }()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		row.Error = err.Error()
		return row
	}
	defer client.Close()
	vs, err := valkeystore.New(client, nil)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	now := time.UnixMilli(1_700_000_000_000)
	if err := retentionWarm(ctx, vs, now); err != nil {
		row.Error = err.Error()
		return row
	}
	if row.Before, err = probe.usedMemory(); err != nil {
		row.Error = err.Error()
		return row
	}
	if _, err := storetest.FillCompleted(ctx, vs, n, 32, "s5", retentionKeep, now.Add(time.Second)); err != nil {
		row.Error = err.Error()
		return row
	}
	if row.Full, err = probe.usedMemory(); err != nil {
		row.Error = err.Error()
		return row
	}
	start := time.Now()
	if d, err := storetest.TrimDue(ctx, vs, now.Add(2*time.Hour)); err != nil || d != n {
		row.Error = fmt.Sprintf("trim deleted %d of %d: %v", d, n, err)
		return row
	}
	row.TrimMs = float64(time.Since(start).Microseconds()) / 1000
	for deadline := time.Now().Add(20 * time.Second); ; {
		if row.After, err = probe.usedMemory(); err != nil {
			row.Error = err.Error()
			return row
		}
		if row.returned() || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	row.PerExec = float64(row.Full-row.Before) / float64(n)
	return row
}

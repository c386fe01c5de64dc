package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// InspectorRow is S5's inspector measurement on one store holding n
// executions spread over every partition, 8 lanes and 4 kinds: 90 %
// waiting, 5 % completed, 5 % failed. It times the engine's reads an
// operator's dashboard makes: Counts (every partition's counters), a
// Find page of 100 failed executions (a 5 % filter: a page examines about
// 2,000), and a Find page of a lane's waiting work.
type InspectorRow struct {
	Store      string `json:"store"`
	Executions int    `json:"executions"`
	Partitions int    `json:"partitions"`
	// CountUs and CountCmds are per Counts call (server commands: none
	// for memstore).
	CountUs   float64 `json:"count_us"`
	CountCmds float64 `json:"count_cmds"`
	// FindFailed* are per page of 100 failed executions from the start.
	FindFailedUs       float64 `json:"find_failed_us"`
	FindFailedCmds     float64 `json:"find_failed_cmds"`
	FindFailedExamined int     `json:"find_failed_examined"`
	// FindLane* are per page of 100 waiting executions of one lane.
	FindLaneUs       float64 `json:"find_lane_us"`
	FindLaneCmds     float64 `json:"find_lane_cmds"`
	FindLaneExamined int     `json:"find_lane_examined"`
	Error            string  `json:"error,omitempty"`
}

// inspectorRows measures memstore and, with a server, valkeystore.
func inspectorRows(ctx context.Context, addrs []string, n int) []InspectorRow {
	rows := []InspectorRow{inspectorRow(ctx, "memstore", memstore.New(nil), nil, n)}
	if addrs != nil {
		rows = append(rows, serverInspector(ctx, addrs, n))
	}
	return rows
}

func serverInspector(ctx context.Context, addrs []string, n int) InspectorRow {
	const name = "valkeystore (standalone)"
	probe := &serverProbe{addrs: addrs}
	if err := probe.flushAll(); err != nil {
		return InspectorRow{Store: name, Error: err.Error()}
	}
	defer func() { _ = probe.flushAll() }()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return InspectorRow{Store: name, Error: err.Error()}
	}
	defer client.Close()
	vs, err := valkeystore.New(client, nil)
	if err != nil {
		return InspectorRow{Store: name, Error: err.Error()}
	}
	return inspectorRow(ctx, name, vs, probe, n)
}

func inspectorRow(ctx context.Context, name string, s model.Store, probe *serverProbe, n int) InspectorRow {
	parts := s.Partitions().WithDefaults().FlowPartitions
	row := InspectorRow{Store: name, Executions: n, Partitions: parts}
	now := time.UnixMilli(1_700_000_000_000)
	if err := inspectorFill(ctx, s, n, now); err != nil {
		row.Error = err.Error()
		return row
	}
	e := flowfabric.New(s, &flowfabric.Config{Clock: model.NewSimClock(now.Add(time.Minute))})
	// measure runs f reps times and returns µs and server commands per call.
	measure := func(reps int, f func() error) (us, cmds float64, err error) {
		if err := f(); err != nil { // warm: scripts loaded, connections open
			return 0, 0, err
		}
		var before cmdStats
		if probe != nil {
			if before, err = probe.commandStats(); err != nil {
				return 0, 0, err
			}
		}
		start := time.Now()
		for range reps {
			if err := f(); err != nil {
				return 0, 0, err
			}
		}
		us = float64(time.Since(start).Microseconds()) / float64(reps)
		if probe != nil {
			after, err := probe.commandStats()
			if err != nil {
				return 0, 0, err
			}
			cmds = float64(after.sub(before).total()) / float64(reps)
		}
		return us, cmds, nil
	}
	var err error
	row.CountUs, row.CountCmds, err = measure(20, func() error {
		c, err := e.Counts(ctx, nil)
		if err == nil && c.Total != int64(n) {
			err = fmt.Errorf("engine counts total %d, want %d", c.Total, n)
		}
		return err
	})
	if err != nil {
		row.Error = "counts: " + err.Error()
		return row
	}
	find := func(o flowfabric.FindOpts, examined *int) func() error {
		return func() error {
			p, err := e.Find(ctx, &o)
			if err == nil && len(p.IDs) != o.Limit {
				err = fmt.Errorf("find %+v listed %d", o, len(p.IDs))
			}
			if err == nil {
				*examined = p.Examined
			}
			return err
		}
	}
	row.FindFailedUs, row.FindFailedCmds, err = measure(10, find(flowfabric.FindOpts{
		States: []flowfabric.PublicState{flowfabric.PublicFailed}, Limit: 100}, &row.FindFailedExamined))
	if err != nil {
		row.Error = "find failed: " + err.Error()
		return row
	}
	row.FindLaneUs, row.FindLaneCmds, err = measure(10, find(flowfabric.FindOpts{
		Lane: "insp-3", States: []flowfabric.PublicState{flowfabric.PublicWaiting}, Limit: 100}, &row.FindLaneExamined))
	if err != nil {
		row.Error = "find lane: " + err.Error()
	}
	return row
}

// inspectorFill creates n executions over every partition: each 20th
// completed, each 20th (offset 10) failed, the others waiting.
func inspectorFill(ctx context.Context, s model.Store, n int, now time.Time) error {
	parts := s.Partitions().WithDefaults().FlowPartitions
	const workers = 32
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := inspectorOne(ctx, s, i, parts, now); err != nil {
					errs[w] = fmt.Errorf("execution %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func inspectorOne(ctx context.Context, s model.Store, i, parts int, now time.Time) error {
	uuid := func(kind byte) model.UUID {
		var b [16]byte
		b[0] = kind
		binary.BigEndian.PutUint64(b[8:], uint64(i))
		return model.NewUUIDv4(b)
	}
	id := model.NewExecutionID(i%parts, uuid(1))
	if _, err := s.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace,
		Lane: model.LaneID(fmt.Sprintf("insp-%d", i%8)), Kind: model.Kind(fmt.Sprintf("k%d", i%4)), Now: now}); err != nil {
		return err
	}
	if i%20 != 0 && i%20 != 10 {
		return nil
	}
	c, err := s.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: model.LeaseRequest{
		WorkerID: "fill", WorkerInstanceID: "fill-1", LeaseID: model.LeaseID(uuid(2)), AttemptID: model.AttemptID(uuid(3)), LeaseTTL: time.Minute,
	}, Now: now})
	if err != nil {
		return err
	}
	if i%20 == 0 {
		_, err = s.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: c.Fence(), Now: now})
		return err
	}
	_, err = s.ExecutionFail(ctx, &model.ExecutionFailParams{ID: id, Fence: c.Fence(), Category: model.FailurePermanent,
		Reason: "bench", Now: now})
	return err
}

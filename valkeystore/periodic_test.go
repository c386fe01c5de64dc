package valkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// TestPeriodicTwoProcesses runs one periodic job in two engines, each with
// its own client and store on one server (miniredis), on a simulated
// clock: every tick is submitted once between them.
func TestPeriodicTwoProcesses(t *testing.T) {
	ctx := context.Background()
	clock := model.NewSimClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	untrack := clock.Track() // time moves only while this test waits
	defer untrack()
	clock.SetAutoAdvance(true)
	activity := clock.NewSignal()
	hour := flowfabric.TimerConfig{Interval: time.Hour}
	addr := miniredis.RunT(t).Addr()
	var engines []*flowfabric.Engine
	for range 2 {
		s, err := New(newClient(t, addr), nil)
		if err != nil {
			t.Fatal(err)
		}
		e := flowfabric.New(s, &flowfabric.Config{Clock: clock, OnActivity: activity.Notify,
			Scanners: flowfabric.ScannerConfig{DelayedPromoter: hour, LeaseExpiry: flowfabric.LeaseExpiryConfig{TimerConfig: hour},
				SweepInterval: time.Hour, WorkerExpiryInterval: time.Hour, Unblock: flowfabric.UnblockConfig{Interval: time.Hour}}})
		if err := e.AddPeriodic(flowfabric.PeriodicJob{Name: "every-minute", Every: time.Minute, Args: job{N: 1},
			Opts: &flowfabric.SubmitOpts{Lane: "cron"}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.Stop(ctx); err != nil {
				t.Error(err)
			}
		}()
		engines = append(engines, e)
	}
	const ticks = 40
	last := clock.Now().Add(ticks * time.Minute)
	for {
		done := true
		for _, e := range engines {
			done = done && e.Periodics()[0].Last.Equal(last)
		}
		if done {
			break
		}
		if clock.Now().After(last.Add(time.Minute)) {
			t.Fatalf("at %v the engines' last ticks are %v and %v, want %v", clock.Now(),
				engines[0].Periodics()[0].Last, engines[1].Periodics()[0].Last, last)
		}
		if err := clock.Wait(ctx, time.Second, activity); err != nil {
			t.Fatal(err)
		}
	}
	e := engines[0]
	part := e.Store().Partitions().SoloPartition("cron")
	page, err := e.List(ctx, &flowfabric.ListOpts{Partition: part, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.IDs) != ticks {
		t.Fatalf("%d executions for %d ticks", len(page.IDs), ticks)
	}
}

// TestUniqueByStateOnServer: an engine on valkeystore makes a unique
// submission a duplicate while the first is waiting and a new execution
// once it was cancelled; uniqueness by args holds across two processes.
func TestUniqueByStateOnServer(t *testing.T) {
	ctx := context.Background()
	clock := model.NewSimClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	addr := miniredis.RunT(t).Addr()
	var engines []*flowfabric.Engine
	for range 2 {
		s, err := New(newClient(t, addr), nil)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, flowfabric.New(s, &flowfabric.Config{Clock: clock}))
	}
	opts := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByArgs: true,
		ByState: []flowfabric.PublicState{flowfabric.PublicWaiting, flowfabric.PublicActive}}}
	submit := func(e *flowfabric.Engine, n int) *flowfabric.SubmitResult {
		t.Helper()
		r, err := e.Submit(ctx, job{N: n}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := submit(engines[0], 1)
	if r := submit(engines[1], 1); !r.Duplicate || r.ID != first.ID || r.PublicState != flowfabric.PublicWaiting {
		t.Fatalf("same args from another process while waiting: %+v", r)
	}
	if r := submit(engines[1], 2); r.Duplicate {
		t.Fatalf("other args: %+v", r)
	}
	if err := engines[0].Cancel(ctx, first.ID, "stop"); err != nil {
		t.Fatal(err)
	}
	second := submit(engines[1], 1)
	if second.Duplicate || second.ID == first.ID {
		t.Fatalf("after the first was cancelled: %+v", second)
	}
	if r := submit(engines[0], 1); !r.Duplicate || r.ID != second.ID {
		t.Fatalf("the key names the new execution: %+v", r)
	}
}

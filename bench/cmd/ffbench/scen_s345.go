package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// S3Result is the idle cost on valkeystore standalone.
type S3Result struct {
	Error      string  `json:"error,omitempty"`
	Workers    int     `json:"workers"`
	Partitions int     `json:"partitions"`
	WindowSecs float64 `json:"window_seconds"`
	// CmdsPerSec counts every command the server ran in the idle window
	// (INFO commandstats, commands run inside scripts included, the
	// bench's own INFO excluded).
	CmdsPerSec       float64            `json:"server_cmds_per_sec"`
	ScriptsPerSec    float64            `json:"script_calls_per_sec"`
	StoreCallsPerSec map[string]float64 `json:"store_calls_per_sec"`
	TopCommands      []string           `json:"top_commands"`
	StartupCmds      int64              `json:"startup_cmds"`
	StartupSecs      float64            `json:"startup_window_seconds"`
	SweepCmds        int64              `json:"full_sweep_cmds"`
	SweepEverySecs   float64            `json:"sweep_every_seconds"`
	AmortizedPerSec  float64            `json:"cmds_per_sec_with_sweeps"`
	PingRTT          Latency            `json:"ping_rtt"`
	// ColdPing is one PING after the same idle gap the wakes get: the round
	// trip a cold path (parked threads, idle vCPU) pays.
	ColdPing Latency `json:"ping_rtt_after_idle"`
	Wake     Latency `json:"idle_wake"`
	// SubmitCall is how long the Submit call itself took in the wakes (the
	// create script's round trip), and ClaimsPerWake the claim scripts the
	// idle workers ran per woken job (all wake; one wins).
	SubmitCall        Latency            `json:"idle_wake_submit_call"`
	CallsPerWake      map[string]float64 `json:"store_calls_per_wake"`
	WakeOverPingRatio float64            `json:"wake_p50_over_ping_p50"`
}

type s3Config struct {
	Window, Warmup time.Duration
	Wakes          int
}

func runS3(ctx context.Context, addrs []string, c s3Config) (res S3Result) {
	res.Workers = 4
	fail := func(err error) S3Result {
		res.Error = err.Error()
		logf("  S3: %v", err)
		return res
	}
	probe := &serverProbe{addrs: addrs}
	if err := probe.flushAll(); err != nil {
		return fail(err)
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	vs, err := valkeystore.New(client, nil)
	if err != nil {
		return fail(err)
	}
	defer vs.Close()
	store := newCountingStore(vs, nil)
	res.Partitions = store.Partitions().WithDefaults().FlowPartitions
	engine := flowfabric.New(store, nil)

	var started atomic.Pointer[chan time.Time]
	h := flowfabric.HandlerFunc[benchArgs](func(_ context.Context, _ *flowfabric.Task[benchArgs]) error {
		if ch := started.Load(); ch != nil {
			select {
			case *ch <- time.Now():
			default:
			}
		}
		return nil
	})
	sw := openWindow(probe)
	if err := engine.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = engine.Stop(context.Background()) }()
	var workers []*flowfabric.Worker
	for i := range res.Workers {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("idle-%d", i))})
		flowfabric.AddHandler(w, h)
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
		workers = append(workers, w)
	}
	defer func() {
		for _, w := range workers {
			_ = w.Stop(context.Background())
		}
	}()
	sleep(ctx, c.Warmup)
	st := sw.close()
	res.StartupCmds, res.StartupSecs = st.Cmds.total(), st.Elapsed.Seconds()

	// the idle window
	calls0 := store.snapshot()
	iw := openWindow(probe)
	sleep(ctx, c.Window)
	ist := iw.close()
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	secs := ist.Elapsed.Seconds()
	res.WindowSecs = secs
	res.CmdsPerSec = float64(ist.Cmds.total()) / secs
	res.ScriptsPerSec = float64(ist.Cmds.scripts()) / secs
	res.TopCommands = ist.Cmds.top(10, 0)
	res.StoreCallsPerSec = map[string]float64{}
	for k, v := range store.snapshot() {
		if d := v - calls0[k]; d != 0 {
			res.StoreCallsPerSec[k] = float64(d) / secs
		}
	}

	// PING round trip on the same client
	var pings []time.Duration
	for range 200 {
		t := time.Now()
		if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
			return fail(err)
		}
		pings = append(pings, time.Since(t))
	}
	res.PingRTT = summarize(pings)

	// idle wake: submit while every worker idles, measure submit → handler start
	ch := make(chan time.Time, 1)
	started.Store(&ch)
	var wakes, calls, cold []time.Duration
	gap := func() { sleep(ctx, 150*time.Millisecond+time.Duration(rand.IntN(150))*time.Millisecond) }
	for range c.Wakes {
		gap()
		t := time.Now()
		if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
			return fail(err)
		}
		cold = append(cold, time.Since(t))
	}
	res.ColdPing = summarize(cold)
	callsBefore := store.snapshot()
	for i := range c.Wakes {
		gap()
		t := time.Now()
		if _, err := engine.Submit(ctx, benchArgs{Seq: int64(i)}, nil); err != nil {
			return fail(err)
		}
		calls = append(calls, time.Since(t))
		select {
		case at := <-ch:
			wakes = append(wakes, at.Sub(t))
		case <-time.After(5 * time.Second):
			return fail(fmt.Errorf("idle wake %d: handler did not start within 5s", i))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	res.Wake = summarize(wakes)
	res.SubmitCall = summarize(calls)
	sleep(ctx, 100*time.Millisecond) // let the losing claims finish
	res.CallsPerWake, _ = callsDelta(callsBefore, store.snapshot(), float64(c.Wakes))
	if res.PingRTT.P50 > 0 {
		res.WakeOverPingRatio = res.Wake.P50 / res.PingRTT.P50
	}

	// a full sweep: the engine's sweeper reads every partition once per
	// scan.DefaultSweepInterval (one PartitionDue call each); on an idle
	// store the other scanners then visit nothing
	clock := engine.Clock()
	unblock := scan.NewUnblock(store, clock, scan.UnblockConfig{})
	sweeper := scan.NewSweeper(store, 0, unblock,
		scan.NewLeaseExpiry(store, clock, scan.LeaseExpiryConfig{}),
		scan.NewDelayedPromoter(store, clock, scan.TimerConfig{}),
		scan.NewAttemptTimeout(store, clock, scan.TimerConfig{}),
		scan.NewExecutionDeadline(store, clock, scan.TimerConfig{}))
	ww := openWindow(probe)
	if _, err := sweeper.RunOnce(ctx); err != nil {
		return fail(err)
	}
	wst := ww.close()
	res.SweepCmds = wst.Cmds.total()
	res.SweepEverySecs = scan.DefaultSweepInterval.Seconds()
	res.AmortizedPerSec = res.CmdsPerSec + float64(res.SweepCmds)/res.SweepEverySecs
	return res
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// S4Result is the scan cost.
type S4Result struct {
	Error   string          `json:"error,omitempty"`
	Unblock []UnblockResult `json:"unblock"`
	// CmdsRatio is commands per pass at the largest count over the smallest.
	CmdsRatio float64 `json:"cmds_ratio_large_over_small"`
	// BudgetUnblock and QuotaUnblock are the same pass over executions
	// blocked on a budget that was then reset, and on a quota bucket
	// whose one concurrency slot was then released (issue 12).
	BudgetUnblock   []UnblockResult  `json:"budget_unblock,omitempty"`
	BudgetCmdsRatio float64          `json:"budget_cmds_ratio_large_over_small,omitempty"`
	QuotaUnblock    []UnblockResult  `json:"quota_unblock,omitempty"`
	QuotaCmdsRatio  float64          `json:"quota_cmds_ratio_large_over_small,omitempty"`
	Recovery        []RecoveryResult `json:"lease_recovery"`
}

// UnblockResult is one unblock pass over every partition with Blocked
// route-blocked executions that no live worker can serve.
type UnblockResult struct {
	Blocked       int     `json:"blocked"`
	Partitions    int     `json:"partitions_visited"`
	Cmds          int64   `json:"server_cmds_per_pass"`
	Scripts       int64   `json:"script_calls_per_pass"`
	ServerUsec    int64   `json:"server_usec_per_pass"`
	PassMillis    float64 `json:"pass_ms"`
	Unblocked     int     `json:"unblocked"`
	SteadyCmds    int64   `json:"steady_pass_cmds"`
	SetupSecs     float64 `json:"setup_seconds"`
	ServerUsedMem int64   `json:"used_memory,omitempty"`
}

// RecoveryResult is the lease-expiry scanner recovering expired leases in
// one partition.
type RecoveryResult struct {
	Store      string  `json:"store"`
	Leases     int     `json:"leases"`
	Batch      int     `json:"batch"`
	Passes     int     `json:"passes"`
	MaxPasses  int     `json:"max_passes_target"`
	Recovered  int     `json:"recovered"`
	Secs       float64 `json:"seconds"`
	PerSec     float64 `json:"recovered_per_sec"`
	Cmds       int64   `json:"server_cmds,omitempty"`
	Scripts    int64   `json:"script_calls,omitempty"`
	Error      string  `json:"error,omitempty"`
	Partitions int     `json:"partitions"`
}

type s4Config struct {
	Blocked []int
	Leases  int
}

var uuidSeq atomic.Uint64

func benchUUID() model.UUID {
	v := uuidSeq.Add(1)
	var b [16]byte
	for i := range 8 {
		b[15-i] = byte(v >> (8 * i))
	}
	b[0] = byte(rand.Uint32())
	b[1] = byte(rand.Uint32())
	return model.NewUUIDv4(b)
}

// parallelDo runs f(0) … f(n-1) on conc goroutines, each taking the next
// index; the first error stops the goroutine that got it and is returned.
func parallelDo(n, conc int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func runS4(ctx context.Context, addrs []string, c s4Config, withMem bool) (res S4Result) {
	probe := &serverProbe{addrs: addrs}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer client.Close()
	for _, n := range c.Blocked {
		u, err := unblockCost(ctx, client, probe, n)
		if err != nil {
			res.Error = fmt.Sprintf("unblock with %d blocked: %v", n, err)
			logf("  S4: %s", res.Error)
			return res
		}
		logf("    unblock pass with %d blocked: %d cmds, %d scripts, %.2f ms", n, u.Cmds, u.Scripts, u.PassMillis)
		res.Unblock = append(res.Unblock, u)
	}
	res.CmdsRatio = cmdsRatio(res.Unblock)
	for _, kind := range []admissionBlock{blockBudget, blockQuota} {
		var rows []UnblockResult
		for _, n := range c.Blocked {
			u, err := admissionUnblockCost(ctx, client, probe, n, kind)
			if err != nil {
				res.Error = fmt.Sprintf("unblock with %d %s-blocked: %v", n, kind, err)
				logf("  S4: %s", res.Error)
				return res
			}
			logf("    unblock pass with %d %s-blocked: %d cmds, %d scripts, %.2f ms, %d unblocked", n, kind, u.Cmds, u.Scripts, u.PassMillis, u.Unblocked)
			rows = append(rows, u)
		}
		if kind == blockBudget {
			res.BudgetUnblock, res.BudgetCmdsRatio = rows, cmdsRatio(rows)
		} else {
			res.QuotaUnblock, res.QuotaCmdsRatio = rows, cmdsRatio(rows)
		}
	}
	if withMem {
		res.Recovery = append(res.Recovery, leaseRecovery(ctx, "memstore", memstore.New(nil), nil, c.Leases))
	}
	if err := probe.flushAll(); err != nil {
		res.Error = err.Error()
		return res
	}
	vs, err := valkeystore.New(client, nil)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Recovery = append(res.Recovery, leaseRecovery(ctx, "valkey", vs, probe, c.Leases))
	return res
}

// cmdsRatio is commands per pass at the largest count over the smallest.
func cmdsRatio(rows []UnblockResult) float64 {
	if len(rows) < 2 || rows[0].Cmds == 0 {
		return 0
	}
	return float64(rows[len(rows)-1].Cmds) / float64(rows[0].Cmds)
}

func unblockCost(ctx context.Context, client valkey.Client, probe *serverProbe, n int) (UnblockResult, error) {
	r := UnblockResult{Blocked: n}
	if err := probe.flushAll(); err != nil {
		return r, err
	}
	store, err := valkeystore.New(client, nil)
	if err != nil {
		return r, err
	}
	clock := model.NewSimClock(time.Now())
	t0 := time.Now()
	cpu, _ := model.ParseCapabilities("capabilities", []string{"cpu"})
	gpu, _ := model.ParseCapabilities("required_capabilities", []string{"gpu"})
	if _, err := store.WorkerRegister(ctx, &model.WorkerRegisterParams{Namespace: model.DefaultNamespace, WorkerID: "cpu",
		WorkerInstanceID: "cpu-1", SessionID: "s", Lanes: []model.LaneID{"gpu-jobs"}, Capabilities: cpu,
		TTL: time.Hour, Now: clock.Now()}); err != nil {
		return r, err
	}
	part := store.Partitions().SoloPartition("gpu-jobs")
	err = parallelDo(n, 32, func(int) error {
		_, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: model.NewExecutionID(part, benchUUID()),
			Namespace: model.DefaultNamespace, Lane: "gpu-jobs", Kind: "bench", RequiredCapabilities: gpu, Now: clock.Now()})
		return err
	})
	if err != nil {
		return r, err
	}
	// the claim path moves what no live worker can serve to blocked:route
	blocked := 0
	for blocked < n {
		res, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: "gpu-jobs",
			Capabilities: cpu, LiveCapabilities: cpu, ScanLimit: model.MaxPageSize,
			LeaseRequest: model.LeaseRequest{WorkerID: "cpu", WorkerInstanceID: "cpu-1",
				LeaseID: model.LeaseID(benchUUID()), AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Minute},
			Now: clock.Now()})
		if err != nil {
			return r, err
		}
		if res.Claimed != nil {
			return r, fmt.Errorf("claimed %s", res.Claimed.ID)
		}
		if len(res.Blocked) == 0 {
			return r, fmt.Errorf("only %d of %d blocked", blocked, n)
		}
		blocked += len(res.Blocked)
	}
	r.SetupSecs = time.Since(t0).Seconds()
	r.ServerUsedMem, _ = probe.usedMemory()
	u := scan.NewUnblock(store, clock, scan.UnblockConfig{})
	// the engine's claim path hints the partition it blocked in (the
	// sweeper finds partitions other processes blocked in)
	u.Hint(part, clock.Now())
	w := openWindow(probe)
	t := time.Now()
	pr, err := u.RunOnce(ctx)
	r.PassMillis = ms(time.Since(t))
	st := w.close()
	if err != nil {
		return r, err
	}
	r.Partitions, r.Unblocked = pr.Partitions, pr.Acted
	r.Cmds, r.Scripts, r.ServerUsec = st.Cmds.total(), st.Cmds.scripts(), st.Cmds.scriptUsec()
	w = openWindow(probe)
	if _, err := u.RunOnce(ctx); err != nil {
		return r, err
	}
	r.SteadyCmds = w.close().Cmds.total()
	return r, nil
}

// leaseRecovery claims n executions of one partition with a 1 s lease,
// moves the clock a minute on, and runs the lease-expiry scanner (default
// batch) until a pass reports no more due work.
func leaseRecovery(ctx context.Context, name string, store model.Store, probe *serverProbe, n int) RecoveryResult {
	r := RecoveryResult{Store: name, Leases: n, Batch: scan.DefaultBatch,
		MaxPasses: (n+scan.DefaultBatch-1)/scan.DefaultBatch + 1, Partitions: store.Partitions().WithDefaults().FlowPartitions}
	fail := func(err error) RecoveryResult {
		r.Error = err.Error()
		logf("  S4 recovery %s: %v", name, err)
		return r
	}
	clock := model.NewSimClock(time.Now())
	part := store.Partitions().SoloPartition("leases")
	err := parallelDo(n, 32, func(int) error {
		_, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: model.NewExecutionID(part, benchUUID()),
			Namespace: model.DefaultNamespace, Lane: "leases", Kind: "bench", Now: clock.Now()})
		return err
	})
	if err != nil {
		return fail(err)
	}
	var claimed atomic.Int64
	err = parallelDo(n, 16, func(int) error {
		res, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: "leases",
			ScanLimit: 32, LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1",
				LeaseID: model.LeaseID(benchUUID()), AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Second},
			Now: clock.Now()})
		if err == nil && res.Claimed != nil {
			claimed.Add(1)
		}
		return err
	})
	if err != nil {
		return fail(err)
	}
	if int(claimed.Load()) != n {
		return fail(fmt.Errorf("claimed %d of %d", claimed.Load(), n))
	}
	clock.Advance(time.Minute)
	le := scan.NewLeaseExpiry(store, clock, scan.LeaseExpiryConfig{})
	// the claiming engine hints the lease expiry (a sweep finds leases that
	// crashed processes took)
	le.Hint(part, clock.Now())
	w := openWindow(probe)
	t := time.Now()
	for {
		res, err := le.RunOnce(ctx)
		if err != nil {
			return fail(err)
		}
		r.Passes++
		r.Recovered += res.Acted
		if !res.More {
			break
		}
		if r.Passes > 10*n {
			return fail(fmt.Errorf("no progress after %d passes", r.Passes))
		}
	}
	r.Secs = time.Since(t).Seconds()
	r.PerSec = float64(r.Recovered) / r.Secs
	st := w.close()
	if probe != nil {
		r.Cmds, r.Scripts = st.Cmds.total(), st.Cmds.scripts()
	}
	return r
}

// S5Result is memory per queued execution.
type S5Result struct {
	Queued int         `json:"queued"`
	Rows   []MemoryRow `json:"rows"`
	// Retention is what completed executions hold and what retention
	// gives back (scen_s5ret.go).
	Retention []RetentionRow `json:"retention,omitempty"`
	// Inspector is what the inspector's reads cost at that size
	// (scen_s5insp.go).
	Inspector []InspectorRow `json:"inspector,omitempty"`
}

// MemoryRow is one measurement.
type MemoryRow struct {
	Store   string `json:"store"`
	Payload int    `json:"payload_bytes"`
	// PerExec is the bytes one queued execution adds, less its payload
	// (memstoreBytes and serverBytes say how each is measured).
	PerExec float64 `json:"bytes_per_execution"`
	Total   int64   `json:"delta_bytes"`
	Error   string  `json:"error,omitempty"`
}

func runS5(ctx context.Context, addrs []string, n int) S5Result {
	res := S5Result{Queued: n}
	for _, p := range []int{0, 4096} {
		res.Rows = append(res.Rows, memstoreBytes(ctx, n, p))
	}
	if addrs != nil {
		for _, p := range []int{0, 4096} {
			res.Rows = append(res.Rows, serverBytes(ctx, addrs, n, p))
		}
	}
	res.Retention = retentionRows(ctx, addrs, n)
	res.Inspector = inspectorRows(ctx, addrs, n)
	return res
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// memstoreBytes queues n executions through the engine (SubmitRaw with a
// fresh payload slice each) and measures the Go heap. The heap is shared
// with the rest of the bench, and memory the earlier scenarios still hold
// (closing clients, winding-down goroutines) can be freed while the queue
// fills, so one before/after difference can even come out negative at a
// small n. The queue is filled in memChunks equal chunks, the heap read
// after each, and PerExec is the median of the per-chunk slopes: a free
// elsewhere moves one chunk, not the median.
func memstoreBytes(ctx context.Context, n, payload int) MemoryRow {
	row := MemoryRow{Store: "memstore (Go heap)", Payload: payload}
	store := memstore.New(nil)
	engine := flowfabric.New(store, nil)
	chunk := max(n/memChunks, 1)
	before := heapAlloc()
	prev := before
	var slopes []float64
	for done := 0; done < n; {
		size := min(chunk, n-done)
		for range size {
			var p []byte
			if payload > 0 {
				p = make([]byte, payload)
			}
			if _, err := engine.SubmitRaw(ctx, "bench", p, nil); err != nil {
				row.Error = err.Error()
				return row
			}
		}
		done += size
		h := heapAlloc()
		slopes = append(slopes, (float64(h)-float64(prev))/float64(size))
		prev = h
	}
	runtime.KeepAlive(engine)
	runtime.KeepAlive(store)
	row.Total = int64(prev) - int64(before)
	sort.Float64s(slopes)
	row.PerExec = slopes[len(slopes)/2] - float64(payload)
	return row
}

// memChunks is how many steps memstoreBytes fills its queue in.
const memChunks = 5

// serverBytes queues n executions on valkeystore standalone and measures
// the server's used_memory.
func serverBytes(ctx context.Context, addrs []string, n, payload int) MemoryRow {
	row := MemoryRow{Store: "valkeystore (server used_memory)", Payload: payload}
	probe := &serverProbe{addrs: addrs}
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
	engine := flowfabric.New(vs, nil)
	// load the script first: the script cache is not per-execution memory
	if _, err := engine.SubmitRaw(ctx, "bench", make([]byte, payload), nil); err != nil {
		row.Error = err.Error()
		return row
	}
	if err := probe.flushAll(); err != nil {
		row.Error = err.Error()
		return row
	}
	before, err := probe.usedMemory()
	if err != nil {
		row.Error = err.Error()
		return row
	}
	p := make([]byte, payload)
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	err = parallelDo(n, 32, func(int) error {
		_, err := engine.SubmitRaw(ctx, "bench", p, nil)
		return err
	})
	if err != nil {
		row.Error = err.Error()
		return row
	}
	after, err := probe.usedMemory()
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Total = after - before
	row.PerExec = float64(row.Total)/float64(n) - float64(payload)
	_ = probe.flushAll()
	return row
}

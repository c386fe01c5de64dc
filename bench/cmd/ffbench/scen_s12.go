package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// S1Result is scenario 1 on one system.
type S1Result struct {
	System   string  `json:"system"`
	Setup    string  `json:"setup"`
	Jobs     int     `json:"jobs"`
	Slots    int     `json:"slots"`
	Payload  int     `json:"payload_bytes"`
	Error    string  `json:"error,omitempty"`
	SeedSecs float64 `json:"seed_seconds"`
	// SubmitRate is the seed rate: jobs/s with 16 concurrent submitters.
	SubmitRate float64 `json:"submit_per_sec"`
	// Throughput is the drain: jobs / (last completion − first handler start).
	DrainSecs  float64 `json:"drain_seconds"`
	Throughput float64 `json:"drain_jobs_per_sec"`
	// Latency is submit → handler start in the paced stream after the drain.
	Latency     Latency `json:"latency"`
	LatencyRate float64 `json:"latency_stream_per_sec"`
	// Server-side counters over the drain, per job.
	ServerCmdsPerJob  float64 `json:"server_cmds_per_job,omitempty"`
	ScriptCallsPerJob float64 `json:"script_calls_per_job,omitempty"`
	// ScriptUsecPerJob is the time inside script calls per job, and
	// InnerUsecPerJob the part of it spent in the commands they ran (for
	// flowfabric every other command is inside a script); the difference is
	// the Lua interpreter's own work.
	ScriptUsecPerJob    float64  `json:"server_script_usec_per_job,omitempty"`
	InnerUsecPerJob     float64  `json:"server_non_script_cmd_usec_per_job,omitempty"`
	ServerCPUUsecPerJob float64  `json:"server_cpu_usec_per_job,omitempty"`
	SeedCmdsPerJob      float64  `json:"seed_server_cmds_per_job,omitempty"`
	TopCommands         []string `json:"top_commands,omitempty"`
	// ClientCPUUsecPerJob is this process's CPU (user+sys) over the drain.
	ClientCPUUsecPerJob float64 `json:"client_cpu_usec_per_job"`
	// StoreCallsPerJob counts flowfabric store calls (one script round
	// trip each on valkeystore) over the drain.
	StoreCallsPerJob      map[string]float64 `json:"store_calls_per_job,omitempty"`
	StoreRoundTripsPerJob float64            `json:"store_round_trips_per_job,omitempty"`
	LatStoreCallsPerJob   map[string]float64 `json:"latency_stream_store_calls_per_job,omitempty"`
	Profile               string             `json:"cpu_profile,omitempty"`
	// OtherCPU is the share of the machine that processes outside the
	// bench used during the drain (contention from a shared host).
	OtherCPU float64 `json:"host_other_cpu_share_during_drain"`
	// Attempts is how many times it was measured (a disturbed measurement
	// is repeated; the least disturbed is reported).
	Attempts int `json:"attempts"`
	// WorkSubscribers counts subscribers of flowfabric's work channel on
	// the servers (PUBSUB NUMSUB on every node) before and after the drain:
	// the idle workers of the latency stream are woken through it.
	WorkSubscribers []int64 `json:"work_channel_subscribers,omitempty"`
	// SubscriberOnSlotNode says, on a cluster, whether the work channel's
	// subscriber is on the node that owns the lane's partition (where the
	// scripts PUBLISH); otherwise every notification crosses the cluster
	// bus.
	SubscriberOnSlotNode *bool `json:"subscriber_on_slot_node,omitempty"`
}

// subscriberOnSlotNode finds the node serving the default lane's
// partition (the one that does not answer MOVED) and whether it holds the
// work channel's subscriber.
func subscriberOnSlotNode(p *serverProbe) *bool {
	if len(p.addrs) < 2 {
		return nil
	}
	key := "ff:idx:" + model.PartitionTag(model.PartitionConfig{}.WithDefaults().SoloPartition(model.DefaultLane)) + ":lanes"
	for _, a := range p.addrs {
		if _, err := redisDo(a, "EXISTS", key); err != nil {
			continue // MOVED: another node owns the slot
		}
		out, err := redisDo(a, "PUBSUB", "NUMSUB", "ff:work:default")
		if err != nil {
			return nil
		}
		on := strings.HasSuffix(out, "\n1") || strings.HasSuffix(out, "\n2")
		return &on
	}
	return nil
}

// workSubscribers sums PUBSUB NUMSUB of the default lane's work channel
// over the nodes.
func workSubscribers(p *serverProbe) int64 {
	var n int64
	for _, a := range p.addrs {
		out, err := redisDo(a, "PUBSUB", "NUMSUB", "ff:work:default")
		if err != nil {
			return -1
		}
		if lines := strings.Split(out, "\n"); len(lines) == 2 {
			v, _ := strconv.ParseInt(lines[1], 10, 64)
			n += v
		}
	}
	return n
}

// s1Config sizes scenario 1.
type s1Config struct {
	Jobs       int
	Slots      int
	Submitters int
	LatJobs    int
	LatRate    float64
	ProfileDir string
}

func runS1(ctx context.Context, sys system, c s1Config) (res S1Result) {
	res = S1Result{System: sys.Name(), Setup: sys.Describe(), Jobs: c.Jobs, Slots: c.Slots, Payload: len(payload4K), LatencyRate: c.LatRate}
	fail := func(err error) S1Result {
		res.Error = err.Error()
		logf("  S1 %s: %v", sys.Name(), err)
		return res
	}
	if ff, ok := sys.(*ffSystem); ok && ff.warmUp {
		w := c
		w.LatJobs, w.ProfileDir = 0, ""
		if r := runS1(ctx, newFF("memstore", nil, ff.shape), w); r.Error != "" {
			return fail(fmt.Errorf("warm-up drain: %s", r.Error))
		}
	}
	if err := sys.open(ctx); err != nil {
		return fail(fmt.Errorf("open: %w", err))
	}
	defer sys.close()
	n := int64(c.Jobs)
	seedSt := newStamps(0, c.Jobs)
	latSt := newStamps(n, c.LatJobs)
	onStart := func(seq int64) {
		t := time.Now()
		seedSt.markStart(seq, t)
		latSt.markStart(seq, t)
	}

	// seed
	w := openWindow(sys.probe())
	if err := submitParallel(ctx, sys, 0, n, c.Submitters, payload4K, nil); err != nil {
		return fail(err)
	}
	sw := w.close()
	res.SeedSecs = sw.Elapsed.Seconds()
	res.SubmitRate = float64(n) / sw.Elapsed.Seconds()
	if sys.probe() != nil {
		res.SeedCmdsPerJob = float64(sw.Cmds.total()) / float64(n)
	}

	// drain
	comp := sys.completions()
	done := comp.expect(n)
	var calls0 map[string]int64
	rt, isRT := sys.(roundTripper)
	if isRT {
		calls0 = rt.storeCalls()
	}
	if c.ProfileDir != "" {
		path := filepath.Join(c.ProfileDir, "s1-"+sys.Name()+".cpu.pprof")
		if f, err := os.Create(path); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				res.Profile = path
				defer func() { _ = f.Close() }()
			} else {
				_ = f.Close()
			}
		}
	}
	dw := openWindow(sys.probe())
	if err := sys.startWorkers(ctx, c.Slots, onStart); err != nil {
		if res.Profile != "" {
			pprof.StopCPUProfile()
		}
		return fail(fmt.Errorf("start workers: %w", err))
	}
	_, isFF := sys.(*ffSystem)
	if isFF && sys.probe() != nil {
		res.WorkSubscribers = append(res.WorkSubscribers, workSubscribers(sys.probe()))
	}
	err := waitFor(ctx, done, drainTimeout(c.Jobs))
	end := comp.reachedAt()
	if st, ok := sys.(settler); ok && err == nil {
		var at time.Time
		at, err = st.settle(ctx)
		if at.After(end) {
			end = at
		}
	}
	dstats := dw.close()
	if res.Profile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return fail(fmt.Errorf("drain: %d of %d completed: %w", comp.load(), n, err))
	}
	first := seedSt.firstStart()
	drain := end.Sub(first)
	res.DrainSecs = drain.Seconds()
	res.Throughput = float64(n) / drain.Seconds()
	res.ClientCPUUsecPerJob = float64(dstats.ClientCPU.Microseconds()) / float64(n)
	res.OtherCPU = dstats.OtherCPU
	if sys.probe() != nil {
		res.ServerCmdsPerJob = float64(dstats.Cmds.total()) / float64(n)
		res.ScriptCallsPerJob = float64(dstats.Cmds.scripts()) / float64(n)
		res.ScriptUsecPerJob = float64(dstats.Cmds.scriptUsec()) / float64(n)
		res.InnerUsecPerJob = float64(dstats.Cmds.nonScriptUsec()) / float64(n)
		res.ServerCPUUsecPerJob = dstats.ServerCPU * 1e6 / float64(n)
		res.TopCommands = dstats.Cmds.top(8, float64(n))
	}
	var calls1 map[string]int64
	if isRT {
		calls1 = rt.storeCalls()
		res.StoreCallsPerJob, res.StoreRoundTripsPerJob = callsDelta(calls0, calls1, float64(n))
	}

	// latency: a paced stream while the workers are otherwise idle
	if isFF && sys.probe() != nil {
		res.WorkSubscribers = append(res.WorkSubscribers, workSubscribers(sys.probe()))
		res.SubscriberOnSlotNode = subscriberOnSlotNode(sys.probe())
	}
	done = comp.expect(n + int64(c.LatJobs))
	if err := pacedSubmit(ctx, sys, n, c.LatJobs, c.LatRate, latSt); err != nil {
		return fail(fmt.Errorf("latency stream: %w", err))
	}
	if err := waitFor(ctx, done, drainTimeout(c.LatJobs)+10*time.Second); err != nil {
		return fail(fmt.Errorf("latency stream: %d of %d completed: %w", comp.load()-n, c.LatJobs, err))
	}
	res.Latency = summarize(latSt.latencies())
	if isRT {
		res.LatStoreCallsPerJob, _ = callsDelta(calls1, rt.storeCalls(), float64(c.LatJobs))
	}
	if err := sys.stopWorkers(ctx); err != nil {
		logf("  S1 %s: stop workers: %v", sys.Name(), err)
	}
	return res
}

// drainTimeout allows at least 50 jobs/s.
func drainTimeout(jobs int) time.Duration {
	return max(60*time.Second, time.Duration(jobs/50)*time.Second)
}

// pacedSubmit submits jobs [from, from+n) open-loop at rate per second:
// job i is submitted at start + i/rate whatever happened to the ones
// before (each submit in its own goroutine), so a slow system builds a
// queue instead of slowing the stream.
func pacedSubmit(ctx context.Context, sys system, from int64, n int, rate float64, st *stamps) error {
	start := time.Now()
	errs := make(chan error, n)
	sem := make(chan struct{}, 256)
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		sem <- struct{}{}
		seq := from + int64(i)
		go func() {
			defer func() { <-sem }()
			st.markSubmit(seq, time.Now())
			if err := sys.submit(ctx, benchArgs{Seq: seq, Data: payload4K}); err != nil {
				errs <- err
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	close(errs)
	return <-errs
}

// S2Result is scenario 2 (backlog burn-down) on one system.
type S2Result struct {
	System       string    `json:"system"`
	Jobs         int       `json:"jobs"`
	Batch        int       `json:"batch"`
	Slots        int       `json:"slots"`
	Error        string    `json:"error,omitempty"`
	InsertSecs   float64   `json:"insert_seconds"`
	InsertRate   float64   `json:"insert_per_sec"`
	DrainSecs    float64   `json:"drain_seconds"`
	Throughput   float64   `json:"drain_jobs_per_sec"`
	Every2s      []float64 `json:"jobs_per_sec_every_2s"`
	BatchInserts string    `json:"batch_insert"`
	OtherCPU     float64   `json:"host_other_cpu_share_during_drain"`
	Attempts     int       `json:"attempts"`
}

type s2Config struct {
	Jobs, Batch, Inserters, Slots int
}

func runS2(ctx context.Context, sys system, c s2Config) (res S2Result) {
	res = S2Result{System: sys.Name(), Jobs: c.Jobs, Batch: c.Batch, Slots: c.Slots, BatchInserts: "native batch"}
	if _, ok := sys.(batchSubmitter); !ok {
		res.BatchInserts = "no batch API: each batch as 16 parallel single submits"
	}
	if ff, ok := sys.(*ffSystem); ok && ff != nil {
		res.BatchInserts = "SubmitMany (one create script per entry)"
	}
	fail := func(err error) S2Result {
		res.Error = err.Error()
		logf("  S2 %s: %v", sys.Name(), err)
		return res
	}
	if err := sys.open(ctx); err != nil {
		return fail(fmt.Errorf("open: %w", err))
	}
	defer sys.close()
	n := int64(c.Jobs)
	t0 := time.Now()
	if err := submitBatches(ctx, sys, c.Jobs, c.Batch, c.Inserters); err != nil {
		return fail(err)
	}
	res.InsertSecs = time.Since(t0).Seconds()
	res.InsertRate = float64(n) / res.InsertSecs
	st := newStamps(0, c.Jobs)
	comp := sys.completions()
	done := comp.expect(n)
	if err := sys.startWorkers(ctx, c.Slots, func(seq int64) { st.markStart(seq, time.Now()) }); err != nil {
		return fail(fmt.Errorf("start workers: %w", err))
	}
	cont := snapContention()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	last := int64(0)
	timeout := time.After(drainTimeout(c.Jobs))
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			cur := comp.load()
			rate := float64(cur-last) / 2
			last = cur
			res.Every2s = append(res.Every2s, rate)
			logf("    %s: jobs worked [%8d], job/sec [%9.1f]", sys.Name(), cur, rate)
		case <-timeout:
			return fail(fmt.Errorf("drain: %d of %d completed: %w", comp.load(), n, errTimeout))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	end := comp.reachedAt()
	if s, ok := sys.(settler); ok {
		if at, err := s.settle(ctx); err == nil && at.After(end) {
			end = at
		}
	}
	res.OtherCPU = cont.otherShare()
	drain := end.Sub(st.firstStart())
	res.DrainSecs = drain.Seconds()
	res.Throughput = float64(n) / drain.Seconds()
	if err := sys.stopWorkers(ctx); err != nil {
		logf("  S2 %s: stop workers: %v", sys.Name(), err)
	}
	return res
}

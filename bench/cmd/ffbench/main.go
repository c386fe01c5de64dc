// Command ffbench measures flowfabric against a raw Redis baseline, Asynq
// and River on this machine, in one process run, and writes report.json
// and report.md.
//
//	cd bench && go run ./cmd/ffbench            # full run (several minutes)
//	cd bench && go run ./cmd/ffbench -quick     # toy sizes, under a minute
//	go run ./cmd/ffbench -only S1,S3 -systems valkey,raw -out /tmp/r
//	go run ./cmd/ffbench -render bench-out/report.json   # rewrite report.md
//
// It starts its own servers on free loopback ports — redis-server
// standalone and a 3-master cluster (persistence off), and a throwaway
// PostgreSQL for River when initdb and postgres are on PATH — and stops
// them at exit, also on Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the parsed command line.
type config struct {
	Quick      bool
	Out        string
	Only       []string
	Systems    []string
	S2Systems  []string
	FFShape    string
	Profile    bool
	PGDurable  bool
	AsynqCheck time.Duration

	S1 s1Config
	S2 s2Config
	S3 s3Config
	S4 s4Config
	S5 int
	S6 s6Config
	S8 s8Config
	S7 int
	S9 s9Config
	// S10 is S1 with a non-limiting budget and quota (S1's sizes); S11 the
	// keyed quota's rate accuracy.
	S11 s11Config
	// S13 is attempt streams: append throughput, tail latency, and S1
	// beside best-effort appenders.
	S13 s13Config

	// QuietBelow and QuietWait gate every measurement: wait until other
	// processes use less than QuietBelow of the machine (up to QuietWait).
	QuietBelow float64
	QuietWait  time.Duration
	// Retries is how many times an S1/S2 measurement that other processes
	// disturbed (beyond QuietBelow) is repeated; the least disturbed is kept.
	Retries int
}

func disturbed(c *config, share float64) bool { return c.QuietBelow > 0 && share >= c.QuietBelow }

var allScenarios = []string{"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11", "S13"}

// knownSystems lists every system name -systems accepts.
var knownSystems = []string{"memstore", "memstore-warm", "valkey", "valkey-cluster", "raw", "asynq", "river", "valkey-1x16", "valkey-16x1", "valkey-spread", "valkey-cluster-spread"}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("ffbench", flag.ContinueOnError)
	c := &config{}
	only := fs.String("only", strings.Join(allScenarios, ","), "scenarios to run (comma-separated)")
	systems := fs.String("systems", "memstore,memstore-warm,valkey,valkey-cluster,raw,asynq,river,valkey-1x16",
		"systems for S1 (comma-separated): "+strings.Join(knownSystems, ", "))
	s2systems := fs.String("s2-systems", "", "systems for S2 (default: -systems without the worker-shape and spread-lane variants and memstore-warm)")
	fs.BoolVar(&c.Quick, "quick", false, "toy sizes: everything in under a minute")
	fs.StringVar(&c.Out, "out", "bench-out", "directory for report.json, report.md and profiles")
	fs.StringVar(&c.FFShape, "ff-shape", "16x1", "flowfabric worker shape for N slots: 16x1 = N Workers × MaxConcurrent 1, 1x16 = 1 Worker × MaxConcurrent N")
	profile := fs.String("profile", "auto", "write S1 CPU profiles to -out (auto: on in full runs)")
	fs.BoolVar(&c.PGDurable, "pg-durable", false, "run PostgreSQL with fsync on (default off, like the Redis servers)")
	fs.DurationVar(&c.AsynqCheck, "asynq-check", 10*time.Millisecond, "Asynq TaskCheckInterval (its default is 1s)")
	jobs := fs.Int("s1-jobs", 0, "S1 jobs (default 10000; quick 500)")
	slots := fs.Int("slots", 16, "handler slots (workers) in S1 and S2")
	latJobs := fs.Int("s1-latency-jobs", 0, "S1 latency-stream jobs (default 2000; quick 100)")
	latRate := fs.Float64("s1-latency-rate", 500, "S1 latency-stream rate, jobs/s (the same for every system)")
	s2jobs := fs.Int("s2-jobs", 0, "S2 jobs (default 100000; quick 2000)")
	s2batch := fs.Int("s2-batch", 1000, "S2 insert batch size")
	idle := fs.Duration("s3-window", 0, "S3 idle window (default 10s; quick 1s)")
	s5 := fs.Int("s5-queued", 0, "S5 queued executions (default 100000; quick 2000)")
	s6 := fs.Int("s6-samples", 0, "S6 cancels per store (default 200; quick 10)")
	s7 := fs.Int("s7-jobs", 0, "S7 delayed jobs and retried jobs, each (default 200; quick 20)")
	s9 := fs.Int("s9-samples", 0, "S9 suspend → signal → resume round trips per store (default 1000; quick 20)")
	s11 := fs.Duration("s11-duration", 0, "S11 keyed-quota run per store (default 30s; quick 4s)")
	s13frames := fs.Int("s13-frames", 0, "S13 frames each of the 16 executions appends per throughput run (default 2000; quick 200)")
	s13rounds := fs.Int("s13-rounds", 0, "S13 throughput rounds per mode, the median reported (default 5; quick 1)")
	s13tail := fs.Int("s13-tail-frames", 0, "S13 timed frames of the tail-latency run (default 1000; quick 50)")
	s13rate := fs.Float64("s13-beside-rate", 50, "S13: best-effort frames/s each of the 16 appenders beside S1 writes")
	s13pairs := fs.Int("s13-pairs", 0, "S13: pairs of plain S1 and S1 beside appends, and of S1 with feeds off and on, per store, back to back, the median ratio reported (default 3; quick 1)")
	s13feed := fs.Int("s13-feed-samples", 0, "S13 timed completions of the completion-feed latency run (default 1000; quick 50)")
	quiet := fs.Float64("quiet", -1, "before each measurement wait until processes outside the bench use less than this share of the machine (0.1 = 10%; default 0.1 in full runs, off in quick runs; 0: off)")
	fs.DurationVar(&c.QuietWait, "quiet-wait", 3*time.Minute, "longest wait for a quiet machine before each measurement")
	fs.StringVar(&serverFlavor, "server", "auto", "server binaries: auto (valkey-server if installed, else redis-server), valkey or redis")
	fs.IntVar(&c.Retries, "retries", 2, "repeat an S1/S2 measurement disturbed by other processes up to this many times (keeping the least disturbed)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	pick := func(v, full, quick int) int {
		if v != 0 {
			return v
		}
		if c.Quick {
			return quick
		}
		return full
	}
	c.S1 = s1Config{Jobs: pick(*jobs, 10_000, 500), Slots: *slots, Submitters: 16,
		LatJobs: pick(*latJobs, 2000, 100), LatRate: *latRate}
	c.S2 = s2Config{Jobs: pick(*s2jobs, 100_000, 2000), Batch: *s2batch, Inserters: 4, Slots: *slots}
	c.S3 = s3Config{Window: 10 * time.Second, Warmup: 2 * time.Second, Wakes: 20}
	c.S4 = s4Config{Blocked: []int{1000, 50_000}, Leases: 10_000}
	c.S5 = pick(*s5, 100_000, 2000)
	c.S6 = s6Config{Samples: pick(*s6, 200, 10)}
	c.S7 = pick(*s7, 200, 20)
	c.S9 = s9Config{Samples: pick(*s9, 1000, 20)}
	c.S11 = s11Config{Duration: 30 * time.Second, Warmup: 2 * time.Second, Keys: 20, Rate: 10, Workers: *slots}
	if c.Quick {
		c.S11.Duration, c.S11.Warmup = 4*time.Second, time.Second
	}
	if *s11 != 0 {
		c.S11.Duration = *s11
		c.S11.Warmup = min(c.S11.Warmup, *s11/4)
	}
	c.S13 = s13Config{Executions: 16, Frames: pick(*s13frames, 2000, 200), Payload: 256, Rounds: pick(*s13rounds, 5, 1),
		TailFrames: pick(*s13tail, 1000, 50), BesideRate: *s13rate, Pairs: pick(*s13pairs, 3, 1), FeedSamples: pick(*s13feed, 1000, 50)}
	if c.S13.BesideRate <= 0 {
		return nil, fmt.Errorf("-s13-beside-rate must be above 0")
	}
	c.S8 = s8Config{Flows: 100, Nodes: 10, Slots: *slots, FanOut: []int{10, 100, 1000}, FanOutRuns: []int{20, 10, 3}}
	if c.Quick {
		c.S8 = s8Config{Flows: 10, Nodes: 5, Slots: *slots, FanOut: []int{10, 100}, FanOutRuns: []int{3, 1}}
	}
	if c.Quick {
		c.S3 = s3Config{Window: time.Second, Warmup: 500 * time.Millisecond, Wakes: 5}
		c.S4 = s4Config{Blocked: []int{100, 2000}, Leases: 500}
		c.S2.Batch = min(c.S2.Batch, 500)
	}
	if *idle != 0 {
		c.S3.Window = *idle
	}
	c.QuietBelow = *quiet
	if c.QuietBelow < 0 {
		c.QuietBelow = 0.10
		if c.Quick {
			c.QuietBelow = 0
		}
	}
	c.Profile = *profile == "on" || *profile == "true" || (*profile == "auto" && !c.Quick)
	for _, s := range splitList(*only) {
		s = strings.ToUpper(s)
		if !slices.Contains(allScenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q (want %s)", s, strings.Join(allScenarios, ","))
		}
		c.Only = append(c.Only, s)
	}
	for _, s := range splitList(*systems) {
		if !slices.Contains(knownSystems, s) {
			return nil, fmt.Errorf("unknown system %q (want %s)", s, strings.Join(knownSystems, ","))
		}
		c.Systems = append(c.Systems, s)
	}
	if *s2systems == "" {
		for _, s := range c.Systems {
			if s != "valkey-1x16" && s != "valkey-16x1" && s != "memstore-warm" && s != "valkey-spread" && s != "valkey-cluster-spread" {
				c.S2Systems = append(c.S2Systems, s)
			}
		}
	} else {
		for _, s := range splitList(*s2systems) {
			if !slices.Contains(knownSystems, s) {
				return nil, fmt.Errorf("unknown system %q", s)
			}
			c.S2Systems = append(c.S2Systems, s)
		}
	}
	if serverFlavor != "auto" && serverFlavor != "valkey" && serverFlavor != "redis" {
		return nil, fmt.Errorf("-server must be auto, valkey or redis")
	}
	if c.FFShape != "16x1" && c.FFShape != "1x16" {
		return nil, fmt.Errorf("-ff-shape must be 16x1 or 1x16")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var startTime = time.Now()

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(startTime).Seconds(), fmt.Sprintf(format, a...))
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-render" {
		// re-render report.md from a saved report.json, measuring nothing
		if err := render(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "ffbench:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "ffbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl := &cleanups{}
	// a second Ctrl-C: stop the servers now and leave
	go func() {
		<-ctx.Done()
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		<-ch
		fmt.Fprintln(os.Stderr, "ffbench: second signal, stopping servers")
		cl.run()
		os.Exit(130)
	}()
	rep, err := run(ctx, cfg, cl, "go run ./cmd/ffbench "+strings.Join(os.Args[1:], " "))
	cl.run()
	if rep != nil {
		fmt.Println()
		fmt.Print(rep.markdown())
		fmt.Printf("\nwrote %s and %s\n", filepath.Join(cfg.Out, "report.json"), filepath.Join(cfg.Out, "report.md"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ffbench:", err)
		os.Exit(1)
	}
}

// render rewrites report.md beside a saved report.json.
func render(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(filepath.Join(filepath.Dir(path), "report.md"), []byte(r.markdown()), 0o644)
}

// env holds the servers of one run.
type env struct {
	standalone *redisServer
	cluster    *redisCluster
	pg         *postgres
	river      *riverSystem
}

func (c *config) wants(scenario string) bool { return slices.Contains(c.Only, scenario) }

func (c *config) anySystem(names ...string) bool {
	for _, n := range names {
		if (c.wants("S1") && slices.Contains(c.Systems, n)) || (c.wants("S2") && slices.Contains(c.S2Systems, n)) {
			return true
		}
	}
	return false
}

// run runs the selected scenarios and writes the report; cl collects the
// servers' shutdown.
func run(ctx context.Context, cfg *config, cl *cleanups, command string) (*Report, error) {
	rep := &Report{Command: command, Quick: cfg.Quick, Started: time.Now(), Machine: machineInfo(), Glossary: glossary,
		Config: map[string]any{
			"scenarios": cfg.Only, "systems": cfg.Systems, "s2_systems": cfg.S2Systems, "ff_shape": cfg.FFShape,
			"slots": cfg.S1.Slots, "s1_jobs": cfg.S1.Jobs, "s1_latency_jobs": cfg.S1.LatJobs, "s1_latency_rate": cfg.S1.LatRate,
			"s2_jobs": cfg.S2.Jobs, "s2_batch": cfg.S2.Batch, "s3_window_s": cfg.S3.Window.Seconds(),
			"s4_blocked": cfg.S4.Blocked, "s4_leases": cfg.S4.Leases, "s5_queued": cfg.S5, "s6_samples": cfg.S6.Samples, "s7_jobs": cfg.S7, "s9_samples": cfg.S9.Samples,
			"s11_seconds": cfg.S11.Duration.Seconds(), "s11_keys": cfg.S11.Keys, "s11_rate": cfg.S11.Rate,
			"s13_executions": cfg.S13.Executions, "s13_frames": cfg.S13.Frames, "s13_payload_bytes": cfg.S13.Payload, "s13_rounds": cfg.S13.Rounds,
			"s13_tail_frames": cfg.S13.TailFrames, "s13_beside_rate": cfg.S13.BesideRate, "s13_pairs": cfg.S13.Pairs, "s13_feed_samples": cfg.S13.FeedSamples,
			"asynq_task_check_interval": cfg.AsynqCheck.String(), "pg_durable": cfg.PGDurable,
			"quiet_below": cfg.QuietBelow, "quiet_wait_s": cfg.QuietWait.Seconds(), "retries": cfg.Retries,
		}}
	cont := snapContention()
	m := rep.Machine
	logf("machine: %s, %d cores, %s, %s, %s; %s", m.CPU, m.Cores, m.Go, m.Redis, m.Postgres, m.Memory)
	if cfg.Profile {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "ffbench-")
	if err != nil {
		return nil, err
	}
	cl.add(func() { _ = os.RemoveAll(dir) })
	e := &env{}
	notRun := func(what, why string) {
		rep.NotRun = append(rep.NotRun, NotRun{What: what, Reason: why})
		logf("not run: %s: %s", what, why)
	}

	// servers
	needStandalone := cfg.anySystem("valkey", "raw", "asynq", "valkey-1x16", "valkey-16x1", "valkey-spread") ||
		cfg.wants("S3") || cfg.wants("S4") || cfg.wants("S5") || cfg.wants("S6") || cfg.wants("S7") || cfg.wants("S8") || cfg.wants("S9") ||
		cfg.wants("S10") || cfg.wants("S11") || cfg.wants("S13")
	if needStandalone {
		s, err := startRedis(filepath.Join(dir, "standalone"), false)
		if err != nil {
			notRun("redis standalone (valkey, raw, asynq, S3, S4, S5 server rows)", err.Error())
		} else {
			e.standalone = s
			cl.add(s.Close)
			rep.Servers = append(rep.Servers, "redis standalone "+s.Addr())
			logf("redis standalone on %s", s.Addr())
		}
	}
	if cfg.anySystem("valkey-cluster", "valkey-cluster-spread") {
		c, err := startCluster(filepath.Join(dir, "cluster"), 3)
		if err != nil {
			notRun("redis cluster (valkey-cluster)", err.Error())
		} else {
			e.cluster = c
			cl.add(c.Close)
			rep.Servers = append(rep.Servers, "redis cluster "+strings.Join(c.Addrs(), ","))
			logf("redis cluster on %s", strings.Join(c.Addrs(), ","))
		}
	}
	if cfg.anySystem("river") {
		pg, err := startPostgres(ctx, cfg.PGDurable)
		if err != nil {
			notRun("river", "PostgreSQL: "+err.Error())
		} else {
			e.pg = pg
			cl.add(pg.Close)
			e.river = newRiver(pg.URL, cfg.PGDurable)
			cl.add(e.river.shutdown)
			rep.Servers = append(rep.Servers, fmt.Sprintf("postgres 127.0.0.1:%d", pg.port))
			logf("postgres on 127.0.0.1:%d", pg.port)
		}
	}

	gate := func(what string) {
		if cfg.QuietBelow <= 0 || ctx.Err() != nil {
			return
		}
		share, waited := waitQuiet(ctx, cfg.QuietBelow, cfg.QuietWait)
		rep.QuietWaits = append(rep.QuietWaits, QuietWait{What: what, Waited: waited.Seconds(), OtherCPU: share})
		if share >= cfg.QuietBelow {
			logf("  %s: the machine did not get quiet within %v (other processes at %.0f%%); measuring anyway", what, cfg.QuietWait, 100*share)
		} else if waited > 3*time.Second {
			logf("  %s: waited %.0f s for a quiet machine", what, waited.Seconds())
		}
	}

	makeSystem := func(name string) (system, string) {
		var sa []string
		if e.standalone != nil {
			sa = []string{e.standalone.Addr()}
		}
		switch name {
		case "memstore":
			return newFF("memstore", nil, cfg.FFShape), ""
		case "memstore-warm":
			ff := newFF(name, nil, cfg.FFShape)
			ff.warmUp = true
			return ff, ""
		case "valkey", "valkey-1x16", "valkey-16x1":
			if sa == nil {
				return nil, "no redis server"
			}
			shape := cfg.FFShape
			if name != "valkey" {
				shape = strings.TrimPrefix(name, "valkey-")
			}
			return newFF(name, sa, shape), ""
		case "valkey-spread":
			if sa == nil {
				return nil, "no redis server"
			}
			ff := newFF(name, sa, cfg.FFShape)
			ff.spread = true
			return ff, ""
		case "valkey-cluster", "valkey-cluster-spread":
			if e.cluster == nil {
				return nil, "no redis cluster"
			}
			ff := newFF(name, e.cluster.Addrs(), cfg.FFShape)
			ff.spread = name == "valkey-cluster-spread"
			return ff, ""
		case "raw":
			if sa == nil {
				return nil, "no redis server"
			}
			return newRaw(sa), ""
		case "asynq":
			if sa == nil {
				return nil, "no redis server"
			}
			return newAsynq(sa[0], cfg.AsynqCheck), ""
		case "river":
			if e.river == nil {
				return nil, "no PostgreSQL (initdb/postgres not on PATH or failed to start)"
			}
			return e.river, ""
		}
		return nil, "unknown"
	}

	s1 := cfg.S1
	if cfg.Profile {
		s1.ProfileDir = cfg.Out
	}
	// measureSys runs S1 on the system mk makes, again (on a new one) when
	// other processes disturbed it; the least disturbed is kept, and its
	// Attempts says which of mk's systems measured it.
	measureSys := func(what, name string, mk func() (system, string)) (S1Result, bool) {
		sys, why := mk()
		if sys == nil {
			notRun(what+" "+name, why)
			return S1Result{}, false
		}
		var r S1Result
		for attempt := 1; ; attempt++ {
			gate(what + " " + sys.Name())
			a := runS1(ctx, sys, s1)
			a.Attempts = attempt
			if attempt == 1 || (a.Error == "" && (r.Error != "" || a.OtherCPU < r.OtherCPU)) {
				r = a
			}
			if !disturbed(cfg, a.OtherCPU) || attempt > cfg.Retries || ctx.Err() != nil {
				break
			}
			logf("  %s %s: disturbed (other processes used %.0f%% of the machine); measuring again", what, sys.Name(), 100*a.OtherCPU)
			sys, _ = mk()
		}
		r.Attempts = max(r.Attempts, 1)
		if r.Error == "" {
			logf("  %s %-18s submit %7.0f/s  drain %7.0f jobs/s  latency p50 %.3f p95 %.3f p99 %.3f ms  cmds/job %.2f  scripts/job %.2f  script µs/job %.1f  other load %.0f%%",
				what, r.System, r.SubmitRate, r.Throughput, r.Latency.P50, r.Latency.P95, r.Latency.P99, r.ServerCmdsPerJob, r.ScriptCallsPerJob, r.ScriptUsecPerJob, 100*r.OtherCPU)
		}
		return r, true
	}
	// measureS1 is measureSys on a system of the -systems list; adm
	// attaches a non-limiting budget and quota to every job (S10).
	measureS1 := func(what, name string, adm bool) (S1Result, bool) {
		return measureSys(what, name, func() (system, string) {
			sys, why := makeSystem(name)
			if ff, ok := sys.(*ffSystem); ok && adm {
				ff.adm, ff.name = true, name+"+admission"
			}
			return sys, why
		})
	}
	if cfg.wants("S1") {
		logf("S1: %d jobs, %d slots, 4 KiB payload", cfg.S1.Jobs, cfg.S1.Slots)
		for _, name := range cfg.Systems {
			if ctx.Err() != nil {
				break
			}
			if r, ok := measureS1("S1", name, false); ok {
				rep.S1 = append(rep.S1, r)
			}
		}
	}
	if cfg.wants("S10") && ctx.Err() == nil {
		logf("S10: S1 (%d jobs, %d slots, 4 KiB payload) with a non-limiting budget and quota on every job", cfg.S1.Jobs, cfg.S1.Slots)
		r := S10Result{Note: s10Note}
		for _, name := range []string{"memstore", "valkey"} {
			if ctx.Err() != nil {
				break
			}
			row := S10Row{Store: name}
			if p := findS1(rep, name); p != nil {
				row.Plain, row.PlainFrom = *p, "S1"
			} else {
				p, ok := measureS1("S10 plain", name, false)
				if !ok {
					continue
				}
				row.Plain, row.PlainFrom = p, "S10"
			}
			a, ok := measureS1("S10", name, true)
			if !ok {
				continue
			}
			row.Admission = a
			switch {
			case row.Plain.Error != "":
				row.Error = "plain: " + row.Plain.Error
			case a.Error != "":
				row.Error = a.Error
			case row.Plain.Throughput > 0:
				row.Ratio = a.Throughput / row.Plain.Throughput
				logf("  S10 %s: %.0f vs %.0f jobs/s plain (%.2f ×), script µs/job %.1f vs %.1f", name, a.Throughput, row.Plain.Throughput, row.Ratio, a.ScriptUsecPerJob, row.Plain.ScriptUsecPerJob)
			}
			r.Rows = append(r.Rows, row)
		}
		if e.standalone != nil && ctx.Err() == nil {
			gate("S10 op costs")
			n := 2000
			if cfg.Quick {
				n = 100
			}
			oc, err := admOpCosts(ctx, []string{e.standalone.Addr()}, n)
			if err != nil {
				logf("  S10 op costs: %v", err)
			}
			r.OpCosts = oc
			for _, o := range oc {
				logf("  %-6s %-46s %5.1f cmds/op  script %6.1f µs (commands %5.1f, Lua %5.1f)", o.Path, o.Op, o.CmdsPerOp, o.ScriptUsec, o.InnerUsec, o.LuaUsec)
			}
		}
		rep.S10 = &r
	}
	if cfg.wants("S1") && slices.Contains(cfg.Systems, "valkey") && e.standalone != nil && ctx.Err() == nil {
		gate("S1 op costs")
		n := 5000
		if cfg.Quick {
			n = 300
		}
		oc, err := opCosts(ctx, []string{e.standalone.Addr()}, n)
		if err != nil {
			logf("  S1 op costs: %v", err)
		}
		rep.OpCosts = oc
		for _, o := range oc {
			logf("  %-32s %5.1f cmds/op  script %6.1f µs (commands %5.1f, Lua %5.1f)  server CPU %6.1f µs  client CPU %5.1f µs",
				o.Op, o.CmdsPerOp, o.ScriptUsec, o.InnerUsec, o.LuaUsec, o.ServerCPU, o.ClientCPU)
		}
	}
	if cfg.wants("S2") {
		logf("S2: %d no-op jobs in batches of %d, %d slots", cfg.S2.Jobs, cfg.S2.Batch, cfg.S2.Slots)
		for _, name := range cfg.S2Systems {
			if ctx.Err() != nil {
				break
			}
			sys, why := makeSystem(name)
			if sys == nil {
				notRun("S2 "+name, why)
				continue
			}
			var r S2Result
			for attempt := 1; ; attempt++ {
				gate("S2 " + name)
				a := runS2(ctx, sys, cfg.S2)
				a.Attempts = attempt
				if attempt == 1 || (a.Error == "" && (r.Error != "" || a.OtherCPU < r.OtherCPU)) {
					r = a
				}
				if !disturbed(cfg, a.OtherCPU) || attempt > cfg.Retries || ctx.Err() != nil {
					break
				}
				logf("  S2 %s: disturbed (other processes used %.0f%% of the machine); measuring again", name, 100*a.OtherCPU)
				sys, _ = makeSystem(name)
			}
			if r.Error == "" {
				logf("  S2 %-14s insert %7.0f/s  drain %7.0f jobs/s  other load %.0f%%", name, r.InsertRate, r.Throughput, 100*r.OtherCPU)
			}
			rep.S2 = append(rep.S2, r)
		}
	}
	if cfg.wants("S3") && ctx.Err() == nil {
		if e.standalone == nil {
			notRun("S3", "no redis server")
		} else {
			logf("S3: idle window %v", cfg.S3.Window)
			gate("S3")
			r := runS3(ctx, []string{e.standalone.Addr()}, cfg.S3)
			rep.S3 = &r
			logf("  S3 %.1f cmds/s idle (%.1f amortised with sweeps), wake p50 %.3f ms, PING p50 %.3f ms", r.CmdsPerSec, r.AmortizedPerSec, r.Wake.P50, r.PingRTT.P50)
		}
	}
	if cfg.wants("S4") && ctx.Err() == nil {
		if e.standalone == nil {
			notRun("S4", "no redis server")
		} else {
			gate("S4")
			logf("S4: unblock with %v route-blocked, recovery of %d leases", cfg.S4.Blocked, cfg.S4.Leases)
			r := runS4(ctx, []string{e.standalone.Addr()}, cfg.S4, true)
			rep.S4 = &r
			for _, rc := range r.Recovery {
				logf("  S4 recovery %s: %d passes, %d recovered, %.2f s", rc.Store, rc.Passes, rc.Recovered, rc.Secs)
			}
		}
	}
	if cfg.wants("S6") && ctx.Err() == nil {
		gate("S6")
		logf("S6: cancel latency, %d samples per store", cfg.S6.Samples)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S6 valkey", "no redis server")
		}
		r := runS6(ctx, addrs, cfg.S6)
		rep.S6 = &r
		for _, row := range r.Runs {
			logf("  S6 %s: cancel p50 %.3f ms p99 %.3f ms, idle wake p50 %.3f ms (%.2f ×)", row.Store, row.Cancel.P50, row.Cancel.P99, row.Wake.P50, row.Ratio)
		}
	}
	if cfg.wants("S7") && ctx.Err() == nil {
		gate("S7")
		logf("S7: delay error, %d delayed and %d retried jobs per store", cfg.S7, cfg.S7)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S7 valkey row", "no redis server")
		}
		r := runS7(ctx, addrs, cfg.S7)
		rep.S7 = &r
		for _, row := range r.Rows {
			logf("  S7 %-8s delay error p50 %.2f ms p99 %.2f ms; retry error p50 %.2f ms p99 %.2f ms",
				row.Store, row.Delay.P50, row.Delay.P99, row.Retry.P50, row.Retry.P99)
		}
	}
	if cfg.wants("S8") && ctx.Err() == nil {
		gate("S8")
		logf("S8: flows, %d linear flows × %d nodes; AnyOf fan-outs of %v", cfg.S8.Flows, cfg.S8.Nodes, cfg.S8.FanOut)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S8 valkey", "no redis server")
		}
		s1 := map[string]float64{}
		for _, name := range []string{"memstore", "valkey"} {
			if r := findS1(rep, name); r != nil {
				s1[name] = r.Throughput
			}
		}
		r := runS8(ctx, addrs, cfg.S8, s1)
		rep.S8 = &r
		for _, row := range r.Runs {
			logf("  S8 %s: %.0f nodes/s (%.2f × S1), hop p50 %.3f ms, flow p50 %.1f ms", row.Store, row.NodesPerSec, row.Ratio, row.Hop.P50, row.FlowLatency.P50)
			for _, f := range row.FanOut {
				logf("  S8 %s fan-out %d: cancel p50 %.2f ms p99 %.2f ms", row.Store, f.Siblings, f.Latency.P50, f.Latency.P99)
			}
		}
	}
	if cfg.wants("S9") && ctx.Err() == nil {
		gate("S9")
		logf("S9: suspend → signal → resume, %d round trips per store", cfg.S9.Samples)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S9 valkey", "no redis server")
		}
		r := runS9(ctx, addrs, cfg.S9)
		rep.S9 = &r
		for _, row := range r.Runs {
			logf("  S9 %s: signal → resumed handler p50 %.3f ms p95 %.3f ms p99 %.3f ms, idle wake p50 %.3f ms (%.2f ×)",
				row.Store, row.Resume.P50, row.Resume.P95, row.Resume.P99, row.Wake.P50, row.Ratio)
		}
	}
	if cfg.wants("S11") && ctx.Err() == nil {
		gate("S11")
		logf("S11: keyed quota %d/s × %d keys, %d workers, %v per store", cfg.S11.Rate, cfg.S11.Keys, cfg.S11.Workers, cfg.S11.Duration)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S11 valkey", "no redis server")
		}
		r := runS11(ctx, addrs, cfg.S11)
		rep.S11 = &r
		for _, row := range r.Rows {
			logf("  S11 %s: %d starts, rate per key %.3f–%.3f/s, max deviation %.2f%%", row.Store, row.Started, row.MinRate, row.MaxRate, 100*row.MaxDev)
		}
	}
	if cfg.wants("S13") && ctx.Err() == nil {
		gate("S13")
		c := cfg.S13
		logf("S13: attempt streams, %d executions × %d frames of %d B (%d rounds), tail latency over %d frames; completion-feed latency over %d completions; S1 beside %d best-effort appenders at %.0f frames/s each, and S1 with feeds on and off",
			c.Executions, c.Frames, c.Payload, c.Rounds, c.TailFrames, c.FeedSamples, c.Executions, c.BesideRate)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S13 valkey", "no redis server")
		}
		r := runS13(ctx, addrs, c)
		for i := range r.Rows {
			row := &r.Rows[i]
			if row.Error == "" {
				ping := "PING n/a"
				if row.Tail.PingAfterGap.N > 0 {
					ping = fmt.Sprintf("PING after idle p50 %.3f ms (%.2f ×)", row.Tail.PingAfterGap.P50, row.Tail.Ratio)
				}
				logf("  S13 %s: durable %.0f frames/s, best-effort %.0f frames/s, durable with a tail %.0f frames/s (%.2f ×); append → tail p50 %.3f ms p99 %.3f ms, %s",
					row.Store, row.Durable.FramesPerSec, row.BestEffort.FramesPerSec, row.DurableTailed.FramesPerSec, row.TailedRatio,
					row.Tail.Latency.P50, row.Tail.Latency.P99, ping)
			}
			if fd := row.Feed; fd.Error == "" && fd.Latency.N > 0 {
				ping := "PING n/a"
				if fd.PingAfterGap.N > 0 {
					ping = fmt.Sprintf("PING after idle p50 %.3f ms (%.2f ×)", fd.PingAfterGap.P50, fd.Ratio)
				}
				logf("  S13 %s: handler return → completion event p50 %.3f ms p99 %.3f ms (one-partition reader p50 %.3f ms), %s; per sample the subscriber had %.1f notices and made %.1f FeedRead calls",
					row.Store, fd.Latency.P50, fd.Latency.P99, fd.OnePartition.P50, ping, fd.SubscriberCalls["WatchFeed(notified)"], fd.SubscriberCalls["FeedRead"])
			}
			if ctx.Err() != nil {
				continue
			}
			// plain S1 and S1 beside appends in pairs, back to back
			plain := func() (S1Result, bool) { return measureS1("S13 plain", row.Store, false) }
			beside := func() (S1Result, *framesBeside, bool) {
				var made []*framesBeside
				a, ok := measureSys("S13 beside", row.Store, func() (system, string) {
					sys, why := makeSystem(row.Store)
					ff, isFF := sys.(*ffSystem)
					if !isFF {
						return nil, why
					}
					fb := newFramesBeside(ff, c)
					made = append(made, fb)
					return fb, ""
				})
				if k := a.Attempts - 1; ok && k >= 0 && k < len(made) {
					return a, made[k], true
				}
				return a, nil, ok
			}
			row.Beside = s13Beside(ctx, row.Store, c, plain, beside)
			if b := row.Beside; b.Ratio > 0 {
				logf("  S13 %s: S1 beside appends / plain, median of %d pairs: %.2f ×", row.Store, len(b.Pairs), b.Ratio)
			}
			if ctx.Err() != nil {
				continue
			}
			// S1 on the store with both feeds and without, in pairs
			off := func() (S1Result, bool) { return measureS1("S13 feeds off", row.Store, false) }
			on := func() (S1Result, bool) {
				return measureSys("S13 feeds on", row.Store, func() (system, string) {
					sys, why := makeSystem(row.Store)
					ff, isFF := sys.(*ffSystem)
					if !isFF {
						return nil, why
					}
					return newFeedsSystem(ff), ""
				})
			}
			row.FeedCost = s13FeedCost(ctx, row.Store, c.Pairs, off, on)
			if fc := row.FeedCost; fc.Ratio > 0 {
				logf("  S13 %s: S1 with both feeds / without, median of %d pairs: %.2f ×", row.Store, len(fc.Pairs), fc.Ratio)
			}
		}
		rep.S13 = &r
	}
	if cfg.wants("S5") && ctx.Err() == nil {
		gate("S5")
		logf("S5: %d queued", cfg.S5)
		var addrs []string
		if e.standalone != nil {
			addrs = []string{e.standalone.Addr()}
		} else {
			notRun("S5 server rows", "no redis server")
		}
		r := runS5(ctx, addrs, cfg.S5)
		rep.S5 = &r
		for _, row := range r.Rows {
			logf("  S5 %s payload %d: %.0f B/execution", row.Store, row.Payload, row.PerExec)
		}
	}
	computeTargets(rep)
	rep.OtherCPU = cont.otherShare()
	logf("processes outside the bench used %.0f%% of the machine during the run", 100*rep.OtherCPU)
	rep.Seconds = time.Since(rep.Started).Seconds()
	if err := rep.write(cfg.Out); err != nil {
		return rep, err
	}
	if ctx.Err() != nil {
		return rep, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return rep, nil
}

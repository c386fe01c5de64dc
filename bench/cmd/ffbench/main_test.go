package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuick runs the whole bench at toy size, so it never rots. Systems
// whose servers are not installed are left out, saying why.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the quick bench starts servers and takes ~15 s")
	}
	out := t.TempDir()
	args := []string{"-quick", "-out", out}
	systems := []string{"memstore", "memstore-warm", "valkey", "valkey-cluster", "raw", "asynq", "river", "valkey-1x16"}
	_, haveRedis := redisBinary()
	_, haveCLI := redisCLI()
	_, haveInitdb := lookPath("initdb")
	_, havePostgres := lookPath("postgres")
	drop := func(names ...string) {
		var keep []string
		for _, s := range systems {
			if !strings.Contains(strings.Join(names, ","), s) {
				keep = append(keep, s)
			}
		}
		systems = keep
	}
	switch {
	case !haveRedis:
		t.Log("skipping the server-backed systems and S3/S4: neither valkey-server nor redis-server is on PATH")
		drop("valkey", "valkey-cluster", "raw", "asynq", "valkey-1x16")
		args = append(args, "-only", "S1,S2,S5")
	case !haveCLI:
		t.Log("skipping valkey-cluster: neither valkey-cli nor redis-cli is on PATH")
		drop("valkey-cluster")
	}
	if !haveInitdb || !havePostgres {
		t.Log("skipping river: initdb or postgres is not on PATH")
		drop("river")
	}
	args = append(args, "-systems", strings.Join(systems, ","))
	cfg, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := &cleanups{}
	defer cl.run()
	start := time.Now()
	rep, err := run(ctx, cfg, cl, "go test ./cmd/ffbench")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("quick bench took %v", time.Since(start).Round(time.Millisecond))

	for _, n := range rep.NotRun {
		t.Errorf("not run: %s: %s", n.What, n.Reason)
	}
	if len(rep.S1) != len(systems) {
		t.Errorf("S1 ran %d systems, want %d", len(rep.S1), len(systems))
	}
	for _, r := range rep.S1 {
		if r.Error != "" || r.Throughput <= 0 || r.SubmitRate <= 0 || r.Latency.N != cfg.S1.LatJobs {
			t.Errorf("S1 %s: error %q, throughput %.0f, submit %.0f, latency n %d", r.System, r.Error, r.Throughput, r.SubmitRate, r.Latency.N)
		}
	}
	for _, r := range rep.S2 {
		if r.Error != "" || r.Throughput <= 0 {
			t.Errorf("S2 %s: error %q, throughput %.0f", r.System, r.Error, r.Throughput)
		}
	}
	if haveRedis {
		if rep.S3 == nil || rep.S3.Error != "" || rep.S3.Wake.N != cfg.S3.Wakes || rep.S3.PingRTT.N == 0 {
			t.Errorf("S3: %+v", rep.S3)
		}
		if rep.S4 == nil || rep.S4.Error != "" || len(rep.S4.Unblock) != 2 || len(rep.S4.Recovery) != 2 ||
			len(rep.S4.BudgetUnblock) != 2 || len(rep.S4.QuotaUnblock) != 2 {
			t.Errorf("S4: %+v", rep.S4)
		} else {
			for _, u := range append(rep.S4.BudgetUnblock, rep.S4.QuotaUnblock...) {
				if u.Unblocked == 0 || u.Cmds == 0 {
					t.Errorf("S4 admission unblock with %d blocked: %+v", u.Blocked, u)
				}
			}
			for _, rc := range rep.S4.Recovery {
				if rc.Error != "" || rc.Recovered != rc.Leases {
					t.Errorf("S4 recovery %s: %+v", rc.Store, rc)
				}
			}
		}
	}
	if rep.S9 == nil || len(rep.S9.Runs) == 0 {
		t.Error("S9 missing")
	} else {
		for _, run := range rep.S9.Runs {
			if run.Error != "" || run.Resume.N != cfg.S9.Samples || run.Wake.N != cfg.S9.Samples || run.OtherEffects != 0 {
				t.Errorf("S9 %s: %+v", run.Store, run)
			}
		}
	}
	wantStores := 1
	if haveRedis {
		wantStores = 2
	}
	if rep.S10 == nil || len(rep.S10.Rows) != wantStores {
		t.Errorf("S10: %+v", rep.S10)
	} else {
		for _, row := range rep.S10.Rows {
			a := row.Admission
			// both stores admit inline: the first job takes the grant path
			// (BudgetStatus, QuotaAdmit, ExecutionClaim), the rest are
			// admitted and claimed by their claim-next
			grant := a.StoreCallsPerJob["ExecutionClaim"]
			if row.Error != "" || row.Ratio <= 0 || a.Latency.N != cfg.S1.LatJobs || a.StoreCallsPerJob["QuotaAdmit"] <= 0 ||
				a.StoreCallsPerJob["BudgetStatus"] <= 0 || grant <= 0 || grant > 0.1 {
				t.Errorf("S10 %s: error %q, ratio %.2f, latency n %d, store calls %v", row.Store, row.Error, row.Ratio, a.Latency.N, a.StoreCallsPerJob)
			}
		}
	}
	if rep.S11 == nil || len(rep.S11.Rows) != wantStores {
		t.Errorf("S11: %+v", rep.S11)
	} else {
		for _, row := range rep.S11.Rows {
			if row.Error != "" || len(row.Keys) != cfg.S11.Keys || row.MinRate <= 0 {
				t.Errorf("S11 %s: %+v", row.Store, row)
			}
		}
	}
	if haveRedis {
		if rep.S13 == nil || len(rep.S13.Rows) != 2 {
			t.Errorf("S13: %+v", rep.S13)
		} else {
			for _, row := range rep.S13.Rows {
				want := cfg.S13.Executions * cfg.S13.Frames * cfg.S13.Rounds
				if row.Error != "" || row.TailedRatio <= 0 {
					t.Errorf("S13 %s: error %q, tailed ratio %.2f", row.Store, row.Error, row.TailedRatio)
				}
				for _, a := range []S13Append{row.Durable, row.BestEffort, row.DurableTailed} {
					if a.Frames != want || a.FramesPerSec <= 0 || a.StoreCallsPerFrame["StreamAppend"] != 1 {
						t.Errorf("S13 %s %s (tailed %v): %d frames, want %d; %.0f frames/s; store calls %v", row.Store, a.Mode, a.Tailed, a.Frames, want, a.FramesPerSec, a.StoreCallsPerFrame)
					}
				}
				if a := row.DurableTailed; a.TailFrames != cfg.S13.Frames*cfg.S13.Rounds || a.TailCalls <= 0 || a.TailWatches != cfg.S13.Rounds {
					t.Errorf("S13 %s: the tail read %d frames (want %d) in %d StreamRead calls and %d watches (want one per round)",
						row.Store, a.TailFrames, cfg.S13.Frames*cfg.S13.Rounds, a.TailCalls, a.TailWatches)
				}
				if tl := row.Tail; tl.Error != "" || tl.Latency.N != cfg.S13.TailFrames || (row.Store == "valkey") != (tl.PingAfterGap.N > 0 && tl.Ratio > 0) {
					t.Errorf("S13 %s tail: %+v", row.Store, tl)
				}
				if b := row.Beside; b == nil || b.Error != "" || b.Ratio <= 0 || len(b.Pairs) != cfg.S13.Pairs {
					t.Errorf("S13 %s beside S1: %+v", row.Store, b)
				} else {
					for _, p := range b.Pairs {
						if p.Beside.Latency.N != cfg.S1.LatJobs || p.Plain.Latency.N != cfg.S1.LatJobs || p.FramesPerSec <= 0 {
							t.Errorf("S13 %s beside S1 pair: %+v", row.Store, p)
						}
					}
				}
				fd := row.Feed
				if fd.Error != "" || fd.Latency.N != cfg.S13.FeedSamples || fd.OnePartition.N != cfg.S13.FeedSamples || fd.Latency.P50 <= 0 ||
					fd.SubscriberCalls["WatchFeed(notified)"] < 1 || (row.Store == "valkey") != (fd.PingAfterGap.N == cfg.S13.FeedSamples && fd.Ratio > 0) {
					t.Errorf("S13 %s completion feed: %+v", row.Store, fd)
				}
				n := 0
				for _, q := range fd.ByQuarter {
					n += q.N
				}
				if n != cfg.S13.FeedSamples {
					t.Errorf("S13 %s completion feed: %d samples by partition quarter, want %d", row.Store, n, cfg.S13.FeedSamples)
				}
				if fc := row.FeedCost; fc == nil || fc.Error != "" || fc.Ratio <= 0 || len(fc.Pairs) != cfg.S13.Pairs {
					t.Errorf("S13 %s feeds on / off: %+v", row.Store, fc)
				} else {
					for _, p := range fc.Pairs {
						if p.On.Latency.N != cfg.S1.LatJobs || p.Off.Latency.N != cfg.S1.LatJobs || p.On.System != row.Store+"+feeds" {
							t.Errorf("S13 %s feeds pair: %+v", row.Store, p)
						}
					}
				}
			}
		}
	}
	if rep.S5 == nil {
		t.Error("S5 missing")
	} else {
		for _, row := range rep.S5.Rows {
			if row.Error != "" || row.PerExec <= 0 {
				t.Errorf("S5 %s payload %d: %+v", row.Store, row.Payload, row)
			}
		}
		if len(rep.S5.Retention) == 0 {
			t.Error("S5 has no retention rows")
		}
		for _, row := range rep.S5.Retention {
			if row.Error != "" || row.PerExec <= 0 || row.Full <= row.Before {
				t.Errorf("S5 retention %s: %+v", row.Store, row)
			}
		}
	}
	// every target names a value, measured or not
	if len(rep.Targets) < 8 {
		t.Errorf("%d targets", len(rep.Targets))
	}

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "## S1", "| machine |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-only", "s1,S3", "-systems", "valkey,raw,valkey-1x16,valkey-spread,valkey-cluster-spread"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.wants("S1") || !c.wants("S3") || c.wants("S2") {
		t.Errorf("only = %v", c.Only)
	}
	if strings.Join(c.S2Systems, ",") != "valkey,raw" {
		t.Errorf("s2 systems = %v", c.S2Systems)
	}
	if c.S1.Jobs != 10_000 || c.S2.Jobs != 100_000 || c.S5 != 100_000 || !c.Profile {
		t.Errorf("full sizes: %+v", c)
	}
	if c.S11.Duration != 30*time.Second || c.S11.Keys != 20 || c.S11.Rate != 10 || c.S11.Workers != 16 {
		t.Errorf("S11 full size: %+v", c.S11)
	}
	if c.S13.Executions != 16 || c.S13.Frames != 2000 || c.S13.TailFrames != 1000 || c.S13.Payload != 256 || c.S13.Rounds != 5 || c.S13.Pairs != 3 || c.S13.FeedSamples != 1000 {
		t.Errorf("S13 full size: %+v", c.S13)
	}
	if q, err := parseFlags([]string{"-quick", "-s13-frames", "30"}); err != nil || q.S13.Frames != 30 || q.S13.TailFrames != 50 || q.S13.Rounds != 1 || q.S13.Pairs != 1 || q.S13.FeedSamples != 50 {
		t.Errorf("-quick -s13-frames 30: %+v, %v", q.S13, err)
	}
	if q, err := parseFlags([]string{"-quick", "-s11-duration", "2s"}); err != nil || q.S11.Duration != 2*time.Second || q.S11.Warmup != 500*time.Millisecond {
		t.Errorf("-s11-duration: %+v, %v", q.S11, err)
	}
	if _, err := parseFlags([]string{"-systems", "nope"}); err == nil {
		t.Error("unknown system accepted")
	}
	if _, err := parseFlags([]string{"-only", "S99"}); err == nil {
		t.Error("unknown scenario accepted")
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.N != 100 || l.P50 != 50 || l.P95 != 95 || l.P99 != 99 || l.Max != 100 {
		t.Errorf("%+v", l)
	}
	if (summarize(nil) != Latency{}) {
		t.Error("empty sample")
	}
}

func TestKeyRate(t *testing.T) {
	// a quota of 10 per 1 s window admitting a burst of 10 every 1.01 s
	t0 := time.Unix(1000, 0)
	var ts []time.Time
	for w := range 6 {
		for i := range 10 {
			ts = append(ts, t0.Add(time.Duration(w)*1010*time.Millisecond+time.Duration(i)*time.Millisecond))
		}
	}
	kr := keyRate("k", ts, t0.Add(500*time.Millisecond), 10)
	// from the first burst after the cutoff (index 10) to the last whole
	// window (index 50): 40 starts in 4 × 1.01 s
	if kr.Started != 60 || kr.Measured != 40 || math.Abs(kr.Rate-40/4.04) > 1e-9 || math.Abs(kr.Dev-(40/4.04/10-1)) > 1e-9 {
		t.Errorf("%+v", kr)
	}
	if kr := keyRate("k", ts[:15], t0.Add(500*time.Millisecond), 10); kr.Measured != 0 || kr.Rate != 0 {
		t.Errorf("less than a window after the cutoff: %+v", kr)
	}
}

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=500,usec_per_call=50.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=30,usec=60,usec_per_call=2.00\r\ncmdstat_info:calls=3,usec=9\r\n"
	s := parseCommandStats(info)
	if s.total() != 40 || s.scripts() != 10 || s.scriptUsec() != 500 || s.nonScriptUsec() != 60 {
		t.Errorf("%+v", s)
	}
	d := s.sub(cmdStats{"evalsha": {Calls: 4, Usec: 100}})
	if d["evalsha"].Calls != 6 || d["hset"].Calls != 30 {
		t.Errorf("%+v", d)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is everything one run measured.
type Report struct {
	Command string         `json:"command"`
	Quick   bool           `json:"quick"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Machine Machine        `json:"machine"`
	Servers []string       `json:"servers"`
	Config  map[string]any `json:"config"`
	NotRun  []NotRun       `json:"not_run,omitempty"`
	S1      []S1Result     `json:"s1,omitempty"`
	// OpCosts breaks valkeystore's server cost down by operation.
	OpCosts  []OpCost   `json:"s1_valkeystore_op_costs,omitempty"`
	S2       []S2Result `json:"s2,omitempty"`
	S3       *S3Result  `json:"s3,omitempty"`
	S4       *S4Result  `json:"s4,omitempty"`
	S5       *S5Result  `json:"s5,omitempty"`
	S6       *S6Result  `json:"s6,omitempty"`
	S7       *S7Result  `json:"s7,omitempty"`
	S8       *S8Result  `json:"s8,omitempty"`
	S9       *S9Result  `json:"s9,omitempty"`
	S10      *S10Result `json:"s10,omitempty"`
	S11      *S11Result `json:"s11,omitempty"`
	S13      *S13Result `json:"s13,omitempty"`
	Targets  []Target   `json:"targets"`
	Glossary []string   `json:"definitions"`
	// OtherCPU is the share of the machine used by processes outside the
	// bench over the whole run.
	OtherCPU float64 `json:"host_other_cpu_share"`
	// QuietWaits records the waits for a quiet machine.
	QuietWaits []QuietWait `json:"quiet_waits,omitempty"`
}

// QuietWait is one wait for a quiet machine before a measurement.
type QuietWait struct {
	What     string  `json:"what"`
	Waited   float64 `json:"waited_seconds"`
	OtherCPU float64 `json:"other_cpu_share_at_start"`
}

// NotRun says why a system or scenario did not run.
type NotRun struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// Target is one ratio of the deliverable 3.
type Target struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Op     string  `json:"op"`
	Limit  float64 `json:"limit"`
	Pass   *bool   `json:"pass"` // nil: not measured
	Detail string  `json:"detail"`
}

var glossary = []string{
	"S1 submit rate: jobs/s while seeding the queue with 16 concurrent submitters, one job per call (4 KiB payload: opaque bytes for raw, Asynq and flowfabric with an 8-byte sequence number in front; JSON arguments for River, whose API requires them).",
	"S1 drain throughput: jobs / (last completion recorded − first handler start), after seeding, with N handler slots. A completion is recorded when the system has durably acknowledged it: flowfabric ExecutionComplete returned, raw INCR returned, River EventKindJobCompleted received (after its batch completer wrote it), Asynq handler returned and then the pending and active lists emptied.",
	"S1 latency: submit call start → handler start, per job, in a paced open-loop stream (the same rate for every system) submitted after the drain while the workers are otherwise idle. It measures the notify/poll/claim path; p50/p95/p99 by nearest rank.",
	"Server cmds/job: INFO commandstats calls over the drain / jobs, including commands run inside scripts (Redis 7 and Valkey count them); scripts/job counts script calls (FCALL, EVALSHA, EVAL and their _RO forms), i.e. script round trips. Store calls/job counts flowfabric model.Store calls (each one script on valkeystore).",
	"CPU µs/job: the bench process's user+sys CPU (client: engine, workers, valkey-go) and the servers' used_cpu_user+sys over the drain, per job.",
	"S2: N no-op jobs inserted in batches, then drained; jobs/s every 2 s and overall (first handler start → last completion).",
	"S3: commands/s over an idle window after a warm-up (engine scanners at default intervals, 4 idle Workers, 256 partitions); the full sweep every partition gets every 60 s (scan.DefaultSweepInterval) is measured separately and amortised. Idle wake: submit → handler start of a job submitted while the workers idle.",
	"S4: one unblock pass over every partition with route-blocked executions that no live worker can serve, and (scan.Unblock with SetAdmission, as flowfabric.New wires it) over executions blocked on a budget that was then reset and on a quota bucket whose one slot was then released; lease recovery: the lease-expiry scanner (default batch) run pass after pass until no due work remains.",
	"Other load: CPU used on the host by processes outside the bench's process tree (the bench and the servers it started) during the phase, as a share of all cores; from /proc. Anything above a few percent means the numbers were disturbed.",
	"S7: delay error = handler start − due time, one job at a time on an otherwise idle engine with default scanner intervals: a Submit with RunAt (due = RunAt) and a retry after a failed first attempt (due = the handler's failing return + the fixed retry delay); delays uniform in 20–100 ms; target p99 ≤ 10 ms.",
	"S6: cancel latency: start of an operator's Engine.Cancel of a running execution → its handler's context done (4 Workers, default 30 s lease, so a renewal would take 20 s), beside the idle wake (submit → handler start) of the same jobs in the same run; 20–60 ms pauses between steps.",
	"S8: flows on a spread lane: linear flows (every node a no-op) all submitted first, then drained by the S1 slot count: node throughput (nodes / first handler start → last handler return) beside the same store's S1 drain, per-hop latency (an upstream handler's return → its downstream's handler start) and flow latency (drain start → the flow's last handler return); AnyOf CancelRemaining fan-outs: a winner returns once all n siblings run, and the time until every sibling's handler saw its context end (ErrExecutionCancelled).",
	"S9: suspend → signal → resume (the issue's S7, renamed: S7 and S8 already exist here): start of Engine.DeliverSignal with the token of the pending waitpoint the handler created and suspended on (condition SignalFor(\"go\")) → the resumed handler's start (TaskInfo.Resumed), once the execution is suspended and the 4 Workers idle; beside the idle wake (submit → handler start) of the same jobs, measured as in S6; target p50 ≤ 3 × the idle-wake p50.",
	"S10: S1's workload with a budget (hard limit never reached) and a quota (100,000/s, 10,000 running per key) attached to every job, beside plain S1 on the same store in the same run; target drain ≥ 0.7 × plain.",
	"S11: a quota of 10 starts/s per key over 20 keys, 16 Workers, every key always with jobs waiting; per key the admitted rate over whole windows after a warm-up (handler starts) and its deviation from 10/s; target within 2 %.",
	"S13: attempt output streams (the streams-and-feeds issue's S8, renamed: S8 exists). Append throughput: 16 executions, each handler appending its frames (256 B) with TaskInfo.AppendFrame one call after the other, released together; frames/s = all frames / (last append's return − release), the median of the rounds; durable and best-effort frames in separate runs on a fresh store; the durable run again while a reader follows one of the 16 streams with one Engine.Frames iteration (target ≥ 0.95 × without: the bench's reading of \"writers are not slowed\"). Tail latency: one handler appends a durable frame after each 10–40 ms idle gap; the time just before AppendFrame → Engine.TailStream returning that frame to a reader waiting from its cursor; against PING on the store's client after the same idle gap, one before each frame (valkeystore; target p50 ≤ 2 × PING p50). S1 beside appends: S1 on the same store and engine while 16 executions on another lane append best-effort frames at a steady pace the whole run, against a plain S1 measured right before or after it (pairs, order alternating; target: the median pair ratio ≥ 0.95). Completion-feed latency: on a store built with the completions feed, a no-op job after each 10–40 ms idle gap; the handler's last step takes the time → a subscriber looping Engine.Subscribe (from Engine.FeedHead, on a second engine: on valkeystore its own store and client) has the execution's completion event; against PING on the subscriber's client after the same idle gap, one before each job (valkeystore; target p50 ≤ 2 × PING p50); beside it a diagnostic reader that reads only the partition each feed notice names. Cost of feeds: S1 on the store built with both feeds (nobody subscribed) against S1 without, in pairs like S1 beside appends (no target). JSON: s13.rows[].append_durable / append_best_effort / append_durable_tailed (frames_per_sec, frames_per_sec_by_round, append_call, store_calls_per_frame, server_cmds_per_frame, server_script_usec_per_frame, tail_reader, tail_stream_reads, tail_watches, tail_frames_read), tailed_over_plain_frames_per_sec, tail_latency (append_to_tail, append_call, ping_rtt, ping_rtt_after_idle, tail_p50_over_ping_after_idle_p50, tail_calls, store_calls_per_frame), s1_beside_appends (throughput_ratio: the median pair's; pairs[]: first, plain and with_appends as S1 rows, throughput_ratio, frames_per_sec, frames_per_drained_job), completion_feed (handler_return_to_event, handler_return_to_event_by_partition_quarter, submit_to_event, handler_return_to_event_one_partition_reader, ping_rtt, ping_rtt_after_idle, event_p50_over_ping_after_idle_p50, subscriber_store_calls_per_sample, driver_store_calls_per_sample, server_cmds_per_sample), s1_feeds_on (throughput_ratio: the median pair's; pairs[]: first, feeds_off and feeds_on as S1 rows, throughput_ratio).",
	"S5: bytes per queued execution − payload: for memstore the median of the Go heap (after GC) growth per execution over 5 equal fill steps, for the server (after − before)/queued of used_memory; measured with an empty payload (the payload excluded) and with 4 KiB (minus 4096: what the payload costs beyond its bytes).",
}

func boolp(b bool) *bool { return &b }

func findS1(r *Report, name string) *S1Result {
	for i := range r.S1 {
		if r.S1[i].System == name && r.S1[i].Error == "" && r.S1[i].Throughput > 0 {
			return &r.S1[i]
		}
	}
	return nil
}

func ratioTarget(name string, a, b *S1Result, limit float64, what string) Target {
	t := Target{Name: name, Op: "≥", Limit: limit}
	if a == nil || b == nil {
		t.Detail = "not measured: " + what
		return t
	}
	t.Value = a.Throughput / b.Throughput
	t.Pass = boolp(t.Value >= limit)
	t.Detail = fmt.Sprintf("%.0f / %.0f jobs/s", a.Throughput, b.Throughput)
	return t
}

// computeTargets fills r.Targets.
func computeTargets(r *Report) {
	vs := findS1(r, "valkey")
	r.Targets = append(r.Targets,
		ratioTarget("S1 valkeystore standalone / raw baseline", vs, findS1(r, "raw"), 0.60, "valkey or raw missing"),
		ratioTarget("S1 valkeystore standalone / Asynq", vs, findS1(r, "asynq"), 1.5, "valkey or asynq missing"),
		ratioTarget("S1 valkeystore standalone / River", vs, findS1(r, "river"), 1.0, "valkey or river missing"),
		ratioTarget("S1 memstore / valkeystore standalone", findS1(r, "memstore"), vs, 10, "memstore or valkey missing"),
		ratioTarget("S1 memstore-warm (after one untimed drain) / valkeystore standalone", findS1(r, "memstore-warm"), vs, 10, "memstore-warm or valkey missing"),
	)
	if s := r.S3; s != nil && s.Error == "" {
		r.Targets = append(r.Targets,
			Target{Name: "S3 idle server commands/s (sweeps amortised)", Value: s.AmortizedPerSec, Op: "≤", Limit: 50, Pass: boolp(s.AmortizedPerSec <= 50),
				Detail: fmt.Sprintf("%.1f cmds/s in a %.0f s window between sweeps (%.1f scripts/s) + one full sweep of %d cmds every %.0f s", s.CmdsPerSec, s.WindowSecs, s.ScriptsPerSec, s.SweepCmds, s.SweepEverySecs)},
			Target{Name: "S3 idle-wake p50 / PING p50", Value: s.WakeOverPingRatio, Op: "≤", Limit: 5, Pass: boolp(s.WakeOverPingRatio <= 5),
				Detail: fmt.Sprintf("wake p50 %.3f ms, PING p50 %.3f ms (back-to-back); against a PING after the same idle gap (p50 %.3f ms): %.1f ×", s.Wake.P50, s.PingRTT.P50, s.ColdPing.P50, s.Wake.P50/s.ColdPing.P50)})
	} else {
		r.Targets = append(r.Targets, Target{Name: "S3 idle server commands/s", Op: "≤", Limit: 50, Detail: "not measured"},
			Target{Name: "S3 idle-wake p50 / PING p50", Op: "≤", Limit: 5, Detail: "not measured"})
	}
	if s := r.S4; s != nil && len(s.Unblock) >= 2 {
		a, b := s.Unblock[0], s.Unblock[len(s.Unblock)-1]
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("S4 unblock cmds/pass at %d / at %d blocked", b.Blocked, a.Blocked),
			Value: s.CmdsRatio, Op: "≤", Limit: 1.2, Pass: boolp(s.CmdsRatio <= 1.2),
			Detail: fmt.Sprintf("%d vs %d cmds per pass (%d vs %d scripts)", b.Cmds, a.Cmds, b.Scripts, a.Scripts)})
	} else {
		r.Targets = append(r.Targets, Target{Name: "S4 unblock cmds/pass ratio", Op: "≤", Limit: 1.2, Detail: "not measured"})
	}
	if s := r.S4; s != nil {
		for _, k := range []struct {
			what  string
			rows  []UnblockResult
			ratio float64
		}{{"budget", s.BudgetUnblock, s.BudgetCmdsRatio}, {"quota", s.QuotaUnblock, s.QuotaCmdsRatio}} {
			if len(k.rows) < 2 {
				r.Targets = append(r.Targets, Target{Name: "S4 unblock cmds/pass ratio, " + k.what + "-blocked", Op: "≤", Limit: 1.2, Detail: "not measured"})
				continue
			}
			a, b := k.rows[0], k.rows[len(k.rows)-1]
			r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("S4 unblock cmds/pass at %d / at %d %s-blocked", b.Blocked, a.Blocked, k.what),
				Value: k.ratio, Op: "≤", Limit: 1.2, Pass: boolp(k.ratio <= 1.2),
				Detail: fmt.Sprintf("%d vs %d cmds per pass (%d vs %d scripts; %d vs %d unblocked)", b.Cmds, a.Cmds, b.Scripts, a.Scripts, b.Unblocked, a.Unblocked)})
		}
		for _, rec := range s.Recovery {
			t := Target{Name: fmt.Sprintf("S4 passes to recover %d expired leases (%s)", rec.Leases, rec.Store),
				Value: float64(rec.Passes), Op: "≤", Limit: float64(rec.MaxPasses)}
			if rec.Error == "" {
				t.Pass = boolp(rec.Passes <= rec.MaxPasses && rec.Recovered == rec.Leases)
				t.Detail = fmt.Sprintf("%d recovered in %.2f s (batch %d)", rec.Recovered, rec.Secs, rec.Batch)
			} else {
				t.Detail = rec.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
	if s := r.S7; s != nil {
		for _, row := range s.Rows {
			for _, k := range []struct {
				what string
				l    Latency
			}{{"delay", row.Delay}, {"retry", row.Retry}} {
				t := Target{Name: fmt.Sprintf("S7 %s error p99, %s (idle engine)", k.what, row.Store), Value: k.l.P99, Op: "≤", Limit: 10}
				if row.Error == "" {
					t.Pass = boolp(k.l.P99 <= 10)
					t.Detail = fmt.Sprintf("p50 %.2f ms over %d jobs", k.l.P50, k.l.N)
				} else {
					t.Detail = row.Error
				}
				r.Targets = append(r.Targets, t)
			}
		}
	}
	if s := r.S6; s != nil {
		for _, run := range s.Runs {
			t := Target{Name: fmt.Sprintf("S6 cancel → handler p50 / idle-wake p50 (%s)", run.Store), Value: run.Ratio, Op: "≤", Limit: 2}
			if run.Error == "" {
				t.Pass = boolp(run.Ratio <= 2 && run.OtherCauses == 0)
				t.Detail = fmt.Sprintf("cancel p50 %.3f ms, p99 %.3f ms; idle wake p50 %.3f ms (n=%d)", run.Cancel.P50, run.Cancel.P99, run.Wake.P50, run.Cancel.N)
			} else {
				t.Detail = run.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
	if s := r.S9; s != nil {
		for _, run := range s.Runs {
			t := Target{Name: fmt.Sprintf("S9 suspend→signal→resume p50 / idle-wake p50 (%s)", run.Store), Value: run.Ratio, Op: "≤", Limit: 3}
			if run.Error == "" {
				t.Pass = boolp(run.Ratio <= 3 && run.OtherEffects == 0)
				t.Detail = fmt.Sprintf("signal → resumed handler p50 %.3f ms, p95 %.3f ms, p99 %.3f ms; idle wake p50 %.3f ms (n=%d; other load %.0f%%)",
					run.Resume.P50, run.Resume.P95, run.Resume.P99, run.Wake.P50, run.Resume.N, 100*run.OtherCPU)
			} else {
				t.Detail = run.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
	if s := r.S8; s != nil {
		for _, run := range s.Runs {
			if run.Error != "" {
				r.Targets = append(r.Targets, Target{Name: "S8 flows (" + run.Store + ")", Detail: run.Error})
				continue
			}
			if run.Ratio > 0 {
				r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("S8 flow node throughput / S1 drain (%s)", run.Store),
					Value: run.Ratio, Op: "≥", Limit: 0.5, Pass: boolp(run.Ratio >= 0.5),
					Detail: fmt.Sprintf("%.0f nodes/s vs %.0f jobs/s", run.NodesPerSec, run.S1JobsPerSec)})
			}
			for _, f := range run.FanOut {
				limit := map[int]float64{100: 50, 1000: 500}[f.Siblings]
				if limit == 0 || run.Store != "valkey" {
					continue
				}
				r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("S8 AnyOf cancel of %d siblings p99, ms (%s)", f.Siblings, run.Store),
					Value: f.Latency.P99, Op: "≤", Limit: limit, Pass: boolp(f.Latency.P99 <= limit && f.OtherCauses == 0),
					Detail: fmt.Sprintf("p50 %.2f ms over %d runs", f.Latency.P50, f.Latency.N)})
			}
		}
	}
	if s := r.S10; s != nil {
		for _, row := range s.Rows {
			t := Target{Name: fmt.Sprintf("S10 S1 with budget + quota / plain S1 (%s)", row.Store), Value: row.Ratio, Op: "≥", Limit: 0.7}
			if row.Error == "" && row.Ratio > 0 {
				t.Pass = boolp(row.Ratio >= 0.7)
				t.Detail = fmt.Sprintf("%.0f / %.0f jobs/s", row.Admission.Throughput, row.Plain.Throughput)
				if row.Admission.ScriptUsecPerJob > 0 {
					t.Detail += fmt.Sprintf("; server script time %.0f vs %.0f µs/job", row.Admission.ScriptUsecPerJob, row.Plain.ScriptUsecPerJob)
				}
			} else {
				t.Detail = row.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
	if s := r.S11; s != nil {
		for _, row := range s.Rows {
			t := Target{Name: fmt.Sprintf("S11 keyed quota: largest per-key |rate − %d/s| / %d/s, %% (%s)", s.Rate, s.Rate, row.Store),
				Value: 100 * row.MaxDev, Op: "≤", Limit: 2}
			if row.Error == "" {
				t.Pass = boolp(row.MaxDev <= 0.02)
				t.Detail = fmt.Sprintf("%d keys, rates %.3f–%.3f/s over %.0f s (%.0f s warm-up)", len(row.Keys), row.MinRate, row.MaxRate, s.Secs, s.Warmup)
			} else {
				t.Detail = row.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
	if s := r.S13; s != nil {
		r.Targets = append(r.Targets, s13Targets(s)...)
	}
	if s := r.S5; s != nil {
		for _, row := range s.Retention {
			t := Target{Name: fmt.Sprintf("S5 memory after retention, %s", row.Store), Op: "≤", Limit: 5}
			if row.Error == "" {
				t.Value = 100 * float64(row.After-row.Before) / float64(row.Before)
				t.Pass = boolp(row.returned())
				t.Detail = fmt.Sprintf("%% above the memory before %d completed executions (%.0f B each) were filled and trimmed", row.Completed, row.PerExec)
			} else {
				t.Detail = row.Error
			}
			r.Targets = append(r.Targets, t)
		}
		for _, row := range s.Rows {
			if row.Payload != 0 {
				continue
			}
			limit := 1024.0
			if strings.HasPrefix(row.Store, "valkey") {
				limit = 2048
			}
			t := Target{Name: fmt.Sprintf("S5 bytes per queued execution, %s", row.Store), Value: row.PerExec, Op: "≤", Limit: limit}
			if row.Error == "" {
				t.Pass = boolp(row.PerExec <= limit)
				t.Detail = fmt.Sprintf("at %d queued, payload excluded", s.Queued)
				for _, r2 := range s.Rows {
					if r2.Store == row.Store && r2.Payload == 4096 && r2.Error == "" {
						t.Detail += fmt.Sprintf("; with 4 KiB payloads %.0f B beyond the payload", r2.PerExec)
					}
				}
			} else {
				t.Detail = row.Error
			}
			r.Targets = append(r.Targets, t)
		}
	}
}

func (r *Report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.markdown()), 0o644)
}

func f0(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

func f2(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func f3(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

func attempts(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (best of %d)", n)
	}
	return ""
}

func mark(p *bool) string {
	switch {
	case p == nil:
		return "–"
	case *p:
		return "✅"
	default:
		return "❌"
	}
}

func (r *Report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	mode := "full"
	if r.Quick {
		mode = "quick (toy sizes: the numbers only show the bench works)"
	}
	w("# flowfabric bench — %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	w("Command: `%s` (%s run, %.0f s)\n\n", r.Command, mode, r.Seconds)
	m := r.Machine
	w("| machine | |\n|---|---|\n")
	w("| CPU | %s, %d cores (GOMAXPROCS %d) |\n| memory | %s |\n| OS | %s, kernel %s |\n| Go | %s |\n| server | %s |\n| PostgreSQL | %s |\n| load at start | %s |\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.Memory, m.OS, m.Kernel, m.Go, m.Redis, m.Postgres, m.LoadAvg)
	var mods []string
	for _, k := range sortedKeys(m.Modules) {
		mods = append(mods, k+" "+m.Modules[k])
	}
	w("| modules | %s |\n| note | %s |\n", strings.Join(mods, ", "), m.Note)
	w("| other load | processes outside the bench used %.0f%% of the machine during the run |\n\n", 100*r.OtherCPU)

	w("## Targets (ratios from this run)\n\n| target | value | limit | | detail |\n|---|---:|---:|:-:|---|\n")
	for _, t := range r.Targets {
		val := "–"
		if t.Pass != nil || t.Op == "" && t.Value != 0 { // a value without a target is shown too
			val = fmt.Sprintf("%.2f", t.Value)
		}
		limit := fmt.Sprintf("%s %g", t.Op, t.Limit)
		if t.Op == "" {
			limit = "–"
		}
		w("| %s | %s | %s | %s | %s |\n", t.Name, val, limit, mark(t.Pass), t.Detail)
	}
	w("\n")

	if len(r.S1) > 0 {
		w("## S1 submit → claim → complete\n\n")
		if len(r.S1) > 0 {
			w("%d jobs, %d handler slots, 4 KiB payload; latency stream %d jobs at %.0f/s.\n\n", r.S1[0].Jobs, r.S1[0].Slots, r.Config["s1_latency_jobs"], r.S1[0].LatencyRate)
		}
		w("| system | submit/s | drain jobs/s | p50 ms | p95 ms | p99 ms | server cmds/job | scripts/job | store calls/job | client CPU µs/job | server CPU µs/job | other load |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.S1 {
			if s.Error != "" {
				w("| %s | error: %s ||||||||||\n", s.System, s.Error)
				continue
			}
			w("| %s | %s | **%s** | %s | %s | %s | %s | %s | %s | %s | %s | %.0f%%%s |\n", s.System, f0(s.SubmitRate), f0(s.Throughput),
				f3(s.Latency.P50), f3(s.Latency.P95), f3(s.Latency.P99), f2(s.ServerCmdsPerJob), f2(s.ScriptCallsPerJob),
				f2(s.StoreRoundTripsPerJob), f0(s.ClientCPUUsecPerJob), f0(s.ServerCPUUsecPerJob), 100*s.OtherCPU, attempts(s.Attempts))
		}
		w("\nSetups:\n\n")
		for _, s := range r.S1 {
			w("- **%s**: %s\n", s.System, s.Setup)
		}
		w("\nWhere the commands go (drain, per job):\n\n")
		for _, s := range r.S1 {
			if len(s.TopCommands) == 0 && len(s.StoreCallsPerJob) == 0 {
				continue
			}
			var segs []string
			if len(s.StoreCallsPerJob) > 0 {
				var parts []string
				for _, k := range sortedKeys(s.StoreCallsPerJob) {
					parts = append(parts, fmt.Sprintf("%s %.2f", k, s.StoreCallsPerJob[k]))
				}
				segs = append(segs, "store calls: "+strings.Join(parts, ", "))
			}
			if s.ScriptUsecPerJob > 0 {
				segs = append(segs, fmt.Sprintf("server time in scripts %.0f µs/job, of which %.0f µs in the commands they ran (the rest is Lua)", s.ScriptUsecPerJob, s.InnerUsecPerJob))
			}
			if len(s.TopCommands) > 0 {
				segs = append(segs, "server commands: "+strings.Join(s.TopCommands, ", "))
			}
			if len(s.LatStoreCallsPerJob) > 0 {
				var parts []string
				for _, k := range sortedKeys(s.LatStoreCallsPerJob) {
					parts = append(parts, fmt.Sprintf("%s %.2f", k, s.LatStoreCallsPerJob[k]))
				}
				segs = append(segs, "in the latency stream, store calls per job: "+strings.Join(parts, ", "))
			}
			if s.SubscriberOnSlotNode != nil {
				if *s.SubscriberOnSlotNode {
					segs = append(segs, "the work-channel subscriber was on the node that publishes (the lane's slot owner)")
				} else {
					segs = append(segs, "the work-channel subscriber was on another node than the one that publishes: notifications crossed the cluster bus")
				}
			}
			w("- **%s**: %s\n", s.System, strings.Join(segs, "; "))
		}
		w("\n")
	}

	if len(r.OpCosts) > 0 {
		w("Server cost per valkeystore operation, each measured alone (%d ops from 16 goroutines, standalone server):\n\n", r.OpCosts[0].N)
		w("| operation | server cmds/op | script µs/op | in its commands | in Lua itself | server CPU µs/op | client CPU µs/op | busiest commands |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, o := range r.OpCosts {
			w("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n", o.Op, o.CmdsPerOp, o.ScriptUsec, o.InnerUsec, o.LuaUsec, o.ServerCPU, o.ClientCPU, strings.Join(o.Top, ", "))
		}
		w("\n")
	}

	if len(r.S2) > 0 {
		w("## S2 backlog burn-down\n\n| system | jobs | insert/s | drain jobs/s | jobs/s every 2 s | batch insert | other load |\n|---|---:|---:|---:|---|---|---:|\n")
		for _, s := range r.S2 {
			if s.Error != "" {
				w("| %s | %d | error: %s ||||\n", s.System, s.Jobs, s.Error)
				continue
			}
			var e []string
			for _, v := range s.Every2s {
				e = append(e, fmt.Sprintf("%.0f", v))
			}
			w("| %s | %d | %s | **%s** | %s | %s | %.0f%%%s |\n", s.System, s.Jobs, f0(s.InsertRate), f0(s.Throughput), strings.Join(e, " "), s.BatchInserts, 100*s.OtherCPU, attempts(s.Attempts))
		}
		w("\n")
	}

	if s := r.S3; s != nil {
		w("## S3 idle cost (valkeystore standalone)\n\n")
		if s.Error != "" {
			w("error: %s\n\n", s.Error)
		} else {
			w("| measure | value |\n|---|---|\n")
			w("| server commands/s (idle, %.0f s window) | **%.1f** (%.1f script calls/s) |\n", s.WindowSecs, s.CmdsPerSec, s.ScriptsPerSec)
			var parts []string
			for _, k := range sortedKeys(s.StoreCallsPerSec) {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, s.StoreCallsPerSec[k]))
			}
			w("| store calls/s | %s |\n", strings.Join(parts, ", "))
			w("| busiest commands in the window | %s |\n", strings.Join(s.TopCommands, ", "))
			w("| startup (engine + %d workers, first %.1f s) | %d commands |\n", s.Workers, s.StartupSecs, s.StartupCmds)
			w("| one full sweep (all %d partitions, every %.0f s) | %d commands → %.1f cmds/s amortised, %.1f cmds/s in total |\n", s.Partitions, s.SweepEverySecs, s.SweepCmds, float64(s.SweepCmds)/s.SweepEverySecs, s.AmortizedPerSec)
			w("| PING round trip p50 / p99 (back-to-back) | %.3f / %.3f ms |\n", s.PingRTT.P50, s.PingRTT.P99)
			w("| PING round trip p50 / p99 after an idle gap | %.3f / %.3f ms |\n", s.ColdPing.P50, s.ColdPing.P99)
			w("| idle wake (submit → handler start) p50 / p95 / p99, n=%d | **%.3f** / %.3f / %.3f ms (%.1f × PING) |\n", s.Wake.N, s.Wake.P50, s.Wake.P95, s.Wake.P99, s.WakeOverPingRatio)
			w("| of which the Submit call (create script round trip) p50 | %.3f ms |\n", s.SubmitCall.P50)
			parts = nil
			for _, k := range sortedKeys(s.CallsPerWake) {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, s.CallsPerWake[k]))
			}
			w("| store calls per woken job | %s |\n\n", strings.Join(parts, ", "))
		}
	}

	if s := r.S4; s != nil {
		w("## S4 scan cost\n\n")
		if s.Error != "" {
			w("error: %s\n\n", s.Error)
		}
		if len(s.Unblock) > 0 {
			w("| route-blocked | partitions visited | server cmds/pass | scripts/pass | server script µs/pass | pass ms | unblocked | next pass cmds |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, u := range s.Unblock {
				w("| %d | %d | %d | %d | %d | %.2f | %d | %d |\n", u.Blocked, u.Partitions, u.Cmds, u.Scripts, u.ServerUsec, u.PassMillis, u.Unblocked, u.SteadyCmds)
			}
			w("\n")
		}
		for _, k := range []struct {
			what string
			rows []UnblockResult
		}{{"budget-blocked (budget then reset)", s.BudgetUnblock}, {"quota-blocked (the one slot then released)", s.QuotaUnblock}} {
			if len(k.rows) == 0 {
				continue
			}
			w("| %s | partitions visited | server cmds/pass | scripts/pass | server script µs/pass | pass ms | unblocked | next pass cmds |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n", k.what)
			for _, u := range k.rows {
				w("| %d | %d | %d | %d | %d | %.2f | %d | %d |\n", u.Blocked, u.Partitions, u.Cmds, u.Scripts, u.ServerUsec, u.PassMillis, u.Unblocked, u.SteadyCmds)
			}
			w("\n")
		}
		if len(s.Recovery) > 0 {
			w("| lease recovery | leases | batch | passes | target | recovered | seconds | recovered/s | server cmds | scripts |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, rc := range s.Recovery {
				if rc.Error != "" {
					w("| %s | %d | error: %s ||||||||\n", rc.Store, rc.Leases, rc.Error)
					continue
				}
				w("| %s | %d | %d | %d | ≤ %d | %d | %.2f | %.0f | %d | %d |\n", rc.Store, rc.Leases, rc.Batch, rc.Passes, rc.MaxPasses, rc.Recovered, rc.Secs, rc.PerSec, rc.Cmds, rc.Scripts)
			}
			w("\n")
		}
	}

	if s := r.S7; s != nil {
		w("## S7 delay error (start − due), %d jobs of each kind\n\n%s.\n\n| store | delay p50 | delay p99 | delay max | retry p50 | retry p99 | retry max |\n|---|---:|---:|---:|---:|---:|---:|\n", s.Jobs, s.Note)
		for _, row := range s.Rows {
			if row.Error != "" {
				w("| %s | error: %s | | | | | |\n", row.Store, row.Error)
				continue
			}
			w("| %s | %.2f ms | **%.2f ms** | %.2f ms | %.2f ms | **%.2f ms** | %.2f ms |\n", row.Store,
				row.Delay.P50, row.Delay.P99, row.Delay.Max, row.Retry.P50, row.Retry.P99, row.Retry.Max)
		}
		w("\n")
	}

	if s := r.S6; s != nil {
		w("## S6 cancel latency (Engine.Cancel → handler context done)\n\n| store | cancel → handler p50 / p95 / p99 | idle wake p50 / p99 | cancel p50 / wake p50 | Cancel call p50 | n |\n|---|---:|---:|---:|---:|---:|\n")
		for _, run := range s.Runs {
			if run.Error != "" {
				w("| %s | error: %s | | | | |\n", run.Store, run.Error)
				continue
			}
			w("| %s | **%.3f** / %.3f / %.3f ms | %.3f / %.3f ms | %.2f | %.3f ms | %d |\n", run.Store, run.Cancel.P50, run.Cancel.P95, run.Cancel.P99,
				run.Wake.P50, run.Wake.P99, run.Ratio, run.CancelCall.P50, run.Cancel.N)
		}
		w("\n")
	}

	if s := r.S9; s != nil {
		w("## S9 suspend → signal → resume (Engine.DeliverSignal → resumed handler start)\n\n%s.\n\n", s.Note)
		w("| store | signal → resumed handler p50 / p95 / p99 | idle wake p50 / p99 | resume p50 / wake p50 | DeliverSignal call p50 | n | other load |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, run := range s.Runs {
			if run.Error != "" {
				w("| %s | error: %s | | | | | |\n", run.Store, run.Error)
				continue
			}
			w("| %s | **%.3f** / %.3f / %.3f ms | %.3f / %.3f ms | %.2f | %.3f ms | %d | %.0f%% |\n", run.Store, run.Resume.P50, run.Resume.P95, run.Resume.P99,
				run.Wake.P50, run.Wake.P99, run.Ratio, run.SignalCall.P50, run.Resume.N, 100*run.OtherCPU)
		}
		w("\n")
	}

	if s := r.S8; s != nil {
		w("## S8 flows\n\n| store | nodes/s | × S1 drain | hop p50 / p99 | flow p50 / p99 | fan-out cancel p50 / p99 (siblings) |\n|---|---:|---:|---:|---:|---|\n")
		for _, run := range s.Runs {
			if run.Error != "" {
				w("| %s | error: %s | | | | |\n", run.Store, run.Error)
				continue
			}
			var fo []string
			for _, f := range run.FanOut {
				fo = append(fo, fmt.Sprintf("%.2f / %.2f ms (%d)", f.Latency.P50, f.Latency.P99, f.Siblings))
			}
			w("| %s | **%.0f** | %.2f | %.3f / %.3f ms | %.1f / %.1f ms | %s |\n", run.Store, run.NodesPerSec, run.Ratio,
				run.Hop.P50, run.Hop.P99, run.FlowLatency.P50, run.FlowLatency.P99, strings.Join(fo, "; "))
		}
		w("\n")
	}

	if s := r.S10; s != nil {
		w("## S10 S1 with a non-limiting budget and quota\n\n%s.\n\n", s.Note)
		w("| store | run | drain jobs/s | × plain | submit/s | latency p50 / p99 ms | server script µs/job | server cmds/job | scripts/job | store calls/job | client CPU µs/job | other load |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range s.Rows {
			for _, x := range []struct {
				run   string
				r     S1Result
				ratio string
			}{{"plain (from " + row.PlainFrom + ")", row.Plain, "1"}, {"budget + quota", row.Admission, f2(row.Ratio)}} {
				if x.r.Error != "" {
					w("| %s | %s | error: %s ||||||||||\n", row.Store, x.run, x.r.Error)
					continue
				}
				w("| %s | %s | **%s** | %s | %s | %s / %s | %s | %s | %s | %s | %s | %.0f%%%s |\n", row.Store, x.run, f0(x.r.Throughput), x.ratio,
					f0(x.r.SubmitRate), f3(x.r.Latency.P50), f3(x.r.Latency.P99), f0(x.r.ScriptUsecPerJob), f2(x.r.ServerCmdsPerJob),
					f2(x.r.ScriptCallsPerJob), f2(x.r.StoreRoundTripsPerJob), f0(x.r.ClientCPUUsecPerJob), 100*x.r.OtherCPU, attempts(x.r.Attempts))
			}
		}
		if len(s.OpCosts) > 0 {
			w("\nServer cost of each store call of one job's way through admission on valkeystore (one job at a time, each call between two INFO reads, %d jobs). "+
				"One call at a time on an idle server costs more per script than the drain's steady stream does (compare the S1 op costs, measured from 16 goroutines): read the shares, not the sums:\n\n", s.OpCosts[0].N)
			w("| path | store call | server cmds/op | script µs/op | in its commands | in Lua itself | busiest commands |\n|---|---|---:|---:|---:|---:|---|\n")
			var sum float64
			for i, o := range s.OpCosts {
				sum += o.ScriptUsec
				w("| %s | %s | %.1f | %.1f | %.1f | %.1f | %s |\n", o.Path, o.Op, o.CmdsPerOp, o.ScriptUsec, o.InnerUsec, o.LuaUsec, strings.Join(o.Top, ", "))
				if i+1 == len(s.OpCosts) || s.OpCosts[i+1].Path != o.Path {
					w("| %s | all | | %.1f | | | |\n", o.Path, sum)
					sum = 0
				}
			}
		}
		w("\nStore calls per job (drain):\n\n")
		for _, row := range s.Rows {
			for _, x := range []S1Result{row.Plain, row.Admission} {
				if len(x.StoreCallsPerJob) == 0 {
					continue
				}
				var parts []string
				for _, k := range sortedKeys(x.StoreCallsPerJob) {
					parts = append(parts, fmt.Sprintf("%s %.2f", k, x.StoreCallsPerJob[k]))
				}
				top := ""
				if len(x.TopCommands) > 0 {
					top = "; server commands: " + strings.Join(x.TopCommands, ", ")
				}
				w("- **%s**: %s%s\n", x.System, strings.Join(parts, ", "), top)
			}
		}
		w("\n")
	}

	if s := r.S11; s != nil {
		w("## S11 keyed quota rate accuracy\n\n%s. %d keys, %d Workers, %.0f s per store (%.0f s warm-up).\n\n", s.Note, s.Keys, s.Workers, s.Secs, s.Warmup)
		if len(s.Rows) > 0 {
			w("| key |")
			sep := "|---|"
			for _, row := range s.Rows {
				w(" %s starts | %s rate/s | %s deviation |", row.Store, row.Store, row.Store)
				sep += "---:|---:|---:|"
			}
			w("\n%s\n", sep)
			for k := range s.Keys {
				w("| key-%02d |", k)
				for _, row := range s.Rows {
					if row.Error != "" || k >= len(row.Keys) {
						w(" – | – | – |")
						continue
					}
					kr := row.Keys[k]
					w(" %d | %.3f | %+.2f%% |", kr.Started, kr.Rate, 100*kr.Dev)
				}
				w("\n")
			}
			w("\n")
			for _, row := range s.Rows {
				if row.Error != "" {
					w("- **%s**: error: %s\n", row.Store, row.Error)
					continue
				}
				var parts []string
				for _, k := range sortedKeys(row.CallsPerStart) {
					parts = append(parts, fmt.Sprintf("%s %.2f", k, row.CallsPerStart[k]))
				}
				w("- **%s**: %d starts; largest deviation **%.2f%%**; other load %.0f%%; store calls per start: %s\n", row.Store, row.Started, 100*row.MaxDev, 100*row.OtherCPU, strings.Join(parts, ", "))
			}
			w("\n")
		}
	}

	if s := r.S13; s != nil {
		s.markdown(w)
	}

	if s := r.S5; s != nil {
		w("## S5 memory per queued execution (%d queued)\n\n| store | payload | bytes/execution beyond the payload | total delta |\n|---|---:|---:|---:|\n", s.Queued)
		for _, row := range s.Rows {
			if row.Error != "" {
				w("| %s | %d | error: %s | |\n", row.Store, row.Payload, row.Error)
				continue
			}
			w("| %s | %d | **%.0f** | %.1f MiB |\n", row.Store, row.Payload, row.PerExec, float64(row.Total)/(1<<20))
		}
		w("\n")
		if len(s.Retention) > 0 {
			w("### S5 retention: completed executions, then retention\n\n| store | completed | bytes/completed execution | before | with them | after retention | trim |\n|---|---:|---:|---:|---:|---:|---:|\n")
			for _, row := range s.Retention {
				if row.Error != "" {
					w("| %s | %d | error: %s | | | | |\n", row.Store, row.Completed, row.Error)
					continue
				}
				w("| %s | %d | **%.0f** | %.2f MiB | %.1f MiB | **%.2f MiB** (%+.1f %%) | %.0f ms |\n", row.Store, row.Completed, row.PerExec,
					float64(row.Before)/(1<<20), float64(row.Full)/(1<<20), float64(row.After)/(1<<20),
					100*float64(row.After-row.Before)/float64(row.Before), row.TrimMs)
			}
			w("\n")
		}
		if len(s.Inspector) > 0 {
			w("### S5 inspector: reads over %d executions on every partition\n\n| store | partitions | Counts | Find 100 failed (5 %%) | Find 100 waiting of a lane |\n|---|---:|---:|---:|---:|\n", s.Queued)
			for _, row := range s.Inspector {
				if row.Error != "" {
					w("| %s | %d | error: %s | | |\n", row.Store, row.Partitions, row.Error)
					continue
				}
				w("| %s | %d | **%.0f µs**, %.0f cmds | **%.0f µs**, %.0f cmds, %d examined | **%.0f µs**, %.0f cmds, %d examined |\n",
					row.Store, row.Partitions, row.CountUs, row.CountCmds, row.FindFailedUs, row.FindFailedCmds, row.FindFailedExamined,
					row.FindLaneUs, row.FindLaneCmds, row.FindLaneExamined)
			}
			w("\n")
		}
	}

	if len(r.NotRun) > 0 {
		w("## Not run\n\n")
		for _, n := range r.NotRun {
			w("- %s: %s\n", n.What, n.Reason)
		}
		w("\n")
	}
	w("## Definitions\n\n")
	for _, g := range r.Glossary {
		w("- %s\n", g)
	}
	return b.String()
}

// s13Targets are S13's targets: per store, the writers with a tail and S1
// beside appends (≥ 0.95), on valkeystore the tail p50 and the completion
// event p50 against PING after an idle gap (≤ 2); and, without a target,
// S1 with feeds on against off.
func s13Targets(s *S13Result) []Target {
	var ts []Target
	for _, row := range s.Rows {
		if row.Error != "" {
			ts = append(ts, Target{Name: "S13 attempt streams (" + row.Store + ")", Detail: row.Error})
		} else {
			ts = append(ts, Target{Name: fmt.Sprintf("S13 durable append frames/s with a tail / without (%s)", row.Store),
				Value: row.TailedRatio, Op: "≥", Limit: 0.95, Pass: boolp(row.TailedRatio >= 0.95),
				Detail: fmt.Sprintf("%.0f / %.0f frames/s (median of %d round(s): %s vs %s); the tail (Engine.Frames) read %d frames in %d StreamRead calls and %d stream watch(es)",
					row.DurableTailed.FramesPerSec, row.Durable.FramesPerSec, len(row.Durable.RoundsPerSec),
					joinF0(row.DurableTailed.RoundsPerSec), joinF0(row.Durable.RoundsPerSec), row.DurableTailed.TailFrames, row.DurableTailed.TailCalls, row.DurableTailed.TailWatches)})
		}
		if tl := row.Tail; row.Error == "" && row.Store != "memstore" {
			t := Target{Name: fmt.Sprintf("S13 append → tail p50 / PING p50 after an idle gap (%s)", row.Store), Value: tl.Ratio, Op: "≤", Limit: 2}
			if tl.Error == "" {
				t.Pass = boolp(tl.Ratio <= 2)
				t.Detail = fmt.Sprintf("append → tail p50 %.3f ms, p99 %.3f ms (n=%d); PING after 10–40 ms idle p50 %.3f ms, back to back %.3f ms; the AppendFrame call p50 %.3f ms",
					tl.Latency.P50, tl.Latency.P99, tl.Latency.N, tl.PingAfterGap.P50, tl.Ping.P50, tl.AppendCall.P50)
			} else {
				t.Detail = tl.Error
			}
			ts = append(ts, t)
		}
		t := Target{Name: fmt.Sprintf("S13 S1 beside best-effort appends / plain S1 (%s)", row.Store), Op: "≥", Limit: 0.95}
		switch b := row.Beside; {
		case b == nil:
			t.Detail = "not measured"
		case b.Error != "" || b.Ratio <= 0:
			t.Detail = b.Error
		default:
			t.Value, t.Pass = b.Ratio, boolp(b.Ratio >= 0.95)
			var parts []string
			for _, p := range b.Pairs {
				parts = append(parts, fmt.Sprintf("%.0f / %.0f = %.2f", p.Beside.Throughput, p.Plain.Throughput, p.Ratio))
			}
			t.Detail = fmt.Sprintf("median of %d back-to-back pairs (drain jobs/s with / without: %s); %d executions on another lane appending %.0f best-effort frames/s each",
				len(b.Pairs), strings.Join(parts, "; "), s.Executions, s.BesideRate)
		}
		ts = append(ts, t)
		if fd := row.Feed; row.Store != "memstore" {
			t := Target{Name: fmt.Sprintf("S13 handler return → completion event p50 / PING p50 after an idle gap (%s)", row.Store), Value: fd.Ratio, Op: "≤", Limit: 2}
			switch {
			case fd.Error != "":
				t.Detail = fd.Error
			case fd.Latency.N == 0:
				t.Detail = "not measured"
			default:
				t.Pass = boolp(fd.Ratio <= 2)
				t.Detail = fmt.Sprintf("Engine.Subscribe on a second engine and client: p50 %.3f ms, p99 %.3f ms (n=%d); PING after 10–40 ms idle p50 %.3f ms, back to back %.3f ms; per completion the subscriber had %.1f notices and made %.1f FeedRead calls; a reader of the notified partition only: p50 %.3f ms",
					fd.Latency.P50, fd.Latency.P99, fd.Latency.N, fd.PingAfterGap.P50, fd.Ping.P50, fd.SubscriberCalls["WatchFeed(notified)"], fd.SubscriberCalls["FeedRead"], fd.OnePartition.P50)
			}
			ts = append(ts, t)
		}
		t = Target{Name: fmt.Sprintf("S13 S1 with both feeds / without (%s)", row.Store)}
		switch fc := row.FeedCost; {
		case fc == nil:
			t.Detail = "not measured"
		case fc.Error != "" || fc.Ratio <= 0:
			t.Detail = fc.Error
		default:
			t.Value = fc.Ratio
			var parts []string
			for _, p := range fc.Pairs {
				parts = append(parts, fmt.Sprintf("%.0f / %.0f = %.2f", p.On.Throughput, p.Off.Throughput, p.Ratio))
			}
			t.Detail = fmt.Sprintf("no target (what a feed costs when on; off changes nothing): median of %d back-to-back pairs (drain jobs/s with / without: %s)",
				len(fc.Pairs), strings.Join(parts, "; "))
		}
		ts = append(ts, t)
	}
	return ts
}

func joinF0(vs []float64) string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%.0f", v))
	}
	return strings.Join(out, ", ")
}

// markdown writes S13's section.
func (s *S13Result) markdown(w func(string, ...any)) {
	w("## S13 attempt streams\n\n%s.\n\n", s.Note)
	w("Append throughput: %d executions × %d frames of %d B, %d round(s) per run (median round; each round a fresh store):\n\n", s.Executions, s.FramesEach, s.PayloadBytes, s.Rounds)
	w("| store | run | frames/s | by round | AppendFrame call p50 / p99 | store calls/frame | server cmds/frame | scripts/frame | script µs/frame | client CPU µs/frame | other load |\n")
	w("|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, row := range s.Rows {
		if row.Error != "" {
			w("| %s | error: %s ||||||||||\n", row.Store, row.Error)
			continue
		}
		for _, a := range []S13Append{row.Durable, row.BestEffort, row.DurableTailed} {
			run := a.Mode
			if a.Tailed {
				run += fmt.Sprintf(", one stream tailed with Engine.Frames (%d frames read in %d StreamRead calls, %d watch(es))", a.TailFrames, a.TailCalls, a.TailWatches)
			}
			var parts []string
			for _, k := range sortedKeys(a.StoreCallsPerFrame) {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, a.StoreCallsPerFrame[k]))
			}
			w("| %s | %s | **%s** | %s | %s / %s ms | %s | %s | %s | %s | %s | %.0f%% |\n", row.Store, run, f0(a.FramesPerSec), joinF0(a.RoundsPerSec),
				f3(a.AppendCall.P50), f3(a.AppendCall.P99), strings.Join(parts, ", "), f2(a.ServerCmdsPerFrame), f2(a.ScriptsPerFrame), f2(a.ScriptUsecPerFrame),
				f2(a.ClientCPUUsecPerFrame), 100*a.OtherCPU)
		}
		w("| %s | with a tail / without | %.2f | | | | | | | | |\n", row.Store, row.TailedRatio)
	}
	w("\nTail latency (one durable frame after each 10–40 ms idle gap; %d timed frames):\n\n", s.TailFrames)
	w("| store | append → tail p50 / p95 / p99 | PING after the gap p50 / p99 | PING back to back p50 / p99 | tail p50 / PING-after-gap p50 | AppendFrame call p50 | TailStream calls | store calls/frame | server cmds/frame | other load |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, row := range s.Rows {
		tl := row.Tail
		if row.Error != "" || tl.Error != "" {
			w("| %s | error: %s |||||||||\n", row.Store, row.Error+tl.Error)
			continue
		}
		ping, cold, ratio := "n/a (in process)", "n/a", "n/a"
		if tl.Ping.N > 0 {
			ping = fmt.Sprintf("%.3f / %.3f ms", tl.Ping.P50, tl.Ping.P99)
			cold = fmt.Sprintf("%.3f / %.3f ms", tl.PingAfterGap.P50, tl.PingAfterGap.P99)
			ratio = fmt.Sprintf("%.2f", tl.Ratio)
		}
		var parts []string
		for _, k := range sortedKeys(tl.StoreCallsPerFrame) {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, tl.StoreCallsPerFrame[k]))
		}
		w("| %s | **%.3f** / %.3f / %.3f ms | %s | %s | %s | %.3f ms | %d | %s | %s | %.0f%% |\n", row.Store, tl.Latency.P50, tl.Latency.P95, tl.Latency.P99,
			cold, ping, ratio, tl.AppendCall.P50, tl.TailCalls, strings.Join(parts, ", "), f2(tl.ServerCmdsPerFrame), 100*tl.OtherCPU)
	}
	for _, row := range s.Rows {
		if len(row.Tail.TopCommands) > 0 {
			w("\nServer commands per timed frame in the tail run (%s): %s\n", row.Store, strings.Join(row.Tail.TopCommands, ", "))
		}
	}
	w("\nS1 beside appends (%d executions on lane %q append a best-effort frame each every %.0f ms, the whole S1 run; same store and engine), in %d back-to-back pairs with plain S1:\n\n",
		s.Executions, s13FramesLane, 1000/s.BesideRate, s.BesidePairs)
	w("| store | pair | run | drain jobs/s | × plain | frames/s (whole run) | frames per drained job | latency p50 / p99 ms | server script µs/job | server cmds/job | store calls/job | other load |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range s.Rows {
		b := row.Beside
		if b == nil {
			w("| %s | | not measured ||||||||||\n", row.Store)
			continue
		}
		for i, p := range b.Pairs {
			runs := []struct {
				run, ratio, fps, fpj string
				r                    S1Result
			}{{"plain", "1", "–", "–", p.Plain}, {"with appends", f2(p.Ratio), f0(p.FramesPerSec), f3(p.FramesPerJob), p.Beside}}
			if p.First != "plain" {
				runs[0], runs[1] = runs[1], runs[0]
			}
			for _, x := range runs {
				if x.r.Error != "" {
					w("| %s | %d | %s | error: %s |||||||||\n", row.Store, i+1, x.run, x.r.Error)
					continue
				}
				w("| %s | %d | %s | **%s** | %s | %s | %s | %s / %s | %s | %s | %s | %.0f%%%s |\n", row.Store, i+1, x.run, f0(x.r.Throughput), x.ratio, x.fps, x.fpj,
					f3(x.r.Latency.P50), f3(x.r.Latency.P99), f0(x.r.ScriptUsecPerJob), f2(x.r.ServerCmdsPerJob), f2(x.r.StoreRoundTripsPerJob), 100*x.r.OtherCPU, attempts(x.r.Attempts))
			}
		}
		if b.Error != "" {
			w("| %s | | error: %s ||||||||||\n", row.Store, b.Error)
		} else {
			w("| %s | median | | | **%.2f** |||||||\n", row.Store, b.Ratio)
		}
	}
	s.feedMarkdown(w)
}

// feedMarkdown writes S13's completion-feed tables.
func (s *S13Result) feedMarkdown(w func(string, ...any)) {
	w("\nCompletion-feed latency (a no-op job after each 10–40 ms idle gap; %d timed completions; handler return = the time the handler takes as its last step):\n\n", s.FeedSamples)
	w("| store | handler return → event p50 / p95 / p99 | by partition quarter p50 | submit → event p50 | one-partition reader p50 / p99 | PING after the gap p50 / p99 | PING back to back p50 / p99 | event p50 / PING-after-gap p50 | subscriber store calls/sample | driver store calls/sample | server cmds/sample | other load |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|\n")
	calls := func(m map[string]float64) string {
		var parts []string
		for _, k := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
		}
		return strings.Join(parts, ", ")
	}
	for _, row := range s.Rows {
		fd := row.Feed
		if fd.Error != "" || fd.Latency.N == 0 {
			w("| %s | error: %s |||||||||||\n", row.Store, row.Error+fd.Error)
			continue
		}
		var qs []string
		for _, q := range fd.ByQuarter {
			qs = append(qs, f3(q.P50))
		}
		ping, cold, ratio := "n/a (in process)", "n/a", "n/a"
		if fd.Ping.N > 0 {
			ping = fmt.Sprintf("%.3f / %.3f ms", fd.Ping.P50, fd.Ping.P99)
			cold = fmt.Sprintf("%.3f / %.3f ms", fd.PingAfterGap.P50, fd.PingAfterGap.P99)
			ratio = fmt.Sprintf("%.2f", fd.Ratio)
		}
		w("| %s | **%.3f** / %.3f / %.3f ms | %s ms | %.3f ms | %.3f / %.3f ms | %s | %s | %s | %s | %s | %s | %.0f%% |\n", row.Store,
			fd.Latency.P50, fd.Latency.P95, fd.Latency.P99, strings.Join(qs, ", "), fd.SubmitToEvent.P50, fd.OnePartition.P50, fd.OnePartition.P99,
			cold, ping, ratio, calls(fd.SubscriberCalls), calls(fd.DriverCalls), f2(fd.ServerCmdsPerSample), 100*fd.OtherCPU)
	}
	for _, row := range s.Rows {
		if row.Feed.Subscriber != "" {
			w("\nSubscriber (%s): %s.", row.Store, row.Feed.Subscriber)
		}
	}
	w("\n")
	for _, row := range s.Rows {
		if len(row.Feed.TopCommands) > 0 {
			w("\nServer commands per timed completion in the feed run (%s): %s\n", row.Store, strings.Join(row.Feed.TopCommands, ", "))
		}
	}
	w("\nS1 with both feeds (the store built with Feeds{Completions: true, Leases: true}, nobody subscribed) and without, in %d back-to-back pairs:\n\n", s.FeedPairs)
	w("| store | pair | run | drain jobs/s | × off | latency p50 / p99 ms | server script µs/job | server cmds/job | scripts/job | store calls/job | other load |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range s.Rows {
		fc := row.FeedCost
		if fc == nil {
			w("| %s | | not measured |||||||||\n", row.Store)
			continue
		}
		for i, p := range fc.Pairs {
			runs := []struct {
				run, ratio string
				r          S1Result
			}{{"feeds off", "1", p.Off}, {"feeds on", f2(p.Ratio), p.On}}
			if p.First != "off" {
				runs[0], runs[1] = runs[1], runs[0]
			}
			for _, x := range runs {
				if x.r.Error != "" {
					w("| %s | %d | %s | error: %s ||||||||\n", row.Store, i+1, x.run, x.r.Error)
					continue
				}
				w("| %s | %d | %s | **%s** | %s | %s / %s | %s | %s | %s | %s | %.0f%%%s |\n", row.Store, i+1, x.run, f0(x.r.Throughput), x.ratio,
					f3(x.r.Latency.P50), f3(x.r.Latency.P99), f0(x.r.ScriptUsecPerJob), f2(x.r.ServerCmdsPerJob), f2(x.r.ScriptCallsPerJob), f2(x.r.StoreRoundTripsPerJob), 100*x.r.OtherCPU, attempts(x.r.Attempts))
			}
		}
		if fc.Error != "" {
			w("| %s | | error: %s |||||||||\n", row.Store, fc.Error)
		} else {
			w("| %s | median | | | **%.2f** ||||||\n", row.Store, fc.Ratio)
		}
	}
	for _, row := range s.Rows {
		if fc := row.FeedCost; fc != nil {
			for i, p := range fc.Pairs {
				if p.On.Error == "" && len(p.On.TopCommands) > 0 {
					w("\nServer commands per drained job with both feeds (%s, pair %d): %s\n", row.Store, i+1, strings.Join(p.On.TopCommands, ", "))
					break
				}
			}
		}
	}
	w("\n")
}

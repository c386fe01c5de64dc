package valkeystore

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Server-side cost of each store operation, on the real servers
// (standalone, and second-server when both binaries are installed):
//
//	go test -run XXX -bench ServerCost -benchtime 2000x ./valkeystore/
//	go test -run XXX -bench ServerCost -benchtime 2000x ./valkeystore/ -valkeystore.benchfeeds
//	go test -run XXX -bench QueuedMemory -benchtime 20000x ./valkeystore/
//
// Each sub-benchmark prepares b.N executions in the state its operation
// needs, then runs the operation b.N times from costWorkers goroutines (a
// busy server, as under load; one after another the server idles between
// calls and each costs more) and reports, from the server's INFO deltas
// over that loop only:
//
//	cmds/op      every command the server ran: the script call and the
//	             commands inside it
//	script-us/op time in the scripts (evalsha usec)
//	lua-us/op    script time not spent in the commands the scripts ran:
//	             the interpreter, argument and reply conversion
//	cpu-us/op    server CPU (user+sys), network included
//
// The default ns/op is wall time over the loop divided by b.N.

// benchFeeds builds BenchmarkServerCost's stores with both event feeds
// (what a feed costs each operation).
var benchFeeds = flag.Bool("valkeystore.benchfeeds", false, "BenchmarkServerCost's stores keep both event feeds")

// benchScriptCalls sets BenchmarkServerCost's Options.ScriptCalls, to
// compare functions with EVALSHA on one server.
var benchScriptCalls = flag.String("valkeystore.scriptcalls", "", `BenchmarkServerCost's Options.ScriptCalls ("", "functions" or "eval")`)

// costWorkers is how many goroutines run the operations, as the bench's
// per-operation measurement does.
const costWorkers = 16

// runConcurrently runs f(0..n-1) from costWorkers goroutines, each i once.
func runConcurrently(n int, f func(i int) error) error {
	var next atomic.Int64
	errs := make(chan error, costWorkers)
	for range costWorkers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					errs <- nil
					return
				}
				if err := f(i); err != nil {
					next.Store(int64(n))
					errs <- fmt.Errorf("op %d: %w", i, err)
					return
				}
			}
		}()
	}
	var first error
	for range costWorkers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// costOp is one measured operation: prepare readies n executions and returns
// the operation on the i-th.
type costOp struct {
	name    string
	prepare func(b *testing.B, e *costEnv, n int) func(i int) error
}

// costEnv is one store on a fresh prefix, with ids, times and lease
// requests drawn in sequence (safe for concurrent use).
type costEnv struct {
	s    *Store
	c    valkey.Client
	part int

	mu sync.Mutex
	sq seq
	t  time.Time // advances by 1 ms per call of now
}

const costLane model.LaneID = "bench"

var costPayload = bytes.Repeat([]byte("x"), 4096)

func (e *costEnv) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.t = e.t.Add(time.Millisecond)
	return e.t
}

// skip moves the time on by d.
func (e *costEnv) skip(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.t = e.t.Add(d)
}

func (e *costEnv) execID() model.ExecutionID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sq.exec(e.part)
}

func (e *costEnv) req(ttl time.Duration) model.LeaseRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sq.req("wi-1", ttl)
}

// create creates one execution with a 4 KiB payload, edited by edit.
func (e *costEnv) create(edit func(*model.ExecutionCreateParams)) (model.ExecutionID, error) {
	p := &model.ExecutionCreateParams{
		ID: e.execID(), Namespace: "bench", Lane: costLane, Kind: "bench.job",
		Payload: costPayload, RetryPolicy: model.RetryPolicy{MaxRetries: 3}, Now: e.now(),
	}
	if edit != nil {
		edit(p)
	}
	_, err := e.s.ExecutionCreate(bg, p)
	return p.ID, err
}

func (e *costEnv) createN(b testing.TB, n int, edit func(*model.ExecutionCreateParams)) []model.ExecutionID {
	b.Helper()
	ids := make([]model.ExecutionID, n)
	for i := range ids {
		id, err := e.create(edit)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func (e *costEnv) claimNextP(ttl time.Duration) *model.ExecutionClaimNextParams {
	return &model.ExecutionClaimNextParams{
		Partition: e.part, Lane: costLane, ScanLimit: 32, LeaseRequest: e.req(ttl), Now: e.now(),
	}
}

func (e *costEnv) claimN(b testing.TB, n int, ttl time.Duration) []*model.ClaimResult {
	b.Helper()
	out := make([]*model.ClaimResult, n)
	for i := range out {
		r, err := e.s.ExecutionClaimNext(bg, e.claimNextP(ttl))
		if err != nil || r.Claimed == nil {
			b.Fatalf("claim %d: %v %+v", i, err, r)
		}
		out[i] = r.Claimed
	}
	return out
}

func (e *costEnv) nextClaim(ttl time.Duration) *model.NextClaim {
	return &model.NextClaim{Lane: costLane, ScanLimit: 32, LeaseRequest: e.req(ttl)}
}

var costFrame = bytes.Repeat([]byte("f"), 256)

// appendCase readies n claimed executions, their streams opened by a
// first frame when open, and returns a durable append on the i-th.
func (e *costEnv) appendCase(b *testing.B, n int, open bool) func(int) error {
	e.createN(b, n, nil)
	cs := e.claimN(b, n, time.Hour)
	for i := range cs {
		if !open {
			break
		}
		if _, err := e.s.StreamAppend(bg, e.frameP(cs[i])); err != nil {
			b.Fatal(err)
		}
	}
	return func(i int) error {
		_, err := e.s.StreamAppend(bg, e.frameP(cs[i]))
		return err
	}
}

// frameP is a durable 256 B frame on c's stream.
func (e *costEnv) frameP(c *model.ClaimResult) *model.StreamAppendParams {
	return &model.StreamAppendParams{ID: c.ID, Fence: c.Fence(), Mode: model.StreamDurable,
		Type: "bench.frame", Payload: costFrame, Now: e.now()}
}

var costOps = []costOp{
	{"create", func(b *testing.B, e *costEnv, n int) func(int) error {
		return func(int) error {
			_, err := e.create(nil)
			return err
		}
	}},
	{"claim_next", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		return func(int) error {
			r, err := e.s.ExecutionClaimNext(bg, e.claimNextP(time.Minute))
			if err == nil && r.Claimed == nil {
				err = fmt.Errorf("nothing claimed")
			}
			return err
		}
	}},
	{"complete", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Hour)
		return func(i int) error {
			_, err := e.s.ExecutionComplete(bg, &model.ExecutionCompleteParams{
				ID: cs[i].ID, Fence: cs[i].Fence(), Result: []byte(`{"ok":true}`), Now: e.now()})
			return err
		}
	}},
	{"complete_next", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Hour)
		e.createN(b, n, nil)
		return func(i int) error {
			r, err := e.s.ExecutionComplete(bg, &model.ExecutionCompleteParams{
				ID: cs[i].ID, Fence: cs[i].Fence(), Result: []byte(`{"ok":true}`),
				Next: e.nextClaim(time.Hour), Now: e.now()})
			if err == nil && r.Next.Claimed == nil {
				err = fmt.Errorf("nothing claimed next")
			}
			return err
		}
	}},
	// stream_append: a durable 256 B frame on a stream its attempt opened
	// already (the tail bench's case); stream_append_first opens it.
	{"stream_append", func(b *testing.B, e *costEnv, n int) func(int) error { return e.appendCase(b, n, true) }},
	{"stream_append_first", func(b *testing.B, e *costEnv, n int) func(int) error { return e.appendCase(b, n, false) }},
	{"renew", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Hour)
		return func(i int) error {
			_, err := e.s.LeaseRenew(bg, &model.LeaseRenewParams{
				ID: cs[i].ID, Fence: cs[i].Fence(), LeaseTTL: time.Hour, Now: e.now()})
			return err
		}
	}},
	{"fail_retry", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Hour)
		return func(i int) error {
			r, err := e.s.ExecutionFail(bg, &model.ExecutionFailParams{
				ID: cs[i].ID, Fence: cs[i].Fence(), Reason: "boom", Now: e.now()})
			if err == nil && r.Outcome != model.FailRetryScheduled {
				err = fmt.Errorf("outcome %q", r.Outcome)
			}
			return err
		}
	}},
	{"lease_mark_expired", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Second)
		e.skip(time.Hour)
		return func(i int) error {
			r, err := e.s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: cs[i].ID, Now: e.now()})
			if err == nil && r.Outcome != model.MarkExpiredMarked {
				err = fmt.Errorf("outcome %q", r.Outcome)
			}
			return err
		}
	}},
	{"recover", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, nil)
		cs := e.claimN(b, n, time.Second)
		e.skip(time.Hour)
		for _, c := range cs {
			if _, err := e.s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: c.ID, Now: e.now()}); err != nil {
				b.Fatal(err)
			}
		}
		return func(i int) error {
			r, err := e.s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: cs[i].ID, Now: e.now()})
			if err == nil && r.Outcome != model.RecoverRequeued {
				err = fmt.Errorf("outcome %q", r.Outcome)
			}
			return err
		}
	}},
	{"promote_delayed", func(b *testing.B, e *costEnv, n int) func(int) error {
		until := e.now().Add(time.Minute)
		ids := e.createN(b, n, func(p *model.ExecutionCreateParams) { p.DelayUntil = until })
		e.skip(2 * time.Minute)
		return func(i int) error {
			r, err := e.s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{
				ID: ids[i], Lane: costLane, Now: e.now()})
			if err == nil && r.Outcome != model.PromotePromoted {
				err = fmt.Errorf("outcome %q", r.Outcome)
			}
			return err
		}
	}},
	{"expire_attempt_timeout", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, n, func(p *model.ExecutionCreateParams) { p.AttemptTimeout = time.Second })
		cs := e.claimN(b, n, time.Hour)
		e.skip(time.Minute)
		return func(i int) error {
			r, err := e.s.ExecutionExpire(bg, &model.ExecutionExpireParams{
				ID: cs[i].ID, Reason: model.ExpireAttemptTimeout, Now: e.now()})
			if err == nil && r.Outcome != model.ExpireRetryScheduled {
				err = fmt.Errorf("outcome %q", r.Outcome)
			}
			return err
		}
	}},
	{"index_scan_due", func(b *testing.B, e *costEnv, n int) func(int) error {
		// 100 expired leases: a pass reads a batch of 50
		e.createN(b, 100, nil)
		e.claimN(b, 100, time.Second)
		e.skip(time.Hour)
		return func(int) error {
			r, err := e.s.IndexScanDue(bg, &model.IndexScanDueParams{
				Partition: e.part, Index: model.IndexLeaseExpiry, Limit: 50, Now: e.now()})
			if err == nil && len(r.Items) != 50 {
				err = fmt.Errorf("%d items", len(r.Items))
			}
			return err
		}
	}},
	{"partition_due", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, 10, nil)
		return func(int) error {
			_, err := e.s.PartitionDue(bg, &model.PartitionDueParams{Partition: e.part})
			return err
		}
	}},
	{"route_unblock_empty", func(b *testing.B, e *costEnv, n int) func(int) error {
		e.createN(b, 10, nil)
		return func(int) error {
			_, err := e.s.RouteUnblock(bg, &model.RouteUnblockParams{
				Partition: e.part, Namespace: "bench", Live: model.Capabilities{"cpu"}, Limit: 100, Now: e.now()})
			return err
		}
	}},
}

// costBackends are the real servers.
func costBackends() []backend {
	var out []backend
	for _, be := range backends {
		if be.name == "standalone" || be.name == "second-server" {
			out = append(out, be)
		}
	}
	return out
}

func BenchmarkServerCost(b *testing.B) {
	for _, be := range costBackends() {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			for _, op := range costOps {
				b.Run(op.name, func(b *testing.B) {
					var opts Options
					opts.ScriptCalls = ScriptCalls(*benchScriptCalls)
					if *benchFeeds {
						opts.Feeds = model.Feeds{Completions: true, Leases: true}
					}
					s := newStoreWith(b, c, &opts)
					e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
					// one operation first, so that every script it runs is
					// loaded and no EVAL fallback is measured
					if err := op.prepare(b, e, 1)(0); err != nil {
						b.Fatalf("warm-up: %v", err)
					}
					f := op.prepare(b, e, b.N)
					before := readServerStats(b, c)
					b.ResetTimer()
					if err := runConcurrently(b.N, f); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					d := readServerStats(b, c).minus(before)
					n := float64(b.N)
					b.ReportMetric(float64(d.calls)/n, "cmds/op")
					b.ReportMetric(float64(d.scriptUsec)/n, "script-us/op")
					b.ReportMetric(float64(d.scriptUsec-d.innerUsec)/n, "lua-us/op")
					b.ReportMetric(d.cpuUsec/n, "cpu-us/op")
				})
			}
		})
	}
}

// BenchmarkQueuedMemory reports the server memory one queued execution
// takes (used_memory delta per execution; no payload, no tags).
func BenchmarkQueuedMemory(b *testing.B) {
	for _, be := range costBackends() {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			s := newStoreWith(b, c, nil)
			e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
			e.createN(b, 1, nil) // the lane and the partition's indexes exist
			before := usedMemory(b, c)
			b.ResetTimer()
			e.createN(b, b.N, func(p *model.ExecutionCreateParams) { p.Payload = nil })
			b.StopTimer()
			b.ReportMetric(float64(usedMemory(b, c)-before)/float64(b.N), "B/exec")
		})
	}
}

type serverStats struct {
	calls      int64 // every command but INFO
	scriptUsec int64
	innerUsec  int64 // commands other than script calls
	cpuUsec    float64
}

func (s serverStats) minus(o serverStats) serverStats {
	return serverStats{s.calls - o.calls, s.scriptUsec - o.scriptUsec, s.innerUsec - o.innerUsec, s.cpuUsec - o.cpuUsec}
}

func info(b testing.TB, c valkey.Client, section string) string {
	b.Helper()
	s, err := c.Do(context.Background(), c.B().Info().Section(section).Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func readServerStats(b testing.TB, c valkey.Client) serverStats {
	var st serverStats
	for _, line := range strings.Split(info(b, c, "commandstats"), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" {
			continue
		}
		var calls, usec int64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		st.calls += calls
		switch name {
		case "evalsha", "evalsha_ro", "eval", "eval_ro", "fcall", "fcall_ro":
			st.scriptUsec += usec
		default:
			st.innerUsec += usec
		}
	}
	for _, line := range strings.Split(info(b, c, "cpu"), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			st.cpuUsec += f * 1e6
		}
	}
	return st
}

// usedMemory reads the server's used_memory (INFO memory).
func usedMemory(b testing.TB, c valkey.Client) int64 {
	for _, line := range strings.Split(info(b, c, "memory"), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}

// benchScriptCallsLoaded runs BenchmarkScriptCalls' calls from
// costWorkers goroutines, so the server is busy, as in S1.
var benchScriptCallsLoaded = flag.Bool("valkeystore.scriptcallsloaded", false, "BenchmarkScriptCalls calls from concurrent goroutines")

// BenchmarkScriptCalls compares the server time of a script run as a
// function (FCALL) with the same script run by EVALSHA, on one server in
// one run: two stores, one per way, take turns call by call (which goes
// first alternates), so both see the same host load. It reports each way's script time per call
// (INFO commandstats) and their ratio.
func BenchmarkScriptCalls(b *testing.B) {
	ops := map[string]bool{"create": true, "claim_next": true, "renew": true, "complete": true, "complete_next": true, "stream_append": true}
	for _, be := range costBackends() {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			for _, op := range costOps {
				if !ops[op.name] {
					continue
				}
				b.Run(op.name, func(b *testing.B) {
					var fs [2]func(int) error
					for i, m := range []ScriptCalls{ScriptCallsFunctions, ScriptCallsEval} {
						s := newStoreWith(b, c, &Options{ScriptCalls: m})
						e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
						if err := op.prepare(b, e, 1)(0); err != nil {
							b.Fatalf("warm-up: %v", err)
						}
						fs[i] = op.prepare(b, e, b.N)
					}
					before := scriptUsecByCommand(b, c)
					b.ResetTimer()
					if *benchScriptCallsLoaded {
						// costWorkers goroutines keep the server busy, the
						// two ways interleaved
						if err := runConcurrently(2*b.N, func(k int) error { return fs[k%2](k / 2) }); err != nil {
							b.Fatal(err)
						}
					} else {
						for i := range b.N {
							// which way goes first alternates
							for j := range fs {
								if err := fs[(i+j)%2](i); err != nil {
									b.Fatal(err)
								}
							}
						}
					}
					b.StopTimer()
					after := scriptUsecByCommand(b, c)
					n := float64(b.N)
					fc, ev := float64(after["fcall"]-before["fcall"])/n, float64(after["evalsha"]-before["evalsha"])/n
					b.ReportMetric(fc, "fcall-us/op")
					b.ReportMetric(ev, "evalsha-us/op")
					if ev > 0 {
						b.ReportMetric(fc/ev, "fcall/evalsha")
					}
				})
			}
		})
	}
}

// scriptUsecByCommand reads the server time of each script command
// (INFO commandstats usec of evalsha, fcall and their _ro forms, the _ro
// time added to its command's).
func scriptUsecByCommand(b testing.TB, c valkey.Client) map[string]int64 {
	out := make(map[string]int64)
	for _, line := range strings.Split(info(b, c, "commandstats"), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		name = strings.TrimSuffix(name, "_ro")
		if !ok || !isCmd || name != "fcall" && name != "evalsha" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				u, _ := strconv.ParseInt(v, 10, 64)
				out[name] += u
			}
		}
	}
	return out
}

package valkeystore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// Where a script's server time goes, region by region.
//
// instrument rewrites an assembled script so that every call stamps the
// server's clock (TIME, µs) after the lines it is told, and pushes the
// stamps (µs since the call began) to a list when it reaches its flush
// line. BenchmarkScriptRegions runs such copies on a private server and
// reports, per region, the mean time from the previous stamp: what to cut
// first when the record or the command set changes (issue 15's
// "choose by profile"). A stamp costs about 2–3 µs of its own, so compare
// regions, not the total with a plain run; regionsKey is the list.

const regionsKey = "ff:regions"

// regionMark stamps label after the first occurrence of after: in the
// script's own statements, or anywhere in the assembled text (the helpers
// it includes) when lib is set.
type regionMark struct {
	after, label string
	lib          bool
}

// instrument returns sc's text with a stamp after each mark, the stamps
// pushed to regionsKey after flushAfter (a statement of the script's own
// that every profiled call reaches), and, when calls is set, the time of
// every redis.call of the script's own statements stamped as the
// command's name.
func instrument(sc *script, marks []regionMark, flushAfter string, calls bool) (string, error) {
	src := sc.src
	// the script's own statements follow the helpers: they start with its
	// first line, the first line of lua/<name>.lua that is not a comment
	first := ""
	for l := range strings.Lines(mustRead("lua/" + sc.name + ".lua")) {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
			first = strings.TrimRight(l, "\n")
			break
		}
	}
	own := strings.LastIndex(src, "\n"+first+"\n")
	if first == "" || own < 0 {
		return "", fmt.Errorf("%s: its first statement %q is not in the assembled text", sc.name, first)
	}
	own++
	stamp := func(label string) string {
		return "\n__ff_t[#__ff_t + 1] = '" + label + "=' .. (__ff_now() - __ff_t0)\n"
	}
	insert := func(after, text string, lib bool) error {
		from := own
		if lib {
			from = 0
		}
		i := strings.Index(src[from:], after)
		if i < 0 {
			return fmt.Errorf("%s: %q not found", sc.name, after)
		}
		i += from + len(after)
		src = src[:i] + text + src[i:]
		if i < own {
			own += len(text)
		}
		return nil
	}
	for _, m := range marks {
		if strings.ContainsAny(m.label, "= '") {
			return "", fmt.Errorf("label %q: no '=', space or quote", m.label)
		}
		if err := insert(m.after, stamp(m.label), m.lib); err != nil {
			return "", err
		}
	}
	if err := insert(flushAfter, stamp("end")+"__ff_rc('RPUSH', '"+regionsKey+"', table.concat(__ff_t, ' '))\n", false); err != nil {
		return "", err
	}
	if calls {
		src = src[:own] + strings.ReplaceAll(src[own:], "redis.call(", "__ff_call(")
	}
	head := "local __ff_rc = redis.call\n" +
		"local __ff_t = {}\n" +
		"local function __ff_now() local x = __ff_rc('TIME'); return x[1] * 1000000 + x[2] end\n" +
		"local __ff_t0 = __ff_now()\n" +
		"local function __ff_call(...)\n" +
		"  local a = __ff_now()\n" +
		"  local r = __ff_rc(...)\n" +
		"  __ff_t[#__ff_t + 1] = string.lower((select(1, ...))) .. '=' .. (__ff_now() - a)\n" +
		"  return r\n" +
		"end\n"
	return head + src, nil
}

// regionRows parses the pushed stamps: per label (a repeated one numbered
// #2, #3, …) its values, in first-seen order. Stamps ("@<label>" and
// "end") are µs since the call began; the other labels are commands, each
// its own duration.
func regionRows(rows []string) (order []string, vals map[string][]float64) {
	vals = map[string][]float64{}
	for _, row := range rows {
		seen := map[string]int{}
		for _, f := range strings.Fields(row) {
			k, v, _ := strings.Cut(f, "=")
			if seen[k]++; seen[k] > 1 {
				k += "#" + strconv.Itoa(seen[k])
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			if _, ok := vals[k]; !ok {
				order = append(order, k)
			}
			vals[k] = append(vals[k], x)
		}
	}
	return order, vals
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// withInstrumented runs f with sc replaced by its instrumented text (the
// store must run EVALSHA: the function library is built from the plain
// texts). Benchmarks run after every test, so no test sees the swap.
func withInstrumented(b *testing.B, sc *script, marks []regionMark, flushAfter string, f func()) {
	src, err := instrument(sc, marks, flushAfter, true)
	if err != nil {
		b.Fatal(err)
	}
	saved := *sc
	defer func() { *sc = saved }()
	sc.src, sc.lua = src, valkey.NewLuaScript(src)
	f()
}

// reportRegions reports the mean of each stamp's distance from the one
// before it ("<label>-µs") and of each command ("<cmd>-cmd-µs"), skipping the
// first skip calls (the warm-up).
func reportRegions(b *testing.B, c valkey.Client, skip int) {
	rows, err := c.Do(bg, c.B().Lrange().Key(regionsKey).Start(int64(skip)).Stop(-1).Build()).AsStrSlice()
	if err != nil || len(rows) == 0 {
		b.Fatalf("no stamps: %v", err)
	}
	order, vals := regionRows(rows)
	prev := 0.0
	for _, k := range order {
		m := mean(vals[k])
		if strings.HasPrefix(k, "@") || k == "end" {
			b.ReportMetric(m-prev, strings.TrimPrefix(k, "@")+"-µs")
			prev = m
		} else {
			b.ReportMetric(m, k+"-cmd-µs")
		}
	}
	b.ReportMetric(prev, "script-µs")
}

// completeNextRegions splits S1's call: the completion, then claim_next's
// head read, record load, lease and attempt, indexes and history, and the
// record save with the reply (payload and tags).
var completeNextRegions = []regionMark{
	{after: "local now = now_ms()", label: "@prelude"},
	{after: "local e = the_exec()", label: "@load"},
	{after: "local replay, err = check_fenced_op(e, 'complete', operator, f, now)", label: "@fence"},
	{after: "  end_attempt(e, now, 'ended_success', '', '')", label: "@end_attempt"},
	{after: "  remove_from_lane(e)", label: "@result_lane"},
	{after: "  release_lease(e, now, 'released', 'completed')", label: "@release"},
	{after: "  terminate(e, now, 'success')", label: "@terminate"},
	{after: "  save_exec(e)", label: "@save"},
	{after: "  flow_settle(now)", label: "@flow_settle"},
	{after: "local heads = redis.call('ZRANGE', key, S(from), S(from + want - 1))", label: "@next_head", lib: true},
	{after: "      local e = load_exec(exec_keys_of(id))", label: "@next_load", lib: true},
	{after: "  set_state(e, now, 'active', 'leased', 'not_applicable', 'none', 'none', 'running_attempt')", label: "@next_lease_attempt", lib: true},
	{after: "    add_history(e, now, 'acquired', '')\n  end", label: "@next_indexes_history", lib: true},
	{after: "  if adm ~= nil then\n    for _, x in ipairs(adm) do t[#t + 1] = x end\n  end", label: "@next_save_reply", lib: true},
}

// completeNextFlush ends execution_complete's claim_next call.
const completeNextFlush = "}, now)"

// appendRegions splits stream_append's fast path (a durable frame on an
// open, persistent, server-numbered stream: the case after the first
// frame). The notice's stamp is in notify, which the script defines
// before the fast path and calls from it.
var appendRegions = []regionMark{
	{after: "local now = now_ms()", label: "@prelude"},
	{after: "local fc = redis.call('HMGET', K_core, 'sf', 'sp')", label: "@copy"},
	// the fence checked against the copy
	{after: "if cur ~= nil and A_mode == 'durable' and fc[2] == S(cur) then", label: "@fence"},
	{after: "'e', A_encoding, 'c', A_correlation, 'm', 'durable', 'ts', S(now), 'v', '0')", label: "@frame"},
	{after: "    local n = redis.call('XLEN', key)", label: "@xlen"},
	{after: "  local pfx, tag = string.match(base, '^(.*):exec:(%b{}):')", label: "@notice"},
}

const appendFlush = "  redis.call('PUBLISH', pfx .. ':stream:' .. tag, note)"

// BenchmarkScriptRegions profiles two scripts on a private standalone
// server, run with EVALSHA (so the first region includes defining the
// helpers, which functions do once):
//
//   - complete_next: S1's call, warm (8 goroutines, each completing its
//     execution and claiming the next);
//   - append_after_gap: a durable 256 B frame after a 10–40 ms idle gap,
//     the tail latency's case (issue 13).
//
// Run: go test ./valkeystore/ -run xxx -bench ScriptRegions -benchtime 2000x
func BenchmarkScriptRegions(b *testing.B) {
	b.Run("complete_next", func(b *testing.B) {
		srv := redisserver.Start(b, nil)
		c := newClient(b, srv.Addr())
		withInstrumented(b, scriptExecutionComplete, completeNextRegions, completeNextFlush, func() {
			s := newStoreWith(b, c, &Options{ScriptCalls: ScriptCallsEval})
			e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
			const workers = 8
			per := max(b.N/workers, 1)
			e.createN(b, workers*(per+1)+100, nil)
			warm := 100
			cur := e.claimN(b, workers, time.Hour)
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, r := range cur {
				wg.Go(func() {
					for range per {
						res, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: r.ID, Fence: r.Fence(), Now: e.now(), Next: e.nextClaim(time.Hour)})
						if err != nil || res.Next == nil || res.Next.Claimed == nil {
							b.Errorf("complete + claim next: %v %+v", err, res)
							return
						}
						r = res.Next.Claimed
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			reportRegions(b, c, min(warm, workers*per/2))
		})
	})
	b.Run("append_after_gap", func(b *testing.B) {
		srv := redisserver.Start(b, nil)
		c := newClient(b, srv.Addr())
		withInstrumented(b, scriptStreamAppend, appendRegions, appendFlush, func() {
			s := newStoreWith(b, c, &Options{ScriptCalls: ScriptCallsEval})
			e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
			next := e.appendCase(b, 1, true)
			if err := c.Do(bg, c.B().Del().Key(regionsKey).Build()).Error(); err != nil {
				b.Fatal(err)
			}
			var walls []float64
			b.ResetTimer()
			for range b.N {
				// the idle gap is the condition measured (the server and the
				// client go cold), not a wait for another goroutine
				time.Sleep(10*time.Millisecond + time.Duration(rand.IntN(31))*time.Millisecond)
				t := time.Now()
				if err := next(0); err != nil {
					b.Fatal(err)
				}
				walls = append(walls, float64(time.Since(t).Microseconds()))
			}
			b.StopTimer()
			slices.Sort(walls)
			b.ReportMetric(walls[len(walls)/2], "wall-p50-µs")
			reportRegions(b, c, 0)
		})
	})
}

// TestInstrumentScript keeps BenchmarkScriptRegions' anchors in step with
// the scripts: each instrumented text compiles and holds every stamp, and
// a missing anchor is an error naming it.
func TestInstrumentScript(t *testing.T) {
	c := miniredisClient(t)
	for _, x := range []struct {
		sc    *script
		marks []regionMark
		flush string
	}{{scriptExecutionComplete, completeNextRegions, completeNextFlush}, {scriptStreamAppend, appendRegions, appendFlush}} {
		src, err := instrument(x.sc, x.marks, x.flush, true)
		if err != nil {
			t.Fatalf("%s: %v (update the anchors of BenchmarkScriptRegions)", x.sc.name, err)
		}
		for _, m := range x.marks {
			if !strings.Contains(src, "'"+m.label+"=' .. (__ff_now() - __ff_t0)") {
				t.Errorf("%s: no stamp %s", x.sc.name, m.label)
			}
		}
		if err := c.Do(bg, c.B().ScriptLoad().Script(src).Build()).Error(); err != nil {
			t.Errorf("%s: the instrumented text does not compile: %v", x.sc.name, err)
		}
	}
	if _, err := instrument(scriptStreamAppend, []regionMark{{after: "no such line", label: "@x"}}, appendFlush, false); err == nil || !strings.Contains(err.Error(), "no such line") {
		t.Errorf("a missing anchor: %v", err)
	}
	if _, err := instrument(scriptStreamAppend, nil, "no such flush", false); err == nil {
		t.Error("a missing flush anchor was accepted")
	}
}

func TestRegionRows(t *testing.T) {
	order, vals := regionRows([]string{"@a=3 hget=1 hget=2 end=9", "@a=5 hget=3 hget=4 end=11"})
	if want := []string{"@a", "hget", "hget#2", "end"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if mean(vals["@a"]) != 4 || mean(vals["hget#2"]) != 3 || mean(vals["end"]) != 10 {
		t.Fatalf("values %v", vals)
	}
}

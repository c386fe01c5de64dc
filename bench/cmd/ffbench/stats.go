package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Latency summarises a sample of durations, in milliseconds.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	q := func(p float64) float64 {
		// nearest rank
		i := int(math.Ceil(p*float64(len(s)))) - 1
		i = min(max(i, 0), len(s)-1)
		return ms(s[i])
	}
	return Latency{N: len(s), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s)))}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// stamps records, per job sequence number, when it was submitted and when
// its handler started.
type stamps struct {
	base    int64
	submit  []atomic.Int64 // unix ns
	started []atomic.Int64
}

func newStamps(base int64, n int) *stamps {
	return &stamps{base: base, submit: make([]atomic.Int64, n), started: make([]atomic.Int64, n)}
}

func (s *stamps) markSubmit(seq int64, t time.Time) {
	if i := seq - s.base; i >= 0 && i < int64(len(s.submit)) {
		s.submit[i].Store(t.UnixNano())
	}
}

func (s *stamps) markStart(seq int64, t time.Time) {
	if i := seq - s.base; i >= 0 && i < int64(len(s.started)) {
		s.started[i].CompareAndSwap(0, t.UnixNano())
	}
}

// latencies returns handler start − submit for every job that has both.
func (s *stamps) latencies() []time.Duration {
	out := make([]time.Duration, 0, len(s.submit))
	for i := range s.submit {
		a, b := s.submit[i].Load(), s.started[i].Load()
		if a != 0 && b != 0 {
			out = append(out, time.Duration(b-a))
		}
	}
	return out
}

// firstStart returns the earliest handler start.
func (s *stamps) firstStart() time.Time {
	var first int64
	for i := range s.started {
		if v := s.started[i].Load(); v != 0 && (first == 0 || v < first) {
			first = v
		}
	}
	if first == 0 {
		return time.Time{}
	}
	return time.Unix(0, first)
}

// counter counts completions and records when a target count is reached.
type counter struct {
	n      atomic.Int64
	mu     sync.Mutex
	target int64
	at     time.Time
	ch     chan struct{}
}

func newCounter() *counter { return &counter{} }

// expect arms the counter: the returned channel closes once n completions
// have been counted in total.
func (c *counter) expect(n int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target, c.ch, c.at = n, make(chan struct{}), time.Time{}
	if c.n.Load() >= n {
		c.at = time.Now()
		close(c.ch)
		c.ch = nil
		return closed
	}
	return c.ch
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *counter) add(k int64) {
	v := c.n.Add(k)
	c.mu.Lock()
	if c.ch != nil && v >= c.target {
		c.at = time.Now()
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// reachedAt is when the armed target was reached.
func (c *counter) reachedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *counter) load() int64 { return c.n.Load() }

// cmdStat is one line of INFO commandstats.
type cmdStat struct {
	Calls int64
	Usec  int64
}

// cmdStats maps command name to its counters.
type cmdStats map[string]cmdStat

func parseCommandStats(info string) cmdStats {
	out := cmdStats{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}

// sub returns s − o per command, dropping zero rows.
func (s cmdStats) sub(o cmdStats) cmdStats {
	out := cmdStats{}
	for k, v := range s {
		d := cmdStat{Calls: v.Calls - o[k].Calls, Usec: v.Usec - o[k].Usec}
		if d.Calls != 0 {
			out[k] = d
		}
	}
	return out
}

func (s cmdStats) add(o cmdStats) cmdStats {
	out := cmdStats{}
	for k, v := range s {
		out[k] = v
	}
	for k, v := range o {
		c := out[k]
		c.Calls += v.Calls
		c.Usec += v.Usec
		out[k] = c
	}
	return out
}

// bench-own commands excluded from counts: our INFO/CONFIG/admin calls.
var ownCommands = map[string]bool{"info": true, "config|resetstat": true, "config|get": true,
	"flushall": true, "memory|purge": true, "memory|usage": true, "dbsize": true}

// total counts all calls except the bench's own admin commands.
func (s cmdStats) total() int64 {
	var n int64
	for k, v := range s {
		if !ownCommands[k] {
			n += v.Calls
		}
	}
	return n
}

// scripts counts script invocations (EVAL/EVALSHA/FCALL and _ro forms):
// each is one client round trip.
func (s cmdStats) scripts() int64 {
	var n int64
	for k, v := range s {
		if strings.HasPrefix(k, "eval") || strings.HasPrefix(k, "fcall") {
			n += v.Calls
		}
	}
	return n
}

// scriptUsec is the server time of script calls (a script call's time includes
// the commands it runs).
func (s cmdStats) scriptUsec() int64 {
	var n int64
	for k, v := range s {
		if strings.HasPrefix(k, "eval") || strings.HasPrefix(k, "fcall") {
			n += v.Usec
		}
	}
	return n
}

// nonScriptUsec is the time of every non-script command (for a script-only
// client: the commands the scripts ran).
func (s cmdStats) nonScriptUsec() int64 {
	var n int64
	for k, v := range s {
		if !ownCommands[k] && !strings.HasPrefix(k, "eval") && !strings.HasPrefix(k, "fcall") {
			n += v.Usec
		}
	}
	return n
}

// top returns the busiest commands as "name=calls" strings.
func (s cmdStats) top(k int, perJob float64) []string {
	type kv struct {
		k string
		v cmdStat
	}
	var all []kv
	for name, v := range s {
		if !ownCommands[name] {
			all = append(all, kv{name, v})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return int(b.v.Calls - a.v.Calls) })
	var out []string
	for i, e := range all {
		if i == k {
			break
		}
		if perJob > 0 {
			out = append(out, fmt.Sprintf("%s=%.2f/job (%.1fµs/call)", e.k, float64(e.v.Calls)/perJob, float64(e.v.Usec)/float64(max(e.v.Calls, 1))))
		} else {
			out = append(out, fmt.Sprintf("%s=%d", e.k, e.v.Calls))
		}
	}
	return out
}

// infoField reads "field:value" from an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

func infoFloat(info, field string) float64 {
	f, _ := strconv.ParseFloat(infoField(info, field), 64)
	return f
}

// serverProbe reads INFO from every node of a deployment.
type serverProbe struct{ addrs []string }

func (p serverProbe) commandStats() (cmdStats, error) {
	all := cmdStats{}
	for _, a := range p.addrs {
		info, err := redisDo(a, "INFO", "commandstats")
		if err != nil {
			return nil, err
		}
		all = all.add(parseCommandStats(info))
	}
	return all, nil
}

// cpuSeconds is the servers' used_cpu_user + used_cpu_sys.
func (p serverProbe) cpuSeconds() float64 {
	var s float64
	for _, a := range p.addrs {
		info, err := redisDo(a, "INFO", "cpu")
		if err != nil {
			continue
		}
		s += infoFloat(info, "used_cpu_user") + infoFloat(info, "used_cpu_sys")
	}
	return s
}

func (p serverProbe) usedMemory() (int64, error) {
	var n int64
	for _, a := range p.addrs {
		info, err := redisDo(a, "INFO", "memory")
		if err != nil {
			return 0, err
		}
		v, _ := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
		n += v
	}
	return n, nil
}

// flushAll empties every node and returns once the memory is free.
// Valkey 8 flushes lazily by default (lazyfree-lazy-user-flush yes), and
// a background free of the previous scenario's keys would show up in the
// next one's used_memory and CPU; SYNC (Redis ≥ 6.2) frees before replying.
func (p serverProbe) flushAll() error {
	for _, a := range p.addrs {
		if _, err := redisDo(a, "FLUSHALL", "SYNC"); err != nil && !strings.Contains(err.Error(), "READONLY") {
			return err
		}
	}
	return nil
}

// processCPU returns this process's user + system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// window snapshots server and client counters around a phase.
type window struct {
	cont    contention
	probe   *serverProbe
	start   time.Time
	cmds    cmdStats
	srvCPU  float64
	procCPU time.Duration
}

func openWindow(p *serverProbe) *window {
	w := &window{probe: p, start: time.Now(), procCPU: processCPU(), cont: snapContention()}
	if p != nil {
		w.cmds, _ = p.commandStats()
		w.srvCPU = p.cpuSeconds()
	}
	return w
}

// windowStats is what happened between openWindow and close.
type windowStats struct {
	Elapsed   time.Duration
	Cmds      cmdStats
	ServerCPU float64       // seconds
	ClientCPU time.Duration // this process
	// OtherCPU is the share of the machine used by processes outside the
	// bench (0.25: half a core of 2).
	OtherCPU float64
}

func (w *window) close() windowStats {
	ws := windowStats{Elapsed: time.Since(w.start), ClientCPU: processCPU() - w.procCPU, OtherCPU: w.cont.otherShare()}
	if w.probe != nil {
		c, _ := w.probe.commandStats()
		ws.Cmds = c.sub(w.cmds)
		ws.ServerCPU = w.probe.cpuSeconds() - w.srvCPU
	}
	return ws
}

// Host contention: CPU time used on the machine by processes outside the
// bench's process tree (the bench and the servers it started), from
// /proc. On a shared host this says how much of a measurement was
// disturbed.

// hostBusy returns the machine's busy CPU time (all cores) from /proc/stat.
func hostBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy uint64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseUint(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks
}

const clockTicks = 100 // USER_HZ on Linux

// treeCPU returns the CPU time (utime+stime) of this process and every live
// descendant, by pid.
func treeCPU() map[int]time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	cpu := map[int]time.Duration{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		parent[pid] = ppid
		cpu[pid] = time.Duration(ut+st) * time.Second / clockTicks
	}
	self := os.Getpid()
	out := map[int]time.Duration{}
	for pid, c := range cpu {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == self {
				out[pid] = c
				break
			}
		}
	}
	return out
}

// contention snapshots the host and the bench's tree.
type contention struct {
	host time.Duration
	tree map[int]time.Duration
	at   time.Time
}

func snapContention() contention {
	return contention{host: hostBusy(), tree: treeCPU(), at: time.Now()}
}

// otherShare returns the CPU used outside the bench's tree since c, as a
// fraction of the machine (1.0 = every core busy).
func (c contention) otherShare() float64 {
	now := snapContention()
	var own time.Duration
	for pid, v := range now.tree {
		own += v - c.tree[pid] // a new pid counts from zero
	}
	other := now.host - c.host - own
	wall := now.at.Sub(c.at)
	if wall <= 0 {
		return 0
	}
	return max(0, other.Seconds()/(wall.Seconds()*float64(runtime.NumCPU())))
}

// waitQuiet waits until processes outside the bench use less than
// threshold of the machine over a 2 s sample, for at most maxWait. It
// returns the last sample and how long it waited.
func waitQuiet(ctx context.Context, threshold float64, maxWait time.Duration) (float64, time.Duration) {
	start := time.Now()
	for {
		c := snapContention()
		select {
		case <-ctx.Done():
			return 0, time.Since(start)
		case <-time.After(2 * time.Second):
		}
		share := c.otherShare()
		if share < threshold || time.Since(start) >= maxWait {
			return share, time.Since(start)
		}
	}
}

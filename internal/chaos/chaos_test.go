package chaos

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
	"github.com/flowfabric/flowfabric/valkeystore"
)

var (
	flagJobs   = flag.Int("chaos.jobs", 600, "executions each chaos test submits")
	flagFaults = flag.Int("chaos.faults", 0, "faults each chaos test injects (0: the test's default)")
)

// leaseTTL is short so that recovery from a killed worker or a paused
// server shows within a bounded test.
const leaseTTL = time.Second

var prefixSeq atomic.Int64

// drain is one chaos run: a server (or cluster), worker processes sharing
// a ledger, and an engine in the test process that submits, recovers
// leases with its scanners, and checks the outcome.
type drain struct {
	t      *testing.T
	addrs  []string
	prefix string
	ledger string
	dir    string
	engine *flowfabric.Engine
	store  *valkeystore.Store
	// stalled, when set, describes the store's state for a run whose
	// acknowledged executions did not all complete (what holds them).
	stalled func(context.Context) string
	procs   map[string]*proc // running worker processes by name
	gens    map[string]int
	starts  int // worker processes started, for the script calls they use
	rng     *rand.Rand

	submitted int
	acked     []model.ExecutionID
	faults    []fault
}

// fault is one injected fault: what, when it began and when it ended
// (the restart, resume or kill), and for a killed worker its instance.
type fault struct {
	what       string
	begin, end time.Time
	instance   string
}

type proc struct {
	name, instance string
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	done           chan struct{}
}

func newDrain(t *testing.T, addrs ...string) *drain {
	t.Helper()
	dir := t.TempDir()
	d := &drain{
		t: t, addrs: addrs, dir: dir,
		prefix: fmt.Sprintf("chaos%d", prefixSeq.Add(1)),
		ledger: filepath.Join(dir, "ledger"),
		procs:  map[string]*proc{}, gens: map[string]int{},
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)),
	}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := valkeystore.New(c, &valkeystore.Options{Prefix: d.prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	d.store = s
	d.engine = newEngine(s, nil)
	if err := d.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// worker processes first (they stop cleanly once stdin closes),
		// then the engine
		for _, name := range slices.Sorted(maps.Keys(d.procs)) {
			d.stopWorker(name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.engine.Stop(ctx)
	})
	return d
}

// startWorker starts worker process name under a new instance id (a
// restarted worker is a new instance, as after a crash). Every second
// process started runs its scripts with EVALSHA, the others as functions
// (the default on a server that has them, as the test process's engine
// does): a drain's executions pass between processes of both ways, each
// way meets the faults, and both come back after a server that lost its
// scripts and library.
func (d *drain) startWorker(name string) {
	d.t.Helper()
	d.gens[name]++
	d.starts++
	calls := valkeystore.ScriptCallsAuto
	if d.starts%2 == 0 {
		calls = valkeystore.ScriptCallsEval
	}
	inst := fmt.Sprintf("%s-%d-%s", name, d.gens[name], cmp.Or(string(calls), "auto"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envAddrs+"="+strings.Join(d.addrs, ","), envPrefix+"="+d.prefix, envLedger+"="+d.ledger,
		envInstance+"="+inst, envLeaseMS+"="+strconv.Itoa(int(leaseTTL/time.Millisecond)),
		envScriptCalls+"="+string(calls))
	out, err := os.Create(filepath.Join(d.dir, inst+".log"))
	if err != nil {
		d.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	p := &proc{name: name, instance: inst, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	d.procs[name] = p
}

// killWorker kills worker process name with SIGKILL: its goroutines stop
// wherever they are and its leases are left to expire.
func (d *drain) killWorker(name string) string {
	p := d.procs[name]
	_ = p.cmd.Process.Kill()
	<-p.done
	delete(d.procs, name)
	return p.instance
}

// stopWorker closes worker name's stdin and waits for it to stop (killing
// it after a bound).
func (d *drain) stopWorker(name string) {
	p := d.procs[name]
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(45 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		d.t.Errorf("worker %s did not stop within 45s of its stdin closing (log %s)", p.instance, filepath.Join(d.dir, p.instance+".log"))
	}
	delete(d.procs, name)
}

// submit submits n executions, every tenth of them as a node of a chain
// of three on the spread flow lane, whose middle node awaits two children
// before it completes; those the engine acknowledges must complete (a
// flow's nodes when SubmitFlow returned, and so their children). Submissions that
// fail (the server is down) are counted but not expected.
func (d *drain) submit(n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if i%30 == 0 && i+3 <= n {
			f := flowfabric.NewFlow()
			var prev *flowfabric.FlowNode
			for j := range 3 {
				node := f.Add(job{N: i + j, Fanout: j == 1}, &flowfabric.SubmitOpts{Lane: flowLane})
				if prev != nil {
					node.After(prev)
				}
				prev = node
			}
			d.submitted += 3
			if r, err := d.engine.SubmitFlow(ctx, f, nil); err == nil {
				d.acked = append(d.acked, r.Executions...)
			}
			i += 2
			continue
		}
		d.submitted++
		r, err := d.engine.Submit(ctx, job{N: i}, nil)
		if err == nil {
			d.acked = append(d.acked, r.ID)
		}
	}
}

// entry is one ledger line.
type entry struct {
	at       time.Time
	event    string
	id       string
	epoch    uint64
	instance string
}

func (d *drain) read() []entry {
	d.t.Helper()
	f, err := os.Open(d.ledger)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		d.t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line cut by a kill mid-write cannot happen (one write each); be lenient anyway
		}
		ns, _ := strconv.ParseInt(fs[0], 10, 64)
		ep, _ := strconv.ParseUint(fs[3], 10, 64)
		out = append(out, entry{time.Unix(0, ns), fs[1], fs[2], ep, fs[4]})
	}
	return out
}

// completedCount is the number of distinct executions with an
// acknowledged completion.
func completedCount(es []entry) int {
	seen := map[string]bool{}
	for _, e := range es {
		if e.event == "completed" {
			seen[e.id] = true
		}
	}
	return len(seen)
}

// progressed waits (on the wall clock: the servers and processes are
// real) until n more completions than before are in the ledger, or fails
// after bound.
func (d *drain) progressed(before, n int, bound time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(bound)
	for completedCount(d.read()) < before+n {
		if time.Now().After(deadline) {
			d.t.Fatalf("no progress: %d completions in %v after a fault (want %d)\n%s", completedCount(d.read())-before, bound, n, d.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish waits until every acknowledged execution has completed in the
// store, then checks and reports the run. It gives up once no pending
// execution has completed for stall: a bound on liveness, not on
// throughput, so a drain slowed by a loaded machine (a full race run
// shares two cores with every other package) still finishes, while a
// slot, lease or execution left held fails it. Every recovery a drain
// relies on (lease expiry, a lapsed grant, the quota releaser, the
// unblock scanner) comes back within seconds; the one slower backstop,
// the quota reconciler's grace (scan.DefaultAdmissionGrace), is longer
// than the stall bounds the tests give, so a slot only it would free
// still fails the run.
func (d *drain) finish(stall time.Duration) {
	d.t.Helper()
	if stall >= scan.DefaultAdmissionGrace {
		d.t.Fatalf("finish: a stall bound of %v would let a slot only the quota reconciler frees (grace %v) pass", stall, scan.DefaultAdmissionGrace)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pending := map[model.ExecutionID]bool{}
	for _, id := range d.acked {
		pending[id] = true
	}
	started := time.Now()
	progressed, longest := started, time.Duration(0)
	for len(pending) > 0 && time.Since(progressed) < stall {
		before := len(pending)
		for _, id := range slices.SortedFunc(maps.Keys(pending), model.ExecutionID.Compare) {
			dctx, dcancel := context.WithTimeout(ctx, stall)
			snap, err := d.engine.Describe(dctx, id)
			dcancel()
			if err == nil && snap.PublicState == model.PublicCompleted {
				delete(pending, id)
			}
		}
		if len(pending) < before {
			longest = max(longest, time.Since(progressed))
			progressed = time.Now()
		}
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	es := d.read()
	var lost, twice, recovered int
	attempts := map[model.ExecutionID][]model.Attempt{}
	for _, id := range d.acked {
		snap, err := d.engine.Describe(ctx, id)
		if err != nil {
			d.t.Fatalf("describe %s: %v", id, err)
		}
		if snap.PublicState != model.PublicCompleted {
			lost++
			if lost <= 5 {
				d.t.Errorf("acknowledged %s is %s, not completed", id, snap.PublicState)
			}
			continue
		}
		atts, err := d.engine.Attempts(ctx, id)
		if err != nil {
			d.t.Fatalf("attempts %s: %v", id, err)
		}
		attempts[id] = atts
		succ := 0
		for _, a := range atts {
			if a.Status == model.AttemptEndedSuccess {
				succ++
			}
		}
		if succ != 1 {
			twice++
			d.t.Errorf("%s has %d successful attempts", id, succ)
		}
		if len(atts) > 1 {
			recovered++
		}
	}
	// acknowledged completions per execution in the ledger (a replayed
	// one is not logged; a worker killed right after its completion
	// returned may not have logged it)
	acks := map[string]int{}
	doneBy := map[string]bool{} // id/epoch whose handler succeeded
	completedEpoch := map[string]bool{}
	for _, e := range es {
		key := e.id + "/" + strconv.FormatUint(e.epoch, 10)
		switch e.event {
		case "completed":
			acks[e.id]++
			completedEpoch[key] = true
		case "done":
			doneBy[key] = true
		}
	}
	for id, n := range acks {
		if n > 1 {
			twice++
			d.t.Errorf("%s: %d acknowledged completions", id, n)
		}
	}
	unacked := 0 // handler successes whose completion is not in the ledger: a kill, a lost reply, or a lost lease
	for key := range doneBy {
		if !completedEpoch[key] {
			unacked++
		}
	}
	d.t.Logf("submitted %d, acknowledged %d, completed %d, recovered (more than one attempt) %d, "+
		"handler successes without an acknowledged completion %d, lost %d, completed twice %d",
		d.submitted, len(d.acked), len(d.acked)-lost, recovered, unacked, lost, twice)
	for _, f := range d.faults {
		what := "next acknowledged completion " + recovery(f, es).Round(time.Millisecond).String() + " after it"
		if f.instance != "" {
			n, worst := orphans(f, attempts)
			what = fmt.Sprintf("%d executions left behind, the last completed elsewhere %v after the kill", n, worst.Round(time.Millisecond))
		}
		d.t.Logf("%s: %s", f.what, what)
	}
	d.t.Logf("the drain's end took %v after the last fault, the longest wait between completions seen %v",
		progressed.Sub(started).Round(time.Millisecond), longest.Round(time.Millisecond))
	if lost > 0 {
		d.t.Logf("no pending execution completed for %v", stall)
	}
	if lost > 0 && d.stalled != nil {
		d.t.Logf("what holds them:\n%s", d.stalled(ctx))
	}
	if lost > 0 || twice > 0 {
		d.t.Fatalf("lost %d, completed twice %d (ledger %s)", lost, twice, d.ledger)
	}
}

// logs returns the tail of every worker process's log, for a failure.
func (d *drain) logs() string {
	var b strings.Builder
	names, _ := filepath.Glob(filepath.Join(d.dir, "*.log"))
	for _, n := range names {
		data, _ := os.ReadFile(n)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "---- %s\n%s\n", filepath.Base(n), data)
	}
	return b.String()
}

// recovery is, for a server fault, the time from its end to the next
// acknowledged completion (-1: none).
func recovery(f fault, es []entry) time.Duration {
	for _, e := range es {
		if e.event == "completed" && e.at.After(f.end) {
			return e.at.Sub(f.end)
		}
	}
	return -1
}

// orphans counts the executions a killed worker instance held (an attempt
// of it that did not succeed) and how long after the kill the last of
// them completed elsewhere (its successful attempt's end).
func orphans(f fault, attempts map[model.ExecutionID][]model.Attempt) (int, time.Duration) {
	n, worst := 0, time.Duration(0)
	for _, atts := range attempts {
		held := false
		var done time.Time
		for _, a := range atts {
			if string(a.WorkerInstanceID) == f.instance && a.Status != model.AttemptEndedSuccess {
				held = true
			}
			if a.Status == model.AttemptEndedSuccess {
				done = a.EndedAt
			}
		}
		if held {
			n++
			worst = max(worst, done.Sub(f.end))
		}
	}
	return n, worst
}

func faults(def int) int {
	if *flagFaults > 0 {
		return *flagFaults
	}
	return def
}

// Worker processes are killed with SIGKILL and restarted while they
// drain: the killed workers' executions are recovered after their leases
// expire, and each completes once.
func TestWorkersKilled(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	d := newDrain(t, srv.Addr())
	names := []string{"w1", "w2", "w3"}
	for _, n := range names {
		d.startWorker(n)
	}
	n := faults(6)
	for range n {
		before := completedCount(d.read())
		d.submit(*flagJobs / n)
		d.killMidDrain(before, 20, names)
	}
	d.finish(time.Minute)
}

// killMidDrain waits for n completions more than before, then kills one
// of the named workers with SIGKILL, records the fault and restarts it.
func (d *drain) killMidDrain(before, n int, names []string) {
	d.t.Helper()
	d.progressed(before, n, 30*time.Second)
	name := names[d.rng.IntN(len(names))]
	at := time.Now()
	inst := d.killWorker(name)
	d.faults = append(d.faults, fault{what: "SIGKILL " + inst, begin: at, end: time.Now(), instance: inst})
	d.startWorker(name)
}

// The server (appendfsync always) is killed with SIGKILL mid-drain and
// restarted on its append-only file: nothing acknowledged is lost.
func TestServerKilled(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	d := newDrain(t, srv.Addr())
	d.startWorker("w1")
	d.startWorker("w2")
	n := faults(2)
	for range n {
		before := completedCount(d.read())
		d.submit(*flagJobs / n)
		d.progressed(before, 20, 30*time.Second)
		at := time.Now()
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		d.submit(5) // refused while down; not acknowledged, not expected
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		d.faults = append(d.faults, fault{what: "server SIGKILL + restart", begin: at, end: time.Now()})
	}
	d.finish(time.Minute)
}

// The server is paused with SIGSTOP for longer than the lease: when it
// continues, every lease has expired by the workers' clocks; renewals and
// completions of the old leases are refused, the work is recovered, and
// each execution completes once.
func TestServerPaused(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	d := newDrain(t, srv.Addr())
	d.startWorker("w1")
	d.startWorker("w2")
	for range faults(1) {
		before := completedCount(d.read())
		d.submit(*flagJobs)
		d.progressed(before, 20, 30*time.Second)
		at := time.Now()
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(leaseTTL * 5 / 2)
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
		d.faults = append(d.faults, fault{what: fmt.Sprintf("server SIGSTOP for %v", leaseTTL*5/2), begin: at, end: time.Now()})
	}
	d.finish(time.Minute)
}

// A master of a 3-master cluster (append-only, no replicas) is killed and
// restarted with its data and identity: executions in its slots wait, the
// rest go on, and nothing is lost.
func TestClusterMasterKilled(t *testing.T) {
	cl := redisserver.StartClusterWith(t, 3, &redisserver.Options{AppendOnly: true})
	d := newDrain(t, cl.Addrs()...)
	d.startWorker("w1")
	d.startWorker("w2")
	for range faults(1) {
		before := completedCount(d.read())
		d.submit(*flagJobs)
		d.progressed(before, 20, 30*time.Second)
		node := cl.Nodes[d.rng.IntN(len(cl.Nodes))]
		at := time.Now()
		if err := node.Kill(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if err := node.Restart(); err != nil {
			t.Fatal(err)
		}
		if err := cl.WaitReady(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		d.faults = append(d.faults, fault{what: "cluster master " + node.Addr() + " SIGKILL + restart", begin: at, end: time.Now()})
	}
	d.finish(time.Minute)
}

package sim

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// Options describe one run. The zero value of a field means its default.
type Options struct {
	Seed uint64
	// Steps is how many workload steps run before the drain (default 300).
	Steps int
	// Faults are the store faults (nil: DefaultFaults). NoFaults turns
	// them off.
	Faults   *Faults
	NoFaults bool
	// NoKills turns off process deaths and graceful stops; NoOperator the
	// operator's cancels, revokes, replays and reclaims.
	NoKills    bool
	NoOperator bool
	// NoFlows turns off flow submissions.
	NoFlows bool
	// NoSuspend turns off the suspending kinds and the outside world that
	// signals them (sim/suspend.go).
	NoSuspend bool
	// NoAdmission turns off budgets and quotas: the spend kind, the
	// attachments of submissions and the admission actor
	// (sim/admission.go).
	NoAdmission bool
	// NoStreams turns off attempt output streams: the stream kind, the
	// frames other handlers append and the observer (sim/stream.go).
	NoStreams bool
	// NoRetention turns off the retention workload: short retentions
	// and operator deletes (sim/retention.go).
	NoRetention bool
	// Calm runs a healthy system: no faults, no process deaths, stalls,
	// stops or clock jumps (NoFaults and NoKills). There a lease must never
	// expire (every one is renewed in time or given back) and the engines
	// log no warning or error.
	Calm bool
	// FailAt injects a violation at that workload step (tests of the
	// simulator itself: shrinking).
	FailAt int
}

func (o Options) withDefaults() Options {
	if o.Steps == 0 {
		o.Steps = 300
	}
	if o.Calm {
		o.NoFaults, o.NoKills = true, true
	}
	if o.Faults == nil {
		f := DefaultFaults
		o.Faults = &f
	}
	return o
}

// Result is what a run found.
type Result struct {
	Options Options
	// Log is the event log: one line per step, store call, notification
	// and engine log record. The same options give the same log, byte for
	// byte.
	Log []string
	// Violations are the broken invariants; empty when the run passed.
	Violations []string
	// Submitted counts acknowledged submissions, Completed the
	// executions that ended completed.
	Submitted, Completed int
	// Drain is how long (simulated) the quiet drain took.
	Drain time.Duration
	// Suspend counts what the suspension workload did.
	Suspend SuspendStats
	// Admission counts what the admission workload did.
	Admission AdmissionStats
	// Stream counts what the stream workload did.
	Stream StreamStats
	// Retention counts the deletes (sim/retention.go).
	Retention RetentionStats
}

// RetentionStats counts the retention workload's deletes: all of them,
// and those the retention trimmer made.
type RetentionStats struct {
	Deleted, Trimmed int
	// Flows counts the flows deleted whole (by an operator or the
	// trimmer), FlowsTrimmed those the trimmer deleted; their members
	// count in Deleted and Trimmed.
	Flows, FlowsTrimmed int
}

// Failed reports whether the run broke an invariant.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// History is the log as one text.
func (r *Result) History() string { return strings.Join(r.Log, "\n") }

// Focus is the part of the log about the executions the violations name
// (by alias), with the process events (starts, deaths, stalls, stops,
// clock jumps, the drain) around them: the readable story of a failure.
// It is the whole log when the violations name no execution.
func (r *Result) Focus() string {
	names := map[string]bool{}
	for _, v := range r.Violations {
		for _, m := range aliasPattern.FindAllString(v, -1) {
			names[m] = true
		}
	}
	if len(names) == 0 {
		return r.History()
	}
	var out []string
	for _, line := range r.Log {
		keep := strings.Contains(line, "process ") || strings.Contains(line, "clock jump") ||
			strings.Contains(line, "drain:") || strings.Contains(line, "VIOLATION") || strings.Contains(line, " seed ")
		for _, m := range aliasPattern.FindAllString(line, -1) {
			keep = keep || names[m]
		}
		if keep {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// aliasPattern matches an execution's alias in the log.
var aliasPattern = regexp.MustCompile(`\bx[0-9]+\b`)

// start is the simulated time every run starts at.
var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	// lanes: "s" is spread over the partitions (Config.Lanes), the
	// others each live on one partition.
	lanes = []model.LaneID{"a", "b", "s"}
	caps  = []string{"gpu", "eu"}
	// namespaces: a process belongs to one; a drain process starts in each
	namespaces = []model.Namespace{model.DefaultNamespace, "other"}
	kinds      = []model.Kind{"ok", "flaky", "perm", "panic", "snooze", "slow", "stubborn", "hang", "selfcancel"}
)

// world is one run.
type world struct {
	o        Options
	rng      *rand.Rand
	sched    *Sched
	raw      *memstore.Store
	st       *Store
	faultsOn bool
	// deadNames are the instance ids of dead processes' workers, free to
	// be reused by a new process
	deadNames []model.WorkerInstanceID
	rates     Faults // this seed's fault rates
	// leaseWatches are the lease watches the engines opened
	leaseWatches []leaseWatch
	// recent are recent calls that may be delivered again later
	recent   []func()
	procs    []*process
	nextProc int

	log     []string
	aliases map[model.ExecutionID]string
	acked   []model.ExecutionID
	isAcked map[model.ExecutionID]bool
	// inFlow are the acknowledged flow nodes; keyedFlows the flows built
	// with an idempotency key, which a later submission may repeat.
	inFlow     map[model.ExecutionID]bool
	keyedFlows []*simFlow
	flowIDs    []model.FlowID
	viol       []string
	step       int
	draining   bool
	terminal   map[model.ExecutionID]bool // found terminal during the drain

	// sus is the suspension workload and its outside world
	sus suspendState
	// adm is the budget and quota workload (sim/admission.go)
	adm admState
	// str is the attempt stream workload (sim/stream.go)
	str streamState

	// checks
	completes map[model.ExecutionID]int // successful completions since the last replay
	pre       *model.ExecutionSnapshot  // the execution before a fenced call

	// the retention workload (sim/retention.go): the execution before a
	// delete, the deleted executions, the counts
	preDelete *model.ExecutionSnapshot
	// preFlow is the flow a FlowDelete is about to remove and its
	// members (sim/retention.go); unkeyed are the flows submitted without
	// an idempotency key (their ids are never made again, so they may be
	// deleted).
	preFlow     *model.FlowSnapshot
	preMembers  []*model.ExecutionSnapshot
	unkeyed     map[model.FlowID]bool
	unkeyedList []model.FlowID
	// keyed are the flows a submission with a key returned: they never
	// have a short retention, so nothing may delete them
	keyed   map[model.FlowID]bool
	deleted map[model.ExecutionID]bool
	stats   RetentionStats
}

// process is one engine process: an engine, its workers and its scanners.
type process struct {
	n        int
	ns       model.Namespace
	engine   *flowfabric.Engine
	workers  []*simWorker
	scanners []scan.Scanner
	scanning map[string]bool // a pass of the scanner is running
	dead     bool
	stopping bool
	stopped  bool
}

type simWorker struct {
	w        *flowfabric.Worker
	started  bool
	starting bool
}

// Run runs one simulation.
func Run(o Options) *Result {
	o = o.withDefaults()
	w := &world{
		o:     o,
		rng:   rand.New(rand.NewPCG(o.Seed, 0x5eed)),
		sched: NewSched(start),
		raw: memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: 4, BudgetPartitions: 2,
			QuotaPartitions: 2}}),
		aliases:   map[model.ExecutionID]string{},
		isAcked:   map[model.ExecutionID]bool{},
		inFlow:    map[model.ExecutionID]bool{},
		unkeyed:   map[model.FlowID]bool{},
		keyed:     map[model.FlowID]bool{},
		completes: map[model.ExecutionID]int{},
		terminal:  map[model.ExecutionID]bool{},
		deleted:   map[model.ExecutionID]bool{},
		sus:       newSuspendState(),
		str:       newStreamState(),
	}
	w.st = &Store{Store: w.raw, w: w}
	w.adm = newAdmState(w)
	// each seed scales the fault rates by 0–3, so some histories are
	// quiet and some are storms
	scale := w.rng.IntN(4)
	w.rates = Faults{FailBefore: o.Faults.FailBefore * scale, LoseReply: o.Faults.LoseReply * scale,
		Duplicate: o.Faults.Duplicate * scale, Slow: o.Faults.Slow * scale, DropWork: o.Faults.DropWork * scale,
		DupWork: o.Faults.DupWork * scale, BlurWork: o.Faults.BlurWork * scale, DropLease: o.Faults.DropLease * scale,
		Recheck: o.Faults.Recheck * scale, Late: o.Faults.Late * scale, DropStream: o.Faults.DropStream * scale,
		DupStream: o.Faults.DupStream * scale}
	w.faultsOn = !o.NoFaults
	defer w.sched.Close()
	w.logf("seed %d steps %d faults %+v (×%d) kills %v operator %v", o.Seed, o.Steps, *o.Faults, scale, !o.NoKills, !o.NoOperator)
	w.startProcess(false, model.DefaultNamespace)
	w.startProcess(false, w.namespace())
	if !o.NoAdmission {
		// both first processes create every policy, concurrently
		w.createPolicies(w.procs[0], true)
		w.createPolicies(w.procs[1], true)
	}
	for w.step = 1; w.step <= o.Steps && len(w.viol) == 0; w.step++ {
		w.stepOnce()
		if w.step == o.FailAt {
			w.violate("injected failure at step %d", w.step)
		}
		if w.step%50 == 0 {
			w.checkpoint()
		}
	}
	drainStart := w.sched.now
	if len(w.viol) == 0 {
		w.drain()
	}
	res := &Result{Options: o, Log: w.log, Violations: w.viol, Submitted: len(w.acked), Drain: w.sched.now.Sub(drainStart),
		Suspend: w.sus.stats, Admission: w.adm.stats, Stream: w.str.stats, Retention: w.stats}
	for _, id := range w.liveAcked() {
		if s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: id}); err == nil &&
			s.State.TerminalOutcome == model.OutcomeSuccess {
			res.Completed++
		}
	}
	return res
}

func (w *world) faults() *Faults {
	if !w.faultsOn {
		return nil
	}
	return &w.rates
}

func (w *world) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%9.3fs ", w.sched.now.Sub(start).Seconds())+fmt.Sprintf(format, args...))
}

func (w *world) violate(format string, args ...any) {
	msg := w.aliasIDs(fmt.Sprintf(format, args...))
	w.logf("VIOLATION: %s", msg)
	w.viol = append(w.viol, msg)
}

// alias is an execution's short name in the log, in order of first
// appearance.
func (w *world) alias(id model.ExecutionID) string {
	if id.IsZero() {
		return "-"
	}
	a, ok := w.aliases[id]
	if !ok {
		a = fmt.Sprintf("x%d", len(w.aliases)+1)
		w.aliases[id] = a
	}
	return a
}

// owner is the process of the running proc (or the one the driver acts
// for).
func (w *world) owner() int {
	if p := w.sched.cur; p != nil {
		return p.owner
	}
	return w.sched.owner
}

// who names the running proc in the log.
func (w *world) who() string {
	if p := w.sched.cur; p != nil {
		return fmt.Sprintf("P%d/g%d", p.owner, p.id)
	}
	return "driver"
}

// live returns the processes that may act.
func (w *world) live() []*process {
	var out []*process
	for _, p := range w.procs {
		if !p.dead && !p.stopped && !p.stopping {
			out = append(out, p)
		}
	}
	return out
}

// pick returns a random element.
func pick[T any](w *world, xs []T) T { return xs[w.rng.IntN(len(xs))] }

// subset returns a random subset of xs (maybe empty).
func subset[T any](w *world, xs []T) []T {
	var out []T
	for _, x := range xs {
		if w.rng.IntN(2) == 0 {
			out = append(out, x)
		}
	}
	return out
}

// dur returns a random duration in [lo, hi], in whole milliseconds (the
// stores' unit).
func (w *world) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.rng.Int64N(int64((hi-lo)/time.Millisecond)+1))*time.Millisecond
}

// startProcess starts a new engine process with one or two workers. full
// gives its worker every lane and capability (the drain's process).
func (w *world) startProcess(full bool, ns model.Namespace) *process {
	w.nextProc++
	p := &process{n: w.nextProc, ns: ns, scanning: map[string]bool{}}
	w.sched.SetOwner(p.n)
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(w.rng.IntN(256))
	}
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	p.engine = flowfabric.New(w.st, &flowfabric.Config{
		Clock: w.sched, Entropy: rand.NewChaCha8(seed), Namespace: ns, Logger: slog.New(&logHandler{w: w, p: p.n, h: logger.Handler(), buf: &buf}),
		DefaultRetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 2, InitialDelay: 500 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second},
		Claim:              flowfabric.ClaimConfig{LiveCapsTTL: time.Second, ProbePartitions: 2},
		Lanes:              map[model.LaneID]flowfabric.LaneConfig{"s": {Spread: true}},
		WaitpointKeys:      waitpointKeys,
	})
	p.scanners = p.engine.Scanners()
	nw := 1 + w.rng.IntN(2)
	if full {
		nw = 1
	}
	for i := range nw {
		cfg := &flowfabric.WorkerConfig{
			WorkerID:      model.WorkerID(fmt.Sprintf("w%d", i)),
			InstanceID:    w.instanceID(p.n, i, full),
			Lanes:         subset(w, lanes),
			Capabilities:  subset(w, caps),
			MaxConcurrent: 1 + w.rng.IntN(3),
			LeaseTTL:      w.dur(2*time.Second, 6*time.Second),
			PollInterval:  w.dur(time.Second, 5*time.Second),
			DrainTimeout:  w.dur(100*time.Millisecond, 3*time.Second),
		}
		if len(cfg.Lanes) == 0 || full {
			cfg.Lanes = lanes
		}
		if full {
			cfg.Capabilities = caps
			cfg.MaxConcurrent = 4
		}
		sw := &simWorker{w: flowfabric.NewWorker(p.engine, cfg)}
		for _, k := range append(kinds[:len(kinds):len(kinds)], "fanout") {
			if err := sw.w.HandleRaw(k, w.admTrack(w.streamTrack(w.handler(k, cfg.LeaseTTL), cfg.LeaseTTL))); err != nil {
				panic(err)
			}
		}
		for _, k := range suspendKinds {
			if err := sw.w.HandleRaw(k, w.admTrack(w.streamTrack(w.suspendHandler(k), cfg.LeaseTTL))); err != nil {
				panic(err)
			}
		}
		if err := sw.w.HandleRaw("spend", w.admTrack(w.streamTrack(w.spendHandler, cfg.LeaseTTL))); err != nil {
			panic(err)
		}
		if err := sw.w.HandleRaw("stream", w.admTrack(w.streamHandler(cfg.LeaseTTL))); err != nil {
			panic(err)
		}
		p.workers = append(p.workers, sw)
		w.logf("process %d (%s) worker %s lanes %v caps %v slots %d lease %v", p.n, ns, cfg.InstanceID, cfg.Lanes, cfg.Capabilities,
			cfg.MaxConcurrent, cfg.LeaseTTL)
	}
	w.procs = append(w.procs, p)
	for _, sw := range p.workers {
		w.startWorker(p, sw)
	}
	return p
}

// namespace is a new process's namespace: mostly the default one.
func (w *world) namespace() model.Namespace {
	if w.rng.IntN(4) == 0 {
		return namespaces[1]
	}
	return namespaces[0]
}

// instanceID names worker i of process n. A process started after
// another died sometimes reuses the dead one's names, as a restarted
// host does: its start is refused while the dead registration is live
// (model.ErrDuplicateWorker) and retried.
func (w *world) instanceID(n, i int, fresh bool) model.WorkerInstanceID {
	if len(w.deadNames) > 0 && !fresh && w.rng.IntN(2) == 0 {
		k := w.rng.IntN(len(w.deadNames))
		name := w.deadNames[k]
		w.deadNames = slices.Delete(w.deadNames, k, k+1)
		return name
	}
	return model.WorkerInstanceID(fmt.Sprintf("P%d.w%d", n, i))
}

// startWorker starts sw in a proc of p (again after a failed start).
func (w *world) startWorker(p *process, sw *simWorker) {
	sw.starting = true
	w.spawn(p, func() {
		err := sw.w.Start(context.Background())
		sw.starting = false
		if err != nil {
			w.logf("process %d: start %s: %v", p.n, sw.w.Config().InstanceID, errCode(err))
			return
		}
		sw.started = true
	})
}

// spawn starts f as a proc of process p.
func (w *world) spawn(p *process, f func()) {
	w.sched.SetOwner(p.n)
	w.sched.Go(f)
}

// stepOnce takes one seeded step of the workload.
func (w *world) stepOnce() {
	live := w.live()
	if f := w.faults(); f != nil && w.rng.IntN(1000) < f.Recheck {
		w.recheck()
	}
	if f := w.faults(); f != nil && w.rng.IntN(1000) < f.Late {
		w.redeliver()
	}
	if !w.o.NoSuspend {
		w.outsideTick()
		if len(live) > 0 && w.rng.IntN(1000) < 40 {
			w.outside(pick(w, live))
		}
	}
	if !w.o.NoAdmission && len(live) > 0 && w.rng.IntN(1000) < 25 {
		w.admActor(pick(w, live))
	}
	if !w.o.NoStreams && len(live) > 0 && w.rng.IntN(1000) < 60 {
		w.streamObserver(pick(w, live))
	}
	r := w.rng.IntN(1000)
	switch {
	case r < 720:
		// Time moves only when no goroutine can run (a runnable goroutine
		// gets a CPU at once); starvation is what stalls and jumps model.
		if run := w.sched.Runnable(); len(run) > 0 {
			w.runProc(pick(w, run))
			return
		}
		if r < 650 {
			d := w.dur(time.Millisecond, 500*time.Millisecond)
			if t, ok := w.sched.NextDeadline(); ok && t.Before(w.sched.now.Add(d)) {
				w.sched.AdvanceTo(t)
			} else {
				w.sched.Advance(d)
			}
			return
		}
		w.advanceToNext()
	case r < 725:
		if !w.o.NoKills {
			d := w.dur(5*time.Second, 90*time.Second)
			w.logf("clock jump +%v", d)
			w.sched.Advance(d)
		}
	case r < 815:
		if len(live) > 0 {
			w.submit(pick(w, live))
		}
	case r < 830:
		if len(live) > 0 && !w.o.NoFlows {
			w.submitFlow(pick(w, live))
		}
	case r < 860:
		if len(live) > 0 && !w.o.NoOperator && len(w.acked) > 0 {
			w.operator(pick(w, live))
		}
	case r < 955:
		if len(live) > 0 {
			p := pick(w, live)
			w.scanPass(p, pick(w, p.scanners))
		}
	case r < 960:
		if len(live) > 0 && !w.o.NoKills {
			p := pick(w, live)
			w.logf("process %d dies", p.n)
			p.dead = true
			w.sched.Kill(p.n)
			for _, sw := range p.workers {
				w.deadNames = append(w.deadNames, sw.w.Config().InstanceID)
			}
		}
	case r < 965:
		if len(live) > 0 && !w.o.NoKills {
			w.stopProcess(pick(w, live))
		}
	case r < 970:
		if len(live) > 0 && !w.o.NoKills {
			p := pick(w, live)
			d := w.dur(time.Second, 15*time.Second)
			w.logf("process %d stalls for %v", p.n, d)
			w.sched.Pause(p.n, w.sched.now.Add(d))
		}
	case r < 990:
		if len(live) < 3 {
			w.startProcess(false, w.namespace())
		}
	default:
		w.restartWorkers()
	}
}

// restartWorkers starts again the workers whose start failed.
func (w *world) restartWorkers() {
	for _, p := range w.live() {
		for _, sw := range p.workers {
			if !sw.started && !sw.starting {
				w.startWorker(p, sw)
			}
		}
	}
}

// runProc runs p to its next yield point.
func (w *world) runProc(p *proc) {
	if v := w.sched.Step(p); v != nil {
		w.violate("goroutine g%d of process %d panicked: %v", p.id, p.owner, v)
	}
}

// advanceToNext moves the clock to the next deadline of a waiting proc.
func (w *world) advanceToNext() {
	if t, ok := w.sched.NextDeadline(); ok {
		w.sched.AdvanceTo(t)
	}
}

// stopProcess stops p's workers gracefully in a proc of p.
func (w *world) stopProcess(p *process) {
	w.logf("process %d stops", p.n)
	p.stopping = true
	w.spawn(p, func() {
		for _, sw := range p.workers {
			if err := sw.w.Stop(context.Background()); err != nil {
				w.logf("process %d: stop %s: %v", p.n, sw.w.Config().InstanceID, errCode(err))
			}
		}
		if err := p.engine.Stop(context.Background()); err != nil {
			w.logf("process %d: engine stop: %v", p.n, err)
		}
		p.stopped = true
		w.logf("process %d stopped", p.n)
	})
}

// scanPass runs one pass of sc in a proc of p.
func (w *world) scanPass(p *process, sc scan.Scanner) {
	if p.scanning[sc.Name()] {
		return // one goroutine per scanner, as scan.Runner runs them
	}
	p.scanning[sc.Name()] = true
	w.spawn(p, func() {
		// not deferred: a proc ended by Sched.Close runs its deferred
		// calls concurrently with others
		res, err := sc.RunOnce(context.Background())
		p.scanning[sc.Name()] = false
		if err != nil || res.Acted > 0 {
			w.logf("P%d scanner %s: acted %d errors %d err %v", p.n, sc.Name(), res.Acted, res.Errors, errCode(err))
		}
	})
}

// errCode shortens an error for the log.
func errCode(err error) string {
	if err == nil {
		return "<nil>"
	}
	var me *model.Error
	if asModel(err, &me) {
		return string(me.Code)
	}
	return err.Error()
}

// logHandler copies the engine's log records into the event log.
type logHandler struct {
	w   *world
	p   int
	h   slog.Handler
	buf *bytes.Buffer
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	h.buf.Reset()
	if err := h.h.Handle(ctx, r); err != nil {
		return err
	}
	line := h.w.aliasIDs(strings.TrimSpace(h.buf.String()))
	h.w.logf("P%d log %s", h.p, line)
	if h.w.o.Calm && r.Level >= slog.LevelWarn {
		// a warning needs an operator; a healthy system gives none
		h.w.violate("P%d logged in a calm run: %s", h.p, line)
	}
	return nil
}

// aliasIDs replaces the execution ids in s by their aliases.
func (w *world) aliasIDs(s string) string {
	return execIDPattern.ReplaceAllStringFunc(s, func(m string) string {
		if id, err := model.ParseExecutionID(m); err == nil {
			return w.alias(id)
		}
		return m
	})
}

// execIDPattern matches an execution id in the engine's log text; the
// event log shows its alias instead.
var execIDPattern = regexp.MustCompile(`\{fp:[0-9]+\}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{w: h.w, p: h.p, h: h.h.WithAttrs(as), buf: h.buf}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{w: h.w, p: h.p, h: h.h.WithGroup(name), buf: h.buf}
}

// sortedIDs returns ids in order.
func sortedIDs(ids []model.ExecutionID) []model.ExecutionID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b model.ExecutionID) int { return a.Compare(b) })
	return out
}

package flowfabric

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flowfabric/flowfabric/claim"
	"github.com/flowfabric/flowfabric/model"
)

// Worker defaults.
const (
	DefaultMaxConcurrent = 10
	DefaultLeaseTTL      = 30 * time.Second
	DefaultPollInterval  = time.Second
	// DefaultNotifiedPollInterval is the backstop poll on stores that
	// notify idle workers.
	DefaultNotifiedPollInterval = 5 * time.Second
	DefaultDrainTimeout         = 30 * time.Second
)

// WorkerConfig configures a Worker. Zero values mean the defaults.
type WorkerConfig struct {
	// WorkerID names the logical worker (default "worker").
	WorkerID model.WorkerID
	// InstanceID names this running instance; two live processes may not
	// share one (default: WorkerID plus a random suffix).
	InstanceID model.WorkerInstanceID
	// Lanes to claim from, in rotation (default: "default").
	Lanes []model.LaneID
	// Capabilities this worker offers; an execution runs here only if it
	// requires a subset of them. Tokens: non-empty, no comma, no whitespace
	// or control characters, at most 256, CSV at most 4096 bytes.
	Capabilities []string
	// MaxConcurrent bounds the tasks running at once (default 10).
	MaxConcurrent int
	// LeaseTTL is the lease length (default 30s); leases are renewed at
	// two thirds of it by one timer per worker.
	LeaseTTL time.Duration
	// PollInterval is the longest an idle worker waits before looking for
	// work again. Stores that notify (memstore, valkeystore) wake an idle
	// worker as soon as work arrives, so there it is only a backstop
	// (default 5s; 1s for stores that do not notify).
	PollInterval time.Duration
	// DrainTimeout is how long Stop lets running tasks finish before it
	// cancels them and releases their leases for other workers
	// (default 30s).
	DrainTimeout time.Duration
	// Middleware wraps every handler of the worker, the first outermost:
	// code before and after each attempt, values put in its context,
	// errors turned into others. A panic in a middleware is caught like
	// one in a handler (the attempt fails with category panic).
	Middleware []Middleware
	// OnError, when set, is told about every attempt that failed once the
	// engine has recorded what comes next: a retry at AttemptError.RetryAt,
	// or failed for good. It runs on the task's goroutine after the
	// outcome is stored, so it should return quickly (alerting, metrics).
	OnError func(ctx context.Context, t *TaskInfo, e *AttemptError)
	// OnOutcome, when set, is told what became of every run of a handler
	// once the engine has recorded it (see AttemptOutcome): completed,
	// failed (as OnError is told), snoozed, suspended, awaiting children,
	// cancelled, or not recorded (the lease was lost, the worker stopped).
	// It is called exactly once per run of the middleware and handler
	// (and once for a claimed kind the worker has no handler for, which
	// fails with category unknown_kind without running any), after
	// OnError, on the task's goroutine, so it should return quickly
	// (tracing, metrics).
	OnOutcome func(ctx context.Context, t *TaskInfo, o *AttemptOutcome)
}

// Worker claims executions and runs their handlers. Create it with
// NewWorker, register handlers with AddHandler, then Start and Stop it.
type Worker struct {
	engine *Engine
	// probed is its claims' claim.Request.Probed: partitions of spread
	// lanes known empty for less than its poll interval are skipped.
	probed  func(model.LaneID, int) (bool, func(bool))
	cfg     WorkerConfig
	caps    model.Capabilities
	cfgErr  error
	session string
	log     *slog.Logger

	mu       sync.Mutex
	handlers map[model.Kind]handlerEntry
	state    workerState
	inflight map[taskKey]*running
	free     int
	stopErr  error
	stopped  chan struct{}

	loopCancel  context.CancelFunc
	renewCancel context.CancelFunc
	taskCtx     context.Context
	taskCancel  context.CancelCauseFunc
	loops       sync.WaitGroup
	tasks       sync.WaitGroup
	wake        *model.Signal
	renewWake   *model.Signal
	// renewAt is when the renewal loop next wakes by itself (w.mu); a task
	// whose lease must be renewed before then wakes it early.
	renewAt time.Time
	drained *model.Signal
	crashed bool // tests: the process "died"; nothing more reaches the store
	// tasksClosed: Stop waits for the tasks; a claim returning now hands
	// its execution back instead of starting a task (w.mu).
	tasksClosed bool
	// taskN counts task goroutines (w.mu); the last one to end notifies
	// tasksIdle while it is still tracked by the clock.
	taskN     int
	tasksIdle *model.Signal
	// loopN counts the running loops (w.mu); the last to end notifies
	// loopsIdle, so Stop waits for them on the engine's clock.
	loopN     int
	loopsIdle *model.Signal
	nextLane  int // rotation of the lane asked for with a completion
	leases    leaseWatch

	// note is the wake the engine's hub gave this worker (guarded by the
	// hub's lock).
	note  wakeNote
	noted bool
	// cursor is this worker's position over its spread lanes' partitions.
	cursor claim.Cursor
}

type workerState uint8

const (
	workerNew workerState = iota
	workerRunning
	workerStopping
	workerStopped
)

// taskKey names a task in flight: its execution and the lease epoch it
// runs under. One worker may hold two tasks of one execution: a handler
// that ignores its cancelled context may still run when the execution's
// next attempt is claimed by the same worker, and the end of the old task
// must not drop the new one (whose lease would then not be renewed).
type taskKey struct {
	id    model.ExecutionID
	epoch uint64
}

// running is one task in flight.
type running struct {
	ctx       context.Context // the handler's (nil for an execution handed back unrun)
	claim     *model.ClaimResult
	fence     model.Fence
	renewBy   time.Time
	expiresAt time.Time // of the lease, as last renewed (w.mu)
	cancel    context.CancelCauseFunc
	lost      bool
	released  bool
	retryWait time.Duration
}

// NewWorker returns a worker of engine. Configuration errors are reported
// by Start, with the field named.
func NewWorker(engine *Engine, cfg *WorkerConfig) *Worker {
	var c WorkerConfig
	if cfg != nil {
		c = *cfg
	}
	c.WorkerID = cmp.Or(c.WorkerID, "worker")
	if c.InstanceID == "" {
		u := engine.newUUID()
		c.InstanceID = model.WorkerInstanceID(string(c.WorkerID) + "-" + hex.EncodeToString(u[:4]))
	}
	if len(c.Lanes) == 0 {
		c.Lanes = []model.LaneID{model.DefaultLane}
	}
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, DefaultMaxConcurrent)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
		if _, ok := engine.store.(model.WorkNotifier); ok {
			c.PollInterval = DefaultNotifiedPollInterval
		}
	}
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	sessionID := engine.newUUID()
	w := &Worker{
		engine: engine, cfg: c, session: sessionID.String(),
		probed: func(lane model.LaneID, partition int) (bool, func(bool)) {
			return engine.probeHook(lane, partition, c.PollInterval)
		},
		log:      engine.log.With("worker", string(c.InstanceID)),
		handlers: make(map[model.Kind]handlerEntry),
		inflight: make(map[taskKey]*running),
		stopped:  make(chan struct{}),
	}
	w.caps, w.cfgErr = w.validate()
	return w
}

func (w *Worker) validate() (model.Capabilities, error) {
	c := w.cfg
	if err := c.WorkerID.Validate(); err != nil {
		return nil, err
	}
	if err := c.InstanceID.Validate(); err != nil {
		return nil, err
	}
	for _, l := range c.Lanes {
		if err := l.Validate(); err != nil {
			return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Lanes", Detail: string(l), Got: strconv.Quote(string(l)),
				Want: "1..64 bytes of letters, digits, '_', '.' or '-'"}
		}
	}
	caps, err := model.ParseCapabilities("Capabilities", c.Capabilities)
	if err != nil {
		return nil, err
	}
	switch {
	case c.MaxConcurrent < 1:
		return nil, model.OutOfRange("MaxConcurrent", c.MaxConcurrent, "at least 1 (0 means the default)")
	case c.LeaseTTL < 10*time.Millisecond || 2*c.LeaseTTL > model.MaxLeaseTTL:
		return nil, model.OutOfRange("LeaseTTL", c.LeaseTTL, "10ms.."+(model.MaxLeaseTTL/2).String()+" (0 means the default)")
	case c.PollInterval < 0:
		return nil, model.OutOfRange("PollInterval", c.PollInterval, "0 (the default) or more")
	case c.DrainTimeout < 0:
		return nil, model.OutOfRange("DrainTimeout", c.DrainTimeout, "0 (the default) or more")
	}
	return caps, nil
}

// Config returns the worker's configuration with defaults filled in.
func (w *Worker) Config() WorkerConfig { return w.cfg }

func (w *Worker) addHandler(kind model.Kind, h handlerEntry) error {
	if err := kind.Validate(); err != nil {
		return fmt.Errorf("flowfabric: add handler: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != workerNew {
		return wrap("add handler", model.NewError(model.CodeWorkerAlreadyStarted,
			fmt.Sprintf("kind %q: handlers are added before Start", kind)))
	}
	if _, dup := w.handlers[kind]; dup {
		return wrap("add handler", model.NewError(model.CodeHandlerAlreadyRegistered, fmt.Sprintf("kind %q", kind)))
	}
	w.handlers[kind] = h
	return nil
}

// Start registers the worker instance (refusing a duplicate live instance
// with ErrDuplicateWorker), advertises its capabilities, and starts
// claiming. It returns at once; Stop ends it.
func (w *Worker) Start(ctx context.Context) error {
	if w.cfgErr != nil {
		return fmt.Errorf("flowfabric: start worker: %w", w.cfgErr)
	}
	w.mu.Lock()
	if w.state != workerNew {
		w.mu.Unlock()
		return wrap("start worker", model.NewError(model.CodeWorkerAlreadyStarted, "a worker starts once"))
	}
	if len(w.handlers) == 0 {
		w.mu.Unlock()
		return wrap("start worker", model.NewError(model.CodeWorkerHasNoHandlers,
			"register one with AddHandler before Start"))
	}
	w.mu.Unlock()
	e := w.engine
	if err := w.register(ctx); err != nil {
		return err
	}
	e.sched.Invalidate()
	e.runner.Kick("unblock") // a new capability set may serve route-blocked work
	w.watchLeases()

	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = workerRunning
	w.free = w.cfg.MaxConcurrent
	w.wake = e.clock.NewSignal()
	w.renewWake = e.clock.NewSignal()
	w.drained = e.clock.NewSignal()
	w.tasksIdle = e.clock.NewSignal()
	w.loopsIdle = e.clock.NewSignal()
	base := context.WithoutCancel(ctx)
	w.taskCtx, w.taskCancel = context.WithCancelCause(base)
	var loopCtx, renewCtx context.Context
	loopCtx, w.loopCancel = context.WithCancel(base)
	renewCtx, w.renewCancel = context.WithCancel(base)
	e.join(w)
	w.goLoop(func() { w.claimLoop(loopCtx) })
	w.goLoop(func() { w.renewLoop(renewCtx) })
	return nil
}

func (w *Worker) register(ctx context.Context) error {
	e := w.engine
	_, err := e.store.WorkerRegister(ctx, &model.WorkerRegisterParams{
		Namespace: e.ns, WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
		SessionID: w.session, Lanes: w.cfg.Lanes, Capabilities: w.caps,
		TTL: 2 * w.cfg.LeaseTTL, Now: e.clock.Now(),
	})
	if err != nil {
		return fmt.Errorf("flowfabric: register worker %s: %w", w.cfg.InstanceID, err)
	}
	return nil
}

// goLoop runs one of the worker's loops (w.mu held by the caller).
func (w *Worker) goLoop(f func()) {
	w.loops.Add(1)
	w.loopN++
	w.engine.spawn(func() {
		defer w.loops.Done()
		f()
		w.mu.Lock()
		w.loopN--
		last := w.loopN == 0
		w.mu.Unlock()
		if last {
			w.loopsIdle.Notify() // while still tracked: time does not jump in between
		}
	})
}

// waitLoops waits for the loops to end on the engine's clock, not on the
// WaitGroup alone: under a clock that schedules the engine's goroutines
// itself (the simulator's), a cancelled loop runs only while this
// goroutine waits in the clock.
func (w *Worker) waitLoops() {
	clock := w.engine.clock
	for {
		w.mu.Lock()
		n := w.loopN
		w.mu.Unlock()
		if n == 0 {
			break
		}
		_ = clock.Wait(context.Background(), 0, w.loopsIdle)
	}
	w.loops.Wait() // only their deferred bookkeeping is left
}

// claimLoop claims while the worker has free slots and there is work, and
// otherwise waits: for a wake from the engine's hub (work arrived on one of
// its lanes), a freed slot, or the poll interval.
func (w *Worker) claimLoop(ctx context.Context) {
	clock := w.engine.clock
	var note wakeNote
	var noted bool
	for ctx.Err() == nil {
		// Marked idle before looking, so that work arriving while it looks
		// still wakes it.
		if w.hasSlot() {
			w.engine.idle(w)
		}
		w.engine.takePending(w)
		took, left, err := w.claimOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("claim failed", "err", err)
		}
		if took {
			// a wake given while it claimed is for other work: keep its
			// partition for the next claim (on a spread lane the cursor
			// may be far from it)
			if n, ok := w.engine.busy(w); ok {
				w.cursor.Hint(n.lane, n.partition)
			}
			noted = false
			continue
		}
		if noted && note.hops > 0 && err == nil && left {
			// woken for work it could not take: let the next idle worker
			// try. When the lanes were empty (another worker, often one
			// completing with its next claim, took the job first) there
			// is nothing to pass on.
			w.engine.workArrived(note.lane, note.partition, note.hops-1)
		}
		waitErr := clock.Wait(ctx, w.cfg.PollInterval, w.wake)
		note, noted = w.engine.busy(w)
		if noted {
			w.cursor.Hint(note.lane, note.partition) // probed first
		}
		if waitErr != nil {
			return
		}
	}
}

func (w *Worker) hasSlot() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == workerRunning && w.free > 0
}

// claimOnce takes a permit and claims one execution. It reports whether a
// task started and, when none did, whether work may be left that another
// worker could take (claim.Outcome.LeftWork; true without a free slot).
func (w *Worker) claimOnce(ctx context.Context) (took, left bool, err error) {
	if !w.takeSlot() {
		return false, true, nil
	}
	e := w.engine
	out, err := e.sched.Claim(ctx, w.claimRequest())
	if out != nil {
		for _, id := range out.Blocked {
			e.hint(e.unblock, id, e.clock.Now())
		}
		e.hintAdmissionBlocks(out)
	}
	if err != nil || out.Claimed == nil {
		w.releaseSlot()
		return false, out != nil && out.LeftWork(), err
	}
	w.startTask(out.Claimed)
	return true, false, nil
}

// ClaimGrant consumes a claim grant issued to this worker instance (see
// Engine.IssueGrant) and runs the execution. The claim carries this
// worker's identity and capabilities: a grant issued to another worker
// instance is refused (model.ErrInvalidClaimGrant), and so is one whose
// execution requires capabilities this worker lacks
// (model.CodeCapabilityMismatch). A worker at capacity returns
// ErrWorkerAtCapacity without touching the grant, which stays usable until
// it expires.
func (w *Worker) ClaimGrant(ctx context.Context, g *claim.Grant) error {
	if g == nil {
		return wrap("claim grant", model.InvalidField("Grant", "nil: pass the grant Engine.IssueGrant returned"))
	}
	w.mu.Lock()
	running := w.state == workerRunning
	w.mu.Unlock()
	if !running {
		return wrap("claim grant", ErrWorkerStopped)
	}
	if !w.takeSlot() {
		return wrap("claim grant", ErrWorkerAtCapacity)
	}
	leaseID, attemptID := w.engine.newLeaseIDs()
	r, err := w.engine.sched.ClaimGrant(ctx, g, model.LeaseRequest{
		WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
		LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: w.cfg.LeaseTTL,
	}, w.caps)
	if err != nil {
		w.releaseSlot()
		return wrap("claim grant", err)
	}
	w.startTask(r)
	return nil
}

// claimRequest is the scheduler request of this worker.
func (w *Worker) claimRequest() *claim.Request {
	e := w.engine
	return &claim.Request{
		Lanes: w.cfg.Lanes, WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
		Capabilities: w.caps, LeaseTTL: w.cfg.LeaseTTL, NewIDs: e.newLeaseIDs, Cursor: &w.cursor,
		Probed: w.probed,
	}
}

// hintAdmissionBlocks tells the unblock scanner about executions a claim
// blocked on a budget or a quota (and when a rate window frees a slot).
func (e *Engine) hintAdmissionBlocks(out *claim.Outcome) {
	for _, b := range out.AdmissionBlocked {
		e.unblock.HintAdmission(b.ID.Partition(), b.RetryAt)
	}
}

func (w *Worker) takeSlot() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != workerRunning || w.free == 0 {
		return false
	}
	w.free--
	return true
}

func (w *Worker) releaseSlot() {
	w.mu.Lock()
	w.free++
	w.mu.Unlock()
}

// startTask runs c, and then every execution claimed together with a
// completion, in one goroutine that holds the slot throughout.
func (w *Worker) startTask(c *model.ClaimResult) {
	w.mu.Lock()
	closed, crashed := w.tasksClosed, w.crashed
	if closed {
		w.free++
	} else {
		// under the lock Stop takes to close the tasks: this Add happens
		// before Stop's tasks.Wait
		w.tasks.Add(1)
		w.taskN++
	}
	w.mu.Unlock()
	if closed {
		if !crashed {
			w.log.Debug("claimed while stopping; handed back", "execution", c.ID.String(), "kind", string(c.Kind))
			w.release(context.WithoutCancel(w.taskCtx), &running{claim: c, fence: c.Fence()})
		}
		return
	}
	w.engine.spawn(func() {
		defer w.tasks.Done()
		var quiet bool
		for c != nil {
			c, quiet = w.runTask(c)
		}
		w.mu.Lock()
		w.free++
		w.taskN--
		idle := w.taskN == 0
		running := w.state == workerRunning
		empty := len(w.inflight) == 0
		w.mu.Unlock()
		if !quiet || !running {
			w.wake.Notify() // a slot is free: the claim loop looks for work
		}
		if empty {
			w.drained.Notify()
		}
		if idle {
			w.tasksIdle.Notify()
		}
	})
}

// runTask runs the handler of c and records its outcome. It returns the
// worker's next execution when the completion claimed one; quiet reports
// that the completion found the worker's only lane empty and the worker is
// already marked idle (so the freed slot needs no extra look).
func (w *Worker) runTask(c *model.ClaimResult) (next *model.ClaimResult, quiet bool) {
	e := w.engine
	e.hint(e.lease, c.ID, c.Lease.ExpiresAt)
	e.hint(e.timeouts, c.ID, c.TimeoutAt)
	ctx, cancel := context.WithCancelCause(w.taskCtx)
	defer cancel(nil)
	r := &running{ctx: ctx, claim: c, fence: c.Fence(), renewBy: c.Lease.RenewBy, expiresAt: c.Lease.ExpiresAt, cancel: cancel}
	// Checked and registered under one lock: Stop marks the worker stopping
	// before it looks at what is in flight, so a task is either seen by
	// Stop or handed back here.
	w.mu.Lock()
	state, crashed := w.state, w.crashed
	key := taskKey{c.ID, c.Lease.Epoch}
	if state == workerRunning {
		w.inflight[key] = r
	}
	early := r.renewBy.Before(w.renewAt)
	w.mu.Unlock()
	if state != workerRunning {
		// claimed (by a claim or a completion in flight) after Stop began:
		// hand it back for immediate recovery without running it
		if !crashed {
			w.log.Debug("claimed while stopping; handed back", "execution", c.ID.String(), "kind", string(c.Kind))
			w.release(context.WithoutCancel(w.taskCtx), r)
		}
		return nil, false
	}
	if early {
		w.renewWake.Notify()
	}
	w.checkEarlyNotice(r)
	if w.log.Enabled(ctx, slog.LevelDebug) {
		w.log.Debug("task claimed", "execution", c.ID.String(), "kind", string(c.Kind), "lane", string(c.Lane),
			"attempt", c.AttemptIndex, "attempt_type", c.AttemptType.String(), "epoch", c.Lease.Epoch)
	}
	info := newTaskInfo(c, w, r)
	w.mu.Lock()
	h := w.handlers[c.Kind]
	w.mu.Unlock()
	var err error
	if h == nil {
		err = Fail(model.FailureUnknownKind, fmt.Errorf("no handler for kind %q on worker %s", c.Kind, w.cfg.InstanceID))
	} else {
		err = callHandler(ctx, wrapMiddleware(h, w.cfg.Middleware), info)
	}
	next, quiet = w.finish(r, info, err)
	for info.again { // a Suspend its buffered signals satisfied: run on
		info.again = false
		err = callHandler(ctx, wrapMiddleware(h, w.cfg.Middleware), info)
		next, quiet = w.finish(r, info, err)
	}
	w.mu.Lock()
	delete(w.inflight, key)
	w.mu.Unlock()
	e.activity()
	return next, quiet
}

// nextClaim is the claim to make together with a completion of an
// execution in partition part: the worker's lanes are asked in rotation,
// and only a lane whose executions live on that partition (or a spread
// lane) can be served in the same step.
func (w *Worker) nextClaim(ctx context.Context, part int) *model.NextClaim {
	e := w.engine
	w.mu.Lock()
	running := w.state == workerRunning
	lane := w.cfg.Lanes[w.nextLane%len(w.cfg.Lanes)]
	w.nextLane++
	w.mu.Unlock()
	if !running || (!e.spread(lane) && e.parts.SoloPartition(lane) != part) {
		return nil
	}
	live, err := e.sched.LiveCapabilities(ctx)
	if err != nil {
		return nil
	}
	leaseID, attemptID := e.newLeaseIDs()
	return &model.NextClaim{
		Lane: lane, Namespace: e.sched.Namespace(), Capabilities: w.caps, LiveCapabilities: live, ScanLimit: e.sched.ScanLimit(),
		Inline: e.sched.Inline(),
		LeaseRequest: model.LeaseRequest{
			WorkerID: w.cfg.WorkerID, WorkerInstanceID: w.cfg.InstanceID,
			LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: w.cfg.LeaseTTL,
		},
	}
}

func callHandler(ctx context.Context, h handlerEntry, info *TaskInfo) (err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			err = Fail(model.FailurePanic, fmt.Errorf("panic: %v\n%s", p, stack))
			if info.w != nil && info.w.log.Enabled(ctx, slog.LevelDebug) {
				info.w.log.Debug("task panicked", "execution", info.ID.String(), "kind", string(info.Kind),
					"attempt", info.Attempt, "panic", fmt.Sprint(p), "stack", string(stack))
			}
		}
	}()
	err = h(ctx, info)
	var pe errPayload
	if errors.As(err, &pe) {
		err = Fail(model.FailurePayloadInvalid, pe)
	}
	return err
}

// finish records the outcome in the store. A completion also claims the
// worker's next execution when it can; finish returns it.
//
// An outcome that cannot be recorded for a reason retrying cannot fix (a
// result the handler's SetResult refused, or a validation error from the
// store) fails the attempt at once with category invalid_outcome. Transport
// errors are retried (terminal operations replay idempotently) until the
// lease would expire; after that the store refuses the outcome anyway and
// the lease-expiry scanner recovers the execution.
func (w *Worker) finish(r *running, info *TaskInfo, herr error) (next *model.ClaimResult, quiet bool) {
	w.mu.Lock()
	skip := w.crashed || r.released
	w.mu.Unlock()
	ctx := context.WithoutCancel(w.taskCtx)
	if skip {
		// the process "died", or Stop handed the execution back
		w.tellOutcome(ctx, info, &AttemptOutcome{Kind: AttemptNotRecorded, Err: notRecorded(r, ErrWorkerStopped)})
		return nil, false
	}
	e := w.engine
	id, fence := r.claim.ID, r.fence
	if herr == nil && info.resultErr != nil {
		herr = invalidOutcome(info.resultErr)
	}
	dbg := w.log.Enabled(ctx, slog.LevelDebug)
	withNext := true         // false once the store refused the next-claim request
	var failed *AttemptError // what OnError is told once the outcome is stored
	var told AttemptOutcome  // what OnOutcome is told once the outcome is stored
	op := func(ctx context.Context) error {
		now := e.clock.Now()
		told = AttemptOutcome{}
		if herr == nil {
			var n *model.NextClaim
			if withNext {
				n = w.nextClaim(ctx, id.Partition())
			}
			var seq uint64
			var snap partSnap
			if n != nil {
				seq = e.laneSeq(n.Lane)
				if e.spread(n.Lane) {
					snap, _ = e.probeSnap(n.Lane, id.Partition(), 0)
				}
			}
			res, err := e.store.ExecutionComplete(ctx, &model.ExecutionCompleteParams{
				ID: id, Fence: fence, Result: info.result, Next: n, Now: now,
			})
			if err == nil && res.Next != nil {
				for _, b := range res.Next.Blocked {
					e.hint(e.unblock, b, now)
				}
				next = res.Next.Claimed
				if res.Next.Admit != nil {
					// the head needs admission: it is granted to this worker
					out := &claim.Outcome{}
					next, _ = e.sched.Admit(ctx, w.claimRequest(), res.Next.Admit, out)
					e.hintAdmissionBlocks(out)
				}
				// The worker's only lane had nothing for it: unless work was
				// announced meanwhile, it is idle, without another look. A
				// spread lane's next claim probed one partition of many, so
				// the worker looks again; the look skips the partitions the
				// engine's probes found empty recently (wake.go), this one
				// included.
				if snap.ok && res.Next.Empty() {
					e.emptyProbed(n.Lane, id.Partition(), snap) // its look skips it
				}
				quiet = next == nil && res.Next.Admit == nil && len(w.cfg.Lanes) == 1 && !e.spread(n.Lane) && e.idleIfQuiet(w, n.Lane, seq)
			}
			if err == nil {
				told.Kind = AttemptCompleted
			}
			if err == nil && dbg {
				w.log.Debug("task completed", "execution", id.String(), "kind", string(info.Kind),
					"attempt", info.Attempt, "result_bytes", len(info.result))
			}
			return err
		}
		o := classify(herr)
		switch o.kind {
		case outcomeSnooze:
			until := now.Add(o.delay)
			_, err := e.store.ExecutionDelay(ctx, &model.ExecutionDelayParams{ID: id, Fence: fence, DelayUntil: until, Now: now})
			if err == nil {
				e.hint(e.delayed, id, until)
				told = AttemptOutcome{Kind: AttemptSnoozed, Until: until}
				if dbg {
					w.log.Debug("task snoozed", "execution", id.String(), "kind", string(info.Kind), "until", until)
				}
			}
			return err
		case outcomeAwait:
			err := w.await(ctx, id, fence, info, o.children)
			if err == nil {
				told.Kind = AttemptAwaitingChildren
			}
			return err
		case outcomeSuspend:
			err := w.suspend(ctx, id, fence, info, o)
			if err == nil {
				told = AttemptOutcome{Kind: AttemptSuspended, Again: info.again}
			}
			return err
		case outcomeCancel:
			_, err := e.store.ExecutionCancel(ctx, &model.ExecutionCancelParams{ID: id, Fence: fence, Reason: reasonText(o.err), Now: now})
			if err == nil {
				told = AttemptOutcome{Kind: AttemptCancelled, Err: o.err}
			}
			if err == nil && dbg {
				w.log.Debug("task cancelled itself", "execution", id.String(), "kind", string(info.Kind), "reason", reasonText(o.err))
			}
			return err
		}
		res, err := e.store.ExecutionFail(ctx, &model.ExecutionFailParams{ID: id, Fence: fence, Reason: reasonText(o.err), Category: o.category, Now: now})
		if err == nil && res.Outcome == model.FailRetryScheduled {
			e.hint(e.delayed, id, res.DelayUntil)
		}
		if err == nil {
			failed = &AttemptError{Err: o.err, Category: o.category, Retrying: res.Outcome == model.FailRetryScheduled}
			if failed.Retrying {
				failed.RetryAt = res.DelayUntil
			}
			told = AttemptOutcome{Kind: AttemptFailed, Failure: failed}
		}
		if err == nil && dbg {
			args := []any{"execution", id.String(), "kind", string(info.Kind), "attempt", info.Attempt,
				"category", string(o.category), "err", reasonText(o.err)}
			if res.Outcome == model.FailRetryScheduled {
				w.log.Debug("task failed; retry scheduled", append(args, "retry_at", res.DelayUntil)...)
			} else {
				w.log.Debug("task failed; no retry left", args...)
			}
		}
		return err
	}
	backoff := 50 * time.Millisecond
	refused := false
	for {
		err := op(ctx)
		if err == nil {
			if r.claim.AdmissionToken != "" {
				e.quotaRel.Hint(id.Partition(), time.Time{}) // the lease ended: free its quota slot
			}
			if failed != nil && w.cfg.OnError != nil {
				w.cfg.OnError(ctx, info, failed)
			}
			w.tellOutcome(ctx, info, &told)
			return next, quiet
		}
		var me *model.Error
		if errors.As(err, &me) && me.IsValidation() && withNext && herr == nil && strings.HasPrefix(me.Field, "Next.") {
			// the worker's own next-claim request was refused, not the
			// handler's outcome: record the outcome without it
			w.log.Warn("next claim refused by the store; completing without it", "execution", id.String(), "err", err)
			withNext, next, quiet = false, nil, false
			continue
		}
		if errors.As(err, &me) && (me.IsValidation() || awaitRefused(err) || suspendRefused(err)) && !refused {
			// the store refuses this outcome as invalid: retrying would not
			// help, so the attempt fails now instead of at lease expiry
			level := slog.LevelWarn
			if me.Code == model.CodeFlowAlreadyTerminal {
				level = slog.LevelInfo // an operator cancelled the flow: expected, not a fault
			}
			w.log.Log(ctx, level, "task outcome refused by the store; failing the attempt", "execution", id.String(), "err", err)
			herr, refused = invalidOutcome(fmt.Errorf("flowfabric: record outcome: %w", err)), true
			next, quiet = nil, false
			continue
		}
		w.mu.Lock()
		gone := r.lost || r.released || w.crashed
		expires := r.expiresAt
		w.mu.Unlock()
		if me != nil && !me.Retryable() {
			level, msg := w.outcomeRefused(r, err)
			w.log.Log(ctx, level, msg, "execution", id.String(), "err", err)
			w.tellOutcome(ctx, info, &AttemptOutcome{Kind: AttemptNotRecorded, Err: notRecorded(r, err)})
			return nil, false
		}
		if gone {
			// the lease is gone or handed back: nothing left to record
			w.tellOutcome(ctx, info, &AttemptOutcome{Kind: AttemptNotRecorded, Err: notRecorded(r, err)})
			return nil, false
		}
		left := expires.Sub(e.clock.Now())
		if left <= 0 {
			w.log.Warn("recording task outcome failed until the lease expired; the execution will be recovered",
				"execution", id.String(), "err", err)
			w.tellOutcome(ctx, info, &AttemptOutcome{Kind: AttemptNotRecorded, Err: notRecorded(r, err)})
			return nil, false
		}
		if werr := e.clock.Wait(ctx, min(backoff, left), nil); werr != nil {
			w.tellOutcome(ctx, info, &AttemptOutcome{Kind: AttemptNotRecorded, Err: notRecorded(r, werr)})
			return nil, false
		}
		backoff = min(backoff*2, time.Second)
	}
}

// reasonText makes an error message a valid stored reason.
func reasonText(err error) string {
	if err == nil {
		return ""
	}
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	if len(s) > model.MaxReasonBytes {
		s = s[:model.MaxReasonBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// renewLoop renews every in-flight lease at its renew-by time and keeps the
// worker registration alive: one timer for the whole worker.
func (w *Worker) renewLoop(ctx context.Context) {
	e := w.engine
	heartbeatEvery := w.cfg.LeaseTTL / 3
	nextHeartbeat := e.clock.Now().Add(heartbeatEvery)
	for ctx.Err() == nil {
		now := e.clock.Now()
		if !now.Before(nextHeartbeat) {
			w.heartbeat(ctx)
			nextHeartbeat = now.Add(heartbeatEvery)
		}
		next := nextHeartbeat
		for _, r := range w.dueRenewals(now) {
			w.renew(ctx, r)
		}
		w.mu.Lock()
		for _, r := range w.inflight {
			if !r.lost && !r.released && r.renewBy.Before(next) {
				next = r.renewBy
			}
		}
		// A task started from here on wakes the loop only if its lease
		// needs renewing before next; any other is seen on the next pass.
		w.renewAt = next
		w.mu.Unlock()
		if d := next.Sub(e.clock.Now()); d > 0 {
			if e.clock.Wait(ctx, d, w.renewWake) != nil {
				return
			}
		}
	}
}

// compareTasks orders tasks by execution, then lease epoch.
func compareTasks(a, b *running) int {
	return cmp.Or(a.claim.ID.Compare(b.claim.ID), cmp.Compare(a.fence.LeaseEpoch, b.fence.LeaseEpoch))
}

func (w *Worker) dueRenewals(now time.Time) []*running {
	w.mu.Lock()
	defer w.mu.Unlock()
	var due []*running
	for _, r := range w.inflight {
		if !r.lost && !r.released && !r.renewBy.After(now) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, compareTasks)
	return due
}

func (w *Worker) renew(ctx context.Context, r *running) {
	e := w.engine
	res, err := e.store.LeaseRenew(ctx, &model.LeaseRenewParams{
		ID: r.claim.ID, Fence: r.fence, LeaseTTL: w.cfg.LeaseTTL, Now: e.clock.Now(),
	})
	if loss, ok := lossOfError(err); ok {
		// expired, revoked, taken over, or finished elsewhere: the lease is
		// gone for good
		w.leaseLost(r, loss)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		r.renewBy = res.RenewBy
		r.expiresAt = res.ExpiresAt
		r.retryWait = 0
		return
	}
	var me *model.Error
	if errors.As(err, &me) {
		r.lost = true
		r.cancel(&leaseLost{"lease renewal refused", me, slog.LevelWarn})
		w.log.Warn("lease lost: renewal refused", "execution", r.claim.ID.String(), "err", err)
		return
	}
	r.retryWait = min(cmp.Or(r.retryWait*2, 50*time.Millisecond), w.cfg.LeaseTTL/10)
	r.renewBy = e.clock.Now().Add(r.retryWait)
}

func (w *Worker) heartbeat(ctx context.Context) {
	e := w.engine
	_, err := e.store.WorkerHeartbeat(ctx, &model.WorkerHeartbeatParams{
		Namespace: e.ns, WorkerInstanceID: w.cfg.InstanceID, SessionID: w.session,
		TTL: 2 * w.cfg.LeaseTTL, Now: e.clock.Now(),
	})
	switch {
	case err == nil:
	case errors.Is(err, model.ErrWorkerNotRegistered):
		if err := w.register(ctx); err != nil {
			w.log.Error("re-registering worker failed", "err", err)
		}
	default:
		w.log.Error("worker heartbeat failed", "err", err)
	}
}

// Stop stops claiming, lets running tasks finish for up to DrainTimeout
// (or until ctx is done), then cancels the rest and releases their leases
// so other workers can take them at once, and deregisters the instance. It
// returns when every goroutine of the worker is gone, or ctx is done. It is
// idempotent and safe before Start.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	switch w.state {
	case workerNew:
		w.state = workerStopped
		close(w.stopped)
		w.mu.Unlock()
		return nil
	case workerStopping, workerStopped:
		w.mu.Unlock()
		select {
		case <-w.stopped:
			return w.stopErr
		case <-ctx.Done():
			return fmt.Errorf("flowfabric: worker stop: %w", ctx.Err())
		}
	}
	w.state = workerStopping
	w.mu.Unlock()
	w.stopErr = w.stop(ctx)
	w.mu.Lock()
	w.state = workerStopped
	w.mu.Unlock()
	close(w.stopped)
	return w.stopErr
}

func (w *Worker) stop(ctx context.Context) error {
	e := w.engine
	w.loopCancel()
	e.leave(w)
	// drain: wait for running tasks up to the drain deadline
	deadline := e.clock.Now().Add(w.cfg.DrainTimeout)
	for {
		w.mu.Lock()
		n := len(w.inflight)
		w.mu.Unlock()
		left := deadline.Sub(e.clock.Now())
		if n == 0 || left <= 0 || ctx.Err() != nil {
			break
		}
		_ = e.clock.Wait(ctx, left, w.drained)
	}
	// past the deadline: cancel what still runs and hand its work back
	w.mu.Lock()
	var rest []*running
	for _, r := range w.inflight {
		if !r.lost {
			r.released = true
			rest = append(rest, r)
		}
	}
	w.mu.Unlock()
	slices.SortFunc(rest, compareTasks)
	w.taskCancel(ErrWorkerStopped)
	bg := context.WithoutCancel(ctx)
	for _, r := range rest {
		w.release(bg, r)
	}
	// From here on a claim that returns hands its execution back in the
	// claiming goroutine (startTask) instead of adding a task: no tasks.Add
	// races the Wait below.
	w.mu.Lock()
	w.tasksClosed = true
	w.mu.Unlock()
	// Wait for the tasks on the engine's clock, not on a bare channel: a
	// task may be backing off on a simulated clock, which moves only while
	// this goroutine waits in it. The last task notifies before it stops
	// being tracked, so time does not jump in between.
	var err error
	for {
		w.mu.Lock()
		n := w.taskN
		w.mu.Unlock()
		if n == 0 {
			w.tasks.Wait() // only their deferred bookkeeping is left
			break
		}
		if e.clock.Wait(ctx, 0, w.tasksIdle) != nil {
			err = fmt.Errorf("flowfabric: worker stop: handlers still running: %w", ctx.Err())
			break
		}
	}
	w.renewCancel()
	w.waitLoops()
	w.unwatchLeases()
	if _, derr := e.store.WorkerDeregister(bg, &model.WorkerDeregisterParams{
		Namespace: e.ns, WorkerInstanceID: w.cfg.InstanceID, SessionID: w.session, Now: e.clock.Now(),
	}); derr != nil && err == nil {
		err = fmt.Errorf("flowfabric: worker stop: deregister: %w", derr)
	}
	e.sched.Invalidate()
	return err
}

// release gives a running task's execution back: its lease is revoked and
// the execution is recovered as a new attempt, eligible at once.
func (w *Worker) release(ctx context.Context, r *running) {
	e := w.engine
	now := e.clock.Now()
	_, err := e.store.LeaseRevoke(ctx, &model.LeaseRevokeParams{
		ID: r.claim.ID, ExpectedLeaseID: r.fence.LeaseID, Reason: "worker_shutdown", Now: now,
	})
	if err != nil {
		w.log.Debug("release: revoke", "execution", r.claim.ID.String(), "err", err)
		return
	}
	if _, err := e.store.ExecutionRecover(ctx, &model.ExecutionRecoverParams{ID: r.claim.ID, Now: now}); err != nil {
		w.log.Warn("release: recover", "execution", r.claim.ID.String(), "err", err)
		e.hint(e.lease, r.claim.ID, now)
	}
}

// crash simulates the process dying: every goroutine of the worker stops
// without another store call (no completion, no renewal, no release, no
// deregistration). Handlers still running are cancelled and their outcome
// is dropped. For tests of crash recovery.
func (w *Worker) crash() {
	w.mu.Lock()
	if w.state != workerRunning {
		w.mu.Unlock()
		return
	}
	w.crashed = true
	w.tasksClosed = true
	w.state = workerStopped
	w.mu.Unlock()
	w.loopCancel()
	w.renewCancel()
	w.taskCancel(ErrWorkerStopped)
	w.engine.leave(w)
	w.unwatchLeases()
	w.loops.Wait()
	w.tasks.Wait()
	close(w.stopped)
}

// Stopped returns a channel closed once Stop has finished.
func (w *Worker) Stopped() <-chan struct{} { return w.stopped }

// Running returns how many tasks are in flight.
func (w *Worker) Running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

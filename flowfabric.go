package flowfabric

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/claim"
	"github.com/flowfabric/flowfabric/internal/wallclock"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// Config configures an Engine. The zero value (or nil) means the defaults.
type Config struct {
	// Clock is the engine's time source (nil: the wall clock). Tests pass a
	// *model.SimClock.
	Clock Clock
	// Logger receives the engine's logs (nil: discarded).
	Logger *slog.Logger
	// Namespace scopes idempotency keys, the worker registry, claims (this
	// engine's workers claim only its namespace's executions) and route
	// admission (blocks and unblocks judged by this namespace's live
	// workers) (default "default"). Lanes are shared: see
	// docs/ARCHITECTURE.md, Namespaces.
	Namespace Namespace
	// Entropy is the source of new ids (nil: crypto/rand). Tests pass a
	// seeded reader for reproducible ids.
	Entropy io.Reader
	// Lanes configures lanes by name; unlisted lanes use the defaults.
	// Every process sharing a store must configure lanes the same way.
	Lanes map[LaneID]LaneConfig
	// Claim tunes the claim scheduler.
	Claim ClaimConfig
	// Scanners tunes the background scanners.
	Scanners ScannerConfig
	// DefaultRetryPolicy is the retry policy of executions submitted
	// without one (neither in SubmitOpts nor in the args' SubmitOpts).
	// nil means DefaultRetryPolicy(): 25 retries, exponential from 1s,
	// capped at 1h. NoRetries() turns retries off engine-wide.
	DefaultRetryPolicy *RetryPolicy
	// OnActivity, if set, is called after this engine's workers or scanners
	// change an execution. It must not block. flowfabrictest uses it.
	OnActivity func()
	// WaitpointKeys signs and verifies waitpoint tokens (TaskInfo.CreateWaitpoint,
	// Engine.DeliverSignal, Engine.Waitpoints). Every process sharing a
	// store must be given the same ring; rotate by giving every process a
	// new ring whose first key is the new one and whose old key retires
	// later. nil: those calls fail naming this field (a handler can still
	// suspend; nothing can deliver it a signal by token).
	WaitpointKeys *KeyRing
	// SubmitHooks see every submission before anything is stored
	// (Submit, SubmitRaw, each entry of SubmitMany and each node of
	// SubmitFlow), in order, and may amend it or refuse it (see
	// SubmitHook).
	SubmitHooks []SubmitHook
	// Retention is how long terminal executions are kept before the
	// retention trimmer deletes them, for lanes and submissions that do
	// not say (zero fields: DefaultRetention; see Retention).
	Retention Retention
	// OnScannerPass, if set, is told about every pass of every background
	// scanner this engine runs (and of the periodic-job scheduler), with
	// its duration and result: a metrics hook (see ScannerPass). It runs
	// on the scanner's goroutine and must return quickly.
	OnScannerPass func(ScannerPass)
}

// DefaultRetryPolicy returns the retry policy an engine applies when
// Config.DefaultRetryPolicy is nil: 25 retries (River's and Asynq's
// default), exponential backoff from 1s doubling each time, capped at 1h
// between attempts. The last retry runs about 14 hours after the first
// failure. Handlers that should not be retried return Permanent(err).
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 25, InitialDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}
}

// NoRetries returns a policy that never retries, for SubmitOpts.RetryPolicy
// or Config.DefaultRetryPolicy.
func NoRetries() *RetryPolicy { return &RetryPolicy{} }

// LaneConfig configures one lane.
type LaneConfig struct {
	// Spread places the lane's executions on partitions chosen from their
	// ids (or idempotency keys) instead of the lane's single partition, so
	// a busy lane spreads over a Valkey Cluster. Each worker then walks
	// the partitions with a cursor, ClaimConfig.ProbePartitions per claim,
	// so an idle worker reaches every partition within
	// FlowPartitions/ProbePartitions polls (8 by default); a wake-up names
	// the partition that got work, which the woken worker probes first.
	Spread bool
	// Retention is the lane's retention (zero fields: the engine's; see
	// Retention).
	Retention Retention
}

// ClaimConfig tunes the claim scheduler. Zero values mean the defaults.
type ClaimConfig struct {
	// ScanLimit is how many eligible heads one partition probe examines
	// (default 32).
	ScanLimit int
	// ProbePartitions bounds the partitions one claim probes on a spread
	// lane (default 32).
	ProbePartitions int
	// LiveCapsTTL is how long the live workers' capabilities are cached
	// (default 2s).
	LiveCapsTTL time.Duration
}

// ScannerConfig tunes the background scanners. Zero values mean the
// defaults (FlowFabric's intervals).
type ScannerConfig struct {
	LeaseExpiry       LeaseExpiryConfig
	DelayedPromoter   TimerConfig
	AttemptTimeout    TimerConfig
	ExecutionDeadline TimerConfig
	// SuspensionTimeout and WaitpointExpiry run only on a store that
	// supports suspension (memstore, valkeystore).
	SuspensionTimeout TimerConfig
	WaitpointExpiry   TimerConfig
	Unblock           UnblockConfig
	// WorkerExpiryInterval is the pause between worker-registry expiry
	// passes (default 30s).
	WorkerExpiryInterval time.Duration
	// SweepInterval is how often every partition is read (one call each) to
	// find timers and route blocks that other processes scheduled
	// (default 1m). What this engine schedules, its scanners know at once.
	SweepInterval time.Duration
	// Filter limits every execution-shaped scanner (the timer scanners
	// and the unblock scanner) to the executions it matches: a namespace
	// and an instance tag, so tenants sharing a keyspace never act on each
	// other's executions (the zero value matches every execution).
	// Budget and quota scanners ignore it.
	Filter ScannerFilter
	// BudgetReset (scanner 8), BudgetReconcile (9), QuotaReconcile (10)
	// and QuotaRelease (which frees the quota slots of ended leases) run
	// only on a store with budgets and quotas (memstore, valkeystore).
	BudgetReset     BudgetScanConfig
	BudgetReconcile BudgetScanConfig
	QuotaReconcile  QuotaReconcileConfig
	QuotaRelease    BudgetScanConfig
	// Retention is the retention trimmer (scanner 7; default every
	// minute, 50 deletes per partition visit); it runs only on a store
	// with deletes (memstore, valkeystore).
	Retention TimerConfig
	// IndexRepair is the repairing index reconciler (scanner 3; default
	// every 45s, 100 executions per partition visit): it files each
	// execution in the indexes its record says and takes it out of the
	// others, and logs every repair to Config.Logger (unless
	// IndexRepair.Logger is set). Its Filter defaults to Filter. It runs
	// only on a store with model.IndexRepairer (memstore, valkeystore).
	IndexRepair IndexRepairConfig
}

// Engine is the embedded engine: submit and manage executions, run
// workers, and run the background scanners. Create it with New.
type Engine struct {
	store Store
	clock Clock
	log   *slog.Logger
	ns    Namespace
	parts model.PartitionConfig
	cfg   Config

	idMu    sync.Mutex
	entropy io.Reader
	// idMs and idSeq are the millisecond and sequence of the last execution
	// id (guarded by idMu): ids grow with every submission.
	idMs  int64
	idSeq uint64

	lanesMu sync.RWMutex
	lanes   map[LaneID]LaneConfig

	sched  *claim.Scheduler
	runner *scan.Runner
	// periodic submits the ticks of periodic jobs; prunner runs it (apart
	// from runner, so Scanners lists what it always did).
	periodic *periodicScheduler
	prunner  *scan.Runner
	lease    *scan.LeaseExpiry
	delayed  *scan.DelayedPromoter
	timeouts *scan.Expirer
	deadline *scan.Expirer
	unblock  *scan.Unblock
	// quotaRel frees the quota slots of ended leases (inert without
	// budgets and quotas).
	quotaRel scan.Hinter
	// suspTimeout and wpExpiry run when the store supports suspension;
	// otherwise they are inert hinters.
	suspTimeout scan.Hinter
	wpExpiry    scan.Hinter

	watchMu  sync.Mutex
	watchSeq int
	watchers map[int]*model.Signal

	wakes wakeHub

	// goer is the clock when it runs the engine's goroutines itself.
	goer goer
}

// goer is implemented by a clock that schedules the engine's goroutines
// itself (the deterministic simulator, package sim): Go starts f as a
// goroutine that runs only when the clock lets it. Other clocks get a
// goroutine tracked with Track.
type goer interface{ Go(f func()) }

// spawn runs f in a goroutine the clock knows about.
func (e *Engine) spawn(f func()) {
	if e.goer != nil {
		e.goer.Go(f)
		return
	}
	untrack := e.clock.Track()
	go func() {
		defer untrack()
		f()
	}()
}

// New returns an engine over store. A nil cfg means the defaults. It
// panics when cfg is invalid, which is a programming error.
func New(store Store, cfg *Config) *Engine {
	if store == nil {
		panic("flowfabric: New with a nil store")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Clock == nil {
		c.Clock = wallclock.Clock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Namespace = cmp.Or(c.Namespace, model.DefaultNamespace)
	if c.Entropy == nil {
		c.Entropy = rand.Reader
	}
	if c.DefaultRetryPolicy == nil {
		p := DefaultRetryPolicy()
		c.DefaultRetryPolicy = &p
	} else {
		p := *c.DefaultRetryPolicy // the caller may reuse its pointer
		c.DefaultRetryPolicy = &p
	}
	if err := c.validate(); err != nil {
		panic("flowfabric: new: " + err.Error())
	}
	e := &Engine{
		store: store, clock: c.Clock, log: c.Logger, ns: c.Namespace, parts: store.Partitions(),
		cfg: c, entropy: c.Entropy, lanes: make(map[LaneID]LaneConfig),
		watchers: make(map[int]*model.Signal),
	}
	for l, lc := range c.Lanes {
		e.lanes[l] = lc
	}
	e.goer, _ = c.Clock.(goer)
	e.sched = claim.New(store, c.Clock, claim.Config{
		Namespace: c.Namespace, ScanLimit: c.Claim.ScanLimit, ProbePartitions: c.Claim.ProbePartitions,
		LiveCapsTTL: c.Claim.LiveCapsTTL, Spread: e.spread,
	})
	sc := c.Scanners
	sc.Unblock.Namespace = cmp.Or(sc.Unblock.Namespace, c.Namespace)
	for _, tc := range []*scan.TimerConfig{&sc.LeaseExpiry.TimerConfig, &sc.DelayedPromoter, &sc.AttemptTimeout,
		&sc.ExecutionDeadline, &sc.SuspensionTimeout, &sc.WaitpointExpiry, &sc.Retention} {
		if tc.Filter.IsZero() {
			tc.Filter = sc.Filter
		}
	}
	if sc.Unblock.Filter.IsZero() {
		sc.Unblock.Filter = sc.Filter
		sc.Unblock.Filter.Namespace = "" // the unblock scanner keeps to its namespace anyway
	}
	e.lease = scan.NewLeaseExpiry(store, c.Clock, sc.LeaseExpiry)
	e.delayed = scan.NewDelayedPromoter(store, c.Clock, sc.DelayedPromoter)
	e.timeouts = scan.NewAttemptTimeout(store, c.Clock, sc.AttemptTimeout)
	e.timeouts.HintRetries(e.delayed)
	e.deadline = scan.NewExecutionDeadline(store, c.Clock, sc.ExecutionDeadline)
	e.unblock = scan.NewUnblock(store, c.Clock, sc.Unblock)
	e.quotaRel = noHint{}
	workers := scan.NewWorkerExpiry(store, c.Clock, sc.WorkerExpiryInterval, c.Namespace)
	timers := []scan.Hinter{e.lease, e.delayed, e.timeouts, e.deadline}
	scanners := []scan.Scanner{e.lease, e.delayed, e.timeouts, e.deadline, e.unblock, workers}
	e.suspTimeout, e.wpExpiry = noHint{}, noHint{}
	if ss, ok := store.(model.SuspendStore); ok {
		st := scan.NewSuspensionTimeout(suspendScanStore{store, ss}, c.Clock, sc.SuspensionTimeout)
		st.HintResumes(e.delayed)
		we := scan.NewWaitpointExpiry(suspendScanStore{store, ss}, c.Clock, sc.WaitpointExpiry)
		e.suspTimeout, e.wpExpiry = st, we
		timers = append(timers, st, we)
		scanners = append(scanners, st, we)
	}
	if rs, ok := store.(model.RetentionStore); ok {
		var ledgers scan.LedgerForgetter
		if as, ok := store.(model.AdmissionStore); ok {
			ledgers = as
		}
		var trs scan.RetentionStore = retentionScanStore{store, rs}
		if fd, ok := store.(model.FlowDeleter); ok {
			trs = retentionFlowScanStore{retentionScanStore{store, rs}, fd}
		}
		tr := scan.NewRetention(trs, ledgers, c.Clock, sc.Retention)
		timers = append(timers, tr)
		scanners = append(scanners, tr)
	}
	if ir, ok := store.(model.IndexRepairer); ok {
		rc := sc.IndexRepair
		if rc.Filter.IsZero() {
			rc.Filter = sc.Filter
		}
		if rc.Logger == nil {
			rc.Logger = c.Logger
		}
		scanners = append(scanners, scan.NewIndexReconciler(indexRepairStore{store, ir}, c.Clock, rc))
	}
	sweeper := scan.NewSweeper(store, sc.SweepInterval, e.unblock, timers...)
	if as, ok := store.(model.AdmissionStore); ok {
		ds := admissionScanStore{store, as}
		e.unblock.SetAdmission(ds)
		rel := scan.NewQuotaRelease(ds, c.Clock, sc.QuotaRelease, e.unblock)
		e.quotaRel = rel
		sweeper.SetQuotaRelease(rel)
		e.lease.HintReleases(rel)
		e.timeouts.HintReleases(rel)
		e.deadline.HintReleases(rel)
		scanners = append(scanners, rel,
			scan.NewBudgetReset(ds, c.Clock, sc.BudgetReset, e.unblock),
			scan.NewBudgetReconcile(ds, c.Clock, sc.BudgetReconcile),
			scan.NewQuotaReconcile(ds, c.Clock, sc.QuotaReconcile, e.unblock))
	}
	e.runner = scan.NewRunner(scan.RunnerConfig{
		Clock: c.Clock, Logger: c.Logger,
		OnPass: e.onPass,
	}, append([]scan.Scanner{sweeper}, scanners...)...)
	e.periodic = &periodicScheduler{e: e, jobs: make(map[string]*periodicEntry)}
	e.prunner = scan.NewRunner(scan.RunnerConfig{
		Clock: c.Clock, Logger: c.Logger,
		OnPass: e.onPass,
	}, e.periodic)
	return e
}

func (c *Config) validate() error {
	if err := c.Namespace.Validate(); err != nil {
		return err
	}
	if c.DefaultRetryPolicy != nil {
		if err := c.DefaultRetryPolicy.Validate(); err != nil {
			return err
		}
	}
	if err := validateRetention("Retention", c.Retention); err != nil {
		return err
	}
	for l, lc := range c.Lanes {
		if err := l.Validate(); err != nil {
			return err
		}
		if err := validateRetention("Lanes["+string(l)+"].Retention", lc.Retention); err != nil {
			return err
		}
	}
	cc := claim.Config{Namespace: c.Namespace, ScanLimit: c.Claim.ScanLimit, ProbePartitions: c.Claim.ProbePartitions,
		LiveCapsTTL: c.Claim.LiveCapsTTL}
	if err := cc.Validate(); err != nil {
		return err
	}
	for name, tc := range map[string]scan.TimerConfig{
		"Scanners.LeaseExpiry": c.Scanners.LeaseExpiry.TimerConfig, "Scanners.DelayedPromoter": c.Scanners.DelayedPromoter,
		"Scanners.AttemptTimeout": c.Scanners.AttemptTimeout, "Scanners.ExecutionDeadline": c.Scanners.ExecutionDeadline,
		"Scanners.SuspensionTimeout": c.Scanners.SuspensionTimeout, "Scanners.WaitpointExpiry": c.Scanners.WaitpointExpiry,
		"Scanners.Retention": c.Scanners.Retention,
	} {
		if err := tc.Validate(name); err != nil {
			return err
		}
	}
	if u := c.Scanners.Unblock; u.Interval < 0 {
		return model.OutOfRange("Scanners.Unblock.Interval", u.Interval, "0 (the default) or more")
	} else if u.Batch < 0 || u.Batch > model.MaxPageSize {
		return model.OutOfRange("Scanners.Unblock.Batch", u.Batch, "0 (the default) to "+strconv.Itoa(model.MaxPageSize))
	}
	if err := c.Scanners.IndexRepair.Validate("Scanners.IndexRepair"); err != nil {
		return err
	}
	if c.Scanners.WorkerExpiryInterval < 0 {
		return model.OutOfRange("Scanners.WorkerExpiryInterval", c.Scanners.WorkerExpiryInterval, "0 (the default) or more")
	}
	if err := c.Scanners.Filter.Validate("Scanners.Filter"); err != nil {
		return err
	}
	if err := c.Scanners.Unblock.Filter.Validate("Scanners.Unblock.Filter"); err != nil {
		return err
	}
	for name, bc := range map[string]scan.BudgetConfig{
		"Scanners.BudgetReset": c.Scanners.BudgetReset, "Scanners.BudgetReconcile": c.Scanners.BudgetReconcile,
		"Scanners.QuotaReconcile": c.Scanners.QuotaReconcile.BudgetConfig, "Scanners.QuotaRelease": c.Scanners.QuotaRelease,
	} {
		if err := bc.Validate(name); err != nil {
			return err
		}
	}
	if c.Scanners.QuotaReconcile.Grace < 0 {
		return model.OutOfRange("Scanners.QuotaReconcile.Grace", c.Scanners.QuotaReconcile.Grace, "0 (the default) or more")
	}
	if c.Scanners.SweepInterval < 0 {
		return model.OutOfRange("Scanners.SweepInterval", c.Scanners.SweepInterval, "0 (the default) or more")
	}
	return nil
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.store }

// Clock returns the engine's clock.
func (e *Engine) Clock() Clock { return e.clock }

// Namespace returns the engine's namespace.
func (e *Engine) Namespace() Namespace { return e.ns }

// Start starts the background scanners and the periodic jobs' scheduler
// and returns at once. Workers are started separately (Worker.Start).
// Cancelling ctx does not stop the scanners; Stop does.
func (e *Engine) Start(ctx context.Context) error {
	if err := e.runner.Start(ctx); err != nil {
		return fmt.Errorf("flowfabric: start: %w", err)
	}
	if err := e.prunner.Start(ctx); err != nil {
		return fmt.Errorf("flowfabric: start: %w", err)
	}
	return nil
}

// Stop stops the scanners and waits for them, or for ctx. It is idempotent
// and safe before Start. Stop workers first: their drain may still need
// the store.
func (e *Engine) Stop(ctx context.Context) error {
	perr := e.prunner.Stop(ctx)
	if err := e.runner.Stop(ctx); err != nil {
		return fmt.Errorf("flowfabric: stop: %w", err)
	}
	if perr != nil {
		return fmt.Errorf("flowfabric: stop: %w", perr)
	}
	return nil
}

// Scanners returns the background scanners, for hosts that drive passes
// themselves (RunOnce) instead of calling Start. The periodic jobs'
// scheduler is not among them: see PeriodicScanner.
func (e *Engine) Scanners() []scan.Scanner { return e.runner.Scanners() }

// PeriodicScanner returns the scanner that submits the ticks of the
// periodic jobs (AddPeriodic), for hosts that drive passes themselves: a
// pass submits every due tick, and its Interval is the time until the
// next one.
func (e *Engine) PeriodicScanner() scan.Scanner { return e.periodic }

// RegisterLane configures a lane (see LaneConfig). Register lanes before
// submitting to them; every process must agree.
func (e *Engine) RegisterLane(lane LaneID, cfg LaneConfig) error {
	if err := lane.Validate(); err != nil {
		return err
	}
	if err := validateRetention("Retention", cfg.Retention); err != nil {
		return err
	}
	e.lanesMu.Lock()
	e.lanes[lane] = cfg
	e.lanesMu.Unlock()
	return nil
}

// Lanes returns the registered lanes.
func (e *Engine) Lanes() map[LaneID]LaneConfig {
	e.lanesMu.RLock()
	defer e.lanesMu.RUnlock()
	out := make(map[LaneID]LaneConfig, len(e.lanes))
	for l, c := range e.lanes {
		out[l] = c
	}
	return out
}

func (e *Engine) spread(lane LaneID) bool {
	e.lanesMu.RLock()
	defer e.lanesMu.RUnlock()
	return e.lanes[lane].Spread
}

// newUUID draws a v4 UUID from the engine's entropy.
func (e *Engine) newUUID() model.UUID {
	var b [16]byte
	e.idMu.Lock()
	_, err := io.ReadFull(e.entropy, b[:])
	e.idMu.Unlock()
	if err != nil {
		panic("flowfabric: reading entropy: " + err.Error())
	}
	return model.NewUUIDv4(b)
}

// newExecutionUUID returns the uuid of a new execution: a version-7 UUID
// greater than every one this engine made before, so that executions of
// equal priority submitted in the same millisecond (every submission
// between two harness calls under a SimClock) still run in submission
// order.
func (e *Engine) newExecutionUUID(now time.Time) model.UUID {
	var r [4]byte
	e.idMu.Lock()
	ms := max(now.UnixMilli(), 0)
	switch {
	case ms > e.idMs:
		e.idMs, e.idSeq = ms, 0
	case e.idSeq < model.MaxUUIDv7Seq:
		e.idSeq++
	default:
		e.idMs, e.idSeq = e.idMs+1, 0
	}
	ms, seq := e.idMs, e.idSeq
	_, err := io.ReadFull(e.entropy, r[:])
	e.idMu.Unlock()
	if err != nil {
		panic("flowfabric: reading entropy: " + err.Error())
	}
	return model.NewUUIDv7(ms, seq, r)
}

func (e *Engine) newLeaseIDs() (model.LeaseID, model.AttemptID) {
	return model.LeaseID(e.newUUID()), model.AttemptID(e.newUUID())
}

// activity reports that this engine's workers or scanners changed an
// execution: Wait calls re-check and the OnActivity hook runs.
func (e *Engine) activity() {
	e.watchMu.Lock()
	for _, s := range e.watchers {
		s.Notify()
	}
	e.watchMu.Unlock()
	if e.cfg.OnActivity != nil {
		e.cfg.OnActivity()
	}
}

func (e *Engine) watchTerminal(sig *model.Signal) (stop func()) {
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	e.watchSeq++
	id := e.watchSeq
	e.watchers[id] = sig
	return func() {
		e.watchMu.Lock()
		delete(e.watchers, id)
		e.watchMu.Unlock()
	}
}

// noHint is the hinter of a scanner the store cannot run.
type noHint struct{}

func (noHint) Hint(int, time.Time) {}

// admissionScanStore is a store with its AdmissionStore, as the budget
// and quota scanners need it.
type admissionScanStore struct {
	model.Store
	model.AdmissionStore
}

// suspendScanStore is a store with its SuspendStore, as the suspension
// scanners need it.
type suspendScanStore struct {
	model.Store
	model.SuspendStore
}

// retentionScanStore is the retention trimmer's view of a store.
type retentionScanStore struct {
	model.Store
	model.RetentionStore
}

// indexRepairStore is the index reconciler's view of a store.
type indexRepairStore struct {
	model.Store
	model.IndexRepairer
}

// retentionFlowScanStore is the retention trimmer's view of a store that
// deletes flows too.
type retentionFlowScanStore struct {
	retentionScanStore
	model.FlowDeleter
}

// hint tells the scanners about a time something becomes due.
func (e *Engine) hint(s scan.Hinter, id ExecutionID, at time.Time) {
	if !at.IsZero() {
		s.Hint(id.Partition(), at)
	}
}

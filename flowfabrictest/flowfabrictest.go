// Package flowfabrictest helps users test code that submits and handles
// executions: an engine on memstore driven by an auto-advancing simulated
// clock, so a test of minutes of retries and delays runs in milliseconds,
// and assertions about what was submitted.
//
//	func TestSignup(t *testing.T) {
//		h := flowfabrictest.New(t, nil)
//		w := h.NewWorker(nil)
//		flowfabric.AddHandler(w, myHandler)
//		h.StartWorker(w)
//		res, _ := h.Engine.Submit(h.Ctx, SendEmail{To: "a@example.com"}, nil)
//		snap := h.WaitTerminal(res.ID)
//		// ...
//	}
//
// Time: the harness's clock only moves when every engine goroutine is
// waiting and the test itself is inside a harness call that waits
// (WaitTerminal, RunUntil, RunUntilIdle). While test code runs between
// calls, time stands still, so what a test observes is deterministic.
package flowfabrictest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// DefaultStart is the simulated time a harness starts at.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configures a harness. The zero value (or nil) means the
// defaults.
type Options struct {
	// Start is the initial simulated time (default DefaultStart).
	Start time.Time
	// Seed seeds execution and lease ids (default 1).
	Seed uint64
	// Engine is the base engine config; Clock, Entropy and OnActivity are
	// set by the harness.
	Engine *flowfabric.Config
	// Partitions sets the store's partition counts (default: memstore's).
	Partitions model.PartitionConfig
	// Feeds says which event feeds the store keeps (default none; see
	// flowfabric.Engine.Subscribe).
	Feeds model.Feeds
	// MaxSimulated bounds the simulated time one harness call may let pass
	// before it fails the test (default 24h).
	MaxSimulated time.Duration
	// NoScanners leaves the background scanners stopped.
	NoScanners bool
	// WrapStore, when set, wraps the memstore the engine uses (fault
	// injection, call counting). The wrapper should forward
	// model.WorkNotifier and model.LeaseNotifier so idle workers still wake
	// at once and handlers learn at once that their lease was taken away.
	WrapStore func(*memstore.Store) model.Store
}

// Harness is an engine on memstore with a simulated clock.
type Harness struct {
	T      testing.TB
	Ctx    context.Context
	Clock  *flowfabric.SimClock
	Store  *memstore.Store
	Engine *flowfabric.Engine

	maxSim   time.Duration
	activity *model.Signal
	mu       sync.Mutex
	workers  []*flowfabric.Worker
	untrack  func()
}

// New returns a started harness (scanners running) that stops everything
// at the end of the test.
func New(t testing.TB, opts *Options) *Harness {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxSimulated == 0 {
		o.MaxSimulated = 24 * time.Hour
	}
	clock := model.NewSimClock(o.Start)
	h := &Harness{T: t, Ctx: context.Background(), Clock: clock, maxSim: o.MaxSimulated}
	h.activity = clock.NewSignal()
	// The test goroutine counts as busy except while it waits in a harness
	// call, so time never moves under the test's feet.
	h.untrack = clock.Track()
	clock.SetAutoAdvance(true)
	h.Store = memstore.New(&memstore.Options{Partitions: o.Partitions, Feeds: o.Feeds})
	var cfg flowfabric.Config
	if o.Engine != nil {
		cfg = *o.Engine
	}
	cfg.Clock = clock
	cfg.Entropy = rand.NewChaCha8(seed32(o.Seed))
	if cfg.WaitpointKeys == nil {
		cfg.WaitpointKeys = TestKeyRing()
	}
	user := cfg.OnActivity
	cfg.OnActivity = func() {
		h.activity.Notify()
		if user != nil {
			user()
		}
	}
	var store model.Store = h.Store
	if o.WrapStore != nil {
		store = o.WrapStore(h.Store)
	}
	h.Engine = flowfabric.New(store, &cfg)
	if !o.NoScanners {
		if err := h.Engine.Start(h.Ctx); err != nil {
			t.Fatalf("flowfabrictest: start engine: %v", err)
		}
	}
	t.Cleanup(h.close)
	return h
}

func seed32(s uint64) [32]byte {
	var b [32]byte
	for i := range 4 {
		v := s + uint64(i)*0x9e3779b97f4a7c15
		for j := range 8 {
			b[i*8+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (h *Harness) close() {
	ctx := context.Background()
	h.mu.Lock()
	ws := h.workers
	h.mu.Unlock()
	for _, w := range ws {
		if err := w.Stop(ctx); err != nil {
			h.T.Errorf("flowfabrictest: stop worker: %v", err)
		}
	}
	if err := h.Engine.Stop(ctx); err != nil {
		h.T.Errorf("flowfabrictest: stop engine: %v", err)
	}
	h.untrack()
}

// NewWorker returns a worker of the harness's engine (default config:
// lane "default", lease 30s); register handlers, then StartWorker. The
// harness stops it at the end of the test.
func (h *Harness) NewWorker(cfg *flowfabric.WorkerConfig) *flowfabric.Worker {
	w := flowfabric.NewWorker(h.Engine, cfg)
	h.mu.Lock()
	h.workers = append(h.workers, w)
	h.mu.Unlock()
	return w
}

// StartWorker starts w, failing the test on error.
func (h *Harness) StartWorker(w *flowfabric.Worker) {
	h.T.Helper()
	if err := w.Start(h.Ctx); err != nil {
		h.T.Fatalf("flowfabrictest: start worker: %v", err)
	}
}

// StopWorker stops w (graceful drain, on simulated time), failing the test
// on error.
func (h *Harness) StopWorker(w *flowfabric.Worker) {
	h.T.Helper()
	if err := w.Stop(h.Ctx); err != nil {
		h.T.Fatalf("flowfabrictest: stop worker: %v", err)
	}
}

// RunUntil lets the engine run, and simulated time pass, until cond
// returns true; it fails the test if MaxSimulated passes first. cond is
// checked after every change the engine makes and at least every simulated
// second.
func (h *Harness) RunUntil(cond func() bool) {
	h.T.Helper()
	if err := h.runUntil(cond); err != nil {
		h.T.Fatal(err)
	}
}

func (h *Harness) runUntil(cond func() bool) error {
	limit := h.Clock.Now().Add(h.maxSim)
	for !cond() {
		if h.Clock.Now().After(limit) {
			return fmt.Errorf("flowfabrictest: condition not met within %s of simulated time", h.maxSim)
		}
		if err := h.Clock.Wait(h.Ctx, time.Second, h.activity); err != nil {
			return err
		}
	}
	return nil
}

// Advance lets d of simulated time pass while the engine runs.
func (h *Harness) Advance(d time.Duration) {
	h.T.Helper()
	end := h.Clock.Now().Add(d)
	for h.Clock.Now().Before(end) {
		if err := h.Clock.Wait(h.Ctx, end.Sub(h.Clock.Now()), nil); err != nil {
			h.T.Fatal(err)
		}
	}
}

// WaitTerminal runs until execution id is terminal and returns its
// snapshot. On failure it says what the execution is waiting on.
func (h *Harness) WaitTerminal(id flowfabric.ExecutionID) *flowfabric.Snapshot {
	h.T.Helper()
	var snap *flowfabric.Snapshot
	err := h.runUntil(func() bool {
		s, err := h.Engine.Describe(h.Ctx, id)
		if err != nil {
			h.T.Fatalf("flowfabrictest: wait terminal: %v", err)
		}
		snap = s
		return s.PublicState.IsTerminal()
	})
	if err != nil {
		h.T.Fatalf("%v; execution not terminal at %s, %s:\n%s", err, h.Clock.Now().Format(time.RFC3339),
			waitingOn(snap), describe(snap))
	}
	return snap
}

// waitingOn says in words what keeps a non-terminal execution from
// finishing.
func waitingOn(s *flowfabric.Snapshot) string {
	switch s.State.EligibilityState {
	case model.BlockedByRoute:
		return fmt.Sprintf("waiting for a worker with capabilities %v", s.RequiredCapabilities)
	case model.NotEligibleUntilTime:
		return "delayed until " + s.DelayUntil.Format(time.RFC3339)
	case model.BlockedByDependencies:
		return fmt.Sprintf("waiting for its upstreams in flow %v (a flow's nodes run once SubmitFlow sealed it and their upstreams succeeded)", s.Flow)
	}
	switch s.PublicState {
	case flowfabric.PublicSuspended:
		return fmt.Sprintf("suspended, %s (deliver a signal with Harness.Signal or SignalSuspended, resume it with Engine.Resume, or reach its timeout with FireTimeout)",
			s.State.BlockingReason)
	case flowfabric.PublicActive:
		if s.CurrentLease != nil {
			return fmt.Sprintf("running on worker %s (lease until %s)", s.CurrentLease.WorkerInstanceID,
				s.CurrentLease.ExpiresAt.Format(time.RFC3339))
		}
		return "active"
	case flowfabric.PublicWaiting:
		return fmt.Sprintf("waiting for a worker on lane %q to claim kind %q (is one started with a handler for it?)", s.Lane, s.Kind)
	}
	return "in state " + s.PublicState.String()
}

// RunUntilIdle runs until every execution in the store is terminal,
// blocked waiting for a capable worker, or suspended (waiting for a
// signal: see SignalSuspended and FireTimeout), and returns their
// snapshots. On failure it lists the executions still pending.
func (h *Harness) RunUntilIdle() []*flowfabric.Snapshot {
	h.T.Helper()
	var all []*flowfabric.Snapshot
	var pending []string
	err := h.runUntil(func() bool {
		all = h.Executions()
		pending = pending[:0]
		for _, s := range all {
			if !s.PublicState.IsTerminal() && s.State.EligibilityState != model.BlockedByRoute &&
				s.State.LifecyclePhase != model.PhaseSuspended {
				pending = append(pending, waitingOn(s)+": "+describe(s))
			}
		}
		return len(pending) == 0
	})
	if err != nil {
		h.T.Fatalf("%v; still pending at %s:\n%s", err, h.Clock.Now().Format(time.RFC3339), strings.Join(pending, "\n"))
	}
	return all
}

// describe is a one-line summary of an execution for failure messages.
func describe(s *flowfabric.Snapshot) string {
	line := fmt.Sprintf("%s kind=%s lane=%s %s phase=%s ownership=%s eligibility=%s attempts=%d epoch=%d",
		s.ID, s.Kind, s.Lane, s.PublicState, s.State.LifecyclePhase, s.State.OwnershipState,
		s.State.EligibilityState, s.TotalAttempts, s.LeaseEpoch)
	if s.CurrentLease != nil {
		line += fmt.Sprintf(" lease=%s until %s", s.CurrentLease.WorkerInstanceID, s.CurrentLease.ExpiresAt.Format(time.RFC3339))
	}
	if !s.DelayUntil.IsZero() {
		line += " delay_until=" + s.DelayUntil.Format(time.RFC3339)
	}
	return line
}

// Executions returns a snapshot of every execution, in partition and id
// order.
func (h *Harness) Executions() []*flowfabric.Snapshot {
	h.T.Helper()
	var out []*flowfabric.Snapshot
	for p := range h.Engine.Partitions() {
		var after flowfabric.ExecutionID
		for {
			page, err := h.Engine.List(h.Ctx, &flowfabric.ListOpts{Partition: p, After: after, Limit: 1000})
			if err != nil {
				h.T.Fatalf("flowfabrictest: list: %v", err)
			}
			for _, id := range page.IDs {
				s, err := h.Engine.Describe(h.Ctx, id)
				if errors.Is(err, flowfabric.ErrNotFound) {
					continue // deleted (retention) since the list
				}
				if err != nil {
					h.T.Fatalf("flowfabrictest: describe %s: %v", id, err)
				}
				out = append(out, s)
			}
			if page.Next.IsZero() {
				break
			}
			after = page.Next
		}
	}
	return out
}

// Submitted is one submitted execution of kind T with its decoded args.
type Submitted[T flowfabric.Args] struct {
	Args     T
	Snapshot *flowfabric.Snapshot
}

// FindSubmitted returns every execution of T's kind whose args satisfy
// match (nil: all).
func FindSubmitted[T flowfabric.Args](h *Harness, match func(T) bool) []Submitted[T] {
	h.T.Helper()
	var zero T
	kind := model.Kind(zero.Kind())
	var out []Submitted[T]
	for _, s := range h.Executions() {
		if s.Kind != kind {
			continue
		}
		payload, err := h.Engine.Payload(h.Ctx, s.ID)
		if err != nil {
			h.T.Fatalf("flowfabrictest: payload %s: %v", s.ID, err)
		}
		var args T
		if err := json.Unmarshal(payload, &args); err != nil {
			continue
		}
		if match == nil || match(args) {
			out = append(out, Submitted[T]{Args: args, Snapshot: s})
		}
	}
	return out
}

// RequireSubmitted fails the test unless an execution of T's kind was
// submitted with args equal to want (compared as JSON), and returns it.
func RequireSubmitted[T flowfabric.Args](h *Harness, want T) Submitted[T] {
	h.T.Helper()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		h.T.Fatalf("flowfabrictest: encode want: %v", err)
	}
	found := FindSubmitted(h, func(got T) bool {
		b, err := json.Marshal(got)
		return err == nil && bytes.Equal(b, wantJSON)
	})
	if len(found) == 0 {
		var zero T
		all := FindSubmitted[T](h, nil)
		h.T.Fatalf("flowfabrictest: no execution of kind %q with args %s was submitted (%d of that kind: %v)",
			zero.Kind(), wantJSON, len(all), argsOf(all))
	}
	return found[0]
}

// RequireNotSubmitted fails the test if an execution of T's kind matching
// match (nil: any) was submitted.
func RequireNotSubmitted[T flowfabric.Args](h *Harness, match func(T) bool) {
	h.T.Helper()
	if found := FindSubmitted(h, match); len(found) > 0 {
		var zero T
		h.T.Fatalf("flowfabrictest: %d unexpected executions of kind %q: %v", len(found), zero.Kind(), argsOf(found))
	}
}

func argsOf[T flowfabric.Args](s []Submitted[T]) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = reflect.ValueOf(x.Args).Interface()
	}
	return out
}

// Work runs handler once, inline on the test goroutine, on a new
// execution of args submitted with opts, with a real lease and TaskInfo,
// records its outcome as a worker would, and returns it (see
// flowfabric.Work). It fails the test when the run itself fails (a bad
// submit, a claim refused); the handler's own error is WorkResult.Err.
//
//	res := flowfabrictest.Work(h, welcomeHandler, SendEmail{To: "ada@example.com"}, nil)
//	if res.Err != nil { t.Fatal(res.Err) }
func Work[T flowfabric.Args](h *Harness, handler flowfabric.Handler[T], args T, opts *flowfabric.SubmitOpts) *flowfabric.WorkResult {
	h.T.Helper()
	res, err := flowfabric.Work(h.Ctx, h.Engine, handler, args, opts)
	if err != nil {
		h.T.Fatalf("flowfabrictest: work: %v", err)
	}
	return res
}

// AdvanceTicks lets simulated time run through the next n ticks of the
// engine's periodic job name (Engine.AddPeriodic), the engine working
// meanwhile as in Advance, and returns the ticks. It returns each tick
// once its submission is stored (Engine.Periodics reports it as Last), so
// a test can count what the ticks submitted right after.
func (h *Harness) AdvanceTicks(name string, n int) []time.Time {
	h.T.Helper()
	ticks := make([]time.Time, 0, n)
	for range n {
		next := h.periodic(name).Next
		if next.IsZero() {
			h.T.Fatalf("flowfabrictest: periodic job %q never ticks again (after %d ticks)", name, len(ticks))
		}
		if d := next.Sub(h.Clock.Now()); d > 0 {
			h.Advance(d)
		}
		h.RunUntil(func() bool { return !h.periodic(name).Last.Before(next) })
		ticks = append(ticks, next)
	}
	return ticks
}

// periodic returns the engine's periodic job name, failing the test when
// there is none.
func (h *Harness) periodic(name string) flowfabric.PeriodicInfo {
	h.T.Helper()
	for _, p := range h.Engine.Periodics() {
		if p.Name == name {
			return p
		}
	}
	h.T.Fatalf("flowfabrictest: the engine has no periodic job %q (add it with Engine.AddPeriodic)", name)
	return flowfabric.PeriodicInfo{}
}

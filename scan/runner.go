package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// ErrStopped is the cause of a scanner context cancelled by Stop.
var ErrStopped = errors.New("scan: runner stopped")

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Clock drives the loops (required).
	Clock model.Clock
	// Logger receives pass errors and panics (nil: discard).
	Logger *slog.Logger
	// RestartDelay is the pause before a scanner that panicked runs again
	// (zero: 1s).
	RestartDelay time.Duration
	// OnPass, when set, is called after every pass (metrics hook), on the
	// scanner's goroutine: it must return quickly.
	OnPass func(p Pass)
}

// Pass is one scanner pass, as RunnerConfig.OnPass is told about it.
type Pass struct {
	// Scanner is the scanner's name.
	Scanner string
	// Result is what the pass did (zero when it panicked).
	Result Result
	// Took is how long the pass ran, on the runner's clock (on a
	// simulated clock, only the simulated time that passed during it).
	Took time.Duration
	// Err is why the pass failed or that it panicked (nil: it did not).
	Err error
	// Panicked reports a pass that panicked (Err holds the value and the
	// stack).
	Panicked bool
}

// Runner runs scanners as goroutines. Start is non-blocking; Stop is
// idempotent, safe before Start, and returns once every goroutine is gone.
type Runner struct {
	cfg      RunnerConfig
	scanners []Scanner

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup
	kicks   map[string]*model.Signal
}

// NewRunner returns a runner for scanners.
func NewRunner(cfg RunnerConfig, scanners ...Scanner) *Runner {
	if cfg.Clock == nil {
		panic("scan: RunnerConfig.Clock is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = time.Second
	}
	r := &Runner{cfg: cfg, scanners: scanners, kicks: make(map[string]*model.Signal)}
	for _, s := range scanners {
		sig := cfg.Clock.NewSignal()
		r.kicks[s.Name()] = sig
		if p, ok := s.(planner); ok {
			p.setWake(sig.Notify)
		}
	}
	return r
}

// planner is a scanner that knows when it next has work: the timer
// scanners, which wake at the earliest due time they know (and at once
// when a hint brings it forward) instead of at their next interval.
type planner interface {
	plan(interval time.Duration) time.Duration
	setWake(func())
}

// Scanners returns the runner's scanners.
func (r *Runner) Scanners() []Scanner { return r.scanners }

// Start launches one goroutine per scanner and returns at once. The
// goroutines stop when ctx is cancelled or Stop is called. Starting twice
// is an error.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("scan: runner already started")
	}
	if r.stopped {
		return errors.New("scan: runner was stopped")
	}
	r.started = true
	ctx, r.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	for _, s := range r.scanners {
		untrack := r.cfg.Clock.Track()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer untrack()
			r.loop(ctx, s)
		}()
	}
	return nil
}

// Kick makes the named scanner run its next pass now.
func (r *Runner) Kick(name string) {
	if sig := r.kicks[name]; sig != nil {
		sig.Notify()
	}
}

// Stop cancels the scanners and waits for their goroutines to end, or for
// ctx to be done. It may be called any number of times, before or after
// Start.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	if r.cancel != nil {
		r.cancel(ErrStopped)
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scan: stop: %w", ctx.Err())
	}
}

func (r *Runner) loop(ctx context.Context, s Scanner) {
	log := r.cfg.Logger.With("scanner", s.Name())
	kick := r.kicks[s.Name()]
	for ctx.Err() == nil {
		start := r.cfg.Clock.Now()
		res, panicked, err := r.passSafely(ctx, s)
		if r.cfg.OnPass != nil {
			r.cfg.OnPass(Pass{Scanner: s.Name(), Result: res, Took: r.cfg.Clock.Now().Sub(start), Err: err, Panicked: panicked})
		}
		wait := s.Interval()
		switch {
		case panicked:
			log.Error("scanner panicked; restarting", "err", err, "after", r.cfg.RestartDelay)
			wait = r.cfg.RestartDelay
		case err != nil && ctx.Err() == nil:
			log.Warn("scanner pass failed", "err", err)
		case res.More:
			wait = 0 // a backlog: keep going, but let Stop in between
		default:
			if p, ok := s.(planner); ok {
				wait = p.plan(wait)
			}
		}
		if wait == 0 {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if r.cfg.Clock.Wait(ctx, wait, kick) != nil {
			return
		}
	}
}

func (r *Runner) passSafely(ctx context.Context, s Scanner) (res Result, panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("scan: %s panicked: %v\n%s", s.Name(), p, debug.Stack())
			panicked = true
		}
	}()
	res, err = s.RunOnce(ctx)
	return res, false, err
}

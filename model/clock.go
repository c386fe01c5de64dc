package model

import (
	"context"
	"sync"
	"time"
)

// Clock is the engine's only source of time and its only way to wait.
//
// The engine reads Now once per operation and passes the value to the store;
// stores never read a clock. Background goroutines block only in Wait, so a
// simulated clock can tell when every one of them is idle.
//
// Rules for implementers of engine components: a goroutine that calls Wait
// must be tracked: either it runs between Track and the returned untrack
// call, or it was started by a tracked goroutine that called Track for it
// before the go statement.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Wait blocks until d has passed on this clock (d <= 0: no timer), sig is
	// notified (sig may be nil), or ctx is done. It returns ctx.Err() in the
	// last case and nil otherwise. A notification that arrived while nobody
	// waited is kept and ends the next Wait at once.
	Wait(ctx context.Context, d time.Duration, sig *Signal) error
	// NewSignal returns a signal that wakes this clock's waiters.
	NewSignal() *Signal
	// Track marks the calling goroutine (or one about to be started) as busy
	// until untrack is called. Real clocks ignore it.
	Track() (untrack func())
}

// Signal is a wake-up for one waiting goroutine: Notify wakes the goroutine
// blocked in Wait on it or, when none is, makes the next Wait return at
// once (notifications do not queue up). Give each waiting goroutine its own
// signal. Create it with Clock.NewSignal (NewSignal makes one for real
// clocks).
type Signal struct {
	ch  chan struct{}
	sim *SimClock
}

// NewSignal returns a signal for real clocks.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{}, 1)} }

// C returns a channel that receives when the signal is notified; for use with
// real clocks in select statements.
func (s *Signal) C() <-chan struct{} { return s.ch }

// Notify wakes the waiter, or the next one if none waits now. It never
// blocks.
func (s *Signal) Notify() {
	if s.sim != nil {
		s.sim.notify(s)
		return
	}
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// SimClock is a simulated clock for deterministic tests. Time moves only by
// Advance and Set, or, in auto-advance mode, by jumping to the earliest
// pending Wait deadline as soon as every tracked goroutine is blocked in Wait.
//
// The zero value is not usable; call NewSimClock.
type SimClock struct {
	mu      sync.Mutex
	now     time.Time
	auto    bool
	busy    int
	waiters []*simWaiter
	jumps   int
}

type simWaiter struct {
	deadline time.Time // zero: none
	sig      *Signal
	ctx      context.Context
	wake     chan struct{}
	woken    bool
	ctxDone  bool // woken because ctx was done
}

// NewSimClock returns a clock stopped at start, in manual mode.
func NewSimClock(start time.Time) *SimClock {
	return &SimClock{now: start}
}

// Now implements Clock.
func (c *SimClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewSignal implements Clock.
func (c *SimClock) NewSignal() *Signal { return &Signal{ch: make(chan struct{}, 1), sim: c} }

// Track implements Clock.
func (c *SimClock) Track() func() {
	c.mu.Lock()
	c.busy++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.busy--
			c.maybeAdvance()
			c.mu.Unlock()
		})
	}
}

// Wait implements Clock.
func (c *SimClock) Wait(ctx context.Context, d time.Duration, sig *Signal) error {
	c.mu.Lock()
	if sig != nil {
		select {
		case <-sig.ch:
			c.mu.Unlock()
			return nil
		default:
		}
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return err
	}
	w := &simWaiter{sig: sig, ctx: ctx, wake: make(chan struct{})}
	if d > 0 {
		w.deadline = c.now.Add(d)
	}
	c.waiters = append(c.waiters, w)
	c.busy--
	c.maybeAdvance()
	c.mu.Unlock()
	select {
	case <-w.wake:
		if w.ctxDone {
			return ctx.Err()
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		if !w.woken {
			c.remove(w)
			c.busy++
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// SetAutoAdvance turns auto-advance on or off. When on, the clock jumps to
// the earliest Wait deadline whenever no tracked goroutine is busy.
func (c *SimClock) SetAutoAdvance(on bool) {
	c.mu.Lock()
	c.auto = on
	c.maybeAdvance()
	c.mu.Unlock()
}

// Advance moves the clock forward by d and wakes the waits that came due.
func (c *SimClock) Advance(d time.Duration) {
	if d < 0 {
		panic("model: SimClock.Advance with a negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fireDue()
	c.mu.Unlock()
}

// Set moves the clock to t, which must not be before Now.
func (c *SimClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("model: SimClock.Set moves time backwards")
	}
	c.now = t
	c.fireDue()
}

// NextDeadline returns the earliest pending Wait deadline.
func (c *SimClock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextDeadline()
}

// AdvanceToNext jumps to the earliest pending Wait deadline, if any, and
// reports whether it moved.
func (c *SimClock) AdvanceToNext() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.nextDeadline()
	if !ok {
		return false
	}
	if t.After(c.now) {
		c.now = t
	}
	c.fireDue()
	return true
}

// Busy returns how many tracked goroutines are not blocked in Wait.
func (c *SimClock) Busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy
}

// Jumps counts the auto-advance jumps so far (for tests of the clock).
func (c *SimClock) Jumps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jumps
}

func (c *SimClock) nextDeadline() (time.Time, bool) {
	var t time.Time
	found := false
	for _, w := range c.waiters {
		if !w.deadline.IsZero() && (!found || w.deadline.Before(t)) {
			t, found = w.deadline, true
		}
	}
	return t, found
}

func (c *SimClock) maybeAdvance() {
	if !c.auto || c.busy > 0 {
		return
	}
	// A waiter whose context was cancelled is about to run: it counts as
	// busy from now on, so time does not jump before it has seen the
	// cancellation (a cancel from a goroutine that then waits would
	// otherwise race with the woken goroutine's own accounting).
	if c.wakeCancelled() {
		return
	}
	t, ok := c.nextDeadline()
	if !ok {
		return
	}
	if t.After(c.now) {
		c.now = t
	}
	c.jumps++
	c.fireDue()
}

func (c *SimClock) fireDue() {
	for i := 0; i < len(c.waiters); {
		w := c.waiters[i]
		if !w.deadline.IsZero() && !w.deadline.After(c.now) {
			c.wakeAt(i)
			continue
		}
		i++
	}
}

func (c *SimClock) notify(s *Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	woke := false
	for i := 0; i < len(c.waiters); {
		if c.waiters[i].sig == s {
			c.wakeAt(i)
			woke = true
			continue
		}
		i++
	}
	if !woke {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}

// wakeCancelled wakes the waiters whose context is done and reports
// whether there were any.
func (c *SimClock) wakeCancelled() bool {
	woke := false
	for i := 0; i < len(c.waiters); {
		if w := c.waiters[i]; w.ctx.Err() != nil {
			w.ctxDone = true
			c.wakeAt(i)
			woke = true
			continue
		}
		i++
	}
	return woke
}

// wakeAt wakes waiter i and removes it from the list, keeping order.
func (c *SimClock) wakeAt(i int) {
	w := c.waiters[i]
	c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
	w.woken = true
	c.busy++
	close(w.wake)
}

func (c *SimClock) remove(w *simWaiter) {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return
		}
	}
}

// Millis converts t to Unix milliseconds, the unit stores keep times in.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts Unix milliseconds back to a UTC time; 0 is the zero
// time.
func FromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

package sim

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Sched is the simulator's clock and goroutine scheduler. It implements
// model.Clock and the engine's optional Go hook, so every goroutine an
// engine starts becomes a simulated goroutine (a proc) that runs only when
// the driver hands it the baton, and gives it back at its next yield point:
// a clock Wait, a store call (through Store) or its end. Exactly one of the
// driver and the procs runs at any time, and which proc runs next is the
// driver's seeded choice, so one seed gives one history.
//
// Time moves only when the driver says so (Advance, AdvanceTo), or when a
// slow store call is injected.
type Sched struct {
	now    time.Time
	procs  []*proc // not yet ended, in creation order
	cur    *proc   // running proc; nil while the driver runs
	back   chan *proc
	nextID int
	// owner is the process a goroutine started by the driver belongs to.
	owner int
	dead  map[int]bool
	// paused holds the processes that are stalled (a long GC pause, a
	// stopped VM) until the time given
	paused map[int]time.Time
	// closed: the run is over; every proc still parked ends at its next
	// yield point without giving control back.
	closed bool
}

type procState uint8

const (
	procNew procState = iota
	procReady
	procWaiting
	procRunning
	procDone
)

type wakeReason uint8

const (
	wokeTime wakeReason = iota
	wokeSignal
	wokeCtx
)

// proc is one simulated goroutine.
type proc struct {
	id     int
	owner  int
	state  procState
	resume chan struct{}

	deadline time.Time // zero: none
	sig      *model.Signal
	ctx      context.Context
	woke     wakeReason

	panicked any
}

// NewSched returns a scheduler whose clock reads start.
func NewSched(start time.Time) *Sched {
	return &Sched{now: start, back: make(chan *proc), dead: map[int]bool{}, paused: map[int]time.Time{}}
}

// Now implements model.Clock.
func (s *Sched) Now() time.Time { return s.now }

// NewSignal implements model.Clock: a plain signal whose pending
// notification the scheduler reads.
func (s *Sched) NewSignal() *model.Signal { return model.NewSignal() }

// Track implements model.Clock. Goroutines are known through Go.
func (s *Sched) Track() func() { return func() {} }

// Go starts f as a proc of the running proc's process (or of the
// process the driver names with SetOwner). It runs when the driver picks
// it.
func (s *Sched) Go(f func()) {
	owner := s.owner
	if s.cur != nil {
		owner = s.cur.owner
	}
	p := &proc{id: s.nextID, owner: owner, resume: make(chan struct{})}
	s.nextID++
	s.procs = append(s.procs, p)
	go func() {
		<-p.resume
		if s.closed {
			return
		}
		defer func() {
			if s.closed {
				return
			}
			if r := recover(); r != nil {
				p.panicked = fmt.Sprintf("%v", r)
			}
			p.state = procDone
			s.back <- p
		}()
		f()
	}()
}

// SetOwner names the process the goroutines the driver starts belong to.
func (s *Sched) SetOwner(owner int) { s.owner = owner }

// yield gives the baton back to the driver and waits for it again.
func (s *Sched) yield(p *proc) {
	s.cur = nil
	s.back <- p
	<-p.resume
	if s.closed {
		runtime.Goexit()
	}
}

// Wait implements model.Clock. Called by a proc, it parks the proc until
// the driver wakes it: d passed, sig notified or ctx done.
func (s *Sched) Wait(ctx context.Context, d time.Duration, sig *model.Signal) error {
	if s.closed {
		runtime.Goexit()
	}
	p := s.cur
	if p == nil {
		panic("sim: Wait outside a simulated goroutine")
	}
	if sig != nil {
		select {
		case <-sig.C():
			return nil
		default:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.state, p.ctx, p.sig, p.deadline = procWaiting, ctx, sig, time.Time{}
	if d > 0 {
		p.deadline = s.now.Add(d)
	}
	s.yield(p)
	if p.woke == wokeCtx {
		return ctx.Err()
	}
	return nil
}

// preempt is a yield point before a store call: the running proc stays
// runnable, and the driver may run others first.
func (s *Sched) preempt() {
	if s.closed {
		runtime.Goexit()
	}
	p := s.cur
	if p == nil {
		return // the driver itself
	}
	p.state = procReady
	s.yield(p)
}

// runnable reports whether p may run now, and why a waiting p wakes.
func (s *Sched) runnable(p *proc) (bool, wakeReason) {
	if s.dead[p.owner] || s.now.Before(s.paused[p.owner]) {
		return false, 0
	}
	switch p.state {
	case procNew, procReady:
		return true, 0
	case procWaiting:
		if p.ctx.Err() != nil {
			return true, wokeCtx
		}
		if p.sig != nil && len(p.sig.C()) > 0 {
			return true, wokeSignal
		}
		if !p.deadline.IsZero() && !s.now.Before(p.deadline) {
			return true, wokeTime
		}
	}
	return false, 0
}

// Runnable returns the procs that may run now, in creation order.
func (s *Sched) Runnable() []*proc {
	var out []*proc
	for _, p := range s.procs {
		if ok, _ := s.runnable(p); ok {
			out = append(out, p)
		}
	}
	return out
}

// Step runs p until its next yield point. It reports a panic that ended
// the proc.
func (s *Sched) Step(p *proc) (panicked any) {
	ok, why := s.runnable(p)
	if !ok {
		panic("sim: Step of a proc that cannot run")
	}
	if p.state == procWaiting {
		p.woke = why
		if why == wokeSignal {
			<-p.sig.C()
		}
		p.ctx, p.sig = nil, nil
	}
	p.state = procRunning
	s.cur = p
	p.resume <- struct{}{}
	q := <-s.back
	s.cur = nil
	if q != p {
		panic("sim: a proc ran out of turn")
	}
	if p.state == procDone {
		s.procs = slices.DeleteFunc(s.procs, func(x *proc) bool { return x == p })
		return p.panicked
	}
	return nil
}

// NextDeadline is the earliest deadline of a waiting proc of a live
// process.
func (s *Sched) NextDeadline() (time.Time, bool) {
	var t time.Time
	found := false
	for _, p := range s.procs {
		if s.dead[p.owner] {
			continue
		}
		var at time.Time
		switch {
		case p.state == procWaiting && !p.deadline.IsZero():
			at = p.deadline
		case p.state == procNew || p.state == procReady:
			at = s.now
		default:
			continue
		}
		if u := s.paused[p.owner]; at.Before(u) {
			at = u // runs when the pause ends
		}
		if !found || at.Before(t) {
			t, found = at, true
		}
	}
	return t, found
}

// Pause stalls a process until until: none of its procs runs before.
func (s *Sched) Pause(owner int, until time.Time) { s.paused[owner] = until }

// Advance moves the clock forward by d.
func (s *Sched) Advance(d time.Duration) {
	if d > 0 {
		s.now = s.now.Add(d)
	}
}

// AdvanceTo moves the clock to t if t is later.
func (s *Sched) AdvanceTo(t time.Time) {
	if t.After(s.now) {
		s.now = t
	}
}

// Kill makes a process die: its procs never run again, wherever they
// are (their leases are left as they are).
func (s *Sched) Kill(owner int) { s.dead[owner] = true }

// Dead reports whether a process died.
func (s *Sched) Dead(owner int) bool { return s.dead[owner] }

// Procs counts the procs of owner that have not ended.
func (s *Sched) Procs(owner int) int {
	n := 0
	for _, p := range s.procs {
		if p.owner == owner {
			n++
		}
	}
	return n
}

// Close ends the run: every proc still parked ends (runtime.Goexit at its
// yield point) without running further engine code that matters.
func (s *Sched) Close() {
	s.closed = true
	for _, p := range s.procs {
		close(p.resume)
	}
	s.procs = nil
}

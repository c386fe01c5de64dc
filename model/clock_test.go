package model

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

var clockStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// waitFor yields until cond holds. A SimClock has no event to wait on for
// "a goroutine is now blocked in Wait", so tests poll its state without
// sleeping.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		runtime.Gosched()
	}
}

func hasDeadline(c *SimClock) func() bool {
	return func() bool { _, ok := c.NextDeadline(); return ok }
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestSimClockManual(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	if !c.Now().Equal(clockStart) {
		t.Fatal("Now")
	}
	c.Advance(5 * time.Second)
	c.Set(clockStart.Add(10 * time.Second))
	if !c.Now().Equal(clockStart.Add(10 * time.Second)) {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Set(c.Now()) // not moving is fine
	mustPanic(t, "Set backwards", func() { c.Set(clockStart) })
	mustPanic(t, "Advance negative", func() { c.Advance(-time.Nanosecond) })
	if c.AdvanceToNext() {
		t.Fatal("AdvanceToNext without waiters moved")
	}
	c.SetAutoAdvance(true) // nothing to jump to
	if c.Jumps() != 0 || !c.Now().Equal(clockStart.Add(10*time.Second)) {
		t.Fatal("auto-advance without waiters jumped")
	}
}

func TestSimClockAdvanceFiresDueWaits(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	ctx := context.Background()
	short, long := make(chan error, 1), make(chan error, 1)
	for _, w := range []struct {
		d    time.Duration
		done chan error
	}{{10 * time.Second, short}, {30 * time.Second, long}} {
		untrack := c.Track()
		go func() {
			defer untrack()
			w.done <- c.Wait(ctx, w.d, nil)
		}()
	}
	waitFor(t, func() bool { return c.Busy() == 0 }) // both are waiting
	if d, ok := c.NextDeadline(); !ok || !d.Equal(clockStart.Add(10*time.Second)) {
		t.Fatalf("NextDeadline = %v %v", d, ok)
	}

	c.Advance(10*time.Second - time.Millisecond)
	select {
	case <-short:
		t.Fatal("a wait woke before its deadline")
	default:
	}
	c.Advance(time.Millisecond)
	if err := <-short; err != nil {
		t.Fatal(err)
	}
	select {
	case <-long:
		t.Fatal("the later wait woke too")
	default:
	}
	if d, ok := c.NextDeadline(); !ok || !d.Equal(clockStart.Add(30*time.Second)) {
		t.Fatalf("NextDeadline = %v %v", d, ok)
	}
	if !c.AdvanceToNext() || !c.Now().Equal(clockStart.Add(30*time.Second)) {
		t.Fatalf("AdvanceToNext: now %v", c.Now())
	}
	if err := <-long; err != nil {
		t.Fatal(err)
	}
	if _, ok := c.NextDeadline(); ok {
		t.Fatal("a fired wait is still pending")
	}
}

func TestSimClockSignalWakesWaiter(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	ctx := context.Background()
	s1, s2 := c.NewSignal(), c.NewSignal()
	var wg sync.WaitGroup
	done1, done2 := make(chan error, 1), make(chan error, 1)
	for _, w := range []struct {
		sig  *Signal
		done chan error
	}{{s1, done1}, {s2, done2}} {
		untrack := c.Track()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer untrack()
			w.done <- c.Wait(ctx, 0, w.sig) // no timer: only the signal ends it
		}()
	}
	waitFor(t, func() bool { return c.Busy() == 0 })
	s1.Notify()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	select {
	case <-done2:
		t.Fatal("a signal woke another signal's waiter")
	default:
	}
	s2.Notify()
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if c.Busy() != 0 || !c.Now().Equal(clockStart) {
		t.Fatalf("busy %d, now %v", c.Busy(), c.Now())
	}
}

func TestSimClockSignalKeptWhenNobodyWaits(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	sig := c.NewSignal()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	sig.Notify()
	// The kept notification ends the next Wait at once (an hour-long wait
	// on the calling goroutine would otherwise never return).
	if err := c.Wait(context.Background(), time.Hour, sig); err != nil {
		t.Fatal(err)
	}
	// It was consumed: the next Wait blocks (here: returns the context's
	// error).
	if err := c.Wait(canceled, time.Hour, sig); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after the notification was used = %v", err)
	}
	// Notifications do not queue up.
	sig.Notify()
	sig.Notify()
	if err := c.Wait(context.Background(), time.Hour, sig); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(canceled, time.Hour, sig); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second notification was queued: %v", err)
	}
	if _, ok := c.NextDeadline(); ok || c.Busy() != 0 {
		t.Fatal("returned waits left state behind")
	}
}

func TestSimClockAutoAdvance(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	c.SetAutoAdvance(true)
	ctx := context.Background()
	untrackA, untrackB := c.Track(), c.Track()
	startB := make(chan struct{})
	wokeA, wokeB := make(chan time.Time, 1), make(chan time.Time, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer untrackA()
		if err := c.Wait(ctx, 10*time.Second, nil); err != nil {
			t.Error(err)
		}
		wokeA <- c.Now() // A is busy again: the clock cannot move yet
	}()
	go func() {
		defer wg.Done()
		defer untrackB()
		<-startB
		if err := c.Wait(ctx, 20*time.Second, nil); err != nil {
			t.Error(err)
		}
		wokeB <- c.Now()
	}()

	// A waits, B is busy: no jump.
	waitFor(t, hasDeadline(c))
	if c.Busy() != 1 || c.Jumps() != 0 || !c.Now().Equal(clockStart) {
		t.Fatalf("moved while a tracked goroutine was busy: busy %d jumps %d now %v", c.Busy(), c.Jumps(), c.Now())
	}
	// B waits too: the clock jumps to the earliest deadline, A's.
	close(startB)
	if got := <-wokeA; !got.Equal(clockStart.Add(10 * time.Second)) {
		t.Fatalf("A woke at %v", got)
	}
	// A's untrack leaves only B, waiting: the clock jumps to B's deadline.
	if got := <-wokeB; !got.Equal(clockStart.Add(20 * time.Second)) {
		t.Fatalf("B woke at %v", got)
	}
	wg.Wait()
	if c.Jumps() != 2 || c.Busy() != 0 {
		t.Fatalf("jumps %d busy %d", c.Jumps(), c.Busy())
	}
}

func TestSimClockTrack(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	u1, u2 := c.Track(), c.Track()
	if c.Busy() != 2 {
		t.Fatalf("busy %d", c.Busy())
	}
	u1()
	u1() // untrack is idempotent
	if c.Busy() != 1 {
		t.Fatalf("busy %d after a double untrack", c.Busy())
	}
	u2()
	if c.Busy() != 0 {
		t.Fatalf("busy %d", c.Busy())
	}
}

func TestSimClockWaitContext(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Wait(canceled, time.Hour, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a canceled context = %v", err)
	}
	if _, ok := c.NextDeadline(); ok || c.Busy() != 0 {
		t.Fatal("a refused wait was registered")
	}

	ctx, cancel := context.WithCancel(context.Background())
	untrack := c.Track()
	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx, time.Hour, nil) }()
	waitFor(t, hasDeadline(c))
	if c.Busy() != 0 {
		t.Fatalf("busy %d while waiting", c.Busy())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
	if _, ok := c.NextDeadline(); ok {
		t.Fatal("a canceled wait is still pending")
	}
	if c.Busy() != 1 {
		t.Fatalf("busy %d after a canceled wait, want the goroutine busy again", c.Busy())
	}
	untrack()
	if !c.Now().Equal(clockStart) {
		t.Fatal("the clock moved")
	}
}

func TestRealSignal(t *testing.T) {
	t.Parallel()
	s := NewSignal()
	s.Notify()
	s.Notify() // never blocks; notifications do not queue
	<-s.C()
	select {
	case <-s.C():
		t.Fatal("a second notification was queued")
	default:
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	ts := time.UnixMilli(1735689600123)
	if Millis(ts) != 1735689600123 || !FromMillis(1735689600123).Equal(ts) {
		t.Fatal("round trip")
	}
	if FromMillis(1).Location() != time.UTC {
		t.Fatal("FromMillis must return UTC")
	}
	if !FromMillis(0).IsZero() {
		t.Fatal("0 ms is the zero time")
	}
}

// A waiter whose context is cancelled counts as busy before time may jump:
// a goroutine that cancels it and then waits itself does not let the clock
// move before the cancelled waiter has seen the cancellation.
func TestSimClockCancelBeforeJump(t *testing.T) {
	t.Parallel()
	c := NewSimClock(clockStart)
	c.SetAutoAdvance(true)
	untrackMe := c.Track()
	defer untrackMe()
	ctx, cancel := context.WithCancel(context.Background())
	untrackA := c.Track()
	sawAt := make(chan time.Time, 1)
	go func() {
		defer untrackA()
		if err := c.Wait(ctx, time.Hour, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v", err)
		}
		sawAt <- c.Now()
	}()
	waitFor(t, hasDeadline(c))
	cancel()
	if err := c.Wait(context.Background(), 10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if got := <-sawAt; !got.Equal(clockStart) {
		t.Fatalf("the cancelled waiter ran at %v, after the clock jumped", got.Sub(clockStart))
	}
}

// Package wallclock is the real-time model.Clock.
package wallclock

import (
	"context"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Clock reads the wall clock. The zero value is ready to use.
type Clock struct{}

var _ model.Clock = Clock{}

// Now implements model.Clock.
func (Clock) Now() time.Time { return time.Now() }

// NewSignal implements model.Clock.
func (Clock) NewSignal() *model.Signal { return model.NewSignal() }

// Track implements model.Clock; real time needs no tracking.
func (Clock) Track() func() { return func() {} }

// Wait implements model.Clock.
func (Clock) Wait(ctx context.Context, d time.Duration, sig *model.Signal) error {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	var sc <-chan struct{}
	if sig != nil {
		sc = sig.C()
	}
	select {
	case <-timer:
		return nil
	case <-sc:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package wallclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/internal/wallclock"
)

func TestWaitSignalAndContext(t *testing.T) {
	var c wallclock.Clock
	sig := c.NewSignal()
	sig.Notify() // kept until the next Wait
	if err := c.Wait(context.Background(), time.Hour, sig); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Wait(ctx, time.Hour, sig); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if err := c.Wait(context.Background(), time.Nanosecond, nil); err != nil {
		t.Fatal(err)
	}
	c.Track()()
}

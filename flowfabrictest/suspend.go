package flowfabrictest

import (
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// TestKeyRing returns the waitpoint key ring a harness uses when
// Options.Engine sets none: a fixed key, so tokens are reproducible in a
// test. Never use it outside tests.
func TestKeyRing() *flowfabric.KeyRing {
	r, err := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "test", Secret: []byte("flowfabrictest fixed secret, tests only!")})
	if err != nil {
		panic("flowfabrictest: " + err.Error())
	}
	return r
}

// WaitSuspended runs until execution id is suspended and returns its open
// suspension.
func (h *Harness) WaitSuspended(id flowfabric.ExecutionID) *flowfabric.SuspensionSnapshot {
	h.T.Helper()
	var snap *flowfabric.Snapshot
	err := h.runUntil(func() bool {
		s, err := h.Engine.Describe(h.Ctx, id)
		if err != nil {
			h.T.Fatalf("flowfabrictest: wait suspended: %v", err)
		}
		snap = s
		return s.State.LifecyclePhase == model.PhaseSuspended || s.PublicState.IsTerminal()
	})
	if err != nil {
		h.T.Fatalf("%v; execution not suspended at %s, %s:\n%s", err, h.Clock.Now().Format(time.RFC3339),
			waitingOn(snap), describe(snap))
	}
	if snap.PublicState.IsTerminal() {
		h.T.Fatalf("flowfabrictest: wait suspended: execution ended instead: %s", describe(snap))
	}
	s, err := h.Engine.Suspension(h.Ctx, id)
	if err != nil {
		h.T.Fatalf("flowfabrictest: wait suspended: %v", err)
	}
	return s
}

// Signal delivers a signal with a waitpoint token, as a webhook would,
// and fails the test if the delivery is refused.
func (h *Harness) Signal(token string, s *flowfabric.SignalInput) *flowfabric.SignalDelivery {
	h.T.Helper()
	d, err := h.Engine.DeliverSignal(h.Ctx, token, s)
	if err != nil {
		h.T.Fatalf("flowfabrictest: signal: %v", err)
	}
	return d
}

// SignalSuspended waits until execution id is suspended and delivers s to
// its suspension's own waitpoint.
func (h *Harness) SignalSuspended(id flowfabric.ExecutionID, s *flowfabric.SignalInput) *flowfabric.SignalDelivery {
	h.T.Helper()
	susp := h.WaitSuspended(id)
	wps, err := h.Engine.Waitpoints(h.Ctx, id)
	if err != nil {
		h.T.Fatalf("flowfabrictest: signal suspended: %v", err)
	}
	for _, w := range wps {
		if w.ID == susp.Waitpoint {
			return h.Signal(w.Token, s)
		}
	}
	h.T.Fatalf("flowfabrictest: signal suspended: the suspension's waitpoint %s is not listed", susp.Waitpoint)
	return nil
}

// FireTimeout waits until execution id is suspended and lets simulated
// time pass to its suspension's timeout, so the timeout behaviour applies
// (the harness's scanners must be running). It fails the test when the
// suspension has no timeout.
func (h *Harness) FireTimeout(id flowfabric.ExecutionID) {
	h.T.Helper()
	susp := h.WaitSuspended(id)
	if susp.TimeoutAt.IsZero() {
		h.T.Fatalf("flowfabrictest: fire timeout: the suspension of %s has no timeout", id)
	}
	if d := susp.TimeoutAt.Sub(h.Clock.Now()); d > 0 {
		h.Advance(d)
	}
	h.RunUntil(func() bool {
		s, err := h.Engine.Suspension(h.Ctx, id)
		if err != nil {
			h.T.Fatalf("flowfabrictest: fire timeout: %v", err)
		}
		return s.ID != susp.ID || !s.ClosedAt.IsZero() || s.Escalated
	})
}

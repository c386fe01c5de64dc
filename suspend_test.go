package flowfabric_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// approve waits for a signal, then stores what the signals said.
type approve struct {
	Cond    string        `json:"cond"` // "one", "two_sources", "operator", "timeout"
	Timeout time.Duration `json:"timeout"`
	On      string        `json:"on"` // timeout behaviour
}

func (approve) Kind() string { return "approve" }

// approveHandler suspends on the first run and, resumed, stores the names
// and payloads of its signals as "name=payload,...".
func approveHandler(runs *atomic.Int32) flowfabric.Handler[approve] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[approve]) error {
		runs.Add(1)
		if t.Resumed {
			sigs, err := t.Signals(ctx)
			if err != nil {
				return err
			}
			var parts []string
			for _, s := range sigs {
				parts = append(parts, s.Name+"="+string(s.Payload))
			}
			return t.SetResult([]byte(strings.Join(parts, ",")))
		}
		cond := flowfabric.SignalFor("approve")
		switch t.Args.Cond {
		case "two_sources":
			cond = flowfabric.CountOf(2, flowfabric.DistinctSources, "approve")
		case "operator":
			cond = flowfabric.OperatorOnly()
		case "timeout":
			cond = flowfabric.TimeoutOnly()
		}
		opts := &flowfabric.SuspendOpts{Reason: flowfabric.SuspendForApproval, Timeout: t.Args.Timeout}
		if b, ok := model.ParseTimeoutBehavior(t.Args.On); ok {
			opts.OnTimeout = b
		}
		return flowfabric.Suspend(cond, opts)
	})
}

func startApprover(t *testing.T, h *flowfabrictest.Harness, runs *atomic.Int32) {
	t.Helper()
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, approveHandler(runs))
	h.StartWorker(w)
}

// Scenario 12: suspend → signal → resume → the same attempt runs again
// under a new lease and reads the signal.
func TestSuspendSignalResume(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startApprover(t, h, &runs)
	res, err := h.Engine.Submit(h.Ctx, approve{Cond: "one"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	susp := h.WaitSuspended(res.ID)
	if susp.Reason != flowfabric.SuspendForApproval || !susp.ClosedAt.IsZero() {
		t.Fatalf("suspension = %+v", susp)
	}
	snap, _ := h.Engine.Describe(h.Ctx, res.ID)
	if snap.State.BlockingReason != model.WaitingForApproval || snap.CurrentLease != nil {
		t.Fatalf("suspended execution: %s, lease %v", snap.State.BlockingReason, snap.CurrentLease)
	}
	d := h.SignalSuspended(res.ID, &flowfabric.SignalInput{Name: "approve", Payload: []byte("alice")})
	if d.Effect != flowfabric.SignalResumed {
		t.Fatalf("effect = %s, want resumed", d.Effect)
	}
	final := h.WaitTerminal(res.ID)
	if final.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state = %s", final.PublicState)
	}
	out, _ := h.Engine.Result(h.Ctx, res.ID)
	if string(out) != "approve=alice" {
		t.Fatalf("result = %q", out)
	}
	feed, last, err := h.Engine.SignalFeed(h.Ctx, res.ID.Partition(), 0, 0)
	if err != nil || last != 1 || len(feed) != 1 || feed[0].Effect != flowfabric.SignalResumed || feed[0].Execution != res.ID {
		t.Fatalf("signal feed = %+v (last %d), %v", feed, last, err)
	}
	if final.TotalAttempts != 1 || final.LeaseEpoch != 2 || runs.Load() != 2 {
		t.Fatalf("attempts %d, epoch %d, runs %d; want 1 attempt resumed under epoch 2, 2 runs",
			final.TotalAttempts, final.LeaseEpoch, runs.Load())
	}
}

// Two distinct approvers are needed; a second approval from the same one
// counts once, and a redelivery by idempotency key is a duplicate.
func TestSuspendTwoApprovers(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startApprover(t, h, &runs)
	res, _ := h.Engine.Submit(h.Ctx, approve{Cond: "two_sources"}, nil)
	susp := h.WaitSuspended(res.ID)
	wps, err := h.Engine.Waitpoints(h.Ctx, res.ID)
	if err != nil || len(wps) != 1 || wps[0].ID != susp.Waitpoint || wps[0].Token == "" {
		t.Fatalf("waitpoints = %+v, %v", wps, err)
	}
	tok := wps[0].Token
	send := func(src, key string) *flowfabric.SignalDelivery {
		return h.Signal(tok, &flowfabric.SignalInput{Name: "approve", Source: "approver:" + src, Payload: []byte(src), IdempotencyKey: key})
	}
	first := send("alice", "a1")
	if first.Effect != flowfabric.SignalAccepted {
		t.Fatalf("first approval: %s", first.Effect)
	}
	if d := send("alice", "a1"); d.Effect != flowfabric.SignalDuplicate || d.Signal != first.Signal {
		t.Fatalf("redelivery: %s %s, want duplicate of %s", d.Effect, d.Signal, first.Signal)
	}
	if d := send("alice", "a2"); d.Effect != flowfabric.SignalAccepted {
		t.Fatalf("same approver again: %s, want accepted (counted once)", d.Effect)
	}
	if d := send("bob", "b1"); d.Effect != flowfabric.SignalResumed {
		t.Fatalf("second approver: %s, want resumed", d.Effect)
	}
	h.WaitTerminal(res.ID)
	out, _ := h.Engine.Result(h.Ctx, res.ID)
	if string(out) != "approve=alice,approve=alice,approve=bob" {
		t.Fatalf("result = %q", out)
	}
	if _, err := h.Engine.DeliverSignal(h.Ctx, tok, &flowfabric.SignalInput{Name: "approve"}); !errors.Is(err, flowfabric.ErrWaitpointClosed) {
		t.Fatalf("signal after the end: %v, want ErrWaitpointClosed", err)
	}
}

// Scenario 15: a signal buffered on a pending waitpoint already satisfies
// the suspension, so the handler runs again at once in the same lease.
func TestSuspendAlreadySatisfied(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[approve]) error {
		runs.Add(1)
		if t.Resumed {
			sigs, err := t.Signals(ctx)
			if err != nil || len(sigs) != 1 {
				return flowfabric.Permanent(errors.New("want one signal"))
			}
			return t.SetResult(sigs[0].Payload)
		}
		wp, err := t.CreateWaitpoint(ctx, nil)
		if err != nil {
			return err
		}
		// the answer comes back before the handler suspends
		d, err := h.Engine.DeliverSignal(ctx, wp.Token, &flowfabric.SignalInput{Name: "approve", Payload: []byte("early")})
		if err != nil || d.Effect != flowfabric.SignalBuffered {
			return flowfabric.Permanent(errors.New("want a buffered signal"))
		}
		return flowfabric.Suspend(flowfabric.SignalFor("approve"), &flowfabric.SuspendOpts{Waitpoint: wp})
	}))
	h.StartWorker(w)
	res, _ := h.Engine.Submit(h.Ctx, approve{}, nil)
	final := h.WaitTerminal(res.ID)
	out, _ := h.Engine.Result(h.Ctx, res.ID)
	if final.PublicState != flowfabric.PublicCompleted || string(out) != "early" {
		t.Fatalf("state %s, result %q", final.PublicState, out)
	}
	if final.LeaseEpoch != 1 || runs.Load() != 2 {
		t.Fatalf("epoch %d, runs %d: want the same lease (epoch 1) and two runs", final.LeaseEpoch, runs.Load())
	}
}

// Scenario 14: a timeout fails the execution, or resumes it.
func TestSuspendTimeout(t *testing.T) {
	for _, tc := range []struct {
		on   string
		want flowfabric.PublicState
	}{
		{"fail", flowfabric.PublicFailed},
		{"cancel", flowfabric.PublicCancelled},
		{"expire", flowfabric.PublicExpired},
		{"auto_resume", flowfabric.PublicCompleted},
	} {
		t.Run(tc.on, func(t *testing.T) {
			h := flowfabrictest.New(t, nil)
			var runs atomic.Int32
			startApprover(t, h, &runs)
			res, _ := h.Engine.Submit(h.Ctx, approve{Cond: "one", Timeout: time.Hour, On: tc.on}, nil)
			h.FireTimeout(res.ID)
			final := h.WaitTerminal(res.ID)
			if final.PublicState != tc.want {
				t.Fatalf("state = %s, want %s", final.PublicState, tc.want)
			}
			susp, err := h.Engine.Suspension(h.Ctx, res.ID)
			if err != nil || susp.ClosedAt.IsZero() {
				t.Fatalf("suspension after timeout: %+v, %v", susp, err)
			}
		})
	}
	t.Run("escalate", func(t *testing.T) {
		h := flowfabrictest.New(t, nil)
		var runs atomic.Int32
		startApprover(t, h, &runs)
		res, _ := h.Engine.Submit(h.Ctx, approve{Cond: "one", Timeout: time.Hour, On: "escalate"}, nil)
		h.FireTimeout(res.ID)
		susp := h.WaitSuspended(res.ID)
		if !susp.Escalated || susp.Reason != flowfabric.SuspendForOperatorReview || !susp.TimeoutAt.IsZero() {
			t.Fatalf("escalated suspension = %+v", susp)
		}
		if err := h.Engine.Resume(h.Ctx, res.ID); err != nil {
			t.Fatal(err)
		}
		if final := h.WaitTerminal(res.ID); final.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("state = %s", final.PublicState)
		}
		if err := h.Engine.Resume(h.Ctx, res.ID); !errors.Is(err, flowfabric.ErrNotSuspended) {
			t.Fatalf("resume of a finished execution: %v, want ErrNotSuspended", err)
		}
	})
}

// An operator-only suspension ignores signals and waits for Resume.
func TestSuspendOperatorOnly(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startApprover(t, h, &runs)
	res, _ := h.Engine.Submit(h.Ctx, approve{Cond: "operator"}, nil)
	d := h.SignalSuspended(res.ID, &flowfabric.SignalInput{Name: "approve"})
	if d.Effect != flowfabric.SignalIgnored || d.Ignored != model.IgnoredOperatorOnly {
		t.Fatalf("signal to an operator-only suspension: %s (%s)", d.Effect, d.Ignored)
	}
	page, err := h.Engine.ListSuspended(h.Ctx, &flowfabric.ListOpts{Partition: res.ID.Partition()})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != res.ID {
		t.Fatalf("list suspended = %+v, %v", page, err)
	}
	if err := h.Engine.Resume(h.Ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.ID)
}

// A token that does not verify is refused with ErrInvalidToken before the
// store is asked anything; every kind of bad token gets the same error.
func TestDeliverSignalRefusesBadTokens(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startApprover(t, h, &runs)
	res, _ := h.Engine.Submit(h.Ctx, approve{Cond: "one"}, nil)
	h.WaitSuspended(res.ID)
	wps, _ := h.Engine.Waitpoints(h.Ctx, res.ID)
	tok := wps[0].Token
	other, _ := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "test", Secret: []byte("another secret of at least 32 bytes!")})
	forged, _ := other.Sign(model.WaitpointToken{Execution: res.ID, Waitpoint: wps[0].ID, CreatedAt: wps[0].CreatedAt})
	flip := []byte(tok)
	flip[len(flip)-3] ^= 1
	for name, bad := range map[string]string{
		"empty": "", "truncated": tok[:len(tok)-4], "tampered": string(flip), "forged": forged, "garbage": "ffw1.????",
	} {
		if _, err := h.Engine.DeliverSignal(h.Ctx, bad, &flowfabric.SignalInput{Name: "approve"}); !errors.Is(err, flowfabric.ErrInvalidToken) {
			t.Errorf("%s token: %v, want ErrInvalidToken", name, err)
		}
	}
	if snap, _ := h.Engine.Describe(h.Ctx, res.ID); snap.PublicState != flowfabric.PublicSuspended {
		t.Fatalf("a refused token changed the execution: %s", snap.PublicState)
	}
	if s, _ := h.Engine.Suspension(h.Ctx, res.ID); len(s.Signals) != 0 {
		t.Fatalf("a refused token recorded a signal: %+v", s.Signals)
	}
}

// Without a key ring, token features fail naming the config field.
func TestWaitpointKeysRequired(t *testing.T) {
	e := flowfabric.New(memstore.New(nil), nil)
	_, err := e.DeliverSignal(context.Background(), "ffw1.x", nil)
	var me *model.Error
	if !errors.As(err, &me) || me.Field != "Config.WaitpointKeys" {
		t.Fatalf("deliver without keys: %v, want a validation error naming Config.WaitpointKeys", err)
	}
}

// FuzzDeliverSignal: whatever the token and the signal, delivery either
// succeeds with a known effect or fails with a typed error and writes
// nothing.
func FuzzDeliverSignal(f *testing.F) {
	h := flowfabrictest.New(f, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[approve]) error {
		return flowfabric.Suspend(flowfabric.OperatorOnly(), &flowfabric.SuspendOpts{SignalLimit: model.MaxSignalLimit})
	}))
	h.StartWorker(w)
	res, err := h.Engine.Submit(h.Ctx, approve{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	h.WaitSuspended(res.ID)
	wps, err := h.Engine.Waitpoints(h.Ctx, res.ID)
	if err != nil || len(wps) != 1 {
		f.Fatal(wps, err)
	}
	tok := wps[0].Token
	f.Add(0, "approve", "user:ada", []byte("yes"), "k1", int64(0))
	f.Add(7, "", "", []byte{}, "", int64(-1))
	f.Add(len(tok)-1, "x\xff", strings.Repeat("s", 300), make([]byte, model.MaxSignalPayloadBytes+1), "\x00", int64(time.Hour))
	f.Fuzz(func(t *testing.T, flip int, name, source string, payload []byte, key string, ttl int64) {
		token := []byte(tok)
		if flip > 0 {
			token[flip%len(token)] ^= byte(flip>>8) | 1
		}
		before, err := h.Engine.Suspension(h.Ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		d, err := h.Engine.DeliverSignal(h.Ctx, string(token), &flowfabric.SignalInput{
			Name: name, Source: source, Payload: payload, IdempotencyKey: key, DedupTTL: time.Duration(ttl),
		})
		if err == nil {
			if d.Effect != flowfabric.SignalIgnored && d.Effect != flowfabric.SignalDuplicate {
				t.Fatalf("effect %s on an operator-only suspension", d.Effect)
			}
			return
		}
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("untyped error %v", err)
		}
		after, err := h.Engine.Suspension(h.Ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Signals) != len(before.Signals) {
			t.Fatalf("a refused delivery (%v) recorded a signal", me)
		}
	})
}

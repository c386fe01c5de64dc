package flowfabric_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

// gone says whether the execution was deleted.
func gone(t *testing.T, h *flowfabrictest.Harness, id flowfabric.ExecutionID) bool {
	t.Helper()
	_, err := h.Engine.Describe(h.Ctx, id)
	if err != nil && !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatal(err)
	}
	return err != nil
}

// TestRetentionDefaults: with no retention configured anywhere, a
// completed execution is deleted 24 hours after it ended and a failed
// one 7 days after; until then both can be read.
func TestRetentionDefaults(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{MaxSimulated: 8 * 24 * time.Hour})
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, greetHandler())
	flowfabric.AddHandler(w, flakyHandler(&calls))
	h.StartWorker(w)
	ok := mustSubmit(t, h, greet{Name: "ada"}, nil)
	bad := mustSubmit(t, h, flaky{FailTimes: 5}, &flowfabric.SubmitOpts{RetryPolicy: flowfabric.NoRetries()})
	okSnap, badSnap := h.WaitTerminal(ok), h.WaitTerminal(bad)
	if okSnap.Retention != flowfabric.DefaultRetention() {
		t.Fatalf("retention %+v, want the default %+v", okSnap.Retention, flowfabric.DefaultRetention())
	}
	h.Advance(okSnap.TerminalAt.Add(24*time.Hour).Sub(h.Clock.Now()).Truncate(time.Second) - time.Second)
	if gone(t, h, ok) {
		t.Fatalf("completed execution deleted before its 24h at %v (ended %v)", h.Clock.Now(), okSnap.TerminalAt)
	}
	h.RunUntil(func() bool { return gone(t, h, ok) })
	if late := h.Clock.Now().Sub(okSnap.TerminalAt.Add(24 * time.Hour)); late > 2*time.Minute {
		t.Fatalf("deleted %v after its retention ran out", late)
	}
	if gone(t, h, bad) {
		t.Fatal("the failed execution went with the completed one")
	}
	if _, err := h.Engine.Result(h.Ctx, ok); !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatalf("result of a deleted execution: %v", err)
	}
	h.RunUntil(func() bool { return gone(t, h, bad) })
	if at := h.Clock.Now().Sub(badSnap.TerminalAt); at < 7*24*time.Hour || at > 7*24*time.Hour+2*time.Minute {
		t.Fatalf("failed execution deleted %v after it ended, want 7 days", at)
	}
}

// TestRetentionLayers: a submission's retention overrides its lane's,
// which overrides the engine's, field by field; KeepForever keeps.
func TestRetentionLayers(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		Retention: flowfabric.Retention{Completed: time.Hour, Cancelled: flowfabric.KeepForever},
		Lanes:     map[flowfabric.LaneID]flowfabric.LaneConfig{"short": {Retention: flowfabric.Retention{Completed: time.Minute}}},
	}})
	cases := []struct {
		opts *flowfabric.SubmitOpts
		want flowfabric.Retention
	}{
		{nil, flowfabric.Retention{Completed: time.Hour, Failed: 7 * 24 * time.Hour}},
		{&flowfabric.SubmitOpts{Lane: "short"}, flowfabric.Retention{Completed: time.Minute, Failed: 7 * 24 * time.Hour}},
		{&flowfabric.SubmitOpts{Lane: "short", Retention: flowfabric.Retention{Completed: 5 * time.Second, Failed: flowfabric.KeepForever, Cancelled: time.Second}},
			flowfabric.Retention{Completed: 5 * time.Second, Cancelled: time.Second}},
	}
	for i, c := range cases {
		id := mustSubmit(t, h, greet{Name: "x"}, c.opts)
		s, err := h.Engine.Describe(h.Ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Retention != c.want {
			t.Errorf("case %d: retention %+v, want %+v", i, s.Retention, c.want)
		}
	}
	for _, bad := range []flowfabric.Retention{{Completed: time.Microsecond}, {Failed: 3651 * 24 * time.Hour}, {Cancelled: time.Second + time.Nanosecond}} {
		_, err := h.Engine.Submit(h.Ctx, greet{Name: "x"}, &flowfabric.SubmitOpts{Retention: bad})
		if !errors.Is(err, flowfabric.ErrValidation) {
			t.Errorf("retention %+v: %v, want a validation error", bad, err)
		}
	}
	if err := h.Engine.RegisterLane("l", flowfabric.LaneConfig{Retention: flowfabric.Retention{Completed: time.Nanosecond}}); !errors.Is(err, flowfabric.ErrValidation) {
		t.Errorf("RegisterLane with a bad retention: %v", err)
	}
}

// TestDelete: an operator deletes a terminal execution at once; a live
// one is refused and kept; a deleted one is not found.
func TestDelete(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	id := mustSubmit(t, h, greet{Name: "ada"}, &flowfabric.SubmitOpts{IdempotencyKey: "once"})
	h.WaitTerminal(id)
	later := mustSubmit(t, h, greet{Name: "bob"}, &flowfabric.SubmitOpts{Delay: time.Hour})
	if err := h.Engine.Delete(h.Ctx, later); !errors.Is(err, flowfabric.ErrNotTerminal) {
		t.Fatalf("delete of a delayed execution: %v", err)
	}
	if gone(t, h, later) {
		t.Fatal("a refused delete deleted")
	}
	if err := h.Engine.Delete(h.Ctx, id); err != nil {
		t.Fatal(err)
	}
	if !gone(t, h, id) {
		t.Fatal("still there after Delete")
	}
	if err := h.Engine.Delete(h.Ctx, id); !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// the idempotency key is free again
	r, err := h.Engine.Submit(h.Ctx, greet{Name: "ada"}, &flowfabric.SubmitOpts{IdempotencyKey: "once"})
	if err != nil || r.Duplicate || r.ID == id {
		t.Fatalf("resubmit with the key: %+v %v", r, err)
	}
}

// TestFlowRetention: a finished flow goes whole once every member's
// retention has run out, not when its first member's does; DeleteFlow
// refuses a flow still running and deletes a finished one at once.
func TestFlowRetention(t *testing.T) {
	h, _ := newFlowHarness(t, &flowfabrictest.Options{MaxSimulated: 8 * time.Hour})
	f := flowfabric.NewFlow()
	a := f.Add(step{Name: "a"}, &flowfabric.SubmitOpts{Lane: flowLane, Retention: flowfabric.Retention{Completed: time.Hour}})
	b := f.Add(step{Name: "b"}, &flowfabric.SubmitOpts{Lane: flowLane, Retention: flowfabric.Retention{Completed: 3 * time.Hour}}).After(a)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	as, bs := h.WaitTerminal(res.Of(a)), h.WaitTerminal(res.Of(b))
	flowGone := func() bool {
		_, err := h.Engine.DescribeFlow(h.Ctx, res.ID)
		if err != nil && !errors.Is(err, flowfabric.ErrFlowNotFound) {
			t.Fatal(err)
		}
		return err != nil
	}
	h.Advance(as.TerminalAt.Add(2 * time.Hour).Sub(h.Clock.Now()))
	if flowGone() || gone(t, h, res.Of(a)) {
		t.Fatal("the flow went when its first member's retention ran out")
	}
	h.RunUntil(flowGone)
	if late := h.Clock.Now().Sub(bs.TerminalAt.Add(3 * time.Hour)); late < 0 || late > 2*time.Minute {
		t.Fatalf("flow deleted %v after its last member's retention ran out", late)
	}
	for _, id := range res.Executions {
		if !gone(t, h, id) {
			t.Fatalf("member %v left after its flow was trimmed", id)
		}
	}

	// an operator: refused while a node runs, then at once
	g := flowfabric.NewFlow()
	blocker := g.Add(step{Name: "block", Block: true}, &flowfabric.SubmitOpts{Lane: flowLane})
	res, err = h.Engine.SubmitFlow(h.Ctx, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Engine.DeleteFlow(h.Ctx, res.ID); !errors.Is(err, flowfabric.ErrNotTerminal) {
		t.Fatalf("DeleteFlow of a running flow: %v", err)
	}
	if err := h.Engine.Cancel(h.Ctx, res.Of(blocker), "stop"); err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.Of(blocker))
	if err := h.Engine.Delete(h.Ctx, res.Of(blocker)); !errors.Is(err, flowfabric.ErrInFlow) {
		t.Fatalf("Delete of a member: %v", err)
	}
	if err := h.Engine.DeleteFlow(h.Ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	if !flowGone() || !gone(t, h, res.Of(blocker)) {
		t.Fatal("DeleteFlow left the flow or its member")
	}
	if err := h.Engine.DeleteFlow(h.Ctx, res.ID); !errors.Is(err, flowfabric.ErrFlowNotFound) {
		t.Fatalf("second DeleteFlow: %v", err)
	}
}

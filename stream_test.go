package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// streamer appends Steps durable frames, one best-effort token and two
// summary patches; with FailFirst its first attempt fails after one frame.
type streamer struct {
	Steps     int  `json:"steps"`
	FailFirst bool `json:"fail_first"`
}

func (streamer) Kind() string { return "streamer" }

// release, when set, holds the handler until notified; it is a signal of
// the simulated clock, so the clock still moves while the handler waits.
func streamHandler(clock flowfabric.Clock, release *model.Signal) flowfabric.Handler[streamer] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[streamer]) error {
		if t.Args.FailFirst && t.Attempt == 0 {
			if _, err := t.AppendFrame(ctx, "log", []byte("first try"), nil); err != nil {
				return err
			}
			return errors.New("try again")
		}
		if release != nil {
			if err := clock.Wait(ctx, 0, release); err != nil {
				return err
			}
		}
		for i := range t.Args.Steps {
			if _, err := t.AppendFrame(ctx, "step", fmt.Appendf(nil, "step %d", i), &flowfabric.FrameOpts{Encoding: "text"}); err != nil {
				return err
			}
		}
		if _, err := t.AppendFrame(ctx, "token", []byte{0, 0xff, 'x'}, &flowfabric.FrameOpts{Mode: flowfabric.StreamBestEffort}); err != nil {
			return err
		}
		if _, err := t.PatchSummary(ctx, []byte(`{"status":"running","steps":{"done":1}}`)); err != nil {
			return err
		}
		_, err := t.PatchSummary(ctx, []byte(`{"status":"done","steps":{"done":null,"total":3}}`))
		return err
	})
}

// A follower started before the worker sees every frame once, in order,
// and stops when the attempt's stream closes; the summary has both patches
// merged (scenario 29).
func TestStreamFollowUntilClosed(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, streamHandler(nil, nil))
	res, err := e.Submit(h.Ctx, streamer{Steps: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		frames []flowfabric.Frame
		err    error
	}
	out := make(chan got, 1)
	done := h.Clock.Track()
	go func() {
		defer done()
		var g got
		for f, err := range e.Frames(h.Ctx, res.ID, 0, nil) {
			if err != nil {
				g.err = err
				break
			}
			g.frames = append(g.frames, f)
		}
		out <- g
	}()
	h.StartWorker(w)
	if s := h.WaitTerminal(res.ID); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state %v", s.PublicState)
	}
	var g got
	h.RunUntil(func() bool {
		select {
		case g = <-out:
			return true
		default:
			return false
		}
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	var types []string
	for i, f := range g.frames {
		if f.Sequence != uint64(i+1) {
			t.Fatalf("frame %d has sequence %d", i, f.Sequence)
		}
		types = append(types, f.Type+"/"+string(f.Mode))
	}
	want := "[step/durable step/durable step/durable token/best_effort summary/summary summary/summary]"
	if fmt.Sprint(types) != want {
		t.Fatalf("frames %v, want %s", types, want)
	}
	if string(g.frames[3].Payload) != "\x00\xffx" || string(g.frames[1].Payload) != "step 1" || g.frames[1].Encoding != "text" {
		t.Fatalf("payloads %q %q", g.frames[3].Payload, g.frames[1].Payload)
	}
	sum, err := e.StreamSummary(h.Ctx, res.ID, 0)
	if err != nil || sum.Version != 2 || string(sum.Document) != `{"status":"done","steps":{"total":3}}` {
		t.Fatalf("summary %q v%d %v", sum.Document, sum.Version, err)
	}
	p, err := e.ReadStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{ExcludeBestEffort: true})
	if err != nil || len(p.Frames) != 5 || !p.Closed || p.ClosedReason != "ended_success" || !p.Done || p.Next != 6 {
		t.Fatalf("read: %+v %v", p, err)
	}
}

// A retried execution's attempts have their own streams: the first is
// closed by its failure and keeps its frame; the second numbers from 1.
func TestStreamPerAttempt(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, streamHandler(nil, nil))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{Steps: 1, FailFirst: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := h.WaitTerminal(res.ID); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state %v", s.PublicState)
	}
	p0, err := e.ReadStream(h.Ctx, res.ID, 0, nil)
	if err != nil || len(p0.Frames) != 1 || string(p0.Frames[0].Payload) != "first try" || p0.ClosedReason != "ended_failure" {
		t.Fatalf("attempt 0: %+v %v", p0, err)
	}
	p1, err := e.ReadStream(h.Ctx, res.ID, 1, nil)
	if err != nil || len(p1.Frames) != 4 || p1.Frames[0].Sequence != 1 || p1.ClosedReason != "ended_success" {
		t.Fatalf("attempt 1: %+v %v", p1, err)
	}
	if _, err := e.ReadStream(h.Ctx, res.ID, 2, nil); !errors.Is(err, flowfabric.ErrAttemptNotFound) {
		t.Fatalf("attempt 2: %v", err)
	}
	if _, err := e.TailStream(h.Ctx, res.ID, 2, nil); !errors.Is(err, flowfabric.ErrAttemptNotFound) {
		t.Fatalf("tail of an attempt a terminal execution will not start: %v", err)
	}
}

// A tail with nothing to read returns empty once its wait has passed on
// the engine's clock; a tail of a closed stream returns at once.
func TestStreamTailWaitsBounded(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	release := h.Clock.NewSignal()
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, streamHandler(h.Clock, release))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{Steps: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		s, _ := e.Describe(h.Ctx, res.ID)
		return s.PublicState == flowfabric.PublicActive
	})
	start := h.Clock.Now()
	p, err := e.TailStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{MaxWait: 5 * time.Second})
	if err != nil || len(p.Frames) != 0 || p.Closed || h.Clock.Now().Sub(start) < 5*time.Second {
		t.Fatalf("idle tail: %+v %v after %s", p, err, h.Clock.Now().Sub(start))
	}
	release.Notify()
	h.WaitTerminal(res.ID)
	p, err = e.TailStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{After: 6})
	if err != nil || !p.Done || len(p.Frames) != 0 {
		t.Fatalf("tail of a closed stream: %+v %v", p, err)
	}
	if _, err := e.TailStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{MaxWait: time.Hour}); !errors.Is(err, model.ErrValidation) {
		t.Fatalf("MaxWait over the bound: %v", err)
	}
	if _, err := e.ReadStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{Limit: model.MaxStreamRead + 1}); !errors.Is(err, model.ErrValidation) {
		t.Fatalf("Limit over the bound is refused, not cut: %v", err)
	}
}

// A handler whose execution was cancelled cannot append: the lease is
// gone and the stream closed with the cancel.
func TestStreamAppendAfterCancel(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	started, release := make(chan struct{}), make(chan struct{})
	appendErr := make(chan error, 1)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[streamer]) error {
		if _, err := t.AppendFrame(ctx, "log", []byte("hello"), nil); err != nil {
			return err
		}
		close(started)
		<-release
		_, err := t.AppendFrame(context.Background(), "log", []byte("too late"), nil)
		appendErr <- err
		return err
	}))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := e.Cancel(h.Ctx, res.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-appendErr; !errors.Is(err, flowfabric.ErrLeaseLost) && !errors.Is(err, flowfabric.ErrStreamClosed) {
		t.Fatalf("append after cancel: %v", err)
	}
	p, err := e.ReadStream(h.Ctx, res.ID, 0, nil)
	if err != nil || len(p.Frames) != 1 || p.ClosedReason != "ended_cancelled" {
		t.Fatalf("read: %+v %v", p, err)
	}
}

// Oversized payloads and bad patches are refused with a validation error
// naming the field; nothing is appended.
func TestStreamAppendValidation(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	errs := make(chan error, 3)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[streamer]) error {
		_, err := t.AppendFrame(ctx, "big", make([]byte, model.MaxFramePayloadBytes+1), nil)
		errs <- err
		_, err = t.PatchSummary(ctx, []byte(`{"a":`))
		errs <- err
		_, err = t.AppendFrame(ctx, "bad type!", nil, nil)
		errs <- err
		return nil
	}))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.ID)
	for _, field := range []string{"Payload", "patch", "Type"} {
		err := <-errs
		var me *model.Error
		if !errors.Is(err, model.ErrValidation) || !errors.As(err, &me) || me.Field != field {
			t.Fatalf("want a validation error naming %s, got %v", field, err)
		}
	}
	p, err := e.ReadStream(h.Ctx, res.ID, 0, nil)
	if err != nil || p.LastSequence != 0 || p.ClosedReason != "no_frames" {
		t.Fatalf("read: %+v %v", p, err)
	}
}

// Frames started after many frames were appended reads them page by page
// (the notices began after them), then follows the live ones.
func TestStreamFramesCatchUp(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	release := h.Clock.NewSignal()
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[streamer]) error {
		for i := range 250 {
			if _, err := t.AppendFrame(ctx, "old", fmt.Appendf(nil, "%d", i), nil); err != nil {
				return err
			}
		}
		if err := h.Clock.Wait(ctx, 0, release); err != nil {
			return err
		}
		for i := range 5 {
			if _, err := t.AppendFrame(ctx, "new", fmt.Appendf(nil, "%d", i), nil); err != nil {
				return err
			}
		}
		return nil
	}))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		p, err := e.ReadStream(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{After: 249, Limit: 1})
		return err == nil && p.LastSequence == 250
	})
	n := 0
	for f, err := range e.Frames(h.Ctx, res.ID, 0, &flowfabric.StreamReadOpts{Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if f.Sequence != uint64(n) {
			t.Fatalf("frame %d has sequence %d", n, f.Sequence)
		}
		if n == 250 {
			release.Notify()
		}
	}
	if n != 255 {
		t.Fatalf("followed %d frames, want 255", n)
	}
}

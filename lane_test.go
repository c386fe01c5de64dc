package flowfabric_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// A paused lane starts nothing while its running task finishes; its idle
// workers wait without polling faster; the work submitted meanwhile waits
// and starts as soon as the lane is resumed, on every idle worker (no
// simulated time passes: the resume wakes them all, they do not wait for
// a poll).
func TestLanePauseResume(t *testing.T) {
	var counter *claimCounter
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		counter = &claimCounter{Store: s}
		return counter
	}})
	g := newGate(h.Clock)
	var mu sync.Mutex
	started := map[string]int{}
	for range 2 {
		w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 1})
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[blocker](func(ctx context.Context, t *flowfabric.Task[blocker]) error {
			mu.Lock()
			started[t.Args.Key]++
			mu.Unlock()
			return g.hold(ctx, t.Args.Key)
		}))
		h.StartWorker(w)
	}
	running := mustSubmit(t, h, blocker{Key: "running"}, nil)
	<-g.startedCh("running")

	st, already, err := h.Engine.PauseLane(h.Ctx, flowfabric.DefaultLane, "deploy")
	if err != nil || already {
		t.Fatalf("PauseLane: already %v, %v", already, err)
	}
	want := flowfabric.LaneState{Lane: flowfabric.DefaultLane, Paused: true, PausedAt: h.Clock.Now(), Reason: "deploy",
		Partitions: h.Engine.Partitions()}
	if *st != want {
		t.Fatalf("PauseLane: %+v, want %+v", *st, want)
	}
	if st, err := h.Engine.LaneState(h.Ctx, flowfabric.DefaultLane); err != nil || *st != want {
		t.Fatalf("LaneState: %+v %v, want %+v", st, err, want)
	}
	waiting := map[string]model.ExecutionID{
		"b": mustSubmit(t, h, blocker{Key: "b"}, nil),
		"c": mustSubmit(t, h, blocker{Key: "c"}, nil),
	}
	before := counter.calls.Load()
	h.Advance(time.Minute)
	// The running task finishes; its completion's next claim finds the
	// lane paused.
	g.open("running")
	if s := h.WaitTerminal(running); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("the running task: %s", s.PublicState)
	}
	h.Advance(time.Minute + 2500*time.Millisecond) // between two backstop polls
	for _, id := range waiting {
		if s, _ := h.Engine.Describe(h.Ctx, id); s.PublicState != flowfabric.PublicWaiting || s.TotalAttempts != 0 {
			t.Fatalf("%v on the paused lane: %s, %d attempts", id, s.PublicState, s.TotalAttempts)
		}
	}
	// Two idle workers for two minutes: their backstop polls (one per
	// 5 s each) and the wake-ups of two submissions, not a busy loop.
	if n := counter.calls.Load() - before; n > 60 {
		t.Fatalf("%d claims in two minutes on a paused lane: the workers spin", n)
	}

	resumedAt := h.Clock.Now()
	was, err := h.Engine.ResumeLane(h.Ctx, flowfabric.DefaultLane)
	if err != nil || !was {
		t.Fatalf("ResumeLane: %v %v, want true", was, err)
	}
	h.RunUntil(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return started["b"] == 1 && started["c"] == 1
	})
	for k, id := range waiting {
		if s, _ := h.Engine.Describe(h.Ctx, id); !s.StartedAt.Equal(resumedAt) {
			t.Fatalf("%s started %s after the resume, want at once", k, s.StartedAt.Sub(resumedAt))
		}
		g.open(k)
		if s := h.WaitTerminal(id); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("%s after the resume: %s", k, s.PublicState)
		}
	}
	mu.Lock()
	if started["running"] != 1 || len(started) != 3 {
		t.Fatalf("handlers started: %v, want running, b and c once each", started)
	}
	mu.Unlock()
	if st, err := h.Engine.LaneState(h.Ctx, flowfabric.DefaultLane); err != nil || st.Paused || st.Partitions != 0 {
		t.Fatalf("LaneState after the resume: %+v %v", st, err)
	}
	if was, err := h.Engine.ResumeLane(h.Ctx, flowfabric.DefaultLane); err != nil || was {
		t.Fatalf("second ResumeLane: %v %v, want false", was, err)
	}
}

// Pausing a paused lane keeps the first pause; bad input is a validation
// error naming the field, with the op's prefix; a store without
// model.LaneStore is refused.
func TestLanePauseErrors(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	first, _, err := h.Engine.PauseLane(h.Ctx, "emails", "first")
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Second)
	again, already, err := h.Engine.PauseLane(h.Ctx, "emails", "second")
	if err != nil || !already || *again != *first {
		t.Fatalf("second pause: %+v %v %v, want %+v, already paused", again, already, err, first)
	}
	var e *model.Error
	_, _, err = h.Engine.PauseLane(h.Ctx, "bad lane", "")
	if !errors.As(err, &e) || !errors.Is(err, flowfabric.ErrValidation) || e.Field != "Lane" {
		t.Fatalf("PauseLane with a bad lane: %v", err)
	}
	if want := "flowfabric: pause lane: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Fatalf("error %q lacks the prefix %q", err, want)
	}
	if _, _, err := h.Engine.PauseLane(h.Ctx, "emails", "\xff"); !errors.As(err, &e) || e.Field != "Reason" {
		t.Fatalf("PauseLane with a bad reason: %v", err)
	}
	if _, err := h.Engine.ResumeLane(h.Ctx, ""); !errors.As(err, &e) || e.Field != "Lane" {
		t.Fatalf("ResumeLane with no lane: %v", err)
	}
	if _, err := h.Engine.LaneState(h.Ctx, "bad lane"); !errors.As(err, &e) || e.Field != "Lane" {
		t.Fatalf("LaneState with a bad lane: %v", err)
	}
	if st, err := h.Engine.LaneState(h.Ctx, "emails"); err != nil || *st != *first {
		t.Fatalf("LaneState after refused calls: %+v %v, want %+v", st, err, first)
	}

	// A claim by id is refused with ErrLanePaused; the grant stays.
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []model.LaneID{"emails"}})
	flowfabric.AddHandler(w, greetHandler())
	h.StartWorker(w)
	id := mustSubmit(t, h, greet{Name: "x"}, &flowfabric.SubmitOpts{Lane: "emails"})
	grant, err := h.Engine.IssueGrant(h.Ctx, id, w, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ClaimGrant(h.Ctx, grant); !errors.Is(err, flowfabric.ErrLanePaused) {
		t.Fatalf("ClaimGrant on a paused lane: %v, want ErrLanePaused", err)
	}
	if s, _ := h.Engine.Describe(h.Ctx, id); s.PublicState != flowfabric.PublicWaiting || s.Grant == nil {
		t.Fatalf("after a refused ClaimGrant: %s, grant %+v", s.PublicState, s.Grant)
	}

	bare := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		return struct{ model.Store }{s}
	}})
	if _, _, err := bare.Engine.PauseLane(bare.Ctx, "emails", ""); !errors.As(err, &e) || e.Field != "Store" {
		t.Fatalf("PauseLane on a store without LaneStore: %v", err)
	}
}

package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// outcomeJob ends the way its args say.
type outcomeJob struct {
	Fail   bool   `json:"fail"`
	Result string `json:"result"`
}

func (outcomeJob) Kind() string { return "outcome_job" }

func outcomeHandler() flowfabric.Handler[outcomeJob] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[outcomeJob]) error {
		if t.Args.Fail {
			return flowfabric.Permanent(errors.New("asked to fail"))
		}
		return t.SetResult([]byte(t.Args.Result))
	})
}

// take reads n events (or the first error) from a subscription.
func take(h *flowfabrictest.Harness, opts *flowfabric.SubscribeOpts, n int) ([]flowfabric.FeedEvent, []error) {
	var evs []flowfabric.FeedEvent
	var errs []error
	for ev, err := range h.Engine.Subscribe(h.Ctx, opts) {
		if err != nil {
			errs = append(errs, err)
			if !errors.Is(err, flowfabric.ErrFeedBehind) {
				break
			}
			continue
		}
		evs = append(evs, ev)
		if len(evs) == n {
			break
		}
	}
	return evs, errs
}

func feedHarness(t *testing.T, feeds model.Feeds) *flowfabrictest.Harness {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Feeds: feeds, Partitions: model.PartitionConfig{FlowPartitions: 1}})
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, outcomeHandler())
	h.StartWorker(w)
	return h
}

// The completions feed has one event per terminal execution, in order,
// with its outcome and result size; a subscriber resumes from its cursor
// without losing or repeating any (scenario 30's feed half).
func TestFeedCompletionsResume(t *testing.T) {
	h := feedHarness(t, model.Feeds{Completions: true})
	e := h.Engine
	var ids []flowfabric.ExecutionID
	for i, fail := range []bool{false, true, false, false, true} {
		r, err := e.Submit(h.Ctx, outcomeJob{Fail: fail, Result: fmt.Sprint("result ", i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		h.WaitTerminal(r.ID)
	}
	evs, errs := take(h, nil, 3)
	if len(errs) > 0 || len(evs) != 3 {
		t.Fatalf("first three: %v %v", evs, errs)
	}
	var cur flowfabric.FeedCursor
	for i, ev := range evs {
		if ev.Execution != ids[i] || ev.Seq != uint64(i+1) || ev.Kind != "outcome_job" {
			t.Fatalf("event %d: %+v", i, ev)
		}
		cur = cur.Advance(ev)
	}
	if evs[0].Outcome != model.OutcomeSuccess || evs[0].ResultBytes != len("result 0") || evs[1].Outcome != model.OutcomeFailed || evs[1].ResultBytes != 0 {
		t.Fatalf("outcomes: %+v", evs)
	}
	saved := cur.String()
	back, err := flowfabric.ParseFeedCursor(saved)
	if err != nil || back.String() != saved {
		t.Fatalf("cursor %q round trip: %q %v", saved, back.String(), err)
	}
	rest, errs := take(h, &flowfabric.SubscribeOpts{From: back}, 2)
	if len(errs) > 0 || len(rest) != 2 || rest[0].Execution != ids[3] || rest[1].Execution != ids[4] {
		t.Fatalf("resumed: %+v %v", rest, errs)
	}
	if _, err := flowfabric.ParseFeedCursor("0:x"); !errors.Is(err, model.ErrValidation) {
		t.Fatalf("malformed cursor: %v", err)
	}
}

// A subscriber waiting at the head wakes when a completion happens.
func TestFeedSubscribeWaits(t *testing.T) {
	h := feedHarness(t, model.Feeds{Completions: true})
	e := h.Engine
	head, err := e.FeedHead(h.Ctx, flowfabric.FeedCompletions)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan flowfabric.FeedEvent, 1)
	done := h.Clock.Track()
	go func() {
		defer done()
		evs, _ := take(h, &flowfabric.SubscribeOpts{From: head}, 1)
		if len(evs) == 1 {
			got <- evs[0]
		}
		close(got)
	}()
	r, err := e.Submit(h.Ctx, outcomeJob{Result: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := e.Wait(h.Ctx, r.ID, 0); err != nil || s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("wait: %v %v", s, err)
	}
	var ev flowfabric.FeedEvent
	h.RunUntil(func() bool {
		select {
		case ev = <-got:
			return true
		default:
			return false
		}
	})
	if ev.Execution != r.ID {
		t.Fatalf("event %+v", ev)
	}
}

// The lease feed has each execution's acquisition and release; filters
// keep the events of one lane or kind.
func TestFeedLeasesFiltered(t *testing.T) {
	h := feedHarness(t, model.Feeds{Leases: true})
	e := h.Engine
	r, err := e.Submit(h.Ctx, outcomeJob{Result: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(r.ID)
	evs, errs := take(h, &flowfabric.SubscribeOpts{Feed: flowfabric.FeedLeases, Filter: &flowfabric.FeedFilter{Kinds: []flowfabric.Kind{"outcome_job"}}}, 2)
	if len(errs) > 0 || len(evs) != 2 || evs[0].Lease != model.LeaseAcquired || evs[1].Lease != model.LeaseReleased ||
		evs[0].Execution != r.ID || evs[0].Epoch != 1 || evs[0].Instance == "" {
		t.Fatalf("lease events: %+v %v", evs, errs)
	}
	if _, err := e.FeedHead(h.Ctx, flowfabric.FeedCompletions); !errors.Is(err, flowfabric.ErrFeedDisabled) {
		t.Fatalf("a feed the store does not keep: %v", err)
	}
}

// A cursor the feed has dropped events past is told so, once, and goes on
// from the oldest event kept.
func TestFeedBehind(t *testing.T) {
	h := feedHarness(t, model.Feeds{Completions: true, Len: 3})
	e := h.Engine
	for range 6 {
		r, err := e.Submit(h.Ctx, outcomeJob{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.WaitTerminal(r.ID)
	}
	from, _ := flowfabric.ParseFeedCursor("0:1")
	evs, errs := take(h, &flowfabric.SubscribeOpts{From: from}, 3)
	var be *flowfabric.FeedBehindError
	if len(errs) != 1 || !errors.As(errs[0], &be) || be.Partition != 0 || be.After != 1 {
		t.Fatalf("errors: %v", errs)
	}
	if len(evs) != 3 || evs[0].Seq != 4 || evs[2].Seq != 6 {
		t.Fatalf("events after the gap: %+v", evs)
	}
}

// feedReadCounter is memstore with its FeedRead calls counted (every
// other method, notifiers included, is memstore's).
type feedReadCounter struct {
	*memstore.Store
	reads atomic.Int64
}

func (s *feedReadCounter) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	s.reads.Add(1)
	return s.Store.FeedRead(ctx, p)
}

// A subscriber at the head has each completion from the notice that
// carried it (model.FeedEventNotifier): after its first look it reads the
// feed again only on the recheck timer, not once per event.
func TestFeedSubscribeFromNotices(t *testing.T) {
	var counter *feedReadCounter
	h := flowfabrictest.New(t, &flowfabrictest.Options{Feeds: model.Feeds{Completions: true},
		Partitions: model.PartitionConfig{FlowPartitions: 1},
		WrapStore: func(s *memstore.Store) model.Store {
			counter = &feedReadCounter{Store: s}
			return counter
		}})
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, outcomeHandler())
	h.StartWorker(w)
	e := h.Engine
	head, err := e.FeedHead(h.Ctx, flowfabric.FeedCompletions)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	got := make(chan flowfabric.FeedEvent, n)
	done := h.Clock.Track()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer done()
		k := 0
		for ev, err := range e.Subscribe(h.Ctx, &flowfabric.SubscribeOpts{From: head}) {
			if err != nil {
				t.Error(err)
				return
			}
			got <- ev
			if k++; k == n {
				return
			}
		}
	}()
	// the subscriber's first look reads the one partition once
	h.RunUntil(func() bool { return counter.reads.Load() >= 1 })
	var ids []flowfabric.ExecutionID
	start := h.Clock.Now()
	for i := range n {
		r, err := e.Submit(h.Ctx, outcomeJob{Result: fmt.Sprint(i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		h.WaitTerminal(r.ID)
	}
	var evs []flowfabric.FeedEvent
	h.RunUntil(func() bool {
		for {
			select {
			case ev := <-got:
				evs = append(evs, ev)
			default:
				return len(evs) == n
			}
		}
	})
	<-finished
	for i, ev := range evs {
		if ev.Execution != ids[i] || ev.Outcome != model.OutcomeSuccess || ev.ResultBytes != 1 {
			t.Fatalf("event %d: %+v, want the completion of %v", i, ev, ids[i])
		}
	}
	// one read at the first look, and at most one per recheck interval
	// the simulated clock went through
	rechecks := int64(h.Clock.Now().Sub(start)/time.Second) + 1
	if r := counter.reads.Load(); r > 1+rechecks {
		t.Fatalf("%d FeedRead calls for %d events over %v: the notices' events were not used", r, n, h.Clock.Now().Sub(start))
	}
}

package flowfabric_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// submitter submits on a harness and reports each result.
type submitter struct {
	t *testing.T
	h *flowfabrictest.Harness
}

func (s submitter) args(args flowfabric.Args, opts *flowfabric.SubmitOpts) *flowfabric.SubmitResult {
	s.t.Helper()
	r, err := s.h.Engine.Submit(s.h.Ctx, args, opts)
	if err != nil {
		s.t.Fatalf("submit %+v: %v", args, err)
	}
	return r
}

func (s submitter) raw(kind flowfabric.Kind, payload string, opts *flowfabric.SubmitOpts) *flowfabric.SubmitResult {
	s.t.Helper()
	r, err := s.h.Engine.SubmitRaw(s.h.Ctx, kind, []byte(payload), opts)
	if err != nil {
		s.t.Fatalf("submit %s %s: %v", kind, payload, err)
	}
	return r
}

func wantDup(t *testing.T, what string, r, of *flowfabric.SubmitResult) {
	t.Helper()
	if !r.Duplicate || r.ID != of.ID {
		t.Fatalf("%s: got %v (duplicate %v), want the duplicate of %v", what, r.ID, r.Duplicate, of.ID)
	}
}

func wantNew(t *testing.T, what string, r *flowfabric.SubmitResult, others ...*flowfabric.SubmitResult) {
	t.Helper()
	if r.Duplicate {
		t.Fatalf("%s: a duplicate of %v, want a new execution", what, r.ID)
	}
	for _, o := range others {
		if o.ID == r.ID {
			t.Fatalf("%s: id %v again", what, r.ID)
		}
	}
}

func TestUniqueByArgs(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	s := submitter{t, h}
	byArgs := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByArgs: true}}
	ada := s.args(greet{Name: "ada"}, byArgs)
	wantNew(t, "first", ada)
	wantDup(t, "same args", s.args(greet{Name: "ada"}, byArgs), ada)
	bob := s.args(greet{Name: "bob"}, byArgs)
	wantNew(t, "other args", bob, ada)
	// not unique: always new
	wantNew(t, "without Unique", s.args(greet{Name: "ada"}, nil), ada, bob)

	// raw JSON: key order and spacing do not matter, values do
	first := s.raw("sync", `{"a":1,"b":[1,2.50]}`, byArgs)
	wantDup(t, "reordered JSON", s.raw("sync", "{ \"b\": [1, 2.50],\n \"a\": 1 }", byArgs), first)
	wantNew(t, "another number", s.raw("sync", `{"a":1,"b":[1,2.5]}`, byArgs), first)
	bin := s.raw("sync", "\x00not json", byArgs)
	wantDup(t, "same bytes", s.raw("sync", "\x00not json", byArgs), bin)
	// the kind is part of it
	wantNew(t, "another kind", s.raw("sync2", `{"a":1,"b":[1,2.50]}`, byArgs), first)
}

// TestUniqueByKindAndLane: without ByArgs every submission of a kind on a
// lane is a duplicate; lanes never share uniqueness, even lanes whose
// executions live on the same partition.
func TestUniqueByKindAndLane(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	s := submitter{t, h}
	parts := h.Store.Partitions()
	other := model.LaneID("")
	for i := range 10_000 {
		l := model.LaneID("lane-" + strconv.Itoa(i))
		if l != "lane-0" && parts.SoloPartition(l) == parts.SoloPartition("lane-0") {
			other = l
			break
		}
	}
	if other == "" {
		t.Fatal("no two lanes share a partition")
	}
	unique := func(lane model.LaneID) *flowfabric.SubmitOpts {
		return &flowfabric.SubmitOpts{Lane: lane, Unique: &flowfabric.UniqueOpts{}}
	}
	first := s.args(greet{Name: "ada"}, unique("lane-0"))
	wantDup(t, "other args, same kind and lane", s.args(greet{Name: "bob"}, unique("lane-0")), first)
	wantNew(t, "same partition, other lane", s.args(greet{Name: "ada"}, unique(other)), first)
	wantNew(t, "other kind", s.args(flaky{}, unique("lane-0")), first)

	// a spread lane: the key picks the partition, so it is found again
	if err := h.Engine.RegisterLane("wide", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	wide := s.args(greet{Name: "ada"}, unique("wide"))
	wantDup(t, "spread lane", s.args(greet{Name: "ada"}, unique("wide")), wide)

	// uniqueness lasts IdempotencyTTL (default 24h)
	h.Advance(24 * time.Hour)
	wantNew(t, "after 24h", s.args(greet{Name: "ada"}, unique("lane-0")), first)
}

func TestUniqueByPeriod(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	s := submitter{t, h}
	hourly := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: time.Hour}}
	h.Advance(10 * time.Minute)
	first := s.args(greet{Name: "ada"}, hourly)
	wantNew(t, "first of the hour", first)
	h.Advance(49*time.Minute + 59*time.Second)
	wantDup(t, "same hour", s.args(greet{Name: "bob"}, hourly), first)
	h.Advance(time.Second) // 01:00:00
	second := s.args(greet{Name: "ada"}, hourly)
	wantNew(t, "next hour", second, first)
	wantDup(t, "next hour again", s.args(greet{Name: "ada"}, hourly), second)

	// with ByArgs: one per args per hour
	both := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: time.Hour, ByArgs: true}}
	a := s.args(greet{Name: "ada"}, both)
	wantNew(t, "by args and period", a, first, second)
	wantNew(t, "other args", s.args(greet{Name: "bob"}, both), a)
	wantDup(t, "same args, same hour", s.args(greet{Name: "ada"}, both), a)
}

// TestUniqueByState: "not while one is waiting or running": a duplicate
// while the first waits or runs, a new execution once it completed.
func TestUniqueByState(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	s := submitter{t, h}
	g := newGate(h.Clock)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, g.handler())
	live := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{
		ByState: []flowfabric.PublicState{flowfabric.PublicWaiting, flowfabric.PublicDelayed, flowfabric.PublicActive}}}
	first := s.args(blocker{Key: "x"}, live)
	wantDup(t, "while waiting", s.args(blocker{Key: "x"}, live), first)
	h.StartWorker(w)
	h.RunUntil(func() bool {
		snap, err := h.Engine.Describe(h.Ctx, first.ID)
		return err == nil && snap.PublicState == flowfabric.PublicActive
	})
	r := s.args(blocker{Key: "x"}, live)
	wantDup(t, "while running", r, first)
	if r.PublicState != flowfabric.PublicActive {
		t.Fatalf("duplicate reports %v", r.PublicState)
	}
	g.open("x")
	h.WaitTerminal(first.ID)
	h.StopWorker(w)
	second := s.args(blocker{Key: "x"}, live)
	wantNew(t, "after it completed", second, first)
	wantDup(t, "the new one waits", s.args(blocker{Key: "x"}, live), second)

	// without ByState a completed execution still blocks
	plain := &flowfabric.SubmitOpts{Lane: "other", Unique: &flowfabric.UniqueOpts{}}
	p := s.args(greet{Name: "a"}, plain)
	if err := h.Engine.Cancel(h.Ctx, p.ID, "done"); err != nil {
		t.Fatal(err)
	}
	wantDup(t, "cancelled, no ByState", s.args(greet{Name: "a"}, plain), p)

	// ByState with the caller's own key
	keyed := &flowfabric.SubmitOpts{Lane: "other", IdempotencyKey: "nightly",
		Unique: &flowfabric.UniqueOpts{ByState: []flowfabric.PublicState{flowfabric.PublicWaiting}}}
	k := s.args(greet{Name: "a"}, keyed)
	wantDup(t, "own key, waiting", s.args(greet{Name: "b"}, keyed), k)
	if err := h.Engine.Cancel(h.Ctx, k.ID, "done"); err != nil {
		t.Fatal(err)
	}
	wantNew(t, "own key, cancelled", s.args(greet{Name: "a"}, keyed), k)
}

// uniqueGreet declares its uniqueness in its own SubmitOpts.
type uniqueGreet struct {
	Name string `json:"name"`
}

func (uniqueGreet) Kind() string { return "unique_greet" }
func (uniqueGreet) SubmitOpts() flowfabric.SubmitOpts {
	return flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByArgs: true}}
}

func TestUniqueFromArgsOpts(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	s := submitter{t, h}
	a := s.args(uniqueGreet{Name: "ada"}, nil)
	wantDup(t, "args' own Unique", s.args(uniqueGreet{Name: "ada"}, nil), a)
	wantNew(t, "other args", s.args(uniqueGreet{Name: "bob"}, nil), a)
	res, err := h.Engine.SubmitMany(h.Ctx, []flowfabric.SubmitParams{{Args: uniqueGreet{Name: "ada"}}, {Args: uniqueGreet{Name: "cy"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantDup(t, "in a batch", res[0], a)
	wantNew(t, "new in a batch", res[1], a)
}

func TestUniqueValidation(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{NoScanners: true})
	for _, tc := range []struct {
		field string
		opts  flowfabric.SubmitOpts
	}{
		{"Unique.ByPeriod", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: 500 * time.Millisecond}}},
		{"Unique.ByPeriod", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: -time.Hour}}},
		{"Unique.ByPeriod", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: 31 * 24 * time.Hour}}},
		{"Unique.ByPeriod", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: time.Second + time.Microsecond}}},
		{"Unique.ByState", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByState: []flowfabric.PublicState{0}}}},
		{"Unique.ByState", flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{
			ByState: []flowfabric.PublicState{flowfabric.PublicActive, flowfabric.PublicActive}}}},
		{"Unique.ByArgs", flowfabric.SubmitOpts{IdempotencyKey: "k", Unique: &flowfabric.UniqueOpts{ByArgs: true}}},
		{"Unique.ByPeriod", flowfabric.SubmitOpts{IdempotencyKey: "k", Unique: &flowfabric.UniqueOpts{ByPeriod: time.Hour}}},
	} {
		_, err := h.Engine.Submit(h.Ctx, greet{Name: "x"}, &tc.opts)
		var me *model.Error
		if !errors.Is(err, flowfabric.ErrValidation) || !errors.As(err, &me) || me.Field != tc.field {
			t.Errorf("%+v: got %v, want a validation error naming %s", tc.opts.Unique, err, tc.field)
		}
	}
	if n := len(h.Executions()); n != 0 {
		t.Fatalf("%d executions stored by refused submissions", n)
	}
}

// TestUniqueOutlivesDelete: a unique execution is kept at least as long as
// its uniqueness lasts, whatever retention is asked for, so the retention
// trimmer never ends the uniqueness early.
func TestUniqueOutlivesDelete(t *testing.T) {
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
		Retention: flowfabric.Retention{Completed: time.Minute, Failed: time.Minute, Cancelled: flowfabric.KeepForever}}})
	s := submitter{t, h}
	r := s.raw("sync.accounts", `{}`, &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByPeriod: 2 * time.Hour}})
	snap, err := h.Engine.Describe(h.Ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k := snap.Retention; k.Completed < time.Hour || k.Failed < time.Hour || k.Cancelled != 0 {
		t.Fatalf("retention %+v: a unique execution must outlive its key (up to 2h), kept-forever stays", k)
	}
	plain := s.raw("sync.accounts", `{}`, nil)
	if snap, _ := h.Engine.Describe(h.Ctx, plain.ID); snap.Retention.Completed != time.Minute {
		t.Fatalf("a plain submission's retention %+v", snap.Retention)
	}
}

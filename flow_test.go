package flowfabric_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// step is a flow test's payload: a name, and what its handler does.
type step struct {
	Name string `json:"name"`
	Fail bool   `json:"fail,omitempty"`
	// Block makes the handler wait until its context ends.
	Block bool `json:"block,omitempty"`
}

func (step) Kind() string { return "step" }

// flowLane is a spread lane, where flow nodes run.
const flowLane = flowfabric.LaneID("flow")

// stepLog records the handler runs of a flow test.
type stepLog struct {
	mu     sync.Mutex
	ran    []string
	inputs map[string]string
	causes map[string]error
}

func newFlowHarness(t *testing.T, opts *flowfabrictest.Options) (*flowfabrictest.Harness, *stepLog) {
	t.Helper()
	h := flowfabrictest.New(t, opts)
	if err := h.Engine.RegisterLane(flowLane, flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	log := &stepLog{inputs: map[string]string{}, causes: map[string]error{}}
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "flow", Lanes: []flowfabric.LaneID{flowLane}, MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[step]) error {
		log.mu.Lock()
		log.ran = append(log.ran, t.Args.Name)
		log.mu.Unlock()
		if t.Args.Block {
			// a clock-aware wait, so the simulated time runs on
			for h.Clock.Wait(ctx, time.Hour, nil) == nil {
			}
			log.mu.Lock()
			log.causes[t.Args.Name] = context.Cause(ctx)
			log.mu.Unlock()
			return context.Cause(ctx)
		}
		if t.Args.Fail {
			return flowfabric.Permanent(errors.New("broken"))
		}
		return t.SetResultJSON(step{Name: "from " + t.Args.Name})
	}))
	h.StartWorker(w)
	return h, log
}

func (l *stepLog) order() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.ran, " ")
}

// TestSubmitFlowRunsInOrder: a chain runs in order, each node with its
// upstream's result as its payload (AfterResult); nothing runs before the
// flow is sealed.
func TestSubmitFlowRunsInOrder(t *testing.T) {
	h, log := newFlowHarness(t, nil)
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	a := f.Add(step{Name: "a"}, opts)
	b := f.Add(step{Name: "b"}, opts).AfterResult(a)
	c := f.Add(step{Name: "c"}, opts).After(b)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, &flowfabric.FlowOpts{Tags: map[string]string{"app.build": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	snap := h.WaitTerminal(res.Of(c))
	if snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("c: %s", snap.PublicState)
	}
	// b ran with a's result as its payload, so its name became "from a".
	if got := log.order(); got != "a from a c" {
		t.Fatalf("ran %q, want %q", got, "a from a c")
	}
	fs, err := h.Engine.DescribeFlow(h.Ctx, res.ID)
	if err != nil || !fs.Sealed || fs.MemberCount != 3 || fs.EdgeCount != 2 || fs.Tags["app.build"] != "42" {
		t.Fatalf("DescribeFlow: %+v %v", fs, err)
	}
	for i, id := range res.Executions {
		if s, _ := h.Engine.Describe(h.Ctx, id); s.Flow != res.ID {
			t.Fatalf("node %d names flow %v, want %v", i, s.Flow, res.ID)
		}
	}
	members, err := h.Engine.FlowMembers(h.Ctx, res.ID)
	want := slices.SortedFunc(slices.Values(res.Executions), flowfabric.ExecutionID.Compare)
	if err != nil || !slices.Equal(members, want) {
		t.Fatalf("FlowMembers: %v %v, want %v", members, err, want)
	}
	if _, err := h.Engine.FlowMembers(h.Ctx, flowfabric.FlowID(model.NewUUIDv4([16]byte{9}))); !errors.Is(err, flowfabric.ErrFlowNotFound) {
		t.Fatalf("FlowMembers of an unknown flow: %v", err)
	}
}

// TestSubmitFlowAnyOfCancelsLosers: an AnyOf node with CancelRemaining
// runs after the first upstream succeeds, and the upstreams still running
// are cancelled at once: their handlers' contexts end with
// ErrExecutionCancelled. A failure upstream skips what depends on it.
func TestSubmitFlowAnyOfCancelsLosers(t *testing.T) {
	h, log := newFlowHarness(t, nil)
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	fast := f.Add(step{Name: "fast"}, opts)
	slow := f.Add(step{Name: "slow", Block: true}, opts)
	broken := f.Add(step{Name: "broken", Fail: true}, opts)
	pick := f.Add(step{Name: "pick"}, opts).After(fast, slow).AnyOf(flowfabric.CancelRemaining)
	after := f.Add(step{Name: "after"}, opts).After(broken)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := h.WaitTerminal(res.Of(pick)); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("pick: %s", s.PublicState)
	}
	s := h.WaitTerminal(res.Of(slow))
	if s.PublicState != flowfabric.PublicCancelled || s.CancellationReason != model.ReasonSiblingSatisfied {
		t.Fatalf("slow: %s %q", s.PublicState, s.CancellationReason)
	}
	h.RunUntil(func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.causes["slow"] != nil
	})
	log.mu.Lock()
	cause := log.causes["slow"]
	log.mu.Unlock()
	if !errors.Is(cause, flowfabric.ErrExecutionCancelled) || !errors.Is(cause, flowfabric.ErrLeaseLost) {
		t.Fatalf("the cancelled sibling's handler saw %v", cause)
	}
	if s := h.WaitTerminal(res.Of(after)); s.PublicState != flowfabric.PublicSkipped {
		t.Fatalf("after a failed upstream: %s", s.PublicState)
	}
	g, err := h.Engine.FlowGroup(h.Ctx, res.ID, res.Of(pick))
	if err != nil || g.State != model.GroupSatisfied || g.Size != 2 {
		t.Fatalf("pick's group: %+v %v", g, err)
	}
}

// TestSubmitFlowRefusesBadGraphs: every refusal names what is wrong and
// stores nothing.
func TestSubmitFlowRefusesBadGraphs(t *testing.T) {
	h, _ := newFlowHarness(t, nil)
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	cases := []struct {
		name  string
		build func() *flowfabric.Flow
		want  error
		field string
	}{
		{"cycle", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			a := f.Add(step{Name: "a"}, opts)
			b := f.Add(step{Name: "b"}, opts).After(a)
			a.After(b)
			return f
		}, flowfabric.ErrCycle, "Flow.Nodes[0]"},
		{"self", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			a := f.Add(step{Name: "a"}, opts)
			a.After(a)
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[0]"},
		{"other flow", func() *flowfabric.Flow {
			f, g := flowfabric.NewFlow(), flowfabric.NewFlow()
			f.Add(step{Name: "a"}, opts).After(g.Add(step{Name: "b"}, opts))
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[0]"},
		{"lane not spread", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			f.Add(step{Name: "a"}, opts)
			f.Add(step{Name: "b"}, nil)
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[1].Lane"},
		{"node idempotency key", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			f.Add(step{Name: "a"}, &flowfabric.SubmitOpts{Lane: flowLane, IdempotencyKey: "k"})
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[0].IdempotencyKey"},
		{"node unique", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			f.Add(step{Name: "a"}, &flowfabric.SubmitOpts{Lane: flowLane, Unique: &flowfabric.UniqueOpts{ByArgs: true}})
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[0].Unique"},
		{"bad quorum", func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			a := f.Add(step{Name: "a"}, opts)
			f.Add(step{Name: "b"}, opts).After(a).Quorum(0, flowfabric.LetRun)
			return f
		}, flowfabric.ErrValidation, "Flow.Nodes[1].Group.Quorum"},
		{"empty", flowfabric.NewFlow, flowfabric.ErrValidation, "Flow"},
	}
	for _, c := range cases {
		_, err := h.Engine.SubmitFlow(h.Ctx, c.build(), nil)
		var fe *flowfabric.Error
		if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v (field %q), want %v naming %q", c.name, err, fieldOf(err), c.want, c.field)
		}
	}
	if n := len(h.Executions()); n != 0 {
		t.Fatalf("refused flows stored %d executions", n)
	}
}

func fieldOf(err error) string {
	var fe *flowfabric.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// sealFails fails FlowSeal while fail is set: a submission cut off just
// before its last step.
type sealFails struct {
	*memstore.Store
	mu   sync.Mutex
	fail bool
}

func (s *sealFails) FlowSeal(ctx context.Context, p *model.FlowSealParams) (*model.FlowSealResult, error) {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return nil, errors.New("connection lost")
	}
	return s.Store.FlowSeal(ctx, p)
}

// TestSubmitFlowIdempotent: a submission cut off before its seal leaves
// every node held (nothing runs); repeating it with the same key finishes
// it with the same ids, and repeating a finished one changes nothing.
func TestSubmitFlowIdempotent(t *testing.T) {
	var wrapped *sealFails
	h, log := newFlowHarness(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		wrapped = &sealFails{Store: s, fail: true}
		return wrapped
	}})
	build := func() (*flowfabric.Flow, *flowfabric.FlowNode) {
		f := flowfabric.NewFlow()
		opts := &flowfabric.SubmitOpts{Lane: flowLane}
		a := f.Add(step{Name: "a"}, opts)
		return f, f.Add(step{Name: "b"}, opts).After(a)
	}
	key := &flowfabric.FlowOpts{IdempotencyKey: "build-42"}
	f, b := build()
	if _, err := h.Engine.SubmitFlow(h.Ctx, f, key); err == nil {
		t.Fatal("the cut-off submission reported success")
	}
	h.Advance(time.Hour)
	for _, s := range h.Executions() {
		if s.PublicState != flowfabric.PublicWaitingChildren {
			t.Fatalf("a node of an unfinished submission is %s", s.PublicState)
		}
	}
	if got := log.order(); got != "" {
		t.Fatalf("nodes ran before the flow was sealed: %q", got)
	}
	wrapped.mu.Lock()
	wrapped.fail = false
	wrapped.mu.Unlock()
	f2, b2 := build()
	res, err := h.Engine.SubmitFlow(h.Ctx, f2, key)
	if err != nil {
		t.Fatal(err)
	}

	if s := h.WaitTerminal(res.Of(b2)); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("b: %s", s.PublicState)
	}
	f3, _ := build()
	again, err := h.Engine.SubmitFlow(h.Ctx, f3, key)
	if err != nil || again.ID != res.ID || again.Of(b) != res.Of(b2) || !again.Duplicate || !res.Duplicate {
		t.Fatalf("repeat: %+v %v, want %+v, both duplicates of the cut-off first", again, err, res)
	}
	if n := len(h.Executions()); n != 2 {
		t.Fatalf("%d executions after three submissions of one flow", n)
	}
	if got := log.order(); got != "a b" {
		t.Fatalf("ran %q", got)
	}

	// The same key with another graph is refused, storing nothing: a
	// third node, or a node of another kind.
	for name, g := range map[string]func() *flowfabric.Flow{
		"more nodes": func() *flowfabric.Flow {
			f, _ := build()
			f.Add(step{Name: "c"}, &flowfabric.SubmitOpts{Lane: flowLane})
			return f
		},
		"other kind": func() *flowfabric.Flow {
			f := flowfabric.NewFlow()
			opts := &flowfabric.SubmitOpts{Lane: flowLane}
			f.AddRaw("other", nil, opts).After(f.AddRaw("other", nil, opts))
			return f
		},
	} {
		if _, err := h.Engine.SubmitFlow(h.Ctx, g(), key); !errors.Is(err, flowfabric.ErrIdempotencyConflict) {
			t.Fatalf("%s under a used key: %v, want ErrIdempotencyConflict", name, err)
		}
	}
	if n := len(h.Executions()); n != 2 {
		t.Fatalf("%d executions after conflicting submissions", n)
	}
}

// TestCancelFlow: CancelAll ends a running node (its handler's context
// ends with ErrExecutionCancelled) and the nodes waiting behind it, in
// one step; the flow reads cancelled, and cancelling again is refused.
func TestCancelFlow(t *testing.T) {
	h, log := newFlowHarness(t, nil)
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	long := f.Add(step{Name: "long", Block: true}, opts)
	next := f.Add(step{Name: "next"}, opts).After(long)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		s, _ := h.Engine.Describe(h.Ctx, res.Of(long))
		return s.PublicState == flowfabric.PublicActive
	})
	got, err := h.Engine.CancelFlow(h.Ctx, res.ID, flowfabric.CancelAll, "no longer needed")
	if err != nil || len(got) != 2 {
		t.Fatalf("CancelFlow: %v %v", got, err)
	}
	for _, n := range []*flowfabric.FlowNode{long, next} {
		if s := h.WaitTerminal(res.Of(n)); s.PublicState != flowfabric.PublicCancelled || s.CancellationReason != "no longer needed" {
			t.Fatalf("node: %s %q", s.PublicState, s.CancellationReason)
		}
	}
	h.RunUntil(func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.causes["long"] != nil
	})
	log.mu.Lock()
	cause := log.causes["long"]
	log.mu.Unlock()
	if !errors.Is(cause, flowfabric.ErrExecutionCancelled) {
		t.Fatalf("the running node's handler saw %v", cause)
	}
	fs, err := h.Engine.DescribeFlow(h.Ctx, res.ID)
	if err != nil || fs.State != model.FlowCancelled || fs.CancelPolicy != flowfabric.CancelAll {
		t.Fatalf("DescribeFlow: %+v %v", fs, err)
	}
	if _, err := h.Engine.CancelFlow(h.Ctx, res.ID, flowfabric.CancelAll, "again"); !errors.Is(err, flowfabric.ErrFlowTerminal) {
		t.Fatalf("second cancel: %v", err)
	}
	if got := log.order(); got != "long" {
		t.Fatalf("ran %q", got)
	}
}

// loseFirstReply applies the first ExecutionComplete and loses its reply,
// as a connection dropped right after the store applied the call.
type loseFirstReply struct {
	*memstore.Store
	mu   sync.Mutex
	lost int
}

func (s *loseFirstReply) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	r, err := s.Store.ExecutionComplete(ctx, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.lost == 0 {
		s.lost++
		return nil, errors.New("connection reset after the store applied the completion")
	}
	return r, err
}

// TestFlowSurvivesLostCompletionReply: the upstream's completion and its
// downstream's resolution are one store step, so a connection lost between
// the store applying it and the worker hearing back leaves nothing half
// done: the worker's retry is answered as a replay, the downstream runs
// once, and the flow completes.
func TestFlowSurvivesLostCompletionReply(t *testing.T) {
	var wrapped *loseFirstReply
	h, log := newFlowHarness(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		wrapped = &loseFirstReply{Store: s}
		return wrapped
	}})
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	a := f.Add(step{Name: "a"}, opts)
	b := f.Add(step{Name: "b"}, opts).After(a)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := h.WaitTerminal(res.Of(b)); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("b: %s", s.PublicState)
	}
	if wrapped.lost != 1 {
		t.Fatalf("%d replies lost", wrapped.lost)
	}
	if got := log.order(); got != "a b" {
		t.Fatalf("ran %q, want each node once", got)
	}
	if fs, _ := h.Engine.DescribeFlow(h.Ctx, res.ID); fs.State != model.FlowCompleted {
		t.Fatalf("flow: %+v", fs)
	}
}

// TestTaskUpstreams: a node's handler reads every upstream's state and
// result, not only the one passed as its payload; an AnyOf node sees
// which upstream won. A task in no flow has none.
func TestTaskUpstreams(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	if err := h.Engine.RegisterLane(flowLane, flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "up", Lanes: []flowfabric.LaneID{flowLane, "default"}, MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, tk *flowfabric.Task[step]) error {
		ups, err := tk.Upstreams(ctx)
		if err != nil {
			return err
		}
		var b []string
		for _, u := range ups {
			b = append(b, u.State.String()+":"+string(u.Result))
		}
		mu.Lock()
		seen[tk.Args.Name] = strings.Join(b, ",")
		mu.Unlock()
		if tk.Args.Fail {
			return flowfabric.Permanent(errors.New("broken"))
		}
		return tk.SetResult([]byte(tk.Args.Name))
	}))
	h.StartWorker(w)
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: flowLane}
	a := f.Add(step{Name: "a"}, opts)
	b := f.Add(step{Name: "b", Fail: true}, opts)
	join := f.Add(step{Name: "join"}, opts).After(b, a).AnyOf(flowfabric.LetRun)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.Of(join))
	h.WaitTerminal(res.Of(b))
	solo, err := h.Engine.Submit(h.Ctx, step{Name: "solo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(solo.ID)
	mu.Lock()
	defer mu.Unlock()
	// join ran once a succeeded; b had not completed (it may have been
	// waiting, running or failed by then). The edges come in id order, so
	// either upstream may be listed first.
	got := strings.Split(seen["join"], ",")
	i := slices.Index(got, "completed:a")
	if len(got) != 2 || i < 0 || strings.HasPrefix(got[1-i], "completed") || !strings.HasSuffix(got[1-i], ":") {
		t.Fatalf("join saw %q", seen["join"])
	}
	if seen["a"] != "" || seen["solo"] != "" {
		t.Fatalf("a root and a task in no flow saw upstreams: %q %q", seen["a"], seen["solo"])
	}
}

package flowfabric_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// fanOut is a parent that squares its numbers in children and sums what
// they return; square is a child (a negative number fails it).
type fanOut struct {
	Numbers []int `json:"numbers"`
}

func (fanOut) Kind() string { return "fan_out" }

type square struct {
	N int `json:"n"`
}

func (square) Kind() string { return "square" }

// fanOutReport is what the parent stores: the sum of its children's
// results and how many did not complete.
type fanOutReport struct {
	Sum    int `json:"sum"`
	Failed int `json:"failed"`
	Runs   int `json:"runs"`
}

// startFanOut registers the flow lane and a worker running fan_out and
// square; runs counts the parent's handler runs.
func startFanOut(t *testing.T, h *flowfabrictest.Harness, runs *atomic.Int32) {
	t.Helper()
	if err := h.Engine.RegisterLane(flowLane, flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "fan", Lanes: []flowfabric.LaneID{flowLane}, MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[fanOut]) error {
		n := runs.Add(1)
		if !t.Resumed {
			var kids []flowfabric.Child
			for _, x := range t.Args.Numbers {
				kids = append(kids, flowfabric.NewChild(square{N: x}, &flowfabric.SubmitOpts{Lane: flowLane}))
			}
			return flowfabric.AwaitChildren(kids...)
		}
		kids, err := t.Children(ctx)
		if err != nil {
			return err
		}
		rep := fanOutReport{Runs: int(n)}
		for _, k := range kids {
			var v int
			if err := k.Decode(&v); err != nil {
				if errors.Is(err, flowfabric.ErrResultNotFound) && k.State == flowfabric.PublicFailed {
					rep.Failed++
					continue
				}
				return err
			}
			rep.Sum += v
		}
		return t.SetResultJSON(rep)
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[square]) error {
		if t.Args.N < 0 {
			return flowfabric.Permanent(errors.New("negative"))
		}
		return t.SetResultJSON(t.Args.N * t.Args.N)
	}))
	h.StartWorker(w)
}

// TestAwaitChildren: a flow node fans out to children, parks until they
// have all ended (a failed one included), resumes the same attempt and
// reads their results; the flow then holds the parent and its children.
func TestAwaitChildren(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startFanOut(t, h, &runs)
	f := flowfabric.NewFlow()
	parent := f.Add(fanOut{Numbers: []int{1, 2, 3, -4}}, &flowfabric.SubmitOpts{Lane: flowLane})
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Of(parent)
	snap := h.WaitTerminal(id)
	if snap.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("parent: %s (%s)", snap.PublicState, snap.FailureReason)
	}
	var rep fanOutReport
	out, err := h.Engine.Result(h.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep != (fanOutReport{Sum: 14, Failed: 1, Runs: 2}) {
		t.Fatalf("parent's report %+v, want sum 14, one failed child, two runs", rep)
	}
	if snap.TotalAttempts != 1 {
		t.Fatalf("parent took %d attempts; the await resumes the same one", snap.TotalAttempts)
	}
	fl, err := h.Engine.DescribeFlow(h.Ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fl.MemberCount != 5 || fl.Counts[flowfabric.PublicCompleted] != 4 || fl.Counts[flowfabric.PublicFailed] != 1 {
		t.Fatalf("flow after the fan-out: %+v", fl)
	}
	g, err := h.Engine.FlowGroup(h.Ctx, res.ID, id)
	if err != nil || g.Generation != 1 || g.Size != 4 || g.State != model.GroupSatisfied {
		t.Fatalf("parent's group: %+v %v", g, err)
	}
}

// TestAwaitChildrenOutsideAFlow: a task submitted on its own cannot
// await; its attempt fails at once with category invalid_outcome, and no
// child is created. Nor can a flow node await children on a lane that is
// not spread.
func TestAwaitChildrenOutsideAFlow(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var runs atomic.Int32
	startFanOut(t, h, &runs)
	r, err := h.Engine.Submit(h.Ctx, fanOut{Numbers: []int{1}}, &flowfabric.SubmitOpts{Lane: flowLane})
	if err != nil {
		t.Fatal(err)
	}
	snap := h.WaitTerminal(r.ID)
	if snap.PublicState != flowfabric.PublicFailed || snap.FailureCategory != model.FailureInvalidOutcome {
		t.Fatalf("a lone task that awaits: %s %s %q", snap.PublicState, snap.FailureCategory, snap.FailureReason)
	}
	if runs.Load() != 1 {
		t.Fatalf("the lone task ran %d times", runs.Load())
	}
	if all := h.Executions(); len(all) != 1 {
		t.Fatalf("executions after a refused await: %d, want the task alone", len(all))
	}

	f := flowfabric.NewFlow()
	p := f.AddRaw("bad_parent", nil, &flowfabric.SubmitOpts{Lane: flowLane})
	w := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "bad", Lanes: []flowfabric.LaneID{flowLane}})
	if err := w.HandleRaw("bad_parent", func(ctx context.Context, t *flowfabric.TaskInfo) error {
		return flowfabric.AwaitChildren(flowfabric.NewRawChild("square", []byte(`{"n":1}`), &flowfabric.SubmitOpts{Lane: "solo"}))
	}); err != nil {
		t.Fatal(err)
	}
	h.StartWorker(w)
	res, err := h.Engine.SubmitFlow(h.Ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap = h.WaitTerminal(res.Of(p))
	if snap.PublicState != flowfabric.PublicFailed || snap.FailureCategory != model.FailureInvalidOutcome {
		t.Fatalf("a child on a solo lane: %s %s %q", snap.PublicState, snap.FailureCategory, snap.FailureReason)
	}
}

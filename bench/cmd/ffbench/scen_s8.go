package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric"
)

// S8Result is the flow scenario: linear flows (node throughput, flow
// latency, per-hop latency) and AnyOf fan-outs whose losers are
// cancelled, per store.
type S8Result struct {
	Runs []S8Run `json:"runs"`
}

// S8Run is one store's measurement.
type S8Run struct {
	Store string `json:"store"`
	Error string `json:"error,omitempty"`
	// Flows × Nodes linear flows drained by Slots handler slots.
	Flows int `json:"flows"`
	Nodes int `json:"nodes"`
	Slots int `json:"slots"`
	// NodesPerSec is nodes / (last completion − first handler start).
	NodesPerSec float64 `json:"nodes_per_sec"`
	// S1JobsPerSec is the same store's S1 drain in this run (0: not run);
	// Ratio is NodesPerSec / S1JobsPerSec (target ≥ 0.5).
	S1JobsPerSec float64 `json:"s1_jobs_per_sec,omitempty"`
	Ratio        float64 `json:"ratio_to_s1,omitempty"`
	// FlowLatency is the drain's start (the flows were submitted before)
	// → each flow's last node's handler return.
	FlowLatency Latency `json:"flow_latency"`
	// Hop is an upstream handler's return → its downstream's handler
	// start, per edge.
	Hop Latency `json:"hop"`
	// FanOut is, per n, the AnyOf CancelRemaining fan-out: the winner's
	// handler return → every sibling terminal with its handler's context
	// done.
	FanOut []S8FanOut `json:"fan_out"`
}

// S8FanOut is one fan-out size.
type S8FanOut struct {
	Siblings int     `json:"siblings"`
	Latency  Latency `json:"cancel_all_siblings"`
	// OtherCauses counts sibling handler causes that were not
	// ErrExecutionCancelled (0 expected).
	OtherCauses int `json:"other_causes"`
}

type s8Config struct {
	Flows, Nodes, Slots int
	FanOut              []int
	FanOutRuns          []int
}

// s8Lane is the spread lane the flows run on.
const s8Lane = flowfabric.LaneID("flows")

// s8Step is a node's payload.
type s8Step struct {
	Flow, Node int
	// Block makes the handler wait until its context ends (a fan-out
	// sibling); Winner waits until the siblings run, then returns.
	Block, Winner bool
}

func (s8Step) Kind() string { return "s8" }

// runS8 measures flows on memstore and, when addrs is set, on valkeystore.
func runS8(ctx context.Context, addrs []string, c s8Config, s1 map[string]float64) S8Result {
	var res S8Result
	res.Runs = append(res.Runs, runS8Store(ctx, "memstore", nil, c, s1["memstore"]))
	if addrs != nil {
		res.Runs = append(res.Runs, runS8Store(ctx, "valkey", addrs, c, s1["valkey"]))
	}
	return res
}

func runS8Store(ctx context.Context, name string, addrs []string, c s8Config, s1 float64) (run S8Run) {
	run.Store, run.Flows, run.Nodes, run.Slots = name, c.Flows, c.Nodes, c.Slots
	fail := func(err error) S8Run {
		run.Error = err.Error()
		logf("  S8 %s: %v", name, err)
		return run
	}
	engine, stop, err := startEngine(ctx, addrs)
	if err != nil {
		return fail(err)
	}
	defer stop()
	if err := engine.RegisterLane(s8Lane, flowfabric.LaneConfig{Spread: true}); err != nil {
		return fail(err)
	}

	var (
		mu       sync.Mutex
		starts   = map[[2]int]time.Time{}
		ends     = map[[2]int]time.Time{}
		running  atomic.Int64 // fan-out siblings whose handler runs
		siblings = make(chan error, 4096)
		wins     = make(chan time.Time, 1)
		want     atomic.Int64 // siblings the winner waits for
	)
	h := flowfabric.HandlerFunc[s8Step](func(ctx context.Context, t *flowfabric.Task[s8Step]) error {
		a := t.Args
		switch {
		case a.Block:
			running.Add(1)
			<-ctx.Done()
			siblings <- context.Cause(ctx)
			return context.Cause(ctx)
		case a.Winner:
			for running.Load() < want.Load() {
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(time.Millisecond):
				}
			}
			wins <- time.Now()
			return nil
		}
		now := time.Now()
		mu.Lock()
		starts[[2]int{a.Flow, a.Node}] = now
		mu.Unlock()
		mu.Lock()
		ends[[2]int{a.Flow, a.Node}] = time.Now()
		mu.Unlock()
		return nil
	})
	startWorker := func(slots int) (*flowfabric.Worker, error) {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "s8", Lanes: []flowfabric.LaneID{s8Lane}, MaxConcurrent: slots})
		flowfabric.AddHandler(w, h)
		return w, w.Start(ctx)
	}
	// Linear flows, all submitted first (like S1's seeding), then drained.
	results := make([]*flowfabric.FlowResult, c.Flows)
	for i := range c.Flows {
		f := flowfabric.NewFlow()
		var prev *flowfabric.FlowNode
		for j := range c.Nodes {
			n := f.Add(s8Step{Flow: i, Node: j}, &flowfabric.SubmitOpts{Lane: s8Lane})
			if prev != nil {
				n.After(prev)
			}
			prev = n
		}
		r, err := engine.SubmitFlow(ctx, f, nil)
		if err != nil {
			return fail(err)
		}
		results[i] = r
	}
	drainStart := time.Now()
	w, err := startWorker(max(c.Slots, 1))
	if err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		mu.Lock()
		n := len(ends)
		mu.Unlock()
		if n == c.Flows*c.Nodes {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fail(fmt.Errorf("%d of %d nodes ran in 5 min", n, c.Flows*c.Nodes))
		}
		sleep(ctx, 5*time.Millisecond)
	}
	// the last completions are acknowledged just after the handlers return
	for _, r := range results {
		if _, err := engine.Wait(ctx, r.Executions[len(r.Executions)-1], 2*time.Millisecond); err != nil {
			return fail(err)
		}
	}
	first, last := time.Time{}, drainStart
	var flowLat, hops []time.Duration
	mu.Lock()
	for i := range c.Flows {
		for j := range c.Nodes {
			s, e := starts[[2]int{i, j}], ends[[2]int{i, j}]
			if first.IsZero() || s.Before(first) {
				first = s
			}
			if e.After(last) {
				last = e
			}
			if j > 0 {
				hops = append(hops, s.Sub(ends[[2]int{i, j - 1}]))
			}
		}
		flowLat = append(flowLat, ends[[2]int{i, c.Nodes - 1}].Sub(drainStart))
	}
	mu.Unlock()
	run.NodesPerSec = float64(c.Flows*c.Nodes) / last.Sub(first).Seconds()
	run.FlowLatency, run.Hop = summarize(flowLat), summarize(hops)
	if s1 > 0 {
		run.S1JobsPerSec, run.Ratio = s1, run.NodesPerSec/s1
	}
	if err := w.Stop(ctx); err != nil {
		return fail(err)
	}
	// The fan-outs run every sibling at once.
	if w, err = startWorker(s8Slots(c)); err != nil {
		return fail(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()

	// AnyOf CancelRemaining fan-outs: n siblings that run until cancelled
	// and a winner that returns once they all run.
	for k, n := range c.FanOut {
		fo := S8FanOut{Siblings: n}
		var lat []time.Duration
		for r := range c.FanOutRuns[k] {
			running.Store(0)
			want.Store(int64(n))
			f := flowfabric.NewFlow()
			o := &flowfabric.SubmitOpts{Lane: s8Lane}
			join := f.Add(s8Step{Flow: -1, Node: r}, o).AnyOf(flowfabric.CancelRemaining)
			join.After(f.Add(s8Step{Winner: true}, o))
			for range n {
				join.After(f.Add(s8Step{Block: true}, o))
			}
			if _, err := engine.SubmitFlow(ctx, f, nil); err != nil {
				return fail(err)
			}
			var won time.Time
			select {
			case won = <-wins:
			case <-time.After(2 * time.Minute):
				return fail(fmt.Errorf("fan-out of %d: the siblings did not all start", n))
			}
			for range n {
				select {
				case cause := <-siblings:
					if !errors.Is(cause, flowfabric.ErrExecutionCancelled) {
						fo.OtherCauses++
					}
				case <-time.After(time.Minute):
					return fail(fmt.Errorf("fan-out of %d: a sibling was not cancelled", n))
				}
			}
			lat = append(lat, time.Since(won))
		}
		fo.Latency = summarize(lat)
		run.FanOut = append(run.FanOut, fo)
	}
	return run
}

// s8Slots is the slot count S8's fan-outs need: every sibling at once.
func s8Slots(c s8Config) int {
	n := 2
	for _, f := range c.FanOut {
		n = max(n, f+2)
	}
	return n
}

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// S9Result is the suspend → signal → resume round trip: a delivered signal
// that satisfies a suspension → the resumed handler starting again, next
// to the idle wake (submit → handler start) of the same jobs, per store.
// The issue calls this scenario S7; here S7 and S8 already measure other
// things, so it is S9.
type S9Result struct {
	Note string  `json:"note"`
	Runs []S9Run `json:"runs"`
}

// S9Run is one store's measurement.
type S9Run struct {
	Store   string `json:"store"`
	Error   string `json:"error,omitempty"`
	Workers int    `json:"workers"`
	// Wake is submit → handler start of a job submitted while every worker
	// idles (as in S6). Resume is the start of the Engine.DeliverSignal
	// call → the resumed handler starting (TaskInfo.Resumed), the signal
	// sent with the token of the waitpoint the handler created and
	// suspended on, once the execution is suspended and the workers idle.
	Wake       Latency `json:"idle_wake"`
	Resume     Latency `json:"signal_to_resumed_handler"`
	SignalCall Latency `json:"deliver_signal_call"`
	// Ratio is Resume.P50 / Wake.P50 (target ≤ 3).
	Ratio float64 `json:"resume_p50_over_wake_p50"`
	// OtherEffects counts deliveries whose effect was not SignalResumed
	// (0 expected).
	OtherEffects int `json:"other_effects"`
	// OtherCPU is the share of the machine used by processes outside the
	// bench during the round trips.
	OtherCPU float64 `json:"other_cpu_share"`
}

type s9Config struct {
	Samples int
}

type s9Args struct {
	Seq int `json:"seq"`
}

func (s9Args) Kind() string { return "s9_suspend" }

const s9Note = "The issue calls this scenario S7; S7 (delay error) and S8 (flows) already exist here, so it is S9. " +
	"Per round trip: submit (idle wake: submit → handler start); the handler creates a pending waitpoint (TaskInfo.CreateWaitpoint), " +
	"hands its token to the driver and returns Suspend(SignalFor(\"go\"), {Waitpoint: wp}); the driver waits until Describe shows the execution " +
	"suspended (checked on each Config.OnActivity notice, untimed), pauses 10–40 ms so the workers idle, then times the start of " +
	"Engine.DeliverSignal → the resumed handler's start (TaskInfo.Resumed). 4 idle Workers, 10–40 ms pauses before each submit too"

// runS9 measures the round trip on memstore and, when addrs is set, on
// valkeystore at addrs.
func runS9(ctx context.Context, addrs []string, c s9Config) S9Result {
	res := S9Result{Note: s9Note}
	res.Runs = append(res.Runs, runS9Store(ctx, "memstore", nil, c))
	if addrs != nil {
		res.Runs = append(res.Runs, runS9Store(ctx, "valkey", addrs, c))
	}
	return res
}

func runS9Store(ctx context.Context, name string, addrs []string, c s9Config) (run S9Run) {
	run.Store, run.Workers = name, 4
	fail := func(err error) S9Run {
		run.Error = err.Error()
		logf("  S9 %s: %v", name, err)
		return run
	}
	store, closeStore, err := openStore(addrs)
	if err != nil {
		return fail(err)
	}
	defer closeStore()
	ring, err := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "bench", Secret: []byte("ffbench-s9-waitpoint-secret-0123456789")})
	if err != nil {
		return fail(err)
	}
	// activity is told whenever this engine's workers or scanners changed
	// an execution; the driver checks for the suspension on each notice
	// instead of polling on a timer.
	activity := make(chan struct{}, 1)
	engine := flowfabric.New(store, &flowfabric.Config{WaitpointKeys: ring, OnActivity: func() {
		select {
		case activity <- struct{}{}:
		default:
		}
	}})
	if err := engine.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = engine.Stop(context.Background()) }()

	type event struct {
		id  model.ExecutionID
		at  time.Time
		tok string
		err error
	}
	started := make(chan event, 1)
	resumed := make(chan event, 1)
	h := flowfabric.HandlerFunc[s9Args](func(ctx context.Context, t *flowfabric.Task[s9Args]) error {
		if t.Resumed {
			resumed <- event{id: t.ID, at: time.Now()}
			return nil
		}
		at := time.Now()
		wp, err := t.CreateWaitpoint(ctx, nil)
		if err != nil {
			started <- event{id: t.ID, at: at, err: err}
			return flowfabric.Permanent(err)
		}
		started <- event{id: t.ID, at: at, tok: wp.Token}
		return flowfabric.Suspend(flowfabric.SignalFor("go"), &flowfabric.SuspendOpts{Waitpoint: wp})
	})
	var workers []*flowfabric.Worker
	defer func() {
		for _, w := range workers {
			_ = w.Stop(context.Background())
		}
	}()
	for i := range run.Workers {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("suspend-%d", i))})
		flowfabric.AddHandler(w, h)
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
		workers = append(workers, w)
	}
	sleep(ctx, 200*time.Millisecond) // let the workers settle idle

	timeout := func(what string, i int) error {
		return fmt.Errorf("sample %d: %s did not happen within 30 s", i, what)
	}
	wait := func(ch <-chan event, what string, i int) (event, error) {
		t := time.NewTimer(30 * time.Second)
		defer t.Stop()
		select {
		case ev := <-ch:
			return ev, ev.err
		case <-t.C:
			return event{}, timeout(what, i)
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
	// waitSuspended returns once Describe shows id suspended, reading it
	// after each activity notice (the worker's suspend step ends with one).
	waitSuspended := func(id model.ExecutionID, i int) error {
		t := time.NewTimer(30 * time.Second)
		defer t.Stop()
		for {
			snap, err := engine.Describe(ctx, id)
			if err != nil {
				return err
			}
			switch snap.PublicState {
			case flowfabric.PublicSuspended:
				return nil
			case flowfabric.PublicCompleted, flowfabric.PublicFailed, flowfabric.PublicCancelled, flowfabric.PublicExpired:
				return fmt.Errorf("sample %d: execution %s ended (%s) instead of suspending", i, id, snap.PublicState)
			}
			select {
			case <-activity:
			case <-t.C:
				return timeout("the suspension", i)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	gap := func() { sleep(ctx, 10*time.Millisecond+time.Duration(rand.IntN(30))*time.Millisecond) }
	var wakes, resumes, calls []time.Duration
	cont := snapContention()
	for i := range c.Samples {
		gap()
		t0 := time.Now()
		r, err := engine.Submit(ctx, s9Args{Seq: i}, nil)
		if err != nil {
			return fail(err)
		}
		st, err := wait(started, "the handler start", i)
		if err != nil {
			return fail(err)
		}
		if st.id != r.ID {
			return fail(fmt.Errorf("sample %d: handler ran %s, want %s", i, st.id, r.ID))
		}
		wakes = append(wakes, st.at.Sub(t0))
		if err := waitSuspended(r.ID, i); err != nil {
			return fail(err)
		}
		gap() // the workers idle again
		t1 := time.Now()
		d, err := engine.DeliverSignal(ctx, st.tok, &flowfabric.SignalInput{Name: "go"})
		if err != nil {
			return fail(fmt.Errorf("sample %d: deliver signal: %w", i, err))
		}
		calls = append(calls, time.Since(t1))
		if d.Effect != flowfabric.SignalResumed {
			run.OtherEffects++
			return fail(fmt.Errorf("sample %d: signal effect %s, want resumed", i, d.Effect))
		}
		ev, err := wait(resumed, "the resumed handler start", i)
		if err != nil {
			return fail(err)
		}
		if ev.id != r.ID {
			return fail(fmt.Errorf("sample %d: resumed %s, want %s", i, ev.id, r.ID))
		}
		resumes = append(resumes, ev.at.Sub(t1))
	}
	run.OtherCPU = cont.otherShare()
	run.Wake, run.Resume, run.SignalCall = summarize(wakes), summarize(resumes), summarize(calls)
	if run.Wake.P50 > 0 {
		run.Ratio = run.Resume.P50 / run.Wake.P50
	}
	return run
}

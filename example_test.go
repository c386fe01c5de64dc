package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
)

// SendEmail is an example payload type.
type SendEmail struct {
	To string `json:"to"`
}

// Kind implements flowfabric.Args.
func (SendEmail) Kind() string { return "send_email" }

// exampleEngine returns a started engine on memstore with a fast delayed
// promoter, and a stop func.
func exampleEngine() (*flowfabric.Engine, func()) {
	engine := flowfabric.New(memstore.New(nil), &flowfabric.Config{
		Scanners: flowfabric.ScannerConfig{DelayedPromoter: flowfabric.TimerConfig{Interval: 10 * time.Millisecond}},
	})
	if err := engine.Start(context.Background()); err != nil {
		panic(err)
	}
	return engine, func() { _ = engine.Stop(context.Background()) }
}

func ExampleNew() {
	ctx := context.Background()
	engine := flowfabric.New(memstore.New(nil), nil)

	res, err := engine.Submit(ctx, SendEmail{To: "ada@example.com"}, &flowfabric.SubmitOpts{Priority: 10})
	if err != nil {
		panic(err)
	}
	snap, _ := engine.Describe(ctx, res.ID)
	fmt.Println(snap.Kind, snap.Lane, snap.PublicState, snap.Priority)
	// Output: send_email default waiting 10
}

func ExampleNewWorker() {
	ctx := context.Background()
	engine, stop := exampleEngine()
	defer stop()

	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "mailer"})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[SendEmail]) error {
		return t.SetResult([]byte("sent to " + t.Args.To))
	}))
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	defer w.Stop(ctx) //nolint:errcheck

	res, _ := engine.Submit(ctx, SendEmail{To: "ada@example.com"}, nil)
	snap, _ := engine.Wait(ctx, res.ID, 0)
	out, _ := engine.Result(ctx, res.ID)
	fmt.Println(snap.PublicState, string(out))
	// Output: completed sent to ada@example.com
}

func ExampleRetryPolicy() {
	ctx := context.Background()
	engine, stop := exampleEngine()
	defer stop()

	var calls atomic.Int32
	w := flowfabric.NewWorker(engine, nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[SendEmail]) error {
		if calls.Add(1) < 3 {
			return errors.New("smtp: try again later")
		}
		return nil
	}))
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	defer w.Stop(ctx) //nolint:errcheck

	policy := &flowfabric.RetryPolicy{MaxRetries: 5, InitialDelay: 10 * time.Millisecond, Multiplier: 2}
	res, _ := engine.Submit(ctx, SendEmail{To: "bob@example.com"}, &flowfabric.SubmitOpts{RetryPolicy: policy})
	snap, _ := engine.Wait(ctx, res.ID, 0)
	attempts, _ := engine.Attempts(ctx, res.ID)
	for _, a := range attempts {
		fmt.Println(strings.TrimSpace(fmt.Sprint(a.Index, " ", a.Type, " ", a.Status, " ", a.FailureReason)))
	}
	fmt.Println(snap.PublicState, "after", snap.RetryCount, "retries")
	// Output:
	// 0 initial ended_failure smtp: try again later
	// 1 retry ended_failure smtp: try again later
	// 2 retry ended_success
	// completed after 2 retries
}

// Render needs a GPU.
type Render struct {
	Scene string `json:"scene"`
}

func (Render) Kind() string { return "render" }

func Example_capabilityRouting() {
	ctx := context.Background()
	engine, stop := exampleEngine()
	defer stop()

	for _, spec := range []struct {
		id   flowfabric.WorkerID
		caps []string
	}{{"cpu-box", []string{"linux"}}, {"gpu-box", []string{"linux", "gpu"}}} {
		name := spec.id
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: name, Capabilities: spec.caps})
		flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Render]) error {
			return t.SetResult([]byte(string(name)))
		}))
		if err := w.Start(ctx); err != nil {
			panic(err)
		}
		defer w.Stop(ctx) //nolint:errcheck
	}
	for range 3 {
		res, _ := engine.Submit(ctx, Render{Scene: "teapot"}, &flowfabric.SubmitOpts{RequiredCapabilities: []string{"gpu"}})
		_, _ = engine.Wait(ctx, res.ID, 0)
		ranOn, _ := engine.Result(ctx, res.ID)
		fmt.Println("ran on", string(ranOn))
	}
	// Output:
	// ran on gpu-box
	// ran on gpu-box
	// ran on gpu-box
}

// BuildStep is an example flow node's payload.
type BuildStep struct {
	Name string `json:"name"`
}

// Kind implements flowfabric.Args.
func (BuildStep) Kind() string { return "build_step" }

func ExampleEngine_SubmitFlow() {
	ctx := context.Background()
	engine, stop := exampleEngine()
	defer stop()
	// A flow's nodes run on a spread lane.
	if err := engine.RegisterLane("build", flowfabric.LaneConfig{Spread: true}); err != nil {
		panic(err)
	}
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "builder", Lanes: []flowfabric.LaneID{"build"}})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[BuildStep]) error {
		return t.SetResultJSON(BuildStep{Name: t.Args.Name + "+built"})
	}))
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	defer w.Stop(ctx) //nolint:errcheck

	// fetch, then linux and mac side by side, then publish after both;
	// publish runs on linux's result.
	f := flowfabric.NewFlow()
	opts := &flowfabric.SubmitOpts{Lane: "build"}
	fetch := f.Add(BuildStep{Name: "fetch"}, opts)
	linux := f.Add(BuildStep{Name: "linux"}, opts).After(fetch)
	mac := f.Add(BuildStep{Name: "mac"}, opts).After(fetch)
	publish := f.AddRaw("build_step", nil, opts).AfterResult(linux).After(mac)
	res, err := engine.SubmitFlow(ctx, f, nil)
	if err != nil {
		panic(err)
	}
	snap, err := engine.Wait(ctx, res.Of(publish), 5*time.Millisecond)
	if err != nil {
		panic(err)
	}
	out, _ := engine.Result(ctx, res.Of(publish))
	flow, _ := engine.DescribeFlow(ctx, res.ID)
	fmt.Println(snap.PublicState, string(out))
	fmt.Println(flow.MemberCount, "nodes,", flow.EdgeCount, "edges, sealed:", flow.Sealed)
	// Output:
	// completed {"name":"linux+built+built"}
	// 4 nodes, 4 edges, sealed: true
}

// Thumbnail makes one thumbnail; an Album makes one per photo as
// children.
type Thumbnail struct {
	Photo string `json:"photo"`
}

// Kind implements flowfabric.Args.
func (Thumbnail) Kind() string { return "thumbnail" }

type Album struct {
	Photos []string `json:"photos"`
}

// Kind implements flowfabric.Args.
func (Album) Kind() string { return "album" }

func ExampleAwaitChildren() {
	ctx := context.Background()
	engine, stop := exampleEngine()
	defer stop()
	if err := engine.RegisterLane("media", flowfabric.LaneConfig{Spread: true}); err != nil {
		panic(err)
	}
	opts := &flowfabric.SubmitOpts{Lane: "media"}
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "media", Lanes: []flowfabric.LaneID{"media"}})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Album]) error {
		if !t.Resumed {
			// first run: a child per photo, then park until they all end
			var kids []flowfabric.Child
			for _, p := range t.Args.Photos {
				kids = append(kids, flowfabric.NewChild(Thumbnail{Photo: p}, opts))
			}
			return flowfabric.AwaitChildren(kids...)
		}
		kids, err := t.Children(ctx)
		if err != nil {
			return err
		}
		var thumbs []string
		for _, k := range kids {
			thumbs = append(thumbs, k.State.String()+" "+string(k.Result))
		}
		return t.SetResult([]byte(strings.Join(thumbs, "; ")))
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Thumbnail]) error {
		return t.SetResult([]byte(t.Args.Photo + ".thumb.jpg"))
	}))
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	defer w.Stop(ctx) //nolint:errcheck

	// The album is a one-node flow: a node can await children.
	f := flowfabric.NewFlow()
	album := f.Add(Album{Photos: []string{"beach", "dunes"}}, opts)
	res, err := engine.SubmitFlow(ctx, f, nil)
	if err != nil {
		panic(err)
	}
	snap, err := engine.Wait(ctx, res.Of(album), 5*time.Millisecond)
	if err != nil {
		panic(err)
	}
	out, _ := engine.Result(ctx, res.Of(album))
	fmt.Println(snap.PublicState, "in", snap.TotalAttempts, "attempt:", string(out))
	// Output:
	// completed in 1 attempt: completed beach.thumb.jpg; completed dunes.thumb.jpg
}

// Refund waits for a person to approve it.
type Refund struct {
	Order string `json:"order"`
}

func (Refund) Kind() string { return "refund" }

func ExampleSuspend() {
	ctx := context.Background()
	ring, err := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "k1", Secret: []byte("load a 32+ byte secret from config")})
	if err != nil {
		panic(err)
	}
	engine := flowfabric.New(memstore.New(nil), &flowfabric.Config{WaitpointKeys: ring})
	tokens := make(chan string, 1)
	w := flowfabric.NewWorker(engine, nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Refund]) error {
		if !t.Resumed {
			wp, err := t.CreateWaitpoint(ctx, nil)
			if err != nil {
				return err
			}
			tokens <- wp.Token // in an email link, a chat button, a webhook registration
			return flowfabric.Suspend(flowfabric.SignalFor("approve"), &flowfabric.SuspendOpts{
				Waitpoint: wp, Reason: flowfabric.SuspendForApproval, Timeout: 48 * time.Hour,
			})
		}
		sigs, err := t.Signals(ctx)
		if err != nil {
			return err
		}
		return t.SetResult([]byte("refunded " + t.Args.Order + ", approved by " + string(sigs[0].Payload)))
	}))
	if err := w.Start(ctx); err != nil {
		panic(err)
	}
	defer w.Stop(ctx) //nolint:errcheck

	res, err := engine.Submit(ctx, Refund{Order: "A-1009"}, nil)
	if err != nil {
		panic(err)
	}
	// Whoever holds the token answers; nothing else is needed.
	d, err := engine.DeliverSignal(ctx, <-tokens, &flowfabric.SignalInput{Name: "approve", Source: "user:grace", Payload: []byte("grace")})
	if err != nil {
		panic(err)
	}
	snap, err := engine.Wait(ctx, res.ID, 5*time.Millisecond)
	if err != nil {
		panic(err)
	}
	out, _ := engine.Result(ctx, res.ID)
	fmt.Println(d.Effect == flowfabric.SignalBuffered || d.Effect == flowfabric.SignalResumed)
	fmt.Println(snap.PublicState, "in", snap.TotalAttempts, "attempt:", string(out))
	// Output:
	// true
	// completed in 1 attempt: refunded A-1009, approved by grace
}

// Command pipeline runs a build pipeline as a flow: the source is fetched
// from two mirrors at once and the first download wins (AnyOf with
// CancelRemaining: the slower download is cancelled mid-flight), then
// three builds fan out and a release fans them back in, taking the
// fetch's result through AfterResult. The release itself fans out at run
// time: it uploads to each region as a child (AwaitChildren), parks until
// the uploads end, and resumes to report them.
//
//	go run ./examples/pipeline                          # in-memory store
//	go run ./examples/pipeline -valkey 127.0.0.1:6379   # Valkey/Redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// Download fetches the source from one mirror.
type Download struct {
	Mirror string        `json:"mirror"`
	Takes  time.Duration `json:"takes"`
}

// Kind implements flowfabric.Args.
func (Download) Kind() string { return "download" }

// Source is what a download produces, and what the next steps receive.
type Source struct {
	Mirror string `json:"mirror"`
	Digest string `json:"digest"`
}

// Kind implements flowfabric.Args: the fetch step runs on a Source.
func (Source) Kind() string { return "fetch" }

// Build builds the source for one target.
type Build struct {
	Target string `json:"target"`
}

// Kind implements flowfabric.Args.
func (Build) Kind() string { return "build" }

// Release publishes the builds; it runs on the fetched Source.
type Release Source

// Kind implements flowfabric.Args.
func (Release) Kind() string { return "release" }

// Upload copies a release to one region; the release creates one per
// region while it runs.
type Upload struct {
	Region string `json:"region"`
}

// Kind implements flowfabric.Args.
func (Upload) Kind() string { return "upload" }

const lane = flowfabric.LaneID("pipeline")

func main() {
	addrs := flag.String("valkey", "", "comma-separated Valkey/Redis address(es); empty: the in-memory store")
	flag.Parse()
	store, closeStore, err := openStore(*addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer closeStore()
	if err := run(store, func(s string) { fmt.Println(s) }); err != nil {
		log.Fatal(err)
	}
}

// openStore returns memstore, or valkeystore on the given server(s) under a
// fresh key prefix.
func openStore(addrs string) (flowfabric.Store, func(), error) {
	if addrs == "" {
		return memstore.New(nil), func() {}, nil
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ",")})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addrs, err)
	}
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("pipeline%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); client.Close() }, nil
}

// run builds the flow, runs it to the end and reports each step through
// say, in a fixed order.
func run(store flowfabric.Store, say func(string)) error {
	ctx := context.Background()
	engine := flowfabric.New(store, nil)
	if err := engine.RegisterLane(lane, flowfabric.LaneConfig{Spread: true}); err != nil {
		return err
	}
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer engine.Stop(ctx) //nolint:errcheck // best effort at exit

	// lost receives the cause a cancelled download's handler saw.
	lost := make(chan error, 2)
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "builder", Lanes: []flowfabric.LaneID{lane}, MaxConcurrent: 8})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Download]) error {
		select {
		case <-time.After(t.Args.Takes):
			return t.SetResultJSON(Source{Mirror: t.Args.Mirror, Digest: "sha256:5e1f"})
		case <-ctx.Done():
			// the other mirror won: this download was cancelled
			lost <- context.Cause(ctx)
			return context.Cause(ctx)
		}
	}))
	// fetch runs on the winning download's result (AfterResult).
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Source]) error {
		return t.SetResultJSON(t.Args)
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Build]) error {
		return t.SetResult([]byte("built " + t.Args.Target))
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Release]) error {
		if !t.Resumed {
			// first run: one upload per region, then park until they end
			var uploads []flowfabric.Child
			for _, region := range []string{"eu", "us", "ap"} {
				uploads = append(uploads, flowfabric.NewChild(Upload{Region: region}, &flowfabric.SubmitOpts{Lane: lane}))
			}
			return flowfabric.AwaitChildren(uploads...)
		}
		// resumed: every upload has ended; report where the release went
		uploads, err := t.Children(ctx)
		if err != nil {
			return err
		}
		var regions []string
		for _, u := range uploads {
			if u.State != flowfabric.PublicCompleted {
				return fmt.Errorf("upload %s: %s", u.ID, u.State)
			}
			regions = append(regions, string(u.Result))
		}
		return t.SetResult([]byte("released " + t.Args.Digest + " from " + t.Args.Mirror + " to " + strings.Join(regions, ", ")))
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Upload]) error {
		return t.SetResult([]byte(t.Args.Region))
	}))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(ctx) //nolint:errcheck // best effort at exit

	opts := &flowfabric.SubmitOpts{Lane: lane}
	f := flowfabric.NewFlow()
	fast := f.Add(Download{Mirror: "mirror-eu", Takes: 10 * time.Millisecond}, opts)
	slow := f.Add(Download{Mirror: "mirror-us", Takes: time.Minute}, opts)
	// fetch takes the winner's result; AnyOf lets one success suffice and
	// CancelRemaining stops the slower download.
	fetch := f.AddRaw("fetch", nil, opts).AfterResult(fast).AfterResult(slow).AnyOf(flowfabric.CancelRemaining)
	var builds []*flowfabric.FlowNode
	for _, target := range []string{"linux", "mac", "windows"} {
		builds = append(builds, f.Add(Build{Target: target}, opts).After(fetch))
	}
	release := f.AddRaw("release", nil, opts).AfterResult(fetch).After(builds...)

	res, err := engine.SubmitFlow(ctx, f, &flowfabric.FlowOpts{Tags: map[string]string{"app.pipeline": "demo"}})
	if err != nil {
		return err
	}
	snap, err := engine.Wait(ctx, res.Of(release), 5*time.Millisecond)
	if err != nil {
		return err
	}
	if snap.PublicState != flowfabric.PublicCompleted {
		return fmt.Errorf("release ended %s", snap.PublicState)
	}
	for _, step := range []struct {
		name string
		node *flowfabric.FlowNode
	}{{"download mirror-eu", fast}, {"download mirror-us", slow}, {"fetch", fetch},
		{"build linux", builds[0]}, {"build mac", builds[1]}, {"build windows", builds[2]}, {"release", release}} {
		s, err := engine.Wait(ctx, res.Of(step.node), 5*time.Millisecond)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%-20s %s", step.name, s.PublicState)
		if s.CancellationReason != "" {
			line += " (" + s.CancellationReason + ")"
		}
		say(line)
	}
	out, err := engine.Result(ctx, res.Of(release))
	if err != nil {
		return err
	}
	say(string(out))
	// The cancelled download's handler saw its context end at once.
	var cause error
	select {
	case cause = <-lost:
	case <-time.After(10 * time.Second):
	}
	if cause == nil {
		return errors.New("the losing download's handler never saw its context end")
	}
	if !errors.Is(cause, flowfabric.ErrExecutionCancelled) {
		return fmt.Errorf("the losing download's handler saw %w, want ErrExecutionCancelled", cause)
	}
	say("losing download's handler stopped: " + cause.Error())
	return nil
}

// Command stream watches an agent work. The agent's handler reports each
// step it takes as a durable frame, its words as they come as best-effort
// frames (for a live view; they would expire if nothing durable followed),
// and its progress as patches to a summary document. The program follows
// the attempt's stream from before the agent starts until the stream
// closes, then reads the summary.
//
//	go run ./examples/stream                          # in-memory store
//	go run ./examples/stream -valkey 127.0.0.1:6379   # Valkey/Redis
package main

import (
	"context"
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

// Agent works through a task in steps.
type Agent struct {
	Task  string   `json:"task"`
	Steps []string `json:"steps"`
}

// Kind implements flowfabric.Args.
func (Agent) Kind() string { return "agent" }

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
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("stream%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); client.Close() }, nil
}

// agentHandler does the steps, streaming as it goes.
func agentHandler() flowfabric.Handler[Agent] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Agent]) error {
		if _, err := t.PatchSummary(ctx, fmt.Appendf(nil, `{"task":%q,"status":"working","done":0}`, t.Args.Task)); err != nil {
			return err
		}
		for i, step := range t.Args.Steps {
			if _, err := t.AppendFrame(ctx, "step", fmt.Appendf(nil, `{"n":%d,"title":%q}`, i+1, step),
				&flowfabric.FrameOpts{Encoding: "json"}); err != nil {
				return err
			}
			for _, word := range strings.Fields(step) {
				if _, err := t.AppendFrame(ctx, "token", []byte(word), &flowfabric.FrameOpts{Mode: flowfabric.StreamBestEffort}); err != nil {
					return err
				}
			}
			if _, err := t.PatchSummary(ctx, fmt.Appendf(nil, `{"done":%d,"last":%q}`, i+1, step)); err != nil {
				return err
			}
		}
		if _, err := t.PatchSummary(ctx, []byte(`{"status":"done","last":null}`)); err != nil {
			return err
		}
		return t.SetResult(fmt.Appendf(nil, "%d steps done", len(t.Args.Steps)))
	})
}

// run submits one agent task, follows its stream and reports through say.
func run(store flowfabric.Store, say func(string)) error {
	ctx := context.Background()
	engine := flowfabric.New(store, nil)
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer engine.Stop(ctx) //nolint:errcheck // best effort at exit

	task := Agent{Task: "fix the flaky test", Steps: []string{"read the failing test", "find the race", "add a lock"}}
	res, err := engine.Submit(ctx, task, nil)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("submitted %q; following attempt 0 before any worker runs", task.Task))

	// The worker starts only now: Frames waits for the attempt to begin.
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "agents"})
	flowfabric.AddHandler(w, agentHandler())
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(ctx) //nolint:errcheck // best effort at exit

	var words []string
	flush := func() {
		if len(words) > 0 {
			say("    live: " + strings.Join(words, " "))
			words = nil
		}
	}
	for f, err := range engine.Frames(ctx, res.ID, 0, nil) {
		if err != nil {
			return err
		}
		switch f.Type {
		case "token":
			words = append(words, string(f.Payload))
		case "step":
			flush()
			say(fmt.Sprintf("  #%d step %s", f.Sequence, f.Payload))
		case "summary":
			flush()
			say(fmt.Sprintf("  #%d summary v%d patch %s", f.Sequence, f.SummaryVersion, f.Payload))
		}
	}
	flush()
	page, err := engine.ReadStream(ctx, res.ID, 0, &flowfabric.StreamReadOpts{ExcludeBestEffort: true, Limit: 1000})
	if err != nil {
		return err
	}
	say(fmt.Sprintf("stream closed (%s) after %d frames, %d of them durable or summary",
		page.ClosedReason, page.LastSequence, len(page.Frames)))
	sum, err := engine.StreamSummary(ctx, res.ID, 0)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("summary v%d: %s", sum.Version, sum.Document))
	snap, err := engine.Wait(ctx, res.ID, 0)
	if err != nil {
		return err
	}
	out, err := engine.Result(ctx, res.ID)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("%s: %s", snap.PublicState, out))
	return nil
}

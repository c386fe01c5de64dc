// Command quickstart is a tour of flowfabric in one process: an embedded
// engine, two workers with two handler kinds, and five executions that
// show a success, a retry, a delayed start, a cancellation and capability
// routing.
//
//	go run ./examples/quickstart                                  # in-memory store
//	go run ./examples/quickstart -valkey 127.0.0.1:6379           # Valkey/Redis
//	go run ./examples/quickstart -valkey 10.0.0.1:7000,10.0.0.2:7000  # a cluster
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// SendEmail is the payload of the "send_email" kind.
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Kind implements flowfabric.Args.
func (SendEmail) Kind() string { return "send_email" }

// Render is the payload of the "render" kind; some renders need a GPU.
type Render struct {
	Scene string `json:"scene"`
}

// Kind implements flowfabric.Args.
func (Render) Kind() string { return "render" }

func main() {
	addrs := flag.String("valkey", "", "comma-separated Valkey/Redis address(es); empty: the in-memory store")
	flag.Parse()
	store, closeStore, err := openStore(*addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer closeStore()
	if err := run(store); err != nil {
		log.Fatal(err)
	}
}

// openStore returns memstore, or valkeystore on the given server(s) under a
// fresh key prefix (so runs do not see each other's executions).
func openStore(addrs string) (flowfabric.Store, func(), error) {
	if addrs == "" {
		return memstore.New(nil), func() {}, nil
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ",")})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addrs, err)
	}
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("quickstart%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	fmt.Println("store: valkey at", addrs)
	return store, func() { store.Close(); client.Close() }, nil
}

func run(store flowfabric.Store) error {
	ctx := context.Background()
	engine := flowfabric.New(store, &flowfabric.Config{
		// quick scanners so the tour finishes in a second or two
		Scanners: flowfabric.ScannerConfig{
			DelayedPromoter: flowfabric.TimerConfig{Interval: 50 * time.Millisecond},
		},
	})
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer engine.Stop(ctx) //nolint:errcheck // best effort at exit

	// Two workers: "mail" offers no capabilities, "gpu" offers "gpu". Both
	// can render, but a render that requires a GPU only ever runs on "gpu".
	var flaky atomic.Int32
	newWorker := func(name string, caps ...string) (*flowfabric.Worker, error) {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{
			WorkerID: flowfabric.WorkerID(name), Capabilities: caps, MaxConcurrent: 4,
		})
		flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[SendEmail]) error {
			if t.Args.To == "flaky@example.com" && flaky.Add(1) == 1 {
				return errors.New("smtp: connection reset") // fails once; the retry succeeds
			}
			return t.SetResultJSON(map[string]string{"sent_to": t.Args.To})
		}))
		flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Render]) error {
			return t.SetResult([]byte("rendered " + t.Args.Scene + " on " + name))
		}))
		return w, w.Start(ctx)
	}
	for _, spec := range [][]string{{"mail"}, {"gpu", "gpu"}} {
		w, err := newWorker(spec[0], spec[1:]...)
		if err != nil {
			return err
		}
		defer w.Stop(ctx) //nolint:errcheck // best effort at exit
	}

	retry := &flowfabric.RetryPolicy{MaxRetries: 3, InitialDelay: 100 * time.Millisecond}
	type job struct {
		label string
		args  flowfabric.Args
		opts  *flowfabric.SubmitOpts
		want  flowfabric.PublicState
	}
	jobs := []job{
		{"welcome email", SendEmail{To: "ada@example.com", Subject: "welcome"}, nil, flowfabric.PublicCompleted},
		{"flaky email (retried)", SendEmail{To: "flaky@example.com", Subject: "hi"}, &flowfabric.SubmitOpts{RetryPolicy: retry}, flowfabric.PublicCompleted},
		{"reminder (delayed 300ms)", SendEmail{To: "bob@example.com", Subject: "reminder"}, &flowfabric.SubmitOpts{Delay: 300 * time.Millisecond}, flowfabric.PublicCompleted},
		{"newsletter (cancelled)", SendEmail{To: "all@example.com", Subject: "news"}, &flowfabric.SubmitOpts{Delay: time.Hour}, flowfabric.PublicCancelled},
		{"gpu render (routed)", Render{Scene: "teapot"}, &flowfabric.SubmitOpts{RequiredCapabilities: []string{"gpu"}}, flowfabric.PublicCompleted},
	}
	ids := make([]flowfabric.ExecutionID, len(jobs))
	for i, j := range jobs {
		res, err := engine.Submit(ctx, j.args, j.opts)
		if err != nil {
			return fmt.Errorf("submit %s: %w", j.label, err)
		}
		ids[i] = res.ID
		fmt.Printf("submitted %-26s %s (%s)\n", j.label, res.ID, res.PublicState)
	}
	if err := engine.Cancel(ctx, ids[3], "campaign withdrawn"); err != nil {
		return err
	}

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println()
	for i, j := range jobs {
		snap, err := engine.Wait(waitCtx, ids[i], 20*time.Millisecond)
		if err != nil {
			return fmt.Errorf("wait %s: %w", j.label, err)
		}
		result, _ := engine.Result(ctx, ids[i])
		line := fmt.Sprintf("%-26s %-9s attempts=%d", j.label, snap.PublicState, snap.TotalAttempts)
		if len(result) > 0 {
			line += " result=" + string(result)
		}
		if snap.CancellationReason != "" {
			line += " reason=" + snap.CancellationReason
		}
		fmt.Println(line)
		if snap.PublicState != j.want {
			return fmt.Errorf("%s: %s, want %s", j.label, snap.PublicState, j.want)
		}
	}
	return nil
}

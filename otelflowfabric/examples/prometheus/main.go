// Command prometheus runs an embedded flowfabric engine instrumented with
// otelflowfabric and serves its metrics for Prometheus at /metrics. It
// submits a few jobs every second (some fail once and retry, some fail for
// good) so the counters move.
//
//	go run ./examples/prometheus -addr 127.0.0.1:9464 -for 30s
//	curl -s 127.0.0.1:9464/metrics | grep ^flowfabric_
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/otelflowfabric"
)

// Resize is the example's job: it fails its first attempt when Flaky, and
// every attempt when Broken.
type Resize struct {
	Image  string `json:"image"`
	Flaky  bool   `json:"flaky,omitempty"`
	Broken bool   `json:"broken,omitempty"`
}

func (Resize) Kind() string { return "resize_image" }

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "address to serve /metrics on")
	runFor := flag.Duration("for", 0, "exit after this long (0: run until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, ln, os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}

// run serves /metrics on ln and runs the instrumented engine until ctx
// ends. ready, when not nil, is closed once the first round of jobs has
// ended (their metrics are then on /metrics).
func run(ctx context.Context, ln net.Listener, out io.Writer, ready chan<- struct{}) error {
	// OpenTelemetry metrics, read by the Prometheus exporter into its own
	// registry, served by promhttp.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = mp.Shutdown(context.WithoutCancel(ctx)) }()

	inst := otelflowfabric.New(&otelflowfabric.Options{
		MeterProvider: mp,
		Propagator:    propagation.TraceContext{},
	})
	cfg := &flowfabric.Config{}
	inst.InstrumentEngine(cfg)
	engine := flowfabric.New(memstore.New(nil), cfg)
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = engine.Stop(context.WithoutCancel(ctx)) }()
	obs, err := inst.ObserveEngine(engine)
	if err != nil {
		return err
	}
	defer func() { _ = obs.Unregister() }()

	wcfg := &flowfabric.WorkerConfig{WorkerID: "resizer"}
	inst.InstrumentWorker(wcfg)
	w := flowfabric.NewWorker(engine, wcfg)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Resize]) error {
		switch {
		case t.Args.Broken:
			return flowfabric.Permanent(errors.New("unreadable image"))
		case t.Args.Flaky && t.RetryCount == 0:
			return errors.New("storage timeout")
		}
		return nil
	}))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(context.WithoutCancel(ctx)) }()
	_, _ = fmt.Fprintf(out, "serving metrics on http://%s/metrics\n", ln.Addr())

	retry := &flowfabric.RetryPolicy{MaxRetries: 3, Backoff: flowfabric.BackoffFixed, Delay: 100 * time.Millisecond}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for round := 0; ; round++ {
		var ids []flowfabric.ExecutionID
		for i, args := range []Resize{{Image: "a.png"}, {Image: "b.png", Flaky: true}, {Image: "c.png", Broken: true}} {
			args.Image = fmt.Sprintf("%d-%d-%s", round, i, args.Image)
			res, err := engine.Submit(ctx, args, &flowfabric.SubmitOpts{RetryPolicy: retry})
			if err != nil {
				return shutdown(ctx, err)
			}
			ids = append(ids, res.ID)
		}
		if ready != nil {
			for _, id := range ids {
				if _, err := engine.Wait(ctx, id, 0); err != nil {
					return shutdown(ctx, err)
				}
			}
			// the attempt spans and counters close just after the store
			// records the outcome: stop the worker to let them finish
			if err := w.Stop(ctx); err != nil {
				return shutdown(ctx, err)
			}
			close(ready)
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		case <-tick.C:
		}
	}
}

// shutdown turns an error caused by ctx ending into a clean exit.
func shutdown(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

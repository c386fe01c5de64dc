package otelflowfabric_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/otelflowfabric"
)

type Welcome struct {
	To string `json:"to"`
}

func (Welcome) Kind() string { return "welcome_email" }

// Example instruments an engine and a worker, runs one job and prints the
// spans it made and a counter. A program passes its own providers (or sets
// the global ones) and an exporter instead of the in-memory recorder.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	inst := otelflowfabric.New(&otelflowfabric.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Propagator:     propagation.TraceContext{},
	})

	cfg := &flowfabric.Config{}
	inst.InstrumentEngine(cfg) // submit spans, trace context in metadata, scanner passes
	engine := flowfabric.New(memstore.New(nil), cfg)
	_ = engine.Start(ctx)
	defer func() { _ = engine.Stop(ctx) }()
	reg, _ := inst.ObserveEngine(engine) // executions per lane and state
	defer func() { _ = reg.Unregister() }()

	wcfg := &flowfabric.WorkerConfig{}
	inst.InstrumentWorker(wcfg) // attempt spans and metrics
	w := flowfabric.NewWorker(engine, wcfg)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Welcome]) error {
		return nil // spans started from ctx are children of the attempt span
	}))
	_ = w.Start(ctx)

	res, _ := engine.Submit(ctx, Welcome{To: "ada@example.com"}, nil)
	_, _ = engine.Wait(ctx, res.ID, 0)
	_ = w.Stop(ctx) // the attempt span ends just after the outcome is stored

	ended := spans.Ended()
	for _, s := range ended {
		fmt.Println(s.Name(), s.SpanKind(), "links:", len(s.Links()))
	}
	fmt.Println("linked to the submit span:", ended[1].Links()[0].SpanContext.SpanID() == ended[0].SpanContext().SpanID())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == otelflowfabric.MetricCompleted {
				fmt.Println(m.Name, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
			}
		}
	}
	// Output:
	// submit default producer links: 0
	// process default consumer links: 1
	// linked to the submit span: true
	// flowfabric.completed 1
}

package otelflowfabric

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/flowfabric/flowfabric"
)

// Metric names (see the package documentation for what each measures).
const (
	MetricSubmitted       = "flowfabric.submitted"
	MetricClaimed         = "flowfabric.claimed"
	MetricCompleted       = "flowfabric.completed"
	MetricRetried         = "flowfabric.retried"
	MetricFailed          = "flowfabric.failed"
	MetricCancelled       = "flowfabric.cancelled"
	MetricLeaseLost       = "flowfabric.lease.lost"
	MetricAttemptDuration = "flowfabric.attempt.duration"
	MetricQueueWait       = "flowfabric.queue.wait"
	MetricScannerPass     = "flowfabric.scanner.pass.duration"
	MetricExecutions      = "flowfabric.executions"
	MetricEnded           = "flowfabric.executions.ended"
)

// instruments are the synchronous instruments. Each is a no-op when the
// meter failed to make it.
type instruments struct {
	meter                                                     metric.Meter
	submitted, claimed, completed, retried, failed, cancelled metric.Int64Counter
	leaseLost, ended                                          metric.Int64Counter
	attemptDuration, queueWait, scannerPass                   metric.Float64Histogram
}

// durationBuckets are histogram bounds in seconds, from 1ms to about 1h:
// attempts and queue waits span that range.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

func newInstruments(m metric.Meter) instruments {
	nm := noop.NewMeterProvider().Meter(ScopeName)
	counter := func(name, desc, unit string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		if err != nil {
			otel.Handle(fmt.Errorf("otelflowfabric: %s: %w", name, err))
			c, _ = nm.Int64Counter(name)
		}
		return c
	}
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(buckets...))
		if err != nil {
			otel.Handle(fmt.Errorf("otelflowfabric: %s: %w", name, err))
			h, _ = nm.Float64Histogram(name)
		}
		return h
	}
	return instruments{
		meter:     m,
		submitted: counter(MetricSubmitted, "Submissions seen by the submit hook.", "{execution}"),
		claimed:   counter(MetricClaimed, "Runs of a handler started (attempts claimed or resumed).", "{attempt}"),
		completed: counter(MetricCompleted, "Executions completed by this process's workers.", "{execution}"),
		retried:   counter(MetricRetried, "Failed attempts with a retry scheduled.", "{attempt}"),
		failed:    counter(MetricFailed, "Executions failed for good by this process's workers.", "{execution}"),
		cancelled: counter(MetricCancelled, "Executions cancelled by their handler, or by an operator while running here.", "{execution}"),
		leaseLost: counter(MetricLeaseLost, "Runs whose lease was taken away.", "{attempt}"),
		ended:     counter(MetricEnded, "Executions that became terminal, by outcome (WatchEnded: from the completions feed).", "{execution}"),
		attemptDuration: hist(MetricAttemptDuration,
			"A run of a handler, from its start to its recorded outcome.", durationBuckets),
		queueWait: hist(MetricQueueWait,
			"Time from an execution's creation to the start of its first attempt (including any Delay or RunAt).", durationBuckets),
		scannerPass: hist(MetricScannerPass, "A background scanner's pass.",
			[]float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}),
	}
}

// OnScannerPass is the scanner pass hook InstrumentEngine installs: it
// records the pass's duration in flowfabric.scanner.pass.duration, by
// flowfabric.scanner, with error.type "error" or "panic" when the pass
// failed.
func (i *Instrumentation) OnScannerPass(p flowfabric.ScannerPass) {
	attrs := i.withBase(KeyScanner.String(p.Scanner))
	switch {
	case p.Panicked:
		attrs = append(attrs, semconv.ErrorTypeKey.String("panic"))
	case p.Err != nil:
		attrs = append(attrs, semconv.ErrorTypeKey.String("error"))
	}
	i.m.scannerPass.Record(context.Background(), p.Took.Seconds(), metric.WithAttributes(attrs...))
}

// ObserveEngine registers the observable gauge flowfabric.executions: on
// every collection it calls engine.Counts once (one small read per
// partition, whatever the number of executions) and reports the
// executions per namespace, lane and public state, summed over kinds. A
// namespace, lane and state reported once is reported as 0 when it
// empties, so a series does not freeze at its last value. When Counts
// fails the collection reports nothing for it and the error goes to
// otel.Handle.
//
// Engines sharing a store report the same numbers: observe one of them
// per cluster (or sum with care). Unregister the returned registration
// when the engine stops.
func (i *Instrumentation) ObserveEngine(engine *flowfabric.Engine) (metric.Registration, error) {
	if engine == nil {
		return nil, ErrNilEngine
	}
	g, err := i.m.meter.Int64ObservableGauge(MetricExecutions,
		metric.WithDescription("Executions per namespace, lane and public state (from Engine.Counts)."),
		metric.WithUnit("{execution}"))
	if err != nil {
		return nil, fmt.Errorf("otelflowfabric: %s: %w", MetricExecutions, err)
	}
	type key struct {
		ns, lane string
		state    flowfabric.PublicState
	}
	var mu sync.Mutex
	seen := map[key]bool{}
	reg, err := i.m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		c, err := engine.Counts(ctx, nil)
		if err != nil {
			otel.Handle(fmt.Errorf("otelflowfabric: %s: %w", MetricExecutions, err))
			return nil
		}
		sums := map[key]int64{}
		for _, r := range c.Rows {
			sums[key{string(r.Namespace), string(r.Lane), r.State}] += r.Count
		}
		mu.Lock()
		for k := range sums {
			seen[k] = true
		}
		for k := range seen {
			o.ObserveInt64(g, sums[k], metric.WithAttributes(i.withBase(
				KeyNamespace.String(k.ns), KeyLane.String(k.lane), KeyState.String(k.state.String()))...))
		}
		mu.Unlock()
		return nil
	}, g)
	if err != nil {
		return nil, fmt.Errorf("otelflowfabric: %s: %w", MetricExecutions, err)
	}
	return reg, nil
}

// ErrNilEngine is returned by ObserveEngine given a nil engine.
var ErrNilEngine = errors.New("otelflowfabric: nil engine")

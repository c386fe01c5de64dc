package otelflowfabric_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/otelflowfabric"
)

// job is the payload of the tests: Do says what its handler does.
type job struct {
	Do string `json:"do"` // "ok", "flaky" (fails its first attempt), "permanent", "panic", "cancel", "hang", "suspend", "snooze"
}

func (job) Kind() string { return "otel_job" }

// fixture is an instrumented engine on memstore with a simulated clock,
// one worker, and in-memory exporters.
type fixture struct {
	h      *flowfabrictest.Harness
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	inst   *otelflowfabric.Instrumentation

	mu      sync.Mutex
	hanging map[flowfabric.ExecutionID]bool
	// seen is what the handler of each execution saw: its metadata, and
	// the "tenant" baggage member in its context
	seen    map[flowfabric.ExecutionID]seen
	passes  int
	outcome int // calls of the worker's own OnOutcome, chained by InstrumentWorker
}

type seen struct {
	metadata map[string]string
	tenant   string
}

// simNow reads the harness's clock once the harness exists (the
// instrumentation is made before the engine, which the harness makes).
type simNow struct{ h **flowfabrictest.Harness }

func (s simNow) Now() time.Time { return (*s.h).Clock.Now() }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(),
		hanging: map[flowfabric.ExecutionID]bool{}, seen: map[flowfabric.ExecutionID]seen{}}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	f.inst = otelflowfabric.New(&otelflowfabric.Options{
		TracerProvider: f.tp,
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader)),
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		Clock:          simNow{&f.h},
		Attributes:     []attribute.KeyValue{attribute.String("service.test", "yes")},
	})
	cfg := &flowfabric.Config{OnScannerPass: func(flowfabric.ScannerPass) {
		f.mu.Lock()
		f.passes++
		f.mu.Unlock()
	}}
	f.inst.InstrumentEngine(cfg)
	f.h = flowfabrictest.New(t, &flowfabrictest.Options{Engine: cfg})
	reg, err := f.inst.ObserveEngine(f.h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	wcfg := &flowfabric.WorkerConfig{WorkerID: "otel", OnOutcome: func(context.Context, *flowfabric.TaskInfo, *flowfabric.AttemptOutcome) {
		f.mu.Lock()
		f.outcome++
		f.mu.Unlock()
	}}
	f.inst.InstrumentWorker(wcfg)
	w := f.h.NewWorker(wcfg)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[job]) error {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return flowfabric.Permanent(errors.New("no span in the handler's context"))
		}
		f.mu.Lock()
		f.seen[t.ID] = seen{metadata: t.Metadata, tenant: baggage.FromContext(ctx).Member("tenant").Value()}
		f.mu.Unlock()
		switch t.Args.Do {
		case "flaky":
			if t.RetryCount == 0 {
				return errors.New("flaky the first time")
			}
		case "permanent":
			return flowfabric.Permanent(errors.New("bad input"))
		case "panic":
			panic("handler blew up")
		case "cancel":
			return flowfabric.Cancel(errors.New("no longer wanted"))
		case "hang":
			f.mu.Lock()
			f.hanging[t.ID] = true
			f.mu.Unlock()
			_ = f.h.Clock.Wait(ctx, 0, nil) // until the lease is taken away (idle on the simulated clock)
			return ctx.Err()
		case "suspend":
			if !t.Resumed {
				return flowfabric.Suspend(flowfabric.OperatorOnly(), nil)
			}
		case "snooze":
			if !t.Resumed {
				return flowfabric.Snooze(time.Minute)
			}
		}
		return nil
	}))
	f.h.StartWorker(w)
	return f
}

// submit submits j under a parent span and returns the execution and the
// parent span's context.
func (f *fixture) submit(t *testing.T, j job, opts *flowfabric.SubmitOpts) (flowfabric.ExecutionID, trace.SpanContext) {
	t.Helper()
	ctx, parent := f.tp.Tracer("test").Start(f.h.Ctx, "parent")
	defer parent.End()
	r, err := f.h.Engine.Submit(ctx, j, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID, parent.SpanContext()
}

// attemptSpans waits until n attempt spans of id have ended and returns
// them in the order they started.
func (f *fixture) attemptSpans(t *testing.T, id flowfabric.ExecutionID, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	f.h.RunUntil(func() bool {
		got = got[:0]
		for _, s := range f.spans.Ended() {
			if s.SpanKind() == trace.SpanKindConsumer && attr(s.Attributes(), "flowfabric.execution.id") == id.String() {
				got = append(got, s)
			}
		}
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d attempt spans of %s, want %d", len(got), id, n)
	}
	return got
}

// submitSpan returns the submit span that is a child of parent.
func (f *fixture) submitSpan(t *testing.T, parent trace.SpanContext) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range f.spans.Ended() {
		if s.SpanKind() == trace.SpanKindProducer && s.Parent().SpanID() == parent.SpanID() {
			return s
		}
	}
	t.Fatalf("no submit span under %s", parent.SpanID())
	return nil
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func event(s sdktrace.ReadOnlySpan, name string) (sdktrace.Event, bool) {
	for _, e := range s.Events() {
		if e.Name == name {
			return e, true
		}
	}
	return sdktrace.Event{}, false
}

// linkedTo reports whether the attempt span links to the submit span.
func linkedTo(attempt, submit sdktrace.ReadOnlySpan) bool {
	for _, l := range attempt.Links() {
		if l.SpanContext.SpanID() == submit.SpanContext().SpanID() && l.SpanContext.TraceID() == submit.SpanContext().TraceID() {
			return true
		}
	}
	return false
}

// metrics collects and returns the metrics by name.
func (f *fixture) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// match reports whether set has every key=value of want.
func match(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// count sums the points of an int64 counter or gauge matching want.
func count(t *testing.T, ms map[string]metricdata.Metrics, name string, want map[string]string) int64 {
	t.Helper()
	var n int64
	switch d := ms[name].Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes, want) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes, want) {
				n += p.Value
			}
		}
	case nil:
	default:
		t.Fatalf("%s: unexpected data %T", name, d)
	}
	return n
}

// histogram returns the count and sum of a histogram's points matching
// want.
func histogram(t *testing.T, ms map[string]metricdata.Metrics, name string, want map[string]string) (uint64, float64) {
	t.Helper()
	d, ok := ms[name].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: no histogram (%T)", name, ms[name].Data)
	}
	var c uint64
	var s float64
	for _, p := range d.DataPoints {
		if match(p.Attributes, want) {
			c += p.Count
			s += p.Sum
		}
	}
	return c, s
}

var lk = map[string]string{"flowfabric.lane": "default", "flowfabric.kind": "otel_job", "service.test": "yes"}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestSuccess: the submit span is a producer span under the submitting
// context's span, the attempt span a consumer span in a new trace, linked
// to it through the execution's metadata, with the messaging attributes;
// the counters, histograms and the gauge say the same.
func TestSuccess(t *testing.T) {
	f := newFixture(t)
	id, parent := f.submit(t, job{Do: "ok"}, &flowfabric.SubmitOpts{Delay: time.Minute, Priority: 7})
	if s := f.h.WaitTerminal(id); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state %s", s.PublicState)
	}
	a := f.attemptSpans(t, id, 1)[0]
	sub := f.submitSpan(t, parent)
	if sub.Name() != "submit default" || sub.SpanContext().TraceID() != parent.TraceID() {
		t.Fatalf("submit span %q in trace %s", sub.Name(), sub.SpanContext().TraceID())
	}
	for k, v := range map[string]string{"messaging.system": "flowfabric", "messaging.operation.name": "submit",
		"messaging.operation.type": "send", "messaging.destination.name": "default", "flowfabric.kind": "otel_job",
		"flowfabric.priority": "7", "service.test": "yes"} {
		if got := attr(sub.Attributes(), k); got != v {
			t.Errorf("submit span %s = %q, want %q", k, got, v)
		}
	}
	if a.Name() != "process default" || a.Parent().IsValid() || a.SpanContext().TraceID() == parent.TraceID() {
		t.Fatalf("attempt span %q, parent %v, trace %s", a.Name(), a.Parent().IsValid(), a.SpanContext().TraceID())
	}
	if !linkedTo(a, sub) {
		t.Fatalf("attempt span not linked to the submit span: %+v", a.Links())
	}
	for k, v := range map[string]string{"messaging.system": "flowfabric", "messaging.operation.name": "process",
		"messaging.operation.type": "process", "messaging.destination.name": "default", "messaging.message.id": id.String(),
		"flowfabric.execution.id": id.String(), "flowfabric.kind": "otel_job", "flowfabric.attempt": "0",
		"flowfabric.attempt.type": "initial", "flowfabric.retry_count": "0", "flowfabric.namespace": "default",
		"flowfabric.outcome": "completed", "flowfabric.lease.epoch": "1"} {
		if got := attr(a.Attributes(), k); got != v {
			t.Errorf("attempt span %s = %q, want %q", k, got, v)
		}
	}
	if a.Status().Code != codes.Ok {
		t.Errorf("status %v", a.Status())
	}
	if !a.EndTime().After(a.StartTime()) && !a.EndTime().Equal(a.StartTime()) {
		t.Errorf("span times %s..%s", a.StartTime(), a.EndTime())
	}
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricSubmitted, lk); n != 1 {
		t.Errorf("submitted %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricClaimed, lk); n != 1 {
		t.Errorf("claimed %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricCompleted, lk); n != 1 {
		t.Errorf("completed %d", n)
	}
	if c, _ := histogram(t, ms, otelflowfabric.MetricAttemptDuration, with(lk, "flowfabric.outcome", "completed")); c != 1 {
		t.Errorf("attempt durations %d", c)
	}
	// submitted at t0 with a delay of a minute: it waited at least that
	if c, s := histogram(t, ms, otelflowfabric.MetricQueueWait, lk); c != 1 || s < 60 {
		t.Errorf("queue wait: %d points, sum %gs", c, s)
	}
	if n := count(t, ms, otelflowfabric.MetricExecutions, map[string]string{"flowfabric.lane": "default",
		"flowfabric.state": "completed", "flowfabric.namespace": "default"}); n != 1 {
		t.Errorf("executions completed %d", n)
	}
	if c, _ := histogram(t, ms, otelflowfabric.MetricScannerPass, map[string]string{"flowfabric.scanner": "delayed_promoter"}); c == 0 {
		t.Errorf("no delayed_promoter pass recorded")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.passes == 0 || f.outcome != 1 {
		t.Errorf("chained hooks: %d passes, %d outcomes", f.passes, f.outcome)
	}
}

// TestRetryThenSuccess: a failed attempt's span has status Error, its
// error recorded, error.type its category and a retry_scheduled event at
// the retry's time; the retry is a second span linked to the same submit
// span.
func TestRetryThenSuccess(t *testing.T) {
	f := newFixture(t)
	id, parent := f.submit(t, job{Do: "flaky"}, &flowfabric.SubmitOpts{
		RetryPolicy: &flowfabric.RetryPolicy{MaxRetries: 2, Backoff: flowfabric.BackoffFixed, Delay: 10 * time.Second}})
	if s := f.h.WaitTerminal(id); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("state %s", s.PublicState)
	}
	spans := f.attemptSpans(t, id, 2)
	sub := f.submitSpan(t, parent)
	first, second := spans[0], spans[1]
	if first.Status().Code != codes.Error || !strings.Contains(first.Status().Description, "flaky") {
		t.Errorf("first status %+v", first.Status())
	}
	if attr(first.Attributes(), "error.type") != "transient" || attr(first.Attributes(), "flowfabric.outcome") != "retrying" {
		t.Errorf("first attributes %v", first.Attributes())
	}
	ev, ok := event(first, "flowfabric.retry_scheduled")
	if !ok {
		t.Fatalf("no retry_scheduled event: %v", first.Events())
	}
	retryAt, err := time.Parse(time.RFC3339Nano, attr(ev.Attributes, "flowfabric.retry_at"))
	if err != nil || retryAt.Sub(first.EndTime()) != 10*time.Second {
		t.Errorf("retry_at %v (%v), ended %s", retryAt, err, first.EndTime())
	}
	if _, ok := event(first, "exception"); !ok {
		t.Errorf("error not recorded: %v", first.Events())
	}
	if second.Status().Code != codes.Ok || attr(second.Attributes(), "flowfabric.attempt") != "1" ||
		attr(second.Attributes(), "flowfabric.attempt.type") != "retry" || attr(second.Attributes(), "flowfabric.retry_count") != "1" {
		t.Errorf("second span %v %v", second.Status(), second.Attributes())
	}
	if !linkedTo(first, sub) || !linkedTo(second, sub) {
		t.Errorf("attempts not both linked to the submit span")
	}
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricRetried, with(lk, "error.type", "transient")); n != 1 {
		t.Errorf("retried %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricCompleted, lk); n != 1 {
		t.Errorf("completed %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricFailed, lk); n != 0 {
		t.Errorf("failed %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricClaimed, lk); n != 2 {
		t.Errorf("claimed %d", n)
	}
	// the retry's queue wait is not recorded: only first attempts
	if c, _ := histogram(t, ms, otelflowfabric.MetricQueueWait, lk); c != 1 {
		t.Errorf("queue waits %d", c)
	}
}

// TestFailures: an execution that fails for good and one whose handler
// panics end their spans in Error with a "failed" event, error.type the
// category, and count in flowfabric.failed.
func TestFailures(t *testing.T) {
	f := newFixture(t)
	perm, _ := f.submit(t, job{Do: "permanent"}, nil)
	boom, _ := f.submit(t, job{Do: "panic"}, &flowfabric.SubmitOpts{RetryPolicy: flowfabric.NoRetries()})
	f.h.WaitTerminal(perm)
	f.h.WaitTerminal(boom)
	p := f.attemptSpans(t, perm, 1)[0]
	if p.Status().Code != codes.Error || attr(p.Attributes(), "error.type") != "permanent" || attr(p.Attributes(), "flowfabric.outcome") != "failed" {
		t.Errorf("permanent: %v %v", p.Status(), p.Attributes())
	}
	if _, ok := event(p, "flowfabric.failed"); !ok {
		t.Errorf("permanent: no failed event")
	}
	b := f.attemptSpans(t, boom, 1)[0]
	if b.Status().Code != codes.Error || attr(b.Attributes(), "error.type") != "panic" {
		t.Errorf("panic: %v %v", b.Status(), b.Attributes())
	}
	ex, ok := event(b, "exception")
	if !ok || !strings.Contains(attr(ex.Attributes, "exception.message"), "handler blew up") {
		t.Errorf("panic: exception %v", ex.Attributes)
	}
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricFailed, with(lk, "error.type", "permanent")); n != 1 {
		t.Errorf("failed permanent %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricFailed, with(lk, "error.type", "panic")); n != 1 {
		t.Errorf("failed panic %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricExecutions, map[string]string{"flowfabric.state": "failed"}); n != 2 {
		t.Errorf("executions failed %d", n)
	}
}

// TestCancelled: a handler that cancels its execution, and an operator
// cancelling a running execution (its lease is taken away: a lease_lost
// event at that moment, counted by reason) both count in
// flowfabric.cancelled; neither is an error.
func TestCancelled(t *testing.T) {
	f := newFixture(t)
	self, _ := f.submit(t, job{Do: "cancel"}, nil)
	f.h.WaitTerminal(self)
	s := f.attemptSpans(t, self, 1)[0]
	ev, ok := event(s, "flowfabric.cancelled")
	if !ok || attr(ev.Attributes, "flowfabric.reason") != "no longer wanted" || s.Status().Code == codes.Error {
		t.Errorf("self-cancel: %v %v", s.Events(), s.Status())
	}

	hang, _ := f.submit(t, job{Do: "hang"}, nil)
	f.h.RunUntil(func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.hanging[hang] })
	if err := f.h.Engine.Cancel(f.h.Ctx, hang, "operator says no"); err != nil {
		t.Fatal(err)
	}
	o := f.attemptSpans(t, hang, 1)[0]
	lost, ok := event(o, "flowfabric.lease_lost")
	if !ok || attr(lost.Attributes, "flowfabric.reason") != "cancelled" {
		t.Errorf("operator cancel: events %v", o.Events())
	}
	if _, ok := event(o, "flowfabric.cancelled"); !ok || o.Status().Code == codes.Error ||
		attr(o.Attributes(), "flowfabric.outcome") != "not_recorded" {
		t.Errorf("operator cancel: %v %v %v", o.Events(), o.Status(), o.Attributes())
	}
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricCancelled, lk); n != 2 {
		t.Errorf("cancelled %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricLeaseLost, with(lk, "flowfabric.reason", "cancelled")); n != 1 {
		t.Errorf("lease lost %d", n)
	}
	if n := count(t, ms, otelflowfabric.MetricExecutions, map[string]string{"flowfabric.state": "cancelled"}); n != 2 {
		t.Errorf("executions cancelled %d", n)
	}
}

// TestSuspendSnoozeResume: suspension and snoozing are events on the run
// that parked; the run that resumes has a "resumed" event and is linked to
// the same submit span.
func TestSuspendSnoozeResume(t *testing.T) {
	f := newFixture(t)
	susp, parent := f.submit(t, job{Do: "suspend"}, nil)
	first := f.attemptSpans(t, susp, 1)[0]
	if _, ok := event(first, "flowfabric.suspended"); !ok || attr(first.Attributes(), "flowfabric.outcome") != "suspended" {
		t.Fatalf("suspend: %v", first.Events())
	}
	// a gauge of a lane and state that empties drops to 0
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricExecutions, map[string]string{"flowfabric.state": "suspended"}); n != 1 {
		t.Errorf("executions suspended %d", n)
	}
	if err := f.h.Engine.Resume(f.h.Ctx, susp); err != nil {
		t.Fatal(err)
	}
	f.h.WaitTerminal(susp)
	spans := f.attemptSpans(t, susp, 2)
	if _, ok := event(spans[1], "flowfabric.resumed"); !ok || !linkedTo(spans[1], f.submitSpan(t, parent)) {
		t.Errorf("resumed run: %v %v", spans[1].Events(), spans[1].Links())
	}
	ms = f.metrics(t)
	if d, ok := ms[otelflowfabric.MetricExecutions].Data.(metricdata.Gauge[int64]); ok {
		found := false
		for _, p := range d.DataPoints {
			if match(p.Attributes, map[string]string{"flowfabric.state": "suspended"}) {
				found = true
				if p.Value != 0 {
					t.Errorf("suspended after resume: %d", p.Value)
				}
			}
		}
		if !found {
			t.Errorf("the emptied state is not reported as 0")
		}
	}

	snooze, _ := f.submit(t, job{Do: "snooze"}, nil)
	f.h.WaitTerminal(snooze)
	ss := f.attemptSpans(t, snooze, 2)
	ev, ok := event(ss[0], "flowfabric.snoozed")
	if !ok {
		t.Fatalf("snooze: %v", ss[0].Events())
	}
	if at, err := time.Parse(time.RFC3339Nano, attr(ev.Attributes, "flowfabric.resume_at")); err != nil || at.Sub(ss[0].EndTime()) != time.Minute {
		t.Errorf("resume_at %v (%v)", at, err)
	}
	if _, ok := event(ss[1], "flowfabric.resumed"); !ok {
		t.Errorf("snoozed run did not resume: %v", ss[1].Events())
	}
	ms = f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricClaimed, lk); n != 4 {
		t.Errorf("claimed %d (runs)", n)
	}
	if n := count(t, ms, otelflowfabric.MetricCompleted, lk); n != 2 {
		t.Errorf("completed %d", n)
	}
}

// TestObserveEngineNil: a nil engine is refused with ErrNilEngine.
func TestObserveEngineNil(t *testing.T) {
	if _, err := otelflowfabric.New(nil).ObserveEngine(nil); !errors.Is(err, otelflowfabric.ErrNilEngine) {
		t.Fatalf("err %v", err)
	}
}

// TestMetadataCarrier: the carrier reads and writes the map, and a nil map
// takes no writes.
func TestMetadataCarrier(t *testing.T) {
	c := otelflowfabric.MetadataCarrier{"b": "2"}
	c.Set("a", "1")
	if c.Get("a") != "1" || strings.Join(c.Keys(), ",") != "a,b" {
		t.Fatalf("carrier %v", c)
	}
	var n otelflowfabric.MetadataCarrier
	n.Set("a", "1") // no panic
	if n.Get("a") != "" || len(n.Keys()) != 0 {
		t.Fatalf("nil carrier %v", n)
	}
}

// TestMetadataPropagation: the submit hook writes the trace context (and
// the baggage, with a propagator that carries it) into the execution's
// metadata next to the caller's entries, without changing the caller's
// map; the handler sees both, and the baggage in its context.
func TestMetadataPropagation(t *testing.T) {
	f := newFixture(t)
	mine := map[string]string{"app.request": "r-1"}
	member, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := f.tp.Tracer("test").Start(baggage.ContextWithBaggage(f.h.Ctx, bag), "parent")
	r, err := f.h.Engine.Submit(ctx, job{Do: "ok"}, &flowfabric.SubmitOpts{Metadata: mine})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	f.h.WaitTerminal(r.ID)
	a := f.attemptSpans(t, r.ID, 1)[0]
	sub := f.submitSpan(t, parent.SpanContext())
	if len(mine) != 1 {
		t.Fatalf("the caller's map was changed: %v", mine)
	}
	f.mu.Lock()
	got := f.seen[r.ID]
	f.mu.Unlock()
	tp := got.metadata["traceparent"]
	if got.metadata["app.request"] != "r-1" || !strings.Contains(tp, sub.SpanContext().SpanID().String()) ||
		!strings.Contains(tp, sub.SpanContext().TraceID().String()) || got.metadata["baggage"] != "tenant=acme" {
		t.Fatalf("handler metadata %v, submit span %s", got.metadata, sub.SpanContext().SpanID())
	}
	if got.tenant != "acme" {
		t.Fatalf("handler baggage tenant %q", got.tenant)
	}
	if !linkedTo(a, sub) {
		t.Fatal("not linked")
	}
	snap, err := f.h.Engine.Describe(f.h.Ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Metadata["traceparent"] != tp {
		t.Fatalf("Describe metadata %v", snap.Metadata)
	}
}

// TestNoPropagation: with the global propagator left a no-op, nothing is
// written into the metadata and the attempt span has no link; the spans
// and metrics are still made.
func TestNoPropagation(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	inst := otelflowfabric.New(&otelflowfabric.Options{TracerProvider: tp})
	cfg := &flowfabric.Config{}
	inst.InstrumentEngine(cfg)
	h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: cfg})
	wcfg := &flowfabric.WorkerConfig{}
	inst.InstrumentWorker(wcfg)
	w := h.NewWorker(wcfg)
	var mu sync.Mutex
	var md map[string]string
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[job]) error {
		mu.Lock()
		md = t.Metadata
		mu.Unlock()
		return nil
	}))
	h.StartWorker(w)
	r, err := h.Engine.Submit(h.Ctx, job{Do: "ok"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(r.ID)
	h.RunUntil(func() bool { return len(spans.Ended()) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(md) != 0 {
		t.Fatalf("metadata %v", md)
	}
	for _, s := range spans.Ended() {
		if len(s.Links()) != 0 {
			t.Fatalf("%s has links %v", s.Name(), s.Links())
		}
	}
}

// TestAttemptTimeout: an attempt that outlives its AttemptTimeout loses
// its lease (reason timed_out, at the timeout's instant); its span ends in
// Error since nothing the handler did was recorded, and the execution's
// end, recorded by the timeout scanner, shows in the gauge.
func TestAttemptTimeout(t *testing.T) {
	f := newFixture(t)
	id, _ := f.submit(t, job{Do: "hang"}, &flowfabric.SubmitOpts{AttemptTimeout: 5 * time.Second, RetryPolicy: flowfabric.NoRetries()})
	f.h.WaitTerminal(id)
	s := f.attemptSpans(t, id, 1)[0]
	lost, ok := event(s, "flowfabric.lease_lost")
	if !ok || attr(lost.Attributes, "flowfabric.reason") != "timed_out" || lost.Time.Sub(s.StartTime()) != 5*time.Second {
		t.Fatalf("events %v (started %s)", s.Events(), s.StartTime())
	}
	if s.Status().Code != codes.Error || attr(s.Attributes(), "flowfabric.outcome") != "not_recorded" {
		t.Fatalf("status %v, attributes %v", s.Status(), s.Attributes())
	}
	ms := f.metrics(t)
	if n := count(t, ms, otelflowfabric.MetricLeaseLost, with(lk, "flowfabric.reason", "timed_out")); n != 1 {
		t.Errorf("lease lost %d", n)
	}
	// the scanner recorded the end, not the worker: the gauge shows it
	if n := count(t, ms, otelflowfabric.MetricExecutions, map[string]string{"flowfabric.state": "expired"}); n != 1 {
		t.Errorf("executions expired %d", n)
	}
}

// TestWatchEnded: the completions feed counts every end by outcome, also
// those no worker saw (an operator cancelling waiting work); a store
// without the feed is refused with ErrFeedDisabled.
func TestWatchEnded(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	inst := otelflowfabric.New(&otelflowfabric.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	h := flowfabrictest.New(t, &flowfabrictest.Options{Feeds: model.Feeds{Completions: true}})
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[job]) error {
		if t.Args.Do == "permanent" {
			return flowfabric.Permanent(errors.New("no"))
		}
		return nil
	}))
	h.StartWorker(w)
	head, err := h.Engine.FeedHead(h.Ctx, flowfabric.FeedCompletions)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.Ctx)
	done := make(chan error, 1)
	untrack := h.Clock.Track() // the watcher waits on the engine's clock
	go func() {
		defer untrack()
		done <- inst.WatchEnded(ctx, h.Engine, &otelflowfabric.WatchOpts{From: &head})
	}()
	ended := func(outcome string) int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		ms := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				ms[m.Name] = m
			}
		}
		return count(t, ms, otelflowfabric.MetricEnded, map[string]string{"flowfabric.lane": "default",
			"flowfabric.kind": "otel_job", "flowfabric.outcome": outcome})
	}
	for _, j := range []job{{Do: "ok"}, {Do: "ok"}, {Do: "permanent"}} {
		if _, err := h.Engine.Submit(h.Ctx, j, nil); err != nil {
			t.Fatal(err)
		}
	}
	later, err := h.Engine.Submit(h.Ctx, job{Do: "ok"}, &flowfabric.SubmitOpts{Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Engine.Cancel(h.Ctx, later.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool { return ended("success") == 2 && ended("failed") == 1 && ended("cancelled") == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("WatchEnded: %v", err)
	}

	plain := flowfabrictest.New(t, nil)
	if err := inst.WatchEnded(plain.Ctx, plain.Engine, nil); !errors.Is(err, flowfabric.ErrFeedDisabled) {
		t.Fatalf("without the feed: %v", err)
	}
	if err := inst.WatchEnded(plain.Ctx, nil, nil); !errors.Is(err, otelflowfabric.ErrNilEngine) {
		t.Fatalf("nil engine: %v", err)
	}
}

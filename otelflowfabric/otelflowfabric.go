package otelflowfabric

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/wallclock"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/flowfabric/flowfabric/otelflowfabric"

// System is the value of messaging.system on every span.
const System = "flowfabric"

// Clock is the time source of an Instrumentation: flowfabric.Clock, or
// anything else with Now.
type Clock interface{ Now() time.Time }

// Options configures New. The zero value (or nil) means the global
// TracerProvider, MeterProvider and propagator (otel.GetTracerProvider,
// otel.GetMeterProvider, otel.GetTextMapPropagator) and the wall clock.
type Options struct {
	// TracerProvider makes the spans (nil: the global one).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments (nil: the global one).
	MeterProvider metric.MeterProvider
	// Propagator writes the submit span's context into the execution's
	// metadata and reads it back in the worker (nil: the global one, which
	// is a no-op until the program sets one, for example
	// propagation.TraceContext{}).
	Propagator propagation.TextMapPropagator
	// Clock times attempts and scanner passes and stamps spans and events
	// (nil: the wall clock). Pass the engine's clock (Config.Clock) when it
	// is simulated, as tests do; any flowfabric.Clock will do.
	Clock Clock
	// Attributes are added to every span and measurement (for example the
	// service's own dimensions). Keep their cardinality low.
	Attributes []attribute.KeyValue
}

// Instrumentation holds the tracer, the instruments and the attempts in
// flight of one process. Create it with New; it is safe for concurrent use
// by any number of engines and workers.
type Instrumentation struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	clock  Clock
	attrs  []attribute.KeyValue
	m      instruments

	mu sync.Mutex
	// runs are the runs of handlers whose outcome is not yet known, by
	// the TaskInfo the worker passes to the middleware and to OnOutcome.
	runs map[*flowfabric.TaskInfo]*run
}

// New returns an Instrumentation. A nil opts means the defaults (see
// Options). Errors creating instruments go to otel.Handle, as with every
// OpenTelemetry instrumentation; the instruments concerned record nothing.
func New(opts *Options) *Instrumentation {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = otel.GetTextMapPropagator()
	}
	if o.Clock == nil {
		o.Clock = wallclock.Clock{}
	}
	i := &Instrumentation{
		tracer: o.TracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
		prop:   o.Propagator,
		clock:  o.Clock,
		attrs:  append([]attribute.KeyValue(nil), o.Attributes...),
		runs:   make(map[*flowfabric.TaskInfo]*run),
	}
	i.m = newInstruments(o.MeterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version)))
	return i
}

// Version is the version of this instrumentation, reported as the scope
// version of its tracer and meter.
const Version = "0.1.0"

// InstrumentEngine adds the instrumentation to an engine's configuration,
// before flowfabric.New: it appends SubmitHook to cfg.SubmitHooks and
// chains OnScannerPass after cfg.OnScannerPass (an existing hook is still
// called, first).
func (i *Instrumentation) InstrumentEngine(cfg *flowfabric.Config) {
	cfg.SubmitHooks = append(cfg.SubmitHooks, i.SubmitHook())
	if prev := cfg.OnScannerPass; prev != nil {
		cfg.OnScannerPass = func(p flowfabric.ScannerPass) {
			prev(p)
			i.OnScannerPass(p)
		}
	} else {
		cfg.OnScannerPass = i.OnScannerPass
	}
}

// InstrumentWorker adds the instrumentation to a worker's configuration,
// before flowfabric.NewWorker: its middleware goes first in
// cfg.Middleware (outermost, so the attempt span is the parent of what the
// other middleware and the handler do, and a panic in them is seen), and
// its outcome hook is chained after cfg.OnOutcome (an existing hook is
// still called, first). The two go together: the middleware starts the
// attempt's span and the outcome hook ends it, so there is no separate
// accessor for either.
func (i *Instrumentation) InstrumentWorker(cfg *flowfabric.WorkerConfig) {
	cfg.Middleware = append([]flowfabric.Middleware{i.middleware}, cfg.Middleware...)
	if prev := cfg.OnOutcome; prev != nil {
		cfg.OnOutcome = func(ctx context.Context, t *flowfabric.TaskInfo, o *flowfabric.AttemptOutcome) {
			prev(ctx, t, o)
			i.onOutcome(ctx, t, o)
		}
	} else {
		cfg.OnOutcome = i.onOutcome
	}
}

// withBase returns attrs after the Options' attributes.
func (i *Instrumentation) withBase(attrs ...attribute.KeyValue) []attribute.KeyValue {
	if len(i.attrs) == 0 {
		return attrs
	}
	return append(append(make([]attribute.KeyValue, 0, len(i.attrs)+len(attrs)), i.attrs...), attrs...)
}

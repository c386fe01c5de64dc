package otelflowfabric

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowfabric/flowfabric"
)

// injectMetadata writes ctx's trace context into o.Metadata through p. It
// writes into a copy of the map (a map the caller passed is never
// changed), made only when p has something to write.
func injectMetadata(ctx context.Context, p propagation.TextMapPropagator, o *flowfabric.SubmitOpts) {
	fields := MetadataCarrier{}
	p.Inject(ctx, fields)
	if len(fields) == 0 {
		return
	}
	md := make(map[string]string, len(o.Metadata)+len(fields))
	maps.Copy(md, o.Metadata)
	maps.Copy(md, fields)
	o.Metadata = md
}

// extractMetadata reads what p wrote at submission from t's metadata: the
// submit span's context (invalid when there is none) and the baggage, if
// p carries baggage. It reads into an empty context, so a span or baggage
// of the worker's own context is never taken for the submission's.
func extractMetadata(p propagation.TextMapPropagator, t *flowfabric.TaskInfo) (trace.SpanContext, baggage.Baggage) {
	if len(t.Metadata) == 0 {
		return trace.SpanContext{}, baggage.Baggage{}
	}
	ctx := p.Extract(context.Background(), MetadataCarrier(t.Metadata))
	return trace.SpanContextFromContext(ctx), baggage.FromContext(ctx)
}

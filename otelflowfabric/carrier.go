package otelflowfabric

import (
	"maps"
	"slices"

	"go.opentelemetry.io/otel/propagation"
)

// MetadataCarrier adapts an execution's metadata (SubmitOpts.Metadata,
// TaskInfo.Metadata) to a propagation.TextMapCarrier, so any propagator
// can write a context into it and read one back. Set on a nil map is a
// no-op; InstrumentEngine's hook makes the map first.
type MetadataCarrier map[string]string

var _ propagation.TextMapCarrier = MetadataCarrier(nil)

// Get returns the value of key ("" when absent).
func (c MetadataCarrier) Get(key string) string { return c[key] }

// Set stores value under key.
func (c MetadataCarrier) Set(key, value string) {
	if c != nil {
		c[key] = value
	}
}

// Keys returns the keys, sorted.
func (c MetadataCarrier) Keys() []string { return slices.Sorted(maps.Keys(c)) }

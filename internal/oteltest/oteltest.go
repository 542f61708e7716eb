// Package oteltest reads back, in tests, what ddbindex records through the
// OpenTelemetry API: metrics through the SDK's in-memory ManualReader, spans
// through a tracetest.SpanRecorder.
//
// It is imported only by tests: the library itself depends on the
// OpenTelemetry API alone.
package oteltest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Harness holds a meter provider and a tracer provider whose output a test
// reads back.
type Harness struct {
	MeterProvider  *sdkmetric.MeterProvider
	TracerProvider *sdktrace.TracerProvider
	reader         *sdkmetric.ManualReader
	spans          *tracetest.SpanRecorder
}

// New returns a Harness that samples every span; its providers shut down
// when the test ends.
func New(t testing.TB) *Harness {
	t.Helper()
	h := &Harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	h.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = h.MeterProvider.Shutdown(context.Background())
		_ = h.TracerProvider.Shutdown(context.Background())
	})
	return h
}

// Metrics collects the metrics recorded so far (cumulative: each
// collection holds everything since the provider was made).
func (h *Harness) Metrics(t testing.TB) Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	return Metrics{rm: rm}
}

// Spans returns the spans ended so far, named name ("" for all), in the
// order they ended.
func (h *Harness) Spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if name == "" || s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Metrics is one collection of metrics.
type Metrics struct{ rm metricdata.ResourceMetrics }

// find returns the metric named name, and whether it was recorded.
func (m Metrics) find(name string) (metricdata.Metrics, bool) {
	for _, sm := range m.rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name == name {
				return mt, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// Unit returns the unit of the metric named name ("" when not recorded).
func (m Metrics) Unit(name string) string {
	mt, _ := m.find(name)
	return mt.Unit
}

// Scope returns the instrumentation scope that recorded the metric named
// name ("" when not recorded).
func (m Metrics) Scope(name string) string {
	for _, sm := range m.rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name == name {
				return sm.Scope.Name
			}
		}
	}
	return ""
}

// matches reports whether set holds every attribute of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// Sum adds up the data points of the counter named name whose attributes
// include every attribute of want (0 when there are none).
func (m Metrics) Sum(name string, want ...attribute.KeyValue) float64 {
	mt, ok := m.find(name)
	if !ok {
		return 0
	}
	var total float64
	switch d := mt.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				total += float64(p.Value)
			}
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				total += p.Value
			}
		}
	}
	return total
}

// Hist returns the count and the sum of the values recorded by the
// histogram named name in the data points whose attributes include every
// attribute of want.
func (m Metrics) Hist(name string, want ...attribute.KeyValue) (count uint64, sum float64) {
	mt, ok := m.find(name)
	if !ok {
		return 0, 0
	}
	if d, ok := mt.Data.(metricdata.Histogram[float64]); ok {
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				count += p.Count
				sum += p.Sum
			}
		}
	}
	return count, sum
}

// Points returns the attribute sets of the data points of the metric named
// name.
func (m Metrics) Points(name string) []attribute.Set {
	mt, ok := m.find(name)
	if !ok {
		return nil
	}
	var out []attribute.Set
	switch d := mt.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	}
	return out
}

// Attr returns the value of attribute key on span s, and whether it is set.
func Attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// EventAttr returns the value of attribute key on an event's attributes.
func EventAttr(e sdktrace.Event, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range e.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

package migrate

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ddbindex/ddbindex"
)

// This file holds the package's OpenTelemetry instruments (the API only;
// the application chooses the SDK). Like package ddbindex's, they are
// opt-in: without a provider nothing is recorded. docs/observability.md
// documents each.

// ScopeName is the instrumentation scope of the package's meter and tracer.
const ScopeName = "github.com/ddbindex/ddbindex/migrate"

// The attribute keys, as package ddbindex names them.
const (
	attrTable       = attribute.Key("ddbindex.table")
	attrIndex       = attribute.Key("ddbindex.index")
	attrForm        = attribute.Key("ddbindex.form")
	attrOperation   = attribute.Key("ddbindex.operation")
	attrErrorType   = attribute.Key("error.type")
	attrShadow      = attribute.Key("ddbindex.shadow.outcome")
	attrShadowForm  = attribute.Key("ddbindex.shadow.form")
	attrMismatch    = attribute.Key("ddbindex.mismatch.kind")
	attrPersistence = attribute.Key("ddbindex.mismatch.persistence")
	attrDBSystem    = attribute.Key("db.system.name")
)

// counter makes an Int64Counter of mp's meter; nil for no meter (or a
// no-op one), and when the meter refuses it.
func counter(mp metric.MeterProvider, name, unit, desc string) metric.Int64Counter {
	if mp == nil {
		return nil
	}
	if _, noop := mp.(metricnoop.MeterProvider); noop {
		return nil
	}
	c, err := mp.Meter(ScopeName).Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil || c == nil {
		otel.Handle(err)
		return nil
	}
	return c
}

// tracer returns the package's tracer of tp; nil for none.
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	if _, noop := tp.(tracenoop.TracerProvider); noop {
		return nil
	}
	return tp.Tracer(ScopeName)
}

// add adds one to c (nil: no meter) with the attributes kv.
func add(ctx context.Context, c metric.Int64Counter, kv ...attribute.KeyValue) {
	if c != nil && c.Enabled(ctx) {
		c.Add(ctx, 1, metric.WithAttributes(kv...))
	}
}

// errorType is the error.type of an error: its DDBX code, or "_OTHER".
func errorType(err error) string {
	if code := ddbindex.Code(err); code != "" {
		return code
	}
	return "_OTHER"
}

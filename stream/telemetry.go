package stream

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ddbindex/ddbindex"
)

// This file instruments a Consumer with OpenTelemetry (the API only): what
// became of each record, how far behind the stream it was applied, and a
// span per pass. The index writes of each record are the Table's Apply,
// which the Table instruments itself. docs/observability.md
// documents the instruments.

// ScopeName is the instrumentation scope of the consumer's meter and tracer.
const ScopeName = "github.com/ddbindex/ddbindex/stream"

// outcome is what became of a record (attribute ddbindex.stream.outcome).
type outcome uint8

const (
	outcomeApplied outcome = iota // applied: its index writes were made (or it implied none)
	outcomeStale                  // applied before: every index write found the change or a newer one
	outcomeFailed                 // not applied: the pass stops at it, and a later one tries again
	outcomeSkipped                // a poison record that OnPoison skipped
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"applied", "stale", "failed", "skipped"}

// telemetry is a consumer's instrumentation; nil instruments nothing (a
// Consumer not made by NewConsumer).
type telemetry struct {
	records  metric.Int64Counter
	lag      metric.Float64Histogram
	outcomes [numOutcomes][]metric.AddOption
	lagOpts  []metric.RecordOption
	tracer   trace.Tracer // nil: no tracing
	table    string
	now      func() time.Time
}

func newTelemetry(table string, o *ConsumerOptions) *telemetry {
	mp, tp := o.MeterProvider, o.TracerProvider
	// Telemetry is opt-in, as for a Table: no provider, nothing recorded.
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	tel := &telemetry{table: table, now: o.Now}
	switch mp.(type) {
	case metricnoop.MeterProvider, *metricnoop.MeterProvider:
		tel.records, tel.lag = metricnoop.Int64Counter{}, metricnoop.Float64Histogram{}
	default:
		m := mp.Meter(ScopeName)
		var err error
		if tel.records, err = m.Int64Counter("ddbindex.stream.records", metric.WithUnit("{record}"),
			metric.WithDescription("Stream records the consumer processed, by outcome")); err != nil || tel.records == nil {
			otel.Handle(err)
			tel.records = metricnoop.Int64Counter{}
		}
		if tel.lag, err = m.Float64Histogram("ddbindex.stream.lag", metric.WithUnit("s"),
			metric.WithDescription("Time from a record's approximate creation to its application"),
			metric.WithExplicitBucketBoundaries(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400)); err != nil || tel.lag == nil {
			otel.Handle(err)
			tel.lag = metricnoop.Float64Histogram{}
		}
	}
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
	default:
		tel.tracer = tp.Tracer(ScopeName)
	}
	tableAttr := attribute.String("ddbindex.table", table)
	for i := range tel.outcomes {
		tel.outcomes[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(tableAttr, attribute.String("ddbindex.stream.outcome", outcomeNames[i])))}
	}
	tel.lagOpts = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(tableAttr))}
	return tel
}

// record counts what became of a record that applying returned st and err
// for, created (approximately, as the stream says) at created: zero when
// unknown. An applied (or stale) record's lag is now minus created. The
// consumer calls it for each record it tries; another path that applies
// records one by one can call it too.
func (tel *telemetry) record(ctx context.Context, created time.Time, st ddbindex.ApplyStats, err error) {
	if tel == nil {
		return
	}
	var o outcome
	switch {
	case err != nil:
		o = outcomeFailed
	case st.Skipped > 0:
		o = outcomeSkipped
	case st.Stale > 0 && st.Puts+st.Deletes == 0:
		o = outcomeStale
	default:
		o = outcomeApplied
	}
	tel.records.Add(ctx, 1, tel.outcomes[o]...)
	if (o == outcomeApplied || o == outcomeStale) && !created.IsZero() && tel.lag.Enabled(ctx) {
		tel.lag.Record(ctx, tel.now().Sub(created).Seconds(), tel.lagOpts...)
	}
}

// createdAt is a stream record's approximate creation time; zero when it
// has none.
func createdAt(r streamtypes.Record) time.Time {
	if d := r.Dynamodb; d != nil && d.ApproximateCreationDateTime != nil {
		return *d.ApproximateCreationDateTime
	}
	return time.Time{}
}

// startPoll starts the span of a pass; nil when it does not record.
func (tel *telemetry) startPoll(ctx context.Context) (context.Context, trace.Span) {
	return tel.startSpan(ctx, "ddbindex.stream.Poll")
}

// startSpan starts a consumer span named name (a pass, or a Lambda event);
// nil when it does not record.
func (tel *telemetry) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if tel == nil || tel.tracer == nil {
		return ctx, nil
	}
	ctx, span := tel.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer))
	if !span.IsRecording() {
		return ctx, nil
	}
	ctx = context.WithValue(ctx, passSpanKey{}, span)
	span.SetAttributes(attribute.String("ddbindex.table", tel.table))
	return ctx, span
}

// endPoll ends a pass's span with what the pass did.
func endPoll(span trace.Span, arn string, st ddbindex.ApplyStats, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("aws.dynamodb.stream_arn", arn), attribute.Int("ddbindex.apply.changes", st.Changes),
		attribute.Int("ddbindex.apply.puts", st.Puts), attribute.Int("ddbindex.apply.deletes", st.Deletes),
		attribute.Int("ddbindex.apply.stale", st.Stale), attribute.Int("ddbindex.apply.skipped", st.Skipped))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		if code := ddbindex.Code(err); code != "" {
			span.SetAttributes(attribute.String("error.type", code))
		}
	}
	span.End()
}

// passSpanKey is the context key of the span startSpan started: the
// consumer adds its events to that span alone, never to a span of the
// application's that the context also carries.
type passSpanKey struct{}

// page adds an event for a GetRecords page to the pass's span in ctx, if
// it has one.
func page(ctx context.Context, shard string, recs []streamtypes.Record) {
	span, _ := ctx.Value(passSpanKey{}).(trace.Span)
	if span == nil || !span.IsRecording() {
		return
	}
	kv := []attribute.KeyValue{attribute.String("aws.dynamodb.shard_id", shard), attribute.Int("ddbindex.stream.records", len(recs))}
	if n := len(recs); n > 0 && recs[n-1].Dynamodb != nil {
		kv = append(kv, attribute.String("aws.dynamodb.sequence_number", aws.ToString(recs[n-1].Dynamodb.SequenceNumber)))
	}
	span.AddEvent("DynamoDBStreams.GetRecords", trace.WithAttributes(kv...))
}

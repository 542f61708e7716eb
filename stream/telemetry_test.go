package stream

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// The consumer counts each record by what became of it (applied, stale on
// a replay, failed on a poison record, skipped by OnPoison), records the
// lag of each record it applied as its clock minus the record's approximate
// creation time, and traces each pass with its records' Apply spans as
// children.
func TestConsumerTelemetry(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ctx := t.Context()
	h := oteltest.New(t)
	tb, c := newTestTable[psEvent](t, func(o *ddbindex.Options) { o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider })
	sc := ddbtest.StreamsClient(t)
	items := []map[string]types.AttributeValue{
		psItem("a", psAt, psDue, "first"),
		psItem("b", psAt, psDue, "second"),
		psPoisons["zero time in a width=13 field"](),
		psItem("c", psAt, psDue, "third"),
	}
	for _, it := range items {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: it})
		require.NoError(t, err)
	}
	recs := records(t, tb)
	require.Len(t, recs, len(items))
	created := make([]time.Time, len(recs))
	for i, r := range recs {
		require.NotNil(t, r.Dynamodb.ApproximateCreationDateTime)
		created[i] = *r.Dynamodb.ApproximateCreationDateTime
	}
	now := created[len(created)-1].Add(90 * time.Second)
	lag := func(i int) float64 { return now.Sub(created[i]).Seconds() }
	opts := func(skip bool) func(*ConsumerOptions) {
		return func(o *ConsumerOptions) {
			o.Workers, o.Retry = 1, fast
			o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider
			o.Now = func() time.Time { return now }
			if skip {
				o.OnPoison = func(context.Context, PoisonRecord) error { return nil }
			}
		}
	}

	// a and b are applied; the pass stops at the poison record.
	cp := &MemoryCheckpoints{}
	_, err := newConsumer(t, tb, sc, cp, opts(false)).Poll(ctx)
	require.ErrorIs(t, err, ddbindex.ErrPoisonRecord)
	// The next consumer skips it, and applies c.
	_, err = newConsumer(t, tb, sc, cp, opts(true)).Poll(ctx)
	require.NoError(t, err)
	// A replay from the start finds a, b and c applied: stale.
	st, err := newConsumer(t, tb, sc, &MemoryCheckpoints{}, opts(true)).Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, st.Changes)

	m := h.Metrics(t)
	outcome := func(o string) float64 {
		return m.Sum("ddbindex.stream.records", attribute.String("ddbindex.table", tb.TableName()), attribute.String("ddbindex.stream.outcome", o))
	}
	assert.Equal(t, float64(3), outcome("applied"))
	assert.Equal(t, float64(1), outcome("failed"))
	assert.Equal(t, float64(2), outcome("skipped"))
	assert.Equal(t, float64(3), outcome("stale"))
	assert.Equal(t, float64(9), m.Sum("ddbindex.stream.records"))
	count, sum := m.Hist("ddbindex.stream.lag", attribute.String("ddbindex.table", tb.TableName()))
	assert.Equal(t, uint64(6), count, "applied and stale records")
	assert.InDelta(t, lag(0)+lag(1)+lag(3)+lag(0)+lag(1)+lag(3), sum, 1e-9)
	assert.Equal(t, "s", m.Unit("ddbindex.stream.lag"))
	assert.Equal(t, ScopeName, m.Scope("ddbindex.stream.records"))

	polls := h.Spans("ddbindex.stream.Poll")
	require.Len(t, polls, 3)
	assert.Equal(t, codes.Error, polls[0].Status().Code, "the first pass stopped on the poison record")
	et, _ := oteltest.Attr(polls[0], "error.type")
	assert.Equal(t, ddbindex.ErrPoisonRecord.Code(), et.AsString())
	for _, p := range polls {
		var pages int
		for _, e := range p.Events() {
			if e.Name == "DynamoDBStreams.GetRecords" {
				pages++
			}
		}
		assert.Positive(t, pages, "an event per GetRecords page")
	}
	applies := h.Spans("ddbindex.Apply")
	require.Len(t, applies, 3+2+4, "a, b and the poison record; the poison record and c; all four again")
	failed := 0
	for _, a := range applies {
		assert.True(t, isChildOf(a, polls), "each Apply span is a child of a pass")
		if a.Status().Code == codes.Error {
			failed++
		}
	}
	assert.Equal(t, 3, failed, "the poison record's Apply fails in each pass")
}

// isChildOf reports whether s's parent is one of spans.
func isChildOf(s sdktrace.ReadOnlySpan, spans []sdktrace.ReadOnlySpan) bool {
	for _, p := range spans {
		if s.Parent().SpanID() == p.SpanContext().SpanID() {
			return true
		}
	}
	return false
}

// The Lambda handler measures records as the consumer does, and traces each
// event with one span whose children are its records' Apply spans. A poison
// record fails its event's span and counts as failed; the records after it,
// not tried, count as nothing until Lambda delivers them again.
func TestLambdaHandlerTelemetry(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"REMOVE without its old image", "attribute value of no known type"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			lambdaTelemetry(t, kind)
		})
	}
}

func lambdaTelemetry(t *testing.T, kind string) {
	ctx := t.Context()
	h := oteltest.New(t)
	tb, _ := newTestTable[stTicket](t, stFixedNow, func(o *ddbindex.Options) { o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider })
	fs := newFSStream(tb)
	fs.shard("s0", "")
	live := map[int]*stTicket{}
	lsWork(t, fs, "s0", 0, 0, live)
	if kind == "REMOVE without its old image" {
		keys := fs.find("s0").recs[0].Dynamodb.Keys
		fs.addRaw("s0", streamtypes.Record{EventName: streamtypes.OperationTypeRemove, Dynamodb: &streamtypes.StreamRecord{
			Keys: keys, StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		}})
	} else {
		x := fsTicket(99)
		fs.add(t, "s0", nil, &x) // its Lambda form is damaged below
	}
	lsWork(t, fs, "s0", 0, 1, live)
	fs.mu.Lock()
	recs := append([]streamtypes.Record(nil), fs.find("s0").recs...)
	fs.mu.Unlock()
	const k = 5 // the poison record's place: after one round of 5 records
	n := len(recs)
	ev := lmEvent(t, recs)
	if kind == "attribute value of no known type" {
		// The handler cannot even convert it: it never reaches Apply, and
		// is counted all the same.
		ev.Records[k].Change.NewImage["title"] = events.DynamoDBAttributeValue{}
	}
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for i := range ev.Records {
		ev.Records[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: base.Add(time.Duration(i) * time.Second)}
	}
	now := base.Add(time.Hour)
	opts := func(skip bool) func(*LambdaOptions) {
		return func(o *LambdaOptions) {
			o.Workers, o.Retry, o.Now = 1, fast, func() time.Time { return now }
			o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider
			if skip {
				o.OnPoison = func(context.Context, PoisonRecord) error { return nil }
			}
		}
	}

	r, err := newLambdaHandler(t, tb, opts(false)).Apply(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, lmSeqs(ev)[k:], lmReported(r.Response))
	require.ErrorIs(t, r.Err, ddbindex.ErrPoisonRecord)
	assert.Contains(t, r.Err.Error(), "of stream "+lmARN, "a Lambda record's error names its stream, as it has no shard")
	r2, err := newLambdaHandler(t, tb, opts(true)).Apply(ctx, lmRedeliver(t, ev, r.Response))
	require.NoError(t, err)
	require.Empty(t, r2.Response.BatchItemFailures)

	m := h.Metrics(t)
	outcome := func(o string) float64 {
		return m.Sum("ddbindex.stream.records", attribute.String("ddbindex.table", tb.TableName()), attribute.String("ddbindex.stream.outcome", o))
	}
	assert.Equal(t, float64(n-1), outcome("applied"))
	assert.Equal(t, float64(1), outcome("failed"))
	assert.Equal(t, float64(1), outcome("skipped"))
	assert.Equal(t, float64(0), outcome("stale"))
	count, sum := m.Hist("ddbindex.stream.lag", attribute.String("ddbindex.table", tb.TableName()))
	assert.Equal(t, uint64(n-1), count)
	var want float64
	for i := range n {
		if i != k {
			want += now.Sub(base.Add(time.Duration(i) * time.Second)).Seconds()
		}
	}
	assert.InDelta(t, want, sum, 1e-9)

	batches := h.Spans("ddbindex.stream.Batch")
	require.Len(t, batches, 2)
	assert.Equal(t, codes.Error, batches[0].Status().Code, "the first event stopped on the poison record")
	assert.Equal(t, codes.Unset, batches[1].Status().Code)
	arn, _ := oteltest.Attr(batches[0], "aws.dynamodb.stream_arn")
	assert.Equal(t, lmARN, arn.AsString())
	applies := h.Spans("ddbindex.Apply")
	require.Len(t, applies, n-1, "the records applied, not the poison record (it never reaches Apply)")
	for _, a := range applies {
		assert.True(t, isChildOf(a, batches), "each Apply span is a child of its event's span")
	}
}

// A consumer whose tracer is a no-op adds nothing to a span of the
// application's that its context carries.
func TestConsumerTracingOff(t *testing.T) {
	t.Parallel()
	tb, fs := fsSetup(t)
	fs.shard("s0", "")
	lsWork(t, fs, "s0", 0, 0, map[int]*stTicket{})
	h := oteltest.New(t)
	ctx, app := h.TracerProvider.Tracer("app").Start(t.Context(), "app")
	st, err := newConsumer(t, tb, fs, &MemoryCheckpoints{}, func(o *ConsumerOptions) {
		o.Retry, o.TracerProvider = fast, tracenoop.NewTracerProvider()
	}).Poll(ctx)
	app.End()
	require.NoError(t, err)
	require.Positive(t, st.Changes)
	spans := h.Spans("app")
	require.Len(t, spans, 1)
	assert.Empty(t, spans[0].Events())
}

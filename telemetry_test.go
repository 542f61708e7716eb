package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/tracing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// The OpenTelemetry tests read what the library records back through the
// SDK's in-memory reader and a span recorder, against the local server,
// and compare it with what each test's own data implies.

// tmTicket has an index table by team (whose reads skip tombstones) and a
// base table of its own.
type tmTicket struct {
	_     TableSpec `ddbindex:"tm-tickets"`
	_     IndexSpec `ddbindex:"by_team,type=table"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Team  string    `dynamodbav:"team" ddbindex:"by_team.pk"`
	Seq   int64     `dynamodbav:"seq" ddbindex:"by_team.sk"`
	Title string    `dynamodbav:"title"`
}

// withOTel returns the option that sends a Table's telemetry to h.
func withOTel(h *oteltest.Harness) func(*Options) {
	return func(o *Options) { o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider }
}

// tmSeed writes n entries of team's by_team partition straight into the
// index table, seq 1..n; those whose seq is in dead are tombstones.
func tmSeed(t *testing.T, tb *Table[tmTicket], team string, n int, dead ...int64) {
	t.Helper()
	for seq := int64(1); seq <= int64(n); seq++ {
		putEntry(t, tb, "by_team", tmTicket{ID: fmt.Sprintf("%s-%02d", team, seq), Team: team, Seq: seq, Title: "t"}, slices.Contains(dead, seq))
	}
}

// kvs is a list of attributes, for assertions.
func kvs(kv ...attribute.KeyValue) []attribute.KeyValue { return kv }

// A Page through tombstones records the requests, the read units and the
// items it read, returned, filtered and dropped, with the tombstone ratio;
// a read with a caller's filter records no ratio; the span carries the
// page's costs and an event per Query.
func TestTelemetryQueryThroughTombstones(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, _ := newTestTable[tmTicket](t, withOTel(h))
	ctx := context.Background()
	dead := []int64{2, 3, 5, 8, 11}
	const n = 12
	tmSeed(t, tb, "T1", n, dead...)

	// One request reads the whole partition: the page asks for 20 items
	// (a first call, which knows no item's size, reads none past the
	// page), and it holds 12.
	page, err := tb.Query("by_team", "T1").Limit(20).Page(ctx)
	require.NoError(t, err)
	want := Stats{Requests: 1, Read: n, Returned: n - len(dead), Filtered: len(dead), ReadUnits: page.Stats.ReadUnits}
	require.Equal(t, want, page.Stats)
	require.Empty(t, page.Cursor)

	on := kvs(attrTable.String(tb.TableName()), attrIndex.String("by_team"), attrForm.String("table"), attrOperation.String("Page"))
	m := h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.requests", append(on, attrDBOperation.String("Query"))...))
	assert.Equal(t, page.Stats.ReadUnits, m.Sum("ddbindex.read_units", on...))
	assert.Equal(t, float64(n), m.Sum("ddbindex.items.read", on...))
	assert.Equal(t, float64(n-len(dead)), m.Sum("ddbindex.items.returned", on...))
	assert.Equal(t, float64(len(dead)), m.Sum("ddbindex.items.filtered", on...))
	assert.Equal(t, float64(0), m.Sum("ddbindex.items.dropped", on...))
	count, sum := m.Hist("ddbindex.tombstone_ratio", on...)
	assert.Equal(t, uint64(1), count)
	assert.InDelta(t, float64(len(dead))/n, sum, 1e-12)
	cnt, _ := m.Hist("ddbindex.operation.duration", on...)
	assert.Equal(t, uint64(1), cnt)
	assert.Zero(t, m.Sum("ddbindex.errors"))
	assert.Equal(t, "{request}", m.Unit("ddbindex.requests"))
	assert.Equal(t, "1", m.Unit("ddbindex.tombstone_ratio"))
	assert.Equal(t, scopeName, m.Scope("ddbindex.requests"))

	spans := h.Spans("ddbindex.Page")
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
	for key, v := range map[attribute.Key]attribute.Value{
		attrIndex:        attribute.StringValue("by_team"),
		attrForm:         attribute.StringValue("table"),
		attrRequests:     attribute.IntValue(1),
		attrItemsRead:    attribute.IntValue(n),
		attrItemsRet:     attribute.IntValue(n - len(dead)),
		attrItemsFilt:    attribute.IntValue(len(dead)),
		attrItemsDropped: attribute.IntValue(0),
		attrCursor:       attribute.BoolValue(false),
	} {
		got, ok := oteltest.Attr(s, key)
		assert.True(t, ok, key)
		assert.Equal(t, v, got, key)
	}
	require.Len(t, s.Events(), 1, "an event per Query")
	ev := s.Events()[0]
	assert.Equal(t, "DynamoDB.Query", ev.Name)
	for key, v := range map[attribute.Key]attribute.Value{
		attrTableNames: attribute.StringSliceValue([]string{tb.tableOf(tb.s.byName["by_team"])}),
		attrLimit:      attribute.Int64Value(20),
		attrScanned:    attribute.Int64Value(n),
		attrCount:      attribute.Int64Value(int64(n - len(dead))),
		attrReadUnits:  attribute.Float64Value(page.Stats.ReadUnits),
	} {
		got, ok := oteltest.EventAttr(ev, key)
		assert.True(t, ok, key)
		assert.Equal(t, v, got, key)
	}

	// With a filter of the caller's, what is filtered is not all
	// tombstones: no ratio.
	page, err = tb.Query("by_team", "T1").Limit(20).Filter(expression.Name("title").Equal(expression.Value("t"))).Page(ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, n-len(dead))
	m = h.Metrics(t)
	count, _ = m.Hist("ddbindex.tombstone_ratio", on...)
	assert.Equal(t, uint64(1), count, "no ratio for a filtered read")
	assert.Equal(t, float64(2*len(dead)), m.Sum("ddbindex.items.filtered", on...))

	// All and Exists count as their own operations; All's items are
	// what ReportTo reports.
	var st Stats
	yielded := 0
	for _, err := range tb.Query("by_team", "T1").Limit(3).ReportTo(&st).All(ctx) {
		require.NoError(t, err)
		yielded++
	}
	require.Equal(t, 3, yielded)
	ok, err := tb.Query("by_team", "T1").Exists(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	m = h.Metrics(t)
	all := kvs(attrIndex.String("by_team"), attrOperation.String("All"))
	assert.Equal(t, float64(st.Requests), m.Sum("ddbindex.requests", all...))
	assert.Equal(t, float64(st.Read), m.Sum("ddbindex.items.read", all...))
	assert.Equal(t, float64(3), m.Sum("ddbindex.items.returned", all...))
	assert.Equal(t, float64(st.Filtered), m.Sum("ddbindex.items.filtered", all...))
	assert.Equal(t, float64(st.Dropped), m.Sum("ddbindex.items.dropped", all...))
	assert.Equal(t, float64(1), m.Sum("ddbindex.items.returned", attrOperation.String("Exists")), "Exists returns the first live item")
	assert.Len(t, h.Spans("ddbindex.All"), 1)
	assert.Len(t, h.Spans("ddbindex.Exists"), 1)
}

// A capped query counts a cap event and an ErrCapReached error; a query
// whose position does not advance counts a no-progress event.
func TestTelemetryCapAndNoProgress(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, c := newTestTable[tmTicket](t, withOTel(h))
	ctx := context.Background()
	// The first two are tombstones: the first request (2 items, for a
	// page of 2: a first call reads no item past the page) finds nothing
	// live, and the cap of one request stops the call.
	tmSeed(t, tb, "T1", 6, 1, 2)
	page, err := tb.Query("by_team", "T1").Limit(2).MaxRequests(1).Page(ctx)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Empty(t, page.Items)
	require.Equal(t, Stats{Requests: 1, Read: 2, Filtered: 2, ReadUnits: page.Stats.ReadUnits}, page.Stats)
	m := h.Metrics(t)
	on := kvs(attrIndex.String("by_team"), attrOperation.String("Page"))
	assert.Equal(t, float64(1), m.Sum("ddbindex.caps", append(on, attrCap.String("MaxRequests"))...))
	assert.Equal(t, float64(1), m.Sum("ddbindex.errors", append(on, attrErrorType.String("DDBX-401"))...))
	assert.Equal(t, float64(1), m.Sum("ddbindex.errors"), "one error in all")
	assert.Equal(t, float64(2), m.Sum("ddbindex.items.filtered", on...))
	count, sum := m.Hist("ddbindex.tombstone_ratio", on...)
	assert.Equal(t, uint64(1), count)
	assert.Equal(t, 1.0, sum, "both items read were tombstones")
	spans := h.Spans("ddbindex.Page")
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	et, _ := oteltest.Attr(spans[0], attrErrorType)
	assert.Equal(t, "DDBX-401", et.AsString())

	// A server that answers the second request with the position it was
	// sent: the page fill stops with ErrNoProgress.
	stuck := coldMemo(tb)
	stuck.client = calls{&tmStuckClient{Client: c}}
	var failed Stats
	_, err = stuck.Query("by_team", "T1").Limit(1).ReportTo(&failed).Page(ctx)
	require.ErrorIs(t, err, ErrNoProgress)
	assert.Equal(t, 2, failed.Requests, "ReportTo has the failed call's costs too")
	m = h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.no_progress", on...))
	assert.Equal(t, float64(1), m.Sum("ddbindex.errors", append(on, attrErrorType.String("DDBX-400"))...))
	assert.Equal(t, float64(1+2), m.Sum("ddbindex.requests", on...), "the capped call's request and the stuck call's two")
	assert.Equal(t, float64(2+failed.Read), m.Sum("ddbindex.items.read", on...), "the failed call's reads count too")
	assert.Positive(t, failed.Read)
	count, _ = m.Hist("ddbindex.tombstone_ratio", on...)
	assert.Equal(t, uint64(2), count, "the failed call records its ratio")
}

// tmStuckClient answers every Query that has an ExclusiveStartKey with
// that key as its LastEvaluatedKey.
type tmStuckClient struct{ Client }

func (s *tmStuckClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := s.Client.Query(ctx, in, optFns...)
	if err == nil && in.ExclusiveStartKey != nil {
		out.LastEvaluatedKey = in.ExclusiveStartKey
	}
	return out, err
}

// Writes record their requests and write units by the table or index
// they wrote (DynamoDB bills an item up to 1 KB one unit, twice that in a
// transaction), and Apply its index-table writes.
func TestTelemetryWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	op := func(o string) attribute.KeyValue { return attrOperation.String(o) }
	base, table := kvs(attrIndex.String(""), attrForm.String("base")), kvs(attrIndex.String("by_team"), attrForm.String("table"))
	with := func(a []attribute.KeyValue, kv ...attribute.KeyValue) []attribute.KeyValue {
		return append(slices.Clone(a), kv...)
	}

	t.Run("stream mode", func(t *testing.T) {
		t.Parallel()
		h := oteltest.New(t)
		tb, _ := newTestTable[tmTicket](t, withOTel(h))
		item := tmTicket{ID: "w-1", Team: "T1", Seq: 1, Title: "small"}
		_, err := tb.Put(ctx, item)
		require.NoError(t, err)
		require.NoError(t, tb.Update(ctx, tmTicket{ID: "w-1"}, Set("title", "smaller")))
		av, err := tb.Marshal(item)
		require.NoError(t, err)
		st, err := tb.Apply(ctx, []Change{{New: av, Version: "7"}})
		require.NoError(t, err)
		require.Equal(t, 1, st.Puts)
		require.NoError(t, tb.Delete(ctx, tmTicket{ID: "w-1"}))

		m := h.Metrics(t)
		for _, c := range []struct {
			op, api string
			on      []attribute.KeyValue
		}{{"Put", "PutItem", base}, {"Update", "UpdateItem", base}, {"Apply", "PutItem", table}, {"Delete", "DeleteItem", base}} {
			on := with(c.on, op(c.op), attrDBOperation.String(c.api))
			assert.Equal(t, float64(1), m.Sum("ddbindex.requests", on...), c.op)
			assert.Equal(t, float64(1), m.Sum("ddbindex.write_units", on...), "%s: one item under 1 KB", c.op)
			assert.Len(t, h.Spans("ddbindex."+c.op), 1, c.op)
		}
		assert.Equal(t, float64(4), m.Sum("ddbindex.requests"), "nothing else was sent")
		apply := h.Spans("ddbindex.Apply")[0]
		puts, _ := oteltest.Attr(apply, "ddbindex.apply.puts")
		assert.Equal(t, int64(1), puts.AsInt64())
		require.Len(t, apply.Events(), 1)
		assert.Equal(t, "DynamoDB.PutItem", apply.Events()[0].Name)
	})

	t.Run("write-through", func(t *testing.T) {
		t.Parallel()
		ddbtest.Require(t, ddbtest.Transactions)
		h := oteltest.New(t)
		tb, _ := newTestTable[tmTicket](t, withOTel(h), func(o *Options) { o.WriteThrough = true })
		_, err := tb.Put(ctx, tmTicket{ID: "w-1", Team: "T1", Seq: 1, Title: "small"})
		require.NoError(t, err)
		m := h.Metrics(t)
		put := op("Put")
		assert.Equal(t, float64(1), m.Sum("ddbindex.requests", with(base, put, attrDBOperation.String("GetItem"))...))
		assert.Equal(t, float64(1), m.Sum("ddbindex.requests", with(base, put, attrDBOperation.String("TransactWriteItems"))...))
		tx := attrDBOperation.String("TransactWriteItems")
		assert.Equal(t, float64(2), m.Sum("ddbindex.write_units", with(base, put, tx)...), "the base item, transactional")
		assert.Equal(t, float64(2), m.Sum("ddbindex.write_units", with(table, put, tx)...), "the index-table entry, transactional")
		spans := h.Spans("ddbindex.Put")
		require.Len(t, spans, 1)
		var names []string
		for _, e := range spans[0].Events() {
			names = append(names, e.Name)
		}
		assert.Equal(t, []string{"DynamoDB.GetItem", "DynamoDB.TransactWriteItems"}, names)
		tables, _ := oteltest.EventAttr(spans[0].Events()[1], attrTableNames)
		assert.ElementsMatch(t, []string{tb.TableName(), tb.tableOf(tb.s.byName["by_team"])}, tables.AsStringSlice())
	})
}

// Failed calls count by error code: ErrNotFound for a Get, ErrDynamoDB for
// a query of a table that does not exist (its event names the service's
// error code).
func TestTelemetryErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := oteltest.New(t)
	tb, c := newTestTable[tmTicket](t, withOTel(h))
	_, err := tb.Get(ctx, tmTicket{ID: "absent"})
	require.ErrorIs(t, err, ErrNotFound)

	gone, err := New[tmTicket](c, withOTel(h), func(o *Options) { o.TableName = func(s string) string { return ddbtest.Name(t, "no-such-table") } })
	require.NoError(t, err)
	_, err = gone.Query("by_team", "T1").Page(ctx)
	require.ErrorIs(t, err, ErrDynamoDB)

	m := h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.errors", attrOperation.String("Get"), attrErrorType.String("DDBX-404"), attrIndex.String(""), attrForm.String("base")))
	assert.Equal(t, float64(1), m.Sum("ddbindex.errors", attrOperation.String("Page"), attrErrorType.String("DDBX-900"), attrIndex.String("by_team"), attrForm.String("table")))
	assert.Equal(t, float64(2), m.Sum("ddbindex.errors"))
	assert.Equal(t, float64(1), m.Sum("ddbindex.requests", attrOperation.String("Page")), "the failed request counts")
	spans := h.Spans("ddbindex.Page")
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	require.Len(t, spans[0].Events(), 2, "the request, and the error")
	et, ok := oteltest.EventAttr(spans[0].Events()[0], attrErrorType)
	require.True(t, ok)
	assert.Equal(t, "ResourceNotFoundException", et.AsString())
	assert.Equal(t, "exception", spans[0].Events()[1].Name)
}

// Reads of an index that keeps two forms count as routed reads by the form
// that served them and how it was chosen (via, router, declared), on their
// spans too; the reads of ReadEvent.compare count as operation Shadow, with
// a span each, and are not routed reads. (Package migrate's Shadows records
// the shadow reads and mismatches.)
func TestTelemetryRouting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := oteltest.New(t)
	f := newKPFleet(t)
	obs := &kpObserver{}
	tb, err := New[kpStep1](f.c, withOTel(h), func(o *Options) {
		o.TableName = f.s1.opts.TableName
		o.Router = &kpRouter{fn: func(pk string) (Kind, bool) { return IndexTable, pk == "to-table" }}
		o.Observer = obs
	})
	require.NoError(t, err)
	item := func(team, id string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: "open", Created: created}
	}
	for _, team := range []string{"to-table", "to-gsi"} {
		kpSeed(t, f, item(team, "a", 1), item(team, "b", 2))
	}
	// The index table lacks an entry of to-gsi: compared on the table, the
	// page misses it, and misses it again when both are read again.
	kpDeleteEntry(t, f, item("to-gsi", "b", 2))

	outcomes := map[string]int{}
	for _, team := range []string{"to-table", "to-gsi", "to-gsi"} {
		_, err := tb.Query("by_status", team).Page(ctx)
		require.NoError(t, err)
		evs := obs.take()
		require.Len(t, evs, 1)
		m, err := evs[0].compare(ctx, false)
		require.NoError(t, err)
		if m == nil {
			outcomes["equal"]++
			continue
		}
		m, err = evs[0].compare(ctx, true)
		require.NoError(t, err)
		require.NotNil(t, m)
		outcomes[string(m.Kind)]++
	}
	assert.Equal(t, map[string]int{"equal": 1, string(bridge.MismatchMissing): 2}, outcomes)
	for range tb.Query("by_status", "to-table").Via(GSI).All(ctx) {
	}

	m := h.Metrics(t)
	routed := func(form, route, op string) float64 {
		return m.Sum("ddbindex.migration.routed_reads", attrIndex.String("by_status"), attrForm.String(form), attrRoute.String(route), attrOperation.String(op))
	}
	assert.Equal(t, float64(1), routed("table", routeRouter, "Page"))
	assert.Equal(t, float64(2), routed("gsi", routeDeclared, "Page"), "the Router said ok=false")
	assert.Equal(t, float64(1), routed("gsi", routeVia, "All"))
	assert.Equal(t, float64(4), m.Sum("ddbindex.migration.routed_reads"), "Compare's reads are not routed reads")
	// Each comparison: its own read of the other form, and for a mismatch
	// the re-read of both forms; their requests count as operation Shadow.
	assert.Equal(t, float64(1+3+3), m.Sum("ddbindex.requests", attrOperation.String("Shadow")))
	assert.Len(t, h.Spans("ddbindex.Shadow"), 1+3+3, "a span per read of Compare")
	var routes []string
	for _, s := range h.Spans("ddbindex.Page") {
		r, _ := oteltest.Attr(s, attrRoute)
		routes = append(routes, r.AsString())
	}
	assert.ElementsMatch(t, []string{"router", "declared", "declared"}, routes)
}

// The library's span is the parent of the SDK's own spans for its requests,
// when the client traces (dynamodb.Options.TracerProvider).
func TestTelemetrySDKSpansNest(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, c := newTestTable[tmTicket](t, withOTel(h))
	rec := &sdkTracer{}
	traced := dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.TracerProvider = rec })
	tb.client = calls{traced}
	_, err := tb.Query("by_team", "T1").Page(context.Background())
	require.NoError(t, err)
	spans := h.Spans("ddbindex.Page")
	require.Len(t, spans, 1)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Contains(t, rec.parents, "DynamoDB.Query")
	assert.Equal(t, spans[0].SpanContext(), rec.parents["DynamoDB.Query"], "the SDK's span is a child of the library's")
}

// sdkTracer is a smithy-go TracerProvider that notes, for each span the SDK
// starts, the OpenTelemetry span of its context (its parent).
type sdkTracer struct {
	mu      sync.Mutex
	parents map[string]trace.SpanContext
}

func (s *sdkTracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return s }

func (s *sdkTracer) StartSpan(ctx context.Context, name string, _ ...tracing.SpanOption) (context.Context, tracing.Span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parents == nil {
		s.parents = map[string]trace.SpanContext{}
	}
	if _, seen := s.parents[name]; !seen {
		s.parents[name] = trace.SpanContextFromContext(ctx)
	}
	return tracing.NopTracerProvider{}.Tracer("").StartSpan(ctx, name)
}

// Without providers, or with no-op ones, nothing is instrumented: a call
// makes no call state and writes ask for no consumed capacity.
func TestTelemetryOff(t *testing.T) {
	t.Parallel()
	tb, err := New[tmTicket](nil, func(o *Options) {
		o.MeterProvider, o.TracerProvider = metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider()
	})
	require.NoError(t, err)
	assert.Nil(t, tb.tel)
	ctx, c := tb.tel.start(context.Background(), opPage, nil)
	assert.Nil(t, c)
	assert.Nil(t, callFrom(ctx))

	none, err := New[tmTicket](nil)
	require.NoError(t, err)
	assert.Nil(t, none.tel, "telemetry is opt-in")
	_, c = none.tel.start(context.Background(), opPut, none.s.base)
	assert.Nil(t, c)
}

// With tracing alone, writes and key reads do not ask for capacity (only
// the unit counters need it), and their request events carry no units
// rather than 0.
func TestTelemetryTracingOnly(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, _ := newTestTable[tmTicket](t, func(o *Options) {
		o.MeterProvider, o.TracerProvider = metricnoop.NewMeterProvider(), h.TracerProvider
	})
	ctx := context.Background()
	_, err := tb.Put(ctx, tmTicket{ID: "t-1", Team: "T1", Seq: 1, Title: "t"})
	require.NoError(t, err)
	_, err = tb.Get(ctx, tmTicket{ID: "t-1"})
	require.NoError(t, err)
	for _, name := range []string{"ddbindex.Put", "ddbindex.Get"} {
		spans := h.Spans(name)
		require.Len(t, spans, 1, name)
		require.NotEmpty(t, spans[0].Events(), name)
		for _, e := range spans[0].Events() {
			_, w := oteltest.EventAttr(e, attrWriteUnits)
			_, r := oteltest.EventAttr(e, attrReadUnits)
			assert.False(t, w || r, "%s: event %s carries units it did not ask for", name, e.Name)
		}
	}
}

// Capacity with a breakdown (ReturnConsumedCapacity INDEXES, as DynamoDB
// documents ConsumedCapacity) counts the table's share against the table and
// each GSI's against that GSI; a total alone counts against the request's
// target.
func TestTelemetryUnitsBreakdown(t *testing.T) {
	t.Parallel()
	type model struct {
		_  TableSpec `ddbindex:"tm-units"`
		_  IndexSpec `ddbindex:"by_g,type=gsi,name=GSI1"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
		G  string    `dynamodbav:"g" ddbindex:"by_g.pk"`
	}
	h := oteltest.New(t)
	tb, err := New[model](nil, withOTel(h))
	require.NoError(t, err)
	ctx, c := tb.tel.start(context.Background(), opPut, tb.s.base)
	require.NotNil(t, c)
	c.units(ctx, apiPutItem, tb.tel.inst.writeUnits, &types.ConsumedCapacity{
		TableName: aws.String("tm-units"), CapacityUnits: aws.Float64(3),
		Table:                  &types.Capacity{CapacityUnits: aws.Float64(1)},
		GlobalSecondaryIndexes: map[string]types.Capacity{"GSI1": {CapacityUnits: aws.Float64(2)}},
	}, tb.tel.base)
	c.units(ctx, apiPutItem, tb.tel.inst.writeUnits, &types.ConsumedCapacity{TableName: aws.String("tm-units"), CapacityUnits: aws.Float64(5)}, tb.tel.base)
	m := h.Metrics(t)
	assert.Equal(t, float64(1+5), m.Sum("ddbindex.write_units", attrIndex.String(""), attrForm.String("base")))
	assert.Equal(t, float64(2), m.Sum("ddbindex.write_units", attrIndex.String("by_g"), attrForm.String("gsi")))
}

// BenchmarkTelemetryHooks measures what the instrumentation adds to one
// Page call of one request, apart from the call: its hooks alone, with the
// providers unset (the default), and with the SDK's providers recording.
func BenchmarkTelemetryHooks(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts func(*Options)
	}{
		{"unset", func(*Options) {}},
		{"sdk", func(o *Options) {
			o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tb, err := New[tmTicket](nil, tc.opts)
			require.NoError(b, err)
			d := tb.s.byName["by_team"]
			p := &plan{def: d, route: routeDeclared}
			in := &dynamodb.QueryInput{TableName: aws.String(tb.tableOf(d)), Limit: aws.Int32(21)}
			out := &dynamodb.QueryOutput{Count: 7, ScannedCount: 12, ConsumedCapacity: &types.ConsumedCapacity{TableName: in.TableName, CapacityUnits: aws.Float64(0.5)}}
			b.ReportAllocs()
			for b.Loop() {
				ctx, c := tb.tel.start(context.Background(), opPage, d)
				c.planned(ctx, p, true)
				if c := callFrom(ctx); c != nil {
					c.queried(ctx, in, out, nil)
				}
				endPage(ctx, c, &Page[tmTicket]{Stats: Stats{Requests: 1, Read: 12, Returned: 7, Filtered: 5, ReadUnits: 0.5}}, nil)
			}
		})
	}
}

// tmShardTicket is tmTicket with its index table sharded: its reads send
// concurrent requests, one call state for all of them.
type tmShardTicket struct {
	_     TableSpec `ddbindex:"tm-shard-tickets"`
	_     IndexSpec `ddbindex:"by_team,type=table,shards=4"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Team  string    `dynamodbav:"team" ddbindex:"by_team.pk"`
	Seq   int64     `dynamodbav:"seq" ddbindex:"by_team.sk"`
	Title string    `dynamodbav:"title"`
}

// A sharded read records what its Stats say, through the concurrent
// requests of its merge: for a Page, and for an All the caller stops early
// (its span ends, and the entries read but not yielded count as dropped).
func TestTelemetrySharded(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, _ := newTestTable[tmShardTicket](t, withOTel(h))
	ctx := context.Background()
	for seq := int64(1); seq <= 40; seq++ {
		putEntry(t, tb, "by_team", tmShardTicket{ID: fmt.Sprintf("s-%02d", seq), Team: "T1", Seq: seq, Title: "t"}, seq%3 == 0)
	}
	page, err := coldMemo(tb).Query("by_team", "T1").Limit(10).Page(ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, 10)
	var all Stats
	n := 0
	for _, err := range coldMemo(tb).Query("by_team", "T1").ReportTo(&all).All(ctx) {
		require.NoError(t, err)
		if n++; n == 5 {
			break
		}
	}
	m := h.Metrics(t)
	for _, tc := range []struct {
		op string
		st Stats
	}{{"Page", page.Stats}, {"All", all}} {
		on := kvs(attrIndex.String("by_team"), attrOperation.String(tc.op))
		require.GreaterOrEqual(t, tc.st.Requests, 4, "%s: a request per shard at least", tc.op)
		assert.Equal(t, float64(tc.st.Requests), m.Sum("ddbindex.requests", on...), tc.op)
		assert.InDelta(t, tc.st.ReadUnits, m.Sum("ddbindex.read_units", on...), 1e-9, tc.op)
		assert.Equal(t, float64(tc.st.Read), m.Sum("ddbindex.items.read", on...), tc.op)
		assert.Equal(t, float64(tc.st.Returned), m.Sum("ddbindex.items.returned", on...), tc.op)
		assert.Equal(t, float64(tc.st.Filtered), m.Sum("ddbindex.items.filtered", on...), tc.op)
		assert.Equal(t, float64(tc.st.Dropped), m.Sum("ddbindex.items.dropped", on...), tc.op)
		spans := h.Spans("ddbindex." + tc.op)
		require.Len(t, spans, 1, tc.op)
		assert.Len(t, spans[0].Events(), tc.st.Requests, "%s: an event per request", tc.op)
	}
	assert.Equal(t, 10, page.Stats.Returned)
	assert.Equal(t, 5, all.Returned)
	assert.Positive(t, all.Dropped, "All read past the fifth item before the caller stopped")
}

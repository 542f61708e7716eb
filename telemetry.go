package ddbindex

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file instruments a Table with OpenTelemetry (the API only; the
// application chooses the SDK): the instruments, their attribute sets, and
// the state of one instrumented call. docs/observability.md
// documents every instrument, attribute and span.
//
// A call (Page, All, Exists, a write, Get, BatchGet) starts a call state
// that rides in its context; every request the call sends goes through the
// calls wrapper (calls.go), which finds it there and records the request.
// Telemetry is opt-in, as a tracer is in database drivers: without
// providers in Options (or with no-op ones) no call state is made, and the
// hooks reduce to nil checks. Attribute sets are made once per target, operation
// and DynamoDB operation, never per measurement.

// scopeName is the instrumentation scope of the library's meter and tracer:
// the package's import path (packages stream and migrate have scopes of
// their own).
const scopeName = "github.com/ddbindex/ddbindex"

// op is an instrumented operation of the library.
type op uint8

const (
	opPage op = iota
	opAll
	opExists
	opShadow // a Page run by a shadow comparison
	opGet
	opBatchGet
	opPut
	opUpdate
	opDelete
	opMove
	opApply
	numOps
)

var callNames = [numOps]string{"Page", "All", "Exists", "Shadow", "Get", "BatchGet", "Put", "Update", "Delete", "Move", "Apply"}

// spanNames are the span name of each operation.
var spanNames = func() (n [numOps]string) {
	for i, s := range callNames {
		n[i] = "ddbindex." + s
	}
	return n
}()

// api is a DynamoDB operation the library sends for a call.
type api uint8

const (
	apiQuery api = iota
	apiGetItem
	apiBatchGetItem
	apiPutItem
	apiUpdateItem
	apiDeleteItem
	apiTransactWriteItems
	numAPIs
)

var apiNames = [numAPIs]string{"Query", "GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}

// eventNames are the span event of each DynamoDB operation, named as the
// SDK names its own spans.
var eventNames = func() (n [numAPIs]string) {
	for i, s := range apiNames {
		n[i] = "DynamoDB." + s
	}
	return n
}()

// The attribute keys (see docs/observability.md).
const (
	attrTable       = attribute.Key("ddbindex.table")
	attrIndex       = attribute.Key("ddbindex.index")
	attrForm        = attribute.Key("ddbindex.form")
	attrOperation   = attribute.Key("ddbindex.operation")
	attrDBOperation = attribute.Key("db.operation.name")
	attrErrorType   = attribute.Key("error.type")
	attrCap         = attribute.Key("ddbindex.cap")
	attrRoute       = attribute.Key("ddbindex.route")
	attrThrottle    = attribute.Key("ddbindex.throttle.reason")
	attrThrottleRes = attribute.Key("ddbindex.throttle.resource")

	// Span and event attributes.
	attrDBSystem     = attribute.Key("db.system.name")
	attrTableNames   = attribute.Key("aws.dynamodb.table_names")
	attrIndexName    = attribute.Key("aws.dynamodb.index_name")
	attrLimit        = attribute.Key("aws.dynamodb.limit")
	attrCount        = attribute.Key("aws.dynamodb.count")
	attrScanned      = attribute.Key("aws.dynamodb.scanned_count")
	attrReadUnits    = attribute.Key("ddbindex.read_units")
	attrWriteUnits   = attribute.Key("ddbindex.write_units")
	attrRequests     = attribute.Key("ddbindex.requests")
	attrItemsRead    = attribute.Key("ddbindex.items.read")
	attrItemsRet     = attribute.Key("ddbindex.items.returned")
	attrItemsFilt    = attribute.Key("ddbindex.items.filtered")
	attrItemsDropped = attribute.Key("ddbindex.items.dropped")
	attrCursor       = attribute.Key("ddbindex.cursor")
)

// How a read's form was chosen (attribute ddbindex.route): see form in
// routing.go.
const (
	routeVia      = "via"      // the query's Via
	routeRouter   = "router"   // Options.Router
	routeDeclared = "declared" // the declared type
)

var routeSources = [...]string{routeVia, routeRouter, routeDeclared}

// instruments are a Table's metric instruments.
type instruments struct {
	requests       metric.Int64Counter
	readUnits      metric.Float64Counter
	writeUnits     metric.Float64Counter
	itemsRead      metric.Int64Counter
	itemsReturned  metric.Int64Counter
	itemsFiltered  metric.Int64Counter
	itemsDropped   metric.Int64Counter
	tombstoneRatio metric.Float64Histogram
	errors         metric.Int64Counter
	noProgress     metric.Int64Counter
	caps           metric.Int64Counter
	duration       metric.Float64Histogram
	routed         metric.Int64Counter
	throttles      metric.Int64Counter
}

// newInstruments makes the instruments on m. An instrument the meter
// refuses is a no-op one.
func newInstruments(m metric.Meter) *instruments {
	i64 := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			otel.Handle(err)
			return metricnoop.Int64Counter{}
		}
		return c
	}
	f64 := func(name, unit, desc string) metric.Float64Counter {
		c, err := m.Float64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			otel.Handle(err)
			return metricnoop.Float64Counter{}
		}
		return c
	}
	hist := func(name, unit, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		if err != nil || h == nil {
			otel.Handle(err)
			return metricnoop.Float64Histogram{}
		}
		return h
	}
	return &instruments{
		requests:       i64("ddbindex.requests", "{request}", "DynamoDB requests sent"),
		readUnits:      f64("ddbindex.read_units", "{read_capacity_unit}", "Read capacity units consumed, as DynamoDB reports them"),
		writeUnits:     f64("ddbindex.write_units", "{write_capacity_unit}", "Write capacity units consumed, as DynamoDB reports them"),
		itemsRead:      i64("ddbindex.items.read", "{item}", "Items DynamoDB read for queries (ScannedCount)"),
		itemsReturned:  i64("ddbindex.items.returned", "{item}", "Live items queries returned to the caller"),
		itemsFiltered:  i64("ddbindex.items.filtered", "{item}", "Items queries read and filtered out: tombstones and items the Filter rejected"),
		itemsDropped:   i64("ddbindex.items.dropped", "{item}", "Live items queries read beyond the page, read again by the next page"),
		tombstoneRatio: hist("ddbindex.tombstone_ratio", "1", "Per query filtered by the tombstone rule alone: tombstones read over items read", 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99),
		errors:         i64("ddbindex.errors", "{error}", "Calls that failed, by error code"),
		noProgress:     i64("ddbindex.no_progress", "{event}", "Queries ended because DynamoDB's position did not advance (ErrNoProgress)"),
		caps:           i64("ddbindex.caps", "{event}", "Queries stopped by MaxRequests or MaxReadUnits (ErrCapReached)"),
		duration:       hist("ddbindex.operation.duration", "s", "Duration of library calls", 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
		routed:         i64("ddbindex.migration.routed_reads", "{read}", "Reads of an index that keeps two forms, by the form that served them and how it was chosen"),
		throttles:      i64("ddbindex.throttles", "{throttle}", "Throttling reasons DynamoDB gave requests' attempts, by the table or index it throttled and the reason"),
	}
}

// enabled reports whether any instrument records measurements in ctx.
func (i *instruments) enabled(ctx context.Context) bool {
	return i.requests.Enabled(ctx) || i.readUnits.Enabled(ctx) || i.writeUnits.Enabled(ctx) ||
		i.itemsRead.Enabled(ctx) || i.itemsReturned.Enabled(ctx) || i.itemsFiltered.Enabled(ctx) || i.itemsDropped.Enabled(ctx) ||
		i.tombstoneRatio.Enabled(ctx) || i.errors.Enabled(ctx) || i.noProgress.Enabled(ctx) || i.caps.Enabled(ctx) ||
		i.duration.Enabled(ctx) || i.routed.Enabled(ctx) || i.throttles.Enabled(ctx)
}

// telemetry is a Table's instrumentation. A nil *telemetry instruments
// nothing.
type telemetry struct {
	inst   *instruments // nil: no metrics
	tracer trace.Tracer // nil: no tracing
	table  string       // the base table's physical name
	base   *target
	// targets holds the target of each layout; byPhysical each physical
	// table and index: the base table (index ""), its GSIs and LSIs, and
	// the index tables.
	targets    map[*layout]*target
	byPhysical map[physical]*target
	// undeclared is the target of a read of an index the model does not
	// declare, which fails before any request.
	undeclared *target
}

type physical struct{ table, index string }

// newTelemetry returns the instrumentation of a Table of schema s, nil
// when neither provider is set (or both are no-ops).
func newTelemetry(s *schema, o *settings) *telemetry {
	mp, tp := o.MeterProvider, o.TracerProvider
	tel := &telemetry{table: o.TableName(s.table), targets: map[*layout]*target{}, byPhysical: map[physical]*target{}}
	if mp != nil && !isNoopMeter(mp) {
		tel.inst = newInstruments(mp.Meter(scopeName))
	}
	if tp != nil && !isNoopTracer(tp) {
		tel.tracer = tp.Tracer(scopeName)
	}
	if tel.inst == nil && tel.tracer == nil {
		return nil
	}
	add := func(d *layout) {
		tg := &target{tel: tel, index: d.name, form: d.kind.String()}
		tel.targets[d] = tg
		k := physical{o.TableName(d.table), d.index}
		if _, dup := tel.byPhysical[k]; !dup {
			tel.byPhysical[k] = tg
		}
	}
	add(s.base)
	for _, d := range s.indexes {
		add(d)
	}
	tel.base = tel.targets[s.base]
	tel.undeclared = &target{tel: tel, index: "", form: ""}
	return tel
}

// meter and tracing report whether the Table has instruments and a tracer.
func (tel *telemetry) meter() bool { return tel.inst != nil }

func (tel *telemetry) tracing() bool { return tel.tracer != nil }

func isNoopMeter(mp metric.MeterProvider) bool {
	switch mp.(type) {
	case metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true
	}
	return false
}

func isNoopTracer(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true
	}
	return false
}

// target is what a measurement is about: the base table, or one form of an
// index. It caches the attribute sets of its measurements.
type target struct {
	tel         *telemetry
	index, form string
	ops         [numOps]atomic.Pointer[opAttrs]
}

// opAttrs are the measurement options of one operation on a target.
type opAttrs struct {
	base []attribute.KeyValue // table, index, form, operation
	add  []metric.AddOption
	rec  []metric.RecordOption
	apis [numAPIs]atomic.Pointer[[]metric.AddOption]
	// routes holds, per route source, the options of a routed read.
	routes [len(routeSources)]atomic.Pointer[[]metric.AddOption]
}

// attrs returns the options of operation o on tg.
func (tg *target) attrs(o op) *opAttrs {
	if a := tg.ops[o].Load(); a != nil {
		return a
	}
	kv := []attribute.KeyValue{attrTable.String(tg.tel.table), attrIndex.String(tg.index), attrForm.String(tg.form), attrOperation.String(callNames[o])}
	set := metric.WithAttributeSet(attribute.NewSet(kv...))
	a := &opAttrs{base: kv, add: []metric.AddOption{set}, rec: []metric.RecordOption{set}}
	if !tg.ops[o].CompareAndSwap(nil, a) {
		return tg.ops[o].Load()
	}
	return a
}

// with returns the options of a's attributes and kv, cached in slot.
func (a *opAttrs) with(slot *atomic.Pointer[[]metric.AddOption], kv ...attribute.KeyValue) []metric.AddOption {
	if p := slot.Load(); p != nil {
		return *p
	}
	opts := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), a.base...), kv...)...))}
	slot.CompareAndSwap(nil, &opts)
	return *slot.Load()
}

// extra returns the options of a's attributes and kv, uncached: for rare
// measurements (errors, caps, shadow outcomes).
func (a *opAttrs) extra(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), a.base...), kv...)...))}
}

// target returns the target of layout d (the undeclared one for nil).
// Reads only ever read the layouts of the schema: the base table and each
// form of each index.
func (tel *telemetry) target(d *layout) *target {
	if tg := tel.targets[d]; tg != nil {
		return tg
	}
	return tel.undeclared
}

// ---- the call state -----------------------------------------------------------

// call is the state of one instrumented call.
type call struct {
	tel     *telemetry
	op      op
	tgt     *target    // what the call reads or writes; for reads, set once planned
	span    trace.Span // nil unless recording
	metrics bool       // the instruments record
	start   time.Time
	// readUnits and writeUnits: the requests ask DynamoDB for the capacity
	// they consume (for the instruments that count it).
	readUnits, writeUnits bool
	// A read's outcome, set before it ends.
	stats         Stats
	hasStats      bool
	tombstoneOnly bool // the read's only filter is the tombstone rule
}

type callKey struct{}

// callFrom returns the call state ctx carries, or nil.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// spanStart are the options of a call's span.
var spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// start begins an instrumented call of operation o on d: it returns the
// context for the call's requests and the call state, nil when nothing
// records (and then ctx, with the span if one was started).
func (tel *telemetry) start(ctx context.Context, o op, d *layout) (context.Context, *call) {
	if tel == nil {
		return ctx, nil
	}
	var span trace.Span
	if tel.tracing() {
		var s trace.Span
		if ctx, s = tel.tracer.Start(ctx, spanNames[o], spanStart...); s.IsRecording() {
			span = s
		}
	}
	metrics := tel.meter() && tel.inst.enabled(ctx)
	if !metrics && span == nil {
		return ctx, nil
	}
	c := &call{tel: tel, op: o, tgt: tel.target(d), span: span, metrics: metrics}
	if span != nil {
		span.SetAttributes(attrDBSystem.String("aws.dynamodb"), attrTable.String(tel.table), attrOperation.String(callNames[o]), attrIndex.String(c.tgt.index), attrForm.String(c.tgt.form))
	}
	if metrics {
		c.start = time.Now()
		c.readUnits = tel.inst.readUnits.Enabled(ctx)
		c.writeUnits = tel.inst.writeUnits.Enabled(ctx)
	}
	return context.WithValue(ctx, callKey{}, c), c
}

// planned records the form that serves a read, and how it was chosen: with
// two forms (a migration), the read counts as a routed read.
func (c *call) planned(ctx context.Context, p *plan, tombstoneOnly bool) {
	if c == nil {
		return
	}
	c.tgt = c.tel.target(p.def)
	c.tombstoneOnly = tombstoneOnly
	twoForms := p.def.decl != nil && len(p.def.decl.forms) > 1
	if c.span != nil {
		c.span.SetAttributes(attrIndex.String(c.tgt.index), attrForm.String(c.tgt.form))
		if twoForms {
			c.span.SetAttributes(attrRoute.String(p.route))
		}
	}
	if c.metrics && twoForms && c.op != opShadow {
		for i, s := range routeSources {
			if s == p.route {
				a := c.tgt.attrs(c.op)
				c.tel.inst.routed.Add(ctx, 1, a.with(&a.routes[i], attrRoute.String(s))...)
			}
		}
	}
}

// readStats records a read's costs, for its end.
func (c *call) readStats(s Stats) {
	if c == nil {
		return
	}
	c.stats, c.hasStats = s, true
}

// end ends the call, which failed with err (nil: succeeded).
func (c *call) end(ctx context.Context, err error) {
	if c == nil {
		return
	}
	if c.metrics {
		inst := c.tel.inst
		a := c.tgt.attrs(c.op)
		inst.duration.Record(ctx, time.Since(c.start).Seconds(), a.rec...)
		if c.hasStats {
			s := c.stats
			inst.itemsRead.Add(ctx, int64(s.Read), a.add...)
			inst.itemsReturned.Add(ctx, int64(s.Returned), a.add...)
			inst.itemsFiltered.Add(ctx, int64(s.Filtered), a.add...)
			inst.itemsDropped.Add(ctx, int64(s.Dropped), a.add...)
			if c.tombstoneOnly && s.Read > 0 {
				inst.tombstoneRatio.Record(ctx, float64(s.Filtered)/float64(s.Read), a.rec...)
			}
		}
		if err != nil {
			inst.errors.Add(ctx, 1, a.extra(attrErrorType.String(errorType(err)))...)
			switch ce := asKind(err, ErrCapReached); {
			case ce != nil:
				inst.caps.Add(ctx, 1, a.extra(attrCap.String(ce.Op))...)
			case errors.Is(err, ErrNoProgress):
				inst.noProgress.Add(ctx, 1, a.add...)
			}
		}
	}
	if c.span != nil {
		if c.hasStats {
			s := c.stats
			c.span.SetAttributes(attrRequests.Int(s.Requests), attrReadUnits.Float64(s.ReadUnits), attrItemsRead.Int(s.Read),
				attrItemsRet.Int(s.Returned), attrItemsFilt.Int(s.Filtered), attrItemsDropped.Int(s.Dropped))
		}
		if err != nil {
			c.span.RecordError(err)
			c.span.SetStatus(codes.Error, err.Error())
			c.span.SetAttributes(attrErrorType.String(errorType(err)))
		}
		c.span.End()
	}
}

// endPage ends a Page or Exists call, which read page (nil when it
// failed before it had one).
func endPage[T any](ctx context.Context, c *call, page *Page[T], err error) {
	if c == nil {
		return
	}
	if page != nil {
		c.readStats(page.Stats)
	}
	c.end(ctx, err)
}

// cursor notes on the span whether a page has a cursor.
func (c *call) cursor(has bool) {
	if c != nil && c.span != nil {
		c.span.SetAttributes(attrCursor.Bool(has))
	}
}

// errorType is the error.type of an error the library returns: its code
// (such as "DDBX-900"), or, for an error without one, "_OTHER".
func errorType(err error) string {
	if code := Code(err); code != "" {
		return code
	}
	return "_OTHER"
}

// ---- requests -------------------------------------------------------------------

// reqTarget returns the target of a request to a physical table and index
// (the call's own target for one the model does not declare).
func (c *call) reqTarget(table, index *string) *target {
	if tg := c.tel.byPhysical[physical{aws.ToString(table), aws.ToString(index)}]; tg != nil {
		return tg
	}
	return c.tgt
}

// request records one request of the call: tg is what it targets, units
// what it consumed per target, and ev the event attributes beyond those
// request adds (only built when the span records).
func (c *call) request(ctx context.Context, a api, tg *target, err error, ev func() []attribute.KeyValue) {
	if c.metrics {
		oa := tg.attrs(c.op)
		c.tel.inst.requests.Add(ctx, 1, oa.with(&oa.apis[a], attrDBOperation.String(apiNames[a]))...)
	}
	if c.span != nil {
		kv := ev()
		if err != nil {
			kv = append(kv, attrErrorType.String(requestErrorType(err)))
		}
		c.span.AddEvent(eventNames[a], trace.WithAttributes(kv...))
	}
}

// requestErrorType is the error.type of a failed request: the service's
// error code (such as "ProvisionedThroughputExceededException"), else the
// library's.
func requestErrorType(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "" {
		return ae.ErrorCode()
	}
	return errorType(err)
}

// units records the capacity cc reports, as counter counts it, and
// returns its total. A total alone (ReturnConsumedCapacity TOTAL) counts
// against tg, the request's target (for a Query of a GSI, the GSI); a
// breakdown (INDEXES) counts the table's share against the table and each
// index's share against that index.
func (c *call) units(ctx context.Context, a api, counter metric.Float64Counter, cc *types.ConsumedCapacity, tg *target) float64 {
	if cc == nil {
		return 0
	}
	total := aws.ToFloat64(cc.CapacityUnits)
	if !c.metrics {
		return total
	}
	add := func(tg *target, v float64) {
		if v != 0 {
			oa := tg.attrs(c.op)
			counter.Add(ctx, v, oa.with(&oa.apis[a], attrDBOperation.String(apiNames[a]))...)
		}
	}
	if cc.Table == nil && len(cc.GlobalSecondaryIndexes) == 0 && len(cc.LocalSecondaryIndexes) == 0 {
		add(tg, total)
		return total
	}
	tbl := aws.ToString(cc.TableName)
	if t := c.tel.byPhysical[physical{tbl, ""}]; t != nil {
		tg = t
	}
	if cc.Table != nil {
		add(tg, aws.ToFloat64(cc.Table.CapacityUnits))
	}
	for _, m := range []map[string]types.Capacity{cc.GlobalSecondaryIndexes, cc.LocalSecondaryIndexes} {
		for name, cp := range m {
			it := c.tel.byPhysical[physical{tbl, name}]
			if it == nil {
				it = tg
			}
			add(it, aws.ToFloat64(cp.CapacityUnits))
		}
	}
	return total
}

// queried records a Query.
func (c *call) queried(ctx context.Context, in *dynamodb.QueryInput, out *dynamodb.QueryOutput, err error) {
	tg := c.reqTarget(in.TableName, in.IndexName)
	var units float64
	if out != nil {
		units = c.units(ctx, apiQuery, c.tel.inst.readUnitsOrNil(), out.ConsumedCapacity, tg)
	}
	c.request(ctx, apiQuery, tg, err, func() []attribute.KeyValue {
		kv := []attribute.KeyValue{attrTableNames.StringSlice([]string{aws.ToString(in.TableName)})}
		if in.IndexName != nil {
			kv = append(kv, attrIndexName.String(*in.IndexName))
		}
		if in.Limit != nil {
			kv = append(kv, attrLimit.Int64(int64(*in.Limit)))
		}
		if out != nil {
			kv = append(kv, attrCount.Int64(int64(out.Count)), attrScanned.Int64(int64(out.ScannedCount)), attrReadUnits.Float64(units))
		}
		return kv
	})
}

// readUnitsOrNil returns the read-units counter; for a nil *instruments
// (tracing alone), a no-op one.
func (i *instruments) readUnitsOrNil() metric.Float64Counter {
	if i == nil {
		return metricnoop.Float64Counter{}
	}
	return i.readUnits
}

func (i *instruments) writeUnitsOrNil() metric.Float64Counter {
	if i == nil {
		return metricnoop.Float64Counter{}
	}
	return i.writeUnits
}

// readCapacity returns the capacity mode a read asks for: TOTAL when read
// units are counted and the request asks for none.
func (c *call) readCapacity(cur types.ReturnConsumedCapacity) (types.ReturnConsumedCapacity, bool) {
	if c == nil || !c.readUnits || cur != "" {
		return cur, false
	}
	return types.ReturnConsumedCapacityTotal, true
}

// writeCapacity returns the capacity mode a write asks for: INDEXES (each
// table's and GSI's share) when write units are counted and the request
// asks for none.
func (c *call) writeCapacity(cur types.ReturnConsumedCapacity) (types.ReturnConsumedCapacity, bool) {
	if c == nil || !c.writeUnits || cur != "" {
		return cur, false
	}
	return types.ReturnConsumedCapacityIndexes, true
}

// single records a request to one table (GetItem, PutItem, UpdateItem,
// DeleteItem).
func (c *call) single(ctx context.Context, a api, table *string, cc *types.ConsumedCapacity, err error) {
	tg := c.reqTarget(table, nil)
	counter := c.tel.inst.writeUnitsOrNil()
	unitsKey := attrWriteUnits
	if a == apiGetItem {
		counter, unitsKey = c.tel.inst.readUnitsOrNil(), attrReadUnits
	}
	units := c.units(ctx, a, counter, cc, tg)
	c.request(ctx, a, tg, err, func() []attribute.KeyValue {
		kv := []attribute.KeyValue{attrTableNames.StringSlice([]string{aws.ToString(table)})}
		if cc != nil { // without capacity asked for, the units are unknown, not 0
			kv = append(kv, unitsKey.Float64(units))
		}
		return kv
	})
}

// multi records a request to several tables (BatchGetItem,
// TransactWriteItems): it counts against the call's target.
func (c *call) multi(ctx context.Context, a api, tables func() []string, ccs []types.ConsumedCapacity, err error) {
	counter, unitsKey := c.tel.inst.writeUnitsOrNil(), attrWriteUnits
	if a == apiBatchGetItem {
		counter, unitsKey = c.tel.inst.readUnitsOrNil(), attrReadUnits
	}
	var units float64
	for i := range ccs {
		units += c.units(ctx, a, counter, &ccs[i], c.reqTarget(ccs[i].TableName, nil))
	}
	c.request(ctx, a, c.tgt, err, func() []attribute.KeyValue {
		kv := []attribute.KeyValue{attrTableNames.StringSlice(tables())}
		if len(ccs) > 0 { // without capacity asked for, the units are unknown, not 0
			kv = append(kv, unitsKey.Float64(units))
		}
		return kv
	})
}

// throttled records the throttling reasons of a request's throttled
// attempts (one entry per reason of each attempt): each counts against the
// table or index DynamoDB names in it (for a write to the base table, that
// may be a GSI: back-pressure), or, when it names none the Table knows,
// against the physical names it gives (or the call's target). Throttles
// are rare, so their attribute sets are made per measurement.
func (c *call) throttled(ctx context.Context, a api, rs []types.ThrottlingReason) {
	for _, r := range rs {
		k := throttle.KeyOf(r)
		reason := k.Reason
		if reason == "" {
			reason = "_OTHER"
		}
		if c.metrics {
			kv := []attribute.KeyValue{attrDBOperation.String(apiNames[a]), attrThrottle.String(reason)}
			if tg := c.tel.byPhysical[physical{k.Table, k.Index}]; tg != nil || k.Table == "" {
				if tg == nil {
					tg = c.tgt
				}
				c.tel.inst.throttles.Add(ctx, 1, tg.attrs(c.op).extra(kv...)...)
			} else {
				kv = append(kv, attrTable.String(c.tel.table), attrIndex.String(k.Index), attrForm.String(""), attrOperation.String(callNames[c.op]))
				c.tel.inst.throttles.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(kv...)))
			}
		}
		if c.span != nil {
			c.span.AddEvent("ddbindex.throttled", trace.WithAttributes(attrDBOperation.String(apiNames[a]), attrThrottle.String(reason), attrThrottleRes.String(aws.ToString(r.Resource))))
		}
	}
}

// batchGot notes on a BatchGet's span how many keys it was given and how
// many items it found.
func (c *call) batchGot(keys, found int) {
	if c != nil && c.span != nil {
		c.span.SetAttributes(attribute.Int("ddbindex.keys", keys), attrItemsRet.Int(found))
	}
}

// applied notes on an Apply's span what it did.
func (c *call) applied(changes int, st ApplyStats) {
	if c != nil && c.span != nil {
		c.span.SetAttributes(attribute.Int("ddbindex.apply.changes", changes), attribute.Int("ddbindex.apply.puts", st.Puts),
			attribute.Int("ddbindex.apply.deletes", st.Deletes), attribute.Int("ddbindex.apply.stale", st.Stale))
	}
}

package migrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/metric"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
	"github.com/ddbindex/ddbindex/internal/spec"
	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file holds Router, the fleet's routes from the control table.
//
// The control table (RouterOptions.ControlTable; schema.ControlTableInput
// describes it, schema.Prepare creates it with PrepareOptions.ControlTable) holds
// one item per routed index: partition key "pk" = "route#" + the base
// table's declared name, sort key "sk" = the logical index name, and the
// route in the attributes to (S: gsi, lsi or table), partitions (L of S)
// and percent (N), with updated (S, RFC 3339), when SetRoute wrote it.

// The control table's key attributes, as package schema makes them.
const (
	controlPK = spec.ControlPK
	controlSK = spec.ControlSK
)

const (
	routePrefix    = "route#"
	defaultRefresh = 30 * time.Second
	// maxBackoffFactor caps the wait after failed refreshes at this many
	// Refresh intervals.
	maxBackoffFactor = 10
)

// RouterAPI is the part of the DynamoDB client a [Router] needs: Query to
// read the routes, PutItem to write one. *dynamodb.Client implements it.
type RouterAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// RouterOptions configure a [Router]. The zero value of each field but
// ControlTable means its default.
type RouterOptions struct {
	// ControlTable is the physical name of the control table (required):
	// no model names it; give the same name to schema.Prepare
	// (PrepareOptions.ControlTable), which creates it, and to the
	// DynamoDB checkpoint stores.
	ControlTable string
	// Tables are the base tables, as declared, whose routes the first
	// refresh reads. A Router also reads the routes of every table it is
	// asked about, from the refresh after the first read of that table
	// on: list the service's tables so that its first reads are routed
	// by the fleet's routes.
	Tables []string
	// Refresh is how often the started Router reads the routes again.
	// Default 30 seconds. After a failed read it tries again sooner, then
	// ever later (exponential backoff with jitter, from one second or
	// Refresh if shorter, up to 10 times Refresh), and back to Refresh
	// after a read that succeeds.
	Refresh time.Duration
	// Fallback, when set, routes an index for which the control table
	// holds no route, or one that names a form the index does not keep
	// (and every index before the first read): static Routes, say.
	Fallback ddbindex.Router
	// OnError receives the error of each failed read of a table's routes
	// (see [Router.Err]), on the goroutine that read.
	OnError func(error)
	// ClientOptions are applied to every request the Router sends (the
	// Queries of its refreshes, started or not, and of Routes; the PutItem
	// of SetRoute), as the SDK's own per-call options, before those of the
	// call.
	ClientOptions []func(*dynamodb.Options)
	// MeterProvider receives the metric ddbindex.migration.route_refresh_errors,
	// which counts failed reads of a table's routes by error.type. Default:
	// none.
	MeterProvider metric.MeterProvider
}

// rkey is a route's key: the base table as declared and the logical index.
type rkey struct{ table, index string }

// snapshot is what Route reads, never changed once published.
type snapshot struct {
	routes map[rkey]Route
	tables map[string]bool // the tables whose routes refreshes read
	// state is each table's migration state (shadow rates, backfilled
	// forms), by table as declared.
	state map[string]*tableState
}

// tableState is one table's migration state in the control table.
type tableState struct {
	shadow map[string]float64         // index → shadow rate
	ready  map[string][]ddbindex.Kind // index → forms whose backfill finished
}

// Router is the fleet's routes, read from the control table: a
// [ddbindex.Router] for every model of a service, keyed by base table and
// index. [SetRoute] changes a route for the whole fleet; every Router reads
// it within its Refresh.
//
// A Router is safe for concurrent use. Route takes no lock: it reads the
// routes of the last refresh. NewRouter starts nothing: [Router.Start]
// starts the goroutine that refreshes the routes on its own schedule, and
// [Router.Close] stops it and waits for it. Reads never start a refresh.
type Router struct {
	api RouterAPI
	o   RouterOptions

	snap atomic.Pointer[snapshot]

	mu sync.Mutex // guards what follows, and every change of snap
	// seq orders refreshes and SetRoutes: each takes the next number.
	seq uint64
	// applied is, per table, the seq of the refresh whose read of it was
	// last taken; set the seq of the SetRoute that last set a route here.
	applied map[string]uint64
	set     map[rkey]uint64
	lastErr error
	readAt  time.Time            // when a refresh last read every table
	seen    map[string]time.Time // per table, the last route change read or made

	loop loop // the refresh goroutine

	refreshErrors metric.Int64Counter // nil: no meter
	// sleep waits between refreshes, and rand draws the jitter of a
	// backoff; tests replace them.
	sleep func(ctx context.Context, d time.Duration) error
	rand  func() float64
}

// NewRouter returns a Router over the control table that o names, with no
// routes read yet: call [Router.Start], or [Router.Refresh]. A nil api and
// options it cannot honour (no ControlTable, a negative Refresh, an empty
// name in Tables, a nil among ClientOptions) fail with an error matching [ddbindex.ErrDeclaration]
// (code DDBX-100) that names the option; 0 means the default.
func NewRouter(api RouterAPI, o RouterOptions) (*Router, error) {
	switch {
	case api == nil:
		return nil, declarationErr("NewRouter", "no RouterAPI (a nil client)")
	case o.ControlTable == "":
		return nil, declarationErr("NewRouter", "RouterOptions.ControlTable names no control table")
	case o.Refresh < 0:
		return nil, declarationErr("NewRouter", "RouterOptions.Refresh is %v; it cannot be negative (0 means the default, %v)", o.Refresh, defaultRefresh)
	}
	if i := slices.Index(o.Tables, ""); i >= 0 {
		return nil, declarationErr("NewRouter", "RouterOptions.Tables[%d] is an empty table name", i)
	}
	if i := slices.IndexFunc(o.ClientOptions, func(fn func(*dynamodb.Options)) bool { return fn == nil }); i >= 0 {
		return nil, declarationErr("NewRouter", "RouterOptions.ClientOptions[%d] is nil", i)
	}
	o.ClientOptions = slices.Clip(slices.Clone(o.ClientOptions))
	if o.Refresh == 0 {
		o.Refresh = defaultRefresh
	}
	o.Tables = slices.Clone(o.Tables)
	r := &Router{api: api, o: o, applied: map[string]uint64{}, set: map[rkey]uint64{}, seen: map[string]time.Time{}, sleep: retry.Sleep, rand: rand.Float64,
		refreshErrors: counter(o.MeterProvider, "ddbindex.migration.route_refresh_errors", "{error}", "Reads of a table's routes from the control table that failed, by error code")}
	s := &snapshot{routes: map[rkey]Route{}, tables: map[string]bool{}, state: map[string]*tableState{}}
	for _, t := range o.Tables {
		s.tables[t] = true
	}
	r.snap.Store(s)
	return r, nil
}

// made reports whether r was made by NewRouter: a nil or zero Router
// routes nothing, and its methods that return an error say so.
func (r *Router) made() bool { return r != nil && r.snap.Load() != nil }

func errNotMade(op string) error {
	return fmt.Errorf("%w: migrate.Router.%s: the Router was not made by NewRouter", ddbindex.ErrInvalidQuery, op)
}

// callOptions returns the options of one request: the Router's
// ClientOptions, then the call's. A nil among the call's fails with an
// error matching ddbindex.ErrInvalidQuery (the SDK would call it).
func (r *Router) callOptions(op string, optFns []func(*dynamodb.Options)) ([]func(*dynamodb.Options), error) {
	if i := slices.IndexFunc(optFns, func(fn func(*dynamodb.Options)) bool { return fn == nil }); i >= 0 {
		return nil, fmt.Errorf("%w: migrate.%s: option function %d is nil", ddbindex.ErrInvalidQuery, op, i)
	}
	if len(optFns) == 0 {
		return r.o.ClientOptions, nil
	}
	return append(r.o.ClientOptions, optFns...), nil
}

// Route implements [ddbindex.Router]: the control table's route of the
// index, else the Fallback's answer.
func (r *Router) Route(table, index, partition string, forms [2]ddbindex.Kind) (ddbindex.Kind, bool) {
	if !r.made() {
		return 0, false
	}
	s := r.snap.Load()
	if !s.tables[table] {
		r.learn(table)
	}
	if rt, ok := s.routes[rkey{table, index}]; ok {
		if k, ok := rt.pick(partition, forms); ok {
			return k, true
		}
	}
	if r.o.Fallback != nil {
		return r.o.Fallback.Route(table, index, partition, forms)
	}
	return 0, false
}

// MayRoute reports whether r may send a read of index (of table, the base
// table as declared) to form, for an index whose forms are forms (the
// declared type, then the kept one). It reads the fleet's routes of table
// from the control table now (as [Router.Routes], with
// RouterOptions.ClientOptions), since every instance of the fleet routes by
// them: a route of the index that names one of its forms answers; else
// the Fallback does (a Fallback that is no schema.FormRouter may send reads
// anywhere: true), and without one, reads go to the declared type. It
// implements schema.FormRouter, which schema.CheckWithWarnings asks about a
// kept form that does not exist. A failed read of the control table is
// returned as Routes returns it.
func (r *Router) MayRoute(ctx context.Context, table, index string, form ddbindex.Kind, forms [2]ddbindex.Kind) (bool, error) {
	routes, err := r.Routes(ctx, table)
	if err != nil {
		return false, err
	}
	rt, ok := routes[index]
	if may := mayRoute(rt, ok, form, forms); may != nil {
		return *may, nil
	}
	switch fb := r.o.Fallback.(type) {
	case nil:
		return form == forms[0], nil
	case interface {
		MayRoute(ctx context.Context, table, index string, form ddbindex.Kind, forms [2]ddbindex.Kind) (bool, error)
	}:
		return fb.MayRoute(ctx, table, index, form, forms)
	}
	return true, nil
}

// learn adds table to the tables whose routes refreshes read.
func (r *Router) learn(table string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	if s.tables[table] {
		return
	}
	n := &snapshot{routes: s.routes, state: s.state, tables: make(map[string]bool, len(s.tables)+1)}
	for t := range s.tables {
		n.tables[t] = true
	}
	n.tables[table] = true
	r.snap.Store(n)
}

// Start starts the goroutine that reads the routes now, then every Refresh
// (sooner, then later, after a failure), until ctx is done or
// [Router.Close] is called. A Router starts once; Start after Start or
// Close fails with an error matching [ddbindex.ErrInvalidQuery].
func (r *Router) Start(ctx context.Context) error {
	if !r.made() {
		return errNotMade("Start")
	}
	return r.loop.start(ctx, "Router", r.run)
}

// run refreshes the routes until ctx is done.
func (r *Router) run(ctx context.Context) {
	failures := 0
	for {
		wait := r.o.Refresh
		if err := r.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait = r.backoff(failures)
		} else {
			failures = 0
		}
		if r.sleep(ctx, wait) != nil {
			return
		}
	}
}

// backoff is the wait after the given number of failed refreshes in a row:
// it doubles from one second (or Refresh, if shorter) up to
// maxBackoffFactor times Refresh, and is drawn at random from its upper
// half.
func (r *Router) backoff(failures int) time.Duration {
	limit := maxBackoffFactor * r.o.Refresh
	d := min(time.Second, r.o.Refresh)
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + time.Duration(r.rand()*float64(d/2))
}

// Close stops the goroutine Start started and waits until it has ended. It
// is safe to call more than once; the Router keeps routing by the routes
// it read.
func (r *Router) Close() {
	if r == nil {
		return
	}
	r.loop.stop()
}

// Err returns the error of the last refresh: nil when it read the routes of
// every table, or before the first. While a table's routes cannot be read,
// the Router routes it by the routes it read before (the Fallback's before
// the first good read). A read of the control table that fails is a
// [*ddbindex.Error]; a route item that does not fit a [Route] fails
// its table's read with [ddbindex.ErrMalformedItem], naming the index, the
// attribute and what is wrong with it.
func (r *Router) Err() error {
	if !r.made() {
		return errNotMade("Err")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Refresh reads the routes of every table the Router knows now, as the
// started Router does every Refresh. A table whose read fails keeps the
// routes read before; each failure counts in the metric
// ddbindex.migration.route_refresh_errors and goes to OnError, unless ctx
// is done. It returns the failures, joined (see [Router.Err]). Each optFn
// is applied to its requests, after RouterOptions.ClientOptions; a nil one
// fails with an error matching [ddbindex.ErrInvalidQuery] before any
// request.
func (r *Router) Refresh(ctx context.Context, optFns ...func(*dynamodb.Options)) error {
	if !r.made() {
		return errNotMade("Refresh")
	}
	opts, err := r.callOptions("Router.Refresh", optFns)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.seq++
	start := r.seq
	tables := make([]string, 0, len(r.snap.Load().tables))
	for t := range r.snap.Load().tables {
		tables = append(tables, t)
	}
	r.mu.Unlock()
	slices.Sort(tables)
	read := map[string]map[string]Route{}
	states := map[string]*tableState{}
	seens := map[string]time.Time{}
	var errs []error
	for _, t := range tables {
		routes, seen, err := r.read(ctx, t, opts)
		var st *tableState
		if err == nil {
			st, err = r.readState(ctx, t, opts)
		}
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() == nil {
				add(ctx, r.refreshErrors, attrTable.String(t), attrErrorType.String(errorType(err)))
				if r.o.OnError != nil {
					r.o.OnError(err)
				}
			}
			continue
		}
		read[t], states[t], seens[t] = routes, st, seen
	}
	err = errors.Join(errs...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
	if err == nil {
		r.readAt = time.Now()
	}
	s := r.snap.Load()
	n := &snapshot{routes: map[rkey]Route{}, tables: s.tables, state: maps.Clone(s.state)}
	for k, rt := range s.routes {
		n.routes[k] = rt
	}
	for t, st := range states {
		if r.applied[t] <= start {
			n.state[t] = st
		}
	}
	for t, at := range seens {
		r.see(t, at)
	}
	for t, routes := range read {
		if r.applied[t] > start {
			continue // a refresh that started later read the table already
		}
		r.applied[t] = start
		// The read replaces the table's routes, but those SetRoute set here
		// after the read started: the read may predate them.
		for k := range n.routes {
			if k.table == t && r.set[k] < start {
				delete(n.routes, k)
			}
		}
		for k, seq := range r.set {
			if k.table == t && seq < start {
				delete(r.set, k)
			}
		}
		for index, rt := range routes {
			if k := (rkey{t, index}); r.set[k] < start {
				n.routes[k] = rt
			}
		}
	}
	r.snap.Store(n)
	return err
}

// Routes reads the fleet's routes of table (the base table as declared)
// from the control table now, by logical index; an index without a route
// there is absent. It changes nothing the Router routes by: it is for
// operators and tools that show the routes (package ops's "route"). Each
// optFn is applied to its requests, as Refresh's are.
func (r *Router) Routes(ctx context.Context, table string, optFns ...func(*dynamodb.Options)) (map[string]Route, error) {
	if !r.made() {
		return nil, errNotMade("Routes")
	}
	opts, err := r.callOptions("Router.Routes", optFns)
	if err != nil {
		return nil, err
	}
	routes, _, err := r.read(ctx, table, opts)
	return routes, err
}

// routeUpdated is when a route item was written (its updated attribute);
// the zero time when it has none.
func routeUpdated(item map[string]types.AttributeValue) time.Time {
	if s, ok := item["updated"].(*types.AttributeValueMemberS); ok {
		if at, err := time.Parse(time.RFC3339Nano, s.Value); err == nil {
			return at
		}
	}
	return time.Time{}
}

// routesSeen returns, per table, the last change of its routes the Router
// has read or made.
func (r *Router) routesSeen() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// see records that the Router has read or made a change of table's routes
// made at at.
func (r *Router) see(table string, at time.Time) {
	if at.After(r.seen[table]) {
		r.seen[table] = at
	}
}

// read reads table's routes from the control table, with the requests'
// options opts.
func (r *Router) read(ctx context.Context, table string, opts []func(*dynamodb.Options)) (map[string]Route, time.Time, error) {
	control := r.o.ControlTable
	items, err := queryAll(ctx, r.api, control, routePrefix+table, opts)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("migrate: read the routes of %s from %s: %w", table, control, err)
	}
	routes := map[string]Route{}
	var latest time.Time
	for _, item := range items {
		index, rt, err := routeFromItem(item)
		if err != nil {
			return nil, latest, fmt.Errorf("%w: control table %s, routes of %s: %w", ddbindex.ErrMalformedItem, control, table, err)
		}
		routes[index] = rt
		if at := routeUpdated(item); at.After(latest) {
			latest = at
		}
	}
	return routes, latest, nil
}

// controlCallErr wraps a non-nil error of a request to the control table
// in an ErrDynamoDB *ddbindex.Error, unless it is one already.
func controlCallErr(op, table string, err error) error {
	if errors.Is(err, ddbindex.ErrDynamoDB) {
		return err
	}
	return &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: op, Table: table, Err: err, Throttles: throttle.Reasons(err, nil)}
}

// SetRoute stores the route of index of t's model in the control table,
// for every Router of the fleet to read within its Refresh, and routes by
// it in r at once: a refresh that was reading when SetRoute was called
// does not undo it. The index must keep two forms, and the route must send
// reads to one of them; otherwise, or when route is no Route (see
// [Route.Validate]), or when an optFn is nil, SetRoute fails with an error
// matching [ddbindex.ErrInvalidQuery] before any request. Each optFn is
// applied to its request, after RouterOptions.ClientOptions.
func SetRoute[T any](ctx context.Context, r *Router, t *ddbindex.Table[T], index string, route Route, optFns ...func(*dynamodb.Options)) error {
	model := reflect.TypeFor[T]().Name()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: route of %s index %s: "+format, append([]any{ddbindex.ErrInvalidQuery, model, index}, args...)...)
	}
	if r == nil || t == nil {
		return bad("SetRoute needs a Router and a Table")
	}
	infos := t.Indexes()
	i := slices.IndexFunc(infos, func(ix ddbindex.IndexInfo) bool { return ix.Name == index })
	if index == "" || i < 0 {
		return bad("%s declares no such index", model)
	}
	ix := infos[i]
	if len(ix.Forms) < 2 {
		return bad("the index keeps one form (type=%s); a route needs two (keep= in its IndexSpec)", ix.Forms[0].Kind)
	}
	if err := route.check(); err != nil {
		return bad("%w", err)
	}
	if route.To != ix.Forms[0].Kind && route.To != ix.Forms[1].Kind {
		return bad("the route sends reads to the %s form, which this declaration (type=%s,keep=%s) does not keep", route.To, ix.Forms[0].Kind, ix.Forms[1].Kind)
	}
	opts, err := r.callOptions("SetRoute", optFns)
	if err != nil {
		return err
	}
	return r.put(ctx, infos[0].Forms[0].Declared, index, route, opts)
}

// put writes a route, and routes by it here.
func (r *Router) put(ctx context.Context, table, index string, route Route, opts []func(*dynamodb.Options)) error {
	route.Partitions = slices.Clone(route.Partitions)
	parts := make([]types.AttributeValue, len(route.Partitions))
	for i, p := range route.Partitions {
		parts[i] = &types.AttributeValueMemberS{Value: p}
	}
	control := r.o.ControlTable
	updated := time.Now().UTC()
	_, err := r.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(control),
		Item: map[string]types.AttributeValue{
			controlPK:    &types.AttributeValueMemberS{Value: routePrefix + table},
			controlSK:    &types.AttributeValueMemberS{Value: index},
			"to":         &types.AttributeValueMemberS{Value: route.To.String()},
			"partitions": &types.AttributeValueMemberL{Value: parts},
			"percent":    &types.AttributeValueMemberN{Value: strconv.FormatFloat(route.Percent, 'g', -1, 64)},
			"updated":    &types.AttributeValueMemberS{Value: updated.Format(time.RFC3339Nano)},
		},
	}, opts...)
	if err != nil {
		return fmt.Errorf("migrate: set the route of %s/%s in %s: %w", table, index, control, controlCallErr("PutItem", control, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.see(table, updated)
	r.seq++
	k := rkey{table, index}
	r.set[k] = r.seq
	s := r.snap.Load()
	n := &snapshot{routes: make(map[rkey]Route, len(s.routes)+1), tables: s.tables, state: s.state}
	for k, rt := range s.routes {
		n.routes[k] = rt
	}
	n.routes[k] = route
	if !s.tables[table] {
		n.tables = make(map[string]bool, len(s.tables)+1)
		for t := range s.tables {
			n.tables[t] = true
		}
		n.tables[table] = true
	}
	r.snap.Store(n)
	return nil
}

// routeFromItem reads a control item; anything malformed is an error naming
// the attribute and what is wrong with it, so a bad item never routes reads
// (the Router keeps its previous routes). An absent partitions or percent
// selects nothing by it; every other attribute of the item is left alone.
func routeFromItem(item map[string]types.AttributeValue) (string, Route, error) {
	var r Route
	skAV, has := item[controlSK]
	sk, ok := skAV.(*types.AttributeValueMemberS)
	switch {
	case !has:
		return "", r, fmt.Errorf("a route item without %s (its index name)", controlSK)
	case !ok:
		return "", r, fmt.Errorf("a route item whose %s is stored as %s, want S", controlSK, avType(skAV))
	}
	index := sk.Value
	toAV, has := item["to"]
	to, ok := toAV.(*types.AttributeValueMemberS)
	switch {
	case !has:
		return "", r, fmt.Errorf("route of %s: to is missing, want S (gsi, lsi or table)", index)
	case !ok:
		return "", r, fmt.Errorf("route of %s: to is stored as %s, want S (gsi, lsi or table)", index, avType(toAV))
	}
	if r.To, ok = formKind(to.Value); !ok {
		return "", r, fmt.Errorf("route of %s: to %q is not a form (gsi, lsi or table)", index, to.Value)
	}
	if av, has := item["partitions"]; has {
		l, ok := av.(*types.AttributeValueMemberL)
		if !ok {
			return "", r, fmt.Errorf("route of %s: partitions is stored as %s, want L (a list of S)", index, avType(av))
		}
		for i, v := range l.Value {
			s, ok := v.(*types.AttributeValueMemberS)
			switch {
			case !ok:
				return "", r, fmt.Errorf("route of %s: partitions[%d] is stored as %s, want S", index, i, avType(v))
			case s.Value == "":
				return "", r, fmt.Errorf("route of %s: partitions[%d] is an empty partition key", index, i)
			}
			r.Partitions = append(r.Partitions, s.Value)
		}
	}
	if av, has := item["percent"]; has {
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return "", r, fmt.Errorf("route of %s: percent is stored as %s, want N", index, avType(av))
		}
		p, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return "", r, fmt.Errorf("route of %s: percent %q is not a number: %w", index, n.Value, err)
		}
		if p != p || p < 0 || p > 100 {
			return "", r, fmt.Errorf("route of %s: percent %s is outside 0-100", index, n.Value)
		}
		r.Percent = p
	}
	if err := r.check(); err != nil {
		return "", r, fmt.Errorf("route of %s: %w", index, err)
	}
	return index, r, nil
}

// formKind reads a form's name as the tags write it.
func formKind(s string) (ddbindex.Kind, bool) {
	for _, k := range []ddbindex.Kind{ddbindex.GSI, ddbindex.LSI, ddbindex.IndexTable, ddbindex.NativeGSI} {
		if s == k.String() {
			return k, true
		}
	}
	return 0, false
}

// avType names an attribute value's type as DynamoDB does (S, N, B, SS,
// NS, BS, M, L, NULL, BOOL).
func avType(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	}
	return fmt.Sprintf("%T", av)
}

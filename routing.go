package ddbindex

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file decides which form of an index serves a read, for an index that
// keeps two forms during a migration (keep= in its IndexSpec). An index with
// one form is always read in that form.
//
// The decision, per call, takes the first of:
//
//  1. the query's own choice ([Query.Via]), for tests and admin reads;
//  2. Options.RouteFunc, when it answers;
//  3. the index's route in the control table (Options.ControlTable), which
//     every Table re-reads every Options.RouteRefresh and [Table.SetRoute]
//     changes for the whole fleet;
//  4. the index's route in Options.Routes, the static fallback, used while
//     the control table has not been read or cannot be;
//  5. the declared type.
//
// A route that names a form the index does not keep is ignored (the next
// rule decides), so one control item can serve instances at neighbouring
// steps of a migration.

// Route says which partitions of an index read which form. The partitions
// it selects read the form To; every other partition reads the index's other
// form. A route names forms absolutely (not "the kept form"), so it keeps
// its meaning when a deploy swaps the declared and the kept type.
type Route struct {
	// To is the form the selected partitions read: GSI, LSI or IndexTable.
	To Kind
	// Partitions always read To. Each is a partition key as [EncodeKey]
	// encodes its component values: for one string component without
	// bytes 0x00-0x24, the string itself ("TEAM-7").
	Partitions []string
	// Percent (0 to 100) of all partitions read To, chosen by a stable hash
	// of the partition key, so a partition keeps its form from page to page
	// and from instance to instance. 100 sends every partition to To.
	Percent float64
}

// check reports what is wrong with r for an index with the given forms.
func (r Route) check() error {
	if r.To != GSI && r.To != LSI && r.To != IndexTable {
		return fmt.Errorf("route: To is %s; want GSI, LSI or IndexTable", r.To)
	}
	if r.Percent < 0 || r.Percent > 100 || r.Percent != r.Percent {
		return fmt.Errorf("route: Percent %g: want 0 to 100", r.Percent)
	}
	if slices.Contains(r.Partitions, "") {
		return fmt.Errorf("route: an empty partition key")
	}
	return nil
}

// Validate reports whether SetRoute takes r (its To, its Percent, its
// Partitions), as SetRoute checks it before any request: nil, or an error
// matching [ErrInvalidQuery] that names the rule r breaks.
func (r Route) Validate() error {
	if err := r.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	return nil
}

// selects reports whether the route sends partition key pk to r.To.
func (r Route) selects(pk string) bool {
	if slices.Contains(r.Partitions, pk) {
		return true
	}
	if r.Percent <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(pk))
	return float64(h.Sum64()%10000) < r.Percent*100
}

// Via makes this query read the given form of its index (GSI, LSI or
// IndexTable), whatever the routing says: for tests, and for admin reads
// that compare the forms of an index that keeps two. The index must have
// that form; the call fails before any request otherwise.
func (q Query[T]) Via(form Kind) Query[T] { q.via = form; q.hasVia = true; return q }

// form picks the form of d that serves q, and says how it chose
// (routeVia, ...; telemetry.go): see the rules at the top of this file.
func (q Query[T]) form(d *layout) (*layout, string, error) {
	forms := d.decl.forms
	if q.hasVia {
		if f := formOf(forms, q.via); f != nil {
			return f, routeVia, nil
		}
		return nil, routeVia, queryErr(d.name, "Via(%s): the index has no %s form (it is type=%s%s)", q.via, q.via, d.kind, keptText(d))
	}
	if len(forms) < 2 {
		return d, routeDeclared, nil
	}
	_, texts, err := d.partition(q.partition)
	if err != nil {
		return d, routeDeclared, nil // planFor reports it
	}
	pk, err := partitionKeyText(d, texts)
	if err != nil {
		return d, routeDeclared, nil
	}
	other := func(k Kind) *layout {
		for _, f := range forms {
			if f.kind != k {
				return f
			}
		}
		return d
	}
	t := q.t
	if fn := t.opts.RouteFunc; fn != nil {
		if k, ok := fn(d.name, pk); ok {
			if f := formOf(forms, k); f != nil {
				return f, routeFunc, nil
			}
		}
	}
	if r, ok := t.routes.route(t, d.name); ok && formOf(forms, r.To) != nil {
		if r.selects(pk) {
			return formOf(forms, r.To), routeControl, nil
		}
		return other(r.To), routeControl, nil
	}
	if r, ok := t.opts.Routes[d.name]; ok && formOf(forms, r.To) != nil {
		if r.selects(pk) {
			return formOf(forms, r.To), routeStatic, nil
		}
		return other(r.To), routeStatic, nil
	}
	return d, routeDeclared, nil
}

func formOf(forms []*layout, k Kind) *layout {
	for _, f := range forms {
		if f.kind == k {
			return f
		}
	}
	return nil
}

func keptText(d *layout) string {
	if d.decl.keep == noKind {
		return ""
	}
	return ",keep=" + d.decl.keep.String()
}

// partitionKeyText joins a partition's canonical component texts as
// EncodeKey does: the text routes name partitions by.
func partitionKeyText(d *layout, texts []string) (string, error) {
	var b []byte
	var err error
	for i, c := range d.pk.parts {
		if b, err = appendComponent(b, i, "", c.f.canon, texts[i]); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

// ---- the control table --------------------------------------------------------

// The control table holds one item per routed index: partition key "pk" =
// "route#" + the base table's declared name, sort key "sk" = the logical
// index name, and the route in the attributes to, partitions and percent.
const (
	controlPK    = "pk"
	controlSK    = "sk"
	routePrefix  = "route#"
	defaultRoute = 30 * time.Second
)

// ControlTableInput returns the CreateTable input of the control table that
// Options.ControlTable names (nil when it names none): one small
// on-demand table, shared by every model of a service.
func (t *Table[T]) ControlTableInput() *dynamodb.CreateTableInput {
	if t.usable("ControlTableInput", ErrInvalidQuery) != nil || t.opts.ControlTable == "" {
		return nil
	}
	return &dynamodb.CreateTableInput{
		TableName: aws.String(t.opts.ControlTable),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(controlPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(controlSK), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(controlPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(controlSK), AttributeType: types.ScalarAttributeTypeS},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
}

// routeTable is a Table's copy of the control table's routes.
type routeTable struct {
	mu         sync.Mutex
	routes     map[string]Route
	fetched    time.Time // when routes were read; zero before the first read
	refreshing atomic.Bool
	lastErr    error // of the last refresh; nil once one succeeds
	// refreshed, when set (by tests), is called after each background
	// refresh.
	refreshed func()
}

// route returns the control table's route for index, and starts a refresh
// in the background when the copy is older than the refresh interval.
func (rt *routeTable) route(t routeSource, index string) (Route, bool) {
	if t.controlTable() == "" {
		return Route{}, false
	}
	rt.mu.Lock()
	r, ok := rt.routes[index]
	stale := rt.fetched.IsZero() || t.now().Sub(rt.fetched) >= t.refreshInterval()
	rt.mu.Unlock()
	if stale && rt.refreshing.CompareAndSwap(false, true) {
		done := rt.refreshed
		go func() {
			defer rt.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), t.refreshInterval())
			defer cancel()
			_ = rt.refresh(ctx, t) // the error stays in lastErr (Table.RouteRefreshError); the routes read before serve meanwhile
			if done != nil {
				done()
			}
		}()
	}
	return r, ok
}

// routeSource is what the route table needs of its Table.
type routeSource interface {
	controlTable() string
	now() time.Time
	refreshInterval() time.Duration
	readRoutes(ctx context.Context) (map[string]Route, error)
	// refreshFailed records a failed refresh in the telemetry.
	refreshFailed(ctx context.Context, err error)
}

// refresh reads the routes from the control table now.
func (rt *routeTable) refresh(ctx context.Context, t routeSource) error {
	routes, err := t.readRoutes(ctx)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.lastErr = err
	if err != nil {
		// Keep serving the last routes read (or the static ones) until a
		// read succeeds.
		t.refreshFailed(ctx, err)
		return err
	}
	rt.routes, rt.fetched = routes, t.now()
	return nil
}

func (t *Table[T]) controlTable() string { return t.opts.ControlTable }
func (t *Table[T]) now() time.Time       { return t.opts.Now() }
func (t *Table[T]) refreshInterval() time.Duration {
	if t.opts.RouteRefresh > 0 {
		return t.opts.RouteRefresh
	}
	return defaultRoute
}

func (t *Table[T]) refreshFailed(ctx context.Context, err error) {
	t.tel.routeRefreshFailed(ctx, err)
}

// RefreshRoutes reads the control table's routes now, as every Table does
// in the background every Options.RouteRefresh: call it at start-up to route
// the first reads by the fleet's routes, and in tests. On error the Table
// keeps the routes it had (the static Options.Routes before the first read).
func (t *Table[T]) RefreshRoutes(ctx context.Context) error {
	if err := t.usable("RefreshRoutes", ErrInvalidQuery); err != nil {
		return err
	}
	if t.opts.ControlTable == "" {
		return fmt.Errorf("%w: RefreshRoutes: Options.ControlTable names no control table", ErrInvalidQuery)
	}
	return t.routes.refresh(ctx, t)
}

// RouteRefreshError returns the error of the last read of the control
// table's routes into this Table, by [Table.RefreshRoutes] or by the
// background refresh that reads start: nil when that read succeeded, or
// before the first. While it is not nil, the Table reads by the routes it
// read before (the static Options.Routes before the first good read), and
// the background refresh tries again at the next read. A control item that
// does not fit a [Route] fails the whole read with [ErrMalformedItem],
// naming the index, the attribute and what is wrong with it. Each failed
// read also counts in the metric ddbindex.migration.route_refresh_errors.
func (t *Table[T]) RouteRefreshError() error {
	if err := t.usable("RouteRefreshError", ErrInvalidQuery); err != nil {
		return err
	}
	t.routes.mu.Lock()
	defer t.routes.mu.Unlock()
	return t.routes.lastErr
}

// Routes reads the fleet's routes from the control table now, by logical
// index name; an index without a route there is absent. It does not change
// the routes this Table reads by (RefreshRoutes does): it is for operators
// and tools that show them (package ops's "route").
func (t *Table[T]) Routes(ctx context.Context) (map[string]Route, error) {
	if err := t.usable("Routes", ErrInvalidQuery); err != nil {
		return nil, err
	}
	if t.opts.ControlTable == "" {
		return nil, fmt.Errorf("%w: Routes: Options.ControlTable names no control table", ErrInvalidQuery)
	}
	return t.readRoutes(ctx)
}

func (t *Table[T]) readRoutes(ctx context.Context) (map[string]Route, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(t.opts.ControlTable),
		KeyConditionExpression: aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{
			"#pk": controlPK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: routePrefix + t.s.table},
		},
		ConsistentRead: aws.Bool(true),
	}
	routes := map[string]Route{}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: read routes from %s: %w", t.opts.ControlTable, err)
		}
		for _, item := range out.Items {
			index, r, err := routeFromItem(item)
			if err != nil {
				return nil, fmt.Errorf("%w: control table %s: %w", ErrMalformedItem, t.opts.ControlTable, err)
			}
			routes[index] = r
		}
		if len(out.LastEvaluatedKey) == 0 {
			return routes, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// SetRoute stores index's route in the control table, for every Table of
// the fleet to read within its Options.RouteRefresh, and takes it here at
// once. The route must name a form the index has now.
func (t *Table[T]) SetRoute(ctx context.Context, index string, r Route) error {
	if err := t.usable("SetRoute", ErrInvalidQuery); err != nil {
		return err
	}
	if t.opts.ControlTable == "" {
		return fmt.Errorf("%w: SetRoute: Options.ControlTable names no control table", ErrInvalidQuery)
	}
	d, ok := t.s.byName[index]
	if !ok {
		return queryErr(index, "%s declares no such index", t.s.model)
	}
	if err := r.check(); err != nil {
		return queryErr(index, "%v", err)
	}
	if formOf(d.decl.forms, r.To) == nil {
		return queryErr(index, "the route sends reads to the %s form, which this declaration (type=%s%s) does not keep", r.To, d.kind, keptText(d))
	}
	parts := make([]types.AttributeValue, len(r.Partitions))
	for i, p := range r.Partitions {
		parts[i] = &types.AttributeValueMemberS{Value: p}
	}
	_, err := t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.opts.ControlTable),
		Item: map[string]types.AttributeValue{
			controlPK:    &types.AttributeValueMemberS{Value: routePrefix + t.s.table},
			controlSK:    &types.AttributeValueMemberS{Value: index},
			"to":         &types.AttributeValueMemberS{Value: r.To.String()},
			"partitions": &types.AttributeValueMemberL{Value: parts},
			"percent":    &types.AttributeValueMemberN{Value: strconv.FormatFloat(r.Percent, 'g', -1, 64)},
			"updated":    &types.AttributeValueMemberS{Value: t.opts.Now().UTC().Format(time.RFC3339Nano)},
		},
	})
	if err != nil {
		return fmt.Errorf("ddbindex: set route of %s in %s: %w", index, t.opts.ControlTable, err)
	}
	t.routes.mu.Lock()
	defer t.routes.mu.Unlock()
	if t.routes.routes == nil {
		t.routes.routes = map[string]Route{}
	}
	t.routes.routes[index] = r
	return nil
}

// routeFromItem reads a control item; anything malformed is an error naming
// the attribute and what is wrong with it, so a bad item never routes reads
// (the Table keeps its previous routes). An absent partitions or percent
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
	if r.To, ok = indexKind(to.Value); !ok {
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

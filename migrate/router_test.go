package migrate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// rtBadRoutes are control items of by_status, written by hand, that do not
// fit a Route: each replaces (or, nil, removes) attributes of a route that
// would send globex alone to the index table, and the error must name the
// attribute and what is wrong with it. Read leniently, each would route
// acme to the GSI.
var rtBadRoutes = []struct {
	name  string
	attrs map[string]types.AttributeValue
	want  string
}{
	{"percent as text", map[string]types.AttributeValue{"percent": avS("100")}, "percent is stored as S, want N"},
	{"percent as words", map[string]types.AttributeValue{"percent": avS("abc")}, "percent is stored as S, want N"},
	{"percent as a bool", map[string]types.AttributeValue{"percent": &types.AttributeValueMemberBOOL{Value: true}}, "percent is stored as BOOL, want N"},
	{"percent as a list", map[string]types.AttributeValue{"percent": &types.AttributeValueMemberL{Value: []types.AttributeValue{avN("50")}}}, "percent is stored as L, want N"},
	{"percent over 100", map[string]types.AttributeValue{"percent": avN("150")}, "percent 150 is outside 0-100"},
	{"percent below 0", map[string]types.AttributeValue{"percent": avN("-0.5")}, "percent -0.5 is outside 0-100"},
	{"partitions as a string set", map[string]types.AttributeValue{"partitions": &types.AttributeValueMemberSS{Value: []string{"globex"}}}, "partitions is stored as SS, want L"},
	{"partitions as JSON text", map[string]types.AttributeValue{"partitions": avS(`["globex"]`)}, "partitions is stored as S, want L"},
	{"partitions as NULL", map[string]types.AttributeValue{"partitions": &types.AttributeValueMemberNULL{Value: true}}, "partitions is stored as NULL, want L"},
	{"a partition as a number", map[string]types.AttributeValue{"partitions": &types.AttributeValueMemberL{Value: []types.AttributeValue{avS("globex"), avN("7")}}}, "partitions[1] is stored as N, want S"},
	{"an empty partition", map[string]types.AttributeValue{"partitions": &types.AttributeValueMemberL{Value: []types.AttributeValue{avS("")}}}, "partitions[0] is an empty partition key"},
	{"to as a number", map[string]types.AttributeValue{"to": avN("2")}, "to is stored as N, want S"},
	{"to missing", map[string]types.AttributeValue{"to": nil}, "to is missing, want S"},
	{"to an unknown form", map[string]types.AttributeValue{"to": avS("view")}, `to "view" is not a form`},
}

// gatedSleep replaces a Router's sleep: it reports each wait on slept and
// returns when step receives, or ctx is done.
func gatedSleep(slept chan<- time.Duration, step <-chan struct{}) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		slept <- d
		select {
		case <-step:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestRouterMalformedControlItems: a control item whose attributes do not
// fit a Route (a percent stored as text, partitions as a string set, ...)
// fails Refresh and Routes with ErrMalformedItem naming the attribute and
// its stored type; the Router keeps routing by the routes it read before.
// The refreshes of the started Router fail the same way: Err says so,
// OnError receives it, and every failure counts in
// ddbindex.migration.route_refresh_errors. (Such attributes used to be
// skipped: the route selected nothing, every read went to the other form,
// and nothing said why.)
func TestRouterMalformedControlItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	h := oteltest.New(t)
	var mu sync.Mutex
	var reported []error
	r, err := NewRouter(f.c, RouterOptions{ControlTable: f.control, Tables: []string{"kp-tickets"}, MeterProvider: h.MeterProvider,
		OnError: func(err error) { mu.Lock(); defer mu.Unlock(); reported = append(reported, err) }})
	require.NoError(t, err)
	rd := f.table(t, func(o *ddbindex.Options) { o.Router = r })

	good := func(partition string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			controlPK: avS(routePrefix + "kp-tickets"), controlSK: avS("by_status"),
			"to": avS("table"), "partitions": &types.AttributeValueMemberL{Value: []types.AttributeValue{avS(partition)}}, "percent": avN("0"),
		}
	}
	requireMalformed := func(err error, want string) {
		t.Helper()
		require.ErrorIs(t, err, ddbindex.ErrMalformedItem)
		require.Equal(t, "DDBX-800", ddbindex.Code(err))
		require.ErrorContains(t, err, "route of by_status: "+want)
		require.ErrorContains(t, err, f.control)
	}
	requireGoodRoutes := func(why string) {
		t.Helper()
		require.Equal(t, ddbindex.IndexTable, formOf(t, rd, "acme"), why)
		require.Equal(t, ddbindex.GSI, formOf(t, rd, "globex"), why)
		page, err := rd.Query("by_status", "acme").Page(ctx)
		require.NoError(t, err, "a read routed by the routes read before")
		require.Empty(t, page.Items)
	}

	f.putControl(t, good("acme"))
	require.NoError(t, r.Refresh(ctx))
	require.NoError(t, r.Err())
	requireGoodRoutes("the good route")

	for _, bad := range rtBadRoutes {
		item := good("globex")
		for k, v := range bad.attrs {
			if v == nil {
				delete(item, k)
			} else {
				item[k] = v
			}
		}
		f.putControl(t, item)
		err := r.Refresh(ctx)
		requireMalformed(err, bad.want)
		requireMalformed(r.Err(), bad.want)
		_, err = r.Routes(ctx, "kp-tickets")
		requireMalformed(err, bad.want)
		requireGoodRoutes(bad.name + ": the routes read before stay")
	}
	m := h.Metrics(t)
	require.Equal(t, float64(len(rtBadRoutes)), m.Sum("ddbindex.migration.route_refresh_errors", attrErrorType.String("DDBX-800"), attrTable.String("kp-tickets")),
		"one per failed Refresh; Routes changes nothing and is not counted")
	mu.Lock()
	require.Len(t, reported, len(rtBadRoutes), "each failure goes to OnError")
	requireMalformed(reported[0], rtBadRoutes[0].want)
	mu.Unlock()

	// The started Router: its first refresh reads the good route; the
	// next, on its schedule, fails the same way, and says so.
	f.putControl(t, good("acme"))
	slept := make(chan time.Duration, 10)
	step := make(chan struct{})
	r.sleep = gatedSleep(slept, step)
	require.NoError(t, r.Start(ctx))
	defer r.Close()
	require.Equal(t, 30*time.Second, <-slept, "the first refresh succeeded: the next is a Refresh away")
	require.NoError(t, r.Err())
	f.putControl(t, map[string]types.AttributeValue{
		controlPK: avS(routePrefix + "kp-tickets"), controlSK: avS("by_status"), "to": avS("table"), "percent": avS("100"),
	})
	step <- struct{}{}
	require.Less(t, <-slept, 30*time.Second, "after a failure, sooner")
	requireMalformed(r.Err(), "percent is stored as S, want N")
	require.Equal(t, ddbindex.GSI, formOf(t, rd, "globex"), "percent 100 was not taken")
	require.Equal(t, float64(len(rtBadRoutes)+1), h.Metrics(t).Sum("ddbindex.migration.route_refresh_errors", attrErrorType.String("DDBX-800")),
		"the started Router's failure counts too")
	r.Close()
	mu.Lock()
	require.Len(t, reported, len(rtBadRoutes)+1)
	mu.Unlock()
}

// TestRouteFromItemNumbers: percents no control table can hold (a local
// server may) are refused like any other: NaN, infinities, and numbers out
// of float64's range.
func TestRouteFromItemNumbers(t *testing.T) {
	t.Parallel()
	for pct, want := range map[string]string{
		"NaN":    "percent NaN is outside 0-100",
		"Inf":    "percent Inf is outside 0-100",
		"-Inf":   "percent -Inf is outside 0-100",
		"1e400":  `percent "1e400" is not a number`,
		"":       `percent "" is not a number`,
		"100.01": "percent 100.01 is outside 0-100",
	} {
		_, _, err := routeFromItem(map[string]types.AttributeValue{controlSK: avS("by_status"), "to": avS("table"), "percent": avN(pct)})
		require.ErrorContains(t, err, "route of by_status: "+want, "percent %q", pct)
	}
	_, _, err := routeFromItem(map[string]types.AttributeValue{controlSK: avN("1"), "to": avS("table")})
	require.ErrorContains(t, err, "sk is stored as N, want S")
	_, _, err = routeFromItem(map[string]types.AttributeValue{"to": avS("table")})
	require.ErrorContains(t, err, "without sk")
	index, r, err := routeFromItem(map[string]types.AttributeValue{controlSK: avS("by_status"), "to": avS("gsi"), "updated": avN("1")})
	require.NoError(t, err, "absent partitions and percent select nothing; attributes the reader does not know are left alone")
	require.Equal(t, "by_status", index)
	require.Equal(t, Route{To: ddbindex.GSI}, r)
}

// The control table: SetRoute on one instance's Router, Refresh on
// another's; the control route comes before the Fallback; a route names
// forms, so it means the same to step 1 and step 2, and nothing to step 3;
// a malformed item leaves the last good routes.
func TestRouter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	newRouter := func(o RouterOptions) *Router {
		t.Helper()
		o.ControlTable = f.control
		r, err := NewRouter(f.c, o)
		require.NoError(t, err)
		return r
	}
	r1 := newRouter(RouterOptions{})
	s1 := f.table(t, func(o *ddbindex.Options) { o.Router = r1 })
	assert.Equal(t, ddbindex.GSI, formOf(t, s1, "globex"), "nothing read: the declared type")

	static := Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"acme"}}}
	r2 := newRouter(RouterOptions{Fallback: static})
	other := f.table(t, func(o *ddbindex.Options) { o.Router = r2 })
	assert.Equal(t, ddbindex.IndexTable, formOf(t, other, "acme"), "before the first read, the Fallback routes")

	require.NoError(t, SetRoute(ctx, r1, s1, "by_status", Route{To: ddbindex.IndexTable, Partitions: []string{"globex"}}))
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s1, "globex"), "SetRoute takes effect at once where it is called")
	require.NoError(t, r2.Refresh(ctx))
	assert.Equal(t, ddbindex.IndexTable, formOf(t, other, "globex"), "the control route replaces the static one")
	assert.Equal(t, ddbindex.GSI, formOf(t, other, "acme"))

	// Step 2 reads the same control item: the route names forms, not
	// "declared" or "kept", so it means the same there.
	r3 := newRouter(RouterOptions{Tables: []string{"kp-tickets"}})
	require.NoError(t, r3.Refresh(ctx))
	s2, err := ddbindex.New[kpStep2](f.c, f.opts, func(o *ddbindex.Options) { o.Router = r3 })
	require.NoError(t, err)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s2, "globex"))
	assert.Equal(t, ddbindex.GSI, formOf(t, s2, "acme"), "step 2 sends the unselected partitions to the other form, the GSI")

	// Step 3 keeps no GSI: a route to the GSI cannot apply, and SetRoute
	// refuses to store one from there.
	require.NoError(t, SetRoute(ctx, r1, s1, "by_status", Route{To: ddbindex.GSI, Percent: 100}))
	r4 := newRouter(RouterOptions{Tables: []string{"kp-tickets"}})
	require.NoError(t, r4.Refresh(ctx))
	s3, err := ddbindex.New[kpStep3](f.c, f.opts, func(o *ddbindex.Options) { o.Router = r4 })
	require.NoError(t, err)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s3, "acme"), "a route to a form not kept is ignored")
	require.ErrorIs(t, SetRoute(ctx, r4, s3, "by_status", Route{To: ddbindex.GSI, Percent: 100}), ddbindex.ErrInvalidQuery)

	// A route to a form an index does not keep leaves it to the Fallback.
	initech := Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"initech"}}}
	r5 := newRouter(RouterOptions{Tables: []string{"kp-tickets"}, Fallback: initech})
	require.NoError(t, r5.Refresh(ctx))
	s3f, err := ddbindex.New[kpStep3](f.c, f.opts, func(o *ddbindex.Options) { o.Router = r5 })
	require.NoError(t, err)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s3f, "acme"))
	fn := f.table(t, func(o *ddbindex.Options) { o.Router = r5 })
	assert.Equal(t, ddbindex.GSI, formOf(t, fn, "initech"), "the control route (GSI, 100%%) comes before the Fallback")

	// A malformed control item is refused; the routes read before stay.
	f.putControl(t, map[string]types.AttributeValue{
		controlPK: avS(routePrefix + "kp-tickets"), controlSK: avS("by_status"), "to": avS("view"),
	})
	require.Error(t, r5.Refresh(ctx))
	assert.Equal(t, ddbindex.GSI, formOf(t, fn, "acme"), "the last good routes still serve")

	// A Router learns a table it is asked about, and reads it from the
	// next refresh on.
	f.putControl(t, map[string]types.AttributeValue{
		controlPK: avS(routePrefix + "kp-tickets"), controlSK: avS("by_status"), "to": avS("table"), "percent": avN("100"),
	})
	r6 := newRouter(RouterOptions{})
	s6 := f.table(t, func(o *ddbindex.Options) { o.Router = r6 })
	assert.Equal(t, ddbindex.GSI, formOf(t, s6, "acme"), "not read yet")
	require.NoError(t, r6.Refresh(ctx))
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s6, "acme"))
}

// TestRouterRoutes reads the fleet's routes from the control table: what
// SetRoute wrote, from any Router, without routing by them; a control
// table that does not exist is a failed call.
func TestRouterRoutes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newKPFleet(t)
	r, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	routes, err := r.Routes(ctx, "kp-tickets")
	require.NoError(t, err)
	require.Empty(t, routes)

	rt := Route{To: ddbindex.GSI, Partitions: []string{"memo"}, Percent: 25}
	require.NoError(t, SetRoute(ctx, r, f.s1, "by_status", rt))
	other, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	routes, err = other.Routes(ctx, "kp-tickets")
	require.NoError(t, err)
	require.Equal(t, map[string]Route{"by_status": rt}, routes)
	_, ok := other.snap.Load().routes[rkey{"kp-tickets", "by_status"}]
	require.False(t, ok, "Routes leaves the Router's routes alone")
	routes, err = other.Routes(ctx, "other-table")
	require.NoError(t, err)
	require.Empty(t, routes)

	missing, err := NewRouter(f.c, RouterOptions{ControlTable: f.control + "-gone"})
	require.NoError(t, err)
	_, err = missing.Routes(ctx, "kp-tickets")
	var ce *ddbindex.Error
	require.ErrorAs(t, err, &ce, "a control table that does not exist is a failed call")
	require.Equal(t, "Query", ce.Op)
	require.Equal(t, f.control+"-gone", ce.Table)
}

// fakeControl is a control table in memory: PutItem stores, Query reads a
// partition; query, when set, replaces Query of the routes' partitions.
type fakeControl struct {
	mu    sync.Mutex
	items map[string]map[string]map[string]types.AttributeValue // pk, sk
	puts  atomic.Int32
	query func(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
}

func (c *fakeControl) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]map[string]map[string]types.AttributeValue{}
	}
	pk := in.Item[controlPK].(*types.AttributeValueMemberS).Value
	if c.items[pk] == nil {
		c.items[pk] = map[string]map[string]types.AttributeValue{}
	}
	c.items[pk][in.Item[controlSK].(*types.AttributeValueMemberS).Value] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (c *fakeControl) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if c.query != nil && strings.HasPrefix(partitionOf(in), routePrefix) {
		return c.query(ctx, in)
	}
	return c.read(in), nil
}

// partitionOf returns a control-table Query's partition: its key
// condition's one value.
func partitionOf(in *dynamodb.QueryInput) string {
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			return s.Value
		}
	}
	return ""
}

// read answers a Query from the items stored now.
func (c *fakeControl) read(in *dynamodb.QueryInput) *dynamodb.QueryOutput {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pk string // the key condition's one value: the partition
	for _, v := range in.ExpressionAttributeValues {
		pk = v.(*types.AttributeValueMemberS).Value
	}
	out := &dynamodb.QueryOutput{}
	for _, item := range c.items[pk] {
		out.Items = append(out.Items, item)
	}
	return out
}

// A refresh that was reading when SetRoute was called does not undo the
// route SetRoute set: its read may predate the write. A refresh that
// starts after SetRoute returned takes what it reads.
func TestSetRouteNotUndoneByRefreshInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := &fakeControl{}
	r, err := NewRouter(api, RouterOptions{ControlTable: "control", Tables: []string{"kp-tickets"}})
	require.NoError(t, err)
	s1, err := ddbindex.New[kpStep1](nil, func(o *ddbindex.Options) { o.Router = r })
	require.NoError(t, err)
	require.NoError(t, SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.GSI, Percent: 100}))
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ddbindex.GSI, formOf(t, s1, "acme"))

	// The refresh reads the control table as it is before SetRoute, and
	// answers once SetRoute has returned.
	entered, release := make(chan struct{}), make(chan struct{})
	api.query = func(_ context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		out := api.read(in)
		close(entered)
		<-release
		return out, nil
	}
	refreshed := make(chan error)
	go func() { refreshed <- r.Refresh(ctx) }()
	<-entered
	require.NoError(t, SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.IndexTable, Percent: 100}))
	require.Equal(t, ddbindex.IndexTable, formOf(t, s1, "acme"), "SetRoute takes effect at once")
	close(release)
	require.NoError(t, <-refreshed)
	require.Equal(t, ddbindex.IndexTable, formOf(t, s1, "acme"), "the refresh in flight read the route before SetRoute: the set stands")

	api.query = nil
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ddbindex.IndexTable, formOf(t, s1, "acme"), "a later refresh reads the route SetRoute wrote")
	// Another instance moves the route: the next refresh takes it.
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{
		controlPK: avS(routePrefix + "kp-tickets"), controlSK: avS("by_status"), "to": avS("gsi"), "percent": avN("100"),
	}})
	require.NoError(t, err)
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ddbindex.GSI, formOf(t, s1, "acme"))
}

// SetRoute refuses, before any request, what cannot be a route of the
// index: an index it does not declare, or that keeps one form, a route
// that is none, or one to a form the index does not keep.
func TestSetRouteRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := &fakeControl{}
	r, err := NewRouter(api, RouterOptions{ControlTable: "control"})
	require.NoError(t, err)
	s0, err := ddbindex.New[kpStep0](nil)
	require.NoError(t, err)
	s1, err := ddbindex.New[kpStep1](nil)
	require.NoError(t, err)
	s3, err := ddbindex.New[kpStep3](nil)
	require.NoError(t, err)
	for name, err := range map[string]error{
		"no such index":       SetRoute(ctx, r, s1, "nope", Route{To: ddbindex.IndexTable}),
		"the base table":      SetRoute(ctx, r, s1, "", Route{To: ddbindex.IndexTable}),
		"one form":            SetRoute(ctx, r, s0, "by_status", Route{To: ddbindex.GSI, Percent: 100}),
		"one form, the table": SetRoute(ctx, r, s3, "by_status", Route{To: ddbindex.IndexTable, Percent: 100}),
		"not kept":            SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.LSI, Percent: 100}),
		"Percent 120":         SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.GSI, Percent: 120}),
		"no form":             SetRoute(ctx, r, s1, "by_status", Route{Percent: 100}),
		"nil Router":          SetRoute(ctx, nil, s1, "by_status", Route{To: ddbindex.GSI}),
		"nil Table":           SetRoute[kpStep1](ctx, r, nil, "by_status", Route{To: ddbindex.GSI}),
	} {
		require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, name)
		require.Equal(t, "DDBX-200", ddbindex.Code(err), name)
		t.Logf("%s: %v", name, err)
	}
	// An index of one form is named as such, and the rule with it.
	err = SetRoute(ctx, r, s0, "by_status", Route{To: ddbindex.GSI, Percent: 100})
	require.ErrorContains(t, err, "route of kpStep0 index by_status: the index keeps one form (type=gsi); a route needs two (keep= in its IndexSpec)")
	require.Zero(t, api.puts.Load(), "no request")
}

// NewRouter refuses options out of range; a Router starts once.
func TestNewRouterRefusals(t *testing.T) {
	t.Parallel()
	api := &fakeControl{}
	for name, o := range map[string]RouterOptions{
		"no control table": {},
		"negative Refresh": {ControlTable: "c", Refresh: -time.Second},
		"an empty table":   {ControlTable: "c", Tables: []string{"t", ""}},
	} {
		r, err := NewRouter(api, o)
		require.Nil(t, r, name)
		require.True(t, errors.Is(err, ddbindex.ErrDeclaration), "%s: %v", name, err)
		require.False(t, errors.Is(err, ddbindex.ErrInvalidQuery), name)
		require.Equal(t, "DDBX-100", ddbindex.Code(err), name)
		require.ErrorContains(t, err, "migrate.NewRouter: RouterOptions.", name)
	}
	_, err := NewRouter(api, RouterOptions{ControlTable: "c", ClientOptions: []func(*dynamodb.Options){nil}})
	require.ErrorIs(t, err, ddbindex.ErrDeclaration)
	require.ErrorContains(t, err, "RouterOptions.ClientOptions[0] is nil")
	_, err = NewRouter(nil, RouterOptions{ControlTable: "c"})
	require.ErrorIs(t, err, ddbindex.ErrDeclaration)
	require.ErrorContains(t, err, "migrate.NewRouter: no RouterAPI")

	r, err := NewRouter(api, RouterOptions{ControlTable: "c"})
	require.NoError(t, err)
	slept := make(chan time.Duration, 1)
	r.sleep = gatedSleep(slept, nil)
	require.NoError(t, r.Start(t.Context()))
	<-slept
	require.ErrorIs(t, r.Start(t.Context()), ddbindex.ErrInvalidQuery, "started already")
	r.Close()
	r.Close()
	require.ErrorIs(t, r.Start(t.Context()), ddbindex.ErrInvalidQuery, "closed")
}

// A control table that fails is read again sooner, then ever later: the
// waits double from one second, each drawn from the upper half of its
// span, up to ten Refresh intervals; a read that succeeds brings the wait
// back to Refresh. Each failure reaches OnError and the metric, and Err
// holds the last one.
func TestRouterBackoff(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	var calls atomic.Int32
	api := &fakeControl{}
	api.query = func(context.Context, *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		if calls.Add(1) == 8 {
			return &dynamodb.QueryOutput{}, nil
		}
		return nil, errors.New("throttled")
	}
	var reported atomic.Int32
	r, err := NewRouter(api, RouterOptions{ControlTable: "control", Tables: []string{"kp-tickets"}, Refresh: 2 * time.Second,
		MeterProvider: h.MeterProvider, OnError: func(err error) {
			if ddbindex.Code(err) == "DDBX-900" {
				reported.Add(1)
			}
		}})
	require.NoError(t, err)
	jitter := []float64{0, 0.5, 0.999, 0.25, 0.75, 1, 0, 0.5}
	var draws int
	r.rand = func() float64 { v := jitter[draws%len(jitter)]; draws++; return v }
	var waits []time.Duration
	wait := make(chan struct{})
	r.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) < 9 {
			return nil
		}
		close(wait)
		<-ctx.Done()
		return ctx.Err()
	}
	require.NoError(t, r.Start(context.Background()))
	<-wait
	r.Close()

	// Failures 1 to 7 (1s, 2s, 4s, 8s, 16s, then the cap of 20s), the
	// success, then failure 1 again.
	nominal := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second}
	require.Len(t, waits, 9)
	for i, d := range nominal {
		want := d/2 + time.Duration(jitter[i]*float64(d/2))
		assert.Equal(t, want, waits[i], "wait after failure %d", i+1)
		assert.GreaterOrEqual(t, waits[i], d/2)
		assert.LessOrEqual(t, waits[i], d)
	}
	assert.Equal(t, 2*time.Second, waits[7], "after a success: Refresh")
	assert.Equal(t, 500*time.Millisecond+time.Duration(jitter[7]*float64(500*time.Millisecond)), waits[8], "the backoff starts again")
	assert.True(t, slices.IsSorted(waits[:5]), "growing")
	assert.LessOrEqual(t, slices.Max(waits), 20*time.Second, "capped")

	assert.Equal(t, int32(8), reported.Load(), "each failure reaches OnError")
	assert.Equal(t, float64(8), h.Metrics(t).Sum("ddbindex.migration.route_refresh_errors", attrErrorType.String("DDBX-900"), attrTable.String("kp-tickets")))
	require.ErrorIs(t, r.Err(), ddbindex.ErrDynamoDB)
	var ce *ddbindex.Error
	require.ErrorAs(t, r.Err(), &ce)
	assert.Equal(t, "control", ce.Table)
}

// appIDs is a RouterAPI that records, per request, the AppID its per-call
// options set.
type appIDs struct {
	*fakeControl
	mu   sync.Mutex
	seen []string
}

func (a *appIDs) note(optFns []func(*dynamodb.Options)) {
	var o dynamodb.Options
	for _, fn := range optFns {
		fn(&o)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, o.AppID)
}

func (a *appIDs) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seen
	a.seen = nil
	return s
}

func (a *appIDs) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	a.note(optFns)
	return a.fakeControl.PutItem(ctx, in, optFns...)
}

func (a *appIDs) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	a.note(optFns)
	return a.fakeControl.Query(ctx, in, optFns...)
}

// The Router's ClientOptions reach every request it sends, and the per-call
// options of Refresh, Routes and SetRoute come after them; a nil per-call
// option is refused before any request.
func TestRouterClientOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := &appIDs{fakeControl: &fakeControl{}}
	appID := func(id string) func(*dynamodb.Options) { return func(o *dynamodb.Options) { o.AppID = id } }
	r, err := NewRouter(api, RouterOptions{ControlTable: "control", Tables: []string{"kp-tickets"}, ClientOptions: []func(*dynamodb.Options){appID("router")}})
	require.NoError(t, err)
	s1, err := ddbindex.New[kpStep1](nil)
	require.NoError(t, err)

	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, []string{"router", "router"}, api.take(), "the Router's own options (the routes, then the migration state)")
	require.NoError(t, SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.GSI, Percent: 100}, appID("set")))
	require.Equal(t, []string{"set"}, api.take(), "the call's options come last")
	_, err = r.Routes(ctx, "kp-tickets", appID("routes"))
	require.NoError(t, err)
	require.Equal(t, []string{"routes"}, api.take())
	require.NoError(t, r.Refresh(ctx, appID("refresh")))
	require.Equal(t, []string{"refresh", "refresh"}, api.take())

	require.ErrorIs(t, r.Refresh(ctx, nil), ddbindex.ErrInvalidQuery)
	_, err = r.Routes(ctx, "kp-tickets", appID("x"), nil)
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery)
	require.ErrorIs(t, SetRoute(ctx, r, s1, "by_status", Route{To: ddbindex.GSI}, nil), ddbindex.ErrInvalidQuery)
	require.Empty(t, api.take(), "no request")
}

package ddbindex

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
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

// TestRoutingMalformedControlItems: a control item whose attributes do not
// fit a Route (a percent stored as text, partitions as a string set, ...)
// fails RefreshRoutes and Routes with ErrMalformedItem naming the attribute
// and its stored type; the Table keeps routing by the routes it read
// before. The background refresh a read starts records the same error
// (RouteRefreshError), and every failed refresh counts in
// ddbindex.migration.route_refresh_errors. (Such attributes used to be
// skipped: the route selected nothing, every read went to the other form,
// and nothing said why.)
func TestRoutingMalformedControlItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	control := ddbtest.Name(t, "control")
	f := newKPFleet(t, func(o *Options) { o.ControlTable = control })
	ddbtest.DeleteOnCleanup(t, f.c, control)
	ddbtest.CreateTable(t, f.c, controlInput(f.s1))

	h := oteltest.New(t)
	var clock chanClock
	clock.now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	rd, err := New[kpStep1](f.c, withOTel(h), func(o *Options) {
		o.TableName, o.ControlTable, o.Now, o.RouteRefresh = f.s1.opts.TableName, control, clock.Now, time.Minute
	})
	require.NoError(t, err)
	refreshed := make(chan struct{}, 1000)
	rd.routes.refreshed = func() { refreshed <- struct{}{} }

	form := func(team string) Kind {
		t.Helper()
		e, err := rd.Query("by_status", team).Explain()
		require.NoError(t, err)
		return e.Request.Kind
	}
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		_, err := f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(control), Item: item})
		require.NoError(t, err)
	}
	good := func(partition string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			controlPK: avS(routePrefix + rd.s.table), controlSK: avS("by_status"),
			"to": avS("table"), "partitions": &types.AttributeValueMemberL{Value: []types.AttributeValue{avS(partition)}}, "percent": avN("0"),
		}
	}
	requireMalformed := func(err error, want string) {
		t.Helper()
		require.ErrorIs(t, err, ErrMalformedItem)
		require.Equal(t, "DDBX-800", Code(err))
		require.ErrorContains(t, err, "route of by_status: "+want)
		require.ErrorContains(t, err, control)
	}
	requireGoodRoutes := func(why string) {
		t.Helper()
		require.Equal(t, IndexTable, form("acme"), why)
		require.Equal(t, GSI, form("globex"), why)
		page, err := rd.Query("by_status", "acme").Page(ctx)
		require.NoError(t, err, "a read routed by the routes read before")
		require.Empty(t, page.Items)
	}

	put(good("acme"))
	require.NoError(t, rd.RefreshRoutes(ctx))
	require.NoError(t, rd.RouteRefreshError())
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
		put(item)
		err := rd.RefreshRoutes(ctx)
		requireMalformed(err, bad.want)
		requireMalformed(rd.RouteRefreshError(), bad.want)
		_, err = rd.Routes(ctx)
		requireMalformed(err, bad.want)
		requireGoodRoutes(bad.name + ": the routes read before stay")
	}
	m := h.Metrics(t)
	require.Equal(t, float64(len(rtBadRoutes)), m.Sum("ddbindex.migration.route_refresh_errors", attrErrorType.String("DDBX-800"), attrTable.String(rd.TableName())),
		"one per failed RefreshRoutes; Routes changes nothing and is not counted")

	// The background refresh: a read after RouteRefresh starts it; it fails
	// the same way, and says so in RouteRefreshError.
	put(good("acme"))
	require.NoError(t, rd.RefreshRoutes(ctx))
	require.NoError(t, rd.RouteRefreshError())
	put(map[string]types.AttributeValue{
		controlPK: avS(routePrefix + rd.s.table), controlSK: avS("by_status"), "to": avS("table"), "percent": avS("100"),
	})
	clock.advance(2 * time.Minute)
	require.Equal(t, IndexTable, form("acme"), "the read that starts the refresh reads by the routes it has")
	select {
	case <-refreshed:
	case <-t.Context().Done():
		t.Fatal("the background refresh never ended")
	}
	requireMalformed(rd.RouteRefreshError(), "percent is stored as S, want N")
	require.Equal(t, GSI, form("globex"), "percent 100 was not taken")
	require.Greater(t, h.Metrics(t).Sum("ddbindex.migration.route_refresh_errors", attrErrorType.String("DDBX-800")), float64(len(rtBadRoutes)),
		"the background refresh's failure counts too")
}

// chanClock is a clock a test moves by hand.
type chanClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *chanClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *chanClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
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
	require.Equal(t, Route{To: GSI}, r)
}

package ops_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/slowddb"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/ops"
)

// routesOf reads the routes of the Ticket tables from the fixture's
// control table.
func routesOf(t *testing.T, f *fixture) map[string]migrate.Route {
	t.Helper()
	router, err := migrate.NewRouter(f.client, migrate.RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	routes, err := router.Routes(t.Context(), "tickets")
	require.NoError(t, err)
	return routes
}

// deletingClient answers DescribeTable of one table with TableStatus
// DELETING, as DynamoDB does from a DeleteTable until the table is gone
// ("When you issue a DeleteTable request, the specified table is in the
// DELETING state until DynamoDB completes the deletion",
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DeleteTable.html).
type deletingClient struct {
	ops.Client
	table string
}

func (c deletingClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.Client.DescribeTable(ctx, in, optFns...)
	if err == nil && out.Table != nil && aws.ToString(in.TableName) == c.table {
		out.Table.TableStatus = types.TableStatusDeleting
	}
	return out, err
}

// TestRouteSetRefusesMissingIndexTable: route set reads the live schema
// before it writes. A route to an index table that is being deleted, or
// is gone, is refused, and the route in the control table stays as it
// was.
func TestRouteSetRefusesMissingIndexTable(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	r := f.run("", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	before := map[string]migrate.Route{"by_status": {To: ddbindex.GSI, Percent: 100}}
	require.Equal(t, before, routesOf(t, f))

	f.api = deletingClient{Client: f.client, table: f.prefix + "tickets-by_status"}
	f.golden(t, "refused-route-set-index-table-deleting", "", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	require.Equal(t, before, routesOf(t, f), "the refused route wrote nothing")

	f.api = nil
	ddbtest.DeleteTable(t, f.client, f.prefix+"tickets-by_status")
	f.golden(t, "refused-route-set-deleted-index-table", "", "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1")
	require.Equal(t, before, routesOf(t, f), "the refused route wrote nothing")
}

// TestRouteSetRefusesGSINotReady: a GSI added back to the table (as when
// a migration returns to it) is not readable until it is ACTIVE: route
// set refuses it while DynamoDB reports it CREATING, allocating and then
// backfilling, and writes the route once it is ACTIVE. slowddb reports the
// stages as DynamoDB does (see its package documentation).
func TestRouteSetRefusesGSINotReady(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	f, _ := ticketFixture(t)
	ctx := t.Context()
	base := f.prefix + "tickets"
	desc, err := f.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(base)})
	require.NoError(t, err)
	require.Len(t, desc.Table.GlobalSecondaryIndexes, 1)
	g := desc.Table.GlobalSecondaryIndexes[0]
	create := &types.CreateGlobalSecondaryIndexAction{IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection}
	if p := g.ProvisionedThroughput; p != nil && aws.ToInt64(p.ReadCapacityUnits) > 0 {
		create.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: p.ReadCapacityUnits, WriteCapacityUnits: p.WriteCapacityUnits}
	}

	_, err = f.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(base),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: g.IndexName}}}})
	require.NoError(t, err)
	ddbtest.WaitActive(t, f.client, base)
	slow, held := ddbtest.Slow(t, slowddb.Options{BackfillPolls: 2})
	_, err = slow.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(base), AttributeDefinitions: desc.Table.AttributeDefinitions,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: create}}})
	require.NoError(t, err)

	// Each route set asks DescribeTable once: allocating, backfilling,
	// then ACTIVE.
	f.api = slow
	f.golden(t, "refused-route-set-gsi-allocating", "", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	f.golden(t, "refused-route-set-gsi-backfilling", "", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Empty(t, routesOf(t, f), "the refused routes wrote nothing")
	require.EqualValues(t, 2, held.Stats().Creating, "DynamoDB reported the GSI CREATING twice")
	r := f.run("", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.GSI, Percent: 100}}, routesOf(t, f))
}

// TestRouteSetRefusesBeforeBackfill: until the control table records that
// the backfill of the index table finished, it lacks the items written
// before the model kept it, and route set refuses to send reads there
// (exit 2, nothing written), naming the backfill to run; --force
// overrides it. A backfill that has done some of its segments records
// nothing yet. A route to the declared type, which unrouted reads use
// anyway, is not refused.
func TestRouteSetRefusesBeforeBackfill(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	r := f.golden(t, "refused-route-set-before-backfill", "", "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "backfill --index by_status")
	require.Empty(t, routesOf(t, f), "the refused route wrote nothing")

	// Half of the backfill's segments: not finished.
	r = f.run("", "backfill", "--index", "by_status", "--total-segments", "2", "--workers", "1", "--segment", "0")
	require.Equal(t, 0, r.code, r.stderr)
	r = f.run("", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	require.Equal(t, 2, r.code, "a backfill with a segment left to do is not finished: %s%s", r.stdout, r.stderr)
	require.Empty(t, routesOf(t, f))

	r = f.run("", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.GSI, Percent: 100}}, routesOf(t, f))

	r = f.run("", "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1", "--force")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "--force: going on although the control table")
	require.Equal(t, ddbindex.IndexTable, routesOf(t, f)["by_status"].To)

	// The rest of the backfill: it records its end, and the route goes on
	// without --force.
	r = f.run("", "backfill", "--index", "by_status", "--total-segments", "2", "--workers", "1", "--segment", "1")
	require.Equal(t, 0, r.code, r.stderr)
	r = f.run("", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.IndexTable, Percent: 100}}, routesOf(t, f))
}

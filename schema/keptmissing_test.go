package schema_test

// Tests of a kept form that does not exist: the last step of a migration,
// between the drop of the old form and the deploy of the declaration
// without keep=. Check accepts it when no read goes to it, and says so
// (CheckWithWarnings); it refuses it when the routing may send reads to it.

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// anyRouter is a Router that cannot say where it sends reads.
type anyRouter struct{}

func (anyRouter) Route(string, string, string, [2]ddbindex.Kind) (ddbindex.Kind, bool) {
	return 0, false
}

func TestCheckKeptFormDropped(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.TTL)       // the index table's tombstones rely on it
	ddbtest.Require(t, ddbtest.GSIUpdate) // the GSI is dropped by UpdateTable
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	writeThrough := func(o *ddbindex.Options) { o.WriteThrough = true } // no stream needed
	newTestTableNamed[kpStep1](t, c, naming, writeThrough)
	control := ddbtest.Name(t, "control")
	ddbtest.CreateTable(t, c, schema.ControlTableInput(control))
	router, err := migrate.NewRouter(c, migrate.RouterOptions{ControlTable: control, Tables: []string{"kp-tickets"}})
	require.NoError(t, err)
	step3 := func(r ddbindex.Router) *ddbindex.Table[kpStep2] {
		t.Helper()
		tb, err := ddbindex.New[kpStep2](c, naming, writeThrough, func(o *ddbindex.Options) { o.Router = r })
		require.NoError(t, err)
		return tb
	}
	toTable := migrate.Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Percent: 100}}
	someToGSI := migrate.Routes{"kp-tickets/by_status": {To: ddbindex.GSI, Partitions: []string{"TEAM-1"}}}

	// Both forms exist: nothing to report, whatever the routing.
	for _, r := range []ddbindex.Router{nil, toTable, someToGSI, router, anyRouter{}} {
		warnings, err := schema.CheckWithWarnings(ctx, step3(r), c)
		require.NoError(t, err)
		assert.Empty(t, warnings)
	}

	tb := step3(nil)
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tb.TableName()),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by_status")}}}})
	require.NoError(t, err)
	desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb.TableName())})
	require.NoError(t, err)
	require.Empty(t, desc.Table.GlobalSecondaryIndexes, "the server dropped the GSI")

	// The GSI is gone, and no read goes to it: the check passes, and warns.
	passes := func(r ddbindex.Router, why string) {
		t.Helper()
		tb := step3(r)
		warnings, err := schema.CheckWithWarnings(ctx, tb, c)
		require.NoError(t, err, why)
		require.Len(t, warnings, 1, why)
		assert.Contains(t, warnings[0], "has no GSI named by_status", why)
		assert.Contains(t, warnings[0], "the gsi form that index by_status keeps (keep=gsi)", why)
		assert.Contains(t, warnings[0], "at its end, declare the index without keep=gsi", why)
		require.NoError(t, schema.Check(ctx, tb, c), why)
	}
	passes(nil, "no Router: every read goes to the declared table")
	passes(toTable, "static routes send every read to the table")
	require.NoError(t, migrate.SetRoute(ctx, router, tb, "by_status", migrate.Route{To: ddbindex.IndexTable, Percent: 100}))
	passes(router, "the fleet's routes send every read to the table")

	// Reads may still go to the GSI: the check fails, naming the routing.
	fails := func(r ddbindex.Router, want string) {
		t.Helper()
		warnings, err := schema.CheckWithWarnings(ctx, step3(r), c)
		require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
		assert.Equal(t, "DDBX-500", ddbindex.Code(err))
		assert.Contains(t, err.Error(), "has no GSI named by_status")
		assert.Contains(t, err.Error(), want)
		assert.Empty(t, warnings)
		require.ErrorIs(t, schema.Check(ctx, step3(r), c), ddbindex.ErrSchemaMismatch)
	}
	fails(someToGSI, "Options.Router may send reads of the index to it")
	fails(anyRouter{}, "no schema.FormRouter")
	require.NoError(t, migrate.SetRoute(ctx, router, tb, "by_status", migrate.Route{To: ddbindex.IndexTable, Percent: 50}))
	fails(router, "route every read to the table form first")

	// A fleet's routes that cannot be read: the routing may send reads
	// anywhere.
	broken, err := migrate.NewRouter(c, migrate.RouterOptions{ControlTable: control + "-missing"})
	require.NoError(t, err)
	fails(broken, "Options.Router could not say whether it sends reads of the index to it")

	// The declaration that serves the GSI fails however reads are routed.
	s1, err := ddbindex.New[kpStep1](c, naming, writeThrough, func(o *ddbindex.Options) { o.Router = toTable })
	require.NoError(t, err)
	_, err = schema.CheckWithWarnings(ctx, s1, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
}

// A kept index table that does not exist is no warning, whatever the
// routing: its entries are written to it (here through), and those writes
// would fail. (TestPrepareKeptIndexTable checks one kept from the stream.)
func TestCheckKeptIndexTableWrittenThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	s0 := newTestTableNamed[kpStep0](t, c, naming)
	s1 := scOpen[kpStep1](t, c, naming, func(o *ddbindex.Options) { o.WriteThrough = true })
	// No Router: every read goes to the GSI.
	_, err := schema.CheckWithWarnings(ctx, s1, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	assert.Contains(t, err.Error(), "does not exist")
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	assert.Empty(t, se.Warnings)
	require.NoError(t, schema.Check(ctx, s0, c))
}

// An Error lists its warnings after its problems, each marked.
func TestErrorWarningsText(t *testing.T) {
	t.Parallel()
	err := &schema.Error{Problems: []string{"table a does not exist"}, Warnings: []string{"table b has no GSI named c"}}
	require.Equal(t, "ddbindex: the live schema does not match the declarations [DDBX-500]:\n  - table a does not exist\n  - (warning) table b has no GSI named c", err.Error())
	require.Equal(t, "ddbindex: the live schema does not match the declarations [DDBX-500]:\n  - table a does not exist",
		(&schema.Error{Problems: err.Problems}).Error(), "no warnings, no line")
}

package ddbindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// The runbook between a derived GSI (by_status, keyed by team and a derived
// sort key of status and created) and a native one (by_status_n, keyed by
// team, status and created themselves), in each direction, with the mixed
// fleet, run-time routes, shadow reads, roll-back and drop of the other
// walks (runbook_test.go). Neither local server has multi-attribute GSI
// keys: the fleet's client goes through internal/multikey, which serves
// them as DynamoDB does (ddbtest.MultiKey); make test-aws runs the walks on
// DynamoDB itself.

type rbGSIKeepNative struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=native-gsi,native-gsi=by_status_n"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type rbNativeKeepGSI struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=native-gsi,keep=gsi,native-gsi=by_status_n"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type rbNative struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=native-gsi,native-gsi=by_status_n"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// rbGSIWasNative is type=gsi after the move back from the native GSI,
// naming where that form lived, so that schema.Check refuses it while the
// native GSI still exists.
type rbGSIWasNative struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,native-gsi=by_status_n"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// newRBFleetNative is newRBFleet whose client has multi-attribute GSI keys
// (ddbtest.MultiKey). Its items never tie on (status, created): DynamoDB
// documents no order among a native GSI's items with equal keys, while the
// derived sort key orders them by ID, so a tie could put the two forms'
// pages in different orders without either being wrong.
func newRBFleetNative(t *testing.T) *rbFleet {
	f := newRBFleet(t)
	f.c = ddbtest.MultiKey(t)
	f.uniqueSort = true
	return f
}

// rbWaitGSIGone waits until the base table no longer lists the GSI named
// index: at once, then at growing intervals, for at most rbWaitCap.
func rbWaitGSIGone(ctx context.Context, c *dynamodb.Client, table, index string) error {
	ctx, cancel := context.WithTimeout(ctx, rbWaitCap)
	defer cancel()
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
			return aws.ToString(g.IndexName) == index
		}) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("table %s still lists GSI %s: %w", table, index, ctx.Err())
		case <-time.After(pause):
		}
	}
}

// rbDropGSI deletes the base table's GSI named index and waits until it is gone.
func rbDropGSI(t *testing.T, f *rbFleet, table, index string) {
	t.Helper()
	_, err := f.c.UpdateTable(f.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String(index)}}}})
	require.NoError(t, err)
	require.NoError(t, rbWaitGSIGone(f.ctx, f.c, table, index))
}

// rbAllThrough checks that every partition read through form of tb holds
// exactly the fleet's live items.
func rbAllThrough[T any](t *testing.T, f *rbFleet, tb *ddbindex.Table[T], form ddbindex.Kind, why string) {
	t.Helper()
	for _, team := range f.teams {
		var got []rbItem
		for it, err := range tb.Query("by_status", team).Via(form).All(f.ctx) {
			require.NoError(t, err)
			got = append(got, rbBack(it))
		}
		f.mu.Lock()
		want := rbIDs(rbWant(f.truth, team))
		f.mu.Unlock()
		require.Equal(t, want, rbIDs(got), "%s: %s through the %s form", why, team, form)
	}
}

// rbCursorsAcross checks that a cursor minted on one form of tb leads on
// the other to the rest of the partition: every partition read in pages of
// several sizes, each page through the form the previous one did not use,
// starting with each form, holds exactly the fleet's live items. A fleet
// whose routes change between two pages of a caller's read does this.
func rbCursorsAcross[T any](t *testing.T, f *rbFleet, tb *ddbindex.Table[T], why string) {
	t.Helper()
	forms := [2]ddbindex.Kind{ddbindex.GSI, ddbindex.NativeGSI}
	for _, team := range f.teams {
		f.mu.Lock()
		want := rbIDs(rbWant(f.truth, team))
		f.mu.Unlock()
		for _, limit := range []int{1, 3, 7} {
			for first := range 2 {
				var got []rbItem
				cursor, followed := "", 0 // cursors followed
				for ; ; followed++ {
					p, err := tb.Query("by_status", team).Via(forms[(first+followed)%2]).Limit(limit).After(cursor).Page(f.ctx)
					require.NoError(t, err, "%s: %s page %d", why, team, followed+1)
					for _, it := range p.Items {
						got = append(got, rbBack(it))
					}
					if cursor = p.Cursor; cursor == "" {
						break
					}
				}
				require.Equal(t, want, rbIDs(got), "%s: %s in pages of %d alternating forms, from the %s", why, team, limit, forms[first])
				// Each page holds at most limit items: the cursors were
				// followed at least that often (a team of the random
				// workload may hold fewer items than one page).
				require.GreaterOrEqual(t, followed+1, (len(want)+limit-1)/limit, "%s: %s: pages of %d", why, team, limit)
			}
		}
	}
}

// Derived GSI to native GSI. Prepare adds the native GSI to the table,
// which DynamoDB backfills from the items' own attributes: there is no
// Backfill to run, and from then on every write of every instance, of any
// declaration, is in it.
func TestRunbookMixedFleetGSIToNative(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate) // Prepare adds the native GSI to the existing base table
	f := newRBFleetNative(t)
	ctx, c := f.ctx, f.c

	// Step 0: the base table and its derived GSI.
	v0 := rbOpen[rbGSI](f)
	v1 := rbOpen[rbGSIKeepNative](f)
	v4 := rbOpen[rbNative](f)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(v0, false)[0])
	fleet := f.deploy(declGSI, declGSI)
	f.step("step 0", fleet, 80)

	// Step 1: Prepare adds the native GSI and the control table.
	scErr := schema.Check(ctx, v1, c)
	require.ErrorIs(t, scErr, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, scErr, "by_status_n")
	rep, err := schema.Prepare(ctx, v1, c, f.withControl)
	require.NoError(t, err)
	t.Logf("Prepare: %q", rep.Steps)
	require.Equal(t, []string{"by_status_n"}, rep.CreatedGSIs)
	require.Equal(t, []string{f.control}, rep.CreatedTables)
	require.False(t, rep.StreamEnabled, "a native GSI needs no stream")
	require.NoError(t, schema.Check(ctx, v1, c))
	f.routed = true
	// What step 0 wrote is in the native GSI already: DynamoDB backfilled it.
	rbAllThrough(t, f, v1, ddbindex.NativeGSI, "after Prepare")
	// Backfill has nothing to write for it.
	st, err := migrate.Backfill(ctx, v1, c, "by_status")
	require.NoError(t, err)
	require.Positive(t, st.Scanned)
	require.Zero(t, st.Written, "no derived attribute to write for a native GSI: %+v", st)
	rbCursorsAcross(t, f, v1, "after Prepare")
	fleet = f.deploy(declGSI, declGSIKeepNative) // rolling: one old, one new
	f.step("step 1, mixed", fleet, 80)
	fleet = f.deploy(declGSIKeepNative, declGSIKeepNative)
	f.step("step 1", fleet, 60)

	// Step 2: shadow reads on; route one tenant, a share, then every
	// partition to the native GSI, at run time.
	f.shadow = true
	fleet = f.deploy(declGSIKeepNative, declGSIKeepNative)
	operator := fleet[0]
	for _, r := range []migrate.Route{
		{To: ddbindex.NativeGSI, Partitions: []string{"acme"}},
		{To: ddbindex.NativeGSI, Percent: 50},
		{To: ddbindex.NativeGSI, Percent: 100},
	} {
		f.setRoute(operator, fleet, r)
		f.step(fmt.Sprintf("step 2, route %+v", r), fleet, 60)
	}

	// Step 3: the switch to type=native-gsi,keep=gsi in a mixed fleet, a
	// roll-back to step 1, and forward again.
	fleet = f.deploy(declGSIKeepNative, declNativeKeepGSI)
	f.step("step 3, mixed", fleet, 80)
	f.setRoute(operator, fleet, migrate.Route{To: ddbindex.GSI, Percent: 100})
	fleet = f.deploy(declGSIKeepNative, declGSIKeepNative)
	f.step("rolled back to step 1, GSI routes", fleet, 60)
	f.setRoute(operator, fleet, migrate.Route{To: ddbindex.NativeGSI, Percent: 100})
	fleet = f.deploy(declGSIKeepNative, declNativeKeepGSI)
	f.step("forward again, mixed", fleet, 60)
	fleet = f.deploy(declNativeKeepGSI, declNativeKeepGSI)
	f.step("step 3", fleet, 60)

	// Step 4: no read is served by the derived GSI: drop it, then deploy
	// type=native-gsi.
	f.noReads(fleet, ddbindex.GSI, ddbindex.NativeGSI)
	scErr = schema.Check(ctx, v4, c)
	require.ErrorIs(t, scErr, ddbindex.ErrSchemaMismatch, "the plain type=native-gsi is refused while the derived GSI exists")
	require.ErrorContains(t, scErr, "no longer kept")
	rbDropGSI(t, f, v0.TableName(), "by_status")
	require.NoError(t, schema.Check(ctx, v4, c), "with the derived GSI gone, type=native-gsi matches the table")
	f.shadow = false
	fleet = f.deploy(declNativeKeepGSI, declNative)
	f.step("step 4, mixed after the drop", fleet, 80, ddbindex.GSI)
	fleet = f.deploy(declNative, declNative)
	f.step("step 4", fleet, 40)
	f.figures("derived GSI → native GSI")
	require.Greater(t, f.ops, 3000/f.div)
}

// Native GSI to derived GSI: Prepare adds the derived GSI, which holds
// nothing written before until Backfill writes the derived sort key onto
// those items; the rest is the same walk.
func TestRunbookMixedFleetNativeToGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate) // Prepare adds the derived GSI to the existing base table
	f := newRBFleetNative(t)
	ctx, c := f.ctx, f.c

	// Step 0: the base table and its native GSI.
	v0 := rbOpen[rbNative](f)
	v1 := rbOpen[rbNativeKeepGSI](f)
	v4 := rbOpen[rbGSIWasNative](f)
	require.NoError(t, schema.CreateTables(ctx, v0, c))
	fleet := f.deploy(declNative, declNative)
	f.step("step 0", fleet, 80)

	// Step 1: Prepare adds the derived GSI and the control table; it holds
	// none of the items written before until the backfill.
	scErr := schema.Check(ctx, v1, c)
	require.ErrorIs(t, scErr, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, scErr, "no GSI named by_status")
	rep, err := schema.Prepare(ctx, v1, c, f.withControl)
	require.NoError(t, err)
	t.Logf("Prepare: %q", rep.Steps)
	require.Equal(t, []string{"by_status"}, rep.CreatedGSIs)
	require.Equal(t, []string{f.control}, rep.CreatedTables)
	require.NoError(t, schema.Check(ctx, v1, c))
	f.routed = true
	for _, team := range f.teams {
		for _, err := range v1.Query("by_status", team).Via(ddbindex.GSI).All(ctx) {
			require.NoError(t, err)
			t.Fatalf("before the backfill, the derived GSI holds an item of %s written at step 0", team)
		}
	}
	fleet = f.deploy(declNative, declNativeKeepGSI) // rolling: one old, one new
	f.step("step 1, mixed", fleet, 80, ddbindex.GSI)
	fleet = f.deploy(declNativeKeepGSI, declNativeKeepGSI)
	var st migrate.BackfillStats
	f.round("step 1, backfilling", fleet, 80, func() {
		st, err = migrate.Backfill(ctx, v1, c, "by_status", func(o *migrate.BackfillOptions) { o.Workers = 2 })
	}, ddbindex.GSI)
	require.NoError(t, err)
	t.Logf("backfill: %+v", st)
	require.Positive(t, st.Written, "the items written before carry the derived sort key now")
	require.Equal(t, st.Scanned, st.Written+st.Skipped+st.Unchanged+st.Sparse+st.Tombstones, "every scanned item counted once")
	f.check("step 1, backfilled", fleet)
	rbCursorsAcross(t, f, v1, "after the backfill")

	// Step 2: shadow reads on; routes to the derived GSI.
	f.shadow = true
	fleet = f.deploy(declNativeKeepGSI, declNativeKeepGSI)
	operator := fleet[0]
	for _, r := range []migrate.Route{
		{To: ddbindex.GSI, Partitions: []string{"acme"}},
		{To: ddbindex.GSI, Percent: 50},
		{To: ddbindex.GSI, Percent: 100},
	} {
		f.setRoute(operator, fleet, r)
		f.step(fmt.Sprintf("step 2, route %+v", r), fleet, 60)
	}

	// Step 3: the switch, a roll-back, and forward again.
	fleet = f.deploy(declNativeKeepGSI, declGSIKeepNative)
	f.step("step 3, mixed", fleet, 80)
	f.setRoute(operator, fleet, migrate.Route{To: ddbindex.NativeGSI, Percent: 100})
	fleet = f.deploy(declNativeKeepGSI, declNativeKeepGSI)
	f.step("rolled back to step 1, native routes", fleet, 60)
	f.setRoute(operator, fleet, migrate.Route{To: ddbindex.GSI, Percent: 100})
	fleet = f.deploy(declNativeKeepGSI, declGSIKeepNative)
	f.step("forward again, mixed", fleet, 60)
	fleet = f.deploy(declGSIKeepNative, declGSIKeepNative)
	f.step("step 3", fleet, 60)

	// Step 4: no read is served by the native GSI: drop it, then deploy
	// type=gsi.
	f.noReads(fleet, ddbindex.NativeGSI, ddbindex.GSI)
	scErr = schema.Check(ctx, v4, c)
	require.ErrorIs(t, scErr, ddbindex.ErrSchemaMismatch, "the plain type=gsi is refused while the native GSI exists")
	require.ErrorContains(t, scErr, "no longer kept")
	rbDropGSI(t, f, v0.TableName(), "by_status_n")
	require.NoError(t, schema.Check(ctx, v4, c), "with the native GSI gone, type=gsi matches the table")
	f.shadow = false
	fleet = f.deploy(declGSIKeepNative, declGSIWasNative)
	f.step("step 4, mixed after the drop", fleet, 80, ddbindex.NativeGSI)
	fleet = f.deploy(declGSIWasNative, declGSIWasNative)
	f.step("step 4", fleet, 40)
	f.figures("native GSI → derived GSI")
	require.Greater(t, f.ops, 3000/f.div)
}

package schema_test

// Tests of the plain flip of an index whose GSI has a physical name of its
// own (name=): Check and Prepare find that GSI whether or not the new
// declaration names it, and a declaration that keeps it (keep=gsi with
// gsi=) reads and writes it.

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// Step 0 of a migration of a GSI named otherwise than its index.
type ordStep0 struct {
	_       ddbindex.TableSpec `ddbindex:"orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,name=orders-by-status"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// The plain flip, which says nothing of the GSI.
type ordFlip struct {
	_       ddbindex.TableSpec `ddbindex:"orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// The plain flip, naming where the GSI was.
type ordFlipNamed struct {
	_       ddbindex.TableSpec `ddbindex:"orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,gsi=orders-by-status"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// The step that keeps the GSI, under its name.
type ordKeep struct {
	_       ddbindex.TableSpec `ddbindex:"orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi,gsi=orders-by-status"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

func TestCheckFlipOfNamedGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.TTL) // the index table's tombstones rely on it
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	writeThrough := func(o *ddbindex.Options) { o.WriteThrough = true } // no stream needed
	s0 := newTestTableNamed[ordStep0](t, c, naming)
	require.NoError(t, schema.Check(ctx, s0, c))
	for _, o := range []ordStep0{{ID: "o-1", Team: "TEAM-1", Status: "open", Created: 1}, {ID: "o-2", Team: "TEAM-1", Status: "open", Created: 2}} {
		_, err := s0.Put(ctx, o)
		require.NoError(t, err)
	}
	flip := scOpen[ordFlip](t, c, naming, writeThrough)
	flipNamed := scOpen[ordFlipNamed](t, c, naming, writeThrough)
	keep := scOpen[ordKeep](t, c, naming, writeThrough)
	table := indexTable(t, keep, "by_status")
	require.Equal(t, "orders-by-status", formOf(t, keep, "by_status", ddbindex.GSI).Index, "gsi= names the kept GSI")

	refused := func(err error, want string) {
		t.Helper()
		require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
		assert.Equal(t, "DDBX-500", ddbindex.Code(err))
		assert.Contains(t, err.Error(), "gsi form orders-by-status still exists and is no longer kept")
		assert.Contains(t, err.Error(), "Declare "+want+" until no instance reads that form")
	}
	// The plain flip, whether or not it names the GSI: Check refuses it,
	// naming what to declare instead, and so does Prepare, changing nothing
	// (a step-0 reader would miss every order written from now on).
	refused(schema.Check(ctx, flip, c), "type=table,keep=gsi,gsi=orders-by-status")
	refused(schema.Check(ctx, flipNamed, c), "type=table,keep=gsi,gsi=orders-by-status")
	rep, err := schema.Prepare(ctx, flip, c)
	refused(err, "type=table,keep=gsi,gsi=orders-by-status")
	assert.False(t, rep.Changed())
	rep, err = schema.Prepare(ctx, flipNamed, c)
	refused(err, "type=table,keep=gsi,gsi=orders-by-status")
	assert.False(t, rep.Changed())
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	require.Error(t, err, "Prepare created no index table")

	// The declaration that keeps the GSI: Prepare makes its index table,
	// Check accepts it, it reads the GSI, and its writes reach step 0's
	// readers.
	rep, err = schema.Prepare(ctx, keep, c)
	require.NoError(t, err)
	assert.Equal(t, []string{table}, rep.CreatedTables)
	assert.Empty(t, rep.CreatedGSIs, "the GSI exists, under its name")
	require.NoError(t, schema.Check(ctx, keep, c))
	ids := func(items []ordKeep) []string { return kpIDs(items, func(o ordKeep) string { return o.ID }) }
	assert.Equal(t, []string{"o-1", "o-2"}, ids(kpRead(t, keep, "TEAM-1", ddbindex.GSI)))
	_, err = keep.Put(ctx, ordKeep{ID: "o-3", Team: "TEAM-1", Status: "open", Created: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"o-1", "o-2", "o-3"}, kpIDs(kpRead(t, s0, "TEAM-1", ddbindex.GSI), func(o ordStep0) string { return o.ID }),
		"a step-0 reader sees what the step that keeps the GSI writes")
	assert.Equal(t, []string{"o-3"}, ids(kpRead(t, keep, "TEAM-1", ddbindex.IndexTable)), "the index table holds what was written since (before the backfill)")
}

// A flip that names the old GSI somewhere it is not is looked for there
// alone: a GSI of another index keyed alike is not taken for it.
func TestCheckFlipNamedElsewhere(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.TTL)
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	newTestTableNamed[ordStep0](t, c, naming)
	type ordOther struct {
		_       ddbindex.TableSpec `ddbindex:"orders"`
		_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,gsi=by-status-v2"`
		ID      string             `dynamodbav:"id" ddbindex:"pk"`
		Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
		Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
		Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	}
	other := scOpen[ordOther](t, c, naming, func(o *ddbindex.Options) { o.WriteThrough = true })
	_, err := schema.Prepare(ctx, other, c)
	require.NoError(t, err)
	require.NoError(t, schema.Check(ctx, other, c))
}

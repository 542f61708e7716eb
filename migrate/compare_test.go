package migrate

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// cmPost is a post of a global feed, read newest first through a GSI while
// an index table is kept beside it (step 1 of a migration).
type cmPost struct {
	_    ddbindex.TableSpec `ddbindex:"cm-posts"`
	_    ddbindex.IndexSpec `ddbindex:"newest,type=gsi,keep=table,pk=GPK,sk=GSK"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Feed *string            `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64              `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string             `dynamodbav:"text"`
}

// queryCounter is a client that counts the Query requests it sends, and
// those that carry per-call options.
type queryCounter struct {
	*dynamodb.Client
	queries, withOptions atomic.Int32
}

func (c *queryCounter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	if len(optFns) > 0 {
		c.withOptions.Add(1)
	}
	return c.Client.Query(ctx, in, optFns...)
}

// cmSetup creates the tables and writes n posts to the base table (every
// seventh without a feed: not in the index); the index table is empty.
func cmSetup(t *testing.T, n int) (*ddbindex.Table[cmPost], *queryCounter, []cmPost) {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	qc := &queryCounter{Client: c}
	tb, err := ddbindex.New[cmPost](qc, func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } })
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.CreateTable(t, c, in)
	}
	feed := "global"
	var posts []cmPost
	for i := range n {
		p := cmPost{ID: fmt.Sprintf("p%03d", i), At: 1733000000000 + int64(i%10)*1000, Text: fmt.Sprint("post ", i)}
		if i%7 != 3 {
			p.Feed = &feed
		}
		cmPutBase(t, tb, c, p)
		posts = append(posts, p)
	}
	return tb, qc, posts
}

// cmPutBase writes p to the base table alone.
func cmPutBase(t *testing.T, tb *ddbindex.Table[cmPost], c *dynamodb.Client, p cmPost) {
	t.Helper()
	img, err := tb.Marshal(p)
	require.NoError(t, err)
	_, err = c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: img})
	require.NoError(t, err)
}

// cmFill writes the index-table entries of posts, as the stream upkeep
// would.
func cmFill(t *testing.T, tb *ddbindex.Table[cmPost], posts []cmPost) {
	t.Helper()
	var changes []ddbindex.Change
	for _, p := range posts {
		img, err := tb.Marshal(p)
		require.NoError(t, err)
		changes = append(changes, ddbindex.Change{New: img, Version: "1"})
	}
	_, err := tb.Apply(context.Background(), changes)
	require.NoError(t, err)
}

// Compare reads whole queries on both forms and says where they differ:
// before the index table is filled, after (items, order, page boundaries,
// a deleted post), from either form, a value one form missed, and an item
// one form has alone.
func TestCompare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb, qc, posts := cmSetup(t, 60)
	queries := []ddbindex.Query[cmPost]{
		tb.Query("newest", "global").Limit(7),
		tb.Query("newest", "global").Desc().Limit(5),
		tb.Query("newest", "global").Where(ddbindex.Between(int64(1733000002000), int64(1733000006000))).Limit(4),
		tb.Query("newest", "global").Where(ddbindex.Ge(int64(1733000008000))).Desc().Limit(1),
	}

	// Before the fill the index table is empty: Compare says where.
	c, err := Compare(ctx, queries[0])
	require.NoError(t, err)
	require.False(t, c.Equal())
	require.Equal(t, [2]ddbindex.Kind{ddbindex.GSI, ddbindex.IndexTable}, c.Forms)
	require.Contains(t, c.Differences[0], "page 1: 7 items as a gsi, 0 as a table")

	cmFill(t, tb, posts)
	for i, q := range queries {
		c, err := Compare(ctx, q)
		require.NoError(t, err, "query %d", i)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
		require.Positive(t, c.Items, "query %d", i)
		require.Positive(t, c.Pages, "query %d", i)
	}

	// A deleted post, with its change applied to the index table as the
	// stream consumer would: both forms agree that it is gone.
	img, err := tb.Marshal(posts[11])
	require.NoError(t, err)
	_, err = qc.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tb.TableName()), Key: map[string]types.AttributeValue{"id": avS(posts[11].ID)}})
	require.NoError(t, err)
	_, err = tb.Apply(ctx, []ddbindex.Change{{Old: img, Version: "7"}})
	require.NoError(t, err)
	for i, q := range queries {
		c, err := Compare(ctx, q)
		require.NoError(t, err, "query %d", i)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
	}

	// From the table's side: the query's Via picks the first form.
	c, err = Compare(ctx, tb.Query("newest", "global").Desc().Limit(6).Via(ddbindex.IndexTable))
	require.NoError(t, err)
	require.True(t, c.Equal(), c.Differences)
	require.Equal(t, [2]ddbindex.Kind{ddbindex.IndexTable, ddbindex.GSI}, c.Forms)

	// Per-call options reach every request.
	before, withBefore := qc.queries.Load(), qc.withOptions.Load()
	_, err = Compare(ctx, queries[0], func(*dynamodb.Options) {})
	require.NoError(t, err)
	sent := qc.queries.Load() - before
	require.GreaterOrEqual(t, sent, int32(2*8), "8 pages of 7 on each form")
	require.Equal(t, sent, qc.withOptions.Load()-withBefore, "every request carries the options")

	// The index table misses a change: a post's text changed in the base
	// table only.
	changed := posts[4]
	changed.Text = "edited"
	cmPutBase(t, tb, qc.Client, changed)
	c, err = Compare(ctx, tb.Query("newest", "global").Limit(100))
	require.NoError(t, err)
	require.False(t, c.Equal())
	require.Len(t, c.Differences, 1)
	require.Contains(t, c.Differences[0], `{id="p004"} as a gsi, {id="p004"} as a table`)

	// An item only in the index table shifts every later item of its page.
	_, err = tb.Apply(ctx, []ddbindex.Change{{New: map[string]types.AttributeValue{
		"id": avS("zzz"), "feed": avS("global"), "at": avN("1733000000500"), "text": avS("ghost"),
	}, Version: "9"}})
	require.NoError(t, err)
	c, err = Compare(ctx, tb.Query("newest", "global").Limit(100))
	require.NoError(t, err)
	require.Contains(t, c.Differences[0], "items as a gsi")
	require.Len(t, c.Differences, maxDifferences, "at most 20")
}

// Compare refuses, before any request, what has no two forms to compare:
// the base table, an index with one form, and a query that cannot run.
func TestCompareRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, err := ddbindex.New[kpStep0](nil)
	require.NoError(t, err)
	_, err = Compare(ctx, one.Query("", "p1"))
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, "the base table")
	_, err = Compare(ctx, one.Query("by_status", "T"))
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, "an index with one form")
	two, err := ddbindex.New[kpStep1](nil)
	require.NoError(t, err)
	_, err = Compare(ctx, two.Query("by_status", "T").Limit(-1))
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, "a negative Limit")
	_, err = Compare(ctx, two.Query("nope", "T"))
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, "no such index")
}

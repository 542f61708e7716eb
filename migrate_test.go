package ddbindex

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// mgPostGSI and mgPostTable declare the same feed index, one token apart:
// the GSI a service reads today and the index table it migrates to.
type mgPostGSI struct {
	_    TableSpec `ddbindex:"mg-posts"`
	_    IndexSpec `ddbindex:"newest,type=gsi,pk=GPK,sk=GSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed *string   `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string    `dynamodbav:"text"`
}

type mgPostTable struct {
	_    TableSpec `ddbindex:"mg-posts"`
	_    IndexSpec `ddbindex:"newest,type=table,pk=GPK,sk=GSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed *string   `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string    `dynamodbav:"text"`
}

// mgSetup creates the GSI model's tables and the index table the migration
// fills, and writes n posts (every seventh without a feed: not in the index).
func mgSetup(t *testing.T, n int) (*Table[mgPostGSI], *Table[mgPostTable], []mgPostGSI) {
	t.Helper()
	gsi, c := newTestTable[mgPostGSI](t)
	table, err := New[mgPostTable](c, func(o *Options) { o.TableName = gsi.opts.TableName })
	require.NoError(t, err)
	in := tableInputs(table, false)[1]
	ddbtest.CreateTable(t, c, in)
	feed := "global"
	var posts []mgPostGSI
	for i := range n {
		p := mgPostGSI{ID: fmt.Sprintf("p%03d", i), At: 1733000000000 + int64(i%10)*1000, Text: fmt.Sprint("post ", i)}
		if i%7 != 3 {
			p.Feed = &feed
		}
		_, err := gsi.Put(context.Background(), p)
		require.NoError(t, err)
		posts = append(posts, p)
	}
	return gsi, table, posts
}

func TestBackfillThenCompare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gsi, table, posts := mgSetup(t, 60)
	sparse := 0
	for _, p := range posts {
		if p.Feed == nil {
			sparse++
		}
	}

	queries := []Query[mgPostGSI]{
		gsi.Query("newest", "global").Limit(7),
		gsi.Query("newest", "global").Desc().Limit(5),
		gsi.Query("newest", "global").Where(Between(int64(1733000002000), int64(1733000006000))).Limit(4),
		gsi.Query("newest", "global").Where(Ge(int64(1733000008000))).Desc().Limit(1),
	}

	// Before the backfill the index table is empty: Compare says where.
	c, err := queries[0].Compare(ctx, "")
	require.NoError(t, err)
	require.False(t, c.Equal())
	require.Contains(t, c.Differences[0], "page 1: 7 items as a gsi, 0 as a table")

	st, err := fillIndex(ctx, table, table.client.c.(ScanAPI), "newest")
	require.NoError(t, err)
	require.Equal(t, fillStats{Scanned: 60, Written: 60 - sparse, Sparse: sparse}, st)

	for i, q := range queries {
		c, err := q.Compare(ctx, "")
		require.NoError(t, err, "query %d", i)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
		require.Positive(t, c.Items, "query %d", i)
	}

	// A second backfill leaves every entry as it is.
	st, err = fillIndex(ctx, table, table.client.c.(ScanAPI), "newest")
	require.NoError(t, err)
	require.Equal(t, fillStats{Scanned: 60, Skipped: 60 - sparse, Sparse: sparse}, st)

	// A deleted post, with its change applied to the index table as the
	// stream consumer would: both paths agree that it is gone.
	img, err := gsi.Marshal(posts[11])
	require.NoError(t, err)
	require.NoError(t, gsi.Delete(ctx, posts[11]))
	_, err = table.Apply(ctx, []Change{{Old: img, Version: "7"}})
	require.NoError(t, err)
	for i, q := range queries {
		c, err := q.Compare(ctx, "")
		require.NoError(t, err, "query %d", i)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
	}

	// A backfill after it does not bring the tombstoned entry back.
	st, err = fillIndex(ctx, table, table.client.c.(ScanAPI), "newest")
	require.NoError(t, err)
	require.Equal(t, 59-sparse, st.Skipped)
	require.Zero(t, st.Written)

	// Compare from the table's side too: the alternate of an index table is
	// the GSI.
	c, err = table.Query("newest", "global").Desc().Limit(6).Compare(ctx, "")
	require.NoError(t, err)
	require.True(t, c.Equal(), c.Differences)
}

func TestCompareReportsDifferences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gsi, table, posts := mgSetup(t, 20)
	_, err := fillIndex(ctx, table, table.client.c.(ScanAPI), "newest")
	require.NoError(t, err)

	// The index table misses a change: a post's text changed in the base
	// table only.
	changed := posts[4]
	changed.Text = "edited"
	putBase(t, gsi, changed)
	c, err := gsi.Query("newest", "global").Limit(50).Compare(ctx, "")
	require.NoError(t, err)
	require.False(t, c.Equal())
	require.Len(t, c.Differences, 1)
	require.Contains(t, c.Differences[0], `id="p004"`)

	// An item only in the index table shifts every later item of its page.
	_, err = table.Apply(ctx, []Change{{New: map[string]typesAV{
		"id": avS("zzz"), "feed": avS("global"), "at": avN("1733000000500"), "text": avS("ghost"),
	}, Version: "9"}})
	require.NoError(t, err)
	c, err = gsi.Query("newest", "global").Limit(50).Compare(ctx, "")
	require.NoError(t, err)
	require.Contains(t, c.Differences[0], "items as a gsi")
	require.LessOrEqual(t, len(c.Differences), maxDifferences)
}

// TestCompareRefusals: Compare of the base table, which has one form, is
// refused. (Backfill's refusals are tested in package migrate.)
func TestCompareRefusals(t *testing.T) {
	t.Parallel()
	gsi, err := New[mgPostGSI](nil)
	require.NoError(t, err)
	_, err = gsi.Query("", "p1").Compare(context.Background(), "")
	require.ErrorIs(t, err, ErrInvalidQuery)
}

type typesAV = types.AttributeValue

func avS(s string) typesAV { return &types.AttributeValueMemberS{Value: s} }
func avN(s string) typesAV { return &types.AttributeValueMemberN{Value: s} }

package ddbindex

import (
	"context"
	"fmt"
	"reflect"
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

// mgComparison is what mgCompare found.
type mgComparison struct {
	Items       int      // items read through the first declaration
	Differences []string // empty when both agree on items, order and page boundaries
}

func (c mgComparison) Equal() bool { return len(c.Differences) == 0 }

// mgCompare reads q to its end, page by page, through its own declaration
// and through other, the same model declaring the index as the other type
// (a GSI and the index table that replaces it), and lists every difference
// in items, order, page boundaries and tombstone exclusion; conv converts
// other's items. (Package migrate's Compare does the same through the two
// forms of an index that keeps both.)
func mgCompare[A, B any](t *testing.T, q Query[A], other *Table[B], conv func(B) A) mgComparison {
	t.Helper()
	ctx := context.Background()
	qb := Query[B]{t: other, index: q.index, partition: q.partition, cond: q.cond, desc: q.desc, limit: q.limit, cursor: q.cursor,
		filter: q.filter, project: q.project, consistent: q.consistent, deleted: q.deleted}
	var a [][]A
	for cursor := q.cursor; ; {
		p, err := q.After(cursor).Page(ctx)
		require.NoError(t, err)
		a = append(a, p.Items)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	var b [][]A
	for cursor := qb.cursor; ; {
		p, err := qb.After(cursor).Page(ctx)
		require.NoError(t, err)
		items := make([]A, len(p.Items))
		for i, it := range p.Items {
			items[i] = conv(it)
		}
		b = append(b, items)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	da, _ := q.t.index(q.index)
	db, _ := other.index(q.index)
	var c mgComparison
	for i := range max(len(a), len(b)) {
		var pa, pb []A
		if i < len(a) {
			pa = a[i]
			c.Items += len(pa)
		}
		if i < len(b) {
			pb = b[i]
		}
		if len(pa) != len(pb) {
			c.Differences = append(c.Differences, fmt.Sprintf("page %d: %d items as a %s, %d as a %s", i+1, len(pa), da.kind, len(pb), db.kind))
		}
		for j := range min(len(pa), len(pb)) {
			if !reflect.DeepEqual(pa[j], pb[j]) {
				c.Differences = append(c.Differences, fmt.Sprintf("page %d item %d: %s as a %s, %s as a %s", i+1, j+1, q.t.mustBaseKey(pa[j]), da.kind, q.t.mustBaseKey(pb[j]), db.kind))
			}
		}
	}
	return c
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

	toGSI := func(p mgPostTable) mgPostGSI { return mgPostGSI(p) }
	// Before the backfill the index table is empty: the comparison says
	// where.
	c := mgCompare(t, queries[0], table, toGSI)
	require.False(t, c.Equal())
	require.Contains(t, c.Differences[0], "page 1: 7 items as a gsi, 0 as a table")

	st, err := fillIndex(ctx, table, table.client.c.(scanAPI), "newest")
	require.NoError(t, err)
	require.Equal(t, fillStats{Scanned: 60, Written: 60 - sparse, Sparse: sparse}, st)

	for i, q := range queries {
		c := mgCompare(t, q, table, toGSI)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
		require.Positive(t, c.Items, "query %d", i)
	}

	// A second backfill leaves every entry as it is.
	st, err = fillIndex(ctx, table, table.client.c.(scanAPI), "newest")
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
		c := mgCompare(t, q, table, toGSI)
		require.True(t, c.Equal(), "query %d: %v", i, c.Differences)
	}

	// A backfill after it does not bring the tombstoned entry back.
	st, err = fillIndex(ctx, table, table.client.c.(scanAPI), "newest")
	require.NoError(t, err)
	require.Equal(t, 59-sparse, st.Skipped)
	require.Zero(t, st.Written)

	// Compare from the table's side too.
	c = mgCompare(t, table.Query("newest", "global").Desc().Limit(6), gsi, func(p mgPostGSI) mgPostTable { return mgPostTable(p) })
	require.True(t, c.Equal(), c.Differences)
}

// (Compare's reports and refusals are tested in package migrate, on an
// index that keeps both forms.)

type typesAV = types.AttributeValue

func avS(s string) typesAV { return &types.AttributeValueMemberS{Value: s} }

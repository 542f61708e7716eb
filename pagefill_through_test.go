package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// ptItem has a GSI on a native String sort key. Read in descending order, a
// start key just before an item is the item's value followed by U+0000:
// nothing sorts between the two.
type ptItem struct {
	_    TableSpec `ddbindex:"pt_items,softdelete"`
	_    IndexSpec `ddbindex:"by_name,type=gsi"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"by_name.pk"`
	Name string    `dynamodbav:"name" ddbindex:"by_name.sk"`
	Body string    `dynamodbav:"body"`
}

// ptLoad writes items named n000, n001, ... in feed "f", each with body, and
// deletes (soft) those dead says; it returns the live names in descending
// order.
func ptLoad(t *testing.T, tb *Table[ptItem], dead []bool, body string) []string {
	t.Helper()
	ctx := context.Background()
	var live []string
	for i, d := range dead {
		it := ptItem{ID: fmt.Sprintf("id%03d", i), Feed: "f", Name: fmt.Sprintf("n%03d", i), Body: body}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		if d {
			require.NoError(t, tb.Delete(ctx, it))
		} else {
			live = append(live, it.Name)
		}
	}
	slices.Reverse(live)
	return live
}

// TestPageFillNativeStringDesc: after a run of tombstones, the next page of
// a native String read in descending order starts just before the next
// live item, so it reads none of the run again; the partition page after
// page is the ground truth.
func TestPageFillNativeStringDesc(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[ptItem](t)
	// Descending: n199..n198 live (page 1), a run of 150 tombstones, then
	// live items.
	const n, run = 200, 150
	dead := make([]bool, n)
	for i := n - 3; i > n-3-run; i-- {
		dead[i] = true
	}
	live := ptLoad(t, tb, dead, "")
	ctx := context.Background()
	q := tb.Query("by_name", "f").Desc().Limit(2)
	d, err := tb.index("by_name")
	require.NoError(t, err)
	readAhead(t, q) // page 1 reads past the run, to the next live item
	p1, err := q.Page(ctx)
	require.NoError(t, err)
	require.Equal(t, live[:2], ptNames(p1.Items))
	require.Equal(t, run, p1.Stats.Filtered, "page 1 read the run")

	c, err := decodeCursor(d, p1.Cursor, true, &tb.opts)
	require.NoError(t, err)
	require.False(t, c.through, "the cursor carries the next live item")
	require.Equal(t, live[2], c.next[d.slot(d.sk.parts[0].f)])

	p2, err := q.After(p1.Cursor).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, live[2:4], ptNames(p2.Items))
	require.Zero(t, p2.Stats.Filtered, "page 2 starts just before its first item: no tombstone of the run again")

	// The rest of the partition, page after page, is the ground truth.
	got := append(ptNames(p1.Items), ptNames(p2.Items)...)
	for cursor := p2.Cursor; cursor != ""; {
		p, err := q.After(cursor).Page(ctx)
		require.NoError(t, err)
		got = append(got, ptNames(p.Items)...)
		cursor = p.Cursor
	}
	require.Equal(t, live, got)
}

// TestPageFillLookAheadWhereFree: with items of about 1 KB a page of 20 fills
// 5 read units and the look-ahead item would start a sixth, so once a call
// knows the items' size it reads exactly the page, as a plain query does, and
// its cursor may lead to an empty page; with small items the look-ahead is
// free and read.
func TestPageFillLookAheadWhereFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		body     int
		lookAhed bool
	}{
		{"1 KB items", 960, false},
		{"small items", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tb, _ := newTestTable[ptItem](t)
			live := ptLoad(t, tb, make([]bool, 40), strings.Repeat("x", c.body))
			q := tb.Query("by_name", "f").Desc().Limit(20)
			// Page 1 learns the size; the call after it reads the same page.
			p1, err := q.Page(ctx)
			require.NoError(t, err)
			require.Equal(t, live[:20], ptNames(p1.Items))
			p1, err = q.Page(ctx)
			require.NoError(t, err)
			require.Equal(t, live[:20], ptNames(p1.Items))
			p2, err := q.After(p1.Cursor).Page(ctx)
			require.NoError(t, err)
			require.Equal(t, live[20:], ptNames(p2.Items))
			if !c.lookAhed {
				require.Equal(t, 20, p1.Stats.Read, "page 1 reads no look-ahead item")
				require.Equal(t, 20, p2.Stats.Read, "page 2 reads no look-ahead item")
				require.NotEmpty(t, p2.Cursor, "without the look-ahead, the end is not known")
				p3, err := q.After(p2.Cursor).Page(ctx)
				require.NoError(t, err)
				require.Empty(t, p3.Items)
				require.Empty(t, p3.Cursor)
				return
			}
			require.Equal(t, 21, p1.Stats.Read, "page 1 reads the look-ahead item")
			require.Empty(t, p2.Cursor, "the look-ahead says nothing follows page 2")
		})
	}
}

func ptNames(items []ptItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Name
	}
	return out
}

// ptTied keeps a GSI on a native Number sort key, whose values may repeat,
// and its index table, whose sort key ends with the base key.
type ptTied struct {
	_    TableSpec `ddbindex:"pt_tied,softdelete"`
	_    IndexSpec `ddbindex:"by_score,type=gsi,keep=table"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"by_score.pk"`
	Rank int64     `dynamodbav:"rank" ddbindex:"by_score.sk"`
}

// TestPageFillThroughTiedOtherForm: a GSI orders the entries that share a
// native sort value as DynamoDB does, an index table by the base key. The
// last position a page evaluated on one is followed only on a form that
// orders ties the same way; on the other form the next page starts after the
// page's last item, so no live tie is skipped, whatever order the server
// gives ties.
func TestPageFillThroughTiedOtherForm(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions) // write-through keeps the index table
	ctx := context.Background()
	tb, _ := newTestTable[ptTied](t, func(o *Options) { o.WriteThrough = true })
	// Every entry has rank 7: ids i00, i01 live, a run of 60 dead, then
	// i62..i65 live.
	var live []string
	for i := range 66 {
		it := ptTied{ID: fmt.Sprintf("i%02d", i), Feed: "f", Rank: 7}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		if i >= 2 && i < 62 {
			require.NoError(t, tb.Delete(ctx, it))
		} else {
			live = append(live, it.ID)
		}
	}
	ids := func(items []ptTied) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = it.ID
		}
		return out
	}
	d, err := tb.index("by_score")
	require.NoError(t, err)
	// A call on each form first, so that later calls know the entries'
	// size and read one item past a page.
	for _, k := range []Kind{GSI, IndexTable} {
		_, err := tb.Query("by_score", "f").Limit(2).Via(k).Page(ctx)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		mint, use Kind
		follows   bool
	}{
		{GSI, GSI, true},
		{GSI, IndexTable, false},
		{IndexTable, GSI, false},
		{IndexTable, IndexTable, true},
	} {
		t.Run(c.mint.String()+"-then-"+c.use.String(), func(t *testing.T) {
			q := tb.Query("by_score", "f").Limit(2)
			p1, err := q.Via(c.mint).Page(ctx)
			require.NoError(t, err)
			require.Len(t, p1.Items, 2)
			cur, err := decodeCursor(d, p1.Cursor, false, &tb.opts)
			require.NoError(t, err)
			require.NotNil(t, cur.next, "page 1 read into the run, and its cursor says how far")
			// Page 1 stops in the run: its cursor carries the last position
			// evaluated, and says whether ties were in the server's order.
			require.True(t, cur.through)
			require.Equal(t, c.mint == GSI, cur.tied, "the cursor says whether ties were in the server's order")

			// The rest, page by page, on the other form (or the same).
			got := ids(p1.Items)
			var filtered int
			for cursor, first := p1.Cursor, true; cursor != ""; first = false {
				p, err := q.Via(c.use).After(cursor).Page(ctx)
				require.NoError(t, err)
				if first {
					filtered = p.Stats.Filtered
				}
				got = append(got, ids(p.Items)...)
				cursor = p.Cursor
			}
			require.ElementsMatch(t, live, got, "every live item once, in any tie order")
			require.Len(t, got, len(live))
			// Page 1 read some of the run; the page after it reads all 60
			// again exactly when it starts after page 1's last item, as on
			// a GSI from an index table's live position (no start key just
			// before a tied entry).
			if c.follows {
				require.Less(t, filtered, 60, "the next page starts past what page 1 read dead")
			} else {
				require.Equal(t, 60, filtered, "the next page starts after page 1's last item")
			}
		})
	}
}

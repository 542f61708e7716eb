package ddbindex

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// pfCycleClient answers every Query with no items and the next of its
// LastEvaluatedKeys in turn, round and round: a server that cycles between
// positions instead of advancing. A canned response: it tests the pager's
// guard, not DynamoDB.
type pfCycleClient struct {
	curxNoCallClient
	keys  []map[string]types.AttributeValue
	calls int
}

func (c *pfCycleClient) Query(_ context.Context, _ *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls++
	if c.calls > 20 {
		c.t.Errorf("the pager sent %d requests to a server cycling through %d positions", c.calls, len(c.keys))
		return &dynamodb.QueryOutput{}, nil
	}
	return &dynamodb.QueryOutput{LastEvaluatedKey: c.keys[(c.calls-1)%len(c.keys)]}, nil
}

// TestPageFillCycleGuard: a server whose LastEvaluatedKey goes A, B, C, A
// ends the call with ErrNoProgress at the first repeat, not only when an
// answer repeats the request's own start key.
func TestPageFillCycleGuard(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		c := &pfCycleClient{curxNoCallClient: curxNoCallClient{t: t}}
		tb, err := New[curxTicket](c)
		require.NoError(t, err)
		d := curxDef(t, tb, "by_status")
		for _, it := range curxItems("T1", n) {
			k, err := d.startKey(curxPos(t, tb, d, it))
			require.NoError(t, err)
			c.keys = append(c.keys, k)
		}
		p, err := tb.Query("by_status", "T1").Limit(5).Page(context.Background())
		require.ErrorIs(t, err, ErrNoProgress)
		require.Contains(t, err.Error(), "already answered in this call")
		require.Nil(t, p)
		require.Equal(t, n+1, c.calls, "stops at the first repeated position")
	}
}

// pfLong is a model whose keys can be long.
type pfLong struct {
	_  TableSpec `ddbindex:"pf-long"`
	PK string    `dynamodbav:"pk" ddbindex:"pk"`
	SK string    `dynamodbav:"sk" ddbindex:"sk"`
}

// TestPageFillRefusesToMintOversizedCursor: a page whose cursor would be over
// Options.MaxCursorBytes fails, saying so, instead of handing out a cursor the
// next call would refuse.
func TestPageFillRefusesToMintOversizedCursor(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[pfLong](t, func(o *Options) { o.MaxCursorBytes = 200 })
	putBase(t, tb, pfLong{PK: "p", SK: strings.Repeat("a", 100)}, pfLong{PK: "p", SK: strings.Repeat("b", 300)}, pfLong{PK: "p", SK: "c"})
	p, err := tb.Query("", "p").Limit(1).Page(context.Background())
	require.NoError(t, err, "a 100-byte key makes a cursor under 200 bytes")
	require.NotEmpty(t, p.Cursor)
	_, err = tb.Query("", "p").Limit(1).After(p.Cursor).Page(context.Background())
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.Contains(t, err.Error(), "over Options.MaxCursorBytes (200)")
}

// pfStrictClient refuses, as a server that checks start keys against its
// items would, every ExclusiveStartKey whose sort key is not the key of an
// item it has returned or evaluated: the page fill must then fall back to
// starting after the page's last item.
type pfStrictClient struct {
	Client
	sk      string
	seen    map[string]bool
	refused int
}

func (c *pfStrictClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if esk := in.ExclusiveStartKey; esk != nil && !c.seen[avString(esk[c.sk])] {
		c.refused++
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "The provided starting key is invalid"}
	}
	out, err := c.Client.Query(ctx, in, optFns...)
	if err == nil {
		for _, it := range out.Items {
			c.seen[avString(it[c.sk])] = true
		}
		if out.LastEvaluatedKey != nil {
			c.seen[avString(out.LastEvaluatedKey[c.sk])] = true
		}
	}
	return out, err
}

// TestPageFillStartKeyFallback: a server that refuses a start key built
// before a cursor's next item gets one built from the page's last item
// instead, and the pages are unchanged.
func TestPageFillStartKeyFallback(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[benchFeedItem](t)
	dead := make([]bool, 120)
	for i := range dead {
		dead[i] = i%10 != 0 && i%10 != 1 // runs of 8 tombstones
	}
	benchLoad(t, tb, "c", dead)
	read := func(tb *Table[benchFeedItem]) (ids []string) {
		cursor := ""
		for {
			p, err := tb.Query("feed", "c").Limit(3).After(cursor).Page(context.Background())
			require.NoError(t, err)
			for _, it := range p.Items {
				ids = append(ids, it.ID)
			}
			if cursor = p.Cursor; cursor == "" {
				return ids
			}
		}
	}
	want := read(coldMemo(tb))
	require.Len(t, want, 24)
	strict := &pfStrictClient{Client: tb.client, sk: "_sk", seen: map[string]bool{}}
	st := coldMemo(tb)
	st.client = calls{strict}
	require.Equal(t, want, read(st))
	require.Equal(t, 1, strict.refused, "the Table stops building start keys before next items once refused")
	// A refused request counts as a request.
	st = coldMemo(tb)
	strict.refused, strict.seen = 0, map[string]bool{}
	st.client = calls{strict}
	p, err := st.Query("feed", "c").Limit(3).Page(context.Background())
	require.NoError(t, err)
	p2, err := st.Query("feed", "c").Limit(3).After(p.Cursor).Page(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, strict.refused)
	require.Equal(t, p2.Stats.Requests, 2, "the refused request and the one after it")
}

// TestPageFillNextDependsOnTheRead: a cursor's next position says which items
// the page fill found dead under the page's filter; a query with another
// filter, or with tombstones included, starts after the last item instead,
// so it returns what lies between. With Options.PlainCursors no next
// position is minted at all.
func TestPageFillNextDependsOnTheRead(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[benchFeedItem](t)
	dead := make([]bool, 30)
	for i := range dead {
		dead[i] = i >= 2 && i < 20 // 2 live, 18 tombstones, 10 live
	}
	benchLoad(t, tb, "c", dead)
	ctx := context.Background()
	ids := func(p *Page[benchFeedItem]) (out []string) {
		for _, it := range p.Items {
			out = append(out, it.ID)
		}
		return out
	}
	readAhead(t, tb.Query("feed", "c"))
	p1, err := tb.Query("feed", "c").Limit(2).Page(ctx)
	require.NoError(t, err)
	d, _ := tb.index("feed")
	c, err := decodeCursor(d, p1.Cursor, false, &tb.opts)
	require.NoError(t, err)
	require.NotNil(t, c.next, "the page read one live item ahead")

	// Same read: starts at the next live item.
	p2, err := tb.Query("feed", "c").Limit(2).After(p1.Cursor).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"item-00021", "item-00022"}, ids(p2))
	require.Zero(t, p2.Stats.Filtered, "it reads no tombstone of the gap again")

	// Tombstones included: the 18 tombstones between come first.
	p3, err := tb.Query("feed", "c").IncludeDeleted().Limit(2).After(p1.Cursor).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"item-00003", "item-00004"}, ids(p3))

	// Another filter: it starts after the last item too (and the filter
	// holds for the items it returns).
	p4, err := tb.Query("feed", "c").Filter(expression.Name("votes").GreaterThanEqual(expression.Value(0))).Limit(2).After(p1.Cursor).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"item-00021", "item-00022"}, ids(p4))
	require.Equal(t, 18, p4.Stats.Filtered, "it read the tombstones again")

	plain := coldMemo(tb)
	plain.opts.PlainCursors = true
	pp, err := plain.Query("feed", "c").Limit(2).Page(ctx)
	require.NoError(t, err)
	cp, err := decodeCursor(d, pp.Cursor, false, &tb.opts)
	require.NoError(t, err)
	require.Nil(t, cp.next, "PlainCursors mints no next position")
	require.Equal(t, c.at, cp.at)
	raw, err := cursorEncoding.DecodeString(pp.Cursor)
	require.NoError(t, err)
	require.Zero(t, raw[1]&flagNext, "a cursor releases before next positions decode")
}

// TestPageFillHugeLimit: a Limit as large as an int goes returns every live
// item (the look-ahead and the request sizes cannot overflow), and no request
// asks for more than maxRequestItems.
func TestPageFillHugeLimit(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[benchFeedItem](t)
	dead := make([]bool, 50)
	for i := range dead {
		dead[i] = i%4 == 0
	}
	benchLoad(t, tb, "c", dead)
	rec := &qtRecorder{Client: tb.client}
	rt := coldMemo(tb)
	rt.client = calls{rec}
	for _, limit := range []int{math.MaxInt, math.MaxInt32, math.MaxInt32 - 1, maxPageItems + 5} {
		rec.reset()
		p, err := rt.Query("feed", "c").Limit(limit).Page(context.Background())
		require.NoError(t, err, "limit %d", limit)
		require.Len(t, p.Items, 37, "limit %d", limit)
		require.Empty(t, p.Cursor)
		n := 0
		for it, err := range rt.Query("feed", "c").Limit(limit).All(context.Background()) {
			require.NoError(t, err)
			require.NotEmpty(t, it.ID)
			n++
		}
		require.Equal(t, 37, n)
		ok, err := rt.Query("feed", "c").Limit(limit).Exists(context.Background())
		require.NoError(t, err)
		require.True(t, ok)
		for _, in := range rec.recorded() {
			require.NotNil(t, in.Limit)
			require.Positive(t, *in.Limit)
			require.LessOrEqual(t, int(*in.Limit), maxRequestItems)
		}
	}
}

// pfNoSortGSI and pfNoSortTbl declare an index with a partition and no sort
// component: as a GSI it has no sort key, as an index table its sort key is
// the base key alone.
type pfNoSortGSI struct {
	_    TableSpec `ddbindex:"pf-nosort"`
	_    IndexSpec `ddbindex:"by_team,type=gsi"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Team string    `dynamodbav:"team" ddbindex:"by_team.pk"`
}

type pfNoSortTbl struct {
	_    TableSpec `ddbindex:"pf-nosort"`
	_    IndexSpec `ddbindex:"by_team,type=table"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Team string    `dynamodbav:"team" ddbindex:"by_team.pk"`
}

// TestPageFillIndexWithoutSortComponents: pages of an index without sort
// components follow their cursors (which carry a next position) to the end,
// on both forms, each item once.
func TestPageFillIndexWithoutSortComponents(t *testing.T) {
	t.Parallel()
	g, _ := newTestTable[pfNoSortGSI](t)
	tb, _ := newTestTable[pfNoSortTbl](t)
	want := []string{"a", "b", "c", "d", "e"}
	for i, id := range want {
		putBase(t, g, pfNoSortGSI{ID: id, Team: "T"})
		require.True(t, putEntry(t, tb, "by_team", pfNoSortTbl{ID: id, Team: "T"}, false))
		if i%2 == 0 { // and tombstones between them
			require.True(t, putEntry(t, tb, "by_team", pfNoSortTbl{ID: id + "-gone", Team: "T"}, true))
		}
	}
	pages := func(next func(cursor string) (ids []string, cursor2 string, err error)) []string {
		var all []string
		cursor := ""
		for range 10 {
			ids, c, err := next(cursor)
			require.NoError(t, err)
			all = append(all, ids...)
			if cursor = c; cursor == "" {
				break
			}
		}
		slices.Sort(all)
		return all
	}
	require.Equal(t, want, pages(func(cursor string) ([]string, string, error) {
		p, err := g.Query("by_team", "T").Limit(2).After(cursor).Page(context.Background())
		if err != nil {
			return nil, "", err
		}
		var ids []string
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		return ids, p.Cursor, nil
	}), "GSI")
	require.Equal(t, want, pages(func(cursor string) ([]string, string, error) {
		p, err := tb.Query("by_team", "T").Limit(2).After(cursor).Page(context.Background())
		if err != nil {
			return nil, "", err
		}
		var ids []string
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		return ids, p.Cursor, nil
	}), "index table")
}

package ddbindex

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Tests of key checks: Put and Move check every key they imply,
// index-table keys included, before any request and in every upkeep mode,
// with the code the stream consumer uses: an item whose index-table entry
// the consumer would refuse on every pass is never written.

// wcItem has index tables whose keys the base and GSI keys do not check: a
// long sort component (the index-table key appends the base key), a unixms
// time and a fixed-width unixms time.
type wcItem struct {
	_     TableSpec `ddbindex:"wc-items"`
	_     IndexSpec `ddbindex:"by_title,type=table"`
	_     IndexSpec `ddbindex:"by_ms,type=table"`
	_     IndexSpec `ddbindex:"by_w13,type=table"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Team  string    `dynamodbav:"team" ddbindex:"by_title.pk;by_ms.pk;by_w13.pk"`
	Title string    `dynamodbav:"title" ddbindex:"by_title.sk"`
	At    time.Time `dynamodbav:"at" ddbindex:"by_ms.sk,format=unixms"`
	Since time.Time `dynamodbav:"since" ddbindex:"by_w13.sk,format=unixms,width=13"`
	Ver   int64     `dynamodbav:"ver" ddbindex:"version"`
}

func TestWriteRefusesIndexTableKeysBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ok := wcItem{ID: "i1", Team: "T", Title: "short", At: time.UnixMilli(1733000000000).UTC(), Since: time.UnixMilli(1733000000000).UTC(), Ver: 1}
	for _, tc := range []struct {
		name string
		bad  func(*wcItem)
		want string
	}{
		// 1,000 bytes of title and a 30-byte base key: 1,031 bytes as the
		// index table's sort key, which DynamoDB refuses.
		{"a sort key over 1,024 bytes once the base key is appended", func(it *wcItem) {
			it.Title = strings.Repeat("t", 1000)
			it.ID = strings.Repeat("i", 30)
		}, "over DynamoDB's 1024-byte limit"},
		{"a sub-millisecond time in a unixms component", func(it *wcItem) { it.At = it.At.Add(time.Microsecond) }, "sub-millisecond"},
		{"a zero time in a width=13 component", func(it *wcItem) { it.Since = time.Time{} }, "fixed-width"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := ok
			tc.bad(&bad)
			// What the stream consumer would do with the stored item: refuse it.
			tb, err := New[wcItem](nil)
			require.NoError(t, err)
			img, err := tb.Marshal(bad)
			require.NoError(t, err, "base and GSI keys are fine: only the index table's key is not")
			_, err = tb.IndexWrites(Change{New: img, Version: "1"})
			require.Error(t, err, "the consumer refuses it")
			require.ErrorContains(t, err, tc.want)

			for _, wt := range []bool{false, true} {
				t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
					cl := &wrNoClient{}
					tb, err := New[wcItem](cl, func(o *Options) { o.WriteThrough = wt })
					require.NoError(t, err)
					fresh := bad
					fresh.Ver = 0
					_, err = tb.Put(t.Context(), fresh)
					require.ErrorIs(t, err, ErrInvalidWrite)
					require.ErrorContains(t, err, tc.want)
					require.ErrorContains(t, err, "index table entry")
					_, err = tb.Put(t.Context(), bad)
					require.ErrorIs(t, err, ErrInvalidWrite)
					_, err = tb.Move(t.Context(), ok, bad)
					require.ErrorIs(t, err, ErrInvalidWrite)
					require.ErrorContains(t, err, tc.want)
					require.Zero(t, cl.calls.Load(), "no request may be sent")
				})
			}
		})
	}
	// The good item passes the same checks (and reaches the client).
	cl := &wrNoClient{}
	tb, err := New[wcItem](cl)
	require.NoError(t, err)
	_, err = tb.Put(t.Context(), ok)
	require.ErrorIs(t, err, errWrNoClient)
}

// wcScore has a float in composite keys: the base sort key, a GSI's, and
// an index table's.
type wcScore struct {
	_     TableSpec `ddbindex:"wc-scores,sk=SK"`
	_     IndexSpec `ddbindex:"by_score,type=gsi,pk=GPK,sk=GSK"`
	_     IndexSpec `ddbindex:"ranked,type=table"`
	Board string    `dynamodbav:"board" ddbindex:"pk;by_score.pk;ranked.pk"`
	Score float64   `dynamodbav:"score" ddbindex:"sk:0;by_score.sk;ranked.sk"`
	Other float64   `dynamodbav:"other" ddbindex:"ranked.sk:1"`
	ID    string    `dynamodbav:"id" ddbindex:"sk:1"`
}

// TestWriteRefusesFloatsOutsideTheNumberRange: a float component that no
// DynamoDB Number can hold (the item's own attribute is one) is refused
// before any request in every composite key, base, GSI and index table,
// as a native Number key already was; in a query's partition too. A bound
// of a condition is no stored value and may be infinite.
func TestWriteRefusesFloatsOutsideTheNumberRange(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{math.Inf(1), math.Inf(-1), 1e200, -1e126, 1e-300} {
		for _, set := range []func(*wcScore){
			func(s *wcScore) { s.Score = f },
			func(s *wcScore) { s.Other = f }, // in the index table's key only
		} {
			for _, wt := range []bool{false, true} {
				cl := &wrNoClient{}
				tb, err := New[wcScore](cl, func(o *Options) { o.WriteThrough = wt })
				require.NoError(t, err)
				it := wcScore{Board: "b", Score: 1.5, Other: 2, ID: "x"}
				set(&it)
				_, err = tb.Put(t.Context(), it)
				require.ErrorIs(t, err, ErrInvalidWrite, "%g", f)
				require.ErrorContains(t, err, "outside the range of a DynamoDB Number")
				require.Zero(t, cl.calls.Load(), "%g: no request", f)
			}
		}
	}
	tb, err := New[wcScore](&wrNoClient{})
	require.NoError(t, err)
	_, err = tb.Marshal(wcScore{Board: "b", Score: 1e125, Other: -1e-129, ID: "x"})
	require.NoError(t, err, "the edges of the range are fine")
	d, err := tb.index("by_score")
	require.NoError(t, err)
	_, err = d.sortCond(Lt(math.Inf(1)))
	require.NoError(t, err, "a bound may be infinite")
}

// TestSortCondRefusesKeyTextOverTheLimit: a condition whose key text is
// over DynamoDB's 1,024 bytes for a sort key value is refused before any
// request, as a partition value over 2,048 bytes already was.
func TestSortCondRefusesKeyTextOverTheLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 1021)      // "ST#" + 1021 = 1024 bytes, whole key's first component
	escaped := strings.Repeat("\x01", 342) // 1,026 bytes once escaped
	for _, tc := range []struct {
		index string
		c     SortCondition
	}{
		{"", Eq(long)},                      // ST#sss...# : 1025 bytes
		{"", Lt(long)},                      // ST#sss...# : 1025 bytes
		{"", Between("a", long)},            // the upper bound: 1025 bytes
		{"feed", Eq(escaped)},               // 1027 bytes
		{"feed", Ge(escaped, 1)},            // over the limit with one more component
		{"feed", BeginsWith(long + "ssss")}, // a 1,025-byte prefix
		{"by_name", Eq(strings.Repeat("n", 1025))},
		{"by_name", BeginsWith(strings.Repeat("n", 1025))},
		{"by_bin", BeginsWith(strings.Repeat("b", 513))}, // hex: 1026 bytes
	} {
		_, err := kcDef(t, tc.index).sortCond(tc.c)
		require.ErrorIs(t, err, ErrInvalidQuery, "%s on %q", tc.c, tc.index)
		require.ErrorContains(t, err, "limit", "%s on %q", tc.c, tc.index)
	}
	// Just under the limit is fine, and so is the query through a table.
	_, err := kcDef(t, "").sortCond(Eq(long[:1020]))
	require.NoError(t, err)
	cl := &wrNoClient{}
	tb, err := New[kcTicket](cl)
	require.NoError(t, err)
	_, err = tb.Query("feed", "T").Where(Eq(escaped)).Page(t.Context())
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.Zero(t, cl.calls.Load())
}

// TestAsReadMatchesNullByType: the condition that a write-through write
// finds the item as read names a NULL component by its type,
// attribute_type(a, NULL), and every other stored value by equality.
func TestAsReadMatchesNullByType(t *testing.T) {
	t.Parallel()
	type acNull struct {
		_    TableSpec `ddbindex:"ac-null,pk=PK,sk=SK"`
		_    IndexSpec `ddbindex:"by_prio,type=table"`
		Team string    `dynamodbav:"team" ddbindex:"pk;by_prio.pk"`
		ID   string    `dynamodbav:"id" ddbindex:"sk"`
		Prio *int64    `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	}
	tb, err := New[acNull](nil)
	require.NoError(t, err)
	old, err := tb.Marshal(acNull{Team: "t", ID: "1"})
	require.NoError(t, err)
	require.IsType(t, &types.AttributeValueMemberNULL{}, old["prio"])
	x, err := expression.NewBuilder().WithCondition(tb.asRead(old)).Build()
	require.NoError(t, err)
	cond := aws.ToString(x.Condition())
	var prio, team string
	for ph, name := range x.Names() {
		switch name {
		case "prio":
			prio = ph
		case "team":
			team = ph
		}
	}
	require.NotEmpty(t, prio)
	require.Contains(t, cond, "attribute_type ("+prio+", ")
	require.NotContains(t, cond, prio+" = ")
	require.Contains(t, cond, team+" = ")
	nulls := 0
	for _, v := range x.Values() {
		if _, ok := v.(*types.AttributeValueMemberNULL); ok {
			nulls++
		}
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "NULL" {
			nulls += 10
		}
	}
	require.Equal(t, 10, nulls, "the type name NULL, and no NULL value, is sent")
}

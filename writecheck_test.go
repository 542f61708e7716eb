package ddbindex

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of issue 7, section 2(b): Put and Move check every key they imply,
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

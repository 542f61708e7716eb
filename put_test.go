package ddbindex

import (
	"fmt"
	"testing"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/stretchr/testify/require"
)

func TestWriteVersionedPut(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			ctx := t.Context()
			tb, _ := newTestTable[wrTicket](t, func(o *Options) { o.WriteThrough = wt })
			suffix := ""
			if wt {
				suffix = " (ConditionalCheckFailed)"
			}
			it := wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Title: "one"}
			v1, err := tb.Put(ctx, it)
			require.NoError(t, err)
			require.EqualValues(t, 1, v1.Ver)

			_, err = tb.Put(ctx, it) // version 0 again: must not exist
			ce := wrRequireConflict(t, err, "put", "the item does not exist yet (version 0)"+suffix)
			require.NotNil(t, ce.Unwrap(), "the DynamoDB error is kept")

			v1.Title = "two"
			v2, err := tb.Put(ctx, v1)
			require.NoError(t, err)
			require.EqualValues(t, 2, v2.Ver)
			require.Equal(t, "two", v2.Title)

			v1.Title = "lost update"
			_, err = tb.Put(ctx, v1) // stale
			wrRequireConflict(t, err, "put", "the item exists with version 1"+suffix)

			got := wrIndex(t, tb, "", false, "T1")
			require.Equal(t, []wrTicket{v2}, got, "the stale write changed nothing")
			if wt {
				require.Equal(t, []wrTicket{v2}, wrIndex(t, tb, "by_status", false, "T1"))
			}
		})
	}
}

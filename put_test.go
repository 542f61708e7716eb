package ddbindex

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
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
			ce := wrRequireConflict(t, err, "put", "no item has this key yet (version 0 creates it)"+suffix)
			require.NotNil(t, ce.Unwrap(), "the DynamoDB error is kept")

			v1.Title = "two"
			v2, err := tb.Put(ctx, v1)
			require.NoError(t, err)
			require.EqualValues(t, 2, v2.Ver)
			require.Equal(t, "two", v2.Title)

			v1.Title = "lost update"
			_, err = tb.Put(ctx, v1) // stale
			wrRequireConflict(t, err, "put", "the item is at version 1"+suffix)

			got := wrIndex(t, tb, "", false, "T1")
			require.Equal(t, []wrTicket{v2}, got, "the stale write changed nothing")
			if wt {
				require.Equal(t, []wrTicket{v2}, wrIndex(t, tb, "by_status", false, "T1"))
			}
		})
	}
}

// TestPutRecreatesOverTombstone: to a caller a soft-deleted item is absent,
// so Put with version 0 creates it again, with the version one more than
// the tombstone's; copies read before the delete, or before the re-create,
// still conflict, with messages that say what was found and what to do.
func TestPutRecreatesOverTombstone(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			ctx := t.Context()
			tb, c := newTestTable[wrTicket](t, func(o *Options) { o.WriteThrough = wt })
			suffix := ""
			if wt {
				suffix = " (ConditionalCheckFailed)"
			}
			fresh := wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Title: "one"}
			v1, err := tb.Put(ctx, fresh)
			require.NoError(t, err)
			require.NoError(t, tb.Delete(ctx, v1)) // a tombstone at version 2

			again := fresh
			again.Title = "one, again"
			v3, err := tb.Put(ctx, again)
			require.NoError(t, err)
			require.EqualValues(t, 3, v3.Ver, "the version continues above the tombstone's")
			raw := wrRaw(t, tb, v3)
			require.EqualValues(t, 3, wrNum(t, raw["ver"]))
			require.NotContains(t, raw, "_deleted")
			require.NotContains(t, raw, "_ttl")
			require.Equal(t, []wrTicket{v3}, wrIndex(t, tb, "", false, "T1"))
			if wt {
				require.Equal(t, []wrTicket{v3}, wrIndex(t, tb, "by_status", false, "T1"), "the index entry is live again")
				entries := wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
				require.Len(t, entries, 1)
				require.EqualValues(t, 3, wrNum(t, entries[0]["_ver"]), "index entries carry the version above the tombstone's")
			}

			// A copy read before the delete conflicts.
			_, err = tb.Put(ctx, v1)
			ce := wrRequireConflict(t, err, "put", "the item is at version 1"+suffix)
			require.Contains(t, ce.Failed[0], "found it live at version 3: another write came first; re-read it (now version 3) and apply your change to that copy")
			// A second create conflicts: the item is live.
			_, err = tb.Put(ctx, fresh)
			ce = wrRequireConflict(t, err, "put", "no item has this key yet (version 0 creates it)"+suffix)
			require.Contains(t, ce.Failed[0], "found it live at version 3: another writer created it first")

			// A copy of the live item, put after it was deleted again.
			require.NoError(t, tb.Delete(ctx, v3))
			_, err = tb.Put(ctx, v3)
			ce = wrRequireConflict(t, err, "put", "the item is at version 3"+suffix)
			require.Contains(t, ce.Failed[0], "found it deleted at version 4: it was deleted since it was read; to create it again, put it with version 0")
			v5, err := tb.Put(ctx, fresh)
			require.NoError(t, err)
			require.EqualValues(t, 5, v5.Ver)
		})
	}
}

// TestPutRecreateRace: another writer creates the item again between a
// Put's first attempt (which finds the tombstone) and its attempt over the
// tombstone: a conflict that says so, and the other writer's item stays.
func TestPutRecreateRace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, c := newTestTable[wrTicket](t)
	h, hc := hooked(t, tb, c)
	fresh := wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Title: "one"}
	v1, err := tb.Put(ctx, fresh)
	require.NoError(t, err)
	require.NoError(t, tb.Delete(ctx, v1))
	theirs := fresh
	theirs.Title = "theirs"
	hc.beforePut = func(n int) {
		if n == 2 {
			_, err := tb.Put(ctx, theirs)
			require.NoError(t, err)
		}
	}
	_, err = h.Put(ctx, fresh)
	ce := wrRequireConflict(t, err, "put", "the item is deleted at version 2 (Put with version 0 creates it again over its tombstone)")
	require.Contains(t, ce.Failed[0], "found it live at version 3: another writer created it first")
	got := wrIndex(t, tb, "", false, "T1")
	require.Len(t, got, 1)
	require.Equal(t, "theirs", got[0].Title)
}

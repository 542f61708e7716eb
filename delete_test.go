package ddbindex

import (
	"testing"
	"time"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/stretchr/testify/require"
)

// TestWriteSoftDeleteTombstone: Delete of a softdelete model marks the base
// item deleted with a TTL a retention ahead, reads skip it, and a Put makes
// it live again; the stream path (Apply) mirrors both into the index table.
func TestWriteSoftDeleteTombstone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const retention = 48 * time.Hour
	tb, c := newTestTable[wrTicket](t)
	tb.opts.Retention = retention // as TableSpec retention= sets it (TestTableSpecWrittenAttributes)

	it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0, Title: "Printer"})
	require.NoError(t, err)
	require.EqualValues(t, 1, it.Ver, "a create writes version 1")
	img1 := wrRaw(t, tb, it)
	require.EqualValues(t, 1, wrNum(t, img1["ver"]))
	st, err := tb.Apply(ctx, []Change{{New: img1, Version: "1"}})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Puts: 1}, st)
	require.Len(t, wrIndex(t, tb, "by_status", false, "T1"), 1)

	before := time.Now()
	require.NoError(t, tb.Delete(ctx, it))
	after := time.Now()
	img2 := wrRaw(t, tb, it)
	require.NotNil(t, img2, "a soft delete keeps the item")
	require.True(t, wrBool(img2["_deleted"]))
	ttl := wrNum(t, img2["_ttl"])
	require.GreaterOrEqual(t, ttl, before.Add(retention).Unix()-1)
	require.LessOrEqual(t, ttl, after.Add(retention).Unix()+1)
	require.EqualValues(t, 2, wrNum(t, img2["ver"]), "the delete is a new version")

	items := wrIndex(t, tb, "", false, "T1")
	require.Empty(t, items, "base reads skip the soft-deleted item")
	items = wrIndex(t, tb, "", true, "T1")
	require.Len(t, items, 1)
	require.EqualValues(t, 2, items[0].Ver)

	// Stale and missing versions.
	wrRequireConflict(t, tb.Delete(ctx, it), "delete", "the item is at version 1; found it deleted at version 2: it is deleted already")
	zero := it
	zero.Ver = 0
	require.ErrorIs(t, tb.Delete(ctx, zero), ErrInvalidWrite)

	// The stream path: the soft delete becomes a tombstone of the entry.
	st, err = tb.Apply(ctx, []Change{{Old: img1, New: img2, Version: "2"}})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Deletes: 1}, st)
	require.Empty(t, wrIndex(t, tb, "by_status", false, "T1"))
	require.Len(t, wrIndex(t, tb, "by_status", true, "T1"), 1)
	entries := wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
	require.Len(t, entries, 1)
	require.True(t, wrBool(entries[0]["_deleted"]))
	require.InDelta(t, time.Now().Add(retention).Unix(), wrNum(t, entries[0]["_ttl"]), 60)

	// Re-insert: Put with the stored version makes it live again.
	it.Ver = 2
	it.Title = "Printer, again"
	it, err = tb.Put(ctx, it)
	require.NoError(t, err)
	require.EqualValues(t, 3, it.Ver)
	img3 := wrRaw(t, tb, it)
	require.NotContains(t, img3, "_deleted")
	require.NotContains(t, img3, "_ttl")
	items = wrIndex(t, tb, "", false, "T1")
	require.Len(t, items, 1)
	require.Equal(t, "Printer, again", items[0].Title)

	st, err = tb.Apply(ctx, []Change{{Old: img2, New: img3, Version: "3"}})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Puts: 1}, st)
	live := wrIndex(t, tb, "by_status", false, "T1")
	require.Len(t, live, 1)
	require.Equal(t, "Printer, again", live[0].Title)
	require.EqualValues(t, 3, live[0].Ver)
	entries = wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
	require.Len(t, entries, 1)
	require.NotContains(t, entries[0], "_deleted", "the entry is live again, not a tombstone")
	require.NotContains(t, entries[0], "_ttl")
}

// TestWriteThroughSoftDeleteTombstone is the same in write-through mode: the
// index entry follows in the same transaction.
func TestWriteThroughSoftDeleteTombstone(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	ctx := t.Context()
	tb, c := newTestTable[wrTicket](t, wrWriteThrough)
	index := tb.tableOf(tb.s.byName["by_status"])

	it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0, Title: "Printer"})
	require.NoError(t, err)
	live := wrIndex(t, tb, "by_status", false, "T1")
	require.Len(t, live, 1)
	require.Equal(t, it, live[0])

	require.NoError(t, tb.Delete(ctx, it))
	require.True(t, wrBool(wrRaw(t, tb, it)["_deleted"]))
	require.Empty(t, wrIndex(t, tb, "by_status", false, "T1"))
	entries := wrScan(t, c, index)
	require.Len(t, entries, 1)
	require.True(t, wrBool(entries[0]["_deleted"]))
	require.Contains(t, entries[0], "_ttl")
	require.EqualValues(t, 2, wrNum(t, entries[0]["_ver"]), "write-through entries carry the model version")

	it.Ver = 2
	it, err = tb.Put(ctx, it)
	require.NoError(t, err)
	live = wrIndex(t, tb, "by_status", false, "T1")
	require.Equal(t, []wrTicket{it}, live)
	entries = wrScan(t, c, index)
	require.Len(t, entries, 1)
	require.NotContains(t, entries[0], "_deleted")
	require.EqualValues(t, 3, wrNum(t, entries[0]["_ver"]))

	// A stale delete changes nothing, base or index.
	stale := it
	stale.Ver = 2
	wrRequireConflict(t, tb.Delete(ctx, stale), "delete", "the item is at version 2 (ConditionalCheckFailed); found it live at version 3: another write came first; re-read it (now version 3), and delete that copy")
	require.Equal(t, entries, wrScan(t, c, index))
}

// TestWriteDeleteWithoutVersion covers deletes of models without a version
// field, in both modes: existing and missing items, hard and soft.
func TestWriteDeleteWithoutVersion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("hard", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTable[wrNote](t)
		n := wrNote{Team: "T", ID: "1", Topic: "a", Text: "x"}
		_, err := tb.Put(ctx, n)
		require.NoError(t, err)
		require.NoError(t, tb.Delete(ctx, n))
		require.Nil(t, wrRaw(t, tb, n))
		require.NoError(t, tb.Delete(ctx, n), "deleting a missing item is no error")
	})
	t.Run("soft", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTable[wrSoftNote](t)
		n := wrSoftNote{Team: "T", ID: "1", Text: "x"}
		_, err := tb.Put(ctx, n)
		require.NoError(t, err)
		require.NoError(t, tb.Delete(ctx, n))
		raw := wrRaw(t, tb, n)
		require.True(t, wrBool(raw["_deleted"]))
		require.Empty(t, wrIndex(t, tb, "", false, "T"))
		missing := wrSoftNote{Team: "T", ID: "404"}
		require.NoError(t, tb.Delete(ctx, missing), "deleting a missing item is no error (and creates nothing)")
		require.Nil(t, wrRaw(t, tb, missing))
	})
}

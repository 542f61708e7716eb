package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/ops"
)

// TestInspectCursor decodes cursors minted by real pages: the index, the
// order, every field with its key text and typed value, the next position;
// and passes on the core's refusals, each with its sentinel.
func TestInspectCursor(t *testing.T) {
	t.Parallel()
	_, tickets := ticketFixture(t)
	ctx := t.Context()
	field := func(attr, text string, v any) ops.CursorField {
		return ops.CursorField{Attr: attr, Text: text, Value: v}
	}

	// TEAM-2 holds t-01 and t-07 (closed), then t-04 and t-10 (open), all
	// of priority 2. A first call learns the entries' size; the next reads
	// the item after its page.
	_, err := tickets.Query("by_status", "TEAM-2").Limit(2).Page(ctx)
	require.NoError(t, err)
	page, err := tickets.Query("by_status", "TEAM-2").Limit(2).Page(ctx)
	require.NoError(t, err)
	info, err := ops.InspectCursor(tickets, "by_status", page.Cursor)
	require.NoError(t, err)
	require.Equal(t, &ops.CursorInfo{
		Index:    "by_status",
		Position: []ops.CursorField{field("team", "TEAM-2", "TEAM-2"), field("status", "closed", "closed"), field("prio", info.Position[2].Text, 2), field("id", "t-07", "t-07")},
		Next:     []ops.CursorField{field("team", "TEAM-2", "TEAM-2"), field("status", "open", "open"), field("prio", info.Position[2].Text, 2), field("id", "t-04", "t-04")},
	}, info)

	desc, err := tickets.Query("by_status", "TEAM-2").Desc().Limit(1).Page(ctx)
	require.NoError(t, err)
	info, err = ops.InspectCursor(tickets, "by_status", desc.Cursor)
	require.NoError(t, err)
	require.True(t, info.Desc)
	require.Equal(t, "t-10", info.Position[3].Value)

	// Refusals are the core's errors.
	_, err = ops.InspectCursor(tickets, "by_status", "!!")
	var ce *ddbindex.Error
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ddbindex.ErrInvalidCursor)
	require.Contains(t, ce.Reason, "not unpadded URL-safe Base64")
	_, err = ops.InspectCursor(tickets, "", page.Cursor)
	require.ErrorIs(t, err, ddbindex.ErrInvalidCursor)
	_, err = ops.InspectCursor(tickets, "by_nothing", page.Cursor)
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery)
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/ops"
	"github.com/ddbindex/ddbindex/schema"
)

// TestRun runs the demo end to end against the test server and checks what
// it shows: moves, tombstones skipped, cursors continuing, the end.
func TestRun(t *testing.T) {
	t.Parallel()
	ddbtest.Client(t) // skips without a server
	ddbtest.Require(t, ddbtest.Transactions)
	ddbtest.Require(t, ddbtest.TTL)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ddbtest.Endpoint(), settings{}))
	s := out.String()
	t.Log(s)
	require.Contains(t, s, "schema matches the declarations")
	require.Contains(t, s, "a second move from the old key is refused")
	require.Contains(t, s, "page 1: #8841(09:00) #8843(11:00) #8845(13:00) #8847(15:00)")
	require.Contains(t, s, "page 2: #8849(17:00) #8851(19:00)")
	require.Contains(t, s, "5 tombstones skipped, 1 read ahead")
	require.Contains(t, s, "page 1: #8840(08:00) #8842(10:00) #8844(12:00) #8846(14:00)")
	require.Contains(t, s, "page 1: #8850(18:00) #8848(16:00) #8846(14:00)")
	require.Contains(t, s, "any closed tickets? false")
}

// TestRunKeep: with -keep the demo leaves its tables (under -table-prefix)
// for the operator command, and -cursor-out holds a cursor of them.
func TestRunKeep(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	ddbtest.Require(t, ddbtest.Transactions)
	ddbtest.Require(t, ddbtest.TTL)
	prefix := ddbtest.Name(t, "") + "-"
	for _, name := range []string{"supportdesk-tickets", "supportdesk-tickets-by_status"} {
		ddbtest.DeleteOnCleanup(t, c, prefix+name)
	}
	cursorFile := filepath.Join(t.TempDir(), "cursor")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ddbtest.Endpoint(), settings{prefix: prefix, keep: true, cursorOut: cursorFile}))
	require.Contains(t, out.String(), "== creating "+prefix+"supportdesk-tickets")

	tickets, err := ddbindex.New[models.Ticket](c, models.TicketOptions, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	})
	require.NoError(t, err)
	require.NoError(t, schema.Check(t.Context(), tickets, c), "the tables are still there")
	cursor, err := os.ReadFile(cursorFile)
	require.NoError(t, err)
	info, err := ops.InspectCursor(tickets, "by_status", strings.TrimSpace(string(cursor)))
	require.NoError(t, err)
	require.Equal(t, "8847", info.Position[3].Value, "the fourth open ticket ends the first page")
	page, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("open")).Limit(4).After(strings.TrimSpace(string(cursor))).Page(t.Context())
	require.NoError(t, err)
	require.Len(t, page.Items, 2, "the page after it")
}

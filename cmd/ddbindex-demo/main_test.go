package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/ops"
)

// run runs the demo command with args.
func run(t *testing.T, client ops.Client, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := ops.Run(context.Background(), append([]string{"ddbindex-demo"}, args...), strings.NewReader(""), &out, &errOut, demoModels(),
		func(o *ops.RunOptions) {
			if client != nil {
				o.Client = client
			}
		})
	return code, out.String(), errOut.String()
}

// TestHelp: the command is built from the examples' models, and lists
// their tables and indexes as the examples name them.
func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "--table-prefix", "demo-", "help")
	require.Equal(t, 0, code)
	for _, want := range []string{
		"  Ticket\n", "table demo-supportdesk-tickets\n", "by_status    index table demo-supportdesk-tickets-by_status\n",
		"  Post\n", "table demo-feed-posts\n", "newest       index table demo-feed-posts-newest, 16 shards\n",
	} {
		require.Contains(t, out, want)
	}
}

// TestDemoTables: the command prepares and checks the examples' tables,
// and decodes a cursor the support desk's query hands out. The feed's
// index table is kept from the stream, with TTL: the test needs a server
// with both.
func TestDemoTables(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	ddbtest.Require(t, ddbtest.Transactions)
	prefix := ddbtest.Name(t, "") + "-"
	for _, name := range []string{"supportdesk-tickets", "supportdesk-tickets-by_status", "feed-posts", "feed-posts-newest"} {
		ddbtest.DeleteOnCleanup(t, c, prefix+name)
	}
	code, out, errOut := run(t, c, "--table-prefix", prefix, "check")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, out, "table "+prefix+"supportdesk-tickets does not exist")

	code, out, errOut = run(t, c, "--table-prefix", prefix, "prepare")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Ticket: prepared\n")
	require.Contains(t, out, "Post: prepared\n")
	code, out, errOut = run(t, c, "--table-prefix", prefix, "check")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Ticket: ok")
	require.Contains(t, out, "Post: ok")

	// A cursor of the support desk's query, as its clients hold them.
	tickets, err := ddbindex.New[models.Ticket](c, models.TicketOptions, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	})
	require.NoError(t, err)
	opened := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for i, id := range []string{"8840", "8841", "8842"} {
		_, err := tickets.Put(t.Context(), models.Ticket{Team: "TEAM-7", Status: "open", ID: id, Opened: opened.Add(time.Duration(i) * time.Hour)})
		require.NoError(t, err)
	}
	page, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("open")).Limit(1).Page(t.Context())
	require.NoError(t, err)
	code, out, errOut = run(t, c, "cursor", "inspect", "--partition", "TEAM-7", "--eq", "open", "--", page.Cursor)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Ticket index by_status: the cursor of an ascending query")
	require.Contains(t, out, "opened 2026-12-01T08:00:00Z")
	require.Contains(t, out, "accepted")
}

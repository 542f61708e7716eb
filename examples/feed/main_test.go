package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestRun runs the demo end to end against the test server and checks the
// feed it serves: the stream consumer's work, tombstones skipped, full pages.
func TestRun(t *testing.T) {
	t.Parallel()
	ddbtest.Client(t) // skips without a server
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ddbtest.Endpoint()))
	s := out.String()
	t.Log(s)
	require.Contains(t, s, "stream consumer applied 55 changes: 40 entries written, 15 tombstones")
	require.Contains(t, s, "a second poll finds 0 new changes")
	require.Contains(t, s, "page 1: post-36(09:36) post-32(09:32) post-28(09:28) post-24(09:24) post-20(09:20)")
	require.Contains(t, s, "15 tombstones skipped")
	require.Contains(t, s, "page 4: post-09(09:09) post-08(09:08) post-07(09:07) post-06(09:06) post-05(09:05)")
	require.Contains(t, s, "posts since 09:30: 2 live (8 tombstones skipped")
	require.Contains(t, s, "a tampered cursor: invalid=true (DDBX-300)")
}

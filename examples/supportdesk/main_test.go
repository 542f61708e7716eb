package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestRun runs the demo end to end against the test server and checks what
// it shows: moves, tombstones skipped, cursors continuing, the end.
func TestRun(t *testing.T) {
	t.Parallel()
	ddbtest.Client(t) // skips without a server
	ddbtest.Require(t, ddbtest.Transactions)
	ddbtest.Require(t, ddbtest.TTL)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ddbtest.Endpoint()))
	s := out.String()
	t.Log(s)
	require.Contains(t, s, "schema matches the declarations")
	require.Contains(t, s, "a second move from the old key is refused")
	require.Contains(t, s, "page 1: #8841(09:00) #8843(11:00) #8845(13:00) #8847(15:00)")
	require.Contains(t, s, "page 2: #8849(17:00) #8851(19:00)")
	require.Contains(t, s, "6 tombstones skipped, 2 read ahead")
	require.Contains(t, s, "page 1: #8840(08:00) #8842(10:00) #8844(12:00) #8846(14:00)")
	require.Contains(t, s, "page 1: #8850(18:00) #8848(16:00) #8846(14:00)")
	require.Contains(t, s, "any closed tickets? false")
}

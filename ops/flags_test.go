package ops_test

import (
	"context"
	"sync/atomic"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// requestLog counts the requests a client sends, and those that write.
type requestLog struct {
	all, writes atomic.Int32
}

// countRequests makes f's commands send through a copy of f's client that
// counts the requests it sends.
func countRequests(f *fixture) *requestLog {
	var l requestLog
	count := middleware.InitializeMiddlewareFunc("countRequests", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		l.all.Add(1)
		switch awsmiddleware.GetOperationName(ctx) {
		case "GetItem", "Query", "Scan", "BatchGetItem", "DescribeTable", "DescribeTimeToLive", "ListTables":
		default:
			l.writes.Add(1)
		}
		return next.HandleInitialize(ctx, in)
	})
	f.client = dynamodb.New(f.client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error { return s.Initialize.Add(count, middleware.After) })
	})
	return &l
}

// TestGoldenRefusedFlags: a flag out of range, or flags that contradict
// each other, are a usage error (exit 2) that states the rule, found before
// anything is done: the client the commands get counts no request (no
// write, for explain and verify, whose check of the query may start the
// table's background read of the routes), and nothing is written (no
// index-table entry, no route, no saved position). The rules
// of backfill's numbers and of a route are the library's own
// (BackfillOptions.Validate, Route.Validate), worded with the flags' names.
func TestGoldenRefusedFlags(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	direct := f.client
	requests := countRequests(f)
	planned := false // a command has planned a query
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"refused-backfill-workers-negative", []string{"backfill", "--index", "by_status", "--workers", "-1"}},
		{"refused-backfill-workers-huge", []string{"backfill", "--index", "by_status", "--workers", "1000000000000"}},
		{"refused-backfill-segment-beyond-total", []string{"backfill", "--index", "by_status", "--segment", "5", "--total-segments", "2"}},
		{"refused-backfill-workers-beyond-total", []string{"backfill", "--index", "by_status", "--workers", "3", "--total-segments", "2"}},
		{"refused-backfill-segment-negative", []string{"backfill", "--index", "by_status", "--segment", "-1", "--total-segments", "4"}},
		{"refused-backfill-segment-without-total", []string{"backfill", "--index", "by_status", "--segment", "3"}},
		{"refused-backfill-total-huge", []string{"backfill", "--index", "by_status", "--total-segments", "1099511627776"}},
		{"refused-backfill-total-over-dynamodb", []string{"backfill", "--index", "by_status", "--total-segments", "1000001"}},
		{"refused-backfill-page-size-negative", []string{"backfill", "--index", "by_status", "--page-size", "-1"}},
		{"refused-backfill-rate-negative", []string{"backfill", "--index", "by_status", "--rate", "-5"}},
		{"refused-backfill-rate-nan", []string{"backfill", "--index", "by_status", "--rate", "NaN"}},
		{"refused-backfill-rate-inf", []string{"backfill", "--index", "by_status", "--rate", "+Inf"}},
		{"refused-backfill-restart-no-checkpoint", []string{"backfill", "--index", "by_status", "--restart", "--no-checkpoint"}},
		{"refused-prepare-wait-negative", []string{"prepare", "--wait-timeout", "-1s"}},
		{"refused-route-set-percent-nan", []string{"route", "set", "--index", "by_status", "--to", "table", "--percent", "NaN"}},
		{"refused-route-set-percent-over", []string{"route", "set", "--index", "by_status", "--to", "table", "--percent", "101"}},
		{"refused-route-set-percent-negative", []string{"route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1", "--percent", "-1"}},
		{"refused-route-set-empty-partition", []string{"route", "set", "--index", "by_status", "--to", "table", "--partition", ""}},
		{"refused-verify-sample-zero", []string{"verify", "--index", "by_status", "--sample", "0"}},
		{"refused-verify-limit-negative", []string{"verify", "--index", "by_status", "--partition", "TEAM-1", "--limit", "-1"}},
		// From here on a command may plan a query, which reads the routes
		// in the background: no write is sent.
		{"refused-explain-limit-negative", []string{"explain", "--index", "by_status", "--partition", "TEAM-1", "--limit", "-1"}},
		{"refused-explain-empty-partition", []string{"explain", "--index", "by_status", "--partition", ""}},
		{"refused-verify-empty-partition", []string{"verify", "--index", "by_status", "--partition", "TEAM-1", "--partition", ""}},
	} {
		planned = planned || tc.args[0] == "explain"
		r := f.golden(t, tc.name, "", tc.args...)
		require.Equal(t, 2, r.code, "%s: a usage error", tc.name)
		require.Contains(t, r.stderr, "-h' for its usage", "%s: a usage error points to the usage", tc.name)
		require.Zero(t, requests.writes.Load(), "%s: no write is sent", tc.name)
		if !planned {
			require.Zero(t, requests.all.Load(), "%s: no request is sent", tc.name)
		}
		require.Empty(t, r.stdout, "%s: nothing is done", tc.name)
	}
	require.Empty(t, ddbtest.Scan(t, direct, f.prefix+"tickets-by_status"), "no entry is written")
	require.Empty(t, ddbtest.Scan(t, direct, f.control), "no route or position is saved")
}

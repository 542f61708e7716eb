package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/ops"
)

// TestGoldenDoctor: doctor reads throttling reasons from log lines (the
// library's own errors, DynamoDB's JSON error bodies) and says, per model,
// which table or index was throttled and what to do; a GSI that throttles
// writes to its base table gets the advice to shard it or move it to an
// index table. It sends nothing, so it needs no server. The JSON body is
// DynamoDB's shape for a throttle with reasons
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html,
// "Example exceptions").
func TestGoldenDoctor(t *testing.T) {
	t.Parallel()
	f := &fixture{prefix: "p-", models: []ops.ModelDef{ops.Model[Ticket](), ops.Model[Note]()}}
	const acct = "arn:aws:dynamodb:us-west-2:123456789012:table/"
	// What the application logged for a Put the SDK gave up on: the
	// library's own error text.
	putErr := (&ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "PutItem", Table: "p-tickets",
		Throttles: []types.ThrottlingReason{{Reason: aws.String("IndexWriteKeyRangeThroughputExceeded"), Resource: aws.String(acct + "p-tickets/index/by_status")}},
		Err:       errors.New("operation error DynamoDB: PutItem, exceeded maximum number of attempts, 3, ThrottlingException: Throughput exceeds the current capacity")}).Error()
	log := strings.Join([]string{
		"2026-12-04T10:00:01Z ERROR put ticket t-1: " + putErr,
		"2026-12-04T10:00:02Z ERROR put ticket t-2: " + putErr,
		"2026-12-04T10:00:03Z INFO served 200",
		`2026-12-04T10:00:04Z WARN {"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the index was exceeded","ThrottlingReasons":[{"reason":"IndexWriteProvisionedThroughputExceeded","resource":"` + acct + `p-notes/index/by_author"}]}`,
		`2026-12-04T10:00:05Z WARN query: TableReadKeyRangeThroughputExceeded on p-tickets-by_status`,
		`2026-12-04T10:00:06Z WARN {"reason":"TableWriteAccountLimitExceeded","resource":"` + acct + `audit"}`,
	}, "\n") + "\n"
	f.golden(t, "doctor", log, "doctor", "-")
	r := f.golden(t, "doctor-model", log, "doctor", "--model", "Note", "-")
	require.Equal(t, 1, r.code)

	f.golden(t, "doctor-none", "2026-12-04T10:00:03Z INFO served 200\n", "doctor", "-")
	f.golden(t, "usage-doctor-no-argument", "", "doctor")

	// A file holds the same lines.
	path := filepath.Join(t.TempDir(), "app.log")
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	fromFile := f.run("", "doctor", path)
	fromStdin := f.run(log, "doctor", "-")
	require.Equal(t, fromStdin, fromFile)
	r = f.run("", "doctor", filepath.Join(t.TempDir(), "missing.log"))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no such file")

	// A line over the limit is refused, not cut.
	r = f.run(strings.Repeat("x", 1<<20+1)+"\n", "doctor", "-")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "line 1 is longer than")
}

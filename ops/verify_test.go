package ops_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/ops"
)

// TestVerifyRecheck: a partition whose forms differ is compared again
// after --recheck. An entry the upkeep writes during the wait (its lag)
// makes the partition equal then: reported as lag, exit 0. An entry that
// stays missing is a difference, exit 1; so is any difference with
// --recheck 0, which waits for nothing. The wait is the test's
// (RunOptions.Sleep): nothing depends on timing.
func TestVerifyRecheck(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	ctx := t.Context()
	r := f.run("", "backfill", "--index", "by_status")
	require.Equal(t, 0, r.code, r.stderr)

	// TEAM-2's first entry in the index table goes missing.
	index := f.prefix + "tickets-by_status"
	var entry map[string]types.AttributeValue
	for _, e := range ddbtest.Scan(t, f.client, index) {
		if id, ok := e["id"].(*types.AttributeValueMemberS); ok && id.Value == "t-01" {
			entry = e
		}
	}
	require.NotNil(t, entry, "t-01's entry")
	drop := func() {
		t.Helper()
		_, err := f.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(index),
			Key: map[string]types.AttributeValue{"team": entry["team"], "_sk": entry["_sk"]}})
		require.NoError(t, err)
	}
	report := func(r result) (rep struct {
		Compared, Mismatched, Lag int
		Equal                     bool
		Recheck                   string
	}) {
		t.Helper()
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
		return rep
	}
	verify := []string{"verify", "--index", "by_status", "--partition", "TEAM-1", "--partition", "TEAM-2", "--recheck", "30s"}

	// The upkeep writes the entry while verify waits: lag.
	drop()
	var waited []time.Duration
	f.sleep = func(_ context.Context, d time.Duration) error {
		waited = append(waited, d)
		_, err := f.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(index), Item: entry})
		return err
	}
	r = f.run("", verify...)
	require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
	require.Equal(t, []time.Duration{30 * time.Second}, waited, "one wait of --recheck for every partition that differs")
	rep := report(r)
	require.Equal(t, 2, rep.Compared)
	require.Equal(t, 0, rep.Mismatched)
	require.Equal(t, 1, rep.Lag)
	require.True(t, rep.Equal)
	require.Equal(t, "30s", rep.Recheck)
	require.Contains(t, r.stdout, `"lag": true`)
	require.Contains(t, r.stderr, "1 of 2 partitions differed at first and were equal 30s later: lag")

	// The entry stays missing: a difference after the wait too.
	drop()
	waited = nil
	f.sleep = func(_ context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	r = f.run("", verify...)
	require.Equal(t, 1, r.code, "%s%s", r.stdout, r.stderr)
	require.Len(t, waited, 1)
	rep = report(r)
	require.Equal(t, 1, rep.Mismatched)
	require.Zero(t, rep.Lag)
	require.False(t, rep.Equal)
	require.Contains(t, r.stderr, "1 of 2 partitions differ between the forms, again after 30s")

	// Without a re-check: no wait, and the difference counts at once.
	waited = nil
	r = f.run("", "verify", "--index", "by_status", "--partition", "TEAM-2", "--recheck", "0")
	require.Equal(t, 1, r.code, "%s%s", r.stdout, r.stderr)
	require.Empty(t, waited)
	require.Empty(t, report(r).Recheck)

	// Equal forms: nothing to re-check, no wait.
	r = f.run("", "verify", "--index", "by_status", "--partition", "TEAM-1")
	require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
	require.Empty(t, waited)

	r = f.run("", "verify", "--index", "by_status", "--partition", "TEAM-1", "--recheck", "-1s")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--recheck -1s: want a duration of 0 or more")
}

// TestVerifyNoIndexOfTwoForms: verify of a model none of whose indexes keeps
// two forms is a usage error that says what verify compares, and sends
// nothing: naming an index would not help.
func TestVerifyNoIndexOfTwoForms(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.models = []ops.ModelDef{ops.Model[TicketV4]()}
	r := f.run("", "verify")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no index of TicketV4 keeps two forms (keep=): verify compares the two forms an index keeps during a migration\n")
	require.NotContains(t, r.stderr, "with --index")
}

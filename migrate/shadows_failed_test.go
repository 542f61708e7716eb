package migrate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// A shadow read of a form that no longer exists (the index table, deleted
// while the index still keeps it) fails: it is counted Failed, apart from
// the pages skipped for want of room, in ShadowStats and in
// ddbindex.migration.shadow_reads (outcome failed, with the error's code),
// and OnError receives its error. A re-check whose read fails is counted
// Failed too, after its page was compared.
func TestShadowsFailedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := oteltest.New(t)
	f := newKPFleet(t)
	var mu sync.Mutex
	var errs []error
	var mismatches int
	s := newShadows(t, ShadowOptions{
		Rate: 1, MeterProvider: h.MeterProvider, TracerProvider: h.TracerProvider,
		OnError:    func(err error) { mu.Lock(); defer mu.Unlock(); errs = append(errs, err) },
		OnMismatch: func(Mismatch) { mu.Lock(); defer mu.Unlock(); mismatches++ },
	})
	item := func(team, id string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: "open", Created: created}
	}
	for _, team := range []string{"recheck", "gone"} {
		f.seed(t, item(team, "a", 1), item(team, "b", 2))
	}
	indexTable := f.entry(t, item("gone", "a", 1), false).Table
	// The index table lacks an entry of recheck: the first comparison finds
	// a mismatch, and the index table is deleted before the re-check reads
	// it again. The deletion runs on the comparison's goroutine, so it
	// reports its error on deleted.
	deleted := make(chan error, 1)
	s.sleep = func(ctx context.Context, _ time.Duration) error {
		_, err := f.c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(indexTable)})
		deleted <- err
		return nil
	}
	f.dropEntry(t, item("recheck", "b", 2))
	tb := f.table(t, func(o *ddbindex.Options) { o.Observer = s })
	page := func(team string) {
		t.Helper()
		p, err := tb.Query("by_status", team).Page(ctx)
		require.NoError(t, err, "the GSI serves the read, whatever the shadow read does")
		require.Len(t, p.Items, 2)
		require.NoError(t, s.Wait(ctx))
	}

	page("recheck")
	select {
	case err := <-deleted:
		require.NoError(t, err, "deleting the index table")
	default:
		t.Fatal("the re-check did not run")
	}
	assert.Equal(t, ShadowStats{Compared: 1, Failed: 1}, s.Stats(), "the page was compared, and its re-check failed")

	page("gone")
	page("gone")
	assert.Equal(t, ShadowStats{Compared: 1, Failed: 3}, s.Stats(), "a failed shadow read is no skipped page")

	mu.Lock()
	got, gotMismatches := errs, mismatches
	mu.Unlock()
	assert.Zero(t, gotMismatches, "an unconfirmed mismatch is not reported")
	require.Len(t, got, 3, "OnError receives each failed read")
	for _, err := range got {
		require.ErrorIs(t, err, ddbindex.ErrDynamoDB)
		assert.Contains(t, err.Error(), indexTable)
	}

	m := h.Metrics(t)
	assert.Equal(t, float64(3), m.Sum("ddbindex.migration.shadow_reads", attrShadow.String("failed"), attrForm.String("table"),
		attrErrorType.String(ddbindex.Code(ddbindex.ErrDynamoDB))))
	assert.Equal(t, float64(1), m.Sum("ddbindex.migration.shadow_reads", attrShadow.String("compared")))
	assert.Zero(t, m.Sum("ddbindex.migration.shadow_reads", attrShadow.String("skipped")))
	var outcomes []string
	for _, sp := range h.Spans("ddbindex.ShadowCompare") {
		o, _ := oteltest.Attr(sp, attrShadow)
		outcomes = append(outcomes, o.AsString())
	}
	assert.Equal(t, []string{"failed", "failed", "failed"}, outcomes)
}

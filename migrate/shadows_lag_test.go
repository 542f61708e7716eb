package migrate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/slowddb"
)

// Shadow reads against a GSI that lags its base table, as DynamoDB's GSIs
// do (slowddb, which cites the AWS documentation): a mismatch that only the
// lag caused is gone when the re-check runs after the lag has passed
// (transient, not reported), and so is one whose re-check finds another
// item in the lag, written just before it; a divergence made behind the library's back
// (an index-table entry dropped) is found again (persistent, reported),
// even when lag is part of the same page's first mismatch. A re-check made
// before the lag has passed finds the lag again: Recheck must exceed the
// GSI's propagation delay. The re-check's wait is the test's: it lets the
// lag pass (Settle) or not, so nothing depends on timing.
func TestShadowsTellLagFromDivergence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	slowC, slow := ddbtest.Slow(t, slowddb.Options{Delay: 1 << 30}) // GSI reads lag until Settle
	var mu sync.Mutex
	var reported []Mismatch
	s := newShadows(t, ShadowOptions{Rate: 1, OnMismatch: func(m Mismatch) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, m)
	}})
	lagPasses := true
	var beforeRecheck func() // a write made once the lag has passed, just before the re-check
	s.sleep = func(context.Context, time.Duration) error {
		if lagPasses {
			slow.Settle()
		}
		if beforeRecheck != nil {
			beforeRecheck()
			beforeRecheck = nil
		}
		return nil
	}
	shadowed, err := ddbindex.New[kpStep1](slowC, f.opts, func(o *ddbindex.Options) { o.Observer = s })
	require.NoError(t, err)
	item := func(team, id, status string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: status, Created: created}
	}
	for _, team := range []string{"lag", "diverged", "early", "steady"} {
		f.seed(t, item(team, "a", "open", 1), item(team, "b", "open", 2), item(team, "c", "pending", 3))
	}
	// A write reaches the base table through the lagging client, and the
	// index table at once (as the stream upkeep would, soon after): the
	// entry of the old image becomes a tombstone, the new one is written.
	change := func(old, it kpStep1) {
		t.Helper()
		img, err := f.s1.Marshal(it)
		require.NoError(t, err)
		_, err = slowC.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.s1.TableName()), Item: img})
		require.NoError(t, err)
		f.dropEntry(t, old)
		f.putEntry(t, it)
	}
	page := func(team string) ShadowStats {
		t.Helper()
		before := s.Stats()
		p, err := shadowed.Query("by_status", team).Limit(10).Page(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, p.Items)
		require.NoError(t, s.Wait(ctx))
		after := s.Stats()
		return ShadowStats{Compared: after.Compared - before.Compared, Equal: after.Equal - before.Equal,
			Transient: after.Transient - before.Transient, Persistent: after.Persistent - before.Persistent}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(reported) }

	require.Equal(t, ShadowStats{Compared: 1, Equal: 1}, page("lag"), "the first GSI read: no lag yet")

	// Lag alone: transient.
	change(item("lag", "a", "open", 1), item("lag", "a", "pending", 1))
	require.Equal(t, 1, slow.Lagging(f.s1.TableName()))
	require.Equal(t, ShadowStats{Compared: 1, Transient: 1}, page("lag"), "%+v", reported)
	require.Zero(t, count(), "a mismatch the lag caused is not reported")
	require.Equal(t, ShadowStats{Compared: 1, Equal: 1}, page("lag"), "the lag has passed")

	// Steady writes: the first read finds one item in the lag, and another
	// item's write is in the lag when the re-check reads. The page differs
	// both times, but never on the same item: transient, not reported.
	// (The statuses keep the page's order: open < opening < paused.)
	change(item("steady", "c", "pending", 3), item("steady", "c", "paused", 3))
	beforeRecheck = func() { change(item("steady", "b", "open", 2), item("steady", "b", "opening", 2)) }
	require.Equal(t, ShadowStats{Compared: 1, Transient: 1}, page("steady"), "%+v", reported)
	require.Zero(t, count(), "a write just before the re-check is not evidence")
	slow.Settle()
	require.Equal(t, ShadowStats{Compared: 1, Equal: 1}, page("steady"), "the forms never diverged")

	// Lag and a divergence on one page: the re-check finds the divergence.
	change(item("diverged", "c", "pending", 3), item("diverged", "c", "closed", 3))
	f.dropEntry(t, item("diverged", "b", "open", 2))
	require.Equal(t, ShadowStats{Compared: 1, Persistent: 1}, page("diverged"))
	require.Equal(t, 1, count())
	mu.Lock()
	m := reported[0]
	mu.Unlock()
	assert.Equal(t, MismatchMissing, m.Kind)
	assert.Equal(t, ddbindex.GSI, m.Served)
	assert.Contains(t, fmt.Sprint(m.Keys), "diverged-b", "the divergence, not the lag, is reported")
	assert.NotContains(t, fmt.Sprint(m.Keys), "diverged-c")

	// A re-check before the lag has passed cannot tell it from a divergence.
	lagPasses = false
	change(item("early", "a", "open", 1), item("early", "a", "closed", 1))
	require.Equal(t, ShadowStats{Compared: 1, Persistent: 1}, page("early"))
	require.Equal(t, 2, count())
	slow.Settle()
	require.Equal(t, ShadowStats{Compared: 1, Equal: 1}, page("early"), "and yet it was lag")

	st := slow.Stats()
	t.Logf("slowddb: %+v; shadows: %+v", st, s.Stats())
	require.Positive(t, st.Lagging)
}

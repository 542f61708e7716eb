package stream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// The consumer under injected faults (internal/faults:
// throttling, 500s, connection resets before the server and after it applied
// the request, lost answers), and a consumer killed mid-batch. Each ends in
// exactly the index tables a fault-free run writes. (Backfill's test under
// the same faults is the root package's.)

// cfRetry is the library's retry budget in these tests: the default number
// of attempts, with short delays to keep the tests quick.
var cfRetry = ddbindex.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

// cfWorkload makes n random changes to the tickets of team (puts of new
// tickets, title, owner and creation-time changes, moves between statuses,
// deletes and re-inserts) and returns the number of stream records they
// made.
func cfWorkload(t testing.TB, tb *ddbindex.Table[stTicket], team string, n int, seed uint64) int {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 7))
	live := map[string]stTicket{}
	var gone []stTicket
	records, next := 0, 0
	statuses := []string{"open", "pending", "closed"}
	pick := func() stTicket {
		ids := make([]string, 0, len(live))
		for id := range live {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return live[ids[rng.IntN(len(ids))]]
	}
	for records < n {
		op := rng.IntN(10)
		switch {
		case len(live) < 10 || op < 2:
			it := stTicket{Team: team, Status: statuses[rng.IntN(3)], ID: fmt.Sprintf("t%03d", next), Created: stNow.Add(time.Duration(next) * time.Minute), Title: fmt.Sprint("ticket ", next)}
			next++
			if rng.IntN(2) == 0 {
				it.Owner = stOwner(fmt.Sprint("user", rng.IntN(4)))
			}
			it, err := tb.Put(ctx, it)
			require.NoError(t, err)
			live[it.ID] = it
			records++
		case op < 4:
			it := pick()
			it.Title = fmt.Sprint("title ", records)
			if rng.IntN(3) == 0 {
				it.Owner = nil // leaves by_owner
			} else if rng.IntN(2) == 0 {
				it.Owner = stOwner(fmt.Sprint("user", rng.IntN(4)))
			}
			if rng.IntN(3) == 0 {
				it.Created = it.Created.Add(time.Hour) // by_status sort key
			}
			it, err := tb.Put(ctx, it)
			require.NoError(t, err)
			live[it.ID] = it
			records++
		case op < 7:
			from := pick()
			to := from
			for to.Status == from.Status {
				to.Status = statuses[rng.IntN(3)]
			}
			to, err := tb.Move(ctx, from, to)
			require.NoError(t, err)
			live[to.ID] = to
			records += 2
		case op < 9:
			it := pick()
			require.NoError(t, tb.Delete(ctx, it))
			delete(live, it.ID)
			gone = append(gone, it)
			records++
		default:
			if len(gone) == 0 {
				continue
			}
			it := gone[0]
			gone = gone[1:]
			it.Title = "re-inserted"
			it, err := tb.Put(ctx, it)
			require.NoError(t, err)
			live[it.ID] = it
			records++
		}
	}
	return records
}

// cfIndexTables returns a Table for tb's base table with new, empty index
// tables, whose requests go through client (the tables are created through
// the test server's plain client), and one that uses the plain client.
func cfIndexTables(t *testing.T, tb *ddbindex.Table[stTicket], client ddbindex.Client, name string) (faulty, plain *ddbindex.Table[stTicket]) {
	t.Helper()
	plain, names := freshIndexes(t, tb, stBase, name, stFixedNow)
	faulty, err := ddbindex.New[stTicket](client, stFixedNow, func(o *ddbindex.Options) { o.TableName = names })
	require.NoError(t, err)
	return faulty, plain
}

// cfConverge polls until the shard's checkpoint reaches last, allowing
// passes that fail transiently (the retry budget of one call ran out), and
// returns the totals and the number of such passes.
func cfConverge(t *testing.T, cons *Consumer[stTicket], cp *MemoryCheckpoints, last string) (ddbindex.ApplyStats, int) {
	t.Helper()
	var total ddbindex.ApplyStats
	failed := 0
	for pass := 0; ; pass++ {
		require.Less(t, pass, 200, "the consumer did not converge")
		st, err := cons.Poll(t.Context())
		addStats(&total, st)
		if err != nil {
			require.True(t, ddbindex.IsTransient(err), "only transient failures: %v", err)
			failed++
			continue
		}
		if _, seq := onlyCheckpoint(t, cp); seq == last {
			return total, failed
		}
	}
}

// TestConsumerUnderFaults: under 5% and 30% injected faults on every request
// of the consumer (stream reads and index writes), it converges to exactly
// the index tables a fault-free run writes: every live item's entry present
// and equal, every deleted or moved item's entry a tombstone, nothing extra.
// At 30% with the SDK's default retryer its retry quota runs out, and the
// library's own retry carries on. (The consumer used to stop at the first
// failure the SDK gave up on, and never converged at 30%.)
func TestConsumerUnderFaults(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	n := cfWorkload(t, tb, "T1", 300, 1)
	recs := records(t, tb)
	require.Len(t, recs, n)
	last := aws.ToString(recs[n-1].Dynamodb.SequenceNumber)
	ref := stFresh(t, tb, "want")
	_, err := ref.Apply(t.Context(), toChanges(t, recs))
	require.NoError(t, err)
	want := snapshot(t, ref)
	stCheckIndexes(t, ref, "T1")

	for i, fc := range ddbtest.FaultCases {
		t.Run(fc.Name, func(t *testing.T) {
			t.Parallel()
			db, sc, ft := ddbtest.Faulty(t, faults.Random(fc.Rate, uint64(100+i), nil), fc.Retryer)
			faulty, plain := cfIndexTables(t, tb, db, fmt.Sprint("case", i))
			var log ddbtest.RetryLog
			retryOpts := cfRetry
			retryOpts.OnRetry = log.OnRetry
			cp := &MemoryCheckpoints{}
			st, failed := cfConverge(t, newConsumer(t, faulty, sc, cp, func(o *ConsumerOptions) {
				o.BatchSize = 50
				o.Retry = retryOpts
			}), cp, last)
			all, quota := log.Counts()
			t.Logf("%s: %d records, %+v, %d passes failed; injected %s; library retries %d (%d after the SDK's quota ran out)",
				fc.Name, n, st, failed, ft.Summary(), all, quota)
			require.Positive(t, ft.Injected())
			require.GreaterOrEqual(t, st.Changes, n, "every record applied (some twice, after a failed pass)")
			require.Equal(t, want, snapshot(t, plain), "exactly the fault-free index tables")
			stCheckIndexes(t, plain, "T1")
			if fc.Rate >= 0.3 && fc.Retryer == nil {
				require.Positive(t, quota, "the SDK's retry quota ran out, and the library retried")
			}
		})
	}
}

// cfKillClient passes requests to the test server; after the PutItem
// numbered at has been applied, it cancels the consumer's context and
// reports the cancellation instead of the answer: the process died with the
// write made but not acknowledged.
type cfKillClient struct {
	ddbindex.Client
	at     int64
	n      atomic.Int64
	cancel context.CancelFunc
	killed atomic.Pointer[string] // the version of the write at the kill
}

func (k *cfKillClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := k.Client.PutItem(ctx, in, o...)
	if k.n.Add(1) == k.at {
		v := in.Item["_ver"].(*types.AttributeValueMemberN).Value
		k.killed.Store(&v)
		k.cancel()
		return nil, context.Canceled
	}
	return out, err
}

// TestConsumerKillAndRestart: a consumer whose context ends mid-batch leaves
// a checkpoint below every record it did not finish; a new consumer with the
// same checkpoints applies every record after it, once, and nothing before
// it; the writes the first one made without checkpointing them count as
// Stale; the index tables end exactly as a fault-free run leaves them.
func TestConsumerKillAndRestart(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	tb, c := newTestTable[stTicket](t, stFixedNow)
	n := cfWorkload(t, tb, "T1", 120, 2)
	recs := records(t, tb)
	require.Len(t, recs, n)
	seqIndex := map[string]int{}
	for i, r := range recs {
		seqIndex[aws.ToString(r.Dynamodb.SequenceNumber)] = i
	}
	ref := stFresh(t, tb, "want")
	_, err := ref.Apply(t.Context(), toChanges(t, recs))
	require.NoError(t, err)
	want := snapshot(t, ref)
	sc := ddbtest.StreamsClient(t)

	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			kill := &cfKillClient{Client: c, at: 60, cancel: cancel}
			dying, plain := cfIndexTables(t, tb, kill, fmt.Sprint("w", workers))
			cp := &MemoryCheckpoints{}
			opts := func(o *ConsumerOptions) {
				o.Workers, o.CheckpointEvery, o.Retry = workers, 10, cfRetry
			}
			st1, err := newConsumer(t, dying, sc, cp, opts).Poll(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.NotNil(t, kill.killed.Load(), "killed mid-batch")
			killedAt := seqIndex[*kill.killed.Load()]

			done := 0 // records at or below the checkpoint
			if _, seq := onlyCheckpoint(t, cp); seq != "" {
				done = seqIndex[seq] + 1
			}
			require.LessOrEqual(t, done, killedAt, "the record being applied at the kill is not checkpointed")
			if workers == 1 {
				require.Equal(t, killedAt, done, "one worker: every record before it was checkpointed as it stopped")
			}
			t.Logf("killed at record %d of %d; checkpointed %d; first consumer %+v", killedAt, n, done, st1)

			st2, err := newConsumer(t, plain, sc, cp, opts).Poll(t.Context())
			require.NoError(t, err)
			require.Equal(t, n-done, st2.Changes, "every record after the checkpoint, once; none before it")
			require.Positive(t, st2.Stale, "the write made at the kill is re-applied as stale")
			require.Equal(t, want, snapshot(t, plain))
		})
	}
}

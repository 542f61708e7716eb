package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// The consumer and Backfill under injected faults (internal/faults:
// throttling, 500s, connection resets before the server and after it applied
// the request, lost answers), and a consumer killed mid-batch. Each ends in
// exactly the index tables a fault-free run writes.

// cfRetry is the library's retry budget in these tests: the default number
// of attempts, with short delays to keep the tests quick.
var cfRetry = RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

// cfWorkload makes n random changes to the tickets of team (puts of new
// tickets, title, owner and creation-time changes, moves between statuses,
// deletes and re-inserts) and returns the number of stream records they
// made.
func cfWorkload(t testing.TB, tb *Table[stTicket], team string, n int, seed uint64) int {
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
// the test server's plain client).
func cfIndexTables(t *testing.T, tb *Table[stTicket], client Client, name string) (faulty, plain *Table[stTicket]) {
	t.Helper()
	plain = stFreshIndexes(t, tb, ddbtest.Client(t), name)
	faulty, err := New[stTicket](client, stFixedNow, func(o *Options) { o.TableName = plain.opts.TableName })
	require.NoError(t, err)
	return faulty, plain
}

// cfConverge polls until the shard's checkpoint reaches last, allowing
// passes that fail transiently (the retry budget of one call ran out), and
// returns the totals and the number of such passes.
func cfConverge(t *testing.T, cons *StreamConsumer[stTicket], cp Checkpoints, last string) (ApplyStats, int) {
	t.Helper()
	var total ApplyStats
	failed := 0
	for pass := 0; ; pass++ {
		require.Less(t, pass, 200, "the consumer did not converge")
		st, err := cons.Poll(t.Context())
		total.add(st)
		if err != nil {
			require.True(t, IsTransient(err), "only transient failures: %v", err)
			failed++
			continue
		}
		if cfAllCheckpointed(t, cp, last) {
			return total, failed
		}
	}
}

func cfAllCheckpointed(t *testing.T, cp Checkpoints, last string) bool {
	t.Helper()
	m := cp.(*MemoryCheckpoints)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, seq := range m.seq {
		if seq == last {
			return true
		}
	}
	return false
}

// cfCase is one fault setting.
type cfCase struct {
	name    string
	rate    float64
	retryer func() aws.Retryer // nil: the SDK's standard retryer, with its quota
}

var cfCases = []cfCase{
	{"5% faults, SDK default retryer", 0.05, nil},
	{"30% faults, no-quota retryer", 0.30, ddbtest.NoQuotaRetryer(5)},
	{"30% faults, SDK default retryer", 0.30, nil},
}

// cfQuota counts the retries (of the library) whose error was the SDK's
// retry quota running out.
type cfQuota struct {
	mu    sync.Mutex
	quota int
	all   int
}

func (q *cfQuota) onRetry(_ string, _ int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.all++
	if errors.As(err, new(ratelimit.QuotaExceededError)) {
		q.quota++
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
	tb, c := newTestTable[stTicket](t, stFixedNow)
	n := cfWorkload(t, tb, "T1", 300, 1)
	recs := stRecords(t, tb)
	require.Len(t, recs, n)
	last := aws.ToString(recs[n-1].Dynamodb.SequenceNumber)
	ref := stFreshIndexes(t, tb, c, "want")
	_, err := ref.Apply(t.Context(), stChanges(t, recs))
	require.NoError(t, err)
	want := stSnapshot(t, ref, c)
	stCheckIndexes(t, ref, "T1")

	for i, fc := range cfCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			db, sc, ft := ddbtest.Faulty(t, faults.Random(fc.rate, uint64(100+i), nil), fc.retryer)
			faulty, plain := cfIndexTables(t, tb, db, fmt.Sprint("case", i))
			var q cfQuota
			opts := ConsumerOptions{BatchSize: 50, Retry: cfRetry}
			opts.Retry.OnRetry = q.onRetry
			cp := &MemoryCheckpoints{}
			st, failed := cfConverge(t, NewStreamConsumer(faulty, sc, cp, opts), cp, last)
			t.Logf("%s: %d records, %+v, %d passes failed; injected %s; library retries %d (%d after the SDK's quota ran out)",
				fc.name, n, st, failed, ft.Summary(), q.all, q.quota)
			require.Positive(t, ft.Injected())
			require.GreaterOrEqual(t, st.Changes, n, "every record applied (some twice, after a failed pass)")
			require.Equal(t, want, stSnapshot(t, plain, c), "exactly the fault-free index tables")
			stCheckIndexes(t, plain, "T1")
			if fc.rate >= 0.3 && fc.retryer == nil {
				require.Positive(t, q.quota, "the SDK's retry quota ran out, and the library retried")
			}
		})
	}
}

// cfKillClient passes requests to the test server; after the PutItem
// numbered at has been applied, it cancels the consumer's context and
// reports the cancellation instead of the answer: the process died with the
// write made but not acknowledged.
type cfKillClient struct {
	Client
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
	recs := stRecords(t, tb)
	require.Len(t, recs, n)
	seqIndex := map[string]int{}
	for i, r := range recs {
		seqIndex[aws.ToString(r.Dynamodb.SequenceNumber)] = i
	}
	ref := stFreshIndexes(t, tb, c, "want")
	_, err := ref.Apply(t.Context(), stChanges(t, recs))
	require.NoError(t, err)
	want := stSnapshot(t, ref, c)
	sc := ddbtest.StreamsClient(t)

	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			kill := &cfKillClient{Client: c, at: 60, cancel: cancel}
			dying, plain := cfIndexTables(t, tb, kill, fmt.Sprint("w", workers))
			cp := &MemoryCheckpoints{}
			opts := ConsumerOptions{Workers: workers, CheckpointEvery: 10, Retry: cfRetry}
			st1, err := NewStreamConsumer(dying, sc, cp, opts).Poll(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.NotNil(t, kill.killed.Load(), "killed mid-batch")
			killedAt := seqIndex[*kill.killed.Load()]

			done := 0 // records at or below the checkpoint
			if seq := cfOnlyCheckpoint(t, cp); seq != "" {
				done = seqIndex[seq] + 1
			}
			require.LessOrEqual(t, done, killedAt, "the record being applied at the kill is not checkpointed")
			if workers == 1 {
				require.Equal(t, killedAt, done, "one worker: every record before it was checkpointed as it stopped")
			}
			t.Logf("killed at record %d of %d; checkpointed %d; first consumer %+v", killedAt, n, done, st1)

			st2, err := NewStreamConsumer(plain, sc, cp, opts).Poll(t.Context())
			require.NoError(t, err)
			require.Equal(t, n-done, st2.Changes, "every record after the checkpoint, once; none before it")
			require.Positive(t, st2.Stale, "the write made at the kill is re-applied as stale")
			require.Equal(t, want, stSnapshot(t, plain, c))
		})
	}
}

func cfOnlyCheckpoint(t *testing.T, cp *MemoryCheckpoints) string {
	t.Helper()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	require.LessOrEqual(t, len(cp.seq), 1)
	for _, seq := range cp.seq {
		return seq
	}
	return ""
}

// TestBackfillUnderFaults: Backfill under 5% and 30% injected faults writes
// exactly what a fault-free Backfill writes. (It used to stop at the first
// failure the SDK gave up on.)
func TestBackfillUnderFaults(t *testing.T) {
	t.Parallel()
	const posts = 240
	gsi, table, all := mgSetup(t, posts)
	c := ddbtest.Client(t)
	sparse := 0
	for _, p := range all {
		if p.Feed == nil {
			sparse++
		}
	}
	// fresh returns a Table of the same base table with a new, empty index
	// table, whose requests go through client.
	fresh := func(t *testing.T, client *dynamodb.Client, name string) (*Table[mgPostTable], string) {
		prefix := ddbtest.Name(t, name)
		tn := func(s string) string {
			if s == table.s.table {
				return gsi.TableName()
			}
			return prefix + "-" + s
		}
		out, err := New[mgPostTable](client, func(o *Options) { o.TableName = tn })
		require.NoError(t, err)
		ddbtest.CreateTable(t, c, out.CreateTableInputs(false)[1])
		return out, out.tableOf(out.s.byName["newest"])
	}
	ref, refTable := fresh(t, c, "want")
	st, err := ref.Backfill(t.Context(), c, "newest", func(o *BackfillOptions) { o.PageSize = 25 })
	require.NoError(t, err)
	require.Equal(t, BackfillStats{Scanned: posts, Written: posts - sparse, Sparse: sparse}, st)
	want := wrScan(t, c, refTable)

	for i, fc := range cfCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			db, _, ft := ddbtest.Faulty(t, faults.Random(fc.rate, uint64(200+i), nil), fc.retryer)
			tb, name := fresh(t, db, fmt.Sprint("case", i))
			var q cfQuota
			st, err := tb.Backfill(t.Context(), db, "newest", func(o *BackfillOptions) {
				o.PageSize, o.Retry = 25, RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, OnRetry: q.onRetry}
			})
			require.NoError(t, err)
			t.Logf("%s: %+v; injected %s; library retries %d (%d after the SDK's quota ran out)", fc.name, st, ft.Summary(), q.all, q.quota)
			require.Positive(t, ft.Injected())
			require.Equal(t, posts, st.Scanned)
			require.Equal(t, sparse, st.Sparse)
			require.Equal(t, posts-sparse, st.Written+st.Skipped, "a write whose answer was lost is skipped on its retry")
			require.Equal(t, want, wrScan(t, c, name), "exactly the fault-free index table")
			// (A backfill this small makes too few requests to be sure to
			// use up the SDK's retry quota; the consumer's test is.)
		})
	}
}

package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Consumers with durable checkpoints and leases (DynamoDBCheckpoints on the
// test server). The multi-shard cases use the fake stream (fake_test.go:
// the local servers have one shard), so they run on both servers; those on
// the server's real stream skip without Streams. Lease clocks are test
// clocks: nothing depends on timing.

// lsWork adds one round of changes to the items of a shard (tickets
// 100*k .. 100*k+4 of shard k): inserts, title changes, deletes and
// re-inserts; live holds the items' current state. It returns how many
// records it added.
func lsWork(t *testing.T, fs *fsStream, shard string, k, round int, live map[int]*stTicket) int {
	t.Helper()
	n := 0
	for j := range 5 {
		id := 100*k + j
		cur := live[id]
		switch {
		case cur == nil:
			it := fsTicket(id)
			it.Title = fmt.Sprint("round ", round)
			fs.add(t, shard, nil, &it)
			live[id] = &it
		case (round+j)%3 == 2:
			fs.add(t, shard, cur, nil)
			delete(live, id)
		default:
			next := *cur
			next.Title = fmt.Sprint("round ", round)
			fs.add(t, shard, cur, &next)
			live[id] = &next
		}
		n++
	}
	return n
}

// lsConsumer returns a consumer of the fake stream with checkpoints in cp,
// and leases in cp too when leases is set, on the test clock.
func lsConsumer(t testing.TB, tb *ddbindex.Table[stTicket], fs StreamsAPI, cp *DynamoDBCheckpoints, owner string, leases bool, clock *testClock, more ...func(*ConsumerOptions)) *Consumer[stTicket] {
	return newConsumer(t, tb, fs, cp, append([]func(*ConsumerOptions){func(o *ConsumerOptions) {
		o.Retry, o.LeaseOwner, o.Now = fast, owner, clock.Now
		if leases {
			o.Leases = cp
		}
	}}, more...)...)
}

// lsHeld returns, per owner, the shards the store lists as leased to it.
func lsHeld(t *testing.T, s *DynamoDBCheckpoints) map[string][]string {
	t.Helper()
	all, err := s.ListLeases(t.Context())
	require.NoError(t, err)
	out := map[string][]string{}
	for _, l := range all {
		if l.ShardID != "" && l.Owner != "" {
			out[l.Owner] = append(out[l.Owner], l.ShardID)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// TestConsumersShareShards: two consumers on one stream of four shards,
// polling at the same time, with and without leases. Either way the index
// tables end exactly as the changes applied once, in order, leave them
// (the version guards make the second consumer's writes stale). Without
// leases each consumer applies every record: the duplicates are as many as
// the records. With leases the consumers split the shards two and two (the
// second one's heartbeat makes the first release half of them) and no
// record is applied twice.
func TestConsumersShareShards(t *testing.T) {
	t.Parallel()
	shards := []string{"s0", "s1", "s2", "s3"}
	for _, leases := range []bool{false, true} {
		t.Run(fmt.Sprint("leases=", leases), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, fs := fsSetup(t)
			for _, s := range shards {
				fs.shard(s, "")
			}
			cp := newControlTable(t, "tickets")
			clock := newTestClock()
			a := lsConsumer(t, tb, fs, cp, "A", leases, clock)
			b := lsConsumer(t, tb, fs, cp, "B", leases, clock)
			// Both start: A takes every shard; B's heartbeat halves A's
			// share, A releases the last two, B takes them.
			for _, c := range []*Consumer[stTicket]{a, b, a, b} {
				_, err := c.Poll(ctx)
				require.NoError(t, err)
			}
			if leases {
				require.Equal(t, map[string][]string{"A": {"s0", "s1"}, "B": {"s2", "s3"}}, lsHeld(t, cp))
			}

			live := map[int]*stTicket{}
			n, perShard := 0, map[string]int{}
			var got [2]ddbindex.ApplyStats
			for round := range 4 {
				for k, s := range shards {
					added := lsWork(t, fs, s, k, round, live)
					n += added
					perShard[s] += added
				}
				// Each goroutine writes only its own slots; the test reads
				// them once both are joined.
				var wg sync.WaitGroup
				var errs [2]error
				for i, c := range []*Consumer[stTicket]{a, b} {
					wg.Go(func() {
						st, err := c.Poll(ctx)
						addStats(&got[i], st)
						errs[i] = err
					})
				}
				wg.Wait()
				require.NoError(t, errors.Join(errs[:]...), "round %d", round)
			}
			var want []ddbindex.Change
			for _, s := range shards {
				want = append(want, fs.changes(t, s, 0, perShard[s])...)
			}
			require.Equal(t, fsWant(t, tb, want...), snapshot(t, tb), "exactly the ground truth")
			total := got[0].Changes + got[1].Changes
			t.Logf("leases=%v: %d records; A applied %d (%d stale writes), B %d (%d stale writes); duplicate applies %d",
				leases, n, got[0].Changes, got[0].Stale, got[1].Changes, got[1].Stale, total-n)
			if leases {
				require.Equal(t, n, total, "no record applied twice")
				require.Equal(t, perShard["s0"]+perShard["s1"], got[0].Changes, "A applied its two shards")
				require.Equal(t, perShard["s2"]+perShard["s3"], got[1].Changes, "B applied its two shards")
				require.Zero(t, got[0].Stale+got[1].Stale)
			} else {
				require.Equal(t, n, got[0].Changes, "A applied every record")
				require.Equal(t, n, got[1].Changes, "so did B")
				require.Positive(t, got[0].Stale+got[1].Stale, "the second application of each record is stale")
			}
			for _, s := range shards {
				seqs := fs.seqs(s)
				require.Equal(t, seqs[len(seqs)-1], checkpointOf(t, cp, s), "checkpointed to the end")
			}
		})
	}
}

// TestConsumerLeaseTakeover: a consumer that stops without releasing its
// leases (it died) keeps its shards from the others until its leases run
// out; then another consumer takes them over and applies every record after
// the dead one's checkpoints, once. The dead one, back, finds its leases
// taken and reads nothing until the shards are balanced again.
func TestConsumerLeaseTakeover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	shards := []string{"s0", "s1"}
	for _, s := range shards {
		fs.shard(s, "")
	}
	cp := newControlTable(t, "tickets")
	clock := newTestClock()
	a := lsConsumer(t, tb, fs, cp, "A", true, clock)
	b := lsConsumer(t, tb, fs, cp, "B", true, clock)
	live := map[int]*stTicket{}
	count := map[string]int{}
	round := func(r int) int {
		n := 0
		for k, s := range shards {
			added := lsWork(t, fs, s, k, r, live)
			count[s] += added
			n += added
		}
		return n
	}
	poll := func(c *Consumer[stTicket]) ddbindex.ApplyStats {
		t.Helper()
		st, err := c.Poll(ctx)
		require.NoError(t, err)
		return st
	}

	n1 := round(0)
	require.Equal(t, n1, poll(a).Changes, "A alone reads both shards")
	n2 := round(1) // A dies before reading these

	require.Zero(t, poll(b), "A's leases last: B reads nothing")
	require.Equal(t, map[string][]string{"A": {"s0", "s1"}}, lsHeld(t, cp))

	clock.Add(a.opts.LeaseDuration + time.Second) // A's leases and heartbeat run out
	st := poll(b)
	require.Equal(t, n2, st.Changes, "B took both shards over and applied what A had not")
	require.Zero(t, st.Stale, "A had checkpointed everything it applied")
	require.Equal(t, map[string][]string{"B": {"s0", "s1"}}, lsHeld(t, cp))

	// A is back: its leases are B's now.
	require.Zero(t, poll(a), "A finds its leases taken")
	require.Zero(t, poll(b), "B sees A alive again and releases its excess")
	require.Equal(t, map[string][]string{"B": {"s0"}}, lsHeld(t, cp))
	n3 := round(2)
	stA, stB := poll(a), poll(b)
	require.Equal(t, map[string][]string{"A": {"s1"}, "B": {"s0"}}, lsHeld(t, cp))
	require.Equal(t, n3, stA.Changes+stB.Changes)
	require.Positive(t, stA.Changes)
	require.Positive(t, stB.Changes)

	var want []ddbindex.Change
	for _, s := range shards {
		want = append(want, fs.changes(t, s, 0, count[s])...)
	}
	require.Equal(t, fsWant(t, tb, want...), snapshot(t, tb))

	// A dead consumer's heartbeat is deleted a lease duration after it ran
	// out; a released consumer leaves nothing behind.
	require.NoError(t, a.ReleaseLeases(ctx))
	require.Equal(t, map[string][]string{"B": {"s0"}}, lsHeld(t, cp))
	c := lsConsumer(t, tb, fs, cp, "C", true, clock)
	_ = poll(c) // C's heartbeat
	clock.Add(2*a.opts.LeaseDuration + time.Second)
	_ = poll(b) // renews B's; C's ran out a lease duration ago
	all, err := cp.ListLeases(ctx)
	require.NoError(t, err)
	var beats []string
	for _, l := range all {
		if l.ShardID == "" {
			beats = append(beats, l.Owner)
		}
	}
	require.Equal(t, []string{"B"}, beats, "A released, C's deleted")
}

// lsHookStreams calls hook before the GetRecords call numbered at.
type lsHookStreams struct {
	StreamsAPI
	mu   sync.Mutex
	n    int
	at   int
	hook func()
}

func (h *lsHookStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	h.mu.Lock()
	h.n++
	fire := h.n == h.at
	h.mu.Unlock()
	if fire {
		h.hook()
	}
	return h.StreamsAPI.GetRecords(ctx, in, o...)
}

// TestConsumerLeaseLostMidShard: a consumer so slow that its lease ran out
// and another consumer took the shard over stops reading the shard at its
// next page (its renewal is refused): the two apply at most the page in
// flight twice, and the index tables end as the ground truth.
func TestConsumerLeaseLostMidShard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("s0", "")
	live := map[int]*stTicket{}
	n := 0
	for r := range 4 {
		n += lsWork(t, fs, "s0", 0, r, live)
	}
	cp := newControlTable(t, "tickets")
	clock := newTestClock()
	b := lsConsumer(t, tb, fs, cp, "B", true, clock, func(o *ConsumerOptions) { o.BatchSize = 2 })
	var stB ddbindex.ApplyStats
	var errB error // the hook reports here, not through t: it runs inside A's Poll
	slow := &lsHookStreams{StreamsAPI: fs, at: 3, hook: func() {
		// A is between its second and third page when its lease runs out
		// and B takes the shard over, reading it to its end.
		clock.Add(b.opts.LeaseDuration + time.Second)
		stB, errB = b.Poll(ctx)
	}}
	a := lsConsumer(t, tb, slow, cp, "A", true, clock, func(o *ConsumerOptions) { o.BatchSize = 2 })
	stA, err := a.Poll(ctx)
	require.NoError(t, err)
	require.NoError(t, errB, "B's Poll")
	t.Logf("%d records: A applied %d, B %d (%d stale writes)", n, stA.Changes, stB.Changes, stA.Stale+stB.Stale)
	require.Equal(t, 6, stA.Changes, "A's three pages: the third was in flight when B took over; then A stopped")
	require.Equal(t, n-4, stB.Changes, "B: every record after A's checkpoint (two pages)")
	require.Positive(t, stA.Stale, "A's third page came after B's")
	require.Equal(t, map[string][]string{"B": {"s0"}}, lsHeld(t, cp))
	require.Equal(t, fsWant(t, tb, fs.changes(t, "s0", 0, n)...), snapshot(t, tb))
	seqs := fs.seqs("s0")
	require.Equal(t, seqs[n-1], checkpointOf(t, cp, "s0"), "A's later checkpoint of its third page did not move it back")

	st, err := a.Poll(ctx)
	require.NoError(t, err)
	require.Zero(t, st, "A no longer reads the shard")
}

// TestConsumerLeasesEndedShards: a shard read to its end is marked ended in
// the store, so another consumer skips it without reading it (and reads its
// child once it gets the child's lease); an ended shard the stream no longer
// lists is deleted from the store, checkpoint and all.
func TestConsumerLeasesEndedShards(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("parent", "")
	fs.shard("child", "parent")
	a0 := fsTicket(0)
	fs.add(t, "parent", nil, &a0)
	fs.close("parent")
	a1 := a0
	a1.Title = "child"
	fs.add(t, "child", &a0, &a1)
	cp := newControlTable(t, "tickets")
	clock := newTestClock()
	a := lsConsumer(t, tb, fs, cp, "A", true, clock)
	b := lsConsumer(t, tb, fs, cp, "B", true, clock)

	st, err := a.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, st.Changes, "the parent, ended, then the child")
	all, err := cp.ListLeases(ctx)
	require.NoError(t, err)
	require.Contains(t, all, Lease{ShardID: "parent", Ended: true})

	require.NoError(t, a.ReleaseLeases(ctx)) // A stops
	st, err = b.Poll(ctx)
	require.NoError(t, err)
	require.Zero(t, st, "nothing left to apply")
	require.Len(t, fs.opens("parent"), 1, "B did not read the ended parent")
	require.Len(t, fs.opens("child"), 2, "B took the child over, after A's checkpoint")
	require.Equal(t, map[string][]string{"B": {"child"}}, lsHeld(t, cp))

	// The stream trims the parent: its entry goes.
	fs.mu.Lock()
	fs.shards = slices.DeleteFunc(fs.shards, func(s *fsShard) bool { return s.id == "parent" })
	fs.mu.Unlock()
	_, err = b.Poll(ctx)
	require.NoError(t, err)
	require.Empty(t, getControlItem(t, cp, "shard#parent"))
	require.Equal(t, fs.seqs("child")[0], checkpointOf(t, cp, "child"))
}

// TestConsumerRunReleasesLeases: Run, when its context ends, releases its
// leases and deletes its heartbeat.
func TestConsumerRunReleasesLeases(t *testing.T) {
	t.Parallel()
	tb, fs := fsSetup(t)
	fs.shard("s0", "")
	it := fsTicket(0)
	fs.add(t, "s0", nil, &it)
	cp := newControlTable(t, "tickets")
	cp.Client = lsNoAbort{cp.Client} // the cancellation cuts off no request
	clock := newTestClock()
	// Checkpoints through a signal, leases in cp itself.
	sig := newSignalCheckpoints(cp, func(shard, _ string) bool { return shard == "s0" })
	a := newConsumer(t, tb, fs, sig, func(o *ConsumerOptions) {
		o.Retry, o.LeaseOwner, o.Now, o.Leases, o.PollInterval = fast, "A", clock.Now, cp, 10*time.Millisecond
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	awaitApplied(t, sig.reached, done, "the record")
	require.Equal(t, map[string][]string{"A": {"s0"}}, lsHeld(t, cp))
	cancel()
	require.ErrorIs(t, awaitReturn(t, done), context.Canceled)
	all, err := cp.ListLeases(t.Context())
	require.NoError(t, err)
	require.Equal(t, []Lease{{ShardID: "s0"}}, all, "no lease held, no heartbeat")
}

// lsNoAbort passes requests on without their context's cancellation, and
// reports the cancellation afterwards instead of the answer: a process
// killed while requests were in flight loses their answers, and the server
// never sees a request cut off (dynalite's server exits on a request
// aborted while it reads the body: its index.js rethrows the error).
type lsNoAbort struct{ c ddbindex.Client }

func lsAfter[R any](ctx context.Context, out R, err error) (R, error) {
	if ctx.Err() != nil {
		var zero R
		return zero, ctx.Err()
	}
	return out, err
}

func (n lsNoAbort) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := n.c.GetItem(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := n.c.BatchGetItem(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := n.c.Query(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := n.c.PutItem(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := n.c.UpdateItem(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := n.c.DeleteItem(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

func (n lsNoAbort) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := n.c.TransactWriteItems(context.WithoutCancel(ctx), in, o...)
	return lsAfter(ctx, out, err)
}

// TestConsumerKillAndRestartDurable: a consumer killed mid-batch (its
// context canceled while a write is in flight: the write made, its answer
// lost) and a new consumer started with the same DynamoDBCheckpoints (a new
// store value, as a new process would have): every record after the
// checkpoint is applied once, none before it; the writes the first one made
// without checkpointing them count as Stale; the index tables end exactly
// as the ground truth. On the server's real stream, and on the fake one with
// three shards (both servers).
func TestConsumerKillAndRestartDurable(t *testing.T) {
	t.Parallel()
	type source struct {
		name   string
		api    func(t *testing.T) (StreamsAPI, *ddbindex.Table[stTicket], int, func(t *testing.T, cp *DynamoDBCheckpoints) int)
		leases bool
	}
	real := func(t *testing.T) (StreamsAPI, *ddbindex.Table[stTicket], int, func(*testing.T, *DynamoDBCheckpoints) int) {
		stRequireStreams(t)
		tb, _ := newTestTable[stTicket](t, stFixedNow)
		n := cfWorkload(t, tb, "T1", 120, 2)
		recs := records(t, tb)
		require.Len(t, recs, n)
		return ddbtest.StreamsClient(t), tb, n, func(t *testing.T, cp *DynamoDBCheckpoints) int {
			done := 0
			seqs, err := cp.ListLeases(t.Context())
			require.NoError(t, err)
			require.LessOrEqual(t, len(seqs), 1, "one shard")
			for _, l := range seqs {
				seq := checkpointOf(t, cp, l.ShardID)
				for i, r := range recs {
					if aws.ToString(r.Dynamodb.SequenceNumber) == seq {
						done = i + 1
					}
				}
			}
			return done
		}
	}
	fake := func(t *testing.T) (StreamsAPI, *ddbindex.Table[stTicket], int, func(*testing.T, *DynamoDBCheckpoints) int) {
		tb, fs := fsSetup(t)
		shards := []string{"s0", "s1", "s2"}
		live := map[int]*stTicket{}
		n := 0
		for _, s := range shards {
			fs.shard(s, "")
		}
		for r := range 8 {
			for k, s := range shards {
				n += lsWork(t, fs, s, k, r, live)
			}
		}
		return fs, tb, n, func(t *testing.T, cp *DynamoDBCheckpoints) int {
			done := 0
			for _, s := range shards {
				if seq := checkpointOf(t, cp, s); seq != "" {
					done += slices.Index(fs.seqs(s), seq) + 1
				}
			}
			return done
		}
	}
	for _, src := range []source{{"real stream", real, false}, {"fake stream", fake, false}, {"fake stream with leases", fake, true}} {
		for _, workers := range []int{1, 16} {
			t.Run(fmt.Sprintf("%s/%d workers", src.name, workers), func(t *testing.T) {
				t.Parallel()
				api, tb, n, checkpointed := src.api(t)
				c := ddbtest.Client(t)
				// Ground truth: the records applied once, in order.
				ref := stFresh(t, tb, "want")
				wantStats, err := newConsumer(t, ref, api, &MemoryCheckpoints{}, func(o *ConsumerOptions) { o.Retry, o.Workers = cfRetry, 1 }).Poll(t.Context())
				require.NoError(t, err)
				require.Equal(t, n, wantStats.Changes)
				want := snapshot(t, ref)

				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				kill := &cfKillClient{Client: lsNoAbort{c}, at: 40, cancel: cancel}
				dying, plain := cfIndexTables(t, tb, kill, fmt.Sprint("w", workers))
				store := newControlTable(t, "tickets")
				store.Client = lsNoAbort{c} // the dying consumer's checkpoints
				clock := newTestClock()
				opts := func(owner string) func(*ConsumerOptions) {
					return func(o *ConsumerOptions) {
						o.Workers, o.CheckpointEvery, o.Retry, o.LeaseOwner, o.Now = workers, 10, cfRetry, owner, clock.Now
						if src.leases {
							o.Leases = store
						}
					}
				}
				st1, err := newConsumer(t, dying, api, store, opts("first")).Poll(ctx)
				require.ErrorIs(t, err, context.Canceled)
				require.NotNil(t, kill.killed.Load(), "killed mid-batch")
				done := checkpointed(t, store)
				require.Less(t, done, n)
				if workers == 1 {
					require.Equal(t, st1.Changes, done, "one worker: every record it applied was checkpointed as it stopped")
				}
				t.Logf("killed at the 40th index write; %d of %d records checkpointed; first consumer %+v", done, n, st1)

				if src.leases {
					clock.Add(time.Minute) // the dead consumer's leases run out
				}
				again := &DynamoDBCheckpoints{Client: c, Table: store.Table, Name: store.Name}
				st2, err := newConsumer(t, plain, api, again, opts("second")).Poll(t.Context())
				require.NoError(t, err)
				require.Equal(t, n-done, st2.Changes, "every record after the checkpoints, once; none before them")
				require.Positive(t, st2.Stale, "the write made at the kill is re-applied as stale")
				require.Equal(t, want, snapshot(t, plain), "nothing lost")
				require.Equal(t, n, checkpointed(t, again), "checkpointed to the end")
			})
		}
	}
}

// TestConsumersShareRealStream: two consumers polling the server's real
// stream (one shard) at the same time, with DynamoDB checkpoints, with and
// without leases: the index tables end as the ground truth either way;
// without leases both apply every record, with them one consumer does.
func TestConsumersShareRealStream(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	n := cfWorkload(t, tb, "T1", 150, 5)
	recs := records(t, tb)
	require.Len(t, recs, n)
	last := aws.ToString(recs[n-1].Dynamodb.SequenceNumber)
	ref := stFresh(t, tb, "want")
	_, err := ref.Apply(t.Context(), toChanges(t, recs))
	require.NoError(t, err)
	want := snapshot(t, ref)
	sc := ddbtest.StreamsClient(t)
	for _, leases := range []bool{false, true} {
		t.Run(fmt.Sprint("leases=", leases), func(t *testing.T) {
			t.Parallel()
			fresh := stFresh(t, tb, fmt.Sprint("leases", leases))
			cp := newControlTable(t, "tickets")
			// reached: the shard's checkpoint is at its last record.
			sig := newSignalCheckpoints(cp, func(_, seq string) bool { return seq == last })
			clock := newTestClock()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// Without leases each consumer is to apply every record: neither
			// reads a page before both have opened the shard at its
			// checkpoint (none yet), or one could start after the other's
			// progress.
			opened := &lsBarrier{left: 2, all: make(chan struct{})}
			var got [2]ddbindex.ApplyStats
			var errs [2]error // each goroutine writes its own slots, read once both are joined
			var wg sync.WaitGroup
			for i, owner := range []string{"A", "B"} {
				var api StreamsAPI = sc
				var ls Leases
				if leases {
					ls = cp
				} else {
					api = &lsBarrierStreams{StreamsAPI: sc, b: opened}
				}
				c := newConsumer(t, fresh, api, sig, func(o *ConsumerOptions) {
					o.Retry, o.LeaseOwner, o.Now, o.Leases = fast, owner, clock.Now, ls
				})
				wg.Go(func() {
					if errs[i] = lsReadToEnd(ctx, c, ls, owner, n, &got[i], sig.reached); errs[i] != nil {
						cancel() // the other one may wait for this one
					}
				})
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs[:]...))
			require.Equal(t, last, checkpointOf(t, cp, lsOnlyShard(t, cp)), "checkpointed to the end")
			require.Equal(t, want, snapshot(t, fresh), "exactly the ground truth")
			total := got[0].Changes + got[1].Changes
			t.Logf("leases=%v: %d records; A applied %d, B %d: %d duplicate applies", leases, n, got[0].Changes, got[1].Changes, total-n)
			if leases {
				require.Equal(t, n, total, "one consumer holds the one shard: no record applied twice")
			} else {
				require.Equal(t, 2*n, total, "each consumer applies every record")
			}
		})
	}
}

// lsMaxPasses bounds lsReadToEnd's passes: far more than reading a local
// server's stream of a few hundred records takes.
const lsMaxPasses = 100

// lsReadToEnd polls c, one of two consumers of the real stream's one shard,
// until it has done its part: without leases (ls nil), until it has applied
// every one of the n records itself; with them, until the shard's
// checkpoint is at its last record (reached is closed). A consumer that
// does not hold the lease after a pass waits for that without polling: the
// other one holds it and keeps it (the test clock does not move, so its
// lease never runs out, and one shard is nobody's excess).
func lsReadToEnd(ctx context.Context, c *Consumer[stTicket], ls Leases, owner string, n int, got *ddbindex.ApplyStats, reached <-chan struct{}) error {
	for pass := 1; pass <= lsMaxPasses; pass++ {
		st, err := c.Poll(ctx)
		addStats(got, st)
		if err != nil {
			return fmt.Errorf("%s, pass %d: %w", owner, pass, err)
		}
		if ls == nil {
			if got.Changes >= n {
				return nil
			}
			continue
		}
		select {
		case <-reached:
			return nil
		default:
		}
		all, err := ls.ListLeases(ctx)
		if err != nil {
			return fmt.Errorf("%s, pass %d: %w", owner, pass, err)
		}
		if !slices.ContainsFunc(all, func(l Lease) bool { return l.ShardID != "" && l.Owner == owner }) {
			select {
			case <-reached:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("%s, waiting for the other consumer: %w", owner, ctx.Err())
			case <-time.After(hangGuard):
				return fmt.Errorf("%s: the other consumer did not read the shard to its end within the hang guard (%v)", owner, hangGuard)
			}
		}
	}
	return fmt.Errorf("%s: the stream's end not reached in %d passes", owner, lsMaxPasses)
}

// lsBarrier is closed (all) once left consumers have arrived.
type lsBarrier struct {
	mu   sync.Mutex
	left int
	all  chan struct{}
}

func (b *lsBarrier) arrive() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left--; b.left == 0 {
		close(b.all)
	}
}

// lsBarrierStreams holds a consumer's GetRecords calls until every consumer
// sharing the barrier has come to its first one (or ctx ends).
type lsBarrierStreams struct {
	StreamsAPI
	once sync.Once
	b    *lsBarrier
}

func (h *lsBarrierStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	h.once.Do(h.b.arrive)
	select {
	case <-h.b.all:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.StreamsAPI.GetRecords(ctx, in, o...)
}

// lsOnlyShard returns the one shard of the store with a checkpoint or lease.
func lsOnlyShard(t *testing.T, cp *DynamoDBCheckpoints) string {
	t.Helper()
	all, err := cp.ListLeases(t.Context())
	require.NoError(t, err)
	var shards []string
	for _, l := range all {
		if l.ShardID != "" {
			shards = append(shards, l.ShardID)
		}
	}
	require.Len(t, shards, 1, "one shard")
	return shards[0]
}

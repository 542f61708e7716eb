package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of the stream path (the consumer, and Table.Apply under it) against
// the test server's real stream: the consumer, checkpoints, replay,
// redelivery, reordering, and Lambda events.

// stWorkload writes a series of puts, moves, updates, deletes and re-inserts
// and returns how many base changes (stream records) it made.
func stWorkload(t *testing.T, tb *ddbindex.Table[stTicket], team string) int {
	t.Helper()
	ctx := t.Context()
	changes := 0
	put := func(it stTicket) stTicket {
		t.Helper()
		it, err := tb.Put(ctx, it)
		require.NoError(t, err)
		changes++
		return it
	}
	move := func(from stTicket, status string) stTicket {
		t.Helper()
		to := from
		to.Status = status
		to, err := tb.Move(ctx, from, to)
		require.NoError(t, err)
		changes += 2
		return to
	}
	del := func(it stTicket) {
		t.Helper()
		require.NoError(t, tb.Delete(ctx, it))
		changes++
	}
	var ts []stTicket
	for i := range 8 {
		it := stTicket{Team: team, Status: "open", ID: fmt.Sprint(i), Created: stNow.Add(time.Duration(i) * time.Minute), Title: fmt.Sprint("ticket ", i)}
		if i%2 == 0 {
			it.Owner = stOwner(fmt.Sprint("user", i%3))
		}
		ts = append(ts, put(it))
	}
	ts[1] = move(ts[1], "pending")
	ts[2] = move(ts[2], "closed")
	ts[1] = move(ts[1], "open") // back: its old entry comes alive again
	ts[3].Title = "renamed"     // projected by by_status only
	ts[3] = put(ts[3])
	ts[4].Owner = nil // leaves by_owner
	ts[4] = put(ts[4])
	ts[5].Owner = stOwner("user9") // enters by_owner
	ts[5] = put(ts[5])
	ts[6].Created = ts[6].Created.Add(time.Hour) // by_status sort key change
	ts[6] = put(ts[6])
	del(ts[7])
	del(ts[2])
	ts[7].Title = "re-inserted"
	ts[7] = put(ts[7])
	return changes
}

// TestStreamConsumerPoll keeps the index tables in step from the real
// stream, with checkpoints, and replays it.
func TestStreamConsumerPoll(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	ctx := t.Context()
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	sc := ddbtest.StreamsClient(t)
	n := stWorkload(t, tb, "T1")

	cp := &MemoryCheckpoints{}
	cons := newConsumer(t, tb, sc, cp, with(ConsumerOptions{BatchSize: 4})) // several batches, several checkpoints
	first, err := cons.Poll(ctx)
	require.NoError(t, err)
	t.Logf("first poll: %+v", first)
	require.Equal(t, n, first.Changes, "one change per stream record")
	require.Zero(t, first.Stale)
	require.Positive(t, first.Puts)
	require.Positive(t, first.Deletes)
	stCheckIndexes(t, tb, "T1")
	snap := snapshot(t, tb)

	again, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Zero(t, again, "a second poll applies nothing")
	again, err = newConsumer(t, tb, sc, cp).Poll(ctx)
	require.NoError(t, err)
	require.Zero(t, again, "a new consumer with the same checkpoints applies nothing")

	replay, err := newConsumer(t, tb, sc, &MemoryCheckpoints{}).Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: first.Changes, Stale: first.Puts + first.Deletes}, replay,
		"a replay from the start skips every write as stale")
	require.Equal(t, snap, snapshot(t, tb), "a replay changes nothing")

	// More changes after the checkpoint: only they are applied.
	ts := indexItems(t, tb, "", false, "T1")
	to := ts[0]
	to.Status = "waiting"
	_, err = tb.Move(ctx, ts[0], to)
	require.NoError(t, err)
	_, err = tb.Put(ctx, stTicket{Team: "T1", Status: "open", ID: "new", Created: stNow, Owner: stOwner("zed")})
	require.NoError(t, err)
	more, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, more.Changes)
	require.Zero(t, more.Stale)
	stCheckIndexes(t, tb, "T1")
}

// TestStreamConsumerRun runs the consumer until its context ends.
func TestStreamConsumerRun(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	tb, _ := newTestTable[stTicket](t)
	sc := ddbtest.StreamsClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	// The stream's one record is the put: its checkpoint says Run applied it.
	cp := newSignalCheckpoints(&MemoryCheckpoints{}, func(string, string) bool { return true })
	cons := newConsumer(t, tb, sc, cp, with(ConsumerOptions{PollInterval: 20 * time.Millisecond}))
	go func() { done <- cons.Run(ctx) }()

	it, err := tb.Put(t.Context(), stTicket{Team: "T1", Status: "open", ID: "1", Created: stNow, Title: "run"})
	require.NoError(t, err)
	awaitApplied(t, cp.reached, done, "the put")
	require.Equal(t, []stTicket{it}, indexItems(t, tb, "by_status", false, "T1"))
	cancel()
	require.ErrorIs(t, awaitReturn(t, done), context.Canceled)

	// A pass that fails ends Run with that error.
	bad := newConsumer(t, tb, sc, &MemoryCheckpoints{}, with(ConsumerOptions{StreamARN: "arn:aws:dynamodb:us-east-1:000000000000:table/nope/stream/2026-01-01T00:00:00.000"}))
	err = bad.Run(t.Context())
	require.Error(t, err)
	require.ErrorContains(t, err, "describe stream")
}

// TestApplyIdempotentAndOrderSafe applies recorded stream changes twice, in
// reverse, in random order, and as Lambda events, and redelivers older
// changes after newer ones: every way ends in the same index tables.
func TestApplyIdempotentAndOrderSafe(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	ctx := t.Context()
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	n := stWorkload(t, tb, "T1")
	recs := records(t, tb)
	require.Len(t, recs, n)
	changes := toChanges(t, recs)

	forward, err := tb.Apply(ctx, changes)
	require.NoError(t, err)
	writes := forward.Puts + forward.Deletes
	require.Equal(t, ddbindex.ApplyStats{Changes: n, Puts: forward.Puts, Deletes: forward.Deletes}, forward)
	stCheckIndexes(t, tb, "T1")
	want := snapshot(t, tb)
	allStale := ddbindex.ApplyStats{Changes: n, Stale: writes}

	st, err := tb.Apply(ctx, changes)
	require.NoError(t, err)
	require.Equal(t, allStale, st, "applying the batch twice")
	require.Equal(t, want, snapshot(t, tb))

	reversed := slices.Clone(changes)
	slices.Reverse(reversed)
	st, err = tb.Apply(ctx, reversed)
	require.NoError(t, err)
	require.Equal(t, allStale, st, "the batch in reverse after it")
	require.Equal(t, want, snapshot(t, tb))

	// Redeliver random older subsets after the newest record.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		cut := 1 + rng.IntN(n-1)
		older := slices.Clone(changes[:cut])
		rng.Shuffle(len(older), func(i, j int) { older[i], older[j] = older[j], older[i] })
		_, err := tb.Apply(ctx, older)
		require.NoError(t, err)
		require.Equal(t, want, snapshot(t, tb), "redelivering %d older records", cut)
	}

	// On fresh index tables, any order ends in the same state: each entry
	// keeps the write of its newest change.
	for name, order := range map[string][]ddbindex.Change{
		"reverse": reversed,
		"shuffled": func() []ddbindex.Change {
			s := slices.Clone(changes)
			rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			return s
		}(),
	} {
		fresh := stFresh(t, tb, name)
		st, err := fresh.Apply(ctx, order)
		require.NoError(t, err)
		require.Equal(t, n, st.Changes)
		require.Equal(t, writes, st.Puts+st.Deletes+st.Stale, "%s: the same writes, some skipped", name)
		require.Equal(t, want, snapshot(t, fresh), "%s order", name)
	}

	// The same records as a Lambda event, through its JSON form.
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(recs))}
	for i, r := range recs {
		ev.Records[i] = stLambdaRecord(t, r)
	}
	js, err := json.Marshal(ev)
	require.NoError(t, err)
	var decoded events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(js, &decoded))
	lambda := stFresh(t, tb, "lambda")
	var lambdaOps opCounter
	st, err = ApplyLambdaEvent(ctx, lambda, decoded, lambdaOps.dynamodb)
	require.NoError(t, err)
	require.Equal(t, forward, st, "the Lambda path writes what the stream path wrote")
	require.Equal(t, map[string]int{"PutItem": st.Puts + st.Deletes + st.Stale}, lambdaOps.counts(),
		"the per-call options reach every write of the event")
	require.Equal(t, want, snapshot(t, lambda))
	st, err = ApplyLambdaEvent(ctx, lambda, decoded)
	require.NoError(t, err)
	require.Equal(t, allStale, st, "a redelivered Lambda batch")
}

func stLambdaRecord(t *testing.T, r streamtypes.Record) events.DynamoDBEventRecord {
	t.Helper()
	img := func(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
		if m == nil {
			return nil
		}
		out := make(map[string]events.DynamoDBAttributeValue, len(m))
		for k, v := range m {
			out[k] = stLambdaAV(t, v)
		}
		return out
	}
	return events.DynamoDBEventRecord{
		EventID: aws.ToString(r.EventID), EventName: string(r.EventName), EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
		Change: events.DynamoDBStreamRecord{
			Keys: img(r.Dynamodb.Keys), OldImage: img(r.Dynamodb.OldImage), NewImage: img(r.Dynamodb.NewImage),
			SequenceNumber: aws.ToString(r.Dynamodb.SequenceNumber), StreamViewType: string(r.Dynamodb.StreamViewType),
		},
	}
}

func stLambdaAV(t *testing.T, v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	t.Helper()
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = stLambdaAV(t, e)
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		m := make(map[string]events.DynamoDBAttributeValue, len(v.Value))
		for k, e := range v.Value {
			m[k] = stLambdaAV(t, e)
		}
		return events.NewMapAttribute(m)
	}
	t.Fatalf("unexpected stream attribute value %T", v)
	return events.DynamoDBAttributeValue{}
}

// stFailingCheckpoints fails reads or writes of checkpoints.
type stFailingCheckpoints struct {
	MemoryCheckpoints
	failRead, failWrite bool
}

var errStCheckpoint = errors.New("checkpoint store unavailable")

func (f *stFailingCheckpoints) Checkpoint(ctx context.Context, shard string) (string, error) {
	if f.failRead {
		return "", errStCheckpoint
	}
	return f.MemoryCheckpoints.Checkpoint(ctx, shard)
}

func (f *stFailingCheckpoints) SetCheckpoint(ctx context.Context, shard, seq string) error {
	if f.failWrite {
		return errStCheckpoint
	}
	return f.MemoryCheckpoints.SetCheckpoint(ctx, shard, seq)
}

// stFaultyStreams passes calls to the real Streams client, failing the one
// named: for errors the local server cannot be made to return.
type stFaultyStreams struct {
	StreamsAPI
	fail string
}

var errStInjected = errors.New("injected streams failure")

func (f *stFaultyStreams) ListStreams(ctx context.Context, in *dynamodbstreams.ListStreamsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error) {
	if f.fail == "ListStreams" {
		return nil, errStInjected
	}
	return f.StreamsAPI.ListStreams(ctx, in, o...)
}

func (f *stFaultyStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if f.fail == "GetShardIterator" {
		return nil, errStInjected
	}
	return f.StreamsAPI.GetShardIterator(ctx, in, o...)
}

func (f *stFaultyStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if f.fail == "GetRecords" {
		return nil, errStInjected
	}
	return f.StreamsAPI.GetRecords(ctx, in, o...)
}

// stPlainNote is a model without index tables: its table is created
// without a stream.
type stPlainNote struct {
	_    ddbindex.TableSpec `ddbindex:"st-notes"`
	Team string             `dynamodbav:"team" ddbindex:"pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk"`
}

// stMismatch reads the same base table with Created declared as an integer:
// its images do not fit, so applying them fails.
type stMismatch struct {
	_       ddbindex.TableSpec `ddbindex:"st-tickets,pk=PK,sk=SK"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string             `dynamodbav:"id" ddbindex:"sk:1,label=TICKET"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// TestStreamConsumerErrors: every failure of a pass is returned, and a
// failed batch is not checkpointed.
func TestStreamConsumerErrors(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ctx := t.Context()
	tb, c := newTestTable[stTicket](t)
	sc := ddbtest.StreamsClient(t)
	_, err := tb.Put(ctx, stTicket{Team: "T1", Status: "open", ID: "1", Created: stNow})
	require.NoError(t, err)

	_, err = newConsumer(t, tb, sc, &stFailingCheckpoints{failRead: true}).Poll(ctx)
	require.ErrorIs(t, err, errStCheckpoint)
	require.ErrorContains(t, err, "read checkpoint")

	cp := &stFailingCheckpoints{failWrite: true}
	st, err := newConsumer(t, tb, sc, cp).Poll(ctx)
	require.ErrorIs(t, err, errStCheckpoint)
	require.ErrorContains(t, err, "write checkpoint")
	require.Equal(t, 1, st.Changes, "the batch was applied, then its checkpoint failed")

	for call, msg := range map[string]string{"ListStreams": "list streams", "GetShardIterator": "shard iterator", "GetRecords": "read shard"} {
		_, err = newConsumer(t, tb, &stFaultyStreams{StreamsAPI: sc, fail: call}, &MemoryCheckpoints{}).Poll(ctx)
		require.ErrorIs(t, err, errStInjected, call)
		require.ErrorContains(t, err, msg)
	}

	// Images that do not fit the model: a poison record, nothing is
	// checkpointed.
	// Its base table is tb's; its index table is never written.
	mm, err := ddbindex.New[stMismatch](c, func(o *ddbindex.Options) {
		o.TableName = func(s string) string {
			if s == "st-tickets" {
				return tb.TableName()
			}
			return tb.TableName() + "-" + s
		}
	})
	require.NoError(t, err)
	mcp := &MemoryCheckpoints{}
	_, err = newConsumer(t, mm, sc, mcp).Poll(ctx)
	require.ErrorIs(t, err, ddbindex.ErrPoisonRecord)
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, "the cause: the image does not fit the model")
	require.Equal(t, "DDBX-701", ddbindex.Code(err))
	require.ErrorContains(t, err, "Created")
	require.Empty(t, mcp.seq, "a failed batch is not checkpointed")

	// A table without a stream.
	plain, _ := newTestTable[stPlainNote](t) // no index table: created without a stream
	_, err = newConsumer(t, plain, sc, &MemoryCheckpoints{}).Poll(ctx)
	require.ErrorContains(t, err, "has no stream")
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
}

// TestConsumerMisuse: a consumer without its parts fails with an error,
// before any request.
func TestConsumerMisuse(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[stTicket](nil)
	require.NoError(t, err)
	var nilConsumer *Consumer[stTicket]
	for name, c := range map[string]*Consumer[stTicket]{
		"nil":               nilConsumer,
		"zero":              {},
		"no table":          newConsumer[stTicket](t, nil, &stShardStreams{}, &MemoryCheckpoints{}),
		"no Streams client": newConsumer(t, tb, nil, &MemoryCheckpoints{}),
		"no checkpoints":    newConsumer(t, tb, &stShardStreams{}, nil),
	} {
		_, err := c.Poll(t.Context())
		require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, name)
		require.ErrorContains(t, c.Run(t.Context()), "use NewConsumer", name)
	}
}

// stShardStreams serves a fixed shard list, in pages: the local servers have
// one shard, so the ordering of parent and child shards and the paging of
// DescribeStream are tested on a declared list (no records are involved).
type stShardStreams struct {
	StreamsAPI
	pages [][]streamtypes.Shard
}

func (s *stShardStreams) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	i := 0
	if in.ExclusiveStartShardId != nil {
		fmt.Sscanf(aws.ToString(in.ExclusiveStartShardId), "page-%d", &i)
	}
	desc := &streamtypes.StreamDescription{Shards: s.pages[i]}
	if i+1 < len(s.pages) {
		desc.LastEvaluatedShardId = aws.String(fmt.Sprintf("page-%d", i+1))
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func TestStreamShardOrder(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[stTicket](nil)
	require.NoError(t, err)
	sh := func(id, parent string) streamtypes.Shard {
		s := streamtypes.Shard{ShardId: aws.String(id)}
		if parent != "" {
			s.ParentShardId = aws.String(parent)
		}
		return s
	}
	api := &stShardStreams{pages: [][]streamtypes.Shard{
		{sh("grandchild", "child-a"), sh("child-b", "root")},
		{sh("child-a", "root"), sh("orphan", "trimmed-away")},
		{sh("root", "")},
	}}
	cons := newConsumer(t, tb, api, &MemoryCheckpoints{}, with(ConsumerOptions{StreamARN: "arn"}))
	shards, err := cons.shards(t.Context(), "arn")
	require.NoError(t, err)
	pos := map[string]int{}
	for i, s := range shards {
		pos[aws.ToString(s.ShardId)] = i
	}
	require.Len(t, pos, 5, "every shard of every page, once")
	require.Less(t, pos["root"], pos["child-a"])
	require.Less(t, pos["root"], pos["child-b"])
	require.Less(t, pos["child-a"], pos["grandchild"])

	cyc := &stShardStreams{pages: [][]streamtypes.Shard{{sh("a", "b"), sh("b", "a")}}}
	_, err = newConsumer(t, tb, cyc, &MemoryCheckpoints{}, with(ConsumerOptions{StreamARN: "arn"})).shards(t.Context(), "arn")
	require.ErrorContains(t, err, "cycle")

	// Defaults.
	require.Equal(t, int32(1000), cons.opts.BatchSize)
	require.Equal(t, time.Second, cons.opts.PollInterval)
	require.Equal(t, 3, cons.opts.MaxEmptyReads)
	require.Equal(t, 16, cons.opts.Workers)
	require.Equal(t, 100, cons.opts.CheckpointEvery)
	require.Equal(t, ddbindex.RetryOptions{MaxAttempts: 10, BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second}, cons.opts.Retry)
}

func TestMemoryCheckpoints(t *testing.T) {
	t.Parallel()
	var m MemoryCheckpoints
	got, err := m.Checkpoint(t.Context(), "shard-1")
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, m.SetCheckpoint(t.Context(), "shard-1", "17"))
	require.NoError(t, m.SetCheckpoint(t.Context(), "shard-2", "3"))
	got, _ = m.Checkpoint(t.Context(), "shard-1")
	require.Equal(t, "17", got)
	got, _ = m.Checkpoint(t.Context(), "shard-2")
	require.Equal(t, "3", got)
}

// opCounter counts, by operation name, the SDK operations of the calls
// whose per-call options it is in (once per operation, whatever its retries).
type opCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounter) count(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[awsmiddleware.GetOperationName(ctx)]++
}

func (c *opCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

func (c *opCounter) mw(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("opCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.count(ctx)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

func (c *opCounter) dynamodb(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.mw) }
func (c *opCounter) streams(o *dynamodbstreams.Options) {
	o.APIOptions = append(o.APIOptions, c.mw)
}

// The consumer applies its ClientOptions to every index write and its
// StreamsClientOptions to every DynamoDB Streams request.
func TestConsumerClientOptions(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	ctx := t.Context()
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	n := stWorkload(t, tb, "T1")
	var writes, reads opCounter
	cons := newConsumer(t, tb, ddbtest.StreamsClient(t), &MemoryCheckpoints{}, func(o *ConsumerOptions) {
		o.ClientOptions = append(o.ClientOptions, writes.dynamodb)
		o.StreamsClientOptions = append(o.StreamsClientOptions, reads.streams)
	})
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, n, st.Changes)
	require.Equal(t, map[string]int{"PutItem": st.Puts + st.Deletes + st.Stale}, writes.counts(), "every index write")
	r := reads.counts()
	require.Positive(t, r["ListStreams"])
	require.Positive(t, r["DescribeStream"])
	require.Positive(t, r["GetShardIterator"])
	require.Positive(t, r["GetRecords"])
	require.Len(t, r, 4, "only Streams operations: %v", r)
}

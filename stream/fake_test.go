package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// fsStream is a fake DynamoDB Streams service: one stream of synthetic
// shards whose records are changes of stTicket items. It behaves as the
// DynamoDB Streams API Reference documents, in the ways the local servers
// (one open shard, records always at hand, iterators that never expire)
// cannot be made to:
//
//   - GetRecords: "If there are no stream records available in the portion
//     of the shard that the iterator points to, GetRecords returns an empty
//     list. Note that it might take multiple calls to get to a portion of
//     the shard that contains stream records." Each shard declares, per
//     position, how many empty pages come before the records from there on.
//   - GetRecordsOutput.NextShardIterator: "If set to null, the shard has been
//     closed and the requested iterator will not return any more data." An
//     open shard's end answers empty pages with an iterator; a closed shard's
//     answers null (after its trailing empty pages).
//   - DescribeStream: "If the SequenceNumberRange has a StartingSequenceNumber
//     but no EndingSequenceNumber, then the shard is still open [...] If both
//     [...] are present, then that shard is closed".
//   - ExpiredIteratorException: "The shard iterator has expired and can no
//     longer be used to retrieve stream records. A shard iterator expires 15
//     minutes after it is retrieved using the GetShardIterator action." The
//     test expires every iterator issued so far (expireAll, or expireOnCall),
//     as 15 minutes passing would.
//   - TrimmedDataAccessException: "You might receive a
//     TrimmedDataAccessException if: You request a shard iterator with a
//     sequence number older than the trim point (24 hours). You obtain a shard
//     iterator, but before you use the iterator in a GetRecords request, a
//     stream record in the shard exceeds the 24 hour period and is trimmed."
//     trim drops a shard's oldest records.
//   - GetShardIterator: "TRIM_HORIZON - Start reading at the last (untrimmed)
//     stream record, which is the oldest record in the shard", and
//     AFTER_SEQUENCE_NUMBER "Start reading right after the position denoted
//     by a specific sequence number".
//
// (The quotes are from the API Reference's GetRecords, GetShardIterator and
// DescribeStream pages and its Errors, as the SDK's service/dynamodbstreams
// documentation reproduces them.)
//
// Iterators are tokens naming a shard, a position and how many of the empty
// pages before that position were served; the same token read twice gives
// the same page, as a real iterator does until it expires.
type fsStream struct {
	tb  *ddbindex.Table[stTicket]
	arn string

	mu            sync.Mutex
	shards        []*fsShard
	seq           int
	iters         []fsIter // token "it-N" is iters[N]
	expiredBefore int      // tokens below this number are expired
	alwaysExpired bool     // every iterator is expired when used
	expireOnCall  int      // the GetRecords call of this number expires every token issued before it
	getRecords    int      // GetRecords calls
	fail          map[string][]error
	openCalls     map[string][]*dynamodbstreams.GetShardIteratorInput // GetShardIterator calls, per shard
	readCalls     map[string]int                                      // GetRecords calls that reached a shard
}

type fsShard struct {
	id, parent string
	closed     bool
	recs       []streamtypes.Record
	empties    map[int]int // position → empty pages served before the records from there on
	trimmed    int         // records before this position were trimmed
}

type fsIter struct {
	shard   *fsShard
	pos     int
	emptied int // empty pages already served at pos
}

func newFSStream(tb *ddbindex.Table[stTicket]) *fsStream {
	return &fsStream{tb: tb, arn: "arn:aws:dynamodb:us-east-1:000000000000:table/" + tb.TableName() + "/stream/2026-12-02T00:00:00.000",
		seq: 1000, fail: map[string][]error{}, openCalls: map[string][]*dynamodbstreams.GetShardIteratorInput{}, readCalls: map[string]int{}}
}

// shard adds a shard; parent "" for none.
func (fs *fsStream) shard(id, parent string) *fsShard {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := &fsShard{id: id, parent: parent, empties: map[int]int{}}
	fs.shards = append(fs.shards, s)
	return s
}

func (fs *fsStream) find(id string) *fsShard {
	for _, s := range fs.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

// add appends a change record of an item to a shard (old nil: INSERT; new
// nil: REMOVE) and returns its sequence number.
func (fs *fsStream) add(t *testing.T, shard string, old, new *stTicket) string {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.seq++
	seq := strconv.Itoa(fs.seq)
	sr := &streamtypes.StreamRecord{SequenceNumber: aws.String(seq), StreamViewType: streamtypes.StreamViewTypeNewAndOldImages}
	event := streamtypes.OperationTypeModify
	var img map[string]types.AttributeValue
	if old != nil {
		img = fsMarshal(t, fs.tb, *old)
		sr.OldImage = fsStreamImage(img)
	} else {
		event = streamtypes.OperationTypeInsert
	}
	if new != nil {
		img = fsMarshal(t, fs.tb, *new)
		sr.NewImage = fsStreamImage(img)
	} else {
		event = streamtypes.OperationTypeRemove
	}
	sr.Keys = map[string]streamtypes.AttributeValue{"PK": fsStreamAV(img["PK"]), "SK": fsStreamAV(img["SK"])}
	s := fs.find(shard)
	s.recs = append(s.recs, streamtypes.Record{EventName: event, Dynamodb: sr, EventSource: aws.String("aws:dynamodb")})
	return seq
}

// addRaw appends a record as given, with the next sequence number.
func (fs *fsStream) addRaw(shard string, r streamtypes.Record) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.seq++
	seq := strconv.Itoa(fs.seq)
	if r.Dynamodb == nil {
		r.Dynamodb = &streamtypes.StreamRecord{}
	}
	r.Dynamodb.SequenceNumber = aws.String(seq)
	s := fs.find(shard)
	s.recs = append(s.recs, r)
	return seq
}

// emptyPages makes n empty pages come before the shard's next record (or,
// at its end, before its end).
func (fs *fsStream) emptyPages(shard string, n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.find(shard)
	s.empties[len(s.recs)] = n
}

func (fs *fsStream) close(shard string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.find(shard).closed = true
}

// trim drops the shard's first n records, as 24 hours passing would.
func (fs *fsStream) trim(shard string, n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.find(shard).trimmed = n
}

// expireAll expires every iterator issued so far, as 15 minutes passing
// would.
func (fs *fsStream) expireAll() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.expiredBefore = len(fs.iters)
}

// failNext makes the next calls of op fail with errs, in order.
func (fs *fsStream) failNext(op string, errs ...error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.fail[op] = append(fs.fail[op], errs...)
}

func (fs *fsStream) injected(op string) error {
	if errs := fs.fail[op]; len(errs) > 0 {
		fs.fail[op] = errs[1:]
		return errs[0]
	}
	return nil
}

func (fs *fsStream) opens(shard string) []*dynamodbstreams.GetShardIteratorInput {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.openCalls[shard]
}

func (fs *fsStream) reads(shard string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.readCalls[shard]
}

func (fs *fsStream) seqs(shard string) []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []string
	for _, r := range fs.find(shard).recs {
		out = append(out, aws.ToString(r.Dynamodb.SequenceNumber))
	}
	return out
}

// changes returns the Changes of a shard's records from..to (exclusive).
func (fs *fsStream) changes(t *testing.T, shard string, from, to int) []ddbindex.Change {
	t.Helper()
	fs.mu.Lock()
	recs := fs.find(shard).recs[from:to]
	fs.mu.Unlock()
	return toChanges(t, recs)
}

func (fs *fsStream) issue(s *fsShard, pos, emptied int) *string {
	fs.iters = append(fs.iters, fsIter{s, pos, emptied})
	return aws.String(fmt.Sprintf("it-%d", len(fs.iters)-1))
}

func (fs *fsStream) ListStreams(_ context.Context, in *dynamodbstreams.ListStreamsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.injected("ListStreams"); err != nil {
		return nil, err
	}
	return &dynamodbstreams.ListStreamsOutput{Streams: []streamtypes.Stream{{StreamArn: aws.String(fs.arn), TableName: in.TableName}}}, nil
}

func (fs *fsStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.injected("DescribeStream"); err != nil {
		return nil, err
	}
	if aws.ToString(in.StreamArn) != fs.arn {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	desc := &streamtypes.StreamDescription{StreamArn: in.StreamArn, StreamStatus: streamtypes.StreamStatusEnabled}
	for _, s := range fs.shards {
		sh := streamtypes.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		if s.closed {
			end := "1"
			if n := len(s.recs); n > 0 {
				end = aws.ToString(s.recs[n-1].Dynamodb.SequenceNumber)
			}
			sh.SequenceNumberRange.EndingSequenceNumber = aws.String(end)
		}
		desc.Shards = append(desc.Shards, sh)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (fs *fsStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	id := aws.ToString(in.ShardId)
	cp := *in
	fs.openCalls[id] = append(fs.openCalls[id], &cp)
	if err := fs.injected("GetShardIterator"); err != nil {
		return nil, err
	}
	s := fs.find(id)
	if s == nil || aws.ToString(in.StreamArn) != fs.arn {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeTrimHorizon:
		return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: fs.issue(s, s.trimmed, 0)}, nil
	case streamtypes.ShardIteratorTypeAfterSequenceNumber:
		for i, r := range s.recs {
			if aws.ToString(r.Dynamodb.SequenceNumber) != aws.ToString(in.SequenceNumber) {
				continue
			}
			if i < s.trimmed {
				return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("The requested sequence number is beyond the trim horizon")}
			}
			return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: fs.issue(s, i+1, 0)}, nil
		}
		return nil, fmt.Errorf("fake stream: no sequence number %s in shard %s", aws.ToString(in.SequenceNumber), id)
	}
	return nil, fmt.Errorf("fake stream: iterator type %s not served", in.ShardIteratorType)
}

func (fs *fsStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.getRecords++
	if fs.getRecords == fs.expireOnCall {
		fs.expiredBefore = len(fs.iters)
	}
	if err := fs.injected("GetRecords"); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(in.ShardIterator), "it-"))
	if err != nil || n < 0 || n >= len(fs.iters) {
		return nil, fmt.Errorf("fake stream: invalid shard iterator %q", aws.ToString(in.ShardIterator))
	}
	it := fs.iters[n]
	s := it.shard
	fs.readCalls[s.id]++
	if fs.alwaysExpired || n < fs.expiredBefore {
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired")}
	}
	if it.pos < s.trimmed {
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("The operation attempted to read past the oldest stream record in a shard")}
	}
	if it.emptied < s.empties[it.pos] {
		return &dynamodbstreams.GetRecordsOutput{NextShardIterator: fs.issue(s, it.pos, it.emptied+1)}, nil
	}
	if it.pos >= len(s.recs) {
		if s.closed {
			return &dynamodbstreams.GetRecordsOutput{}, nil // NextShardIterator null: the end
		}
		return &dynamodbstreams.GetRecordsOutput{NextShardIterator: fs.issue(s, it.pos, it.emptied)}, nil
	}
	limit := int(aws.ToInt32(in.Limit))
	if limit <= 0 {
		limit = 1000
	}
	end := it.pos + 1
	for end < len(s.recs) && end-it.pos < limit && s.empties[end] == 0 {
		end++
	}
	return &dynamodbstreams.GetRecordsOutput{Records: append([]streamtypes.Record(nil), s.recs[it.pos:end]...), NextShardIterator: fs.issue(s, end, 0)}, nil
}

func fsMarshal(t *testing.T, tb *ddbindex.Table[stTicket], it stTicket) map[string]types.AttributeValue {
	t.Helper()
	av, err := tb.Marshal(it)
	require.NoError(t, err)
	return av
}

func fsStreamImage(img map[string]types.AttributeValue) map[string]streamtypes.AttributeValue {
	out := make(map[string]streamtypes.AttributeValue, len(img))
	for k, v := range img {
		out[k] = fsStreamAV(v)
	}
	return out
}

func fsStreamAV(v types.AttributeValue) streamtypes.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: v.Value}
	case *types.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: v.Value}
	case *types.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = fsStreamAV(e)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: fsStreamImage(v.Value)}
	}
	panic(fmt.Sprintf("fsStreamAV: %T", v))
}

// fsTicket is ticket i of team T1.
func fsTicket(i int) stTicket {
	it := stTicket{Team: "T1", Status: "open", ID: fmt.Sprint(i), Created: stNow.Add(time.Duration(i) * time.Minute), Title: fmt.Sprint("ticket ", i)}
	if i%2 == 0 {
		it.Owner = stOwner(fmt.Sprint("user", i%3))
	}
	return it
}

// fsSetup returns a Table whose index tables exist on the test server (the
// base table is never written: the fake stream holds the changes), and a
// fake stream of it.
func fsSetup(t *testing.T) (*ddbindex.Table[stTicket], *fsStream) {
	t.Helper()
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	return tb, newFSStream(tb)
}

// fsWant builds, on fresh index tables, what applying changes in order
// writes, and returns their content: the ground truth a consumer's index
// tables must equal.
func fsWant(t *testing.T, tb *ddbindex.Table[stTicket], changes ...ddbindex.Change) [][]map[string]types.AttributeValue {
	t.Helper()
	ref := stFresh(t, tb, "want")
	_, err := ref.Apply(t.Context(), changes)
	require.NoError(t, err)
	return snapshot(t, ref)
}

// TestConsumerEmptyPagesDoNotStall: empty pages before records on an open
// shard, as AWS documents them, delay the records by a pass or two; they
// never end the shard. (The consumer used to take the first empty page for
// the end: it reopened the shard after its checkpoint on every pass, met the
// same empty page, and never applied anything.)
func TestConsumerEmptyPagesDoNotStall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("s1", "")
	fs.emptyPages("s1", 5) // more than MaxEmptyReads before the first record
	var items []stTicket
	for i := range 3 {
		items = append(items, fsTicket(i))
		fs.add(t, "s1", nil, &items[i])
	}
	fs.emptyPages("s1", 4)
	for i := 3; i < 6; i++ {
		items = append(items, fsTicket(i))
		fs.add(t, "s1", nil, &items[i])
	}

	cp := &MemoryCheckpoints{}
	cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast}))
	require.Equal(t, 3, cons.opts.MaxEmptyReads, "the default")
	var applied []int
	for range 3 {
		st, err := cons.Poll(ctx)
		require.NoError(t, err)
		applied = append(applied, st.Changes)
	}
	// Pass 1 meets 3 of the 5 empty pages; pass 2 the other 2, records 0-2,
	// and 3 of the 4 empty pages; pass 3 the last one and records 3-5.
	require.Equal(t, []int{0, 3, 3}, applied)
	require.Len(t, fs.opens("s1"), 1, "the shard was opened once: each pass read on with the iterator the last one left")
	seqs := fs.seqs("s1")
	require.Equal(t, seqs[5], checkpointOf(t, cp, "s1"))
	want := fsWant(t, tb, fs.changes(t, "s1", 0, 6)...)
	require.Equal(t, want, snapshot(t, tb))

	// Later records, again behind empty pages: a later pass picks them up.
	moved := items[1]
	moved.Title = "renamed"
	fs.emptyPages("s1", 2)
	fs.add(t, "s1", &items[1], &moved)
	fs.add(t, "s1", &items[2], nil)
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: 2, Puts: 1, Deletes: 2}, st, "a title change; a delete from both index tables")
	require.Len(t, fs.opens("s1"), 1)
	require.Equal(t, fs.seqs("s1")[7], checkpointOf(t, cp, "s1"))
	require.Equal(t, fsWant(t, tb, fs.changes(t, "s1", 0, 8)...), snapshot(t, tb))
}

// TestConsumerClosedShards: a closed shard is read through its empty pages
// up to its last record, and on to its end (NextShardIterator null), then
// never opened again by that consumer; its child is read only once it is
// drained; a shard whose parent the stream no longer lists is read at once.
func TestConsumerClosedShards(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("parent", "")
	fs.shard("child", "parent")
	fs.shard("orphan", "trimmed-away")
	a, b := fsTicket(0), fsTicket(1)
	fs.add(t, "parent", nil, &a)
	fs.add(t, "parent", nil, &b)
	fs.emptyPages("parent", 7) // more than MaxEmptyReads, before the shard's last record
	a2 := a
	a2.Created = a.Created.Add(time.Hour) // an index key changes; a base key cannot in a MODIFY
	fs.add(t, "parent", &a, &a2)
	fs.emptyPages("parent", 2) // after it, before the end
	fs.close("parent")
	a3 := a2
	a3.Title = "reopened"
	fs.add(t, "child", &a2, &a3)
	fs.add(t, "child", &b, nil)
	o := fsTicket(2)
	fs.add(t, "orphan", nil, &o)

	cp := &MemoryCheckpoints{}
	cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast}))
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, st.Changes)
	require.Zero(t, st.Stale)
	require.Len(t, fs.opens("parent"), 1)
	parentReads := fs.reads("parent")
	require.Equal(t, 1+7+1+2+1, parentReads, "records, 7 empty pages, the last record, 2 empty pages, the null end")
	want := fsWant(t, tb, append(append(fs.changes(t, "parent", 0, 3), fs.changes(t, "child", 0, 2)...), fs.changes(t, "orphan", 0, 1)...)...)
	require.Equal(t, want, snapshot(t, tb))
	require.ElementsMatch(t, []stTicket{a3, o}, indexItems(t, tb, "by_status", false, "T1"))

	for range 3 {
		st, err := cons.Poll(ctx)
		require.NoError(t, err)
		require.Zero(t, st)
	}
	require.Len(t, fs.opens("parent"), 1, "a drained shard is never opened again")
	require.Equal(t, parentReads, fs.reads("parent"), "nor read")
	require.Len(t, fs.opens("child"), 1, "an open shard is read on with its iterator")

	// A new consumer with the same checkpoints opens the closed shard once,
	// after its checkpoint, finds its end, and applies nothing again.
	again := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast}))
	for range 2 {
		st, err = again.Poll(ctx)
		require.NoError(t, err)
		require.Zero(t, st)
	}
	opens := fs.opens("parent")
	require.Len(t, opens, 2)
	require.Equal(t, streamtypes.ShardIteratorTypeAfterSequenceNumber, opens[1].ShardIteratorType)
	require.Equal(t, fs.seqs("parent")[2], aws.ToString(opens[1].SequenceNumber))
}

// TestConsumerClosedShardLongEnd: past a closed shard's last record, empty
// pages count toward MaxEmptyReads (a server may report an ending sequence
// number for a shard that is still open), so a long run of them before the
// end takes more than one pass; the shard is drained all the same, and its
// child read after it.
func TestConsumerClosedShardLongEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("parent", "")
	fs.shard("child", "parent")
	a := fsTicket(0)
	fs.add(t, "parent", nil, &a)
	fs.emptyPages("parent", 5)
	fs.close("parent")
	a2 := a
	a2.Title = "child"
	fs.add(t, "child", &a, &a2)

	cons := newConsumer(t, tb, fs, &MemoryCheckpoints{}, with(ConsumerOptions{Retry: fast}))
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes, "the parent's record; 3 of its 5 empty pages end the pass")
	require.Empty(t, fs.opens("child"))
	st, err = cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes, "the parent's last 2 empty pages, its end, then the child")
	require.Len(t, fs.opens("parent"), 1)
	require.Equal(t, []stTicket{a2}, indexItems(t, tb, "by_status", false, "T1"))
}

// TestConsumerChildWaitsForParent: while a parent shard is not drained (here
// it stops at a poison record), its child is not read at all: an item's
// later changes (in the child) must not overtake its earlier ones.
func TestConsumerChildWaitsForParent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("parent", "")
	fs.shard("child", "parent")
	a := fsTicket(0)
	fs.add(t, "parent", nil, &a)
	bad := fs.addRaw("parent", streamtypes.Record{EventName: streamtypes.OperationTypeRemove}) // a REMOVE without its old image
	fs.close("parent")
	a2 := a
	a2.Title = "later"
	fs.add(t, "child", &a, &a2)

	cp := &MemoryCheckpoints{}
	_, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast})).Poll(ctx)
	var perr *PoisonRecordError
	require.ErrorAs(t, err, &perr)
	require.Equal(t, bad, perr.SequenceNumber)
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "the cause: a malformed record")
	require.NotErrorIs(t, err, ddbindex.ErrInvalidWrite)
	require.Equal(t, "DDBX-701", ddbindex.Code(err), "the poison record's code comes first")
	require.Equal(t, "DDBX-702", ddbindex.Code(perr.Err))
	require.Empty(t, fs.opens("child"), "the child was not read while its parent was not drained")

	var skipped []PoisonRecord
	cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast, OnPoison: func(_ context.Context, r PoisonRecord) error {
		skipped = append(skipped, r)
		return nil
	}}))
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes, "the child's record")
	require.Equal(t, 1, st.Skipped)
	require.Len(t, skipped, 1)
	require.Equal(t, []stTicket{a2}, indexItems(t, tb, "by_status", false, "T1"))
}

// TestConsumerExpiredIterator: an iterator that expired mid-shard, or between
// passes, is replaced by one after the checkpoint: nothing is lost, and
// nothing is applied twice.
func TestConsumerExpiredIterator(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("s1", "")
	for i := range 10 {
		it := fsTicket(i)
		fs.add(t, "s1", nil, &it)
	}
	fs.mu.Lock()
	fs.expireOnCall = 3 // the third read finds every iterator expired
	fs.mu.Unlock()
	cp := &MemoryCheckpoints{}
	cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{BatchSize: 3, Retry: fast}))
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 10, st.Changes)
	require.Zero(t, st.Stale, "no record was applied twice")
	seqs := fs.seqs("s1")
	opens := fs.opens("s1")
	require.Len(t, opens, 2)
	require.Equal(t, streamtypes.ShardIteratorTypeTrimHorizon, opens[0].ShardIteratorType)
	require.Equal(t, streamtypes.ShardIteratorTypeAfterSequenceNumber, opens[1].ShardIteratorType)
	require.Equal(t, seqs[5], aws.ToString(opens[1].SequenceNumber), "reopened after the last checkpointed record: two pages of 3")
	require.Equal(t, seqs[9], checkpointOf(t, cp, "s1"))

	// Between passes: the iterator the last pass kept has expired.
	fs.expireAll()
	x := fsTicket(10)
	fs.add(t, "s1", nil, &x)
	st, err = cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes)
	require.Zero(t, st.Stale)
	opens = fs.opens("s1")
	require.Len(t, opens, 3)
	require.Equal(t, seqs[9], aws.ToString(opens[2].SequenceNumber))
	require.Equal(t, fsWant(t, tb, fs.changes(t, "s1", 0, 11)...), snapshot(t, tb))

	// A server that refuses every iterator as expired ends the pass with
	// its error, instead of reopening forever.
	fs.mu.Lock()
	fs.alwaysExpired = true
	fs.mu.Unlock()
	_, err = cons.Poll(ctx)
	var expired *streamtypes.ExpiredIteratorException
	require.ErrorAs(t, err, &expired)
	require.ErrorContains(t, err, "refused as expired")
}

// TestConsumerTrimmedRecords: records trimmed before they were applied
// (behind the checkpoint when a shard is opened, or under an iterator the
// consumer holds) stop the consumer with a *GapError naming the shard
// and the range; with OnGap it reads on from the oldest remaining record.
func TestConsumerTrimmedRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("opening after the checkpoint", func(t *testing.T) {
		t.Parallel()
		tb, fs := fsSetup(t)
		fs.shard("s1", "")
		for i := range 8 {
			it := fsTicket(i)
			fs.add(t, "s1", nil, &it)
		}
		seqs := fs.seqs("s1")
		cp := &MemoryCheckpoints{}
		require.NoError(t, cp.SetCheckpoint(ctx, "s1", seqs[1]))
		fs.trim("s1", 5) // records 2, 3 and 4 were never applied

		for range 2 { // and again: it does not go away by itself
			st, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast})).Poll(ctx)
			require.Zero(t, st)
			var gap *GapError
			require.ErrorAs(t, err, &gap)
			require.ErrorIs(t, err, ddbindex.ErrStreamGap)
			require.Equal(t, "DDBX-700", ddbindex.Code(err))
			require.Equal(t, Gap{StreamARN: fs.arn, ShardID: "s1", AfterSequence: seqs[1]}, gap.Gap)
			var trimmed *streamtypes.TrimmedDataAccessException
			require.ErrorAs(t, err, &trimmed, "the cause")
			for _, s := range []string{"shard s1", "after sequence number " + seqs[1], "trimmed", "Backfill", "OnGap", "checkpoint"} {
				require.ErrorContains(t, err, s)
			}
			require.Equal(t, seqs[1], checkpointOf(t, cp, "s1"), "the checkpoint stays")
		}
		require.Empty(t, indexItems(t, tb, "by_status", true, "T1"), "nothing applied")

		// The hook stops the consumer: both errors.
		errHook := errors.New("gap store unavailable")
		_, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast, OnGap: func(context.Context, Gap) error { return errHook }})).Poll(ctx)
		require.ErrorIs(t, err, ddbindex.ErrStreamGap)
		require.ErrorIs(t, err, errHook)

		// The hook records the gap and lets the consumer read on.
		var gaps []Gap
		cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast, OnGap: func(_ context.Context, g Gap) error {
			gaps = append(gaps, g)
			return nil
		}}))
		st, err := cons.Poll(ctx)
		require.NoError(t, err)
		require.Equal(t, []Gap{{StreamARN: fs.arn, ShardID: "s1", AfterSequence: seqs[1]}}, gaps)
		require.Equal(t, 3, st.Changes, "records 5-7, from the oldest remaining one")
		require.Equal(t, seqs[7], checkpointOf(t, cp, "s1"))
		require.Equal(t, fsWant(t, tb, fs.changes(t, "s1", 5, 8)...), snapshot(t, tb))
	})

	t.Run("under a held iterator", func(t *testing.T) {
		t.Parallel()
		tb, fs := fsSetup(t)
		fs.shard("s1", "")
		for i := range 4 {
			it := fsTicket(i)
			fs.add(t, "s1", nil, &it)
		}
		fs.emptyPages("s1", 3)
		for i := 4; i < 8; i++ {
			it := fsTicket(i)
			fs.add(t, "s1", nil, &it)
		}
		seqs := fs.seqs("s1")
		cp := &MemoryCheckpoints{}
		var gaps []Gap
		cons := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast, OnGap: func(_ context.Context, g Gap) error {
			gaps = append(gaps, g)
			return nil
		}}))
		st, err := cons.Poll(ctx) // records 0-3, then the 3 empty pages end the pass
		require.NoError(t, err)
		require.Equal(t, 4, st.Changes)
		fs.trim("s1", 6) // records 4 and 5 go before the consumer reads them
		st, err = cons.Poll(ctx)
		require.NoError(t, err)
		require.Equal(t, []Gap{{StreamARN: fs.arn, ShardID: "s1", AfterSequence: seqs[3]}}, gaps)
		require.Equal(t, 2, st.Changes, "records 6 and 7")
		want := fsWant(t, tb, append(fs.changes(t, "s1", 0, 4), fs.changes(t, "s1", 6, 8)...)...)
		require.Equal(t, want, snapshot(t, tb))
	})
}

// TestConsumerRetriesTransientStreamErrors: throttling and 5xx answers of
// DynamoDB Streams are retried within the budget; past it, the pass fails
// with an error IsTransient recognises, and the next pass goes on from the
// checkpoint.
func TestConsumerRetriesTransientStreamErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs := fsSetup(t)
	fs.shard("s1", "")
	for i := range 6 {
		it := fsTicket(i)
		fs.add(t, "s1", nil, &it)
	}
	throttled := &streamtypes.LimitExceededException{Message: aws.String("Rate exceeded for shard")}
	internal := &streamtypes.InternalServerError{Message: aws.String("internal error")}
	fs.failNext("ListStreams", throttled)
	fs.failNext("DescribeStream", internal, throttled)
	fs.failNext("GetShardIterator", throttled)
	fs.failNext("GetRecords", throttled, internal, throttled)
	var mu sync.Mutex
	retried := map[string]int{}
	opts := ConsumerOptions{BatchSize: 2, Retry: fast}
	opts.Retry.OnRetry = func(op string, _ int, err error) {
		mu.Lock()
		defer mu.Unlock()
		assert.True(t, ddbindex.IsTransient(err))
		retried[op]++
	}
	cp := &MemoryCheckpoints{}
	cons := newConsumer(t, tb, fs, cp, with(opts))
	st, err := cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, st.Changes)
	require.Equal(t, map[string]int{"ListStreams": 1, "DescribeStream": 2, "GetShardIterator": 1, "GetRecords": 3}, retried)

	// Past the budget (4 attempts): the pass fails, transiently.
	x := fsTicket(6)
	fs.add(t, "s1", nil, &x)
	fs.failNext("GetRecords", throttled, throttled, throttled, throttled)
	st, err = cons.Poll(ctx)
	require.Error(t, err)
	require.True(t, ddbindex.IsTransient(err), "%v", err)
	require.Zero(t, st.Changes)
	st, err = cons.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes)
	require.Zero(t, st.Stale)
	require.Equal(t, fs.seqs("s1")[6], checkpointOf(t, cp, "s1"))
}

// TestConsumerRunSurvivesTransientErrors: a pass that fails transiently
// (here DescribeStream, throttled past the budget) does not end Run: it
// reports the failure and polls again.
func TestConsumerRunSurvivesTransientErrors(t *testing.T) {
	t.Parallel()
	tb, fs := fsSetup(t)
	fs.shard("s1", "")
	for i := range 3 {
		it := fsTicket(i)
		fs.add(t, "s1", nil, &it)
	}
	throttled := &streamtypes.LimitExceededException{Message: aws.String("Rate exceeded")}
	fs.failNext("DescribeStream", throttled, throttled, throttled)
	last := fs.seqs("s1")[2]
	cp := newSignalCheckpoints(&MemoryCheckpoints{}, func(shard, seq string) bool { return shard == "s1" && seq == last })
	var mu sync.Mutex
	var polls []error
	opts := ConsumerOptions{PollInterval: time.Millisecond, Retry: ddbindex.RetryOptions{MaxAttempts: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
	opts.Retry.OnRetry = func(op string, _ int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if op == "Poll" {
			polls = append(polls, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	cons := newConsumer(t, tb, fs, cp, with(opts))
	go func() { done <- cons.Run(ctx) }()
	awaitApplied(t, cp.reached, done, "the records")
	cancel()
	require.ErrorIs(t, awaitReturn(t, done), context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, polls, 3, "three passes failed, and Run went on")
	for _, err := range polls {
		var lee *streamtypes.LimitExceededException
		require.ErrorAs(t, err, &lee)
	}
	require.Len(t, indexItems(t, tb, "by_status", false, "T1"), 3)
}

// fsRecordingCheckpoints records every checkpoint written.
type fsRecordingCheckpoints struct {
	MemoryCheckpoints
	mu      sync.Mutex
	written []string
}

func (f *fsRecordingCheckpoints) SetCheckpoint(ctx context.Context, shard, seq string) error {
	f.mu.Lock()
	f.written = append(f.written, seq)
	f.mu.Unlock()
	return f.MemoryCheckpoints.SetCheckpoint(ctx, shard, seq)
}

// TestConsumerParallelApply: one page of interleaved changes to a few items,
// applied by 16 workers, keeps each item's changes in order (a change
// applied after a newer one of its item would be skipped as stale: none is),
// and checkpoints within the page, in order, every CheckpointEvery records
// at least, never past a record not applied.
func TestConsumerParallelApply(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			t.Parallel()
			tb, fs := fsSetup(t)
			fs.shard("s1", "")
			items := make([]stTicket, 12)
			for i := range items {
				items[i] = fsTicket(i)
				fs.add(t, "s1", nil, &items[i])
			}
			for round := range 8 {
				for i := range items {
					next := items[i]
					next.Title = fmt.Sprint("round ", round)
					if round%3 == 2 {
						next.Created = next.Created.Add(time.Minute) // a new by_status entry, the old one tombstoned
					}
					fs.add(t, "s1", &items[i], &next)
					items[i] = next
				}
			}
			seqs := fs.seqs("s1")
			cp := &fsRecordingCheckpoints{}
			st, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Workers: workers, CheckpointEvery: 10, Retry: fast})).Poll(ctx)
			require.NoError(t, err)
			require.Equal(t, len(seqs), st.Changes)
			require.Zero(t, st.Stale, "no change of an item was applied after a newer one")
			require.Equal(t, fsWant(t, tb, fs.changes(t, "s1", 0, len(seqs))...), snapshot(t, tb))

			require.Equal(t, seqs[len(seqs)-1], cp.written[len(cp.written)-1])
			prev := -1
			for i, seq := range cp.written {
				at := slices.Index(seqs, seq)
				require.Greater(t, at, prev, "checkpoints move forward")
				if i < len(cp.written)-1 {
					require.GreaterOrEqual(t, at-prev, 10, "every CheckpointEvery records at least")
				}
				prev = at
			}
			if workers == 1 {
				// (With 16, how far the applied prefix has grown when each
				// result comes in depends on scheduling.)
				require.Len(t, cp.written, len(seqs)/10+1, "within the page: every 10 records, and at its end")
			}
		})
	}
}

package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/av"
	"github.com/ddbindex/ddbindex/internal/retry"
	"github.com/ddbindex/ddbindex/schema"
)

// This file holds the Consumer, which reads a table's stream shard by shard
// and applies each record with Table.Apply, and the checkpoint store it
// keeps its place in.

// StreamsAPI is the part of the DynamoDB Streams client the consumer needs.
// *dynamodbstreams.Client implements it.
type StreamsAPI interface {
	ListStreams(ctx context.Context, in *dynamodbstreams.ListStreamsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error)
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Checkpoints stores, per shard, the sequence number of the last record a
// consumer applied.
type Checkpoints interface {
	// Checkpoint returns the shard's sequence number, or "" when there is none.
	Checkpoint(ctx context.Context, shardID string) (string, error)
	// SetCheckpoint records that every record up to seq has been applied.
	SetCheckpoint(ctx context.Context, shardID, seq string) error
}

// MemoryCheckpoints keeps checkpoints in memory: for tests and for consumers
// that may replay a stream from its start on restart (Apply is idempotent).
// The zero value is ready to use; a nil *MemoryCheckpoints refuses every
// call with an error matching [ddbindex.ErrInvalidWrite], as a
// DynamoDBCheckpoints without a Client does.
type MemoryCheckpoints struct {
	mu  sync.Mutex
	seq map[string]string
}

// errNilMemory is the error of every call on a nil *MemoryCheckpoints.
var errNilMemory = fmt.Errorf("%w: stream: a nil *MemoryCheckpoints (use a new(MemoryCheckpoints))", ddbindex.ErrInvalidWrite)

// Checkpoint returns the shard's checkpoint from memory.
func (m *MemoryCheckpoints) Checkpoint(_ context.Context, shardID string) (string, error) {
	if m == nil {
		return "", errNilMemory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq[shardID], nil
}

// SetCheckpoint keeps the shard's checkpoint in memory.
func (m *MemoryCheckpoints) SetCheckpoint(_ context.Context, shardID, seq string) error {
	if m == nil {
		return errNilMemory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seq == nil {
		m.seq = map[string]string{}
	}
	m.seq[shardID] = seq
	return nil
}

// ConsumerOptions configure a [Consumer]; pass functions that set them to
// [NewConsumer]. The zero value of each field means its default.
type ConsumerOptions struct {
	// StreamARN is the stream to read. Default: the latest stream of the
	// Table's base table (ListStreams).
	StreamARN string
	// BatchSize is the Limit of each GetRecords. Default 1000 (the most
	// DynamoDB Streams returns).
	BatchSize int32
	// PollInterval is how long Run waits when a pass found no records.
	// Default 1 s.
	PollInterval time.Duration

	// MaxEmptyReads is how many empty GetRecords pages in a row end a pass's
	// reading of an open shard. DynamoDB Streams may answer with empty pages
	// before records that follow them, so an empty page is not the end of a
	// shard: the consumer keeps the iterator, and the next pass reads on from
	// it. A closed shard is read through empty pages up to its last record
	// (its EndingSequenceNumber); past it, until DynamoDB ends the shard
	// (NextShardIterator null), MaxEmptyReads applies as well. Default 3.
	MaxEmptyReads int
	// Workers is how many records are applied at once. The records of one
	// base item (the same Keys) in a GetRecords page are applied by one
	// worker, in stream order; different items' records in parallel.
	// Default 16; 1 applies one record at a time, in stream order.
	Workers int
	// CheckpointEvery: the consumer checkpoints whenever this many more
	// records in stream order have been applied, and at the end of every
	// GetRecords page. Default 100.
	CheckpointEvery int
	// Retry bounds the consumer's retries of each call to DynamoDB Streams
	// and of each record's index writes (one [ddbindex.Table.Apply], reported
	// to OnRetry as operation "Apply") that fail with a transient error.
	Retry ddbindex.RetryOptions

	// OnPoison decides what happens to a poison record: a record whose
	// change cannot be read (a malformed record, [ddbindex.ErrStreamRecord]),
	// or whose index writes can never be made (an image that does not fit
	// the model, a key value out of range: [ddbindex.ErrInvalidWrite]; an
	// entry DynamoDB refuses as invalid: a ValidationException). Without it,
	// the consumer stops with a *PoisonRecordError, every record before the
	// poison one applied and checkpointed; later passes stop at the same
	// record. With it, the consumer calls it (one call at a time), and when
	// it returns nil skips the record (counted in ApplyStats.Skipped) and
	// goes on; when it returns an error the consumer stops with both errors.
	// Store the record somewhere (a dead-letter queue) so that it can be
	// repaired and re-applied with [ddbindex.Table.Apply]. Beware: a
	// misdeclared index table makes every record invalid, and a hook that
	// skips them all leaves the index table empty; run
	// [schema.Check] at start-up, or stop after a few skips.
	OnPoison func(ctx context.Context, r PoisonRecord) error
	// OnGap decides what happens when the stream no longer holds records
	// the consumer has not applied (DynamoDB Streams keeps records for 24
	// hours). Without it, the consumer stops with a *GapError naming the
	// shard and the range that may be lost; later passes stop the same way
	// until the shard's checkpoint is cleared. With it, the consumer calls
	// it, and when it returns nil reads the shard on from its oldest
	// remaining record; when it returns an error the consumer stops with both
	// errors. It may be called again for the same gap after a restart, until
	// a record of the shard has been applied after it.
	OnGap func(ctx context.Context, g Gap) error

	// Leases, when set, divides the stream's shards among the consumers
	// that share the store (see [Leases]; [DynamoDBCheckpoints] is one):
	// this consumer reads only the shards whose lease it holds, renews them
	// while it reads, and releases them when it stops (Run) or holds more
	// than its share. Without it, the consumer reads every shard.
	Leases Leases
	// LeaseOwner names this consumer in the lease store. Default: the host
	// name, the process ID and a random part.
	LeaseOwner string
	// LeaseDuration is how long a lease and a heartbeat last unless
	// renewed (they are renewed when half of it is left): a consumer that
	// stops without releasing its leases leaves its shards to the others
	// after that long. Keep it well above the clock skew between hosts and
	// the time one GetRecords page takes to apply. Default 30 s.
	LeaseDuration time.Duration
	// Now is the consumer's clock: of leases, and of the stream lag (now
	// minus a record's ApproximateCreationDateTime). Default time.Now.
	Now func() time.Time

	// ClientOptions are applied to every DynamoDB request the consumer's
	// index writes send (each record's [ddbindex.Table.Apply]), as the
	// SDK's own per-call options.
	ClientOptions []func(*dynamodb.Options)
	// StreamsClientOptions are applied to every DynamoDB Streams request
	// the consumer sends (ListStreams, DescribeStream, GetShardIterator,
	// GetRecords).
	StreamsClientOptions []func(*dynamodbstreams.Options)

	// MeterProvider receives the consumer's metrics: records by outcome,
	// and the stream lag (docs/observability.md). Default:
	// none; pass otel.GetMeterProvider() for the global one. The index writes are
	// measured by the Table, with its own Options.MeterProvider.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per pass (Poll), with an event per
	// GetRecords page; each record's Apply span is its child. Default:
	// none; pass otel.GetTracerProvider() for the global one.
	TracerProvider trace.TracerProvider
}

const (
	defaultBatchSize       = 1000
	defaultPollInterval    = time.Second
	defaultMaxEmptyReads   = 3
	defaultWorkers         = 16
	defaultCheckpointEvery = 100
	// closedShardMaxEmptyReads guards against a server that never ends a
	// closed shard: AWS documents that a closed shard's last page has no
	// NextShardIterator, however many empty pages come before it.
	closedShardMaxEmptyReads = 1000
	// maxExpiredReopens is how often in a row a freshly opened iterator may
	// be refused as expired before the consumer gives up on the pass.
	maxExpiredReopens = 3
	// finalCheckpointTimeout bounds the checkpoint written after the
	// consumer's context ended, so that a restart replays as little as
	// possible.
	finalCheckpointTimeout = 5 * time.Second
)

// Consumer reads a base table's stream in one process and keeps the index
// tables in step, checkpointing as it goes. Records of a shard are applied
// in order per base item (items in parallel, see ConsumerOptions.Workers),
// parent shards before their children. Transient failures are retried (see
// [ddbindex.RetryOptions]); poison records and trimmed records follow
// ConsumerOptions.OnPoison and OnGap.
//
// Between passes it keeps, per shard, where it is reading (a shard iterator,
// valid for 15 minutes; when DynamoDB refuses it as expired the consumer
// reopens the shard after its checkpoint) and whether the shard is closed and
// fully read (it is never read again). Checkpoints are read when a shard is
// (re)opened: at the first pass, after an error, after an expired iterator.
//
// Its methods are safe for concurrent use; passes run one at a time.
type Consumer[T any] struct {
	t     *ddbindex.Table[T]
	api   streamCalls
	cp    checkpointCalls
	lc    leaseCalls
	opts  ConsumerOptions
	retry retry.Options

	mu     sync.Mutex // one pass at a time; guards arn, state and leases
	arn    string
	state  map[string]*shardState
	leases *leaseState
	hookMu sync.Mutex // one OnPoison call at a time
	tel    *telemetry
}

// shardState is what the consumer knows of one shard between passes.
type shardState struct {
	iter    *string // where the next read starts; nil: open the shard after its checkpoint
	last    string  // the sequence number of the last record read, if known
	drained bool    // closed, and read to its end
}

// NewConsumer returns a consumer of t's base-table stream, read through api,
// with checkpoints in cp. Each optFn sets options (see [ConsumerOptions]),
// in order. Options it cannot honour — a nil option function, a nil entry
// of ClientOptions or StreamsClientOptions, a negative value, a BatchSize
// above 1000 — fail with an error matching [ddbindex.ErrDeclaration] (code
// DDBX-100) that names the option; 0 means the default. A nil t, api or cp
// is not refused here: Poll and Run fail with an error matching
// [ddbindex.ErrInvalidWrite] before any request.
func NewConsumer[T any](t *ddbindex.Table[T], api StreamsAPI, cp Checkpoints, optFns ...func(*ConsumerOptions)) (*Consumer[T], error) {
	const fn = "NewConsumer"
	var opts ConsumerOptions
	if err := applyOptions(fn, &opts, optFns); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		name string
		v    int64
		def  any
	}{
		{"BatchSize", int64(opts.BatchSize), defaultBatchSize},
		{"PollInterval", int64(opts.PollInterval), defaultPollInterval},
		{"MaxEmptyReads", int64(opts.MaxEmptyReads), defaultMaxEmptyReads},
		{"Workers", int64(opts.Workers), defaultWorkers},
		{"CheckpointEvery", int64(opts.CheckpointEvery), defaultCheckpointEvery},
		{"LeaseDuration", int64(opts.LeaseDuration), defaultLeaseDuration},
	} {
		if c.v < 0 {
			return nil, negativeOption(fn, "ConsumerOptions."+c.name, c.v, c.def)
		}
	}
	if opts.BatchSize > defaultBatchSize {
		return nil, declarationErr(fn, "ConsumerOptions.BatchSize is %d; DynamoDB Streams returns at most %d records a GetRecords (0 means the default, %d)", opts.BatchSize, defaultBatchSize, defaultBatchSize)
	}
	if err := checkRetry(fn, "ConsumerOptions.Retry", opts.Retry); err != nil {
		return nil, err
	}
	if err := nilEntry(fn, "ConsumerOptions.ClientOptions", opts.ClientOptions); err != nil {
		return nil, err
	}
	if err := nilEntry(fn, "ConsumerOptions.StreamsClientOptions", opts.StreamsClientOptions); err != nil {
		return nil, err
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = defaultBatchSize
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = defaultPollInterval
	}
	if opts.MaxEmptyReads == 0 {
		opts.MaxEmptyReads = defaultMaxEmptyReads
	}
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers
	}
	if opts.CheckpointEvery == 0 {
		opts.CheckpointEvery = defaultCheckpointEvery
	}
	if opts.LeaseOwner == "" {
		opts.LeaseOwner = defaultOwner()
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = defaultLeaseDuration
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// ddbindex.RetryOptions and retry.Options have the same fields: the
	// conversions fail to compile if they ever differ.
	r := retry.Options(opts.Retry).WithDefaults()
	opts.Retry = ddbindex.RetryOptions(r)
	var table string
	if t != nil {
		table = t.TableName()
	}
	return &Consumer[T]{t: t, api: streamCalls{api}, cp: checkpointCalls{cp}, opts: opts, retry: r, state: map[string]*shardState{}, lc: leaseCalls{opts.Leases},
		leases: &leaseState{held: map[string]time.Time{}}, tel: newTelemetry(table, &opts)}, nil
}

func (c *Consumer[T]) streamARN(ctx context.Context) (string, error) {
	if c.opts.StreamARN != "" {
		return c.opts.StreamARN, nil
	}
	out, err := retry.Call(ctx, c.retry, "ListStreams", func() (*dynamodbstreams.ListStreamsOutput, error) {
		return c.api.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(c.t.TableName())}, c.opts.StreamsClientOptions...)
	})
	if err != nil {
		return "", fmt.Errorf("ddbindex: list streams of %s: %w", c.t.TableName(), err)
	}
	if len(out.Streams) == 0 {
		return "", &schema.Error{Problems: []string{fmt.Sprintf("table %s has no stream; create it with a NEW_AND_OLD_IMAGES stream (schema.CreateTables and schema.Prepare do)", c.t.TableName())}}
	}
	return aws.ToString(out.Streams[len(out.Streams)-1].StreamArn), nil
}

// Poll makes one pass over the stream: it reads every shard that is ready
// (not yet drained, its parent drained or gone) until the shard's current end
// — for an open shard, MaxEmptyReads empty pages in a row — applies the
// records and checkpoints. It returns what it applied. An error leaves every
// record before the failing one applied and checkpointed; the next pass
// starts after the checkpoint.
func (c *Consumer[T]) Poll(ctx context.Context) (total ddbindex.ApplyStats, err error) {
	if c == nil || c.t == nil || c.api.c == nil || c.cp.c == nil {
		return total, fmt.Errorf("%w: stream: a Consumer needs a Table, a StreamsAPI and Checkpoints (use NewConsumer)", ddbindex.ErrInvalidWrite)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var arn string
	ctx, span := c.tel.startPoll(ctx)
	defer func() { endPoll(span, arn, total, err) }()
	arn, err = c.streamARN(ctx)
	if err != nil {
		return total, err
	}
	if arn != c.arn {
		c.arn, c.state = arn, map[string]*shardState{}
	}
	shards, err := c.shards(ctx, arn)
	if err != nil {
		return total, err
	}
	if c.lc.c != nil {
		if err := c.leasePass(ctx, shards); err != nil {
			return total, err
		}
	}
	// Forget shards the stream no longer lists (trimmed after 24 hours).
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[aws.ToString(sh.ShardId)] = true
	}
	for id := range c.state {
		if !listed[id] {
			delete(c.state, id)
		}
	}
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		s := c.state[id]
		if s == nil {
			s = &shardState{}
			c.state[id] = s
		}
		if c.lc.c != nil && c.leases.ended[id] {
			s.drained = true
		}
		if s.drained {
			continue
		}
		// Parents before children: a child's records of an item follow its
		// parent's. shards lists parents first, so the parent's state is
		// current.
		if p := aws.ToString(sh.ParentShardId); p != "" && listed[p] && !c.state[p].drained {
			continue
		}
		if c.lc.c != nil {
			held, err := c.takeLease(ctx, id, s)
			if err != nil || !held {
				if err != nil {
					return total, err
				}
				continue // another consumer reads it
			}
		}
		st, err := c.pollShard(ctx, arn, sh, s)
		addStats(&total, st)
		if err != nil {
			s.iter = nil // the next pass reopens the shard after its checkpoint
			return total, err
		}
		if c.lc.c != nil && s.drained {
			if err := c.dropLease(ctx, id, true); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// Run polls until ctx is done, waiting PollInterval after a pass that found
// nothing. A pass that fails with a transient error (see
// [ddbindex.IsTransient]: the service throttled or failed longer than the
// Retry budget of one call) is reported to Retry.OnRetry as operation
// "Poll", and Run polls again after a backoff. It returns ctx's error, or the
// first other error of a pass; with ConsumerOptions.Leases it releases its
// leases first (see [Consumer.ReleaseLeases]), and returns the release's
// error too.
func (c *Consumer[T]) Run(ctx context.Context) (err error) {
	if c != nil && c.lc.c != nil {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalCheckpointTimeout)
			defer cancel()
			err = errors.Join(err, c.ReleaseLeases(rctx))
		}()
	}
	failures := 0
	for {
		st, err := c.Poll(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var backoff time.Duration
		switch {
		case err != nil && retry.IsTransient(err):
			failures++
			c.retry.Notify("Poll", failures, err)
			backoff = c.retry.Backoff(failures)
		case err != nil:
			return err
		default:
			failures = 0
			if st.Changes > 0 || st.Skipped > 0 {
				continue
			}
		}
		if err := retry.Sleep(ctx, c.opts.PollInterval+backoff); err != nil {
			return err
		}
	}
}

// shards lists the stream's shards, parents before children.
func (c *Consumer[T]) shards(ctx context.Context, arn string) ([]streamtypes.Shard, error) {
	var all []streamtypes.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
	for {
		out, err := retry.Call(ctx, c.retry, "DescribeStream", func() (*dynamodbstreams.DescribeStreamOutput, error) {
			return c.api.DescribeStream(ctx, in, c.opts.StreamsClientOptions...)
		})
		if err != nil {
			return nil, fmt.Errorf("ddbindex: describe stream %s: %w", arn, err)
		}
		if out.StreamDescription == nil {
			return nil, &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "DescribeStream", Err: fmt.Errorf("stream %s: no stream description in the answer", arn)}
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			break
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
	known := map[string]bool{}
	for _, s := range all {
		known[aws.ToString(s.ShardId)] = true
	}
	var ordered []streamtypes.Shard
	done := map[string]bool{}
	for len(ordered) < len(all) {
		progress := false
		for _, s := range all {
			id, parent := aws.ToString(s.ShardId), aws.ToString(s.ParentShardId)
			if done[id] || (parent != "" && known[parent] && !done[parent]) {
				continue
			}
			done[id], progress = true, true
			ordered = append(ordered, s)
		}
		if !progress {
			return nil, &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "DescribeStream", Err: fmt.Errorf("stream %s has a shard cycle", arn)}
		}
	}
	return ordered, nil
}

// pollShard reads one shard from where s says, applying what it reads,
// until the shard ends (it is then drained), or for an open shard until
// MaxEmptyReads empty pages in a row (s keeps the iterator for the next
// pass).
func (c *Consumer[T]) pollShard(ctx context.Context, arn string, sh streamtypes.Shard, s *shardState) (ddbindex.ApplyStats, error) {
	var st ddbindex.ApplyStats
	id := aws.ToString(sh.ShardId)
	var end string // a closed shard's last sequence number
	if r := sh.SequenceNumberRange; r != nil {
		end = aws.ToString(r.EndingSequenceNumber)
	}
	// An open shard's pass ends after MaxEmptyReads empty pages in a row. A
	// closed shard is read through empty pages up to its last record; after
	// it, AWS ends the shard (NextShardIterator null), and MaxEmptyReads
	// bounds the pages until then, in case a server reports an ending
	// sequence number for a shard that is still open (dynoxide does).
	maxEmpty := func() int {
		if end != "" && (s.last == "" || compareSeq(s.last, end) < 0) {
			return closedShardMaxEmptyReads
		}
		return c.opts.MaxEmptyReads
	}
	empty, expired := 0, 0
	for {
		if s.iter == nil {
			it, at, err := c.open(ctx, arn, id)
			if err != nil {
				return st, err
			}
			if it == nil {
				s.drained = true // nothing left to read
				return st, nil
			}
			s.iter, s.last = it, at
		}
		if c.lc.c != nil {
			// Renew the lease when due; when another consumer took it over,
			// leave the shard to it.
			held, err := c.takeLease(ctx, id, s)
			if err != nil || !held {
				return st, err
			}
		}
		out, err := retry.Call(ctx, c.retry, "GetRecords", func() (*dynamodbstreams.GetRecordsOutput, error) {
			return c.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: s.iter, Limit: aws.Int32(c.opts.BatchSize)}, c.opts.StreamsClientOptions...)
		})
		var expiredErr *streamtypes.ExpiredIteratorException
		var trimmed *streamtypes.TrimmedDataAccessException
		switch {
		case errors.As(err, &expiredErr):
			// Iterators live 15 minutes: reopen after the checkpoint, which
			// every applied record is covered by.
			s.iter = nil
			if expired++; expired > maxExpiredReopens {
				return st, fmt.Errorf("ddbindex: read shard %s: %d fresh shard iterators in a row were refused as expired: %w", id, expired, err)
			}
			continue
		case errors.As(err, &trimmed):
			seq, cerr := c.cp.Checkpoint(ctx, id)
			if cerr != nil {
				return st, fmt.Errorf("ddbindex: read checkpoint of %s: %w", id, cerr)
			}
			it, err := c.gap(ctx, arn, id, seq, err)
			if err != nil {
				return st, err
			}
			if s.iter, s.last = it, ""; it == nil {
				s.drained = true
				return st, nil
			}
			continue
		case err != nil:
			return st, fmt.Errorf("ddbindex: read shard %s: %w", id, err)
		}
		expired = 0
		page(ctx, id, out.Records)
		if len(out.Records) > 0 {
			empty = 0
			got, err := c.applyPage(ctx, arn, id, out.Records)
			addStats(&st, got)
			if err != nil {
				return st, err
			}
			if d := out.Records[len(out.Records)-1].Dynamodb; d != nil && d.SequenceNumber != nil {
				s.last = *d.SequenceNumber
			}
		} else {
			empty++
		}
		if s.iter = out.NextShardIterator; s.iter == nil {
			s.drained = true // AWS: "If set to null, the shard has been closed"
			return st, nil
		}
		if empty >= maxEmpty() {
			return st, nil
		}
	}
}

// open returns an iterator for the shard after its checkpoint (from its
// oldest record without one), nil when the shard has nothing more to read,
// and the sequence number it starts after ("" when not known).
func (c *Consumer[T]) open(ctx context.Context, arn, shard string) (*string, string, error) {
	seq, err := c.cp.Checkpoint(ctx, shard)
	if err != nil {
		return nil, "", fmt.Errorf("ddbindex: read checkpoint of %s: %w", shard, err)
	}
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
	if seq != "" {
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(seq)
	}
	it, err := c.iterator(ctx, in)
	var trimmed *streamtypes.TrimmedDataAccessException
	if errors.As(err, &trimmed) {
		it, err := c.gap(ctx, arn, shard, seq, err)
		return it, "", err
	}
	return it, seq, err
}

// compareSeq compares two sequence numbers (decimal integers of up to 40
// digits) numerically.
func compareSeq(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func (c *Consumer[T]) iterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput) (*string, error) {
	out, err := retry.Call(ctx, c.retry, "GetShardIterator", func() (*dynamodbstreams.GetShardIteratorOutput, error) {
		return c.api.GetShardIterator(ctx, in, c.opts.StreamsClientOptions...)
	})
	if err != nil {
		return nil, fmt.Errorf("ddbindex: shard iterator of %s: %w", aws.ToString(in.ShardId), err)
	}
	return out.ShardIterator, nil
}

// gap handles records trimmed before they were applied: it returns the
// *GapError, or, when OnGap accepts the gap, an iterator at the shard's
// oldest remaining record.
func (c *Consumer[T]) gap(ctx context.Context, arn, shard, after string, cause error) (*string, error) {
	g := Gap{StreamARN: arn, ShardID: shard, AfterSequence: after}
	gerr := &GapError{Gap: g, Err: sdkError(cause)}
	if c.opts.OnGap == nil {
		return nil, gerr
	}
	if err := c.opts.OnGap(ctx, g); err != nil {
		return nil, fmt.Errorf("%w; OnGap: %w", gerr, err)
	}
	return c.iterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
}

// recordResult is what a worker did with record i of a page.
type recordResult struct {
	i       int
	st      ddbindex.ApplyStats
	err     error
	stopped bool // not tried: an earlier record failed
}

// applyPage applies one GetRecords page. Its records are grouped by base
// item, in stream order; each of Workers workers takes the next item's
// records and applies them in order, so one item's changes are applied in
// order and different items' in parallel. The checkpoint follows the longest
// prefix of the page that is applied, every CheckpointEvery records and at
// the end. When a record fails, the records before it are still applied,
// records after it are no longer started, and the page returns the failure
// of the first record that failed, checkpointed up to the record before it.
func (c *Consumer[T]) applyPage(ctx context.Context, arn, shard string, recs []streamtypes.Record) (ddbindex.ApplyStats, error) {
	var st ddbindex.ApplyStats
	n := len(recs)
	results := make(chan recordResult, n)
	stopAll, wait := applyByItem(recs, c.opts.Workers, func(i int) (ddbindex.ApplyStats, error) {
		return c.applyRecord(ctx, arn, shard, recs[i])
	}, func(r recordResult) { results <- r })

	done := make([]bool, n)
	next, saved := 0, 0 // recs[:next] are applied, recs[:saved] checkpointed
	failedAt, failed := n, error(nil)
	var cpErr error
	for range n {
		r := <-results
		addStats(&st, r.st)
		switch {
		case r.stopped:
			continue
		case r.err != nil:
			if r.i < failedAt {
				failedAt, failed = r.i, r.err
			}
			continue
		}
		done[r.i] = true
		for next < n && done[next] {
			next++
		}
		if cpErr == nil && next-saved >= c.opts.CheckpointEvery {
			if cpErr = c.checkpoint(ctx, shard, recs[saved:next]); cpErr != nil {
				stopAll()
			} else {
				saved = next
			}
		}
	}
	wait()
	if next > saved && cpErr == nil {
		cctx := ctx
		if ctx.Err() != nil {
			// Stopping: record the progress anyway, so that a restart
			// replays less.
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), finalCheckpointTimeout)
			defer cancel()
		}
		cpErr = c.checkpoint(cctx, shard, recs[saved:next])
	}
	switch {
	case failed != nil && cpErr != nil:
		return st, errors.Join(failed, cpErr)
	case failed != nil:
		return st, failed
	}
	return st, cpErr
}

// checkpoint records that recs (the records after the last checkpoint) are
// applied: the checkpoint becomes the last one's sequence number.
func (c *Consumer[T]) checkpoint(ctx context.Context, shard string, recs []streamtypes.Record) error {
	for i := len(recs) - 1; i >= 0; i-- {
		// A record without a sequence number is poison, and was skipped:
		// the checkpoint is the last one before it that has one.
		if d := recs[i].Dynamodb; d != nil && aws.ToString(d.SequenceNumber) != "" {
			if err := c.cp.SetCheckpoint(ctx, shard, *d.SequenceNumber); err != nil {
				return fmt.Errorf("ddbindex: write checkpoint of %s: %w", shard, err)
			}
			return nil
		}
	}
	return nil
}

// applyByItem applies recs on up to workers goroutines and hands each
// record's outcome to out, from the worker that applied it. The records are
// grouped by base item (groupByItem; with one worker, taken one by one in
// stream order): a worker takes the next item's records and applies them in
// order, so one item's changes are applied in order and different items' in
// parallel. Once a record has failed, the records after it are no longer
// started (out gets them as stopped); a worker notes the failure before it
// reports it, so it never starts a later record of the same item. stopAll
// makes the workers start no record at all; wait waits for them.
func applyByItem(recs []streamtypes.Record, workers int, apply func(i int) (ddbindex.ApplyStats, error), out func(recordResult)) (stopAll, wait func()) {
	n := len(recs)
	// stop is the index of the first record known to have failed (n: none,
	// -1: stop everything).
	var stop atomic.Int64
	stop.Store(int64(n))
	lower := func(i int64) {
		for {
			cur := stop.Load()
			if i >= cur || stop.CompareAndSwap(cur, i) {
				return
			}
		}
	}
	var items [][]int
	if workers == 1 {
		// One worker: the records in stream order, which keeps every
		// item's order, and lets a checkpoint follow record by record.
		items = make([][]int, n)
		for i := range items {
			items[i] = []int{i}
		}
	} else {
		items = groupByItem(recs)
	}
	jobs := make(chan []int, len(items))
	for _, item := range items {
		jobs <- item
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Go(func() {
			for item := range jobs {
				for _, i := range item {
					if int64(i) > stop.Load() {
						out(recordResult{i: i, stopped: true})
						continue
					}
					st, err := apply(i)
					if err != nil {
						lower(int64(i))
					}
					out(recordResult{i: i, st: st, err: err})
				}
			}
		})
	}
	return func() { lower(-1) }, wg.Wait
}

// groupByItem returns the indexes of recs grouped by base item (by the
// records' Keys, which DynamoDB Streams records always carry), each group in
// stream order, the groups in the order of their first record. Records
// without Keys form one group of their own, so they keep their order among
// themselves.
func groupByItem(recs []streamtypes.Record) [][]int {
	groups := make([][]int, 0, len(recs))
	byKey := make(map[string]int, len(recs))
	keyless := -1
	var b []byte
	for i, r := range recs {
		var keys map[string]streamtypes.AttributeValue
		if r.Dynamodb != nil {
			keys = r.Dynamodb.Keys
		}
		if len(keys) == 0 {
			if keyless < 0 {
				keyless = len(groups)
				groups = append(groups, nil)
			}
			groups[keyless] = append(groups[keyless], i)
			continue
		}
		b = appendItemKey(b[:0], keys)
		if g, ok := byKey[string(b)]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		byKey[string(b)] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// appendItemKey appends an unambiguous text of a base key: its attribute
// names, sorted, each with its value's type and length-prefixed value, a
// Number in its canonical form (av.NumberKey), so that two records share a
// text exactly when DynamoDB sees one key in them ("1" and "1.0" are one).
func appendItemKey(b []byte, key map[string]streamtypes.AttributeValue) []byte {
	names := make([]string, 0, len(key))
	for k := range key {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		var typ byte
		var v []byte
		switch x := key[k].(type) {
		case *streamtypes.AttributeValueMemberS:
			if x != nil {
				typ, v = 'S', []byte(x.Value)
			}
		case *streamtypes.AttributeValueMemberN:
			if x != nil {
				typ, v = 'N', []byte(av.NumberKey(x.Value))
			}
		case *streamtypes.AttributeValueMemberB:
			if x != nil {
				typ, v = 'B', x.Value
			}
		}
		if typ == 0 {
			typ, v = '?', fmt.Appendf(nil, "%T", key[k])
		}
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		b = append(b, typ)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return b
}

// applyRecord applies one record's index writes with Table.Apply, retrying
// transient failures (Apply is idempotent: a retry counts the writes its
// failed attempts made as Stale); a record that can never be applied goes to
// the poison policy.
func (c *Consumer[T]) applyRecord(ctx context.Context, arn, shard string, r streamtypes.Record) (st ddbindex.ApplyStats, err error) {
	defer func() { c.tel.record(ctx, createdAt(r), st, err) }()
	ch, err := ChangeFromRecord(r)
	if err != nil {
		return c.poison(ctx, arn, shard, r, err, ddbindex.ApplyStats{})
	}
	// st is the last attempt's.
	_, err = retry.Call(ctx, c.retry, "Apply", func() (struct{}, error) {
		var err error
		st, err = c.t.Apply(ctx, []ddbindex.Change{ch}, c.opts.ClientOptions...)
		return struct{}{}, err
	})
	if err == nil {
		return st, nil
	}
	st.Changes = 0 // not applied; the writes it made count
	if isPoison(err) {
		return c.poison(ctx, arn, shard, r, err, st)
	}
	return st, fmt.Errorf("ddbindex: apply stream record %s %s: %w", ch.Version, recordSource(arn, shard), err)
}

// recordSource names where a record came from in a message: its shard, or,
// for a Lambda event (which does not name the shard), its stream.
func recordSource(arn, shard string) string {
	switch {
	case shard != "":
		return "of shard " + shard
	case arn != "":
		return "of stream " + arn
	}
	return "of an unnamed stream"
}

// isPoison reports whether applying a record failed in a way no retry can
// overcome: the record is malformed, its change cannot be written (it does
// not fit the model), or DynamoDB refuses a write as invalid.
func isPoison(err error) bool {
	return errors.Is(err, ddbindex.ErrStreamRecord) || errors.Is(err, ddbindex.ErrInvalidWrite) || retry.IsValidation(err)
}

// poison applies the poison-record policy to r, which failed with cause.
func (c *Consumer[T]) poison(ctx context.Context, arn, shard string, r streamtypes.Record, cause error, st ddbindex.ApplyStats) (ddbindex.ApplyStats, error) {
	p := PoisonRecord{StreamARN: arn, ShardID: shard, EventName: string(r.EventName), Record: r, Err: cause}
	if d := r.Dynamodb; d != nil {
		p.SequenceNumber = aws.ToString(d.SequenceNumber)
		p.Keys = keyString(d.Keys)
	}
	perr := &PoisonRecordError{PoisonRecord: p}
	if c.opts.OnPoison == nil {
		return st, perr
	}
	c.hookMu.Lock()
	err := c.opts.OnPoison(ctx, p)
	c.hookMu.Unlock()
	if err != nil {
		return st, fmt.Errorf("%w; OnPoison: %w", perr, err)
	}
	st.Skipped++
	return st, nil
}

// addStats adds o to s.
func addStats(s *ddbindex.ApplyStats, o ddbindex.ApplyStats) {
	s.Changes += o.Changes
	s.Puts += o.Puts
	s.Deletes += o.Deletes
	s.Stale += o.Stale
	s.Skipped += o.Skipped
}

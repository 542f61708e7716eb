package ddbindex

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// This file brings stream records to Table.Apply: one small adapter for
// DynamoDB Streams records (service/dynamodbstreams), one for AWS Lambda
// stream events, and a consumer that reads a stream's shards with
// checkpoints.

// ChangeFromStreamRecord converts a DynamoDB Streams record into a Change
// whose version is the record's sequence number. The stream must carry both
// images (NEW_AND_OLD_IMAGES).
func ChangeFromStreamRecord(r streamtypes.Record) (Change, error) {
	if r.Dynamodb == nil || r.Dynamodb.SequenceNumber == nil {
		return Change{}, fmt.Errorf("%w: stream record without a sequence number", ErrInvalidWrite)
	}
	sr := r.Dynamodb
	c := Change{Version: aws.ToString(sr.SequenceNumber)}
	var err error
	if c.Old, err = streamImage(sr.OldImage); err != nil {
		return Change{}, err
	}
	if c.New, err = streamImage(sr.NewImage); err != nil {
		return Change{}, err
	}
	return c, checkImages(string(r.EventName), c, string(sr.StreamViewType))
}

// ChangeFromLambdaRecord converts an AWS Lambda DynamoDB stream event record
// into a Change whose version is the record's sequence number.
func ChangeFromLambdaRecord(r events.DynamoDBEventRecord) (Change, error) {
	if r.Change.SequenceNumber == "" {
		return Change{}, fmt.Errorf("%w: stream record without a sequence number", ErrInvalidWrite)
	}
	c := Change{Version: r.Change.SequenceNumber}
	var err error
	if c.Old, err = lambdaImage(r.Change.OldImage); err != nil {
		return Change{}, err
	}
	if c.New, err = lambdaImage(r.Change.NewImage); err != nil {
		return Change{}, err
	}
	return c, checkImages(r.EventName, c, r.Change.StreamViewType)
}

func checkImages(event string, c Change, view string) error {
	switch {
	case event == "INSERT" && c.New == nil, event == "MODIFY" && (c.New == nil || c.Old == nil), event == "REMOVE" && c.Old == nil:
		return fmt.Errorf("%w: %s record %s lacks an image; the stream view type must be NEW_AND_OLD_IMAGES (it is %q)", ErrInvalidWrite, event, c.Version, view)
	case event != "INSERT" && event != "MODIFY" && event != "REMOVE":
		return fmt.Errorf("%w: unknown stream event %q", ErrInvalidWrite, event)
	}
	return nil
}

func streamImage(img map[string]streamtypes.AttributeValue) (map[string]types.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		av, err := fromStreamAV(v)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %s: %w", ErrInvalidWrite, k, err)
		}
		out[k] = av
	}
	return out, nil
}

func fromStreamAV(v streamtypes.AttributeValue) (types.AttributeValue, error) {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}, nil
	case *streamtypes.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			av, err := fromStreamAV(e)
			if err != nil {
				return nil, err
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case *streamtypes.AttributeValueMemberM:
		m, err := streamImage(v.Value)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported stream attribute value %T", v)
}

func lambdaImage(img map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		av, err := fromLambdaAV(v)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %s: %w", ErrInvalidWrite, k, err)
		}
		out[k] = av
	}
	return out, nil
}

func fromLambdaAV(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		l := make([]types.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			av, err := fromLambdaAV(e)
			if err != nil {
				return nil, err
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeMap:
		m, err := lambdaImage(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported Lambda attribute value type %d", v.DataType())
}

// ApplyLambdaEvent applies every record of a Lambda DynamoDB stream event, in
// order: the body of a Lambda handler that keeps index tables in step.
func (t *Table[T]) ApplyLambdaEvent(ctx context.Context, ev events.DynamoDBEvent) (ApplyStats, error) {
	changes := make([]Change, 0, len(ev.Records))
	for _, r := range ev.Records {
		c, err := ChangeFromLambdaRecord(r)
		if err != nil {
			return ApplyStats{}, err
		}
		changes = append(changes, c)
	}
	return t.Apply(ctx, changes...)
}

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
type MemoryCheckpoints struct {
	mu  sync.Mutex
	seq map[string]string
}

// Checkpoint implements Checkpoints.
func (m *MemoryCheckpoints) Checkpoint(_ context.Context, shardID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq[shardID], nil
}

// SetCheckpoint implements Checkpoints.
func (m *MemoryCheckpoints) SetCheckpoint(_ context.Context, shardID, seq string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seq == nil {
		m.seq = map[string]string{}
	}
	m.seq[shardID] = seq
	return nil
}

// ConsumerOptions configure a [StreamConsumer].
type ConsumerOptions struct {
	// StreamARN is the stream to read. Default: the latest stream of the
	// Table's base table (ListStreams).
	StreamARN string
	// BatchSize is the Limit of each GetRecords. Default 1000.
	BatchSize int32
	// PollInterval is how long Run waits when a pass found no records.
	// Default 1 s.
	PollInterval time.Duration
}

// StreamConsumer reads the base table's stream and keeps the index tables in
// step through Table.Apply, checkpointing after every batch. Records are
// applied in shard order, parent shards before their children.
type StreamConsumer[T any] struct {
	t    *Table[T]
	api  StreamsAPI
	cp   Checkpoints
	opts ConsumerOptions
}

// NewStreamConsumer returns a consumer of t's base-table stream.
func NewStreamConsumer[T any](t *Table[T], api StreamsAPI, cp Checkpoints, opts ConsumerOptions) *StreamConsumer[T] {
	if opts.BatchSize == 0 {
		opts.BatchSize = 1000
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	return &StreamConsumer[T]{t: t, api: api, cp: cp, opts: opts}
}

func (c *StreamConsumer[T]) streamARN(ctx context.Context) (string, error) {
	if c.opts.StreamARN != "" {
		return c.opts.StreamARN, nil
	}
	out, err := c.api.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(c.t.TableName())})
	if err != nil {
		return "", fmt.Errorf("ddbindex: list streams of %s: %w", c.t.TableName(), err)
	}
	if len(out.Streams) == 0 {
		return "", fmt.Errorf("ddbindex: table %s has no stream; create it with a NEW_AND_OLD_IMAGES stream", c.t.TableName())
	}
	return aws.ToString(out.Streams[len(out.Streams)-1].StreamArn), nil
}

// Poll reads every shard of the stream up to its current end once, applies
// the records, and checkpoints. It returns what it applied.
func (c *StreamConsumer[T]) Poll(ctx context.Context) (ApplyStats, error) {
	var total ApplyStats
	arn, err := c.streamARN(ctx)
	if err != nil {
		return total, err
	}
	shards, err := c.shards(ctx, arn)
	if err != nil {
		return total, err
	}
	for _, sh := range shards {
		st, err := c.pollShard(ctx, arn, aws.ToString(sh.ShardId))
		total.add(st)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Run polls until ctx is done, waiting PollInterval after a pass that found
// nothing. It returns ctx's error, or the first error of a pass.
func (c *StreamConsumer[T]) Run(ctx context.Context) error {
	for {
		st, err := c.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if st.Changes == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.opts.PollInterval):
			}
		}
	}
}

// shards lists the stream's shards, parents before children.
func (c *StreamConsumer[T]) shards(ctx context.Context, arn string) ([]streamtypes.Shard, error) {
	var all []streamtypes.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
	for {
		out, err := c.api.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: describe stream %s: %w", arn, err)
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
			return nil, fmt.Errorf("ddbindex: stream %s has a shard cycle", arn)
		}
	}
	return ordered, nil
}

func (c *StreamConsumer[T]) pollShard(ctx context.Context, arn, shard string) (ApplyStats, error) {
	var st ApplyStats
	seq, err := c.cp.Checkpoint(ctx, shard)
	if err != nil {
		return st, fmt.Errorf("ddbindex: read checkpoint of %s: %w", shard, err)
	}
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
	if seq != "" {
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(seq)
	}
	it, err := c.api.GetShardIterator(ctx, in)
	if err != nil {
		return st, fmt.Errorf("ddbindex: shard iterator of %s: %w", shard, err)
	}
	iter := it.ShardIterator
	for iter != nil {
		out, err := c.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(c.opts.BatchSize)})
		if err != nil {
			return st, fmt.Errorf("ddbindex: read shard %s: %w", shard, err)
		}
		if len(out.Records) == 0 {
			return st, nil // at the shard's current end (or closed: NextShardIterator nil)
		}
		changes := make([]Change, len(out.Records))
		for i, r := range out.Records {
			if changes[i], err = ChangeFromStreamRecord(r); err != nil {
				return st, err
			}
		}
		got, err := c.t.Apply(ctx, changes...)
		st.add(got)
		if err != nil {
			return st, err
		}
		if err := c.cp.SetCheckpoint(ctx, shard, changes[len(changes)-1].Version); err != nil {
			return st, fmt.Errorf("ddbindex: write checkpoint of %s: %w", shard, err)
		}
		iter = out.NextShardIterator
	}
	return st, nil
}

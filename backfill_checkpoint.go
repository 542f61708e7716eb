package ddbindex

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BackfillSegment names one segment of a backfill's scan: Segment of Total
// (0 of 1 for a scan in one segment).
type BackfillSegment struct {
	Segment, Total int32
}

// BackfillCheckpoint is the saved position of one segment of a backfill.
type BackfillCheckpoint struct {
	// LastEvaluatedKey is the scan position after the last page whose
	// writes were all made: the segment resumes after it.
	LastEvaluatedKey map[string]types.AttributeValue
	// Done reports that the segment was scanned to its end.
	Done bool
}

// BackfillCheckpoints stores the positions of backfills, for
// [BackfillOptions].Checkpoint. A backfill's key is
// "<base table>#<index>#<form>": the physical base table name, the logical
// index name and the form filled ("gsi", "lsi" or "table"). Each segment
// is saved by one goroutine at a time; different segments concurrently.
type BackfillCheckpoints interface {
	// Load returns the saved position of every segment of the backfill
	// key (of every Total it was run with); none when it never ran.
	Load(ctx context.Context, key string) (map[BackfillSegment]BackfillCheckpoint, error)
	// Save records that segment has been backfilled up to
	// lastEvaluatedKey, the LastEvaluatedKey of the page just done; an
	// empty lastEvaluatedKey means the segment is done.
	Save(ctx context.Context, key string, segment BackfillSegment, lastEvaluatedKey map[string]types.AttributeValue) error
}

// MemoryBackfillCheckpoints keeps backfill positions in memory: a backfill
// canceled and called again in the same process resumes. The zero value is
// ready to use; it is safe for concurrent use.
type MemoryBackfillCheckpoints struct {
	mu  sync.Mutex
	pos map[string]map[BackfillSegment]BackfillCheckpoint
}

// Load returns the positions saved under key.
func (m *MemoryBackfillCheckpoints) Load(_ context.Context, key string) (map[BackfillSegment]BackfillCheckpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.pos[key]), nil
}

// Save keeps segment's position under key.
func (m *MemoryBackfillCheckpoints) Save(_ context.Context, key string, segment BackfillSegment, lastEvaluatedKey map[string]types.AttributeValue) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pos == nil {
		m.pos = map[string]map[BackfillSegment]BackfillCheckpoint{}
	}
	if m.pos[key] == nil {
		m.pos[key] = map[BackfillSegment]BackfillCheckpoint{}
	}
	m.pos[key][segment] = BackfillCheckpoint{LastEvaluatedKey: maps.Clone(lastEvaluatedKey), Done: len(lastEvaluatedKey) == 0}
	return nil
}

// Clear forgets every position saved under key, so that the next backfill
// starts from the beginning.
func (m *MemoryBackfillCheckpoints) Clear(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pos, key)
	return nil
}

// DynamoDBBackfillCheckpoints keeps backfill positions in a DynamoDB table,
// so that a backfill resumes after its process crashed: the control table
// that [Options].ControlTable names does ([Table.ControlTableInput] creates
// it). Each segment is one item: partition key "pk" = "backfill#" + the
// backfill's key, sort key "sk" = "<segment>/<total>", with the position in
// "lek" (the LastEvaluatedKey as a map), "done" and "updated".
type DynamoDBBackfillCheckpoints struct {
	// Client sends the requests. *dynamodb.Client implements it.
	Client Client
	// Table is the table's physical name.
	Table string
	// ClientOptions are applied to every request, as the SDK's per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
}

// backfillPrefix starts the partition key of backfill checkpoints in the
// control table.
const backfillPrefix = "backfill#"

// check reports a store that cannot send requests.
func (s *DynamoDBBackfillCheckpoints) check() error {
	if s.Client == nil || s.Table == "" {
		return fmt.Errorf("%w: DynamoDBBackfillCheckpoints needs a Client and a Table", ErrInvalidWrite)
	}
	return nil
}

// Load reads the positions saved under key (strongly consistent).
func (s *DynamoDBBackfillCheckpoints) Load(ctx context.Context, key string) (map[BackfillSegment]BackfillCheckpoint, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	c := calls{s.Client}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": controlPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: backfillPrefix + key}},
		ConsistentRead:            aws.Bool(true),
	}
	out := map[BackfillSegment]BackfillCheckpoint{}
	for {
		page, err := c.Query(ctx, in, s.ClientOptions...)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: read backfill checkpoints of %s from %s: %w", key, s.Table, err)
		}
		for _, item := range page.Items {
			seg, cp, err := checkpointFromItem(item)
			if err != nil {
				return nil, fmt.Errorf("%w: backfill checkpoint of %s in %s: %w", ErrMalformedItem, key, s.Table, err)
			}
			out[seg] = cp
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Save writes segment's position under key.
func (s *DynamoDBBackfillCheckpoints) Save(ctx context.Context, key string, segment BackfillSegment, lastEvaluatedKey map[string]types.AttributeValue) error {
	if err := s.check(); err != nil {
		return err
	}
	item := map[string]types.AttributeValue{
		controlPK: &types.AttributeValueMemberS{Value: backfillPrefix + key},
		controlSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("%d/%d", segment.Segment, segment.Total)},
		"done":    &types.AttributeValueMemberBOOL{Value: len(lastEvaluatedKey) == 0},
		"updated": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
	}
	if len(lastEvaluatedKey) > 0 {
		item["lek"] = &types.AttributeValueMemberM{Value: lastEvaluatedKey}
	}
	_, err := calls{s.Client}.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item}, s.ClientOptions...)
	if err != nil {
		return fmt.Errorf("ddbindex: save backfill checkpoint of %s in %s: %w", key, s.Table, err)
	}
	return nil
}

// Clear deletes every position saved under key, so that the next backfill
// starts from the beginning.
func (s *DynamoDBBackfillCheckpoints) Clear(ctx context.Context, key string) error {
	cps, err := s.Load(ctx, key)
	if err != nil {
		return err
	}
	for seg := range cps {
		_, err := calls{s.Client}.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: map[string]types.AttributeValue{
			controlPK: &types.AttributeValueMemberS{Value: backfillPrefix + key},
			controlSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("%d/%d", seg.Segment, seg.Total)},
		}}, s.ClientOptions...)
		if err != nil {
			return fmt.Errorf("ddbindex: clear backfill checkpoints of %s in %s: %w", key, s.Table, err)
		}
	}
	return nil
}

// checkpointFromItem reads a checkpoint item; anything malformed is an
// error, so a damaged item never makes a backfill skip part of a segment.
func checkpointFromItem(item map[string]types.AttributeValue) (BackfillSegment, BackfillCheckpoint, error) {
	var seg BackfillSegment
	var cp BackfillCheckpoint
	sk, ok := item[controlSK].(*types.AttributeValueMemberS)
	if !ok {
		return seg, cp, fmt.Errorf("an item without its segment")
	}
	a, b, ok := strings.Cut(sk.Value, "/")
	n, errN := strconv.ParseInt(a, 10, 32)
	m, errM := strconv.ParseInt(b, 10, 32)
	if !ok || errN != nil || errM != nil || n < 0 || m < 1 || n >= m {
		return seg, cp, fmt.Errorf("segment %q is not <segment>/<total>", sk.Value)
	}
	seg = BackfillSegment{Segment: int32(n), Total: int32(m)}
	done, ok := item["done"].(*types.AttributeValueMemberBOOL)
	if !ok {
		return seg, cp, fmt.Errorf("segment %s: no \"done\" flag", sk.Value)
	}
	cp.Done = done.Value
	switch lek := item["lek"].(type) {
	case nil:
		if !cp.Done {
			return seg, cp, fmt.Errorf("segment %s: neither done nor a position", sk.Value)
		}
	case *types.AttributeValueMemberM:
		if cp.Done {
			return seg, cp, fmt.Errorf("segment %s: done, with a position", sk.Value)
		}
		cp.LastEvaluatedKey = lek.Value
	default:
		return seg, cp, fmt.Errorf("segment %s: the position is not a map", sk.Value)
	}
	return seg, cp, nil
}

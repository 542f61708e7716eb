package migrate

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
)

// This file holds the stores of Backfill's positions: the Checkpoints
// interface, and its memory and DynamoDB implementations.

// Segment names one segment of a backfill's scan: Segment of Total (0 of 1
// for a scan in one segment).
type Segment struct {
	Segment, Total int32
}

// Checkpoint is the saved position of one segment of a backfill.
type Checkpoint struct {
	// LastEvaluatedKey is the scan position after the last page whose
	// writes were all made: the segment resumes after it.
	LastEvaluatedKey map[string]types.AttributeValue
	// Done reports that the segment was scanned to its end.
	Done bool
}

// Checkpoints stores the positions of backfills, for
// [BackfillOptions].Checkpoint. A backfill's key is
// "<base table>#<index>#<form>": the physical base table name, the logical
// index name and the form filled ("gsi", "lsi" or "table"). Each segment
// is saved by one goroutine at a time; different segments concurrently.
type Checkpoints interface {
	// Load returns the saved position of every segment of the backfill
	// key (of every Total it was run with); none when it never ran.
	Load(ctx context.Context, key string) (map[Segment]Checkpoint, error)
	// Save records that segment has been backfilled up to
	// lastEvaluatedKey, the LastEvaluatedKey of the page just done; an
	// empty lastEvaluatedKey means the segment is done.
	Save(ctx context.Context, key string, segment Segment, lastEvaluatedKey map[string]types.AttributeValue) error
}

// MemoryCheckpoints keeps backfill positions in memory: a backfill canceled
// and called again in the same process resumes. The zero value is ready to
// use; it is safe for concurrent use. A nil *MemoryCheckpoints refuses
// every call with an error matching [ddbindex.ErrInvalidWrite], as a
// DynamoDBCheckpoints without a Client does.
type MemoryCheckpoints struct {
	mu  sync.Mutex
	pos map[string]map[Segment]Checkpoint
}

// errNilMemory is the error of every call on a nil *MemoryCheckpoints.
var errNilMemory = fmt.Errorf("%w: a nil *MemoryCheckpoints (use a new(MemoryCheckpoints))", ddbindex.ErrInvalidWrite)

// Load returns the positions saved under key.
func (m *MemoryCheckpoints) Load(_ context.Context, key string) (map[Segment]Checkpoint, error) {
	if m == nil {
		return nil, errNilMemory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.pos[key]), nil
}

// Save keeps segment's position under key.
func (m *MemoryCheckpoints) Save(_ context.Context, key string, segment Segment, lastEvaluatedKey map[string]types.AttributeValue) error {
	if m == nil {
		return errNilMemory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pos == nil {
		m.pos = map[string]map[Segment]Checkpoint{}
	}
	if m.pos[key] == nil {
		m.pos[key] = map[Segment]Checkpoint{}
	}
	m.pos[key][segment] = Checkpoint{LastEvaluatedKey: maps.Clone(lastEvaluatedKey), Done: len(lastEvaluatedKey) == 0}
	return nil
}

// Clear forgets every position saved under key, so that the next backfill
// starts from the beginning.
func (m *MemoryCheckpoints) Clear(_ context.Context, key string) error {
	if m == nil {
		return errNilMemory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pos, key)
	return nil
}

// DynamoDBCheckpoints keeps backfill positions in a DynamoDB table, so that
// a backfill resumes after its process crashed: the service's control
// table does, the one RouterOptions.ControlTable names
// (schema.ControlTableInput describes it, schema.Prepare creates it with
// PrepareOptions.ControlTable). Each segment is one item: partition key
// "pk" = "backfill#" + the backfill's key, sort key "sk" =
// "<segment>/<total>", with the position in "lek" (the LastEvaluatedKey as
// a map), "done" and "updated".
type DynamoDBCheckpoints struct {
	// Client sends the requests. *dynamodb.Client implements it.
	Client ddbindex.Client
	// Table is the physical name of the control table: no model names
	// it, the application gives it here as to the other users of the
	// control table.
	Table string
	// ClientOptions are applied to every request, as the SDK's per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
}

// The start of the partition key of backfill checkpoints in the control
// table (keyed by controlPK and controlSK).
const checkpointPrefix = "backfill#"

// check reports a store that cannot send requests.
func (s *DynamoDBCheckpoints) check() error {
	if s == nil || s.Client == nil || s.Table == "" {
		return fmt.Errorf("%w: DynamoDBCheckpoints needs a Client and a Table", ddbindex.ErrInvalidWrite)
	}
	return nil
}

// Load reads the positions saved under key (strongly consistent).
func (s *DynamoDBCheckpoints) Load(ctx context.Context, key string) (map[Segment]Checkpoint, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	x, err := expression.NewBuilder().WithKeyCondition(expression.Key(controlPK).Equal(expression.Value(checkpointPrefix + key))).Build()
	if err != nil {
		return nil, fmt.Errorf("%w: migrate: read the backfill checkpoints of %s: %w", ddbindex.ErrInvalidQuery, key, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    x.KeyCondition(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	out := map[Segment]Checkpoint{}
	for {
		page, err := s.Client.Query(ctx, in, s.ClientOptions...)
		if err != nil {
			err = backfillCallErr("Query", in.TableName, nil, err)
			return nil, fmt.Errorf("ddbindex: read backfill checkpoints of %s from %s: %w", key, s.Table, err)
		}
		for _, item := range page.Items {
			seg, cp, err := checkpointFromItem(item)
			if err != nil {
				return nil, fmt.Errorf("%w: backfill checkpoint of %s in %s: %w", ddbindex.ErrMalformedItem, key, s.Table, err)
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
func (s *DynamoDBCheckpoints) Save(ctx context.Context, key string, segment Segment, lastEvaluatedKey map[string]types.AttributeValue) error {
	if err := s.check(); err != nil {
		return err
	}
	item := map[string]types.AttributeValue{
		controlPK: &types.AttributeValueMemberS{Value: checkpointPrefix + key},
		controlSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("%d/%d", segment.Segment, segment.Total)},
		"done":    &types.AttributeValueMemberBOOL{Value: len(lastEvaluatedKey) == 0},
		"updated": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
	}
	if len(lastEvaluatedKey) > 0 {
		item["lek"] = &types.AttributeValueMemberM{Value: lastEvaluatedKey}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item}
	if _, err := s.Client.PutItem(ctx, in, s.ClientOptions...); err != nil {
		err = backfillCallErr("PutItem", in.TableName, nil, err)
		return fmt.Errorf("ddbindex: save backfill checkpoint of %s in %s: %w", key, s.Table, err)
	}
	return nil
}

// Clear deletes every position saved under key, so that the next backfill
// starts from the beginning.
func (s *DynamoDBCheckpoints) Clear(ctx context.Context, key string) error {
	cps, err := s.Load(ctx, key)
	if err != nil {
		return err
	}
	for seg := range cps {
		in := &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: map[string]types.AttributeValue{
			controlPK: &types.AttributeValueMemberS{Value: checkpointPrefix + key},
			controlSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("%d/%d", seg.Segment, seg.Total)},
		}}
		if _, err := s.Client.DeleteItem(ctx, in, s.ClientOptions...); err != nil {
			err = backfillCallErr("DeleteItem", in.TableName, nil, err)
			return fmt.Errorf("ddbindex: clear backfill checkpoints of %s in %s: %w", key, s.Table, err)
		}
	}
	return nil
}

// checkpointFromItem reads a checkpoint item; anything malformed is an
// error, so a damaged item never makes a backfill skip part of a segment.
func checkpointFromItem(item map[string]types.AttributeValue) (Segment, Checkpoint, error) {
	var seg Segment
	var cp Checkpoint
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
	seg = Segment{Segment: int32(n), Total: int32(m)}
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

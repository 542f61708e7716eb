package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/spec"
)

// This file holds DynamoDBCheckpoints: a consumer group's checkpoints and
// shard leases as items of a DynamoDB table.

// DynamoDBCheckpoints keeps the checkpoints and leases of a group of
// consumers in a DynamoDB table, so that a consumer resumes after a restart
// or a crash where it stopped, and consumers of one stream share its shards
// (see [Leases]). The service's control table does: Table is its name, the
// one the application gives package schema ([schema.ControlTableInput]
// describes it, schema.Prepare creates it with PrepareOptions.ControlTable)
// and package migrate (RouterOptions.ControlTable), whose routes and
// backfill checkpoints live there too.
//
// Every item of a group has the partition key "pk" = "stream#" + Name. A
// shard is one item, sort key "sk" = "shard#" + its shard ID, holding the
// checkpoint in "seq" (and in "seq_order", the same number zero-padded to 40
// digits, which is what the conditions compare), and the lease in "owner",
// "until" (Unix milliseconds) and "ended". A consumer's heartbeat is an
// item with sort key "consumer#" + its owner ID and "until".
//
// A checkpoint never moves backwards: SetCheckpoint is a conditional write
// that leaves a later checkpoint in place. Two consumers without leases on
// one stream both apply every record, which is safe (each index-table write
// is conditioned on the change's version, so the later consumer's writes
// count as Stale) but wasteful; with leases each shard is read by one
// consumer at a time.
type DynamoDBCheckpoints struct {
	// Client sends the requests. *dynamodb.Client implements it.
	Client ddbindex.Client
	// Table is the physical name of the control table: no model names
	// it, the application gives it here as to the other users of the
	// control table.
	Table string
	// Name names the group: consumers with the same Name share checkpoints
	// and leases. Use one Name per stream and set of index tables kept from
	// it (such as the base table's name).
	Name string
	// ClientOptions are applied to every request, as the SDK's per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
}

const (
	streamGroupPrefix = "stream#"
	shardItemPrefix   = "shard#"
	ownerItemPrefix   = "consumer#"
	// seqOrderWidth is the width sequence numbers are zero-padded to, so
	// that they compare as strings in the order of their numbers: DynamoDB
	// Streams sequence numbers have 21 to 40 digits (the API Reference's
	// SequenceNumber length constraints).
	seqOrderWidth = 40
)

// check reports a store that cannot send requests.
func (s *DynamoDBCheckpoints) check() error {
	if s == nil || s.Client == nil || s.Table == "" || s.Name == "" {
		return fmt.Errorf("%w: stream: DynamoDBCheckpoints needs a Client, a Table and a Name", ddbindex.ErrInvalidWrite)
	}
	return nil
}

func (s *DynamoDBCheckpoints) key(sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		spec.ControlPK: &types.AttributeValueMemberS{Value: streamGroupPrefix + s.Name},
		spec.ControlSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// seqOrder returns seq zero-padded to seqOrderWidth digits; a sequence
// number that is not a decimal number of at most that many digits is an
// error matching ddbindex.ErrStreamRecord.
func seqOrder(seq string) (string, error) {
	digits := strings.TrimLeft(seq, "0")
	if seq == "" || len(digits) > seqOrderWidth || strings.Trim(digits, "0123456789") != "" {
		return "", fmt.Errorf("%w: stream: %q is not a sequence number (a decimal number of at most %d digits)", ddbindex.ErrStreamRecord, seq, seqOrderWidth)
	}
	return strings.Repeat("0", seqOrderWidth-len(digits)) + digits, nil
}

// Checkpoint returns the shard's checkpoint (a strongly consistent read),
// "" when it has none.
func (s *DynamoDBCheckpoints) Checkpoint(ctx context.Context, shardID string) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.Table),
		Key:                      s.key(shardItemPrefix + shardID),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#seq"),
		ExpressionAttributeNames: map[string]string{"#seq": "seq"},
	}, s.ClientOptions...)
	if err != nil {
		return "", fmt.Errorf("ddbindex: read checkpoint of shard %s from %s: %w", shardID, s.Table, callErr("GetItem", &s.Table, err))
	}
	switch v := out.Item["seq"].(type) {
	case nil:
		return "", nil
	case *types.AttributeValueMemberS:
		return v.Value, nil
	}
	return "", fmt.Errorf("%w: stream: checkpoint of shard %s in %s is not a string", ddbindex.ErrMalformedItem, shardID, s.Table)
}

// SetCheckpoint records that every record of the shard up to seq has been
// applied, unless the shard's checkpoint is already at or after seq (another
// consumer got further): the checkpoint never moves backwards. seq "" clears
// the checkpoint, so that the shard is read again from its oldest record
// (after a gap, see [GapError]).
func (s *DynamoDBCheckpoints) SetCheckpoint(ctx context.Context, shardID, seq string) error {
	if err := s.check(); err != nil {
		return err
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.Table),
		Key:                      s.key(shardItemPrefix + shardID),
		ExpressionAttributeNames: map[string]string{"#seq": "seq", "#ord": "seq_order", "#upd": "updated"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":upd": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
		},
	}
	if seq == "" {
		in.UpdateExpression = aws.String("SET #upd = :upd REMOVE #seq, #ord")
	} else {
		ord, err := seqOrder(seq)
		if err != nil {
			return err
		}
		in.UpdateExpression = aws.String("SET #seq = :seq, #ord = :ord, #upd = :upd")
		in.ConditionExpression = aws.String("attribute_not_exists(#ord) OR #ord <= :ord")
		in.ExpressionAttributeValues[":seq"] = &types.AttributeValueMemberS{Value: seq}
		in.ExpressionAttributeValues[":ord"] = &types.AttributeValueMemberS{Value: ord}
	}
	_, err := s.Client.UpdateItem(ctx, in, s.ClientOptions...)
	if conditionFailed(err) {
		return nil // the checkpoint is already later
	}
	if err != nil {
		return fmt.Errorf("ddbindex: write checkpoint of shard %s to %s: %w", shardID, s.Table, callErr("UpdateItem", &s.Table, err))
	}
	return nil
}

// ListLeases returns every lease and heartbeat of the group (a strongly
// consistent Query).
func (s *DynamoDBCheckpoints) ListLeases(ctx context.Context) ([]Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String("#sk, #owner, #until, #ended"),
		ExpressionAttributeNames:  map[string]string{"#pk": spec.ControlPK, "#sk": spec.ControlSK, "#owner": "owner", "#until": "until", "#ended": "ended"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: streamGroupPrefix + s.Name}},
		ConsistentRead:            aws.Bool(true),
	}
	var out []Lease
	for {
		page, err := s.Client.Query(ctx, in, s.ClientOptions...)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: read leases of %s from %s: %w", s.Name, s.Table, callErr("Query", &s.Table, err))
		}
		for _, item := range page.Items {
			l, err := leaseFromItem(item)
			if err != nil {
				return nil, fmt.Errorf("%w: stream: lease item of %s in %s: %w", ddbindex.ErrMalformedItem, s.Name, s.Table, err)
			}
			out = append(out, l)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// leaseFromItem reads a lease or heartbeat item.
func leaseFromItem(item map[string]types.AttributeValue) (Lease, error) {
	var l Lease
	sk, ok := item[spec.ControlSK].(*types.AttributeValueMemberS)
	if !ok {
		return l, errors.New("no sort key")
	}
	switch {
	case strings.HasPrefix(sk.Value, shardItemPrefix):
		l.ShardID = strings.TrimPrefix(sk.Value, shardItemPrefix)
	case strings.HasPrefix(sk.Value, ownerItemPrefix):
		l.Owner = strings.TrimPrefix(sk.Value, ownerItemPrefix)
	default:
		return l, fmt.Errorf("sort key %q is neither a shard nor a consumer", sk.Value)
	}
	if l.ShardID != "" {
		switch v := item["owner"].(type) {
		case nil:
		case *types.AttributeValueMemberS:
			l.Owner = v.Value
		default:
			return l, fmt.Errorf("%s: the owner is not a string", sk.Value)
		}
	}
	switch v := item["until"].(type) {
	case nil:
	case *types.AttributeValueMemberN:
		ms, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return l, fmt.Errorf("%s: until %q is not Unix milliseconds", sk.Value, v.Value)
		}
		l.Until = time.UnixMilli(ms)
	default:
		return l, fmt.Errorf("%s: until is not a number", sk.Value)
	}
	switch v := item["ended"].(type) {
	case nil:
	case *types.AttributeValueMemberBOOL:
		l.Ended = v.Value
	default:
		return l, fmt.Errorf("%s: ended is not a boolean", sk.Value)
	}
	return l, nil
}

func millis(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// AcquireLease gives owner the shard's lease until until, when nobody holds
// it, its holder's lease ran out by now, or owner holds it already (a
// renewal): one conditional write. It reports whether owner holds the lease.
// shardID "" writes owner's heartbeat instead, which always succeeds.
func (s *DynamoDBCheckpoints) AcquireLease(ctx context.Context, shardID, owner string, now, until time.Time) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	if owner == "" {
		return false, fmt.Errorf("%w: stream: AcquireLease needs an owner", ddbindex.ErrInvalidWrite)
	}
	if shardID == "" {
		item := s.key(ownerItemPrefix + owner)
		item["until"] = millis(until)
		_, err := s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item}, s.ClientOptions...)
		if err != nil {
			return false, fmt.Errorf("ddbindex: write heartbeat of %s to %s: %w", owner, s.Table, callErr("PutItem", &s.Table, err))
		}
		return true, nil
	}
	_, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.Table),
		Key:                      s.key(shardItemPrefix + shardID),
		UpdateExpression:         aws.String("SET #owner = :owner, #until = :until"),
		ConditionExpression:      aws.String("attribute_not_exists(#owner) OR #owner = :owner OR #until <= :now"),
		ExpressionAttributeNames: map[string]string{"#owner": "owner", "#until": "until"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: owner},
			":until": millis(until),
			":now":   millis(now),
		},
	}, s.ClientOptions...)
	if conditionFailed(err) {
		return false, nil // another consumer holds it
	}
	if err != nil {
		return false, fmt.Errorf("ddbindex: take lease of shard %s in %s: %w", shardID, s.Table, callErr("UpdateItem", &s.Table, err))
	}
	return true, nil
}

// ReleaseLease ends owner's lease of the shard, if owner holds it, so that
// another consumer may take it at once. ended marks the shard as read to
// its end (every consumer then skips it), whoever holds it. shardID ""
// deletes owner's heartbeat instead.
func (s *DynamoDBCheckpoints) ReleaseLease(ctx context.Context, shardID, owner string, ended bool) error {
	if err := s.check(); err != nil {
		return err
	}
	if shardID == "" {
		_, err := s.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: s.key(ownerItemPrefix + owner)}, s.ClientOptions...)
		if err != nil {
			return fmt.Errorf("ddbindex: delete heartbeat of %s from %s: %w", owner, s.Table, callErr("DeleteItem", &s.Table, err))
		}
		return nil
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.Table),
		Key:                      s.key(shardItemPrefix + shardID),
		UpdateExpression:         aws.String("REMOVE #owner, #until"),
		ConditionExpression:      aws.String("#owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#owner": "owner", "#until": "until"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: owner},
		},
	}
	if ended {
		in.UpdateExpression = aws.String("SET #ended = :true REMOVE #owner, #until")
		in.ConditionExpression, in.ExpressionAttributeValues = nil, map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}}
		in.ExpressionAttributeNames["#ended"] = "ended"
	}
	_, err := s.Client.UpdateItem(ctx, in, s.ClientOptions...)
	if conditionFailed(err) {
		return nil // owner no longer holds it
	}
	if err != nil {
		return fmt.Errorf("ddbindex: release lease of shard %s in %s: %w", shardID, s.Table, callErr("UpdateItem", &s.Table, err))
	}
	return nil
}

// DeleteLease deletes an item the group no longer needs, if it is still as
// l (from ListLeases) says: an ended shard's item, checkpoint included
// (l.Ended; for a shard the stream no longer lists), or a heartbeat (l with
// no ShardID) whose Until has not changed.
func (s *DynamoDBCheckpoints) DeleteLease(ctx context.Context, l Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	in := &dynamodb.DeleteItemInput{TableName: aws.String(s.Table)}
	switch {
	case l.ShardID != "" && l.Ended:
		in.Key = s.key(shardItemPrefix + l.ShardID)
		in.ConditionExpression = aws.String("#ended = :true")
		in.ExpressionAttributeNames = map[string]string{"#ended": "ended"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}}
	case l.ShardID == "" && l.Owner != "":
		in.Key = s.key(ownerItemPrefix + l.Owner)
		in.ConditionExpression = aws.String("#until = :until")
		in.ExpressionAttributeNames = map[string]string{"#until": "until"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":until": millis(l.Until)}
	default:
		return fmt.Errorf("%w: stream: DeleteLease deletes an ended shard's item or a heartbeat, not %+v", ddbindex.ErrInvalidWrite, l)
	}
	_, err := s.Client.DeleteItem(ctx, in, s.ClientOptions...)
	if conditionFailed(err) {
		return nil // changed since it was listed
	}
	if err != nil {
		return fmt.Errorf("ddbindex: delete lease item from %s: %w", s.Table, callErr("DeleteItem", &s.Table, err))
	}
	return nil
}

// conditionFailed reports whether a write was refused by its condition.
func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

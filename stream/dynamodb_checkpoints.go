package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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
	x, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name("seq"))).Build()
	if err != nil {
		return "", fmt.Errorf("%w: stream: checkpoint of shard %s: %w", ddbindex.ErrInvalidQuery, shardID, err)
	}
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.Table),
		Key:                      s.key(shardItemPrefix + shardID),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     x.Projection(),
		ExpressionAttributeNames: x.Names(),
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
	seqN, ordN := expression.Name("seq"), expression.Name("seq_order")
	b := expression.NewBuilder()
	if seq == "" {
		b = b.WithUpdate(expression.Remove(seqN).Remove(ordN).Set(expression.Name("updated"), expression.Value(nowText())))
	} else {
		ord, err := seqOrder(seq)
		if err != nil {
			return err
		}
		b = b.WithUpdate(expression.Set(seqN, expression.Value(seq)).Set(ordN, expression.Value(ord)).
			Set(expression.Name("updated"), expression.Value(nowText()))).
			WithCondition(ordN.AttributeNotExists().Or(ordN.LessThanEqual(expression.Value(ord))))
	}
	x, err := b.Build()
	if err != nil {
		return fmt.Errorf("%w: stream: checkpoint of shard %s: %w", ddbindex.ErrInvalidWrite, shardID, err)
	}
	_, err = s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(shardItemPrefix + shardID),
		UpdateExpression: x.Update(), ConditionExpression: x.Condition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
	}, s.ClientOptions...)
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
	x, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(spec.ControlPK).Equal(expression.Value(streamGroupPrefix + s.Name))).
		WithProjection(expression.NamesList(expression.Name(spec.ControlSK), expression.Name("owner"), expression.Name("until"), expression.Name("ended"))).
		Build()
	if err != nil {
		return nil, fmt.Errorf("%w: stream: leases of %s: %w", ddbindex.ErrInvalidQuery, s.Name, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    x.KeyCondition(),
		ProjectionExpression:      x.Projection(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
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

// nowText is the time a checkpoint is written at.
func nowText() string { return time.Now().UTC().Format(time.RFC3339Nano) }

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
	ownerN, untilN := expression.Name("owner"), expression.Name("until")
	x, err := expression.NewBuilder().
		WithUpdate(expression.Set(ownerN, expression.Value(owner)).Set(untilN, expression.Value(millis(until)))).
		WithCondition(expression.Or(ownerN.AttributeNotExists(), ownerN.Equal(expression.Value(owner)), untilN.LessThanEqual(expression.Value(millis(now))))).
		Build()
	if err != nil {
		return false, fmt.Errorf("%w: stream: lease of shard %s: %w", ddbindex.ErrInvalidWrite, shardID, err)
	}
	_, err = s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(shardItemPrefix + shardID),
		UpdateExpression: x.Update(), ConditionExpression: x.Condition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
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
	ownerN := expression.Name("owner")
	release := expression.Remove(ownerN).Remove(expression.Name("until"))
	b := expression.NewBuilder()
	if ended {
		b = b.WithUpdate(release.Set(expression.Name("ended"), expression.Value(true)))
	} else {
		b = b.WithUpdate(release).WithCondition(ownerN.Equal(expression.Value(owner)))
	}
	x, err := b.Build()
	if err != nil {
		return fmt.Errorf("%w: stream: lease of shard %s: %w", ddbindex.ErrInvalidWrite, shardID, err)
	}
	_, err = s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(shardItemPrefix + shardID),
		UpdateExpression: x.Update(), ConditionExpression: x.Condition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
	}, s.ClientOptions...)
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
	var cond expression.ConditionBuilder
	switch {
	case l.ShardID != "" && l.Ended:
		in.Key = s.key(shardItemPrefix + l.ShardID)
		cond = expression.Name("ended").Equal(expression.Value(true))
	case l.ShardID == "" && l.Owner != "":
		in.Key = s.key(ownerItemPrefix + l.Owner)
		cond = expression.Name("until").Equal(expression.Value(millis(l.Until)))
	default:
		return fmt.Errorf("%w: stream: DeleteLease deletes an ended shard's item or a heartbeat, not %+v", ddbindex.ErrInvalidWrite, l)
	}
	x, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("%w: stream: delete lease item: %w", ddbindex.ErrInvalidWrite, err)
	}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = x.Condition(), x.Names(), x.Values()
	_, err = s.Client.DeleteItem(ctx, in, s.ClientOptions...)
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

package stream

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file is where package stream's failed calls become a
// *ddbindex.Error (ddbindex.ErrDynamoDB), as ddbindex's calls.go is for
// the root package: a Consumer holds its DynamoDB Streams client as
// streamCalls and its checkpoint store as checkpointCalls. (The index writes
// go through the Table, whose client ddbindex wraps.) Its lease store is
// leaseCalls. An answer the consumer
// cannot use (a DescribeStream without a stream description, or whose shards
// form a cycle) is reported as a *ddbindex.Error of that call where it is
// found, in consumer.go.

// streamCalls is a consumer's DynamoDB Streams client, with every error
// wrapped.
type streamCalls struct{ c StreamsAPI }

func (w streamCalls) ListStreams(ctx context.Context, in *dynamodbstreams.ListStreamsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error) {
	out, err := w.c.ListStreams(ctx, in, optFns...)
	return out, callErr("ListStreams", in.TableName, err)
}

func (w streamCalls) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	out, err := w.c.DescribeStream(ctx, in, optFns...)
	return out, callErr("DescribeStream", nil, err)
}

func (w streamCalls) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	out, err := w.c.GetShardIterator(ctx, in, optFns...)
	return out, callErr("GetShardIterator", nil, err)
}

func (w streamCalls) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := w.c.GetRecords(ctx, in, optFns...)
	return out, callErr("GetRecords", nil, err)
}

// checkpointCalls is a consumer's checkpoint store, with every error
// wrapped.
type checkpointCalls struct{ c Checkpoints }

func (w checkpointCalls) Checkpoint(ctx context.Context, shardID string) (string, error) {
	seq, err := w.c.Checkpoint(ctx, shardID)
	return seq, callErr("Checkpoint", nil, err)
}

func (w checkpointCalls) SetCheckpoint(ctx context.Context, shardID, seq string) error {
	return callErr("SetCheckpoint", nil, w.c.SetCheckpoint(ctx, shardID, seq))
}

// leaseCalls is a consumer's lease store, with every error wrapped; c is
// nil without one.
type leaseCalls struct{ c Leases }

func (w leaseCalls) ListLeases(ctx context.Context) ([]Lease, error) {
	out, err := w.c.ListLeases(ctx)
	return out, callErr("ListLeases", nil, err)
}

func (w leaseCalls) AcquireLease(ctx context.Context, shardID, owner string, now, until time.Time) (bool, error) {
	ok, err := w.c.AcquireLease(ctx, shardID, owner, now, until)
	return ok, callErr("AcquireLease", nil, err)
}

func (w leaseCalls) ReleaseLease(ctx context.Context, shardID, owner string, ended bool) error {
	return callErr("ReleaseLease", nil, w.c.ReleaseLease(ctx, shardID, owner, ended))
}

func (w leaseCalls) DeleteLease(ctx context.Context, l Lease) error {
	return callErr("DeleteLease", nil, w.c.DeleteLease(ctx, l))
}

// callErr wraps a non-nil error of a call in a *ddbindex.Error; nil
// stays nil, and so does an error that is one already (a store's failed
// request, such as DynamoDBCheckpoints', which names its own operation and
// table). table is the table the request named (nil when it names none).
func callErr(op string, table *string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ddbindex.ErrDynamoDB) {
		return err
	}
	e := &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: op, Err: err, Throttles: throttle.Reasons(err, nil)}
	if table != nil {
		e.Table = *table
	}
	return e
}

// sdkError returns the error a call returned, without the
// ErrDynamoDB *ddbindex.Error around it: for errors that report an SDK
// error as their cause but are not a failed call (a gap's
// TrimmedDataAccessException), so that they match one sentinel.
func sdkError(err error) error {
	var ce *ddbindex.Error
	for e := err; errors.As(e, &ce); e = ce.Err {
		if ce.Sentinel == ddbindex.ErrDynamoDB {
			return ce.Err
		}
	}
	return err
}

package migrate

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file is where Backfill's failed calls become a *ddbindex.Error
// (ddbindex.ErrDynamoDB), as ddbindex's calls.go is for the root package:
// a backfill holds its Scan client as scanCalls (its DescribeTable as
// describeCalls) and its checkpoint store as checkpointCalls, and
// DynamoDBCheckpoints wraps its own requests with backfillCallErr. (The
// index writes go through the Table, whose client ddbindex wraps.)

// scanCalls is the client Backfill is given, with every error wrapped.
type scanCalls struct{ c ScanAPI }

func (w scanCalls) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := w.c.Scan(ctx, in, optFns...)
	return out, backfillCallErr("Scan", in.TableName, in.IndexName, err)
}

// describeCalls is the DescribeTable of the ScanAPI Backfill is given, with
// every error wrapped.
type describeCalls struct{ c describeAPI }

func (w describeCalls) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := w.c.DescribeTable(ctx, in, optFns...)
	return out, backfillCallErr("DescribeTable", in.TableName, nil, err)
}

// checkpointCalls is Backfill's checkpoint store, with every error wrapped
// (operations "LoadBackfillCheckpoint" and "SaveBackfillCheckpoint") but
// those that already match a sentinel: the errors of DynamoDBCheckpoints,
// whose requests are wrapped, and its ErrMalformedItem.
type checkpointCalls struct{ c Checkpoints }

func (w checkpointCalls) Load(ctx context.Context, key string) (map[Segment]Checkpoint, error) {
	cps, err := w.c.Load(ctx, key)
	return cps, checkpointErr("LoadBackfillCheckpoint", err)
}

func (w checkpointCalls) Save(ctx context.Context, key string, segment Segment, lastEvaluatedKey map[string]types.AttributeValue) error {
	return checkpointErr("SaveBackfillCheckpoint", w.c.Save(ctx, key, segment, lastEvaluatedKey))
}

// checkpointErr wraps an error of a caller's store in a *ddbindex.Error,
// unless it already matches a sentinel.
func checkpointErr(op string, err error) error {
	if err == nil || ddbindex.Code(err) != "" {
		return err
	}
	return backfillCallErr(op, nil, nil, err)
}

// backfillCallErr wraps a non-nil error of a call in a *ddbindex.Error;
// nil stays nil. table and index are the request's names (nil when it has
// none).
func backfillCallErr(op string, table, index *string, err error) error {
	if err == nil {
		return nil
	}
	e := &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: op, Err: err, Throttles: throttle.Reasons(err, nil)}
	if table != nil {
		e.Table = *table
	}
	if index != nil {
		e.Index = *index
	}
	return e
}

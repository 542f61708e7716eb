package ddbindex

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// fillStats counts what fillIndex did, as package migrate's BackfillStats
// does.
type fillStats struct {
	Scanned, Written, Skipped, Unchanged, Sparse, Tombstones int
}

// scanAPI is the client fillIndex scans the base table with.
type scanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// fillIndex fills the form of index that a backfill fills, from the items in
// the base table, through the core's write of each item (backfill.go): the
// scan in one segment, without checkpoints, rate limit or progress. It is
// for the root package's tests that need an index filled; package migrate's
// Backfill, which adds the rest, has its own tests.
func fillIndex[T any](ctx context.Context, t *Table[T], api scanAPI, index string) (fillStats, error) {
	var st fillStats
	b, err := t.newBackfill(index)
	if err != nil {
		return st, err
	}
	o := bridge.ItemOptions{Retry: retry.Options{}.WithDefaults()}
	in := &dynamodb.ScanInput{TableName: aws.String(b.Table()), Limit: aws.Int32(16)}
	for {
		out, err := api.Scan(ctx, in)
		if err != nil {
			return st, err
		}
		for _, img := range out.Items {
			outcome, err := b.Item(ctx, img, o)
			if err != nil {
				return st, err
			}
			st.Scanned++
			switch outcome {
			case bridge.Written:
				st.Written++
			case bridge.Skipped:
				st.Skipped++
			case bridge.Unchanged:
				st.Unchanged++
			case bridge.Sparse:
				st.Sparse++
			case bridge.Tombstone:
				st.Tombstones++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return st, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
	"github.com/ddbindex/ddbindex/stream"
)

// nilItem is the model the nil-safety walk instantiates the package's
// generic API with: it has an index table, so that records are applied.
type nilItem struct {
	_ ddbindex.TableSpec `ddbindex:"stream-nil-safety"`
	_ ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`

	ID    string `dynamodbav:"id"    ddbindex:"pk"`
	Owner string `dynamodbav:"owner" ddbindex:"by_owner.pk"`
}

// TestNilSafety calls every exported function and method of the package
// with zero and nil arguments, on nil and zero receivers and on consumers
// and handlers made from nil arguments and from a Table on a nil client,
// and fails on a panic or an error without a code. Run is given a
// canceled context, so that it does not wait for a next pass. It fails too
// when an exported function or method is not walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[nilItem](nil)
	require.NoError(t, err)
	built := func(v any, err error) any { // a constructor given valid options
		t.Helper()
		require.NoError(t, err)
		return v
	}
	w := nilwalk.Walker{
		Values: []any{
			tb,
			built(stream.NewConsumer[nilItem](nil, nil, nil)),
			built(stream.NewConsumer[nilItem](tb, nil, nil)),
			built(stream.NewConsumer(tb, nil, &stream.MemoryCheckpoints{}, func(o *stream.ConsumerOptions) { o.Leases = &stream.DynamoDBCheckpoints{} })),
			built(stream.NewLambdaHandler[nilItem](nil)),
			built(stream.NewLambdaHandler(tb)),
			events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{}}},
		},
		Err: func(err error) bool { return ddbindex.Code(err) != "" },
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	run := w
	run.Context = func() context.Context { return canceled }
	// Run returns its context's error as it is; every other error has a code.
	run.Err = func(err error) bool { return errors.Is(err, context.Canceled) || ddbindex.Code(err) != "" }

	w.Walk(t, stream.ChangeFromRecord)
	w.Walk(t, stream.ChangeFromLambdaRecord)
	w.Walk(t, stream.ApplyLambdaEvent[nilItem])

	w.Walk(t, stream.NewConsumer[nilItem])
	w.Walk(t, (*stream.Consumer[nilItem]).Poll)
	run.Walk(t, (*stream.Consumer[nilItem]).Run)
	w.Skip(t, "Consumer.Run", "walked with a canceled context")
	w.Walk(t, (*stream.Consumer[nilItem]).ReleaseLeases)

	w.Walk(t, stream.NewLambdaHandler[nilItem])
	w.Walk(t, (*stream.LambdaHandler[nilItem]).Apply)
	w.Walk(t, (*stream.LambdaHandler[nilItem]).Handle)

	w.Walk(t, (*stream.MemoryCheckpoints).Checkpoint)
	w.Walk(t, (*stream.MemoryCheckpoints).SetCheckpoint)
	w.Walk(t, (*stream.DynamoDBCheckpoints).Checkpoint)
	w.Walk(t, (*stream.DynamoDBCheckpoints).SetCheckpoint)
	w.Walk(t, (*stream.DynamoDBCheckpoints).ListLeases)
	w.Walk(t, (*stream.DynamoDBCheckpoints).AcquireLease)
	w.Walk(t, (*stream.DynamoDBCheckpoints).ReleaseLease)
	w.Walk(t, (*stream.DynamoDBCheckpoints).DeleteLease)

	w.Walk(t, (*stream.GapError).Code)
	w.Walk(t, (*stream.GapError).Error)
	w.Walk(t, (*stream.GapError).Is)
	w.Walk(t, (*stream.GapError).Unwrap)
	w.Walk(t, (*stream.PoisonRecordError).Code)
	w.Walk(t, (*stream.PoisonRecordError).Error)
	w.Walk(t, (*stream.PoisonRecordError).Is)
	w.Walk(t, (*stream.PoisonRecordError).Unwrap)

	w.Covers(t, ".")
}

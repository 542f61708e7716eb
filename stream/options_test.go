package stream

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// TestConstructorOptionsRefused checks that NewConsumer and
// NewLambdaHandler refuse the options they cannot honour — a nil option
// function, a nil per-call option, a negative or out-of-range value — with
// an error matching ddbindex.ErrDeclaration alone (DDBX-100) that names the
// function and the option, and build nothing.
func TestConstructorOptionsRefused(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[stTicket](nil)
	require.NoError(t, err)
	consumer := func(fns ...func(*ConsumerOptions)) error {
		c, err := NewConsumer(tb, &stShardStreams{}, &MemoryCheckpoints{}, fns...)
		require.Nil(t, c)
		return err
	}
	handler := func(fns ...func(*LambdaOptions)) error {
		h, err := NewLambdaHandler(tb, fns...)
		require.Nil(t, h)
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want []string // in the message
	}{
		{"NewConsumer: nil option function", consumer(func(*ConsumerOptions) {}, nil), []string{"stream.NewConsumer", "option function 1 is nil"}},
		{"NewConsumer: negative BatchSize", consumer(func(o *ConsumerOptions) { o.BatchSize = -1 }), []string{"stream.NewConsumer", "ConsumerOptions.BatchSize is -1", "0 means the default, 1000"}},
		{"NewConsumer: BatchSize over 1000", consumer(func(o *ConsumerOptions) { o.BatchSize = 1001 }), []string{"ConsumerOptions.BatchSize is 1001"}},
		{"NewConsumer: negative PollInterval", consumer(func(o *ConsumerOptions) { o.PollInterval = -time.Second }), []string{"ConsumerOptions.PollInterval is -1s", "0 means the default, 1s"}},
		{"NewConsumer: negative MaxEmptyReads", consumer(func(o *ConsumerOptions) { o.MaxEmptyReads = -1 }), []string{"ConsumerOptions.MaxEmptyReads is -1"}},
		{"NewConsumer: negative Workers", consumer(func(o *ConsumerOptions) { o.Workers = -2 }), []string{"ConsumerOptions.Workers is -2", "0 means the default, 16"}},
		{"NewConsumer: negative CheckpointEvery", consumer(func(o *ConsumerOptions) { o.CheckpointEvery = -1 }), []string{"ConsumerOptions.CheckpointEvery is -1"}},
		{"NewConsumer: negative LeaseDuration", consumer(func(o *ConsumerOptions) { o.LeaseDuration = -time.Minute }), []string{"ConsumerOptions.LeaseDuration is -1m0s"}},
		{"NewConsumer: negative Retry.MaxAttempts", consumer(func(o *ConsumerOptions) { o.Retry.MaxAttempts = -1 }), []string{"ConsumerOptions.Retry.MaxAttempts is -1"}},
		{"NewConsumer: negative Retry.MaxDelay", consumer(func(o *ConsumerOptions) { o.Retry.MaxDelay = -1 }), []string{"ConsumerOptions.Retry.MaxDelay is -1ns"}},
		{"NewConsumer: nil ClientOptions entry", consumer(func(o *ConsumerOptions) { o.ClientOptions = []func(*dynamodb.Options){nil} }), []string{"ConsumerOptions.ClientOptions[0] is nil"}},
		{"NewConsumer: nil StreamsClientOptions entry", consumer(func(o *ConsumerOptions) {
			o.StreamsClientOptions = []func(*dynamodbstreams.Options){func(*dynamodbstreams.Options) {}, nil}
		}), []string{"ConsumerOptions.StreamsClientOptions[1] is nil"}},
		{"NewLambdaHandler: nil option function", handler(nil), []string{"stream.NewLambdaHandler", "option function 0 is nil"}},
		{"NewLambdaHandler: negative Workers", handler(func(o *LambdaOptions) { o.Workers = -1 }), []string{"stream.NewLambdaHandler", "LambdaOptions.Workers is -1", "0 means the default, 16"}},
		{"NewLambdaHandler: negative StopBefore", handler(func(o *LambdaOptions) { o.StopBefore = -time.Second }), []string{"LambdaOptions.StopBefore is -1s", "0 means the default, 2s"}},
		{"NewLambdaHandler: negative Retry.BaseDelay", handler(func(o *LambdaOptions) { o.Retry.BaseDelay = -time.Millisecond }), []string{"LambdaOptions.Retry.BaseDelay is -1ms"}},
		{"NewLambdaHandler: nil ClientOptions entry", handler(func(o *LambdaOptions) { o.ClientOptions = []func(*dynamodb.Options){nil} }), []string{"LambdaOptions.ClientOptions[0] is nil"}},
	} {
		require.Error(t, c.err, c.name)
		require.True(t, errors.Is(c.err, ddbindex.ErrDeclaration), "%s: %v", c.name, c.err)
		require.Equal(t, []string{"ErrDeclaration"}, stMatched(c.err), c.name)
		require.Equal(t, "DDBX-100", ddbindex.Code(c.err), c.name)
		for _, w := range c.want {
			require.Contains(t, c.err.Error(), w, c.name)
		}
	}
}

// TestConstructorOptionsZeroMeansDefault checks that 0 still means the
// default: the options a consumer and a handler run with.
func TestConstructorOptionsZeroMeansDefault(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[stTicket](nil)
	require.NoError(t, err)
	c := newConsumer(t, tb, &stShardStreams{}, &MemoryCheckpoints{}, func(o *ConsumerOptions) { o.BatchSize = 0; o.Workers = 0 })
	require.Equal(t, int32(defaultBatchSize), c.opts.BatchSize)
	require.Equal(t, defaultPollInterval, c.opts.PollInterval)
	require.Equal(t, defaultMaxEmptyReads, c.opts.MaxEmptyReads)
	require.Equal(t, defaultWorkers, c.opts.Workers)
	require.Equal(t, defaultCheckpointEvery, c.opts.CheckpointEvery)
	require.Equal(t, defaultLeaseDuration, c.opts.LeaseDuration)
	require.Equal(t, 10, c.retry.MaxAttempts)
	h := newLambdaHandler(t, tb)
	require.Equal(t, defaultWorkers, h.opts.Workers)
	require.Equal(t, defaultStopBefore, h.opts.StopBefore)
}

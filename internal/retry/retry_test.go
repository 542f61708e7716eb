package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"
)

// Unit tests of the retry mechanics: which errors are transient, and how
// Call spends its budget. The fault tests (the stream package's
// fault_test.go, the root package's TestBackfillUnderFaults) show the same
// through the SDK and a fault-injecting transport.

// rtOp wraps err as the SDK returns an operation's error.
func rtOp(err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: err}
}

// rtHTTP is an error answer with an HTTP status.
func rtHTTP(status int, err error) error {
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err}
}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	throttled := rtOp(rtHTTP(400, &types.ProvisionedThroughputExceededException{Message: new(string)}))
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for name, err := range map[string]error{
		"throttled (DynamoDB)":        throttled,
		"throttled (Streams)":         rtOp(rtHTTP(400, &streamtypes.LimitExceededException{})),
		"throttled (generic code)":    rtOp(&smithy.GenericAPIError{Code: "ThrottlingException"}),
		"500":                         rtOp(rtHTTP(500, &smithy.GenericAPIError{Code: "InternalServerError"})),
		"503":                         rtOp(rtHTTP(503, &smithy.GenericAPIError{Code: "ServiceUnavailable"})),
		"server fault without status": &streamtypes.InternalServerError{},
		"connection reset":            rtOp(&smithyhttp.RequestSendError{Err: reset}),
		"timeout":                     rtOp(&smithyhttp.RequestSendError{Err: &net.OpError{Op: "read", Net: "tcp", Err: rtTimeout{}}}),
		"SDK attempts used up":        rtOp(&sdkretry.MaxAttemptsError{Attempt: 3, Err: throttled}),
		"SDK retry quota used up":     rtOp(errors.Join(throttled, fmt.Errorf("failed to get rate limit token, %w", ratelimit.QuotaExceededError{Available: 1, Requested: 5}))),
		"wrapped":                     fmt.Errorf("ddbindex: write index table x: %w", throttled),
		"transaction throttled":       rtOp(rtHTTP(400, rtCancelled("None", "ThrottlingError"))),
	} {
		require.True(t, IsTransient(err), name)
	}
	for name, err := range map[string]error{
		"nil":                                nil,
		"condition failed":                   rtOp(rtHTTP(400, &types.ConditionalCheckFailedException{})),
		"validation":                         rtOp(rtHTTP(400, &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"})),
		"no such table":                      rtOp(rtHTTP(400, &types.ResourceNotFoundException{})),
		"expired iterator":                   &streamtypes.ExpiredIteratorException{},
		"trimmed":                            &streamtypes.TrimmedDataAccessException{},
		"canceled":                           context.Canceled,
		"deadline":                           fmt.Errorf("ddbindex: read shard s: %w", context.DeadlineExceeded),
		"canceled request":                   rtOp(&smithy.CanceledError{Err: context.Canceled}),
		"some unknown error":                 errors.New("boom"),
		"transaction conflict and throttled": rtOp(rtHTTP(400, rtCancelled("ConditionalCheckFailed", "ThrottlingError"))),
		"transaction conflict":               rtOp(rtHTTP(400, rtCancelled("None", "TransactionConflict"))),
	} {
		require.False(t, IsTransient(err), name)
	}
}

// rtCancelled is a TransactionCanceledException with one cancellation
// reason per code, as DynamoDB lists them (ThrottlingError for an action it
// throttled: the TransactionCanceledException of
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
func rtCancelled(codes ...string) *types.TransactionCanceledException {
	e := &types.TransactionCanceledException{}
	for _, c := range codes {
		e.CancellationReasons = append(e.CancellationReasons, types.CancellationReason{Code: &c})
	}
	return e
}

type rtTimeout struct{}

func (rtTimeout) Error() string   { return "i/o timeout" }
func (rtTimeout) Timeout() bool   { return true }
func (rtTimeout) Temporary() bool { return true }

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, Options{MaxAttempts: 10, BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second}, Options{}.WithDefaults())
	require.Equal(t, Options{MaxAttempts: 10, BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second}, Options{MaxAttempts: -1, BaseDelay: -1, MaxDelay: -1}.WithDefaults())
	o := Options{MaxAttempts: 1, BaseDelay: time.Second, MaxDelay: time.Millisecond}.WithDefaults()
	require.Equal(t, time.Second, o.MaxDelay, "MaxDelay is at least BaseDelay")
}

// Full jitter: each delay lies in [0, min(MaxDelay, BaseDelay·2^(n-1))].
func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	o := Options{BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}.WithDefaults()
	for n, bound := range map[int]time.Duration{0: 10 * time.Millisecond, 1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 4: 80 * time.Millisecond, 5: 100 * time.Millisecond, 64: 100 * time.Millisecond, 1 << 20: 100 * time.Millisecond} {
		for range 200 {
			d := o.Backoff(n)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, bound, "retry %d", n)
		}
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	throttled := rtOp(&smithy.GenericAPIError{Code: "ThrottlingException"})
	type retried struct {
		op      string
		attempt int
	}
	var seen []retried
	o := Options{MaxAttempts: 4, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond,
		OnRetry: func(op string, attempt int, err error) {
			require.ErrorIs(t, err, throttled)
			seen = append(seen, retried{op, attempt})
		}}

	// Transient failures, then success.
	calls := 0
	got, err := Call(ctx, o, "PutItem", func() (int, error) {
		if calls++; calls < 3 {
			return 0, throttled
		}
		return 42, nil
	})
	require.NoError(t, err)
	require.Equal(t, 42, got)
	require.Equal(t, []retried{{"PutItem", 1}, {"PutItem", 2}}, seen)

	// The budget runs out: the last error.
	seen, calls = nil, 0
	_, err = Call(ctx, o, "Scan", func() (int, error) { calls++; return 0, throttled })
	require.ErrorIs(t, err, throttled)
	require.Equal(t, 4, calls)
	require.Len(t, seen, 3)

	// A permanent error is not retried.
	calls = 0
	bad := rtOp(&smithy.GenericAPIError{Code: "ValidationException"})
	_, err = Call(ctx, o, "PutItem", func() (int, error) { calls++; return 0, bad })
	require.ErrorIs(t, err, bad)
	require.Equal(t, 1, calls)

	// A context that ends stops the retries, during the backoff too.
	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	slow := o
	slow.BaseDelay, slow.MaxDelay, slow.OnRetry = time.Hour, time.Hour, func(string, int, error) { cancel() }
	_, err = Call(cctx, slow, "GetRecords", func() (int, error) { calls++; return 0, throttled })
	require.ErrorIs(t, err, throttled, "the call's error, not the context's")
	require.Equal(t, 1, calls)
	require.ErrorIs(t, cctx.Err(), context.Canceled)
	require.ErrorIs(t, Sleep(cctx, time.Hour), context.Canceled)
	require.NoError(t, Sleep(ctx, 0))
}

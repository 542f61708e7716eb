package ddbindex

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// This file is ddbindex's own retry, on top of the SDK's. The SDK retries a
// failed request a few times (3 attempts by default), but its standard
// retryer also draws every retry from a quota shared by all calls of a
// client: under sustained throttling or a burst of 5xx answers the quota runs
// out, and from then on every failure is returned at once. A stream consumer
// or a backfill that gave up on the first such error would stop; one that
// went on would skip records. So the long-running flows (StreamConsumer,
// Backfill) wrap each call in retryCall: exponential backoff with full
// jitter, within a budget of attempts, for transient errors only.

// RetryOptions bound the retries ddbindex makes of a call to DynamoDB or
// DynamoDB Streams that failed with a transient error (see [IsTransient]),
// on top of the SDK client's own retries. The zero value of each field means
// its default.
type RetryOptions struct {
	// MaxAttempts is the number of attempts of one call, the first included.
	// Default 10; 1 disables ddbindex's retries (the SDK's remain).
	MaxAttempts int
	// BaseDelay is the upper bound of the first backoff; each further retry
	// doubles it, up to MaxDelay. The delay is drawn uniformly from zero to
	// that bound ("full jitter"), so that many clients throttled together do
	// not retry together. Default 50 ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff. Default 5 s.
	MaxDelay time.Duration
	// OnRetry, if set, is called before each backoff with the operation
	// (such as "PutItem" or "GetRecords"), the attempt that failed (from 1)
	// and its error: for logs and metrics. It may be called from several
	// goroutines at once.
	OnRetry func(op string, attempt int, err error)
}

const (
	defaultRetryAttempts  = 10
	defaultRetryBaseDelay = 50 * time.Millisecond
	defaultRetryMaxDelay  = 5 * time.Second
)

func (o RetryOptions) withDefaults() RetryOptions {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultRetryAttempts
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = defaultRetryBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = defaultRetryMaxDelay
	}
	if o.MaxDelay < o.BaseDelay {
		o.MaxDelay = o.BaseDelay
	}
	return o
}

// backoff returns the delay before retry number n (from 1): a uniform draw
// from [0, min(MaxDelay, BaseDelay·2^(n-1))].
func (o RetryOptions) backoff(n int) time.Duration {
	bound := o.MaxDelay
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		if b := o.BaseDelay << (n - 1); b > 0 && b < bound {
			bound = b
		}
	}
	return time.Duration(rand.Int64N(int64(bound) + 1))
}

func (o RetryOptions) notify(op string, attempt int, err error) {
	if o.OnRetry != nil {
		o.OnRetry(op, attempt, err)
	}
}

// sleepCtx waits d, or until ctx is done (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryCall calls fn until it succeeds, fails with an error that is not
// transient, the attempts of o (with defaults applied) are used up, or ctx
// is done. It returns fn's last result and error.
func retryCall[R any](ctx context.Context, o RetryOptions, op string, fn func() (R, error)) (R, error) {
	for attempt := 1; ; attempt++ {
		r, err := fn()
		if err == nil || attempt >= o.MaxAttempts || !IsTransient(err) || ctx.Err() != nil {
			return r, err
		}
		o.notify(op, attempt, err)
		if serr := sleepCtx(ctx, o.backoff(attempt)); serr != nil {
			return r, err // the call's error says more than "context canceled"; ctx.Err() tells the caller
		}
	}
}

// sdkRetryables are the SDK standard retryer's own checks: throttling error
// codes (ProvisionedThroughputExceededException, LimitExceededException,
// ThrottlingException, ...), HTTP 5xx, connection errors (resets, refused
// connections, timeouts), and errors that say they are retryable. A canceled
// request is not retryable.
var sdkRetryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// IsTransient reports whether err is a failure that a later attempt of the
// same call may overcome: throttling, a 5xx answer, a connection error or
// timeout, or the SDK giving up on one of those (its retry attempts or its
// retry quota used up). The stream consumer and Backfill retry such errors
// themselves (see [RetryOptions]), and [StreamConsumer.Run] goes on polling
// after them. A canceled or expired context is not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// The SDK's retry quota ran out: the request failed with an error the
	// retryer judged retryable, and it was not retried.
	var quota ratelimit.QuotaExceededError
	if errors.As(err, &quota) {
		return true
	}
	var quotaPtr *ratelimit.QuotaExceededError
	if errors.As(err, &quotaPtr) {
		return true
	}
	// The SDK used up its attempts: the last error was retryable.
	var maxAttempts *retry.MaxAttemptsError
	if errors.As(err, &maxAttempts) {
		return true
	}
	if sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary {
		return true
	}
	// A modeled error the service declares its own fault, such as
	// InternalServerError: the SDK retries it by its HTTP status (5xx).
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultServer
}

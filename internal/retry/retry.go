// Package retry is ddbindex's own retry of calls to DynamoDB and DynamoDB
// Streams, on top of the SDK's: exponential backoff with full jitter, within
// a budget of attempts, for transient errors only.
//
// The SDK retries a failed request a few times (3 attempts by default), but
// its standard retryer also draws every retry from a quota shared by all
// calls of a client: under sustained throttling or a burst of 5xx answers the
// quota runs out, and from then on every failure is returned at once. A
// stream consumer or a backfill that gave up on the first such error would
// stop; one that went on would skip records. So the long-running flows (the
// stream consumer, Backfill) wrap each call in [Call].
//
// The documented API is ddbindex.RetryOptions and ddbindex.IsTransient; the
// root package and packages stream and migrate convert to [Options] here, so
// the mechanics live in one place.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/ddbindex/ddbindex/internal/throttle"
)

// Options bound the retries of one call. They mirror ddbindex.RetryOptions
// field for field (the packages convert one into the other), where each
// field is documented for users.
type Options struct {
	// MaxAttempts is the number of attempts of one call, the first included.
	MaxAttempts int
	// BaseDelay is the upper bound of the first backoff; each further retry
	// doubles it, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps one backoff.
	MaxDelay time.Duration
	// OnRetry, if set, is called before each backoff.
	OnRetry func(op string, attempt int, err error)
}

// The defaults of Options' fields.
const (
	DefaultAttempts  = 10
	DefaultBaseDelay = 50 * time.Millisecond
	DefaultMaxDelay  = 5 * time.Second
)

// WithDefaults returns o with every field that is zero or negative set to its
// default, and MaxDelay raised to BaseDelay when it is below it.
func (o Options) WithDefaults() Options {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultAttempts
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxDelay < o.BaseDelay {
		o.MaxDelay = o.BaseDelay
	}
	return o
}

// Backoff returns the delay before retry number n (from 1): a uniform draw
// from [0, min(MaxDelay, BaseDelay·2^(n-1))] ("full jitter", so that many
// clients throttled together do not retry together).
func (o Options) Backoff(n int) time.Duration {
	bound := o.MaxDelay
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		if b := o.BaseDelay << (n - 1); b > 0 && b < bound {
			bound = b
		}
	}
	if bound < 0 {
		bound = 0
	}
	// In uint64, bound+1 cannot overflow, and the draw fits a Duration.
	return time.Duration(rand.Uint64N(uint64(bound) + 1))
}

// Notify calls OnRetry, if set.
func (o Options) Notify(op string, attempt int, err error) {
	if o.OnRetry != nil {
		o.OnRetry(op, attempt, err)
	}
}

// Sleep waits d, or until ctx is done (returning its error).
func Sleep(ctx context.Context, d time.Duration) error {
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

// Call calls fn until it succeeds, fails with an error that is not
// transient (see [IsTransient]), the attempts of o (with defaults applied)
// are used up, or ctx is done. It returns fn's last result and error: when
// ctx ends during a backoff, the call's error, which says more than "context
// canceled" (ctx.Err() tells the caller).
func Call[R any](ctx context.Context, o Options, op string, fn func() (R, error)) (R, error) {
	o = o.WithDefaults()
	for attempt := 1; ; attempt++ {
		r, err := fn()
		if err == nil || attempt >= o.MaxAttempts || !IsTransient(err) || ctx.Err() != nil {
			return r, err
		}
		o.Notify(op, attempt, err)
		if serr := Sleep(ctx, o.Backoff(attempt)); serr != nil {
			return r, err
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
// retry quota used up), a transaction cancelled for throttling alone. A
// canceled or expired context is not transient.
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
	// A transaction DynamoDB cancelled for throttling alone: the SDK does
	// not retry a TransactionCanceledException, but its ThrottlingError
	// actions are throttles like any other ("please try again shortly").
	if throttle.IsThrottle(err) {
		return true
	}
	// A modeled error the service declares its own fault, such as
	// InternalServerError: the SDK retries it by its HTTP status (5xx).
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultServer
}

// IsValidation reports whether DynamoDB refused a request as invalid
// (ValidationException): an item over 400 KB, a key value over its size
// limit, and the like. Retrying the same request cannot succeed.
func IsValidation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

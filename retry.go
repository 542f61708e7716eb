package ddbindex

import (
	"context"
	"errors"
	"time"

	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file is the documented face of ddbindex's own retry, on top of the
// SDK's: RetryOptions and IsTransient. The mechanics (backoff with full
// jitter, the classification of errors) are in internal/retry, shared with
// the stream package. The SDK retries a failed request a few times, but its
// standard retryer also draws every retry from a quota shared by all calls of
// a client: under sustained throttling the quota runs out, and from then on
// every failure is returned at once. So the long-running flows (migrate.Backfill, and
// the stream package's consumer) retry each call themselves.

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

// withDefaults returns o with the defaults of its zero fields.
func (o RetryOptions) withDefaults() RetryOptions {
	// The two structs have the same fields: the conversion fails to compile
	// if they ever differ.
	return RetryOptions(retry.Options(o).WithDefaults())
}

// retryCall calls fn until it succeeds, fails with an error that is not
// transient, the attempts of o (with defaults applied) are used up, or ctx
// is done. It returns fn's last result and error.
func retryCall[R any](ctx context.Context, o RetryOptions, op string, fn func() (R, error)) (R, error) {
	return retry.Call(ctx, retry.Options(o), op, fn)
}

// IsTransient reports whether err is a failure that a later attempt of the
// same call may overcome: throttling (a transaction cancelled for
// throttling alone too), a 5xx answer, a connection error or timeout, or
// the SDK giving up on one of those (its retry attempts or its retry quota
// used up). migrate.Backfill and the stream package's consumer retry
// such errors themselves (see [RetryOptions]), and the consumer's Run goes
// on polling after them. A canceled or expired context is not transient,
// nor is [ErrOutcomeUnknown]: the write may have been applied, and sending
// it again may apply it twice.
func IsTransient(err error) bool {
	return !errors.Is(err, ErrOutcomeUnknown) && retry.IsTransient(err)
}

// isValidation reports whether DynamoDB refused a request as invalid: an
// item over 400 KB, a key value over its size limit, and the like. Retrying
// the same request cannot succeed.
func isValidation(err error) bool { return retry.IsValidation(err) }

package ddbindex

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// Unit tests of retry.go, the face of internal/retry (whose own tests cover
// the mechanics): the defaults RetryOptions documents, and which of
// ddbindex's own errors are transient.

func TestRetryOptionsDefaults(t *testing.T) {
	t.Parallel()
	want := RetryOptions{MaxAttempts: 10, BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second}
	require.Equal(t, want, RetryOptions{}.withDefaults())
	require.Equal(t, want, RetryOptions{MaxAttempts: -1, BaseDelay: -1, MaxDelay: -1}.withDefaults())
	o := RetryOptions{MaxAttempts: 1, BaseDelay: time.Second, MaxDelay: time.Millisecond}.withDefaults()
	require.Equal(t, time.Second, o.MaxDelay, "MaxDelay is at least BaseDelay")
}

func TestIsTransientOfLibraryErrors(t *testing.T) {
	t.Parallel()
	throttled := &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: &smithy.GenericAPIError{Code: "ThrottlingException"}}
	require.True(t, IsTransient(fmt.Errorf("ddbindex: write index table x: %w", throttled)), "a wrapped throttle")
	for name, err := range map[string]error{
		"invalid write":   fmt.Errorf("%w: bad version", ErrInvalidWrite),
		"malformed":       fmt.Errorf("%w: no sequence number", ErrStreamRecord),
		"poison record":   fmt.Errorf("%w: %w", ErrPoisonRecord, ErrInvalidWrite),
		"conflict":        &Error{Sentinel: ErrConflict, Op: "put"},
		"not ddbindex's":  errors.New("boom"),
		"a nil error too": nil,
	} {
		require.False(t, IsTransient(err), name)
	}
}

// TestRetryCallRetriesTransientOnly: retryCall, which Backfill uses, spends
// its budget on transient failures and reports each retry.
func TestRetryCallRetriesTransientOnly(t *testing.T) {
	t.Parallel()
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException"}
	var ops []string
	o := RetryOptions{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond,
		OnRetry: func(op string, _ int, _ error) { ops = append(ops, op) }}
	calls := 0
	_, err := retryCall(t.Context(), o, "Scan", func() (int, error) { calls++; return 0, throttled })
	require.ErrorIs(t, err, throttled)
	require.Equal(t, 3, calls)
	require.Equal(t, []string{"Scan", "Scan"}, ops)
	calls = 0
	_, err = retryCall(t.Context(), o, "PutItem", func() (int, error) { calls++; return 0, ErrInvalidWrite })
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Equal(t, 1, calls)
}

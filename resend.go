package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file keeps the SDK from resending an update that a second
// application would change again (an ADD to a number, arithmetic,
// list_append), and settles such an update when its answer is lost.
//
// The SDK retries a request whose answer it did not get: a timeout, a reset
// connection, a 5xx answer. DynamoDB may have applied the request by then.
// The write token (see withToken) keeps a retry from being applied over the
// call's own write, but not over a later one: when another writer updates
// the item between the lost answer and the retry, the item no longer holds
// the token, and the retry is applied a second time. For an update that
// writes the same item however often it is applied, that is harmless; for
// the others the SDK retries only what DynamoDB surely did not apply, and
// after any other failure Update reads the item (strongly consistent): the
// token says the update was applied; without it, nothing can tell an update
// that was not applied from one that was and was written over since, and
// the outcome is ErrOutcomeUnknown. DynamoDB's only server-side guard
// against a second application, the ClientRequestToken of a
// TransactWriteItems, would double the write's cost for every update.

// idempotent reports whether an update leaves the same item however often
// it is applied in a row: it only sets paths to values, removes paths, and
// adds or deletes set elements. An ADD to a number and a SET to an operand
// (arithmetic, list_append, if_not_exists) are not; if_not_exists is, but an
// operand is not looked into. The version that Update adds to is left out:
// a version counted twice is a version that still only grows.
func idempotent(ops []updateOp) bool {
	for _, op := range ops {
		switch op.mode {
		case "REMOVE", "DELETE":
		case "SET":
			if op.value == nil {
				return false
			}
		case "ADD":
			v, err := builtValue(op.arg)
			if err != nil {
				return false
			}
			switch v.(type) {
			case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
			default:
				return false
			}
		default:
			return false
		}
	}
	return true
}

// noResend is a per-call SDK option for a request that must not be applied
// twice: its retryer retries only failures after which DynamoDB surely did
// not apply the request (see notApplied); any other failure ends the call.
func noResend(o *dynamodb.Options) {
	if o.Retryer != nil {
		o.Retryer = unappliedRetryer{o.Retryer}
	}
}

// unappliedRetryer is a retryer that retries what its Retryer retries, but
// only when DynamoDB did not apply the failed attempt.
type unappliedRetryer struct{ aws.Retryer }

func (r unappliedRetryer) IsErrorRetryable(err error) bool {
	return notApplied(err) && r.Retryer.IsErrorRetryable(err)
}

// GetAttemptToken keeps the rate limiting of a RetryerV2.
func (r unappliedRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.GetInitialToken(), nil
}

// notApplied reports whether a failed request surely was not applied:
// DynamoDB answered that it refused it (a 4xx answer: throttling, a
// conflict with a transaction in flight, a failed condition, a validation
// error), or no connection was made. After a timeout, a reset connection or
// a 5xx answer, DynamoDB may have applied it.
func notApplied(err error) bool {
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		return status.HTTPStatusCode() >= 400 && status.HTTPStatusCode() < 500
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// mayHaveApplied reports whether the failure err of a call that made att's
// attempts leaves it open whether DynamoDB applied the request: a request
// was sent (a client that does not run per-call options counts none), and
// DynamoDB did not say that it refused it.
func mayHaveApplied(err error, att *attempts) bool {
	return att.n.Load() > 0 && !notApplied(err)
}

// updateOutcome settles an update whose UpdateItem failed with err after it
// may have been applied: it reads the item, and the update was applied when
// the item holds its token. Otherwise the outcome is unknown.
func (t *Table[T]) updateOutcome(ctx context.Context, err error, key map[string]types.AttributeValue, token string, optFns []func(*dynamodb.Options)) error {
	cur, rerr := t.current(ctx, key, optFns)
	if rerr == nil && t.hasToken(cur, token) {
		return nil
	}
	why := "the item does not hold the update's write token: the update was not applied, or it was and another write came after it"
	if rerr != nil {
		why = fmt.Sprintf("reading the item to tell failed (%v)", rerr)
	}
	return &Error{Sentinel: ErrOutcomeUnknown, Op: "update", Err: sdkError(err), Reason: fmt.Sprintf(
		"UpdateItem on %s failed after DynamoDB may have applied it, and an update that adds to a number or sets an operand is not sent again; %s. Read the item to see whether your change is there before you apply it again",
		t.TableName(), why)}
}

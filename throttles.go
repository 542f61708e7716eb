package ddbindex

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file records why DynamoDB throttled a call's requests (the reasons
// are parsed in internal/throttle): in the *Error of a call that failed, in
// a read's Stats, and in the ddbindex.throttles counter (telemetry.go).
//
// The SDK retries a throttled request itself, so the error a call returns
// tells at most of its last attempt. To see every attempt, each request of
// the calls wrapper (calls.go) carries a per-call option that adds a
// middleware to the Finalize step, after the SDK's retry middleware: it
// runs once per attempt and notes the reasons of each throttled one. A
// client that does not run per-call options (not a *dynamodb.Client) never
// runs it; the reasons of its failed requests' errors are noted instead.

// watch notes the throttled attempts of one request. The SDK makes a
// request's attempts one after the other, on the caller's goroutine.
type watch struct {
	ran bool // the middleware ran: the client runs per-call options
	// seen holds the reasons of every throttled attempt, in order (one
	// empty entry for a throttle without reasons).
	seen []types.ThrottlingReason
	// txn is the transaction the request sends, if it is one: the tables
	// of its actions name the resources of a cancellation's throttles.
	txn *dynamodb.TransactWriteItemsInput
}

// with returns ctx carrying w, for the middleware, and the caller's
// per-call options followed by the one that adds the middleware, last so
// that an option that replaces APIOptions cannot drop it. The option and
// the middleware are values made once: a request allocates w, its context
// and the options' slice.
func (w *watch) with(ctx context.Context, optFns []func(*dynamodb.Options)) (context.Context, []func(*dynamodb.Options)) {
	return context.WithValue(ctx, watchKey{}, w), append(slices.Clip(optFns), watchOption)
}

type watchKey struct{}

func watchOption(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, addWatch) }

func addWatch(s *middleware.Stack) error {
	if _, dup := s.Finalize.Get(watchMiddleware.ID()); dup {
		return nil // a client wrapped twice: the inner request notes the attempts
	}
	return s.Finalize.Add(watchMiddleware, middleware.After)
}

// watchMiddleware runs once per attempt and notes the attempt's throttles
// in the watch its context carries.
var watchMiddleware middleware.FinalizeMiddleware = middleware.FinalizeMiddlewareFunc("ddbindexThrottles",
	func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleFinalize(ctx, in)
		if w, _ := ctx.Value(watchKey{}).(*watch); w != nil {
			w.ran = true
			if err != nil {
				w.seen = append(w.seen, throttle.Reasons(err, w.table)...)
			}
		}
		return out, md, err
	})

// table names the table of a transaction's action i.
func (w *watch) table(i int) string {
	if w.txn == nil || i < 0 || i >= len(w.txn.TransactItems) {
		return ""
	}
	it := w.txn.TransactItems[i]
	switch {
	case it.Put != nil:
		return aws.ToString(it.Put.TableName)
	case it.Update != nil:
		return aws.ToString(it.Update.TableName)
	case it.Delete != nil:
		return aws.ToString(it.Delete.TableName)
	case it.ConditionCheck != nil:
		return aws.ToString(it.ConditionCheck.TableName)
	}
	return ""
}

// done ends the request, which returned err: it records the throttles the
// request met in the call state (telemetry) and the read's Stats ctx
// carries, if any, and returns them.
func (w *watch) done(ctx context.Context, a api, err error) []types.ThrottlingReason {
	if !w.ran && err != nil {
		w.seen = throttle.Reasons(err, w.table)
	}
	if len(w.seen) == 0 {
		return nil
	}
	if c := callFrom(ctx); c != nil {
		c.throttled(ctx, a, w.seen)
	}
	if s := statsFrom(ctx); s != nil {
		s.Throttled += len(w.seen)
		s.Throttles = distinctThrottles(s.Throttles, w.seen)
	}
	return w.seen
}

// statsKey carries the Stats a read's page fill adds its requests'
// throttles to (pager.next).
type statsKey struct{}

func withStats(ctx context.Context, s *Stats) context.Context {
	return context.WithValue(ctx, statsKey{}, s)
}

func statsFrom(ctx context.Context) *Stats {
	s, _ := ctx.Value(statsKey{}).(*Stats)
	return s
}

// distinctThrottles appends to list each reason of more that it does not
// hold yet (same reason and resource).
func distinctThrottles(list, more []types.ThrottlingReason) []types.ThrottlingReason {
	for _, r := range more {
		if !slices.ContainsFunc(list, func(x types.ThrottlingReason) bool {
			return aws.ToString(x.Reason) == aws.ToString(r.Reason) && aws.ToString(x.Resource) == aws.ToString(r.Resource)
		}) {
			list = append(list, r)
		}
	}
	return list
}

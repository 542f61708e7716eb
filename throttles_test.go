package ddbindex

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// DynamoDB says why it throttled a request: its throttling errors carry
// ThrottlingReasons, a reason and the ARN of the throttled table or index
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html,
// "Understanding throttling exceptions" and "Example exceptions"). On the
// wire, an HTTP 400 of the JSON protocol, as internal/faults injects it:
//
//	{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException",
//	 "message":"...",
//	 "throttlingReasons":[{"reason":"IndexWriteKeyRangeThroughputExceeded",
//	   "resource":"arn:aws:dynamodb:us-west-2:123456789012:table/T/index/I"}]}
//
// (ThrottlingReasons for a ProvisionedThroughputExceededException: the
// member names of the service model.) A GSI whose hot key range cannot take
// its index updates throttles writes to its base table, and the reason
// names the GSI, not the table
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html):
// the case a move of the GSI to an index table cures. These tests inject
// such throttles in front of the local server and check that the library
// records the reasons in its errors, Stats and metrics, and that the
// SDK's retries still overcome them.

// thOrder has a GSI, by_status, and an index table, by_team.
type thOrder struct {
	_      TableSpec `ddbindex:"th-orders"`
	_      IndexSpec `ddbindex:"by_status,type=gsi"`
	_      IndexSpec `ddbindex:"by_team,type=table"`
	ID     string    `dynamodbav:"id" ddbindex:"pk"`
	Status string    `dynamodbav:"status" ddbindex:"by_status.pk"`
	Team   string    `dynamodbav:"team" ddbindex:"by_team.pk"`
	Seq    int64     `dynamodbav:"seq" ddbindex:"by_status.sk;by_team.sk"`
}

// thARN returns the ARN DynamoDB would give for tb's index (the base
// table for ""), in a made-up region and account.
func thARN(tb *Table[thOrder], index string) string {
	arn := "arn:aws:dynamodb:us-west-2:123456789012:table/" + tb.TableName()
	if index != "" {
		arn += "/index/" + tb.s.byName[index].index
	}
	return arn
}

// thFaulty returns a Table of thOrder on the local server whose requests
// go through a fault transport with policy, and the transport; the SDK
// makes up to attempts attempts of each request.
func thFaulty(t *testing.T, policy faults.Policy, attempts int, optFns ...func(*Options)) (*Table[thOrder], *faults.Transport) {
	t.Helper()
	tb, _ := newTestTable[thOrder](t, optFns...)
	db, _, ft := ddbtest.Faulty(t, policy, ddbtest.NoQuotaRetryer(attempts))
	tb.client = calls{db}
	return tb, ft
}

func thReason(reason, resource string) types.ThrottlingReason {
	return types.ThrottlingReason{Reason: aws.String(reason), Resource: aws.String(resource)}
}

// A Put throttled twice by its GSI's hot key range, then let through:
// the SDK's retries overcome the throttles, the item is stored, and the
// throttles count in ddbindex.throttles against the GSI, with the reason,
// and as span events.
func TestThrottleGSIBackPressureRetried(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, ft := thFaulty(t, faults.Script(map[string][]faults.Kind{"PutItem": {faults.Throttle, faults.Throttle}}), 3, withOTel(h))
	ft.ThrottleWith("ThrottlingException", faults.Reason{Reason: "IndexWriteKeyRangeThroughputExceeded", Resource: thARN(tb, "by_status")})
	ctx := t.Context()
	_, err := tb.Put(ctx, thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
	require.NoError(t, err, "throttles are transient: the SDK retried")
	require.Equal(t, 2, ft.CountOp("PutItem", faults.Throttle))
	got, err := tb.Get(ctx, thOrder{ID: "o-1"})
	require.NoError(t, err)
	require.Equal(t, "open", got.Status)

	m := h.Metrics(t)
	onGSI := kvs(attrOperation.String("Put"), attrIndex.String("by_status"), attrForm.String("gsi"),
		attrDBOperation.String("PutItem"), attrThrottle.String("IndexWriteKeyRangeThroughputExceeded"))
	assert.Equal(t, float64(2), m.Sum("ddbindex.throttles", onGSI...))
	assert.Equal(t, float64(2), m.Sum("ddbindex.throttles"), "nothing else")
	assert.Equal(t, float64(0), m.Sum("ddbindex.errors"), "the call succeeded")
	spans := h.Spans("ddbindex.Put")
	require.Len(t, spans, 1)
	var throttled int
	for _, e := range spans[0].Events() {
		if e.Name == "ddbindex.throttled" {
			throttled++
			r, _ := oteltest.EventAttr(e, attrThrottleRes)
			assert.Equal(t, thARN(tb, "by_status"), r.AsString())
		}
	}
	assert.Equal(t, 2, throttled)
}

// A Put throttled on every attempt fails with an ErrDynamoDB *Error whose
// Throttles hold the reason once, whose message names the reason and the
// GSI, and that is transient; the errors counter counts the call.
func TestThrottleGSIBackPressureError(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"ProvisionedThroughputExceededException", "ThrottlingException"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			h := oteltest.New(t)
			always := func(r faults.Request) faults.Kind {
				if r.Operation == "PutItem" {
					return faults.Throttle
				}
				return faults.None
			}
			tb, ft := thFaulty(t, always, 2, withOTel(h))
			want := thReason("IndexWriteKeyRangeThroughputExceeded", thARN(tb, "by_status"))
			ft.ThrottleWith(code, faults.Reason{Reason: *want.Reason, Resource: *want.Resource})
			_, err := tb.Put(t.Context(), thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, ErrDynamoDB)
			assert.Equal(t, "PutItem", ce.Op)
			assert.Equal(t, tb.TableName(), ce.Table)
			assert.Equal(t, []types.ThrottlingReason{want}, ce.Throttles, "two attempts, one distinct reason")
			gsi := tb.s.byName["by_status"].index
			assert.Contains(t, err.Error(), "PutItem on "+tb.TableName()+" failed [DDBX-900]: throttled: IndexWriteKeyRangeThroughputExceeded on "+tb.TableName()+" (index "+gsi+"): ")
			assert.True(t, IsTransient(err))
			require.Equal(t, 2, ft.CountOp("PutItem", faults.Throttle))

			m := h.Metrics(t)
			assert.Equal(t, float64(2), m.Sum("ddbindex.throttles", attrIndex.String("by_status"), attrThrottle.String("IndexWriteKeyRangeThroughputExceeded")))
			assert.Equal(t, float64(1), m.Sum("ddbindex.errors", attrOperation.String("Put"), attrErrorType.String("DDBX-900")))
		})
	}
}

// A read throttled by the GSI it reads records the throttles in its Stats
// (Page's, and ReportTo's), with the retries that overcame them; a read
// that fails on them reports them through ReportTo and its error.
func TestThrottleReadStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		tb, ft := thFaulty(t, faults.Script(map[string][]faults.Kind{"Query": {faults.Throttle}}), 3)
		want := thReason("IndexReadKeyRangeThroughputExceeded", thARN(tb, "by_status"))
		ft.ThrottleWith("", faults.Reason{Reason: *want.Reason, Resource: *want.Resource})
		_, err := tb.Put(ctx, thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
		require.NoError(t, err)
		var total Stats
		page, err := tb.Query("by_status", "open").ReportTo(&total).Page(ctx)
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		assert.Equal(t, 1, page.Stats.Requests, "the SDK's retry is no request of the library")
		assert.Equal(t, 1, page.Stats.Throttled)
		assert.Equal(t, []types.ThrottlingReason{want}, page.Stats.Throttles)
		assert.Equal(t, 1, total.Throttled)
		assert.Equal(t, []types.ThrottlingReason{want}, total.Throttles)
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		always := func(r faults.Request) faults.Kind {
			if r.Operation == "Query" {
				return faults.Throttle
			}
			return faults.None
		}
		tb, ft := thFaulty(t, always, 2)
		table := thReason("TableReadProvisionedThroughputExceeded", thARN(tb, ""))
		gsi := thReason("IndexReadProvisionedThroughputExceeded", thARN(tb, "by_status"))
		ft.ThrottleWith("ProvisionedThroughputExceededException",
			faults.Reason{Reason: *gsi.Reason, Resource: *gsi.Resource}, faults.Reason{Reason: *table.Reason, Resource: *table.Resource})
		var total Stats
		_, err := tb.Query("by_status", "open").ReportTo(&total).Page(ctx)
		var ce *Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "by_status", tb.s.byName["by_status"].name)
		assert.Equal(t, tb.s.byName["by_status"].index, ce.Index, "the index the request read")
		assert.Equal(t, []types.ThrottlingReason{gsi, table}, ce.Throttles)
		assert.Equal(t, 4, total.Throttled, "two reasons on each of two attempts")
		assert.Equal(t, []types.ThrottlingReason{gsi, table}, total.Throttles)
		assert.True(t, IsTransient(err))
	})
}

// A write-through Put whose transaction DynamoDB cancels for throttling
// (TransactionCanceledException, code ThrottlingError on the throttled
// action: the TransactionCanceledException of
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html,
// whose cancellation reasons carry no ThrottlingReasons) is no conflict:
// an ErrDynamoDB *Error naming the index table, transient, and counted
// against the index table with reason ThrottlingError. The same Put,
// made again, succeeds.
func TestThrottleWriteThroughCancelled(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, ft := thFaulty(t, faults.Script(map[string][]faults.Kind{"TransactWriteItems": {faults.CancelThrottle}}), 3,
		withOTel(h), func(o *Options) { o.WriteThrough = true })
	indexTable := tb.tableOf(tb.s.byName["by_team"])
	ft.ThrottleTables(indexTable)
	ctx := t.Context()
	item := thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1}
	_, err := tb.Put(ctx, item)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrConflict)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, ErrDynamoDB, ce.Sentinel)
	assert.Equal(t, "TransactWriteItems", ce.Op)
	assert.Equal(t, []types.ThrottlingReason{thReason("ThrottlingError", indexTable)}, ce.Throttles)
	assert.Contains(t, err.Error(), "throttled: ThrottlingError on "+indexTable+": ")
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce, "the SDK's error is still there")
	assert.True(t, IsTransient(err), "a transaction cancelled for throttling alone is transient")
	assert.Equal(t, 1, ft.CountOp("TransactWriteItems", faults.CancelThrottle), "the SDK does not retry a cancellation")
	m := h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.throttles", attrOperation.String("Put"), attrIndex.String("by_team"), attrForm.String("table"),
		attrDBOperation.String("TransactWriteItems"), attrThrottle.String("ThrottlingError")))

	ddbtest.Require(t, ddbtest.Transactions)
	_, err = tb.Put(ctx, item)
	require.NoError(t, err, "made again, the Put succeeds")
	page, err := tb.Query("by_team", "T").Page(ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
}

// thFake is a client that does not run per-call options, as a test double
// or another Client implementation may not: the throttles of its failed
// requests are read from their errors.
type thFake struct {
	Client
	err error
}

func (f thFake) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, f.err
}

func TestThrottleClientWithoutOptions(t *testing.T) {
	t.Parallel()
	h := oteltest.New(t)
	tb, err := New[thOrder](nil, withOTel(h))
	require.NoError(t, err)
	arn := "arn:aws:dynamodb:eu-west-1:1:table/th-orders/index/by_status"
	want := thReason("IndexWriteAccountLimitExceeded", arn)
	tb.client = calls{thFake{err: &types.ThrottlingException{Message: aws.String("m"), ThrottlingReasons: []types.ThrottlingReason{want}}}}
	_, err = tb.Put(context.Background(), thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []types.ThrottlingReason{want}, ce.Throttles)
	assert.True(t, strings.Contains(err.Error(), "throttled: IndexWriteAccountLimitExceeded on th-orders (index by_status): "), err.Error())
	m := h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.throttles", attrIndex.String("by_status"), attrForm.String("gsi"), attrThrottle.String("IndexWriteAccountLimitExceeded")))

	// A throttle without reasons (a server that sends none) is counted,
	// as _OTHER, against the call's target; its message says throttled.
	tb.client = calls{thFake{err: &types.ProvisionedThroughputExceededException{Message: aws.String("m")}}}
	_, err = tb.Put(context.Background(), thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []types.ThrottlingReason{{}}, ce.Throttles)
	assert.Contains(t, err.Error(), "PutItem on th-orders failed [DDBX-900]: throttled: ProvisionedThroughputExceededException")
	m = h.Metrics(t)
	assert.Equal(t, float64(1), m.Sum("ddbindex.throttles", attrIndex.String(""), attrForm.String("base"), attrThrottle.String("_OTHER")))

	// An error that is no throttle has none.
	tb.client = calls{thFake{err: errors.New("boom")}}
	_, err = tb.Put(context.Background(), thOrder{ID: "o-1", Status: "open", Team: "T", Seq: 1})
	require.ErrorAs(t, err, &ce)
	assert.Nil(t, ce.Throttles)
}

// Stats add up throttles: counts sum, reasons stay distinct in the order
// met, and statsSince keeps what is new.
func TestThrottleStatsAdd(t *testing.T) {
	a, b, c := thReason("A", "x"), thReason("B", "y"), thReason("A", "z")
	var s Stats
	s.add(Stats{Throttled: 2, Throttles: []types.ThrottlingReason{a, b}})
	before := s
	s.add(Stats{Throttled: 3, Throttles: []types.ThrottlingReason{b, c, a}})
	assert.Equal(t, 5, s.Throttled)
	assert.Equal(t, []types.ThrottlingReason{a, b, c}, s.Throttles)
	since := statsSince(s, before)
	assert.Equal(t, 3, since.Throttled)
	assert.Equal(t, []types.ThrottlingReason{c}, since.Throttles)
}

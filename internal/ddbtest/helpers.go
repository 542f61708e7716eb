package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/middleware"
)

// Helpers shared by the tests of the root package and of the stream
// package. They use the SDK only: this package cannot import ddbindex,
// whose own tests import it.

// StreamRecords reads every record of the latest stream of the named table,
// shard by shard from each shard's oldest record, until a shard answers an
// empty page (the local servers hold every record at hand). It fails the
// test on error.
func StreamRecords(tb testing.TB, table string) []streamtypes.Record {
	tb.Helper()
	ctx := tb.Context()
	sc := StreamsClient(tb)
	ls, err := sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(table)})
	if err != nil {
		tb.Fatalf("listing the streams of %s: %v", table, err)
	}
	if len(ls.Streams) == 0 {
		tb.Fatalf("table %s has no stream", table)
	}
	arn := ls.Streams[len(ls.Streams)-1].StreamArn
	ds, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		tb.Fatalf("describing stream %s: %v", aws.ToString(arn), err)
	}
	var out []streamtypes.Record
	for _, sh := range ds.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			tb.Fatalf("opening shard %s: %v", aws.ToString(sh.ShardId), err)
		}
		iter := it.ShardIterator
		for iter != nil {
			recs, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				tb.Fatalf("reading shard %s: %v", aws.ToString(sh.ShardId), err)
			}
			if len(recs.Records) == 0 {
				break
			}
			out = append(out, recs.Records...)
			iter = recs.NextShardIterator
		}
	}
	return out
}

// Scan returns every item of a table (strongly consistent reads), sorted by
// a text of all their attributes, so that two tables of equal content give
// equal slices. It fails the test on error.
func Scan(tb testing.TB, c *dynamodb.Client, table string) []map[string]types.AttributeValue {
	tb.Helper()
	var out []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := c.Scan(tb.Context(), in)
		if err != nil {
			tb.Fatalf("scanning %s: %v", table, err)
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	slices.SortStableFunc(out, func(a, b map[string]types.AttributeValue) int {
		return strings.Compare(itemText(a), itemText(b))
	})
	return out
}

// itemText renders an item's attributes, sorted by name, for ordering.
func itemText(item map[string]types.AttributeValue) string {
	var b strings.Builder
	appendMap(&b, item)
	return b.String()
}

func appendMap(b *strings.Builder, m map[string]types.AttributeValue) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	b.WriteByte('{')
	for _, n := range names {
		fmt.Fprintf(b, "%q=", n)
		appendAV(b, m[n])
		b.WriteByte(';')
	}
	b.WriteByte('}')
}

func appendAV(b *strings.Builder, av types.AttributeValue) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		fmt.Fprintf(b, "S%q", v.Value)
	case *types.AttributeValueMemberN:
		fmt.Fprintf(b, "N%s", v.Value)
	case *types.AttributeValueMemberB:
		fmt.Fprintf(b, "B%x", v.Value)
	case *types.AttributeValueMemberBOOL:
		fmt.Fprintf(b, "BOOL%t", v.Value)
	case *types.AttributeValueMemberNULL:
		b.WriteString("NULL")
	case *types.AttributeValueMemberSS:
		fmt.Fprintf(b, "SS%q", v.Value)
	case *types.AttributeValueMemberNS:
		fmt.Fprintf(b, "NS%q", v.Value)
	case *types.AttributeValueMemberBS:
		fmt.Fprintf(b, "BS%x", v.Value)
	case *types.AttributeValueMemberL:
		b.WriteString("L[")
		for _, e := range v.Value {
			appendAV(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case *types.AttributeValueMemberM:
		b.WriteByte('M')
		appendMap(b, v.Value)
	default:
		fmt.Fprintf(b, "%T", av)
	}
}

// FaultCase is one fault setting of the tests under injected faults.
type FaultCase struct {
	Name string
	// Rate is the share of requests that fail (faults.Random).
	Rate float64
	// Retryer is the clients' retryer (see Faulty): nil is the SDK's
	// standard one, with its retry quota.
	Retryer func() aws.Retryer
}

// FaultCases are the settings the consumer and Backfill are tested under:
// 5% with the SDK's default retryer, and 30% with and without its quota (at
// 30% with the quota it runs out, and ddbindex's own retry must carry on).
var FaultCases = []FaultCase{
	{"5% faults, SDK default retryer", 0.05, nil},
	{"30% faults, no-quota retryer", 0.30, NoQuotaRetryer(5)},
	{"30% faults, SDK default retryer", 0.30, nil},
}

// RetryLog counts the retries ddbindex made (its RetryOptions.OnRetry), and
// those whose error was the SDK's retry quota running out. It is safe for
// concurrent use.
type RetryLog struct {
	mu    sync.Mutex
	all   int
	quota int
}

// OnRetry records one retry; use it as RetryOptions.OnRetry.
func (l *RetryLog) OnRetry(_ string, _ int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all++
	if errors.As(err, new(ratelimit.QuotaExceededError)) {
		l.quota++
	}
}

// Counts returns the number of retries, and of those after the SDK's quota
// ran out.
func (l *RetryLog) Counts() (all, quota int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all, l.quota
}

// OpCounter counts the SDK operations of the calls whose options it is in
// (Option), by operation name, in the Initialize step: once per operation,
// whatever its retries. ID names its middleware, which must be unique
// within a stack: a client's counter and a call's need different IDs.
type OpCounter struct {
	ID string
	mu sync.Mutex
	n  map[string]int
}

// Option adds the counter to a client's or a call's options.
func (c *OpCounter) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc(c.ID,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[string]int{}
				}
				c.n[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// Take returns the counts so far and starts again from zero.
func (c *OpCounter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

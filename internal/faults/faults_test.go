package faults_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

func scratch(t *testing.T) string {
	c := ddbtest.Client(t)
	name := ddbtest.Name(t, "")
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	return name
}

func put(name, pk string) *dynamodb.PutItemInput {
	return &dynamodb.PutItemInput{
		TableName:           aws.String(name),
		Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
}

func exists(t *testing.T, name, pk string) bool {
	out, err := ddbtest.Client(t).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(name), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return len(out.Item) > 0
}

// Each kind does to an SDK client what it says: the ones before the server
// are retried to success; the ones after it make a conditional write's retry
// fail its own condition, although the write was applied.
func TestKinds(t *testing.T) {
	name := scratch(t)
	ctx := context.Background()

	t.Run("throttle without retries", func(t *testing.T) {
		c, _, ft := ddbtest.Faulty(t, faults.Script(map[string][]faults.Kind{"PutItem": {faults.Throttle}}), func() aws.Retryer { return aws.NopRetryer{} })
		_, err := c.PutItem(ctx, put(name, "throttled"))
		var pte *types.ProvisionedThroughputExceededException
		require.ErrorAs(t, err, &pte)
		require.True(t, faults.IsInjected(err))
		require.Equal(t, 1, ft.Count(faults.Throttle))
		require.False(t, exists(t, name, "throttled"), "a throttled request never reached the server")
	})
	for _, k := range []faults.Kind{faults.Throttle, faults.ServerError, faults.ResetBeforeSend} {
		t.Run(k.String()+" is retried", func(t *testing.T) {
			c, _, ft := ddbtest.Faulty(t, faults.Script(map[string][]faults.Kind{"PutItem": {k}}), nil)
			_, err := c.PutItem(ctx, put(name, "retried-"+k.String()))
			require.NoError(t, err)
			require.Equal(t, 1, ft.Count(k))
			require.Equal(t, 1, ft.CountOp("PutItem", faults.None), "one retry went through")
			require.True(t, exists(t, name, "retried-"+k.String()))
		})
	}
	for _, k := range faults.Applied {
		t.Run(k.String()+" makes the retry conflict", func(t *testing.T) {
			c, _, ft := ddbtest.Faulty(t, faults.Script(map[string][]faults.Kind{"PutItem": {k}}), nil)
			_, err := c.PutItem(ctx, put(name, "lost-"+k.String()))
			var ccf *types.ConditionalCheckFailedException
			require.True(t, errors.As(err, &ccf), "the retry fails its own condition: %v", err)
			require.Equal(t, 1, ft.Count(k))
			require.True(t, exists(t, name, "lost-"+k.String()), "the first attempt was applied")
		})
	}
}

// Random is repeatable for a seed, and injects about the rate asked.
func TestRandom(t *testing.T) {
	decide := func(seed uint64) []faults.Kind {
		p := faults.Random(0.3, seed, nil, "PutItem")
		out := make([]faults.Kind, 2000)
		for i := range out {
			out[i] = p(faults.Request{Operation: "PutItem", N: i + 1})
		}
		return out
	}
	a, b := decide(7), decide(7)
	require.Equal(t, a, b)
	require.NotEqual(t, a, decide(8))
	n := 0
	seen := map[faults.Kind]bool{}
	for _, k := range a {
		if k != faults.None {
			n++
			seen[k] = true
		}
	}
	require.InDelta(t, 600, n, 90, "about 30%% of 2000")
	require.Len(t, seen, len(faults.AllKinds), "every kind is chosen")
	require.Equal(t, faults.None, faults.Random(1, 1, nil, "PutItem")(faults.Request{Operation: "Query"}), "other operations pass")
}

// offline is an SDK client whose requests all go through ft and never reach
// a server: for faults answered without sending (Throttle, CancelThrottle).
func offline(ft http.RoundTripper) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-west-2",
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		HTTPClient:   &http.Client{Transport: ft},
		Retryer:      aws.NopRetryer{},
	})
}

// The throttles ThrottleWith injects have the shape DynamoDB gives them
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html,
// "Example exceptions": a GSI's write limit throttles a write to its base
// table, and the exception's ThrottlingReasons hold the reason and the
// GSI's ARN), and the SDK decodes the reasons of each throttling error.
func TestThrottleWithReasons(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-west-2:123456789012:table/CustomerOrders/index/OrderDateIndex"
	want := []types.ThrottlingReason{{Reason: aws.String("IndexWriteKeyRangeThroughputExceeded"), Resource: aws.String(arn)}}
	ctx := context.Background()
	always := func(faults.Request) faults.Kind { return faults.Throttle }
	for _, code := range []string{"", "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"} {
		ft := faults.New(nil, always).ThrottleWith(code, faults.Reason{Reason: "IndexWriteKeyRangeThroughputExceeded", Resource: arn})
		_, err := offline(ft).PutItem(ctx, put("CustomerOrders", "a"))
		var got []types.ThrottlingReason
		var pte *types.ProvisionedThroughputExceededException
		var te *types.ThrottlingException
		var rle *types.RequestLimitExceeded
		switch {
		case errors.As(err, &pte):
			got = pte.ThrottlingReasons
		case errors.As(err, &te):
			got = te.ThrottlingReasons
		case errors.As(err, &rle):
			got = rle.ThrottlingReasons
		default:
			t.Fatalf("%q: not a throttle: %v", code, err)
		}
		if code == "" {
			require.NotNil(t, pte, "the default code")
		}
		require.Equal(t, want, got, code)
		require.True(t, faults.IsInjected(err))
	}
}

// The SDK matches member names exactly, as the service model spells them:
// a ThrottlingException's list is throttlingReasons. One spelled as the
// other exceptions spell theirs is dropped. This pins the SDK's behaviour:
// if it changes, the fault transport's bodies can be revisited.
func TestThrottlingExceptionMemberName(t *testing.T) {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"m","ThrottlingReasons":[{"reason":"TableReadMaxOnDemandThroughputExceeded","resource":"arn:aws:dynamodb:us-east-1:123456789012:table/UserSessions"}]}`
	rt := roundTrip(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 400, Status: "400 Bad Request", Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
	})
	_, err := offline(rt).PutItem(context.Background(), put("UserSessions", "a"))
	var te *types.ThrottlingException
	require.ErrorAs(t, err, &te)
	require.Empty(t, te.ThrottlingReasons)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// CancelThrottle cancels a transaction as DynamoDB does when it throttles
// some of its actions: TransactionCanceledException, one cancellation
// reason per action, ThrottlingError for the throttled ones (the
// TransactionCanceledException of
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
// Other operations go through it.
func TestCancelThrottle(t *testing.T) {
	ctx := context.Background()
	ft := faults.New(roundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("sent") }),
		func(faults.Request) faults.Kind { return faults.CancelThrottle }).ThrottleTables("Index")
	c := offline(ft)
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("Base"), Item: item}},
		{Put: &types.Put{TableName: aws.String("Index"), Item: item}},
	}})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Equal(t, "ThrottlingError", aws.ToString(tce.CancellationReasons[1].Code))
	require.Contains(t, aws.ToString(tce.CancellationReasons[1].Message), "Throughput exceeds the current capacity")
	require.Contains(t, tce.ErrorMessage(), "[None, ThrottlingError]")

	_, err = c.PutItem(ctx, put("Base", "a"))
	require.ErrorContains(t, err, "sent", "a PutItem is no transaction: it goes through")
}

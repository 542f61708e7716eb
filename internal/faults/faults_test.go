package faults_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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

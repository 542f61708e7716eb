package slowddb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/slowddb"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func gsi(name string) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName:  aws.String(name),
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("team"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("id"), KeyType: types.KeyTypeRange}},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}

func table(name string, gsis ...types.GlobalSecondaryIndex) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("team"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}
	if len(gsis) > 0 {
		in.GlobalSecondaryIndexes = gsis
	} else {
		in.AttributeDefinitions = in.AttributeDefinitions[:1]
	}
	return in
}

// queryIDs lists the ids in a team's partition of GSI by_team, with their
// status.
func queryIDs(t *testing.T, c *dynamodb.Client, name, team string) []string {
	t.Helper()
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String("by_team"),
		KeyConditionExpression:    aws.String("team = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s(team)},
	})
	require.NoError(t, err)
	ids := []string{}
	for _, it := range out.Items {
		st := ""
		if v, ok := it["status"].(*types.AttributeValueMemberS); ok {
			st = v.Value
		}
		ids = append(ids, it["id"].(*types.AttributeValueMemberS).Value+"/"+st)
	}
	return ids
}

// GSI reads see the table as it was Delay requests ago, or as of the last
// Settle; reads of the table itself are never behind. Every kind of write
// the library makes is held back and then applied.
func TestGSIReadsLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := ddbtest.Client(t)
	name := ddbtest.Name(t, "lag")
	ddbtest.CreateTable(t, plain, table(name, gsi("by_team")))
	c, st := ddbtest.Slow(t, slowddb.Options{Delay: 1 << 30}) // until Settle
	put := func(id, team, status string) {
		t.Helper()
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name),
			Item: map[string]types.AttributeValue{"id": s(id), "team": s(team), "status": s(status)}})
		require.NoError(t, err)
	}
	put("a", "T", "old")
	require.Equal(t, []string{"a/old"}, queryIDs(t, c, name, "T"), "writes before the first GSI read are there")

	put("b", "T", "new")
	_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{"id": s("a")},
		UpdateExpression: aws.String("SET #s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("changed")}})
	require.NoError(t, err)
	require.Equal(t, 2, st.Lagging(name))
	require.Equal(t, []string{"a/old"}, queryIDs(t, c, name, "T"), "the GSI lags")
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{"id": s("a")}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, s("changed"), got.Item["status"], "the table does not")
	require.Equal(t, []string{"a/changed", "b/new"}, queryIDs(t, plain, name, "T"), "nor is the server's own GSI")

	st.Settle()
	require.Equal(t, []string{"a/changed", "b/new"}, queryIDs(t, c, name, "T"))

	if ddbtest.Has(ddbtest.Transactions) {
		_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: aws.String(name), Key: map[string]types.AttributeValue{"id": s("a")}}},
			{Put: &types.Put{TableName: aws.String(name), Item: map[string]types.AttributeValue{"id": s("c"), "team": s("T"), "status": s("tx")}}},
		}})
	} else { // dynalite: the same writes, one by one
		_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{"id": s("a")}})
		require.NoError(t, err)
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{"id": s("c"), "team": s("T"), "status": s("tx")}})
	}
	require.NoError(t, err)
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: {
		{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"id": s("b")}}},
		{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"id": s("d"), "team": s("T"), "status": s("batch")}}},
	}}})
	require.NoError(t, err)
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{"id": s("d")}})
	require.NoError(t, err)
	require.Equal(t, []string{"a/changed", "b/new"}, queryIDs(t, c, name, "T"))
	st.Settle()
	require.Equal(t, []string{"c/tx"}, queryIDs(t, c, name, "T"))
	require.Zero(t, st.Lagging(name))

	// With a delay of 3 requests, a write shows after three more requests.
	c3, st3 := ddbtest.Slow(t, slowddb.Options{Delay: 3})
	require.Equal(t, []string{"c/tx"}, queryIDs(t, c3, name, "T")) // tick 1: tracks the table
	_, err = c3.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name),
		Item: map[string]types.AttributeValue{"id": s("e"), "team": s("T")}}) // tick 2
	require.NoError(t, err)
	require.Equal(t, []string{"c/tx"}, queryIDs(t, c3, name, "T"))       // tick 3
	require.Equal(t, []string{"c/tx"}, queryIDs(t, c3, name, "T"))       // tick 4
	require.Equal(t, []string{"c/tx", "e/"}, queryIDs(t, c3, name, "T")) // tick 5: 2+3
	require.Equal(t, slowddb.Stats{Requests: 5, Recorded: 1, Applied: 1, GSIReads: 4, Lagging: 2}, st3.Stats())
}

// A GSI added by UpdateTable is CREATING for BackfillPolls DescribeTable
// answers, allocating then backfilling, and cannot be read meanwhile; with
// BackfillPolls 0 it stays so until Finish.
func TestGSICreating(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := context.Background()
	for _, polls := range []int{3, 0} {
		plain := ddbtest.Client(t)
		name := ddbtest.Name(t, "creating")
		ddbtest.CreateTable(t, plain, table(name))
		c, st := ddbtest.Slow(t, slowddb.Options{BackfillPolls: polls})
		g := gsi("by_team")
		up, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name),
			AttributeDefinitions: table(name, g).AttributeDefinitions,
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection}}}})
		require.NoError(t, err)
		require.Equal(t, types.IndexStatusCreating, up.TableDescription.GlobalSecondaryIndexes[0].IndexStatus)
		require.False(t, aws.ToBool(up.TableDescription.GlobalSecondaryIndexes[0].Backfilling))

		_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("by_team"),
			KeyConditionExpression: aws.String("team = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": s("T")}})
		var ae smithy.APIError
		require.True(t, errors.As(err, &ae), "%v", err)
		require.Equal(t, "ValidationException", ae.ErrorCode())
		require.Equal(t, "Cannot read from backfilling global secondary index: by_team", ae.ErrorMessage())
		_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), IndexName: aws.String("by_team")})
		require.ErrorContains(t, err, "Cannot read from backfilling global secondary index")

		status := func() string {
			d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			require.NoError(t, err)
			x := d.Table.GlobalSecondaryIndexes[0]
			if aws.ToBool(x.Backfilling) {
				return string(x.IndexStatus) + "/backfilling"
			}
			return string(x.IndexStatus)
		}
		var seen []string
		if polls > 0 {
			for range polls + 1 {
				seen = append(seen, status())
			}
			require.Equal(t, []string{"CREATING", "CREATING/backfilling", "CREATING/backfilling", "ACTIVE"}, seen)
		} else {
			for range 5 {
				require.Equal(t, "CREATING/backfilling", status())
			}
			st.Finish(name, "by_team")
			require.Equal(t, "ACTIVE", status())
		}
		_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("by_team"),
			KeyConditionExpression: aws.String("team = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": s("T")}})
		require.NoError(t, err, "ACTIVE: readable")
		require.Equal(t, int64(2), st.Stats().Refused)
	}
}

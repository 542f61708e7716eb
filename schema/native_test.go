package schema_test

// Tests of Prepare and Check on a native-gsi, whose key schema is one of
// DynamoDB's multi-attribute keys (served by the multikey double on the
// local servers).

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// ntBase is the base table alone; ntStep adds a native-gsi over (org, year)
// and (room, slot); ntSwapped declares the same index with its sort
// attributes the other way round.
type ntBase struct {
	_    ddbindex.TableSpec `ddbindex:"nt-slots"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Org  string             `dynamodbav:"org"`
	Year int64              `dynamodbav:"year"`
	Room string             `dynamodbav:"room"`
	Slot int64              `dynamodbav:"slot"`
}

type ntStep struct {
	_    ddbindex.TableSpec `ddbindex:"nt-slots"`
	_    ddbindex.IndexSpec `ddbindex:"by_slot,type=native-gsi,name=nt-slot"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Org  string             `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year int64              `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room string             `dynamodbav:"room" ddbindex:"by_slot.sk:0"`
	Slot int64              `dynamodbav:"slot" ddbindex:"by_slot.sk:1"`
}

type ntSwapped struct {
	_    ddbindex.TableSpec `ddbindex:"nt-slots"`
	_    ddbindex.IndexSpec `ddbindex:"by_slot,type=native-gsi,name=nt-slot"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Org  string             `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year int64              `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room string             `dynamodbav:"room" ddbindex:"by_slot.sk:1"`
	Slot int64              `dynamodbav:"slot" ddbindex:"by_slot.sk:0"`
}

func TestPrepareAddsANativeGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := t.Context()
	c := ddbtest.MultiKey(t)
	naming := scNaming(t)
	base := newTestTableNamed[ntBase](t, c, naming)
	for i, room := range []string{"b", "a", "b"} {
		_, err := base.Put(ctx, ntBase{ID: string(rune('x' + i)), Org: "o", Year: 2026, Room: room, Slot: int64(i)})
		require.NoError(t, err)
	}
	step, err := ddbindex.New[ntStep](c, naming)
	require.NoError(t, err)
	require.ErrorIs(t, schema.Check(ctx, step, c), ddbindex.ErrSchemaMismatch, "the GSI is not there yet")

	_, err = schema.Prepare(ctx, step, c, func(o *schema.PrepareOptions) { o.WaitMinDelay = 0 })
	require.NoError(t, err)
	require.NoError(t, schema.Check(ctx, step, c), "Check recognises the multi-attribute key schema")

	// DynamoDB backfilled the index from the items' own attributes.
	var ids []string
	for it, err := range step.Query("by_slot", "o", int64(2026)).All(ctx) {
		require.NoError(t, err)
		ids = append(ids, it.ID)
	}
	require.Equal(t, []string{"y", "x", "z"}, ids)

	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(formOf(t, step, "by_slot", ddbindex.NativeGSI).Table)})
	require.NoError(t, err)
	var ks []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		for _, e := range g.KeySchema {
			ks = append(ks, string(e.KeyType)+" "+aws.ToString(e.AttributeName))
		}
	}
	require.Equal(t, []string{"HASH org", "HASH year", "RANGE room", "RANGE slot"}, ks)
	defs := map[string]types.ScalarAttributeType{}
	for _, d := range out.Table.AttributeDefinitions {
		defs[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	require.Equal(t, map[string]types.ScalarAttributeType{"id": "S", "org": "S", "year": "N", "room": "S", "slot": "N"}, defs)

	swapped, err := ddbindex.New[ntSwapped](c, naming)
	require.NoError(t, err)
	err = schema.Check(ctx, swapped, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch, "the sort attributes in another order are another key")
	require.Contains(t, err.Error(), "nt-slot")
}

package schema_test

// Tests of Prepare and Check on a native-gsi, whose key schema is one of
// DynamoDB's multi-attribute keys (served by the multikey double on the
// local servers).

import (
	"cmp"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
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

// ntSharded is ntStep sharded 3 ways; ntResharded declares 4 shards.
type ntSharded struct {
	_    ddbindex.TableSpec `ddbindex:"nt-slots"`
	_    ddbindex.IndexSpec `ddbindex:"by_slot,type=native-gsi,name=nt-slot-sh,shards=3"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Org  string             `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year int64              `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room string             `dynamodbav:"room" ddbindex:"by_slot.sk:0"`
	Slot int64              `dynamodbav:"slot" ddbindex:"by_slot.sk:1"`
}

type ntResharded struct {
	_    ddbindex.TableSpec `ddbindex:"nt-slots"`
	_    ddbindex.IndexSpec `ddbindex:"by_slot,type=native-gsi,name=nt-slot-sh,shards=4"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Org  string             `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year int64              `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room string             `dynamodbav:"room" ddbindex:"by_slot.sk:0"`
	Slot int64              `dynamodbav:"slot" ddbindex:"by_slot.sk:1"`
}

// A sharded native-gsi added to a table with data: Prepare creates it with
// its shard attribute (a Number HASH attribute after the components) and the
// base key after the sort attributes; the items written before hold no
// shard, so the index is empty until a backfill writes it; Check then reads
// its entries and refuses a declaration with another number of shards.
func TestPrepareAddsAShardedNativeGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := t.Context()
	c := ddbtest.MultiKey(t)
	naming := scNaming(t)
	base := newTestTableNamed[ntBase](t, c, naming)
	var written []ntBase
	for i, room := range []string{"b", "a", "b", "a", "c", "b", "a"} {
		it := ntBase{ID: string(rune('m' + i)), Org: "o", Year: 2026, Room: room, Slot: int64(i % 3)}
		_, err := base.Put(ctx, it)
		require.NoError(t, err)
		written = append(written, it)
	}
	// By room, then slot, then id: the shards merge into one order.
	slices.SortFunc(written, func(a, b ntBase) int {
		return cmp.Or(cmp.Compare(a.Room, b.Room), cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.ID, b.ID))
	})
	var want []string
	for _, it := range written {
		want = append(want, it.ID)
	}
	step, err := ddbindex.New[ntSharded](c, naming)
	require.NoError(t, err)
	_, err = schema.Prepare(ctx, step, c, func(o *schema.PrepareOptions) { o.WaitMinDelay = 0 })
	require.NoError(t, err)
	require.NoError(t, schema.Check(ctx, step, c), "Check recognises the sharded key schema")

	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(formOf(t, step, "by_slot", ddbindex.NativeGSI).Table)})
	require.NoError(t, err)
	var ks []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		for _, e := range g.KeySchema {
			ks = append(ks, string(e.KeyType)+" "+aws.ToString(e.AttributeName))
		}
	}
	require.Equal(t, []string{"HASH org", "HASH year", "HASH _by_slot_shard", "RANGE room", "RANGE slot", "RANGE id"}, ks)

	ids := func() []string {
		var ids []string
		for it, err := range step.Query("by_slot", "o", int64(2026)).All(ctx) {
			require.NoError(t, err)
			ids = append(ids, it.ID)
		}
		return ids
	}
	require.Empty(t, ids(), "no item written before holds its shard")
	st, err := migrate.Backfill(ctx, step, c, "by_slot")
	require.NoError(t, err)
	require.Equal(t, 7, st.Written, "%+v", st)
	require.Equal(t, want, ids())

	re, err := ddbindex.New[ntResharded](c, naming)
	require.NoError(t, err)
	err = schema.Check(ctx, re, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch, "entries in the shards of another count")
	require.Contains(t, err.Error(), "shards=4")
}

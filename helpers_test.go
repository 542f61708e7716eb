package ddbindex

import (
	"context"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// newTestTable returns a Table for T whose physical tables have names unique
// to the test, creates them on the test server (with TTL and a stream where
// the server has them), and deletes them when the test ends. It skips the
// test when no server is configured.
func newTestTable[T any](t testing.TB, optFns ...func(*Options)) (*Table[T], *dynamodb.Client) {
	t.Helper()
	return newTestTableOn[T](t, ddbtest.Client(t), optFns...)
}

// newTestTableOn is newTestTable with the client c.
func newTestTableOn[T any](t testing.TB, c *dynamodb.Client, optFns ...func(*Options)) (*Table[T], *dynamodb.Client) {
	t.Helper()
	prefix := ddbtest.Name(t, "")
	fns := append([]func(*Options){func(o *Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	}}, optFns...)
	tb, err := New[T](c, fns...)
	require.NoError(t, err)
	createTables(t, tb, c, ddbtest.Has(ddbtest.Streams), ddbtest.Has(ddbtest.TTL))
	return tb, c
}

// The tests of this package cannot import package schema (it imports this
// one), so they create their tables from the core's own description of
// them (spec.go), through the DDL builder package schema uses
// (internal/spec).

// tableInputs returns the CreateTable requests of tb's base table and index
// tables: schema.CreateTableInputs.
func tableInputs[T any](tb *Table[T], stream bool) []*dynamodb.CreateTableInput {
	return tb.spec().CreateTableInputs(stream)
}

// createTables does what schema.CreateTables does, for the tests: it
// creates tb's base table (with a stream when stream is true and the model
// has index tables) and index tables, waits until they are active, enables
// TTL where tombstones rely on it when ttl is true, and deletes the tables
// when the test ends.
func createTables[T any](t testing.TB, tb *Table[T], c *dynamodb.Client, stream, ttl bool) {
	t.Helper()
	ts := tb.spec()
	for _, in := range ts.CreateTableInputs(stream) {
		ddbtest.CreateTable(t, c, in)
	}
	if !ttl {
		return
	}
	for _, name := range ts.TTL {
		_, err := c.UpdateTimeToLive(context.Background(), &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ts.TTLAttr), Enabled: aws.Bool(true)},
		})
		require.NoError(t, err)
	}
}

// putBase writes items to the base table as Marshal stores them (base item
// only: no index-table writes).
func putBase[T any](t testing.TB, tb *Table[T], items ...T) {
	t.Helper()
	for _, it := range items {
		av, err := tb.Marshal(it)
		require.NoError(t, err)
		_, err = tb.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: av})
		require.NoError(t, err)
	}
}

// putEntry writes item's entry straight into the index table of index,
// marked as a tombstone when deleted is true. It reports whether the item is
// in the index (false for a sparse item, which writes nothing).
func putEntry[T any](t testing.TB, tb *Table[T], index string, item T, deleted bool) bool {
	t.Helper()
	d, err := tb.index(index)
	require.NoError(t, err)
	require.Equal(t, IndexTable, d.kind, "putEntry writes index tables only")
	e, err := tb.entryOf(d, item, "1")
	require.NoError(t, err)
	if e == nil {
		return false
	}
	if deleted {
		e[tb.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
	}
	_, err = tb.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tb.tableOf(d)), Item: e})
	require.NoError(t, err)
	return true
}

// applyLoad writes items to tb's base table, item i as a tombstone where
// dead[i], and applies to its index tables the changes a stream would
// carry: each item's insert (version 1), and a dead item's soft delete
// (version 2). It returns each item's image as inserted.
func applyLoad[T any](t testing.TB, tb *Table[T], items []T, dead []bool) []map[string]types.AttributeValue {
	t.Helper()
	ctx := context.Background()
	var changes []Change
	images := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		av, err := tb.Marshal(it)
		require.NoError(t, err)
		images[i] = av
		changes = append(changes, Change{New: av, Version: "1"})
		last := av
		if dead[i] {
			last = maps.Clone(av)
			last[tb.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
			changes = append(changes, Change{Old: av, New: last, Version: "2"})
		}
		_, err = tb.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: last})
		require.NoError(t, err)
	}
	_, err := tb.Apply(ctx, changes)
	require.NoError(t, err)
	return images
}

// coldMemo returns a copy of tb that remembers nothing of earlier calls, so
// that a test's request sizes do not depend on what other tests read.
func coldMemo[T any](tb *Table[T]) *Table[T] {
	cp := *tb
	cp.memo = &memo{}
	return &cp
}

// fieldOf returns s's key field stored as attr, or nil.
func fieldOf(s *schema, attr string) *field {
	for _, f := range s.fields {
		if f.attr == attr {
			return f
		}
	}
	return nil
}

// readAhead makes the calls of q (on the form it is routed to) start as if
// earlier calls had found one live entry in 200, each of about 100 bytes:
// their first request reads far past a short page, through the tombstones
// after it, to the next live item. A first call in a partition otherwise
// reads no item past the page.
func readAhead[T any](t *testing.T, q Query[T]) {
	t.Helper()
	p, err := q.plan()
	require.NoError(t, err)
	q.t.memo.put(p.memoKey, 1, 200, false, 0)
	q.t.memo.putItemBytes(p.memoKey, 100)
}

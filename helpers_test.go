package ddbindex

import (
	"context"
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
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	fns := append([]func(*Options){func(o *Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	}}, optFns...)
	tb, err := New[T](c, fns...)
	require.NoError(t, err)
	for _, in := range tb.CreateTableInputs(false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	err = tb.CreateTables(context.Background(), c, func(o *CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), !ddbtest.Has(ddbtest.Streams)
	})
	require.NoError(t, err)
	return tb, c
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

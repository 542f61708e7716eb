package schema_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// scNaming returns an option that gives the tables names unique to the
// test: a prefix, a dash, the declared name. Models opened with the same
// option share their tables.
func scNaming(t testing.TB) func(*ddbindex.Options) {
	prefix := ddbtest.Name(t, "")
	return func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	}
}

// scOpen opens T on the test server with naming and optFns, and deletes
// every table T declares when the test ends. It creates nothing.
func scOpen[T any](t testing.TB, c *dynamodb.Client, naming func(*ddbindex.Options), optFns ...func(*ddbindex.Options)) *ddbindex.Table[T] {
	t.Helper()
	tb, err := ddbindex.New[T](c, append([]func(*ddbindex.Options){naming}, optFns...)...)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	return tb
}

// newTestTable returns a Table for T whose physical tables have names unique
// to the test, creates them with CreateTables (with TTL and a stream where
// the server has them), and deletes them when the test ends. It skips the
// test when no server is configured.
func newTestTable[T any](t testing.TB, optFns ...func(*ddbindex.Options)) (*ddbindex.Table[T], *dynamodb.Client) {
	t.Helper()
	c := ddbtest.Client(t)
	return newTestTableNamed[T](t, c, scNaming(t), optFns...), c
}

// newTestTableNamed is newTestTable with the client and the naming option
// given.
func newTestTableNamed[T any](t testing.TB, c *dynamodb.Client, naming func(*ddbindex.Options), optFns ...func(*ddbindex.Options)) *ddbindex.Table[T] {
	t.Helper()
	tb := scOpen[T](t, c, naming, optFns...)
	err := schema.CreateTables(context.Background(), tb, c, func(o *schema.CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), !ddbtest.Has(ddbtest.Streams)
	})
	require.NoError(t, err)
	return tb
}

// formOf returns the form of kind of the named index of tb: where its
// entries live.
func formOf[T any](t testing.TB, tb *ddbindex.Table[T], index string, kind ddbindex.Kind) ddbindex.IndexForm {
	t.Helper()
	for _, ix := range tb.Indexes() {
		if ix.Name != index {
			continue
		}
		for _, f := range ix.Forms {
			if f.Kind == kind {
				return f
			}
		}
	}
	t.Fatalf("%s has no %s form of index %q", tb.TableName(), kind, index)
	return ddbindex.IndexForm{}
}

// indexTable returns the physical name of the index table of index.
func indexTable[T any](t testing.TB, tb *ddbindex.Table[T], index string) string {
	t.Helper()
	return formOf(t, tb, index, ddbindex.IndexTable).Table
}

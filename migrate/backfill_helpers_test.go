package migrate_test

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
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

// The helpers of Backfill's tests. Their names start with "bf", so that
// they stay apart from the other tests of the package.

// The attributes ddbindex stores by default (ddbindex.Options).
const (
	bfDeletedAttr = "_deleted"
	bfTTLAttr     = "_ttl"
	bfVersionAttr = "_ver"
)

func bfAvS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func bfAvN(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// bfPrefixed names every table prefix + "-" + its declared name.
func bfPrefixed(prefix string) func(*ddbindex.Options) {
	return func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } }
}

// bfNewTable returns a Table for T whose physical tables have names unique
// to the test, creates them on the test server (with TTL and a stream where
// the server has them), and deletes them when the test ends. It skips the
// test when no server is configured.
func bfNewTable[T any](t testing.TB, optFns ...func(*ddbindex.Options)) (*ddbindex.Table[T], *dynamodb.Client) {
	t.Helper()
	c := ddbtest.Client(t)
	tb, err := ddbindex.New[T](c, append([]func(*ddbindex.Options){bfPrefixed(ddbtest.Name(t, ""))}, optFns...)...)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	require.NoError(t, schema.CreateTables(t.Context(), tb, c, func(o *schema.CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), !ddbtest.Has(ddbtest.Streams)
	}))
	return tb, c
}

// bfNames returns the option that names the tables as those of a bfSetup
// whose checkpoint store is cps: another Table of the same tables.
func bfNames(cps *migrate.DynamoDBCheckpoints) func(*ddbindex.Options) {
	return bfPrefixed(strings.TrimSuffix(cps.Table, "-control"))
}

// bfForm returns the form of index that Backfill fills: its last.
func bfForm[T any](t testing.TB, tb *ddbindex.Table[T], index string) ddbindex.IndexForm {
	t.Helper()
	for _, ix := range tb.Indexes() {
		if ix.Name == index {
			return ix.Forms[len(ix.Forms)-1]
		}
	}
	t.Fatalf("no index %q", index)
	return ddbindex.IndexForm{}
}

// bfIndexTable returns the physical index table of index.
func bfIndexTable[T any](t testing.TB, tb *ddbindex.Table[T], index string) string {
	t.Helper()
	for _, ix := range tb.Indexes() {
		if ix.Name != index {
			continue
		}
		for _, f := range ix.Forms {
			if f.Kind == ddbindex.IndexTable {
				return f.Table
			}
		}
	}
	t.Fatalf("index %q has no index table", index)
	return ""
}

// bfEntryOf returns item's entry in the index table of index, at version
// (nil when the item is not in the index): the entry a change inserting the
// item writes.
func bfEntryOf[T any](t testing.TB, tb *ddbindex.Table[T], index string, item T, version string) map[string]types.AttributeValue {
	t.Helper()
	img, err := tb.Marshal(item)
	require.NoError(t, err)
	ws, err := tb.IndexWrites(ddbindex.Change{New: img, Version: version})
	require.NoError(t, err)
	for _, w := range ws {
		if w.Index == index && !w.Tombstone {
			return w.Item
		}
	}
	return nil
}

// bfAdd adds the counts of o to s.
func bfAdd(s *migrate.BackfillStats, o migrate.BackfillStats) {
	s.Scanned += o.Scanned
	s.Written += o.Written
	s.Skipped += o.Skipped
	s.Unchanged += o.Unchanged
	s.Sparse += o.Sparse
	s.Tombstones += o.Tombstones
	s.Resumed += o.Resumed
	s.AlreadyDone += o.AlreadyDone
}

// bfItemSize is an item's size as DynamoDB counts it for write units (and
// as ddbindex sizes a write for Backfill's rate limit): each attribute's
// name and value.
func bfItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + bfValueSize(v)
	}
	return n
}

func bfValueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return (len(x.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + bfValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + bfValueSize(e)
		}
		return n
	}
	return 1 // BOOL, NULL (the tests store no sets)
}

// bfSameItem reports whether two items hold the same attributes with the
// same values (numbers compared as numbers).
func bfSameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !bfSameValue(v, w) {
			return false
		}
	}
	return true
}

func bfSameValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		p, okP := new(big.Rat).SetString(x.Value)
		q, okQ := new(big.Rat).SetString(y.Value)
		return okP && okQ && p.Cmp(q) == 0
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		return ok && len(x.Value) == len(y.Value) && (len(x.Value) == 0 || bfSameItem(x.Value, y.Value))
	}
	return bfAVString(a) == bfAVString(b)
}

// bfAVString renders a value for messages and comparisons.
func bfAVString(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("0x%x", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			parts = append(parts, k+"="+bfAVString(v.Value[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", av)
}

// bfScanAll reads a table to its end (strongly consistent), sorted by the
// rendering of each item.
func bfScanAll(t *testing.T, c *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := c.Scan(t.Context(), in)
		require.NoError(t, err)
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b map[string]types.AttributeValue) int {
		return strings.Compare(bfAVString(&types.AttributeValueMemberM{Value: a}), bfAVString(&types.AttributeValueMemberM{Value: b}))
	})
	return out
}

package multikey_test

// Each rule of DynamoDB's multi-attribute GSI keys, tested through the
// double on the local server (and, with DDBINDEX_ENDPOINT=aws, against
// DynamoDB itself, where ddbtest.MultiKey is the plain client). The rules
// are those of the Amazon DynamoDB Developer Guide, "Using Global Secondary
// Indexes in DynamoDB", section "Multi-attribute key schema"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys)
// and the design pattern "Multi-attribute keys"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html):
// up to four HASH and four RANGE attributes, each of its own type, every
// HASH before every RANGE, GSIs only; a Query gives every partition
// attribute with = and sort attributes left to right, only the last of them
// with <, <=, >, >=, BETWEEN or begins_with; a FilterExpression may not name
// a key attribute of the queried index; an item that misses any key
// attribute is not in the index. ScyllaDB's conformance tests, written to
// pass against DynamoDB (test/alternator/test_gsi_composite_keys.py), check
// the same rules.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func b(v ...byte) types.AttributeValue {
	return &types.AttributeValueMemberB{Value: v}
}

func def(name string, t types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
}

func ks(elems ...string) []types.KeySchemaElement {
	var out []types.KeySchemaElement
	for _, e := range elems {
		kt, name, _ := strings.Cut(e, " ")
		out = append(out, types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyType(kt)})
	}
	return out
}

// mkTable is a base table keyed by p (S) with a GSI "gsi" over HASH h1 (S),
// h2 (N) and RANGE r1 (N), r2 (S), r3 (B).
func mkTable(t *testing.T, c *dynamodb.Client, proj types.ProjectionType) string {
	t.Helper()
	name := ddbtest.Name(t, "mk")
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   ks("HASH p"),
		AttributeDefinitions: []types.AttributeDefinition{def("p", "S"), def("h1", "S"), def("h2", "N"),
			def("r1", "N"), def("r2", "S"), def("r3", "B")},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("gsi"),
			KeySchema:  ks("HASH h1", "HASH h2", "RANGE r1", "RANGE r2", "RANGE r3"),
			Projection: &types.Projection{ProjectionType: proj},
		}},
	})
	return name
}

func requireValidation(t *testing.T, err error, contains string, how string) {
	t.Helper()
	require.Error(t, err, how)
	var api smithy.APIError
	require.True(t, errors.As(err, &api), "%s: %v", how, err)
	require.Equal(t, "ValidationException", api.ErrorCode(), "%s: %v", how, err)
	if contains != "" {
		require.Contains(t, strings.ToLower(api.ErrorMessage()), strings.ToLower(contains), how)
	}
}

func put(t *testing.T, c *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)
}

// query reads every page of a Query of the GSI and returns the p values in
// order.
func query(t *testing.T, c *dynamodb.Client, in dynamodb.QueryInput) ([]string, error) {
	t.Helper()
	var out []string
	for {
		res, err := c.Query(t.Context(), &in)
		if err != nil {
			return nil, err
		}
		for _, it := range res.Items {
			for k := range it {
				require.False(t, strings.HasPrefix(k, "_mk"), "a hidden attribute in an answer: %s", k)
			}
			out = append(out, it["p"].(*types.AttributeValueMemberS).Value)
		}
		if res.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

func kq(table, expr string, vals map[string]types.AttributeValue) dynamodb.QueryInput {
	return dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi"),
		KeyConditionExpression: aws.String(expr), ExpressionAttributeValues: vals}
}

// schemaCase is a CreateTable request by its key schemas: AttributeDefinitions
// define exactly the attributes they use (all Strings), save omit, plus
// extra.
type schemaCase struct {
	table, lsi, gsi []string
	omit, extra     string
	contains        string // a fragment of the refusal's message
}

func (sc schemaCase) input(t *testing.T) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(ddbtest.Name(t, "bad")), BillingMode: types.BillingModePayPerRequest,
		KeySchema: ks(sc.table...),
	}
	var used []string
	for _, e := range slices.Concat(sc.table, sc.lsi, sc.gsi) {
		_, name, _ := strings.Cut(e, " ")
		if name != sc.omit && !slices.Contains(used, name) {
			used = append(used, name)
		}
	}
	if sc.extra != "" {
		used = append(used, sc.extra)
	}
	for _, name := range used {
		in.AttributeDefinitions = append(in.AttributeDefinitions, def(name, "S"))
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	if sc.lsi != nil {
		in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"), KeySchema: ks(sc.lsi...), Projection: all}}
	}
	if sc.gsi != nil {
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks(sc.gsi...), Projection: all}}
	}
	return in
}

// TestCreateTableKeySchemaRules checks each key schema rule of the
// Developer Guide, "Using Global Secondary Indexes in DynamoDB", section
// "Multi-attribute key schema"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys),
// and "GSI design pattern: multi-attribute keys"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html):
// each request breaks one rule and defines exactly the attributes its key
// schemas use (else DynamoDB would refuse it for unused definitions,
// whatever the rule), and the refusal names what is wrong in words the
// double and DynamoDB share.
func TestCreateTableKeySchemaRules(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	for name, sc := range map[string]schemaCase{
		"five HASH attributes":  {table: keys("HASH p"), gsi: keys("HASH a", "HASH b", "HASH c", "HASH d", "HASH e"), contains: "HASH"},
		"five RANGE attributes": {table: keys("HASH p"), gsi: keys("HASH h", "RANGE a", "RANGE b", "RANGE c", "RANGE d", "RANGE e"), contains: "RANGE"},
		"RANGE before HASH":     {table: keys("HASH p"), gsi: keys("RANGE a", "HASH b"), contains: "HASH"},
		"HASH, RANGE, HASH":     {table: keys("HASH p"), gsi: keys("HASH a", "RANGE b", "HASH c"), contains: "HASH"},
		"RANGE only":            {table: keys("HASH p"), gsi: keys("RANGE a", "RANGE b"), contains: "HASH"},
		"an attribute twice":    {table: keys("HASH p"), gsi: keys("HASH a", "HASH a"), contains: "duplicate"},
		"HASH and RANGE twice":  {table: keys("HASH p"), gsi: keys("HASH a", "HASH b", "RANGE a"), contains: "duplicate"},
		"no AttributeDefinitions entry": {table: keys("HASH p"), gsi: keys("HASH a", "HASH z"), omit: "z",
			contains: "AttributeDefinition"},
		"an unused AttributeDefinitions entry": {table: keys("HASH p"), gsi: keys("HASH a", "HASH b"), extra: "c",
			contains: "not used"},
		"a multi-attribute LSI": {table: keys("HASH p", "RANGE q"), lsi: keys("HASH p", "RANGE q", "RANGE a"),
			contains: "KeySchema"},
		"a multi-attribute base table": {table: keys("HASH p", "HASH q"), contains: "KeySchema"},
	} {
		in := sc.input(t)
		_, err := c.CreateTable(t.Context(), in)
		if err == nil {
			ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
		}
		requireValidation(t, err, sc.contains, name)
	}
}

// keys lists key schema elements as ks takes them.
func keys(elems ...string) []string { return elems }

// TestCreateTableAtTheLimits creates GSIs at the limits of the Developer
// Guide, "Using Global Secondary Indexes in DynamoDB", section
// "Multi-attribute key schema" (up to four HASH and four RANGE attributes,
// each of its own type;
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys),
// one of them with attribute names of 20 characters, and queries each with
// every key attribute: only the item equal on all of them answers, not one
// that differs on any single attribute.
func TestCreateTableAtTheLimits(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	long := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = n + strings.Repeat("_", 20-len(n))
		}
		return out
	}
	typs := []types.ScalarAttributeType{"S", "N", "B"}
	val := func(typ types.ScalarAttributeType, v int) types.AttributeValue {
		switch typ {
		case "N":
			return n(fmt.Sprint(v))
		case "B":
			return b(byte(v))
		}
		return s(fmt.Sprint("v", v))
	}
	for name, shape := range map[string]struct{ hash, rng []string }{
		"four HASH":                           {keys("h1", "h2", "h3", "h4"), nil},
		"one HASH, four RANGE":                {keys("h1"), keys("r1", "r2", "r3", "r4")},
		"four HASH, four RANGE":               {keys("h1", "h2", "h3", "h4"), keys("r1", "r2", "r3", "r4")},
		"four HASH, four RANGE, 20-character": {long("hashAttributeOne", "hashAttributeTwo", "hashAttributeThree", "hashAttributeFour"), long("sortAttributeOne", "sortAttributeTwo", "sortAttributeThree", "sortAttributeFour")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			attrs := slices.Concat(shape.hash, shape.rng)
			typ := map[string]types.ScalarAttributeType{}
			defs := []types.AttributeDefinition{def("p", "S")}
			var elems []string
			for i, a := range attrs {
				typ[a] = typs[i%len(typs)]
				defs = append(defs, def(a, typ[a]))
				kt := "HASH"
				if i >= len(shape.hash) {
					kt = "RANGE"
				}
				elems = append(elems, kt+" "+a)
			}
			table := ddbtest.Name(t, "lim")
			ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
				TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
				KeySchema: ks("HASH p"), AttributeDefinitions: defs,
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks(elems...),
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
			})
			out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
			require.NoError(t, err)
			require.Equal(t, ks(elems...), out.Table.GlobalSecondaryIndexes[0].KeySchema)

			item := func(p string, differ string) map[string]types.AttributeValue {
				it := map[string]types.AttributeValue{"p": s(p)}
				for _, a := range attrs {
					it[a] = val(typ[a], 1)
					if a == differ {
						it[a] = val(typ[a], 2)
					}
				}
				return it
			}
			put(t, c, table, item("hit", ""))
			for _, a := range attrs {
				put(t, c, table, item("miss-"+a, a))
			}
			in := dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi"),
				ExpressionAttributeNames: map[string]string{}, ExpressionAttributeValues: map[string]types.AttributeValue{}}
			var conds []string
			for i, a := range attrs {
				conds = append(conds, fmt.Sprintf("#k%d = :v%d", i, i))
				in.ExpressionAttributeNames[fmt.Sprintf("#k%d", i)] = a
				in.ExpressionAttributeValues[fmt.Sprintf(":v%d", i)] = val(typ[a], 1)
			}
			in.KeyConditionExpression = aws.String(strings.Join(conds, " AND "))
			requireSoon(t, []string{"hit"}, func() []string {
				got, err := query(t, c, in)
				require.NoError(t, err)
				return got
			}, "a Query giving all %d key attributes", len(attrs))
			requireSoon(t, append([]string{"hit"}, func() []string {
				var out []string
				for _, a := range attrs {
					out = append(out, "miss-"+a)
				}
				return out
			}()...), func() []string { return scanIndex(t, c, table, "gsi") }, "every item is in the index")
		})
	}
}

// requireSoon requires read to return want, in any order. A GSI read may
// lag its table on DynamoDB, so there it reads again for a while; through
// the double on a local server an index entry is written with its item, so
// the first read must be right.
func requireSoon(t *testing.T, want []string, read func() []string, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := read()
		w, g := slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))
		if slices.Equal(w, g) || ddbtest.Endpoint() != ddbtest.AWS || time.Now().After(deadline) {
			require.ElementsMatch(t, want, got, msgAndArgs...)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// scanIndex reads every page of a Scan of an index and returns the p values
// of its entries: DynamoDB's Scan of a GSI reads the index, which holds
// only the items that have every key attribute of it (Developer Guide,
// "Scanning a global secondary index" and "Multi-attribute key schema").
func scanIndex(t *testing.T, c *dynamodb.Client, table, index string) []string {
	t.Helper()
	var out []string
	in := &dynamodb.ScanInput{TableName: aws.String(table), IndexName: aws.String(index)}
	for {
		res, err := c.Scan(t.Context(), in)
		require.NoError(t, err)
		for _, it := range res.Items {
			for k := range it {
				require.False(t, strings.HasPrefix(k, "_mk"), "a hidden attribute in an answer: %s", k)
			}
			out = append(out, it["p"].(*types.AttributeValueMemberS).Value)
		}
		if res.LastEvaluatedKey == nil {
			return out
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

func TestDescribeShowsTheDeclaredSchema(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	table := mkTable(t, c, types.ProjectionTypeKeysOnly)
	out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Len(t, out.Table.GlobalSecondaryIndexes, 1)
	g := out.Table.GlobalSecondaryIndexes[0]
	require.Equal(t, ks("HASH h1", "HASH h2", "RANGE r1", "RANGE r2", "RANGE r3"), g.KeySchema)
	require.Equal(t, types.ProjectionTypeKeysOnly, g.Projection.ProjectionType)
	defs := map[string]types.ScalarAttributeType{}
	for _, d := range out.Table.AttributeDefinitions {
		defs[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	require.Equal(t, map[string]types.ScalarAttributeType{"p": "S", "h1": "S", "h2": "N", "r1": "N", "r2": "S", "r3": "B"}, defs)

	// KEYS_ONLY projects the base key and every key attribute of the index.
	put(t, c, table, map[string]types.AttributeValue{"p": s("x"), "h1": s("a"), "h2": n("1"), "r1": n("5"), "r2": s("k"), "r3": b(1), "extra": s("no")})
	res, err := c.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi"),
		KeyConditionExpression: aws.String("h1 = :a AND h2 = :b"), ExpressionAttributeValues: map[string]types.AttributeValue{":a": s("a"), ":b": n("1")}})
	require.NoError(t, err)
	require.Len(t, res.Items, 1)
	require.Equal(t, map[string]types.AttributeValue{"p": s("x"), "h1": s("a"), "h2": n("1"), "r1": n("5"), "r2": s("k"), "r3": b(1)}, res.Items[0])
}

// mkData writes items over a grid of sort values in one partition (h1 a,
// h2 1), and look-alikes in others.
func mkData(t *testing.T, c *dynamodb.Client, table string) map[string][3]types.AttributeValue {
	t.Helper()
	data := map[string][3]types.AttributeValue{}
	i := 0
	for _, r1 := range []string{"-10", "0", "1.5", "7"} {
		for _, r2 := range []string{"", "a", "a\x00", "ab", "b"} {
			for _, r3 := range [][]byte{{0x00}, {0x00, 0xFF}, {0x7F}} {
				if r2 == "" {
					continue // an empty String cannot be a key value
				}
				i++
				p := fmt.Sprintf("p%03d", i)
				put(t, c, table, map[string]types.AttributeValue{"p": s(p), "h1": s("a"), "h2": n("1"), "r1": n(r1), "r2": s(r2), "r3": b(r3...)})
				data[p] = [3]types.AttributeValue{n(r1), s(r2), b(r3...)}
			}
		}
	}
	for _, other := range []map[string]types.AttributeValue{
		{"p": s("o1"), "h1": s("a"), "h2": n("2"), "r1": n("0"), "r2": s("a"), "r3": b(0)},
		{"p": s("o2"), "h1": s("b"), "h2": n("1"), "r1": n("0"), "r2": s("a"), "r3": b(0)},
		{"p": s("o3"), "h1": s("a\x00"), "h2": n("1"), "r1": n("0"), "r2": s("a"), "r3": b(0)},
	} {
		put(t, c, table, other)
	}
	return data
}

// TestQueryServesEveryOperator queries with each condition the Developer
// Guide's "GSI design pattern: multi-attribute keys" allows
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html):
// every partition attribute with =, sort attributes left to right, all =
// but the last, which may also take <, <=, >, >=, BETWEEN or begins_with;
// each answer is checked against the items of the test's own data that the
// condition selects, in order, both ways and over pages.
func TestQueryServesEveryOperator(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	table := mkTable(t, c, types.ProjectionTypeAll)
	data := mkData(t, c, table)
	with := func(kv ...any) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1")}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return m
	}
	order := func(ps []string) []string {
		out := slices.Clone(ps)
		slices.SortFunc(out, func(x, y string) int {
			a, b := data[x], data[y]
			for i := range a {
				if c := cmpAV(a[i], b[i]); c != 0 {
					return c
				}
			}
			return strings.Compare(x, y)
		})
		return out
	}
	match := func(f func(v [3]types.AttributeValue) bool) []string {
		var out []string
		for p, v := range data {
			if f(v) {
				out = append(out, p)
			}
		}
		return order(out)
	}
	const hk = "h1 = :h1 AND h2 = :h2"
	for _, tc := range []struct {
		expr string
		vals map[string]types.AttributeValue
		want func(v [3]types.AttributeValue) bool
	}{
		{hk, with(), func([3]types.AttributeValue) bool { return true }},
		{hk + " AND r1 = :x", with(":x", n("1.50")), func(v [3]types.AttributeValue) bool { return cmpAV(v[0], n("1.5")) == 0 }},
		{hk + " AND r1 < :x", with(":x", n("1.5")), func(v [3]types.AttributeValue) bool { return cmpAV(v[0], n("1.5")) < 0 }},
		{hk + " AND r1 >= :x", with(":x", n("0")), func(v [3]types.AttributeValue) bool { return cmpAV(v[0], n("0")) >= 0 }},
		{hk + " AND r1 BETWEEN :x AND :y", with(":x", n("-10"), ":y", n("0")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("-10")) >= 0 && cmpAV(v[0], n("0")) <= 0
		}},
		{hk + " AND r1 = :x AND r2 > :y", with(":x", n("0"), ":y", s("a")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("0")) == 0 && cmpAV(v[1], s("a")) > 0
		}},
		{hk + " AND r1 = :x AND r2 <= :y", with(":x", n("7"), ":y", s("a\x00")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("7")) == 0 && cmpAV(v[1], s("a\x00")) <= 0
		}},
		{hk + " AND r1 = :x AND begins_with(r2, :y)", with(":x", n("0"), ":y", s("a")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("0")) == 0 && strings.HasPrefix(v[1].(*types.AttributeValueMemberS).Value, "a")
		}},
		{hk + " AND r1 = :x AND r2 = :y AND r3 < :z", with(":x", n("0"), ":y", s("a"), ":z", b(0x00, 0xFF)), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("0")) == 0 && cmpAV(v[1], s("a")) == 0 && cmpAV(v[2], b(0x00, 0xFF)) < 0
		}},
		{hk + " AND r1 = :x AND r2 = :y AND begins_with(r3, :z)", with(":x", n("1.5"), ":y", s("ab"), ":z", b(0x00)), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("1.5")) == 0 && cmpAV(v[1], s("ab")) == 0 && len(v[2].(*types.AttributeValueMemberB).Value) > 0 && v[2].(*types.AttributeValueMemberB).Value[0] == 0
		}},
		// A range on the first sort attribute, with no equality before it.
		{hk + " AND r1 > :x", with(":x", n("0")), func(v [3]types.AttributeValue) bool { return cmpAV(v[0], n("0")) > 0 }},
		{hk + " AND r1 <= :x", with(":x", n("1.5")), func(v [3]types.AttributeValue) bool { return cmpAV(v[0], n("1.5")) <= 0 }},
		// A range on the second, after an equality on the first.
		{hk + " AND r1 = :x AND r2 >= :y", with(":x", n("1.5"), ":y", s("a\x00")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("1.5")) == 0 && cmpAV(v[1], s("a\x00")) >= 0
		}},
		{hk + " AND r1 = :x AND r2 BETWEEN :y AND :w", with(":x", n("-10"), ":y", s("a\x00"), ":w", s("ab")), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("-10")) == 0 && cmpAV(v[1], s("a\x00")) >= 0 && cmpAV(v[1], s("ab")) <= 0
		}},
		// Every sort attribute, all equal or the last a range.
		{hk + " AND r1 = :x AND r2 = :y AND r3 = :z", with(":x", n("7"), ":y", s("a"), ":z", b(0x00, 0xFF)), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("7")) == 0 && cmpAV(v[1], s("a")) == 0 && cmpAV(v[2], b(0x00, 0xFF)) == 0
		}},
		{hk + " AND r1 = :x AND r2 = :y AND r3 BETWEEN :z AND :w", with(":x", n("0"), ":y", s("b"), ":z", b(0x00, 0xFF), ":w", b(0x7F)), func(v [3]types.AttributeValue) bool {
			return cmpAV(v[0], n("0")) == 0 && cmpAV(v[1], s("b")) == 0 && cmpAV(v[2], b(0x00, 0xFF)) >= 0 && cmpAV(v[2], b(0x7F)) <= 0
		}},
	} {
		want := match(tc.want)
		require.NotEmpty(t, want, tc.expr)
		for _, desc := range []bool{false, true} {
			for _, limit := range []int32{0, 1, 4} {
				in := kq(table, tc.expr, tc.vals)
				in.ScanIndexForward = aws.Bool(!desc)
				if limit > 0 {
					in.Limit = aws.Int32(limit)
				}
				got, err := query(t, c, in)
				require.NoError(t, err, tc.expr)
				w := want
				if desc {
					w = slices.Clone(want)
					slices.Reverse(w)
				}
				// Ties (equal tuples) may come in any order: compare the
				// tuples in order and the items as sets.
				require.ElementsMatch(t, w, got, "%s desc=%v limit=%d", tc.expr, desc, limit)
				for i := range got {
					require.Equal(t, data[w[i]], data[got[i]], "%s desc=%v limit=%d: position %d", tc.expr, desc, limit, i)
				}
			}
		}
	}
}

// cmpAV compares two values of one type by DynamoDB's order (small test
// values: Numbers compare as floats).
func cmpAV(a, b types.AttributeValue) int {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		var fa, fb float64
		fmt.Sscan(x.Value, &fa)
		fmt.Sscan(b.(*types.AttributeValueMemberN).Value, &fb)
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case *types.AttributeValueMemberS:
		return strings.Compare(x.Value, b.(*types.AttributeValueMemberS).Value)
	default:
		xb, yb := x.(*types.AttributeValueMemberB).Value, b.(*types.AttributeValueMemberB).Value
		return strings.Compare(string(xb), string(yb))
	}
}

// TestQueryConditionRules sends the Queries and filters the Developer
// Guide's "GSI design pattern: multi-attribute keys"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html)
// rules out: a partition attribute missing or not with =; a sort attribute
// skipped; a range (including BETWEEN and begins_with) on any but the last
// sort attribute given; begins_with on a Number, whatever the value's
// type; a FilterExpression naming a key attribute of the index, directly,
// by #name or in a function.
func TestQueryConditionRules(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	table := mkTable(t, c, types.ProjectionTypeAll)
	v := map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1"), ":x": n("1"), ":w": n("2"), ":y": s("y"), ":z": b(1)}
	pick := func(keys ...string) map[string]types.AttributeValue {
		out := map[string]types.AttributeValue{}
		for _, k := range keys {
			out[k] = v[k]
		}
		return out
	}
	for name, tc := range map[string]struct {
		expr, filter string
		vals         []string
		contains     string
		names        map[string]string
	}{
		"a partition attribute missing":           {"h1 = :h1", "", []string{":h1"}, "h2", nil},
		"a partition attribute with >":            {"h1 = :h1 AND h2 > :h2", "", []string{":h1", ":h2"}, "", nil},
		"the first sort attribute skipped":        {"h1 = :h1 AND h2 = :h2 AND r2 = :y", "", []string{":h1", ":h2", ":y"}, "key", nil},
		"a gap between sort attributes":           {"h1 = :h1 AND h2 = :h2 AND r1 = :x AND r3 = :z", "", []string{":h1", ":h2", ":x", ":z"}, "key", nil},
		"a range before the last":                 {"h1 = :h1 AND h2 = :h2 AND r1 > :x AND r2 = :y", "", []string{":h1", ":h2", ":x", ":y"}, "key", nil},
		"a BETWEEN before the last":               {"h1 = :h1 AND h2 = :h2 AND r1 BETWEEN :x AND :w AND r2 = :y", "", []string{":h1", ":h2", ":x", ":w", ":y"}, "key", nil},
		"begins_with before the last":             {"h1 = :h1 AND h2 = :h2 AND r1 = :x AND begins_with(r2, :y) AND r3 = :z", "", []string{":h1", ":h2", ":x", ":y", ":z"}, "", nil},
		"begins_with on a Number":                 {"h1 = :h1 AND h2 = :h2 AND begins_with(r1, :x)", "", []string{":h1", ":h2", ":x"}, "begins_with", nil},
		"begins_with on a Number, a String value": {"h1 = :h1 AND h2 = :h2 AND begins_with(r1, :y)", "", []string{":h1", ":h2", ":y"}, "begins_with", nil},
		"OR in a key condition":                   {"h1 = :h1 AND h2 = :h2 OR r1 = :x", "", []string{":h1", ":h2", ":x"}, "", nil},
		"a filter on a HASH attribute":            {"h1 = :h1 AND h2 = :h2", "h2 = :x", []string{":h1", ":h2", ":x"}, "key attribute", nil},
		"a filter on a RANGE attribute":           {"h1 = :h1 AND h2 = :h2", "r2 = :y", []string{":h1", ":h2", ":y"}, "key attribute", nil},
		"a filter on a RANGE attribute by #name": {"h1 = :h1 AND h2 = :h2", "#k = :y", []string{":h1", ":h2", ":y"}, "key attribute",
			map[string]string{"#k": "r2"}},
		"a filter attribute_exists of a HASH attribute": {"h1 = :h1 AND h2 = :h2", "attribute_exists(h1)", []string{":h1", ":h2"}, "key attribute", nil},
		"an unused value": {"h1 = :h1 AND h2 = :h2", "", []string{":h1", ":h2", ":y"}, "unused", nil},
	} {
		in := kq(table, tc.expr, pick(tc.vals...))
		if tc.filter != "" {
			in.FilterExpression = aws.String(tc.filter)
		}
		in.ExpressionAttributeNames = tc.names
		_, err := c.Query(t.Context(), &in)
		requireValidation(t, err, tc.contains, name)
	}
	// A filter on the base table's key, or on any other attribute, is
	// allowed.
	put(t, c, table, map[string]types.AttributeValue{"p": s("k1"), "h1": s("a"), "h2": n("1"), "r1": n("1"), "r2": s("y"), "r3": b(1), "color": s("red")})
	put(t, c, table, map[string]types.AttributeValue{"p": s("k2"), "h1": s("a"), "h2": n("1"), "r1": n("2"), "r2": s("y"), "r3": b(1), "color": s("blue")})
	for filter, want := range map[string][]string{"p = :p": {"k2"}, "color = :p": {}} {
		in := kq(table, "h1 = :h1 AND h2 = :h2", map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1"), ":p": s("k2")})
		in.FilterExpression = aws.String(filter)
		got, err := query(t, c, in)
		require.NoError(t, err, filter)
		require.ElementsMatch(t, want, got, filter)
	}
}

// TestSparseIndex checks that an item missing any key attribute of a
// multi-attribute GSI is not in it (Developer Guide, "Using Global
// Secondary Indexes in DynamoDB", section "Multi-attribute key schema",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys,
// and "GSI design pattern: multi-attribute keys",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html),
// by Scans of the index, which read all of its partitions: an item missing a
// partition attribute would not answer a Query that gives that attribute,
// whether or not it were in the index.
func TestSparseIndex(t *testing.T) {
	t.Parallel()
	c := ddbtest.MultiKey(t)
	table := mkTable(t, c, types.ProjectionTypeAll)
	full := map[string]types.AttributeValue{"h1": s("a"), "h2": n("1"), "r1": n("1"), "r2": s("y"), "r3": b(1)}
	without := func(p string, missing string) map[string]types.AttributeValue {
		item := map[string]types.AttributeValue{"p": s(p)}
		for k, v := range full {
			if k != missing {
				item[k] = v
			}
		}
		return item
	}
	scan := func() []string { return scanIndex(t, c, table, "gsi") }
	all := func() []string {
		got, err := query(t, c, kq(table, "h1 = :h1 AND h2 = :h2", map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1")}))
		require.NoError(t, err)
		return got
	}
	for _, missing := range []string{"h1", "h2", "r1", "r2", "r3"} {
		put(t, c, table, without("miss-"+missing, missing))
	}
	put(t, c, table, without("x", ""))
	requireSoon(t, []string{"x"}, scan, "an item that misses a key attribute is not in the index")
	requireSoon(t, []string{"x"}, all)

	key := map[string]types.AttributeValue{"p": s("x")}
	_, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key, UpdateExpression: aws.String("REMOVE r2")})
	require.NoError(t, err)
	requireSoon(t, nil, scan, "removing a key attribute removes the item from the index")
	_, err = c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key, UpdateExpression: aws.String("SET r2 = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("z")}})
	require.NoError(t, err)
	requireSoon(t, []string{"x"}, scan, "setting it again puts the item back")
	requireSoon(t, []string{"x"}, func() []string {
		got, err := query(t, c, kq(table, "h1 = :h1 AND h2 = :h2 AND r1 = :r1 AND r2 = :r2", map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1"), ":r1": n("1"), ":r2": s("z")}))
		require.NoError(t, err)
		return got
	}, "under its new value")

	// A Put that replaces an indexed item with one missing a sort
	// attribute takes it out of the index; one with all of them puts it
	// back.
	put(t, c, table, without("x", "r3"))
	requireSoon(t, nil, scan, "a Put without r3 takes the item out of the index")
	put(t, c, table, without("x", "r1"))
	requireSoon(t, nil, scan, "nor is it in with r3 but without r1")
	item := without("x", "")
	item["r2"] = s("z")
	put(t, c, table, item)
	requireSoon(t, []string{"x"}, scan, "a Put with every key attribute puts it back")

	// The item as read has no hidden attribute.
	g, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key})
	require.NoError(t, err)
	require.Len(t, g.Item, 6)

	// Writes DynamoDB refuses: a key attribute of the wrong type, or empty.
	for name, bad := range map[string]types.AttributeValue{"wrong type": s("1"), "empty": nil} {
		it := map[string]types.AttributeValue{"p": s("bad")}
		for k, v := range full {
			it[k] = v
		}
		if bad != nil {
			it["r1"] = bad
		} else {
			it["r2"] = s("")
		}
		_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
		requireValidation(t, err, "", name)
	}
}

func TestTransactionsAndBatches(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	c := ddbtest.MultiKey(t)
	table := mkTable(t, c, types.ProjectionTypeAll)
	item := func(p, r2 string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"p": s(p), "h1": s("a"), "h2": n("1"), "r1": n("1"), "r2": s(r2), "r3": b(1)}
	}
	_, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: item("t1", "m")}},
	}})
	require.NoError(t, err)
	_, err = c.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: item("b1", "n")}}},
	}})
	require.NoError(t, err)
	_, err = c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"p": s("t1")},
			UpdateExpression: aws.String("SET r2 = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("o")}}},
	}})
	require.NoError(t, err)
	in := kq(table, "h1 = :h1 AND h2 = :h2 AND r1 = :r1", map[string]types.AttributeValue{":h1": s("a"), ":h2": n("1"), ":r1": n("1")})
	got, err := query(t, c, in)
	require.NoError(t, err)
	require.Equal(t, []string{"b1", "t1"}, got, "n < o")
}

// TestUpdateTableAddsAndBackfills adds a multi-attribute GSI to a table
// with items, which DynamoDB backfills (Developer Guide, "Using Global
// Secondary Indexes in DynamoDB", section "Multi-attribute key schema",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys),
// leaving out the items that miss a key attribute, and checks that
// UpdateTable obeys the key schema rules CreateTable does.
func TestUpdateTableAddsAndBackfills(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	c := ddbtest.MultiKey(t)
	name := ddbtest.Name(t, "mkadd")
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		KeySchema: ks("HASH p"), AttributeDefinitions: []types.AttributeDefinition{def("p", "S")}})
	for i, r := range []string{"3", "1", "2"} {
		put(t, c, name, map[string]types.AttributeValue{"p": s(fmt.Sprint("x", i)), "g": s("G"), "z": n("0"), "r": n(r), "q": s("k")})
	}
	put(t, c, name, map[string]types.AttributeValue{"p": s("nog"), "z": n("0"), "r": n("1"), "q": s("k")})
	put(t, c, name, map[string]types.AttributeValue{"p": s("noq"), "g": s("G"), "z": n("0"), "r": n("1")})
	_, err := c.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{def("g", "S"), def("z", "N"), def("r", "N"), def("q", "S")},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("gsi"), KeySchema: ks("HASH g", "HASH z", "RANGE r", "RANGE q"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	require.NoError(t, err)
	waitIndex(t, c, name)
	got, err := query(t, c, dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("gsi"),
		KeyConditionExpression: aws.String("g = :g AND z = :z"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G"), ":z": n("0")}})
	require.NoError(t, err)
	require.Equal(t, []string{"x1", "x2", "x0"}, got, "the existing items, by r")
	requireSoon(t, []string{"x0", "x1", "x2"}, func() []string { return scanIndex(t, c, name, "gsi") },
		"the backfilled index holds no item that misses a key attribute")

	// An added multi-attribute GSI obeys the key schema rules too.
	_, err = c.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{def("g", "S"), def("r", "N")},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("gsi2"), KeySchema: ks("RANGE r", "HASH g"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	requireValidation(t, err, "HASH", "RANGE before HASH in UpdateTable")
	_, err = c.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{def("g", "S"), def("r", "N"), def("z", "N")},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("gsi2"), KeySchema: ks("HASH g", "RANGE r", "HASH z"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	requireValidation(t, err, "HASH", "HASH, RANGE, HASH in UpdateTable")
	_, err = c.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{def("g", "S"), def("r", "N")},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("gsi2"), KeySchema: ks("HASH g", "HASH w", "RANGE r"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	requireValidation(t, err, "AttributeDefinition", "a key attribute without an AttributeDefinitions entry in UpdateTable")
}

// waitIndex waits until every GSI of the table is ACTIVE (DynamoDB
// backfills an added GSI before it is).
func waitIndex(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		require.NoError(t, err)
		active := true
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("index of %s not ACTIVE: %v", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

package ddbindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of the native-gsi form: a GSI whose key is the model's own
// attributes, one key attribute per component (DynamoDB's multi-attribute
// keys: up to four partition and four sort attributes, each keeping its
// type). A query's sort condition becomes equalities on leading attributes
// and at most one other condition on the next, as DynamoDB requires; a
// condition that needs more is refused before any request.

// ngItem keeps a softdelete base table with two forms of one index over
// (S, N, T): the native-gsi, and the derived gsi of the same components.
type ngItem struct {
	_     TableSpec `ddbindex:"ngitems,softdelete"`
	_     IndexSpec `ddbindex:"nat,type=native-gsi,name=ngitems-nat"`
	_     IndexSpec `ddbindex:"comp,type=gsi,name=ngitems-comp"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Group string    `dynamodbav:"grp" ddbindex:"nat.pk:0;comp.pk:0"`
	Zone  int64     `dynamodbav:"zone" ddbindex:"nat.pk:1;comp.pk:1"`
	S     string    `dynamodbav:"s" ddbindex:"nat.sk:0;comp.sk:0"`
	N     int64     `dynamodbav:"n" ddbindex:"nat.sk:1;comp.sk:1"`
	T     []byte    `dynamodbav:"t" ddbindex:"nat.sk:2;comp.sk:2"`
	Note  string    `dynamodbav:"note"`
}

func TestNativeGSIDeclaration(t *testing.T) {
	t.Parallel()
	s, err := schemaFor(reflect.TypeOf(ngItem{}))
	require.NoError(t, err)
	d := s.byName["nat"]
	require.Equal(t, NativeGSI, d.kind)
	require.False(t, d.uniqueSort, "DynamoDB orders ties of a multi-attribute key")
	require.False(t, d.onBaseItem(d.pk), "no derived attribute")
	require.False(t, d.onBaseItem(d.sk), "no derived attribute")

	tb, err := New[ngItem](kiFailingClient{t})
	require.NoError(t, err)
	in := tb.spec().CreateTableInputs(false)[0]
	var gsi *types.GlobalSecondaryIndex
	for i := range in.GlobalSecondaryIndexes {
		if aws.ToString(in.GlobalSecondaryIndexes[i].IndexName) == "ngitems-nat" {
			gsi = &in.GlobalSecondaryIndexes[i]
		}
	}
	require.NotNil(t, gsi)
	var ks []string
	for _, e := range gsi.KeySchema {
		ks = append(ks, string(e.KeyType)+" "+aws.ToString(e.AttributeName))
	}
	require.Equal(t, []string{"HASH grp", "HASH zone", "RANGE s", "RANGE n", "RANGE t"}, ks, "every HASH element before every RANGE element, in declaration order")
	defs := map[string]types.ScalarAttributeType{}
	for _, a := range in.AttributeDefinitions {
		defs[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	for a, typ := range map[string]types.ScalarAttributeType{"grp": "S", "zone": "N", "s": "S", "n": "N", "t": "B"} {
		require.Equal(t, typ, defs[a], "attribute %s keeps its own type", a)
	}

	// Sharded: the shard is a partition attribute of its own (a Number, kept
	// on the base item), and the sort attributes end with the base key.
	s, err = schemaFor(reflect.TypeOf(ngSharded{}))
	require.NoError(t, err)
	d = s.byName["nat"]
	require.True(t, d.uniqueSort, "the sort attributes end with the base key")
	require.Equal(t, []*keyAttr{d.shardAttr()}, d.derivedAttrs(), "the shard attribute alone is derived")
	shd, err := New[ngSharded](kiFailingClient{t})
	require.NoError(t, err)
	in = shd.spec().CreateTableInputs(false)[0]
	ks = nil
	for _, g := range in.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "ngsharded-nat" {
			for _, e := range g.KeySchema {
				ks = append(ks, string(e.KeyType)+" "+aws.ToString(e.AttributeName))
			}
		}
	}
	require.Equal(t, []string{"HASH grp", "HASH zone", "HASH _nat_shard", "RANGE s", "RANGE n", "RANGE t", "RANGE id"}, ks)
	for _, a := range in.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == "_nat_shard" {
			require.Equal(t, types.ScalarAttributeTypeN, a.AttributeType)
		}
	}

	// What a native-gsi cannot hold is refused, naming what to do instead.
	bad := map[string]any{
		"five sort components": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk"`
			A  string    `dynamodbav:"a" ddbindex:"x.sk:0"`
			B  string    `dynamodbav:"b" ddbindex:"x.sk:1"`
			C  string    `dynamodbav:"c" ddbindex:"x.sk:2"`
			D  string    `dynamodbav:"d" ddbindex:"x.sk:3"`
			E  string    `dynamodbav:"e" ddbindex:"x.sk:4"`
		}{},
		"five partition components": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			A  string    `dynamodbav:"a" ddbindex:"x.pk:0"`
			B  string    `dynamodbav:"b" ddbindex:"x.pk:1"`
			C  string    `dynamodbav:"c" ddbindex:"x.pk:2"`
			D  string    `dynamodbav:"d" ddbindex:"x.pk:3"`
			E  string    `dynamodbav:"e" ddbindex:"x.pk:4"`
		}{},
		"a time.Time component": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk"`
			At time.Time `dynamodbav:"at" ddbindex:"x.sk"`
		}{},
		"a labelled component": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk,label=G"`
		}{},
		"kept beside a gsi of the same name": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"by_x,type=gsi,keep=native-gsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"by_x.pk"`
			S  string    `dynamodbav:"s" ddbindex:"by_x.sk:0"`
			N  int64     `dynamodbav:"n" ddbindex:"by_x.sk:1"`
		}{},
		"sharded, four partition components and the shard": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi,shards=4"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			A  string    `dynamodbav:"a" ddbindex:"x.pk:0"`
			B  string    `dynamodbav:"b" ddbindex:"x.pk:1"`
			C  string    `dynamodbav:"c" ddbindex:"x.pk:2"`
			D  string    `dynamodbav:"d" ddbindex:"x.pk:3"`
			S  string    `dynamodbav:"s" ddbindex:"x.sk"`
		}{},
		"sharded, four sort components and the base key": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi,shards=4"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk"`
			A  string    `dynamodbav:"a" ddbindex:"x.sk:0"`
			B  string    `dynamodbav:"b" ddbindex:"x.sk:1"`
			C  string    `dynamodbav:"c" ddbindex:"x.sk:2"`
			D  string    `dynamodbav:"d" ddbindex:"x.sk:3"`
		}{},
		"sharded, no sort component": struct {
			_  TableSpec `ddbindex:"ng-bad"`
			_  IndexSpec `ddbindex:"x,type=native-gsi,shards=4"`
			ID string    `dynamodbav:"id" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk"`
		}{},
		"sharded, a base key component of no native type": struct {
			_  TableSpec `ddbindex:"ng-bad,pk=pk"`
			_  IndexSpec `ddbindex:"x,type=native-gsi,shards=4"`
			At time.Time `dynamodbav:"at" ddbindex:"pk"`
			G  string    `dynamodbav:"g" ddbindex:"x.pk"`
			S  string    `dynamodbav:"s" ddbindex:"x.sk"`
		}{},
	}
	for name, m := range bad {
		_, err := schemaFor(reflect.TypeOf(m))
		require.ErrorIs(t, err, ErrDeclaration, name)
		require.Contains(t, err.Error(), "native-gsi", name)
		t.Logf("%s: %v", name, err)
	}
}

// TestNativeGSIKeyConditions: each sort condition becomes DynamoDB's
// multi-attribute key condition: = on every partition attribute, = on
// leading sort attributes, and at most one other operator, on the next.
func TestNativeGSIKeyConditions(t *testing.T) {
	t.Parallel()
	tb, err := New[ngItem](kiFailingClient{t})
	require.NoError(t, err)
	for _, c := range []struct {
		cond SortCondition
		want string
	}{
		{SortCondition{}, "grp = g AND zone = 7"},
		{Eq("a"), "grp = g AND zone = 7 AND s = a"},
		{Eq("a", 5), "grp = g AND zone = 7 AND s = a AND n = 5"},
		{Eq("a", 5, []byte("x")), "grp = g AND zone = 7 AND s = a AND n = 5 AND t = x"},
		{Lt("a"), "grp = g AND zone = 7 AND s < a"},
		{Le("a"), "grp = g AND zone = 7 AND s <= a"},
		{Gt("a"), "grp = g AND zone = 7 AND s > a"},
		{Ge("a"), "grp = g AND zone = 7 AND s >= a"},
		{Between("a", "b"), "grp = g AND zone = 7 AND s BETWEEN a AND b"},
		{Between(K("a", -5), K("a", 9)), "grp = g AND zone = 7 AND s = a AND n BETWEEN -5 AND 9"},
		{Between(K("a"), K("a", 9)), "grp = g AND zone = 7 AND s = a AND n <= 9"},
		{Between(K("a", 9), K("a")), "grp = g AND zone = 7 AND s = a AND n >= 9"},
		{Between(K("a", 9), K("a", 9)), "grp = g AND zone = 7 AND s = a AND n = 9"},
		{BeginsWith("a"), "grp = g AND zone = 7 AND begins_with s, a"},
		{BeginsWith("a", 5, []byte("x")), "grp = g AND zone = 7 AND s = a AND n = 5 AND t BETWEEN x AND x\xff"},
	} {
		ex, err := tb.Query("nat", "g", 7).Where(c.cond).Explain()
		require.NoError(t, err, "%v", c.cond)
		require.Equal(t, c.want, ngRender(ex.Request.Input), "%v", c.cond)
	}
}

// ngRender renders a Query's key condition with its names and values put
// in and no parentheses; a Binary value as its bytes, cut after the first
// 0xFF.
func ngRender(in *dynamodb.QueryInput) string {
	s := strings.NewReplacer("(", "", ")", "").Replace(aws.ToString(in.KeyConditionExpression))
	keys := make([]string, 0, len(in.ExpressionAttributeNames)+len(in.ExpressionAttributeValues))
	for k := range in.ExpressionAttributeNames {
		keys = append(keys, k)
	}
	for k := range in.ExpressionAttributeValues {
		keys = append(keys, k)
	}
	// Longest first: #10 before #1.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		if n, ok := in.ExpressionAttributeNames[k]; ok {
			s = strings.ReplaceAll(s, k, n)
			continue
		}
		var v string
		switch x := in.ExpressionAttributeValues[k].(type) {
		case *types.AttributeValueMemberS:
			v = x.Value
		case *types.AttributeValueMemberN:
			v = x.Value
		case *types.AttributeValueMemberB:
			v = string(x.Value)
			if i := strings.IndexByte(v, 0xFF); i >= 0 {
				v = v[:i+1]
			}
		}
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// TestNativeGSIInvalidQueries: a condition the native-gsi cannot express is
// refused before any request, from Page, All and Exists, with a reason that
// says what to use instead; so is a filter on a key attribute of the index,
// which DynamoDB refuses.
func TestNativeGSIInvalidQueries(t *testing.T) {
	t.Parallel()
	tb, err := New[ngItem](kiFailingClient{t})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		q    Query[ngItem]
		hint string
	}{
		"a tuple range":                  {tb.Query("nat", "g", 7).Where(Lt("a", 5)), "Between"},
		"a tuple lower bound":            {tb.Query("nat", "g", 7).Where(Ge("a", 5)), "Between"},
		"a range over two components":    {tb.Query("nat", "g", 7).Where(Between(K("a", 1), K("b", 2))), "same leading values"},
		"a range before an equality":     {tb.Query("nat", "g", 7).Where(Between(K("a", 1, []byte("x")), K("a", 2, []byte("x")))), "same leading values"},
		"begins_with on a Number":        {tb.Query("nat", "g", 7).Where(BeginsWith("a", "1")), "Between"},
		"an empty String value":          {tb.Query("nat", "g", 7).Where(Eq("")), "empty"},
		"an empty partition value":       {tb.Query("nat", "", 7), "empty"},
		"a missing partition attribute":  {tb.Query("nat", "g"), "partition"},
		"a filter on a sort attribute":   {tb.Query("nat", "g", 7).Filter(expression.Name("n").GreaterThan(expression.Value(1))), "key attribute"},
		"a filter on a partition attr":   {tb.Query("nat", "g", 7).Filter(expression.Name("zone").Equal(expression.Value(1))), "key attribute"},
		"a consistent read":              {tb.Query("nat", "g", 7).ConsistentRead(), "consistent"},
		"a Number out of DynamoDB range": {tb.Query("nat", "g", 7).Where(Eq("a", uint64(math.MaxUint64))), ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kiRequireInvalid(t, c.q)
			_, err := c.q.Explain()
			if err == nil {
				_, err = c.q.Page(t.Context())
			}
			require.ErrorIs(t, err, ErrInvalidQuery)
			require.Contains(t, err.Error(), c.hint)
		})
	}
	// The same filter is fine on the derived form, whose key attributes are
	// derived ones.
	_, err = tb.Query("comp", "g", 7).Filter(expression.Name("n").GreaterThan(expression.Value(1))).Explain()
	require.NoError(t, err)
}

// ngGenerate returns items of partitions (g, 7) and look-alikes, with no
// empty String or Binary value (DynamoDB refuses one in a key attribute),
// and which of them are deleted: each item of (g, 7) with probability dead.
func ngGenerate(dead float64) (items []ngItem, deleted []bool) {
	r := rand.New(rand.NewPCG(5, 11))
	strs := slices.DeleteFunc(slices.Clone(kiStrings), func(s string) bool { return s == "" })
	tails := [][]byte{{0}, {1}, {0x7F}, {0x80}, {0xFF}, {0, 0}, {'a'}, {'a', 0}, {'a', 0xFF}, {'b'}}
	n := 0
	mk := func(g string, zone int64) ngItem {
		n++
		return ngItem{ID: fmt.Sprintf("id%03d", n), Group: g, Zone: zone,
			S: strs[r.IntN(len(strs))], N: kiInts[r.IntN(len(kiInts))], T: tails[r.IntN(len(tails))], Note: fmt.Sprint("note ", n)}
	}
	for range 90 {
		items = append(items, mk("g", 7))
		deleted = append(deleted, r.Float64() < dead)
	}
	for range 8 { // equal keys: DynamoDB orders the ties
		o := items[r.IntN(len(items))]
		it := mk("g", 7)
		it.S, it.N, it.T = o.S, o.N, o.T
		items = append(items, it)
		deleted = append(deleted, false)
	}
	for _, p := range []struct {
		g    string
		zone int64
	}{{"g", 8}, {"g", -7}, {"h", 7}, {"g\x00", 7}} {
		for range 4 {
			items = append(items, mk(p.g, p.zone))
			deleted = append(deleted, false)
		}
	}
	return items, deleted
}

// ngCases are the conditions the native-gsi can express, over the values
// the data holds and some it does not.
func ngCases(live []ngItem) []kiCase {
	var cs []kiCase
	for _, s := range []string{"#", "$", "a", "a#b", "op", "open", "\U0010FFFF", "zzz"} {
		cs = append(cs, kiAllOps(s)...)
		cs = append(cs, kiBW(s))
	}
	for _, it := range live[:12] {
		cs = append(cs, kiEq(it.S, it.N), kiEq(it.S, it.N, it.T),
			kiBtw(K(it.S, int64(-10)), K(it.S, int64(100))), kiBtw(K(it.S), K(it.S, it.N)), kiBtw(K(it.S, it.N), K(it.S)),
			kiBtw(K(it.S, it.N, []byte{0}), K(it.S, it.N, []byte{'a'})), kiBW(it.S, it.N, []byte{'a'}), kiBW(it.S, it.N, []byte{0}))
	}
	cs = append(cs, kiBtw(K("#"), K("b")), kiBtw(K("a"), K("a")), kiBtw(K("a", int64(math.MinInt64)), K("a", int64(math.MaxInt64))))
	return cs
}

// ngKey is an item's sort components.
func ngKey(it ngItem) []any { return []any{it.S, it.N, it.T} }

// ngLoad writes items through tb (Put, then Delete for the deleted ones)
// and returns the live items of partition (g, 7).
func ngLoad[T any](t *testing.T, tb *Table[T], items []ngItem, deleted []bool, mk func(ngItem) T) []ngItem {
	t.Helper()
	var live []ngItem
	for i, it := range items {
		_, err := tb.Put(t.Context(), mk(it))
		require.NoError(t, err)
		switch {
		case deleted[i]:
			require.NoError(t, tb.Delete(t.Context(), mk(it)))
		case it.Group == "g" && it.Zone == 7:
			live = append(live, it)
		}
	}
	return live
}

// ngOne is a native-gsi of one partition and one sort attribute: the key
// schema of a plain GSI on native attributes, which every server serves.
type ngOne struct {
	_    TableSpec `ddbindex:"ngone,softdelete"`
	_    IndexSpec `ddbindex:"by_rank,type=native-gsi"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed *string   `dynamodbav:"feed,omitempty" ddbindex:"by_rank.pk"`
	Rank int64     `dynamodbav:"rank" ddbindex:"by_rank.sk"`
}

// TestNativeGSIOneAttribute: reads against the ground truth, and the
// write side: an Update that changes a key attribute moves the item in the
// index, one that removes it (a nil Feed) takes the item out (DynamoDB's
// sparse rule), a Delete leaves a tombstone the reads skip.
func TestNativeGSIOneAttribute(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[ngOne](t)
	ctx := t.Context()
	f := func(s string) *string { return &s }
	var live []ngOne
	for i := range 40 {
		it := ngOne{ID: fmt.Sprintf("i%02d", i), Feed: f("f"), Rank: int64(i%13 - 6)}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		switch {
		case i%5 == 0:
			require.NoError(t, tb.Delete(ctx, it))
		case i%7 == 0:
			it.Feed = nil // out of the index
			_, err := tb.Put(ctx, it)
			require.NoError(t, err)
		case i%11 == 0:
			it.Rank = 100 // moved within it
			_, err := tb.Put(ctx, it)
			require.NoError(t, err)
			live = append(live, it)
		default:
			live = append(live, it)
		}
	}
	ix := &kiIndex[ngOne]{tb: tb, index: "by_rank", part: []any{"f"}, items: live,
		key: func(it ngOne) []any { return []any{it.Rank} },
		id:  func(it ngOne) string { return it.ID }}
	var cases []kiCase
	for _, n := range []int64{-7, -6, 0, 3, 6, 100} {
		cases = append(cases, kiAllOps(n)...)
	}
	cases = append(cases, kiBtw(K(int64(-2)), K(int64(2))))
	ix.run(t, cases)
}

// ngMulti has a native-gsi of two partition and two sort attributes, one of
// them a pointer: an item without it is not in the index.
type ngMulti struct {
	_     TableSpec `ddbindex:"ngmulti,softdelete"`
	_     IndexSpec `ddbindex:"by_slot,type=native-gsi,name=ngmulti-slot"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Org   string    `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year  int64     `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room  *string   `dynamodbav:"room,omitempty" ddbindex:"by_slot.sk:0"`
	Slot  int64     `dynamodbav:"slot" ddbindex:"by_slot.sk:1"`
	Title string    `dynamodbav:"title"`
}

// TestNativeGSIMultiAttributeWrites follows items through Put, Update and
// Delete on a multi-attribute native-gsi (served by the multikey double on
// the local servers): an Update moves the entry, an Update that removes a
// key attribute takes the item out of the index and one that sets it puts
// it back, a tombstone is never returned, and Explain shows the request.
func TestNativeGSIMultiAttributeWrites(t *testing.T) {
	t.Parallel()
	t.Run("unsharded", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTableOn[ngMulti](t, ddbtest.MultiKey(t))
		ngMultiWrites(t, tb, func(m ngMulti) ngMulti { return m })
	})
	t.Run("sharded", func(t *testing.T) {
		t.Parallel()
		c := ddbtest.MultiKey(t)
		tb, _ := newTestTableOn[ngMultiSharded](t, c)
		ngMultiWrites(t, tb, func(m ngMulti) ngMultiSharded { return ngMultiSharded(m) })
		// Every base item holds its shard, in the index or not, so that an
		// Update that sets a missing key attribute brings it in.
		out, err := c.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(tb.TableName())})
		require.NoError(t, err)
		require.NotEmpty(t, out.Items)
		for _, it := range out.Items {
			require.Contains(t, it, "_by_slot_shard", "item %v", it["id"])
		}
	})
}

// ngMultiSharded is ngMulti with its native-gsi sharded 3 ways.
type ngMultiSharded struct {
	_     TableSpec `ddbindex:"ngmultish,softdelete"`
	_     IndexSpec `ddbindex:"by_slot,type=native-gsi,name=ngmultish-slot,shards=3"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Org   string    `dynamodbav:"org" ddbindex:"by_slot.pk:0"`
	Year  int64     `dynamodbav:"year" ddbindex:"by_slot.pk:1"`
	Room  *string   `dynamodbav:"room,omitempty" ddbindex:"by_slot.sk:0"`
	Slot  int64     `dynamodbav:"slot" ddbindex:"by_slot.sk:1"`
	Title string    `dynamodbav:"title"`
}

// ngMultiWrites is TestNativeGSIMultiAttributeWrites on tb, whose model is
// ngMulti's twin (mk converts).
func ngMultiWrites[T any](t *testing.T, tb *Table[T], mk func(ngMulti) T) {
	ctx := t.Context()
	room := func(s string) *string { return &s }
	ids := func(q Query[T]) []string {
		t.Helper()
		var out []string
		for it, err := range q.All(ctx) {
			require.NoError(t, err)
			out = append(out, reflect.ValueOf(it).FieldByName("ID").String())
		}
		return out
	}
	for i, r := range []string{"b", "a", "b", "a", "c"} {
		_, err := tb.Put(ctx, mk(ngMulti{ID: fmt.Sprint("i", i), Org: "o", Year: 2026, Room: room(r), Slot: int64(10 - i), Title: "t"}))
		require.NoError(t, err)
	}
	_, err := tb.Put(ctx, mk(ngMulti{ID: "other", Org: "o", Year: 2025, Room: room("a"), Slot: 1}))
	require.NoError(t, err)
	q := tb.Query("by_slot", "o", int64(2026))
	require.Equal(t, []string{"i3", "i1", "i2", "i0", "i4"}, ids(q), "by room, then slot")
	require.Equal(t, []string{"i2", "i0"}, ids(q.Where(Eq("b"))))
	require.Equal(t, []string{"i0"}, ids(q.Where(Between(K("b", int64(9)), K("b", int64(20))))))

	// An Update of a key attribute moves the entry; removing one takes the
	// item out of the index; setting it again puts it back.
	require.NoError(t, tb.Update(ctx, mk(ngMulti{ID: "i0"}), Set("room", "a")))
	require.Equal(t, []string{"i3", "i1", "i0"}, ids(q.Where(Eq("a"))))
	require.NoError(t, tb.Update(ctx, mk(ngMulti{ID: "i3"}), Remove("room")))
	require.Equal(t, []string{"i1", "i0"}, ids(q.Where(Eq("a"))))
	got, err := tb.Get(ctx, mk(ngMulti{ID: "i3"}))
	require.NoError(t, err)
	require.Nil(t, reflect.ValueOf(got).FieldByName("Room").Interface().(*string), "the item is still there, without its room")
	require.NoError(t, tb.Update(ctx, mk(ngMulti{ID: "i3"}), Set("room", "c").Set("slot", int64(0))))
	require.Equal(t, []string{"i3", "i4"}, ids(q.Where(Eq("c"))))

	// A tombstone stays in the index (the model is softdelete) and is
	// filtered out; IncludeDeleted returns it.
	require.NoError(t, tb.Delete(ctx, mk(ngMulti{ID: "i4"})))
	require.Equal(t, []string{"i3"}, ids(q.Where(Eq("c"))))
	require.Equal(t, []string{"i3", "i4"}, ids(q.Where(Eq("c")).IncludeDeleted()))

	// Pages of one follow their cursors across the whole index.
	var paged []string
	cursor := ""
	for {
		p, err := q.Limit(1).After(cursor).Page(ctx)
		require.NoError(t, err)
		for _, it := range p.Items {
			paged = append(paged, reflect.ValueOf(it).FieldByName("ID").String())
		}
		if p.Cursor == "" {
			break
		}
		cursor = p.Cursor
	}
	require.Equal(t, ids(q), paged)

	e, err := q.Where(Between(K("b", int64(9)), K("b", int64(20)))).Explain()
	require.NoError(t, err)
	require.Contains(t, e.String(), `(org = "o") AND (year = 2026) AND (room = "b") AND (slot BETWEEN 9 AND 20)`)
	if sharded := tb.s.byName["by_slot"].pk.shards > 0; sharded {
		// Every shard's request names its shard first.
		require.Contains(t, e.String(), `KeyCondition: (_by_slot_shard = 0) AND (org = "o")`)
	}
}

// TestNativeGSIGroundTruth reads a multi-attribute native-gsi (two partition
// attributes, sort attributes of types S, N and B, served by the multikey
// double on the local servers) and the derived gsi of the same components
// against a brute-force answer: every condition the native form can
// express, both orders, All, Exists, and pages of 1, 3 and 7 followed by
// their cursors, at tombstone densities 0.25 and 0.9 in the partition read.
func TestNativeGSIGroundTruth(t *testing.T) {
	t.Parallel()
	for _, dead := range []float64{0.25, 0.9} {
		t.Run(fmt.Sprint("dead=", dead), func(t *testing.T) {
			t.Parallel()
			tb, _ := newTestTableOn[ngItem](t, ddbtest.MultiKey(t))
			items, deleted := ngGenerate(dead)
			live := ngLoad(t, tb, items, deleted, func(it ngItem) ngItem { return it })
			require.NotEmpty(t, live)
			cases := ngCases(live)
			if dead > 0.5 {
				cases = cases[:40] // the conditions on the first component, at few live items
			}
			for _, index := range []string{"nat", "comp"} {
				t.Run(index, func(t *testing.T) {
					t.Parallel()
					ix := &kiIndex[ngItem]{tb: tb, index: index, part: []any{"g", int64(7)}, items: live, key: ngKey,
						id: func(it ngItem) string { return it.ID }}
					if index == "comp" {
						ix.tie = func(it ngItem) []any { return []any{it.ID} } // a derived key ends with the base key
					}
					ix.run(t, cases)
				})
			}
		})
	}
}

// ngSharded is ngItem with its native-gsi sharded 4 ways (a shard attribute
// of its own beside the two partition attributes, and the base key id after
// the three sort attributes) and its derived twin sharded 3 ways.
type ngSharded struct {
	_     TableSpec `ddbindex:"ngsharded,softdelete"`
	_     IndexSpec `ddbindex:"nat,type=native-gsi,name=ngsharded-nat,shards=4"`
	_     IndexSpec `ddbindex:"comp,type=gsi,name=ngsharded-comp,shards=3"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Group string    `dynamodbav:"grp" ddbindex:"nat.pk:0;comp.pk:0"`
	Zone  int64     `dynamodbav:"zone" ddbindex:"nat.pk:1;comp.pk:1"`
	S     string    `dynamodbav:"s" ddbindex:"nat.sk:0;comp.sk:0"`
	N     int64     `dynamodbav:"n" ddbindex:"nat.sk:1;comp.sk:1"`
	T     []byte    `dynamodbav:"t" ddbindex:"nat.sk:2;comp.sk:2"`
	Note  string    `dynamodbav:"note"`
}

// TestNativeGSIShardedGroundTruth is TestNativeGSIGroundTruth on a sharded
// native-gsi (served by the multikey double on the local servers) and a
// sharded derived twin: both merge their shards into the order of the
// unsharded index, ties (equal S, N, T) ordered by the base key, which ends
// the sort key of either.
func TestNativeGSIShardedGroundTruth(t *testing.T) {
	t.Parallel()
	for _, dead := range []float64{0.25, 0.9} {
		t.Run(fmt.Sprint("dead=", dead), func(t *testing.T) {
			t.Parallel()
			tb, _ := newTestTableOn[ngSharded](t, ddbtest.MultiKey(t))
			items, deleted := ngGenerate(dead)
			plain := ngLoad(t, tb, items, deleted, func(it ngItem) ngSharded { return ngSharded(it) })
			require.NotEmpty(t, plain)
			var live []ngSharded
			for _, it := range plain {
				live = append(live, ngSharded(it))
			}
			cases := ngCases(plain)
			if dead > 0.5 {
				cases = cases[:40]
			}
			for _, index := range []string{"nat", "comp"} {
				t.Run(index, func(t *testing.T) {
					t.Parallel()
					ix := &kiIndex[ngSharded]{tb: tb, index: index, part: []any{"g", int64(7)}, items: live,
						key: func(it ngSharded) []any { return []any{it.S, it.N, it.T} },
						tie: func(it ngSharded) []any { return []any{it.ID} },
						id:  func(it ngSharded) string { return it.ID }}
					ix.run(t, cases)
				})
			}
		})
	}
}

// TestNativeGSIShardedBackfill: items written before a sharded native-gsi
// was declared lack its shard attribute, so the index does not hold them;
// a backfill writes the shard on every item (in the index or not), and a
// second one finds nothing to change.
func TestNativeGSIShardedBackfill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.MultiKey(t)
	tb, _ := newTestTableOn[ngMultiSharded](t, c)
	room := func(s string) *string { return &s }
	var want []string
	for i := range 12 {
		it := ngMultiSharded{ID: fmt.Sprintf("b%02d", i), Org: "o", Year: 2026, Slot: int64(i)}
		if i%4 != 3 {
			it.Room = room("r") // the others are not in the index
			want = append(want, it.ID)
		}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(tb.TableName()), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: it.ID}},
			UpdateExpression: aws.String("REMOVE #s"), ExpressionAttributeNames: map[string]string{"#s": "_by_slot_shard"},
		})
		require.NoError(t, err)
	}
	ids := func() []string {
		var out []string
		for it, err := range tb.Query("by_slot", "o", int64(2026)).All(ctx) {
			require.NoError(t, err)
			out = append(out, it.ID)
		}
		return out
	}
	require.Empty(t, ids(), "without the shard attribute no item is in the index")
	st, err := fillIndex(ctx, tb, c, "by_slot")
	require.NoError(t, err)
	require.Equal(t, 12, st.Written, "the shard is written on every item: %+v", st)
	require.Equal(t, want, ids())
	st, err = fillIndex(ctx, tb, c, "by_slot")
	require.NoError(t, err)
	require.Equal(t, 0, st.Written, "%+v", st)
	// An Update that sets the missing key attribute brings an item in.
	require.NoError(t, tb.Update(ctx, ngMultiSharded{ID: "b03"}, Set("room", "r")))
	require.Contains(t, ids(), "b03")
}

package ddbindex

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// DynamoDB's Number type (Amazon DynamoDB Developer Guide, "Supported data
// types and naming rules", Number): up to 38 digits of precision; positive
// numbers from 1E-130 to 9.9999999999999999999999999999999999999E+125,
// negative ones from -9.9999999999999999999999999999999999999E+125 to
// -1E-130; and 0. NaN and infinities are not numbers it holds.

func TestCheckNumber(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"0", "-0", "0.000", "1", "-17", "+3", "1.5", ".5", "5.", "1e5", "1E-5",
		"12345678901234567890123456789012345678",   // 38 significant digits
		"1234567890123456789012345678901234567800", // 38, then trailing zeros
		"0.00012345678901234567890123456789012345678",
		"1E-130", "-1e-130", "9.9999999999999999999999999999999999999E+125", "-9.9999999999999999999999999999999999999E+125",
		"1" + strings.Repeat("0", 125), "0." + strings.Repeat("0", 129) + "1", "100e-132"} {
		require.NoError(t, checkNumber(ok), ok)
	}
	for _, bad := range []struct{ n, want string }{
		{"NaN", "not a number"}, {"nan", "not a number"}, {"", "not a number"}, {".", "not a number"}, {"abc", "not a number"},
		{"1.2.3", "not a number"}, {"1e", "not a number"}, {"1e+", "not a number"}, {"--1", "not a number"}, {"0x10", "not a number"},
		{"+Inf", "outside the range"}, {"-Inf", "outside the range"}, {"Infinity", "outside the range"},
		{"123456789012345678901234567890123456789", "39 significant digits"},
		{"1.23456789012345678901234567890123456789", "39 significant digits"},
		{"1E-131", "outside the range"}, {"9E-131", "outside the range"}, {"1E+126", "outside the range"}, {"-1E+126", "outside the range"},
		{"1" + strings.Repeat("0", 126), "outside the range"}, {"0." + strings.Repeat("0", 130) + "1", "outside the range"},
		{"1e99999999999999999999", "outside the range"}, {"1e-99999999999999999999", "outside the range"},
	} {
		err := checkNumber(bad.n)
		require.Error(t, err, bad.n)
		require.ErrorContains(t, err, bad.want, bad.n)
	}
	// attributevalue writes NaN and the infinities as these texts in an N.
	for f, text := range map[float64]string{math.NaN(): "NaN", math.Inf(1): "+Inf", math.Inf(-1): "-Inf"} {
		av, err := attributevalue.Marshal(f)
		require.NoError(t, err)
		require.Equal(t, &types.AttributeValueMemberN{Value: text}, av)
		require.Error(t, checkNumber(text))
	}
}

// nvItem has Numbers everywhere an item may hold one: a float field, a list,
// a map, a number set, a nested struct, and a Number of any text.
type nvItem struct {
	_     TableSpec              `ddbindex:"nv-items"`
	_     IndexSpec              `ddbindex:"by_team,type=table"`
	ID    string                 `dynamodbav:"id" ddbindex:"pk"`
	Team  string                 `dynamodbav:"team" ddbindex:"by_team.pk"`
	Score float64                `dynamodbav:"score"`
	List  []float64              `dynamodbav:"list,omitempty"`
	Map   map[string]float64     `dynamodbav:"map,omitempty"`
	Set   []float64              `dynamodbav:"set,numberset,omitempty"`
	Inner nvInner                `dynamodbav:"inner"`
	Exact attributevalue.Number  `dynamodbav:"exact,omitempty"`
	Deep  map[string][]nvInner   `dynamodbav:"deep,omitempty"`
	Refs  map[string]interface{} `dynamodbav:"refs,omitempty"`
}

// nvBad is a bad Number of an item, and the path the error names.
type nvBad struct {
	name string
	set  func(*nvItem)
	path string
}

type nvInner struct {
	Height float32 `dynamodbav:"height"`
}

// TestWriteRefusesNumbersDynamoDBRefuses: Put, Move and Update refuse,
// before any request and with ErrInvalidWrite naming the attribute, a
// Number DynamoDB would refuse (NaN, ±Inf, over 38 significant digits, out
// of range) wherever it is in the item or in an update's values, in every
// upkeep mode; nothing is written. What DynamoDB does store, at the edges of
// its range, is written.
func TestWriteRefusesNumbersDynamoDBRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bads := []nvBad{
		{"NaN", func(it *nvItem) { it.Score = math.NaN() }, "attribute score:"},
		{"+Inf", func(it *nvItem) { it.Score = math.Inf(1) }, "attribute score:"},
		{"-Inf in a list", func(it *nvItem) { it.List = []float64{1, math.Inf(-1)} }, "attribute list[1]:"},
		{"NaN in a map", func(it *nvItem) { it.Map = map[string]float64{"a": 1, "b": math.NaN()} }, "attribute map.b:"},
		{"+Inf in a number set", func(it *nvItem) { it.Set = []float64{2, math.Inf(1)} }, "attribute set (a number set):"},
		{"NaN in a nested struct", func(it *nvItem) { it.Inner.Height = float32(math.NaN()) }, "attribute inner.height:"},
		{"+Inf deep down", func(it *nvItem) { it.Deep = map[string][]nvInner{"x": {{1}, {float32(math.Inf(1))}}} }, "attribute deep.x[1].height:"},
		{"NaN in an interface", func(it *nvItem) { it.Refs = map[string]interface{}{"r": []interface{}{math.NaN()}} }, "attribute refs.r[0]:"},
		{"1e200", func(it *nvItem) { it.Score = 1e200 }, "outside the range of a DynamoDB Number"},
		{"1e-200", func(it *nvItem) { it.Score = -1e-200 }, "outside the range of a DynamoDB Number"},
		{"39 digits", func(it *nvItem) { it.Exact = "123456789012345678901234567890123456789" }, "attribute exact: 123456789012345678901234567890123456789 has 39 significant digits"},
	}
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			refusesNumbers(t, wt, bads)
		})
	}

	// Update's values: refused, naming the path they are written to.
	tb, c := newTestTable[nvItem](t)
	good := nvItem{ID: "a", Team: "T", Score: 1.5}
	_, err := tb.Put(ctx, good)
	require.NoError(t, err)
	stored := ddbtest.Scan(t, c, tb.TableName())
	for _, u := range []struct {
		name string
		upd  Update
		path string
	}{
		{"SET NaN", Set("score", math.NaN()), "score:"},
		{"SET +Inf nested", Set("inner.height", math.Inf(1)), "inner.height:"},
		{"SET a list holding -Inf", Set("list", []float64{1, math.Inf(-1)}), "list[1]:"},
		{"ADD NaN", Add("score", math.NaN()), "score:"},
		{"ADD to a number set", Add("set", &types.AttributeValueMemberNS{Value: []string{"1", "1e300"}}), "set (a number set):"},
		{"SET x = x + 39 digits", Set("score", expression.Name("score").Plus(expression.Value(attributevalue.Number("123456789012345678901234567890123456789")))), "score:"},
		{"list_append", Set("list", expression.ListAppend(expression.Name("list"), expression.Value([]float64{math.NaN()}))), "list[0]:"},
	} {
		err := tb.Update(ctx, good, u.upd)
		require.ErrorIs(t, err, ErrInvalidWrite, u.name)
		require.Equal(t, "DDBX-603", Code(err), "%s: %v", u.name, err)
		require.ErrorContains(t, err, u.path, u.name)
	}
	require.Equal(t, stored, ddbtest.Scan(t, c, tb.TableName()), "no update was made")
	require.NoError(t, tb.Update(ctx, good, Set("score", 1e-130)), "a value in range")
}

// refusesNumbers is one upkeep mode of TestWriteRefusesNumbersDynamoDBRefuses:
// Put and Move of each bad item, then an item at the edges of the range.
func refusesNumbers(t *testing.T, wt bool, bads []nvBad) {
	ctx := t.Context()
	tb, c := newTestTable[nvItem](t, func(o *Options) { o.WriteThrough = wt })
	good := nvItem{ID: "a", Team: "T", Score: 1.5, Inner: nvInner{Height: 2}}
	_, err := tb.Put(ctx, good)
	require.NoError(t, err)
	stored := ddbtest.Scan(t, c, tb.TableName())
	require.Len(t, stored, 1)
	for _, bad := range bads {
		it := good
		it.ID = "b"
		bad.set(&it)
		_, err := tb.Put(ctx, it)
		require.ErrorIs(t, err, ErrInvalidWrite, "%s: Put", bad.name)
		require.Equal(t, "DDBX-603", Code(err), "%s: %v", bad.name, err)
		require.ErrorContains(t, err, bad.path, bad.name)
		_, err = tb.Move(ctx, good, it)
		require.ErrorIs(t, err, ErrInvalidWrite, "%s: Move", bad.name)
		require.ErrorContains(t, err, bad.path, bad.name)
		_, err = tb.Marshal(it)
		require.ErrorIs(t, err, ErrInvalidWrite, "%s: Marshal", bad.name)
	}
	require.Equal(t, stored, ddbtest.Scan(t, c, tb.TableName()), "writeThrough=%v: nothing written", wt)
	d, err := tb.index("by_team")
	require.NoError(t, err)
	require.LessOrEqual(t, len(ddbtest.Scan(t, c, tb.tableOf(d))), 1, "writeThrough=%v: at most the good item's entry", wt)

	// The edges of the range are stored.
	edge := nvItem{ID: "e", Team: "T", Score: 1e125, List: []float64{-1e-130, 9.9e125}, Exact: "12345678901234567890123456789012345678"}
	_, err = tb.Put(ctx, edge)
	require.NoError(t, err, "writeThrough=%v", wt)
	got, err := tb.Get(ctx, nvItem{ID: "e"})
	require.NoError(t, err)
	require.Equal(t, edge.Exact, got.Exact)
	require.Equal(t, edge.List, got.List)
}

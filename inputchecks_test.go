package ddbindex

import (
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Inputs that DynamoDB would refuse, or read otherwise than the caller
// meant, are refused before any request with the sentinel of the call:
// never a DynamoDB ValidationException (ErrDynamoDB), never a silent
// change of meaning.

type icItem struct {
	_    TableSpec         `ddbindex:"inputchecks"`
	_    IndexSpec         `ddbindex:"by_g,type=gsi,sk=GSK"`
	ID   string            `dynamodbav:"id" ddbindex:"pk"`
	G    string            `dynamodbav:"g" ddbindex:"by_g.pk"`
	N    int               `dynamodbav:"n" ddbindex:"by_g.sk"`
	Body string            `dynamodbav:"body"`
	SS   []string          `dynamodbav:"ss,stringset,omitempty"`
	NS   []float64         `dynamodbav:"ns,numberset,omitempty"`
	BS   [][]byte          `dynamodbav:"bs,binaryset,omitempty"`
	M    map[string]any    `dynamodbav:"m,omitempty"`
	Tags map[string]string `dynamodbav:"tags,omitempty"`
}

// TestSetsDynamoDBRefuses: a set with a member twice (numbers compared as
// numbers: 1 and 1.0 are one member), or an empty set given as an
// attribute value, is refused by DynamoDB in an item and in an update.
func TestSetsDynamoDBRefuses(t *testing.T) {
	t.Parallel()
	cl := &wrNoClient{}
	tb, err := New[icItem](cl)
	require.NoError(t, err)
	ctx := t.Context()
	for name, item := range map[string]icItem{
		"a String set": {SS: []string{"a", "b", "a"}},
		"a Number set": {NS: []float64{1, 2, 1}},
		"a Binary set": {BS: [][]byte{{1}, {1}}},
	} {
		item.ID, item.G, item.N = "1", "g", 1
		_, err := tb.Put(ctx, item)
		require.ErrorIs(t, err, ErrInvalidWrite, name)
		require.ErrorContains(t, err, "set", name)
	}
	for name, u := range map[string]Update{
		"ADD of Numbers equal as numbers":     Add("ns", &types.AttributeValueMemberNS{Value: []string{"1", "01"}}),
		"ADD of an empty set":                 Add("ss", &types.AttributeValueMemberSS{}),
		"DELETE of a set with a member twice": Delete("bs", &types.AttributeValueMemberBS{Value: [][]byte{{}, {}}}),
		"SET to a set with a member twice":    Set("ss", &types.AttributeValueMemberSS{Value: []string{"x", "x"}}),
		"a set in a map": Set("m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"x": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNS{Value: []string{"1", "1.0"}}}}}}),
		"an empty set in a map": Set("m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberBS{}}}),
	} {
		err := tb.Update(ctx, icItem{ID: "1"}, u)
		require.ErrorIs(t, err, ErrInvalidWrite, name)
	}
	// Distinct members are fine, sets of one member too.
	_, err = tb.Marshal(icItem{ID: "1", G: "g", N: 1, SS: []string{"a", "b"}, NS: []float64{1, 1.5}, BS: [][]byte{{}, {0}}})
	require.NoError(t, err)
	require.Zero(t, cl.calls.Load(), "no request may be sent")
}

// TestFilterValuesDynamoDBRefuses: a Filter's values are checked as an
// item's are: a Number DynamoDB refuses, a String that is not UTF-8 (which
// the SDK would send with U+FFFD, comparing with another value), a set with
// a member twice.
func TestFilterValuesDynamoDBRefuses(t *testing.T) {
	t.Parallel()
	tb, err := New[icItem](nil)
	require.NoError(t, err)
	for name, c := range map[string]expression.ConditionBuilder{
		"NaN":                expression.Name("body").Equal(expression.Value(math.NaN())),
		"+Inf":               expression.Name("body").LessThan(expression.Value(math.Inf(1))),
		"39 digits":          expression.Name("body").Equal(expression.Value(&types.AttributeValueMemberN{Value: strings.Repeat("1", 39)})),
		"not UTF-8":          expression.Name("body").Equal(expression.Value("a\xffb")),
		"not UTF-8 in a map": expression.Name("m").Equal(expression.Value(map[string]string{"k\xff": "v"})),
		"a set twice":        expression.Name("ss").Equal(expression.Value(&types.AttributeValueMemberSS{Value: []string{"a", "a"}})),
		"nested in an AND":   expression.Name("body").Equal(expression.Value("x")).And(expression.Name("m.v").GreaterThan(expression.Value(math.NaN()))),
	} {
		for _, index := range []string{"", "by_g"} {
			q := tb.Query(index, "g")
			if index == "" {
				q = tb.Query(index, "1")
			}
			_, err := q.Filter(c).Explain()
			require.ErrorIs(t, err, ErrInvalidQuery, name)
		}
	}
	_, err = tb.Query("by_g", "g").Filter(expression.Name("body").Equal(expression.Value("ok"))).Explain()
	require.NoError(t, err)
}

// TestUpdateOverlappingPathsRefused: DynamoDB refuses an UpdateItem with
// two operations on one document path, on a path and a path inside it, or
// on a path as a map and as a list: Update refuses them first.
func TestUpdateOverlappingPathsRefused(t *testing.T) {
	t.Parallel()
	cl := &wrNoClient{}
	tb, err := New[icItem](cl)
	require.NoError(t, err)
	ctx := t.Context()
	for name, u := range map[string]Update{
		"one path twice":         Set("body", "a").Set("body", "b"),
		"SET and REMOVE":         Set("body", "a").Remove("body"),
		"ADD and SET":            Add("cnt", 1).Set("cnt", 2),
		"a path inside another":  Set("m.x", 1).Set("m", map[string]int{}),
		"an element inside":      Remove("m.l").Set("m.l[2].y", 1),
		"one element twice":      Set("m.l[1]", 1).Remove("m.l[01]"),
		"a map and a list":       Set("m.x", 1).Set("m[0]", 2),
		"escaped names compared": Set(`a\.b.c`, 1).Remove(`a\.b`),
	} {
		err := tb.Update(ctx, icItem{ID: "1"}, u)
		require.ErrorIs(t, err, ErrInvalidWrite, name)
		require.ErrorContains(t, err, "overlap", name)
	}
	for name, u := range map[string]Update{
		"siblings":                 Set("m.x", 1).Set("m.y", 2),
		"two elements":             Set("m.l[0]", 1).Set("m.l[1]", 2),
		"a dotted name, a path":    Set(`a\.b`, 1).Set("a.b", 2),
		"a name and its prefix":    Set("body", "x").Set("bodyx", "y"),
		"an element and a sibling": Set("m.l[0]", 1).Set("m.k", 2),
	} {
		ops, err := u.resolve()
		require.NoError(t, err, name)
		require.NoError(t, checkOverlaps(ops), name)
	}
	require.Zero(t, cl.calls.Load(), "no request may be sent")
}

// TestUpdateValuesOverItemLimit: an Update whose values alone (with the
// item's key) are over DynamoDB's 400 KB item limit can only fail: it is
// refused before any request.
func TestUpdateValuesOverItemLimit(t *testing.T) {
	t.Parallel()
	cl := &wrNoClient{}
	tb, err := New[icItem](cl)
	require.NoError(t, err)
	ctx := t.Context()
	big := strings.Repeat("x", 210*1024)
	err = tb.Update(ctx, icItem{ID: "1"}, Set("body", big).Set("m.y", big))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.ErrorContains(t, err, "400 KB")
	err = tb.Update(ctx, icItem{ID: "1"}, Set("body", strings.Repeat("x", 401*1024)))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Zero(t, cl.calls.Load(), "no request may be sent")
}

// A model attribute named with [ or ]: the SDK's expression builder reads
// them as list indexes, even in a name it is told not to split, so a
// condition on such a key or version attribute would test another path
// (attribute_not_exists of a list element: always true).
type icBracketKey struct {
	_  TableSpec `ddbindex:"bracket-key"`
	ID string    `dynamodbav:"id[0]" ddbindex:"pk"`
}

type icBracketVersion struct {
	_   TableSpec `ddbindex:"bracket-version"`
	ID  string    `dynamodbav:"id" ddbindex:"pk"`
	Ver int64     `dynamodbav:"v[1]" ddbindex:"version"`
}

type icBracketDerived struct {
	_  TableSpec `ddbindex:"bracket-derived"`
	_  IndexSpec `ddbindex:"by_g,type=gsi,pk=G[0]"`
	ID string    `dynamodbav:"id" ddbindex:"pk"`
	G  string    `dynamodbav:"g" ddbindex:"by_g.pk:0"`
	H  string    `dynamodbav:"h" ddbindex:"by_g.pk:1"`
}

type icBracketSys struct {
	_  TableSpec `ddbindex:"bracket-sys,softdelete,deletedattr=del]"`
	ID string    `dynamodbav:"id" ddbindex:"pk"`
}

func TestBracketedAttributeNamesRefused(t *testing.T) {
	t.Parallel()
	for name, newFn := range map[string]func() error{
		"a key attribute":    func() error { _, err := New[icBracketKey](nil); return err },
		"the version":        func() error { _, err := New[icBracketVersion](nil); return err },
		"a derived key":      func() error { _, err := New[icBracketDerived](nil); return err },
		"a tombstone marker": func() error { _, err := New[icBracketSys](nil); return err },
	} {
		err := newFn()
		require.ErrorIs(t, err, ErrDeclaration, name)
		require.ErrorContains(t, err, "[", name)
	}
	// Project takes attribute names whole: one with a bracket cannot be
	// named through the expression builder.
	tb, err := New[icItem](nil)
	require.NoError(t, err)
	_, err = tb.Query("by_g", "g").Project("body[0]").Explain()
	require.ErrorIs(t, err, ErrInvalidQuery)
	_, err = tb.Query("by_g", "g").Project("body").Explain()
	require.NoError(t, err)
}

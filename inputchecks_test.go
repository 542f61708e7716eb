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

package ddbindex

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// TestIndexWritesCompareAsDynamoDB: an index-table entry is rewritten when
// its attributes change as DynamoDB compares them, not when only their
// form does (a Number written another way, a set in another order), and a
// key field's text is still read from the image's own text.
func TestIndexWritesCompareAsDynamoDB(t *testing.T) {
	t.Parallel()
	type syEq struct {
		_     TableSpec `ddbindex:"sy-eq"`
		_     IndexSpec `ddbindex:"by_rank,type=table"`
		Team  string    `dynamodbav:"team" ddbindex:"pk;by_rank.pk"`
		ID    string    `dynamodbav:"id" ddbindex:"sk"`
		Rank  uint32    `dynamodbav:"rank" ddbindex:"by_rank.sk"`
		Score float64   `dynamodbav:"score"`
		Tags  []string  `dynamodbav:"tags,stringset"`
	}
	tb, err := New[syEq](nil)
	require.NoError(t, err)
	old, err := tb.Marshal(syEq{Team: "t", ID: "1", Rank: 3, Score: 1.5, Tags: []string{"a", "b", "c"}})
	require.NoError(t, err)
	with := func(kv ...any) map[string]types.AttributeValue {
		out := map[string]types.AttributeValue{}
		for k, v := range old {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return out
	}

	same := with("score", &types.AttributeValueMemberN{Value: "15e-1"}, "tags", &types.AttributeValueMemberSS{Value: []string{"c", "a", "b"}})
	ws, err := tb.IndexWrites(Change{Old: old, New: same, Version: "2"})
	require.NoError(t, err)
	require.Empty(t, ws, "1.5 written as 15e-1 and a set in another order are no change")

	changed := with("score", &types.AttributeValueMemberN{Value: "1.25"})
	ws, err = tb.IndexWrites(Change{Old: old, New: changed, Version: "2"})
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, "1.25", ws[0].Item["score"].(*types.AttributeValueMemberN).Value)

	// rank is a key field: its text is read from the new image's own text,
	// even though the old image held an equal Number, and "3.0" is no
	// uint32's text.
	_, err = tb.IndexWrites(Change{Old: old, New: with("rank", &types.AttributeValueMemberN{Value: "3.0"}), Version: "2"})
	require.ErrorContains(t, err, `"3.0" is not a uint32`)
}

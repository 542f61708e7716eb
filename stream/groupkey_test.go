package stream

import (
	"testing"

	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"
)

// TestGroupByItemKeyEquality: records are grouped by item as DynamoDB
// tells keys apart: a Number key by value ("7" and "7.0" are one item), a
// String by its text, and a type by itself (S "7" is not N 7); a malformed
// key (a nil member) groups without panicking.
func TestGroupByItemKeyEquality(t *testing.T) {
	t.Parallel()
	rec := func(pk streamtypes.AttributeValue) streamtypes.Record {
		return streamtypes.Record{Dynamodb: &streamtypes.StreamRecord{Keys: map[string]streamtypes.AttributeValue{"PK": pk}}}
	}
	recs := []streamtypes.Record{
		rec(&streamtypes.AttributeValueMemberN{Value: "7"}),
		rec(&streamtypes.AttributeValueMemberS{Value: "7"}),
		rec(&streamtypes.AttributeValueMemberN{Value: "7.0"}),
		rec(&streamtypes.AttributeValueMemberN{Value: "70e-1"}),
		rec(&streamtypes.AttributeValueMemberS{Value: "7.0"}),
		rec((*streamtypes.AttributeValueMemberN)(nil)),
		rec(&streamtypes.AttributeValueMemberB{Value: []byte("7")}),
		rec((*streamtypes.AttributeValueMemberN)(nil)),
	}
	require.Equal(t, [][]int{{0, 2, 3}, {1}, {4}, {5, 7}, {6}}, groupByItem(recs))
	require.Equal(t, "{PK=*types.AttributeValueMemberN, SK=7.0}", keyString(map[string]streamtypes.AttributeValue{
		"PK": (*streamtypes.AttributeValueMemberN)(nil), "SK": &streamtypes.AttributeValueMemberN{Value: "7.0"}}))
}

package expr

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestShardKeyCondition: each sort condition's text names exactly the
// placeholders it adds, next to the builder's, which it leaves alone.
func TestShardKeyCondition(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sk     SortCond
		text   string
		values map[string]types.AttributeValue
	}{
		{SortCond{}, "#ddbxpk = :ddbxpk", nil},
		{SortBeginsWith("a#"), "#ddbxpk = :ddbxpk AND begins_with(#ddbxsk, :ddbxlo)", map[string]types.AttributeValue{ShardLo: s("a#")}},
		{SortEqual("a"), "#ddbxpk = :ddbxpk AND #ddbxsk = :ddbxlo", map[string]types.AttributeValue{ShardLo: s("a")}},
		{SortBetween("a", "b"), "#ddbxpk = :ddbxpk AND #ddbxsk BETWEEN :ddbxlo AND :ddbxhi", map[string]types.AttributeValue{ShardLo: s("a"), ShardHi: s("b")}},
		{SortAbove("a", false), "#ddbxpk = :ddbxpk AND #ddbxsk > :ddbxlo", map[string]types.AttributeValue{ShardLo: s("a")}},
		{SortAbove("a", true), "#ddbxpk = :ddbxpk AND #ddbxsk >= :ddbxlo", map[string]types.AttributeValue{ShardLo: s("a")}},
		{SortBelow("b", false), "#ddbxpk = :ddbxpk AND #ddbxsk < :ddbxhi", map[string]types.AttributeValue{ShardHi: s("b")}},
		{SortBelow("b", true), "#ddbxpk = :ddbxpk AND #ddbxsk <= :ddbxhi", map[string]types.AttributeValue{ShardHi: s("b")}},
	} {
		names := map[string]string{"#0": "status"}
		values := map[string]types.AttributeValue{":0": s("open")}
		got := ShardKeyCondition(names, values, "gpk", s("p#3"), "gsk", c.sk)
		require.Equal(t, c.text, got)
		wantNames := map[string]string{"#0": "status", ShardPKName: "gpk"}
		if c.values != nil {
			wantNames[ShardSKName] = "gsk"
		}
		require.Equal(t, wantNames, names, c.text)
		wantValues := map[string]types.AttributeValue{":0": s("open"), ShardPKValue: s("p#3")}
		for k, v := range c.values {
			wantValues[k] = v
		}
		require.Equal(t, wantValues, values, c.text)
		require.Equal(t, s("p#3"), ShardPK(values))
	}
}

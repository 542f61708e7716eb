package av

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// The sizes below are worked out by hand from "DynamoDB item sizes and
// formats" (see size.go): a Number is ceil(significant digits / 2) + 1
// bytes, leading and trailing zeros trimmed.
func TestNumberSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		num  string
		want int
	}{
		{"0", 1},             // no significant digit
		{"-0.000", 1},        // still zero
		{"1", 2},             // 1 digit: 1 + 1
		{"12", 2},            // 2 digits: 1 + 1
		{"123", 3},           // 3 digits: 2 + 1
		{"1234", 3},          // 4 digits: 2 + 1
		{"100", 2},           // trailing zeros trimmed: 1 digit
		{"00012300", 3},      // "123": 2 + 1
		{"0.001", 2},         // leading zeros trimmed: 1 digit
		{"-123.4500", 4},     // "12345": 3 + 1; the sign is not a digit
		{"1E+100", 2},        // the exponent is not a digit
		{"1.5e-7", 2},        // "15"
		{digits38, 20},       // 38 digits: 19 + 1
		{"-" + digits38, 20}, // the sign costs nothing
		{"1" + strings.Repeat("0", 36) + "1", 20},
		{"NaN", 3}, // not a number: sized by its length, (3+1)/2 + 1
		{"", 1},    // likewise
		{"1e1000000000000", 9},
	} {
		require.Equal(t, c.want, NumberSize(c.num), c.num)
		require.Equal(t, c.want, Size(n(c.num)), c.num)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		v    types.AttributeValue
		want int
	}{
		{"nil", nil, 0},
		{"S", s("abc"), 3},
		{"S empty", s(""), 0},
		{"S UTF-8", s("héllo"), 6},            // é is 2 bytes
		{"S 4-byte rune", s("a😀"), 5},         // 1 + 4
		{"B raw bytes", b("\x00\x01\x02"), 3}, // not its base64 text
		{"BOOL", yes, 1},
		{"NULL", null, 1},
		{"SS", ss("a", "bc"), 3},
		{"NS", ns("1", "123", "100"), 2 + 3 + 2},
		{"BS", bs("ab", "c"), 3},
		{"L empty", l(), 3},
		{"L", l(s("ab"), n("1")), 3 + (1 + 2) + (1 + 2)},
		{"M empty", m(), 3},
		{"M", m("k", s("v")), 3 + (1 + 1 + 1)},
		{"M in L", l(m("ab", n("12345"))), 3 + 1 + (3 + 1 + 2 + 4)},
		{"L in M", m("x", l(yes, null)), 3 + 1 + 1 + (3 + 2 + 2)},
		{"nil S member", (*types.AttributeValueMemberS)(nil), 0},
		{"nil M member", (*types.AttributeValueMemberM)(nil), 0},
		{"nil BOOL member", (*types.AttributeValueMemberBOOL)(nil), 0},
		{"unknown member", &types.UnknownUnionMember{Tag: "X"}, 1},
	} {
		require.Equal(t, c.want, Size(c.v), c.name)
	}
}

func TestItemSize(t *testing.T) {
	t.Parallel()
	require.Zero(t, ItemSize(nil))
	item := map[string]types.AttributeValue{
		"id":    s("a1"),              // 2 + 2
		"n":     n("42"),              // 1 + 2
		"né":    yes,                  // 3 (é is 2 bytes) + 1
		"tags":  ss("x", "yz"),        // 4 + 3
		"attrs": m("k", n("1.50")),    // 5 + 3 + (1 + 1 + 2)
		"list":  l(s("ab"), b("xyz")), // 4 + 3 + (1 + 2) + (1 + 3)
	}
	require.Equal(t, 4+3+4+7+12+14, ItemSize(item))
	require.Equal(t, 2+2, AttrSize("id", item["id"]))
	// 400 KB, DynamoDB's item limit, is reached by a string attribute of
	// 400 KB less its name.
	big := map[string]types.AttributeValue{"PK": s("k"), "body": s(strings.Repeat("x", 400*1024-2-1-4))}
	require.Equal(t, 400*1024, ItemSize(big))
}

package multikey

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Server-free tests of the encoding: hidden values compare as their tuples
// do, decode to what was encoded, and every condition the double accepts
// selects, by comparing hidden values, exactly the tuples the condition
// matches.

var tupleTypes = []types.ScalarAttributeType{types.ScalarAttributeTypeS, types.ScalarAttributeTypeN, types.ScalarAttributeTypeB}

func randValue(r *rand.Rand, typ types.ScalarAttributeType) types.AttributeValue {
	switch typ {
	case types.ScalarAttributeTypeN:
		nums := []string{"0", "1", "-1", "10", "-10", "0.5", "-0.5", "99", "100", "1e5", "-1E-3", "123.456",
			"-123.4560", "9223372036854775807", "-9223372036854775808", "0.000001", "12345678901234567890123456789012345678",
			"1E+125", "-1E+125", "1E-129", "2", "20", "0.2", "-2", "-20", "-0.2"}
		return &types.AttributeValueMemberN{Value: nums[r.IntN(len(nums))]}
	case types.ScalarAttributeTypeS:
		strs := []string{"a", "b", "a\x00", "a\x00b", "ab", "\x00", "\x01", "ü", "\U0010FFFF", "a b", "#", "aa", "a\x01"}
		return &types.AttributeValueMemberS{Value: strs[r.IntN(len(strs))]}
	default:
		bins := [][]byte{{0x00}, {0x00, 0x00}, {0xFF}, {0xFF, 0xFF}, {0x01}, {0x00, 0xFF}, {0x7F}, {0xFE, 0x00}, {0x61}}
		return &types.AttributeValueMemberB{Value: bins[r.IntN(len(bins))]}
	}
}

// cmpValue is DynamoDB's order for one type.
func cmpValue(a, b types.AttributeValue) int {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		ra, _ := new(big.Rat).SetString(x.Value)
		rb, _ := new(big.Rat).SetString(b.(*types.AttributeValueMemberN).Value)
		return ra.Cmp(rb)
	case *types.AttributeValueMemberS:
		return strings.Compare(x.Value, b.(*types.AttributeValueMemberS).Value)
	default:
		return bytes.Compare(x.(*types.AttributeValueMemberB).Value, b.(*types.AttributeValueMemberB).Value)
	}
}

func cmpTuple(a, b []types.AttributeValue) int {
	for i := range min(len(a), len(b)) {
		if c := cmpValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func encTuple(t *testing.T, typs []types.ScalarAttributeType, vals []types.AttributeValue) []byte {
	t.Helper()
	var b []byte
	for i, v := range vals {
		var err error
		b, err = encodeValue(b, typs[i], v)
		require.NoError(t, err)
	}
	return b
}

func TestEncodingOrderAndRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		n := 1 + r.IntN(3)
		typs := make([]types.ScalarAttributeType, n)
		for i := range typs {
			typs[i] = tupleTypes[r.IntN(len(tupleTypes))]
		}
		a, b := make([]types.AttributeValue, n), make([]types.AttributeValue, n)
		for i, typ := range typs {
			a[i], b[i] = randValue(r, typ), randValue(r, typ)
		}
		ea, eb := encTuple(t, typs, a), encTuple(t, typs, b)
		require.Equal(t, cmpTuple(a, b), bytes.Compare(ea, eb), "%v vs %v", a, b)
		require.Equal(t, bytes.Compare(ea, eb), strings.Compare(hex.EncodeToString(ea), hex.EncodeToString(eb)), "hex keeps the order")
		back, err := decodeTuple(ea, typs)
		require.NoError(t, err)
		require.Zero(t, cmpTuple(a, back), "%v decodes to %v", a, back)
		require.NotEqual(t, byte(0xFF), ea[len(ea)-1], "no encoding ends with 0xFF")
	}
}

func TestParseNumberCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "-0": "0", "0.0": "0", "007": "7", "1.50": "1.5", "1e5": "100000", "-1E-3": "-0.001",
		"123.456": "123.456", ".5": "0.5", "5.": "5", "+12": "12", "1.2e1": "12",
	} {
		neg, digits, exp, err := parseNumber(in)
		require.NoError(t, err, in)
		if digits == "" {
			require.Equal(t, want, "0", in)
			continue
		}
		require.Equal(t, want, formatNumber(neg, digits, exp), in)
	}
	for _, bad := range []string{"", "-", "1e", "a", "1.2.3", "1e5.5", "--1"} {
		_, _, _, err := parseNumber(bad)
		require.Error(t, err, "%q", bad)
	}
}

// TestHiddenConditionSelectsTheMatches checks every condition shape on a
// three-attribute sort key (S, N, B) against a brute-force evaluation: the
// hidden values the translated condition admits are exactly the tuples the
// original condition matches.
func TestHiddenConditionSelectsTheMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ix := &index{name: "gsi", hash: []keyAttr{{"h", types.ScalarAttributeTypeS}},
		rng: []keyAttr{{"a", types.ScalarAttributeTypeS}, {"b", types.ScalarAttributeTypeN}, {"c", types.ScalarAttributeTypeB}}}
	typs := []types.ScalarAttributeType{types.ScalarAttributeTypeS, types.ScalarAttributeTypeN, types.ScalarAttributeTypeB}
	var tuples [][]types.AttributeValue
	for range 400 {
		tu := make([]types.AttributeValue, 3)
		for i, typ := range typs {
			tu[i] = randValue(r, typ)
		}
		tuples = append(tuples, tu)
	}
	hv := &types.AttributeValueMemberS{Value: "p"}
	ops := []string{"=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"}
	checked := 0
	for range 3000 {
		n := 1 + r.IntN(3)
		op := ops[r.IntN(len(ops))]
		if op == "begins_with" && typs[n-1] == types.ScalarAttributeTypeN {
			continue
		}
		base := tuples[r.IntN(len(tuples))]
		leaves := []leaf{{attr: "h", op: "=", vals: []types.AttributeValue{hv}}}
		for i := 0; i < n-1; i++ {
			leaves = append(leaves, leaf{attr: ix.rng[i].name, op: "=", vals: []types.AttributeValue{base[i]}})
		}
		last := leaf{attr: ix.rng[n-1].name, op: op, vals: []types.AttributeValue{randValue(r, typs[n-1])}}
		switch op {
		case "BETWEEN":
			lo, hi := last.vals[0], randValue(r, typs[n-1])
			if cmpValue(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			last.vals = []types.AttributeValue{lo, hi}
		case "begins_with":
			full := prefixBytes(randValue(r, typs[n-1]))
			pre := full[:1+r.IntN(len(full))]
			if typs[n-1] == types.ScalarAttributeTypeS {
				last.vals = []types.AttributeValue{&types.AttributeValueMemberS{Value: string(pre)}}
			} else {
				last.vals = []types.AttributeValue{&types.AttributeValueMemberB{Value: pre}}
			}
		}
		if isEmpty(last.vals[0]) {
			continue
		}
		leaves = append(leaves, last)
		_, cop, lo, hi, err := ix.hiddenCondition(leaves)
		require.NoError(t, err)
		for _, tu := range tuples {
			want := true
			for i := 0; i < n-1; i++ {
				want = want && cmpValue(tu[i], base[i]) == 0
			}
			v, lv := tu[n-1], last.vals
			switch op {
			case "=":
				want = want && cmpValue(v, lv[0]) == 0
			case "<":
				want = want && cmpValue(v, lv[0]) < 0
			case "<=":
				want = want && cmpValue(v, lv[0]) <= 0
			case ">":
				want = want && cmpValue(v, lv[0]) > 0
			case ">=":
				want = want && cmpValue(v, lv[0]) >= 0
			case "BETWEEN":
				want = want && cmpValue(v, lv[0]) >= 0 && cmpValue(v, lv[1]) <= 0
			case "begins_with":
				want = want && bytes.HasPrefix(prefixBytes(v), prefixBytes(lv[0]))
			}
			e := encTuple(t, typs, tu)
			var got bool
			switch {
			case lo != nil:
				got = bytes.Compare(e, lo) >= 0 && bytes.Compare(e, hi) <= 0
			case cop == "<":
				got = bytes.Compare(e, hi) < 0
			case cop == "<=":
				got = bytes.Compare(e, hi) <= 0
			case cop == ">=":
				got = bytes.Compare(e, hi) >= 0
			default:
				got = true
			}
			require.Equal(t, want, got, "%s on %d attributes, tuple %v, condition %v", op, n, tu, leaves)
		}
		checked++
	}
	require.Greater(t, checked, 2000)
}

func TestHiddenConditionRefusals(t *testing.T) {
	ix := &index{name: "gsi", hash: []keyAttr{{"h1", types.ScalarAttributeTypeS}, {"h2", types.ScalarAttributeTypeN}},
		rng: []keyAttr{{"a", types.ScalarAttributeTypeN}, {"b", types.ScalarAttributeTypeS}, {"c", types.ScalarAttributeTypeS}}}
	s := func(v string) []types.AttributeValue {
		return []types.AttributeValue{&types.AttributeValueMemberS{Value: v}}
	}
	n := func(v string) []types.AttributeValue {
		return []types.AttributeValue{&types.AttributeValueMemberN{Value: v}}
	}
	h := []leaf{{"h1", "=", s("x")}, {"h2", "=", n("1")}}
	for name, tc := range map[string]struct {
		leaves []leaf
		want   string
	}{
		"a partition attribute missing":    {[]leaf{{"h1", "=", s("x")}}, "missed key schema element: h2"},
		"a partition attribute with <":     {[]leaf{{"h1", "=", s("x")}, {"h2", "<", n("1")}}, "every partition key attribute takes ="},
		"the first sort attribute skipped": {append(slices.Clone(h), leaf{"b", "=", s("y")}), "left to right"},
		"a gap":                            {append(slices.Clone(h), leaf{"a", "=", n("1")}, leaf{"c", "=", s("y")}), "left to right"},
		"a range before the last":          {append(slices.Clone(h), leaf{"a", ">", n("1")}, leaf{"b", "=", s("y")}), "only the last sort key attribute"},
		"begins_with before the last":      {append(slices.Clone(h), leaf{"a", "=", n("1")}, leaf{"b", "begins_with", s("y")}, leaf{"c", "=", s("z")}), "only the last sort key attribute"},
		"begins_with on a Number":          {append(slices.Clone(h), leaf{"a", "begins_with", n("1")}), "operand type: N"},
		"a wrong type":                     {append(slices.Clone(h), leaf{"a", "=", s("1")}), "does not match schema type"},
		"a non-key attribute":              {append(slices.Clone(h), leaf{"z", "=", s("1")}), "not a key attribute"},
		"two conditions on one attribute":  {append(slices.Clone(h), leaf{"a", ">", n("1")}, leaf{"a", "<", n("5")}), "one condition per key"},
		"BETWEEN upside down":              {append(slices.Clone(h), leaf{"a", "BETWEEN", append(n("5"), n("1")...)}), "upper bound to be greater"},
		"an empty String":                  {append(slices.Clone(h), leaf{"a", "=", n("1")}, leaf{"b", "=", s("")}), "empty S value"},
	} {
		_, _, _, _, err := ix.hiddenCondition(tc.leaves)
		require.ErrorContains(t, err, tc.want, name)
	}
}

func TestParseKeyCondition(t *testing.T) {
	names := map[string]string{"#0": "h", "#1": "a", "#2": "b"}
	values := map[string]types.AttributeValue{":0": &types.AttributeValueMemberS{Value: "x"}, ":1": &types.AttributeValueMemberN{Value: "1"},
		":2": &types.AttributeValueMemberS{Value: "p"}, ":3": &types.AttributeValueMemberS{Value: "q"}}
	leaves, err := parseKeyCondition("((#0 = :0) AND (#1 = :1)) AND (begins_with (#2, :2))", names, values)
	require.NoError(t, err)
	require.Equal(t, []string{"h =", "a =", "b begins_with"}, leafText(leaves))
	leaves, err = parseKeyCondition("#0 = :0 AND #2 BETWEEN :2 AND :3", names, values)
	require.NoError(t, err)
	require.Equal(t, []string{"h =", "b BETWEEN"}, leafText(leaves))
	for _, bad := range []string{"#0 = :0 OR #1 = :1", "#0 <> :0", "#0 = :9", "#9 = :0", "#0 = :0 AND", "(#0 = :0", "contains(#0, :0)"} {
		_, err := parseKeyCondition(bad, names, values)
		require.Error(t, err, bad)
	}
	refs, err := referencedNames("(attribute_not_exists(#d) OR #d <> :t) AND size(#x.#y) > :n AND plain = :v", map[string]string{"#d": "_deleted", "#x": "m", "#y": "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"_deleted", "_deleted", "m", "plain"}, refs)
}

func leafText(ls []leaf) []string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s %s", l.attr, l.op))
	}
	return out
}

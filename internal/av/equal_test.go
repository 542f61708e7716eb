package av

import (
	"fmt"
	"math/big"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func b(v string) types.AttributeValue     { return &types.AttributeValueMemberB{Value: []byte(v)} }
func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }
func ns(v ...string) types.AttributeValue { return &types.AttributeValueMemberNS{Value: v} }
func bs(v ...string) types.AttributeValue {
	out := make([][]byte, len(v))
	for i, e := range v {
		out[i] = []byte(e)
	}
	return &types.AttributeValueMemberBS{Value: out}
}
func l(v ...types.AttributeValue) types.AttributeValue { return &types.AttributeValueMemberL{Value: v} }
func m(kv ...any) types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return &types.AttributeValueMemberM{Value: out}
}

var (
	yes  = &types.AttributeValueMemberBOOL{Value: true}
	no   = &types.AttributeValueMemberBOOL{Value: false}
	null = &types.AttributeValueMemberNULL{Value: true}
)

// 38 significant digits: a float64 holds about 16, so these differ only
// past what a float comparison sees.
const (
	digits38  = "12345678901234567890123456789012345678"
	digits38b = "12345678901234567890123456789012345679"
)

func TestNumberEqual(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1", "1", true},
		{"1", "1.0", true},
		{"1", "1E+0", true},
		{"1", "1e0", true},
		{"1", "01", true},
		{"1", "+1", true},
		{"1", "10e-1", true},
		{"1", "0.1E1", true},
		{"1", "1.", true},
		{"0.5", ".5", true},
		{"-0", "0", true},
		{"0", "0.000", true},
		{"0", "-0.0e7", true},
		{"0", "00", true},
		{"100", "1E2", true},
		{"100", "1e+2", true},
		{"123.4500", "1.2345e2", true},
		{"-1.5", "-15E-1", true},
		{"0.001", "1e-3", true},
		{"1e-130", "0.1e-129", true},
		{"9.9999999999999999999999999999999999999E+125", "99999999999999999999999999999999999999e88", true},
		{digits38, "1." + digits38[1:] + "E+37", true},
		{digits38, "0" + digits38 + ".000", true},
		{"1", "-1", false},
		{"1", "10", false},
		{"1", "0.1", false},
		{"1", "2", false},
		{"12", "21", false},
		{"1.5", "15", false},
		{"0", "1e-130", false},
		{digits38, digits38b, false},
		{"1", "1.0000000000000000000000000000000000001", false},
		// Texts that are not numbers equal only themselves.
		{"NaN", "NaN", true},
		{"NaN", "nan", false},
		{"abc", "abc", true},
		{"", "", true},
		{"", "0", false},
		{"1e", "1", false},
		{"1.2.3", "1.2", false},
		{"--1", "-1", false},
		{"1e1000000000000", "1e1000000000000", true},
		{"1e1000000000000", "10e999999999999", false},
	} {
		require.Equal(t, c.want, NumberEqual(c.a, c.b), "%q = %q", c.a, c.b)
		require.Equal(t, c.want, NumberEqual(c.b, c.a), "%q = %q", c.b, c.a)
		require.Equal(t, c.want, NumberKey(c.a) == NumberKey(c.b), "keys of %q and %q: %q, %q", c.a, c.b, NumberKey(c.a), NumberKey(c.b))
	}
}

func TestIsNumber(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"0", "-0", "+1", "1.", ".5", "1e5", "1E-5", "-1.5e+10", digits38, "1e000000000000000001"} {
		require.True(t, IsNumber(ok), ok)
	}
	for _, bad := range []string{"", "-", "+", ".", "e5", ".e5", "1e", "1e+", "1ee5", "1.2.3", "1,5", " 1", "1 ", "NaN", "Inf", "-Infinity", "0x10", "1e1000000000", "١"} {
		require.False(t, IsNumber(bad), bad)
	}
}

// bigSet is a set of count numbers, first to first+count-1, written in
// the form form gives each.
func bigSet(first, count int, form func(int) string) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = form(first + i)
	}
	return out
}

func TestEqual(t *testing.T) {
	t.Parallel()
	plain := func(i int) string { return strconv.Itoa(i) }
	sci := func(i int) string { return strconv.Itoa(i) + "0e-1" }
	reversed := func(xs []string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[len(xs)-1-i] = x
		}
		return out
	}
	many := bigSet(1, 40, plain)
	for _, c := range []struct {
		name string
		a, b types.AttributeValue
		want bool
	}{
		{"nil nil", nil, nil, true},
		{"nil S", nil, s(""), false},
		{"nil NULL", nil, null, false},
		{"S", s("a"), s("a"), true},
		{"S other", s("a"), s("b"), false},
		{"S empty", s(""), s(""), true},
		{"S is not N", s("1"), n("1"), false},
		{"N same text", n("7"), n("7"), true},
		{"N 1 1.0", n("1"), n("1.0"), true},
		{"N 1 1E+0", n("1"), n("1E+0"), true},
		{"N -0 0", n("-0"), n("0"), true},
		{"N 38 digits", n(digits38), n("1." + digits38[1:] + "e37"), true},
		{"N 38 digits, last differs", n(digits38), n(digits38b), false},
		{"N is not S", n("1"), s("1"), false},
		{"B", b("ab"), b("ab"), true},
		{"B other", b("ab"), b("ba"), false},
		{"B nil and empty", &types.AttributeValueMemberB{}, &types.AttributeValueMemberB{Value: []byte{}}, true},
		{"B is not S", b("a"), s("a"), false},
		{"BOOL", yes, &types.AttributeValueMemberBOOL{Value: true}, true},
		{"BOOL other", yes, no, false},
		{"BOOL is not NULL", yes, null, false},
		{"NULL", null, &types.AttributeValueMemberNULL{Value: true}, true},
		{"SS", ss("a", "b"), ss("a", "b"), true},
		{"SS other order", ss("a", "b", "c"), ss("c", "a", "b"), true},
		{"SS repeated element", ss("a", "a", "b"), ss("b", "a"), true},
		{"SS fewer", ss("a"), ss("a", "b"), false},
		{"SS other", ss("a", "b"), ss("a", "c"), false},
		{"SS empty", ss(), ss(), true},
		{"SS empty and not", ss(), ss("a"), false},
		{"SS large other order", ss(many...), ss(reversed(many)...), true},
		{"SS large other", ss(many...), ss(append(reversed(many)[1:], "x")...), false},
		{"SS is not NS", ss("1"), ns("1"), false},
		{"NS other order", ns("1", "2", "3"), ns("3", "1", "2"), true},
		{"NS other forms", ns("1", "2.0"), ns("2", "1.00"), true},
		{"NS other forms, other order", ns("10", "-0", "1e3"), ns("1000", "0", "1E1"), true},
		{"NS repeated value", ns("1", "1.0"), ns("1"), true},
		{"NS other", ns("1", "2"), ns("1", "3"), false},
		{"NS large, other forms and order", ns(bigSet(1, 40, plain)...), ns(reversed(bigSet(1, 40, sci))...), true},
		{"NS large other", ns(bigSet(1, 40, plain)...), ns(bigSet(2, 40, sci)...), false},
		{"NS 38 digits", ns(digits38, "1"), ns("1", digits38+"e0"), true},
		{"NS 38 digits, last differs", ns(digits38), ns(digits38b), false},
		{"BS other order", bs("a", "b"), bs("b", "a"), true},
		{"BS other", bs("a", "b"), bs("b", "c"), false},
		{"BS large other order", bs(many...), bs(reversed(many)...), true},
		{"L", l(s("a"), n("1")), l(s("a"), n("1.0")), true},
		{"L order counts", l(s("a"), s("b")), l(s("b"), s("a")), false},
		{"L longer", l(s("a")), l(s("a"), s("a")), false},
		{"L empty", l(), &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, true},
		{"L is not SS", l(s("a")), ss("a"), false},
		{"M", m("a", n("1"), "b", s("x")), m("b", s("x"), "a", n("1.0")), true},
		{"M other value", m("a", n("1")), m("a", n("2")), false},
		{"M other name", m("a", n("1")), m("b", n("1")), false},
		{"M extra name", m("a", n("1")), m("a", n("1"), "b", null), false},
		{"M empty", m(), &types.AttributeValueMemberM{}, true},
		{"M is not L", m(), l(), false},
		{"nested", m("l", l(m("ns", ns("1", "2")), l(n("5"))), "m", m("x", ss("p", "q"))),
			m("m", m("x", ss("q", "p")), "l", l(m("ns", ns("2.0", "1")), l(n("5e0")))), true},
		{"nested, deep difference", m("l", l(m("ns", ns("1", "2")))), m("l", l(m("ns", ns("1", "3")))), false},
		{"nested, deep type difference", m("l", l(m("x", n("1")))), m("l", l(m("x", s("1")))), false},
		{"nil S member", (*types.AttributeValueMemberS)(nil), (*types.AttributeValueMemberS)(nil), true},
		{"nil S member and S", (*types.AttributeValueMemberS)(nil), s(""), false},
		{"nil N member and N", (*types.AttributeValueMemberN)(nil), n("0"), false},
		{"nil L member and L", (*types.AttributeValueMemberL)(nil), l(), false},
		{"nil member and nil", (*types.AttributeValueMemberM)(nil), nil, false},
		{"nil in a list", l(nil), l(nil), true},
		{"nil in a list and NULL", l(nil), l(null), false},
		{"unknown member", &types.UnknownUnionMember{Tag: "X", Value: []byte("1")}, &types.UnknownUnionMember{Tag: "X", Value: []byte("1")}, true},
		{"unknown member, other", &types.UnknownUnionMember{Tag: "X"}, &types.UnknownUnionMember{Tag: "Y"}, false},
	} {
		require.Equal(t, c.want, Equal(c.a, c.b), c.name)
		require.Equal(t, c.want, Equal(c.b, c.a), c.name+", reversed")
	}
}

func TestEqualItems(t *testing.T) {
	t.Parallel()
	item := func(kv ...any) map[string]types.AttributeValue {
		return m(kv...).(*types.AttributeValueMemberM).Value
	}
	require.True(t, EqualItems(nil, nil))
	require.True(t, EqualItems(nil, item()))
	require.True(t, EqualItems(item("id", s("a"), "n", n("2")), item("n", n("2.0"), "id", s("a"))))
	require.False(t, EqualItems(item("id", s("a")), item("id", s("a"), "n", n("1"))))
	require.False(t, EqualItems(item("id", s("a"), "x", null), item("id", s("a"), "y", null)))
	require.False(t, EqualItems(item("id", s("a")), nil))
}

func TestIdentical(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		a, b types.AttributeValue
		want bool
	}{
		{"nil nil", nil, nil, true},
		{"nil S", nil, s(""), false},
		{"S", s("a"), s("a"), true},
		{"N same text", n("1"), n("1"), true},
		{"N 1 1.0", n("1"), n("1.0"), false},
		{"N -0 0", n("-0"), n("0"), false},
		{"B", b("x"), b("x"), true},
		{"BOOL", yes, no, false},
		{"NULL", null, &types.AttributeValueMemberNULL{Value: true}, true},
		{"SS in order", ss("a", "b"), ss("a", "b"), true},
		{"SS other order", ss("a", "b"), ss("b", "a"), false},
		{"M", m("a", n("1")), m("a", n("1")), true},
		{"M 1 1.0", m("a", n("1")), m("a", n("1.0")), false},
		{"nil member", (*types.AttributeValueMemberS)(nil), s(""), false},
		{"nil members", (*types.AttributeValueMemberN)(nil), (*types.AttributeValueMemberN)(nil), true},
		{"S is not N", s("1"), n("1"), false},
	} {
		require.Equal(t, c.want, Identical(c.a, c.b), c.name)
		require.Equal(t, c.want, Identical(c.b, c.a), c.name+", reversed")
		if c.want {
			require.True(t, Equal(c.a, c.b), "%s: identical values are equal", c.name)
		}
	}
}

// FuzzNumberEqual checks NumberEqual and NumberKey against exact rational
// arithmetic (math/big), for texts of small exponent that both read.
func FuzzNumberEqual(f *testing.F) {
	for _, seed := range [][2]string{{"1", "1.0"}, {"-0", "0"}, {"1E+0", "01"}, {digits38, digits38b}, {"0.001", "1e-3"}, {"12.5", "125e-1"}, {"abc", "1"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := NumberEqual(a, b)
		if got != NumberEqual(b, a) {
			t.Fatalf("NumberEqual(%q, %q) is not symmetric", a, b)
		}
		if got != (NumberKey(a) == NumberKey(b)) {
			t.Fatalf("NumberEqual(%q, %q) = %v, keys %q and %q", a, b, got, NumberKey(a), NumberKey(b))
		}
		x, okx := parseNumber(a)
		y, oky := parseNumber(b)
		if !okx || !oky {
			if got != (a == b) {
				t.Fatalf("NumberEqual(%q, %q) = %v for a text that is not a number", a, b, got)
			}
			return
		}
		if abs(x.point) > 400 || abs(y.point) > 400 || len(a) > 200 || len(b) > 200 {
			return // keep math/big's work small
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			return // forms math/big reads otherwise ("1." it refuses)
		}
		if want := ra.Cmp(rb) == 0; got != want {
			t.Fatalf("NumberEqual(%q, %q) = %v, math/big says %v", a, b, got, want)
		}
		// a written another way: ±0.digits × 10^point.
		if x.n > 0 {
			other := fmt.Sprintf("0.%se%d", significant(ra), x.point)
			if x.neg {
				other = "-" + other
			}
			ro, _ := new(big.Rat).SetString(other)
			if !NumberEqual(a, other) || ra.Cmp(ro) != 0 {
				t.Fatalf("%q and %q: NumberEqual %v, math/big %v", a, other, NumberEqual(a, other), ra.Cmp(ro) == 0)
			}
		}
		if n := x.n; ra.Sign() != 0 && n != len(significant(ra)) {
			t.Fatalf("%q: %d significant digits, math/big says %s", a, n, significant(ra))
		}
	})
}

func abs(i int) int { return max(i, -i) }

// significant returns the significant digits of a non-zero rational that
// is a finite decimal.
func significant(r *big.Rat) string {
	num, den := new(big.Int).Abs(r.Num()), new(big.Int).Set(r.Denom())
	ten := big.NewInt(10)
	for new(big.Int).Mod(num, den).Sign() != 0 {
		num.Mul(num, ten)
	}
	q := new(big.Int).Quo(num, den).String()
	for len(q) > 1 && q[len(q)-1] == '0' {
		q = q[:len(q)-1]
	}
	return q
}

func BenchmarkEqual(bm *testing.B) {
	item := func(num string, set ...string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"PK": s("TENANT#42"), "SK": s("TICKET#000123"), "status": s("open"),
			"priority": n(num), "version": n("17"), "tags": ss(set...),
			"meta": m("createdBy", s("alice"), "size", n("2048")),
		}
	}
	for _, c := range []struct {
		name string
		a, b map[string]types.AttributeValue
	}{
		{"same text", item("3", "a", "b", "c"), item("3", "a", "b", "c")},
		{"numbers in other forms", item("3", "a", "b", "c"), item("3.0", "a", "b", "c")},
		{"sets in other order", item("3", "a", "b", "c"), item("3", "c", "a", "b")},
		{"differ", item("3", "a", "b", "c"), item("4", "a", "b", "c")},
	} {
		bm.Run(c.name, func(bm *testing.B) {
			want := c.name != "differ"
			bm.ReportAllocs()
			for bm.Loop() {
				if EqualItems(c.a, c.b) != want {
					bm.Fatalf("EqualItems = %v", !want)
				}
			}
		})
	}
}

func TestNumberKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1": "0.1e1", "1.0": "0.1e1", "10e-1": "0.1e1", "-0": "0", "0.000": "0",
		"-123.4500": "-0.12345e3", "0.001": "0.1e-2", digits38: "0." + digits38 + "e38",
		"abc": "\x00abc",
	} {
		require.Equal(t, want, NumberKey(in), in)
		if IsNumber(in) {
			require.True(t, NumberEqual(in, want), "the key of %q is a number of its value", in)
		}
	}
}

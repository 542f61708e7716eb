package ddbindex

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the sort-condition translation (keycond.go) for every key shape,
// against this bound table: with p the encoded leading components,
//
//	more components follow p:  = p  begins_with(SK, p#)   < p  SK < p#   <= p  SK < p$
//	                           > p  SK > p$   >= p  SK >= p#   BETWEEN p AND q  SK BETWEEN p# AND q$
//	p is the whole stored key:  the operator itself on enc(p)
//
// The expected strings are built with EncodeKey, not copied from the
// implementation's output.

// kcTicket has every shape of sort key:
//
//	base table: PK = "TEAM#<team>", SK = "ST#<status>#<seq>#<id>"  (labelled composites)
//	by_status:  GSI, GSI1PK = <team>, GSI1SK = <status>#<seq> + base suffix #<id>
//	feed:       index table, pk team (native), _sk = <status>#<seq> + suffix #<id>
//	by_at:      index table, _sk = <at, unixms, 13 digits> + suffix #<status>#<seq>#<id>
//	by_seq:     GSI with a native Number sort key (seq)
//	by_name:    LSI with a native String sort key (name)
//	by_score:   GSI with a native Number float sort key (score)
//	by_blob:    GSI with a native Binary sort key (blob)
//	by_bin:     index table, _sk = <blob, as hex> + suffix #<status>#<seq>#<id>
//	by_id:      GSI without a sort key
//	team_only:  index table whose sort key holds the base suffix only
type kcTicket struct {
	_ TableSpec `ddbindex:"kc_tickets,pk=PK,sk=SK"`
	_ IndexSpec `ddbindex:"by_status,type=gsi,pk=GSI1PK,sk=GSI1SK"`
	_ IndexSpec `ddbindex:"feed,type=table"`
	_ IndexSpec `ddbindex:"by_at,type=table"`
	_ IndexSpec `ddbindex:"by_seq,type=gsi"`
	_ IndexSpec `ddbindex:"by_name,type=lsi"`
	_ IndexSpec `ddbindex:"by_score,type=gsi"`
	_ IndexSpec `ddbindex:"by_blob,type=gsi"`
	_ IndexSpec `ddbindex:"by_bin,type=table"`
	_ IndexSpec `ddbindex:"by_id,type=gsi"`
	_ IndexSpec `ddbindex:"team_only,type=table"`

	Team   string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk;feed.pk;by_at.pk;by_seq.pk;by_score.pk;by_blob.pk;by_bin.pk;team_only.pk"`
	Status string    `dynamodbav:"status" ddbindex:"sk:0,label=ST;by_status.sk:0;feed.sk:0"`
	Seq    int64     `dynamodbav:"seq" ddbindex:"sk:1;by_status.sk:1;feed.sk:1;by_seq.sk"`
	ID     string    `dynamodbav:"id" ddbindex:"sk:2;by_id.pk"`
	Name   string    `dynamodbav:"name" ddbindex:"by_name.sk"`
	Score  float64   `dynamodbav:"score" ddbindex:"by_score.sk"`
	Blob   []byte    `dynamodbav:"blob" ddbindex:"by_blob.sk;by_bin.sk"`
	At     time.Time `dynamodbav:"at" ddbindex:"by_at.sk,format=unixms,width=13"`
}

func kcSchema(t testing.TB) *schema {
	t.Helper()
	s, err := schemaFor(reflect.TypeFor[kcTicket]())
	require.NoError(t, err)
	return s
}

func kcDef(t testing.TB, name string) *layout {
	t.Helper()
	s := kcSchema(t)
	if name == "" {
		return s.base
	}
	d := s.byName[name]
	require.NotNil(t, d, name)
	return d
}

func kcEnc(t testing.TB, vs ...any) string {
	t.Helper()
	s, err := EncodeKey(vs...)
	require.NoError(t, err)
	return s
}

func kcS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func kcN(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// kcWant is an expected translation: the operator DynamoDB is asked, and its
// operands.
type kcWant struct {
	op   string
	a, b types.AttributeValue
}

func kcCheck(t *testing.T, d *layout, c SortCondition, want kcWant) {
	t.Helper()
	kc, err := d.sortCond(c)
	require.NoError(t, err, "%s on %s", c, d.label())
	require.NotNil(t, kc)
	assert.Equal(t, want.op, opNames[kc.op], "%s on %s: %s", c, d.label(), kc)
	assert.Equal(t, want.a, kc.a, "%s on %s: %s", c, d.label(), kc)
	assert.Equal(t, want.b, kc.b, "%s on %s: %s", c, d.label(), kc)
	assert.Equal(t, d.sk.attr, kc.attr)
	// The ordered operands are the compared strings, for composites.
	if s, ok := want.a.(*types.AttributeValueMemberS); ok && !d.sk.native {
		assert.Equal(t, s.Value, kc.oa)
	}
}

// A composite key where more components always follow (a GSI's derived key,
// an index table's key): the bounds carry '#' or '$'.
func TestSortCondMoreComponentsFollow(t *testing.T) {
	for _, tc := range []struct {
		index, attr string
	}{{"by_status", "GSI1SK"}, {"feed", "_sk"}} {
		d := kcDef(t, tc.index)
		require.False(t, d.sk.native)
		require.Equal(t, tc.attr, d.sk.attr)
		require.NotEmpty(t, d.sk.suffix, "%s appends the base key", tc.index)

		for _, p := range [][]any{{"open"}, {"open", int64(5)}, {"a#b"}, {"a$23", int64(-1)}, {""}} {
			enc := kcEnc(t, p...)
			kcCheck(t, d, Eq(p...), kcWant{"begins_with", kcS(enc + "#"), nil})
			kcCheck(t, d, Lt(p...), kcWant{"<", kcS(enc + "#"), nil})
			kcCheck(t, d, Le(p...), kcWant{"<", kcS(enc + "$"), nil})
			kcCheck(t, d, Gt(p...), kcWant{">", kcS(enc + "$"), nil})
			kcCheck(t, d, Ge(p...), kcWant{">=", kcS(enc + "#"), nil})
		}
		kcCheck(t, d, Between("a", "open"), kcWant{"BETWEEN", kcS("a#"), kcS("open$")})
		kcCheck(t, d, Between("open", "open"), kcWant{"BETWEEN", kcS("open#"), kcS("open$")})
		kcCheck(t, d, Between(K("open", 1), K("open", 9)),
			kcWant{"BETWEEN", kcS(kcEnc(t, "open", int64(1)) + "#"), kcS(kcEnc(t, "open", int64(9)) + "$")})
		kcCheck(t, d, Between(K("open", -10), "open"),
			kcWant{"BETWEEN", kcS(kcEnc(t, "open", int64(-10)) + "#"), kcS("open$")})
	}
}

// A base-table composite sort key: with every component given, p is the
// whole stored key; with fewer, more components follow.
func TestSortCondWholeKey(t *testing.T) {
	d := kcDef(t, "")
	require.Equal(t, "SK", d.sk.attr)
	require.Empty(t, d.sk.suffix, "the base key is unique by itself")
	whole := "ST#" + kcEnc(t, "open", int64(5), "T#1")
	kcCheck(t, d, Eq("open", 5, "T#1"), kcWant{"=", kcS(whole), nil})
	kcCheck(t, d, Lt("open", 5, "T#1"), kcWant{"<", kcS(whole), nil})
	kcCheck(t, d, Le("open", 5, "T#1"), kcWant{"<=", kcS(whole), nil})
	kcCheck(t, d, Gt("open", 5, "T#1"), kcWant{">", kcS(whole), nil})
	kcCheck(t, d, Ge("open", 5, "T#1"), kcWant{">=", kcS(whole), nil})
	lo, hi := "ST#"+kcEnc(t, "a", int64(1), "x"), "ST#"+kcEnc(t, "b", int64(-1), "")
	kcCheck(t, d, Between(K("a", 1, "x"), K("b", -1, "")), kcWant{"BETWEEN", kcS(lo), kcS(hi)})
	// Mixed: a whole lower bound and a leading upper bound.
	kcCheck(t, d, Between(K("a", 1, "x"), "b"), kcWant{"BETWEEN", kcS(lo), kcS("ST#b$")})

	// Leading components only: the label stays in front.
	p := "ST#" + kcEnc(t, "open", int64(5))
	kcCheck(t, d, Eq("open", 5), kcWant{"begins_with", kcS(p + "#"), nil})
	kcCheck(t, d, Eq("open"), kcWant{"begins_with", kcS("ST#open#"), nil})
	kcCheck(t, d, Lt("open"), kcWant{"<", kcS("ST#open#"), nil})
	kcCheck(t, d, Le("open", 5), kcWant{"<", kcS(p + "$"), nil})
	kcCheck(t, d, Gt("open", 5), kcWant{">", kcS(p + "$"), nil})
	kcCheck(t, d, Ge("open"), kcWant{">=", kcS("ST#open#"), nil})
}

// An index table whose sort components include the whole base key has no
// suffix: there, too, every component given is the whole key.
type kcFullTable struct {
	_    TableSpec `ddbindex:"kc_full"`
	_    IndexSpec `ddbindex:"by_x,type=table"`
	P    string    `dynamodbav:"p" ddbindex:"pk;by_x.sk:1"`
	X    string    `dynamodbav:"x" ddbindex:"by_x.pk"`
	Rank uint32    `dynamodbav:"rank" ddbindex:"by_x.sk:0"`
}

func TestSortCondIndexTableWholeKey(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[kcFullTable]())
	require.NoError(t, err)
	d := s.byName["by_x"]
	require.Equal(t, IndexTable, d.kind)
	require.Equal(t, "_sk", d.sk.attr)
	require.Empty(t, d.sk.suffix)
	whole := kcEnc(t, uint64(7), "p#1")
	kcCheck(t, d, Eq(7, "p#1"), kcWant{"=", kcS(whole), nil})
	kcCheck(t, d, Le(uint8(7), "p#1"), kcWant{"<=", kcS(whole), nil})
	kcCheck(t, d, Eq(7), kcWant{"begins_with", kcS(kcEnc(t, uint64(7)) + "#"), nil})
	_, err = d.sortCond(Eq(-1))
	assert.ErrorIs(t, err, ErrInvalidQuery, "a negative value for a uint32")
}

// Native keys: the operator itself, on the attribute's own type.
func TestSortCondNative(t *testing.T) {
	num := kcDef(t, "by_seq")
	require.True(t, num.sk.native)
	require.Equal(t, types.ScalarAttributeTypeN, num.sk.scalar)
	require.Equal(t, "seq", num.sk.attr)
	kcCheck(t, num, Eq(5), kcWant{"=", kcN("5"), nil})
	kcCheck(t, num, Eq(int64(math.MinInt64)), kcWant{"=", kcN("-9223372036854775808"), nil})
	kcCheck(t, num, Lt(-3), kcWant{"<", kcN("-3"), nil})
	kcCheck(t, num, Le(int8(-3)), kcWant{"<=", kcN("-3"), nil})
	kcCheck(t, num, Gt(uint16(10)), kcWant{">", kcN("10"), nil})
	kcCheck(t, num, Ge(0), kcWant{">=", kcN("0"), nil})
	kcCheck(t, num, Between(9, 10), kcWant{"BETWEEN", kcN("9"), kcN("10")}) // "9" > "10" as text: compared as numbers
	kcCheck(t, num, Between(-10, -9), kcWant{"BETWEEN", kcN("-10"), kcN("-9")})
	kcCheck(t, num, Between(K(1), K(1)), kcWant{"BETWEEN", kcN("1"), kcN("1")})

	str := kcDef(t, "by_name")
	require.Equal(t, LSI, str.kind)
	require.True(t, str.sk.native)
	require.Equal(t, types.ScalarAttributeTypeS, str.sk.scalar)
	kcCheck(t, str, Eq("a#b"), kcWant{"=", kcS("a#b"), nil}) // a native string is not escaped
	kcCheck(t, str, Lt("b"), kcWant{"<", kcS("b"), nil})
	kcCheck(t, str, Le("b"), kcWant{"<=", kcS("b"), nil})
	kcCheck(t, str, Gt("b"), kcWant{">", kcS("b"), nil})
	kcCheck(t, str, Ge("b"), kcWant{">=", kcS("b"), nil})
	kcCheck(t, str, Between("a", "b"), kcWant{"BETWEEN", kcS("a"), kcS("b")})
	kcCheck(t, str, BeginsWith("a#"), kcWant{"begins_with", kcS("a#"), nil})

	flt := kcDef(t, "by_score")
	kcCheck(t, flt, Between(-1.5, 2.25), kcWant{"BETWEEN", kcN("-1.5"), kcN("2.25")})
	kcCheck(t, flt, Lt(3), kcWant{"<", kcN("3"), nil}) // an int for a float
	_, err := flt.sortCond(Lt(math.NaN()))
	assert.ErrorIs(t, err, ErrInvalidQuery)
	_, err = flt.sortCond(Between(2.5, -2.5))
	assert.ErrorIs(t, err, ErrInvalidQuery)

	bin := kcDef(t, "by_blob")
	require.Equal(t, types.ScalarAttributeTypeB, bin.sk.scalar)
	kcCheck(t, bin, Eq([]byte{1, 2}), kcWant{"=", &types.AttributeValueMemberB{Value: []byte{1, 2}}, nil})
	// DynamoDB takes no String prefix for a Binary key, and the expression
	// builder sends a begins_with prefix as a String: the Binary values
	// that begin with p are sent as BETWEEN p AND p followed by 0xFF bytes
	// up to the 1,024-byte limit of a sort key value.
	kcCheck(t, bin, BeginsWith([]byte{0}), kcWant{"BETWEEN", &types.AttributeValueMemberB{Value: []byte{0}}, kcBinaryPrefixTop([]byte{0})})
	kcCheck(t, bin, BeginsWith("ab"), kcWant{"BETWEEN", &types.AttributeValueMemberB{Value: []byte("ab")}, kcBinaryPrefixTop([]byte("ab"))})
	long := bytes.Repeat([]byte{7}, maxSortKeyBytes)
	kcCheck(t, bin, BeginsWith(long), kcWant{"BETWEEN", &types.AttributeValueMemberB{Value: long}, &types.AttributeValueMemberB{Value: long}})
	_, err = bin.sortCond(BeginsWith(append(long, 7)))
	assert.ErrorIs(t, err, ErrInvalidQuery, "a prefix over the limit matches nothing DynamoDB can store")
	kc, err := bin.sortCond(BeginsWith([]byte{1, 0xFF}))
	require.NoError(t, err)
	for _, v := range [][]byte{{1, 0xFF}, {1, 0xFF, 0}, {1, 0xFF, 0xFF, 0xFF}, append([]byte{1}, bytes.Repeat([]byte{0xFF}, maxSortKeyBytes-1)...)} {
		assert.True(t, kc.match(string(v)), "%x begins with 01ff", v)
	}
	for _, v := range [][]byte{{1}, {1, 0xFE, 0xFF}, {2}, {1, 0xFF - 1}, {0, 0xFF}} {
		assert.False(t, kc.match(string(v)), "%x does not begin with 01ff", v)
	}
}

// kcBinaryPrefixTop is the upper bound of the Binary values that begin with p.
func kcBinaryPrefixTop(p []byte) *types.AttributeValueMemberB {
	return &types.AttributeValueMemberB{Value: append(slices.Clone(p), bytes.Repeat([]byte{0xFF}, maxSortKeyBytes-len(p))...)}
}

// Fixed-width time components in a composite key.
func TestSortCondFormattedComponent(t *testing.T) {
	d := kcDef(t, "by_at")
	at := time.Date(2026, 12, 2, 13, 54, 41, 0, time.UTC)
	ms := fmt.Sprintf("%013d", at.UnixMilli())
	next := fmt.Sprintf("%013d", at.Add(time.Second).UnixMilli())
	kcCheck(t, d, Eq(at), kcWant{"begins_with", kcS(ms + "#"), nil})
	kcCheck(t, d, Ge(&at), kcWant{">=", kcS(ms + "#"), nil}) // a pointer to the value
	kcCheck(t, d, Between(at, at.Add(time.Second)), kcWant{"BETWEEN", kcS(ms + "#"), kcS(next + "$")})
	for _, bad := range []any{"2026-12-02", at.UnixMilli(), time.UnixMilli(-1), time.UnixMilli(1e13)} {
		_, err := d.sortCond(Eq(bad))
		assert.ErrorIs(t, err, ErrInvalidQuery, "%v", bad)
	}
}

func TestSortCondBeginsWith(t *testing.T) {
	gsi := kcDef(t, "by_status")
	kcCheck(t, gsi, BeginsWith("op"), kcWant{"begins_with", kcS("op"), nil})
	kcCheck(t, gsi, BeginsWith("a#"), kcWant{"begins_with", kcS("a$23"), nil})
	kcCheck(t, gsi, BeginsWith([]byte("a$")), kcWant{"begins_with", kcS("a$24"), nil})
	base := kcDef(t, "")
	kcCheck(t, base, BeginsWith("op"), kcWant{"begins_with", kcS("ST#op"), nil})
	kcCheck(t, base, BeginsWith(""), kcWant{"begins_with", kcS("ST#"), nil})
	kcCheck(t, base, BeginsWith("open", 5, "T-"), kcWant{"begins_with", kcS("ST#" + kcEnc(t, "open", int64(5), "T-")), nil})

	// An empty prefix on an unlabelled first component is no condition.
	kc, err := gsi.sortCond(BeginsWith(""))
	require.NoError(t, err)
	assert.Nil(t, kc)
	kc, err = kcDef(t, "by_name").sortCond(BeginsWith(""))
	require.NoError(t, err)
	assert.Nil(t, kc)

	for _, tc := range []struct {
		index string
		c     SortCondition
		why   string
	}{
		{"by_seq", BeginsWith("1"), "string component"},            // a native number
		{"by_score", BeginsWith("1"), "string component"},          //
		{"by_status", BeginsWith("open", "1"), "string component"}, // a composite's number
		{"by_at", BeginsWith("2026"), "string component"},          // a time
		{"by_name", BeginsWith(5), "string prefix"},                // not a string
		{"by_name", BeginsWith(nil), "string prefix"},              //
		{"", BeginsWith(1, 2, "x"), "does not convert"},            // a leading value of the wrong type
	} {
		_, err := kcDef(t, tc.index).sortCond(tc.c)
		require.ErrorIs(t, err, ErrInvalidQuery, "%s on %s", tc.c, tc.index)
		assert.ErrorContains(t, err, tc.why, "%s on %s", tc.c, tc.index)
	}
}

func TestSortCondErrors(t *testing.T) {
	for _, tc := range []struct {
		index string
		c     SortCondition
		why   string
	}{
		{"by_status", Between("b", "a"), "reversed"},
		{"by_status", Between(K("open", 9), K("open", 1)), "reversed"},
		{"", Between(K("a", 1, "y"), K("a", 1, "x")), "reversed"},
		{"by_seq", Between(10, 9), "reversed"}, // "10" < "9" as text, but not as numbers
		{"by_seq", Between(-1, -2), "reversed"},
		{"by_name", Between("b", "a"), "reversed"},
		{"by_status", Eq("open", 5, "x"), "2 sort components"},
		{"", Eq("open", 5, "x", "y"), "3 sort components"},
		{"by_seq", Eq(1, 2), "1 sort components"},
		{"by_status", Between("a", K("a", 1, "x")), "2 sort components"},
		{"by_status", Eq(), "at least one value"},
		{"by_status", Between(K(), K()), "at least one value"},
		{"by_status", Between("a", K()), "at least one value"},
		{"by_status", Eq(5), "does not convert"},           // an int for a string
		{"by_status", Eq("open", "5"), "does not convert"}, // a string for an int64
		{"by_status", Eq("open", 1.5), "does not convert"}, // a float for an int64
		{"by_status", Eq("open", uint64(math.MaxUint64)), "does not fit"},
		{"by_status", Eq(nil), "nil"},
		{"by_status", Eq((*string)(nil)), "nil"},
		{"by_seq", Eq("5"), "does not convert"},
		{"by_seq", Eq(uint64(math.MaxUint64)), "does not fit"},
		{"by_seq", Lt(nil), "nil"},
		{"by_name", Eq(""), "empty"},
		{"by_name", Eq(1), "does not convert"},
		{"by_id", Eq("x"), "no sort components"},
		{"team_only", Eq("x"), "no sort components"},
		{"by_score", Eq(int64(1<<62 + 1)), "not exact"},
	} {
		_, err := kcDef(t, tc.index).sortCond(tc.c)
		require.Error(t, err, "%s on %q", tc.c, tc.index)
		assert.ErrorIs(t, err, ErrInvalidQuery, "%s on %q: %v", tc.c, tc.index, err)
		var qe *Error
		require.ErrorAs(t, err, &qe)
		assert.Equal(t, tc.index, qe.Index)
		assert.Contains(t, qe.Reason, tc.why, "%s on %q", tc.c, tc.index)
	}
	// No condition is no key condition, for every index.
	for _, name := range []string{"", "by_status", "by_id", "team_only"} {
		kc, err := kcDef(t, name).sortCond(SortCondition{})
		require.NoError(t, err)
		assert.Nil(t, kc)
	}
}

// Values of any integer type convert into an int64 component, when they fit,
// and give the same condition as the int64 itself.
func TestSortCondCoercesIntegers(t *testing.T) {
	for _, index := range []string{"by_status", "", "by_seq"} {
		d := kcDef(t, index)
		lead := []any{"open"}
		if d.sk.native {
			lead = nil
		}
		want, err := d.sortCond(Ge(append(slices.Clone(lead), int64(42))...))
		require.NoError(t, err)
		for _, v := range []any{42, int8(42), int16(42), int32(42), uint(42), uint8(42), uint32(42), uint64(42), ptr(int64(42)), ptr(42)} {
			got, err := d.sortCond(Ge(append(slices.Clone(lead), v)...))
			require.NoError(t, err, "%T on %q", v, index)
			assert.Equal(t, want, got, "%T on %q", v, index)
		}
	}
	// A named string type converts into a string component.
	type status string
	want, err := kcDef(t, "by_status").sortCond(Eq("open"))
	require.NoError(t, err)
	got, err := kcDef(t, "by_status").sortCond(Eq(status("open")))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func ptr[T any](v T) *T { return &v }

func TestSortCondPartition(t *testing.T) {
	base := kcDef(t, "")
	for _, team := range []string{"TEAM-7", "a#b", "$", "한국"} {
		av, texts, err := base.partition([]any{team})
		require.NoError(t, err)
		assert.Equal(t, kcS(kcEnc(t, "TEAM", team)), av, "a labelled composite partition key")
		assert.Equal(t, []string{team}, texts)

		// An LSI shares the base table's partition key.
		lav, ltexts, err := kcDef(t, "by_name").partition([]any{team})
		require.NoError(t, err)
		assert.Equal(t, av, lav)
		assert.Equal(t, texts, ltexts)

		// A native partition key is the value itself, in GSIs and index tables.
		for _, name := range []string{"by_seq", "feed"} {
			nav, _, err := kcDef(t, name).partition([]any{team})
			require.NoError(t, err)
			assert.Equal(t, kcS(team), nav)
		}
		// A derived GSI partition key holds the (escaped) component.
		gav, _, err := kcDef(t, "by_status").partition([]any{team})
		require.NoError(t, err)
		assert.Equal(t, kcS(kcEnc(t, team)), gav)
	}
	for _, tc := range []struct {
		index  string
		values []any
		why    string
	}{
		{"", nil, "1 components; 0 values"},
		{"", []any{"a", "b"}, "1 components; 2 values"},
		{"", []any{5}, "does not convert"},
		{"", []any{nil}, "nil"},
		{"by_seq", []any{""}, "empty"},
		{"by_id", []any{""}, "empty"},
	} {
		_, _, err := kcDef(t, tc.index).partition(tc.values)
		require.ErrorIs(t, err, ErrInvalidQuery, "%q %v", tc.index, tc.values)
		assert.ErrorContains(t, err, tc.why)
	}
}

// Rendering: what Explain and error messages show.
func TestSortCondString(t *testing.T) {
	assert.Equal(t, "(none)", SortCondition{}.String())
	assert.Equal(t, "= (open)", Eq("open").String())
	assert.Equal(t, "<= (open, 5)", Le("open", 5).String())
	assert.Equal(t, "BETWEEN (open, 5) AND (open, 9)", Between(K("open", 5), K("open", 9)).String())
	assert.Equal(t, "begins_with (op)", BeginsWith("op").String())

	d := kcDef(t, "by_status")
	for _, tc := range []struct {
		c    SortCondition
		want string
	}{
		{Eq("open"), `begins_with(GSI1SK, "open#")`},
		{Lt("open"), `GSI1SK < "open#"`},
		{Between("a", "b"), `GSI1SK BETWEEN "a#" AND "b$"`},
	} {
		kc, err := d.sortCond(tc.c)
		require.NoError(t, err)
		assert.Equal(t, tc.want, kc.String())
	}
	kc, err := kcDef(t, "by_seq").sortCond(Gt(-2))
	require.NoError(t, err)
	assert.Equal(t, "seq > -2", kc.String())
	kc, err = kcDef(t, "by_blob").sortCond(Eq([]byte{0xab}))
	require.NoError(t, err)
	assert.Equal(t, "blob = 0xab", kc.String())

	// Every operator builds into a key condition expression on the sort key.
	for _, c := range []SortCondition{Eq("a"), Lt("a"), Le("a"), Gt("a"), Ge("a"), Between("a", "b"), BeginsWith("a")} {
		for _, name := range []string{"", "by_status", "by_name"} {
			kc, err := kcDef(t, name).sortCond(c)
			require.NoError(t, err)
			key := expression.Key("p").Equal(expression.Value("x")).And(kc.builder())
			expr, err := expression.NewBuilder().WithKeyCondition(key).Build()
			require.NoError(t, err, "%s on %q", c, name)
			names := slices.Collect(mapValues(expr.Names()))
			assert.ElementsMatch(t, []string{"p", kc.attr}, names, "%s on %q", c, name)
			n := 2
			if kc.op == opBetween {
				n = 3
			}
			assert.Len(t, expr.Values(), n, "%s on %q: %s", c, name, *expr.KeyCondition())
		}
	}
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// ---- brute force: the translated bounds select exactly the matching keys ----

// kcDynamoEval evaluates a key condition as DynamoDB does on a stored sort
// key value: S and B bytewise, N numerically.
func kcDynamoEval(t testing.TB, kc *keyCond, stored types.AttributeValue) bool {
	compare := func(a, b types.AttributeValue) int {
		switch a := a.(type) {
		case *types.AttributeValueMemberS:
			return strings.Compare(a.Value, b.(*types.AttributeValueMemberS).Value)
		case *types.AttributeValueMemberB:
			return bytes.Compare(a.Value, b.(*types.AttributeValueMemberB).Value)
		case *types.AttributeValueMemberN:
			x, _, err := big.ParseFloat(a.Value, 10, 256, big.ToNearestEven)
			require.NoError(t, err)
			y, _, err := big.ParseFloat(b.(*types.AttributeValueMemberN).Value, 10, 256, big.ToNearestEven)
			require.NoError(t, err)
			return x.Cmp(y)
		}
		t.Fatalf("unexpected attribute value %T", a)
		return 0
	}
	switch kc.op {
	case opEq:
		return compare(stored, kc.a) == 0
	case opLt:
		return compare(stored, kc.a) < 0
	case opLe:
		return compare(stored, kc.a) <= 0
	case opGt:
		return compare(stored, kc.a) > 0
	case opGe:
		return compare(stored, kc.a) >= 0
	case opBetween:
		return compare(stored, kc.a) >= 0 && compare(stored, kc.b) <= 0
	case opBeginsWith:
		switch s := stored.(type) {
		case *types.AttributeValueMemberS:
			return strings.HasPrefix(s.Value, kc.a.(*types.AttributeValueMemberS).Value)
		case *types.AttributeValueMemberB:
			return bytes.HasPrefix(s.Value, kc.a.(*types.AttributeValueMemberB).Value)
		}
	}
	t.Fatalf("cannot evaluate %s", kc)
	return false
}

// kcLogical evaluates a condition on the logical sort tuple.
func kcLogical(c SortCondition, tuple []any) bool {
	prefixCmp := func(vs []any) int { return kbTupleCompare(tuple[:len(vs)], vs) }
	switch c.op {
	case opEq:
		return prefixCmp(c.lo) == 0
	case opLt:
		return prefixCmp(c.lo) < 0
	case opLe:
		return prefixCmp(c.lo) <= 0
	case opGt:
		return prefixCmp(c.lo) > 0
	case opGe:
		return prefixCmp(c.lo) >= 0
	case opBetween:
		return prefixCmp(c.lo) >= 0 && prefixCmp(c.hi) <= 0
	case opBeginsWith:
		n := len(c.lo)
		if kbTupleCompare(tuple[:n-1], c.lo[:n-1]) != 0 {
			return false
		}
		s := tuple[n-1]
		if b, ok := s.([]byte); ok {
			s = string(b)
		}
		return strings.HasPrefix(s.(string), c.lo[n-1].(string))
	}
	return true
}

var (
	kcStatuses = []string{"", "a", "a#", "a#b", "a$", "a$23", "a\x00", "b", "open", "opened", "op", "\U0010FFFF", "z"}
	kcSeqs     = []int64{math.MinInt64, -100, -11, -10, -9, -1, 0, 1, 9, 10, 11, 100, math.MaxInt64}
	kcIDs      = []string{"x", "x#1", "y", "$"}
	kcNames    = []string{"a", "a#", "ab", "b", "é", "z"}
	kcScores   = []float64{-9.99e125, -1e100, -1.5, -1, -0.5, -1e-129, 0, 1e-129, 0.5, 1, 2.25, 1e100, 9.99e125} // a DynamoDB Number's range
	kcBlobs    = [][]byte{{0}, {0, 1}, {1}, {0x0f}, {0x10}, {0x24}, {0x23, 0}, []byte("a"), []byte("a#"), []byte("ab"), {0x7f}, {0x80}, {0xf0}, {0xff}, {0xff, 0}, {0xff, 0xff}}
	kcAts      = []time.Time{time.UnixMilli(0), time.UnixMilli(1), time.UnixMilli(999), time.UnixMilli(1000), time.UnixMilli(1796219681000), time.UnixMilli(9999999999999)}
)

// kcItem draws a random item: the domains are small, so ties are common.
func kcItem(g kbGen) kcTicket {
	pick := func(n int) int { return g.r.IntN(n) }
	return kcTicket{
		Team:   "T",
		Status: kcStatuses[pick(len(kcStatuses))],
		Seq:    kcSeqs[pick(len(kcSeqs))],
		ID:     kcIDs[pick(len(kcIDs))],
		Name:   kcNames[pick(len(kcNames))],
		Score:  kcScores[pick(len(kcScores))],
		Blob:   kcBlobs[pick(len(kcBlobs))],
		At:     kcAts[pick(len(kcAts))],
	}
}

// kcSortTuple is the logical sort tuple of an item in index d.
func kcSortTuple(name string, it kcTicket) []any {
	switch name {
	case "", "by_status", "feed":
		return []any{it.Status, it.Seq, it.ID}
	case "by_seq":
		return []any{it.Seq}
	case "by_name":
		return []any{it.Name}
	case "by_score":
		return []any{it.Score}
	case "by_blob":
		return []any{it.Blob}
	case "by_bin":
		return []any{it.Blob, it.Status, it.Seq, it.ID}
	case "by_at":
		return []any{it.At, it.Status, it.Seq, it.ID}
	}
	panic(name)
}

// kcCondition draws a random condition on index name's sort components.
func kcCondition(g kbGen, name string, parts int) SortCondition {
	vals := func() []any {
		it := kcItem(g)
		full := kcSortTuple(name, it)
		full = full[:parts] // the base suffix is not for conditions
		return full[:1+g.r.IntN(len(full))]
	}
	switch g.r.IntN(7) {
	case 0:
		return Eq(vals()...)
	case 1:
		return Lt(vals()...)
	case 2:
		return Le(vals()...)
	case 3:
		return Gt(vals()...)
	case 4:
		return Ge(vals()...)
	case 5:
		lo, hi := vals(), vals()
		return Between(Key(lo), Key(hi))
	}
	v := vals()
	last := v[len(v)-1]
	switch x := last.(type) {
	case string:
		// A prefix of a string component is cut between characters: it
		// must be valid UTF-8 (TestSortCondRejectsInvalidUTF8).
		n := g.r.IntN(len(x) + 1)
		for n < len(x) && !utf8.RuneStart(x[n]) {
			n--
		}
		v[len(v)-1] = x[:n]
	case []byte:
		// Any byte prefix, as a string that may well be invalid UTF-8: a
		// []byte component takes it.
		v[len(v)-1] = string(x[:g.r.IntN(len(x)+1)])
	}
	return BeginsWith(v...)
}

func TestSortCondMatchesBruteForce(t *testing.T) {
	g := newKBGen(t)
	s := kcSchema(t)
	items := make([]kcTicket, 300)
	for i := range items {
		items[i] = kcItem(g)
	}
	for _, name := range []string{"", "by_status", "feed", "by_seq", "by_name", "by_score", "by_blob", "by_bin", "by_at"} {
		d := kcDef(t, name)
		type stored struct {
			tuple []any
			ord   string
			av    types.AttributeValue
		}
		keys := make([]stored, len(items))
		for i, it := range items {
			texts, err := s.itemTexts(reflect.ValueOf(it))
			require.NoError(t, err)
			vals, ok, err := d.keyValues(texts)
			require.NoError(t, err)
			require.True(t, ok)
			ord, err := d.sk.ordered(texts.text)
			require.NoError(t, err)
			keys[i] = stored{kcSortTuple(name, it), ord, vals[d.sk.attr]}

			// The local ordered form sorts as DynamoDB sorts the stored values.
			if i > 0 {
				prev := keys[i-1]
				want := kbTupleCompare(prev.tuple, keys[i].tuple)
				assert.Equal(t, want, sign(strings.Compare(prev.ord, ord)), "%q: %#v vs %#v", name, prev.tuple, keys[i].tuple)
			}
		}
		conds, matched, errs := 0, 0, 0
		for range 800 {
			c := kcCondition(g, name, len(d.sk.parts))
			kc, err := d.sortCond(c)
			if c.op == opBetween {
				m := min(len(c.lo), len(c.hi))
				reversed := kbTupleCompare(c.lo[:m], c.hi[:m]) > 0
				if reversed {
					require.ErrorIs(t, err, ErrInvalidQuery, "%s on %q", c, name)
					errs++
					continue
				}
			}
			if c.op == opBeginsWith {
				if _, isStr := c.lo[len(c.lo)-1].(string); !isStr {
					require.ErrorIs(t, err, ErrInvalidQuery)
					errs++
					continue
				}
				kind := d.sk.parts[len(c.lo)-1].enc.kind
				if kind != encString && kind != encBytes {
					require.ErrorIs(t, err, ErrInvalidQuery, "%s on %q", c, name)
					errs++
					continue
				}
			}
			if name == "by_name" && c.op != opBeginsWith && (c.lo[0] == "" || (c.op == opBetween && c.hi[0] == "")) {
				require.ErrorIs(t, err, ErrInvalidQuery, "an empty native string")
				errs++
				continue
			}
			require.NoError(t, err, "%s on %q", c, name)
			conds++
			for _, k := range keys {
				want := kcLogical(c, k.tuple)
				if kc == nil {
					require.True(t, want, "no condition must mean every key matches")
					continue
				}
				if want {
					matched++
				}
				if got := kc.match(k.ord); got != want {
					t.Fatalf("%q: %s, translated %s: match(%q) = %v, but the tuple %#v gives %v", name, c, kc, k.ord, got, k.tuple, want)
				}
				if got := kcDynamoEval(t, kc, k.av); got != want {
					t.Fatalf("%q: %s, translated %s: DynamoDB would select %v (%s) = %v, but the tuple %#v gives %v", name, c, kc, k.av, avString(k.av), got, k.tuple, want)
				}
			}
		}
		t.Logf("%q: %d conditions (%d matches), %d rejected", name, conds, matched, errs)
		assert.Greater(t, conds, 300)
		assert.Greater(t, matched, 1000)
	}
}

// The condition a cursor's position is checked against is the one DynamoDB
// is asked: a position read back from a stored key satisfies match exactly
// when its tuple satisfies the condition.
func TestSortCondMatchesPositions(t *testing.T) {
	g := newKBGen(t)
	s := kcSchema(t)
	for _, name := range []string{"", "by_status", "feed", "by_seq", "by_blob", "by_bin", "by_at"} {
		d := kcDef(t, name)
		for range 300 {
			it := kcItem(g)
			texts, err := s.itemTexts(reflect.ValueOf(it))
			require.NoError(t, err)
			vals, ok, err := d.keyValues(texts)
			require.NoError(t, err)
			require.True(t, ok)
			for k, v := range kcBaseKeys(t, s, texts) {
				if _, has := vals[k]; !has {
					vals[k] = v
				}
			}
			pos, err := d.positionOf(vals)
			require.NoError(t, err, "%q %#v", name, vals)
			ord, err := d.sk.ordered(d.textOf(pos))
			require.NoError(t, err)
			c := kcCondition(g, name, len(d.sk.parts))
			kc, err := d.sortCond(c)
			if err != nil || kc == nil {
				continue
			}
			require.Equal(t, kcLogical(c, kcSortTuple(name, it)), kc.match(ord), "%q %s %s", name, c, kc)
		}
	}
}

// kcBaseKeys is the base table's key attributes for an item's texts.
func kcBaseKeys(t testing.TB, s *schema, texts keyTexts) map[string]types.AttributeValue {
	t.Helper()
	vals, ok, err := s.base.keyValues(texts)
	require.NoError(t, err)
	require.True(t, ok)
	return vals
}

// ---- values and positions (keys.go) ---------------------------------------------

type kcBytes []byte

// kcNarrow has component types narrower than int64 and float64.
type kcNarrow struct {
	_  TableSpec `ddbindex:"kc_narrow,sk=SK"`
	P  string    `dynamodbav:"p" ddbindex:"pk"`
	I8 int8      `dynamodbav:"i8" ddbindex:"sk:0"`
	U8 uint8     `dynamodbav:"u8" ddbindex:"sk:1"`
	F  float32   `dynamodbav:"f" ddbindex:"sk:2"`
	B  []byte    `dynamodbav:"b" ddbindex:"sk:3"`
	D  float64   `dynamodbav:"d" ddbindex:"sk:4"`
	T  time.Time `dynamodbav:"t" ddbindex:"sk:5"`
}

func TestKeyCoerce(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[kcNarrow]())
	require.NoError(t, err)
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		attr string
		v    any
		want any // nil: an error
	}{
		{"i8", 127, int8(127)},
		{"i8", -128, int8(-128)},
		{"i8", 128, nil},
		{"i8", -129, nil},
		{"i8", uint64(127), int8(127)},
		{"i8", uint64(128), nil},
		{"i8", uint64(math.MaxUint64), nil},
		{"i8", 1.0, nil},
		{"i8", "1", nil},
		{"u8", 255, uint8(255)},
		{"u8", uint16(256), nil},
		{"u8", -1, nil},
		{"u8", int8(5), uint8(5)},
		{"f", 0.5, float32(0.5)},
		{"f", 0.1, nil}, // not exact as float32
		{"f", 1 << 24, float32(1 << 24)},
		{"f", 1<<24 + 1, nil},
		{"f", uint8(3), float32(3)},
		{"f", "0.5", nil},
		{"d", int64(1 << 53), float64(1 << 53)},
		{"d", int64(1<<53 + 1), nil},
		{"d", uint64(1<<53 + 1), nil},
		{"d", float32(0.1), float64(float32(0.1))},
		{"b", []byte{1}, []byte{1}},
		{"b", kcBytes{2}, []byte{2}},
		{"b", "x", nil},
		{"b", ptr([]byte{3}), []byte{3}},
		{"t", at, at},
		{"t", &at, at},
		{"t", at.Unix(), nil},
		{"t", "2026-12-02", nil},
		{"p", kbNamedString("x"), "x"},
		{"p", kbVersion{}, nil},
		{"p", nil, nil},
		{"p", (*string)(nil), nil},
	} {
		got, err := coerce(tc.v, fieldOf(s, tc.attr))
		if tc.want == nil {
			assert.Error(t, err, "%s %#v", tc.attr, tc.v)
			continue
		}
		require.NoError(t, err, "%s %#v", tc.attr, tc.v)
		assert.Equal(t, tc.want, got.Interface(), "%s %#v", tc.attr, tc.v)
	}
}

// kcTexts is the canonical texts of an item.
func kcTexts(t testing.TB, s *schema, it any) keyTexts {
	t.Helper()
	texts, err := s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	return texts
}

// kcStored is what DynamoDB stores as the keys of an item in d: d's own and,
// for a GSI or LSI, the base table's.
func kcStored(t testing.TB, s *schema, d *layout, texts keyTexts) map[string]types.AttributeValue {
	t.Helper()
	vals, ok, err := d.keyValues(texts)
	require.NoError(t, err)
	require.True(t, ok)
	if d.kind == GSI || d.kind == LSI {
		for k, v := range kcBaseKeys(t, s, texts) {
			vals[k] = v
		}
	}
	return vals
}

// A position read from stored keys makes the same start key back, for every
// index shape.
func TestKeyPositionRoundTrip(t *testing.T) {
	g := newKBGen(t)
	s := kcSchema(t)
	for _, name := range []string{"", "by_status", "feed", "by_at", "by_seq", "by_name", "by_score", "by_blob", "by_bin", "by_id", "team_only"} {
		d := kcDef(t, name)
		for range 100 {
			it := kcItem(g)
			it.Team = g.str()
			if it.Team == "" {
				it.Team = "T"
			}
			texts := kcTexts(t, s, it)
			stored := kcStored(t, s, d, texts)
			pos, err := d.positionOf(stored)
			require.NoError(t, err, "%q %v", name, stored)
			require.Len(t, pos, len(d.slots))
			for i, f := range d.slots {
				assert.Equal(t, texts.text(f), pos[i], "%q slot %s", name, f.attr)
			}
			start, err := d.startKey(pos)
			require.NoError(t, err)
			assert.Equal(t, stored, start, "%q", name)
		}
	}
}

func TestKeyDecodeRejects(t *testing.T) {
	s := kcSchema(t)
	base := s.base
	it := kcTicket{Team: "T", Status: "open", Seq: 5, ID: "x", Name: "n", Score: 1, Blob: []byte{1}, At: time.UnixMilli(7)}
	texts := kcTexts(t, s, it)
	good := kcStored(t, s, base, texts)
	require.Equal(t, kcS("ST#open#a5#x"), good["SK"])
	with := func(d *layout, attr string, av types.AttributeValue) map[string]types.AttributeValue {
		m := kcStored(t, s, d, texts)
		if av == nil {
			delete(m, attr)
		} else {
			m[attr] = av
		}
		return m
	}
	for _, tc := range []struct {
		index string
		item  map[string]types.AttributeValue
		why   string
	}{
		{"", with(base, "SK", nil), "missing"},
		{"", with(base, "SK", kcN("5")), "not a string"},
		{"", with(base, "SK", kcS("XX#open#b5#x")), `label "ST" missing`},
		{"", with(base, "SK", kcS("open#b5#x")), `label "ST" missing`},
		{"", with(base, "SK", kcS("ST#open#a5")), "too few"},
		{"", with(base, "SK", kcS("ST#open")), "too few"},
		{"", with(base, "SK", kcS("ST#open#a5#x#y")), "too many"},
		{"", with(base, "SK", kcS("ST#open#a05#x")), "seq"},
		{"", with(base, "SK", kcS("ST#open#5#x")), "seq"},
		{"", with(base, "SK", kcS("ST#op$en#b5#x")), "escape"},
		{"", with(base, "PK", kcS("TEAM#U")), ""}, // valid, but see below
		{"by_status", with(kcDef(t, "by_status"), "GSI1PK", kcS("U")), "two different values"},
		{"by_seq", with(kcDef(t, "by_seq"), "seq", kcS("5")), "not of type N"},
		{"by_seq", with(kcDef(t, "by_seq"), "seq", kcN("five")), "seq"},
		{"by_seq", with(kcDef(t, "by_seq"), "seq", kcN("1.5")), "seq"},
		{"by_seq", with(kcDef(t, "by_seq"), "team", kcN("1")), "not of type S"},
		{"by_blob", with(kcDef(t, "by_blob"), "blob", kcS("x")), "not of type B"},
		{"by_at", with(kcDef(t, "by_at"), "_sk", kcS("7#open#a5#x")), "at"},
		{"by_at", with(kcDef(t, "by_at"), "_sk", kcS("0000000000007#open#a5")), "too few"},
		{"feed", with(kcDef(t, "feed"), "team", nil), "missing"},
		{"", with(base, "SK", kcS("ST#op\xffen#a5#x")), "UTF-8"},                  // what EncodeKey could not have written
		{"by_bin", with(kcDef(t, "by_bin"), "_sk", kcS("0#open#a5#x")), "blob"},   // odd-length hex
		{"by_bin", with(kcDef(t, "by_bin"), "_sk", kcS("0a#open#a5#x")), "blob"},  // lower-case hex
		{"by_bin", with(kcDef(t, "by_bin"), "_sk", kcS("$01#open#a5#x")), "blob"}, // the escaped form of a string
		{"by_bin", with(kcDef(t, "by_bin"), "_sk", kcS("01#open#a5")), "too few"},
	} {
		d := kcDef(t, tc.index)
		pos, err := d.positionOf(tc.item)
		if tc.why == "" {
			require.NoError(t, err)
			assert.Equal(t, "U", pos[0])
			continue
		}
		require.Error(t, err, "%q %v", tc.index, tc.item)
		assert.ErrorContains(t, err, tc.why, "%q %v", tc.index, tc.item)
	}

	// A number stored in exponent form still reads back canonically.
	m := with(kcDef(t, "by_seq"), "seq", kcN("5E0"))
	pos, err := kcDef(t, "by_seq").positionOf(m)
	require.NoError(t, err)
	assert.Equal(t, texts.text(fieldOf(s, "seq")), pos[kcDef(t, "by_seq").slot(fieldOf(s, "seq"))])

	// Start keys refuse what DynamoDB refuses: an empty string key.
	_, err = kcDef(t, "by_name").startKey(position{"T", "", "open", "a5", "x"})
	assert.ErrorContains(t, err, "empty")
	// And texts that are not the field's.
	_, err = kcDef(t, "by_seq").startKey(position{"T", "5", "open", "x"})
	assert.Error(t, err)
}

// ---- []byte components and UTF-8 ------------------------------------------------

// A []byte component of a composite key is upper-case hex, two digits a byte:
// it holds any byte, sorts as the bytes do, and the bounds of the table at
// the top of this file apply to it unchanged. A native Binary key keeps the raw bytes.
func TestSortCondBytesComponent(t *testing.T) {
	s := kcSchema(t)
	d := kcDef(t, "by_bin")
	require.Equal(t, IndexTable, d.kind)
	require.False(t, d.sk.native)
	require.Equal(t, "_sk", d.sk.attr)
	require.Equal(t, encBytes, d.sk.parts[0].enc.kind)

	it := kcTicket{Team: "T", Status: "open", Seq: 5, ID: "x", Name: "n", Score: 1, Blob: []byte("a#"), At: time.UnixMilli(7)}
	texts := kcTexts(t, s, it)
	assert.Equal(t, "a#", texts.text(fieldOf(s, "blob")), "the canonical text of a []byte is its raw bytes")
	vals, ok, err := d.keyValues(texts)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]types.AttributeValue{"team": kcS("T"), "_sk": kcS("6123#open#a5#x")}, vals)
	nat, ok, err := kcDef(t, "by_blob").keyValues(texts)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, &types.AttributeValueMemberB{Value: []byte("a#")}, nat["blob"], "a native Binary key is the raw bytes")

	// Bytes a String could not hold.
	it.Blob = []byte{0xff, 0x00, 0x80}
	vals, _, err = d.keyValues(kcTexts(t, s, it))
	require.NoError(t, err)
	assert.Equal(t, kcS("FF0080#open#a5#x"), vals["_sk"])
	pos, err := d.positionOf(vals)
	require.NoError(t, err)
	assert.Equal(t, string([]byte{0xff, 0x00, 0x80}), pos[d.slot(fieldOf(s, "blob"))], "the position holds the raw bytes")

	kcCheck(t, d, Eq([]byte("a#")), kcWant{"begins_with", kcS("6123#"), nil})
	kcCheck(t, d, Lt([]byte{0xff}), kcWant{"<", kcS("FF#"), nil})
	kcCheck(t, d, Le([]byte{0x0f}), kcWant{"<", kcS("0F$"), nil})
	kcCheck(t, d, Gt([]byte{0x0f}), kcWant{">", kcS("0F$"), nil})
	kcCheck(t, d, Ge([]byte{0x80}), kcWant{">=", kcS("80#"), nil})
	kcCheck(t, d, Between([]byte{0}, []byte{0xff, 0xff}), kcWant{"BETWEEN", kcS("00#"), kcS("FFFF$")})
	kcCheck(t, d, Eq(kcBytes{0xab}), kcWant{"begins_with", kcS("AB#"), nil}) // a named []byte type
	kcCheck(t, d, BeginsWith([]byte{0xab}), kcWant{"begins_with", kcS("AB"), nil})
	kcCheck(t, d, BeginsWith("a#"), kcWant{"begins_with", kcS("6123"), nil})
	kcCheck(t, d, BeginsWith("\xff"), kcWant{"begins_with", kcS("FF"), nil}) // any bytes, as a string too
	kc, err := d.sortCond(BeginsWith([]byte{}))
	require.NoError(t, err)
	assert.Nil(t, kc, "an empty prefix is no condition")
	_, err = d.sortCond(Between([]byte{0xff}, []byte{0x0f, 0xff}))
	assert.ErrorIs(t, err, ErrInvalidQuery, "reversed bounds, compared as bytes")
	kcCheck(t, d, Between([]byte{0x0f, 0xff}, []byte{0xf0}), kcWant{"BETWEEN", kcS("0FFF#"), kcS("F0$")})
}

// kcTexterItem has a KeyTexter component in a composite sort key.
type kcTexterItem struct {
	_ TableSpec  `ddbindex:"kc_texter,sk=SK"`
	P string     `dynamodbav:"p" ddbindex:"pk"`
	V kbNoParser `dynamodbav:"v" ddbindex:"sk:0,label=V"`
}

// A string component must be valid UTF-8 wherever it goes into a key: a
// model's composite and native keys, an index-table entry, sort condition
// values and begins_with prefixes on composite and native keys, and
// partition values. (The SDK would replace the bad bytes with U+FFFD, so a
// query could silently read another key's items.) A []byte component takes
// any bytes.
//
// Query errors are ErrInvalidQuery *Errors (ErrInvalidQuery, HTTP 400 for a service);
// their reason names the UTF-8 problem. Marshal errors wrap errInvalidUTF8.
func TestSortCondRejectsInvalidUTF8(t *testing.T) {
	tb, err := New[kcTicket](nil)
	require.NoError(t, err)
	tx, err := New[kcTexterItem](nil)
	require.NoError(t, err)
	good := kcTicket{Team: "T", Status: "open", Seq: 5, ID: "x", Name: "n", Score: 1, Blob: []byte{1}, At: time.UnixMilli(7)}
	_, err = tb.Marshal(good)
	require.NoError(t, err)
	utf8Msg := errInvalidUTF8.Error()

	for _, bad := range kbInvalidUTF8 {
		// Models: a composite key (base PK and SK, GSI keys), a native
		// String key (the LSI's sort key "name" is nothing else), a
		// KeyTexter's text, an index-table entry.
		for _, tc := range []struct {
			what string
			it   kcTicket
			attr string
		}{
			{"composite partition key", kcWith(good, func(it *kcTicket) { it.Team = bad }), "team"},
			{"composite sort key", kcWith(good, func(it *kcTicket) { it.Status = bad }), "status"},
			{"composite sort key, last component", kcWith(good, func(it *kcTicket) { it.ID = bad }), "id"},
			{"native String sort key", kcWith(good, func(it *kcTicket) { it.Name = bad }), "name"},
		} {
			_, err := tb.Marshal(tc.it)
			require.ErrorIs(t, err, errInvalidUTF8, "%s %q", tc.what, bad)
			assert.ErrorContains(t, err, tc.attr, tc.what)
		}
		_, err := tx.Marshal(kcTexterItem{P: "p", V: kbNoParser(bad)})
		assert.ErrorIs(t, err, errInvalidUTF8, "a KeyTexter returning %q", bad)
		_, err = tx.Marshal(kcTexterItem{P: bad, V: "v"})
		assert.ErrorIs(t, err, errInvalidUTF8, "a native String partition key %q", bad)
		_, err = tb.entryOf(kcDef(t, "feed"), kcWith(good, func(it *kcTicket) { it.Status = bad }), "1")
		assert.ErrorIs(t, err, errInvalidUTF8, "an index-table entry %q", bad)

		// The same bytes in a []byte component are fine, composite and native.
		withBlob := kcWith(good, func(it *kcTicket) { it.Blob = []byte(bad) })
		item, err := tb.Marshal(withBlob)
		require.NoError(t, err, "%q as a []byte", bad)
		assert.Equal(t, &types.AttributeValueMemberB{Value: []byte(bad)}, item["blob"])
		entry, err := tb.entryOf(kcDef(t, "by_bin"), withBlob, "1")
		require.NoError(t, err)
		require.NotNil(t, entry)
		assert.Equal(t, kcS(strings.ToUpper(fmt.Sprintf("%x", bad))+"#open#a5#x"), entry["_sk"])

		// Sort conditions: values and begins_with prefixes, on composite
		// string components and on a native String key.
		for _, tc := range []struct {
			index string
			c     SortCondition
		}{
			{"by_status", Eq(bad)},
			{"by_status", Lt(bad, 1)},
			{"by_status", Between("a", bad)},
			{"by_status", Between(K(bad, 1), "z")},
			{"", Eq("open", 5, bad)}, // the whole key
			{"", Ge(bad)},
			{"feed", Le(bad)},
			{"by_status", BeginsWith(bad)},
			{"by_status", BeginsWith([]byte(bad))}, // a []byte prefix for a string component is a string
			{"", BeginsWith(bad)},
			{"", BeginsWith("open", 5, bad)},
			{"by_name", Eq(bad)},
			{"by_name", Lt(bad)},
			{"by_name", Between("a", bad)},
			{"by_name", BeginsWith(bad)},
			{"by_name", BeginsWith([]byte(bad))},
		} {
			_, err := kcDef(t, tc.index).sortCond(tc.c)
			require.ErrorIs(t, err, ErrInvalidQuery, "%s on %q", tc.c, tc.index)
			assert.ErrorContains(t, err, utf8Msg, "%s on %q", tc.c, tc.index)
			// Through the public API too: Explain builds the request Page would send.
			_, err = tb.Query(tc.index, "T").Where(tc.c).Explain()
			require.ErrorIs(t, err, ErrInvalidQuery, "%s on %q", tc.c, tc.index)
			assert.ErrorContains(t, err, utf8Msg)
		}
		// A []byte component, composite or native, takes the bytes.
		kcCheck(t, kcDef(t, "by_bin"), BeginsWith(bad), kcWant{"begins_with", kcS(strings.ToUpper(fmt.Sprintf("%x", bad))), nil})
		kcCheck(t, kcDef(t, "by_bin"), Eq([]byte(bad)), kcWant{"begins_with", kcS(strings.ToUpper(fmt.Sprintf("%x", bad)) + "#"), nil})
		kcCheck(t, kcDef(t, "by_blob"), BeginsWith(bad), kcWant{"BETWEEN", &types.AttributeValueMemberB{Value: []byte(bad)}, kcBinaryPrefixTop([]byte(bad))})
		kcCheck(t, kcDef(t, "by_blob"), Eq([]byte(bad)), kcWant{"=", &types.AttributeValueMemberB{Value: []byte(bad)}, nil})

		// Partition values: a labelled composite (base table, and the LSI
		// that shares it), a derived GSI key, native String keys.
		for _, index := range []string{"", "by_name", "by_status", "feed", "by_seq", "by_bin"} {
			_, _, err := kcDef(t, index).partition([]any{bad})
			require.ErrorIs(t, err, ErrInvalidQuery, "partition %q of %q", bad, index)
			assert.ErrorContains(t, err, utf8Msg)
			_, err = tb.Query(index, bad).Explain()
			require.ErrorIs(t, err, ErrInvalidQuery, "partition %q of %q", bad, index)
			assert.ErrorContains(t, err, utf8Msg)
		}
	}
}

func kcWith(it kcTicket, change func(*kcTicket)) kcTicket {
	change(&it)
	return it
}

// FuzzSortCondBounds checks the prefixes and bounds keycond builds from the
// codec (exactPrefix, lowerBound, upperBound) against the codec's order: for
// a stored key and a condition from fuzzed component values, on every key
// shape with string and integer components (labelled whole keys, derived
// composites with a base suffix, index-table keys), the translated condition
// selects the key, locally and as DynamoDB compares, exactly when the
// logical tuples satisfy the condition.
func FuzzSortCondBounds(f *testing.F) {
	for i, s := range kbHostile {
		t := kbHostile[(i+5)%len(kbHostile)]
		f.Add(uint8(i), uint8(i/3), s, kbSpecialInts[i%len(kbSpecialInts)], t, t, kbSpecialInts[(i+1)%len(kbSpecialInts)], s, s+"#", int64(i))
	}
	f.Add(uint8(1), uint8(0), "a", int64(0), "x", "a", int64(0), "x", "a$", int64(0))
	f.Add(uint8(2), uint8(1), "a$", int64(-1), "$", "a", int64(-1), "$00", "a#", int64(5))
	f.Add(uint8(5), uint8(2), "a", int64(9), "x#1", "a", int64(10), "x", "a", int64(9))
	f.Add(uint8(6), uint8(1), "a\x00", int64(0), "y", "a", int64(0), "y", "a\x00b", int64(0))
	shapes := []string{"", "by_status", "feed"}
	f.Fuzz(func(t *testing.T, op, n uint8, status string, seq int64, id, cStatus string, cSeq int64, cID, hStatus string, hSeq int64) {
		item := kcTicket{Team: "T", Status: status, Seq: seq, ID: id}
		cond := []any{cStatus, cSeq, cID}
		hi := []any{hStatus, hSeq, cID}
		s := kcSchema(t)
		texts, err := s.itemTexts(reflect.ValueOf(item))
		require.NoError(t, err)
		for _, name := range shapes {
			d := kcDef(t, name)
			vals, ok, err := d.keyValues(texts)
			if !utf8.ValidString(status) || !utf8.ValidString(id) || len(status)+len(id) > 900 {
				require.Error(t, err, "a key the codec cannot hold is refused")
				return
			}
			require.NoError(t, err)
			require.True(t, ok)
			ord, err := d.sk.ordered(texts.text)
			require.NoError(t, err)
			tuple := kcSortTuple(name, item)

			k := 1 + int(n)%len(d.sk.parts)
			var c SortCondition
			switch op % 7 {
			case 0:
				c = Eq(cond[:k]...)
			case 1:
				c = Lt(cond[:k]...)
			case 2:
				c = Le(cond[:k]...)
			case 3:
				c = Gt(cond[:k]...)
			case 4:
				c = Ge(cond[:k]...)
			case 5:
				c = Between(Key(cond[:k]), Key(hi[:k]))
			default:
				v := slices.Clone(cond[:k])
				if _, isStr := v[k-1].(string); !isStr {
					v = []any{cStatus} // seq is not a string: begins_with on status
				}
				c = BeginsWith(v...)
			}
			kc, err := d.sortCond(c)
			if err != nil {
				// The only refusals: text that is not UTF-8, a reversed
				// BETWEEN, a bound over DynamoDB's size limit.
				require.ErrorIs(t, err, ErrInvalidQuery)
				reversed := c.op == opBetween && kbTupleCompare(c.lo, c.hi) > 0
				invalid := !utf8.ValidString(cStatus) || !utf8.ValidString(cID) || (c.op == opBetween && !utf8.ValidString(hStatus))
				require.True(t, reversed || invalid || strings.Contains(err.Error(), "limit"), "%s on %q: unexpected refusal %v", c, name, err)
				continue
			}
			want := kcLogical(c, tuple)
			if kc == nil {
				require.True(t, want, "no condition must mean every key matches")
				continue
			}
			require.Equal(t, want, kc.match(ord), "%q: %s, translated %s: match(%q), tuple %#v", name, c, kc, ord, tuple)
			require.Equal(t, want, kcDynamoEval(t, kc, vals[d.sk.attr]), "%q: %s, translated %s: DynamoDB on %s, tuple %#v", name, c, kc, avString(vals[d.sk.attr]), tuple)
		}
	})
}

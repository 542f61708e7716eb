package ddbindex

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Property tests of the composite key encoding (keybuilder.go): round trip, order, exact prefixes, totality and strict decoding.
// Every random test logs its seed; set KB_SEED=<seed> to replay one.

// ---- a KeyTexter defined by the test ----------------------------------------

// kbVersion is a custom component. Its text is "MMMMM#mmmmm": fixed-width
// decimals, so it sorts as (Major, Minor), and it holds a '#' that the
// encoding must escape.
type kbVersion struct{ Major, Minor uint16 }

func (v kbVersion) KeyText() (string, error) {
	return fmt.Sprintf("%05d#%05d", v.Major, v.Minor), nil
}

func (v *kbVersion) ParseKeyText(s string) error {
	if len(s) != 11 || s[5] != '#' {
		return fmt.Errorf("%q is not a version text", s)
	}
	var parts [2]uint16
	for i, p := range []string{s[:5], s[6:]} {
		for j := 0; j < len(p); j++ {
			if p[j] < '0' || p[j] > '9' {
				return fmt.Errorf("%q is not a version text", s)
			}
		}
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fmt.Errorf("%q is not a version text: %w", s, err)
		}
		parts[i] = uint16(n)
	}
	*v = kbVersion{parts[0], parts[1]}
	return nil
}

func (v kbVersion) compare(w kbVersion) int {
	return cmp.Or(cmp.Compare(v.Major, w.Major), cmp.Compare(v.Minor, w.Minor))
}

// kbFailing is a KeyTexter whose text cannot be computed.
type kbFailing struct{}

func (kbFailing) KeyText() (string, error) { return "", errors.New("kbFailing has no text") }

// kbNoParser is a KeyTexter without a KeyTextParser.
type kbNoParser string

func (s kbNoParser) KeyText() (string, error) { return string(s), nil }

// ---- random components ---------------------------------------------------------

// kbKind is a component type of the generated tuples.
type kbKind int

const (
	kbString kbKind = iota
	kbBytes
	kbInt64
	kbInt
	kbInt32
	kbUint64
	kbFloat64
	kbFloat32
	kbTime
	kbCustom
	kbKindCount
)

func (k kbKind) String() string {
	return [...]string{"string", "[]byte", "int64", "int", "int32", "uint64", "float64", "float32", "time", "custom"}[k]
}

// kbHostile are strings that probe the escaping and the separator. All are
// valid UTF-8, as every string component must be.
var kbHostile = []string{
	"", "#", "$", "##", "$$", "$2", "$23", "$24", "a", "a#", "a#b", "a$", "a$23", "a$24", "a\x00", "a\x00b",
	"\x00", "\x01", "\x1f", " ", "!", "\"", "\x24", "\x25", "%", "&", "a b", "open", "TEAM-7", "user_42",
	"\U0010FFFF", "\uFFFF", "é", "한국어", "\x7f", "~", "z", "Z", "0", "9", "$00", "$FF", "#$#$",
}

// kbInvalidUTF8 are strings that are not valid UTF-8, which no string
// component may hold (a DynamoDB String is UTF-8; the SDK would replace the
// bad bytes with U+FFFD and merge distinct keys): a lone byte above 0x7F, a
// truncated sequence, a surrogate, an overlong form, a code point above
// U+10FFFF, and bad bytes after or between valid ones.
var kbInvalidUTF8 = []string{
	"\xff", "a\xc3", "\xc3", "\x80", "\xfe", "a\x80b", "\xed\xa0\x80", "\xc0\x80", "\xc0\xa3", "\xf4\x90\x80\x80",
	"\xe2\x82", "é\xff", "#\xff", "$\xff", "\x00\xff", "\U0010FFFF\xf4", "한"[:2],
}

// kbAtoms are the pieces random strings are made of: every byte that is
// escaped, its neighbours, and multi-byte UTF-8. Joined in any order they
// are valid UTF-8.
var kbAtoms = func() []string {
	var out []string
	for b := 0; b <= 0x26; b++ {
		out = append(out, string([]byte{byte(b)}))
	}
	return append(out, "a", "b", "z", "A", "Z", "0", "9", "~", "\x7f", "é", "한", "\U0010FFFF", "$23", "##")
}()

type kbGen struct{ r *rand.Rand }

func newKBGen(t testing.TB) kbGen {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s, ok := lookupSeed(); ok {
		seed = s
	}
	t.Logf("seed %d (replay with KB_SEED=%d)", seed, seed)
	return kbGen{rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))}
}

func lookupSeed() (uint64, bool) {
	s, ok := os.LookupEnv("KB_SEED")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// str returns a random string component: always valid UTF-8.
func (g kbGen) str() string {
	if g.r.IntN(3) == 0 {
		return kbHostile[g.r.IntN(len(kbHostile))]
	}
	var b strings.Builder
	for n := g.r.IntN(5); n > 0; n-- {
		b.WriteString(kbAtoms[g.r.IntN(len(kbAtoms))])
	}
	return b.String()
}

func (g kbGen) byteStr() []byte {
	if g.r.IntN(4) == 0 {
		return []byte(g.str())
	}
	b := make([]byte, g.r.IntN(5))
	for i := range b {
		switch g.r.IntN(3) {
		case 0:
			b[i] = byte(g.r.IntN(0x27)) // escaped bytes and their neighbours
		case 1:
			b[i] = byte(0x80 + g.r.IntN(0x80)) // invalid UTF-8 on its own
		default:
			b[i] = byte(g.r.IntN(256))
		}
	}
	return b
}

var kbSpecialInts = []int64{math.MinInt64, math.MinInt64 + 1, -1e18, -1000, -999, -100, -99, -10, -9, -2, -1,
	0, 1, 2, 9, 10, 99, 100, 999, 1000, 1e18, math.MaxInt64 - 1, math.MaxInt64}

func (g kbGen) i64() int64 {
	switch g.r.IntN(3) {
	case 0:
		return kbSpecialInts[g.r.IntN(len(kbSpecialInts))]
	case 1:
		return int64(g.r.IntN(21)) - 10 // small: many ties
	}
	n := int64(g.r.Uint64() >> g.r.IntN(64)) // every digit count
	if g.r.IntN(2) == 0 {
		n = -n
	}
	return n
}

func (g kbGen) u64() uint64 {
	switch g.r.IntN(3) {
	case 0:
		return []uint64{0, 1, 9, 10, 99, 100, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}[g.r.IntN(9)]
	case 1:
		return uint64(g.r.IntN(12))
	}
	return g.r.Uint64() >> g.r.IntN(64)
}

var kbSpecialFloats = []float64{math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64,
	-math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.5, -0.5, 2, 1e-300, -1e-300,
	math.Nextafter(1, 2), math.Nextafter(1, 0), 0x1p-1022, -0x1p-1022, math.Nextafter(0x1p-1022, 0)}

func (g kbGen) f64() float64 {
	switch g.r.IntN(4) {
	case 0:
		return kbSpecialFloats[g.r.IntN(len(kbSpecialFloats))]
	case 1:
		return float64(g.r.IntN(9)-4) / 2
	case 2:
		return g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(40)-20))
	}
	for {
		if f := math.Float64frombits(g.r.Uint64()); !math.IsNaN(f) {
			return f
		}
	}
}

var (
	kbMinTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	kbMaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	kbZones   = []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600), time.FixedZone("odd", 5*3600+45*60)}
)

func (g kbGen) tm() time.Time {
	var t time.Time
	switch g.r.IntN(4) {
	case 0:
		t = []time.Time{kbMinTime, kbMaxTime, time.Unix(0, 0), time.Unix(-1, 999999999), time.Unix(0, 1),
			time.Date(2026, 12, 2, 13, 54, 41, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)}[g.r.IntN(7)]
	case 1: // a few instants: many ties
		t = time.Date(2026, 12, 2, 0, 0, g.r.IntN(3), g.r.IntN(3), time.UTC)
	default:
		lo, hi := kbMinTime.Unix(), kbMaxTime.Unix()
		t = time.Unix(lo+g.r.Int64N(hi-lo+1), g.r.Int64N(1e9))
	}
	return t.In(kbZones[g.r.IntN(len(kbZones))])
}

var kbSpecialFloat32s = []float32{float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)),
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5}

func (g kbGen) f32() float32 {
	switch g.r.IntN(3) {
	case 0:
		return kbSpecialFloat32s[g.r.IntN(len(kbSpecialFloat32s))]
	case 1:
		return float32(g.r.IntN(9)-4) / 2
	}
	for {
		if f := math.Float32frombits(g.r.Uint32()); f == f {
			return f
		}
	}
}

func (g kbGen) custom() kbVersion {
	if g.r.IntN(2) == 0 {
		return kbVersion{uint16(g.r.IntN(3)), uint16(g.r.IntN(3))}
	}
	return kbVersion{uint16(g.r.Uint32()), uint16(g.r.Uint32())}
}

func (g kbGen) value(k kbKind) any {
	switch k {
	case kbString:
		return g.str()
	case kbBytes:
		return g.byteStr()
	case kbInt64:
		return g.i64()
	case kbInt:
		return int(g.i64())
	case kbInt32:
		return int32(g.i64() >> 32)
	case kbUint64:
		return g.u64()
	case kbFloat64:
		return g.f64()
	case kbFloat32:
		return g.f32()
	case kbTime:
		return g.tm()
	case kbCustom:
		return g.custom()
	}
	panic(k)
}

func (g kbGen) signature(minLen, maxLen int) []kbKind {
	sig := make([]kbKind, minLen+g.r.IntN(maxLen-minLen+1))
	for i := range sig {
		sig[i] = kbKind(g.r.IntN(int(kbKindCount)))
	}
	return sig
}

func (g kbGen) tuple(sig []kbKind) []any {
	out := make([]any, len(sig))
	for i, k := range sig {
		out[i] = g.value(k)
	}
	return out
}

// near returns a tuple like a: equal up to a random position, then fresh
// values, so that ties and shared prefixes are common.
func (g kbGen) near(sig []kbKind, a []any) []any {
	b := slices.Clone(a)
	for i := g.r.IntN(len(sig) + 1); i < len(sig); i++ {
		if g.r.IntN(3) > 0 {
			b[i] = g.mutate(sig[i], a[i])
		}
	}
	return b
}

// mutate returns a value close to v: a near miss for prefixes and order.
func (g kbGen) mutate(k kbKind, v any) any {
	switch k {
	case kbString:
		s := v.(string)
		switch g.r.IntN(6) {
		case 0:
			return s + "#"
		case 1:
			return s + []string{"#b", "$", "$23", "\x00", "\x24", "\x25"}[g.r.IntN(6)]
		case 2:
			if s != "" { // drop the last character, not a byte of it
				_, n := utf8.DecodeLastRuneInString(s)
				return s[:len(s)-n]
			}
		case 3:
			if s != "" {
				// Flip the last byte's low bit: an ASCII byte stays
				// ASCII, a final continuation byte stays one, so the
				// string stays valid UTF-8.
				b := []byte(s)
				b[len(b)-1] ^= 1
				return string(b)
			}
		}
		return g.str()
	case kbBytes:
		b := slices.Clone(v.([]byte))
		switch g.r.IntN(4) {
		case 0:
			return append(b, byte(g.r.IntN(0x26)))
		case 1:
			return append(b, byte(g.r.IntN(256))) // any byte, invalid UTF-8 included
		case 2:
			if len(b) > 0 {
				return b[:len(b)-1]
			}
		default:
			if len(b) > 0 { // a neighbouring last byte; wraps at 0x00 and 0xFF
				b[len(b)-1] += byte(g.r.IntN(3)) - 1
				return b
			}
		}
		return g.byteStr()
	case kbInt64:
		return v.(int64) + int64(g.r.IntN(3)) - 1
	case kbUint64:
		return v.(uint64) + uint64(g.r.IntN(2))
	case kbFloat64:
		return math.Nextafter(v.(float64), []float64{math.Inf(1), math.Inf(-1)}[g.r.IntN(2)])
	case kbTime:
		t := v.(time.Time).Add(time.Duration(g.r.IntN(3)-1) * time.Nanosecond)
		if t.Before(kbMinTime) || t.After(kbMaxTime) {
			return v // stay inside the years the fixed-width form takes
		}
		return t
	}
	return g.value(k)
}

// ---- the reference order ----------------------------------------------------------

// kbCompare compares two component values of one type as keybuilder.go orders them:
// strings bytewise, numbers numerically, times chronologically.
func kbCompare(a, b any) int {
	switch a := a.(type) {
	case string:
		return strings.Compare(a, b.(string))
	case []byte:
		return bytes.Compare(a, b.([]byte))
	case int64:
		return cmp.Compare(a, b.(int64))
	case int:
		return cmp.Compare(a, b.(int))
	case int32:
		return cmp.Compare(a, b.(int32))
	case uint64:
		return cmp.Compare(a, b.(uint64))
	case float64:
		return cmp.Compare(a, b.(float64)) // -0 == 0; no NaN here
	case float32:
		return cmp.Compare(a, b.(float32))
	case time.Time:
		return a.Compare(b.(time.Time))
	case kbVersion:
		return a.compare(b.(kbVersion))
	}
	panic(fmt.Sprintf("kbCompare: %T", a))
}

func kbTupleCompare(a, b []any) int {
	for i := range a {
		if c := kbCompare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func kbTupleEqual(a, b []any) bool { return len(a) == len(b) && kbTupleCompare(a, b) == 0 }

func sign(n int) int { return cmp.Compare(n, 0) }

// kbPointers returns fresh pointers to zero values of the tuple's types.
func kbPointers(sig []kbKind) []any {
	out := make([]any, len(sig))
	for i, k := range sig {
		out[i] = reflect.New(reflect.TypeOf(kbZero[k])).Interface()
	}
	return out
}

var kbZero = [...]any{"", []byte(nil), int64(0), 0, int32(0), uint64(0), 0.0, float32(0), time.Time{}, kbVersion{}}

func kbDeref(ptrs []any) []any {
	out := make([]any, len(ptrs))
	for i, p := range ptrs {
		out[i] = reflect.ValueOf(p).Elem().Interface()
	}
	return out
}

// kbSplitText is what SplitKey must return for the component v, computed
// without the encoder's escaping: a string or KeyTexter text as it is, a
// []byte as upper-case hex (SplitKey does not know the types), a number or
// time as its key text (which has no byte to escape).
func kbSplitText(t testing.TB, v any) string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return strings.ToUpper(hex.EncodeToString(v))
	case KeyTexter:
		s, err := v.KeyText()
		require.NoError(t, err)
		return s
	}
	s, err := EncodeKey(v)
	require.NoError(t, err)
	require.False(t, strings.ContainsFunc(s, func(r rune) bool { return r <= '$' }), "%q", s)
	return s
}

// kbRoundTripEqual reports whether got is what decoding want's key must give.
func kbRoundTripEqual(t testing.TB, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case float64:
		g := got.(float64)
		assert.False(t, math.Signbit(g) && g == 0, "-0 must decode as 0")
		assert.True(t, w == g, "float %v decoded as %v", w, g)
	case float32:
		assert.Equal(t, w == 0, got.(float32) == 0)
		assert.True(t, w == got.(float32), "float32 %v decoded as %v", w, got)
		assert.False(t, math.Signbit(float64(got.(float32))) && got.(float32) == 0, "-0 must decode as 0")
	case time.Time:
		g := got.(time.Time)
		assert.True(t, w.Equal(g), "time %s decoded as %s", w.Format(time.RFC3339Nano), g.Format(time.RFC3339Nano))
		assert.Equal(t, time.UTC, g.Location())
	case []byte:
		assert.True(t, bytes.Equal(w, got.([]byte)), "bytes %q decoded as %q", w, got)
	default:
		assert.Equal(t, want, got)
	}
}

// ---- readable examples ---------------------------------------------------------

func TestEncodeKeyReadableExamples(t *testing.T) {
	// A few documented outputs; everything else is checked by property.
	for _, tc := range []struct {
		in   []any
		want string
	}{
		{[]any{"open", int64(42)}, "open#b42"},
		{[]any{"open", int64(42), "TICKET#8842"}, "open#b42#TICKET$238842"},
		{[]any{"TEAM-7", "user_42"}, "TEAM-7#user_42"},
		{[]any{"한국어 텍스트"}, "한국어$20텍스트"},
		{[]any{"price $5"}, "price$20$245"},
		{[]any{int64(0)}, "a0"},
		{[]any{int64(-1)}, "Z8"},
		{[]any{int64(-99)}, "Y00"},
		{[]any{int64(1733000000000)}, "m1733000000000"},
		{[]any{time.Date(2026, 12, 2, 13, 54, 41, 0, time.UTC)}, "2026-12-02T13:54:41.000000000Z"},
		{[]any{0.0}, "8000000000000000"},
		{[]any{math.Copysign(0, -1)}, "8000000000000000"},
		{[]any{""}, ""},
		{[]any{"", ""}, "#"},
		{[]any{"a\x00b", "\U0010FFFF"}, "a$00b#\U0010FFFF"},
		// A []byte component is upper-case hex, two digits a byte: it holds
		// any byte (a String could not) and sorts as the bytes do.
		{[]any{"open", []byte("a#")}, "open#6123"},
		{[]any{[]byte{0x00, 0x24, 0x7F, 0x80, 0xFF}}, "00247F80FF"},
		{[]any{[]byte("\xff\xfe"), int64(1)}, "FFFE#a1"},
		{[]any{[]byte{}, "x"}, "#x"},
	} {
		got, err := EncodeKey(tc.in...)
		require.NoError(t, err, "%v", tc.in)
		assert.Equal(t, tc.want, got, "EncodeKey(%#v)", tc.in)
	}
	d, err := newEncoder(timeType, 0, "date")
	require.NoError(t, err)
	txt, err := d.text(reflect.ValueOf(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)))
	require.NoError(t, err)
	assert.Equal(t, "2026-12-02", txt)

	p, err := KeyPrefix("open")
	require.NoError(t, err)
	assert.Equal(t, "open#", p)
	parts, err := SplitKey("open#b42#TICKET$238842")
	require.NoError(t, err)
	assert.Equal(t, []string{"open", "b42", "TICKET#8842"}, parts)

	// SplitKey cannot know a component's type: a []byte comes out as its hex.
	parts, err = SplitKey("open#6123")
	require.NoError(t, err)
	assert.Equal(t, []string{"open", "6123"}, parts)
	var (
		s string
		b []byte
	)
	require.NoError(t, DecodeKey("open#6123", &s, &b))
	assert.Equal(t, "open", s)
	assert.Equal(t, []byte("a#"), b)
}

// Valid UTF-8 strings encode exactly as keybuilder.go's scheme says (and as they
// did before strings had to be valid UTF-8): every byte 0x00-0x24 as "$XX",
// every other byte kept. The reference is written here, independently.
func TestKeyValidStringsEncodeAsBefore(t *testing.T) {
	ref := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] <= 0x24 {
				fmt.Fprintf(&b, "$%02X", s[i])
			} else {
				b.WriteByte(s[i])
			}
		}
		return b.String()
	}
	g := newKBGen(t)
	strs := slices.Clone(kbHostile)
	for b := 0; b < 0x80; b++ {
		strs = append(strs, string(rune(b)), "a"+string(rune(b))+"z")
	}
	for range 2000 {
		strs = append(strs, g.str())
	}
	for _, s := range strs {
		require.True(t, utf8.ValidString(s), "the generators make valid UTF-8 only: %q", s)
		enc, err := EncodeKey(s)
		require.NoError(t, err, "%q", s)
		assert.Equal(t, ref(s), enc, "%q", s)
		p, err := KeyPrefix(s, kbNamedString(s))
		require.NoError(t, err, "%q", s)
		assert.Equal(t, ref(s)+"#"+ref(s)+"#", p, "%q", s)
		var back string
		require.NoError(t, DecodeKey(enc, &back), "%q", enc)
		assert.Equal(t, s, back)
	}
}

// Readable: bytes above '$' (0x24) never change, so common values appear as
// they are.
func TestKeyReadable(t *testing.T) {
	g := newKBGen(t)
	for range 2000 {
		s := g.str()
		enc, err := EncodeKey(s)
		require.NoError(t, err)
		plain := true
		for i := 0; i < len(s); i++ {
			plain = plain && s[i] > '$'
		}
		assert.Equal(t, plain, enc == s, "%q encodes as %q", s, enc)
		assert.Equal(t, countEscaped(s), strings.Count(enc, "$"), "%q: one '$' per escaped byte", s)
		assert.Equal(t, len(s)+2*countEscaped(s), len(enc), "%q: an escape is three bytes", s)
		assert.NotContains(t, enc, "#", "a component never contains the separator")
	}
}

func countEscaped(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] <= '$' {
			n++
		}
	}
	return n
}

// ---- round trip ----------------------------------------------------------------------

func TestKeyRoundTripProperty(t *testing.T) {
	g := newKBGen(t)
	for range 5000 {
		sig := g.signature(1, 5)
		x := g.tuple(sig)
		key, err := EncodeKey(x...)
		require.NoError(t, err, "EncodeKey(%#v)", x)
		ptrs := kbPointers(sig)
		require.NoError(t, DecodeKey(key, ptrs...), "DecodeKey(%q) of %#v", key, x)
		y := kbDeref(ptrs)
		for i := range x {
			kbRoundTripEqual(t, x[i], y[i])
		}
		parts, err := SplitKey(key)
		require.NoError(t, err)
		want := make([]string, len(x))
		for i := range x {
			want[i] = kbSplitText(t, x[i])
		}
		assert.Equal(t, want, parts, "SplitKey(%q)", key)

		// KeyPrefix is EncodeKey plus the separator.
		p, err := KeyPrefix(x...)
		require.NoError(t, err)
		assert.Equal(t, key+"#", p)

		// The wrong number of targets is an error.
		assert.Error(t, DecodeKey(key, append(ptrs, new(string))...))
		if len(ptrs) > 1 {
			assert.Error(t, DecodeKey(key, ptrs[:len(ptrs)-1]...))
		}
		if t.Failed() {
			t.Fatalf("tuple %#v, key %q", x, key)
		}
	}
}

// ---- order --------------------------------------------------------------------------

func TestKeyOrderProperty(t *testing.T) {
	g := newKBGen(t)
	for range 20000 {
		sig := g.signature(1, 4)
		a := g.tuple(sig)
		b := g.near(sig, a)
		if g.r.IntN(4) == 0 {
			b = g.tuple(sig)
		}
		ea, err := EncodeKey(a...)
		require.NoError(t, err)
		eb, err := EncodeKey(b...)
		require.NoError(t, err)
		want := kbTupleCompare(a, b)
		got := sign(bytes.Compare([]byte(ea), []byte(eb)))
		if got != want {
			t.Fatalf("order: compare(%#v, %#v) = %d, but the keys %q and %q compare %d", a, b, want, ea, eb, got)
		}
	}
}

// Sorting many keys of one signature sorts their tuples.
func TestKeyOrderSort(t *testing.T) {
	g := newKBGen(t)
	for range 20 {
		sig := g.signature(1, 3)
		type row struct {
			tuple []any
			key   string
		}
		rows := make([]row, 300)
		for i := range rows {
			x := g.tuple(sig)
			if i > 0 && g.r.IntN(2) == 0 {
				x = g.near(sig, rows[g.r.IntN(i)].tuple)
			}
			k, err := EncodeKey(x...)
			require.NoError(t, err)
			rows[i] = row{x, k}
		}
		slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.key, b.key) })
		for i := 1; i < len(rows); i++ {
			c := kbTupleCompare(rows[i-1].tuple, rows[i].tuple)
			require.LessOrEqual(t, c, 0, "%#v sorted before %#v (%q, %q)", rows[i-1].tuple, rows[i].tuple, rows[i-1].key, rows[i].key)
			require.Equal(t, c == 0, rows[i-1].key == rows[i].key, "equal tuples, equal keys")
		}
	}
}

// Every component type on its own: order holds for each pair of special
// values, the whole cross product.
func TestKeyOrderSpecialValues(t *testing.T) {
	var lists [][]any
	var ints, uints, floats, times, strs []any
	for _, n := range kbSpecialInts {
		ints = append(ints, n)
	}
	for _, n := range []uint64{0, 1, 9, 10, 99, 100, 1 << 63, math.MaxUint64 - 1, math.MaxUint64} {
		uints = append(uints, n)
	}
	for _, f := range kbSpecialFloats {
		floats = append(floats, f)
	}
	for _, tm := range []time.Time{kbMinTime, kbMaxTime, time.Unix(0, 0), time.Unix(-1, 999999999), time.Unix(0, 1),
		time.Date(9999, 12, 31, 23, 59, 59, 999999998, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		times = append(times, tm)
	}
	for _, s := range kbHostile {
		strs = append(strs, s)
	}
	// []byte components, whose hex must sort as the raw bytes: the jump
	// between the digits '9' and 'A' (0x09/0x0A), nibble boundaries
	// (0x0F/0x10, 0x0F/0xF0), prefixes, invalid UTF-8, and the bytes of the
	// hostile strings.
	var byteStrs []any
	for _, b := range [][]byte{nil, {0}, {0, 0}, {0, 0xFF}, {0x09}, {0x0A}, {0x0F}, {0x10}, {0x23}, {0x24}, {0x25},
		{0x7F}, {0x80}, {0x9F}, {0xA0}, {0xF0}, {0xFF}, {0xFF, 0}, {0xFF, 0xFF}, []byte("a"), []byte("a#"), []byte("a\x00")} {
		byteStrs = append(byteStrs, b)
	}
	for _, s := range kbHostile[:20] {
		byteStrs = append(byteStrs, []byte(s))
	}
	lists = append(lists, ints, uints, floats, times, strs, byteStrs)
	for _, list := range lists {
		for _, a := range list {
			for _, b := range list {
				ea, err := EncodeKey(a)
				require.NoError(t, err)
				eb, err := EncodeKey(b)
				require.NoError(t, err)
				assert.Equal(t, kbCompare(a, b), sign(strings.Compare(ea, eb)), "%#v (%q) vs %#v (%q)", a, ea, b, eb)
			}
		}
	}
}

// ---- exactness ---------------------------------------------------------------------

func TestKeyPrefixExactProperty(t *testing.T) {
	g := newKBGen(t)
	matched, missed := 0, 0
	for range 20000 {
		sig := g.signature(2, 5)
		full := g.tuple(sig)
		k := 1 + g.r.IntN(len(sig)-1)
		lead := slices.Clone(full[:k])
		if g.r.IntN(2) == 0 {
			j := g.r.IntN(k)
			lead[j] = g.mutate(sig[j], lead[j])
		}
		key, err := EncodeKey(full...)
		require.NoError(t, err)
		p, err := KeyPrefix(lead...)
		require.NoError(t, err)
		want := kbTupleEqual(lead, full[:k])
		if strings.HasPrefix(key, p) != want {
			t.Fatalf("exactness: HasPrefix(%q, %q) = %v for lead %#v of %#v", key, p, !want, lead, full)
		}
		if want {
			matched++
		} else {
			missed++
		}
		// A prefix needs more components to follow: the whole tuple as a lead
		// never matches its own key.
		whole, err := KeyPrefix(full...)
		require.NoError(t, err)
		require.False(t, strings.HasPrefix(key, whole))
	}
	t.Logf("%d matching leads, %d near misses", matched, missed)
	assert.Greater(t, matched, 1000)
	assert.Greater(t, missed, 1000)
}

func TestKeyPrefixNearMisses(t *testing.T) {
	for _, tc := range []struct {
		full, lead []any
		match      bool
	}{
		{[]any{"a#b", "x"}, []any{"a"}, false},      // a counterexample to '##' escaping
		{[]any{"a", "b", "x"}, []any{"a"}, true},    //
		{[]any{"a$23", "x"}, []any{"a$"}, false},    // an escape-looking value
		{[]any{"a$", "x"}, []any{"a$23"}, false},    //
		{[]any{"a$", "x"}, []any{"a$"}, true},       //
		{[]any{"a#", "x"}, []any{"a"}, false},       //
		{[]any{"a", "#x"}, []any{"a", ""}, false},   // empty component vs a leading '#'
		{[]any{"a", "", "x"}, []any{"a", ""}, true}, //
		{[]any{"ab", "x"}, []any{"a"}, false},       //
		{[]any{"a\x00", "x"}, []any{"a"}, false},    //
		{[]any{"", "x"}, []any{""}, true},           //
		{[]any{"#", "x"}, []any{""}, false},         //
		{[]any{int64(100), "x"}, []any{int64(10)}, false},
		{[]any{int64(1000), "x"}, []any{int64(100)}, false},
		{[]any{int64(-10), "x"}, []any{int64(-1)}, false},
		{[]any{int64(10), "x"}, []any{int64(10)}, true},
		{[]any{kbVersion{1, 2}, "x"}, []any{kbVersion{1, 2}}, true},
		{[]any{"a", kbVersion{1, 2}}, []any{"a", "00001"}, false},
		{[]any{[]byte("a#b"), "x"}, []any{[]byte("a")}, false},       // hex 612362 vs 61
		{[]any{[]byte("a"), "x"}, []any{[]byte("a")}, true},          //
		{[]any{[]byte{0x01, 0x23}, "x"}, []any{[]byte{0x01}}, false}, // "0123" begins with "01", but not with "01#"
		{[]any{[]byte{0x12}, "x"}, []any{[]byte{0x01}}, false},       //
		{[]any{[]byte{}, "x"}, []any{[]byte{}}, true},                // an empty []byte
		{[]any{[]byte{0}, "x"}, []any{[]byte{}}, false},              //
		{[]any{[]byte("\xff"), "x"}, []any{[]byte("\xff")}, true},    // invalid UTF-8 is fine in a []byte
		{[]any{"a", []byte("#"), "x"}, []any{"a", []byte("#")}, true},
		{[]any{"a", []byte("#x"), "x"}, []any{"a", []byte("#")}, false},
	} {
		key, err := EncodeKey(tc.full...)
		require.NoError(t, err)
		p, err := KeyPrefix(tc.lead...)
		require.NoError(t, err)
		assert.Equal(t, tc.match, strings.HasPrefix(key, p), "HasPrefix(%q, %q)", key, p)
	}
}

// ---- fixed width ----------------------------------------------------------------------

func TestKeyFixedWidth(t *testing.T) {
	e, err := newEncoder(reflect.TypeFor[int64](), 13, "")
	require.NoError(t, err)
	enc := func(n int64) (string, error) {
		b, err := e.appendKey(nil, reflect.ValueOf(n))
		return string(b), err
	}
	for _, n := range []int64{0, 1, 42, 1733000000000, 9999999999999} {
		s, err := enc(n)
		require.NoError(t, err, n)
		assert.Equal(t, fmt.Sprintf("%013d", n), s)
		require.NoError(t, e.check(s))
		var back int64
		require.NoError(t, e.parse(s, reflect.ValueOf(&back).Elem()))
		assert.Equal(t, n, back)
	}
	_, err = enc(10000000000000) // 14 digits
	assert.ErrorContains(t, err, "width")
	_, err = enc(-1)
	assert.ErrorIs(t, err, errNegative)
	_, err = enc(math.MinInt64)
	assert.ErrorIs(t, err, errNegative)

	var v int64
	for _, bad := range []string{"", "1", "000000000004", "00000000000042", "-000000000001", "00000000000x1", "+000000000001", " 000000000001", "a0"} {
		assert.Error(t, e.check(bad), "%q", bad)
		assert.ErrorIs(t, e.parse(bad, reflect.ValueOf(&v).Elem()), errMalformed, "%q", bad)
	}

	// Order: byte order of fixed-width texts is numeric order.
	g := newKBGen(t)
	for range 5000 {
		a, b := g.r.Int64N(1e13), g.r.Int64N(1e13)
		if g.r.IntN(3) == 0 {
			b = a + g.r.Int64N(3) - 1
			b = max(0, min(b, 9999999999999))
		}
		ea, err := enc(a)
		require.NoError(t, err)
		eb, err := enc(b)
		require.NoError(t, err)
		require.Equal(t, cmp.Compare(a, b), strings.Compare(ea, eb), "%d %d", a, b)
	}
}

// check and parse agree on every fixed-width text, including the ones that
// overflow the Go type.
func TestKeyFixedWidthOverflow(t *testing.T) {
	for _, tc := range []struct {
		typ   reflect.Type
		width int
		ok    []string
		bad   []string
	}{
		{reflect.TypeFor[int64](), 19, []string{"9223372036854775807", "0000000000000000000"}, []string{"9223372036854775808", "9999999999999999999"}},
		{reflect.TypeFor[int8](), 3, []string{"127", "000"}, []string{"128", "255", "999"}},
		{reflect.TypeFor[int32](), 10, []string{"2147483647"}, []string{"2147483648"}},
		{reflect.TypeFor[uint8](), 3, []string{"255", "000"}, []string{"256", "999"}},
		{reflect.TypeFor[uint64](), 20, []string{"18446744073709551615", "00000000000000000000"}, []string{"18446744073709551616", "99999999999999999999"}},
	} {
		e, err := newEncoder(tc.typ, tc.width, "")
		require.NoError(t, err)
		for _, s := range tc.ok {
			v := reflect.New(tc.typ).Elem()
			require.NoError(t, e.check(s), "%s %q", tc.typ, s)
			require.NoError(t, e.parse(s, v), "%s %q", tc.typ, s)
			b, err := e.appendKey(nil, v)
			require.NoError(t, err)
			assert.Equal(t, s, string(b), "re-encoding a parsed fixed-width text")
		}
		for _, s := range tc.bad {
			assert.Error(t, e.check(s), "check %s %q", tc.typ, s)
			assert.Error(t, e.parse(s, reflect.New(tc.typ).Elem()), "parse %s %q", tc.typ, s)
		}
	}
	// The width is checked for unsigned values too.
	e, err := newEncoder(reflect.TypeFor[uint64](), 3, "")
	require.NoError(t, err)
	_, err = e.appendKey(nil, reflect.ValueOf(uint64(1000)))
	assert.Error(t, err)
}

// ---- totality: what is rejected ---------------------------------------------------------

func TestKeyRejectsNaN(t *testing.T) {
	for _, v := range []any{math.NaN(), float32(math.NaN()), -math.NaN()} {
		_, err := EncodeKey("a", v)
		assert.ErrorIs(t, err, errNaN, "%T", v)
		_, err = KeyPrefix(v)
		assert.ErrorIs(t, err, errNaN)
	}
	// The bit patterns of NaN do not decode.
	var f float64
	for _, bits := range []uint64{0x7FF8000000000001, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF} {
		// The encoded form of a positive bit pattern has the top bit set.
		enc := fmt.Sprintf("%016X", bits|1<<63)
		assert.ErrorIs(t, DecodeKey(enc, &f), errMalformed, enc)
		enc = fmt.Sprintf("%016X", ^(bits | 1<<63))
		assert.ErrorIs(t, DecodeKey(enc, &f), errMalformed, enc)
	}
}

func TestKeyRejectsUnencodable(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"bool", true},
		{"map", map[string]int{}},
		{"struct", struct{ A int }{}},
		{"pointer", new(string)},
		{"slice", []int{1}},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year -1", time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"year 0 east of UTC", time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("e", 3600))},
		{"failing KeyTexter", kbFailing{}},
	} {
		_, err := EncodeKey("ok", tc.v)
		assert.Error(t, err, tc.name)
		assert.ErrorContains(t, err, "component 1", tc.name)
	}
	_, err := newEncoder(reflect.TypeFor[bool](), 0, "")
	assert.ErrorIs(t, err, errUnsupported)
}

// A string component must be valid UTF-8: a DynamoDB String holds nothing
// else, and the SDK would replace the bad bytes with U+FFFD, so two distinct
// keys could become one stored key. Every way a string goes into a key
// refuses it; a []byte holds any byte.
func TestKeyRejectsInvalidUTF8(t *testing.T) {
	strEnc, err := newEncoder(reflect.TypeFor[string](), 0, "")
	require.NoError(t, err)
	namedEnc, err := newEncoder(reflect.TypeFor[kbNamedString](), 0, "")
	require.NoError(t, err)
	custEnc, err := newEncoder(reflect.TypeFor[kbNoParser](), 0, "")
	require.NoError(t, err)
	bytesEnc, err := newEncoder(reflect.TypeFor[[]byte](), 0, "")
	require.NoError(t, err)
	for _, bad := range kbInvalidUTF8 {
		require.False(t, utf8.ValidString(bad), "%q", bad)
		for _, c := range []any{bad, kbNamedString(bad), kbNoParser(bad)} {
			// EncodeKey and KeyPrefix, alone and after other components.
			_, err := EncodeKey(c)
			assert.ErrorIs(t, err, errInvalidUTF8, "EncodeKey(%#v)", c)
			assert.ErrorContains(t, err, "component 0")
			_, err = EncodeKey("ok", int64(1), c)
			assert.ErrorIs(t, err, errInvalidUTF8, "EncodeKey(ok, 1, %#v)", c)
			assert.ErrorContains(t, err, "component 2")
			_, err = KeyPrefix(c)
			assert.ErrorIs(t, err, errInvalidUTF8, "KeyPrefix(%#v)", c)
			_, err = KeyPrefix([]byte("ok"), c)
			assert.ErrorIs(t, err, errInvalidUTF8, "KeyPrefix(ok, %#v)", c)
		}
		// The encoders of declared components.
		for _, tc := range []struct {
			e encoder
			v any
		}{{strEnc, bad}, {namedEnc, kbNamedString(bad)}, {custEnc, kbNoParser(bad)}} {
			out, err := tc.e.appendKey([]byte("p#"), reflect.ValueOf(tc.v))
			assert.ErrorIs(t, err, errInvalidUTF8, "appendKey %T %q", tc.v, bad)
			assert.Equal(t, "p#", string(out), "nothing appended")
			_, err = tc.e.appendText(nil, bad)
			assert.ErrorIs(t, err, errInvalidUTF8, "appendText %T %q", tc.v, bad)
		}

		// The same bytes as a []byte: hex, and back.
		want := strings.ToUpper(hex.EncodeToString([]byte(bad)))
		got, err := EncodeKey([]byte(bad), "x")
		require.NoError(t, err, "%q", bad)
		assert.Equal(t, want+"#x", got)
		txt, err := bytesEnc.appendText(nil, bad)
		require.NoError(t, err)
		assert.Equal(t, want, string(txt))
		var b []byte
		var x string
		require.NoError(t, DecodeKey(got, &b, &x))
		assert.Equal(t, []byte(bad), b)

		// What EncodeKey refuses does not decode either: strict decoding
		// holds for strings too. esc is the bytes escaped as if they were
		// allowed, so that only their UTF-8 is wrong.
		var s string
		esc := string(appendEscaped(nil, bad))
		for _, key := range []string{esc, "ok#" + esc} {
			var into []any
			if strings.HasPrefix(key, "ok#") {
				into = []any{&x, &s}
			} else {
				into = []any{&s}
			}
			err := DecodeKey(key, into...)
			assert.ErrorIs(t, err, errInvalidUTF8, "DecodeKey(%q)", key)
			assert.ErrorIs(t, err, errMalformed, "DecodeKey(%q)", key)
		}
		var v kbVersion
		assert.ErrorIs(t, DecodeKey(esc, &v), errInvalidUTF8, "a KeyTexter's text is a string too")
		_, err = strEnc.componentText(esc)
		assert.ErrorIs(t, err, errInvalidUTF8)
		_, err = custEnc.componentText(esc)
		assert.ErrorIs(t, err, errInvalidUTF8)
	}
	// Valid UTF-8 right up to the limits still encodes.
	for _, ok := range []string{"\U0010FFFF", "\uFFFD", "\uFFFE", "\u07FF", "\u0800", "\uD7FF", "\uE000", "\x7f", "\x00"} {
		require.True(t, utf8.ValidString(ok))
		_, err := EncodeKey(ok, kbNoParser(ok))
		assert.NoError(t, err, "%q", ok)
	}
}

// Malformed texts do not decode: every text has exactly one meaning, and a
// key EncodeKey could not have produced is an error.
func TestDecodeKeyRejectsMalformed(t *testing.T) {
	var (
		s  string
		bs []byte
		i  int64
		i8 int8
		u  uint64
		u8 uint8
		f  float64
		f3 float32
		tm time.Time
	)
	for _, tc := range []struct {
		key  string
		into any
	}{
		{"$2", &s}, {"$", &s}, {"a$", &s}, {"$2a", &s}, {"$2g", &s}, {"$41", &s}, {"$25", &s}, {"$FF", &s}, {"$7E", &s},
		{"\x01", &s}, {"\x00", &s}, {"a b", &s}, {"\xff", &s}, {"a\xc3", &s}, {"$23\xff", &s}, {"\xed\xa0\x80", &s},
		// A []byte is upper-case hex, two digits a byte, and nothing else.
		{"$", &bs}, {"\x24", &bs}, {"$41", &bs}, {"6", &bs}, {"612", &bs}, {"6a", &bs}, {"ff", &bs}, {"6G", &bs}, {"a#", &bs},
		{" 61", &bs}, {"61 ", &bs}, {"$24", &bs}, {"a", &bs}, {"\xff", &bs}, {"0x61", &bs}, {"+1", &bs}, {"-1", &bs},
		{"b04", &i}, {"Z9", &i}, {"Z", &i}, {"a", &i}, {"", &i}, {"c42", &i}, {"a42", &i}, {"b4", &i}, {"bx2", &i}, {"B42", &i},
		{"Y9", &i}, {"Y90", &i}, {"$62$34$32", &i}, {"t18446744073709551615", &i}, {"s9223372036854775808", &i},
		{"H0776627963145224190", &i}, // -9223372036854775809
		{"G00000000000000000000", &i},
		{"u100000000000000000000", &u}, {"t18446744073709551616", &u}, {"Z8", &u}, {"a00", &u}, {"b01", &u},
		{"d128", &i8}, {"X870", &i8}, {"d256", &u8},
		{"800000000000000", &f}, {"80000000000000000", &f}, {"8000000000000g00", &f}, {"800000000000000a", &f},
		{"7FFFFFFFFFFFFFFF", &f},  // -0
		{"BFF199999999999A", &f3}, // 1.1 is not a float32
		{"2026-12-02T13:54:41Z", &tm}, {"2026-12-02T13:54:41.000000000+00:00", &tm}, {"2026-12-02t13:54:41.000000000Z", &tm},
		{"2026-02-30T00:00:00.000000000Z", &tm}, {"2026-12-02T24:00:00.000000000Z", &tm}, {"2026-12-02", &tm},
		{"12026-12-02T13:54:41.000000000Z", &tm}, {" 2026-12-02T13:54:41.000000000Z", &tm},
	} {
		err := DecodeKey(tc.key, tc.into)
		require.Error(t, err, "DecodeKey(%q, %T)", tc.key, tc.into)
		assert.ErrorIs(t, err, errMalformed, "DecodeKey(%q, %T): %v", tc.key, tc.into, err)
	}
	// Wrong component counts, and escapes or raw bytes in a later component.
	for _, key := range []string{"a#b#c", "a", "a#$2", "a#\x01", "a#$41", "a#\xff"} {
		assert.Error(t, DecodeKey(key, &s, &s), key)
	}
	for _, key := range []string{"a#6", "a#6a", "a#a", "a#$61", "a#61#", "6123#a"} {
		assert.ErrorIs(t, DecodeKey(key, &s, &bs), errMalformed, key)
	}
	_, err := SplitKey("a#$4")
	assert.ErrorIs(t, err, errMalformed)

	// Arguments that are not usable pointers.
	assert.ErrorContains(t, DecodeKey("a", s), "pointer")
	assert.ErrorContains(t, DecodeKey("a", (*string)(nil)), "pointer")
	assert.ErrorIs(t, DecodeKey("a", new(bool)), errUnsupported)
	assert.ErrorContains(t, DecodeKey("a", new(kbNoParser)), "KeyTextParser")
	var v kbVersion
	assert.Error(t, DecodeKey("00001", &v), "the custom parser's error comes through")
}

// kbFragments are pieces of keys: valid component texts of every type and
// the malformed pieces around them.
func kbFragments() []string {
	frags := []string{"", "#", "$", "$2", "$23", "$24", "$2a", "$41", "$00", "$FF", "$20", "\x01", "\x00", "\x25",
		"a", "z", "0", "9", "Z", "b", "b0", "b04", "Z9", "Z8", "Y00", "t", "H", "a0", "-", ".", ":", "T", "Z",
		"2026-12-02", "T13:54:41", ".000000000", "0000-01-01", "9999-12-31", "é", "\xff", "F", "7FFFFFFFFFFFFFFF",
		"\xc3", "\xa9", "\xed\xa0\x80", "00", "FF", "ff", "6123", "6", "A", "0F", "f0"}
	g := kbGen{rand.New(rand.NewPCG(1, 2))}
	for k := kbKind(0); k < kbKindCount; k++ {
		for range 8 {
			s, err := EncodeKey(g.value(k))
			if err == nil {
				frags = append(frags, s)
			}
		}
	}
	return frags
}

// Strict decoding, by property: a random text that decodes re-encodes to
// itself.
func TestDecodeKeyCanonicalProperty(t *testing.T) {
	g := newKBGen(t)
	frags := kbFragments()
	decoded := 0
	for range 30000 {
		var key string
		switch g.r.IntN(3) {
		case 0: // a valid key, mutated
			sig := g.signature(1, 3)
			k, err := EncodeKey(g.tuple(sig)...)
			require.NoError(t, err)
			key = kbMutateText(g, k)
		default:
			var b strings.Builder
			for n := 1 + g.r.IntN(4); n > 0; n-- {
				b.WriteString(frags[g.r.IntN(len(frags))])
			}
			key = b.String()
		}
		n := strings.Count(key, "#") + 1
		sig := make([]kbKind, n)
		for i := range sig {
			sig[i] = kbKind(g.r.IntN(int(kbKindCount)))
		}
		if g.r.IntN(2) == 0 { // often all one type: more chances to decode
			for i := range sig {
				sig[i] = sig[0]
			}
		}
		ptrs := kbPointers(sig)
		if err := DecodeKey(key, ptrs...); err != nil {
			continue
		}
		decoded++
		back, err := EncodeKey(kbDeref(ptrs)...)
		require.NoError(t, err, "re-encoding what %q decoded to", key)
		if back != key {
			t.Fatalf("%q decodes as %v %#v, which encodes as %q", key, sig, kbDeref(ptrs), back)
		}
	}
	t.Logf("%d random texts decoded", decoded)
	assert.Greater(t, decoded, 1000)
}

func kbMutateText(g kbGen, s string) string {
	b := []byte(s)
	pick := func() byte {
		const set = "#$0129AFafZzHtT-:.\x00\x01\x24\x25\xff"
		return set[g.r.IntN(len(set))]
	}
	switch op := g.r.IntN(4); {
	case op == 0 && len(b) > 0:
		b[g.r.IntN(len(b))] = pick()
	case op == 1 && len(b) > 0:
		i := g.r.IntN(len(b))
		b = append(b[:i], b[i+1:]...)
	case op == 2:
		i := g.r.IntN(len(b) + 1)
		b = slices.Insert(b, i, pick())
	default:
		if len(b) > 0 {
			i := g.r.IntN(len(b))
			if c := b[i]; c >= 'A' && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			} else if c >= 'a' && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
	}
	return string(b)
}

// unescape on its own: it inverts appendEscaped and nothing else; parseHex
// likewise for appendHex.
func TestKeyUnescape(t *testing.T) {
	for b := 0; b < 256; b++ {
		s := string([]byte{byte(b)})
		enc := string(appendEscaped(nil, s))
		assert.Equal(t, fmt.Sprintf("%02X", b), string(appendHex(nil, []byte(s))))
		if b <= 0x24 {
			assert.Equal(t, fmt.Sprintf("$%02X", b), enc)
			_, err := unescape(s)
			assert.ErrorIs(t, err, errMalformed, "raw 0x%02X", b)
			_, err = unescape(fmt.Sprintf("$%02x", b))
			if strings.ToUpper(fmt.Sprintf("%02x", b)) != fmt.Sprintf("%02x", b) {
				assert.ErrorIs(t, err, errMalformed, "lower-case escape of 0x%02X", b)
			}
		} else {
			assert.Equal(t, s, enc)
			_, err := unescape(fmt.Sprintf("$%02X", b))
			assert.ErrorIs(t, err, errMalformed, "escape of 0x%02X", b)
		}
		back, err := unescape(enc)
		require.NoError(t, err)
		assert.Equal(t, s, back)
	}
	for _, bad := range []string{"$", "$2", "x$2", "$2a", "$g0", "$-1", "$ 1", "ok$"} {
		_, err := unescape(bad)
		assert.ErrorIs(t, err, errMalformed, "%q", bad)
	}

	// Hex: every byte, every pair of bytes in order.
	for a := 0; a < 256; a++ {
		ha := string(appendHex(nil, []byte{byte(a)}))
		back, err := parseHex(ha)
		require.NoError(t, err)
		assert.Equal(t, string([]byte{byte(a)}), back)
		if lower := strings.ToLower(ha); lower != ha {
			_, err := parseHex(lower)
			assert.ErrorIs(t, err, errMalformed, "lower-case hex %q", lower)
		}
		for b := 0; b < 256; b++ {
			hb := string(appendHex(nil, []byte{byte(b)}))
			require.Equal(t, cmp.Compare(a, b), strings.Compare(ha, hb), "0x%02X vs 0x%02X", a, b)
			// At a component boundary: a []byte sorts before its extensions.
			short, err := EncodeKey([]byte{byte(a)}, "x")
			require.NoError(t, err)
			long, err := EncodeKey([]byte{byte(a), byte(b)}, "")
			require.NoError(t, err)
			require.Less(t, short, long, "0x%02X then more vs 0x%02X 0x%02X", a, a, b)
		}
	}
	for _, bad := range []string{"0", "000", "0g", "g0", "0x", " 0", "0 ", "$0", "#0", "\xff\xff", "-1", "+1", "AB0"} {
		_, err := parseHex(bad)
		assert.ErrorIs(t, err, errMalformed, "%q", bad)
	}
	back, err := parseHex("")
	require.NoError(t, err)
	assert.Equal(t, "", back)
}

// ---- every kind through its encoder ---------------------------------------------------

type kbNamedString string
type kbNamedInt int16

func TestKeyEncoderKinds(t *testing.T) {
	g := newKBGen(t)
	gens := map[reflect.Type]func() any{
		reflect.TypeFor[string]():        func() any { return g.str() },
		reflect.TypeFor[kbNamedString](): func() any { return kbNamedString(g.str()) },
		reflect.TypeFor[[]byte]():        func() any { return g.byteStr() },
		reflect.TypeFor[int]():           func() any { return int(g.i64()) },
		reflect.TypeFor[int8]():          func() any { return int8(g.i64()) },
		reflect.TypeFor[int16]():         func() any { return int16(g.i64()) },
		reflect.TypeFor[kbNamedInt]():    func() any { return kbNamedInt(g.i64()) },
		reflect.TypeFor[int32]():         func() any { return int32(g.i64()) },
		reflect.TypeFor[int64]():         func() any { return g.i64() },
		reflect.TypeFor[uint]():          func() any { return uint(g.u64()) },
		reflect.TypeFor[uint8]():         func() any { return uint8(g.u64()) },
		reflect.TypeFor[uint16]():        func() any { return uint16(g.u64()) },
		reflect.TypeFor[uint32]():        func() any { return uint32(g.u64()) },
		reflect.TypeFor[uint64]():        func() any { return g.u64() },
		reflect.TypeFor[uintptr]():       func() any { return uintptr(g.u64()) },
		reflect.TypeFor[float32]():       func() any { return g.f32() },
		reflect.TypeFor[float64]():       func() any { return g.f64() },
		reflect.TypeFor[time.Time]():     func() any { return g.tm() },
		reflect.TypeFor[kbVersion]():     func() any { return g.custom() },
	}
	for typ, gen := range gens {
		e, err := newEncoder(typ, 0, "")
		require.NoError(t, err, typ)
		prev := map[string]any{}
		for range 300 {
			x := gen()
			v := reflect.ValueOf(x)
			key, err := e.appendKey(nil, v)
			require.NoError(t, err, "%s %#v", typ, x)
			text, err := e.text(v)
			require.NoError(t, err)
			viaText, err := e.appendText(nil, text)
			require.NoError(t, err)
			assert.Equal(t, string(key), string(viaText), "appendKey is appendText of the text")
			if typ.Kind() == reflect.Slice {
				// A []byte's text is its raw bytes; its composite form is hex.
				assert.Equal(t, string(v.Bytes()), text)
				assert.Equal(t, strings.ToUpper(hex.EncodeToString(v.Bytes())), string(key))
			} else {
				assert.Equal(t, string(appendEscaped(nil, text)), string(key), "the composite form is the escaped text")
			}
			back, err := e.componentText(string(key))
			require.NoError(t, err)
			assert.Equal(t, text, back, "componentText reverses appendText")
			require.NoError(t, e.check(text), "%s %q", typ, text)

			// EncodeKey picks the same default form.
			viaAPI, err := EncodeKey(x)
			require.NoError(t, err)
			assert.Equal(t, string(key), viaAPI)

			got := reflect.New(typ).Elem()
			require.NoError(t, e.parse(text, got), "%s %q", typ, text)
			kbRoundTripEqual(t, normalizeForCompare(x), normalizeForCompare(got.Interface()))

			// Numbers: the decimal text of a DynamoDB Number and back.
			if e.isNumber() {
				num, err := e.numberText(text)
				if err != nil && (typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64) {
					// Outside a DynamoDB Number's range (1e-130 to 1e126),
					// numberText may refuse a float; if not, it must invert.
					if f := math.Abs(got.Float()); f >= 1e125 || (f != 0 && f <= 1e-129) {
						continue
					}
				}
				require.NoError(t, err, "%s %q", typ, text)
				back, err := e.textFromNumber(num)
				require.NoError(t, err, "%s %q", typ, num)
				assert.Equal(t, text, back, "%s: %q -> %q -> %q", typ, text, num, back)
				switch typ.Kind() {
				case reflect.Float32, reflect.Float64:
					f, err := strconv.ParseFloat(num, typ.Bits())
					require.NoError(t, err)
					assert.Equal(t, got.Float(), f)
				case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
					assert.Equal(t, strconv.FormatUint(got.Uint(), 10), num)
				default:
					assert.Equal(t, strconv.FormatInt(got.Int(), 10), num)
				}
			} else {
				_, err := e.numberText(text)
				assert.Error(t, err)
				_, err = e.textFromNumber("1")
				assert.Error(t, err)
			}
			// Equal texts for equal values only.
			for pt, px := range prev {
				assert.Equal(t, pt == text, kbCompare(normalizeForCompare(px), normalizeForCompare(x)) == 0, "%s: %q and %q", typ, pt, text)
			}
			if len(prev) < 20 {
				prev[text] = x
			}
		}
	}
}

// normalizeForCompare maps the test's extra types onto those kbCompare knows.
func normalizeForCompare(v any) any {
	rv := reflect.ValueOf(v)
	switch x := v.(type) {
	case time.Time, kbVersion, []byte, string, float32, float64:
		return x
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	}
	return v
}

func TestKeyTextFromNumber(t *testing.T) {
	enc := func(typ reflect.Type) encoder {
		e, err := newEncoder(typ, 0, "")
		require.NoError(t, err)
		return e
	}
	i64, i8, u64, f64, f32 := enc(reflect.TypeFor[int64]()), enc(reflect.TypeFor[int8]()), enc(reflect.TypeFor[uint64]()),
		enc(reflect.TypeFor[float64]()), enc(reflect.TypeFor[float32]())
	want := func(v any) string {
		s, err := EncodeKey(v)
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		e    encoder
		num  string
		want any // nil: an error
	}{
		{i64, "42", int64(42)},
		{i64, "-42", int64(-42)},
		{i64, "1e3", int64(1000)}, // a Number in exponent form
		{i64, "1.0", int64(1)},    //
		{i64, "-9223372036854775808", int64(math.MinInt64)},
		{i64, "9223372036854775807", int64(math.MaxInt64)},
		{i64, "9223372036854775808", nil},
		{i64, "1.5", nil},
		{i64, "abc", nil},
		{i64, "", nil},
		{i8, "127", int64(127)},
		{i8, "-128", int64(-128)},
		{i8, "128", nil},
		{i8, "1e3", nil},
		{u64, "18446744073709551615", uint64(math.MaxUint64)},
		{u64, "0", uint64(0)},
		{u64, "-1", nil},
		{u64, "1.5", nil},
		{f64, "1.5", 1.5},
		{f64, "-0", 0.0},
		{f64, "1e400", nil},
		{f64, "NaN", nil},
		{f64, "x", nil},
		{f32, "0.5", 0.5},
		{f32, "1e39", nil},
	} {
		got, err := tc.e.textFromNumber(tc.num)
		if tc.want == nil {
			assert.Error(t, err, "%s %q", tc.e.typ, tc.num)
			continue
		}
		require.NoError(t, err, "%s %q", tc.e.typ, tc.num)
		assert.Equal(t, want(tc.want), got, "%s %q", tc.e.typ, tc.num)
	}
	// numberText rejects texts that are not the type's.
	for _, tc := range []struct {
		e    encoder
		text string
	}{{i64, "x"}, {i8, "d128"}, {u64, "Z8"}, {f64, "x"}} {
		_, err := tc.e.numberText(tc.text)
		assert.Error(t, err, "%s %q", tc.e.typ, tc.text)
	}
}

// ---- time formats -----------------------------------------------------------------------

func TestKeyTimeFormats(t *testing.T) {
	at := time.Date(2026, 12, 2, 13, 54, 41, 123456789, time.FixedZone("KST", 9*3600))
	for _, tc := range []struct {
		format string
		width  int
		want   string // expected text, computed independently of the encoder
		back   time.Time
	}{
		{"", 0, "2026-12-02T04:54:41.123456789Z", at},
		{"rfc3339", 0, "2026-12-02T04:54:41.123456789Z", at},
		{"unixms", 13, fmt.Sprintf("%013d", at.UnixMilli()), at.Truncate(time.Millisecond)},
		{"unixms", 15, fmt.Sprintf("%015d", at.UnixMilli()), at.Truncate(time.Millisecond)},
		{"unix", 10, fmt.Sprintf("%010d", at.Unix()), at.Truncate(time.Second)},
		{"unix", 0, "j" + strconv.FormatInt(at.Unix(), 10), at.Truncate(time.Second)},
		{"unixms", 0, "m" + strconv.FormatInt(at.UnixMilli(), 10), at.Truncate(time.Millisecond)},
		{"date", 0, "2026-12-02", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
	} {
		e, err := newEncoder(timeType, tc.width, tc.format)
		require.NoError(t, err, "%s/%d", tc.format, tc.width)
		v := at
		if tc.format == "date" || strings.HasPrefix(tc.format, "unix") {
			v = tc.back // a value the format holds exactly
		}
		text, err := e.text(reflect.ValueOf(v))
		require.NoError(t, err, "%s/%d", tc.format, tc.width)
		assert.Equal(t, tc.want, text, "%s/%d", tc.format, tc.width)
		require.NoError(t, e.check(text))
		var got time.Time
		require.NoError(t, e.parse(text, reflect.ValueOf(&got).Elem()))
		assert.True(t, tc.back.Equal(got), "%s/%d: %s decoded as %s", tc.format, tc.width, text, got)
		assert.Equal(t, time.UTC, got.Location())
		assert.False(t, e.isNumber(), "a time is never a native Number")
	}

	// Declaration errors.
	for _, tc := range []struct {
		format string
		width  int
	}{{"rfc3339", 13}, {"", 13}, {"date", 10}, {"iso", 0}, {"UNIXMS", 0}, {"unixms", 21}, {"unixms", -1}} {
		_, err := newEncoder(timeType, tc.width, tc.format)
		assert.Error(t, err, "format=%s width=%d", tc.format, tc.width)
	}
	_, err := newEncoder(reflect.TypeFor[int64](), 0, "unixms")
	assert.ErrorContains(t, err, "time.Time")

	// Encoding errors.
	enc := func(format string, width int, v time.Time) error {
		e, err := newEncoder(timeType, width, format)
		require.NoError(t, err)
		_, err = e.text(reflect.ValueOf(v))
		return err
	}
	// A unix format that would drop precision refuses the value: dropped,
	// it would sort equal to (and Lt would miss) the truncated time.
	assert.ErrorContains(t, enc("unixms", 13, at), "sub-millisecond")
	assert.ErrorContains(t, enc("unixms", 0, at.Truncate(time.Millisecond).Add(time.Microsecond)), "sub-millisecond")
	assert.ErrorContains(t, enc("unix", 0, at.Truncate(time.Second).Add(time.Millisecond)), "sub-second")
	assert.NoError(t, enc("unix", 10, at.Truncate(time.Second)))
	for _, f := range []string{"rfc3339", "date"} {
		assert.ErrorContains(t, enc(f, 0, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), "year", f)
		assert.ErrorContains(t, enc(f, 0, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)), "year", f)
		assert.NoError(t, enc(f, 0, kbMinTime), f)
	}
	assert.NoError(t, enc("rfc3339", 0, kbMaxTime))
	assert.ErrorContains(t, enc("date", 0, time.Date(2026, 12, 2, 0, 0, 0, 1, time.UTC)), "midnight")
	assert.ErrorContains(t, enc("date", 0, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)), "midnight")
	assert.ErrorContains(t, enc("date", 0, time.Date(2026, 12, 2, 0, 0, 0, 0, time.FixedZone("KST", 9*3600))), "midnight")
	assert.NoError(t, enc("date", 0, time.Date(2026, 12, 2, 9, 0, 0, 0, time.FixedZone("KST", 9*3600))), "midnight UTC in another zone")
	assert.ErrorIs(t, enc("unixms", 13, time.UnixMilli(-1)), errNegative)
	assert.ErrorContains(t, enc("unixms", 13, time.UnixMilli(1e13)), "width") // year 2286: 14 digits
	assert.NoError(t, enc("unixms", 13, time.UnixMilli(1e13-1)))
	assert.NoError(t, enc("unixms", 0, time.UnixMilli(-1)), "the full-range form takes times before 1970")
	assert.NoError(t, enc("unix", 0, time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)), "unix times are not limited to 4-digit years")

	// Parse errors.
	for _, tc := range []struct {
		format string
		width  int
		text   string
	}{
		{"date", 0, "2026-2-02"}, {"date", 0, "2026-02-30"}, {"date", 0, "2026-12-02T00:00:00.000000000Z"}, {"date", 0, "20261202"},
		{"unixms", 13, "173300000000"}, {"unixms", 13, "17330000000000"}, {"unixms", 13, "m1733000000000"}, {"unixms", 0, "1733000000000"},
		{"unix", 10, "-000000001"}, {"unix", 20, "99999999999999999999"}, {"unix", 20, "18446744073709551615"}, {"unixms", 0, "b04"},
		{"rfc3339", 0, "2026-12-02"},
	} {
		e, err := newEncoder(timeType, tc.width, tc.format)
		require.NoError(t, err)
		assert.Error(t, e.check(tc.text), "%s/%d %q", tc.format, tc.width, tc.text)
		var got time.Time
		assert.Error(t, e.parse(tc.text, reflect.ValueOf(&got).Elem()), "%s/%d %q", tc.format, tc.width, tc.text)
	}

	// Order: every format is strictly monotone in time, over the values it
	// holds (the unix formats refuse finer ones).
	g := newKBGen(t)
	formats := []struct {
		format string
		width  int
		unit   time.Duration
	}{{"rfc3339", 0, 1}, {"unixms", 0, time.Millisecond}, {"unix", 0, time.Second}, {"unixms", 15, time.Millisecond}}
	for _, f := range formats {
		e, err := newEncoder(timeType, f.width, f.format)
		require.NoError(t, err)
		for range 3000 {
			a := g.tm()
			b := a.Add(time.Duration(g.r.Int64N(int64(3*time.Second))) - time.Second)
			if g.r.IntN(2) == 0 {
				b = g.tm()
			}
			a, b = a.Truncate(f.unit), b.Truncate(f.unit)
			if f.width > 0 && (a.Before(time.Unix(0, 0)) || b.Before(time.Unix(0, 0))) {
				continue
			}
			ta, err := e.text(reflect.ValueOf(a))
			require.NoError(t, err, "%s %s", f.format, a)
			tb, err := e.text(reflect.ValueOf(b))
			if y := b.UTC().Year(); err != nil && (y < 0 || y > 9999) {
				continue
			}
			require.NoError(t, err, "%s %s", f.format, b)
			c := sign(strings.Compare(ta, tb))
			require.Equal(t, a.Compare(b), c, "%s: %s vs %s: %q %q", f.format, a, b, ta, tb)
		}
	}
}

// ---- fuzzing ---------------------------------------------------------------------------

func FuzzKeyRoundTrip(f *testing.F) {
	for _, s := range kbHostile {
		f.Add(s, int64(0), 0.0, []byte(s))
	}
	for i, n := range kbSpecialInts {
		f.Add(kbHostile[i%len(kbHostile)], n, kbSpecialFloats[i%len(kbSpecialFloats)], []byte{0x00, 0x23, 0x24, 0x25, 0xff})
	}
	for _, x := range kbSpecialFloats {
		f.Add("", int64(-1), x, []byte(nil))
	}
	for _, s := range kbInvalidUTF8 {
		f.Add(s, int64(1), 1.0, []byte(s))
	}
	f.Add("", int64(0), math.NaN(), []byte("\xff\xfe"))
	f.Add("\xff", int64(0), math.NaN(), []byte("\xff"))
	// Texts of other types, so that the strict decoding below has work.
	f.Add("b04", int64(42), 1.5, []byte("Z9"))
	f.Add("open#b42", int64(0), 0.0, []byte("TICKET$238842"))
	f.Add("2026-12-02T13:54:41.000000000Z", int64(0), 0.0, []byte("8000000000000000"))
	f.Add("6123", int64(0), 0.0, []byte("6123"))
	f.Fuzz(func(t *testing.T, s string, n int64, x float64, b []byte) {
		key, err := EncodeKey(s, n, x, b)
		if !utf8.ValidString(s) {
			// A string component must be valid UTF-8, whatever follows.
			require.ErrorIs(t, err, errInvalidUTF8, "%q", s)
			_, err = KeyPrefix(b, n, s)
			require.ErrorIs(t, err, errInvalidUTF8, "%q", s)
			_, err = EncodeKey(kbNoParser(s))
			require.ErrorIs(t, err, errInvalidUTF8, "%q", s)
			// Its escaped bytes do not decode as a string either.
			var s2 string
			require.ErrorIs(t, DecodeKey(string(appendEscaped(nil, s)), &s2), errInvalidUTF8, "%q", s)
			// The same bytes as a []byte are fine.
			key, err = EncodeKey([]byte(s), n)
			require.NoError(t, err)
			var b2 []byte
			var n2 int64
			require.NoError(t, DecodeKey(key, &b2, &n2))
			require.Equal(t, s, string(b2))
			require.Equal(t, n, n2)
			return
		}
		if math.IsNaN(x) {
			require.ErrorIs(t, err, errNaN)
			return
		}
		require.NoError(t, err)
		var (
			s2 string
			n2 int64
			x2 float64
			b2 []byte
		)
		require.NoError(t, DecodeKey(key, &s2, &n2, &x2, &b2), "key %q", key)
		require.Equal(t, s, s2)
		require.Equal(t, n, n2)
		require.True(t, x == x2, "%v decoded as %v", x, x2)
		require.False(t, x2 == 0 && math.Signbit(x2), "-0 decodes as 0")
		require.True(t, bytes.Equal(b, b2), "%q decoded as %q", b, b2)
		hexB := strings.ToUpper(hex.EncodeToString(b))
		parts, err := SplitKey(key)
		require.NoError(t, err)
		require.Equal(t, []string{s, kbSplitText(t, n), kbSplitText(t, x), hexB}, parts, "SplitKey(%q)", key)
		require.True(t, strings.HasSuffix(key, "#"+hexB), "the []byte is the hex at the end: %q", key)
		require.Equal(t, 3, strings.Count(key, "#"), "only separators are '#'")
		require.True(t, utf8.ValidString(key), "a key is a valid DynamoDB String")
		p, err := KeyPrefix(s, n, x, b)
		require.NoError(t, err)
		require.Equal(t, key+"#", p)

		// Strict decoding: the fuzzed texts as keys decode only if canonical.
		for _, raw := range []string{s, string(b), hexB, string(appendEscaped(nil, string(b)))} {
			for _, p := range []any{new(string), new(int64), new(uint64), new(float64), new(time.Time), new([]byte), new(int8), new(float32), new(kbVersion)} {
				if DecodeKey(raw, p) == nil {
					back, err := EncodeKey(reflect.ValueOf(p).Elem().Interface())
					require.NoError(t, err, "%q decodes into %T", raw, p)
					require.Equal(t, raw, back, "%q decodes into %T", raw, p)
				}
			}
			var ps string
			var pn int64
			if DecodeKey(raw, &ps, &pn) == nil {
				back, err := EncodeKey(ps, pn)
				require.NoError(t, err)
				require.Equal(t, raw, back)
			}
			var pb []byte
			if DecodeKey(raw, &pb, &ps) == nil {
				back, err := EncodeKey(pb, ps)
				require.NoError(t, err)
				require.Equal(t, raw, back)
			}
		}
	})
}

func FuzzKeyOrder(f *testing.F) {
	for i, s := range kbHostile {
		t := kbHostile[(i+1)%len(kbHostile)]
		f.Add(s, kbSpecialInts[i%len(kbSpecialInts)], t, kbSpecialInts[(i+3)%len(kbSpecialInts)])
		f.Add(s, int64(1), s, int64(-1))
		f.Add(s, int64(10), s+"#", int64(10))
	}
	for i, s := range kbInvalidUTF8 {
		f.Add(s, int64(0), kbHostile[i%len(kbHostile)], int64(0))
		f.Add("a", int64(0), s, int64(0))
	}
	f.Add("a", int64(0), "a#b", int64(0))
	f.Add("a$", int64(0), "a$23", int64(0))
	f.Add("a", int64(9), "a", int64(10))
	f.Add("a", int64(-10), "a", int64(-9))
	f.Add("a", int64(math.MinInt64), "a", int64(math.MaxInt64))
	f.Add("a\x00", int64(0), "a", int64(0))
	f.Add("\U0010FFFF", int64(0), "\uFFFF", int64(0))
	f.Add("\x0f", int64(0), "\xf0", int64(0))
	f.Add("\x7f", int64(0), "\x80", int64(0))
	f.Fuzz(func(t *testing.T, s1 string, n1 int64, s2 string, n2 int64) {
		// []byte components hold any bytes: their hex sorts as the raw
		// bytes, and their prefixes are exact.
		b1, b2 := []byte(s1), []byte(s2)
		a, err := EncodeKey(b1, n1)
		require.NoError(t, err)
		b, err := EncodeKey(b2, n2)
		require.NoError(t, err)
		want := cmp.Or(bytes.Compare(b1, b2), cmp.Compare(n1, n2))
		require.Equal(t, want, sign(strings.Compare(a, b)), "(%q, %d) %q vs (%q, %d) %q", b1, n1, a, b2, n2, b)
		a, err = EncodeKey(n1, b1)
		require.NoError(t, err)
		b, err = EncodeKey(n2, b2)
		require.NoError(t, err)
		want = cmp.Or(cmp.Compare(n1, n2), bytes.Compare(b1, b2))
		require.Equal(t, want, sign(strings.Compare(a, b)), "(%d, %q) %q vs (%d, %q) %q", n1, b1, a, n2, b2, b)
		full, err := EncodeKey(b1, n1, b2)
		require.NoError(t, err)
		for _, tc := range []struct {
			lead []any
			want bool
		}{
			{[]any{b2}, bytes.Equal(b1, b2)},
			{[]any{b1}, true},
			{[]any{b2, n2}, bytes.Equal(b1, b2) && n1 == n2},
			{[]any{b1, n2}, n1 == n2},
		} {
			p, err := KeyPrefix(tc.lead...)
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.HasPrefix(full, p), "HasPrefix(%q, %q)", full, p)
		}

		// Strings must be valid UTF-8.
		if !utf8.ValidString(s1) || !utf8.ValidString(s2) {
			for _, s := range []string{s1, s2} {
				if utf8.ValidString(s) {
					continue
				}
				for _, c := range [][]any{{s, n1}, {n1, s}, {s1, n1, s2}, {n1, s, n2}, {s, b1}} {
					_, err := EncodeKey(c...)
					require.ErrorIs(t, err, errInvalidUTF8, "EncodeKey(%#v)", c)
					_, err = KeyPrefix(c...)
					require.ErrorIs(t, err, errInvalidUTF8, "KeyPrefix(%#v)", c)
				}
			}
			return
		}
		a, err = EncodeKey(s1, n1)
		require.NoError(t, err)
		b, err = EncodeKey(s2, n2)
		require.NoError(t, err)
		want = cmp.Or(strings.Compare(s1, s2), cmp.Compare(n1, n2))
		require.Equal(t, want, sign(strings.Compare(a, b)), "(%q, %d) %q vs (%q, %d) %q", s1, n1, a, s2, n2, b)

		// The other way round: number first.
		a, err = EncodeKey(n1, s1)
		require.NoError(t, err)
		b, err = EncodeKey(n2, s2)
		require.NoError(t, err)
		want = cmp.Or(cmp.Compare(n1, n2), strings.Compare(s1, s2))
		require.Equal(t, want, sign(strings.Compare(a, b)), "(%d, %q) %q vs (%d, %q) %q", n1, s1, a, n2, s2, b)

		// Exact prefixes.
		full, err = EncodeKey(s1, n1, s2)
		require.NoError(t, err)
		for _, tc := range []struct {
			lead []any
			want bool
		}{
			{[]any{s2}, s1 == s2},
			{[]any{s1}, true},
			{[]any{s2, n2}, s1 == s2 && n1 == n2},
			{[]any{s1, n2}, n1 == n2},
		} {
			p, err := KeyPrefix(tc.lead...)
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.HasPrefix(full, p), "HasPrefix(%q, %q)", full, p)
		}
		full, err = EncodeKey(n1, s1, n2)
		require.NoError(t, err)
		p, err := KeyPrefix(n2, s2)
		require.NoError(t, err)
		require.Equal(t, n1 == n2 && s1 == s2, strings.HasPrefix(full, p), "HasPrefix(%q, %q)", full, p)

		// A string and a []byte in one key.
		a, err = EncodeKey(s1, b1)
		require.NoError(t, err)
		b, err = EncodeKey(s2, b2)
		require.NoError(t, err)
		want = cmp.Or(strings.Compare(s1, s2), bytes.Compare(b1, b2))
		require.Equal(t, want, sign(strings.Compare(a, b)), "(%q, %q) %q vs (%q, %q) %q", s1, b1, a, s2, b2, b)
	})
}

// ---- benchmark ---------------------------------------------------------------------------

var kbSink string

func BenchmarkEncodeKey(b *testing.B) {
	b.ReportAllocs()
	base := int64(1733000000000)
	i := int64(0)
	for b.Loop() {
		s, err := EncodeKey("TEAM-7", base+i, "user_42")
		if err != nil {
			b.Fatal(err)
		}
		kbSink = s
		i++
	}
}

// EncodeKey appends strings, int64s and ints in place; what it writes must
// be what the encoders write for the same values.
func TestEncodeKeyFastPathsMatchEncoders(t *testing.T) {
	t.Parallel()
	ints := []int64{0, 1, -1, 9, 10, -10, 255, 256, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32, 1733000000000, -1733000000000}
	strs := []string{"", "a", "TEAM-7", "a#b", "a$b", "$", "#", "\x00", "é", "a\x24\x23\x00z"}
	generic := func(components ...any) string {
		var b []byte
		for i, c := range components {
			e, text, err := defaultText(c)
			require.NoError(t, err)
			b, err = appendComponent(b, i, "", e, text)
			require.NoError(t, err)
		}
		return string(b)
	}
	for _, n := range ints {
		for _, s := range strs {
			got, err := EncodeKey(s, n, int(n), s)
			require.NoError(t, err)
			require.Equal(t, generic(s, n, int(n), s), got, "%q %d", s, n)
		}
	}
	_, err := EncodeKey("ok", "\xff")
	require.ErrorIs(t, err, ErrInvalidKey, "a string that is not UTF-8 still goes the checked way")
}

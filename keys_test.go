package ddbindex

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestPredecessor: predecessor(s) sorts below s, and no value of at most
// maxSortKeyBytes bytes lies strictly between the two, for Strings (valid
// UTF-8) and Binary values; so a query that starts after it returns s first.
func TestPredecessor(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune{0, 1, '#', '$', 'a', 'z', 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, utf8.MaxRune}
	randString := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	check := func(s string, binary bool) {
		p := predecessor(s, binary)
		require.Less(t, p, s, "%q", s)
		require.LessOrEqual(t, len(p), maxSortKeyBytes)
		if !binary {
			require.True(t, utf8.ValidString(p), "%q", p)
		}
		// Values just below s, and just above p: none lies strictly between.
		for range 200 {
			var x string
			if binary {
				b := []byte(s[:r.IntN(len(s)+1)])
				for len(b) < r.IntN(maxSortKeyBytes+1) {
					b = append(b, byte(r.IntN(256)))
				}
				x = string(b)
			} else {
				x = s[:len(s)-len(string(lastRune(s)))] + randString(r.IntN(maxSortKeyBytes/4))
			}
			if len(x) > maxSortKeyBytes || (!binary && !utf8.ValidString(x)) {
				continue
			}
			require.False(t, x > p && x < s, "%q lies between %q and %q", x, p, s)
		}
		for _, x := range []string{p + "\x00", p + string(utf8.MaxRune)} {
			if len(x) <= maxSortKeyBytes {
				require.False(t, x > p && x < s, "%q lies between", x)
			}
		}
	}
	for _, s := range []string{"a", "b", "\x00", "a\x00", "é", "\U0010FFFF", "\uE000", "open#b42#x", strings.Repeat("z", maxSortKeyBytes)} {
		check(s, false)
	}
	for range 300 {
		if s := randString(1 + r.IntN(40)); utf8.ValidString(s) {
			check(s, false)
		}
		b := make([]byte, 1+r.IntN(30))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(string(b), true)
	}
	require.Equal(t, "", predecessor("", false))
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

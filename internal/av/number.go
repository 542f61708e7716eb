package av

import (
	"strconv"
	"strings"
)

// decimal is a parsed DynamoDB Number: ±0.d₁d₂…dₙ × 10^point, d₁ and dₙ
// not zero; zero is the decimal with n = 0 (no sign, point 0). The digits
// are read from sig, the text from the first significant digit to the last
// (which may hold the decimal point), so parsing allocates nothing.
type decimal struct {
	neg   bool
	sig   string
	n     int
	point int
}

// maxExpDigits bounds the exponent a Number's text may carry (leading zeros
// aside) for it to be read: DynamoDB's exponents are within ±130, and a
// bound keeps the arithmetic on point exact.
const maxExpDigits = 9

// parseNumber reads the text of a Number: [+-]digits[.digits][(e|E)[+-]digits],
// with at least one digit before the exponent. ok is false for any other
// text (NaN and infinities among them) and for an exponent of more than
// maxExpDigits digits.
func parseNumber(s string) (d decimal, ok bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	dot, first, last, digits := -1, -1, -1, 0
mantissa:
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
			if c != '0' {
				if first < 0 {
					first = i
				}
				last = i
			}
		case c == '.' && dot < 0:
			dot = i
		default:
			break mantissa
		}
	}
	if digits == 0 {
		return decimal{}, false
	}
	end := i
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return decimal{}, false
		}
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		e := s[i:]
		if e == "" || !allDigits(e) {
			return decimal{}, false
		}
		e = strings.TrimLeft(e, "0")
		if len(e) > maxExpDigits {
			return decimal{}, false
		}
		exp, _ = strconv.Atoi("0" + e)
		if neg {
			exp = -exp
		}
	}
	if first < 0 {
		return decimal{}, true // zero, whatever its sign and exponent
	}
	intEnd := end
	if dot >= 0 {
		intEnd = dot
	}
	if first < intEnd {
		d.point = intEnd - first
	} else {
		d.point = -(first - dot - 1)
	}
	d.point += exp
	d.sig = s[first : last+1]
	d.n = len(d.sig)
	if dot > first && dot < last {
		d.n--
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sameDigits reports whether two decimals of as many significant digits
// hold the same ones, decimal points skipped.
func sameDigits(x, y decimal) bool {
	i, j := 0, 0
	for i < len(x.sig) && j < len(y.sig) {
		if x.sig[i] == '.' {
			i++
			continue
		}
		if y.sig[j] == '.' {
			j++
			continue
		}
		if x.sig[i] != y.sig[j] {
			return false
		}
		i++
		j++
	}
	return true
}

// NumberEqual reports whether two Number texts hold the same value, exactly
// (no rounding: DynamoDB's Numbers carry up to 38 significant digits, more
// than a float64 holds): "1", "1.0", "1E+0", "01" and "+1" are equal, as
// are "0" and "-0". A text that is not a number equals only itself.
func NumberEqual(a, b string) bool {
	if a == b {
		return true
	}
	x, ok1 := parseNumber(a)
	y, ok2 := parseNumber(b)
	if !ok1 || !ok2 {
		return false
	}
	return x.neg == y.neg && x.point == y.point && x.n == y.n && sameDigits(x, y)
}

// NumberKey is a text that is the same for two Number texts exactly when
// [NumberEqual] is true of them, for a map key or a key's text: a number's
// canonical form, itself a Number text of the same value ("1", "1.0" and
// "10e-1" all give "0.1e1", "-0" gives "0"), or a text that is not a number
// behind a byte no canonical form starts with.
func NumberKey(s string) string {
	d, ok := parseNumber(s)
	if !ok {
		return "\x00" + s
	}
	if d.n == 0 {
		return "0"
	}
	var b strings.Builder
	b.Grow(d.n + 16)
	if d.neg {
		b.WriteByte('-')
	}
	b.WriteString("0.")
	for i := 0; i < len(d.sig); i++ {
		if d.sig[i] != '.' {
			b.WriteByte(d.sig[i])
		}
	}
	b.WriteByte('e')
	b.WriteString(strconv.Itoa(d.point))
	return b.String()
}

// IsNumber reports whether s is the text of a number as DynamoDB writes
// one: [+-]digits[.digits][(e|E)[+-]digits]. It checks the form, not
// DynamoDB's limits on digits and magnitude.
func IsNumber(s string) bool {
	_, ok := parseNumber(s)
	return ok
}

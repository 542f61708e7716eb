package ddbindex

import (
	"math/big"
	"strconv"
	"strings"
)

// DynamoDB's Numbers: at most 38 significant digits, magnitudes from 1E-130
// to 9.9999999999999999999999999999999999999E+125, and zero. In the form
// 0.d₁d₂…dₙ × 10^e used here, e runs from minNumberExp to maxNumberExp.
const (
	numberDigits = 38
	minNumberExp = -129
	maxNumberExp = 126
)

// numberStep returns the Number next to n in a query's order, with no
// Number DynamoDB can store strictly between the two: the largest Number
// below n when ascending (desc false), the smallest above it when
// descending. ok is false when n does not parse or has no such neighbour
// within DynamoDB's range.
func numberStep(n string, desc bool) (string, bool) {
	neg, digits, exp, ok := parseNumber(n)
	if !ok {
		return "", false
	}
	if desc {
		// The smallest Number above n is minus the largest below -n.
		neg = !neg
		if digits == "" {
			neg = false
		}
	}
	neg, digits, exp, ok = numberBelow(neg, digits, exp)
	if !ok {
		return "", false
	}
	if desc && digits != "" {
		neg = !neg
	}
	return formatNumber(neg, digits, exp), true
}

// numberBelow is the largest Number below the one given as sign,
// significant digits (no leading or trailing zeros; "" for zero) and
// exponent.
func numberBelow(neg bool, digits string, exp int) (bool, string, int, bool) {
	switch {
	case digits == "":
		// Below zero: the negative Number of the least magnitude.
		return true, "1", minNumberExp, true
	case neg:
		d, e := magnitudeUp(digits, exp)
		if e > maxNumberExp {
			return false, "", 0, false
		}
		return true, d, e, true
	}
	d, e := magnitudeDown(digits, exp)
	if d == "" || e < minNumberExp {
		return false, "", 0, true // below the least positive Number: zero
	}
	return false, d, e, true
}

// magnitudeUp adds one unit in the 38th significant digit.
func magnitudeUp(digits string, exp int) (string, int) {
	b := []byte(digits + strings.Repeat("0", numberDigits-len(digits)))
	i := len(b) - 1
	for ; i >= 0 && b[i] == '9'; i-- {
		b[i] = '0'
	}
	if i < 0 {
		return "1", exp + 1 // 0.99…9 × 10^e + one unit = 0.1 × 10^(e+1)
	}
	b[i]++
	return strings.TrimRight(string(b), "0"), exp
}

// magnitudeDown subtracts one unit in the last significant digit a Number
// of this magnitude can have: for a power of ten, the next lower decade's.
func magnitudeDown(digits string, exp int) (string, int) {
	if digits == "1" {
		return strings.Repeat("9", numberDigits), exp - 1
	}
	b := []byte(digits + strings.Repeat("0", numberDigits-len(digits)))
	i := len(b) - 1
	for ; b[i] == '0'; i-- {
		b[i] = '9'
	}
	b[i]--
	return strings.TrimLeft(strings.TrimRight(string(b), "0"), "0"), exp
}

// parseNumber reads a decimal Number (sign, digits, optional point and
// exponent) as sign, significant digits and exponent e of 0.digits × 10^e.
// ok is false for text that is not such a number or has more than 38
// significant digits.
func parseNumber(s string) (neg bool, digits string, exp int, ok bool) {
	if s == "" {
		return false, "", 0, false
	}
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	mant, ex, hasExp := strings.Cut(strings.ToLower(s), "e")
	e10 := 0
	if hasExp {
		if ex == "" || len(ex) > 6 {
			return false, "", 0, false
		}
		sign := 1
		switch ex[0] {
		case '-':
			sign, ex = -1, ex[1:]
		case '+':
			ex = ex[1:]
		}
		if ex == "" {
			return false, "", 0, false
		}
		for _, c := range ex {
			if c < '0' || c > '9' {
				return false, "", 0, false
			}
			e10 = e10*10 + int(c-'0')
		}
		e10 *= sign
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" {
		return false, "", 0, false
	}
	for _, c := range whole + frac {
		if c < '0' || c > '9' {
			return false, "", 0, false
		}
	}
	all := whole + frac
	exp = len(whole) + e10
	trimmed := strings.TrimLeft(all, "0")
	exp -= len(all) - len(trimmed)
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return false, "", 0, true
	}
	if len(digits) > numberDigits {
		return false, "", 0, false
	}
	return neg, digits, exp, true
}

// formatNumber writes sign, digits and exponent as a Number DynamoDB reads:
// 0.digits × 10^exp in scientific notation.
func formatNumber(neg bool, digits string, exp int) string {
	if digits == "" {
		return "0"
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(digits[:1])
	if len(digits) > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:])
	}
	b.WriteString("E")
	b.WriteString(strconv.Itoa(exp - 1))
	return b.String()
}

// numberBefore reports whether Number a comes strictly before Number b in
// a query's order (descending when desc).
func numberBefore(a, b string, desc bool) bool {
	ra, ok1 := new(big.Rat).SetString(a)
	rb, ok2 := new(big.Rat).SetString(b)
	if !ok1 || !ok2 {
		return false
	}
	c := ra.Cmp(rb)
	return (!desc && c < 0) || (desc && c > 0)
}

package ddbindex

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file holds the one check of the values the library writes: every
// value in an item, an update's values or a Change's images must be one
// DynamoDB stores as given. A Number holds at most 38 significant digits,
// with a magnitude between 1E-130 and
// 9.9999999999999999999999999999999999999E+125 (or 0); anything else (NaN,
// ±Inf, which attributevalue writes as the texts "NaN", "+Inf" and "-Inf")
// the service refuses. A String (a String set's elements, a Map's and an
// item's attribute names) must be UTF-8: the SDK would send U+FFFD in place
// of each invalid byte, and store another value than the one given. A set
// is not empty and holds each member once (Numbers by value). A nil value
// or member, or a type DynamoDB does not have, cannot be sent at all. A
// query's Filter values are checked the same way.

// maxNumberDigits is the significant digits a DynamoDB Number holds.
const maxNumberDigits = 38

// checkValues returns an error naming the first attribute of av, in name
// order, whose name or value DynamoDB would refuse or change (within a list,
// a map or a set too), or nil.
func checkValues(av map[string]types.AttributeValue) error {
	names := make([]string, 0, len(av))
	for name := range av {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !utf8.ValidString(name) {
			return fmt.Errorf("attribute name %q: %w", name, errInvalidUTF8)
		}
		if err := checkValue(av[name], name); err != nil {
			return err
		}
	}
	return nil
}

// checkValue checks one attribute value, at path.
func checkValue(v types.AttributeValue, path string) error {
	if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fmt.Errorf("attribute %s: no value (a nil %T)", path, v)
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		if err := checkNumber(v.Value); err != nil {
			return fmt.Errorf("attribute %s: %w", path, err)
		}
	case *types.AttributeValueMemberNS:
		for _, n := range v.Value {
			if err := checkNumber(n); err != nil {
				return fmt.Errorf("attribute %s (a number set): %w", path, err)
			}
		}
		return checkSetMembers(path, "number", v.Value, av.NumberKey)
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return fmt.Errorf("attribute %s: the String %q is %w (DynamoDB would store U+FFFD for each invalid byte); store bytes as Binary", path, v.Value, errInvalidUTF8)
		}
	case *types.AttributeValueMemberSS:
		for _, e := range v.Value {
			if !utf8.ValidString(e) {
				return fmt.Errorf("attribute %s (a string set): %q is %w (DynamoDB would store U+FFFD for each invalid byte)", path, e, errInvalidUTF8)
			}
		}
		return checkSetMembers(path, "string", v.Value, func(s string) string { return s })
	case *types.AttributeValueMemberBS:
		return checkSetMembers(path, "binary", v.Value, func(b []byte) string { return string(b) })
	case *types.AttributeValueMemberL:
		for i, e := range v.Value {
			if err := checkValue(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case *types.AttributeValueMemberM:
		names := make([]string, 0, len(v.Value))
		for name := range v.Value {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !utf8.ValidString(name) {
				return fmt.Errorf("attribute %s: the map key %q: %w", path, name, errInvalidUTF8)
			}
			if err := checkValue(v.Value[name], path+"."+name); err != nil {
				return err
			}
		}
	case *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
	case *types.UnknownUnionMember:
		return fmt.Errorf("attribute %s: unknown attribute type %q", path, v.Tag)
	default:
		return fmt.Errorf("attribute %s: %T is no DynamoDB attribute type", path, v)
	}
	return nil
}

// checkSetMembers refuses a set DynamoDB refuses: an empty one, or one
// that holds a member twice (key gives the members' identity: a Number's
// value, not its text, so 1 and 1.0 are one member).
func checkSetMembers[E any](path, kind string, members []E, key func(E) string) error {
	if len(members) == 0 {
		return fmt.Errorf("attribute %s: an empty %s set, which DynamoDB refuses (omit the attribute, or REMOVE it)", path, kind)
	}
	seen := make(map[string]int, len(members))
	for i, m := range members {
		k := key(m)
		if j, ok := seen[k]; ok {
			return fmt.Errorf("attribute %s: members %d and %d of the %s set are equal, and DynamoDB refuses a set that holds a member twice", path, j, i, kind)
		}
		seen[k] = i
	}
	return nil
}

// checkNumber refuses the text of a Number that DynamoDB would refuse: one
// that is not a decimal number ([+-]digits[.digits][e[+-]digits]: NaN and
// NaN among them), or one with more than 38 significant digits, or a
// magnitude outside 1E-130 to 9.99...E+125 (±Inf among them).
func checkNumber(s string) error {
	mant, exp, ok := strings.Cut(strings.ToLower(s), "e")
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		mant = mant[1:]
	}
	if mant == "inf" || mant == "infinity" {
		return rangeError(s)
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || !allDigits(digits) {
		return notNumber(s)
	}
	e := 0
	if ok {
		neg := exp != "" && exp[0] == '-'
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		if exp == "" || !allDigits(exp) {
			return notNumber(s)
		}
		if exp = strings.TrimLeft(exp, "0"); len(exp) > 9 {
			return rangeError(s) // no Number of a size DynamoDB takes has such an exponent
		}
		e, _ = strconv.Atoi("0" + exp)
		if neg {
			e = -e
		}
	}
	sig := strings.TrimLeft(digits, "0")
	if sig == "" {
		return nil // zero
	}
	// The value is 0.sig × 10^(point), point counted from the first
	// significant digit.
	point := len(intPart) - (len(digits) - len(sig)) + e
	sig = strings.TrimRight(sig, "0")
	if len(sig) > maxNumberDigits {
		return fmt.Errorf("%s has %d significant digits; a DynamoDB Number holds at most %d", s, len(sig), maxNumberDigits)
	}
	// In scientific notation d.ddd × 10^(point-1): DynamoDB takes
	// exponents -130 to 125.
	if sci := point - 1; sci < -130 || sci > 125 {
		return rangeError(s)
	}
	return nil
}

func notNumber(s string) error {
	return fmt.Errorf("%q is not a number DynamoDB can store (a decimal number; NaN and infinities have no place in a DynamoDB Number)", s)
}

func rangeError(s string) error {
	return fmt.Errorf("%s is outside the range of a DynamoDB Number (magnitude 1E-130 to 9.9999999999999999999999999999999999999E+125, or 0)", s)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

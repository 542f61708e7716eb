package av

import (
	"bytes"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Equal reports whether two attribute values are equal as DynamoDB compares
// them (in a condition's "=", or a key): of the same type, and
//   - S and B by their bytes, BOOL and NULL by their value;
//   - N by value, exactly: "1", "1.0", "1E+0" and "01" are equal, as are
//     "0" and "-0" (see [NumberEqual]);
//   - SS, NS and BS as sets: the same elements in any order, a repeated
//     element counting once (DynamoDB refuses a set that repeats one);
//   - L element by element, in order; M by the same names holding equal
//     values.
//
// Two nil values are equal; a nil and a non-nil one are not. A nil member
// (a nil *types.AttributeValueMemberS, say) equals only a nil of its own
// type, and a value of a type DynamoDB does not have equals only a deeply
// equal one.
func Equal(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return NumberEqual(x.Value, y.Value)
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		y, ok := b.(*types.AttributeValueMemberNULL)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return x.Value == y.Value
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return sameSet(x.Value, y.Value, ssKey, ssEqual)
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return sameSet(x.Value, y.Value, NumberKey, NumberEqual)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return sameSet(x.Value, y.Value, bsKey, bytes.Equal)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return sameList(x.Value, y.Value)
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return EqualItems(x.Value, y.Value)
	}
	return reflect.DeepEqual(a, b)
}

// EqualItems reports whether two items (or the values of two maps) hold the
// same attribute names with [Equal] values. Two empty items are equal.
func EqualItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !Equal(v, w) {
			return false
		}
	}
	return true
}

// Identical reports whether two attribute values are the same to the byte:
// numbers by their text, sets and lists in order, maps by their names and
// identical values. It is for a caller that derives something from a
// value's text (and may reuse what it derived for an identical value), not
// for comparing what DynamoDB holds: use [Equal] for that.
func Identical(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberB,
		*types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return Equal(a, b) // the same to the byte for these types
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok || x == nil || y == nil {
			return ok && x == y
		}
		return x.Value == y.Value
	}
	return reflect.DeepEqual(a, b)
}

func sameList(a, b []types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func ssKey(s string) string    { return s }
func ssEqual(a, b string) bool { return a == b }
func bsKey(b []byte) string    { return string(b) }

// smallSet is the size up to which sets are compared pair by pair rather
// than through a map: DynamoDB's sets are mostly small.
const smallSet = 16

// sameSet reports whether two sets hold the same elements, each of a
// matching an element of b and the other way round (so a repeated element
// counts once). key must give equal texts exactly for elements eq finds
// equal.
func sameSet[E any](a, b []E, key func(E) string, eq func(E, E) bool) bool {
	if len(a) == len(b) {
		inOrder := true
		for i := range a {
			if !eq(a[i], b[i]) {
				inOrder = false
				break
			}
		}
		if inOrder {
			return true
		}
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if len(a) <= smallSet && len(b) <= smallSet {
		return covers(a, b, eq) && covers(b, a, eq)
	}
	ka := make(map[string]struct{}, len(a))
	for _, e := range a {
		ka[key(e)] = struct{}{}
	}
	kb := make(map[string]struct{}, len(b))
	for _, e := range b {
		k := key(e)
		if _, ok := ka[k]; !ok {
			return false
		}
		kb[k] = struct{}{}
	}
	return len(ka) == len(kb)
}

// covers reports whether every element of a has an equal one in b.
func covers[E any](a, b []E, eq func(E, E) bool) bool {
outer:
	for _, x := range a {
		for _, y := range b {
			if eq(x, y) {
				continue outer
			}
		}
		return false
	}
	return true
}

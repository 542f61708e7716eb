package av

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// Sizes follow DynamoDB's rules for an item's size, which its 400 KB item
// limit and its capacity units count, as "DynamoDB item sizes and formats"
// gives them
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
//   - an attribute is its name's UTF-8 bytes plus its value's size;
//   - a String is its UTF-8 bytes, a Binary its raw bytes;
//   - a Number is about 1 byte per two significant digits (leading and
//     trailing zeros trimmed), plus 1 byte;
//   - a Boolean or a Null is 1 byte;
//   - a List or a Map is 3 bytes, plus its elements' sizes, plus 1 byte per
//     element (a Map's element counting its name as an attribute does);
//   - a set, which the page does not list, is its elements' sizes added up,
//     each as a scalar of its type.
// The per-item storage overhead the page also names (100 bytes for
// indexing) is storage billing, not item size, and is not counted.

// ItemSize is an item's size as DynamoDB counts it: its attribute names'
// UTF-8 bytes plus their values' sizes ([Size]).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + Size(v)
	}
	return n
}

// AttrSize is the size of one attribute: its name and its value.
func AttrSize(name string, v types.AttributeValue) int {
	return len(name) + Size(v)
}

// Size is an attribute value's size as DynamoDB counts it, its name aside.
// A nil value (or a nil member) is 0 bytes; a value of a type DynamoDB does
// not have, 1.
func Size(v types.AttributeValue) int {
	switch v := v.(type) {
	case nil:
		return 0
	case *types.AttributeValueMemberS:
		if v == nil {
			return 0
		}
		return len(v.Value)
	case *types.AttributeValueMemberN:
		if v == nil {
			return 0
		}
		return NumberSize(v.Value)
	case *types.AttributeValueMemberB:
		if v == nil {
			return 0
		}
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		if v == nil {
			return 0
		}
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		if v == nil {
			return 0
		}
		n := 0
		for _, e := range v.Value {
			n += NumberSize(e)
		}
		return n
	case *types.AttributeValueMemberBS:
		if v == nil {
			return 0
		}
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberL:
		if v == nil {
			return 0
		}
		n := 3
		for _, e := range v.Value {
			n += 1 + Size(e)
		}
		return n
	case *types.AttributeValueMemberM:
		if v == nil {
			return 0
		}
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + Size(e)
		}
		return n
	case *types.AttributeValueMemberBOOL:
		if v == nil {
			return 0
		}
	case *types.AttributeValueMemberNULL:
		if v == nil {
			return 0
		}
	}
	return 1
}

// NumberSize is the size of a Number's text: 1 byte per two significant
// digits, rounded up, plus 1 byte ("0" is 1 byte, "123.4500" 3, "-1E+100"
// 2). A text that is not a number is sized by its length, as the digits it
// would hold at most.
func NumberSize(s string) int {
	d, ok := parseNumber(s)
	if !ok {
		return (len(s)+1)/2 + 1
	}
	return (d.n+1)/2 + 1
}

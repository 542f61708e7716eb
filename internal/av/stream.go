package av

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// ErrMalformed is matched by the errors of a conversion whose input is not
// an attribute value DynamoDB could hold: a nil member, a Number that is
// not a number, a type DynamoDB does not have.
var ErrMalformed = errors.New("malformed attribute value")

// FromStreamImage converts a DynamoDB Streams item image (or a key) into
// DynamoDB attribute values with the SDK's own converter
// (attributevalue.FromDynamoDBStreamsMap), after checking it: a nil
// attribute value or member, a Number (or a Number set's element) that is
// not a number ([IsNumber]), or an unknown type is an error matching
// [ErrMalformed] that names the attribute, where the SDK's converter would
// panic or let it through. A nil image converts to nil.
func FromStreamImage(img map[string]streamtypes.AttributeValue) (map[string]types.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	for k, v := range img {
		if err := checkStream(v, k); err != nil {
			return nil, err
		}
	}
	out, err := attributevalue.FromDynamoDBStreamsMap(img)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return out, nil
}

// checkStream checks a Streams attribute value, at path, for what
// FromDynamoDBStreams does not: nil values and members, and Numbers.
func checkStream(v streamtypes.AttributeValue, path string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: attribute %s: %s", ErrMalformed, path, fmt.Sprintf(format, args...))
	}
	switch v := v.(type) {
	case nil:
		return bad("no value (nil)")
	case *streamtypes.AttributeValueMemberS:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberB:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberBOOL:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberNULL:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberSS:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberBS:
		if v == nil {
			return bad("a nil %T", v)
		}
	case *streamtypes.AttributeValueMemberN:
		if v == nil {
			return bad("a nil %T", v)
		}
		if !IsNumber(v.Value) {
			return bad("%q is not a number", v.Value)
		}
	case *streamtypes.AttributeValueMemberNS:
		if v == nil {
			return bad("a nil %T", v)
		}
		for _, e := range v.Value {
			if !IsNumber(e) {
				return bad("%q in a number set is not a number", e)
			}
		}
	case *streamtypes.AttributeValueMemberL:
		if v == nil {
			return bad("a nil %T", v)
		}
		for i, e := range v.Value {
			if err := checkStream(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case *streamtypes.AttributeValueMemberM:
		if v == nil {
			return bad("a nil %T", v)
		}
		for k, e := range v.Value {
			if err := checkStream(e, path+"."+k); err != nil {
				return err
			}
		}
	case *streamtypes.UnknownUnionMember:
		if v == nil {
			return bad("a nil %T", v)
		}
		return bad("unknown attribute type %q", v.Tag)
	default:
		return bad("unsupported stream attribute value %T", v)
	}
	return nil
}

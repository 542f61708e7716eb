package ddbindex

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file renders attribute values and keys for error messages and
// Explain.

// avString renders one attribute value: a String quoted, a Number as its
// digits, Binary as hex.
func avString(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("0x%x", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(v.Value)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", av)
}

func keyString(key map[string]types.AttributeValue) string {
	names := make([]string, 0, len(key))
	for k := range key {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + avString(key[n])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

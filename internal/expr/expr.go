// Package expr holds every DynamoDB expression the module writes by hand.
//
// The module composes its requests with the SDK's expression builder
// (github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression). The builder
// names its own placeholders (#0, :0, ...) and renders a whole request's
// expressions at once, so an expression that must join a request whose
// other expressions are already built cannot come from it: it would reuse
// their placeholders. Such expressions are written here, and only here,
// with placeholders of their own that the builder never makes. Nothing in
// the module parses an expression's text: callers get the text with its
// names and values.
//
// The one such expression is the key condition of each shard's request in
// a query of a sharded index: the query's filter and projection are built
// once, and every shard's request adds its own partition key value.
package expr

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Placeholders of a sharded query's key condition. The expression builder
// names its own #0, :0, ..., so these cannot collide with them.
const (
	// ShardPKName stands for the partition key attribute.
	ShardPKName = "#ddbxpk"
	// ShardPKValue stands for the shard's partition key value.
	ShardPKValue = ":ddbxpk"
	// ShardSKName stands for the sort key attribute.
	ShardSKName = "#ddbxsk"
	// ShardLo stands for the sort key range's lower end (or the prefix,
	// or the one value).
	ShardLo = ":ddbxlo"
	// ShardHi stands for the sort key range's upper end.
	ShardHi = ":ddbxhi"
)

// Each text is complete, partition key included, so that no request
// concatenates one.
const (
	pkOnly     = ShardPKName + " = " + ShardPKValue
	andSK      = pkOnly + " AND " + ShardSKName
	beginsWith = pkOnly + " AND begins_with(" + ShardSKName + ", " + ShardLo + ")"
	equal      = andSK + " = " + ShardLo
	between    = andSK + " BETWEEN " + ShardLo + " AND " + ShardHi
	above      = andSK + " > " + ShardLo
	atOrAbove  = andSK + " >= " + ShardLo
	below      = andSK + " < " + ShardHi
	atOrBelow  = andSK + " <= " + ShardHi
)

// SortCond is the condition every shard's request of a sharded query puts
// on the sort key: a range of stored sort keys (strings). Its zero value
// is no condition.
type SortCond struct {
	text   string // the whole key condition; "" for none
	lo, hi types.AttributeValue
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// SortBeginsWith is the condition that the sort key begins with prefix.
func SortBeginsWith(prefix string) SortCond { return SortCond{text: beginsWith, lo: str(prefix)} }

// SortEqual is the condition that the sort key is v.
func SortEqual(v string) SortCond { return SortCond{text: equal, lo: str(v)} }

// SortBetween is the condition that the sort key lies between lo and hi,
// both included.
func SortBetween(lo, hi string) SortCond { return SortCond{text: between, lo: str(lo), hi: str(hi)} }

// SortAbove is the condition that the sort key is above v (incl: or is v).
func SortAbove(v string, incl bool) SortCond {
	if incl {
		return SortCond{text: atOrAbove, lo: str(v)}
	}
	return SortCond{text: above, lo: str(v)}
}

// SortBelow is the condition that the sort key is below v (incl: or is v).
func SortBelow(v string, incl bool) SortCond {
	if incl {
		return SortCond{text: atOrBelow, hi: str(v)}
	}
	return SortCond{text: below, hi: str(v)}
}

// ShardKeyCondition returns the key condition of one shard's request: the
// partition key attribute pkAttr is pk, and the sort key attribute skAttr
// meets sk (none for sk's zero value). It adds the condition's names and
// values to names and values, which must not be nil and must hold no
// placeholder of this package (the builder's never do).
func ShardKeyCondition(names map[string]string, values map[string]types.AttributeValue,
	pkAttr string, pk types.AttributeValue, skAttr string, sk SortCond) string {
	names[ShardPKName], values[ShardPKValue] = pkAttr, pk
	if sk.text == "" {
		return pkOnly
	}
	names[ShardSKName] = skAttr
	if sk.lo != nil {
		values[ShardLo] = sk.lo
	}
	if sk.hi != nil {
		values[ShardHi] = sk.hi
	}
	return sk.text
}

// ShardAttrCondition writes the key condition of one shard's request of a
// sharded multi-attribute key into names and values: the shard attribute
// equal to shard, and rest, the key condition of every shard (its own
// placeholders already in names and values), which must not be empty.
func ShardAttrCondition(names map[string]string, values map[string]types.AttributeValue,
	attr string, shard types.AttributeValue, rest string) string {
	names[ShardPKName], values[ShardPKValue] = attr, shard
	return "(" + pkOnly + ") AND " + rest
}

// ShardPK returns the partition key value of a shard's request whose key
// condition ShardKeyCondition wrote into values (nil when it has none).
func ShardPK(values map[string]types.AttributeValue) types.AttributeValue {
	return values[ShardPKValue]
}

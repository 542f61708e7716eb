package ddbindex

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// This file owns the tombstone rule. A tombstone is an entry whose
// DeletedAttr is true; it stays until TTL removes it, and no read that has not
// opted out may return it.

// liveCondition is the filter that keeps live entries only:
//
//	attribute_not_exists(#deleted) OR #deleted <> :true
func liveCondition(o *Options) expression.ConditionBuilder {
	n := expression.Name(o.DeletedAttr)
	return n.AttributeNotExists().Or(n.NotEqual(expression.Value(true)))
}

// filtersTombstones reports whether reads of d skip tombstones by default:
// always for an index table, and for the base table and its GSIs and LSIs
// when the model declares softdelete.
func (d *keyDef) filtersTombstones() bool {
	return d.kind == IndexTable || d.schema.softDelete
}

package ddbindex

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
func (d *layout) filtersTombstones() bool {
	return d.tombstones
}

// liveImage returns img, or nil when it is absent or a soft-deleted item.
func (t *Table[T]) liveImage(img map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(img) == 0 {
		return nil
	}
	if b, ok := img[t.opts.DeletedAttr].(*types.AttributeValueMemberBOOL); ok && b.Value {
		return nil
	}
	return img
}

// markTombstone turns an entry into its tombstone, in place: the same entry,
// marked deleted, expiring after the retention.
func (t *Table[T]) markTombstone(e map[string]types.AttributeValue) {
	e[t.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
	e[t.opts.TTLAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.tombstoneExpiry(), 10)}
}

// tombstoneExpiry is the TTL (epoch seconds) of a tombstone written now.
func (t *Table[T]) tombstoneExpiry() int64 { return t.opts.Now().Add(t.opts.Retention).Unix() }

package ddbindex

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file owns the tombstone rule: what marks an entry as a tombstone, the
// filter that hides tombstones, the marks a delete writes, and how a model
// sees them. Other files read and write the marker attribute only through it
// (the TableSpec's deletedattr= names it, and Update refuses to set it). A
// tombstone is an entry whose marker is true; it stays until TTL removes it or a write replaces it
// with a live entry, and no read that has not opted out (IncludeDeleted) may
// return it. It marks a deleted base item of a softdelete
// model (and that item in its GSIs and LSIs), and in an index table an entry
// whose item was deleted or no longer has that index key (its key changed,
// or it left a sparse index). To a caller a tombstone is absent: Put with
// version 0 creates the item again over it, Update does not change it, and a
// model's field tagged ddbindex:"deleted" reads true for it.

// liveCondition is the filter that keeps live entries only:
//
//	attribute_not_exists(#deleted) OR #deleted <> :true
func liveCondition(o *settings) expression.ConditionBuilder {
	return live(expression.NameNoDotSplit(o.DeletedAttr))
}

// live is the filter that keeps live entries only, with n naming the
// DeletedAttr attribute.
func live(n expression.NameBuilder) expression.ConditionBuilder {
	return n.AttributeNotExists().Or(n.NotEqual(expression.Value(true)))
}

// filtersTombstones reports whether reads of d skip tombstones by default:
// always for an index table, and for the base table and its GSIs and LSIs
// when the model declares softdelete.
func (d *layout) filtersTombstones() bool {
	return d.tombstones
}

// isTombstone reports whether a stored entry (a base item, a GSI or LSI
// entry, an index-table entry) is a tombstone.
func (o *settings) isTombstone(e map[string]types.AttributeValue) bool {
	b, ok := e[o.DeletedAttr].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

// liveImage returns img, or nil when it is absent or a soft-deleted item.
func (t *Table[T]) liveImage(img map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(img) == 0 || t.opts.isTombstone(img) {
		return nil
	}
	return img
}

// showTombstone sets v's field tagged ddbindex:"deleted", if the model has
// one, to whether e, the entry v was read from, is a tombstone.
func (t *Table[T]) showTombstone(e map[string]types.AttributeValue, v *T) {
	if t.s.deleted == nil {
		return
	}
	if f, err := reflect.ValueOf(v).Elem().FieldByIndexErr(t.s.deleted.index); err == nil {
		f.SetBool(t.opts.isTombstone(e))
	}
}

// deletedSet reports whether item's field tagged ddbindex:"deleted" is
// true: a value read from a tombstone, which a write must not store as it
// is (the field is filled by reads, never stored).
func (t *Table[T]) deletedSet(item *T) bool {
	if t.s.deleted == nil {
		return false
	}
	f, err := reflect.ValueOf(item).Elem().FieldByIndexErr(t.s.deleted.index)
	return err == nil && f.Bool()
}

// markTombstone turns an entry into its tombstone, in place: the same entry,
// marked deleted, expiring after the retention.
func (t *Table[T]) markTombstone(e map[string]types.AttributeValue) {
	e[t.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
	e[t.opts.TTLAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.tombstoneExpiry(), 10)}
}

// softDeleteMark is the update that makes a softdelete model's base item a
// tombstone (Delete's soft delete): the same marks as markTombstone.
func (t *Table[T]) softDeleteMark() expression.UpdateBuilder {
	return expression.Set(expression.NameNoDotSplit(t.opts.DeletedAttr), expression.Value(true)).
		Set(expression.NameNoDotSplit(t.opts.TTLAttr), expression.Value(t.tombstoneExpiry()))
}

// tombstoneMarkBytes is the size, as DynamoDB counts it, that the marks add
// to an entry: DeletedAttr true, and TTLAttr a Number of up to 11 digits.
func (o *settings) tombstoneMarkBytes() int {
	return len(o.DeletedAttr) + 1 + len(o.TTLAttr) + 7
}

// withTombstoneMarker adds DeletedAttr to the projected attribute names when
// the model has a field tagged ddbindex:"deleted", which reads it.
func (t *Table[T]) withTombstoneMarker(names []string) []string {
	if t.s.deleted != nil && !slices.Contains(names, t.opts.DeletedAttr) {
		names = append(names, t.opts.DeletedAttr)
	}
	return names
}

// tombstoneExpiry is the TTL (epoch seconds) of a tombstone written now.
func (t *Table[T]) tombstoneExpiry() int64 { return t.opts.Now().Add(t.opts.Retention).Unix() }

// overTombstone is the condition under which Put with version 0 creates an
// item again over its tombstone old (read before the write): the stored
// item is still that tombstone, at its version. It returns the condition,
// its description, and the version to write: one more than the
// tombstone's, so that versions never go back and a copy read before the
// delete still conflicts.
func (t *Table[T]) overTombstone(old map[string]types.AttributeValue) (expression.ConditionBuilder, string, uint64) {
	dead := expression.NameNoDotSplit(t.opts.DeletedAttr).Equal(expression.Value(true))
	ver := expression.NameNoDotSplit(t.s.version.attr)
	v := t.storedVersion(old)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		// A tombstone without a readable version: written before the
		// model had its version field.
		return dead.And(ver.AttributeNotExists()), "the item is deleted, without a version (Put with version 0 creates it again over its tombstone)", 1
	}
	return dead.And(ver.Equal(expression.Value(&types.AttributeValueMemberN{Value: v}))),
		"the item is deleted at version " + v + " (Put with version 0 creates it again over its tombstone)", n + 1
}

package ddbindex

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Delete removes the item with item's base key (only the base key fields,
// and the version, are read: the other fields may be unset). A model
// declared softdelete is
// marked deleted (its marker true, its TTL attribute a retention ahead: see
// [TableSpec]) instead of
// removed. With a version field, the stored version must equal item's. In
// write-through mode the index entries become tombstones in the same
// transaction. Deleting an item that does not exist is not an error, unless
// a version is expected.
//
// optFns are applied to every request Delete sends, as the SDK's own
// per-call options.
func (t *Table[T]) Delete(ctx context.Context, item T, optFns ...func(*dynamodb.Options)) (err error) {
	if err := t.callable(ctx, "Delete", ErrInvalidWrite, optFns...); err != nil {
		return err
	}
	ctx, c := t.tel.start(ctx, opDelete, t.s.base)
	defer func() { c.end(ctx, err) }()
	if err := t.writable("Delete"); err != nil {
		return err
	}
	expected, err := t.version(&item)
	if err != nil {
		return err
	}
	if t.s.version != nil && expected == 0 {
		return writeErr("Delete of %s needs the item's current version (it is 0)", t.s.model)
	}
	key, _, err := t.keyOf(&item)
	if err != nil {
		return err
	}
	if t.writeThrough() {
		for attempt := 0; ; attempt++ {
			err := t.deleteThrough(ctx, expected, key, optFns)
			if !t.again(ctx, err, attempt, false) {
				return err
			}
		}
	}
	base, token, err := t.deleteAction(expected, key, nil, false)
	if err != nil {
		return err
	}
	// Our own write, applied by an attempt whose answer was lost: a soft
	// delete finds its token; a hard delete finds the item gone, which only
	// a retried call may take for its own doing.
	ours := func(cur map[string]types.AttributeValue) bool { return cur == nil }
	if t.s.softDelete {
		ours = func(cur map[string]types.AttributeValue) bool { return t.hasToken(cur, token) }
	}
	err = t.single(ctx, "delete", base, expected, optFns, ours)
	if t.s.softDelete && t.s.version == nil && errors.Is(err, ErrConflict) {
		// The only condition was that the item exists (so that the update
		// does not create it): a missing item is no error.
		return nil
	}
	return err
}

// deleteThrough is one attempt of a write-through Delete: it reads the
// stored item and sends the delete and the index tombstones computed from
// it in one transaction, conditioned on the item being as read.
func (t *Table[T]) deleteThrough(ctx context.Context, expected uint64, key map[string]types.AttributeValue, optFns []func(*dynamodb.Options)) error {
	old, err := t.current(ctx, key, optFns)
	if err != nil {
		return err
	}
	if t.s.version == nil && (old == nil || t.opts.isTombstone(old)) {
		return nil // nothing to delete, and no version to check
	}
	base, _, err := t.deleteAction(expected, key, old, true)
	if err != nil {
		return err
	}
	idx, err := t.indexActions(Change{Old: old, Version: t.changeVersion(expected + 1)})
	if err != nil {
		return err
	}
	return t.transact(ctx, "delete", append([]action{base}, idx...), optFns)
}

// deleteAction is the base-table action of a Delete of the item at key,
// read as old in write-through mode: a soft delete's update, which stores
// a new write token (returned), or a delete.
func (t *Table[T]) deleteAction(expected uint64, key, old map[string]types.AttributeValue, writeThrough bool) (action, string, error) {
	cond, what, hasCond := t.guard(expected, old, writeThrough)
	if !t.s.softDelete {
		del := &types.Delete{TableName: aws.String(t.TableName()), Key: key}
		if hasCond {
			expr, err := expression.NewBuilder().WithCondition(cond).Build()
			if err != nil {
				return action{}, "", writeErr("%w", err)
			}
			del.ConditionExpression, del.ExpressionAttributeNames, del.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
			del.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		return action{cond: what, found: t.foundFor("delete", expected), item: types.TransactWriteItem{Delete: del}}, "", nil
	}
	upd := t.softDeleteMark()
	if t.s.version != nil {
		upd = upd.Set(expression.NameNoDotSplit(t.s.version.attr), expression.Value(expected+1))
	}
	if !hasCond {
		cond, what = expression.NameNoDotSplit(t.s.base.pk.attr).AttributeExists(), "the item exists"
	}
	token := newToken()
	upd, cond = t.withToken(upd, cond, token)
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return action{}, "", writeErr("%w", err)
	}
	return action{cond: what, found: t.foundFor("delete", expected), item: types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(t.TableName()), Key: key, UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}, token, nil
}

package ddbindex

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Move changes an item's key values: one TransactWriteItems deletes the item
// at from's key (condition: it exists and is not deleted, with from's version
// when the model has a version field) and puts to at its key (condition:
// nothing is there, not even a tombstone), plus the index-table writes in
// write-through mode. It returns to as written (with the version from's plus
// one). A move to the same key is refused with ErrInvalidWrite (use Put), and
// so is a move from version 0 of a model with a version field. A lost
// condition is an ErrConflict *Error naming it, what was found, and what to do.
//
// DynamoDB cannot update a key attribute in place; Move is how a ticket whose
// status is part of its sort key changes status.
//
// optFns are applied to every request Move sends, as the SDK's own per-call
// options.
func (t *Table[T]) Move(ctx context.Context, from, to T, optFns ...func(*dynamodb.Options)) (_ T, err error) {
	if err := t.callable(ctx, "Move", ErrInvalidWrite, optFns...); err != nil {
		return to, err
	}
	ctx, c := t.tel.start(ctx, opMove, t.s.base)
	defer func() { c.end(ctx, err) }()
	if err := t.writable("Move"); err != nil {
		return to, err
	}
	expected, err := t.version(&from)
	if err != nil {
		return to, err
	}
	if t.s.version != nil && expected == 0 {
		// Without it the move would go unchecked and write version 1,
		// taking the item's version back.
		return to, writeErr("Move of %s needs the item's current version (it is 0)", t.s.model)
	}
	pf, err := t.prepare(&from, false)
	if err != nil {
		return to, err
	}
	t.setVersion(&to, expected+1)
	pt, err := t.prepare(&to, true)
	if err != nil {
		return to, err
	}
	if sameAttrs(pf.key, pt.key, "") {
		return to, writeErr("Move of %s to the same key %s: use Put", t.s.model, keyString(pt.key))
	}
	if !t.writeThrough() {
		acts, err := t.moveActions(expected, pf, pt, nil, false)
		if err != nil {
			return to, err
		}
		return to, t.transact(ctx, "move", acts, optFns)
	}
	for attempt := 0; ; attempt++ {
		err := t.moveThrough(ctx, expected, pf, pt, optFns)
		if !t.again(ctx, err, attempt, false) {
			return to, err
		}
	}
}

// moveThrough is one attempt of a write-through Move: it reads the item at
// the old key and sends the move with the index writes computed from it in
// one transaction, conditioned on the item being as read.
func (t *Table[T]) moveThrough(ctx context.Context, expected uint64, pf, pt *prepared, optFns []func(*dynamodb.Options)) error {
	old, err := t.current(ctx, pf.key, optFns)
	if err != nil {
		return err
	}
	if old == nil {
		return &Error{Sentinel: ErrConflict, Op: "move", Failed: []string{"the old key " + keyString(pf.key) + " holds the item; " + t.found(nil, expected, "move")}}
	}
	t.stamp(pt.av)
	acts, err := t.moveActions(expected, pf, pt, old, true)
	if err != nil {
		return err
	}
	version := t.changeVersion(expected + 1)
	gone, err := t.indexActions(Change{Old: old, Version: version})
	if err != nil {
		return err
	}
	came, err := t.indexActions(Change{New: pt.av, Version: version})
	if err != nil {
		return err
	}
	return t.transact(ctx, "move", append(append(acts, gone...), came...), optFns)
}

// moveActions is the base-table actions of a Move from pf to pt: the
// delete at the old key, conditioned on the item there (read as old in
// write-through mode), and the put at the new key, conditioned on nothing
// being there.
func (t *Table[T]) moveActions(expected uint64, pf, pt *prepared, old map[string]types.AttributeValue, writeThrough bool) ([]action, error) {
	cond := expression.NameNoDotSplit(t.s.base.pk.attr).AttributeExists()
	what := "the old key " + keyString(pf.key) + " holds the item"
	if t.s.softDelete {
		// A tombstone is absent to a caller: there is nothing to move.
		cond = cond.And(liveCondition(&t.opts))
		what = "the old key " + keyString(pf.key) + " holds the item, not deleted"
	}
	if g, gwhat, ok := t.guard(expected, old, writeThrough); ok {
		cond, what = cond.And(g), what+" and "+gwhat
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, writeErr("%w", err)
	}
	acts := []action{{cond: what, found: t.foundFor("move", expected), item: types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.TableName()), Key: pf.key, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}}
	put, err := t.putAction(pt.av, expression.NameNoDotSplit(t.s.base.pk.attr).AttributeNotExists(), "the new key "+keyString(pt.key)+" is free",
		func(cur map[string]types.AttributeValue) string {
			ver := ""
			if v := t.storedVersion(cur); v != "" {
				ver = " at version " + v
			}
			if t.opts.isTombstone(cur) {
				return "found a deleted item there" + ver + ": Move does not write over a tombstone, which keeps its key until TTL removes it; move to another key"
			}
			return "found another item there" + ver + ": move to another key, or delete that item first"
		})
	if err != nil {
		return nil, err
	}
	return append(acts, put...), nil
}

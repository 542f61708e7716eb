package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Put writes item to the base table, replacing the item with the same key,
// and returns it as written. With a version field, the stored version must
// equal item's and the written version is one more; version 0 means the
// item must not exist yet, and a deleted item (a tombstone) counts as
// absent: Put creates it again, with the version one more than the
// tombstone's, so versions never go back (a copy read before the delete
// still conflicts, and index entries written through stay ordered). A
// mismatch is an ErrConflict *Error that says what was found and what to do;
// a creation that finds a tombstone, or its tombstone gone, after an attempt
// DynamoDB may have applied (its answer lost) is ErrOutcomeUnknown, since the
// item it would create over may be its own, deleted or moved since. In
// write-through mode Put reads the stored item and the index-table writes
// go in the same transaction, conditioned on the item being as read (see
// the note on write-through at [Options.WriteThrough]).
//
// Put cannot change an item's key: an item with other key values is another
// item. To change key values, use [Table.Move]. An item whose field tagged
// ddbindex:"deleted" is true (read from a tombstone) is refused: that field
// is filled by reads and never stored; clear it to create the item again.
//
// optFns are applied to every request Put sends, as the SDK's own per-call
// options.
func (t *Table[T]) Put(ctx context.Context, item T, optFns ...func(*dynamodb.Options)) (_ T, err error) {
	if err := t.callable(ctx, "Put", ErrInvalidWrite, optFns...); err != nil {
		return item, err
	}
	ctx, c := t.tel.start(ctx, opPut, t.s.base)
	defer func() { c.end(ctx, err) }()
	if err := t.writable("Put"); err != nil {
		return item, err
	}
	expected, err := t.version(&item)
	if err != nil {
		return item, err
	}
	t.setVersion(&item, expected+1)
	p, err := t.prepare(&item, true)
	if err != nil {
		return item, err
	}
	if !t.writeThrough() {
		cond, what, ok := t.guard(expected, nil, false)
		over := false // the last attempt created the item over a tombstone
		for attempt := 0; ; attempt++ {
			cur, unsure, err := t.putItem(ctx, p, cond, what, ok, expected, optFns)
			if err == nil || t.s.version == nil || expected != 0 || !errors.Is(err, ErrConflict) || attempt+1 >= throughAttempts {
				return item, err
			}
			var ce *Error
			if unsure && errors.As(err, &ce) && (t.opts.isTombstone(cur) || (over && len(cur) == 0)) {
				// That PutItem may have been applied before it failed its
				// condition: the tombstone found, or the key found free,
				// may be the item it created, deleted or moved away
				// since. Creating the item again would apply this Put a
				// second time, over that write.
				return item, t.putOutcome(ce)
			}
			switch {
			case t.opts.isTombstone(cur):
				// The key holds a tombstone, which counts as absent:
				// create the item again over it.
				var next uint64
				cond, what, next = t.overTombstone(cur)
				t.setStoredVersion(&item, p.av, next)
				ok, over = true, true
			case over && len(cur) == 0:
				// The tombstone is gone (TTL deleted it): the key is
				// free, and the item is created as a new one.
				cond, what, ok = t.guard(expected, nil, false)
				t.setStoredVersion(&item, p.av, expected+1)
				over = false
			default:
				return item, err
			}
		}
	}
	for attempt := 0; ; attempt++ {
		err := t.putThrough(ctx, &item, p, expected, optFns)
		if !t.again(ctx, err, attempt, expected == 0) {
			return item, err
		}
	}
}

// putThrough is one attempt of a write-through Put: it reads the stored
// item and sends the base write and the index writes computed from it in
// one transaction, conditioned on the item being as read.
func (t *Table[T]) putThrough(ctx context.Context, item *T, p *prepared, expected uint64, optFns []func(*dynamodb.Options)) error {
	old, err := t.current(ctx, p.key, optFns)
	if err != nil {
		return err
	}
	next := expected + 1
	if t.s.version != nil && expected == 0 && old != nil && t.opts.isTombstone(old) {
		_, _, next = t.overTombstone(old)
	}
	if t.s.version != nil {
		t.setStoredVersion(item, p.av, next)
	}
	t.stamp(p.av)
	cond, what, _ := t.guard(expected, old, true)
	acts, err := t.putAction(p.av, cond, what, t.foundFor("put", expected))
	if err != nil {
		return err
	}
	basis := old // the image the condition holds the stored item to
	if t.createOnly(expected, old) {
		basis = nil
	}
	idx, err := t.indexActions(Change{Old: basis, New: p.av, Version: t.changeVersion(next)})
	if err != nil {
		return err
	}
	return t.transact(ctx, "put", append(acts, idx...), optFns)
}

// putItem sends a Put's PutItem, with cond when ok, and settles a failed
// condition (see settle). With the conflict it returns the stored item the
// condition met, and unsure: whether an attempt of the PutItem may have been
// applied before (its answer lost), so that the item found may have been
// written over this Put's own write.
func (t *Table[T]) putItem(ctx context.Context, p *prepared, cond expression.ConditionBuilder, what string, ok bool, expected uint64, optFns []func(*dynamodb.Options)) (_ map[string]types.AttributeValue, unsure bool, _ error) {
	in := &dynamodb.PutItemInput{TableName: aws.String(t.TableName()), Item: p.av}
	if ok {
		expr, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return nil, false, writeErr("%w", err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	var att attempts
	_, err := t.client.PutItem(ctx, in, att.with(optFns)...)
	if err == nil {
		return nil, false, nil
	}
	cur, done := t.failedOn(ctx, "put", err, what, p.key, &att, optFns)
	switch {
	case done != nil:
		return nil, false, done
	case att.mayBeRetried() && sameItem(cur, p.av):
		// A PutItem leaves exactly its item: finding it is finding our own
		// write, applied by an attempt whose answer was lost.
		return nil, false, nil
	}
	return cur, att.mayHaveApplied(), &Error{Sentinel: ErrConflict, Op: "put", Failed: []string{what + "; " + t.found(cur, expected, "put")}, Err: sdkError(err)}
}

// putOutcome is the outcome of a Put at version 0 whose PutItem failed its
// condition, finding a tombstone or no item, after an attempt that may have
// been applied (conflict is that failure): nothing tells a write that was
// not applied from one applied and deleted or moved since.
func (t *Table[T]) putOutcome(conflict *Error) error {
	return &Error{Sentinel: ErrOutcomeUnknown, Op: "put", Err: conflict.Err, Reason: fmt.Sprintf(
		"PutItem on %s failed after DynamoDB may have applied it, and its resend failed its condition (%s): the item this Put created may have been deleted or moved since, and a Put at version 0 does not create it again over that. Read the item to see whether your write is there before you put it again",
		t.TableName(), strings.Join(conflict.Failed, "; "))}
}

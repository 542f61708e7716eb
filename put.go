package ddbindex

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Put writes item to the base table, replacing the item with the same key,
// and returns it as written. With a version field, the stored version must
// equal item's (0: the item must not exist yet) and the written version is
// one more; a mismatch is a *ConflictError. In write-through mode the
// index-table writes go in the same transaction.
//
// Put cannot change an item's key: an item with other key values is another
// item. To change key values, use [Table.Move].
//
// optFns are applied to every request Put sends, as the SDK's own per-call
// options.
func (t *Table[T]) Put(ctx context.Context, item T, optFns ...func(*dynamodb.Options)) (T, error) {
	if err := t.writable("Put"); err != nil {
		return item, err
	}
	expected := t.version(&item)
	t.setVersion(&item, expected+1)
	p, err := t.prepare(&item, true)
	if err != nil {
		return item, err
	}
	if !t.writeThrough() {
		in := &dynamodb.PutItemInput{TableName: aws.String(t.TableName()), Item: p.av}
		cond, what, ok := t.guard(expected, nil, false)
		if ok {
			expr, err := expression.NewBuilder().WithCondition(cond).Build()
			if err != nil {
				return item, writeErr("%w", err)
			}
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		}
		if ok {
			in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		var att attempts
		if _, err := t.client.PutItem(ctx, in, att.with(optFns)...); err != nil {
			// A PutItem leaves exactly its item: finding it is finding our
			// own write, applied by an attempt whose answer was lost.
			return item, t.settle(ctx, "put", err, what, expected, p.key, &att, optFns, func(cur map[string]types.AttributeValue) bool {
				return sameItem(cur, p.av)
			})
		}
		return item, nil
	}
	old, err := t.current(ctx, p.key, optFns)
	if err != nil {
		return item, err
	}
	cond, what, _ := t.guard(expected, old, true)
	acts, err := t.putAction(p.av, cond, what, t.foundFor("put", expected))
	if err != nil {
		return item, err
	}
	idx, err := t.indexActions(Change{Old: old, New: p.av, Version: t.changeVersion(expected + 1)})
	if err != nil {
		return item, err
	}
	return item, t.transact(ctx, "put", append(acts, idx...), optFns)
}

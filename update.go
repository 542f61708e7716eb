package ddbindex

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Update applies an update expression to the item with key's key values; the
// item must exist. It refuses, before any request, an update that names a
// key attribute or a key component (DynamoDB cannot change keys in place; use
// [Table.Move] for base keys and [Table.Put] for index keys), and in
// write-through mode it refuses every update with [ErrUnsupported] (the
// index entries need the whole new item: use Put). With a version field, Update adds one to the
// stored version, and when key's version is set it must equal the stored one.
//
// optFns are applied to every request Update sends, as the SDK's own
// per-call options.
func (t *Table[T]) Update(ctx context.Context, key T, update expression.UpdateBuilder, optFns ...func(*dynamodb.Options)) error {
	if err := t.writable("Update"); err != nil {
		return err
	}
	if t.writeThrough() {
		return fmt.Errorf("%w: Update of %s in write-through mode: index tables need the whole new item; use Put", ErrUnsupported, t.s.model)
	}
	p, err := t.prepare(&key, false)
	if err != nil {
		return err
	}
	// Check the names the update itself uses: the condition below names the
	// partition key.
	upd, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return writeErr("%v", err)
	}
	for _, name := range upd.Names() {
		if err := t.keyAttrTouched(name); err != nil {
			return err
		}
		if name == t.opts.WriteTokenAttr {
			return writeErr("Update of %s sets %s, the write token attribute ddbindex owns", t.s.model, name)
		}
	}
	cond := expression.Name(t.s.base.pk.attr).AttributeExists()
	what := "the item exists"
	if t.s.version != nil {
		// Every write moves the version on, so a later Put from a copy read
		// before this update conflicts instead of silently undoing it; with
		// key's version set, the update is conditional on it too.
		for _, name := range upd.Names() {
			if name == t.s.version.attr {
				return writeErr("Update of %s sets its version field %s, which ddbindex owns", t.s.model, name)
			}
		}
		if v := t.version(&key); v > 0 {
			cond = cond.And(expression.Name(t.s.version.attr).Equal(expression.Value(v)))
			what = fmt.Sprintf("the item exists with version %d", v)
		}
	}
	// The token makes a retry of an applied attempt fail its condition
	// instead of applying the update twice, and tells it apart from
	// another writer's update.
	token := newToken()
	tok := expression.Name(t.opts.WriteTokenAttr)
	cond = cond.And(tok.AttributeNotExists().Or(tok.NotEqual(expression.Value(token))))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return writeErr("%v", err)
	}
	// The library's own operations (the token, the version) are added to
	// the built expression, not to update: copies of an UpdateBuilder share
	// its operations, so adding to it would change the caller's builder.
	names, values := maps.Clone(expr.Names()), maps.Clone(expr.Values())
	own := map[string][]string{"SET": {"#ddbxTok = :ddbxTok"}}
	names["#ddbxTok"], values[":ddbxTok"] = t.opts.WriteTokenAttr, &types.AttributeValueMemberS{Value: token}
	if t.s.version != nil {
		own["ADD"] = []string{"#ddbxVer :ddbxOne"}
		names["#ddbxVer"], values[":ddbxOne"] = t.s.version.attr, &types.AttributeValueMemberN{Value: "1"}
	}
	var att attempts
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.TableName()), Key: p.key, UpdateExpression: aws.String(mergeUpdate(aws.ToString(expr.Update()), own)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, att.with(optFns)...)
	if err != nil {
		return t.settle(ctx, "update", err, what, t.version(&key), p.key, &att, optFns, func(cur map[string]types.AttributeValue) bool {
			return t.hasToken(cur, token)
		})
	}
	return nil
}

// mergeUpdate adds operations to an update expression as the expression
// package writes it: one line per clause, the keyword first ("SET #0 = :0,
// #1 = :1"). An operation joins its clause's line, or starts the clause: a
// clause may appear only once.
func mergeUpdate(update string, ops map[string][]string) string {
	lines := strings.Split(strings.TrimRight(update, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	for _, kw := range []string{"SET", "REMOVE", "ADD", "DELETE"} {
		add := ops[kw]
		if len(add) == 0 {
			continue
		}
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, kw+" ") })
		if i < 0 {
			lines = append(lines, kw+" "+strings.Join(add, ", "))
		} else {
			lines[i] += ", " + strings.Join(add, ", ")
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// keyAttrTouched returns ErrKeyChange when attr is a key attribute or a key
// component of the base table or an index.
func (t *Table[T]) keyAttrTouched(attr string) error {
	for _, d := range append([]*layout{t.s.base}, t.s.indexes...) {
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if k == nil {
				continue
			}
			if k.attr == attr && !d.ownTable {
				return t.keyChange(d, attr)
			}
			for _, c := range k.components() {
				if c.f.attr == attr {
					return t.keyChange(d, attr)
				}
			}
		}
	}
	return nil
}

func (t *Table[T]) keyChange(d *layout, attr string) error {
	if d.kind == BaseTable {
		return fmt.Errorf("%w: %s is part of %s's primary key; DynamoDB cannot change it in place: use Move", ErrKeyChange, attr, t.s.model)
	}
	return fmt.Errorf("%w: %s is part of index %s's key, whose derived attributes an update cannot recompute: use Put", ErrKeyChange, attr, d.name)
}

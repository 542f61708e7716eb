package ddbindex

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// This file is the write side: Put, Delete, Move and Update of base items.
// In write-through mode (Options.WriteThrough) each base write and the
// index-table writes it implies go in one TransactWriteItems, conditioned on
// the base item being as it was read; otherwise the base write goes alone and
// a stream consumer (Table.Apply, StreamConsumer) keeps the index tables in
// step.

// maxTransactActions is DynamoDB's limit on actions per transaction.
const maxTransactActions = 100

// ConflictError reports a lost conditional write. It matches [ErrConflict].
type ConflictError struct {
	Op     string   // "put", "delete", "move" or "update"
	Failed []string // the conditions that failed, e.g. "the old key exists with version 3"
	Err    error    // the DynamoDB error
}

// Error implements the error interface.
func (e *ConflictError) Error() string {
	what := "a condition failed"
	if len(e.Failed) > 0 {
		what = "failed: " + strings.Join(e.Failed, "; ")
	}
	return fmt.Sprintf("ddbindex: %s conflict: %s [%s]", e.Op, what, ErrConflict.code)
}

// Is makes ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the DynamoDB error.
func (e *ConflictError) Unwrap() error { return e.Err }

func writeErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidWrite}, args...)...)
}

// action is one TransactWriteItems action and the condition it stands for,
// to name it when the transaction is cancelled.
type action struct {
	item types.TransactWriteItem
	cond string
	// found, when set, describes the stored item a failed condition met
	// (the action asks for it with ALL_OLD).
	found func(map[string]types.AttributeValue) string
}

// version reads the model's version field; 0 when the model has none.
func (t *Table[T]) version(item *T) uint64 {
	if t.s.version == nil {
		return 0
	}
	v := reflect.ValueOf(item).Elem().FieldByIndex(t.s.version.index)
	if v.CanInt() {
		return uint64(v.Int())
	}
	return v.Uint()
}

func (t *Table[T]) setVersion(item *T, n uint64) {
	if t.s.version == nil {
		return
	}
	v := reflect.ValueOf(item).Elem().FieldByIndex(t.s.version.index)
	if v.CanInt() {
		v.SetInt(int64(n))
	} else {
		v.SetUint(n)
	}
}

// prepared is an item ready to write: its stored attributes, key texts and
// base key.
type prepared struct {
	av    map[string]types.AttributeValue
	texts map[*field]string
	key   map[string]types.AttributeValue
}

// prepare marshals item and checks, before any request, every key it
// implies: the base key and the GSI/LSI keys always, and when whole (the item
// as it will be stored: Put, Move's destination) its index-table entries
// too, built by the code that builds them from a stream image, so that a
// write the stream consumer would refuse on every pass is never made.
func (t *Table[T]) prepare(item *T, whole bool) (*prepared, error) {
	av, texts, err := t.marshal(item)
	if err != nil {
		return nil, err
	}
	if err := t.addDerived(av, texts); err != nil {
		return nil, err
	}
	key, err := t.baseKey(texts)
	if err != nil {
		return nil, err
	}
	if whole && t.hasIndexTables() {
		if _, err := t.IndexWrites(Change{New: av, Version: "1"}); err != nil {
			return nil, fmt.Errorf("%w: index table entry: %w", ErrInvalidWrite, err)
		}
	}
	return &prepared{av: av, texts: texts, key: key}, nil
}

// guard is the condition that the stored item is still the one an operation
// planned for. With a version field: the version equals expected (or the item
// does not exist, for expected 0). Without one, in write-through mode: the
// key component attributes equal those of old (so the index entries it
// tombstones are the right ones), or the item does not exist when old is nil.
// It returns ok=false when no condition is needed.
func (t *Table[T]) guard(expected uint64, old map[string]types.AttributeValue, writeThrough bool) (expression.ConditionBuilder, string, bool) {
	pk := expression.Name(t.s.base.pk.attr)
	if t.s.version != nil {
		if expected == 0 {
			return pk.AttributeNotExists(), "the item does not exist yet (version 0)", true
		}
		return expression.Name(t.s.version.attr).Equal(expression.Value(expected)),
			fmt.Sprintf("the item exists with version %d", expected), true
	}
	if !writeThrough {
		return expression.ConditionBuilder{}, "", false
	}
	if old == nil {
		return pk.AttributeNotExists(), "the item does not exist yet", true
	}
	var conds []expression.ConditionBuilder
	names := make([]string, 0, len(t.s.fields))
	for a := range t.s.fields {
		names = append(names, a)
	}
	slices.Sort(names)
	for _, a := range names {
		if v, ok := old[a]; ok {
			conds = append(conds, expression.Name(a).Equal(expression.Value(v)))
		} else {
			conds = append(conds, expression.Name(a).AttributeNotExists())
		}
	}
	c := pk.AttributeExists()
	for _, x := range conds {
		c = c.And(x)
	}
	return c, "the item's key attributes are unchanged since it was read", true
}

// changeVersion is the version index entries written through carry: the
// model's new version, or the clock when the model has no version field.
func (t *Table[T]) changeVersion(newVersion uint64) string {
	if t.s.version != nil {
		return strconv.FormatUint(newVersion, 10)
	}
	return strconv.FormatInt(t.opts.Now().UnixNano(), 10)
}

func (t *Table[T]) hasIndexTables() bool {
	return slices.ContainsFunc(t.s.indexes, func(d *keyDef) bool { return d.kind == IndexTable })
}

func (t *Table[T]) writeThrough() bool { return t.opts.WriteThrough && t.hasIndexTables() }

// current reads the stored base item (strongly consistent), or nil.
func (t *Table[T]) current(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.TableName()), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("ddbindex: read %s: %w", t.s.model, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Put writes item to the base table, replacing the item with the same key,
// and returns it as written. With a version field, the stored version must
// equal item's (0: the item must not exist yet) and the written version is
// one more; a mismatch is a *ConflictError. In write-through mode the
// index-table writes go in the same transaction.
//
// Put cannot change an item's key: an item with other key values is another
// item. To change key values, use [Table.Move].
func (t *Table[T]) Put(ctx context.Context, item T) (T, error) {
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
				return item, fmt.Errorf("ddbindex: %w", err)
			}
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		}
		if ok {
			in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		var att attempts
		if _, err := t.client.PutItem(ctx, in, att.option); err != nil {
			// A PutItem leaves exactly its item: finding it is finding our
			// own write, applied by an attempt whose answer was lost.
			return item, t.settle(ctx, "put", err, what, expected, p.key, &att, func(cur map[string]types.AttributeValue) bool {
				return sameItem(cur, p.av)
			})
		}
		return item, nil
	}
	old, err := t.current(ctx, p.key)
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
	return item, t.transact(ctx, "put", append(acts, idx...))
}

// Delete removes the item with item's key. A model declared softdelete is
// marked deleted (DeletedAttr true, TTLAttr set a Retention ahead) instead of
// removed. With a version field, the stored version must equal item's. In
// write-through mode the index entries become tombstones in the same
// transaction. Deleting an item that does not exist is not an error, unless
// a version is expected.
func (t *Table[T]) Delete(ctx context.Context, item T) error {
	expected := t.version(&item)
	if t.s.version != nil && expected == 0 {
		return writeErr("Delete of %s needs the item's current version (it is 0)", t.s.model)
	}
	p, err := t.prepare(&item, false)
	if err != nil {
		return err
	}
	var old map[string]types.AttributeValue
	if t.writeThrough() {
		if old, err = t.current(ctx, p.key); err != nil {
			return err
		}
		if old == nil && t.s.version == nil {
			return nil
		}
	}
	cond, what, hasCond := t.guard(expected, old, t.writeThrough())
	var base action
	var token string
	if t.s.softDelete {
		upd := expression.Set(expression.Name(t.opts.DeletedAttr), expression.Value(true)).
			Set(expression.Name(t.opts.TTLAttr), expression.Value(t.tombstoneExpiry()))
		if t.s.version != nil {
			upd = upd.Set(expression.Name(t.s.version.attr), expression.Value(expected+1))
		}
		if !hasCond {
			cond, what, hasCond = expression.Name(t.s.base.pk.attr).AttributeExists(), "the item exists", true
		}
		if !t.writeThrough() {
			token = newToken()
			upd, cond = t.withToken(upd, cond, token)
		}
		b := expression.NewBuilder().WithUpdate(upd)
		b = b.WithCondition(cond)
		expr, err := b.Build()
		if err != nil {
			return fmt.Errorf("ddbindex: %w", err)
		}
		base = action{cond: what, found: t.foundFor("delete", expected), item: types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(t.TableName()), Key: p.key, UpdateExpression: expr.Update(),
			ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}}
	} else {
		del := &types.Delete{TableName: aws.String(t.TableName()), Key: p.key}
		if hasCond {
			expr, err := expression.NewBuilder().WithCondition(cond).Build()
			if err != nil {
				return fmt.Errorf("ddbindex: %w", err)
			}
			del.ConditionExpression, del.ExpressionAttributeNames, del.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
			del.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		base = action{cond: what, found: t.foundFor("delete", expected), item: types.TransactWriteItem{Delete: del}}
	}
	if !t.writeThrough() {
		// Our own write, applied by an attempt whose answer was lost: a
		// soft delete finds its token; a hard delete finds the item gone,
		// which only a retried call may take for its own doing.
		ours := func(cur map[string]types.AttributeValue) bool { return cur == nil }
		if t.s.softDelete {
			ours = func(cur map[string]types.AttributeValue) bool { return t.hasToken(cur, token) }
		}
		err := t.single(ctx, "delete", base, expected, ours)
		if t.s.softDelete && t.s.version == nil && errors.Is(err, ErrConflict) {
			// The only condition was that the item exists (so that the
			// update does not create it): a missing item is no error.
			return nil
		}
		return err
	}
	idx, err := t.indexActions(Change{Old: old, Version: t.changeVersion(expected + 1)})
	if err != nil {
		return err
	}
	return t.transact(ctx, "delete", append([]action{base}, idx...))
}

// Move changes an item's key values: one TransactWriteItems deletes the item
// at from's key (condition: it exists, with from's version when the model has
// a version field) and puts to at its key (condition: nothing is there), plus
// the index-table writes in write-through mode. It returns to as written
// (with the version from's plus one). A move to the same key is refused with
// ErrInvalidWrite (use Put), and so is a move from version 0 of a model with a
// version field. A lost condition is a *ConflictError naming it.
//
// DynamoDB cannot update a key attribute in place; Move is how a ticket whose
// status is part of its sort key changes status.
func (t *Table[T]) Move(ctx context.Context, from, to T) (T, error) {
	expected := t.version(&from)
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
	var old map[string]types.AttributeValue
	if t.writeThrough() {
		if old, err = t.current(ctx, pf.key); err != nil {
			return to, err
		}
		if old == nil {
			return to, &ConflictError{Op: "move", Failed: []string{"the old key " + keyString(pf.key) + " exists"}}
		}
	}
	cond := expression.Name(t.s.base.pk.attr).AttributeExists()
	what := "the old key " + keyString(pf.key) + " exists"
	if g, gwhat, ok := t.guard(expected, old, t.writeThrough()); ok {
		cond, what = cond.And(g), what+" and "+gwhat
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return to, fmt.Errorf("ddbindex: %w", err)
	}
	acts := []action{{cond: what, found: t.foundFor("move", expected), item: types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.TableName()), Key: pf.key, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}}
	put, err := t.putAction(pt.av, expression.Name(t.s.base.pk.attr).AttributeNotExists(), "the new key "+keyString(pt.key)+" is free",
		func(cur map[string]types.AttributeValue) string {
			return "found " + t.state(cur) + " there: another item holds the new key; move to another key, or remove that item first"
		})
	if err != nil {
		return to, err
	}
	acts = append(acts, put...)
	if t.writeThrough() {
		version := t.changeVersion(expected + 1)
		gone, err := t.indexActions(Change{Old: old, Version: version})
		if err != nil {
			return to, err
		}
		came, err := t.indexActions(Change{New: pt.av, Version: version})
		if err != nil {
			return to, err
		}
		acts = append(append(acts, gone...), came...)
	}
	return to, t.transact(ctx, "move", acts)
}

// Update applies an update expression to the item with key's key values; the
// item must exist. It refuses, before any request, an update that names a
// key attribute or a key component (DynamoDB cannot change keys in place; use
// [Table.Move] for base keys and [Table.Put] for index keys), and in
// write-through mode it refuses every update (the index entries need the
// whole new item: use Put). With a version field, Update adds one to the
// stored version, and when key's version is set it must equal the stored one.
func (t *Table[T]) Update(ctx context.Context, key T, update expression.UpdateBuilder) error {
	if t.writeThrough() {
		return writeErr("Update of %s in write-through mode: index tables need the whole new item; use Put", t.s.model)
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
	}, att.option)
	if err != nil {
		return t.settle(ctx, "update", err, what, t.version(&key), p.key, &att, func(cur map[string]types.AttributeValue) bool {
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
	for _, d := range append([]*keyDef{t.s.base}, t.s.indexes...) {
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if k == nil {
				continue
			}
			if k.attr == attr && d.kind != IndexTable {
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

func (t *Table[T]) keyChange(d *keyDef, attr string) error {
	if d.kind == BaseTable {
		return fmt.Errorf("%w: %s is part of %s's primary key; DynamoDB cannot change it in place: use Move", ErrKeyChange, attr, t.s.model)
	}
	return fmt.Errorf("%w: %s is part of index %s's key, whose derived attributes an update cannot recompute: use Put", ErrKeyChange, attr, d.name)
}

func (t *Table[T]) putAction(av map[string]types.AttributeValue, cond expression.ConditionBuilder, what string, found func(map[string]types.AttributeValue) string) ([]action, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("ddbindex: %w", err)
	}
	return []action{{cond: what, found: found, item: types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.TableName()), Item: av, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}}, nil
}

// foundFor returns the description of a found item for a write that
// expected version expected.
func (t *Table[T]) foundFor(op string, expected uint64) func(map[string]types.AttributeValue) string {
	return func(cur map[string]types.AttributeValue) string { return t.found(cur, expected, op) }
}

// indexActions turns a change's index writes into transaction actions. They
// are unconditional: the base action's condition already serialises every
// write of the item, and entries belong to one base item each.
func (t *Table[T]) indexActions(c Change) ([]action, error) {
	writes, err := t.IndexWrites(c)
	if err != nil {
		return nil, err
	}
	acts := make([]action, len(writes))
	for i, w := range writes {
		what := "index " + w.Index + " entry write"
		if w.Tombstone {
			what = "index " + w.Index + " tombstone write"
		}
		acts[i] = action{cond: what, item: types.TransactWriteItem{Put: &types.Put{TableName: aws.String(w.Table), Item: w.Item}}}
	}
	return acts, nil
}

// single sends one action on its own. ours tells, from the stored item
// found after a conditional-check failure, whether an earlier attempt of the
// call applied the action (see settle).
func (t *Table[T]) single(ctx context.Context, op string, a action, expected uint64, ours func(map[string]types.AttributeValue) bool) error {
	var err error
	var att attempts
	var key map[string]types.AttributeValue
	switch {
	case a.item.Delete != nil:
		d := a.item.Delete
		key = d.Key
		in := &dynamodb.DeleteItemInput{TableName: d.TableName, Key: d.Key,
			ConditionExpression: d.ConditionExpression, ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues}
		if d.ConditionExpression != nil {
			in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		}
		_, err = t.client.DeleteItem(ctx, in, att.option)
	case a.item.Update != nil:
		u := a.item.Update
		key = u.Key
		_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}, att.option)
	}
	if err != nil {
		return t.settle(ctx, op, err, a.cond, expected, key, &att, ours)
	}
	return nil
}

// transact sends actions in one TransactWriteItems.
func (t *Table[T]) transact(ctx context.Context, op string, acts []action) error {
	if len(acts) > maxTransactActions {
		return fmt.Errorf("%w: %s of %s needs %d actions", ErrTooManyActions, op, t.s.model, len(acts))
	}
	items := make([]types.TransactWriteItem, len(acts))
	for i, a := range acts {
		items[i] = a.item
	}
	// The SDK gives the call one idempotency token (ClientRequestToken),
	// which its retries reuse: a retried transaction that was applied is
	// not applied again, and succeeds.
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		ce := &ConflictError{Op: op, Err: err}
		for i, r := range tce.CancellationReasons {
			code := aws.ToString(r.Code)
			if code == "" || code == "None" || i >= len(acts) {
				continue
			}
			failed := acts[i].cond + " (" + code + ")"
			if code == "ConditionalCheckFailed" && len(r.Item) > 0 && acts[i].found != nil {
				failed += "; " + acts[i].found(r.Item)
			}
			ce.Failed = append(ce.Failed, failed)
		}
		return ce
	}
	if err != nil {
		return fmt.Errorf("ddbindex: %s %s: %w", op, t.s.model, err)
	}
	return nil
}

// ---- retried writes ---------------------------------------------------------
//
// When a conditional PutItem, UpdateItem or DeleteItem is applied but its
// answer is lost, the SDK retries it, and the retry fails its own
// condition. settle tells that case from a real conflict by the stored item
// that the failed check found (ReturnValuesOnConditionCheckFailure=ALL_OLD,
// or a strongly consistent GetItem on servers that do not return it): a Put
// finds exactly the item it wrote; an update finds the random token it
// wrote into Options.WriteTokenAttr; a hard delete finds the item gone,
// which counts as its own doing only when the call was retried. Only a
// retried call can have applied an earlier attempt, so a first attempt's
// failure is always a conflict. Transactions need none of this: the SDK's
// idempotency token makes their retries safe.

// attempts counts the attempts of one SDK call: the retry middleware runs
// the rest of the Finalize step once per attempt.
type attempts struct{ n atomic.Int32 }

// option is a per-call SDK option that counts the call's attempts.
func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("ddbindexCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				a.n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// mayBeRetried reports whether an earlier attempt of the call may have been
// applied: more than one attempt, or an unknown count (a client that does
// not run per-call options).
func (a *attempts) mayBeRetried() bool { return a.n.Load() != 1 }

// newToken returns a random write token: 128 bits, as text.
func newToken() string { return rand.Text() }

// withToken adds a write token to an update the library builds itself: it
// is written with the update, and the update is conditioned on the item not
// holding it already. (Update adds it to the built expression instead: it
// must not change the caller's builder.)
func (t *Table[T]) withToken(upd expression.UpdateBuilder, cond expression.ConditionBuilder, token string) (expression.UpdateBuilder, expression.ConditionBuilder) {
	n := expression.Name(t.opts.WriteTokenAttr)
	return upd.Set(n, expression.Value(token)), cond.And(n.AttributeNotExists().Or(n.NotEqual(expression.Value(token))))
}

// hasToken reports whether a stored item holds the write token.
func (t *Table[T]) hasToken(item map[string]types.AttributeValue, token string) bool {
	s, ok := item[t.opts.WriteTokenAttr].(*types.AttributeValueMemberS)
	return ok && s.Value == token
}

// settle turns a failed single write into the call's outcome: nil when the
// stored item shows that an earlier attempt of this call applied it
// (ours), a *ConflictError saying what was expected and what was found when
// the condition really failed, or the error itself when it is no
// conditional-check failure. When the item must be read to tell, and that
// read fails, the outcome is unknown: the error says so, and is no conflict.
func (t *Table[T]) settle(ctx context.Context, op string, err error, what string, expected uint64, key map[string]types.AttributeValue,
	att *attempts, ours func(map[string]types.AttributeValue) bool) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return fmt.Errorf("ddbindex: %s %s: %w", op, t.s.model, err)
	}
	retried := att.mayBeRetried()
	cur := ccf.Item
	if len(cur) == 0 {
		// No item returned: none is stored, or the server does not return
		// it. Read it.
		var rerr error
		cur, rerr = t.current(ctx, key)
		if rerr != nil {
			if retried {
				return fmt.Errorf("ddbindex: %s %s: a retried attempt failed its condition (%s), and reading the item to tell whether an earlier attempt was applied failed; the write may or may not have been made: %w",
					op, t.s.model, what, rerr)
			}
			return &ConflictError{Op: op, Failed: []string{what}, Err: err}
		}
	}
	if retried && ours(cur) {
		return nil
	}
	return &ConflictError{Op: op, Failed: []string{what + "; " + t.found(cur, expected, op)}, Err: err}
}

// found describes the stored item a failed condition met, and what to do.
func (t *Table[T]) found(cur map[string]types.AttributeValue, expected uint64, op string) string {
	st := "found " + t.state(cur)
	switch {
	case len(cur) == 0 && op == "update":
		return st + ": Update does not create items (use Put)"
	case len(cur) == 0:
		return st + ": it was deleted or moved; re-read it before writing again"
	case t.s.version != nil && expected == 0 && op != "update":
		return st + ": it was created meanwhile; read it, and write that copy"
	}
	return st + ": another write came first; re-read the item and retry"
}

// state names a stored item for a conflict message: its version (with a
// version field) and whether it is soft-deleted.
func (t *Table[T]) state(cur map[string]types.AttributeValue) string {
	if len(cur) == 0 {
		return "no item with that key"
	}
	st := "an item"
	if t.s.version != nil {
		if n, ok := cur[t.s.version.attr].(*types.AttributeValueMemberN); ok {
			st = "version " + n.Value
		}
	}
	if b, ok := cur[t.opts.DeletedAttr].(*types.AttributeValueMemberBOOL); ok && b.Value {
		st += ", soft-deleted"
	}
	return st
}

// sameItem reports whether two items hold the same attributes, comparing
// values as DynamoDB does (numbers by value, sets as sets), since a server
// returns numbers normalized and sets in its own order.
func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && sameNumber(x.Value, y.Value)
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value, func(p, q string) bool { return p == q })
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value, sameNumber)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(x.Value, y.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for i := range x.Value {
			if !sameValue(x.Value[i], y.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for k, v := range x.Value {
			w, ok := y.Value[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return avEqual(a, b)
}

// sameNumber compares two DynamoDB Number texts by value.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// sameSet compares two sets, each element matched once.
func sameSet[E any](a, b []E, eq func(E, E) bool) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && eq(x, y) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
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

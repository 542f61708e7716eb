package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
		if _, err := t.client.PutItem(ctx, in); err != nil {
			return item, t.conflict("put", err, what)
		}
		return item, nil
	}
	old, err := t.current(ctx, p.key)
	if err != nil {
		return item, err
	}
	cond, what, _ := t.guard(expected, old, true)
	acts, err := t.putAction(p.av, cond, what)
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
	if t.s.softDelete {
		upd := expression.Set(expression.Name(t.opts.DeletedAttr), expression.Value(true)).
			Set(expression.Name(t.opts.TTLAttr), expression.Value(t.tombstoneExpiry()))
		if t.s.version != nil {
			upd = upd.Set(expression.Name(t.s.version.attr), expression.Value(expected+1))
		}
		b := expression.NewBuilder().WithUpdate(upd)
		if !hasCond {
			cond, what, hasCond = expression.Name(t.s.base.pk.attr).AttributeExists(), "the item exists", true
		}
		b = b.WithCondition(cond)
		expr, err := b.Build()
		if err != nil {
			return fmt.Errorf("ddbindex: %w", err)
		}
		base = action{cond: what, item: types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(t.TableName()), Key: p.key, UpdateExpression: expr.Update(),
			ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		}}}
	} else {
		del := &types.Delete{TableName: aws.String(t.TableName()), Key: p.key}
		if hasCond {
			expr, err := expression.NewBuilder().WithCondition(cond).Build()
			if err != nil {
				return fmt.Errorf("ddbindex: %w", err)
			}
			del.ConditionExpression, del.ExpressionAttributeNames, del.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		}
		base = action{cond: what, item: types.TransactWriteItem{Delete: del}}
	}
	if !t.writeThrough() {
		err := t.single(ctx, "delete", base)
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
	acts := []action{{cond: what, item: types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.TableName()), Key: pf.key, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}}}
	put, err := t.putAction(pt.av, expression.Name(t.s.base.pk.attr).AttributeNotExists(), "the new key "+keyString(pt.key)+" is free")
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
		update = update.Add(expression.Name(t.s.version.attr), expression.Value(1))
		if v := t.version(&key); v > 0 {
			cond = cond.And(expression.Name(t.s.version.attr).Equal(expression.Value(v)))
			what = fmt.Sprintf("the item exists with version %d", v)
		}
	}
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return writeErr("%v", err)
	}
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.TableName()), Key: p.key, UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return t.conflict("update", err, what)
	}
	return nil
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

func (t *Table[T]) putAction(av map[string]types.AttributeValue, cond expression.ConditionBuilder, what string) ([]action, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("ddbindex: %w", err)
	}
	return []action{{cond: what, item: types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.TableName()), Item: av, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}}}, nil
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

// single sends one action on its own.
func (t *Table[T]) single(ctx context.Context, op string, a action) error {
	var err error
	switch {
	case a.item.Delete != nil:
		d := a.item.Delete
		_, err = t.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: d.TableName, Key: d.Key,
			ConditionExpression: d.ConditionExpression, ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues})
	case a.item.Update != nil:
		u := a.item.Update
		_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues})
	}
	if err != nil {
		return t.conflict(op, err, a.cond)
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
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		ce := &ConflictError{Op: op, Err: err}
		for i, r := range tce.CancellationReasons {
			code := aws.ToString(r.Code)
			if code == "" || code == "None" || i >= len(acts) {
				continue
			}
			ce.Failed = append(ce.Failed, acts[i].cond+" ("+code+")")
		}
		return ce
	}
	if err != nil {
		return fmt.Errorf("ddbindex: %s %s: %w", op, t.s.model, err)
	}
	return nil
}

// conflict turns a conditional-check failure into a *ConflictError.
func (t *Table[T]) conflict(op string, err error, what string) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &ConflictError{Op: op, Failed: []string{what}, Err: err}
	}
	return fmt.Errorf("ddbindex: %s %s: %w", op, t.s.model, err)
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

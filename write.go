package ddbindex

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file is what the writes (put.go, delete.go, move.go, update.go)
// share: preparing an item, the conditions that guard a write, sending one
// action or a transaction, and telling a lost answer from a real conflict.
// In write-through mode (Options.WriteThrough) each base write and the
// index-table writes it implies go in one TransactWriteItems, conditioned on
// the base item being as it was read; otherwise the base write goes alone and
// a stream consumer (Table.Apply, under package stream's Consumer) keeps the
// index tables in step.

// maxTransactActions is DynamoDB's limit on actions per transaction.
const maxTransactActions = 100

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

// version reads the model's version field; 0 when the model has none. A
// negative version (of a signed field) is refused: no write stores one.
func (t *Table[T]) version(item *T) (uint64, error) {
	if t.s.version == nil {
		return 0, nil
	}
	v := reflect.ValueOf(item).Elem().FieldByIndex(t.s.version.index)
	if v.CanInt() {
		if n := v.Int(); n < 0 {
			return 0, writeErr("%s.%s is %d: a version is never negative (0 creates the item; otherwise give the version read)",
				t.s.model, t.s.version.goName, n)
		}
		return uint64(v.Int()), nil
	}
	return v.Uint(), nil
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
	texts keyTexts
	key   map[string]types.AttributeValue
}

// prepare marshals item and checks, before any request, every key it
// implies: the base key and the GSI/LSI keys always, and when whole (the item
// as it will be stored: Put, Move's destination) its index-table entries
// too, built by the code that builds them from a stream image, so that a
// write the stream consumer would refuse on every pass is never made. A
// whole item must not be marked deleted (see deletedSet).
func (t *Table[T]) prepare(item *T, whole bool) (*prepared, error) {
	if whole && t.deletedSet(item) {
		return nil, writeErr("%s.%s is true: the value was read from a tombstone, and that field is filled by reads, never stored; clear it to create the item again",
			t.s.model, t.s.deleted.goName)
	}
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
	if whole {
		if err := checkItemSize("the item "+t.s.model, av, t.baseRoom(av)); err != nil {
			return nil, err
		}
	}
	if whole && t.hasIndexTables() {
		// Sized with the longest version a change carries, and room to
		// become a tombstone: an entry the consumer could not write, now
		// or when the item is deleted, is never made.
		if _, err := t.indexWrites(Change{New: av, Version: maxVersion}, t.opts.tombstoneMarkBytes()); err != nil {
			return nil, fmt.Errorf("ddbindex: index table entry: %w", err) // IndexWrites' errors match ErrInvalidWrite
		}
	}
	return &prepared{av: av, texts: texts, key: key}, nil
}

// keyOf returns item's base key and the key texts of its base key fields,
// from those fields alone: the others (an index's components among them)
// may be unset.
func (t *Table[T]) keyOf(item *T) (map[string]types.AttributeValue, keyTexts, error) {
	av, err := attributevalue.MarshalMapWithOptions(item, marshalOptions)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: marshal %s: %w", ErrInvalidWrite, t.s.model, err)
	}
	own := map[string]types.AttributeValue{}
	for _, k := range []*keyAttr{t.s.base.pk, t.s.base.sk} {
		if k == nil {
			continue
		}
		for _, c := range k.parts {
			if v, has := av[c.f.attr]; has {
				own[c.f.attr] = v
			}
		}
	}
	texts, err := t.s.storedTexts(reflect.ValueOf(item).Elem(), own)
	if err != nil {
		return nil, nil, err
	}
	key, err := t.baseKey(texts)
	if err != nil {
		return nil, nil, err
	}
	return key, texts, nil
}

// guard is the condition that the stored item is still the one an operation
// planned for. With a version field: the version equals expected, or for
// expected 0 the item does not exist, or is the tombstone old (read before
// the write) at its version: Put creates an item again over its tombstone.
// A creation at version 0 over no item or a live one (see createOnly)
// needs nothing more, in any mode: its index writes are those of a new
// item. Otherwise, in write-through mode, the index writes were computed
// from old, so the condition also holds the stored item to old as read
// (see asRead): a
// version alone does not, since a hard delete forgets it and an item
// created again starts at version 1; and when old is nil, the item must
// still not exist (with expected above 0 the write fails whatever it
// finds). Without a version field, in write-through mode: the item is old
// as read, or does not exist when old is nil. It returns ok=false when no
// condition is needed.
func (t *Table[T]) guard(expected uint64, old map[string]types.AttributeValue, writeThrough bool) (expression.ConditionBuilder, string, bool) {
	pk := expression.NameNoDotSplit(t.s.base.pk.attr)
	if t.s.version != nil {
		var cond expression.ConditionBuilder
		var what string
		switch {
		case t.createOnly(expected, old):
			return pk.AttributeNotExists(), "no item has this key yet (version 0 creates it)", true
		case expected == 0:
			cond, what, _ = t.overTombstone(old)
		default:
			cond, what = expression.NameNoDotSplit(t.s.version.attr).Equal(expression.Value(expected)), fmt.Sprintf("the item is at version %d", expected)
		}
		switch {
		case writeThrough && old != nil:
			// When only this part fails, the version holds, and found
			// says that the item was deleted and created again.
			cond = cond.And(t.asRead(old))
		case writeThrough:
			// The write read no item, and its index writes remove no
			// entry: an item stored since, even at the expected
			// version, is another one (created again), so the write
			// fails whatever is found.
			cond = cond.And(pk.AttributeNotExists())
		}
		return cond, what, true
	}
	if !writeThrough {
		return expression.ConditionBuilder{}, "", false
	}
	if old == nil {
		return pk.AttributeNotExists(), "no item has this key yet", true
	}
	return pk.AttributeExists().And(t.asRead(old)), "the item is unchanged since it was read", true
}

// createOnly reports whether a write that expects version expected and read
// old is conditioned on no item being stored at all (see guard): a creation
// at version 0 of a model with a version field, over no item or over a
// live one. Such a write lands only where no item is stored, so its index
// writes are those of a new item whatever it read: a live item read before
// it is gone by then, and the write that removed it removed its entries
// (computing them from that item would take its entries for the new one's
// and leave the new item with none).
func (t *Table[T]) createOnly(expected uint64, old map[string]types.AttributeValue) bool {
	return t.s.version != nil && expected == 0 && (old == nil || !t.opts.isTombstone(old))
}

// asRead is the condition that the stored item is old, the item a
// write-through write read and computed its index writes from: the same
// write token (every write-through write stores a new one, see stamp), or
// none when old had none, and the same key fields and tombstone mark, which
// are all that the index writes depend on (the new entries are written
// whole). A write by any other writer of the library, a delete and a
// creation again among them, changes the token.
func (t *Table[T]) asRead(old map[string]types.AttributeValue) expression.ConditionBuilder {
	names := make([]string, 0, len(t.s.fields)+2)
	for _, f := range t.s.fields {
		names = append(names, f.attr)
	}
	names = append(names, t.opts.DeletedAttr, t.opts.WriteTokenAttr)
	slices.Sort(names)
	names = slices.Compact(names)
	conds := make([]expression.ConditionBuilder, len(names))
	for i, a := range names {
		conds[i] = expression.NameNoDotSplit(a).AttributeNotExists()
		if v, ok := old[a]; ok {
			conds[i] = holds(a, v)
		}
	}
	// One flat AND (names holds at least the tombstone mark and the token).
	return expression.And(conds[0], conds[1], conds[2:]...)
}

// holds is the condition that attribute a holds v. A NULL is matched by
// its type, attribute_type(a, NULL): a NULL has no other value, and the
// condition syntax documents comparisons for the types that have values.
// The conditions that hold a stored item to the attribute values a write
// read (asRead, and a backfill's unchanged) build their terms here.
func holds(a string, v types.AttributeValue) expression.ConditionBuilder {
	n := expression.NameNoDotSplit(a)
	if _, ok := v.(*types.AttributeValueMemberNULL); ok {
		return n.AttributeType(expression.Null)
	}
	return n.Equal(expression.Value(v))
}

// stamp stores a new write token in av, an item a write-through write is
// about to store, so that a write that read the item before it no longer
// finds the item as read (see asRead).
func (t *Table[T]) stamp(av map[string]types.AttributeValue) {
	av[t.opts.WriteTokenAttr] = &types.AttributeValueMemberS{Value: newToken()}
}

// changeVersion is the version index entries written through carry: the
// model's new version, or the clock when the model has no version field.
func (t *Table[T]) changeVersion(newVersion uint64) string {
	if t.s.version != nil {
		return strconv.FormatUint(newVersion, 10)
	}
	return strconv.FormatInt(t.opts.Now().UnixNano(), 10)
}

// throughAttempts bounds the attempts of a write-through Put, Delete or
// Move (see again).
const throughAttempts = 8

// again reports whether a write-through transaction that failed with err,
// on attempt (from 0), is to be made again from a new read of the item: when
// another transaction on the same items was in flight (TransactionConflict),
// or, for a model without a version field, whose writes expect nothing of
// the stored item, when the item changed between the read and the
// transaction (the base action, first, failed its condition), or, for a
// creation (creating: a Put at version 0), when the base action found a
// tombstone (the item read live was deleted since, and a creation takes a
// tombstone for absent, as a Put that reads nothing does) or found no item
// (the tombstone it read is gone, deleted by TTL: the key is free; a
// creation over no item fails only on an item, which DynamoDB returns).
// With a version
// field a changed item is otherwise a conflict for the caller to resolve.
func (t *Table[T]) again(ctx context.Context, err error, attempt int, creating bool) bool {
	var tce *types.TransactionCanceledException
	if attempt+1 >= throughAttempts || !errors.As(err, &tce) || !conflictOnly(tce) {
		return false
	}
	retry := false
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict":
			retry = true
		case "ConditionalCheckFailed":
			retry = retry || (i == 0 && (t.s.version == nil || (creating && (len(r.Item) == 0 || t.opts.isTombstone(r.Item)))))
		}
	}
	if !retry {
		return false
	}
	// A short pause, random and growing with the attempts, so that writers
	// racing for one item do not all come back at once.
	pause := time.NewTimer(time.Duration(mrand.Int64N(int64(time.Millisecond) << attempt)))
	defer pause.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-pause.C:
		return true
	}
}

func (t *Table[T]) writeThrough() bool { return t.opts.WriteThrough && t.hasIndexTables() }

// current reads the stored base item (strongly consistent), or nil.
func (t *Table[T]) current(ctx context.Context, key map[string]types.AttributeValue, optFns []func(*dynamodb.Options)) (map[string]types.AttributeValue, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.TableName()), Key: key, ConsistentRead: aws.Bool(true)}, optFns...)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: read %s: %w", t.s.model, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func (t *Table[T]) putAction(av map[string]types.AttributeValue, cond expression.ConditionBuilder, what string, found func(map[string]types.AttributeValue) string) ([]action, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, writeErr("%w", err)
	}
	return []action{{cond: what, found: found, item: types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.TableName()), Item: av, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}}, nil
}

// storedVersion returns the version a stored item holds, as its Number
// text; "" when it has none (or the model has no version field).
func (t *Table[T]) storedVersion(item map[string]types.AttributeValue) string {
	if t.s.version == nil {
		return ""
	}
	if n, ok := item[t.s.version.attr].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

// setStoredVersion sets the version of an item about to be written, in the
// model value and in its attributes.
func (t *Table[T]) setStoredVersion(item *T, av map[string]types.AttributeValue, n uint64) {
	t.setVersion(item, n)
	av[t.s.version.attr] = &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
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
func (t *Table[T]) single(ctx context.Context, op string, a action, expected uint64, optFns []func(*dynamodb.Options), ours func(map[string]types.AttributeValue) bool) error {
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
		_, err = t.client.DeleteItem(ctx, in, att.with(optFns)...)
	case a.item.Update != nil:
		u := a.item.Update
		key = u.Key
		_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}, att.with(optFns)...)
	}
	if err != nil {
		return t.settle(ctx, op, err, a.cond, expected, key, &att, optFns, ours)
	}
	return nil
}

// transact sends actions in one TransactWriteItems.
func (t *Table[T]) transact(ctx context.Context, op string, acts []action, optFns []func(*dynamodb.Options)) error {
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
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, optFns...)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && conflictOnly(tce) {
		ce := &Error{Sentinel: ErrConflict, Op: op, Err: sdkError(err)}
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

// conflictOnly reports whether a cancelled transaction was cancelled for
// conflicts only (a failed condition, or another transaction in flight on
// an item): a cancellation for throttling, validation or capacity is no
// conflict, and is reported as the DynamoDB error it is.
func conflictOnly(tce *types.TransactionCanceledException) bool {
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "", "None", "ConditionalCheckFailed", "TransactionConflict":
		default:
			return false
		}
	}
	return true
}

// ---- retried writes ---------------------------------------------------------
//
// When a conditional PutItem, UpdateItem or DeleteItem is applied but its
// answer is lost, the SDK retries it, and the retry fails its own
// condition. settle tells that case from a real conflict by the stored item
// that the failed check found (ReturnValuesOnConditionCheckFailure=ALL_OLD,
// or a strongly consistent GetItem on servers that do not return it): a Put
// finds exactly the item it wrote; an update finds the random token it
// wrote into the write-token attribute (TableSpec tokenattr=); a hard delete finds the item gone,
// which counts as its own doing only when the call was retried. Only a
// retried call can have applied an earlier attempt, so a first attempt's
// failure is always a conflict. Transactions need none of this: the SDK's
// idempotency token makes their retries safe.

// attempts counts the attempts of one SDK call: the retry middleware runs
// the rest of the Finalize step once per attempt. unsure is set when an
// attempt failed in a way after which DynamoDB may have applied it (see
// notApplied): a timeout, a reset connection, a 5xx answer.
type attempts struct {
	n      atomic.Int32
	unsure atomic.Bool
}

// option is a per-call SDK option that counts the call's attempts.
func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("ddbindexCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				a.n.Add(1)
				out, md, err := next.HandleFinalize(ctx, in)
				if err != nil && !notApplied(err) {
					a.unsure.Store(true)
				}
				return out, md, err
			}), middleware.After)
	})
}

// with returns the caller's per-call options followed by option, which
// comes last so that an option that replaces APIOptions cannot drop it.
func (a *attempts) with(optFns []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	return append(slices.Clip(optFns), a.option)
}

// mayBeRetried reports whether an earlier attempt of the call may have been
// applied: more than one attempt, or an unknown count (a client that does
// not run per-call options).
func (a *attempts) mayBeRetried() bool { return a.n.Load() != 1 }

// mayHaveApplied reports whether an attempt of the call may have been
// applied although the call failed: one failed after DynamoDB may have
// applied it, or the count is unknown.
func (a *attempts) mayHaveApplied() bool { return a.n.Load() == 0 || a.unsure.Load() }

// newToken returns a random write token: 128 bits, as text.
func newToken() string { return rand.Text() }

// withToken adds a write token to an update the library builds: it is
// written with the update, and the update is conditioned on the item not
// holding it already. That keeps a retry from being applied over the call's
// own write, not over another writer's after it: Update keeps the SDK from
// resending an update that a second application would change (resend.go).
func (t *Table[T]) withToken(upd expression.UpdateBuilder, cond expression.ConditionBuilder, token string) (expression.UpdateBuilder, expression.ConditionBuilder) {
	n := expression.NameNoDotSplit(t.opts.WriteTokenAttr)
	return upd.Set(n, expression.Value(token)), cond.And(n.AttributeNotExists().Or(n.NotEqual(expression.Value(token))))
}

// hasToken reports whether a stored item holds the write token.
func (t *Table[T]) hasToken(item map[string]types.AttributeValue, token string) bool {
	s, ok := item[t.opts.WriteTokenAttr].(*types.AttributeValueMemberS)
	return ok && s.Value == token
}

// settle turns a failed single write into the call's outcome: nil when the
// stored item shows that an earlier attempt of this call applied it
// (ours), an ErrConflict *Error saying what was expected and what was found when
// the condition really failed, or the error itself when it is no
// conditional-check failure. When the item must be read to tell, and that
// read fails, the outcome is unknown: the error says so, and is no conflict.
func (t *Table[T]) settle(ctx context.Context, op string, err error, what string, expected uint64, key map[string]types.AttributeValue,
	att *attempts, optFns []func(*dynamodb.Options), ours func(map[string]types.AttributeValue) bool) error {
	cur, done := t.failedOn(ctx, op, err, what, key, att, optFns)
	if done != nil {
		return done
	}
	if att.mayBeRetried() && ours(cur) {
		return nil
	}
	return &Error{Sentinel: ErrConflict, Op: op, Failed: []string{what + "; " + t.found(cur, expected, op)}, Err: sdkError(err)}
}

// failedOn returns the stored item that err, the failure of a single
// conditional write, met: the item DynamoDB returned with it (ALL_OLD), or
// when it returned none, the item read now (nil when none is stored). done
// is not nil when it is the call's outcome already: err is no
// conditional-check failure, or the item could not be read.
func (t *Table[T]) failedOn(ctx context.Context, op string, err error, what string, key map[string]types.AttributeValue, att *attempts, optFns []func(*dynamodb.Options)) (cur map[string]types.AttributeValue, done error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, fmt.Errorf("ddbindex: %s %s: %w", op, t.s.model, err)
	}
	if len(ccf.Item) > 0 {
		return ccf.Item, nil
	}
	// No item returned: none is stored, or the server does not return it.
	// Read it.
	cur, rerr := t.current(ctx, key, optFns)
	if rerr != nil {
		if att.mayBeRetried() {
			return nil, fmt.Errorf("ddbindex: %s %s: a retried attempt failed its condition (%s), and reading the item to tell whether an earlier attempt was applied failed; the write may or may not have been made: %w",
				op, t.s.model, what, rerr)
		}
		return nil, &Error{Sentinel: ErrConflict, Op: op, Failed: []string{what}, Err: sdkError(err)}
	}
	return cur, nil
}

// found describes the stored item a failed condition met (cur; nil when
// none is stored), as the write of operation op that expected version
// expected sees it, and what to do.
func (t *Table[T]) found(cur map[string]types.AttributeValue, expected uint64, op string) string {
	st := "found " + t.state(cur)
	now := ""
	if v := t.storedVersion(cur); v != "" {
		now = " (now version " + v + ")"
	}
	switch {
	case len(cur) == 0:
		switch op {
		case "update":
			return st + ": Update changes existing items only; create it with Put"
		case "delete":
			return st + ": it is gone already (deleted for good, or moved to another key); there is nothing to delete at this key"
		case "move":
			return st + ": it was deleted for good or moved to another key since it was read; re-read it before moving it"
		}
		return st + ": it was deleted for good or moved to another key since it was read; to create it anew, put it with version 0"
	case t.opts.isTombstone(cur):
		switch op {
		case "update":
			return st + ": Update does not change a deleted item; to create it again, put it with version 0"
		case "delete":
			return st + ": it is deleted already; there is nothing to do"
		case "move":
			return st + ": it was deleted since it was read; there is nothing to move"
		}
		if t.s.version != nil && expected == 0 {
			return st + ": it was deleted again while Put created it over its tombstone; retry the put"
		}
		return st + ": it was deleted since it was read; to create it again, put it with version 0"
	case t.s.version != nil && expected == 0 && op == "put":
		return st + ": another writer created it first; read it and put your change on that copy, or use another key"
	case t.s.version != nil && expected > 0 && t.storedVersion(cur) == strconv.FormatUint(expected, 10):
		// The version holds, so the image as read (see asRead) did not:
		// the item was deleted for good and created again (its version
		// starting again) between the read and the write.
		todo := "apply your change to that copy"
		switch op {
		case "delete":
			todo = "delete that copy if you still mean to"
		case "move":
			todo = "move that copy"
		}
		return st + ", but not the item that was read: it was deleted and created again since; re-read it and " + todo
	case op == "delete":
		return st + ": another write came first; re-read it" + now + ", and delete that copy if you still mean to"
	case op == "move":
		return st + ": another write came first; re-read it" + now + " and move that copy"
	}
	return st + ": another write came first; re-read it" + now + " and apply your change to that copy"
}

// state names a stored item for a conflict message: absent, live or
// deleted (a tombstone), and its version when the model has a version field.
func (t *Table[T]) state(cur map[string]types.AttributeValue) string {
	if len(cur) == 0 {
		return "no item with this key"
	}
	st := "it live"
	if t.opts.isTombstone(cur) {
		st = "it deleted"
	}
	if v := t.storedVersion(cur); v != "" {
		st += " at version " + v
	}
	return st
}

// sameItem reports whether two items hold the same attributes, comparing
// values as DynamoDB does (numbers by value, sets as sets), since a server
// returns numbers normalized and sets in its own order. No item is never
// our item.
func sameItem(a, b map[string]types.AttributeValue) bool {
	return len(a) > 0 && av.EqualItems(a, b)
}

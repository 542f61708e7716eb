package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file holds Table.Update: the plan of the derived index keys it
// recomputes, and its UpdateItem. What it changes, an Update, is in
// updatebuilder.go.

// Update applies update's operations to the live item with key's base key
// values, in one UpdateItem, with those the library adds: the recomputed
// derived keys, the version and the write token. Only key's base key fields
// are read: the other fields, index components among them, may be unset. The
// item must exist and not be deleted (Update does not create items, nor
// revive a tombstone: use Put).
//
//	err := tickets.Update(ctx, Ticket{Team: "T1", ID: "42"},
//		ddbindex.Set("status", "closed").Remove("assignee"))
//
// Update may change index keys, the pattern for a value that is
// sorted on and changes (a ticket's status): keep it out of the base key, in
// a GSI or LSI sort key, and update it in place.
//
//   - A native GSI or LSI key attribute (a model attribute that is the key
//     itself) may be changed as any attribute: DynamoDB moves the entry.
//   - A component of a derived GSI or LSI key (a composite, labelled,
//     fixed-width or time key) may be set to a value (Set("c", v)) or removed
//     (Remove("c"): the item then leaves that index). Update computes the
//     derived key attributes from the new values and the stored ones and sets
//     them in the same UpdateItem. When the key has components the update
//     does not set, Update reads the item first (strongly consistent) and
//     conditions the write on those components being as read, so a
//     concurrent change can never leave a derived key computed from stale
//     values. If another writer changes one of them in between, Update reads
//     again and retries once; losing that race twice is an ErrConflict *Error.
//   - A component of an index-table key may be changed when the index tables
//     are kept from the stream: the stream consumer moves the entry. A new
//     value is checked first as the consumer will key it (reading, as above,
//     the components the update does not set), so that the consumer is never
//     handed an item it would refuse on every pass.
//
// Refused before any request, with ErrKeyChange naming the attribute and
// what to do instead: a base key attribute or component (use [Table.Move]),
// a derived key attribute itself (update its components), a derived-key
// component changed otherwise than by Set to a value or Remove (Add, Delete,
// Set to an operand such as arithmetic or if_not_exists, a nested path: use
// Put), and in write-through mode an index-table key component (use Put,
// which writes the new entry and tombstones the old one in the same
// transaction). In write-through mode every other update is refused too,
// with [ErrUnsupported]: the index tables need the whole new item, so use
// Put. Refused with [ErrInvalidWrite]: an Update without operations, a
// malformed path, two operations on overlapping paths (one path twice, a
// path and a path inside it, a path as a map's and as a list's: DynamoDB
// refuses them), values that with the item's key are over DynamoDB's 400 KB
// item limit, a value that does not marshal or holds a Number or a set
// DynamoDB would refuse (see [Table.Marshal]), and a change of an attribute ddbindex
// owns (the version field, the write token, the tombstone marker and the
// field tagged ddbindex:"deleted").
//
// With a version field, Update adds one to the stored version, and when
// key's version is set it must equal the stored one.
//
// optFns are applied to every request Update sends, as the SDK's own
// per-call options.
func (t *Table[T]) Update(ctx context.Context, key T, update Update, optFns ...func(*dynamodb.Options)) (err error) {
	if err := t.callable(ctx, "Update", ErrInvalidWrite, optFns...); err != nil {
		return err
	}
	ctx, c := t.tel.start(ctx, opUpdate, t.s.base)
	defer func() { c.end(ctx, err) }()
	if err := t.writable("Update"); err != nil {
		return err
	}
	ops, err := update.resolve()
	if err != nil {
		return writeErr("Update of %s: %w", t.s.model, err)
	}
	up, err := t.planUpdate(ops)
	if err != nil {
		return err
	}
	if t.writeThrough() {
		return fmt.Errorf("%w: Update of %s in write-through mode: index tables need the whole new item; use Put", ErrUnsupported, t.s.model)
	}
	key0, texts, err := t.keyOf(&key)
	if err != nil {
		return err
	}
	if err := checkUpdateSize(t.s.model, key0, ops); err != nil {
		return err
	}
	v, err := t.version(&key)
	if err != nil {
		return err
	}
	token := newToken()
	// Applying it twice in a row leaves the same item: the SDK may resend it.
	once := idempotent(ops)
	var cur map[string]types.AttributeValue // the item as read, when up.read
	for attempt := 0; ; attempt++ {
		if up.read {
			if cur == nil {
				if cur, err = t.current(ctx, key0, optFns); err != nil {
					return err
				}
			}
			if cur == nil || t.opts.isTombstone(cur) || (v > 0 && t.storedVersion(cur) != strconv.FormatUint(v, 10)) {
				return &Error{Sentinel: ErrConflict, Op: "update", Failed: []string{t.updateExpected(up, v, nil) + "; " + t.found(cur, v, "update")}}
			}
		}
		in, err := t.updateInput(ops, key0, texts, up, v, cur, token)
		if err != nil {
			return err
		}
		var att attempts
		opts := att.with(optFns)
		if !once {
			opts = append(opts, noResend) // see resend.go
		}
		_, err = t.client.UpdateItem(ctx, in, opts...)
		if err == nil {
			return nil
		}
		if !once && mayHaveApplied(err, &att) {
			return t.updateOutcome(ctx, err, key0, token, optFns)
		}
		what := t.updateExpected(up, v, cur)
		found, done := t.failedOn(ctx, "update", err, what, key0, &att, optFns)
		switch {
		case done != nil:
			return done
		case att.mayBeRetried() && t.hasToken(found, token):
			return nil
		case up.read && found != nil && !t.opts.isTombstone(found) && (v == 0 || t.storedVersion(found) == strconv.FormatUint(v, 10)):
			// The item is there as the call expects: a component read
			// for a derived key has changed since.
			if attempt == 0 {
				cur = found
				continue
			}
			return &Error{Sentinel: ErrConflict, Op: "update", Err: sdkError(err), Failed: []string{what + "; found " + t.state(found) +
				" with " + strings.Join(up.readNames(), ", ") + " changed again by another writer while Update computed the index keys from them: retry the update"}}
		}
		return &Error{Sentinel: ErrConflict, Op: "update", Err: sdkError(err), Failed: []string{what + "; " + t.found(found, v, "update")}}
	}
}

// checkUpdateSize refuses an update that can only fail for DynamoDB's item
// limit: the item it leaves holds at least key and every value it sets, each
// at its own path (checkOverlaps), which may be more than 400 KB whatever
// the stored item holds.
func checkUpdateSize(model string, key map[string]types.AttributeValue, ops []updateOp) error {
	n := av.ItemSize(key)
	for _, op := range ops {
		switch {
		case op.value == nil:
		case op.nested:
			n += av.Size(op.value)
		default:
			n += av.AttrSize(op.attr, op.value)
		}
	}
	if n > maxItemSize {
		return writeErr("Update of %s sets values of %d bytes with the item's key, as DynamoDB counts them (attribute names and values), over DynamoDB's item limit of %d (400 KB)",
			model, n, maxItemSize)
	}
	return nil
}

// updatePlan is what an update does to the keys.
type updatePlan struct {
	// set holds the new canonical texts of the key components the update
	// sets to a value. Those it removes, or sets to a value that is no key
	// value (NULL, an omitempty zero), have none: the item leaves the
	// indexes they are part of.
	set map[*field]string
	// derived lists the GSIs and LSIs with a derived key that has a
	// component among them, whose derived attributes Update recomputes.
	derived []*layout
	// checked lists the index tables with a key component the update sets
	// to a value: Update checks their new key as the stream consumer will
	// build it (its length, most of all), so that it never writes an item
	// the consumer would refuse on every pass.
	checked []*layout
	// readFields lists the components of the keys of derived and checked
	// (native ones too) that the update leaves alone and the base key does
	// not hold: Update reads them, and conditions the write on them. read is
	// true when there are any.
	readFields []*field
	read       bool
}

// planUpdate checks an update's operations against the declaration (see
// Update for what it refuses) and works out what it does to the keys.
func (t *Table[T]) planUpdate(ops []updateOp) (*updatePlan, error) {
	s := t.s
	up := &updatePlan{set: map[*field]string{}}
	touched := map[*field]updateOp{}
	isBase := map[*field]bool{}
	for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
		if k != nil {
			for _, c := range k.components() {
				isBase[c.f] = true
			}
		}
	}
	for _, op := range ops {
		a := op.attr
		switch {
		case a == t.opts.WriteTokenAttr:
			return nil, writeErr("Update of %s sets %s, the write token attribute ddbindex owns", s.model, a)
		case s.version != nil && a == s.version.attr:
			return nil, writeErr("Update of %s sets its version field %s, which ddbindex owns", s.model, a)
		case a == t.opts.DeletedAttr:
			return nil, writeErr("Update of %s sets %s, the tombstone marker ddbindex owns: use Delete", s.model, a)
		case s.deleted != nil && a == s.deleted.attr:
			return nil, writeErr("Update of %s sets %s (field %s), which reads fill and no write stores: use Delete to delete the item", s.model, a, s.deleted.goName)
		}
		for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
			if k != nil && k.attr == a {
				return nil, fmt.Errorf("%w: Update of %s sets %s, an attribute of its primary key; DynamoDB cannot change it in place: use Move", ErrKeyChange, s.model, a)
			}
		}
		if i := slices.IndexFunc(s.fields, func(f *field) bool { return f.attr == a }); i >= 0 {
			f := s.fields[i]
			if isBase[f] {
				return nil, fmt.Errorf("%w: Update of %s sets %s (field %s), part of its primary key; DynamoDB cannot change it in place: use Move", ErrKeyChange, s.model, a, f.goName)
			}
			touched[f] = op
		}
		for _, d := range s.indexes {
			for _, k := range d.derivedAttrs() {
				switch {
				case k.attr == a && k.shardOnly:
					var by []string
					for _, f := range k.shardBy {
						by = append(by, f.attr)
					}
					return nil, fmt.Errorf("%w: Update of %s sets %s, the shard attribute of index %s, which ddbindex computes from the base key (%s): it changes only with the key, through Move",
						ErrKeyChange, s.model, a, d.name, strings.Join(by, ", "))
				case k.attr == a:
					return nil, fmt.Errorf("%w: Update of %s sets %s, the derived key attribute of index %s, which ddbindex computes from its components (%s): update those instead",
						ErrKeyChange, s.model, a, d.name, fieldNames(k.parts))
				}
			}
		}
	}
	for _, d := range s.indexes {
		var mine []*field // d's components the update touches
		for _, k := range d.keyAttrs() {
			for _, c := range k.parts {
				op, ok := touched[c.f]
				if !ok {
					continue
				}
				mine = append(mine, c.f)
				if d.ownTable && t.writeThrough() {
					return nil, fmt.Errorf("%w: Update of %s sets %s (field %s), part of index table %s's key, which write-through mode keeps in the same transaction as the base item: use Put, which writes the new entry and tombstones the old one",
						ErrKeyChange, s.model, c.f.attr, c.f.goName, d.name)
				}
				if err := t.checkKeyOp(d, k, c, op, up); err != nil {
					return nil, err
				}
			}
		}
		switch {
		case len(mine) == 0:
			continue
		case d.ownTable:
			if !slices.ContainsFunc(mine, func(f *field) bool { _, ok := up.set[f]; return ok }) {
				continue // removed: the item leaves the index
			}
			up.checked = append(up.checked, d)
		case !d.onBaseItem(d.pk) && !d.onBaseItem(d.sk):
			continue // no derived attribute to compute: native keys, or an LSI's shared partition
		default:
			up.derived = append(up.derived, d)
		}
		// Every component counts, a native one's too: without one the item
		// is not in the index (and has no derived attribute).
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if k == nil {
				continue
			}
			for _, c := range k.components() {
				if _, ok := touched[c.f]; !ok && !isBase[c.f] && !slices.Contains(up.readFields, c.f) {
					up.readFields = append(up.readFields, c.f)
				}
			}
		}
	}
	// A derived key is computed from the new values: an operation it
	// cannot see the result of is refused.
	for _, d := range up.derived {
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if k == nil || k.native {
				continue
			}
			for _, c := range k.parts {
				op, ok := touched[c.f]
				if !ok {
					continue
				}
				var how string
				switch {
				case op.nested:
					how = "at " + op.path + ", inside it"
				case op.mode == "ADD":
					how = "by Add"
				case op.mode == "DELETE":
					how = "by Delete"
				case op.mode == "SET" && op.value == nil:
					how = "by Set to an operand, not a value"
				default:
					continue
				}
				return nil, fmt.Errorf("%w: Update of %s changes %s (field %s), part of index %s's derived key, %s; Update recomputes that key from a new value, set as Set(%q, value), or from its removal, Remove(%q): use one of those, or Put",
					ErrKeyChange, s.model, c.f.attr, c.f.goName, d.name, how, c.f.attr, c.f.attr)
			}
		}
	}
	up.read = len(up.readFields) > 0
	return up, nil
}

// checkKeyOp checks the new value an update gives component c of key k of
// d, when it gives one, as a write of the whole item would: a value the key
// cannot hold is refused before any request (in an index table, the stream
// consumer would refuse it on every pass). It records the value's text in
// up.set, unless the value takes the item out of the index.
func (t *Table[T]) checkKeyOp(d *layout, k *keyAttr, c *component, op updateOp, up *updatePlan) error {
	f := c.f
	if op.value == nil || op.nested {
		return nil
	}
	text, ok, err := f.textFromAV(op.value)
	if err != nil {
		return writeErr("Update of %s sets %s (field %s, part of index %s's key) to a value the key cannot hold: %v", t.s.model, f.attr, f.goName, d.name, err)
	}
	if !ok {
		if k.native && !d.ownTable {
			return writeErr("Update of %s sets %s, index %s's key attribute, to an empty or NULL value, which DynamoDB refuses in a key: REMOVE it to take the item out of the index",
				t.s.model, f.attr, d.name)
		}
		return nil
	}
	if k.native {
		if _, err := k.physical(func(*field) string { return text }); err != nil {
			return writeErr("Update of %s sets %s, index %s's key attribute, to a value DynamoDB refuses in a key: %v; to take the item out of the index, REMOVE it",
				t.s.model, f.attr, d.name, err)
		}
	} else if err = f.canon.storable(text); err == nil {
		var role string
		if role, err = c.roleText(text); err == nil {
			_, err = c.enc.appendText(nil, role)
		}
	}
	if err != nil {
		return writeErr("Update of %s sets %s (field %s, part of index %s's key) to a value the key cannot hold: %v", t.s.model, f.attr, f.goName, d.name, err)
	}
	up.set[f] = text
	return nil
}

// readNames lists the attributes Update reads for the derived keys.
func (up *updatePlan) readNames() []string {
	out := make([]string, len(up.readFields))
	for i, f := range up.readFields {
		out[i] = f.attr
	}
	return out
}

// updateExpected describes the condition of an update: the item exists,
// is live, at version v (when v > 0), and holds the components read for the
// derived keys as in cur.
func (t *Table[T]) updateExpected(up *updatePlan, v uint64, cur map[string]types.AttributeValue) string {
	what := "the item exists"
	if v > 0 {
		what = fmt.Sprintf("the item is at version %d", v)
	}
	if t.s.softDelete {
		what += ", not deleted"
	}
	if cur != nil && up.read {
		parts := make([]string, len(up.readFields))
		for i, f := range up.readFields {
			val := "absent"
			if av, has := cur[f.attr]; has {
				val = avString(av)
			}
			parts[i] = f.attr + " " + val
		}
		what += ", with " + strings.Join(parts, ", ") + " as read (part of a derived index key that Update recomputes)"
	}
	return what
}

// updateInput builds the UpdateItem of an update: the caller's operations,
// the recomputed derived keys, the version and the token, conditioned on the
// item existing (live), on v when v > 0, and on the components read for the
// derived keys being as in cur. The expression is composed with the SDK's
// builders, from a new UpdateBuilder each time: the caller's operations
// first, then the library's own.
func (t *Table[T]) updateInput(ops []updateOp, key map[string]types.AttributeValue, base keyTexts, up *updatePlan, v uint64,
	cur map[string]types.AttributeValue, token string) (*dynamodb.UpdateItemInput, error) {
	cond := expression.NameNoDotSplit(t.s.base.pk.attr).AttributeExists()
	if t.s.softDelete {
		cond = cond.And(liveCondition(&t.opts))
	}
	if v > 0 {
		cond = cond.And(expression.NameNoDotSplit(t.s.version.attr).Equal(expression.Value(v)))
	}
	texts := slices.Clone(base)
	for f, text := range up.set {
		texts.put(f, text)
	}
	for _, f := range up.readFields {
		av, has := cur[f.attr]
		if !has {
			cond = cond.And(expression.NameNoDotSplit(f.attr).AttributeNotExists())
			continue
		}
		cond = cond.And(expression.NameNoDotSplit(f.attr).Equal(expression.Value(av)))
		text, ok, err := f.textFromAV(av)
		if err != nil {
			return nil, fmt.Errorf("%w: Update of %s: the stored %s (field %s), which Update reads to compute a derived index key, does not read as a key value: %w",
				ErrMalformedItem, t.s.model, f.attr, f.goName, err)
		}
		if ok {
			texts.put(f, text)
		}
	}
	upd := renderOps(expression.UpdateBuilder{}, ops)
	upd, cond = t.withToken(upd, cond, token)
	if t.s.version != nil {
		upd = upd.Add(expression.NameNoDotSplit(t.s.version.attr), expression.Value(1))
	}
	for _, d := range up.checked {
		if _, _, err := d.keyValues(texts); err != nil {
			return nil, fmt.Errorf("%w: Update of %s: index table %s's entry: %w", ErrInvalidWrite, t.s.model, d.name, err)
		}
	}
	for _, d := range up.derived {
		keys, in, err := d.keyValues(texts)
		if err != nil {
			return nil, fmt.Errorf("%w: Update of %s: %w", ErrInvalidWrite, t.s.model, err)
		}
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if !d.onBaseItem(k) {
				continue
			}
			if in {
				upd = upd.Set(expression.NameNoDotSplit(k.attr), expression.Value(keys[k.attr]))
			} else {
				upd = upd.Remove(expression.NameNoDotSplit(k.attr)) // the item leaves the index
			}
		}
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, writeErr("Update of %s: %w", t.s.model, err)
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(t.TableName()), Key: key, UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

func fieldNames(cs []*component) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.f.attr
	}
	return strings.Join(names, ", ")
}

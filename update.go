package ddbindex

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds Update: the parse of its update expression, the plan of
// the derived index keys it recomputes, and its UpdateItem.

// Update applies an update expression to the live item with key's base key
// values, in one UpdateItem. Only key's base key fields are read: the other
// fields, index components among them, may be unset. The item must exist and
// not be deleted (Update does not create items, nor revive a tombstone: use
// Put).
//
// Update may change index keys, the seed's pattern for a value that is
// sorted on and changes (a ticket's status): keep it out of the base key, in
// a GSI or LSI sort key, and update it in place.
//
//   - A native GSI or LSI key attribute (a model attribute that is the key
//     itself) may be changed as any attribute: DynamoDB moves the entry.
//   - A component of a derived GSI or LSI key (a composite, labelled,
//     fixed-width or time key) may be set to a value (SET c = :v) or removed
//     (the item then leaves that index). Update computes the derived key
//     attributes from the new values and the stored ones and sets them in the
//     same UpdateItem. When the key has components the update does not set,
//     Update reads the item first (strongly consistent) and conditions the
//     write on those components being as read, so a concurrent change can
//     never leave a derived key computed from stale values. If another writer
//     changes one of them in between, Update reads again and retries once;
//     losing that race twice is a *ConflictError.
//   - A component of an index-table key may be changed when the index tables
//     are kept from the stream: the stream consumer moves the entry. A new
//     value is checked first as the consumer will key it (reading, as above,
//     the components the update does not set), so that the consumer is never
//     handed an item it would refuse on every pass.
//
// Refused before any request, with ErrKeyChange naming the attribute and
// what to do instead: a base key attribute or component (use [Table.Move]),
// a derived key attribute itself (update its components), a derived-key
// component changed otherwise than by SET to a value or REMOVE (ADD,
// arithmetic, if_not_exists, a nested path: use Put), and in write-through
// mode an index-table key component (use Put, which writes the new entry and
// tombstones the old one in the same transaction). In write-through mode
// every other update is refused too, with [ErrUnsupported]: the index tables
// need the whole new item, so use Put. The attributes ddbindex owns (the
// version field, the write token, the tombstone marker and the field tagged
// ddbindex:"deleted") are refused with [ErrInvalidWrite], and so is a value
// holding a Number DynamoDB would refuse (see [Table.Marshal]).
//
// With a version field, Update adds one to the stored version, and when
// key's version is set it must equal the stored one.
//
// optFns are applied to every request Update sends, as the SDK's own
// per-call options.
func (t *Table[T]) Update(ctx context.Context, key T, update expression.UpdateBuilder, optFns ...func(*dynamodb.Options)) (err error) {
	if err := t.usable("Update", ErrInvalidWrite, optFns...); err != nil {
		return err
	}
	ctx, c := t.tel.start(ctx, opUpdate, t.s.base)
	defer func() { c.end(ctx, err) }()
	if err := t.writable("Update"); err != nil {
		return err
	}
	upd, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return writeErr("%v", err)
	}
	ops, err := parseUpdate(aws.ToString(upd.Update()), upd.Names(), upd.Values())
	if err != nil {
		return writeErr("Update of %s: %v", t.s.model, err)
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
	v := t.version(&key)
	token := newToken()
	var cur map[string]types.AttributeValue // the item as read, when up.read
	for attempt := 0; ; attempt++ {
		if up.read {
			if cur == nil {
				if cur, err = t.current(ctx, key0, optFns); err != nil {
					return err
				}
			}
			if cur == nil || t.opts.isTombstone(cur) || (v > 0 && t.storedVersion(cur) != strconv.FormatUint(v, 10)) {
				return &ConflictError{Op: "update", Failed: []string{t.updateExpected(up, v, nil) + "; " + t.found(cur, v, "update")}}
			}
		}
		in, err := t.updateInput(update, key0, texts, up, v, cur, token)
		if err != nil {
			return err
		}
		var att attempts
		_, err = t.client.UpdateItem(ctx, in, att.with(optFns)...)
		if err == nil {
			return nil
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
			return &ConflictError{Op: "update", Err: sdkError(err), Failed: []string{what + "; found " + t.state(found) +
				" with " + strings.Join(up.readNames(), ", ") + " changed again by another writer while Update computed the index keys from them: retry the update"}}
		}
		return &ConflictError{Op: "update", Err: sdkError(err), Failed: []string{what + "; " + t.found(found, v, "update")}}
	}
}

// updateOp is one operation of an update expression, as the expression
// package writes it.
type updateOp struct {
	mode   string // SET, REMOVE, ADD or DELETE
	attr   string // the top-level attribute it writes
	nested bool   // it writes inside attr (a path with . or [ ])
	// value is the value of SET attr = :value; nil for any other operation.
	value types.AttributeValue
}

// parseUpdate lists the operations of a built update expression: one line
// per clause, the keyword first, operations separated by ", " outside
// parentheses ("SET #0 = :0, #1 = list_append(#1, :1)\nREMOVE #2\n").
func parseUpdate(update string, names map[string]string, values map[string]types.AttributeValue) ([]updateOp, error) {
	var out []updateOp
	for _, line := range strings.Split(strings.TrimRight(update, "\n"), "\n") {
		if line == "" {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		if kw != "SET" && kw != "REMOVE" && kw != "ADD" && kw != "DELETE" {
			return nil, fmt.Errorf("unexpected update clause %q", line)
		}
		depth, start := 0, 0
		var parts []string
		for i := 0; i < len(rest); i++ {
			switch rest[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 {
					parts = append(parts, strings.TrimSpace(rest[start:i]))
					start = i + 1
				}
			}
		}
		parts = append(parts, strings.TrimSpace(rest[start:]))
		for _, p := range parts {
			path, operand, _ := strings.Cut(p, " ")
			alias := path
			if i := strings.IndexAny(path, ".["); i >= 0 {
				alias = path[:i]
			}
			attr, ok := names[alias]
			if !ok {
				return nil, fmt.Errorf("unexpected update operation %q", p)
			}
			op := updateOp{mode: kw, attr: attr, nested: alias != path}
			for _, ph := range valueRefs.FindAllString(operand, -1) {
				if v, ok := values[ph]; ok {
					if err := checkNumbersIn(v, namedPath(path, names)); err != nil {
						return nil, err
					}
				}
			}
			if kw == "SET" {
				if v, ok := values[strings.TrimPrefix(operand, "= ")]; ok {
					op.value = v
				}
			}
			out = append(out, op)
		}
	}
	return out, nil
}

// valueRefs matches the value placeholders of an update operation.
var valueRefs = regexp.MustCompile(`:[A-Za-z0-9_]+`)

// nameRefs matches the name placeholders of a path.
var nameRefs = regexp.MustCompile(`#[A-Za-z0-9_]+`)

// namedPath writes a path of an update expression with its attribute names
// in place of their placeholders: "#0.#1[2]" as "meta.sizes[2]".
func namedPath(path string, names map[string]string) string {
	return nameRefs.ReplaceAllStringFunc(path, func(ref string) string {
		if n, ok := names[ref]; ok {
			return n
		}
		return ref
	})
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
			for _, k := range []*keyAttr{d.pk, d.sk} {
				if d.onBaseItem(k) && k.attr == a {
					return nil, fmt.Errorf("%w: Update of %s sets %s, the derived key attribute of index %s, which ddbindex computes from its components (%s): update those instead",
						ErrKeyChange, s.model, a, d.name, fieldNames(k.parts))
				}
			}
		}
	}
	for _, d := range s.indexes {
		var mine []*field // d's components the update touches
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if k == nil {
				continue
			}
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
				if op, ok := touched[c.f]; ok && (op.nested || (op.mode == "SET" && op.value == nil) || op.mode == "ADD" || op.mode == "DELETE") {
					return nil, fmt.Errorf("%w: Update of %s changes %s (field %s), part of index %s's derived key, by %s; Update recomputes that key from a new value set as SET %s = :value, or REMOVE %s: use one of those, or Put",
						ErrKeyChange, s.model, c.f.attr, c.f.goName, d.name, strings.ToLower(op.mode), c.f.attr, c.f.attr)
				}
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

// updateInput builds the UpdateItem of an update: the caller's expression,
// the recomputed derived keys, the version and the token, conditioned on the
// item existing (live), on v when v > 0, and on the components read for the
// derived keys being as in cur.
func (t *Table[T]) updateInput(update expression.UpdateBuilder, key map[string]types.AttributeValue, base keyTexts, up *updatePlan, v uint64,
	cur map[string]types.AttributeValue, token string) (*dynamodb.UpdateItemInput, error) {
	cond := expression.Name(t.s.base.pk.attr).AttributeExists()
	if t.s.softDelete {
		cond = cond.And(liveCondition(&t.opts))
	}
	if v > 0 {
		cond = cond.And(expression.Name(t.s.version.attr).Equal(expression.Value(v)))
	}
	texts := slices.Clone(base)
	for f, text := range up.set {
		texts.put(f, text)
	}
	for _, f := range up.readFields {
		av, has := cur[f.attr]
		if !has {
			cond = cond.And(expression.Name(f.attr).AttributeNotExists())
			continue
		}
		cond = cond.And(expression.Name(f.attr).Equal(expression.Value(av)))
		text, ok, err := f.textFromAV(av)
		if err != nil {
			return nil, fmt.Errorf("%w: Update of %s: the stored %s (field %s), which Update reads to compute a derived index key, does not read as a key value: %w",
				ErrMalformedItem, t.s.model, f.attr, f.goName, err)
		}
		if ok {
			texts.put(f, text)
		}
	}
	tok := expression.Name(t.opts.WriteTokenAttr)
	cond = cond.And(tok.AttributeNotExists().Or(tok.NotEqual(expression.Value(token))))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return nil, writeErr("%v", err)
	}
	// The library's own operations (the derived keys, the token, the
	// version) are added to the built expression, not to the caller's
	// builder: copies of an UpdateBuilder share its operations, so adding to
	// it would change the caller's builder.
	names, values := maps.Clone(expr.Names()), maps.Clone(expr.Values())
	own := map[string][]string{"SET": {"#ddbxTok = :ddbxTok"}}
	names["#ddbxTok"], values[":ddbxTok"] = t.opts.WriteTokenAttr, &types.AttributeValueMemberS{Value: token}
	if t.s.version != nil {
		own["ADD"] = []string{"#ddbxVer :ddbxOne"}
		names["#ddbxVer"], values[":ddbxOne"] = t.s.version.attr, &types.AttributeValueMemberN{Value: "1"}
	}
	for _, d := range up.checked {
		if _, _, err := d.keyValues(texts); err != nil {
			return nil, fmt.Errorf("%w: Update of %s: index table %s's entry: %w", ErrInvalidWrite, t.s.model, d.name, err)
		}
	}
	n := 0
	for _, d := range up.derived {
		keys, in, err := d.keyValues(texts)
		if err != nil {
			return nil, fmt.Errorf("%w: Update of %s: %w", ErrInvalidWrite, t.s.model, err)
		}
		for _, k := range []*keyAttr{d.pk, d.sk} {
			if !d.onBaseItem(k) {
				continue
			}
			alias := "ddbxK" + strconv.Itoa(n)
			n++
			names["#"+alias] = k.attr
			if in {
				values[":"+alias] = keys[k.attr]
				own["SET"] = append(own["SET"], "#"+alias+" = :"+alias)
			} else {
				own["REMOVE"] = append(own["REMOVE"], "#"+alias) // the item leaves the index
			}
		}
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(t.TableName()), Key: key, UpdateExpression: aws.String(mergeUpdate(aws.ToString(expr.Update()), own)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
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

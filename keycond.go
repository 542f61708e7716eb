package ddbindex

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file translates a condition on leading sort components into a
// DynamoDB key condition, with the prefix and bounds the key codec
// (keybuilder.go) gives. With p the encoded leading components:
//
//	when more components follow p in the stored key (fewer values than sort
//	components, or an index key that ends with the base key components it
//	lacks: see baseSuffix):
//	  = p   begins_with(SK, exactPrefix(p))
//	  < p   SK < lowerBound(p)        >= p  SK >= lowerBound(p)
//	  <= p  SK < upperBound(p)        > p   SK > upperBound(p)
//	  BETWEEN p AND q: SK BETWEEN lowerBound(p) AND upperBound(q)
//	when p is the whole stored key (a native key, or a composite with every
//	component given and no base key suffix: always the base table's):
//	  = p  SK = p   < p  SK < p   <= p  SK <= p   > p  SK > p   >= p  SK >= p
//	  BETWEEN p AND q: SK BETWEEN p AND q

type condOp uint8

const (
	opNone condOp = iota
	opEq
	opLt
	opLe
	opGt
	opGe
	opBetween
	opBeginsWith
)

var opNames = [...]string{"", "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"}

// Key is a tuple of leading component values, for the bounds of [Between].
type Key []any

// K returns a Key of values: Between(K("open", t1), K("open", t2)).
func K(values ...any) Key { return Key(values) }

// SortCondition is a condition on the leading sort components of an index,
// in declaration order. Build one with [Eq], [Lt], [Le], [Gt], [Ge],
// [Between] or [BeginsWith]; the zero value means no condition.
type SortCondition struct {
	op     condOp
	lo, hi []any
}

// Eq matches keys whose leading sort components equal values.
//
//	Eq("open")             status = open, any created time
//	Eq("open", createdAt)  status = open and created = createdAt
func Eq(values ...any) SortCondition { return SortCondition{op: opEq, lo: values} }

// Lt matches keys whose leading sort components are less than values
// (compared as a tuple).
func Lt(values ...any) SortCondition { return SortCondition{op: opLt, lo: values} }

// Le matches keys whose leading sort components are at most values.
func Le(values ...any) SortCondition { return SortCondition{op: opLe, lo: values} }

// Gt matches keys whose leading sort components are greater than values.
func Gt(values ...any) SortCondition { return SortCondition{op: opGt, lo: values} }

// Ge matches keys whose leading sort components are at least values.
func Ge(values ...any) SortCondition { return SortCondition{op: opGe, lo: values} }

// Between matches keys whose leading components lie between lo and hi,
// both included. lo and hi are single values or [Key] tuples.
func Between(lo, hi any) SortCondition {
	return SortCondition{op: opBetween, lo: asKey(lo), hi: asKey(hi)}
}

// BeginsWith matches keys whose leading components equal all but the last of
// values, and whose next string component begins with the last value.
//
//	BeginsWith("op")          status begins with "op"
//	BeginsWith("open", "2026-12")  status = open, created begins with 2026-12
func BeginsWith(values ...any) SortCondition { return SortCondition{op: opBeginsWith, lo: values} }

func asKey(v any) []any {
	if k, ok := v.(Key); ok {
		return k
	}
	return []any{v}
}

// String renders the condition on logical components, e.g. `BETWEEN (open, 5) AND (open, 9)`.
func (c SortCondition) String() string {
	if c.op == opNone {
		return "(none)"
	}
	tuple := func(vs []any) string {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = fmt.Sprint(v)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	if c.op == opBetween {
		return "BETWEEN " + tuple(c.lo) + " AND " + tuple(c.hi)
	}
	return opNames[c.op] + " " + tuple(c.lo)
}

// keyCond is a translated sort condition: what DynamoDB is asked, and the
// same bounds in ordered form for checking positions locally.
type keyCond struct {
	attr   string
	op     condOp
	a, b   types.AttributeValue
	oa, ob string
	// terms, on a multi-attribute sort key, are what DynamoDB is asked
	// instead of attr, op, a and b: equalities on leading attributes, and
	// at most one other condition, on the attribute after them. op, oa
	// and ob are then the same condition on the ordered form of the key
	// (the composite encoding of its components).
	terms []keyCond
}

// builders returns the key conditions on the sort key attributes.
func (kc *keyCond) builders() []expression.KeyConditionBuilder {
	if kc.terms == nil {
		return []expression.KeyConditionBuilder{kc.builder()}
	}
	out := make([]expression.KeyConditionBuilder, len(kc.terms))
	for i := range kc.terms {
		out[i] = kc.terms[i].builder()
	}
	return out
}

// builder returns the key condition on the sort key attribute.
func (kc *keyCond) builder() expression.KeyConditionBuilder {
	k := expression.Key(kc.attr)
	switch kc.op {
	case opEq:
		return k.Equal(expression.Value(kc.a))
	case opLt:
		return k.LessThan(expression.Value(kc.a))
	case opLe:
		return k.LessThanEqual(expression.Value(kc.a))
	case opGt:
		return k.GreaterThan(expression.Value(kc.a))
	case opGe:
		return k.GreaterThanEqual(expression.Value(kc.a))
	case opBetween:
		return k.Between(expression.Value(kc.a), expression.Value(kc.b))
	}
	return k.BeginsWith(kc.oa)
}

// match reports whether a stored sort value, in ordered form, satisfies kc.
func (kc *keyCond) match(ord string) bool {
	switch kc.op {
	case opEq:
		return ord == kc.oa
	case opLt:
		return ord < kc.oa
	case opLe:
		return ord <= kc.oa
	case opGt:
		return ord > kc.oa
	case opGe:
		return ord >= kc.oa
	case opBetween:
		return ord >= kc.oa && ord <= kc.ob
	case opBeginsWith:
		return strings.HasPrefix(ord, kc.oa)
	}
	return true
}

// String renders kc as DynamoDB sees it.
func (kc *keyCond) String() string {
	if kc.terms != nil {
		parts := make([]string, len(kc.terms))
		for i := range kc.terms {
			parts[i] = kc.terms[i].String()
		}
		return strings.Join(parts, " AND ")
	}
	if kc.op == opBetween {
		return fmt.Sprintf("%s BETWEEN %s AND %s", kc.attr, avString(kc.a), avString(kc.b))
	}
	if kc.op == opBeginsWith {
		return fmt.Sprintf("begins_with(%s, %q)", kc.attr, kc.oa)
	}
	return fmt.Sprintf("%s %s %s", kc.attr, opNames[kc.op], avString(kc.a))
}

// sortCond translates c for d's sort key. It returns nil for no condition.
func (d *layout) sortCond(c SortCondition) (*keyCond, error) {
	if c.op == opNone {
		return nil, nil
	}
	if d.sk == nil || len(d.sk.parts) == 0 {
		return nil, queryErr(d.name, "%s has no sort components to put a condition on", d.label())
	}
	k := d.sk
	if len(c.lo) == 0 || (c.op == opBetween && len(c.hi) == 0) {
		return nil, queryErr(d.name, "%s needs at least one value", opNames[c.op])
	}
	if len(c.lo) > len(k.parts) || len(c.hi) > len(k.parts) {
		return nil, queryErr(d.name, "%s has %d sort components; the condition gives %d values",
			d.label(), len(k.parts), max(len(c.lo), len(c.hi)))
	}
	kc := &keyCond{attr: k.attr, op: c.op}
	if c.op == opBeginsWith {
		kc, err := d.beginsWith(kc, c.lo)
		if err != nil || kc == nil || k.attrs == nil {
			return kc, err
		}
		return d.multiTerms(kc, c)
	}
	lo, loMore, err := d.bound(c.lo)
	if err != nil {
		return nil, err
	}
	if k.native {
		kc.a, kc.oa = lo.av, lo.ord
		if c.op == opBetween {
			hi, _, err := d.bound(c.hi)
			if err != nil {
				return nil, err
			}
			kc.b, kc.ob = hi.av, hi.ord
		}
	} else {
		// Composite: the bounds the codec gives, per the table above.
		p := lo.ord
		switch c.op {
		case opEq:
			if loMore {
				kc.op, kc.oa = opBeginsWith, exactPrefix(p)
			} else {
				kc.oa = p
			}
		case opLt, opGe:
			kc.oa = lowerBound(p, loMore)
		case opLe, opGt:
			kc.oa = upperBound(p, loMore)
			if loMore && kc.op == opLe {
				kc.op = opLt // leading <= p is key < upperBound(p)
			}
		case opBetween:
			kc.oa = lowerBound(p, loMore)
			hi, hiMore, err := d.bound(c.hi)
			if err != nil {
				return nil, err
			}
			kc.ob = upperBound(hi.ord, hiMore)
			kc.b = &types.AttributeValueMemberS{Value: kc.ob}
		}
		kc.a = &types.AttributeValueMemberS{Value: kc.oa}
	}
	if kc.op == opBetween && kc.oa > kc.ob {
		return nil, queryErr(d.name, "BETWEEN bounds are reversed: %s is above %s", tupleString(c.lo), tupleString(c.hi))
	}
	if k.attrs != nil {
		return d.multiTerms(kc, c)
	}
	if err := d.checkCondSize(kc); err != nil {
		return nil, err
	}
	return kc, nil
}

// multiTerms sets kc.terms, the conditions DynamoDB takes on a
// multi-attribute sort key for c: every attribute before the last one the
// condition names takes =, and that one =, <, <=, >, >=, BETWEEN or
// begins_with. A condition that needs more (a range that spans a leading
// component) is refused before any request. kc holds c on the key's ordered
// form already.
func (d *layout) multiTerms(kc *keyCond, c SortCondition) (*keyCond, error) {
	k := d.sk
	value := func(i int, v any) (types.AttributeValue, string, error) {
		sub, comp := k.attrs[i], k.parts[i]
		rv, err := coerce(v, comp.f)
		if err != nil {
			return nil, "", queryErr(d.name, "%v", err)
		}
		t, err := comp.enc.text(rv)
		if err != nil {
			return nil, "", queryErr(d.name, "%s: %v", comp.f.attr, err)
		}
		av, err := sub.physical(func(*field) string { return t })
		if err != nil {
			return nil, "", queryErr(d.name, "%v", err)
		}
		return av, t, nil
	}
	term := func(i int, op condOp, v any) (keyCond, string, error) {
		av, t, err := value(i, v)
		return keyCond{attr: k.attrs[i].attr, op: op, a: av, oa: t}, t, err
	}
	eqs := func(values []any) ([]keyCond, error) {
		out := make([]keyCond, len(values))
		for i, v := range values {
			var err error
			if out[i], _, err = term(i, opEq, v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var err error
	switch c.op {
	case opEq:
		kc.terms, err = eqs(c.lo)
	case opLt, opLe, opGt, opGe:
		if len(c.lo) != 1 {
			return nil, queryErr(d.name, "%s compares %d sort components as a tuple, which a native-gsi key condition cannot express (a range goes on one attribute, after equal leading ones): for a range on %s with the leading components equal, use Between(K(...), K(...)) with the same leading values, or read the derived gsi form",
				opNames[c.op], len(c.lo), k.parts[len(c.lo)-1].f.attr)
		}
		var t keyCond
		t, _, err = term(0, c.op, c.lo[0])
		kc.terms = []keyCond{t}
	case opBetween:
		// The leading values both bounds share are equalities; the rest
		// must be one range on the attribute after them.
		m := 0
		for m < len(c.lo) && m < len(c.hi) {
			_, a, err := value(m, c.lo[m])
			if err != nil {
				return nil, err
			}
			_, b, err := value(m, c.hi[m])
			if err != nil {
				return nil, err
			}
			if a != b {
				break
			}
			m++
		}
		if kc.terms, err = eqs(c.lo[:m]); err != nil {
			return nil, err
		}
		switch {
		case len(c.lo) == m && len(c.hi) == m:
		case len(c.lo) == m+1 && len(c.hi) == m+1:
			lo, _, err := term(m, opBetween, c.lo[m])
			if err != nil {
				return nil, err
			}
			hi, _, err := term(m, opBetween, c.hi[m])
			if err != nil {
				return nil, err
			}
			lo.b, lo.ob = hi.a, hi.oa
			kc.terms = append(kc.terms, lo)
		case len(c.lo) == m && len(c.hi) == m+1:
			hi, _, err := term(m, opLe, c.hi[m])
			if err != nil {
				return nil, err
			}
			kc.terms = append(kc.terms, hi)
		case len(c.hi) == m && len(c.lo) == m+1:
			lo, _, err := term(m, opGe, c.lo[m])
			if err != nil {
				return nil, err
			}
			kc.terms = append(kc.terms, lo)
		default:
			return nil, queryErr(d.name, "BETWEEN %s AND %s ranges over more than one sort component, which a native-gsi key condition cannot express (a range goes on one attribute, after equal leading ones): give both bounds the same leading values and one more value each (or one bound only the leading values), or read the derived gsi form",
				tupleString(c.lo), tupleString(c.hi))
		}
	case opBeginsWith:
		n := len(c.lo)
		if kc.terms, err = eqs(c.lo[:n-1]); err != nil {
			return nil, err
		}
		prefix, _ := stringValue(c.lo[n-1])
		if prefix != "" {
			t := keyCond{attr: k.attrs[n-1].attr, op: opBeginsWith, oa: prefix, a: &types.AttributeValueMemberS{Value: prefix}}
			if k.attrs[n-1].scalar == types.ScalarAttributeTypeB {
				binaryPrefix(&t)
			}
			if len(prefix) > maxSortKeyBytes {
				return nil, queryErr(d.name, "the begins_with prefix for %s is %d bytes, over DynamoDB's %d-byte limit for a sort key value", t.attr, len(prefix), maxSortKeyBytes)
			}
			kc.terms = append(kc.terms, t)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(kc.terms) == 0 {
		return nil, nil // begins_with "" on the first component: every key
	}
	return kc, nil
}

// checkCondSize refuses a condition value DynamoDB would refuse: a String or
// Binary over its limit for a sort key value. (It could match no stored key
// anyway.) Number bounds are checked as Numbers when they are built.
func (d *layout) checkCondSize(kc *keyCond) error {
	if d.sk.scalar == types.ScalarAttributeTypeN {
		return nil
	}
	for _, v := range []string{kc.oa, kc.ob} {
		if len(v) > maxSortKeyBytes {
			return queryErr(d.name, "the condition on %s is %d bytes of key text, over DynamoDB's %d-byte limit for a sort key value", d.sk.attr, len(v), maxSortKeyBytes)
		}
	}
	return nil
}

func tupleString(vs []any) string { return SortCondition{op: opEq, lo: vs}.String()[2:] }

// boundValue is one bound of a condition: the value DynamoDB compares, and
// its ordered form (equal to the value for a composite key).
type boundValue struct {
	av  types.AttributeValue
	ord string
}

// bound encodes leading sort component values. more reports whether the
// stored key has components after them.
func (d *layout) bound(values []any) (boundValue, bool, error) {
	k := d.sk
	if k.native {
		c := k.parts[0]
		rv, err := coerce(values[0], c.f)
		if err != nil {
			return boundValue{}, false, queryErr(d.name, "%v", err)
		}
		t, err := c.enc.text(rv)
		if err != nil {
			return boundValue{}, false, queryErr(d.name, "%s: %v", c.f.attr, err)
		}
		av, err := k.physical(func(*field) string { return t })
		if err != nil {
			return boundValue{}, false, queryErr(d.name, "%v", err)
		}
		return boundValue{av: av, ord: t}, false, nil
	}
	b, err := d.appendLeading(make([]byte, 0, 64), values)
	if err != nil {
		return boundValue{}, false, err
	}
	more := len(values) < len(k.parts) || len(k.suffix) > 0
	s := string(b)
	return boundValue{av: &types.AttributeValueMemberS{Value: s}, ord: s}, more, nil
}

// appendLeading appends the composite encoding of the first len(values) sort
// components, labels included.
func (d *layout) appendLeading(b []byte, values []any) ([]byte, error) {
	for i, v := range values {
		c := d.sk.parts[i]
		rv, err := coerce(v, c.f)
		if err != nil {
			return nil, queryErr(d.name, "%v", err)
		}
		t, err := c.enc.text(rv)
		if err == nil {
			b, err = appendComponent(b, i, c.label, c.enc, t)
		}
		if err != nil {
			return nil, queryErr(d.name, "%s: %v", c.f.attr, err)
		}
	}
	return b, nil
}

func (d *layout) beginsWith(kc *keyCond, values []any) (*keyCond, error) {
	k := d.sk
	n := len(values)
	last := k.parts[n-1]
	if last.enc.kind != encString && last.enc.kind != encBytes {
		return nil, queryErr(d.name, "begins_with needs a string component; %s is %s: for a range of its values use Between", last.f.attr, last.f.typ)
	}
	prefix, ok := stringValue(values[n-1])
	if !ok {
		return nil, queryErr(d.name, "begins_with needs a string prefix for %s, not %T", last.f.attr, values[n-1])
	}
	if k.native {
		if last.enc.kind == encString && !utf8.ValidString(prefix) {
			return nil, queryErr(d.name, "begins_with prefix for %s: %v", last.f.attr, errInvalidUTF8)
		}
		kc.oa = prefix
	} else {
		b, err := d.appendLeading(make([]byte, 0, 64), values[:n-1])
		if err != nil {
			return nil, err
		}
		b, err = appendComponent(b, n-1, last.label, last.enc, prefix)
		if err != nil {
			return nil, queryErr(d.name, "begins_with prefix for %s: %v", last.f.attr, err)
		}
		kc.oa = string(b)
	}
	if kc.oa == "" {
		return nil, nil // every key begins with ""
	}
	kc.a = &types.AttributeValueMemberS{Value: kc.oa}
	if k.attrs != nil {
		return kc, nil // multiTerms checks each attribute's value
	}
	if k.scalar == types.ScalarAttributeTypeB {
		binaryPrefix(kc)
	}
	if err := d.checkCondSize(kc); err != nil {
		return nil, err
	}
	return kc, nil
}

// binaryPrefix turns kc, a begins_with on a Binary sort key attribute, into
// the BETWEEN DynamoDB is sent instead: the expression builder sends a
// begins_with prefix as a String, which DynamoDB refuses on a Binary key.
// The Binary values that begin with the prefix p are exactly those from p to
// p followed by bytes 0xFF up to DynamoDB's size limit for a sort key value:
// a value above p that does not begin with it has a greater byte where it
// first differs from p, so it sorts above that bound too.
func binaryPrefix(kc *keyCond) {
	hi := make([]byte, max(len(kc.oa), maxSortKeyBytes))
	n := copy(hi, kc.oa)
	for i := n; i < len(hi); i++ {
		hi[i] = 0xFF
	}
	kc.op, kc.ob = opBetween, string(hi)
	kc.a, kc.b = &types.AttributeValueMemberB{Value: []byte(kc.oa)}, &types.AttributeValueMemberB{Value: hi}
}

func stringValue(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid():
		return "", false
	case rv.Kind() == reflect.String:
		return rv.String(), true
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
		return string(rv.Bytes()), true
	}
	return "", false
}

// partition returns the partition key value for values, and their canonical
// texts (to check cursors against).
func (d *layout) partition(values []any) (types.AttributeValue, []string, error) {
	k := d.pk
	if len(values) != len(k.parts) {
		return nil, nil, queryErr(d.name, "%s's partition key has %d components; %d values given", d.label(), len(k.parts), len(values))
	}
	texts := make([]string, len(values))
	byField := d.schema.newKeyTexts()
	for i, c := range k.parts {
		rv, err := coerce(values[i], c.f)
		if err != nil {
			return nil, nil, queryErr(d.name, "partition: %v", err)
		}
		t, err := c.f.canon.text(rv)
		if err != nil {
			return nil, nil, queryErr(d.name, "partition: %s: %v", c.f.attr, err)
		}
		texts[i] = t
		byField.put(c.f, t)
	}
	if k.attrs != nil {
		for _, sub := range k.attrs[:len(k.parts)] { // the shard attribute's value is each shard's
			if _, err := sub.physical(byField.text); err != nil {
				return nil, nil, queryErr(d.name, "partition: %v", err)
			}
		}
		return nil, texts, nil // keyCondition builds the value of each attribute
	}
	av, err := k.physical(byField.text)
	if err != nil {
		return nil, nil, queryErr(d.name, "partition: %v", err)
	}
	return av, texts, nil
}

// checkFilter refuses a filter that names a key attribute of d (of any
// kind: the base table, a GSI, an LSI, an index table): DynamoDB refuses a FilterExpression that references
// a key attribute of the index it queries. It refuses, as a write's, a
// value DynamoDB would refuse or change (a Number it cannot hold, a String
// that is not UTF-8, a set with a member twice).
func (d *layout) checkFilter(c expression.ConditionBuilder) error {
	fe, err := expression.NewBuilder().WithFilter(c).Build()
	if err != nil {
		return queryErr(d.name, "%v", err)
	}
	values := fe.Values()
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if err := checkValue(values[k], "value"); err != nil {
			return queryErr(d.name, "the filter holds a value DynamoDB would refuse or change: %v", err)
		}
	}
	for _, n := range fe.Names() {
		if !utf8.ValidString(n) {
			return queryErr(d.name, "the filter names attribute %q, which is %v", n, errInvalidUTF8)
		}
	}
	for _, n := range fe.Names() {
		for _, k := range d.keyAttrs() {
			if n == k.attr {
				return queryErr(d.name, "the filter names %s, a key attribute of %s (%s), and DynamoDB refuses a filter on the key attributes of the index it reads: put the condition in Where, or filter the items after the read", n, d.label(), d.kind)
			}
		}
	}
	return nil
}

// keyCondition returns the key condition of a query of d in the partition
// whose key value is pkVal (texts pkTexts), under kc (nil for none).
func (d *layout) keyCondition(pkVal types.AttributeValue, pkTexts []string, kc *keyCond) expression.KeyConditionBuilder {
	if d.pk.attrs == nil {
		key := expression.Key(d.pk.attr).Equal(expression.Value(pkVal))
		if kc != nil {
			key = key.And(kc.builder())
		}
		return key
	}
	var all []expression.KeyConditionBuilder
	for i, sub := range d.pk.attrs[:len(d.pk.parts)] { // a shard's request adds its shard (shardInput)
		// Checked by partition.
		v, _ := sub.physical(func(*field) string { return pkTexts[i] })
		all = append(all, expression.Key(sub.attr).Equal(expression.Value(v)))
	}
	if kc != nil {
		all = append(all, kc.builders()...)
	}
	if len(all) == 1 {
		return all[0]
	}
	return expression.KeyAnd(all...)
}

// firstIs reports whether ord, a value the condition matches, is the first
// value of its range in the query's order: nothing the condition matches
// comes before it, so a query that starts before ord starts at the range.
func (kc *keyCond) firstIs(ord string, desc bool) bool {
	switch kc.op {
	case opEq:
		return true
	case opGe:
		return !desc && ord == kc.oa
	case opLe:
		return desc && ord == kc.oa
	case opBetween:
		return (!desc && ord == kc.oa) || (desc && ord == kc.ob)
	}
	return false
}

// place says where ord lies against the condition's range in the query's
// order: -1 before it (nothing the condition matches comes before ord), 0
// inside, 1 after it (nothing the condition matches comes after ord).
func (kc *keyCond) place(ord string, desc bool) int {
	r := 0 // in ascending order
	switch kc.op {
	case opEq:
		r = strings.Compare(ord, kc.oa)
	case opLt:
		if ord >= kc.oa {
			r = 1
		}
	case opLe:
		if ord > kc.oa {
			r = 1
		}
	case opGt:
		if ord <= kc.oa {
			r = -1
		}
	case opGe:
		if ord < kc.oa {
			r = -1
		}
	case opBetween:
		switch {
		case ord < kc.oa:
			r = -1
		case ord > kc.ob:
			r = 1
		}
	case opBeginsWith:
		switch {
		case strings.HasPrefix(ord, kc.oa):
		case ord < kc.oa:
			r = -1
		default:
			r = 1
		}
	}
	if desc {
		r = -r
	}
	return r
}

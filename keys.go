package ddbindex

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file turns between the three forms of a key: a model value's fields, a
// logical position (the canonical key text of every field a key names), and
// the physical attributes a table or index stores.

// position is a logical position in an index: the canonical key text of each
// of the index's slots (see layout.slots), in slot order.
type position []string

// coerce converts a caller-supplied component value to the field's type. It
// accepts the field's own type, pointers to it, and values of the same kind
// family (any integer for an integer field, and so on) that fit.
func coerce(v any, f *field) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return rv, fmt.Errorf("nil is not a value for %s (%s)", f.attr, f.typ)
	}
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return rv, fmt.Errorf("nil is not a value for %s (%s)", f.attr, f.typ)
		}
		rv = rv.Elem()
	}
	if rv.Type() == f.typ {
		return rv, nil
	}
	bad := func() (reflect.Value, error) {
		return reflect.Value{}, fmt.Errorf("%s is %s; a %T does not convert to it", f.attr, f.typ, v)
	}
	family := func(k reflect.Kind) int {
		switch {
		case k >= reflect.Int && k <= reflect.Int64:
			return 1
		case k >= reflect.Uint && k <= reflect.Uintptr:
			return 2
		case k == reflect.Float32 || k == reflect.Float64:
			return 3
		case k == reflect.String:
			return 4
		}
		return 0
	}
	src, dst := family(rv.Kind()), family(f.typ.Kind())
	if f.canon.kind == encCustom || f.canon.kind == encTime || src == 0 || dst == 0 {
		if f.canon.kind == encBytes && rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			return rv.Convert(f.typ), nil
		}
		return bad()
	}
	out := reflect.New(f.typ).Elem()
	switch {
	case src == dst && src == 4:
		out.SetString(rv.String())
	case src == 1 && dst == 1:
		if out.OverflowInt(rv.Int()) {
			return reflect.Value{}, fmt.Errorf("%d overflows %s (%s)", rv.Int(), f.attr, f.typ)
		}
		out.SetInt(rv.Int())
	case src == 2 && dst == 2:
		if out.OverflowUint(rv.Uint()) {
			return reflect.Value{}, fmt.Errorf("%d overflows %s (%s)", rv.Uint(), f.attr, f.typ)
		}
		out.SetUint(rv.Uint())
	case src == 1 && dst == 2:
		if rv.Int() < 0 || out.OverflowUint(uint64(rv.Int())) {
			return reflect.Value{}, fmt.Errorf("%d does not fit %s (%s)", rv.Int(), f.attr, f.typ)
		}
		out.SetUint(uint64(rv.Int()))
	case src == 2 && dst == 1:
		if rv.Uint() > math.MaxInt64 || out.OverflowInt(int64(rv.Uint())) {
			return reflect.Value{}, fmt.Errorf("%d does not fit %s (%s)", rv.Uint(), f.attr, f.typ)
		}
		out.SetInt(int64(rv.Uint()))
	case dst == 3 && src != 4:
		var x float64
		switch src {
		case 1:
			x = float64(rv.Int())
			if int64(x) != rv.Int() {
				return reflect.Value{}, fmt.Errorf("%d is not exact as %s", rv.Int(), f.typ)
			}
		case 2:
			x = float64(rv.Uint())
			if uint64(x) != rv.Uint() {
				return reflect.Value{}, fmt.Errorf("%d is not exact as %s", rv.Uint(), f.typ)
			}
		default:
			x = rv.Float()
		}
		if f.typ.Kind() == reflect.Float32 && float64(float32(x)) != x && !math.IsNaN(x) {
			return reflect.Value{}, fmt.Errorf("%v is not exact as float32", x)
		}
		out.SetFloat(x)
	default:
		return bad()
	}
	return out, nil
}

// roleText converts a field's canonical text to the component's role text.
func (c *component) roleText(canon string) (string, error) {
	if c.sameFormat() {
		return canon, nil
	}
	v := reflect.New(c.f.typ).Elem()
	if err := c.f.canon.parse(canon, v); err != nil {
		return "", err
	}
	return c.enc.text(v)
}

// canonText converts a component's role text to the field's canonical text.
func (c *component) canonText(role string) (string, error) {
	if c.sameFormat() {
		return role, c.enc.check(role)
	}
	v := reflect.New(c.f.typ).Elem()
	if err := c.enc.parse(role, v); err != nil {
		return "", err
	}
	return c.f.canon.text(v)
}

// components lists every component of the key in stored order.
func (k *keyAttr) components() []*component {
	if len(k.suffix) == 0 {
		return k.parts
	}
	return append(slices.Clone(k.parts), k.suffix...)
}

// appendComposite appends the composite encoding of the key, taking each
// component's canonical text from text.
func (k *keyAttr) appendComposite(b []byte, text func(*field) string) ([]byte, error) {
	for i, c := range k.components() {
		canon := text(c.f)
		if err := c.f.canon.storable(canon); err != nil {
			return nil, fmt.Errorf("%s: %w", c.f.attr, err)
		}
		t, err := c.roleText(canon)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.f.attr, err)
		}
		if b, err = appendComponent(b, i, c.label, c.enc, t); err != nil {
			return nil, fmt.Errorf("%s: %w", c.f.attr, err)
		}
	}
	return b, nil
}

// physical returns the stored attribute value of the key for the canonical
// texts given by text.
func (k *keyAttr) physical(text func(*field) string) (types.AttributeValue, error) {
	if k.attrs != nil {
		return nil, fmt.Errorf("%s: a multi-attribute key has no single value", k.attr)
	}
	if k.shardOnly {
		return shardValue(shardOf(text, k.shardBy, k.shards)), nil
	}
	if k.shards > 0 {
		return k.inShard(text, shardOf(text, k.shardBy, k.shards))
	}
	if k.native {
		c := k.parts[0]
		t := text(c.f)
		switch k.scalar {
		case types.ScalarAttributeTypeN:
			n, err := c.enc.numberText(t)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.f.attr, err)
			}
			return &types.AttributeValueMemberN{Value: n}, nil
		case types.ScalarAttributeTypeB:
			if err := k.checkSize(len(t)); err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberB{Value: []byte(t)}, nil
		}
		if err := k.checkSize(len(t)); err != nil {
			return nil, err
		}
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("%s: %w", c.f.attr, errInvalidUTF8)
		}
		return &types.AttributeValueMemberS{Value: t}, nil
	}
	b, err := k.appendComposite(make([]byte, 0, 64), text)
	if err != nil {
		return nil, err
	}
	if err := k.checkSize(len(b)); err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberS{Value: string(b)}, nil
}

// inShard returns the stored value of a sharded partition key in the given
// shard, for the canonical texts given by text.
func (k *keyAttr) inShard(text func(*field) string, shard int) (types.AttributeValue, error) {
	b, err := k.appendComposite(make([]byte, 0, 64), text)
	if err != nil {
		return nil, err
	}
	b = appendShard(b, shard)
	if err := k.checkSize(len(b)); err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberS{Value: string(b)}, nil
}

// DynamoDB's limits on the size of one key attribute's value.
const (
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
)

// checkSize rejects a key value DynamoDB would refuse: empty, or over the
// limit for its role.
func (k *keyAttr) checkSize(n int) error {
	if n == 0 {
		return fmt.Errorf("%s: an empty value cannot be a key value", k.attr)
	}
	limit := maxSortKeyBytes
	if k.partition {
		limit = maxPartitionKeyBytes
	}
	if n > limit {
		return fmt.Errorf("%s: %d bytes is over DynamoDB's %d-byte limit for a key value", k.attr, n, limit)
	}
	return nil
}

// ordered returns the key's value in a form whose byte order is DynamoDB's
// order of the stored values: the composite string, or for a native key the
// canonical text (which sorts as the number or string does).
func (k *keyAttr) ordered(text func(*field) string) (string, error) {
	if k.native {
		return text(k.parts[0].f), nil
	}
	b, err := k.appendComposite(make([]byte, 0, 64), text)
	return string(b), err
}

// decode reads the canonical texts of the key's components from its stored
// attribute value, calling set for each. It checks labels, component count
// and every text's form.
func (k *keyAttr) decode(av types.AttributeValue, set func(*field, string) error) error {
	if av == nil {
		return fmt.Errorf("key attribute %s is missing", k.attr)
	}
	if k.shardOnly {
		if _, err := shardOfValue(av, k.shards); err != nil {
			return fmt.Errorf("%s: %w", k.attr, err)
		}
		return nil // positionOf checks it is the base key's shard
	}
	if k.native {
		c := k.parts[0]
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			if k.scalar == types.ScalarAttributeTypeS {
				return set(c.f, v.Value)
			}
		case *types.AttributeValueMemberN:
			if k.scalar == types.ScalarAttributeTypeN {
				t, err := c.enc.textFromNumber(v.Value)
				if err != nil {
					return fmt.Errorf("%s: %w", k.attr, err)
				}
				return set(c.f, t)
			}
		case *types.AttributeValueMemberB:
			if k.scalar == types.ScalarAttributeTypeB {
				return set(c.f, string(v.Value))
			}
		}
		return fmt.Errorf("key attribute %s is not of type %s", k.attr, k.scalar)
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return fmt.Errorf("key attribute %s is not a string", k.attr)
	}
	texts := splitRaw(s.Value)
	i := 0
	for _, c := range k.components() {
		if c.label != "" {
			if i >= len(texts) || texts[i] != labelText(c.label) {
				return fmt.Errorf("%s: label %q missing: %w", k.attr, c.label, errMalformed)
			}
			i++
		}
		if i >= len(texts) {
			return fmt.Errorf("%s: too few components: %w", k.attr, errMalformed)
		}
		role, err := c.enc.componentText(texts[i])
		if err != nil {
			return fmt.Errorf("%s: %s: %w", k.attr, c.f.attr, err)
		}
		canon, err := c.canonText(role)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", k.attr, c.f.attr, err)
		}
		if err := set(c.f, canon); err != nil {
			return err
		}
		i++
	}
	if k.shards > 0 {
		if i >= len(texts) {
			return fmt.Errorf("%s: the shard is missing: %w", k.attr, errMalformed)
		}
		if _, err := parseShard(texts[i], k.shards); err != nil {
			return fmt.Errorf("%s: %w", k.attr, err)
		}
		i++
	}
	if i != len(texts) {
		return fmt.Errorf("%s: too many components: %w", k.attr, errMalformed)
	}
	return nil
}

// slot returns the index of f in d's slots, or -1.
func (d *layout) slot(f *field) int {
	return slices.Index(d.slots, f)
}

// textOf returns a lookup of canonical texts from a position of d.
func (d *layout) textOf(pos position) func(*field) string {
	return func(f *field) string {
		if i := d.slot(f); i >= 0 {
			return pos[i]
		}
		return ""
	}
}

// positionOf reads the position of an item (or a LastEvaluatedKey) returned
// by a query of d, from its physical key attributes.
func (d *layout) positionOf(item map[string]types.AttributeValue) (position, error) {
	pos := make(position, len(d.slots))
	seen := make([]bool, len(d.slots))
	set := func(f *field, t string) error {
		i := d.slot(f)
		if i < 0 {
			return fmt.Errorf("field %s is not part of index %s", f.attr, d.label())
		}
		if seen[i] && pos[i] != t {
			return fmt.Errorf("%s has two different values in the key attributes: %w", f.attr, errMalformed)
		}
		pos[i], seen[i] = t, true
		return nil
	}
	for _, k := range d.stored {
		if err := k.decode(item[k.attr], set); err != nil {
			return nil, err
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("the key attributes do not hold %s", d.slots[i].attr)
		}
	}
	if d.pk.shards > 0 {
		// The shard must be the one the base key hashes to: an entry in
		// another shard is one that no query can find in order.
		k := d.shardAttr() // a sharded NativeGSI's; else the partition key holds the shard
		if k == nil {
			k = d.pk
		}
		want, err := k.physical(d.textOf(pos))
		if err != nil {
			return nil, err
		}
		if !av.Equal(want, item[k.attr]) {
			return nil, fmt.Errorf("%s: the entry is in another shard than its base key's: %w", k.attr, errMalformed)
		}
	}
	return pos, nil
}

// shardValue is the stored value of a NativeGSI's shard attribute.
func shardValue(shard int) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(shard)}
}

// shardOfValue reads a NativeGSI's shard attribute, of an index sharded n
// ways.
func shardOfValue(v types.AttributeValue, n int) (int, error) {
	nv, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("the shard is not a Number: %w", errMalformed)
	}
	return parseShard(nv.Value, n)
}

// startKey builds the ExclusiveStartKey for a position in d.
func (d *layout) startKey(pos position) (map[string]types.AttributeValue, error) {
	text := d.textOf(pos)
	keys := d.stored
	out := make(map[string]types.AttributeValue, len(keys))
	for _, k := range keys {
		av, err := k.physical(text)
		if err != nil {
			return nil, err
		}
		out[k.attr] = av
	}
	return out, nil
}

// keyTexts are the canonical key texts of one item's key fields, each at its
// field's ord. A field without a value is not set, which makes the item
// sparse for the keys that name it.
type keyTexts []keyText

type keyText struct {
	text string
	set  bool
}

// newKeyTexts returns key texts with no field set.
func (s *schema) newKeyTexts() keyTexts { return make(keyTexts, len(s.fields)) }

// get returns f's text, and whether f has one.
func (kt keyTexts) get(f *field) (string, bool) { x := kt[f.ord]; return x.text, x.set }

// text returns f's text, "" when f has none.
func (kt keyTexts) text(f *field) string { return kt[f.ord].text }

// put sets f's text.
func (kt keyTexts) put(f *field, text string) { kt[f.ord] = keyText{text, true} }

// itemTexts reads the canonical text of every key field of a model value. A
// field without a value (nil pointer, or omitempty and zero) is not set.
func (s *schema) itemTexts(v reflect.Value) (keyTexts, error) {
	out := s.newKeyTexts()
	for _, f := range s.fields {
		fv, err := f.value(v)
		if err != nil {
			continue
		}
		t, err := f.canon.text(fv)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", s.model, f.goName, err)
		}
		out.put(f, t)
	}
	return out, nil
}

// keyValues computes the physical key attributes of d for an item whose key
// texts are texts. ok is false when a component is absent: the item is not in
// d (a sparse index); for the base table that is an error.
func (d *layout) keyValues(texts keyTexts) (vals map[string]types.AttributeValue, ok bool, err error) {
	vals = map[string]types.AttributeValue{}
	for _, k := range d.keyAttrs() {
		for _, c := range k.components() {
			if _, has := texts.get(c.f); !has {
				if d == d.schema.base {
					return nil, false, fmt.Errorf("%s: key field %s has no value", d.schema.model, c.f.goName)
				}
				return nil, false, nil
			}
		}
		av, err := k.physical(texts.text)
		if err != nil {
			return nil, false, fmt.Errorf("%s (%s key): %w", d.schema.model, d.label(), err)
		}
		vals[k.attr] = av
	}
	return vals, true, nil
}

// follows reports whether position next may come after position at in a
// query of d (descending when desc): its sort components, as declared, are
// not before at's. It does not look at the base key that a layout appends, so
// it holds for a cursor minted on either form of an index: a native GSI
// orders ties as its server does, an index table by base key.
func (d *layout) follows(next, at position, desc bool) bool {
	if slices.Equal(next, at) {
		return false
	}
	if d.sk == nil || len(d.sk.parts) == 0 {
		return true // no declared sort components: the order is the base key's, which layouts keep differently
	}
	a, errA := d.sk.partsOrdered(d.textOf(at))
	n, errN := d.sk.partsOrdered(d.textOf(next))
	if errA != nil || errN != nil {
		return false
	}
	if desc {
		return n <= a
	}
	return n >= a
}

// partsOrdered is ordered for the declared components alone, without the
// base key suffix.
func (k *keyAttr) partsOrdered(text func(*field) string) (string, error) {
	if k.native || len(k.suffix) == 0 {
		return k.ordered(text)
	}
	short := *k
	short.suffix = nil
	return short.ordered(text)
}

// startKeyBefore builds an ExclusiveStartKey from which a query of d (in
// the order desc says, under the key condition kc) returns the entry at next
// first, or the entries that share next's sort key value before it: a sort
// key value just before next's in the query's order, such that no stored
// value can lie between the two. Where the sort key may repeat (a native GSI
// or LSI sort key, whose ties DynamoDB orders), it starts before next's
// value, which holds only when at's value comes strictly before it: the ties
// read again were read and found dead. So does the index table of such an
// index (see layout.serverTies): a cursor minted on the GSI names as next
// the first tie in the server's order, and the ties the table orders before
// it were not read. ok is false when d cannot express
// one: no sort key, a value just before next's that is at's own (or,
// where keys repeat, one of at's ties), a
// value at DynamoDB's size limit or its Number range, or a next that does
// not come after at in d's own order (a cursor minted where ties are
// ordered otherwise); the caller then starts after the position at. A nil
// key with ok true means next is the first entry of the condition's range,
// so the query starts at the range.
func (d *layout) startKeyBefore(next, at position, desc bool, kc *keyCond) (map[string]types.AttributeValue, bool) {
	if d.neverStartsBefore() {
		// A multi-attribute sort key: a cursor carries the last position
		// evaluated instead.
		return nil, false
	}
	esk, err := d.startKey(next)
	if err != nil {
		return nil, false
	}
	ord, err := d.sk.ordered(d.textOf(next))
	if err != nil {
		return nil, false
	}
	// next must come after at in this layout's own order too: a cursor
	// minted where ties are ordered otherwise starts after at. The test is
	// strict, so a key that may repeat never starts among at's ties.
	ordAt, err := d.sk.ordered(d.textOf(at))
	if err != nil || (desc && ord >= ordAt) || (!desc && ord <= ordAt) {
		return nil, false
	}
	if d.sk.scalar == types.ScalarAttributeTypeN {
		n, ok := esk[d.sk.attr].(*types.AttributeValueMemberN)
		if !ok {
			return nil, false
		}
		k, ok := numberStep(n.Value, desc)
		if !ok {
			return nil, false
		}
		// at comes strictly before k (see below).
		atKey, err := d.startKey(at)
		if err != nil {
			return nil, false
		}
		atN, ok := atKey[d.sk.attr].(*types.AttributeValueMemberN)
		if !ok || !numberBefore(atN.Value, k, desc) {
			return nil, false
		}
		if kc != nil && kc.firstIs(ord, desc) {
			return nil, true
		}
		esk[d.sk.attr] = &types.AttributeValueMemberN{Value: k}
		return esk, true
	}
	var k string
	switch vk, ok := d.valueStart(next, at, desc); {
	case ok:
		k = vk
	case !desc:
		k = predecessor(ord, d.sk.scalar == types.ScalarAttributeTypeB)
	case !d.sk.native:
		k = compositeSuccessor(ord)
	default:
		// Nothing sorts between a byte string, or a String (a native one
		// holds any character, U+0000 included), and itself plus a zero
		// byte.
		k = ord + "\x00"
	}
	if len(k) == 0 || len(k) > maxSortKeyBytes {
		return nil, false
	}
	if (!desc && k <= ordAt) || (desc && k >= ordAt) {
		// k is at's value (a key at the size limit has no room for the
		// highest characters, and its predecessor may be the last item's
		// own key) or a tie of it: where the start key falls among entries
		// of that value is the server's tie order, and the page's last
		// item could be read again.
		return nil, false
	}
	if kc != nil && !kc.match(k) {
		return nil, true
	}
	if d.sk.scalar == types.ScalarAttributeTypeB {
		esk[d.sk.attr] = &types.AttributeValueMemberB{Value: []byte(k)}
	} else {
		esk[d.sk.attr] = &types.AttributeValueMemberS{Value: k}
	}
	return esk, true
}

// valueStart returns, on d, an index table whose GSI or LSI form orders
// ties as DynamoDB does (serverTies), the key text just before the entries
// whose declared components equal next's in the query's order, where at's
// come strictly before them. Ascending, those entries are the keys from
// lowerBound(v) on, and nothing lies between it and its predecessor;
// descending, the keys below upperBound(v), which no stored key equals. ok
// is false on any other layout, and where at ties with next: such a cursor
// was not minted on the GSI or LSI form, which starts before a next item
// only when its value follows at's (else its cursor carries the last
// position evaluated), so the ties before next were read here, and the
// start is just before next itself.
func (d *layout) valueStart(next, at position, desc bool) (string, bool) {
	if !d.serverTies {
		return "", false
	}
	v, errV := d.sk.partsOrdered(d.textOf(next))
	a, errA := d.sk.partsOrdered(d.textOf(at))
	if errV != nil || errA != nil || v == a {
		return "", false
	}
	if desc {
		return upperBound(v, true), true
	}
	return predecessor(lowerBound(v, true), false), true
}

// neverStartsBefore reports whether startKeyBefore refuses every position
// of d: no sort key, or a multi-attribute one (a cursor carries the last
// position evaluated instead).
func (d *layout) neverStartsBefore() bool {
	return d.sk == nil || d.sk.attrs != nil
}

// prefixCeiling returns the highest String of at most maxSortKeyBytes bytes
// that begins with p, in DynamoDB's byte order: p followed by the highest
// characters up to the size limit. Every String key that begins with p is at
// most it.
func prefixCeiling(p string) string {
	return string(appendHighest(append(make([]byte, 0, maxSortKeyBytes), p...)))
}

// appendHighest fills b up to maxSortKeyBytes with the highest characters
// of each UTF-8 length, longest first: a value that matched all of them
// would be longer than the limit.
func appendHighest(b []byte) []byte {
	for _, c := range []rune{utf8.MaxRune, 0xFFFF, 0x7FF, 0x7F} {
		for n := utf8.RuneLen(c); len(b)+n <= maxSortKeyBytes; {
			b = utf8.AppendRune(b, c)
		}
	}
	return b
}

// predecessor returns a value below s such that no value of at most
// maxSortKeyBytes bytes lies strictly between the two, in DynamoDB's byte
// order: s with its last character one lower, followed by the highest
// characters up to the size limit (for Binary, bytes 0xFF). It returns ""
// when s is empty.
func predecessor(s string, binary bool) string {
	if s == "" {
		return ""
	}
	if binary {
		last := s[len(s)-1]
		if last == 0 {
			return s[:len(s)-1]
		}
		b := make([]byte, 0, maxSortKeyBytes)
		b = append(append(b, s[:len(s)-1]...), last-1)
		for len(b) < maxSortKeyBytes {
			b = append(b, 0xFF)
		}
		return string(b)
	}
	r, size := utf8.DecodeLastRuneInString(s)
	head := s[:len(s)-size]
	if r == 0 {
		return head
	}
	r--
	if utf16.IsSurrogate(r) {
		r = 0xD7FF
	}
	b := make([]byte, 0, maxSortKeyBytes)
	b = utf8.AppendRune(append(b, head...), r)
	return string(appendHighest(b))
}

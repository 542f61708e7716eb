package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file keeps index tables in step with the base table. From a base
// item's old and new images it computes the index-table writes (Changes),
// and applies them with a condition on the version of the change that wrote
// each entry, so an older change never overwrites a newer one: replaying a
// batch, or redelivering records after a newer one, ends in the same state.

// Change is one change of a base item: its images before and after (nil for
// an insert or a delete), and its version: the stream sequence number, or the
// model's version attribute. Versions are decimal integers of 1 to 40 digits
// (a DynamoDB Streams sequence number has 21 to 40), compared numerically.
type Change struct {
	Old, New map[string]types.AttributeValue
	Version  string
}

// IndexWrite is one write to an index table: a live entry to put, or a
// tombstone for an entry the change removed.
type IndexWrite struct {
	Index     string // the logical index name
	Table     string // the physical index table
	Tombstone bool
	Item      map[string]types.AttributeValue // the whole entry to put
}

// IndexWrites computes the index-table writes for a change:
//
//	insert, or an item entering a sparse index    → put the entry
//	a partition or sort component changed          → put the new entry, tombstone the old one
//	delete, soft delete, leaving a sparse index    → tombstone the old entry
//	projected attributes changed, keys the same    → put the entry
//	nothing the index holds changed                → no write
//
// A change with neither image changes nothing. It sends nothing. A change
// that cannot be written fails the same way however often it is tried: an
// image that is present but empty is an error matching [ErrStreamRecord]
// (a stream record whose image was lost); every other error matches
// [ErrInvalidWrite]: a malformed version, an image that does not fit the
// model (without its base key attributes or their components, or with a
// key attribute, of the base table or of any index, stored as another type
// than the model stores it), a key value out of range. An index component
// that is absent or NULL leaves the item out of that index (a sparse
// index).
func (t *Table[T]) IndexWrites(c Change) ([]IndexWrite, error) {
	return t.indexWrites(c, 0)
}

// indexWrites is IndexWrites, refusing an entry that would be over
// DynamoDB's item limit with room bytes more.
func (t *Table[T]) indexWrites(c Change, room int) (_ []IndexWrite, retErr error) {
	defer func() {
		if retErr != nil && !errors.Is(retErr, ErrInvalidWrite) && !errors.Is(retErr, ErrStreamRecord) {
			retErr = fmt.Errorf("%w: %w", ErrInvalidWrite, retErr)
		}
	}()
	if err := t.usable("IndexWrites", ErrInvalidWrite); err != nil {
		return nil, err
	}
	version, err := versionValue(c.Version)
	if err != nil {
		return nil, err
	}
	if !t.hasIndexTables() {
		return nil, nil
	}
	for _, img := range []struct {
		which string
		img   map[string]types.AttributeValue
	}{{"old", c.Old}, {"new", c.New}} {
		if img.img == nil {
			continue
		}
		if len(img.img) == 0 {
			return nil, fmt.Errorf("%w: change %s: the %s image is empty", ErrStreamRecord, c.Version, img.which)
		}
		if err := checkValues(img.img); err != nil {
			return nil, fmt.Errorf("%w: change %s: the %s image: %w", ErrInvalidWrite, c.Version, img.which, err)
		}
		if err := t.checkBaseKey(img.which, img.img); err != nil {
			return nil, err
		}
	}
	oldImg, newImg := t.liveImage(c.Old), t.liveImage(c.New)
	var oldTexts, newTexts keyTexts
	if oldImg != nil {
		if oldTexts, err = t.s.imageTexts(oldImg, nil, nil); err != nil {
			return nil, err
		}
		if err := t.checkBaseTexts("old", oldTexts); err != nil {
			return nil, err
		}
	}
	if newImg != nil {
		if newTexts, err = t.s.imageTexts(newImg, oldImg, oldTexts); err != nil {
			return nil, err
		}
		if err := t.checkBaseTexts("new", newTexts); err != nil {
			return nil, err
		}
	}
	// One version value for every entry of the change: attribute values are
	// never modified once built.
	out := make([]IndexWrite, 0, 2)
	for _, d := range t.s.indexes {
		if !d.ownTable {
			continue
		}
		var oldE, newE map[string]types.AttributeValue
		if oldImg != nil {
			if oldE, err = t.imageEntry(d, oldImg, oldTexts, version, 2); err != nil { // room to become a tombstone
				return nil, err
			}
		}
		if newImg != nil {
			if newE, err = t.imageEntry(d, newImg, newTexts, version, 0); err != nil {
				return nil, err
			}
		}
		table := t.tableOf(d)
		switch {
		case newE != nil && oldE != nil && sameKey(d, oldE, newE):
			if !sameAttrs(oldE, newE, t.opts.VersionAttr) {
				out = append(out, IndexWrite{Index: d.name, Table: table, Item: newE})
			}
		default:
			if newE != nil {
				out = append(out, IndexWrite{Index: d.name, Table: table, Item: newE})
			}
			if oldE != nil {
				t.markTombstone(oldE) // oldE is ours: no copy needed
				out = append(out, IndexWrite{Index: d.name, Table: table, Tombstone: true, Item: oldE})
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := checkEntrySizes(out, room); err != nil {
		return nil, fmt.Errorf("change %s: %w", c.Version, err)
	}
	return out, nil
}

// checkBaseKey checks that an image holds the base key attributes, stored
// as their key schema says.
func (t *Table[T]) checkBaseKey(which string, img map[string]types.AttributeValue) error {
	for _, k := range []*keyAttr{t.s.base.pk, t.s.base.sk} {
		if k == nil {
			continue
		}
		av, has := img[k.attr]
		if !has {
			return fmt.Errorf("%w: %s: the %s image lacks the base key attribute %s", ErrInvalidWrite, t.s.model, which, k.attr)
		}
		if got := avType(av); got != string(k.scalar) {
			return fmt.Errorf("%w: %s: in the %s image, the base key attribute %s is stored as %s, want %s", ErrInvalidWrite, t.s.model, which, k.attr, got, k.scalar)
		}
	}
	return nil
}

// checkBaseTexts checks that a live image holds every component of the base
// key (texts are its key texts): the entries of an index table hold them.
func (t *Table[T]) checkBaseTexts(which string, texts keyTexts) error {
	for _, k := range []*keyAttr{t.s.base.pk, t.s.base.sk} {
		if k == nil {
			continue
		}
		for _, c := range k.parts {
			if _, has := texts.get(c.f); !has {
				return fmt.Errorf("%w: %s: the %s image lacks %s (field %s), a component of the base key %s", ErrInvalidWrite, t.s.model, which, c.f.attr, c.f.goName, k.attr)
			}
		}
	}
	return nil
}

// imageEntry returns the index-table entry of d for a stored base image img
// (key texts texts), or nil when the item is not in d (sparse), sized with
// room for that many more attributes. It is what
// [Table.entry] builds from a model value, built straight from the image: the
// projected model attributes, the key fields of d and of the base table (so
// the entry unmarshals into a model value that knows its keys, as a GSI's
// KEYS_ONLY projection would), the base key, d's key, and the version. Key
// fields of other indexes are left out, so a change to them does not rewrite
// entries of indexes that do not hold them.
func (t *Table[T]) imageEntry(d *layout, img map[string]types.AttributeValue, texts keyTexts, version types.AttributeValue, room int) (map[string]types.AttributeValue, error) {
	for _, k := range []*keyAttr{d.pk, d.sk} {
		if k == nil {
			continue
		}
		for _, cs := range [][]*component{k.parts, k.suffix} {
			for _, c := range cs {
				if _, has := texts.get(c.f); !has {
					return nil, nil // sparse
				}
			}
		}
	}
	// Size the map for what it will hold (a map that has to grow, or one
	// much too large, is most of the cost): the attributes, d's derived key
	// attributes, the version, and a tombstone's two.
	n := 1 + room
	for _, k := range []*keyAttr{d.pk, d.sk} {
		if k != nil && !k.native {
			n++
		}
	}
	switch {
	case d.keysOnly:
		n += len(d.slots) + 2
	case d.project != nil:
		n += len(d.slots) + 2 + len(d.project)
	default:
		n += len(img) // the model attributes and the base key, and any GSI/LSI attributes (left out)
	}
	out := make(map[string]types.AttributeValue, n)
	switch {
	case d.keysOnly:
	case d.project != nil:
		for _, a := range d.project {
			if v, has := img[a]; has {
				out[a] = v
			}
		}
	default:
		for _, a := range t.s.attrList {
			if v, has := img[a]; has {
				out[a] = v // the key fields too: they are model attributes
			}
		}
	}
	if d.keysOnly || d.project != nil {
		for _, f := range d.slots {
			if v, has := img[f.attr]; has {
				out[f.attr] = v
			}
		}
	}
	for i, k := range []*keyAttr{t.s.base.pk, t.s.base.sk, d.pk, d.sk} {
		if k == nil {
			continue
		}
		if v, has := img[k.attr]; has && i < 2 {
			out[k.attr] = v // the base key as stored: the item's identity
			continue
		}
		av, err := k.physical(texts.text)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: %s (%s key): %w", t.s.model, d.label(), err)
		}
		out[k.attr] = av
	}
	out[t.opts.VersionAttr] = version
	return out, nil
}

// maxVersionDigits is the most digits a version has: a DynamoDB Streams
// sequence number has 21 to 40.
const maxVersionDigits = 40

// versionValue returns the attribute value that entries written for a
// change of version v hold, or an error matching [ErrInvalidWrite] when v is
// not a decimal integer of 1 to 40 digits. A version below 10^38 is a Number
// of v's digits, exact (a Number holds 38 significant digits). A larger one,
// which no Number holds exactly, is a String of 40 digits, padded with
// leading zeros, so that Strings order as the integers they write; every
// String version is above every Number version. versionCondition compares
// the two kinds in that order.
func versionValue(v string) (types.AttributeValue, error) {
	if v == "" || !allDigits(v) {
		return nil, fmt.Errorf("%w: version %q is not a decimal integer (1 to %d digits, as a DynamoDB Streams sequence number)", ErrInvalidWrite, v, maxVersionDigits)
	}
	if len(v) > maxVersionDigits {
		return nil, fmt.Errorf("%w: version %q has %d digits; a version has at most %d, as a DynamoDB Streams sequence number (21 to 40 digits)", ErrInvalidWrite, v, len(v), maxVersionDigits)
	}
	if len(strings.TrimLeft(v, "0")) <= maxNumberDigits {
		return &types.AttributeValueMemberN{Value: v}, nil
	}
	return &types.AttributeValueMemberS{Value: strings.Repeat("0", maxVersionDigits-len(v)) + v}, nil
}

// sameKey reports whether two items hold the same key of d, compared as
// DynamoDB compares keys (a Number by value).
func sameKey(d *layout, a, b map[string]types.AttributeValue) bool {
	for _, k := range d.keyAttrs() {
		if !av.Equal(a[k.attr], b[k.attr]) {
			return false
		}
	}
	return true
}

// sameAttrs reports whether two items hold equal attributes (as DynamoDB
// compares them: numbers by value, sets in any order), except the one named
// except (which both must hold or lack alike for the counts to match);
// except "" compares everything.
func sameAttrs(a, b map[string]types.AttributeValue, except string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if k == except {
			continue
		}
		w, has := b[k]
		if !has || !av.Equal(v, w) {
			return false
		}
	}
	return true
}

// avType names an attribute value's type as DynamoDB does (S, N, B, SS,
// NS, BS, M, L, NULL, BOOL); "none" for nil.
func avType(av types.AttributeValue) string {
	switch av.(type) {
	case nil:
		return "none"
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	}
	return fmt.Sprintf("%T", av)
}

// storedAs returns the attribute types attributevalue stores a value of
// type ft as, and reads back from: "S", "N" or "B"; "S or N" for a
// time.Time (RFC 3339 text, or epoch seconds with dynamodbav:",unixtime");
// "" for a type that marshals or unmarshals itself, or that is stored
// another way, which attributevalue.Unmarshal checks.
func storedAs(ft reflect.Type) string {
	for _, t := range []reflect.Type{ft, reflect.PointerTo(ft)} {
		if t.Implements(avMarshalerType) || t.Implements(avUnmarshalerType) {
			return ""
		}
	}
	switch k := ft.Kind(); {
	case ft == timeType:
		return "S or N"
	case k == reflect.String:
		return "S"
	case k >= reflect.Int && k <= reflect.Uintptr, k == reflect.Float32, k == reflect.Float64:
		return "N"
	case k == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
		return "B"
	}
	return ""
}

var (
	avMarshalerType   = reflect.TypeFor[attributevalue.Marshaler]()
	avUnmarshalerType = reflect.TypeFor[attributevalue.Unmarshaler]()
)

// imageTexts reads the canonical key texts of a stored item's key fields.
// Where prev (another image of the item, whose texts are prevTexts) holds the
// same value, its text is reused: most changes leave most key fields alone.
func (s *schema) imageTexts(img, prev map[string]types.AttributeValue, prevTexts keyTexts) (keyTexts, error) {
	out := s.newKeyTexts()
	for _, f := range s.fields {
		v := img[f.attr]
		if prev != nil {
			// The reuse must see the very text textFromAV would read, not
			// merely an equal value: textFromAV reads a Number's text
			// (an unsigned field takes "1" but refuses "1.0"; an int
			// field reads "9007199254740993.0" through a float64), and
			// a custom type may keep the text it was given.
			if pv, has := prev[f.attr]; has && v != nil && av.Identical(v, pv) {
				if t, ok := prevTexts.get(f); ok {
					out.put(f, t)
					continue
				}
			}
		}
		t, ok, err := f.textFromAV(v)
		if err != nil {
			return nil, fmt.Errorf("ddbindex: %s.%s: %w", s.model, f.goName, err)
		}
		if ok {
			out.put(f, t)
		}
	}
	return out, nil
}

// textFromAV reads a field's canonical text from its stored attribute. ok is
// false when the attribute is absent or NULL (how attributevalue stores a
// nil pointer). An attribute of another type than the field's stored form
// (storedAs) is an error naming both.
func (f *field) textFromAV(av types.AttributeValue) (string, bool, error) {
	switch av.(type) {
	case nil, *types.AttributeValueMemberNULL:
		return "", false, nil
	}
	if f.stored != "" {
		if got := avType(av); got != f.stored && (f.stored != "S or N" || (got != "S" && got != "N")) {
			return "", false, fmt.Errorf("%s is stored as %s, want %s", f.attr, got, f.stored)
		}
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		if f.canon.kind == encString {
			if f.omitEmpty && v.Value == "" {
				return "", false, nil
			}
			return v.Value, true, nil
		}
		if f.typ == timeType {
			// attributevalue's default decoding of a time.Time, without
			// its reflection and allocations.
			tm, err := time.Parse(time.RFC3339, v.Value)
			if err != nil {
				return "", false, fmt.Errorf("stored value does not unmarshal into %s: %w", f.typ, err)
			}
			if f.omitEmpty && tm.IsZero() {
				return "", false, nil
			}
			t, err := f.canon.text(reflect.ValueOf(tm))
			return t, err == nil, err
		}
	case *types.AttributeValueMemberN:
		if f.canon.isNumber() {
			t, err := f.canon.textFromNumber(v.Value)
			return t, err == nil, err
		}
	case *types.AttributeValueMemberB:
		if f.canon.kind == encBytes {
			return string(v.Value), true, nil
		}
	}
	// Times, custom types, and anything attributevalue stores its own way.
	pv := reflect.New(f.typ)
	if err := attributevalue.Unmarshal(av, pv.Interface()); err != nil {
		return "", false, fmt.Errorf("stored value does not unmarshal into %s: %w", f.typ, err)
	}
	if f.omitEmpty && pv.Elem().IsZero() {
		return "", false, nil
	}
	t, err := f.canon.text(pv.Elem())
	return t, err == nil, err
}

// ApplyStats counts what applying index writes did.
type ApplyStats struct {
	Changes int // changes processed
	Puts    int // live entries written
	Deletes int // tombstones written
	Stale   int // writes skipped because the entry already holds this change or a newer one
	// Skipped counts poison stream records that the OnPoison hook of a
	// stream consumer (package stream) chose to skip (Apply never skips: it
	// returns the error).
	Skipped int
}

func (s *ApplyStats) add(o ApplyStats) {
	s.Changes += o.Changes
	s.Puts += o.Puts
	s.Deletes += o.Deletes
	s.Stale += o.Stale
	s.Skipped += o.Skipped
}

// Apply computes and applies the index-table writes of changes, in order.
// Each write is conditional on the entry's version being older than the
// change's (or absent); a write that finds a newer or equal version is
// skipped and counted as Stale, which makes Apply idempotent and safe to
// call with redelivered or reordered changes.
//
// optFns are applied to every request Apply sends, as the SDK's own per-call
// options.
func (t *Table[T]) Apply(ctx context.Context, changes []Change, optFns ...func(*dynamodb.Options)) (st ApplyStats, err error) {
	if err := t.callable(ctx, "Apply", ErrInvalidWrite, optFns...); err != nil {
		return st, err
	}
	ctx, ic := t.tel.start(ctx, opApply, t.s.base)
	defer func() { ic.applied(len(changes), st); ic.end(ctx, err) }()
	if err := t.writable("Apply"); err != nil {
		return st, err
	}
	for _, c := range changes {
		writes, err := t.IndexWrites(c)
		if err != nil {
			return st, err
		}
		st.Changes++
		for _, w := range writes {
			stale, err := t.putEntry(ctx, w, c.Version, optFns...)
			if err != nil {
				return st, err
			}
			switch {
			case stale:
				st.Stale++
			case w.Tombstone:
				st.Deletes++
			default:
				st.Puts++
			}
		}
	}
	return st, nil
}

// versionCondition is the condition of every index-table write of a change
// of version (valid by versionValue), true when the entry's version is
// older than the change's, or absent:
//
//	attribute_not_exists(#ver) OR #ver < :version
//
// for a Number version (a String one, newer than any Number version, fails
// the comparison as another type), and for a String version
//
//	attribute_not_exists(#ver) OR attribute_type(#ver, N) OR #ver < :version
func (t *Table[T]) versionCondition(version string) expression.ConditionBuilder {
	v := expression.NameNoDotSplit(t.opts.VersionAttr)
	av, _ := versionValue(version)
	cond := v.AttributeNotExists()
	if _, ok := av.(*types.AttributeValueMemberS); ok {
		cond = cond.Or(v.AttributeType(expression.Number))
	}
	return cond.Or(v.LessThan(expression.Value(av)))
}

func (t *Table[T]) putEntry(ctx context.Context, w IndexWrite, version string, optFns ...func(*dynamodb.Options)) (stale bool, err error) {
	expr, err := expression.NewBuilder().WithCondition(t.versionCondition(version)).Build()
	if err != nil {
		return false, writeErr("%w", err)
	}
	_, err = t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(w.Table),
		Item:                      w.Item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("ddbindex: write index table %s: %w", w.Table, err)
	}
	return false, nil
}

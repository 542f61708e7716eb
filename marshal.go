package ddbindex

import (
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file computes what a model value is stored as: its base item (model
// attributes plus every derived key attribute) and its entry in each index
// table.

// Marshal returns item as the base table stores it: attributevalue's map of
// the model (without its field tagged ddbindex:"deleted", which is never
// stored), plus the derived attributes of the base key and of every GSI and
// LSI the item is in (an item whose index components are absent is left out
// of that index: a sparse index).
//
// Every key is derived from the stored attributes, as the index-table path
// derives it from a stream image, so a GSI and an index table key an item
// alike. A time.Time anywhere in item is stored as attributevalue stores it
// (RFC 3339 in its own zone) and must read back as the same instant: a zone
// offset with seconds, or a year outside 0000-9999 in its zone, is refused
// (convert such times to UTC). A Number DynamoDB would refuse anywhere in
// the item (NaN, ±Inf, more than 38 significant digits, a magnitude outside
// 1E-130 to 9.99...E+125), in a list, map or set too, is refused, naming
// the attribute; so is a set DynamoDB would refuse, an empty one or one that
// holds a member twice (Numbers compared by value). An item the library cannot store or key is an error
// matching [ErrInvalidWrite].
func (t *Table[T]) Marshal(item T) (map[string]types.AttributeValue, error) {
	if err := t.usable("Marshal", ErrInvalidWrite); err != nil {
		return nil, err
	}
	av, texts, err := t.marshal(&item)
	if err != nil {
		return nil, err
	}
	if err := t.addDerived(av, texts); err != nil {
		return nil, err
	}
	return av, nil
}

// marshal returns item's stored attributes and the key texts of its key
// fields. The texts are read from the stored attributes, by the code that
// reads a stream image (imageTexts), so that GSI keys derived here and
// index-table keys derived from the image come from the same text.
func (t *Table[T]) marshal(item *T) (map[string]types.AttributeValue, keyTexts, error) {
	av, err := attributevalue.MarshalMapWithOptions(item, marshalOptions)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: marshal %s: %w", ErrInvalidWrite, t.s.model, err)
	}
	if d := t.s.deleted; d != nil && d.attr != "" {
		delete(av, d.attr) // filled by reads, never stored
	}
	if err := checkValues(av); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidWrite, t.s.model, err)
	}
	texts, err := t.s.storedTexts(reflect.ValueOf(item).Elem(), av)
	if err != nil {
		return nil, nil, err
	}
	return av, texts, nil
}

// marshalOptions is attributevalue's default encoding, except for times
// (see encodeTime). Every model value the library writes is marshalled
// with it.
func marshalOptions(o *attributevalue.EncoderOptions) { o.EncodeTime = encodeTime }

// encodeTime stores a time.Time exactly as attributevalue does by default,
// as RFC 3339 text with nanoseconds in the value's own zone (so other
// readers of the table see what they always saw), and refuses a time whose
// text does not read back, as attributevalue reads it (time.RFC3339), as the
// same instant. Two kinds of value do not: a zone whose UTC offset has
// seconds (local mean time before the 20th century's standard zones, or
// time.Time{} in most named zones), whose text keeps only hours and
// minutes; and a year outside 0000-9999 in the value's zone, which RFC 3339
// cannot write. Stored, the first would key a GSI (from the value) and an
// index table (from the text) at different instants; the second would make
// every read of the item fail to unmarshal.
func encodeTime(tm time.Time) (types.AttributeValue, error) {
	text := tm.Format(time.RFC3339Nano)
	back, err := time.Parse(time.RFC3339, text)
	if err == nil && back.Equal(tm) {
		return &types.AttributeValueMemberS{Value: text}, nil
	}
	what := fmt.Sprintf("time %s is stored in its zone as %q", tm.Format("2006-01-02T15:04:05.999999999-07:00:00 MST"), text)
	if err != nil {
		if y := tm.UTC().Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("%s, which RFC 3339 cannot read back (years 0000-9999 only); its UTC year %d is outside that range too, so it cannot be stored", what, y)
		}
		return nil, fmt.Errorf("%s, which RFC 3339 cannot read back (years 0000-9999 only): convert it to UTC first (t.UTC())", what)
	}
	return nil, fmt.Errorf("%s, which reads back as %s, another instant: the zone's UTC offset has seconds, which RFC 3339 cannot hold: convert it to UTC first (t.UTC())",
		what, back.UTC().Format(time.RFC3339Nano))
}

// storedTexts returns the key texts of a model value's key fields, read
// from its stored attributes av. A key field whose stored form reads back
// as another key than the value's own (a dynamodbav:",unixtime" time with
// a sub-second part, a type whose marshalled form loses what its KeyText
// needs) is refused: a query by the value would miss the item.
func (s *schema) storedTexts(v reflect.Value, av map[string]types.AttributeValue) (keyTexts, error) {
	texts, err := s.imageTexts(av, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidWrite, err)
	}
	for _, f := range s.fields {
		stored, ok := texts.get(f)
		if !ok {
			continue
		}
		fv, err := f.value(v)
		if err != nil {
			continue // absent in the value, present as stored: the stored form decides
		}
		own, err := f.canon.text(fv)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.%s: %w", ErrInvalidWrite, s.model, f.goName, err)
		}
		if own == stored {
			continue
		}
		if f.unixTime {
			return nil, fmt.Errorf("%w: %s.%s is stored as whole epoch seconds (dynamodbav:\",unixtime\"), which drops the sub-second part of %s that its key needs: truncate it to the second first (t.Truncate(time.Second))",
				ErrInvalidWrite, s.model, f.goName, fv.Interface().(time.Time).Format(time.RFC3339Nano))
		}
		return nil, fmt.Errorf("%w: %s.%s: the stored attribute reads back as key text %q, the value's key text is %q: its marshalled form does not round-trip",
			ErrInvalidWrite, s.model, f.goName, stored, own)
	}
	return texts, nil
}

// addDerived adds the base key and GSI/LSI key attributes to a base item.
func (t *Table[T]) addDerived(av map[string]types.AttributeValue, texts keyTexts) error {
	for _, d := range append([]*layout{t.s.base}, t.s.indexes...) {
		if d.ownTable {
			continue
		}
		if k := d.shardAttr(); k != nil {
			// On every item, in the index or not (see shardAttr).
			v, err := k.physical(texts.text)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidWrite, err)
			}
			av[k.attr] = v
		}
		keys, ok, err := d.keyValues(texts)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidWrite, err)
		}
		if !ok {
			continue
		}
		for k, v := range keys {
			av[k] = v
		}
	}
	return nil
}

// baseKey returns the physical primary key of an item.
func (t *Table[T]) baseKey(texts keyTexts) (map[string]types.AttributeValue, error) {
	keys, _, err := t.s.base.keyValues(texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidWrite, err)
	}
	return keys, nil
}

// entryOf returns the entry of item in index table d, exactly as the write
// path writes it for a change of the given version, or nil when the item is
// not in d (sparse).
func (t *Table[T]) entryOf(d *layout, item T, version string) (map[string]types.AttributeValue, error) {
	img, err := t.Marshal(item)
	if err != nil {
		return nil, err
	}
	texts, err := t.s.imageTexts(img, nil, nil)
	if err != nil {
		return nil, err
	}
	return t.imageEntry(d, img, texts, &types.AttributeValueMemberN{Value: version}, 2)
}

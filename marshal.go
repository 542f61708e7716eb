package ddbindex

import (
	"fmt"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file computes what a model value is stored as: its base item (model
// attributes plus every derived key attribute) and its entry in each index
// table.

// Marshal returns item as the base table stores it: attributevalue's map of
// the model, plus the derived attributes of the base key and of every GSI and
// LSI the item is in (an item whose index components are absent is left out
// of that index: a sparse index).
func (t *Table[T]) Marshal(item T) (map[string]types.AttributeValue, error) {
	av, texts, err := t.marshal(&item)
	if err != nil {
		return nil, err
	}
	if err := t.addDerived(av, texts); err != nil {
		return nil, err
	}
	return av, nil
}

func (t *Table[T]) marshal(item *T) (map[string]types.AttributeValue, map[*field]string, error) {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return nil, nil, fmt.Errorf("ddbindex: marshal %s: %w", t.s.model, err)
	}
	texts, err := t.s.itemTexts(reflect.ValueOf(item).Elem())
	if err != nil {
		return nil, nil, fmt.Errorf("ddbindex: %w", err)
	}
	return av, texts, nil
}

// addDerived adds the base key and GSI/LSI key attributes to a base item.
func (t *Table[T]) addDerived(av map[string]types.AttributeValue, texts map[*field]string) error {
	for _, d := range append([]*keyDef{t.s.base}, t.s.indexes...) {
		if d.kind == IndexTable {
			continue
		}
		keys, ok, err := d.keyValues(texts)
		if err != nil {
			return fmt.Errorf("ddbindex: %w", err)
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
func (t *Table[T]) baseKey(texts map[*field]string) (map[string]types.AttributeValue, error) {
	keys, _, err := t.s.base.keyValues(texts)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: %w", err)
	}
	return keys, nil
}

// entryOf returns the entry of item in index table d, exactly as the write
// path writes it for a change of the given version, or nil when the item is
// not in d (sparse).
func (t *Table[T]) entryOf(d *keyDef, item T, version string) (map[string]types.AttributeValue, error) {
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

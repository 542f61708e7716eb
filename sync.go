package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file keeps index tables in step with the base table. From a base
// item's old and new images it computes the index-table writes (Changes),
// and applies them with a condition on the version of the change that wrote
// each entry, so an older change never overwrites a newer one: replaying a
// batch, or redelivering records after a newer one, ends in the same state.

// Change is one change of a base item: its images before and after (nil for
// an insert or a delete), and its version: the stream sequence number, or the
// model's version attribute. Versions are decimal integers compared
// numerically.
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
// It sends nothing.
func (t *Table[T]) IndexWrites(c Change) ([]IndexWrite, error) {
	if !isDecimal(c.Version) {
		return nil, fmt.Errorf("%w: version %q is not a decimal integer", ErrInvalidWrite, c.Version)
	}
	oldImg, newImg := t.liveImage(c.Old), t.liveImage(c.New)
	var oldTexts, newTexts map[*field]string
	var err error
	if oldImg != nil {
		if oldTexts, err = t.s.imageTexts(oldImg); err != nil {
			return nil, err
		}
	}
	if newImg != nil {
		if newTexts, err = t.s.imageTexts(newImg); err != nil {
			return nil, err
		}
	}
	var out []IndexWrite
	for _, d := range t.s.indexes {
		if d.kind != IndexTable {
			continue
		}
		var oldE, newE map[string]types.AttributeValue
		if oldImg != nil {
			if oldE, _, err = t.entry(d, t.modelAttrs(oldImg), oldTexts, c.Version); err != nil {
				return nil, err
			}
		}
		if newImg != nil {
			if newE, _, err = t.entry(d, t.modelAttrs(newImg), newTexts, c.Version); err != nil {
				return nil, err
			}
		}
		table := t.tableOf(d)
		switch {
		case newE != nil && oldE != nil && sameKey(d, oldE, newE):
			if !sameEntry(oldE, newE, t.opts.VersionAttr) {
				out = append(out, IndexWrite{Index: d.name, Table: table, Item: newE})
			}
		default:
			if newE != nil {
				out = append(out, IndexWrite{Index: d.name, Table: table, Item: newE})
			}
			if oldE != nil {
				out = append(out, IndexWrite{Index: d.name, Table: table, Tombstone: true, Item: t.tombstone(oldE)})
			}
		}
	}
	return out, nil
}

func isDecimal(s string) bool {
	if s == "" || len(s) > 38 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// liveImage returns img, or nil when it is absent or a soft-deleted item.
func (t *Table[T]) liveImage(img map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(img) == 0 {
		return nil
	}
	if b, ok := img[t.opts.DeletedAttr].(*types.AttributeValueMemberBOOL); ok && b.Value {
		return nil
	}
	return img
}

// modelAttrs returns the attributes of a base image that belong to the model
// (not derived key attributes nor ddbindex's own).
func (t *Table[T]) modelAttrs(img map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		if t.s.attrs[k] {
			out[k] = v
		}
	}
	return out
}

// tombstone turns an entry into its tombstone: the same entry, marked
// deleted, expiring after the retention.
func (t *Table[T]) tombstone(e map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := maps.Clone(e)
	out[t.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
	out[t.opts.TTLAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.opts.Now().Add(t.opts.Retention).Unix(), 10)}
	return out
}

func sameKey(d *keyDef, a, b map[string]types.AttributeValue) bool {
	for _, k := range []*keyAttr{d.pk, d.sk} {
		if k != nil && !reflect.DeepEqual(a[k.attr], b[k.attr]) {
			return false
		}
	}
	return true
}

func sameEntry(a, b map[string]types.AttributeValue, versionAttr string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if k == versionAttr {
			continue
		}
		if !reflect.DeepEqual(v, b[k]) {
			return false
		}
	}
	return true
}

// imageTexts reads the canonical key texts of a stored item's key fields.
func (s *schema) imageTexts(img map[string]types.AttributeValue) (map[*field]string, error) {
	out := make(map[*field]string, len(s.fields))
	for _, f := range s.fields {
		t, ok, err := f.textFromAV(img[f.attr])
		if err != nil {
			return nil, fmt.Errorf("ddbindex: %s.%s: %w", s.model, f.goName, err)
		}
		if ok {
			out[f] = t
		}
	}
	return out, nil
}

// textFromAV reads a field's canonical text from its stored attribute. ok is
// false when the attribute is absent or NULL.
func (f *field) textFromAV(av types.AttributeValue) (string, bool, error) {
	switch v := av.(type) {
	case nil:
		return "", false, nil
	case *types.AttributeValueMemberNULL:
		return "", false, nil
	case *types.AttributeValueMemberS:
		if f.canon.kind == encString {
			if f.omitEmpty && v.Value == "" {
				return "", false, nil
			}
			return v.Value, true, nil
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
}

func (s *ApplyStats) add(o ApplyStats) {
	s.Changes += o.Changes
	s.Puts += o.Puts
	s.Deletes += o.Deletes
	s.Stale += o.Stale
}

// Apply computes and applies the index-table writes of changes, in order.
// Each write is conditional on the entry's version being older than the
// change's (or absent); a write that finds a newer or equal version is
// skipped and counted as Stale, which makes Apply idempotent and safe to
// call with redelivered or reordered changes.
func (t *Table[T]) Apply(ctx context.Context, changes ...Change) (ApplyStats, error) {
	var st ApplyStats
	for _, c := range changes {
		writes, err := t.IndexWrites(c)
		if err != nil {
			return st, err
		}
		st.Changes++
		for _, w := range writes {
			stale, err := t.putEntry(ctx, w, c.Version)
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

// versionCondition is the condition of every index-table write:
//
//	attribute_not_exists(#ver) OR #ver < :version
func (t *Table[T]) versionCondition(version string) expression.ConditionBuilder {
	v := expression.Name(t.opts.VersionAttr)
	return v.AttributeNotExists().Or(v.LessThan(expression.Value(&types.AttributeValueMemberN{Value: version})))
}

func (t *Table[T]) putEntry(ctx context.Context, w IndexWrite, version string) (stale bool, err error) {
	expr, err := expression.NewBuilder().WithCondition(t.versionCondition(version)).Build()
	if err != nil {
		return false, fmt.Errorf("ddbindex: %w", err)
	}
	_, err = t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(w.Table),
		Item:                      w.Item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("ddbindex: write index table %s: %w", w.Table, err)
	}
	return false, nil
}

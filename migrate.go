package ddbindex

import (
	"context"
	"fmt"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// This file backs a GSI-to-index-table migration, in the write-up's steps:
// fill the index table from the base table (Backfill, in backfill.go) while
// the stream consumer runs, compare both paths' answers side by side
// (Compare), widen, and once GSI reads reach zero, drop the GSI and flip the
// declaration.

// Comparison is the result of [Query.Compare]: the same query read through
// an index as declared and as the other index type, page by page.
type Comparison struct {
	Pages       int      // pages compared (the longer side's count)
	Items       int      // items read through the declared index
	Differences []string // empty when both paths agree on items, order and page boundaries
}

// Equal reports whether both paths gave the same answer; false for a nil
// Comparison, which compared nothing.
func (c *Comparison) Equal() bool { return c != nil && len(c.Differences) == 0 }

// maxDifferences bounds the differences a Comparison lists.
const maxDifferences = 20

// Compare runs the query to its end (following cursors, Limit items a page)
// through its index as declared and through the other index type — a GSI
// and the index table that replaces it — and reports every difference in
// items, order, page boundaries and tombstone exclusion: step two of a
// GSI-to-table migration. alternateTable names the index table when it is
// not the default (TABLE-INDEX); it is ignored when the declared index is
// itself the index table.
func (q Query[T]) Compare(ctx context.Context, alternateTable string, optFns ...func(*dynamodb.Options)) (*Comparison, error) {
	if err := q.t.usable("Compare", ErrInvalidQuery, optFns...); err != nil {
		return nil, err
	}
	d, err := q.t.index(q.index)
	if err != nil {
		return nil, err
	}
	alt, err := d.alternate()
	if err != nil {
		return nil, queryErr(q.index, "no other index type to compare with: %v", err)
	}
	if alt == nil {
		return nil, queryErr(q.index, "the base table has no other index type to compare with")
	}
	if alt.ownTable && alternateTable != "" {
		alt.table = alternateTable
	}
	read := func(d *layout) ([][]T, error) {
		var pages [][]T
		cq := q
		if !d.consistent {
			cq.consistent = false
		}
		limit := cq.limit
		if limit == 0 {
			limit = DefaultPageSize
		}
		for {
			p, err := cq.planFor(d)
			if err != nil {
				return nil, err
			}
			page, err := fill(ctx, cq, p, limit, true, optFns)
			if err != nil {
				return nil, err
			}
			pages = append(pages, page.Items)
			if page.Cursor == "" {
				return pages, nil
			}
			cq.cursor = page.Cursor
		}
	}
	a, err := read(d)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: compare, reading %s as a %s: %w", indexLabel(q.index), d.kind, err)
	}
	b, err := read(alt)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: compare, reading %s as a %s: %w", indexLabel(q.index), alt.kind, err)
	}
	c := &Comparison{Pages: max(len(a), len(b))}
	add := func(format string, args ...any) {
		if len(c.Differences) < maxDifferences {
			c.Differences = append(c.Differences, fmt.Sprintf(format, args...))
		}
	}
	for i := 0; i < c.Pages; i++ {
		var pa, pb []T
		if i < len(a) {
			pa = a[i]
			c.Items += len(pa)
		}
		if i < len(b) {
			pb = b[i]
		}
		if len(pa) != len(pb) {
			add("page %d: %d items as a %s, %d as a %s", i+1, len(pa), d.kind, len(pb), alt.kind)
		}
		for j := 0; j < min(len(pa), len(pb)); j++ {
			if !reflect.DeepEqual(pa[j], pb[j]) {
				add("page %d item %d: %s as a %s, %s as a %s", i+1, j+1, q.t.keyOfItem(&pa[j]), d.kind, q.t.keyOfItem(&pb[j]), alt.kind)
			}
		}
	}
	return c, nil
}

// keyOfItem renders an item's base key for messages.
func (t *Table[T]) keyOfItem(item *T) string {
	texts, err := t.s.itemTexts(reflect.ValueOf(item).Elem())
	if err != nil {
		return "(" + err.Error() + ")"
	}
	key, err := t.baseKey(texts)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return keyString(key)
}

package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
)

// Comparison is the result of [Compare]: one query read to its end on
// both forms of an index, page by page.
type Comparison struct {
	// Forms are the forms compared: the one that serves the query (as
	// routed, or as its Via says), then the other.
	Forms [2]ddbindex.Kind
	// Pages is the number of pages compared (the longer side's count),
	// Items the number of items read on the first form.
	Pages, Items int
	// Differences is empty when both forms agree on items, their values,
	// order and page boundaries; else it says what differed, for a person
	// (at most 20 differences).
	Differences []string
}

// Equal reports whether both forms gave the same answer (false for a nil
// Comparison).
func (c *Comparison) Equal() bool { return c != nil && len(c.Differences) == 0 }

// maxDifferences bounds the differences a Comparison lists.
const maxDifferences = 20

// Compare reads q to its end (following cursors, q's Limit items a page)
// on both forms of its index, which must keep two (keep= in its IndexSpec),
// and reports every difference in items, their values, order and page
// boundaries: the offline comparison of one access pattern, step two of a
// migration. It reads through the public API alone ([ddbindex.Query.Via]
// and Page), so the Table's routing and observer see admin reads; optFns
// go to every request, as the SDK's per-call options.
//
// A query that cannot run fails as its Page would, before any request; an
// index with one form, and the base table, fail with an error matching
// [ddbindex.ErrInvalidQuery].
func Compare[T any](ctx context.Context, q ddbindex.Query[T], optFns ...func(*dynamodb.Options)) (*Comparison, error) {
	e, err := q.Explain()
	if err != nil {
		return nil, err
	}
	if e.Alternate == nil {
		return nil, fmt.Errorf("%w: migrate.Compare: no other form to compare with (%v)", ddbindex.ErrInvalidQuery, e.AlternateErr)
	}
	forms := [2]ddbindex.Kind{e.Request.Kind, e.Alternate.Kind}
	if _, err := q.Via(forms[1]).Explain(); err != nil {
		return nil, fmt.Errorf("migrate.Compare: the index keeps one form, %s; declare keep= to compare: %w", forms[0], err)
	}
	read := func(form ddbindex.Kind) ([][]T, error) {
		var pages [][]T
		cursor := ""
		for {
			p, err := q.Via(form).After(cursor).Page(ctx, optFns...)
			if err != nil {
				return nil, fmt.Errorf("migrate: compare, reading the %s form: %w", form, err)
			}
			pages = append(pages, p.Items)
			if p.Cursor == "" {
				return pages, nil
			}
			cursor = p.Cursor
		}
	}
	key := keyText[T]()
	a, err := read(forms[0])
	if err != nil {
		return nil, err
	}
	b, err := read(forms[1])
	if err != nil {
		return nil, err
	}
	c := &Comparison{Forms: forms, Pages: max(len(a), len(b))}
	add := func(format string, args ...any) {
		if len(c.Differences) < maxDifferences {
			c.Differences = append(c.Differences, fmt.Sprintf(format, args...))
		}
	}
	for i := range c.Pages {
		var pa, pb []T
		if i < len(a) {
			pa = a[i]
			c.Items += len(pa)
		}
		if i < len(b) {
			pb = b[i]
		}
		if len(pa) != len(pb) {
			add("page %d: %d items as a %s, %d as a %s", i+1, len(pa), forms[0], len(pb), forms[1])
		}
		for j := range min(len(pa), len(pb)) {
			if !reflect.DeepEqual(pa[j], pb[j]) {
				add("page %d item %d: %s as a %s, %s as a %s", i+1, j+1, key(pa[j]), forms[0], key(pb[j]), forms[1])
			}
		}
	}
	return c, nil
}

// keyText returns the function that renders an item of T for a
// difference: its base key attributes, as errors render keys
// ({id="t-01"}), or when that fails, the item as JSON.
func keyText[T any]() func(T) string {
	probe, err := ddbindex.New[T](nil) // sends nothing: it describes T
	if err != nil {
		return func(v T) string { return itemText(v) }
	}
	base := probe.Indexes()[0]
	var attrs []string
	for _, c := range append(slices.Clone(base.Partition), base.Sort...) {
		attrs = append(attrs, c.Attr)
	}
	slices.Sort(attrs)
	attrs = slices.Compact(attrs)
	return func(v T) string {
		item, err := probe.Marshal(v)
		if err != nil {
			return itemText(v)
		}
		parts := make([]string, 0, len(attrs))
		for _, a := range attrs {
			parts = append(parts, a+"="+avText(item[a]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}

// avText renders a key attribute's value: a string quoted, a number as it
// is, bytes in hexadecimal.
func avText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("0x%x", v.Value)
	case nil:
		return "<absent>"
	}
	return avType(av)
}

// maxItemText bounds how much of an item a difference shows.
const maxItemText = 200

// itemText renders an item as JSON, cut at maxItemText bytes.
func itemText(v any) string {
	b, err := json.Marshal(v)
	s := string(b)
	if err != nil {
		s = fmt.Sprintf("%+v", v)
	}
	if len(s) > maxItemText {
		s = s[:maxItemText] + "..."
	}
	return s
}

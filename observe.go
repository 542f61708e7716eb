package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// This file makes the ReadEvents of reads of indexes that keep two forms
// (router.go), and compares a page with the same page on the other form
// (ReadEvent.compare): package migrate's Shadows asks for the comparison
// through internal/bridge (bridge.Comparer), which the init function below
// connects, and reports what it finds as its own Mismatch.

func init() {
	bridge.Comparer = func(ev any) func(ctx context.Context, recheck bool) (*bridge.Mismatch, error) {
		if r, ok := ev.(ReadEvent); ok {
			return r.compare
		}
		return nil
	}
}

// What a served read says follows a page.
const (
	endUnknown = iota // not known (an Exists; a page whose fill did not read the item after it; All's page that a limit cut or that DynamoDB continues)
	endMore           // a live item follows (Page's cursor)
	endNone           // no live item follows
)

// observed is what ReadEvent.compare needs of one page a read served: a
// copy, shared with nothing the caller holds.
type observed[T any] struct {
	q             Query[T] // the read, without its ReportTo
	served, other *layout
	// prev is the item before the page (All's later pages), whose position
	// the page starts after; nil: it starts at q's cursor.
	prev  map[string]types.AttributeValue
	raw   []map[string]types.AttributeValue // the page's items, as read
	limit int                               // the page's size
	peek  bool                              // a read of the page peeks one item ahead: its cursor tells whether more follow
	end   int                               // what the served read says follows the page
}

// observing reports whether reads of p are observed: Options.Observer is
// set and p's index keeps two forms.
func (q Query[T]) observing(p *plan) bool {
	return q.t.opts.Observer != nil && p.def.decl != nil && len(p.def.decl.forms) > 1
}

// observe calls Options.Observer with the ReadEvent of one page.
func (q Query[T]) observe(ctx context.Context, p *plan, st Stats, o *observed[T]) {
	served := p.def
	for _, f := range served.decl.forms {
		if f != served {
			o.other = f
		}
	}
	o.served = served
	o.q = q
	o.q.report = nil
	o.q.partition = slices.Clone(q.partition)
	ev := ReadEvent{
		Table: q.t.s.table, Index: served.name,
		Form: served.kind, Other: o.other.kind,
		Admin: q.hasVia,
		Stats: st,
		Query: q.describe(),
	}
	ev.compare = o.compare
	q.t.opts.Observer.ObserveRead(ctx, ev)
}

// observePage observes a Page or Exists call's page, read with the given
// limit; peek is Page's.
func (q Query[T]) observePage(ctx context.Context, p *plan, page *Page[T], limit int, peek bool) {
	o := &observed[T]{raw: p.raw, limit: limit, peek: peek}
	if peek {
		o.end = p.end
	}
	p.raw = nil
	q.observe(ctx, p, page.Stats, o)
}

// allPages cuts an All iteration into the pages it observes.
type allPages[T any] struct {
	q        Query[T]
	p        *plan
	prev     map[string]types.AttributeValue // the last item of the last page observed
	raw      []map[string]types.AttributeValue
	observed bool // a page was observed
}

// add adds yielded items to the current page.
func (a *allPages[T]) add(items ...map[string]types.AttributeValue) {
	if a != nil {
		a.raw = append(a.raw, items...)
	}
}

// flush observes the current page, which cost st (what the requests since
// the last page observed cost); end says what follows it. An empty page is
// observed only as the whole of an iteration that found nothing. It
// reports whether it observed a page.
func (a *allPages[T]) flush(ctx context.Context, st Stats, end int) bool {
	if a == nil || (len(a.raw) == 0 && (a.observed || end != endNone)) {
		return false
	}
	st.Returned, st.Dropped = len(a.raw), 0
	o := &observed[T]{prev: a.prev, raw: a.raw, limit: max(1, len(a.raw)), peek: true, end: end}
	a.observed = true
	if len(a.raw) > 0 {
		a.prev = a.raw[len(a.raw)-1]
	}
	a.raw = nil
	a.q.observe(ctx, a.p, st, o)
	return true
}

// statsSince is what was spent between the totals before and now.
// Throttles, distinct and in the order met, are those first met since.
func statsSince(now, before Stats) Stats {
	s := Stats{Requests: now.Requests - before.Requests, Read: now.Read - before.Read,
		Filtered: now.Filtered - before.Filtered, ReadUnits: now.ReadUnits - before.ReadUnits,
		Throttled: now.Throttled - before.Throttled}
	if n := len(before.Throttles); len(now.Throttles) > n {
		s.Throttles = slices.Clone(now.Throttles[n:])
	}
	return s
}

// compare is ReadEvent.compare: it reads the same page on the other form
// and returns how it differs from the page served, or nil when they are
// equal. With recheck false it compares with the page as served; with
// recheck true it reads the page again on both forms (after a delay, a
// mismatch that is gone was a GSI catching up). Items one form returned and
// that the base table holds as deleted, or not at all, are a
// bridge.MismatchTombstone: it reads the base table for them. Its reads are
// instrumented as operation Shadow, and no ReadObserver sees them. An error
// is the error of a read.
func (o *observed[T]) compare(ctx context.Context, recheck bool) (*bridge.Mismatch, error) {
	t := o.q.t
	// The read that was observed may have ended; its call state is not
	// these reads'.
	ctx = context.WithValue(ctx, callKey{}, (*call)(nil))
	q := o.q
	if o.prev != nil {
		pos, err := o.served.positionOf(o.prev)
		if err != nil {
			return nil, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(o.served.name), err)
		}
		digest, err := q.readDigest()
		if err != nil {
			return nil, queryErr(o.served.name, "%v", err)
		}
		q.cursor = encodeCursor(o.served, cursorPos{at: pos, digest: digest}, q.desc, t.opts.signingKey())
	}
	// The page boundaries compare where both fills know whether a live
	// item follows.
	boundary := o.peek && o.end != endUnknown
	var a *Page[T]
	var err error
	if recheck {
		var end int
		if a, end, err = o.read(ctx, q, o.served); err != nil {
			return nil, err
		}
		boundary = o.peek && end != endUnknown
	} else {
		a = &Page[T]{Items: make([]T, len(o.raw))}
		for i := range o.raw {
			if err := t.unmarshalItem(o.raw[i], &a.Items[i]); err != nil {
				return nil, err
			}
		}
		if o.end == endMore {
			a.Cursor = "more"
		}
	}
	b, end, err := o.read(ctx, q, o.other)
	if err != nil {
		return nil, err
	}
	boundary = boundary && end != endUnknown
	m := t.pageMismatch(ctx, o.served, o.other, a, b, boundary)
	if m != nil {
		m.Query = q.describe()
	}
	return m, nil
}

// read reads the observed page on form d, as operation Shadow, and says
// what its fill found after it (endUnknown, endMore, endNone).
func (o *observed[T]) read(ctx context.Context, q Query[T], d *layout) (page *Page[T], end int, err error) {
	if !d.consistent {
		q.consistent = false // a GSI has eventually consistent reads alone
	}
	ctx, c := q.t.tel.start(ctx, opShadow, d)
	defer func() { endPage(ctx, c, page, err) }()
	p, err := q.planFor(d)
	if err != nil {
		return nil, endUnknown, err
	}
	p.route = routeVia
	c.planned(ctx, p, q.tombstoneOnly(d))
	page, err = fill(ctx, q, p, o.limit, o.peek, nil)
	return page, p.end, err
}

// describe renders q for a mismatch report.
func (q Query[T]) describe() string {
	order := "asc"
	if q.desc {
		order = "desc"
	}
	return fmt.Sprintf("Query(%q, %v).Where(%s) %s Limit %d After %q", q.index, q.partition, q.cond, order, q.limit, q.cursor)
}

// pageMismatch compares a page served by one form with the same page read
// on the other; nil when they agree. boundary says whether both pages'
// cursors tell whether more follows.
func (t *Table[T]) pageMismatch(ctx context.Context, served, other *layout, a, b *Page[T], boundary bool) *bridge.Mismatch {
	m := &bridge.Mismatch{}
	ka, err := t.baseKeys(a.Items)
	if err != nil {
		return nil
	}
	kb, err := t.baseKeys(b.Items)
	if err != nil {
		return nil
	}
	inA, inB := map[string]int{}, map[string]int{}
	for i, k := range ka {
		inA[k] = i
	}
	for i, k := range kb {
		inB[k] = i
	}
	var missing, extra []string
	for _, k := range ka {
		if _, ok := inB[k]; !ok {
			missing = append(missing, k)
		}
	}
	for _, k := range kb {
		if _, ok := inA[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		// An item one form returned and the base table holds as deleted is
		// a leaked tombstone, whichever form returned it.
		var leaked []string
		for _, list := range [][]T{a.Items, b.Items} {
			for _, it := range list {
				k := t.mustBaseKey(it)
				if _, both := inA[k]; both {
					if _, alsoB := inB[k]; alsoB {
						continue
					}
				}
				if t.baseDeleted(ctx, it) {
					leaked = append(leaked, k)
				}
			}
		}
		switch {
		case len(leaked) > 0:
			m.Kind, m.Keys, m.Detail = bridge.MismatchTombstone, leaked, "a form returned items the base table holds as deleted"
		case len(missing) > 0:
			m.Kind, m.Keys, m.Detail = bridge.MismatchMissing, missing, fmt.Sprintf("the %s form lacks items the %s form returned", other.kind, served.kind)
		default:
			m.Kind, m.Keys, m.Detail = bridge.MismatchExtra, extra, fmt.Sprintf("the %s form returned items the %s form did not", other.kind, served.kind)
		}
		return m
	}
	if len(ka) != len(kb) {
		// Each form returned every item the other did, so one returned an
		// item twice: it moved later in the order between two requests of
		// the page (neither form reads a snapshot).
		form, keys := served.kind, ka
		if len(kb) > len(ka) {
			form, keys = other.kind, kb
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				m.Kind, m.Keys = bridge.MismatchExtra, []string{k}
				m.Detail = fmt.Sprintf("the %s form returned item %s twice", form, k)
				return m
			}
			seen[k] = true
		}
	}
	for i := range ka {
		if ka[i] != kb[i] {
			m.Kind, m.Keys = bridge.MismatchOrder, []string{ka[i], kb[i]}
			m.Detail = fmt.Sprintf("item %d is %s on the %s form and %s on the %s form", i, ka[i], served.kind, kb[i], other.kind)
			return m
		}
		if !reflect.DeepEqual(a.Items[i], b.Items[i]) {
			// The same item with other attribute values: one form is
			// behind the other.
			m.Kind, m.Keys = bridge.MismatchExtra, []string{ka[i]}
			m.Detail = fmt.Sprintf("item %s differs between the forms", ka[i])
			return m
		}
	}
	if boundary && (a.Cursor == "") != (b.Cursor == "") {
		m.Kind = bridge.MismatchPageBoundary
		m.Detail = fmt.Sprintf("after the same %d items, the %s form says more follow: %v; the %s form: %v", len(ka), served.kind, a.Cursor != "", other.kind, b.Cursor != "")
		return m
	}
	return nil
}

// baseKeys renders the base key of each item.
func (t *Table[T]) baseKeys(items []T) ([]string, error) {
	out := make([]string, len(items))
	for i := range items {
		texts, err := t.s.itemTexts(reflect.ValueOf(&items[i]).Elem())
		if err != nil {
			return nil, err
		}
		key, err := t.baseKey(texts)
		if err != nil {
			return nil, err
		}
		out[i] = keyString(key)
	}
	return out, nil
}

func (t *Table[T]) mustBaseKey(item T) string {
	k, err := t.baseKeys([]T{item})
	if err != nil {
		return ""
	}
	return k[0]
}

// baseDeleted reports whether the base table holds item as a tombstone, or
// not at all.
func (t *Table[T]) baseDeleted(ctx context.Context, item T) bool {
	texts, err := t.s.itemTexts(reflect.ValueOf(&item).Elem())
	if err != nil {
		return false
	}
	key, err := t.baseKey(texts)
	if err != nil {
		return false
	}
	cur, err := t.current(ctx, key, nil)
	if err != nil {
		return false
	}
	return t.liveImage(cur) == nil
}

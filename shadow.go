package ddbindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// This file runs shadow reads: for an index that keeps two forms, a sampled
// share of Page calls runs again, in the background, on the form that did
// not serve it, and the two pages are compared. The caller's call returns
// as soon as its own page is read; the shadow read waits for nothing of it.

// ShadowOptions configure shadow reads (Options.Shadow).
type ShadowOptions struct {
	// Rate is the share of Page calls on indexes that keep two forms that
	// are shadowed, from 0 (none, the default) to 1 (every call).
	Rate float64
	// MaxConcurrent bounds the shadow reads in flight; a call sampled while
	// they are all busy is skipped (RolloutStats.Skipped). Default 4.
	MaxConcurrent int
	// MaxReadUnits bounds the read units shadow reads spend per second; a
	// call whose page cost more than the budget left is skipped. Default:
	// no bound.
	MaxReadUnits float64
	// Recheck is how long a mismatch waits before it is read again on both
	// forms: a GSI is eventually consistent, so a mismatch that is gone
	// then was a GSI catching up (RolloutStats.Transient). Default 1 second.
	Recheck time.Duration
	// OnMismatch receives each mismatch the re-check confirms. It runs on
	// the shadow read's goroutine.
	OnMismatch func(Mismatch)
	// Timeout bounds one shadow comparison, re-check included. Default 30 seconds.
	Timeout time.Duration
	// Sleep waits for the re-check; tests replace it. Default: a timer that
	// the comparison's context cancels.
	Sleep func(ctx context.Context, d time.Duration) error
}

// MismatchKind says how a shadow read differed from the read it shadowed.
type MismatchKind string

// The kinds of mismatch, in the order a comparison looks for them.
const (
	// MismatchTombstone: one form returned an item that the base table
	// holds as deleted, or not at all: a stale entry that reads must skip.
	MismatchTombstone MismatchKind = "tombstone-leaked"
	// MismatchMissing: the shadow form lacks an item the serving form returned.
	MismatchMissing MismatchKind = "missing"
	// MismatchExtra: the shadow form returned an item the serving form did not.
	MismatchExtra MismatchKind = "extra"
	// MismatchOrder: the same items, in another order.
	MismatchOrder MismatchKind = "order"
	// MismatchPageBoundary: the same items in the same order, but one form
	// says more items follow and the other that the partition ends.
	MismatchPageBoundary MismatchKind = "page-boundary"
)

// Mismatch is one confirmed difference between the two forms of an index.
type Mismatch struct {
	Kind MismatchKind
	// Index is the logical index; Served the form that served the call,
	// Shadow the form that shadowed it.
	Index          string
	Served, Shadow Kind
	// Query renders the shadowed query (partition, condition, order, limit).
	Query string
	// Keys are the base keys of the items concerned, as rendered in errors.
	Keys []string
	// Detail says what differed, for a person.
	Detail string
}

// shadows is a Table's shadow-read machinery.
type shadows struct {
	o     ShadowOptions
	slots chan struct{}
	units *rate.Limiter
	wg    sync.WaitGroup
}

func newShadows(o *ShadowOptions) *shadows {
	if o == nil || o.Rate <= 0 {
		return nil
	}
	s := &shadows{o: *o}
	if s.o.MaxConcurrent <= 0 {
		s.o.MaxConcurrent = 4
	}
	if s.o.Recheck <= 0 {
		s.o.Recheck = time.Second
	}
	if s.o.Timeout <= 0 {
		s.o.Timeout = 30 * time.Second
	}
	if s.o.Sleep == nil {
		s.o.Sleep = func(ctx context.Context, d time.Duration) error {
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if s.o.MaxReadUnits > 0 {
		s.units = rate.NewLimiter(rate.Limit(s.o.MaxReadUnits), int(math.Ceil(s.o.MaxReadUnits)))
	}
	s.slots = make(chan struct{}, s.o.MaxConcurrent)
	return s
}

// WaitShadows waits until the shadow reads in flight have finished, or ctx
// is done: for a graceful shutdown, and for tests.
func (t *Table[T]) WaitShadows(ctx context.Context) error {
	if err := t.usable("WaitShadows", ErrInvalidQuery); err != nil {
		return err
	}
	if t.shadows == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { t.shadows.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shadowPage starts a shadow read of the page that form served for q, when
// the index keeps two forms and the call is sampled. ctx is the served
// call's: the comparison's span links to its span.
func (t *Table[T]) shadowPage(ctx context.Context, q Query[T], served *layout, page *Page[T]) {
	s := t.shadows
	if s == nil || q.shadow || len(served.decl.forms) < 2 || rand.Float64() >= s.o.Rate {
		return
	}
	var other *layout
	for _, f := range served.decl.forms {
		if f != served {
			other = f
		}
	}
	skip := func() {
		t.rollout.update(served.name, func(r *RolloutStats) { r.Skipped++ })
		t.tel.shadowOutcome(ctx, other, "skipped")
	}
	// The shadow read costs about what the call did; the re-check, when
	// needed, twice that again.
	if s.units != nil && !s.units.AllowN(time.Now(), max(1, int(math.Ceil(page.Stats.ReadUnits)))) {
		skip()
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		skip()
		return
	}
	link := trace.SpanContextFromContext(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
		defer cancel()
		ctx, span := t.tel.shadowSpan(ctx, served, other, link)
		outcome := t.compareForms(ctx, q, served, other, page)
		if span != nil {
			span.SetAttributes(attrShadow.String(outcome))
			span.End()
		}
	}()
}

// compareForms reads q on the shadow form, compares, and re-checks a
// mismatch on both forms after the Recheck delay. It returns the outcome,
// for the comparison's span: "skipped", "equal", "transient", "persistent",
// or "unconfirmed" when the re-check could not run.
func (t *Table[T]) compareForms(ctx context.Context, q Query[T], served, other *layout, page *Page[T]) string {
	s := t.shadows
	q.shadow, q.report = true, nil
	shadowPage, err := q.Via(other.kind).Page(ctx)
	if err != nil {
		t.rollout.update(served.name, func(r *RolloutStats) { r.Skipped++ })
		t.tel.shadowOutcome(ctx, other, "skipped")
		return "skipped"
	}
	t.rollout.update(served.name, func(r *RolloutStats) { r.Shadowed++ })
	t.tel.shadowOutcome(ctx, other, "compared")
	first := t.pageMismatch(ctx, served, other, page, shadowPage)
	if first == nil {
		return "equal"
	}
	if s.o.Sleep(ctx, s.o.Recheck) != nil {
		return "unconfirmed"
	}
	again, err1 := q.Via(served.kind).Page(ctx)
	shadowAgain, err2 := q.Via(other.kind).Page(ctx)
	if err1 != nil || err2 != nil {
		return "unconfirmed"
	}
	m := t.pageMismatch(ctx, served, other, again, shadowAgain)
	if m == nil {
		t.rollout.update(served.name, func(r *RolloutStats) { r.Transient++ })
		t.tel.mismatch(ctx, other, first.Kind, "transient")
		return "transient"
	}
	t.rollout.update(served.name, func(r *RolloutStats) { r.Persistent++ })
	t.tel.mismatch(ctx, other, m.Kind, "persistent")
	m.Query = q.describe()
	if s.o.OnMismatch != nil {
		s.o.OnMismatch(*m)
	}
	return "persistent"
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
// on the other; nil when they agree.
func (t *Table[T]) pageMismatch(ctx context.Context, served, other *layout, a, b *Page[T]) *Mismatch {
	m := &Mismatch{Index: served.name, Served: served.kind, Shadow: other.kind}
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
			m.Kind, m.Keys, m.Detail = MismatchTombstone, leaked, "a form returned items the base table holds as deleted"
		case len(missing) > 0:
			m.Kind, m.Keys, m.Detail = MismatchMissing, missing, fmt.Sprintf("the %s form lacks items the %s form returned", other.kind, served.kind)
		default:
			m.Kind, m.Keys, m.Detail = MismatchExtra, extra, fmt.Sprintf("the %s form returned items the %s form did not", other.kind, served.kind)
		}
		return m
	}
	for i := range ka {
		if ka[i] != kb[i] {
			m.Kind, m.Keys = MismatchOrder, []string{ka[i], kb[i]}
			m.Detail = fmt.Sprintf("item %d is %s on the %s form and %s on the %s form", i, ka[i], served.kind, kb[i], other.kind)
			return m
		}
		if !reflect.DeepEqual(a.Items[i], b.Items[i]) {
			// The same item with other attribute values: one form is
			// behind the other.
			m.Kind, m.Keys = MismatchExtra, []string{ka[i]}
			m.Detail = fmt.Sprintf("item %s differs between the forms", ka[i])
			return m
		}
	}
	if (a.Cursor == "") != (b.Cursor == "") {
		m.Kind = MismatchPageBoundary
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

package ddbindex_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// TestShardedShapes checks sharded reads (shards = 2, 3, 7, 16) against an
// unsharded twin over the same data and against ground truth computed here,
// for key shapes TestShardedGroundTruth does not use: sort keys of three
// components (a string, a unixms time, a signed integer), RFC 3339 times
// stored in zones other than UTC, partitions of two components (a string
// and a signed integer), component values holding the bytes the key codec
// escapes, composite base keys, many entries sharing one index sort value
// (ordered by their base keys), tombstones at high density, Filter and
// Project, Exists, All with an early break, and cursors carried from page
// to page, between the sharded and the unsharded twin, across writes that
// delete items and change their index keys between pages.

// shxSeed returns the run's seed: DDBINDEX_SHX_SEED, else the clock.
func shxSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DDBINDEX_SHX_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (rerun with DDBINDEX_SHX_SEED=%d)", seed, seed)
	return seed
}

// shxCmp compares two component values of one type as the index orders
// them: strings bytewise, integers and times numerically.
func shxCmp(a, b any) int {
	switch a := a.(type) {
	case string:
		return strings.Compare(a, b.(string))
	case int64:
		return cmp.Compare(a, b.(int64))
	case time.Time:
		return a.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("shxCmp: %T", a))
}

// shxTuple compares a and b component by component over the shorter of
// the two: a tuple equals its own prefixes, as a condition on leading
// components needs.
func shxTuple(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := shxCmp(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// shxCond is a random sort condition: the condition, its name, and what it
// matches, given an entry's sort components.
type shxCond struct {
	cond  ddbindex.SortCondition
	name  string
	match func(sk []any) bool
}

// shxRandomCond returns a random condition on the leading components of
// the sort tuples in pool (those of the entries, so conditions hit them);
// strPos says which components are strings, for begins_with.
func shxRandomCond(rng *rand.Rand, pool [][]any, strPos []bool) shxCond {
	pick := func() []any { return pool[rng.IntN(len(pool))] }
	lead := func() []any { p := pick(); return p[:1+rng.IntN(len(p))] }
	switch rng.IntN(9) {
	case 0:
		return shxCond{name: "all", match: func([]any) bool { return true }}
	case 1:
		v := lead()
		return shxCond{ddbindex.Eq(v...), fmt.Sprintf("= %v", v), func(sk []any) bool { return shxTuple(sk, v) == 0 }}
	case 2:
		v := lead()
		return shxCond{ddbindex.Lt(v...), fmt.Sprintf("< %v", v), func(sk []any) bool { return shxTuple(sk, v) < 0 }}
	case 3:
		v := lead()
		return shxCond{ddbindex.Le(v...), fmt.Sprintf("<= %v", v), func(sk []any) bool { return shxTuple(sk, v) <= 0 }}
	case 4:
		v := lead()
		return shxCond{ddbindex.Gt(v...), fmt.Sprintf("> %v", v), func(sk []any) bool { return shxTuple(sk, v) > 0 }}
	case 5:
		v := lead()
		return shxCond{ddbindex.Ge(v...), fmt.Sprintf(">= %v", v), func(sk []any) bool { return shxTuple(sk, v) >= 0 }}
	case 6, 7:
		// Between bounds of different lengths, spanning components.
		a, b := pick(), pick()
		if shxTuple(a, b) > 0 {
			a, b = b, a
		}
		lo, hi := a[:1+rng.IntN(len(a))], b[:1+rng.IntN(len(b))]
		return shxCond{ddbindex.Between(ddbindex.K(lo...), ddbindex.K(hi...)), fmt.Sprintf("between %v %v", lo, hi),
			func(sk []any) bool { return shxTuple(sk, lo) >= 0 && shxTuple(sk, hi) <= 0 }}
	}
	// begins_with on a string component, after equal leading components.
	var at []int
	for i, s := range strPos {
		if s {
			at = append(at, i)
		}
	}
	i := at[rng.IntN(len(at))]
	v := pick()
	s := []rune(v[i].(string))
	p := string(s[:rng.IntN(len(s)+1)])
	if p == "" && rng.IntN(2) == 0 && len(s) > 0 {
		p = string(s[:1])
	}
	vals := append(slices.Clone(v[:i]), p)
	return shxCond{ddbindex.BeginsWith(vals...), fmt.Sprintf("begins_with %v", vals), func(sk []any) bool {
		return shxTuple(sk, v[:i]) == 0 && strings.HasPrefix(sk[i].(string), p)
	}}
}

// shxRead reads every page of q (limit items each) from the cursor after.
func shxRead[T any](t *testing.T, ctx context.Context, q ddbindex.Query[T], id func(T) string, limit int, after string) []shPage {
	t.Helper()
	return shxReadN(t, ctx, q, id, limit, after, 2000)
}

// shxReadN reads at most n pages of q (and the page after them, which
// shows whether the last of them leads to more: see shxRead).
func shxReadN[T any](t *testing.T, ctx context.Context, q ddbindex.Query[T], id func(T) string, limit int, after string, n int) []shPage {
	t.Helper()
	var pages []shPage
	cursor := after
	for {
		p, err := q.Limit(limit).After(cursor).Page(ctx)
		require.NoError(t, err)
		ids := []string{}
		for _, it := range p.Items {
			ids = append(ids, id(it))
		}
		if len(ids) == 0 && p.Cursor == "" && len(pages) > 0 {
			// A page whose look-ahead item would have cost another read
			// unit did not read it: its cursor led here, to nothing.
			pages[len(pages)-1].More = false
			return pages
		}
		if len(pages) == n {
			// This page after the n read showed whether the last of them
			// leads to more, as it does when the read goes on.
			return pages
		}
		pages = append(pages, shPage{IDs: ids, More: p.Cursor != ""})
		require.Less(t, len(pages), 2000, "pages do not end")
		if p.Cursor == "" {
			return pages
		}
		cursor = p.Cursor
	}
}

// shxReadCapped reads every item of q, limit a page, through calls that
// a cap may stop: each call must return an item or a new cursor.
func shxReadCapped[T any](t *testing.T, ctx context.Context, q ddbindex.Query[T], id func(T) string, limit int) []string {
	t.Helper()
	got := []string{}
	cursor := ""
	for calls := 0; ; calls++ {
		require.Less(t, calls, 3000, "capped calls do not end")
		p, err := q.Limit(limit).After(cursor).Page(ctx)
		var ce *ddbindex.Error
		if errors.As(err, &ce) {
			require.Equal(t, p.Cursor, ce.Cursor)
			require.NotEmpty(t, p.Cursor, "a capped call has a cursor")
			require.True(t, len(p.Items) > 0 || p.Cursor != cursor, "call %d: a capped call returns nothing and the cursor it was given", calls)
		} else {
			require.NoError(t, err)
		}
		for _, it := range p.Items {
			got = append(got, id(it))
		}
		if p.Cursor == "" {
			return got
		}
		cursor = p.Cursor
	}
}

func shxFlat(pages []shPage) []string {
	out := []string{}
	for _, p := range pages {
		out = append(out, p.IDs...)
	}
	return out
}

// shxCheckPages checks the page boundaries of pages, read limit at a time:
// every page but the last is full and followed by a cursor.
func shxCheckPages(t *testing.T, pages []shPage, limit int, label string) {
	t.Helper()
	for i, p := range pages {
		require.Equal(t, i < len(pages)-1, p.More, "%s: a cursor follows every page but the last", label)
		if i < len(pages)-1 {
			require.Len(t, p.IDs, limit, "%s: every page but the last is full", label)
		}
	}
}

// shxModel describes a model for the ground truth: an item's ID, partition
// components, sort components and the base key components that end its
// index sort key.
type shxModel[T any] struct {
	id   func(T) string
	part func(T) []any
	sort func(T) []any
	tie  func(T) []any
}

// truth returns the IDs of the items of live in partition part that match
// m, in the index's order.
func (x shxModel[T]) truth(live map[string]T, part []any, match func(T) bool, desc bool) []string {
	var out []T
	for _, it := range live {
		if p := x.part(it); len(p) == len(part) && shxTuple(p, part) == 0 && match(it) {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(shxTuple(x.sort(a), x.sort(b)), shxTuple(x.tie(a), x.tie(b)))
	})
	ids := []string{}
	for _, it := range out {
		ids = append(ids, x.id(it))
	}
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

// full is an item's whole position in the index order.
func (x shxModel[T]) full(it T) []any { return append(slices.Clone(x.sort(it)), x.tie(it)...) }

// shxLimits are the page sizes tried: 1, small ones, and more than any
// partition holds.
var shxLimits = []int{1, 2, 3, 5, 8, 13, 40, 1000}

// shxLimitFor picks a random limit that keeps the pages of n items few.
func shxLimitFor(rng *rand.Rand, n int) int {
	for {
		l := shxLimits[rng.IntN(len(shxLimits))]
		if n/l <= 25 {
			return l
		}
	}
}

// ---- model 1: a GSI on a soft-deleting table with a composite base key ----

type shxEv struct {
	_      ddbindex.TableSpec `ddbindex:"shx-ev,pk=PK,sk=SK,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"ev,type=gsi,name=shx-ev-1,pk=P1,sk=S1"`
	_      ddbindex.IndexSpec `ddbindex:"ev2,type=gsi,name=shx-ev-2,pk=P2,sk=S2,shards=2"`
	_      ddbindex.IndexSpec `ddbindex:"ev3,type=gsi,name=shx-ev-3,pk=P3,sk=S3,shards=3"`
	_      ddbindex.IndexSpec `ddbindex:"ev7,type=gsi,name=shx-ev-7,pk=P7,sk=S7,shards=7"`
	_      ddbindex.IndexSpec `ddbindex:"ev16,type=gsi,name=shx-ev-16,pk=P16,sk=S16,shards=16"`
	Tenant string             `dynamodbav:"tenant" ddbindex:"pk"`
	Seq    int64              `dynamodbav:"seq"    ddbindex:"sk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"ev.pk;ev2.pk;ev3.pk;ev7.pk;ev16.pk"`
	Kind   string             `dynamodbav:"kind"   ddbindex:"ev.sk:0;ev2.sk:0;ev3.sk:0;ev7.sk:0;ev16.sk:0"`
	At     time.Time          `dynamodbav:"at"     ddbindex:"ev.sk:1,format=unixms;ev2.sk:1,format=unixms;ev3.sk:1,format=unixms;ev7.sk:1,format=unixms;ev16.sk:1,format=unixms"`
	Score  int64              `dynamodbav:"score"  ddbindex:"ev.sk:2;ev2.sk:2;ev3.sk:2;ev7.sk:2;ev16.sk:2"`
	Body   string             `dynamodbav:"body"`
}

// shxEvView reads the 7-shard GSI under the unsharded one's logical name,
// so that cursors pass between the two.
type shxEvView struct {
	_      ddbindex.TableSpec `ddbindex:"shx-ev,pk=PK,sk=SK,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"ev,type=gsi,name=shx-ev-7,pk=P7,sk=S7,shards=7"`
	Tenant string             `dynamodbav:"tenant" ddbindex:"pk"`
	Seq    int64              `dynamodbav:"seq"    ddbindex:"sk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"ev.pk"`
	Kind   string             `dynamodbav:"kind"   ddbindex:"ev.sk:0"`
	At     time.Time          `dynamodbav:"at"     ddbindex:"ev.sk:1,format=unixms"`
	Score  int64              `dynamodbav:"score"  ddbindex:"ev.sk:2"`
	Body   string             `dynamodbav:"body"`
}

func shxEvID(tenant string, seq int64) string { return fmt.Sprintf("%q/%d", tenant, seq) }

// shxFilter is a Filter or a Project a query adds, and what it keeps.
type shxFilter[T any] struct {
	name    string
	filter  *expression.ConditionBuilder
	project []string
	match   func(T) bool
}

func shxApply[X any](q ddbindex.Query[X], f shxFilter[any]) ddbindex.Query[X] {
	if f.filter != nil {
		q = q.Filter(*f.filter)
	}
	if len(f.project) > 0 {
		q = q.Project(f.project...)
	}
	return q
}

// shxCase is one model's differential run.
type shxCase[T comparable, V any] struct {
	m        shxModel[T]
	live     map[string]T // live items by ID
	all      map[string]T // every item written, live or not
	parts    [][]any      // the partitions queried
	strPos   []bool       // the string sort components
	plain    string       // the unsharded index
	sharded  map[int]string
	w        *ddbindex.Table[T]
	wp       *ddbindex.Table[T] // w minting cursors without a next position (Options.PlainCursors)
	v        *ddbindex.Table[V] // the view: one sharded index under plain's name
	viewS    int
	viewID   func(V) string
	filters  []shxFilter[any]
	queries  int
	mutate   func(part []any) // writes between pages, keeping live and all
	mutateAt int              // every mutateAt-th query writes between pages
}

func (x shxCase[T, V]) run(t *testing.T, ctx context.Context, rng *rand.Rand) {
	shardNs := []int{2, 3, 7, 16}
	pool := func() [][]any {
		var out [][]any
		for _, id := range mapKeys(x.all) {
			out = append(out, x.m.sort(x.all[id]))
		}
		return out
	}
	for qi := range x.queries {
		sc := shxRandomCond(rng, pool(), x.strPos)
		part := x.parts[rng.IntN(len(x.parts))]
		desc := rng.IntN(2) == 0
		f := x.filters[rng.IntN(len(x.filters))]
		match := func(it T) bool { return sc.match(x.m.sort(it)) && f.match(it) }
		want := x.m.truth(x.live, part, match, desc)
		limit := shxLimitFor(rng, len(want))
		w, plainCursors := x.w, x.wp != nil && rng.IntN(2) == 0
		if plainCursors {
			w = x.wp
		}
		label := fmt.Sprintf("query %d: partition %q %s %s desc=%t limit %d plain cursors %t", qi, part, sc.name, f.name, desc, limit, plainCursors)
		query := func(index string) ddbindex.Query[T] {
			q := shxApply(w.Query(index, part...).Where(sc.cond), f)
			if desc {
				q = q.Desc()
			}
			return q
		}
		vquery := func() ddbindex.Query[V] {
			q := shxApply(x.v.Query(x.plain, part...).Where(sc.cond), f)
			if desc {
				q = q.Desc()
			}
			return q
		}
		plain := shxRead(t, ctx, query(x.plain), x.m.id, limit, "")
		shxCheckPages(t, plain, limit, label)
		require.Equal(t, want, shxFlat(plain), "%s: the unsharded twin against ground truth", label)
		for _, S := range []int{shardNs[qi%4], shardNs[rng.IntN(4)]} {
			if x.sharded[S] != "" {
				require.Equal(t, plain, shxRead(t, ctx, query(x.sharded[S]), x.m.id, limit, ""), "%s: %d shards", label, S)
			}
		}
		if x.v != nil {
			require.Equal(t, plain, shxRead(t, ctx, vquery(), x.viewID, limit, ""), "%s: the view of %d shards", label, x.viewS)
		}

		// All with an early break, All with a Limit, Exists.
		S := shardNs[rng.IntN(4)]
		for x.sharded[S] == "" {
			S = shardNs[rng.IntN(4)]
		}
		stop := rng.IntN(len(want) + 2)
		got := []string{}
		for it, err := range query(x.sharded[S]).All(ctx) {
			require.NoError(t, err)
			if len(got) == stop {
				break
			}
			got = append(got, x.m.id(it))
		}
		require.Equal(t, want[:min(stop, len(want))], got, "%s: All on %d shards, broken after %d", label, S, stop)
		got = got[:0]
		for it, err := range query(x.sharded[S]).Limit(limit).All(ctx) {
			require.NoError(t, err)
			got = append(got, x.m.id(it))
		}
		require.Equal(t, want[:min(limit, len(want))], got, "%s: All with Limit on %d shards", label, S)
		ok, err := query(x.sharded[S]).Exists(ctx)
		require.NoError(t, err)
		require.Equal(t, len(want) > 0, ok, "%s: Exists on %d shards", label, S)

		// MaxReadUnits: every capped call returns a cursor from which the
		// rest follows, and makes progress.
		if rng.IntN(2) == 0 {
			units := []float64{0.5, 1, 2}[rng.IntN(3)]
			require.Equal(t, want, shxReadCapped(t, ctx, query(x.sharded[S]).MaxReadUnits(units), x.m.id, limit),
				"%s: %d shards, at most %g read units a call", label, S, units)
		}

		// Cursors between the twins: each continues the other's first page.
		if len(plain) > 1 && x.v != nil {
			p0, err := query(x.plain).Limit(limit).Page(ctx)
			require.NoError(t, err)
			pv, err := vquery().Limit(limit).Page(ctx)
			require.NoError(t, err)
			n := min(len(plain)-1, 3)
			require.Equal(t, plain[1:1+n], shxReadN(t, ctx, vquery(), x.viewID, limit, p0.Cursor, n), "%s: sharded after unsharded", label)
			require.Equal(t, plain[1:1+n], shxReadN(t, ctx, query(x.plain), x.m.id, limit, pv.Cursor, n), "%s: unsharded after sharded", label)
		}

		// Writes between pages: read a first page on both twins, delete,
		// re-create and re-key items, then continue both from their
		// cursors.
		if qi%x.mutateAt != 0 || len(plain) < 2 || x.v == nil {
			continue
		}
		p0, err := query(x.plain).Limit(limit).Page(ctx)
		require.NoError(t, err)
		pv, err := vquery().Limit(limit).Page(ctx)
		require.NoError(t, err)
		before := maps.Clone(x.live)
		x.mutate(part)
		restPlain := shxRead(t, ctx, query(x.plain), x.m.id, limit, p0.Cursor)
		restView := shxRead(t, ctx, vquery(), x.viewID, limit, pv.Cursor)
		if !plainCursors && p0.Cursor == pv.Cursor {
			// (A cursor that carries the last position evaluated skips
			// less than one that carries the next live item: an item
			// written between the two may come in one and not the other.
			// shxCheckResumed below holds each to what it may return.)
			require.Equal(t, restPlain, restView, "%s: after writes, the twins continue alike", label)
		}
		require.Equal(t, restPlain, shxRead(t, ctx, vquery(), x.viewID, limit, p0.Cursor), "%s: after writes, sharded after unsharded", label)
		shxCheckResumed(t, x.m, before, x.live, part, match, desc, plain[0].IDs, shxFlat(restView), label)
		shxCheckResumed(t, x.m, before, x.live, part, match, desc, plain[0].IDs, shxFlat(restPlain), label)
	}
}

func shxTables(t *testing.T, optFns ...func(*ddbindex.Options)) func(*ddbindex.Options) {
	prefix := ddbtest.Name(t, "")
	return func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
		for _, f := range optFns {
			f(o)
		}
	}
}

// shxCreate creates the tables of T under names and returns a Table of T
// on them.
func shxCreate[T any](t *testing.T, c *dynamodb.Client, names func(*ddbindex.Options)) *ddbindex.Table[T] {
	w, err := ddbindex.New[T](c, names)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(w, false) {
		ddbtest.CreateTable(t, c, in)
	}
	return w
}

// shxPlain makes a Table mint cursors without a next position, so that
// every page starts strictly after the last item of the one before.
func shxPlain(o *ddbindex.Options) { o.PlainCursors = true }

func shxBodyFilter[T any](match func(T) bool) []shxFilter[any] {
	lt := expression.Name("body").LessThan(expression.Value("5"))
	return []shxFilter[any]{
		{name: "", match: func(any) bool { return true }},
		{name: "body<5", filter: &lt, match: func(it any) bool { return match(it.(T)) }},
	}
}

func TestShardedShapesGSI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	names := shxTables(t)
	w := shxCreate[shxEv](t, c, names)
	wp, err := ddbindex.New[shxEv](c, names, shxPlain)
	require.NoError(t, err)
	v, err := ddbindex.New[shxEvView](c, names)
	require.NoError(t, err)
	seed := shxSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	// Few kinds, times and scores, so that many entries share one index
	// sort value and their base keys order them; times before 1970 have
	// negative unixms texts.
	kinds := []string{"a", "a#", "a#b", "a$", "a\x01", "ä", "b\\c"}
	base := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	ats := []time.Time{base, base.Add(time.Second), base.Add(1500 * time.Millisecond), base.AddDate(57, 0, 0)}
	scores := []int64{-1000, -7, -1, 0, 3, 42}
	tenants := []string{"t", "t#", "t#1", "t$", "t\\", "ü", "t\x02"}
	density := map[string]float64{"x": 0, "x#1": 0.5, "x$": 0.9, "日本": 0.3}
	feeds := []string{"x", "x#1", "x$", "日本"}

	m := shxModel[shxEv]{
		id:   func(it shxEv) string { return shxEvID(it.Tenant, it.Seq) },
		part: func(it shxEv) []any { return []any{it.Feed} },
		sort: func(it shxEv) []any { return []any{it.Kind, it.At, it.Score} },
		tie:  func(it shxEv) []any { return []any{it.Tenant, it.Seq} },
	}
	live := map[string]shxEv{}
	all := map[string]shxEv{}
	randomItem := func(tenant string, seq int64, feed string) shxEv {
		return shxEv{Tenant: tenant, Seq: seq, Feed: feed, Kind: kinds[rng.IntN(len(kinds))],
			At: ats[rng.IntN(len(ats))], Score: scores[rng.IntN(len(scores))], Body: strconv.Itoa(rng.IntN(10))}
	}
	for _, feed := range feeds {
		for range 70 {
			it := randomItem(tenants[rng.IntN(len(tenants))], int64(rng.IntN(40)-20), feed)
			id := m.id(it)
			if _, ok := all[id]; ok {
				continue
			}
			_, err := w.Put(ctx, it)
			require.NoError(t, err)
			all[id] = it
			if rng.Float64() < density[feed] {
				require.NoError(t, w.Delete(ctx, it))
				continue
			}
			live[id] = it
		}
	}
	// A run of tombstones sharing one sort value in feed "x".
	for i := range 30 {
		it := shxEv{Tenant: "run", Seq: int64(i), Feed: "x", Kind: "a#", At: ats[1], Score: -1}
		_, err := w.Put(ctx, it)
		require.NoError(t, err)
		require.NoError(t, w.Delete(ctx, it))
		all[m.id(it)] = it
	}
	t.Logf("%d items written, %d live", len(all), len(live))

	mutate := func(part []any) {
		for range 12 {
			ids := mapKeys(all)
			it := all[ids[rng.IntN(len(ids))]]
			_, isLive := live[m.id(it)]
			switch {
			case isLive && rng.IntN(3) == 0:
				require.NoError(t, w.Delete(ctx, it))
				delete(live, m.id(it))
			case isLive:
				nw := it
				nw.Kind, nw.At, nw.Score = kinds[rng.IntN(len(kinds))], ats[rng.IntN(len(ats))], scores[rng.IntN(len(scores))]
				if rng.IntN(4) == 0 {
					nw.Feed = part[0].(string)
				}
				require.NoError(t, w.Update(ctx, it, ddbindex.Set("kind", nw.Kind).
					Set("at", nw.At).
					Set("score", nw.Score).
					Set("feed", nw.Feed)))
				live[m.id(nw)], all[m.id(nw)] = nw, nw
			default: // re-create a deleted one, maybe elsewhere
				nw := randomItem(it.Tenant, it.Seq, part[0].(string))
				_, err := w.Put(ctx, nw)
				require.NoError(t, err)
				live[m.id(nw)], all[m.id(nw)] = nw, nw
			}
		}
	}
	var parts [][]any
	for _, f := range feeds {
		parts = append(parts, []any{f})
	}
	filters := append(shxBodyFilter(func(it shxEv) bool { return it.Body < "5" }),
		shxFilter[any]{name: "project", project: []string{"body", "tenant", "seq"}, match: func(any) bool { return true }})
	shxCase[shxEv, shxEvView]{
		m: m, live: live, all: all, parts: parts, strPos: []bool{true, false, false},
		plain: "ev", sharded: map[int]string{2: "ev2", 3: "ev3", 7: "ev7", 16: "ev16"},
		w: w, wp: wp, v: v, viewS: 7, viewID: func(it shxEvView) string { return shxEvID(it.Tenant, it.Seq) },
		filters: filters, queries: 16, mutate: mutate, mutateAt: 3,
	}.run(t, ctx, rng)
}

// mapKeys returns m's keys, sorted (map order is random, the seed is not).
func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// shxCheckResumed checks what a query returned after its first page (first)
// when items were written between the pages, against the documented cursor
// semantics: every item live and unchanged throughout that follows the
// page's last item is returned; every item returned is live now, matches,
// follows the page's last item, and comes once, in order; an item of the
// first page comes again only if its key changed.
func shxCheckResumed[T comparable](t *testing.T, m shxModel[T], before, after map[string]T, part []any, match func(T) bool, desc bool, first, rest []string, label string) {
	t.Helper()
	last, ok := before[first[len(first)-1]]
	require.True(t, ok)
	lastPos := m.full(last)
	follows := func(it T) bool {
		c := shxTuple(m.full(it), lastPos)
		return (c > 0) != desc && c != 0
	}
	inQuery := func(it T) bool {
		p := m.part(it)
		return len(p) == len(part) && shxTuple(p, part) == 0 && match(it)
	}
	returned := map[string]bool{}
	for i, id := range rest {
		require.False(t, returned[id], "%s: %s returned twice after the first page", label, id)
		returned[id] = true
		it, ok := after[id]
		require.True(t, ok, "%s: %s is returned but not live", label, id)
		require.True(t, inQuery(it) && follows(it), "%s: %s is returned but does not follow the first page in the query", label, id)
		if i > 0 {
			c := shxTuple(m.full(after[rest[i-1]]), m.full(it))
			require.True(t, (c < 0) != desc && c != 0, "%s: %s out of order", label, id)
		}
		if slices.Contains(first, id) {
			require.NotEqual(t, before[id], it, "%s: %s of the first page comes again unchanged", label, id)
		}
	}
	for id, it := range before {
		if now, ok := after[id]; ok && now == it && inQuery(it) && follows(it) {
			require.True(t, returned[id], "%s: %s, live and unchanged throughout, is skipped", label, id)
		}
	}
}

// ---- model 2: a GSI with a partition of two components and RFC 3339 times --

type shxReg struct {
	_      ddbindex.TableSpec `ddbindex:"shx-reg"`
	_      ddbindex.IndexSpec `ddbindex:"reg,type=gsi,name=shx-reg-1,pk=P1,sk=S1"`
	_      ddbindex.IndexSpec `ddbindex:"reg2,type=gsi,name=shx-reg-2,pk=P2,sk=S2,shards=2"`
	_      ddbindex.IndexSpec `ddbindex:"reg3,type=gsi,name=shx-reg-3,pk=P3,sk=S3,shards=3"`
	_      ddbindex.IndexSpec `ddbindex:"reg7,type=gsi,name=shx-reg-7,pk=P7,sk=S7,shards=7"`
	_      ddbindex.IndexSpec `ddbindex:"reg16,type=gsi,name=shx-reg-16,pk=P16,sk=S16,shards=16"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Region string             `dynamodbav:"region" ddbindex:"reg.pk:0,label=R#;reg2.pk:0,label=R#;reg3.pk:0,label=R#;reg7.pk:0,label=R#;reg16.pk:0,label=R#"`
	Bucket int64              `dynamodbav:"bucket" ddbindex:"reg.pk:1;reg2.pk:1;reg3.pk:1;reg7.pk:1;reg16.pk:1"`
	When   time.Time          `dynamodbav:"when"   ddbindex:"reg.sk:0;reg2.sk:0;reg3.sk:0;reg7.sk:0;reg16.sk:0"`
	Name   string             `dynamodbav:"name"   ddbindex:"reg.sk:1,label=N$;reg2.sk:1,label=N$;reg3.sk:1,label=N$;reg7.sk:1,label=N$;reg16.sk:1,label=N$"`
	Body   string             `dynamodbav:"body"`
}

type shxRegView struct {
	_      ddbindex.TableSpec `ddbindex:"shx-reg"`
	_      ddbindex.IndexSpec `ddbindex:"reg,type=gsi,name=shx-reg-16,pk=P16,sk=S16,shards=16"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Region string             `dynamodbav:"region" ddbindex:"reg.pk:0,label=R#"`
	Bucket int64              `dynamodbav:"bucket" ddbindex:"reg.pk:1"`
	When   time.Time          `dynamodbav:"when"   ddbindex:"reg.sk:0"`
	Name   string             `dynamodbav:"name"   ddbindex:"reg.sk:1,label=N$"`
	Body   string             `dynamodbav:"body"`
}

func TestShardedShapesPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	names := shxTables(t)
	w := shxCreate[shxReg](t, c, names)
	wp, err := ddbindex.New[shxReg](c, names, shxPlain)
	require.NoError(t, err)
	v, err := ddbindex.New[shxRegView](c, names)
	require.NoError(t, err)
	seed := shxSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x7e9))

	// Times stored in zones east and west of UTC, whose wall clocks sort
	// otherwise than their instants; one instant in three zones ties.
	ist, pst := time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	whens := []time.Time{t0, t0.In(ist), t0.In(pst), t0.Add(time.Nanosecond).In(pst), t0.Add(-time.Hour).In(ist),
		t0.Add(9 * time.Hour).In(pst), time.Date(1999, 12, 31, 23, 59, 59, 500_000_000, ist), t0.AddDate(0, 0, 1)}
	nameVals := []string{"n", "n#", "n#1", "n$", "n\\", "ñ", "n\x03", "no"}
	parts := [][]any{{"eu", int64(-3)}, {"eu", int64(3)}, {"eu#-3", int64(0)}, {"", int64(-1)}, {"日本$", int64(-100)}, {"eu", int64(0)}}
	m := shxModel[shxReg]{
		id:   func(it shxReg) string { return it.ID },
		part: func(it shxReg) []any { return []any{it.Region, it.Bucket} },
		sort: func(it shxReg) []any { return []any{it.When, it.Name} },
		tie:  func(it shxReg) []any { return []any{it.ID} },
	}
	live := map[string]shxReg{}
	all := map[string]shxReg{}
	randomItem := func(id string, part []any) shxReg {
		return shxReg{ID: id, Region: part[0].(string), Bucket: part[1].(int64), When: whens[rng.IntN(len(whens))],
			Name: nameVals[rng.IntN(len(nameVals))], Body: strconv.Itoa(rng.IntN(10))}
	}
	ids := []string{"i", "i#", "i$", "i\\", "ï", "i\x04"}
	for i := range 220 {
		id := fmt.Sprintf("%s%03d", ids[i%len(ids)], i)
		it := randomItem(id, parts[rng.IntN(len(parts))])
		_, err := w.Put(ctx, it)
		require.NoError(t, err)
		all[id] = it
		if rng.IntN(4) == 0 {
			require.NoError(t, w.Delete(ctx, it))
			continue
		}
		live[id] = it
	}
	mutate := func(part []any) {
		for range 12 {
			keys := mapKeys(all)
			it := all[keys[rng.IntN(len(keys))]]
			_, isLive := live[it.ID]
			switch {
			case isLive && rng.IntN(3) == 0:
				require.NoError(t, w.Delete(ctx, it))
				delete(live, it.ID)
			case isLive:
				nw := it
				nw.When, nw.Name = whens[rng.IntN(len(whens))], nameVals[rng.IntN(len(nameVals))]
				if rng.IntN(3) == 0 {
					nw.Region, nw.Bucket = part[0].(string), part[1].(int64)
				}
				require.NoError(t, w.Update(ctx, it, ddbindex.Set("when", nw.When).
					Set("name", nw.Name).
					Set("region", nw.Region).
					Set("bucket", nw.Bucket)))
				live[it.ID], all[it.ID] = nw, nw
			default:
				nw := randomItem(it.ID, part)
				_, err := w.Put(ctx, nw)
				require.NoError(t, err)
				live[it.ID], all[it.ID] = nw, nw
			}
		}
	}
	filters := append(shxBodyFilter(func(it shxReg) bool { return it.Body < "5" }),
		shxFilter[any]{name: "project", project: []string{"name"}, match: func(any) bool { return true }})
	shxCase[shxReg, shxRegView]{
		m: m, live: live, all: all, parts: parts, strPos: []bool{false, true},
		plain: "reg", sharded: map[int]string{2: "reg2", 3: "reg3", 7: "reg7", 16: "reg16"},
		w: w, wp: wp, v: v, viewS: 16, viewID: func(it shxRegView) string { return it.ID },
		filters: filters, queries: 16, mutate: mutate, mutateAt: 3,
	}.run(t, ctx, rng)
}

// ---- model 3: index tables, a native base key, a native unsharded partition --

type shxTab struct {
	_     ddbindex.TableSpec `ddbindex:"shx-tab"`
	_     ddbindex.IndexSpec `ddbindex:"by,type=table,table=shx-by-1"`
	_     ddbindex.IndexSpec `ddbindex:"by2,type=table,table=shx-by-2,shards=2"`
	_     ddbindex.IndexSpec `ddbindex:"by3,type=table,table=shx-by-3,shards=3"`
	_     ddbindex.IndexSpec `ddbindex:"by7,type=table,table=shx-by-7,shards=7"`
	_     ddbindex.IndexSpec `ddbindex:"by16,type=table,table=shx-by-16,shards=16"`
	Owner string             `dynamodbav:"owner" ddbindex:"pk"`
	N     int64              `dynamodbav:"n"     ddbindex:"sk"`
	Group string             `dynamodbav:"group" ddbindex:"by.pk;by2.pk;by3.pk;by7.pk;by16.pk"`
	Rank  int64              `dynamodbav:"rank"  ddbindex:"by.sk:0;by2.sk:0;by3.sk:0;by7.sk:0;by16.sk:0"`
	Tag   string             `dynamodbav:"tag"   ddbindex:"by.sk:1;by2.sk:1;by3.sk:1;by7.sk:1;by16.sk:1"`
	Body  string             `dynamodbav:"body"`
}

type shxTabView struct {
	_     ddbindex.TableSpec `ddbindex:"shx-tab"`
	_     ddbindex.IndexSpec `ddbindex:"by,type=table,table=shx-by-3,shards=3"`
	Owner string             `dynamodbav:"owner" ddbindex:"pk"`
	N     int64              `dynamodbav:"n"     ddbindex:"sk"`
	Group string             `dynamodbav:"group" ddbindex:"by.pk"`
	Rank  int64              `dynamodbav:"rank"  ddbindex:"by.sk:0"`
	Tag   string             `dynamodbav:"tag"   ddbindex:"by.sk:1"`
	Body  string             `dynamodbav:"body"`
}

func shxTabID(owner string, n int64) string { return fmt.Sprintf("%q/%d", owner, n) }

// TestShardedShapesIndexTable: index tables kept by write-through where the
// server has transactions, else by Apply with the base items' images; items
// move (a new base key), change their index keys and are deleted between
// pages.
func TestShardedShapesIndexTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	through := ddbtest.Has(ddbtest.Transactions)
	names := shxTables(t, func(o *ddbindex.Options) { o.WriteThrough = through })
	w := shxCreate[shxTab](t, c, names)
	wp, err := ddbindex.New[shxTab](c, names, shxPlain)
	require.NoError(t, err)
	v, err := ddbindex.New[shxTabView](c, names)
	require.NoError(t, err)
	seed := shxSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x7ab))
	t.Logf("write-through: %t", through)

	version := int64(0)
	apply := func(old, nw *shxTab) {
		if through {
			return
		}
		var ch ddbindex.Change
		var err error
		if old != nil {
			ch.Old, err = w.Marshal(*old)
			require.NoError(t, err)
		}
		if nw != nil {
			ch.New, err = w.Marshal(*nw)
			require.NoError(t, err)
		}
		version++
		ch.Version = strconv.FormatInt(version, 10)
		_, err = w.Apply(ctx, []ddbindex.Change{ch})
		require.NoError(t, err)
	}
	m := shxModel[shxTab]{
		id:   func(it shxTab) string { return shxTabID(it.Owner, it.N) },
		part: func(it shxTab) []any { return []any{it.Group} },
		sort: func(it shxTab) []any { return []any{it.Rank, it.Tag} },
		tie:  func(it shxTab) []any { return []any{it.Owner, it.N} },
	}
	live := map[string]shxTab{}
	all := map[string]shxTab{}
	groups := []string{"g", "g#0", "g#1", "g$", "日本"}
	density := map[string]float64{"g": 0, "g#": 0.3, "g#0": 0.85, "g#1": 0.5, "g$": 0.95, "日本": 0.6, "g\\": 0.2}
	ranks := []int64{-50, -2, -1, 0, 9, 10}
	tags := []string{"k", "k#", "k$", "k\\", "kö", "k\x05", "l"}
	owners := []string{"o", "o#", "o$", "o\\", "ö", "o\x06"}
	randomItem := func(owner string, n int64, group string) shxTab {
		return shxTab{Owner: owner, N: n, Group: group, Rank: ranks[rng.IntN(len(ranks))], Tag: tags[rng.IntN(len(tags))], Body: strconv.Itoa(rng.IntN(10))}
	}
	put := func(old *shxTab, nw shxTab) {
		_, err := w.Put(ctx, nw)
		require.NoError(t, err)
		apply(old, &nw)
		live[m.id(nw)], all[m.id(nw)] = nw, nw
	}
	del := func(it shxTab) {
		require.NoError(t, w.Delete(ctx, it))
		apply(&it, nil)
		delete(live, m.id(it))
	}
	for _, g := range groups {
		for range 32 {
			it := randomItem(owners[rng.IntN(len(owners))], int64(rng.IntN(60)-30), g)
			if _, ok := all[m.id(it)]; ok {
				continue
			}
			put(nil, it)
			if rng.Float64() < density[g] {
				del(it)
			}
		}
	}
	t.Logf("%d items written, %d live", len(all), len(live))
	mutate := func(part []any) {
		for range 12 {
			keys := mapKeys(all)
			it := all[keys[rng.IntN(len(keys))]]
			_, isLive := live[m.id(it)]
			switch {
			case isLive && rng.IntN(3) == 0:
				del(it)
			case isLive && rng.IntN(2) == 0: // a new base key, same index values
				to := it
				to.N = int64(rng.IntN(60) - 30)
				if _, taken := all[m.id(to)]; taken {
					continue
				}
				if through {
					_, err := w.Move(ctx, it, to)
					require.NoError(t, err)
					delete(live, m.id(it))
					live[m.id(to)], all[m.id(to)] = to, to
				} else {
					del(it)
					put(nil, to)
				}
			case isLive:
				nw := it
				nw.Rank, nw.Tag = ranks[rng.IntN(len(ranks))], tags[rng.IntN(len(tags))]
				if rng.IntN(3) == 0 {
					nw.Group = part[0].(string)
				}
				put(&it, nw)
			default:
				put(nil, randomItem(it.Owner, it.N, part[0].(string)))
			}
		}
	}
	var parts [][]any
	for _, g := range groups {
		parts = append(parts, []any{g})
	}
	filters := append(shxBodyFilter(func(it shxTab) bool { return it.Body < "5" }),
		shxFilter[any]{name: "project", project: []string{"tag", "owner", "n"}, match: func(any) bool { return true }})
	shxCase[shxTab, shxTabView]{
		m: m, live: live, all: all, parts: parts, strPos: []bool{false, true},
		plain: "by", sharded: map[int]string{2: "by2", 3: "by3", 7: "by7", 16: "by16"},
		w: w, wp: wp, v: v, viewS: 3, viewID: func(it shxTabView) string { return shxTabID(it.Owner, it.N) },
		filters: filters, queries: 12, mutate: mutate, mutateAt: 2,
	}.run(t, ctx, rng)
}

// ---- model 4: sharded GSIs without sort components, and with base key
// components in their own keys ----

type shxBare struct {
	_      ddbindex.TableSpec `ddbindex:"shx-bare,pk=PK,sk=SK,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"all5,type=gsi,name=shx-all-5,shards=5"`
	_      ddbindex.IndexSpec `ddbindex:"mine,type=gsi,name=shx-mine-1,pk=MP,sk=MS"`
	_      ddbindex.IndexSpec `ddbindex:"mine2,type=gsi,name=shx-mine-2,pk=MP2,sk=MS2,shards=2"`
	_      ddbindex.IndexSpec `ddbindex:"mine16,type=gsi,name=shx-mine-16,pk=MP16,sk=MS16,shards=16"`
	Tenant string             `dynamodbav:"tenant" ddbindex:"pk;mine.pk;mine2.pk;mine16.pk"`
	Seq    int64              `dynamodbav:"seq"    ddbindex:"sk;mine.sk:1;mine2.sk:1;mine16.sk:1"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"all5.pk"`
	Kind   string             `dynamodbav:"kind"   ddbindex:"mine.sk:0;mine2.sk:0;mine16.sk:0"`
	Body   string             `dynamodbav:"body"`
}

// TestShardedShapesBare: a sharded GSI with a partition alone (its sort key
// is the base key), and one whose partition and sort key hold the whole
// base key (its sort key has no base key suffix), against ground truth and
// an unsharded twin.
func TestShardedShapesBare(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	names := shxTables(t)
	w := shxCreate[shxBare](t, c, names)
	wp, err := ddbindex.New[shxBare](c, names, shxPlain)
	require.NoError(t, err)
	seed := shxSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0xba7e))
	tenants := []string{"t", "t#", "t$", "ü"}
	// Kinds long enough that sort keys reach DynamoDB's 1,024-byte limit
	// (kind, '#', a seq of two or three bytes): the key after such a key
	// does not fit a key condition.
	long := strings.Repeat("x", 1020)
	kinds := []string{"k", "k#", "k$", "l", long, long[:1019] + "z", long[:1019] + "y"}
	live, all := map[string]shxBare{}, map[string]shxBare{}
	id := func(it shxBare) string { return shxEvID(it.Tenant, it.Seq) }
	for range 200 {
		it := shxBare{Tenant: tenants[rng.IntN(len(tenants))], Seq: int64(rng.IntN(80) - 40), Feed: []string{"f", "f#0"}[rng.IntN(2)],
			Kind: kinds[rng.IntN(len(kinds))], Body: strconv.Itoa(rng.IntN(10))}
		if _, ok := all[id(it)]; ok {
			continue
		}
		_, err := w.Put(ctx, it)
		require.NoError(t, err)
		all[id(it)] = it
		if rng.IntN(2) == 0 {
			require.NoError(t, w.Delete(ctx, it))
			continue
		}
		live[id(it)] = it
	}
	// Sort keys of exactly 1,024 bytes (kind, '#', a two-digit seq) in
	// partition "t#", one in four deleted.
	for _, k := range kinds[4:] {
		for seq := int64(10); seq < 18; seq++ {
			it := shxBare{Tenant: "t#", Seq: seq, Feed: "f", Kind: k, Body: "1"}
			if _, ok := all[id(it)]; ok {
				continue
			}
			_, err := w.Put(ctx, it)
			require.NoError(t, err)
			all[id(it)] = it
			if seq%4 == 1 {
				require.NoError(t, w.Delete(ctx, it))
				continue
			}
			live[id(it)] = it
		}
	}
	filters := shxBodyFilter(func(it shxBare) bool { return it.Body < "5" })
	var tparts, fparts [][]any
	for _, tn := range tenants {
		tparts = append(tparts, []any{tn})
	}
	fparts = [][]any{{"f"}, {"f#0"}}
	shxCase[shxBare, shxBare]{
		m: shxModel[shxBare]{id: id, part: func(it shxBare) []any { return []any{it.Tenant} },
			sort: func(it shxBare) []any { return []any{it.Kind, it.Seq} }, tie: func(shxBare) []any { return nil }},
		live: live, all: all, parts: tparts, strPos: []bool{true, false},
		plain: "mine", sharded: map[int]string{2: "mine2", 16: "mine16"},
		w: w, wp: wp, filters: filters, queries: 10, mutateAt: 1,
	}.run(t, ctx, rng)
	// After a key of 1,024 bytes, no longer key fits a key condition: pages
	// of one item with plain cursors, under conditions with both bounds,
	// start after such keys.
	mine := shxModel[shxBare]{id: id, part: func(it shxBare) []any { return []any{it.Tenant} },
		sort: func(it shxBare) []any { return []any{it.Kind, it.Seq} }, tie: func(shxBare) []any { return nil }}
	var longs [][]any
	for _, it := range live {
		if it.Tenant == "t#" && len(it.Kind) >= 1020 {
			longs = append(longs, []any{it.Kind, it.Seq})
		}
	}
	require.GreaterOrEqual(t, len(longs), 2, "live items with long kinds in partition t#")
	slices.SortFunc(longs, shxTuple)
	gtAt := longs[len(longs)/2-1]
	gtLong := shxCond{ddbindex.Gt(gtAt...), fmt.Sprintf("> %.3s…%v", gtAt[0], gtAt[1:]),
		func(sk []any) bool { return shxTuple(sk, gtAt) > 0 }}
	for _, sc := range []shxCond{
		{ddbindex.Lt("y"), "< y", func(sk []any) bool { return sk[0].(string) < "y" }},
		{ddbindex.BeginsWith("xx"), "begins_with xx", func(sk []any) bool { return strings.HasPrefix(sk[0].(string), "xx") }},
		{ddbindex.Between(ddbindex.K(long, int64(12)), ddbindex.K(long[:1019]+"z")), "between long",
			func(sk []any) bool {
				return shxTuple(sk, []any{long, int64(12)}) >= 0 && shxTuple(sk, []any{long[:1019] + "z"}) <= 0
			}},
		// A lower bound of a whole long key, whose successor may not fit:
		// the range the shards read then includes the bound's own key,
		// which the merge drops in either order.
		gtLong,
	} {
		for _, desc := range []bool{false, true} {
			want := mine.truth(live, []any{"t#"}, func(it shxBare) bool { return sc.match(mine.sort(it)) }, desc)
			require.NotEmpty(t, want)
			for index, limit := range map[string]int{"mine": 1, "mine2": 2, "mine16": 1} {
				{
					q := wp.Query(index, "t#").Where(sc.cond)
					if desc {
						q = q.Desc()
					}
					label := fmt.Sprintf("%s %s desc=%t limit %d", index, sc.name, desc, limit)
					pages := shxRead(t, ctx, q, id, limit, "")
					shxCheckPages(t, pages, limit, label)
					require.Equal(t, want, shxFlat(pages), label)
				}
			}
		}
	}

	// No sort components: no condition but none, so the pool is empty
	// tuples and every condition drawn is "all".
	for range 8 {
		part := fparts[rng.IntN(2)]
		desc := rng.IntN(2) == 0
		m := shxModel[shxBare]{id: id, part: func(it shxBare) []any { return []any{it.Feed} },
			sort: func(shxBare) []any { return nil }, tie: func(it shxBare) []any { return []any{it.Tenant, it.Seq} }}
		want := m.truth(live, part, func(shxBare) bool { return true }, desc)
		limit := shxLimitFor(rng, len(want))
		q := w.Query("all5", part...)
		if rng.IntN(2) == 0 {
			q = wp.Query("all5", part...)
		}
		if desc {
			q = q.Desc()
		}
		pages := shxRead(t, ctx, q, id, limit, "")
		label := fmt.Sprintf("all5 %q desc=%t limit %d", part, desc, limit)
		shxCheckPages(t, pages, limit, label)
		require.Equal(t, want, shxFlat(pages), label)
		ok, err := q.Exists(ctx)
		require.NoError(t, err)
		require.Equal(t, len(want) > 0, ok, label)
	}
}

// TestShardedCapAfterLongestKey: sort keys of DynamoDB's full 1,024 bytes,
// read one item a call on a sharded index under a cap of one round, each
// call on a Table that has not read the index before (so every shard's
// first request asks for one entry). A call that starts after such a key,
// under a condition with an upper bound, cannot exclude it in the key
// condition (BETWEEN takes inclusive bounds, and the next key is too long):
// the shard that holds it reads it again and the merge drops it. Every call
// must still return an item or a cursor that moves on, and the calls
// together the whole partition.
func TestShardedCapAfterLongestKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	names := shxTables(t)
	w := shxCreate[shxBare](t, c, names)
	long := strings.Repeat("x", 1020)
	kinds := []string{long, long[:1019] + "y", long[:1019] + "z"}
	id := func(it shxBare) string { return shxEvID(it.Tenant, it.Seq) }
	var want []string
	for k := range kinds {
		for seq := int64(10 + k); seq < 40; seq += 3 {
			it := shxBare{Tenant: "t", Seq: seq, Feed: "f", Kind: kinds[k], Body: "1"}
			_, err := w.Put(ctx, it)
			require.NoError(t, err)
			want = append(want, id(it))
		}
	}
	// Lt("y") holds every entry, and its upper bound makes the range read
	// after a cursor a BETWEEN. Gt drops the first entry; descending, a
	// cursor's upper bound makes its bound, too long to exclude, the lower
	// end of a BETWEEN, whose entry the merge drops.
	for _, cond := range []struct {
		name string
		sc   ddbindex.SortCondition
		skip int
	}{{"< y", ddbindex.Lt("y"), 0}, {"> first", ddbindex.Gt(long, int64(10)), 1}} {
		for _, desc := range []bool{false, true} {
			label := fmt.Sprintf("%s desc=%t", cond.name, desc)
			var got []string
			cursor := ""
			for calls := 0; ; calls++ {
				require.Less(t, calls, 10*len(want), "%s: capped calls do not end", label)
				cold, err := ddbindex.New[shxBare](c, names)
				require.NoError(t, err)
				q := cold.Query("mine16", "t").Where(cond.sc).Limit(1).MaxReadUnits(0.5)
				if desc {
					q = q.Desc()
				}
				p, err := q.After(cursor).Page(ctx)
				if err != nil {
					require.ErrorIs(t, err, ddbindex.ErrCapReached)
					require.True(t, len(p.Items) > 0 || p.Cursor != cursor, "%s call %d: a capped call returns nothing and the cursor it was given", label, calls)
				}
				for _, it := range p.Items {
					got = append(got, id(it))
				}
				if p.Cursor == "" {
					break
				}
				cursor = p.Cursor
			}
			expect := slices.Clone(want[cond.skip:])
			if desc {
				slices.Reverse(expect)
			}
			require.Equal(t, expect, got, label)
		}
	}
}

// TestShardedCapsThroughTombstones: a call that MaxReadUnits stops before
// it has an item to return, because the shards' first requests found only
// tombstones, still returns a cursor past them (the entries every shard has
// evaluated), as an unsharded read does from its LastEvaluatedKey. It used
// to return the cursor it was given (the empty one on a first page), so the
// caller read the same tombstones again and again, or took the empty cursor
// for the end.
func TestShardedCapsThroughTombstones(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	names := shxTables(t)
	w := shxCreate[shItem](t, c, names)
	var want []string
	for i := range 300 {
		it := shItem{ID: fmt.Sprintf("c%03d", i), Feed: "f", Status: "open", At: int64(i)}
		_, err := w.Put(ctx, it)
		require.NoError(t, err)
		if i%25 != 12 {
			require.NoError(t, w.Delete(ctx, it))
			continue
		}
		want = append(want, it.ID)
	}
	empty := map[string]int{} // capped calls that returned no item, by index
	for _, index := range []string{"feed", "feed4", "feed16"} {
		for _, desc := range []bool{false, true} {
			for _, units := range []float64{0.5, 2} {
				r, err := ddbindex.New[shItem](c, names) // nothing remembered of earlier reads
				require.NoError(t, err)
				q := r.Query(index, "f").MaxReadUnits(units)
				exp := slices.Clone(want)
				if desc {
					q = q.Desc()
					slices.Reverse(exp)
				}
				label := fmt.Sprintf("%s desc=%t units %g", index, desc, units)
				var got []string
				cursor := ""
				for calls := 0; ; calls++ {
					require.Less(t, calls, 1000, "%s: capped calls do not end", label)
					p, err := q.Limit(2).After(cursor).Page(ctx)
					var ce *ddbindex.Error
					if errors.As(err, &ce) {
						require.Equal(t, p.Cursor, ce.Cursor, label)
						require.NotEmpty(t, p.Cursor, "%s: a capped call has a cursor", label)
						require.True(t, len(p.Items) > 0 || p.Cursor != cursor, "%s: call %d returns nothing and the cursor it was given", label, calls)
						if len(p.Items) == 0 {
							empty[index]++
						}
					} else {
						require.NoError(t, err, label)
					}
					for _, it := range p.Items {
						got = append(got, it.ID)
					}
					if p.Cursor == "" {
						break
					}
					cursor = p.Cursor
				}
				require.Equal(t, exp, got, label)
			}
		}
	}
	require.Positive(t, empty["feed16"], "some calls on 16 shards stop in tombstones before any item")
}

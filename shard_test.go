package ddbindex_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// TestShardedGroundTruth: an index sharded S ways (S = 1, 4, 16) answers
// every query exactly as the same index unsharded over the same data: the
// same live items, in the same order, with the same page boundaries and the
// cursor empty exactly when nothing live follows. shItem writes every form;
// shView1/4/16 read its sharded GSIs under the logical name "feed", which
// is also shItem's unsharded one, so cursors pass between the twins.

type shItem struct {
	_      ddbindex.TableSpec `ddbindex:"sh-items,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=gsi,name=sh-feed,pk=FP,sk=FS"`
	_      ddbindex.IndexSpec `ddbindex:"feed1,type=gsi,name=sh-feed-1,pk=P1,sk=S1,shards=1"`
	_      ddbindex.IndexSpec `ddbindex:"feed4,type=gsi,name=sh-feed-4,pk=P4,sk=S4,shards=4"`
	_      ddbindex.IndexSpec `ddbindex:"feed16,type=gsi,name=sh-feed-16,pk=P16,sk=S16,shards=16"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk;feed1.pk;feed4.pk;feed16.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0;feed1.sk:0;feed4.sk:0;feed16.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1;feed1.sk:1;feed4.sk:1;feed16.sk:1"`
	Body   string             `dynamodbav:"body"`
}

type shView1 struct {
	_      ddbindex.TableSpec `ddbindex:"sh-items,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=gsi,name=sh-feed-1,pk=P1,sk=S1,shards=1"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1"`
	Body   string             `dynamodbav:"body"`
}

type shView4 struct {
	_      ddbindex.TableSpec `ddbindex:"sh-items,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=gsi,name=sh-feed-4,pk=P4,sk=S4,shards=4"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1"`
	Body   string             `dynamodbav:"body"`
}

type shView16 struct {
	_      ddbindex.TableSpec `ddbindex:"sh-items,softdelete"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=gsi,name=sh-feed-16,pk=P16,sk=S16,shards=16"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1"`
	Body   string             `dynamodbav:"body"`
}

// shPage is what a page shows: the IDs in order, and whether a cursor
// follows.
type shPage struct {
	IDs  []string
	More bool
}

// shQuery is one random query.
type shQuery struct {
	feed  string
	cond  ddbindex.SortCondition
	desc  bool
	limit int
	name  string
	match func(shItem) bool
}

var shStatuses = []string{"done", "new", "open", "opened", "pending"}

// shRandomCond returns a random condition, its name, and what it matches.
func shRandomCond(rng *rand.Rand) (ddbindex.SortCondition, string, func(shItem) bool) {
	st := shStatuses[rng.IntN(len(shStatuses))]
	at := int64(rng.IntN(60))
	tuple := func(it shItem, s string, a int64) int {
		return cmp.Or(cmp.Compare(it.Status, s), cmp.Compare(it.At, a))
	}
	switch rng.IntN(10) {
	case 0:
		return ddbindex.SortCondition{}, "all", func(shItem) bool { return true }
	case 1:
		return ddbindex.Eq(st), "= " + st, func(it shItem) bool { return it.Status == st }
	case 2:
		return ddbindex.Eq(st, at), fmt.Sprint("= ", st, at), func(it shItem) bool { return tuple(it, st, at) == 0 }
	case 3:
		return ddbindex.Lt(st, at), fmt.Sprint("< ", st, at), func(it shItem) bool { return tuple(it, st, at) < 0 }
	case 4:
		return ddbindex.Le(st), fmt.Sprint("<= ", st), func(it shItem) bool { return it.Status <= st }
	case 5:
		return ddbindex.Gt(st, at), fmt.Sprint("> ", st, at), func(it shItem) bool { return tuple(it, st, at) > 0 }
	case 6:
		return ddbindex.Ge(st), fmt.Sprint(">= ", st), func(it shItem) bool { return it.Status >= st }
	case 7:
		st2 := shStatuses[rng.IntN(len(shStatuses))]
		lo, hi := min(st, st2), max(st, st2)
		return ddbindex.Between(ddbindex.K(lo, at), ddbindex.K(hi)), fmt.Sprint("between ", lo, at, hi),
			func(it shItem) bool { return tuple(it, lo, at) >= 0 && it.Status <= hi }
	case 8:
		p := st[:1+rng.IntN(len(st))]
		return ddbindex.BeginsWith(p), "begins_with " + p, func(it shItem) bool { return strings.HasPrefix(it.Status, p) }
	}
	return ddbindex.BeginsWith("o"), "begins_with o", func(it shItem) bool { return strings.HasPrefix(it.Status, "o") }
}

// shPager pages a query through table tb.
func shPager[T any](ctx context.Context, tb *ddbindex.Table[T], id func(T) string, q shQuery) func(string) ([]string, string, error) {
	return func(cursor string) ([]string, string, error) {
		qq := tb.Query("feed", q.feed).Where(q.cond).Limit(q.limit).After(cursor)
		if q.desc {
			qq = qq.Desc()
		}
		p, err := qq.Page(ctx)
		if err != nil {
			return nil, "", err
		}
		ids := []string{}
		for _, it := range p.Items {
			ids = append(ids, id(it))
		}
		return ids, p.Cursor, nil
	}
}

func TestShardedGroundTruth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	names := func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } }
	w, err := ddbindex.New[shItem](c, names)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(w, false) {
		ddbtest.CreateTable(t, c, in)
	}
	v1, err := ddbindex.New[shView1](c, names)
	require.NoError(t, err)
	v4, err := ddbindex.New[shView4](c, names)
	require.NoError(t, err)
	v16, err := ddbindex.New[shView16](c, names)
	require.NoError(t, err)

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DDBINDEX_SH_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (rerun with DDBINDEX_SH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>3))

	// Three feeds with tombstone densities of about 0, 50% and 90%, and a
	// run of 40 tombstones at the start of the last.
	feeds := map[string]float64{"calm": 0, "half": 0.5, "dead": 0.9}
	live := map[string][]shItem{}
	n := 0
	for _, feed := range []string{"calm", "half", "dead"} {
		for i := range 150 {
			it := shItem{ID: fmt.Sprintf("%s-%04d", feed, i), Feed: feed, Status: shStatuses[rng.IntN(len(shStatuses))], At: int64(rng.IntN(60)), Body: "b"}
			if feed == "dead" && i < 40 {
				it.Status, it.At = "done", int64(i%3)
			}
			_, err := w.Put(ctx, it)
			require.NoError(t, err)
			n++
			if rng.Float64() < feeds[feed] || (feed == "dead" && i < 40) {
				require.NoError(t, w.Delete(ctx, it))
				continue
			}
			live[feed] = append(live[feed], it)
		}
	}
	t.Logf("%d items written, %d live", n, len(live["calm"])+len(live["half"])+len(live["dead"]))

	// Ground truth for the unsharded twin: live items, ordered by status,
	// at, then id (the derived sort key's base key suffix).
	truth := func(q shQuery) []string {
		var out []shItem
		for _, it := range live[q.feed] {
			if q.match(it) {
				out = append(out, it)
			}
		}
		slices.SortFunc(out, func(a, b shItem) int {
			return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID))
		})
		ids := []string{}
		for _, it := range out {
			ids = append(ids, it.ID)
		}
		if q.desc {
			slices.Reverse(ids)
		}
		return ids
	}

	readAll := func(page func(cursor string) ([]string, string, error)) []shPage {
		t.Helper()
		var pages []shPage
		cursor := ""
		for {
			ids, next, err := page(cursor)
			require.NoError(t, err)
			if len(ids) == 0 && next == "" && len(pages) > 0 {
				// The last page did not read its look-ahead item (it would
				// have cost another read unit): its cursor led here.
				pages[len(pages)-1].More = false
				return pages
			}
			pages = append(pages, shPage{IDs: ids, More: next != ""})
			require.Less(t, len(pages), 1000, "pages do not end")
			if next == "" {
				return pages
			}
			cursor = next
		}
	}
	plain := func(q shQuery) func(string) ([]string, string, error) {
		return shPager(ctx, w, func(it shItem) string { return it.ID }, q)
	}
	sharded := func(S int, q shQuery) func(string) ([]string, string, error) {
		switch S {
		case 1:
			return shPager(ctx, v1, func(it shView1) string { return it.ID }, q)
		case 4:
			return shPager(ctx, v4, func(it shView4) string { return it.ID }, q)
		}
		return shPager(ctx, v16, func(it shView16) string { return it.ID }, q)
	}

	limits := []int{1, 2, 3, 5, 7, 10, 20, 50, 200}
	queries := 0
	for range 40 {
		cond, name, match := shRandomCond(rng)
		q := shQuery{feed: []string{"calm", "half", "dead"}[rng.IntN(3)], cond: cond, desc: rng.IntN(2) == 0, limit: limits[rng.IntN(len(limits))], name: name, match: match}
		label := fmt.Sprintf("%s %s desc=%t limit %d", q.feed, q.name, q.desc, q.limit)
		want := readAll(plain(q))
		got := []string{}
		for i, p := range want {
			got = append(got, p.IDs...)
			require.Equal(t, i < len(want)-1, p.More, "%s: a cursor follows every page but the last", label)
			if i < len(want)-1 {
				require.Len(t, p.IDs, q.limit, "%s: every page but the last is full", label)
			}
		}
		require.Equal(t, truth(q), got, "%s: the unsharded twin against ground truth", label)
		for _, S := range []int{1, 4, 16} {
			require.Equal(t, want, readAll(sharded(S, q)), "%s: %d shards", label, S)
			queries++
		}
		// Cursors pass between the twins: continue each from the other's
		// cursor after the first page.
		_, c0, err := plain(q)("")
		require.NoError(t, err)
		if c0 != "" {
			rest := readAll(func(cursor string) ([]string, string, error) {
				if cursor == "" {
					cursor = c0
				}
				return sharded(16, q)(cursor)
			})
			require.Equal(t, want[1:], rest, "%s: the sharded twin continues the unsharded one's cursor", label)
			ids, cur, err := sharded(4, q)("")
			require.NoError(t, err)
			require.Equal(t, want[0].IDs, ids)
			rest = readAll(func(cursor string) ([]string, string, error) {
				if cursor == "" {
					cursor = cur
				}
				return plain(q)(cursor)
			})
			require.Equal(t, want[1:], rest, "%s: the unsharded twin continues the sharded one's cursor", label)
		}
	}
	t.Logf("%d sharded reads compared page by page", queries)
}

// shTItem keeps two index tables by write-through: "feed", unsharded, and
// feed8, sharded 8 ways; shTView reads the sharded one as "feed". Their
// base items move between feeds and sort positions, and are deleted and
// created again, so entries become tombstones in both.
type shTItem struct {
	_      ddbindex.TableSpec `ddbindex:"sht-items"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=table,table=sht-feed"`
	_      ddbindex.IndexSpec `ddbindex:"feed8,type=table,table=sht-feed-8,shards=8"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk;feed8.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0;feed8.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1;feed8.sk:1"`
	Ver    int64              `dynamodbav:"ver"    ddbindex:"version"`
}

type shTView struct {
	_      ddbindex.TableSpec `ddbindex:"sht-items"`
	_      ddbindex.IndexSpec `ddbindex:"feed,type=table,table=sht-feed-8,shards=8"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Feed   string             `dynamodbav:"feed"   ddbindex:"feed.pk"`
	Status string             `dynamodbav:"status" ddbindex:"feed.sk:0"`
	At     int64              `dynamodbav:"at"     ddbindex:"feed.sk:1"`
	Ver    int64              `dynamodbav:"ver"    ddbindex:"version"`
}

// TestShardedIndexTable: the index-table form of a sharded index, kept by
// write-through, answers as its unsharded twin and as ground truth, through
// partition and sort key changes, deletes and re-creations; All and Exists
// agree with Page.
func TestShardedIndexTable(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions) // write-through
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	opts := func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
		o.WriteThrough = true
	}
	w, err := ddbindex.New[shTItem](c, opts)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(w, false) {
		ddbtest.CreateTable(t, c, in)
	}
	v, err := ddbindex.New[shTView](c, opts)
	require.NoError(t, err)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>5))
	state := map[string]shTItem{}
	feeds := []string{"x", "y"}
	for i := range 300 {
		id := fmt.Sprintf("i%03d", rng.IntN(120))
		cur, exists := state[id]
		switch {
		case exists && rng.IntN(4) == 0:
			require.NoError(t, w.Delete(ctx, cur), "op %d", i)
			delete(state, id)
		default:
			it := shTItem{ID: id, Feed: feeds[rng.IntN(2)], Status: shStatuses[rng.IntN(len(shStatuses))], At: int64(rng.IntN(30))}
			if exists {
				it.Ver = cur.Ver
			}
			got, err := w.Put(ctx, it)
			require.NoError(t, err, "op %d", i)
			state[id] = got
		}
	}
	truth := func(feed string, match func(shItem) bool, desc bool) []string {
		var out []shTItem
		for _, it := range state {
			if it.Feed == feed && match(shItem{Status: it.Status, At: it.At}) {
				out = append(out, it)
			}
		}
		slices.SortFunc(out, func(a, b shTItem) int {
			return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID))
		})
		ids := []string{}
		for _, it := range out {
			ids = append(ids, it.ID)
		}
		if desc {
			slices.Reverse(ids)
		}
		return ids
	}
	pages := func(f func(string) ([]string, string, error)) []shPage {
		var out []shPage
		cursor := ""
		for {
			ids, next, err := f(cursor)
			require.NoError(t, err)
			if len(ids) == 0 && next == "" && len(out) > 0 {
				out[len(out)-1].More = false // see readAll
				return out
			}
			out = append(out, shPage{IDs: ids, More: next != ""})
			require.Less(t, len(out), 1000)
			if next == "" {
				return out
			}
			cursor = next
		}
	}
	for range 30 {
		cond, name, match := shRandomCond(rng)
		q := shQuery{feed: feeds[rng.IntN(2)], cond: cond, desc: rng.IntN(2) == 0, limit: []int{1, 3, 8, 25}[rng.IntN(4)], name: name}
		label := fmt.Sprintf("%s %s desc=%t limit %d", q.feed, q.name, q.desc, q.limit)
		want := pages(shPager(ctx, w, func(it shTItem) string { return it.ID }, q))
		require.Equal(t, want, pages(shPager(ctx, v, func(it shTView) string { return it.ID }, q)), label)
		got := []string{}
		for _, p := range want {
			got = append(got, p.IDs...)
		}
		require.Equal(t, truth(q.feed, match, q.desc), got, label)

		qq := v.Query("feed", q.feed).Where(q.cond)
		if q.desc {
			qq = qq.Desc()
		}
		all := []string{}
		for it, err := range qq.All(ctx) {
			require.NoError(t, err)
			all = append(all, it.ID)
		}
		require.Equal(t, got, all, "%s: All", label)
		some := []string{}
		for it, err := range qq.Limit(q.limit).All(ctx) {
			require.NoError(t, err)
			some = append(some, it.ID)
		}
		require.Equal(t, got[:min(len(got), q.limit)], some, "%s: All with Limit", label)
		ok, err := qq.Exists(ctx)
		require.NoError(t, err)
		require.Equal(t, len(got) > 0, ok, "%s: Exists", label)
	}
}

// TestShardedCaps: a page of S shards needs S requests, so MaxRequests
// below S is refused before any request; MaxReadUnits stops a call with a
// cursor after the last item it returned, from which the rest follows
// exactly.
func TestShardedCaps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	names := func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } }
	w, err := ddbindex.New[shItem](c, names)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(w, false) {
		ddbtest.CreateTable(t, c, in)
	}
	v, err := ddbindex.New[shView16](c, names)
	require.NoError(t, err)
	var want []string
	for i := range 120 {
		it := shItem{ID: fmt.Sprintf("c%03d", i), Feed: "f", Status: "open", At: int64(i % 7), Body: strings.Repeat("x", 900)}
		_, err := w.Put(ctx, it)
		require.NoError(t, err)
		if i%3 == 0 {
			require.NoError(t, w.Delete(ctx, it))
			continue
		}
		want = append(want, it.ID)
	}
	slices.SortFunc(want, func(a, b string) int {
		ai, _ := strconv.Atoi(a[1:])
		bi, _ := strconv.Atoi(b[1:])
		return cmp.Or(cmp.Compare(ai%7, bi%7), cmp.Compare(a, b))
	})

	_, err = v.Query("feed", "f").MaxRequests(15).Page(ctx)
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery)
	require.Contains(t, err.Error(), "16 requests")

	var got []string
	cursor := ""
	capped := 0
	for calls := 0; ; calls++ {
		require.Less(t, calls, 500, "the capped calls make progress")
		p, err := v.Query("feed", "f").Limit(30).MaxReadUnits(2).After(cursor).Page(ctx)
		var ce *ddbindex.Error
		if errors.As(err, &ce) {
			capped++
			require.Equal(t, p.Cursor, ce.Cursor)
		} else {
			require.NoError(t, err)
		}
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		if p.Cursor == "" {
			break
		}
		cursor = p.Cursor
	}
	require.Positive(t, capped, "2 read units stop some calls")
	require.Equal(t, want, got)
}

// The resharding runbook: feed is sharded 4 ways (rsStep0); step 1 adds
// feed_next, sharded 16 ways on a GSI of its own, and Backfill writes its
// attributes onto the items already there; step 2 swaps the logical names,
// so the 16-shard GSI serves "feed" and cursors handed out at step 1 go on;
// step 3 drops feed_old (then its GSI).
type rsStep0 struct {
	_    ddbindex.TableSpec `ddbindex:"rs-items"`
	_    ddbindex.IndexSpec `ddbindex:"feed,type=gsi,gsi=feed-4,pk=P4,sk=S4,shards=4"`
	ID   string             `dynamodbav:"id"   ddbindex:"pk"`
	Feed string             `dynamodbav:"feed" ddbindex:"feed.pk"`
	At   int64              `dynamodbav:"at"   ddbindex:"feed.sk"`
}

type rsStep1 struct {
	_    ddbindex.TableSpec `ddbindex:"rs-items"`
	_    ddbindex.IndexSpec `ddbindex:"feed,type=gsi,gsi=feed-4,pk=P4,sk=S4,shards=4"`
	_    ddbindex.IndexSpec `ddbindex:"feed_next,type=gsi,gsi=feed-16,pk=P16,sk=S16,shards=16"`
	ID   string             `dynamodbav:"id"   ddbindex:"pk"`
	Feed string             `dynamodbav:"feed" ddbindex:"feed.pk;feed_next.pk"`
	At   int64              `dynamodbav:"at"   ddbindex:"feed.sk;feed_next.sk"`
}

type rsStep2 struct {
	_    ddbindex.TableSpec `ddbindex:"rs-items"`
	_    ddbindex.IndexSpec `ddbindex:"feed,type=gsi,gsi=feed-16,pk=P16,sk=S16,shards=16"`
	_    ddbindex.IndexSpec `ddbindex:"feed_old,type=gsi,gsi=feed-4,pk=P4,sk=S4,shards=4"`
	ID   string             `dynamodbav:"id"   ddbindex:"pk"`
	Feed string             `dynamodbav:"feed" ddbindex:"feed.pk;feed_old.pk"`
	At   int64              `dynamodbav:"at"   ddbindex:"feed.sk;feed_old.sk"`
}

func TestReshardRunbook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	names := func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } }
	s0, err := ddbindex.New[rsStep0](c, names)
	require.NoError(t, err)
	s1, err := ddbindex.New[rsStep1](c, names)
	require.NoError(t, err)
	s2, err := ddbindex.New[rsStep2](c, names)
	require.NoError(t, err)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(s1, false)[0]) // both GSIs: Prepare adds the new one on AWS
	for i := range 90 {
		_, err := s0.Put(ctx, rsStep0{ID: fmt.Sprintf("a%02d", i), Feed: "all", At: int64(i % 30)})
		require.NoError(t, err)
	}
	for i := range 30 { // step 1 instances write both forms
		_, err := s1.Put(ctx, rsStep1{ID: fmt.Sprintf("b%02d", i), Feed: "all", At: int64(i)})
		require.NoError(t, err)
	}
	st, err := migrate.Backfill(ctx, s1, c, "feed_next")
	require.NoError(t, err)
	require.Equal(t, 120, st.Scanned)
	require.Equal(t, 90, st.Written, "the items step 0 wrote")
	require.Equal(t, 30, st.Unchanged, "the items step 1 wrote")

	var want []string
	for it, err := range s1.Query("feed", "all").All(ctx) {
		require.NoError(t, err)
		want = append(want, it.ID)
	}
	require.Len(t, want, 120)
	var got []string
	for it, err := range s2.Query("feed", "all").All(ctx) {
		require.NoError(t, err)
		got = append(got, it.ID)
	}
	require.Equal(t, want, got, "the 16-shard GSI holds what the 4-shard one does, in the same order")

	// A cursor from step 1 (4 shards) continues at step 2 (16 shards).
	p, err := s1.Query("feed", "all").Limit(35).Page(ctx)
	require.NoError(t, err)
	rest := []string{}
	cursor := p.Cursor
	for cursor != "" {
		q, err := s2.Query("feed", "all").Limit(20).After(cursor).Page(ctx)
		require.NoError(t, err)
		for _, it := range q.Items {
			rest = append(rest, it.ID)
		}
		cursor = q.Cursor
	}
	require.Equal(t, want[35:], rest)
}

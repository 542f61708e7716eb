package ddbindex

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// This file holds a cursor to what the docs promise when it goes on under
// another sort condition than the one it was minted under: the pages hold
// exactly the live items the new condition matches after the cursor's
// position, in reading order, whether the new condition is narrower, wider
// or disjoint, on every kind of sort key, on the GSI and the index table,
// in both orders, from cursors minted inside runs of tombstones, by a cap,
// and with their next position on a bound of the new condition.

type (
	ccNum struct {
		_    TableSpec `ddbindex:"cc_num,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"feed.sk"`
	}
	ccStr struct {
		_    TableSpec `ddbindex:"cc_str,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Name string    `dynamodbav:"name" ddbindex:"feed.sk"`
	}
	ccBin struct {
		_    TableSpec `ddbindex:"cc_bin,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Key  []byte    `dynamodbav:"key" ddbindex:"feed.sk"`
	}
	ccTie struct {
		_    TableSpec `ddbindex:"cc_tie,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Rank int64     `dynamodbav:"rank" ddbindex:"feed.sk"`
	}
	ccComp2 struct {
		_    TableSpec `ddbindex:"cc_comp2,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Kind string    `dynamodbav:"kind" ddbindex:"feed.sk:0"`
		Seq  int64     `dynamodbav:"seq" ddbindex:"feed.sk:1,width=5"`
	}
	ccComp3 struct {
		_    TableSpec `ddbindex:"cc_comp3,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Kind string    `dynamodbav:"kind" ddbindex:"feed.sk:0"`
		Grp  int64     `dynamodbav:"grp" ddbindex:"feed.sk:1,width=3"`
		Name string    `dynamodbav:"name" ddbindex:"feed.sk:2"`
	}
	ccShard struct {
		_    TableSpec `ddbindex:"cc_shard,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=3"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Kind string    `dynamodbav:"kind" ddbindex:"feed.sk:0"`
		Seq  int64     `dynamodbav:"seq" ddbindex:"feed.sk:1,width=5"`
	}
	ccShardNum struct {
		_    TableSpec `ddbindex:"cc_shardnum,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=3"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"feed.sk"`
	}
	ccNat struct {
		_    TableSpec `ddbindex:"cc_nat,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=native-gsi,keep=gsi,native-gsi=cc-nat-n"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Kind string    `dynamodbav:"kind" ddbindex:"feed.sk:0"`
		Seq  int64     `dynamodbav:"seq" ddbindex:"feed.sk:1"`
	}
	ccNatShard struct {
		_    TableSpec `ddbindex:"cc_natsh,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=native-gsi,keep=gsi,native-gsi=cc-natsh-n,shards=3"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Kind string    `dynamodbav:"kind" ddbindex:"feed.sk:0"`
		Seq  int64     `dynamodbav:"seq" ddbindex:"feed.sk:1"`
	}
)

// ccDead is the tombstone pattern of item i of n: a dead first item, runs
// of tombstones of several lengths (one across the whole middle of the
// partition), scattered ones, and a dead tail.
func ccDead(i, n int) bool {
	switch {
	case i == 0, i >= n-3:
		return true
	case i >= 6 && i < 13, i >= 20 && i < 23, i >= 30 && i < 38:
		return true
	}
	return i%5 == 4
}

// ccModel describes one model of the test: n items, made by mk in
// ascending sort order (ties allowed), and their sort component values.
type ccModel[T any] struct {
	n     int
	mk    func(i int) T
	id    func(T) string
	key   func(T) []any
	tied  bool            // the sort key repeats: forms order ties differently
	mints []SortCondition // the conditions cursors are minted under
	fixed []SortCondition // new conditions tried for every cursor
	forms []Kind          // the forms of index feed (default GSI and IndexTable)
	// client, when set, is the client of the table (the multi-attribute
	// key double for a native-gsi).
	client func(testing.TB) *dynamodb.Client
}

// ccCmp compares two sort component values of the same type.
func ccCmp(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, reflect.ValueOf(b).Int())
	case float64:
		return cmp.Compare(x, reflect.ValueOf(b).Float())
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	}
	panic(fmt.Sprintf("ccCmp: %T", a))
}

// ccCmpPrefix compares key's first len(vals) components with vals as tuples.
func ccCmpPrefix(key, vals []any) int {
	for i, v := range vals {
		if c := ccCmp(key[i], v); c != 0 {
			return c
		}
	}
	return 0
}

// ccMatch is what sc means on a key, by the docs of its constructors.
func ccMatch(sc SortCondition, key []any) bool {
	switch sc.op {
	case opNone:
		return true
	case opEq:
		return ccCmpPrefix(key, sc.lo) == 0
	case opLt:
		return ccCmpPrefix(key, sc.lo) < 0
	case opLe:
		return ccCmpPrefix(key, sc.lo) <= 0
	case opGt:
		return ccCmpPrefix(key, sc.lo) > 0
	case opGe:
		return ccCmpPrefix(key, sc.lo) >= 0
	case opBetween:
		return ccCmpPrefix(key, sc.lo) >= 0 && ccCmpPrefix(key, sc.hi) <= 0
	case opBeginsWith:
		n := len(sc.lo)
		if ccCmpPrefix(key, sc.lo[:n-1]) != 0 {
			return false
		}
		p, _ := stringValue(sc.lo[n-1])
		s, _ := stringValue(key[n-1])
		return strings.HasPrefix(s, p)
	}
	panic("ccMatch: op")
}

// ccRelative returns the new conditions for a cursor at key at whose next
// live item (under the condition it was minted under) is next (nil for
// none): every comparison with each prefix of either, Betweens from one to
// the other and on each alone, and begins_with on string components.
func ccRelative(at, next []any) []SortCondition {
	var out []SortCondition
	for _, k := range [][]any{at, next} {
		if k == nil {
			continue
		}
		for n := 1; n <= len(k); n++ {
			v := k[:n]
			out = append(out, Eq(v...), Lt(v...), Le(v...), Gt(v...), Ge(v...), Between(Key(v), Key(v)))
			if s, ok := v[n-1].(string); ok && len(s) > 0 {
				pre := slices.Clone(v)
				pre[n-1] = s[:1]
				out = append(out, BeginsWith(v...), BeginsWith(pre...))
			}
		}
	}
	if next != nil {
		for n := 1; n <= len(at); n++ {
			lo, hi := at[:n], next[:n]
			if ccCmpPrefix(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			out = append(out, Between(Key(lo), Key(hi)))
		}
	}
	return out
}

// ccEntry is one item of the partition in a form's reading order.
type ccEntry struct {
	id   string
	key  []any
	pos  position
	dead bool
}

// ccStride is how many of each run's cursors ccRun takes one of, each run
// starting at another offset: 1 (every cursor) with DDBINDEX_CURSOR_ALL set,
// else 8, which keeps the test within seconds, and 32 under the race
// detector, which slows every request and has no concurrency to watch here
// but the parallel subtests'.
var ccStride = func() int {
	switch {
	case os.Getenv("DDBINDEX_CURSOR_ALL") != "":
		return 1
	case raceEnabled:
		return 32
	}
	return 8
}()

// ccRun loads model m into a fresh table (both forms of index feed,
// partition "p") and checks the cursors it mints (a sample: ccStride)
// against every new condition. It returns the number of (cursor,
// condition, forms, order) cases checked.
func ccRun[T any](t *testing.T, m ccModel[T]) int {
	ctx := context.Background()
	var tb *Table[T]
	if m.client != nil {
		tb, _ = newTestTableOn[T](t, m.client(t))
	} else {
		tb, _ = newTestTable[T](t)
	}
	items := make([]T, m.n)
	isDead := make([]bool, m.n)
	byID := map[string]T{}
	dead := map[string]bool{}
	for i := range m.n {
		items[i] = m.mk(i)
		id := m.id(items[i])
		byID[id] = items[i]
		isDead[i] = ccDead(i, m.n)
		dead[id] = isDead[i]
	}
	applyLoad(t, tb, items, isDead)

	decl, err := tb.index("feed")
	require.NoError(t, err)
	forms := m.forms
	if forms == nil {
		forms = []Kind{GSI, IndexTable}
	}
	layoutOf := func(k Kind) *layout {
		d := formOf(decl.decl.forms, k)
		require.NotNil(t, d, "form %s", k)
		return d
	}
	// The reading order of each form and order: every entry, tombstones
	// included, as a read with no condition returns them.
	order := map[string][]ccEntry{}
	for _, f := range forms {
		for _, desc := range []bool{false, true} {
			q := tb.Query("feed", "p").Via(f).IncludeDeleted()
			if desc {
				q = q.Desc()
			}
			var es []ccEntry
			for it, err := range q.All(ctx) {
				require.NoError(t, err)
				id := m.id(it)
				es = append(es, ccEntry{id: id, key: m.key(byID[id]), pos: curxPos(t, tb, layoutOf(f), byID[id]), dead: dead[id]})
			}
			require.Len(t, es, m.n, "%s desc=%v: every entry", f, desc)
			for i := 1; i < len(es); i++ {
				c := ccCmpPrefix(es[i].key, es[i-1].key)
				require.True(t, (!desc && c >= 0) || (desc && c <= 0), "%s desc=%v: entries in sort order", f, desc)
			}
			order[fmt.Sprint(f, desc)] = es
		}
	}

	cases, failures, refused := 0, 0, 0
	kinds := map[string]int{}
	fail := func(format string, args ...any) {
		failures++
		if failures <= 25 {
			t.Errorf(format, args...)
		}
	}
	combo := 0 // which cursors of each run the sample takes turns
	for _, mintForm := range forms {
		for _, desc := range []bool{false, true} {
			for _, mint := range m.mints {
				for _, way := range []string{"cold", "warm", "capped"} {
					combo++
					// Mint the cursors of every page under mint.
					reader := coldMemo(tb)
					var toks []string
					tok := ""
					for pages := 0; ; pages++ {
						require.Less(t, pages, 100)
						q := reader.Query("feed", "p").Via(mintForm).Where(mint).Limit(map[string]int{"cold": 2, "warm": 3, "capped": 2}[way]).After(tok)
						if desc {
							q = q.Desc()
						}
						if way == "warm" {
							readAhead(t, q)
						}
						if way == "capped" {
							q = q.MaxRequests(max(1, layoutOf(mintForm).pk.shards))
						}
						pg, err := q.Page(ctx)
						if way != "capped" || !errors.Is(err, ErrCapReached) {
							require.NoError(t, err)
						}
						if tok = pg.Cursor; tok == "" {
							break
						}
						toks = append(toks, tok)
					}
					for ti, tok := range toks {
						if ti%ccStride != combo%ccStride {
							continue // a sample of the cursors: see ccStride
						}
						c, _, err := readCursor(layoutOf(mintForm), tok, &desc, &tb.opts)
						require.NoError(t, err)
						switch {
						case c.next == nil:
							kinds["plain"]++
						case c.through && c.tied:
							kinds["through, tied"]++
						case c.through:
							kinds["through"]++
						default:
							kinds["next"]++
						}
						mintOrder := order[fmt.Sprint(mintForm, desc)]
						at := slices.IndexFunc(mintOrder, func(e ccEntry) bool { return slices.Equal(e.pos, c.at) })
						require.GreaterOrEqual(t, at, 0, "the cursor names an entry")
						var next []any
						for _, e := range mintOrder[at+1:] {
							if !e.dead && ccMatch(mint, e.key) {
								next = e.key
								break
							}
						}
						conds := append(ccRelative(mintOrder[at].key, next), m.fixed...)
						seen := map[string]bool{}
						for _, readForm := range forms {
							if readForm != mintForm && m.tied {
								continue // the forms order ties otherwise
							}
							readOrder := order[fmt.Sprint(readForm, desc)]
							i := slices.IndexFunc(readOrder, func(e ccEntry) bool { return slices.Equal(e.pos, c.at) })
							require.GreaterOrEqual(t, i, 0, "the cursor names an entry of %s", readForm)
							for _, sc := range conds {
								name := fmt.Sprint(readForm, sc)
								if seen[name] {
									continue
								}
								seen[name] = true
								want := []string{}
								for _, e := range readOrder[i+1:] {
									if !e.dead && ccMatch(sc, e.key) {
										want = append(want, e.id)
									}
								}
								got := []string{}
								cur := tok
								var err error
								for pages := 0; ; pages++ {
									require.Less(t, pages, 100)
									q := tb.Query("feed", "p").Via(readForm).Where(sc).Limit(4).After(cur)
									if desc {
										q = q.Desc()
									}
									var pg *Page[T]
									if pg, err = q.Page(ctx); err != nil {
										break
									}
									for _, it := range pg.Items {
										got = append(got, m.id(it))
									}
									if cur = pg.Cursor; cur == "" {
										break
									}
								}
								if err != nil && errors.Is(err, ErrInvalidQuery) {
									// A condition the form cannot express is
									// refused with or without a cursor.
									q := tb.Query("feed", "p").Via(readForm).Where(sc)
									if _, err2 := q.Page(ctx); errors.Is(err2, ErrInvalidQuery) {
										refused++
										continue
									}
								}
								cases++
								where := fmt.Sprintf("minted on %s desc=%v under %s (%s, page after %s %q [%d of %d], next %v), read on %s under %s",
									mintForm, desc, mint, way, mintOrder[at].id, c.at, at, len(mintOrder), next, readForm, sc)
								if err != nil {
									fail("%s: %v (ErrInvalidCursor: %v)", where, err, errors.Is(err, ErrInvalidCursor))
									continue
								}
								if !slices.Equal(want, got) {
									fail("%s:\n want %v\n got  %v", where, want, got)
								}
								// All goes on from the cursor as the pages do.
								q := tb.Query("feed", "p").Via(readForm).Where(sc).After(tok)
								if desc {
									q = q.Desc()
								}
								got = []string{}
								for it, err := range q.All(ctx) {
									if err != nil {
										fail("%s: All: %v", where, err)
										break
									}
									got = append(got, m.id(it))
								}
								if !slices.Equal(want, got) {
									fail("%s: All:\n want %v\n got  %v", where, want, got)
								}
							}
						}
					}
				}
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d cases failed", failures, cases)
	}
	t.Logf("%d cases (%d conditions the form cannot express skipped); cursors: %v", cases, refused, kinds)
	return cases
}

func TestCursorUnderOtherConditions(t *testing.T) {
	t.Parallel()
	t.Run("number", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccNum]{
			n:     45,
			mk:    func(i int) ccNum { return ccNum{ID: fmt.Sprintf("id%02d", i), Feed: "p", Seq: float64(i-12) * 1.25} },
			id:    func(x ccNum) string { return x.ID },
			key:   func(x ccNum) []any { return []any{x.Seq} },
			mints: []SortCondition{{}, Between(-5.0, 30.0), Gt(0.0)},
			fixed: []SortCondition{{}, Lt(-100.0), Gt(1000.0), Between(-1.25, 1.25), Ge(-15.0), Le(40.0)},
		})
	})
	t.Run("string", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccStr]{
			n: 48,
			mk: func(i int) ccStr {
				const l = "abcd"
				name := string(l[i/12]) + string(l[(i/3)%4]) + []string{"", "x", "xy"}[i%3]
				return ccStr{ID: fmt.Sprintf("id%02d", i), Feed: "p", Name: name}
			},
			id:    func(x ccStr) string { return x.ID },
			key:   func(x ccStr) []any { return []any{x.Name} },
			mints: []SortCondition{{}, BeginsWith("b"), Between("ab", "cc")},
			fixed: []SortCondition{{}, BeginsWith("a"), BeginsWith("d"), BeginsWith("e"), Lt("0"), Gt("z"), Between("bb", "bbxy")},
		})
	})
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccBin]{
			n: 44,
			mk: func(i int) ccBin {
				k := append([]byte{byte(i / 4)}, [][]byte{{}, {0}, {0, 0}, {0xff}}[i%4]...)
				return ccBin{ID: fmt.Sprintf("id%02d", i), Feed: "p", Key: k}
			},
			id:    func(x ccBin) string { return x.ID },
			key:   func(x ccBin) []any { return []any{x.Key} },
			mints: []SortCondition{{}, Between([]byte{2}, []byte{8, 0xff}), BeginsWith([]byte{5})},
			fixed: []SortCondition{{}, BeginsWith([]byte{3}), Lt([]byte{0}), Gt([]byte{0xff}), Ge([]byte{4, 0})},
		})
	})
	t.Run("ties", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccTie]{
			n:     45,
			mk:    func(i int) ccTie { return ccTie{ID: fmt.Sprintf("id%02d", i), Feed: "p", Rank: int64(i/3 - 5)} },
			id:    func(x ccTie) string { return x.ID },
			key:   func(x ccTie) []any { return []any{x.Rank} },
			tied:  true,
			mints: []SortCondition{{}, Between(int64(-2), int64(6)), Ge(int64(0))},
			fixed: []SortCondition{{}, Lt(int64(-100)), Gt(int64(100)), Between(int64(-1), int64(1))},
		})
	})
	t.Run("composite2", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccComp2]{
			n: 45,
			mk: func(i int) ccComp2 {
				return ccComp2{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: string("abc"[i/15]), Seq: int64((i % 15) / 2 * 10)}
			},
			id:    func(x ccComp2) string { return x.ID },
			key:   func(x ccComp2) []any { return []any{x.Kind, x.Seq} },
			mints: []SortCondition{{}, Eq("a"), Eq("b"), Between(K("a", int64(30)), K("c", int64(20)))},
			fixed: []SortCondition{{}, Eq("a"), Eq("b"), Eq("c"), Gt("b"), Lt("b"), Ge("b"), Le("b"), Between(K("b", int64(0)), K("b", int64(50)))},
		})
	})
	t.Run("composite3", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccComp3]{
			n: 48,
			mk: func(i int) ccComp3 {
				return ccComp3{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: string("ab"[i/24]), Grp: int64((i % 24) / 6), Name: []string{"m", "mx", "n", "nx", "ny", "o"}[i%6]}
			},
			id:    func(x ccComp3) string { return x.ID },
			key:   func(x ccComp3) []any { return []any{x.Kind, x.Grp, x.Name} },
			mints: []SortCondition{{}, Eq("a"), Eq("a", int64(1)), BeginsWith("b", int64(2), "n")},
			fixed: []SortCondition{{}, Eq("b"), Eq("a", int64(3)), BeginsWith("a", int64(2), "n"), Between(K("a", int64(1)), K("b", int64(1)))},
		})
	})
	t.Run("sharded composite", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccShard]{
			n: 45,
			mk: func(i int) ccShard {
				return ccShard{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: string("abc"[i/15]), Seq: int64((i % 15) / 2 * 10)}
			},
			id:    func(x ccShard) string { return x.ID },
			key:   func(x ccShard) []any { return []any{x.Kind, x.Seq} },
			mints: []SortCondition{{}, Eq("a"), Eq("b"), Between(K("a", int64(30)), K("c", int64(20)))},
			fixed: []SortCondition{{}, Eq("a"), Eq("c"), Gt("b"), Lt("b"), BeginsWith("b"), Between(K("b", int64(0)), K("b", int64(50)))},
		})
	})
	t.Run("sharded number", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccShardNum]{
			n: 45,
			mk: func(i int) ccShardNum {
				return ccShardNum{ID: fmt.Sprintf("id%02d", i), Feed: "p", Seq: float64(i/2-12) * 1.25}
			},
			id:    func(x ccShardNum) string { return x.ID },
			key:   func(x ccShardNum) []any { return []any{x.Seq} },
			mints: []SortCondition{{}, Between(-5.0, 10.0), Gt(0.0)},
			fixed: []SortCondition{{}, Lt(-100.0), Gt(1000.0), Between(-1.25, 1.25)},
		})
	})
	natItem := func(i int) (string, int64) { return string("abc"[i/15]), int64((i % 15) * 10) }
	t.Run("native-gsi", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccNat]{
			n: 45,
			mk: func(i int) ccNat {
				k, n := natItem(i)
				return ccNat{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: k, Seq: n}
			},
			id:     func(x ccNat) string { return x.ID },
			key:    func(x ccNat) []any { return []any{x.Kind, x.Seq} },
			forms:  []Kind{NativeGSI, GSI},
			client: ddbtest.MultiKey,
			mints:  []SortCondition{{}, Eq("a"), Eq("b"), Between(K("b", int64(30)), K("b", int64(120)))},
			fixed:  []SortCondition{{}, Eq("a"), Eq("c"), Gt("b"), Lt("b"), BeginsWith("b"), Between(K("b", int64(0)), K("b", int64(50)))},
		})
	})
	t.Run("sharded native-gsi", func(t *testing.T) {
		t.Parallel()
		ccRun(t, ccModel[ccNatShard]{
			n: 45,
			mk: func(i int) ccNatShard {
				k, n := natItem(i)
				return ccNatShard{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: k, Seq: n}
			},
			id:     func(x ccNatShard) string { return x.ID },
			key:    func(x ccNatShard) []any { return []any{x.Kind, x.Seq} },
			forms:  []Kind{NativeGSI, GSI},
			client: ddbtest.MultiKey,
			mints:  []SortCondition{{}, Eq("a"), Eq("b"), Between(K("b", int64(30)), K("b", int64(120)))},
			fixed:  []SortCondition{{}, Eq("a"), Eq("c"), Gt("b"), Lt("b"), BeginsWith("b"), Between(K("b", int64(0)), K("b", int64(50)))},
		})
	})
}

// TestCursorAllPastCondition: a cursor whose position lies past the new
// sort condition's range leaves nothing to read for All as for Page (and no
// request is sent); one inside it goes on after the position, as a page
// does. It reads the example of the docs: a cursor minted under Eq("a")
// goes on under Eq("a", n) where n is its own item's second component.
// Explain says when Page sends no request.
func TestCursorAllPastCondition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb, _ := newTestTable[ccComp2](t)
	var changes []Change
	for i := range 6 {
		it := ccComp2{ID: fmt.Sprintf("id%02d", i), Feed: "p", Kind: string("ab"[i/3]), Seq: int64(i % 3)}
		av, err := tb.Marshal(it)
		require.NoError(t, err)
		putBase(t, tb, it)
		changes = append(changes, Change{New: av, Version: "1"})
	}
	_, err := tb.Apply(ctx, changes)
	require.NoError(t, err)
	all := func(q Query[ccComp2]) []string {
		out := []string{}
		for it, err := range q.All(ctx) {
			require.NoError(t, err)
			out = append(out, it.ID)
		}
		return out
	}
	for _, form := range []Kind{GSI, IndexTable} {
		pg, err := tb.Query("feed", "p").Via(form).Where(Eq("a")).Limit(2).Page(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"id00", "id01"}, curxIDs(pg.Items))
		require.NotEmpty(t, pg.Cursor)
		for _, c := range []struct {
			sc   SortCondition
			want []string
			past bool // the position lies past the range: no request
		}{
			{Eq("a", int64(1)), []string{}, false},       // the cursor's own item was the last
			{Eq("a", int64(2)), []string{"id02"}, false}, // the range starts after the position
			{Eq("a", int64(0)), []string{}, true},        // past the range
			{Lt("a", int64(1)), []string{}, true},        // past the range
			{Le("a", int64(1)), []string{}, false},       // the position is the range's last
			{Eq("a"), []string{"id02"}, false},           // the same condition
			{Ge("a", int64(1)), []string{"id02", "id03", "id04", "id05"}, false},
			{Gt("a"), []string{"id03", "id04", "id05"}, false}, // before the range
		} {
			var st Stats
			q := tb.Query("feed", "p").Via(form).Where(c.sc).After(pg.Cursor).ReportTo(&st)
			next, err := q.Page(ctx)
			require.NoError(t, err)
			require.Equal(t, c.want, append([]string{}, curxIDs(next.Items)...), "%s Page under %s", form, c.sc)
			require.Equal(t, c.want, all(q), "%s All under %s", form, c.sc)
			if c.past {
				require.Zero(t, st.Requests, "%s under %s: nothing to read, no request", form, c.sc)
			}
			// Explain says whether Page sends its request.
			e, err := q.Explain()
			require.NoError(t, err)
			require.Equal(t, st.Requests == 0, strings.Contains(e.String(), "not sent: the cursor lies past the sort condition's range"), "%s under %s: %s", form, c.sc, e)
		}
	}
}

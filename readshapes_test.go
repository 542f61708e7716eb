package ddbindex

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/stretchr/testify/require"
)

// Reads against ground truth on data shapes the page fill meets rarely:
// entries of hundreds of KB (DynamoDB ends a response at 1 MB, mid-page),
// sizes that vary a thousandfold in one partition, Numbers at the edges of
// DynamoDB's range, Strings and Binaries at the edges of their orders, and
// a sharded index; every page chain and All, on both forms, in both orders,
// by a cold Table and one that read the partition before, with cursors
// handed from one form to the other.

type (
	rsNum struct {
		_    TableSpec `ddbindex:"rs_num,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsStr struct {
		_    TableSpec `ddbindex:"rs_str,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Name string    `dynamodbav:"name" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsBin struct {
		_    TableSpec `ddbindex:"rs_bin,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Key  []byte    `dynamodbav:"key" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsTie struct {
		_    TableSpec `ddbindex:"rs_tie,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Rank int64     `dynamodbav:"rank" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsLSI struct {
		_    TableSpec `ddbindex:"rs_lsi,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=lsi"`
		Feed string    `dynamodbav:"feed" ddbindex:"pk"`
		ID   string    `dynamodbav:"id" ddbindex:"sk"`
		Rank int64     `dynamodbav:"rank" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsBase struct {
		_    TableSpec `ddbindex:"rs_base,softdelete"`
		Feed string    `dynamodbav:"feed" ddbindex:"pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"sk"`
		ID   string    `dynamodbav:"id"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsShard64 struct {
		_    TableSpec `ddbindex:"rs_shard64,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=64"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
	rsShard struct {
		_    TableSpec `ddbindex:"rs_shard,softdelete"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=5"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
		Seq  float64   `dynamodbav:"seq" ddbindex:"feed.sk"`
		Tag  int       `dynamodbav:"tag"`
		Blob string    `dynamodbav:"blob,omitempty"`
	}
)

// rsCase is one partition to read: its items (in any order; sort keys
// repeat only when tied), which are tombstones, and accessors.
type rsCase[T any] struct {
	items  []T
	dead   []bool
	id     func(T) string
	key    func(T) []any
	tag    func(T) int
	tied   bool
	limits []int
	conds  []SortCondition
	// plain: no filtered or IncludeDeleted reads, and a warm Table only
	// on one form (for partitions of large entries, which take long to
	// read).
	plain bool
	// index is the index read (default "feed", but for a base table);
	// forms its forms (default the GSI and the index table).
	index string
	forms []Kind
}

// rsWant is the ground truth: the ids of the live items matching sc (and
// with tag != 3 under mode 1; tombstones too under mode 2), in the query's
// order (ties by id).
func rsWant[T any](c rsCase[T], sc SortCondition, mode int, desc bool) []string {
	var idx []int
	for i, it := range c.items {
		if (c.dead[i] && mode != 2) || !ccMatch(sc, c.key(it)) || (mode == 1 && c.tag(it) == 3) {
			continue
		}
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if r := ccCmpPrefix(c.key(c.items[a]), c.key(c.items[b])); r != 0 {
			return r
		}
		return strings.Compare(c.id(c.items[a]), c.id(c.items[b]))
	})
	ids := make([]string, len(idx))
	for i, x := range idx {
		ids[i] = c.id(c.items[x])
	}
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

// rsAll runs every combination (DDBINDEX_READSHAPES_ALL set): each form
// alone and both in turn, filtered and IncludeDeleted reads under every
// condition, and a warm Table on every chain. By default the index table is
// read alone only by All and Exists, filtered and IncludeDeleted reads
// have no sort condition, and a warm Table reads the GSI alone, which
// keeps the tests within seconds.
var rsAll = os.Getenv("DDBINDEX_READSHAPES_ALL") != ""

// rsSlow skips a test that reads a partition many times over (a minute
// or so on dynoxide) unless DDBINDEX_READSHAPES_ALL is set.
func rsSlow(t *testing.T) {
	if !rsAll {
		t.Skip("reads for a minute or so: set DDBINDEX_READSHAPES_ALL=1 to run it")
	}
}

// rsRun loads c and checks every read of it.
func rsRun[T any](t *testing.T, c rsCase[T]) {
	ctx := context.Background()
	start := time.Now()
	tb, _ := newTestTable[T](t)
	applyLoad(t, tb, c.items, c.dead)
	byID := map[string]T{}
	for _, it := range c.items {
		byID[c.id(it)] = it
	}
	conds := append([]SortCondition{{}}, c.conds...)
	limits := c.limits
	if limits == nil {
		limits = []int{1, 3, 20, 1000}
	}
	// same compares got with want, the first n of all (n < 0: all).
	same := func(all, got []string, n int) bool {
		want := all
		if n >= 0 && len(want) > n {
			want = want[:n]
		}
		if !c.tied {
			return slices.Equal(want, got)
		}
		// Ties come in the server's order: the same keys in order, and
		// distinct items of the answer (the same ones when whole).
		if len(want) != len(got) {
			return false
		}
		for i := range want {
			if ccCmpPrefix(c.key(byID[want[i]]), c.key(byID[got[i]])) != 0 {
				return false
			}
		}
		g := slices.Clone(got)
		slices.Sort(g)
		if len(slices.Compact(g)) != len(got) {
			return false
		}
		for _, id := range got {
			if !slices.Contains(all, id) {
				return false
			}
		}
		return true
	}
	fails := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if fails++; fails <= 15 {
			t.Errorf(format, args...)
		}
	}
	cases := 0
	forms := c.forms
	if forms == nil {
		forms = []Kind{GSI, IndexTable}
	}
	index := c.index
	if index == "" && forms[0] != BaseTable {
		index = "feed"
	}
	for _, sc := range conds {
		// mode 0: live items; 1: with a filter and a projection; 2:
		// IncludeDeleted.
		for mode := range 3 {
			if mode > 0 && (c.plain || (!rsAll && sc.op != opNone)) {
				continue
			}
			for _, desc := range []bool{false, true} {
				want := rsWant(c, sc, mode, desc)
				query := func(tb *Table[T], f Kind) Query[T] {
					q := tb.Query(index, "p")
					if len(forms) > 1 {
						q = q.Via(f)
					}
					if sc.op != opNone {
						q = q.Where(sc)
					}
					if mode == 2 {
						q = q.IncludeDeleted()
					}
					if mode == 1 {
						q = q.Filter(expression.Name("tag").NotEqual(expression.Value(3))).Project("tag")
					}
					if desc {
						q = q.Desc()
					}
					return q
				}
				// chains: each form alone, and the two in turn (a cursor
				// handed to the other form every page).
				for chain := range 3 {
					if (chain == 2 && c.tied) || chain >= len(forms) {
						continue
					}
					chains := limits
					if chain == 1 && !rsAll {
						chains = nil // the index table's All and Exists below
					}
					for _, limit := range chains {
						for _, warm := range []bool{false, true} {
							if warm && (c.plain || !rsAll) && chain != 0 {
								continue
							}
							reader := coldMemo(tb)
							if warm {
								for _, err := range query(reader, forms[chain%2]).All(ctx) {
									require.NoError(t, err)
								}
							}
							cases++
							where := fmt.Sprintf("cond %v mode=%d desc=%v chain=%d limit=%d warm=%v", sc, mode, desc, chain, limit, warm)
							var got []string
							tok := ""
							for pages := 0; ; pages++ {
								if pages > len(c.items)+2 {
									fail("%s: no end after %d pages", where, pages)
									break
								}
								f := forms[chain%2]
								if chain == 2 {
									f = forms[pages%2]
								}
								pg, err := query(reader, f).Limit(limit).After(tok).Page(ctx)
								if err != nil {
									fail("%s: page %d: %v", where, pages, err)
									break
								}
								for _, it := range pg.Items {
									got = append(got, c.id(it))
								}
								if pg.Cursor != "" && len(pg.Items) != limit {
									fail("%s: page %d holds %d items and has a cursor", where, pages, len(pg.Items))
								}
								if tok = pg.Cursor; tok == "" {
									break
								}
							}
							if !same(want, got, -1) {
								fail("%s:\n want %v\n got  %v", where, want, got)
							}
						}
					}
					if chain == 2 {
						continue
					}
					// All: whole, with a Limit, and broken off; and Exists.
					f := forms[chain]
					cases++
					if ok, err := query(coldMemo(tb), f).Exists(ctx); err != nil || ok != (len(want) > 0) {
						fail("cond %v mode=%d desc=%v %s Exists: %v, %v; want %v", sc, mode, desc, f, ok, err, len(want) > 0)
					}
					for _, n := range []int{0, 1, 7} {
						for _, brk := range []bool{false, true} {
							if n == 0 && brk {
								continue
							}
							cases++
							q := query(coldMemo(tb), f)
							if !brk {
								q = q.Limit(n)
							}
							var got []string
							for it, err := range q.All(ctx) {
								if err != nil {
									fail("cond %v mode=%d desc=%v %s All n=%d: %v", sc, mode, desc, f, n, err)
									break
								}
								got = append(got, c.id(it))
								if brk && len(got) == n {
									break
								}
							}
							whole := n
							if n == 0 {
								whole = -1
							}
							if !same(want, got, whole) {
								fail("cond %v mode=%d desc=%v %s All n=%d break=%v:\n want %v\n got  %v", sc, mode, desc, f, n, brk, want, got)
							}
						}
					}
				}
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d cases failed", fails, cases)
	}
	t.Logf("%d cases in %v", cases, time.Since(start))
}

// rsBlob returns a blob of n bytes for item i.
func rsBlob(i, n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat(string(rune('a'+i%26)), n)
}

// rsBigDead: tombstones at the start, in runs and scattered.
func rsBigDead(i, n int) bool {
	return i < 2 || (i >= 7 && i < 11) || i%4 == 3 || i >= n-2
}

func TestReadShapesLargeItems(t *testing.T) {
	t.Parallel()
	const n = 12
	var items []rsNum
	dead := make([]bool, n)
	for i := range n {
		size := 100_000 + (i*97_000)%290_000 // 100–390 KB
		items = append(items, rsNum{ID: fmt.Sprintf("id%03d", i), Feed: "p", Seq: float64(i) / 4, Tag: i % 5, Blob: rsBlob(i, size)})
		dead[i] = rsBigDead(i, n)
	}
	rsRun(t, rsCase[rsNum]{
		items: items, dead: dead,
		id: func(v rsNum) string { return v.ID }, key: func(v rsNum) []any { return []any{v.Seq} }, tag: func(v rsNum) int { return v.Tag },
		limits: []int{1, 3},
		plain:  true,
	})
}

// rsSize is the blob size of item i in a partition of mixed sizes: mostly
// 200 B, a few of 300 KB.
func rsSize(i int) int {
	if i%19 == 5 || i == 17 || i == 18 {
		return 300_000
	}
	return 200
}

func TestReadShapesMixedSizes(t *testing.T) {
	t.Parallel()
	rsSlow(t)
	const n = 60
	var items []rsNum
	dead := make([]bool, n)
	for i := range n {
		items = append(items, rsNum{ID: fmt.Sprintf("id%03d", i), Feed: "p", Seq: float64(i), Tag: i % 5, Blob: rsBlob(i, rsSize(i))})
		dead[i] = ccDead(i, n)
	}
	rsRun(t, rsCase[rsNum]{
		items: items, dead: dead,
		id: func(v rsNum) string { return v.ID }, key: func(v rsNum) []any { return []any{v.Seq} }, tag: func(v rsNum) int { return v.Tag },
		limits: []int{1, 3, 1000},
		conds:  []SortCondition{Le(40.0)},
	})
}

func TestReadShapesNumberEdges(t *testing.T) {
	t.Parallel()
	vals := []float64{
		-9.99999999999999e125, -1e125, -1, -1e-129, -1e-130, 0, 1e-130, 1e-129,
		0.1, math.Nextafter(0.1, 1), math.Nextafter(math.Nextafter(0.1, 1), 1), 0.30000000000000004,
		1, math.Nextafter(1, 2), 2, 1e17, 1e17 + 16, 123456789012345680, 1e125, 9.99999999999999e125,
	}
	var items []rsNum
	var dead []bool
	for i, v := range vals {
		items = append(items, rsNum{ID: fmt.Sprintf("id%03d", i), Feed: "p", Seq: v, Tag: i % 5, Blob: rsBlob(i, 1500)})
		dead = append(dead, i%3 == 1 || i == 0 || i == 7 || i == 8)
	}
	rsRun(t, rsCase[rsNum]{
		items: items, dead: dead,
		id: func(v rsNum) string { return v.ID }, key: func(v rsNum) []any { return []any{v.Seq} }, tag: func(v rsNum) int { return v.Tag },
		limits: []int{1, 2, 5},
		conds:  []SortCondition{Gt(0.0), Lt(0.0), Ge(0.1), Between(K(-1e-130), K(1e-130)), Gt(1e-130), Lt(1e125)},
	})
}

func TestReadShapesStringEdges(t *testing.T) {
	t.Parallel()
	vals := []string{
		"\x00", "\x00\x00", "\x00a", "a", "a\x00", "a\x00\x00", "a\x01", "aa", "ab", "b",
		"\u007f", "\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\uffff\x00", "\U00010000", "\U0010ffff",
		"\U0010ffff\U0010ffff", "z\U0010ffff", strings.Repeat("\U0010ffff", 250),
	}
	slices.Sort(vals)
	var items []rsStr
	var dead []bool
	for i, v := range vals {
		items = append(items, rsStr{ID: fmt.Sprintf("id%03d", i), Feed: "p", Name: v, Tag: i % 5, Blob: rsBlob(i, 900)})
		dead = append(dead, i%3 == 1 || i == 0 || i == 8 || i == 9)
	}
	rsRun(t, rsCase[rsStr]{
		items: items, dead: dead,
		id: func(v rsStr) string { return v.ID }, key: func(v rsStr) []any { return []any{v.Name} }, tag: func(v rsStr) int { return v.Tag },
		limits: []int{1, 2, 5},
		conds:  []SortCondition{BeginsWith("a"), Gt("a"), Lt("\uffff"), Between(K("\x00"), K("a\x00")), BeginsWith("\U0010ffff")},
	})
}

func TestReadShapesBinaryEdges(t *testing.T) {
	t.Parallel()
	vals := [][]byte{
		{0}, {0, 0}, {0, 0xff}, {1}, {1, 0}, {1, 0, 0}, {1, 0xff}, {1, 0xff, 0xff}, {2}, {0x7f, 0xff},
		{0x80}, {0xfe, 0xff}, {0xff}, {0xff, 0}, {0xff, 0xff}, bytes.Repeat([]byte{0xff}, 500),
	}
	slices.SortFunc(vals, bytes.Compare)
	var items []rsBin
	var dead []bool
	for i, v := range vals {
		items = append(items, rsBin{ID: fmt.Sprintf("id%03d", i), Feed: "p", Key: v, Tag: i % 5, Blob: rsBlob(i, 700)})
		dead = append(dead, i%3 == 1 || i == 0 || i == 5)
	}
	rsRun(t, rsCase[rsBin]{
		items: items, dead: dead,
		id: func(v rsBin) string { return v.ID }, key: func(v rsBin) []any { return []any{v.Key} }, tag: func(v rsBin) int { return v.Tag },
		limits: []int{1, 2, 5},
		conds:  []SortCondition{Gt([]byte{1}), Lt([]byte{0xff}), Between(K([]byte{0, 0xff}), K([]byte{0xff, 0}))},
	})
}

func TestReadShapesTies(t *testing.T) {
	t.Parallel()
	rsSlow(t)
	const n = 48
	var items []rsTie
	dead := make([]bool, n)
	for i := range n {
		size := 200
		if i%7 == 3 {
			size = 120_000
		}
		items = append(items, rsTie{ID: fmt.Sprintf("id%03d", i), Feed: "p", Rank: int64(i / 6), Tag: i % 5, Blob: rsBlob(i, size)})
		dead[i] = i%6 == 1 || i%6 == 2 || (i >= 18 && i < 30) || i%11 == 0
	}
	rsRun(t, rsCase[rsTie]{
		items: items, dead: dead, tied: true,
		id: func(v rsTie) string { return v.ID }, key: func(v rsTie) []any { return []any{v.Rank} }, tag: func(v rsTie) int { return v.Tag },
		limits: []int{1, 2, 5},
		conds:  []SortCondition{Eq(int64(2)), Gt(int64(1)), Le(int64(5))},
	})
}

func TestReadShapesSharded(t *testing.T) {
	t.Parallel()
	rsSlow(t)
	const n = 70
	var items []rsShard
	dead := make([]bool, n)
	for i := range n {
		size := 300
		if i%23 == 4 {
			size = 250_000
		}
		items = append(items, rsShard{ID: fmt.Sprintf("id%03d", i), Feed: "p", Seq: float64(i) * 1.5, Tag: i % 5, Blob: rsBlob(i, size)})
		dead[i] = ccDead(i, n)
	}
	rsRun(t, rsCase[rsShard]{
		items: items, dead: dead,
		id: func(v rsShard) string { return v.ID }, key: func(v rsShard) []any { return []any{v.Seq} }, tag: func(v rsShard) int { return v.Tag },
		limits: []int{1, 3, 20},
		conds:  []SortCondition{Gt(10.0), Between(K(3.0), K(60.0))},
	})
}

func TestReadShapesSharded64(t *testing.T) {
	t.Parallel()
	rsSlow(t)
	const n = 150
	var items []rsShard64
	dead := make([]bool, n)
	for i := range n {
		items = append(items, rsShard64{ID: fmt.Sprintf("id%03d", i), Feed: "p", Seq: float64(i%50) + float64(i)/1000, Tag: i % 5, Blob: rsBlob(i, 300)})
		dead[i] = ccDead(i, n) || (i >= 60 && i < 110)
	}
	slices.SortFunc(items, func(a, b rsShard64) int { return cmp.Compare(a.Seq, b.Seq) })
	rsRun(t, rsCase[rsShard64]{
		items: items, dead: dead,
		id: func(v rsShard64) string { return v.ID }, key: func(v rsShard64) []any { return []any{v.Seq} }, tag: func(v rsShard64) int { return v.Tag },
		limits: []int{1, 7, 1000},
		conds:  []SortCondition{Ge(20.0)},
		plain:  true,
	})
}

func TestReadShapesLSITies(t *testing.T) {
	t.Parallel()
	rsSlow(t)
	const n = 40
	var items []rsLSI
	dead := make([]bool, n)
	for i := range n {
		size := 200
		if i%9 == 4 {
			size = 150_000
		}
		items = append(items, rsLSI{Feed: "p", ID: fmt.Sprintf("id%03d", (i*17)%n), Rank: int64(i / 5), Tag: i % 5, Blob: rsBlob(i, size)})
		dead[i] = i%5 == 1 || (i >= 15 && i < 26) || i%7 == 0
	}
	rsRun(t, rsCase[rsLSI]{
		items: items, dead: dead, tied: true, forms: []Kind{LSI},
		id: func(v rsLSI) string { return v.ID }, key: func(v rsLSI) []any { return []any{v.Rank} }, tag: func(v rsLSI) int { return v.Tag },
		limits: []int{1, 2, 4},
		conds:  []SortCondition{Eq(int64(3)), Gt(int64(2)), Le(int64(5))},
	})
}

func TestReadShapesBaseTable(t *testing.T) {
	t.Parallel()
	vals := []float64{-1e125, -1, -1e-130, 0, 1e-130, 0.1, math.Nextafter(0.1, 1), 1, math.Nextafter(1, 2), 2, 1e17, 1e17 + 16, 1e125}
	var items []rsBase
	var dead []bool
	for i, v := range vals {
		items = append(items, rsBase{Feed: "p", Seq: v, ID: fmt.Sprintf("id%03d", i), Tag: i % 5, Blob: rsBlob(i, 1500)})
		dead = append(dead, i%3 == 1 || i == 0 || i == 6)
	}
	rsRun(t, rsCase[rsBase]{
		items: items, dead: dead, index: "", forms: []Kind{BaseTable},
		id: func(v rsBase) string { return fmt.Sprint(v.Seq) }, key: func(v rsBase) []any { return []any{v.Seq} }, tag: func(v rsBase) int { return v.Tag },
		limits: []int{1, 2, 5},
		conds:  []SortCondition{Gt(0.0), Lt(1e-130), Between(K(-1e-130), K(0.1))},
	})
}

package ddbindex

// A differential test of paged reads: partitions with tombstone patterns
// (uniform densities, long runs, alternating runs, everything dead) are
// written through Put and Delete, and random reads page through them with
// random limits, orders, sort conditions, filters and IncludeDeleted, a
// cursor going on under another condition than the one that minted it.
// Every page must equal what the ground truth computed here says: the
// live items (or all, with IncludeDeleted) that the page's condition and
// filter match after the last item returned, in the server's order.

import (
	"bytes"
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
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// pdItem keeps one partition in every kind of index: a derived composite
// GSI, native Number (with ties), String and Binary GSIs, a multi-attribute
// native-gsi, a sharded derived GSI and an index table.
type pdItem struct {
	_       TableSpec `ddbindex:"pditems,softdelete"`
	_       IndexSpec `ddbindex:"comp,type=gsi,name=pditems-comp,sk=csk"`
	_       IndexSpec `ddbindex:"num,type=gsi,name=pditems-num"`
	_       IndexSpec `ddbindex:"str,type=gsi,name=pditems-str"`
	_       IndexSpec `ddbindex:"bin,type=gsi,name=pditems-bin"`
	_       IndexSpec `ddbindex:"ngm,type=native-gsi,name=pditems-ngm"`
	_       IndexSpec `ddbindex:"shd,type=gsi,name=pditems-shd,pk=spk,sk=ssk,shards=3"`
	_       IndexSpec `ddbindex:"tab,type=table"`
	_       IndexSpec `ddbindex:"ngs,type=native-gsi,name=pditems-ngs,shards=3"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Part    string    `dynamodbav:"part" ddbindex:"comp.pk;num.pk;str.pk;bin.pk;ngm.pk;shd.pk;tab.pk;ngs.pk"`
	Cat     string    `dynamodbav:"cat" ddbindex:"comp.sk:0;shd.sk:0;tab.sk:0;ngm.sk:0"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"comp.sk:1"`
	Rank    float64   `dynamodbav:"rank" ddbindex:"num.sk;shd.sk:1;tab.sk:1;ngm.sk:1;ngs.sk:1"`
	Name    string    `dynamodbav:"name" ddbindex:"str.sk;ngs.sk:0"`
	Bits    []byte    `dynamodbav:"bits" ddbindex:"bin.sk"`
	Votes   int       `dynamodbav:"votes"`
	Body    string    `dynamodbav:"body"`
	Deleted bool      `dynamodbav:"-" ddbindex:"deleted"`
}

var pdIndexes = []string{"comp", "num", "str", "bin", "ngm", "shd", "tab", "ngs"}

// pdTuple is an item's sort components in index ix.
func pdTuple(ix string, it pdItem) []any {
	switch ix {
	case "comp":
		return []any{it.Cat, it.Seq}
	case "num":
		return []any{it.Rank}
	case "str":
		return []any{it.Name}
	case "bin":
		return []any{it.Bits}
	case "ngs":
		return []any{it.Name, it.Rank}
	}
	return []any{it.Cat, it.Rank} // ngm, shd, tab
}

// pdCmpPrefix compares t's first len(p) components with p.
func pdCmpPrefix(t, p []any) int {
	for i := range p {
		if c := kiCmp(t[i], p[i]); c != 0 {
			return c
		}
	}
	return 0
}

// pdCond is a sort condition and its ground truth.
type pdCond struct {
	op     string
	lo, hi []any
}

func (c *pdCond) String() string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s%v%v", c.op, c.lo, c.hi)
}

func (c *pdCond) cond() SortCondition {
	switch c.op {
	case "eq":
		return Eq(c.lo...)
	case "lt":
		return Lt(c.lo...)
	case "le":
		return Le(c.lo...)
	case "gt":
		return Gt(c.lo...)
	case "ge":
		return Ge(c.lo...)
	case "between":
		return Between(K(c.lo...), K(c.hi...))
	}
	return BeginsWith(c.lo...)
}

func (c *pdCond) match(t []any) bool {
	if c == nil {
		return true
	}
	switch c.op {
	case "eq":
		return pdCmpPrefix(t, c.lo) == 0
	case "lt":
		return pdCmpPrefix(t, c.lo) < 0
	case "le":
		return pdCmpPrefix(t, c.lo) <= 0
	case "gt":
		return pdCmpPrefix(t, c.lo) > 0
	case "ge":
		return pdCmpPrefix(t, c.lo) >= 0
	case "between":
		return pdCmpPrefix(t, c.lo) >= 0 && pdCmpPrefix(t, c.hi) <= 0
	}
	n := len(c.lo) - 1
	if pdCmpPrefix(t, c.lo[:n]) != 0 {
		return false
	}
	switch p := c.lo[n].(type) {
	case string:
		return strings.HasPrefix(t[n].(string), p)
	case []byte:
		return bytes.HasPrefix(t[n].([]byte), p)
	}
	panic("begins_with")
}

var (
	pdCats  = []string{"#", "$", "$23", "a", "a#", "a$", "a b", "ab", "abc", "b", "op", "open", "opé", "ü", "\U0010FFFF"}
	pdRanks = []float64{-1e20, -12345.678, -3.5, -1, -0.001, 0, 1e-7, 0.5, 1, 2, 3, 10, 99.99, 123456789012345, 1e21}
	pdNames = []string{"#", "$", "a", "a\x00", "a#", "a$", "a b", "ab", "abc", "abd", "b", "op", "open", "opé", "ü", "\U0010FFFF", "z"}
	pdBins  = [][]byte{{0}, {0, 0}, {0, 0xFF}, {1}, {1, 0}, {1, 0xFF}, {1, 0xFF, 0}, {2}, {0x7F}, {0x80}, {0x80, 0}, {0xFF}, {0xFF, 0xFF}, []byte("ab"), []byte("abc")}
)

// pdPattern returns which of n items (in Seq order) are dead.
func pdPattern(r *rand.Rand, kind string, n int) []bool {
	dead := make([]bool, n)
	switch {
	case strings.HasPrefix(kind, "uniform"):
		d, _ := strconv.ParseFloat(strings.TrimPrefix(kind, "uniform"), 64)
		for i := range dead {
			dead[i] = r.Float64() < d
		}
	case kind == "runs":
		for i := 0; i < n; {
			live := 1 + r.IntN(15)
			run := 20 + r.IntN(180)
			for j := i + live; j < min(n, i+live+run); j++ {
				dead[j] = true
			}
			i += live + run
		}
	case kind == "alternating":
		for i := range dead {
			dead[i] = i%30 >= 8
		}
	case kind == "alldead":
		for i := range dead {
			dead[i] = true
		}
	case kind == "lastlive":
		for i := range dead {
			dead[i] = i != n-1
		}
	}
	return dead
}

// pdScenario is one partition.
type pdScenario struct {
	part  string
	items map[string]pdItem // by ID; Deleted set for tombstones
	order map[string][]string
}

// pdLoad writes a partition of n items with the pattern kind; correlated
// makes every sort key follow Seq (so runs of tombstones are runs in every
// index).
//
// Without write-through (a server without transactions) the index table's
// entries are written here, as the stream consumer would write them.
func pdLoad(t *testing.T, tb *Table[pdItem], r *rand.Rand, part, kind string, n int, correlated, through bool) *pdScenario {
	ctx := context.Background()
	dead := pdPattern(r, kind, n)
	sc := &pdScenario{part: part, items: map[string]pdItem{}, order: map[string][]string{}}
	var all []pdItem
	for i := range n {
		it := pdItem{
			ID: fmt.Sprintf("%s-%04d", part, i), Part: part, Seq: int64(i),
			Cat:   pdCats[r.IntN(len(pdCats))],
			Rank:  pdRanks[r.IntN(len(pdRanks))],
			Name:  pdNames[r.IntN(len(pdNames))],
			Bits:  pdBins[r.IntN(len(pdBins))],
			Votes: r.IntN(10),
			Body:  strings.Repeat("x", 150+r.IntN(3000)),
		}
		if correlated {
			it.Cat = pdCats[i*len(pdCats)/n]
			it.Rank = float64(i / 4)
			it.Name = fmt.Sprintf("n%05d", i/3)
			it.Bits = []byte{byte(i / 256), byte(i % 256 / 2)}
		}
		all = append(all, it)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 4 {
		wg.Go(func() {
			for i := range work {
				it := all[i]
				err := func() error {
					if _, err := tb.Put(ctx, it); err != nil {
						return err
					}
					if !dead[i] && i%7 != 3 {
						return nil
					}
					// Some live items are deleted and created again.
					if err := tb.Delete(ctx, it); err != nil {
						return err
					}
					if !dead[i] {
						_, err := tb.Put(ctx, it)
						return err
					}
					return nil
				}()
				if err == nil && !through {
					d, _ := tb.index("tab")
					var en map[string]types.AttributeValue
					if en, err = tb.entryOf(d, it, "1"); err == nil {
						if dead[i] {
							en[tb.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
						}
						_, err = tb.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.tableOf(d)), Item: en})
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range all {
		work <- i
	}
	close(work)
	wg.Wait()
	require.NoError(t, firstErr)
	for i, it := range all {
		it.Deleted = dead[i]
		sc.items[it.ID] = it
	}
	// The server's order of every index (ties included), read whole with
	// tombstones, checked against the items.
	for _, ix := range pdIndexes {
		p, err := tb.Query(ix, part).IncludeDeleted().Limit(100000).Page(ctx)
		require.NoError(t, err, ix)
		require.Empty(t, p.Cursor, ix)
		require.Len(t, p.Items, n, "index %s holds every item", ix)
		var ids []string
		for i, got := range p.Items {
			want := sc.items[got.ID]
			require.Equal(t, want.Deleted, got.Deleted, "%s: %s", ix, got.ID)
			if i > 0 {
				prev := sc.items[ids[i-1]]
				require.LessOrEqual(t, pdCmpPrefix(pdTuple(ix, prev), pdTuple(ix, want)), 0, "%s order", ix)
			}
			ids = append(ids, got.ID)
		}
		sc.order[ix] = ids
	}
	return sc
}

// pdRandCond returns a random condition that index ix accepts (nil: none).
func pdRandCond(r *rand.Rand, ix string, sc *pdScenario) *pdCond {
	if r.IntN(3) == 0 {
		return nil
	}
	ids := sc.order[ix]
	pick := func() []any {
		if len(ids) > 0 && r.IntN(4) != 0 {
			return pdTuple(ix, sc.items[ids[r.IntN(len(ids))]])
		}
		switch ix {
		case "comp":
			return []any{pdCats[r.IntN(len(pdCats))], int64(r.IntN(len(ids) + 2))}
		case "num":
			return []any{pdRanks[r.IntN(len(pdRanks))]}
		case "str":
			return []any{pdNames[r.IntN(len(pdNames))]}
		case "bin":
			return []any{pdBins[r.IntN(len(pdBins))]}
		case "ngs":
			return []any{pdNames[r.IntN(len(pdNames))], pdRanks[r.IntN(len(pdRanks))]}
		}
		return []any{pdCats[r.IntN(len(pdCats))], pdRanks[r.IntN(len(pdRanks))]}
	}
	a, b := pick(), pick()
	// Composite indexes take tuple prefixes; the native multi-attribute
	// one takes one value but for equalities and a Between sharing the
	// leading value.
	multi := len(a) > 1
	na := len(a)
	if multi {
		na = 1 + r.IntN(2)
	}
	ops := []string{"eq", "lt", "le", "gt", "ge", "between", "begins"}
	op := ops[r.IntN(len(ops))]
	switch op {
	case "begins":
		switch v := a[0].(type) {
		case string:
			if len(v) == 0 {
				return &pdCond{op: "eq", lo: a[:1]}
			}
			rs := []rune(v)
			pre := string(rs[:1+r.IntN(len(rs))])
			if strings.Contains(pre, "\x00") {
				// dynoxide's begins_with takes a prefix "a\x00" for "a".
				return &pdCond{op: "eq", lo: a[:1]}
			}
			return &pdCond{op: op, lo: []any{pre}}
		case []byte:
			return &pdCond{op: op, lo: []any{slices.Clone(v[:1+r.IntN(len(v))])}}
		}
		return &pdCond{op: "eq", lo: a[:1]}
	case "between":
		if ix == "ngm" || ix == "ngs" {
			if na == 1 {
				lo, hi := a[:1], b[:1]
				if pdCmpPrefix(lo, hi) > 0 {
					lo, hi = hi, lo
				}
				return &pdCond{op: op, lo: lo, hi: hi}
			}
			lo, hi := a, []any{a[0], b[1]}
			if pdCmpPrefix(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			return &pdCond{op: op, lo: lo, hi: hi}
		}
		lo, hi := a[:na], b[:1+r.IntN(len(b))]
		if pdCmpPrefix(lo, hi[:min(len(lo), len(hi))]) > 0 {
			lo, hi = b[:len(hi)], a[:na]
		}
		return &pdCond{op: op, lo: lo, hi: hi}
	case "eq":
		return &pdCond{op: op, lo: a[:na]}
	}
	if ix == "ngm" || ix == "ngs" {
		na = 1
	}
	return &pdCond{op: op, lo: a[:na]}
}

// pdState is what a page is read with.
type pdState struct {
	cond   *pdCond
	votes  int // filter votes >= votes; -1: no filter
	incl   bool
	maxReq int
	units  float64
	proj   bool
}

func (s pdState) String() string {
	return fmt.Sprintf("cond=%v votes>=%d incl=%v maxReq=%d units=%g proj=%v", s.cond, s.votes, s.incl, s.maxReq, s.units, s.proj)
}

// pdCounts are what the test checked.
type pdCounts struct {
	reads, pages, items, emptyTail, refused, switches, capped int
}

// pdSeeds returns the seeds to run: DDBINDEX_PD_SEEDS (comma-separated),
// else 1 to def. DDBINDEX_PD_READS sets the reads per partition and index.
func pdSeeds(def int) []uint64 {
	if s := os.Getenv("DDBINDEX_PD_SEEDS"); s != "" {
		var out []uint64
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(f, 10, 64)
			if err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	out := make([]uint64, def)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestPageDifferential pages through random partitions with random reads
// and checks every page against the ground truth.
func TestPageDifferential(t *testing.T) {
	t.Parallel()
	through := ddbtest.Has(ddbtest.Transactions)
	for _, seed := range pdSeeds(1) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := ddbtest.MultiKey(t)
			tb, _ := newTestTableOn[pdItem](t, c, func(o *Options) { o.WriteThrough = through })
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			kinds := []string{"uniform0", "uniform0.5", "uniform0.9", "uniform0.99", "runs", "alternating", "alldead", "lastlive"}
			var scs []*pdScenario
			for i, kind := range kinds {
				n := 60 + r.IntN(200)
				scs = append(scs, pdLoad(t, tb, r, fmt.Sprintf("p%d", i), kind, n, r.IntN(2) == 0, through))
			}
			var cnt pdCounts
			reads := 4
			if raceEnabled {
				reads = 2 // the race detector slows each read several times
			}
			if s := os.Getenv("DDBINDEX_PD_READS"); s != "" {
				reads, _ = strconv.Atoi(s)
			}
			for _, sc := range scs {
				for _, ix := range pdIndexes {
					for range reads {
						pdRead(t, tb, r, sc, ix, &cnt)
						if t.Failed() {
							return
						}
					}
				}
			}
			t.Logf("seed %d: %+v", seed, cnt)
		})
	}
}

// pdExpect returns the IDs a read of ix with st matches after position pos
// (an index into order; -1: the start), in reading order.
func pdExpect(sc *pdScenario, ix string, order []string, pos int, st pdState) []string {
	var out []string
	for _, id := range order[pos+1:] {
		it := sc.items[id]
		if it.Deleted && !st.incl {
			continue
		}
		if st.votes >= 0 && it.Votes < st.votes {
			continue
		}
		if !st.cond.match(pdTuple(ix, it)) {
			continue
		}
		out = append(out, id)
	}
	return out
}

func pdRandState(r *rand.Rand, ix string, sc *pdScenario) pdState {
	st := pdState{cond: pdRandCond(r, ix, sc), votes: -1}
	if r.IntN(5) == 0 {
		st.votes = r.IntN(10)
	}
	st.incl = r.IntN(12) == 0
	return st
}

// pdOrder returns index ix's items in reading order, and each one's place.
func pdOrder(sc *pdScenario, ix string, desc bool) ([]string, map[string]int) {
	order := slices.Clone(sc.order[ix])
	if desc {
		slices.Reverse(order)
	}
	idx := map[string]int{}
	for i, id := range order {
		idx[id] = i
	}
	return order, idx
}

// pdQuery applies a read's condition, order, filter and IncludeDeleted to q.
func pdQuery(q Query[pdItem], st pdState, desc bool) Query[pdItem] {
	if st.cond != nil {
		q = q.Where(st.cond.cond())
	}
	if desc {
		q = q.Desc()
	}
	if st.votes >= 0 {
		q = q.Filter(expression.Name("votes").GreaterThanEqual(expression.Value(st.votes)))
	}
	if st.incl {
		q = q.IncludeDeleted()
	}
	return q
}

func pdRead(t *testing.T, tb *Table[pdItem], r *rand.Rand, sc *pdScenario, ix string, cnt *pdCounts) {
	ctx := context.Background()
	desc := r.IntN(2) == 0
	order, idx := pdOrder(sc, ix, desc)
	st := pdRandState(r, ix, sc)
	cursor, pos := "", -1
	cnt.reads++
	if r.IntN(4) == 0 {
		// All, with or without a Limit.
		q := pdQuery(tb.Query(ix, sc.part), st, desc)
		want := pdExpect(sc, ix, order, -1, st)
		if r.IntN(2) == 0 {
			n := 1 + r.IntN(60)
			q = q.Limit(n)
			want = want[:min(n, len(want))]
		}
		var got []string
		for it, err := range q.All(ctx) {
			if (ix == "ngm" || ix == "ngs") && errors.Is(err, ErrInvalidQuery) {
				return
			}
			if !assertNoErr(t, err, "All") {
				return
			}
			got = append(got, it.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("All index %s part %s desc=%v %v:\ngot  %v\nwant %v", ix, sc.part, desc, st, pdShort(got), pdShort(want))
		}
		return
	}
	var log []string
	seen := map[string]bool{}
	capped := false
	for page := 0; ; page++ {
		if cursor != "" && !capped && r.IntN(3) == 0 {
			// Go on under another condition (and sometimes another filter).
			nst := pdRandState(r, ix, sc)
			if r.IntN(3) != 0 {
				nst.votes, nst.incl = st.votes, st.incl
			}
			st = nst
			cnt.switches++
			seen = map[string]bool{}
		}
		st.maxReq = 0
		if r.IntN(10) == 0 {
			st.maxReq = 1 + r.IntN(3)
			if ix == "shd" || ix == "ngs" {
				st.maxReq += 2 // a sharded page needs a request per shard
			}
		}
		limit := 1 + r.IntN(8)
		if r.IntN(3) == 0 {
			limit = 1 + r.IntN(50)
		}
		q := pdQuery(tb.Query(ix, sc.part).Limit(limit).After(cursor), st, desc)
		if st.maxReq > 0 {
			q = q.MaxRequests(st.maxReq)
		}
		st.units, st.proj = 0, r.IntN(6) == 0
		if r.IntN(15) == 0 {
			st.units = float64(1 + r.IntN(4))
		}
		if st.units > 0 {
			q = q.MaxReadUnits(st.units)
		}
		if st.proj {
			q = q.Project("votes") // every form adds the base key
		}
		p, err := q.Page(ctx)
		what := fmt.Sprintf("index %s part %s (%d items) desc=%v page %d limit %d %v after %q\nhistory:\n%s", ix, sc.part, len(order), desc, page, limit, st, cursor, strings.Join(log, "\n"))
		if (ix == "ngm" || ix == "ngs") && errors.Is(err, ErrInvalidQuery) && st.cond != nil {
			cnt.refused++
			return
		}
		capped = errors.Is(err, ErrCapReached)
		if capped {
			cnt.capped++
		} else if !assertNoErr(t, err, what) {
			return
		}
		want := pdExpect(sc, ix, order, pos, st)
		var got []string
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		cnt.pages++
		cnt.items += len(got)
		log = append(log, fmt.Sprintf("  page %d limit %d %v: %d items %v, cursor %v, stats %+v", page, limit, st, len(got), pdShort(got), p.Cursor != "", p.Stats))
		for _, id := range got {
			if seen[id] {
				t.Errorf("%s: %s returned twice", what, id)
				return
			}
			seen[id] = true
		}
		n := min(len(want), limit)
		if capped {
			n = len(got)
			if n > len(want) {
				n = len(want)
			}
		}
		if !slices.Equal(got, want[:n]) {
			var tg []string
			for _, id := range got {
				tg = append(tg, fmt.Sprintf("%s=%q", id, fmt.Sprint(pdTuple(ix, sc.items[id]))))
			}
			t.Errorf("%s\ngot  %v\nwant %v\ngot tuples %v", what, pdShort(got), pdShort(want[:min(len(want), limit)]), tg)
			return
		}
		if len(got) > 0 {
			pos = idx[got[len(got)-1]]
		}
		if capped {
			if p.Cursor == "" {
				t.Errorf("%s: a capped page without a cursor", what)
				return
			}
			cursor = p.Cursor
			continue
		}
		if p.Cursor == "" {
			if len(want) > limit {
				t.Errorf("%s: cursor \"\" with %d more matching items: %v", what, len(want)-limit, pdShort(want[limit:]))
			}
			return
		}
		if len(got) < limit {
			t.Errorf("%s: a page of %d < limit with a cursor", what, len(got))
			return
		}
		if len(want) == limit {
			cnt.emptyTail++
		}
		cursor = p.Cursor
		if page > 2000 {
			t.Errorf("%s: endless", what)
			return
		}
	}
}

func assertNoErr(t *testing.T, err error, what string) bool {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

func pdShort(ids []string) string {
	if len(ids) <= 12 {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v ... %v (%d)", ids[:6], ids[len(ids)-6:], len(ids))
}

// TestPageDifferentialConcurrent pages through partitions while a writer
// deletes and creates again (with the same keys) a third of their items:
// no read returns an item twice or out of order, and every item live
// through the whole read is returned.
func TestPageDifferentialConcurrent(t *testing.T) {
	t.Parallel()
	through := ddbtest.Has(ddbtest.Transactions)
	for _, seed := range pdSeeds(1) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := ddbtest.MultiKey(t)
			tb, _ := newTestTableOn[pdItem](t, c, func(o *Options) { o.WriteThrough = through })
			r := rand.New(rand.NewPCG(seed, 0xc0c0))
			ctx := context.Background()
			var scs []*pdScenario
			for i, kind := range []string{"uniform0.5", "runs", "uniform0"} {
				scs = append(scs, pdLoad(t, tb, r, fmt.Sprintf("c%d", i), kind, 150+r.IntN(100), r.IntN(2) == 0, through))
			}
			reads := 0
			for _, sc := range scs {
				ids := slices.Sorted(maps.Keys(sc.items))
				volatile := map[string]bool{}
				for _, id := range ids {
					if r.IntN(3) == 0 {
						volatile[id] = true
					}
				}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var werr error
				var writes int
				wg.Go(func() {
					wr := rand.New(rand.NewPCG(seed, 1))
					live := map[string]bool{}
					for id := range volatile {
						live[id] = !sc.items[id].Deleted
					}
					vs := slices.Sorted(maps.Keys(volatile))
					for {
						select {
						case <-stop:
							return
						default:
						}
						id := vs[wr.IntN(len(vs))]
						it := sc.items[id]
						it.Deleted = false
						var err error
						if live[id] {
							err = tb.Delete(ctx, it)
						} else {
							_, err = tb.Put(ctx, it)
						}
						if err != nil && !errors.Is(err, ErrConflict) {
							werr = err
							return
						}
						live[id] = !live[id]
						writes++
					}
				})
				for _, ix := range pdIndexes {
					for range 4 {
						reads++
						pdReadConcurrent(t, tb, r, sc, ix, volatile)
					}
				}
				close(stop)
				wg.Wait()
				require.NoError(t, werr)
				t.Logf("partition %s: %d writes during the reads", sc.part, writes)
				if t.Failed() {
					return
				}
			}
			t.Logf("seed %d: %d reads", seed, reads)
		})
	}
}

func pdReadConcurrent(t *testing.T, tb *Table[pdItem], r *rand.Rand, sc *pdScenario, ix string, volatile map[string]bool) {
	ctx := context.Background()
	desc := r.IntN(2) == 0
	order, idx := pdOrder(sc, ix, desc)
	cond := pdRandCond(r, ix, sc)
	cursor, pos := "", -1
	var got []string
	for page := 0; ; page++ {
		limit := 1 + r.IntN(10)
		q := tb.Query(ix, sc.part).Limit(limit).After(cursor)
		if cond != nil {
			q = q.Where(cond.cond())
		}
		if desc {
			q = q.Desc()
		}
		p, err := q.Page(ctx)
		if (ix == "ngm" || ix == "ngs") && errors.Is(err, ErrInvalidQuery) {
			return
		}
		require.NoError(t, err)
		for _, it := range p.Items {
			i, ok := idx[it.ID]
			require.True(t, ok)
			if i <= pos {
				t.Errorf("index %s %v desc=%v: %s (at %d) after %d: twice or out of order; read %v", ix, cond, desc, it.ID, i, pos, pdShort(got))
				return
			}
			pos = i
			got = append(got, it.ID)
		}
		if cursor = p.Cursor; cursor == "" {
			break
		}
		require.Less(t, page, 5000)
	}
	gotSet := map[string]bool{}
	for _, id := range got {
		gotSet[id] = true
	}
	for _, id := range order {
		it := sc.items[id]
		if volatile[id] || it.Deleted || !cond.match(pdTuple(ix, it)) {
			continue
		}
		if !gotSet[id] {
			t.Errorf("index %s %v desc=%v: %s, live through the read, is missing", ix, cond, desc, id)
			return
		}
	}
}

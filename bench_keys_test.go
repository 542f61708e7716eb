package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// BenchmarkPageFillKeys is BenchmarkPageFill on GSIs whose sort key is a
// native attribute: a Number, a String, and a Number with ties (four items
// share each value, which DynamoDB orders among themselves), read in both
// orders, with entries of about 200 B, 240 B and 1 KB. Each partition is read
// whole and under four sort conditions (bkRanges): Between bounds and a single
// Gt or Lt bound that start inside a run of tombstones or end inside one. For
// each it reports the requests and read units of five pages of 20 for the
// library (warm: a Table that read the partition before; cold: one that did
// not), and their ratios to the naive loop (Limit = what the page still
// needs, the next page from the LastEvaluatedKey) and to the floor (one
// request per page, ending at its last live item), both under the same
// condition and all measured in the same run.
func BenchmarkPageFillKeys(b *testing.B) {
	ctx := context.Background()
	num, _ := newTestTable[bkNum](b)
	str, _ := newTestTable[bkStr](b)
	tie, _ := newTestTable[bkTie](b)
	patterns := map[string]bool{
		"uniform 0": true, "uniform 0.9": true, "run 500 after page 1, bg 0": true,
		"alternating 25 live/100 dead, bg 0": true,
	}
	var ps []pfmPattern
	for _, p := range pfmPatterns(bkItems, []int{500}) {
		if patterns[p.name] {
			ps = append(ps, p)
		}
	}
	// The patterns added later come after, so that the first ones keep their
	// partitions (the partition key's length is part of the entry size).
	for _, p := range pfmPatterns(bkItems, []int{500}) {
		if p.name == "run 500 mid page 2, bg 0" {
			ps = append(ps, p)
		}
	}
	ps = append(ps, bkPatterns(bkItems)...)
	for pi, p := range ps {
		for _, size := range []int{240, 1024, 200} {
			for _, desc := range []bool{true, false} {
				order := "desc"
				if !desc {
					order = "asc"
				}
				channel := fmt.Sprintf("p%d-%d-%s", pi, size, order)
				name := fmt.Sprintf("%s/%dB/%s", strings.ReplaceAll(p.name, " ", "_"), size, order)
				ranges := bkRanges(p.dead, desc)
				bkRun(b, ctx, "number/"+name, num, channel, p.dead, size, desc, ranges, func(seq int) any { return int64(seq) }, func(seq int) bkNum {
					return bkNum{ID: fmt.Sprintf("id%05d", seq), Channel: channel, Seq: int64(seq)}
				})
				bkRun(b, ctx, "string/"+name, str, channel, p.dead, size, desc, ranges, func(seq int) any { return bkName(seq) }, func(seq int) bkStr {
					return bkStr{ID: fmt.Sprintf("id%05d", seq), Channel: channel, Name: bkName(seq)}
				})
				bkRun(b, ctx, "ties/"+name, tie, channel, p.dead, size, desc, ranges, func(seq int) any { return int64(seq / 4) }, func(seq int) bkTie {
					return bkTie{ID: fmt.Sprintf("id%05d", seq), Channel: channel, Rank: int64(seq / 4)}
				})
			}
		}
	}
}

// bkName is the String sort key of item seq: its order is seq's.
func bkName(seq int) string { return fmt.Sprintf("n%05d", seq) }

// bkPatterns are tombstone patterns of n entries, in reading order, that
// pfmPatterns does not hold: runs between pages, and runs inside pages 2
// to 5.
func bkPatterns(n int) []pfmPattern {
	// runs puts r tombstones after each count of live items in after.
	runs := func(r int, after ...int) []bool {
		dead := make([]bool, n)
		at, live := 0, 0
		for _, a := range after {
			for ; at < n && live < a; at++ {
				if !dead[at] {
					live++
				}
			}
			for i := at; i < at+r && i < n; i++ {
				dead[i] = true
			}
			at = min(at+r, n)
		}
		return dead
	}
	return []pfmPattern{
		{name: "runs 150 between pages 1-5, bg 0", dead: runs(150, 20, 40, 60, 80), kind: "clustered"},
		{name: "runs 150 inside pages 2-5, bg 0", dead: runs(150, 30, 50, 70, 90), kind: "clustered"},
	}
}

// bkRange is a sort condition of BenchmarkPageFillKeys: it matches the items
// seq lo..hi, which are entries from..to-1 in reading order.
type bkRange struct {
	name     string
	op       string // "between", "gt" (lo is the bound) or "lt" (hi is)
	lo, hi   int
	from, to int
}

// cond is r's condition on a sort key whose value for item seq is key(seq).
func (r bkRange) cond(key func(seq int) any) SortCondition {
	switch r.op {
	case "gt":
		return Gt(key(r.lo - 1))
	case "lt":
		return Lt(key(r.hi + 1))
	}
	return Between(key(r.lo), key(r.hi))
}

// bkRunMin is the shortest run of tombstones a range bound is placed in.
const bkRunMin = 100

// bkRanges returns the sort conditions each partition of pattern dead (in
// reading order) is also read under:
//
//   - between_from_run: Between, from the middle of the first run of
//     bkRunMin tombstones or more to a tenth of the partition before its end;
//   - between_into_run: Between, from the sixth entry to the middle of the
//     last such run that fewer than five pages of live items precede;
//   - a single bound from the first of those places to the partition's end
//     (ascending Gt, descending Lt), and one from the partition's start to the
//     second (ascending Lt, descending Gt).
//
// Where the pattern has no such run, a range starts between its 10th and
// 11th live items and ends between its 90th and 91st, among the tombstones
// between them if there are any. Every bound is then moved outwards to a
// whole group of four items (which can take in a live item next to it), so
// that a sort key with four items per value (bkTie) matches the same items.
func bkRanges(dead []bool, desc bool) []bkRange {
	n := len(dead)
	type run struct{ start, end, liveBefore int }
	var runs []run
	live := 0
	for i := 0; i < n; {
		if !dead[i] {
			live++
			i++
			continue
		}
		j := i
		for j < n && dead[j] {
			j++
		}
		if j-i >= bkRunMin {
			runs = append(runs, run{i, j, live})
		}
		i = j
	}
	// between returns the position halfway between the k-th and k+1-th live
	// items (counted from 1).
	between := func(k int) int {
		prev, seen := -1, 0
		for i, d := range dead {
			if d {
				continue
			}
			if seen++; seen == k+1 {
				return (prev + 1 + i) / 2
			}
			prev = i
		}
		return n
	}
	fromRun, intoRun := between(10), between(90)
	if len(runs) > 0 {
		fromRun = (runs[0].start + runs[0].end) / 2
		for _, r := range runs {
			if r.liveBefore < benchFillPages*benchFillPageSize {
				intoRun = (r.start + r.end) / 2
			}
		}
	}
	// mk turns entries from..to-1 in reading order into items lo..hi, moved
	// out to whole groups of four.
	mk := func(name, op string, from, to int) bkRange {
		lo, hi := from+1, to // item seq is entry seq-1 ascending, n-seq descending
		if desc {
			lo, hi = n-to+1, n-from
		}
		lo, hi = max(1, lo/4*4), min(n, hi/4*4+3)
		r := bkRange{name: name, op: op, lo: lo, hi: hi, from: lo - 1, to: hi}
		if desc {
			r.from, r.to = n-hi, n-lo+1
		}
		return r
	}
	start, end := "gt", "lt" // the bound a range starts from, and the one it ends at
	if desc {
		start, end = end, start
	}
	return []bkRange{
		mk("between_from_run", "between", fromRun, n-n/10),
		mk("between_into_run", "between", 5, intoRun),
		mk(start+"_from_run", start, fromRun, n),
		mk(end+"_into_run", end, 0, intoRun),
	}
}

// bkItems is how many entries each partition of BenchmarkPageFillKeys holds.
const bkItems = 1500

type bkNum struct {
	_       TableSpec `ddbindex:"bk_num,softdelete"`
	_       IndexSpec `ddbindex:"feed,type=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Channel string    `dynamodbav:"channel" ddbindex:"feed.pk"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"feed.sk"`
	Body    string    `dynamodbav:"body"`
}

type bkStr struct {
	_       TableSpec `ddbindex:"bk_str,softdelete"`
	_       IndexSpec `ddbindex:"feed,type=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Channel string    `dynamodbav:"channel" ddbindex:"feed.pk"`
	Name    string    `dynamodbav:"name" ddbindex:"feed.sk"`
	Body    string    `dynamodbav:"body"`
}

type bkTie struct {
	_       TableSpec `ddbindex:"bk_tie,softdelete"`
	_       IndexSpec `ddbindex:"feed,type=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Channel string    `dynamodbav:"channel" ddbindex:"feed.pk"`
	Rank    int64     `dynamodbav:"rank" ddbindex:"feed.sk"`
	Body    string    `dynamodbav:"body"`
}

// bkRun loads one partition (entry i in reading order is dead when dead[i];
// item seq 1..n ascending) and benchmarks the strategies on it: read whole,
// under name, and under each of ranges, under name/range (key(seq) is item
// seq's sort key value).
func bkRun[T any](b *testing.B, ctx context.Context, name string, t *Table[T], channel string, dead []bool, size int, desc bool, ranges []bkRange, key func(seq int) any, mk func(seq int) T) {
	var load sync.Once
	loaded := func(b *testing.B) {
		load.Do(func() { bkLoad(b, t, dead, size, desc, mk) })
	}
	reads := []struct {
		name string
		cond SortCondition
		dead []bool // the entries the condition matches, in reading order
	}{{name, SortCondition{}, dead}}
	for _, r := range ranges {
		reads = append(reads, struct {
			name string
			cond SortCondition
			dead []bool
		}{name + "/" + r.name, r.cond(key), dead[r.from:r.to]})
	}
	for _, rd := range reads {
		read := func(t *Table[T]) (benchPages, error) { return bkLibrary(ctx, t, channel, desc, rd.cond) }
		// What five pages return: the live items the condition matches, at
		// most five pages of them.
		want := 0
		for _, d := range rd.dead {
			if !d {
				want++
			}
		}
		want = min(want, benchFillPages*benchFillPageSize)
		for _, s := range []struct {
			name string
			run  func() (benchPages, error)
		}{
			{"library", func() (benchPages, error) { return read(t) }},
			{"library-cold", func() (benchPages, error) { return read(coldMemo(t)) }},
		} {
			b.Run(rd.name+"/"+s.name, func(b *testing.B) {
				loaded(b)
				var ps benchPages
				for b.Loop() {
					var err error
					if ps, err = s.run(); err != nil {
						b.Fatal(err)
					}
				}
				naive, err := bkNaive(ctx, t, channel, desc, rd.cond)
				require.NoError(b, err)
				floor, err := bkFloor(ctx, t, channel, desc, rd.cond, rd.dead)
				require.NoError(b, err)
				all, n, f := ps.sum(0, len(ps)), naive.sum(0, len(naive)), floor.sum(0, len(floor))
				require.Equal(b, want, all.items, "live items in five pages")
				b.ReportMetric(float64(all.requests), "requests")
				b.ReportMetric(all.units, "RU")
				b.ReportMetric(float64(ps.sum(0, 1).requests), "p1-requests")
				b.ReportMetric(all.units/n.units, "RU/naive")
				b.ReportMetric(all.units/f.units, "RU/floor")
				b.ReportMetric(float64(all.requests)/float64(n.requests), "requests/naive")
				b.ReportMetric(float64(all.requests)/float64(f.requests), "requests/floor")
				b.ReportMetric(float64(n.requests), "naive-requests")
				b.ReportMetric(n.units, "naive-RU")
				b.ReportMetric(float64(f.requests), "floor-requests")
				b.ReportMetric(f.units, "floor-RU")
			})
		}
	}
}

// bkLoad writes the partition straight into the base table: items padded to
// about size bytes, tombstones marked as a delete marks them.
func bkLoad[T any](b testing.TB, t *Table[T], dead []bool, size int, desc bool, mk func(seq int) T) {
	ctx := context.Background()
	n := len(dead)
	var batch []types.WriteRequest
	flush := func() {
		reqs := map[string][]types.WriteRequest{t.TableName(): batch}
		for len(reqs) > 0 {
			out, err := t.client.c.(*dynamodb.Client).BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: reqs})
			require.NoError(b, err)
			reqs = out.UnprocessedItems
		}
		batch = batch[:0]
	}
	pad := ""
	for seq := 1; seq <= n; seq++ {
		it := mk(seq)
		p, err := t.prepare(&it, true)
		require.NoError(b, err)
		if pad == "" {
			pad = strings.Repeat("x", max(1, size-benchItemSize(p.av)))
		}
		p.av["body"] = &types.AttributeValueMemberS{Value: pad}
		// Reading order: descending reads the highest seq first.
		i := seq - 1
		if desc {
			i = n - seq
		}
		if dead[i] {
			p.av[t.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
		}
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: p.av}})
		if len(batch) == 25 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// bkLibrary reads benchFillPages pages through the library, under cond.
func bkLibrary[T any](ctx context.Context, t *Table[T], channel string, desc bool, cond SortCondition) (benchPages, error) {
	var ps benchPages
	cursor := ""
	for range benchFillPages {
		q := t.Query("feed", channel).Where(cond).Limit(benchFillPageSize).After(cursor)
		if desc {
			q = q.Desc()
		}
		page, err := q.Page(ctx)
		if err != nil {
			return ps, err
		}
		ps = append(ps, benchCost{requests: page.Stats.Requests, units: page.Stats.ReadUnits, items: len(page.Items)})
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	return ps, nil
}

// bkRaw sends the library's own request for the partition under cond, with
// the tombstone filter, in the given order.
func bkRaw[T any](t *Table[T], channel string, desc bool, cond SortCondition) (*benchRaw, error) {
	d, err := t.index("feed")
	if err != nil {
		return nil, err
	}
	q := t.Query("feed", channel).Where(cond)
	if desc {
		q = q.Desc()
	}
	p, err := q.planFor(d)
	if err != nil {
		return nil, err
	}
	return &benchRaw{client: t.client.c.(*dynamodb.Client), input: p.input}, nil
}

// bkNaive is benchNaive in either order, under cond.
func bkNaive[T any](ctx context.Context, t *Table[T], channel string, desc bool, cond SortCondition) (benchPages, error) {
	var ps benchPages
	raw, err := bkRaw(t, channel, desc, cond)
	if err != nil {
		return ps, err
	}
	var esk map[string]types.AttributeValue
	for range benchFillPages {
		got := 0
		for {
			out, err := raw.query(ctx, benchFillPageSize-got, esk)
			if err != nil {
				return ps, err
			}
			got += len(out.Items)
			esk = out.LastEvaluatedKey
			if got >= benchFillPageSize || len(esk) == 0 {
				break
			}
		}
		ps = raw.page(ps)
		if len(esk) == 0 {
			break
		}
	}
	return ps, nil
}

// bkFloor is benchFloor in either order, under cond: dead holds the entries
// cond matches, in reading order. Its first request starts where cond's range
// does, each later one where the previous page ended.
func bkFloor[T any](ctx context.Context, t *Table[T], channel string, desc bool, cond SortCondition, dead []bool) (benchPages, error) {
	var ps benchPages
	raw, err := bkRaw(t, channel, desc, cond)
	if err != nil {
		return ps, err
	}
	var esk map[string]types.AttributeValue
	i := 0
	for range benchFillPages {
		// n entries up to the page's last live item: on a last page that is
		// not full, the tombstones after it are not read.
		n, live := 0, 0
		for read := 0; i < len(dead) && live < benchFillPageSize; i++ {
			read++
			if !dead[i] {
				n, live = read, live+1
			}
		}
		out, err := raw.query(ctx, max(n, 1), esk)
		if err != nil {
			return ps, err
		}
		if len(out.Items) != live {
			return ps, fmt.Errorf("floor: %d live items, want %d", len(out.Items), live)
		}
		ps = raw.page(ps)
		if !slices.Contains(dead[i:], false) {
			break
		}
		esk = out.LastEvaluatedKey
	}
	return ps, nil
}

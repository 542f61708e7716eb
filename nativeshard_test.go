package ddbindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of sharded native-gsi reads and writes through the multi-attribute
// key double, against brute-force answers: float64 and Binary sort
// components at their edges, shards of 1, 2, 7 and 24, cursors across forms
// and conditions, caps, writes and Move, other base key types, projections
// and filters.

// nrItem: a softdelete table with a sharded native-gsi over (S, F, B): a
// String, a float64 and a Binary sort component. nr1, nr2 and nr7 are the
// same model sharded 1, 2 and 7 ways.
type nrItem7 struct {
	_    TableSpec `ddbindex:"nrseven,softdelete"`
	_    IndexSpec `ddbindex:"nat,type=native-gsi,name=nrseven-nat,shards=7"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S    string    `dynamodbav:"s" ddbindex:"nat.sk:0"`
	F    float64   `dynamodbav:"f" ddbindex:"nat.sk:1"`
	B    []byte    `dynamodbav:"b" ddbindex:"nat.sk:2"`
	Note string    `dynamodbav:"note"`
}

type nrItem2 struct {
	_    TableSpec `ddbindex:"nrtwo,softdelete"`
	_    IndexSpec `ddbindex:"nat,type=native-gsi,name=nrtwo-nat,shards=2"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S    string    `dynamodbav:"s" ddbindex:"nat.sk:0"`
	F    float64   `dynamodbav:"f" ddbindex:"nat.sk:1"`
	B    []byte    `dynamodbav:"b" ddbindex:"nat.sk:2"`
	Note string    `dynamodbav:"note"`
}

type nrItem1 struct {
	_    TableSpec `ddbindex:"nrone,softdelete"`
	_    IndexSpec `ddbindex:"nat,type=native-gsi,name=nrone-nat,shards=1"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S    string    `dynamodbav:"s" ddbindex:"nat.sk:0"`
	F    float64   `dynamodbav:"f" ddbindex:"nat.sk:1"`
	B    []byte    `dynamodbav:"b" ddbindex:"nat.sk:2"`
	Note string    `dynamodbav:"note"`
}

// nrTruth is the brute-force answer: the live items matching c, ordered by
// key then id (the sharded native form's total order).
func nrTruth[T any](items []T, key func(T) []any, id func(T) string, c kiCase, desc bool) []string {
	var out []T
	for _, it := range items {
		if c.op == 0 && c.lo == nil || c.match(key(it)) {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		if r := kiCmpTuple(key(a), key(b)); r != 0 {
			return r
		}
		return strings.Compare(id(a), id(b))
	})
	var ids []string
	for _, it := range out {
		ids = append(ids, id(it))
	}
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

// nrChain follows q's pages with the limits in turn and returns the ids.
func nrChain[T any](t *testing.T, q Query[T], limits []int, id func(T) string) []string {
	t.Helper()
	return nrChainFrom(t, q, "", limits, id)
}

// nrChainFrom is nrChain from the cursor cur.
func nrChainFrom[T any](t *testing.T, q Query[T], cur string, limits []int, id func(T) string) []string {
	t.Helper()
	var out []string
	for n := 0; ; n++ {
		require.Less(t, n, 500, "no end")
		limit := limits[n%len(limits)]
		p, err := q.Limit(limit).After(cur).Page(t.Context())
		require.NoError(t, err, "page %d", n)
		require.LessOrEqual(t, len(p.Items), limit)
		for _, it := range p.Items {
			out = append(out, id(it))
		}
		if p.Cursor == "" {
			return out
		}
		require.Len(t, p.Items, limit, "page %d has a cursor but is not full", n)
		cur = p.Cursor
	}
}

type nrRow struct {
	ID, G, S string
	F        float64
	B        []byte
	dead     bool
}

// nrRows: partition "p" dense (with ties on (S, F, B)), partition "few" with
// 3 live items (most shards empty), partition "dead" all tombstones but one.
func nrRows() []nrRow {
	r := rand.New(rand.NewPCG(21, 3))
	strs := []string{"#", "$", "a", "a#", "a$", "a\x00", "a\x00b", "a\x01", "ab", "b", "\x01", "zz"}
	floats := []float64{math.Inf(-1), -1e30, -2.5, -1, -0.5, 0, 1e-9, 0.5, 1, 2.5, 1e30}
	floats = floats[1:] // no infinities: a Number cannot hold them
	bins := [][]byte{{0}, {0, 0}, {0, 0xFF}, {1}, {'a'}, {'a', 0}, {0x7F}, {0x80}, {0xFF}, {0xFF, 0}, {0xFF, 0xFF}}
	var rows []nrRow
	n := 0
	mk := func(g string, dead bool) nrRow {
		n++
		return nrRow{ID: fmt.Sprintf("id%03d", n), G: g, S: strs[r.IntN(len(strs))], F: floats[r.IntN(len(floats))], B: bins[r.IntN(len(bins))], dead: dead}
	}
	for range 70 {
		rows = append(rows, mk("p", r.IntN(3) == 0))
	}
	for range 8 { // ties
		o := rows[r.IntN(len(rows))]
		x := mk("p", false)
		x.S, x.F, x.B = o.S, o.F, o.B
		rows = append(rows, x)
	}
	for range 3 {
		rows = append(rows, mk("few", false))
	}
	for i := range 25 {
		rows = append(rows, mk("dead", i != 12))
	}
	return rows
}

func nrCases() []kiCase {
	return []kiCase{
		{}, // no condition
		kiEq("a"), kiEq("a", 0.0), kiEq("a", -1.0), kiGt("a"), kiGe("a\x00"), kiLt("a$"), kiLe("a\x01"),
		kiBtw(K("a", 0.5), K("a", 1e30)), kiEq("a", 0.5, []byte{0xFF}),
		kiBtw(K("#"), K("a#")), kiBtw(K("a", -2.5), K("a", 1.0)), kiBtw(K("a\x00"), K("b")),
		kiBtw(K("a", 0.0, []byte{0}), K("a", 0.0, []byte{0xFF})),
		kiBW("a"), kiBW("a\x00"), kiBW("a", 0.5, []byte{0}), kiBW("a", 0.5, []byte{0xFF}), kiBW("#"),
	}
}

func nrGroundTruth[T any](t *testing.T, mk func(nrRow) T, key func(T) []any, id func(T) string) {
	t.Parallel()
	tb, _ := newTestTableOn[T](t, ddbtest.MultiKey(t))
	live := map[string][]T{}
	for _, r := range nrRows() {
		it := mk(r)
		_, err := tb.Put(t.Context(), it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(t.Context(), it))
		} else {
			live[r.G] = append(live[r.G], it)
		}
	}
	for _, part := range []string{"p", "few", "dead"} {
		for _, c := range nrCases() {
			for _, desc := range []bool{false, true} {
				want := nrTruth(live[part], key, id, c, desc)
				q := tb.Query("nat", part)
				if c.lo != nil {
					q = q.Where(c.cond())
				}
				if desc {
					q = q.Desc()
				}
				how := fmt.Sprintf("%s %v desc=%v", part, c, desc)
				var all []string
				for it, err := range q.All(t.Context()) {
					require.NoError(t, err, how)
					all = append(all, id(it))
				}
				require.Equal(t, want, all, "%s All", how)
				for _, limits := range [][]int{{1}, {2}, {3, 1, 7}, {7}, {4, 5, 6}} {
					if len(want) > 30 && limits[0] == 1 && len(limits) == 1 {
						continue
					}
					require.Equal(t, want, nrChain(t, q, limits, id), "%s Limits %v", how, limits)
				}
			}
		}
	}
}

// TestNativeGSIShardGroundTruth: both orders, page chains of 1..7, sort
// conditions, tombstones, 1, 2 and 7 shards, negative and fractional
// Numbers, Binary with 0x00/0xFF, Strings with '#', '$', '\x00'.
func TestNativeGSIShardGroundTruth(t *testing.T) {
	t.Parallel()
	key := func(r nrRow) []any { return []any{r.S, r.F, r.B} }
	t.Run("shards=1", func(t *testing.T) {
		nrGroundTruth(t, func(r nrRow) nrItem1 { return nrItem1{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: "n" + r.ID} },
			func(it nrItem1) []any { return key(nrRow{S: it.S, F: it.F, B: it.B}) }, func(it nrItem1) string { return it.ID })
	})
	t.Run("shards=2", func(t *testing.T) {
		nrGroundTruth(t, func(r nrRow) nrItem2 { return nrItem2{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: "n" + r.ID} },
			func(it nrItem2) []any { return key(nrRow{S: it.S, F: it.F, B: it.B}) }, func(it nrItem2) string { return it.ID })
	})
	t.Run("shards=7", func(t *testing.T) {
		nrGroundTruth(t, func(r nrRow) nrItem7 { return nrItem7{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: "n" + r.ID} },
			func(it nrItem7) []any { return key(nrRow{S: it.S, F: it.F, B: it.B}) }, func(it nrItem7) string { return it.ID })
	})
}

// ---- cursors across the two forms of a kept twin ---------------------------

type nrKeepGN struct {
	_    TableSpec `ddbindex:"nrkeepgn,softdelete"`
	_    IndexSpec `ddbindex:"by_s,type=gsi,keep=native-gsi,native-gsi=nrkeepgn-n,shards=3"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"by_s.pk"`
	S    string    `dynamodbav:"s" ddbindex:"by_s.sk:0"`
	N    int64     `dynamodbav:"n" ddbindex:"by_s.sk:1"`
	Note string    `dynamodbav:"note"`
}

type nrKeepNG struct {
	_    TableSpec `ddbindex:"nrkeepng,softdelete"`
	_    IndexSpec `ddbindex:"by_s,type=native-gsi,keep=gsi,native-gsi=nrkeepng-n,shards=3"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"by_s.pk"`
	S    string    `dynamodbav:"s" ddbindex:"by_s.sk:0"`
	N    int64     `dynamodbav:"n" ddbindex:"by_s.sk:1"`
	Note string    `dynamodbav:"note"`
}

type nrKRow struct {
	ID, S string
	N     int64
	dead  bool
}

// nrKRows: runs of tombstones (so that pages end in dead-through cursors),
// ties on (S, N), negative numbers.
func nrKRows() []nrKRow {
	r := rand.New(rand.NewPCG(8, 8))
	strs := []string{"#", "$", "a", "a#", "a\x00", "ab", "b"}
	ints := []int64{math.MinInt64, -100, -1, 0, 1, 7, 100, math.MaxInt64}
	var rows []nrKRow
	for i := range 90 {
		// runs: items 20-45 and 60-80 mostly dead
		dead := (i >= 20 && i < 45 && i%9 != 0) || (i >= 60 && i < 80) || r.IntN(5) == 0
		rows = append(rows, nrKRow{ID: fmt.Sprintf("k%03d", i), S: strs[r.IntN(len(strs))], N: ints[r.IntN(len(ints))], dead: dead})
	}
	return rows
}

func nrKCases() []kiCase {
	return []kiCase{{}, kiEq("a"), kiGt("a"), kiLe("a\x00"), kiBtw(K("$"), K("ab")), kiBW("a"), kiBtw(K("a", int64(-1)), K("a", int64(100))), kiEq("b", int64(7))}
}

func nrCrossForm[T any](t *testing.T, mk func(nrKRow) T, id func(T) string, key func(T) []any) {
	t.Parallel()
	tb, _ := newTestTableOn[T](t, ddbtest.MultiKey(t))
	var live []T
	// Write in an order unrelated to the sort order, so runs of dead
	// entries spread over positions.
	for _, r := range nrKRows() {
		it := mk(r)
		_, err := tb.Put(t.Context(), it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(t.Context(), it))
		} else {
			live = append(live, it)
		}
	}
	forms := []Kind{GSI, NativeGSI}
	for _, c := range nrKCases() {
		for _, desc := range []bool{false, true} {
			want := nrTruth(live, key, id, c, desc)
			for _, limits := range [][]int{{1}, {2}, {3}, {1, 4}} {
				for first := range 2 {
					how := fmt.Sprintf("%v desc=%v limits=%v first=%v", c, desc, limits, forms[first])
					var got []string
					cur := ""
					for n := 0; ; n++ {
						require.Less(t, n, 300, how)
						q := tb.Query("by_s", "p").Via(forms[(first+n)%2]).Limit(limits[n%len(limits)]).After(cur)
						if c.lo != nil {
							q = q.Where(c.cond())
						}
						if desc {
							q = q.Desc()
						}
						p, err := q.Page(t.Context())
						require.NoError(t, err, "%s page %d", how, n)
						for _, it := range p.Items {
							got = append(got, id(it))
						}
						if p.Cursor == "" {
							break
						}
						cur = p.Cursor
					}
					require.Equal(t, want, got, how)
				}
			}
		}
	}
}

// TestNativeGSIShardCrossFormCursors: cursors minted on one form of a
// kept twin (gsi and native-gsi, both sharded 3 ways) followed on the other,
// alternating each page.
func TestNativeGSIShardCrossFormCursors(t *testing.T) {
	t.Parallel()
	t.Run("gsi,keep=native-gsi", func(t *testing.T) {
		nrCrossForm(t, func(r nrKRow) nrKeepGN { return nrKeepGN{ID: r.ID, G: "p", S: r.S, N: r.N, Note: r.ID} },
			func(it nrKeepGN) string { return it.ID }, func(it nrKeepGN) []any { return []any{it.S, it.N} })
	})
	t.Run("native-gsi,keep=gsi", func(t *testing.T) {
		nrCrossForm(t, func(r nrKRow) nrKeepNG { return nrKeepNG{ID: r.ID, G: "p", S: r.S, N: r.N, Note: r.ID} },
			func(it nrKeepNG) string { return it.ID }, func(it nrKeepNG) []any { return []any{it.S, it.N} })
	})
}

// ---- a cursor under another condition --------------------------------------

// TestNativeGSIShardCursorOtherCondition: every cursor of a chain read
// under one condition, used under every other: the answer is the other
// condition's items after the cursor's position (none when the position is
// after its range, all of them when it is before).
func TestNativeGSIShardCursorOtherCondition(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTableOn[nrKeepNG](t, ddbtest.MultiKey(t))
	id := func(it nrKeepNG) string { return it.ID }
	key := func(it nrKeepNG) []any { return []any{it.S, it.N} }
	var live []nrKeepNG
	for _, r := range nrKRows() {
		it := nrKeepNG{ID: r.ID, G: "p", S: r.S, N: r.N, Note: r.ID}
		_, err := tb.Put(t.Context(), it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(t.Context(), it))
		} else {
			live = append(live, it)
		}
	}
	byID := map[string]nrKeepNG{}
	for _, it := range live {
		byID[it.ID] = it
	}
	// after reports whether b comes after a in the query's order.
	after := func(a, b nrKeepNG, desc bool) bool {
		r := kiCmpTuple(append(key(b), b.ID), append(key(a), a.ID))
		return (r > 0) != desc && r != 0
	}
	for _, mintC := range nrKCases() {
		for _, desc := range []bool{false, true} {
			q := func(c kiCase) Query[nrKeepNG] {
				q := tb.Query("by_s", "p").Via(NativeGSI)
				if c.lo != nil {
					q = q.Where(c.cond())
				}
				if desc {
					q = q.Desc()
				}
				return q
			}
			cur := ""
			for n := 0; n < 40; n++ {
				p, err := q(mintC).Limit(2).After(cur).Page(t.Context())
				require.NoError(t, err)
				if p.Cursor == "" {
					break
				}
				cur = p.Cursor
				last := p.Items[len(p.Items)-1]
				for _, useC := range nrKCases() {
					var want []string
					for _, x := range nrTruth(live, key, id, useC, desc) {
						if after(last, byID[x], desc) {
							want = append(want, x)
						}
					}
					how := fmt.Sprintf("minted under %v (after %s), used under %v, desc=%v", mintC, last.ID, useC, desc)
					got := nrChainFrom(t, q(useC), cur, []int{3}, id)
					require.Equal(t, want, got, how)
				}
			}
		}
	}
}

// ---- caps -----------------------------------------------------------------

// TestNativeGSIShardCaps: MaxRequests and MaxReadUnits on a sharded
// native read stop with ErrCapReached and a cursor that continues.
func TestNativeGSIShardCaps(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTableOn[nrItem7](t, ddbtest.MultiKey(t))
	key := func(it nrItem7) []any { return []any{it.S, it.F, it.B} }
	id := func(it nrItem7) string { return it.ID }
	var live []nrItem7
	for _, r := range nrRows() {
		if r.G != "p" {
			continue
		}
		it := nrItem7{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: "n" + r.ID}
		_, err := tb.Put(t.Context(), it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(t.Context(), it))
		} else {
			live = append(live, it)
		}
	}
	caps := map[string]func(Query[nrItem7]) Query[nrItem7]{
		"MaxRequests7":    func(q Query[nrItem7]) Query[nrItem7] { return q.MaxRequests(7) },
		"MaxRequests9":    func(q Query[nrItem7]) Query[nrItem7] { return q.MaxRequests(9) },
		"MaxReadUnits0.5": func(q Query[nrItem7]) Query[nrItem7] { return q.MaxReadUnits(0.5) },
		"MaxReadUnits3":   func(q Query[nrItem7]) Query[nrItem7] { return q.MaxReadUnits(3) },
	}
	for name, capf := range caps {
		for _, c := range []kiCase{{}, kiGt("a"), kiBW("a")} {
			for _, desc := range []bool{false, true} {
				for _, limit := range []int{1, 3, 5, 50} {
					how := fmt.Sprintf("%s %v desc=%v limit=%d", name, c, desc, limit)
					want := nrTruth(live, key, id, c, desc)
					q := capf(coldMemo(tb).Query("nat", "p").Limit(limit))
					if c.lo != nil {
						q = q.Where(c.cond())
					}
					if desc {
						q = q.Desc()
					}
					var got []string
					cur := ""
					for n := 0; ; n++ {
						require.Less(t, n, 500, how)
						p, err := q.After(cur).Page(t.Context())
						require.NotNil(t, p, "%s: %v", how, err)
						if err != nil {
							require.ErrorIs(t, err, ErrCapReached, how)
							require.NotEmpty(t, p.Cursor, how)
						}
						for _, it := range p.Items {
							got = append(got, it.ID)
						}
						if p.Cursor == "" {
							break
						}
						cur = p.Cursor
					}
					require.Equal(t, want, got, how)
				}
			}
		}
	}
}

// ---- writes ----------------------------------------------------------------

// TestNativeGSIShardWrites: Updates that move an entry in the order, a
// Put that replaces one, an irrelevant Update, and Moves to another base key
// (another shard): each item once, in order.
func TestNativeGSIShardWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTableOn[nrItem7](t, ddbtest.MultiKey(t))
	key := func(it nrItem7) []any { return []any{it.S, it.F, it.B} }
	id := func(it nrItem7) string { return it.ID }
	state := map[string]nrItem7{}
	for i := range 30 {
		it := nrItem7{ID: fmt.Sprintf("w%02d", i), G: "p", S: []string{"a", "b", "c"}[i%3], F: float64(i%5) - 2, B: []byte{byte(i)}, Note: "x"}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		state[it.ID] = it
	}
	check := func(how string) {
		t.Helper()
		var live []nrItem7
		for _, it := range state {
			live = append(live, it)
		}
		for _, desc := range []bool{false, true} {
			for _, c := range []kiCase{{}, kiEq("a"), kiEq("z")} {
				want := nrTruth(live, key, id, c, desc)
				q := tb.Query("nat", "p")
				if c.lo != nil {
					q = q.Where(c.cond())
				}
				if desc {
					q = q.Desc()
				}
				require.Equal(t, want, nrChain(t, q, []int{1, 4}, id), "%s %v desc=%v", how, c, desc)
			}
		}
	}
	check("initial")
	require.NoError(t, tb.Update(ctx, nrItem7{ID: "w03"}, Set("s", "z").Set("f", -1e20)))
	it := state["w03"]
	it.S, it.F = "z", -1e20
	state["w03"] = it
	require.NoError(t, tb.Update(ctx, nrItem7{ID: "w04"}, Set("note", "changed")))
	it = state["w04"]
	it.Note = "changed"
	state["w04"] = it
	require.NoError(t, tb.Update(ctx, nrItem7{ID: "w05"}, Set("b", []byte{0xFF, 0})))
	it = state["w05"]
	it.B = []byte{0xFF, 0}
	state["w05"] = it
	check("after updates")
	moves := [][2]string{{"w06", "zz-moved"}, {"w07", "a"}, {"w08", "w08x"}, {"w09", "\x00"}}
	if !ddbtest.Has(ddbtest.Transactions) {
		moves = nil // Move is one TransactWriteItems
	}
	for _, mv := range moves {
		from := state[mv[0]]
		to := from
		to.ID = mv[1]
		_, err := tb.Move(ctx, from, to)
		require.NoError(t, err, "move %q to %q", mv[0], mv[1])
		delete(state, mv[0])
		state[to.ID] = to
	}
	check("after moves")
	victim := "a" // w07 moved
	if moves == nil {
		victim = "w07"
	}
	require.NoError(t, tb.Delete(ctx, state[victim]))
	delete(state, victim)
	r, err := tb.Put(ctx, nrItem7{ID: "w10", G: "p", S: "a", F: 9, B: []byte{0}, Note: "replaced"})
	require.NoError(t, err)
	state["w10"] = r
	check("after delete and replace")
}

// ---- base keys of other types ----------------------------------------------

type nrNumKey struct {
	_  TableSpec `ddbindex:"nrnum,softdelete"`
	_  IndexSpec `ddbindex:"nat,type=native-gsi,name=nrnum-nat,shards=5"`
	ID int64     `dynamodbav:"id" ddbindex:"pk"`
	G  string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S  string    `dynamodbav:"s" ddbindex:"nat.sk"`
}

type nrBinKey struct {
	_  TableSpec `ddbindex:"nrbin,softdelete"`
	_  IndexSpec `ddbindex:"nat,type=native-gsi,name=nrbin-nat,shards=5"`
	ID []byte    `dynamodbav:"id" ddbindex:"pk"`
	G  string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S  string    `dynamodbav:"s" ddbindex:"nat.sk"`
}

type nrTwoKey struct {
	_ TableSpec `ddbindex:"nrtwokey,softdelete"`
	_ IndexSpec `ddbindex:"nat,type=native-gsi,name=nrtwokey-nat,shards=4"`
	P string    `dynamodbav:"p" ddbindex:"pk"`
	R float64   `dynamodbav:"r" ddbindex:"sk"`
	G string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S int64     `dynamodbav:"s" ddbindex:"nat.sk"`
}

func nrBaseKeyCheck[T any](t *testing.T, tb *Table[T], live []T, key func(T) []any, id func(T) string) {
	t.Helper()
	for _, desc := range []bool{false, true} {
		for _, c := range []kiCase{{}} {
			want := nrTruth(live, key, id, c, desc)
			q := tb.Query("nat", "p")
			if desc {
				q = q.Desc()
			}
			for _, limits := range [][]int{{1}, {2}, {3}, {7}, {50}} {
				require.Equal(t, want, nrChain(t, q, limits, id), "desc=%v limits=%v", desc, limits)
			}
		}
	}
}

// TestNativeGSIShardBaseKeys: Number, Binary and two-part base keys in
// the sort attributes' tail; many ties on the index's own sort component,
// so the order is the base key's.
func TestNativeGSIShardBaseKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("number", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTableOn[nrNumKey](t, ddbtest.MultiKey(t))
		var live []nrNumKey
		for i, n := range []int64{math.MinInt64, -1e15, -100, -1, 0, 1, 9, 10, 99, 100, 1e15, math.MaxInt64, -7, 7, 3} {
			it := nrNumKey{ID: n, G: "p", S: []string{"a", "b"}[i%2]}
			_, err := tb.Put(ctx, it)
			require.NoError(t, err)
			if i%4 == 3 {
				require.NoError(t, tb.Delete(ctx, it))
				continue
			}
			live = append(live, it)
		}
		nrBaseKeyCheck(t, tb, live, func(it nrNumKey) []any { return []any{it.S, it.ID} }, func(it nrNumKey) string { return fmt.Sprint(it.ID) })
	})
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTableOn[nrBinKey](t, ddbtest.MultiKey(t))
		var live []nrBinKey
		for i, b := range [][]byte{{0}, {0, 0}, {0, 0xFF}, {1}, {0x7F}, {0x80}, {0xFF}, {0xFF, 0}, {0xFF, 0xFF}, {'#'}, {'$', 0}, {'a'}} {
			it := nrBinKey{ID: b, G: "p", S: []string{"a", "b"}[i%2]}
			_, err := tb.Put(ctx, it)
			require.NoError(t, err)
			if i%5 == 4 {
				require.NoError(t, tb.Delete(ctx, it))
				continue
			}
			live = append(live, it)
		}
		nrBaseKeyCheck(t, tb, live, func(it nrBinKey) []any { return []any{it.S, it.ID} }, func(it nrBinKey) string { return fmt.Sprintf("%x", it.ID) })
	})
	t.Run("pk+sk", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTableOn[nrTwoKey](t, ddbtest.MultiKey(t))
		var live []nrTwoKey
		i := 0
		for _, p := range []string{"x", "x#", "x\x00", "y"} {
			for _, r := range []float64{-2.5, -1, 0, 0.25, 1e10} {
				i++
				it := nrTwoKey{P: p, R: r, G: "p", S: int64(i % 3)}
				_, err := tb.Put(ctx, it)
				require.NoError(t, err)
				if i%6 == 5 {
					require.NoError(t, tb.Delete(ctx, it))
					continue
				}
				live = append(live, it)
			}
		}
		nrBaseKeyCheck(t, tb, live, func(it nrTwoKey) []any { return []any{it.S, it.P, it.R} }, func(it nrTwoKey) string { return fmt.Sprintf("%q/%g", it.P, it.R) })
	})
}

// ---- projections and filters -----------------------------------------------

// TestNativeGSIShardProjectFilter: Project and Filter (on a non-key
// attribute) on a sharded native read, both orders, page chains.
func TestNativeGSIShardProjectFilter(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTableOn[nrItem7](t, ddbtest.MultiKey(t))
	key := func(it nrItem7) []any { return []any{it.S, it.F, it.B} }
	id := func(it nrItem7) string { return it.ID }
	var live, odd []nrItem7
	for i, r := range nrRows() {
		if r.G != "p" {
			continue
		}
		note := "even"
		if i%2 == 1 {
			note = "odd"
		}
		it := nrItem7{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: note}
		_, err := tb.Put(t.Context(), it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(t.Context(), it))
			continue
		}
		live = append(live, it)
		if note == "odd" {
			odd = append(odd, it)
		}
	}
	for _, desc := range []bool{false, true} {
		for _, c := range []kiCase{{}, kiEq("a"), kiBtw(K("a"), K("b"))} {
			q := tb.Query("nat", "p")
			if c.lo != nil {
				q = q.Where(c.cond())
			}
			if desc {
				q = q.Desc()
			}
			how := fmt.Sprintf("%v desc=%v", c, desc)
			for _, limits := range [][]int{{1}, {3}, {2, 7}} {
				require.Equal(t, nrTruth(odd, key, id, c, desc), nrChain(t, q.Filter(expression.Name("note").Equal(expression.Value("odd"))), limits, id), "filter %s %v", how, limits)
				require.Equal(t, nrTruth(live, key, id, c, desc), nrChain(t, q.Project("note"), limits, id), "project %s %v", how, limits)
				require.Equal(t, nrTruth(odd, key, id, c, desc), nrChain(t, q.Project("note").Filter(expression.Name("note").Equal(expression.Value("odd"))), limits, id), "project+filter %s %v", how, limits)
			}
			for it, err := range q.Project("note").All(t.Context()) {
				require.NoError(t, err)
				require.NotEmpty(t, it.Note, how)
			}
		}
	}
}

// TestNativeGSIShardOtherReads: All and Exists after a cursor, reads that
// include tombstones and filtered reads continuing cursors minted by the
// others (another read digest), on 7 shards.
func TestNativeGSIShardOtherReads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTableOn[nrItem7](t, ddbtest.MultiKey(t))
	key := func(it nrItem7) []any { return []any{it.S, it.F, it.B} }
	id := func(it nrItem7) string { return it.ID }
	var live, all, odd []nrItem7
	for i, r := range nrRows() {
		if r.G != "p" {
			continue
		}
		note := []string{"even", "odd"}[i%2]
		it := nrItem7{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: note}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		all = append(all, it)
		if r.dead {
			require.NoError(t, tb.Delete(ctx, it))
			continue
		}
		live = append(live, it)
		if note == "odd" {
			odd = append(odd, it)
		}
	}
	byID := map[string]nrItem7{}
	for _, it := range all {
		byID[it.ID] = it
	}
	after := func(a, b nrItem7, desc bool) bool {
		r := kiCmpTuple(append(key(b), b.ID), append(key(a), a.ID))
		return (r > 0) != desc && r != 0
	}
	oddF := expression.Name("note").Equal(expression.Value("odd"))
	reads := map[string]struct {
		q     func(Query[nrItem7]) Query[nrItem7]
		items []nrItem7
	}{
		"live":     {func(q Query[nrItem7]) Query[nrItem7] { return q }, live},
		"deleted":  {func(q Query[nrItem7]) Query[nrItem7] { return q.IncludeDeleted() }, all},
		"filtered": {func(q Query[nrItem7]) Query[nrItem7] { return q.Filter(oddF) }, odd},
	}
	for mintName, mint := range reads {
		for useName, use := range reads {
			for _, desc := range []bool{false, true} {
				base := tb.Query("nat", "p")
				if desc {
					base = base.Desc()
				}
				cur := ""
				for n := 0; n < 25; n++ {
					p, err := mint.q(base).Limit(1 + n%3).After(cur).Page(ctx)
					require.NoError(t, err)
					if p.Cursor == "" {
						break
					}
					cur = p.Cursor
					last := p.Items[len(p.Items)-1]
					var want []string
					for _, x := range nrTruth(use.items, key, id, kiCase{}, desc) {
						if after(last, byID[x], desc) {
							want = append(want, x)
						}
					}
					how := fmt.Sprintf("minted %s, used %s, desc=%v, after %s", mintName, useName, desc, last.ID)
					require.Equal(t, want, nrChainFrom(t, use.q(base), cur, []int{2, 5}, id), how+" pages")
					var got []string
					for it, err := range use.q(base).After(cur).All(ctx) {
						require.NoError(t, err, how)
						got = append(got, it.ID)
					}
					require.Equal(t, want, got, how+" All")
					ex, err := use.q(base).After(cur).Exists(ctx)
					require.NoError(t, err, how)
					require.Equal(t, len(want) > 0, ex, how+" Exists")
				}
			}
		}
	}
}

type nrItem24 struct {
	_    TableSpec `ddbindex:"nrtwentyfour,softdelete"`
	_    IndexSpec `ddbindex:"nat,type=native-gsi,name=nrtwentyfour-nat,shards=24"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	G    string    `dynamodbav:"g" ddbindex:"nat.pk"`
	S    string    `dynamodbav:"s" ddbindex:"nat.sk:0"`
	F    float64   `dynamodbav:"f" ddbindex:"nat.sk:1"`
	B    []byte    `dynamodbav:"b" ddbindex:"nat.sk:2"`
	Note string    `dynamodbav:"note"`
}

// TestNativeGSIShardFanout: more shards than the fan-out sends at once
// (24 shards, fan-out 3), page chains, caps, both orders.
func TestNativeGSIShardFanout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTableOn[nrItem24](t, ddbtest.MultiKey(t), func(o *Options) { o.ShardFanout = 3 })
	key := func(it nrItem24) []any { return []any{it.S, it.F, it.B} }
	id := func(it nrItem24) string { return it.ID }
	live := map[string][]nrItem24{}
	for _, r := range nrRows() {
		it := nrItem24{ID: r.ID, G: r.G, S: r.S, F: r.F, B: r.B, Note: "n"}
		_, err := tb.Put(ctx, it)
		require.NoError(t, err)
		if r.dead {
			require.NoError(t, tb.Delete(ctx, it))
		} else {
			live[r.G] = append(live[r.G], it)
		}
	}
	for _, part := range []string{"p", "few", "dead"} {
		for _, c := range []kiCase{{}, kiGt("a"), kiBW("a"), kiEq("zz")} {
			for _, desc := range []bool{false, true} {
				want := nrTruth(live[part], key, id, c, desc)
				q := tb.Query("nat", part)
				if c.lo != nil {
					q = q.Where(c.cond())
				}
				if desc {
					q = q.Desc()
				}
				how := fmt.Sprintf("%s %v desc=%v", part, c, desc)
				for _, limits := range [][]int{{1}, {3, 7}, {50}} {
					require.Equal(t, want, nrChain(t, q, limits, id), "%s limits %v", how, limits)
				}
				for _, capq := range []Query[nrItem24]{q.MaxRequests(24), q.MaxRequests(30), q.MaxReadUnits(2)} {
					var got []string
					cur := ""
					for n := 0; ; n++ {
						require.Less(t, n, 500, how)
						p, err := capq.Limit(4).After(cur).Page(ctx)
						require.NotNil(t, p, "%s: %v", how, err)
						if err != nil {
							require.ErrorIs(t, err, ErrCapReached, how)
						}
						for _, it := range p.Items {
							got = append(got, it.ID)
						}
						if p.Cursor == "" {
							break
						}
						cur = p.Cursor
					}
					require.Equal(t, want, got, "%s capped", how)
				}
			}
		}
	}
}

// TestNativeGSIShardUpdateShardAttr: an Update that sets or removes the
// shard attribute is refused, and the refusal says what the shard is made
// of (the base key) and what to do (Move), not "its components ()".
func TestNativeGSIShardUpdateShardAttr(t *testing.T) {
	t.Parallel()
	tb, err := New[nrItem7](kiFailingClient{t})
	require.NoError(t, err)
	for name, u := range map[string]Update{"Set": Set("_nat_shard", 3), "Remove": Remove("_nat_shard")} {
		err := tb.Update(t.Context(), nrItem7{ID: "x"}, u)
		require.ErrorIs(t, err, ErrKeyChange, name)
		t.Logf("%s: %v", name, err)
		require.NotContains(t, err.Error(), "()", "%s: the refusal names no component", name)
		require.Contains(t, err.Error(), "id", "%s: the shard is the base key's", name)
	}
}

// TestNativeGSIShardExplainCursor: Explain of a read after a cursor shows
// every shard's request starting at the cursor, in its own shard.
func TestNativeGSIShardExplainCursor(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTableOn[nrItem7](t, ddbtest.MultiKey(t))
	for i := range 12 {
		_, err := tb.Put(t.Context(), nrItem7{ID: fmt.Sprint("e", i), G: "p", S: "a", F: float64(i), B: []byte{1}})
		require.NoError(t, err)
	}
	p, err := tb.Query("nat", "p").Limit(3).Page(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, p.Cursor)
	e, err := tb.Query("nat", "p").Limit(3).After(p.Cursor).Explain()
	require.NoError(t, err)
	require.Len(t, e.Request.Shards, 7)
	for i, in := range e.Request.Shards {
		require.NotNil(t, in.ExclusiveStartKey, "shard %d", i)
		require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(i)}, in.ExclusiveStartKey["_nat_shard"], "shard %d", i)
		require.Equal(t, &types.AttributeValueMemberS{Value: p.Items[2].ID}, in.ExclusiveStartKey["id"], "shard %d", i)
	}
}

package ddbindex

// The integration test of the composite key encoding: hostile
// items are written to the server, and every sort operator's result set and
// order, read through DynamoDB, must equal a brute-force answer computed
// here from the same items. It covers a GSI with a derived composite key
// (whose stored key always ends with the base key, so every bound takes the
// "more components follow" shape), the same declaration as an index table
// (with tombstones that must never appear), the base table's own labelled
// composite sort key (the "whole key" shape when every component is given),
// and native Number and String sort keys.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// kiItem is a model with four indexes over the same hostile fields.
type kiItem struct {
	_     TableSpec `ddbindex:"kitems"`
	_     IndexSpec `ddbindex:"comp,type=gsi,name=kitems-comp,sk=gsk"`
	_     IndexSpec `ddbindex:"comptbl,type=table"`
	_     IndexSpec `ddbindex:"num,type=gsi,name=kitems-num"`
	_     IndexSpec `ddbindex:"str,type=gsi,name=kitems-str"`
	_     IndexSpec `ddbindex:"bin,type=gsi,name=kitems-bin"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Group string    `dynamodbav:"grp" ddbindex:"comp.pk;comptbl.pk;num.pk;str.pk;bin.pk"`
	S     string    `dynamodbav:"s" ddbindex:"comp.sk:0;comptbl.sk:0"`
	N     int64     `dynamodbav:"n" ddbindex:"comp.sk:1;comptbl.sk:1;num.sk"`
	T     string    `dynamodbav:"t" ddbindex:"comp.sk:2;comptbl.sk:2"`
	NS    string    `dynamodbav:"ns" ddbindex:"str.sk"`
	B     []byte    `dynamodbav:"b" ddbindex:"bin.sk"`
	Note  string    `dynamodbav:"note"`
}

// kiBaseItem is a model whose base table has a labelled composite sort key:
// SK = STATUS#<status>#TICKET#<ticket>, with nothing appended.
type kiBaseItem struct {
	_      TableSpec `ddbindex:"kbase,sk=SK"`
	Team   string    `dynamodbav:"team" ddbindex:"pk"`
	Status string    `dynamodbav:"status" ddbindex:"sk:0,label=STATUS"`
	Ticket string    `dynamodbav:"ticket" ddbindex:"sk:1,label=TICKET"`
	Note   string    `dynamodbav:"note"`
}

// kiStrings are hostile string components: separators, escapes, escape
// look-alikes, prefixes of each other, control bytes, high Unicode.
var kiStrings = []string{
	"", "#", "$", "##", "$23", "$24", "a#b", "a", "a#", "a$", "a\x00", "a b",
	"\x01", "%", "ü", "\U0010FFFF", "open", "op", "opé", "b",
}

// kiBins are Binary values that begin with each other, 0x00 and 0xFF bytes
// around them (a Binary key sorts bytewise, unsigned).
var kiBins = [][]byte{
	{0}, {0, 0}, {0, 0xFF}, {1}, {1, 0}, {1, 0xFF}, {1, 0xFF, 0}, {1, 0xFF, 0xFF}, {1, 0xFE, 0xFF},
	{2}, {0x7F}, {0x80}, {0x80, 0}, {0xFF}, {0xFF, 0xFF}, {0xFF, 0xFF, 0xFF}, []byte("ab"), []byte("abc"),
}

// kiInts are extreme and boundary integers (digit-count changes, signs).
var kiInts = []int64{
	math.MinInt64, math.MinInt64 + 1, -100, -10, -9, -1, 0, 1, 9, 10, 99, 100,
	1733000000000, math.MaxInt64 - 1, math.MaxInt64,
}

// kiTails are the values of the third sort component.
var kiTails = []string{"", "a", "a#", "$", "b"}

// kiTickets are the ticket values of the base-table model.
var kiTickets = []string{"", "#", "$", "\x00", "1", "10", "2", "T-1", "T-10", "T-2", "a#b", "ü"}

// kiData is the generated data set of kiItem: live items (in the base table
// and the index table) and deleted ones (tombstones in the index table only).
type kiData struct {
	live, deleted []kiItem
}

// kiGroup is the partition the queries read; the others hold look-alike
// items that must never leak into it.
const kiGroup = "g1"

var kiOtherGroups = []string{"g1#", "g1\x00", "g0", "g"}

func kiGenerate() kiData {
	r := rand.New(rand.NewPCG(2, 7))
	heads := []string{"#", "id", "$", "a#", "ü", "\x01", "a"}
	n := 0
	mk := func(group, s string, num int64, tail string) kiItem {
		n++
		id := fmt.Sprintf("%s%03d", heads[r.IntN(len(heads))], n)
		return kiItem{ID: id, Group: group, S: s, N: num, T: tail,
			NS: kiStrings[1+r.IntN(len(kiStrings)-1)], B: kiBins[n%len(kiBins)], Note: "note " + id}
	}
	hotS := []string{"a", "open", "", "$", "a#b"}
	hotN := []int64{0, -1, math.MaxInt64, math.MinInt64}
	pickS := func() string {
		if r.IntN(2) == 0 {
			return hotS[r.IntN(len(hotS))]
		}
		return kiStrings[r.IntN(len(kiStrings))]
	}
	pickN := func() int64 {
		if r.IntN(2) == 0 {
			return hotN[r.IntN(len(hotN))]
		}
		return kiInts[r.IntN(len(kiInts))]
	}
	pickT := func() string { return kiTails[r.IntN(len(kiTails))] }
	var d kiData
	for i, s := range kiStrings {
		d.live = append(d.live, mk(kiGroup, s, kiInts[i%len(kiInts)], kiTails[i%len(kiTails)]))
	}
	for _, num := range kiInts {
		d.live = append(d.live, mk(kiGroup, pickS(), num, pickT()))
	}
	for range 18 {
		d.live = append(d.live, mk(kiGroup, pickS(), pickN(), pickT()))
	}
	for range 6 { // equal sort components: the base key decides the order
		o := d.live[r.IntN(len(d.live))]
		d.live = append(d.live, mk(kiGroup, o.S, o.N, o.T))
	}
	for range 20 {
		d.deleted = append(d.deleted, mk(kiGroup, pickS(), pickN(), pickT()))
	}
	for range 6 { // tombstones right next to live items
		o := d.live[r.IntN(len(d.live))]
		d.deleted = append(d.deleted, mk(kiGroup, o.S, o.N, o.T))
	}
	for _, g := range kiOtherGroups {
		for range 3 {
			d.live = append(d.live, mk(g, pickS(), pickN(), pickT()))
		}
	}
	return d
}

func kiBaseGenerate() []kiBaseItem {
	r := rand.New(rand.NewPCG(3, 9))
	var out []kiBaseItem
	add := func(team, status, ticket string) {
		out = append(out, kiBaseItem{Team: team, Status: status, Ticket: ticket, Note: fmt.Sprintf("%q/%q", status, ticket)})
	}
	seen := map[[2]string]bool{}
	for i, st := range []string{"a", "", "open"} { // dense leading components
		for _, tk := range kiTickets[:len(kiTickets)/(i/2+1)] {
			seen[[2]string{st, tk}] = true
			add("T1", st, tk)
		}
	}
	for _, st := range kiStrings {
		tk := kiTickets[r.IntN(len(kiTickets))]
		if !seen[[2]string{st, tk}] {
			seen[[2]string{st, tk}] = true
			add("T1", st, tk)
		}
	}
	for _, team := range []string{"T1#", "T", "T1\x00"} {
		for range 3 {
			add(team, kiStrings[r.IntN(len(kiStrings))], kiTickets[r.IntN(len(kiTickets))])
		}
	}
	return out
}

// ---- brute force -----------------------------------------------------------

// kiCase is one sort condition, kept in a form the brute force evaluates.
type kiCase struct {
	op     condOp
	lo, hi []any
	plain  bool // pass single-value Between bounds as plain values, not K(...)
}

func kiEq(v ...any) kiCase    { return kiCase{op: opEq, lo: v} }
func kiLt(v ...any) kiCase    { return kiCase{op: opLt, lo: v} }
func kiLe(v ...any) kiCase    { return kiCase{op: opLe, lo: v} }
func kiGt(v ...any) kiCase    { return kiCase{op: opGt, lo: v} }
func kiGe(v ...any) kiCase    { return kiCase{op: opGe, lo: v} }
func kiBW(v ...any) kiCase    { return kiCase{op: opBeginsWith, lo: v} }
func kiBtw(lo, hi Key) kiCase { return kiCase{op: opBetween, lo: lo, hi: hi} }

// kiAllOps returns Eq, Lt, Le, Gt and Ge of v.
func kiAllOps(v ...any) []kiCase {
	return []kiCase{kiEq(v...), kiLt(v...), kiLe(v...), kiGt(v...), kiGe(v...)}
}

func (c kiCase) cond() SortCondition {
	switch c.op {
	case opEq:
		return Eq(c.lo...)
	case opLt:
		return Lt(c.lo...)
	case opLe:
		return Le(c.lo...)
	case opGt:
		return Gt(c.lo...)
	case opGe:
		return Ge(c.lo...)
	case opBetween:
		if c.plain {
			return Between(c.lo[0], c.hi[0])
		}
		return Between(K(c.lo...), K(c.hi...))
	case opBeginsWith:
		return BeginsWith(c.lo...)
	}
	return SortCondition{}
}

func (c kiCase) String() string {
	tuple := func(vs []any) string {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = fmt.Sprintf("%#v", v)
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	if c.op == opBetween {
		return "BETWEEN" + tuple(c.lo) + tuple(c.hi)
	}
	return opNames[c.op] + tuple(c.lo)
}

func kiCmp(a, b any) int {
	switch a := a.(type) {
	case string:
		return strings.Compare(a, b.(string))
	case int64:
		return cmp.Compare(a, b.(int64))
	case float64:
		return cmp.Compare(a, b.(float64))
	case []byte:
		return bytes.Compare(a, b.([]byte))
	}
	panic(fmt.Sprintf("kiCmp: %T", a))
}

// kiText is a string or []byte component as a string.
func kiText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v.(string)
}

// kiCmpTuple compares two tuples component by component; a shorter tuple
// that is a prefix of a longer one is lower.
func kiCmpTuple(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := kiCmp(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// match evaluates the condition on an item's sort components, the way the
// documentation defines it: on the leading components the bounds give.
func (c kiCase) match(key []any) bool {
	lead := func(b []any) int { return kiCmpTuple(key[:len(b)], b) }
	switch c.op {
	case opEq:
		return lead(c.lo) == 0
	case opLt:
		return lead(c.lo) < 0
	case opLe:
		return lead(c.lo) <= 0
	case opGt:
		return lead(c.lo) > 0
	case opGe:
		return lead(c.lo) >= 0
	case opBetween:
		return lead(c.lo) >= 0 && lead(c.hi) <= 0
	case opBeginsWith:
		n := len(c.lo)
		return kiCmpTuple(key[:n-1], c.lo[:n-1]) == 0 && strings.HasPrefix(kiText(key[n-1]), kiText(c.lo[n-1]))
	}
	return true
}

// ---- the runner ------------------------------------------------------------

// kiIndex describes one index under test and how to compute its answers.
type kiIndex[T any] struct {
	tb     *Table[T]
	index  string
	part   []any
	items  []T           // the live items of the partition
	key    func(T) []any // the sort components, in order
	tie    func(T) []any // the rest of the stored key; nil when ties come in server order
	id     func(T) string
	strong bool // read with ConsistentRead
}

// expect returns the brute-force answer in ascending order.
func (ix *kiIndex[T]) expect(c kiCase) []T {
	var out []T
	for _, it := range ix.items {
		if c.match(ix.key(it)) {
			out = append(out, it)
		}
	}
	slices.SortStableFunc(out, func(a, b T) int {
		if r := kiCmpTuple(ix.key(a), ix.key(b)); r != 0 || ix.tie == nil {
			return r
		}
		return kiCmpTuple(ix.tie(a), ix.tie(b))
	})
	return out
}

// check compares a result with the expected answer: equal items in equal
// order when the stored key is unique; for a native key with duplicates
// (whose tie order differs per server), equal sort values in order and the
// same items.
func (ix *kiIndex[T]) check(t *testing.T, want, got []T, how string) {
	t.Helper()
	ids := func(items []T) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = ix.id(it)
		}
		return out
	}
	if ix.tie != nil {
		require.Equal(t, ids(want), ids(got), "%s: ids in order", how)
		require.Equal(t, want, got, "%s", how)
		return
	}
	keys := func(items []T) [][]any {
		out := make([][]any, len(items))
		for i, it := range items {
			out[i] = ix.key(it)
		}
		return out
	}
	require.Equal(t, keys(want), keys(got), "%s: sort values in order", how)
	require.ElementsMatch(t, ids(want), ids(got), "%s: the same items, each once", how)
	require.ElementsMatch(t, want, got, "%s", how)
}

// checkHead checks that got is the first len(got) items of want; for a
// native key, whose ties come in server order, that their sort values are
// the first ones and the items are among want's.
func (ix *kiIndex[T]) checkHead(t *testing.T, want, got []T, how string) {
	t.Helper()
	require.Less(t, len(got), len(want), how)
	if ix.tie != nil {
		ix.check(t, want[:len(got)], got, how)
		return
	}
	ids := map[string]bool{}
	for _, it := range want {
		ids[ix.id(it)] = true
	}
	for i, it := range got {
		require.Equal(t, ix.key(want[i]), ix.key(it), "%s: sort value %d", how, i)
		require.True(t, ids[ix.id(it)], "%s: item %q is not in the answer, or comes twice", how, ix.id(it))
		delete(ids, ix.id(it))
	}
}

func (ix *kiIndex[T]) query(c kiCase, desc bool) Query[T] {
	q := ix.tb.Query(ix.index, ix.part...).Where(c.cond())
	if desc {
		q = q.Desc()
	}
	if ix.strong {
		q = q.ConsistentRead()
	}
	return q
}

type kiPage[T any] struct {
	after  string
	items  []T
	cursor string
}

// kiPages follows a query's cursors page by page to the end, the i-th page
// asking for limits[i%len(limits)] items, and checks every page: at most its
// Limit, full whenever a cursor follows, a cursor that differs from the one
// it continues, and no more pages than the result size needs (plus the empty
// page after a full last one).
func kiPages[T any](t *testing.T, q Query[T], limits []int, total int) ([]T, []kiPage[T]) {
	t.Helper()
	var out []T
	var pages []kiPage[T]
	cursor := ""
	need := 1 // the number of pages whose limits first reach total
	for sum := limits[0]; sum < total; need++ {
		sum += limits[need%len(limits)]
	}
	for n := 0; ; n++ {
		limit := limits[n%len(limits)]
		require.LessOrEqual(t, n, need, "Limits %v: more pages than %d items need", limits, total)
		p, err := q.Limit(limit).After(cursor).Page(t.Context())
		require.NoError(t, err, "Limits %v page %d", limits, n)
		require.LessOrEqual(t, len(p.Items), limit, "Limits %v page %d", limits, n)
		require.Equal(t, len(p.Items), p.Stats.Returned, "Stats.Returned")
		pages = append(pages, kiPage[T]{cursor, p.Items, p.Cursor})
		out = append(out, p.Items...)
		if p.Cursor == "" {
			return out, pages
		}
		require.Len(t, p.Items, limit, "Limits %v page %d has a cursor but is not full", limits, n)
		require.NotEqual(t, cursor, p.Cursor, "Limits %v page %d: the cursor did not advance", limits, n)
		cursor = p.Cursor
	}
}

func kiAll[T any](t *testing.T, q Query[T]) []T {
	t.Helper()
	var out []T
	for it, err := range q.All(t.Context()) {
		require.NoError(t, err)
		out = append(out, it)
	}
	return out
}

// run checks every case, ascending and descending: with All, with All and a
// Limit, and with pages followed to the end by their cursors: of 1, 3 and 7
// items in turn (so every page size continues every other's cursor), and,
// where the answer is short enough to keep the request count down, of 3
// (ascending) and of 1 throughout. A long descending answer is read in pages
// of 7 instead. A cursor is used twice.
func (ix *kiIndex[T]) run(t *testing.T, cases []kiCase) {
	require.NotEmpty(t, ix.items)
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			asc := ix.expect(c)
			exists, err := ix.query(c, false).Exists(t.Context())
			require.NoError(t, err)
			require.Equal(t, len(asc) > 0, exists, "Exists")
			for _, desc := range []bool{false, true} {
				want := asc
				if desc {
					want = slices.Clone(asc)
					slices.Reverse(want)
				}
				how := fmt.Sprintf("desc=%v", desc)
				q := ix.query(c, desc)
				ix.check(t, want, kiAll(t, q), how+" All")
				if len(want) > 2 {
					ix.checkHead(t, want, kiAll(t, q.Limit(2)), how+" All Limit 2")
				}
				runs := [][]int{{1, 3, 7}}
				switch {
				case desc && len(want) > 20:
					runs = [][]int{{7}}
				case !desc && len(want) <= 20:
					runs = append(runs, []int{3})
				}
				if len(want) <= 10 {
					runs = append(runs, []int{1})
				}
				for i, limits := range runs {
					got, pages := kiPages(t, q, limits, len(want))
					ix.check(t, want, got, fmt.Sprintf("%s Limits %v", how, limits))
					if i == 0 && len(pages) > 2 {
						// A cursor is reusable: the same page again.
						p, err := q.Limit(limits[1%len(limits)]).After(pages[1].after).Page(t.Context())
						require.NoError(t, err)
						ix.check(t, pages[1].items, p.Items, how+" cursor reuse")
						if p.Cursor == pages[1].cursor {
							require.NotEmpty(t, p.Cursor, "%s cursor reuse", how)
						} else {
							// A cursor also carries the next live item or the
							// last position the page fill evaluated, which
							// depend on how it sized its requests (the memory
							// of the partition has grown since): both cursors
							// must lead to the same rest.
							rest := func(c string) []T {
								got, _ := kiPages(t, q.After(c), []int{7}, len(want))
								return got
							}
							ix.check(t, rest(pages[1].cursor), rest(p.Cursor), how+" cursor reuse, the rest")
						}
					}
				}
			}
		})
	}
}

// ---- cases -----------------------------------------------------------------

// kiCompositeCases are the conditions on (S string, N int64, T string).
func kiCompositeCases(live []kiItem) []kiCase {
	var cs []kiCase
	for _, s := range []string{"", "#", "$", "$23", "a", "a\x00", "a#b", "op", "\U0010FFFF"} {
		cs = append(cs, kiAllOps(s)...)
	}
	for _, s := range []string{"##", "a#", "a$", "opé", "zz", "a b", "ü", "open", "\x01"} {
		cs = append(cs, kiEq(s))
	}
	// Two and three leading components, from items and from gaps.
	for _, p := range [][]any{{"a", int64(0)}, {"a", int64(math.MinInt64)}, {"a", int64(math.MaxInt64)},
		{"open", int64(-1)}, {"$", int64(-10)}} {
		cs = append(cs, kiAllOps(p...)...)
	}
	for _, it := range live[:4] {
		cs = append(cs, kiEq(it.S, it.N))
	}
	for _, tr := range [][]any{{"a", int64(0), ""}, {"a", int64(0), "a#"}, {live[3].S, live[3].N, live[3].T}} {
		cs = append(cs, kiAllOps(tr...)...)
	}
	for _, it := range live[40:42] {
		cs = append(cs, kiEq(it.S, it.N, it.T))
	}
	cs = append(cs,
		kiBtw(K("a"), K("op")), kiBtw(K("a"), K("a")), kiBtw(K(""), K("\U0010FFFF")), kiBtw(K("#"), K("$")),
		kiBtw(K("$"), K("$24")), kiBtw(K("a\x00"), K("a b")),
		kiCase{op: opBetween, lo: []any{"a"}, hi: []any{"open"}, plain: true},
		kiCase{op: opBetween, lo: []any{""}, hi: []any{""}, plain: true},
		kiBtw(K("a", int64(-10)), K("a", int64(10))), kiBtw(K("a", int64(0)), K("a", int64(0))),
		kiBtw(K("a", int64(math.MinInt64)), K("a", int64(math.MaxInt64))),
		kiBtw(K("a"), K("a", int64(0))), kiBtw(K("a", int64(0)), K("b")), kiBtw(K("", int64(1)), K("a#")),
		kiBtw(K("a", int64(0), ""), K("a", int64(0), "a#")), kiBtw(K("a", int64(-1), "b"), K("a", int64(1))),
		kiBtw(K("$"), K("$", int64(0), "a")),
		kiBtw(K(live[5].S, live[5].N, live[5].T), K(live[5].S, live[5].N, live[5].T)),
	)
	for _, p := range []string{"a#", "$", "", "a", "op", "\x01", "\U0010FFFF", "zz"} {
		cs = append(cs, kiBW(p))
	}
	cs = append(cs, kiBW("a", int64(0), ""), kiBW("a", int64(0), "a"), kiBW("a", int64(0), "a#"),
		kiBW("a", int64(0), "$"), kiBW("", int64(math.MaxInt64), ""), kiBW(live[7].S, live[7].N, live[7].T))
	return cs
}

func kiNumCases() []kiCase {
	var cs []kiCase
	for _, n := range []int64{math.MinInt64, -1, 0, 5, math.MaxInt64} {
		cs = append(cs, kiAllOps(n)...)
	}
	for _, n := range []int64{math.MinInt64 + 1, -100, -10, -9, 1, 9, 10, 100, 1733000000000, math.MaxInt64 - 1} {
		cs = append(cs, kiEq(n))
	}
	for _, b := range [][2]int64{{-10, 10}, {0, 0}, {math.MinInt64, math.MaxInt64}, {9, 100}, {math.MaxInt64, math.MaxInt64}} {
		cs = append(cs, kiBtw(K(b[0]), K(b[1])))
	}
	cs = append(cs, kiCase{op: opBetween, lo: []any{int64(-1)}, hi: []any{int64(1)}, plain: true})
	return cs
}

func kiStrCases() []kiCase {
	var cs []kiCase
	for _, s := range []string{"#", "$", "a", "a#b", "op", "\U0010FFFF", "\x00"} {
		cs = append(cs, kiAllOps(s)...)
	}
	for _, s := range []string{"##", "$23", "a#", "a\x00", "a b", "\x01", "%", "ü", "open", "opé", "zz"} {
		cs = append(cs, kiEq(s))
	}
	cs = append(cs, kiBtw(K("a"), K("op")), kiBtw(K("a"), K("a")), kiBtw(K("#"), K("$")),
		kiCase{op: opBetween, lo: []any{"\x00"}, hi: []any{"\U0010FFFF"}, plain: true})
	for _, p := range []string{"a#", "$", "", "a", "op", "\x01", "ü", "#"} {
		cs = append(cs, kiBW(p))
	}
	return cs
}

// kiBinCases are conditions on a native Binary sort key. DynamoDB takes
// no String operand for it, and begins_with is sent as the BETWEEN of the
// values that begin with the prefix.
func kiBinCases() []kiCase {
	var cs []kiCase
	for _, b := range [][]byte{{0}, {1}, {1, 0xFF}, {0x80}, {0xFF}, {0xFF, 0xFF, 0xFF}, []byte("ab")} {
		cs = append(cs, kiAllOps(b)...)
	}
	cs = append(cs, kiBtw(K([]byte{0}), K([]byte{1, 0xFF})), kiBtw(K([]byte{1}), K([]byte{1})),
		kiCase{op: opBetween, lo: []any{[]byte{0x7F}}, hi: []any{[]byte{0xFF}}, plain: true})
	for _, p := range [][]byte{{0}, {1}, {1, 0xFF}, {1, 0xFF, 0xFF}, {0x80}, {0xFF}, {0xFF, 0xFF}, []byte("a"), {3}} {
		cs = append(cs, kiBW(p))
	}
	// A String prefix is taken as its bytes.
	return append(cs, kiBW("ab"))
}

func kiBaseCases(items []kiBaseItem) []kiCase {
	var cs []kiCase
	for _, s := range []string{"", "$", "a", "a\x00", "a#b", "op", "\U0010FFFF"} {
		cs = append(cs, kiAllOps(s)...)
	}
	for _, s := range []string{"#", "a#", "open", "opé", "zz"} {
		cs = append(cs, kiEq(s))
	}
	// Every component given: the whole stored key.
	for _, f := range [][]any{{"a", "T-1"}, {"a", ""}, {"a", "\x00"}, {"", "$"}, {"a", "T-15"}} {
		cs = append(cs, kiAllOps(f...)...)
	}
	for _, it := range items[30:34] {
		cs = append(cs, kiEq(it.Status, it.Ticket))
	}
	cs = append(cs, kiEq("a", "1\x00"), kiEq("open", "#"), kiEq("", ""),
		kiBtw(K("a"), K("open")), kiCase{op: opBetween, lo: []any{"a"}, hi: []any{"a"}, plain: true},
		kiBtw(K("a", "1"), K("a", "2")), kiBtw(K("a", "T-1"), K("a", "T-1")), kiBtw(K("a", ""), K("a", "\x00")),
		kiBtw(K("a"), K("a", "2")), kiBtw(K("a", "2"), K("op")), kiBtw(K(""), K("\U0010FFFF")),
		kiBtw(K("#"), K("$")), kiBtw(K("", "$"), K("a", "#")), kiBtw(K("a", "T-10"), K("a", "T-2")),
	)
	for _, p := range [][]any{{"a"}, {"a#"}, {"$"}, {""}, {"op"}, {"\x01"}, {"a", "T-1"}, {"a", ""}, {"a", "#"},
		{"", "$"}, {"open", "T"}, {"a", "\x00"}, {"a", "1"}} {
		cs = append(cs, kiBW(p...))
	}
	return cs
}

// ---- the tests -------------------------------------------------------------

func kiSetup(t *testing.T) (*Table[kiItem], kiData) {
	t.Helper()
	tb, _ := newTestTable[kiItem](t)
	d := kiGenerate()
	putBase(t, tb, d.live...)
	for _, it := range d.live {
		require.True(t, putEntry(t, tb, "comptbl", it, false))
	}
	for _, it := range d.deleted {
		require.True(t, putEntry(t, tb, "comptbl", it, true))
	}
	return tb, d
}

func kiInGroup(items []kiItem) []kiItem {
	var out []kiItem
	for _, it := range items {
		if it.Group == kiGroup {
			out = append(out, it)
		}
	}
	return out
}

func TestKeysIntegrationCompositeGSIAndTable(t *testing.T) {
	t.Parallel()
	tb, d := kiSetup(t)
	live := kiInGroup(d.live)
	cases := kiCompositeCases(live)
	for _, index := range []string{"comp", "comptbl"} {
		t.Run(index, func(t *testing.T) {
			t.Parallel()
			ix := &kiIndex[kiItem]{tb: tb, index: index, part: []any{kiGroup}, items: live,
				key:    func(it kiItem) []any { return []any{it.S, it.N, it.T} },
				tie:    func(it kiItem) []any { return []any{it.ID} },
				id:     func(it kiItem) string { return it.ID },
				strong: index == "comptbl", // an index table serves consistent reads
			}
			ix.run(t, cases)
		})
	}
	t.Run("tombstones", func(t *testing.T) {
		t.Parallel()
		// The tombstones are there, in between the live entries: reading
		// with IncludeDeleted returns them in key order too.
		all := append(slices.Clone(live), d.deleted...)
		ix := &kiIndex[kiItem]{tb: tb, index: "comptbl", part: []any{kiGroup}, items: all,
			key: func(it kiItem) []any { return []any{it.S, it.N, it.T} },
			tie: func(it kiItem) []any { return []any{it.ID} },
			id:  func(it kiItem) string { return it.ID },
		}
		want := ix.expect(kiCase{op: opGe, lo: []any{""}})
		require.Len(t, want, len(live)+len(d.deleted))
		q := tb.Query("comptbl", kiGroup).IncludeDeleted()
		ix.check(t, want, kiAll(t, q), "IncludeDeleted")
		got, _ := kiPages(t, q, []int{1, 3, 7}, len(want))
		ix.check(t, want, got, "IncludeDeleted pages")
	})
}

func TestKeysIntegrationNativeKeys(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[kiItem](t)
	d := kiGenerate()
	putBase(t, tb, d.live...)
	live := kiInGroup(d.live)
	t.Run("num", func(t *testing.T) {
		t.Parallel()
		ix := &kiIndex[kiItem]{tb: tb, index: "num", part: []any{kiGroup}, items: live,
			key: func(it kiItem) []any { return []any{it.N} },
			id:  func(it kiItem) string { return it.ID },
		}
		ix.run(t, kiNumCases())
	})
	t.Run("str", func(t *testing.T) {
		t.Parallel()
		ix := &kiIndex[kiItem]{tb: tb, index: "str", part: []any{kiGroup}, items: live,
			key: func(it kiItem) []any { return []any{it.NS} },
			id:  func(it kiItem) string { return it.ID },
		}
		ix.run(t, kiStrCases())
	})
	t.Run("bin", func(t *testing.T) {
		t.Parallel()
		ix := &kiIndex[kiItem]{tb: tb, index: "bin", part: []any{kiGroup}, items: live,
			key: func(it kiItem) []any { return []any{it.B} },
			id:  func(it kiItem) string { return it.ID },
		}
		ix.run(t, kiBinCases())
	})
}

func TestKeysIntegrationBaseLabelledKey(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[kiBaseItem](t)
	items := kiBaseGenerate()
	putBase(t, tb, items...)
	var part []kiBaseItem
	for _, it := range items {
		if it.Team == "T1" {
			part = append(part, it)
		}
	}
	ix := &kiIndex[kiBaseItem]{tb: tb, index: "", part: []any{"T1"}, items: part,
		key:    func(it kiBaseItem) []any { return []any{it.Status, it.Ticket} },
		tie:    func(kiBaseItem) []any { return nil }, // the sort key is unique by itself
		id:     func(it kiBaseItem) string { return it.Status + "\xff" + it.Ticket },
		strong: true,
	}
	ix.run(t, kiBaseCases(items))
}

// TestKeysIntegrationShapes pins which bound shape each key gets: a stored
// key that ends with more components (a derived GSI key, an index table key)
// turns = into begins_with(p#); the whole base-table key compares with the
// encoded value itself.
func TestKeysIntegrationShapes(t *testing.T) {
	t.Parallel()
	items, err := New[kiItem](kiFailingClient{t})
	require.NoError(t, err)
	base, err := New[kiBaseItem](kiFailingClient{t})
	require.NoError(t, err)
	for _, tc := range []struct {
		plan   func() (*plan, error)
		op     condOp
		oa, ob string
		attr   string
	}{
		{func() (*plan, error) { return items.Query("comp", "g").Where(Eq("a#b", int64(-1))).plan() }, opBeginsWith, "a$23b#Z8#", "", "gsk"},
		{func() (*plan, error) { return items.Query("comptbl", "g").Where(Eq("a#b", int64(-1), "")).plan() }, opBeginsWith, "a$23b#Z8##", "", "_sk"},
		{func() (*plan, error) { return items.Query("comp", "g").Where(Lt("$")).plan() }, opLt, "$24#", "", "gsk"},
		{func() (*plan, error) { return items.Query("comp", "g").Where(Le("$")).plan() }, opLt, "$24$", "", "gsk"},
		{func() (*plan, error) { return items.Query("comp", "g").Where(Gt("a", int64(0), "x")).plan() }, opGt, "a#a0#x$", "", "gsk"},
		{func() (*plan, error) { return items.Query("comp", "g").Where(Ge("a", int64(0), "x")).plan() }, opGe, "a#a0#x#", "", "gsk"},
		{func() (*plan, error) {
			return items.Query("comp", "g").Where(Between(K("a"), K("a", int64(math.MinInt64)))).plan()
		}, opBetween, "a#", "a#H0776627963145224191$", "gsk"},
		{func() (*plan, error) { return base.Query("", "T").Where(Eq("open", "T-1")).plan() }, opEq, "STATUS#open#TICKET#T-1", "", "SK"},
		{func() (*plan, error) { return base.Query("", "T").Where(Eq("open")).plan() }, opBeginsWith, "STATUS#open#", "", "SK"},
		{func() (*plan, error) { return base.Query("", "T").Where(Lt("open", "")).plan() }, opLt, "STATUS#open#TICKET#", "", "SK"},
		{func() (*plan, error) { return base.Query("", "T").Where(Le("open", "#")).plan() }, opLe, "STATUS#open#TICKET#$23", "", "SK"},
		{func() (*plan, error) { return base.Query("", "T").Where(BeginsWith("open", "T-")).plan() }, opBeginsWith, "STATUS#open#TICKET#T-", "", "SK"},
		{func() (*plan, error) {
			return base.Query("", "T").Where(Between(K("a", "1"), K("b"))).plan()
		}, opBetween, "STATUS#a#TICKET#1", "STATUS#b$", "SK"},
		{func() (*plan, error) { return items.Query("num", "g").Where(Ge(-5)).plan() }, opGe, "Z4", "", "n"},
		{func() (*plan, error) { return items.Query("str", "g").Where(Eq("a#b")).plan() }, opEq, "a#b", "", "ns"},
	} {
		p, err := tc.plan()
		require.NoError(t, err)
		kc := p.kc
		require.NotNil(t, kc)
		require.Equal(t, tc.attr, kc.attr)
		require.Equal(t, tc.op, kc.op, "bound shape of %s", kc)
		require.Equal(t, tc.oa, kc.oa, "lower bound of %s", kc)
		require.Equal(t, tc.ob, kc.ob, "upper bound of %s", kc)
	}
}

// kiFailingClient fails the test on any request: queries that must fail
// before sending anything use it.
type kiFailingClient struct{ t testing.TB }

func (c kiFailingClient) fail(op string) error {
	c.t.Errorf("unexpected %s request", op)
	return errors.New("kiFailingClient: no requests allowed")
}

func (c kiFailingClient) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, c.fail("Query")
}
func (c kiFailingClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, c.fail("GetItem")
}
func (c kiFailingClient) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, c.fail("BatchGetItem")
}
func (c kiFailingClient) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, c.fail("PutItem")
}
func (c kiFailingClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, c.fail("UpdateItem")
}
func (c kiFailingClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, c.fail("DeleteItem")
}
func (c kiFailingClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, c.fail("TransactWriteItems")
}

// TestKeysIntegrationInvalidQueries checks that queries that cannot be
// translated fail with ErrInvalidQuery from Page, All and Exists, before any
// request.
func TestKeysIntegrationInvalidQueries(t *testing.T) {
	t.Parallel()
	items, err := New[kiItem](kiFailingClient{t})
	require.NoError(t, err)
	base, err := New[kiBaseItem](kiFailingClient{t})
	require.NoError(t, err)
	for name, q := range map[string]Query[kiItem]{
		"begins_with on a number":             items.Query("num", "g").Where(BeginsWith("1")),
		"begins_with on a composite number":   items.Query("comp", "g").Where(BeginsWith("a", "1")),
		"begins_with on a table number":       items.Query("comptbl", "g").Where(BeginsWith("a", "1")),
		"begins_with with a number prefix":    items.Query("comp", "g").Where(BeginsWith(1)),
		"begins_with with a nil prefix":       items.Query("str", "g").Where(BeginsWith(nil)),
		"reversed BETWEEN composite":          items.Query("comp", "g").Where(Between("b", "a")),
		"reversed BETWEEN tuple":              items.Query("comptbl", "g").Where(Between(K("a", int64(5)), K("a", int64(-5)))),
		"reversed BETWEEN extremes":           items.Query("comp", "g").Where(Between(K("a", int64(math.MaxInt64)), K("a", int64(math.MinInt64)))),
		"reversed BETWEEN number":             items.Query("num", "g").Where(Between(5, -5)),
		"reversed BETWEEN string":             items.Query("str", "g").Where(Between("b", "a")),
		"too many values":                     items.Query("comp", "g").Where(Eq("a", int64(1), "x", "y")),
		"too many values in BETWEEN":          items.Query("comp", "g").Where(Between(K("a"), K("a", int64(1), "x", "y"))),
		"too many values native":              items.Query("num", "g").Where(Lt(1, 2)),
		"too many begins_with values":         items.Query("str", "g").Where(BeginsWith("a", "b")),
		"no values":                           items.Query("comp", "g").Where(Eq()),
		"no BETWEEN upper values":             items.Query("comp", "g").Where(Between(K("a"), K())),
		"wrong value type string":             items.Query("comp", "g").Where(Eq(42)),
		"wrong value type int":                items.Query("comp", "g").Where(Eq("a", "1")),
		"wrong value type native":             items.Query("num", "g").Where(Gt("1")),
		"wrong value type native string":      items.Query("str", "g").Where(Gt(1)),
		"value overflows int64":               items.Query("num", "g").Where(Eq(uint64(math.MaxUint64))),
		"nil value":                           items.Query("comp", "g").Where(Le(nil)),
		"empty native string key":             items.Query("str", "g").Where(Eq("")),
		"ConsistentRead on a GSI":             items.Query("comp", "g").ConsistentRead(),
		"ConsistentRead on a native GSI":      items.Query("num", "g").Where(Eq(1)).ConsistentRead(),
		"unknown index":                       items.Query("nope", "g"),
		"missing partition":                   items.Query("comp"),
		"too many partition values":           items.Query("comp", "g", "h"),
		"wrong partition type":                items.Query("comptbl", 7),
		"negative Limit":                      items.Query("comp", "g").Limit(-1),
		"condition on a key without sort key": items.Query("", "id").Where(Eq("x")),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kiRequireInvalid(t, q)
		})
	}
	for name, q := range map[string]Query[kiBaseItem]{
		"begins_with with leading values of the wrong type": base.Query("", "T").Where(BeginsWith(1, "a")),
		"reversed BETWEEN whole keys":                       base.Query("", "T").Where(Between(K("b", "1"), K("a", "2"))),
		"reversed BETWEEN equal status":                     base.Query("", "T").Where(Between(K("a", "2"), K("a", "1"))),
		"reversed BETWEEN mixed lengths":                    base.Query("", "T").Where(Between(K("b"), K("a", "2"))),
		"too many values":                                   base.Query("", "T").Where(Ge("a", "1", "x")),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kiRequireInvalid(t, q)
		})
	}
}

func kiRequireInvalid[T any](t *testing.T, q Query[T]) {
	t.Helper()
	ctx := t.Context()
	tb := *q.t
	tb.client = calls{kiFailingClient{t}} // fail this subtest, should a request be sent
	q.t = &tb
	_, err := q.Page(ctx)
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.Equal(t, "DDBX-200", Code(err))
	var qe *Error
	require.ErrorAs(t, err, &qe)
	n := 0
	for _, err := range q.All(ctx) {
		n++
		require.ErrorIs(t, err, ErrInvalidQuery, "All")
	}
	require.Equal(t, 1, n, "All yields the error once")
	ok, err := q.Exists(ctx)
	require.ErrorIs(t, err, ErrInvalidQuery, "Exists")
	require.False(t, ok)
}

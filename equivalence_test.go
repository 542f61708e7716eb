package ddbindex_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
	"github.com/ddbindex/ddbindex/stream"
)

// TestGSITableEquivalence is the proof that switching an index from a GSI to
// an index table is a one-token change: the same logical index, declared
// type=gsi in eqGSIItem and type=table in eqTableItem, over the same base
// table, after a random workload whose index table is kept in step through
// the stream, answers every query with the same items, the same page
// boundaries and the same cursors.

type eqGSIItem struct {
	_       ddbindex.TableSpec `ddbindex:"eq-items,pk=PK,sk=SK"`
	_       ddbindex.IndexSpec `ddbindex:"by_rank,type=gsi,name=eq-by-rank,pk=GSI1PK,sk=GSI1SK"`
	Tenant  string             `dynamodbav:"tenant" ddbindex:"pk,label=T"`
	ID      string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Channel string             `dynamodbav:"channel" ddbindex:"by_rank.pk,label=CH"`
	Status  string             `dynamodbav:"status" ddbindex:"by_rank.sk:0"`
	Rank    *int64             `dynamodbav:"rank,omitempty" ddbindex:"by_rank.sk:1"`
	Body    string             `dynamodbav:"body"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// eqTableItem is eqGSIItem with one token changed: type=table. (The index
// table is named eq-by-rank and keeps the key attribute names GSI1PK/GSI1SK.)
type eqTableItem struct {
	_       ddbindex.TableSpec `ddbindex:"eq-items,pk=PK,sk=SK"`
	_       ddbindex.IndexSpec `ddbindex:"by_rank,type=table,name=eq-by-rank,pk=GSI1PK,sk=GSI1SK"`
	Tenant  string             `dynamodbav:"tenant" ddbindex:"pk,label=T"`
	ID      string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Channel string             `dynamodbav:"channel" ddbindex:"by_rank.pk,label=CH"`
	Status  string             `dynamodbav:"status" ddbindex:"by_rank.sk:0"`
	Rank    *int64             `dynamodbav:"rank,omitempty" ddbindex:"by_rank.sk:1"`
	Body    string             `dynamodbav:"body"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

var (
	eqChannels = []string{"general", "random", "ops", "sales"}
	eqStatuses = []string{"closed", "done", "new", "open", "pending"}
	eqTenants  = []string{"acme", "globex", "initech"}
)

func eqRank(rng *rand.Rand) *int64 {
	r := int64(rng.IntN(41) - 20) // negative ranks too: the order is numeric
	return &r
}

// eqState is the workload's own record of what the base table holds.
type eqState struct {
	items   map[string]*eqGSIItem // by ID; nil once deleted
	created []string              // every ID ever created
}

type eqOpCounts struct {
	inserts, reinserts, sortChanges, partitionChanges, moves, deletes, sparseExits, sparseEntries, bodyOnly int
}

func TestGSITableEquivalence(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.Transactions) // base key changes are moves
	start := time.Now()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	names := func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + "-" + s } }
	gsi, err := ddbindex.New[eqGSIItem](c, names)
	require.NoError(t, err)
	tbl, err := ddbindex.New[eqTableItem](c, names)
	require.NoError(t, err)
	require.Equal(t, gsi.TableName(), tbl.TableName(), "both models map to one base table")

	// The base table with the GSI, and a stream for the index table.
	baseIn := schema.CreateTableInputs(gsi, false)[0]
	require.Len(t, baseIn.GlobalSecondaryIndexes, 1)
	baseIn.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	ddbtest.CreateTable(t, c, baseIn)
	idxIns := schema.CreateTableInputs(tbl, false)[1:]
	require.Len(t, idxIns, 1)
	ddbtest.CreateTable(t, c, idxIns[0])

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DDBINDEX_EQ_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (rerun with DDBINDEX_EQ_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))

	cons, err := stream.NewConsumer(tbl, ddbtest.StreamsClient(t), &stream.MemoryCheckpoints{})
	require.NoError(t, err)
	var applied ddbindex.ApplyStats
	poll := func() {
		t.Helper()
		st, err := cons.Poll(ctx)
		require.NoError(t, err)
		require.Zero(t, st.Stale, "in-order delivery skips nothing")
		applied.Changes += st.Changes
		applied.Puts += st.Puts
		applied.Deletes += st.Deletes
	}

	// ---- the workload ----
	const ops = 2000
	st := &eqState{items: map[string]*eqGSIItem{}}
	var counts eqOpCounts
	baseChanges := 0
	put := func(it eqGSIItem) {
		t.Helper()
		got, err := gsi.Put(ctx, it)
		require.NoError(t, err)
		st.items[it.ID] = &got
		baseChanges++
	}
	for i := range ops {
		// Keep about 150 distinct items, some deleted at any time.
		id := fmt.Sprintf("i%03d", rng.IntN(150))
		cur := st.items[id]
		switch {
		case cur == nil:
			it := eqGSIItem{Tenant: eqTenants[rng.IntN(len(eqTenants))], ID: id, Channel: eqChannels[rng.IntN(len(eqChannels))],
				Status: eqStatuses[rng.IntN(len(eqStatuses))], Body: fmt.Sprint("created at op ", i)}
			if rng.IntN(5) > 0 {
				it.Rank = eqRank(rng)
			}
			if slices.Contains(st.created, id) {
				counts.reinserts++
			} else {
				counts.inserts++
				st.created = append(st.created, id)
			}
			put(it) // Ver 0: must not exist
		default:
			next := *cur
			switch p := rng.IntN(100); {
			case p < 30:
				if rng.IntN(2) == 0 {
					next.Status = eqStatuses[rng.IntN(len(eqStatuses))]
				} else {
					next.Rank = eqRank(rng)
				}
				counts.sortChanges++
				put(next)
			case p < 42:
				next.Channel = eqChannels[rng.IntN(len(eqChannels))]
				counts.partitionChanges++
				put(next)
			case p < 52:
				for next.Tenant == cur.Tenant {
					next.Tenant = eqTenants[rng.IntN(len(eqTenants))]
				}
				got, err := gsi.Move(ctx, *cur, next)
				require.NoError(t, err)
				st.items[id] = &got
				counts.moves++
				baseChanges += 2
			case p < 62:
				require.NoError(t, gsi.Delete(ctx, *cur))
				st.items[id] = nil
				counts.deletes++
				baseChanges++
			case p < 77:
				if next.Rank != nil {
					next.Rank = nil
					counts.sparseExits++
				} else {
					next.Rank = eqRank(rng)
					counts.sparseEntries++
				}
				put(next)
			default:
				next.Body = fmt.Sprint("edited at op ", i)
				counts.bodyOnly++
				put(next)
			}
		}
		if i%500 == 499 {
			poll() // the consumer runs alongside the writers
		}
	}
	poll()
	t.Logf("workload: %d ops %+v, %d base changes, in %v", ops, counts, baseChanges, time.Since(start).Round(time.Millisecond))
	require.Equal(t, baseChanges, applied.Changes, "every base change reached the index table through the stream")
	for name, n := range map[string]int{"re-inserts": counts.reinserts, "sort changes": counts.sortChanges, "partition changes": counts.partitionChanges,
		"moves": counts.moves, "deletes": counts.deletes, "sparse exits": counts.sparseExits, "sparse re-entries": counts.sparseEntries} {
		require.Positive(t, n, "the workload has %s", name)
	}
	amp := float64(applied.Puts+applied.Deletes) / float64(applied.Changes)
	t.Logf("write amplification: %.3f index-table writes per base change (%d puts + %d tombstones for %d changes)",
		amp, applied.Puts, applied.Deletes, applied.Changes)

	tombstones := 0
	for _, e := range ddbtest.Scan(t, c, aws.ToString(idxIns[0].TableName)) {
		if d, ok := e["_deleted"].(*types.AttributeValueMemberBOOL); ok && d.Value {
			tombstones++
		}
	}
	t.Logf("index table: %d tombstones", tombstones)
	require.Positive(t, tombstones, "the reads must have tombstones to skip")

	// ---- the check: ground truth, then random queries ----
	eqCheckTruth(t, st, tbl)
	queries := eqQueries(rng, 200)
	pages := eqCompare(t, gsi, tbl, queries)
	t.Logf("%d queries, %d pages compared, at %v", len(queries), pages, time.Since(start).Round(time.Millisecond))

	// ---- replay from the start, then redeliver older records ----
	replayer, err := stream.NewConsumer(tbl, ddbtest.StreamsClient(t), &stream.MemoryCheckpoints{})
	require.NoError(t, err)
	replay, err := replayer.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: applied.Changes, Stale: applied.Puts + applied.Deletes}, replay, "a replay writes nothing")
	var changes []ddbindex.Change
	for _, r := range ddbtest.StreamRecords(t, tbl.TableName()) {
		ch, err := stream.ChangeFromRecord(r)
		require.NoError(t, err)
		changes = append(changes, ch)
	}
	require.Len(t, changes, applied.Changes)
	var older []ddbindex.Change
	for _, ch := range changes[:len(changes)-len(changes)/4] { // redeliver a random subset of the older three quarters
		if rng.IntN(3) == 0 {
			older = append(older, ch)
		}
	}
	rng.Shuffle(len(older), func(i, j int) { older[i], older[j] = older[j], older[i] })
	redeliver, err := tbl.Apply(ctx, older)
	require.NoError(t, err)
	require.Zero(t, redeliver.Puts+redeliver.Deletes, "older records never overwrite newer entries")
	t.Logf("replayed %d records, redelivered %d older ones: %+v", replay.Changes, len(older), redeliver)

	eqCheckTruth(t, st, tbl)
	pages = eqCompare(t, gsi, tbl, eqQueries(rng, 50))
	t.Logf("after replay and redelivery: %d pages compared again; total %v", pages, time.Since(start).Round(time.Millisecond))
}

// eqCheckTruth compares each channel of the index table with the workload's
// own record, sorted as the index sorts.
func eqCheckTruth(t *testing.T, st *eqState, tbl *ddbindex.Table[eqTableItem]) {
	t.Helper()
	for _, ch := range eqChannels {
		var want []eqGSIItem
		for _, it := range st.items {
			if it != nil && it.Channel == ch && it.Rank != nil {
				want = append(want, *it)
			}
		}
		slices.SortFunc(want, func(a, b eqGSIItem) int {
			return cmp.Or(strings.Compare(a.Status, b.Status), cmp.Compare(*a.Rank, *b.Rank),
				strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.ID, b.ID))
		})
		var got []eqGSIItem
		for it, err := range tbl.Query("by_rank", ch).All(t.Context()) {
			require.NoError(t, err)
			got = append(got, eqGSIItem(it))
		}
		require.Equal(t, want, got, "channel %s: the index table holds what the base table holds, in order", ch)
	}
}

// eqQuery is one random query of the by_rank index.
type eqQuery struct {
	channel string
	cond    ddbindex.SortCondition
	desc    bool
	limit   int
}

func (q eqQuery) String() string {
	return fmt.Sprintf("channel=%s where %v desc=%v limit=%d", q.channel, q.cond, q.desc, q.limit)
}

func eqQueries(rng *rand.Rand, n int) []eqQuery {
	status := func() string { return eqStatuses[rng.IntN(len(eqStatuses))] }
	rank := func() int64 { return int64(rng.IntN(45) - 22) }
	var out []eqQuery
	for i := range n {
		q := eqQuery{channel: eqChannels[rng.IntN(len(eqChannels))], desc: rng.IntN(2) == 0, limit: 1 + rng.IntN(25)}
		if i%40 == 39 {
			q.channel = "empty" // a partition with no items
		}
		// One or two leading components.
		lead := func() []any {
			if rng.IntN(2) == 0 {
				return []any{status()}
			}
			return []any{status(), rank()}
		}
		switch i % 8 {
		case 0:
			// no condition
		case 1:
			q.cond = ddbindex.Eq(lead()...)
		case 2:
			q.cond = ddbindex.Lt(lead()...)
		case 3:
			q.cond = ddbindex.Le(lead()...)
		case 4:
			q.cond = ddbindex.Gt(lead()...)
		case 5:
			q.cond = ddbindex.Ge(lead()...)
		case 6:
			if rng.IntN(2) == 0 {
				a, b := status(), status()
				if a > b {
					a, b = b, a
				}
				q.cond = ddbindex.Between(a, b)
			} else {
				s := status()
				a, b := rank(), rank()
				if a > b {
					a, b = b, a
				}
				q.cond = ddbindex.Between(ddbindex.K(s, a), ddbindex.K(s, b))
			}
		case 7:
			s := status()
			q.cond = ddbindex.BeginsWith(s[:1+rng.IntN(len(s))])
		}
		out = append(out, q)
	}
	return out
}

// eqPage is one page as a caller sees it.
type eqPage struct {
	Items  []eqGSIItem
	Cursor string
}

// eqPages reads a query to its end, page after page, following the cursors.
// A cursor leads to an empty page only where the last page's look-ahead item
// would have cost another read unit; such an empty page is dropped and the
// page before it counted as the last.
func eqPages[T any](t *testing.T, q ddbindex.Query[T], conv func(T) eqGSIItem, limit int, what string) (pages []eqPage, requests int) {
	t.Helper()
	cursor := ""
	for n := 0; ; n++ {
		require.Less(t, n, 1000, "%s: runaway paging", what)
		p, err := q.After(cursor).Page(t.Context())
		require.NoError(t, err, "%s: page %d", what, n)
		requests++
		items := eqConv(p.Items, conv)
		if len(items) == 0 && p.Cursor == "" && len(pages) > 0 {
			// The last page did not read its look-ahead item (it would
			// have cost another read unit): its cursor led here, to
			// nothing. A page whose cursor leads to an empty page is the
			// last one.
			pages[len(pages)-1].Cursor = ""
			break
		}
		pages = append(pages, eqPage{items, p.Cursor})
		if p.Cursor == "" {
			break
		}
		require.Len(t, p.Items, limit, "%s: page %d has a cursor, so it is full", what, n)
		require.NotEqual(t, cursor, p.Cursor, "%s: page %d: the cursor advanced", what, n)
		cursor = p.Cursor
	}
	return pages, requests
}

// eqItems is the items of pages, page by page, and whether each page has a
// cursor.
func eqItems(pages []eqPage) (out []eqPage) {
	for _, p := range pages {
		c := ""
		if p.Cursor != "" {
			c = "more"
		}
		out = append(out, eqPage{p.Items, c})
	}
	return out
}

func eqConv[T any](items []T, conv func(T) eqGSIItem) []eqGSIItem {
	out := make([]eqGSIItem, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return out
}

// eqCompare runs each query through the GSI and through the index table,
// page by page to the end, and requires identical pages, each form's
// cursors leading the other form to the same next page. It returns the
// number of pages compared.
func eqCompare(t *testing.T, gsi *ddbindex.Table[eqGSIItem], tbl *ddbindex.Table[eqTableItem], queries []eqQuery) int {
	t.Helper()
	total := 0
	for _, q := range queries {
		gq := gsi.Query("by_rank", q.channel).Where(q.cond).Limit(q.limit)
		tq := tbl.Query("by_rank", q.channel).Where(q.cond).Limit(q.limit)
		if q.desc {
			gq, tq = gq.Desc(), tq.Desc()
		}
		gp, _ := eqPages(t, gq, func(it eqGSIItem) eqGSIItem { return it }, q.limit, "GSI "+q.String())
		tp, _ := eqPages(t, tq, func(it eqTableItem) eqGSIItem { return eqGSIItem(it) }, q.limit, "table "+q.String())
		require.Equal(t, eqItems(gp), eqItems(tp), "%v: the same pages and items", q)
		// The cursors may differ in how far past the page they say the
		// reads found only tombstones; each form takes the other's and
		// gives the same next page.
		for i := 0; i+1 < len(gp); i++ {
			tn, err := tq.After(gp[i].Cursor).Page(t.Context())
			require.NoError(t, err, "%v: the table after the GSI's cursor %d", q, i)
			gn, err := gq.After(tp[i].Cursor).Page(t.Context())
			require.NoError(t, err, "%v: the GSI after the table's cursor %d", q, i)
			want := gp[i+1].Items
			require.Equal(t, want, eqConv(tn.Items, func(it eqTableItem) eqGSIItem { return eqGSIItem(it) }), "%v: the table's page after the GSI's cursor %d", q, i)
			require.Equal(t, want, eqConv(gn.Items, func(it eqGSIItem) eqGSIItem { return it }), "%v: the GSI's page after the table's cursor %d", q, i)
		}
		total += len(gp)
	}
	return total
}

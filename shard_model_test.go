package ddbindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/av"
	"github.com/ddbindex/ddbindex/internal/expr"
)

// This file checks what pages of a sharded index cost, and compares the
// ways to size a merge's requests, against a model of DynamoDB's Query
// with the rules that decide the cost (as pagefill_model_test.go's, from the
// Query API reference and the developer guide's "DynamoDB read and write
// operations",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
//
//   - Limit counts items read, before the filter; a response stops at 1 MB;
//     LastEvaluatedKey is set whenever it stopped for either;
//   - a Query consumes the total size of the items it read rounded up to
//     the next 4 KB, half a read unit per 4 KB (GSI reads are eventually
//     consistent), and read units even when it reads nothing ("For
//     Query/Scan operations, you'll still be charged ... even if no data
//     exists"): the model charges one 4 KB block then.
//
// The model serves the physical partitions of shmItem's sharded GSIs, with
// tombstones where a pattern puts them (the filter the library sends for a
// softdelete table removes exactly those).

// shmItem is a feed with three sharded GSIs, read through tombstones.
type shmItem struct {
	_    TableSpec `ddbindex:"shm_feed,softdelete"`
	_    IndexSpec `ddbindex:"feed4,type=gsi,name=feed-4,pk=P4,sk=S4,shards=4,project=body"`
	_    IndexSpec `ddbindex:"feed16,type=gsi,name=feed-16,pk=P16,sk=S16,shards=16,project=body"`
	_    IndexSpec `ddbindex:"feed64,type=gsi,name=feed-64,pk=P64,sk=S64,shards=64,project=body"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"feed4.pk;feed16.pk;feed64.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"feed4.sk;feed16.sk;feed64.sk"`
	Body string    `dynamodbav:"body"`
}

type shmEntry struct {
	at   int64
	sk   string
	item map[string]types.AttributeValue
	size int
	dead bool
}

// shmServer is the model: a Client whose Query serves the partitions of
// sharded GSIs (read only), and counts the requests and read units.
type shmServer struct {
	curxNoCallClient
	*shmData

	mu    sync.Mutex
	reqs  int
	units float64
}

func (m *shmServer) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	index := aws.ToString(in.IndexName)
	pk, ok := in.ExpressionAttributeValues[expr.ShardPKValue].(*types.AttributeValueMemberS)
	if !ok {
		return nil, fmt.Errorf("shmServer: not a sharded query: %s", aws.ToString(in.KeyConditionExpression))
	}
	match, err := shmKeyCond(aws.ToString(in.KeyConditionExpression), in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	skAttr := m.skAttr[index]
	var entries []shmEntry
	for _, e := range m.parts[index+"\x00"+pk.Value] {
		if match(e.sk) {
			entries = append(entries, e)
		}
	}
	asc := aws.ToBool(in.ScanIndexForward)
	if !asc {
		entries = slices.Clone(entries)
		slices.Reverse(entries)
	}
	if esk := in.ExclusiveStartKey; esk != nil {
		k := esk[skAttr].(*types.AttributeValueMemberS).Value
		i := sort.Search(len(entries), func(j int) bool {
			if asc {
				return entries[j].sk > k
			}
			return entries[j].sk < k
		})
		entries = entries[i:]
	}
	limit := math.MaxInt
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	out := &dynamodb.QueryOutput{}
	bytes := 0
	var last *shmEntry
	for i := range entries {
		if int(out.ScannedCount) == limit || bytes >= pfmMB {
			break
		}
		e := &entries[i]
		bytes += e.size
		out.ScannedCount++
		last = e
		if !e.dead || in.FilterExpression == nil {
			out.Items = append(out.Items, e.item)
			out.Count++
		}
	}
	if last != nil && (int(out.ScannedCount) == limit || bytes >= pfmMB) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{}
		for _, a := range []string{"id", skAttr, in.ExpressionAttributeNames[expr.ShardPKName]} {
			out.LastEvaluatedKey[a] = last.item[a]
		}
	}
	units := math.Max(1, math.Ceil(float64(bytes)/4096)) * 0.5
	out.ConsumedCapacity = &types.ConsumedCapacity{CapacityUnits: aws.Float64(units)}
	m.mu.Lock()
	m.reqs++
	m.units += units
	m.mu.Unlock()
	return out, nil
}

// shmKeyCond returns what the sort key condition of a shard's request
// matches (see shardPlan).
func shmKeyCond(kce string, values map[string]types.AttributeValue) (func(string) bool, error) {
	v := func(name string) string {
		s, _ := values[name].(*types.AttributeValueMemberS)
		if s == nil {
			return ""
		}
		return s.Value
	}
	cond, ok := strings.CutPrefix(kce, expr.ShardPKName+" = "+expr.ShardPKValue)
	if !ok {
		return nil, fmt.Errorf("shmServer: key condition %q", kce)
	}
	if cond == "" {
		return func(string) bool { return true }, nil
	}
	lo, hi := v(expr.ShardLo), v(expr.ShardHi)
	switch strings.TrimPrefix(cond, " AND ") {
	case "begins_with(" + expr.ShardSKName + ", " + expr.ShardLo + ")":
		return func(sk string) bool { return strings.HasPrefix(sk, lo) }, nil
	case expr.ShardSKName + " = " + expr.ShardLo:
		return func(sk string) bool { return sk == lo }, nil
	case expr.ShardSKName + " BETWEEN " + expr.ShardLo + " AND " + expr.ShardHi:
		return func(sk string) bool { return lo <= sk && sk <= hi }, nil
	case expr.ShardSKName + " > " + expr.ShardLo:
		return func(sk string) bool { return sk > lo }, nil
	case expr.ShardSKName + " >= " + expr.ShardLo:
		return func(sk string) bool { return sk >= lo }, nil
	case expr.ShardSKName + " < " + expr.ShardHi:
		return func(sk string) bool { return sk < hi }, nil
	case expr.ShardSKName + " <= " + expr.ShardHi:
		return func(sk string) bool { return sk <= hi }, nil
	}
	return nil, fmt.Errorf("shmServer: key condition %q", kce)
}

// shmData is one feed in the model: the partitions of its sharded GSIs,
// each ascending by sort key, keyed by index and partition; its live
// items' IDs newest first, with their times; and the unsharded index's
// entries, newest first: sizes and deaths.
type shmData struct {
	skAttr map[string]string // by index
	parts  map[string][]shmEntry
	live   []string
	at     map[string]int64
	sizes  []int
	dead   []bool
}

// shmLoad builds a feed of n items whose GSI entries are about size bytes,
// with tombstones of the given density. The items' IDs are random, from
// seed: their shards are independent of the items' order, as for random or
// time-ordered-random IDs.
func shmLoad(t testing.TB, seed, n, size int, density float64) *shmData {
	tb, err := New[shmItem](nil)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(size)))
	d16, err := tb.index("feed16")
	require.NoError(t, err)
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", rng.Uint64())
	}
	mk := func(i int, body string) shmItem {
		return shmItem{ID: ids[i], Feed: "f", At: int64(i + 1), Body: body}
	}
	entry := func(d *layout, it shmItem) map[string]types.AttributeValue {
		av, err := tb.Marshal(it)
		require.NoError(t, err)
		return shbProjected(d, av)
	}
	body := strings.Repeat("x", size-av.ItemSize(entry(d16, mk(n, ""))))
	deadExtra := tb.opts.tombstoneMarkBytes()
	data := &shmData{skAttr: map[string]string{}, parts: map[string][]shmEntry{}, at: map[string]int64{}}
	for i := n - 1; i >= 0; i-- {
		isDead := rng.Float64() < density
		data.dead = append(data.dead, isDead)
		it := mk(i, body)
		if !isDead {
			data.live = append(data.live, it.ID)
		}
		data.at[it.ID] = it.At
		for _, index := range []string{"feed4", "feed16", "feed64"} {
			d, err := tb.index(index)
			require.NoError(t, err)
			e := entry(d, it)
			key := d.index + "\x00" + e[d.pk.attr].(*types.AttributeValueMemberS).Value
			sz := av.ItemSize(e)
			if isDead {
				sz += deadExtra
			}
			data.parts[key] = append(data.parts[key], shmEntry{at: it.At, sk: e[d.sk.attr].(*types.AttributeValueMemberS).Value, item: e, size: sz, dead: isDead})
			data.skAttr[d.index] = d.sk.attr
			if index == "feed16" {
				data.sizes = append(data.sizes, sz)
			}
		}
	}
	for k, es := range data.parts {
		slices.SortFunc(es, func(a, b shmEntry) int { return strings.Compare(a.sk, b.sk) })
		data.parts[k] = es
	}
	return data
}

// shmFloor is what the unsharded index's page costs at best: one request
// that reads up to the page's last live item and the one after it (the
// library's page reads that much when no tombstone lies in between), from
// item from on (newest first). It returns the read units and where the next
// page starts.
func shmFloor(sizes []int, dead []bool, from, want int) (float64, int) {
	bytes, live, i := 0, 0, from
	for ; i < len(sizes) && live < want; i++ {
		bytes += sizes[i]
		if !dead[i] {
			live++
		}
	}
	next := i
	if live == want { // the next page starts at the look-ahead item
		for next--; next > from && dead[next]; next-- {
		}
	}
	return math.Max(1, math.Ceil(float64(bytes)/4096)) * 0.5, next
}

// shmOracle is what a page of index costs at best when every shard's
// entries are known: one request per shard that reads from the page's
// start (newest first, the entries at or before time from) to the page's
// look-ahead item (time to), or to the shard's first entry after it, or to
// the shard's end (to 0: the page is the last). A shard without entries
// costs one block too.
func shmOracle(data *shmData, index string, shards int, from, to int64) float64 {
	units := 0.0
	for key, es := range data.parts {
		if !strings.HasPrefix(key, index+"\x00") {
			continue
		}
		shards--
		bytes := 0
		for i := len(es) - 1; i >= 0; i-- {
			if es[i].at > from {
				continue
			}
			bytes += es[i].size
			if es[i].at <= to {
				break
			}
		}
		units += math.Max(1, math.Ceil(float64(bytes)/4096)) * 0.5
	}
	return units + float64(shards)*0.5
}

// shmCost adds up pages.
type shmCost struct {
	pages, reqs, rounds, maxRounds int
	units, floor, oracle           float64
}

func (c *shmCost) add(reqs, rounds int, units, floor, oracle float64) {
	c.pages++
	c.reqs += reqs
	c.rounds += rounds
	c.maxRounds = max(c.maxRounds, rounds)
	c.units += units
	c.floor += floor
	c.oracle += oracle
}

// String shows, per page: requests, read units, their ratio to the
// unsharded page's floor and to the sharded oracle's, and rounds (mean, and
// max in parentheses).
func (c shmCost) String() string {
	p := float64(max(1, c.pages))
	return fmt.Sprintf("%5.1f %6.2f %5.2fx %4.2fx %4.2f(%d)", float64(c.reqs)/p, c.units/p, c.units/c.floor, c.units/c.oracle, float64(c.rounds)/p, c.maxRounds)
}

// shmFeed is a feed of the model: its entries' size and tombstone density.
type shmFeed struct {
	size    int
	density float64
}

// shmFeeds are the feeds the model reads: 200 B, 1 KB and 4 KB entries,
// 600 B and 3 KB ones (a few more than fit a 4 KB block per shard's share,
// where a request one block too large costs most), and 1 KB ones of which
// half are tombstones.
var shmFeeds = []shmFeed{{200, 0}, {600, 0}, {1000, 0}, {3000, 0}, {4000, 0}, {1000, 0.5}}

const (
	shmItems  = 300 // live items per feed
	shmPages  = 5
	shmLimit  = 20
	shmTrials = 12 // feeds of each kind, with different IDs
)

// shmCache holds the feeds, built once per process.
var shmCache sync.Map // [3]int{trial, size, density*100} -> *shmData

func shmFeedData(t testing.TB, trial int, f shmFeed) *shmData {
	key := [3]int{trial, f.size, int(f.density * 100)}
	if v, ok := shmCache.Load(key); ok {
		return v.(*shmData)
	}
	data := shmLoad(t, trial, int(float64(shmItems)/(1-f.density)), f.size, f.density)
	shmCache.Store(key, data)
	return data
}

// shmRun reads from the index sharded S ways the feed's page 1 on a Table
// that has not read it before (cold), then its first shmPages pages (warm),
// with the given sizing, checks that every page holds the right items, and
// adds their costs up.
func shmRun(t testing.TB, data *shmData, S int, sizing shardSizing, cold, warm *shmCost) {
	ctx := context.Background()
	m := &shmServer{curxNoCallClient: curxNoCallClient{t: t}, shmData: data}
	tb, err := New[shmItem](nil)
	require.NoError(t, err)
	tb.client = calls{m}
	rounds := 0
	sizing.onRound = func(int) { rounds++ }
	tb.shardSizing = &sizing
	index := fmt.Sprintf("feed%d", S)
	for run, c := range []*shmCost{cold, warm} {
		cursor, from := "", 0
		for i := range shmPages {
			if run == 0 && i > 0 {
				break
			}
			m.reqs, m.units, rounds = 0, 0, 0
			page, err := tb.Query(index, "f").Desc().Limit(shmLimit).After(cursor).Page(ctx)
			require.NoError(t, err)
			var ids []string
			for _, it := range page.Items {
				ids = append(ids, it.ID)
			}
			live := data.live
			require.Equal(t, live[i*shmLimit:min(len(live), (i+1)*shmLimit)], ids, "S=%d page %d", S, i+1)
			require.Equal(t, m.reqs, page.Stats.Requests)
			require.InDelta(t, m.units, page.Stats.ReadUnits, 1e-9)
			floor, next := shmFloor(data.sizes, data.dead, from, shmLimit+1)
			to := int64(0)
			if len(live) > (i+1)*shmLimit {
				to = data.at[live[(i+1)*shmLimit]]
			}
			c.add(m.reqs, rounds, m.units, floor, shmOracle(data, fmt.Sprintf("feed-%d", S), S, data.at[live[i*shmLimit]], to))
			if cursor, from = page.Cursor, next; cursor == "" {
				break
			}
		}
	}
}

// TestShardedPageCostModel reads five descending pages of 20 from sharded
// GSIs of 4, 16 and 64 shards over the model's feeds (shmFeeds), for many
// hashings of the items to shards, with the default sizing, and checks
// every page's items and what the pages cost against the bounds the
// arithmetic of 4 KB blocks allows (see the asserts). It logs requests,
// read units, their ratios to the unsharded page's floor and to the sharded
// oracle's, and rounds per page (mean, and max in parentheses): page 1 on a
// Table that has not read the feed before, then warm pages.
// BenchmarkShardedSizing compares the default with other sizings.
func TestShardedPageCostModel(t *testing.T) {
	t.Parallel()
	var report strings.Builder
	fmt.Fprintf(&report, "%-22s | %-36s | %-36s\n", "feed", "page 1 cold: req RCU xFloor xOracle rounds", "warm pages: req RCU xFloor xOracle rounds")
	for _, S := range []int{4, 16, 64} {
		for _, f := range shmFeeds {
			var cold, warm shmCost
			for trial := range shmTrials {
				shmRun(t, shmFeedData(t, trial, f), S, defaultShardSizing, &cold, &warm)
			}
			fmt.Fprintf(&report, "S=%-2d %4d B dead %-4g | %-36s | %-36s\n", S, f.size, f.density, cold, warm)
			where := fmt.Sprintf("S=%d, %d B, density %g", S, f.size, f.density)
			w := float64(warm.pages)
			// No merge reads less than the oracle: every shard must read
			// up to the page's end, and one entry past it.
			assert.GreaterOrEqual(t, warm.units, warm.oracle-1e-9, where)
			// Entries of 2 KB or more are asked for sparingly, for a round
			// more (see defaultShardSizing).
			// Tombstones call for a refill more often.
			big := float64(f.size) >= defaultShardSizing.bigBytes
			rounds := map[bool]float64{false: 2.5, true: 3.5}[big]
			if f.density > 0 {
				rounds = 3
			}
			assert.LessOrEqual(t, float64(warm.rounds)/w, rounds, "%s: rounds", where)
			// Warm pages stay within 1.25x the oracle's read units,
			// tombstones or not; page 1 on a Table that has not read the
			// feed within 1.3x (its first request shows the entries' size
			// to the others).
			assert.LessOrEqual(t, warm.units, 1.25*warm.oracle, "%s: read units", where)
			assert.LessOrEqual(t, cold.units, 1.3*cold.oracle, "%s: read units of page 1 cold", where)
			if f.density > 0 {
				continue
			}
			assert.LessOrEqual(t, warm.maxRounds, map[bool]int{false: 4, true: 6}[big], "%s: rounds", where)
			if 4096/f.size >= shmLimit {
				// One 4 KB block holds every entry a shard may need: each
				// shard's first request reads them all, at the least cost
				// any read of S shards has.
				assert.Equal(t, 1, warm.maxRounds, "%s: rounds", where)
				assert.Equal(t, float64(S)/2*w, warm.units, "%s: read units", where)
			}
		}
	}
	t.Log("\n" + report.String())
}

// BenchmarkShardedSizing compares ways to size a merge's requests on the
// model (no server): the default; without the lookahead (a round asks only
// the shards the merge has drained); without the fill of 4 KB blocks;
// without either; other tail probabilities; and every shard asked for a
// whole page at once. It reports, per page, requests, read units (RCU),
// their ratio to the unsharded page's floor (x-floor) and to the sharded
// oracle's (x-oracle), and rounds, for warm pages and for page 1 on a cold
// Table (cold-...).
func BenchmarkShardedSizing(b *testing.B) {
	with := func(change func(*shardSizing)) shardSizing {
		s := defaultShardSizing
		change(&s)
		return s
	}
	variants := []struct {
		name   string
		sizing shardSizing
	}{
		{"default", defaultShardSizing},
		{"tails-only", with(func(s *shardSizing) { s.roundBlocks = 0 })},
		{"no-probe", with(func(s *shardSizing) { s.probe = false })},
		{"no-pool", with(func(s *shardSizing) { s.noPool = true })},
		{"round-1", with(func(s *shardSizing) { s.roundBlocks = 1 })},
		{"round-3", with(func(s *shardSizing) { s.roundBlocks = 3 })},
		{"no-lookahead", with(func(s *shardSizing) { s.noLookahead = true })},
		{"no-fill", with(func(s *shardSizing) { s.noFill = true })},
		{"neither", with(func(s *shardSizing) { s.noFill, s.noLookahead = true, true })},
		{"tails-0.5-0.3", with(func(s *shardSizing) { s.firstTail, s.refillTail = 0.5, 0.3 })},
		{"tails-0.1-0.05", with(func(s *shardSizing) { s.firstTail, s.refillTail = 0.1, 0.05 })},
		{"whole-page", shardSizing{firstTail: 1e-12, refillTail: 1e-12}},
		{"big-like-small", shardSizing{firstTail: 0.3, refillTail: 0.1}},
		{"big-0.5-0.3", shardSizing{firstTail: 0.3, refillTail: 0.1, bigBytes: 2048, bigFirst: 0.5, bigRefill: 0.3}},
		{"big-0.7-0.5", shardSizing{firstTail: 0.3, refillTail: 0.1, bigBytes: 2048, bigFirst: 0.7, bigRefill: 0.5}},
		{"800B-is-big", shardSizing{firstTail: 0.3, refillTail: 0.1, bigBytes: 800, bigFirst: 0.6, bigRefill: 0.4}},
	}
	for _, S := range []int{4, 16, 64} {
		for _, f := range shmFeeds {
			for _, v := range variants {
				b.Run(fmt.Sprintf("S=%d/B=%d/dead=%g/%s", S, f.size, f.density, v.name), func(b *testing.B) {
					var cold, warm shmCost
					for b.Loop() {
						cold, warm = shmCost{}, shmCost{}
						for trial := range shmTrials {
							shmRun(b, shmFeedData(b, trial, f), S, v.sizing, &cold, &warm)
						}
					}
					for _, c := range []struct {
						prefix string
						cost   shmCost
					}{{"", warm}, {"cold-", cold}} {
						p := float64(c.cost.pages)
						b.ReportMetric(float64(c.cost.reqs)/p, c.prefix+"req/page")
						b.ReportMetric(c.cost.units/p, c.prefix+"RCU/page")
						b.ReportMetric(c.cost.units/c.cost.floor, c.prefix+"x-floor")
						b.ReportMetric(c.cost.units/c.cost.oracle, c.prefix+"x-oracle")
						b.ReportMetric(float64(c.cost.rounds)/p, c.prefix+"rounds/page")
					}
				})
			}
		}
	}
}

// TestPoissonQuantile checks the quantiles the merge sizes requests with,
// against the Poisson law's (and the normal approximation's for large
// means, against the Poisson law's exact quantile).
func TestPoissonQuantile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mean, tail float64
		want       int
	}{
		{21.0 / 64, 0.3, 0}, // P(0) = 0.72
		{21.0 / 16, 0.3, 2}, // P(<=1) = 0.62, P(<=2) = 0.85
		{21.0 / 16, 0.1, 3}, // P(<=3) = 0.96
		{21.0 / 4, 0.3, 6},  // P(<=5) = 0.57, P(<=6) = 0.72
		{0, 0.3, 0},
		{100, 0.1, 113}, // normal: 100 + 1.2816*10 - 0.5
		{1e9, 0.3, maxRequestItems},
	} {
		assert.Equal(t, c.want, poissonQuantile(c.mean, c.tail), "mean %g, tail %g", c.mean, c.tail)
	}
}

// TestShardedPageCapModel: with MaxRequests one over the shards, a page
// that needs a second round sends its blocked shards' requests alone, or
// stops with a cursor; following the cursors (of pages and of cap errors)
// yields every live item once, in order.
func TestShardedPageCapModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for trial := range 3 {
		data := shmFeedData(t, trial, shmFeed{4000, 0})
		m := &shmServer{curxNoCallClient: curxNoCallClient{t: t}, shmData: data}
		tb, err := New[shmItem](nil)
		require.NoError(t, err)
		tb.client = calls{m}
		var got []string
		capped := 0
		cursor := ""
		for range 100 {
			page, err := tb.Query("feed16", "f").Desc().Limit(shmLimit).MaxRequests(17).After(cursor).Page(ctx)
			if err != nil {
				require.ErrorIs(t, err, ErrCapReached)
				capped++
			}
			require.LessOrEqual(t, page.Stats.Requests, 17)
			for _, it := range page.Items {
				got = append(got, it.ID)
			}
			if cursor = page.Cursor; cursor == "" || len(got) >= 100 {
				break
			}
		}
		require.Equal(t, data.live[:len(got)], got)
		require.GreaterOrEqual(t, len(got), 100)
		t.Logf("trial %d: %d of the pages stopped at the cap", trial, capped)
	}
}

package ddbindex

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// memoLen counts the entries m holds, checking each part's order against
// its map.
func memoLen(t *testing.T, m *memo) int {
	t.Helper()
	n := 0
	for i := range m.parts {
		p := &m.parts[i]
		p.mu.Lock()
		ok := len(p.order) == len(p.m)
		for _, k := range p.order {
			_, in := p.m[k]
			ok = ok && in && m.part(k) == p
		}
		n += len(p.m)
		p.mu.Unlock()
		require.True(t, ok, "part %d: its order lists its keys, each hashed to it", i)
	}
	return n
}

// TestMemoRemembersAndDecays: an entry's ratio weighs newer calls more, its
// weight is the decayed evidence, and its entry size is kept apart.
func TestMemoRemembersAndDecays(t *testing.T) {
	t.Parallel()
	var m memo
	r, w := m.get("k")
	require.Zero(t, r)
	require.Zero(t, w)
	require.Zero(t, m.itemBytes("k"))

	m.put("k", 10, 100, false, 0)
	r, w = m.get("k")
	require.InDelta(t, 0.1, r, 1e-12)
	require.InDelta(t, 100, w, 1e-12)

	m.put("k", 50, 100, false, 0) // live 5+50, read 50+100
	r, w = m.get("k")
	require.InDelta(t, 55.0/150, r, 1e-12)
	require.InDelta(t, 150, w, 1e-12)

	m.putItemBytes("k", 321)
	require.InDelta(t, 321, m.itemBytes("k"), 1e-12)
	r, w = m.get("k")
	require.InDelta(t, 55.0/150, r, 1e-12, "the entry size leaves the ratio alone")
	require.InDelta(t, 150, w, 1e-12)

	m.putItemBytes("sized only", 64)
	r, w = m.get("sized only")
	require.Zero(t, r, "an entry with no reads yet gives no ratio")
	require.Zero(t, w)
	require.Equal(t, 2, memoLen(t, &m))

	var none *memo
	none.put("k", 1, 1, false, 0)
	none.putItemBytes("k", 1)
	r, w = none.get("k")
	require.Zero(t, r+w+none.itemBytes("k"), "a nil memo remembers nothing")
}

// TestMemoBound: however many partitions are read, a memo holds at most
// memoCap entries, and each part forgets its oldest first: the newest
// entry of every part survives, the first entry of a part that overflowed
// does not.
func TestMemoBound(t *testing.T) {
	t.Parallel()
	var m memo
	var keys []string
	for i := range 3 * memoCap {
		k := "idx\x00part-" + strconv.Itoa(i)
		keys = append(keys, k)
		m.put(k, 1, 2, false, 0)
		if i%(memoCap/4) == 0 {
			require.LessOrEqual(t, memoLen(t, &m), memoCap)
		}
	}
	require.LessOrEqual(t, memoLen(t, &m), memoCap)
	require.Greater(t, memoLen(t, &m), memoCap/2, "the parts share the bound")
	newest := map[*memoPart]string{}
	first := map[*memoPart]string{}
	count := map[*memoPart]int{}
	for _, k := range keys {
		p := m.part(k)
		newest[p] = k
		if _, ok := first[p]; !ok {
			first[p] = k
		}
		count[p]++
	}
	for p, k := range newest {
		r, _ := m.get(k)
		require.InDelta(t, 0.5, r, 1e-12, "the newest key of its part is kept")
		if count[p] > memoCap/memoShards {
			r, w := m.get(first[p])
			require.Zero(t, r+w, "the oldest key of a full part is forgotten")
		}
	}
	// Updating a kept entry does not make room: it is not new.
	before := memoLen(t, &m)
	m.put(keys[len(keys)-1], 1, 2, false, 0)
	require.Equal(t, before, memoLen(t, &m))
}

// TestMemoPartsLockApart: a call on one key takes only its part's lock, so
// it proceeds while another part is held (with one lock for the whole memo
// it would wait forever).
func TestMemoPartsLockApart(t *testing.T) {
	t.Parallel()
	var m memo
	a := "index-a\x00p"
	b := ""
	for i := 0; b == ""; i++ {
		if k := "index-b\x00p" + strconv.Itoa(i); m.part(k) != m.part(a) {
			b = k
		}
	}
	held := m.part(a)
	held.mu.Lock()
	m.put(b, 3, 4, false, 0)
	m.putItemBytes(b, 10)
	r, w := m.get(b)
	held.mu.Unlock()
	require.InDelta(t, 0.75, r, 1e-12)
	require.InDelta(t, 4, w, 1e-12)
	require.InDelta(t, 10, m.itemBytes(b), 1e-12)
}

// TestMemoConcurrent: calls on one Table read and update the memo at once
// (run with -race); every update lands. The keys are too few to fill a
// part, so none is forgotten.
func TestMemoConcurrent(t *testing.T) {
	t.Parallel()
	var m memo
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				shared := "shared\x00" + strconv.Itoa(i%4)
				m.put(shared, 1, 1, false, 0)
				m.get(shared)
				m.putItemBytes(shared, float64(w+1))
				m.itemBytes(shared)
				own := "own\x00" + strconv.Itoa(w) + "/" + strconv.Itoa(i%8)
				m.put(own, 0, 1, false, 0)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, memoLen(t, &m), memoCap)
	for i := range 4 {
		k := "shared\x00" + strconv.Itoa(i)
		r, w := m.get(k)
		require.InDelta(t, 1, r, 1e-12, "every call read live entries only")
		require.InDelta(t, 2, w, 1e-9, "the decayed weight of many calls of 1 read")
		require.Contains(t, []float64{1, 2, 3, 4, 5, 6, 7, 8}, m.itemBytes(k))
	}
}

// TestMemoNoAllocs: remembering and recalling a known partition allocates
// nothing, so a query's page fill pays no allocation for the memo.
func TestMemoNoAllocs(t *testing.T) {
	var m memo
	key := "index\x00partition\x00cond"
	m.put(key, 1, 2, false, 0)
	m.putItemBytes(key, 100)
	allocs := testing.AllocsPerRun(100, func() {
		m.get(key)
		m.put(key, 1, 2, false, 0)
		m.itemBytes(key)
		m.putItemBytes(key, 100)
	})
	require.Zero(t, allocs)
}

// TestMemoKeepsOrdersApart: what a descending read learnt about a
// partition does not size an ascending read of it. The partition's head
// (the descending end) is all tombstones but every 50th entry, its tail
// all live: a Table warm from descending pages reads its first ascending
// page as a cold one does, with one request of the page alone.
func TestMemoKeepsOrdersApart(t *testing.T) {
	t.Parallel()
	const n = 1000
	dead := make([]bool, n) // in descending order
	for i := range n / 2 {
		dead[i] = i%50 != 0
	}
	read := func(warm bool) pfmCost {
		tb, err := New[benchFeedItem](nil)
		require.NoError(t, err)
		m := pfmLoad(t, tb, dead, 1024)
		tb.client = calls{m}
		if warm {
			pfmLibrary(t, tb, m, 2, 20)
		}
		r0, u0 := m.reqs, m.units
		p, err := tb.Query("feed", "c").Limit(20).Page(t.Context())
		require.NoError(t, err)
		require.Len(t, p.Items, 20)
		return pfmCost{m.reqs - r0, m.units - u0}
	}
	cold, warm := read(false), read(true)
	require.Equal(t, pfmCost{1, 2.5}, cold)
	require.Equal(t, cold, warm, "an ascending page after descending ones")
}

// TestMemoNewEvidenceOutweighsOld: an entry built from many reads of a
// sparse partition (20 live items of 5,000) weighs no more than
// priorWeight items once a call adds its own, so a call that read 1,000
// live items of 1,000, after the partition changed, sets the ratio near 1
// (without the bound it would be 0.29, and later calls would go on reading
// far past their pages).
func TestMemoNewEvidenceOutweighsOld(t *testing.T) {
	t.Parallel()
	var m memo
	m.put("k", 20, 5000, false, 0)
	m.put("k", 1000, 1000, false, 0)
	r, w := m.get("k")
	old := 20.0 * priorWeight / 5000
	require.InDelta(t, (old*memoDecay+1000)/(priorWeight*memoDecay+1000), r, 1e-12)
	require.InDelta(t, priorWeight*memoDecay+1000, w, 1e-12)
	require.Greater(t, r, 0.9)
}

// TestMemoKeepsFirstPagesApart: what calls that go on from a cursor learnt
// does not size a first page. The partition's head (the descending end) is
// 300 live entries, the rest is tombstones but one in twenty: a Table that
// read five pages, the last four in the sparse stretch, reads page 1 again
// in one request of about the page, as a cold Table does.
func TestMemoKeepsFirstPagesApart(t *testing.T) {
	t.Parallel()
	const n = 2000
	dead := make([]bool, n) // in descending order
	for i := 300; i < n; i++ {
		dead[i] = i%20 != 0
	}
	tb, err := New[benchFeedItem](nil)
	require.NoError(t, err)
	m := pfmLoad(t, tb, dead, 1024)
	tb.client = calls{m}
	page1 := func() pfmCost {
		r0, u0 := m.reqs, m.units
		p, err := tb.Query("feed", "c").Desc().Limit(100).Page(t.Context())
		require.NoError(t, err)
		require.Len(t, p.Items, 100)
		return pfmCost{m.reqs - r0, m.units - u0}
	}
	cold := page1()
	require.Equal(t, 1, cold.reqs)
	pfmLibrary(t, tb, m, 5, 100)
	warm := page1()
	require.Equal(t, 1, warm.reqs, "page 1 after pages in the sparse stretch")
	require.LessOrEqual(t, warm.units, cold.units+0.5, "page 1 after pages in the sparse stretch")
}

// TestMemoForgetsAChangedPartition: a Table reads five pages of a partition
// twice, the partition changes, and the Table reads five pages again. Page 1
// is sized from what the Table remembers, and may read up to DynamoDB's 1 MB
// before it learns the change; pages 2 to 5 are not: a first page that
// contradicts what first pages remember drops it, and pages from a cursor
// whose memory is older than that size from what first pages read since.
func TestMemoForgetsAChangedPartition(t *testing.T) {
	t.Parallel()
	const n, pages, limit = 3000, 5, 20
	for _, c := range []struct {
		name     string
		from, to []bool
	}{
		{"sparse turned dense", pfmEvery(n, 0.98, 1), make([]bool, n)},
		{"sparse turned half dead", pfmEvery(n, 0.98, 1), pfmEvery(n, 0.5, 2)},
		{"dense turned sparse", make([]bool, n), pfmEvery(n, 0.98, 1)},
		// Only the head changed: pages from a cursor read where it did
		// not, and their first request reads no more than their own
		// memory calls for (sized from what first pages read since, page
		// 2 read 19.5 read units, not 3).
		{"dense head turned sparse", make([]bool, n), append(pfmEvery(400, 0.98, 1), make([]bool, n-400)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, err := New[benchFeedItem](nil)
			require.NoError(t, err)
			m := pfmLoad(t, tb, c.from, 1024)
			tb.client = calls{m}
			pfmLibrary(t, tb, m, pages, limit)
			pfmLibrary(t, tb, m, pages, limit)
			m.entries = pfmLoad(t, tb, c.to, 1024).entries // deletes and re-creates change the partition
			after := pfmLibrary(t, tb, m, pages, limit)
			again := pfmLibrary(t, tb, m, pages, limit)
			sizes := make([]int, n)
			for i := range sizes {
				sizes[i] = m.entries[n-1-i].size
			}
			floor := pfmFloor(c.to, sizes, pages, limit)
			for i, c := range after {
				t.Logf("page %d: %d requests, %.1f read units; again %d, %.1f; floor %d, %.1f", i+1, c.reqs, c.units, again[i].reqs, again[i].units, floor[i].reqs, floor[i].units)
			}
			require.Len(t, after, len(floor))
			later, settled, least := pfmSum(after, 1), pfmSum(again, 1), pfmSum(floor, 1)
			// Sparse turned dense: page 2 read 1 MB (128.5 read units), 10.7
			// times the settled pages' 12, before first pages marked the
			// change. Dense turned sparse: pages 2 to 4 took 21 requests.
			require.LessOrEqual(t, later.units, 1.1*settled.units, "pages 2 to %d right after the change, against the same pages read again", len(after))
			require.LessOrEqual(t, later.reqs, 3*least.reqs, "pages 2 to %d right after the change, against the floor", len(after))
		})
	}
}

// TestContradicts: a call's count of live items contradicts a prior only
// when it lies both far outside the spread the prior predicts and several
// times over or under it.
func TestContradicts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prior, weight, live, read float64
		want                      bool
	}{
		{0.02, 200, 1050, 1050, true}, // sparse turned dense
		{1, 200, 21, 1050, true},      // dense turned sparse
		{0.5, 200, 21, 200, true},     // a quarter of the expected count, far outside its spread
		{0.02, 0, 1050, 1050, false},  // no prior
		{0.02, 200, 0, 0, false},      // nothing read
		{1, 200, 20, 21, false},       // one tombstone in a dense partition
		{0.8, 200, 21, 46, false},     // a run of tombstones: under the expected count, not four times under
		{0.02, 200, 3, 50, false},     // three times the expected count
		{0.01, 200, 3, 50, false},     // six times the expected count, but within its spread: half an item expected
		{0.25, 200, 32, 124, false},   // what the prior predicts
		{0.709, 316, 32, 124, false},  // well under, not four times under
		{0.05, 200, 30, 100, true},    // six times the expected count, far outside its spread
		{0.05, 200, 15, 100, false},   // three times the expected count
	} {
		got := contradicts(c.prior, c.weight, c.live, c.read)
		require.Equal(t, c.want, got, "prior %g of %g items, %g live of %g read", c.prior, c.weight, c.live, c.read)
	}
}

// TestMemoStartsAfreshOnce: a first pages' entry that found a change
// records it; the entry of calls from a cursor starts afresh the first time
// a call that started after the change adds what it read, and later calls
// (or one that started before it) add to that.
func TestMemoStartsAfreshOnce(t *testing.T) {
	t.Parallel()
	var m memo
	m.put("first", 1, 100, false, 0)
	m.put("onward", 2, 100, false, 0)
	m.put("first", 90, 100, true, 0)
	first, _ := m.entry("first")
	require.NotZero(t, first.changed)
	require.InDelta(t, 0.9, first.live/first.read, 1e-12, "a stale put drops what the entry held")

	m.put("onward", 5, 10, false, first.changed-1) // started before the change
	on, _ := m.entry("onward")
	require.Less(t, on.base, first.changed, "a call that started before the change does not mark the entry")
	require.Greater(t, on.read, 10.0)

	m.put("onward", 9, 10, false, first.changed)
	on, _ = m.entry("onward")
	require.Equal(t, first.changed, on.base)
	require.Equal(t, [2]float64{9, 10}, [2]float64{on.live, on.read}, "the first call after the change starts the entry afresh")

	m.put("onward", 10, 10, false, first.changed)
	on, _ = m.entry("onward")
	require.InDelta(t, 9*memoDecay+10, on.live, 1e-12, "a second call after the same change adds to it")
}

// pfmEvery returns n flags in reading order, each true with chance p (a
// fixed seed: the same flags every run).
func pfmEvery(n int, p float64, seed uint64) []bool {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]bool, n)
	for i := range out {
		out[i] = rng.Float64() < p
	}
	return out
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestRun runs the demo end to end against the test server and checks what
// it prints against ground truth computed here from the posts it publishes
// and deletes: the stream consumer's work, every entry in one of the
// declared shards, pages newest first with cursors, tombstones skipped,
// Explain's request to every shard.
func TestRun(t *testing.T) {
	t.Parallel()
	ddbtest.Client(t) // skips without a server
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ddbtest.Endpoint(), settings{}))
	s := out.String()
	t.Log(s)

	// The number of shards, as Post declares it.
	tag := reflect.TypeFor[Post]().Field(1).Tag.Get("ddbindex")
	m := regexp.MustCompile(`shards=(\d+)`).FindStringSubmatch(tag)
	require.NotNil(t, m, "Post's feed index is sharded: %s", tag)
	shards, _ := strconv.Atoi(m[1])

	// Ground truth: the live posts newest first, and the tombstones.
	all := posts()
	var live, dead []Post
	for i, p := range all {
		if removed(i) {
			dead = append(dead, p)
		} else {
			live = append(live, p)
		}
	}
	newestFirst := func(a, b Post) int { return cmp.Or(b.Published.Compare(a.Published), cmp.Compare(b.ID, a.ID)) }
	slices.SortFunc(live, newestFirst)
	require.NotEmpty(t, dead)

	require.Contains(t, s, fmt.Sprintf("sharded %d ways\n", shards))
	require.Contains(t, s, fmt.Sprintf("== published %d posts (%s to %s), deleted %d of the 40 newest\n",
		len(all), all[0].Published.Format("15:04"), all[len(all)-1].Published.Format("15:04"), len(dead)))
	require.Contains(t, s, fmt.Sprintf("stream consumer applied %d changes: %d entries written, %d tombstones\n",
		len(all)+len(dead), len(all), len(dead)))
	require.Contains(t, s, "a second poll finds 0 new changes")

	// The spread: every shard's partition once, holding all entries and
	// tombstones between them.
	cells := regexp.MustCompile(`(global#\d+) +(\d+) \( *(\d+)\)`).FindAllStringSubmatch(s, -1)
	var parts []string
	entries, tombstones, most := 0, 0, 0
	for _, c := range cells {
		parts = append(parts, c[1])
		n, _ := strconv.Atoi(c[2])
		d, _ := strconv.Atoi(c[3])
		require.LessOrEqual(t, d, n, c[0])
		entries, tombstones, most = entries+n, tombstones+d, max(most, n)
	}
	var want []string
	for i := range shards {
		want = append(want, fmt.Sprintf("global#%d", i))
	}
	require.Equal(t, want, parts, "one partition per shard, in shard order")
	require.Equal(t, len(all), entries)
	require.Equal(t, len(dead), tombstones)
	mean := float64(entries) / float64(shards)
	require.Contains(t, s, fmt.Sprintf("%d entries in %d partitions: mean %.1f, max %d (max/mean %.2f)\n",
		entries, shards, mean, most, float64(most)/mean))

	// Pages of the global feed, newest first, each with a cursor while
	// live posts follow, each costing a request to every shard at least,
	// and skipping at least the tombstones before the next page's first
	// post (the merge reads them to know that nothing live comes between);
	// after a cursor, the shards start at this page's first post.
	costs := regexp.MustCompile(`cost: (\d+) requests, (\d+) read, (\d+) tombstones skipped, (\d+) read ahead`).FindAllStringSubmatch(s, -1)
	cursors := regexp.MustCompile(`cursor: (\S+)`).FindAllStringSubmatch(s, -1)
	require.Len(t, costs, numPages)
	for n := range numPages {
		from, to := n*pageSize, min((n+1)*pageSize, len(live))
		require.Contains(t, s, fmt.Sprintf("   page %d:%s\n", n+1, line(live[from:to])))
		more := to < len(live)
		require.Equal(t, more, cursors[n][1] != `""`, "page %d's cursor", n+1)
		c := make([]int, 4)
		for i := range c {
			c[i], _ = strconv.Atoi(costs[n][i+1])
		}
		requests, read, skipped := c[0], c[1], c[2]
		require.GreaterOrEqual(t, requests, shards, "page %d asks every shard", n+1)
		require.GreaterOrEqual(t, read, skipped+(to-from), "page %d", n+1)
		between := 0
		for _, d := range dead {
			if (n == 0 || newestFirst(d, live[from]) > 0) && (!more || newestFirst(d, live[to]) < 0) {
				between++
			}
		}
		require.GreaterOrEqual(t, skipped, between, "page %d skips the tombstones among its posts", n+1)
	}

	// Explain: the next page's first request to every shard, continuing
	// after the cursor, as an index table and as a sharded GSI.
	ex := s[strings.Index(s, "== Explain"):]
	ex = ex[:strings.Index(ex, "\n==")]
	require.Contains(t, ex, fmt.Sprintf("== Explain of page %d: %d requests, one per shard", numPages+1, shards))
	require.Contains(t, ex, fmt.Sprintf("(table, %d shards)", shards))
	require.Contains(t, ex, fmt.Sprintf("(gsi, %d shards)", shards))
	require.Contains(t, ex, fmt.Sprintf(`_sk <= "%d#%s"`, live[numPages*pageSize].Published.UnixMilli(), live[numPages*pageSize].ID),
		"every shard continues from the next page's first post")
	for _, p := range want {
		require.Equal(t, 2, strings.Count(ex, fmt.Sprintf("%q (Limit ", p)), "a request to %s on each form", p)
	}

	// A full page with nothing live after it has an empty cursor.
	before := start.Add(pageSize * time.Minute)
	var early []Post
	for _, p := range live {
		if p.Published.Before(before) {
			early = append(early, p)
		}
	}
	require.Len(t, early, pageSize)
	require.Contains(t, s, fmt.Sprintf("== posts before %s:%s\n     cursor: \"\" (the end: nothing live follows)\n",
		before.Format("15:04"), line(early)))

	// All over a range reads every entry in it, and nothing else: exactly
	// the range's tombstones are skipped.
	since := all[len(all)-40].Published
	nLive, nDead := 0, 0
	for _, p := range live {
		if !p.Published.Before(since) {
			nLive++
		}
	}
	for _, p := range dead {
		if !p.Published.Before(since) {
			nDead++
		}
	}
	r := regexp.MustCompile(fmt.Sprintf(`posts since %s: %d live \(%d tombstones skipped, (\d+) requests\)`,
		since.Format("15:04"), nLive, nDead)).FindStringSubmatch(s)
	require.NotNil(t, r, "posts since %s: %d live, %d tombstones", since.Format("15:04"), nLive, nDead)
	requests, _ := strconv.Atoi(r[1])
	require.GreaterOrEqual(t, requests, shards)

	require.Contains(t, s, "a tampered cursor: invalid=true (DDBX-300)")
}

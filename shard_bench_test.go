package ddbindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/av"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// BenchmarkShardedPage measures what a page of a sharded index costs against
// the same page of the unsharded index over the same data:
// requests and read units per page of 20 for S = 4, 16 and 64, and the wall
// time of a page read with concurrent shard queries (ShardFanout 16) against
// the same page read one shard query at a time (ShardFanout 1) and against
// the unsharded page, all measured in the same run.
//
// One model writes every form (shbGSIItem: an unsharded feed GSI and its
// sharded twins; shbTableItem: the same as index tables). Each feed holds
// shbItems entries of 200 B, 1 KB or 4 KB (as DynamoDB sizes the unsharded
// index's), with random IDs, read newest first in shbPages pages of 20:
// page 1, then pages 2 to 5 from the cursor, on a Table that has read them
// before; and page 1 on one that has not (cold-...). Every sharded page is
// checked to hold the unsharded page's items.
//
// "rtt=0" talks to the local server directly (about no latency, two shared
// cores); "rtt=3ms" adds a fixed 3 ms before every request, a model of a
// round trip to DynamoDB, where a page's wall time is about its number of
// rounds of concurrent requests times the round trip. The local server
// serves a round's requests on the same two cores, one after another, where
// DynamoDB serves each shard's partition on its own: the wall times carry
// that cost, which rtt=0 shows alone.
//
// Metrics, per page: req-p1 and RCU-p1 (page 1), req-pN and RCU-pN (mean of
// pages 2-5), and the unsharded page's (base-...); RCU-x and req-x, the
// sharded pages' totals over the unsharded ones'; ms/page for the three
// reads and the ratios wall-x-base (sharded/unsharded) and wall-x-seq
// (concurrent/sequential); rounds/page, the sharded page's rounds of
// concurrent requests; cpu-ms/page, the client's CPU time per page (the
// server runs in another process). whole-RCU-x and whole-rounds/page are
// the same pages read by a merge that asks every shard for the whole page
// (what a merge that knows nothing of the spread must ask): the baseline
// of the sizing (the first request sized from the page and the shards'
// observed yields, refills of the drained shards alone, each request
// filling the 4 KB blocks it pays for).
//
// The targets, at S=16: RCU-x <= 2 and wall-x-base <= 2. A Query
// costs the size it reads rounded up to 4 KB, at least one 4 KB block, half
// a read unit each when eventually consistent (see shbProbeUnits), and a
// page of S shards sends at least S requests: a page costs at least S/2
// read units whatever the item size, 8 at S=16, against 1.0 (200 B) or 3.0
// (1 KB) for the unsharded page of 21 items (the page and the item that
// tells whether another page follows).
func BenchmarkShardedPage(b *testing.B) {
	ctx := context.Background()
	c := ddbtest.Client(b)
	shbProbeUnits(b)
	for _, kind := range []string{"gsi", "table"} {
		tables := shbSetup(b, c, kind)
		for _, rtt := range []time.Duration{0, 3 * time.Millisecond} {
			lat := &shbLatency{rtt: rtt, base: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
			db := dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: lat} })
			for _, size := range shbSizes {
				feed := fmt.Sprintf("f%d", size)
				for _, S := range []int{4, 16, 64} {
					name := fmt.Sprintf("%s/rtt=%v/B=%d/S=%d", kind, rtt, size, S)
					b.Run(name, func(b *testing.B) {
						r := tables.readers(b, db)
						var base, conc, seq, cold, whole, warmup shbRun
						sharded := fmt.Sprintf("feed%d", S)
						// The Tables learn the feed's entry size and live
						// ratio: every measured page but cold's is warm.
						for _, fanout := range []int{1, 16, shbWhole} {
							warmup.read(b, ctx, r.page(sharded, feed, fanout, false), 1)
						}
						warmup.read(b, ctx, r.page("feed", feed, 16, false), 1)
						for b.Loop() {
							want := base.read(b, ctx, r.page("feed", feed, 16, false), shbPages)
							for _, run := range []struct {
								r      *shbRun
								fanout int
								cold   bool
								pages  int
							}{{&conc, 16, false, shbPages}, {&seq, 1, false, shbPages}, {&cold, 16, true, 1}, {&whole, shbWhole, false, shbPages}} {
								got := run.r.read(b, ctx, r.page(sharded, feed, run.fanout, run.cold), run.pages)
								if !slices.EqualFunc(want[:len(got)], got, slices.Equal) {
									b.Fatalf("fanout %d, cold %t: the sharded pages differ from the unsharded ones:\n%v\n%v", run.fanout, run.cold, got, want)
								}
							}
						}
						conc.report(b, "")
						base.report(b, "base-")
						b.ReportMetric(float64(cold.reqs)/float64(cold.pages), "cold-req-p1")
						b.ReportMetric(cold.units/float64(cold.pages), "cold-RCU-p1")
						b.ReportMetric(conc.units/base.units, "RCU-x")
						b.ReportMetric(float64(conc.reqs)/float64(base.reqs), "req-x")
						b.ReportMetric(shbMS(seq.wall, seq.pages), "ms/page-seq")
						b.ReportMetric(conc.wall.Seconds()/base.wall.Seconds(), "wall-x-base")
						b.ReportMetric(conc.wall.Seconds()/seq.wall.Seconds(), "wall-x-seq")
						b.ReportMetric(float64(conc.rounds)/float64(conc.pages), "rounds/page")
						b.ReportMetric(whole.units/base.units, "whole-RCU-x")
						b.ReportMetric(float64(whole.rounds)/float64(whole.pages), "whole-rounds/page")
					})
				}
			}
		}
	}
}

// shbItems is how many entries each feed holds: enough that each of 64
// shards holds more than the five pages read from it.
const (
	shbItems = 1200
	shbPages = 5
	shbLimit = 20
)

// shbSizes are the entry sizes of the three feeds, as DynamoDB counts them.
var shbSizes = []int{200, 1000, 4000}

// shbGSIItem writes a feed into an unsharded GSI and three sharded twins
// that project the same attributes; the twins' logical names are their own,
// so that one Table reads them all.
type shbGSIItem struct {
	_    TableSpec `ddbindex:"shb_feed"`
	_    IndexSpec `ddbindex:"feed,type=gsi,name=feed-1,pk=FP,sk=FS,project=body"`
	_    IndexSpec `ddbindex:"feed4,type=gsi,name=feed-4,pk=P4,sk=S4,shards=4,project=body"`
	_    IndexSpec `ddbindex:"feed16,type=gsi,name=feed-16,pk=P16,sk=S16,shards=16,project=body"`
	_    IndexSpec `ddbindex:"feed64,type=gsi,name=feed-64,pk=P64,sk=S64,shards=64,project=body"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"feed.pk;feed4.pk;feed16.pk;feed64.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"feed.sk;feed4.sk;feed16.sk;feed64.sk"`
	Body string    `dynamodbav:"body"`
}

// shbTableItem is the same feed with its four indexes as index tables.
type shbTableItem struct {
	_    TableSpec `ddbindex:"shb_feed"`
	_    IndexSpec `ddbindex:"feed,type=table"`
	_    IndexSpec `ddbindex:"feed4,type=table,shards=4"`
	_    IndexSpec `ddbindex:"feed16,type=table,shards=16"`
	_    IndexSpec `ddbindex:"feed64,type=table,shards=64"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"feed.pk;feed4.pk;feed16.pk;feed64.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"feed.sk;feed4.sk;feed16.sk;feed64.sk"`
	Body string    `dynamodbav:"body"`
}

// shbWhole stands for the Tables whose merges ask every shard for the whole
// page (ShardFanout 16, shardSizing.whole): the baseline of the sizing.
const shbWhole = -16

// shbTables reads one kind's tables with Tables built on any client.
type shbTables struct {
	names func(*Options)
	kind  string
}

// shbReaders holds the Tables of one client, by ShardFanout. Their merges
// count their rounds in rounds.
type shbReaders struct {
	gsi    map[int]*Table[shbGSIItem]
	table  map[int]*Table[shbTableItem]
	rounds *atomic.Int64
}

func (ts shbTables) readers(b *testing.B, db *dynamodb.Client) shbReaders {
	r := shbReaders{gsi: map[int]*Table[shbGSIItem]{}, table: map[int]*Table[shbTableItem]{}, rounds: &atomic.Int64{}}
	sizing := defaultShardSizing
	sizing.onRound = func(int) { r.rounds.Add(1) }
	whole := sizing
	whole.whole, whole.noFill = true, true
	for _, fanout := range []int{1, 16, shbWhole} {
		opt := func(o *Options) { o.ShardFanout = max(fanout, 16) }
		if fanout == 1 {
			opt = func(o *Options) { o.ShardFanout = 1 }
		}
		sz := &sizing
		if fanout == shbWhole {
			sz = &whole
		}
		if ts.kind == "gsi" {
			t, err := New[shbGSIItem](db, ts.names, opt)
			require.NoError(b, err)
			t.shardSizing = sz
			r.gsi[fanout] = t
		} else {
			t, err := New[shbTableItem](db, ts.names, opt)
			require.NoError(b, err)
			t.shardSizing = sz
			r.table[fanout] = t
		}
	}
	return r
}

// shbPageFn reads the page after a cursor: its items' IDs, its cursor, its
// Stats and its rounds.
type shbPageFn func(ctx context.Context, cursor string) ([]string, string, Stats, int, error)

func (r shbReaders) page(index, feed string, fanout int, cold bool) shbPageFn {
	return func(ctx context.Context, cursor string) ([]string, string, Stats, int, error) {
		r.rounds.Store(0)
		var ids []string
		if t := r.gsi[fanout]; t != nil {
			if cold {
				t = coldMemo(t)
			}
			p, err := t.Query(index, feed).Desc().Limit(shbLimit).After(cursor).Page(ctx)
			if err != nil {
				return nil, "", Stats{}, 0, err
			}
			for _, it := range p.Items {
				ids = append(ids, it.ID)
			}
			return ids, p.Cursor, p.Stats, int(r.rounds.Load()), nil
		}
		t := r.table[fanout]
		if cold {
			t = coldMemo(t)
		}
		p, err := t.Query(index, feed).Desc().Limit(shbLimit).After(cursor).Page(ctx)
		if err != nil {
			return nil, "", Stats{}, 0, err
		}
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		return ids, p.Cursor, p.Stats, int(r.rounds.Load()), nil
	}
}

// shbRun adds up what the pages of one read cost over the iterations.
type shbRun struct {
	pages, pages1 int
	reqs, reqs1   int
	units, units1 float64
	wall, cpu     time.Duration
	rounds        int
}

// read reads up to pages pages from the start and returns their IDs.
func (r *shbRun) read(b *testing.B, ctx context.Context, page shbPageFn, pages int) [][]string {
	var out [][]string
	cursor := ""
	for i := range pages {
		t0, cpu0 := time.Now(), shbCPU()
		ids, next, st, rounds, err := page(ctx, cursor)
		r.wall += time.Since(t0)
		r.cpu += shbCPU() - cpu0
		r.rounds += rounds
		if err != nil {
			b.Fatal(err)
		}
		r.pages++
		r.reqs += st.Requests
		r.units += st.ReadUnits
		if i == 0 {
			r.pages1++
			r.reqs1 += st.Requests
			r.units1 += st.ReadUnits
		}
		out = append(out, ids)
		if cursor = next; cursor == "" {
			break
		}
	}
	return out
}

// report reports the run's costs per page, with prefix before their names.
func (r *shbRun) report(b *testing.B, prefix string) {
	n := max(1, r.pages-r.pages1)
	b.ReportMetric(float64(r.reqs1)/float64(r.pages1), prefix+"req-p1")
	b.ReportMetric(r.units1/float64(r.pages1), prefix+"RCU-p1")
	b.ReportMetric(float64(r.reqs-r.reqs1)/float64(n), prefix+"req-pN")
	b.ReportMetric((r.units-r.units1)/float64(n), prefix+"RCU-pN")
	b.ReportMetric(shbMS(r.wall, r.pages), prefix+"ms/page")
	if benchProcessCPU != nil {
		b.ReportMetric(shbMS(r.cpu, r.pages), prefix+"cpu-ms/page")
	}
}

// shbCPU is the CPU time this process (the client: the server is another
// process) has used, or 0 where the platform does not tell.
func shbCPU() time.Duration {
	if benchProcessCPU == nil {
		return 0
	}
	return benchProcessCPU()
}

func shbMS(d time.Duration, pages int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(pages)
}

// shbLatency adds a fixed delay before every request (as stream's
// sbLatency).
type shbLatency struct {
	rtt  time.Duration
	base http.RoundTripper
}

func (l *shbLatency) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.rtt > 0 {
		t := time.NewTimer(l.rtt)
		select {
		case <-r.Context().Done():
			t.Stop()
			return nil, r.Context().Err()
		case <-t.C:
		}
	}
	return l.base.RoundTrip(r)
}

// shbSetup creates one kind's tables and writes the feeds: shbItems entries
// per size in shbSizes, feed "f<size>", item i at time i+1.
func shbSetup(b *testing.B, c *dynamodb.Client, kind string) shbTables {
	ctx := context.Background()
	prefix := ddbtest.Name(b, kind)
	ts := shbTables{kind: kind, names: func(o *Options) { o.TableName = func(s string) string { return prefix + "-" + s } }}
	create := func(ins []*dynamodb.CreateTableInput) {
		for _, in := range ins {
			ddbtest.DeleteOnCleanup(b, c, aws.ToString(in.TableName))
			ddbtest.CreateTable(b, c, in)
		}
	}
	var writes map[string][]map[string]types.AttributeValue
	if kind == "gsi" {
		t, err := New[shbGSIItem](c, ts.names)
		require.NoError(b, err)
		create(tableInputs(t, false))
		writes = shbItemsOf(b, t, func(id, feed string, at int64, body string) shbGSIItem {
			return shbGSIItem{ID: id, Feed: feed, At: at, Body: body}
		}, func(tb *Table[shbGSIItem], it shbGSIItem) map[string][]map[string]types.AttributeValue {
			av, err := tb.Marshal(it)
			require.NoError(b, err)
			return map[string][]map[string]types.AttributeValue{tb.TableName(): {av}}
		})
	} else {
		t, err := New[shbTableItem](c, ts.names)
		require.NoError(b, err)
		create(tableInputs(t, false))
		writes = shbItemsOf(b, t, func(id, feed string, at int64, body string) shbTableItem {
			return shbTableItem{ID: id, Feed: feed, At: at, Body: body}
		}, func(tb *Table[shbTableItem], it shbTableItem) map[string][]map[string]types.AttributeValue {
			out := map[string][]map[string]types.AttributeValue{}
			for _, index := range []string{"feed", "feed4", "feed16", "feed64"} {
				d, err := tb.index(index)
				require.NoError(b, err)
				e, err := tb.entryOf(d, it, "1")
				require.NoError(b, err)
				out[tb.tableOf(d)] = append(out[tb.tableOf(d)], e)
			}
			return out
		})
	}
	for table, items := range writes {
		for chunk := range slices.Chunk(items, 25) {
			var reqs []types.WriteRequest
			for _, it := range chunk {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			}
			pending := map[string][]types.WriteRequest{table: reqs}
			for len(pending) > 0 {
				out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
				require.NoError(b, err)
				pending = out.UnprocessedItems
			}
		}
	}
	return ts
}

// shbItemsOf builds every feed's items with mk and returns what writing them
// puts, by table. IDs are random (from a fixed seed), so the items' shards
// are independent of their order, as for random IDs; sequential IDs spread
// consecutive items over the shards more evenly than chance does, and make
// merges cheaper. Bodies are padded so that the entries the unsharded index
// serves have the feed's size; the sharded twins' entries are a few bytes
// larger (the shard in the partition key, and for a GSI the base key at the
// end of the sort key).
func shbItemsOf[T any](b *testing.B, tb *Table[T], mk func(id, feed string, at int64, body string) T, puts func(*Table[T], T) map[string][]map[string]types.AttributeValue) map[string][]map[string]types.AttributeValue {
	out := map[string][]map[string]types.AttributeValue{}
	rng := rand.New(rand.NewPCG(10, 10))
	d, err := tb.index("feed")
	require.NoError(b, err)
	for _, size := range shbSizes {
		feed := fmt.Sprintf("f%d", size)
		entrySize := func(it T) int {
			puts := puts(tb, it)
			if d.ownTable {
				return av.ItemSize(puts[tb.tableOf(d)][0])
			}
			return av.ItemSize(shbProjected(d, puts[tb.TableName()][0]))
		}
		id := func() string { return fmt.Sprintf("%s-%016x", feed, rng.Uint64()) }
		pad := size - entrySize(mk(id(), feed, shbItems, ""))
		require.Positive(b, pad, "entries of %d bytes", size)
		body := strings.Repeat("x", pad)
		require.Equal(b, size, entrySize(mk(id(), feed, shbItems, body)))
		for i := range shbItems {
			for table, items := range puts(tb, mk(id(), feed, int64(i+1), body)) {
				out[table] = append(out[table], items...)
			}
		}
	}
	return out
}

// shbProjected is the entry a GSI holds for a base item: its key
// attributes, the base key and what it projects.
func shbProjected(d *layout, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for k, v := range item {
		if k == d.pk.attr || k == d.sk.attr || k == "id" || slices.Contains(d.project, k) {
			out[k] = v
		}
	}
	return out
}

// shbProbeUnits logs the read units the server reports for a Query that
// reads one small item and for one that reads nothing. DynamoDB charges a
// Query the total size of the items it reads rounded up to the next 4 KB,
// half a unit per 4 KB when eventually consistent
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html,
// "Query"), and at least one such block when it reads nothing.
func shbProbeUnits(b *testing.B) {
	ctx := context.Background()
	t, _ := newTestTable[benchGSIItem](b)
	putBase(b, t, benchNewGSIItem("general", 1))
	for _, ch := range []string{"general", "empty"} {
		p, err := t.Query("feed", ch).Page(ctx)
		require.NoError(b, err)
		b.Logf("%s: a Query reading %d item(s) of %d B reports %g read units",
			ddbtest.Server(), p.Stats.Read, 240*p.Stats.Read, p.Stats.ReadUnits)
	}
}

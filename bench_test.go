package ddbindex

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file holds the read-path benchmarks and the property test
// that guards the page-fill policy they tune:
//
//   - BenchmarkRawSDKQuery and BenchmarkQueryOverhead: the CPU cost of one
//     Page call against the same call made with the bare SDK, on a canned
//     response (an in-process HTTP server), so only client-side work counts.
//   - BenchmarkPageFill: requests and read units of five pages through
//     tombstones, for the library, the two loops it replaces, and an
//     oracle's floor, against the local server.
//   - TestPageFillMatchesGroundTruth: whatever the sizing policy does, pages
//     never skip or repeat an item.

// benchGSIItem is the overhead benchmarks' model: a feed read through a GSI
// (no tombstone filter), so the library and the raw SDK send the same
// request.
type benchGSIItem struct {
	_       TableSpec `ddbindex:"bench_feed"`
	_       IndexSpec `ddbindex:"feed,type=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Channel string    `dynamodbav:"channel" ddbindex:"feed.pk"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"feed.sk"`
	Title   string    `dynamodbav:"title"`
	Author  string    `dynamodbav:"author"`
	Body    string    `dynamodbav:"body"`
	Votes   int       `dynamodbav:"votes"`
	Open    bool      `dynamodbav:"open"`
	Tags    []string  `dynamodbav:"tags"`
}

// benchFeedItem is the same feed with its index declared as an index table:
// the page-fill benchmark and test read it through tombstones.
type benchFeedItem struct {
	_       TableSpec `ddbindex:"bench_feed"`
	_       IndexSpec `ddbindex:"feed,type=table"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Channel string    `dynamodbav:"channel" ddbindex:"feed.pk"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"feed.sk"`
	Title   string    `dynamodbav:"title"`
	Author  string    `dynamodbav:"author"`
	Body    string    `dynamodbav:"body"`
	Votes   int       `dynamodbav:"votes"`
	Open    bool      `dynamodbav:"open"`
	Tags    []string  `dynamodbav:"tags"`
}

// benchBody pads items to about 240 bytes as DynamoDB sizes them (attribute
// names plus values): a base (GSI) item with benchBody, an index-table entry,
// which adds its sort key and version attributes, with benchEntryBody.
var (
	benchBody      = strings.Repeat("lorem ipsum dolor sit amet ", 4)[:100]
	benchEntryBody = benchBody[:75]
)

func benchFields(channel string, seq int64) (id, title, author string, votes int, open bool, tags []string) {
	id = fmt.Sprintf("item-%05d", seq)
	return id, fmt.Sprintf("Ticket %05d: printer on floor 3 jams again", seq),
		fmt.Sprintf("user_%04d", seq%997), int(seq % 10), seq%3 != 0,
		[]string{"ops", "floor-" + strconv.Itoa(int(seq%7)), channel}
}

func benchNewFeedItem(channel string, seq int64) benchFeedItem {
	id, title, author, votes, open, tags := benchFields(channel, seq)
	return benchFeedItem{ID: id, Channel: channel, Seq: seq, Title: title, Author: author, Body: benchEntryBody, Votes: votes, Open: open, Tags: tags}
}

func benchNewGSIItem(channel string, seq int64) benchGSIItem {
	id, title, author, votes, open, tags := benchFields(channel, seq)
	return benchGSIItem{ID: id, Channel: channel, Seq: seq, Title: title, Author: author, Body: benchBody, Votes: votes, Open: open, Tags: tags}
}

// benchItemSize is DynamoDB's size of an item, as the page fill counts it.
func benchItemSize(item map[string]types.AttributeValue) int { return av.ItemSize(item) }

// ---- Overhead: canned response ------------------------------------------------

const benchCannedItems = 25

// benchJSONValue renders an attribute value in DynamoDB's JSON wire form.
func benchJSONValue(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = benchJSONValue(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		m := make(map[string]any, len(v.Value))
		for k, e := range v.Value {
			m[k] = benchJSONValue(e)
		}
		return map[string]any{"M": m}
	}
	panic(fmt.Sprintf("benchJSONValue: %T", v))
}

// benchCannedServer serves one canned Query response, as DynamoDB sends it:
// 25 items of about 240 bytes, Count, ScannedCount, ConsumedCapacity and no
// LastEvaluatedKey, with the CRC32 header the SDK checks. last returns the
// body of the last request it answered.
func benchCannedServer(b testing.TB) (client *dynamodb.Client, last func() []byte) {
	b.Helper()
	tb, err := New[benchGSIItem](nil)
	require.NoError(b, err)
	items := make([]any, benchCannedItems)
	size := 0
	for i := range items {
		av, err := tb.Marshal(benchNewGSIItem("general", int64(3000-i)))
		require.NoError(b, err)
		size += benchItemSize(av)
		m := make(map[string]any, len(av))
		for k, v := range av {
			m[k] = benchJSONValue(v)
		}
		items[i] = m
	}
	require.InDelta(b, 240, size/benchCannedItems, 20, "item size")
	body, err := json.Marshal(map[string]any{
		"Count":            benchCannedItems,
		"ScannedCount":     benchCannedItems,
		"Items":            items,
		"ConsumedCapacity": map[string]any{"TableName": tb.TableName(), "CapacityUnits": 1.0},
	})
	require.NoError(b, err)
	sum := strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
	length := strconv.Itoa(len(body))
	var mu sync.Mutex
	var lastBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := io.ReadAll(r.Body)
		mu.Lock()
		lastBody = req
		mu.Unlock()
		if err != nil || r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.Query" {
			http.Error(w, "not a Query", http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/x-amz-json-1.0"}
		h["Content-Length"] = []string{length}
		h["X-Amz-Crc32"] = []string{sum}
		h["X-Amzn-Requestid"] = []string{"BENCH0000000000000000000000000000000000000000000000"}
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	client = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("bench", "bench", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   benchHTTPClient{awshttp.NewBuildableClient()},
	})
	return client, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lastBody)
	}
}

// benchHTTPClient sends requests with a body that hides its WriteTo
// method. Without it, about one call in a thousand on a loaded machine
// fails with "use of closed network connection" (aws/aws-sdk-go-v2#2737):
//
//   - smithy-go's ClientHandler closes the request body as soon as Do
//     returns, that is, once the response headers are in;
//   - net/http's writeLoop, after writing Content-Length bytes, copies the
//     body once more into io.Discard to catch extra bytes, and io.Copy
//     prefers the body's WriteTo;
//   - smithy-go's body (safeWriteToReadCloser) answers WriteTo after its
//     Close with io.EOF, which io.Copy returns as an error (a WriterTo
//     must return nil at the end of its data; Read's io.EOF is the end).
//
// When the close wins that race, the writeLoop takes the write as failed
// and closes the connection under the response body the SDK is still
// reading. Read after Close returns io.EOF too, which io.Copy takes as the
// end, so with WriteTo hidden the late copy ends cleanly. Production
// clients retry net.ErrClosed; the benchmarks run without retries, and
// both paths go through this client.
type benchHTTPClient struct{ c *awshttp.BuildableClient }

// Do implements the SDK's HTTPClient.
func (h benchHTTPClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req = req.WithContext(req.Context()) // a shallow copy: the SDK closes its own body
		req.Body = struct{ io.ReadCloser }{req.Body}
	}
	return h.c.Do(req)
}

// benchProcessCPU returns the CPU time the process has used, where the
// platform tells (bench_cpu_unix_test.go); nil elsewhere.
var benchProcessCPU func() time.Duration

// benchCPUStart returns a function that reports the process CPU time per
// operation since the call as the metric cpu-ns/op. The canned server runs
// in the process, so this is the whole round trip's CPU cost.
func benchCPUStart(b *testing.B) func() {
	if benchProcessCPU == nil {
		return func() {}
	}
	start := benchProcessCPU()
	return func() {
		b.ReportMetric(float64(benchProcessCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

// benchRawQuery is the baseline: the Query a careful hand-written caller
// sends for the newest 25 items of a channel, and the unmarshalling of its
// items into the model.
func benchRawQuery(ctx context.Context, client *dynamodb.Client) ([]benchGSIItem, error) {
	out, err := client.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String("bench_feed"),
		IndexName:                aws.String("feed"),
		KeyConditionExpression:   aws.String("#0 = :0 AND #1 > :1"),
		ExpressionAttributeNames: map[string]string{"#0": "channel", "#1": "seq"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":0": &types.AttributeValueMemberS{Value: "general"},
			":1": &types.AttributeValueMemberN{Value: "0"},
		},
		ScanIndexForward: aws.Bool(false),
		// The request a Table's first call sends for a page of 25: the
		// items' size is not known yet, so it reads no item past the page.
		Limit:                  aws.Int32(benchCannedItems),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, err
	}
	var items []benchGSIItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		return nil, err
	}
	return items, nil
}

// benchLibraryQuery is the same read through ddbindex: plan, key condition,
// page fill, cost report and unmarshalling.
func benchLibraryQuery(ctx context.Context, t *Table[benchGSIItem]) (*Page[benchGSIItem], error) {
	return t.Query("feed", "general").Where(Gt(int64(0))).Desc().Limit(benchCannedItems).Page(ctx)
}

// TestBenchOverheadSameRequest checks that the overhead benchmarks compare
// like with like: both paths send the same Query (up to the key condition's
// parentheses) and get the same 25 items.
func TestBenchOverheadSameRequest(t *testing.T) {
	client, last := benchCannedServer(t)
	ctx := context.Background()
	raw, err := benchRawQuery(ctx, client)
	require.NoError(t, err)
	rawReq := last()
	tb, err := New[benchGSIItem](client)
	require.NoError(t, err)
	page, err := benchLibraryQuery(ctx, tb)
	require.NoError(t, err)
	libReq := last()
	require.Equal(t, raw, page.Items)
	require.Empty(t, page.Cursor)
	require.Equal(t, Stats{Requests: 1, Read: benchCannedItems, Returned: benchCannedItems, ReadUnits: 1}, page.Stats)

	decode := func(body []byte) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		kc, _ := m["KeyConditionExpression"].(string)
		m["KeyConditionExpression"] = strings.NewReplacer("(", "", ")", "").Replace(kc)
		return m
	}
	require.Equal(t, decode(rawReq), decode(libReq))
}

// BenchmarkRawSDKQuery measures benchRawQuery.
func BenchmarkRawSDKQuery(b *testing.B) {
	client, _ := benchCannedServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	defer benchCPUStart(b)()
	for b.Loop() {
		items, err := benchRawQuery(ctx, client)
		if err != nil {
			b.Fatal(err)
		}
		if len(items) != benchCannedItems {
			b.Fatalf("%d items", len(items))
		}
	}
}

// BenchmarkQueryOverhead measures benchLibraryQuery: the target is at most
// 1.08 times BenchmarkRawSDKQuery's time (BenchmarkQueryOverheadRatio
// measures the ratio in one run).
func BenchmarkQueryOverhead(b *testing.B) {
	client, _ := benchCannedServer(b)
	t, err := New[benchGSIItem](client)
	require.NoError(b, err)
	benchLibraryLoop(b, t)
}

// BenchmarkQueryOverheadTelemetry measures benchLibraryQuery with the
// OpenTelemetry SDK's providers recording every metric and sampling every
// span (exporting nothing): the cost of the instrumentation when it is on.
func BenchmarkQueryOverheadTelemetry(b *testing.B) {
	client, _ := benchCannedServer(b)
	mp, tp := benchOTel(b)
	t, err := New[benchGSIItem](client, func(o *Options) { o.MeterProvider, o.TracerProvider = mp, tp })
	require.NoError(b, err)
	benchLibraryLoop(b, t)
}

// benchLibraryLoop runs benchLibraryQuery on t as the benchmark's loop.
func benchLibraryLoop(b *testing.B, t *Table[benchGSIItem]) {
	ctx := context.Background()
	b.ReportAllocs()
	defer benchCPUStart(b)()
	for b.Loop() {
		page, err := benchLibraryQuery(ctx, t)
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Items) != benchCannedItems || page.Cursor != "" {
			b.Fatalf("%d items, cursor %q", len(page.Items), page.Cursor)
		}
	}
}

// benchOTel returns the OpenTelemetry SDK's providers, recording every
// metric and sampling every span, exporting nothing.
func benchOTel(b *testing.B) (*sdkmetric.MeterProvider, *sdktrace.TracerProvider) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	return mp, tp
}

// BenchmarkQueryOverheadRatio measures, in one run, the bare SDK's query
// (benchRawQuery) and the library's (benchLibraryQuery) with no telemetry
// provider set and with the OpenTelemetry SDK's providers recording, one of
// each per iteration in turn, so that the machine's load weighs on all
// three alike. It reports each library form's time over the raw query's:
// x-raw (target: at most 1.08) and x-raw-otel (the instrumentation on).
func BenchmarkQueryOverheadRatio(b *testing.B) {
	client, _ := benchCannedServer(b)
	plain, err := New[benchGSIItem](client)
	require.NoError(b, err)
	mp, tp := benchOTel(b)
	traced, err := New[benchGSIItem](client, func(o *Options) { o.MeterProvider, o.TracerProvider = mp, tp })
	require.NoError(b, err)
	ctx := context.Background()
	var raw, lib, withOTel time.Duration
	lap := func(d *time.Duration, start time.Time) time.Time {
		now := time.Now()
		*d += now.Sub(start)
		return now
	}
	for b.Loop() {
		t0 := time.Now()
		items, err := benchRawQuery(ctx, client)
		if err != nil || len(items) != benchCannedItems {
			b.Fatalf("raw: %d items, %v", len(items), err)
		}
		t0 = lap(&raw, t0)
		for _, tc := range []struct {
			t *Table[benchGSIItem]
			d *time.Duration
		}{{plain, &lib}, {traced, &withOTel}} {
			page, err := benchLibraryQuery(ctx, tc.t)
			if err != nil || len(page.Items) != benchCannedItems || page.Cursor != "" {
				b.Fatalf("library: %v", err)
			}
			t0 = lap(tc.d, t0)
		}
	}
	b.ReportMetric(lib.Seconds()/raw.Seconds(), "x-raw")
	b.ReportMetric(withOTel.Seconds()/raw.Seconds(), "x-raw-otel")
	b.ReportMetric(0, "ns/op") // the iteration runs three queries: the ratios are the result
}

// ---- Page fill: against the local server --------------------------------------

const (
	benchFillItems    = 3000
	benchFillPages    = 5
	benchFillPageSize = 20
	benchFillSeed     = 20260101
)

// benchTombstones returns which of n items are tombstones: each one with
// probability density, from a fixed seed.
func benchTombstones(n int, density float64, seed uint64) []bool {
	r := rand.New(rand.NewPCG(seed, uint64(density*1e6)))
	dead := make([]bool, n)
	for i := range dead {
		dead[i] = r.Float64() < density
	}
	return dead
}

// benchLoad writes one partition of the feed index table straight into it
// with BatchWriteItem: item i has Seq i+1, and is a tombstone when dead[i].
func benchLoad(tb testing.TB, t *Table[benchFeedItem], channel string, dead []bool) {
	tb.Helper()
	ctx := context.Background()
	d, err := t.index("feed")
	require.NoError(tb, err)
	name := t.tableOf(d)
	var batch []types.WriteRequest
	size := 0
	flush := func() {
		reqs := map[string][]types.WriteRequest{name: batch}
		for len(reqs) > 0 {
			out, err := t.client.c.(*dynamodb.Client).BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: reqs})
			require.NoError(tb, err)
			reqs = out.UnprocessedItems
		}
		batch = batch[:0]
	}
	for i, isDead := range dead {
		item := benchNewFeedItem(channel, int64(i+1))
		e, err := t.entryOf(d, item, "1")
		require.NoError(tb, err)
		require.NotNil(tb, e)
		if isDead {
			e[t.opts.DeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
		}
		size += benchItemSize(e)
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: e}})
		if len(batch) == 25 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	if len(dead) > 0 {
		require.InDelta(tb, 240, size/len(dead), 20, "entry size")
	}
}

// benchCost is what one page cost, and how many items it returned (where
// the strategy counts them).
type benchCost struct {
	requests int
	units    float64
	items    int
}

// benchPages is what a run of pages cost, page by page.
type benchPages []benchCost

// sum adds up pages [from, to).
func (ps benchPages) sum(from, to int) benchCost {
	var c benchCost
	for _, p := range ps[min(from, len(ps)):min(to, len(ps))] {
		c.requests += p.requests
		c.units += p.units
		c.items += p.items
	}
	return c
}

// benchRaw sends the page-fill baselines' requests: the library's own
// request for the partition (table, key condition, tombstone filter,
// descending), with the given Limit and start key.
type benchRaw struct {
	client *dynamodb.Client
	input  dynamodb.QueryInput
	cost   benchCost
}

func (r *benchRaw) query(ctx context.Context, limit int, esk map[string]types.AttributeValue) (*dynamodb.QueryOutput, error) {
	in := r.input
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	in.ExclusiveStartKey = esk
	out, err := r.client.Query(ctx, &in)
	if err != nil {
		return nil, err
	}
	r.cost.requests++
	if out.ConsumedCapacity != nil {
		r.cost.units += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	return out, nil
}

// page ends a page: it appends what the page cost and starts the next.
func (r *benchRaw) page(ps benchPages) benchPages {
	ps = append(ps, r.cost)
	r.cost = benchCost{}
	return ps
}

// benchStrategy reads benchFillPages pages of benchFillPageSize live items
// from the start of the partition, descending, stopping early when the
// partition ends, and returns what each page cost. dead is the partition's
// tombstone pattern, which only benchFloor reads.
type benchStrategy func(ctx context.Context, t *Table[benchFeedItem], channel string, dead []bool) (benchPages, error)

// benchLibrary is ddbindex's Page, following its cursor.
func benchLibrary(ctx context.Context, t *Table[benchFeedItem], channel string, _ []bool) (benchPages, error) {
	return bkLibrary(ctx, t, channel, true, SortCondition{})
}

// benchLibraryCold is benchLibrary on a Table that has not read the
// partition before: the page fill's memory of live ratios is empty.
func benchLibraryCold(ctx context.Context, t *Table[benchFeedItem], channel string, dead []bool) (benchPages, error) {
	return benchLibrary(ctx, coldMemo(t), channel, dead)
}

func benchRawFor(t *Table[benchFeedItem], channel string) (*benchRaw, error) {
	return bkRaw(t, channel, true, SortCondition{})
}

// benchNaive is the source write-up's loop: ask for the items still missing
// (Limit = remaining) until the page is full or there is no
// LastEvaluatedKey; the next page starts from the LastEvaluatedKey.
func benchNaive(ctx context.Context, t *Table[benchFeedItem], channel string, _ []bool) (benchPages, error) {
	return bkNaive(ctx, t, channel, true, SortCondition{})
}

// benchUnlimited is what guregu/dynamo does with a filter: no Limit on the
// request, keep the first page-size live items, and start the next page from
// the last one kept.
func benchUnlimited(ctx context.Context, t *Table[benchFeedItem], channel string, _ []bool) (benchPages, error) {
	var ps benchPages
	raw, err := benchRawFor(t, channel)
	if err != nil {
		return ps, err
	}
	d, _ := t.index("feed")
	var esk map[string]types.AttributeValue
	for range benchFillPages {
		var kept []map[string]types.AttributeValue
		for {
			out, err := raw.query(ctx, 0, esk)
			if err != nil {
				return ps, err
			}
			need := benchFillPageSize - len(kept)
			if len(out.Items) >= need {
				kept = append(kept, out.Items[:need]...)
				if len(out.Items) > need || len(out.LastEvaluatedKey) > 0 {
					last := kept[len(kept)-1]
					esk = map[string]types.AttributeValue{d.pk.attr: last[d.pk.attr], d.sk.attr: last[d.sk.attr]}
				} else {
					esk = nil
				}
				break
			}
			kept = append(kept, out.Items...)
			if esk = out.LastEvaluatedKey; len(esk) == 0 {
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

// benchFloor is a lower bound no strategy can beat, for reference: knowing
// where the tombstones are, it reads each page in one request that ends at
// the page's last live item.
func benchFloor(ctx context.Context, t *Table[benchFeedItem], channel string, dead []bool) (benchPages, error) {
	reading := slices.Clone(dead) // dead is in Seq order; the pages read the highest Seq first
	slices.Reverse(reading)
	return bkFloor(ctx, t, channel, true, SortCondition{}, reading)
}

// benchFillPatterns are BenchmarkPageFill's tombstone patterns, in reading
// order (the first entry is read first), from pagefill_model_test.go's list.
func benchFillPatterns() []pfmPattern {
	want := map[string]bool{
		"uniform 0": true, "uniform 0.5": true, "uniform 0.9": true, "uniform 0.99": true,
		"run 500 after page 1, bg 0": true, "run 500 after page 1, bg 0.5": true,
		"run 500 mid page 2, bg 0": true, "run 2000 at start, bg 0": true,
		"alternating 25 live/100 dead, bg 0": true, "all dead but the last": true,
	}
	var out []pfmPattern
	for _, p := range pfmPatterns(benchFillItems, []int{500, 2000}) {
		if want[p.name] {
			out = append(out, p)
		}
	}
	return out
}

// BenchmarkPageFill reports, for each tombstone pattern and strategy, the
// requests and read units five consecutive descending pages of 20 live items
// cost (fewer when the partition ends first): in all, for page 1, and for
// pages 2-5. The library's sub-benchmarks also report their ratios to the
// naive loop and to the floor measured in the same run. The data is one
// partition of 3,000 entries of about 240 bytes per pattern; "library" is a
// Table that has served the partition before (b.Loop runs it many times),
// "library-cold" one that has not.
func BenchmarkPageFill(b *testing.B) {
	t, _ := newTestTable[benchFeedItem](b)
	ctx := context.Background()
	strategies := []struct {
		name string
		run  benchStrategy
	}{
		{"library", benchLibrary},
		{"library-cold", benchLibraryCold},
		{"naive", benchNaive},
		{"unlimited", benchUnlimited},
		{"floor", benchFloor},
	}
	for i, p := range benchFillPatterns() {
		channel := fmt.Sprintf("p%d", i)
		dead := slices.Clone(p.dead)
		slices.Reverse(dead) // benchLoad's order: item i has Seq i+1, read descending
		var load sync.Once
		for _, s := range strategies {
			b.Run(fmt.Sprintf("%s/%s", strings.ReplaceAll(p.name, " ", "_"), s.name), func(b *testing.B) {
				load.Do(func() { benchLoad(b, t, channel, dead) })
				var ps benchPages
				for b.Loop() {
					var err error
					if ps, err = s.run(ctx, t, channel, dead); err != nil {
						b.Fatal(err)
					}
				}
				all := ps.sum(0, len(ps))
				b.ReportMetric(float64(all.requests), "requests")
				b.ReportMetric(all.units, "RU")
				b.ReportMetric(float64(ps.sum(0, 1).requests), "p1-requests")
				b.ReportMetric(ps.sum(0, 1).units, "p1-RU")
				b.ReportMetric(float64(ps.sum(1, len(ps)).requests), "p2-5-requests")
				b.ReportMetric(ps.sum(1, len(ps)).units, "p2-5-RU")
				if strings.HasPrefix(s.name, "library") {
					naive, err := benchNaive(ctx, t, channel, dead)
					if err != nil {
						b.Fatal(err)
					}
					floor, err := benchFloor(ctx, t, channel, dead)
					if err != nil {
						b.Fatal(err)
					}
					n, f := naive.sum(0, len(naive)), floor.sum(0, len(floor))
					b.ReportMetric(all.units/n.units, "RU/naive")
					b.ReportMetric(all.units/f.units, "RU/floor")
					b.ReportMetric(float64(all.requests)/float64(n.requests), "requests/naive")
					b.ReportMetric(float64(all.requests)/float64(f.requests), "requests/floor")
				}
			})
		}
	}
}

// ---- Correctness of page fill ------------------------------------------------

// TestPageFillMatchesGroundTruth follows cursors to the end over partitions
// with random tombstone patterns and checks the pages against the list of
// live items: same items in the same order (nothing skipped or repeated),
// every page full but the last, the last cursor empty.
func TestPageFillMatchesGroundTruth(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[benchFeedItem](t)
	ctx := context.Background()
	const n = 400
	type pattern struct {
		name string
		dead []bool
	}
	var patterns []pattern
	for i, density := range []float64{0, 0.5, 0.9, 0.99, 1} {
		patterns = append(patterns, pattern{fmt.Sprintf("uniform%g", density), benchTombstones(n, density, uint64(i+1))})
	}
	// Long runs of tombstones at the start, in the middle and at the end, with
	// two live items between the first two runs and 31 between the last two.
	runs := make([]bool, n)
	for i := range runs {
		runs[i] = i < 150 || (i > 151 && i < 300) || i > 330
	}
	patterns = append(patterns, pattern{"runs", runs})
	for _, p := range patterns {
		benchLoad(t, tb, p.name, p.dead)
	}
	// Ground truth, ascending by Seq (item i has Seq i+1).
	truth := func(dead []bool, keep func(benchFeedItem) bool, desc bool) []string {
		var ids []string
		for i, isDead := range dead {
			it := benchNewFeedItem("", int64(i+1))
			if !isDead && keep(it) {
				ids = append(ids, it.ID)
			}
		}
		if desc {
			slices.Reverse(ids)
		}
		return ids
	}
	all := func(benchFeedItem) bool { return true }
	voted := func(it benchFeedItem) bool { return it.Votes >= 7 }
	votedFilter := expression.Name("votes").GreaterThanEqual(expression.Value(7))

	r := rand.New(rand.NewPCG(7, 11))
	for _, p := range patterns {
		for _, desc := range []bool{false, true} {
			for _, filtered := range []bool{false, true} {
				limits := []int{1, 20, 1 + r.IntN(25), 1 + r.IntN(25)}
				for _, limit := range limits {
					name := fmt.Sprintf("%s/desc=%v/filter=%v/limit=%d", p.name, desc, filtered, limit)
					t.Run(name, func(t *testing.T) {
						keep := all
						q := tb.Query("feed", p.name).Limit(limit)
						if desc {
							q = q.Desc()
						}
						if filtered {
							keep = voted
							q = q.Filter(votedFilter)
						}
						want := truth(p.dead, keep, desc)
						var got []string
						var sizes []int
						cursor, prev := "", ""
						for {
							page, err := q.After(cursor).Page(ctx)
							require.NoError(t, err)
							require.LessOrEqual(t, len(page.Items), limit)
							for _, it := range page.Items {
								require.Equal(t, p.name, it.Channel)
								got = append(got, it.ID)
							}
							sizes = append(sizes, len(page.Items))
							require.Equal(t, len(page.Items), page.Stats.Returned)
							if page.Cursor == "" {
								break
							}
							require.NotEqual(t, prev, page.Cursor, "cursor did not advance")
							prev, cursor = page.Cursor, page.Cursor
							require.Less(t, len(got), len(want)+1, "more items than live ones")
						}
						require.Equal(t, want, got, "pages concatenated")
						// Limit counts live items: every page is full but the
						// last, which may be short, or empty when the items
						// ended right at a page boundary.
						for i, s := range sizes[:len(sizes)-1] {
							require.Equal(t, limit, s, "page %d of %v", i, sizes)
						}
					})
				}
			}
		}
	}
}

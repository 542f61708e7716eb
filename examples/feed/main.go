// Command feed serves a global newest-first feed of posts from an index
// table sharded 16 ways and kept in step by a stream consumer.
//
// A feed that wants "every post, newest first" often gets it from a GSI
// whose partition key is one constant (sort = 0) on every item: a total
// order, but every write of every post lands on one partition. One partition takes about 1,000 writes a second, and a GSI
// partition that throttles throttles the base table's writes too (GSI
// back-pressure): the hot-partition incident that moves such indexes onto
// index tables.
//
// This feed keeps both fixes, each for its own failure:
//
//   - An index table (type=table), not a GSI: the base table's writes never
//     wait for the feed. The base table's stream, read by a stream.Consumer
//     (package github.com/ddbindex/ddbindex/stream), writes each post's entry
//     and turns deleted posts into tombstones (with a TTL); if the feed's
//     table throttles, the consumer lags and the posts are still written.
//   - Sharded (shards=16): the one logical partition, "global", is 16
//     physical ones, global#0 to global#15. A post's shard is a stable hash
//     of its id, so the writes spread evenly and the upkeep has 16 partitions'
//     write capacity (about 16,000 writes a second) instead of one's. An index
//     table on one constant partition would still cap the upkeep at one
//     partition's rate, and fall further behind every second above it.
//
// A sharded GSI (type=gsi,shards=16) would lift the write cap without the
// pipeline, but one throttled shard would still throttle the base table:
// the index table is the form that the posts' writes never wait on. Explain
// shows the feed's query on both forms.
//
// Reads pay for the spread: every page sends a request to each of the 16
// shards, concurrently, and merges them newest first. The library keeps
// the answer exactly that of the unsharded feed: the same posts, order,
// pages and cursors (one logical position each), with tombstones skipped
// and every page filled. (A service that only reads the feed imports the
// root package alone, without the Streams client.)
//
// It runs against DDBINDEX_ENDPOINT (default http://127.0.0.1:8000), a
// DynamoDB-compatible server with Streams: `make demo` starts one.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/schema"
	"github.com/ddbindex/ddbindex/stream"
)

// Post is one post. It is declared in package models, with the options
// the feed opens its table with, so that the operator command
// cmd/ddbindex-demo is built from the same declaration. Every post is in
// the one global feed: Feed is the constant "global", the old GSI's
// sort = 0. The feed index's sort key is the 13-digit epoch-millisecond
// time the old GSI used, then the post id:
//
//	_ ddbindex.TableSpec `ddbindex:"feed-posts"`
//	_ ddbindex.IndexSpec `ddbindex:"newest,type=table,shards=16"`
//
//	ID        string    `dynamodbav:"id"         ddbindex:"pk"`
//	Feed      string    `dynamodbav:"feed"       ddbindex:"newest.pk"`
//	Published time.Time `dynamodbav:"published"  ddbindex:"newest.sk,format=unixms,width=13"`
//	Author    string    `dynamodbav:"author"`
//	Text      string    `dynamodbav:"text"`
type Post = models.Post

// The demo's data: numPosts posts a minute apart from start; then a
// moderator removes most of the newest ones (removed), so the top of the
// feed is a run of tombstones spread over the shards.
const (
	numPosts = 160
	pageSize = 5
	numPages = 3
)

var start = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// posts returns the posts the demo publishes, oldest first.
func posts() []Post {
	all := make([]Post, numPosts)
	for i := range all {
		all[i] = Post{ID: fmt.Sprintf("post-%03d", i), Feed: "global", Published: start.Add(time.Duration(i) * time.Minute),
			Author: fmt.Sprintf("user_%d", i%5), Text: fmt.Sprintf("hello #%d", i)}
	}
	return all
}

// removed reports whether the moderator deletes post i: three in four of
// the 40 newest.
func removed(i int) bool { return i >= numPosts-40 && i%4 != 0 }

// line renders posts as the demo prints a page.
func line(ps []Post) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, " %s(%s)", p.ID, p.Published.Format("15:04"))
	}
	return b.String()
}

// settings are the command line's.
type settings struct {
	// prefix goes before every table name (default: "demo-" and six random
	// hex digits, so that runs never share tables).
	prefix string
	// keep leaves the tables when the demo ends, for the operator command
	// to look at (make demo).
	keep bool
}

func main() {
	var s settings
	flag.StringVar(&s.prefix, "table-prefix", "", "put `PREFIX` before every table name (default: demo- and random hex digits)")
	flag.BoolVar(&s.keep, "keep", false, "leave the tables when the demo ends")
	flag.Parse()
	endpoint := os.Getenv("DDBINDEX_ENDPOINT")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:8000"
	}
	if err := run(context.Background(), os.Stdout, endpoint, s); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, endpoint string, s settings) error {
	creds := credentials.NewStaticCredentialsProvider("demo", "demo", "")
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds})
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds})

	prefix := s.prefix
	if prefix == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		prefix = "demo-" + hex.EncodeToString(b[:]) + "-"
	}
	feed, err := ddbindex.New[Post](client, func(o *ddbindex.Options) {
		o.TableName = func(declared string) string { return prefix + declared }
	})
	if err != nil {
		return err
	}
	// The query every page runs; Explain names the index table and its shards.
	newest := feed.Query("newest", "global").Desc().Limit(pageSize)
	ex, err := newest.Explain()
	if err != nil {
		return err
	}
	indexTable := aws.ToString(ex.Request.Input.TableName)
	fmt.Fprintf(w, "== creating %s (with a stream) and the index table %s, sharded %d ways\n",
		feed.TableName(), indexTable, len(ex.Request.Shards))
	if err := schema.CreateTables(ctx, feed, client); err != nil {
		return err
	}
	defer func() {
		if s.keep {
			return
		}
		for _, in := range schema.CreateTableInputs(feed, false) {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
		}
	}()
	consumer, err := stream.NewConsumer(feed, streams, &stream.MemoryCheckpoints{})
	if err != nil {
		return err
	}

	all := posts()
	for _, p := range all {
		if _, err := feed.Put(ctx, p); err != nil {
			return err
		}
	}
	deleted := 0
	for i, p := range all {
		if removed(i) {
			if err := feed.Delete(ctx, p); err != nil {
				return err
			}
			deleted++
		}
	}
	fmt.Fprintf(w, "== published %d posts (%s to %s), deleted %d of the 40 newest\n",
		len(all), all[0].Published.Format("15:04"), all[len(all)-1].Published.Format("15:04"), deleted)

	st, err := consumer.Poll(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== stream consumer applied %d changes: %d entries written, %d tombstones\n", st.Changes, st.Puts, st.Deletes)
	st, err = consumer.Poll(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   a second poll finds %d new changes (checkpointed)\n", st.Changes)

	if err := spread(ctx, w, client, indexTable); err != nil {
		return err
	}

	fmt.Fprintf(w, "== the global feed, newest first, %d a page\n", pageSize)
	cursor := ""
	for n := 1; n <= numPages; n++ {
		page, err := newest.After(cursor).Page(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   page %d:%s\n", n, line(page.Items))
		s := page.Stats
		fmt.Fprintf(w, "     cost: %d requests, %d read, %d tombstones skipped, %d read ahead, %.1f RCU\n",
			s.Requests, s.Read, s.Filtered, s.Dropped, s.ReadUnits)
		fmt.Fprintf(w, "     cursor: %s\n", short(page.Cursor))
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}

	// Explain sends nothing: the next page's first request to every shard,
	// each continuing after the cursor's position through its key
	// condition, and the same read on the other form, a sharded GSI.
	if ex, err = newest.After(cursor).Explain(); err != nil {
		return err
	}
	fmt.Fprintf(w, "== Explain of page %d: %d requests, one per shard, sent concurrently\n", numPages+1, len(ex.Request.Shards))
	fmt.Fprintln(w, indent(ex.Request.String()))
	if ex.Alternate != nil {
		fmt.Fprintln(w, "   the same page from a sharded GSI (type=gsi,shards=16):")
		fmt.Fprintln(w, indent(ex.Alternate.String()))
	}

	// A full page whose cursor is empty: nothing live follows it.
	first := all[0].Published.Add(pageSize * time.Minute)
	page, err := feed.Query("newest", "global").Where(ddbindex.Lt(first)).Desc().Limit(pageSize).Page(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== posts before %s:%s\n     cursor: %s\n", first.Format("15:04"), line(page.Items), short(page.Cursor))

	var stats ddbindex.Stats
	since := all[len(all)-40].Published
	count := 0
	for _, err := range feed.Query("newest", "global").Where(ddbindex.Ge(since)).ReportTo(&stats).All(ctx) {
		if err != nil {
			return err
		}
		count++
	}
	fmt.Fprintf(w, "== posts since %s: %d live (%d tombstones skipped, %d requests)\n",
		since.Format("15:04"), count, stats.Filtered, stats.Requests)

	// A tampered cursor is a client error (HTTP 400), raised before any request.
	_, err = newest.After("zz" + cursor[2:]).Page(ctx)
	fmt.Fprintf(w, "== a tampered cursor: invalid=%t (%s): %v\n", errors.Is(err, ddbindex.ErrInvalidCursor), ddbindex.Code(err), err)
	return nil
}

// spread prints how the index table's entries spread over the shards: a
// Scan, counted by partition key value (the library's default attribute
// names: _pk, and _deleted for a tombstone).
func spread(ctx context.Context, w io.Writer, client *dynamodb.Client, table string) error {
	type load struct{ entries, tombstones int }
	byPK := map[string]*load{}
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, e := range out.Items {
			pk, _ := e["_pk"].(*types.AttributeValueMemberS)
			if pk == nil {
				return fmt.Errorf("an entry of %s has no string _pk", table)
			}
			l := byPK[pk.Value]
			if l == nil {
				l = &load{}
				byPK[pk.Value] = l
			}
			l.entries++
			if d, ok := e["_deleted"].(*types.AttributeValueMemberBOOL); ok && d.Value {
				l.tombstones++
			}
		}
	}
	shard := func(pk string) int {
		n, _ := strconv.Atoi(pk[strings.LastIndexByte(pk, '#')+1:])
		return n
	}
	pks := make([]string, 0, len(byPK))
	for pk := range byPK {
		pks = append(pks, pk)
	}
	slices.SortFunc(pks, func(a, b string) int { return shard(a) - shard(b) })
	fmt.Fprintf(w, "== the index table by partition (a Scan): entries (tombstones)\n")
	total, most := 0, 0
	for i, pk := range pks {
		if i%4 == 0 {
			fmt.Fprint(w, "  ")
		}
		l := byPK[pk]
		fmt.Fprintf(w, " %-10s %3d (%2d)", pk, l.entries, l.tombstones)
		if i%4 == 3 || i == len(pks)-1 {
			fmt.Fprintln(w)
		}
		total += l.entries
		most = max(most, l.entries)
	}
	mean := float64(total) / float64(len(pks))
	fmt.Fprintf(w, "   %d entries in %d partitions: mean %.1f, max %d (max/mean %.2f)\n", total, len(pks), mean, most, float64(most)/mean)
	return nil
}

// short abbreviates a cursor for the demo's output.
func short(cursor string) string {
	if cursor == "" {
		return `"" (the end: nothing live follows)`
	}
	if len(cursor) > 16 {
		return fmt.Sprintf("...%s (%d bytes)", cursor[len(cursor)-16:], len(cursor))
	}
	return cursor
}

// indent indents a multi-line text by five spaces.
func indent(s string) string { return "     " + strings.ReplaceAll(s, "\n", "\n     ") }

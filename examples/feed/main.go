// Command feed serves a global newest-first feed of posts from an index
// table kept in step by a stream consumer.
//
// The write-up this library grew from had such a feed on a GSI with a
// constant partition key: one hot partition whose write back-pressure
// throttled the whole base table. An index table escapes that, at the price
// of a pipeline: here the base table's stream, read by a stream.Consumer
// (package github.com/ddbindex/ddbindex/stream), which writes each post's
// entry and turns deleted posts into tombstones (with a TTL). Reads skip the
// tombstones and fill every page anyway. (A service that only reads the feed
// imports the root package alone, without the Streams client.)
//
// It runs against DDBINDEX_ENDPOINT (default http://127.0.0.1:8000), a
// DynamoDB-compatible server with Streams: `make demo` starts one.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/stream"
)

// Post is one post. The feed index lists every post of a feed newest first:
// its sort key is the 13-digit epoch-millisecond time the old GSI used, then
// the post id.
type Post struct {
	_ ddbindex.TableSpec `ddbindex:"feed-posts"`
	_ ddbindex.IndexSpec `ddbindex:"newest,type=table"`

	ID        string    `dynamodbav:"id"         ddbindex:"pk"`
	Feed      string    `dynamodbav:"feed"       ddbindex:"newest.pk"`
	Published time.Time `dynamodbav:"published"  ddbindex:"newest.sk,format=unixms,width=13"`
	Author    string    `dynamodbav:"author"`
	Text      string    `dynamodbav:"text"`
}

func main() {
	endpoint := os.Getenv("DDBINDEX_ENDPOINT")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:8000"
	}
	if err := run(context.Background(), os.Stdout, endpoint); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, endpoint string) error {
	creds := credentials.NewStaticCredentialsProvider("demo", "demo", "")
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds})
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds})

	var b [3]byte
	_, _ = rand.Read(b[:])
	suffix := "-" + hex.EncodeToString(b[:])
	posts, err := ddbindex.New[Post](client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return s + suffix }
		o.Retention = 24 * time.Hour
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== creating %s (with a stream) and the index table\n", posts.TableName())
	if err := posts.CreateTables(ctx, client); err != nil {
		return err
	}
	defer func() {
		for _, in := range posts.CreateTableInputs(false) {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
		}
	}()
	consumer := stream.NewConsumer(posts, streams, &stream.MemoryCheckpoints{})

	// 40 posts, a minute apart; then a moderator deletes most of the
	// newest ones: the top of the feed becomes a run of tombstones.
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	var all []Post
	for i := range 40 {
		p := Post{ID: fmt.Sprintf("post-%02d", i), Feed: "global", Published: start.Add(time.Duration(i) * time.Minute),
			Author: fmt.Sprintf("user_%d", i%5), Text: fmt.Sprintf("hello #%d", i)}
		if _, err := posts.Put(ctx, p); err != nil {
			return err
		}
		all = append(all, p)
	}
	deleted := 0
	for i := 39; i >= 20; i-- {
		if i%4 != 0 {
			if err := posts.Delete(ctx, all[i]); err != nil {
				return err
			}
			deleted++
		}
	}
	fmt.Fprintf(w, "== published %d posts, deleted %d of the 20 newest\n", len(all), deleted)

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

	fmt.Fprintln(w, "== the global feed, newest first, 5 a page")
	cursor := ""
	for n := 1; n <= 4; n++ {
		page, err := posts.Query("newest", "global").Desc().Limit(5).After(cursor).Page(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   page %d:", n)
		for _, p := range page.Items {
			fmt.Fprintf(w, " %s(%s)", p.ID, p.Published.Format("15:04"))
		}
		s := page.Stats
		fmt.Fprintf(w, "\n     cost: %d requests, %d read, %d tombstones skipped, %d read ahead, %.1f RCU\n",
			s.Requests, s.Read, s.Filtered, s.Dropped, s.ReadUnits)
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	var stats ddbindex.Stats
	count := 0
	for _, err := range posts.Query("newest", "global").Where(ddbindex.Ge(start.Add(30 * time.Minute))).ReportTo(&stats).All(ctx) {
		if err != nil {
			return err
		}
		count++
	}
	fmt.Fprintf(w, "== posts since 09:30: %d live (%d tombstones skipped, %d requests)\n", count, stats.Filtered, stats.Requests)

	// A tampered cursor is a client error (HTTP 400), raised before any request.
	_, err = posts.Query("newest", "global").Desc().After("zz" + cursor[2:]).Page(ctx)
	fmt.Fprintf(w, "== a tampered cursor: invalid=%t (%s): %v\n", errors.Is(err, ddbindex.ErrInvalidCursor), ddbindex.Code(err), err)
	return nil
}

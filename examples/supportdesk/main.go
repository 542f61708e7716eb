// Command supportdesk lists a support team's tickets by status, then by the
// time they were opened: the case of a sort key whose value changes.
//
// A ticket's status is part of its base-table sort key
// (STATUS#open#TICKET#8842), so changing it is a move: one transaction that
// deletes the old key and puts the new one, with the index table written
// in the same transaction. Reading the index table skips the tombstones the
// moves leave behind, page after page, and says what each page cost.
//
// It runs against DDBINDEX_ENDPOINT (default http://127.0.0.1:8000), a
// DynamoDB-compatible server with transactions: `make demo` starts one.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/schema"
)

// Ticket is one support ticket. It is declared in package models, with
// the options the support desk opens its table with, so that the operator
// command cmd/ddbindex-demo is built from the same declaration:
//
//	_ ddbindex.TableSpec `ddbindex:"supportdesk-tickets,pk=PK,sk=SK"`
//	_ ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
//
//	Team    string    `dynamodbav:"team"    ddbindex:"pk,label=TEAM;by_status.pk"`
//	Status  string    `dynamodbav:"status"  ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
//	ID      string    `dynamodbav:"id"      ddbindex:"sk:1,label=TICKET"`
//	Opened  time.Time `dynamodbav:"opened"  ddbindex:"by_status.sk:1"`
//	Title   string    `dynamodbav:"title"`
//	Version int64     `dynamodbav:"version" ddbindex:"version"`
type Ticket = models.Ticket

// settings are the command line's.
type settings struct {
	// prefix goes before every table name (default: "demo-" and six random
	// hex digits, so that runs never share tables).
	prefix string
	// keep leaves the tables when the demo ends, for the operator command
	// to look at (make demo).
	keep bool
	// cursorOut, when set, names a file the first page's cursor is
	// written to.
	cursorOut string
}

func main() {
	var s settings
	flag.StringVar(&s.prefix, "table-prefix", "", "put `PREFIX` before every table name (default: demo- and random hex digits)")
	flag.BoolVar(&s.keep, "keep", false, "leave the tables when the demo ends")
	flag.StringVar(&s.cursorOut, "cursor-out", "", "write the first page's cursor to `FILE`")
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
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("demo", "demo", ""),
	})
	prefix := s.prefix
	if prefix == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		prefix = "demo-" + hex.EncodeToString(b[:]) + "-"
	}
	tickets, err := ddbindex.New[Ticket](client, models.TicketOptions, func(o *ddbindex.Options) {
		o.TableName = func(declared string) string { return prefix + declared }
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== creating %s and its index table\n", tickets.TableName())
	if err := schema.CreateTables(ctx, tickets, client, func(o *schema.CreateOptions) { o.NoStream = true }); err != nil {
		return err
	}
	defer func() {
		if s.keep {
			return
		}
		for _, in := range schema.CreateTableInputs(tickets, false) {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
		}
	}()
	if err := schema.Check(ctx, tickets, client); err != nil {
		return err
	}
	fmt.Fprintln(w, "   schema matches the declarations")

	// Twelve tickets, opened an hour apart, all open.
	opened := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var all []Ticket
	for i := range 12 {
		t, err := tickets.Put(ctx, Ticket{Team: "TEAM-7", Status: "open", ID: fmt.Sprint(8840 + i),
			Opened: opened.Add(time.Duration(i) * time.Hour), Title: fmt.Sprintf("printer on floor %d", i%4+1)})
		if err != nil {
			return err
		}
		all = append(all, t)
	}
	fmt.Fprintf(w, "== opened %d tickets for TEAM-7\n", len(all))

	// Half of them move to pending: delete + put in one transaction each,
	// and the old index entries become tombstones.
	fmt.Fprintln(w, "== moving every other ticket from open to pending (atomic moves)")
	for i := 0; i < len(all); i += 2 {
		to := all[i]
		to.Status = "pending"
		moved, err := tickets.Move(ctx, all[i], to)
		if err != nil {
			return err
		}
		all[i] = moved
	}
	// Moving a ticket from a stale copy fails, and says which condition.
	stale := all[0]
	stale.Status, stale.Version = "open", 1
	again := stale
	again.Status = "closed"
	if _, err := tickets.Move(ctx, stale, again); err != nil {
		fmt.Fprintf(w, "   a second move from the old key is refused: %v\n", err)
	}

	q := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("open"))
	e, err := q.Limit(4).Explain()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== the request, and the same query on a GSI:\n%s\n%s\n", e.Request, e.Alternate)

	for _, status := range []string{"open", "pending"} {
		fmt.Fprintf(w, "== TEAM-7 %s tickets, oldest first, 4 a page\n", status)
		if err := printPages(ctx, w, tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq(status)).Limit(4)); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "== TEAM-7 pending tickets, newest first, opened after 12:00")
	if err := printPages(ctx, w, tickets.Query("by_status", "TEAM-7").
		Where(ddbindex.Gt("pending", opened.Add(4*time.Hour))).Desc().Limit(3)); err != nil {
		return err
	}
	ok, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("closed")).Exists(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== any closed tickets? %t\n", ok)
	if s.cursorOut != "" {
		// The first page's cursor, for the operator command to decode
		// (make demo runs ddbindex-demo cursor inspect on it).
		page, err := q.Limit(4).Page(ctx)
		if err != nil {
			return err
		}
		if err := os.WriteFile(s.cursorOut, []byte(page.Cursor+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "== wrote the cursor after the first page of open tickets to %s\n", s.cursorOut)
	}
	return nil
}

// printPages follows a query's cursors to the end, printing each page and
// what it cost.
func printPages(ctx context.Context, w io.Writer, q ddbindex.Query[Ticket]) error {
	cursor := ""
	for n := 1; ; n++ {
		page, err := q.After(cursor).Page(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   page %d:", n)
		for _, t := range page.Items {
			fmt.Fprintf(w, " #%s(%s)", t.ID, t.Opened.Format("15:04"))
		}
		s := page.Stats
		fmt.Fprintf(w, "\n     cost: %d requests, %d read, %d tombstones skipped, %d read ahead, %.1f RCU\n",
			s.Requests, s.Read, s.Filtered, s.Dropped, s.ReadUnits)
		if page.Cursor == "" {
			fmt.Fprintln(w, "     no cursor: the end")
			return nil
		}
		fmt.Fprintf(w, "     cursor %.24s… continues\n", page.Cursor)
		cursor = page.Cursor
	}
}

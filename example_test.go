package ddbindex_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
	"github.com/ddbindex/ddbindex/stream"
)

// TestMain runs the examples only when there is a server to run them
// against: they are integration tests with printed output.
func TestMain(m *testing.M) {
	flag.Parse() // so that -run and -skip are read before skipExamples adds to -skip
	if ddbtest.Endpoint() == "" {
		fmt.Fprintln(os.Stderr, "ddbindex: DDBINDEX_ENDPOINT is not set: integration tests skip and examples do not run (run `make test`)")
		skipExamples("^Example")
	} else {
		skipRunbookExamples()
	}
	os.Exit(m.Run())
}

// skipExamples adds pattern to -test.skip, whatever -run selects: an
// example cannot skip itself.
func skipExamples(pattern string) {
	if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
		pattern = prev + "|" + pattern
	}
	if err := flag.Set("test.skip", pattern); err != nil {
		panic(err)
	}
}

// skipRunbookExamples adds the runbook examples to -test.skip when the
// server lacks what they use (an example cannot skip itself): the stream
// enabled on an existing table and TTL (GSI to index table), a GSI added to
// an existing table (index table to GSI). dynalite has none of them.
func skipRunbookExamples() {
	var missing []string
	for _, f := range []ddbtest.Feature{ddbtest.Streams, ddbtest.StreamUpdate, ddbtest.TTL, ddbtest.GSIUpdate} {
		if !ddbtest.Has(f) {
			missing = append(missing, string(f))
		}
	}
	if len(missing) == 0 {
		return
	}
	skipExamples("^Example_runbook")
	fmt.Fprintf(os.Stderr, "ddbindex: the server at %s lacks %s: the runbook examples (Example_runbook*) do not run\n",
		ddbtest.Endpoint(), strings.Join(missing, ", "))
}

// Ticket is a support-desk ticket. Its base key holds the status
// (STATUS#open#TICKET#8842), and an index table lists a team's tickets by
// status, then by the time they were opened.
type Ticket struct {
	_ ddbindex.TableSpec `ddbindex:"example-tickets,pk=PK,sk=SK"`
	_ ddbindex.IndexSpec `ddbindex:"by_status,type=table"`

	Team    string    `dynamodbav:"team"    ddbindex:"pk,label=TEAM;by_status.pk"`
	Status  string    `dynamodbav:"status"  ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string    `dynamodbav:"id"      ddbindex:"sk:1,label=TICKET"`
	Opened  time.Time `dynamodbav:"opened"  ddbindex:"by_status.sk:1"`
	Title   string    `dynamodbav:"title"`
	Version int64     `dynamodbav:"version" ddbindex:"version"`
}

// exampleTickets creates the example's tables under unique names, with
// index tables written through, and fills them.
func exampleTickets(ctx context.Context) (*ddbindex.Table[Ticket], func()) {
	tickets, _, cleanup := exampleTicketsNamed(ctx)
	return tickets, cleanup
}

// exampleTicketsNamed is exampleTickets, and the option that names its
// tables.
func exampleTicketsNamed(ctx context.Context) (*ddbindex.Table[Ticket], func(*ddbindex.Options), func()) {
	client := ddbtest.NewClient()
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "ex-" + hex.EncodeToString(b[:]) + "-"
	naming := func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + s } }
	tickets, err := ddbindex.New[Ticket](client, naming, func(o *ddbindex.Options) {
		o.WriteThrough = ddbtest.Has(ddbtest.Transactions)
	})
	if err != nil {
		log.Fatal(err)
	}
	err = schema.CreateTables(ctx, tickets, client, func(o *schema.CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), true
	})
	if err != nil {
		log.Fatal(err)
	}
	cleanup := func() {
		for _, in := range schema.CreateTableInputs(tickets, false) {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
		}
	}
	opened := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, status := range []string{"open", "open", "pending", "open", "closed", "open"} {
		t := Ticket{Team: "TEAM-7", Status: status, ID: fmt.Sprint(8840 + i), Opened: opened.Add(time.Duration(i) * time.Hour), Title: "ticket " + fmt.Sprint(i)}
		if _, err := tickets.Put(ctx, t); err != nil {
			log.Fatal(err)
		}
		if !ddbtest.Has(ddbtest.Transactions) {
			// Without transactions, write the index table entries the way
			// a stream consumer would.
			av, _ := tickets.Marshal(t)
			if _, err := tickets.Apply(ctx, []ddbindex.Change{{New: av, Version: "1"}}); err != nil {
				log.Fatal(err)
			}
		}
	}
	return tickets, naming, cleanup
}

// Get reads one ticket by its base key (team, status, id); a key with no
// live item is ErrNotFound.
func ExampleTable_Get() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	t, err := tickets.Get(ctx, Ticket{Team: "TEAM-7", Status: "pending", ID: "8842"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.ID, t.Title, t.Version)
	_, err = tickets.Get(ctx, Ticket{Team: "TEAM-7", Status: "open", ID: "8842"})
	fmt.Println(errors.Is(err, ddbindex.ErrNotFound), ddbindex.Code(err))
	// Output:
	// 8842 ticket 2 1
	// true DDBX-404
}

// BatchGet reads many tickets at once, in the order of the keys: a key
// with no item yields nothing, a key given twice yields its item twice.
func ExampleTable_BatchGet() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	got, err := tickets.BatchGet(ctx, []Ticket{
		{Team: "TEAM-7", Status: "closed", ID: "8844"},
		{Team: "TEAM-7", Status: "open", ID: "9999"},
		{Team: "TEAM-7", Status: "open", ID: "8840"},
		{Team: "TEAM-7", Status: "closed", ID: "8844"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range got {
		fmt.Println(t.ID, t.Status)
	}
	// Output:
	// 8844 closed
	// 8840 open
	// 8844 closed
}

// A service that only reads builds its table from a client with only the
// read methods; a write fails before any request.
func ExampleNewReadOnly() {
	ctx := context.Background()
	_, naming, cleanup := exampleTicketsNamed(ctx)
	defer cleanup()

	var client ddbindex.ReadAPI = ddbtest.NewClient() // any client with GetItem, BatchGetItem and Query
	tickets, err := ddbindex.NewReadOnly[Ticket](client, naming)
	if err != nil {
		log.Fatal(err)
	}
	ok, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("pending")).Exists(ctx)
	fmt.Println(ok, err)
	_, err = tickets.Put(ctx, Ticket{Team: "TEAM-7", Status: "open", ID: "9000"})
	fmt.Println(errors.Is(err, ddbindex.ErrUnsupported), ddbindex.Code(err))
	// Output:
	// true <nil>
	// true DDBX-604
}

// Page through a team's open tickets, oldest first, two at a time: each
// page's cursor continues where it ended, and the last page has none.
func ExampleQuery_Page() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	cursor := ""
	for {
		page, err := tickets.Query("by_status", "TEAM-7").
			Where(ddbindex.Eq("open")).Limit(2).After(cursor).Page(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, t := range page.Items {
			fmt.Println(t.ID, t.Status, t.Opened.Format(time.Kitchen))
		}
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	// Output:
	// 8840 open 9:00AM
	// 8841 open 10:00AM
	// 8843 open 12:00PM
	// 8845 open 2:00PM
}

// Iterate over every ticket of a team whose status comes after "closed", in
// base-table order (status, then id).
func ExampleQuery_All() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	for t, err := range tickets.Query("", "TEAM-7").Where(ddbindex.Gt("closed")).All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.Status, t.ID)
	}
	// Output:
	// open 8840
	// open 8841
	// open 8843
	// open 8845
	// pending 8842
}

// Exists reads through tombstones: a "has any?" check that DynamoDB's Limit 1
// would get wrong when the first entry it meets is deleted.
func ExampleQuery_Exists() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	// The team's only pending ticket is closed: its index entry becomes a
	// tombstone.
	pending := Ticket{Team: "TEAM-7", Status: "pending", ID: "8842", Opened: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), Version: 1}
	closed := pending
	closed.Status = "closed"
	if ddbtest.Has(ddbtest.Transactions) {
		if _, err := tickets.Move(ctx, pending, closed); err != nil {
			log.Fatal(err)
		}
	} else {
		before, _ := tickets.Marshal(pending)
		closed.Version = 2
		after, _ := tickets.Marshal(closed)
		if _, err := tickets.Apply(ctx, []ddbindex.Change{{Old: before, Version: "2"}, {New: after, Version: "2"}}); err != nil {
			log.Fatal(err)
		}
	}
	for _, status := range []string{"open", "pending", "closed"} {
		ok, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq(status)).Exists(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(status, ok)
	}
	// Output:
	// open true
	// pending false
	// closed true
}

// Explain shows the request a query sends, and the same query on the other
// index type: here the index table, and the GSI it could have been.
func ExampleQuery_Explain() {
	tickets, err := ddbindex.New[Ticket](nil)
	if err != nil {
		log.Fatal(err)
	}
	e, err := tickets.Query("by_status", "TEAM-7").Where(ddbindex.Eq("open")).Desc().Limit(20).Explain()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Request)
	fmt.Println(e.Alternate)
	// Output:
	// Query table example-tickets-by_status (table)
	//   KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
	//   Filter:       (attribute_not_exists(_deleted)) OR (_deleted <> true)
	//   Limit: 20, ScanIndexForward: false
	// Query table example-tickets index by_status (gsi)
	//   KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
	//   Limit: 20, ScanIndexForward: false
}

// EncodeKey joins components into one order-preserving, exact composite key.
func ExampleEncodeKey() {
	k, _ := ddbindex.EncodeKey("open", int64(42), "a#b")
	p, _ := ddbindex.KeyPrefix("open")
	fmt.Println(k)
	fmt.Println(p)
	// Output:
	// open#b42#a$23b
	// open#
}

// Case keeps its base key immutable and its status, which changes, in a GSI
// sort key (status, then opened): the design that lets a plain update move
// it in the team's status order.
type Case struct {
	_ ddbindex.TableSpec `ddbindex:"example-cases,softdelete"`
	_ ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,sk=GSI1SK"`

	ID      string    `dynamodbav:"id"     ddbindex:"pk"`
	Team    string    `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Opened  time.Time `dynamodbav:"opened" ddbindex:"by_status.sk:1"`
	Version int64     `dynamodbav:"version" ddbindex:"version"`
	Deleted bool      `dynamodbav:"-" ddbindex:"deleted"`
}

// Update changes a GSI sort key component in place: ddbindex recomputes the
// derived key (GSI1SK = status#opened#id) in the same UpdateItem, from the
// new status and the stored opened time. A deleted case is absent to a
// caller: Put with version 0 creates it again, and reads that include
// tombstones show which entries are deleted.
func ExampleTable_Update() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "ex-" + hex.EncodeToString(b[:]) + "-"
	cases, err := ddbindex.New[Case](client, func(o *ddbindex.Options) { o.TableName = func(s string) string { return prefix + s } })
	if err != nil {
		log.Fatal(err)
	}
	if err := schema.CreateTables(ctx, cases, client, func(o *schema.CreateOptions) { o.NoTTL = !ddbtest.Has(ddbtest.TTL) }); err != nil {
		log.Fatal(err)
	}
	defer func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(cases.TableName())})
	}()
	opened := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		c := Case{ID: fmt.Sprint("C", i), Team: "TEAM-7", Status: "open", Opened: opened.Add(time.Duration(i) * time.Hour)}
		if _, err := cases.Put(ctx, c); err != nil {
			log.Fatal(err)
		}
	}
	list := func() {
		for c, err := range cases.Query("by_status", "TEAM-7").IncludeDeleted().All(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(c.ID, c.Status, c.Version, c.Deleted)
		}
	}

	// The key needs the base key only.
	if err := cases.Update(ctx, Case{ID: "C1"}, ddbindex.Set("status", "closed")); err != nil {
		log.Fatal(err)
	}
	if err := cases.Delete(ctx, Case{ID: "C2", Version: 1}); err != nil {
		log.Fatal(err)
	}
	list()
	fmt.Println("--")
	again, err := cases.Put(ctx, Case{ID: "C2", Team: "TEAM-7", Status: "pending", Opened: opened})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created again at version", again.Version)
	list()
	// Output:
	// C1 closed 2 false
	// C0 open 1 false
	// C2 open 2 true
	// --
	// created again at version 3
	// C1 closed 2 false
	// C0 open 1 false
	// C2 pending 3 false
}

// httpStatus is the HTTP status a service answers a failed call with, by
// the error's code (docs/errors.md gives the reasons): 400
// for what the request brought (a cursor, a condition value, an item that
// cannot be stored), 404 for an item Get does not find, 409 for a lost
// conditional write, 503 for a DynamoDB call that a later attempt may get
// through, 500 for everything else.
func httpStatus(err error) int {
	switch ddbindex.Code(err) {
	case "DDBX-200", "DDBX-201", "DDBX-300", "DDBX-603":
		return http.StatusBadRequest
	case "DDBX-404":
		return http.StatusNotFound
	case "DDBX-600":
		return http.StatusConflict
	case "DDBX-900":
		var call *ddbindex.Error
		if errors.As(err, &call) && ddbindex.IsTransient(call) {
			return http.StatusServiceUnavailable
		}
	}
	return http.StatusInternalServerError
}

// withErrors is the middleware: it answers a handler's error with its
// status and, as the body, its code (the message, which names tables and
// keys, is for the service's log).
func withErrors(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		status := httpStatus(err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, ddbindex.Code(err), status)
	}
}

// ticketAPI lists a team's tickets, reads one, and creates tickets.
func ticketAPI(tickets *ddbindex.Table[Ticket]) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /tickets", withErrors(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		page, err := tickets.Query("by_status", q.Get("team")).Limit(2).After(q.Get("cursor")).Page(r.Context())
		if err != nil && !errors.Is(err, ddbindex.ErrCapReached) { // a capped page is a page: serve it
			return err
		}
		fmt.Fprintf(w, "%d tickets", len(page.Items))
		return nil
	}))
	mux.Handle("GET /tickets/{status}/{id}", withErrors(func(w http.ResponseWriter, r *http.Request) error {
		t, err := tickets.Get(r.Context(), Ticket{Team: "TEAM-7", Status: r.PathValue("status"), ID: r.PathValue("id")})
		if err != nil {
			return err
		}
		fmt.Fprint(w, t.Title)
		return nil
	}))
	mux.Handle("POST /tickets/{id}", withErrors(func(w http.ResponseWriter, r *http.Request) error {
		t := Ticket{Team: "TEAM-7", Status: "open", ID: r.PathValue("id"), Opened: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		if _, err := tickets.Put(r.Context(), t); err != nil { // version 0: it must not exist yet
			return err
		}
		w.WriteHeader(http.StatusCreated)
		return nil
	}))
	return mux
}

// Map errors to HTTP statuses in a middleware, by their code: a tampered
// cursor is the client's error, a ticket that is not there not found, a
// ticket created twice a conflict, and a throttled DynamoDB a reason to come
// back later.
func ExampleCode_httpStatus() {
	ctx := context.Background()
	tickets, cleanup := exampleTickets(ctx)
	defer cleanup()

	// A DynamoDB endpoint that throttles every request, and a client that
	// does not retry, to show the 503 at once.
	throttling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"Rate of requests exceeds the allowed throughput."}`)
	}))
	defer throttling.Close()
	busyClient := dynamodb.New(ddbtest.NewClient().Options(), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = aws.String(throttling.URL), 1
	})
	busy, err := ddbindex.New[Ticket](busyClient)
	if err != nil {
		log.Fatal(err)
	}

	for _, c := range []struct {
		api            http.Handler
		method, target string
	}{
		{ticketAPI(tickets), "GET", "/tickets?team=TEAM-7"},
		{ticketAPI(tickets), "GET", "/tickets?team=TEAM-7&cursor=tampered"},
		{ticketAPI(tickets), "GET", "/tickets/open/8840"},
		{ticketAPI(tickets), "GET", "/tickets/open/9999"},
		{ticketAPI(tickets), "POST", "/tickets/9000"},
		{ticketAPI(tickets), "POST", "/tickets/8840"},
		{ticketAPI(busy), "GET", "/tickets?team=TEAM-7"},
	} {
		rec := httptest.NewRecorder()
		c.api.ServeHTTP(rec, httptest.NewRequest(c.method, c.target, nil))
		line := fmt.Sprintf("%s %s → %d %s", c.method, c.target, rec.Code, strings.TrimSpace(rec.Body.String()))
		if ra := rec.Header().Get("Retry-After"); ra != "" {
			line += " (Retry-After: " + ra + ")"
		}
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// GET /tickets?team=TEAM-7 → 200 2 tickets
	// GET /tickets?team=TEAM-7&cursor=tampered → 400 DDBX-300
	// GET /tickets/open/8840 → 200 ticket 0
	// GET /tickets/open/9999 → 404 DDBX-404
	// POST /tickets/9000 → 201
	// POST /tickets/8840 → 409 DDBX-600
	// GET /tickets?team=TEAM-7 → 503 DDBX-900 (Retry-After: 1)
}

// CustomerOrder is an order, listed per customer by state and id, at the step of a
// rollback from an index table to a GSI where reads still use the table and
// every write keeps the GSI's derived attributes too (keep=gsi).
type CustomerOrder struct {
	_        ddbindex.TableSpec `ddbindex:"example-orders"`
	_        ddbindex.IndexSpec `ddbindex:"by_state,type=table,keep=gsi"`
	ID       string             `dynamodbav:"id"       ddbindex:"pk;by_state.sk:1"`
	Customer string             `dynamodbav:"customer" ddbindex:"by_state.pk,label=CUSTOMER"`
	State    string             `dynamodbav:"state"    ddbindex:"by_state.sk:0"`
}

// CustomerOrderBefore is the step before: the index table alone. Its writes leave
// the GSI's attributes out.
type CustomerOrderBefore struct {
	_        ddbindex.TableSpec `ddbindex:"example-orders"`
	_        ddbindex.IndexSpec `ddbindex:"by_state,type=table"`
	ID       string             `dynamodbav:"id"       ddbindex:"pk;by_state.sk:1"`
	Customer string             `dynamodbav:"customer" ddbindex:"by_state.pk,label=CUSTOMER"`
	State    string             `dynamodbav:"state"    ddbindex:"by_state.sk:0"`
}

// MigratingTicketBefore is a ticket at step 0 of the runbook: a GSI lists a
// team's tickets by status.
type MigratingTicketBefore struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk;by_status.sk:1"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
}

// MigratingTicket is the same ticket at step 1: the GSI still serves reads,
// and every write keeps the index table too.
type MigratingTicket struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"` // step 1; step 0 said type=gsi
	ID     string             `dynamodbav:"id"     ddbindex:"pk;by_status.sk:1"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
}

// The runbook of docs/migration.md, GSI to index table, steps 1 and 2 on one instance:
// schema.Prepare creates the index table, its TTL, the base table's stream and the
// control table; the stream consumer keeps the table from then on; Backfill
// writes the entries of the tickets written before; migrate.SetRoute sends
// one team to the table, fleet-wide, through the control table that every
// instance's migrate.Router reads.
func Example_runbook() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	streamsClient := ddbtest.NewStreamsClient()
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "ex-" + hex.EncodeToString(b[:]) + "-"
	// The fleet's routes, read from the control table (router.Start(ctx)
	// reads them every 30 seconds; defer router.Close()).
	router, err := migrate.NewRouter(client, migrate.RouterOptions{ControlTable: prefix + "control", Tables: []string{"tickets"}})
	if err != nil {
		log.Fatal(err)
	}
	options := func(o *ddbindex.Options) { // table names and the routes
		o.TableName = func(s string) string { return prefix + s }
		o.Router = router
	}

	// Step 0, what runs today: the base table and its GSI, with tickets.
	before, err := ddbindex.New[MigratingTicketBefore](client, options)
	if err != nil {
		log.Fatal(err)
	}
	if err := schema.CreateTables(ctx, before, client); err != nil {
		log.Fatal(err)
	}
	defer func() {
		for _, name := range []string{prefix + "tickets", prefix + "tickets-by_status", prefix + "control"} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
		}
	}()
	for i, t := range []MigratingTicketBefore{{Team: "TEAM-7", Status: "open"}, {Team: "TEAM-7", Status: "closed"}, {Team: "TEAM-9", Status: "open"}} {
		t.ID = fmt.Sprint("T", i)
		if _, err := before.Put(ctx, t); err != nil {
			log.Fatal(err)
		}
	}

	// Step 1: the declaration that keeps the table too.
	tickets, err := ddbindex.New[MigratingTicket](client, options)
	if err != nil {
		log.Fatal(err)
	}
	// Idempotent; report.Steps says what it changed. The control table is the
	// service's, not the model's: Prepare creates it when told its name.
	report, err := schema.Prepare(ctx, tickets, client, func(o *schema.PrepareOptions) { o.ControlTable = prefix + "control" })
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range report.Steps {
		step, _, _ = strings.Cut(step, " (arn:") // the stream's ARN differs from run to run
		fmt.Println(strings.ReplaceAll(step, prefix, ""))
	}
	checkpoints := &stream.MemoryCheckpoints{}
	cons, err := stream.NewConsumer(tickets, streamsClient, checkpoints) // the upkeep: go cons.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tickets.Put(ctx, MigratingTicket{ID: "T3", Team: "TEAM-7", Status: "pending"}); err != nil {
		log.Fatal(err)
	}
	for { // what cons.Run does, until it has caught up
		st, err := cons.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if st.Changes == 0 {
			break
		}
	}
	stats, err := migrate.Backfill(ctx, tickets, client, "by_status") // once every writer keeps the table
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("backfill: %d scanned, %d written, %d already there\n", stats.Scanned, stats.Written, stats.Skipped)

	// Step 2: one team reads the table, fleet-wide.
	err = migrate.SetRoute(ctx, router, tickets, "by_status", migrate.Route{To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}})
	if err != nil {
		log.Fatal(err)
	}
	page, err := tickets.Query("by_status", "TEAM-7").Page(ctx) // routed: the index table
	if err != nil {
		log.Fatal(err)
	}
	gsiPage, err := tickets.Query("by_status", "TEAM-7").Via(ddbindex.GSI).Page(ctx) // an admin read of the GSI
	if err != nil {
		log.Fatal(err)
	}
	for i := range page.Items {
		fmt.Println(page.Items[i].Status, page.Items[i].ID, "| GSI:", gsiPage.Items[i].Status, gsiPage.Items[i].ID)
	}
	for _, team := range []string{"TEAM-7", "TEAM-9"} {
		e, err := tickets.Query("by_status", team).Explain() // sends nothing
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(team, "reads the", e.Request.Kind)
	}
	// Output:
	// created table tickets-by_status
	// created table control
	// enabled TTL on attribute _ttl of table tickets-by_status
	// enabled a NEW_AND_OLD_IMAGES stream on table tickets
	// backfill: 4 scanned, 3 written, 1 already there
	// closed T1 | GSI: closed T1
	// open T0 | GSI: open T0
	// pending T3 | GSI: pending T3
	// TEAM-7 reads the table
	// TEAM-9 reads the gsi
}

// The runbook the other way, index table to GSI, steps 1 and 2: schema.Prepare adds
// the GSI to the existing base table and waits until it is ACTIVE; Backfill
// writes its derived key attributes onto the orders written before;
// migrate.SetRoute sends one customer to the GSI.
func Example_runbookTableToGSI() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "ex-" + hex.EncodeToString(b[:]) + "-"
	router, err := migrate.NewRouter(client, migrate.RouterOptions{ControlTable: prefix + "control", Tables: []string{"example-orders"}})
	if err != nil {
		log.Fatal(err)
	}
	options := func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
		o.Router = router
	}

	// Step 0: the base table, its stream and the index table, kept by the
	// stream consumer.
	before, err := ddbindex.New[CustomerOrderBefore](client, options)
	if err != nil {
		log.Fatal(err)
	}
	if err := schema.CreateTables(ctx, before, client); err != nil {
		log.Fatal(err)
	}
	defer func() {
		for _, name := range []string{prefix + "example-orders", prefix + "example-orders-by_state", prefix + "control"} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
		}
	}()
	cons, err := stream.NewConsumer(before, ddbtest.NewStreamsClient(), &stream.MemoryCheckpoints{})
	if err != nil {
		log.Fatal(err)
	}
	catchUp := func() { // what cons.Run does, until it has caught up
		for {
			st, err := cons.Poll(ctx)
			if err != nil {
				log.Fatal(err)
			}
			if st.Changes == 0 {
				return
			}
		}
	}
	for i, state := range []string{"shipped", "open", "paid"} {
		if _, err := before.Put(ctx, CustomerOrderBefore{ID: fmt.Sprint("o-", i), Customer: "c-1", State: state}); err != nil {
			log.Fatal(err)
		}
	}

	// Step 1: type=table,keep=gsi.
	orders, err := ddbindex.New[CustomerOrder](client, options)
	if err != nil {
		log.Fatal(err)
	}
	report, err := schema.Prepare(ctx, orders, client, func(o *schema.PrepareOptions) { o.ControlTable = prefix + "control" })
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range report.Steps {
		fmt.Println(strings.ReplaceAll(step, prefix, ""))
	}
	if _, err := orders.Put(ctx, CustomerOrder{ID: "o-3", Customer: "c-1", State: "open"}); err != nil {
		log.Fatal(err)
	}
	catchUp()
	stats, err := migrate.Backfill(ctx, orders, client, "by_state")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("backfill: %d scanned, %d written, %d already right\n", stats.Scanned, stats.Written, stats.Unchanged)

	// Step 2: one customer reads the GSI.
	if err := migrate.SetRoute(ctx, router, orders, "by_state", migrate.Route{To: ddbindex.GSI, Partitions: []string{"c-1"}}); err != nil {
		log.Fatal(err)
	}
	page, err := orders.Query("by_state", "c-1").Page(ctx) // routed: the GSI
	if err != nil {
		log.Fatal(err)
	}
	tablePage, err := orders.Query("by_state", "c-1").Via(ddbindex.IndexTable).Page(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for i := range page.Items {
		fmt.Println(page.Items[i].State, page.Items[i].ID, "| index table:", tablePage.Items[i].State, tablePage.Items[i].ID)
	}
	e, err := orders.Query("by_state", "c-2").Explain()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("c-2 reads the", e.Request.Kind)
	// Output:
	// created table control
	// created GSI by_state (index by_state) on table example-orders
	// backfill: 4 scanned, 3 written, 1 already right
	// open o-1 | index table: open o-1
	// open o-3 | index table: open o-3
	// paid o-2 | index table: paid o-2
	// shipped o-0 | index table: shipped o-0
	// c-2 reads the table
}

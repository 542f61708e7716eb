package migrate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// Ticket is at step 1 of a migration: the GSI serves reads, and every
// write keeps the index table too.
type Ticket struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk;by_status.sk:1"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
}

// Static routes send one team to the index table and every other team to
// the GSI; a query's Via picks its form whatever the routes say.
func ExampleRoutes() {
	routes := migrate.Routes{
		"tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}},
	}
	if err := routes.Validate(); err != nil {
		log.Fatal(err)
	}
	tickets, err := ddbindex.New[Ticket](nil, func(o *ddbindex.Options) { o.Router = routes }) // no client: Explain sends nothing
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range []ddbindex.Query[Ticket]{
		tickets.Query("by_status", "TEAM-7"),
		tickets.Query("by_status", "TEAM-9"),
		tickets.Query("by_status", "TEAM-7").Via(ddbindex.GSI),
	} {
		e, err := q.Explain()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Request.Kind)
	}
	// Output:
	// table
	// gsi
	// gsi
}

// exampleTables creates the tables of Ticket and the control table, with
// names of their own, and returns the options that name them and a
// function that deletes them.
func exampleTables(ctx context.Context, client *dynamodb.Client) (func(*ddbindex.Options), string, func()) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "ex-" + hex.EncodeToString(b[:]) + "-"
	control := prefix + "control"
	options := func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	}
	tickets, err := ddbindex.New[Ticket](client, options)
	if err != nil {
		log.Fatal(err)
	}
	err = schema.CreateTables(ctx, tickets, client, func(o *schema.CreateOptions) {
		o.NoStream, o.NoTTL = true, true // the examples keep the index table themselves
		o.WaitMinDelay = 10 * time.Millisecond
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.CreateTable(ctx, schema.ControlTableInput(control)); err != nil {
		log.Fatal(err)
	}
	err = dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &control}, time.Minute,
		func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 10 * time.Millisecond })
	if err != nil {
		log.Fatal(err)
	}
	return options, control, func() {
		for _, name := range []string{prefix + "tickets", prefix + "tickets-by_status", control} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
		}
	}
}

// Every instance of a service routes its reads by the fleet's routes in the
// control table: a Router that refreshes them on its own goroutine. An
// operator's SetRoute changes them for the whole fleet, and at once where
// it is called.
func ExampleRouter() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	options, control, drop := exampleTables(ctx, client)
	defer drop()

	router, err := migrate.NewRouter(client, migrate.RouterOptions{
		ControlTable: control,
		Tables:       []string{"tickets"}, // read from the first refresh on
		OnError:      func(err error) { log.Print(err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := router.Start(ctx); err != nil { // reads now, then every 30 seconds
		log.Fatal(err)
	}
	defer router.Close()
	tickets, err := ddbindex.New[Ticket](client, options, func(o *ddbindex.Options) { o.Router = router })
	if err != nil {
		log.Fatal(err)
	}

	// Step 2: one team, then half of them, read the index table.
	for _, route := range []migrate.Route{
		{To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}},
		{To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}, Percent: 50},
	} {
		if err := migrate.SetRoute(ctx, router, tickets, "by_status", route); err != nil {
			log.Fatal(err)
		}
		moved := 0
		for i := range 100 {
			e, err := tickets.Query("by_status", fmt.Sprint("TEAM-", i)).Explain()
			if err != nil {
				log.Fatal(err)
			}
			if e.Request.Kind == ddbindex.IndexTable {
				moved++
			}
		}
		fmt.Printf("%d of 100 teams read the index table\n", moved)
	}
	routes, err := router.Routes(ctx, "tickets") // what the control table holds, for operators
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", routes["by_status"])
	// Output:
	// 1 of 100 teams read the index table
	// 56 of 100 teams read the index table
	// {To:table Partitions:[TEAM-7] Percent:50}
}

// Shadows compares a sampled share of the pages an instance reads with the
// same page on the other form, in the background, and reports each
// mismatch that a second read, after Recheck, finds again.
func ExampleShadows() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	options, _, drop := exampleTables(ctx, client)
	defer drop()

	shadows, err := migrate.NewShadows(migrate.ShadowOptions{
		Rate:       1, // every page; in production a small share, such as 0.01
		OnMismatch: func(m migrate.Mismatch) { log.Printf("%s: %s %v (%s)", m.Kind, m.Detail, m.Keys, m.Query) },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = shadows.Close(context.Background()) }() // waits for the comparisons in flight
	tickets, err := ddbindex.New[Ticket](client, options, func(o *ddbindex.Options) { o.Observer = shadows })
	if err != nil {
		log.Fatal(err)
	}
	var changes []ddbindex.Change
	for i := range 3 {
		t, err := tickets.Put(ctx, Ticket{ID: fmt.Sprint("T", i), Team: "TEAM-7", Status: "open"})
		if err != nil {
			log.Fatal(err)
		}
		img, err := tickets.Marshal(t)
		if err != nil {
			log.Fatal(err)
		}
		changes = append(changes, ddbindex.Change{New: img, Version: "1"})
	}
	if _, err := tickets.Apply(ctx, changes); err != nil { // what the stream upkeep does
		log.Fatal(err)
	}
	for range 3 {
		if _, err := tickets.Query("by_status", "TEAM-7").Page(ctx); err != nil {
			log.Fatal(err)
		}
		if err := shadows.Wait(ctx); err != nil { // for the example: a service does not wait
			log.Fatal(err)
		}
	}
	fmt.Printf("%+v\n", shadows.Stats())
	// Output:
	// {Compared:3 Equal:3 Transient:0 Persistent:0 Skipped:0 Waiting:0 Failed:0}
}

// Compare reads a whole query on both forms of an index, page by page, and
// lists what differs: the offline check of step 2 (the operator command's
// verify).
func ExampleCompare() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	options, _, drop := exampleTables(ctx, client)
	defer drop()
	tickets, err := ddbindex.New[Ticket](client, options)
	if err != nil {
		log.Fatal(err)
	}
	var changes []ddbindex.Change
	for i := range 5 {
		t := Ticket{ID: fmt.Sprint("T", i), Team: "TEAM-7", Status: "open"}
		if _, err := tickets.Put(ctx, t); err != nil { // the base item, and so the GSI
			log.Fatal(err)
		}
		img, err := tickets.Marshal(t)
		if err != nil {
			log.Fatal(err)
		}
		if i != 3 { // the index table misses T3
			changes = append(changes, ddbindex.Change{New: img, Version: "1"})
		}
	}
	if _, err := tickets.Apply(ctx, changes); err != nil { // what the stream upkeep does
		log.Fatal(err)
	}
	c, err := migrate.Compare(ctx, tickets.Query("by_status", "TEAM-7").Limit(2))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("forms:", c.Forms[0], c.Forms[1], "equal:", c.Equal())
	for _, d := range c.Differences {
		fmt.Println(d)
	}
	// Output:
	// forms: gsi table equal: false
	// page 2 item 2: {id="T3"} as a gsi, {id="T4"} as a table
	// page 3: 1 items as a gsi, 0 as a table
}

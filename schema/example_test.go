package schema_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// TestMain runs the examples only when there is a server to run them
// against (DDBINDEX_ENDPOINT, as `make test` sets it): they are integration
// tests with printed output, and an example cannot skip itself.
func TestMain(m *testing.M) {
	flag.Parse() // so that -run and -skip are read before adding to -skip
	if ddbtest.Endpoint() == "" {
		fmt.Fprintln(os.Stderr, "schema: DDBINDEX_ENDPOINT is not set: integration tests skip and examples do not run (run `make test`)")
		skip := "^Example"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// examplePrefix returns a prefix that makes an example's table names its
// own.
func examplePrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "ex-" + hex.EncodeToString(b[:]) + "-"
}

// deleteTables deletes the named tables, for an example's clean-up.
func deleteTables(client *dynamodb.Client, names ...string) {
	for _, name := range names {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}
}

// Ticket is a support ticket, keyed by team and id; a GSI lists a person's
// tickets.
type Ticket struct {
	_ ddbindex.TableSpec `ddbindex:"example-tickets"`
	_ ddbindex.IndexSpec `ddbindex:"by_owner,type=gsi"`

	Team  string `dynamodbav:"team"  ddbindex:"pk"`
	ID    string `dynamodbav:"id"    ddbindex:"sk"`
	Owner string `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Title string `dynamodbav:"title"`
}

// CreateTables makes the tables the declarations describe (here the base
// table and its GSI), and Check then finds them as declared.
// CreateTableInputs gives the same requests to callers that create tables
// their own way.
func ExampleCreateTables() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	prefix := examplePrefix()
	tickets, err := ddbindex.New[Ticket](client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	})
	if err != nil {
		log.Fatal(err)
	}
	defer deleteTables(client, tickets.TableName())

	if err := schema.CreateTables(ctx, tickets, client, func(o *schema.CreateOptions) {
		o.WaitMinDelay = 10 * time.Millisecond // a local server is quick
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("schema check:", schema.Check(ctx, tickets, client))
	for _, in := range schema.CreateTableInputs(tickets, false) {
		fmt.Print(strings.TrimPrefix(aws.ToString(in.TableName), prefix), ":")
		for _, ks := range in.KeySchema {
			fmt.Print(" ", aws.ToString(ks.AttributeName), " (", ks.KeyType, ")")
		}
		for _, g := range in.GlobalSecondaryIndexes {
			fmt.Print("; GSI ", aws.ToString(g.IndexName))
		}
		fmt.Println()
	}
	// Output:
	// schema check: <nil>
	// example-tickets: team (HASH) id (RANGE); GSI by_owner
}

// Check compares the declarations with the live tables and lists every
// difference in one *schema.Error, which matches ddbindex.ErrSchemaMismatch
// (DDBX-500). Here the table was made without the GSI the model declares.
func ExampleCheck() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	prefix := examplePrefix()
	tickets, err := ddbindex.New[Ticket](client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	})
	if err != nil {
		log.Fatal(err)
	}
	defer deleteTables(client, tickets.TableName())
	in := schema.CreateTableInputs(tickets, false)[0]
	in.GlobalSecondaryIndexes = nil // made by hand, without the GSI or its key attribute
	in.AttributeDefinitions = slices.DeleteFunc(in.AttributeDefinitions, func(a types.AttributeDefinition) bool {
		return aws.ToString(a.AttributeName) == "owner"
	})
	if _, err := client.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	if err := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond // a local server is quick
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, time.Minute); err != nil {
		log.Fatal(err)
	}

	err = schema.Check(ctx, tickets, client)
	var se *schema.Error
	if errors.As(err, &se) {
		fmt.Println(ddbindex.Code(err), errors.Is(err, ddbindex.ErrSchemaMismatch))
		for _, p := range se.Problems {
			fmt.Println("-", strings.ReplaceAll(p, prefix, ""))
		}
	}
	// Output:
	// DDBX-500 true
	// - table example-tickets has no GSI named by_owner (index by_owner)
}

// Order is a shop order; a GSI lists a customer's orders by the time they
// were placed.
type Order struct {
	_ ddbindex.TableSpec `ddbindex:"example-orders"`
	_ ddbindex.IndexSpec `ddbindex:"by_customer,type=gsi"`

	ID       string    `dynamodbav:"id"       ddbindex:"pk"`
	Customer string    `dynamodbav:"customer" ddbindex:"by_customer.pk"`
	Placed   time.Time `dynamodbav:"placed"   ddbindex:"by_customer.sk"`
}

// Prepare creates what the declarations need and the account lacks (here
// everything: the base table with its GSI, and the control table of the
// routes), waits until it is active, and says what it did; Check then
// passes, and a second call has nothing to do. On tables that exist, it adds
// the missing GSIs and index tables, the stream and TTL.
func ExamplePrepare() {
	ctx := context.Background()
	client := ddbtest.NewClient()
	prefix := examplePrefix()
	orders, err := ddbindex.New[Order](client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + s }
	})
	if err != nil {
		log.Fatal(err)
	}
	defer deleteTables(client, orders.TableName(), prefix+"routes")

	report, err := schema.Prepare(ctx, orders, client, func(o *schema.PrepareOptions) {
		o.ControlTable = prefix + "routes"     // the service's, no model's
		o.WaitMinDelay = 10 * time.Millisecond // a local server is quick
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range report.Steps {
		fmt.Println(strings.ReplaceAll(step, prefix, ""))
	}
	fmt.Println("schema check:", schema.Check(ctx, orders, client), schema.CheckControlTable(ctx, prefix+"routes", client))
	again, err := schema.Prepare(ctx, orders, client, func(o *schema.PrepareOptions) { o.ControlTable = prefix + "routes" })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second call changed something:", again.Changed())
	// Output:
	// created table example-orders (GSI by_customer)
	// created table routes
	// schema check: <nil> <nil>
	// second call changed something: false
}

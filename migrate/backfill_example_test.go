package migrate_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// BackfillOrder is an order, listed per customer by state and id, at the
// step of a rollback from an index table to a GSI where reads still use the
// table and every write keeps the GSI's derived attributes too (keep=gsi).
type BackfillOrder struct {
	_        ddbindex.TableSpec `ddbindex:"example-orders"`
	_        ddbindex.IndexSpec `ddbindex:"by_state,type=table,keep=gsi"`
	ID       string             `dynamodbav:"id"       ddbindex:"pk;by_state.sk:1"`
	Customer string             `dynamodbav:"customer" ddbindex:"by_state.pk,label=CUSTOMER"`
	State    string             `dynamodbav:"state"    ddbindex:"by_state.sk:0"`
}

// BackfillOrderBefore is the step before: the index table alone. Its writes
// leave the GSI's attributes out.
type BackfillOrderBefore struct {
	_        ddbindex.TableSpec `ddbindex:"example-orders"`
	_        ddbindex.IndexSpec `ddbindex:"by_state,type=table"`
	ID       string             `dynamodbav:"id"       ddbindex:"pk;by_state.sk:1"`
	Customer string             `dynamodbav:"customer" ddbindex:"by_state.pk,label=CUSTOMER"`
	State    string             `dynamodbav:"state"    ddbindex:"by_state.sk:0"`
}

// Backfill the GSI a rollback brings back, once every writer keeps it:
// orders written before lack its derived attributes, which Backfill writes
// onto each base item, with two workers, a write-rate cap and a checkpoint
// in the control table after every page. Called again, the same command
// resumes a killed backfill, or finds every segment done.
// TestBackfillRollbackToGSI runs this with its output checked.
func ExampleBackfill() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	orders, err := ddbindex.New[BackfillOrder](client)
	if err != nil {
		log.Fatal(err)
	}
	st, err := migrate.Backfill(ctx, orders, client, "by_state", func(o *migrate.BackfillOptions) {
		o.Workers = 2
		o.WriteUnitsPerSecond = 100
		o.Checkpoint = &migrate.DynamoDBCheckpoints{Client: client, Table: "control"}
		o.Progress = func(p migrate.BackfillProgress) {
			log.Printf("backfill: %d of about %d items, ETA %v", p.Scanned, p.Estimate, p.ETA)
		}
	})
	if err != nil {
		log.Fatal(err) // the stats count what was done; call again to resume
	}
	fmt.Printf("scanned %d, written %d, unchanged %d\n", st.Scanned, st.Written, st.Unchanged)
}

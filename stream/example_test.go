package stream_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/stream"
)

// Note is a team's note, listed newest first by an index table.
type Note struct {
	_       ddbindex.TableSpec `ddbindex:"notes"`
	_       ddbindex.IndexSpec `ddbindex:"by_team,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_team.pk"`
	Written int64              `dynamodbav:"written" ddbindex:"by_team.sk,width=13"`
}

// A consumer in one process: it reads the base table's stream and keeps the
// index tables in step until ctx ends.
func ExampleNewConsumer() {
	ctx := context.Background()
	var db *dynamodb.Client             // your DynamoDB client
	var streams *dynamodbstreams.Client // your DynamoDB Streams client
	notes, err := ddbindex.New[Note](db)
	if err != nil {
		log.Fatal(err)
	}
	cons, err := stream.NewConsumer(notes, streams, &stream.MemoryCheckpoints{}, func(o *stream.ConsumerOptions) {
		o.PollInterval = 2 * time.Second
		o.OnPoison = func(ctx context.Context, r stream.PoisonRecord) error {
			log.Printf("skipping %s: %v", r.SequenceNumber, r.Err) // store r.Record to repair it
			return nil
		}
	})
	if err != nil { // options it cannot honour: ddbindex.ErrDeclaration
		log.Fatal(err)
	}
	if err := cons.Run(ctx); err != nil {
		log.Print(err)
	}
}

// The whole body of an AWS Lambda handler that keeps index tables in step.
func ExampleApplyLambdaEvent() {
	var db *dynamodb.Client // your DynamoDB client
	notes, err := ddbindex.New[Note](db)
	if err != nil {
		log.Fatal(err)
	}
	handler := func(ctx context.Context, ev events.DynamoDBEvent) error {
		_, err := stream.ApplyLambdaEvent(ctx, notes, ev)
		return err // Lambda retries the batch; Apply is idempotent
	}
	_ = handler // lambda.Start(handler)
}

// A stream record becomes a Change, whose index writes IndexWrites computes
// without sending anything.
func ExampleChangeFromRecord() {
	notes, err := ddbindex.New[Note](nil) // IndexWrites sends nothing
	if err != nil {
		log.Fatal(err)
	}
	s := func(v string) streamtypes.AttributeValue { return &streamtypes.AttributeValueMemberS{Value: v} }
	n := func(v string) streamtypes.AttributeValue { return &streamtypes.AttributeValueMemberN{Value: v} }
	rec := streamtypes.Record{EventName: streamtypes.OperationTypeModify, Dynamodb: &streamtypes.StreamRecord{
		SequenceNumber: aws.String("4200000000000000000001"),
		StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		Keys:           map[string]streamtypes.AttributeValue{"id": s("n1")},
		OldImage:       map[string]streamtypes.AttributeValue{"id": s("n1"), "team": s("blue"), "written": n("1767225600000")},
		NewImage:       map[string]streamtypes.AttributeValue{"id": s("n1"), "team": s("green"), "written": n("1767225600000")},
	}}
	change, err := stream.ChangeFromRecord(rec)
	if err != nil {
		log.Fatal(err)
	}
	writes, err := notes.IndexWrites(change)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", change.Version)
	for _, w := range writes {
		fmt.Printf("%s: tombstone=%v\n", w.Index, w.Tombstone)
	}
	// Output:
	// version 4200000000000000000001
	// by_team: tombstone=false
	// by_team: tombstone=true
}

// The body of an AWS Lambda function that keeps index tables in step, with
// partial batch responses: configure the event source mapping with
// FunctionResponseTypes [ReportBatchItemFailures] (examples/lambda has a
// template).
func ExampleNewLambdaHandler() {
	var db *dynamodb.Client // your DynamoDB client
	notes, err := ddbindex.New[Note](db)
	if err != nil {
		log.Fatal(err)
	}
	h, err := stream.NewLambdaHandler(notes, func(o *stream.LambdaOptions) {
		o.OnBatch = func(_ context.Context, r stream.BatchResult) {
			if r.Err != nil {
				log.Printf("%d of %d records to retry: %v", r.Failed, r.Records, r.Err)
			}
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = h.Handle // lambda.Start(h.Handle)
}

// Consumers in several processes, with durable checkpoints and shard leases
// in the control table: each reads its share of the stream's shards, and
// resumes after its checkpoints when restarted.
func ExampleDynamoDBCheckpoints() {
	ctx := context.Background()
	var db *dynamodb.Client             // your DynamoDB client
	var streams *dynamodbstreams.Client // your DynamoDB Streams client
	notes, err := ddbindex.New[Note](db)
	if err != nil {
		log.Fatal(err)
	}
	store := &stream.DynamoDBCheckpoints{Client: db, Table: "control", Name: notes.TableName()}
	cons, err := stream.NewConsumer(notes, streams, store, func(o *stream.ConsumerOptions) {
		o.Leases = store
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := cons.Run(ctx); err != nil { // releases its leases when ctx ends
		log.Print(err)
	}
}

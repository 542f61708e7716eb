// Command lambda is the AWS Lambda function that keeps a ddbindex model's
// index table in step with its base table in production: a DynamoDB Streams
// event source mapping invokes it with batches of the base table's stream
// records, and stream.LambdaHandler applies them and reports, with
// ReportBatchItemFailures, the records Lambda must retry.
//
// template.yaml beside it deploys it with the tables, the event source
// mapping (starting position, batch size and window, partial batch
// responses, bisection on error, retries, an SQS on-failure destination) and
// least-privilege IAM for the function and for an application. The function
// reads the physical table names' prefix from TABLE_PREFIX, and the AWS
// configuration (region, credentials) the standard way.
package main

import (
	"context"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/stream"
)

// Ticket is one support ticket, listed per team by status, then by the time
// it was opened, from the index table by_status.
type Ticket struct {
	_      ddbindex.TableSpec `ddbindex:"tickets,pk=PK,sk=SK"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	Team   string             `dynamodbav:"team"   ddbindex:"pk,label=TEAM;by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID     string             `dynamodbav:"id"     ddbindex:"sk:1,label=TICKET"`
	Opened time.Time          `dynamodbav:"opened" ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, err := newHandler(dynamodb.NewFromConfig(cfg), os.Getenv("TABLE_PREFIX"), logger)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h.Handle)
}

// newHandler returns the handler of the tables whose physical names are
// prefix plus the declared ones, logging each batch to logger.
func newHandler(client ddbindex.Client, prefix string, logger *slog.Logger) (*stream.LambdaHandler[Ticket], error) {
	tickets, err := ddbindex.New[Ticket](client, func(o *ddbindex.Options) {
		o.TableName = func(declared string) string { return prefix + declared }
	})
	if err != nil {
		return nil, err
	}
	return stream.NewLambdaHandler(tickets, func(o *stream.LambdaOptions) {
		o.OnBatch = func(ctx context.Context, r stream.BatchResult) {
			attrs := []any{"records", r.Records, "applied", r.Stats.Changes, "puts", r.Stats.Puts,
				"deletes", r.Stats.Deletes, "stale", r.Stats.Stale, "skipped", r.Stats.Skipped}
			if r.Err != nil {
				// Lambda retries the reported records; a poison record ends
				// up described in the on-failure destination.
				logger.WarnContext(ctx, "batch partly applied", append(attrs, "failed", r.Failed, "error", r.Err.Error(), "code", ddbindex.Code(r.Err))...)
				return
			}
			logger.InfoContext(ctx, "batch applied", attrs...)
		}
	})
}

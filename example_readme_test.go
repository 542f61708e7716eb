package ddbindex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/schema"
)

// Example_firstProgram is the README's first program: a client, a model, its
// tables, a Put and a page of a Query with the cursor passed back. It has no
// Output comment: it is compiled, not run, since it needs a server.
// TestREADMEFirstProgram keeps the README's block equal to its body.
func Example_firstProgram() {
	ctx := context.Background()

	// On AWS: region and credentials from the environment, shared files or an IAM role.
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	if endpoint := os.Getenv("LOCAL_DYNAMODB"); endpoint != "" { // a local server, e.g. http://localhost:8000
		client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}

	// A note, and a GSI listing an author's notes by the time they were written.
	type Note struct {
		_ ddbindex.TableSpec `ddbindex:"notes"`
		_ ddbindex.IndexSpec `ddbindex:"by_author,type=gsi,sk=by_author_sk"`

		ID      string    `dynamodbav:"id"      ddbindex:"pk"`
		Author  string    `dynamodbav:"author"  ddbindex:"by_author.pk"`
		Written time.Time `dynamodbav:"written" ddbindex:"by_author.sk"`
		Text    string    `dynamodbav:"text"`
	}

	notes, err := ddbindex.New[Note](client)
	if err != nil {
		log.Fatal(err) // an *Error (ErrDeclaration): the tags break a rule
	}
	if _, err := schema.Prepare(ctx, notes, client); err != nil { // creates what is missing; idempotent
		log.Fatal(err)
	}

	note := Note{ID: "n-1", Author: "ada", Written: time.Now().UTC(), Text: "hello"}
	if _, err := notes.Put(ctx, note); err != nil {
		log.Fatal(err)
	}

	// Ada's notes of the last week, newest first, 20 a page.
	q := notes.Query("by_author", "ada").Where(ddbindex.Ge(time.Now().UTC().AddDate(0, 0, -7))).Desc().Limit(20)
	page, err := q.Page(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range page.Items {
		fmt.Println(n.Written.Format(time.DateTime), n.Text)
	}
	if page.Cursor != "" { // "" at the end; otherwise hand it to the client for the next page
		next, err := q.After(page.Cursor).Page(ctx) // a tampered cursor is ErrInvalidCursor: HTTP 400
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(next.Items), "more")
	}
}

package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// A Feature is an optional part of the DynamoDB API that not every local
// server implements.
type Feature string

const (
	// Transactions is TransactWriteItems and TransactGetItems, probed with
	// a one-Put TransactWriteItems.
	Transactions Feature = "transactions"
	// TTL is UpdateTimeToLive. The probe checks that the call is accepted,
	// not how soon a server expires items.
	TTL Feature = "TTL"
	// Streams is DynamoDB Streams: a table created with a
	// StreamSpecification gets a stream ARN that DescribeStream serves.
	Streams Feature = "streams"
	// StreamUpdate is enabling a stream on an existing table with
	// UpdateTable: the table then has a stream ARN that DescribeStream
	// serves.
	StreamUpdate Feature = "enabling a stream on an existing table (UpdateTable)"
	// GSIUpdate is adding a GSI to an existing on-demand table with
	// UpdateTable: the table then describes the GSI.
	GSIUpdate Feature = "adding a GSI to an existing table (UpdateTable)"
)

// probes maps each feature to its probe. Each runs at most once per process,
// against a scratch table it creates and deletes.
var probes = map[Feature]func() (bool, error){
	Transactions: sync.OnceValues(func() (bool, error) { return probe(Transactions, false, probeTransactions) }),
	TTL:          sync.OnceValues(func() (bool, error) { return probe(TTL, false, probeTTL) }),
	Streams:      sync.OnceValues(func() (bool, error) { return probe(Streams, true, probeStreams) }),
	StreamUpdate: sync.OnceValues(func() (bool, error) { return probe(StreamUpdate, false, probeStreamUpdate) }),
	GSIUpdate:    sync.OnceValues(func() (bool, error) { return probe(GSIUpdate, false, probeGSIUpdate) }),
}

// Require skips the test unless the server implements f. It fails the test
// if the probe cannot tell, for example because the server is unreachable.
// Without an endpoint it skips, as Client does.
func Require(tb testing.TB, f Feature) {
	tb.Helper()
	if Endpoint() == "" {
		tb.Skip(skipNoEndpoint)
	}
	p, ok := probes[f]
	if !ok {
		tb.Fatalf("ddbtest.Require: unknown feature %q", f)
	}
	has, err := p()
	if err != nil {
		tb.Fatalf("probing %s support of %s: %v", f, describe(), err)
	}
	if !has {
		tb.Skipf("needs %s, which the server at %s does not implement", f, describe())
	}
}

// Has reports whether the server implements f. It is false without an
// endpoint, for an unknown feature, and when the probe fails; Require
// reports such failures instead of hiding them.
func Has(f Feature) bool {
	p, ok := probes[f]
	if !ok || Endpoint() == "" {
		return false
	}
	has, err := p()
	return err == nil && has
}

const probeTimeout = 3 * time.Minute

// probe runs check against a fresh scratch table keyed by the string "pk",
// with a stream if withStream, and deletes the table afterwards.
// check returns false, nil if the server lacks the feature.
func probe(f Feature, withStream bool, check func(context.Context, *clientPair, *types.TableDescription) (bool, error)) (has bool, err error) {
	c, err := clients()
	if err != nil {
		return false, err
	}
	// Not a test's context: the result is shared by every test of the process.
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()

	name := namePrefix + "probe-" + sanitize(string(f), maxBasePart) + "-" + randomSuffix()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if withStream {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	out, err := c.db.CreateTable(ctx, in)
	if err != nil {
		return false, fmt.Errorf("creating scratch table: %w", err)
	}
	defer func() {
		// Delete without waiting for the table to disappear.
		if _, derr := c.db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); derr != nil && err == nil {
			err = fmt.Errorf("deleting scratch table %s: %w", name, derr)
		}
	}()
	if err := waitActive(ctx, c.db, name); err != nil {
		return false, fmt.Errorf("waiting for scratch table: %w", err)
	}
	has, err = check(ctx, c, out.TableDescription)
	if err != nil && unimplemented(err) {
		return false, nil
	}
	return has, err
}

func probeTransactions(ctx context.Context, c *clientPair, t *types.TableDescription) (bool, error) {
	_, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: t.TableName,
			Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "probe"}},
		}}},
	})
	return err == nil, err
}

func probeTTL(ctx context.Context, c *clientPair, t *types.TableDescription) (bool, error) {
	_, err := c.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: t.TableName,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String("expires"),
			Enabled:       aws.Bool(true),
		},
	})
	return err == nil, err
}

func probeStreams(ctx context.Context, c *clientPair, t *types.TableDescription) (bool, error) {
	// dynalite accepts a StreamSpecification and ignores it.
	arn := aws.ToString(t.LatestStreamArn)
	if arn == "" {
		return false, nil
	}
	_, err := c.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	return err == nil, err
}

func probeStreamUpdate(ctx context.Context, c *clientPair, t *types.TableDescription) (bool, error) {
	_, err := c.db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:           t.TableName,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	if refused(err) {
		return false, nil // dynalite: "At least one of ProvisionedThroughput, ... is required"
	}
	if err != nil {
		return false, err
	}
	if err := waitActive(ctx, c.db, aws.ToString(t.TableName)); err != nil {
		return false, err
	}
	out, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: t.TableName})
	if err != nil {
		return false, err
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return false, nil
	}
	_, err = c.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	return err == nil, err
}

func probeGSIUpdate(ctx context.Context, c *clientPair, t *types.TableDescription) (bool, error) {
	_, err := c.db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: t.TableName,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gpk"), AttributeType: types.ScalarAttributeTypeS},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName:  aws.String("probe-gsi"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("gpk"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}}},
	})
	if refused(err) {
		return false, nil // dynalite wants a ProvisionedThroughput, and then ignores the GSI
	}
	if err != nil {
		return false, err
	}
	out, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: t.TableName})
	if err != nil {
		return false, err
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "probe-gsi" {
			return true, nil
		}
	}
	return false, nil
}

// refused reports whether the server refused a valid request as invalid or
// unknown: it lacks what the request asks for.
func refused(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "ValidationException" || unimplemented(err))
}

// unimplemented reports whether err says the operation does not exist on
// the server, as opposed to failing for another reason.
func unimplemented(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 501 {
		return true
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "UnknownOperationException", "UnknownOperation", "InvalidAction",
		"NotImplemented", "NotImplementedException",
		"UnsupportedOperation", "UnsupportedOperationException":
		return true
	}
	msg := strings.ToLower(ae.ErrorMessage())
	for _, s := range []string{"not implemented", "not supported", "unsupported", "unknown operation"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/spec"
)

// This file creates the tables a model declares: CreateTables, and the
// requests CreateTableInputs and ControlTableInput return for callers that
// create tables their own way.

// API is the part of the DynamoDB client that [CreateTables] and [Check]
// need. *dynamodb.Client implements it.
type API interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// CreateOptions configure [CreateTables]; the zero value of each field
// means its default.
type CreateOptions struct {
	// NoStream leaves the base table without a stream. By default the base
	// table gets a NEW_AND_OLD_IMAGES stream when the model declares an index
	// table, since the stream path keeps index tables in step.
	NoStream bool
	// NoTTL skips enabling TTL on index tables and on a softdelete model's
	// base table (for servers without TTL); tombstones then stay until
	// removed by other means.
	NoTTL bool
	// WaitMinDelay and WaitMaxDelay tune the wait for tables to become
	// active. Defaults 100 ms and 2 s (the SDK waiter's own default minimum
	// is 20 s); a WaitMaxDelay below WaitMinDelay is taken as WaitMinDelay.
	WaitMinDelay, WaitMaxDelay time.Duration
	// WaitTimeout bounds the wait. Default 5 minutes.
	WaitTimeout time.Duration
	// ClientOptions are applied to every request CreateTables sends (the
	// wait's DescribeTable calls included), as the SDK's own per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
}

// CreateTables creates, from t's declarations, the base table with its
// GSIs and LSIs, and each index table; waits until they are active; and
// enables TTL on the index tables, and on the base table of a softdelete
// model (its tombstones expire too). Tables are billed on demand. It does
// not create the control table (see [ControlTableInput]; [Prepare] does). It is meant for
// tests, examples and bootstrapping; production tables usually come from
// infrastructure code, which [Check] verifies, or from [Prepare].
//
// A nil t or api fails with an error matching [ddbindex.ErrInvalidWrite],
// options it cannot honour (a nil option function, a nil among
// ClientOptions, a negative duration; 0 means the default) with one
// matching [ddbindex.ErrDeclaration] that names the option, both before any
// request; a failed
// call (a table that exists already, a wait that gives up) is a
// [*ddbindex.Error] ([ddbindex.ErrDynamoDB]).
//
//	err := schema.CreateTables(ctx, tickets, client, func(o *schema.CreateOptions) { o.NoTTL = true })
func CreateTables[T any](ctx context.Context, t *ddbindex.Table[T], api API, optFns ...func(*CreateOptions)) error {
	const op = "CreateTables"
	ts, err := tablesOf(t, ddbindex.ErrInvalidWrite, op)
	if err != nil {
		return err
	}
	if isNil(api) {
		return invalid(ddbindex.ErrInvalidWrite, op, "no API (a nil client) to create the tables with")
	}
	var opts CreateOptions
	if err := apply(op, &opts, optFns); err != nil {
		return err
	}
	if err := checkClientOptions(ddbindex.ErrDeclaration, op, "CreateOptions.ClientOptions", opts.ClientOptions); err != nil {
		return err
	}
	if err := nonNegative(op, "CreateOptions", []namedDuration{
		{"WaitMinDelay", opts.WaitMinDelay, 100 * time.Millisecond},
		{"WaitMaxDelay", opts.WaitMaxDelay, 2 * time.Second},
		{"WaitTimeout", opts.WaitTimeout, 5 * time.Minute},
	}); err != nil {
		return err
	}
	if opts.WaitMinDelay == 0 {
		opts.WaitMinDelay = 100 * time.Millisecond
	}
	if opts.WaitMaxDelay == 0 {
		opts.WaitMaxDelay = 2 * time.Second
	}
	opts.WaitMaxDelay = max(opts.WaitMaxDelay, opts.WaitMinDelay)
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = 5 * time.Minute
	}
	api = apiCalls{api}
	inputs := ts.CreateTableInputs(!opts.NoStream)
	for _, in := range inputs {
		if _, err := api.CreateTable(ctx, in, opts.ClientOptions...); err != nil {
			return fmt.Errorf("ddbindex: create table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	w := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = opts.WaitMinDelay, opts.WaitMaxDelay
		o.ClientOptions = opts.ClientOptions
	})
	for _, in := range inputs {
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, opts.WaitTimeout); err != nil {
			if !errors.Is(err, ddbindex.ErrDynamoDB) {
				// The waiter gave up (WaitTimeout): its DescribeTable calls
				// did not see the table become active.
				err = callErr("DescribeTable", in.TableName, nil, err)
			}
			return fmt.Errorf("ddbindex: wait for table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	if opts.NoTTL {
		return nil
	}
	for _, name := range ts.TTL {
		_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(ts.TTLAttr), Enabled: aws.Bool(true),
			},
		}, opts.ClientOptions...)
		if err != nil {
			return fmt.Errorf("ddbindex: enable TTL on %s: %w", name, err)
		}
	}
	return nil
}

// CreateTableInputs returns the CreateTable requests for t's base table
// (with its GSIs and LSIs) and each index table, in declaration order, for
// callers that create tables their own way. The base table gets a
// NEW_AND_OLD_IMAGES stream when stream is true and the model declares an
// index table. The requests are built anew on every call. A nil t has no
// tables: nil.
func CreateTableInputs[T any](t *ddbindex.Table[T], stream bool) []*dynamodb.CreateTableInput {
	ts, err := tablesOf(t, ddbindex.ErrInvalidWrite, "CreateTableInputs")
	if err != nil {
		return nil
	}
	return ts.CreateTableInputs(stream)
}

// ControlTableInput returns the CreateTable request of the control table
// named name: one small on-demand table, shared by every model of a
// service, keyed by the strings "pk" and "sk". It holds the routes of
// package migrate's Router (RouterOptions.ControlTable) and the positions of
// the DynamoDB stores of package migrate and package stream
// (DynamoDBCheckpoints.Table). No model names it: the application gives the
// same name here, to [PrepareOptions].ControlTable and to those packages.
// An empty name names no table: nil.
func ControlTableInput(name string) *dynamodb.CreateTableInput {
	if name == "" {
		return nil
	}
	return spec.ControlTable(name).Input()
}

// tablesOf describes t's tables, or returns an error of op's arguments
// matching sentinel. The description is the core's (spec.go in package
// ddbindex, which alone knows each index's physical layout), reached through
// internal/bridge without the root exporting anything for it.
func tablesOf[T any](t *ddbindex.Table[T], sentinel error, op string) (*spec.Tables, error) {
	if t == nil {
		return nil, invalid(sentinel, op, "no table (a nil *ddbindex.Table)")
	}
	return bridge.Tables(t)
}

// apply applies the option functions to o; a nil one is an error of op's
// options, matching ddbindex.ErrDeclaration.
func apply[O any](op string, o *O, optFns []func(*O)) error {
	for i, fn := range optFns {
		if fn == nil {
			return invalid(ddbindex.ErrDeclaration, op, "option function %d of %d is nil", i+1, len(optFns))
		}
		fn(o)
	}
	return nil
}

// namedDuration is a duration option, with its name and default.
type namedDuration struct {
	name     string
	v, deflt time.Duration
}

// nonNegative refuses a negative duration among the options of a
// struct, with an error matching ddbindex.ErrDeclaration.
func nonNegative(op, typ string, ds []namedDuration) error {
	for _, d := range ds {
		if d.v < 0 {
			return invalid(ddbindex.ErrDeclaration, op, "%s.%s is %v; it cannot be negative (0 means the default, %v)", typ, d.name, d.v, d.deflt)
		}
	}
	return nil
}

// checkClientOptions returns an error of op's arguments matching sentinel
// when one of the SDK's per-call options is nil (the SDK would call it).
func checkClientOptions(sentinel error, op, what string, fns []func(*dynamodb.Options)) error {
	for i, fn := range fns {
		if fn == nil {
			return invalid(sentinel, op, "%s[%d] is nil", what, i)
		}
	}
	return nil
}

package schema_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// TestPerCallClientOptions: CreateTables, Check and Prepare apply the
// caller's per-call SDK options to each request they send (as the root
// package's test of the same name checks for a Table's methods): a client
// counts every operation it sends (all), the options of one call count the
// operations they reach (mine), and after each call the two agree.
func TestPerCallClientOptions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	all := &ddbtest.OpCounter{ID: "otAll"}
	plain := ddbtest.Client(t)
	client := dynamodb.New(plain.Options(), all.Option)
	tb := scOpen[scTicket](t, plain, scNaming(t))

	step := func(name string, want []string, call func(opt func(*dynamodb.Options))) {
		t.Helper()
		mine := &ddbtest.OpCounter{ID: "otMine"}
		call(mine.Option)
		sent, reached := all.Take(), mine.Take()
		require.Equal(t, sent, reached, "%s: every request it sent had the per-call options", name)
		for _, op := range want {
			require.Positive(t, reached[op], "%s sends %s", name, op)
		}
	}
	step("CreateTables", []string{"CreateTable", "DescribeTable"}, func(opt func(*dynamodb.Options)) {
		require.NoError(t, schema.CreateTables(ctx, tb, client, func(o *schema.CreateOptions) {
			o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), !ddbtest.Has(ddbtest.Streams)
			o.WaitMinDelay, o.WaitMaxDelay = 10*time.Millisecond, 50*time.Millisecond
			o.ClientOptions = []func(*dynamodb.Options){opt}
		}))
	})
	step("Check", []string{"DescribeTable"}, func(opt func(*dynamodb.Options)) {
		err := schema.Check(ctx, tb, client, opt)
		if scFull() {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch, "a server without streams or TTL")
		}
	})
	// Prepare from nothing: a model without index tables needs neither a
	// stream nor TTL, which some servers lack.
	fresh := scOpen[scPlain](t, plain, scNaming(t))
	step("Prepare", []string{"CreateTable", "DescribeTable"}, func(opt func(*dynamodb.Options)) {
		rep, err := schema.Prepare(ctx, fresh, client, func(o *schema.PrepareOptions) {
			o.WaitMinDelay, o.WaitMaxDelay = 10*time.Millisecond, 50*time.Millisecond
			o.ClientOptions = []func(*dynamodb.Options){opt}
		})
		require.NoError(t, err)
		require.Equal(t, []string{fresh.TableName()}, rep.CreatedTables)
	})
}

// apiOnly hides every method of the client but schema.API's, to show
// Check needs no more.
type apiOnly struct{ schema.API }

// roClient has the read methods of a DynamoDB client and nothing else, as a
// read-only service's client would.
type roClient struct{ c *dynamodb.Client }

func (r roClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return r.c.GetItem(ctx, in, optFns...)
}

func (r roClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return r.c.BatchGetItem(ctx, in, optFns...)
}

func (r roClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return r.c.Query(ctx, in, optFns...)
}

// scFull reports whether the server has what every table of scTicket
// needs (a stream, TTL), so that Check of tables CreateTables made passes.
func scFull() bool { return ddbtest.Has(ddbtest.Streams) && ddbtest.Has(ddbtest.TTL) }

// TestCheckReadOnlyTable: Check takes its own client, and checks a table
// made by ddbindex.NewReadOnly as any other, with a client that can only
// describe tables.
func TestCheckReadOnlyTable(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	newTestTableNamed[scTicket](t, c, naming)
	ro, err := ddbindex.NewReadOnly[scTicket](roClient{c}, naming)
	require.NoError(t, err)
	_, writes := any(roClient{c}).(ddbindex.Client)
	require.False(t, writes, "the table's client is no Client: it lacks the write methods")
	err = schema.Check(t.Context(), ro, apiOnly{c})
	if scFull() {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch, "a server without streams or TTL")
	}
}

// TestOptionsRefused: CreateTables and Prepare refuse the options they
// cannot honour with an error matching ddbindex.ErrDeclaration (DDBX-100)
// that names the function and the option, before any request.
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[scPlain](nil)
	require.NoError(t, err)
	f := newAWSFake()
	create := func(fns ...func(*schema.CreateOptions)) error { return schema.CreateTables(t.Context(), tb, f, fns...) }
	prepare := func(fns ...func(*schema.PrepareOptions)) error {
		_, err := schema.Prepare(t.Context(), tb, f, fns...)
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"CreateTables: nil option function", create(nil), "schema.CreateTables: option function 1 of 1 is nil"},
		{"CreateTables: negative WaitMinDelay", create(func(o *schema.CreateOptions) { o.WaitMinDelay = -time.Second }),
			"schema.CreateTables: CreateOptions.WaitMinDelay is -1s; it cannot be negative (0 means the default, 100ms)"},
		{"CreateTables: nil ClientOptions entry", create(func(o *schema.CreateOptions) { o.ClientOptions = []func(*dynamodb.Options){nil} }),
			"schema.CreateTables: CreateOptions.ClientOptions[0] is nil"},
		{"Prepare: nil option function", prepare(func(*schema.PrepareOptions) {}, nil), "schema.Prepare: option function 2 of 2 is nil"},
		{"Prepare: negative WaitTimeout", prepare(func(o *schema.PrepareOptions) { o.WaitTimeout = -time.Minute }),
			"schema.Prepare: PrepareOptions.WaitTimeout is -1m0s; it cannot be negative (0 means the default, 1h0m0s)"},
		{"Prepare: negative WaitMaxDelay", prepare(func(o *schema.PrepareOptions) { o.WaitMaxDelay = -1 }), "PrepareOptions.WaitMaxDelay is -1ns"},
	} {
		require.True(t, errors.Is(c.err, ddbindex.ErrDeclaration), "%s: %v", c.name, c.err)
		require.False(t, errors.Is(c.err, ddbindex.ErrInvalidWrite), c.name)
		require.Equal(t, "DDBX-100", ddbindex.Code(c.err), c.name)
		require.ErrorContains(t, c.err, c.want, c.name)
	}
	require.Zero(t, f.calls, "no request")
}

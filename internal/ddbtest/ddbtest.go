// Package ddbtest is the shared harness of ddbindex's integration tests.
//
// Tests find the DynamoDB endpoint in DDBINDEX_ENDPOINT, which
// `make test` (through internal/withserver) sets to a private dynoxide or
// dynalite server. Without it, tests that need a server skip themselves, so
// a plain `go test ./...` runs only the unit tests. The special value "aws"
// selects real DynamoDB with the default AWS credential chain and region.
//
// The package gives each test uniquely named tables that are deleted when
// the test ends (Name, CreateTable, DeleteOnCleanup), and capability probes
// (Require, Has) so tests of transactions, TTL, streams or UpdateTable skip
// on servers that do not implement them instead of failing.
//
// It is imported only by tests.
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"

	"github.com/ddbindex/ddbindex/internal/faults"
	"github.com/ddbindex/ddbindex/internal/multikey"
	"github.com/ddbindex/ddbindex/internal/slowddb"
)

const (
	// EnvEndpoint names the environment variable holding the endpoint URL,
	// or "aws" for real DynamoDB.
	EnvEndpoint = "DDBINDEX_ENDPOINT"
	// EnvRequestLog names the environment variable holding a file to which
	// every request of the shared clients appends a line, "SERVICE OPERATION"
	// (internal/awstest counts them for its cost estimate).
	EnvRequestLog = "DDBINDEX_REQUEST_LOG"
	// EnvRunID names the environment variable holding a run's identifier:
	// Name puts it in every table name, so that internal/awstest can delete
	// what a run left behind.
	EnvRunID = "DDBINDEX_RUN_ID"
	// EnvServer names the environment variable naming the local server
	// ("dynoxide" or "dynalite"); it is empty for an external endpoint.
	EnvServer = "DDBINDEX_SERVER"

	// AWS is the DDBINDEX_ENDPOINT value that selects real DynamoDB.
	AWS = "aws"

	skipNoEndpoint = "integration test: set DDBINDEX_ENDPOINT or run `make test`"

	// Local servers answer in milliseconds; AWS may need a few retries.
	retryMaxAttempts = 5
)

// Endpoint returns DDBINDEX_ENDPOINT, or "" when integration tests should
// be skipped.
func Endpoint() string { return strings.TrimSpace(os.Getenv(EnvEndpoint)) }

// Server returns DDBINDEX_SERVER, the name of the local server behind the
// endpoint ("dynoxide" or "dynalite"), or "" if it is not known, as for an
// external endpoint.
func Server() string { return strings.TrimSpace(os.Getenv(EnvServer)) }

// describe names the endpoint for messages.
func describe() string {
	s := Server()
	if s == "" {
		s = "unknown server"
	}
	return Endpoint() + " (" + s + ")"
}

// clients are built once per process: they are safe for concurrent use and
// sharing them lets all tests reuse connections.
var clients = sync.OnceValues(func() (*clientPair, error) {
	ep := Endpoint()
	if ep == "" {
		return nil, fmt.Errorf("%s is not set", EnvEndpoint)
	}
	logged, err := requestLog()
	if err != nil {
		return nil, err
	}
	if ep == AWS {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg, err := config.LoadDefaultConfig(ctx,
			config.WithRetryMode(aws.RetryModeStandard),
			config.WithRetryMaxAttempts(retryMaxAttempts))
		if err != nil {
			return nil, fmt.Errorf("loading AWS configuration: %w", err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		cfg.APIOptions = append(cfg.APIOptions, logged...)
		return &clientPair{dynamodb.NewFromConfig(cfg), dynamodbstreams.NewFromConfig(cfg)}, nil
	}
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	return &clientPair{
		dynamodb.New(dynamodb.Options{
			Region:           "us-east-1",
			Credentials:      creds,
			BaseEndpoint:     aws.String(ep),
			RetryMode:        aws.RetryModeStandard,
			RetryMaxAttempts: retryMaxAttempts,
			APIOptions:       logged,
		}),
		dynamodbstreams.New(dynamodbstreams.Options{
			Region:           "us-east-1",
			Credentials:      creds,
			BaseEndpoint:     aws.String(ep),
			RetryMode:        aws.RetryModeStandard,
			RetryMaxAttempts: retryMaxAttempts,
			APIOptions:       logged,
		}),
	}, nil
})

// requestLog returns the middleware that appends each request's service
// and operation to the file EnvRequestLog names; none when it is unset.
// Lines are written with O_APPEND, one write each, so the test processes
// of one run can share the file.
func requestLog() ([]func(*middleware.Stack) error, error) {
	path := strings.TrimSpace(os.Getenv(EnvRequestLog))
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvRequestLog, err)
	}
	mw := middleware.InitializeMiddlewareFunc("ddbtestRequestLog", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		_, _ = f.WriteString(awsmiddleware.GetServiceID(ctx) + " " + awsmiddleware.GetOperationName(ctx) + "\n")
		return next.HandleInitialize(ctx, in)
	})
	return []func(*middleware.Stack) error{func(st *middleware.Stack) error {
		return st.Initialize.Add(mw, middleware.After)
	}}, nil
}

type clientPair struct {
	db      *dynamodb.Client
	streams *dynamodbstreams.Client
}

func clientsFor(tb testing.TB) *clientPair {
	tb.Helper()
	if Endpoint() == "" {
		tb.Skip(skipNoEndpoint)
	}
	c, err := clients()
	if err != nil {
		tb.Fatalf("ddbtest: %v", err)
	}
	return c
}

// Client returns a DynamoDB client for the endpoint, or skips the test if
// no endpoint is set. Local endpoints use the static credentials
// "test"/"test" in us-east-1; the endpoint "aws" uses the default AWS
// configuration. The client is shared by all tests of the process; derive
// one with dynamodb.New(c.Options(), ...) to change options.
func Client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return clientsFor(tb).db
}

// StreamsClient is Client for DynamoDB Streams.
func StreamsClient(tb testing.TB) *dynamodbstreams.Client {
	tb.Helper()
	return clientsFor(tb).streams
}

const (
	namePrefix  = "ddbx-"
	maxTestPart = 40
	maxBasePart = 40
)

// Name returns a table name for base that is unique across tests and
// processes sharing a server and valid for DynamoDB (3–255 characters of
// [a-zA-Z0-9_.-]), such as "ddbx-TestFoo-tickets-9f3a1c2b": the prefix
// "ddbx-", the test's name and base, sanitized and shortened, and 32
// random bits. It does not create anything.
func Name(tb testing.TB, base string) string {
	tb.Helper()
	head := namePrefix
	if run := sanitize(os.Getenv(EnvRunID), maxBasePart); run != "" {
		head += run + "-"
	}
	parts := []string{head + sanitize(tb.Name(), maxTestPart)}
	if b := sanitize(base, maxBasePart); b != "" {
		parts = append(parts, b)
	}
	return strings.Join(append(parts, randomSuffix()), "-")
}

// randomSuffix returns 8 random hex digits, enough to keep names from
// colliding between the test processes that share a server.
func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}

// sanitize maps s to table name characters, collapsing runs of anything
// else into one '_', and truncates it to at most max bytes.
func sanitize(s string, max int) string {
	var b strings.Builder
	lastBad := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '_' || r == '.' || r == '-'
		switch {
		case ok:
			b.WriteRune(r)
			lastBad = false
		case !lastBad:
			b.WriteByte('_')
			lastBad = true
		}
	}
	out := strings.Trim(b.String(), "_")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "_.-")
	}
	return out
}

// NewClient returns the shared DynamoDB client for the endpoint, for code
// that has no testing.TB (Example functions). It panics without an endpoint:
// the package's TestMain runs examples only when one is set.
func NewClient() *dynamodb.Client {
	c, err := clients()
	if err != nil {
		panic("ddbtest: " + err.Error() + ": examples talk to a server; set DDBINDEX_ENDPOINT or run `make test`")
	}
	return c.db
}

// NewStreamsClient is NewClient for DynamoDB Streams.
func NewStreamsClient() *dynamodbstreams.Client {
	c, err := clients()
	if err != nil {
		panic("ddbtest: " + err.Error() + ": examples talk to a server; set DDBINDEX_ENDPOINT or run `make test`")
	}
	return c.streams
}

// Faulty returns DynamoDB and DynamoDB Streams clients for the endpoint whose
// requests go through a fault-injecting transport with policy, and the
// transport (to count what it injected). retryer is the clients' retryer:
// nil keeps the SDK's standard one (3 attempts, with its retry quota);
// NoQuotaRetryer lifts the quota for fault rates a production client would
// give up on. It skips the test when no endpoint is set.
func Faulty(tb testing.TB, policy faults.Policy, retryer func() aws.Retryer) (*dynamodb.Client, *dynamodbstreams.Client, *faults.Transport) {
	tb.Helper()
	base := clientsFor(tb)
	ft := faults.New(nil, policy)
	// RetryMaxAttempts would override the retryer's own attempts.
	db := dynamodb.New(base.db.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = ft.Client()
		o.RetryMaxAttempts = 0
		if retryer != nil {
			o.Retryer = retryer()
		} else {
			o.Retryer = retry.NewStandard()
		}
	})
	st := dynamodbstreams.New(base.streams.Options(), func(o *dynamodbstreams.Options) {
		o.HTTPClient = ft.Client()
		o.RetryMaxAttempts = 0
		if retryer != nil {
			o.Retryer = retryer()
		} else {
			o.Retryer = retry.NewStandard()
		}
	})
	return db, st, ft
}

// NoQuotaRetryer returns the SDK's standard retryer with maxAttempts
// attempts and no retry quota (ratelimit.None), so that a high injected
// fault rate does not exhaust the quota shared by every call of a client.
// Its backoff is capped at 20 ms: the local servers need no pause, and the
// tests stay short (how long it waits changes no outcome).
func NoQuotaRetryer(maxAttempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.RateLimiter = ratelimit.None
			o.MaxBackoff = 20 * time.Millisecond
		})
	}
}

// Slow returns a DynamoDB client for the endpoint whose requests go through
// a slowddb.Transport with options o (GSIs created by UpdateTable stay
// CREATING a while, GSI reads lag), and the transport, whose mirror tables
// are deleted when the test ends. It skips the test when no endpoint is
// set.
func Slow(tb testing.TB, o slowddb.Options) (*dynamodb.Client, *slowddb.Transport) {
	tb.Helper()
	base := clientsFor(tb)
	st := slowddb.New(nil, o)
	db := dynamodb.New(base.db.Options(), func(o *dynamodb.Options) { o.HTTPClient = st.Client() })
	tb.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			tb.Errorf("ddbtest: deleting the slowddb mirror tables: %v", err)
		}
	})
	return db, st
}

var (
	multiKeyOnce   sync.Once
	multiKeyDouble *multikey.Double
)

// MultiKey returns a DynamoDB client for the endpoint that has DynamoDB's
// multi-attribute GSI keys: on a local server, which lacks them, its
// requests go through the internal/multikey double (one for the process,
// shared by every such client); on real DynamoDB it is the shared client. It
// skips the test when no endpoint is set.
func MultiKey(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	base := clientsFor(tb)
	if Endpoint() == AWS {
		return base.db
	}
	multiKeyOnce.Do(func() { multiKeyDouble = multikey.New(base.db) })
	return dynamodb.New(base.db.Options(), multiKeyDouble.Option)
}

package ddbtest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func TestName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sub, base, want string }{
		{"plain", "tickets", "ddbx-TestName_plain-tickets-"},
		{"spaces and/slashes", "a b", "ddbx-TestName_spaces_and_slashes-a_b-"},
		{"ünïcode ☃", "", "ddbx-TestName_n_code-"},
		{strings.Repeat("long", 20), strings.Repeat("x", 300), "ddbx-TestName_" + strings.Repeat("long", 7) + "lon-" + strings.Repeat("x", 40) + "-"},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			t.Parallel()
			seen := map[string]bool{}
			for range 1000 {
				n := Name(t, tc.base)
				if !validName.MatchString(n) {
					t.Fatalf("Name(%q) = %q: not a valid table name", tc.base, n)
				}
				if !strings.HasPrefix(n, tc.want) || len(n) != len(tc.want)+8 {
					t.Fatalf("Name(%q) = %q, want %q followed by 8 hex digits", tc.base, n, tc.want)
				}
				if seen[n] {
					t.Fatalf("Name(%q) returned %q twice", tc.base, n)
				}
				seen[n] = true
			}
		})
	}
}

func TestUnimplemented(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&smithy.GenericAPIError{Code: "UnknownOperationException", Message: "UnknownError"}, true},
		{&smithy.GenericAPIError{Code: "ValidationException", Message: "TransactWriteItems is not implemented"}, true},
		{&smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid"}, false},
		{&smithy.GenericAPIError{Code: "ResourceNotFoundException", Message: "Requested resource not found"}, false},
		{errors.New("connection refused"), false},
	} {
		err := fmt.Errorf("operation error: %w", tc.err)
		if got := unimplemented(err); got != tc.want {
			t.Errorf("unimplemented(%v) = %v, want %v", err, got, tc.want)
		}
	}
}

// Not parallel: it changes the environment.
func TestWithoutEndpoint(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	if Endpoint() != "" {
		t.Fatalf("Endpoint() = %q with %s empty", Endpoint(), EnvEndpoint)
	}
	for _, f := range []Feature{Transactions, TTL, Streams, StreamUpdate, GSIUpdate} {
		if Has(f) {
			t.Errorf("Has(%s) without an endpoint", f)
		}
	}
	for name, use := range map[string]func(testing.TB){
		"Client":        func(tb testing.TB) { Client(tb) },
		"StreamsClient": func(tb testing.TB) { StreamsClient(tb) },
		"Require":       func(tb testing.TB) { Require(tb, Transactions) },
	} {
		if !skips(t, name, use) {
			t.Errorf("%s did not skip without an endpoint", name)
		}
	}
}

// skips runs use in a subtest and reports whether it skipped the subtest.
func skips(t *testing.T, name string, use func(testing.TB)) (skipped bool) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		use(t)
	})
	return skipped
}

func keyedByPK(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
}

func requireGone(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("table %s still there after cleanup: DescribeTable error = %v", name, err)
	}
}

func TestCreateTable(t *testing.T) {
	t.Parallel()
	c := Client(t)
	name := Name(t, "items")
	t.Run("use", func(t *testing.T) { // not parallel: its cleanup runs before Run returns
		CreateTable(t, c, keyedByPK(name))
		item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
		if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
		out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(name), Key: item, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Item) == 0 {
			t.Fatal("GetItem found nothing after PutItem")
		}
	})
	requireGone(t, c, name)
}

func TestDeleteOnCleanup(t *testing.T) {
	t.Parallel()
	c := Client(t)
	name := Name(t, "other")
	t.Run("use", func(t *testing.T) {
		if _, err := c.CreateTable(t.Context(), keyedByPK(name)); err != nil {
			t.Fatal(err)
		}
		DeleteOnCleanup(t, c, name)
		WaitActive(t, c, name)
		// A table that never existed is no error either.
		DeleteOnCleanup(t, c, Name(t, "never"))
	})
	requireGone(t, c, name)
}

func TestProbes(t *testing.T) {
	t.Parallel()
	Client(t) // skip without an endpoint
	want, known := map[string]bool{"dynoxide": true, "dynalite": false}[Server()]
	for _, f := range []Feature{Transactions, TTL, Streams, StreamUpdate, GSIUpdate} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			has := Has(f)
			t.Logf("%s: Has(%s) = %v", describe(), f, has)
			if known && has != want {
				t.Errorf("Has(%s) = %v on %s, want %v", f, has, Server(), want)
			}
			if skipped := skips(t, "Require", func(tb testing.TB) { Require(tb, f) }); skipped == has {
				t.Errorf("Require(%s) skipped = %v, but Has = %v", f, skipped, has)
			}
		})
	}
}

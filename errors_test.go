package ddbindex

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// erSentinels is every sentinel of errors.go by name.
// TestErrorSentinelsAllListed keeps it complete: a sentinel added to
// errors.go without a case in TestErrorsMatchOneSentinel (or, for those of
// erStreamSentinels and erSchemaSentinels, in package stream's and package
// schema's) fails it.
var erSentinels = map[string]error{
	"ErrDeclaration":    ErrDeclaration,
	"ErrInvalidQuery":   ErrInvalidQuery,
	"ErrInvalidKey":     ErrInvalidKey,
	"ErrInvalidCursor":  ErrInvalidCursor,
	"ErrNoProgress":     ErrNoProgress,
	"ErrCapReached":     ErrCapReached,
	"ErrNotFound":       ErrNotFound,
	"ErrSchemaMismatch": ErrSchemaMismatch,
	"ErrConflict":       ErrConflict,
	"ErrKeyChange":      ErrKeyChange,
	"ErrTooManyActions": ErrTooManyActions,
	"ErrInvalidWrite":   ErrInvalidWrite,
	"ErrOutcomeUnknown": ErrOutcomeUnknown,
	"ErrUnsupported":    ErrUnsupported,
	"ErrStreamGap":      ErrStreamGap,
	"ErrPoisonRecord":   ErrPoisonRecord,
	"ErrStreamRecord":   ErrStreamRecord,
	"ErrMalformedItem":  ErrMalformedItem,
	"ErrDynamoDB":       ErrDynamoDB,
}

// erStreamSentinels are the sentinels that only package stream returns:
// package stream's TestErrorsMatchOneSentinel (stream/errors_test.go) makes
// each happen through a real failing call, and TestErrorSentinelsAllListed
// checks that its list, stStreamSentinels, is this one.
var erStreamSentinels = []string{"ErrPoisonRecord", "ErrStreamGap", "ErrStreamRecord"}

// erSchemaSentinels are the sentinels that only package schema returns (and
// package stream, whose consumer reports a table without a stream as a
// *schema.Error): package schema's TestErrorsMatchOneSentinel
// (schema/errors_test.go) makes each happen through a real failing call,
// and TestErrorSentinelsAllListed checks that its list, scSchemaSentinels,
// is this one.
var erSchemaSentinels = []string{"ErrSchemaMismatch"}

// erMatched lists the names of the sentinels err matches, sorted.
func erMatched(err error) []string {
	var out []string
	for name, s := range erSentinels {
		if errors.Is(err, s) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// erItem is a versioned model with a GSI and an index table.
type erItem struct {
	_     TableSpec `ddbindex:"er-items,pk=PK,sk=SK"`
	_     IndexSpec `ddbindex:"by_rank,type=gsi,pk=GPK,sk=GSK"`
	_     IndexSpec `ddbindex:"by_title,type=table"`
	Team  string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_rank.pk;by_title.pk"`
	ID    string    `dynamodbav:"id" ddbindex:"sk,label=ITEM"`
	Rank  int64     `dynamodbav:"rank" ddbindex:"by_rank.sk"`
	Title string    `dynamodbav:"title" ddbindex:"by_title.sk"`
	Ver   int64     `dynamodbav:"ver" ddbindex:"version"`
}

// erBadDecl declares a sort component twice at one position.
type erBadDecl struct {
	_ TableSpec `ddbindex:"er-bad,pk=PK,sk=SK"`
	A string    `dynamodbav:"a" ddbindex:"pk"`
	B string    `dynamodbav:"b" ddbindex:"sk:0"`
	C string    `dynamodbav:"c" ddbindex:"sk:0"`
}

// erTomb is soft-deleted, with a field tagged ddbindex:"deleted" that has
// an attribute name.
type erTomb struct {
	_    TableSpec `ddbindex:"er-tombs,pk=PK,sk=SK,softdelete"`
	Team string    `dynamodbav:"team" ddbindex:"pk,label=TEAM"`
	ID   string    `dynamodbav:"id" ddbindex:"sk,label=ITEM"`
	Ver  int64     `dynamodbav:"ver" ddbindex:"version"`
	Gone bool      `dynamodbav:"gone" ddbindex:"deleted"`
}

// erBadTomb's deleted field is no bool.
type erBadTomb struct {
	_    TableSpec `ddbindex:"er-bad-tombs,softdelete"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Gone string    `dynamodbav:"gone" ddbindex:"deleted"`
}

// erQueryFake answers Query with query; any other call fails the test.
type erQueryFake struct {
	t     *testing.T
	query func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
}

func (f erQueryFake) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return f.query(in)
}
func (f erQueryFake) fail(op string) error {
	f.t.Errorf("erQueryFake: unexpected %s", op)
	return errors.New("erQueryFake: unexpected " + op)
}
func (f erQueryFake) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, f.fail("GetItem")
}
func (f erQueryFake) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, f.fail("BatchGetItem")
}
func (f erQueryFake) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, f.fail("PutItem")
}
func (f erQueryFake) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, f.fail("UpdateItem")
}
func (f erQueryFake) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, f.fail("DeleteItem")
}
func (f erQueryFake) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, f.fail("TransactWriteItems")
}

// erKey is the stored base key of item.
func erKey(t *testing.T, item erItem) map[string]types.AttributeValue {
	t.Helper()
	tb, err := New[erItem](nil)
	require.NoError(t, err)
	av, err := tb.Marshal(item)
	require.NoError(t, err)
	return map[string]types.AttributeValue{"PK": av["PK"], "SK": av["SK"]}
}

// erCase is one real failing call: the sentinel its error must match (and
// no other), and the error type errors.As must find in it.
type erCase struct {
	name string
	want string
	as   any // a **T for errors.As; nil when the error has no type of its own
	call func(t *testing.T) error
}

// erCases returns, for every sentinel, calls that fail with it. Each call
// is a public operation failing as it does in use; only a transport error
// and DynamoDB's partial BatchGetItem answers (which local servers never
// give) need a fake, and then the failure comes from the fault-injecting
// transport or the SDK, or from a fake of the documented answer (gtPartial).
func erCases() []erCase {
	return []erCase{
		{"a broken declaration", "ErrDeclaration", new(*Error), func(t *testing.T) error {
			_, err := New[erBadDecl](nil)
			return err
		}},
		{"negative options", "ErrDeclaration", new(*Error), func(t *testing.T) error {
			_, err := New[erItem](nil, func(o *Options) { o.MaxCursorBytes = -1 })
			return err
		}},
		{"a deleted field that is no bool", "ErrDeclaration", new(*Error), func(t *testing.T) error {
			_, err := New[erBadTomb](nil)
			return err
		}},
		{"a query of an undeclared index", "ErrInvalidQuery", new(*Error), func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Query("nope", "T").Page(t.Context())
			return err
		}},
		{"a condition value of the wrong type", "ErrInvalidQuery", new(*Error), func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Query("by_rank", "T").Where(Eq("not a number")).Page(t.Context())
			return err
		}},
		{"EncodeKey of NaN", "ErrInvalidKey", nil, func(t *testing.T) error {
			_, err := EncodeKey("a", math.NaN())
			return err
		}},
		{"KeyPrefix of a string that is not UTF-8", "ErrInvalidKey", nil, func(t *testing.T) error {
			_, err := KeyPrefix("\xff")
			return err
		}},
		{"DecodeKey of a malformed integer text", "ErrInvalidKey", nil, func(t *testing.T) error {
			var n int64
			return DecodeKey("z9", &n)
		}},
		{"DecodeKey into a non-pointer", "ErrInvalidKey", nil, func(t *testing.T) error {
			return DecodeKey("a", "not a pointer")
		}},
		{"SplitKey of a bad escape", "ErrInvalidKey", nil, func(t *testing.T) error {
			_, err := SplitKey("a$ZZ")
			return err
		}},
		{"a tampered cursor", "ErrInvalidCursor", new(*Error), func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Query("", "T").After("!!not a cursor").Page(t.Context())
			return err
		}},
		{"a position that does not advance", "ErrNoProgress", nil, func(t *testing.T) error {
			k := erKey(t, erItem{Team: "T", ID: "1"})
			tb, err := New[erItem](erQueryFake{t: t, query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				return &dynamodb.QueryOutput{LastEvaluatedKey: k}, nil // the same key every time
			}})
			require.NoError(t, err)
			_, err = tb.Query("", "T").Page(t.Context())
			return err
		}},
		{"MaxRequests", "ErrCapReached", new(*Error), func(t *testing.T) error {
			n := 0
			tb, err := New[erItem](erQueryFake{t: t, query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				n++
				return &dynamodb.QueryOutput{LastEvaluatedKey: erKey(t, erItem{Team: "T", ID: string(rune('a' + n))})}, nil
			}})
			require.NoError(t, err)
			_, err = tb.Query("", "T").MaxRequests(1).Page(t.Context())
			return err
		}},
		{"a Get of an item that is not stored", "ErrNotFound", nil, func(t *testing.T) error {
			tb, _ := newTestTable[erItem](t)
			_, err := tb.Get(t.Context(), erItem{Team: "T", ID: "absent"})
			return err
		}},
		{"a Put that loses to another", "ErrConflict", new(*Error), func(t *testing.T) error {
			tb, _ := newTestTable[erItem](t)
			it := erItem{Team: "T", ID: "1", Rank: 1, Title: "a"}
			_, err := tb.Put(t.Context(), it)
			require.NoError(t, err)
			_, err = tb.Put(t.Context(), it) // version 0 again: the item exists
			var ce *Error
			require.ErrorAs(t, err, &ce)
			var ccf *types.ConditionalCheckFailedException
			require.ErrorAs(t, err, &ccf, "the SDK's error is the conflict's cause")
			require.NotErrorIs(t, ce.Err, ErrDynamoDB, "the cause is the SDK's error, not an *Error")
			return err
		}},
		{"an Update of a deleted item", "ErrConflict", new(*Error), func(t *testing.T) error {
			tb, _ := newTestTable[erTomb](t)
			it, err := tb.Put(t.Context(), erTomb{Team: "T", ID: "1"})
			require.NoError(t, err)
			require.NoError(t, tb.Delete(t.Context(), it))
			return tb.Update(t.Context(), erTomb{Team: "T", ID: "1"}, Set("other", 1))
		}},
		{"an Update that loses the derived-key race twice", "ErrConflict", new(*Error), func(t *testing.T) error {
			tb, c := newTestTable[upTicket](t)
			h, hc := hooked(t, tb, c)
			it, err := tb.Put(t.Context(), upTicket{Team: "T", ID: "1", Status: "open", Opened: upT0, Queue: "Q", Prio: 1})
			require.NoError(t, err)
			hc.beforeUpdate = func(n int) { // another writer changes a component Update read, before each attempt
				require.NoError(t, tb.Update(t.Context(), upKey(it), Set("prio", 1+n)))
			}
			err = h.Update(t.Context(), upKey(it), Set("status", "closed"))
			require.Equal(t, 2, hc.updates, "one retry, then the conflict")
			var ce *Error
			require.ErrorAs(t, err, &ce)
			var ccf *types.ConditionalCheckFailedException
			require.ErrorAs(t, err, &ccf, "the SDK's error is the conflict's cause")
			require.NotErrorIs(t, ce.Err, ErrDynamoDB, "the cause is the SDK's error, not an *Error")
			return err
		}},
		{"an Update of a derived GSI key attribute", "ErrKeyChange", nil, func(t *testing.T) error {
			tb, err := New[upTicket](nil)
			require.NoError(t, err)
			return tb.Update(t.Context(), upTicket{Team: "T", ID: "1"}, Set("GSK", "x"))
		}},
		{"an Update of a base key component", "ErrKeyChange", nil, func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			return tb.Update(t.Context(), erItem{Team: "T", ID: "1"}, Set("id", "2"))
		}},
		{"a write-through transaction over 100 actions", "ErrTooManyActions", nil, func(t *testing.T) error {
			c := ddbtest.Client(t)
			prefix := ddbtest.Name(t, "")
			tb, err := New[wrMany](c, wrWriteThrough, func(o *Options) { o.TableName = func(s string) string { return prefix + "-" + s } })
			require.NoError(t, err)
			ddbtest.CreateTable(t, c, tableInputs(tb, false)[0])
			old := wrMany{Team: "T", ID: "1", Rank: 1}
			putBase(t, tb, old)
			old.Rank = 2 // every entry moves: 50 puts, 50 tombstones, the base item
			_, err = tb.Put(t.Context(), old)
			return err
		}},
		{"a Move to the same key", "ErrInvalidWrite", nil, func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			it := erItem{Team: "T", ID: "1", Ver: 1}
			_, err = tb.Move(t.Context(), it, it)
			return err
		}},
		{"a Put whose index-table key is over the limit", "ErrInvalidWrite", nil, func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Put(t.Context(), erItem{Team: "T", ID: "1", Title: strings.Repeat("x", 1100)})
			return err
		}},
		{"a Put of an item read as deleted", "ErrInvalidWrite", nil, func(t *testing.T) error {
			tb, err := New[erTomb](nil)
			require.NoError(t, err)
			_, err = tb.Put(t.Context(), erTomb{Team: "T", ID: "1", Gone: true})
			return err
		}},
		{"an Update of the deleted field", "ErrInvalidWrite", nil, func(t *testing.T) error {
			tb, err := New[erTomb](nil)
			require.NoError(t, err)
			return tb.Update(t.Context(), erTomb{Team: "T", ID: "1"}, Set("gone", false))
		}},
		{"a change with a malformed version", "ErrInvalidWrite", nil, func(t *testing.T) error {
			tb, err := New[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Apply(t.Context(), []Change{{Version: "v1"}})
			return err
		}},
		{"Update with index tables written through", "ErrUnsupported", nil, func(t *testing.T) error {
			tb, err := New[erItem](nil, wrWriteThrough)
			require.NoError(t, err)
			return tb.Update(t.Context(), erItem{Team: "T", ID: "1"}, Set("other", 1))
		}},
		{"a write on a read-only table", "ErrUnsupported", nil, func(t *testing.T) error {
			tb, err := NewReadOnly[erItem](nil)
			require.NoError(t, err)
			_, err = tb.Put(t.Context(), erItem{Team: "T", ID: "1"})
			return err
		}},
		{"an item that does not unmarshal", "ErrMalformedItem", nil, func(t *testing.T) error {
			tb, c := newTestTable[erItem](t)
			av, err := tb.Marshal(erItem{Team: "T", ID: "1", Rank: 1})
			require.NoError(t, err)
			av["rank"] = &types.AttributeValueMemberS{Value: "seven"} // not a number
			_, err = c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: av})
			require.NoError(t, err)
			_, err = tb.Query("", "T").Page(t.Context())
			return err
		}},
		{"an Update whose stored key component does not decode", "ErrMalformedItem", nil, func(t *testing.T) error {
			tb, c := newTestTable[upTicket](t)
			av, err := tb.Marshal(upTicket{Team: "T", ID: "1", Status: "open", Opened: upT0, Queue: "Q", Prio: 1})
			require.NoError(t, err)
			av["opened"] = &types.AttributeValueMemberS{Value: "soon"} // no time
			_, err = c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: av})
			require.NoError(t, err)
			// status and opened make by_status's derived sort key: Update
			// reads opened to compute it.
			return tb.Update(t.Context(), upTicket{Team: "T", ID: "1"}, Set("status", "closed"))
		}},
		{"an item whose keys do not decode", "ErrMalformedItem", nil, func(t *testing.T) error {
			// A server's answer (a fake's: a page is read to its end, so
			// no LastEvaluatedKey names the item) holding an item whose sort
			// key's escape is cut short.
			good := erKey(t, erItem{Team: "T", ID: "1"})
			bad := erKey(t, erItem{Team: "T", ID: "2"})
			bad["SK"] = &types.AttributeValueMemberS{Value: "ITEM#2$"}
			tb, err := New[erItem](erQueryFake{t: t, query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				return &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{good, bad}, Count: 2, ScannedCount: 2}, nil
			}})
			require.NoError(t, err)
			_, err = tb.Query("", "T").Limit(1).Page(t.Context()) // the look-ahead item's position goes into the cursor
			return err
		}},
		{"a throttled Query", "ErrDynamoDB", new(*Error), func(t *testing.T) error {
			name := ddbtest.Name(t, "throttled")
			tb, err := New[erItem](nil, func(o *Options) { o.TableName = func(s string) string { return name + "-" + s } })
			require.NoError(t, err)
			db, _, _ := ddbtest.Faulty(t, faults.Script(map[string][]faults.Kind{"Query": {faults.Throttle}}), ddbtest.NoQuotaRetryer(1))
			ft := *tb
			ft.client = calls{db}
			_, err = ft.Query("by_rank", "T").Page(t.Context())
			var ce *Error
			require.ErrorAs(t, err, &ce)
			// A throttle without reasons (the fault transport's default, as
			// a server that sends none) has one empty entry.
			require.Equal(t, Error{Sentinel: ErrDynamoDB, Op: "Query", Table: tb.TableName(), Index: "by_rank", Throttles: []types.ThrottlingReason{{}}, Err: ce.Err}, *ce)
			require.True(t, IsTransient(ce), "throttling is transient")
			require.True(t, IsTransient(err))
			var ae smithy.APIError
			require.ErrorAs(t, err, &ae, "the SDK's error is still there")
			require.Equal(t, "ProvisionedThroughputExceededException", ae.ErrorCode())
			return err
		}},
		{"a Put to a missing table", "ErrDynamoDB", new(*Error), func(t *testing.T) error {
			name := ddbtest.Name(t, "missing")
			tb, err := New[erItem](ddbtest.Client(t), func(o *Options) { o.TableName = func(s string) string { return name + "-" + s } })
			require.NoError(t, err)
			_, err = tb.Put(t.Context(), erItem{Team: "T", ID: "1"})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "PutItem", ce.Op)
			require.False(t, IsTransient(ce), "a missing table stays missing")
			require.False(t, IsTransient(err))
			var nf *types.ResourceNotFoundException
			require.ErrorAs(t, err, &nf, "the SDK's error is still there")
			return err
		}},
		{"a read-only table's Get of a missing table", "ErrDynamoDB", new(*Error), func(t *testing.T) error {
			name := ddbtest.Name(t, "missing")
			tb, err := NewReadOnly[erItem](&roClient{c: ddbtest.Client(t)}, func(o *Options) { o.TableName = func(s string) string { return name + "-" + s } })
			require.NoError(t, err)
			_, err = tb.Get(t.Context(), erItem{Team: "T", ID: "1"})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, Error{Sentinel: ErrDynamoDB, Op: "GetItem", Table: tb.TableName(), Err: ce.Err}, *ce)
			var nf *types.ResourceNotFoundException
			require.ErrorAs(t, err, &nf, "the SDK's error is still there")
			return err
		}},
		{"BatchGet keys left unprocessed", "ErrDynamoDB", new(*unprocessedError), func(t *testing.T) error {
			tb, c := newTestTable[erItem](t, func(o *Options) { o.Retry = RetryOptions{MaxAttempts: 2, BaseDelay: time.Microsecond} })
			tb.client = calls{&gtPartial{Client: c, serve: 0}} // DynamoDB's documented partial answer
			_, err := tb.BatchGet(t.Context(), []erItem{{Team: "T", ID: "1"}, {Team: "T", ID: "2"}})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "BatchGetItem", ce.Op)
			require.Equal(t, tb.TableName(), ce.Table)
			require.True(t, IsTransient(ce), "unprocessed keys are worth asking for later")
			require.True(t, IsTransient(err))
			return err
		}},
		{"an Update that adds to a number, answered with a 5xx", "ErrOutcomeUnknown", new(*Error), func(t *testing.T) error {
			f, c, _ := rtTables[rtCounter](t, faults.Script(map[string][]faults.Kind{"UpdateItem": {faults.ServerError}}))
			_, err := c.Put(t.Context(), rtCounter{ID: "c"})
			require.NoError(t, err)
			err = f.Update(t.Context(), rtCounter{ID: "c"}, Add("n", 1))
			require.False(t, IsTransient(err))
			return err
		}},
		{"a canceled context", "ErrDynamoDB", new(*Error), func(t *testing.T) error {
			tb, err := New[erItem](ddbtest.Client(t))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err = tb.Query("", "T").Page(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.False(t, IsTransient(err))
			return err
		}},
	}
}

// TestErrorsMatchOneSentinel makes every sentinel happen through a real
// failing call (but those of erStreamSentinels and erSchemaSentinels:
// packages stream and schema have the same test for them), and checks that the error matches that sentinel alone,
// that Code gives its code, and that errors.As finds the error's type.
func TestErrorsMatchOneSentinel(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range erCases() {
		covered[c.want] = true
		if c.as != nil {
			covered[reflect.TypeOf(c.as).Elem().Elem().Name()] = true
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.call(t)
			require.Error(t, err)
			require.Equal(t, []string{c.want}, erMatched(err), "%v", err)
			code := erSentinels[c.want].(*codedError).code
			require.Equal(t, code, Code(err), "%v", err)
			require.Contains(t, err.Error(), "["+code+"]", "the message shows the code")
			if c.as != nil {
				require.ErrorAs(t, err, c.as)
			}
		})
	}
	for name := range erSentinels {
		if slices.Contains(erStreamSentinels, name) || slices.Contains(erSchemaSentinels, name) {
			require.False(t, covered[name], "erCases covers %s: take it out of erStreamSentinels or erSchemaSentinels", name)
			continue
		}
		require.True(t, covered[name], "no call in erCases fails with %s", name)
	}
	for _, typ := range erErrorTypes(t) {
		require.True(t, covered[typ], "no call in erCases returns a *%s", typ)
	}
}

// erErrorTypes lists the package's error types: the types with an Error
// method, in its non-test files, but the sentinels' own type. It checks
// that each has a Code method and an Is method.
func erErrorTypes(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	methods := map[string]map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			id, ok := typ.(*ast.Ident)
			if !ok {
				continue
			}
			if methods[id.Name] == nil {
				methods[id.Name] = map[string]bool{}
			}
			methods[id.Name][fd.Name.Name] = true
		}
	}
	var out []string
	for typ, m := range methods {
		if !m["Error"] {
			continue
		}
		require.True(t, m["Code"], "%s has an Error method but no Code method: Code(err) would not find its code", typ)
		if typ == "codedError" {
			continue
		}
		require.True(t, m["Is"], "%s has an Error method but no Is method: it would match no sentinel", typ)
		out = append(out, typ)
	}
	slices.Sort(out)
	require.NotEmpty(t, out)
	return out
}

// TestErrorSentinelsAllListed reads the sentinels from errors.go itself, so
// a sentinel added there without a case here fails.
func TestErrorSentinelsAllListed(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	codes := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(name.Name, "Err") {
					declared = append(declared, name.Name)
				}
			}
		}
	}
	slices.Sort(declared)
	var listed []string
	for name, s := range erSentinels {
		listed = append(listed, name)
		code := Code(s)
		require.Regexp(t, `^DDBX-\d{3}$`, code, name)
		require.Empty(t, codes[code], "%s and %s share code %s", name, codes[code], code)
		codes[code] = name
	}
	slices.Sort(listed)
	require.Equal(t, declared, listed, "erSentinels must list every sentinel of errors.go")
	for _, name := range slices.Concat(erStreamSentinels, erSchemaSentinels) {
		require.Contains(t, listed, name, "erStreamSentinels and erSchemaSentinels name sentinels of errors.go")
	}
	require.Equal(t, erStreamSentinels, erStringList(t, filepath.Join("stream", "errors_test.go"), "stStreamSentinels"),
		"package stream's test must cover the sentinels this package's leaves to it")
	require.Equal(t, erSchemaSentinels, erStringList(t, filepath.Join("schema", "errors_test.go"), "scSchemaSentinels"),
		"package schema's test must cover the sentinels this package's leaves to it")
	// Packages stream and schema keep their own copy of erSentinels, to
	// check that each error of theirs matches one sentinel alone.
	for file, name := range map[string]string{
		filepath.Join("stream", "errors_test.go"): "stSentinels",
		filepath.Join("schema", "errors_test.go"): "scSentinels",
	} {
		require.Equal(t, declared, erMapKeys(t, file, name), "%s in %s must list every sentinel of errors.go", name, file)
	}
}

// erMapKeys reads, from a Go file, the string keys of the package-level
// variable name, declared as a map literal, sorted.
func erMapKeys(t *testing.T, file, name string) []string {
	t.Helper()
	lit := erVarLiteral(t, file, name)
	var out []string
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		require.True(t, ok, "%s in %s is not a map literal", name, file)
		bl, ok := kv.Key.(*ast.BasicLit)
		require.True(t, ok && bl.Kind == token.STRING, "%s in %s has a non-string key", name, file)
		k, err := strconv.Unquote(bl.Value)
		require.NoError(t, err)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// erStringList reads, from a Go file, the strings of the package-level
// variable name, declared as a []string literal.
func erStringList(t *testing.T, file, name string) []string {
	t.Helper()
	lit := erVarLiteral(t, file, name)
	var out []string
	for _, e := range lit.Elts {
		bl, ok := e.(*ast.BasicLit)
		require.True(t, ok && bl.Kind == token.STRING, "%s in %s holds a non-string", name, file)
		v, err := strconv.Unquote(bl.Value)
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}

// erVarLiteral returns, from a Go file, the composite literal that the
// package-level variable name is declared as.
func erVarLiteral(t *testing.T, file, name string) *ast.CompositeLit {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || vs.Names[0].Name != name || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.CompositeLit)
			require.True(t, ok, "%s in %s is not a literal", name, file)
			return lit
		}
	}
	t.Fatalf("no variable %s in %s", name, file)
	return nil
}

// TestCodeFindsTheFirstCode: Code reads the first error of the chain that
// has a code, through any wrapping, and nothing else.
func TestCodeFindsTheFirstCode(t *testing.T) {
	t.Parallel()
	require.Empty(t, Code(nil))
	require.Empty(t, Code(errors.New("plain")))
	require.Empty(t, Code(&smithy.GenericAPIError{Code: "ThrottlingException"}), "an AWS error code is not a ddbindex code")
	call := &Error{Sentinel: ErrDynamoDB, Op: "Query", Err: &Error{Sentinel: ErrConflict, Op: "put"}}
	require.Equal(t, "DDBX-900", Code(call), "the outer code, not the cause's")
	require.Equal(t, "DDBX-600", Code(errors.Join(errors.New("x"), &Error{Sentinel: ErrConflict, Op: "put"})))
	require.Equal(t, "DDBX-300", Code(errors.Join(cursorErr(nil, "x"), ErrConflict)), "the first in the chain")
	require.Equal(t, "DDBX-201", Code(ErrInvalidKey))
}

// FuzzKeyCodecErrors: whatever EncodeKey, KeyPrefix, DecodeKey and SplitKey
// refuse, they refuse with ErrInvalidKey alone.
func FuzzKeyCodecErrors(f *testing.F) {
	f.Add("open#b42#TICKET$238842", "open", int64(42), 1.5, []byte{0})
	f.Add("a$ZZ", "\xff", int64(-1), math.NaN(), []byte(nil))
	f.Add("Z8#", "x#y", int64(0), math.Inf(1), []byte("#"))
	f.Add("#", "", int64(math.MinInt64), math.Copysign(0, -1), []byte{})
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		require.Equal(t, []string{"ErrInvalidKey"}, erMatched(err), "%s: %v", what, err)
		require.Equal(t, "DDBX-201", Code(err), what)
	}
	f.Fuzz(func(t *testing.T, key, s string, n int64, x float64, b []byte) {
		_, err := EncodeKey(s, n, x, b)
		check(t, "EncodeKey", err)
		_, err = KeyPrefix(s, x)
		check(t, "KeyPrefix", err)
		var (
			ds string
			dn int64
			du uint8
			dx float64
			dt time.Time
			db []byte
		)
		for _, into := range [][]any{{&ds}, {&dn}, {&du}, {&dx}, {&dt}, {&db}, {&ds, &dn}, {&dx, &db, &ds}} {
			check(t, "DecodeKey", DecodeKey(key, into...))
		}
		_, err = SplitKey(key)
		check(t, "SplitKey", err)
	})
}

package stream

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/schema"
)

// stSentinels is every sentinel of ddbindex's errors.go by name, to check
// that an error of this package matches one alone.
// The root package's TestErrorSentinelsAllListed keeps it complete.
var stSentinels = map[string]error{
	"ErrDeclaration":    ddbindex.ErrDeclaration,
	"ErrInvalidQuery":   ddbindex.ErrInvalidQuery,
	"ErrInvalidKey":     ddbindex.ErrInvalidKey,
	"ErrInvalidCursor":  ddbindex.ErrInvalidCursor,
	"ErrNoProgress":     ddbindex.ErrNoProgress,
	"ErrCapReached":     ddbindex.ErrCapReached,
	"ErrNotFound":       ddbindex.ErrNotFound,
	"ErrSchemaMismatch": ddbindex.ErrSchemaMismatch,
	"ErrConflict":       ddbindex.ErrConflict,
	"ErrKeyChange":      ddbindex.ErrKeyChange,
	"ErrTooManyActions": ddbindex.ErrTooManyActions,
	"ErrInvalidWrite":   ddbindex.ErrInvalidWrite,
	"ErrOutcomeUnknown": ddbindex.ErrOutcomeUnknown,
	"ErrUnsupported":    ddbindex.ErrUnsupported,
	"ErrStreamGap":      ddbindex.ErrStreamGap,
	"ErrPoisonRecord":   ddbindex.ErrPoisonRecord,
	"ErrStreamRecord":   ddbindex.ErrStreamRecord,
	"ErrMalformedItem":  ddbindex.ErrMalformedItem,
	"ErrDynamoDB":       ddbindex.ErrDynamoDB,
}

// stStreamSentinels are the sentinels only this package returns: the root
// package's TestErrorsMatchOneSentinel leaves them to this package's, and
// its TestErrorSentinelsAllListed checks that this list is its own
// erStreamSentinels.
var stStreamSentinels = []string{"ErrPoisonRecord", "ErrStreamGap", "ErrStreamRecord"}

// stMatched lists the names of the sentinels err matches, sorted.
func stMatched(err error) []string {
	var out []string
	for name, s := range stSentinels {
		if errors.Is(err, s) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// stUnreachableCheckpoints is a checkpoint store that cannot be reached.
type stUnreachableCheckpoints struct{}

var errStUnreachable = errors.New("stUnreachableCheckpoints: unreachable")

func (stUnreachableCheckpoints) Checkpoint(context.Context, string) (string, error) {
	return "", errStUnreachable
}
func (stUnreachableCheckpoints) SetCheckpoint(context.Context, string, string) error {
	return errStUnreachable
}

// stNoStreams answers ListStreams as DynamoDB Streams does for a table
// without a stream: with no streams.
type stNoStreams struct{ StreamsAPI }

func (stNoStreams) ListStreams(context.Context, *dynamodbstreams.ListStreamsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.ListStreamsOutput, error) {
	return &dynamodbstreams.ListStreamsOutput{}, nil
}

// stErrCase is one real failing call: the sentinel its error must match (and
// no other, but for a poison record, which also matches its cause's), and
// the error type errors.As must find in it.
type stErrCase struct {
	name string
	want string
	as   any // a **T for errors.As; nil when the error has no type of its own
	call func(t *testing.T) error
}

// stErrCases returns calls of this package that fail with each sentinel of
// stStreamSentinels, and with the root package's sentinels it also returns.
// DynamoDB Streams is the fake of fake_test.go (the local servers cannot
// trim records or refuse a call); the index tables are on the test server.
func stErrCases() []stErrCase {
	return []stErrCase{
		{"records trimmed before they were applied", "ErrStreamGap", new(*GapError), func(t *testing.T) error {
			tb, fs := fsSetup(t)
			fs.shard("s1", "")
			for i := range 3 {
				it := fsTicket(i)
				fs.add(t, "s1", nil, &it)
			}
			fs.trim("s1", 2)
			cp := &MemoryCheckpoints{}
			require.NoError(t, cp.SetCheckpoint(t.Context(), "s1", fs.seqs("s1")[0]))
			_, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast})).Poll(t.Context())
			var trimmed *streamtypes.TrimmedDataAccessException
			require.ErrorAs(t, err, &trimmed, "the cause")
			return err
		}},
		{"a record of an unknown event", "ErrPoisonRecord", new(*PoisonRecordError), func(t *testing.T) error {
			tb, fs := fsSetup(t)
			fs.shard("s1", "")
			fs.addRaw("s1", streamtypes.Record{EventName: "UPSERT"})
			_, err := newConsumer(t, tb, fs, &MemoryCheckpoints{}, with(ConsumerOptions{Retry: fast})).Poll(t.Context())
			return err
		}},
		{"ChangeFromRecord of a record without a sequence number", "ErrStreamRecord", nil, func(t *testing.T) error {
			_, err := ChangeFromRecord(streamtypes.Record{EventName: "INSERT", Dynamodb: &streamtypes.StreamRecord{}})
			return err
		}},
		{"ApplyLambdaEvent of a KEYS_ONLY record", "ErrStreamRecord", nil, func(t *testing.T) error {
			tb, err := ddbindex.New[stTicket](nil)
			require.NoError(t, err)
			r := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1", StreamViewType: "KEYS_ONLY"}}
			_, err = ApplyLambdaEvent(t.Context(), tb, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}})
			return err
		}},
		{"a table without a stream", "ErrSchemaMismatch", new(*schema.Error), func(t *testing.T) error {
			tb, err := ddbindex.New[stTicket](nil)
			require.NoError(t, err)
			_, err = newConsumer(t, tb, stNoStreams{}, &MemoryCheckpoints{}).Poll(t.Context())
			return err
		}},
		{"ApplyLambdaEvent without a table", "ErrInvalidWrite", nil, func(t *testing.T) error {
			_, err := ApplyLambdaEvent[stTicket](t.Context(), nil, events.DynamoDBEvent{})
			return err
		}},
		{"a GetRecords that DynamoDB Streams refuses", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, fs := fsSetup(t)
			fs.shard("s1", "")
			it := fsTicket(1)
			fs.add(t, "s1", nil, &it)
			fs.failNext("GetRecords", &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no", Fault: smithy.FaultClient})
			_, err := newConsumer(t, tb, fs, &MemoryCheckpoints{}, with(ConsumerOptions{Retry: fast})).Poll(t.Context())
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "GetRecords", ce.Op)
			require.False(t, ddbindex.IsTransient(ce))
			var ae smithy.APIError
			require.ErrorAs(t, err, &ae, "the SDK's error is still there")
			return err
		}},
		{"a checkpoint store that fails", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, fs := fsSetup(t)
			fs.shard("s1", "")
			it := fsTicket(1)
			fs.add(t, "s1", nil, &it)
			_, err := newConsumer(t, tb, fs, stUnreachableCheckpoints{}, with(ConsumerOptions{Retry: fast})).Poll(t.Context())
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "Checkpoint", ce.Op)
			require.ErrorIs(t, err, errStUnreachable)
			return err
		}},
		{"shards whose parents form a cycle", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, err := ddbindex.New[stTicket](nil)
			require.NoError(t, err)
			api := &stShardStreams{pages: [][]streamtypes.Shard{{
				{ShardId: aws.String("a"), ParentShardId: aws.String("b")},
				{ShardId: aws.String("b"), ParentShardId: aws.String("a")},
			}}}
			_, err = newConsumer(t, tb, api, &MemoryCheckpoints{}, with(ConsumerOptions{StreamARN: "arn:stream"})).Poll(t.Context())
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "DescribeStream", ce.Op)
			require.ErrorContains(t, err, "shard cycle")
			return err
		}},
	}
}

// TestErrorsMatchOneSentinel makes every sentinel of stStreamSentinels happen
// through a real failing call of this package, as the root package's test of
// the same name does for the others, and checks that each error matches its
// sentinel alone (a poison record: its own and its cause's), that
// ddbindex.Code gives its code, and that errors.As finds its type; every
// error type of this package must be among them.
func TestErrorsMatchOneSentinel(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range stErrCases() {
		covered[c.want] = true
		if c.as != nil {
			covered[reflect.TypeOf(c.as).Elem().Elem().Name()] = true
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.call(t)
			require.Error(t, err)
			want := []string{c.want}
			if p := (*PoisonRecordError)(nil); errors.As(err, &p) {
				// A poison record reports its cause, which matches one
				// sentinel of its own.
				cause := stMatched(p.Err)
				require.Len(t, cause, 1, "the cause %v", p.Err)
				require.NotEqual(t, c.want, cause[0])
				want = append(want, cause[0])
				slices.Sort(want)
			}
			require.Equal(t, want, stMatched(err), "%v", err)
			code := ddbindex.Code(stSentinels[c.want])
			require.Regexp(t, `^DDBX-\d{3}$`, code)
			require.Equal(t, code, ddbindex.Code(err), "%v", err)
			require.Contains(t, err.Error(), "["+code+"]", "the message shows the code")
			if c.as != nil {
				require.ErrorAs(t, err, c.as)
			}
		})
	}
	for _, name := range stStreamSentinels {
		require.True(t, covered[name], "no call in stErrCases fails with %s", name)
	}
	for _, typ := range stErrorTypes(t) {
		require.True(t, covered[typ], "no call in stErrCases returns a *%s", typ)
	}
}

// stErrorTypes lists this package's error types: the types with an Error
// method, in its non-test files. It checks that each has a Code method (so
// that ddbindex.Code finds its code) and an Is method.
func stErrorTypes(t *testing.T) []string {
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
		require.True(t, m["Code"], "%s has an Error method but no Code method: ddbindex.Code(err) would not find its code", typ)
		require.True(t, m["Is"], "%s has an Error method but no Is method: it would match no sentinel", typ)
		out = append(out, typ)
	}
	slices.Sort(out)
	require.NotEmpty(t, out)
	return out
}

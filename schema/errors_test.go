package schema_test

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/schema"
)

// scSentinels is every sentinel of ddbindex's errors.go by name, to check
// that an error of this package matches one alone.
// The root package's TestErrorSentinelsAllListed keeps it complete.
var scSentinels = map[string]error{
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

// scSchemaSentinels are the sentinels only this package returns: the root
// package's TestErrorsMatchOneSentinel leaves them to this package's, and
// its TestErrorSentinelsAllListed checks that this list is its own
// erSchemaSentinels.
var scSchemaSentinels = []string{"ErrSchemaMismatch"}

// scMatched lists the names of the sentinels err matches, sorted.
func scMatched(err error) []string {
	var out []string
	for name, s := range scSentinels {
		if errors.Is(err, s) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// scErrCase is one real failing call: the sentinel its error must match
// (and no other), and the error type errors.As must find in it.
type scErrCase struct {
	name string
	want string
	as   any // a **T for errors.As; nil when the error has no type of its own
	call func(t *testing.T) error
}

// scErrCases returns calls of this package that fail with each sentinel of
// scSchemaSentinels, and with the root package's sentinels it also returns.
func scErrCases() []scErrCase {
	noTable := (*ddbindex.Table[scPlain])(nil)
	plain := func(t *testing.T) *ddbindex.Table[scPlain] {
		tb, err := ddbindex.New[scPlain](nil)
		require.NoError(t, err)
		return tb
	}
	return []scErrCase{
		{"Check of missing tables", "ErrSchemaMismatch", new(*schema.Error), func(t *testing.T) error {
			tb, c := scNewTable[scPlain](t)
			return schema.Check(t.Context(), tb, c)
		}},
		{"Prepare of a missing LSI", "ErrSchemaMismatch", new(*schema.Error), func(t *testing.T) error {
			f := newAWSFake()
			orders, err := ddbindex.New[ppPlain](nil)
			require.NoError(t, err)
			f.put(schema.CreateTableInputs(orders, false)[0])
			tb, err := ddbindex.New[ppWithLSI](nil)
			require.NoError(t, err)
			_, err = schema.Prepare(t.Context(), tb, f)
			return err
		}},
		{"Check without a table", "ErrInvalidQuery", nil, func(t *testing.T) error {
			return schema.Check(t.Context(), noTable, newAWSFake())
		}},
		{"Check without a client", "ErrInvalidQuery", nil, func(t *testing.T) error {
			return schema.Check(t.Context(), plain(t), nil)
		}},
		{"Check with a nil *dynamodb.Client", "ErrInvalidQuery", nil, func(t *testing.T) error {
			return schema.Check(t.Context(), plain(t), (*dynamodb.Client)(nil))
		}},
		{"Check with a nil client option", "ErrInvalidQuery", nil, func(t *testing.T) error {
			return schema.Check(t.Context(), plain(t), newAWSFake(), nil)
		}},
		{"CreateTables without a table", "ErrInvalidWrite", nil, func(t *testing.T) error {
			return schema.CreateTables(t.Context(), noTable, newAWSFake())
		}},
		{"CreateTables without a client", "ErrInvalidWrite", nil, func(t *testing.T) error {
			return schema.CreateTables(t.Context(), plain(t), nil)
		}},
		{"CreateTables with a nil option function", "ErrDeclaration", nil, func(t *testing.T) error {
			return schema.CreateTables(t.Context(), plain(t), newAWSFake(), nil)
		}},
		{"CreateTables with a nil client option", "ErrDeclaration", nil, func(t *testing.T) error {
			return schema.CreateTables(t.Context(), plain(t), newAWSFake(), func(o *schema.CreateOptions) {
				o.ClientOptions = []func(*dynamodb.Options){nil}
			})
		}},
		{"Prepare without a table", "ErrInvalidWrite", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), noTable, newAWSFake())
			return err
		}},
		{"Prepare without a client", "ErrInvalidWrite", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), plain(t), nil)
			return err
		}},
		{"Prepare with a nil option function", "ErrDeclaration", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), plain(t), newAWSFake(), nil)
			return err
		}},
		{"Prepare with a nil client option", "ErrDeclaration", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), plain(t), newAWSFake(), func(o *schema.PrepareOptions) {
				o.ClientOptions = []func(*dynamodb.Options){nil}
			})
			return err
		}},
		{"CreateTables with a negative WaitTimeout", "ErrDeclaration", nil, func(t *testing.T) error {
			return schema.CreateTables(t.Context(), plain(t), newAWSFake(), func(o *schema.CreateOptions) { o.WaitTimeout = -time.Second })
		}},
		{"Prepare with a negative WaitMinDelay", "ErrDeclaration", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), plain(t), newAWSFake(), func(o *schema.PrepareOptions) { o.WaitMinDelay = -time.Millisecond })
			return err
		}},
		{"Prepare with a GSIThroughput of no write capacity", "ErrDeclaration", nil, func(t *testing.T) error {
			_, err := schema.Prepare(t.Context(), plain(t), newAWSFake(), func(o *schema.PrepareOptions) {
				o.GSIThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5)}
			})
			return err
		}},
		{"CreateTables of a table that exists", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, c := scNewTable[scPlain](t)
			require.NoError(t, schema.CreateTables(t.Context(), tb, c))
			err := schema.CreateTables(t.Context(), tb, c)
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "CreateTable", Table: tb.TableName(), Err: ce.Err}, *ce)
			var inUse *types.ResourceInUseException
			require.ErrorAs(t, err, &inUse, "the SDK's error is still there")
			return err
		}},
		{"Check with a canceled context", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, c := scNewTable[scPlain](t)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			err := schema.Check(ctx, tb, c)
			require.ErrorIs(t, err, context.Canceled)
			return err
		}},
	}
}

// TestErrorsMatchOneSentinel makes every sentinel of scSchemaSentinels
// happen through a real failing call of this package, as the root
// package's test of the same name does for the others, and checks that each
// error matches its sentinel alone, that ddbindex.Code gives its code, and
// that errors.As finds its type; every error type of this package must be
// among them.
func TestErrorsMatchOneSentinel(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range scErrCases() {
		covered[c.want] = true
		if c.as != nil {
			covered[reflect.TypeOf(c.as).Elem().Elem().Name()] = true
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.call(t)
			require.Error(t, err)
			require.Equal(t, []string{c.want}, scMatched(err), "%v", err)
			code := ddbindex.Code(scSentinels[c.want])
			require.Regexp(t, `^DDBX-\d{3}$`, code)
			require.Equal(t, code, ddbindex.Code(err), "%v", err)
			require.Contains(t, err.Error(), "["+code+"]", "the message shows the code")
			if c.as != nil {
				require.ErrorAs(t, err, c.as)
			}
		})
	}
	for _, name := range scSchemaSentinels {
		require.True(t, covered[name], "no call in scErrCases fails with %s", name)
	}
	for _, typ := range scErrorTypes(t) {
		require.True(t, covered[typ], "no call in scErrCases returns a *%s", typ)
	}
}

// scErrorTypes lists this package's error types: the types with an Error
// method, in its non-test files. It checks that each has a Code method (so
// that ddbindex.Code finds its code) and an Is method.
func scErrorTypes(t *testing.T) []string {
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

// TestNilArgumentsSendNothing: calls refused for a nil argument send no
// request.
func TestNilArgumentsSendNothing(t *testing.T) {
	t.Parallel()
	f := newAWSFake()
	tb, err := ddbindex.New[scPlain](nil)
	require.NoError(t, err)
	require.Error(t, schema.Check(t.Context(), tb, f, nil))
	require.Error(t, schema.CreateTables(t.Context(), tb, f, nil))
	_, err = schema.Prepare(t.Context(), tb, f, nil)
	require.Error(t, err)
	require.Zero(t, f.calls)
	require.Nil(t, schema.CreateTableInputs[scPlain](nil, true), "a nil table has no tables")
	require.Nil(t, schema.ControlTableInput(""), "an empty name names no control table")
	err = schema.CheckControlTable(t.Context(), "", f)
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, "an empty name names no control table")
	require.Error(t, schema.CheckControlTable(t.Context(), "control", nil))
	require.Error(t, schema.CheckControlTable(t.Context(), "control", f, nil))
	require.Zero(t, f.calls)
}

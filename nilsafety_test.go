package ddbindex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
	"github.com/ddbindex/ddbindex/schema"
)

// nilModel is the model the nil-safety tests instantiate the generic API
// with: a sort key of two components, a version, a tombstone mark and an
// index table, so that a walk reaches the paths those add.
type nilModel struct {
	_ ddbindex.TableSpec `ddbindex:"nil-safety,pk=PK,sk=SK,softdelete"`
	_ ddbindex.IndexSpec `ddbindex:"by_status,type=table"`

	Team    string    `dynamodbav:"team"    ddbindex:"pk;by_status.pk"`
	Status  string    `dynamodbav:"status"  ddbindex:"sk:0;by_status.sk:0"`
	ID      string    `dynamodbav:"id"      ddbindex:"sk:1"`
	Opened  time.Time `dynamodbav:"opened"  ddbindex:"by_status.sk:1"`
	Version int64     `dynamodbav:"version" ddbindex:"version"`
	Deleted bool      `dynamodbav:"deleted" ddbindex:"deleted"`
}

// sentinels are the package's sentinel errors.
var sentinels = []error{
	ddbindex.ErrDeclaration, ddbindex.ErrInvalidQuery, ddbindex.ErrInvalidKey, ddbindex.ErrInvalidCursor,
	ddbindex.ErrNoProgress, ddbindex.ErrCapReached, ddbindex.ErrNotFound, ddbindex.ErrSchemaMismatch,
	ddbindex.ErrConflict, ddbindex.ErrKeyChange, ddbindex.ErrTooManyActions, ddbindex.ErrInvalidWrite,
	ddbindex.ErrUnsupported, ddbindex.ErrStreamGap, ddbindex.ErrPoisonRecord, ddbindex.ErrStreamRecord,
	ddbindex.ErrMalformedItem, ddbindex.ErrDynamoDB,
}

// matched returns the sentinels err matches.
func matched(err error) []error {
	var out []error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			out = append(out, s)
		}
	}
	return out
}

// oneSentinel is the walk's check of the errors calls return: each
// matches exactly one sentinel, and has its code.
func oneSentinel(err error) bool {
	m := matched(err)
	return len(m) == 1 && ddbindex.Code(err) == ddbindex.Code(m[0])
}

// requireSentinel fails unless err matches want, and no other sentinel.
func requireSentinel(t *testing.T, err, want error, what string) {
	t.Helper()
	require.Equal(t, []error{want}, matched(err), "%s: %v", what, err)
}

// TestNilSafety calls every exported function and method of the package
// with zero and nil arguments, on a nil and a zero *Table and on tables
// made from a nil client, and fails on a panic or an error without a code.
// It fails too when an exported function or method is not walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	rw, err := ddbindex.New[nilModel](nil)
	require.NoError(t, err)
	ro, err := ddbindex.NewReadOnly[nilModel](nil)
	require.NoError(t, err)
	through, err := ddbindex.New[nilModel](nil, func(o *ddbindex.Options) { o.WriteThrough = true })
	require.NoError(t, err)

	w := nilwalk.Walker{
		Values: []any{
			rw, ro, through,
			rw.Query(""), ro.Query("by_status", "t"), (*ddbindex.Table[nilModel])(nil).Query("by_status"),
			nilModel{Team: "t", Status: "open", ID: "1", Version: 1}, // a key, so that calls reach the client
		},
		Err: oneSentinel,
	}

	// Keys and conditions.
	w.Walk(t, ddbindex.K)
	w.Walk(t, ddbindex.EncodeKey)
	w.Walk(t, ddbindex.KeyPrefix)
	w.Walk(t, ddbindex.DecodeKey)
	w.Walk(t, ddbindex.SplitKey)
	w.Walk(t, ddbindex.Eq)
	w.Walk(t, ddbindex.Lt)
	w.Walk(t, ddbindex.Le)
	w.Walk(t, ddbindex.Gt)
	w.Walk(t, ddbindex.Ge)
	w.Walk(t, ddbindex.Between)
	w.Walk(t, ddbindex.BeginsWith)
	w.Walk(t, ddbindex.SortCondition.String)
	w.Walk(t, ddbindex.Kind.String)
	w.Walk(t, ddbindex.Set)
	w.Walk(t, ddbindex.Remove)
	w.Walk(t, ddbindex.Add)
	w.Walk(t, ddbindex.Delete)
	w.Walk(t, ddbindex.Update.Set)
	w.Walk(t, ddbindex.Update.Remove)
	w.Walk(t, ddbindex.Update.Add)
	w.Walk(t, ddbindex.Update.Delete)
	w.Walk(t, ddbindex.Request.String)
	w.Walk(t, (*ddbindex.Explanation).String)

	// Errors.
	w.Walk(t, ddbindex.Code)
	w.Walk(t, ddbindex.IsTransient)
	w.Walk(t, (*ddbindex.Error).Code)
	w.Walk(t, (*ddbindex.Error).Error)
	w.Walk(t, (*ddbindex.Error).Is)
	w.Walk(t, (*ddbindex.Error).Unwrap)

	// The table.
	w.Walk(t, ddbindex.New[nilModel])
	w.Walk(t, ddbindex.NewReadOnly[nilModel])
	w.Walk(t, (*ddbindex.Table[nilModel]).TableName)
	w.Walk(t, (*ddbindex.Table[nilModel]).Indexes)
	w.Walk(t, (*ddbindex.Table[nilModel]).Marshal)
	w.Walk(t, (*ddbindex.Table[nilModel]).IndexWrites)
	w.Walk(t, (*ddbindex.Table[nilModel]).Get)
	w.Walk(t, (*ddbindex.Table[nilModel]).BatchGet)
	w.Walk(t, (*ddbindex.Table[nilModel]).Put)
	w.Walk(t, (*ddbindex.Table[nilModel]).Update)
	w.Walk(t, (*ddbindex.Table[nilModel]).Delete)
	w.Walk(t, (*ddbindex.Table[nilModel]).Move)
	w.Walk(t, (*ddbindex.Table[nilModel]).Apply)

	// Queries.
	w.Walk(t, (*ddbindex.Table[nilModel]).Query)
	w.Walk(t, ddbindex.Query[nilModel].Where)
	w.Walk(t, ddbindex.Query[nilModel].Desc)
	w.Walk(t, ddbindex.Query[nilModel].Limit)
	w.Walk(t, ddbindex.Query[nilModel].After)
	w.Walk(t, ddbindex.Query[nilModel].Filter)
	w.Walk(t, ddbindex.Query[nilModel].Project)
	w.Walk(t, ddbindex.Query[nilModel].ConsistentRead)
	w.Walk(t, ddbindex.Query[nilModel].MaxRequests)
	w.Walk(t, ddbindex.Query[nilModel].MaxReadUnits)
	w.Walk(t, ddbindex.Query[nilModel].IncludeDeleted)
	w.Walk(t, ddbindex.Query[nilModel].ReportTo)
	w.Walk(t, ddbindex.Query[nilModel].Via)
	w.Walk(t, ddbindex.Query[nilModel].Page)
	w.Walk(t, ddbindex.Query[nilModel].All)
	w.Walk(t, ddbindex.Query[nilModel].Exists)
	w.Walk(t, ddbindex.Query[nilModel].Explain)

	w.Covers(t, ".")
}

// TestNilSafetySentinels: the misuses a walk makes return an error
// matching the sentinel that fits, and no other: ErrInvalidQuery for a
// read, ErrInvalidWrite for a write, ErrUnsupported for a call that a nil
// client would have to send, ErrDeclaration for a constructor's nil
// option function.
func TestNilSafetySentinels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var m nilModel

	t.Run("zero and nil Table", func(t *testing.T) {
		t.Parallel()
		for name, tb := range map[string]*ddbindex.Table[nilModel]{"zero": new(ddbindex.Table[nilModel]), "nil": nil} {
			require.Empty(t, tb.TableName(), name)
			require.Empty(t, tb.Indexes(), name)

			reads := map[string]error{}
			_, reads["Get"] = tb.Get(ctx, m)
			_, reads["BatchGet"] = tb.BatchGet(ctx, []nilModel{m})
			_, reads["Page"] = tb.Query("").Page(ctx)
			_, reads["Exists"] = tb.Query("by_status", "t").Exists(ctx)
			_, reads["Explain"] = tb.Query("").Explain()
			for _, err := range tb.Query("").All(ctx) {
				reads["All"] = err
			}
			for op, err := range reads {
				requireSentinel(t, err, ddbindex.ErrInvalidQuery, name+" Table's "+op)
			}

			writes := map[string]error{}
			_, writes["Put"] = tb.Put(ctx, m)
			writes["Update"] = tb.Update(ctx, m, ddbindex.Set("x", 1))
			writes["Delete"] = tb.Delete(ctx, m)
			_, writes["Move"] = tb.Move(ctx, m, m)
			_, writes["Apply"] = tb.Apply(ctx, nil)
			_, writes["IndexWrites"] = tb.IndexWrites(ddbindex.Change{})
			_, writes["Marshal"] = tb.Marshal(m)
			for op, err := range writes {
				requireSentinel(t, err, ddbindex.ErrInvalidWrite, name+" Table's "+op)
			}
		}
	})

	t.Run("nil *Table Query Page", func(t *testing.T) {
		t.Parallel()
		var tb *ddbindex.Table[nilModel]
		_, err := tb.Query("by_status", "TEAM-7").Page(ctx)
		requireSentinel(t, err, ddbindex.ErrInvalidQuery, "Page")
		_, err = ddbindex.Query[nilModel]{}.Page(ctx)
		requireSentinel(t, err, ddbindex.ErrInvalidQuery, "Page of a zero Query")
	})

	t.Run("nil client", func(t *testing.T) {
		t.Parallel()
		item := nilModel{Team: "t", Status: "open", ID: "1"}
		rw, err := ddbindex.New[nilModel](nil)
		require.NoError(t, err)
		ro, err := ddbindex.NewReadOnly[nilModel](nil)
		require.NoError(t, err)
		through, err := ddbindex.New[nilModel](nil, func(o *ddbindex.Options) { o.WriteThrough = true })
		require.NoError(t, err)
		for name, tb := range map[string]*ddbindex.Table[nilModel]{"New": rw, "NewReadOnly": ro, "New with WriteThrough": through} {
			_, err = tb.Get(ctx, item)
			requireSentinel(t, err, ddbindex.ErrUnsupported, name+": Get")
			_, err = tb.BatchGet(ctx, []nilModel{item})
			requireSentinel(t, err, ddbindex.ErrUnsupported, name+": BatchGet")
			_, err = tb.Query("", "t").Page(ctx)
			requireSentinel(t, err, ddbindex.ErrUnsupported, name+": Page")
			_, err = tb.Query("by_status", "t").Exists(ctx)
			requireSentinel(t, err, ddbindex.ErrUnsupported, name+": Exists")
			_, err = tb.Put(ctx, item)
			requireSentinel(t, err, ddbindex.ErrUnsupported, name+": Put")
			item.Version = 1
			requireSentinel(t, tb.Delete(ctx, item), ddbindex.ErrUnsupported, name+": Delete")
			_, err = tb.Query("", "t").Explain()
			require.NoError(t, err, name+": Explain sends no request")
		}
	})

	t.Run("nil schema client", func(t *testing.T) {
		t.Parallel()
		tb, err := ddbindex.New[nilModel](nil)
		require.NoError(t, err)
		requireSentinel(t, schema.Check(ctx, tb, nil), ddbindex.ErrInvalidQuery, "schema.Check")
		requireSentinel(t, schema.CreateTables(ctx, tb, nil), ddbindex.ErrInvalidWrite, "schema.CreateTables")
		_, err = schema.Prepare(ctx, tb, nil)
		requireSentinel(t, err, ddbindex.ErrInvalidWrite, "schema.Prepare")
	})

	t.Run("nil option function", func(t *testing.T) {
		t.Parallel()
		_, err := ddbindex.New[nilModel](nil, nil)
		requireSentinel(t, err, ddbindex.ErrDeclaration, "New")
		var decl *ddbindex.Error
		require.ErrorAs(t, err, &decl)
		_, err = ddbindex.NewReadOnly[nilModel](nil, func(*ddbindex.Options) {}, nil)
		requireSentinel(t, err, ddbindex.ErrDeclaration, "NewReadOnly")

		tb, err := ddbindex.New[nilModel](nil)
		require.NoError(t, err)
		_, err = tb.Get(ctx, m, nil)
		requireSentinel(t, err, ddbindex.ErrInvalidQuery, "Get")
		_, err = tb.Put(ctx, m, nil)
		requireSentinel(t, err, ddbindex.ErrInvalidWrite, "Put")
		_, err = tb.Query("").Page(ctx, nil)
		requireSentinel(t, err, ddbindex.ErrInvalidQuery, "Page")
		requireSentinel(t, schema.Check(ctx, tb, unusedSchemaAPI{}, nil), ddbindex.ErrInvalidQuery, "schema.Check")
		requireSentinel(t, schema.CreateTables(ctx, tb, unusedSchemaAPI{}, nil), ddbindex.ErrDeclaration, "schema.CreateTables")
		requireSentinel(t, schema.CreateTables(ctx, tb, unusedSchemaAPI{}, func(o *schema.CreateOptions) {
			o.ClientOptions = append(o.ClientOptions, nil)
		}), ddbindex.ErrDeclaration, "schema.CreateTables with a nil ClientOptions function")
	})
}

// unusedSchemaAPI is a schema.API for calls that fail before a request:
// its methods would panic.
type unusedSchemaAPI struct{ schema.API }

package schema_test

// Tests of what Check reads besides the key schemas: the forms of an index
// that a migration leaves behind, and the entries of a sharded index.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// The steps of a GSI -> index table migration, one declaration each, on the
// same physical tables: the GSI alone; the GSI serving and the table kept;
// the table serving and the GSI kept; the table alone.
type kpStep0 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep1 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep2 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep3 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// kpRead reads the whole by_status partition of team through the given form.
func kpRead[T any](t *testing.T, tb *ddbindex.Table[T], team string, form ddbindex.Kind) []T {
	t.Helper()
	var out []T
	for it, err := range tb.Query("by_status", team).Via(form).All(t.Context()) {
		require.NoError(t, err)
		out = append(out, it)
	}
	return out
}

func kpIDs[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// Both forms of an index in migration exist: the steps that keep both pass
// Check, and the plain flip (a model that no longer keeps the other form,
// whose readers would miss its writes) is found before it ships, as is a
// roll back to the GSI alone.
func TestCheckKeptForms(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.TTL) // the index table's tombstones rely on it
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	writeThrough := func(o *ddbindex.Options) { o.WriteThrough = true } // no stream needed
	s1 := newTestTableNamed[kpStep1](t, c, naming, writeThrough)
	s0, err := ddbindex.New[kpStep0](c, naming, writeThrough)
	require.NoError(t, err)
	s2, err := ddbindex.New[kpStep2](c, naming, writeThrough)
	require.NoError(t, err)
	s3, err := ddbindex.New[kpStep3](c, naming, writeThrough)
	require.NoError(t, err)

	require.NoError(t, schema.Check(ctx, s1, c), "step 1: both forms exist and are kept")
	require.NoError(t, schema.Check(ctx, s2, c), "step 2: both forms exist and are kept")
	err = schema.Check(ctx, s3, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	assert.Contains(t, err.Error(), "keep=gsi")
	assert.Contains(t, err.Error(), "no longer kept")
	err = schema.Check(ctx, s0, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch, "rolling back from step 1 to step 0 stops keeping the table")
	assert.Contains(t, err.Error(), "keep=table")
}

// spreadItem's index table is sharded 16 ways; spread8 is the same model
// with 8 shards, over the same tables.
type spreadItem struct {
	_      ddbindex.TableSpec `ddbindex:"spread"`
	_      ddbindex.IndexSpec `ddbindex:"all,type=table,shards=16"`
	Tenant string             `dynamodbav:"tenant" ddbindex:"pk"`
	Seq    int64              `dynamodbav:"seq"    ddbindex:"sk"`
	Scope  string             `dynamodbav:"scope"  ddbindex:"all.pk"`
	At     int64              `dynamodbav:"at"     ddbindex:"all.sk"`
}

type spread8 struct {
	_      ddbindex.TableSpec `ddbindex:"spread"`
	_      ddbindex.IndexSpec `ddbindex:"all,type=table,shards=8"`
	Tenant string             `dynamodbav:"tenant" ddbindex:"pk"`
	Seq    int64              `dynamodbav:"seq"    ddbindex:"sk"`
	Scope  string             `dynamodbav:"scope"  ddbindex:"all.pk"`
	At     int64              `dynamodbav:"at"     ddbindex:"all.sk"`
}

// TestCheckShards: Check reads a few entries of a sharded index and reports
// entries written under another shards=, which the key schema cannot show;
// the model that wrote them passes.
func TestCheckShards(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	tb8 := newTestTableNamed[spread8](t, c, naming)
	for i := range 20 {
		// The index table's entries, written as the stream consumer does.
		img, err := tb8.Marshal(spread8{Tenant: fmt.Sprint("t", i), Seq: int64(i), Scope: "global", At: int64(i)})
		require.NoError(t, err)
		st, err := tb8.Apply(t.Context(), []ddbindex.Change{{New: img, Version: "1"}})
		require.NoError(t, err)
		require.Equal(t, 1, st.Changes)
	}
	shardProblems := func(err error) []string {
		var se *schema.Error
		if err == nil || !errors.As(err, &se) {
			require.NoError(t, err)
			return nil
		}
		var out []string
		for _, p := range se.Problems {
			if strings.Contains(p, "shards=") {
				out = append(out, p)
			}
		}
		return out
	}
	require.Empty(t, shardProblems(schema.Check(t.Context(), tb8, c)))
	tb16, err := ddbindex.New[spreadItem](c, naming)
	require.NoError(t, err)
	got := shardProblems(schema.Check(t.Context(), tb16, c))
	require.Len(t, got, 1)
	require.Contains(t, got[0], "an entry's key does not fit shards=16")
	require.Contains(t, got[0], "resharding")
}

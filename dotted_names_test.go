package ddbindex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// DynamoDB attribute names may hold dots: the conditions, updates and
// projections ddbindex builds take every attribute name whole, never as a
// document path.

type dottedKey struct {
	_       TableSpec `ddbindex:"dotted-key,softdelete"`
	ID      string    `dynamodbav:"user.id" ddbindex:"pk"`
	Body    string    `dynamodbav:"body"`
	Version int64     `dynamodbav:"meta.v" ddbindex:"version"`
}

func TestDottedNamesCreateOnlyPut(t *testing.T) {
	tb, _ := newTestTable[dottedKey](t)
	ctx := context.Background()
	_, err := tb.Put(ctx, dottedKey{ID: "1", Body: "first"})
	require.NoError(t, err)
	_, err = tb.Put(ctx, dottedKey{ID: "1", Body: "second"})
	require.ErrorIs(t, err, ErrConflict, "a second creation of the key conflicts")
	got, err := tb.Get(ctx, dottedKey{ID: "1"})
	require.NoError(t, err)
	require.Equal(t, "first", got.Body)
}

func TestDottedNamesVersion(t *testing.T) {
	tb, _ := newTestTable[dottedKey](t)
	ctx := context.Background()
	it, err := tb.Put(ctx, dottedKey{ID: "1", Body: "a"})
	require.NoError(t, err)
	require.EqualValues(t, 1, it.Version)
	it.Body = "b"
	it, err = tb.Put(ctx, it)
	require.NoError(t, err, "a Put at the stored version succeeds")
	require.EqualValues(t, 2, it.Version)
	it.Version = 1
	_, err = tb.Put(ctx, it)
	require.ErrorIs(t, err, ErrConflict, "a Put at an older version conflicts")
}

func TestDottedNamesSoftDelete(t *testing.T) {
	tb, _ := newTestTable[dottedKey](t)
	ctx := context.Background()
	it, err := tb.Put(ctx, dottedKey{ID: "1", Body: "a"})
	require.NoError(t, err)
	require.NoError(t, tb.Delete(ctx, it))
	_, err = tb.Get(ctx, dottedKey{ID: "1"})
	require.ErrorIs(t, err, ErrNotFound, "a deleted item is not found")
}

func TestDottedNamesMove(t *testing.T) {
	ddbtest.Require(t, ddbtest.Transactions)
	tb, _ := newTestTable[dottedKey](t)
	ctx := context.Background()
	it, err := tb.Put(ctx, dottedKey{ID: "1", Body: "a"})
	require.NoError(t, err)
	to := it
	to.ID = "2"
	_, err = tb.Move(ctx, it, to)
	require.NoError(t, err)
	_, err = tb.Get(ctx, dottedKey{ID: "1"})
	require.ErrorIs(t, err, ErrNotFound)
	got, err := tb.Get(ctx, dottedKey{ID: "2"})
	require.NoError(t, err)
	require.Equal(t, "a", got.Body)
}

func TestDottedNamesProject(t *testing.T) {
	tb, _ := newTestTable[dottedKey](t)
	ctx := context.Background()
	_, err := tb.Put(ctx, dottedKey{ID: "2", Body: "a"})
	require.NoError(t, err)
	p, err := tb.Query("", "2").Project("body").Page(ctx)
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	require.Equal(t, "2", p.Items[0].ID, "the projection reads the dotted key attribute")
	require.Equal(t, "a", p.Items[0].Body)
}

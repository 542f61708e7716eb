package ddbindex

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/stretchr/testify/require"
)

// The input checks every call makes before it sends anything.

type ciItem struct {
	_       TableSpec `ddbindex:"callinput"`
	_       IndexSpec `ddbindex:"by_s,type=table"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	N       int64     `dynamodbav:"n" ddbindex:"sk"`
	S       string    `dynamodbav:"s" ddbindex:"by_s.pk"`
	Body    string    `dynamodbav:"body"`
	Version int64     `dynamodbav:"version" ddbindex:"version"`
}

// TestNilContextRefused: every method that takes a context refuses a nil
// one with its invalid-input sentinel, without a panic.
func TestNilContextRefused(t *testing.T) {
	t.Parallel()
	tb, err := New[ciItem](nil)
	require.NoError(t, err)
	var nilCtx context.Context
	item := ciItem{ID: "a", N: 1, S: "s", Version: 1}
	for name, c := range map[string]struct {
		call     func() error
		sentinel error
	}{
		"Get":      {func() error { _, err := tb.Get(nilCtx, item); return err }, ErrInvalidQuery},
		"BatchGet": {func() error { _, err := tb.BatchGet(nilCtx, []ciItem{item}); return err }, ErrInvalidQuery},
		"Page":     {func() error { _, err := tb.Query("", "a").Page(nilCtx); return err }, ErrInvalidQuery},
		"All": {func() error {
			for _, err := range tb.Query("", "a").All(nilCtx) {
				return err
			}
			return nil
		}, ErrInvalidQuery},
		"Exists": {func() error { _, err := tb.Query("", "a").Exists(nilCtx); return err }, ErrInvalidQuery},
		"Put":    {func() error { _, err := tb.Put(nilCtx, item); return err }, ErrInvalidWrite},
		"Delete": {func() error { return tb.Delete(nilCtx, item) }, ErrInvalidWrite},
		"Move":   {func() error { to := item; to.ID = "b"; _, err := tb.Move(nilCtx, item, to); return err }, ErrInvalidWrite},
		"Update": {func() error { return tb.Update(nilCtx, item, Update{}) }, ErrInvalidWrite},
		"Apply":  {func() error { _, err := tb.Apply(nilCtx, nil); return err }, ErrInvalidWrite},
	} {
		require.NotPanics(t, func() { err = c.call() }, name)
		require.ErrorIs(t, err, c.sentinel, name)
		require.Contains(t, err.Error(), "nil context", name)
	}
}

// TestNegativeVersionRefused: a negative version is bad input, not a
// conflict at a wrapped-around version.
func TestNegativeVersionRefused(t *testing.T) {
	t.Parallel()
	tb, err := New[ciItem](nil)
	require.NoError(t, err)
	ctx := t.Context()
	item := ciItem{ID: "a", N: 1, S: "s", Version: -1}
	_, err = tb.Put(ctx, item)
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Contains(t, err.Error(), "never negative")
	require.ErrorIs(t, tb.Delete(ctx, item), ErrInvalidWrite)
	to := item
	to.ID = "b"
	_, err = tb.Move(ctx, item, to)
	require.ErrorIs(t, err, ErrInvalidWrite)
}

// TestFilterOnKeyRefused: DynamoDB refuses a filter on a key attribute of
// the index a query reads, whatever its kind; ddbindex refuses it first.
func TestFilterOnKeyRefused(t *testing.T) {
	t.Parallel()
	tb, err := New[ciItem](nil)
	require.NoError(t, err)
	onN := expression.Name("n").GreaterThan(expression.Value(0))
	_, err = tb.Query("", "a").Filter(onN).Explain()
	require.ErrorIs(t, err, ErrInvalidQuery, "the base table's sort key")
	require.Contains(t, err.Error(), "key attribute")
	_, err = tb.Query("", "a").Filter(expression.Name("id").AttributeExists()).Explain()
	require.ErrorIs(t, err, ErrInvalidQuery, "the base table's partition key")
	// n is no key attribute of the index table: the filter is sent.
	_, err = tb.Query("by_s", "s").Filter(onN).Explain()
	require.NoError(t, err)
	_, err = tb.Query("", "a").Filter(expression.Name("body").AttributeExists()).Explain()
	require.NoError(t, err)
}

// TestFilterOnKeyRefusedByServer: the refusal matches what the server does
// (the same filter is a ValidationException there), and a filter off the
// keys reads.
func TestFilterOnKeyRefusedByServer(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[ciItem](t)
	ctx := t.Context()
	_, err := tb.Put(ctx, ciItem{ID: "a", N: 1, S: "s", Body: "x"})
	require.NoError(t, err)
	_, err = tb.Query("", "a").Filter(expression.Name("n").GreaterThan(expression.Value(0))).Page(ctx)
	require.ErrorIs(t, err, ErrInvalidQuery)
	p, err := tb.Query("", "a").Filter(expression.Name("body").Equal(expression.Value("x"))).Page(ctx)
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
}

package ddbindex

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/stretchr/testify/require"
)

func TestWriteUpdateAttribute(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[wrTicket](t)
	it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Title: "one"})
	require.NoError(t, err)
	require.NoError(t, tb.Update(ctx, it, expression.Set(expression.Name("title"), expression.Value("renamed"))))
	got := wrIndex(t, tb, "", false, "T1")
	require.Len(t, got, 1)
	require.Equal(t, "renamed", got[0].Title)

	missing := it
	missing.ID = "404"
	err = tb.Update(ctx, missing, expression.Set(expression.Name("title"), expression.Value("x")))
	wrRequireConflict(t, err, "update", "the item exists")
	require.Len(t, wrIndex(t, tb, "", true, "T1"), 1, "Update does not create items")
}

func TestMergeUpdate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		ops  map[string][]string
		want string
	}{
		{"SET #0 = :0\n", map[string][]string{"SET": {"#t = :t"}}, "SET #0 = :0, #t = :t\n"},
		{"REMOVE #0\n", map[string][]string{"SET": {"#t = :t"}, "ADD": {"#v :one"}}, "REMOVE #0\nSET #t = :t\nADD #v :one\n"},
		{"ADD #0 :0\nSET #1 = :1, #2 = if_not_exists(#2, :2)\n", map[string][]string{"SET": {"#t = :t"}, "ADD": {"#v :one"}},
			"ADD #0 :0, #v :one\nSET #1 = :1, #2 = if_not_exists(#2, :2), #t = :t\n"},
		{"", map[string][]string{"SET": {"#t = :t"}}, "SET #t = :t\n"},
	} {
		require.Equal(t, tc.want, mergeUpdate(tc.in, tc.ops), "%q", tc.in)
	}
}

// TestUpdateLeavesTheCallersBuilderAlone: the version and token operations
// Update adds do not leak into the caller's UpdateBuilder (whose copies
// share their operations), so a builder can be used for many updates.
func TestUpdateLeavesTheCallersBuilderAlone(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[rtDoc](t)
	v1, err := tb.Put(t.Context(), rtDoc{ID: "d", Topic: "go"})
	require.NoError(t, err)
	upd := expression.Set(expression.Name("title"), expression.Value("x")).Add(expression.Name("score"), expression.Value(1))
	before, err := expression.NewBuilder().WithUpdate(upd).Build()
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, tb.Update(t.Context(), rtDoc{ID: "d"}, upd))
	}
	after, err := expression.NewBuilder().WithUpdate(upd).Build()
	require.NoError(t, err)
	require.Equal(t, before.Names(), after.Names())
	require.Equal(t, before.Update(), after.Update())
	img := wrRaw(t, tb, v1)
	require.EqualValues(t, 4, wrNum(t, img["ver"]))
	require.EqualValues(t, 3, wrNum(t, img["score"]))
}

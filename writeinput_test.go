package ddbindex

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// The checks of what a write would store, made before any request: values
// DynamoDB would refuse or change, and items over its 400 KB limit, base
// items and index-table entries alike.

type wiItem struct {
	_    TableSpec         `ddbindex:"writeinput"`
	_    IndexSpec         `ddbindex:"by_s,type=table"`
	ID   string            `dynamodbav:"id" ddbindex:"pk"`
	S    string            `dynamodbav:"s" ddbindex:"by_s.pk"`
	T    string            `dynamodbav:"t" ddbindex:"by_s.sk,label=T"`
	Body string            `dynamodbav:"body"`
	Tags map[string]string `dynamodbav:"tags,omitempty"`
	Set  []string          `dynamodbav:"set,stringset,omitempty"`
	List []any             `dynamodbav:"list,omitempty"`
}

// TestInvalidUTF8Refused: a String that is not UTF-8 would be stored with
// U+FFFD in place of its invalid bytes; it is refused wherever it is.
func TestInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	tb, err := New[wiItem](nil)
	require.NoError(t, err)
	ctx := t.Context()
	bad := "a\xffb"
	for name, item := range map[string]wiItem{
		"a String":         {Body: bad},
		"a map value":      {Tags: map[string]string{"k": bad}},
		"a map key":        {Tags: map[string]string{bad: "v"}},
		"a String set":     {Set: []string{"ok", bad}},
		"a list's element": {List: []any{"ok", map[string]any{"x": bad}}},
	} {
		item.ID, item.S, item.T = "1", "s", "t"
		_, err := tb.Put(ctx, item)
		require.ErrorIs(t, err, ErrInvalidWrite, name)
		require.Contains(t, err.Error(), "UTF-8", name)
	}
	err = tb.Update(ctx, wiItem{ID: "1"}, Set("body", bad))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Contains(t, err.Error(), "UTF-8")
	err = tb.Update(ctx, wiItem{ID: "1"}, Set("tags", map[string]any{"k": []string{bad}}))
	require.ErrorIs(t, err, ErrInvalidWrite)
}

// TestItemOverLimitRefused: an item over 400 KB, or whose index-table entry
// would be (the entry adds its key attributes and version), is refused
// before anything is sent, and not by DynamoDB.
func TestItemOverLimitRefused(t *testing.T) {
	t.Parallel()
	tb, err := New[wiItem](nil)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = tb.Put(ctx, wiItem{ID: "1", S: "s", T: "t", Body: strings.Repeat("x", 420_000)})
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Contains(t, err.Error(), "over DynamoDB's item limit")

	// The base item fits; its entry, which holds T twice (the attribute and
	// the sort key built from it), does not.
	item := wiItem{ID: "1", S: "s", T: strings.Repeat("t", 1000)}
	img, err := tb.Marshal(item)
	require.NoError(t, err)
	item.Body = strings.Repeat("b", maxItemSize-50-itemBytes(img)-len("body"))
	img, err = tb.Marshal(item)
	require.NoError(t, err)
	require.Less(t, itemBytes(img), maxItemSize)
	_, err = tb.Put(ctx, item)
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Contains(t, err.Error(), "entry of index by_s")
	_, err = tb.IndexWrites(Change{New: img, Version: "7"})
	require.ErrorIs(t, err, ErrInvalidWrite, "the consumer refuses the entry as it is: no request can write it")
	require.Contains(t, err.Error(), "over DynamoDB's item limit")
	_, err = tb.Apply(ctx, []Change{{New: img, Version: "7"}})
	require.ErrorIs(t, err, ErrInvalidWrite)

	// Without the long sort value the entry fits.
	item.T = "t"
	_, err = tb.IndexWrites(Change{New: mustMarshal(t, tb, item), Version: "7"})
	require.NoError(t, err)
}

func itemBytes(m map[string]types.AttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v.(*types.AttributeValueMemberS).Value)
	}
	return n
}

func mustMarshal[T any](t *testing.T, tb *Table[T], item T) map[string]types.AttributeValue {
	t.Helper()
	m, err := tb.Marshal(item)
	require.NoError(t, err)
	return m
}

// TestChangeImagesChecked: a Change built by the caller is checked as a
// stream record's images are: a value DynamoDB could not have stored is
// refused, never a panic or a request.
func TestChangeImagesChecked(t *testing.T) {
	t.Parallel()
	tb, err := New[wiItem](nil)
	require.NoError(t, err)
	for name, v := range map[string]types.AttributeValue{
		"no value":              nil,
		"a nil String":          (*types.AttributeValueMemberS)(nil),
		"a nil in a map":        &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": (*types.AttributeValueMemberN)(nil)}},
		"a nil in a list":       &types.AttributeValueMemberL{Value: []types.AttributeValue{nil}},
		"a Number not a number": &types.AttributeValueMemberN{Value: "abc"},
		"an unknown type":       &types.UnknownUnionMember{Tag: "X"},
		"a String not UTF-8":    &types.AttributeValueMemberS{Value: "\xff"},
	} {
		for _, attr := range []string{"body", "s", "id"} {
			img := map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: "1"}, "s": &types.AttributeValueMemberS{Value: "s"},
				"t": &types.AttributeValueMemberS{Value: "t"},
			}
			img[attr] = v
			for _, c := range []Change{{New: img, Version: "7"}, {Old: img, Version: "7"}} {
				require.NotPanics(t, func() { _, err = tb.IndexWrites(c) }, name)
				require.ErrorIs(t, err, ErrInvalidWrite, "%s in %s", name, attr)
				require.NotPanics(t, func() { _, err = tb.Apply(t.Context(), []Change{c}) }, name)
				require.ErrorIs(t, err, ErrInvalidWrite, "%s in %s", name, attr)
			}
		}
	}
}

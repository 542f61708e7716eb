package ddbindex

import (
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// iwFit has a key component of every kind: strings (the base key's, and
// by_all's partition), a signed and a fixed-width unsigned number, a time,
// bytes, and a custom KeyTexter; by_label is sparse (label and owner are
// omitted when empty).
type iwFit struct {
	_     TableSpec `ddbindex:"iw-fit,pk=PK,sk=SK"`
	_     IndexSpec `ddbindex:"by_all,type=table"`
	_     IndexSpec `ddbindex:"by_label,type=table"`
	Team  string    `dynamodbav:"team" ddbindex:"pk;by_all.pk"`
	ID    string    `dynamodbav:"id" ddbindex:"sk"`
	N     int64     `dynamodbav:"n" ddbindex:"by_all.sk:0"`
	W     uint32    `dynamodbav:"w" ddbindex:"by_all.sk:1,width=10"`
	At    time.Time `dynamodbav:"at" ddbindex:"by_all.sk:2"`
	B     []byte    `dynamodbav:"b" ddbindex:"by_all.sk:3"`
	Label curxLabel `dynamodbav:"label,omitempty" ddbindex:"by_label.pk"`
	Owner *string   `dynamodbav:"owner,omitempty" ddbindex:"by_label.sk"`
}

// TestIndexWritesImagesThatDoNotFit: an image that does not fit the model
// is an error, never a silent write or a silent skip: a key attribute of
// any kind (base key, index key) stored as another type (DDBX-603, naming
// the attribute, its stored type and the type wanted); a base key
// attribute, or a component of it, missing (DDBX-603); an image present but
// empty (DDBX-702). An index component absent or NULL only leaves the item
// out of that index. (A Number in a string component used to be keyed by
// its digits; an image without its base key used to be keyed by a base
// key derived from its components, or skipped; an empty image was taken
// for no image.)
func TestIndexWritesImagesThatDoNotFit(t *testing.T) {
	t.Parallel()
	tb, err := New[iwFit](nil)
	require.NoError(t, err)
	owner := "ann"
	it := iwFit{Team: "T1", ID: "i1", N: -3, W: 7, At: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC), B: []byte{1, 2}, Label: "L", Owner: &owner}
	good, err := tb.Marshal(it)
	require.NoError(t, err)
	ws, err := tb.IndexWrites(Change{New: good, Version: "1"})
	require.NoError(t, err)
	require.Len(t, ws, 2, "the item is in both indexes")

	with := func(attr string, av types.AttributeValue) map[string]types.AttributeValue {
		img := maps.Clone(good)
		if av == nil {
			delete(img, attr)
		} else {
			img[attr] = av
		}
		return img
	}
	n := func(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
	s := func(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
	null := &types.AttributeValueMemberNULL{Value: true}
	for _, c := range []struct {
		name string
		img  map[string]types.AttributeValue
		want string
	}{
		{"a base key component as a number", with("team", n("1")), "team is stored as N, want S"},
		{"a base sort key component as a number", with("id", n("1")), "id is stored as N, want S"},
		{"a number component as text", with("n", s("-3")), "n is stored as S, want N"},
		{"a fixed-width component as text", with("w", s("7")), "w is stored as S, want N"},
		{"a time as bytes", with("at", &types.AttributeValueMemberB{Value: []byte("x")}), "at is stored as B, want S or N"},
		{"a time as a map", with("at", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}), "at is stored as M, want S or N"},
		{"bytes as text", with("b", s("0102")), "b is stored as S, want B"},
		{"a custom component as a number", with("label", n("7")), "label is stored as N, want S"},
		{"a sparse component as a number", with("owner", n("7")), "owner is stored as N, want S"},
		{"a sparse component as a bool", with("owner", &types.AttributeValueMemberBOOL{Value: true}), "owner is stored as BOOL, want S"},
		{"the base partition key as a number", with("PK", n("1")), "base key attribute PK is stored as N, want S"},
		{"the base sort key as NULL", with("SK", null), "base key attribute SK is stored as NULL, want S"},
		{"no base partition key", with("PK", nil), "lacks the base key attribute PK"},
		{"no base sort key", with("SK", nil), "lacks the base key attribute SK"},
		{"no base key component", with("team", nil), "lacks team (field Team), a component of the base key PK"},
		{"a NULL base key component", with("id", null), "lacks id (field ID), a component of the base key SK"},
	} {
		for _, ch := range []Change{{New: c.img, Version: "2"}, {Old: good, New: c.img, Version: "2"}, {Old: c.img, New: good, Version: "2"}, {Old: c.img, Version: "2"}} {
			_, err := tb.IndexWrites(ch)
			require.ErrorIs(t, err, ErrInvalidWrite, c.name)
			require.Equal(t, "DDBX-603", Code(err), c.name)
			require.ErrorContains(t, err, c.want, c.name)
		}
	}

	empty := map[string]types.AttributeValue{}
	for _, ch := range []Change{{New: empty, Version: "2"}, {Old: good, New: empty, Version: "2"}, {Old: empty, Version: "2"}, {Old: empty, New: good, Version: "2"}} {
		_, err := tb.IndexWrites(ch)
		require.ErrorIs(t, err, ErrStreamRecord)
		require.NotErrorIs(t, err, ErrInvalidWrite)
		require.Equal(t, "DDBX-702", Code(err))
		require.ErrorContains(t, err, "image is empty")
	}

	// What fits: a sparse component absent or NULL leaves by_label; a time
	// as epoch seconds (dynamodbav:",unixtime") reads as the same instant;
	// no image at all changes nothing.
	for _, img := range []map[string]types.AttributeValue{with("owner", nil), with("owner", null), with("label", nil)} {
		ws, err := tb.IndexWrites(Change{New: img, Version: "2"})
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, "by_all", ws[0].Index)
	}
	ws, err = tb.IndexWrites(Change{New: with("at", n("1796259723")), Version: "2"})
	require.NoError(t, err)
	ws2, err := tb.IndexWrites(Change{New: good, Version: "2"})
	require.NoError(t, err)
	require.Len(t, ws, 2)
	for i := range ws {
		delete(ws[i].Item, "at") // as stored, N or S
		delete(ws2[i].Item, "at")
	}
	require.Equal(t, ws2, ws, "the same instant, the same entries")
	ws, err = tb.IndexWrites(Change{Version: "2"})
	require.NoError(t, err)
	require.Empty(t, ws)
}

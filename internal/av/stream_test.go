package av

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"
)

func TestFromStreamImage(t *testing.T) {
	t.Parallel()
	img := map[string]st.AttributeValue{
		"s":    &st.AttributeValueMemberS{Value: "text"},
		"n":    &st.AttributeValueMemberN{Value: "1.50"},
		"b":    &st.AttributeValueMemberB{Value: []byte{0, 1}},
		"t":    &st.AttributeValueMemberBOOL{Value: true},
		"null": &st.AttributeValueMemberNULL{Value: true},
		"ss":   &st.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &st.AttributeValueMemberNS{Value: []string{"1", "-2e3"}},
		"bs":   &st.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l": &st.AttributeValueMemberL{Value: []st.AttributeValue{
			&st.AttributeValueMemberS{Value: "x"},
			&st.AttributeValueMemberL{Value: []st.AttributeValue{&st.AttributeValueMemberN{Value: "7"}}},
			&st.AttributeValueMemberM{Value: map[string]st.AttributeValue{"k": &st.AttributeValueMemberBOOL{}}},
		}},
		"m": &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{
			"inner": &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{
				"ns": &st.AttributeValueMemberNS{Value: []string{"5"}},
			}},
			"empty": &st.AttributeValueMemberL{},
		}},
	}
	want := map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "text"},
		"n":    &types.AttributeValueMemberN{Value: "1.50"}, // the text is kept
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1}},
		"t":    &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "-2e3"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "7"}}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberBOOL{}}},
		}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"inner": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"ns": &types.AttributeValueMemberNS{Value: []string{"5"}},
			}},
			"empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		}},
	}
	got, err := FromStreamImage(img)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.True(t, EqualItems(want, got))

	got, err = FromStreamImage(nil)
	require.NoError(t, err)
	require.Nil(t, got, "no image stays no image")
	got, err = FromStreamImage(map[string]st.AttributeValue{})
	require.NoError(t, err)
	require.Empty(t, got)
	require.NotNil(t, got)
}

func TestFromStreamImageMalformed(t *testing.T) {
	t.Parallel()
	list := func(v ...st.AttributeValue) st.AttributeValue { return &st.AttributeValueMemberL{Value: v} }
	mp := func(k string, v st.AttributeValue) st.AttributeValue {
		return &st.AttributeValueMemberM{Value: map[string]st.AttributeValue{k: v}}
	}
	for _, c := range []struct {
		name string
		v    st.AttributeValue
		want string
	}{
		{"nil", nil, "attribute x: no value"},
		{"nil S", (*st.AttributeValueMemberS)(nil), "attribute x: a nil *types.AttributeValueMemberS"},
		{"nil N", (*st.AttributeValueMemberN)(nil), "a nil *types.AttributeValueMemberN"},
		{"nil B", (*st.AttributeValueMemberB)(nil), "a nil *types.AttributeValueMemberB"},
		{"nil BOOL", (*st.AttributeValueMemberBOOL)(nil), "a nil *types.AttributeValueMemberBOOL"},
		{"nil NULL", (*st.AttributeValueMemberNULL)(nil), "a nil *types.AttributeValueMemberNULL"},
		{"nil SS", (*st.AttributeValueMemberSS)(nil), "a nil *types.AttributeValueMemberSS"},
		{"nil NS", (*st.AttributeValueMemberNS)(nil), "a nil *types.AttributeValueMemberNS"},
		{"nil BS", (*st.AttributeValueMemberBS)(nil), "a nil *types.AttributeValueMemberBS"},
		{"nil L", (*st.AttributeValueMemberL)(nil), "a nil *types.AttributeValueMemberL"},
		{"nil M", (*st.AttributeValueMemberM)(nil), "a nil *types.AttributeValueMemberM"},
		{"nil unknown", (*st.UnknownUnionMember)(nil), "a nil *types.UnknownUnionMember"},
		{"N not a number", &st.AttributeValueMemberN{Value: "abc"}, `attribute x: "abc" is not a number`},
		{"N empty", &st.AttributeValueMemberN{}, `"" is not a number`},
		{"N NaN", &st.AttributeValueMemberN{Value: "NaN"}, `"NaN" is not a number`},
		{"NS element not a number", &st.AttributeValueMemberNS{Value: []string{"1", "1,5"}}, `"1,5" in a number set is not a number`},
		{"unknown type", &st.UnknownUnionMember{Tag: "ZZ"}, `unknown attribute type "ZZ"`},
		{"nil in a list", list(&st.AttributeValueMemberS{}, nil), "attribute x[1]: no value"},
		{"nil member in a map", mp("k", (*st.AttributeValueMemberS)(nil)), "attribute x.k: a nil"},
		{"bad number deep down", mp("a", list(mp("b", &st.AttributeValueMemberN{Value: "1e"}))), `attribute x.a[0].b: "1e" is not a number`},
		{"unknown type in a list", list(&st.UnknownUnionMember{Tag: "ZZ"}), `attribute x[0]: unknown attribute type`},
	} {
		got, err := FromStreamImage(map[string]st.AttributeValue{"ok": &st.AttributeValueMemberS{Value: "v"}, "x": c.v})
		require.ErrorIs(t, err, ErrMalformed, c.name)
		require.ErrorContains(t, err, c.want, c.name)
		require.Nil(t, got, c.name)
	}
}

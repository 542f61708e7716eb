package ddbindex

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestApplyVersionsOfFortyDigits: versions are compared as integers
// whatever their length up to 40 digits, the longest a DynamoDB Streams
// sequence number has (StreamRecord.SequenceNumber: length 21 to 40): one
// of 39 or 40 digits, which no Number holds exactly, is newer than any
// shorter one, older than a larger one of its length, and refused
// neither by IndexWrites nor by DynamoDB. A longer one is refused, saying
// so.
func TestApplyVersionsOfFortyDigits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, c := newTestTable[syItem](t)
	d, err := tb.index("by_status")
	require.NoError(t, err)
	title := func() string {
		entries := ddbtest.Scan(t, c, tb.tableOf(d))
		require.Len(t, entries, 1)
		return entries[0]["title"].(*types.AttributeValueMemberS).Value
	}
	v38 := strings.Repeat("9", 38)
	v39 := "123456789012345678901234567890123456789"
	v40 := "1234567890123456789012345678901234567891"
	v40older := "1234567890123456789012345678901234567890" // differs in the 40th digit only
	for _, step := range []struct {
		version, title string
		written        bool
	}{
		{"300000000000000499659", "21 digits", true},
		{v38, "38 digits", true},
		{v39, "39 digits", true},
		{v38, "38 digits again", false},
		{v40, "40 digits", true},
		{v40older, "an older 40 digits", false},
		{v40, "the same 40 digits", false},
		{v39, "39 digits again", false},
		{"0" + v39, "39 digits, zero-padded", false},
	} {
		it := syBase()
		it.Title = step.title
		st, err := tb.Apply(ctx, []Change{{New: syImage(t, tb, it), Version: step.version}})
		require.NoError(t, err, step.title)
		if step.written {
			require.Equal(t, 3, st.Puts, step.title)
			require.Equal(t, step.title, title())
		} else {
			require.Equal(t, 3, st.Stale, step.title)
		}
	}
	require.Equal(t, "40 digits", title())

	seq60 := strings.Repeat("1234567890", 6)
	_, err = tb.Apply(ctx, []Change{{New: syImage(t, tb, syBase()), Version: seq60}})
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.ErrorContains(t, err, "has 60 digits; a version has at most 40")
	require.Equal(t, "40 digits", title())
}

// TestVersionValueForms: a version below 10^38 is stored as the Number it
// has always been (entries written before keep comparing with it); a
// larger one as a 40-digit String, whose condition also takes a Number
// entry as older.
func TestVersionValueForms(t *testing.T) {
	t.Parallel()
	av, err := versionValue("00" + strings.Repeat("9", 38))
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberN{Value: "00" + strings.Repeat("9", 38)}, av)
	av, err = versionValue("1" + strings.Repeat("0", 38))
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "0" + "1" + strings.Repeat("0", 38)}, av)
	tb := syTable(t)
	e, err := expression.NewBuilder().WithCondition(tb.versionCondition(strings.Repeat("9", 40))).Build()
	require.NoError(t, err)
	require.Equal(t, "((attribute_not_exists (#0)) OR (attribute_type (#0, :0))) OR (#0 < :1)", *e.Condition())
	require.Equal(t, &types.AttributeValueMemberS{Value: "N"}, e.Values()[":0"])
}

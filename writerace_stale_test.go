package ddbindex_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// TestWriteThroughStaleCopyOfGoneItem: a write-through Put or Delete of a
// copy at version 1 whose item is gone when the write reads it (deleted for
// good, or its tombstone removed by TTL), while another writer creates the
// item again, at version 1 too, between that read and the write. The write
// computed its index writes for no stored item, so it must not be made over
// the new one: it is a conflict, and the index table ends as the base table
// implies (no live entry of the item created again left behind).
func TestWriteThroughStaleCopyOfGoneItem(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	t.Run("version", func(t *testing.T) { t.Parallel(); staleCopyOfGoneItem(t, raceVerModel) })
	t.Run("softdelete", func(t *testing.T) { t.Parallel(); staleCopyOfGoneItem(t, raceSoftModel) })
}

func staleCopyOfGoneItem[T any](t *testing.T, m raceModel[T]) {
	for _, victim := range []string{"put", "delete"} {
		t.Run(victim, func(t *testing.T) {
			t.Parallel()
			staleCopyOfGoneItemBy(t, m, victim)
		})
	}
}

func staleCopyOfGoneItemBy[T any](t *testing.T, m raceModel[T], victim string) {
	ctx := t.Context()
	s := newRaceSetup(t, m, true)
	team := "gone-" + victim
	what := fmt.Sprintf("%s: victim %s of a stale copy, item created again between its read and its write", m.name, victim)
	_, err := s.other.Put(ctx, m.item(team, "X", 1))
	require.NoError(t, err, what)
	x, ok, err := raceGet(ctx, s, s.other, team, "X")
	require.NoError(t, err, what)
	require.True(t, ok, what)
	require.NoError(t, s.other.Delete(ctx, x), what)
	if m.name == "softdelete" {
		// TTL removes the tombstone.
		base := aws.ToString(schema.CreateTableInputs(s.other, false)[0].TableName)
		removed := 0
		for _, it := range ddbtest.Scan(t, s.c, base) {
			if it["team"].(*types.AttributeValueMemberS).Value != team {
				continue
			}
			_, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(base),
				Key: map[string]types.AttributeValue{"PK": it["PK"], "SK": it["SK"]}})
			require.NoError(t, err, what)
			removed++
		}
		require.Equal(t, 1, removed, "%s: the tombstone", what)
	}
	var racerErr error
	s.rc.arm(func() {
		_, racerErr = s.other.Put(ctx, m.fresh(m.item(team, "X", 2)))
	})
	if victim == "put" {
		_, err = s.victim.Put(ctx, m.reprio(x, 0))
	} else {
		err = s.victim.Delete(ctx, x)
	}
	s.rc.arm(nil)
	require.NoError(t, racerErr, what)
	s.settle(t, what)
	require.ErrorIs(t, err, ddbindex.ErrConflict, "%s: the item stored is not the one the write read (none)", what)
	got, ok, err := raceGet(ctx, s, s.other, team, "X")
	require.NoError(t, err, what)
	require.True(t, ok, "%s: the item created again is left as its writer wrote it", what)
	require.Equal(t, m.reprio(m.item(team, "X", 2), 2), m.fresh(got), what)
}

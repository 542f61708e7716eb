package migrate_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// TestBackfillGSIItemCreatedAgain: between the scan and the backfill's
// write of a GSI's derived key attributes, a writer that keeps the GSI
// deletes the item for good and creates it again, with other key values,
// at the same version (a creation starts at version 1 again). The version
// alone does not tell the two items apart: the backfill must not write the
// scanned item's derived keys onto the new one, whose own are right.
func TestBackfillGSIItemCreatedAgain(t *testing.T) {
	t.Parallel()
	open, shipped := "open", "shipped"
	step3, err := ddbindex.New[bfVerTable](nil)
	require.NoError(t, err)
	img, err := step3.Marshal(bfVerTable{ID: "x", Team: "A", Status: &open, Created: 1, Ver: 1})
	require.NoError(t, err)
	tb, c, _ := bfSetup[bfVerKeepGSI](t, []map[string]types.AttributeValue{img})
	ctx := t.Context()
	again := bfVerKeepGSI{ID: "x", Team: "A", Status: &shipped, Created: 2}
	scan := &bfHookScan{ScanAPI: c, hook: func() error {
		_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tb.TableName()),
			Key: map[string]types.AttributeValue{"id": bfAvS("x")}})
		if err == nil {
			again, err = tb.Put(ctx, again)
		}
		return err
	}}
	st, err := migrate.Backfill(ctx, tb, scan, "by_status")
	require.NoError(t, err)
	require.NoError(t, scan.err)
	got := bfByID(t, c, tb.TableName())["x"]
	want, err := tb.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, "1", got["ver"].(*types.AttributeValueMemberN).Value, "the item created again")
	require.True(t, bfSameItem(want, got), "the item created again keeps its own derived keys: want %s, got %s", bfItemString(want), bfItemString(got))
	require.Equal(t, migrate.BackfillStats{Scanned: 1, Skipped: 1}, st)
}

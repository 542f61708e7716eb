package stream

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// rcTicket is soft-deleted and versioned, with an index table kept from the
// stream: Put with version 0 creates a deleted ticket again.
type rcTicket struct {
	_       ddbindex.TableSpec `ddbindex:"rc-tickets,pk=PK,sk=SK,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string             `dynamodbav:"id" ddbindex:"sk:1,label=TICKET"`
	Created time.Time          `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// TestPutRecreateFromTheStream: the stream records of a create, a soft
// delete and a re-create (Put with version 0 over the tombstone), applied in
// order, leave a live index entry: the re-create is newer than the
// tombstone, never dropped as stale; applying them again changes nothing.
func TestPutRecreateFromTheStream(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ctx := t.Context()
	tb, c := newTestTable[rcTicket](t)
	fresh := rcTicket{Team: "T1", Status: "open", ID: "1", Created: stNow, Title: "one"}
	v1, err := tb.Put(ctx, fresh)
	require.NoError(t, err)
	require.NoError(t, tb.Delete(ctx, v1))
	fresh.Title = "one, again"
	v3, err := tb.Put(ctx, fresh)
	require.NoError(t, err)
	require.EqualValues(t, 3, v3.Ver, "created again at the tombstone's version + 1")

	changes := toChanges(t, records(t, tb))
	require.Len(t, changes, 3)
	st, err := tb.Apply(ctx, changes)
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: 3, Puts: 2, Deletes: 1}, st, "nothing dropped as stale")
	require.Equal(t, []rcTicket{v3}, indexItems(t, tb, "by_status", false, "T1"))
	indexTable := aws.ToString(schema.CreateTableInputs(tb, false)[1].TableName)
	entries := ddbtest.Scan(t, c, indexTable)
	require.Len(t, entries, 1)
	require.NotContains(t, entries[0], "_deleted")
	require.Equal(t, changes[2].Version, entries[0]["_ver"].(*types.AttributeValueMemberN).Value)

	st, err = tb.Apply(ctx, changes)
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: 3, Stale: 3}, st)
	require.Equal(t, entries, ddbtest.Scan(t, c, indexTable))
}

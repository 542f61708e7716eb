package ddbindex

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// roClient has the read methods of a DynamoDB client and nothing else, as
// a read-only service's client (or an IAM-scoped wrapper) would; it counts
// the requests it passes on.
type roClient struct {
	c     *dynamodb.Client
	calls atomic.Int32
}

func (r *roClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.calls.Add(1)
	return r.c.GetItem(ctx, in, optFns...)
}

func (r *roClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.calls.Add(1)
	return r.c.BatchGetItem(ctx, in, optFns...)
}

func (r *roClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.calls.Add(1)
	return r.c.Query(ctx, in, optFns...)
}

// TestReadOnlyTable: a table made by NewReadOnly from a client with only
// the read methods reads like any table, and refuses every write before
// any request, with ErrUnsupported (DDBX-604).
func TestReadOnlyTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	writer, c := newTestTable[wrTicket](t)
	var stored []wrTicket
	for i := range 4 {
		it, err := writer.Put(ctx, gtTicket(3*i+1)) // team T1
		require.NoError(t, err)
		img, err := writer.Marshal(it)
		require.NoError(t, err)
		_, err = writer.Apply(ctx, []Change{{New: img, Version: "1"}})
		require.NoError(t, err)
		stored = append(stored, it)
	}

	ro := &roClient{c: c}
	_, writes := any(ro).(Client)
	require.False(t, writes, "the client is no Client: it lacks the write methods")
	tb, err := NewReadOnly[wrTicket](ro, curxSameOpts(writer))
	require.NoError(t, err)

	got, err := tb.Get(ctx, gtKey(stored[2]))
	require.NoError(t, err)
	require.Equal(t, stored[2], got)
	batch, err := tb.BatchGet(ctx, []wrTicket{gtKey(stored[3]), gtKey(stored[0])})
	require.NoError(t, err)
	require.Equal(t, []wrTicket{stored[3], stored[0]}, batch)
	page, err := tb.Query("", "T1").Page(ctx)
	require.NoError(t, err)
	require.Equal(t, stored, page.Items)
	var viaIndex []wrTicket
	for it, err := range tb.Query("by_status", "T1").Where(Eq("open")).All(ctx) {
		require.NoError(t, err)
		viaIndex = append(viaIndex, it)
	}
	require.Equal(t, stored, viaIndex)
	ok, err := tb.Query("by_status", "T1").Exists(ctx)
	require.NoError(t, err)
	require.True(t, ok)

	sent := ro.calls.Load()
	require.Positive(t, sent)
	img, err := writer.Marshal(stored[0])
	require.NoError(t, err)
	moved := stored[0]
	moved.Status = "closed"
	for name, write := range map[string]func() error{
		"Put":    func() error { _, err := tb.Put(ctx, gtTicket(100)); return err },
		"Delete": func() error { return tb.Delete(ctx, stored[1]) },
		"Move":   func() error { _, err := tb.Move(ctx, stored[0], moved); return err },
		"Update": func() error {
			return tb.Update(ctx, gtKey(stored[0]), Set("title", "x"))
		},
		"Apply": func() error { _, err := tb.Apply(ctx, []Change{{New: img, Version: "2"}}); return err },
	} {
		err := write()
		require.ErrorIs(t, err, ErrUnsupported, name)
		require.Equal(t, "DDBX-604", Code(err), name)
		require.ErrorContains(t, err, name+" of ddbindex.wrTicket on a read-only table")
	}
	require.Equal(t, sent, ro.calls.Load(), "the writes sent no request, not even a read")

	after, err := tb.BatchGet(ctx, []wrTicket{gtKey(stored[0]), gtKey(stored[1]), gtKey(gtTicket(100))})
	require.NoError(t, err)
	require.Equal(t, stored[:2], after, "nothing was written")
}

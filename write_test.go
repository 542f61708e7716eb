package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of the write side (write.go) against the test server: tombstones,
// versions, Update's refusals, Move, write-through transactions and their
// limits, and a concurrency test of moves.

// wrTicket is a support ticket whose status is part of its base sort key,
// soft-deleted, with a version field and an index table by status.
type wrTicket struct {
	_       TableSpec `ddbindex:"wr-tickets,pk=PK,sk=SK,softdelete"`
	_       IndexSpec `ddbindex:"by_status,type=table"`
	Team    string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string    `dynamodbav:"id" ddbindex:"sk:1,label=TICKET"`
	Created time.Time `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string    `dynamodbav:"title"`
	Ver     int64     `dynamodbav:"ver" ddbindex:"version"`
}

// wrNote has no version field and is deleted for real.
type wrNote struct {
	_     TableSpec `ddbindex:"wr-notes,pk=PK,sk=SK"`
	_     IndexSpec `ddbindex:"by_topic,type=table"`
	Team  string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_topic.pk"`
	ID    string    `dynamodbav:"id" ddbindex:"sk"`
	Topic string    `dynamodbav:"topic" ddbindex:"by_topic.sk"`
	Text  string    `dynamodbav:"text"`
}

// wrSoftNote is soft-deleted but has no version field.
type wrSoftNote struct {
	_    TableSpec `ddbindex:"wr-soft,softdelete"`
	Team string    `dynamodbav:"team" ddbindex:"pk"`
	ID   string    `dynamodbav:"id" ddbindex:"sk"`
	Text string    `dynamodbav:"text"`
}

var wrT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func wrWriteThrough(o *Options) { o.WriteThrough = true }

// wrRaw reads the stored base item of item (strongly consistent), or nil.
func wrRaw[T any](t *testing.T, tb *Table[T], item T) map[string]types.AttributeValue {
	t.Helper()
	p, err := tb.prepare(&item, false)
	require.NoError(t, err)
	out, err := tb.current(t.Context(), p.key)
	require.NoError(t, err)
	return out
}

// wrScan returns every item of a physical table, sorted by their key texts.
func wrScan(t *testing.T, c *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := c.Scan(t.Context(), in)
		require.NoError(t, err)
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b map[string]types.AttributeValue) int {
		return compareStrings(wrItemKey(a), wrItemKey(b))
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func wrItemKey(item map[string]types.AttributeValue) string {
	return keyString(item)
}

// wrIndex returns the entries of an index-table partition, live ones only or
// tombstones too.
func wrIndex[T any](t *testing.T, tb *Table[T], index string, withDeleted bool, partition ...any) []T {
	t.Helper()
	q := tb.Query(index, partition...).ConsistentRead()
	if withDeleted {
		q = q.IncludeDeleted()
	}
	var out []T
	for it, err := range q.All(t.Context()) {
		require.NoError(t, err)
		out = append(out, it)
	}
	return out
}

func wrBool(av types.AttributeValue) bool {
	b, ok := av.(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

func wrNum(t *testing.T, av types.AttributeValue) int64 {
	t.Helper()
	n, ok := av.(*types.AttributeValueMemberN)
	require.True(t, ok, "want a Number, got %T", av)
	v, err := strconv.ParseInt(n.Value, 10, 64)
	require.NoError(t, err)
	return v
}

func wrRequireConflict(t *testing.T, err error, op string, wantFailed ...string) *ConflictError {
	t.Helper()
	require.ErrorIs(t, err, ErrConflict)
	require.Equal(t, "DDBX-600", Code(err))
	var ce *ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, op, ce.Op)
	require.Len(t, ce.Failed, len(wantFailed), "failed conditions: %q", ce.Failed)
	for i, w := range wantFailed {
		require.Contains(t, ce.Failed[i], w)
	}
	require.Contains(t, ce.Error(), "failed: ")
	return ce
}

// TestWriteSoftDeleteTombstone: Delete of a softdelete model marks the base
// item deleted with a TTL a retention ahead, reads skip it, and a Put makes
// it live again; the stream path (Apply) mirrors both into the index table.
func TestWriteSoftDeleteTombstone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const retention = 48 * time.Hour
	tb, c := newTestTable[wrTicket](t, func(o *Options) { o.Retention = retention })

	it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0, Title: "Printer"})
	require.NoError(t, err)
	require.EqualValues(t, 1, it.Ver, "a create writes version 1")
	img1 := wrRaw(t, tb, it)
	require.EqualValues(t, 1, wrNum(t, img1["ver"]))
	st, err := tb.Apply(ctx, Change{New: img1, Version: "1"})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Puts: 1}, st)
	require.Len(t, wrIndex(t, tb, "by_status", false, "T1"), 1)

	before := time.Now()
	require.NoError(t, tb.Delete(ctx, it))
	after := time.Now()
	img2 := wrRaw(t, tb, it)
	require.NotNil(t, img2, "a soft delete keeps the item")
	require.True(t, wrBool(img2["_deleted"]))
	ttl := wrNum(t, img2["_ttl"])
	require.GreaterOrEqual(t, ttl, before.Add(retention).Unix()-1)
	require.LessOrEqual(t, ttl, after.Add(retention).Unix()+1)
	require.EqualValues(t, 2, wrNum(t, img2["ver"]), "the delete is a new version")

	items := wrIndex(t, tb, "", false, "T1")
	require.Empty(t, items, "base reads skip the soft-deleted item")
	items = wrIndex(t, tb, "", true, "T1")
	require.Len(t, items, 1)
	require.EqualValues(t, 2, items[0].Ver)

	// Stale and missing versions.
	wrRequireConflict(t, tb.Delete(ctx, it), "delete", "the item exists with version 1")
	zero := it
	zero.Ver = 0
	require.ErrorIs(t, tb.Delete(ctx, zero), ErrInvalidWrite)

	// The stream path: the soft delete becomes a tombstone of the entry.
	st, err = tb.Apply(ctx, Change{Old: img1, New: img2, Version: "2"})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Deletes: 1}, st)
	require.Empty(t, wrIndex(t, tb, "by_status", false, "T1"))
	require.Len(t, wrIndex(t, tb, "by_status", true, "T1"), 1)
	entries := wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
	require.Len(t, entries, 1)
	require.True(t, wrBool(entries[0]["_deleted"]))
	require.InDelta(t, time.Now().Add(retention).Unix(), wrNum(t, entries[0]["_ttl"]), 60)

	// Re-insert: Put with the stored version makes it live again.
	it.Ver = 2
	it.Title = "Printer, again"
	it, err = tb.Put(ctx, it)
	require.NoError(t, err)
	require.EqualValues(t, 3, it.Ver)
	img3 := wrRaw(t, tb, it)
	require.NotContains(t, img3, "_deleted")
	require.NotContains(t, img3, "_ttl")
	items = wrIndex(t, tb, "", false, "T1")
	require.Len(t, items, 1)
	require.Equal(t, "Printer, again", items[0].Title)

	st, err = tb.Apply(ctx, Change{Old: img2, New: img3, Version: "3"})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Puts: 1}, st)
	live := wrIndex(t, tb, "by_status", false, "T1")
	require.Len(t, live, 1)
	require.Equal(t, "Printer, again", live[0].Title)
	require.EqualValues(t, 3, live[0].Ver)
	entries = wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
	require.Len(t, entries, 1)
	require.NotContains(t, entries[0], "_deleted", "the entry is live again, not a tombstone")
	require.NotContains(t, entries[0], "_ttl")
}

// TestWriteThroughSoftDeleteTombstone is the same in write-through mode: the
// index entry follows in the same transaction.
func TestWriteThroughSoftDeleteTombstone(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	ctx := t.Context()
	tb, c := newTestTable[wrTicket](t, wrWriteThrough)
	index := tb.tableOf(tb.s.byName["by_status"])

	it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0, Title: "Printer"})
	require.NoError(t, err)
	live := wrIndex(t, tb, "by_status", false, "T1")
	require.Len(t, live, 1)
	require.Equal(t, it, live[0])

	require.NoError(t, tb.Delete(ctx, it))
	require.True(t, wrBool(wrRaw(t, tb, it)["_deleted"]))
	require.Empty(t, wrIndex(t, tb, "by_status", false, "T1"))
	entries := wrScan(t, c, index)
	require.Len(t, entries, 1)
	require.True(t, wrBool(entries[0]["_deleted"]))
	require.Contains(t, entries[0], "_ttl")
	require.EqualValues(t, 2, wrNum(t, entries[0]["_ver"]), "write-through entries carry the model version")

	it.Ver = 2
	it, err = tb.Put(ctx, it)
	require.NoError(t, err)
	live = wrIndex(t, tb, "by_status", false, "T1")
	require.Equal(t, []wrTicket{it}, live)
	entries = wrScan(t, c, index)
	require.Len(t, entries, 1)
	require.NotContains(t, entries[0], "_deleted")
	require.EqualValues(t, 3, wrNum(t, entries[0]["_ver"]))

	// A stale delete changes nothing, base or index.
	stale := it
	stale.Ver = 2
	wrRequireConflict(t, tb.Delete(ctx, stale), "delete", "the item exists with version 2 (ConditionalCheckFailed)")
	require.Equal(t, entries, wrScan(t, c, index))
}

func TestWriteVersionedPut(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			ctx := t.Context()
			tb, _ := newTestTable[wrTicket](t, func(o *Options) { o.WriteThrough = wt })
			suffix := ""
			if wt {
				suffix = " (ConditionalCheckFailed)"
			}
			it := wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Title: "one"}
			v1, err := tb.Put(ctx, it)
			require.NoError(t, err)
			require.EqualValues(t, 1, v1.Ver)

			_, err = tb.Put(ctx, it) // version 0 again: must not exist
			ce := wrRequireConflict(t, err, "put", "the item does not exist yet (version 0)"+suffix)
			require.NotNil(t, ce.Unwrap(), "the DynamoDB error is kept")

			v1.Title = "two"
			v2, err := tb.Put(ctx, v1)
			require.NoError(t, err)
			require.EqualValues(t, 2, v2.Ver)
			require.Equal(t, "two", v2.Title)

			v1.Title = "lost update"
			_, err = tb.Put(ctx, v1) // stale
			wrRequireConflict(t, err, "put", "the item exists with version 1"+suffix)

			got := wrIndex(t, tb, "", false, "T1")
			require.Equal(t, []wrTicket{v2}, got, "the stale write changed nothing")
			if wt {
				require.Equal(t, []wrTicket{v2}, wrIndex(t, tb, "by_status", false, "T1"))
			}
		})
	}
}

// wrNoClient fails every request and counts them: for checks that happen
// before any request.
type wrNoClient struct{ calls atomic.Int32 }

var errWrNoClient = errors.New("wrNoClient: no request expected")

func (c *wrNoClient) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}
func (c *wrNoClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}
func (c *wrNoClient) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}
func (c *wrNoClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}
func (c *wrNoClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}
func (c *wrNoClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.calls.Add(1)
	return nil, errWrNoClient
}

// TestWriteRefusedBeforeAnyRequest covers every refusal that must not reach
// DynamoDB: Update of key attributes and key components, Update in
// write-through mode, a Move to the same key, a Delete without the version,
// items without their key values.
func TestWriteRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, wt := range []bool{false, true} {
		cl := &wrNoClient{}
		tb, err := New[wrTicket](cl, func(o *Options) { o.WriteThrough = wt })
		require.NoError(t, err)
		it := wrTicket{Team: "T1", Status: "open", ID: "1", Created: wrT0, Ver: 3}

		if !wt {
			for attr, want := range map[string]string{
				"PK": "use Move", "SK": "use Move", "team": "use Move", "status": "use Move", "id": "use Move",
				"created": "index by_status's key",
			} {
				for name, upd := range map[string]expression.UpdateBuilder{
					"set":    expression.Set(expression.Name("title"), expression.Value("x")).Set(expression.Name(attr), expression.Value("y")),
					"remove": expression.Remove(expression.Name(attr)),
					"add":    expression.Add(expression.Name(attr), expression.Value(1)),
				} {
					err := tb.Update(ctx, it, upd)
					require.ErrorIs(t, err, ErrKeyChange, "%s %s", name, attr)
					require.Equal(t, "DDBX-601", Code(err))
					require.ErrorContains(t, err, attr)
					require.ErrorContains(t, err, want, "%s %s", name, attr)
				}
			}
			err = tb.Update(ctx, it, expression.UpdateBuilder{})
			require.ErrorIs(t, err, ErrInvalidWrite, "an empty update")
		} else {
			err = tb.Update(ctx, it, expression.Set(expression.Name("title"), expression.Value("x")))
			require.ErrorIs(t, err, ErrInvalidWrite)
			require.ErrorContains(t, err, "use Put")
		}

		_, err = tb.Move(ctx, it, it)
		require.ErrorIs(t, err, ErrInvalidWrite, "a move to the same key")
		require.ErrorContains(t, err, "use Put")
		moved := it
		moved.Title = "only a title change"
		_, err = tb.Move(ctx, it, moved)
		require.ErrorIs(t, err, ErrInvalidWrite, "a move that keeps the key")

		noVer := it
		noVer.Ver = 0
		require.ErrorIs(t, tb.Delete(ctx, noVer), ErrInvalidWrite, "a delete needs the version")
		_, err = tb.Move(ctx, noVer, moved2(noVer))
		require.ErrorIs(t, err, ErrInvalidWrite, "a move needs the version (else it would write version 1)")

		// A native key cannot be empty.
		sn, err := New[wrSoftNote](cl, func(o *Options) { o.WriteThrough = wt })
		require.NoError(t, err)
		good, noKey := wrSoftNote{Team: "T", ID: "1"}, wrSoftNote{Team: "", ID: "1"}
		_, err = sn.Put(ctx, noKey)
		require.ErrorIs(t, err, ErrInvalidWrite, "an empty key value")
		require.ErrorContains(t, err, "cannot be a key value")
		require.ErrorIs(t, sn.Delete(ctx, noKey), ErrInvalidWrite)
		_, err = sn.Move(ctx, noKey, good)
		require.ErrorIs(t, err, ErrInvalidWrite)
		_, err = sn.Move(ctx, good, noKey)
		require.ErrorIs(t, err, ErrInvalidWrite)
		require.ErrorIs(t, sn.Update(ctx, noKey, expression.Set(expression.Name("text"), expression.Value("x"))), ErrInvalidWrite)

		require.Zero(t, cl.calls.Load(), "writeThrough=%v: no request may be sent", wt)
	}
}

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

// TestWriteDeleteWithoutVersion covers deletes of models without a version
// field, in both modes: existing and missing items, hard and soft.
func TestWriteDeleteWithoutVersion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("hard", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTable[wrNote](t)
		n := wrNote{Team: "T", ID: "1", Topic: "a", Text: "x"}
		_, err := tb.Put(ctx, n)
		require.NoError(t, err)
		require.NoError(t, tb.Delete(ctx, n))
		require.Nil(t, wrRaw(t, tb, n))
		require.NoError(t, tb.Delete(ctx, n), "deleting a missing item is no error")
	})
	t.Run("soft", func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTable[wrSoftNote](t)
		n := wrSoftNote{Team: "T", ID: "1", Text: "x"}
		_, err := tb.Put(ctx, n)
		require.NoError(t, err)
		require.NoError(t, tb.Delete(ctx, n))
		raw := wrRaw(t, tb, n)
		require.True(t, wrBool(raw["_deleted"]))
		require.Empty(t, wrIndex(t, tb, "", false, "T"))
		missing := wrSoftNote{Team: "T", ID: "404"}
		require.NoError(t, tb.Delete(ctx, missing), "deleting a missing item is no error (and creates nothing)")
		require.Nil(t, wrRaw(t, tb, missing))
	})
}

// TestWriteThroughWithoutVersion: write-through Put, a Put that changes the
// index key, and Delete for a model without a version field (the guard is
// then the key attributes as read).
func TestWriteThroughWithoutVersion(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	ctx := t.Context()
	tb, c := newTestTable[wrNote](t, wrWriteThrough)
	index := tb.tableOf(tb.s.byName["by_topic"])
	n := wrNote{Team: "T", ID: "1", Topic: "alpha", Text: "x"}
	_, err := tb.Put(ctx, n)
	require.NoError(t, err)
	require.Equal(t, []wrNote{n}, wrIndex(t, tb, "by_topic", false, "T"))

	n.Text = "y" // same index key: one put, no tombstone
	_, err = tb.Put(ctx, n)
	require.NoError(t, err)
	require.Equal(t, []wrNote{n}, wrIndex(t, tb, "by_topic", false, "T"))
	require.Len(t, wrScan(t, c, index), 1)

	n.Topic = "beta" // new index key: put the new entry, tombstone the old
	_, err = tb.Put(ctx, n)
	require.NoError(t, err)
	require.Equal(t, []wrNote{n}, wrIndex(t, tb, "by_topic", false, "T"))
	entries := wrScan(t, c, index)
	require.Len(t, entries, 2)
	var tombs []string
	for _, e := range entries {
		if wrBool(e["_deleted"]) {
			tombs = append(tombs, e["topic"].(*types.AttributeValueMemberS).Value)
		}
	}
	require.Equal(t, []string{"alpha"}, tombs)

	require.NoError(t, tb.Delete(ctx, n))
	require.Nil(t, wrRaw(t, tb, n))
	require.Empty(t, wrIndex(t, tb, "by_topic", false, "T"))
	require.Len(t, wrIndex(t, tb, "by_topic", true, "T"), 2)
	require.NoError(t, tb.Delete(ctx, n), "deleting a missing item is no error")

	// Moves of a model without a version guard on the key attributes as read.
	m := wrNote{Team: "T", ID: "2", Topic: "gamma"}
	_, err = tb.Put(ctx, m)
	require.NoError(t, err)
	to := m
	to.ID = "3"
	_, err = tb.Move(ctx, m, to)
	require.NoError(t, err)
	require.Nil(t, wrRaw(t, tb, m))
	require.NotNil(t, wrRaw(t, tb, to))
	require.Equal(t, []wrNote{to}, wrIndex(t, tb, "by_topic", false, "T"))
}

// TestWriteMove moves a ticket between statuses, in both modes.
func TestWriteMove(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, c := newTestTable[wrTicket](t, func(o *Options) { o.WriteThrough = wt })
			index := tb.tableOf(tb.s.byName["by_status"])
			it, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0, Title: "Printer"})
			require.NoError(t, err)

			to := it
			to.Status = "pending"
			moved, err := tb.Move(ctx, it, to)
			require.NoError(t, err)
			require.EqualValues(t, 2, moved.Ver)
			require.Equal(t, "pending", moved.Status)
			require.Nil(t, wrRaw(t, tb, it), "the old key is gone")
			require.Equal(t, "pending", wrRaw(t, tb, to)["status"].(*types.AttributeValueMemberS).Value)
			require.Equal(t, []wrTicket{moved}, wrIndex(t, tb, "", false, "T1"))
			if wt {
				require.Empty(t, wrPage(t, tb.Query("by_status", "T1").Where(Eq("open"))))
				require.Equal(t, []wrTicket{moved}, wrPage(t, tb.Query("by_status", "T1").Where(Eq("pending"))))
				all := wrIndex(t, tb, "by_status", true, "T1")
				require.Len(t, all, 2, "the old entry stays as a tombstone")
				require.Equal(t, "open", all[0].Status)
			} else {
				require.Empty(t, wrScan(t, c, index), "without write-through the stream path writes the index")
			}

			// The old item moved away: a move from it conflicts on the old key.
			again := it
			again.Status = "closed"
			_, err = tb.Move(ctx, it, again)
			ce := wrRequireConflict(t, err, "move", "the old key {PK=")
			require.Contains(t, ce.Failed[0], "STATUS#open")
			require.Contains(t, ce.Failed[0], "exists")

			// A stale version at the right key.
			stale := moved
			stale.Ver = 1
			_, err = tb.Move(ctx, stale, again)
			ce = wrRequireConflict(t, err, "move", "the item exists with version 1 (ConditionalCheckFailed)")
			require.Contains(t, ce.Failed[0], "the old key")

			// Moving onto an occupied key fails and changes nothing.
			occupant, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "closed", ID: "7", Created: wrT0.Add(time.Hour), Title: "other"})
			require.NoError(t, err)
			baseBefore := wrScan(t, c, tb.TableName())
			indexBefore := wrScan(t, c, index)
			_, err = tb.Move(ctx, moved, again)
			ce = wrRequireConflict(t, err, "move", "the new key {PK=")
			require.Contains(t, ce.Failed[0], "STATUS#closed")
			require.Contains(t, ce.Failed[0], "is free (ConditionalCheckFailed)")
			require.Equal(t, baseBefore, wrScan(t, c, tb.TableName()), "base table unchanged")
			require.Equal(t, indexBefore, wrScan(t, c, index), "index table unchanged")
			require.ElementsMatch(t, []wrTicket{moved, occupant}, wrIndex(t, tb, "", false, "T1"))
		})
	}
}

func moved2(it wrTicket) wrTicket {
	it.Status = "elsewhere"
	return it
}

func wrPage[T any](t *testing.T, q Query[T]) []T {
	t.Helper()
	p, err := q.Page(t.Context())
	require.NoError(t, err)
	return p.Items
}

// wrMany declares 50 index tables: a write-through Put that changes every
// index key needs 1 + 50 + 50 actions, a Move 2 + 50 + 50.
type wrMany struct {
	_    TableSpec `ddbindex:"wr-many,pk=PK,sk=SK"`
	_    IndexSpec `ddbindex:"ix00,type=table"`
	_    IndexSpec `ddbindex:"ix01,type=table"`
	_    IndexSpec `ddbindex:"ix02,type=table"`
	_    IndexSpec `ddbindex:"ix03,type=table"`
	_    IndexSpec `ddbindex:"ix04,type=table"`
	_    IndexSpec `ddbindex:"ix05,type=table"`
	_    IndexSpec `ddbindex:"ix06,type=table"`
	_    IndexSpec `ddbindex:"ix07,type=table"`
	_    IndexSpec `ddbindex:"ix08,type=table"`
	_    IndexSpec `ddbindex:"ix09,type=table"`
	_    IndexSpec `ddbindex:"ix10,type=table"`
	_    IndexSpec `ddbindex:"ix11,type=table"`
	_    IndexSpec `ddbindex:"ix12,type=table"`
	_    IndexSpec `ddbindex:"ix13,type=table"`
	_    IndexSpec `ddbindex:"ix14,type=table"`
	_    IndexSpec `ddbindex:"ix15,type=table"`
	_    IndexSpec `ddbindex:"ix16,type=table"`
	_    IndexSpec `ddbindex:"ix17,type=table"`
	_    IndexSpec `ddbindex:"ix18,type=table"`
	_    IndexSpec `ddbindex:"ix19,type=table"`
	_    IndexSpec `ddbindex:"ix20,type=table"`
	_    IndexSpec `ddbindex:"ix21,type=table"`
	_    IndexSpec `ddbindex:"ix22,type=table"`
	_    IndexSpec `ddbindex:"ix23,type=table"`
	_    IndexSpec `ddbindex:"ix24,type=table"`
	_    IndexSpec `ddbindex:"ix25,type=table"`
	_    IndexSpec `ddbindex:"ix26,type=table"`
	_    IndexSpec `ddbindex:"ix27,type=table"`
	_    IndexSpec `ddbindex:"ix28,type=table"`
	_    IndexSpec `ddbindex:"ix29,type=table"`
	_    IndexSpec `ddbindex:"ix30,type=table"`
	_    IndexSpec `ddbindex:"ix31,type=table"`
	_    IndexSpec `ddbindex:"ix32,type=table"`
	_    IndexSpec `ddbindex:"ix33,type=table"`
	_    IndexSpec `ddbindex:"ix34,type=table"`
	_    IndexSpec `ddbindex:"ix35,type=table"`
	_    IndexSpec `ddbindex:"ix36,type=table"`
	_    IndexSpec `ddbindex:"ix37,type=table"`
	_    IndexSpec `ddbindex:"ix38,type=table"`
	_    IndexSpec `ddbindex:"ix39,type=table"`
	_    IndexSpec `ddbindex:"ix40,type=table"`
	_    IndexSpec `ddbindex:"ix41,type=table"`
	_    IndexSpec `ddbindex:"ix42,type=table"`
	_    IndexSpec `ddbindex:"ix43,type=table"`
	_    IndexSpec `ddbindex:"ix44,type=table"`
	_    IndexSpec `ddbindex:"ix45,type=table"`
	_    IndexSpec `ddbindex:"ix46,type=table"`
	_    IndexSpec `ddbindex:"ix47,type=table"`
	_    IndexSpec `ddbindex:"ix48,type=table"`
	_    IndexSpec `ddbindex:"ix49,type=table"`
	Team string    `dynamodbav:"team" ddbindex:"pk;ix00.pk;ix01.pk;ix02.pk;ix03.pk;ix04.pk;ix05.pk;ix06.pk;ix07.pk;ix08.pk;ix09.pk;ix10.pk;ix11.pk;ix12.pk;ix13.pk;ix14.pk;ix15.pk;ix16.pk;ix17.pk;ix18.pk;ix19.pk;ix20.pk;ix21.pk;ix22.pk;ix23.pk;ix24.pk;ix25.pk;ix26.pk;ix27.pk;ix28.pk;ix29.pk;ix30.pk;ix31.pk;ix32.pk;ix33.pk;ix34.pk;ix35.pk;ix36.pk;ix37.pk;ix38.pk;ix39.pk;ix40.pk;ix41.pk;ix42.pk;ix43.pk;ix44.pk;ix45.pk;ix46.pk;ix47.pk;ix48.pk;ix49.pk"`
	ID   string    `dynamodbav:"id" ddbindex:"sk"`
	Rank int       `dynamodbav:"rank" ddbindex:"ix00.sk;ix01.sk;ix02.sk;ix03.sk;ix04.sk;ix05.sk;ix06.sk;ix07.sk;ix08.sk;ix09.sk;ix10.sk;ix11.sk;ix12.sk;ix13.sk;ix14.sk;ix15.sk;ix16.sk;ix17.sk;ix18.sk;ix19.sk;ix20.sk;ix21.sk;ix22.sk;ix23.sk;ix24.sk;ix25.sk;ix26.sk;ix27.sk;ix28.sk;ix29.sk;ix30.sk;ix31.sk;ix32.sk;ix33.sk;ix34.sk;ix35.sk;ix36.sk;ix37.sk;ix38.sk;ix39.sk;ix40.sk;ix41.sk;ix42.sk;ix43.sk;ix44.sk;ix45.sk;ix46.sk;ix47.sk;ix48.sk;ix49.sk"`
}

// TestWriteThroughTooManyActions checks the 100-action limit before the
// transaction is sent. Only the base table exists: the writes that would
// exceed the limit must fail before touching the (absent) index tables.
func TestWriteThroughTooManyActions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	tb, err := New[wrMany](c, wrWriteThrough, func(o *Options) { o.TableName = func(s string) string { return prefix + "-" + s } })
	require.NoError(t, err)
	require.Len(t, tb.s.indexes, 50)
	ddbtest.CreateTable(t, c, tb.CreateTableInputs(false)[0])

	old := wrMany{Team: "T", ID: "1", Rank: 1}
	putBase(t, tb, old)
	changed := old
	changed.Rank = 2
	_, err = tb.Put(ctx, changed)
	require.ErrorIs(t, err, ErrTooManyActions)
	require.Equal(t, "DDBX-602", Code(err))
	require.ErrorContains(t, err, "101 actions")

	to := old
	to.ID = "2"
	_, err = tb.Move(ctx, old, to)
	require.ErrorIs(t, err, ErrTooManyActions)
	require.ErrorContains(t, err, "102 actions")

	require.Equal(t, []wrMany{old}, wrIndex(t, tb, "", false, "T"), "nothing was written")
}

// TestWriteErrorsFromDynamoDB: errors that are not lost conditions pass
// through as they are, not as conflicts.
func TestWriteErrorsFromDynamoDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	for _, wt := range []bool{false, true} {
		tb, err := New[wrTicket](c, func(o *Options) {
			o.TableName = func(s string) string { return prefix + "-missing-" + s }
			o.WriteThrough = wt
		})
		require.NoError(t, err)
		it := wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Ver: 1}
		errs := map[string]error{
			"put":    func() error { _, err := tb.Put(ctx, it); return err }(),
			"delete": tb.Delete(ctx, it),
		}
		if wt || ddbtest.Has(ddbtest.Transactions) { // a move is a transaction unless the read fails first
			to := it
			to.Status = "closed"
			_, errs["move"] = tb.Move(ctx, it, to)
		}
		for name, err := range errs {
			require.Error(t, err, "%s on a missing table (writeThrough=%v)", name, wt)
			require.NotErrorIs(t, err, ErrConflict, "%s: %v", name, err)
			var nf *types.ResourceNotFoundException
			require.ErrorAs(t, err, &nf, "%s: %v", name, err)
		}
		img, err := tb.Marshal(it)
		require.NoError(t, err)
		st, err := tb.Apply(ctx, Change{New: img, Version: "1"})
		require.Error(t, err, "Apply to a missing index table")
		require.ErrorContains(t, err, "write index table")
		require.Zero(t, st.Puts+st.Stale)
		if !wt {
			err := tb.Update(ctx, it, expression.Set(expression.Name("title"), expression.Value("x")))
			require.NotErrorIs(t, err, ErrConflict)
			var nf *types.ResourceNotFoundException
			require.ErrorAs(t, err, &nf)
		}
	}
}

// wrUintVer has an unsigned version field.
type wrUintVer struct {
	_   TableSpec `ddbindex:"wr-uint"`
	K   string    `dynamodbav:"k" ddbindex:"pk"`
	Ver uint32    `dynamodbav:"ver" ddbindex:"version"`
}

func TestWriteUnsignedVersion(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[wrUintVer](t)
	v1, err := tb.Put(t.Context(), wrUintVer{K: "a"})
	require.NoError(t, err)
	require.EqualValues(t, 1, v1.Ver)
	v2, err := tb.Put(t.Context(), v1)
	require.NoError(t, err)
	require.EqualValues(t, 2, v2.Ver)
	_, err = tb.Put(t.Context(), v1)
	require.ErrorIs(t, err, ErrConflict)
}

// TestWriteThroughMissingIndexTable: a transaction DynamoDB rejects for a
// reason other than a condition is reported as that error.
func TestWriteThroughMissingIndexTable(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	tb, err := New[wrTicket](c, wrWriteThrough, func(o *Options) { o.TableName = func(s string) string { return prefix + "-" + s } })
	require.NoError(t, err)
	ddbtest.CreateTable(t, c, tb.CreateTableInputs(false)[0]) // no index table
	_, err = tb.Put(t.Context(), wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "ddbindex: put")
}

// TestMoveConcurrency: 16 goroutines move (status changes) and update the
// same few tickets, write-through, retrying lost conditions. At the end every
// ticket exists exactly once in the base table, its version counts every
// successful write, and the index table holds exactly one live entry per
// ticket, equal to it.
func TestMoveConcurrency(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	ctx := t.Context()
	tb, c := newTestTable[wrTicket](t, wrWriteThrough)
	const (
		workers     = 16
		opsEach     = 12
		maxAttempts = 200
		team        = "CONC"
	)
	statuses := []string{"open", "pending", "waiting", "closed"}
	ids := []string{"c0", "c1", "c2", "c3"}
	for i, id := range ids {
		_, err := tb.Put(ctx, wrTicket{Team: team, Status: "open", ID: id, Created: wrT0.Add(time.Duration(i) * time.Minute), Title: "new"})
		require.NoError(t, err)
	}
	find := func(id string) (wrTicket, bool, error) {
		for it, err := range tb.Query("", team).ConsistentRead().All(ctx) {
			if err != nil {
				return wrTicket{}, false, err
			}
			if it.ID == id {
				return it, true, nil
			}
		}
		return wrTicket{}, false, nil
	}
	var (
		successes [4]atomic.Int64
		moves     atomic.Int64
		puts      atomic.Int64
		conflicts atomic.Int64
		wg        sync.WaitGroup
	)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for op := range opsEach {
				k := rng.IntN(len(ids))
				done := false
				for attempt := 0; attempt < maxAttempts && !done; attempt++ {
					cur, ok, err := find(ids[k])
					if err != nil {
						t.Errorf("find %s: %v", ids[k], err)
						return
					}
					if !ok {
						// Between a move's delete and put no reader sees a gap (one
						// transaction), so a missing ticket is a lost item.
						t.Errorf("ticket %s is missing", ids[k])
						return
					}
					if rng.IntN(2) == 0 {
						to := cur
						for to.Status == cur.Status {
							to.Status = statuses[rng.IntN(len(statuses))]
						}
						_, err = tb.Move(ctx, cur, to)
						if err == nil {
							moves.Add(1)
						}
					} else {
						cur.Title = fmt.Sprintf("g%d op%d", g, op)
						_, err = tb.Put(ctx, cur)
						if err == nil {
							puts.Add(1)
						}
					}
					switch {
					case err == nil:
						successes[k].Add(1)
						done = true
					case errors.Is(err, ErrConflict):
						conflicts.Add(1)
					default:
						t.Errorf("worker %d: %v", g, err)
						return
					}
				}
				if !done {
					t.Errorf("worker %d: op %d on %s did not succeed in %d attempts", g, op, ids[k], maxAttempts)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d moves, %d puts, %d conflicts retried", moves.Load(), puts.Load(), conflicts.Load())
	require.EqualValues(t, workers*opsEach, moves.Load()+puts.Load())
	require.Positive(t, moves.Load())
	require.Positive(t, puts.Load())

	base := wrIndex(t, tb, "", true, team)
	require.Len(t, base, len(ids), "every ticket exactly once, tombstones included: %+v", base)
	byID := map[string]wrTicket{}
	for _, it := range base {
		_, dup := byID[it.ID]
		require.False(t, dup, "ticket %s twice", it.ID)
		byID[it.ID] = it
	}
	for k, id := range ids {
		it, ok := byID[id]
		require.True(t, ok, "ticket %s lost", id)
		require.EqualValues(t, 1+successes[k].Load(), it.Ver, "ticket %s: every successful write is one version", id)
	}
	live := wrIndex(t, tb, "by_status", false, team)
	require.Len(t, live, len(ids), "one live index entry per ticket")
	for _, e := range live {
		require.Equal(t, byID[e.ID], e, "the index entry equals the base item")
	}
	// Tombstones are at other keys than the live entries.
	liveKeys := map[string]bool{}
	for _, e := range live {
		liveKeys[e.ID+"/"+e.Status] = true
	}
	entries := wrScan(t, c, tb.tableOf(tb.s.byName["by_status"]))
	for _, e := range entries {
		var it wrTicket
		require.NoError(t, attributevalue.UnmarshalMap(e, &it))
		if wrBool(e["_deleted"]) {
			require.False(t, liveKeys[it.ID+"/"+it.Status], "a tombstone shadows a live entry")
		}
	}
	require.LessOrEqual(t, len(entries), len(ids)*len(statuses), "at most one entry per ticket and status")
}

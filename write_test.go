package ddbindex

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	key, _, err := tb.keyOf(&item)
	require.NoError(t, err)
	out, err := tb.current(t.Context(), key, nil)
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

func wrRequireConflict(t *testing.T, err error, op string, wantFailed ...string) *Error {
	t.Helper()
	require.ErrorIs(t, err, ErrConflict)
	require.Equal(t, "DDBX-600", Code(err))
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, op, ce.Op)
	require.Len(t, ce.Failed, len(wantFailed), "failed conditions: %q", ce.Failed)
	for i, w := range wantFailed {
		require.Contains(t, ce.Failed[i], w)
	}
	require.Contains(t, ce.Error(), "failed: ")
	return ce
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
func (c *wrNoClient) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
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

		// Base key attributes and components are refused in both modes;
		// an index-table key component in write-through mode.
		refused := map[string]string{"PK": "use Move", "SK": "use Move", "team": "use Move", "status": "use Move", "id": "use Move"}
		if wt {
			refused["created"] = "index table by_status's key, which write-through mode keeps in the same transaction as the base item: use Put"
		}
		for attr, want := range refused {
			for name, upd := range map[string]Update{
				"set":    Set("title", "x").Set(attr, "y"),
				"remove": Remove(attr),
				"add":    Add(attr, 1),
			} {
				err := tb.Update(ctx, it, upd)
				require.ErrorIs(t, err, ErrKeyChange, "%s %s", name, attr)
				require.Equal(t, "DDBX-601", Code(err))
				require.ErrorContains(t, err, attr)
				require.ErrorContains(t, err, want, "%s %s", name, attr)
			}
		}
		// The attributes ddbindex owns.
		for _, attr := range []string{"ver", "_wtok", "_deleted"} {
			err := tb.Update(ctx, it, Set(attr, true))
			require.ErrorIs(t, err, ErrInvalidWrite, attr)
			require.ErrorContains(t, err, attr)
		}
		err = tb.Update(ctx, it, Update{})
		require.ErrorIs(t, err, ErrInvalidWrite, "an empty update")
		if wt {
			err = tb.Update(ctx, it, Set("title", "x"))
			require.ErrorIs(t, err, ErrUnsupported)
			require.ErrorContains(t, err, "use Put")
		} else {
			// In stream mode an index-table key component may change, but
			// not to a value the stream consumer would refuse on every pass.
			err = tb.Update(ctx, it, Set("created", "not a time"))
			require.ErrorIs(t, err, ErrInvalidWrite)
			require.ErrorContains(t, err, "created")
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
		require.ErrorIs(t, sn.Update(ctx, noKey, Set("text", "x")), ErrInvalidWrite)

		require.Zero(t, cl.calls.Load(), "writeThrough=%v: no request may be sent", wt)
	}
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
	ddbtest.CreateTable(t, c, tableInputs(tb, false)[0])

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
		st, err := tb.Apply(ctx, []Change{{New: img, Version: "1"}})
		require.Error(t, err, "Apply to a missing index table")
		require.ErrorContains(t, err, "write index table")
		require.Zero(t, st.Puts+st.Stale)
		if !wt {
			err := tb.Update(ctx, it, Set("title", "x"))
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
	Ver uint64    `dynamodbav:"ver" ddbindex:"version"`
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
	ddbtest.CreateTable(t, c, tableInputs(tb, false)[0]) // no index table
	_, err = tb.Put(t.Context(), wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "ddbindex: put")
}

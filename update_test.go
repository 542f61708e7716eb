package ddbindex

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

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
	wrRequireConflict(t, err, "update", "the item is at version 1, not deleted; found no item with this key: Update changes existing items only")
	require.Len(t, wrIndex(t, tb, "", true, "T1"), 1, "Update does not create items")
}

func TestMergeUpdate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		ops  map[string][]string
		want string
	}{
		{"SET #0 = :0\n", map[string][]string{"SET": {"#t = :t"}}, "SET #0 = :0, #t = :t\n"},
		{"REMOVE #0\n", map[string][]string{"SET": {"#t = :t"}, "ADD": {"#v :one"}}, "REMOVE #0\nSET #t = :t\nADD #v :one\n"},
		{"ADD #0 :0\nSET #1 = :1, #2 = if_not_exists(#2, :2)\n", map[string][]string{"SET": {"#t = :t"}, "ADD": {"#v :one"}},
			"ADD #0 :0, #v :one\nSET #1 = :1, #2 = if_not_exists(#2, :2), #t = :t\n"},
		{"", map[string][]string{"SET": {"#t = :t"}}, "SET #t = :t\n"},
	} {
		require.Equal(t, tc.want, mergeUpdate(tc.in, tc.ops), "%q", tc.in)
	}
}

// TestUpdateLeavesTheCallersBuilderAlone: the version and token operations
// Update adds do not leak into the caller's UpdateBuilder (whose copies
// share their operations), so a builder can be used for many updates.
func TestUpdateLeavesTheCallersBuilderAlone(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[rtDoc](t)
	v1, err := tb.Put(t.Context(), rtDoc{ID: "d", Topic: "go"})
	require.NoError(t, err)
	upd := expression.Set(expression.Name("title"), expression.Value("x")).Add(expression.Name("score"), expression.Value(1))
	before, err := expression.NewBuilder().WithUpdate(upd).Build()
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, tb.Update(t.Context(), rtDoc{ID: "d"}, upd))
	}
	after, err := expression.NewBuilder().WithUpdate(upd).Build()
	require.NoError(t, err)
	require.Equal(t, before.Names(), after.Names())
	require.Equal(t, before.Update(), after.Update())
	img := wrRaw(t, tb, v1)
	require.EqualValues(t, 4, wrNum(t, img["ver"]))
	require.EqualValues(t, 3, wrNum(t, img["score"]))
}

// upTicket keeps its base key immutable (team, id) and its mutable values
// in index keys, as seed 000 recommends: a GSI whose derived sort key is
// status, then opened (by_status), a native GSI (queue | rank), a native LSI
// (prio), a GSI whose native partition is no base key field and whose sort
// key is the labelled status (by_queue), and a derived LSI (status, then
// prio).
type upTicket struct {
	_       TableSpec `ddbindex:"up-tickets,softdelete"`
	_       IndexSpec `ddbindex:"by_status,type=gsi,sk=GSK"`
	_       IndexSpec `ddbindex:"by_rank,type=gsi"`
	_       IndexSpec `ddbindex:"by_prio,type=lsi"`
	_       IndexSpec `ddbindex:"by_queue,type=gsi,sk=QSK"`
	_       IndexSpec `ddbindex:"by_state,type=lsi,sk=LSK"`
	Team    string    `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID      string    `dynamodbav:"id" ddbindex:"sk"`
	Status  string    `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0;by_state.sk:0;by_queue.sk,label=S"`
	Opened  time.Time `dynamodbav:"opened" ddbindex:"by_status.sk:1"`
	Queue   string    `dynamodbav:"queue" ddbindex:"by_rank.pk;by_queue.pk"`
	Rank    int       `dynamodbav:"rank" ddbindex:"by_rank.sk"`
	Prio    int       `dynamodbav:"prio" ddbindex:"by_prio.sk;by_state.sk:1"`
	Title   string    `dynamodbav:"title"`
	Ver     int64     `dynamodbav:"ver" ddbindex:"version"`
	Deleted bool      `dynamodbav:"-" ddbindex:"deleted"`
}

var upT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// upKey is the key Update needs: the base key alone. Every other field,
// the native GSI partition queue among them (an empty string is no key
// value), is unset.
func upKey(it upTicket) upTicket { return upTicket{Team: it.Team, ID: it.ID} }

// upIDs lists the ids of a query's items, in order.
func upIDs(t *testing.T, q Query[upTicket]) []string {
	t.Helper()
	var out []string
	for it, err := range q.All(t.Context()) {
		require.NoError(t, err)
		out = append(out, it.ID)
	}
	return out
}

// upRequireKeys checks that the stored item's derived key attributes are
// exactly those Put would write for the item as it now is: no stale derived
// key, and none for an index the item has left.
func upRequireKeys(t *testing.T, tb *Table[upTicket], it upTicket) upTicket {
	t.Helper()
	raw := wrRaw(t, tb, it)
	require.NotNil(t, raw)
	var now upTicket
	require.NoError(t, tb.unmarshalItem(raw, &now))
	want, err := tb.Marshal(now)
	require.NoError(t, err)
	for _, a := range []string{"GSK", "QSK", "LSK"} {
		require.Equal(t, want[a], raw[a], "derived attribute %s of %+v", a, now)
	}
	return now
}

// TestUpdateIndexKeys: Update changes the GSI and LSI keys of the seed's
// pattern in place, with a key that holds the base key alone, on both
// servers: a derived GSI sort key is recomputed (and the item moves in the
// query order), a derived LSI sort key too, native GSI and LSI keys change as
// any attribute, removing a component takes the item out of the index, and
// setting it again brings it back.
func TestUpdateIndexKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[upTicket](t)
	for i, st := range []string{"open", "open", "open"} {
		_, err := tb.Put(ctx, upTicket{Team: "T", ID: fmt.Sprint(i), Status: st, Opened: upT0.Add(time.Duration(i) * time.Hour),
			Queue: "Q", Rank: 10 * i, Prio: 3 - i, Title: fmt.Sprint("ticket ", i)})
		require.NoError(t, err)
	}
	byStatus := tb.Query("by_status", "T")
	require.Equal(t, []string{"0", "1", "2"}, upIDs(t, byStatus.Where(Eq("open"))))

	// A derived GSI sort key component: status. Update reads opened (the
	// other component) and recomputes GSK, and LSK (status, prio).
	one := upTicket{Team: "T", ID: "1"}
	require.NoError(t, tb.Update(ctx, one, expression.Set(expression.Name("status"), expression.Value("closed"))))
	now := upRequireKeys(t, tb, one)
	require.Equal(t, "closed", now.Status)
	require.EqualValues(t, 2, now.Ver)
	require.Equal(t, []string{"0", "2"}, upIDs(t, byStatus.Where(Eq("open"))))
	require.Equal(t, []string{"1"}, upIDs(t, byStatus.Where(Eq("closed"))))
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, byStatus), "closed sorts before open")
	require.Equal(t, []string{"1"}, upIDs(t, tb.Query("by_state", "T").Where(Eq("closed")).ConsistentRead()))
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, tb.Query("by_queue", "Q")), "QSK is computed with the stored queue")

	// Both components at once: nothing to read.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "0"}, expression.
		Set(expression.Name("status"), expression.Value("closed")).
		Set(expression.Name("opened"), expression.Value(upT0.Add(5*time.Hour)))))
	upRequireKeys(t, tb, upTicket{Team: "T", ID: "0"})
	require.Equal(t, []string{"1", "0"}, upIDs(t, byStatus.Where(Eq("closed"))), "0 was opened later now")

	// A native GSI sort key changes by any update expression, ADD too.
	byRank := tb.Query("by_rank", "Q")
	require.Equal(t, []string{"0", "1", "2"}, upIDs(t, byRank))
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "0"}, expression.Add(expression.Name("rank"), expression.Value(25))))
	require.Equal(t, []string{"1", "2", "0"}, upIDs(t, byRank))
	// Its partition too: the entry moves to another partition.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "2"}, expression.Set(expression.Name("queue"), expression.Value("R"))))
	require.Equal(t, []string{"1", "0"}, upIDs(t, byRank))
	require.Equal(t, []string{"2"}, upIDs(t, tb.Query("by_rank", "R")))

	// prio is the native LSI by_prio's sort key and a component of the
	// derived LSI by_state: set to a value, both follow.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "2"}, expression.Set(expression.Name("prio"), expression.Value(9))))
	upRequireKeys(t, tb, upTicket{Team: "T", ID: "2"})
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, tb.Query("by_prio", "T").ConsistentRead().Where(Le(9))))
	require.Equal(t, []string{"2"}, upIDs(t, tb.Query("by_prio", "T").ConsistentRead().Where(Eq(9))))

	// REMOVE status: the item leaves both indexes status keys; SET brings
	// it back, its key recomputed from the stored opened and prio.
	require.NoError(t, tb.Update(ctx, one, expression.Remove(expression.Name("status"))))
	raw := wrRaw(t, tb, one)
	require.NotContains(t, raw, "GSK")
	require.NotContains(t, raw, "QSK")
	require.NotContains(t, raw, "LSK")
	require.Equal(t, []string{"0"}, upIDs(t, byStatus.Where(Eq("closed"))))
	require.NoError(t, tb.Update(ctx, one, expression.Set(expression.Name("status"), expression.Value("pending"))))
	upRequireKeys(t, tb, one)
	require.Equal(t, []string{"0", "2", "1"}, upIDs(t, byStatus))

	// A versioned key: the version is checked too.
	stale := upTicket{Team: "T", ID: "1", Ver: 1}
	err := tb.Update(ctx, stale, expression.Set(expression.Name("status"), expression.Value("open")))
	ce := wrRequireConflict(t, err, "update", "the item is at version 1, not deleted; found it live at version")
	require.Contains(t, ce.Failed[0], "another write came first; re-read it")
	upRequireKeys(t, tb, one)

	// A deleted item is not updated: to a caller it is absent.
	cur := upRequireKeys(t, tb, one)
	require.NoError(t, tb.Delete(ctx, cur))
	for _, upd := range []expression.UpdateBuilder{
		expression.Set(expression.Name("title"), expression.Value("x")),         // no read
		expression.Set(expression.Name("status"), expression.Value("reopened")), // with a read
	} {
		err = tb.Update(ctx, one, upd)
		ce = wrRequireConflict(t, err, "update", "the item exists, not deleted")
		require.Contains(t, ce.Failed[0], "found it deleted at version 5: Update does not change a deleted item; to create it again, put it with version 0")
	}
	require.Equal(t, "pending", wrRaw(t, tb, one)["status"].(*types.AttributeValueMemberS).Value)
}

// upHookClient is the test server's client with hooks that run before its
// UpdateItem and PutItem calls (numbered from 1): another writer's change,
// interleaved deterministically between a call's read and its write.
type upHookClient struct {
	*dynamodb.Client
	beforeUpdate, beforePut func(n int)
	updates, puts           int
}

func (c *upHookClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates++
	if c.beforeUpdate != nil {
		c.beforeUpdate(c.updates)
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

func (c *upHookClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts++
	if c.beforePut != nil {
		c.beforePut(c.puts)
	}
	return c.Client.PutItem(ctx, in, o...)
}

// hooked returns a Table for the same tables as tb whose requests go
// through hc.
func hooked[T any](t *testing.T, tb *Table[T], c *dynamodb.Client) (*Table[T], *upHookClient) {
	t.Helper()
	hc := &upHookClient{Client: c}
	h, err := New[T](hc, func(o *Options) { *o = tb.opts })
	require.NoError(t, err)
	return h, hc
}

// TestUpdateDerivedKeyRace: another writer changes a component that Update
// read to compute a derived key, between Update's read and its write. The
// write's condition fails; Update reads again and retries once, so one lost
// race still applies the update, computed from the other writer's value;
// losing it twice is a conflict. Either way the stored derived keys are
// those of the stored components: never stale.
func TestUpdateDerivedKeyRace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, c := newTestTable[upTicket](t)
	h, hc := hooked(t, tb, c)
	it, err := tb.Put(ctx, upTicket{Team: "T", ID: "1", Status: "open", Opened: upT0, Queue: "Q", Prio: 1})
	require.NoError(t, err)
	key := upKey(it)
	other := func(opened time.Time, prio int) {
		t.Helper()
		require.NoError(t, tb.Update(ctx, key, expression.Set(expression.Name("opened"), expression.Value(opened)).Set(expression.Name("prio"), expression.Value(prio))))
	}

	// Lost once: applied on the retry.
	hc.beforeUpdate = func(n int) {
		if n == 1 {
			other(upT0.Add(time.Hour), 2)
		}
	}
	require.NoError(t, h.Update(ctx, key, expression.Set(expression.Name("status"), expression.Value("closed"))))
	require.Equal(t, 2, hc.updates, "one retry")
	now := upRequireKeys(t, tb, key)
	require.Equal(t, "closed", now.Status)
	require.Equal(t, upT0.Add(time.Hour), now.Opened)
	require.Equal(t, 2, now.Prio)
	require.EqualValues(t, 3, now.Ver)

	// Lost twice: a conflict that says so, and nothing stale.
	hc.updates = 0
	hc.beforeUpdate = func(n int) { other(upT0.Add(time.Duration(n+1)*time.Hour), 2+n) }
	err = h.Update(ctx, key, expression.Set(expression.Name("status"), expression.Value("pending")))
	ce := wrRequireConflict(t, err, "update", "the item exists, not deleted, with opened ")
	require.Equal(t, 2, hc.updates)
	require.Contains(t, ce.Failed[0], "prio 3 as read")
	require.Contains(t, ce.Failed[0], "changed again by another writer while Update computed the index keys from them: retry the update")
	now = upRequireKeys(t, tb, key)
	require.Equal(t, "closed", now.Status, "the update was not applied")
	require.Equal(t, upT0.Add(3*time.Hour), now.Opened)

	// Not a race: the item was deleted in between.
	hc.updates = 0
	hc.beforeUpdate = func(n int) {
		if n == 1 {
			cur := upRequireKeys(t, tb, key)
			require.NoError(t, tb.Delete(ctx, cur))
		}
	}
	err = h.Update(ctx, key, expression.Set(expression.Name("status"), expression.Value("pending")))
	ce = wrRequireConflict(t, err, "update", "the item exists, not deleted, with opened")
	require.Equal(t, 1, hc.updates, "no retry")
	require.Contains(t, ce.Failed[0], "found it deleted at version")
}

// TestUpdateIndexKeysRefused: what Update refuses, before any request.
func TestUpdateIndexKeysRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cl := &wrNoClient{}
	tb, err := New[upTicket](cl)
	require.NoError(t, err)
	key := upTicket{Team: "T", ID: "1"}
	for _, tc := range []struct {
		name string
		upd  expression.UpdateBuilder
		is   error
		want []string
	}{
		{"base partition", expression.Set(expression.Name("team"), expression.Value("U")), ErrKeyChange, []string{"team", "primary key", "use Move"}},
		{"base sort", expression.Remove(expression.Name("id")), ErrKeyChange, []string{"id", "use Move"}},
		{"derived GSI attribute", expression.Set(expression.Name("GSK"), expression.Value("x")), ErrKeyChange, []string{"GSK", "derived key attribute of index by_status", "status, opened", "update those instead"}},
		{"derived LSI attribute", expression.Remove(expression.Name("LSK")), ErrKeyChange, []string{"LSK", "index by_state"}},
		{"ADD to a derived component", expression.Add(expression.Name("prio"), expression.Value(1)), ErrKeyChange, []string{"prio", "index by_state's derived key, by add", "SET prio = :value, or REMOVE prio", "Put"}},
		{"if_not_exists on a derived component", expression.Set(expression.Name("status"), expression.IfNotExists(expression.Name("status"), expression.Value("x"))), ErrKeyChange, []string{"status", "by set"}},
		{"arithmetic on a derived component", expression.Set(expression.Name("prio"), expression.Plus(expression.Name("prio"), expression.Value(1))), ErrKeyChange, []string{"prio", "by set"}},
		{"a time that is no time", expression.Set(expression.Name("opened"), expression.Value("yesterday")), ErrInvalidWrite, []string{"opened", "index by_status's key", "cannot hold"}},
		{"a string for an int", expression.Set(expression.Name("rank"), expression.Value("high")), ErrInvalidWrite, []string{"rank", "by_rank"}},
		{"an empty native GSI key", expression.Set(expression.Name("queue"), expression.Value("")), ErrInvalidWrite, []string{"queue", "REMOVE it"}},
		{"a NULL native LSI key", expression.Set(expression.Name("prio"), expression.Value(nil)), ErrInvalidWrite, []string{"prio", "REMOVE it"}},
		{"a key too long", expression.Set(expression.Name("queue"), expression.Value(strings.Repeat("q", 2049))), ErrInvalidWrite, []string{"queue", "2048-byte limit"}},
		{"the version", expression.Add(expression.Name("ver"), expression.Value(1)), ErrInvalidWrite, []string{"ver", "owns"}},
		{"the tombstone marker", expression.Set(expression.Name("_deleted"), expression.Value(true)), ErrInvalidWrite, []string{"_deleted", "use Delete"}},
	} {
		err := tb.Update(ctx, key, tc.upd)
		require.ErrorIs(t, err, tc.is, tc.name)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, tc.name)
		}
	}
	require.Zero(t, cl.calls.Load(), "no request may be sent")
}

// TestUpdateParse: the operations of built update expressions.
func TestUpdateParse(t *testing.T) {
	t.Parallel()
	upd := expression.Set(expression.Name("a"), expression.Value(1)).
		Set(expression.Name("b"), expression.ListAppend(expression.Name("b"), expression.Value([]int{1, 2}))).
		Set(expression.Name("c.d"), expression.Value("x")).
		Set(expression.Name("e"), expression.IfNotExists(expression.Name("e"), expression.Value(0))).
		Remove(expression.Name("f[1]")).Remove(expression.Name("g")).
		Add(expression.Name("h"), expression.Value(2)).
		Delete(expression.Name("i"), expression.Value([]string{"x"}))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(expression.Name("z").AttributeExists()).Build()
	require.NoError(t, err)
	ops, err := parseUpdate(aws.ToString(expr.Update()), expr.Names(), expr.Values())
	require.NoError(t, err)
	got := map[string]updateOp{}
	for _, op := range ops {
		got[op.attr] = op
	}
	require.Len(t, got, 8)
	require.Equal(t, "SET", got["a"].mode)
	require.Equal(t, &types.AttributeValueMemberN{Value: "1"}, got["a"].value)
	require.False(t, got["a"].nested)
	require.Nil(t, got["b"].value, "list_append is no value")
	require.True(t, got["c"].nested)
	require.Nil(t, got["e"].value)
	require.True(t, got["f"].nested)
	require.Equal(t, "REMOVE", got["g"].mode)
	require.Equal(t, "ADD", got["h"].mode)
	require.Nil(t, got["h"].value)
	require.Equal(t, "DELETE", got["i"].mode)
	_, err = parseUpdate("SET #9 = :0\n", map[string]string{}, nil)
	require.Error(t, err)
}

// TestUpdateIndexTableKey: with index tables kept from the stream, Update
// may change an index-table key component; the stream path (Apply, from the
// item's old and new images) moves the entry and tombstones the old one. A
// value the consumer could never key is refused before the write, and in
// write-through mode the change is refused (use Put).
func TestUpdateIndexTableKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[tsNote](t)
	n, err := tb.Put(ctx, tsNote{Team: "T", ID: "1", Topic: "a", Text: "x"})
	require.NoError(t, err)
	img1 := wrRaw(t, tb, n)
	_, err = tb.Apply(ctx, []Change{{New: img1, Version: "1"}})
	require.NoError(t, err)

	key := tsNote{Team: "T", ID: "1"}
	require.NoError(t, tb.Update(ctx, key, expression.Set(expression.Name("topic"), expression.Value("b"))))
	img2 := wrRaw(t, tb, n)
	st, err := tb.Apply(ctx, []Change{{Old: img1, New: img2, Version: "2"}})
	require.NoError(t, err)
	require.Equal(t, ApplyStats{Changes: 1, Puts: 1, Deletes: 1}, st)
	want := n
	want.Topic = "b"
	require.Equal(t, []tsNote{want}, wrIndex(t, tb, "by_topic", false, "T"))
	all := wrIndex(t, tb, "by_topic", true, "T")
	require.Len(t, all, 2)
	require.Equal(t, "a", all[0].Topic)
	require.True(t, all[0].Gone, "the old entry is a tombstone")

	// 1,024 bytes of topic, then # and the id: over the sort key's limit.
	err = tb.Update(ctx, key, expression.Set(expression.Name("topic"), expression.Value(strings.Repeat("x", 1024))))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.ErrorContains(t, err, "index table by_topic's entry")
	require.ErrorContains(t, err, "1024-byte limit")
	require.Equal(t, img2, wrRaw(t, tb, n), "nothing was written")

	wt, err := New[tsNote](&wrNoClient{}, wrWriteThrough)
	require.NoError(t, err)
	err = wt.Update(ctx, key, expression.Set(expression.Name("topic"), expression.Value("c")))
	require.ErrorIs(t, err, ErrKeyChange)
	require.ErrorContains(t, err, "topic (field Topic), part of index table by_topic's key")
	require.ErrorContains(t, err, "use Put")
}

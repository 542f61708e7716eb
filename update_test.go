package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	require.NoError(t, tb.Update(ctx, it, Set("title", "renamed")))
	got := wrIndex(t, tb, "", false, "T1")
	require.Len(t, got, 1)
	require.Equal(t, "renamed", got[0].Title)

	missing := it
	missing.ID = "404"
	err = tb.Update(ctx, missing, Set("title", "x"))
	wrRequireConflict(t, err, "update", "the item is at version 1, not deleted; found no item with this key: Update changes existing items only")
	require.Len(t, wrIndex(t, tb, "", true, "T1"), 1, "Update does not create items")
}

// TestUpdateLeavesTheCallersUpdateAlone: an Update is immutable. Updates
// extended from the same one share no operations (an append to one never
// shows in another), and Table.Update adds its own operations (version,
// token) to a builder of its own, so an Update can be used for many calls.
func TestUpdateLeavesTheCallersUpdateAlone(t *testing.T) {
	t.Parallel()
	base := Set("title", "x").Add("score", 1).Remove("a").Remove("b") // room to spare in its array, most likely
	snapshot := slices.Clone(base.ops)
	one := base.Set("c", 1)
	two := base.Remove("d")
	require.Equal(t, snapshot, base.ops)
	require.Equal(t, updateStep{mode: "SET", path: "c", arg: 1}, one.ops[len(one.ops)-1])
	require.Equal(t, updateStep{mode: "REMOVE", path: "d"}, two.ops[len(two.ops)-1])

	tb, _ := newTestTable[rtDoc](t)
	v1, err := tb.Put(t.Context(), rtDoc{ID: "d", Topic: "go"})
	require.NoError(t, err)
	upd := Set("title", "x").Add("score", 1)
	before := slices.Clone(upd.ops)
	for range 3 {
		require.NoError(t, tb.Update(t.Context(), rtDoc{ID: "d"}, upd))
	}
	require.Equal(t, before, upd.ops)
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
	require.NoError(t, tb.Update(ctx, one, Set("status", "closed")))
	now := upRequireKeys(t, tb, one)
	require.Equal(t, "closed", now.Status)
	require.EqualValues(t, 2, now.Ver)
	require.Equal(t, []string{"0", "2"}, upIDs(t, byStatus.Where(Eq("open"))))
	require.Equal(t, []string{"1"}, upIDs(t, byStatus.Where(Eq("closed"))))
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, byStatus), "closed sorts before open")
	require.Equal(t, []string{"1"}, upIDs(t, tb.Query("by_state", "T").Where(Eq("closed")).ConsistentRead()))
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, tb.Query("by_queue", "Q")), "QSK is computed with the stored queue")

	// Both components at once: nothing to read.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "0"}, Set("status", "closed").Set("opened", upT0.Add(5*time.Hour))))
	upRequireKeys(t, tb, upTicket{Team: "T", ID: "0"})
	require.Equal(t, []string{"1", "0"}, upIDs(t, byStatus.Where(Eq("closed"))), "0 was opened later now")

	// A native GSI sort key changes by any update expression, ADD too.
	byRank := tb.Query("by_rank", "Q")
	require.Equal(t, []string{"0", "1", "2"}, upIDs(t, byRank))
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "0"}, Add("rank", 25)))
	require.Equal(t, []string{"1", "2", "0"}, upIDs(t, byRank))
	// Its partition too: the entry moves to another partition.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "2"}, Set("queue", "R")))
	require.Equal(t, []string{"1", "0"}, upIDs(t, byRank))
	require.Equal(t, []string{"2"}, upIDs(t, tb.Query("by_rank", "R")))

	// prio is the native LSI by_prio's sort key and a component of the
	// derived LSI by_state: set to a value, both follow.
	require.NoError(t, tb.Update(ctx, upTicket{Team: "T", ID: "2"}, Set("prio", 9)))
	upRequireKeys(t, tb, upTicket{Team: "T", ID: "2"})
	require.Equal(t, []string{"1", "0", "2"}, upIDs(t, tb.Query("by_prio", "T").ConsistentRead().Where(Le(9))))
	require.Equal(t, []string{"2"}, upIDs(t, tb.Query("by_prio", "T").ConsistentRead().Where(Eq(9))))

	// REMOVE status: the item leaves both indexes status keys; SET brings
	// it back, its key recomputed from the stored opened and prio.
	require.NoError(t, tb.Update(ctx, one, Remove("status")))
	raw := wrRaw(t, tb, one)
	require.NotContains(t, raw, "GSK")
	require.NotContains(t, raw, "QSK")
	require.NotContains(t, raw, "LSK")
	require.Equal(t, []string{"0"}, upIDs(t, byStatus.Where(Eq("closed"))))
	require.NoError(t, tb.Update(ctx, one, Set("status", "pending")))
	upRequireKeys(t, tb, one)
	require.Equal(t, []string{"0", "2", "1"}, upIDs(t, byStatus))

	// A versioned key: the version is checked too.
	stale := upTicket{Team: "T", ID: "1", Ver: 1}
	err := tb.Update(ctx, stale, Set("status", "open"))
	ce := wrRequireConflict(t, err, "update", "the item is at version 1, not deleted; found it live at version")
	require.Contains(t, ce.Failed[0], "another write came first; re-read it")
	upRequireKeys(t, tb, one)

	// A deleted item is not updated: to a caller it is absent.
	cur := upRequireKeys(t, tb, one)
	require.NoError(t, tb.Delete(ctx, cur))
	for _, upd := range []Update{
		Set("title", "x"),         // no read
		Set("status", "reopened"), // with a read
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
	h, err := New[T](hc, func(o *Options) { *o = tb.opts.Options })
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
		require.NoError(t, tb.Update(ctx, key, Set("opened", opened).Set("prio", prio)))
	}

	// Lost once: applied on the retry.
	hc.beforeUpdate = func(n int) {
		if n == 1 {
			other(upT0.Add(time.Hour), 2)
		}
	}
	require.NoError(t, h.Update(ctx, key, Set("status", "closed")))
	require.Equal(t, 2, hc.updates, "one retry")
	now := upRequireKeys(t, tb, key)
	require.Equal(t, "closed", now.Status)
	require.Equal(t, upT0.Add(time.Hour), now.Opened)
	require.Equal(t, 2, now.Prio)
	require.EqualValues(t, 3, now.Ver)

	// Lost twice: a conflict that says so, and nothing stale.
	hc.updates = 0
	hc.beforeUpdate = func(n int) { other(upT0.Add(time.Duration(n+1)*time.Hour), 2+n) }
	err = h.Update(ctx, key, Set("status", "pending"))
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
	err = h.Update(ctx, key, Set("status", "pending"))
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
		upd  Update
		is   error
		want []string
	}{
		{"base partition", Set("team", "U"), ErrKeyChange, []string{"team", "primary key", "use Move"}},
		{"base sort", Remove("id"), ErrKeyChange, []string{"id", "use Move"}},
		{"derived GSI attribute", Set("GSK", "x"), ErrKeyChange, []string{"GSK", "derived key attribute of index by_status", "status, opened", "update those instead"}},
		{"derived LSI attribute", Remove("LSK"), ErrKeyChange, []string{"LSK", "index by_state"}},
		{"ADD to a derived component", Add("prio", 1), ErrKeyChange, []string{"prio", "index by_state's derived key, by Add", `Set("prio", value)`, `Remove("prio")`, "Put"}},
		{"DELETE from a derived component", Delete("status", []string{"x"}), ErrKeyChange, []string{"status", "by Delete"}},
		{"if_not_exists on a derived component", Set("status", expression.IfNotExists(expression.Name("status"), expression.Value("x"))), ErrKeyChange, []string{"status", "by Set to an operand"}},
		{"arithmetic on a derived component", Set("prio", expression.Plus(expression.Name("prio"), expression.Value(1))), ErrKeyChange, []string{"prio", "by Set to an operand"}},
		{"a nested path in a derived component", Set("opened.x", 1), ErrKeyChange, []string{"opened", "at opened.x, inside it"}},
		{"a value builder is a value", Set("opened", expression.Value("yesterday")), ErrInvalidWrite, []string{"opened", "cannot hold"}},
		{"a time that is no time", Set("opened", "yesterday"), ErrInvalidWrite, []string{"opened", "index by_status's key", "cannot hold"}},
		{"a string for an int", Set("rank", "high"), ErrInvalidWrite, []string{"rank", "by_rank"}},
		{"an empty native GSI key", Set("queue", ""), ErrInvalidWrite, []string{"queue", "REMOVE it"}},
		{"a NULL native LSI key", Set("prio", nil), ErrInvalidWrite, []string{"prio", "REMOVE it"}},
		{"a key too long", Set("queue", strings.Repeat("q", 2049)), ErrInvalidWrite, []string{"queue", "2048-byte limit"}},
		{"the version", Add("ver", 1), ErrInvalidWrite, []string{"ver", "owns"}},
		{"the tombstone marker", Set("_deleted", true), ErrInvalidWrite, []string{"_deleted", "use Delete"}},
	} {
		err := tb.Update(ctx, key, tc.upd)
		require.ErrorIs(t, err, tc.is, tc.name)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, tc.name)
		}
	}
	require.Zero(t, cl.calls.Load(), "no request may be sent")
}

// TestUpdateResolve: what Table.Update learns from an Update's operations
// (the attribute each writes, whether inside it, the value of a SET to a
// value), and what it refuses before any request.
func TestUpdateResolve(t *testing.T) {
	t.Parallel()
	upd := Set("a", 1).
		Set("b", expression.ListAppend(expression.Name("b"), expression.Value([]int{1, 2}))).
		Set("c.d", "x").
		Set("e", expression.IfNotExists(expression.Name("e"), expression.Value(0))).
		Set("j", expression.Value("v")).
		Set("k", &types.AttributeValueMemberBOOL{Value: true}).
		Remove("f[1]").Remove("g").
		Add("h", 2).
		Delete("i", []string{"x"})
	ops, err := upd.resolve()
	require.NoError(t, err)
	got := map[string]updateOp{}
	for _, op := range ops {
		got[op.attr] = op
	}
	require.Len(t, got, 10)
	require.Equal(t, "SET", got["a"].mode)
	require.Equal(t, &types.AttributeValueMemberN{Value: "1"}, got["a"].value)
	require.False(t, got["a"].nested)
	require.Nil(t, got["b"].value, "list_append is no value")
	require.True(t, got["c"].nested)
	require.Equal(t, "c.d", got["c"].path)
	require.Nil(t, got["e"].value)
	require.Equal(t, &types.AttributeValueMemberS{Value: "v"}, got["j"].value, "an expression.ValueBuilder is a value")
	require.Equal(t, &types.AttributeValueMemberBOOL{Value: true}, got["k"].value, "an attribute value is used as it is")
	require.True(t, got["f"].nested)
	require.Equal(t, "REMOVE", got["g"].mode)
	require.Equal(t, "ADD", got["h"].mode)
	require.Nil(t, got["h"].value, "only a SET sets a value")
	require.Equal(t, "DELETE", got["i"].mode)

	// A backslash escapes a dot that is part of a name.
	ops, err = Set(`a\.b`, 1).Set(`m.a\.b[1]`, 2).Remove(`back\\slash`).resolve()
	require.NoError(t, err)
	require.Equal(t, "a.b", ops[0].attr)
	require.False(t, ops[0].nested)
	require.Equal(t, "m", ops[1].attr)
	require.True(t, ops[1].nested)
	require.Equal(t, `back\slash`, ops[2].attr)

	// A time is marshalled as Put marshals it: one that would not read
	// back as the same instant is refused.
	odd := time.Date(1800, 1, 1, 0, 0, 0, 0, time.FixedZone("LMT", 3600+1))
	for _, tc := range []struct {
		name string
		upd  Update
		want string
	}{
		{"no operations", Update{}, "no operations"},
		{"an empty path", Set("", 1), "empty path"},
		{"a malformed path", Remove("a..b"), "not a document path"},
		{"a path ending in a dot", Remove("a."), "not a document path"},
		{"an index with no name", Remove("a.[1]"), "not a document path"},
		{"an escape of no dot", Remove(`a\b`), "a backslash escapes a dot"},
		{"an escape at the end", Remove(`a\`), "a backslash escapes a dot"},
		{"an index that is no number", Set("a[x]", 1), "not a document path"},
		{"a value that does not marshal", Set("a", make(chan int)), "chan int"},
		{"ADD of an operand", Add("a", expression.Name("b")), "ADD takes a value"},
		{"DELETE of an operand", Delete("a", expression.Name("b").Plus(expression.Value(1))), "DELETE takes a value"},
		{"a nil attribute value", Set("a", (*types.AttributeValueMemberS)(nil)), "nil *types.AttributeValueMemberS"},
		{"a time that does not read back", Set("at", odd), "convert it to UTC"},
		{"an operand that does not build", Set("a", expression.Plus(expression.Name(""), expression.Value(1))), "SET \"a\""},
	} {
		_, err := tc.upd.resolve()
		require.Error(t, err, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
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
	require.NoError(t, tb.Update(ctx, key, Set("topic", "b")))
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
	err = tb.Update(ctx, key, Set("topic", strings.Repeat("x", 1024)))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.ErrorContains(t, err, "index table by_topic's entry")
	require.ErrorContains(t, err, "1024-byte limit")
	require.Equal(t, img2, wrRaw(t, tb, n), "nothing was written")

	wt, err := New[tsNote](&wrNoClient{}, wrWriteThrough)
	require.NoError(t, err)
	err = wt.Update(ctx, key, Set("topic", "c"))
	require.ErrorIs(t, err, ErrKeyChange)
	require.ErrorContains(t, err, "topic (field Topic), part of index table by_topic's key")
	require.ErrorContains(t, err, "use Put")
}

// ucDoc has a derived GSI sort key (status, then opened) whose components
// are reserved words, attribute names that need placeholders (reserved
// words, a dot, a dash), and attributes for every kind of update operation.
type ucDoc struct {
	_      TableSpec         `ddbindex:"uc-docs,softdelete"`
	_      IndexSpec         `ddbindex:"by_status,type=gsi,sk=GSK"`
	Team   string            `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID     string            `dynamodbav:"id" ddbindex:"sk"`
	Status string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Opened time.Time         `dynamodbav:"opened" ddbindex:"by_status.sk:1"`
	Name   string            `dynamodbav:"name"`
	Size   int               `dynamodbav:"size"`
	Dotted string            `dynamodbav:"a.b"`
	Dashed string            `dynamodbav:"x-y"`
	Views  int               `dynamodbav:"views"`
	Count  int               `dynamodbav:"count"`
	Log    []string          `dynamodbav:"log"`
	First  string            `dynamodbav:"first,omitempty"`
	Tags   []string          `dynamodbav:"tags,stringset,omitempty"`
	Labels []string          `dynamodbav:"labels,stringset,omitempty"`
	Nums   []int             `dynamodbav:"nums,numberset,omitempty"`
	Meta   map[string]string `dynamodbav:"meta"`
	Note   string            `dynamodbav:"note,omitempty"`
	Old    string            `dynamodbav:"old,omitempty"`
	Ver    int64             `dynamodbav:"ver" ddbindex:"version"`
}

// ucRequire reads the stored item, checks that its derived key is the one
// Put would write for it (none when it is out of the index), and returns it.
func ucRequire(t *testing.T, tb *Table[ucDoc], key ucDoc) (ucDoc, map[string]types.AttributeValue) {
	t.Helper()
	raw := wrRaw(t, tb, key)
	require.NotNil(t, raw)
	var now ucDoc
	require.NoError(t, tb.unmarshalItem(raw, &now))
	want, err := tb.Marshal(now)
	require.NoError(t, err)
	require.Equal(t, want["GSK"], raw["GSK"], "the derived key of %+v", now)
	return now, raw
}

// ucIDs lists the ids of the by_status entries of team T with the given
// status ("" for all), in the index's order.
func ucIDs(t *testing.T, tb *Table[ucDoc], status string) []string {
	t.Helper()
	q := tb.Query("by_status", "T")
	if status != "" {
		q = q.Where(Eq(status))
	}
	var out []string
	for it, err := range q.All(t.Context()) {
		require.NoError(t, err)
		out = append(out, it.ID)
	}
	return out
}

// TestUpdateCombinesClauses: the library's own operations (the write token,
// the version, the derived key it recomputes or removes) and its condition
// combine with every kind of caller operation in one UpdateItem, on both
// servers: SET to values, to arithmetic, list_append and if_not_exists, at
// nested paths, REMOVE, ADD and DELETE, several of each, on names that need
// placeholders. A change of a derived key component moves the index entry.
func TestUpdateCombinesClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[ucDoc](t)
	key := ucDoc{Team: "T", ID: "1"}
	_, err := tb.Put(ctx, ucDoc{Team: "T", ID: "1", Status: "open", Opened: upT0, Name: "n", Size: 1, Dotted: "d", Dashed: "x",
		Views: 1, Count: 5, Log: []string{"a"}, Tags: []string{"t1"}, Labels: []string{"l1", "l2"}, Nums: []int{1, 2},
		Meta: map[string]string{"k": "v"}, Note: "note", Old: "old"})
	require.NoError(t, err)
	_, err = tb.Put(ctx, ucDoc{Team: "T", ID: "2", Status: "open", Opened: upT0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2"}, ucIDs(t, tb, "open"))

	// Every kind of caller operation, with a derived key component among
	// them (status: Update reads opened, conditions on it, sets GSK).
	upd := Set("status", "closed").
		Set("name", "renamed").
		Set(`a\.b`, "dot").
		Set("x-y", "dash").
		Set("views", expression.Name("views").Plus(expression.Value(2))).
		Set("log", expression.ListAppend(expression.Name("log"), expression.Value([]string{"b", "c"}))).
		Set("first", expression.IfNotExists(expression.Name("first"), expression.Value("initial"))).
		Set("size", expression.IfNotExists(expression.Name("size"), expression.Value(99))).
		Set("meta.k2", "v2").
		Remove("note").Remove("old").Remove("meta.k").
		Add("count", 3).Add("tags", &types.AttributeValueMemberSS{Value: []string{"t2"}}).
		Delete("labels", &types.AttributeValueMemberSS{Value: []string{"l1"}}).
		Delete("nums", expression.Value(&types.AttributeValueMemberNS{Value: []string{"1"}}))
	require.NoError(t, tb.Update(ctx, key, upd))
	now, raw := ucRequire(t, tb, key)
	require.Equal(t, ucDoc{Team: "T", ID: "1", Status: "closed", Opened: upT0, Name: "renamed", Size: 1, Dotted: "dot", Dashed: "dash",
		Views: 3, Count: 8, Log: []string{"a", "b", "c"}, First: "initial", Tags: []string{"t1", "t2"}, Labels: []string{"l2"}, Nums: []int{2},
		Meta: map[string]string{"k2": "v2"}, Ver: 2}, now)
	require.Contains(t, raw, "GSK")
	require.Contains(t, raw, "_wtok")
	require.NotContains(t, raw, "a", "a\\.b names the attribute a.b, not a path")
	require.Equal(t, []string{"2"}, ucIDs(t, tb, "open"))
	require.Equal(t, []string{"1"}, ucIDs(t, tb, "closed"))
	require.Equal(t, []string{"1", "2"}, ucIDs(t, tb, ""), "closed sorts before open")

	// The caller's REMOVE clause with the library's: the item leaves the
	// index, its derived key removed.
	require.NoError(t, tb.Update(ctx, key, Remove("status").Remove("name").Remove(`a\.b`)))
	now, raw = ucRequire(t, tb, key)
	require.NotContains(t, raw, "GSK")
	require.NotContains(t, raw, "name")
	require.NotContains(t, raw, "a.b")
	require.Empty(t, now.Status)
	require.EqualValues(t, 3, now.Ver)
	require.Equal(t, []string{"2"}, ucIDs(t, tb, ""))

	// Only ADD and DELETE from the caller: the library's SET and ADD join
	// them.
	require.NoError(t, tb.Update(ctx, key, Delete("tags", &types.AttributeValueMemberSS{Value: []string{"t1"}}).Add("views", 10)))
	now, _ = ucRequire(t, tb, key)
	require.Equal(t, []string{"t2"}, now.Tags)
	require.Equal(t, 13, now.Views)
	require.EqualValues(t, 4, now.Ver)

	// Both components set: nothing read; the entry comes back, after 2.
	require.NoError(t, tb.Update(ctx, ucDoc{Team: "T", ID: "1", Ver: 4}, Set("opened", upT0.Add(2*time.Hour)).Set("status", "open").Add("count", 1)))
	now, _ = ucRequire(t, tb, key)
	require.Equal(t, 9, now.Count)
	require.EqualValues(t, 5, now.Ver)
	require.Equal(t, []string{"2", "1"}, ucIDs(t, tb, "open"))

	// A component set by the caller, the other read, with a nested SET, a
	// list_append and several REMOVEs: the entry moves within the index.
	require.NoError(t, tb.Update(ctx, key, Set("opened", upT0.Add(-time.Hour)).Set("meta.k3", "v3").
		Set("log", expression.ListAppend(expression.Value([]string{"z"}), expression.Name("log"))).Remove("first").Remove("meta.k2")))
	now, _ = ucRequire(t, tb, key)
	require.Equal(t, []string{"z", "a", "b", "c"}, now.Log)
	require.Equal(t, map[string]string{"k3": "v3"}, now.Meta)
	require.Empty(t, now.First)
	require.Equal(t, []string{"1", "2"}, ucIDs(t, tb, "open"))
}

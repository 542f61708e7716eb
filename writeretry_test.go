package ddbindex

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// Tests of lost answers: a conditional write that was applied but
// whose answer was lost is retried by the SDK, and the retry fails its own
// condition. The library must report success for its own write, and a
// conflict for another writer's.

// rtDoc is versioned and deleted for real.
type rtDoc struct {
	_     TableSpec `ddbindex:"rt-docs"`
	_     IndexSpec `ddbindex:"by_topic,type=table"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Topic string    `dynamodbav:"topic" ddbindex:"by_topic.pk"`
	Title string    `dynamodbav:"title"`
	Tags  []string  `dynamodbav:"tags,stringset"`
	Score float64   `dynamodbav:"score"`
	Ver   int64     `dynamodbav:"ver" ddbindex:"version"`
}

// rtCounter has no version field: an update's ADD is not idempotent.
type rtCounter struct {
	_  TableSpec `ddbindex:"rt-counters"`
	ID string    `dynamodbav:"id" ddbindex:"pk"`
	N  int64     `dynamodbav:"n"`
}

// rtRetryer retries quickly: the tests inject faults, not load.
func rtRetryer() aws.Retryer {
	return retry.AddWithMaxBackoffDelay(ddbtest.NoQuotaRetryer(5)(), 5*time.Millisecond)
}

// rtTables returns two Tables for T on the same fresh tables: one whose
// client goes through a fault transport with policy, and one with the
// plain client (for setup, other writers and checks).
func rtTables[T any](t *testing.T, policy faults.Policy, optFns ...func(*Options)) (faulty, clean *Table[T], ft *faults.Transport) {
	t.Helper()
	clean, _ = newTestTable[T](t, optFns...)
	db, _, ft := ddbtest.Faulty(t, policy, rtRetryer)
	faulty, err := New[T](db, append([]func(*Options){func(o *Options) { o.TableName = clean.opts.TableName }}, optFns...)...)
	require.NoError(t, err)
	return faulty, clean, ft
}

// rtScript is a policy that, like faults.Script, injects the listed faults
// into the first requests of each operation; it may be armed later, so that
// setup requests go through untouched.
type rtScript struct {
	mu     sync.Mutex
	armed  bool
	script map[string][]faults.Kind
	seen   map[string]int
	before map[string]func(n int) // called before the n-th request (from 1) of an operation
}

func (s *rtScript) policy(r faults.Request) faults.Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return faults.None
	}
	s.seen[r.Operation]++
	n := s.seen[r.Operation]
	if f := s.before[r.Operation]; f != nil {
		f(n)
	}
	if ks := s.script[r.Operation]; n <= len(ks) {
		return ks[n-1]
	}
	return faults.None
}

func (s *rtScript) arm() { s.mu.Lock(); s.armed = true; s.mu.Unlock() }

func newRTScript(script map[string][]faults.Kind) *rtScript {
	return &rtScript{script: script, seen: map[string]int{}, before: map[string]func(int){}}
}

func rtGet[T any](t *testing.T, tb *Table[T], item T) map[string]types.AttributeValue {
	t.Helper()
	return wrRaw(t, tb, item)
}

// TestWriteLostAnswerIsNotAConflict: for every write the library sends, a
// fault that loses the answer of an applied request (a reset after the
// server applied it, or a timed-out read) makes the SDK retry; the write
// succeeds, and is applied exactly once.
func TestWriteLostAnswerIsNotAConflict(t *testing.T) {
	t.Parallel()
	for _, kind := range faults.Applied {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			rtLostAnswerCases(t, kind)
		})
	}
}

func rtLostAnswerCases(t *testing.T, kind faults.Kind) {
	doc := rtDoc{ID: "d1", Topic: "go", Title: "one", Tags: []string{"b", "a", "c"}, Score: 1.50}
	one := func(op string) map[string][]faults.Kind { return map[string][]faults.Kind{op: {kind}} }

	t.Run("put create", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("PutItem"))
		f, c, ft := rtTables[rtDoc](t, s.policy)
		s.arm()
		got, err := f.Put(t.Context(), doc)
		require.NoError(t, err)
		require.EqualValues(t, 1, got.Ver)
		require.Equal(t, 1, ft.CountOp("PutItem", kind), "the fault was injected")
		require.EqualValues(t, 1, wrNum(t, rtGet(t, c, doc)["ver"]))
	})
	t.Run("put update", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("PutItem"))
		f, c, ft := rtTables[rtDoc](t, s.policy)
		v1, err := c.Put(t.Context(), doc)
		require.NoError(t, err)
		s.arm()
		v1.Title = "two"
		v2, err := f.Put(t.Context(), v1)
		require.NoError(t, err, "numbers and sets come back normalized, and still match")
		require.EqualValues(t, 2, v2.Ver)
		require.Equal(t, 1, ft.CountOp("PutItem", kind))
		require.EqualValues(t, 2, wrNum(t, rtGet(t, c, doc)["ver"]))
	})
	t.Run("update with version", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("UpdateItem"))
		f, c, ft := rtTables[rtDoc](t, s.policy)
		v1, err := c.Put(t.Context(), doc)
		require.NoError(t, err)
		s.arm()
		require.NoError(t, f.Update(t.Context(), v1, Set("title", "renamed")))
		require.Equal(t, 1, ft.CountOp("UpdateItem", kind))
		img := rtGet(t, c, doc)
		require.EqualValues(t, 2, wrNum(t, img["ver"]), "applied once")
		require.Equal(t, "renamed", syS(img["title"]))
	})
	t.Run("update without version", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("UpdateItem"))
		f, c, ft := rtTables[rtCounter](t, s.policy)
		_, err := c.Put(t.Context(), rtCounter{ID: "c"})
		require.NoError(t, err)
		s.arm()
		require.NoError(t, f.Update(t.Context(), rtCounter{ID: "c"}, Add("n", 1)))
		require.Equal(t, 1, ft.CountOp("UpdateItem", kind))
		require.EqualValues(t, 1, wrNum(t, rtGet(t, c, rtCounter{ID: "c"})["n"]), "an ADD retried is applied once")
	})
	t.Run("soft delete with version", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("UpdateItem"))
		f, c, ft := rtTables[wrTicket](t, s.policy)
		v1, err := c.Put(t.Context(), wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0})
		require.NoError(t, err)
		s.arm()
		require.NoError(t, f.Delete(t.Context(), v1))
		require.Equal(t, 1, ft.CountOp("UpdateItem", kind))
		img := rtGet(t, c, v1)
		require.True(t, wrBool(img["_deleted"]))
		require.EqualValues(t, 2, wrNum(t, img["ver"]))
	})
	t.Run("soft delete without version", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("UpdateItem"))
		f, c, ft := rtTables[wrSoftNote](t, s.policy)
		n := wrSoftNote{Team: "T", ID: "1", Text: "x"}
		_, err := c.Put(t.Context(), n)
		require.NoError(t, err)
		s.arm()
		require.NoError(t, f.Delete(t.Context(), n))
		require.Equal(t, 1, ft.CountOp("UpdateItem", kind))
		require.True(t, wrBool(rtGet(t, c, n)["_deleted"]))
	})
	t.Run("hard delete with version", func(t *testing.T) {
		t.Parallel()
		s := newRTScript(one("DeleteItem"))
		f, c, ft := rtTables[rtDoc](t, s.policy)
		v1, err := c.Put(t.Context(), doc)
		require.NoError(t, err)
		s.arm()
		require.NoError(t, f.Delete(t.Context(), v1))
		require.Equal(t, 1, ft.CountOp("DeleteItem", kind))
		require.Nil(t, rtGet(t, c, doc))
	})
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("transactions, writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			ddbtest.Require(t, ddbtest.Transactions)
			// The first attempt of each call (Move; then Put and Delete)
			// loses its answer; its retry goes through.
			s := newRTScript(map[string][]faults.Kind{"TransactWriteItems": {kind, faults.None, kind, faults.None, kind}})
			f, c, ft := rtTables[wrTicket](t, s.policy, func(o *Options) { o.WriteThrough = wt })
			v1, err := c.Put(t.Context(), wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Title: "one"})
			require.NoError(t, err)
			s.arm()
			to := v1
			to.Status = "pending"
			moved, err := f.Move(t.Context(), v1, to) // a transaction in both modes
			require.NoError(t, err)
			require.EqualValues(t, 2, moved.Ver)
			if wt {
				moved.Title = "two"
				moved, err = f.Put(t.Context(), moved)
				require.NoError(t, err)
				require.NoError(t, f.Delete(t.Context(), moved))
				require.Equal(t, 3, ft.CountOp("TransactWriteItems", kind))
				require.Empty(t, wrIndex(t, c, "by_status", false, "T"))
				require.Len(t, wrIndex(t, c, "by_status", true, "T"), 2, "the open and the pending entry, both tombstones")
			} else {
				require.Equal(t, 1, ft.CountOp("TransactWriteItems", kind))
			}
			base := wrIndex(t, c, "", true, "T")
			require.Len(t, base, 1)
			require.Equal(t, "pending", base[0].Status)
		})
	}
}

// TestWriteRetriedConflictIsStillAConflict: when the first attempt was not
// applied (throttled) and another writer changes the item before the
// retry, the retry's failed condition is a real conflict, and says what it
// found.
func TestWriteRetriedConflictIsStillAConflict(t *testing.T) {
	t.Parallel()
	doc := rtDoc{ID: "d1", Topic: "go", Title: "one"}
	for _, tc := range []struct {
		name, op string
		write    func(f *Table[rtDoc], v1 rtDoc) error
	}{
		{"put", "PutItem", func(f *Table[rtDoc], v1 rtDoc) error { _, err := f.Put(t.Context(), v1); return err }},
		{"update", "UpdateItem", func(f *Table[rtDoc], v1 rtDoc) error {
			return f.Update(t.Context(), v1, Set("title", "x"))
		}},
		{"delete", "DeleteItem", func(f *Table[rtDoc], v1 rtDoc) error { return f.Delete(t.Context(), v1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newRTScript(map[string][]faults.Kind{tc.op: {faults.Throttle}})
			f, c, ft := rtTables[rtDoc](t, s.policy)
			v1, err := c.Put(t.Context(), doc)
			require.NoError(t, err)
			s.before[tc.op] = func(n int) {
				if n == 2 { // between the throttled attempt and the retry: another writer
					other := v1
					other.Title = "the other writer's"
					_, err := c.Put(t.Context(), other)
					require.NoError(t, err)
				}
			}
			s.arm()
			err = tc.write(f, v1)
			require.Equal(t, 1, ft.CountOp(tc.op, faults.Throttle), "the call was retried")
			ce := wrRequireConflict(t, err, tc.name, "the item is at version 1")
			require.Contains(t, ce.Failed[0], "found it live at version 2: another write came first; re-read it (now version 2)")
			img := rtGet(t, c, doc)
			require.Equal(t, "the other writer's", syS(img["title"]), "the other writer's item is untouched")
			require.EqualValues(t, 2, wrNum(t, img["ver"]))
		})
	}
}

// TestWriteConflictMessages: conflicts without retries say what they found
// and what to do.
func TestWriteConflictMessages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[rtDoc](t)
	v1, err := tb.Put(ctx, rtDoc{ID: "d1", Topic: "go"})
	require.NoError(t, err)
	_, err = tb.Put(ctx, rtDoc{ID: "d1", Topic: "go"})
	ce := wrRequireConflict(t, err, "put", "no item has this key yet (version 0 creates it)")
	require.Contains(t, ce.Failed[0], "found it live at version 1: another writer created it first; read it and put your change on that copy, or use another key")

	v2, err := tb.Put(ctx, v1)
	require.NoError(t, err)
	_, err = tb.Put(ctx, v1)
	ce = wrRequireConflict(t, err, "put", "the item is at version 1")
	require.Contains(t, ce.Failed[0], "found it live at version 2: another write came first; re-read it (now version 2) and apply your change to that copy")

	require.NoError(t, tb.Delete(ctx, v2))
	ce = wrRequireConflict(t, tb.Delete(ctx, v2), "delete", "the item is at version 2")
	require.Contains(t, ce.Failed[0], "found no item with this key: it is gone already (deleted for good, or moved to another key)", "not retried: the item's absence is a conflict")
	ce = wrRequireConflict(t, tb.Update(ctx, v2, Set("title", "x")), "update", "the item is at version 2")
	require.Contains(t, ce.Failed[0], "found no item with this key: Update changes existing items only; create it with Put")
	_, err = tb.Put(ctx, v2)
	ce = wrRequireConflict(t, err, "put", "the item is at version 2")
	require.Contains(t, ce.Failed[0], "found no item with this key: it was deleted for good or moved to another key since it was read; to create it anew, put it with version 0")
}

// TestWriteTokenStaysInTheBaseTable: the write token an update leaves is
// not copied into index-table entries, and a change of nothing but the
// token writes no entry; Update refuses to set it.
func TestWriteTokenStaysInTheBaseTable(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	img := syImage(t, tb, syBase())
	withToken := map[string]types.AttributeValue{}
	for k, v := range img {
		withToken[k] = v
	}
	withToken["_wtok"] = &types.AttributeValueMemberS{Value: "tok-1"}
	writes, err := tb.IndexWrites(Change{New: withToken, Version: "1"})
	require.NoError(t, err)
	require.NotEmpty(t, writes)
	for _, w := range writes {
		require.NotContains(t, w.Item, "_wtok", "index %s", w.Index)
	}
	other := map[string]types.AttributeValue{}
	for k, v := range withToken {
		other[k] = v
	}
	other["_wtok"] = &types.AttributeValueMemberS{Value: "tok-2"}
	writes, err = tb.IndexWrites(Change{Old: withToken, New: other, Version: "2"})
	require.NoError(t, err)
	require.Empty(t, writes, "only the token changed")

	cl := &wrNoClient{}
	tw, err := New[rtDoc](cl)
	require.NoError(t, err)
	err = tw.Update(t.Context(), rtDoc{ID: "d"}, Set("_wtok", "mine"))
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Zero(t, cl.calls.Load())
}

// TestSameItem: a stored item read back is compared with the one written as
// DynamoDB compares values: numbers by value (servers normalize their
// text), sets as sets (servers keep their own order).
func TestSameItem(t *testing.T) {
	t.Parallel()
	n := func(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
	str := func(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
	written := map[string]types.AttributeValue{
		"id": str("a"), "big": n("1e+21"), "f": n("1.50"), "neg": n("-0.0"),
		"ss": &types.AttributeValueMemberSS{Value: []string{"b", "a", "c"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2.0"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": n("10"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), str("s")}}}},
	}
	stored := map[string]types.AttributeValue{
		"id": str("a"), "big": n("1000000000000000000000"), "f": n("1.5"), "neg": n("0"),
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "c", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"2", "1"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{2}, {1}}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": n("1E+1"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1.0"), str("s")}}}},
	}
	require.True(t, sameItem(written, stored))
	for name, change := range map[string]func(m map[string]types.AttributeValue){
		"a number": func(m map[string]types.AttributeValue) { m["f"] = n("1.51") },
		"a string": func(m map[string]types.AttributeValue) { m["id"] = str("b") },
		"a type":   func(m map[string]types.AttributeValue) { m["f"] = str("1.5") },
		"a set element": func(m map[string]types.AttributeValue) {
			m["ss"] = &types.AttributeValueMemberSS{Value: []string{"a", "b", "b"}}
		},
		"list order": func(m map[string]types.AttributeValue) {
			m["m"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": n("10"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("s"), n("1")}}}}
		},
		"an extra attribute": func(m map[string]types.AttributeValue) { m["_wtok"] = str("t") },
		"a missing one":      func(m map[string]types.AttributeValue) { delete(m, "bs") },
	} {
		other := map[string]types.AttributeValue{}
		for k, v := range stored {
			other[k] = v
		}
		change(other)
		require.False(t, sameItem(written, other), name)
	}
	require.False(t, sameItem(nil, nil), "no item is not our item")
}

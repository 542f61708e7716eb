package ddbindex

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// TestPutCreatesOnceWhenItsAnswerIsLost: Put at version 0 of a softdelete
// model is applied, but its answer is lost, and before the SDK sends it
// again another writer deletes the item Put created (a tombstone stays), or
// moves it to another key (its old key is free). The resend fails its
// condition and finds that tombstone, or no item. Put must not take either
// for a key it may create the item over: the item it would write over may
// be its own, removed since. Its write is applied once, and the other
// writer's delete or move stands, in both upkeep modes: written through,
// the resent transaction is the one applied (its idempotency token); from
// the stream, Put reports that its outcome is unknown.
func TestPutCreatesOnceWhenItsAnswerIsLost(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		for _, kind := range faults.Applied {
			for _, racer := range []string{"delete", "move"} {
				name := map[bool]string{false: "from the stream", true: "write-through"}[wt] + "/" + kind.String() + "/" + racer
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					if wt || racer == "move" {
						ddbtest.Require(t, ddbtest.Transactions) // Move is one transaction
					}
					putOnceWhenAnswerLost(t, wt, kind, racer)
				})
			}
		}
	}
}

func putOnceWhenAnswerLost(t *testing.T, wt bool, kind faults.Kind, racer string) {
	ctx := t.Context()
	s := newRTScript(map[string][]faults.Kind{})
	f, c, ft := rtTables[wrTicket](t, s.policy, func(o *Options) { o.WriteThrough = wt })
	x := wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Title: "one"}
	moved := x
	moved.Status = "closed"

	// The request whose answer is lost, and the resend before which the
	// other writer acts. From the stream, the delete races a creation over
	// no item (the first PutItem); the move, a creation over a tombstone
	// (the second PutItem: the first finds the tombstone). Written
	// through, Put reads first and sends one transaction.
	op, script, at := "PutItem", []faults.Kind{kind}, 2
	if racer == "move" {
		v1, err := c.Put(ctx, x)
		require.NoError(t, err)
		require.NoError(t, c.Delete(ctx, v1))
		if !wt {
			script, at = []faults.Kind{faults.None, kind}, 3
		}
	}
	if wt {
		op, script, at = "TransactWriteItems", []faults.Kind{kind}, 2
	}
	s.script[op] = script
	var racerErr error
	var raced wrTicket // the item the other writer found
	s.before[op] = func(n int) {
		if n != at {
			return
		}
		got, err := c.Get(ctx, x)
		if err != nil {
			racerErr = err
			return
		}
		raced = got
		if racer == "delete" {
			racerErr = c.Delete(ctx, got)
			return
		}
		to := got
		to.Status = moved.Status
		_, racerErr = c.Move(ctx, got, to)
	}
	s.arm()
	again := x
	again.Title = "again"
	_, err := f.Put(ctx, again)
	require.NoError(t, racerErr)
	require.Equal(t, 1, ft.CountOp(op, kind), "the fault was injected")
	require.Equal(t, "again", raced.Title, "the other writer found the item Put created")
	if wt {
		require.NoError(t, err, "the resent transaction is the one applied (its idempotency token)")
	} else {
		// Nothing tells its own item, deleted or moved since, from
		// another writer's.
		require.ErrorIs(t, err, ErrOutcomeUnknown)
		require.False(t, IsTransient(err), "a blind retry may create the item again")
	}

	// The other writer's write is the last one: Put is not applied again.
	img := rtGet(t, c, x)
	switch racer {
	case "delete":
		require.NotNil(t, img, "the tombstone")
		require.True(t, wrBool(img["_deleted"]), "the item Put created was deleted after it, and stays deleted: found it live at version %d", wrNum(t, img["ver"]))
		require.EqualValues(t, raced.Ver+1, wrNum(t, img["ver"]))
	case "move":
		require.Nil(t, img, "the item Put created was moved away after it; its old key stays free (found an item at version %v)", img["ver"])
		to := rtGet(t, c, moved)
		require.NotNil(t, to)
		require.EqualValues(t, raced.Ver+1, wrNum(t, to["ver"]))
	}
	if wt {
		var live []string
		for _, e := range wrIndex(t, c, "by_status", false, "T") {
			live = append(live, e.Status)
		}
		want := []string(nil)
		if racer == "move" {
			want = []string{moved.Status}
		}
		require.Equal(t, want, live, "the index table holds the live items' entries")
	}
}

// TestPutCreatesOverTombstoneAfterThrottle: Put at version 0 over a
// tombstone whose first PutItem is throttled, which DynamoDB did not apply,
// and sent again: the resend finds the tombstone, and Put creates the item
// over it, as without the throttle.
func TestPutCreatesOverTombstoneAfterThrottle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newRTScript(map[string][]faults.Kind{"PutItem": {faults.Throttle}})
	f, c, ft := rtTables[wrTicket](t, s.policy)
	x := wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Title: "one"}
	v1, err := c.Put(ctx, x)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, v1))
	s.arm()
	x.Title = "again"
	got, err := f.Put(ctx, x)
	require.NoError(t, err)
	require.Equal(t, 1, ft.CountOp("PutItem", faults.Throttle), "the fault was injected")
	require.EqualValues(t, 3, got.Ver, "one more than the tombstone's")
	img := rtGet(t, c, x)
	require.False(t, wrBool(img["_deleted"]))
	require.Equal(t, "again", syS(img["title"]))
}

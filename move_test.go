package ddbindex

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/stretchr/testify/require"
)

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
			require.Contains(t, ce.Failed[0], "holds the item")

			// A stale version at the right key.
			stale := moved
			stale.Ver = 1
			_, err = tb.Move(ctx, stale, again)
			ce = wrRequireConflict(t, err, "move", "the item is at version 1 (ConditionalCheckFailed)")
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

// TestMoveTombstones: a tombstone is absent to a caller, so there is nothing
// to move from it; and Move does not write over one at the new key. Both
// conflicts say what was found and what to do.
func TestMoveTombstones(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions)
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, _ := newTestTable[wrTicket](t, func(o *Options) { o.WriteThrough = wt })
			open, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "open", ID: "7", Created: wrT0})
			require.NoError(t, err)
			require.NoError(t, tb.Delete(ctx, open))
			open.Ver = 2 // the tombstone's version
			to := open
			to.Status = "closed"
			_, err = tb.Move(ctx, open, to)
			ce := wrRequireConflict(t, err, "move", "holds the item, not deleted and the item is at version 2 (ConditionalCheckFailed)")
			require.Contains(t, ce.Failed[0], "found it deleted at version 2: it was deleted since it was read; there is nothing to move")
			require.Nil(t, wrRaw(t, tb, to))

			// The tombstone keeps its key: a move onto it conflicts.
			other, err := tb.Put(ctx, wrTicket{Team: "T1", Status: "pending", ID: "7", Created: wrT0})
			require.NoError(t, err)
			back := other
			back.Status = "open"
			_, err = tb.Move(ctx, other, back)
			ce = wrRequireConflict(t, err, "move", "is free (ConditionalCheckFailed)")
			require.Contains(t, ce.Failed[0], "found a deleted item there at version 2: Move does not write over a tombstone, which keeps its key until TTL removes it; move to another key")
		})
	}
}

package ddbindex_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
	"github.com/ddbindex/ddbindex/stream"
)

// The race matrix of writerace_test.go on models whose index table is
// sparse: its sort component is a pointer, nil for some of the values the
// matrix writes (3 and 9), so that racing writes take the item out of the
// index and bring it back (the racer's change leaves it, the victim's move
// leaves it, the victim's update after the racer's change brings it back),
// with a projected attribute (note) that each write changes.

type raceSparseVer struct {
	_    ddbindex.TableSpec `ddbindex:"race-sparse-ver,pk=PK,sk=SK"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio *int64             `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
	Ver  int64              `dynamodbav:"ver" ddbindex:"version"`
}

type raceSparsePlain struct {
	_    ddbindex.TableSpec `ddbindex:"race-sparse-plain,pk=PK,sk=SK"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio *int64             `dynamodbav:"prio,omitempty" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
}

type raceSparseSoft struct {
	_    ddbindex.TableSpec `ddbindex:"race-sparse-soft,pk=PK,sk=SK,softdelete"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio *int64             `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
	Ver  int64              `dynamodbav:"ver" ddbindex:"version"`
}

// sparsePrio is the component the matrix's value p stores: none for 3
// (the racer's change) and 9 (the victim's move), so those take the item
// out of the index.
func sparsePrio(p int64) *int64 {
	if p == 3 || p == 9 {
		return nil
	}
	return &p
}

// sparsePrioOut is sparsePrio with the setup's value 1 left out too: the
// item starts out of the index, so each victim reads it with its component
// stored as NULL (or, omitempty, absent).
func sparsePrioOut(p int64) *int64 {
	if p == 1 {
		return nil
	}
	return sparsePrio(p)
}

func note(p int64) string { return "n" + strconv.FormatInt(p, 10) }

// The sparse race models, their component stored as prio gives it
// (sparsePrio, or sparsePrioOut for items that start out of the index).
func raceSparseVerModel(prio func(int64) *int64) raceModel[raceSparseVer] {
	return raceModel[raceSparseVer]{name: "sparse version", versioned: true,
		item: func(team, id string, p int64) raceSparseVer {
			return raceSparseVer{Team: team, ID: id, Prio: prio(p), Note: note(p)}
		},
		rekey: func(x raceSparseVer, id string, p int64) raceSparseVer {
			x.ID, x.Prio, x.Note = id, prio(p), note(p)
			return x
		},
		reprio: func(x raceSparseVer, p int64) raceSparseVer { x.Prio, x.Note = prio(p), note(p); return x },
		fresh:  func(x raceSparseVer) raceSparseVer { x.Ver = 0; return x }}
}

func raceSparsePlainModel(prio func(int64) *int64) raceModel[raceSparsePlain] {
	return raceModel[raceSparsePlain]{name: "sparse plain",
		item: func(team, id string, p int64) raceSparsePlain {
			return raceSparsePlain{Team: team, ID: id, Prio: prio(p), Note: note(p)}
		},
		rekey: func(x raceSparsePlain, id string, p int64) raceSparsePlain {
			x.ID, x.Prio, x.Note = id, prio(p), note(p)
			return x
		},
		reprio: func(x raceSparsePlain, p int64) raceSparsePlain { x.Prio, x.Note = prio(p), note(p); return x },
		fresh:  func(x raceSparsePlain) raceSparsePlain { return x }}
}

func raceSparseSoftModel(prio func(int64) *int64) raceModel[raceSparseSoft] {
	return raceModel[raceSparseSoft]{name: "sparse softdelete", versioned: true,
		item: func(team, id string, p int64) raceSparseSoft {
			return raceSparseSoft{Team: team, ID: id, Prio: prio(p), Note: note(p)}
		},
		rekey: func(x raceSparseSoft, id string, p int64) raceSparseSoft {
			x.ID, x.Prio, x.Note = id, prio(p), note(p)
			return x
		},
		reprio: func(x raceSparseSoft, p int64) raceSparseSoft { x.Prio, x.Note = prio(p), note(p); return x },
		fresh:  func(x raceSparseSoft) raceSparseSoft { x.Ver = 0; return x }}
}

// TestWriteRaceMatrixSparse runs the race matrix (every victim write ×
// every racing writer, between the victim's read and its write) on sparse
// index tables, in both upkeep modes: the index table ends exactly as the
// base table implies in each case.
func TestWriteRaceMatrixSparse(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{true, false} {
		mode := map[bool]string{true: "write-through", false: "stream"}[wt]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ddbtest.Require(t, ddbtest.Transactions)
			if !wt {
				ddbtest.Require(t, ddbtest.Streams)
			}
			t.Run("version", func(t *testing.T) { t.Parallel(); raceMatrix(t, raceSparseVerModel(sparsePrio), wt) })
			t.Run("plain", func(t *testing.T) { t.Parallel(); raceMatrix(t, raceSparsePlainModel(sparsePrio), wt) })
			t.Run("softdelete", func(t *testing.T) { t.Parallel(); raceMatrix(t, raceSparseSoftModel(sparsePrio), wt) })
			if !wt {
				return
			}
			// A write-through write holds the item to what it read: here
			// a component stored as NULL (version, softdelete) or absent
			// (plain).
			t.Run("version out", func(t *testing.T) { raceMatrixOut(t, raceSparseVerModel(sparsePrioOut)) })
			t.Run("plain out", func(t *testing.T) { raceMatrixOut(t, raceSparsePlainModel(sparsePrioOut)) })
			t.Run("softdelete out", func(t *testing.T) { raceMatrixOut(t, raceSparseSoftModel(sparsePrioOut)) })
		})
	}
}

// raceMatrixOut runs the write-through race matrix on m, whose item starts
// out of the index (see sparsePrioOut).
func raceMatrixOut[T any](t *testing.T, m raceModel[T]) {
	t.Parallel()
	m.name += ", out of the index at first"
	raceMatrix(t, m, true)
}

// TestStreamReplayAfterRecreate: an item soft-deleted and created again
// (Put at version 0 over its tombstone) several times, leaving and entering
// the sparse index and changing its projected note, then every record of
// its history applied again, newest first and in every rotation of stream
// order (a consumer that replays, or two that overlap): no older record
// brings back an entry of a deleted life or a stale note, and the index
// table still matches the base table.
func TestStreamReplayAfterRecreate(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ctx := t.Context()
	m := raceSparseSoftModel(sparsePrio)
	s := newRaceSetup(t, m, false)
	put := func(p int64) {
		t.Helper()
		x, ok, err := raceGet(ctx, s, s.other, "T", "X")
		require.NoError(t, err)
		if !ok {
			x = m.fresh(m.item("T", "X", p))
		}
		_, err = s.other.Put(ctx, m.reprio(x, p))
		require.NoError(t, err)
	}
	del := func() {
		t.Helper()
		x, ok, err := raceGet(ctx, s, s.other, "T", "X")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.other.Delete(ctx, x))
	}
	put(1) // create, in the index at 1
	put(3) // leaves the index
	del()
	put(1) // created again over the tombstone, in the index at 1 again
	put(2)
	del()
	put(3) // created again, out of the index
	put(1) // back in at 1, with the note of 1
	s.settle(t, "after the history")
	ins := schema.CreateTableInputs(s.other, false)
	var changes []ddbindex.Change
	for _, r := range ddbtest.StreamRecords(t, aws.ToString(ins[0].TableName)) {
		c, err := stream.ChangeFromRecord(r)
		require.NoError(t, err)
		changes = append(changes, c)
	}
	require.Len(t, changes, 8)
	rev := slices.Clone(changes)
	slices.Reverse(rev)
	st, err := s.other.Apply(ctx, rev)
	require.NoError(t, err)
	require.Zero(t, st.Puts+st.Deletes, "every write of a replayed record is stale: %+v", st)
	requireIndexMatchesBase(t, s.c, s.other, "after the history replayed newest first")
	for i := range changes {
		_, err := s.other.Apply(ctx, append(slices.Clone(changes[i:]), changes[:i]...))
		require.NoError(t, err)
		requireIndexMatchesBase(t, s.c, s.other, fmt.Sprintf("after the history replayed from record %d", i))
	}
}

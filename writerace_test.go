package ddbindex_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
	"github.com/ddbindex/ddbindex/stream"
)

// Tests of index-table upkeep under racing writers: whatever other writers
// do to an item between the moment a write reads it and the moment its
// write reaches DynamoDB (a change, a delete, a delete and a creation again
// that starts the version again, a move away and back), the index tables end
// holding exactly the entries the base table's items imply, in both upkeep
// modes: write-through (one transaction per write) and the stream consumer.
//
// Three models cover the write paths: a version field with hard deletes
// (a creation again starts at version 1), no version field (last writer
// wins), and a version field with soft deletes (tombstones keep the
// version).

type raceVer struct {
	_    ddbindex.TableSpec `ddbindex:"race-ver,pk=PK,sk=SK"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio int64              `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
	Ver  int64              `dynamodbav:"ver" ddbindex:"version"`
}

type racePlain struct {
	_    ddbindex.TableSpec `ddbindex:"race-plain,pk=PK,sk=SK"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio int64              `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
}

type raceSoft struct {
	_    ddbindex.TableSpec `ddbindex:"race-soft,pk=PK,sk=SK,softdelete"`
	_    ddbindex.IndexSpec `ddbindex:"by_prio,type=table"`
	Team string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_prio.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk,label=ID"`
	Prio int64              `dynamodbav:"prio" ddbindex:"by_prio.sk"`
	Note string             `dynamodbav:"note"`
	Ver  int64              `dynamodbav:"ver" ddbindex:"version"`
}

// raceModel adapts one of the models above to the generic tests.
type raceModel[T any] struct {
	name      string
	versioned bool
	item      func(team, id string, prio int64) T
	// rekey returns item with another id and prio, its version kept.
	rekey func(item T, id string, prio int64) T
	// reprio returns item with another prio, its version kept.
	reprio func(item T, prio int64) T
	// fresh returns item with version 0 (to create it).
	fresh func(item T) T
}

var (
	raceVerModel = raceModel[raceVer]{name: "version", versioned: true,
		item: func(team, id string, p int64) raceVer {
			return raceVer{Team: team, ID: id, Prio: p, Note: "n" + strconv.FormatInt(p, 10)}
		},
		rekey:  func(x raceVer, id string, p int64) raceVer { x.ID, x.Prio = id, p; return x },
		reprio: func(x raceVer, p int64) raceVer { x.Prio, x.Note = p, "n"+strconv.FormatInt(p, 10); return x },
		fresh:  func(x raceVer) raceVer { x.Ver = 0; return x }}
	racePlainModel = raceModel[racePlain]{name: "plain",
		item: func(team, id string, p int64) racePlain {
			return racePlain{Team: team, ID: id, Prio: p, Note: "n" + strconv.FormatInt(p, 10)}
		},
		rekey:  func(x racePlain, id string, p int64) racePlain { x.ID, x.Prio = id, p; return x },
		reprio: func(x racePlain, p int64) racePlain { x.Prio, x.Note = p, "n"+strconv.FormatInt(p, 10); return x },
		fresh:  func(x racePlain) racePlain { return x }}
	raceSoftModel = raceModel[raceSoft]{name: "softdelete", versioned: true,
		item: func(team, id string, p int64) raceSoft {
			return raceSoft{Team: team, ID: id, Prio: p, Note: "n" + strconv.FormatInt(p, 10)}
		},
		rekey:  func(x raceSoft, id string, p int64) raceSoft { x.ID, x.Prio = id, p; return x },
		reprio: func(x raceSoft, p int64) raceSoft { x.Prio, x.Note = p, "n"+strconv.FormatInt(p, 10); return x },
		fresh:  func(x raceSoft) raceSoft { x.Ver = 0; return x }}
)

// raceClient is a DynamoDB client that runs a hook, once, just before the
// first write request it forwards: another writer acting between a write's
// read of the item and its write.
type raceClient struct {
	*dynamodb.Client
	mu   sync.Mutex
	hook func()
}

func (c *raceClient) arm(hook func()) { c.mu.Lock(); c.hook = hook; c.mu.Unlock() }

func (c *raceClient) fire() {
	c.mu.Lock()
	h := c.hook
	c.hook = nil
	c.mu.Unlock()
	if h != nil {
		h()
	}
}

func (c *raceClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.fire()
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *raceClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.fire()
	return c.Client.UpdateItem(ctx, in, optFns...)
}

func (c *raceClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.fire()
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func (c *raceClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.fire()
	return c.Client.TransactWriteItems(ctx, in, optFns...)
}

// raceSetup is one model's tables for a race test: the tables a victim
// writes through (with a raceClient), another writer's, and, in stream
// mode, a consumer that keeps the index table from the stream.
type raceSetup[T any] struct {
	m             raceModel[T]
	victim, other *ddbindex.Table[T]
	rc            *raceClient
	c             *dynamodb.Client
	cons          *stream.Consumer[T]
	writeThrough  bool
}

func newRaceSetup[T any](t *testing.T, m raceModel[T], writeThrough bool) *raceSetup[T] {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	opts := func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
		o.WriteThrough = writeThrough
	}
	rc := &raceClient{Client: c}
	victim, err := ddbindex.New[T](rc, opts)
	require.NoError(t, err)
	other, err := ddbindex.New[T](c, opts)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(other, false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	require.NoError(t, schema.CreateTables(t.Context(), other, c, func(o *schema.CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), writeThrough
	}))
	s := &raceSetup[T]{m: m, victim: victim, other: other, rc: rc, c: c, writeThrough: writeThrough}
	if !writeThrough {
		s.cons, err = stream.NewConsumer(other, ddbtest.StreamsClient(t), &stream.MemoryCheckpoints{})
		require.NoError(t, err)
	}
	return s
}

// settle brings the index table up to date (stream mode: the consumer
// applies every record so far) and checks it against the base table.
func (s *raceSetup[T]) settle(t *testing.T, what string) int {
	t.Helper()
	if s.cons != nil {
		_, err := s.cons.Poll(t.Context())
		require.NoError(t, err, what)
	}
	return requireIndexMatchesBase(t, s.c, s.other, what)
}

// requireIndexMatchesBase checks that the live entries of every index table
// of tb are exactly those that the base table's items imply (as
// IndexWrites computes them for an insert), attribute for attribute but the
// change version. It returns the number of live entries checked.
func requireIndexMatchesBase[T any](t *testing.T, c *dynamodb.Client, tb *ddbindex.Table[T], what string) int {
	t.Helper()
	ins := schema.CreateTableInputs(tb, false)
	want := map[string]map[string]string{} // table → entry key → entry
	for _, it := range ddbtest.Scan(t, c, aws.ToString(ins[0].TableName)) {
		writes, err := tb.IndexWrites(ddbindex.Change{New: it, Version: "1"})
		require.NoError(t, err, what)
		for _, w := range writes {
			require.False(t, w.Tombstone, what)
			if want[w.Table] == nil {
				want[w.Table] = map[string]string{}
			}
			want[w.Table][raceEntryKey(t, ins, w.Table, w.Item)] = raceEntryText(t, w.Item)
		}
	}
	n := 0
	for _, in := range ins[1:] {
		table := aws.ToString(in.TableName)
		got := map[string]string{}
		for _, e := range ddbtest.Scan(t, c, table) {
			if b, ok := e["_deleted"].(*types.AttributeValueMemberBOOL); ok && b.Value {
				continue
			}
			got[raceEntryKey(t, ins, table, e)] = raceEntryText(t, e)
			n++
		}
		if want[table] == nil {
			want[table] = map[string]string{}
		}
		require.Equal(t, want[table], got, "%s: the live entries of %s are exactly what the base table implies", what, table)
	}
	return n
}

func raceEntryKey(t *testing.T, ins []*dynamodb.CreateTableInput, table string, e map[string]types.AttributeValue) string {
	t.Helper()
	for _, in := range ins {
		if aws.ToString(in.TableName) != table {
			continue
		}
		var parts []string
		for _, k := range in.KeySchema {
			parts = append(parts, raceEntryText(t, map[string]types.AttributeValue{"k": e[aws.ToString(k.AttributeName)]}))
		}
		return strings.Join(parts, "|")
	}
	t.Fatalf("no table %s", table)
	return ""
}

// raceEntryText is an entry's attributes, but the change version, as text.
func raceEntryText(t *testing.T, e map[string]types.AttributeValue) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, attributevalue.UnmarshalMap(e, &m))
	delete(m, "_ver")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v;", k, m[k])
	}
	return b.String()
}

// raceOp is one write of the victim or of the racing writer, on the item
// with id in a test's team.
type raceOp[T any] struct {
	name string
	run  func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error
}

// raceGet reads the item team/id through tb; ok is false when it is absent
// (or deleted).
func raceGet[T any](ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team, id string) (T, bool, error) {
	v, err := tb.Get(ctx, s.m.item(team, id, 0))
	if errors.Is(err, ddbindex.ErrNotFound) {
		return v, false, nil
	}
	return v, err == nil, err
}

// raceVictimOps are the writes that read the item and then write: each
// runs against the victim table, whose first write request lets the racer
// act first.
func raceVictimOps[T any](writeThrough bool) []raceOp[T] {
	ops := []raceOp[T]{
		{"put", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			x, ok, err := raceGet(ctx, s, tb, team, "X")
			if err != nil || !ok {
				return fmt.Errorf("victim put: read X: ok=%v %w", ok, err)
			}
			_, err = tb.Put(ctx, s.m.reprio(x, 0))
			return err
		}},
		{"create", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			_, err := tb.Put(ctx, s.m.item(team, "N", 7))
			return err
		}},
		// A creation of X, which is live when the victim reads it: with a
		// version field it lands only if the racer removed X, and then its
		// entries are a new item's, whatever the read found.
		{"create-taken", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			_, err := tb.Put(ctx, s.m.fresh(s.m.item(team, "X", 1)))
			return err
		}},
		{"delete", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			x, ok, err := raceGet(ctx, s, tb, team, "X")
			if err != nil || !ok {
				return fmt.Errorf("victim delete: read X: ok=%v %w", ok, err)
			}
			return tb.Delete(ctx, x)
		}},
		{"move", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			x, ok, err := raceGet(ctx, s, tb, team, "X")
			if err != nil || !ok {
				return fmt.Errorf("victim move: read X: ok=%v %w", ok, err)
			}
			_, err = tb.Move(ctx, x, s.m.rekey(x, "Y", 9))
			return err
		}},
	}
	if !writeThrough { // Update is refused in write-through mode
		ops = append(ops, raceOp[T]{"update", func(ctx context.Context, s *raceSetup[T], tb *ddbindex.Table[T], team string) error {
			return tb.Update(ctx, s.m.item(team, "X", 0), ddbindex.Set("prio", 5))
		}})
	}
	return ops
}

// raceRacerOps are what another writer does between the victim's read and
// its write: to X (put by the setup with prio 1), or to N (absent), the
// item the victim creates.
func raceRacerOps[T any]() []raceOp[T] {
	put := func(ctx context.Context, s *raceSetup[T], team, id string, prio int64) error {
		x, ok, err := raceGet(ctx, s, s.other, team, id)
		if err != nil {
			return err
		}
		if !ok {
			x = s.m.fresh(s.m.item(team, id, prio))
		}
		_, err = s.other.Put(ctx, s.m.reprio(x, prio))
		return err
	}
	del := func(ctx context.Context, s *raceSetup[T], team, id string) error {
		x, ok, err := raceGet(ctx, s, s.other, team, id)
		if err != nil || !ok {
			return fmt.Errorf("racer: read %s: ok=%v %w", id, ok, err)
		}
		return s.other.Delete(ctx, x)
	}
	move := func(ctx context.Context, s *raceSetup[T], team, from, to string, prio int64) error {
		x, ok, err := raceGet(ctx, s, s.other, team, from)
		if err != nil || !ok {
			return fmt.Errorf("racer: read %s: ok=%v %w", from, ok, err)
		}
		_, err = s.other.Move(ctx, x, s.m.rekey(x, to, prio))
		return err
	}
	return []raceOp[T]{
		{"nothing", func(context.Context, *raceSetup[T], *ddbindex.Table[T], string) error { return nil }},
		{"change", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return put(ctx, s, team, "X", 3)
		}},
		{"delete", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return del(ctx, s, team, "X")
		}},
		{"recreate-same", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return errors.Join(del(ctx, s, team, "X"), put(ctx, s, team, "X", 1))
		}},
		{"recreate-other", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return errors.Join(del(ctx, s, team, "X"), put(ctx, s, team, "X", 2))
		}},
		{"move-away", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return move(ctx, s, team, "X", "Z", 4)
		}},
		{"move-away-and-back", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return errors.Join(move(ctx, s, team, "X", "Z", 4), move(ctx, s, team, "Z", "X", 6))
		}},
		{"create", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return put(ctx, s, team, "N", 8)
		}},
		{"create-and-delete", func(ctx context.Context, s *raceSetup[T], _ *ddbindex.Table[T], team string) error {
			return errors.Join(put(ctx, s, team, "N", 8), del(ctx, s, team, "N"))
		}},
	}
}

// TestWriteRaceMatrix injects another writer's operation between every
// write's read and its write, for every pair (victim write × racing
// writer), on three models, in both upkeep modes. The victim's write either
// succeeds or reports a conflict (ErrConflict), and in every case the index
// table ends exactly as the base table implies. With a version field, a
// victim whose item changed in between (even if deleted and created again
// at the same version) reports a conflict; without one, it reads the item
// again and writes over what it finds.
func TestWriteRaceMatrix(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{true, false} {
		mode := map[bool]string{true: "write-through", false: "stream"}[wt]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			} else {
				ddbtest.Require(t, ddbtest.Streams)
				ddbtest.Require(t, ddbtest.Transactions) // Move is one transaction
			}
			t.Run("version", func(t *testing.T) { t.Parallel(); raceMatrix(t, raceVerModel, wt) })
			t.Run("plain", func(t *testing.T) { t.Parallel(); raceMatrix(t, racePlainModel, wt) })
			t.Run("softdelete", func(t *testing.T) { t.Parallel(); raceMatrix(t, raceSoftModel, wt) })
		})
	}
}

func raceMatrix[T any](t *testing.T, m raceModel[T], writeThrough bool) {
	ctx := t.Context()
	s := newRaceSetup(t, m, writeThrough)
	cases, conflicts := 0, 0
	for _, v := range raceVictimOps[T](writeThrough) {
		for _, r := range raceRacerOps[T]() {
			cases++
			team := fmt.Sprintf("%s-%s", v.name, r.name)
			what := fmt.Sprintf("%s %s: victim %s, racer %s", m.name, map[bool]string{true: "write-through", false: "stream"}[writeThrough], v.name, r.name)
			_, err := s.other.Put(ctx, m.item(team, "X", 1))
			require.NoError(t, err, what)
			var racerErr error
			s.rc.arm(func() { racerErr = r.run(ctx, s, s.other, team) })
			err = v.run(ctx, s, s.victim, team)
			s.rc.arm(nil)
			require.NoError(t, racerErr, what)
			if errors.Is(err, ddbindex.ErrConflict) {
				conflicts++
			} else {
				require.NoError(t, err, what)
			}
			raceExpect(t, s, v.name, r.name, err, team, what)
			s.settle(t, what)
		}
	}
	t.Logf("%s: %d interleavings, %d conflicts, index = base in each", m.name, cases, conflicts)
}

// raceExpect checks the victim's outcome where the interleaving decides
// it: a write-through write with a version field whose item changed under
// it is a conflict, and one without a version field is made again on what
// it finds.
func raceExpect[T any](t *testing.T, s *raceSetup[T], victim, racer string, err error, team, what string) {
	t.Helper()
	touchesX := racer != "nothing" && racer != "create" && racer != "create-and-delete"
	touchesN := racer == "create"
	switch {
	case victim == "create":
		if touchesN && s.m.versioned {
			require.ErrorIs(t, err, ddbindex.ErrConflict, "%s: another writer created the item first", what)
		}
	case victim == "create-taken" && s.m.versioned:
		// The creation lands only where the racer left no item, or a
		// tombstone (a soft delete), which a creation takes for absent.
		_, live, gerr := raceGet(t.Context(), s, s.other, team, "X")
		require.NoError(t, gerr)
		gone := racer == "delete" || racer == "move-away"
		if gone {
			require.NoError(t, err, "%s: X was removed before the creation landed", what)
			require.True(t, live, "%s: the creation is stored", what)
		} else {
			require.ErrorIs(t, err, ddbindex.ErrConflict, "%s: X is stored", what)
		}
	case !s.writeThrough:
		// Stream mode: a write without a read (Put, Delete) is checked by
		// version alone; the consumer keeps the index whatever happens.
	case touchesX && s.m.versioned:
		require.ErrorIs(t, err, ddbindex.ErrConflict, "%s: the item read is not the item stored", what)
	case !s.m.versioned && (victim == "put" || victim == "delete"):
		require.NoError(t, err, "%s: without a version the write is made again on what it finds", what)
		_, ok, gerr := raceGet(t.Context(), s, s.other, team, "X")
		require.NoError(t, gerr)
		require.Equal(t, victim == "put", ok, "%s: the victim's write is the last", what)
	}
}

// TestWriteRaceRandom runs many writers at once (two Tables, as two
// instances of a service, 16 goroutines each) over a few items, with puts,
// creations, deletes, moves and (in stream mode) updates, then checks that
// the index table holds exactly what the base table implies, on three
// models and in both upkeep modes.
func TestWriteRaceRandom(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DDBINDEX_RACE_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (rerun with DDBINDEX_RACE_SEED=%d)", seed, seed)
	for _, wt := range []bool{true, false} {
		mode := map[bool]string{true: "write-through", false: "stream"}[wt]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ddbtest.Require(t, ddbtest.Transactions)
			if !wt {
				ddbtest.Require(t, ddbtest.Streams)
			}
			t.Run("version", func(t *testing.T) { t.Parallel(); raceRandom(t, raceVerModel, wt, seed) })
			t.Run("plain", func(t *testing.T) { t.Parallel(); raceRandom(t, racePlainModel, wt, seed+1) })
			t.Run("softdelete", func(t *testing.T) { t.Parallel(); raceRandom(t, raceSoftModel, wt, seed+2) })
		})
	}
}

const (
	raceWriters = 16 // goroutines per Table
	raceOpsEach = 24 // operations per goroutine
)

func raceRandom[T any](t *testing.T, m raceModel[T], writeThrough bool, seed uint64) {
	ctx := t.Context()
	s := newRaceSetup(t, m, writeThrough)
	tables := []*ddbindex.Table[T]{s.victim, s.other}
	ids := []string{"a", "b", "c", "d", "e", "f"}
	teams := []string{"t1", "t2"}
	var (
		mu        sync.Mutex
		ops       = map[string]int{}
		conflicts int
		failures  []error
		wg        sync.WaitGroup
	)
	for w := range 2 * raceWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			tb := tables[w%2]
			for range raceOpsEach {
				team := teams[rng.IntN(len(teams))]
				id := ids[rng.IntN(len(ids))]
				prio := int64(rng.IntN(4))
				x, ok, err := raceGet(ctx, s, tb, team, id)
				op := "read"
				if err == nil {
					switch k := rng.IntN(10); {
					case !ok || k == 0:
						op = "create"
						_, err = tb.Put(ctx, m.fresh(m.item(team, id, prio)))
					case k < 4:
						op = "put"
						_, err = tb.Put(ctx, m.reprio(x, prio))
					case k < 6:
						op = "delete"
						err = tb.Delete(ctx, x)
					case k < 8:
						op = "move"
						to := ids[rng.IntN(len(ids))]
						if to == id {
							to = ids[(slices.Index(ids, id)+1)%len(ids)]
						}
						_, err = tb.Move(ctx, x, m.rekey(x, to, prio))
					case !writeThrough:
						op = "update"
						err = tb.Update(ctx, m.item(team, id, 0), ddbindex.Set("prio", prio))
					default:
						op = "put"
						_, err = tb.Put(ctx, m.reprio(x, prio+1))
					}
				}
				mu.Lock()
				ops[op]++
				switch {
				case err == nil:
				case errors.Is(err, ddbindex.ErrConflict):
					conflicts++ // a legitimate outcome of a race
				default:
					failures = append(failures, fmt.Errorf("%s %s/%s: %w", op, team, id, err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Empty(t, failures, "every write succeeds or reports a conflict")
	total := 0
	for _, n := range ops {
		total += n
	}
	entries := s.settle(t, m.name+" after the random load")
	keys := make([]string, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(a, b) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, ops[k]))
	}
	t.Logf("%s, %s: %d operations (%s) by %d writers, %d conflicts; %d live index entries checked, 0 orphans",
		m.name, map[bool]string{true: "write-through", false: "stream"}[writeThrough], total, strings.Join(parts, ", "),
		2*raceWriters, conflicts, entries)
}

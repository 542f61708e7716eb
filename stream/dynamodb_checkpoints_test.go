package stream

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// Tests of DynamoDBCheckpoints' own conditional logic, against the test
// server (both servers: it needs no streams).

// newControlTable creates a control table (schema.ControlTableInput) for
// the test and returns a store of group name in it.
func newControlTable(t testing.TB, name string) *DynamoDBCheckpoints {
	t.Helper()
	c := ddbtest.Client(t)
	table := ddbtest.Name(t, "control")
	ddbtest.CreateTable(t, c, schema.ControlTableInput(table))
	return &DynamoDBCheckpoints{Client: c, Table: table, Name: name}
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: stNow} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestDynamoDBCheckpointsNeverMoveBack: the checkpoint of a shard only moves
// forward, comparing sequence numbers as numbers (of different lengths
// too), also under concurrent writers; "" clears it; groups are apart.
func TestDynamoDBCheckpointsNeverMoveBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cp := newControlTable(t, "tickets")
	other := &DynamoDBCheckpoints{Client: cp.Client, Table: cp.Table, Name: "other"}

	require.Empty(t, checkpointOf(t, cp, "s1"))
	for _, step := range []struct{ set, want string }{
		{"999", "999"},
		{"1000", "1000"}, // longer: later, though "1000" < "999" as strings
		{"999", "1000"},  // back: refused, silently
		{"0999", "1000"}, // leading zeros do not make it longer
		{"1000", "1000"}, // the same again: fine
		{"49668883479281003476958651120390163406", "49668883479281003476958651120390163406"},
		{"4966888347928100347695865112039016340", "49668883479281003476958651120390163406"},
	} {
		require.NoError(t, cp.SetCheckpoint(ctx, "s1", step.set))
		require.Equal(t, step.want, checkpointOf(t, cp, "s1"), "after setting %s", step.set)
	}
	require.Empty(t, checkpointOf(t, other, "s1"), "another group's checkpoints are apart")
	require.Empty(t, checkpointOf(t, cp, "s2"))

	require.NoError(t, cp.SetCheckpoint(ctx, "s1", ""), "clearing")
	require.Empty(t, checkpointOf(t, cp, "s1"))
	require.NoError(t, cp.SetCheckpoint(ctx, "s1", "5"), "after clearing, any checkpoint")
	require.Equal(t, "5", checkpointOf(t, cp, "s1"))

	for _, bad := range []string{"12a", "-1", "1.5", strings.Repeat("9", 41)} {
		err := cp.SetCheckpoint(ctx, "s1", bad)
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, bad)
	}
	require.Equal(t, "5", checkpointOf(t, cp, "s1"))

	// Concurrent writers of random sequence numbers of 1 to 30 digits: the
	// checkpoint ends at the greatest, as compareSeq orders them.
	rng := rand.New(rand.NewPCG(3, 4))
	seqs := make([]string, 40)
	for i := range seqs {
		seqs[i] = fmt.Sprint(rng.Uint64N(1000)) + strings.Repeat("7", rng.IntN(28))
	}
	var wg sync.WaitGroup
	var errs [4]error // each writer's own, read once they are joined
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(seqs); i += 4 {
				if err := cp.SetCheckpoint(ctx, "s3", seqs[i]); err != nil {
					errs[w] = fmt.Errorf("checkpoint %s: %w", seqs[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs[:]...))
	want := slices.MaxFunc(seqs, compareSeq)
	require.Equal(t, want, checkpointOf(t, cp, "s3"))

	// The item: the number as given, its zero-padded order key.
	item := getControlItem(t, cp, "shard#s3")
	require.Equal(t, want, item["seq"].(*types.AttributeValueMemberS).Value)
	ord := item["seq_order"].(*types.AttributeValueMemberS).Value
	require.Len(t, ord, 40)
	require.Equal(t, want, strings.TrimLeft(ord, "0"))
}

func getControlItem(t testing.TB, s *DynamoDBCheckpoints, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.Client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(sk), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

// TestDynamoDBLeases: a lease is taken when free, renewed by its owner,
// refused to another consumer while it lasts and taken over once it ran
// out; only its owner releases it; an ended shard stays ended; heartbeats
// are listed and deleted only as listed.
func TestDynamoDBLeases(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newControlTable(t, "tickets")
	t0 := stNow
	dur := 30 * time.Second
	acquire := func(shard, owner string, now time.Time) bool {
		t.Helper()
		ok, err := s.AcquireLease(ctx, shard, owner, now, now.Add(dur))
		require.NoError(t, err)
		return ok
	}
	leases := func() map[string]Lease {
		t.Helper()
		all, err := s.ListLeases(ctx)
		require.NoError(t, err)
		out := map[string]Lease{}
		for _, l := range all {
			key := "shard " + l.ShardID
			if l.ShardID == "" {
				key = "heartbeat " + l.Owner
			}
			l.Until = l.Until.UTC()
			out[key] = l
		}
		return out
	}

	require.True(t, acquire("s1", "A", t0), "a free shard")
	require.False(t, acquire("s1", "B", t0.Add(dur-time.Millisecond)), "held by A")
	require.True(t, acquire("s1", "A", t0.Add(dur/2)), "A renews")
	require.False(t, acquire("s1", "B", t0.Add(dur)), "the renewal lasts")
	require.True(t, acquire("s1", "B", t0.Add(dur/2+dur)), "taken over once it ran out")
	require.False(t, acquire("s1", "A", t0.Add(dur/2+dur)), "A lost it")

	require.NoError(t, s.SetCheckpoint(ctx, "s1", "42"))
	require.NoError(t, s.ReleaseLease(ctx, "s1", "A", false))
	require.Equal(t, "B", leases()["shard s1"].Owner, "only the owner releases")
	require.NoError(t, s.ReleaseLease(ctx, "s1", "B", false))
	require.Equal(t, Lease{ShardID: "s1"}, leases()["shard s1"], "released")
	require.Equal(t, "42", checkpointOf(t, s, "s1"), "the checkpoint stays")
	require.True(t, acquire("s1", "C", t0), "a released lease is free")

	require.True(t, acquire("s2", "A", t0))
	require.NoError(t, s.ReleaseLease(ctx, "s2", "B", true), "whoever read it to its end marks it ended")
	require.Equal(t, Lease{ShardID: "s2", Ended: true}, leases()["shard s2"])

	require.True(t, acquire("", "A", t0), "a heartbeat")
	require.True(t, acquire("", "B", t0))
	got := leases()
	require.Equal(t, Lease{Owner: "A", Until: t0.Add(dur)}, got["heartbeat A"])
	require.Equal(t, Lease{ShardID: "s1", Owner: "C", Until: t0.Add(dur)}, got["shard s1"])
	require.Len(t, got, 4)

	// DeleteLease deletes only as listed.
	require.True(t, acquire("", "B", t0.Add(time.Second)), "B renews its heartbeat")
	require.NoError(t, s.DeleteLease(ctx, got["heartbeat B"]), "changed since listed: kept")
	require.NoError(t, s.DeleteLease(ctx, got["heartbeat A"]))
	require.NoError(t, s.DeleteLease(ctx, got["shard s2"]))
	require.ErrorIs(t, s.DeleteLease(ctx, got["shard s1"]), ddbindex.ErrInvalidWrite, "not ended: never deleted")
	got = leases()
	require.Len(t, got, 2)
	require.Contains(t, got, "heartbeat B")
	require.Contains(t, got, "shard s1")
	require.NoError(t, s.ReleaseLease(ctx, "", "B", false))
	require.NotContains(t, leases(), "heartbeat B")

	// Misuse and damage.
	for name, bad := range map[string]*DynamoDBCheckpoints{
		"nil": nil, "no client": {Table: s.Table, Name: "x"}, "no table": {Client: s.Client, Name: "x"}, "no name": {Client: s.Client, Table: s.Table},
	} {
		_, err := bad.Checkpoint(ctx, "s1")
		require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, name)
		_, err = bad.ListLeases(ctx)
		require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, name)
	}
	_, err := s.AcquireLease(ctx, "s1", "", t0, t0)
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, "no owner")
	item := s.key("shard#s9")
	item["until"] = &types.AttributeValueMemberS{Value: "soon"}
	_, err = s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item})
	require.NoError(t, err)
	_, err = s.ListLeases(ctx)
	require.ErrorIs(t, err, ddbindex.ErrMalformedItem)
	require.ErrorContains(t, err, "until is not a number")
}

// TestDynamoDBCheckpointsErrors: a failed request is a *ddbindex.Error
// naming the request and the table, once (a consumer does not wrap it
// again).
func TestDynamoDBCheckpointsErrors(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	s := &DynamoDBCheckpoints{Client: c, Table: ddbtest.Name(t, "missing"), Name: "x"}
	_, err := s.Checkpoint(t.Context(), "s1")
	require.ErrorIs(t, err, ddbindex.ErrDynamoDB)
	var ce *ddbindex.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "GetItem", ce.Op)
	require.Equal(t, s.Table, ce.Table)
	var rnf *types.ResourceNotFoundException
	require.ErrorAs(t, err, &rnf)
	require.Equal(t, "DDBX-900", ddbindex.Code(err))

	wrapped := callErr("Checkpoint", nil, err)
	require.Same(t, err, wrapped, "not wrapped twice")
}

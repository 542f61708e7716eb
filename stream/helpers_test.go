package stream

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// Helpers of the stream package's tests, built on ddbindex's public API and
// internal/ddbtest (the root package's test helpers are not visible here).

// newTestTable returns a Table for T whose physical tables have names unique
// to the test, creates them on the test server (with TTL and a stream where
// the server has them), and deletes them when the test ends. It skips the
// test when no server is configured.
func newTestTable[T any](t testing.TB, optFns ...func(*ddbindex.Options)) (*ddbindex.Table[T], *dynamodb.Client) {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	fns := append([]func(*ddbindex.Options){func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	}}, optFns...)
	tb, err := ddbindex.New[T](c, fns...)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	err = schema.CreateTables(context.Background(), tb, c, func(o *schema.CreateOptions) {
		o.NoTTL, o.NoStream = !ddbtest.Has(ddbtest.TTL), !ddbtest.Has(ddbtest.Streams)
	})
	require.NoError(t, err)
	return tb, c
}

// freshIndexes returns a Table for the same base table as tb (declared as
// base) whose index tables are new and empty, and the table-name mapping it
// uses (to build more Tables of the same tables, on other clients).
func freshIndexes[T any](t testing.TB, tb *ddbindex.Table[T], base, name string, optFns ...func(*ddbindex.Options)) (*ddbindex.Table[T], func(string) string) {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, name)
	baseName := tb.TableName()
	names := func(s string) string {
		if s == base {
			return baseName
		}
		return prefix + "-" + s
	}
	fresh, err := ddbindex.New[T](c, append(optFns, func(o *ddbindex.Options) { o.TableName = names })...)
	require.NoError(t, err)
	ins := schema.CreateTableInputs(fresh, false)
	require.Equal(t, baseName, aws.ToString(ins[0].TableName), "the base table is declared as %s", base)
	for _, in := range ins[1:] {
		ddbtest.CreateTable(t, c, in)
	}
	return fresh, names
}

// snapshot is the raw content of every index table of tb, in declaration
// order.
func snapshot[T any](t testing.TB, tb *ddbindex.Table[T]) [][]map[string]types.AttributeValue {
	t.Helper()
	c := ddbtest.Client(t)
	var out [][]map[string]types.AttributeValue
	for _, in := range schema.CreateTableInputs(tb, false)[1:] {
		out = append(out, ddbtest.Scan(t, c, aws.ToString(in.TableName)))
	}
	return out
}

// indexItems returns the entries of an index partition (or a base-table
// partition, for index ""), live ones only or tombstones too.
func indexItems[T any](t testing.TB, tb *ddbindex.Table[T], index string, withDeleted bool, partition ...any) []T {
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

// records reads every record of tb's base-table stream from its start.
func records[T any](t testing.TB, tb *ddbindex.Table[T]) []streamtypes.Record {
	t.Helper()
	return ddbtest.StreamRecords(t, tb.TableName())
}

// toChanges converts stream records into Changes.
func toChanges(t testing.TB, recs []streamtypes.Record) []ddbindex.Change {
	t.Helper()
	out := make([]ddbindex.Change, len(recs))
	for i, r := range recs {
		c, err := ChangeFromRecord(r)
		require.NoError(t, err)
		out[i] = c
	}
	return out
}

// checkpointOf returns the checkpoint of a shard.
func checkpointOf(t testing.TB, cp Checkpoints, shard string) string {
	t.Helper()
	seq, err := cp.Checkpoint(t.Context(), shard)
	require.NoError(t, err)
	return seq
}

// onlyCheckpoint returns the one shard's checkpoint of cp ("" for none),
// and its shard.
func onlyCheckpoint(t testing.TB, cp *MemoryCheckpoints) (shard, seq string) {
	t.Helper()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	require.LessOrEqual(t, len(cp.seq), 1)
	for k, v := range cp.seq {
		return k, v
	}
	return "", ""
}

// fast is a consumer's retry budget in tests against fakes: a few
// attempts, short delays.
var fast = ddbindex.RetryOptions{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// with returns an option function that sets a consumer's options to o.
func with(o ConsumerOptions) func(*ConsumerOptions) {
	return func(c *ConsumerOptions) { *c = o }
}

// hangGuard bounds a test's wait for something the code under test signals
// (on a channel: tests never sleep to wait). It is far beyond any plausible
// wait, on any machine: it only turns a hung test into a failure that says
// what it waited for, before go test's -timeout ends the whole package.
const hangGuard = 5 * time.Minute

// signalCheckpoints passes calls on to Checkpoints, and closes reached once
// a checkpoint that match accepts has been written: the moment a consumer
// has applied the records up to it.
type signalCheckpoints struct {
	Checkpoints
	match   func(shard, seq string) bool
	once    sync.Once
	reached chan struct{}
}

func newSignalCheckpoints(cp Checkpoints, match func(shard, seq string) bool) *signalCheckpoints {
	return &signalCheckpoints{Checkpoints: cp, match: match, reached: make(chan struct{})}
}

func (s *signalCheckpoints) SetCheckpoint(ctx context.Context, shard, seq string) error {
	err := s.Checkpoints.SetCheckpoint(ctx, shard, seq)
	if err == nil && s.match(shard, seq) {
		s.once.Do(func() { close(s.reached) })
	}
	return err
}

// awaitApplied waits until reached is closed, failing the test when Run
// (whose result done carries) returns first, or after hangGuard.
func awaitApplied(t *testing.T, reached <-chan struct{}, done <-chan error, what string) {
	t.Helper()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("Run returned before it applied %s: %v", what, err)
	case <-time.After(hangGuard):
		t.Fatalf("Run did not apply %s within the hang guard (%v)", what, hangGuard)
	}
}

// awaitReturn returns Run's result (done carries it) once its context has
// ended, failing the test after hangGuard.
func awaitReturn(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("Run did not return within the hang guard (%v) after its context ended", hangGuard)
		return nil
	}
}

// stTicket has its status in the base sort key (so a status change is a
// Move: a REMOVE and an INSERT record), an index table by status that
// projects everything, and a sparse keys-only index table by owner.
type stTicket struct {
	_       ddbindex.TableSpec `ddbindex:"st-tickets,pk=PK,sk=SK"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	_       ddbindex.IndexSpec `ddbindex:"by_owner,type=table,project=keys"`
	Team    string             `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk;by_owner.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string             `dynamodbav:"id" ddbindex:"sk:1,label=TICKET"`
	Created time.Time          `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Owner   *string            `dynamodbav:"owner,omitempty" ddbindex:"by_owner.sk"`
	Title   string             `dynamodbav:"title"`
}

// stBase is stTicket's declared base table.
const stBase = "st-tickets"

var stNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func stFixedNow(o *ddbindex.Options) { o.Now = func() time.Time { return stNow } }

func stOwner(s string) *string { return &s }

// stFresh returns a Table of tb's base table with new, empty index tables.
func stFresh(t testing.TB, tb *ddbindex.Table[stTicket], name string) *ddbindex.Table[stTicket] {
	t.Helper()
	fresh, _ := freshIndexes(t, tb, stBase, name, stFixedNow)
	return fresh
}

// stRequireStreams skips the test unless the server has Streams and
// transactions (the workloads move tickets).
func stRequireStreams(t testing.TB) {
	t.Helper()
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.Transactions)
}

// stCheckIndexes compares both index tables with what the base table says.
func stCheckIndexes(t testing.TB, tb *ddbindex.Table[stTicket], team string) {
	t.Helper()
	base := indexItems(t, tb, "", false, team)
	require.NotEmpty(t, base)
	require.ElementsMatch(t, base, indexItems(t, tb, "by_status", false, team), "by_status holds every base item, whole")
	var owned []stTicket
	for _, it := range base {
		if it.Owner != nil {
			owned = append(owned, stTicket{Team: it.Team, Status: it.Status, ID: it.ID, Owner: it.Owner})
		}
	}
	require.ElementsMatch(t, owned, indexItems(t, tb, "by_owner", false, team), "by_owner holds the owned items' keys")
	// Index order: by status, then created, then id.
	got := indexItems(t, tb, "by_status", false, team)
	require.True(t, slices.IsSortedFunc(got, func(a, b stTicket) int {
		if a.Status != b.Status {
			return strings.Compare(a.Status, b.Status)
		}
		return a.Created.Compare(b.Created)
	}), "by_status order")
}

// newConsumer is NewConsumer for the tests whose options are valid: it
// fails the test when NewConsumer refuses them.
func newConsumer[T any](t testing.TB, tb *ddbindex.Table[T], api StreamsAPI, cp Checkpoints, optFns ...func(*ConsumerOptions)) *Consumer[T] {
	t.Helper()
	c, err := NewConsumer(tb, api, cp, optFns...)
	require.NoError(t, err)
	return c
}

// newLambdaHandler is NewLambdaHandler for the tests whose options are
// valid: it fails the test when NewLambdaHandler refuses them.
func newLambdaHandler[T any](t testing.TB, tb *ddbindex.Table[T], optFns ...func(*LambdaOptions)) *LambdaHandler[T] {
	t.Helper()
	h, err := NewLambdaHandler(tb, optFns...)
	require.NoError(t, err)
	return h
}

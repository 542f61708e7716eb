package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// Tests of Backfill of both forms at table scale.
//
// The bf models are one index through a GSI <-> index table migration, on
// one set of physical tables: bfGSI (step 0) reads the GSI; bfGSIKeepTable
// (step 1) also keeps the index table, which Backfill fills; bfTableKeepGSI
// (step 2) reads the table and keeps the GSI, whose derived attributes
// Backfill writes; bfTable (step 3) has the table alone, and its writes
// leave the GSI's attributes out. The index's partition key is labelled
// (a derived _pk) and its sort key composite (a derived _sk); Status nil
// leaves an item out of it.

type bfGSI struct {
	_       ddbindex.TableSpec `ddbindex:"bf-tickets,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
}

type bfGSIKeepTable struct {
	_       ddbindex.TableSpec `ddbindex:"bf-tickets,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
}

type bfTableKeepGSI struct {
	_       ddbindex.TableSpec `ddbindex:"bf-tickets,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
}

type bfTable struct {
	_       ddbindex.TableSpec `ddbindex:"bf-tickets,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
}

// bfVerKeepGSI and bfVerTable are steps 2 and 3 of a model with a version
// attribute, for the condition Backfill puts on a versioned item.
type bfVerKeepGSI struct {
	_       ddbindex.TableSpec `ddbindex:"bf-vtickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type bfVerTable struct {
	_       ddbindex.TableSpec `ddbindex:"bf-vtickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk,label=TEAM"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title   string             `dynamodbav:"title"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// bfNative keeps a GSI keyed by model attributes alone: nothing to write.
type bfNative struct {
	_       ddbindex.TableSpec `ddbindex:"bf-native"`
	_       ddbindex.IndexSpec `ddbindex:"by_team,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    *string            `dynamodbav:"team,omitempty" ddbindex:"by_team.pk"`
	Created int64              `dynamodbav:"created" ddbindex:"by_team.sk"`
}

// bfLSI keeps an LSI whose sort key is derived.
type bfLSI struct {
	_       ddbindex.TableSpec `ddbindex:"bf-lsi"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=lsi"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  *string            `dynamodbav:"status,omitempty" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

var bfStatuses = []string{"new", "open", "pending", "shipped", "closed"}

// bfKind is what a test item is at the start of a backfill.
type bfKind int

const (
	bfBare      bfKind = iota // live, in the index, without the GSI's attributes (a step-3 writer's)
	bfRight                   // live, in the index, with the right GSI attributes (a step-2 writer's)
	bfStale                   // live, in the index, with GSI attributes of an earlier status
	bfSparse                  // live, not in the index
	bfSparseOld               // live, not in the index, with GSI attributes from when it was
	bfDeleted                 // soft-deleted
)

// bfItem is one test item and its kind.
type bfItem struct {
	v    bfTableKeepGSI
	kind bfKind
}

// bfItems makes n items of 20 teams, each kind in a fixed share.
func bfItems(n int) []bfItem {
	out := make([]bfItem, n)
	for i := range out {
		st := bfStatuses[i%len(bfStatuses)]
		v := bfTableKeepGSI{ID: fmt.Sprintf("t%05d", i), Team: fmt.Sprintf("team-%02d", i%20), Status: &st,
			Created: 1733000000000 + int64(i*7919%100000), Title: fmt.Sprint("ticket ", i)}
		k := bfBare
		switch {
		case i%13 == 7:
			k = bfDeleted
		case i%9 == 4:
			k = bfSparse
			if i%2 == 0 {
				k = bfSparseOld
			}
			v.Status = nil
		case i%11 == 5:
			k = bfRight
		case i%17 == 3:
			k = bfStale
		}
		out[i] = bfItem{v, k}
	}
	return out
}

// bfImages returns each item's base item at the start (as the writer of
// its kind left it) and, for a backfill of the GSI, the base item it must
// end as.
func bfImages(t testing.TB, items []bfItem) (start, want []map[string]types.AttributeValue) {
	t.Helper()
	withGSI, err := ddbindex.New[bfTableKeepGSI](nil)
	require.NoError(t, err)
	without, err := ddbindex.New[bfTable](nil)
	require.NoError(t, err)
	gsiAttrs := func(v bfTableKeepGSI) map[string]types.AttributeValue {
		img, err := withGSI.Marshal(v)
		require.NoError(t, err)
		return map[string]types.AttributeValue{"_pk": img["_pk"], "_sk": img["_sk"]}
	}
	for _, it := range items {
		bare, err := without.Marshal(bfTable(it.v))
		require.NoError(t, err)
		require.NotContains(t, bare, "_sk")
		s := maps.Clone(bare)
		w := maps.Clone(bare)
		switch it.kind {
		case bfBare:
			maps.Copy(w, gsiAttrs(it.v))
		case bfRight:
			maps.Copy(s, gsiAttrs(it.v))
			maps.Copy(w, gsiAttrs(it.v))
		case bfStale:
			old := it.v
			other := "archived"
			old.Status, old.Created = &other, old.Created-1
			maps.Copy(s, gsiAttrs(old))
			maps.Copy(w, gsiAttrs(it.v))
		case bfSparseOld:
			old := it.v
			other := "archived"
			old.Status = &other
			maps.Copy(s, gsiAttrs(old))
		case bfDeleted:
			// A soft delete by a step-3 writer: no GSI attributes; and
			// one in three by a step-2 writer, with them. Either stays.
			if it.v.Created%3 == 0 {
				maps.Copy(s, gsiAttrs(it.v))
			}
			s[bfDeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
			s[bfTTLAttr] = &types.AttributeValueMemberN{Value: "1900000000"}
			w = maps.Clone(s)
		}
		start = append(start, s)
		want = append(want, w)
	}
	return start, want
}

// bfCounts returns the stats a complete backfill of the GSI of items
// reports, from a start where no item was backfilled.
func bfCounts(items []bfItem) migrate.BackfillStats {
	st := migrate.BackfillStats{Scanned: len(items)}
	for _, it := range items {
		switch it.kind {
		case bfBare, bfStale, bfSparseOld:
			st.Written++
		case bfRight:
			st.Unchanged++
		case bfSparse:
			st.Sparse++
		case bfDeleted:
			st.Tombstones++
		}
	}
	return st
}

// bfBatchWrite writes items with BatchWriteItem, in parallel batches of
// 25, retrying what the server leaves unprocessed.
func bfBatchWrite(t testing.TB, c *dynamodb.Client, table string, items []map[string]types.AttributeValue) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	batches := slices.Collect(slices.Chunk(items, 25))
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(batches) {
					return
				}
				reqs := map[string][]types.WriteRequest{}
				for _, it := range batches[i] {
					reqs[table] = append(reqs[table], types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
				}
				for len(reqs) > 0 {
					out, err := c.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: reqs})
					if err != nil {
						errs <- err
						return
					}
					reqs = out.UnprocessedItems
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// bfByID scans a table (strongly consistent) and returns its items by
// their "id".
func bfByID(t testing.TB, c *dynamodb.Client, table string) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := c.Scan(t.Context(), in)
		require.NoError(t, err)
		for _, it := range page.Items {
			id := it["id"].(*types.AttributeValueMemberS).Value
			if _, dup := out[id]; dup {
				t.Fatalf("two items with id %s", id)
			}
			out[id] = it
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// bfSame reports the items of got that differ from want (by id), at most
// five of them, and the number of differences.
func bfSame(want, got map[string]map[string]types.AttributeValue) (int, []string) {
	var diffs []string
	n := 0
	for _, id := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[id]
		switch {
		case !ok:
			n++
			if len(diffs) < 5 {
				diffs = append(diffs, id+": missing")
			}
		case !bfSameItem(want[id], g):
			n++
			if len(diffs) < 5 {
				diffs = append(diffs, fmt.Sprintf("%s: want %v, got %v", id, bfItemString(want[id]), bfItemString(g)))
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			n++
			if len(diffs) < 5 {
				diffs = append(diffs, id+": not expected")
			}
		}
	}
	return n, diffs
}

func bfItemString(m map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%v ", k, bfAVString(m[k]))
	}
	return b.String()
}

// bfSetup creates the bf tables (base with the GSI, index table, control
// table) for model T, without a stream (no consumer runs in these tests, and
// a stream slows the local servers' writes), and writes start into the base
// table.
func bfSetup[T any](t testing.TB, start []map[string]types.AttributeValue) (*ddbindex.Table[T], *dynamodb.Client, *migrate.DynamoDBCheckpoints) {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	control := prefix + "-control"
	tb, err := ddbindex.New[T](c, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	})
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.DeleteOnCleanup(t, c, aws.ToString(in.TableName))
	}
	require.NoError(t, schema.CreateTables(t.Context(), tb, c, func(o *schema.CreateOptions) { o.NoTTL, o.NoStream = true, true }))
	ddbtest.CreateTable(t, c, schema.ControlTableInput(control))
	bfBatchWrite(t, c, tb.TableName(), start)
	return tb, c, &migrate.DynamoDBCheckpoints{Client: c, Table: control}
}

// bfKill runs a backfill that cancels itself once it has scanned at least
// killAt items, and returns its stats and error.
func bfKill[T any](t *testing.T, tb *ddbindex.Table[T], c migrate.ScanAPI, index string, killAt int, opts func(*migrate.BackfillOptions)) (migrate.BackfillStats, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	return migrate.Backfill(ctx, tb, c, index, opts, func(o *migrate.BackfillOptions) {
		o.Progress = func(p migrate.BackfillProgress) {
			if p.Scanned >= killAt {
				cancel()
			}
		}
	})
}

// TestBackfillKilledAndResumed is the test: a 20,000-item table,
// its backfill killed at a random point and resumed from its checkpoints in
// the control table, ends with exactly the right derived attributes on
// every base item (the GSI form) or exactly the right entries (the
// index-table form), and nothing else written: tombstones get nothing.
func TestBackfillKilledAndResumed(t *testing.T) {
	t.Parallel()
	const n = 20000
	t0 := time.Now()
	items := bfItems(n)
	start, want := bfImages(t, items)
	t.Logf("ground truth made in %v", time.Since(t0).Round(time.Millisecond))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	killAt := map[string]int{"gsi": n/10 + rng.IntN(n*8/10), "table": n/10 + rng.IntN(n*8/10)}
	opts := func(o *migrate.BackfillOptions) { o.Workers, o.PageSize = 8, 100 }

	t.Run("gsi", func(t *testing.T) {
		t.Parallel()
		killAt := killAt["gsi"]
		t0 := time.Now()
		tb, c, cps := bfSetup[bfTableKeepGSI](t, start)
		t.Logf("tables created and written in %v", time.Since(t0).Round(time.Millisecond))
		withCP := func(o *migrate.BackfillOptions) { opts(o); o.Checkpoint = cps }
		var scans1, scans2 atomic.Int64
		began := time.Now()
		st1, err := bfKill(t, tb, bfCountingScan{c, &scans1}, "by_status", killAt, withCP)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, ddbindex.ErrDynamoDB)
		took1 := time.Since(began)
		positions, done := bfSaved(t, cps, tb.TableName()+"#by_status#gsi")
		var last migrate.BackfillProgress
		began2 := time.Now()
		st2, err := migrate.Backfill(t.Context(), tb, bfCountingScan{c, &scans2}, "by_status", withCP, func(o *migrate.BackfillOptions) {
			o.Progress = func(p migrate.BackfillProgress) { last = p }
		})
		require.NoError(t, err)
		took2 := time.Since(began2)
		t.Logf("killed after %d items (asked %d) in %v, %d scans: %+v", st1.Scanned, killAt, took1.Round(time.Millisecond), scans1.Load(), st1)
		t.Logf("resumed (%d segments from a position, %d done) in %v, %d scans: %+v; last progress: %.0f items/s, estimate %d, ETA %v",
			positions, done, took2.Round(time.Millisecond), scans2.Load(), st2, last.ItemsPerSecond, last.Estimate, last.ETA)
		t.Logf("both runs: %.0f items/s; %d scans + %d updates + %d checkpoint saves", float64(st1.Scanned+st2.Scanned)/(took1+took2).Seconds(),
			scans1.Load()+scans2.Load(), st1.Written+st2.Written, scans1.Load()+scans2.Load())

		require.Equal(t, int64(st2.Scanned), last.Estimate, "once every segment finished, the estimate is what was scanned")
		require.Zero(t, last.ETA)
		require.Less(t, st2.Scanned, n, "the second run resumed rather than started over")
		require.GreaterOrEqual(t, st1.Scanned+st2.Scanned, n)
		require.Positive(t, st2.Resumed+st2.AlreadyDone)
		require.Equal(t, positions, st2.Resumed, "every saved position resumed")
		require.Equal(t, done, st2.AlreadyDone, "no finished segment scanned again")
		full := bfCounts(items)
		require.LessOrEqual(t, st1.Written+st2.Written, full.Written)
		require.GreaterOrEqual(t, st1.Written+st2.Written+st1.Unchanged+st2.Unchanged, full.Written+full.Unchanged, "every item written once, or found right")
		require.Zero(t, st1.Skipped+st2.Skipped, "no writer raced the backfill")
		t0 = time.Now()

		wantByID := map[string]map[string]types.AttributeValue{}
		for _, w := range want {
			wantByID[w["id"].(*types.AttributeValueMemberS).Value] = w
		}
		diff, examples := bfSame(wantByID, bfByID(t, c, tb.TableName()))
		require.Zero(t, diff, "base items that differ from ground truth: %v", examples)
		require.Empty(t, ddbtest.Scan(t, c, bfIndexTable(t, tb, "by_status")), "nothing written to the index table")

		t.Logf("base table checked in %v", time.Since(t0).Round(time.Millisecond))
		// The GSI answers every team's query with exactly its live items,
		// in status, created, id order.
		for _, team := range []string{"team-00", "team-07", "team-19"} {
			var live []bfTableKeepGSI
			for _, it := range items {
				if it.v.Team == team && it.kind != bfDeleted && it.v.Status != nil {
					live = append(live, it.v)
				}
			}
			slices.SortFunc(live, func(a, b bfTableKeepGSI) int {
				return bfCmpOr(strings.Compare(*a.Status, *b.Status), bfCmpInt(a.Created, b.Created), strings.Compare(a.ID, b.ID))
			})
			var wantIDs []string
			for _, v := range live {
				wantIDs = append(wantIDs, v.ID)
			}
			require.Equal(t, wantIDs, bfQueryIDs(t, tb.Query("by_status", team).Via(ddbindex.GSI).Limit(400)), team)
		}

		t.Logf("checked in %v", time.Since(t0).Round(time.Millisecond))
		// Run again: every segment is done.
		st3, err := migrate.Backfill(t.Context(), tb, c, "by_status", withCP)
		require.NoError(t, err)
		require.Equal(t, migrate.BackfillStats{AlreadyDone: 8}, st3)
	})

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		killAt := killAt["table"]
		// Step 0's writers wrote the base items, with the GSI's
		// attributes; the stream (a consumer started before the backfill)
		// already wrote newer entries of every eleventh item.
		tb, c, cps := bfSetup[bfGSIKeepTable](t, want)
		require.Equal(t, ddbindex.IndexTable, bfForm(t, tb, "by_status").Kind)
		indexTable := bfIndexTable(t, tb, "by_status")
		wantEntries := map[string]map[string]types.AttributeValue{}
		var stream []map[string]types.AttributeValue
		written := 0
		for i, it := range items {
			if it.kind == bfDeleted || it.v.Status == nil {
				continue
			}
			v := bfGSIKeepTable(it.v)
			e := bfEntryOf(t, tb, "by_status", v, "0")
			if i%11 == 6 {
				v.Title = "changed after the scan began"
				e = bfEntryOf(t, tb, "by_status", v, "42")
				stream = append(stream, e)
			} else {
				written++
			}
			wantEntries[v.ID] = e
		}
		bfBatchWrite(t, c, indexTable, stream)

		withCP := func(o *migrate.BackfillOptions) { opts(o); o.Checkpoint = cps }
		began := time.Now()
		st1, err := bfKill(t, tb, c, "by_status", killAt, withCP)
		require.ErrorIs(t, err, context.Canceled)
		positions, done := bfSaved(t, cps, tb.TableName()+"#by_status#table")
		st2, err := migrate.Backfill(t.Context(), tb, c, "by_status", withCP)
		require.NoError(t, err)
		took := time.Since(began)
		t.Logf("killed after %d items (asked %d): %+v; resumed (%d segments from a position, %d done): %+v; %.0f items/s over both",
			st1.Scanned, killAt, st1, positions, done, st2, float64(st1.Scanned+st2.Scanned)/took.Seconds())
		require.Less(t, st2.Scanned, n)
		require.Positive(t, st2.Resumed+st2.AlreadyDone)
		require.Equal(t, positions, st2.Resumed)
		require.Equal(t, done, st2.AlreadyDone)
		require.LessOrEqual(t, st1.Written+st2.Written, written)
		require.GreaterOrEqual(t, st1.Written+st2.Written+st1.Skipped+st2.Skipped, written+len(stream))

		diff, examples := bfSame(wantEntries, bfByID(t, c, indexTable))
		require.Zero(t, diff, "index-table entries that differ from ground truth: %v", examples)
		startByID := map[string]map[string]types.AttributeValue{}
		for _, w := range want {
			startByID[w["id"].(*types.AttributeValueMemberS).Value] = w
		}
		diff, examples = bfSame(startByID, bfByID(t, c, tb.TableName()))
		require.Zero(t, diff, "the base table is left as it was: %v", examples)

		// Both forms hold the same items in the same order (the titles
		// the stream changed differ, as they would).
		for _, team := range []string{"team-03", "team-11"} {
			ids := bfQueryIDs(t, tb.Query("by_status", team).Via(ddbindex.GSI).Limit(300))
			require.NotEmpty(t, ids)
			require.Equal(t, ids, bfQueryIDs(t, tb.Query("by_status", team).Via(ddbindex.IndexTable).Limit(300)), team)
		}
	})
}

// bfQueryIDs runs q to its end and returns the ids it read, in order.
func bfQueryIDs[T any](t *testing.T, q ddbindex.Query[T]) []string {
	t.Helper()
	var out []string
	for {
		p, err := q.Page(t.Context())
		require.NoError(t, err)
		for i := range p.Items {
			out = append(out, reflect.ValueOf(p.Items[i]).FieldByName("ID").String())
		}
		if p.Cursor == "" {
			return out
		}
		q = q.After(p.Cursor)
	}
}

func bfCmpOr(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

func bfCmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bfSaved returns the number of segments of the 8 of a backfill that its
// checkpoints record with a position, and as done.
func bfSaved(t *testing.T, cps migrate.Checkpoints, key string) (positions, done int) {
	t.Helper()
	saved, err := cps.Load(t.Context(), key)
	require.NoError(t, err)
	for seg, cp := range saved {
		require.Equal(t, int32(8), seg.Total)
		if cp.Done {
			done++
		} else {
			require.NotEmpty(t, cp.LastEvaluatedKey)
			positions++
		}
	}
	return positions, done
}

// bfCountingScan counts the Scan requests of a backfill.
type bfCountingScan struct {
	c *dynamodb.Client
	n *atomic.Int64
}

func (s bfCountingScan) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.n.Add(1)
	return s.c.Scan(ctx, in, optFns...)
}

func (s bfCountingScan) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return s.c.DescribeTable(ctx, in, optFns...)
}

// bfPlainScan is a migrate.ScanAPI without DescribeTable.
type bfPlainScan struct{ c migrate.ScanAPI }

func (s bfPlainScan) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return s.c.Scan(ctx, in, optFns...)
}

// bfFailingScan is a migrate.ScanAPI whose every call fails.
type bfFailingScan struct{}

func (bfFailingScan) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, errors.New("bfFailingScan: no scans")
}

// byID indexes images by their "id".
func bfImagesByID(imgs []map[string]types.AttributeValue) map[string]map[string]types.AttributeValue {
	out := map[string]map[string]types.AttributeValue{}
	for _, img := range imgs {
		out[img["id"].(*types.AttributeValueMemberS).Value] = img
	}
	return out
}

// TestBackfillStatsCounts: every scanned item is counted once, in the
// right bucket, for each form; a second run finds nothing to do.
func TestBackfillStatsCounts(t *testing.T) {
	t.Parallel()
	items := bfItems(260)
	start, want := bfImages(t, items)

	t.Run("gsi", func(t *testing.T) {
		t.Parallel()
		tb, c, _ := bfSetup[bfTableKeepGSI](t, start)
		full := bfCounts(items)
		require.Positive(t, full.Written)
		require.Positive(t, full.Unchanged)
		require.Positive(t, full.Sparse)
		require.Positive(t, full.Tombstones)
		st, err := migrate.Backfill(t.Context(), tb, c, "by_status", func(o *migrate.BackfillOptions) { o.Workers, o.PageSize = 3, 16 })
		require.NoError(t, err)
		require.Equal(t, full, st)
		diff, examples := bfSame(bfImagesByID(want), bfByID(t, c, tb.TableName()))
		require.Zero(t, diff, "%v", examples)

		st, err = migrate.Backfill(t.Context(), tb, c, "by_status")
		require.NoError(t, err)
		sparse := 0
		for _, it := range items {
			if it.kind == bfSparse || it.kind == bfSparseOld {
				sparse++
			}
		}
		require.Equal(t, migrate.BackfillStats{Scanned: len(items), Unchanged: full.Written + full.Unchanged - (sparse - full.Sparse), Sparse: sparse, Tombstones: full.Tombstones}, st)
	})

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		tb, c, _ := bfSetup[bfGSIKeepTable](t, want)
		indexTable := bfIndexTable(t, tb, "by_status")
		var exp migrate.BackfillStats
		exp.Scanned = len(items)
		for i, it := range items {
			switch {
			case it.kind == bfDeleted:
				exp.Tombstones++
			case it.v.Status == nil:
				exp.Sparse++
			case i%5 == 0:
				e := bfEntryOf(t, tb, "by_status", bfGSIKeepTable(it.v), "1")
				_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(indexTable), Item: e})
				require.NoError(t, err)
				exp.Skipped++
			default:
				exp.Written++
			}
		}
		st, err := migrate.Backfill(t.Context(), tb, c, "by_status", func(o *migrate.BackfillOptions) { o.Workers = 2 })
		require.NoError(t, err)
		require.Equal(t, exp, st)
		require.Len(t, ddbtest.Scan(t, c, indexTable), exp.Written+exp.Skipped)

		st, err = migrate.Backfill(t.Context(), tb, c, "by_status")
		require.NoError(t, err)
		require.Equal(t, migrate.BackfillStats{Scanned: len(items), Skipped: exp.Written + exp.Skipped, Sparse: exp.Sparse, Tombstones: exp.Tombstones}, st)
	})

	t.Run("native gsi", func(t *testing.T) {
		t.Parallel()
		tb, c := bfNewTable[bfNative](t)
		var imgs []map[string]types.AttributeValue
		var exp migrate.BackfillStats
		for i := range 40 {
			team := fmt.Sprint("team-", i%3)
			v := bfNative{ID: fmt.Sprint("n", i), Team: &team, Created: int64(i)}
			if i%4 == 1 {
				v.Team = nil
			}
			img, err := tb.Marshal(v)
			require.NoError(t, err)
			switch {
			case i%7 == 2:
				img[bfDeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
				exp.Tombstones++
			case v.Team == nil:
				exp.Sparse++
			default:
				exp.Unchanged++
			}
			imgs = append(imgs, img)
		}
		exp.Scanned = len(imgs)
		bfBatchWrite(t, c, tb.TableName(), imgs)
		before := ddbtest.Scan(t, c, tb.TableName())
		st, err := migrate.Backfill(t.Context(), tb, c, "by_team")
		require.NoError(t, err)
		require.Equal(t, exp, st, "a GSI keyed by model attributes needs no writes")
		require.Equal(t, before, ddbtest.Scan(t, c, tb.TableName()))
	})

	t.Run("lsi", func(t *testing.T) {
		t.Parallel()
		tb, c := bfNewTable[bfLSI](t)
		var imgs []map[string]types.AttributeValue
		var exp migrate.BackfillStats
		var wantIDs []string
		for i := range 30 {
			st := bfStatuses[i%len(bfStatuses)]
			v := bfLSI{Team: "T", ID: fmt.Sprintf("l%02d", i), Status: &st, Created: int64(100 - i)}
			if i%6 == 5 {
				v.Status = nil
			}
			img, err := tb.Marshal(v)
			require.NoError(t, err)
			delete(img, "_sk") // written before the LSI was kept
			if v.Status == nil {
				exp.Sparse++
			} else {
				exp.Written++
				wantIDs = append(wantIDs, v.ID)
			}
			imgs = append(imgs, img)
		}
		exp.Scanned = len(imgs)
		bfBatchWrite(t, c, tb.TableName(), imgs)
		st, err := migrate.Backfill(t.Context(), tb, c, "by_status")
		require.NoError(t, err)
		require.Equal(t, exp, st)
		var got []string
		p, err := tb.Query("by_status", "T").Via(ddbindex.LSI).Limit(100).Page(t.Context())
		require.NoError(t, err)
		for _, v := range p.Items {
			got = append(got, v.ID)
		}
		slices.Sort(got)
		require.Equal(t, wantIDs, got, "the LSI holds every item in it")
	})
}

// bfHookScan runs hook once, after the first page it returns: a writer that
// changes items between the scan and the backfill's writes. The hook runs
// on a backfill worker's goroutine, so it reports its error in err, which
// the test reads once Backfill has returned (and its workers with it).
type bfHookScan struct {
	migrate.ScanAPI
	once sync.Once
	hook func() error
	err  error
}

func (h *bfHookScan) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := h.ScanAPI.Scan(ctx, in, optFns...)
	if err == nil {
		h.once.Do(func() { h.err = h.hook() })
	}
	return out, err
}

// TestBackfillConcurrentWriterWins: an item changed between the scan and
// the backfill's write keeps the writer's change (the write counts as
// Skipped); an item deleted meanwhile is not brought back.
func TestBackfillConcurrentWriterWins(t *testing.T) {
	t.Parallel()
	open := "open"
	shipped := "shipped"

	t.Run("gsi, no version", func(t *testing.T) {
		t.Parallel()
		items := []bfTable{
			{ID: "moved", Team: "A", Status: &open, Created: 1},
			{ID: "deleted", Team: "A", Status: &open, Created: 2},
			{ID: "soft-deleted", Team: "A", Status: &open, Created: 3},
			{ID: "retitled", Team: "A", Status: &open, Created: 4},
			{ID: "untouched", Team: "A", Status: &open, Created: 5},
		}
		step3, err := ddbindex.New[bfTable](nil)
		require.NoError(t, err)
		var start []map[string]types.AttributeValue
		for _, v := range items {
			img, err := step3.Marshal(v)
			require.NoError(t, err)
			start = append(start, img)
		}
		tb, c, cps := bfSetup[bfTableKeepGSI](t, start)
		writer, err := ddbindex.New[bfTable](c, bfNames(cps))
		require.NoError(t, err)
		ctx := t.Context()
		scan := &bfHookScan{ScanAPI: c, hook: func() error {
			moved := items[0]
			moved.Status = &shipped
			if _, err := writer.Put(ctx, moved); err != nil {
				return err
			}
			if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tb.TableName()), Key: map[string]types.AttributeValue{"id": bfAvS("deleted")}}); err != nil {
				return err
			}
			if err := writer.Delete(ctx, items[2]); err != nil {
				return err
			}
			retitled := items[3]
			retitled.Title = "new title"
			_, err := writer.Put(ctx, retitled)
			return err
		}}
		st, err := migrate.Backfill(ctx, tb, scan, "by_status")
		require.NoError(t, err)
		require.NoError(t, scan.err, "the concurrent writer")
		require.Equal(t, migrate.BackfillStats{Scanned: 5, Skipped: 3, Written: 2}, st)

		got := bfByID(t, c, tb.TableName())
		require.NotContains(t, got, "deleted", "a deleted item is not brought back")
		for _, id := range []string{"moved", "soft-deleted"} {
			require.NotContains(t, got[id], "_sk", "%s: the writer's item, without the backfill's attributes", id)
		}
		require.Equal(t, "shipped", got["moved"]["status"].(*types.AttributeValueMemberS).Value)
		require.Equal(t, true, got["soft-deleted"][bfDeletedAttr].(*types.AttributeValueMemberBOOL).Value)
		// A change to an attribute the key is not derived from does not
		// stop the backfill, and the backfill does not undo it.
		retitled := bfTableKeepGSI(items[3])
		retitled.Title = "new title"
		wantImg, err := tb.Marshal(retitled)
		require.NoError(t, err)
		require.True(t, bfSameItem(wantImg, got["retitled"]), bfItemString(got["retitled"]))
		wantImg, err = tb.Marshal(bfTableKeepGSI(items[4]))
		require.NoError(t, err)
		require.True(t, bfSameItem(wantImg, got["untouched"]))
	})

	t.Run("gsi, version", func(t *testing.T) {
		t.Parallel()
		step3, err := ddbindex.New[bfVerTable](nil)
		require.NoError(t, err)
		var start []map[string]types.AttributeValue
		for _, id := range []string{"retitled", "untouched"} {
			img, err := step3.Marshal(bfVerTable{ID: id, Team: "A", Status: &open, Created: 1, Ver: 1})
			require.NoError(t, err)
			start = append(start, img)
		}
		tb, c, cps := bfSetup[bfVerKeepGSI](t, start)
		writer, err := ddbindex.New[bfVerTable](c, bfNames(cps))
		require.NoError(t, err)
		scan := &bfHookScan{ScanAPI: c, hook: func() error {
			_, err := writer.Put(t.Context(), bfVerTable{ID: "retitled", Team: "A", Status: &open, Created: 1, Title: "new", Ver: 1})
			return err
		}}
		st, err := migrate.Backfill(t.Context(), tb, scan, "by_status")
		require.NoError(t, err)
		require.NoError(t, scan.err, "the concurrent writer")
		require.Equal(t, migrate.BackfillStats{Scanned: 2, Skipped: 1, Written: 1}, st, "a new version wins, whatever it changed")
		got := bfByID(t, c, tb.TableName())
		require.NotContains(t, got["retitled"], "_sk")
		require.Equal(t, "2", got["retitled"]["ver"].(*types.AttributeValueMemberN).Value)
		require.Contains(t, got["untouched"], "_sk")
		require.Equal(t, "1", got["untouched"]["ver"].(*types.AttributeValueMemberN).Value, "the backfill does not change the version")
	})

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		step0, err := ddbindex.New[bfGSI](nil)
		require.NoError(t, err)
		var start []map[string]types.AttributeValue
		for _, id := range []string{"changed", "untouched"} {
			img, err := step0.Marshal(bfGSI{ID: id, Team: "A", Status: &open, Created: 1})
			require.NoError(t, err)
			start = append(start, img)
		}
		tb, c, _ := bfSetup[bfGSIKeepTable](t, start)
		changed := bfGSIKeepTable{ID: "changed", Team: "A", Status: &open, Created: 1, Title: "the stream's"}
		newImg, err := tb.Marshal(changed)
		require.NoError(t, err)
		scan := &bfHookScan{ScanAPI: c, hook: func() error {
			_, err := tb.Apply(t.Context(), []ddbindex.Change{{Old: start[0], New: newImg, Version: "5"}})
			return err
		}}
		st, err := migrate.Backfill(t.Context(), tb, scan, "by_status")
		require.NoError(t, err)
		require.NoError(t, scan.err, "the stream's write")
		require.Equal(t, migrate.BackfillStats{Scanned: 2, Skipped: 1, Written: 1}, st)
		got := bfByID(t, c, bfIndexTable(t, tb, "by_status"))
		require.Equal(t, "the stream's", got["changed"]["title"].(*types.AttributeValueMemberS).Value)
		require.Equal(t, "5", got["changed"][bfVersionAttr].(*types.AttributeValueMemberN).Value)
		require.Equal(t, "0", got["untouched"][bfVersionAttr].(*types.AttributeValueMemberN).Value)
	})
}

// bfClock is a fake clock: Sleep moves it on at once.
type bfClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
	waits int
}

func (c *bfClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *bfClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
		c.slept += d
		c.waits++
	}
	return ctx.Err()
}

// bfDescribedScan is a migrate.ScanAPI with a DescribeTable that reports count
// items.
type bfDescribedScan struct {
	migrate.ScanAPI
	count int64
}

func (s bfDescribedScan) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableName: in.TableName, ItemCount: aws.Int64(s.count)}}, nil
}

// TestBackfillRateLimit: the writes wait, on a fake clock, exactly as long
// as a token bucket of WriteUnitsPerSecond (burst: one second's units)
// needs for the units DynamoDB charges them; progress reports the rate and
// the ETA by that clock.
func TestBackfillRateLimit(t *testing.T) {
	t.Parallel()
	items := bfItems(40)
	for i := range items {
		items[i].kind = bfBare
		if items[i].v.Status == nil {
			st := "new"
			items[i].v.Status = &st
		}
	}
	items[3].v.Title = strings.Repeat("x", 2500)  // 3 units
	items[17].v.Title = strings.Repeat("y", 5000) // 5 units: more than the burst
	start, want := bfImages(t, items)
	tb, c, _ := bfSetup[bfTableKeepGSI](t, start)
	units := 0
	for _, w := range want {
		units += (bfItemSize(w) + 1023) / 1024
	}
	require.Equal(t, 38+3+5, units)

	const perSecond = 4.0
	clk := &bfClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var progress []migrate.BackfillProgress
	st, err := migrate.Backfill(t.Context(), tb, bfDescribedScan{c, int64(len(items))}, "by_status", func(o *migrate.BackfillOptions) {
		o.WriteUnitsPerSecond = perSecond
		o.PageSize = 10
		migrate.SetBackfillClock(o, clk.Now, clk.Sleep)
		o.Progress = func(p migrate.BackfillProgress) { progress = append(progress, p) }
	})
	require.NoError(t, err)
	require.Equal(t, len(items), st.Written)
	want2 := time.Duration(float64(units-4) / perSecond * float64(time.Second))
	require.InDelta(t, want2, clk.slept, float64(clk.waits)*float64(time.Microsecond), "waited %v in %d waits; want %v", clk.slept, clk.waits, want2)
	t.Logf("%d units at %g/s: waited %v (fake clock) in %d waits", units, perSecond, clk.slept, clk.waits)

	require.GreaterOrEqual(t, len(progress), 4, "a report per page (the last may be empty)")
	for i, p := range progress {
		require.Equal(t, min((i+1)*10, len(items)), p.Scanned)
		require.Equal(t, int64(len(items)), p.Estimate)
		require.Positive(t, p.Elapsed)
		require.InDelta(t, float64(p.Scanned)/p.Elapsed.Seconds(), p.ItemsPerSecond, 1e-9)
		left := float64(len(items)-p.Scanned) / p.ItemsPerSecond
		require.InDelta(t, left, p.ETA.Seconds(), 1e-6, "page %d", i)
	}
	end := progress[len(progress)-1]
	require.Equal(t, clk.slept, end.Elapsed, "the clock moved by the waits alone")
	require.Zero(t, end.ETA)

	// Without a DescribeTable, no estimate; without a limit, no wait.
	clk2 := &bfClock{now: clk.now}
	var last migrate.BackfillProgress
	_, err = migrate.Backfill(t.Context(), tb, bfPlainScan{c}, "by_status", func(o *migrate.BackfillOptions) {
		migrate.SetBackfillClock(o, clk2.Now, clk2.Sleep)
		o.Progress = func(p migrate.BackfillProgress) { last = p }
	})
	require.NoError(t, err)
	require.Zero(t, clk2.waits)
	require.Equal(t, int64(-1), last.Estimate)
	require.Equal(t, time.Duration(-1), last.ETA)
}

// TestBackfillResumesFromCheckpoint: a backfill canceled after its first
// page resumes after it; a finished one is not scanned again; a different
// split starts over; a checkpoint store that fails stops the backfill.
func TestBackfillResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	items := bfItems(50)
	start, want := bfImages(t, items)
	tb, c, _ := bfSetup[bfTableKeepGSI](t, start)
	cps := &migrate.MemoryCheckpoints{}
	key := tb.TableName() + "#by_status#gsi"
	opts := func(o *migrate.BackfillOptions) { o.PageSize, o.Checkpoint = 10, cps }

	st, err := bfKill(t, tb, c, "by_status", 1, opts)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 10, st.Scanned)
	saved, err := cps.Load(t.Context(), key)
	require.NoError(t, err)
	require.Len(t, saved, 1)
	require.False(t, saved[migrate.Segment{0, 1}].Done)

	st, err = migrate.Backfill(t.Context(), tb, c, "by_status", opts)
	require.NoError(t, err)
	require.Equal(t, 1, st.Resumed)
	require.Equal(t, 40, st.Scanned)
	diff, examples := bfSame(bfImagesByID(want), bfByID(t, c, tb.TableName()))
	require.Zero(t, diff, "%v", examples)

	st, err = migrate.Backfill(t.Context(), tb, c, "by_status", opts)
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{AlreadyDone: 1}, st)

	st, err = migrate.Backfill(t.Context(), tb, c, "by_status", opts, func(o *migrate.BackfillOptions) { o.Workers = 2 })
	require.NoError(t, err)
	require.Equal(t, 50, st.Scanned, "another split starts over")
	require.Zero(t, st.Written)
	require.Equal(t, []int32{1}, st.OtherTotals, "and says which split saved the positions it did not use")
	st, err = migrate.Backfill(t.Context(), tb, c, "by_status", opts, func(o *migrate.BackfillOptions) { o.Workers = 3 })
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2}, st.OtherTotals)

	require.NoError(t, cps.Clear(t.Context(), key))
	broken := bfFailingCheckpoints{cps}
	st, err = migrate.Backfill(t.Context(), tb, c, "by_status", func(o *migrate.BackfillOptions) { o.PageSize, o.Checkpoint = 10, broken })
	var ce *ddbindex.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "SaveBackfillCheckpoint", ce.Op)
	require.Equal(t, 10, st.Scanned, "stopped after the page it could not checkpoint")
}

// bfFailingCheckpoints loads from its store and fails every save.
type bfFailingCheckpoints struct{ *migrate.MemoryCheckpoints }

func (bfFailingCheckpoints) Save(context.Context, string, migrate.Segment, map[string]types.AttributeValue) error {
	return errors.New("checkpoint store unavailable")
}

// TestBackfillCheckpointStores: both stores keep each segment's position
// per key and per total, and forget a key on Clear; the DynamoDB store
// refuses a malformed item.
func TestBackfillCheckpointStores(t *testing.T) {
	t.Parallel()
	control := ddbtest.Name(t, "control")
	c := ddbtest.Client(t)
	ddbtest.CreateTable(t, c, schema.ControlTableInput(control))
	ddb := &migrate.DynamoDBCheckpoints{Client: c, Table: control}
	ctx := t.Context()
	lek := map[string]types.AttributeValue{"id": bfAvS("t00042"), "n": bfAvN("7")}
	for name, s := range map[string]interface {
		migrate.Checkpoints
		Clear(context.Context, string) error
	}{"memory": &migrate.MemoryCheckpoints{}, "dynamodb": ddb} {
		got, err := s.Load(ctx, "k1")
		require.NoError(t, err, name)
		require.Empty(t, got, name)
		require.NoError(t, s.Save(ctx, "k1", migrate.Segment{0, 4}, lek))
		require.NoError(t, s.Save(ctx, "k1", migrate.Segment{1, 4}, nil))
		require.NoError(t, s.Save(ctx, "k1", migrate.Segment{0, 1}, lek))
		require.NoError(t, s.Save(ctx, "k2", migrate.Segment{0, 1}, nil))
		got, err = s.Load(ctx, "k1")
		require.NoError(t, err)
		require.Equal(t, map[migrate.Segment]migrate.Checkpoint{
			{0, 4}: {LastEvaluatedKey: lek}, {1, 4}: {Done: true}, {0, 1}: {LastEvaluatedKey: lek},
		}, got, name)
		require.NoError(t, s.Clear(ctx, "k1"))
		got, err = s.Load(ctx, "k1")
		require.NoError(t, err)
		require.Empty(t, got, name)
		got, err = s.Load(ctx, "k2")
		require.NoError(t, err)
		require.Equal(t, map[migrate.Segment]migrate.Checkpoint{{0, 1}: {Done: true}}, got, name)
	}
	for _, bad := range []map[string]types.AttributeValue{
		{"sk": bfAvS("1/0"), "done": &types.AttributeValueMemberBOOL{Value: true}},
		{"sk": bfAvS("3/2"), "done": &types.AttributeValueMemberBOOL{Value: true}},
		{"sk": bfAvS("0/2")},
		{"sk": bfAvS("0/2"), "done": &types.AttributeValueMemberBOOL{Value: false}},
		{"sk": bfAvS("0/2"), "done": &types.AttributeValueMemberBOOL{Value: false}, "lek": bfAvS("x")},
	} {
		bad["pk"] = bfAvS("backfill#bad") // the partition of the backfill key "bad"
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(ddb.Table), Item: bad})
		require.NoError(t, err)
		_, err = ddb.Load(ctx, "bad")
		require.ErrorIs(t, err, ddbindex.ErrMalformedItem, "%v", bfItemString(bad))
		_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(ddb.Table), Key: map[string]types.AttributeValue{"pk": bad["pk"], "sk": bad["sk"]}})
		require.NoError(t, err)
	}
}

// TestBackfillProcessesSplitSegments: two processes of three workers each
// (TotalSegments 6, Segment 0 and 3) scan every item once between them.
func TestBackfillProcessesSplitSegments(t *testing.T) {
	t.Parallel()
	items := bfItems(120)
	start, want := bfImages(t, items)
	tb, c, _ := bfSetup[bfTableKeepGSI](t, start)
	var total migrate.BackfillStats
	for _, first := range []int32{0, 3} {
		st, err := migrate.Backfill(t.Context(), tb, c, "by_status", func(o *migrate.BackfillOptions) {
			o.Segment, o.TotalSegments, o.Workers, o.PageSize = first, 6, 3, 7
		})
		require.NoError(t, err)
		bfAdd(&total, st)
	}
	require.Equal(t, bfCounts(items), total)
	diff, examples := bfSame(bfImagesByID(want), bfByID(t, c, tb.TableName()))
	require.Zero(t, diff, "%v", examples)
}

// TestBackfillGSIUnderFaults: a backfill of the GSI form with 3 workers and
// its checkpoints in DynamoDB, every request through injected faults
// (throttling, 5xx, resets, lost answers), ends exactly as a fault-free
// one, with the same counts.
func TestBackfillGSIUnderFaults(t *testing.T) {
	t.Parallel()
	items := bfItems(300)
	start, want := bfImages(t, items)
	for i, fc := range ddbtest.FaultCases {
		t.Run(fc.Name, func(t *testing.T) {
			t.Parallel()
			tb, c, cps0 := bfSetup[bfTableKeepGSI](t, start)
			db, _, ft := ddbtest.Faulty(t, faults.Random(fc.Rate, uint64(900+i), nil), fc.Retryer)
			ftb, err := ddbindex.New[bfTableKeepGSI](db, bfNames(cps0))
			require.NoError(t, err)
			cps := &migrate.DynamoDBCheckpoints{Client: db, Table: cps0.Table}
			var log ddbtest.RetryLog
			st, err := migrate.Backfill(t.Context(), ftb, db, "by_status", func(o *migrate.BackfillOptions) {
				o.Workers, o.PageSize, o.Checkpoint = 3, 20, cps
				o.Retry = ddbindex.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, OnRetry: log.OnRetry}
			})
			require.NoError(t, err)
			retries, quota := log.Counts()
			t.Logf("%s: %+v; injected %s; library retries %d (%d after the SDK's quota ran out)", fc.Name, st, ft.Summary(), retries, quota)
			require.Positive(t, ft.Injected())
			require.Equal(t, bfCounts(items), st, "an update whose answer was lost is written again on its retry, not skipped")
			diff, examples := bfSame(bfImagesByID(want), bfByID(t, c, tb.TableName()))
			require.Zero(t, diff, "%v", examples)
			// Read them back through a client without faults.
			saved, err := (&migrate.DynamoDBCheckpoints{Client: c, Table: cps.Table}).Load(t.Context(), tb.TableName()+"#by_status#gsi")
			require.NoError(t, err)
			require.Len(t, saved, 3)
			for seg, cp := range saved {
				require.True(t, cp.Done, "segment %v", seg)
			}
		})
	}
}

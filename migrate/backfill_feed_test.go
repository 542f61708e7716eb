package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// bfPostGSI and bfPostTable declare the same feed index, one token apart:
// the GSI a service reads today and the index table it migrates to.
type bfPostGSI struct {
	_    ddbindex.TableSpec `ddbindex:"bf-posts"`
	_    ddbindex.IndexSpec `ddbindex:"newest,type=gsi,pk=GPK,sk=GSK"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Feed *string            `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64              `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string             `dynamodbav:"text"`
}

type bfPostTable struct {
	_    ddbindex.TableSpec `ddbindex:"bf-posts"`
	_    ddbindex.IndexSpec `ddbindex:"newest,type=table,pk=GPK,sk=GSK"`
	ID   string             `dynamodbav:"id" ddbindex:"pk"`
	Feed *string            `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64              `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string             `dynamodbav:"text"`
}

// bfPosts creates the GSI model's tables and the index table the migration
// fills, and writes n posts (every seventh without a feed: not in the
// index). It returns the two models' Tables, the posts, the number of them
// not in the index, and the option that names the tables.
func bfPosts(t *testing.T, n int) (*ddbindex.Table[bfPostGSI], *ddbindex.Table[bfPostTable], []bfPostGSI, int, func(*ddbindex.Options)) {
	t.Helper()
	names := bfPrefixed(ddbtest.Name(t, ""))
	gsi, c := bfNewTable[bfPostGSI](t, names)
	table, err := ddbindex.New[bfPostTable](c, names)
	require.NoError(t, err)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(table, false)[1])
	feed := "global"
	var posts []bfPostGSI
	sparse := 0
	for i := range n {
		p := bfPostGSI{ID: fmt.Sprintf("p%03d", i), At: 1733000000000 + int64(i%10)*1000, Text: fmt.Sprint("post ", i)}
		if i%7 != 3 {
			p.Feed = &feed
		} else {
			sparse++
		}
		_, err := gsi.Put(t.Context(), p)
		require.NoError(t, err)
		posts = append(posts, p)
	}
	return gsi, table, posts, sparse, names
}

// TestBackfillIndexTableAgain: a backfill of an index table writes every
// entry, reporting progress per scan page, after which queries read the
// same pages from the index table as from the GSI; a second one leaves every
// entry as it is; one after a delete the stream applied does not bring the
// tombstoned entry back, and both forms agree that the post is gone.
func TestBackfillIndexTableAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	gsi, table, posts, sparse, _ := bfPosts(t, 60)
	c := ddbtest.Client(t)
	empty, err := table.Query("newest", "global").Page(ctx)
	require.NoError(t, err)
	require.Empty(t, empty.Items, "before the backfill the index table is empty")
	var progress []migrate.BackfillProgress
	st, err := migrate.Backfill(ctx, table, c, "newest", func(o *migrate.BackfillOptions) {
		o.PageSize = 16
		o.Progress = func(p migrate.BackfillProgress) { progress = append(progress, p) }
	})
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{Scanned: 60, Written: 60 - sparse, Sparse: sparse}, st)
	require.GreaterOrEqual(t, len(progress), 4, "a progress report per scan page")
	bfSamePages(t, gsi, table)

	st, err = migrate.Backfill(ctx, table, c, "newest")
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{Scanned: 60, Skipped: 60 - sparse, Sparse: sparse}, st)

	img, err := gsi.Marshal(posts[11])
	require.NoError(t, err)
	require.NoError(t, gsi.Delete(ctx, posts[11]))
	_, err = table.Apply(ctx, []ddbindex.Change{{Old: img, Version: "7"}})
	require.NoError(t, err)
	bfSamePages(t, gsi, table)
	st, err = migrate.Backfill(ctx, table, c, "newest")
	require.NoError(t, err)
	require.Equal(t, 59-sparse, st.Skipped)
	require.Zero(t, st.Written)
	bfSamePages(t, gsi, table)
	p, err := table.Query("newest", "global").Limit(100).IncludeDeleted().Page(ctx)
	require.NoError(t, err)
	require.Len(t, p.Items, 60-sparse, "the deleted post's entry is a tombstone still")
	live, err := table.Query("newest", "global").Limit(100).Page(ctx)
	require.NoError(t, err)
	require.Len(t, live.Items, 59-sparse)
}

// bfFeedQueries are the queries bfSamePages reads through either model.
func bfFeedQueries[T any](tb *ddbindex.Table[T]) []ddbindex.Query[T] {
	q := func() ddbindex.Query[T] { return tb.Query("newest", "global") }
	return []ddbindex.Query[T]{
		q().Limit(7),
		q().Desc().Limit(5),
		q().Desc().Limit(6),
		q().Where(ddbindex.Between(int64(1733000002000), int64(1733000006000))).Limit(4),
		q().Where(ddbindex.Ge(int64(1733000008000))).Desc().Limit(1),
	}
}

// bfSamePages requires that each of bfFeedQueries reads the same items, in
// the same pages, through the GSI model as through the index-table model,
// following cursors to the end.
func bfSamePages(t *testing.T, gsi *ddbindex.Table[bfPostGSI], table *ddbindex.Table[bfPostTable]) {
	t.Helper()
	qa, qb := bfFeedQueries(gsi), bfFeedQueries(table)
	for i := range qa {
		var a, b [][]bfPostGSI
		for cursor := ""; ; {
			p, err := qa[i].After(cursor).Page(t.Context())
			require.NoError(t, err)
			a = append(a, p.Items)
			if cursor = p.Cursor; cursor == "" {
				break
			}
		}
		for cursor := ""; ; {
			p, err := qb[i].After(cursor).Page(t.Context())
			require.NoError(t, err)
			conv := make([]bfPostGSI, len(p.Items))
			for j, it := range p.Items {
				conv[j] = bfPostGSI(it)
			}
			b = append(b, conv)
			if cursor = p.Cursor; cursor == "" {
				break
			}
		}
		require.NotEmpty(t, a[0], "query %d reads posts", i)
		require.Equal(t, a, b, "query %d: the GSI's pages, then the index table's", i)
	}
}

// TestBackfillSegments: three calls of one segment each of a scan in three
// scan every item once between them.
func TestBackfillSegments(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, table, posts, _, _ := bfPosts(t, 30)
	c := ddbtest.Client(t)
	total := migrate.BackfillStats{}
	for seg := int32(0); seg < 3; seg++ {
		st, err := migrate.Backfill(ctx, table, c, "newest", func(o *migrate.BackfillOptions) {
			o.Segment, o.TotalSegments = seg, 3
		})
		require.NoError(t, err)
		total.Scanned += st.Scanned
		total.Written += st.Written
		total.Sparse += st.Sparse
	}
	require.Equal(t, len(posts), total.Scanned)
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(bfIndexTable(t, table, "newest")), Select: "COUNT"})
	require.NoError(t, err)
	require.Equal(t, int32(total.Written), out.Count)
}

// TestBackfillUnderFaults: Backfill under 5% and 30% injected faults writes
// exactly what a fault-free Backfill writes. (It used to stop at the first
// failure the SDK gave up on.)
func TestBackfillUnderFaults(t *testing.T) {
	t.Parallel()
	const posts = 240
	gsi, _, _, sparse, _ := bfPosts(t, posts)
	c := ddbtest.Client(t)
	// fresh returns a Table of the same base table with a new, empty index
	// table, whose requests go through client.
	fresh := func(t *testing.T, client *dynamodb.Client, name string) (*ddbindex.Table[bfPostTable], string) {
		prefix := ddbtest.Name(t, name)
		tn := func(s string) string {
			if s == "bf-posts" {
				return gsi.TableName()
			}
			return prefix + "-" + s
		}
		out, err := ddbindex.New[bfPostTable](client, func(o *ddbindex.Options) { o.TableName = tn })
		require.NoError(t, err)
		ddbtest.CreateTable(t, c, schema.CreateTableInputs(out, false)[1])
		return out, bfIndexTable(t, out, "newest")
	}
	ref, refTable := fresh(t, c, "want")
	st, err := migrate.Backfill(t.Context(), ref, c, "newest", func(o *migrate.BackfillOptions) { o.PageSize = 25 })
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{Scanned: posts, Written: posts - sparse, Sparse: sparse}, st)
	want := bfScanAll(t, c, refTable)

	for i, fc := range ddbtest.FaultCases {
		t.Run(fc.Name, func(t *testing.T) {
			t.Parallel()
			db, _, ft := ddbtest.Faulty(t, faults.Random(fc.Rate, uint64(200+i), nil), fc.Retryer)
			tb, name := fresh(t, db, fmt.Sprint("case", i))
			var log ddbtest.RetryLog
			st, err := migrate.Backfill(t.Context(), tb, db, "newest", func(o *migrate.BackfillOptions) {
				o.PageSize = 25
				o.Retry = ddbindex.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, OnRetry: log.OnRetry}
			})
			require.NoError(t, err)
			retries, quota := log.Counts()
			t.Logf("%s: %+v; injected %s; library retries %d (%d after the SDK's quota ran out)", fc.Name, st, ft.Summary(), retries, quota)
			require.Positive(t, ft.Injected())
			require.Equal(t, posts, st.Scanned)
			require.Equal(t, sparse, st.Sparse)
			require.Equal(t, posts-sparse, st.Written+st.Skipped, "a write whose answer was lost is skipped on its retry")
			require.Equal(t, want, bfScanAll(t, c, name), "exactly the fault-free index table")
			// (A backfill this small makes too few requests to be sure to
			// use up the SDK's retry quota; the consumer's test is.)
		})
	}
}

// TestBackfillRefusals: what Backfill refuses before any request, each
// with its sentinel.
func TestBackfillRefusals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	gsi, err := ddbindex.New[bfPostGSI](nil)
	require.NoError(t, err)
	_, err = migrate.Backfill(ctx, gsi, nil, "", func(*migrate.BackfillOptions) {})
	require.ErrorIs(t, err, ddbindex.ErrUnsupported, "the base table is no index")
	_, err = migrate.Backfill(ctx, gsi, nil, "nope")
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery)
	_, err = migrate.Backfill(ctx, gsi, nil, "newest")
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, "no ScanAPI")
	_, err = migrate.Backfill(ctx, (*ddbindex.Table[bfPostGSI])(nil), bfFailingScan{}, "newest")
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite, "no Table")
	_, err = migrate.Backfill(ctx, gsi, bfFailingScan{}, "newest", func(*migrate.BackfillOptions) {}, nil)
	require.ErrorIs(t, err, ddbindex.ErrDeclaration, "a nil option function")
	require.Equal(t, "DDBX-100", ddbindex.Code(err))
	require.ErrorContains(t, err, "migrate.Backfill: option function 1 is nil")
	for name, fn := range map[string]func(*migrate.BackfillOptions){
		"negative Workers":             func(o *migrate.BackfillOptions) { o.Workers = -1 },
		"negative PageSize":            func(o *migrate.BackfillOptions) { o.PageSize = -5 },
		"negative TotalSegments":       func(o *migrate.BackfillOptions) { o.TotalSegments = -2 },
		"Segment without a total":      func(o *migrate.BackfillOptions) { o.Segment = 1 },
		"Segment past the total":       func(o *migrate.BackfillOptions) { o.Segment, o.TotalSegments = 4, 4 },
		"more workers than segments":   func(o *migrate.BackfillOptions) { o.Segment, o.TotalSegments, o.Workers = 2, 4, 3 },
		"negative Segment":             func(o *migrate.BackfillOptions) { o.Segment, o.TotalSegments = -1, 4 },
		"negative WriteUnitsPerSecond": func(o *migrate.BackfillOptions) { o.WriteUnitsPerSecond = -1 },
		"NaN WriteUnitsPerSecond":      func(o *migrate.BackfillOptions) { o.WriteUnitsPerSecond = math.NaN() },
		"negative Retry.MaxAttempts":   func(o *migrate.BackfillOptions) { o.Retry.MaxAttempts = -1 },
		"nil ClientOptions entry":      func(o *migrate.BackfillOptions) { o.ClientOptions = []func(*dynamodb.Options){nil} },
	} {
		_, err = migrate.Backfill(ctx, gsi, bfFailingScan{}, "newest", fn)
		require.True(t, errors.Is(err, ddbindex.ErrDeclaration), "%s: %v", name, err)
		require.Equal(t, "DDBX-100", ddbindex.Code(err), name)
		require.ErrorContains(t, err, "migrate.Backfill: BackfillOptions.", name)
	}

	// A read-only table's Backfill sends nothing.
	ro, err := ddbindex.NewReadOnly[bfPostGSI](nil)
	require.NoError(t, err)
	var scans bfScanCount
	_, err = migrate.Backfill(ctx, ro, &scans, "newest")
	require.ErrorIs(t, err, ddbindex.ErrUnsupported)
	require.Equal(t, "DDBX-604", ddbindex.Code(err))
	require.ErrorContains(t, err, "Backfill of migrate_test.bfPostGSI on a read-only table")
	require.Zero(t, scans.n, "no request")
}

// bfScanCount counts its Scans, and fails each.
type bfScanCount struct{ n int }

func (s *bfScanCount) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.n++
	return nil, errors.New("bfScanCount: no scans")
}

// TestBackfillOptionsValidate: Validate is the check Backfill makes, each
// rule stated with the option and its value.
func TestBackfillOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []migrate.BackfillOptions{{}, {Workers: 8}, {Segment: 4, TotalSegments: 8, Workers: 4}, {TotalSegments: 1000000},
		{Workers: 1000000}, {WriteUnitsPerSecond: 0.5}, {PageSize: 1}} {
		require.NoError(t, ok.Validate(), "%+v", ok)
	}
	for _, bad := range []struct {
		o    migrate.BackfillOptions
		want string
	}{
		{migrate.BackfillOptions{Workers: -1}, "Workers -1: want 1 to 1000000"},
		{migrate.BackfillOptions{Workers: 1000001}, "Workers 1000001: want 1 to 1000000"},
		{migrate.BackfillOptions{PageSize: -1}, "PageSize -1: want 1 or more"},
		{migrate.BackfillOptions{TotalSegments: -1}, "TotalSegments -1: want 0 to 1000000"},
		{migrate.BackfillOptions{TotalSegments: 1000001}, "TotalSegments 1000001: want 0 to 1000000"},
		{migrate.BackfillOptions{WriteUnitsPerSecond: math.NaN()}, "WriteUnitsPerSecond NaN: want a finite number"},
		{migrate.BackfillOptions{WriteUnitsPerSecond: math.Inf(1)}, "WriteUnitsPerSecond +Inf: want a finite number"},
		{migrate.BackfillOptions{WriteUnitsPerSecond: -5}, "WriteUnitsPerSecond -5: want a finite number, 0 (no cap) or more"},
		{migrate.BackfillOptions{Segment: 3}, "Segment 3 without TotalSegments"},
		{migrate.BackfillOptions{Segment: 5, TotalSegments: 2}, "Segment 5 with Workers 1 scans segments 5 to 5, not all within TotalSegments 2"},
		{migrate.BackfillOptions{Segment: -1, TotalSegments: 4}, "Segment -1 with Workers 1"},
		{migrate.BackfillOptions{Retry: ddbindex.RetryOptions{BaseDelay: -time.Second}}, "Retry.BaseDelay -1s: it cannot be negative"},
		{migrate.BackfillOptions{Retry: ddbindex.RetryOptions{MaxDelay: -1}}, "Retry.MaxDelay -1ns: it cannot be negative"},
		{migrate.BackfillOptions{ClientOptions: []func(*dynamodb.Options){func(*dynamodb.Options) {}, nil}}, "ClientOptions[1] is nil"},
	} {
		err := bad.o.Validate()
		require.ErrorIs(t, err, ddbindex.ErrDeclaration, "%+v", bad.o)
		require.Equal(t, "DDBX-100", ddbindex.Code(err))
		require.ErrorContains(t, err, bad.want)
		require.ErrorContains(t, err, "Backfill: ", "the operator command words the rule after it")
	}
}

// bfSentinels are the sentinels a Backfill error may match.
var bfSentinels = map[string]error{
	"ErrInvalidQuery": ddbindex.ErrInvalidQuery, "ErrInvalidWrite": ddbindex.ErrInvalidWrite,
	"ErrUnsupported": ddbindex.ErrUnsupported, "ErrMalformedItem": ddbindex.ErrMalformedItem,
	"ErrDynamoDB": ddbindex.ErrDynamoDB, "ErrConflict": ddbindex.ErrConflict,
	"ErrDeclaration": ddbindex.ErrDeclaration, "ErrSchemaMismatch": ddbindex.ErrSchemaMismatch,
	"ErrInvalidKey": ddbindex.ErrInvalidKey, "ErrStreamRecord": ddbindex.ErrStreamRecord,
}

// TestBackfillErrorsMatchOneSentinel: each kind of failure of Backfill and
// its checkpoint stores matches one sentinel alone, with its code in the
// message, and errors.As finds the error's type where it has one.
func TestBackfillErrorsMatchOneSentinel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		as         any
		call       func(t *testing.T) error
	}{
		{"Backfill options out of range", "ErrDeclaration", nil, func(t *testing.T) error {
			tb, err := ddbindex.New[bfPostTable](nil)
			require.NoError(t, err)
			_, err = migrate.Backfill(t.Context(), tb, bfFailingScan{}, "newest", func(o *migrate.BackfillOptions) { o.Workers, o.TotalSegments = 4, 2 })
			return err
		}},
		{"a DynamoDB checkpoint store without its parts", "ErrInvalidWrite", nil, func(t *testing.T) error {
			_, err := (&migrate.DynamoDBCheckpoints{}).Load(t.Context(), "k")
			return err
		}},
		{"a malformed backfill checkpoint", "ErrMalformedItem", nil, func(t *testing.T) error {
			control := ddbtest.Name(t, "control")
			tb, c := bfNewTable[bfPostTable](t)
			ddbtest.CreateTable(t, c, schema.ControlTableInput(control))
			_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(control), Item: map[string]types.AttributeValue{
				"pk": bfAvS("backfill#" + tb.TableName() + "#newest#table"), "sk": bfAvS("0/1"), "done": bfAvS("yes"),
			}})
			require.NoError(t, err)
			_, err = migrate.Backfill(t.Context(), tb, c, "newest", func(o *migrate.BackfillOptions) {
				o.Checkpoint = &migrate.DynamoDBCheckpoints{Client: c, Table: control}
			})
			return err
		}},
		{"a backfill checkpoint store that fails", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, c := bfNewTable[bfPostTable](t)
			_, err := migrate.Backfill(t.Context(), tb, c, "newest", func(o *migrate.BackfillOptions) {
				o.Checkpoint = bfFailingCheckpoints{&migrate.MemoryCheckpoints{}}
			})
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "SaveBackfillCheckpoint", ce.Op)
			return err
		}},
		{"a DynamoDB checkpoint store whose table is missing", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			missing := ddbtest.Name(t, "missing")
			_, err := (&migrate.DynamoDBCheckpoints{Client: ddbtest.Client(t), Table: missing}).Load(t.Context(), "k")
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "Query", Table: missing, Err: ce.Err}, *ce)
			return err
		}},
		{"a Scan that fails", "ErrDynamoDB", new(*ddbindex.Error), func(t *testing.T) error {
			tb, err := ddbindex.New[bfPostTable](nil)
			require.NoError(t, err)
			_, err = migrate.Backfill(t.Context(), tb, bfFailingScan{}, "newest", func(o *migrate.BackfillOptions) {
				o.Retry.MaxAttempts = 1
			})
			var ce *ddbindex.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: "Scan", Table: tb.TableName(), Err: ce.Err}, *ce)
			return err
		}},
		{"a base item whose keys do not decode", "ErrMalformedItem", nil, func(t *testing.T) error {
			tb, err := ddbindex.New[bfPostTable](nil)
			require.NoError(t, err)
			bad := map[string]types.AttributeValue{"id": bfAvS("p1"), "feed": bfAvS("global"), "at": bfAvS("not a number")}
			_, err = migrate.Backfill(t.Context(), tb, bfItemsScan{bad}, "newest")
			return err
		}},
		{"Backfill of the base table", "ErrUnsupported", nil, func(t *testing.T) error {
			tb, err := ddbindex.New[bfPostTable](nil)
			require.NoError(t, err)
			_, err = migrate.Backfill(t.Context(), tb, nil, "")
			return err
		}},
		{"Backfill of an index that is not declared", "ErrInvalidQuery", nil, func(t *testing.T) error {
			tb, err := ddbindex.New[bfPostTable](nil)
			require.NoError(t, err)
			_, err = migrate.Backfill(t.Context(), tb, nil, "nope")
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.call(t)
			require.Error(t, err)
			var matched []string
			for name, s := range bfSentinels {
				if errors.Is(err, s) {
					matched = append(matched, name)
				}
			}
			slices.Sort(matched)
			require.Equal(t, []string{c.want}, matched, "%v", err)
			code := ddbindex.Code(bfSentinels[c.want])
			require.Equal(t, code, ddbindex.Code(err), "%v", err)
			require.Contains(t, err.Error(), "["+code+"]", "the message shows the code")
			if c.as != nil {
				require.ErrorAs(t, err, c.as)
			}
		})
	}
}

// bfItemsScan is a ScanAPI that answers with its items, in one page.
type bfItemsScan []map[string]types.AttributeValue

func (s bfItemsScan) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{Items: s, Count: int32(len(s))}, nil
}

// TestBackfillClientOptions: Backfill applies ClientOptions to every
// request it sends (Scan, DescribeTable, and the writes, PutItem for an
// index table, UpdateItem for a GSI): a client counts every operation it
// sends (all), the options count the operations they reach (mine), and the
// two agree. The checkpoint store's requests are its own.
func TestBackfillClientOptions(t *testing.T) {
	t.Parallel()
	items := bfItems(30)
	start, _ := bfImages(t, items)
	for _, form := range []string{"table", "gsi"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			all, mine := &ddbtest.OpCounter{ID: "bfAll"}, &ddbtest.OpCounter{ID: "bfMine"}
			var names func(*ddbindex.Options)
			var plain *dynamodb.Client
			var backfill func(client *dynamodb.Client, fn func(*migrate.BackfillOptions)) error
			if form == "table" {
				_, c, cps := bfSetup[bfGSIKeepTable](t, start)
				names, plain = bfNames(cps), c
				backfill = func(client *dynamodb.Client, fn func(*migrate.BackfillOptions)) error {
					tb, err := ddbindex.New[bfGSIKeepTable](client, names)
					require.NoError(t, err)
					_, err = migrate.Backfill(t.Context(), tb, client, "by_status", fn)
					return err
				}
			} else {
				_, c, cps := bfSetup[bfTableKeepGSI](t, start)
				names, plain = bfNames(cps), c
				backfill = func(client *dynamodb.Client, fn func(*migrate.BackfillOptions)) error {
					tb, err := ddbindex.New[bfTableKeepGSI](client, names)
					require.NoError(t, err)
					_, err = migrate.Backfill(t.Context(), tb, client, "by_status", fn)
					return err
				}
			}
			client := dynamodb.New(plain.Options(), all.Option)
			cps := &migrate.MemoryCheckpoints{}
			require.NoError(t, backfill(client, func(o *migrate.BackfillOptions) {
				o.PageSize, o.Checkpoint = 10, cps
				o.ClientOptions = append(o.ClientOptions, mine.Option)
				o.Progress = func(migrate.BackfillProgress) {}
			}))
			sent, reached := all.Take(), mine.Take()
			require.Equal(t, sent, reached, "every request Backfill sent had the per-call options")
			write := map[string]string{"table": "PutItem", "gsi": "UpdateItem"}[form]
			for _, op := range []string{"Scan", "DescribeTable", write} {
				require.Positive(t, reached[op], "Backfill sends %s", op)
			}
		})
	}
}

// TestBackfillRollbackToGSI is ExampleBackfill run: a rollback from an
// index table to a GSI backfills the GSI's derived attributes onto the
// orders written before, with two workers, a rate cap and checkpoints; the
// GSI then lists every order, and a second call finds both segments done.
func TestBackfillRollbackToGSI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	orders, client := bfNewTable[BackfillOrder](t)
	before, err := ddbindex.New[BackfillOrderBefore](client, bfPrefixed(strings.TrimSuffix(orders.TableName(), "-example-orders")))
	require.NoError(t, err)
	for i, state := range []string{"shipped", "open", "paid", "open", "shipped"} {
		_, err := before.Put(ctx, BackfillOrderBefore{ID: fmt.Sprint("o-", i), Customer: "c-1", State: state})
		require.NoError(t, err)
	}

	checkpoints := &migrate.MemoryCheckpoints{}
	st, err := migrate.Backfill(ctx, orders, client, "by_state", func(o *migrate.BackfillOptions) {
		o.Workers = 2
		o.WriteUnitsPerSecond = 100
		o.Checkpoint = checkpoints
	})
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{Scanned: 5, Written: 5}, st)

	var got []string
	for o, err := range orders.Query("by_state", "c-1").Via(ddbindex.GSI).All(ctx) {
		require.NoError(t, err)
		got = append(got, o.State+" "+o.ID)
	}
	require.Equal(t, []string{"open o-1", "open o-3", "paid o-2", "shipped o-0", "shipped o-4"}, got)

	st, err = migrate.Backfill(ctx, orders, client, "by_state", func(o *migrate.BackfillOptions) {
		o.Workers = 2
		o.Checkpoint = checkpoints
	})
	require.NoError(t, err)
	require.Equal(t, migrate.BackfillStats{AlreadyDone: 2}, st, "called again with the same checkpoints, it finds both segments done")
}

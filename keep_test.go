package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// The steps of a GSI -> index table migration, one declaration each, on the
// same physical tables: the GSI alone; the GSI serving and the table kept;
// the table serving and the GSI kept; the table alone.
type kpStep0 struct {
	_       TableSpec `ddbindex:"kp-tickets"`
	_       IndexSpec `ddbindex:"by_status,type=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Team    string    `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep1 struct {
	_       TableSpec `ddbindex:"kp-tickets"`
	_       IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Team    string    `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep2 struct {
	_       TableSpec `ddbindex:"kp-tickets"`
	_       IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Team    string    `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep3 struct {
	_       TableSpec `ddbindex:"kp-tickets"`
	_       IndexSpec `ddbindex:"by_status,type=table"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Team    string    `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

func TestKeepDeclaration(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[kpStep1]())
	require.NoError(t, err)
	d := s.byName["by_status"]
	require.Equal(t, GSI, d.kind, "the declared type serves")
	require.Len(t, d.decl.forms, 2)
	kept := d.decl.forms[1]
	assert.Equal(t, IndexTable, kept.kind)
	assert.Equal(t, "kp-tickets-by_status", kept.table)
	assert.Contains(t, s.indexes, kept, "a kept form is written like a declared one")
	// The forms share the derived attribute names: a cursor and a type=
	// switch carry over.
	assert.Equal(t, d.sk.attr, kept.sk.attr)
	assert.Equal(t, d.slots, kept.slots)

	s2, err := schemaFor(reflect.TypeFor[kpStep2]())
	require.NoError(t, err)
	d2 := s2.byName["by_status"]
	assert.Equal(t, ixLayoutText(kept), ixLayoutText(d2), "step 1's kept table is step 2's declared table")
	assert.Equal(t, ixLayoutText(d), ixLayoutText(d2.decl.forms[1]), "step 1's GSI is step 2's kept GSI")

	type named struct {
		_  TableSpec `ddbindex:"kp-named"`
		_  IndexSpec `ddbindex:"feed,type=gsi,name=GSI1,keep=table,table=feed-v2"`
		ID string    `dynamodbav:"id" ddbindex:"pk;feed.sk"`
		F  string    `dynamodbav:"f" ddbindex:"feed.pk"`
	}
	s3, err := schemaFor(reflect.TypeFor[named]())
	require.NoError(t, err)
	f := s3.byName["feed"]
	assert.Equal(t, "GSI1", f.index)
	assert.Equal(t, "feed-v2", f.decl.forms[1].table)

	bad := map[string]any{
		"keep=table on a table": struct {
			_  TableSpec `ddbindex:"kp-bad"`
			_  IndexSpec `ddbindex:"x,type=table,keep=table"`
			ID string    `dynamodbav:"id" ddbindex:"pk;x.sk"`
			F  string    `dynamodbav:"f" ddbindex:"x.pk"`
		}{},
		"keep=view": struct {
			_  TableSpec `ddbindex:"kp-bad"`
			_  IndexSpec `ddbindex:"x,type=gsi,keep=view"`
			ID string    `dynamodbav:"id" ddbindex:"pk;x.sk"`
			F  string    `dynamodbav:"f" ddbindex:"x.pk"`
		}{},
		"a name for a form not kept": struct {
			_  TableSpec `ddbindex:"kp-bad"`
			_  IndexSpec `ddbindex:"x,type=gsi,table=x-table"`
			ID string    `dynamodbav:"id" ddbindex:"pk;x.sk"`
			F  string    `dynamodbav:"f" ddbindex:"x.pk"`
		}{},
		"name= and gsi= disagree": struct {
			_  TableSpec `ddbindex:"kp-bad"`
			_  IndexSpec `ddbindex:"x,type=gsi,name=A1,gsi=B1"`
			ID string    `dynamodbav:"id" ddbindex:"pk;x.sk"`
			F  string    `dynamodbav:"f" ddbindex:"x.pk"`
		}{},
		"a kept LSI with its own partition": struct {
			_  TableSpec `ddbindex:"kp-bad"`
			_  IndexSpec `ddbindex:"x,type=table,keep=lsi"`
			ID string    `dynamodbav:"id" ddbindex:"pk;x.sk"`
			F  string    `dynamodbav:"f" ddbindex:"x.pk"`
		}{},
	}
	for name, m := range bad {
		_, err := schemaFor(reflect.TypeOf(m))
		require.ErrorIs(t, err, ErrDeclaration, name)
		t.Logf("%s: %v", name, err)
	}
}

// kpFleet opens the model of each step on one set of physical tables (the
// base table with its GSI, the index table), all created.
type kpFleet struct {
	s0 *Table[kpStep0]
	s1 *Table[kpStep1]
	s2 *Table[kpStep2]
	s3 *Table[kpStep3]
	c  *dynamodb.Client
}

func newKPFleet(t *testing.T, optFns ...func(*Options)) kpFleet {
	t.Helper()
	s1, c := newTestTable[kpStep1](t, optFns...)
	fns := append([]func(*Options){func(o *Options) { o.TableName = s1.opts.TableName }}, optFns...)
	var f kpFleet
	f.s1, f.c = s1, c
	var err error
	f.s0, err = New[kpStep0](c, fns...)
	require.NoError(t, err)
	f.s2, err = New[kpStep2](c, fns...)
	require.NoError(t, err)
	f.s3, err = New[kpStep3](c, fns...)
	require.NoError(t, err)
	return f
}

// kpRead reads the whole by_status partition of team through the given form.
func kpRead[T any](t *testing.T, tb *Table[T], team string, form Kind) []T {
	t.Helper()
	var out []T
	for it, err := range tb.Query("by_status", team).Via(form).All(context.Background()) {
		require.NoError(t, err)
		out = append(out, it)
	}
	return out
}

func kpIDs[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// Every write of a model that keeps both forms keeps both: the GSI's derived
// attributes on the base item, and the index table (here written through).
// The plain flip, a model that no longer keeps the GSI, leaves the GSI
// behind (package schema's Check refuses it: TestCheckKeptForms in
// schema/keep_test.go).
func TestKeepWritesBothForms(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Transactions) // write-through keeps the index table
	ctx := context.Background()
	f := newKPFleet(t, func(o *Options) { o.WriteThrough = true })

	var want []string
	for i := range 12 {
		status := []string{"open", "closed", "pending"}[i%3]
		it := kpStep1{ID: fmt.Sprintf("t%02d", i), Team: "T1", Status: status, Created: int64(100 - i)}
		_, err := f.s1.Put(ctx, it)
		require.NoError(t, err)
	}
	// Step 2 instances write too: a status change and a delete.
	moved := kpStep2{ID: "t00", Team: "T1", Status: "closed", Created: 100}
	_, err := f.s2.Put(ctx, moved)
	require.NoError(t, err)
	require.NoError(t, f.s2.Delete(ctx, kpStep2{ID: "t01", Team: "T1", Status: "closed", Created: 99}))

	// Ground truth, in index order (status, then created).
	truth := []kpStep1{}
	for i := range 12 {
		status := []string{"open", "closed", "pending"}[i%3]
		if i == 0 {
			status = "closed"
		}
		if i == 1 {
			continue
		}
		truth = append(truth, kpStep1{ID: fmt.Sprintf("t%02d", i), Team: "T1", Status: status, Created: int64(100 - i)})
	}
	slices.SortFunc(truth, func(a, b kpStep1) int {
		if a.Status != b.Status {
			return strings.Compare(a.Status, b.Status)
		}
		return int(a.Created - b.Created)
	})
	want = kpIDs(truth, func(x kpStep1) string { return x.ID })
	id1 := func(x kpStep1) string { return x.ID }
	id2 := func(x kpStep2) string { return x.ID }
	for _, form := range []Kind{GSI, IndexTable} {
		assert.Equal(t, want, kpIDs(kpRead(t, f.s1, "T1", form), id1), "step 1 reading the %s", form)
		assert.Equal(t, want, kpIDs(kpRead(t, f.s2, "T1", form), id2), "step 2 reading the %s", form)
	}
	// Without Via, each step reads its declared type.
	e1, err := f.s1.Query("by_status", "T1").Explain()
	require.NoError(t, err)
	assert.Equal(t, GSI, e1.Request.Kind)
	assert.Equal(t, IndexTable, e1.Alternate.Kind, "the alternate is the kept form")
	e2, err := f.s2.Query("by_status", "T1").Explain()
	require.NoError(t, err)
	assert.Equal(t, IndexTable, e2.Request.Kind)

	_, err = f.s3.Query("by_status", "T1").Via(GSI).Page(ctx)
	require.ErrorIs(t, err, ErrInvalidQuery, "step 3 does not keep the GSI: Via(GSI) is refused")

	// The plain flip: step 3 writes no GSI attributes, so a reader of the GSI
	// (an instance still at step 0, 1 or 2) misses the item.
	_, err = f.s3.Put(ctx, kpStep3{ID: "t50", Team: "T1", Status: "open", Created: 1})
	require.NoError(t, err)
	gsiIDs := kpIDs(kpRead(t, f.s1, "T1", GSI), id1)
	tableIDs := kpIDs(kpRead(t, f.s1, "T1", IndexTable), id1)
	assert.NotContains(t, gsiIDs, "t50", "the flip loses the item for GSI readers")
	assert.Contains(t, tableIDs, "t50")
}

// The routing rules, in order: Via, RouteFunc, the control table, the
// static routes, the declared type; a route to a form not kept is ignored.
func TestRouting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	control := ddbtest.Name(t, "control")
	f := newKPFleet(t, func(o *Options) { o.ControlTable = control })
	ddbtest.DeleteOnCleanup(t, f.c, control)
	ddbtest.CreateTable(t, f.c, controlInput(f.s1))

	formOfQuery := func(q Query[kpStep1]) Kind {
		t.Helper()
		e, err := q.Explain()
		require.NoError(t, err)
		return e.Request.Kind
	}
	s1 := f.s1
	assert.Equal(t, GSI, formOfQuery(s1.Query("by_status", "acme")), "no route: the declared type")
	assert.Equal(t, IndexTable, formOfQuery(s1.Query("by_status", "acme").Via(IndexTable)))

	// Static routes: one tenant first.
	static, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = s1.opts.TableName
		o.Routes = map[string]Route{"by_status": {To: IndexTable, Partitions: []string{"acme"}}}
	})
	require.NoError(t, err)
	q := func(tb *Table[kpStep1], team string) Kind { return formOfQuery(tb.Query("by_status", team)) }
	assert.Equal(t, IndexTable, q(static, "acme"))
	assert.Equal(t, GSI, q(static, "globex"))
	assert.Equal(t, GSI, formOfQuery(static.Query("by_status", "acme").Via(GSI)), "Via overrides the routes")

	// Percent: a stable share, and widening keeps the partitions already moved.
	share := func(p float64) map[string]bool {
		tb, err := New[kpStep1](f.c, func(o *Options) {
			o.TableName = s1.opts.TableName
			o.Routes = map[string]Route{"by_status": {To: IndexTable, Percent: p}}
		})
		require.NoError(t, err)
		moved := map[string]bool{}
		for i := range 2000 {
			team := fmt.Sprintf("team-%d", i)
			if q(tb, team) == IndexTable {
				moved[team] = true
			}
		}
		return moved
	}
	ten, fifty, all := share(10), share(50), share(100)
	assert.InDelta(t, 200, len(ten), 60, "10%% of 2000 partitions")
	assert.InDelta(t, 1000, len(fifty), 100, "50%% of 2000 partitions")
	assert.Len(t, all, 2000)
	for team := range ten {
		assert.True(t, fifty[team], "%s moved at 10%% but not at 50%%", team)
	}
	assert.Empty(t, share(0))

	// The control table: SetRoute on one instance, RefreshRoutes on another.
	other, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = s1.opts.TableName
		o.ControlTable = control
		o.Routes = map[string]Route{"by_status": {To: IndexTable, Partitions: []string{"acme"}}}
	})
	require.NoError(t, err)
	require.NoError(t, s1.SetRoute(ctx, "by_status", Route{To: IndexTable, Partitions: []string{"globex"}}))
	assert.Equal(t, IndexTable, q(s1, "globex"), "SetRoute takes effect at once where it is called")
	require.NoError(t, other.RefreshRoutes(ctx))
	assert.Equal(t, IndexTable, q(other, "globex"), "the control route replaces the static one")
	assert.Equal(t, GSI, q(other, "acme"))

	// Step 2 reads the same control item: the route names forms, not
	// "declared" or "kept", so it means the same there.
	s2, err := New[kpStep2](f.c, func(o *Options) { o.TableName = s1.opts.TableName; o.ControlTable = control })
	require.NoError(t, err)
	require.NoError(t, s2.RefreshRoutes(ctx))
	e, err := s2.Query("by_status", "globex").Explain()
	require.NoError(t, err)
	assert.Equal(t, IndexTable, e.Request.Kind)
	e, err = s2.Query("by_status", "acme").Explain()
	require.NoError(t, err)
	assert.Equal(t, GSI, e.Request.Kind, "step 2 sends the unselected partitions to the other form, the GSI")

	// Step 3 keeps no GSI: a route to the GSI cannot apply, and SetRoute
	// refuses to store one from there.
	s3, err := New[kpStep3](f.c, func(o *Options) { o.TableName = s1.opts.TableName; o.ControlTable = control })
	require.NoError(t, err)
	require.NoError(t, s1.SetRoute(ctx, "by_status", Route{To: GSI, Percent: 100}))
	require.NoError(t, s3.RefreshRoutes(ctx))
	e3, err := s3.Query("by_status", "acme").Explain()
	require.NoError(t, err)
	assert.Equal(t, IndexTable, e3.Request.Kind, "a route to a form not kept is ignored")
	require.ErrorIs(t, s3.SetRoute(ctx, "by_status", Route{To: GSI, Percent: 100}), ErrInvalidQuery)

	// RouteFunc comes before the control table.
	fn, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = s1.opts.TableName
		o.ControlTable = control
		o.RouteFunc = func(index, pk string) (Kind, bool) { return IndexTable, pk == "initech" }
	})
	require.NoError(t, err)
	require.NoError(t, fn.RefreshRoutes(ctx))
	assert.Equal(t, IndexTable, q(fn, "initech"))
	assert.Equal(t, GSI, q(fn, "acme"), "the control route (GSI, 100%%) decides the rest")

	// A malformed control item is refused; the routes read before stay.
	_, err = f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(control), Item: map[string]types.AttributeValue{
		controlPK: avS(routePrefix + s1.s.table), controlSK: avS("by_status"), "to": avS("view"),
	}})
	require.NoError(t, err)
	require.Error(t, fn.RefreshRoutes(ctx))
	assert.Equal(t, GSI, q(fn, "acme"), "the last good routes still serve")

	// Bad static routes fail New.
	_, err = New[kpStep1](f.c, func(o *Options) { o.Routes = map[string]Route{"nope": {To: IndexTable}} })
	require.ErrorIs(t, err, ErrDeclaration)
	_, err = New[kpStep1](f.c, func(o *Options) { o.Routes = map[string]Route{"by_status": {To: IndexTable, Percent: 120}} })
	require.ErrorIs(t, err, ErrDeclaration)
}

// kpSeed writes items to the base table (with the GSI's attributes) and to
// the index table, without transactions or a stream.
func kpSeed(t *testing.T, f kpFleet, items ...kpStep1) {
	t.Helper()
	putBase(t, f.s1, items...)
	for _, it := range items {
		putEntry(t, f.s2, "by_status", kpStep2(it), false)
	}
}

// kpDeleteEntry deletes the entry of it from the index table, leaving the base item.
func kpDeleteEntry(t *testing.T, f kpFleet, it kpStep1) {
	t.Helper()
	d := f.s2.s.byName["by_status"]
	e, err := f.s2.entryOf(d, kpStep2(it), "1")
	require.NoError(t, err)
	key := map[string]types.AttributeValue{}
	for _, k := range d.stored {
		key[k.attr] = e[k.attr]
	}
	out, err := f.c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.s2.tableOf(d)), Key: key, ReturnValues: "ALL_OLD"})
	require.NoError(t, err)
	require.NotEmpty(t, out.Attributes, "the entry to delete exists")
}

// Shadow reads find every kind of mismatch, report nothing on a clean run,
// tell a mismatch that a re-check no longer finds (a GSI catching up) from
// one it finds again, and never hold up the call they shadow.
func TestShadowReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var got []Mismatch
	recheck := make(chan func(), 1) // a repair to make while the re-check waits
	f := newKPFleet(t)
	shadowed, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = f.s1.opts.TableName
		o.Shadow = &ShadowOptions{
			Rate: 1,
			OnMismatch: func(m Mismatch) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, m)
			},
			Sleep: func(ctx context.Context, d time.Duration) error {
				select {
				case fix := <-recheck:
					fix()
				default:
				}
				return nil
			},
		}
	})
	require.NoError(t, err)
	item := func(team, id, status string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: status, Created: created}
	}
	for _, team := range []string{"clean", "missing", "extra", "order", "boundary", "leak", "transient"} {
		kpSeed(t, f, item(team, "a", "open", 1), item(team, "b", "open", 2), item(team, "c", "pending", 3))
	}
	deleteEntry := func(it kpStep1) { kpDeleteEntry(t, f, it) }
	// missing: the table lost an entry.
	deleteEntry(item("missing", "b", "open", 2))
	// extra: the table holds a live item of another partition here.
	putEntry(t, f.s2, "by_status", kpStep2(item("extra", "a", "closed", 9)), false)
	// order: the table's entries of a and c swapped places.
	deleteEntry(item("order", "a", "open", 1))
	deleteEntry(item("order", "c", "pending", 3))
	putEntry(t, f.s2, "by_status", kpStep2{ID: "order-a", Team: "order", Status: "pending", Created: 3}, false)
	putEntry(t, f.s2, "by_status", kpStep2{ID: "order-c", Team: "order", Status: "open", Created: 1}, false)
	// boundary: an entry after the page's last item, of a live item.
	putEntry(t, f.s2, "by_status", kpStep2(item("boundary", "zz", "zzz", 9)), false)
	putBase(t, f.s1, item("elsewhere", "x", "open", 1))
	putEntry(t, f.s2, "by_status", kpStep2{ID: "elsewhere-x", Team: "boundary", Status: "zzz", Created: 9}, false)
	deleteEntry(item("boundary", "zz", "zzz", 9))
	// leak: the base item is gone, its entry lives on.
	_, err = f.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.s1.TableName()), Key: map[string]types.AttributeValue{"id": avS("leak-b")}})
	require.NoError(t, err)

	page := func(team string, limit int) {
		t.Helper()
		p, err := shadowed.Query("by_status", team).Limit(limit).Page(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, p.Items)
		require.NoError(t, shadowed.WaitShadows(ctx))
	}
	last := func() Mismatch {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, got)
		return got[len(got)-1]
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	page("clean", 10)
	assert.Equal(t, 0, count(), "a clean run reports nothing")
	for _, tc := range []struct {
		team  string
		limit int
		kind  MismatchKind
	}{
		{"missing", 10, MismatchMissing},
		{"extra", 10, MismatchExtra},
		{"order", 10, MismatchOrder},
		{"boundary", 3, MismatchPageBoundary},
		{"leak", 10, MismatchTombstone},
	} {
		n := count()
		page(tc.team, tc.limit)
		require.Equal(t, n+1, count(), tc.team)
		m := last()
		assert.Equal(t, tc.kind, m.Kind, "%s: %+v", tc.team, m)
		assert.Equal(t, GSI, m.Served)
		assert.Equal(t, IndexTable, m.Shadow)
		assert.Contains(t, m.Query, tc.team)
		t.Logf("%s: %s: %s %v", tc.team, m.Kind, m.Detail, m.Keys)
	}

	// A mismatch the re-check no longer finds is transient, and not reported.
	deleteEntry(item("transient", "a", "open", 1))
	recheck <- func() { putEntry(t, f.s2, "by_status", kpStep2(item("transient", "a", "open", 1)), false) }
	n := count()
	page("transient", 10)
	assert.Equal(t, n, count(), "a transient mismatch is counted, not reported")

	r, err := shadowed.Rollout("by_status")
	require.NoError(t, err)
	assert.Equal(t, int64(7), r.Shadowed)
	assert.Equal(t, int64(5), r.Persistent)
	assert.Equal(t, int64(1), r.Transient)
	assert.Equal(t, int64(7), r.Forms[GSI].Reads, "the calls, served by the GSI")
	assert.Zero(t, r.Forms[IndexTable].Reads, "shadow reads are not reads served")
	assert.GreaterOrEqual(t, r.Forms[IndexTable].ShadowReads, int64(7))
	assert.False(t, r.Forms[GSI].LastRead.IsZero())
	assert.True(t, r.Forms[IndexTable].LastRead.IsZero(), "no call was served by the table")
}

// The caller's call returns without waiting for its shadow read, and a call
// sampled when the concurrency or the read-unit budget is spent is skipped.
func TestShadowReadsDoNotHoldTheCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	kpSeed(t, f, kpStep1{ID: "a", Team: "T", Status: "open", Created: 1})
	kpDeleteEntry(t, f, kpStep1{ID: "a", Team: "T", Status: "open", Created: 1})
	release := make(chan struct{})
	waiting := make(chan struct{}, 1)
	tb, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = f.s1.opts.TableName
		o.Shadow = &ShadowOptions{Rate: 1, MaxConcurrent: 1, Sleep: func(ctx context.Context, d time.Duration) error {
			waiting <- struct{}{}
			<-release
			return nil
		}}
	})
	require.NoError(t, err)
	p, err := tb.Query("by_status", "T").Page(ctx)
	require.NoError(t, err, "the call returns while its shadow read waits")
	require.Len(t, p.Items, 1)
	<-waiting // the shadow read found the mismatch and waits to re-check
	_, err = tb.Query("by_status", "T").Page(ctx)
	require.NoError(t, err)
	r, err := tb.Rollout("by_status")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Skipped, "the one shadow slot is busy")
	close(release)
	require.NoError(t, tb.WaitShadows(ctx))
	r, err = tb.Rollout("by_status")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Persistent)

	budget, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = f.s1.opts.TableName
		o.Shadow = &ShadowOptions{Rate: 1, MaxReadUnits: 0.001} // one unit, then one per 1,000 s
	})
	require.NoError(t, err)
	for range 3 {
		_, err = budget.Query("by_status", "T").Page(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, budget.WaitShadows(ctx))
	r, err = budget.Rollout("by_status")
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Shadowed)
	assert.Equal(t, int64(2), r.Skipped)
}

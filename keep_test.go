package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/spec"
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

// kpRouter is a Router that answers from a function and records what it
// was asked.
type kpRouter struct {
	mu    sync.Mutex
	asked []kpAsked
	fn    func(partition string) (Kind, bool)
}

type kpAsked struct {
	table, index, partition string
	forms                   [2]Kind
}

func (r *kpRouter) Route(table, index, partition string, forms [2]Kind) (Kind, bool) {
	r.mu.Lock()
	r.asked = append(r.asked, kpAsked{table, index, partition, forms})
	r.mu.Unlock()
	return r.fn(partition)
}

func (r *kpRouter) calls() []kpAsked {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// The routing rules, in order: Via, Options.Router, the declared type; an
// answer naming a form the index does not keep, or ok false, leaves the
// read to the declared type. The Router is asked with the declared base
// table, the logical index, the partition key as EncodeKey encodes it and
// the index's forms, declared first; never for Via, nor for an index with
// one form. (Package migrate's Routes and Router route by partition,
// percent and control table on this seam.)
func TestRouting(t *testing.T) {
	t.Parallel()
	formOfQuery := func(q Query[kpStep1]) Kind {
		t.Helper()
		e, err := q.Explain()
		require.NoError(t, err)
		return e.Request.Kind
	}
	none, err := New[kpStep1](nil)
	require.NoError(t, err)
	assert.Equal(t, GSI, formOfQuery(none.Query("by_status", "acme")), "no Router: the declared type")
	assert.Equal(t, IndexTable, formOfQuery(none.Query("by_status", "acme").Via(IndexTable)))

	// One tenant to the table.
	r := &kpRouter{fn: func(pk string) (Kind, bool) { return IndexTable, pk == "acme" }}
	s1, err := New[kpStep1](nil, func(o *Options) { o.Router = r; o.TableName = func(s string) string { return "prod-" + s } })
	require.NoError(t, err)
	q := func(tb *Table[kpStep1], team string) Kind { return formOfQuery(tb.Query("by_status", team)) }
	assert.Equal(t, IndexTable, q(s1, "acme"))
	assert.Equal(t, GSI, q(s1, "globex"), "ok false: the declared type")
	asked := len(r.calls())
	assert.Equal(t, GSI, formOfQuery(s1.Query("by_status", "acme").Via(GSI)), "Via overrides the Router")
	require.Len(t, r.calls(), asked, "a query with Via does not ask the Router")
	want := kpAsked{table: "kp-tickets", index: "by_status", partition: "acme", forms: [2]Kind{GSI, IndexTable}}
	assert.Equal(t, want, r.calls()[0], "the declared table name, not the physical one")

	// The partition as EncodeKey encodes it.
	odd := "a#b$c"
	enc, err := EncodeKey(odd)
	require.NoError(t, err)
	require.NotEqual(t, odd, enc)
	q(s1, odd)
	calls := r.calls()
	assert.Equal(t, enc, calls[len(calls)-1].partition)

	// Step 2 has the forms the other way round.
	s2, err := New[kpStep2](nil, func(o *Options) { o.Router = r })
	require.NoError(t, err)
	e, err := s2.Query("by_status", "globex").Explain()
	require.NoError(t, err)
	assert.Equal(t, IndexTable, e.Request.Kind, "the declared type of step 2")
	calls = r.calls()
	assert.Equal(t, [2]Kind{IndexTable, GSI}, calls[len(calls)-1].forms)
	toGSI := &kpRouter{fn: func(string) (Kind, bool) { return GSI, true }}
	s2, err = New[kpStep2](nil, func(o *Options) { o.Router = toGSI })
	require.NoError(t, err)
	e, err = s2.Query("by_status", "acme").Explain()
	require.NoError(t, err)
	assert.Equal(t, GSI, e.Request.Kind, "step 2 reads the kept GSI when routed to it")

	// A form the index does not keep is the declared type.
	lsi := &kpRouter{fn: func(string) (Kind, bool) { return LSI, true }}
	s1l, err := New[kpStep1](nil, func(o *Options) { o.Router = lsi })
	require.NoError(t, err)
	assert.Equal(t, GSI, q(s1l, "acme"))
	base := &kpRouter{fn: func(string) (Kind, bool) { return BaseTable, true }}
	s1b, err := New[kpStep1](nil, func(o *Options) { o.Router = base })
	require.NoError(t, err)
	assert.Equal(t, GSI, q(s1b, "acme"))

	// Step 0 and step 3 keep one form: their reads never ask.
	panics := &kpRouter{fn: func(string) (Kind, bool) { panic("asked for an index with one form") }}
	s0, err := New[kpStep0](nil, func(o *Options) { o.Router = panics })
	require.NoError(t, err)
	e, err = s0.Query("by_status", "acme").Explain()
	require.NoError(t, err)
	assert.Equal(t, GSI, e.Request.Kind)
	s3, err := New[kpStep3](nil, func(o *Options) { o.Router = panics })
	require.NoError(t, err)
	e, err = s3.Query("by_status", "acme").Explain()
	require.NoError(t, err)
	assert.Equal(t, IndexTable, e.Request.Kind)
	assert.Empty(t, panics.calls())
	_, err = s3.Query("by_status", "acme").Via(GSI).Explain()
	require.ErrorIs(t, err, ErrInvalidQuery, "step 3 does not keep the GSI: Via(GSI) is refused")
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

// kpObserver keeps the ReadEvents it sees.
type kpObserver struct {
	mu     sync.Mutex
	events []ReadEvent
}

func (o *kpObserver) ObserveRead(_ context.Context, ev ReadEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, ev)
}

// take returns the events seen since the last take.
func (o *kpObserver) take() []ReadEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.events
	o.events = nil
	return out
}

// ReadEvent.compare finds every kind of mismatch between the page served
// and the same page on the other form, finds none on a clean partition,
// and tells, read again on both forms (recheck), a mismatch that is gone
// (a GSI catching up) from one that is not. (Package migrate's Shadows
// samples, re-checks after a delay and reports on this seam.)
func TestReadEventCompare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	obs := &kpObserver{}
	observed, err := New[kpStep1](f.c, func(o *Options) {
		o.TableName = f.s1.opts.TableName
		o.Observer = obs
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

	// page reads one page and returns its event.
	page := func(team string, limit int) ReadEvent {
		t.Helper()
		p, err := observed.Query("by_status", team).Limit(limit).Page(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, p.Items)
		evs := obs.take()
		require.Len(t, evs, 1, "one event a page")
		ev := evs[0]
		assert.Equal(t, "kp-tickets", ev.Table)
		assert.Equal(t, "by_status", ev.Index)
		assert.Equal(t, GSI, ev.Form)
		assert.Equal(t, IndexTable, ev.Other)
		assert.False(t, ev.Admin)
		assert.Equal(t, p.Stats, ev.Stats)
		assert.Contains(t, ev.Query, team)
		return ev
	}

	m, err := page("clean", 10).compare(ctx, false)
	require.NoError(t, err)
	assert.Nil(t, m, "a clean partition: equal")
	// A page boundary compares where both forms' fills read the item after
	// the page: calls that know the entries' size do.
	for _, k := range []Kind{GSI, IndexTable} {
		readAhead(t, observed.Query("by_status", "boundary").Via(k))
	}
	for _, tc := range []struct {
		team  string
		limit int
		kind  string
	}{
		{"missing", 10, bridge.MismatchMissing},
		{"extra", 10, bridge.MismatchExtra},
		{"order", 10, bridge.MismatchOrder},
		{"boundary", 3, bridge.MismatchPageBoundary},
		{"leak", 10, bridge.MismatchTombstone},
	} {
		ev := page(tc.team, tc.limit)
		for _, recheck := range []bool{false, true} {
			m, err := ev.compare(ctx, recheck)
			require.NoError(t, err)
			require.NotNil(t, m, "%s, recheck %v", tc.team, recheck)
			assert.Equal(t, tc.kind, m.Kind, "%s: %+v", tc.team, m)
			assert.Contains(t, m.Query, tc.team)
			t.Logf("%s: %s: %s %v", tc.team, m.Kind, m.Detail, m.Keys)
		}
	}

	// A mismatch the re-check no longer finds: the table catches up.
	deleteEntry(item("transient", "a", "open", 1))
	ev := page("transient", 10)
	m, err = ev.compare(ctx, false)
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.Equal(t, bridge.MismatchMissing, m.Kind)
	putEntry(t, f.s2, "by_status", kpStep2(item("transient", "a", "open", 1)), false)
	m, err = ev.compare(ctx, true)
	require.NoError(t, err)
	assert.Nil(t, m, "read again on both forms, the page is equal")
	m, err = ev.compare(ctx, false)
	require.NoError(t, err)
	assert.Nil(t, m, "the page as served equals the table now")
	assert.Empty(t, obs.take(), "Compare's reads are not observed")

	// A Via read is observed as an admin read; an event compares from any
	// goroutine, after the caller changed its page.
	p, err := observed.Query("by_status", "missing").Via(IndexTable).Page(ctx)
	require.NoError(t, err)
	evs := obs.take()
	require.Len(t, evs, 1)
	assert.True(t, evs[0].Admin)
	assert.Equal(t, IndexTable, evs[0].Form)
	assert.Equal(t, GSI, evs[0].Other)
	for i := range p.Items {
		p.Items[i] = kpStep1{}
	}
	p.Items = p.Items[:0]
	done := make(chan *bridge.Mismatch)
	go func() {
		m, err := evs[0].compare(context.Background(), false)
		assert.NoError(t, err)
		done <- m
	}()
	m = <-done
	require.NotNil(t, m)
	assert.Equal(t, bridge.MismatchExtra, m.Kind, "the GSI holds missing-b, which the table lacks")

	// Exists, and each page of All, are observed too.
	ok, err := observed.Query("by_status", "clean").Exists(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	evs = obs.take()
	require.Len(t, evs, 1)
	m, err = evs[0].compare(ctx, false)
	require.NoError(t, err)
	assert.Nil(t, m)
	n := 0
	for _, err := range observed.Query("by_status", "missing").Limit(2).All(ctx) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 2, n)
	evs = obs.take()
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		m, err := ev.compare(ctx, false)
		require.NoError(t, err)
		require.NotNil(t, m, "the table lacks missing-b, the second item")
		assert.Equal(t, bridge.MismatchMissing, m.Kind)
	}
	for range observed.Query("by_status", "nobody").All(ctx) {
		t.Fatal("an empty partition")
	}
	evs = obs.take()
	require.Len(t, evs, 1, "an All that finds nothing is one (empty) page")
	m, err = evs[0].compare(ctx, false)
	require.NoError(t, err)
	assert.Nil(t, m)
}

// kpFlipNamed is kpStep3 naming where the GSI of an older declaration was
// (gsi= without keep=): the model does not keep it, and the description
// says where schema.Check must look for it.
type kpFlipNamed struct {
	_       TableSpec `ddbindex:"kp-tickets"`
	_       IndexSpec `ddbindex:"by_status,type=table,gsi=kp-tickets-by-status"`
	ID      string    `dynamodbav:"id" ddbindex:"pk"`
	Team    string    `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

func TestDroppedFormNamed(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[kpFlipNamed]())
	require.NoError(t, err)
	d := s.byName["by_status"]
	require.Len(t, d.decl.forms, 1, "gsi= without keep= keeps no GSI")
	require.Len(t, s.indexes, 1, "nothing writes the GSI")
	tb, err := New[kpFlipNamed](nil)
	require.NoError(t, err)
	ts, err := bridge.Tables(tb)
	require.NoError(t, err)
	var gsi *spec.Dropped
	for _, dr := range ts.Dropped {
		if dr.Kind == spec.GSI {
			gsi = &dr
		}
	}
	require.NotNil(t, gsi)
	assert.Equal(t, "kp-tickets-by-status", gsi.IndexName)
	assert.True(t, gsi.Named)
	assert.Equal(t, spec.Key{Attr: "team", Type: types.ScalarAttributeTypeS}, gsi.PK)
	require.NotNil(t, gsi.SK)
	assert.Equal(t, "_sk", gsi.SK.Attr)

	tb3, err := New[kpStep3](nil)
	require.NoError(t, err)
	ts3, err := bridge.Tables(tb3)
	require.NoError(t, err)
	for _, dr := range ts3.Dropped {
		if dr.Kind == spec.GSI {
			assert.Equal(t, "by_status", dr.IndexName, "the default name")
			assert.False(t, dr.Named, "the GSI may have had another name")
		}
	}
}

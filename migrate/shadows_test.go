package migrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/oteltest"
)

// newShadows returns the Shadows o configures, closed when the test ends.
func newShadows(t *testing.T, o ShadowOptions) *Shadows {
	t.Helper()
	s, err := NewShadows(o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close(context.Background())) })
	return s
}

// Shadow reads report nothing on a clean run, report a mismatch that the
// re-check finds again, and tell one that the re-check no longer finds (a
// GSI catching up) from it. Reads that chose their form with Via are not
// shadowed. (ddbindex's TestReadEventCompare finds every kind of mismatch.)
func TestShadows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var got []Mismatch
	// A repair to make while the re-check waits. It runs on the comparison's
	// goroutine, so it reports its error on fixed, which the test reads
	// once Wait has returned.
	recheck := make(chan func() error, 1)
	fixed := make(chan error, 1)
	f := newKPFleet(t)
	s := newShadows(t, ShadowOptions{
		Rate: 1,
		OnMismatch: func(m Mismatch) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m)
		},
	})
	s.sleep = func(context.Context, time.Duration) error {
		select {
		case fix := <-recheck:
			fixed <- fix()
		default:
		}
		return nil
	}
	shadowed := f.table(t, func(o *ddbindex.Options) { o.Observer = s })
	item := func(team, id, status string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: status, Created: created}
	}
	for _, team := range []string{"clean", "missing", "transient"} {
		f.seed(t, item(team, "a", "open", 1), item(team, "b", "open", 2), item(team, "c", "pending", 3))
	}
	f.dropEntry(t, item("missing", "b", "open", 2))
	page := func(team string) {
		t.Helper()
		p, err := shadowed.Query("by_status", team).Limit(10).Page(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, p.Items)
		require.NoError(t, s.Wait(ctx))
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	page("clean")
	assert.Equal(t, 0, count(), "a clean run reports nothing")
	page("missing")
	require.Equal(t, 1, count())
	mu.Lock()
	m := got[0]
	mu.Unlock()
	assert.Equal(t, MismatchMissing, m.Kind)
	assert.Equal(t, "by_status", m.Index)
	assert.Equal(t, ddbindex.GSI, m.Served)
	assert.Equal(t, ddbindex.IndexTable, m.Shadow)
	assert.Contains(t, m.Query, "missing")

	// A mismatch the re-check no longer finds is transient, and not reported.
	f.dropEntry(t, item("transient", "a", "open", 1))
	w := f.entry(t, item("transient", "a", "open", 1), false)
	recheck <- func() error {
		_, err := f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.Table), Item: w.Item})
		return err
	}
	page("transient")
	select {
	case err := <-fixed:
		require.NoError(t, err, "the repair")
	default:
		t.Fatal("the re-check did not run") // page waited for the comparisons
	}
	assert.Equal(t, 1, count(), "a transient mismatch is counted, not reported")

	// Reads that chose their form are not shadowed.
	_, err := shadowed.Query("by_status", "missing").Via(ddbindex.IndexTable).Page(ctx)
	require.NoError(t, err)
	for range shadowed.Query("by_status", "missing").Via(ddbindex.GSI).All(ctx) {
	}
	require.NoError(t, s.Wait(ctx))
	assert.Equal(t, ShadowStats{Compared: 3, Equal: 1, Transient: 1, Persistent: 1}, s.Stats())

	// Exists and All are shadowed like Page.
	ok, err := shadowed.Query("by_status", "clean").Exists(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	for _, err := range shadowed.Query("by_status", "missing").All(ctx) {
		require.NoError(t, err)
	}
	require.NoError(t, s.Wait(ctx))
	assert.Equal(t, ShadowStats{Compared: 5, Equal: 2, Transient: 1, Persistent: 2}, s.Stats())
	assert.Equal(t, 2, count())
}

// The caller's read returns without waiting for its shadow read, and a page
// sampled when the concurrency or the read-unit budget is spent is
// skipped.
func TestShadowsDoNotHoldTheCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	it := kpStep1{ID: "a", Team: "T", Status: "open", Created: 1}
	f.seed(t, it)
	f.dropEntry(t, it)
	release := make(chan struct{})
	waiting := make(chan struct{}, 1)
	s := newShadows(t, ShadowOptions{Rate: 1, MaxConcurrent: 1})
	s.sleep = func(ctx context.Context, d time.Duration) error {
		waiting <- struct{}{}
		<-release
		return nil
	}
	tb := f.table(t, func(o *ddbindex.Options) { o.Observer = s })
	p, err := tb.Query("by_status", "T").Page(ctx)
	require.NoError(t, err, "the call returns while its shadow read waits")
	require.Len(t, p.Items, 1)
	<-waiting // the shadow read found the mismatch and waits to re-check
	_, err = tb.Query("by_status", "T").Page(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Stats().Skipped, "the one shadow slot is busy")
	close(release)
	require.NoError(t, s.Wait(ctx))
	assert.Equal(t, int64(1), s.Stats().Persistent)

	budget := newShadows(t, ShadowOptions{Rate: 1, MaxReadUnits: 0.001}) // one unit, then one per 1,000 s
	budget.sleep = func(context.Context, time.Duration) error { return nil }
	tb = f.table(t, func(o *ddbindex.Options) { o.Observer = budget })
	for range 3 {
		_, err = tb.Query("by_status", "T").Page(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, budget.Wait(ctx))
	st := budget.Stats()
	assert.Equal(t, int64(1), st.Compared)
	assert.Equal(t, int64(2), st.Skipped)
}

// The shadow reads count in ddbindex.migration.shadow_reads by outcome
// (compared, skipped), the mismatches in ddbindex.migration.mismatches by
// kind and persistence, the form being the shadow form; each comparison is
// a span ddbindex.ShadowCompare linked to the span of the read it shadows,
// with its outcome, and the root package records its reads as operation
// Shadow.
func TestShadowsTelemetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := oteltest.New(t)
	f := newKPFleet(t)
	s := newShadows(t, ShadowOptions{Rate: 1, MeterProvider: h.MeterProvider, TracerProvider: h.TracerProvider})
	s.sleep = func(context.Context, time.Duration) error { return nil }
	tb := f.table(t, func(o *ddbindex.Options) {
		o.MeterProvider, o.TracerProvider = h.MeterProvider, h.TracerProvider
		o.Observer = s
		o.Router = Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"to-table"}}}
	})
	item := func(team, id string, created int64) kpStep1 {
		return kpStep1{ID: team + "-" + id, Team: team, Status: "open", Created: created}
	}
	for _, team := range []string{"to-table", "to-gsi"} {
		f.seed(t, item(team, "a", 1), item(team, "b", 2))
	}
	// The index table lacks an entry of to-gsi: the shadow read (on the
	// table) misses it, and finds it missing again at the re-check.
	f.dropEntry(t, item("to-gsi", "b", 2))
	for _, team := range []string{"to-table", "to-gsi", "to-gsi"} {
		_, err := tb.Query("by_status", team).Page(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Wait(ctx))
	}

	m := h.Metrics(t)
	assert.Equal(t, ScopeName, m.Scope("ddbindex.migration.shadow_reads"))
	assert.Equal(t, float64(1), m.Sum("ddbindex.migration.shadow_reads", attrForm.String("gsi"), attrShadow.String("compared"), attrTable.String("kp-tickets")),
		"to-table's page, shadowed on the GSI")
	assert.Equal(t, float64(2), m.Sum("ddbindex.migration.shadow_reads", attrForm.String("table"), attrShadow.String("compared")))
	assert.Equal(t, float64(2), m.Sum("ddbindex.migration.mismatches", attrForm.String("table"), attrMismatch.String(string(MismatchMissing)), attrPersistence.String("persistent")))
	assert.Equal(t, float64(2), m.Sum("ddbindex.migration.mismatches"))
	st := s.Stats()
	assert.Equal(t, float64(st.Compared), m.Sum("ddbindex.migration.shadow_reads", attrShadow.String("compared")), "the metric agrees with Stats")
	assert.Equal(t, float64(st.Persistent), m.Sum("ddbindex.migration.mismatches", attrPersistence.String("persistent")))
	assert.Equal(t, float64(1+3+3), m.Sum("ddbindex.requests", attrOperation.String("Shadow")))

	compares := h.Spans("ddbindex.ShadowCompare")
	require.Len(t, compares, 3)
	pages := h.Spans("ddbindex.Page")
	var outcomes []string
	for _, sp := range compares {
		o, _ := oteltest.Attr(sp, attrShadow)
		outcomes = append(outcomes, o.AsString())
		require.Len(t, sp.Links(), 1, "linked to the call it shadows")
		assert.True(t, slices.ContainsFunc(pages, func(p sdktrace.ReadOnlySpan) bool { return p.SpanContext().Equal(sp.Links()[0].SpanContext) }))
	}
	assert.ElementsMatch(t, []string{"equal", "persistent", "persistent"}, outcomes)
	shadowSpans := h.Spans("ddbindex.Shadow")
	assert.Len(t, shadowSpans, 1+3+3, "a span per shadow read")
	for _, sp := range shadowSpans {
		assert.True(t, slices.ContainsFunc(compares, func(c sdktrace.ReadOnlySpan) bool { return c.SpanContext().SpanID() == sp.Parent().SpanID() }),
			"a shadow read's span is a child of its comparison's")
	}
}

// NewShadows refuses a Rate that is not a share, and negative bounds.
func TestNewShadowsRefusals(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]ShadowOptions{
		"Rate NaN":          {Rate: math.NaN()},
		"Rate -0.1":         {Rate: -0.1},
		"Rate 1.5":          {Rate: 1.5},
		"Rate +Inf":         {Rate: math.Inf(1)},
		"MaxConcurrent -1":  {Rate: 1, MaxConcurrent: -1},
		"MaxReadUnits -1":   {Rate: 1, MaxReadUnits: -1},
		"MaxReadUnits NaN":  {Rate: 1, MaxReadUnits: math.NaN()},
		"MaxReadUnits +Inf": {Rate: 1, MaxReadUnits: math.Inf(1)},
		"Recheck -1s":       {Rate: 1, Recheck: -time.Second},
		"Timeout -1s":       {Rate: 1, Timeout: -time.Second},
		"Rate 2":            {Rate: 2},
	} {
		s, err := NewShadows(o)
		require.Nil(t, s, name)
		require.True(t, errors.Is(err, ddbindex.ErrDeclaration), "%s: %v", name, err)
		require.False(t, errors.Is(err, ddbindex.ErrInvalidQuery), name)
		require.Equal(t, "DDBX-100", ddbindex.Code(err), name)
		require.ErrorContains(t, err, "migrate.NewShadows: ShadowOptions.", name)
	}
	for _, rate := range []float64{0, 0.25, 1} {
		s, err := NewShadows(ShadowOptions{Rate: rate})
		require.NoError(t, err)
		require.NoError(t, s.Close(context.Background()))
	}
}

// fakes holds the comparisons of the ReadEvents that event makes, by their
// Query, which no real ReadEvent has; fakeSeq numbers them.
var (
	fakes   sync.Map // string → func(context.Context, bool) (*Mismatch, error)
	fakeSeq atomic.Int64
)

// init makes Shadows compare the events that event makes with their fake
// comparison, and every other event as it does outside the tests.
func init() {
	core := comparison
	comparison = func(ev ddbindex.ReadEvent) func(context.Context, bool) (*Mismatch, error) {
		if f, ok := fakes.Load(ev.Query); ok {
			return f.(func(context.Context, bool) (*Mismatch, error))
		}
		return core(ev)
	}
}

// event is a ReadEvent that Shadows compares by calling compare.
func event(compare func(ctx context.Context, recheck bool) (*Mismatch, error)) ddbindex.ReadEvent {
	q := fmt.Sprintf("fake comparison %d", fakeSeq.Add(1))
	fakes.Store(q, compare)
	return ddbindex.ReadEvent{Table: "kp-tickets", Index: "by_status", Form: ddbindex.GSI, Other: ddbindex.IndexTable, Query: q}
}

// Close stops taking pages and waits for the comparisons in flight; when
// its context ends first, it cancels them and still waits for them.
func TestShadowsClose(t *testing.T) {
	t.Parallel()
	s, err := NewShadows(ShadowOptions{Rate: 1})
	require.NoError(t, err)
	started := make(chan struct{}, 4)
	var ended atomic.Int32
	// blocks makes an event whose comparison waits for release.
	blocks := func(release chan struct{}) ddbindex.ReadEvent {
		return event(func(ctx context.Context, _ bool) (*Mismatch, error) {
			defer ended.Add(1)
			started <- struct{}{}
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	}
	release := make(chan struct{})
	blocking := blocks(release)
	s.ObserveRead(context.Background(), blocking)
	s.ObserveRead(context.Background(), blocking)
	<-started
	<-started
	closed := make(chan error)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case <-closed:
		t.Fatal("Close returned while comparisons were in flight")
	case <-started:
		t.Fatal("a third comparison started")
	default:
	}
	close(release)
	require.NoError(t, <-closed)
	require.Equal(t, int32(2), ended.Load(), "Close waited for both")
	s.ObserveRead(context.Background(), blocking)
	require.Equal(t, int64(1), s.Stats().Skipped, "a page observed after Close is skipped")
	require.Equal(t, int64(2), s.Stats().Compared)

	// A context that ends first cancels the comparisons in flight.
	s2, err := NewShadows(ShadowOptions{Rate: 1})
	require.NoError(t, err)
	ended.Store(0)
	s2.ObserveRead(context.Background(), blocks(make(chan struct{})))
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s2.Close(ctx), context.Canceled)
	require.Equal(t, int32(1), ended.Load(), "Close returned after the comparison ended")
	require.Equal(t, ShadowStats{Skipped: 1}, s2.Stats(), "a comparison Close cut short is skipped, not failed")
}

// failingControl is a control table whose every Query fails.
type failingControl struct{ fakeControl }

func (*failingControl) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errors.New("unreachable")
}

// A started Router and a Shadows that has compared pages leave no
// goroutine behind once closed: the Router's refresh loop (here failing,
// and backing off), the comparisons (here mismatches re-checked, and one
// still waiting when Close is called).
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()

	failures := make(chan error, 16)
	r, err := NewRouter(&failingControl{}, RouterOptions{ControlTable: "control", Tables: []string{"kp-tickets"}, Refresh: time.Millisecond,
		OnError: func(err error) {
			select {
			case failures <- err:
			default:
			}
		}})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	for range 3 {
		require.ErrorIs(t, <-failures, ddbindex.ErrDynamoDB)
	}

	s, err := NewShadows(ShadowOptions{Rate: 1, MaxConcurrent: 8, Recheck: time.Millisecond})
	require.NoError(t, err)
	mismatch := event(func(context.Context, bool) (*Mismatch, error) {
		return &Mismatch{Kind: MismatchMissing, Keys: []string{"k1"}}, nil
	})
	for range 5 {
		s.ObserveRead(context.Background(), mismatch)
	}
	require.NoError(t, s.Wait(context.Background()))
	require.Equal(t, int64(5), s.Stats().Persistent)
	waiting := make(chan struct{})
	s.ObserveRead(context.Background(), event(func(ctx context.Context, _ bool) (*Mismatch, error) {
		close(waiting)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	<-waiting

	r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Close(ctx), context.Canceled)
	// Close returns once each goroutine said it ended; it may still be on
	// its way out, and nothing says when it is gone: yield until the count
	// is back. A goroutine on its way out needs only to be scheduled, which
	// a loaded machine may delay, so the bound is a hang guard (a leaked
	// goroutine never goes), not a count of yields.
	guard := time.Now().Add(time.Minute)
	n := runtime.NumGoroutine()
	for n > before && time.Now().Before(guard) {
		runtime.Gosched()
		n = runtime.NumGoroutine()
	}
	require.LessOrEqual(t, n, before, "goroutines left behind")
}

// A mismatch is persistent only when the re-check finds the same items
// differing in the same way; a difference on other items, or of another
// kind, is what a write made just before the re-check leaves under steady
// writes, and makes the first one transient. The comparisons are fakes:
// each returns its first result, then its re-check's.
func TestShadowsRecheckSameItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	missing := func(keys ...string) *Mismatch {
		return &Mismatch{Kind: MismatchMissing, Keys: keys, Detail: "lacks items"}
	}
	cases := []struct {
		name      string
		first     *Mismatch
		again     *Mismatch
		persisted []string // the keys reported, nil for transient
	}{
		{"the same item missing", missing("k1"), missing("k1"), []string{"k1"}},
		{"another item missing: a write in the lag before the re-check", missing("k1"), missing("k2"), nil},
		{"one item still missing, beside a new write", missing("k1", "k2"), missing("k2", "k3"), []string{"k2"}},
		{"the same item, another kind", &Mismatch{Kind: MismatchExtra, Keys: []string{"k1"}}, missing("k1"), nil},
		{"the same item differing", &Mismatch{Kind: MismatchExtra, Keys: []string{"k1"}}, &Mismatch{Kind: MismatchExtra, Keys: []string{"k1"}}, []string{"k1"}},
		{"the same two items out of order", &Mismatch{Kind: MismatchOrder, Keys: []string{"k1", "k2"}}, &Mismatch{Kind: MismatchOrder, Keys: []string{"k1", "k2"}}, []string{"k1", "k2"}},
		{"other items out of order", &Mismatch{Kind: MismatchOrder, Keys: []string{"k1", "k2"}}, &Mismatch{Kind: MismatchOrder, Keys: []string{"k2", "k3"}}, nil},
		{"the same page boundary", &Mismatch{Kind: MismatchPageBoundary, Detail: "after the same 3 items"}, &Mismatch{Kind: MismatchPageBoundary, Detail: "after the same 3 items"}, []string{}},
		{"another page boundary", &Mismatch{Kind: MismatchPageBoundary, Detail: "after the same 3 items"}, &Mismatch{Kind: MismatchPageBoundary, Detail: "after the same 4 items"}, nil},
		{"a leaked tombstone, again", &Mismatch{Kind: MismatchTombstone, Keys: []string{"k9"}}, &Mismatch{Kind: MismatchTombstone, Keys: []string{"k9"}}, []string{"k9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var reported []Mismatch
			var mu sync.Mutex
			s := newShadows(t, ShadowOptions{Rate: 1, OnMismatch: func(m Mismatch) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, m)
			}})
			s.sleep = func(context.Context, time.Duration) error { return nil }
			s.ObserveRead(ctx, event(func(_ context.Context, recheck bool) (*Mismatch, error) {
				if recheck {
					return c.again, nil
				}
				return c.first, nil
			}))
			require.NoError(t, s.Wait(ctx))
			mu.Lock()
			defer mu.Unlock()
			if c.persisted == nil {
				assert.Equal(t, ShadowStats{Compared: 1, Transient: 1}, s.Stats())
				assert.Empty(t, reported)
				return
			}
			assert.Equal(t, ShadowStats{Compared: 1, Persistent: 1}, s.Stats())
			require.Len(t, reported, 1)
			assert.Equal(t, c.again.Kind, reported[0].Kind)
			assert.ElementsMatch(t, c.persisted, reported[0].Keys)
		})
	}
}

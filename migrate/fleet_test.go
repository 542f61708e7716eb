package migrate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFleet(t *testing.T, f kpFleet, clock *fakeClock, id string, optFns ...func(*FleetOptions)) *Fleet {
	t.Helper()
	o := FleetOptions{ControlTable: f.control, Instance: id, Version: "v-" + id, Heartbeat: time.Minute, Now: clock.Now}
	for _, fn := range optFns {
		fn(&o)
	}
	fl, err := NewFleet(f.c, o)
	require.NoError(t, err)
	return fl
}

func instanceIDs(in []Instance) []string {
	ids := make([]string, len(in))
	for i, x := range in {
		ids[i] = x.ID
	}
	return ids
}

// TestFleetView runs three instances on three model versions of one index
// (the GSI alone; the GSI declared with the index table kept and one
// partition routed to the table; the table declared with the GSI kept and
// every read routed to the table, shadowed), reads through each, and checks
// what the fleet view says: who keeps, serves and shadows which form, the
// served and admin reads per form, a crash that expires, a clean stop,
// stale routes, and the guards built on it.
func TestFleetView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	clock := &fakeClock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	f.seed(t, kpStep1{ID: "a", Team: "TEAM-1", Status: "open", Created: 1}, kpStep1{ID: "b", Team: "TEAM-7", Status: "open", Created: 2})

	// A: step 0, one form (the GSI).
	a := newFleet(t, f, clock, "a")
	require.NoError(t, Register(a, f.s0))
	// B: step 1, the index table kept; TEAM-7 read from the table.
	rb, err := NewRouter(f.c, RouterOptions{ControlTable: f.control, Tables: []string{"kp-tickets"}})
	require.NoError(t, err)
	require.NoError(t, SetRoute(ctx, rb, f.s1, "by_status", Route{To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}}))
	b := newFleet(t, f, clock, "b", func(o *FleetOptions) { o.Router = rb })
	tb, err := ddbindex.New[kpStep1](f.c, f.opts, func(o *ddbindex.Options) { o.Router, o.Observer = rb, b })
	require.NoError(t, err)
	require.NoError(t, Register(b, tb))
	// C: step 2, the table declared, the GSI kept, every read to the table,
	// shadowed.
	routesC := Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Percent: 100}}
	sc := newShadows(t, ShadowOptions{Rate: 1})
	c := newFleet(t, f, clock, "c", func(o *FleetOptions) { o.Router, o.Shadows = routesC, sc })
	tc, err := ddbindex.New[kpStep2](f.c, f.opts, func(o *ddbindex.Options) { o.Router, o.Observer = routesC, c })
	require.NoError(t, err)
	require.NoError(t, Register(c, tc))

	for _, team := range []string{"TEAM-1", "TEAM-7", "TEAM-7"} {
		_, err := tb.Query("by_status", team).Page(ctx)
		require.NoError(t, err)
	}
	_, err = tb.Query("by_status", "TEAM-1").Via(ddbindex.IndexTable).Page(ctx) // an admin read
	require.NoError(t, err)
	_, err = tc.Query("by_status", "TEAM-1").Page(ctx)
	require.NoError(t, err)
	require.NoError(t, sc.Wait(ctx))
	require.Equal(t, int64(1), sc.Stats().Compared, "C's read was shadowed")

	clock.add(time.Second)
	require.NoError(t, rb.Refresh(ctx))
	for _, fl := range []*Fleet{a, b, c} {
		require.NoError(t, fl.Flush(ctx))
	}
	st, err := ReadFleet(ctx, f.c, f.control, clock.Now())
	require.NoError(t, err)
	require.Empty(t, st.Problems)
	require.Equal(t, []string{"a", "b", "c"}, instanceIDs(st.Live()))
	byID := map[string]Instance{}
	for _, in := range st.Instances {
		byID[in.ID] = in
	}
	require.Equal(t, "v-b", byID["b"].Version)
	fp := map[string]bool{}
	for _, id := range []string{"a", "b", "c"} {
		require.Len(t, byID[id].Tables, 1)
		require.Equal(t, "kp-tickets", byID[id].Tables[0].Table)
		fp[byID[id].Tables[0].Fingerprint] = true
	}
	require.Len(t, fp, 3, "three model versions, three fingerprints")
	ix := func(id string) IndexState { return byID[id].Tables[0].Indexes[0] }
	require.Equal(t, IndexState{Index: "by_status", Keeps: []ddbindex.Kind{ddbindex.GSI}, Serves: []ddbindex.Kind{ddbindex.GSI}}, ix("a"))
	require.Equal(t, IndexState{Index: "by_status", Keeps: []ddbindex.Kind{ddbindex.GSI, ddbindex.IndexTable}, Serves: []ddbindex.Kind{ddbindex.GSI, ddbindex.IndexTable}}, ix("b"))
	require.Equal(t, IndexState{Index: "by_status", Keeps: []ddbindex.Kind{ddbindex.IndexTable, ddbindex.GSI},
		Serves: []ddbindex.Kind{ddbindex.IndexTable}, Shadows: []ddbindex.Kind{ddbindex.GSI}}, ix("c"))
	require.False(t, byID["b"].RoutesRead.IsZero(), "B's Router read the routes")
	require.Empty(t, byID["b"].RouteError)
	require.True(t, byID["a"].RoutesRead.IsZero(), "A has no Router")

	// Reads: B served TEAM-1 from the GSI and TEAM-7 twice from the table,
	// plus one admin read of the table; C one served read of the table. A
	// keeps one form: its reads are not observed.
	served := st.Served("kp-tickets", "by_status", clock.Now().Add(-time.Hour))
	require.Equal(t, map[ddbindex.Kind]int64{ddbindex.GSI: 1, ddbindex.IndexTable: 3}, served)
	var admin int64
	for _, w := range byID["b"].Windows {
		for _, r := range w.Reads {
			admin += r.Admin
		}
	}
	require.Equal(t, int64(1), admin, "the Via read counts as admin, not served")

	// Guards.
	require.Equal(t, []string{"a"}, instanceIDs(st.Lacking("kp-tickets", "by_status", ddbindex.IndexTable)), "A does not keep the index table")
	require.Equal(t, []string{"a", "b", "c"}, instanceIDs(st.Using("kp-tickets", "by_status", ddbindex.GSI)), "A and B serve the GSI, C shadows it")
	err = st.CheckDrop("kp-tickets", "by_status", ddbindex.GSI, time.Hour)
	require.ErrorIs(t, err, ddbindex.ErrConflict)
	for _, want := range []string{"live instance a", "live instance b", "live instance c (version v-c) shadows", "less than the quiet period"} {
		require.ErrorContains(t, err, want)
	}

	// A crashes (writes no more heartbeats) and expires; C stops cleanly;
	// B routes every partition to the table.
	require.NoError(t, c.Close(ctx))
	require.NoError(t, sc.Close(ctx))
	require.NoError(t, SetRoute(ctx, rb, f.s1, "by_status", Route{To: ddbindex.IndexTable, Percent: 100}))
	clock.add(2 * time.Minute)
	require.NoError(t, b.Flush(ctx))
	st, err = ReadFleet(ctx, f.c, f.control, clock.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, instanceIDs(st.Live()), "A is live until its expiry (3 heartbeats)")
	clock.add(2 * time.Minute)
	require.NoError(t, b.Flush(ctx))
	st, err = ReadFleet(ctx, f.c, f.control, clock.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, instanceIDs(st.Live()), "A expired, C stopped")
	require.Len(t, st.Instances, 3, "expired and stopped entries stay in the view")
	require.Empty(t, st.Using("kp-tickets", "by_status", ddbindex.GSI), "nobody serves or shadows the GSI now")
	err = st.CheckDrop("kp-tickets", "by_status", ddbindex.GSI, time.Hour)
	require.ErrorContains(t, err, "less than the quiet period", "B served a GSI read, and A served it until it crashed, within the hour")
	require.NoError(t, st.CheckDrop("kp-tickets", "by_status", ddbindex.GSI, 3*time.Minute), "quiet for 3 minutes: A's last heartbeat plus its interval is 4 minutes ago")

	// Stale routes: a route set after B's Router last read is reported.
	other, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	require.NoError(t, rb.Refresh(ctx))
	require.NoError(t, b.Flush(ctx))
	st, err = ReadFleet(ctx, f.c, f.control, clock.Now())
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(st.Instances, func(in Instance) bool { return in.StaleRoutes }))
	require.NoError(t, SetRoute(ctx, other, f.s1, "by_status", Route{To: ddbindex.GSI, Percent: 100}))
	st, err = ReadFleet(ctx, f.c, f.control, clock.Now())
	require.NoError(t, err)
	i := slices.IndexFunc(st.Instances, func(in Instance) bool { return in.ID == "b" })
	require.True(t, st.Instances[i].StaleRoutes, "B has not read the route set since its last refresh")
}

// TestFleetStartClose: Start writes the entry at once and every heartbeat,
// Close stops the goroutine and writes the entry a last time, stopped.
func TestFleetStartClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ctl := &fakeControl{}
	clock := &fakeClock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	fl, err := NewFleet(ctl, FleetOptions{ControlTable: "control", Instance: "i", Now: clock.Now})
	require.NoError(t, err)
	slept := make(chan time.Duration)
	step := make(chan struct{})
	fl.sleep = gatedSleep(slept, step)
	require.NoError(t, fl.Start(ctx))
	require.Equal(t, time.Minute, <-slept, "the first heartbeat is written, then it waits a heartbeat")
	require.Equal(t, int32(1), ctl.puts.Load())
	step <- struct{}{}
	require.Equal(t, time.Minute, <-slept)
	require.Equal(t, int32(2), ctl.puts.Load())
	require.ErrorIs(t, fl.Start(ctx), ddbindex.ErrInvalidQuery, "a Fleet starts once")
	require.NoError(t, fl.Close(ctx))
	require.Equal(t, int32(3), ctl.puts.Load(), "Close writes the entry a last time")
	require.NoError(t, fl.Close(ctx))
	require.Equal(t, int32(3), ctl.puts.Load(), "a second Close writes nothing")
	st, err := ReadFleet(ctx, ctl, "control", clock.Now())
	require.NoError(t, err)
	require.Len(t, st.Instances, 1)
	require.True(t, st.Instances[0].Stopped)
	require.Empty(t, st.Live())
}

// TestFleetRefusals: options and entries that do not fit are refused with
// coded errors; a malformed entry is reported, not fatal to the view.
func TestFleetRefusals(t *testing.T) {
	t.Parallel()
	ctl := &fakeControl{}
	for name, o := range map[string]FleetOptions{
		"no control table":   {},
		"negative heartbeat": {ControlTable: "c", Heartbeat: -1},
		"expiry too short":   {ControlTable: "c", Heartbeat: time.Minute, Expiry: time.Minute},
		"negative windows":   {ControlTable: "c", Windows: -1},
		"nil client option":  {ControlTable: "c", ClientOptions: []func(*dynamodb.Options){nil}},
	} {
		_, err := NewFleet(ctl, o)
		require.ErrorIs(t, err, ddbindex.ErrDeclaration, name)
	}
	_, err := NewFleet(nil, FleetOptions{ControlTable: "c"})
	require.ErrorIs(t, err, ddbindex.ErrDeclaration)
	var zero *Fleet
	require.ErrorIs(t, Register[kpStep1](zero, nil), ddbindex.ErrInvalidQuery)
	require.ErrorIs(t, zero.Flush(context.Background()), ddbindex.ErrInvalidQuery)
	require.NoError(t, zero.Close(context.Background()))
	zero.ObserveRead(context.Background(), ddbindex.ReadEvent{}) // no panic

	_, err = ctl.PutItem(context.Background(), &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{controlPK: avS(fleetPK), controlSK: avS("bad")}})
	require.NoError(t, err)
	st, err := ReadFleet(context.Background(), ctl, "control", time.Time{})
	require.NoError(t, err)
	require.Len(t, st.Problems, 1)
	require.Contains(t, st.Problems[0], "fleet entry bad")
	_, err = ReadFleet(context.Background(), nil, "control", time.Time{})
	require.True(t, errors.Is(err, ddbindex.ErrInvalidQuery))
}

// TestShadowsFollowControlTable: with ShadowOptions.Router, the shadow rate
// of an index comes from the control table (SetShadow, no deploy), and an
// index table is compared only once the control table records that its
// backfill finished (Backfill with DynamoDBCheckpoints records it).
func TestShadowsFollowControlTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	f.seed(t, kpStep1{ID: "a", Team: "T", Status: "open", Created: 1})
	r, err := NewRouter(f.c, RouterOptions{ControlTable: f.control, Tables: []string{"kp-tickets"}})
	require.NoError(t, err)
	s := newShadows(t, ShadowOptions{Router: r}) // Rate 0: only the control table's rates shadow
	tb := f.table(t, func(o *ddbindex.Options) { o.Router, o.Observer = r, s })
	read := func() ShadowStats {
		t.Helper()
		_, err := tb.Query("by_status", "T").Page(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Wait(ctx))
		return s.Stats()
	}
	require.Equal(t, ShadowStats{}, read(), "no rate anywhere: nothing is shadowed")

	// An operator switches shadows on from another process.
	op, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	require.NoError(t, SetShadow(ctx, op, f.s1, "by_status", 1))
	require.Equal(t, ShadowStats{}, read(), "the instance has not refreshed yet")
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ShadowStats{Waiting: 1}, read(), "the index table's backfill has not finished: not compared")

	_, err = Backfill(ctx, f.s1, f.c, "by_status", func(o *BackfillOptions) {
		o.Checkpoint = &DynamoDBCheckpoints{Client: f.c, Table: f.control}
	})
	require.NoError(t, err)
	rates, ready, err := op.ShadowRates(ctx, "kp-tickets")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"by_status": 1}, rates)
	require.Equal(t, map[string][]ddbindex.Kind{"by_status": {ddbindex.IndexTable}}, ready, "the backfill recorded its end")
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ShadowStats{Waiting: 1, Compared: 1, Equal: 1}, read())

	require.NoError(t, SetShadow(ctx, op, f.s1, "by_status", 0))
	require.NoError(t, r.Refresh(ctx))
	require.Equal(t, ShadowStats{Waiting: 1, Compared: 1, Equal: 1}, read(), "switched off at run time")

	require.ErrorIs(t, SetShadow(ctx, op, f.s1, "by_status", 1.5), ddbindex.ErrInvalidQuery)
	require.ErrorIs(t, SetShadow(ctx, op, f.s0, "by_status", 1), ddbindex.ErrInvalidQuery, "one form: nothing to compare")
}

// TestBackfillSplitRecordsItsEndOnce: a backfill split across two calls (two
// processes) records its end only when the last segment is done.
func TestBackfillSplitRecordsItsEndOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	f.seed(t, kpStep1{ID: "a", Team: "T", Status: "open", Created: 1}, kpStep1{ID: "b", Team: "U", Status: "open", Created: 2})
	r, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	part := func(seg int32) {
		t.Helper()
		_, err := Backfill(ctx, f.s1, f.c, "by_status", func(o *BackfillOptions) {
			o.Segment, o.TotalSegments = seg, 2
			o.Checkpoint = &DynamoDBCheckpoints{Client: f.c, Table: f.control}
		})
		require.NoError(t, err)
	}
	part(1)
	_, ready, err := r.ShadowRates(ctx, "kp-tickets")
	require.NoError(t, err)
	require.Empty(t, ready, "segment 0 is still to do")
	part(0)
	_, ready, err = r.ShadowRates(ctx, "kp-tickets")
	require.NoError(t, err)
	require.Equal(t, map[string][]ddbindex.Kind{"by_status": {ddbindex.IndexTable}}, ready)
}

// TestForgetBackfill: ForgetBackfill forgets a finished backfill, its
// record and its positions, so that the next Backfill of the form scans
// every segment again and records its end anew; it refuses a form the
// index does not keep before any request.
func TestForgetBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newKPFleet(t)
	f.seed(t, kpStep1{ID: "a", Team: "T", Status: "open", Created: 1}, kpStep1{ID: "b", Team: "U", Status: "open", Created: 2})
	r, err := NewRouter(f.c, RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	store := &DynamoDBCheckpoints{Client: f.c, Table: f.control}
	backfill := func() BackfillStats {
		t.Helper()
		st, err := Backfill(ctx, f.s1, f.c, "by_status", func(o *BackfillOptions) { o.Checkpoint = store })
		require.NoError(t, err)
		return st
	}
	ready := func() map[string][]ddbindex.Kind {
		t.Helper()
		_, ready, err := r.ShadowRates(ctx, "kp-tickets")
		require.NoError(t, err)
		return ready
	}
	require.Equal(t, 2, backfill().Scanned)
	require.Equal(t, map[string][]ddbindex.Kind{"by_status": {ddbindex.IndexTable}}, ready())
	require.Equal(t, BackfillStats{AlreadyDone: 1}, backfill(), "finished: a second call scans nothing")

	require.NoError(t, ForgetBackfill(ctx, store, f.s1, "by_status", ddbindex.IndexTable))
	require.Empty(t, ready(), "the record that it finished is gone")
	st := backfill()
	require.Equal(t, 2, st.Scanned, "every segment is scanned again")
	require.Zero(t, st.AlreadyDone)
	require.Equal(t, map[string][]ddbindex.Kind{"by_status": {ddbindex.IndexTable}}, ready(), "and its end recorded anew")

	require.ErrorIs(t, ForgetBackfill(ctx, store, f.s0, "by_status", ddbindex.IndexTable), ddbindex.ErrInvalidWrite, "a form the index does not keep")
	require.ErrorIs(t, ForgetBackfill(ctx, store, f.s1, "nope", ddbindex.IndexTable), ddbindex.ErrInvalidWrite)
	require.ErrorIs(t, ForgetBackfill(ctx, nil, f.s1, "by_status", ddbindex.IndexTable), ddbindex.ErrInvalidWrite)
	require.Equal(t, map[string][]ddbindex.Kind{"by_status": {ddbindex.IndexTable}}, ready(), "refusals change nothing")
}

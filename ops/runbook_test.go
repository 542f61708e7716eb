package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/ops"
)

// TestRunbookGuideCommands runs the commands of docs/runbook.md in order,
// against a fleet of three Tables on three model versions (the GSI alone;
// the GSI declared, the index table kept; the table declared, the GSI kept),
// each with its migrate.Fleet, and checks every read they make against the
// truth: backfill refused while the oldest instance is live, then run;
// shadows switched on at run time; one tenant routed, verified, widened; a
// rollback to the GSI and forward again; shadows off; the drop refused while
// the GSI served a read within the quiet period, then made.
func TestRunbookGuideCommands(t *testing.T) {
	t.Parallel()
	// prepare enables the stream and TTL of the index table, drop deletes
	// a GSI of an existing table.
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := context.Background()
	f, _ := ticketFixture(t)
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return at }
	f.now = clock
	team1 := 0 // TEAM-1's tickets: the truth every read is checked against
	for _, tk := range testTickets() {
		if tk.Team == "TEAM-1" {
			team1++
		}
	}
	prefixed := func(o *ddbindex.Options) { o.TableName = func(s string) string { return f.prefix + s } }
	newRouter := func() *migrate.Router {
		r, err := migrate.NewRouter(f.client, migrate.RouterOptions{ControlTable: f.control, Tables: []string{"tickets"}})
		require.NoError(t, err)
		return r
	}
	type instance struct {
		fleet   *migrate.Fleet
		router  *migrate.Router
		shadows *migrate.Shadows
		read    func() (int, ddbindex.Kind)
	}
	mk := func(id string, tb func(r *migrate.Router, obs ddbindex.ReadObserver) (reader, error)) *instance {
		in := &instance{router: newRouter()}
		var err error
		in.shadows, err = migrate.NewShadows(migrate.ShadowOptions{Router: in.router})
		require.NoError(t, err)
		in.fleet, err = migrate.NewFleet(f.client, migrate.FleetOptions{ControlTable: f.control, Instance: id, Version: id,
			Router: in.router, Shadows: in.shadows, Now: clock})
		require.NoError(t, err)
		rd, err := tb(in.router, in.fleet)
		require.NoError(t, err)
		require.NoError(t, rd.register(in.fleet))
		in.read = func() (int, ddbindex.Kind) {
			n, k, err := rd.read(ctx)
			require.NoError(t, err)
			require.NoError(t, in.shadows.Wait(ctx))
			return n, k
		}
		t.Cleanup(func() { _ = in.shadows.Close(context.Background()) })
		return in
	}
	v0 := mk("v0", func(r *migrate.Router, obs ddbindex.ReadObserver) (reader, error) {
		return newReader[TicketV0](f, prefixed, r, obs)
	})
	v1 := mk("v1", func(r *migrate.Router, obs ddbindex.ReadObserver) (reader, error) {
		return newReader[Ticket](f, prefixed, r, obs)
	})
	fleets := []*instance{v0, v1}
	sync := func() {
		t.Helper()
		for _, in := range fleets {
			require.NoError(t, in.router.Refresh(ctx))
			n, _ := in.read()
			require.Equal(t, team1, n, "every read returns the truth")
			require.NoError(t, in.fleet.Flush(ctx))
		}
	}
	run := func(want int, args ...string) result {
		t.Helper()
		r := f.run("", args...)
		require.Equal(t, want, r.code, "%v\n%s%s", args, r.stdout, r.stderr)
		return r
	}
	sync()

	// Step 1: keep the index table too.
	f.models = []ops.ModelDef{ops.Model[Ticket]()}
	run(0, "prepare")
	run(0, "rollout", "status")
	r := run(2, "backfill", "--index", "by_status")
	require.Contains(t, r.stderr, "live instance v0 (version v0) does not keep the table")
	require.NoError(t, v0.fleet.Close(ctx)) // v0's last instance is replaced by v1
	fleets = []*instance{v1}
	run(0, "backfill", "--index", "by_status")

	// Step 2: shadows on, one tenant, compare, widen.
	run(0, "shadow", "set", "--index", "by_status", "--rate", "1")
	run(0, "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1")
	sync()
	_, form := v1.read()
	require.Equal(t, ddbindex.IndexTable, form, "TEAM-1 reads the table")
	st := v1.shadows.Stats()
	require.Positive(t, st.Compared, "the GSI is compared with the table, whose backfill finished")
	require.Zero(t, st.Persistent)
	require.Zero(t, st.Waiting)
	run(0, "verify", "--index", "by_status", "--partition", "TEAM-1")
	run(0, "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	r = run(0, "rollout", "status")
	require.Contains(t, r.stdout, "STALE", "v1 has not read the widened route yet")
	sync()
	r = run(0, "rollout", "status")
	require.NotContains(t, r.stdout, "STALE")
	require.Contains(t, r.stdout, "v1 (model Ticket")
	require.Contains(t, r.stdout, "serves table; shadows gsi")

	// A rollback, and forward again.
	run(0, "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	sync()
	_, form = v1.read()
	require.Equal(t, ddbindex.GSI, form, "rolled back: the GSI serves")
	run(0, "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")

	// Step 3: the table declared, the GSI kept.
	v2 := mk("v2", func(r *migrate.Router, obs ddbindex.ReadObserver) (reader, error) {
		return newReader[TicketV2](f, prefixed, r, obs)
	})
	fleets = []*instance{v1, v2}
	sync()
	for _, in := range fleets {
		_, form := in.read()
		require.Equal(t, ddbindex.IndexTable, form)
	}
	r = run(0, "rollout", "status", "--window", "24h")
	require.Contains(t, r.stdout, "served reads, last 24h0m0s:")
	require.Contains(t, r.stdout, "last served read: gsi ", "the step's gate: how long ago the GSI served its last read")

	// Step 4: shadows off, then the guarded drop.
	f.models = []ops.ModelDef{ops.Model[TicketV2]()}
	run(0, "shadow", "set", "--index", "by_status", "--rate", "0")
	sync()
	r = run(2, "drop", "--index", "by_status", "--form", "gsi", "--quiet-for", "1h")
	require.Contains(t, r.stderr, "less than the quiet period", "the rollback's GSI reads are within the hour")
	require.NotContains(t, r.stderr, "live instance", "no instance serves or shadows the GSI any more")
	at = at.Add(2 * time.Hour)
	sync()
	run(0, "drop", "--index", "by_status", "--form", "gsi", "--quiet-for", "1h")
	require.Empty(t, describeGSIs(t, f), "the GSI is gone")
	// v2 reads on; v1 is replaced by the step-4 declaration next.
	n, form := v2.read()
	require.Equal(t, team1, n)
	require.Equal(t, ddbindex.IndexTable, form)
}

// reader is an instance's Table, whatever its model version: a read of
// TEAM-1's tickets, and its registration in a Fleet.
type reader interface {
	read(ctx context.Context) (int, ddbindex.Kind, error)
	register(f *migrate.Fleet) error
}

type readerOf[T any] struct{ t *ddbindex.Table[T] }

func newReader[T any](f *fixture, prefixed func(*ddbindex.Options), r *migrate.Router, obs ddbindex.ReadObserver) (reader, error) {
	tb, err := ddbindex.New[T](f.client, prefixed, func(o *ddbindex.Options) { o.Router, o.Observer = r, obs })
	return readerOf[T]{tb}, err
}

func (x readerOf[T]) read(ctx context.Context) (int, ddbindex.Kind, error) {
	q := x.t.Query("by_status", "TEAM-1")
	e, err := q.Explain()
	if err != nil {
		return 0, 0, err
	}
	p, err := q.Page(ctx)
	if err != nil {
		return 0, 0, err
	}
	return len(p.Items), e.Request.Kind, nil
}

func (x readerOf[T]) register(f *migrate.Fleet) error { return migrate.Register(f, x.t) }

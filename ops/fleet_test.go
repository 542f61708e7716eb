package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/ops"
)

// TicketV0 is Ticket's model before the migration: the GSI alone.
type TicketV0 struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Prio   int                `dynamodbav:"prio"   ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

// TestGoldenFleetGuards: with an instance of the model before the migration
// live in the fleet view, backfill and route set refuse (nothing written),
// rollout status says who keeps and serves what; once it has stopped, they
// go on; drop refuses the declared type and a form read within the quiet
// period.
func TestGoldenFleetGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, tickets := ticketFixture(t)
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return at }
	clock := func() time.Time { return at }
	newFleet := func(id string) *migrate.Fleet {
		fl, err := migrate.NewFleet(f.client, migrate.FleetOptions{ControlTable: f.control, Instance: id, Version: id, Now: clock})
		require.NoError(t, err)
		return fl
	}
	old := newFleet("old-1")
	v0, err := ddbindex.New[TicketV0](f.client, func(o *ddbindex.Options) { o.TableName = func(s string) string { return f.prefix + s } })
	require.NoError(t, err)
	require.NoError(t, migrate.Register(old, v0))
	cur := newFleet("new-build-17")
	reader, err := ddbindex.New[Ticket](f.client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return f.prefix + s }
		o.Observer = cur
	})
	require.NoError(t, err)
	require.NoError(t, migrate.Register(cur, reader))
	_, err = reader.Query("by_status", "TEAM-1").Page(ctx)
	require.NoError(t, err)
	require.NoError(t, old.Flush(ctx))
	require.NoError(t, cur.Flush(ctx))

	f.golden(t, "rollout-status-mixed", "", "rollout", "status")
	f.golden(t, "refused-backfill-fleet", "", "backfill", "--index", "by_status")
	f.golden(t, "refused-route-set-fleet", "", "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1")
	f.golden(t, "refused-drop-declared", "", "drop", "--index", "by_status", "--form", "gsi")
	r := f.run("", "route")
	require.Contains(t, r.stdout, "no route", "the refused route set wrote nothing")

	// The old instance stops: the backfill and the route go on.
	require.NoError(t, old.Close(ctx))
	r = f.run("", "backfill", "--index", "by_status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	r = f.run("", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	f.golden(t, "shadow-set", "", "shadow", "set", "--index", "by_status", "--rate", "0.25")
	f.golden(t, "usage-shadow-set-rate", "", "shadow", "set", "--index", "by_status", "--rate", "2")

	// Under a model that declares the table and keeps the GSI, the GSI may
	// not go: the current instance serves it, and served a read from it a
	// moment ago.
	models := f.models
	f.models = []ops.ModelDef{ops.Model[TicketV2]()}
	f.golden(t, "refused-drop-in-use", "", "drop", "--index", "by_status", "--form", "gsi", "--quiet-for", "1h")
	require.NotEmpty(t, describeGSIs(t, f), "the GSI is still there")
	// The kept index table: no instance serves or shadows it (the current
	// one has no Router), and nothing read it.
	f.models = models
	f.golden(t, "drop-unused-kept-form", "", "drop", "--index", "by_status", "--form", "table", "--quiet-for", "1h")
	_ = tickets
}

// TicketV2 is Ticket's model at the migration's third step: the index table
// declared, the GSI kept.
type TicketV2 struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Prio   int                `dynamodbav:"prio"   ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

// describeGSIs returns the names of the tickets table's GSIs.
func describeGSIs(t *testing.T, f *fixture) []string {
	t.Helper()
	out, err := f.client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(f.prefix + "tickets")})
	require.NoError(t, err)
	var names []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		names = append(names, aws.ToString(g.IndexName))
	}
	return names
}

// TicketV4 is Ticket's model once the migration ended: the index table
// alone, no GSI key kept.
type TicketV4 struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Prio   int                `dynamodbav:"prio"   ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

// TestDropForgetsBackfill: drop forgets the dropped form's backfill, so
// that the form, created again, is not taken as filled. A GSI backfilled
// at step 3 (which lets a route to it go without --force) is dropped, an
// item is written without its keys meanwhile, and the GSI is added again:
// route set refuses it until a backfill, which scans every item again
// instead of taking its old segments as done, and writes the item's keys.
func TestDropForgetsBackfill(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	ddbtest.Require(t, ddbtest.GSIUpdate)
	f, _ := ticketFixture(t)
	f.models = []ops.ModelDef{ops.Model[TicketV2]()}
	run := func(want int, args ...string) result {
		t.Helper()
		r := f.run("", args...)
		require.Equal(t, want, r.code, "%v\n%s%s", args, r.stdout, r.stderr)
		return r
	}
	// The GSI is the kept form: no backfill of it is recorded.
	r := run(2, "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Contains(t, r.stderr, "records no finished backfill of the gsi")
	r = run(0, "backfill", "--index", "by_status")
	require.Contains(t, r.stdout, "12 scanned, 0 written")
	run(0, "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")

	run(0, "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	run(0, "drop", "--index", "by_status", "--form", "gsi", "--force")
	require.Empty(t, describeGSIs(t, f))
	v4, err := ddbindex.New[TicketV4](f.client, func(o *ddbindex.Options) { o.TableName = func(s string) string { return f.prefix + s } })
	require.NoError(t, err)
	_, err = v4.Put(t.Context(), TicketV4{ID: "t-new", Team: "TEAM-1", Status: "open", Prio: 1})
	require.NoError(t, err)

	// The way back: the GSI is added again, without the new item.
	run(0, "prepare")
	require.NotEmpty(t, describeGSIs(t, f))
	r = run(2, "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	require.Contains(t, r.stderr, "records no finished backfill of the gsi", "the dropped GSI's backfill is forgotten")
	r = run(0, "backfill", "--index", "by_status")
	require.Contains(t, r.stdout, "13 scanned, 1 written", "every item is scanned again")
	require.NotContains(t, r.stdout, "already done")
	run(0, "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
}

// TestRolloutStatusServedForms: rollout status counts the reads of every
// form the fleet served, those of a form the command's model no longer
// keeps too (a step-4 command looking at a step-3 fleet), each share of one
// total; and it does not report 0 reads for an index of one form, whose
// reads are not observed.
func TestRolloutStatusServedForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := ticketFixture(t)
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return at }
	fl, err := migrate.NewFleet(f.client, migrate.FleetOptions{ControlTable: f.control, Instance: "v1", Version: "v1", Now: f.now})
	require.NoError(t, err)
	v1, err := ddbindex.New[Ticket](f.client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return f.prefix + s }
		o.Observer = fl
	})
	require.NoError(t, err)
	require.NoError(t, migrate.Register(fl, v1))
	for range 3 {
		_, err = v1.Query("by_status", "TEAM-1").Page(ctx) // the declared GSI
		require.NoError(t, err)
	}
	require.NoError(t, fl.Flush(ctx))

	f.models = []ops.ModelDef{ops.Model[TicketV4]()}
	r := f.run("", "rollout", "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "served reads, last 1h0m0s: table 0 (0%), gsi 3 (100%; a form this model does not keep)\n")
	require.Contains(t, r.stdout, "last served read: table never, gsi 0s ago\n")

	require.NoError(t, fl.Close(ctx))
	f2, _ := ticketFixture(t)
	f2.now = f.now
	v0fl, err := migrate.NewFleet(f2.client, migrate.FleetOptions{ControlTable: f2.control, Instance: "v0", Version: "v0", Now: f.now})
	require.NoError(t, err)
	v0, err := ddbindex.New[TicketV0](f2.client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return f2.prefix + s }
		o.Observer = v0fl
	})
	require.NoError(t, err)
	require.NoError(t, migrate.Register(v0fl, v0))
	_, err = v0.Query("by_status", "TEAM-1").Page(ctx)
	require.NoError(t, err)
	require.NoError(t, v0fl.Flush(ctx))
	f2.models = []ops.ModelDef{ops.Model[TicketV0]()}
	r = f2.run("", "rollout", "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "served reads, last 1h0m0s: not counted (an index of one form; every live instance serves its gsi)\n")
	require.Contains(t, r.stdout, "last served read: gsi 0s ago\n")
}

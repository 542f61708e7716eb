package ops_test

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/ops"
	"github.com/ddbindex/ddbindex/schema"
)

// ticketFixture is a fixture whose Ticket tables exist (without a stream or
// TTL, which every server can make) and hold testTickets, backfilled into
// nothing yet; the control table too.
func ticketFixture(t *testing.T, optFns ...func(*ddbindex.Options)) (*fixture, *ddbindex.Table[Ticket]) {
	t.Helper()
	f := newFixture(t)
	f.models = []ops.ModelDef{ops.Model[Ticket](optFns...)}
	tickets := f.ticketTable(t)
	ctx := t.Context()
	require.NoError(t, schema.CreateTables(ctx, tickets, f.client, func(o *schema.CreateOptions) { o.NoStream, o.NoTTL = true, true }))
	_, err := f.client.CreateTable(ctx, schema.ControlTableInput(f.control))
	require.NoError(t, err)
	ddbtest.WaitActive(t, f.client, f.control)
	for _, tk := range testTickets() {
		_, err := tickets.Put(ctx, tk)
		require.NoError(t, err)
	}
	return f, tickets
}

var statsLine = regexp.MustCompile(`(\d+) scanned, (\d+) written, (\d+) skipped`)

// backfilled reads the scanned, written and skipped counts a backfill
// printed.
func backfilled(t *testing.T, r result) (scanned, written, skipped int) {
	t.Helper()
	m := statsLine.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "backfill prints its counts: %s%s", r.stdout, r.stderr)
	n := make([]int, 3)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return n[0], n[1], n[2]
}

// TestBackfillMissingTableSaysRestart: a backfill whose index table is gone
// stops with exit 2 and does not offer to resume from saved positions,
// which would skip what the lost table held: it says to create the table
// and start over.
func TestBackfillMissingTableSaysRestart(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	ddbtest.DeleteTable(t, f.client, f.prefix+"tickets-by_status")
	r := f.run("", "backfill", "--index", "by_status")
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "does not exist; create it (prepare), then run the backfill again with --restart")
	require.NotContains(t, r.stderr, "resumes it")
}

// TestBackfillSegmentsAndResume splits a backfill as two processes would
// (segments 0-1 and 2-3 of 4), and runs the whole scan after the first: it
// resumes, scanning only the segments not done. A backfill whose context
// is canceled stops with exit 2 and says how to resume.
func TestBackfillSegmentsAndResume(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	r := f.run("", "backfill", "--index", "by_status", "--total-segments", "4", "--workers", "2", "--segment", "0", "--page-size", "2")
	require.Equal(t, 0, r.code, r.stderr)
	s0, w0, k0 := backfilled(t, r)
	require.Equal(t, s0, w0+k0, "every item scanned is written once")

	r = f.run("", "backfill", "--index", "by_status", "--total-segments", "4", "--workers", "4", "--page-size", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already done before this run: 2", "segments 0 and 1 are not scanned again")
	s1, w1, k1 := backfilled(t, r)
	require.Equal(t, len(testTickets()), s0+s1, "the two runs scan the table once between them")
	require.Equal(t, len(testTickets()), w0+w1+k0+k1)
	require.Len(t, ddbtest.Scan(t, f.client, f.prefix+"tickets-by_status"), len(testTickets()))

	// Another split cannot use the saved positions: the run scans from
	// the beginning and says which split would resume them.
	r = f.run("", "backfill", "--index", "by_status", "--workers", "3")
	require.Equal(t, 0, r.code, r.stderr)
	s2, _, _ := backfilled(t, r)
	require.Equal(t, len(testTickets()), s2)
	require.Contains(t, r.stdout, "saved positions of a scan in 4 segments were not used")
	require.Contains(t, r.stdout, "so its segments started from the beginning")
	require.Contains(t, r.stdout, "--total-segments 4")
	// The same split again: its own segments are done, and it says so
	// without claiming to have started them from the beginning.
	r = f.run("", "backfill", "--index", "by_status", "--workers", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already done before this run: 3")
	require.Contains(t, r.stdout, "saved positions of a scan in 4 segments were not used: this run splits the scan otherwise (resume those with --total-segments 4)\n")

	// Canceled: the backfill stops, and the command says the same command
	// resumes it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	code := ops.Run(ctx, []string{"ddbindex-ops", "--table-prefix", f.prefix, "--control-table", f.control, "backfill", "--index", "by_status"},
		strings.NewReader(""), &out, &errOut, f.models, func(o *ops.RunOptions) { o.Client = cancelOnScan{f.client, cancel} })
	require.Equal(t, 2, code)
	require.Contains(t, errOut.String(), "the same command resumes it")

	// Without a control table there is nowhere to save positions: the
	// backfill runs all the same and says so.
	r = f.run("", "backfill", "--index", "by_status", "--control-table", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "no control table")
	require.Contains(t, r.stdout, "12 scanned, 0 written, 12 skipped")
	r = f.run("", "backfill", "--index", "by_status", "--no-checkpoint", "--restart")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--restart forgets saved positions")
}

// TestBackfillProgressBar: on a terminal the backfill draws a progress bar
// on stderr; elsewhere stderr stays empty (TestGolden's backfills).
func TestBackfillProgressBar(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	f.terminal = true
	r := f.run("", "backfill", "--index", "by_status", "--workers", "2", "--page-size", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "backfill by_status")
	require.Contains(t, r.stderr, "items")
	require.Contains(t, r.stdout, "12 scanned, 12 written")
}

// TestGoldenSignedCursor: with the application's cursor keys (passed in
// ops.Model's options, as the application passes them to New), cursor
// inspect verifies signed cursors and refuses unsigned ones, saying why.
func TestGoldenSignedCursor(t *testing.T) {
	t.Parallel()
	keys := func(o *ddbindex.Options) { o.CursorKeys = [][]byte{[]byte("2026-key"), []byte("2025-key")} }
	f, plain := ticketFixture(t, keys)
	signed, err := ddbindex.New[Ticket](f.client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return f.prefix + s }
	}, keys)
	require.NoError(t, err)
	ctx := t.Context()
	// A first call learns the entries' size; the next reads the item after its page.
	_, err = signed.Query("by_status", "TEAM-2").Limit(2).Page(ctx)
	require.NoError(t, err)
	page, err := signed.Query("by_status", "TEAM-2").Limit(2).Page(ctx)
	require.NoError(t, err)
	f.golden(t, "cursor-inspect-signed", "", "cursor", "inspect", "--partition", "TEAM-2", "--", page.Cursor)
	unsigned, err := plain.Query("by_status", "TEAM-2").Limit(2).Page(ctx)
	require.NoError(t, err)
	f.golden(t, "cursor-inspect-unsigned", "", "cursor", "inspect", "--", unsigned.Cursor)
}

// TestConfigChain: without RunOptions.Client the command makes its client
// from the AWS configuration chain (here the environment's credentials and
// region), sending to --endpoint.
func TestConfigChain(t *testing.T) {
	ep := ddbtest.Endpoint()
	if ep == "" || ep == ddbtest.AWS {
		t.Skip("needs a local endpoint (DDBINDEX_ENDPOINT set to a URL; make test sets one)")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	prefix := ddbtest.Name(t, "") + "-"
	run := func(args ...string) result {
		var out, errOut bytes.Buffer
		code := ops.Run(t.Context(), append([]string{"ddbindex-ops"}, args...), strings.NewReader(""), &out, &errOut,
			[]ops.ModelDef{ops.Model[Note]()})
		return result{code, out.String(), errOut.String()}
	}
	r := run("--endpoint", ep, "--table-prefix", prefix, "check")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "table "+prefix+"notes does not exist", "the request reached the endpoint")

	r = run("--table-prefix", prefix, "--region", "eu-west-1", "check", "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "127.0.0.1:1", "--endpoint after the command counts too")

	// Without credentials the command says so, and what to set, before
	// any request (no instance metadata here: it is disabled).
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	r = run("--endpoint", ep, "--table-prefix", prefix, "check")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "no AWS credentials found")
	require.Contains(t, r.stderr, "a local server (--endpoint) accepts any, e.g. AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local")

	// A command that sends nothing needs no configuration at all.
	t.Setenv("AWS_PROFILE", "no-such-profile")
	r = run("cursor", "inspect", "not-a-cursor")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "refused by every index of Note")
}

// TestModelDefControlTable: the control table the application names in
// code (ModelDef.ControlTable) is the command's without --control-table:
// route set writes the route there; --control-table "" names none.
func TestModelDefControlTable(t *testing.T) {
	t.Parallel()
	f, _ := ticketFixture(t)
	control := f.control
	f.models = []ops.ModelDef{ops.Model[Ticket]().ControlTable(control)}
	f.control = "" // no --control-table
	r := f.run("", "backfill", "--index", "by_status")
	require.Equal(t, 0, r.code, r.stderr)
	r = f.run("", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	require.Equal(t, 0, r.code, r.stderr)
	router, err := migrate.NewRouter(f.client, migrate.RouterOptions{ControlTable: control})
	require.NoError(t, err)
	routes, err := router.Routes(t.Context(), "tickets")
	require.NoError(t, err)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.IndexTable, Percent: 100}}, routes)

	r = f.run("", "route", "show", "--control-table", "")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "has no control table to read routes from")
}

// cancelOnScan cancels the command's context when its first Scan is sent:
// an interrupt in the middle of a backfill.
type cancelOnScan struct {
	*dynamodb.Client
	cancel context.CancelFunc
}

func (c cancelOnScan) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.cancel()
	return c.Client.Scan(ctx, in, optFns...)
}

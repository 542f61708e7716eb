package ops_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/ops"
	"github.com/ddbindex/ddbindex/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with what the commands print")

// Ticket keeps its by_status index in two forms, in the middle of a
// migration from a GSI to an index table (kept from the stream).
type Ticket struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Prio   int                `dynamodbav:"prio"   ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

// TicketStep3 is Ticket a step later in its migration: the index table
// serves, and the GSI is kept.
type TicketStep3 struct {
	_      ddbindex.TableSpec `ddbindex:"tickets"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Prio   int                `dynamodbav:"prio"   ddbindex:"by_status.sk:1"`
	Title  string             `dynamodbav:"title"`
}

// Note has a GSI keyed by its own attributes: tables that every local
// server can create and check (no stream, no TTL).
type Note struct {
	_      ddbindex.TableSpec `ddbindex:"notes"`
	_      ddbindex.IndexSpec `ddbindex:"by_author,type=gsi"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Author string             `dynamodbav:"author" ddbindex:"by_author.pk"`
	Title  string             `dynamodbav:"title"  ddbindex:"by_author.sk"`
}

// NoteFlip moves Note's by_author GSI to an index table, under the logical
// name writer (as if Note had declared writer,type=gsi,name=by_author),
// without keeping the GSI: the plain flip.
type NoteFlip struct {
	_      ddbindex.TableSpec `ddbindex:"notes"`
	_      ddbindex.IndexSpec `ddbindex:"writer,type=table"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Author string             `dynamodbav:"author" ddbindex:"writer.pk"`
	Title  string             `dynamodbav:"title"  ddbindex:"writer.sk"`
}

// tickets are the test's data: three teams, open and closed, priorities
// 1 to 3.
func testTickets() []Ticket {
	var out []Ticket
	for i := range 12 {
		status := "open"
		if i%2 == 1 {
			status = "closed"
		}
		out = append(out, Ticket{ID: fmt.Sprintf("t-%02d", i), Team: fmt.Sprintf("TEAM-%d", i%3+1), Status: status,
			Prio: i%3 + 1, Title: fmt.Sprintf("ticket %d", i)})
	}
	return out
}

// fixture is one test's tables: every name starts with prefix, and the
// control table is prefix + "control". Every command it runs gets
// --table-prefix, and --control-table when control is set.
type fixture struct {
	client  *dynamodb.Client
	prefix  string
	control string
	models  []ops.ModelDef
	// api, when set, is the commands' client instead of client.
	api ops.Client
	// terminal is what RunOptions.Terminal answers.
	terminal bool
	// now, when set, is RunOptions.Now.
	now func() time.Time
	// sleep, when set, is RunOptions.Sleep; else the commands wait for
	// nothing (verify's re-check compares again at once).
	sleep func(ctx context.Context, d time.Duration) error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "") + "-"
	f := &fixture{client: c, prefix: prefix, control: prefix + "control",
		models: []ops.ModelDef{ops.Model[Ticket](), ops.Model[Note]()}}
	for _, name := range []string{f.control, prefix + "tickets", prefix + "tickets-by_status", prefix + "notes", prefix + "notes-writer"} {
		ddbtest.DeleteOnCleanup(t, c, name)
	}
	return f
}

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command with args and stdin.
func (f *fixture) run(stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	argv := []string{"ddbindex-ops", "--table-prefix", f.prefix}
	if f.control != "" {
		argv = append(argv, "--control-table", f.control)
	}
	code := ops.Run(context.Background(), append(argv, args...), strings.NewReader(stdin), &out, &errOut, f.models, func(o *ops.RunOptions) {
		switch {
		case f.api != nil:
			o.Client = f.api
		case f.client != nil:
			o.Client = f.client
		}
		o.Terminal = func() bool { return f.terminal }
		if f.now != nil {
			o.Now = f.now
		}
		o.Sleep = func(context.Context, time.Duration) error { return nil }
		if f.sleep != nil {
			o.Sleep = f.sleep
		}
	})
	return result{code, out.String(), errOut.String()}
}

// waitPoll matches a line of stderr that reports a poll of one of
// Prepare's waits still waiting ("Note: wait for table notes: table
// CREATING after 0s"): whether a server describes a new table or GSI as
// ACTIVE at the first poll depends on its timing, so transcripts leave
// these lines out (TestWritePrepareEvent checks how they read).
var waitPoll = regexp.MustCompile(`(?m)^[^:\n]+: wait for [^\n]* after [0-9][0-9.a-zµ]*\n`)

// TestWaitPollLines: transcripts drop the polls of waits, and nothing else.
func TestWaitPollLines(t *testing.T) {
	t.Parallel()
	in := "Note: wait for table p_control: table CREATING after 0s\n" +
		"Note: created table p_notes\n" +
		"Note: wait for GSI by_author (index by_author) on table p_notes: table UPDATING, GSI by_author CREATING (backfilling; 3 items when DynamoDB last counted) after 1m30s\n" +
		"error: wait for nothing after all\n"
	require.Equal(t, "Note: created table p_notes\nerror: wait for nothing after all\n", waitPoll.ReplaceAllString(in, ""))
}

// golden runs the command and compares its transcript (the command line,
// the exit code, stdout and stderr, with the random table prefix replaced
// by "<prefix>" and without the polls of waits) with testdata/NAME.golden.
func (f *fixture) golden(t *testing.T, name, stdin string, args ...string) result {
	t.Helper()
	r := f.run(stdin, args...)
	var b strings.Builder
	fmt.Fprintf(&b, "$ ddbindex-ops %s\n", strings.Join(args, " "))
	if stdin != "" {
		fmt.Fprintf(&b, "(stdin: %s)\n", strings.TrimSpace(stdin))
	}
	fmt.Fprintf(&b, "exit %d\n-- stdout --\n%s-- stderr --\n%s", r.code, r.stdout, waitPoll.ReplaceAllString(r.stderr, ""))
	got := strings.ReplaceAll(b.String(), f.prefix, "<prefix>")
	compareGolden(t, name, got)
	return r
}

// compareGolden compares got with testdata/NAME.golden, or writes it there
// with -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./ops -run %s -update against a server", t.Name())
	require.Equal(t, string(want), got, "the transcript of %s differs from %s (go test -update rewrites it)", name, path)
}

// ticketTable opens the Ticket tables the commands see.
func (f *fixture) ticketTable(t *testing.T) *ddbindex.Table[Ticket] {
	t.Helper()
	tb, err := ddbindex.New[Ticket](f.client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return f.prefix + s }
	})
	require.NoError(t, err)
	return tb
}

// TestGoldenUsage: the usage, and the exit codes of usage errors, without a
// server.
func TestGoldenUsage(t *testing.T) {
	t.Parallel()
	// No client and no control table: nothing here sends a request.
	f := &fixture{prefix: "p-", models: []ops.ModelDef{ops.Model[Ticket](), ops.Model[Note]()}}
	f.golden(t, "help", "", "help")
	f.golden(t, "usage-unknown", "", "frobnicate")
	f.golden(t, "usage-backfill-help", "", "backfill", "-h")
	f.golden(t, "usage-explain-no-partition", "", "explain", "--index", "by_status")
	f.golden(t, "usage-explain-bad-value", "", "explain", "--index", "by_status", "--partition", "TEAM-1", "--eq", "open,high")
	f.golden(t, "usage-no-index", "", "explain", "--index", "by_nothing", "--partition", "x")
	f.golden(t, "usage-cursor", "", "cursor", "decode", "abc")
	f.golden(t, "usage-cursor-help", "", "cursor", "-h")
	f.golden(t, "usage-unknown-model", "", "check", "--model", "Invoice")
	f.golden(t, "usage-extra-argument", "", "check", "Ticket")
	f.golden(t, "usage-route-set-no-index", "", "route", "set", "--to", "table")
	// A route that selects no partition would send every one to the other
	// form: "--to gsi" alone is refused, not taken to mean "all read the
	// table".
	f.golden(t, "usage-route-set-no-selection", "", "route", "set", "--index", "by_status", "--to", "gsi")

	// --model names a model by its Go type name or its base table; two
	// models of one type name need the table.
	r := f.run("", "explain", "--model", "p-tickets", "--index", "by_status", "--partition", "TEAM-1")
	require.Equal(t, 0, r.code, r.stderr)
	f.models = append(f.models, ops.Model[Ticket](func(o *ddbindex.Options) { o.TableName = func(s string) string { return "other-" + s } }))
	r = f.run("", "explain", "--model", "ticket", "--index", "by_status", "--partition", "TEAM-1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "2 models are named ticket: name one by its base table")
	r = f.run("", "explain", "--model", "p-other-tickets", "--index", "by_status", "--partition", "TEAM-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Query table p-other-tickets index by_status (gsi)", "the prefix goes before the application's own mapping")
}

// Moved is an index on its way back from an index table to a GSI, made
// under a new name: its forms have physical names of their own.
type Moved struct {
	_      ddbindex.TableSpec `ddbindex:"moved"`
	_      ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,name=by_status_v2,keep=table,table=moved-status-idx"`
	ID     string             `dynamodbav:"id"     ddbindex:"pk"`
	Team   string             `dynamodbav:"team"   ddbindex:"by_status.pk"`
	Status string             `dynamodbav:"status" ddbindex:"by_status.sk"`
}

// TestGoldenExplain: explain names the form that serves the query by the
// physical names its request goes to (a GSI's name=, an index table's
// table=), and the other form only for an index that keeps two; an index
// of one form, and the base table, have none. Explain sends nothing.
func TestGoldenExplain(t *testing.T) {
	t.Parallel()
	f := &fixture{prefix: "p-", models: []ops.ModelDef{ops.Model[Note](), ops.Model[Moved]()}}
	f.golden(t, "explain-one-form", "", "explain", "--index", "by_author", "--partition", "ann", "--limit", "5")
	f.golden(t, "explain-base-table", "", "explain", "--model", "Note", "--index", "", "--partition", "n-1")
	f.golden(t, "explain-physical-names", "", "explain", "--index", "by_status", "--partition", "TEAM-1")
	f.golden(t, "explain-physical-names-via-table", "", "explain", "--index", "by_status", "--partition", "TEAM-1", "--via", "table")
}

// TestGolden walks every command over one set of tables, as an operator
// would through a migration step: check, prepare, explain, backfill (and
// its resumption), verify, route, cursor inspect. Each transcript is a
// golden file; the same files hold for both local servers. schema.Prepare and
// check of the Ticket tables, kept from the stream, need a stream and TTL:
// on a server without them that subtest skips, saying so, and the test
// makes the tables itself.
func TestGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()

	f.golden(t, "check-missing", "", "check")
	f.golden(t, "prepare-note", "", "prepare", "--model", "Note")
	f.golden(t, "check-note", "", "check", "--model", "Note")
	// The plain flip of an index whose GSI has a name of its own: check and
	// prepare refuse it, naming the keep= (and gsi=) to declare instead,
	// and prepare creates nothing.
	flip := *f
	flip.models = []ops.ModelDef{ops.Model[NoteFlip]()}
	flip.golden(t, "check-flip-renamed-gsi", "", "check")
	flip.golden(t, "refused-prepare-flip-renamed-gsi", "", "prepare")
	tickets := f.ticketTable(t)
	prepared := false
	t.Run("prepare and check Ticket", func(t *testing.T) {
		ddbtest.Require(t, ddbtest.Streams)
		ddbtest.Require(t, ddbtest.TTL)
		f.golden(t, "prepare", "", "prepare")
		f.golden(t, "prepare-again", "", "prepare")
		f.golden(t, "check", "", "check")
		prepared = true
	})
	if !prepared {
		// Without a stream and TTL the Ticket tables cannot pass prepare
		// or check: the rest needs them all the same (prepare --model Note
		// made the control table).
		require.NoError(t, schema.CreateTables(ctx, tickets, f.client, func(o *schema.CreateOptions) { o.NoStream, o.NoTTL = true, true }))
	}

	for _, tk := range testTickets() {
		_, err := tickets.Put(ctx, tk)
		require.NoError(t, err)
	}

	f.golden(t, "explain", "", "explain", "--index", "by_status", "--partition", "TEAM-1", "--eq", "open", "--limit", "2")
	f.golden(t, "explain-between", "", "explain", "--model", "Ticket", "--index", "by_status", "--partition", "TEAM-2",
		"--between", "closed,1", "--between", "open,2", "--desc", "--via", "table")

	// Before the backfill the index table is empty: the forms differ.
	f.golden(t, "verify-before-backfill", "", "verify", "--index", "by_status", "--partition", "TEAM-1")
	f.golden(t, "backfill", "", "backfill", "--index", "by_status", "--workers", "2")
	f.golden(t, "backfill-again", "", "backfill", "--index", "by_status", "--workers", "2")
	f.golden(t, "backfill-restart", "", "backfill", "--index", "by_status", "--workers", "2", "--restart")
	f.golden(t, "verify-listed", "TEAM-3\n", "verify", "--model", "Ticket", "--partition", "TEAM-1", "--partitions-from", "-", "--limit", "2")
	f.golden(t, "verify-sampled", "", "verify", "--model", "Ticket", "--eq", "open")

	// An entry the index table lost (ticket t-01's, of TEAM-2): verify
	// finds it.
	entries := ddbtest.Scan(t, f.client, f.prefix+"tickets-by_status")
	require.Len(t, entries, 12)
	var lost map[string]types.AttributeValue
	for _, e := range entries {
		if id, ok := e["id"].(*types.AttributeValueMemberS); ok && id.Value == "t-01" {
			lost = e
		}
	}
	require.NotNil(t, lost, "t-01's entry")
	_, err := f.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.prefix + "tickets-by_status"),
		Key: map[string]types.AttributeValue{"team": lost["team"], "_sk": lost["_sk"]}})
	require.NoError(t, err)
	r := f.run("", "verify", "--index", "by_status", "--partition", "TEAM-2")
	require.Equal(t, 1, r.code, "verify exits 1 on a mismatch: %s%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, `"equal": false`)
	f.golden(t, "verify-mismatch", "", "verify", "--index", "by_status", "--partition", "TEAM-1", "--partition", "TEAM-2", "--partition", "TEAM-3")

	// Cursors: one the library minted, checked against queries, and broken
	// ones.
	// A first call learns the entries' size; the next reads the item after its page.
	_, err = tickets.Query("by_status", "TEAM-1").Where(ddbindex.Eq("open")).Limit(1).Page(ctx)
	require.NoError(t, err)
	page, err := tickets.Query("by_status", "TEAM-1").Where(ddbindex.Eq("open")).Limit(1).Page(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, page.Cursor)
	f.golden(t, "cursor-inspect", "", "cursor", "inspect", page.Cursor)
	f.golden(t, "cursor-inspect-stdin", page.Cursor+"\n", "cursor", "inspect", "--index", "by_status", "--partition", "TEAM-1", "--eq", "open", "-")
	f.golden(t, "cursor-inspect-other-partition", "", "cursor", "inspect", "--partition", "TEAM-2", "--", page.Cursor)
	f.golden(t, "cursor-inspect-desc", "", "cursor", "inspect", "--partition", "TEAM-1", "--desc", "--", page.Cursor)
	f.golden(t, "cursor-inspect-tampered", "", "cursor", "inspect", "--", "B"+page.Cursor[1:])
	f.golden(t, "cursor-inspect-truncated", "", "cursor", "inspect", "--index", "by_status", "--", page.Cursor[:len(page.Cursor)-4])
	f.golden(t, "cursor-inspect-garbage", "", "cursor", "inspect", "not*base64")
	f.golden(t, "explain-after", "", "explain", "--index", "by_status", "--partition", "TEAM-1", "--eq", "open", "--limit", "1", "--after", page.Cursor)

	// Routes.
	f.golden(t, "route-none", "", "route")
	f.golden(t, "route-set", "", "route", "set", "--index", "by_status", "--to", "table", "--partition", "TEAM-1", "--percent", "10")
	f.golden(t, "route-show", "", "route", "show", "--model", "Ticket")
	f.golden(t, "explain-routed", "", "explain", "--index", "by_status", "--partition", "TEAM-1")
	f.golden(t, "route-set-lsi", "", "route", "set", "--index", "by_status", "--to", "lsi", "--percent", "100")
	f.golden(t, "route-set-all", "", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	router, err := migrate.NewRouter(f.client, migrate.RouterOptions{ControlTable: f.control})
	require.NoError(t, err)
	routes, err := router.Routes(ctx, "tickets")
	require.NoError(t, err)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.GSI, Percent: 100}}, routes)

	// Refusals, each before anything is written: an index of one form has
	// no route; a form the index does not keep is named as such before the
	// partition flags are looked at.
	f.golden(t, "refused-route-set-one-form", "", "route", "set", "--model", "Note", "--index", "by_author", "--to", "gsi", "--percent", "100")
	f.golden(t, "refused-route-set-lsi-not-kept", "", "route", "set", "--index", "by_status", "--to", "lsi")
	routes, err = router.Routes(ctx, "notes")
	require.NoError(t, err)
	require.Empty(t, routes, "a refused route writes nothing")

	// A route to a form the live schema lacks: every read routed to it
	// would fail. The GSI is dropped last, as at the end of a migration.
	if !ddbtest.Has(ddbtest.GSIUpdate) {
		t.Logf("the server cannot drop a GSI (%s): the route to a dropped GSI is not tried", ddbtest.GSIUpdate)
		return
	}
	f.golden(t, "route-set-table-all", "", "route", "set", "--index", "by_status", "--to", "table", "--percent", "100")
	_, err = f.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.prefix + "tickets"),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by_status")}}}})
	require.NoError(t, err)
	f.golden(t, "refused-route-set-dropped-gsi", "", "route", "set", "--index", "by_status", "--to", "gsi", "--percent", "100")
	routes, err = router.Routes(ctx, "tickets")
	require.NoError(t, err)
	require.Equal(t, map[string]migrate.Route{"by_status": {To: ddbindex.IndexTable, Percent: 100}}, routes, "the refused route wrote nothing")

	// The last step of the migration: the GSI is gone and the fleet's
	// routes send every read to the table. An instance still keeping the
	// GSI passes its check, with a warning; one that serves it does not.
	if !prepared {
		t.Logf("the Ticket tables have no stream and TTL (%s, %s): their check after the drop is not tried", ddbtest.Streams, ddbtest.TTL)
		return
	}
	step3 := *f
	step3.models = []ops.ModelDef{ops.Model[TicketStep3]()}
	step3.golden(t, "check-kept-gsi-dropped", "", "check")
	f.golden(t, "check-gsi-dropped", "", "check", "--model", "Ticket")
}

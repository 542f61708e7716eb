package ops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/term"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// Client is what the command sends its requests with: the reads and
// writes of a Table, schema.Prepare's and schema.Check's table calls, and
// migrate.Backfill's Scan. *dynamodb.Client implements it.
type Client interface {
	ddbindex.Client
	schema.PrepareAPI
	migrate.ScanAPI
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// RunOptions configure [Run]. The zero value of each field means its
// default.
type RunOptions struct {
	// Client sends every request, instead of a client made from the AWS
	// configuration chain and the flags --endpoint, --region and
	// --profile: for tests, or for a client with the application's own
	// middleware.
	Client Client
	// Terminal reports whether stderr is a terminal, where backfill draws
	// a progress bar; elsewhere it is quiet until it ends. Default: stderr
	// is an *os.File on a terminal.
	Terminal func() bool
	// Now is the clock the fleet view is judged by (liveness, "ago").
	// Default time.Now.
	Now func() time.Time
	// Sleep waits d before verify compares again the partitions that
	// differed (--recheck), or returns ctx's error when ctx ends first.
	// Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Exit codes of [Run], as diff's: 0 when the command did its work and
// found nothing wrong; 1 when it ran and found a problem (the schema
// differs from the declarations, the forms of an index differ, a cursor is
// refused, Prepare met a gap it cannot close); 2 when it could not run (a
// usage error, a failed call to DynamoDB, an interrupted backfill).
const (
	exitOK      = 0
	exitProblem = 1
	exitTrouble = 2
)

// Main runs the command with os.Args, the standard streams and models,
// and exits with [Run]'s exit code. An interrupt (SIGINT, SIGTERM) cancels
// the command's context: a backfill stops after the requests in flight,
// and its saved positions let the same command resume it. A second
// interrupt ends the process at once.
//
//	func main() { ops.Main(ops.Model[Ticket](), ops.Model[Post]()) }
func Main(models ...ModelDef) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the next signal takes its default action
	}()
	code := Run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, models)
	stop()
	os.Exit(code)
}

// Run runs the command line args (args[0] is the program's name, as in
// os.Args) on models, and returns its exit code: 0 when it did its work and
// found nothing wrong, 1 when it found a problem (the live schema differs
// from the declarations, the two forms of an index differ, a cursor is
// refused), 2 when it could not run (a usage error, a failed call). Results
// go to stdout; progress, warnings and errors to stderr; stdin holds a
// cursor or partitions when an argument says "-". A nil stdin reads as
// empty, a nil stdout or stderr discards what is written to it; a nil
// option function, or a zero ModelDef among models, is a usage error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, models []ModelDef, optFns ...func(*RunOptions)) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	prog := "ddbindex-ops"
	if len(args) > 0 {
		prog = filepath.Base(args[0])
		args = args[1:]
	}
	var o RunOptions
	for i, fn := range optFns {
		if fn == nil {
			fmt.Fprintf(stderr, "%s: RunOptions function %d is nil\n", prog, i)
			return exitTrouble
		}
		fn(&o)
	}
	e := &env{ctx: ctx, prog: prog, stdin: stdin, stdout: stdout, stderr: stderr, models: models, opts: o}
	if e.opts.Now == nil {
		e.opts.Now = time.Now
	}
	if e.opts.Sleep == nil {
		e.opts.Sleep = retry.Sleep
	}
	if e.opts.Terminal == nil {
		e.opts.Terminal = func() bool {
			f, ok := stderr.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		}
	}
	err := e.run(args)
	var ex *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ex):
		if ex.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, ex.err)
		}
		if ex.usage != "" {
			fmt.Fprintf(stderr, "run '%s %s -h' for its usage\n", prog, ex.usage)
		}
		return ex.code
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return exitTrouble
}

// exitError is an error with its exit code; usage, when set, names the
// command whose usage to point to.
type exitError struct {
	code  int
	err   error
	usage string
}

func (e *exitError) Error() string { return fmt.Sprint(e.err) }
func (e *exitError) Unwrap() error { return e.err }

// problem is the error of a command that ran and found something wrong.
func problem(format string, args ...any) error {
	return &exitError{code: exitProblem, err: fmt.Errorf(format, args...)}
}

// found is the error of a command whose output already says what it found
// wrong: exit 1, nothing more to print.
var found = &exitError{code: exitProblem}

// usageErr is a usage error of command cmd ("" for the whole command line).
func usageErr(cmd, format string, args ...any) error {
	return &exitError{code: exitTrouble, err: fmt.Errorf(format, args...), usage: strings.TrimSpace(cmd)}
}

// env is one run of the command.
type env struct {
	ctx            context.Context
	prog           string
	stdin          io.Reader
	stdout, stderr io.Writer
	models         []ModelDef
	opts           RunOptions

	g   globals
	cmd *command // the command running

	clientOnce sync.Once
	client     Client
	clientErr  error

	// awsLoad are more options for loading the AWS configuration, and
	// onEC2 replaces the check of whether the host is an EC2 instance:
	// for tests (see awsConfig).
	awsLoad []func(*config.LoadOptions) error
	onEC2   func() bool
}

// globals are the flags every command takes, before or after its name.
type globals struct {
	settings
	endpoint, region, profile string
	model                     string
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(e *env, args []string) error
}

var commands = []command{
	{"check", "", "compare the live tables with the declarations (schema.Check)", runCheck},
	{"prepare", "", "create what the declarations need and is missing: tables, GSIs, stream, TTL, control table (schema.Prepare)", runPrepare},
	{"backfill", "--index NAME", "fill the kept form (keep=) of an index: the new one at steps 1-2, the original at step 3; resumably (Backfill)", runBackfill},
	{"verify", "[--index NAME] [--partition P]...", "compare the two forms of an index over listed or sampled partitions; JSON report (Compare)", runVerify},
	{"route", "[show | set --index NAME --to FORM ...]", "show or set the routes of indexes that keep two forms (control table)", runRoute},
	{"rollout", "status [--window D]", "the fleet view: which instances keep, serve and shadow which form, reads per form, stale routes (migrate.Fleet)", runRollout},
	{"shadow", "set --index NAME --rate R", "set the share of an index's reads the fleet shadows, at run time (control table)", runShadow},
	{"drop", "--index NAME --form FORM [--quiet-for D]", "delete an index's kept GSI or index table once the fleet view says nothing uses it", runDrop},
	{"explain", "--index NAME --partition P", "show a query's first request on each form, sending nothing (Explain)", runExplain},
	{"cursor", "inspect [flags] [CURSOR | -]", "decode a cursor, and say why a query refuses it", runCursor},
	{"doctor", "FILE | -", "read throttling reasons from log lines; say which GSI throttles writes and what to do, sending nothing", runDoctor},
}

func (e *env) run(args []string) error {
	fs := e.flags("")
	fs.Usage = func() { e.usage(e.stderr, fs) }
	if err := e.parse(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		e.usage(e.stderr, fs)
		return usageErr("", "no command given")
	}
	name := fs.Arg(0)
	if name == "help" {
		e.usage(e.stdout, fs)
		return nil
	}
	for _, c := range commands {
		if c.name == name {
			e.cmd = &c
			return c.run(e, fs.Args()[1:])
		}
	}
	return usageErr("", "unknown command %q", name)
}

// usageParse turns a flag parsing error into the command's usage error.
func usageParse(err error, cmd string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageErr(cmd, "%v", err)
}

// flagSet is a command's flags: its own, and those every command takes,
// parsed into g and merged into the env's by parse.
type flagSet struct {
	*flag.FlagSet
	g globals
}

// flags returns the flag set of command cmd ("" for the command line
// before the command) with the flags every command takes.
func (e *env) flags(cmd string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(strings.TrimSpace(e.prog+" "+cmd), flag.ContinueOnError)}
	fs.SetOutput(e.stderr)
	fs.StringVar(&fs.g.endpoint, "endpoint", "", "DynamoDB endpoint `URL` (default: the AWS configuration's, e.g. AWS_ENDPOINT_URL_DYNAMODB)")
	fs.StringVar(&fs.g.region, "region", "", "AWS `REGION` (default: the AWS configuration's)")
	fs.StringVar(&fs.g.profile, "profile", "", "shared configuration `PROFILE` (default: AWS_PROFILE, else default)")
	fs.StringVar(&fs.g.prefix, "table-prefix", "", "put `PREFIX` before every table name the application's Options.TableName maps to")
	fs.StringVar(&fs.g.controlTable, "control-table", "", "the control `TABLE` (routes, backfill positions), instead of the one ops.Model(...).ControlTable names; \"\" for none")
	fs.StringVar(&fs.g.model, "model", "", "the `MODEL` to work on, by Go type name or base table name (default: every model, or the one that declares --index)")
	return fs
}

// parse parses args into fs, and the flags every command takes that they
// set into the env's.
func (e *env) parse(fs *flagSet, args []string, cmd string) error {
	if err := fs.Parse(args); err != nil {
		return usageParse(err, cmd)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "endpoint":
			e.g.endpoint = fs.g.endpoint
		case "region":
			e.g.region = fs.g.region
		case "profile":
			e.g.profile = fs.g.profile
		case "table-prefix":
			e.g.prefix = fs.g.prefix
		case "control-table":
			e.g.controlTable, e.g.controlTableSet = fs.g.controlTable, true
		case "model":
			e.g.model = fs.g.model
		}
	})
	return nil
}

// usage prints the command line's usage to w.
func (e *env) usage(w io.Writer, fs *flagSet) {
	fmt.Fprintf(w, "usage: %s [flags] COMMAND [command flags] [arguments]\n\ncommands:\n", e.prog)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nmodels (compiled in), with their tables and indexes:\n")
	ts, err := e.open()
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	}
	for _, t := range ts {
		fmt.Fprintf(w, "  %s\n", t.name())
		writeTables(w, "    ", t)
	}
	fmt.Fprintf(w, "\nflags, before or after the command:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(e.stderr)
	fmt.Fprintf(w, "\nExit status: 0 done and nothing wrong, 1 found a problem, 2 could not run.\n")
	fmt.Fprintf(w, "'%s COMMAND -h' shows a command's flags and arguments.\n", e.prog)
}

// commandFlags returns the flag set of the running command, named c
// ("cursor inspect" for a command with a subcommand), whose usage names it
// with args and the command's summary.
func (e *env) commandFlags(c, args string) *flagSet {
	fs := e.flags(c)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s %s [flags] %s\n\n%s\n\nflags:\n", e.prog, c, args, e.cmd.summary)
		fs.PrintDefaults()
	}
	return fs
}

// dynamo returns the client requests go to: RunOptions.Client, else one
// made, once, from the AWS configuration chain and the flags.
func (e *env) dynamo() (Client, error) {
	if e.opts.Client != nil {
		return e.opts.Client, nil
	}
	e.clientOnce.Do(func() {
		cfg, imdsOn, err := e.awsConfig()
		if err != nil {
			e.clientErr = fmt.Errorf("loading the AWS configuration: %w", err)
			return
		}
		// Credentials are looked for once, here, so that their absence is
		// reported as such rather than deep in the first request's error.
		if cfg.Credentials != nil {
			if _, err := cfg.Credentials.Retrieve(e.ctx); err != nil {
				hint := "configure them the standard way: --profile or AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an IAM role"
				if !imdsOn {
					hint += "; the EC2 instance metadata service (an instance role) is asked only on EC2, or with AWS_EC2_METADATA_DISABLED=false"
				}
				if e.g.endpoint != "" {
					hint += "; a local server (--endpoint) accepts any, e.g. AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local"
				}
				e.clientErr = fmt.Errorf("no AWS credentials found (%s): %w", hint, err)
				return
			}
		}
		e.client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if e.g.endpoint != "" {
				o.BaseEndpoint = aws.String(e.g.endpoint)
			}
		})
	})
	return e.client, e.clientErr
}

// open opens every model, with a client that is made on its first request.
func (e *env) open() ([]table, error) {
	if len(e.models) == 0 {
		return nil, usageErr("", "no models: build the command with ops.Main(ops.Model[YourModel]())")
	}
	client := Client(&lazyClient{e: e})
	if e.opts.Client != nil {
		client = e.opts.Client
	}
	out := make([]table, len(e.models))
	for i, m := range e.models {
		if m.m == nil {
			return nil, usageErr("", "model %d is a zero ModelDef: make each with ops.Model", i)
		}
		t, err := m.m.open(client, &e.g.settings, m.control)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", m.m.name(), err)
		}
		out[i] = t
	}
	return out, nil
}

// selected opens the models that --model selects (every model without it).
func (e *env) selected(cmd string) ([]table, error) {
	all, err := e.open()
	if err != nil {
		return nil, err
	}
	if e.g.model == "" {
		return all, nil
	}
	var hits []table
	for _, t := range all {
		if t.baseTable() == e.g.model {
			return []table{t}, nil
		}
		if strings.EqualFold(t.name(), e.g.model) {
			hits = append(hits, t)
		}
	}
	switch len(hits) {
	case 0:
		return nil, usageErr(cmd, "no model %q (the models are %s)", e.g.model, modelNames(all))
	case 1:
		return hits, nil
	}
	return nil, usageErr(cmd, "%d models are named %s: name one by its base table", len(hits), e.g.model)
}

// withIndex opens the one model that index belongs to: --model's, else
// the only model that declares it.
func (e *env) withIndex(cmd, index string) (table, ddbindex.IndexInfo, error) {
	ts, err := e.selected(cmd)
	if err != nil {
		return nil, ddbindex.IndexInfo{}, err
	}
	var hits []table
	var info ddbindex.IndexInfo
	for _, t := range ts {
		if ix, ok := indexOf(t, index); ok {
			hits, info = append(hits, t), ix
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0], info, nil
	case len(hits) > 1:
		return nil, info, usageErr(cmd, "%s declare %s: name one with --model", modelNames(hits), indexName(index))
	case len(ts) == 1:
		return nil, info, usageErr(cmd, "%s declares no %s (it has %s)", ts[0].name(), indexName(index), indexList(ts[0]))
	}
	return nil, info, usageErr(cmd, "no model declares %s", indexName(index))
}

// indexOf returns the description of t's index ("" for the base table).
func indexOf(t table, index string) (ddbindex.IndexInfo, bool) {
	for _, ix := range t.indexes() {
		if ix.Name == index {
			return ix, true
		}
	}
	return ddbindex.IndexInfo{}, false
}

// indexName names an index for messages.
func indexName(index string) string {
	if index == "" {
		return "base table"
	}
	return "index " + index
}

// indexList lists t's indexes for messages.
func indexList(t table) string {
	var names []string
	for _, ix := range t.indexes()[1:] {
		names = append(names, ix.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func modelNames(ts []table) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name()
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// noArgs is the error of a command given arguments it does not take.
func noArgs(cmd string, fs *flagSet) error {
	if fs.NArg() > 0 {
		return usageErr(cmd, "unexpected argument %q (flags go before arguments)", fs.Arg(0))
	}
	return nil
}

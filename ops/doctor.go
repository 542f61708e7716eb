package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file holds the doctor command: it reads why DynamoDB throttled the
// application's requests from text the application already has, and says
// what to do about each throttled table or index of the models.
//
// Where the evidence comes from: the command runs apart from the
// application and keeps no history, DynamoDB's throttling metrics are in
// CloudWatch (which the command has no client for), and a probe would have
// to write to the table to provoke a GSI's back-pressure, adding load to a
// table already throttled. The application has the evidence: every error
// ddbindex returns for a throttled call names the reasons and the
// throttled table or index (throttle.Label), DynamoDB's own error bodies
// and the SDKs' renderings of them hold the reason and the resource's ARN,
// and the ddbindex.throttles metric counts them. So doctor reads log
// lines, from a file or stdin (throttle.Scan).

// maxDoctorLine is the longest line doctor reads.
const maxDoctorLine = 1 << 20

func runDoctor(e *env, args []string) error {
	fs := e.commandFlags("doctor", "FILE | -")
	if err := e.parse(fs, args, "doctor"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("doctor", "doctor takes one argument: a file of log lines, or - for stdin")
	}
	ts, err := e.selected("doctor")
	if err != nil {
		return err
	}
	var in io.Reader = e.stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usageErr("doctor", "%v", err)
		}
		defer f.Close()
		in = f
	}
	counts, lines, err := scanThrottles(in)
	if err != nil {
		return err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	fmt.Fprintf(e.stdout, "read %s: %s\n", plural(lines, "line"), plural(total, "throttling reason"))
	problems := 0
	claimed := map[throttle.Key]bool{}
	for _, t := range ts {
		fs := diagnose(t, counts, claimed)
		if len(fs) == 0 {
			fmt.Fprintf(e.stdout, "%s: no throttle of its tables\n", t.name())
			continue
		}
		problems += len(fs)
		fmt.Fprintf(e.stdout, "%s:\n", t.name())
		for _, f := range fs {
			fmt.Fprintf(e.stdout, "  %s: %s x%d\n", f.where, f.key.Reason, f.n)
			for _, l := range f.advice {
				fmt.Fprintf(e.stdout, "    %s\n", l)
			}
		}
	}
	var others []throttle.Key
	for k := range counts {
		if !claimed[k] {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		slices.SortFunc(others, compareKeys)
		fmt.Fprintf(e.stdout, "not tables of these models:\n")
		for _, k := range others {
			fmt.Fprintf(e.stdout, "  %s: %s x%d\n", resourceText(k), k.Reason, counts[k])
		}
	}
	if problems > 0 {
		return found
	}
	return nil
}

// scanThrottles counts the throttling reasons in the lines of r.
func scanThrottles(r io.Reader) (map[throttle.Key]int, int, error) {
	counts := map[throttle.Key]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDoctorLine)
	lines := 0
	for sc.Scan() {
		lines++
		for _, k := range throttle.Scan(sc.Text()) {
			counts[k]++
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, lines, usageErr("doctor", "line %d is longer than %d bytes", lines+1, maxDoctorLine)
		}
		return nil, lines, fmt.Errorf("reading the log lines: %w", err)
	}
	return counts, lines, nil
}

// finding is one throttled table or index of a model, for one reason.
type finding struct {
	key    throttle.Key
	n      int
	where  string   // the index and its form, as the command names them
	order  int      // the index's place in the model
	advice []string // what to do
}

// diagnose returns the findings of t's tables among counts, in the
// model's index order, and marks the keys it used in claimed.
func diagnose(t table, counts map[throttle.Key]int, claimed map[throttle.Key]bool) []finding {
	var out []finding
	infos := t.indexes()
	for k, n := range counts {
		for i, ix := range infos {
			for _, f := range ix.Forms {
				if k.Table != f.Table || k.Index != f.Index {
					continue
				}
				claimed[k] = true
				name := ix.Name
				if name == "" {
					name = "(base)"
				}
				out = append(out, finding{key: k, n: n, where: name + " (" + formText(f) + ")", order: i, advice: advise(k.Reason, ix, f)})
			}
		}
		// A GSI of the base table that no declaration names.
		if !claimed[k] && k.Index != "" && k.Table == infos[0].Forms[0].Table {
			claimed[k] = true
			out = append(out, finding{key: k, n: n, where: "undeclared gsi " + k.Index + " on " + k.Table, order: len(infos),
				advice: advise(k.Reason, ddbindex.IndexInfo{}, ddbindex.IndexForm{Kind: ddbindex.GSI})})
		}
	}
	slices.SortFunc(out, func(a, b finding) int {
		if a.order != b.order {
			return a.order - b.order
		}
		return compareKeys(a.key, b.key)
	})
	return out
}

// plural renders n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func compareKeys(a, b throttle.Key) int {
	return strings.Compare(a.Table+"\x00"+a.Index+"\x00"+a.Reason, b.Table+"\x00"+b.Index+"\x00"+b.Reason)
}

func resourceText(k throttle.Key) string {
	switch {
	case k.Table == "":
		return "(no resource given)"
	case k.Index != "":
		return "gsi " + k.Index + " on " + k.Table
	}
	return "table " + k.Table
}

// The advice's references.
const (
	hotGSIDoc   = "docs/migration.md, \"Diagnosing a hot GSI\""
	shardingDoc = "docs/sharding.md"
)

// advise says what a reason on form f of index ix means, and what to do.
func advise(reason string, ix ddbindex.IndexInfo, f ddbindex.IndexForm) []string {
	_, op, limit, ok := throttle.Parts(reason)
	if !ok {
		return []string{"not a reason this command knows"}
	}
	shard := "shard its partitions (shards=N in its IndexSpec; " + shardingDoc + ")"
	if ix.Shards > 0 {
		shard = fmt.Sprintf("shard its partitions wider (shards=%d now; %s)", ix.Shards, shardingDoc)
	}
	switch {
	case (f.Kind == ddbindex.GSI || f.Kind == ddbindex.NativeGSI) && op == "Write":
		var l []string
		switch limit {
		case throttle.KeyRange:
			l = []string{"writes to the base table are throttled by this GSI: a hot key range of its partition key cannot take their index updates (GSI back-pressure)",
				"fix: " + shard + ", or move it to an index table (" + hotGSIDoc + ")"}
		case throttle.Provisioned:
			l = []string{"writes to the base table are throttled by this GSI: it has less write capacity than their index updates need (GSI back-pressure)",
				"fix: give the GSI at least the base table's write capacity, or move it to an index table (" + hotGSIDoc + ")"}
		default:
			l = []string{"writes to the base table are throttled by this GSI: its updates exceed its on-demand maximum or the account's per-table limit (GSI back-pressure)",
				"fix: raise the GSI's maximum throughput or the account quota, or move it to an index table (" + hotGSIDoc + ")"}
		}
		if ix.Name != "" && len(ix.Forms) > 1 {
			l = append(l, "this index keeps its other form already: the GSI throttles writes as long as it exists; finish the move (route, then drop the GSI; docs/migration.md)")
		}
		return l
	case limit == throttle.KeyRange && (f.Kind == ddbindex.GSI || f.Kind == ddbindex.NativeGSI || f.Kind == ddbindex.IndexTable):
		return []string{strings.ToLower(op) + "s of one key range of this index are too many for one partition", "fix: " + shard}
	case limit == throttle.KeyRange:
		return []string{strings.ToLower(op) + "s of one key range of this table are too many for one partition: a hot item or partition key of the application's own"}
	case limit == throttle.Provisioned:
		return []string{strings.ToLower(op) + "s exceed the provisioned capacity", "fix: raise it, or let auto scaling or on-demand mode follow the load"}
	}
	return []string{strings.ToLower(op) + "s exceed the on-demand maximum or the account's per-table limit", "fix: raise the maximum throughput or the account quota"}
}

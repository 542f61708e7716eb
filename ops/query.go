package ops

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/ddbindex/ddbindex"
)

// This file holds the commands about queries, explain and cursor inspect,
// and the flags that describe a query.

// listFlag is a flag that may be given many times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// queryFlags are the flags that describe a query.
type queryFlags struct {
	index                      string
	partitions                 listFlag
	eq, lt, le, gt, ge, begins string
	between                    listFlag
	desc                       bool
	limit                      int
}

// register adds the flags to fs; partitions says what --partition is for.
func (q *queryFlags) register(fs *flag.FlagSet, partitions string) {
	fs.StringVar(&q.index, "index", "", "the logical `INDEX` (\"\" for the base table)")
	fs.Var(&q.partitions, "partition", partitions)
	fs.StringVar(&q.eq, "eq", "", "sort condition: leading sort components equal `TUPLE`")
	fs.StringVar(&q.lt, "lt", "", "sort condition: below `TUPLE`")
	fs.StringVar(&q.le, "le", "", "sort condition: at or below `TUPLE`")
	fs.StringVar(&q.gt, "gt", "", "sort condition: above `TUPLE`")
	fs.StringVar(&q.ge, "ge", "", "sort condition: at or above `TUPLE`")
	fs.StringVar(&q.begins, "begins-with", "", "sort condition: the last component of `TUPLE` is a prefix")
	fs.Var(&q.between, "between", "sort condition: between two `TUPLE`s, inclusive (give it twice: low, then high)")
	fs.BoolVar(&q.desc, "desc", false, "descending order")
	fs.IntVar(&q.limit, "limit", 0, "live items a page (default 100)")
}

// condition builds the sort condition the flags give, for index ix.
func (q *queryFlags) condition(ix ddbindex.IndexInfo) (ddbindex.SortCondition, error) {
	var none ddbindex.SortCondition
	type op struct {
		flag, value string
		make        func(...any) ddbindex.SortCondition
	}
	ops := []op{{"eq", q.eq, ddbindex.Eq}, {"lt", q.lt, ddbindex.Lt}, {"le", q.le, ddbindex.Le},
		{"gt", q.gt, ddbindex.Gt}, {"ge", q.ge, ddbindex.Ge}, {"begins-with", q.begins, ddbindex.BeginsWith}}
	var set []string
	var cond ddbindex.SortCondition
	for _, o := range ops {
		if o.value == "" {
			continue
		}
		set = append(set, "--"+o.flag)
		values, err := parseTuple(o.value, ix.Sort, "--"+o.flag)
		if err != nil {
			return none, err
		}
		cond = o.make(values...)
	}
	if len(q.between) > 0 {
		set = append(set, "--between")
		if len(q.between) != 2 {
			return none, fmt.Errorf("--between is given %d times; give it twice, low then high", len(q.between))
		}
		lo, err := parseTuple(q.between[0], ix.Sort, "--between")
		if err != nil {
			return none, err
		}
		hi, err := parseTuple(q.between[1], ix.Sort, "--between")
		if err != nil {
			return none, err
		}
		cond = ddbindex.Between(ddbindex.K(lo...), ddbindex.K(hi...))
	}
	if len(set) > 1 {
		return none, fmt.Errorf("one sort condition at most; %s are given", strings.Join(set, " and "))
	}
	return cond, nil
}

// partition reads one partition tuple for index ix: a value for every
// partition component.
func partition(s string, ix ddbindex.IndexInfo) ([]any, error) {
	values, err := parseTuple(s, ix.Partition, "partition")
	if err != nil {
		return nil, err
	}
	if len(values) != len(ix.Partition) {
		return nil, fmt.Errorf("partition %q has %d values; %s has %d partition components (%s)", s, len(values), indexName(ix.Name), len(ix.Partition), componentNames(ix.Partition))
	}
	return values, nil
}

// query builds the query the flags describe, for one partition.
func (q *queryFlags) query(cmd string, ix ddbindex.IndexInfo) (query, error) {
	if len(q.partitions) != 1 {
		return query{}, usageErr(cmd, "give the query's partition with --partition, once (%s: %s)", indexName(ix.Name), componentNames(ix.Partition))
	}
	p, err := partition(q.partitions[0], ix)
	if err != nil {
		return query{}, usageErr(cmd, "%v", err)
	}
	cond, err := q.condition(ix)
	if err != nil {
		return query{}, usageErr(cmd, "%v", err)
	}
	if q.limit < 0 {
		return query{}, usageErr(cmd, "--limit %d is negative", q.limit)
	}
	return query{index: ix.Name, partition: p, cond: cond, desc: q.desc, limit: q.limit}, nil
}

// describe renders a query for messages.
func (q query) describe() string {
	s := "partition " + formatTuple(q.partition)
	if c := q.cond.String(); c != (ddbindex.SortCondition{}).String() {
		s += ", " + c
	}
	if q.desc {
		return s + ", descending"
	}
	return s + ", ascending"
}

// kindOf reads a form's name as the tags write it.
func kindOf(s string) (ddbindex.Kind, bool) {
	for _, k := range []ddbindex.Kind{ddbindex.GSI, ddbindex.LSI, ddbindex.IndexTable, ddbindex.NativeGSI} {
		if s == k.String() {
			return k, true
		}
	}
	return 0, false
}

// refreshRoutes reads the fleet's routes into t, when it has a control
// table, so that a query is routed as the fleet routes it; a failure is a
// warning (the static routes then decide).
func (e *env) refreshRoutes(t table) {
	if t.controlTable() == "" {
		return
	}
	if err := t.refreshRoutes(e.ctx); err != nil {
		fmt.Fprintf(e.stderr, "%s: warning: the routes in %s are not read, so routing is as without them: %v\n", e.prog, t.controlTable(), err)
	}
}

func runExplain(e *env, args []string) error {
	fs := e.commandFlags("explain", "--index INDEX --partition TUPLE")
	var qf queryFlags
	qf.register(fs.FlagSet, "the query's partition: a `TUPLE` of its partition components")
	after := fs.String("after", "", "the `CURSOR` the query continues after")
	via := fs.String("via", "", "read this `FORM` (gsi, lsi, table or native-gsi) of an index that keeps two, whatever the routes say")
	if err := e.parse(fs, args, "explain"); err != nil {
		return err
	}
	if err := noArgs("explain", fs); err != nil {
		return err
	}
	t, ix, err := e.withIndex("explain", qf.index)
	if err != nil {
		return err
	}
	q, err := qf.query("explain", ix)
	if err != nil {
		return err
	}
	q.after = *after
	if *via != "" {
		k, ok := kindOf(*via)
		if !ok {
			return usageErr("explain", "--via %q: want gsi, lsi, table or native-gsi", *via)
		}
		q.via, q.hasVia = k, true
	}
	// The query is checked before the routes are read: a query the flags
	// make invalid is a usage error, found before any request.
	ex, err := t.explain(q)
	if err == nil {
		e.refreshRoutes(t)
		ex, err = t.explain(q)
	}
	if err != nil {
		if errors.Is(err, ddbindex.ErrInvalidCursor) {
			return problem("%s %s, %s: %w", t.name(), indexName(ix.Name), q.describe(), err)
		}
		return usageErr("explain", "%v", err)
	}
	fmt.Fprintf(e.stdout, "%s %s, %s:\n%s\n", t.name(), indexName(ix.Name), q.describe(), compactRuns(ex.String()))
	return nil
}

func runCursor(e *env, args []string) error {
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		args = []string{"inspect", "-h"}
	case len(args) == 0 || args[0] != "inspect":
		return usageErr("cursor inspect", "the cursor command is 'cursor inspect [flags] CURSOR' (or - to read it from stdin)")
	}
	fs := e.commandFlags("cursor inspect", "[CURSOR | -]")
	var qf queryFlags
	qf.register(fs.FlagSet, "check the cursor against a query of this partition (a `TUPLE`), with the sort condition and order flags")
	indexSet := false
	if err := e.parse(fs, args[1:], "cursor inspect"); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { indexSet = indexSet || f.Name == "index" })
	if fs.NArg() != 1 {
		return usageErr("cursor inspect", "give one cursor (or - to read it from stdin)")
	}
	cursor := fs.Arg(0)
	if cursor == "-" {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the cursor from stdin: %w", err)
		}
		cursor = strings.TrimSpace(line)
	}

	// The candidates: --index (of --model's model or every model), else
	// every index of every selected model.
	ts, err := e.selected("cursor inspect")
	if err != nil {
		return err
	}
	type candidate struct {
		t  table
		ix ddbindex.IndexInfo
	}
	var cands []candidate
	for _, t := range ts {
		for _, ix := range t.indexes() {
			if !indexSet || ix.Name == qf.index {
				cands = append(cands, candidate{t, ix})
			}
		}
	}
	if len(cands) == 0 {
		return usageErr("cursor inspect", "no model declares %s", indexName(qf.index))
	}
	type refusal struct {
		c   candidate
		err error
	}
	var ok []candidate
	var infos []*CursorInfo
	var refused []refusal
	for _, c := range cands {
		info, err := c.t.inspectCursor(c.ix.Name, cursor)
		switch {
		case err == nil:
			ok, infos = append(ok, c), append(infos, info)
		case errors.Is(err, ddbindex.ErrInvalidCursor):
			refused = append(refused, refusal{c, err})
		default:
			return err
		}
	}
	switch {
	case len(ok) == 0:
		same := true
		for _, r := range refused[1:] {
			same = same && r.err.Error() == refused[0].err.Error()
		}
		if same {
			if len(refused) == 1 {
				fmt.Fprintf(e.stdout, "refused by %s %s: %s\n", refused[0].c.t.name(), indexName(refused[0].c.ix.Name), reason(refused[0].err))
			} else {
				fmt.Fprintf(e.stdout, "refused by every index of %s: %s\n", modelNames(ts), reason(refused[0].err))
			}
		} else {
			fmt.Fprintln(e.stdout, "refused by every index:")
			for _, r := range refused {
				fmt.Fprintf(e.stdout, "  %s %s: %s\n", r.c.t.name(), indexName(r.c.ix.Name), reason(r.err))
			}
		}
		return found
	case len(ok) > 1:
		var names []string
		for _, c := range ok {
			names = append(names, c.t.name()+" "+indexName(c.ix.Name))
		}
		return usageErr("cursor inspect", "the cursor decodes for %s: name one with --model", strings.Join(names, " and "))
	}
	c, info := ok[0], infos[0]
	writeCursor(e.stdout, c.t.name(), c.ix, info, len(cursor))
	if len(qf.partitions) == 0 {
		return nil
	}
	// Against the query: what Page would say before any request.
	q, err := qf.query("cursor inspect", c.ix)
	if err != nil {
		return err
	}
	q.after = cursor
	// The query is checked before the routes are read, as explain does.
	if _, err = c.t.explain(q); err == nil || !errors.Is(err, ddbindex.ErrInvalidCursor) {
		if err != nil {
			return usageErr("cursor inspect", "%v", err)
		}
		e.refreshRoutes(c.t)
		_, err = c.t.explain(q)
	}
	switch {
	case err == nil:
		fmt.Fprintf(e.stdout, "for the query (%s): accepted (explain --after shows the next page's first request)\n", q.describe())
		return nil
	case errors.Is(err, ddbindex.ErrInvalidCursor):
		fmt.Fprintf(e.stdout, "for the query (%s): refused: %s\n", q.describe(), reason(err))
		return found
	}
	return usageErr("cursor inspect", "%v", err)
}

// reason says why a cursor is refused: the ErrInvalidCursor error's reason
// and code.
func reason(err error) string {
	var ce *ddbindex.Error
	if errors.As(err, &ce) && ce.Sentinel == ddbindex.ErrInvalidCursor {
		s := ce.Reason
		if ce.Err != nil {
			s += ": " + ce.Err.Error()
		}
		return s + " [" + ddbindex.Code(err) + "]"
	}
	return err.Error()
}

// writeCursor prints what a cursor holds.
func writeCursor(w io.Writer, model string, ix ddbindex.IndexInfo, info *CursorInfo, size int) {
	order, signed := "an ascending", "unsigned"
	if info.Desc {
		order = "a descending"
	}
	if info.Signed {
		signed = "signed (HMAC-SHA256, verified)"
	}
	fmt.Fprintf(w, "%s %s: the cursor of %s query, %s, %d bytes\n", model, indexName(ix.Name), order, signed, size)
	fields := func(fs []CursorField) {
		width := 0
		for _, f := range fs {
			width = max(width, len(f.Attr))
		}
		for _, f := range fs {
			v := formatValue(f.Value)
			if f.Value == nil {
				v = f.Text
			}
			fmt.Fprintf(w, "    %-*s %s\n", width, f.Attr, v)
		}
	}
	fmt.Fprintln(w, "  position (the page's last item; the next page continues after it):")
	fields(info.Position)
	if info.Next != nil && info.Through {
		fmt.Fprintln(w, "  through (the last position read, all dead after the position; the next page starts after it):")
		fields(info.Next)
	} else if info.Next != nil {
		fmt.Fprintln(w, "  next (the first live item after the page, read ahead; the next page starts there):")
		fields(info.Next)
	} else {
		fmt.Fprintln(w, "  next: none (the next page reads on from the position)")
	}
	var part []any
	for _, c := range ix.Partition {
		for _, f := range info.Position {
			if f.Attr == c.Attr {
				part = append(part, f.Value)
			}
		}
	}
	fmt.Fprintf(w, "  partition: %s\n", formatTuple(part))
}

// escapes matches runs of quoted escape sequences, as %q writes runes.
var escapes = regexp.MustCompile(`(?:\\U[0-9a-f]{8}|\\u[0-9a-f]{4}|\\x[0-9a-f]{2})+`)

// compactRuns shortens, in a rendered request, each run of four or more of
// one escaped rune (the U+10FFFF padding of a start key that sorts just
// before an item) to the rune once and its count: "\U0010ffff×251".
func compactRuns(s string) string {
	return escapes.ReplaceAllStringFunc(s, func(run string) string {
		var b strings.Builder
		for run != "" {
			n := 4 // \xHH
			switch run[1] {
			case 'U':
				n = 10
			case 'u':
				n = 6
			}
			tok := run[:n]
			count := 1
			for strings.HasPrefix(run[count*n:], tok) {
				count++
			}
			if count >= 4 {
				fmt.Fprintf(&b, "%s×%d", tok, count)
			} else {
				b.WriteString(strings.Repeat(tok, count))
			}
			run = run[count*n:]
		}
		return b.String()
	})
}

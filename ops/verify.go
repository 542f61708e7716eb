package ops

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ddbindex/ddbindex"
)

// This file holds the verify command: the offline comparison of the two
// forms of an index that a migration keeps (migrate.Compare), over listed
// or sampled partitions.

// verifyReport is verify's JSON report.
type verifyReport struct {
	Model string `json:"model"`
	// Indexes are the indexes compared, each over its partitions.
	Indexes []verifyIndex `json:"indexes"`
	// Compared counts the partitions compared, over every index;
	// Mismatched those whose forms differ, at the re-check when there is
	// one; Lag those that differed at first and were equal at the
	// re-check.
	Compared   int  `json:"compared"`
	Mismatched int  `json:"mismatched"`
	Lag        int  `json:"lag,omitempty"`
	Equal      bool `json:"equal"`
	// Recheck is how long verify waited before comparing again the
	// partitions that differed ("" when none did, or --recheck 0).
	Recheck string `json:"recheck,omitempty"`
}

type verifyIndex struct {
	Index string `json:"index"`
	// Forms are the forms compared: the declared type, then the kept one.
	Forms []string `json:"forms"`
	// Sampled is true when the partitions come from a scan of the base
	// table (Scanned items) rather than the command line.
	Sampled    bool              `json:"sampled"`
	Scanned    int               `json:"scanned,omitempty"`
	Partitions []verifyPartition `json:"partitions"`
}

type verifyPartition struct {
	Partition string `json:"partition"`
	// Pages and Items are the pages compared and the items read through
	// the declared form.
	Pages int  `json:"pages"`
	Items int  `json:"items"`
	Equal bool `json:"equal"`
	// Lag is true when the forms differed at the first comparison and
	// were equal at the re-check: the upkeep (or a GSI) catching up.
	Lag bool `json:"lag,omitempty"`
	// Differences are those of the last comparison.
	Differences []string `json:"differences,omitempty"`
}

func runVerify(e *env, args []string) error {
	fs := e.commandFlags("verify", "")
	var qf queryFlags
	qf.register(fs.FlagSet, "a partition to compare (a `TUPLE`); give it once per partition")
	from := fs.String("partitions-from", "", "read partitions to compare from `FILE`, one tuple a line (- for stdin)")
	sample := fs.Int("sample", 20, "without listed partitions, compare up to `N` partitions sampled from the base table")
	scanMax := fs.Int("scan-max", 10000, "read at most `N` base items to sample partitions from")
	recheck := fs.Duration("recheck", 5*time.Second, "wait `D`, then compare again the partitions that differ: those equal then differed from the upkeep's lag, and do not count (0: no re-check)")
	if err := e.parse(fs, args, "verify"); err != nil {
		return err
	}
	if err := noArgs("verify", fs); err != nil {
		return err
	}
	if *sample < 1 || *scanMax < 1 || qf.limit < 0 {
		return usageErr("verify", "--sample and --scan-max must be 1 or more, --limit 0 or more")
	}
	if *recheck < 0 {
		return usageErr("verify", "--recheck %v: want a duration of 0 or more", *recheck)
	}
	indexSet := false
	fs.Visit(func(f *flag.Flag) { indexSet = indexSet || f.Name == "index" })

	// The indexes: --index, else every index that keeps two forms.
	var t table
	var ixs []ddbindex.IndexInfo
	if indexSet {
		var ix ddbindex.IndexInfo
		var err error
		if t, ix, err = e.withIndex("verify", qf.index); err != nil {
			return err
		}
		if len(ix.Forms) < 2 {
			return usageErr("verify", "%s of %s keeps one form (%s); verify compares the two forms of an index declared with keep=", indexName(ix.Name), t.name(), ix.Forms[0].Kind)
		}
		ixs = append(ixs, ix)
	} else {
		ts, err := e.selected("verify")
		if err != nil {
			return err
		}
		if len(ts) > 1 {
			return usageErr("verify", "name the model with --model (%s), or the index with --index", modelNames(ts))
		}
		t = ts[0]
		for _, ix := range t.indexes() {
			if len(ix.Forms) == 2 {
				ixs = append(ixs, ix)
			}
		}
		if len(ixs) == 0 {
			return usageErr("verify", "no index of %s keeps two forms (keep=): verify compares the two forms an index keeps during a migration", t.name())
		}
	}

	lines := []string(qf.partitions)
	if *from != "" {
		more, err := e.readLines(*from)
		if err != nil {
			return err
		}
		lines = append(lines, more...)
	}
	// Every listed query is checked (Explain sends nothing) before the
	// first request: a flag that makes one invalid is a usage error.
	conds := make([]ddbindex.SortCondition, len(ixs))
	listed := make([][][]any, len(ixs))
	for i, ix := range ixs {
		cond, err := qf.condition(ix)
		if err != nil {
			return usageErr("verify", "%v", err)
		}
		conds[i] = cond
		for _, l := range lines {
			p, err := partition(l, ix)
			if err != nil {
				return usageErr("verify", "%v", err)
			}
			q := query{index: ix.Name, partition: p, cond: cond, desc: qf.desc, limit: qf.limit}
			if _, err := t.explain(q); err != nil {
				return usageErr("verify", "%v", err)
			}
			listed[i] = append(listed[i], p)
		}
	}
	rep := verifyReport{Model: t.name()}
	// The partitions that differ, to compare again after the re-check's
	// wait: where in the report, and the query.
	type differing struct {
		index, part int
		q           query
	}
	var again []differing
	for i, ix := range ixs {
		cond := conds[i]
		vi := verifyIndex{Index: ix.Name, Forms: []string{ix.Forms[0].Kind.String(), ix.Forms[1].Kind.String()}, Partitions: []verifyPartition{}}
		parts := listed[i]
		if len(lines) == 0 {
			var err error
			vi.Sampled = true
			if parts, vi.Scanned, err = t.sample(e.ctx, e.api(), ix, *sample, *scanMax); err != nil {
				return err
			}
		}
		for _, p := range parts {
			// The declared type first, whatever the routes say.
			q := query{index: ix.Name, partition: p, cond: cond, desc: qf.desc, limit: qf.limit, via: ix.Forms[0].Kind, hasVia: true}
			c, err := t.compare(e.ctx, q)
			if err != nil {
				return fmt.Errorf("comparing %s %s, %s: %w", t.name(), indexName(ix.Name), q.describe(), err)
			}
			vp := verifyPartition{Partition: formatTuple(p), Pages: c.Pages, Items: c.Items, Equal: c.Equal(), Differences: c.Differences}
			rep.Compared++
			if !vp.Equal {
				again = append(again, differing{index: len(rep.Indexes), part: len(vi.Partitions), q: q})
			}
			vi.Partitions = append(vi.Partitions, vp)
		}
		rep.Indexes = append(rep.Indexes, vi)
	}
	// The index table is kept from the stream, and a GSI is eventually
	// consistent: a write made just before a comparison may be on one form
	// only. A partition equal after the wait differed from that lag; one
	// that still differs is a problem.
	if len(again) > 0 && *recheck > 0 {
		rep.Recheck = recheck.String()
		fmt.Fprintf(e.stderr, "%s: %d of %d partitions differ; comparing them again in %v (--recheck)\n", e.prog, len(again), rep.Compared, *recheck)
		if err := e.opts.Sleep(e.ctx, *recheck); err != nil {
			return fmt.Errorf("waiting to compare again the partitions that differ: %w", err)
		}
		for _, d := range again {
			vp := &rep.Indexes[d.index].Partitions[d.part]
			c, err := t.compare(e.ctx, d.q)
			if err != nil {
				return fmt.Errorf("comparing again %s %s, %s: %w", t.name(), indexName(d.q.index), d.q.describe(), err)
			}
			vp.Pages, vp.Items, vp.Equal, vp.Differences = c.Pages, c.Items, c.Equal(), c.Differences
			if vp.Equal {
				vp.Lag = true
				rep.Lag++
			}
		}
	}
	rep.Mismatched = len(again) - rep.Lag
	rep.Equal = rep.Mismatched == 0
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	if !rep.Equal {
		if rep.Recheck != "" {
			return problem("%d of %d partitions differ between the forms, again after %s", rep.Mismatched, rep.Compared, rep.Recheck)
		}
		return problem("%d of %d partitions differ between the forms", rep.Mismatched, rep.Compared)
	}
	if rep.Lag > 0 {
		fmt.Fprintf(e.stderr, "%s: %d of %d partitions differed at first and were equal %s later: lag, not a difference\n", e.prog, rep.Lag, rep.Compared, rep.Recheck)
	}
	return nil
}

// readLines reads the non-blank lines of a file, or of stdin for "-".
func (e *env) readLines(path string) ([]string, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

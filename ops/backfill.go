package ops

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/schollz/progressbar/v3"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// This file holds the backfill command.

func runBackfill(e *env, args []string) error {
	fs := e.commandFlags("backfill", "--index INDEX")
	index := fs.String("index", "", "the logical `INDEX` whose kept form (keep=) to fill (required)")
	workers := fs.Int("workers", 1, "segments this process scans in parallel")
	segment := fs.Int("segment", 0, "the first segment this process scans (with --total-segments)")
	total := fs.Int("total-segments", 0, "segments of the whole scan; give process i of P (W workers each) --total-segments P*W --workers W --segment i*W (default: --workers)")
	rate := fs.Float64("rate", 0, "write units a second the backfill's writes may consume, all workers together (0: no cap)")
	pageSize := fs.Int("page-size", 0, "items a Scan request reads (default 500)")
	restart := fs.Bool("restart", false, "forget the saved positions, and the record that the backfill finished, first; and scan from the start")
	noCheckpoint := fs.Bool("no-checkpoint", false, "save no positions (a killed backfill then starts again from the beginning)")
	force := fs.Bool("force", false, "backfill even though the fleet view says a live instance does not keep the form")
	if err := e.parse(fs, args, "backfill"); err != nil {
		return err
	}
	if err := noArgs("backfill", fs); err != nil {
		return err
	}
	if *index == "" {
		return usageErr("backfill", "name the index to fill with --index")
	}
	if *restart && *noCheckpoint {
		return usageErr("backfill", "--restart forgets saved positions, which need a control table and no --no-checkpoint")
	}
	opts := migrate.BackfillOptions{Workers: *workers, Segment: int32Of(*segment), TotalSegments: int32Of(*total),
		WriteUnitsPerSecond: *rate, PageSize: int32Of(*pageSize)}
	if err := opts.Validate(); err != nil {
		return usageErr("backfill", "%s", backfillRule(err, fs))
	}
	t, ix, err := e.withIndex("backfill", *index)
	if err != nil {
		return err
	}
	filled := ix.Forms[len(ix.Forms)-1]
	what := fmt.Sprintf("%s %s (%s)", t.name(), indexName(ix.Name), formText(filled))
	// Every live instance must keep the form in step before it is filled:
	// an instance that does not would leave its own writes out of it.
	if t.controlTable() != "" {
		st, err := e.fleetView(t)
		if err != nil {
			return err
		}
		if len(st.Live()) == 0 {
			fmt.Fprintf(e.stderr, "%s: no live instance has registered in the fleet view (migrate.Fleet): whether every instance keeps the %s is not checked\n", e.prog, filled.Kind)
		}
		if err := e.guard(*force, "backfill "+what, lacking(st, t, ix, filled.Kind)); err != nil {
			return err
		}
	}

	var store *migrate.DynamoDBCheckpoints
	switch {
	case *noCheckpoint:
	case t.controlTable() == "":
		fmt.Fprintf(e.stderr, "%s: no control table (--control-table, or ops.Model(...).ControlTable): positions are not saved, and a killed backfill starts again from the beginning\n", e.prog)
	default:
		store = &migrate.DynamoDBCheckpoints{Client: e.api(), Table: t.controlTable()}
	}
	if *restart {
		if store == nil {
			return usageErr("backfill", "--restart forgets saved positions, which need a control table and no --no-checkpoint")
		}
		// The record that an earlier run finished goes too: until this one
		// finishes, routes and Shadows must not take the form as filled.
		if err := t.forgetBackfill(e.ctx, store, ix.Name, filled.Kind); err != nil {
			return fmt.Errorf("forgetting the saved positions of %s: %w", what, err)
		}
		fmt.Fprintf(e.stdout, "forgot the saved positions of %s in %s, and any record that its backfill finished\n", what, t.controlTable())
	}

	var bar *progressbar.ProgressBar
	if e.opts.Terminal() {
		bar = newBar(e.stderr, "backfill "+ix.Name)
	}
	st, err := t.backfill(e.ctx, e.api(), ix.Name, func(o *migrate.BackfillOptions) {
		o.Workers, o.Segment, o.TotalSegments = opts.Workers, opts.Segment, opts.TotalSegments
		o.WriteUnitsPerSecond, o.PageSize = opts.WriteUnitsPerSecond, opts.PageSize
		if store != nil {
			o.Checkpoint = store
		}
		if bar != nil {
			o.Progress = func(p migrate.BackfillProgress) { showProgress(bar, p) }
		}
	})
	if bar != nil {
		if err == nil {
			_ = bar.Finish()
		} else {
			_ = bar.Exit()
		}
		fmt.Fprintln(e.stderr)
	}
	if err != nil {
		writeBackfillStats(e.stdout, "stopped", what, st)
		var missing *types.ResourceNotFoundException
		switch {
		case errors.As(err, &missing):
			// Positions saved while a lost index table held entries would
			// skip those entries in the table made again.
			again := "run the backfill again"
			if store != nil {
				again += " with --restart"
			}
			return fmt.Errorf("backfill of %s stopped: a table it reads or writes does not exist; create it (prepare), then %s: %w", what, again, err)
		case store != nil:
			return fmt.Errorf("backfill of %s stopped (the same command resumes it from the saved positions): %w", what, err)
		}
		return fmt.Errorf("backfill of %s stopped: %w", what, err)
	}
	writeBackfillStats(e.stdout, "done", what, st)
	return nil
}

// int32Of converts a flag's value to an option's int32, saturating: a value
// out of int32's range stays out of the option's range, and
// backfillRule reports it as given.
func int32Of(n int) int32 {
	return int32(max(math.MinInt32, min(n, math.MaxInt32)))
}

// backfillFlags are the flags of BackfillOptions' fields, longest field
// name first.
var backfillFlags = []struct{ field, flag string }{
	{"WriteUnitsPerSecond", "rate"}, {"TotalSegments", "total-segments"},
	{"PageSize", "page-size"}, {"Workers", "workers"}, {"Segment", "segment"},
}

// backfillFields matches a BackfillOptions field name in a rule, and the
// value that follows it.
var backfillFields = regexp.MustCompile(`\b(WriteUnitsPerSecond|TotalSegments|PageSize|Workers|Segment)\b( (?:-?[0-9][0-9.e+-]*|NaN|[+-]Inf))?`)

// backfillRule words the error of BackfillOptions.Validate for the command
// line: each field as its flag, with the flag's value as given (before
// int32Of), so the rule is the library's and the names are the operator's.
func backfillRule(err error, fs *flagSet) string {
	msg := err.Error()
	var de *ddbindex.Error
	if errors.As(err, &de) {
		msg = de.Reason // without the code, which the exit status stands for
	}
	if _, rest, ok := strings.Cut(msg, "Backfill: "); ok {
		msg = strings.TrimPrefix(rest, "BackfillOptions.")
	}
	return backfillFields.ReplaceAllStringFunc(msg, func(m string) string {
		field, value, hasValue := strings.Cut(m, " ")
		for _, f := range backfillFlags {
			if f.field != field {
				continue
			}
			if !hasValue {
				return "--" + f.flag
			}
			if fl := fs.Lookup(f.flag); fl != nil && value != "" {
				value = fl.Value.String()
			}
			return "--" + f.flag + " " + value
		}
		return m
	})
}

// newBar returns the progress bar of a backfill on a terminal: items
// scanned of the estimate, a spinner while the estimate is unknown. It
// draws only when told: no goroutine of its own.
func newBar(w io.Writer, description string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("items"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionFullWidth(),
	)
}

// showProgress draws a backfill's progress.
func showProgress(bar *progressbar.ProgressBar, p migrate.BackfillProgress) {
	if p.Estimate >= 0 {
		if m := max(p.Estimate, int64(p.Scanned)); m != bar.GetMax64() {
			bar.ChangeMax64(m)
		}
	}
	_ = bar.Set64(int64(p.Scanned))
}

// writeBackfillStats prints what a backfill did.
func writeBackfillStats(w io.Writer, outcome, what string, st migrate.BackfillStats) {
	fmt.Fprintf(w, "backfill of %s %s: %d scanned, %d written, %d skipped (already there, or changed since the scan), %d unchanged, %d not in the index, %d tombstones\n",
		what, outcome, st.Scanned, st.Written, st.Skipped, st.Unchanged, st.Sparse, st.Tombstones)
	if st.Resumed > 0 || st.AlreadyDone > 0 {
		fmt.Fprintf(w, "  segments resumed from saved positions: %d; already done before this run: %d\n", st.Resumed, st.AlreadyDone)
	}
	// This run's own segments started from the beginning only when it had
	// no positions of its own.
	fresh := ", so its segments started from the beginning"
	if st.Resumed > 0 || st.AlreadyDone > 0 {
		fresh = ""
	}
	for _, n := range st.OtherTotals {
		fmt.Fprintf(w, "  saved positions of a scan in %d segments were not used: this run splits the scan otherwise%s (resume those with --total-segments %d)\n", n, fresh, n)
	}
}

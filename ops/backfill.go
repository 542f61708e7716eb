package ops

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ddbindex/ddbindex"
)

// This file holds the backfill command.

func runBackfill(e *env, args []string) error {
	fs := e.commandFlags("backfill", "--index INDEX")
	index := fs.String("index", "", "the logical `INDEX` whose new form to fill (required)")
	workers := fs.Int("workers", 1, "segments this process scans in parallel")
	segment := fs.Int("segment", 0, "the first segment this process scans (with --total-segments)")
	total := fs.Int("total-segments", 0, "segments of the whole scan; give process i of P (W workers each) --total-segments P*W --workers W --segment i*W (default: --workers)")
	rate := fs.Float64("rate", 0, "write units a second the backfill's writes may consume, all workers together (0: no cap)")
	pageSize := fs.Int("page-size", 0, "items a Scan request reads (default 500)")
	restart := fs.Bool("restart", false, "forget the saved positions first, and scan from the start")
	noCheckpoint := fs.Bool("no-checkpoint", false, "save no positions (a killed backfill then starts again from the beginning)")
	if err := e.parse(fs, args, "backfill"); err != nil {
		return err
	}
	if err := noArgs("backfill", fs); err != nil {
		return err
	}
	if *index == "" {
		return usageErr("backfill", "name the index to fill with --index")
	}
	for _, n := range []*int{segment, total, pageSize} {
		if *n < 0 || *n > 1<<30 {
			return usageErr("backfill", "--segment, --total-segments and --page-size must be 0 or more")
		}
	}
	t, ix, err := e.withIndex("backfill", *index)
	if err != nil {
		return err
	}
	filled := ix.Forms[len(ix.Forms)-1]
	what := fmt.Sprintf("%s %s (%s)", t.name(), indexName(ix.Name), formText(filled))

	var store *ddbindex.DynamoDBBackfillCheckpoints
	switch {
	case *noCheckpoint:
	case t.controlTable() == "":
		fmt.Fprintf(e.stderr, "%s: no control table (--control-table, or Options.ControlTable in ops.Model's options): positions are not saved, and a killed backfill starts again from the beginning\n", e.prog)
	default:
		store = &ddbindex.DynamoDBBackfillCheckpoints{Client: e.api(), Table: t.controlTable()}
	}
	// The key Backfill saves positions under: the physical base table, the
	// index and the form filled.
	key := t.baseTable() + "#" + ix.Name + "#" + filled.Kind.String()
	if *restart {
		if store == nil {
			return usageErr("backfill", "--restart forgets saved positions, which need a control table and no --no-checkpoint")
		}
		if err := store.Clear(e.ctx, key); err != nil {
			return fmt.Errorf("forgetting the saved positions of %s: %w", what, err)
		}
		fmt.Fprintf(e.stdout, "forgot the saved positions of %s in %s\n", what, t.controlTable())
	}

	var bar *progressbar.ProgressBar
	if e.opts.Terminal() {
		bar = newBar(e.stderr, "backfill "+ix.Name)
	}
	st, err := t.backfill(e.ctx, e.api(), ix.Name, func(o *ddbindex.BackfillOptions) {
		o.Workers = *workers
		o.Segment, o.TotalSegments = int32(*segment), int32(*total)
		o.WriteUnitsPerSecond = *rate
		o.PageSize = int32(*pageSize)
		if store != nil {
			o.Checkpoint = store
		}
		if bar != nil {
			o.Progress = func(p ddbindex.BackfillProgress) { showProgress(bar, p) }
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
		if store != nil {
			return fmt.Errorf("backfill of %s stopped (the same command resumes it from the saved positions): %w", what, err)
		}
		return fmt.Errorf("backfill of %s stopped: %w", what, err)
	}
	writeBackfillStats(e.stdout, "done", what, st)
	return nil
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
func showProgress(bar *progressbar.ProgressBar, p ddbindex.BackfillProgress) {
	if p.Estimate >= 0 {
		if m := max(p.Estimate, int64(p.Scanned)); m != bar.GetMax64() {
			bar.ChangeMax64(m)
		}
	}
	_ = bar.Set64(int64(p.Scanned))
}

// writeBackfillStats prints what a backfill did.
func writeBackfillStats(w io.Writer, outcome, what string, st ddbindex.BackfillStats) {
	fmt.Fprintf(w, "backfill of %s %s: %d scanned, %d written, %d skipped (already there, or changed since the scan), %d unchanged, %d not in the index, %d tombstones\n",
		what, outcome, st.Scanned, st.Written, st.Skipped, st.Unchanged, st.Sparse, st.Tombstones)
	if st.Resumed > 0 || st.AlreadyDone > 0 {
		fmt.Fprintf(w, "  segments resumed from saved positions: %d; already done before this run: %d\n", st.Resumed, st.AlreadyDone)
	}
	for _, n := range st.OtherTotals {
		fmt.Fprintf(w, "  saved positions of a scan in %d segments were not used: this run splits the scan otherwise, so its segments started from the beginning (resume those with --total-segments %d)\n", n, n)
	}
}

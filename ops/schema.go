package ops

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/schema"
)

// This file holds the commands about tables: check and prepare.

// api returns the client the commands pass to the library's calls that take
// one: RunOptions.Client, or a lazyClient.
func (e *env) api() Client {
	if e.opts.Client != nil {
		return e.opts.Client
	}
	return &lazyClient{e: e}
}

func runCheck(e *env, args []string) error {
	fs := e.commandFlags("check", "")
	if err := e.parse(fs, args, "check"); err != nil {
		return err
	}
	if err := noArgs("check", fs); err != nil {
		return err
	}
	ts, err := e.selected("check")
	if err != nil {
		return err
	}
	bad := 0
	for _, t := range ts {
		warnings, err := t.check(e.ctx, e.api())
		var se *schema.Error
		switch {
		case err == nil:
			fmt.Fprintf(e.stdout, "%s: ok, the live tables match the declarations\n", t.name())
			writeTables(e.stdout, "  ", t)
			writeWarnings(e.stdout, warnings)
		case errors.As(err, &se):
			bad++
			fmt.Fprintf(e.stdout, "%s: the live tables do not match the declarations (%s):\n", t.name(), ddbindex.Code(err))
			for _, p := range se.Problems {
				fmt.Fprintf(e.stdout, "  - %s\n", p)
			}
			writeWarnings(e.stdout, warnings)
		default:
			return fmt.Errorf("checking %s: %w", t.name(), err)
		}
	}
	if bad > 0 {
		return found
	}
	return nil
}

// writeWarnings lists what check accepts but reports, a line each.
func writeWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
}

// writeTables lists where t's base table and indexes live, a line each
// after indent.
func writeTables(w io.Writer, indent string, t table) {
	for _, ix := range t.indexes() {
		name := ix.Name
		if name == "" {
			name = "(base)"
		}
		forms := make([]string, len(ix.Forms))
		for i, f := range ix.Forms {
			forms[i] = formText(f)
		}
		shards := ""
		if ix.Shards > 0 {
			shards = fmt.Sprintf(", %d shards", ix.Shards)
		}
		fmt.Fprintf(w, "%s%-12s %s%s\n", indent, name, strings.Join(forms, "; kept: "), shards)
	}
}

// formText names one form of an index with its physical names.
func formText(f ddbindex.IndexForm) string {
	switch f.Kind {
	case ddbindex.BaseTable:
		return "table " + f.Table
	case ddbindex.IndexTable:
		return "index table " + f.Table
	}
	return fmt.Sprintf("%s %s on %s", f.Kind, f.Index, f.Table)
}

func runPrepare(e *env, args []string) error {
	fs := e.commandFlags("prepare", "")
	wait := fs.Duration("wait-timeout", 0, "bound on each wait for a table or GSI (default: Prepare's, one hour)")
	if err := e.parse(fs, args, "prepare"); err != nil {
		return err
	}
	if err := noArgs("prepare", fs); err != nil {
		return err
	}
	if *wait < 0 {
		return usageErr("prepare", "--wait-timeout %v is negative", *wait)
	}
	ts, err := e.selected("prepare")
	if err != nil {
		return err
	}
	bad := 0
	for _, t := range ts {
		report, err := t.prepare(e.ctx, e.api(), func(o *schema.PrepareOptions) {
			o.WaitTimeout = *wait
			o.Progress = func(ev schema.Event) { writePrepareEvent(e.stderr, t.name(), ev) }
		})
		var se *schema.Error
		switch {
		case err == nil && len(report.Steps) == 0:
			fmt.Fprintf(e.stdout, "%s: nothing to do\n", t.name())
		case err == nil:
			fmt.Fprintf(e.stdout, "%s: prepared\n", t.name())
			writeSteps(e.stdout, report)
		case errors.As(err, &se):
			bad++
			fmt.Fprintf(e.stdout, "%s: not prepared: gaps Prepare does not close (%s):\n", t.name(), ddbindex.Code(err))
			for _, p := range se.Problems {
				fmt.Fprintf(e.stdout, "  - %s\n", p)
			}
			writeSteps(e.stdout, report)
		default:
			if len(report.Steps) > 0 {
				fmt.Fprintf(e.stdout, "%s: stopped after:\n", t.name())
				writeSteps(e.stdout, report)
			}
			return fmt.Errorf("preparing %s (run prepare again to go on): %w", t.name(), err)
		}
	}
	if bad > 0 {
		return found
	}
	return nil
}

func writeSteps(w io.Writer, r schema.Report) {
	for _, s := range r.Steps {
		fmt.Fprintf(w, "  - %s\n", s)
	}
}

// writePrepareEvent reports a poll of one of Prepare's waits that is still
// waiting; polls that find everything ACTIVE are the wait's end, which the
// report's steps say.
func writePrepareEvent(w io.Writer, model string, ev schema.Event) {
	if ev.Busy == nil && ev.TableStatus == types.TableStatusActive && (ev.Index == "" || ev.IndexStatus == types.IndexStatusActive) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: table %s", model, ev.Step, orUnknown(string(ev.TableStatus)))
	if ev.Index != "" {
		fmt.Fprintf(&b, ", GSI %s %s", ev.Index, orUnknown(string(ev.IndexStatus)))
		if ev.Backfilling {
			fmt.Fprintf(&b, " (backfilling; %d items when DynamoDB last counted)", ev.ItemCount)
		}
	}
	if ev.Busy != nil {
		fmt.Fprintf(&b, "; busy, sending it again: %v", ev.Busy)
	}
	fmt.Fprintf(&b, " after %v\n", ev.Elapsed.Round(time.Second))
	io.WriteString(w, b.String())
}

func orUnknown(s string) string {
	if s == "" {
		return "(not yet described)"
	}
	return s
}

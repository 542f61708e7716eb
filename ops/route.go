package ops

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// This file holds the route command: the routes of the indexes that keep
// two forms, in the control table.

func runRoute(e *env, args []string) error {
	if len(args) > 0 && args[0] == "set" {
		return runRouteSet(e, args[1:])
	}
	if len(args) > 0 && args[0] == "show" {
		args = args[1:]
	}
	fs := e.commandFlags("route", "[show]")
	if err := e.parse(fs, args, "route"); err != nil {
		return err
	}
	if err := noArgs("route", fs); err != nil {
		return err
	}
	ts, err := e.selected("route")
	if err != nil {
		return err
	}
	for _, t := range ts {
		var two []ddbindex.IndexInfo
		for _, ix := range t.indexes() {
			if len(ix.Forms) == 2 {
				two = append(two, ix)
			}
		}
		if len(two) == 0 {
			fmt.Fprintf(e.stdout, "%s: no index keeps two forms: nothing to route\n", t.name())
			continue
		}
		if t.controlTable() == "" {
			return usageErr("route", "%s has no control table to read routes from: set --control-table, or ops.Model(...).ControlTable", t.name())
		}
		routes, err := t.routes(e.ctx)
		if err != nil {
			return fmt.Errorf("reading the routes of %s: %w", t.name(), err)
		}
		for _, ix := range two {
			r, ok := routes[ix.Name]
			fmt.Fprintf(e.stdout, "%s %s: %s\n", t.name(), ix.Name, routeText(ix, r, ok, t.controlTable()))
		}
	}
	return nil
}

// routeText says which partitions of ix read which form under route r (ok
// false: no route in the control table).
func routeText(ix ddbindex.IndexInfo, r migrate.Route, ok bool, control string) string {
	if len(ix.Forms) < 2 {
		// Not routed: the commands list and set the routes of indexes that
		// keep two forms only, but an index of one form must not panic here.
		if len(ix.Forms) == 0 {
			return "it keeps no form: nothing to route"
		}
		return "type=" + ix.Forms[0].Kind.String() + "; it keeps one form, which every read uses: nothing to route"
	}
	forms := fmt.Sprintf("type=%s, keep=%s", ix.Forms[0].Kind, ix.Forms[1].Kind)
	if !ok {
		return fmt.Sprintf("%s; no route in %s: reads use the %s (the declared type), unless the application's Options.Router says otherwise", forms, control, ix.Forms[0].Kind)
	}
	other := ix.Forms[0].Kind
	if other == r.To {
		other = ix.Forms[1].Kind
	}
	var sel []string
	if len(r.Partitions) > 0 {
		quoted := make([]string, len(r.Partitions))
		for i, p := range r.Partitions {
			quoted[i] = strconv.Quote(p)
		}
		sel = append(sel, "partitions "+strings.Join(quoted, ", "))
	}
	switch {
	case r.Percent >= 100:
		return fmt.Sprintf("%s; route: every partition reads the %s", forms, r.To)
	case r.Percent > 0:
		sel = append(sel, strconv.FormatFloat(r.Percent, 'g', -1, 64)+"% of all partitions (by a hash of the partition key)")
	}
	if len(sel) == 0 {
		return fmt.Sprintf("%s; route: every partition reads the %s", forms, other)
	}
	return fmt.Sprintf("%s; route: %s read the %s, the others the %s", forms, strings.Join(sel, " and "), r.To, other)
}

func runRouteSet(e *env, args []string) error {
	fs := e.commandFlags("route set", "--index INDEX --to FORM [--partition P]... [--percent N]")
	index := fs.String("index", "", "the logical `INDEX` to route")
	to := fs.String("to", "", "the `FORM` (gsi, lsi, table or native-gsi) the selected partitions read; the others read the other form")
	var parts listFlag
	fs.Var(&parts, "partition", "a partition that reads --to (a `TUPLE` of its partition components); give it once per partition")
	percent := fs.Float64("percent", 0, "this share (0 to 100) of all partitions reads --to, chosen by a stable hash of the partition key")
	force := fs.Bool("force", false, "set the route even though the fleet view says a live instance does not keep the form, or the control table records no finished backfill of it")
	if err := e.parse(fs, args, "route set"); err != nil {
		return err
	}
	if err := noArgs("route set", fs); err != nil {
		return err
	}
	k, ok := kindOf(*to)
	if !ok {
		return usageErr("route set", "--to %q: want gsi, lsi, table or native-gsi", *to)
	}
	if *index == "" {
		return usageErr("route set", "name the index to route with --index")
	}
	t, ix, err := e.withIndex("route set", *index)
	if err != nil {
		return err
	}
	// Which forms the index keeps comes first: a route of an index of one
	// form, or to a form it does not keep, is wrong whatever the other flags
	// say, and is refused as such before they are read.
	if len(ix.Forms) < 2 {
		return usageErr("route set", "%s %s keeps one form (type=%s), which every read uses: only an index that keeps two (keep= in its IndexSpec) has a route", t.name(), indexName(ix.Name), ix.Forms[0].Kind)
	}
	form := slices.IndexFunc(ix.Forms, func(f ddbindex.IndexForm) bool { return f.Kind == k })
	if form < 0 {
		return usageErr("route set", "--to %s: %s %s keeps no %s form (type=%s, keep=%s): route it to the %s or the %s", k, t.name(), indexName(ix.Name), k, ix.Forms[0].Kind, ix.Forms[1].Kind, ix.Forms[0].Kind, ix.Forms[1].Kind)
	}
	if err := (migrate.Route{To: k, Percent: *percent}).Validate(); err != nil {
		_, rule, _ := strings.Cut(err.Error(), "route: ")
		return usageErr("route set", "%s", strings.Replace(rule, "Percent", "--percent", 1))
	}
	if len(parts) == 0 && *percent == 0 {
		// A route that selects no partition sends every partition to the
		// other form: refuse it, so that "--to gsi" never means "all read
		// the table".
		return usageErr("route set", "say which partitions read the %s: --partition P (once per partition) or --percent N (every partition: --to %s --percent 100)", k, k)
	}
	if t.controlTable() == "" {
		return usageErr("route set", "%s has no control table to write the route to: set --control-table, or ops.Model(...).ControlTable", t.name())
	}
	r := migrate.Route{To: k, Percent: *percent}
	for _, p := range parts {
		values, err := partition(p, ix)
		if err != nil {
			return usageErr("route set", "%v", err)
		}
		key, err := ddbindex.EncodeKey(values...)
		if err != nil {
			return usageErr("route set", "partition %q: %v", p, err)
		}
		if !slices.Contains(r.Partitions, key) {
			r.Partitions = append(r.Partitions, key)
		}
	}
	if err := r.Validate(); err != nil {
		_, rule, _ := strings.Cut(err.Error(), "route: ")
		return usageErr("route set", "%s", rule)
	}
	// The declaration says the form is kept; the live schema says whether
	// it can serve reads. A route to a form that is gone (a GSI dropped,
	// an index table deleted) or not yet built would fail every read the
	// fleet routes to it.
	if err := e.formServes(t, ix, ix.Forms[form]); err != nil {
		return err
	}
	st, err := e.fleetView(t)
	if err != nil {
		return err
	}
	if err := e.guard(*force, fmt.Sprintf("route %s %s to the %s", t.name(), indexName(ix.Name), k), lacking(st, t, ix, k)); err != nil {
		return err
	}
	if err := e.backfillFinished(t, ix, k, *force); err != nil {
		return err
	}
	if err := t.setRoute(e.ctx, ix.Name, r); err != nil {
		return fmt.Errorf("setting the route of %s %s: %w", t.name(), indexName(ix.Name), err)
	}
	fmt.Fprintf(e.stdout, "%s %s: %s\n", t.name(), ix.Name, routeText(ix, r, true, t.controlTable()))
	fmt.Fprintf(e.stdout, "every instance of the fleet reads it within its migrate.Router's Refresh (default 30s)\n")
	return nil
}

// backfillFinished refuses (exit 2, nothing written) a route to form k of
// index ix when k is filled by a backfill (an index table, or a GSI whose
// keys the library derives) and the control table records no finished
// backfill of it, unless force: the entries of the items written before
// every writer kept the form are missing there until the backfill writes
// them, and reads routed to it would miss those items. The declared type
// is not refused: reads that no route selects go to it anyway. Native GSIs
// and LSIs are not refused either: DynamoDB indexes a native GSI's items
// itself, and an LSI is made with its table.
func (e *env) backfillFinished(t table, ix ddbindex.IndexInfo, k ddbindex.Kind, force bool) error {
	if k == ix.Forms[0].Kind || (k != ddbindex.IndexTable && k != ddbindex.GSI) {
		return nil
	}
	ready, err := t.backfilled(e.ctx)
	if err != nil {
		return fmt.Errorf("reading which backfills of %s finished: %w", t.name(), err)
	}
	if slices.Contains(ready[ix.Name], k) {
		return nil
	}
	why := fmt.Sprintf("control table %s records no finished backfill of the %s of %s %s, so it lacks the items written before every writer kept it",
		t.controlTable(), k, t.name(), indexName(ix.Name))
	if force {
		fmt.Fprintf(e.stderr, "%s: --force: going on although the %s\n", e.prog, why)
		return nil
	}
	return &exitError{code: exitTrouble, err: fmt.Errorf("refusing to route %s %s to the %s: the %s; run %s backfill --index %s (it records its end) and route then, or --force when the %s holds every item already (the form the index had before the migration began)",
		t.name(), indexName(ix.Name), k, why, e.prog, ix.Name, k)}
}

// formServes checks, with DescribeTable, that form f of index ix of t is in
// the live schema and can serve reads: its table is ACTIVE or UPDATING
// (an update, such as a throughput change or another index being built,
// leaves it readable), and a GSI is ACTIVE or UPDATING and not backfilling;
// an LSI, made with its table, serves when its table does. Anything else
// is a refusal, exit 2, before anything is written; a failed DescribeTable
// is one too.
func (e *env) formServes(t table, ix ddbindex.IndexInfo, f ddbindex.IndexForm) error {
	api, err := e.dynamo()
	if err != nil {
		return err
	}
	what := "index table " + f.Table
	if f.Kind != ddbindex.IndexTable {
		what = fmt.Sprintf("%s %s of table %s", strings.ToUpper(f.Kind.String()), f.Index, f.Table)
	}
	refuse := func(format string, args ...any) error {
		return &exitError{code: exitTrouble, err: fmt.Errorf("refusing to route %s %s to the %s: %s; every read routed to it would fail (run check, and route to a form that serves)",
			t.name(), indexName(ix.Name), f.Kind, fmt.Sprintf(format, args...))}
	}
	out, err := api.DescribeTable(e.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.Table)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return refuse("table %s does not exist", f.Table)
	case err != nil:
		return fmt.Errorf("checking that the %s serves reads before routing %s %s to it: %w", what, t.name(), indexName(ix.Name), err)
	case out.Table == nil:
		return refuse("DescribeTable of %s describes no table", f.Table)
	}
	readable := func(s string) bool { return s == "ACTIVE" || s == "UPDATING" }
	if s := string(out.Table.TableStatus); !readable(s) {
		return refuse("table %s is %s", f.Table, s)
	}
	switch f.Kind {
	case ddbindex.GSI, ddbindex.NativeGSI:
		i := slices.IndexFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
			return aws.ToString(g.IndexName) == f.Index
		})
		if i < 0 {
			return refuse("table %s has no GSI %s", f.Table, f.Index)
		}
		g := out.Table.GlobalSecondaryIndexes[i]
		// DynamoDB reports a GSI being added CREATING, first allocating
		// resources and then backfilling (Backfilling true); it refuses
		// to read it until it is ACTIVE.
		s := string(g.IndexStatus)
		switch backfilling := aws.ToBool(g.Backfilling); {
		case s == "CREATING" && backfilling:
			return refuse("the %s is CREATING: it is still backfilling the table's items", what)
		case s == "CREATING":
			return refuse("the %s is CREATING: DynamoDB is still allocating it", what)
		case !readable(s):
			return refuse("the %s is %s", what, s)
		case backfilling:
			return refuse("the %s is %s and still backfilling the table's items", what, s)
		}
	case ddbindex.LSI:
		if !slices.ContainsFunc(out.Table.LocalSecondaryIndexes, func(l types.LocalSecondaryIndexDescription) bool {
			return aws.ToString(l.IndexName) == f.Index
		}) {
			return refuse("table %s has no LSI %s", f.Table, f.Index)
		}
	}
	return nil
}

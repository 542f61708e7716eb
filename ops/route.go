package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	to := fs.String("to", "", "the `FORM` (gsi, lsi or table) the selected partitions read; the others read the other form")
	var parts listFlag
	fs.Var(&parts, "partition", "a partition that reads --to (a `TUPLE` of its partition components); give it once per partition")
	percent := fs.Float64("percent", 0, "this share (0 to 100) of all partitions reads --to, chosen by a stable hash of the partition key")
	if err := e.parse(fs, args, "route set"); err != nil {
		return err
	}
	if err := noArgs("route set", fs); err != nil {
		return err
	}
	k, ok := kindOf(*to)
	if !ok {
		return usageErr("route set", "--to %q: want gsi, lsi or table", *to)
	}
	if *index == "" {
		return usageErr("route set", "name the index to route with --index")
	}
	if err := (migrate.Route{To: k, Percent: *percent}).Validate(); err != nil {
		_, rule, _ := strings.Cut(err.Error(), "route: ")
		return usageErr("route set", "%s", strings.Replace(rule, "Percent", "--percent", 1))
	}
	t, ix, err := e.withIndex("route set", *index)
	if err != nil {
		return err
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
	if err := t.setRoute(e.ctx, ix.Name, r); err != nil {
		return fmt.Errorf("setting the route of %s %s: %w", t.name(), indexName(ix.Name), err)
	}
	fmt.Fprintf(e.stdout, "%s %s: %s\n", t.name(), ix.Name, routeText(ix, r, true, t.controlTable()))
	fmt.Fprintf(e.stdout, "every instance of the fleet reads it within its migrate.Router's Refresh (default 30s)\n")
	return nil
}

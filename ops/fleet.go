package ops

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// This file holds the commands that read the fleet view (migrate.Fleet's
// entries in the control table): rollout status, the guards of backfill,
// route set and drop, and shadow, which switches shadow reads at run time.

// declared is the base table's name as declared: the name the fleet view
// and the routes key a model by.
func declared(t table) string { return t.indexes()[0].Forms[0].Declared }

// fleetView reads the fleet view from t's control table.
func (e *env) fleetView(t table) (*migrate.FleetStatus, error) {
	api, err := e.dynamo()
	if err != nil {
		return nil, err
	}
	st, err := migrate.ReadFleet(e.ctx, api, t.controlTable(), e.opts.Now())
	if err != nil {
		return nil, fmt.Errorf("reading the fleet view: %w", err)
	}
	return st, nil
}

// guard refuses an operation (exit 2, nothing written) when blockers are
// not empty, unless force; with force it says what it overrides.
func (e *env) guard(force bool, what string, blockers []string) error {
	if len(blockers) == 0 {
		return nil
	}
	if force {
		fmt.Fprintf(e.stderr, "%s: --force: going on although %s\n", e.prog, strings.Join(blockers, "; "))
		return nil
	}
	return &exitError{code: exitTrouble, err: fmt.Errorf("refusing to %s: %s (see rollout status; --force overrides)", what, strings.Join(blockers, "; "))}
}

// lacking names the live instances that register t but do not keep form of
// index ix.
func lacking(st *migrate.FleetStatus, t table, ix ddbindex.IndexInfo, form ddbindex.Kind) []string {
	var out []string
	for _, in := range st.Lacking(declared(t), ix.Name, form) {
		keeps := "no such index"
		for _, ts := range in.Tables {
			if i := slices.IndexFunc(ts.Indexes, func(x migrate.IndexState) bool { return x.Index == ix.Name }); ts.Table == declared(t) && i >= 0 {
				keeps = "keeps " + kinds(ts.Indexes[i].Keeps)
			}
		}
		out = append(out, fmt.Sprintf("live instance %s (version %s) does not keep the %s (%s)", in.ID, in.Version, form, keeps))
	}
	return out
}

func kinds(ks []ddbindex.Kind) string {
	if len(ks) == 0 {
		return "-"
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}

// ago renders how long before at t was.
func ago(at, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return at.Sub(t).Round(time.Second).String() + " ago"
}

func runRollout(e *env, args []string) error {
	if len(args) == 0 || args[0] != "status" {
		return usageErr("rollout", "say what to show: rollout status")
	}
	fs := e.commandFlags("rollout status", "[--window D]")
	window := fs.Duration("window", time.Hour, "the span of the served-read counts and of \"last served\"")
	if err := e.parse(fs, args[1:], "rollout status"); err != nil {
		return err
	}
	if err := noArgs("rollout status", fs); err != nil {
		return err
	}
	if *window <= 0 {
		return usageErr("rollout status", "--window %v: want a positive duration", *window)
	}
	ts, err := e.selected("rollout status")
	if err != nil {
		return err
	}
	if ts[0].controlTable() == "" {
		return usageErr("rollout status", "no control table to read the fleet view from: set --control-table, or ops.Model(...).ControlTable")
	}
	st, err := e.fleetView(ts[0])
	if err != nil {
		return err
	}
	at := st.At
	fmt.Fprintf(e.stdout, "fleet view of %s at %s\n", ts[0].controlTable(), at.UTC().Format(time.RFC3339))
	if len(st.Instances) == 0 {
		fmt.Fprintf(e.stdout, "no instance has registered (migrate.Fleet): nothing is known of the fleet\n")
	}
	// Columns as wide as their widest value, so that ids and versions of
	// different lengths line up.
	var idW, verW, beatW int
	for _, in := range st.Instances {
		idW, verW, beatW = max(idW, len(in.ID)), max(verW, len(in.Version)), max(beatW, len(ago(at, in.Heartbeat)))
	}
	for _, in := range st.Instances {
		state := "live"
		switch {
		case in.Stopped:
			state = "stopped"
		case !in.Live:
			state = "expired"
		}
		routes := "no Router"
		switch {
		case !in.Routed:
		case in.RouteError != "":
			routes = "route refresh FAILING: " + in.RouteError
		case !in.RoutesRead.IsZero():
			routes = "routes read " + ago(at, in.RoutesRead)
		default:
			routes = "routes not read yet"
		}
		if in.StaleRoutes {
			routes += ", STALE (a route changed since)"
		}
		fmt.Fprintf(e.stdout, "  %-8s %-*s  version %-*s  heartbeat %-*s  %s\n", state, idW, in.ID, verW, in.Version, beatW, ago(at, in.Heartbeat), routes)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(e.stdout, "  unreadable entry: %s\n", p)
	}
	for _, t := range ts {
		for _, ix := range t.indexes()[1:] {
			fmt.Fprintf(e.stdout, "%s %s:\n", t.name(), ix.Name)
			for _, in := range st.Live() {
				for _, tt := range in.Tables {
					if tt.Table != declared(t) {
						continue
					}
					i := slices.IndexFunc(tt.Indexes, func(x migrate.IndexState) bool { return x.Index == ix.Name })
					if i < 0 {
						fmt.Fprintf(e.stdout, "  %s (model %s %s): no such index\n", in.ID, tt.Model, tt.Fingerprint)
						continue
					}
					x := tt.Indexes[i]
					fmt.Fprintf(e.stdout, "  %s (model %s %s): keeps %s; serves %s; shadows %s\n", in.ID, tt.Model, tt.Fingerprint, kinds(x.Keeps), kinds(x.Serves), kinds(x.Shadows))
				}
			}
			served := st.Served(declared(t), ix.Name, at.Add(-*window))
			var total int64
			for _, n := range served {
				total += n
			}
			// The forms this model keeps, then those other model versions
			// served from (the GSI a step-4 command no longer declares):
			// every share is of the same total.
			forms := formKinds(ix)
			for _, k := range slices.Sorted(maps.Keys(served)) {
				if !slices.Contains(forms, k) {
					forms = append(forms, k)
				}
			}
			var parts, last []string
			for i, k := range forms {
				share := ""
				switch {
				case i >= len(ix.Forms): // served, so total > 0
					share = fmt.Sprintf(" (%.0f%%; a form this model does not keep)", 100*float64(served[k])/float64(total))
				case total > 0:
					share = fmt.Sprintf(" (%.0f%%)", 100*float64(served[k])/float64(total))
				}
				parts = append(parts, fmt.Sprintf("%s %d%s", k, served[k], share))
				last = append(last, fmt.Sprintf("%s %s", k, ago(at, st.LastServed(declared(t), ix.Name, k))))
			}
			if len(ix.Forms) == 1 && total == 0 {
				// Reads of an index of one form are not observed: a 0 here
				// would say that nothing read it.
				parts = []string{fmt.Sprintf("not counted (an index of one form; every live instance serves its %s)", ix.Forms[0].Kind)}
			}
			fmt.Fprintf(e.stdout, "  served reads, last %v: %s\n", *window, strings.Join(parts, ", "))
			fmt.Fprintf(e.stdout, "  last served read: %s\n", strings.Join(last, ", "))
		}
	}
	return nil
}

func runShadow(e *env, args []string) error {
	if len(args) == 0 || args[0] != "set" {
		return usageErr("shadow", "say what to do: shadow set --index INDEX --rate R")
	}
	fs := e.commandFlags("shadow set", "--index INDEX --rate R")
	index := fs.String("index", "", "the logical `INDEX` whose reads to shadow")
	rate := fs.String("rate", "", "the share of its pages (0 to 1) each instance reads again on the other form and compares")
	if err := e.parse(fs, args[1:], "shadow set"); err != nil {
		return err
	}
	if err := noArgs("shadow set", fs); err != nil {
		return err
	}
	if *index == "" {
		return usageErr("shadow set", "name the index with --index")
	}
	r, err := strconv.ParseFloat(*rate, 64)
	if err != nil || !(r >= 0 && r <= 1) {
		return usageErr("shadow set", "--rate %q: want a number from 0 to 1", *rate)
	}
	t, ix, err := e.withIndex("shadow set", *index)
	if err != nil {
		return err
	}
	if len(ix.Forms) < 2 {
		return usageErr("shadow set", "%s %s keeps one form (type=%s): there is nothing to compare it with", t.name(), indexName(ix.Name), ix.Forms[0].Kind)
	}
	if t.controlTable() == "" {
		return usageErr("shadow set", "%s has no control table to write the rate to: set --control-table, or ops.Model(...).ControlTable", t.name())
	}
	if err := t.setShadow(e.ctx, ix.Name, r); err != nil {
		return fmt.Errorf("setting the shadow rate of %s %s: %w", t.name(), indexName(ix.Name), err)
	}
	fmt.Fprintf(e.stdout, "%s %s: shadow rate %g\n", t.name(), ix.Name, r)
	fmt.Fprintf(e.stdout, "instances whose Shadows follow the control table (ShadowOptions.Router) take it within their Router's Refresh; an index table is compared once its backfill has finished\n")
	return nil
}

func runDrop(e *env, args []string) error {
	fs := e.commandFlags("drop", "--index INDEX --form FORM")
	index := fs.String("index", "", "the logical `INDEX` whose form to drop")
	formFlag := fs.String("form", "", "the `FORM` to drop (gsi, native-gsi or table): the one the declaration keeps besides its type")
	quiet := fs.Duration("quiet-for", time.Hour, "how long the fleet must have served no read from the form")
	force := fs.Bool("force", false, "drop even though the fleet view says the form is in use (or there is none)")
	if err := e.parse(fs, args, "drop"); err != nil {
		return err
	}
	if err := noArgs("drop", fs); err != nil {
		return err
	}
	if *index == "" {
		return usageErr("drop", "name the index with --index")
	}
	k, ok := kindOf(*formFlag)
	if !ok || k == ddbindex.LSI {
		return usageErr("drop", "--form %q: want gsi, native-gsi or table (an LSI lives and dies with its table)", *formFlag)
	}
	if *quiet < 0 {
		return usageErr("drop", "--quiet-for %v: want a duration of 0 or more", *quiet)
	}
	t, ix, err := e.withIndex("drop", *index)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ix.Forms, func(f ddbindex.IndexForm) bool { return f.Kind == k })
	switch {
	case i < 0:
		return usageErr("drop", "%s %s keeps no %s form (%s): name the form with the model version that keeps it", t.name(), indexName(ix.Name), k, kinds(formKinds(ix)))
	case i == 0:
		return usageErr("drop", "the %s is %s %s's declared type, which its reads fall back to: deploy a model that declares the other type (keep=%s) and route every read there first", k, t.name(), indexName(ix.Name), k)
	}
	f := ix.Forms[i]
	what := "index table " + f.Table
	if k == ddbindex.GSI || k == ddbindex.NativeGSI {
		what = fmt.Sprintf("GSI %s of table %s", f.Index, f.Table)
	}
	var blockers []string
	if t.controlTable() == "" {
		blockers = append(blockers, "there is no control table, so no fleet view to say that nothing uses it")
	} else {
		st, err := e.fleetView(t)
		if err != nil {
			return err
		}
		if len(st.Instances) == 0 {
			blockers = append(blockers, "no instance has registered in the fleet view (migrate.Fleet), so nothing says that nothing uses it")
		}
		if err := st.CheckDrop(declared(t), ix.Name, k, *quiet); err != nil {
			_, why, _ := strings.Cut(err.Error(), ix.Name+": ")
			blockers = append(blockers, why)
		}
	}
	if err := e.guard(*force, "drop the "+what, blockers); err != nil {
		return err
	}
	api, err := e.dynamo()
	if err != nil {
		return err
	}
	if k == ddbindex.GSI || k == ddbindex.NativeGSI {
		_, err = api.UpdateTable(e.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.Table),
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String(f.Index)}}}})
	} else {
		_, err = api.DeleteTable(e.ctx, &dynamodb.DeleteTableInput{TableName: aws.String(f.Table)})
	}
	var nf *types.ResourceNotFoundException
	gone := errors.As(err, &nf)
	if err != nil && !gone {
		return fmt.Errorf("dropping the %s: %w", what, err)
	}
	// A form created again later holds none of the items written while it
	// was gone: a record that its backfill finished, or finished positions,
	// left behind would let route set and Shadows take it as filled, and a
	// later backfill skip every segment.
	if t.controlTable() != "" {
		store := &migrate.DynamoDBCheckpoints{Client: e.api(), Table: t.controlTable()}
		if err := t.forgetBackfill(e.ctx, store, ix.Name, k); err != nil {
			return fmt.Errorf("the %s is dropped, but forgetting its backfill in %s failed (run backfill --index %s --restart once the form exists again): %w", what, t.controlTable(), ix.Name, err)
		}
	}
	if gone {
		fmt.Fprintf(e.stdout, "the %s is gone already\n", what)
		return nil
	}
	fmt.Fprintf(e.stdout, "dropping the %s (DynamoDB deletes it in the background)\n", what)
	fmt.Fprintf(e.stdout, "next: deploy the model without keep=%s; until then the start-up check reports the missing kept form\n", k)
	return nil
}

func formKinds(ix ddbindex.IndexInfo) []ddbindex.Kind {
	out := make([]ddbindex.Kind, len(ix.Forms))
	for i, f := range ix.Forms {
		out[i] = f.Kind
	}
	return out
}

package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
)

// This file holds the fleet view as read back from the control table
// (ReadFleet, FleetStatus) and the questions a migration's steps ask of it.

// Instance is one instance's entry in the fleet view.
type Instance struct {
	// ID is the instance id (FleetOptions.Instance); Version the service's
	// version and Library this library's, as the instance reported them.
	ID, Version, Library string
	// Started is when the instance made its Fleet, Heartbeat when it last
	// wrote its entry, Expires when it stops counting as live without
	// another heartbeat; Every is its heartbeat interval.
	Started, Heartbeat, Expires time.Time
	Every                       time.Duration
	// Stopped is true when the instance closed its Fleet.
	Stopped bool
	// Live is true when the instance neither stopped nor expired at the
	// time of the view.
	Live bool
	// Tables are the models the instance registered.
	Tables []TableState
	// Routed is true when the instance routes by a *Router (the fleet's
	// routes). RoutesRead is when that Router last read every routed
	// table's routes (zero before its first good read); RouteError is its
	// last refresh's error, "" when it read them. StaleRoutes is true when
	// the instance is live and a route of one of its tables changed after
	// the last change its Router has read: it may still route by the old
	// one.
	Routed      bool
	RoutesRead  time.Time
	RouteError  string
	StaleRoutes bool
	// Windows are the read counts of the instance's last heartbeat
	// windows, oldest first.
	Windows []ReadWindow
	// LastServed is when the instance last served a read from each form
	// of an index that keeps two forms.
	LastServed []FormRead
}

// TableState is a model as an instance registered it.
type TableState struct {
	// Table is the base table as declared; Model the model's type name;
	// Fingerprint a hash of its declaration (indexes, forms, names, keys):
	// instances that differ in it run different model versions.
	Table, Model, Fingerprint string
	Indexes                   []IndexState
	// RoutesSeen is the time of the last change of the table's routes
	// (the route items' updated) that the instance's Router has read or
	// made.
	RoutesSeen time.Time
}

// IndexState is what an instance does with one index: the forms it keeps
// (the declared type first), those its routing may send reads to, and those
// its Shadows reads in the background.
type IndexState struct {
	Index                  string
	Keeps, Serves, Shadows []ddbindex.Kind
}

// ReadWindow is the read counts of one heartbeat window, [Start, End).
type ReadWindow struct {
	Start, End time.Time
	Reads      []FormReads
}

// FormReads counts the pages read from one form of an index in a window:
// Served those the routing chose the form for, Admin those a query sent
// there itself ([ddbindex.Query.Via]: verify, comparisons).
type FormReads struct {
	Table, Index  string
	Form          ddbindex.Kind
	Served, Admin int64
}

// FormRead is when a form of an index last served a read.
type FormRead struct {
	Table, Index string
	Form         ddbindex.Kind
	At           time.Time
}

// FleetStatus is the fleet view at a time: every instance's entry in the
// control table.
type FleetStatus struct {
	// At is the time of the view: liveness and windows are judged at it.
	At time.Time
	// Instances are the entries, live or not, by ID.
	Instances []Instance
	// Problems names the entries that could not be read (they are left
	// out of Instances).
	Problems []string
}

// ReadFleet reads the fleet view from the control table: every instance's
// entry, judged live at now (the zero time: time.Now), and for each table
// an instance registered, the routes' last change, to tell instances whose
// routes are stale. Each optFn is applied to its requests. A failed read
// is a [*ddbindex.Error] (ErrDynamoDB).
func ReadFleet(ctx context.Context, api RouterAPI, controlTable string, now time.Time, optFns ...func(*dynamodb.Options)) (*FleetStatus, error) {
	switch {
	case api == nil:
		return nil, fmt.Errorf("%w: migrate.ReadFleet: a nil client", ddbindex.ErrInvalidQuery)
	case controlTable == "":
		return nil, fmt.Errorf("%w: migrate.ReadFleet: no control table named", ddbindex.ErrInvalidQuery)
	case slices.IndexFunc(optFns, func(fn func(*dynamodb.Options)) bool { return fn == nil }) >= 0:
		return nil, fmt.Errorf("%w: migrate.ReadFleet: a nil option function", ddbindex.ErrInvalidQuery)
	}
	if now.IsZero() {
		now = time.Now()
	}
	st := &FleetStatus{At: now}
	items, err := queryAll(ctx, api, controlTable, fleetPK, optFns)
	if err != nil {
		return nil, fmt.Errorf("migrate: read the fleet view from %s: %w", controlTable, err)
	}
	tables := map[string]bool{}
	for _, item := range items {
		inst, err := instanceFromItem(item)
		if err != nil {
			st.Problems = append(st.Problems, err.Error())
			continue
		}
		inst.Live = !inst.Stopped && now.Before(inst.Expires)
		for _, t := range inst.Tables {
			tables[t.Table] = true
		}
		st.Instances = append(st.Instances, inst)
	}
	changed := map[string]time.Time{} // table → the last route change
	for _, t := range slices.Sorted(maps.Keys(tables)) {
		routes, err := queryAll(ctx, api, controlTable, routePrefix+t, optFns)
		if err != nil {
			return nil, fmt.Errorf("migrate: read the routes of %s from %s: %w", t, controlTable, err)
		}
		for _, it := range routes {
			if at := routeUpdated(it); at.After(changed[t]) {
				changed[t] = at
			}
		}
	}
	for i := range st.Instances {
		inst := &st.Instances[i]
		if !inst.Routed || !inst.Live {
			continue // a stopped or expired instance routes nothing
		}
		for _, t := range inst.Tables {
			if changed[t.Table].After(t.RoutesSeen) {
				inst.StaleRoutes = true
			}
		}
	}
	slices.SortFunc(st.Instances, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return st, nil
}

// queryAll reads every item of one partition of the control table.
func queryAll(ctx context.Context, api RouterAPI, control, pk string, opts []func(*dynamodb.Options)) ([]map[string]types.AttributeValue, error) {
	x, err := expression.NewBuilder().WithKeyCondition(expression.Key(controlPK).Equal(expression.Value(pk))).Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbindex.ErrInvalidQuery, err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(control), KeyConditionExpression: x.KeyCondition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(), ConsistentRead: aws.Bool(true)}
	var items []map[string]types.AttributeValue
	for {
		out, err := api.Query(ctx, in, opts...)
		if err != nil {
			return nil, controlCallErr("Query", control, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Live returns the live instances.
func (s *FleetStatus) Live() []Instance {
	if s == nil {
		return nil
	}
	var live []Instance
	for _, in := range s.Instances {
		if in.Live {
			live = append(live, in)
		}
	}
	return live
}

// index returns what inst registered of table's index (ok false when it
// registered the table without it); has is false when it did not register
// the table.
func (inst Instance) index(table, index string) (ix IndexState, has, ok bool) {
	for _, t := range inst.Tables {
		if t.Table != table {
			continue
		}
		for _, x := range t.Indexes {
			if x.Index == index {
				return x, true, true
			}
		}
		return IndexState{}, true, false
	}
	return IndexState{}, false, false
}

// Lacking returns the live instances that registered table but do not keep
// form for its index (an instance whose model has no such index keeps
// none): they would not keep the form in step, nor read it.
func (s *FleetStatus) Lacking(table, index string, form ddbindex.Kind) []Instance {
	var out []Instance
	for _, in := range s.Live() {
		ix, has, ok := in.index(table, index)
		if has && (!ok || !slices.Contains(ix.Keeps, form)) {
			out = append(out, in)
		}
	}
	return out
}

// Using returns the live instances whose routing may send reads of index to
// form, or whose Shadows reads it.
func (s *FleetStatus) Using(table, index string, form ddbindex.Kind) []Instance {
	var out []Instance
	for _, in := range s.Live() {
		if ix, _, ok := in.index(table, index); ok && (slices.Contains(ix.Serves, form) || slices.Contains(ix.Shadows, form)) {
			out = append(out, in)
		}
	}
	return out
}

// Served sums, per form, the reads of index that instances served in the
// windows that ended after since (a window that straddles since counts
// whole), live or not.
func (s *FleetStatus) Served(table, index string, since time.Time) map[ddbindex.Kind]int64 {
	out := map[ddbindex.Kind]int64{}
	if s == nil {
		return out
	}
	for _, in := range s.Instances {
		for _, w := range in.Windows {
			if !w.End.After(since) {
				continue
			}
			for _, r := range w.Reads {
				if r.Table == table && r.Index == index {
					out[r.Form] += r.Served
				}
			}
		}
	}
	return out
}

// LastServed returns when any instance, live or not, last served a read of
// index from form, as far as the entries tell: a live instance whose
// routing may send reads to the form, or whose index keeps that one form,
// counts as serving it at the time of the view.
func (s *FleetStatus) LastServed(table, index string, form ddbindex.Kind) time.Time {
	var last time.Time
	if s == nil {
		return last
	}
	for _, in := range s.Instances {
		for _, r := range in.LastServed {
			if r.Table == table && r.Index == index && r.Form == form && r.At.After(last) {
				last = r.At
			}
		}
		if ix, _, ok := in.index(table, index); ok && slices.Contains(ix.Serves, form) {
			// Reads of an index with one form are not counted: the instance
			// served it until its last heartbeat (and, when it crashed, up
			// to the next it did not write).
			at := in.Heartbeat
			if in.Live {
				at = s.At
			} else if !in.Stopped {
				at = in.Heartbeat.Add(in.Every)
			}
			if len(ix.Keeps) == 1 && at.After(last) {
				last = at
			}
		}
	}
	return last
}

// CheckDrop reports whether form of index can be dropped (a GSI deleted,
// an index table deleted): nil when no live instance keeps it as its only
// form, serves it or shadows it, and no instance served a read from it
// for quiet; otherwise an error matching [ddbindex.ErrConflict] that
// names every reason. The instances that registered nothing of table are
// not asked.
func (s *FleetStatus) CheckDrop(table, index string, form ddbindex.Kind, quiet time.Duration) error {
	if s == nil {
		return fmt.Errorf("%w: migrate.FleetStatus.CheckDrop: no fleet view (read it with ReadFleet)", ddbindex.ErrInvalidQuery)
	}
	var why []string
	for _, in := range s.Using(table, index, form) {
		ix, _, _ := in.index(table, index)
		what := "serves"
		if !slices.Contains(ix.Serves, form) {
			what = "shadows"
		}
		why = append(why, fmt.Sprintf("live instance %s (version %s) %s reads of it (keeps %s)", in.ID, in.Version, what, kindsText(ix.Keeps)))
	}
	if last := s.LastServed(table, index, form); !last.IsZero() && s.At.Sub(last) < quiet {
		why = append(why, fmt.Sprintf("the fleet served a read from it %s ago, less than the quiet period %s", s.At.Sub(last).Round(time.Second), quiet))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: drop the %s of %s index %s: %s", ddbindex.ErrConflict, form, table, index, strings.Join(why, "; "))
}

// kindsText renders forms as "gsi, table".
func kindsText(ks []ddbindex.Kind) string { return strings.Join(kindNames(ks), ", ") }

// ---- the stored entry ---------------------------------------------------

// storedInstance is an entry's state attribute, in JSON: times in Unix
// milliseconds, forms by their tag names.
type storedInstance struct {
	Version    string         `json:"version"`
	Library    string         `json:"library"`
	Started    int64          `json:"started"`
	Every      int64          `json:"every"`
	Tables     []storedTable  `json:"tables"`
	Routed     bool           `json:"routed,omitempty"`
	RoutesRead int64          `json:"routesRead,omitempty"`
	RouteError string         `json:"routeError,omitempty"`
	Windows    []storedWindow `json:"windows"`
	LastServed []storedRead   `json:"lastServed,omitempty"`
}

type storedTable struct {
	Table       string        `json:"table"`
	Model       string        `json:"model"`
	Fingerprint string        `json:"fingerprint"`
	Indexes     []storedIndex `json:"indexes"`
	RoutesSeen  string        `json:"routesSeen,omitempty"` // RFC 3339, as the route items hold it
}

type storedIndex struct {
	Index   string   `json:"index"`
	Keeps   []string `json:"keeps"`
	Serves  []string `json:"serves"`
	Shadows []string `json:"shadows,omitempty"`
}

type storedWindow struct {
	Start int64         `json:"start"`
	End   int64         `json:"end"`
	Reads []storedReads `json:"reads,omitempty"`
}

type storedReads struct {
	Table  string `json:"table"`
	Index  string `json:"index"`
	Form   string `json:"form"`
	Served int64  `json:"served,omitempty"`
	Admin  int64  `json:"admin,omitempty"`
}

type storedRead struct {
	Table string `json:"table"`
	Index string `json:"index"`
	Form  string `json:"form"`
	At    int64  `json:"at"`
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func kindNames(ks []ddbindex.Kind) []string {
	if len(ks) == 0 {
		return nil
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return out
}

func kindsOf(names []string) ([]ddbindex.Kind, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]ddbindex.Kind, len(names))
	for i, n := range names {
		k, ok := formKind(n)
		if !ok {
			return nil, fmt.Errorf("%q is not a form", n)
		}
		out[i] = k
	}
	return out, nil
}

func toStored(in Instance) storedInstance {
	s := storedInstance{Version: in.Version, Library: in.Library, Started: ms(in.Started), Every: in.Every.Milliseconds(),
		Routed: in.Routed, RoutesRead: ms(in.RoutesRead), RouteError: in.RouteError}
	for _, t := range in.Tables {
		st := storedTable{Table: t.Table, Model: t.Model, Fingerprint: t.Fingerprint}
		if !t.RoutesSeen.IsZero() {
			st.RoutesSeen = t.RoutesSeen.UTC().Format(time.RFC3339Nano)
		}
		for _, ix := range t.Indexes {
			st.Indexes = append(st.Indexes, storedIndex{Index: ix.Index, Keeps: kindNames(ix.Keeps), Serves: kindNames(ix.Serves), Shadows: kindNames(ix.Shadows)})
		}
		s.Tables = append(s.Tables, st)
	}
	for _, w := range in.Windows {
		sw := storedWindow{Start: ms(w.Start), End: ms(w.End)}
		for _, r := range w.Reads {
			sw.Reads = append(sw.Reads, storedReads{Table: r.Table, Index: r.Index, Form: r.Form.String(), Served: r.Served, Admin: r.Admin})
		}
		s.Windows = append(s.Windows, sw)
	}
	for _, r := range in.LastServed {
		s.LastServed = append(s.LastServed, storedRead{Table: r.Table, Index: r.Index, Form: r.Form.String(), At: ms(r.At)})
	}
	return s
}

// instanceFromItem reads an entry; what does not fit is an error naming the
// instance and what is wrong.
func instanceFromItem(item map[string]types.AttributeValue) (Instance, error) {
	var in Instance
	sk, ok := item[controlSK].(*types.AttributeValueMemberS)
	if !ok {
		return in, fmt.Errorf("a fleet entry without an S %s (its instance id)", controlSK)
	}
	in.ID = sk.Value
	bad := func(format string, args ...any) (Instance, error) {
		return in, fmt.Errorf("%w: fleet entry %s: %s", ddbindex.ErrMalformedItem, in.ID, fmt.Sprintf(format, args...))
	}
	num := func(name string) (time.Time, error) {
		n, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return time.Time{}, fmt.Errorf("%s is missing or not N", name)
		}
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q is not a whole number", name, n.Value)
		}
		return fromMS(v), nil
	}
	var err error
	if in.Heartbeat, err = num("heartbeat"); err != nil {
		return bad("%v", err)
	}
	if in.Expires, err = num("expires"); err != nil {
		return bad("%v", err)
	}
	if b, ok := item["stopped"].(*types.AttributeValueMemberBOOL); ok {
		in.Stopped = b.Value
	}
	state, ok := item["state"].(*types.AttributeValueMemberS)
	if !ok {
		return bad("state is missing or not S")
	}
	var s storedInstance
	if err := json.Unmarshal([]byte(state.Value), &s); err != nil {
		return bad("state is not the JSON of an entry: %v", err)
	}
	in.Version, in.Library, in.Started, in.Every = s.Version, s.Library, fromMS(s.Started), time.Duration(s.Every)*time.Millisecond
	in.Routed, in.RoutesRead, in.RouteError = s.Routed, fromMS(s.RoutesRead), s.RouteError
	var errs []error
	for _, st := range s.Tables {
		t := TableState{Table: st.Table, Model: st.Model, Fingerprint: st.Fingerprint}
		if st.RoutesSeen != "" {
			at, err := time.Parse(time.RFC3339Nano, st.RoutesSeen)
			errs = append(errs, err)
			t.RoutesSeen = at
		}
		for _, si := range st.Indexes {
			ix := IndexState{Index: si.Index}
			var e1, e2, e3 error
			ix.Keeps, e1 = kindsOf(si.Keeps)
			ix.Serves, e2 = kindsOf(si.Serves)
			ix.Shadows, e3 = kindsOf(si.Shadows)
			errs = append(errs, e1, e2, e3)
			t.Indexes = append(t.Indexes, ix)
		}
		in.Tables = append(in.Tables, t)
	}
	for _, sw := range s.Windows {
		w := ReadWindow{Start: fromMS(sw.Start), End: fromMS(sw.End)}
		for _, r := range sw.Reads {
			k, ok := formKind(r.Form)
			if !ok {
				errs = append(errs, fmt.Errorf("%q is not a form", r.Form))
				continue
			}
			w.Reads = append(w.Reads, FormReads{Table: r.Table, Index: r.Index, Form: k, Served: r.Served, Admin: r.Admin})
		}
		in.Windows = append(in.Windows, w)
	}
	for _, r := range s.LastServed {
		k, ok := formKind(r.Form)
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a form", r.Form))
			continue
		}
		in.LastServed = append(in.LastServed, FormRead{Table: r.Table, Index: r.Index, Form: k, At: fromMS(r.At)})
	}
	if err := errors.Join(errs...); err != nil {
		return bad("%v", err)
	}
	return in, nil
}

// sortReads orders read counts by table, index and form.
func sortReads(rs []FormReads) {
	slices.SortFunc(rs, func(a, b FormReads) int {
		if c := strings.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		if c := strings.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return int(a.Form) - int(b.Form)
	})
}

package migrate

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file holds Fleet, an instance's entry in the fleet view: every
// instance of a service registers in the control table which forms each of
// its indexes keeps, serves and shadows, and writes its read counts there
// once per heartbeat. ReadFleet reads the view back, for operators (package
// ops's "rollout status") and for the guards of backfill, route set and
// drop.
//
// The control table holds one item per instance: partition key "pk" =
// "fleet", sort key "sk" = the instance id, with heartbeat and expires
// (N, Unix milliseconds), stopped (BOOL, set by Close) and state (S, JSON:
// the registration and the read counts). Each heartbeat replaces the item:
// one PutItem per instance per Heartbeat.

const fleetPK = "fleet"

// Defaults of FleetOptions.
const (
	defaultHeartbeat = time.Minute
	defaultWindows   = 60
	expiryBeats      = 3 // the default Expiry, in Heartbeats
)

// FleetOptions configure a [Fleet]. The zero value of each field but
// ControlTable means its default.
type FleetOptions struct {
	// ControlTable is the physical name of the control table (required),
	// the one the Router reads routes from.
	ControlTable string
	// Instance names this instance in the fleet view. Default: the host
	// name, the process id and a random suffix, unique per NewFleet.
	Instance string
	// Version is the service's own version (a build or deploy id), shown
	// in the fleet view. Default: the main module's version from the
	// build information.
	Version string
	// Heartbeat is how often the started Fleet writes its entry (one
	// PutItem each time). Default one minute.
	Heartbeat time.Duration
	// Expiry is how long after its last heartbeat an instance that stopped
	// writing (a crash) still counts as live. Default three Heartbeats;
	// it must be longer than Heartbeat.
	Expiry time.Duration
	// Windows is how many heartbeat windows of read counts the entry
	// keeps: with the defaults, the last hour. Default 60.
	Windows int
	// Router is the router the instance's Tables route by
	// (Options.Router), from which the entry says which forms each index
	// serves: a *Router (whose refresh state it shows too), Routes, or nil
	// (every read uses the declared type). Another Router counts as
	// possibly serving every form the index keeps.
	Router ddbindex.Router
	// Shadows is the instance's Shadows, if any: the entry says which
	// forms each index shadows, and ObserveRead hands every page to it
	// after counting it. Set the Fleet, not the Shadows, as
	// Options.Observer.
	Shadows *Shadows
	// OnError receives the error of each failed heartbeat write of the
	// started Fleet, on its goroutine.
	OnError func(error)
	// ClientOptions are applied to every request the Fleet sends, as the
	// SDK's own per-call options.
	ClientOptions []func(*dynamodb.Options)
	// Now is the clock. Default time.Now; tests set their own.
	Now func() time.Time
}

// Fleet is this instance's entry in the fleet view of the control table.
// It is a [ddbindex.ReadObserver]: set it as the Tables' Options.Observer
// and it counts every page read from an index that keeps two forms, served
// (the routing chose the form) apart from admin ([ddbindex.Query.Via]:
// verify, comparisons), and hands the page on to FleetOptions.Shadows.
// Shadow reads are no pages of the application and are not counted.
// Reads of an index with one form are not observed (they pay nothing for
// the migration): the view counts such an index as serving its one form
// for as long as the instance is live.
//
// Register each Table with [Register]; [Fleet.Start] writes the entry
// now and then every Heartbeat, [Fleet.Flush] writes it at once, and
// [Fleet.Close] stops the goroutine Start started and writes the entry a
// last time, marked stopped. It is safe for concurrent use.
type Fleet struct {
	api RouterAPI
	o   FleetOptions

	mu         sync.Mutex
	tables     []TableState           // registered, by Register
	started    time.Time              // NewFleet's time
	windowFrom time.Time              // start of the window being counted
	current    map[formKey]*FormReads // the window being counted
	windows    []ReadWindow           // the last o.Windows windows, oldest first
	lastServed map[formKey]time.Time  // the last served read of each form
	writeMu    sync.Mutex             // serialises the entry's writes
	loop       loop                   // the heartbeat goroutine
	sleep      func(context.Context, time.Duration) error
}

// formKey names one form of one index.
type formKey struct {
	table, index string
	form         ddbindex.Kind
}

// NewFleet returns the Fleet that o configures, with nothing registered
// and nothing written. A nil api, no ControlTable, a negative Heartbeat,
// Expiry or Windows, an Expiry not longer than Heartbeat, or a nil among
// ClientOptions fails with an error matching [ddbindex.ErrDeclaration]
// (code DDBX-100) that names the option.
func NewFleet(api RouterAPI, o FleetOptions) (*Fleet, error) {
	bad := func(format string, args ...any) (*Fleet, error) {
		return nil, declarationErr("NewFleet", format, args...)
	}
	switch {
	case api == nil:
		return bad("no RouterAPI (a nil client)")
	case o.ControlTable == "":
		return bad("FleetOptions.ControlTable names no control table")
	case o.Heartbeat < 0:
		return bad("FleetOptions.Heartbeat is %v; it cannot be negative (0 means the default, %v)", o.Heartbeat, defaultHeartbeat)
	case o.Expiry < 0:
		return bad("FleetOptions.Expiry is %v; it cannot be negative (0 means the default, %d Heartbeats)", o.Expiry, expiryBeats)
	case o.Windows < 0:
		return bad("FleetOptions.Windows is %d; it cannot be negative (0 means the default, %d)", o.Windows, defaultWindows)
	case slices.IndexFunc(o.ClientOptions, func(fn func(*dynamodb.Options)) bool { return fn == nil }) >= 0:
		return bad("FleetOptions.ClientOptions holds a nil function")
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = defaultHeartbeat
	}
	if o.Expiry == 0 {
		o.Expiry = expiryBeats * o.Heartbeat
	}
	if o.Expiry <= o.Heartbeat {
		return bad("FleetOptions.Expiry (%v) must be longer than Heartbeat (%v): a live instance would expire between its heartbeats", o.Expiry, o.Heartbeat)
	}
	if o.Windows == 0 {
		o.Windows = defaultWindows
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.ToLower(rand.Text()[:6]))
	}
	if o.Version == "" {
		o.Version = mainVersion()
	}
	o.ClientOptions = slices.Clip(slices.Clone(o.ClientOptions))
	now := o.Now()
	return &Fleet{api: api, o: o, started: now, windowFrom: now, current: map[formKey]*FormReads{},
		lastServed: map[formKey]time.Time{}, sleep: retry.Sleep}, nil
}

func (f *Fleet) made() bool { return f != nil && f.current != nil }

func errFleetNotMade(op string) error {
	return fmt.Errorf("%w: migrate.Fleet.%s: the Fleet was not made by NewFleet", ddbindex.ErrInvalidQuery, op)
}

// Instance returns the id the Fleet registers under.
func (f *Fleet) Instance() string {
	if !f.made() {
		return ""
	}
	return f.o.Instance
}

// Register adds t's model to the Fleet's entry: its base table as declared,
// a fingerprint of its declaration, and each index's forms. A Table of the
// same base table registered again replaces the earlier one. A nil Fleet or
// Table fails with an error matching [ddbindex.ErrInvalidQuery].
func Register[T any](f *Fleet, t *ddbindex.Table[T]) error {
	if !f.made() {
		return errFleetNotMade("Register")
	}
	if t == nil {
		return fmt.Errorf("%w: migrate.Register: a nil Table", ddbindex.ErrInvalidQuery)
	}
	infos := t.Indexes()
	if len(infos) == 0 || len(infos[0].Forms) == 0 {
		return fmt.Errorf("%w: migrate.Register: the Table was not made by ddbindex.New", ddbindex.ErrInvalidQuery)
	}
	ts := TableState{Table: infos[0].Forms[0].Declared, Model: reflect.TypeFor[T]().Name(), Fingerprint: fingerprint(infos)}
	for _, ix := range infos[1:] {
		st := IndexState{Index: ix.Name}
		for _, fm := range ix.Forms {
			st.Keeps = append(st.Keeps, fm.Kind)
		}
		ts.Indexes = append(ts.Indexes, st)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.IndexFunc(f.tables, func(x TableState) bool { return x.Table == ts.Table }); i >= 0 {
		f.tables[i] = ts
	} else {
		f.tables = append(f.tables, ts)
	}
	return nil
}

// fingerprint is a short hash of a model's declaration: its indexes, forms,
// declared names, shards and key components.
func fingerprint(infos []ddbindex.IndexInfo) string {
	h := fnv.New64a()
	for _, ix := range infos {
		fmt.Fprintf(h, "%s|%d|", ix.Name, ix.Shards)
		for _, fm := range ix.Forms {
			// The declared names, not the physical ones: one model version
			// has one fingerprint in every environment.
			fmt.Fprintf(h, "%s:%s:%s|", fm.Kind, fm.Declared, fm.Index)
		}
		for _, c := range slices.Concat(ix.Partition, ix.Sort) {
			fmt.Fprintf(h, "%s:%s:%v|", c.Field, c.Attr, c.Type)
		}
		h.Write([]byte{'\n'})
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// ObserveRead implements [ddbindex.ReadObserver]: it counts the page, then
// hands it to FleetOptions.Shadows.
func (f *Fleet) ObserveRead(ctx context.Context, ev ddbindex.ReadEvent) {
	if !f.made() {
		return
	}
	k := formKey{ev.Table, ev.Index, ev.Form}
	f.mu.Lock()
	c := f.current[k]
	if c == nil {
		c = &FormReads{Table: ev.Table, Index: ev.Index, Form: ev.Form}
		f.current[k] = c
	}
	if ev.Admin {
		c.Admin++
	} else {
		c.Served++
		f.lastServed[k] = f.o.Now()
	}
	f.mu.Unlock()
	if f.o.Shadows != nil {
		f.o.Shadows.ObserveRead(ctx, ev)
	}
}

// Start starts the goroutine that writes the entry now, then every
// Heartbeat, until ctx is done or [Fleet.Close] is called. A failed write
// goes to OnError and is tried again at the next heartbeat. A Fleet starts
// once; Start after Start or Close fails with an error matching
// [ddbindex.ErrInvalidQuery].
func (f *Fleet) Start(ctx context.Context) error {
	if !f.made() {
		return errFleetNotMade("Start")
	}
	return f.loop.start(ctx, "Fleet", f.run)
}

// run writes the entry every Heartbeat until ctx is done.
func (f *Fleet) run(ctx context.Context) {
	for {
		if err := f.write(ctx, false); err != nil && ctx.Err() == nil && f.o.OnError != nil {
			f.o.OnError(err)
		}
		if f.sleep(ctx, f.o.Heartbeat) != nil {
			return
		}
	}
}

// Flush writes the entry now: the registration, the routes' state and the
// read counts, closing the window being counted. Each optFn is applied to
// its request after ClientOptions.
func (f *Fleet) Flush(ctx context.Context, optFns ...func(*dynamodb.Options)) error {
	if !f.made() {
		return errFleetNotMade("Flush")
	}
	return f.write(ctx, false, optFns...)
}

// Close stops the goroutine Start started, waits for it, and writes the
// entry a last time, marked stopped: the fleet view then no longer counts
// the instance as live (its read counts stay until the item is replaced
// or deleted). It returns that write's error. Calling it again writes
// nothing.
func (f *Fleet) Close(ctx context.Context) error {
	if !f.made() {
		return nil
	}
	if !f.loop.stop() {
		return nil
	}
	return f.write(ctx, true)
}

// write writes the entry.
func (f *Fleet) write(ctx context.Context, stopped bool, optFns ...func(*dynamodb.Options)) error {
	if i := slices.IndexFunc(optFns, func(fn func(*dynamodb.Options)) bool { return fn == nil }); i >= 0 {
		return fmt.Errorf("%w: migrate.Fleet.Flush: option function %d is nil", ddbindex.ErrInvalidQuery, i)
	}
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	now := f.o.Now()
	inst := f.snapshot(now, stopped)
	state, err := json.Marshal(toStored(inst))
	if err != nil {
		return fmt.Errorf("%w: migrate.Fleet: encode the entry: %w", ddbindex.ErrInvalidQuery, err)
	}
	control := f.o.ControlTable
	_, err = f.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(control),
		Item: map[string]types.AttributeValue{
			controlPK:   &types.AttributeValueMemberS{Value: fleetPK},
			controlSK:   &types.AttributeValueMemberS{Value: f.o.Instance},
			"heartbeat": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			"expires":   &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(f.o.Expiry).UnixMilli(), 10)},
			"stopped":   &types.AttributeValueMemberBOOL{Value: stopped},
			"state":     &types.AttributeValueMemberS{Value: string(state)},
		},
	}, append(slices.Clip(f.o.ClientOptions), optFns...)...)
	if err != nil {
		// The window's counts stay in the entry's windows: the next write
		// carries them.
		return fmt.Errorf("migrate: write the fleet entry of %s to %s: %w", f.o.Instance, control, controlCallErr("PutItem", control, err))
	}
	return nil
}

// snapshot closes the window being counted and returns the entry as of
// now.
func (f *Fleet) snapshot(now time.Time, stopped bool) Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := ReadWindow{Start: f.windowFrom, End: now}
	for _, c := range f.current {
		w.Reads = append(w.Reads, *c)
	}
	sortReads(w.Reads)
	f.windows = append(f.windows, w)
	if len(f.windows) > f.o.Windows {
		f.windows = slices.Delete(f.windows, 0, len(f.windows)-f.o.Windows)
	}
	f.current, f.windowFrom = map[formKey]*FormReads{}, now
	inst := Instance{ID: f.o.Instance, Version: f.o.Version, Library: libraryVersion(), Started: f.started,
		Heartbeat: now, Expires: now.Add(f.o.Expiry), Every: f.o.Heartbeat, Stopped: stopped,
		Windows: slices.Clone(f.windows)}
	for k, at := range f.lastServed {
		inst.LastServed = append(inst.LastServed, FormRead{Table: k.table, Index: k.index, Form: k.form, At: at})
	}
	slices.SortFunc(inst.LastServed, func(a, b FormRead) int {
		return strings.Compare(a.Table+"\x00"+a.Index+"\x00"+a.Form.String(), b.Table+"\x00"+b.Index+"\x00"+b.Form.String())
	})
	for _, ts := range f.tables {
		t := TableState{Table: ts.Table, Model: ts.Model, Fingerprint: ts.Fingerprint}
		for _, ix := range ts.Indexes {
			ix.Serves = serves(f.o.Router, ts.Table, ix.Index, ix.Keeps)
			ix.Shadows = f.shadowed(ts.Table, ix)
			t.Indexes = append(t.Indexes, ix)
		}
		inst.Tables = append(inst.Tables, t)
	}
	if r, ok := f.o.Router.(*Router); ok && r.made() {
		read, msg := r.refreshState()
		if !read.IsZero() {
			// The Router keeps the wall clock; the entry's times are the
			// Fleet's.
			inst.RoutesRead = now.Add(-time.Since(read))
		}
		inst.RouteError = msg
		seen := r.routesSeen()
		for i := range inst.Tables {
			inst.Tables[i].RoutesSeen = seen[inst.Tables[i].Table]
		}
		inst.Routed = true
	}
	return inst
}

// shadowed returns the forms of ix that Shadows reads, as FleetOptions set
// them: for an index that keeps two forms and is shadowed, the forms it
// does not serve to every partition.
func (f *Fleet) shadowed(table string, ix IndexState) []ddbindex.Kind {
	if len(ix.Keeps) < 2 || f.o.Shadows == nil || !f.o.Shadows.shadows(table, ix.Index) {
		return nil
	}
	if len(ix.Serves) == 1 {
		for _, k := range ix.Keeps {
			if k != ix.Serves[0] {
				return []ddbindex.Kind{k}
			}
		}
	}
	return slices.Clone(ix.Keeps)
}

// serves returns the forms of an index (keeps: its forms) that router may
// send reads to.
func serves(router ddbindex.Router, table, index string, keeps []ddbindex.Kind) []ddbindex.Kind {
	if len(keeps) < 2 {
		return slices.Clone(keeps)
	}
	forms := [2]ddbindex.Kind{keeps[0], keeps[1]}
	switch r := router.(type) {
	case nil:
		return keeps[:1:1]
	case Routes:
		if rt, ok := r[table+"/"+index]; ok {
			if s := rt.serves(forms); s != nil {
				return s
			}
		}
		return keeps[:1:1]
	case *Router:
		if !r.made() {
			return keeps[:1:1]
		}
		if rt, ok := r.snap.Load().routes[rkey{table, index}]; ok {
			if s := rt.serves(forms); s != nil {
				return s
			}
		}
		if r.o.Fallback != nil {
			return serves(r.o.Fallback, table, index, keeps)
		}
		return keeps[:1:1]
	}
	return slices.Clone(keeps) // a Router of the application's own: it may pick either
}

// serves returns the forms r sends some partition to, for an index with the
// given forms; nil when r names a form the index does not keep.
func (r Route) serves(forms [2]ddbindex.Kind) []ddbindex.Kind {
	if r.To != forms[0] && r.To != forms[1] {
		return nil
	}
	var out []ddbindex.Kind
	for _, f := range forms {
		if r.reaches(f) {
			out = append(out, f)
		}
	}
	return out
}

// mainVersion is the main module's version from the build information.
func mainVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// libraryVersion is this library's version from the build information.
func libraryVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const mod = "github.com/ddbindex/ddbindex"
	if bi.Main.Path == mod {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == mod {
			return d.Version
		}
	}
	return "unknown"
}

package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
	"github.com/ddbindex/ddbindex/internal/spec"
)

// This file compares the declarations with what DynamoDB describes: Check,
// and the survey that Check reports and Prepare acts on.

// Check compares t's declarations with the live tables (DescribeTable,
// DescribeTimeToLive) and reports every mismatch in one [*Error]: a missing
// table or index, key attribute names and types (a GSI key declared String
// whose attribute is a Number leaves items out of the index), an index
// projection that lacks attributes the declaration projects, a GSI that is
// not ACTIVE, TTL not enabled where tombstones rely on it (index tables,
// and the base table of a softdelete model), when index tables are kept
// from the stream (no Options.WriteThrough), a base table without a
// NEW_AND_OLD_IMAGES stream, a form of an index that exists but is neither
// declared nor kept (see keep= in ddbindex.IndexSpec: a GSI or LSI is
// found under the name gsi= or lsi= gives it, else under its default name
// or, when an older declaration renamed it, by its key schema), and, when api can
// Scan as well (as a *dynamodb.Client can), a sharded
// index whose entries were written under another shards= (it reads up to 8
// entries of each form: an index keeps its key schema when its number of
// shards changes, so only entries tell). optFns are applied to every
// request Check sends, as the SDK's own per-call options.
//
// A failed call to DynamoDB is a [*ddbindex.Error]
// ([ddbindex.ErrDynamoDB]), not a mismatch. A nil t, api or option function
// fails with an error matching [ddbindex.ErrInvalidQuery], before any
// request.
//
// [Prepare] closes the gaps it can: it creates missing tables and GSIs,
// waits for a GSI that is not ACTIVE, and enables the stream and TTL. It
// never deletes, so a form no longer kept stays reported here (and refused
// by Prepare) until it is dropped by hand; and keys or projections that
// differ, a missing LSI, or a stream or TTL set up otherwise need a
// decision Prepare does not make.
//
// A kept GSI or LSI that does not exist is a problem when a read of t may
// go to it; when none may (the last step of a migration, once the old GSI
// is dropped), Check accepts it: [CheckWithWarnings] says which, and why.
//
// Check looks at the model's tables only: the control table is no model's
// (see [ControlTableInput]). [CheckControlTable] checks it, [Prepare]
// creates and checks it when PrepareOptions.ControlTable names it, and a
// migrate.Router over a missing one reports each failed read (Router.Err,
// RouterOptions.OnError).
func Check[T any](ctx context.Context, t *ddbindex.Table[T], api API, optFns ...func(*dynamodb.Options)) error {
	_, err := check(ctx, "Check", t, api, optFns)
	return err
}

// CheckWithWarnings is [Check], which it runs, and returns besides what
// Check accepts but reports, one sentence each: a kept GSI or LSI (keep=
// in ddbindex.IndexSpec) that does not exist and that no read of this
// Table goes to. That is the last step of a migration, between the drop of
// the old GSI and the deploy of the declaration without keep=: an instance
// still keeping it writes its key attributes on the items, as ever, and
// reads nothing from it, so it misses nothing. Whether reads go to it is
// the Table's Options.Router's to say: without one every read goes to the
// declared type; a [FormRouter] (package migrate's Routes and Router) is
// asked; any other Router may send reads anywhere, and the missing form is
// a problem. A missing kept index table is always a problem: its entries
// are written to it (by the stream upkeep, or with Options.WriteThrough),
// and those writes would fail.
//
// Its errors are Check's. A FormRouter that fails to answer (a control
// table it cannot read) may send reads anywhere: the missing form is a
// problem, whose sentence holds the router's error. Nothing is asked while
// the base table does not exist. The warnings come with a nil error, and
// in the [*Error] (Error.Warnings) when Check finds problems as well.
func CheckWithWarnings[T any](ctx context.Context, t *ddbindex.Table[T], api API, optFns ...func(*dynamodb.Options)) ([]string, error) {
	return check(ctx, "CheckWithWarnings", t, api, optFns)
}

// FormRouter is a ddbindex.Router that can say whether it may send reads
// of an index to a form: package migrate's Routes and Router are.
// [CheckWithWarnings] asks the Table's Options.Router, when it is one,
// about each kept form that does not exist.
type FormRouter interface {
	// MayRoute reports whether the router may send a read of index (of
	// the base table as declared, table) to form, for an index whose forms
	// are forms (the declared type, then the kept one), by the routes in
	// force when it is called: false when it sends every read elsewhere.
	MayRoute(ctx context.Context, table, index string, form ddbindex.Kind, forms [2]ddbindex.Kind) (bool, error)
}

// check is Check and CheckWithWarnings, as op.
func check[T any](ctx context.Context, op string, t *ddbindex.Table[T], api API, optFns []func(*dynamodb.Options)) ([]string, error) {
	ts, err := tablesOf(t, ddbindex.ErrInvalidQuery, op)
	if err != nil {
		return nil, err
	}
	if isNil(api) {
		return nil, invalid(ddbindex.ErrInvalidQuery, op, "no API (a nil client) to describe the tables with")
	}
	if err := checkClientOptions(ddbindex.ErrInvalidQuery, op, "client option", optFns); err != nil {
		return nil, err
	}
	sv, err := survey(ctx, ts, "", apiCalls{api}, optFns)
	if err != nil {
		return nil, err
	}
	var problems, warnings []string
	for _, g := range sv.gaps {
		switch {
		case g.problem == "":
		case g.kept != nil && sv.base != nil:
			if served, why := keptServed(ctx, ts, g.kept); served {
				problems = append(problems, g.problem+": "+why)
			} else {
				warnings = append(warnings, fmt.Sprintf("%s, the %s form that index %s keeps (keep=%s), but %s: no read misses it (writes keep its key attributes on the items). "+
					"Prepare creates it at the start of a migration; at its end, declare the index without keep=%s once no instance of the fleet reads that form",
					g.problem, g.kept.kind, g.kept.index, g.kept.kind, why, g.kept.kind))
			}
		default:
			problems = append(problems, g.problem)
		}
	}
	addf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if sc, ok := api.(scanAPI); ok {
		if err := checkShards(ctx, ts, scanCalls{sc}, addf, optFns); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		return warnings, &Error{Problems: problems, Warnings: warnings}
	}
	return warnings, nil
}

// keptServed says whether a kept form that does not exist is served: whether
// the Table's writes or reads would go to it. why says, in words, for a
// message. A router that cannot answer may send reads anywhere.
func keptServed(ctx context.Context, ts *spec.Tables, k *keptForm) (served bool, why string) {
	declared := k.forms[0]
	switch r := ts.Router.(type) {
	case nil:
		return false, fmt.Sprintf("the Table has no Options.Router, so every read of the index goes to its declared %s form", declared)
	case FormRouter:
		forms := [2]ddbindex.Kind{kindOf(k.forms[0]), kindOf(k.forms[1])}
		may, err := r.MayRoute(ctx, ts.Model, k.index, kindOf(k.kind), forms)
		switch {
		case err != nil:
			return true, fmt.Sprintf("Options.Router could not say whether it sends reads of the index to it (%v), and they would fail", err)
		case may:
			return true, fmt.Sprintf("Options.Router may send reads of the index to it, and they would fail: route every read to the %s form first (migrate.SetRoute, Percent 100)", declared)
		}
		return false, fmt.Sprintf("Options.Router sends every read of the index to its %s form", declared)
	default:
		return true, fmt.Sprintf("Options.Router (a %T, no schema.FormRouter) may send reads of the index to it, and they would fail", r)
	}
}

// kindOf is k as package ddbindex names it.
func kindOf(k spec.Kind) ddbindex.Kind {
	switch k {
	case spec.GSI:
		return ddbindex.GSI
	case spec.LSI:
		return ddbindex.LSI
	case spec.NativeGSI:
		return ddbindex.NativeGSI
	}
	return ddbindex.IndexTable
}

// CheckControlTable checks the control table named name (see
// [ControlTableInput]) as [Check] checks a model's tables: it reports, in
// one [*Error], a control table that does not exist (no migrate.Router
// could read the fleet's routes, no DynamoDB checkpoint store could save a
// position) or that is keyed otherwise than ControlTableInput makes it.
// optFns are applied to every request, as the SDK's own per-call options.
//
// A failed call to DynamoDB is a [*ddbindex.Error]
// ([ddbindex.ErrDynamoDB]). An empty name, a nil api or a nil option
// function fails with an error matching [ddbindex.ErrInvalidQuery], before
// any request.
func CheckControlTable(ctx context.Context, name string, api API, optFns ...func(*dynamodb.Options)) error {
	const op = "CheckControlTable"
	if name == "" {
		return invalid(ddbindex.ErrInvalidQuery, op, "no control table (an empty name)")
	}
	if isNil(api) {
		return invalid(ddbindex.ErrInvalidQuery, op, "no API (a nil client) to describe the control table with")
	}
	if err := checkClientOptions(ddbindex.ErrInvalidQuery, op, "client option", optFns); err != nil {
		return err
	}
	sv := newSurveyed(ctx, apiCalls{api}, optFns)
	if err := sv.control(name); err != nil {
		return err
	}
	var problems []string
	for _, g := range sv.gaps {
		if g.problem != "" {
			problems = append(problems, g.problem)
		}
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// A gap is one difference between the declarations and the live tables:
// what Check reports about it, and what Prepare does about it.
type gap struct {
	// problem is Check's report; "" for a state Check accepts but Prepare
	// must wait out or refuse (a table still CREATING).
	problem string
	// refusal says why Prepare cannot close the gap, when fix is fixNone and
	// problem does not say it already.
	refusal string
	fix     fixKind
	table   string                     // the physical table the fix changes or waits for
	index   *spec.Index                // the GSI of fixCreateGSI and fixWaitGSI
	create  *dynamodb.CreateTableInput // the table of fixCreateTable
	// kept is set when the gap is a kept form (keep=) that does not exist:
	// Check tells one that no read is sent to from one that is served.
	kept *keptForm
}

// keptForm is a kept form of an index, as Check asks the routing about it.
type keptForm struct {
	index string      // the logical index name
	kind  spec.Kind   // the kept form's kind
	forms []spec.Kind // the index's forms: the declared type, then kind
}

// keptOf returns the keptForm of the GSI or LSI of kind of an index with
// forms; nil when that form is the declared one. A kept index table has
// none: unlike a GSI's or LSI's key attributes, which live on the base
// items, its entries are written to it (by the stream upkeep, or with
// Options.WriteThrough), so its absence is a problem whatever the reads do.
func keptOf(index string, kind spec.Kind, forms []spec.Kind) *keptForm {
	if len(forms) < 2 || forms[0] == kind || kind == spec.Table {
		return nil
	}
	return &keptForm{index: index, kind: kind, forms: forms}
}

// fixKind is what Prepare does about a gap.
type fixKind uint8

const (
	fixNone        fixKind = iota // nothing: Prepare refuses, and changes nothing
	fixCreateTable                // CreateTable, then wait until ACTIVE
	fixWaitTable                  // wait until the table is ACTIVE
	fixTTL                        // UpdateTimeToLive
	fixStream                     // UpdateTable with a NEW_AND_OLD_IMAGES stream
	fixWaitGSI                    // wait until the GSI is ACTIVE
	fixCreateGSI                  // UpdateTable creating the GSI, then wait until ACTIVE
)

// surveyed is what survey found.
type surveyed struct {
	gaps []gap
	base *types.TableDescription // nil when the base table does not exist
	// lookup describes a table: nil, nil when it does not exist.
	lookup func(name string) (*types.TableDescription, error)
}

func newSurveyed(ctx context.Context, api API, optFns []func(*dynamodb.Options)) *surveyed {
	return &surveyed{lookup: func(name string) (*types.TableDescription, error) {
		return describeTable(ctx, api, name, optFns)
	}}
}

func (sv *surveyed) add(g gap) { sv.gaps = append(sv.gaps, g) }

// status adds what an existing table's status asks of Prepare.
func (sv *surveyed) status(desc *types.TableDescription, name string) {
	switch desc.TableStatus {
	case types.TableStatusActive, "":
	case types.TableStatusCreating, types.TableStatusUpdating:
		sv.add(gap{fix: fixWaitTable, table: name})
	default:
		sv.add(gap{refusal: fmt.Sprintf("table %s is %s: Prepare changes ACTIVE tables only (it waits for CREATING and UPDATING ones)", name, desc.TableStatus)})
	}
}

// survey compares the described tables, and the control table named control
// unless it is "", with the live ones and lists every gap, in the order
// Check reports them. It changes nothing.
func survey(ctx context.Context, ts *spec.Tables, control string, api API, optFns []func(*dynamodb.Options)) (*surveyed, error) {
	sv := newSurveyed(ctx, api, optFns)
	add := sv.add
	unfixable := func(format string, args ...any) { add(gap{problem: fmt.Sprintf(format, args...)}) }
	status := sv.status
	ttlAttr := ts.TTLAttr
	ttl := func(what, name, why string) error {
		out, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)}, optFns...)
		if err != nil {
			return fmt.Errorf("ddbindex: describe TTL of %s: %w", name, err)
		}
		desc := out.TimeToLiveDescription
		var st types.TimeToLiveStatus
		if desc != nil {
			st = desc.TimeToLiveStatus
		}
		switch {
		case st == types.TimeToLiveStatusDisabling:
			p := fmt.Sprintf("%s %s: TTL is not enabled (%s would never expire); enable it on %s", what, name, why, ttlAttr)
			add(gap{problem: p, refusal: p + ": it is being disabled (DISABLING), and DynamoDB refuses to enable it until that ends (up to an hour); run Prepare again then"})
		case st != types.TimeToLiveStatusEnabled && st != types.TimeToLiveStatusEnabling:
			add(gap{problem: fmt.Sprintf("%s %s: TTL is not enabled (%s would never expire); enable it on %s", what, name, why, ttlAttr), fix: fixTTL, table: name})
		case aws.ToString(desc.AttributeName) != ttlAttr:
			p := fmt.Sprintf("%s %s: TTL is on %s, not on %s", what, name, aws.ToString(desc.AttributeName), ttlAttr)
			add(gap{problem: p, refusal: fmt.Sprintf("%s: a table has one TTL attribute, and Prepare does not move it; disable TTL on %s first (UpdateTimeToLive), or declare ttlattr=%s in the TableSpec tag",
				p, aws.ToString(desc.AttributeName), aws.ToString(desc.AttributeName))})
		}
		return nil
	}
	inputs := ts.CreateTableInputs(ts.Base.Stream)
	inputOf := func(name string) *dynamodb.CreateTableInput {
		for _, in := range inputs {
			if aws.ToString(in.TableName) == name {
				return in
			}
		}
		return nil
	}
	baseName := ts.Base.Name
	base, err := sv.lookup(baseName)
	if err != nil {
		return nil, err
	}
	sv.base = base
	if base == nil {
		add(gap{problem: fmt.Sprintf("table %s does not exist", baseName), fix: fixCreateTable, table: baseName, create: inputs[0]})
	} else {
		where := "table " + baseName
		status(base, baseName)
		checkKeys(unfixable, where, ts.Base.PK, ts.Base.SK, base.KeySchema, base.AttributeDefinitions)
		for i := range ts.Base.Indexes {
			ix := &ts.Base.Indexes[i]
			ks, proj, st, found := findIndex(base, ix.Kind, ix.IndexName)
			if !found {
				p := fmt.Sprintf("%s has no %s named %s (index %s)", where, kindWord(ix.Kind), ix.IndexName, ix.Name)
				if ix.Kind == spec.LSI {
					add(gap{kept: keptOf(ix.Name, ix.Kind, ix.Forms), problem: p, refusal: p + ": DynamoDB creates an LSI only with its table (CreateTable), never on an existing one. " +
						"Declare the index type=gsi (keep= during a migration), or create a new table with the LSI and copy the items into it"})
				} else if clash := attrClash(ix, base.AttributeDefinitions); clash != "" {
					add(gap{problem: p, refusal: p + ": " + clash, kept: keptOf(ix.Name, ix.Kind, ix.Forms)})
				} else {
					add(gap{problem: p, fix: fixCreateGSI, table: baseName, index: ix, kept: keptOf(ix.Name, ix.Kind, ix.Forms)})
				}
				continue
			}
			what := fmt.Sprintf("%s %s %s", where, kindWord(ix.Kind), ix.IndexName)
			if ix.HashKeys != nil {
				checkKeyLists(unfixable, what, ix.HashKeys, ix.RangeKeys, ks, base.AttributeDefinitions)
			} else {
				checkKeys(unfixable, what, ix.PK, ix.SK, ks, base.AttributeDefinitions)
			}
			checkProjection(unfixable, what, ix, proj)
			if st != "" && st != types.IndexStatusActive {
				p := fmt.Sprintf("%s is %s, not ACTIVE: queries of index %s fail or miss items until it is", what, st, ix.Name)
				if st == types.IndexStatusCreating || st == types.IndexStatusUpdating {
					add(gap{problem: p, fix: fixWaitGSI, table: baseName, index: ix})
				} else {
					add(gap{problem: p, refusal: p + "; Prepare does not wait for a deletion: run it again once the GSI is gone, and it creates it anew"})
				}
			}
		}
		if ts.Base.Stream {
			s := base.StreamSpecification
			switch {
			case s == nil || !aws.ToBool(s.StreamEnabled):
				add(gap{problem: fmt.Sprintf("%s: no stream; its index tables are kept from the stream, which needs %s (or set Options.WriteThrough)", where, types.StreamViewTypeNewAndOldImages),
					fix: fixStream, table: baseName})
			case s.StreamViewType != types.StreamViewTypeNewAndOldImages:
				p := fmt.Sprintf("%s: the stream's view type is %s; keeping index tables needs %s", where, s.StreamViewType, types.StreamViewTypeNewAndOldImages)
				add(gap{problem: p, refusal: p + ". Prepare does not change it: a stream's view type cannot change in place, so the stream must be disabled and enabled again (UpdateTable), " +
					"which closes the old stream and opens a new one with a new ARN: whatever reads the old stream must finish it and move to the new one"})
			}
		}
		if ts.Base.SoftDelete {
			if err := ttl("table", baseName, "soft-deleted items"); err != nil {
				return nil, err
			}
		}
	}
	for _, it := range ts.IndexTables {
		desc, err := sv.lookup(it.Name)
		if err != nil {
			return nil, err
		}
		if desc == nil {
			add(gap{problem: fmt.Sprintf("table %s does not exist", it.Name), fix: fixCreateTable, table: it.Name, create: inputOf(it.Name)})
			continue
		}
		status(desc, it.Name)
		checkKeys(unfixable, "index table "+it.Name, it.PK, it.SK, desc.KeySchema, desc.AttributeDefinitions)
		if err := ttl("index table", it.Name, "tombstones"); err != nil {
			return nil, err
		}
	}
	// A form no longer kept is no gap Prepare closes: it never deletes, and
	// what the fleet reads is the operator's to decide.
	if err := checkDropped(ts, base, sv.lookup, unfixable); err != nil {
		return nil, err
	}
	if control != "" {
		if err := sv.control(control); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// control adds the gaps of the control table named name: missing, not
// ACTIVE, or keyed otherwise than ControlTableInput makes it.
func (sv *surveyed) control(name string) error {
	desc, err := sv.lookup(name)
	if err != nil {
		return err
	}
	if desc == nil {
		sv.add(gap{problem: fmt.Sprintf("control table %s does not exist: no migrate.Router can read the fleet's routes", name),
			fix: fixCreateTable, table: name, create: ControlTableInput(name)})
		return nil
	}
	sv.status(desc, name)
	kt := spec.ControlTable(name)
	checkKeys(func(format string, args ...any) { sv.add(gap{problem: fmt.Sprintf(format, args...)}) },
		"control table "+name, kt.PK, kt.SK, desc.KeySchema, desc.AttributeDefinitions)
	return nil
}

// kindWord is how messages name a GSI or an LSI.
func kindWord(k spec.Kind) string { return strings.ToUpper(string(k)) }

// describeTable describes a table: nil, nil when it does not exist.
func describeTable(ctx context.Context, api API, name string, optFns []func(*dynamodb.Options)) (*types.TableDescription, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, optFns...)
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ddbindex: describe table %s: %w", name, err)
	}
	return out.Table, nil
}

// attrClash says why DynamoDB would refuse to add GSI ix to a table with
// the given attribute definitions: a key attribute of ix defined with
// another type. "" when there is none.
func attrClash(ix *spec.Index, defs []types.AttributeDefinition) string {
	keys := []*spec.Key{&ix.PK, ix.SK}
	for _, k := range append(slices.Clone(ix.HashKeys), ix.RangeKeys...) {
		keys = append(keys, &k)
	}
	for _, k := range keys {
		if k == nil {
			continue
		}
		for _, a := range defs {
			if aws.ToString(a.AttributeName) == k.Attr && a.AttributeType != k.Type {
				return fmt.Sprintf("its key attribute %s is of type %s, but the table defines %s as %s (for its own key or another index), so DynamoDB would refuse to create it",
					k.Attr, k.Type, k.Attr, a.AttributeType)
			}
		}
	}
	return ""
}

// checkDropped reports a form of an index that exists but that the
// declaration neither serves nor keeps: the plain flip from type=gsi to
// type=table (or back). Instances still running the old declaration read
// that form, and this one stops writing it, so they would miss every item it
// writes or changes from now on. A GSI or LSI is looked for under the name
// the declaration gives it (gsi=, lsi=), else under its default name and,
// since an older declaration may have named it (name=), as any GSI or LSI
// keyed as the form would be that no declared or kept form is.
func checkDropped(ts *spec.Tables, base *types.TableDescription, lookup func(string) (*types.TableDescription, error), addf func(string, ...any)) error {
	for _, dr := range ts.Dropped {
		var found []string // the physical names of the form that exist
		if dr.Kind == spec.Table {
			desc, err := lookup(dr.Table)
			if err != nil {
				return err
			}
			if desc != nil {
				found = append(found, dr.Table)
			}
		} else if base != nil {
			if _, _, _, ok := findIndex(base, dr.Kind, dr.IndexName); ok {
				found = append(found, dr.IndexName)
			} else if !dr.Named {
				found = renamedForms(ts, base, dr)
			}
		}
		for _, name := range found {
			keep := fmt.Sprintf("type=%s,keep=%s", dr.Declared, dr.Kind)
			if dr.Kind != spec.Table && name != dr.Index {
				keep += fmt.Sprintf(",%s=%s", dr.Kind, name) // its physical name, which the default does not give
			}
			addf("index %s is declared type=%s, but its %s form %s still exists and is no longer kept: instances that still read it would miss every write from now on. "+
				"Declare %s until no instance reads that form (docs/migration.md), then drop it",
				dr.Index, dr.Declared, dr.Kind, name, keep)
		}
	}
	return nil
}

// renamedForms returns the names of the GSIs or LSIs (dr.Kind) of base
// keyed as dropped form dr would be (attribute names and types), that no
// declared or kept form of the model is: dr's form under a name an older
// declaration gave it.
func renamedForms(ts *spec.Tables, base *types.TableDescription, dr spec.Dropped) []string {
	var out []string
	consider := func(name string, ks []types.KeySchemaElement) {
		if slices.ContainsFunc(ts.Base.Indexes, func(ix spec.Index) bool { return ix.Kind == dr.Kind && ix.IndexName == name }) {
			return
		}
		var problems int
		checkKeys(func(string, ...any) { problems++ }, "", dr.PK, dr.SK, ks, base.AttributeDefinitions)
		if problems == 0 {
			out = append(out, name)
		}
	}
	if dr.Kind == spec.GSI {
		for _, g := range base.GlobalSecondaryIndexes {
			consider(aws.ToString(g.IndexName), g.KeySchema)
		}
	} else {
		for _, l := range base.LocalSecondaryIndexes {
			consider(aws.ToString(l.IndexName), l.KeySchema)
		}
	}
	return out
}

// findIndex returns a GSI's or LSI's key schema, projection and status (a
// GSI's; "" for an LSI, which is active with its table).
func findIndex(desc *types.TableDescription, kind spec.Kind, name string) ([]types.KeySchemaElement, *types.Projection, types.IndexStatus, bool) {
	if kind == spec.GSI || kind == spec.NativeGSI {
		for _, g := range desc.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == name {
				return g.KeySchema, g.Projection, g.IndexStatus, true
			}
		}
	} else {
		for _, l := range desc.LocalSecondaryIndexes {
			if aws.ToString(l.IndexName) == name {
				return l.KeySchema, l.Projection, "", true
			}
		}
	}
	return nil, nil, "", false
}

func checkKeys(addf func(string, ...any), where string, pk spec.Key, sk *spec.Key, ks []types.KeySchemaElement, defs []types.AttributeDefinition) {
	typeOf := func(attr string) types.ScalarAttributeType {
		for _, a := range defs {
			if aws.ToString(a.AttributeName) == attr {
				return a.AttributeType
			}
		}
		return ""
	}
	want := []struct {
		k   *spec.Key
		typ types.KeyType
	}{{&pk, types.KeyTypeHash}, {sk, types.KeyTypeRange}}
	for _, w := range want {
		var live *types.KeySchemaElement
		for i := range ks {
			if ks[i].KeyType == w.typ {
				live = &ks[i]
			}
		}
		role := "partition"
		if w.typ == types.KeyTypeRange {
			role = "sort"
		}
		switch {
		case w.k == nil && live != nil:
			addf("%s: has %s key %s, the declaration has none", where, role, aws.ToString(live.AttributeName))
		case w.k == nil:
		case live == nil:
			addf("%s: no %s key; the declaration has %s (%s)", where, role, w.k.Attr, w.k.Type)
		case aws.ToString(live.AttributeName) != w.k.Attr:
			addf("%s: %s key is %s, the declaration has %s", where, role, aws.ToString(live.AttributeName), w.k.Attr)
		default:
			if lt := typeOf(w.k.Attr); lt != w.k.Type {
				addf("%s: %s key %s is of type %s, the declaration has %s (items whose attribute has the declared type are left out of the index, or rejected)", where, role, w.k.Attr, lt, w.k.Type)
			}
		}
	}
}

// checkKeyLists checks a multi-attribute key schema: its HASH elements, in
// order, must be hash, and its RANGE elements rng, each attribute of the
// declared type.
func checkKeyLists(addf func(string, ...any), where string, hash, rng []spec.Key, ks []types.KeySchemaElement, defs []types.AttributeDefinition) {
	for _, role := range []struct {
		want []spec.Key
		typ  types.KeyType
		name string
	}{{hash, types.KeyTypeHash, "partition"}, {rng, types.KeyTypeRange, "sort"}} {
		var live []string
		for _, e := range ks {
			if e.KeyType == role.typ {
				live = append(live, aws.ToString(e.AttributeName))
			}
		}
		var want []string
		for _, k := range role.want {
			want = append(want, k.Attr)
		}
		if !slices.Equal(live, want) {
			addf("%s: %s key attributes are %v, the declaration has %v", where, role.name, live, want)
			continue
		}
		for _, k := range role.want {
			var lt types.ScalarAttributeType
			for _, a := range defs {
				if aws.ToString(a.AttributeName) == k.Attr {
					lt = a.AttributeType
				}
			}
			if lt != k.Type {
				addf("%s: %s key %s is of type %s, the declaration has %s (items whose attribute has the declared type are left out of the index, or rejected)", where, role.name, k.Attr, lt, k.Type)
			}
		}
	}
}

func checkProjection(addf func(string, ...any), where string, ix *spec.Index, p *types.Projection) {
	if p == nil {
		addf("%s: no projection described", where)
		return
	}
	switch p.ProjectionType {
	case types.ProjectionTypeAll:
		return
	case types.ProjectionTypeKeysOnly:
		if ix.Projection.Type != types.ProjectionTypeKeysOnly {
			addf("%s: projects keys only; the declaration reads %s", where, projectionWords(ix))
		}
	case types.ProjectionTypeInclude:
		switch ix.Projection.Type {
		case types.ProjectionTypeKeysOnly:
			return
		case types.ProjectionTypeAll:
			addf("%s: projects only %v; the declaration reads all attributes", where, p.NonKeyAttributes)
			return
		}
		var missing []string
		for _, a := range ix.NonKey {
			if !slices.Contains(p.NonKeyAttributes, a) {
				missing = append(missing, a)
			}
		}
		if len(missing) > 0 {
			addf("%s: does not project %v, which the declaration reads", where, missing)
		}
	}
}

func projectionWords(ix *spec.Index) string {
	if ix.Declared != nil {
		return strings.Join(ix.Declared, ", ")
	}
	return "all attributes"
}

// shardSample is how many entries Check reads from each form of a sharded
// index.
const shardSample = 8

// checkShards reads a few entries of each form of every sharded index and
// checks that each is in the shard its base key hashes to under the
// declared shards=: an index written with another number of shards (or
// unsharded) keeps its key schema, so only its entries can tell. A form
// that does not exist is skipped (its gap is reported already).
func checkShards(ctx context.Context, ts *spec.Tables, api scanAPI, addf func(string, ...any), optFns []func(*dynamodb.Options)) error {
	for _, sh := range ts.Sharded {
		in := &dynamodb.ScanInput{TableName: aws.String(sh.Table), Limit: aws.Int32(shardSample)}
		what := "index table " + sh.Table
		if sh.IndexName != "" {
			in.IndexName = aws.String(sh.IndexName)
			what = fmt.Sprintf("table %s %s %s", sh.Table, kindWord(sh.Kind), sh.IndexName)
		}
		out, err := api.Scan(ctx, in, optFns...)
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf) || (err != nil && retry.IsValidation(err)):
			continue // no such table or index: a gap reported already
		case err != nil:
			return fmt.Errorf("ddbindex: schema.Check, sampling the shards of %s: %w", what, err)
		}
		for _, item := range out.Items {
			if err := sh.Fits(item); err != nil {
				addf("%s: an entry's key does not fit shards=%d (%v): the index was written with another number of shards, or none; "+
					"changing shards= makes a new index (see resharding in docs/sharding.md)", what, sh.Shards, err)
				break
			}
		}
	}
	return nil
}

package ddbindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the tables' DDL: CreateTables and CreateTableInputs make
// the tables a model declares, and CheckSchema compares them with what
// DynamoDB describes.

// CreateOptions configure [Table.CreateTables]; the zero value of each field
// means its default.
type CreateOptions struct {
	// NoStream leaves the base table without a stream. By default the base
	// table gets a NEW_AND_OLD_IMAGES stream when the model declares an index
	// table, since the stream path keeps index tables in step.
	NoStream bool
	// NoTTL skips enabling TTL on index tables and on a softdelete model's
	// base table (for servers without TTL); tombstones then stay until
	// removed by other means.
	NoTTL bool
	// WaitMinDelay and WaitMaxDelay tune the wait for tables to become
	// active. Defaults 100 ms and 2 s (the SDK waiter's own default minimum
	// is 20 s).
	WaitMinDelay, WaitMaxDelay time.Duration
	// WaitTimeout bounds the wait. Default 5 minutes.
	WaitTimeout time.Duration
	// ClientOptions are applied to every request CreateTables sends (the
	// wait's DescribeTable calls included), as the SDK's own per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
}

// CreateTables creates, from the declarations, the base table with its GSIs
// and LSIs, and each index table; waits until they are active; and enables
// TTL on the index tables, and on the base table of a softdelete model (its
// tombstones expire too). Tables are billed on demand. It is meant for
// tests, examples and bootstrapping; production tables usually come from
// infrastructure code, which [Table.CheckSchema] verifies.
//
//	err := tickets.CreateTables(ctx, client, func(o *ddbindex.CreateOptions) { o.NoTTL = true })
func (t *Table[T]) CreateTables(ctx context.Context, api SchemaAPI, optFns ...func(*CreateOptions)) error {
	if err := t.usable("CreateTables", ErrInvalidWrite); err != nil {
		return err
	}
	if err := t.hasAPI("CreateTables", api); err != nil {
		return err
	}
	if err := nilOption("CreateTables", ErrInvalidWrite, optFns); err != nil {
		return err
	}
	var opts CreateOptions
	for _, fn := range optFns {
		fn(&opts)
	}
	if err := nilOption("CreateTables", ErrInvalidWrite, opts.ClientOptions); err != nil {
		return err
	}
	if opts.WaitMinDelay == 0 {
		opts.WaitMinDelay = 100 * time.Millisecond
	}
	if opts.WaitMaxDelay == 0 {
		opts.WaitMaxDelay = 2 * time.Second
	}
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = 5 * time.Minute
	}
	api = schemaCalls{api}
	inputs := t.CreateTableInputs(!opts.NoStream)
	for _, in := range inputs {
		if _, err := api.CreateTable(ctx, in, opts.ClientOptions...); err != nil {
			return fmt.Errorf("ddbindex: create table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	w := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = opts.WaitMinDelay, opts.WaitMaxDelay
		o.ClientOptions = opts.ClientOptions
	})
	for _, in := range inputs {
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, opts.WaitTimeout); err != nil {
			if !errors.Is(err, ErrDynamoDB) {
				// The waiter gave up (WaitTimeout): its DescribeTable calls
				// did not see the table become active.
				err = callErr("DescribeTable", in.TableName, nil, err)
			}
			return fmt.Errorf("ddbindex: wait for table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	if opts.NoTTL {
		return nil
	}
	for _, name := range t.ttlTables() {
		_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(t.opts.TTLAttr), Enabled: aws.Bool(true),
			},
		}, opts.ClientOptions...)
		if err != nil {
			return fmt.Errorf("ddbindex: enable TTL on %s: %w", name, err)
		}
	}
	return nil
}

// ttlTables lists the physical tables whose tombstones TTL must remove: the
// base table of a softdelete model, and every index table.
func (t *Table[T]) ttlTables() []string {
	var out []string
	if t.s.softDelete {
		out = append(out, t.TableName())
	}
	for _, d := range t.s.indexes {
		if d.ownTable {
			out = append(out, t.tableOf(d))
		}
	}
	return out
}

// streamKept reports whether index tables are kept from the base table's
// stream, which then must carry both images.
func (t *Table[T]) streamKept() bool { return t.hasIndexTables() && !t.opts.WriteThrough }

// CreateTableInputs returns the CreateTable requests for the base table and
// each index table, for callers that create tables their own way.
func (t *Table[T]) CreateTableInputs(stream bool) []*dynamodb.CreateTableInput {
	if t.usable("CreateTableInputs", ErrInvalidQuery) != nil {
		return nil
	}
	s := t.s
	defs := map[string]types.ScalarAttributeType{}
	base := &dynamodb.CreateTableInput{
		TableName:   aws.String(t.TableName()),
		KeySchema:   keySchemaOf(s.base, defs),
		BillingMode: types.BillingModePayPerRequest,
	}
	var tables []*dynamodb.CreateTableInput
	hasIndexTable := false
	for _, d := range s.indexes {
		switch d.kind {
		case GSI:
			base.GlobalSecondaryIndexes = append(base.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
				IndexName: aws.String(d.index), KeySchema: keySchemaOf(d, defs), Projection: d.projection(),
			})
		case LSI:
			base.LocalSecondaryIndexes = append(base.LocalSecondaryIndexes, types.LocalSecondaryIndex{
				IndexName: aws.String(d.index), KeySchema: keySchemaOf(d, defs), Projection: d.projection(),
			})
		case IndexTable:
			hasIndexTable = true
			local := map[string]types.ScalarAttributeType{}
			ks := keySchemaOf(d, local)
			tables = append(tables, &dynamodb.CreateTableInput{
				TableName:            aws.String(t.tableOf(d)),
				KeySchema:            ks,
				AttributeDefinitions: attrDefs(local),
				BillingMode:          types.BillingModePayPerRequest,
			})
		}
	}
	base.AttributeDefinitions = attrDefs(defs)
	if stream && hasIndexTable {
		base.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	return append([]*dynamodb.CreateTableInput{base}, tables...)
}

// keySchemaOf returns d's key schema, and adds its key attributes' types to
// defs.
func keySchemaOf(d *layout, defs map[string]types.ScalarAttributeType) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(d.pk.attr), KeyType: types.KeyTypeHash}}
	defs[d.pk.attr] = d.pk.scalar
	if d.sk != nil {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(d.sk.attr), KeyType: types.KeyTypeRange})
		defs[d.sk.attr] = d.sk.scalar
	}
	return ks
}

func attrDefs(m map[string]types.ScalarAttributeType) []types.AttributeDefinition {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]types.AttributeDefinition, len(names))
	for i, n := range names {
		out[i] = types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: m[n]}
	}
	return out
}

func (d *layout) projection() *types.Projection {
	switch {
	case d.keysOnly:
		return &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	case d.project != nil:
		// DynamoDB projects key attributes anyway, and refuses them among
		// the non-key ones.
		var nonKey []string
		for _, a := range d.project {
			if !isKeyAttr(d, a) {
				nonKey = append(nonKey, a)
			}
		}
		return &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: nonKey}
	}
	return &types.Projection{ProjectionType: types.ProjectionTypeAll}
}

// SchemaError lists every difference between the declarations and the live
// tables. It matches [ErrSchemaMismatch].
type SchemaError struct {
	Problems []string
	// intro replaces the opening words of the text; "" for CheckSchema's.
	intro string
}

func (e *SchemaError) Error() string {
	if e == nil {
		return ErrSchemaMismatch.Error()
	}
	return fmt.Sprintf("ddbindex: %s [%s]:\n  - %s",
		cmp.Or(e.intro, "the live schema does not match the declarations"),
		ErrSchemaMismatch.code, strings.Join(e.Problems, "\n  - "))
}

// Is makes SchemaError match ErrSchemaMismatch.
func (e *SchemaError) Is(target error) bool { return target == ErrSchemaMismatch }

// Code returns ErrSchemaMismatch's code.
func (e *SchemaError) Code() string { return ErrSchemaMismatch.code }

// CheckSchema compares the declarations with the live tables (DescribeTable,
// DescribeTimeToLive) and reports every mismatch in one *SchemaError: a
// missing table or index, key attribute names and types (a GSI key declared
// String whose attribute is a Number leaves items out of the index), an index
// projection that lacks attributes the declaration projects, a GSI that is
// not ACTIVE, TTL not enabled where tombstones rely on it (index tables, and
// the base table of a softdelete model), when index tables are kept from the
// stream (no Options.WriteThrough), a base table without a
// NEW_AND_OLD_IMAGES stream, a missing control table (Options.ControlTable),
// a form of an index that exists but is neither declared nor kept (see
// keep= in [IndexSpec]), and, when api can Scan as well (a
// *dynamodb.Client can), a sharded index whose entries were written under
// another shards= (it reads up to 8 entries of each form: an index keeps its
// key schema when its number of shards changes, so only entries tell). A
// failed call to DynamoDB is a [*CallError]
// ([ErrDynamoDB]), not a mismatch. optFns are applied to every request
// CheckSchema sends, as the SDK's own per-call options.
//
// [Table.Prepare] closes the gaps it can: it creates missing tables and
// GSIs, waits for a GSI that is not ACTIVE, and enables the stream and TTL.
// It never deletes, so a form no longer kept stays reported here until it is
// dropped by hand; and keys or projections that differ, a missing LSI, or a
// stream or TTL set up otherwise need a decision Prepare does not make.
func (t *Table[T]) CheckSchema(ctx context.Context, api SchemaAPI, optFns ...func(*dynamodb.Options)) error {
	if err := t.usable("CheckSchema", ErrInvalidQuery, optFns...); err != nil {
		return err
	}
	if err := t.hasAPI("CheckSchema", api); err != nil {
		return err
	}
	sv, err := t.survey(ctx, schemaCalls{api}, optFns)
	if err != nil {
		return err
	}
	var problems []string
	for _, g := range sv.gaps {
		if g.problem != "" {
			problems = append(problems, g.problem)
		}
	}
	addf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if err := t.checkDroppedForms(sv.base, sv.lookup, addf); err != nil {
		return err
	}
	if sc, ok := api.(ScanAPI); ok {
		if err := t.checkShards(ctx, scanCalls{sc}, addf, optFns); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return &SchemaError{Problems: problems}
	}
	return nil
}

// A gap is one difference between the declarations and the live tables:
// what CheckSchema reports about it, and what Prepare does about it.
type gap struct {
	// problem is CheckSchema's report; "" for a state CheckSchema accepts
	// but Prepare must wait out or refuse (a table still CREATING).
	problem string
	// refusal says why Prepare cannot close the gap, when fix is fixNone and
	// problem does not say it already.
	refusal string
	fix     fixKind
	table   string                     // the physical table the fix changes or waits for
	index   *layout                    // the GSI of fixCreateGSI and fixWaitGSI
	create  *dynamodb.CreateTableInput // the table of fixCreateTable
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

// controlLayout is the key layout of the control table (ControlTableInput).
var controlLayout = &layout{
	pk: &keyAttr{attr: controlPK, scalar: types.ScalarAttributeTypeS},
	sk: &keyAttr{attr: controlSK, scalar: types.ScalarAttributeTypeS},
}

// survey compares the declarations with the live tables and lists every
// gap, in the order CheckSchema reports them. It changes nothing.
func (t *Table[T]) survey(ctx context.Context, api SchemaAPI, optFns []func(*dynamodb.Options)) (*surveyed, error) {
	sv := &surveyed{lookup: func(name string) (*types.TableDescription, error) {
		return describeTable(ctx, api, name, optFns)
	}}
	add := func(g gap) { sv.gaps = append(sv.gaps, g) }
	unfixable := func(format string, args ...any) { add(gap{problem: fmt.Sprintf(format, args...)}) }
	// status adds what an existing table's status asks of Prepare.
	status := func(desc *types.TableDescription, name string) {
		switch desc.TableStatus {
		case types.TableStatusActive, "":
		case types.TableStatusCreating, types.TableStatusUpdating:
			add(gap{fix: fixWaitTable, table: name})
		default:
			add(gap{refusal: fmt.Sprintf("table %s is %s: Prepare changes ACTIVE tables only (it waits for CREATING and UPDATING ones)", name, desc.TableStatus)})
		}
	}
	ttl := func(what, name, why string) error {
		out, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)}, optFns...)
		if err != nil {
			return fmt.Errorf("ddbindex: describe TTL of %s: %w", name, err)
		}
		spec := out.TimeToLiveDescription
		var st types.TimeToLiveStatus
		if spec != nil {
			st = spec.TimeToLiveStatus
		}
		switch {
		case st == types.TimeToLiveStatusDisabling:
			p := fmt.Sprintf("%s %s: TTL is not enabled (%s would never expire); enable it on %s", what, name, why, t.opts.TTLAttr)
			add(gap{problem: p, refusal: p + ": it is being disabled (DISABLING), and DynamoDB refuses to enable it until that ends (up to an hour); run Prepare again then"})
		case st != types.TimeToLiveStatusEnabled && st != types.TimeToLiveStatusEnabling:
			add(gap{problem: fmt.Sprintf("%s %s: TTL is not enabled (%s would never expire); enable it on %s", what, name, why, t.opts.TTLAttr), fix: fixTTL, table: name})
		case aws.ToString(spec.AttributeName) != t.opts.TTLAttr:
			p := fmt.Sprintf("%s %s: TTL is on %s, not on %s", what, name, aws.ToString(spec.AttributeName), t.opts.TTLAttr)
			add(gap{problem: p, refusal: fmt.Sprintf("%s: a table has one TTL attribute, and Prepare does not move it; disable TTL on %s first (UpdateTimeToLive), or set Options.TTLAttr to %s",
				p, aws.ToString(spec.AttributeName), aws.ToString(spec.AttributeName))})
		}
		return nil
	}
	inputs := t.CreateTableInputs(t.streamKept())
	inputOf := func(name string) *dynamodb.CreateTableInput {
		for _, in := range inputs {
			if aws.ToString(in.TableName) == name {
				return in
			}
		}
		return nil
	}
	base, err := sv.lookup(t.TableName())
	if err != nil {
		return nil, err
	}
	sv.base = base
	if base == nil {
		add(gap{problem: fmt.Sprintf("table %s does not exist", t.TableName()), fix: fixCreateTable, table: t.TableName(), create: inputs[0]})
	} else {
		where := "table " + t.TableName()
		status(base, t.TableName())
		checkKeys(unfixable, where, t.s.base, base.KeySchema, base.AttributeDefinitions)
		for _, d := range t.s.indexes {
			if d.kind != GSI && d.kind != LSI {
				continue
			}
			ks, proj, st, found := findIndex(base, d)
			if !found {
				p := fmt.Sprintf("%s has no %s named %s (index %s)", where, strings.ToUpper(d.kind.String()), d.index, d.name)
				if d.kind == LSI {
					add(gap{problem: p, refusal: p + ": DynamoDB creates an LSI only with its table (CreateTable), never on an existing one. " +
						"Declare the index type=gsi (keep= during a migration), or create a new table with the LSI and copy the items into it"})
				} else if clash := attrClash(d, base.AttributeDefinitions); clash != "" {
					add(gap{problem: p, refusal: p + ": " + clash})
				} else {
					add(gap{problem: p, fix: fixCreateGSI, table: t.TableName(), index: d})
				}
				continue
			}
			what := fmt.Sprintf("%s %s %s", where, strings.ToUpper(d.kind.String()), d.index)
			checkKeys(unfixable, what, d, ks, base.AttributeDefinitions)
			checkProjection(unfixable, what, d, proj)
			if st != "" && st != types.IndexStatusActive {
				p := fmt.Sprintf("%s is %s, not ACTIVE: queries of index %s fail or miss items until it is", what, st, d.name)
				if st == types.IndexStatusCreating || st == types.IndexStatusUpdating {
					add(gap{problem: p, fix: fixWaitGSI, table: t.TableName(), index: d})
				} else {
					add(gap{problem: p, refusal: p + "; Prepare does not wait for a deletion: run it again once the GSI is gone, and it creates it anew"})
				}
			}
		}
		if t.streamKept() {
			spec := base.StreamSpecification
			switch {
			case spec == nil || !aws.ToBool(spec.StreamEnabled):
				add(gap{problem: fmt.Sprintf("%s: no stream; its index tables are kept from the stream, which needs %s (or set Options.WriteThrough)", where, types.StreamViewTypeNewAndOldImages),
					fix: fixStream, table: t.TableName()})
			case spec.StreamViewType != types.StreamViewTypeNewAndOldImages:
				p := fmt.Sprintf("%s: the stream's view type is %s; keeping index tables needs %s", where, spec.StreamViewType, types.StreamViewTypeNewAndOldImages)
				add(gap{problem: p, refusal: p + ". Prepare does not change it: a stream's view type cannot change in place, so the stream must be disabled and enabled again (UpdateTable), " +
					"which closes the old stream and opens a new one with a new ARN: whatever reads the old stream must finish it and move to the new one"})
			}
		}
		if t.s.softDelete {
			if err := ttl("table", t.TableName(), "soft-deleted items"); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range t.s.indexes {
		if d.kind != IndexTable {
			continue
		}
		name := t.tableOf(d)
		desc, err := sv.lookup(name)
		if err != nil {
			return nil, err
		}
		if desc == nil {
			add(gap{problem: fmt.Sprintf("table %s does not exist", name), fix: fixCreateTable, table: name, create: inputOf(name)})
			continue
		}
		status(desc, name)
		checkKeys(unfixable, "index table "+name, d, desc.KeySchema, desc.AttributeDefinitions)
		if err := ttl("index table", name, "tombstones"); err != nil {
			return nil, err
		}
	}
	if in := t.ControlTableInput(); in != nil {
		name := aws.ToString(in.TableName)
		desc, err := sv.lookup(name)
		if err != nil {
			return nil, err
		}
		if desc == nil {
			add(gap{problem: fmt.Sprintf("control table %s (Options.ControlTable) does not exist: every instance routes reads by Options.Routes alone", name),
				fix: fixCreateTable, table: name, create: in})
		} else {
			status(desc, name)
			checkKeys(unfixable, "control table "+name, controlLayout, desc.KeySchema, desc.AttributeDefinitions)
		}
	}
	return sv, nil
}

// describeTable describes a table: nil, nil when it does not exist.
func describeTable(ctx context.Context, api SchemaAPI, name string, optFns []func(*dynamodb.Options)) (*types.TableDescription, error) {
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

// attrClash says why DynamoDB would refuse to add GSI d to a table with the
// given attribute definitions: a key attribute of d defined with another
// type. "" when there is none.
func attrClash(d *layout, defs []types.AttributeDefinition) string {
	for _, k := range []*keyAttr{d.pk, d.sk} {
		if k == nil {
			continue
		}
		for _, a := range defs {
			if aws.ToString(a.AttributeName) == k.attr && a.AttributeType != k.scalar {
				return fmt.Sprintf("its key attribute %s is of type %s, but the table defines %s as %s (for its own key or another index), so DynamoDB would refuse to create it",
					k.attr, k.scalar, k.attr, a.AttributeType)
			}
		}
	}
	return ""
}

// checkDroppedForms reports a form of an index that exists but that the
// declaration neither serves nor keeps: the plain flip from type=gsi to
// type=table (or back). Instances still running the old declaration read
// that form, and this one stops writing it, so they would miss every item it
// writes or changes from now on.
func (t *Table[T]) checkDroppedForms(base *types.TableDescription, lookup func(string) (*types.TableDescription, error), addf func(string, ...any)) error {
	for _, d := range t.s.indexes {
		if d != d.decl.lay {
			continue // a kept form: its declaration is visited through the declared one
		}
		for _, k := range []Kind{GSI, LSI, IndexTable} {
			if slices.ContainsFunc(d.decl.forms, func(f *layout) bool { return f.kind == k }) {
				continue
			}
			gone, err := layoutOf(d.decl, k)
			if err != nil {
				continue // the declaration cannot be this kind, so it never was
			}
			exists := false
			if gone.ownTable {
				desc, err := lookup(t.tableOf(gone))
				if err != nil {
					return err
				}
				exists = desc != nil
			} else if base != nil {
				_, _, _, exists = findIndex(base, gone)
			}
			if exists {
				addf("index %s is declared type=%s, but its %s form %s still exists and is no longer kept: instances that still read it would miss every write from now on. "+
					"Declare type=%s,keep=%s until no instance reads that form (the README's migration runbook), then drop it",
					d.name, d.kind, k, cmp.Or(gone.index, t.tableOf(gone)), d.kind, k)
			}
		}
	}
	return nil
}

// findIndex returns a GSI's or LSI's key schema, projection and status (a
// GSI's; "" for an LSI, which is active with its table).
func findIndex(desc *types.TableDescription, d *layout) ([]types.KeySchemaElement, *types.Projection, types.IndexStatus, bool) {
	if d.kind == GSI {
		for _, g := range desc.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == d.index {
				return g.KeySchema, g.Projection, g.IndexStatus, true
			}
		}
	} else {
		for _, l := range desc.LocalSecondaryIndexes {
			if aws.ToString(l.IndexName) == d.index {
				return l.KeySchema, l.Projection, "", true
			}
		}
	}
	return nil, nil, "", false
}

func checkKeys(addf func(string, ...any), where string, d *layout, ks []types.KeySchemaElement, defs []types.AttributeDefinition) {
	typeOf := func(attr string) types.ScalarAttributeType {
		for _, a := range defs {
			if aws.ToString(a.AttributeName) == attr {
				return a.AttributeType
			}
		}
		return ""
	}
	want := []struct {
		k   *keyAttr
		typ types.KeyType
	}{{d.pk, types.KeyTypeHash}, {d.sk, types.KeyTypeRange}}
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
			addf("%s: no %s key; the declaration has %s (%s)", where, role, w.k.attr, w.k.scalar)
		case aws.ToString(live.AttributeName) != w.k.attr:
			addf("%s: %s key is %s, the declaration has %s", where, role, aws.ToString(live.AttributeName), w.k.attr)
		default:
			if lt := typeOf(w.k.attr); lt != w.k.scalar {
				addf("%s: %s key %s is of type %s, the declaration has %s (items whose attribute has the declared type are left out of the index, or rejected)", where, role, w.k.attr, lt, w.k.scalar)
			}
		}
	}
}

func checkProjection(addf func(string, ...any), where string, d *layout, p *types.Projection) {
	if p == nil {
		addf("%s: no projection described", where)
		return
	}
	switch p.ProjectionType {
	case types.ProjectionTypeAll:
		return
	case types.ProjectionTypeKeysOnly:
		if !d.keysOnly {
			addf("%s: projects keys only; the declaration reads %s", where, projectionWords(d))
		}
	case types.ProjectionTypeInclude:
		if d.keysOnly {
			return
		}
		if d.project == nil {
			addf("%s: projects only %v; the declaration reads all attributes", where, p.NonKeyAttributes)
			return
		}
		var missing []string
		for _, a := range d.project {
			if !slices.Contains(p.NonKeyAttributes, a) && !isKeyAttr(d, a) {
				missing = append(missing, a)
			}
		}
		if len(missing) > 0 {
			addf("%s: does not project %v, which the declaration reads", where, missing)
		}
	}
}

func projectionWords(d *layout) string {
	if d.project != nil {
		return strings.Join(d.project, ", ")
	}
	return "all attributes"
}

func isKeyAttr(d *layout, attr string) bool {
	for _, k := range d.stored {
		if k.attr == attr {
			return true
		}
	}
	return false
}

// shardSample is how many entries CheckSchema reads from each form of a
// sharded index.
const shardSample = 8

// checkShards reads a few entries of each form of every sharded index and
// checks that each is in the shard its base key hashes to under the
// declared shards=: an index written with another number of shards (or
// unsharded) keeps its key schema, so only its entries can tell. A form
// that does not exist is skipped (its gap is reported already).
func (t *Table[T]) checkShards(ctx context.Context, api ScanAPI, addf func(string, ...any), optFns []func(*dynamodb.Options)) error {
	for _, d := range t.s.indexes {
		if d.pk.shards == 0 {
			continue
		}
		in := &dynamodb.ScanInput{TableName: aws.String(t.tableOf(d)), Limit: aws.Int32(shardSample)}
		what := "index table " + t.tableOf(d)
		if d.index != "" {
			in.IndexName = aws.String(d.index)
			what = fmt.Sprintf("table %s %s %s", t.tableOf(d), strings.ToUpper(d.kind.String()), d.index)
		}
		out, err := api.Scan(ctx, in, optFns...)
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf) || (err != nil && isValidation(err)):
			continue // no such table or index: a gap reported already
		case err != nil:
			return fmt.Errorf("ddbindex: CheckSchema, sampling the shards of %s: %w", what, err)
		}
		for _, item := range out.Items {
			if _, err := d.positionOf(item); errors.Is(err, errMalformed) {
				addf("%s: an entry's key does not fit shards=%d (%v): the index was written with another number of shards, or none; "+
					"changing shards= makes a new index (see the README's resharding)", what, d.pk.shards, err)
				break
			}
		}
	}
	return nil
}

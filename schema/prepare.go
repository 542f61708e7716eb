package schema

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
	"github.com/ddbindex/ddbindex/internal/spec"
)

// This file brings existing tables to what the declarations need
// (Prepare). What is missing comes from the same survey as Check's
// (check.go), so that after Prepare Check finds nothing Prepare could have
// done.

// PrepareAPI is the part of the DynamoDB client that [Prepare] needs.
// *dynamodb.Client implements it.
type PrepareAPI interface {
	API
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// PrepareOptions configure [Prepare]. The zero value of each field
// means its default.
type PrepareOptions struct {
	// Progress, when set, is called after every DescribeTable of a wait (a
	// table becoming ACTIVE, a GSI being created), and when DynamoDB refuses
	// an UpdateTable because the table is busy. It runs on Prepare's
	// goroutine: a slow Progress slows the polling.
	Progress func(Event)
	// WaitTimeout bounds each wait. Default 1 hour. When it runs out,
	// Prepare returns an [*Error] (ddbindex.ErrSchemaMismatch), and DynamoDB
	// goes on with what it was doing: calling Prepare again waits on.
	WaitTimeout time.Duration
	// WaitMinDelay and WaitMaxDelay bound the pause between two polls of a
	// wait, which doubles from the first to the second. Defaults 100 ms and
	// 5 s.
	WaitMinDelay, WaitMaxDelay time.Duration
	// GSIThroughput is the provisioned throughput of a GSI added to a base
	// table in PROVISIONED mode. nil gives it the table's own: AWS advises a
	// GSI's write capacity no lower than its table's, since a throttled GSI
	// throttles the table's writes. Unused for on-demand tables.
	GSIThroughput *types.ProvisionedThroughput
	// ClientOptions are passed to every DynamoDB call Prepare makes, as
	// the SDK's own per-call options.
	ClientOptions []func(*dynamodb.Options)
	// ControlTable names the service's control table (see
	// [ControlTableInput]): Prepare creates it when it is missing, and
	// refuses, as for any table, when it exists keyed otherwise. Give the
	// name the application gives migrate.RouterOptions.ControlTable and the
	// DynamoDB checkpoint stores. Default: none, and Prepare leaves the
	// control table alone.
	ControlTable string
}

// Event is what one poll of a wait in [Prepare] saw: PrepareOptions.Progress
// receives it.
type Event struct {
	// Step is the step that waits, as Report.Steps words it.
	Step string
	// Table is the table polled; Index the GSI waited for ("" when waiting
	// for the table itself).
	Table, Index string
	// TableStatus is the table's status; "" while DynamoDB does not yet
	// know a table just created.
	TableStatus types.TableStatus
	// IndexStatus, Backfilling and ItemCount describe the GSI waited for.
	// While a GSI added to an existing table is CREATING, DynamoDB first
	// allocates resources (Backfilling false), then reads every item into
	// it (Backfilling true). DynamoDB refreshes ItemCount about every six
	// hours: it is not a live count of the backfill.
	IndexStatus types.IndexStatus
	Backfilling bool
	ItemCount   int64
	// Elapsed is the time since the wait began.
	Elapsed time.Duration
	// Busy is set when DynamoDB refused the step's UpdateTable because the
	// table was busy (ResourceInUseException while it is UPDATING,
	// LimitExceededException while another GSI is being created); Prepare
	// waits and sends it again.
	Busy error
}

// Report says what [Prepare] did. After a call that found nothing to do,
// every field is empty.
type Report struct {
	// Steps lists, in order, every change Prepare made and every wait for
	// a table or GSI it found not yet ACTIVE, in words.
	Steps []string
	// CreatedTables are the tables Prepare created: the base table (with
	// its GSIs and LSIs), index tables, the control table.
	CreatedTables []string
	// CreatedGSIs are the GSIs Prepare added to the existing base table.
	CreatedGSIs []string
	// StreamEnabled is true when Prepare turned on the base table's
	// NEW_AND_OLD_IMAGES stream (on an existing table, or by creating the
	// base table with it). StreamARN is then the stream's ARN.
	StreamEnabled bool
	StreamARN     string
	// TTLEnabled are the tables whose TTL Prepare enabled.
	TTLEnabled []string
}

// Changed reports whether Prepare changed anything.
func (r Report) Changed() bool {
	return len(r.CreatedTables) > 0 || len(r.CreatedGSIs) > 0 || r.StreamEnabled || len(r.TTLEnabled) > 0
}

// Prepare brings the existing tables to what t's declarations need, and
// reports what it did. It is idempotent: a second call finds nothing to do
// and reports nothing.
//
// It creates the base table when it is missing (as [CreateTableInputs]
// describes it, with its GSIs and LSIs), each missing index table (of the
// declared type or kept, see keep= in ddbindex.IndexSpec), and the control
// table when PrepareOptions.ControlTable names one; on an existing base table it
// adds each missing GSI, declared or kept, one UpdateTable at a time as
// DynamoDB requires, and waits until it is ACTIVE; it enables the base
// table's NEW_AND_OLD_IMAGES stream when index tables are kept from the
// stream (no Options.WriteThrough); and it enables TTL on the TTL attribute (TableSpec ttlattr=)
// wherever tombstones rely on it (index tables, and a softdelete model's
// base table). It waits for tables and GSIs it finds CREATING or UPDATING.
// Progress reports each poll of those waits.
//
// A GSI that DynamoDB adds to an existing table holds the items that carry
// its key attributes. Items written before the model declared the index
// lack its derived key attributes until they are written again or
// backfilled (migrate.Backfill); items written after Prepare are in it.
//
// Prepare first surveys every table, and changes nothing when it finds a gap
// it cannot close: keys or a projection that differ from the declarations,
// a missing LSI (DynamoDB adds LSIs only with their table), a stream with
// another view type, TTL on another attribute, a table or GSI being deleted,
// a form of an index that still exists but that the declaration neither
// serves nor keeps (the plain flip of type=, which [Check] reports too).
// It then returns an [*Error] ([ddbindex.ErrSchemaMismatch]) listing them
// all. It never deletes anything: a form of an index that is no longer kept
// stays, and Check and Prepare go on refusing the declaration until it is
// dropped.
//
// When a later step fails (a DynamoDB error, a server that accepts a change
// it does not make, WaitTimeout), the report lists what was done before, and
// calling Prepare again goes on from there. A failed call to DynamoDB is a
// [*ddbindex.Error] ([ddbindex.ErrDynamoDB]), wrapped. A nil t or api
// fails with an error matching [ddbindex.ErrInvalidWrite], options it
// cannot honour (a nil option function, a nil among ClientOptions, a
// negative duration, a GSIThroughput without both capacities of at least 1;
// 0 means the default) with one matching [ddbindex.ErrDeclaration] that
// names the option, both before any request.
func Prepare[T any](ctx context.Context, t *ddbindex.Table[T], api PrepareAPI, optFns ...func(*PrepareOptions)) (Report, error) {
	const op = "Prepare"
	ts, err := tablesOf(t, ddbindex.ErrInvalidWrite, op)
	if err != nil {
		return Report{}, err
	}
	if isNil(api) {
		return Report{}, invalid(ddbindex.ErrInvalidWrite, op, "no PrepareAPI (a nil client) to change the tables with")
	}
	var o PrepareOptions
	if err := apply(op, &o, optFns); err != nil {
		return Report{}, err
	}
	if err := checkClientOptions(ddbindex.ErrDeclaration, op, "PrepareOptions.ClientOptions", o.ClientOptions); err != nil {
		return Report{}, err
	}
	if err := nonNegative(op, "PrepareOptions", []namedDuration{
		{"WaitTimeout", o.WaitTimeout, time.Hour},
		{"WaitMinDelay", o.WaitMinDelay, 100 * time.Millisecond},
		{"WaitMaxDelay", o.WaitMaxDelay, 5 * time.Second},
	}); err != nil {
		return Report{}, err
	}
	if g := o.GSIThroughput; g != nil && (aws.ToInt64(g.ReadCapacityUnits) < 1 || aws.ToInt64(g.WriteCapacityUnits) < 1) {
		return Report{}, invalid(ddbindex.ErrDeclaration, op, "PrepareOptions.GSIThroughput has ReadCapacityUnits %d and WriteCapacityUnits %d; DynamoDB wants both, at least 1 (nil GSIThroughput: the table's own)",
			aws.ToInt64(g.ReadCapacityUnits), aws.ToInt64(g.WriteCapacityUnits))
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = time.Hour
	}
	if o.WaitMinDelay == 0 {
		o.WaitMinDelay = 100 * time.Millisecond
	}
	if o.WaitMaxDelay == 0 {
		o.WaitMaxDelay = 5 * time.Second
	}
	o.WaitMaxDelay = max(o.WaitMaxDelay, o.WaitMinDelay)
	p := &preparer{ts: ts, api: prepareCalls{apiCalls{api}, api}, o: o}
	sv, err := survey(ctx, ts, o.ControlTable, p.api, o.ClientOptions)
	if err != nil {
		return p.rep, err
	}
	var refused []string
	for _, g := range sv.gaps {
		if g.fix == fixNone {
			refused = append(refused, cmp.Or(g.refusal, g.problem))
		}
	}
	if len(refused) > 0 {
		return p.rep, &Error{Problems: refused, intro: "the live schema does not match the declarations, and Prepare cannot make it match (it changed nothing)"}
	}
	err = p.run(ctx, sv)
	return p.rep, err
}

// preparer carries one Prepare call.
type preparer struct {
	ts  *spec.Tables
	api PrepareAPI
	o   PrepareOptions
	rep Report
}

func (p *preparer) stepf(format string, args ...any) {
	p.rep.Steps = append(p.rep.Steps, fmt.Sprintf(format, args...))
}

// failed is the error of a step that DynamoDB, or the server, did not
// complete.
func failed(format string, args ...any) error {
	return &Error{Problems: []string{fmt.Sprintf(format, args...)}, intro: "Prepare could not finish (its report lists what it did)"}
}

// run closes the gaps, in an order that finishes the quick changes before
// the long waits: tables, TTL, the stream, then GSIs one at a time.
func (p *preparer) run(ctx context.Context, sv *surveyed) error {
	ts := p.ts
	of := func(k fixKind) []gap {
		var out []gap
		for _, g := range sv.gaps {
			if g.fix == k {
				out = append(out, g)
			}
		}
		return out
	}

	// Tables: create every missing one, then wait for each.
	var waits, ttls []string
	createdBase := false
	for _, g := range of(fixCreateTable) {
		created, err := p.createTable(ctx, g.create)
		if err != nil {
			return err
		}
		waits = append(waits, g.table)
		if slices.Contains(ts.TTL, g.table) {
			ttls = append(ttls, g.table)
		}
		createdBase = createdBase || (created && g.table == ts.Base.Name)
	}
	for _, g := range of(fixWaitTable) {
		waits = append(waits, g.table)
	}
	for _, name := range waits {
		var was types.TableStatus
		if !slices.Contains(p.rep.CreatedTables, name) {
			desc, err := describeTable(ctx, p.api, name, p.o.ClientOptions)
			if err != nil {
				return err
			}
			if desc != nil {
				was = desc.TableStatus
			}
		}
		if _, err := p.waitTable(ctx, "wait for table "+name, name); err != nil {
			return err
		}
		if was != "" && was != types.TableStatusActive {
			p.stepf("waited for table %s to become ACTIVE (it was %s)", name, was)
		}
	}
	if createdBase && ts.Base.Stream {
		desc, err := describeTable(ctx, p.api, ts.Base.Name, p.o.ClientOptions)
		if err != nil {
			return err
		}
		if !hasImagesStream(desc) {
			return failed("table %s was created with a %s stream, but the server describes it without one: it does not implement DynamoDB Streams",
				ts.Base.Name, types.StreamViewTypeNewAndOldImages)
		}
		p.rep.StreamEnabled, p.rep.StreamARN = true, aws.ToString(desc.LatestStreamArn)
	}

	// TTL: where the survey found it off, and on the tables just created.
	for _, g := range of(fixTTL) {
		ttls = append(ttls, g.table)
	}
	for _, name := range ttls {
		if err := p.enableTTL(ctx, name); err != nil {
			return err
		}
	}

	// The stream of an existing base table.
	if len(of(fixStream)) > 0 {
		if err := p.enableStream(ctx); err != nil {
			return err
		}
	}

	// GSIs: first those already being created (DynamoDB creates one at a
	// time), then each missing one.
	for _, g := range of(fixWaitGSI) {
		if err := p.waitGSI(ctx, g.index); err != nil {
			return err
		}
	}
	for _, g := range of(fixCreateGSI) {
		if err := p.createGSI(ctx, g.index); err != nil {
			return err
		}
	}
	return nil
}

// createTable creates a table; created is false when it exists already,
// created meanwhile by another caller.
func (p *preparer) createTable(ctx context.Context, in *dynamodb.CreateTableInput) (created bool, err error) {
	name := aws.ToString(in.TableName)
	err = p.retryBusy(ctx, "create table "+name, name, func() error {
		if _, err := p.api.CreateTable(ctx, in, p.o.ClientOptions...); err != nil {
			return fmt.Errorf("ddbindex: create table %s: %w", name, err)
		}
		return nil
	}, isLimitExceeded)
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p.rep.CreatedTables = append(p.rep.CreatedTables, name)
	var parts []string
	for _, g := range in.GlobalSecondaryIndexes {
		parts = append(parts, "GSI "+aws.ToString(g.IndexName))
	}
	for _, l := range in.LocalSecondaryIndexes {
		parts = append(parts, "LSI "+aws.ToString(l.IndexName))
	}
	if s := in.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		parts = append(parts, string(s.StreamViewType)+" stream")
	}
	if len(parts) > 0 {
		p.stepf("created table %s (%s)", name, strings.Join(parts, ", "))
	} else {
		p.stepf("created table %s", name)
	}
	return true, nil
}

// enableTTL enables TTL on the TTL attribute (TableSpec ttlattr=) of the table, unless it is on
// already (a concurrent caller may have done it).
func (p *preparer) enableTTL(ctx context.Context, name string) error {
	attr := p.ts.TTLAttr
	out, err := p.api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)}, p.o.ClientOptions...)
	if err != nil {
		return fmt.Errorf("ddbindex: describe TTL of %s: %w", name, err)
	}
	if d := out.TimeToLiveDescription; d != nil && (d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		if aws.ToString(d.AttributeName) == attr {
			return nil
		}
		return failed("table %s: TTL is on %s, not on %s (enabled by another caller while Prepare ran)", name, aws.ToString(d.AttributeName), attr)
	}
	_, err = p.api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	}, p.o.ClientOptions...)
	if err != nil {
		return fmt.Errorf("ddbindex: enable TTL on %s: %w", name, err)
	}
	p.rep.TTLEnabled = append(p.rep.TTLEnabled, name)
	p.stepf("enabled TTL on attribute %s of table %s", attr, name)
	return nil
}

func hasImagesStream(desc *types.TableDescription) bool {
	s := desc.StreamSpecification
	return s != nil && aws.ToBool(s.StreamEnabled) && s.StreamViewType == types.StreamViewTypeNewAndOldImages
}

// enableStream turns on the existing base table's NEW_AND_OLD_IMAGES
// stream.
func (p *preparer) enableStream(ctx context.Context) error {
	name := p.ts.Base.Name
	step := fmt.Sprintf("enable a %s stream on table %s", types.StreamViewTypeNewAndOldImages, name)
	answered, err := p.updateTable(ctx, step, hasImagesStream, func(*types.TableDescription) *dynamodb.UpdateTableInput {
		return &dynamodb.UpdateTableInput{
			TableName: aws.String(name),
			StreamSpecification: &types.StreamSpecification{
				StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages,
			},
		}
	})
	if err != nil || answered == nil {
		return err
	}
	desc, err := p.waitTable(ctx, step, name)
	if err != nil {
		return err
	}
	if !hasImagesStream(desc) {
		return failed("table %s: the server accepted UpdateTable with a %s stream, but describes the table without it: it does not enable streams on existing tables",
			name, types.StreamViewTypeNewAndOldImages)
	}
	p.rep.StreamEnabled, p.rep.StreamARN = true, aws.ToString(desc.LatestStreamArn)
	p.stepf("enabled a %s stream on table %s (%s)", types.StreamViewTypeNewAndOldImages, name, p.rep.StreamARN)
	return nil
}

// gsiOf returns the table's description of GSI ix.
func gsiOf(desc *types.TableDescription, ix *spec.Index) *types.GlobalSecondaryIndexDescription {
	for i := range desc.GlobalSecondaryIndexes {
		if aws.ToString(desc.GlobalSecondaryIndexes[i].IndexName) == ix.IndexName {
			return &desc.GlobalSecondaryIndexes[i]
		}
	}
	return nil
}

// createGSI adds GSI d to the existing base table, and waits until it is
// ACTIVE.
func (p *preparer) createGSI(ctx context.Context, ix *spec.Index) error {
	name := p.ts.Base.Name
	step := fmt.Sprintf("create GSI %s (index %s) on table %s", ix.IndexName, ix.Name, name)
	answered, err := p.updateTable(ctx, step, func(desc *types.TableDescription) bool { return gsiOf(desc, ix) != nil },
		func(desc *types.TableDescription) *dynamodb.UpdateTableInput {
			defs := map[string]types.ScalarAttributeType{}
			for _, a := range desc.AttributeDefinitions {
				defs[aws.ToString(a.AttributeName)] = a.AttributeType
			}
			create := &types.CreateGlobalSecondaryIndexAction{
				IndexName: aws.String(ix.IndexName), KeySchema: ix.KeySchema(defs), Projection: ix.Projection.Input(),
			}
			if provisioned(desc) {
				create.ProvisionedThroughput = p.o.GSIThroughput
				if create.ProvisionedThroughput == nil && desc.ProvisionedThroughput != nil {
					create.ProvisionedThroughput = &types.ProvisionedThroughput{
						ReadCapacityUnits:  desc.ProvisionedThroughput.ReadCapacityUnits,
						WriteCapacityUnits: desc.ProvisionedThroughput.WriteCapacityUnits,
					}
				}
			}
			return &dynamodb.UpdateTableInput{
				TableName:                   aws.String(name),
				AttributeDefinitions:        spec.AttrDefs(defs),
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: create}},
			}
		})
	if err != nil {
		return err
	}
	if answered != nil && gsiOf(answered, ix) == nil {
		// DynamoDB answers with the GSI CREATING; look again before
		// concluding that the server did not add it.
		desc, err := describeTable(ctx, p.api, name, p.o.ClientOptions)
		if err != nil {
			return err
		}
		if desc == nil || gsiOf(desc, ix) == nil {
			return failed("table %s: the server accepted UpdateTable creating GSI %s (index %s), but describes the table without it: it does not add GSIs to existing tables",
				name, ix.IndexName, ix.Name)
		}
	}
	if answered != nil {
		p.rep.CreatedGSIs = append(p.rep.CreatedGSIs, ix.IndexName)
		p.stepf("created GSI %s (index %s) on table %s", ix.IndexName, ix.Name, name)
	}
	return p.waitIndexActive(ctx, step, ix)
}

// provisioned reports whether the table is billed in PROVISIONED mode, whose
// new GSIs need a provisioned throughput of their own.
func provisioned(desc *types.TableDescription) bool {
	if s := desc.BillingModeSummary; s != nil {
		return s.BillingMode == types.BillingModeProvisioned
	}
	pt := desc.ProvisionedThroughput
	return pt != nil && aws.ToInt64(pt.ReadCapacityUnits) > 0
}

// waitGSI waits for a GSI that the survey found CREATING or UPDATING.
func (p *preparer) waitGSI(ctx context.Context, ix *spec.Index) error {
	name := p.ts.Base.Name
	desc, err := describeTable(ctx, p.api, name, p.o.ClientOptions)
	if err != nil {
		return err
	}
	was := types.IndexStatus("")
	if desc != nil {
		if g := gsiOf(desc, ix); g != nil {
			was = g.IndexStatus
		}
	}
	if err := p.waitIndexActive(ctx, fmt.Sprintf("wait for GSI %s (index %s) on table %s", ix.IndexName, ix.Name, name), ix); err != nil {
		return err
	}
	if was != "" && was != types.IndexStatusActive {
		p.stepf("waited for GSI %s (index %s) on table %s to become ACTIVE (it was %s)", ix.IndexName, ix.Name, name, was)
	}
	return nil
}

func (p *preparer) waitIndexActive(ctx context.Context, step string, ix *spec.Index) error {
	_, err := p.wait(ctx, step, p.ts.Base.Name, ix.IndexName, func(desc *types.TableDescription) (bool, error) {
		g := gsiOf(desc, ix)
		switch {
		case g == nil:
			return false, failed("table %s: GSI %s (index %s) disappeared while Prepare waited for it", p.ts.Base.Name, ix.IndexName, ix.Name)
		case g.IndexStatus == types.IndexStatusDeleting:
			return false, failed("table %s: GSI %s (index %s) is being deleted", p.ts.Base.Name, ix.IndexName, ix.Name)
		}
		return g.IndexStatus == types.IndexStatusActive, nil
	})
	return err
}

// updateTable sends the UpdateTable that build makes from the table's
// current description, once the table is ACTIVE, unless done says the
// change is there already; while DynamoDB refuses it as busy, it waits and
// sends it again. It returns the table's description as UpdateTable
// answered it, nil when done said so.
func (p *preparer) updateTable(ctx context.Context, step string, done func(*types.TableDescription) bool, build func(*types.TableDescription) *dynamodb.UpdateTableInput) (*types.TableDescription, error) {
	name := p.ts.Base.Name
	var answered *types.TableDescription
	err := p.retryBusy(ctx, step, name, func() error {
		desc, err := p.waitTable(ctx, step, name)
		if err != nil {
			return err
		}
		if done(desc) {
			return nil
		}
		out, err := p.api.UpdateTable(ctx, build(desc), p.o.ClientOptions...)
		if err != nil {
			return fmt.Errorf("ddbindex: %s: %w", step, err)
		}
		answered = cmp.Or(out.TableDescription, desc)
		return nil
	}, isBusy)
	return answered, err
}

// isBusy reports whether DynamoDB refused an UpdateTable because the table
// is busy: UPDATING (ResourceInUseException), or creating another GSI
// (LimitExceededException).
func isBusy(err error) bool {
	var inUse *types.ResourceInUseException
	return errors.As(err, &inUse) || isLimitExceeded(err)
}

func isLimitExceeded(err error) bool {
	var limit *types.LimitExceededException
	return errors.As(err, &limit)
}

// retryBusy calls call until it succeeds or fails otherwise than busy says,
// pausing between attempts, within WaitTimeout.
func (p *preparer) retryBusy(ctx context.Context, step, table string, call func() error, busy func(error) bool) error {
	start := time.Now()
	delay := p.o.WaitMinDelay
	for {
		err := call()
		if err == nil || !busy(err) {
			return err
		}
		elapsed := time.Since(start)
		p.progress(Event{Step: step, Table: table, Elapsed: elapsed, Busy: err})
		if elapsed >= p.o.WaitTimeout {
			return failed("%s: DynamoDB still refused it after %v (%v); run Prepare again once the table is no longer busy", step, p.o.WaitTimeout, err)
		}
		if err := retry.Sleep(ctx, min(delay, p.o.WaitTimeout-elapsed)); err != nil {
			return fmt.Errorf("ddbindex: %s: %w", step, err)
		}
		delay = min(2*delay, p.o.WaitMaxDelay)
	}
}

// waitTable waits until the table is ACTIVE.
func (p *preparer) waitTable(ctx context.Context, step, name string) (*types.TableDescription, error) {
	return p.wait(ctx, step, name, "", func(desc *types.TableDescription) (bool, error) {
		switch desc.TableStatus {
		case types.TableStatusActive:
			return true, nil
		case types.TableStatusCreating, types.TableStatusUpdating, "":
			return false, nil
		}
		return false, failed("table %s is %s", name, desc.TableStatus)
	})
}

// wait polls DescribeTable until ready says so, reporting each poll to
// Progress. A table not found yet is polled on: DynamoDB may not describe a
// table at once after creating it.
func (p *preparer) wait(ctx context.Context, step, table, index string, ready func(*types.TableDescription) (bool, error)) (*types.TableDescription, error) {
	start := time.Now()
	delay := p.o.WaitMinDelay
	for {
		desc, err := describeTable(ctx, p.api, table, p.o.ClientOptions)
		if err != nil {
			return nil, err
		}
		ev := Event{Step: step, Table: table, Index: index, Elapsed: time.Since(start)}
		seen := "not yet described"
		if desc != nil {
			ev.TableStatus = desc.TableStatus
			seen = string(desc.TableStatus)
			if index != "" {
				for _, g := range desc.GlobalSecondaryIndexes {
					if aws.ToString(g.IndexName) == index {
						ev.IndexStatus, ev.Backfilling, ev.ItemCount = g.IndexStatus, aws.ToBool(g.Backfilling), aws.ToInt64(g.ItemCount)
						seen = fmt.Sprintf("GSI %s %s (backfilling: %v)", index, g.IndexStatus, ev.Backfilling)
					}
				}
			}
		}
		p.progress(ev)
		if desc != nil {
			if ok, err := ready(desc); err != nil || ok {
				return desc, err
			}
		}
		if ev.Elapsed >= p.o.WaitTimeout {
			return nil, failed("%s: still %s after %v; DynamoDB goes on, and Prepare called again waits on", step, seen, p.o.WaitTimeout)
		}
		if err := retry.Sleep(ctx, min(delay, p.o.WaitTimeout-ev.Elapsed)); err != nil {
			return nil, fmt.Errorf("ddbindex: %s: %w", step, err)
		}
		delay = min(2*delay, p.o.WaitMaxDelay)
	}
}

func (p *preparer) progress(ev Event) {
	if p.o.Progress != nil {
		p.o.Progress(ev)
	}
}

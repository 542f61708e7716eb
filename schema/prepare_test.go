package schema_test

// Tests of Prepare: on the local servers (what they implement of UpdateTable
// and TTL decides what runs where), and on awsFake, an in-memory PrepareAPI
// that reproduces what the local servers do not: DynamoDB's documented
// behaviour while a table is updated and a GSI created.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/slowddb"
	"github.com/ddbindex/ddbindex/schema"
)

// ppPlain is a table of orders with no index; ppWithGSI is the same table
// with a GSI of derived keys (sort key: status, then created); ppWithLSI
// declares, besides, an LSI, an index table and soft deletes.
type ppPlain struct {
	_       ddbindex.TableSpec `ddbindex:"pp-orders"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Owner   string             `dynamodbav:"owner"`
	Status  string             `dynamodbav:"status"`
	Created int64              `dynamodbav:"created"`
}

type ppWithGSI struct {
	_       ddbindex.TableSpec `ddbindex:"pp-orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	Team    string             `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Owner   string             `dynamodbav:"owner"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type ppTwoGSIs struct {
	_       ddbindex.TableSpec `ddbindex:"pp-orders"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	_       ddbindex.IndexSpec `ddbindex:"by_owner,type=gsi"`
	Team    string             `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Owner   string             `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1;by_owner.sk"`
}

type ppWithLSI struct {
	_       ddbindex.TableSpec `ddbindex:"pp-orders,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	_       ddbindex.IndexSpec `ddbindex:"by_created,type=lsi"`
	_       ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Owner   string             `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1;by_created.sk;by_owner.sk"`
}

// ppRouted keeps an LSI and a GSI of one index: both live on the base table,
// so no stream and no TTL are needed, and it runs on every server.
type ppRouted struct {
	_       ddbindex.TableSpec `ddbindex:"pp-routed"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=lsi,keep=gsi,gsi=by_status_gsi"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// ppKeptSoft is a softdelete model whose GSI is migrating to an index table.
type ppKeptSoft struct {
	_       ddbindex.TableSpec `ddbindex:"pp-soft,softdelete"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// ppEvents collects Prepare's progress events.
type ppEvents struct {
	mu  sync.Mutex
	all []schema.Event
}

func (e *ppEvents) opt(o *schema.PrepareOptions) {
	o.Progress = func(ev schema.Event) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.all = append(e.all, ev)
	}
	o.WaitMinDelay, o.WaitMaxDelay = time.Millisecond, 20*time.Millisecond
}

func (e *ppEvents) of(table, index string) []schema.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []schema.Event
	for _, ev := range e.all {
		if ev.Table == table && ev.Index == index {
			out = append(out, ev)
		}
	}
	return out
}

// Step 1 of a GSI -> index table migration on tables that exist: the base
// table of a type=gsi model, without stream or TTL, with items. Prepare for
// the type=gsi,keep=table model creates the index table, enables TTL on it
// and the base table's stream, and a second call finds nothing to do. The
// stream it enabled keeps the index table from then on.
func TestPrepareKeptIndexTable(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.StreamUpdate)
	ddbtest.Require(t, ddbtest.TTL)
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	s0 := scOpen[kpStep0](t, c, naming)
	s1 := scOpen[kpStep1](t, c, naming)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(s0, false)[0])
	for i := range 3 {
		_, err := s0.Put(ctx, kpStep0{ID: fmt.Sprint("old", i), Team: "T1", Status: "open", Created: int64(i)})
		require.NoError(t, err)
	}
	indexTable := formOf(t, s1, "by_status", ddbindex.IndexTable).Table
	scRequireProblems(t, scProblems(t, schema.Check(ctx, s1, c)),
		"table "+indexTable+" does not exist",
		"table "+s1.TableName()+": no stream")

	var ev ppEvents
	rep, err := schema.Prepare(ctx, s1, c, ev.opt)
	require.NoError(t, err)
	t.Logf("report: %+v", rep)
	require.True(t, rep.Changed())
	require.Equal(t, []string{indexTable}, rep.CreatedTables)
	require.Equal(t, []string{indexTable}, rep.TTLEnabled)
	require.True(t, rep.StreamEnabled)
	require.NotEmpty(t, rep.StreamARN)
	require.Empty(t, rep.CreatedGSIs)
	require.Equal(t, []string{
		"created table " + indexTable,
		"enabled TTL on attribute _ttl of table " + indexTable,
		"enabled a NEW_AND_OLD_IMAGES stream on table " + s1.TableName() + " (" + rep.StreamARN + ")",
	}, rep.Steps)
	waits := ev.of(indexTable, "")
	require.NotEmpty(t, waits, "the wait for the new table reports its polls")
	require.Equal(t, types.TableStatusActive, waits[len(waits)-1].TableStatus)
	require.NoError(t, schema.Check(ctx, s1, c))

	again, err := schema.Prepare(ctx, s1, c)
	require.NoError(t, err)
	require.Equal(t, schema.Report{}, again, "a second call has nothing to do")
	require.False(t, again.Changed())

	// From now on the stream keeps the index table: an item written after
	// Prepare reaches it; the items written before wait for a backfill.
	// (The stream consumer lives in package stream, which imports this one:
	// here the stream's view type is checked, and the change applied as the
	// consumer applies it.)
	desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s1.TableName())})
	require.NoError(t, err)
	require.NotNil(t, desc.Table.StreamSpecification)
	require.True(t, aws.ToBool(desc.Table.StreamSpecification.StreamEnabled))
	require.Equal(t, types.StreamViewTypeNewAndOldImages, desc.Table.StreamSpecification.StreamViewType)
	fresh := kpStep1{ID: "new", Team: "T1", Status: "open", Created: 10}
	_, err = s1.Put(ctx, fresh)
	require.NoError(t, err)
	img, err := s1.Marshal(fresh)
	require.NoError(t, err)
	st, err := s1.Apply(ctx, []ddbindex.Change{{New: img, Version: "1"}})
	require.NoError(t, err)
	require.Equal(t, 1, st.Changes)
	got := kpIDs(kpRead(t, s1, "T1", ddbindex.IndexTable), func(it kpStep1) string { return it.ID })
	require.Equal(t, []string{"new"}, got)
	got = kpIDs(kpRead(t, s1, "T1", ddbindex.GSI), func(it kpStep1) string { return it.ID })
	require.ElementsMatch(t, []string{"old0", "old1", "old2", "new"}, got)
}

// A base table without the GSI the model declares: Prepare adds it and waits
// until it is ACTIVE. Items written before carry no derived key attributes,
// so the GSI does not hold them (a backfill's work, not Prepare's); items
// written after Prepare are in it.
func TestPrepareAddsGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	plain := scOpen[ppPlain](t, c, naming)
	withGSI := scOpen[ppWithGSI](t, c, naming)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(plain, false)[0])
	for i := range 3 {
		_, err := plain.Put(ctx, ppPlain{Team: "T1", ID: fmt.Sprint("old", i), Status: "open", Created: int64(i)})
		require.NoError(t, err)
	}
	scRequireProblems(t, scProblems(t, schema.Check(ctx, withGSI, c)), "has no GSI named by_status (index by_status)")

	var ev ppEvents
	rep, err := schema.Prepare(ctx, withGSI, c, ev.opt)
	require.NoError(t, err)
	require.Equal(t, schema.Report{
		Steps:       []string{"created GSI by_status (index by_status) on table " + withGSI.TableName()},
		CreatedGSIs: []string{"by_status"},
	}, rep)
	polls := ev.of(withGSI.TableName(), "by_status")
	require.NotEmpty(t, polls, "the wait for the GSI reports its polls")
	last := polls[len(polls)-1]
	require.Equal(t, types.IndexStatusActive, last.IndexStatus)
	require.Equal(t, "create GSI by_status (index by_status) on table "+withGSI.TableName(), last.Step)
	require.NoError(t, schema.Check(ctx, withGSI, c))

	again, err := schema.Prepare(ctx, withGSI, c)
	require.NoError(t, err)
	require.False(t, again.Changed())
	require.Empty(t, again.Steps)

	read := func() []string {
		var ids []string
		for it, err := range withGSI.Query("by_status", "T1").All(ctx) {
			require.NoError(t, err)
			ids = append(ids, it.ID)
		}
		return ids
	}
	require.Empty(t, read(), "items written before the GSI was declared lack its derived keys")
	_, err = withGSI.Put(ctx, ppWithGSI{Team: "T1", ID: "new", Status: "open", Created: 9})
	require.NoError(t, err)
	require.Equal(t, []string{"new"}, read())
}

// TestPrepareAddsGSI on the local server behind slowddb, which reports the
// new GSI CREATING, first allocating and then backfilling, for a number of
// DescribeTable answers and refuses to read it meanwhile, as DynamoDB does
// (see the slowddb package for the documentation it follows). Prepare polls
// through every stage and returns once the GSI is ACTIVE, when it can be
// read; with the backfill held, it gives up after WaitTimeout, Check says
// the GSI is CREATING, and once the backfill ends a second Prepare waits it
// out without creating it again.
func TestPrepareWaitsForBackfillingGSI(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.GSIUpdate)
	ctx := t.Context()
	c, slow := ddbtest.Slow(t, slowddb.Options{BackfillPolls: 4})
	naming := scNaming(t)
	plain := scOpen[ppPlain](t, c, naming)
	withGSI := scOpen[ppWithGSI](t, c, naming)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(plain, false)[0])
	_, err := plain.Put(ctx, ppPlain{Team: "T1", ID: "old", Status: "open", Created: 1})
	require.NoError(t, err)

	var ev ppEvents
	rep, err := schema.Prepare(ctx, withGSI, c, ev.opt, func(o *schema.PrepareOptions) { o.WaitMinDelay, o.WaitMaxDelay = time.Millisecond, time.Millisecond })
	require.NoError(t, err)
	require.Equal(t, []string{"by_status"}, rep.CreatedGSIs)
	require.Equal(t, []string{"CREATING/false", "CREATING/true", "ACTIVE/false"}, ppStatuses(ev.of(withGSI.TableName(), "by_status")),
		"Prepare followed the GSI through allocation and backfill")
	require.Positive(t, slow.Stats().Creating)
	require.NoError(t, schema.Check(ctx, withGSI, c))
	_, err = withGSI.Put(ctx, ppWithGSI{Team: "T1", ID: "new", Status: "open", Created: 2})
	require.NoError(t, err)
	var ids []string
	for it, err := range withGSI.Query("by_status", "T1").All(ctx) {
		require.NoError(t, err, "an ACTIVE GSI can be read")
		ids = append(ids, it.ID)
	}
	require.Equal(t, []string{"new"}, ids)
	require.Zero(t, slow.Stats().Refused)

	// The backfill held until Finish: Prepare runs out of time, and the
	// GSI cannot be read.
	c2, held := ddbtest.Slow(t, slowddb.Options{})
	naming2 := scNaming(t)
	plain2 := scOpen[ppPlain](t, c2, naming2)
	withGSI2 := scOpen[ppWithGSI](t, c2, naming2)
	ddbtest.CreateTable(t, c2, schema.CreateTableInputs(plain2, false)[0])
	rep, err = schema.Prepare(ctx, withGSI2, c2, func(o *schema.PrepareOptions) {
		o.WaitMinDelay, o.WaitMaxDelay, o.WaitTimeout = time.Millisecond, time.Millisecond, 20*time.Millisecond
	})
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "still GSI by_status CREATING (backfilling: true)")
	require.Equal(t, []string{"by_status"}, rep.CreatedGSIs)
	scRequireProblems(t, scProblems(t, schema.Check(ctx, withGSI2, c2)), "GSI by_status is CREATING, not ACTIVE")
	for _, err := range withGSI2.Query("by_status", "T1").All(ctx) {
		require.ErrorContains(t, err, "Cannot read from backfilling global secondary index: by_status")
	}
	held.Finish(withGSI2.TableName(), "by_status")
	rep, err = schema.Prepare(ctx, withGSI2, c2)
	require.NoError(t, err)
	require.False(t, rep.Changed(), "the GSI was created once: %q", rep.Steps)
	require.NoError(t, schema.Check(ctx, withGSI2, c2))
	require.Equal(t, int64(1), held.Stats().Refused)
}

// A missing LSI cannot be added to an existing table: Prepare says so, and
// changes nothing, though it could have added the GSI, the index table and
// TTL the model also lacks.
func TestPrepareRefusesMissingLSI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	plain := scOpen[ppPlain](t, c, naming)
	withLSI := scOpen[ppWithLSI](t, c, naming)
	ddbtest.CreateTable(t, c, schema.CreateTableInputs(plain, false)[0])
	before, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(plain.TableName())})
	require.NoError(t, err)

	rep, err := schema.Prepare(ctx, withLSI, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.Equal(t, "DDBX-500", ddbindex.Code(err))
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, []string{"table " + plain.TableName() + " has no LSI named by_created (index by_created): DynamoDB creates an LSI only with its table (CreateTable), never on an existing one. " +
		"Declare the index type=gsi (keep= during a migration), or create a new table with the LSI and copy the items into it"}, se.Problems)
	require.Contains(t, err.Error(), "Prepare cannot make it match (it changed nothing)")
	require.Equal(t, schema.Report{}, rep)

	after, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(plain.TableName())})
	require.NoError(t, err)
	require.Empty(t, after.Table.GlobalSecondaryIndexes, "no GSI added")
	require.Equal(t, before.Table.AttributeDefinitions, after.Table.AttributeDefinitions)
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(indexTable(t, withLSI, "by_owner"))})
	var nf *types.ResourceNotFoundException
	require.ErrorAs(t, err, &nf, "no index table created")
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(plain.TableName())})
	require.NoError(t, err)
	require.NotEqual(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus, "TTL left alone")
}

// A stream with another view type, and TTL on another attribute, are set up
// by someone for a reason: Prepare reports both, explains what changing
// them means, and changes nothing (not even the missing index table).
func TestPrepareRefusesStreamAndTTLOfAnotherKind(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	ddbtest.Require(t, ddbtest.TTL)
	ctx := t.Context()
	c := ddbtest.Client(t)
	tb := scOpen[ppKeptSoft](t, c, scNaming(t))
	in := schema.CreateTableInputs(tb, false)[0]
	in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}
	ddbtest.CreateTable(t, c, in)
	_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: in.TableName,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)

	rep, err := schema.Prepare(ctx, tb, c)
	require.Equal(t, schema.Report{}, rep)
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	scRequireProblems(t, se.Problems,
		"table "+tb.TableName()+": the stream's view type is KEYS_ONLY; keeping index tables needs NEW_AND_OLD_IMAGES. Prepare does not change it",
		"table "+tb.TableName()+": TTL is on expires, not on _ttl: a table has one TTL attribute, and Prepare does not move it")
	require.Contains(t, err.Error(), "a new ARN")
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(formOf(t, tb, "by_status", ddbindex.IndexTable).Table)})
	var nf *types.ResourceNotFoundException
	require.ErrorAs(t, err, &nf, "no index table created")
}

// With nothing there, Prepare creates the base table with both forms of the
// index and, named in PrepareOptions, the control table of the routes;
// Check and CheckControlTable then pass. Check looks at the model's tables
// only. (Package migrate's tests route through a control table made so.)
func TestPrepareCreatesBaseAndControlTables(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	control := ddbtest.Name(t, "control")
	ddbtest.DeleteOnCleanup(t, c, control)
	tb := scOpen[ppRouted](t, c, scNaming(t))
	scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, c)),
		"table "+tb.TableName()+" does not exist")
	scRequireProblems(t, scProblems(t, schema.CheckControlTable(ctx, control, c)),
		"control table "+control+" does not exist")

	withControl := func(o *schema.PrepareOptions) { o.ControlTable = control }
	rep, err := schema.Prepare(ctx, tb, c, withControl)
	require.NoError(t, err)
	require.Equal(t, schema.Report{
		Steps: []string{
			"created table " + tb.TableName() + " (GSI by_status_gsi, LSI by_status)",
			"created table " + control,
		},
		CreatedTables: []string{tb.TableName(), control},
	}, rep)
	require.NoError(t, schema.Check(ctx, tb, c))
	require.NoError(t, schema.CheckControlTable(ctx, control, c))
	again, err := schema.Prepare(ctx, tb, c, withControl)
	require.NoError(t, err)
	require.Equal(t, schema.Report{}, again)
}

// A control table keyed otherwise than ControlTableInput makes it is
// reported by CheckControlTable, and Prepare refuses it and changes nothing.
func TestControlTableKeyedOtherwise(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := ddbtest.Client(t)
	control := ddbtest.Name(t, "control")
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:            aws.String(control),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	err := schema.CheckControlTable(ctx, control, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "control table "+control)

	tb := scOpen[ppRouted](t, c, scNaming(t))
	rep, err := schema.Prepare(ctx, tb, c, func(o *schema.PrepareOptions) { o.ControlTable = control })
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "control table "+control)
	require.False(t, rep.Changed(), "Prepare changes nothing when it finds a gap it cannot close")
}

// On a server without streams (dynalite), a new base table created with a
// stream has none: Prepare says so rather than report a stream it did not
// get.
func TestPrepareServerWithoutStreams(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	if ddbtest.Has(ddbtest.Streams) {
		t.Skip("the server implements streams; this test is for one that accepts a StreamSpecification and ignores it (dynalite)")
	}
	tb := scOpen[kpStep1](t, c, scNaming(t))
	rep, err := schema.Prepare(t.Context(), tb, c)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "the server describes it without one: it does not implement DynamoDB Streams")
	require.Contains(t, rep.CreatedTables, tb.TableName(), "the report lists what was done before")
	require.False(t, rep.StreamEnabled)
}

// awsFake is an in-memory PrepareAPI that reproduces DynamoDB's documented
// behaviour around UpdateTable, which the local servers do not (they create
// a GSI at once, and let any UpdateTable through):
//
//   - UpdateTable is asynchronous: the table is UPDATING until it is done,
//     and "While it is UPDATING, you cannot issue another UpdateTable
//     request" (ResourceInUseException). "You can create or delete only one
//     global secondary index per UpdateTable operation", and only one of:
//     throughput, streams, a GSI create or delete (UpdateTable, Amazon
//     DynamoDB API Reference,
//     https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTable.html).
//   - A GSI added to an existing table is CREATING, first while DynamoDB
//     allocates resources (Backfilling false), then while it backfills the
//     existing items (Backfilling true), then ACTIVE; "If you are adding a
//     new global secondary index to the table, AttributeDefinitions must
//     include the key element(s) of the new index"; a table in provisioned
//     mode needs the new GSI's ProvisionedThroughput ("Adding a global
//     secondary index to an existing table" in "Managing global secondary
//     indexes", Amazon DynamoDB Developer Guide,
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.OnlineOps.html).
//     Another GSI create while one is CREATING fails with
//     LimitExceededException "Subscriber limit exceeded: Only 1 online index
//     can be created or deleted simultaneously per table" (the message
//     dynalite copies from DynamoDB, node_modules/dynalite/actions/updateTable.js).
//   - Enabling a stream on a table that has one fails with a
//     ValidationException (StreamSpecification in the UpdateTable
//     reference); UpdateTimeToLive on a table whose TTL is enabled too
//     (UpdateTimeToLive reference), and TTL is ENABLING before ENABLED.
//
// Time is counted in DescribeTable calls on the table, not in seconds, so
// the tests that use it do not depend on timing.
type awsFake struct {
	mu     sync.Mutex
	tables map[string]*fakeTable
	// Polls of a table: CREATING after CreateTable, UPDATING after
	// UpdateTable; polls a GSI spends allocating, then backfilling.
	createPolls, updatePolls, allocPolls, backfillPolls int
	// raceUpdates refuses that many UpdateTable calls as if another
	// caller's UpdateTable had come first (the table turns UPDATING).
	raceUpdates int
	// ignoreGSICreate accepts a GSI create and does nothing, as dynalite
	// does on a provisioned table (node_modules/dynalite/actions/updateTable.js
	// handles only throughput updates).
	ignoreGSICreate bool
	// racedCreates names tables another caller creates (ACTIVE, TTL on
	// _ttl) just before Prepare's CreateTable, which then fails with
	// ResourceInUseException.
	racedCreates []string
	// Records.
	gsiCreates []types.CreateGlobalSecondaryIndexAction
	changes    int // calls that change something
	calls      int
	noOption   int // calls without the test's client option
}

type fakeTable struct {
	desc  types.TableDescription
	polls int            // polls left in CREATING or UPDATING
	gsis  map[string]int // polls left allocating (>0) ...
	fills map[string]int // ... then backfilling, per CREATING GSI
	ttl   types.TimeToLiveDescription
}

const ppAppID = "prepare-test"

func newAWSFake() *awsFake {
	return &awsFake{tables: map[string]*fakeTable{}, createPolls: 2, updatePolls: 2, allocPolls: 2, backfillPolls: 3}
}

func fakeValidation(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
}

// enter counts a call and checks that it carries the test's client option.
func (f *awsFake) enter(optFns []func(*dynamodb.Options)) {
	var o dynamodb.Options
	for _, fn := range optFns {
		fn(&o)
	}
	f.calls++
	if o.AppID != ppAppID {
		f.noOption++
	}
}

func (f *awsFake) table(name *string) (*fakeTable, error) {
	ft, ok := f.tables[aws.ToString(name)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found: Table: " + aws.ToString(name) + " not found")}
	}
	return ft, nil
}

// put adds an ACTIVE table as in.
func (f *awsFake) put(in *dynamodb.CreateTableInput) *fakeTable {
	ft := &fakeTable{gsis: map[string]int{}, fills: map[string]int{}, ttl: types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabled}}
	ft.desc = types.TableDescription{
		TableName: in.TableName, TableStatus: types.TableStatusActive,
		KeySchema: in.KeySchema, AttributeDefinitions: in.AttributeDefinitions,
		BillingModeSummary: &types.BillingModeSummary{BillingMode: ppOr(in.BillingMode, types.BillingModeProvisioned)},
		ProvisionedThroughput: &types.ProvisionedThroughputDescription{
			ReadCapacityUnits: aws.Int64(0), WriteCapacityUnits: aws.Int64(0),
		},
	}
	if pt := in.ProvisionedThroughput; pt != nil {
		ft.desc.ProvisionedThroughput.ReadCapacityUnits, ft.desc.ProvisionedThroughput.WriteCapacityUnits = pt.ReadCapacityUnits, pt.WriteCapacityUnits
	}
	for _, g := range in.GlobalSecondaryIndexes {
		ft.desc.GlobalSecondaryIndexes = append(ft.desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection, IndexStatus: types.IndexStatusActive, ItemCount: aws.Int64(0),
		})
	}
	for _, l := range in.LocalSecondaryIndexes {
		ft.desc.LocalSecondaryIndexes = append(ft.desc.LocalSecondaryIndexes, types.LocalSecondaryIndexDescription{
			IndexName: l.IndexName, KeySchema: l.KeySchema, Projection: l.Projection,
		})
	}
	f.tables[aws.ToString(in.TableName)] = ft
	return ft
}

func ppOr[V comparable](v, or V) V {
	var zero V
	if v == zero {
		return or
	}
	return v
}

func (f *awsFake) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enter(optFns)
	if slices.Contains(f.racedCreates, aws.ToString(in.TableName)) {
		f.racedCreates = slices.DeleteFunc(f.racedCreates, func(n string) bool { return n == aws.ToString(in.TableName) })
		f.put(in).ttl = types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusEnabled, AttributeName: aws.String("_ttl")}
	}
	if _, ok := f.tables[aws.ToString(in.TableName)]; ok {
		return nil, &types.ResourceInUseException{Message: aws.String("Table already exists: " + aws.ToString(in.TableName))}
	}
	f.changes++
	ft := f.put(in)
	ft.desc.TableStatus, ft.polls = types.TableStatusCreating, f.createPolls
	if s := in.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		ft.desc.StreamSpecification = s
		ft.desc.LatestStreamArn = aws.String("arn:fake:" + aws.ToString(in.TableName) + "/stream/1")
	}
	d := ft.desc
	return &dynamodb.CreateTableOutput{TableDescription: &d}, nil
}

func (f *awsFake) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enter(optFns)
	ft, err := f.table(in.TableName)
	if err != nil {
		return nil, err
	}
	// One poll passes.
	if ft.polls > 0 {
		ft.polls--
		if ft.polls == 0 {
			ft.desc.TableStatus = types.TableStatusActive
		}
	}
	for i := range ft.desc.GlobalSecondaryIndexes {
		g := &ft.desc.GlobalSecondaryIndexes[i]
		name := aws.ToString(g.IndexName)
		if g.IndexStatus != types.IndexStatusCreating {
			continue
		}
		switch {
		case ft.gsis[name] > 0:
			ft.gsis[name]--
			g.Backfilling = aws.Bool(false)
		case ft.fills[name] > 0:
			ft.fills[name]--
			g.Backfilling = aws.Bool(true)
		default:
			g.IndexStatus, g.Backfilling = types.IndexStatusActive, aws.Bool(false)
		}
	}
	d := ft.desc
	d.GlobalSecondaryIndexes = slices.Clone(ft.desc.GlobalSecondaryIndexes)
	d.AttributeDefinitions = slices.Clone(ft.desc.AttributeDefinitions)
	return &dynamodb.DescribeTableOutput{Table: &d}, nil
}

func (f *awsFake) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enter(optFns)
	ft, err := f.table(in.TableName)
	if err != nil {
		return nil, err
	}
	inUse := &types.ResourceInUseException{Message: aws.String("Attempt to change a resource which is still in use: Table is being updated: " + aws.ToString(in.TableName))}
	if f.raceUpdates > 0 {
		f.raceUpdates--
		ft.desc.TableStatus, ft.polls = types.TableStatusUpdating, f.updatePolls
		return nil, inUse
	}
	if ft.desc.TableStatus != types.TableStatusActive {
		return nil, inUse
	}
	ops := len(in.GlobalSecondaryIndexUpdates)
	if in.StreamSpecification != nil {
		ops++
	}
	if len(in.GlobalSecondaryIndexUpdates) > 1 {
		return nil, &types.LimitExceededException{Message: aws.String("Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table")}
	}
	if ops != 1 {
		return nil, fakeValidation("the fake supports one GSI create or one stream change per UpdateTable")
	}
	f.changes++
	if s := in.StreamSpecification; s != nil {
		if cur := ft.desc.StreamSpecification; cur != nil && aws.ToBool(cur.StreamEnabled) {
			return nil, fakeValidation("Table already has an enabled stream: " + aws.ToString(in.TableName))
		}
		ft.desc.StreamSpecification = s
		ft.desc.LatestStreamArn = aws.String("arn:fake:" + aws.ToString(in.TableName) + "/stream/2")
	} else {
		c := in.GlobalSecondaryIndexUpdates[0].Create
		if c == nil {
			return nil, fakeValidation("the fake supports GSI creates only")
		}
		for _, g := range ft.desc.GlobalSecondaryIndexes {
			if g.IndexStatus == types.IndexStatusCreating {
				return nil, &types.LimitExceededException{Message: aws.String("Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table")}
			}
			if aws.ToString(g.IndexName) == aws.ToString(c.IndexName) {
				return nil, fakeValidation("Attempting to create an index which already exists")
			}
		}
		defs := map[string]types.ScalarAttributeType{}
		for _, a := range in.AttributeDefinitions {
			defs[aws.ToString(a.AttributeName)] = a.AttributeType
		}
		for _, a := range ft.desc.AttributeDefinitions {
			if t, ok := defs[aws.ToString(a.AttributeName)]; ok && t != a.AttributeType {
				return nil, fakeValidation("Cannot change the type of attribute " + aws.ToString(a.AttributeName))
			}
		}
		for _, k := range c.KeySchema {
			if _, ok := defs[aws.ToString(k.AttributeName)]; !ok {
				return nil, fakeValidation("Global Secondary Index key attribute " + aws.ToString(k.AttributeName) + " is not defined in AttributeDefinitions")
			}
		}
		if (ft.desc.BillingModeSummary.BillingMode == types.BillingModeProvisioned) != (c.ProvisionedThroughput != nil) {
			return nil, fakeValidation("ProvisionedThroughput must be given for a GSI of a provisioned table, and only then")
		}
		f.gsiCreates = append(f.gsiCreates, *c)
		if f.ignoreGSICreate {
			d := ft.desc
			return &dynamodb.UpdateTableOutput{TableDescription: &d}, nil
		}
		for n, t := range defs {
			if !slices.ContainsFunc(ft.desc.AttributeDefinitions, func(a types.AttributeDefinition) bool { return aws.ToString(a.AttributeName) == n }) {
				ft.desc.AttributeDefinitions = append(ft.desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: t})
			}
		}
		ft.desc.GlobalSecondaryIndexes = append(ft.desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: c.IndexName, KeySchema: c.KeySchema, Projection: c.Projection,
			IndexStatus: types.IndexStatusCreating, Backfilling: aws.Bool(false), ItemCount: aws.Int64(0),
		})
		ft.gsis[aws.ToString(c.IndexName)], ft.fills[aws.ToString(c.IndexName)] = f.allocPolls, f.backfillPolls
	}
	ft.desc.TableStatus, ft.polls = types.TableStatusUpdating, f.updatePolls
	d := ft.desc
	d.GlobalSecondaryIndexes = slices.Clone(ft.desc.GlobalSecondaryIndexes)
	return &dynamodb.UpdateTableOutput{TableDescription: &d}, nil
}

func (f *awsFake) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enter(optFns)
	ft, err := f.table(in.TableName)
	if err != nil {
		return nil, err
	}
	if ft.ttl.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		return nil, fakeValidation("TimeToLive is already enabled")
	}
	f.changes++
	ft.ttl = types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusEnabling, AttributeName: in.TimeToLiveSpecification.AttributeName}
	return &dynamodb.UpdateTimeToLiveOutput{TimeToLiveSpecification: in.TimeToLiveSpecification}, nil
}

func (f *awsFake) DescribeTimeToLive(_ context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enter(optFns)
	ft, err := f.table(in.TableName)
	if err != nil {
		return nil, err
	}
	d := ft.ttl
	if ft.ttl.TimeToLiveStatus == types.TimeToLiveStatusEnabling {
		ft.ttl.TimeToLiveStatus = types.TimeToLiveStatusEnabled
	}
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: &d}, nil
}

// ppFakeOpts makes Prepare poll the fake without pauses worth the name, and
// pass the test's client option.
func ppFakeOpts(ev *ppEvents) func(*schema.PrepareOptions) {
	return func(o *schema.PrepareOptions) {
		ev.opt(o)
		o.WaitMinDelay, o.WaitMaxDelay = time.Microsecond, time.Microsecond
		o.ClientOptions = []func(*dynamodb.Options){func(o *dynamodb.Options) { o.AppID = ppAppID }}
	}
}

// ppStatuses lists the distinct (status, backfilling) stages the events
// went through, in order.
func ppStatuses(evs []schema.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Busy != nil {
			continue
		}
		s := fmt.Sprintf("%s/%v", ev.IndexStatus, ev.Backfilling)
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// Two GSIs to add, on a table where another caller's GSI is still being
// created and another caller's update gets in first: Prepare waits out the
// refusals, sends one GSI create at a time, and follows each GSI through
// allocation and backfill to ACTIVE.
func TestPrepareFakeGSIsOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newAWSFake()
	f.raceUpdates = 1
	tb, err := ddbindex.New[ppTwoGSIs](nil)
	require.NoError(t, err)
	plain, err := ddbindex.New[ppPlain](nil)
	require.NoError(t, err)
	in := schema.CreateTableInputs(plain, false)[0]
	ft := f.put(in)
	// Someone else's GSI, still allocating.
	ft.desc.AttributeDefinitions = append(ft.desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("other"), AttributeType: types.ScalarAttributeTypeS})
	ft.desc.GlobalSecondaryIndexes = []types.GlobalSecondaryIndexDescription{{
		IndexName: aws.String("other"), IndexStatus: types.IndexStatusCreating,
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("other"), KeyType: types.KeyTypeHash}},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}}
	ft.gsis["other"], ft.fills["other"] = 3, 3

	var ev ppEvents
	rep, err := schema.Prepare(ctx, tb, f, ppFakeOpts(&ev))
	require.NoError(t, err)
	require.Equal(t, []string{"by_status", "by_owner"}, rep.CreatedGSIs)
	require.Equal(t, []string{
		"created GSI by_status (index by_status) on table pp-orders",
		"created GSI by_owner (index by_owner) on table pp-orders",
	}, rep.Steps)
	require.Len(t, f.gsiCreates, 2, "one UpdateTable per GSI once DynamoDB accepts it")
	require.Zero(t, f.noOption, "every call carries ClientOptions")

	var busy []string
	for _, e := range ev.all {
		if e.Busy != nil {
			var inUse *types.ResourceInUseException
			var limit *types.LimitExceededException
			switch {
			case errors.As(e.Busy, &inUse):
				busy = append(busy, "in use")
			case errors.As(e.Busy, &limit):
				busy = append(busy, "limit")
			}
		}
	}
	require.Contains(t, busy, "in use", "the raced UpdateTable is waited out")
	require.Contains(t, busy, "limit", "the other GSI's creation is waited out")
	for _, gsi := range []string{"by_status", "by_owner"} {
		require.Equal(t, []string{"CREATING/false", "CREATING/true", "ACTIVE/false"}, ppStatuses(ev.of("pp-orders", gsi)),
			"%s: resource allocation, backfill, active", gsi)
	}
	require.NoError(t, schema.Check(ctx, tb, f))
	again, err := schema.Prepare(ctx, tb, f, ppFakeOpts(&ev))
	require.NoError(t, err)
	require.Equal(t, schema.Report{}, again)
}

// A GSI that takes longer than WaitTimeout: Prepare reports what it started
// and that DynamoDB goes on; the next call waits for it without creating it
// again.
func TestPrepareFakeTimeoutThenResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newAWSFake()
	f.allocPolls = 1 << 30
	tb, err := ddbindex.New[ppWithGSI](nil)
	require.NoError(t, err)
	plain, err := ddbindex.New[ppPlain](nil)
	require.NoError(t, err)
	f.put(schema.CreateTableInputs(plain, false)[0])

	var ev ppEvents
	rep, err := schema.Prepare(ctx, tb, f, ppFakeOpts(&ev), func(o *schema.PrepareOptions) { o.WaitTimeout = 20 * time.Millisecond })
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "create GSI by_status (index by_status) on table pp-orders: still GSI by_status CREATING (backfilling: false) after 20ms; DynamoDB goes on, and Prepare called again waits on")
	require.ErrorContains(t, err, "Prepare could not finish")
	require.Equal(t, []string{"by_status"}, rep.CreatedGSIs, "the report says the GSI is on its way")
	scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, f)), "GSI by_status is CREATING, not ACTIVE")

	f.mu.Lock()
	f.tables["pp-orders"].gsis["by_status"] = 1
	f.mu.Unlock()
	rep, err = schema.Prepare(ctx, tb, f, ppFakeOpts(&ev))
	require.NoError(t, err)
	require.Equal(t, schema.Report{Steps: []string{"waited for GSI by_status (index by_status) on table pp-orders to become ACTIVE (it was CREATING)"}}, rep)
	require.False(t, rep.Changed())
	require.Len(t, f.gsiCreates, 1)
	require.NoError(t, schema.Check(ctx, tb, f))
}

// A provisioned table's new GSI gets a throughput: the table's by default,
// schema.PrepareOptions.GSIThroughput when set.
func TestPrepareFakeProvisionedTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		opt         *types.ProvisionedThroughput
		read, write int64
	}{
		{"the table's", nil, 5, 7},
		{"GSIThroughput", &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(20)}, 1, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newAWSFake()
			tb, err := ddbindex.New[ppWithGSI](nil)
			require.NoError(t, err)
			plain, err := ddbindex.New[ppPlain](nil)
			require.NoError(t, err)
			in := schema.CreateTableInputs(plain, false)[0]
			in.BillingMode = types.BillingModeProvisioned
			in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(7)}
			f.put(in)
			var ev ppEvents
			_, err = schema.Prepare(t.Context(), tb, f, ppFakeOpts(&ev), func(o *schema.PrepareOptions) { o.GSIThroughput = tc.opt })
			require.NoError(t, err)
			require.Len(t, f.gsiCreates, 1)
			pt := f.gsiCreates[0].ProvisionedThroughput
			require.Equal(t, tc.read, aws.ToInt64(pt.ReadCapacityUnits))
			require.Equal(t, tc.write, aws.ToInt64(pt.WriteCapacityUnits))
		})
	}
}

// Everything at once on the fake: base table and index table missing for a
// softdelete model that keeps an index table: both are created (the base
// with its stream) and TTL enabled on both; and a server that accepts a GSI
// create and does nothing is caught.
func TestPrepareFakeFromNothingAndIgnoredGSI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newAWSFake()
	tb, err := ddbindex.New[ppKeptSoft](nil)
	require.NoError(t, err)
	var ev ppEvents
	rep, err := schema.Prepare(ctx, tb, f, ppFakeOpts(&ev))
	require.NoError(t, err)
	require.Equal(t, []string{"pp-soft", "pp-soft-by_status"}, rep.CreatedTables)
	require.Equal(t, []string{"pp-soft", "pp-soft-by_status"}, rep.TTLEnabled)
	require.True(t, rep.StreamEnabled)
	require.Equal(t, "arn:fake:pp-soft/stream/1", rep.StreamARN)
	require.Equal(t, []string{
		"created table pp-soft (GSI by_status, NEW_AND_OLD_IMAGES stream)",
		"created table pp-soft-by_status",
		"enabled TTL on attribute _ttl of table pp-soft",
		"enabled TTL on attribute _ttl of table pp-soft-by_status",
	}, rep.Steps)
	for _, name := range rep.CreatedTables {
		require.Equal(t, []string{"CREATING", "ACTIVE"}, func() []string {
			var out []string
			for _, e := range ev.of(name, "") {
				if s := string(e.TableStatus); len(out) == 0 || out[len(out)-1] != s {
					out = append(out, s)
				}
			}
			return out
		}(), name)
	}
	require.Zero(t, f.noOption, "every call carries ClientOptions")
	require.NoError(t, schema.Check(ctx, tb, f))

	g := newAWSFake()
	g.ignoreGSICreate = true
	withGSI, err := ddbindex.New[ppWithGSI](nil)
	require.NoError(t, err)
	plain, err := ddbindex.New[ppPlain](nil)
	require.NoError(t, err)
	g.put(schema.CreateTableInputs(plain, false)[0])
	rep, err = schema.Prepare(ctx, withGSI, g, ppFakeOpts(&ev))
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.ErrorContains(t, err, "the server accepted UpdateTable creating GSI by_status (index by_status), but describes the table without it: it does not add GSIs to existing tables")
	require.Empty(t, rep.CreatedGSIs)
	require.True(t, strings.HasPrefix(err.Error(), "ddbindex: Prepare could not finish"))
}

// What Prepare must not wait for or undo: TTL being disabled, a GSI being
// deleted, a table being deleted. It lists them all and changes nothing.
func TestPrepareFakeRefusesDeletions(t *testing.T) {
	t.Parallel()
	f := newAWSFake()
	tb, err := ddbindex.New[ppKeptSoft](nil)
	require.NoError(t, err)
	ins := schema.CreateTableInputs(tb, true)
	base := f.put(ins[0])
	base.desc.StreamSpecification = ins[0].StreamSpecification
	base.desc.GlobalSecondaryIndexes[0].IndexStatus = types.IndexStatusDeleting
	base.ttl = types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabling}
	f.put(ins[1]).desc.TableStatus = types.TableStatusDeleting

	rep, err := schema.Prepare(t.Context(), tb, f, ppFakeOpts(&ppEvents{}))
	require.Equal(t, schema.Report{}, rep)
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	scRequireProblems(t, se.Problems,
		"table pp-soft GSI by_status is DELETING, not ACTIVE: queries of index by_status fail or miss items until it is; Prepare does not wait for a deletion",
		"table pp-soft: TTL is not enabled (soft-deleted items would never expire); enable it on _ttl: it is being disabled (DISABLING)",
		"table pp-soft-by_status is DELETING: Prepare changes ACTIVE tables only")
	require.Zero(t, f.changes)
}

// Another caller creates a table between Prepare's survey and its
// CreateTable: Prepare waits for that table instead of failing, and does
// not report it as its own, nor enable a TTL that is on already.
func TestPrepareFakeRacedCreate(t *testing.T) {
	t.Parallel()
	f := newAWSFake()
	f.racedCreates = []string{"pp-soft-by_status"}
	tb, err := ddbindex.New[ppKeptSoft](nil)
	require.NoError(t, err)
	rep, err := schema.Prepare(t.Context(), tb, f, ppFakeOpts(&ppEvents{}))
	require.NoError(t, err)
	require.Equal(t, []string{"pp-soft"}, rep.CreatedTables)
	require.Equal(t, []string{"pp-soft"}, rep.TTLEnabled)
	require.NoError(t, schema.Check(t.Context(), tb, f))
}

// A GSI whose key attribute the table already defines with another type
// (for another index): DynamoDB would refuse it, so Prepare refuses first,
// and adds neither GSI.
func TestPrepareFakeRefusesAttributeTypeClash(t *testing.T) {
	t.Parallel()
	f := newAWSFake()
	tb, err := ddbindex.New[ppTwoGSIs](nil)
	require.NoError(t, err)
	plain, err := ddbindex.New[ppPlain](nil)
	require.NoError(t, err)
	ft := f.put(schema.CreateTableInputs(plain, false)[0])
	ft.desc.AttributeDefinitions = append(ft.desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("owner"), AttributeType: types.ScalarAttributeTypeN})
	_, err = schema.Prepare(t.Context(), tb, f, ppFakeOpts(&ppEvents{}))
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, []string{"table pp-orders has no GSI named by_owner (index by_owner): its key attribute owner is of type S, but the table defines owner as N " +
		"(for its own key or another index), so DynamoDB would refuse to create it"}, se.Problems)
	require.Zero(t, f.changes)
}

package schema_test

// Tests of CreateTables, CreateTableInputs and Check: tables created from a
// declaration pass Check, and tables made by hand that differ from the
// declaration are reported, every difference in one *schema.Error.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// scTicket declares a GSI with an INCLUDE projection and a derived sort key,
// a keys-only LSI, a GSI sharing attributes with the others, and an index
// table.
type scTicket struct {
	_       ddbindex.TableSpec `ddbindex:"sc_tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,name=sc-by-status,sk=GSI1SK,project=title|owner"`
	_       ddbindex.IndexSpec `ddbindex:"by_created,type=lsi,name=sc-by-created,project=keys"`
	_       ddbindex.IndexSpec `ddbindex:"by_status_created,type=gsi,name=sc-by-status-created"`
	_       ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.pk;by_status_created.pk"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:0;by_created.sk;by_status_created.sk;by_owner.sk:0"`
	Owner   string             `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Title   string             `dynamodbav:"title"`
	Body    string             `dynamodbav:"body"`
}

// scTicketExpires is scTicket declaring another TTL attribute.
type scTicketExpires struct {
	_       ddbindex.TableSpec `ddbindex:"sc_tickets,ttlattr=_expires"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,name=sc-by-status,sk=GSI1SK,project=title|owner"`
	_       ddbindex.IndexSpec `ddbindex:"by_created,type=lsi,name=sc-by-created,project=keys"`
	_       ddbindex.IndexSpec `ddbindex:"by_status_created,type=gsi,name=sc-by-status-created"`
	_       ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.pk;by_status_created.pk"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:0;by_created.sk;by_status_created.sk;by_owner.sk:0"`
	Owner   string             `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Title   string             `dynamodbav:"title"`
	Body    string             `dynamodbav:"body"`
}

// scPlain has no index table: CreateTables asks for no stream and no TTL.
type scPlain struct {
	_      ddbindex.TableSpec `ddbindex:"sc_plain,pk=PK"`
	_      ddbindex.IndexSpec `ddbindex:"by_kind,type=gsi,project=keys"`
	Team   string             `dynamodbav:"team" ddbindex:"pk:0"`
	Number int64              `dynamodbav:"number" ddbindex:"pk:1,width=6"`
	Kind   string             `dynamodbav:"kind" ddbindex:"by_kind.pk"`
}

func scS(s string) *string { return aws.String(s) }

func scAttr(name string, t types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
}

func scKeys(hash, rng string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
	if rng != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
	}
	return ks
}

var (
	scAll      = &types.Projection{ProjectionType: types.ProjectionTypeAll}
	scKeysOnly = &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
)

func scInclude(attrs ...string) *types.Projection {
	return &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: attrs}
}

func TestSchemaCreateTableInputs(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[scTicket](nil, func(o *ddbindex.Options) { o.TableName = func(s string) string { return "dev." + s } })
	require.NoError(t, err)

	ins := schema.CreateTableInputs(tb, true)
	require.Len(t, ins, 2, "the base table and one index table")
	base, idx := ins[0], ins[1]

	require.Equal(t, "dev.sc_tickets", aws.ToString(base.TableName))
	require.Equal(t, scKeys("team", "id"), base.KeySchema)
	require.Equal(t, types.BillingModePayPerRequest, base.BillingMode)
	// Every key attribute of the table and its indexes once, sorted by name:
	// team (base and LSI), status (two GSIs) and created (LSI and GSI) are
	// shared.
	require.Equal(t, []types.AttributeDefinition{
		scAttr("GSI1SK", types.ScalarAttributeTypeS),
		scAttr("created", types.ScalarAttributeTypeN),
		scAttr("id", types.ScalarAttributeTypeS),
		scAttr("status", types.ScalarAttributeTypeS),
		scAttr("team", types.ScalarAttributeTypeS),
	}, base.AttributeDefinitions)
	require.Equal(t, []types.GlobalSecondaryIndex{
		{IndexName: scS("sc-by-status"), KeySchema: scKeys("status", "GSI1SK"), Projection: scInclude("title", "owner")},
		{IndexName: scS("sc-by-status-created"), KeySchema: scKeys("status", "created"), Projection: scAll},
	}, base.GlobalSecondaryIndexes)
	require.Equal(t, []types.LocalSecondaryIndex{
		{IndexName: scS("sc-by-created"), KeySchema: scKeys("team", "created"), Projection: scKeysOnly},
	}, base.LocalSecondaryIndexes)
	require.Equal(t, &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
		base.StreamSpecification, "an index table is declared and a stream is asked for")

	require.Equal(t, "dev.sc_tickets-by_owner", aws.ToString(idx.TableName))
	require.Equal(t, scKeys("owner", "_sk"), idx.KeySchema)
	require.Equal(t, []types.AttributeDefinition{
		scAttr("_sk", types.ScalarAttributeTypeS),
		scAttr("owner", types.ScalarAttributeTypeS),
	}, idx.AttributeDefinitions, "an index table defines its own keys only")
	require.Equal(t, types.BillingModePayPerRequest, idx.BillingMode)
	require.Nil(t, idx.StreamSpecification)
	require.Empty(t, idx.GlobalSecondaryIndexes)
	require.Empty(t, idx.LocalSecondaryIndexes)

	// The projection list is a copy: changing it does not change the model.
	base.GlobalSecondaryIndexes[0].Projection.NonKeyAttributes[0] = "changed"
	again := schema.CreateTableInputs(tb, true)
	require.Equal(t, scInclude("title", "owner"), again[0].GlobalSecondaryIndexes[0].Projection)
	require.Equal(t, ins[1:], again[1:], "inputs are built the same every time")

	noStream := schema.CreateTableInputs(tb, false)
	require.Nil(t, noStream[0].StreamSpecification, "no stream unless asked for")
	require.Len(t, noStream, 2)

	plain, err := ddbindex.New[scPlain](nil)
	require.NoError(t, err)
	pins := schema.CreateTableInputs(plain, true)
	require.Len(t, pins, 1, "no index table")
	require.Nil(t, pins[0].StreamSpecification, "no index table, no stream, even when asked for")
	require.Equal(t, "sc_plain", aws.ToString(pins[0].TableName))
	require.Equal(t, scKeys("PK", ""), pins[0].KeySchema)
	require.Equal(t, []types.AttributeDefinition{
		scAttr("PK", types.ScalarAttributeTypeS),
		scAttr("kind", types.ScalarAttributeTypeS),
	}, pins[0].AttributeDefinitions)
	require.Equal(t, []types.GlobalSecondaryIndex{
		{IndexName: scS("by_kind"), KeySchema: scKeys("kind", ""), Projection: scKeysOnly},
	}, pins[0].GlobalSecondaryIndexes)
	require.Nil(t, pins[0].LocalSecondaryIndexes)
}

func TestSchemaErrorText(t *testing.T) {
	t.Parallel()
	err := error(&schema.Error{Problems: []string{"table a does not exist", "table b does not exist"}})
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	require.NotErrorIs(t, err, ddbindex.ErrDeclaration)
	require.Equal(t, "DDBX-500", ddbindex.Code(err))
	require.Equal(t, "ddbindex: the live schema does not match the declarations [DDBX-500]:\n"+
		"  - table a does not exist\n  - table b does not exist", err.Error())
	wrapped := errors.Join(errors.New("context"), err)
	var se *schema.Error
	require.ErrorAs(t, wrapped, &se)
	require.Len(t, se.Problems, 2)
}

// scNewTable returns a Table for T whose physical names are unique to the
// test, and the client; it creates nothing, but deletes the tables the test
// creates.
func scNewTable[T any](t *testing.T, optFns ...func(*ddbindex.Options)) (*ddbindex.Table[T], *dynamodb.Client) {
	t.Helper()
	c := ddbtest.Client(t)
	return scOpen[T](t, c, scNaming(t), optFns...), c
}

// scProblems takes what Check returned, which must be a *schema.Error,
// and returns its problems.
func scProblems(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ddbindex.ErrSchemaMismatch)
	var se *schema.Error
	require.ErrorAs(t, err, &se)
	for _, p := range se.Problems {
		require.Contains(t, err.Error(), p)
	}
	return se.Problems
}

// scRequireProblems checks that every expected text is in exactly one
// problem, and that there are no other problems.
func scRequireProblems(t *testing.T, problems []string, want ...string) {
	t.Helper()
	for _, w := range want {
		n := 0
		for _, p := range problems {
			if strings.Contains(p, w) {
				n++
			}
		}
		require.Equal(t, 1, n, "problems containing %q in:\n%s", w, strings.Join(problems, "\n"))
	}
	require.Len(t, problems, len(want), "problems:\n%s", strings.Join(problems, "\n"))
}

func TestSchemaCreatedTablesPass(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	naming := scNaming(t)
	tb := newTestTableNamed[scTicket](t, c, naming)
	ctx := t.Context()
	idxName := indexTable(t, tb, "by_owner")
	err := schema.Check(ctx, tb, c)
	if !ddbtest.Has(ddbtest.Streams) {
		// Without streams on the server, the stream the index table is kept
		// from is missing (and, without TTL, its TTL too): nothing else.
		want := []string{"table " + tb.TableName() + ": no stream; its index tables are kept from the stream, which needs NEW_AND_OLD_IMAGES"}
		if !ddbtest.Has(ddbtest.TTL) {
			want = append(want, "index table "+idxName+": TTL is not enabled (tombstones would never expire); enable it on _ttl")
		}
		scRequireProblems(t, scProblems(t, err), want...)
		// Written through, the index table needs no stream.
		wt, err := ddbindex.New[scTicket](c, naming, func(o *ddbindex.Options) { o.WriteThrough = true })
		require.NoError(t, err)
		err = schema.Check(ctx, wt, c)
		if ddbtest.Has(ddbtest.TTL) {
			require.NoError(t, err)
		} else {
			scRequireProblems(t, scProblems(t, err), want[1:]...)
		}
	} else if ddbtest.Has(ddbtest.TTL) {
		require.NoError(t, err)
		ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(idxName)})
		require.NoError(t, err)
		require.Equal(t, "_ttl", aws.ToString(ttl.TimeToLiveDescription.AttributeName))

		// The TTL attribute is declared (ttlattr=): a Table that expects
		// another one reports it.
		other, err := ddbindex.New[scTicketExpires](c, naming)
		require.NoError(t, err)
		scRequireProblems(t, scProblems(t, schema.Check(ctx, other, c)),
			"index table "+idxName+": TTL is on _ttl, not on _expires")
	} else {
		// Without TTL on the server, that is the one thing missing.
		require.Equal(t, []string{"index table " + idxName + ": TTL is not enabled (tombstones would never expire); enable it on _ttl"},
			scProblems(t, err))
	}

	// What CreateTables made is what CreateTableInputs describes.
	desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb.TableName())})
	require.NoError(t, err)
	require.Len(t, desc.Table.GlobalSecondaryIndexes, 2)
	require.Len(t, desc.Table.LocalSecondaryIndexes, 1)
	if ddbtest.Has(ddbtest.Streams) {
		require.NotNil(t, desc.Table.StreamSpecification)
		require.True(t, aws.ToBool(desc.Table.StreamSpecification.StreamEnabled))
		require.Equal(t, types.StreamViewTypeNewAndOldImages, desc.Table.StreamSpecification.StreamViewType)
	}

	// Tables are not created twice.
	err = schema.CreateTables(ctx, tb, c, func(o *schema.CreateOptions) { o.NoTTL = true })
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse)
	require.ErrorContains(t, err, "ddbindex: create table "+tb.TableName())
}

func TestSchemaCreateTablesWithoutIndexTable(t *testing.T) {
	t.Parallel()
	// No index table: no TTL call and no stream, so this works on every
	// server even without NoTTL.
	tb, c := scNewTable[scPlain](t)
	ctx := t.Context()
	require.NoError(t, schema.CreateTables(ctx, tb, c))
	require.NoError(t, schema.Check(ctx, tb, c))
	desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb.TableName())})
	require.NoError(t, err)
	if s := desc.Table.StreamSpecification; s != nil {
		require.False(t, aws.ToBool(s.StreamEnabled))
	}
}

// scWide declares one of each thing Check compares, to be created by
// hand with a mistake in each.
type scWide struct {
	_       ddbindex.TableSpec `ddbindex:"sc_wide"`
	_       ddbindex.IndexSpec `ddbindex:"g_ok,type=gsi,name=gok"`
	_       ddbindex.IndexSpec `ddbindex:"g_missing,type=gsi,name=gmissing"`
	_       ddbindex.IndexSpec `ddbindex:"g_type,type=gsi,name=gtype,sk=gtype_sk"`
	_       ddbindex.IndexSpec `ddbindex:"g_name,type=gsi,name=gname"`
	_       ddbindex.IndexSpec `ddbindex:"g_keys,type=gsi,name=gkeys"`
	_       ddbindex.IndexSpec `ddbindex:"g_keys2,type=gsi,name=gkeys2,project=title|body"`
	_       ddbindex.IndexSpec `ddbindex:"g_incl,type=gsi,name=gincl,project=title|body|status"`
	_       ddbindex.IndexSpec `ddbindex:"g_inclall,type=gsi,name=ginclall"`
	_       ddbindex.IndexSpec `ddbindex:"g_keysdecl,type=gsi,name=gkeysdecl,project=keys"`
	_       ddbindex.IndexSpec `ddbindex:"g_nosk,type=gsi,name=gnosk"`
	_       ddbindex.IndexSpec `ddbindex:"g_extra,type=gsi,name=gextra"`
	_       ddbindex.IndexSpec `ddbindex:"g_noproj,type=gsi,name=gnoproj"`
	_       ddbindex.IndexSpec `ddbindex:"l_ok,type=lsi,name=lok"`
	_       ddbindex.IndexSpec `ddbindex:"l_missing,type=lsi,name=lmissing"`
	_       ddbindex.IndexSpec `ddbindex:"l_name,type=lsi,name=lname"`
	_       ddbindex.IndexSpec `ddbindex:"t_ok,type=table"`
	_       ddbindex.IndexSpec `ddbindex:"t_missing,type=table"`
	_       ddbindex.IndexSpec `ddbindex:"t_nottl,type=table"`
	_       ddbindex.IndexSpec `ddbindex:"t_wrongttl,type=table"`
	_       ddbindex.IndexSpec `ddbindex:"t_keys,type=table"`
	Team    string             `dynamodbav:"team" ddbindex:"pk"`
	ID      string             `dynamodbav:"id" ddbindex:"sk"`
	Status  string             `dynamodbav:"status" ddbindex:"g_ok.pk;g_type.pk;g_incl.pk;t_ok.pk;t_nottl.pk;t_wrongttl.pk;t_keys.pk"`
	Created int64              `dynamodbav:"created" ddbindex:"g_ok.sk;g_type.sk;g_nosk.sk;l_ok.sk;t_ok.sk;t_nottl.sk;t_wrongttl.sk;t_keys.sk"`
	Owner   string             `dynamodbav:"owner" ddbindex:"g_missing.pk;g_name.pk;g_nosk.pk;t_missing.pk"`
	Title   string             `dynamodbav:"title" ddbindex:"g_name.sk;g_keys.pk;g_inclall.pk;l_missing.sk;l_name.sk"`
	Body    string             `dynamodbav:"body" ddbindex:"g_keys2.pk;g_keysdecl.pk;g_extra.pk;g_noproj.pk"`
}

// scFaulty is a schema.API that passes calls to the server, except those it
// is told to fail, and can hide an index's projection from DescribeTable.
type scFaulty struct {
	schema.API
	failCreate, failDescribe, failUpdateTTL, failDescribeTTL string // table names
	hideProjection                                           string // a GSI name
}

var errScInjected = errors.New("injected failure")

func (f *scFaulty) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	if aws.ToString(in.TableName) == f.failCreate {
		return nil, errScInjected
	}
	return f.API.CreateTable(ctx, in, o...)
}

func (f *scFaulty) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if aws.ToString(in.TableName) == f.failDescribe {
		return nil, errScInjected
	}
	out, err := f.API.DescribeTable(ctx, in, o...)
	if err == nil && f.hideProjection != "" {
		for i, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == f.hideProjection {
				out.Table.GlobalSecondaryIndexes[i].Projection = nil
			}
		}
	}
	return out, err
}

func (f *scFaulty) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	if aws.ToString(in.TableName) == f.failUpdateTTL {
		return nil, errScInjected
	}
	return f.API.UpdateTimeToLive(ctx, in, o...)
}

func (f *scFaulty) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	if aws.ToString(in.TableName) == f.failDescribeTTL {
		return nil, errScInjected
	}
	return f.API.DescribeTimeToLive(ctx, in, o...)
}

func TestSchemaMismatchesReportedTogether(t *testing.T) {
	t.Parallel()
	tb, c := scNewTable[scWide](t)
	ctx := t.Context()
	name := func(index string) string { return indexTable(t, tb, index) }
	base := tb.TableName()
	S, N := types.ScalarAttributeTypeS, types.ScalarAttributeTypeN

	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName: aws.String(base),
		AttributeDefinitions: []types.AttributeDefinition{
			scAttr("team", S), scAttr("id", S), scAttr("status", S), scAttr("created", N), scAttr("gtype_sk", N),
			scAttr("owner", S), scAttr("owner_id", S), scAttr("title", S), scAttr("body", S),
		},
		KeySchema:   scKeys("team", "id"),
		BillingMode: types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: scS("gok"), KeySchema: scKeys("status", "created"), Projection: scAll},
			// gmissing is missing.
			{IndexName: scS("gtype"), KeySchema: scKeys("status", "gtype_sk"), Projection: scAll},
			{IndexName: scS("gname"), KeySchema: scKeys("owner_id", "title"), Projection: scAll},
			{IndexName: scS("gkeys"), KeySchema: scKeys("title", ""), Projection: scKeysOnly},
			{IndexName: scS("gkeys2"), KeySchema: scKeys("body", ""), Projection: scKeysOnly},
			{IndexName: scS("gincl"), KeySchema: scKeys("status", ""), Projection: scInclude("title")},
			{IndexName: scS("ginclall"), KeySchema: scKeys("title", ""), Projection: scInclude("body")},
			{IndexName: scS("gkeysdecl"), KeySchema: scKeys("body", ""), Projection: scInclude("title")},
			{IndexName: scS("gnosk"), KeySchema: scKeys("owner", ""), Projection: scAll},
			{IndexName: scS("gextra"), KeySchema: scKeys("body", "created"), Projection: scAll},
			{IndexName: scS("gnoproj"), KeySchema: scKeys("body", ""), Projection: scAll},
		},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{
			{IndexName: scS("lok"), KeySchema: scKeys("team", "created"), Projection: scAll},
			// lmissing is missing.
			{IndexName: scS("lname"), KeySchema: scKeys("team", "body"), Projection: scAll},
		},
	})
	indexTable := func(index string, pkType, skType types.ScalarAttributeType) {
		ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
			TableName:            aws.String(name(index)),
			AttributeDefinitions: []types.AttributeDefinition{scAttr("status", pkType), scAttr("_sk", skType)},
			KeySchema:            scKeys("status", "_sk"),
			BillingMode:          types.BillingModePayPerRequest,
		})
	}
	indexTable("t_ok", S, S)
	// t_missing is missing.
	indexTable("t_nottl", S, S)
	indexTable("t_wrongttl", S, S)
	indexTable("t_keys", N, N)

	ttl := ddbtest.Has(ddbtest.TTL)
	enableTTL := func(index, attr string) {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name(index)),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
		})
		require.NoError(t, err)
	}
	if ttl {
		enableTTL("t_ok", "_ttl")
		enableTTL("t_wrongttl", "expires")
		enableTTL("t_keys", "_ttl")
	}

	where := "table " + base
	want := []string{
		where + " has no GSI named gmissing (index g_missing)",
		where + " GSI gtype: sort key gtype_sk is of type N, the declaration has S",
		where + " GSI gname: partition key is owner_id, the declaration has owner",
		where + " GSI gkeys: projects keys only; the declaration reads all attributes",
		where + " GSI gkeys2: projects keys only; the declaration reads title, body",
		where + " GSI gincl: does not project [body], which the declaration reads",
		where + " GSI ginclall: projects only [body]; the declaration reads all attributes",
		where + " GSI gnosk: no sort key; the declaration has created (N)",
		where + " GSI gextra: has sort key created, the declaration has none",
		where + " has no LSI named lmissing (index l_missing)",
		where + " LSI lname: sort key is body, the declaration has title",
		"table " + name("t_missing") + " does not exist",
		"index table " + name("t_nottl") + ": TTL is not enabled",
		"index table " + name("t_keys") + ": partition key status is of type N, the declaration has S",
		"index table " + name("t_keys") + ": sort key _sk is of type N, the declaration has S",
		where + ": no stream; its index tables are kept from the stream, which needs NEW_AND_OLD_IMAGES",
	}
	if ttl {
		want = append(want, "index table "+name("t_wrongttl")+": TTL is on expires, not on _ttl")
	} else {
		want = append(want,
			"index table "+name("t_ok")+": TTL is not enabled",
			"index table "+name("t_wrongttl")+": TTL is not enabled",
			"index table "+name("t_keys")+": TTL is not enabled")
	}
	problems := scProblems(t, schema.Check(ctx, tb, c))
	scRequireProblems(t, problems, want...)

	// A projection DescribeTable does not describe is a problem too.
	hidden := &scFaulty{API: c, hideProjection: "gnoproj"}
	problems = scProblems(t, schema.Check(ctx, tb, hidden))
	scRequireProblems(t, problems, append(want, where+" GSI gnoproj: no projection described")...)

	// Errors talking to DynamoDB are errors, not mismatches.
	for _, f := range []*scFaulty{
		{API: c, failDescribe: base},
		{API: c, failDescribe: name("t_ok")},
		{API: c, failDescribeTTL: name("t_nottl")},
	} {
		err := schema.Check(ctx, tb, f)
		require.ErrorIs(t, err, errScInjected)
		require.NotErrorIs(t, err, ddbindex.ErrSchemaMismatch)
		require.ErrorContains(t, err, "ddbindex: describe")
	}
}

func TestSchemaBaseTableMismatch(t *testing.T) {
	t.Parallel()
	tb, c := scNewTable[scTicket](t)
	ctx := t.Context()
	idx := indexTable(t, tb, "by_owner")

	// Nothing exists yet: each missing table once, and nothing about the
	// indexes of a table that is not there.
	problems := scProblems(t, schema.Check(ctx, tb, c))
	require.Equal(t, []string{"table " + tb.TableName() + " does not exist", "table " + idx + " does not exist"}, problems)

	// A base table with a Number partition key and no sort key, and an
	// index table keyed by other attributes.
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:            aws.String(tb.TableName()),
		AttributeDefinitions: []types.AttributeDefinition{scAttr("team", types.ScalarAttributeTypeN)},
		KeySchema:            scKeys("team", ""),
		BillingMode:          types.BillingModePayPerRequest,
	})
	ddbtest.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:            aws.String(idx),
		AttributeDefinitions: []types.AttributeDefinition{scAttr("PK", types.ScalarAttributeTypeS), scAttr("SK", types.ScalarAttributeTypeS)},
		KeySchema:            scKeys("PK", "SK"),
		BillingMode:          types.BillingModePayPerRequest,
	})
	where := "table " + tb.TableName()
	scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, c)),
		where+": partition key team is of type N, the declaration has S",
		where+": no sort key; the declaration has id (S)",
		where+" has no GSI named sc-by-status (index by_status)",
		where+" has no GSI named sc-by-status-created (index by_status_created)",
		where+" has no LSI named sc-by-created (index by_created)",
		"index table "+idx+": partition key is PK, the declaration has owner",
		"index table "+idx+": sort key is SK, the declaration has _sk",
		"index table "+idx+": TTL is not enabled",
		where+": no stream",
	)
}

func TestSchemaCreateTablesFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(base, idx string) *scFaulty
		opts  schema.CreateOptions
		want  string
	}{
		{"create", func(_, idx string) *scFaulty { return &scFaulty{failCreate: idx} }, schema.CreateOptions{NoTTL: true}, "ddbindex: create table "},
		{"wait", func(base, _ string) *scFaulty { return &scFaulty{failDescribe: base} }, schema.CreateOptions{NoTTL: true}, "ddbindex: wait for table "},
		{"ttl", func(_, idx string) *scFaulty { return &scFaulty{failUpdateTTL: idx} }, schema.CreateOptions{}, "ddbindex: enable TTL on "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb, c := scNewTable[scTicket](t)
			idx := indexTable(t, tb, "by_owner")
			f := tc.fault(tb.TableName(), idx)
			f.API = c
			tc.opts.NoStream = !ddbtest.Has(ddbtest.Streams)
			tc.opts.WaitMinDelay, tc.opts.WaitMaxDelay = 10e6, 50e6
			err := schema.CreateTables(t.Context(), tb, f, func(o *schema.CreateOptions) { *o = tc.opts })
			require.ErrorIs(t, err, errScInjected)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// scSoft is soft-deleted, with a GSI and an index table kept from the
// stream: its tombstones rely on TTL in both tables, and the index table on
// the stream.
type scSoft struct {
	_     ddbindex.TableSpec `ddbindex:"sc_soft,softdelete"`
	_     ddbindex.IndexSpec `ddbindex:"by_owner,type=gsi,name=sc-soft-by-owner"`
	_     ddbindex.IndexSpec `ddbindex:"by_topic,type=table"`
	ID    string             `dynamodbav:"id" ddbindex:"pk"`
	Owner string             `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Topic string             `dynamodbav:"topic" ddbindex:"by_topic.pk"`
}

// scGSIStatus reports every GSI of DescribeTable as status.
type scGSIStatus struct {
	schema.API
	status types.IndexStatus
}

func (f *scGSIStatus) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := f.API.DescribeTable(ctx, in, o...)
	if err == nil {
		for i := range out.Table.GlobalSecondaryIndexes {
			out.Table.GlobalSecondaryIndexes[i].IndexStatus = f.status
		}
	}
	return out, err
}

// TestSchemaStreamTTLAndGSIStatus: CreateTables enables TTL on a softdelete
// model's base table too, and Check reports what the tombstones and
// the stream consumer rely on: TTL on the base table, a NEW_AND_OLD_IMAGES
// stream, and GSIs that are ACTIVE.
func TestSchemaStreamTTLAndGSIStatus(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("created", func(t *testing.T) {
		t.Parallel()
		ddbtest.Require(t, ddbtest.TTL)
		ddbtest.Require(t, ddbtest.Streams)
		tb, c := newTestTable[scSoft](t)
		ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tb.TableName())})
		require.NoError(t, err)
		require.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus, "soft-deleted items expire")
		require.Equal(t, "_ttl", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
		require.NoError(t, schema.Check(ctx, tb, c))

		for _, status := range []types.IndexStatus{types.IndexStatusCreating, types.IndexStatusUpdating, types.IndexStatusDeleting} {
			scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, &scGSIStatus{API: c, status: status})),
				"table "+tb.TableName()+" GSI sc-soft-by-owner is "+string(status)+", not ACTIVE")
		}
	})
	t.Run("by hand", func(t *testing.T) {
		t.Parallel()
		c := ddbtest.Client(t)
		naming := scNaming(t)
		tb := scOpen[scSoft](t, c, naming)
		inputs := schema.CreateTableInputs(tb, false)
		require.Nil(t, inputs[0].StreamSpecification)
		for _, in := range inputs {
			ddbtest.CreateTable(t, c, in)
		}
		base, idx := tb.TableName(), indexTable(t, tb, "by_topic")
		scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, c)),
			"table "+base+": no stream; its index tables are kept from the stream, which needs NEW_AND_OLD_IMAGES (or set Options.WriteThrough)",
			"table "+base+": TTL is not enabled (soft-deleted items would never expire); enable it on _ttl",
			"index table "+idx+": TTL is not enabled (tombstones would never expire)",
		)
		wt, err := ddbindex.New[scSoft](c, naming, func(o *ddbindex.Options) { o.WriteThrough = true })
		require.NoError(t, err)
		scRequireProblems(t, scProblems(t, schema.Check(ctx, wt, c)),
			"table "+base+": TTL is not enabled (soft-deleted items",
			"index table "+idx+": TTL is not enabled",
		)
	})
	t.Run("stream of new images only", func(t *testing.T) {
		t.Parallel()
		ddbtest.Require(t, ddbtest.Streams)
		ddbtest.Require(t, ddbtest.TTL)
		tb, c := scNewTable[scSoft](t)
		inputs := schema.CreateTableInputs(tb, true)
		inputs[0].StreamSpecification.StreamViewType = types.StreamViewTypeNewImage
		require.NoError(t, schema.CreateTables(ctx, tb, &scCreateWith{API: c, inputs: inputs}, func(o *schema.CreateOptions) {
			o.WaitMinDelay, o.WaitMaxDelay = 10e6, 50e6
		}))
		scRequireProblems(t, scProblems(t, schema.Check(ctx, tb, c)),
			"table "+tb.TableName()+": the stream's view type is NEW_IMAGE; keeping index tables needs NEW_AND_OLD_IMAGES")
	})
	t.Run("TTL fails on the base table", func(t *testing.T) {
		t.Parallel()
		tb, c := scNewTable[scSoft](t)
		f := &scFaulty{API: c, failUpdateTTL: tb.TableName()}
		err := schema.CreateTables(ctx, tb, f, func(o *schema.CreateOptions) {
			o.NoStream, o.WaitMinDelay, o.WaitMaxDelay = !ddbtest.Has(ddbtest.Streams), 10e6, 50e6
		})
		require.ErrorIs(t, err, errScInjected)
		require.ErrorContains(t, err, "ddbindex: enable TTL on "+tb.TableName())
	})
}

// scCreateWith creates tables from the given inputs in place of the ones
// CreateTables asks for (matched by name), to make a table differ.
type scCreateWith struct {
	schema.API
	inputs []*dynamodb.CreateTableInput
}

func (f *scCreateWith) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	for _, w := range f.inputs {
		if aws.ToString(w.TableName) == aws.ToString(in.TableName) {
			in = w
		}
	}
	return f.API.CreateTable(ctx, in, o...)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

// The template is checked without AWS: it parses, its tables are the
// model's, its event source mapping is configured for partial batch
// responses, and its IAM policies allow the calls the handler and an
// application make against the test server, and (for the function, and the
// application where the server has transactions) nothing more.

// cfn is the parsed template, for a stack of the name stack.
type cfn struct {
	stack     string
	Resources map[string]struct {
		Type       string         `yaml:"Type"`
		Properties map[string]any `yaml:"Properties"`
	} `yaml:"Resources"`
	Parameters map[string]map[string]any `yaml:"Parameters"`
	Outputs    map[string]map[string]any `yaml:"Outputs"`
	Transform  string                    `yaml:"Transform"`
}

func loadTemplate(t *testing.T, stack string) cfn {
	t.Helper()
	return loadTemplateFile(t, "template.yaml", stack)
}

// loadTemplateFile reads the template in file, for a stack named stack.
func loadTemplateFile(t *testing.T, file, stack string) cfn {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	c := cfn{stack: stack}
	require.NoError(t, yaml.Unmarshal(raw, &c))
	require.NotEmpty(t, c.Resources)
	return c
}

var subRef = regexp.MustCompile(`\$\{([^}]+)\}`)

// resolve evaluates the intrinsic functions of v for a stack named stack:
// a Ref of a resource is "ref(Name)", its Fn::GetAtt "Attr(Name)"
// (Arn(TicketsTable), StreamArn(TicketsTable)), and Fn::Sub substitutes
// both forms and AWS::StackName. Every name must be a resource of c.
func (c cfn) resolve(t *testing.T, v any) any {
	t.Helper()
	name := func(n string) string {
		_, ok := c.Resources[n]
		_, isParam := c.Parameters[n]
		require.True(t, ok || isParam, "%s names no resource or parameter of the template", n)
		return n
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				switch k {
				case "Ref":
					return "ref(" + name(arg.(string)) + ")"
				case "Fn::GetAtt":
					parts := arg.([]any)
					return fmt.Sprintf("%s(%s)", parts[1], name(parts[0].(string)))
				case "Fn::Sub":
					return subRef.ReplaceAllStringFunc(arg.(string), func(m string) string {
						ref := m[2 : len(m)-1]
						if ref == "AWS::StackName" {
							return c.stack
						}
						if res, attr, ok := strings.Cut(ref, "."); ok {
							return fmt.Sprintf("%s(%s)", attr, name(res))
						}
						return "ref(" + name(ref) + ")"
					})
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			out[k] = c.resolve(t, e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = c.resolve(t, e)
		}
		return out
	}
	return v
}

// props returns a resource's resolved properties, checking its type.
func (c cfn) props(t *testing.T, name, typ string) map[string]any {
	t.Helper()
	r, ok := c.Resources[name]
	require.True(t, ok, "no resource %s", name)
	require.Equal(t, typ, r.Type, name)
	return c.resolve(t, r.Properties).(map[string]any)
}

// tableResources maps each DynamoDB table's physical name to its resource.
func (c cfn) tableResources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, r := range c.Resources {
		if r.Type == "AWS::DynamoDB::Table" {
			out[c.props(t, name, r.Type)["TableName"].(string)] = name
		}
	}
	return out
}

func newTickets(t *testing.T, client ddbindex.Client, stack string) *ddbindex.Table[Ticket] {
	t.Helper()
	tb, err := ddbindex.New[Ticket](client, func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return stack + "-" + s }
	})
	require.NoError(t, err)
	return tb
}

// TestTemplateTables: the template's tables are those the model declares:
// names (under the stack's prefix, which the function gets as
// TABLE_PREFIX), keys, attribute types, billing, the base table's
// NEW_AND_OLD_IMAGES stream, and TTL on the index table.
func TestTemplateTables(t *testing.T) {
	t.Parallel()
	c := loadTemplate(t, "demo")
	require.Equal(t, "AWS::Serverless-2016-10-31", c.Transform)
	tables := c.tableResources(t)
	inputs := schema.CreateTableInputs(newTickets(t, nil, c.stack), true)
	require.Len(t, tables, len(inputs), "one resource per table the model declares")
	for i, in := range inputs {
		name := aws.ToString(in.TableName)
		res, ok := tables[name]
		require.True(t, ok, "the template has no table %s", name)
		p := c.props(t, res, "AWS::DynamoDB::Table")
		require.Equal(t, string(in.BillingMode), p["BillingMode"], name)
		var keys []any
		for _, k := range in.KeySchema {
			keys = append(keys, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
		}
		require.Equal(t, keys, p["KeySchema"], name)
		var defs []any
		for _, d := range in.AttributeDefinitions {
			defs = append(defs, map[string]any{"AttributeName": aws.ToString(d.AttributeName), "AttributeType": string(d.AttributeType)})
		}
		require.ElementsMatch(t, defs, p["AttributeDefinitions"], name)
		require.Nil(t, p["GlobalSecondaryIndexes"])
		if i == 0 {
			require.Equal(t, map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"}, p["StreamSpecification"], "the base table's stream carries both images")
			require.Nil(t, p["TimeToLiveSpecification"])
		} else {
			require.Equal(t, map[string]any{"AttributeName": "_ttl", "Enabled": true}, p["TimeToLiveSpecification"], "TTL on the index table's tombstones (the TableSpec's ttlattr= default)")
			require.Nil(t, p["StreamSpecification"])
		}
	}
}

// TestTemplateEventSourceMapping: the function and its event source
// mapping: the base table's stream from its oldest record, partial batch
// responses, bisection, bounded retries, an SQS on-failure destination.
func TestTemplateEventSourceMapping(t *testing.T) {
	t.Parallel()
	c := loadTemplate(t, "demo")
	fn := c.props(t, "UpkeepFunction", "AWS::Serverless::Function")
	require.Equal(t, "provided.al2023", fn["Runtime"])
	require.Equal(t, "bootstrap", fn["Handler"])
	require.Equal(t, "Arn(UpkeepRole)", fn["Role"])
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	require.Equal(t, c.stack+"-", env["TABLE_PREFIX"], "the prefix newHandler puts before the declared names")
	require.Greater(t, fn["Timeout"].(int), 2, "longer than the handler's StopBefore (2 s)")

	m := c.props(t, "UpkeepEventSourceMapping", "AWS::Lambda::EventSourceMapping")
	tables := c.tableResources(t)
	base := tables[newTickets(t, nil, c.stack).TableName()]
	require.Equal(t, "StreamArn("+base+")", m["EventSourceArn"], "the base table's stream")
	require.Equal(t, "ref(UpkeepFunction)", m["FunctionName"])
	require.Equal(t, "TRIM_HORIZON", m["StartingPosition"])
	require.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"])
	require.Equal(t, true, m["BisectBatchOnFunctionError"])
	require.Contains(t, m, "BatchSize")
	require.Contains(t, m, "MaximumBatchingWindowInSeconds")
	require.Positive(t, m["BatchSize"].(int))
	retries := m["MaximumRetryAttempts"].(int)
	require.True(t, retries >= 0 && retries <= 10000, "finite retries (-1 retries a poison record until it expires)")
	dest := m["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"].(string)
	require.Equal(t, "Arn(UpkeepDeadLetterQueue)", dest)
	c.props(t, "UpkeepDeadLetterQueue", "AWS::SQS::Queue")
	require.Equal(t, "ref(ApplicationPolicy)", c.resolve(t, c.Outputs["ApplicationPolicyArn"]["Value"]))
}

// statement is one resolved IAM policy statement.
type statement struct {
	Effect    string
	Actions   []string
	Resources []string
}

func asStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = e.(string)
		}
		return out
	}
	return nil
}

func statements(t *testing.T, doc any) []statement {
	t.Helper()
	var out []statement
	for _, s := range doc.(map[string]any)["Statement"].([]any) {
		m := s.(map[string]any)
		out = append(out, statement{Effect: m["Effect"].(string), Actions: asStrings(m["Action"]), Resources: asStrings(m["Resource"])})
	}
	return out
}

// allows reports whether a statement allows action on resource; a
// resource pattern may end in "*".
func allows(ss []statement, action, resource string) bool {
	for _, s := range ss {
		if s.Effect != "Allow" || !slices.Contains(s.Actions, action) {
			continue
		}
		for _, r := range s.Resources {
			if r == resource || (strings.HasSuffix(r, "*") && strings.HasPrefix(resource, strings.TrimSuffix(r, "*"))) {
				return true
			}
		}
	}
	return false
}

// granted lists "action on resource" for every grant of the statements.
func granted(ss []statement, prefix string) []string {
	var out []string
	for _, s := range ss {
		for _, a := range s.Actions {
			if strings.HasPrefix(a, prefix) {
				for _, r := range s.Resources {
					out = append(out, a+" on "+r)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recorder records, as "dynamodb:Action on Arn(Resource)", the IAM action
// and table of every request sent through it (a transaction's by its items,
// as IAM checks them: "Permissions for Put, Update, Delete, and Get actions
// are governed by the permissions used for the underlying PutItem,
// UpdateItem, DeleteItem, and GetItem operations. For the ConditionCheck
// action, you can use the dynamodb:ConditionCheckItem permission" — Amazon
// DynamoDB Developer Guide, "Using IAM with DynamoDB transactions").
type recorder struct {
	c      *dynamodb.Client
	tables map[string]string // physical name → resource
	mu     sync.Mutex
	seen   map[string]bool
}

func (r *recorder) note(action string, table *string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.tables[aws.ToString(table)]
	if !ok {
		res = "unknown table " + aws.ToString(table)
	}
	r.seen[fmt.Sprintf("dynamodb:%s on Arn(%s)", action, res)] = true
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.seen))
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note("GetItem", in.TableName)
	return r.c.GetItem(ctx, in, o...)
}

func (r *recorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table := range in.RequestItems {
		r.note("BatchGetItem", aws.String(table))
	}
	return r.c.BatchGetItem(ctx, in, o...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.note("Query", in.TableName)
	return r.c.Query(ctx, in, o...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note("PutItem", in.TableName)
	return r.c.PutItem(ctx, in, o...)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note("UpdateItem", in.TableName)
	return r.c.UpdateItem(ctx, in, o...)
}

func (r *recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.note("DeleteItem", in.TableName)
	return r.c.DeleteItem(ctx, in, o...)
}

func (r *recorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.note("PutItem", it.Put.TableName)
		case it.Update != nil:
			r.note("UpdateItem", it.Update.TableName)
		case it.Delete != nil:
			r.note("DeleteItem", it.Delete.TableName)
		case it.ConditionCheck != nil:
			r.note("ConditionCheckItem", it.ConditionCheck.TableName)
		}
	}
	return r.c.TransactWriteItems(ctx, in, o...)
}

func (r *recorder) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.note("CreateTable", in.TableName)
	return r.c.CreateTable(ctx, in, o...)
}

func (r *recorder) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	r.note("DescribeTable", in.TableName)
	return r.c.DescribeTable(ctx, in, o...)
}

func (r *recorder) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.note("UpdateTimeToLive", in.TableName)
	return r.c.UpdateTimeToLive(ctx, in, o...)
}

func (r *recorder) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	r.note("DescribeTimeToLive", in.TableName)
	return r.c.DescribeTimeToLive(ctx, in, o...)
}

// lambdaAV converts an item's attribute value into a Lambda event's.
func lambdaAV(t *testing.T, v types.AttributeValue) events.DynamoDBAttributeValue {
	t.Helper()
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	}
	t.Fatalf("unexpected attribute value %T", v)
	return events.DynamoDBAttributeValue{}
}

// change is a base-table change, as the stream records it.
type change struct{ old, new *Ticket }

// lambdaEvent builds the Lambda event of changes (sequence numbers from
// first on), as the event source mapping delivers them.
func lambdaEvent(t *testing.T, tb *ddbindex.Table[Ticket], first int, changes []change) events.DynamoDBEvent {
	t.Helper()
	image := func(it *Ticket) map[string]events.DynamoDBAttributeValue {
		if it == nil {
			return nil
		}
		item, err := tb.Marshal(*it)
		require.NoError(t, err)
		out := map[string]events.DynamoDBAttributeValue{}
		for k, v := range item {
			out[k] = lambdaAV(t, v)
		}
		return out
	}
	var ev events.DynamoDBEvent
	for i, c := range changes {
		r := events.DynamoDBEventRecord{EventSource: "aws:dynamodb", EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/" + tb.TableName() + "/stream/x",
			Change: events.DynamoDBStreamRecord{OldImage: image(c.old), NewImage: image(c.new), SequenceNumber: fmt.Sprint(first + i), StreamViewType: "NEW_AND_OLD_IMAGES"}}
		switch {
		case c.old == nil:
			r.EventName = "INSERT"
		case c.new == nil:
			r.EventName = "REMOVE"
		default:
			r.EventName = "MODIFY"
		}
		img := r.Change.NewImage
		if img == nil {
			img = r.Change.OldImage
		}
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]}
		ev.Records = append(ev.Records, r)
	}
	return ev
}

// TestTemplateLeastPrivilege: against the test server, an application
// reads and writes through ddbindex (checks the schema, puts, gets, moves,
// updates, deletes, queries the index table), and the function's handler
// applies the resulting stream records. Every request each one sends is
// allowed by its policy in the template; the function's policy grants
// DynamoDB nothing it did not use, and neither does the application's where
// the server has transactions (the moves use them). Lambda's own reads of
// the stream are allowed to the function's role. No policy grants a
// wildcard action, or any action on every resource.
func TestTemplateLeastPrivilege(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := ddbtest.Client(t) // skips without a server
	c := loadTemplate(t, ddbtest.Name(t, ""))
	role := c.props(t, "UpkeepRole", "AWS::IAM::Role")
	var fnPolicy []statement
	for _, p := range role["Policies"].([]any) {
		fnPolicy = append(fnPolicy, statements(t, p.(map[string]any)["PolicyDocument"])...)
	}
	appPolicy := statements(t, c.props(t, "ApplicationPolicy", "AWS::IAM::ManagedPolicy")["PolicyDocument"])
	for _, s := range append(slices.Clone(fnPolicy), appPolicy...) {
		for _, a := range s.Actions {
			require.NotContains(t, a, "*", "a wildcard action")
		}
		for _, r := range s.Resources {
			require.NotEqual(t, "*", r, "every resource")
		}
	}
	tables := c.tableResources(t)
	tb := newTickets(t, nil, c.stack)
	base := tables[tb.TableName()]
	// Lambda reads the stream with the function's role (AWS's example
	// policy grants these four actions on "<table ARN>/stream/*").
	for _, a := range []string{"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"} {
		require.True(t, allows(fnPolicy, "dynamodb:"+a, "Arn("+base+")/stream/2026-12-02T00:00:00.000"), a)
	}
	require.True(t, allows(fnPolicy, "sqs:SendMessage", "Arn(UpkeepDeadLetterQueue)"), "the on-failure destination")

	// The tables, as the template makes them (the infrastructure's calls,
	// not recorded).
	for _, in := range schema.CreateTableInputs(tb, false) {
		ddbtest.DeleteOnCleanup(t, client, aws.ToString(in.TableName))
	}
	require.NoError(t, schema.CreateTables(ctx, tb, client, func(o *schema.CreateOptions) {
		o.NoStream, o.NoTTL = !ddbtest.Has(ddbtest.Streams), !ddbtest.Has(ddbtest.TTL)
	}))

	// The application.
	app := &recorder{c: client, tables: tables, seen: map[string]bool{}}
	tickets := newTickets(t, app, c.stack)
	err := schema.Check(ctx, tickets, app)
	if ddbtest.Has(ddbtest.Streams) && ddbtest.Has(ddbtest.TTL) {
		require.NoError(t, err, "the template's tables, as the model declares them")
	}
	var changes []change
	put := func(old *Ticket, it Ticket) Ticket {
		t.Helper()
		it, err := tickets.Put(ctx, it)
		require.NoError(t, err)
		changes = append(changes, change{old: old, new: &it})
		return it
	}
	opened := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	a := put(nil, Ticket{Team: "T1", Status: "open", ID: "1", Opened: opened, Title: "printer"})
	b := put(nil, Ticket{Team: "T1", Status: "open", ID: "2", Opened: opened.Add(time.Hour), Title: "vpn"})
	_, err = tickets.Get(ctx, a)
	require.NoError(t, err)
	got, err := tickets.BatchGet(ctx, []Ticket{a, b})
	require.NoError(t, err)
	require.Len(t, got, 2)
	a2 := a
	a2.Title = "printer, again"
	a2 = put(&a, a2)
	if ddbtest.Has(ddbtest.Transactions) {
		from, to := b, b
		to.Status = "closed"
		to, err = tickets.Move(ctx, from, to)
		require.NoError(t, err)
		changes = append(changes, change{old: &from}, change{new: &to}) // a REMOVE and an INSERT
		b = to
	}
	before := b
	require.NoError(t, tickets.Update(ctx, b, ddbindex.Set("title", "vpn down")))
	b, err = tickets.Get(ctx, b)
	require.NoError(t, err)
	changes = append(changes, change{old: &before, new: &b})
	require.NoError(t, tickets.Delete(ctx, a2))
	changes = append(changes, change{old: &a2})
	var inBase []Ticket
	for it, err := range tickets.Query("", "T1").ConsistentRead().All(ctx) {
		require.NoError(t, err)
		inBase = append(inBase, it)
	}
	require.Equal(t, []Ticket{b}, inBase)

	// The function applies the stream's records.
	fn := &recorder{c: client, tables: tables, seen: map[string]bool{}}
	var logs bytes.Buffer
	h, err := newHandler(fn, c.stack+"-", slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	resp, err := h.Handle(ctx, lambdaEvent(t, tickets, 1000, changes))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	var line map[string]any
	require.NoError(t, json.Unmarshal(logs.Bytes(), &line))
	require.Equal(t, "batch applied", line["msg"])
	require.Equal(t, float64(len(changes)), line["applied"])

	var listed []Ticket
	for it, err := range tickets.Query("by_status", "T1").ConsistentRead().All(ctx) {
		require.NoError(t, err)
		listed = append(listed, it)
	}
	require.Equal(t, []Ticket{b}, listed, "the index table, kept by the handler")

	for who, r := range map[string]struct {
		rec    *recorder
		policy []statement
	}{"function": {fn, fnPolicy}, "application": {app, appPolicy}} {
		calls := r.rec.calls()
		t.Logf("the %s's requests: %v", who, calls)
		for _, call := range calls {
			action, resource, _ := strings.Cut(call, " on ")
			require.True(t, allows(r.policy, action, resource), "the %s's policy does not allow %s", who, call)
		}
		var tableGrants []string
		for _, g := range granted(r.policy, "dynamodb:") {
			if !strings.Contains(g, "/stream/") {
				tableGrants = append(tableGrants, g)
			}
		}
		if who == "function" || ddbtest.Has(ddbtest.Transactions) {
			require.Equal(t, tableGrants, calls, "the %s's policy grants exactly what it uses", who)
		}
	}
}

// TestTemplateExistingTable: template-existing.yaml deploys the upkeep for
// tables that exist: it creates no table, reads the stream its StreamArn
// parameter names, writes only the index tables of IndexTableArns, and
// configures the function and its event source mapping as template.yaml
// does.
func TestTemplateExistingTable(t *testing.T) {
	t.Parallel()
	c := loadTemplateFile(t, "template-existing.yaml", "prod")
	require.Empty(t, c.tableResources(t), "no table")
	for _, p := range []string{"StreamArn", "IndexTableArns", "TablePrefix"} {
		require.Contains(t, c.Parameters, p)
	}
	require.Equal(t, "CommaDelimitedList", c.Parameters["IndexTableArns"]["Type"])

	fn := c.props(t, "UpkeepFunction", "AWS::Serverless::Function")
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	require.Equal(t, "ref(TablePrefix)", env["TABLE_PREFIX"])
	m := c.props(t, "UpkeepEventSourceMapping", "AWS::Lambda::EventSourceMapping")
	require.Equal(t, "ref(StreamArn)", m["EventSourceArn"])

	// The function and the mapping are configured as template.yaml's, but
	// for the names of what they read and write.
	full := loadTemplate(t, "prod")
	for _, r := range []struct{ name, typ string }{
		{"UpkeepFunction", "AWS::Serverless::Function"},
		{"UpkeepEventSourceMapping", "AWS::Lambda::EventSourceMapping"},
		{"UpkeepDeadLetterQueue", "AWS::SQS::Queue"},
		{"UpkeepLogGroup", "AWS::Logs::LogGroup"},
	} {
		got, want := c.props(t, r.name, r.typ), full.props(t, r.name, r.typ)
		delete(got, "Environment")
		delete(want, "Environment")
		delete(got, "EventSourceArn")
		delete(want, "EventSourceArn")
		require.Equal(t, want, got, r.name)
	}

	role := c.props(t, "UpkeepRole", "AWS::IAM::Role")
	var got []statement
	for _, pol := range role["Policies"].([]any) {
		got = append(got, statements(t, pol.(map[string]any)["PolicyDocument"])...)
	}
	require.ElementsMatch(t, []statement{
		{Effect: "Allow", Actions: []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}, Resources: []string{"ref(StreamArn)"}},
		{Effect: "Allow", Actions: []string{"dynamodb:PutItem"}, Resources: []string{"ref(IndexTableArns)"}},
		{Effect: "Allow", Actions: []string{"sqs:SendMessage"}, Resources: []string{"Arn(UpkeepDeadLetterQueue)"}},
		{Effect: "Allow", Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"Arn(UpkeepLogGroup)"}},
	}, got)
}

// TestTemplatesCodeUri: both templates deploy the package make lambda-zip
// builds, at the path the Makefile names, with the runtime and
// architecture it builds for.
func TestTemplatesCodeUri(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	zipPath := regexp.MustCompile(`(?m)^LAMBDA_ZIP := examples/lambda/(\S+)$`).FindSubmatch(mk)
	require.NotNil(t, zipPath, "the Makefile names LAMBDA_ZIP under examples/lambda")
	require.Contains(t, string(mk), "GOOS=linux GOARCH=arm64", "make lambda-zip builds for arm64 Linux")
	for _, file := range []string{"template.yaml", "template-existing.yaml"} {
		c := loadTemplateFile(t, file, "s")
		fn := c.props(t, "UpkeepFunction", "AWS::Serverless::Function")
		require.Equal(t, string(zipPath[1]), fn["CodeUri"], file)
		require.Equal(t, []any{"arm64"}, fn["Architectures"], file)
		require.Equal(t, "provided.al2023", fn["Runtime"], file)
		require.Equal(t, "bootstrap", fn["Handler"], file)
	}
}

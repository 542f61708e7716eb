package migrate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/schema"
)

func TestMain(m *testing.M) {
	flag.Parse() // so that -run and -skip are read before the examples are added to -skip
	if ddbtest.Endpoint() == "" {
		fmt.Fprintln(os.Stderr, "migrate: DDBINDEX_ENDPOINT is not set: integration tests skip and the examples that read a server do not run (run `make test`)")
		// An example cannot skip itself.
		pattern := "^Example(Router|Shadows|Compare)"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			pattern = prev + "|" + pattern
		}
		if err := flag.Set("test.skip", pattern); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// The steps of a GSI -> index table migration, one declaration each, on the
// same physical tables: the GSI alone; the GSI serving and the table kept;
// the table serving and the GSI kept; the table alone.
type kpStep0 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep1 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep2 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

type kpStep3 struct {
	_       ddbindex.TableSpec `ddbindex:"kp-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
}

// kpFleet is the model of each step on one set of physical tables (the
// base table with its GSI, the index table, and a control table), all
// created on the test server.
type kpFleet struct {
	s0      *ddbindex.Table[kpStep0]
	s1      *ddbindex.Table[kpStep1]
	s2      *ddbindex.Table[kpStep2]
	s3      *ddbindex.Table[kpStep3]
	c       *dynamodb.Client
	control string
	// opts names the fleet's tables; more options follow it.
	opts func(*ddbindex.Options)
}

func newKPFleet(t *testing.T) kpFleet {
	t.Helper()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	f := kpFleet{c: c, control: prefix + "-control"}
	f.opts = func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
	}
	var err error
	f.s1, err = ddbindex.New[kpStep1](c, f.opts)
	require.NoError(t, err)
	for _, in := range schema.CreateTableInputs(f.s1, false) {
		ddbtest.CreateTable(t, c, in)
	}
	ddbtest.CreateTable(t, c, schema.ControlTableInput(f.control))
	f.s0, err = ddbindex.New[kpStep0](c, f.opts)
	require.NoError(t, err)
	f.s2, err = ddbindex.New[kpStep2](c, f.opts)
	require.NoError(t, err)
	f.s3, err = ddbindex.New[kpStep3](c, f.opts)
	require.NoError(t, err)
	return f
}

// table opens step 1 with the fleet's tables and the options given.
func (f kpFleet) table(t *testing.T, optFns ...func(*ddbindex.Options)) *ddbindex.Table[kpStep1] {
	t.Helper()
	tb, err := ddbindex.New[kpStep1](f.c, append([]func(*ddbindex.Options){f.opts}, optFns...)...)
	require.NoError(t, err)
	return tb
}

// seed writes items to the base table (with the GSI's attributes) and
// their entries to the index table, without transactions or a stream.
func (f kpFleet) seed(t *testing.T, items ...kpStep1) {
	t.Helper()
	for _, it := range items {
		img, err := f.s1.Marshal(it)
		require.NoError(t, err)
		_, err = f.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.s1.TableName()), Item: img})
		require.NoError(t, err)
		f.putEntry(t, it)
	}
}

// entry returns it's index-table write: its entry, or with old its
// tombstone.
func (f kpFleet) entry(t *testing.T, it kpStep1, old bool) ddbindex.IndexWrite {
	t.Helper()
	img, err := f.s1.Marshal(it)
	require.NoError(t, err)
	c := ddbindex.Change{New: img, Version: "1"}
	if old {
		c = ddbindex.Change{Old: img, Version: "2"}
	}
	writes, err := f.s1.IndexWrites(c)
	require.NoError(t, err)
	require.Len(t, writes, 1)
	return writes[0]
}

// putEntry writes it's entry to the index table.
func (f kpFleet) putEntry(t *testing.T, it kpStep1) {
	t.Helper()
	w := f.entry(t, it, false)
	_, err := f.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.Table), Item: w.Item})
	require.NoError(t, err)
}

// dropEntry makes it's entry in the index table a tombstone, which reads
// skip: the table lacks the item.
func (f kpFleet) dropEntry(t *testing.T, it kpStep1) {
	t.Helper()
	w := f.entry(t, it, true)
	require.True(t, w.Tombstone)
	_, err := f.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.Table), Item: w.Item})
	require.NoError(t, err)
}

// putControl writes an item to the control table.
func (f kpFleet) putControl(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := f.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.control), Item: item})
	require.NoError(t, err)
}

func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func avN(n string) types.AttributeValue { return &types.AttributeValueMemberN{Value: n} }

// formOf returns the form that serves a read of team's partition of
// by_status on tb.
func formOf[T any](t *testing.T, tb *ddbindex.Table[T], team string) ddbindex.Kind {
	t.Helper()
	e, err := tb.Query("by_status", team).Explain()
	require.NoError(t, err)
	return e.Request.Kind
}

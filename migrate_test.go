package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// mgPostGSI and mgPostTable declare the same feed index, one token apart:
// the GSI a service reads today and the index table it migrates to.
type mgPostGSI struct {
	_    TableSpec `ddbindex:"mg-posts"`
	_    IndexSpec `ddbindex:"newest,type=gsi,pk=GPK,sk=GSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed *string   `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string    `dynamodbav:"text"`
}

type mgPostTable struct {
	_    TableSpec `ddbindex:"mg-posts"`
	_    IndexSpec `ddbindex:"newest,type=table,pk=GPK,sk=GSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed *string   `dynamodbav:"feed,omitempty" ddbindex:"newest.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"newest.sk,width=13"`
	Text string    `dynamodbav:"text"`
}

// mgComparison is what mgCompare found.
type mgComparison struct {
	Items       int      // items read through the first declaration
	Differences []string // empty when both agree on items, order and page boundaries
}

func (c mgComparison) Equal() bool { return len(c.Differences) == 0 }

// mgCompare reads q to its end, page by page, through its own declaration
// and through other, the same model declaring the index as the other type
// (a GSI and the index table that replaces it), and lists every difference
// in items, order, page boundaries and tombstone exclusion; conv converts
// other's items. (Package migrate's Compare does the same through the two
// forms of an index that keeps both.)
func mgCompare[A, B any](t *testing.T, q Query[A], other *Table[B], conv func(B) A) mgComparison {
	t.Helper()
	ctx := context.Background()
	qb := Query[B]{t: other, index: q.index, partition: q.partition, cond: q.cond, desc: q.desc, limit: q.limit, cursor: q.cursor,
		filter: q.filter, project: q.project, consistent: q.consistent, deleted: q.deleted}
	var a [][]A
	for cursor := q.cursor; ; {
		p, err := q.After(cursor).Page(ctx)
		require.NoError(t, err)
		a = append(a, p.Items)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	var b [][]A
	for cursor := qb.cursor; ; {
		p, err := qb.After(cursor).Page(ctx)
		require.NoError(t, err)
		items := make([]A, len(p.Items))
		for i, it := range p.Items {
			items[i] = conv(it)
		}
		b = append(b, items)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	da, _ := q.t.index(q.index)
	db, _ := other.index(q.index)
	var c mgComparison
	for i := range max(len(a), len(b)) {
		var pa, pb []A
		if i < len(a) {
			pa = a[i]
			c.Items += len(pa)
		}
		if i < len(b) {
			pb = b[i]
		}
		if len(pa) != len(pb) {
			c.Differences = append(c.Differences, fmt.Sprintf("page %d: %d items as a %s, %d as a %s", i+1, len(pa), da.kind, len(pb), db.kind))
		}
		for j := range min(len(pa), len(pb)) {
			if !reflect.DeepEqual(pa[j], pb[j]) {
				c.Differences = append(c.Differences, fmt.Sprintf("page %d item %d: %s as a %s, %s as a %s", i+1, j+1, q.t.mustBaseKey(pa[j]), da.kind, q.t.mustBaseKey(pb[j]), db.kind))
			}
		}
	}
	return c
}

// (A backfill's index table read against the GSI, and Compare's reports
// and refusals, are tested in package migrate.)

type typesAV = types.AttributeValue

func avS(s string) typesAV { return &types.AttributeValueMemberS{Value: s} }

package ddbindex

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// rtPanics is a Router and a ReadObserver that must never be asked.
type rtPanics struct{}

func (rtPanics) Route(string, string, string, [2]Kind) (Kind, bool) {
	panic("Router asked")
}

func (rtPanics) ObserveRead(context.Context, ReadEvent) { panic("ReadObserver called") }

// A read of an index with one form never asks the Router nor calls the
// ReadObserver, and allocates no more with them than without; the same
// read of an index that keeps two forms asks both. (Not parallel:
// AllocsPerRun counts every goroutine's allocations.)
func TestOneFormReadsPayNothing(t *testing.T) {
	ctx := context.Background()
	var items []map[string]types.AttributeValue // as stored, with the GSI's key attributes
	client := erQueryFake{t: t, query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		return &dynamodb.QueryOutput{Count: 2, ScannedCount: 2, Items: items}, nil
	}}
	plain, err := New[kpStep0](client)
	require.NoError(t, err)
	for _, it := range []kpStep0{{ID: "a", Team: "T", Status: "open", Created: 1}, {ID: "b", Team: "T", Status: "open", Created: 2}} {
		item, err := plain.Marshal(it)
		require.NoError(t, err)
		items = append(items, item)
	}
	seamed, err := New[kpStep0](client, func(o *Options) { o.Router, o.Observer = rtPanics{}, rtPanics{} })
	require.NoError(t, err)
	for _, tb := range []*Table[kpStep0]{plain, seamed} {
		p, err := tb.Query("by_status", "T").Page(ctx)
		require.NoError(t, err)
		require.Len(t, p.Items, 2)
		n := 0
		for _, err := range tb.Query("by_status", "T").All(ctx) {
			require.NoError(t, err)
			n++
		}
		require.Equal(t, 2, n)
		ok, err := tb.Query("by_status", "T").Exists(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = tb.Query("by_status", "T").Explain()
		require.NoError(t, err)
		_, err = tb.Query("", "a").Page(ctx)
		require.NoError(t, err, "the base table")
	}
	if !raceEnabled {
		read := func(tb *Table[kpStep0]) func() {
			return func() {
				if _, err := tb.Query("by_status", "T").Limit(5).Page(ctx); err != nil {
					t.Error(err)
				}
			}
		}
		require.Equal(t, testing.AllocsPerRun(200, read(plain)), testing.AllocsPerRun(200, read(seamed)))
	}

	two, err := New[kpStep1](client, func(o *Options) { o.Router = rtPanics{} })
	require.NoError(t, err)
	require.PanicsWithValue(t, "Router asked", func() { _, _ = two.Query("by_status", "T").Page(ctx) })
	two, err = New[kpStep1](client, func(o *Options) { o.Observer = rtPanics{} })
	require.NoError(t, err)
	require.PanicsWithValue(t, "ReadObserver called", func() { _, _ = two.Query("by_status", "T").Page(ctx) })
}

// rtShardGSI and rtShardTable declare one sharded index that keeps two
// forms, each form serving in turn.
type rtShardGSI struct {
	_    TableSpec `ddbindex:"rt-things"`
	_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=2"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"feed.sk"`
}

type rtShardTable struct {
	_    TableSpec `ddbindex:"rt-things"`
	_    IndexSpec `ddbindex:"feed,type=table,keep=gsi,shards=2"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"feed.pk"`
	At   int64     `dynamodbav:"at" ddbindex:"feed.sk"`
}

// The pages of a sharded index that keeps two forms are observed too: a
// Page, and an All a page's worth of items at a time, each comparing the
// merged items from where it starts.
func TestReadEventSharded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	obs := &kpObserver{}
	gsi, c := newTestTable[rtShardGSI](t, func(o *Options) { o.Observer = obs })
	table, err := New[rtShardTable](c, func(o *Options) { o.TableName = gsi.opts.TableName })
	require.NoError(t, err)
	const n, lost = 250, 150 // the index table lacks the entry of item 150
	var items []rtShardGSI
	for i := range n {
		it := rtShardGSI{ID: fmt.Sprintf("i%03d", i), Feed: "f", At: int64(i)}
		items = append(items, it)
		putBase(t, gsi, it)
		if i != lost {
			putEntry(t, table, "feed", rtShardTable(it), false)
		}
	}

	p, err := gsi.Query("feed", "f").Limit(10).Page(ctx)
	require.NoError(t, err)
	require.Len(t, p.Items, 10)
	evs := obs.take()
	require.Len(t, evs, 1)
	m, err := evs[0].compare(ctx, false)
	require.NoError(t, err)
	require.Nil(t, m, "the first ten agree")

	var got []rtShardGSI
	for it, err := range gsi.Query("feed", "f").All(ctx) {
		require.NoError(t, err)
		got = append(got, it)
	}
	require.Equal(t, items, got)
	evs = obs.take()
	require.Len(t, evs, 3, "pages of 100, 100 and 50 items")
	for i, ev := range evs {
		assert.Equal(t, GSI, ev.Form)
		assert.Equal(t, IndexTable, ev.Other)
		for _, recheck := range []bool{false, true} {
			m, err := ev.compare(ctx, recheck)
			require.NoError(t, err)
			if i != 1 {
				assert.Nil(t, m, "page %d, recheck %v", i, recheck)
				continue
			}
			require.NotNil(t, m, "page %d holds item %d", i, lost)
			assert.Equal(t, bridge.MismatchMissing, m.Kind)
			assert.Equal(t, []string{`{id="i150"}`}, m.Keys)
		}
	}
}

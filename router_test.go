package ddbindex

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
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

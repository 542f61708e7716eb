package ddbindex

import (
	"context"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestNewRefusesBadOptions: New refuses options it cannot honour, at
// start-up: a negative retention (tombstones that expire before they are
// written) and a negative cursor cap; and attribute names reserved by the
// options that collide with a model attribute.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(*Options)
		want string
	}{
		{"negative retention", func(o *Options) { o.Retention = -time.Hour }, "Options.Retention is -1h0m0s"},
		{"negative cursor cap", func(o *Options) { o.MaxCursorBytes = -1 }, "Options.MaxCursorBytes is -1"},
		{"deleted attribute is a model attribute", func(o *Options) { o.DeletedAttr = "title" }, `attribute "title" is reserved`},
		{"TTL attribute is a model attribute", func(o *Options) { o.TTLAttr = "ver" }, `attribute "ver" is reserved`},
		{"version attribute is a model attribute", func(o *Options) { o.VersionAttr = "team" }, `attribute "team" is reserved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := New[wrTicket](nil, tc.fn)
			require.Nil(t, tb)
			require.ErrorIs(t, err, ErrDeclaration)
			require.ErrorContains(t, err, tc.want)
		})
	}
	for _, fn := range []func(*Options){
		func(o *Options) { o.Retention = 0; o.MaxCursorBytes = 0 }, // the defaults
		func(o *Options) { o.Retention = time.Minute; o.MaxCursorBytes = 100 },
	} {
		_, err := New[wrTicket](nil, fn)
		require.NoError(t, err)
	}
}

// otCounter counts the SDK operations of the calls whose options it is in,
// by operation name, in the Initialize step (once per operation, whatever
// its retries).
type otCounter struct {
	id string // the middleware's ID, unique within a stack
	mu sync.Mutex
	n  map[string]int
}

func (c *otCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc(c.id,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[string]int{}
				}
				c.n[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// take returns the counts so far and starts again from zero.
func (c *otCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

// TestPerCallClientOptions: every method that sends requests applies the
// caller's per-call SDK options to each request it sends (package schema's
// CreateTables, Check and Prepare have the same test, in
// schema/options_test.go): a client counts
// every operation it sends (all), the options of one call count the
// operations they reach (mine), and after each call the two agree.
func TestPerCallClientOptions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	all := &otCounter{id: "otAll"}
	created, plain := newTestTable[wrTicket](t)
	client := dynamodb.New(plain.Options(), all.option)
	tb, err := New[wrTicket](client, curxSameOpts(created))
	require.NoError(t, err)
	all.take()

	step := func(name string, want []string, call func(opt func(*dynamodb.Options))) {
		t.Helper()
		mine := &otCounter{id: "otMine"}
		call(mine.option)
		sent, reached := all.take(), mine.take()
		require.Equal(t, sent, reached, "%s: every request it sent had the per-call options", name)
		for _, op := range want {
			require.Positive(t, reached[op], "%s sends %s", name, op)
		}
	}
	var it wrTicket
	step("Put", []string{"PutItem"}, func(opt func(*dynamodb.Options)) {
		it, err = tb.Put(ctx, gtTicket(1), opt)
		require.NoError(t, err)
	})
	step("Put (conflict)", []string{"PutItem"}, func(opt func(*dynamodb.Options)) {
		_, err := tb.Put(ctx, gtTicket(1), opt)
		require.ErrorIs(t, err, ErrConflict)
	})
	step("Get", []string{"GetItem"}, func(opt func(*dynamodb.Options)) {
		_, err := tb.Get(ctx, it, opt)
		require.NoError(t, err)
	})
	step("BatchGet", []string{"BatchGetItem"}, func(opt func(*dynamodb.Options)) {
		got, err := tb.BatchGet(ctx, []wrTicket{it, gtTicket(2)}, opt)
		require.NoError(t, err)
		require.Len(t, got, 1)
	})
	step("Update", []string{"UpdateItem"}, func(opt func(*dynamodb.Options)) {
		require.NoError(t, tb.Update(ctx, it, Set("title", "x"), opt))
	})
	for _, index := range []string{"", "by_status"} {
		q := tb.Query(index, "T1")
		step("Page "+index, []string{"Query"}, func(opt func(*dynamodb.Options)) {
			_, err := q.Page(ctx, opt)
			require.NoError(t, err)
		})
		step("All "+index, []string{"Query"}, func(opt func(*dynamodb.Options)) {
			for _, err := range q.All(ctx, opt) {
				require.NoError(t, err)
			}
		})
		step("Exists "+index, []string{"Query"}, func(opt func(*dynamodb.Options)) {
			_, err := q.Exists(ctx, opt)
			require.NoError(t, err)
		})
	}
	step("Apply", []string{"PutItem"}, func(opt func(*dynamodb.Options)) {
		img, err := tb.Marshal(it)
		require.NoError(t, err)
		_, err = tb.Apply(ctx, []Change{{New: img, Version: "1"}}, opt)
		require.NoError(t, err)
	})
	step("Delete", []string{"UpdateItem"}, func(opt func(*dynamodb.Options)) {
		cur, err := tb.Get(ctx, it)
		require.NoError(t, err)
		all.take()
		require.NoError(t, tb.Delete(ctx, cur, opt))
	})

	if ddbtest.Has(ddbtest.Transactions) {
		wt, err := New[wrTicket](client, curxSameOpts(created), wrWriteThrough)
		require.NoError(t, err)
		var moved wrTicket
		step("Move", []string{"TransactWriteItems"}, func(opt func(*dynamodb.Options)) {
			cur, err := wt.Put(ctx, gtTicket(5))
			require.NoError(t, err)
			all.take()
			to := cur
			to.Status = "closed"
			moved, err = wt.Move(ctx, cur, to, opt)
			require.NoError(t, err)
		})
		step("Put (write-through)", []string{"GetItem", "TransactWriteItems"}, func(opt func(*dynamodb.Options)) {
			_, err := wt.Put(ctx, moved, opt)
			require.NoError(t, err)
		})
	}
}

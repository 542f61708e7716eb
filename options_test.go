package ddbindex

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestNewRefusesBadOptions: New refuses options it cannot honour, at
// start-up: a negative cursor cap, a negative fan-out, an empty signing key.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(*Options)
		want string
	}{
		{"negative cursor cap", func(o *Options) { o.MaxCursorBytes = -1 }, "Options.MaxCursorBytes is -1"},
		{"negative fan-out", func(o *Options) { o.ShardFanout = -2 }, "Options.ShardFanout is -2"},
		{"empty signing key", func(o *Options) { o.CursorKeys = [][]byte{[]byte("k"), nil} }, "Options.CursorKeys[1] is empty"},
		{"negative retries", func(o *Options) { o.Retry.MaxAttempts = -1 }, "Options.Retry is {MaxAttempts: -1"},
		{"negative backoff", func(o *Options) { o.Retry.MaxDelay = -time.Second }, "none can be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := New[wrTicket](nil, tc.fn)
			require.Nil(t, tb)
			require.ErrorIs(t, err, ErrDeclaration)
			require.ErrorContains(t, err, tc.want)
		})
	}
	for _, fn := range []func(*Options){
		func(o *Options) { o.MaxCursorBytes = 0 }, // the defaults
		func(o *Options) { o.MaxCursorBytes = 100 },
	} {
		_, err := New[wrTicket](nil, fn)
		require.NoError(t, err)
	}
}

// TestTableSpecWrittenAttributes: the attributes the library writes beside
// the model's own, and the tombstones' retention, come from the TableSpec
// tag, with their defaults; a name the model uses, a name given twice, and
// a retention that is no positive duration are declaration errors.
func TestTableSpecWrittenAttributes(t *testing.T) {
	t.Parallel()
	type plain struct {
		_  TableSpec `ddbindex:"ts-plain"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	type named struct {
		_  TableSpec `ddbindex:"ts-named,deletedattr=gone,ttlattr=expires,versionattr=v,tokenattr=tok,retention=36h"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	p, err := New[plain](nil)
	require.NoError(t, err)
	require.Equal(t, []any{"_deleted", "_ttl", "_ver", "_wtok", 7 * 24 * time.Hour},
		[]any{p.opts.DeletedAttr, p.opts.TTLAttr, p.opts.VersionAttr, p.opts.WriteTokenAttr, p.opts.Retention})
	n, err := New[named](nil)
	require.NoError(t, err)
	require.Equal(t, []any{"gone", "expires", "v", "tok", 36 * time.Hour},
		[]any{n.opts.DeletedAttr, n.opts.TTLAttr, n.opts.VersionAttr, n.opts.WriteTokenAttr, n.opts.Retention})

	type usedByModel struct {
		_    TableSpec `ddbindex:"ts-used,ttlattr=note"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Note string    `dynamodbav:"note"`
	}
	type twice struct {
		_  TableSpec `ddbindex:"ts-twice,deletedattr=x,tokenattr=x"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	type defaultTaken struct {
		_   TableSpec `ddbindex:"ts-taken"`
		ID  string    `dynamodbav:"id" ddbindex:"pk"`
		Ver int64     `dynamodbav:"_ver"`
	}
	type badRetention struct {
		_  TableSpec `ddbindex:"ts-ret,retention=-1h"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	type shortRetention struct {
		_  TableSpec `ddbindex:"ts-short,retention=23h59m"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	type dayRetention struct {
		_  TableSpec `ddbindex:"ts-day,retention=24h"`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	day, err := New[dayRetention](nil)
	require.NoError(t, err, "retention=24h, the time a stream keeps its records, is accepted")
	require.Equal(t, 24*time.Hour, day.opts.Retention)
	type noValue struct {
		_  TableSpec `ddbindex:"ts-novalue,deletedattr="`
		ID string    `dynamodbav:"id" ddbindex:"pk"`
	}
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"used by the model": {err: second(New[usedByModel](nil)), want: `attribute "note" is reserved`},
		"named twice":       {err: second(New[twice](nil)), want: `names attribute "x" for two purposes`},
		"default taken":     {err: second(New[defaultTaken](nil)), want: `attribute "_ver" is reserved`},
		"bad retention":     {err: second(New[badRetention](nil)), want: "retention=-1h is not a positive duration"},
		"no value":          {err: second(New[noValue](nil)), want: "option deletedattr needs a value"},
		"short retention":   {err: second(New[shortRetention](nil)), want: "retention=23h59m is shorter than 24h0m0s"},
	} {
		require.ErrorIs(t, c.err, ErrDeclaration, name)
		require.ErrorContains(t, c.err, c.want, name)
	}
}

// second returns the second of two values.
func second[A, B any](_ A, b B) B { return b }

// TestPerCallClientOptions: every method that sends requests applies the
// caller's per-call SDK options to each request it sends (package schema's
// CreateTables, Check and Prepare have the same test, in
// schema/options_test.go): a client counts
// every operation it sends (all), the options of one call count the
// operations they reach (mine), and after each call the two agree.
func TestPerCallClientOptions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	all := &ddbtest.OpCounter{ID: "otAll"}
	created, plain := newTestTable[wrTicket](t)
	client := dynamodb.New(plain.Options(), all.Option)
	tb, err := New[wrTicket](client, curxSameOpts(created))
	require.NoError(t, err)
	all.Take()

	step := func(name string, want []string, call func(opt func(*dynamodb.Options))) {
		t.Helper()
		mine := &ddbtest.OpCounter{ID: "otMine"}
		call(mine.Option)
		sent, reached := all.Take(), mine.Take()
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
		all.Take()
		require.NoError(t, tb.Delete(ctx, cur, opt))
	})

	if ddbtest.Has(ddbtest.Transactions) {
		wt, err := New[wrTicket](client, curxSameOpts(created), wrWriteThrough)
		require.NoError(t, err)
		var moved wrTicket
		step("Move", []string{"TransactWriteItems"}, func(opt func(*dynamodb.Options)) {
			cur, err := wt.Put(ctx, gtTicket(5))
			require.NoError(t, err)
			all.Take()
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

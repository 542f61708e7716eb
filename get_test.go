package ddbindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Tests of Get and BatchGet (get.go) against the test server, and of
// BatchGet's handling of UnprocessedKeys with a client that reproduces
// DynamoDB's partial answers.

func gtTicket(i int) wrTicket {
	return wrTicket{Team: "T" + fmt.Sprint(i%3), Status: "open", ID: fmt.Sprintf("id%04d", i),
		Created: wrT0.Add(time.Duration(i) * time.Minute), Title: fmt.Sprint("ticket ", i)}
}

// gtKey is the key of a ticket: only its base key fields.
func gtKey(it wrTicket) wrTicket { return wrTicket{Team: it.Team, Status: it.Status, ID: it.ID} }

// TestGet: Get reads an item by its base key alone, strongly consistent;
// an absent item and a tombstone are not found (ErrNotFound, DDBX-404); a
// key without its base key values is refused before any request.
func TestGet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[wrTicket](t)
	put, err := tb.Put(ctx, gtTicket(1))
	require.NoError(t, err)

	got, err := tb.Get(ctx, gtKey(put))
	require.NoError(t, err)
	require.Equal(t, put, got, "the item as Put wrote it (version 1)")

	// Update, then Get at once: the read is strongly consistent.
	require.NoError(t, tb.Update(ctx, gtKey(put), Set("title", "renamed")))
	got, err = tb.Get(ctx, gtKey(put))
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Title)
	require.Equal(t, int64(2), got.Ver)

	_, err = tb.Get(ctx, gtKey(gtTicket(2)))
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, "DDBX-404", Code(err))

	require.NoError(t, tb.Delete(ctx, got))
	require.NotNil(t, wrRaw(t, tb, got), "the tombstone is stored")
	_, err = tb.Get(ctx, gtKey(put))
	require.ErrorIs(t, err, ErrNotFound, "a tombstone is not found")
	require.ErrorContains(t, err, `SK="STATUS#open#TICKET#id0001"`)

	// A model deleted for real.
	notes, _ := newTestTable[wrNote](t)
	n, err := notes.Put(ctx, wrNote{Team: "T", ID: "n1", Topic: "x", Text: "hello"})
	require.NoError(t, err)
	gotNote, err := notes.Get(ctx, wrNote{Team: "T", ID: "n1"})
	require.NoError(t, err)
	require.Equal(t, n, gotNote)
	require.NoError(t, notes.Delete(ctx, n))
	_, err = notes.Get(ctx, wrNote{Team: "T", ID: "n1"})
	require.ErrorIs(t, err, ErrNotFound)

	var nc wrNoClient
	noReq, err := New[wrSoftNote](&nc)
	require.NoError(t, err)
	_, err = noReq.Get(ctx, wrSoftNote{Team: "T"})
	require.ErrorIs(t, err, ErrInvalidQuery, "no ID: the base key is incomplete")
	_, err = noReq.BatchGet(ctx, []wrSoftNote{{Team: "T", ID: "a"}, {Team: "T"}})
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.ErrorContains(t, err, "key 1")
	require.Zero(t, nc.calls.Load(), "refused before any request")
}

// gtRecorder passes requests on and records every BatchGetItem's keys.
type gtRecorder struct {
	Client
	mu      sync.Mutex
	batches [][]map[string]types.AttributeValue
}

func (r *gtRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.mu.Lock()
	for table, ka := range in.RequestItems {
		if !aws.ToBool(ka.ConsistentRead) {
			r.mu.Unlock()
			return nil, fmt.Errorf("gtRecorder: BatchGetItem on %s without ConsistentRead", table)
		}
		r.batches = append(r.batches, ka.Keys)
	}
	r.mu.Unlock()
	return r.Client.BatchGetItem(ctx, in, optFns...)
}

// TestBatchGet: BatchGet returns, in the order of the keys, the item of
// each key Get finds, once per occurrence of the key, and nothing for
// absent and soft-deleted items; it reads each distinct key once, in
// strongly consistent requests of at most 100 keys, none named twice
// (DynamoDB refuses a BatchGetItem over 100 keys, or with a key twice:
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html).
func TestBatchGet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[wrTicket](t)
	const n = 230
	stored := make([]wrTicket, n)
	for i := range n {
		var err error
		stored[i], err = tb.Put(ctx, gtTicket(i))
		require.NoError(t, err)
	}
	deleted := map[int]bool{}
	for i := 0; i < n; i += 7 {
		require.NoError(t, tb.Delete(ctx, stored[i]))
		deleted[i] = true
	}
	rng := rand.New(rand.NewPCG(8, 1))
	var keys []wrTicket
	var want []wrTicket
	for range 400 {
		i := rng.IntN(n + 40) // beyond n: never stored
		if i >= n {
			keys = append(keys, gtKey(gtTicket(i)))
			continue
		}
		keys = append(keys, gtKey(stored[i]))
		if !deleted[i] {
			want = append(want, stored[i])
		}
	}
	rec := &gtRecorder{Client: tb.client.c}
	rtb := *tb
	rtb.client = calls{rec}
	got, err := rtb.BatchGet(ctx, keys)
	require.NoError(t, err)
	require.Equal(t, want, got)

	// Each distinct key was read exactly once, in batches of at most 100
	// without duplicates.
	distinct := map[string]bool{}
	for _, k := range keys {
		_, id, err := tb.readKey(&k)
		require.NoError(t, err)
		distinct[id] = true
	}
	read := map[string]int{}
	for _, b := range rec.batches {
		require.LessOrEqual(t, len(b), maxBatchGetKeys)
		for _, k := range b {
			read[keyString(k)]++
		}
	}
	require.Len(t, read, len(distinct))
	for k, c := range read {
		require.Equal(t, 1, c, "key %s read more than once", k)
	}
	require.Len(t, rec.batches, (len(distinct)+maxBatchGetKeys-1)/maxBatchGetKeys)

	empty, err := tb.BatchGet(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

// gtPartial reproduces DynamoDB's partial BatchGetItem answers: "If a
// partial result is returned, the operation returns a value for
// UnprocessedKeys. You can use this value to retry the operation starting
// with the next item to get." (BatchGetItem, Amazon DynamoDB API Reference,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html).
// Each request's first `serve` keys are read from the server; the rest come
// back as UnprocessedKeys. serve 0 processes nothing, as when every read
// of the request is throttled.
type gtPartial struct {
	Client
	serve    int
	mu       sync.Mutex
	requests int
}

func (p *gtPartial) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	p.mu.Lock()
	p.requests++
	p.mu.Unlock()
	served := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
	unprocessed := map[string]types.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		n := min(p.serve, len(ka.Keys))
		if n > 0 {
			served.RequestItems[table] = types.KeysAndAttributes{Keys: ka.Keys[:n], ConsistentRead: ka.ConsistentRead}
		}
		if n < len(ka.Keys) {
			unprocessed[table] = types.KeysAndAttributes{Keys: ka.Keys[n:], ConsistentRead: ka.ConsistentRead}
		}
	}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	if len(served.RequestItems) > 0 {
		var err error
		if out, err = p.Client.BatchGetItem(ctx, served, optFns...); err != nil {
			return nil, err
		}
	}
	out.UnprocessedKeys = unprocessed
	return out, nil
}

// TestBatchGetUnprocessedKeys: keys DynamoDB leaves unprocessed are asked
// for again, with backoff, until all are read; when they stay unprocessed
// beyond Options.Retry's attempts, BatchGet fails with a transient error.
func TestBatchGetUnprocessedKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var retries []int
	var mu sync.Mutex
	tb, _ := newTestTable[wrTicket](t, func(o *Options) {
		o.Retry = RetryOptions{MaxAttempts: 40, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond,
			OnRetry: func(op string, attempt int, err error) {
				mu.Lock()
				defer mu.Unlock()
				if op == "BatchGetItem" && IsTransient(err) {
					retries = append(retries, attempt)
				}
			}}
	})
	var keys, want []wrTicket
	for i := range 130 {
		it, err := tb.Put(ctx, gtTicket(i))
		require.NoError(t, err)
		keys, want = append(keys, gtKey(it)), append(want, it)
	}
	partial := &gtPartial{Client: tb.client.c, serve: 7}
	ptb := *tb
	ptb.client = calls{partial}
	got, err := ptb.BatchGet(ctx, keys)
	require.NoError(t, err)
	require.Equal(t, want, got)
	// 100 keys at 7 a request, then 30.
	require.Equal(t, 15+5, partial.requests)
	require.Len(t, retries, 14+4, "one backoff per answer with unprocessed keys")

	stuck := &gtPartial{Client: tb.client.c, serve: 0}
	stb := *tb
	stb.client = calls{stuck}
	stb.opts.Retry.MaxAttempts = 3
	_, err = stb.BatchGet(ctx, keys[:5])
	require.Error(t, err)
	require.True(t, IsTransient(err), "unprocessed keys are worth asking for later: %v", err)
	require.ErrorContains(t, err, "5 keys unprocessed (throttling, or a response over 16 MB) after 3 attempts")
	var ce *Error
	require.ErrorAs(t, err, &ce, "a failed call: ErrDynamoDB")
	require.Equal(t, "BatchGetItem", ce.Op)
	require.Equal(t, tb.TableName(), ce.Table)
	require.True(t, IsTransient(ce))
	require.Equal(t, 3, stuck.requests)
}

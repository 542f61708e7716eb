package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file reads items by base key: Get (one GetItem) and BatchGet
// (BatchGetItem), both strongly consistent, both blind to tombstones.

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// Get reads, strongly consistent, the item whose base key is key's: only
// key's base key fields need values; its other fields are ignored. An item
// that is not stored, or is soft-deleted (a tombstone), is not found: the
// error then matches [ErrNotFound]. A key without its base key values is an
// error matching [ErrInvalidQuery], before any request.
//
// optFns are applied to the GetItem request, as the SDK's own per-call
// options.
func (t *Table[T]) Get(ctx context.Context, key T, optFns ...func(*dynamodb.Options)) (_ T, err error) {
	if err := t.callable(ctx, "Get", ErrInvalidQuery, optFns...); err != nil {
		var zero T
		return zero, err
	}
	ctx, c := t.tel.start(ctx, opGet, t.s.base)
	defer func() { c.end(ctx, err) }()
	var zero T
	k, _, err := t.readKey(&key)
	if err != nil {
		return zero, err
	}
	cur, err := t.current(ctx, k, optFns)
	if err != nil {
		return zero, err
	}
	live := t.liveImage(cur)
	if live == nil {
		return zero, fmt.Errorf("%w: no live %s has the key %s", ErrNotFound, t.s.model, keyString(k))
	}
	var v T
	if err := t.unmarshalItem(live, &v); err != nil {
		return zero, err
	}
	return v, nil
}

// BatchGet reads, strongly consistent, the items whose base keys are keys',
// as [Table.Get] reads one: the result holds, in the order of keys, the item
// of each key that Get would find, and nothing for a key Get would not find
// (no item, or a tombstone). A key that appears several times in keys yields
// its item as often; it is read once.
//
// BatchGet sends one BatchGetItem per 100 distinct keys (DynamoDB's limit,
// which also refuses a request that names a key twice). DynamoDB may leave
// keys unprocessed (a response over 16 MB, throttling); BatchGet asks for
// them again with exponential backoff, within Options.Retry's attempts per
// request, and retries requests that fail with a transient error the same
// way. If keys remain unprocessed after the last attempt, BatchGet fails with
// an [*Error] (matching [ErrDynamoDB]) for which
// [IsTransient] reports true. A key without its base key values is an error
// matching [ErrInvalidQuery], before any request; a stored item that does not
// fit the model, one matching [ErrMalformedItem].
//
// optFns are applied to every request BatchGet sends, as the SDK's own
// per-call options.
func (t *Table[T]) BatchGet(ctx context.Context, keys []T, optFns ...func(*dynamodb.Options)) (items []T, err error) {
	if err := t.callable(ctx, "BatchGet", ErrInvalidQuery, optFns...); err != nil {
		return nil, err
	}
	ctx, c := t.tel.start(ctx, opBatchGet, t.s.base)
	defer func() { c.batchGot(len(keys), len(items)); c.end(ctx, err) }()
	ids := make([]string, len(keys))
	seen := make(map[string]bool, len(keys))
	var distinct []map[string]types.AttributeValue
	for i := range keys {
		k, id, err := t.readKey(&keys[i])
		if err != nil {
			return nil, fmt.Errorf("ddbindex: BatchGet key %d: %w", i, err)
		}
		ids[i] = id
		if !seen[id] {
			seen[id] = true
			distinct = append(distinct, k)
		}
	}
	found := make(map[string]map[string]types.AttributeValue, len(distinct))
	for start := 0; start < len(distinct); start += maxBatchGetKeys {
		if err := t.batchGet(ctx, distinct[start:min(start+maxBatchGetKeys, len(distinct))], found, optFns); err != nil {
			return nil, err
		}
	}
	out := make([]T, 0, len(found))
	for _, id := range ids {
		item, ok := found[id]
		if !ok {
			continue
		}
		var v T
		if err := t.unmarshalItem(item, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// batchGet reads up to maxBatchGetKeys distinct keys, asking again for
// those DynamoDB leaves unprocessed, and adds the live items it finds to
// found, by their keys' identity (see readKey).
func (t *Table[T]) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, found map[string]map[string]types.AttributeValue,
	optFns []func(*dynamodb.Options)) error {
	table := t.TableName()
	attempts := 0
	_, err := retryCall(ctx, t.opts.Retry, "BatchGetItem", func() (struct{}, error) {
		attempts++
		out, err := t.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}}, optFns...)
		if err != nil {
			return struct{}{}, err
		}
		for _, item := range out.Responses[table] {
			live := t.liveImage(item)
			if live == nil {
				continue
			}
			pos, err := t.s.base.positionOf(item)
			if err != nil {
				return struct{}{}, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, t.s.model, err)
			}
			found[positionKey(pos)] = live
		}
		keys = out.UnprocessedKeys[table].Keys
		if len(keys) > 0 {
			return struct{}{}, callErr("BatchGetItem", &table, nil, &unprocessedError{keys: len(keys)})
		}
		return struct{}{}, nil
	})
	if err == nil {
		return nil
	}
	var ue *unprocessedError
	if errors.As(err, &ue) {
		ue.attempts = attempts
	}
	return fmt.Errorf("ddbindex: BatchGet %s: %w", t.s.model, err)
}

// unprocessedError is the cause of the *Error of a BatchGetItem that
// left keys unprocessed. It is transient (the SDK's retryer, and so
// IsTransient, read RetryableError): the retries ask for the keys again. Like
// every error type of the package it matches one sentinel, the one of the
// *Error around it.
type unprocessedError struct {
	keys     int
	attempts int // BatchGet's attempts, once it gives up
}

func (e *unprocessedError) Error() string {
	s := fmt.Sprintf("DynamoDB left %d keys unprocessed (throttling, or a response over 16 MB)", e.keys)
	if e.attempts > 0 {
		s += fmt.Sprintf(" after %d attempts; retry later", e.attempts)
	}
	return s
}

// RetryableError makes the error transient for [IsTransient], as the SDK's
// retryer reads it.
func (e *unprocessedError) RetryableError() bool { return true }

// Is makes unprocessedError match ErrDynamoDB, as the *Error around it.
func (e *unprocessedError) Is(target error) bool { return target == ErrDynamoDB }

// Code returns ErrDynamoDB's code.
func (e *unprocessedError) Code() string { return ErrDynamoDB.code }

// readKey returns the base key of a model value, read from the values of its
// base key fields, and the key's identity: its position's key texts, as
// positionOf reads them from a stored item. A value without its base key
// values is an invalid query.
func (t *Table[T]) readKey(item *T) (map[string]types.AttributeValue, string, error) {
	texts, err := t.s.itemTexts(reflect.ValueOf(item).Elem())
	if err != nil {
		return nil, "", queryErr("", "%v", err)
	}
	key, _, err := t.s.base.keyValues(texts)
	if err != nil {
		return nil, "", queryErr("", "%v", err)
	}
	pos := make(position, len(t.s.base.slots))
	for i, f := range t.s.base.slots {
		pos[i] = texts.text(f)
	}
	return key, positionKey(pos), nil
}

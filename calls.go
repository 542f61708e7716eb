package ddbindex

import (
	"context"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the wrappers through which a failed call to DynamoDB becomes
// an *Error (ErrDynamoDB, made by callErr in errors.go): every request the
// package sends goes through one of them, which pass the SDK's per-call
// options on. One failure that no single answer reports is wrapped where it
// is found: BatchGet's keys still unprocessed after its retries (get.go).
// A Table holds its client as calls (a read-only table's too:
// NewReadOnly's client is a Client whose writes fail without a request).
// (The stream package's consumer wraps its DynamoDB Streams client and
// checkpoint store the same way, in stream/calls.go; package migrate's
// Backfill its Scan client and checkpoint store, in
// migrate/backfill_calls.go; and package schema the client its CreateTables,
// Check and Prepare are given, in schema/calls.go. The writes of stream and
// migrate go through the Table, whose client is wrapped here.)

// calls is a Table's client, with every error wrapped.
type calls struct{ c Client }

// batchTable is the table a BatchGetItem names, when it names one alone
// (BatchGet's do); nil otherwise.
func batchTable(in *dynamodb.BatchGetItemInput) *string {
	if len(in.RequestItems) != 1 {
		return nil
	}
	for name := range in.RequestItems {
		return &name
	}
	return nil
}

// Each method records its request in the call state ctx carries, if any
// (telemetry.go); to count capacity it asks for it on a copy of the input,
// when the input asks for none.

func (w calls) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.Query(wctx, in, wopts...)
	thr := wt.done(ctx, apiQuery, err)
	if c := callFrom(ctx); c != nil {
		c.queried(ctx, in, out, err)
	}
	return out, callErr("Query", in.TableName, in.IndexName, err, thr...)
}

func (w calls) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.readCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.GetItem(wctx, in, wopts...)
	thr := wt.done(ctx, apiGetItem, err)
	if c != nil {
		c.single(ctx, apiGetItem, in.TableName, consumed(out, func(o *dynamodb.GetItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("GetItem", in.TableName, nil, err, thr...)
}

func (w calls) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.readCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.BatchGetItem(wctx, in, wopts...)
	thr := wt.done(ctx, apiBatchGetItem, err)
	if c != nil {
		var ccs []types.ConsumedCapacity
		if out != nil {
			ccs = out.ConsumedCapacity
		}
		c.multi(ctx, apiBatchGetItem, func() []string { return slices.Sorted(maps.Keys(in.RequestItems)) }, ccs, err)
	}
	return out, callErr("BatchGetItem", batchTable(in), nil, err, thr...)
}

func (w calls) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.PutItem(wctx, in, wopts...)
	thr := wt.done(ctx, apiPutItem, err)
	if c != nil {
		c.single(ctx, apiPutItem, in.TableName, consumed(out, func(o *dynamodb.PutItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("PutItem", in.TableName, nil, err, thr...)
}

func (w calls) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.UpdateItem(wctx, in, wopts...)
	thr := wt.done(ctx, apiUpdateItem, err)
	if c != nil {
		c.single(ctx, apiUpdateItem, in.TableName, consumed(out, func(o *dynamodb.UpdateItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("UpdateItem", in.TableName, nil, err, thr...)
}

func (w calls) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.DeleteItem(wctx, in, wopts...)
	thr := wt.done(ctx, apiDeleteItem, err)
	if c != nil {
		c.single(ctx, apiDeleteItem, in.TableName, consumed(out, func(o *dynamodb.DeleteItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("DeleteItem", in.TableName, nil, err, thr...)
}

func (w calls) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	var wt watch
	wt.txn = in
	wctx, wopts := wt.with(ctx, optFns)
	out, err := w.c.TransactWriteItems(wctx, in, wopts...)
	thr := wt.done(ctx, apiTransactWriteItems, err)
	if c != nil {
		var ccs []types.ConsumedCapacity
		if out != nil {
			ccs = out.ConsumedCapacity
		}
		c.multi(ctx, apiTransactWriteItems, func() []string { return transactTables(in) }, ccs, err)
	}
	return out, callErr("TransactWriteItems", nil, nil, err, thr...)
}

// consumed returns the capacity an answer reports; nil for no answer.
func consumed[O any](out *O, get func(*O) *types.ConsumedCapacity) *types.ConsumedCapacity {
	if out == nil {
		return nil
	}
	return get(out)
}

// transactTables lists the tables a transaction writes, each once, sorted.
func transactTables(in *dynamodb.TransactWriteItemsInput) []string {
	var names []string
	for _, it := range in.TransactItems {
		var n *string
		switch {
		case it.Put != nil:
			n = it.Put.TableName
		case it.Update != nil:
			n = it.Update.TableName
		case it.Delete != nil:
			n = it.Delete.TableName
		case it.ConditionCheck != nil:
			n = it.ConditionCheck.TableName
		}
		if n != nil && !slices.Contains(names, *n) {
			names = append(names, *n)
		}
	}
	slices.Sort(names)
	return names
}

package ddbindex

import (
	"context"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the wrappers through which a failed call to DynamoDB becomes
// a *CallError (ErrDynamoDB, made by callErr in errors.go): every request the
// package sends goes through one of them, which pass the SDK's per-call
// options on. Two failures that no single answer reports are wrapped where
// they are found: BatchGet's keys still unprocessed after its retries
// (get.go), and CreateTables' wait that times out (tables.go). A Table holds
// its client as calls (a read-only table's too: NewReadOnly's client is a
// Client whose writes fail without a request); CreateTables,
// CheckSchema and Prepare wrap the client they are given. (The stream
// package's consumer wraps its DynamoDB Streams client and checkpoint store
// the same way, in stream/calls.go, and package migrate's Backfill its Scan
// client and checkpoint store, in migrate/backfill_calls.go; the writes of
// both go through the Table, whose client is wrapped here.)

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
	out, err := w.c.Query(ctx, in, optFns...)
	if c := callFrom(ctx); c != nil {
		c.queried(ctx, in, out, err)
	}
	return out, callErr("Query", in.TableName, in.IndexName, err)
}

func (w calls) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.readCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.GetItem(ctx, in, optFns...)
	if c != nil {
		c.single(ctx, apiGetItem, in.TableName, consumed(out, func(o *dynamodb.GetItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("GetItem", in.TableName, nil, err)
}

func (w calls) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.readCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.BatchGetItem(ctx, in, optFns...)
	if c != nil {
		var ccs []types.ConsumedCapacity
		if out != nil {
			ccs = out.ConsumedCapacity
		}
		c.multi(ctx, apiBatchGetItem, func() []string { return slices.Sorted(maps.Keys(in.RequestItems)) }, ccs, err)
	}
	return out, callErr("BatchGetItem", batchTable(in), nil, err)
}

func (w calls) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.PutItem(ctx, in, optFns...)
	if c != nil {
		c.single(ctx, apiPutItem, in.TableName, consumed(out, func(o *dynamodb.PutItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("PutItem", in.TableName, nil, err)
}

func (w calls) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.UpdateItem(ctx, in, optFns...)
	if c != nil {
		c.single(ctx, apiUpdateItem, in.TableName, consumed(out, func(o *dynamodb.UpdateItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("UpdateItem", in.TableName, nil, err)
}

func (w calls) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.DeleteItem(ctx, in, optFns...)
	if c != nil {
		c.single(ctx, apiDeleteItem, in.TableName, consumed(out, func(o *dynamodb.DeleteItemOutput) *types.ConsumedCapacity { return o.ConsumedCapacity }), err)
	}
	return out, callErr("DeleteItem", in.TableName, nil, err)
}

func (w calls) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c := callFrom(ctx)
	if rcc, ok := c.writeCapacity(in.ReturnConsumedCapacity); ok {
		cp := *in
		cp.ReturnConsumedCapacity, in = rcc, &cp
	}
	out, err := w.c.TransactWriteItems(ctx, in, optFns...)
	if c != nil {
		var ccs []types.ConsumedCapacity
		if out != nil {
			ccs = out.ConsumedCapacity
		}
		c.multi(ctx, apiTransactWriteItems, func() []string { return transactTables(in) }, ccs, err)
	}
	return out, callErr("TransactWriteItems", nil, nil, err)
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

// schemaCalls is the client CreateTables and CheckSchema are given, with
// every error wrapped.
type schemaCalls struct{ c SchemaAPI }

func (w schemaCalls) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	out, err := w.c.CreateTable(ctx, in, optFns...)
	return out, callErr("CreateTable", in.TableName, nil, err)
}

func (w schemaCalls) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := w.c.DescribeTable(ctx, in, optFns...)
	return out, callErr("DescribeTable", in.TableName, nil, err)
}

func (w schemaCalls) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	out, err := w.c.UpdateTimeToLive(ctx, in, optFns...)
	return out, callErr("UpdateTimeToLive", in.TableName, nil, err)
}

func (w schemaCalls) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	out, err := w.c.DescribeTimeToLive(ctx, in, optFns...)
	return out, callErr("DescribeTimeToLive", in.TableName, nil, err)
}

// ScanAPI is the part of the DynamoDB client that scans a table: what
// CheckSchema, given a client that can Scan as well, reads a sharded index's
// entries with (package migrate's Backfill takes a client of the same
// shape). *dynamodb.Client implements it.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// scanCalls is a ScanAPI, with every error wrapped.
type scanCalls struct{ c ScanAPI }

func (w scanCalls) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := w.c.Scan(ctx, in, optFns...)
	return out, callErr("Scan", in.TableName, in.IndexName, err)
}

// prepareCalls is the client Prepare is given, with every error wrapped.
type prepareCalls struct {
	schemaCalls
	u PrepareAPI
}

func (w prepareCalls) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	out, err := w.u.UpdateTable(ctx, in, optFns...)
	return out, callErr("UpdateTable", in.TableName, nil, err)
}

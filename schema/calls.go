package schema

import (
	"context"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/throttle"
)

// This file is where the package's failed calls become a
// *ddbindex.Error (ddbindex.ErrDynamoDB), as ddbindex's calls.go is for
// the root package: CreateTables, Check and Prepare hold the client they
// are given as apiCalls (Check's Scan as scanCalls, Prepare's UpdateTable as
// prepareCalls). CreateTables' wait that gives up is wrapped where it is
// found (create.go).

// apiCalls is an API, with every error wrapped.
type apiCalls struct{ c API }

func (w apiCalls) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	out, err := w.c.CreateTable(ctx, in, optFns...)
	return out, callErr("CreateTable", in.TableName, nil, err)
}

func (w apiCalls) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := w.c.DescribeTable(ctx, in, optFns...)
	return out, callErr("DescribeTable", in.TableName, nil, err)
}

func (w apiCalls) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	out, err := w.c.UpdateTimeToLive(ctx, in, optFns...)
	return out, callErr("UpdateTimeToLive", in.TableName, nil, err)
}

func (w apiCalls) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	out, err := w.c.DescribeTimeToLive(ctx, in, optFns...)
	return out, callErr("DescribeTimeToLive", in.TableName, nil, err)
}

// scanAPI is the part of a client that scans a table: what Check, given a
// client that has it as well (as *dynamodb.Client does), reads a sharded
// index's entries with.
type scanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// scanCalls is a scanAPI, with every error wrapped.
type scanCalls struct{ c scanAPI }

func (w scanCalls) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := w.c.Scan(ctx, in, optFns...)
	return out, callErr("Scan", in.TableName, in.IndexName, err)
}

// prepareCalls is a PrepareAPI, with every error wrapped.
type prepareCalls struct {
	apiCalls
	u PrepareAPI
}

func (w prepareCalls) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	out, err := w.u.UpdateTable(ctx, in, optFns...)
	return out, callErr("UpdateTable", in.TableName, nil, err)
}

// callErr wraps a non-nil error of a call in a *ddbindex.Error; nil
// stays nil. table and index are the request's names (nil when it has
// none).
func callErr(op string, table, index *string, err error) error {
	if err == nil {
		return nil
	}
	e := &ddbindex.Error{Sentinel: ddbindex.ErrDynamoDB, Op: op, Err: err, Throttles: throttle.Reasons(err, nil)}
	if table != nil {
		e.Table = *table
	}
	if index != nil {
		e.Index = *index
	}
	return e
}

// isNil reports whether a client is nil: a nil interface, or a nil pointer
// (or other nil-able value) in one, whose methods would fail on it.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

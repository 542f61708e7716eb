package ddbtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file creates, waits for and deletes the tables of a test.

const (
	waitMinDelay = 50 * time.Millisecond
	waitMaxDelay = time.Second
	waitCap      = 2 * time.Minute
)

// The SDK's default waiter delays (20 s and up) suit AWS, not local servers.

func fastExists(o *dynamodb.TableExistsWaiterOptions) {
	o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
}

func fastNotExists(o *dynamodb.TableNotExistsWaiterOptions) {
	o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
}

// waitActive waits until the table exists and is ACTIVE.
func waitActive(ctx context.Context, client *dynamodb.Client, name string) error {
	return dynamodb.NewTableExistsWaiter(client, fastExists).
		Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, waitCap)
}

// deleteTable deletes the table and waits until it is gone. A table that
// does not exist is not an error; one still being created is waited for
// and deleted.
func deleteTable(ctx context.Context, client *dynamodb.Client, name string) error {
	in := &dynamodb.DeleteTableInput{TableName: aws.String(name)}
	_, err := client.DeleteTable(ctx, in)
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		if err := waitActive(ctx, client, name); err != nil {
			return err
		}
		_, err = client.DeleteTable(ctx, in)
	}
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return dynamodb.NewTableNotExistsWaiter(client, fastNotExists).
		Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, waitCap)
}

// CreateTable creates the table described by in, whose TableName the
// caller sets (usually from Name), waits until it is ACTIVE, and deletes it
// when the test and its subtests have finished. It fails the test on error.
func CreateTable(tb testing.TB, client *dynamodb.Client, in *dynamodb.CreateTableInput) {
	tb.Helper()
	name := aws.ToString(in.TableName)
	if name == "" {
		tb.Fatal("ddbtest.CreateTable: TableName is not set")
	}
	ctx, cancel := context.WithTimeout(tb.Context(), waitCap)
	defer cancel()
	if _, err := client.CreateTable(ctx, in); err != nil {
		tb.Fatalf("creating table %s: %v", name, err)
	}
	DeleteOnCleanup(tb, client, name)
	if err := waitActive(ctx, client, name); err != nil {
		tb.Fatalf("waiting for table %s to become active: %v", name, err)
	}
}

// DeleteOnCleanup deletes the named table, and waits until it is gone,
// when the test and its subtests have finished. Use it for tables created
// by the code under test. A table that no longer exists is not an error.
func DeleteOnCleanup(tb testing.TB, client *dynamodb.Client, name string) {
	tb.Helper()
	tb.Cleanup(func() {
		// tb.Context is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), waitCap)
		defer cancel()
		if err := deleteTable(ctx, client, name); err != nil {
			tb.Errorf("deleting table %s: %v", name, err)
		}
	})
}

// WaitActive waits until the named table exists and is ACTIVE, for at most
// two minutes, and fails the test otherwise.
func WaitActive(tb testing.TB, client *dynamodb.Client, name string) {
	tb.Helper()
	if err := waitActive(tb.Context(), client, name); err != nil {
		tb.Fatalf("waiting for table %s to become active: %v", name, err)
	}
}

// DeleteTable deletes the named table now, and waits until it is gone (a
// server may report it DELETING a while), for at most two minutes; it
// fails the test otherwise. A table that does not exist is not an error.
func DeleteTable(tb testing.TB, client *dynamodb.Client, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), waitCap)
	defer cancel()
	if err := deleteTable(ctx, client, name); err != nil {
		tb.Fatalf("deleting table %s: %v", name, err)
	}
}

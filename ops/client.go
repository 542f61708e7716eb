package ops

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// lazyClient is the Client of a command run without RunOptions.Client: it
// makes the real client from the AWS configuration on its first request, so
// that commands that send none (cursor inspect, most of explain) need no
// AWS configuration.
type lazyClient struct{ e *env }

func (c *lazyClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.GetItem(ctx, in, optFns...)
}

func (c *lazyClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.BatchGetItem(ctx, in, optFns...)
}

func (c *lazyClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.Query(ctx, in, optFns...)
}

func (c *lazyClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.PutItem(ctx, in, optFns...)
}

func (c *lazyClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.UpdateItem(ctx, in, optFns...)
}

func (c *lazyClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.DeleteItem(ctx, in, optFns...)
}

func (c *lazyClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.TransactWriteItems(ctx, in, optFns...)
}

func (c *lazyClient) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.CreateTable(ctx, in, optFns...)
}

func (c *lazyClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.DescribeTable(ctx, in, optFns...)
}

func (c *lazyClient) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.UpdateTimeToLive(ctx, in, optFns...)
}

func (c *lazyClient) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.DescribeTimeToLive(ctx, in, optFns...)
}

func (c *lazyClient) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.UpdateTable(ctx, in, optFns...)
}

func (c *lazyClient) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.Scan(ctx, in, optFns...)
}

package ops

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// awsConfig loads the AWS configuration for the flags --region and
// --profile, and says whether its credential lookup may ask the EC2
// instance metadata service (IMDS, 169.254.169.254).
//
// The SDK's default chain ends with IMDS: when no other source has
// credentials (environment, shared files, SSO, web identity, a process,
// the container endpoint), it asks IMDS for an instance role, with
// retries and timeouts, before it fails. Off EC2 nothing answers there:
// the request only delays the command's own "no AWS credentials" message,
// after sending traffic to a link-local address the operator did not name.
// So the configuration is loaded with the IMDS client disabled, unless
// something says it is wanted:
//
//   - AWS_EC2_METADATA_DISABLED=false (an explicit yes; =true stays a no),
//   - an IMDS endpoint named in AWS_EC2_METADATA_SERVICE_ENDPOINT or in the
//     profile's ec2_metadata_service_endpoint,
//   - a profile (or its source_profile) whose credential_source is
//     Ec2InstanceMetadata,
//   - the host says, in files it keeps locally, that it is an EC2 instance
//     (see onEC2): there an instance role is a usual source, and IMDS
//     answers.
//
// Whatever credentials come first in the chain are used as before: IMDS is
// the chain's last source, so disabling it changes nothing when another
// source has credentials. Loading reads the environment and the shared
// files, and sends nothing unless IMDS is on and AWS_DEFAULTS_MODE=auto
// (which asks IMDS for the region).
func (e *env) awsConfig() (_ aws.Config, imdsOn bool, _ error) {
	var opts []func(*config.LoadOptions) error
	if e.g.region != "" {
		opts = append(opts, config.WithRegion(e.g.region))
	}
	if e.g.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(e.g.profile))
	}
	opts = append(opts, e.awsLoad...)
	cfg, err := config.LoadDefaultConfig(e.ctx, append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))...)
	if err != nil {
		return cfg, false, err
	}
	ec2 := e.onEC2
	if ec2 == nil {
		ec2 = onEC2
	}
	if !imdsAsked(cfg.ConfigSources) && !ec2() {
		return cfg, false, nil
	}
	// Loaded again without the option, IMDS is as the SDK's defaults and
	// the environment (AWS_EC2_METADATA_DISABLED=true) say.
	cfg, err = config.LoadDefaultConfig(e.ctx, opts...)
	return cfg, err == nil, err
}

// imdsAsked reports whether the configuration sources the SDK read ask for
// the EC2 instance metadata service (see awsConfig).
func imdsAsked(sources []any) bool {
	asks := func(p *config.SharedConfig) bool {
		for ; p != nil; p = p.Source {
			if p.CredentialSource == "Ec2InstanceMetadata" || p.EC2IMDSEndpoint != "" {
				return true
			}
		}
		return false
	}
	for _, s := range sources {
		switch c := s.(type) {
		case config.EnvConfig:
			if c.EC2IMDSClientEnableState == imds.ClientEnabled || c.EC2IMDSEndpoint != "" {
				return true
			}
		case config.SharedConfig:
			if asks(&c) {
				return true
			}
		}
	}
	return false
}

// onEC2 reports whether the host says it is an EC2 instance, by the files
// that AWS documents for telling so without a request ("Detect whether a
// host is an EC2 instance",
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/identify_ec2_instances.html):
// on a Nitro instance the DMI vendor is "Amazon EC2" and the board asset
// tag is the instance ID (i-...); on a Xen instance the hypervisor UUID
// starts with "ec2". Anywhere else (another OS, a host without these
// files) it is false.
func onEC2() bool {
	return ec2Host(func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	})
}

// ec2Host is onEC2 with the files read by read ("" for a file that cannot
// be read).
func ec2Host(read func(path string) string) bool {
	return read("/sys/devices/virtual/dmi/id/sys_vendor") == "Amazon EC2" ||
		strings.HasPrefix(read("/sys/devices/virtual/dmi/id/board_asset_tag"), "i-") ||
		strings.HasPrefix(strings.ToLower(read("/sys/hypervisor/uuid")), "ec2")
}

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

func (c *lazyClient) DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	api, err := c.e.dynamo()
	if err != nil {
		return nil, err
	}
	return api.DeleteTable(ctx, in, optFns...)
}

// Package stream keeps a ddbindex model's index tables in step from its base
// table's DynamoDB Stream: it turns stream records (from DynamoDB Streams or
// from an AWS Lambda event) into [ddbindex.Change] values, and [Consumer]
// reads a stream shard by shard, with checkpoints, and applies each record
// with [ddbindex.Table.Apply].
//
// It is a package of its own so that services that only read (or write
// through, see ddbindex.Options.WriteThrough) do not import the DynamoDB
// Streams client and aws-lambda-go: the root package imports neither.
//
// When to use what:
//
//   - [Consumer] is one process that reads the whole stream: it keeps no
//     leases, so two consumers of one stream both apply every record (which
//     is harmless, Apply being idempotent, but wasted). Use it for local
//     development, tests, tools, and small deployments that run one
//     instance. Within that process it applies different items' records in
//     parallel (ConsumerOptions.Workers).
//   - In production, let AWS Lambda read the stream (it shards, scales,
//     checkpoints and retries for you) and apply each batch with
//     [ApplyLambdaEvent].
//
// Either way the base table needs a NEW_AND_OLD_IMAGES stream
// (ddbindex.Table.CreateTables creates one; CheckSchema checks it), and
// every index-table write is conditioned on the version of the change that
// wrote it, so replays, redeliveries and reordering end in the same state.
//
// A Consumer records through the OpenTelemetry API (ConsumerOptions'
// MeterProvider and TracerProvider) the records it applied, found stale,
// failed on or skipped, the stream lag, and a span per pass.
//
// Errors match the root package's sentinels, each one alone (but a poison
// record, which also matches its cause's): [ddbindex.ErrPoisonRecord]
// (*PoisonRecordError), [ddbindex.ErrStreamGap] (*GapError),
// [ddbindex.ErrStreamRecord] (a malformed record), [ddbindex.ErrDynamoDB]
// (a *ddbindex.CallError: a failed call to DynamoDB Streams or the checkpoint
// store), [ddbindex.ErrSchemaMismatch] (a table without a stream) and
// [ddbindex.ErrInvalidWrite] (a consumer or event without its table);
// [ddbindex.Code] gives their codes.
package stream

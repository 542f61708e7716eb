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
//   - In production, let AWS Lambda read the stream (it reads each shard in
//     order, scales with the shards, checkpoints and retries) and apply each
//     batch with a [LambdaHandler], whose Handle reports partial batch
//     failures (ReportBatchItemFailures), so that Lambda retries from the
//     first record not applied. examples/lambda holds the function and a
//     SAM template. [ApplyLambdaEvent] applies a whole event as one call.
//   - [Consumer] reads the stream in a process: for local development,
//     tests, tools, and a single worker. Within that process it applies
//     different items' records in parallel (ConsumerOptions.Workers). With
//     [DynamoDBCheckpoints] its checkpoints survive restarts; with
//     ConsumerOptions.Leases several consumers share a stream's shards (see
//     [Leases]). Without leases, two consumers of one stream both apply
//     every record, which is harmless but wasted.
//
// Either way the base table needs a NEW_AND_OLD_IMAGES stream
// (package schema's CreateTables and Prepare create one; Check checks it), and
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
// (a *ddbindex.Error: a failed call to DynamoDB Streams, the checkpoint
// store or the lease store), [ddbindex.ErrSchemaMismatch] (a table without
// a stream), [ddbindex.ErrMalformedItem] (a damaged item of
// DynamoDBCheckpoints), [ddbindex.ErrInvalidWrite] (a consumer, handler,
// event or store without its parts) and [ddbindex.ErrDeclaration] (options
// NewConsumer or NewLambdaHandler cannot honour: a nil option function, a
// negative or out-of-range value; 0 means the default); [ddbindex.Code]
// gives their codes.
package stream

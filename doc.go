// Package ddbindex reads DynamoDB through secondary indexes without stepping
// into DynamoDB's traps, and keeps index tables in step on the write side.
//
// A model is a struct. Attribute names come from its dynamodbav tags; its
// ddbindex tags declare the base table's key and, for each index, its
// partition and sort components. Each index has a type — GSI, LSI, or an
// index table (a separate table that ddbindex keeps in step) — and switching
// a GSI to an index table is a one-token change in the declaration:
//
//	type Ticket struct {
//		_ ddbindex.TableSpec `ddbindex:"tickets,pk=PK,sk=SK"`
//		_ ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,pk=GSI1PK,sk=GSI1SK"`
//
//		Team    string    `dynamodbav:"team"    ddbindex:"pk,label=TEAM;by_status.pk"`
//		Status  string    `dynamodbav:"status"  ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
//		ID      string    `dynamodbav:"id"      ddbindex:"sk:1,label=TICKET"`
//		Opened  time.Time `dynamodbav:"opened"  ddbindex:"by_status.sk:1"`
//	}
//
// One entry point, [Table.Query], serves every access pattern: a [Query.Page]
// (Limit live items and a cursor), [Query.All] (an iterator over every live
// item) and [Query.Exists]. Under it the library owns composite sort-key
// assembly, exact equality on leading components (begins_with with
// escaping), the tombstone filter, the page-fill loop (DynamoDB applies Limit
// before the filter), strict Base64 cursors that name logical positions (so
// they survive the GSI-to-table switch), and a guard against positions that
// do not advance. [Query.Explain] shows the request without sending it, next
// to the same query on the other index type. [Table.Get] and [Table.BatchGet]
// read items by base key, strongly consistent, and do not return tombstones.
//
// On the write side, [Table.Put], [Table.Delete] and [Table.Move] write base
// items (Move changes base key values in one transaction), and [Table.Update]
// changes an item in place, its GSI and LSI keys too: keep the base key
// immutable and the value that changes in an index sort key, and Update
// recomputes derived index keys in the same request, never from stale
// values. To a caller a soft-deleted item (a tombstone) is absent: Put with
// version 0 creates it again, and a model field tagged ddbindex:"deleted"
// shows tombstones to reads that include them. Index tables are kept
// in step either in the same transaction ([Options].WriteThrough) or from the
// base table's stream, with every entry conditioned on the version of the
// change that wrote it: [Table.Apply] applies a [Change], and the package
// github.com/ddbindex/ddbindex/stream turns DynamoDB Streams records and
// Lambda events into Changes and reads a stream with checkpoints
// (stream.Consumer). That package alone imports the DynamoDB Streams client
// and aws-lambda-go, so a service that only reads does not.
// Package github.com/ddbindex/ddbindex/schema creates the tables from the
// declarations (CreateTables), verifies them (Check), and brings existing
// tables to what the declarations need (Prepare). Package github.com/ddbindex/ddbindex/migrate's
// Backfill fills the form of an index that a migration introduces from the
// items already there (an index table's entries, or a GSI's derived key
// attributes on the base items) in parallel segments, at a capped write
// rate, resuming from checkpoints after a crash. Package github.com/ddbindex/ddbindex/ops builds an operator
// command for these steps from the application's own models; for tools like
// it, [Table.Indexes] describes a model's indexes (package ops's
// InspectCursor decodes a cursor and says why it is refused).
//
// During a migration an index keeps two forms (keep= in its IndexSpec), and
// two seams route and compare its reads: [Options].Router picks the form
// that serves each read ([Query.Via] chooses one for a single query), and
// [Options].Observer sees each page read, as a [ReadEvent] (package
// migrate's Shadows compares it with the same page on the other form). Package
// github.com/ddbindex/ddbindex/migrate implements them: static routes, the
// fleet's routes in a control table, shadow reads, and whole-query
// comparisons. A read of an index with one form, and every read of a Table
// without them, pays nothing for either.
//
// Options come as functions that change an options struct ([New]'s
// [Options], schema.CreateOptions); every method that sends
// requests also takes per-call SDK options (func(*dynamodb.Options)), last,
// and applies them to each request it sends. A service that only reads
// builds its table with [NewReadOnly] from a client with the read methods
// alone ([ReadAPI]); writes on it fail before any request with
// [ErrUnsupported].
//
// The library records metrics and spans through the OpenTelemetry API,
// when given providers ([Options].MeterProvider and TracerProvider):
// requests, capacity units, items read, returned, filtered and dropped, the tombstone ratio, errors by code, caps, the migration's routed
// and shadow reads, and a span per call with an event per DynamoDB request.
// It never depends on the OpenTelemetry SDK, which the application chooses.
// docs/observability.md lists every instrument.
//
// Every error matches one sentinel with errors.Is ([ErrInvalidCursor] is the
// one a client's cursor fails with: HTTP 400) and has a stable code ([Code]);
// only errors that carry another (a stream.PoisonRecordError its cause, a
// consumer pass its record's and its checkpoint's, joined) match a second
// sentinel, and stream.Consumer.Run returns its context's error as it is. A
// failed call to DynamoDB (or, in package stream, to DynamoDB Streams or a
// checkpoint store) is an [*Error] ([ErrDynamoDB]), which unwraps to the
// SDK's error. docs/errors.md says, per code,
// why it happens, what to do, and the HTTP status it maps to.
package ddbindex

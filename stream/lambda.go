package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/av"
	"github.com/ddbindex/ddbindex/internal/retry"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// This file holds LambdaHandler, the body of an AWS Lambda function that a
// DynamoDB Streams event source mapping invokes: it applies a batch and
// reports, with ReportBatchItemFailures, the records Lambda must retry.

// LambdaOptions configure a [LambdaHandler]; pass functions that set them to
// [NewLambdaHandler]. The zero value of each field means its default.
type LambdaOptions struct {
	// Workers is how many records are applied at once: the records of one
	// base item (the same Keys) in stream order, on one worker; different
	// items' in parallel. Default 16; 1 applies the batch in order.
	Workers int
	// Retry bounds the retries of each record's index writes (one
	// [ddbindex.Table.Apply], operation "Apply" for OnRetry) that fail with
	// a transient error. A record whose retries run out is reported to
	// Lambda, which retries it with the rest of the batch after it.
	Retry ddbindex.RetryOptions
	// OnPoison decides what happens to a poison record (see
	// ConsumerOptions.OnPoison; PoisonRecord.ShardID is "", as Lambda events
	// do not name their shard, and StreamARN is the record's
	// eventSourceARN). Without it, the record is reported as failed: Lambda
	// retries it up to the event source mapping's MaximumRetryAttempts,
	// then sends a description of the batch to its on-failure destination
	// and goes on. With it, the handler calls it (one call at a time); nil
	// skips the record (ApplyStats.Skipped), an error reports it as failed.
	OnPoison func(ctx context.Context, r PoisonRecord) error
	// OnBatch, when set, is called by Handle with what each event came to
	// (for logs and metrics).
	OnBatch func(ctx context.Context, r BatchResult)
	// StopBefore is how long before the invocation's deadline (its
	// context's) the handler stops applying records, so that it answers
	// before Lambda ends the invocation; the records not applied by then are
	// reported as failed. Default 2 s.
	StopBefore time.Duration
	// ClientOptions are applied to every DynamoDB request of the index
	// writes, as the SDK's own per-call options.
	ClientOptions []func(*dynamodb.Options)

	// MeterProvider receives the handler's metrics, those of a Consumer
	// (ddbindex.stream.records by outcome, ddbindex.stream.lag; docs/observability.md). Default: none. The index
	// writes are measured by the Table, with its own Options.MeterProvider.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per event, ddbindex.stream.Batch (kind
	// consumer); each record's Apply span is its child. Default: none.
	TracerProvider trace.TracerProvider
	// Now is the clock of the stream lag (now minus a record's
	// ApproximateCreationDateTime). Default time.Now.
	Now func() time.Time
}

const defaultStopBefore = 2 * time.Second

// BatchResult is what a [LambdaHandler] did with one event.
type BatchResult struct {
	// Response is the answer to Lambda: the sequence number of the first
	// record that was not applied, and of every record after it, in
	// BatchItemFailures; none when every record was applied.
	Response events.DynamoDBEventResponse
	// Records is the number of records in the event; Failed the number
	// reported in Response.
	Records, Failed int
	// Stats counts the writes made, those of the records after the first
	// failure included (they are reported all the same, and count as
	// Stale when Lambda delivers them again).
	Stats ddbindex.ApplyStats
	// Err is why the first record reported was not applied; nil when none
	// was reported.
	Err error
}

// LambdaHandler applies the batches of a DynamoDB Streams event source
// mapping to a Table's index tables. Its Handle is the function to pass to
// aws-lambda-go's lambda.Start; configure the event source mapping with
// FunctionResponseTypes [ReportBatchItemFailures] (examples/lambda has a
// template).
//
// It never acknowledges a record it did not apply: the records of a batch
// come from one shard, in order, and with ReportBatchItemFailures Lambda
// takes the lowest sequence number reported as the batch's checkpoint and
// retries every record from it on, so Handle reports the first record that
// was not applied and every record after it. Records before it were
// applied; records after it may have been (items are applied in
// parallel), and their second delivery counts as Stale. (AWS Lambda
// Developer Guide, "Configuring partial batch response with DynamoDB and
// Lambda": "If the batchItemFailures array contains multiple items, Lambda
// uses the record with the lowest sequence number as the checkpoint. Lambda
// then retries all records starting from that checkpoint.")
//
// Its methods are safe for concurrent use.
type LambdaHandler[T any] struct {
	c    *Consumer[T] // applies records: its Table, Retry, OnPoison, ClientOptions
	opts LambdaOptions
}

// NewLambdaHandler returns a handler that applies stream records to t's
// index tables. Each optFn sets options (see [LambdaOptions]), in order.
// Options it cannot honour — a nil option function, a nil entry of
// ClientOptions, a negative value — fail with an error matching
// [ddbindex.ErrDeclaration] (code DDBX-100) that names the option; 0 means
// the default. A nil t is not refused here: Handle and Apply fail with an
// error matching [ddbindex.ErrInvalidWrite].
func NewLambdaHandler[T any](t *ddbindex.Table[T], optFns ...func(*LambdaOptions)) (*LambdaHandler[T], error) {
	const fn = "NewLambdaHandler"
	var opts LambdaOptions
	if err := applyOptions(fn, &opts, optFns); err != nil {
		return nil, err
	}
	if opts.Workers < 0 {
		return nil, negativeOption(fn, "LambdaOptions.Workers", int64(opts.Workers), defaultWorkers)
	}
	if opts.StopBefore < 0 {
		return nil, negativeOption(fn, "LambdaOptions.StopBefore", int64(opts.StopBefore), defaultStopBefore)
	}
	if err := checkRetry(fn, "LambdaOptions.Retry", opts.Retry); err != nil {
		return nil, err
	}
	if err := nilEntry(fn, "LambdaOptions.ClientOptions", opts.ClientOptions); err != nil {
		return nil, err
	}
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers
	}
	if opts.StopBefore == 0 {
		opts.StopBefore = defaultStopBefore
	}
	r := retry.Options(opts.Retry).WithDefaults()
	opts.Retry = ddbindex.RetryOptions(r)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	copts := ConsumerOptions{Retry: opts.Retry, OnPoison: opts.OnPoison, ClientOptions: opts.ClientOptions,
		MeterProvider: opts.MeterProvider, TracerProvider: opts.TracerProvider, Now: opts.Now}
	var table string
	if t != nil {
		table = t.TableName()
	}
	c := &Consumer[T]{t: t, retry: r, opts: copts, tel: newTelemetry(table, &copts)}
	return &LambdaHandler[T]{c: c, opts: opts}, nil
}

// Handle applies one event and answers Lambda: the records to retry in
// BatchItemFailures, and a nil error, so that Lambda keeps the batch's
// progress. It returns an error only when the batch cannot be reported
// record by record (a nil handler or Table; a record without a sequence
// number that was not applied), and Lambda then retries the whole batch.
func (h *LambdaHandler[T]) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r, err := h.Apply(ctx, ev)
	if h != nil && h.opts.OnBatch != nil {
		h.opts.OnBatch(ctx, r)
	}
	return r.Response, err
}

// Apply applies one event's records, as Handle does, and returns what it
// did.
func (h *LambdaHandler[T]) Apply(ctx context.Context, ev events.DynamoDBEvent) (res BatchResult, err error) {
	n := len(ev.Records)
	res = BatchResult{Records: n}
	if h == nil || h.c == nil || h.c.t == nil {
		res.Err = errNilTable
		return res, errNilTable
	}
	ctx, span := h.c.tel.startSpan(ctx, "ddbindex.stream.Batch")
	if span != nil {
		var arn string
		if n > 0 {
			arn = ev.Records[0].EventSourceArn
		}
		defer func() { endPoll(span, arn, res.Stats, res.Err) }()
	}
	recs := make([]streamtypes.Record, n)
	bad := make([]error, n)
	for i, r := range ev.Records {
		recs[i], bad[i] = recordFromLambda(r)
	}
	actx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, d.Add(-h.opts.StopBefore))
		defer cancel()
	}

	results := make([]recordResult, n) // each written by the one worker of its item
	_, wait := applyByItem(recs, h.opts.Workers, func(i int) (ddbindex.ApplyStats, error) {
		arn := ev.Records[i].EventSourceArn
		if bad[i] == nil {
			return h.c.applyRecord(actx, arn, "", recs[i])
		}
		// applyRecord counts the records it tries; this one never
		// reaches it.
		st, err := h.c.poison(actx, arn, "", recs[i], bad[i], ddbindex.ApplyStats{})
		h.c.tel.record(actx, createdAt(recs[i]), st, err)
		return st, err
	}, func(r recordResult) { results[r.i] = r })
	wait()

	failedAt := n
	for i, r := range results {
		addStats(&res.Stats, r.st)
		if failedAt == n && (r.err != nil || r.stopped) {
			failedAt, res.Err = i, r.err
		}
	}
	if failedAt == n {
		return res, nil
	}
	if res.Err == nil {
		// A record is left out only after an earlier one failed, so the
		// first one not applied has its error; this keeps Err set should
		// that ever change.
		res.Err = fmt.Errorf("%w: stream: record %d of the batch was not applied", ddbindex.ErrInvalidWrite, failedAt)
	}
	if ev.Records[failedAt].Change.SequenceNumber == "" {
		// Lambda cannot be told which record to retry (an empty
		// itemIdentifier fails the whole batch anyway): fail the batch.
		return res, res.Err
	}
	for _, r := range ev.Records[failedAt:] {
		// A later record without a sequence number is retried all the same:
		// Lambda retries everything from the first one reported.
		if seq := r.Change.SequenceNumber; seq != "" {
			res.Response.BatchItemFailures = append(res.Response.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
	}
	res.Failed = n - failedAt
	return res, nil
}

// recordFromLambda converts a Lambda event record into a DynamoDB Streams
// record; a record that cannot be converted (an attribute value of no known
// type) is an error matching ddbindex.ErrStreamRecord, with as much of the
// record as was converted.
func recordFromLambda(r events.DynamoDBEventRecord) (streamtypes.Record, error) {
	out := streamtypes.Record{
		AwsRegion:    aws.String(r.AWSRegion),
		EventID:      aws.String(r.EventID),
		EventName:    streamtypes.OperationType(r.EventName),
		EventSource:  aws.String(r.EventSource),
		EventVersion: aws.String(r.EventVersion),
	}
	sr := &streamtypes.StreamRecord{
		StreamViewType: streamtypes.StreamViewType(r.Change.StreamViewType),
		SizeBytes:      aws.Int64(r.Change.SizeBytes),
	}
	if seq := r.Change.SequenceNumber; seq != "" {
		sr.SequenceNumber = aws.String(seq)
	}
	if at := r.Change.ApproximateCreationDateTime.Time; !at.IsZero() {
		sr.ApproximateCreationDateTime = aws.Time(at)
	}
	out.Dynamodb = sr
	for _, part := range []struct {
		name string
		from map[string]events.DynamoDBAttributeValue
		to   *map[string]streamtypes.AttributeValue
	}{{"keys", r.Change.Keys, &sr.Keys}, {"old image", r.Change.OldImage, &sr.OldImage}, {"new image", r.Change.NewImage, &sr.NewImage}} {
		m, err := streamImageFromLambda(part.from)
		if err != nil {
			return out, fmt.Errorf("%w: record %s: %s: %w", ddbindex.ErrStreamRecord, r.Change.SequenceNumber, part.name, err)
		}
		*part.to = m
	}
	return out, nil
}

// streamImageFromLambda converts a Lambda event image (or keys) into a
// DynamoDB Streams image: the package's one converter of aws-lambda-go's
// attribute values, which no SDK converter reads. A nil image stays nil. A
// value that is not what it claims to be (aws-lambda-go's accessors panic
// on one: the zero DynamoDBAttributeValue says it is Binary and holds
// nothing) is an error naming the attribute; what the Streams image holds
// is checked further where it is converted on (av.FromStreamImage).
func streamImageFromLambda(img map[string]events.DynamoDBAttributeValue) (map[string]streamtypes.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(img))
	for k, v := range img {
		sv, err := streamAVFromLambda(v, k)
		if err != nil {
			return nil, err
		}
		out[k] = sv
	}
	return out, nil
}

// streamAVFromLambda converts one Lambda attribute value, at path (for
// errors).
func streamAVFromLambda(v events.DynamoDBAttributeValue, path string) (_ streamtypes.AttributeValue, err error) {
	if v == (events.DynamoDBAttributeValue{}) {
		return nil, fmt.Errorf("%w: attribute %s: invalid Lambda attribute value: an empty value, of no type", av.ErrMalformed, path)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: attribute %s: invalid Lambda attribute value: %v", av.ErrMalformed, path, p)
		}
	}()
	switch v.DataType() {
	case events.DataTypeString:
		return &streamtypes.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &streamtypes.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &streamtypes.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &streamtypes.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &streamtypes.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &streamtypes.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &streamtypes.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		l := make([]streamtypes.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			sv, err := streamAVFromLambda(e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			l[i] = sv
		}
		return &streamtypes.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeMap:
		m := make(map[string]streamtypes.AttributeValue, len(v.Map()))
		for k, e := range v.Map() {
			sv, err := streamAVFromLambda(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			m[k] = sv
		}
		return &streamtypes.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("%w: attribute %s: invalid Lambda attribute value: unsupported type %d", av.ErrMalformed, path, v.DataType())
}

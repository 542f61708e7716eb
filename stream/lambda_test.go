package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of LambdaHandler with generated events: records of the fake stream
// (both servers) or of the server's real stream, as Lambda would deliver
// them, with ReportBatchItemFailures: Lambda retries from the lowest
// sequence number reported ("If the batchItemFailures array contains
// multiple items, Lambda uses the record with the lowest sequence number as
// the checkpoint. Lambda then retries all records starting from that
// checkpoint." — AWS Lambda Developer Guide, "Configuring partial batch
// response with DynamoDB and Lambda"), which lmRedeliver plays.

const lmARN = "arn:aws:dynamodb:us-east-1:000000000000:table/st-tickets/stream/2026-12-02T00:00:00.000"

// lmEvent turns stream records into a Lambda event, through its JSON form
// (as Lambda delivers it).
func lmEvent(t *testing.T, recs []streamtypes.Record) events.DynamoDBEvent {
	t.Helper()
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(recs))}
	for i, r := range recs {
		ev.Records[i] = stLambdaRecord(t, r)
		ev.Records[i].EventSourceArn = lmARN
	}
	js, err := json.Marshal(ev)
	require.NoError(t, err)
	var out events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(js, &out))
	return out
}

// lmRedeliver returns the records Lambda delivers again after resp: every
// record of ev from the lowest sequence number reported on (none when
// nothing was reported).
func lmRedeliver(t *testing.T, ev events.DynamoDBEvent, resp events.DynamoDBEventResponse) events.DynamoDBEvent {
	t.Helper()
	if len(resp.BatchItemFailures) == 0 {
		return events.DynamoDBEvent{}
	}
	low := resp.BatchItemFailures[0].ItemIdentifier
	for _, f := range resp.BatchItemFailures {
		if compareSeq(f.ItemIdentifier, low) < 0 {
			low = f.ItemIdentifier
		}
	}
	for i, r := range ev.Records {
		if r.Change.SequenceNumber == low {
			return events.DynamoDBEvent{Records: ev.Records[i:]}
		}
	}
	t.Fatalf("the response names %s, which is not in the batch", low)
	return events.DynamoDBEvent{}
}

// lmSeqs returns the sequence numbers of an event's records.
func lmSeqs(ev events.DynamoDBEvent) []string {
	out := make([]string, len(ev.Records))
	for i, r := range ev.Records {
		out[i] = r.Change.SequenceNumber
	}
	return out
}

// lmReported returns the sequence numbers a response reports.
func lmReported(resp events.DynamoDBEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// lmFake returns a Table whose index tables exist on the test server, and
// the records of a fake shard of n rounds of changes to 5 items (5 records
// a round).
func lmFake(t *testing.T, rounds int) (*ddbindex.Table[stTicket], *fsStream, []streamtypes.Record) {
	t.Helper()
	tb, fs := fsSetup(t)
	fs.shard("s0", "")
	live := map[int]*stTicket{}
	for r := range rounds {
		lsWork(t, fs, "s0", 0, r, live)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return tb, fs, append([]streamtypes.Record(nil), fs.find("s0").recs...)
}

// TestLambdaHandlerBatches: batches applied in order end in the ground
// truth, with nothing reported; delivered again, every write is stale and
// nothing is applied twice.
func TestLambdaHandlerBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, fs, recs := lmFake(t, 8)
	n := len(recs)
	var batches []BatchResult
	var mu sync.Mutex
	h := newLambdaHandler(t, tb, func(o *LambdaOptions) {
		o.Retry = fast
		o.OnBatch = func(_ context.Context, r BatchResult) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, r)
		}
	})
	var first ddbindex.ApplyStats
	for i := 0; i < n; i += 10 {
		resp, err := h.Handle(ctx, lmEvent(t, recs[i:min(i+10, n)]))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		addStats(&first, batches[len(batches)-1].Stats)
	}
	require.Len(t, batches, (n+9)/10, "OnBatch saw every batch")
	require.Equal(t, n, first.Changes)
	require.Zero(t, first.Stale)
	want := fsWant(t, tb, fs.changes(t, "s0", 0, n)...)
	require.Equal(t, want, snapshot(t, tb))

	// Lambda may deliver a batch again (a retry after a timeout): stale.
	r, err := h.Apply(ctx, lmEvent(t, recs))
	require.NoError(t, err)
	require.Empty(t, r.Response.BatchItemFailures)
	require.Equal(t, BatchResult{Records: n, Stats: ddbindex.ApplyStats{Changes: n, Stale: first.Puts + first.Deletes}}, r)
	require.Equal(t, want, snapshot(t, tb), "nothing applied twice")

	// The answer's JSON, as Lambda reads it: a null list is full success.
	js, err := json.Marshal(r.Response)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures": null}`, string(js))
}

// lmFaultClient fails the index writes of one change (by its version) with
// err, while failing is set.
type lmFaultClient struct {
	ddbindex.Client
	version string
	err     error
	failing atomic.Bool
	calls   atomic.Int64 // writes of that version refused
}

func (f *lmFaultClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if v, ok := in.Item["_ver"].(*types.AttributeValueMemberN); ok && v.Value == f.version && f.failing.Load() {
		f.calls.Add(1)
		return nil, f.err
	}
	return f.Client.PutItem(ctx, in, o...)
}

// TestLambdaHandlerPartialFailure: a record whose index write fails (an
// error, or throttling that outlasts the retry budget) is reported with
// every record after it, and the records before it are applied; Lambda's
// redelivery from the reported record on, once the fault is gone, ends in
// the ground truth, the records applied before counting as stale.
func TestLambdaHandlerPartialFailure(t *testing.T) {
	t.Parallel()
	for _, fc := range []struct {
		name string
		err  error
	}{
		{"error", errors.New("injected failure")},
		{"throttling", &types.ProvisionedThroughputExceededException{Message: aws.String("injected throttling")}},
	} {
		for _, workers := range []int{1, 16} {
			t.Run(fmt.Sprintf("%s/%d workers", fc.name, workers), func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				tb, fs, recs := lmFake(t, 6)
				n, k := len(recs), 13
				ev := lmEvent(t, recs)
				fault := &lmFaultClient{Client: ddbtest.Client(t), version: ev.Records[k].Change.SequenceNumber, err: fc.err}
				fault.failing.Store(true)
				faulty, _ := cfIndexTables(t, tb, fault, "faulty")
				var retries atomic.Int64
				h := newLambdaHandler(t, faulty, func(o *LambdaOptions) {
					o.Workers, o.Retry = workers, fast
					o.Retry.OnRetry = func(string, int, error) { retries.Add(1) }
				})
				r, err := h.Apply(ctx, ev)
				require.NoError(t, err, "failures go in the answer")
				require.Equal(t, lmSeqs(ev)[k:], lmReported(r.Response), "the failed record and every record after it")
				require.Equal(t, n-k, r.Failed)
				require.ErrorIs(t, r.Err, fc.err)
				require.GreaterOrEqual(t, r.Stats.Changes, k, "the records before it are applied")
				if fc.name == "throttling" {
					require.Equal(t, int64(fast.MaxAttempts-1), retries.Load(), "retried within the budget, then reported")
				} else {
					require.Zero(t, retries.Load(), "an error no retry overcomes is not retried")
				}
				require.Positive(t, fault.calls.Load())
				if workers == 1 {
					require.Equal(t, k, r.Stats.Changes, "in order: nothing after the failed record was started")
					require.Equal(t, fsWant(t, tb, fs.changes(t, "s0", 0, k)...), snapshot(t, faulty), "exactly the records before it")
				}

				// Lambda delivers the rest again; the fault is gone.
				fault.failing.Store(false)
				again := lmRedeliver(t, ev, r.Response)
				require.Len(t, again.Records, n-k)
				r2, err := h.Apply(ctx, again)
				require.NoError(t, err)
				require.Empty(t, r2.Response.BatchItemFailures)
				require.Equal(t, n-k, r2.Stats.Changes)
				if workers == 1 {
					require.Zero(t, r2.Stats.Stale)
				}
				t.Logf("first delivery %+v; redelivery %+v", r.Stats, r2.Stats)
				require.Equal(t, fsWant(t, tb, fs.changes(t, "s0", 0, n)...), snapshot(t, faulty), "the ground truth")
			})
		}
	}
}

// TestLambdaHandlerPoisonRecord: a record that can never be applied (a
// REMOVE without its old image; an attribute value of no known type) is
// reported with the records after it, again at every delivery, until Lambda
// gives up on the batch (MaximumRetryAttempts; the on-failure destination
// gets its description). With OnPoison accepting it, it is skipped and the
// rest applied.
func TestLambdaHandlerPoisonRecord(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"REMOVE without its old image", "attribute value of no known type"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, fs := fsSetup(t)
			fs.shard("s0", "")
			live := map[int]*stTicket{}
			lsWork(t, fs, "s0", 0, 0, live)
			lsWork(t, fs, "s0", 0, 1, live)
			k := 10 // the poison record's place
			var poison string
			if kind == "REMOVE without its old image" {
				keys := fs.find("s0").recs[0].Dynamodb.Keys
				poison = fs.addRaw("s0", streamtypes.Record{EventName: streamtypes.OperationTypeRemove, Dynamodb: &streamtypes.StreamRecord{
					Keys: keys, StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
				}})
			} else {
				x := fsTicket(99)
				poison = fs.add(t, "s0", nil, &x) // its Lambda form is damaged below
			}
			lsWork(t, fs, "s0", 0, 2, live)
			lsWork(t, fs, "s0", 0, 3, live)
			fs.mu.Lock()
			recs := append([]streamtypes.Record(nil), fs.find("s0").recs...)
			fs.mu.Unlock()
			n := len(recs)
			ev := lmEvent(t, recs)
			require.Equal(t, poison, ev.Records[k].Change.SequenceNumber)
			if kind == "attribute value of no known type" {
				ev.Records[k].Change.NewImage["title"] = events.DynamoDBAttributeValue{} // holds no value
			}
			want := fsWant(t, tb, append(fs.changes(t, "s0", 0, k), fs.changes(t, "s0", k+1, n)...)...)

			h := newLambdaHandler(t, tb, func(o *LambdaOptions) { o.Retry, o.Workers = fast, 1 })
			r, err := h.Apply(ctx, ev)
			require.NoError(t, err)
			require.Equal(t, lmSeqs(ev)[k:], lmReported(r.Response))
			require.Equal(t, k, r.Stats.Changes)
			require.ErrorIs(t, r.Err, ddbindex.ErrPoisonRecord)
			require.ErrorIs(t, r.Err, ddbindex.ErrStreamRecord)
			var perr *PoisonRecordError
			require.ErrorAs(t, r.Err, &perr)
			require.Equal(t, poison, perr.SequenceNumber)
			require.Equal(t, lmARN, perr.StreamARN)
			// Every retry stops at it again.
			again := lmRedeliver(t, ev, r.Response)
			require.Len(t, again.Records, n-k)
			r2, err := h.Apply(ctx, again)
			require.NoError(t, err)
			require.Equal(t, lmReported(r.Response), lmReported(r2.Response))
			require.Zero(t, r2.Stats.Changes)

			// With OnPoison the record is handed over and skipped.
			var got []PoisonRecord
			skip := newLambdaHandler(t, tb, func(o *LambdaOptions) {
				o.Retry = fast
				o.OnPoison = func(_ context.Context, p PoisonRecord) error {
					got = append(got, p)
					return nil
				}
			})
			r3, err := skip.Apply(ctx, again)
			require.NoError(t, err)
			require.Empty(t, r3.Response.BatchItemFailures)
			require.Equal(t, 1, r3.Stats.Skipped)
			require.Equal(t, n-k-1, r3.Stats.Changes)
			require.Len(t, got, 1)
			require.Equal(t, poison, got[0].SequenceNumber)
			require.Equal(t, ev.Records[k].EventName, got[0].EventName)
			require.Contains(t, got[0].Keys, `PK="TEAM#T1"`)
			require.Equal(t, want, snapshot(t, tb))
		})
	}
}

// TestLambdaHandlerWholeBatchFailures: what cannot be reported record by
// record fails the whole batch (Lambda retries it, bisecting it when
// BisectBatchOnFunctionError is set): a nil Table; a record without a
// sequence number that was not applied. A batch whose invocation is about
// to time out applies nothing more and reports every record not applied.
func TestLambdaHandlerWholeBatchFailures(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _, recs := lmFake(t, 2)

	_, err := newLambdaHandler[stTicket](t, nil).Handle(ctx, lmEvent(t, recs))
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite)
	var nilHandler *LambdaHandler[stTicket]
	_, err = nilHandler.Handle(ctx, lmEvent(t, recs))
	require.ErrorIs(t, err, ddbindex.ErrInvalidWrite)

	ev := lmEvent(t, recs)
	ev.Records[3].Change.SequenceNumber = ""
	h := newLambdaHandler(t, tb, func(o *LambdaOptions) { o.Retry, o.Workers = fast, 1 })
	resp, err := h.Handle(ctx, ev)
	require.ErrorIs(t, err, ddbindex.ErrPoisonRecord)
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	require.Empty(t, resp.BatchItemFailures)

	// Less time left than StopBefore: nothing is applied, all is reported.
	fresh := stFresh(t, tb, "late")
	late, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r, err := newLambdaHandler(t, fresh, func(o *LambdaOptions) { o.Retry, o.StopBefore = fast, time.Hour }).Apply(late, lmEvent(t, recs))
	require.NoError(t, err)
	require.Equal(t, lmSeqs(lmEvent(t, recs)), lmReported(r.Response))
	require.ErrorIs(t, r.Err, context.DeadlineExceeded)
	require.Zero(t, r.Stats)
	for _, table := range snapshot(t, fresh) {
		require.Empty(t, table)
	}

	// The answer's JSON, as Lambda reads it.
	js, err := json.Marshal(events.DynamoDBEventResponse{BatchItemFailures: r.Response.BatchItemFailures[:1]})
	require.NoError(t, err)
	require.JSONEq(t, fmt.Sprintf(`{"batchItemFailures": [{"itemIdentifier": %q}]}`, r.Response.BatchItemFailures[0].ItemIdentifier), string(js))
}

// TestLambdaHandlerRealStream: the server's real stream records, as Lambda
// events of 25, through the handler with 16 workers: the ground truth; and
// the event of every record again, stale.
func TestLambdaHandlerRealStream(t *testing.T) {
	t.Parallel()
	stRequireStreams(t)
	ctx := t.Context()
	tb, _ := newTestTable[stTicket](t, stFixedNow)
	n := cfWorkload(t, tb, "T1", 150, 9)
	recs := records(t, tb)
	require.Len(t, recs, n)
	ref := stFresh(t, tb, "want")
	forward, err := ref.Apply(ctx, toChanges(t, recs))
	require.NoError(t, err)
	fresh := stFresh(t, tb, "lambda")
	h := newLambdaHandler(t, fresh)
	var total ddbindex.ApplyStats
	for i := 0; i < n; i += 25 {
		r, err := h.Apply(ctx, lmEvent(t, recs[i:min(i+25, n)]))
		require.NoError(t, err)
		require.Empty(t, r.Response.BatchItemFailures)
		addStats(&total, r.Stats)
	}
	require.Equal(t, n, total.Changes)
	require.Equal(t, forward.Puts+forward.Deletes, total.Puts+total.Deletes+total.Stale, "the same writes (a change may find a newer one's entry)")
	require.Equal(t, snapshot(t, ref), snapshot(t, fresh))
	r, err := h.Apply(ctx, lmEvent(t, recs))
	require.NoError(t, err)
	require.Equal(t, ddbindex.ApplyStats{Changes: n, Stale: forward.Puts + forward.Deletes}, r.Stats, "redelivered: all stale")
}

package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// psEvent has two index tables whose sort keys are times as epoch millis:
// by_at in the variable-width form, by_due in the 13-digit one. Both project
// everything.
type psEvent struct {
	_    ddbindex.TableSpec `ddbindex:"ps-events"`
	_    ddbindex.IndexSpec `ddbindex:"by_at,type=table"`
	_    ddbindex.IndexSpec `ddbindex:"by_due,type=table"`
	Feed string             `dynamodbav:"feed" ddbindex:"pk;by_at.pk;by_due.pk"`
	ID   string             `dynamodbav:"id" ddbindex:"sk"`
	At   time.Time          `dynamodbav:"at" ddbindex:"by_at.sk,format=unixms"`
	Due  time.Time          `dynamodbav:"due" ddbindex:"by_due.sk,format=unixms,width=13"`
	Body string             `dynamodbav:"body"`
}

// psItem is a base item as a raw attribute map: the poison ones cannot be
// written through Table.Put, which refuses them, but another writer of the
// base table can write them.
func psItem(id, at, due, body string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"feed": &types.AttributeValueMemberS{Value: "F"},
		"id":   &types.AttributeValueMemberS{Value: id},
		"at":   &types.AttributeValueMemberS{Value: at},
		"due":  &types.AttributeValueMemberS{Value: due},
		"body": &types.AttributeValueMemberS{Value: body},
	}
}

const (
	psAt  = "2026-12-02T12:00:00Z"
	psDue = "2026-12-09T12:00:00Z"
)

// psItemBytes is DynamoDB's size of an item of string attributes: the
// lengths of the names and of the values.
func psItemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + len(v.(*types.AttributeValueMemberS).Value)
	}
	return n
}

// psPoisons are base items that DynamoDB stores, and whose index entries can
// never be written.
var psPoisons = map[string]func() map[string]types.AttributeValue{
	// The base sort key fits DynamoDB's 1,024 bytes; an index table's sort
	// key, which appends it to the time, does not.
	"index sort key over 1024 bytes": func() map[string]types.AttributeValue {
		return psItem(strings.Repeat("k", 1020), psAt, psDue, "long key")
	},
	// format=unixms holds milliseconds: 500 ns more would be dropped, and the
	// key would sort equal to its neighbour.
	"sub-millisecond unixms time": func() map[string]types.AttributeValue {
		return psItem("sub-ms", "2026-12-02T12:00:00.0000005Z", psDue, "too fine")
	},
	// The zero time is -62135596800000 ms: no 13-digit form.
	"zero time in a width=13 field": func() map[string]types.AttributeValue {
		return psItem("zero", psAt, "0001-01-01T00:00:00Z", "zero due")
	},
	// The base item is 10 bytes under DynamoDB's 400 KB; its index entry,
	// with its own key and version, is over it: DynamoDB refuses the write
	// (ValidationException).
	"index entry over 400 KB": func() map[string]types.AttributeValue {
		item := psItem("big", psAt, psDue, "")
		item["body"] = &types.AttributeValueMemberS{Value: strings.Repeat("b", 400*1024-10-psItemBytes(item))}
		return item
	},
}

// TestConsumerPoisonRecords: a record that can never be applied stops the
// consumer, by default, with an error naming it, every record before it
// applied and checkpointed, none after it applied, and the next pass stops
// at the same record (never silently). With OnPoison, the hook receives the
// record, the consumer skips it and applies the records after it. (The
// consumer used to return the bare cause, checkpointing nothing of the batch,
// and had no way past the record.)
func TestConsumerPoisonRecords(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams)
	for name, poison := range psPoisons {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, c := newTestTable[psEvent](t)
			sc := ddbtest.StreamsClient(t)
			items := []map[string]types.AttributeValue{
				psItem("a", psAt, psDue, "first"),
				psItem("b", psAt, psDue, "second"),
				poison(),
				psItem("c", psAt, psDue, "third"),
				psItem("d", psAt, psDue, "fourth"),
			}
			for _, it := range items {
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.TableName()), Item: it})
				require.NoError(t, err, "the base table takes every item")
			}
			recs := records(t, tb)
			require.Len(t, recs, len(items))
			seq := func(i int) string { return aws.ToString(recs[i].Dynamodb.SequenceNumber) }
			shard := func(cp *MemoryCheckpoints) (string, string) {
				id, seq := onlyCheckpoint(t, cp)
				require.NotEmpty(t, id, "one shard checkpointed")
				return id, seq
			}
			ids := func(index string) []string {
				var out []string
				for _, e := range indexItems(t, tb, index, true, "F") {
					out = append(out, e.ID)
				}
				slices.Sort(out)
				return out
			}
			poisonID := items[2]["id"].(*types.AttributeValueMemberS).Value

			// Default policy, one record at a time.
			cp := &MemoryCheckpoints{}
			cons := newConsumer(t, tb, sc, cp, with(ConsumerOptions{Workers: 1, Retry: fast}))
			for pass := range 2 {
				st, err := cons.Poll(ctx)
				var perr *PoisonRecordError
				require.ErrorAs(t, err, &perr, "pass %d", pass)
				require.ErrorIs(t, err, ddbindex.ErrPoisonRecord)
				require.Equal(t, "DDBX-701", ddbindex.Code(err))
				require.Equal(t, seq(2), perr.SequenceNumber)
				require.Equal(t, "INSERT", perr.EventName)
				require.Contains(t, perr.Keys, fmt.Sprintf("id=%q", poisonID))
				require.NotNil(t, perr.Err)
				id, at := shard(cp)
				require.Equal(t, id, perr.ShardID)
				require.Equal(t, seq(1), at, "checkpointed up to the record before")
				for _, s := range []string{"stream record " + seq(2), "INSERT", "shard " + id, "OnPoison"} {
					require.ErrorContains(t, err, s)
				}
				if pass == 0 {
					t.Logf("%v", err)
					require.Equal(t, 2, st.Changes)
				} else {
					require.Zero(t, st.Changes, "the second pass starts after the checkpoint, at the same record")
				}
				require.Equal(t, []string{"a", "b"}, ids("by_at"), "the records after it are not applied")
				require.Equal(t, []string{"a", "b"}, ids("by_due"))
			}

			// Default policy, in parallel: the same stop and checkpoint (the
			// records after the poison one may have been applied: into
			// index tables of its own).
			pcp := &MemoryCheckpoints{}
			_, err := newConsumer(t, psFresh(t, tb), sc, pcp, with(ConsumerOptions{Workers: 16, Retry: fast})).Poll(ctx)
			var perr *PoisonRecordError
			require.ErrorAs(t, err, &perr)
			require.Equal(t, seq(2), perr.SequenceNumber)
			_, at := shard(pcp)
			require.Equal(t, seq(1), at)

			// Skip and report.
			var seen []PoisonRecord
			skip := newConsumer(t, tb, sc, cp, with(ConsumerOptions{Retry: fast, OnPoison: func(_ context.Context, r PoisonRecord) error {
				seen = append(seen, r)
				return nil
			}}))
			st, err := skip.Poll(ctx)
			require.NoError(t, err)
			require.Equal(t, ddbindex.ApplyStats{Changes: 2, Puts: 4, Skipped: 1}, st)
			require.Len(t, seen, 1)
			require.Equal(t, seq(2), seen[0].SequenceNumber)
			require.Equal(t, seq(2), aws.ToString(seen[0].Record.Dynamodb.SequenceNumber), "the record itself, for a dead-letter store")
			require.Error(t, seen[0].Err)
			_, at = shard(cp)
			require.Equal(t, seq(4), at)
			require.Equal(t, []string{"a", "b", "c", "d"}, ids("by_at"))
			require.Equal(t, []string{"a", "b", "c", "d"}, ids("by_due"))
			st, err = skip.Poll(ctx)
			require.NoError(t, err)
			require.Zero(t, st, "skipped once, past the checkpoint")
		})
	}
}

// psFresh returns a Table for tb's base table with new, empty index
// tables.
func psFresh(t *testing.T, tb *ddbindex.Table[psEvent]) *ddbindex.Table[psEvent] {
	t.Helper()
	fresh, _ := freshIndexes(t, tb, "ps-events", "parallel")
	return fresh
}

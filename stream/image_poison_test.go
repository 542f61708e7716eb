package stream

import (
	"context"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// ipPoisons are stream records of stTicket whose images do not fit the
// model: each must be a poison record (DDBX-701) wrapping its cause, never
// a silent write or a silent skip.
var ipPoisons = []struct {
	name     string
	event    streamtypes.OperationType
	old, new func(img map[string]types.AttributeValue) map[string]types.AttributeValue // from an image of the ticket; nil: no image
	cause    error
	want     string
}{
	{"an index component stored as a number", streamtypes.OperationTypeInsert, nil, ipSet("owner", ipN("7")), ddbindex.ErrInvalidWrite, "owner is stored as N, want S"},
	{"a base key component stored as a number", streamtypes.OperationTypeInsert, nil, ipSet("team", ipN("1")), ddbindex.ErrInvalidWrite, "team is stored as N, want S"},
	{"a time stored as a bool", streamtypes.OperationTypeModify, ipSame, ipSet("created", &types.AttributeValueMemberBOOL{Value: true}), ddbindex.ErrInvalidWrite, "created is stored as BOOL, want S or N"},
	{"an old image with an index component stored as a number", streamtypes.OperationTypeRemove, ipSet("owner", ipN("7")), nil, ddbindex.ErrInvalidWrite, "owner is stored as N, want S"},
	{"a new image without its base key", streamtypes.OperationTypeInsert, nil, ipSet("PK", nil), ddbindex.ErrInvalidWrite, "lacks the base key attribute PK"},
	{"an INSERT with an empty new image", streamtypes.OperationTypeInsert, nil, ipEmpty, ddbindex.ErrStreamRecord, "INSERT record"},
	{"a MODIFY with an empty new image", streamtypes.OperationTypeModify, ipSame, ipEmpty, ddbindex.ErrStreamRecord, "MODIFY record"},
	{"a REMOVE with an empty old image", streamtypes.OperationTypeRemove, ipEmpty, nil, ddbindex.ErrStreamRecord, "REMOVE record"},
}

func ipN(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

func ipSet(attr string, av types.AttributeValue) func(map[string]types.AttributeValue) map[string]types.AttributeValue {
	return func(img map[string]types.AttributeValue) map[string]types.AttributeValue {
		img = maps.Clone(img)
		if av == nil {
			delete(img, attr)
		} else {
			img[attr] = av
		}
		return img
	}
}

func ipSame(img map[string]types.AttributeValue) map[string]types.AttributeValue { return img }

func ipEmpty(map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{}
}

// ipStream returns a fake stream of good records around one poison record
// (at index k), and the changes of the good ones.
func ipStream(t *testing.T, tb *ddbindex.Table[stTicket], kind int) (fs *fsStream, k int, good []ddbindex.Change) {
	t.Helper()
	fs = newFSStream(tb)
	fs.shard("s0", "")
	for i := range 3 {
		it := fsTicket(2 * i)
		fs.add(t, "s0", nil, &it)
	}
	p := ipPoisons[kind]
	img := fsMarshal(t, tb, fsTicket(50)) // even: it has an owner
	sr := &streamtypes.StreamRecord{StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		Keys: map[string]streamtypes.AttributeValue{"PK": fsStreamAV(img["PK"]), "SK": fsStreamAV(img["SK"])}}
	if p.old != nil {
		sr.OldImage = fsStreamImage(p.old(img))
	}
	if p.new != nil {
		sr.NewImage = fsStreamImage(p.new(img))
	}
	fs.addRaw("s0", streamtypes.Record{EventName: p.event, Dynamodb: sr})
	for i := 3; i < 5; i++ {
		it := fsTicket(2 * i)
		fs.add(t, "s0", nil, &it)
	}
	return fs, 3, append(fs.changes(t, "s0", 0, 3), fs.changes(t, "s0", 4, 6)...)
}

// TestConsumerImagesThatDoNotFit: a record whose image does not fit the
// model (a key attribute of the wrong type, a base key missing, an image
// its event needs empty) stops the consumer with a *PoisonRecordError
// (DDBX-701) wrapping the cause (ErrInvalidWrite or ErrStreamRecord, naming
// what is wrong), checkpointed up to the record before; OnPoison skips it
// and the records after it are applied. (Such records used to be applied
// as no change at all, or written with a Number's digits as a string key.)
func TestConsumerImagesThatDoNotFit(t *testing.T) {
	t.Parallel()
	for kind, p := range ipPoisons {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, _ := fsSetup(t)
			fs, k, good := ipStream(t, tb, kind)
			seqs := fs.seqs("s0")

			cp := &MemoryCheckpoints{}
			st, err := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Workers: 1, Retry: fast})).Poll(ctx)
			var perr *PoisonRecordError
			require.ErrorAs(t, err, &perr)
			require.ErrorIs(t, err, ddbindex.ErrPoisonRecord)
			require.Equal(t, "DDBX-701", ddbindex.Code(err))
			require.ErrorIs(t, perr.Err, p.cause)
			require.ErrorContains(t, err, p.want)
			require.Equal(t, seqs[k], perr.SequenceNumber)
			require.Equal(t, string(p.event), perr.EventName)
			require.Equal(t, k, st.Changes)
			require.Equal(t, seqs[k-1], checkpointOf(t, cp, "s0"))

			var seen []PoisonRecord
			skip := newConsumer(t, tb, fs, cp, with(ConsumerOptions{Retry: fast, OnPoison: func(_ context.Context, r PoisonRecord) error {
				seen = append(seen, r)
				return nil
			}}))
			st, err = skip.Poll(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, st.Skipped)
			require.Equal(t, len(seqs)-k-1, st.Changes)
			require.Len(t, seen, 1)
			require.Equal(t, seqs[k], seen[0].SequenceNumber)
			require.ErrorIs(t, seen[0].Err, p.cause)
			require.Equal(t, seqs[len(seqs)-1], checkpointOf(t, cp, "s0"))
			require.Equal(t, fsWant(t, tb, good...), snapshot(t, tb), "the good records, and nothing of the poison one")
		})
	}
}

// TestLambdaHandlerImagesThatDoNotFit: the same records, delivered to the
// Lambda handler (through the event's JSON form, which drops an empty
// image), are poison records: reported with the records after them, and
// skipped with OnPoison.
func TestLambdaHandlerImagesThatDoNotFit(t *testing.T) {
	t.Parallel()
	for kind, p := range ipPoisons {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tb, _ := fsSetup(t)
			fs, k, good := ipStream(t, tb, kind)
			fs.mu.Lock()
			recs := append([]streamtypes.Record(nil), fs.find("s0").recs...)
			fs.mu.Unlock()
			ev := lmEvent(t, recs)

			r, err := newLambdaHandler(t, tb, func(o *LambdaOptions) { o.Retry, o.Workers = fast, 1 }).Apply(ctx, ev)
			require.NoError(t, err)
			require.Equal(t, lmSeqs(ev)[k:], lmReported(r.Response))
			require.Equal(t, k, r.Stats.Changes)
			var perr *PoisonRecordError
			require.ErrorAs(t, r.Err, &perr)
			require.Equal(t, "DDBX-701", ddbindex.Code(r.Err))
			require.ErrorIs(t, r.Err, p.cause)
			require.ErrorContains(t, r.Err, p.want)
			require.Equal(t, ev.Records[k].Change.SequenceNumber, perr.SequenceNumber)

			var seen []PoisonRecord
			skip := newLambdaHandler(t, tb, func(o *LambdaOptions) {
				o.Retry = fast
				o.OnPoison = func(_ context.Context, r PoisonRecord) error {
					seen = append(seen, r)
					return nil
				}
			})
			r, err = skip.Apply(ctx, lmRedeliver(t, ev, r.Response))
			require.NoError(t, err)
			require.Empty(t, r.Response.BatchItemFailures)
			require.Equal(t, 1, r.Stats.Skipped)
			require.Len(t, seen, 1)
			require.ErrorIs(t, seen[0].Err, p.cause)
			require.Equal(t, fsWant(t, tb, good...), snapshot(t, tb))
		})
	}
}

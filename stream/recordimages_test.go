package stream_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/stream"
)

// TestRecordImagesMatchTheirEvent: DynamoDB sends no old image with an
// INSERT, no new image with a REMOVE, and images of the item the record's
// keys name. A record otherwise is malformed (a REMOVE with a new image
// would leave the removed item's index entries in place), from DynamoDB
// Streams and from Lambda alike.
func TestRecordImagesMatchTheirEvent(t *testing.T) {
	t.Parallel()
	img := func(id, s string) map[string]string { return map[string]string{"id": id, "s": s} }
	keys := map[string]string{"id": "1"}
	for _, tc := range []struct {
		name            string
		event           string
		keys, old, new_ map[string]string
		want            string
	}{
		{"a REMOVE with a new image", "REMOVE", keys, img("1", "a"), img("1", "a"), "REMOVE record 100 has a new image"},
		{"an INSERT with an old image", "INSERT", keys, img("1", "a"), img("1", "b"), "INSERT record 100 has an old image"},
		{"a MODIFY of two items", "MODIFY", keys, img("1", "a"), img("2", "b"), "its new image is not of the item its keys name (key attribute id differs)"},
		{"a MODIFY of another item", "MODIFY", keys, img("2", "a"), img("2", "b"), "its old image is not of the item its keys name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := stream.ChangeFromRecord(riRecord(tc.event, tc.keys, tc.old, tc.new_))
			require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
			require.ErrorContains(t, err, tc.want)
			_, err = stream.ChangeFromLambdaRecord(riLambda(tc.event, tc.keys, tc.old, tc.new_))
			require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("well-formed records", func(t *testing.T) {
		t.Parallel()
		for _, r := range []streamtypes.Record{
			riRecord("INSERT", keys, nil, img("1", "a")),
			riRecord("MODIFY", keys, img("1", "a"), img("1", "b")),
			riRecord("REMOVE", keys, img("1", "a"), nil),
		} {
			_, err := stream.ChangeFromRecord(r)
			require.NoError(t, err, r.EventName)
		}
	})
}

func riRecord(event string, keys, old, new_ map[string]string) streamtypes.Record {
	conv := func(m map[string]string) map[string]streamtypes.AttributeValue {
		if m == nil {
			return nil
		}
		out := map[string]streamtypes.AttributeValue{}
		for k, v := range m {
			out[k] = &streamtypes.AttributeValueMemberS{Value: v}
		}
		return out
	}
	return streamtypes.Record{EventName: streamtypes.OperationType(event), Dynamodb: &streamtypes.StreamRecord{
		SequenceNumber: aws.String("100"), Keys: conv(keys), OldImage: conv(old), NewImage: conv(new_), StreamViewType: "NEW_AND_OLD_IMAGES"}}
}

func riLambda(event string, keys, old, new_ map[string]string) events.DynamoDBEventRecord {
	conv := func(m map[string]string) map[string]events.DynamoDBAttributeValue {
		if m == nil {
			return nil
		}
		out := map[string]events.DynamoDBAttributeValue{}
		for k, v := range m {
			out[k] = events.NewStringAttribute(v)
		}
		return out
	}
	return events.DynamoDBEventRecord{EventName: event, Change: events.DynamoDBStreamRecord{
		SequenceNumber: "100", Keys: conv(keys), OldImage: conv(old), NewImage: conv(new_), StreamViewType: "NEW_AND_OLD_IMAGES"}}
}

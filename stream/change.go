package stream

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/av"
)

// This file converts stream records into Changes: one adapter for DynamoDB
// Streams records (service/dynamodbstreams), one for AWS Lambda stream
// events.

// ChangeFromRecord converts a DynamoDB Streams record into a Change whose
// version is the record's sequence number. The stream must carry both images
// (NEW_AND_OLD_IMAGES). A malformed record (no sequence number, an image its
// event needs missing or empty, an unknown event or attribute type, an
// attribute value DynamoDB could not have sent: a Number that is not a
// number, a nil member) is an error matching [ddbindex.ErrStreamRecord]
// that names the attribute. Images convert with the SDK's converter
// (attributevalue.FromDynamoDBStreamsMap); Numbers keep their text.
func ChangeFromRecord(r streamtypes.Record) (ddbindex.Change, error) {
	if r.Dynamodb == nil || r.Dynamodb.SequenceNumber == nil || *r.Dynamodb.SequenceNumber == "" {
		return ddbindex.Change{}, fmt.Errorf("%w: a record without a sequence number", ddbindex.ErrStreamRecord)
	}
	sr := r.Dynamodb
	c := ddbindex.Change{Version: aws.ToString(sr.SequenceNumber)}
	var err error
	if c.Old, err = streamImage(sr.OldImage); err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: old image: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	if c.New, err = streamImage(sr.NewImage); err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: new image: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	keys, err := streamImage(sr.Keys)
	if err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: keys: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	return c, checkImages(string(r.EventName), c, keys, string(sr.StreamViewType))
}

// ChangeFromLambdaRecord converts an AWS Lambda DynamoDB stream event record
// into a Change whose version is the record's sequence number. Its errors
// are those of [ChangeFromRecord], and a value of no type (the zero
// events.DynamoDBAttributeValue, on which aws-lambda-go's accessors panic)
// is one too.
func ChangeFromLambdaRecord(r events.DynamoDBEventRecord) (ddbindex.Change, error) {
	if r.Change.SequenceNumber == "" {
		return ddbindex.Change{}, fmt.Errorf("%w: a record without a sequence number", ddbindex.ErrStreamRecord)
	}
	c := ddbindex.Change{Version: r.Change.SequenceNumber}
	var err error
	if c.Old, err = lambdaImage(r.Change.OldImage); err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: old image: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	if c.New, err = lambdaImage(r.Change.NewImage); err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: new image: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	keys, err := lambdaImage(r.Change.Keys)
	if err != nil {
		return ddbindex.Change{}, fmt.Errorf("%w: record %s: keys: %w", ddbindex.ErrStreamRecord, c.Version, err)
	}
	return c, checkImages(r.EventName, c, keys, r.Change.StreamViewType)
}

// ApplyLambdaEvent applies every record of a Lambda DynamoDB stream event to
// t's index tables, in order: the body of a Lambda handler that keeps index
// tables in step. A malformed record fails the whole event before any write
// (an error matching [ddbindex.ErrStreamRecord]), as does a nil t
// ([ddbindex.ErrInvalidWrite]); otherwise it returns what
// [ddbindex.Table.Apply] returns. Lambda retries a failed batch; Apply is
// idempotent, so the records applied before a failure count as Stale then.
// optFns are applied to every request Apply sends, as the SDK's own per-call
// options.
func ApplyLambdaEvent[T any](ctx context.Context, t *ddbindex.Table[T], ev events.DynamoDBEvent, optFns ...func(*dynamodb.Options)) (ddbindex.ApplyStats, error) {
	if t == nil {
		return ddbindex.ApplyStats{}, errNilTable
	}
	changes := make([]ddbindex.Change, 0, len(ev.Records))
	for _, r := range ev.Records {
		c, err := ChangeFromLambdaRecord(r)
		if err != nil {
			return ddbindex.ApplyStats{}, err
		}
		changes = append(changes, c)
	}
	return t.Apply(ctx, changes, optFns...)
}

var errNilTable = fmt.Errorf("%w: stream: a nil *ddbindex.Table", ddbindex.ErrInvalidWrite)

// checkImages checks that a change holds the images its event needs, and
// only those (an empty image is none): an INSERT has no old image, a REMOVE
// no new one, since DynamoDB sends none. A record that has one anyway is
// not a change of one item that the index writes could follow: a REMOVE
// with a new image would leave the deleted item's entries in place. Each
// image holds the record's keys (the base key of the item it changed), when
// the record has them (DynamoDB always sends them): a MODIFY whose images
// are of two items is refused.
func checkImages(event string, c ddbindex.Change, keys map[string]types.AttributeValue, view string) error {
	switch {
	case event != "INSERT" && event != "MODIFY" && event != "REMOVE":
		return fmt.Errorf("%w: record %s: unknown stream event %q", ddbindex.ErrStreamRecord, c.Version, event)
	case event == "INSERT" && len(c.New) == 0, event == "MODIFY" && (len(c.New) == 0 || len(c.Old) == 0), event == "REMOVE" && len(c.Old) == 0:
		return fmt.Errorf("%w: %s record %s lacks an image; the stream view type must be NEW_AND_OLD_IMAGES (it is %q)", ddbindex.ErrStreamRecord, event, c.Version, view)
	case event == "INSERT" && len(c.Old) > 0:
		return fmt.Errorf("%w: INSERT record %s has an old image: an inserted item had none", ddbindex.ErrStreamRecord, c.Version)
	case event == "REMOVE" && len(c.New) > 0:
		return fmt.Errorf("%w: REMOVE record %s has a new image: a removed item has none", ddbindex.ErrStreamRecord, c.Version)
	}
	for _, img := range []struct {
		which string
		img   map[string]types.AttributeValue
	}{{"old", c.Old}, {"new", c.New}} {
		if len(img.img) == 0 {
			continue
		}
		for name, k := range keys {
			// An image without the key attribute does not fit the model:
			// IndexWrites reports that (ErrInvalidWrite).
			if v, ok := img.img[name]; ok && !av.Equal(v, k) {
				return fmt.Errorf("%w: %s record %s: its %s image is not of the item its keys name (key attribute %s differs)", ddbindex.ErrStreamRecord, event, c.Version, img.which, name)
			}
		}
	}
	return nil
}

// streamImage converts a DynamoDB Streams image with the SDK's converter,
// checked by av (a nil member or a Number that is not a number is an
// error, not a panic or a value passed on).
func streamImage(img map[string]streamtypes.AttributeValue) (map[string]types.AttributeValue, error) {
	return av.FromStreamImage(img)
}

// lambdaImage converts a Lambda event image: into a DynamoDB Streams image
// by the package's one converter of aws-lambda-go's values
// (streamImageFromLambda), then as a Streams image is.
func lambdaImage(img map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	si, err := streamImageFromLambda(img)
	if err != nil {
		return nil, err
	}
	return streamImage(si)
}

package stream

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// Unit tests of the stream record adapters (change.go): no server.

// chStreamAll and chLambdaAll hold one attribute of every type, nested.
func chStreamAll() map[string]streamtypes.AttributeValue {
	return map[string]streamtypes.AttributeValue{
		"s":    &streamtypes.AttributeValueMemberS{Value: "text"},
		"n":    &streamtypes.AttributeValueMemberN{Value: "-12.5"},
		"b":    &streamtypes.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &streamtypes.AttributeValueMemberBOOL{Value: true},
		"null": &streamtypes.AttributeValueMemberNULL{Value: true},
		"ss":   &streamtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &streamtypes.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":   &streamtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{
			&streamtypes.AttributeValueMemberS{Value: "x"},
			&streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.AttributeValueMemberN{Value: "3"}}},
		}},
		"m": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
			"inner": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
				"deep": &streamtypes.AttributeValueMemberBOOL{Value: false},
			}},
			"list": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.AttributeValueMemberB{Value: []byte("z")}}},
		}},
	}
}

func chLambdaAll() map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		"s":    events.NewStringAttribute("text"),
		"n":    events.NewNumberAttribute("-12.5"),
		"b":    events.NewBinaryAttribute([]byte{0, 1, 2}),
		"bool": events.NewBooleanAttribute(true),
		"null": events.NewNullAttribute(),
		"ss":   events.NewStringSetAttribute([]string{"a", "b"}),
		"ns":   events.NewNumberSetAttribute([]string{"1", "2"}),
		"bs":   events.NewBinarySetAttribute([][]byte{{1}, {2}}),
		"l": events.NewListAttribute([]events.DynamoDBAttributeValue{
			events.NewStringAttribute("x"),
			events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewNumberAttribute("3")}),
		}),
		"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"inner": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"deep": events.NewBooleanAttribute(false)}),
			"list":  events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewBinaryAttribute([]byte("z"))}),
		}),
	}
}

func chWantAll() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "text"},
		"n":    &types.AttributeValueMemberN{Value: "-12.5"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "3"}}},
		}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"inner": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"deep": &types.AttributeValueMemberBOOL{Value: false},
			}},
			"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberB{Value: []byte("z")}}},
		}},
	}
}

func chStreamRecord(event, seq, view string, old, new map[string]streamtypes.AttributeValue) streamtypes.Record {
	return streamtypes.Record{EventName: streamtypes.OperationType(event), Dynamodb: &streamtypes.StreamRecord{
		SequenceNumber: aws.String(seq), StreamViewType: streamtypes.StreamViewType(view), OldImage: old, NewImage: new,
	}}
}

func chLambdaRecord(event, seq, view string, old, new map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventName: event, Change: events.DynamoDBStreamRecord{
		SequenceNumber: seq, StreamViewType: view, OldImage: old, NewImage: new,
	}}
}

func TestChangeFromRecord(t *testing.T) {
	t.Parallel()
	const view = "NEW_AND_OLD_IMAGES"
	for _, tc := range []struct {
		event    string
		old, new bool
	}{{"INSERT", false, true}, {"MODIFY", true, true}, {"REMOVE", true, false}} {
		var old, new map[string]streamtypes.AttributeValue
		var wantOld, wantNew map[string]types.AttributeValue
		if tc.old {
			old, wantOld = chStreamAll(), chWantAll()
		}
		if tc.new {
			new, wantNew = chStreamAll(), chWantAll()
		}
		c, err := ChangeFromRecord(chStreamRecord(tc.event, "1234567890123456789012", view, old, new))
		require.NoError(t, err, tc.event)
		require.Equal(t, ddbindex.Change{Old: wantOld, New: wantNew, Version: "1234567890123456789012"}, c, tc.event)
	}

	// Errors.
	_, err := ChangeFromRecord(streamtypes.Record{EventName: "INSERT"})
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "no Dynamodb part")
	_, err = ChangeFromRecord(streamtypes.Record{EventName: "INSERT", Dynamodb: &streamtypes.StreamRecord{}})
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "no sequence number")
	keys := map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "k"}}
	for _, ev := range []string{"INSERT", "MODIFY", "REMOVE"} {
		r := chStreamRecord(ev, "5", "KEYS_ONLY", nil, nil)
		r.Dynamodb.Keys = keys
		_, err = ChangeFromRecord(r)
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "%s with KEYS_ONLY", ev)
		require.ErrorContains(t, err, "NEW_AND_OLD_IMAGES")
		require.ErrorContains(t, err, "KEYS_ONLY")
	}
	_, err = ChangeFromRecord(chStreamRecord("MODIFY", "5", "NEW_IMAGE", nil, chStreamAll()))
	require.ErrorContains(t, err, "lacks an image", "MODIFY without its old image")
	_, err = ChangeFromRecord(chStreamRecord("UPSERT", "5", view, nil, chStreamAll()))
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	require.ErrorContains(t, err, `unknown stream event "UPSERT"`)
	_, err = ChangeFromRecord(chStreamRecord("", "5", view, nil, nil))
	require.ErrorContains(t, err, "unknown stream event")

	bad := map[string]streamtypes.AttributeValue{"x": &streamtypes.UnknownUnionMember{Tag: "ZZ"}}
	_, err = ChangeFromRecord(chStreamRecord("INSERT", "5", view, nil, bad))
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	require.ErrorContains(t, err, "attribute x")
	_, err = ChangeFromRecord(chStreamRecord("REMOVE", "5", view, bad, nil))
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	for name, nested := range map[string]streamtypes.AttributeValue{
		"in a list": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.UnknownUnionMember{Tag: "ZZ"}}},
		"in a map":  &streamtypes.AttributeValueMemberM{Value: bad},
	} {
		_, err = ChangeFromRecord(chStreamRecord("INSERT", "5", view, nil, map[string]streamtypes.AttributeValue{"x": nested}))
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, name)
	}
}

func TestChangeFromLambdaRecord(t *testing.T) {
	t.Parallel()
	const view = "NEW_AND_OLD_IMAGES"
	for _, tc := range []struct {
		event    string
		old, new bool
	}{{"INSERT", false, true}, {"MODIFY", true, true}, {"REMOVE", true, false}} {
		var old, new map[string]events.DynamoDBAttributeValue
		var wantOld, wantNew map[string]types.AttributeValue
		if tc.old {
			old, wantOld = chLambdaAll(), chWantAll()
		}
		if tc.new {
			new, wantNew = chLambdaAll(), chWantAll()
		}
		c, err := ChangeFromLambdaRecord(chLambdaRecord(tc.event, "900000000000000000001", view, old, new))
		require.NoError(t, err, tc.event)
		require.Equal(t, ddbindex.Change{Old: wantOld, New: wantNew, Version: "900000000000000000001"}, c, tc.event)
	}
	_, err := ChangeFromLambdaRecord(chLambdaRecord("INSERT", "", view, nil, chLambdaAll()))
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "no sequence number")
	for _, ev := range []string{"INSERT", "MODIFY", "REMOVE"} {
		r := chLambdaRecord(ev, "5", "KEYS_ONLY", nil, nil)
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("k")}
		_, err = ChangeFromLambdaRecord(r)
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, "%s with KEYS_ONLY", ev)
		require.ErrorContains(t, err, "KEYS_ONLY")
	}
	_, err = ChangeFromLambdaRecord(chLambdaRecord("TTL", "5", view, chLambdaAll(), nil))
	require.ErrorContains(t, err, `unknown stream event "TTL"`)
}

// TestChangeFromLambdaJSON reads a Lambda event as Lambda delivers it (JSON),
// including the NULL and nested forms.
func TestChangeFromLambdaJSON(t *testing.T) {
	t.Parallel()
	const js = `{"Records":[{"eventID":"1","eventName":"MODIFY","eventSource":"aws:dynamodb","dynamodb":{
		"SequenceNumber":"111","StreamViewType":"NEW_AND_OLD_IMAGES",
		"OldImage":{"a":{"S":"x"},"n":{"NULL":true}},
		"NewImage":{"a":{"S":"y"},"m":{"M":{"l":{"L":[{"N":"1"},{"B":"AAE="}]}}}}}}]}`
	var ev events.DynamoDBEvent
	require.NoError(t, json.Unmarshal([]byte(js), &ev))
	c, err := ChangeFromLambdaRecord(ev.Records[0])
	require.NoError(t, err)
	require.Equal(t, ddbindex.Change{
		Old: map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberNULL{Value: true}},
		New: map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "y"}, "m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1"}, &types.AttributeValueMemberB{Value: []byte{0, 1}}}},
		}}},
		Version: "111",
	}, c)
}

// TestApplyLambdaEventRejectsBadRecord: a malformed record fails the whole
// event before any write (the table's client is nil: a request would
// panic).
func TestApplyLambdaEventRejectsBadRecord(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[stTicket](nil)
	require.NoError(t, err)
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		chLambdaRecord("INSERT", "1", "NEW_AND_OLD_IMAGES", nil, chLambdaAll()),
		chLambdaRecord("INSERT", "2", "NEW_AND_OLD_IMAGES", nil, nil),
	}}
	st, err := ApplyLambdaEvent(t.Context(), tb, ev)
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	require.Equal(t, "DDBX-702", ddbindex.Code(err))
	require.Zero(t, st)
	_, err = ApplyLambdaEvent[stTicket](t.Context(), nil, ev)
	require.Error(t, err, "a nil table")
}

// TestChangeFromLambdaRecordInvalidValue: aws-lambda-go's accessors panic on
// a value that is not what it claims (the zero DynamoDBAttributeValue says
// it is Binary and holds nothing); the adapter returns an error instead.
func TestChangeFromLambdaRecordInvalidValue(t *testing.T) {
	t.Parallel()
	img := map[string]events.DynamoDBAttributeValue{"a": {}}
	_, err := ChangeFromLambdaRecord(chLambdaRecord("INSERT", "5", "NEW_AND_OLD_IMAGES", nil, img))
	require.ErrorIs(t, err, ddbindex.ErrStreamRecord)
	require.ErrorContains(t, err, "new image")
	require.ErrorContains(t, err, "invalid Lambda attribute value")
}

// TestChangeFromRecordsMalformed: a value DynamoDB could not have sent (a
// Number that is not a number, a nil member, a Lambda value of no type),
// at the top of an image or deep in it, fails the record with an error
// that names where it is, from either adapter, and never panics.
func TestChangeFromRecordsMalformed(t *testing.T) {
	t.Parallel()
	const view = "NEW_AND_OLD_IMAGES"
	for name, c := range map[string]struct {
		img  map[string]streamtypes.AttributeValue
		want string
	}{
		"number": {map[string]streamtypes.AttributeValue{"n": &streamtypes.AttributeValueMemberN{Value: "12abc"}},
			`attribute n: "12abc" is not a number`},
		"number set": {map[string]streamtypes.AttributeValue{"ns": &streamtypes.AttributeValueMemberNS{Value: []string{"1", "NaN"}}},
			`"NaN" in a number set is not a number`},
		"nil member": {map[string]streamtypes.AttributeValue{"s": (*streamtypes.AttributeValueMemberS)(nil)},
			"attribute s: a nil"},
		"nil in a list in a map": {map[string]streamtypes.AttributeValue{"m": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
			"l": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{nil}}}}},
			"attribute m.l[0]: no value"},
	} {
		_, err := ChangeFromRecord(chStreamRecord("INSERT", "5", view, nil, c.img))
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, name)
		require.ErrorContains(t, err, "new image", name)
		require.ErrorContains(t, err, c.want, name)
	}
	for name, c := range map[string]struct {
		img  map[string]events.DynamoDBAttributeValue
		want string
	}{
		"number": {map[string]events.DynamoDBAttributeValue{"n": events.NewNumberAttribute("1.2.3")},
			`attribute n: "1.2.3" is not a number`},
		"number set": {map[string]events.DynamoDBAttributeValue{"ns": events.NewNumberSetAttribute([]string{"Infinity"})},
			`"Infinity" in a number set is not a number`},
		"empty value in a list": {map[string]events.DynamoDBAttributeValue{"l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("a"), {}})},
			"attribute l[1]: invalid Lambda attribute value"},
		"empty value in a map": {map[string]events.DynamoDBAttributeValue{"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": {}})},
			"attribute m.k: invalid Lambda attribute value"},
	} {
		_, err := ChangeFromLambdaRecord(chLambdaRecord("REMOVE", "5", view, c.img, nil))
		require.ErrorIs(t, err, ddbindex.ErrStreamRecord, name)
		require.ErrorContains(t, err, "old image", name)
		require.ErrorContains(t, err, c.want, name)
	}
}

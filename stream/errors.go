package stream

import (
	"fmt"
	"slices"
	"strings"

	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/ddbindex/ddbindex"
)

// This file holds the stream package's typed errors: PoisonRecordError and
// GapError.

// PoisonRecord is a stream record whose index writes can never be made,
// however often they are retried: the record is malformed
// ([ddbindex.ErrStreamRecord]: an image its event needs missing or empty),
// its images do not fit the model (a key attribute stored as the wrong
// type, a base key attribute missing, a time finer than its key format
// holds, a number too wide for its field), a key value is over DynamoDB's size limit
// ([ddbindex.ErrInvalidWrite]), or DynamoDB refuses the entry as invalid (an
// item over 400 KB: a ValidationException).
type PoisonRecord struct {
	StreamARN      string
	ShardID        string
	SequenceNumber string
	EventName      string             // INSERT, MODIFY or REMOVE
	Keys           string             // the base item's key (the record's Keys), such as {PK="TEAM#T1", SK="TICKET#7"}
	Record         streamtypes.Record // the record itself, to store for repair
	Err            error              // why it cannot be applied
}

// maxKeysInMessage bounds the key an error message shows (keys may have
// 3 KB).
const maxKeysInMessage = 200

// PoisonRecordError is a consumer stopped at a poison record. It matches
// [ddbindex.ErrPoisonRecord] (code DDBX-701), and unwraps to the cause
// (PoisonRecord.Err). Every record of the shard before it is applied and
// checkpointed.
type PoisonRecordError struct {
	PoisonRecord
}

// Error names the record and its shard, the cause, and what to do.
func (e *PoisonRecordError) Error() string {
	if e == nil {
		return ddbindex.ErrPoisonRecord.Error()
	}
	keys := e.Keys
	switch {
	case keys == "":
		keys = "an item without a readable key"
	case len(keys) > maxKeysInMessage:
		keys = strings.ToValidUTF8(keys[:maxKeysInMessage], "") + "…"
	}
	return fmt.Sprintf("ddbindex: stream record %s (%s of %s) %s cannot be applied: %v; the records before it are applied and checkpointed: fix the cause and restart, or set ConsumerOptions.OnPoison to skip and report such records [%s]",
		e.SequenceNumber, e.EventName, keys, recordSource(e.StreamARN, e.ShardID), e.Err, e.Code())
}

// Is makes PoisonRecordError match [ddbindex.ErrPoisonRecord].
func (e *PoisonRecordError) Is(target error) bool { return target == ddbindex.ErrPoisonRecord }

// Unwrap returns the cause.
func (e *PoisonRecordError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Code returns ddbindex.ErrPoisonRecord's code, not the cause's, so that
// [ddbindex.Code] gives it.
func (e *PoisonRecordError) Code() string { return ddbindex.Code(ddbindex.ErrPoisonRecord) }

// Gap is a range of a shard's records that the stream trimmed (after 24
// hours) before the consumer applied them: the records after AfterSequence,
// up to the oldest record the shard still holds.
type Gap struct {
	StreamARN string
	ShardID   string
	// AfterSequence is the shard's checkpoint: every record up to it was
	// applied. "" when none of the shard's records was.
	AfterSequence string
}

// GapError is a consumer stopped at a [Gap]. It matches
// [ddbindex.ErrStreamGap] (code DDBX-700), and unwraps to DynamoDB's
// TrimmedDataAccessException.
type GapError struct {
	Gap
	Err error
}

// Error names the shard and the range that may be lost, and what to do.
func (e *GapError) Error() string {
	if e == nil {
		return ddbindex.ErrStreamGap.Error()
	}
	after := "from the shard's start"
	if e.AfterSequence != "" {
		after = "after sequence number " + e.AfterSequence
	}
	return fmt.Sprintf("ddbindex: shard %s of stream %s no longer holds records the consumer had not applied: the records %s, up to the oldest one the shard still holds, were trimmed, so index tables may miss their changes. Repair the index tables (rebuild them with Backfill while the consumer runs; Compare shows differences), then clear the shard's checkpoint or set ConsumerOptions.OnGap to read on from the oldest record [%s]: %v",
		e.ShardID, e.StreamARN, after, e.Code(), e.Err)
}

// Is makes GapError match [ddbindex.ErrStreamGap].
func (e *GapError) Is(target error) bool { return target == ddbindex.ErrStreamGap }

// Unwrap returns the cause.
func (e *GapError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Code returns ddbindex.ErrStreamGap's code, so that [ddbindex.Code] gives
// it.
func (e *GapError) Code() string { return ddbindex.Code(ddbindex.ErrStreamGap) }

// keyString renders a record's Keys for messages, as ddbindex renders keys:
// {name=value, ...} sorted by name, a String quoted, a Number as its
// digits, Binary as hex. It is "" for no keys.
func keyString(key map[string]streamtypes.AttributeValue) string {
	if len(key) == 0 {
		return ""
	}
	names := make([]string, 0, len(key))
	for k := range key {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		switch v := key[n].(type) {
		case *streamtypes.AttributeValueMemberS:
			if v != nil {
				fmt.Fprintf(&b, "%q", v.Value)
				continue
			}
		case *streamtypes.AttributeValueMemberN:
			if v != nil {
				b.WriteString(v.Value)
				continue
			}
		case *streamtypes.AttributeValueMemberB:
			if v != nil {
				fmt.Fprintf(&b, "0x%x", v.Value)
				continue
			}
		}
		fmt.Fprintf(&b, "%T", key[n])
	}
	b.WriteByte('}')
	return b.String()
}

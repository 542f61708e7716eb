package ddbindex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/throttle"
)

// The sentinel errors. Every error ddbindex returns matches exactly one of
// them with errors.Is, and [Code] gives that sentinel's stable code;
// docs/errors.md says, per code, why it happens, what to do, and
// the HTTP status it maps to. This holds for the stream package's errors
// too. The only errors that match two are those that report another error
// as their cause: a stream.PoisonRecordError also matches the sentinel of
// its cause, and a consumer pass that fails on a record and then on its
// checkpoint returns both (errors.Join); Code gives the first. A stream
// consumer's Run returns its context's error as it is once the context is
// done.
var (
	// ErrDeclaration: a model's ddbindex tags break a rule, or a
	// constructor of this module (New, NewReadOnly, and those of packages
	// stream, migrate and schema) is given options it cannot honour: a nil
	// option function, a value negative, NaN or out of range (code
	// DDBX-100). Raised at start-up, before any request: fix the
	// declaration or the options; the error names what is wrong.
	ErrDeclaration = &codedError{"DDBX-100", "invalid declaration or options"}

	// ErrInvalidQuery: a query cannot be translated: a condition on a
	// component that does not exist, a value of the wrong type, begins_with on
	// a number, a consistent read on a GSI, BETWEEN with its bounds reversed;
	// a read on a nil or zero *Table (not made by New or NewReadOnly), a nil
	// per-call option function, schema.Check without a table, a client or
	// an option function (code DDBX-200). Raised before any request.
	ErrInvalidQuery = &codedError{"DDBX-200", "invalid query"}

	// ErrInvalidKey: [EncodeKey], [KeyPrefix], [DecodeKey] or [SplitKey]
	// refused a key: a component of an unsupported type, a value with no key
	// text (NaN, a string that is not valid UTF-8, a KeyText method that
	// failed), or a key text that the codec could not have written (code
	// DDBX-201). Inside an operation the same failures report the
	// operation's own sentinel: ErrInvalidWrite for an item's key,
	// ErrInvalidQuery for a condition's value, ErrInvalidCursor for a
	// cursor's, ErrMalformedItem for a stored key.
	ErrInvalidKey = &codedError{"DDBX-201", "invalid key"}

	// ErrInvalidCursor: a cursor failed strict decoding (code DDBX-300).
	// Cursors come from clients: map it to HTTP 400. Raised before any request.
	ErrInvalidCursor = &codedError{"DDBX-300", "invalid cursor"}

	// ErrNoProgress: DynamoDB answered with a position that did not advance,
	// so reading on would loop forever (code DDBX-400).
	ErrNoProgress = &codedError{"DDBX-400", "query position did not advance"}

	// ErrCapReached: a per-call cap on requests or read units stopped the
	// read (code DDBX-401). The page returned with it is valid: the items read
	// so far and a cursor that continues after them.
	ErrCapReached = &codedError{"DDBX-401", "per-call cap reached"}

	// ErrNotFound: Get found no live item with the key: none is stored, or
	// it is a tombstone (code DDBX-404).
	ErrNotFound = &codedError{"DDBX-404", "item not found"}

	// ErrSchemaMismatch: the live tables do not match the declarations
	// (code DDBX-500). The error is package schema's *schema.Error, which
	// lists every mismatch (schema.Check), every gap schema.Prepare cannot
	// close, or the step it could not finish.
	ErrSchemaMismatch = &codedError{"DDBX-500", "live schema does not match the declarations"}

	// ErrConflict: a conditional write lost: the item was changed, moved,
	// deleted or created concurrently, or an index entry is newer than the
	// change being applied (code DDBX-600).
	ErrConflict = &codedError{"DDBX-600", "write condition failed"}

	// ErrKeyChange: an Update would change a key in a way it cannot: a base
	// key attribute or component (DynamoDB refuses; use Move), a derived
	// index key attribute or a derived key component otherwise than to a
	// value, or an index-table key component in write-through mode (use Put)
	// (code DDBX-601).
	ErrKeyChange = &codedError{"DDBX-601", "key attributes cannot change in place"}

	// ErrTooManyActions: a transaction would exceed DynamoDB's 100 actions
	// (code DDBX-602).
	ErrTooManyActions = &codedError{"DDBX-602", "transaction exceeds 100 actions"}

	// ErrOutcomeUnknown: a write failed after DynamoDB may have applied it
	// (a timeout, a reset connection, a 5xx answer), and nothing tells
	// whether it did: an Update that adds to a number or sets an operand
	// (arithmetic, list_append), which the SDK does not send again, and
	// whose write token the item does not hold when read back; a Put at
	// version 0, not written through, whose resend then found a tombstone,
	// or no item where it was creating over one: the item it created may
	// have been deleted or moved since (code DDBX-605). [IsTransient] is
	// false: sending it again may apply it twice. Read the item to see
	// whether the change is there.
	ErrOutcomeUnknown = &codedError{"DDBX-605", "write outcome unknown"}

	// ErrInvalidWrite: a write that cannot be made as asked: a move to the
	// same key, an item without its key values or with a key DynamoDB would
	// refuse, a Number DynamoDB would refuse anywhere in an item or an
	// update's values, a malformed version, migrate.Backfill without a table
	// or a client, schema.CreateTables or schema.Prepare without a table or
	// a client; a write on a nil or zero *Table (not made by New or
	// NewReadOnly), a nil per-call option function (code DDBX-603). Raised
	// before any request.
	ErrInvalidWrite = &codedError{"DDBX-603", "invalid write"}

	// ErrUnsupported: an operation that the table or index cannot do as
	// declared or configured: a write on a table made by [NewReadOnly],
	// migrate.Backfill of the base table, Update of a model
	// whose index tables are written through, a request of a table made with
	// a nil client, CreateTables, CheckSchema or Prepare given a nil client
	// (code DDBX-604). Raised before any request.
	ErrUnsupported = &codedError{"DDBX-604", "operation not supported by the table or index"}

	// ErrStreamGap: the stream no longer holds records the consumer had not
	// applied yet (DynamoDB Streams keeps records for 24 hours), so index
	// tables may miss changes (code DDBX-700). Backfill the index tables,
	// then move the checkpoint on. The stream package's *GapError matches it.
	ErrStreamGap = &codedError{"DDBX-700", "stream records were trimmed before they were applied"}

	// ErrPoisonRecord: a stream record whose index writes can never be made,
	// however often it is retried (code DDBX-701). The error names the
	// record; a consumer stops on it unless told to skip and report it. The
	// stream package's *PoisonRecordError matches it.
	ErrPoisonRecord = &codedError{"DDBX-701", "stream record cannot be applied"}

	// ErrStreamRecord: a malformed stream record: one without a sequence
	// number, without the images its event needs (the stream's view type is
	// not NEW_AND_OLD_IMAGES), or with an unknown event or attribute type
	// (code DDBX-702). It can never be applied, so a consumer treats it as a
	// poison record.
	ErrStreamRecord = &codedError{"DDBX-702", "malformed stream record"}

	// ErrMalformedItem: a stored item that a read, migrate.Backfill or Update cannot
	// use: it does not unmarshal into the model, or its key attributes (or
	// the components an Update reads to compute a derived key) do not decode
	// as the declarations say; a malformed backfill checkpoint (code
	// DDBX-800). The data, or a declaration
	// changed under it, needs repair; retrying does not help.
	ErrMalformedItem = &codedError{"DDBX-800", "stored item does not fit the model"}

	// ErrDynamoDB: a call to DynamoDB, DynamoDB Streams, or the checkpoint
	// store of a stream consumer or of migrate.Backfill failed: throttling, a 5xx
	// answer, a connection error, a canceled context, or a request the
	// service refused (code DDBX-900). The error is an [*Error], which names the call and
	// unwraps to the SDK's error; [IsTransient] tells whether a later
	// attempt may succeed.
	ErrDynamoDB = &codedError{"DDBX-900", "DynamoDB call failed"}
)

// codedError is a sentinel with a stable code.
type codedError struct {
	code string
	msg  string
}

func (e *codedError) Error() string { return "ddbindex: " + e.msg + " [" + e.code + "]" }

// Code returns the sentinel's code, such as "DDBX-300".
func (e *codedError) Code() string { return e.code }

// Code returns the stable code (such as "DDBX-300") of the first error in
// err's chain that has one, or "" when there is none. Every sentinel and
// every error type of the package has a Code method, so for an error that
// ddbindex returned this is the code of the sentinel it matches.
func Code(err error) string {
	var c interface{ Code() string }
	if errors.As(err, &c) {
		return c.Code()
	}
	return ""
}

// Error is an error of the package that carries details beyond its
// sentinel. Sentinel is the sentinel it matches with errors.Is (and whose
// code Code returns); the other fields are set as that sentinel's kind of
// failure has them, and are zero otherwise:
//
//   - ErrDeclaration: Model, Field and Index name what a broken rule
//     concerns; Reason says what is wrong and what to do.
//   - ErrInvalidQuery: Index, Reason, and Err for an underlying cause.
//   - ErrInvalidCursor: Reason says which check failed; Err an underlying
//     cause.
//   - ErrCapReached: Op is the cap ("MaxRequests" or "MaxReadUnits"),
//     Limit its value, Used what the call used when it stopped, and Cursor
//     continues after the items returned with the error.
//   - ErrConflict: Op is the write ("put", "delete", "move" or "update");
//     Failed lists the conditions that failed, each with what was found and
//     what to do when DynamoDB (or a read) told, e.g. "the item is at
//     version 3; found it live at version 4: another write came first;
//     re-read it (now version 4) and apply your change to that copy"; Err is
//     the DynamoDB error, if any (the SDK's).
//   - ErrOutcomeUnknown: Op is the write ("update", "put"); Reason says why the
//     outcome is unknown and what to do; Err is the DynamoDB error (the
//     SDK's).
//   - ErrDynamoDB: a failed call to DynamoDB, DynamoDB Streams, or the
//     checkpoint store of a stream consumer or of migrate.Backfill. Op is
//     the call: an API operation such as "Query", "PutItem" or
//     "GetRecords"; "Checkpoint" and "SetCheckpoint" for a stream
//     consumer's checkpoint store; "LoadBackfillCheckpoint" and
//     "SaveBackfillCheckpoint" for migrate.Backfill's (the DynamoDB store's
//     own requests report theirs: "Query", "PutItem"). A call Backfill did
//     not send because its context ended while it waited for the write-rate
//     limit names the write it was waiting to send. Table is the table the
//     request named ("" for TransactWriteItems, which may span tables, and
//     the stream operations), Index the GSI or LSI, if any. Err is the
//     error the call returned, or what made its answer unusable (a
//     DescribeStream without a description, shards whose parents form a
//     cycle, a table that never became active within the wait): errors.As
//     still finds the SDK's types (smithy.APIError,
//     *types.ResourceNotFoundException, ...), and [IsTransient] tells
//     whether a later attempt may succeed. Throttles, for a call DynamoDB
//     throttled, are the throttling reasons it gave, each distinct reason
//     and resource once: the reason (such as
//     IndexWriteKeyRangeThroughputExceeded) and the ARN of the table or
//     index it throttled, which for a write to a base table may be one of
//     its GSIs (Index names only the index a request read); they cover
//     every attempt of the call, the SDK's retries included. A
//     transaction cancelled for throttling has one entry per throttled
//     action, with reason "ThrottlingError" and the action's table name
//     as its resource (DynamoDB gives no more). A throttle without reasons
//     has one empty entry. The message names them, e.g. "PutItem on
//     Orders failed [DDBX-900]: throttled: IndexWriteKeyRangeThroughputExceeded
//     on Orders (index ByStatus): ...".
//
// errors.As(err, &e) with e an *Error finds the outermost one; test
// e.Sentinel (or use errors.Is) to tell the kinds apart.
type Error struct {
	Sentinel     error
	Op           string
	Model, Field string
	Table, Index string
	Reason       string
	Failed       []string
	Limit, Used  float64
	Cursor       string
	Throttles    []types.ThrottlingReason
	Err          error
}

// Error renders the failure with its code, e.g.
// "ddbindex: invalid cursor: bad signature [DDBX-300]".
func (e *Error) Error() string {
	if e == nil {
		return "ddbindex: <nil>"
	}
	code := e.Code()
	switch e.Sentinel {
	case ErrDeclaration:
		var b strings.Builder
		b.WriteString("ddbindex: ")
		b.WriteString(e.Model)
		if e.Field != "" {
			b.WriteString(".")
			b.WriteString(e.Field)
		}
		if e.Index != "" {
			b.WriteString(" (index ")
			b.WriteString(e.Index)
			b.WriteString(")")
		}
		if e.Model != "" || e.Field != "" || e.Index != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Reason)
		b.WriteString(" [" + code + "]")
		return b.String()
	case ErrInvalidQuery:
		return fmt.Sprintf("ddbindex: invalid query on %s: %s [%s]", indexLabel(e.Index), e.Reason, code)
	case ErrInvalidCursor:
		s := "ddbindex: invalid cursor: " + e.Reason
		if e.Err != nil {
			s += ": " + e.Err.Error()
		}
		return s + " [" + code + "]"
	case ErrCapReached:
		return fmt.Sprintf("ddbindex: %s cap of %g reached (used %g); continue with the returned cursor [%s]", e.Op, e.Limit, e.Used, code)
	case ErrConflict:
		what := "a condition failed"
		if len(e.Failed) > 0 {
			what = "failed: " + strings.Join(e.Failed, "; ")
		}
		return fmt.Sprintf("ddbindex: %s conflict: %s [%s]", e.Op, what, code)
	case ErrDynamoDB:
		on := ""
		switch {
		case e.Table != "" && e.Index != "":
			on = " on " + e.Table + " (index " + e.Index + ")"
		case e.Table != "":
			on = " on " + e.Table
		}
		why := ""
		if len(e.Throttles) > 0 {
			why = "throttled: "
			if l := throttle.Labels(e.Throttles); l != "throttled" {
				why += l + ": "
			}
		}
		return fmt.Sprintf("%s%s failed [%s]: %s%v", e.Op, on, code, why, e.Err)
	}
	s := "ddbindex: "
	if e.Sentinel != nil {
		s = e.Sentinel.Error() + ": "
	}
	s += e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is the error's sentinel.
func (e *Error) Is(target error) bool { return e != nil && e.Sentinel != nil && target == e.Sentinel }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Code returns the sentinel's code, such as "DDBX-300" ("" without one).
func (e *Error) Code() string {
	if e == nil {
		return ""
	}
	if c, ok := e.Sentinel.(*codedError); ok {
		return c.code
	}
	return ""
}

func indexLabel(name string) string {
	if name == "" {
		return "the base table"
	}
	return "index " + name
}

// queryErr builds an ErrInvalidQuery *Error; the first error among args
// becomes its cause, so errors.Is sees through it.
func queryErr(index, format string, args ...any) error {
	e := &Error{Sentinel: ErrInvalidQuery, Index: index, Reason: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
			break
		}
	}
	return e
}

func cursorErr(err error, format string, args ...any) error {
	return &Error{Sentinel: ErrInvalidCursor, Reason: fmt.Sprintf(format, args...), Err: err}
}

// asKind returns the first *Error in err's chain whose sentinel is kind,
// or nil.
func asKind(err error, kind error) *Error {
	for err != nil {
		if e, ok := err.(*Error); ok && e != nil && e.Sentinel == kind {
			return e
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if e := asKind(x, kind); e != nil {
					return e
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// callErr wraps a non-nil error of a call in an ErrDynamoDB *Error; nil stays nil.
// table and index are the request's names (nil when it has none);
// throttles the reasons of the call's throttled attempts (see watch in
// calls.go), distinct ones once. errReadOnly and errNoClient, a read-only
// table's client refusing a write and a nil client's stand-in refusing a
// request without sending it, are no failed call and stay as they are.
func callErr(op string, table, index *string, err error, throttles ...types.ThrottlingReason) error {
	if err == nil || err == errReadOnly || err == errNoClient {
		return err
	}
	e := &Error{Sentinel: ErrDynamoDB, Op: op, Err: err, Throttles: distinctThrottles(nil, throttles)}
	if table != nil {
		e.Table = *table
	}
	if index != nil {
		e.Index = *index
	}
	return e
}

// sdkError returns the error a call returned, without the *Error around
// it: for errors that report an SDK error as their cause but are not a
// failed call (a conflict), so that they match one sentinel.
func sdkError(err error) error {
	if ce := asKind(err, ErrDynamoDB); ce != nil {
		return ce.Err
	}
	return err
}

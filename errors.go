package ddbindex

import (
	"errors"
	"fmt"
)

// The sentinel errors. Every error ddbindex returns matches one of them with
// errors.Is, and [Code] gives its stable code; the README's error reference
// says, per code, why it happens and what to do.
var (
	// ErrDeclaration: a model's ddbindex tags break a rule (code DDBX-100).
	// Fix the declaration; the error names the struct, field and rule.
	ErrDeclaration = &codedError{"DDBX-100", "invalid model declaration"}

	// ErrInvalidQuery: a query cannot be translated: a condition on a
	// component that does not exist, a value of the wrong type, begins_with on
	// a number, a consistent read on a GSI, BETWEEN with its bounds reversed
	// (code DDBX-200). Raised before any request.
	ErrInvalidQuery = &codedError{"DDBX-200", "invalid query"}

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

	// ErrSchemaMismatch: the live tables do not match the declarations
	// (code DDBX-500). The error lists every mismatch.
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

	// ErrInvalidWrite: a write that cannot be made as asked: a move to the
	// same key, an item without its key values, a malformed version
	// (code DDBX-603). Raised before any request.
	ErrInvalidWrite = &codedError{"DDBX-603", "invalid write"}

	// ErrStreamGap: the stream no longer holds records the consumer had not
	// applied yet (DynamoDB Streams keeps records for 24 hours), so index
	// tables may miss changes (code DDBX-700). Backfill the index tables,
	// then move the checkpoint on.
	ErrStreamGap = &codedError{"DDBX-700", "stream records were trimmed before they were applied"}

	// ErrPoisonRecord: a stream record whose index writes can never be made,
	// however often it is retried (code DDBX-701). The error names the
	// record; a consumer stops on it unless told to skip and report it.
	ErrPoisonRecord = &codedError{"DDBX-701", "stream record cannot be applied"}
)

// codedError is a sentinel with a stable code.
type codedError struct {
	code string
	msg  string
}

// Error implements the error interface.
func (e *codedError) Error() string { return "ddbindex: " + e.msg + " [" + e.code + "]" }

// Code returns the stable code (such as "DDBX-300") of the ddbindex error in
// err's chain, or "" when there is none.
func Code(err error) string {
	// The stream errors come first: they wrap the error that made them,
	// which may carry a code of its own (a poison record's ErrInvalidWrite).
	for _, s := range []*codedError{ErrStreamGap, ErrPoisonRecord, ErrDeclaration, ErrInvalidQuery,
		ErrInvalidCursor, ErrNoProgress, ErrCapReached, ErrSchemaMismatch, ErrConflict, ErrKeyChange,
		ErrTooManyActions, ErrInvalidWrite} {
		if errors.Is(err, s) {
			return s.code
		}
	}
	return ""
}

// IsInvalidCursor reports whether err is a cursor a client sent that failed
// decoding: the caller's cue for HTTP 400.
func IsInvalidCursor(err error) bool { return errors.Is(err, ErrInvalidCursor) }

// IsCapReached reports whether err says a per-call cap stopped a read early.
func IsCapReached(err error) bool { return errors.Is(err, ErrCapReached) }

// IsConflict reports whether err is a lost conditional write.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// QueryError is an invalid query, with the index it was for. It matches
// [ErrInvalidQuery].
type QueryError struct {
	Index  string
	Reason string
	Err    error // an underlying cause, if any
}

// Error implements the error interface.
func (e *QueryError) Error() string {
	return fmt.Sprintf("ddbindex: invalid query on %s: %s [%s]", indexLabel(e.Index), e.Reason, ErrInvalidQuery.code)
}

// Is makes QueryError match ErrInvalidQuery.
func (e *QueryError) Is(target error) bool { return target == ErrInvalidQuery }

// Unwrap returns the underlying cause.
func (e *QueryError) Unwrap() error { return e.Err }

func indexLabel(name string) string {
	if name == "" {
		return "the base table"
	}
	return "index " + name
}

// queryErr builds a *QueryError; the first error among args becomes its
// cause, so errors.Is sees through it.
func queryErr(index, format string, args ...any) error {
	e := &QueryError{Index: index, Reason: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
			break
		}
	}
	return e
}

// CursorError is a cursor that failed strict decoding. It matches
// [ErrInvalidCursor]; Reason says which check failed.
type CursorError struct {
	Reason string
	Err    error // an underlying cause, if any
}

// Error implements the error interface.
func (e *CursorError) Error() string {
	s := "ddbindex: invalid cursor: " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + " [" + ErrInvalidCursor.code + "]"
}

// Is makes CursorError match ErrInvalidCursor.
func (e *CursorError) Is(target error) bool { return target == ErrInvalidCursor }

// Unwrap returns the underlying cause.
func (e *CursorError) Unwrap() error { return e.Err }

func cursorErr(err error, format string, args ...any) error {
	return &CursorError{Reason: fmt.Sprintf(format, args...), Err: err}
}

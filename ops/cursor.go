package ops

import (
	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/bridge"
)

// This file is the exported face of the cursor diagnostic: the decoding and
// every check are the core's (package ddbindex's cursor.go, reached through
// internal/bridge), so that one place owns the cursor format.

// CursorInfo is what a cursor holds, as [InspectCursor] decodes it.
type CursorInfo struct {
	// Index is the logical index the cursor was minted for ("" for the
	// base table).
	Index string
	// Desc reports that a descending query minted it.
	Desc bool
	// Signed reports that it carries an HMAC that one of the table's
	// Options.CursorKeys verified (with no keys, cursors are unsigned).
	Signed bool
	// Position is the last item of the page that minted it, where the next
	// page continues: the fields of the index key, then those of the base
	// key, in the order the cursor holds them.
	Position []CursorField
	// Next is the first live item after the page, which the page fill read
	// ahead: the next page starts just before it, without reading again the
	// tombstones between. Nil when the cursor has none (Options.PlainCursors,
	// or a page whose read-ahead found nothing).
	Next []CursorField
	// Through reports that Next is not a live item but the last position
	// the page's reads evaluated: everything after Position up to and
	// including it was read dead, and the next page starts right after it.
	Through bool
}

// CursorField is one field of a cursor's position.
type CursorField struct {
	// Attr is the field's attribute name.
	Attr string
	// Text is its key text as the cursor carries it: the canonical text of
	// the value, as [ddbindex.EncodeKey] writes a component before escaping.
	Text string
	// Value is the text read back into the field's Go type (a string,
	// an integer, a time.Time, ...); nil for a KeyTexter type whose pointer
	// is no KeyTextParser.
	Value any
}

// InspectCursor decodes a cursor as a query of t's index named index (""
// for the base table) would, and returns what it holds: for operators and
// tools that explain a cursor a client sent (the "cursor inspect"
// command). It sends nothing.
//
// It makes every check that does not depend on the query: the size cap,
// the encoding, the signature (Options.CursorKeys), the version, the index,
// each field's name, order and declared form, that the position makes a
// start key for each form of the index, and that the next position, when
// there is one, follows the position (a query whose filter differs from
// the one that minted the cursor ignores the next position, and does not
// check it). What depends on the query, its partition, sort condition and
// order, a query's Page, All or Explain checks with the cursor given to
// After. A cursor that fails a check is a [*ddbindex.Error] (matching
// [ddbindex.ErrInvalidCursor]) whose Reason says which; an index the model
// does not declare, or a nil or zero t, is an error matching
// [ddbindex.ErrInvalidQuery].
func InspectCursor[T any](t *ddbindex.Table[T], index, cursor string) (*CursorInfo, error) {
	c, err := bridge.InspectCursor(t, index, cursor)
	if err != nil {
		return nil, err
	}
	return &CursorInfo{Index: c.Index, Desc: c.Desc, Signed: c.Signed, Position: cursorFields(c.Position), Next: cursorFields(c.Next), Through: c.Through}, nil
}

// cursorFields copies the core's fields; nil stays nil.
func cursorFields(fs []bridge.CursorField) []CursorField {
	if fs == nil {
		return nil
	}
	out := make([]CursorField, len(fs))
	for i, f := range fs {
		out[i] = CursorField{Attr: f.Attr, Text: f.Text, Value: f.Value}
	}
	return out
}

package bridge

// Cursor is what a cursor holds, as the core decodes it: the fields
// package ops presents as ops.CursorInfo (the core owns the cursor format
// and its checks, in cursor.go).
type Cursor struct {
	// Index is the logical index the cursor was minted for ("" for the
	// base table).
	Index string
	// Desc reports that a descending query minted it.
	Desc bool
	// Signed reports that one of the table's cursor keys verified it.
	Signed bool
	// Position is the last item of the page that minted it: the fields of
	// the index key, then those of the base key, in the cursor's order.
	Position []CursorField
	// Next is the first live item after the page, read ahead, or, with
	// Through, the last position the page's reads evaluated; nil when the
	// cursor has none.
	Next []CursorField
	// Through reports that Next is the last position evaluated, everything
	// after Position up to and including it having been read dead.
	Through bool
}

// CursorField is one field of a cursor's position.
type CursorField struct {
	// Attr is the field's attribute name.
	Attr string
	// Text is the canonical key text the cursor carries.
	Text string
	// Value is Text read back into the field's Go type; nil when the type
	// cannot parse its key text.
	Value any
}

// InspectCursor decodes cursor as a query of the named index of table
// would, with every check that does not depend on the query; table must be
// a *ddbindex.Table[T] (else an error matching ddbindex.ErrInvalidQuery).
// A refused cursor is the core's *ddbindex.Error matching
// ErrInvalidCursor, an undeclared index one matching ErrInvalidQuery. It
// sends nothing. Package ddbindex sets it in an init function (cursor.go);
// package ops calls it.
var InspectCursor func(table any, index, cursor string) (*Cursor, error)

package bridge

import "context"

// The kinds of mismatch, in the order a comparison looks for them: the
// values of migrate.MismatchKind.
const (
	// MismatchTombstone: one form returned an item that the base table
	// holds as deleted, or not at all.
	MismatchTombstone = "tombstone-leaked"
	// MismatchMissing: the shadow form lacks an item the serving form
	// returned.
	MismatchMissing = "missing"
	// MismatchExtra: the shadow form returned an item the serving form did
	// not, or the same item with other values.
	MismatchExtra = "extra"
	// MismatchOrder: the same items, in another order.
	MismatchOrder = "order"
	// MismatchPageBoundary: the same items in the same order, but one form
	// says more items follow and the other that the partition ends.
	MismatchPageBoundary = "page-boundary"
)

// Mismatch is how a page a read served differed from the same page read on
// the index's other form, as the core finds it. The index and the two
// forms are the ReadEvent's (its Index, Form and Other).
type Mismatch struct {
	// Kind is one of the Mismatch constants.
	Kind string
	// Query renders the query the comparison read (partition, condition,
	// order, limit, cursor).
	Query string
	// Keys are the base keys of the items concerned, as rendered in errors.
	Keys []string
	// Detail says what differed, for a person.
	Detail string
}

// Comparer returns the comparison of the page a ddbindex.ReadEvent
// describes, or nil when ev is not a ReadEvent a Table made. The
// comparison reads the same page on the other form and returns how it
// differs from the page served, or nil when they are equal; with recheck
// it reads the page again on both forms. An error is the error of a read.
// Package ddbindex sets it in an init function (observe.go); package
// migrate's Shadows calls it.
var Comparer func(ev any) func(ctx context.Context, recheck bool) (*Mismatch, error)

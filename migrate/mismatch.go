package migrate

import (
	"context"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/bridge"
)

// MismatchKind says how a page read on one form of an index differed from
// the same page read on its other form.
type MismatchKind string

// The kinds of mismatch, in the order a comparison looks for them.
const (
	// MismatchTombstone: one form returned an item that the base table
	// holds as deleted, or not at all: a stale entry that reads must skip.
	MismatchTombstone MismatchKind = bridge.MismatchTombstone
	// MismatchMissing: the shadow form lacks an item the serving form returned.
	MismatchMissing MismatchKind = bridge.MismatchMissing
	// MismatchExtra: the shadow form returned an item the serving form did
	// not, or the same item with other values.
	MismatchExtra MismatchKind = bridge.MismatchExtra
	// MismatchOrder: the same items, in another order.
	MismatchOrder MismatchKind = bridge.MismatchOrder
	// MismatchPageBoundary: the same items in the same order, but one form
	// says more items follow and the other that the partition ends.
	MismatchPageBoundary MismatchKind = bridge.MismatchPageBoundary
)

// Mismatch is a difference between the two forms of an index that
// [Shadows] found on a page a read served, as [ShadowOptions].OnMismatch
// receives it.
type Mismatch struct {
	// Kind says how the forms differed.
	Kind MismatchKind
	// Index is the logical index; Served the form that served the read,
	// Shadow the form it was compared with.
	Index          string
	Served, Shadow ddbindex.Kind
	// Query renders the read's query (partition, condition, order, limit).
	Query string
	// Keys are the base keys of the items concerned, as rendered in errors.
	Keys []string
	// Detail says what differed, for a person.
	Detail string
}

// comparison is how Shadows compares the page ev describes with the same
// page on the other form: nil when ev has no comparison (a ReadEvent a
// Table did not make). The comparison itself is the core's (ReadEvent's,
// reached through internal/bridge): it reads the page on the other form
// (and with recheck, on both forms again), and returns nil when the forms
// agree. Tests of this package replace it.
var comparison = func(ev ddbindex.ReadEvent) func(ctx context.Context, recheck bool) (*Mismatch, error) {
	compare := bridge.Comparer(ev)
	if compare == nil {
		return nil
	}
	return func(ctx context.Context, recheck bool) (*Mismatch, error) {
		m, err := compare(ctx, recheck)
		if err != nil || m == nil {
			return nil, err
		}
		return &Mismatch{Kind: MismatchKind(m.Kind), Index: ev.Index, Served: ev.Form, Shadow: ev.Other,
			Query: m.Query, Keys: m.Keys, Detail: m.Detail}, nil
	}
}

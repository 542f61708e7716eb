package ddbindex

import (
	"context"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// This file holds the two seams through which a migration between the
// forms of an index (keep= in its IndexSpec) reaches the reads: a Router
// picks the form that serves a read, a ReadObserver sees every page read
// from an index that keeps two forms. Package migrate implements both
// (migrate.Routes, migrate.Router, migrate.Shadows). A Table without them,
// and every read of an index with one form, pays nothing for either.

// Router picks which form of an index that keeps two forms serves a read
// (Options.Router). Package migrate's Routes (static) and Router (the
// fleet's routes, from the control table) implement it.
//
// A Table asks it only for a read of an index that keeps two forms and
// whose query did not choose its form with [Query.Via], on the caller's
// goroutine, before any request: it must be quick and safe for concurrent
// use. table is the model's base table as declared (before
// Options.TableName), index the logical index, partition the query's
// partition key as [EncodeKey] encodes its component values (for one string
// component without bytes 0x00-0x24, the string itself: "TEAM-7"), and
// forms the index's forms: the declared type, then the kept one. An answer
// with ok false, or with a form the index does not keep, leaves the read to
// the declared type.
type Router interface {
	Route(table, index, partition string, forms [2]Kind) (form Kind, ok bool)
}

// ReadObserver sees the reads of indexes that keep two forms
// (Options.Observer): package migrate's Shadows compares a sampled share of
// them with the other form.
//
// A Table calls ObserveRead on the caller's goroutine, after each page it
// read from an index that keeps two forms: after a Page call and an Exists
// call that succeeded, and after each page of an All iteration (the items
// of one request, or for a sharded index up to a page's worth). It never
// calls it for an index with one form, nor for the reads that compare a
// page with the other form (package migrate's Shadows). The read waits for ObserveRead to return, so
// work that takes time belongs on another goroutine. ctx is the read's: it
// carries the read's span, and may end with the read.
type ReadObserver interface {
	ObserveRead(ctx context.Context, r ReadEvent)
}

// ReadEvent is one page read from an index that keeps two forms, as a
// [ReadObserver] sees it. It may be kept, and the page compared with the
// same page on the Other form (package migrate's Shadows does), on any
// goroutine after ObserveRead returned: it holds a copy of what it needs,
// and shares nothing with the Page the caller got.
type ReadEvent struct {
	// Table is the model's base table as declared, Index the logical index.
	Table, Index string
	// Form is the form that served the page, Other the index's other form.
	Form, Other Kind
	// Admin is true when the query chose its form with [Query.Via] (tests,
	// admin reads, comparisons), false when the routing did.
	Admin bool
	// Stats is what the page cost.
	Stats Stats
	// Query renders the query (partition, condition, order, limit, cursor),
	// for messages.
	Query string
	// compare reads the same page on the Other form (observe.go); package
	// migrate reaches it through internal/bridge. Nil in a ReadEvent the
	// Table did not make.
	compare func(ctx context.Context, recheck bool) (*bridge.Mismatch, error)
}

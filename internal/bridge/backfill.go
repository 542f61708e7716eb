// Package bridge connects package ddbindex (the core) to the packages beside
// it that need its unexported machinery, without exporting that machinery
// from the root: the root sets the variables here in an init function, and
// the other package calls them. Nothing outside the module can import it.
//
// For Backfill (package migrate): the core keeps what only it knows, each
// index form's physical layout and write rules (which entry an index table
// gets and the condition that never overwrites a newer one, which derived key
// attributes a GSI or LSI needs and the condition that the base item is still
// as scanned, tombstones, sparse items, the write's size); package migrate
// owns the rest of a backfill: scanning, segments and workers, the write-rate
// limit, progress, and checkpoints.
//
// For the tables (package schema): the core describes the physical tables a
// model needs (internal/spec: each table's and index's name, keys and
// projection, TTL, the stream, the forms no longer kept, how to tell whether
// a sharded index's entry is in its shard), since it alone owns each index's
// layout; package schema creates, checks and prepares the tables from that
// description (Tables, in tables.go).
//
// For the cursor diagnostic (package ops): the core owns the cursor format
// and every check of a cursor; package ops presents what a cursor holds
// (InspectCursor, in cursor.go).
//
// For shadow reads (package migrate's Shadows): the core compares a page a
// read served with the same page on the index's other form, since it alone
// knows each form's layout; package migrate decides which pages to compare,
// when to re-check, and reports what it finds (Comparer, in compare.go).
package bridge

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/retry"
)

// Outcome is what a backfill did with one scanned base item. Every item has
// exactly one.
type Outcome int

// The outcomes of [Backfill.Item].
const (
	// Written: the item's index-table entry was put, or its derived key
	// attributes set (or stale ones removed).
	Written Outcome = iota + 1
	// Skipped: the write's condition failed: the entry was there already,
	// or the base item changed since the scan.
	Skipped
	// Unchanged: a GSI's or LSI's derived key attributes were right
	// already; nothing was written.
	Unchanged
	// Sparse: the live item is not in the index; nothing was written.
	Sparse
	// Tombstone: the item is soft-deleted; nothing was written.
	Tombstone
)

// ItemOptions are what [Backfill.Item] needs from the caller for one item.
type ItemOptions struct {
	// ClientOptions are applied to the write, as the SDK's per-call
	// options.
	ClientOptions []func(*dynamodb.Options)
	// Retry bounds the retries of the write (defaults already applied).
	Retry retry.Options
	// Wait, if set, is called before the write with the write units it
	// consumes (one per started KB of the item written), and waits until
	// the write may be sent. Its error stops the item; the core reports it
	// as a failed call of the write it was waiting to send.
	Wait func(ctx context.Context, units int) error
}

// Backfill is the core's side of one backfill of one index form: the table
// to scan, the key its checkpoints are saved under, and the write of each
// scanned item. It is safe for concurrent use.
type Backfill interface {
	// Table is the physical base table the backfill scans.
	Table() string
	// Key is the key the backfill's checkpoints are saved under:
	// "<base table>#<index>#<form>", the form being "gsi", "lsi" or
	// "table".
	Key() string
	// Item backfills one scanned base item: it writes what the form needs
	// (through the Table's client, with retries) and says which outcome the
	// item had. Its errors are the core's: ErrMalformedItem for an item
	// whose keys cannot be derived, an ErrDynamoDB *Error for a failed write.
	Item(ctx context.Context, item map[string]types.AttributeValue, o ItemOptions) (Outcome, error)
}

// Backfiller returns the Backfill of the index named index of table, which
// must be a *ddbindex.Table[T]: the index's kept form while it keeps two,
// else its declared form. It fails before any request, with the core's
// errors: a read-only table or the base table (ErrUnsupported), an index
// that is not declared (ErrInvalidQuery). Package ddbindex sets it in an
// init function.
var Backfiller func(table any, index string) (Backfill, error)

// CheckpointKey is the key a backfill of form (a Kind's String) of index,
// on the base table named table, saves its positions under.
func CheckpointKey(table, index, form string) string {
	return table + "#" + index + "#" + form
}

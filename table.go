package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// QueryAPI is the part of the DynamoDB client that reads need.
// *dynamodb.Client implements it.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// WriteAPI is the part of the DynamoDB client that writes need.
// *dynamodb.Client implements it.
type WriteAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Client is what a [Table] needs: reads and writes. *dynamodb.Client
// implements it.
type Client interface {
	QueryAPI
	WriteAPI
}

// SchemaAPI is the part of the DynamoDB client that [CreateTables] and
// [CheckSchema] need. *dynamodb.Client implements it.
type SchemaAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// Options configure a [Table]. The zero value of each field means its
// default.
type Options struct {
	// TableName maps a declared table name (the base table's and each index
	// table's) to the physical one, e.g. to add an environment prefix.
	// Default: the declared name.
	TableName func(declared string) string

	// DeletedAttr is the tombstone marker attribute. Default "_deleted".
	DeletedAttr string
	// TTLAttr is the attribute a tombstone's expiry (epoch seconds) is
	// written to, and that index tables enable TTL on. Default "_ttl".
	TTLAttr string
	// VersionAttr is the attribute that holds the version of the change that
	// wrote an index table entry. Default "_ver".
	VersionAttr string
	// WriteTokenAttr is the base-table attribute where each UpdateItem the
	// library sends (Update, and Delete of a softdelete model without
	// write-through) records a random token of that write, so that a retry
	// of an attempt whose answer was lost recognises its own write instead
	// of reporting a conflict, or applying the update twice. Index-table
	// entries do not copy it. Default "_wtok".
	WriteTokenAttr string
	// Retention is how long a tombstone lives before TTL removes it.
	// Default 7 days.
	Retention time.Duration

	// CursorKey, when set, signs cursors with HMAC-SHA256; unsigned or wrongly
	// signed cursors are then rejected.
	CursorKey []byte
	// MaxCursorBytes caps the length of a cursor accepted from a caller;
	// a call that would mint a longer one fails instead (ErrInvalidQuery).
	// Default 4096, enough for keys of a few hundred bytes.
	MaxCursorBytes int
	// PlainCursors mints cursors without the next live item (see
	// [Page].Cursor), which releases before it was added refuse: set it
	// while such a release still serves reads, during a rolling upgrade,
	// then clear it. Cursors of either kind are accepted whatever it says.
	PlainCursors bool

	// Now returns the current time, for tombstone expiry. Default time.Now.
	Now func() time.Time

	// WriteThrough makes Put, Delete and Move write the index tables in the
	// same TransactWriteItems as the base item, so index tables are strongly
	// consistent with it. Without it, a stream consumer keeps them in step.
	WriteThrough bool
}

func (o *Options) setDefaults() {
	if o.TableName == nil {
		o.TableName = func(s string) string { return s }
	}
	if o.DeletedAttr == "" {
		o.DeletedAttr = "_deleted"
	}
	if o.TTLAttr == "" {
		o.TTLAttr = "_ttl"
	}
	if o.VersionAttr == "" {
		o.VersionAttr = "_ver"
	}
	if o.WriteTokenAttr == "" {
		o.WriteTokenAttr = "_wtok"
	}
	if o.Retention == 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.MaxCursorBytes == 0 {
		o.MaxCursorBytes = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Table is the handle for one model type T: its base table and every index
// it declares. It is safe for concurrent use.
type Table[T any] struct {
	client calls // every request goes through it (calls.go)
	s      *schema
	opts   Options
	memo   *memo // the page fill's memory of live ratios
}

// New returns the Table for model T, whose declarations are parsed once per
// type and validated (see [DeclarationError]).
func New[T any](client Client, optFns ...func(*Options)) (*Table[T], error) {
	s, err := schemaFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Retention < 0 {
		return nil, &DeclarationError{Model: s.model, Rule: fmt.Sprintf("Options.Retention is %v; a tombstone's retention cannot be negative (0 means the default, 7 days)", o.Retention)}
	}
	if o.MaxCursorBytes < 0 {
		return nil, &DeclarationError{Model: s.model, Rule: fmt.Sprintf("Options.MaxCursorBytes is %d; the cursor size cap cannot be negative (0 means the default, 4096)", o.MaxCursorBytes)}
	}
	o.setDefaults()
	reserved := []string{o.DeletedAttr, o.TTLAttr, o.VersionAttr, o.WriteTokenAttr}
	for i, a := range reserved {
		if s.attrs[a] {
			return nil, &DeclarationError{Model: s.model, Rule: fmt.Sprintf("attribute %q is reserved for tombstones, versions and write tokens by the Options; rename the model attribute or the option", a)}
		}
		if slices.Contains(reserved[:i], a) {
			return nil, &DeclarationError{Model: s.model, Rule: fmt.Sprintf("Options name attribute %q for two purposes (DeletedAttr, TTLAttr, VersionAttr and WriteTokenAttr must differ)", a)}
		}
	}
	return &Table[T]{client: calls{client}, s: s, opts: o, memo: &memo{}}, nil
}

// TableName returns the physical name of the base table.
func (t *Table[T]) TableName() string { return t.opts.TableName(t.s.table) }

// index returns the declaration for a logical index name ("" is the base
// table).
func (t *Table[T]) index(name string) (*layout, error) {
	if name == "" {
		return t.s.base, nil
	}
	d, ok := t.s.byName[name]
	if !ok {
		return nil, queryErr(name, "%s declares no such index", t.s.model)
	}
	return d, nil
}

// tableOf returns the physical table that holds d's entries.
func (t *Table[T]) tableOf(d *layout) string { return t.opts.TableName(d.table) }

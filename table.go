package ddbindex

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// This file holds what a Table is made from: the client interfaces, the
// Options, the constructors New and NewReadOnly, and the read-only guard.

// ReadAPI is the part of the DynamoDB client that reads need: [Table.Get],
// [Table.BatchGet] and queries. *dynamodb.Client implements it; a table made
// from a ReadAPI alone is read-only (see [NewReadOnly]).
type ReadAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Client is what a [Table] that reads and writes needs: the reads of
// [ReadAPI] (writes read the stored item with GetItem too) and the writes.
// *dynamodb.Client implements it.
type Client interface {
	ReadAPI
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Options configure a [Table]. The zero value of each field means its
// default.
type Options struct {
	// TableName maps a declared table name (the base table's and each index
	// table's) to the physical one, e.g. to add an environment prefix.
	// Default: the declared name.
	TableName func(declared string) string

	// CursorKeys, when set, sign cursors with HMAC-SHA256: a cursor is
	// signed with the first key and accepted when signed with any of them,
	// so keys rotate without breaking the cursors clients hold. To rotate,
	// put the new key first and keep the old one after it until the cursors
	// it signed have expired from use, then remove it: cursors signed with a
	// removed key, and unsigned ones, are rejected. Each key must be
	// non-empty.
	CursorKeys [][]byte
	// MaxCursorBytes caps the length of a cursor accepted from a caller.
	// A call whose cursor with the next live item's (or last evaluated)
	// position would be longer mints one without it (as PlainCursors does); when even that
	// is longer, the call fails instead (ErrInvalidQuery). Default 4096,
	// enough for keys of a few hundred bytes.
	MaxCursorBytes int
	// PlainCursors mints cursors without the next live item or the last
	// position evaluated (see [Page].Cursor), which releases before they
	// were added refuse (before v0.9.0 for the last position evaluated):
	// set it while such a release still serves reads, during a rolling
	// upgrade, then clear it. Cursors of every kind are accepted whatever
	// it says.
	PlainCursors bool

	// Now returns the current time, for tombstone expiry. Default time.Now.
	Now func() time.Time

	// WriteThrough makes Put, Delete and Move write the index tables in the
	// same TransactWriteItems as the base item, so index tables are strongly
	// consistent with it. Without it, a stream consumer keeps them in step.
	//
	// Each such write reads the stored item (strongly consistent), computes
	// the index writes from it, and conditions the transaction on the item
	// being as read: its version, key fields, tombstone mark and write token
	// (TableSpec tokenattr=, stored anew by every write-through write). When it
	// changed in between, even if it was deleted and created again at the
	// same version, a model with a version field gets an ErrConflict *Error and
	// one without reads the item again and retries, up to 8 attempts.
	WriteThrough bool

	// Router picks the form that serves each read of an index that keeps
	// two forms (keep= in its IndexSpec): package migrate's Routes (static
	// routes) or Router (the fleet's routes, from the control table). A
	// query's [Query.Via] comes first. Default: every read uses the
	// declared type. Reads of an index with one form never ask it.
	Router Router
	// Observer sees every page read from an index that keeps two forms
	// (package migrate's Shadows compares a sampled share of them with the
	// other form). Default: none. Reads of an index with one form never
	// call it.
	Observer ReadObserver
	// ShardFanout is how many requests to the shards of a sharded index
	// (shards= in its IndexSpec) one call sends at once. Default 16.
	ShardFanout int
	// Retry bounds how often [Table.BatchGet] asks again for the keys
	// DynamoDB left unprocessed, and its retries of a request that failed
	// with a transient error (see [IsTransient]).
	Retry RetryOptions

	// MeterProvider receives the library's metrics (docs/observability.md
	// lists them). Default: none, and a read pays
	// nothing for metrics. To use the global provider, pass
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider receives the library's spans: one per Page, All,
	// Exists, Get, BatchGet, Put, Update, Delete, Move and Apply call, with
	// an event per DynamoDB request. Default: none. To use the global
	// provider, pass otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// settings are what a Table runs with: its Options with every default
// applied, and what its model declares about the attributes the library
// writes (TableSpec deletedattr=, ttlattr=, versionattr=, tokenattr=,
// retention=).
type settings struct {
	Options
	DeletedAttr, TTLAttr, VersionAttr, WriteTokenAttr string
	Retention                                         time.Duration
}

// settingsOf returns the settings of a Table of the model s with the
// (validated) options o.
func settingsOf(s *schema, o Options) settings {
	o.setDefaults()
	return settings{Options: o, DeletedAttr: s.sys.deleted, TTLAttr: s.sys.ttl, VersionAttr: s.sys.version,
		WriteTokenAttr: s.sys.token, Retention: s.retention}
}

func (o *Options) setDefaults() {
	if o.TableName == nil {
		o.TableName = func(s string) string { return s }
	}
	if o.MaxCursorBytes == 0 {
		o.MaxCursorBytes = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ShardFanout == 0 {
		o.ShardFanout = defaultShardFanout
	}
	o.Retry = o.Retry.withDefaults()
}

// signingKey is the key new cursors are signed with; nil for unsigned.
func (o *settings) signingKey() []byte {
	if len(o.CursorKeys) == 0 {
		return nil
	}
	return o.CursorKeys[0]
}

// Table is the handle for one model type T: its base table and every index
// it declares. It is safe for concurrent use. Make it with [New] or
// [NewReadOnly]: the methods of a nil or zero *Table return zero values, or
// an error matching [ErrInvalidQuery] (reads) or [ErrInvalidWrite] (writes).
type Table[T any] struct {
	// client sends every request but those of package schema (which
	// describes the tables through spec.go) and package migrate's
	// Backfill's Scans, which go to the client they are given (calls.go).
	client   calls
	readOnly bool // made by NewReadOnly: its client refuses writes
	s        *schema
	opts     settings
	memo     *memo      // the page fill's memory of live ratios
	tel      *telemetry // nil: nothing instrumented
	// shardSizing replaces defaultShardSizing in tests (nil: the default).
	shardSizing *shardSizing
}

// New returns the Table for model T, whose declarations are parsed once per
// type and validated (see [Error]); a nil option function is
// refused the same way. A nil client makes a Table that sends no request:
// every call that would send one fails with an error matching
// [ErrUnsupported] (those that send none, such as Explain, Marshal and
// CreateTableInputs, work).
func New[T any](client Client, optFns ...func(*Options)) (*Table[T], error) {
	if client == nil {
		client = noClient{}
	}
	return newTable[T](client, false, optFns)
}

// NewReadOnly returns a read-only Table for model T, for a service that
// only reads: its client needs the read methods alone ([ReadAPI]). Get,
// BatchGet, queries and Explain work as on a table made by [New];
// Put, Delete, Move, Update, Apply and migrate.Backfill fail before any request with
// an error matching [ErrUnsupported]. Package schema's CreateTables, Check
// and Prepare take their own client, and work on either kind of table. A
// nil client, and a nil option function, are taken as by New.
func NewReadOnly[T any](client ReadAPI, optFns ...func(*Options)) (*Table[T], error) {
	if client == nil {
		client = noClient{}
	}
	return newTable[T](readOnlyClient{client}, true, optFns)
}

func newTable[T any](client Client, readOnly bool, optFns []func(*Options)) (*Table[T], error) {
	s, err := schemaFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	var o Options
	for i, fn := range optFns {
		if fn == nil {
			return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("option function %d is nil", i)}
		}
		fn(&o)
	}
	if o.ShardFanout < 0 {
		return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("Options.ShardFanout is %d; it cannot be negative (0 means the default, %d)", o.ShardFanout, defaultShardFanout)}
	}
	if o.MaxCursorBytes < 0 {
		return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("Options.MaxCursorBytes is %d; the cursor size cap cannot be negative (0 means the default, 4096)", o.MaxCursorBytes)}
	}
	for i, k := range o.CursorKeys {
		if len(k) == 0 {
			return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("Options.CursorKeys[%d] is empty; a signing key must hold bytes", i)}
		}
	}
	switch r := o.Retry; {
	case r.MaxAttempts < 0, r.BaseDelay < 0, r.MaxDelay < 0:
		return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("Options.Retry is {MaxAttempts: %d, BaseDelay: %v, MaxDelay: %v}; none can be negative (0 means the default)", r.MaxAttempts, r.BaseDelay, r.MaxDelay)}
	}
	if o.TableName != nil {
		if err := checkTableNames(s, o.TableName); err != nil {
			return nil, err
		}
	}
	st := settingsOf(s, o)
	return &Table[T]{client: calls{client}, readOnly: readOnly, s: s, opts: st, memo: &memo{}, tel: newTelemetry(s, &st)}, nil
}

// checkTableNames checks the physical names Options.TableName gives the
// model's tables, the base table's and each index table's (declared or
// kept): each must be a valid DynamoDB table name, and a table of its own,
// or two tables' items would mix in one. The declared names are checked
// with the declaration.
func checkTableNames(s *schema, name func(string) string) error {
	o, shared, _ := s.sharedTable(name)
	for _, l := range s.ownTables() {
		p := name(l.table)
		switch {
		case !physicalName.MatchString(p):
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name,
				Reason: fmt.Sprintf("Options.TableName maps %s, %q, to %q, which is not a valid DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)", l.tableLabel(), l.table, p)}
		case l == shared:
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name,
				Reason: fmt.Sprintf("Options.TableName maps %s, %q, and %s, %q, to one table %q: their items would mix in it; map each to a name of its own", o.tableLabel(), o.table, l.tableLabel(), l.table, p)}
		}
	}
	return nil
}

// usable returns an error matching sentinel (ErrInvalidQuery for a read,
// ErrInvalidWrite for a write) when t was not made by New or NewReadOnly
// (it is nil, or a zero Table), or when one of the per-call options is a
// nil function, which the SDK would call: the first check of every
// exported method, before anything reads t's fields.
func (t *Table[T]) usable(op string, sentinel error, optFns ...func(*dynamodb.Options)) error {
	if t == nil || t.s == nil {
		return fmt.Errorf("%w: %s of %v on a Table not made by New or NewReadOnly", sentinel, op, reflect.TypeFor[T]())
	}
	return nilOption(op, sentinel, optFns)
}

// nilOption returns an error matching sentinel when one of optFns is nil.
func nilOption[O any](op string, sentinel error, optFns []func(O)) error {
	if i := slices.IndexFunc(optFns, func(fn func(O)) bool { return fn == nil }); i >= 0 {
		return fmt.Errorf("%w: %s: option function %d is nil", sentinel, op, i)
	}
	return nil
}

// writable returns an error matching ErrUnsupported when t is read-only: the
// first check of every method that writes, so that it fails before any
// request.
func (t *Table[T]) writable(op string) error {
	if t.readOnly {
		return fmt.Errorf("%w: %s of %s on a read-only table (made by NewReadOnly); make the table with New and a client that writes", ErrUnsupported, op, t.s.model)
	}
	return nil
}

// readOnlyClient is the client of a read-only table: its reads go to the
// ReadAPI, and its writes fail without a request, whatever path reaches
// them (the exported writes check writable first). calls passes errReadOnly
// on as it is: it is not a failed call.
type readOnlyClient struct{ ReadAPI }

var errReadOnly = fmt.Errorf("%w: write on a read-only table", ErrUnsupported)

func (readOnlyClient) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errReadOnly
}

func (readOnlyClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errReadOnly
}

func (readOnlyClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errReadOnly
}

func (readOnlyClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errReadOnly
}

// noClient is the client of a Table made from a nil client: it refuses
// every request without sending it. calls passes errNoClient on as it is:
// it is not a failed call.
type noClient struct{}

var errNoClient = fmt.Errorf("%w: the Table was made with a nil client, and sends no request", ErrUnsupported)

func (noClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errNoClient
}

func (noClient) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, errNoClient
}

func (noClient) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errNoClient
}

func (noClient) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errNoClient
}

func (noClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errNoClient
}

func (noClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errNoClient
}

func (noClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errNoClient
}

// TableName returns the physical name of the base table; "" for a Table
// not made by New or NewReadOnly.
func (t *Table[T]) TableName() string {
	if t.usable("TableName", ErrInvalidQuery) != nil {
		return ""
	}
	return t.opts.TableName(t.s.table)
}

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

// Package spec describes, as plain data, the physical tables a ddbindex
// model needs, and turns that description into DynamoDB's CreateTable
// requests (the DDL).
//
// Package ddbindex (the core) owns each index's physical layout, so it
// alone builds a description: its unexported (*Table[T]).spec, which
// package schema reaches through internal/bridge (bridge.Tables) without
// the root exporting anything for it. Package schema creates, checks and
// prepares the tables from the description; the root's own tests create
// theirs with [Tables.CreateTableInputs]. The description is built anew on
// every call, and nothing in it is shared with the model: callers may keep
// or change it.
package spec

import (
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Kind is the kind of a form of an index: the words of ddbindex.Kind's
// String ("gsi", "lsi", "table"), which the declarations' type= and keep=
// use.
type Kind string

// The kinds of an index's forms.
const (
	GSI   Kind = "gsi"
	LSI   Kind = "lsi"
	Table Kind = "table" // an index table
	// NativeGSI is a GSI keyed by the model's own attributes, several of
	// each role where the declaration has several components.
	NativeGSI Kind = "native-gsi"
)

// Key is one key attribute: its name and its scalar type.
type Key struct {
	Attr string
	Type types.ScalarAttributeType
}

// Projection is what a GSI or LSI projects.
type Projection struct {
	// Type is ALL, KEYS_ONLY or INCLUDE.
	Type types.ProjectionType
	// NonKey are, for INCLUDE, the declared attributes that are not key
	// attributes of the index or of the base table (DynamoDB projects
	// those anyway, and refuses them among the non-key ones).
	NonKey []string
	// Declared are the attributes the declaration projects (project=), key
	// attributes included, for messages; nil when it reads all of them.
	Declared []string
}

// Index is a GSI or an LSI of the base table.
type Index struct {
	Name      string // the logical index name
	Kind      Kind   // GSI or LSI
	IndexName string // the physical GSI or LSI name
	PK        Key
	SK        *Key // nil when there is no sort key
	// HashKeys and RangeKeys are, for a NativeGSI, its key attributes in
	// key schema order (PK and SK are their first); nil otherwise.
	HashKeys, RangeKeys []Key
	Projection
	// Forms are the index's forms: its declared type, then the kept one
	// (keep=) when it keeps two. The GSI or LSI is the kept form when Kind
	// is not Forms[0].
	Forms []Kind
}

// KeyTable is a table's name and key: the base table's, an index table's,
// the control table's.
type KeyTable struct {
	Name  string // the physical table name
	Index string // the logical index name of an index table; "" otherwise
	PK    Key
	SK    *Key // nil when there is no sort key
}

// Base is the base table.
type Base struct {
	KeyTable
	// Indexes are its GSIs and LSIs, every form of every index that lives
	// on the base table (declared or kept), in declaration order.
	Indexes []Index
	// Stream is true when index tables are kept from the base table's
	// stream (the model has index tables, and no Options.WriteThrough):
	// the stream must then carry NEW_AND_OLD_IMAGES.
	Stream bool
	// SoftDelete is true for a softdelete model, whose tombstones on the
	// base table expire by TTL.
	SoftDelete bool
}

// Dropped is a form an index used to have, or could have, that the
// declaration neither serves nor keeps: where it would be if it still
// existed.
type Dropped struct {
	Index    string // the logical index name
	Declared Kind   // the declared type
	Kind     Kind   // the kind of the form not kept
	// Table is the physical table the form lives in: the base table for a
	// GSI or LSI, its own for an index table.
	Table string
	// IndexName is the physical GSI or LSI name; "" for an index table.
	IndexName string
	// Named is true when the declaration names the form (gsi=, lsi=,
	// table=): it is looked for under that name alone. Otherwise a GSI or
	// LSI of another name keyed as PK and SK is that form too, renamed
	// (name= of an older declaration).
	Named bool
	// PK and SK are the form's key, as it would have it.
	PK Key
	SK *Key // nil when there is no sort key
}

// Sharded is one form of a sharded index: where its entries are, and how to
// tell whether an entry was written under the declared number of shards.
type Sharded struct {
	Index     string // the logical index name
	Kind      Kind
	Table     string // the physical table of its entries
	IndexName string // the physical GSI or LSI name; "" for an index table
	Shards    int    // shards=
	// Fits returns an error when an entry (an item read from the form)
	// is in another shard than its base key hashes to under Shards, or its
	// key does not decode as a sharded key: the form was written with
	// another number of shards, or none. It returns nil otherwise, also
	// for an entry whose key misses attributes.
	Fits func(item map[string]types.AttributeValue) error
}

// Tables describes every physical table a model needs.
type Tables struct {
	Base Base
	// IndexTables are the index tables, every form of every index that is
	// a table of its own (declared or kept), in declaration order.
	IndexTables []KeyTable
	// TTLAttr is the attribute TTL must be enabled on (TableSpec ttlattr=).
	TTLAttr string
	// TTL are the physical tables whose tombstones TTL must remove: the
	// base table of a softdelete model, then each index table.
	TTL []string
	// Dropped are the forms of the declared indexes that are neither
	// declared nor kept, in declaration order, and for each index in the
	// order GSI, LSI, table.
	Dropped []Dropped
	// Sharded are the forms of the sharded indexes, in declaration order.
	Sharded []Sharded
	// Model is the base table's name as declared (before
	// Options.TableName): the name a Router is asked with.
	Model string
	// Router is the Table's Options.Router (a ddbindex.Router), which
	// picks the form that serves each read of an index that keeps two;
	// nil when it has none, and every read goes to the declared type.
	Router any
}

// KeySchema returns the key schema of a table or index keyed by pk and sk,
// and adds the key attributes' types to defs.
func KeySchema(pk Key, sk *Key, defs map[string]types.ScalarAttributeType) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Attr), KeyType: types.KeyTypeHash}}
	defs[pk.Attr] = pk.Type
	if sk != nil {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Attr), KeyType: types.KeyTypeRange})
		defs[sk.Attr] = sk.Type
	}
	return ks
}

// KeySchema returns the index's key schema, and adds the key attributes'
// types to defs: every HASH element, then every RANGE element.
func (ix Index) KeySchema(defs map[string]types.ScalarAttributeType) []types.KeySchemaElement {
	if ix.HashKeys == nil {
		return KeySchema(ix.PK, ix.SK, defs)
	}
	var ks []types.KeySchemaElement
	for _, role := range []struct {
		keys []Key
		typ  types.KeyType
	}{{ix.HashKeys, types.KeyTypeHash}, {ix.RangeKeys, types.KeyTypeRange}} {
		for _, k := range role.keys {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(k.Attr), KeyType: role.typ})
			defs[k.Attr] = k.Type
		}
	}
	return ks
}

// AttrDefs returns the attribute definitions of defs, sorted by name.
func AttrDefs(defs map[string]types.ScalarAttributeType) []types.AttributeDefinition {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]types.AttributeDefinition, len(names))
	for i, n := range names {
		out[i] = types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: defs[n]}
	}
	return out
}

// Input returns the projection as CreateTable and UpdateTable take it (a
// copy: changing it changes nothing here).
func (p Projection) Input() *types.Projection {
	out := &types.Projection{ProjectionType: p.Type}
	if p.Type == types.ProjectionTypeInclude {
		out.NonKeyAttributes = slices.Clone(p.NonKey)
	}
	return out
}

// CreateTableInputs returns the CreateTable requests of the base table
// (with its GSIs and LSIs) and of each index table, billed on demand. The
// base table gets a NEW_AND_OLD_IMAGES stream when stream is true and the
// model has index tables.
func (ts *Tables) CreateTableInputs(stream bool) []*dynamodb.CreateTableInput {
	defs := map[string]types.ScalarAttributeType{}
	base := &dynamodb.CreateTableInput{
		TableName:   aws.String(ts.Base.Name),
		KeySchema:   KeySchema(ts.Base.PK, ts.Base.SK, defs),
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, ix := range ts.Base.Indexes {
		switch ix.Kind {
		case GSI, NativeGSI:
			base.GlobalSecondaryIndexes = append(base.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
				IndexName: aws.String(ix.IndexName), KeySchema: ix.KeySchema(defs), Projection: ix.Projection.Input(),
			})
		case LSI:
			base.LocalSecondaryIndexes = append(base.LocalSecondaryIndexes, types.LocalSecondaryIndex{
				IndexName: aws.String(ix.IndexName), KeySchema: KeySchema(ix.PK, ix.SK, defs), Projection: ix.Projection.Input(),
			})
		}
	}
	base.AttributeDefinitions = AttrDefs(defs)
	if stream && len(ts.IndexTables) > 0 {
		base.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	out := []*dynamodb.CreateTableInput{base}
	for _, it := range ts.IndexTables {
		out = append(out, it.Input())
	}
	return out
}

// The control table is no model's: one small table per service, whose
// name the application gives to package schema (PrepareOptions.ControlTable,
// ControlTableInput, CheckControlTable), to package migrate
// (RouterOptions.ControlTable, DynamoDBCheckpoints.Table) and to package
// stream (DynamoDBCheckpoints.Table). It holds the items of migrate's
// routes, of Backfill's checkpoints and of stream's checkpoints and leases,
// each kind under partition keys of its own prefix. ControlPK and ControlSK
// are its key attributes, both strings: the one place that names them.
const (
	ControlPK = "pk"
	ControlSK = "sk"
)

// ControlTable returns the control table named name, keyed by ControlPK
// and ControlSK.
func ControlTable(name string) KeyTable {
	return KeyTable{
		Name: name,
		PK:   Key{Attr: ControlPK, Type: types.ScalarAttributeTypeS},
		SK:   &Key{Attr: ControlSK, Type: types.ScalarAttributeTypeS},
	}
}

// Input returns the CreateTable request of a table keyed as kt, without
// indexes or stream, billed on demand.
func (kt KeyTable) Input() *dynamodb.CreateTableInput {
	defs := map[string]types.ScalarAttributeType{}
	ks := KeySchema(kt.PK, kt.SK, defs)
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(kt.Name),
		KeySchema:            ks,
		AttributeDefinitions: AttrDefs(defs),
		BillingMode:          types.BillingModePayPerRequest,
	}
}

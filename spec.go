package ddbindex

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/spec"
)

// This file describes the physical tables a model needs (internal/spec):
// the base table with its GSIs and LSIs, the index tables, TTL, the stream,
// the forms of an index that are no longer kept, and how
// to tell whether a sharded index's entry is in its shard. The description
// is the core's because only the core knows each index's physical layout
// (index.go's layoutOf); package schema creates, checks and prepares the
// tables from it, and reaches it through internal/bridge (bridge.Tables),
// which the init function below connects: the root package exports nothing
// for it.

func init() {
	bridge.Tables = func(table any) (*spec.Tables, error) {
		s, ok := table.(specified)
		if !ok {
			return nil, fmt.Errorf("%w: %T is not a *ddbindex.Table", ErrInvalidWrite, table)
		}
		return s.bridgeSpec()
	}
}

// specified is what *Table[T] is to internal/bridge, whatever T.
type specified interface {
	bridgeSpec() (*spec.Tables, error)
}

// bridgeSpec is spec for internal/bridge.
func (t *Table[T]) bridgeSpec() (*spec.Tables, error) {
	if err := t.usable("describing the tables", ErrInvalidWrite); err != nil {
		return nil, err
	}
	return t.spec(), nil
}

// spec describes the physical tables t needs, with the physical names
// Options.TableName gives them. The control table is no model's: package
// schema describes it from the name its caller gives (internal/spec's
// ControlTable).
func (t *Table[T]) spec() *spec.Tables {
	s := t.s
	out := &spec.Tables{
		TTLAttr: t.opts.TTLAttr,
		Model:   s.table,
		Base: spec.Base{
			KeyTable:   keyTableOf(t.TableName(), "", s.base),
			Stream:     t.hasIndexTables() && !t.opts.WriteThrough,
			SoftDelete: s.softDelete,
		},
	}
	out.Router = t.opts.Router // nil stays nil: a nil interface converts to a nil any
	if s.softDelete {
		out.TTL = append(out.TTL, t.TableName())
	}
	for _, d := range s.indexes {
		forms := make([]spec.Kind, len(d.decl.forms))
		for i, f := range d.decl.forms {
			forms[i] = specKind(f.kind)
		}
		switch d.kind {
		case GSI, LSI, NativeGSI:
			pk, sk := keysOf(d)
			ix := spec.Index{
				Name: d.name, Kind: specKind(d.kind), IndexName: d.index, PK: pk, SK: sk, Projection: d.projection(), Forms: forms,
			}
			if d.pk.attrs != nil {
				ix.HashKeys, ix.RangeKeys = specKeys(d.pk), specKeys(d.sk)
			}
			out.Base.Indexes = append(out.Base.Indexes, ix)
		case IndexTable:
			name := t.tableOf(d)
			out.IndexTables = append(out.IndexTables, keyTableOf(name, d.name, d))
			out.TTL = append(out.TTL, name)
		}
		if d.pk.shards > 0 {
			out.Sharded = append(out.Sharded, spec.Sharded{
				Index: d.name, Kind: specKind(d.kind), Table: t.tableOf(d), IndexName: d.index, Shards: d.pk.shards,
				Fits: func(item map[string]types.AttributeValue) error {
					if _, err := d.positionOf(item); errors.Is(err, errMalformed) {
						return err
					}
					return nil
				},
			})
		}
	}
	out.Dropped = t.droppedForms()
	return out
}

// droppedForms lists the forms of each declared index that the declaration
// neither serves nor keeps (the plain flip from type=gsi to type=table, or
// back, leaves one behind), each where it would be: instances still running
// an older declaration may read it, and this one no longer writes it.
func (t *Table[T]) droppedForms() []spec.Dropped {
	var out []spec.Dropped
	for _, d := range t.s.indexes {
		if d != d.decl.lay {
			continue // a kept form: its declaration is visited through the declared one
		}
		for _, k := range indexKinds {
			if slices.ContainsFunc(d.decl.forms, func(f *layout) bool { return f.kind == k }) {
				continue
			}
			_, named := d.decl.names[k]
			if k == NativeGSI && !named {
				// Its default name is the index's, which a derived GSI
				// declared or kept has too, and any GSI keyed by the
				// model's own attributes may be someone else's: it is
				// looked for only where native-gsi= says it was.
				continue
			}
			gone, err := layoutOf(d.decl, k)
			if err != nil {
				continue // the declaration cannot be this kind, so it never was
			}
			pk, sk := keysOf(gone)
			out = append(out, spec.Dropped{
				Index: d.name, Declared: specKind(d.kind), Kind: specKind(k), Table: t.tableOf(gone), IndexName: gone.index,
				Named: named, PK: pk, SK: sk,
			})
		}
	}
	return out
}

// specKind is k as internal/spec names it.
func specKind(k Kind) spec.Kind { return spec.Kind(k.String()) }

// keysOf returns d's key attributes.
func keysOf(d *layout) (spec.Key, *spec.Key) {
	pk := spec.Key{Attr: d.pk.attr, Type: d.pk.scalar}
	if d.sk == nil {
		return pk, nil
	}
	return pk, &spec.Key{Attr: d.sk.attr, Type: d.sk.scalar}
}

// specKeys returns the key attributes of a multi-attribute key k (none for
// a nil k).
func specKeys(k *keyAttr) []spec.Key {
	if k == nil {
		return []spec.Key{}
	}
	out := make([]spec.Key, len(k.attrs))
	for i, a := range k.attrs {
		out[i] = spec.Key{Attr: a.attr, Type: a.scalar}
	}
	return out
}

// keyTableOf is the physical table name (the logical index name of an
// index table) with d's key.
func keyTableOf(name, index string, d *layout) spec.KeyTable {
	pk, sk := keysOf(d)
	return spec.KeyTable{Name: name, Index: index, PK: pk, SK: sk}
}

// projection is what GSI or LSI d projects.
func (d *layout) projection() spec.Projection {
	p := spec.Projection{Type: types.ProjectionTypeAll, Declared: slices.Clone(d.project)}
	switch {
	case d.keysOnly:
		p.Type = types.ProjectionTypeKeysOnly
	case d.project != nil:
		// DynamoDB projects key attributes anyway, and refuses them among
		// the non-key ones.
		p.Type = types.ProjectionTypeInclude
		for _, a := range d.project {
			if !slices.ContainsFunc(d.stored, func(k *keyAttr) bool { return k.attr == a }) {
				p.NonKey = append(p.NonKey, a)
			}
		}
	}
	return p
}

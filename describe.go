package ddbindex

import "reflect"

// This file describes a model's declarations to tools that work on any
// model, such as package ops: its indexes, their forms and physical names,
// and their key components.

// IndexInfo describes the base table or one index of a model, as declared.
type IndexInfo struct {
	// Name is the logical name queries use; "" for the base table.
	Name string
	// Forms are the index's forms, with their physical names (after
	// Options.TableName): the declared type first, then the form it keeps
	// too (keep= in its IndexSpec), if any. The base table has one form, of
	// Kind BaseTable.
	Forms []IndexForm
	// Shards is the number of write shards of each partition (shards=);
	// 0 when the index is not sharded.
	Shards int
	// Partition are the components whose values [Table.Query] takes after
	// the index name, in order; Sort those a [SortCondition] gives values
	// for, leading ones first (the base key components that an index key
	// ends with are left out).
	Partition, Sort []KeyComponent
}

// IndexForm is one form of an index: where its entries live.
type IndexForm struct {
	// Kind is the form: BaseTable, GSI, LSI, IndexTable or NativeGSI.
	Kind Kind
	// Table is the physical table that holds the entries (for a GSI or an
	// LSI, the base table).
	Table string
	// Index is the physical GSI or LSI name; "" for a table.
	Index string
	// Declared is the table's name as declared, before Options.TableName
	// (for a GSI or an LSI, the base table's): the name a [Router] is
	// asked with, and package migrate keys routes by.
	Declared string
}

// KeyComponent is one field in a key role.
type KeyComponent struct {
	// Field is the Go field's name, FieldIndex its index sequence in the
	// model (for reflect.Value.FieldByIndex).
	Field      string
	FieldIndex []int
	// Attr is the attribute the field is stored under.
	Attr string
	// Type is the field's type, a pointer's element type for a pointer
	// field: the type of the values a query takes for it.
	Type reflect.Type
}

// Indexes describes the model's base table, then each index it declares, in
// declaration order; none for a Table not made by New or NewReadOnly.
func (t *Table[T]) Indexes() []IndexInfo {
	if t.usable("Indexes", ErrInvalidQuery) != nil {
		return nil
	}
	out := []IndexInfo{t.indexInfo(t.s.base, nil)}
	seen := map[*declaration]bool{}
	for _, d := range t.s.indexes {
		if !seen[d.decl] {
			seen[d.decl] = true
			out = append(out, t.indexInfo(d.decl.lay, d.decl.forms))
		}
	}
	return out
}

// indexInfo describes d, the declared form of an index with the given forms
// (none for the base table).
func (t *Table[T]) indexInfo(d *layout, forms []*layout) IndexInfo {
	if len(forms) == 0 {
		forms = []*layout{d}
	}
	info := IndexInfo{Name: d.name, Shards: d.decl.shards, Partition: keyComponents(d.pk)}
	if d.sk != nil {
		info.Sort = keyComponents(d.sk)
	}
	for _, f := range forms {
		info.Forms = append(info.Forms, IndexForm{Kind: f.kind, Table: t.tableOf(f), Index: f.index, Declared: f.table})
	}
	return info
}

func keyComponents(k *keyAttr) []KeyComponent {
	if len(k.parts) == 0 {
		return nil
	}
	out := make([]KeyComponent, len(k.parts))
	for i, c := range k.parts {
		out[i] = KeyComponent{Field: c.f.goName, FieldIndex: append([]int(nil), c.f.index...), Attr: c.f.attr, Type: c.f.typ}
	}
	return out
}

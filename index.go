package ddbindex

import (
	"slices"
	"strconv"
)

// Kind is the type of an index: how it is stored and who keeps it up to date.
type Kind uint8

const (
	// BaseTable is the model's own table, queried through its primary key.
	BaseTable Kind = iota
	// GSI is a global secondary index: DynamoDB keeps it, eventually consistent.
	GSI
	// LSI is a local secondary index: same partition key as the base table.
	LSI
	// IndexTable is a separate table that ddbindex's write side keeps in step
	// with the base table (from a stream, or written through).
	IndexTable
)

// String returns the tag word for k.
func (k Kind) String() string {
	switch k {
	case BaseTable:
		return "base"
	case GSI:
		return "gsi"
	case LSI:
		return "lsi"
	case IndexTable:
		return "table"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (t *Table[T]) hasIndexTables() bool {
	return slices.ContainsFunc(t.s.indexes, func(d *keyDef) bool { return d.kind == IndexTable })
}

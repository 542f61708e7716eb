package ddbindex

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the kinds of index and layoutOf, the one function that
// turns a declaration and a kind into a layout: which table and index hold
// the entries, their key attributes, and how reads of them behave.

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
	// NativeGSI is a global secondary index whose key is the model's own
	// attributes, one key attribute per declared component (up to four
	// partition and four sort components, each keeping its type): a
	// multi-attribute key, with no derived attribute to write or backfill.
	// DynamoDB keeps it, eventually consistent.
	NativeGSI
)

// indexKinds are the kinds an index can have, in the order errors and
// listings name them.
var indexKinds = []Kind{GSI, LSI, IndexTable, NativeGSI}

// noKind marks a declaration's type= or keep= as not given.
const noKind Kind = 255

// indexKind reads the tag word of an index type.
func indexKind(word string) (Kind, bool) {
	for _, k := range indexKinds {
		if word == k.String() {
			return k, true
		}
	}
	return noKind, false
}

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
	case NativeGSI:
		return "native-gsi"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (t *Table[T]) hasIndexTables() bool {
	return slices.ContainsFunc(t.s.indexes, func(d *layout) bool { return d.ownTable })
}

// baseSuffix lists the base key components that an index key must append to
// be unique and totally ordered: those not already among its own components.
func baseSuffix(base *layout, pk, sk []*component, pkAttr *keyAttr) []*component {
	have := map[*field]bool{}
	for _, c := range append(slices.Clone(pk), sk...) {
		have[c.f] = true
	}
	if pkAttr == base.pk { // an LSI: the partition is the base partition
		for _, c := range base.pk.parts {
			have[c.f] = true
		}
	}
	var out []*component
	for _, k := range []*keyAttr{base.pk, base.sk} {
		if k == nil {
			continue
		}
		for _, c := range k.parts {
			if !have[c.f] {
				have[c.f] = true
				out = append(out, &component{f: c.f, enc: c.f.canon})
			}
		}
	}
	return out
}

// nativeOK reports whether comps can be stored as the model attribute itself:
// one component, no label, its default format, and a type DynamoDB compares as
// the component orders.
func nativeOK(comps []*component) bool {
	if len(comps) != 1 {
		return false
	}
	c := comps[0]
	if c.label != "" || c.enc.width != 0 {
		return false
	}
	switch c.enc.kind {
	case encString, encBytes, encInt, encUint, encFloat:
		return true
	}
	return false
}

func (s *schema) keyAttr(def *layout, part, name string, comps, suffix []*component) (*keyAttr, error) {
	k := &keyAttr{attr: name, parts: comps, suffix: suffix, scalar: types.ScalarAttributeTypeS, partition: part == "pk"}
	if name != "" {
		return k, nil
	}
	if !nativeOK(comps) {
		c := comps[0]
		why := "a composite key"
		switch {
		case len(comps) == 1 && c.label != "":
			why = "a labelled key"
		case len(comps) == 1 && c.enc.width != 0:
			why = "a fixed-width key"
		case len(comps) == 1 && c.enc.kind == encTime:
			why = "a time.Time key (attributevalue's RFC 3339 text does not sort chronologically)"
		case len(comps) == 1:
			why = "a " + c.f.typ.String() + " key"
		}
		where := "IndexSpec"
		if def.kind == BaseTable {
			where = "TableSpec"
		}
		return nil, &Error{Sentinel: ErrDeclaration, Model: s.model, Index: def.name,
			Reason: fmt.Sprintf("%s needs a derived attribute to hold it: add %s=ATTR to the %s tag", why, part, where)}
	}
	c := comps[0]
	k.native, k.attr = true, c.f.attr
	switch {
	case c.enc.isNumber():
		k.scalar = types.ScalarAttributeTypeN
	case c.enc.kind == encBytes:
		k.scalar = types.ScalarAttributeTypeB
	}
	return k, nil
}

// onBaseItem reports whether k, one of l's key attributes, is a derived
// attribute that l itself keeps on the base item: not a native key (a model
// attribute) nor a multi-attribute key (model attributes), not in an index table, and not the base table's partition key
// that an LSI shares.
func (l *layout) onBaseItem(k *keyAttr) bool {
	return k != nil && !k.native && k.attrs == nil && !l.ownTable && !(l.kind == LSI && k == l.schema.base.pk)
}

// derivedAttrs lists the key attributes l keeps on the base item (see
// onBaseItem): its derived partition and sort keys, and a sharded
// NativeGSI's shard attribute.
func (l *layout) derivedAttrs() []*keyAttr {
	var out []*keyAttr
	for _, k := range []*keyAttr{l.pk, l.sk} {
		if l.onBaseItem(k) {
			out = append(out, k)
		}
	}
	if k := l.shardAttr(); k != nil {
		out = append(out, k)
	}
	return out
}

// shardAttr is a sharded NativeGSI's shard attribute; nil for any other
// layout. Every base item holds it, in the index or not, since it depends
// on the base key alone: an Update that brings an item into the index need
// not write it.
func (l *layout) shardAttr() *keyAttr {
	if l.pk == nil || l.ownTable {
		return nil
	}
	for _, k := range l.pk.attrs {
		if k.shardOnly {
			return k
		}
	}
	return nil
}

func (d *layout) label() string {
	if d.kind == BaseTable {
		return "base table"
	}
	return d.name
}

// tableLabel names the table of l, the base table or an index table
// (declared or kept), for errors.
func (l *layout) tableLabel() string {
	switch {
	case l.kind == BaseTable:
		return "the base table"
	case l != l.decl.lay:
		return "the index table that index " + l.name + " keeps"
	}
	return "the index table of index " + l.name
}

// layout is one physical form of a declared index (or of the base table):
// where its entries live, which attributes key them, and what reads of it
// do. layoutOf makes it; every other piece of code reads it, so the kind of
// an index is decided here alone.
type layout struct {
	schema *schema
	decl   *declaration
	name   string // the logical name; "" for the base table
	kind   Kind
	// table is the declared name of the table that holds the entries: the
	// base table's for the base table, a GSI and an LSI; the index table's.
	table string
	// index is the physical GSI or LSI name; "" for a table.
	index    string
	pk       *keyAttr
	sk       *keyAttr // nil when there is no sort key
	project  []string // nil means all
	keysOnly bool
	slots    []*field // the fields a position names (the declaration's)
	// stored lists the key attributes of an entry: its own, and for a GSI
	// or LSI the base table's.
	stored []*keyAttr
	// readKeys lists the attributes a projected read adds for the keys: the
	// stored ones, and for an index table also those a GSI of the same
	// declaration stores, which its entries hold (the base key, and a sort
	// key the GSI keeps native), so that a projected read fills the same
	// fields on either form.
	readKeys []string
	// tombstones: reads skip tombstones unless told otherwise. Always for an
	// index table, whose deletes are tombstones; for the base table, a GSI
	// and an LSI when the model soft-deletes.
	tombstones bool
	// consistent: the form serves strongly consistent reads (a GSI does not).
	consistent bool
	// ownTable: ddbindex keeps the entries, in a table of their own; else
	// DynamoDB keeps them from the base item's attributes.
	ownTable bool
	// uniqueSort: no two entries of a partition share a sort key value: a
	// primary key (the base table, an index table), or a derived GSI or LSI
	// sort key, which ends with the base key components the index key lacks.
	// A native GSI or LSI sort key may repeat, and DynamoDB orders ties.
	uniqueSort bool
	// serverTies: an index table whose sort key ends with the base key, of
	// an index whose GSI or LSI form keeps its sort key native: there
	// DynamoDB orders the entries that share a sort value, here the base
	// key does, so a cursor's next item may be a tie that comes after
	// others here (see startKeyBefore).
	serverTies bool
}

// layoutOf makes the layout of declaration d as an index of the given kind
// (for the TableSpec, BaseTable). An index declared with one type= can be
// laid out as another: Explain's alternate and a migration's kept forms are
// layoutOf with the other kind. Its errors are ErrDeclaration *Errors.
func layoutOf(d *declaration, kind Kind) (*layout, error) {
	s := d.schema
	fail := func(field, format string, args ...any) error {
		return &Error{Sentinel: ErrDeclaration, Model: s.model, Field: field, Index: d.name, Reason: fmt.Sprintf(format, args...)}
	}
	l := &layout{schema: s, decl: d, name: d.name, kind: kind, project: d.project, keysOnly: d.keysOnly, slots: d.slots}
	if kind == NativeGSI {
		return nativeLayout(l, fail)
	}
	var base *declaration
	if kind != BaseTable {
		base = s.base.decl
	}
	pkComps := d.pk
	var err error
	switch kind {
	case LSI:
		switch {
		case d.shards > 0:
			return nil, fail("", "an LSI shares the base table's partitions and cannot be sharded; remove shards=%d or make the index a gsi or table", d.shards)
		case len(d.pk) > 0 && !slices.Equal(d.pk, base.pk):
			return nil, fail(d.pk[0].f.goName, "an LSI shares the base table's partition key; declare only its sort components")
		case d.pkName != "":
			return nil, fail("", "an LSI shares the base table's partition key; remove pk=%s", d.pkName)
		case len(d.sk) == 0:
			return nil, fail("", "an LSI needs at least one sort component")
		}
		pkComps, l.pk = base.pk, s.base.pk
	default:
		if kind != BaseTable {
			pkComps = d.partition(base)
		}
		if len(pkComps) == 0 {
			return nil, fail("", "the base table has no partition component: tag a field with %s", roleTag(d.name, "pk"))
		}
		pkName := d.pkName
		if kind != BaseTable && pkName == "" && (!nativeOK(pkComps) || d.shards > 0) {
			pkName = "_pk" // the documented default for an index's derived partition key
		}
		if l.pk, err = s.keyAttr(l, "pk", pkName, pkComps, nil); err != nil {
			return nil, err
		}
		if d.shards > 0 {
			// A sharded partition key is always derived: its value ends with the shard.
			l.pk.shards = d.shards
			for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
				if k != nil {
					for _, c := range k.parts {
						l.pk.shardBy = append(l.pk.shardBy, c.f)
					}
				}
			}
		}
	}
	var suffix []*component
	if kind != BaseTable {
		suffix = baseSuffix(s.base, pkComps, d.sk, l.pk)
	}
	// An index's derived attributes default to _pk and _sk; the base
	// table's must be named.
	// A sharded index's sort key is derived too, and ends with the base key
	// components it lacks: unique, so the shards merge in one total order.
	skName := d.skName
	if kind != BaseTable && skName == "" && (kind == IndexTable || !d.nativeSortOnGSI()) {
		skName = "_sk"
	}
	switch {
	case (kind == IndexTable || d.shards > 0) && len(d.sk)+len(suffix) > 0:
		l.sk, err = s.keyAttr(l, "sk", skName, d.sk, suffix)
		l.serverTies = kind == IndexTable && len(suffix) > 0 && d.nativeSortOnGSI()
	case len(d.sk) > 0 && d.skName == "" && nativeOK(d.sk):
		l.sk, err = s.keyAttr(l, "sk", "", d.sk, nil)
	case len(d.sk) > 0:
		if kind == BaseTable {
			suffix = nil // the base key is unique by itself
		}
		l.sk, err = s.keyAttr(l, "sk", skName, d.sk, suffix)
	case d.skName != "":
		err = fail("", "sk=%s is declared but no field has the role %s", d.skName, roleTag(d.name, "sk"))
	}
	if err != nil {
		return nil, err
	}
	if d.shards > 0 && l.sk == nil {
		return nil, fail("", "a sharded index needs a sort key to merge its shards in order, and its key holds the whole base key (one item per partition): remove shards=%d", d.shards)
	}
	switch kind {
	case BaseTable:
		l.table = d.physical
	case IndexTable:
		l.table = cmp.Or(d.names[kind], s.table+"-"+d.name)
	default:
		l.table, l.index = s.table, cmp.Or(d.names[kind], d.name)
	}
	if p := cmp.Or(l.index, l.table); !physicalName.MatchString(p) {
		return nil, fail("", "physical name %q is not a valid DynamoDB name (3-255 of a-z A-Z 0-9 _ . -)", p)
	}
	l.stored = []*keyAttr{l.pk}
	if l.sk != nil {
		l.stored = append(l.stored, l.sk)
	}
	if kind == GSI || kind == LSI {
		for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
			if k != nil && !slices.Contains(l.stored, k) {
				l.stored = append(l.stored, k)
			}
		}
	}
	l.readKeys = keyNames(l.stored)
	if kind == IndexTable {
		for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
			if k != nil && !slices.Contains(l.readKeys, k.attr) {
				l.readKeys = append(l.readKeys, k.attr)
			}
		}
		if d.nativeSortOnGSI() && !slices.Contains(l.readKeys, d.sk[0].f.attr) {
			l.readKeys = append(l.readKeys, d.sk[0].f.attr) // the GSI form's native sort key
		}
	}
	l.tombstones = kind == IndexTable || s.softDelete
	l.consistent = kind != GSI
	l.ownTable = kind == IndexTable
	l.uniqueSort = l.sk != nil && (kind == BaseTable || kind == IndexTable || !l.sk.native)
	if err := l.checkNames(); err != nil {
		return nil, err
	}
	return l, nil
}

// maxKeyAttrs is the most key attributes of each role (partition, sort) a
// GSI key may have: DynamoDB's limit for multi-attribute keys.
const maxKeyAttrs = 4

// nativeLayout completes l, a NativeGSI layout: one key attribute per
// declared component, the component's own model attribute, keeping its
// type. pk= and sk= (the derived form's attribute names) do not apply.
func nativeLayout(l *layout, fail func(field, format string, args ...any) error) (*layout, error) {
	d, s := l.decl, l.schema
	seen := map[string]bool{}
	// multi makes a multi-attribute key of comps, then of suffix (the base
	// key components a sharded index's sort key appends); extra is how many
	// more attributes the key takes (a sharded partition key's shard).
	multi := func(part string, comps, suffix []*component, extra int) (*keyAttr, error) {
		if len(comps)+len(suffix) == 0 {
			return nil, nil
		}
		if n := len(comps) + len(suffix) + extra; n > maxKeyAttrs {
			role := map[string]string{"pk": "partition", "sk": "sort"}[part]
			switch {
			case d.shards > 0 && part == "pk":
				return nil, fail("", "a sharded native-gsi keeps the shard as a partition key attribute of its own, so it has at most %d partition components (DynamoDB's limit is %d attributes); this one has %d: remove shards=%d, or make the index a gsi (a derived key)", maxKeyAttrs-1, maxKeyAttrs, len(comps), d.shards)
			case d.shards > 0:
				return nil, fail("", "a sharded native-gsi's sort key ends with the base key attributes it lacks (%s), so that the shards merge in one order: with them it has %d sort attributes, over DynamoDB's limit of %d; remove shards=%d, or make the index a gsi (a derived key)", fieldNames(suffix), n, maxKeyAttrs, d.shards)
			}
			return nil, fail(comps[maxKeyAttrs].f.goName, "a native-gsi key has at most %d %s components (DynamoDB's limit); this one has %d: make the index a gsi (a derived key)", maxKeyAttrs, role, len(comps))
		}
		k := &keyAttr{parts: comps, suffix: suffix, partition: part == "pk"}
		for _, c := range k.components() {
			if !nativeOK([]*component{c}) {
				why := "its format is not the attribute's own"
				switch {
				case c.label != "":
					why = "it has a label"
				case c.enc.width != 0:
					why = "it has a fixed width"
				case c.enc.kind == encTime:
					why = "a time.Time's RFC 3339 text does not sort chronologically"
				case c.enc.kind == encCustom:
					why = "a " + c.f.typ.String() + " is not a String, Number or Binary key"
				}
				return nil, fail(c.f.goName, "%s cannot be a native-gsi key attribute: %s; make the index a gsi (a derived key)", c.f.attr, why)
			}
			if seen[c.f.attr] {
				return nil, fail(c.f.goName, "%s is a key attribute of the native-gsi twice", c.f.attr)
			}
			seen[c.f.attr] = true
			sub, err := s.keyAttr(l, part, "", []*component{c}, nil)
			if err != nil {
				return nil, err
			}
			k.attrs = append(k.attrs, sub)
		}
		k.attr, k.scalar = k.attrs[0].attr, k.attrs[0].scalar
		return k, nil
	}
	var err error
	pkComps, extra := d.partition(s.base.decl), 0
	if d.shards > 0 {
		extra = 1
	}
	if l.pk, err = multi("pk", pkComps, nil, extra); err != nil {
		return nil, err
	}
	if l.pk == nil {
		return nil, fail("", "the base table has no partition component: tag a field with %s", roleTag(d.name, "pk"))
	}
	var suffix []*component
	if d.shards > 0 {
		if len(d.sk) == 0 {
			return nil, fail("", "a sharded index needs a sort key to merge its shards in order: declare sort components, or remove shards=%d", d.shards)
		}
		// The shard is a partition key attribute of its own, a Number the
		// base key hashes to, kept on the base item. The sort key ends with
		// the base key components it lacks: unique in the logical
		// partition, so the shards merge in one total order.
		sh := &keyAttr{attr: "_" + d.name + "_shard", scalar: types.ScalarAttributeTypeN, partition: true, shards: d.shards, shardOnly: true}
		for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
			if k != nil {
				for _, c := range k.parts {
					sh.shardBy = append(sh.shardBy, c.f)
				}
			}
		}
		if s.attrs[sh.attr] {
			return nil, fail("", "the shard attribute %q of a sharded native-gsi collides with a model attribute", sh.attr)
		}
		l.pk.attrs = append(l.pk.attrs, sh)
		l.pk.shards = d.shards
		suffix = baseSuffix(s.base, pkComps, d.sk, l.pk)
	}
	if l.sk, err = multi("sk", d.sk, suffix, 0); err != nil {
		return nil, err
	}
	l.uniqueSort = d.shards > 0
	l.table, l.index = s.table, cmp.Or(d.names[NativeGSI], d.name)
	if !physicalName.MatchString(l.index) {
		return nil, fail("", "physical name %q is not a valid DynamoDB name (3-255 of a-z A-Z 0-9 _ . -)", l.index)
	}
	l.stored = append(l.stored, l.keyAttrs()...)
	for _, k := range []*keyAttr{s.base.pk, s.base.sk} {
		if k != nil && !slices.ContainsFunc(l.stored, func(o *keyAttr) bool { return o.attr == k.attr }) {
			l.stored = append(l.stored, k)
		}
	}
	l.readKeys = keyNames(l.stored)
	l.tombstones = s.softDelete
	return l, nil
}

// nativeSortOnGSI reports whether d's GSI or LSI form keeps its sort key
// native, as the model attribute itself: one plain component, no derived
// attribute named for it, and no shards (a sharded sort key is derived).
func (d *declaration) nativeSortOnGSI() bool {
	return d.skName == "" && d.shards == 0 && nativeOK(d.sk)
}

// keyNames returns the attribute names of keys.
func keyNames(keys []*keyAttr) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.attr)
	}
	return out
}

// keyAttrs lists l's own key attributes as DynamoDB keys them: the
// partition key's, then the sort key's (several each for a multi-attribute
// key).
func (l *layout) keyAttrs() []*keyAttr {
	var out []*keyAttr
	for _, k := range []*keyAttr{l.pk, l.sk} {
		switch {
		case k == nil:
		case k.attrs != nil:
			out = append(out, k.attrs...)
		default:
			out = append(out, k)
		}
	}
	return out
}

// other is the kind an index of kind k would be in a migration: a GSI or an
// LSI becomes an index table, an index table a GSI; the base table has none.
func (k Kind) other() (Kind, bool) {
	switch k {
	case GSI, LSI:
		return IndexTable, true
	case IndexTable:
		return GSI, true
	}
	return k, false
}

// checkNames checks the layout's own attribute names: a derived key
// attribute must not be a model attribute, and partition and sort key must
// differ. Collisions between layouts are the schema's check.
func (l *layout) checkNames() error {
	s := l.schema
	for _, k := range []*keyAttr{l.pk, l.sk} {
		if k == nil || k.native || (l.kind == LSI && k == s.base.pk) {
			continue
		}
		if s.attrs[k.attr] {
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name, Reason: fmt.Sprintf("derived key attribute %q collides with a model attribute", k.attr)}
		}
	}
	if l.pk != nil && l.sk != nil && l.pk.attr == l.sk.attr {
		return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name, Reason: fmt.Sprintf("partition and sort key are both %q", l.pk.attr)}
	}
	return nil
}

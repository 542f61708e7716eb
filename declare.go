package ddbindex

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file parses a model's declaration: the TableSpec and IndexSpec
// tags and the ddbindex tags of its fields, into a schema; layoutOf
// (index.go) lays each declaration out.

// TableSpec is a zero-size marker: a blank field of this type declares the
// model's base table in its ddbindex tag.
//
//	_ ddbindex.TableSpec `ddbindex:"tickets,pk=PK,sk=SK"`
//
// The first word is the table name. Options:
//
//	pk=ATTR, sk=ATTR    the attributes that hold a composite (derived) base key
//	softdelete          Delete writes a tombstone, and reads of the base table
//	                    and its GSIs and LSIs skip tombstones too
//	retention=DURATION  how long a tombstone lives before TTL removes it, as
//	                    time.ParseDuration reads it (default 168h, 7 days;
//	                    at least 24h, the time a stream keeps its records)
//	deletedattr=ATTR    the tombstone marker attribute (default _deleted)
//	ttlattr=ATTR        the attribute a tombstone's expiry (epoch seconds) is
//	                    written to, and that TTL is enabled on (default _ttl)
//	versionattr=ATTR    the attribute that holds the version of the change that
//	                    wrote an index-table entry (default _ver)
//	tokenattr=ATTR      the base-table attribute where each write records a
//	                    random token of its own (default _wtok): a retry of an
//	                    attempt whose answer was lost recognises its own write
//	                    instead of reporting a conflict or applying an update
//	                    twice, and a write-through write that read the item
//	                    before another write can tell
//
// The attributes the library writes are part of the stored data: every
// process of a fleet must declare the same ones.
type TableSpec struct{}

// IndexSpec is a zero-size marker: a blank field of this type declares one
// index in its ddbindex tag.
//
//	_ ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,name=tickets-by-status,pk=GSI1PK,sk=GSI1SK"`
//
// The first word is the logical index name that queries use. Options:
//
//	type=gsi|lsi|table  the index type (required): the form that serves reads
//	keep=gsi|lsi|table  a second form that every write keeps up too, during a
//	                    migration between the two (see docs/migration.md)
//	name=NAME           the physical name of the declared type's form: the GSI/LSI
//	                    name, or the index table's name (default: the logical name
//	                    for gsi/lsi, TABLE-LOGICAL for table)
//	gsi=NAME, lsi=NAME, table=NAME  the physical name of that form: declared,
//	                    kept, or no longer kept (a form the index used to have,
//	                    under a name of its own: schema.Check refuses a
//	                    declaration that neither serves nor keeps a form that
//	                    still exists, and looks for it under this name)
//	pk=ATTR, sk=ATTR    the attributes that hold the composite (derived) key values
//	                    (required for a composite GSI/LSI key; an index table defaults to _pk and _sk)
//	project=all|keys|a|b|c  what the index projects (default all)
//	shards=N            write-shard the index's partitions N ways (1 to 1024; see
//	                    docs/sharding.md): each item's partition
//	                    value gets a suffix, a stable hash of its base key mod N
//	                    (on a native-gsi, a Number attribute _INDEX_shard of its
//	                    own), and a query reads the N shards and merges them in order
type IndexSpec struct{}

// field is one model attribute that takes part in a key.
type field struct {
	goName    string
	attr      string
	ord       int // the field's place in schema.fields, and in keyTexts
	index     []int
	typ       reflect.Type // the value type (pointer stripped)
	ptr       bool
	omitEmpty bool
	unixTime  bool    // dynamodbav:",unixtime": stored as whole epoch seconds
	canon     encoder // the default encoder: positions and cursors hold this text
	stored    string  // the attribute types its stored form may have (storedAs)
}

// component is one field in one key role, with that role's format and label.
type component struct {
	f     *field
	enc   encoder
	label string // a literal written before the value, e.g. STATUS in STATUS#open
}

// sameFormat reports whether the role's text equals the field's canonical text.
func (c *component) sameFormat() bool {
	return c.enc.width == c.f.canon.width && c.enc.tf == c.f.canon.tf && c.enc.kind == c.f.canon.kind
}

// keyAttr is one physical key attribute: a partition or sort key of a table or
// index.
type keyAttr struct {
	attr   string
	native bool // a single component stored as the model attribute itself
	// attrs, for a multi-attribute key (a NativeGSI's), are its key
	// attributes, one native keyAttr per component, in key schema order;
	// parts lists the same components, attr and scalar are those of the
	// first. nil for a key of one attribute.
	attrs  []*keyAttr
	parts  []*component
	suffix []*component // base key components appended for uniqueness and a total order
	scalar types.ScalarAttributeType
	// partition is true for a partition (hash) key, whose values may be
	// 2048 bytes; a sort key's may be 1024.
	partition bool
	// shards is the number of write shards of a sharded index's partition
	// key (0: not sharded). Its stored value ends with one more component,
	// the shard: shardOf the canonical texts of shardBy, the base key fields.
	shards  int
	shardBy []*field
	// shardOnly marks the shard attribute of a sharded NativeGSI: one of its
	// partition key's attrs, a Number holding the shard alone (shardOf
	// shardBy), kept on the base item as a derived attribute. It has no
	// parts.
	shardOnly bool
}

// declaration is the TableSpec or one IndexSpec as the model declares it:
// its options and its key components. layoutOf turns it into the layout of
// one kind; its own type= is the form reads use.
type declaration struct {
	schema   *schema
	name     string          // logical name; "" for the base table
	kind     Kind            // the declared type (BaseTable for the TableSpec)
	spec     string          // the Go field of the spec, for errors
	physical string          // the TableSpec's table name
	names    map[Kind]string // the physical name of each form: name= for the declared type, gsi=, lsi=, table=
	keep     Kind            // keep=: the form kept besides the declared one; noKind for none
	shards   int             // shards=: the number of write shards of each partition; 0 for none
	forms    []*layout       // the layout of each form: the declared type's, then the kept form's
	pkName   string          // pk=
	skName   string          // sk=
	pk, sk   []*component
	project  []string // nil means all
	keysOnly bool
	slots    []*field // the fields a position names: index key fields, then base key fields
	lay      *layout  // the layout of the declared kind
}

// schema is a parsed, validated model declaration. It is immutable and shared.
type schema struct {
	typ        reflect.Type
	model      string
	table      string
	softDelete bool
	base       *layout            // the base table's layout
	indexes    []*layout          // every form of every index: the declared type's and any kept form's
	byName     map[string]*layout // each index's declared form
	attrs      map[string]bool    // every attribute the model marshals
	attrList   []string           // the same, in field order
	fields     []*field           // the key fields, each at its ord
	version    *versionField      // the field tagged ddbindex:"version", if any
	deleted    *deletedField      // the field tagged ddbindex:"deleted", if any
	// sys are the attributes the library writes beside the model's own
	// (TableSpec: deletedattr=, ttlattr=, versionattr=, tokenattr=), and
	// retention how long a tombstone lives (retention=).
	sys       sysAttrs
	retention time.Duration
}

// sysAttrs are the attributes the library writes beside a model's own.
type sysAttrs struct {
	deleted string // the tombstone marker (default "_deleted")
	ttl     string // a tombstone's expiry, epoch seconds, that TTL reads (default "_ttl")
	version string // the version of the change that wrote an index-table entry (default "_ver")
	token   string // the base-table write token of each write (default "_wtok")
}

// defaultRetention is how long a tombstone lives when retention= is not
// given.
const defaultRetention = 7 * 24 * time.Hour

// minRetention is the shortest retention= accepted. An index-table write
// is conditioned on the version of the entry it meets; once TTL has
// removed a tombstone, an older record (replayed from the stream, which
// keeps records 24 hours) meets nothing and writes its entry again.
const minRetention = 24 * time.Hour

// versionField is the model's version attribute: an integer that every
// write through ddbindex increments, and that conditions it.
type versionField struct {
	goName string
	attr   string
	index  []int
}

// deletedField is the model's tombstone flag: a bool that reads fill (true
// for a tombstone) and that no write stores.
type deletedField struct {
	goName string
	attr   string // the attribute attributevalue would store it under; "" for none
	index  []int
}

var schemaCache sync.Map // reflect.Type -> *schemaResult

type schemaResult struct {
	s   *schema
	err error
}

// schemaFor parses and validates T's declarations once; the result is cached.
func schemaFor(t reflect.Type) (*schema, error) {
	if r, ok := schemaCache.Load(t); ok {
		res := r.(*schemaResult)
		return res.s, res.err
	}
	s, err := parseSchema(t)
	r, _ := schemaCache.LoadOrStore(t, &schemaResult{s, err})
	res := r.(*schemaResult)
	return res.s, res.err
}

var physicalName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// roleDecl is one key role as the tag declares it, before positions are sorted.
type roleDecl struct {
	index string // "" for the base table
	part  string // "pk" or "sk"
	pos   int
	comp  *component
}

// declParser holds a model's declaration while parseSchema reads it, phase by
// phase.
type declParser struct {
	s         *schema
	tableDecl *declaration   // the TableSpec's
	decls     []*declaration // the IndexSpecs', in field order
	roles     []roleDecl     // every key role of every field
}

// fail returns the declaration error of a broken rule.
func (p *declParser) fail(fieldName, index, format string, args ...any) error {
	return &Error{Sentinel: ErrDeclaration, Model: p.s.model, Field: fieldName, Index: index, Reason: fmt.Sprintf(format, args...)}
}

// parseSchema reads model t's declaration in phases: the TableSpec and
// IndexSpec tags; the fields' ddbindex tags that are no key roles (deleted)
// and the stored attributes' names; the attributes, the version field and
// the key fields with their roles; the names; each key's components in
// position order; each index form's layout; and the checks that need all
// of it.
func parseSchema(t reflect.Type) (*schema, error) {
	if t.Kind() != reflect.Struct {
		return nil, &Error{Sentinel: ErrDeclaration, Model: t.String(), Reason: "a model must be a struct type"}
	}
	p := &declParser{s: &schema{typ: t, model: t.String(), byName: map[string]*layout{}, attrs: map[string]bool{}}}
	// Attributes are the fields attributevalue stores, under its names.
	avs := avFieldsOf(t)
	for _, phase := range []func() error{
		func() error { return p.specs(t) },
		func() error { return p.taggedFields(t, avs) },
		func() error { return p.attributes(avs) },
		p.names,
		p.keys,
		p.layouts,
		p.s.checkAttributeNames,
		p.s.checkSysAttrs,
		p.s.checkExpressionNames,
	} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	return p.s, nil
}

// specs reads the TableSpec and IndexSpec tags of t's marker fields.
func (p *declParser) specs(t reflect.Type) error {
	// Blank marker fields are not reliably among reflect.VisibleFields (two or
	// more cancel out as same-named fields; a single one is listed): list the
	// top-level ones first, and skip them there.
	fields := make([]reflect.StructField, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if sf := t.Field(i); sf.Name == "_" {
			fields = append(fields, sf)
		}
	}
	for _, sf := range reflect.VisibleFields(t) {
		if sf.Name != "_" || len(sf.Index) != 1 {
			fields = append(fields, sf)
		}
	}
	for _, sf := range fields {
		if sf.Type == reflect.TypeFor[TableSpec]() || sf.Type == reflect.TypeFor[IndexSpec]() {
			if err := p.spec(sf); err != nil {
				return err
			}
		}
	}
	return nil
}

// spec reads one TableSpec or IndexSpec tag.
func (p *declParser) spec(sf reflect.StructField) error {
	s := p.s
	tag, hasTag := sf.Tag.Lookup("ddbindex")
	if !hasTag {
		return p.fail(sf.Name, "", "a %s field needs a ddbindex tag", sf.Type.Name())
	}
	words := strings.Split(tag, ",")
	d := &declaration{schema: s, name: strings.TrimSpace(words[0]), spec: sf.Name}
	isTable := sf.Type == reflect.TypeFor[TableSpec]()
	if isTable {
		if p.tableDecl != nil {
			return p.fail(sf.Name, "", "the base table is declared twice")
		}
		d.kind = BaseTable
		d.physical, d.name = d.name, ""
		p.tableDecl = d
	} else {
		if d.name == "" {
			return p.fail(sf.Name, "", "an IndexSpec tag starts with the logical index name")
		}
		d.kind, d.keep = noKind, noKind
		d.names = map[Kind]string{}
		p.decls = append(p.decls, d)
	}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(w), "=")
		switch {
		case k == "pk":
			d.pkName = v
		case k == "sk":
			d.skName = v
		case k == "softdelete" && isTable && v == "":
			s.softDelete = true
		case (k == "deletedattr" || k == "ttlattr" || k == "versionattr" || k == "tokenattr") && isTable:
			if v == "" {
				return p.fail(sf.Name, "", "option %s needs a value", k)
			}
			*map[string]*string{"deletedattr": &s.sys.deleted, "ttlattr": &s.sys.ttl, "versionattr": &s.sys.version, "tokenattr": &s.sys.token}[k] = v
		case k == "retention" && isTable:
			r, err := time.ParseDuration(v)
			if err != nil || r <= 0 {
				return p.fail(sf.Name, "", "retention=%s is not a positive duration (such as 168h): how long a tombstone lives before TTL removes it", v)
			}
			if r < minRetention {
				return p.fail(sf.Name, "", "retention=%s is shorter than %s: a tombstone must outlive the records a stream keeps (24 hours), or a record replayed after TTL removed it brings back the entry it deleted", v, minRetention)
			}
			s.retention = r
		case (k == "type" || k == "keep") && !isTable:
			kind, ok := indexKind(v)
			if !ok {
				return p.fail(sf.Name, d.name, "%s=%s is not an index type (want gsi, lsi, table or native-gsi)", k, v)
			}
			if k == "type" {
				d.kind = kind
			} else {
				d.keep = kind
			}
		case k == "name" && !isTable:
			d.names[noKind] = v
		case (k == "gsi" || k == "lsi" || k == "table" || k == "native-gsi") && !isTable:
			kind, _ := indexKind(k)
			d.names[kind] = v
		case k == "shards" && !isTable:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxShards {
				return p.fail(sf.Name, d.name, "shards=%s is not a number of shards from 1 to %d", v, maxShards)
			}
			d.shards = n
		case k == "project" && !isTable:
			switch v {
			case "all", "":
			case "keys":
				d.keysOnly = true
			default:
				d.project = strings.Split(v, "|")
			}
		default:
			return p.fail(sf.Name, d.name, "unknown option %q in %s tag", w, sf.Type.Name())
		}
		if (k == "pk" || k == "sk" || k == "name" || k == "gsi" || k == "lsi" || k == "table" || k == "native-gsi") && v == "" {
			return p.fail(sf.Name, d.name, "option %s needs a value", k)
		}
	}
	if isTable {
		return nil
	}
	if d.kind == noKind {
		return p.fail(sf.Name, d.name, "type= is missing (want type=gsi, type=lsi, type=table or type=native-gsi)")
	}
	if d.keep == d.kind {
		return p.fail(sf.Name, d.name, "keep=%s names the declared type itself: keep= names the other form kept during a migration", d.keep)
	}
	if n, ok := d.names[noKind]; ok {
		if other, has := d.names[d.kind]; has && other != n {
			return p.fail(sf.Name, d.name, "name=%s and %s=%s both name the %s form", n, d.kind, other, d.kind)
		}
		d.names[d.kind] = n
		delete(d.names, noKind)
	}
	return nil
}

// taggedFields checks every field with a ddbindex tag, reads the deleted
// field, and refuses attribute names that two fields declare.
func (p *declParser) taggedFields(t reflect.Type, avs avFieldSet) error {
	s := p.s
	for _, sf := range allTagged(t) {
		if strings.TrimSpace(sf.Tag.Get("ddbindex")) == "deleted" {
			switch {
			case sf.Type.Kind() != reflect.Bool:
				return p.fail(sf.Name, "", "a deleted field must be a bool, not %s", sf.Type)
			case !sf.IsExported():
				return p.fail(sf.Name, "", "a deleted field must be exported: reads set it")
			case s.deleted != nil:
				return p.fail(sf.Name, "", "a second deleted field (the first is %s)", s.deleted.goName)
			}
			s.deleted = &deletedField{goName: sf.Name, index: sf.Index}
			continue
		}
		if err := checkTaggedField(sf, avs); err != nil {
			return p.fail(sf.Name, "", "%v", err)
		}
	}
	if len(avs.conflicts) > 0 {
		c := avs.conflicts[0]
		names := make([]string, len(c))
		for i, f := range c {
			names[i] = f.sf.Name
		}
		return p.fail(c[len(c)-1].sf.Name, "", "attribute %q is declared by two fields (%s) that attributevalue ranks equal, so it stores neither: rename one, or tag one dynamodbav:\"-\"",
			c[0].name, strings.Join(names, ", "))
	}
	return nil
}

// attributes reads the stored attributes: their names, the version field,
// and each key field with its key roles.
func (p *declParser) attributes(avs avFieldSet) error {
	s := p.s
	for _, av := range avs.visible {
		sf := av.sf
		if sf.Type == reflect.TypeFor[TableSpec]() || sf.Type == reflect.TypeFor[IndexSpec]() {
			continue
		}
		attr, opts := av.name, avTagOptions(sf)
		if s.deleted != nil && slices.Equal(sf.Index, s.deleted.index) {
			// Not a stored attribute: writes drop it, reads set it.
			s.deleted.attr = attr
			continue
		}
		if !s.attrs[attr] {
			s.attrList = append(s.attrList, attr)
		}
		s.attrs[attr] = true
		tag, hasTag := sf.Tag.Lookup("ddbindex")
		if !hasTag {
			continue
		}
		if strings.TrimSpace(tag) == "version" {
			if k := sf.Type.Kind(); k < reflect.Int || k > reflect.Uint64 {
				return p.fail(sf.Name, "", "a version field must be an integer, not %s", sf.Type)
			}
			if bits := sf.Type.Bits(); bits < 64 {
				// Every write increments it: a narrower one would wrap
				// around to a version the item had before, or a negative one.
				most := uint64(1)<<bits - 1
				if sf.Type.Kind() < reflect.Uint {
					most >>= 1
				}
				return p.fail(sf.Name, "", "a version field must be 64 bits wide (int64 or uint64), not %s: every write increments it, and it would wrap around after %d writes", sf.Type, most)
			}
			if s.version != nil {
				return p.fail(sf.Name, "", "a second version field (the first is %s)", s.version.goName)
			}
			s.version = &versionField{goName: sf.Name, attr: attr, index: sf.Index}
			continue
		}
		ft, ptr := sf.Type, false
		if ft.Kind() == reflect.Pointer {
			ft, ptr = ft.Elem(), true
		}
		if err := checkKeyAVOptions(ft, opts); err != nil {
			return p.fail(sf.Name, "", "%v", err)
		}
		fl := &field{goName: sf.Name, attr: attr, index: sf.Index, typ: ft, ptr: ptr, omitEmpty: opts["omitempty"], unixTime: opts["unixtime"]}
		var err error
		if fl.canon, err = newEncoder(ft, 0, ""); err != nil {
			return p.fail(sf.Name, "", "%v", err)
		}
		if fl.unixTime && ft != timeType {
			fl.unixTime = false // attributevalue applies unixtime to times only
		}
		fl.stored = storedAs(ft)
		fl.ord = len(s.fields)
		s.fields = append(s.fields, fl)
		for _, role := range strings.Split(tag, ";") {
			r, err := parseRole(strings.TrimSpace(role), fl)
			if err != nil {
				return p.fail(sf.Name, r.index, "%v", err)
			}
			p.roles = append(p.roles, r)
		}
	}
	return nil
}

// names checks the base table's name and that each index is declared once.
func (p *declParser) names() error {
	if p.tableDecl == nil {
		return p.fail("", "", "no base table: add a field `_ ddbindex.TableSpec `ddbindex:\"TABLE-NAME\"``")
	}
	p.s.table = p.tableDecl.physical
	if !physicalName.MatchString(p.s.table) {
		return p.fail("", "", "table name %q is not a valid DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)", p.s.table)
	}
	names := map[string]bool{}
	for _, d := range p.decls {
		if names[d.name] {
			return p.fail("", d.name, "the index is declared twice")
		}
		names[d.name] = true
	}
	for _, r := range p.roles {
		if r.index != "" && !names[r.index] {
			return p.fail(r.comp.f.goName, r.index, "no IndexSpec declares an index named %q", r.index)
		}
	}
	return nil
}

// keys gathers each key's components in position order.
func (p *declParser) keys() error {
	type partKey struct{ index, part string }
	parts := map[partKey][]roleDecl{}
	for _, r := range p.roles {
		k := partKey{r.index, r.part}
		parts[k] = append(parts[k], r)
	}
	ordered := func(index, part string) ([]*component, error) {
		rs := parts[partKey{index, part}]
		slices.SortStableFunc(rs, func(a, b roleDecl) int { return a.pos - b.pos })
		out := make([]*component, len(rs))
		for i, r := range rs {
			if r.pos != i {
				if i > 0 && rs[i-1].pos == r.pos {
					return nil, p.fail(r.comp.f.goName, index, "%s position %d is declared twice (also by %s)", part, r.pos, rs[i-1].comp.f.goName)
				}
				return nil, p.fail(r.comp.f.goName, index, "%s positions must be 0, 1, 2, ... without gaps; position %d is missing", part, i)
			}
			for _, prev := range out[:i] {
				if prev.f == r.comp.f {
					return nil, p.fail(r.comp.f.goName, index, "the field appears twice in the %s", part)
				}
			}
			out[i] = r.comp
		}
		return out, nil
	}
	for _, d := range append([]*declaration{p.tableDecl}, p.decls...) {
		var err error
		if d.pk, err = ordered(d.name, "pk"); err != nil {
			return err
		}
		if d.sk, err = ordered(d.name, "sk"); err != nil {
			return err
		}
	}
	return nil
}

// layouts lays out every form of every declaration, the base table's
// first: an index layout appends base key components.
func (p *declParser) layouts() error {
	s := p.s
	for _, d := range append([]*declaration{p.tableDecl}, p.decls...) {
		d.slots = d.slotsOf(p.tableDecl)
		lay, err := layoutOf(d, d.kind)
		if err != nil {
			return err
		}
		d.lay = lay
		if d == p.tableDecl {
			s.base = lay
			continue
		}
		s.byName[d.name] = lay
		d.forms = []*layout{lay}
		if d.keep != noKind {
			kept, err := layoutOf(d, d.keep)
			if err != nil {
				return err
			}
			d.forms = append(d.forms, kept)
		}
		// gsi=, lsi= or table= of a form the index neither is nor keeps
		// names where that form lived (schema.Check looks for it there):
		// the index must be able to have it, under a valid name.
		for _, kind := range indexKinds {
			if _, named := d.names[kind]; named && kind != d.kind && kind != d.keep {
				if _, err := layoutOf(d, kind); err != nil {
					return err
				}
			}
		}
		s.indexes = append(s.indexes, d.forms...)
	}
	// GSIs and LSIs of the base table need names of their own: a gsi and
	// the native-gsi kept beside it both default to the index's name.
	owner := map[string]*layout{}
	for _, l := range s.indexes {
		if l.index == "" {
			continue
		}
		if o, ok := owner[l.index]; ok {
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name,
				Reason: fmt.Sprintf("the %s of index %s and the %s of index %s are both named %q on the base table: name one of them (%s=NAME in its IndexSpec)", o.kind, o.name, l.kind, l.name, l.index, l.kind)}
		}
		owner[l.index] = l
	}
	if o, l, _ := s.sharedTable(func(name string) string { return name }); l != nil {
		return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name,
			Reason: fmt.Sprintf("%s and %s are both the table %q: their items would mix in one table; give the index table a name of its own (table=NAME in its IndexSpec)", o.tableLabel(), l.tableLabel(), l.table)}
	}
	return nil
}

// ownTables returns the layouts that keep their items in a table of their
// own: the base table's, then each index table's, declared or kept.
func (s *schema) ownTables() []*layout {
	out := []*layout{s.base}
	for _, l := range s.indexes {
		if l.ownTable {
			out = append(out, l)
		}
	}
	return out
}

// sharedTable returns two of s's own tables (see ownTables) that name maps
// to one physical table, the first's layout before the second's, and that
// table; l is nil when each has a table of its own. Two forms in one table
// would mix their entries, and an index table named as the base table would
// mix its entries with the base items.
func (s *schema) sharedTable(name func(string) string) (o, l *layout, physical string) {
	seen := map[string]*layout{}
	for _, l := range s.ownTables() {
		p := name(l.table)
		if o, ok := seen[p]; ok {
			return o, l, p
		}
		seen[p] = l
	}
	return nil, nil, ""
}

// checkSysAttrs applies the defaults of the attributes the library writes
// and of the retention, and checks that those attributes are four distinct
// names that the model does not use.
func (s *schema) checkSysAttrs() error {
	for _, d := range []struct {
		v   *string
		def string
	}{{&s.sys.deleted, "_deleted"}, {&s.sys.ttl, "_ttl"}, {&s.sys.version, "_ver"}, {&s.sys.token, "_wtok"}} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	if s.retention == 0 {
		s.retention = defaultRetention
	}
	reserved := []string{s.sys.deleted, s.sys.ttl, s.sys.version, s.sys.token}
	for i, a := range reserved {
		if s.attrs[a] {
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("attribute %q is reserved for tombstones, versions and write tokens (TableSpec deletedattr=, ttlattr=, versionattr=, tokenattr=); rename the model attribute or choose another name in the TableSpec tag", a)}
		}
		if slices.Contains(reserved[:i], a) {
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("the TableSpec tag names attribute %q for two purposes (deletedattr=, ttlattr=, versionattr= and tokenattr= must differ)", a)}
		}
	}
	return nil
}

// checkExpressionNames refuses a "[" or "]" in the name of an attribute
// that the library's conditions, key conditions and projections name: the
// key attributes of every table and index and their components, the version
// field, and the attributes of tombstones, versions and write tokens. The
// SDK's expression builder reads brackets as list indexes, even in a name
// it does not split at dots, so a condition on such an attribute would test
// another path (attribute_not_exists of a list element is always true).
func (s *schema) checkExpressionNames() error {
	type named struct{ attr, what string }
	var names []named
	for _, f := range s.fields {
		names = append(names, named{f.attr, "the key field " + f.goName})
	}
	if s.version != nil {
		names = append(names, named{s.version.attr, "the version field " + s.version.goName})
	}
	for _, l := range append([]*layout{s.base}, s.indexes...) {
		for _, k := range l.keyAttrs() {
			names = append(names, named{k.attr, "a key attribute of " + l.label()})
		}
	}
	for _, a := range []string{s.sys.deleted, s.sys.ttl, s.sys.version, s.sys.token} {
		names = append(names, named{a, "the TableSpec's deletedattr=, ttlattr=, versionattr= or tokenattr="})
	}
	for _, n := range names {
		if strings.ContainsAny(n.attr, "[]") {
			return &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("attribute %q (%s) holds a bracket, which DynamoDB expressions read as a list index: ddbindex names it in conditions and key conditions, so rename it", n.attr, n.what)}
		}
	}
	return nil
}

// partition lists the components of the declared partition key. An index
// that declares none (an LSI always) shares the base table's partition.
func (d *declaration) partition(base *declaration) []*component {
	if len(d.pk) == 0 && d != base {
		return base.pk
	}
	return d.pk
}

// slotsOf lists the fields that a position names, in a stable order: the
// index's partition and sort components, then the base key fields not yet
// named (so on every layout of the index, whose keys may append those fields
// or not, positions name the same fields).
func (d *declaration) slotsOf(base *declaration) []*field {
	var out []*field
	for _, cs := range [][]*component{d.partition(base), d.sk, base.pk, base.sk} {
		for _, c := range cs {
			if !slices.Contains(out, c.f) {
				out = append(out, c.f)
			}
		}
	}
	return out
}

// checkAttributeNames checks what the layouts share: the derived key
// attributes of GSIs and LSIs live on the base item, so two of them may not
// take one name; and project= names model attributes.
func (s *schema) checkAttributeNames() error {
	owner := map[string]string{}
	for _, l := range append([]*layout{s.base}, s.indexes...) {
		for _, k := range l.derivedAttrs() { // native keys are model attributes; an index table's live in its own table
			who := "the derived " + l.label() + " key"
			if prev, ok := owner[k.attr]; ok && prev != who {
				return &Error{Sentinel: ErrDeclaration, Model: s.model, Reason: fmt.Sprintf("attribute %q is used both by %s and by %s: give each its own with pk= or sk= in its IndexSpec", k.attr, prev, who)}
			}
			owner[k.attr] = who
		}
		for _, a := range l.project {
			if !s.attrs[a] {
				return &Error{Sentinel: ErrDeclaration, Model: s.model, Index: l.name, Reason: fmt.Sprintf("project= names %q, which is not a model attribute", a)}
			}
		}
	}
	return nil
}

func roleTag(index, part string) string {
	if index == "" {
		return `ddbindex:"` + part + `"`
	}
	return `ddbindex:"` + index + "." + part + `"`
}

// parseRole reads one role: [INDEX.]pk|sk[:POS][,label=L][,width=N][,format=F].
func parseRole(role string, f *field) (roleDecl, error) {
	words := strings.Split(role, ",")
	target := strings.TrimSpace(words[0])
	r := roleDecl{}
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		r.index, target = target[:i], target[i+1:]
		if r.index == "" {
			return r, fmt.Errorf("role %q names an empty index", role)
		}
	}
	part, pos, hasPos := strings.Cut(target, ":")
	if part != "pk" && part != "sk" {
		return r, fmt.Errorf("role %q: want pk or sk, optionally INDEX.pk or INDEX.sk, with :POSITION", role)
	}
	r.part = part
	if hasPos {
		n, err := strconv.Atoi(pos)
		if err != nil || n < 0 || n > 64 {
			return r, fmt.Errorf("role %q: position %q is not a number from 0 to 64", role, pos)
		}
		r.pos = n
	}
	var label, format string
	var width int
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(w), "=")
		switch k {
		case "label":
			if v == "" {
				return r, fmt.Errorf("role %q: label= needs a value", role)
			}
			label = v
		case "width":
			n, err := strconv.Atoi(v)
			if err != nil {
				return r, fmt.Errorf("role %q: width=%q is not a number", role, v)
			}
			width = n
		case "format":
			format = v
		default:
			return r, fmt.Errorf("role %q: unknown option %q (want label=, width= or format=)", role, w)
		}
	}
	enc, err := newEncoder(f.typ, width, format)
	if err != nil {
		return r, fmt.Errorf("role %q: %w", role, err)
	}
	r.comp = &component{f: f, enc: enc, label: label}
	return r, nil
}

// attrName returns the attribute name attributevalue uses for a field,
// whether it is omitted when empty, and whether it is not stored at all.
func attrName(sf reflect.StructField) (name string, omitEmpty, skip bool) {
	name, skip, opts := avTag(sf)
	if skip {
		return "", false, true
	}
	if name == "" {
		name = sf.Name
	}
	return name, opts["omitempty"], skip
}

// avTag reads a field's dynamodbav tag as attributevalue does: the name it
// gives ("" for none), whether the field is skipped (the name "-", with or
// without options), and the options.
func avTag(sf reflect.StructField) (name string, skip bool, opts map[string]bool) {
	tag := sf.Tag.Get("dynamodbav")
	if tag == "" {
		return "", false, nil
	}
	parts := strings.Split(tag, ",")
	if parts[0] == "-" {
		return "", true, nil
	}
	opts = map[string]bool{}
	for _, o := range parts[1:] {
		opts[o] = true
	}
	return parts[0], false, opts
}

// allTagged lists every field of t, and of the structs it embeds, that has
// a ddbindex tag and is not a marker, with full index paths.
func allTagged(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	var walk func(t reflect.Type, index []int, seen []reflect.Type)
	walk = func(t reflect.Type, index []int, seen []reflect.Type) {
		if slices.Contains(seen, t) {
			return
		}
		seen = append(seen, t)
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			sf.Index = append(slices.Clone(index), i)
			if sf.Type == reflect.TypeFor[TableSpec]() || sf.Type == reflect.TypeFor[IndexSpec]() {
				continue
			}
			if _, ok := sf.Tag.Lookup("ddbindex"); ok {
				out = append(out, sf)
			}
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if sf.Anonymous && ft.Kind() == reflect.Struct {
				walk(ft, sf.Index, seen)
			}
		}
	}
	walk(t, nil, nil)
	return out
}

// checkTaggedField explains why a field with a ddbindex tag is not among the
// attributes attributevalue stores, or returns nil when it is (or when it is
// part of a name conflict, reported on its own).
func checkTaggedField(sf reflect.StructField, avs avFieldSet) error {
	for _, f := range avs.visible {
		if slices.Equal(f.sf.Index, sf.Index) {
			return nil
		}
	}
	for _, c := range avs.conflicts {
		for _, f := range c {
			if slices.Equal(f.sf.Index, sf.Index) {
				return nil
			}
		}
	}
	name, skip, _ := avTag(sf)
	ft := sf.Type
	if ft.Name() == "" && ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch {
	case skip:
		return errors.New("a field tagged dynamodbav:\"-\" is not stored, so it cannot be a key component")
	case !sf.IsExported() && !(sf.Anonymous && ft.Kind() == reflect.Struct && name == ""):
		return errors.New("unexported fields cannot be key components")
	case sf.Anonymous && ft.Kind() == reflect.Struct && name == "":
		return errors.New("an embedded struct is not an attribute (attributevalue stores its fields): tag its fields instead")
	}
	if w, ok := avs.hidden[indexKey(sf.Index)]; ok {
		return fmt.Errorf("its attribute %q is hidden by field %s, which attributevalue stores instead (the shallower field, or the tagged one at the same depth, wins)", w.name, w.sf.Name)
	}
	return errors.New("attributevalue does not store this field, so it cannot be a key component")
}

// checkKeyAVOptions refuses the dynamodbav options that change how a key
// field of type ft (pointer stripped) is stored so that it cannot key an
// item as declared: nullempty stores a zero value as NULL, which no key
// attribute holds and no key text reads, so the item would silently leave
// the index; string stores a number as a String where every key of a number
// field is read, and natively keyed, as a Number. A string type with a
// number's methods (json.Number, attributevalue.Number) is the converse:
// attributevalue stores it as a Number unless string is set, where its key
// component, a string's, is read and keyed as a String.
func checkKeyAVOptions(ft reflect.Type, opts map[string]bool) error {
	switch {
	case ft.Kind() == reflect.String && ft.Implements(numbererType) && !opts["string"]:
		return fmt.Errorf(`attributevalue stores a %s as a Number, where a key component of a string type is a String: add dynamodbav:",string" to store it as a String (its key then sorts as text), or use an integer or float type`, ft)
	case opts["nullempty"]:
		return errors.New(`dynamodbav:",nullempty" stores a zero value as NULL, which no key attribute can hold: the item would silently be left out of the index, or its write refused. ` +
			`Remove nullempty; with omitempty instead, a zero value leaves the item out of the index (a sparse index)`)
	case opts["string"] && storedAs(ft) == "N":
		return fmt.Errorf(`dynamodbav:",string" stores the %s as a String, where a key component of a number type is a Number: remove the string option, or make the field a string`, ft)
	}
	return nil
}

// numbererType is the interface by which attributevalue stores a string type
// as a Number (json.Number and attributevalue.Number have it).
var numbererType = reflect.TypeFor[interface {
	Float64() (float64, error)
	Int64() (int64, error)
	String() string
}]()

// avTagOptions returns the options of a field's dynamodbav tag.
func avTagOptions(sf reflect.StructField) map[string]bool {
	_, _, opts := avTag(sf)
	return opts
}

// errSparse reports that an item has no value for a component, so it is not
// in that index (a sparse index).
var errSparse = errors.New("component value absent")

// value returns the component's value in a model struct, or errSparse.
func (f *field) value(v reflect.Value) (reflect.Value, error) {
	fv, err := v.FieldByIndexErr(f.index)
	if err != nil {
		return reflect.Value{}, errSparse
	}
	if f.ptr {
		if fv.IsNil() {
			return reflect.Value{}, errSparse
		}
		fv = fv.Elem()
	} else if f.omitEmpty && fv.IsZero() {
		return reflect.Value{}, errSparse
	}
	return fv, nil
}

// ---- attributes as attributevalue sees them ----------------------------------

// The functions below list a model's attributes exactly as attributevalue's encoder
// does (its enumFields and dominantField, which follow encoding/json): which
// struct fields become attributes, under which names, and which are left
// out. The declaration declParser builds on this list, so that a key component
// is always an attribute the base item really holds.

// avField is one struct field that attributevalue considers, with the name
// it would store it under.
type avField struct {
	sf      reflect.StructField // Index is the full path from the model type
	name    string
	fromTag bool // the name comes from a dynamodbav tag
}

// avFieldSet is attributevalue's view of a struct type.
type avFieldSet struct {
	// visible are the fields attributevalue marshals, in field order.
	visible []avField
	// conflicts are groups of same-named fields that annihilate each other:
	// attributevalue marshals none of them.
	conflicts [][]avField
	// hidden maps the index path of a field that loses to a dominant
	// same-named one to that field.
	hidden map[string]avField
}

func indexKey(index []int) string {
	var b strings.Builder
	for i, x := range index {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// avFieldsOf enumerates t's fields as attributevalue.unionStructFields does
// with the default tag key: breadth first through anonymous structs, a type
// explored once, then per name the dominant field (the shallowest; at equal
// depth the only tagged one; else none).
func avFieldsOf(t reflect.Type) avFieldSet {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	var fields []avField
	current := []queued{}
	next := []queued{{typ: t}}
	var count map[reflect.Type]int // how often each type in current was queued
	nextCount := map[reflect.Type]int{}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := 0; i < q.typ.NumField(); i++ {
				sf := q.typ.Field(i)
				if sf.PkgPath != "" && !sf.Anonymous {
					continue // unexported
				}
				name, skip, _ := avTag(sf)
				if skip {
					continue
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				sf.Index = append(slices.Clone(q.index), i)
				if !sf.Anonymous || name != "" || ft.Kind() != reflect.Struct {
					f := avField{sf: sf, name: sf.Name}
					if name != "" {
						f.name, f.fromTag = name, true
					}
					fields = append(fields, f)
					if count[q.typ] > 1 {
						// The type was embedded more than once at this
						// depth: a second copy makes the name conflict.
						fields = append(fields, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: sf.Index})
				}
			}
		}
	}
	// By name, then depth, then tagged first, then index order.
	slices.SortStableFunc(fields, func(a, b avField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.sf.Index) - len(b.sf.Index); c != 0 {
			return c
		}
		if a.fromTag != b.fromTag {
			if a.fromTag {
				return -1
			}
			return 1
		}
		return slices.Compare(a.sf.Index, b.sf.Index)
	})
	set := avFieldSet{hidden: map[string]avField{}}
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		i = j
		if len(group) == 1 {
			set.visible = append(set.visible, group[0])
			continue
		}
		winner, ok := dominant(group)
		if !ok {
			set.conflicts = append(set.conflicts, uniqueFields(group))
			continue
		}
		set.visible = append(set.visible, winner)
		for _, f := range group {
			if !slices.Equal(f.sf.Index, winner.sf.Index) {
				set.hidden[indexKey(f.sf.Index)] = winner
			}
		}
	}
	slices.SortFunc(set.visible, func(a, b avField) int { return slices.Compare(a.sf.Index, b.sf.Index) })
	return set
}

// dominant picks the field that wins among same-named ones, as
// attributevalue's dominantField does; ok is false when none does.
func dominant(group []avField) (avField, bool) {
	depth := len(group[0].sf.Index)
	tagged := -1
	for i, f := range group {
		if len(f.sf.Index) > depth {
			group = group[:i]
			break
		}
		if f.fromTag {
			if tagged >= 0 {
				return avField{}, false
			}
			tagged = i
		}
	}
	if tagged >= 0 {
		return group[tagged], true
	}
	if len(group) > 1 {
		return avField{}, false
	}
	return group[0], true
}

// uniqueFields drops the copies enumeration adds for types embedded twice.
func uniqueFields(group []avField) []avField {
	var out []avField
	for _, f := range group {
		if !slices.ContainsFunc(out, func(g avField) bool { return slices.Equal(f.sf.Index, g.sf.Index) }) {
			out = append(out, f)
		}
	}
	return out
}

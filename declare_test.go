package ddbindex

import (
	"maps"
	"slices"

	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of declaration parsing and validation (index.go).

// ixTicket is a valid, complete model: a labelled composite base key, a GSI
// with derived keys, an LSI, an index table, a sparse index on a pointer
// field, a field in several roles, a version field and fields that are not
// stored.
type ixTicket struct {
	_ TableSpec `ddbindex:"ix_tickets,pk=PK,sk=SK,softdelete"`
	_ IndexSpec `ddbindex:"by_status,type=gsi,name=tickets-by-status,pk=GSI1PK,sk=GSI1SK,project=keys"`
	_ IndexSpec `ddbindex:"by_prio,type=lsi,name=by-prio,project=title|prio"`
	_ IndexSpec `ddbindex:"feed,type=table"`
	_ IndexSpec `ddbindex:" by_assignee , type=gsi , project=all"`

	Team     string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk;feed.pk"`
	ID       string    `dynamodbav:"id" ddbindex:"sk:0,label=TICKET"`
	Status   string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created  time.Time `dynamodbav:"created" ddbindex:"by_status.sk:1,format=unixms,width=13 ; feed.sk"`
	Priority int32     `dynamodbav:"prio" ddbindex:"by_prio.sk;by_assignee.sk"`
	Assignee *string   `dynamodbav:"assignee,omitempty" ddbindex:"by_assignee.pk"`
	Title    string    `dynamodbav:"title"`
	Version  int64     `dynamodbav:"version" ddbindex:"version"`
	Secret   string    `dynamodbav:"-"`
	internal int       // not stored
}

func ixSchema(t testing.TB) *schema {
	t.Helper()
	s, err := schemaFor(reflect.TypeFor[ixTicket]())
	require.NoError(t, err)
	return s
}

// ixAttrs lists the fields of components by attribute name.
func ixAttrs(cs []*component) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.f.attr
	}
	return out
}

func ixSlots(d *layout) []string {
	out := make([]string, len(d.slots))
	for i, f := range d.slots {
		out[i] = f.attr
	}
	return out
}

func TestSchemaCompleteModel(t *testing.T) {
	s := ixSchema(t)
	assert.Equal(t, "ddbindex.ixTicket", s.model)
	assert.Equal(t, "ix_tickets", s.table)
	assert.True(t, s.softDelete)
	require.NotNil(t, s.version)
	assert.Equal(t, "version", s.version.attr)
	assert.Equal(t, "Version", s.version.goName)

	// Every stored attribute, and only those.
	for _, a := range []string{"team", "id", "status", "created", "prio", "assignee", "title", "version"} {
		assert.True(t, s.attrs[a], a)
	}
	assert.Len(t, s.attrs, 8, "no Secret (dynamodbav:\"-\"), no unexported field: %v", s.attrs)
	assert.Len(t, s.fields, 6, "key fields only")
	assert.Len(t, s.indexes, 4)
	for i, name := range []string{"by_status", "by_prio", "feed", "by_assignee"} {
		require.Same(t, s.indexes[i], s.byName[name], "declaration order, names trimmed")
	}

	team, id, created, prio, assignee := fieldOf(s, "team"), fieldOf(s, "id"), fieldOf(s, "created"), fieldOf(s, "prio"), fieldOf(s, "assignee")
	assert.Equal(t, "Team", team.goName)
	assert.Equal(t, reflect.TypeFor[string](), team.typ)
	assert.False(t, team.ptr)
	assert.True(t, assignee.ptr, "a pointer field")
	assert.True(t, assignee.omitEmpty)
	assert.Equal(t, reflect.TypeFor[string](), assignee.typ, "the pointer is stripped")
	assert.Equal(t, encTime, created.canon.kind)
	assert.Equal(t, timeRFC3339, created.canon.tf, "the canonical text of a time is RFC 3339")
	assert.Zero(t, created.canon.width)
	assert.Equal(t, encInt, prio.canon.kind)
	assert.Equal(t, 32, prio.canon.bits)

	// The base table: labelled composites in derived attributes.
	base := s.base
	assert.Equal(t, BaseTable, base.kind)
	assert.Equal(t, "", base.name)
	assert.Equal(t, "ix_tickets", base.table)
	assert.Equal(t, "PK", base.pk.attr)
	assert.False(t, base.pk.native)
	assert.Equal(t, types.ScalarAttributeTypeS, base.pk.scalar)
	assert.Equal(t, []string{"team"}, ixAttrs(base.pk.parts))
	assert.Equal(t, "TEAM", base.pk.parts[0].label)
	assert.Equal(t, "SK", base.sk.attr)
	assert.Equal(t, "TICKET", base.sk.parts[0].label)
	assert.Empty(t, base.pk.suffix)
	assert.Empty(t, base.sk.suffix, "the base key is unique by itself")
	assert.Equal(t, []string{"team", "id"}, ixSlots(base))

	// A GSI with derived keys: the sort key ends with the base key.
	gsi := s.byName["by_status"]
	assert.Equal(t, GSI, gsi.kind)
	assert.Equal(t, "tickets-by-status", gsi.index)
	assert.True(t, gsi.keysOnly)
	assert.Nil(t, gsi.project)
	assert.Equal(t, "GSI1PK", gsi.pk.attr)
	assert.False(t, gsi.pk.native)
	assert.Equal(t, []string{"team"}, ixAttrs(gsi.pk.parts))
	assert.Empty(t, gsi.pk.parts[0].label, "a label belongs to one role")
	assert.Equal(t, "GSI1SK", gsi.sk.attr)
	assert.Equal(t, []string{"status", "created"}, ixAttrs(gsi.sk.parts))
	assert.Equal(t, timeUnixMilli, gsi.sk.parts[1].enc.tf)
	assert.Equal(t, 13, gsi.sk.parts[1].enc.width)
	assert.False(t, gsi.sk.parts[1].sameFormat())
	assert.True(t, gsi.sk.parts[0].sameFormat())
	assert.Equal(t, []string{"id"}, ixAttrs(gsi.sk.suffix), "team is in the GSI key already")
	assert.Equal(t, gsi.sk.suffix[0].f.canon, gsi.sk.suffix[0].enc, "suffixes use the canonical form")
	assert.Empty(t, gsi.sk.suffix[0].label)
	assert.Equal(t, []string{"team", "status", "created", "id"}, ixSlots(gsi))

	// An LSI: the base partition key, a native Number sort key.
	lsi := s.byName["by_prio"]
	assert.Equal(t, LSI, lsi.kind)
	assert.Equal(t, "by-prio", lsi.index)
	assert.Same(t, base.pk, lsi.pk)
	assert.True(t, lsi.sk.native)
	assert.Equal(t, "prio", lsi.sk.attr)
	assert.Equal(t, types.ScalarAttributeTypeN, lsi.sk.scalar)
	assert.Empty(t, lsi.sk.suffix, "a native key is the attribute itself")
	assert.Equal(t, []string{"title", "prio"}, lsi.project)
	assert.False(t, lsi.keysOnly)
	assert.Equal(t, []string{"team", "prio", "id"}, ixSlots(lsi))

	// An index table: a native partition key and _sk with the base suffix.
	feed := s.byName["feed"]
	assert.Equal(t, IndexTable, feed.kind)
	assert.Equal(t, "ix_tickets-feed", feed.table)
	assert.True(t, feed.pk.native)
	assert.Equal(t, "team", feed.pk.attr)
	assert.Equal(t, types.ScalarAttributeTypeS, feed.pk.scalar)
	assert.Equal(t, "_sk", feed.sk.attr)
	assert.False(t, feed.sk.native, "an index table's sort key is always derived")
	assert.Equal(t, []string{"created"}, ixAttrs(feed.sk.parts))
	assert.Equal(t, timeRFC3339, feed.sk.parts[0].enc.tf)
	assert.Equal(t, []string{"id"}, ixAttrs(feed.sk.suffix))
	assert.Equal(t, []string{"team", "created", "id"}, ixSlots(feed))

	// A sparse GSI on a pointer field, both keys native.
	sparse := s.byName["by_assignee"]
	assert.Equal(t, "by_assignee", sparse.index)
	assert.True(t, sparse.pk.native)
	assert.Equal(t, "assignee", sparse.pk.attr)
	assert.True(t, sparse.sk.native)
	assert.Equal(t, "prio", sparse.sk.attr)
	assert.Equal(t, types.ScalarAttributeTypeN, sparse.sk.scalar)
	assert.Nil(t, sparse.project)
	assert.False(t, sparse.keysOnly)
	assert.Equal(t, []string{"assignee", "prio", "team", "id"}, ixSlots(sparse))
	assert.Zero(t, ixTicket{}.internal)
	assert.Equal(t, "ID", id.goName)
	assert.Equal(t, []int{9}, prio.index, "the struct field index, marker fields counted")
}

// The stored key values of an item, as docs/models.md describes them.
func TestSchemaKeyValues(t *testing.T) {
	s := ixSchema(t)
	created := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	it := ixTicket{Team: "TEAM-7", ID: "8842", Status: "open", Created: created, Priority: 2}
	texts, err := s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	_, has := texts.get(fieldOf(s, "assignee"))
	assert.False(t, has, "a nil pointer has no value")

	enc := func(vs ...any) types.AttributeValue {
		k, err := EncodeKey(vs...)
		require.NoError(t, err)
		return &types.AttributeValueMemberS{Value: k}
	}
	for _, tc := range []struct {
		index string
		want  map[string]types.AttributeValue
	}{
		{"", map[string]types.AttributeValue{"PK": enc("TEAM", "TEAM-7"), "SK": enc("TICKET", "8842")}},
		{"by_status", map[string]types.AttributeValue{
			"GSI1PK": enc("TEAM-7"),
			"GSI1SK": &types.AttributeValueMemberS{Value: fmt.Sprintf("open#%013d#8842", created.UnixMilli())},
		}},
		{"by_prio", map[string]types.AttributeValue{"PK": enc("TEAM", "TEAM-7"), "prio": &types.AttributeValueMemberN{Value: "2"}}},
		{"feed", map[string]types.AttributeValue{
			"team": &types.AttributeValueMemberS{Value: "TEAM-7"},
			"_sk":  &types.AttributeValueMemberS{Value: "2026-12-01T09:00:00.000000000Z#8842"},
		}},
	} {
		d := s.base
		if tc.index != "" {
			d = s.byName[tc.index]
		}
		vals, ok, err := d.keyValues(texts)
		require.NoError(t, err, tc.index)
		require.True(t, ok, tc.index)
		assert.Equal(t, tc.want, vals, tc.index)
	}

	// Sparse: without an assignee, the item is not in by_assignee.
	vals, ok, err := s.byName["by_assignee"].keyValues(texts)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Nil(t, vals)
	who := "ana"
	it.Assignee = &who
	texts, err = s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	vals, ok, err = s.byName["by_assignee"].keyValues(texts)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]types.AttributeValue{
		"assignee": &types.AttributeValueMemberS{Value: "ana"},
		"prio":     &types.AttributeValueMemberN{Value: "2"},
	}, vals)

	// field.value: a nil pointer and an omitempty zero value are absent.
	f := fieldOf(s, "assignee")
	v, err := f.value(reflect.ValueOf(it))
	require.NoError(t, err)
	assert.Equal(t, "ana", v.String())
	it.Assignee = nil
	_, err = f.value(reflect.ValueOf(it))
	assert.ErrorIs(t, err, errSparse)
}

// A model with one marker field (no indexes), embedded key fields, and an
// index table with a composite partition key: it takes the documented
// default attribute, _pk.
type ixEmbeddedKeys struct {
	Org  string `dynamodbav:"org" ddbindex:"pk:0;members.pk:0"`
	Unit string `dynamodbav:"unit" ddbindex:"pk:1;members.pk:1"`
}

type ixOnlyTable struct {
	_    TableSpec `ddbindex:"ix_only,pk=PK"`
	Name string    `dynamodbav:"name" ddbindex:"pk"`
}

type ixComposite struct {
	_ TableSpec `ddbindex:"ix_comp,pk=PK,sk=SK"`
	_ IndexSpec `ddbindex:"members,type=table"`
	ixEmbeddedKeys
	User string `dynamodbav:"user" ddbindex:"sk;members.sk"`
}

func TestSchemaSingleMarkerAndDefaults(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[ixOnlyTable]())
	require.NoError(t, err, "one TableSpec and nothing else")
	assert.Equal(t, "ix_only", s.table)
	assert.Empty(t, s.indexes)
	assert.Equal(t, "PK", s.base.pk.attr)
	assert.Nil(t, s.base.sk)

	s, err = schemaFor(reflect.TypeFor[ixComposite]())
	require.NoError(t, err)
	assert.Equal(t, []string{"org", "unit"}, ixAttrs(s.base.pk.parts), "embedded fields take part")
	assert.True(t, s.attrs["org"])
	assert.False(t, s.attrs["ixEmbeddedKeys"], "an embedded struct is not an attribute")
	m := s.byName["members"]
	assert.Equal(t, "_pk", m.pk.attr, "an index table's composite partition key defaults to _pk")
	assert.False(t, m.pk.native)
	assert.Equal(t, []string{"org", "unit"}, ixAttrs(m.pk.parts))
	assert.Equal(t, "_sk", m.sk.attr)
	assert.Equal(t, []string{"user"}, ixAttrs(m.sk.parts))
	assert.Empty(t, m.sk.suffix, "the base key is already in the index key")
	assert.Equal(t, "ix_comp-members", m.table)
}

// ---- one test per rule ------------------------------------------------------------

// ixRule is one broken declaration and what the error must say.
type ixRule struct {
	name  string
	model any
	field string // the declaration error's Field
	index string // its Index
	rule  []string
}

func ixCheckRules(t *testing.T, rules []ixRule) {
	t.Helper()
	for _, tc := range rules {
		t.Run(tc.name, func(t *testing.T) {
			typ := reflect.TypeOf(tc.model)
			s, err := schemaFor(typ)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrDeclaration)
			assert.Equal(t, "DDBX-100", Code(err))
			var de *Error
			require.True(t, errors.As(err, &de), "%T", err)
			assert.Equal(t, typ.String(), de.Model)
			assert.Equal(t, tc.field, de.Field, "Field of %q", err)
			assert.Equal(t, tc.index, de.Index, "Index of %q", err)
			for _, w := range tc.rule {
				assert.Contains(t, de.Reason, w)
			}
			assert.Contains(t, err.Error(), de.Reason)
			// The result is cached: the same error again.
			_, err2 := schemaFor(typ)
			assert.Same(t, err, err2)
		})
	}
}

func TestDeclarationRulesTableSpec(t *testing.T) {
	type noTable struct {
		ID string `ddbindex:"pk"`
	}
	type twoTables struct {
		_  TableSpec `ddbindex:"one"`
		_  TableSpec `ddbindex:"two"`
		ID string    `ddbindex:"pk"`
	}
	type untagged struct {
		_  TableSpec
		ID string `ddbindex:"pk"`
	}
	type shortName struct {
		_  TableSpec `ddbindex:"ab"`
		ID string    `ddbindex:"pk"`
	}
	type badChars struct {
		_  TableSpec `ddbindex:"tick ets!"`
		ID string    `ddbindex:"pk"`
	}
	type unknownOption struct {
		_  TableSpec `ddbindex:"tickets,colour=red"`
		ID string    `ddbindex:"pk"`
	}
	type softdeleteValue struct {
		_  TableSpec `ddbindex:"tickets,softdelete=yes"`
		ID string    `ddbindex:"pk"`
	}
	type tableType struct {
		_  TableSpec `ddbindex:"tickets,type=gsi"`
		ID string    `ddbindex:"pk"`
	}
	type emptyPK struct {
		_  TableSpec `ddbindex:"tickets,pk="`
		ID string    `ddbindex:"pk"`
	}
	type noPartition struct {
		_  TableSpec `ddbindex:"tickets"`
		ID string    `ddbindex:"sk"`
	}
	type skNoRole struct {
		_  TableSpec `ddbindex:"tickets,sk=SK"`
		ID string    `ddbindex:"pk"`
	}
	type sameAttr struct {
		_ TableSpec `ddbindex:"tickets,pk=K,sk=K"`
		A string    `ddbindex:"pk"`
		B string    `ddbindex:"sk"`
	}
	type collides struct {
		_     TableSpec `ddbindex:"tickets,pk=title"`
		ID    string    `ddbindex:"pk,label=T"`
		Title string    `dynamodbav:"title"`
	}
	ixCheckRules(t, []ixRule{
		{"no TableSpec", noTable{}, "", "", []string{"no base table", "TableSpec"}},
		{"two TableSpecs", twoTables{}, "_", "", []string{"declared twice"}},
		{"untagged TableSpec", untagged{}, "_", "", []string{"needs a ddbindex tag"}},
		{"short table name", shortName{}, "", "", []string{`"ab"`, "not a valid DynamoDB table name"}},
		{"bad table name", badChars{}, "", "", []string{"not a valid DynamoDB table name"}},
		{"unknown option", unknownOption{}, "_", "", []string{"unknown option", "colour=red"}},
		{"softdelete with a value", softdeleteValue{}, "_", "", []string{"unknown option"}},
		{"type on the table", tableType{}, "_", "", []string{"unknown option", "type=gsi"}},
		{"empty pk=", emptyPK{}, "_", "", []string{"pk needs a value"}},
		{"missing partition", noPartition{}, "", "", []string{"base table has no partition component", `ddbindex:"pk"`}},
		{"sk= without a sort role", skNoRole{}, "", "", []string{"sk=SK", "no field has the role"}},
		{"same attribute twice", sameAttr{}, "", "", []string{"both", `"K"`}},
		{"derived attribute collides", collides{}, "", "", []string{`"title"`, "collides with a model attribute"}},
	})
}

func TestDeclarationRulesIndexSpec(t *testing.T) {
	type missingType struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type badType struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=view"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type noName struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:",type=gsi"`
		ID string    `ddbindex:"pk"`
	}
	type untagged struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec
		ID string `ddbindex:"pk"`
	}
	type duplicate struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi"`
		_  IndexSpec `ddbindex:"by_x,type=table"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type unknownOption struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,softdelete"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type emptyName struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,name="`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type badPhysical struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,name=x!"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type shortLogical struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"bx,type=gsi"`
		ID string    `ddbindex:"pk;bx.pk"`
	}
	type unknownIndex struct {
		_  TableSpec `ddbindex:"tickets"`
		ID string    `ddbindex:"pk;by_nope.sk"`
	}
	type noIndexPartition struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi"`
		ID string    `ddbindex:"pk;by_x.sk"`
	}
	type lsiOwnPartition struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=lsi"`
		ID string    `ddbindex:"pk;by_x.pk"`
		S  string    `ddbindex:"sk;by_x.sk"`
	}
	type lsiPKOption struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=lsi,pk=LPK"`
		ID string    `ddbindex:"pk"`
		S  string    `ddbindex:"sk;by_x.sk"`
	}
	type lsiNoSort struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=lsi"`
		ID string    `ddbindex:"pk"`
		S  string    `ddbindex:"sk"`
	}
	type timeBase struct {
		_  TableSpec `ddbindex:"tickets"`
		At time.Time `ddbindex:"pk"`
	}
	type customBase struct {
		_ TableSpec `ddbindex:"tickets"`
		V kbVersion `ddbindex:"pk"`
	}
	type claimedTwice struct {
		_  TableSpec `ddbindex:"tickets,pk=PK"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,pk=PK"`
		ID string    `ddbindex:"pk,label=I"`
		A  string    `ddbindex:"by_x.pk,label=A"`
	}
	type indexCollides struct {
		_     TableSpec `ddbindex:"tickets"`
		_     IndexSpec `ddbindex:"by_x,type=table,sk=title"`
		ID    string    `ddbindex:"pk;by_x.pk"`
		S     string    `ddbindex:"by_x.sk"`
		Title string    `dynamodbav:"title"`
	}
	type badProjection struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,project=title|nope"`
		ID string    `ddbindex:"pk;by_x.pk"`
		T  string    `dynamodbav:"title"`
	}
	type badDroppedName struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=table,gsi=x!"`
		ID string    `ddbindex:"pk;by_x.pk"`
	}
	type droppedLSINoSort struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,lsi=tickets-by-x"`
		ID string    `ddbindex:"pk"`
		S  string    `ddbindex:"by_x.pk"`
	}
	ixCheckRules(t, []ixRule{
		{"missing type=", missingType{}, "_", "by_x", []string{"type= is missing"}},
		{"bad physical name of a form no longer kept", badDroppedName{}, "", "by_x", []string{`"x!"`, "not a valid DynamoDB name"}},
		{"a form no longer kept that the index cannot have", droppedLSINoSort{}, "S", "by_x", []string{"LSI shares the base table's partition key"}},
		{"unknown type", badType{}, "_", "by_x", []string{"type=view", "not an index type"}},
		{"no logical name", noName{}, "_", "", []string{"logical index name"}},
		{"untagged IndexSpec", untagged{}, "_", "", []string{"IndexSpec field needs a ddbindex tag"}},
		{"duplicate index names", duplicate{}, "", "by_x", []string{"declared twice"}},
		{"unknown option", unknownOption{}, "_", "by_x", []string{"unknown option", "softdelete"}},
		{"empty name=", emptyName{}, "_", "by_x", []string{"name needs a value"}},
		{"bad physical name", badPhysical{}, "", "by_x", []string{`"x!"`, "not a valid DynamoDB name"}},
		{"short default physical name", shortLogical{}, "", "bx", []string{`"bx"`}},
		{"unknown index in a field tag", unknownIndex{}, "ID", "by_nope", []string{"no IndexSpec", `"by_nope"`}},
		{"index without partition shares the base's, here its own sort key", noIndexPartition{}, "", "by_x", []string{`partition and sort key are both "ID"`}},
		{"LSI declares a partition component", lsiOwnPartition{}, "ID", "by_x", []string{"LSI shares the base table's partition key"}},
		{"LSI declares pk=", lsiPKOption{}, "", "by_x", []string{"LSI shares the base table's partition key", "pk=LPK"}},
		{"LSI without sort component", lsiNoSort{}, "", "by_x", []string{"at least one sort component"}},
		{"time.Time as a native base key", timeBase{}, "", "", []string{"time.Time key", "pk=ATTR", "TableSpec"}},
		{"KeyTexter as a native key", customBase{}, "", "", []string{"ddbindex.kbVersion key", "pk=ATTR"}},
		{"derived attribute used twice", claimedTwice{}, "", "", []string{`"PK"`, "used both", "base table", "by_x"}},
		{"index table attribute collides", indexCollides{}, "", "by_x", []string{`"title"`, "collides"}},
		{"project= names no attribute", badProjection{}, "", "by_x", []string{`"nope"`, "not a model attribute"}},
	})
}

func TestDeclarationRulesFields(t *testing.T) {
	type dupPosition struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		A string    `ddbindex:"sk:0"`
		B string    `ddbindex:"sk:0"`
	}
	type dupDefaultPosition struct {
		_ TableSpec `ddbindex:"tickets"`
		A string    `ddbindex:"pk"`
		B string    `ddbindex:"pk"`
	}
	type gap struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		A string    `ddbindex:"sk:0"`
		B string    `ddbindex:"sk:2"`
	}
	type noZero struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		A string    `ddbindex:"sk:1"`
	}
	type sameFieldTwice struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		A string    `ddbindex:"sk:0;sk:1"`
	}
	type boolKey struct {
		_ TableSpec `ddbindex:"tickets"`
		B bool      `ddbindex:"pk"`
	}
	type mapKey struct {
		_ TableSpec      `ddbindex:"tickets"`
		M map[string]int `ddbindex:"pk"`
	}
	type structKey struct {
		_ TableSpec          `ddbindex:"tickets"`
		S struct{ A, B int } `ddbindex:"pk"`
	}
	type sliceKey struct {
		_ TableSpec `ddbindex:"tickets"`
		S []string  `ddbindex:"pk"`
	}
	type unknownRoleOption struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk,colour=red"`
	}
	type badWidth struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		N int64     `ddbindex:"sk,width=abc"`
	}
	type wideWidth struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		N int64     `ddbindex:"sk,width=21"`
	}
	type negativeWidth struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		N int64     `ddbindex:"sk,width=-3"`
	}
	type widthOnString struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		S string    `ddbindex:"sk,width=10"`
	}
	type widthOnFloat struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		F float64   `ddbindex:"sk,width=10"`
	}
	type badFormat struct {
		_  TableSpec `ddbindex:"tickets,sk=SK"`
		P  string    `ddbindex:"pk"`
		At time.Time `ddbindex:"sk,format=iso8601"`
	}
	type formatOnString struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		P string    `ddbindex:"pk"`
		S string    `ddbindex:"sk,format=unixms"`
	}
	type widthOnRFC3339 struct {
		_  TableSpec `ddbindex:"tickets,sk=SK"`
		P  string    `ddbindex:"pk"`
		At time.Time `ddbindex:"sk,width=13"`
	}
	type badRole struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"partition"`
	}
	type emptyRole struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:""`
	}
	type badPosition struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk:first"`
	}
	type bigPosition struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk:65"`
	}
	type emptyIndex struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk;.sk"`
	}
	type emptyLabel struct {
		_ TableSpec `ddbindex:"tickets,pk=PK"`
		P string    `ddbindex:"pk,label="`
	}
	type unexported struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		q string    `ddbindex:"sk"`
	}
	_ = unexported{}.q
	type notStored struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		Q string    `dynamodbav:"-" ddbindex:"sk"`
	}
	type sameAttribute struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `dynamodbav:"id" ddbindex:"pk"`
		Q string    `dynamodbav:"id" ddbindex:"sk"`
	}
	type versionString struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V string    `ddbindex:"version"`
	}
	type twoVersions struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int64     `ddbindex:"version"`
		W int64     `ddbindex:"version"`
	}
	ixCheckRules(t, []ixRule{
		{"duplicate position", dupPosition{}, "B", "", []string{"sk position 0 is declared twice", "also by A"}},
		{"duplicate default position", dupDefaultPosition{}, "B", "", []string{"pk position 0 is declared twice"}},
		{"gap in positions", gap{}, "B", "", []string{"without gaps", "position 1 is missing"}},
		{"no position 0", noZero{}, "A", "", []string{"position 0 is missing"}},
		{"a field twice in one key", sameFieldTwice{}, "A", "", []string{"appears twice"}},
		{"bool key", boolKey{}, "B", "", []string{"unsupported component type", "bool"}},
		{"map key", mapKey{}, "M", "", []string{"unsupported component type", "map[string]int"}},
		{"struct key", structKey{}, "S", "", []string{"unsupported component type", "struct"}},
		{"slice key", sliceKey{}, "S", "", []string{"unsupported component type", "[]string"}},
		{"unknown role option", unknownRoleOption{}, "P", "", []string{"unknown option", "colour=red"}},
		{"width not a number", badWidth{}, "N", "", []string{`width="abc"`, "not a number"}},
		{"width over 20", wideWidth{}, "N", "", []string{"width=21", "out of range"}},
		{"negative width", negativeWidth{}, "N", "", []string{"width=-3", "out of range"}},
		{"width on a string", widthOnString{}, "S", "", []string{"width applies to integer components"}},
		{"width on a float", widthOnFloat{}, "F", "", []string{"width applies to integer components", "float64"}},
		{"unknown time format", badFormat{}, "At", "", []string{"unknown time format", "iso8601"}},
		{"format on a string", formatOnString{}, "S", "", []string{"format=unixms", "time.Time components only"}},
		{"width on an RFC 3339 time", widthOnRFC3339{}, "At", "", []string{"width applies to the unix and unixms time formats only"}},
		{"not pk or sk", badRole{}, "P", "", []string{`role "partition"`, "want pk or sk"}},
		{"empty role", emptyRole{}, "P", "", []string{"want pk or sk"}},
		{"position not a number", badPosition{}, "P", "", []string{`position "first"`}},
		{"position over 64", bigPosition{}, "P", "", []string{`position "65"`}},
		{"empty index name", emptyIndex{}, "P", "", []string{"names an empty index"}},
		{"empty label", emptyLabel{}, "P", "", []string{"label= needs a value"}},
		{"unexported key field", unexported{}, "q", "", []string{"unexported"}},
		{"key field not stored", notStored{}, "Q", "", []string{`dynamodbav:"-"`}},
		{"two fields, one attribute", sameAttribute{}, "Q", "", []string{`attribute "id" is declared by two fields`}},
		{"version not an integer", versionString{}, "V", "", []string{"version field must be an integer"}},
		{"two version fields", twoVersions{}, "W", "", []string{"second version field", "V"}},
	})

	// Not a struct at all.
	_, err := schemaFor(reflect.TypeFor[int]())
	require.ErrorIs(t, err, ErrDeclaration)
	var de *Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "int", de.Model)
	assert.Contains(t, de.Reason, "struct")
}

func TestDeclarationErrorText(t *testing.T) {
	e := &Error{Sentinel: ErrDeclaration, Model: "app.Ticket", Field: "Status", Index: "by_status", Reason: "something is wrong"}
	assert.Equal(t, "ddbindex: app.Ticket.Status (index by_status): something is wrong [DDBX-100]", e.Error())
	assert.Equal(t, "ddbindex: app.Ticket: bad [DDBX-100]", (&Error{Sentinel: ErrDeclaration, Model: "app.Ticket", Reason: "bad"}).Error())
	assert.Equal(t, "ddbindex: stream.NewConsumer: bad [DDBX-100]", (&Error{Sentinel: ErrDeclaration, Reason: "stream.NewConsumer: bad"}).Error(), "an option error names no model")
	assert.True(t, errors.Is(e, ErrDeclaration))
	assert.False(t, errors.Is(e, ErrInvalidQuery))
	for k, want := range map[Kind]string{BaseTable: "base", GSI: "gsi", LSI: "lsi", IndexTable: "table", Kind(9): "kind(9)"} {
		assert.Equal(t, want, k.String())
	}
}

// ---- the cache --------------------------------------------------------------------

type ixCached struct {
	_ TableSpec `ddbindex:"ix_cached"`
	P string    `dynamodbav:"p" ddbindex:"pk"`
}

type ixConcurrent struct {
	_ TableSpec `ddbindex:"ix_concurrent,sk=SK"`
	_ IndexSpec `ddbindex:"by_b,type=table"`
	A string    `dynamodbav:"a" ddbindex:"pk;by_b.sk"`
	B int64     `dynamodbav:"b" ddbindex:"sk:0;by_b.pk"`
	C string    `dynamodbav:"c" ddbindex:"sk:1"`
}

type ixConcurrentBad struct {
	_ TableSpec `ddbindex:"ix_concurrent_bad"`
	B bool      `ddbindex:"pk"`
}

func TestSchemaCache(t *testing.T) {
	a, err := schemaFor(reflect.TypeFor[ixCached]())
	require.NoError(t, err)
	b, err := schemaFor(reflect.TypeFor[ixCached]())
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Equal(t, reflect.TypeFor[ixCached](), a.typ)
}

// Run with -race: parsing a type for the first time from many goroutines
// yields one shared schema (and one shared error).
func TestSchemaConcurrent(t *testing.T) {
	const n = 16
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		schemas [n]*schema
		errs    [n]error
		bads    [n]error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			schemas[i], errs[i] = schemaFor(reflect.TypeFor[ixConcurrent]())
			_, bads[i] = schemaFor(reflect.TypeFor[ixConcurrentBad]())
			// Read the shared schema as queries do.
			if s := schemas[i]; s != nil {
				_ = s.byName["by_b"].slots
				_, _, _ = s.base.partition([]any{"x"})
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Same(t, schemas[0], schemas[i])
		require.ErrorIs(t, bads[i], ErrDeclaration)
		assert.Same(t, bads[0], bads[i])
	}
	d := schemas[0].byName["by_b"]
	assert.Equal(t, "b", d.pk.attr)
	assert.True(t, d.pk.native)
	assert.Equal(t, types.ScalarAttributeTypeN, d.pk.scalar)
	assert.Equal(t, []string{"a"}, ixAttrs(d.sk.parts))
	assert.Equal(t, []string{"c"}, ixAttrs(d.sk.suffix), "a and b are in the index key already")
}

// ---- attribute names --------------------------------------------------------------------

func TestSchemaAttrName(t *testing.T) {
	type m struct {
		Plain    string
		Named    string `dynamodbav:"named"`
		Omit     string `dynamodbav:"omit,omitempty"`
		OnlyOmit string `dynamodbav:",omitempty"`
		Empty    string `dynamodbav:""`
		Skipped  string `dynamodbav:"-"`
		Dash     string `dynamodbav:"-,"`
		Many     string `dynamodbav:"many,stringset,omitempty"`
		Other    string `dynamodbav:"other,omitemptyelem"`
		JSONOnly string `json:"json_only"`
	}
	typ := reflect.TypeFor[m]()
	for _, tc := range []struct {
		field     string
		name      string
		omitEmpty bool
		skip      bool
	}{
		{"Plain", "Plain", false, false},
		{"Named", "named", false, false},
		{"Omit", "omit", true, false},
		{"OnlyOmit", "OnlyOmit", true, false},
		{"Empty", "Empty", false, false},
		{"Skipped", "", false, true},
		{"Dash", "", false, true}, // attributevalue skips "-," too (encoding/json would name it "-")
		{"Many", "many", true, false},
		{"Other", "other", false, false},
		{"JSONOnly", "JSONOnly", false, false},
	} {
		sf, ok := typ.FieldByName(tc.field)
		require.True(t, ok)
		name, omit, skip := attrName(sf)
		assert.Equal(t, tc.name, name, tc.field)
		assert.Equal(t, tc.omitEmpty, omit, tc.field)
		assert.Equal(t, tc.skip, skip, tc.field)
	}
}

// omitempty makes a zero key value absent: the item leaves sparse indexes.
type ixOmitEmpty struct {
	_     TableSpec `ddbindex:"ix_omit"`
	_     IndexSpec `ddbindex:"by_tag,type=gsi"`
	ID    string    `dynamodbav:"id,omitempty" ddbindex:"pk"`
	Tag   string    `dynamodbav:"tag,omitempty" ddbindex:"by_tag.pk"`
	Count int       `dynamodbav:"count,omitempty" ddbindex:"by_tag.sk"`
}

func TestSchemaOmitEmptyIsSparse(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[ixOmitEmpty]())
	require.NoError(t, err)
	d := s.byName["by_tag"]
	for _, tc := range []struct {
		it ixOmitEmpty
		in bool
	}{
		{ixOmitEmpty{ID: "1"}, false},
		{ixOmitEmpty{ID: "1", Tag: "t"}, false},
		{ixOmitEmpty{ID: "1", Count: 3}, false},
		{ixOmitEmpty{ID: "1", Tag: "t", Count: 3}, true},
	} {
		texts, err := s.itemTexts(reflect.ValueOf(tc.it))
		require.NoError(t, err)
		_, ok, err := d.keyValues(texts)
		require.NoError(t, err)
		assert.Equal(t, tc.in, ok, "%+v", tc.it)
	}
	// The base table needs its key: a missing one is an error, not sparse.
	texts, err := s.itemTexts(reflect.ValueOf(ixOmitEmpty{}))
	require.NoError(t, err)
	_, _, err = s.base.keyValues(texts)
	assert.ErrorContains(t, err, "has no value")
}

// ixBlobItem has []byte key components: native Binary keys, and a []byte in
// a derived composite sort key (whose base suffix is a []byte too).
type ixBlobItem struct {
	_      TableSpec `ddbindex:"ix_blob"`
	_      IndexSpec `ddbindex:"by_digest,type=gsi"`
	_      IndexSpec `ddbindex:"by_kind,type=gsi,sk=GK"`
	ID     []byte    `dynamodbav:"id" ddbindex:"pk"`
	Digest []byte    `dynamodbav:"digest" ddbindex:"by_digest.pk"`
	Kind   string    `dynamodbav:"kind" ddbindex:"by_kind.pk"`
	Tag    []byte    `dynamodbav:"tag" ddbindex:"by_kind.sk:0"`
}

// A []byte is a native Binary key on its own, raw bytes; inside a composite
// String it is upper-case hex, two digits a byte, so it may hold any byte.
// A string key component must be valid UTF-8.
func TestSchemaBytesKeys(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[ixBlobItem]())
	require.NoError(t, err)
	base, digest, kind := s.base, s.byName["by_digest"], s.byName["by_kind"]
	assert.True(t, base.pk.native)
	assert.Equal(t, types.ScalarAttributeTypeB, base.pk.scalar)
	assert.True(t, digest.pk.native)
	assert.Equal(t, types.ScalarAttributeTypeB, digest.pk.scalar)
	assert.False(t, kind.sk.native)
	assert.Equal(t, types.ScalarAttributeTypeS, kind.sk.scalar)
	assert.Equal(t, []string{"tag"}, ixAttrs(kind.sk.parts))
	assert.Equal(t, []string{"id"}, ixAttrs(kind.sk.suffix))

	it := ixBlobItem{ID: []byte{0xff, 0x00}, Digest: []byte{0xde, 0xad}, Kind: "k", Tag: []byte("a#")}
	texts, err := s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	for _, tc := range []struct {
		d    *layout
		want map[string]types.AttributeValue
	}{
		{base, map[string]types.AttributeValue{"id": &types.AttributeValueMemberB{Value: []byte{0xff, 0x00}}}},
		{digest, map[string]types.AttributeValue{"digest": &types.AttributeValueMemberB{Value: []byte{0xde, 0xad}}}},
		{kind, map[string]types.AttributeValue{
			"kind": &types.AttributeValueMemberS{Value: "k"},
			"GK":   &types.AttributeValueMemberS{Value: "6123#FF00"},
		}},
	} {
		vals, ok, err := tc.d.keyValues(texts)
		require.NoError(t, err, tc.d.label())
		require.True(t, ok)
		assert.Equal(t, tc.want, vals, tc.d.label())
	}
	// Reading the GSI's keys back gives the raw bytes.
	pos, err := kind.positionOf(map[string]types.AttributeValue{
		"kind": &types.AttributeValueMemberS{Value: "k"},
		"GK":   &types.AttributeValueMemberS{Value: "6123#FF00"},
		"id":   &types.AttributeValueMemberB{Value: []byte{0xff, 0x00}},
	})
	require.NoError(t, err)
	assert.Equal(t, position{"k", "a#", "\xff\x00"}, pos)

	// A string that is not valid UTF-8 is no key; the same bytes in a
	// []byte are.
	it.Kind = "k\xff"
	texts, err = s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	_, _, err = kind.keyValues(texts)
	assert.ErrorIs(t, err, errInvalidUTF8)
	assert.ErrorContains(t, err, "kind")
	_, ok, err := base.keyValues(texts)
	require.NoError(t, err)
	assert.True(t, ok)
}

// Types for TestDeclarationAttributeNamesFollowAttributevalue.
type ixInnerKey struct {
	ID string `dynamodbav:"id" ddbindex:"pk"`
}

type ixInnerPlain struct {
	ID string `dynamodbav:"id"`
}

type ixInnerTagged struct {
	Marker string `dynamodbav:"marker" ddbindex:"sk"`
}

type ixLeft struct{ ixInnerPlain }
type ixRight struct{ ixInnerPlain }

// TestDeclarationAttributeNamesFollowAttributevalue: the parser sees the
// attributes attributevalue stores, by its rules (encoding/json's field
// dominance): two same-named fields it ranks equal are both dropped, so the
// declaration is refused; a key field that a dominant same-named field hides
// is refused; a hidden field without a key role is harmless.
func TestDeclarationAttributeNamesFollowAttributevalue(t *testing.T) {
	type keyAndPlain struct { // the case: one of the two is a key
		_     TableSpec `ddbindex:"tickets"`
		ID    string    `dynamodbav:"id" ddbindex:"pk"`
		Other string    `dynamodbav:"id"`
	}
	type twoPlain struct { // no key involved: still a silently dropped attribute
		_     TableSpec `ddbindex:"tickets"`
		ID    string    `dynamodbav:"id" ddbindex:"pk"`
		A     string    `dynamodbav:"a"`
		B     string    `dynamodbav:"a"`
		Title string    `dynamodbav:"title"`
	}
	type taggedBeatsGoName struct { // "ID" by Go name loses to the tag "ID"
		_     TableSpec `ddbindex:"tickets"`
		ID    string    `ddbindex:"pk"`
		Other string    `dynamodbav:"ID"`
	}
	type shallowHidesKey struct { // the embedded key field is hidden
		_ TableSpec `ddbindex:"tickets"`
		ixInnerKey
		Shadow string `dynamodbav:"id"`
	}
	type sameTypeTwice struct { // ixInnerPlain.ID reached by two paths at one depth
		_ TableSpec `ddbindex:"tickets"`
		ixLeft
		ixRight
		K string `dynamodbav:"k" ddbindex:"pk"`
	}
	type taggedEmbedded struct {
		_            TableSpec `ddbindex:"tickets"`
		K            string    `dynamodbav:"k" ddbindex:"pk"`
		ixInnerPlain `ddbindex:"sk"`
	}
	type dashComma struct { // attributevalue skips "-," as it skips "-"
		_ TableSpec `ddbindex:"tickets"`
		K string    `dynamodbav:"k" ddbindex:"pk"`
		S string    `dynamodbav:"-," ddbindex:"sk"`
	}
	ixCheckRules(t, []ixRule{
		{"a key and a plain field share a name", keyAndPlain{}, "Other", "", []string{`attribute "id" is declared by two fields (ID, Other)`, "stores neither"}},
		{"two plain fields share a name", twoPlain{}, "B", "", []string{`attribute "a" is declared by two fields (A, B)`}},
		{"a tag beats a Go name", taggedBeatsGoName{}, "ID", "", []string{`attribute "ID" is hidden by field Other`}},
		{"a shallower field hides a key", shallowHidesKey{}, "ID", "", []string{`attribute "id" is hidden by field Shadow`}},
		{"one type embedded twice", sameTypeTwice{}, "ID", "", []string{`attribute "id" is declared by two fields`}},
		{"a ddbindex tag on an embedded struct", taggedEmbedded{}, "ixInnerPlain", "", []string{"an embedded struct is not an attribute"}},
		{"dynamodbav:\"-,\" is not stored", dashComma{}, "S", "", []string{`dynamodbav:"-"`}},
	})

	// Accepted: a deeper, untagged duplicate is hidden by the key field and
	// never stored; an embedded pointer's fields are attributes.
	type hiddenPlain struct {
		_ TableSpec `ddbindex:"tickets,sk=SK"`
		ixInnerPlain
		Key string `dynamodbav:"id" ddbindex:"pk"`
		*ixInnerTagged
		Title string `dynamodbav:"title"`
	}
	s, err := schemaFor(reflect.TypeFor[hiddenPlain]())
	require.NoError(t, err)
	assert.Equal(t, "Key", fieldOf(s, "id").goName, "the shallow field is the key")
	assert.Equal(t, []int{2}, fieldOf(s, "id").index)
	assert.Equal(t, []int{3, 0}, fieldOf(s, "marker").index, "fields of an embedded pointer are attributes")

	// attrList is exactly what attributevalue stores.
	for _, m := range []any{
		hiddenPlain{ixInnerTagged: &ixInnerTagged{Marker: "m"}}, ixTicket{Assignee: ptr("a")}, ixComposite{},
	} {
		s, err := schemaFor(reflect.TypeOf(m))
		require.NoError(t, err)
		av, err := attributevalue.MarshalMap(m)
		require.NoError(t, err)
		assert.ElementsMatch(t, slices.Collect(maps.Keys(av)), s.attrList, "%T", m)
	}
}

// TestDeclarationDerivedDefaults: an index's derived key attributes default
// to _pk and _sk, whatever its type (so type=table and type=gsi switch with
// one token); two GSIs or LSIs cannot both take a default, and the error says
// how to name them. The base table's derived attributes must be named.
func TestDeclarationDerivedDefaults(t *testing.T) {
	type gsi struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi"`
		ID string    `ddbindex:"pk"`
		P  string    `ddbindex:"by_x.pk,label=P"`
		A  string    `ddbindex:"by_x.sk:0"`
		W  int64     `ddbindex:"by_x.sk:1,width=5"`
		At time.Time `ddbindex:"by_x.sk:2"`
	}
	s, err := schemaFor(reflect.TypeFor[gsi]())
	require.NoError(t, err)
	l := s.byName["by_x"]
	require.Equal(t, "_pk", l.pk.attr)
	require.Equal(t, "_sk", l.sk.attr)
	tbl, err := layoutOf(l.decl, IndexTable)
	require.NoError(t, err)
	require.Equal(t, []string{"_pk", "_sk"}, []string{tbl.pk.attr, tbl.sk.attr}, "the same names as an index table")

	type two struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi"`
		_  IndexSpec `ddbindex:"by_y,type=lsi"`
		ID string    `ddbindex:"pk"`
		S  string    `ddbindex:"sk"`
		A  string    `ddbindex:"by_x.pk"`
		B  string    `ddbindex:"by_x.sk:0;by_y.sk:0"`
		C  string    `ddbindex:"by_x.sk:1;by_y.sk:1"`
	}
	_, err = schemaFor(reflect.TypeFor[two]())
	require.ErrorIs(t, err, ErrDeclaration)
	for _, want := range []string{`"_sk"`, "by_x", "by_y", "sk="} {
		require.ErrorContains(t, err, want)
	}
}

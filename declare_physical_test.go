package ddbindex

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the declarations New refuses because of how items would be
// stored: two forms in one physical table (as declared, and as
// Options.TableName maps the names), key fields whose dynamodbav options
// store them otherwise than their keys read them, and version fields that
// would wrap around.

// ptTables declares every way an index has a table of its own, each under a
// name of its own: index tables named and by default, and an index table
// kept during a migration. A GSI's name is no table name: it may equal one.
type ptTables struct {
	_  TableSpec `ddbindex:"pt-tickets"`
	_  IndexSpec `ddbindex:"by_x,type=table,name=pt-x"`
	_  IndexSpec `ddbindex:"by_y,type=table"`
	_  IndexSpec `ddbindex:"by_z,type=gsi,keep=table,table=pt-z"`
	_  IndexSpec `ddbindex:"by_w,type=gsi,name=pt-x,pk=WPK"`
	ID string    `dynamodbav:"id" ddbindex:"pk"`
	X  string    `dynamodbav:"x" ddbindex:"by_x.pk"`
	Y  string    `dynamodbav:"y" ddbindex:"by_y.pk"`
	Z  string    `dynamodbav:"z" ddbindex:"by_z.pk"`
	W  string    `dynamodbav:"w" ddbindex:"by_w.pk,label=W"`
}

func TestDeclarationTablesOfTheirOwn(t *testing.T) {
	t.Parallel()
	tb, err := New[ptTables](nil)
	require.NoError(t, err, "distinct tables, and a GSI named as an index table, are accepted")
	var tables []string
	for _, ix := range tb.Indexes() {
		for _, f := range ix.Forms {
			if f.Kind == BaseTable || f.Kind == IndexTable {
				tables = append(tables, f.Table)
			}
		}
	}
	assert.Equal(t, []string{"pt-tickets", "pt-x", "pt-tickets-by_y", "pt-z"}, tables)

	type twoIndexTables struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=table,name=tickets-idx"`
		_  IndexSpec `ddbindex:"by_y,type=table,name=tickets-idx"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk,label=K"`
		Y  string    `ddbindex:"by_y.pk,label=K"`
	}
	type namedAsBase struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=table,name=tickets"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk"`
	}
	type anotherDefault struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=table"`
		_  IndexSpec `ddbindex:"by_y,type=table,table=tickets-by_x"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk"`
		Y  string    `ddbindex:"by_y.pk"`
	}
	type keptTakesDefault struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,keep=table"`
		_  IndexSpec `ddbindex:"by_y,type=table,name=tickets-by_x"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk"`
		Y  string    `ddbindex:"by_y.pk"`
	}
	type keptNamedAsBase struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=gsi,keep=table,table=tickets"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk"`
	}
	type twoKept struct {
		_  TableSpec `ddbindex:"tickets"`
		_  IndexSpec `ddbindex:"by_x,type=table,keep=gsi,name=tickets-idx"`
		_  IndexSpec `ddbindex:"by_y,type=gsi,keep=table,table=tickets-idx"`
		ID string    `ddbindex:"pk"`
		X  string    `ddbindex:"by_x.pk"`
		Y  string    `ddbindex:"by_y.pk"`
	}
	mix := "their items would mix in one table"
	ixCheckRules(t, []ixRule{
		{"two index tables, one name", twoIndexTables{}, "", "by_y", []string{`the index table of index by_x and the index table of index by_y are both the table "tickets-idx"`, mix, "table=NAME"}},
		{"an index table named as the base table", namedAsBase{}, "", "by_x", []string{`the base table and the index table of index by_x are both the table "tickets"`, mix}},
		{"an index table named as another's default", anotherDefault{}, "", "by_y", []string{`the index table of index by_x and the index table of index by_y are both the table "tickets-by_x"`}},
		{"a kept index table's default taken", keptTakesDefault{}, "", "by_y", []string{`the index table that index by_x keeps and the index table of index by_y`, `"tickets-by_x"`}},
		{"a kept index table named as the base table", keptNamedAsBase{}, "", "by_x", []string{`the base table and the index table that index by_x keeps`, `"tickets"`}},
		{"a declared and a kept index table, one name", twoKept{}, "", "by_y", []string{`the index table of index by_x and the index table that index by_y keeps`, `"tickets-idx"`}},
	})
}

// TestNewRefusesTableNameMapping: the names Options.TableName gives the
// tables are checked as the declared ones are, after the mapping.
func TestNewRefusesTableNameMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fn    func(string) string
		index string // the error's Index
		want  []string
	}{
		{"every table to one name", func(string) string { return "prod" }, "by_x",
			[]string{`Options.TableName maps the base table, "pt-tickets", and the index table of index by_x, "pt-x", to one table "prod"`, "their items would mix"}},
		{"an index table to the base table's name", func(s string) string {
			if s == "pt-tickets-by_y" {
				return "dev-pt-tickets"
			}
			return "dev-" + s
		}, "by_y", []string{`the base table, "pt-tickets", and the index table of index by_y, "pt-tickets-by_y", to one table "dev-pt-tickets"`}},
		{"a kept index table to another's name", func(s string) string {
			if s == "pt-z" {
				return "pt-x"
			}
			return s
		}, "by_z", []string{`the index table of index by_x, "pt-x", and the index table that index by_z keeps, "pt-z", to one table "pt-x"`}},
		{"the empty name", func(string) string { return "" }, "",
			[]string{`Options.TableName maps the base table, "pt-tickets", to "", which is not a valid DynamoDB table name`}},
		{"too short a name", func(s string) string {
			if s == "pt-x" {
				return "px"
			}
			return s
		}, "by_x", []string{`maps the index table of index by_x, "pt-x", to "px", which is not a valid DynamoDB table name`}},
		{"a character DynamoDB refuses", func(s string) string { return "dev/" + s }, "",
			[]string{`to "dev/pt-tickets", which is not a valid DynamoDB table name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, open := range map[string]func() (*Table[ptTables], error){
				"New": func() (*Table[ptTables], error) { return New[ptTables](nil, func(o *Options) { o.TableName = tc.fn }) },
				"NewReadOnly": func() (*Table[ptTables], error) {
					return NewReadOnly[ptTables](nil, func(o *Options) { o.TableName = tc.fn })
				},
			} {
				tb, err := open()
				require.Nil(t, tb, name)
				require.ErrorIs(t, err, ErrDeclaration, name)
				var de *Error
				require.ErrorAs(t, err, &de, name)
				assert.Equal(t, "ddbindex.ptTables", de.Model, name)
				assert.Equal(t, tc.index, de.Index, name)
				for _, w := range tc.want {
					assert.Contains(t, de.Reason, w, name)
				}
			}
		})
	}
	tb, err := New[ptTables](nil, func(o *Options) { o.TableName = func(s string) string { return "dev." + s } })
	require.NoError(t, err, "a prefix keeps the names apart")
	assert.Equal(t, "dev.pt-tickets", tb.TableName())
}

// TestDeclarationKeyStorageOptions: a key field whose dynamodbav options
// store it otherwise than its keys read it is refused; the same options on
// a field that keys nothing, and omitempty on a key field, are not.
func TestDeclarationKeyStorageOptions(t *testing.T) {
	t.Parallel()
	type stringInt struct {
		_  TableSpec `ddbindex:"tickets"`
		ID int64     `dynamodbav:"id,string" ddbindex:"pk"`
	}
	type stringUintComponent struct {
		_    TableSpec `ddbindex:"tickets"`
		_    IndexSpec `ddbindex:"by_n,type=table"`
		ID   string    `dynamodbav:"id" ddbindex:"pk"`
		Rank *uint16   `dynamodbav:"rank,omitempty,string" ddbindex:"by_n.sk,width=5"`
	}
	type stringFloatComponent struct {
		_     TableSpec `ddbindex:"tickets"`
		_     IndexSpec `ddbindex:"by_s,type=gsi,pk=GPK,sk=GSK"`
		ID    string    `dynamodbav:"id" ddbindex:"pk;by_s.pk"`
		Score float64   `dynamodbav:"score,string" ddbindex:"by_s.sk"`
	}
	type nullEmptyBase struct {
		_  TableSpec `ddbindex:"tickets"`
		ID string    `dynamodbav:"id,nullempty" ddbindex:"pk"`
	}
	type nullEmptyComponent struct {
		_    TableSpec `ddbindex:"tickets"`
		_    IndexSpec `ddbindex:"by_p,type=gsi,pk=GP,sk=GS"`
		ID   string    `dynamodbav:"id" ddbindex:"pk;by_p.pk"`
		Prio int       `dynamodbav:"prio,nullempty" ddbindex:"by_p.sk,width=3"`
	}
	type nullEmptyNative struct {
		_     TableSpec `ddbindex:"tickets"`
		_     IndexSpec `ddbindex:"by_o,type=native-gsi"`
		ID    string    `dynamodbav:"id" ddbindex:"pk"`
		Owner *string   `dynamodbav:"owner,nullempty" ddbindex:"by_o.pk"`
	}
	type jsonNumberComponent struct {
		_     TableSpec   `ddbindex:"tickets"`
		_     IndexSpec   `ddbindex:"by_s,type=gsi,pk=GPK,sk=GSK"`
		ID    string      `dynamodbav:"id" ddbindex:"pk;by_s.pk"`
		Score json.Number `dynamodbav:"score" ddbindex:"by_s.sk"`
	}
	type avNumberNative struct {
		_     TableSpec              `ddbindex:"tickets"`
		_     IndexSpec              `ddbindex:"by_o,type=native-gsi"`
		ID    string                 `dynamodbav:"id" ddbindex:"pk"`
		Score *attributevalue.Number `dynamodbav:"score" ddbindex:"by_o.pk"`
	}
	ixCheckRules(t, []ixRule{
		{"json.Number GSI component", jsonNumberComponent{}, "Score", "", []string{"attributevalue stores a json.Number as a Number", `add dynamodbav:",string"`}},
		{"attributevalue.Number native-gsi key attribute", avNumberNative{}, "Score", "", []string{"stores a attributevalue.Number as a Number"}},
		{"string on an int64 base key", stringInt{}, "ID", "", []string{`dynamodbav:",string" stores the int64 as a String`, "a Number"}},
		{"string on a uint16 index sort component", stringUintComponent{}, "Rank", "", []string{`stores the uint16 as a String`}},
		{"string on a float64 GSI component", stringFloatComponent{}, "Score", "", []string{`stores the float64 as a String`}},
		{"nullempty on a base key", nullEmptyBase{}, "ID", "", []string{`dynamodbav:",nullempty" stores a zero value as NULL`, "Remove nullempty", "omitempty"}},
		{"nullempty on a GSI component", nullEmptyComponent{}, "Prio", "", []string{`dynamodbav:",nullempty"`}},
		{"nullempty on a native-gsi key attribute", nullEmptyNative{}, "Owner", "", []string{`dynamodbav:",nullempty"`}},
	})

	// The options on fields that key nothing, a string field's own
	// ",string", and omitempty (a sparse index) on a key field are accepted.
	type accepted struct {
		_     TableSpec `ddbindex:"tickets"`
		_     IndexSpec `ddbindex:"by_p,type=gsi,pk=GP,sk=GS"`
		ID    string    `dynamodbav:"id,string" ddbindex:"pk;by_p.pk"`
		Prio  int       `dynamodbav:"prio,omitempty" ddbindex:"by_p.sk,width=3"`
		Count int64     `dynamodbav:"count,string"`
		Note  string    `dynamodbav:"note,nullempty"`
	}
	tb, err := New[accepted](nil)
	require.NoError(t, err)

	// A json.Number stored as a String (",string") keys as the string it is.
	type jsonNumberString struct {
		_     TableSpec   `ddbindex:"tickets"`
		_     IndexSpec   `ddbindex:"by_s,type=gsi,pk=GPK,sk=GSK"`
		ID    string      `dynamodbav:"id" ddbindex:"pk;by_s.pk"`
		Score json.Number `dynamodbav:"score,string" ddbindex:"by_s.sk"`
		Count json.Number `dynamodbav:"count"`
	}
	jn, err := New[jsonNumberString](nil)
	require.NoError(t, err)
	item, err := jn.Marshal(jsonNumberString{ID: "a", Score: "12.5", Count: "3"})
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "12.5"}, item["score"])
	assert.Equal(t, &types.AttributeValueMemberN{Value: "3"}, item["count"], "a json.Number that keys nothing is a Number")
	var back jsonNumberString
	require.NoError(t, attributevalue.UnmarshalMap(item, &back))
	assert.Equal(t, json.Number("12.5"), back.Score)
	av, err := tb.Marshal(accepted{ID: "a", Prio: 0, Count: 3})
	require.NoError(t, err)
	assert.NotContains(t, av, "GS", "with omitempty, a zero Prio leaves the item out of by_p")
}

// TestDeclarationVersionWidth: a version field narrower than 64 bits would
// wrap around; it is refused, and the 64-bit integers are accepted.
func TestDeclarationVersionWidth(t *testing.T) {
	t.Parallel()
	type ver8 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int8      `ddbindex:"version"`
	}
	type ver16 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int16     `ddbindex:"version"`
	}
	type ver32 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int32     `ddbindex:"version"`
	}
	type uver8 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V uint8     `ddbindex:"version"`
	}
	type uver16 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V uint16    `ddbindex:"version"`
	}
	type uver32 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V uint32    `dynamodbav:"v" ddbindex:"version"`
	}
	rule := func(typ string, writes uint64) []string {
		return []string{"a version field must be 64 bits wide (int64 or uint64), not " + typ, "it would wrap around after " + strconv.FormatUint(writes, 10) + " writes"}
	}
	ixCheckRules(t, []ixRule{
		{"int8", ver8{}, "V", "", rule("int8", 127)},
		{"int16", ver16{}, "V", "", rule("int16", 32767)},
		{"int32", ver32{}, "V", "", rule("int32", 2147483647)},
		{"uint8", uver8{}, "V", "", rule("uint8", 255)},
		{"uint16", uver16{}, "V", "", rule("uint16", 65535)},
		{"uint32", uver32{}, "V", "", rule("uint32", 4294967295)},
	})

	type ver64 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int64     `ddbindex:"version"`
	}
	type uver64 struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V uint64    `ddbindex:"version"`
	}
	type verInt struct {
		_ TableSpec `ddbindex:"tickets"`
		P string    `ddbindex:"pk"`
		V int       `ddbindex:"version"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[ver64](), reflect.TypeFor[uver64](), reflect.TypeFor[verInt]()} {
		_, err := schemaFor(typ)
		if typ == reflect.TypeFor[verInt]() && strconv.IntSize < 64 {
			require.ErrorIs(t, err, ErrDeclaration, "an int is 32 bits here")
			continue
		}
		require.NoError(t, err, typ.String())
	}
}

package ddbindex

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ixTwin returns model t with index's type= changed to kind: the twin
// declaration of a one-token switch. ok is false for a model that
// reflect.StructOf cannot rebuild (an unexported embedded struct).
func ixTwin(t reflect.Type, index string, kind Kind) (twin reflect.Type, ok bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Anonymous && !f.IsExported() {
			return nil, false
		}
	}
	typeWord := regexp.MustCompile(`(^|,)\s*type=[a-z]+`)
	// name= names the declared type's form only: the other form takes its
	// default name, so the twin drops it.
	nameWord := regexp.MustCompile(`,\s*name=[^,]*`)
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		if tag, ok := f.Tag.Lookup("ddbindex"); ok && f.Type == reflect.TypeFor[IndexSpec]() {
			if name, _, _ := strings.Cut(tag, ","); strings.TrimSpace(name) == index {
				tag = typeWord.ReplaceAllString(tag, "${1}type="+kind.String())
				tag = nameWord.ReplaceAllString(tag, "")
				f.Tag = reflect.StructTag(strings.Replace(string(f.Tag), `ddbindex:"`+strings.ReplaceAll(string(f.Tag.Get("ddbindex")), `"`, `\"`)+`"`, `ddbindex:"`+tag+`"`, 1))
			}
		}
		fields[i] = f
	}
	return reflect.StructOf(fields), true
}

// ixLayoutText renders everything a layout decides, by attribute names, so
// that layouts of two schemas compare.
func ixLayoutText(l *layout) string {
	var b strings.Builder
	key := func(k *keyAttr) {
		if k == nil {
			b.WriteString("none; ")
			return
		}
		fmt.Fprintf(&b, "%s native=%v %s partition=%v [", k.attr, k.native, k.scalar, k.partition)
		for _, c := range k.parts {
			fmt.Fprintf(&b, "%s/%s/%v/%d/%d ", c.f.attr, c.label, c.enc.kind, c.enc.width, c.enc.tf)
		}
		b.WriteString("] suffix [")
		for _, c := range k.suffix {
			fmt.Fprintf(&b, "%s ", c.f.attr)
		}
		b.WriteString("]; ")
	}
	fmt.Fprintf(&b, "name=%s kind=%s table=%s index=%s keysOnly=%v project=%v ", l.name, l.kind, l.table, l.index, l.keysOnly, l.project)
	key(l.pk)
	key(l.sk)
	b.WriteString("slots ")
	for _, f := range l.slots {
		b.WriteString(f.attr + " ")
	}
	b.WriteString("stored ")
	for _, k := range l.stored {
		b.WriteString(k.attr + " ")
	}
	fmt.Fprintf(&b, "tombstones=%v consistent=%v ownTable=%v uniqueSort=%v", l.tombstones, l.consistent, l.ownTable, l.uniqueSort)
	return b.String()
}

// scTicket, scPlain and scSoft are the models of package schema's tests
// (schema/tables_test.go), whose layouts TestLayoutAlternateIsTheTwin
// checks too: a GSI with an INCLUDE projection and a derived sort key, a
// keys-only LSI, an index table; a composite partition key; a softdelete
// model.
type scTicket struct {
	_       TableSpec `ddbindex:"sc_tickets"`
	_       IndexSpec `ddbindex:"by_status,type=gsi,name=sc-by-status,sk=GSI1SK,project=title|owner"`
	_       IndexSpec `ddbindex:"by_created,type=lsi,name=sc-by-created,project=keys"`
	_       IndexSpec `ddbindex:"by_status_created,type=gsi,name=sc-by-status-created"`
	_       IndexSpec `ddbindex:"by_owner,type=table"`
	Team    string    `dynamodbav:"team" ddbindex:"pk"`
	ID      string    `dynamodbav:"id" ddbindex:"sk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.pk;by_status_created.pk"`
	Created int64     `dynamodbav:"created" ddbindex:"by_status.sk:0;by_created.sk;by_status_created.sk;by_owner.sk:0"`
	Owner   string    `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Title   string    `dynamodbav:"title"`
	Body    string    `dynamodbav:"body"`
}

type scPlain struct {
	_      TableSpec `ddbindex:"sc_plain,pk=PK"`
	_      IndexSpec `ddbindex:"by_kind,type=gsi,project=keys"`
	Team   string    `dynamodbav:"team" ddbindex:"pk:0"`
	Number int64     `dynamodbav:"number" ddbindex:"pk:1,width=6"`
	Kind   string    `dynamodbav:"kind" ddbindex:"by_kind.pk"`
}

type scSoft struct {
	_     TableSpec `ddbindex:"sc_soft,softdelete"`
	_     IndexSpec `ddbindex:"by_owner,type=gsi,name=sc-soft-by-owner"`
	_     IndexSpec `ddbindex:"by_topic,type=table"`
	ID    string    `dynamodbav:"id" ddbindex:"pk"`
	Owner string    `dynamodbav:"owner" ddbindex:"by_owner.pk"`
	Topic string    `dynamodbav:"topic" ddbindex:"by_topic.pk"`
}

// TestLayoutAlternateIsTheTwin: for every test model and every index, the
// alternate layout (what Explain and Compare read) is exactly the layout of
// the twin declaration whose type= names the other kind, field for field; and
// where the twin does not parse, the alternate fails too.
func TestLayoutAlternateIsTheTwin(t *testing.T) {
	t.Parallel()
	// The models of the tests outside this package (the equivalence test's,
	// the stream package's) are out of its reach.
	models := []any{
		benchFeedItem{}, benchGSIItem{}, curxCustom{}, curxCustom2{}, curxOther{}, curxScore{}, curxTicket{},
		curxTicketTbl{}, ixBlobItem{}, ixCached{}, ixComposite{}, ixConcurrent{}, ixOmitEmpty{}, ixOnlyTable{}, ixTicket{},
		kcFullTable{}, kcNarrow{}, kcTexterItem{}, kcTicket{}, kiBaseItem{}, kiItem{}, mgPostGSI{}, mgPostTable{},
		pfLong{}, pfNoSortGSI{}, pfNoSortTbl{}, qtEntry{}, qtHard{}, qtLSI{}, qtSoft{}, qtSwG{}, qtSwNG{}, qtSwNT{},
		qtSwT{}, rtDoc{}, scPlain{}, scSoft{}, scTicket{}, syBench{}, syItem{}, tkGSI{}, tkTable{}, wcItem{}, wcScore{},
		wrMany{}, wrNote{}, wrSoftNote{}, wrTicket{}, wrUintVer{}, xtNoSort{}, xtNoSortT{}, xtOnlyPK{}, xtWidth{},
	}
	checked, refused := 0, 0
	for _, m := range models {
		typ := reflect.TypeOf(m)
		s, err := schemaFor(typ)
		require.NoError(t, err, typ)
		for _, l := range s.indexes {
			other, _ := l.kind.other()
			where := fmt.Sprintf("%s index %s as a %s", typ, l.name, other)
			alt, altErr := l.alternate()
			twinType, ok := ixTwin(typ, l.name, other)
			if !ok {
				continue
			}
			twin, twinErr := parseSchema(twinType)
			if twinErr != nil {
				require.Error(t, altErr, "%s: the twin does not parse (%v), so the alternate must fail", where, twinErr)
				refused++
				continue
			}
			require.NoError(t, altErr, where)
			require.Equal(t, ixLayoutText(twin.byName[l.name]), ixLayoutText(alt), where)
			checked++
		}
	}
	t.Logf("%d alternates equal their twins; %d refused with their twins", checked, refused)
	require.Greater(t, checked, 40)
}

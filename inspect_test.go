package ddbindex

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// inspectDoc is a model with a composite index-table sort key of a string,
// an integer and a time, and a GSI kept beside it.
type inspectDoc struct {
	_      TableSpec `ddbindex:"docs"`
	_      IndexSpec `ddbindex:"by_kind,type=table,keep=gsi"`
	_      IndexSpec `ddbindex:"by_owner,type=gsi,shards=4,pk=owner_pk,sk=owner_sk"`
	ID     string    `dynamodbav:"id"     ddbindex:"pk"`
	Kind   string    `dynamodbav:"kind"   ddbindex:"by_kind.pk"`
	Rank   int64     `dynamodbav:"rank"   ddbindex:"by_kind.sk:0"`
	At     time.Time `dynamodbav:"at"     ddbindex:"by_kind.sk:1"`
	Owner  *string   `dynamodbav:"owner"  ddbindex:"by_owner.pk"`
	Nested struct {
		Note string `dynamodbav:"note"`
	} `dynamodbav:"nested"`
}

// TestInspectCursor decodes cursors minted by real pages, as package ops's
// InspectCursor asks through internal/bridge: the index, the order, every
// field with its key text and typed value, and the next position; and says
// why it refuses broken ones, with the reasons a query would give.
func TestInspectCursor(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[inspectDoc](t, func(o *Options) { o.WriteThrough = false })
	ctx := t.Context()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var docs []inspectDoc
	for i := range 5 {
		docs = append(docs, inspectDoc{ID: string(rune('a' + i)), Kind: "memo", Rank: int64(-2 + i), At: at.Add(time.Duration(i) * time.Minute)})
	}
	putBase(t, tb, docs...)
	for _, d := range docs {
		putEntry(t, tb, "by_kind", d, false)
	}

	readAhead(t, tb.Query("by_kind", "memo").Via(IndexTable)) // the page reads the item after it
	page, err := tb.Query("by_kind", "memo").Via(IndexTable).Limit(2).Page(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, page.Cursor)
	info, err := tb.inspectCursor("by_kind", page.Cursor)
	require.NoError(t, err)
	field := func(attr, text string, v any) bridge.CursorField {
		return bridge.CursorField{Attr: attr, Text: text, Value: v}
	}
	pos := func(d inspectDoc) []bridge.CursorField {
		var want []bridge.CursorField
		for _, f := range tb.s.byName["by_kind"].slots {
			text := reflect.ValueOf(d).FieldByIndex(f.index)
			ft, err := f.canon.text(text)
			require.NoError(t, err)
			want = append(want, field(f.attr, ft, text.Interface()))
		}
		return want
	}
	require.Equal(t, &bridge.Cursor{Index: "by_kind", Position: pos(docs[1]), Next: pos(docs[2])}, info)
	require.Equal(t, []string{"kind", "rank", "at", "id"}, []string{info.Position[0].Attr, info.Position[1].Attr, info.Position[2].Attr, info.Position[3].Attr})
	require.Equal(t, int64(-1), info.Position[1].Value)
	require.Equal(t, at.Add(time.Minute), info.Position[2].Value)

	// A descending query's cursor, through the GSI: the same logical
	// position whichever form minted it.
	desc, err := tb.Query("by_kind", "memo").Via(GSI).Desc().Limit(1).Page(ctx)
	require.NoError(t, err)
	info, err = tb.inspectCursor("by_kind", desc.Cursor)
	require.NoError(t, err)
	require.True(t, info.Desc)
	require.Equal(t, pos(docs[4]), info.Position)

	// Refusals: each an *Error whose Reason says why, as a query's.
	refused := func(index, cursor, reason string) {
		t.Helper()
		_, err := tb.inspectCursor(index, cursor)
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, ErrInvalidCursor)
		require.Contains(t, ce.Reason, reason)
		_, qerr := tb.Query(index, "memo").After(cursor).Explain()
		if index == "by_kind" && !errors.Is(qerr, ErrInvalidQuery) {
			require.ErrorIs(t, qerr, ErrInvalidCursor, "a query refuses it too")
		}
	}
	refused("by_owner", page.Cursor, `minted for index "by_kind", used on index by_owner`)
	refused("", page.Cursor, `minted for index "by_kind", used on the base table`)
	refused("by_kind", "B"+page.Cursor[1:], "unknown version")
	refused("by_kind", page.Cursor[:len(page.Cursor)-4], "truncated")
	refused("by_kind", "!!", "not unpadded URL-safe Base64")

	d := tb.s.byName["by_kind"]
	at0, next0 := curPos(t, tb, d, docs[3]), curPos(t, tb, d, docs[1])
	digest, err := tb.Query("by_kind", "memo").readDigest() // a plain query's: it checks the next position
	require.NoError(t, err)
	backwards := encodeCursor(d, cursorPos{at: at0, next: next0, digest: digest}, false, nil)
	refused("by_kind", backwards, "the next position does not follow the position")
	empty := make(position, len(d.slots))
	copy(empty, at0)
	empty[0] = ""
	refused("by_kind", encodeCursor(d, cursorPos{at: empty}, false, nil), "position does not make a start key")

	// An index the model does not declare is a query error.
	_, err = tb.inspectCursor("by_nothing", page.Cursor)
	require.ErrorIs(t, err, ErrInvalidQuery)

	// Signed cursors: verified with the table's keys; another table's
	// unsigned cursor is refused.
	signedTb, err := New[inspectDoc](tb.client.c, func(o *Options) {
		o.TableName = tb.opts.TableName
		o.CursorKeys = [][]byte{[]byte("new"), []byte("old")}
	})
	require.NoError(t, err)
	signed, err := signedTb.Query("by_kind", "memo").Via(IndexTable).Limit(2).Page(ctx)
	require.NoError(t, err)
	info, err = signedTb.inspectCursor("by_kind", signed.Cursor)
	require.NoError(t, err)
	require.True(t, info.Signed)
	require.Equal(t, pos(docs[1]), info.Position)
	_, err = signedTb.inspectCursor("by_kind", page.Cursor)
	require.ErrorIs(t, err, ErrInvalidCursor)
	_, err = tb.inspectCursor("by_kind", signed.Cursor)
	require.ErrorIs(t, err, ErrInvalidCursor, "an unsigning table reads the MAC as trailing bytes")
}

// curPos is the position of item in d.
func curPos(t *testing.T, tb *Table[inspectDoc], d *layout, item inspectDoc) position {
	t.Helper()
	texts, err := tb.s.itemTexts(reflect.ValueOf(item))
	require.NoError(t, err)
	pos := make(position, len(d.slots))
	for i, f := range d.slots {
		pos[i] = texts.text(f)
	}
	return pos
}

// TestIndexes describes a model's declarations: the base table and each
// index in order, their forms with physical names (after TableName) and
// declared ones, shards,
// and key components whose FieldIndex reads the field.
func TestIndexes(t *testing.T) {
	t.Parallel()
	tb, err := New[inspectDoc](nil, func(o *Options) { o.TableName = func(s string) string { return "prod-" + s } })
	require.NoError(t, err)
	comp := func(name, attr string, typ reflect.Type) KeyComponent {
		f, ok := reflect.TypeFor[inspectDoc]().FieldByName(name)
		require.True(t, ok)
		return KeyComponent{Field: name, FieldIndex: f.Index, Attr: attr, Type: typ}
	}
	str := reflect.TypeFor[string]()
	want := []IndexInfo{
		{Name: "", Forms: []IndexForm{{Kind: BaseTable, Table: "prod-docs", Declared: "docs"}}, Partition: []KeyComponent{comp("ID", "id", str)}},
		{Name: "by_kind", Forms: []IndexForm{{Kind: IndexTable, Table: "prod-docs-by_kind", Declared: "docs-by_kind"}, {Kind: GSI, Table: "prod-docs", Index: "by_kind", Declared: "docs"}},
			Partition: []KeyComponent{comp("Kind", "kind", str)},
			Sort:      []KeyComponent{comp("Rank", "rank", reflect.TypeFor[int64]()), comp("At", "at", reflect.TypeFor[time.Time]())}},
		{Name: "by_owner", Forms: []IndexForm{{Kind: GSI, Table: "prod-docs", Index: "by_owner", Declared: "docs"}}, Shards: 4,
			Partition: []KeyComponent{comp("Owner", "owner", str)}},
	}
	got := tb.Indexes()
	require.Equal(t, want, got)

	// FieldIndex reads a component's value from an item, a pointer field's
	// through its pointer.
	owner := "ann"
	v := reflect.ValueOf(inspectDoc{Kind: "memo", Owner: &owner})
	require.Equal(t, "memo", v.FieldByIndex(got[1].Partition[0].FieldIndex).Interface())
	require.Equal(t, "ann", v.FieldByIndex(got[2].Partition[0].FieldIndex).Elem().Interface())

	// The result is the caller's: changing it changes nothing.
	got[1].Partition[0].FieldIndex[0] = 99
	require.Equal(t, want, tb.Indexes())
}

// TestInspectCursorBridge: the hook package ops calls refuses what is not a
// *Table, as a query error, and a nil one too.
func TestInspectCursorBridge(t *testing.T) {
	t.Parallel()
	for _, table := range []any{nil, "docs", (*Table[inspectDoc])(nil)} {
		info, err := bridge.InspectCursor(table, "by_kind", "")
		require.ErrorIs(t, err, ErrInvalidQuery, "%T", table)
		require.NotEmpty(t, Code(err), "%T", table)
		require.Nil(t, info)
	}
}

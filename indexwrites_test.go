package ddbindex

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// Unit tests of the index-write computation (indexwrites.go): no server.
// (The stream record adapters' are in package stream.)

// syItem has three index tables: by_status (projects everything), by_owner
// (keys only, sparse on an omitempty string) and by_tag (projects title,
// sparse on a pointer).
type syItem struct {
	_      TableSpec `ddbindex:"sy-items,pk=PK,sk=SK,retention=36h"`
	_      IndexSpec `ddbindex:"by_status,type=table"`
	_      IndexSpec `ddbindex:"by_owner,type=table,project=keys"`
	_      IndexSpec `ddbindex:"by_tag,type=table,project=title"`
	Team   string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk;by_owner.pk"`
	ID     string    `dynamodbav:"id" ddbindex:"sk"`
	Status string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Owner  string    `dynamodbav:"owner,omitempty" ddbindex:"by_owner.sk"`
	Tag    *string   `dynamodbav:"tag,omitempty" ddbindex:"by_tag.pk"`
	Title  string    `dynamodbav:"title"`
	Body   string    `dynamodbav:"body"`
}

var syNow = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const syRetention = 36 * time.Hour

func syTable(t testing.TB) *Table[syItem] {
	t.Helper()
	tb, err := New[syItem](nil, func(o *Options) { o.Now = func() time.Time { return syNow } })
	require.NoError(t, err)
	require.Equal(t, syRetention, tb.opts.Retention, "the TableSpec's retention=")
	return tb
}

func syImage(t testing.TB, tb *Table[syItem], it syItem) map[string]types.AttributeValue {
	t.Helper()
	av, err := tb.Marshal(it)
	require.NoError(t, err)
	return av
}

func syKey(t testing.TB, comps ...any) string {
	t.Helper()
	s, err := EncodeKey(comps...)
	require.NoError(t, err)
	return s
}

func syS(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return "<not S>"
}

// syWrite describes an expected write compactly: index, tombstone, and the
// index key values.
type syWrite struct {
	index     string
	tombstone bool
	pk, sk    string
}

func syDescribe(tb *Table[syItem], ws []IndexWrite) []syWrite {
	if len(ws) == 0 {
		return nil
	}
	out := make([]syWrite, len(ws))
	for i, w := range ws {
		d := tb.s.byName[w.Index]
		out[i] = syWrite{index: w.Index, tombstone: w.Tombstone, pk: syS(w.Item[d.pk.attr])}
		if d.sk != nil {
			out[i].sk = syS(w.Item[d.sk.attr])
		}
	}
	slices.SortFunc(out, func(a, b syWrite) int {
		return strings.Compare(a.index+strconv.FormatBool(a.tombstone), b.index+strconv.FormatBool(b.tombstone))
	})
	return out
}

func syBase() syItem {
	tag := "red"
	return syItem{Team: "T1", ID: "a1", Status: "open", Owner: "ann", Tag: &tag, Title: "Printer", Body: "jams"}
}

func TestIndexWritesCases(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	base := syBase()
	tag := func(s string) *string { return &s }
	with := func(f func(*syItem)) syItem {
		it := base
		it.Tag = tag(*base.Tag)
		f(&it)
		return it
	}
	// The entries of base: by_status (team, open#a1), by_owner (team, ann#a1),
	// by_tag (red, TEAM... no: the suffix is team then id).
	stat := func(tomb bool, status string) syWrite {
		return syWrite{"by_status", tomb, "T1", syKey(t, status, "a1")}
	}
	owner := func(tomb bool, team, o string) syWrite {
		return syWrite{"by_owner", tomb, team, syKey(t, o, "a1")}
	}
	tagW := func(tomb bool, tg, team string) syWrite {
		return syWrite{"by_tag", tomb, tg, syKey(t, team, "a1")}
	}
	softDeleted := syImage(t, tb, base)
	softDeleted["_deleted"] = &types.AttributeValueMemberBOOL{Value: true}
	notDeleted := syImage(t, tb, base)
	notDeleted["_deleted"] = &types.AttributeValueMemberBOOL{Value: false}

	for _, tc := range []struct {
		name     string
		old, new map[string]types.AttributeValue
		want     []syWrite
	}{
		{"insert puts every entry", nil, syImage(t, tb, base),
			[]syWrite{owner(false, "T1", "ann"), stat(false, "open"), tagW(false, "red", "T1")}},
		{"delete tombstones every entry", syImage(t, tb, base), nil,
			[]syWrite{owner(true, "T1", "ann"), stat(true, "open"), tagW(true, "red", "T1")}},
		{"soft delete tombstones every entry", syImage(t, tb, base), softDeleted,
			[]syWrite{owner(true, "T1", "ann"), stat(true, "open"), tagW(true, "red", "T1")}},
		{"re-insert after a soft delete puts every entry", softDeleted, syImage(t, tb, base),
			[]syWrite{owner(false, "T1", "ann"), stat(false, "open"), tagW(false, "red", "T1")}},
		{"_deleted=false is live: nothing changed", syImage(t, tb, base), notDeleted, nil},
		// Status is no part of by_owner (keys only) nor by_tag (title): they are left alone.
		{"sort component change: put new, tombstone old", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Status = "closed" })),
			[]syWrite{stat(false, "closed"), stat(true, "open")}},
		{"partition component change: put new, tombstone old", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Tag = tag("blue") })),
			[]syWrite{stat(false, "open"), tagW(false, "blue", "T1"), tagW(true, "red", "T1")}},
		{"partition component change (base partition too)", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Team = "T2" })),
			[]syWrite{owner(false, "T2", "ann"), owner(true, "T1", "ann"), {"by_status", false, "T2", syKey(t, "open", "a1")},
				{"by_status", true, "T1", syKey(t, "open", "a1")}, tagW(false, "red", "T2"), tagW(true, "red", "T1")}},
		// by_status projects everything, tag and owner included: it gets a put.
		{"leaving a sparse index (pointer set to nil)", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Tag = nil })),
			[]syWrite{stat(false, "open"), tagW(true, "red", "T1")}},
		{"leaving a sparse index (omitempty zero)", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Owner = "" })),
			[]syWrite{owner(true, "T1", "ann"), stat(false, "open")}},
		{"entering a sparse index (pointer set)", syImage(t, tb, with(func(i *syItem) { i.Tag = nil })), syImage(t, tb, base),
			[]syWrite{stat(false, "open"), tagW(false, "red", "T1")}},
		{"entering a sparse index (omitempty set)", syImage(t, tb, with(func(i *syItem) { i.Owner = "" })), syImage(t, tb, base),
			[]syWrite{owner(false, "T1", "ann"), stat(false, "open")}},
		{"nothing changed: no write", syImage(t, tb, base), syImage(t, tb, base), nil},
		// title is projected by by_status (all) and by_tag (title), not by by_owner (keys).
		{"projected attribute change: put, no tombstone", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Title = "Scanner" })),
			[]syWrite{stat(false, "open"), tagW(false, "red", "T1")}},
		// body is projected by by_status only.
		{"unprojected attribute change: only the index projecting it", syImage(t, tb, base), syImage(t, tb, with(func(i *syItem) { i.Body = "smokes" })),
			[]syWrite{stat(false, "open")}},
		{"both absent (a delete of a soft-deleted item): no write", softDeleted, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := tb.IndexWrites(Change{Old: tc.old, New: tc.new, Version: "42"})
			require.NoError(t, err)
			require.Equal(t, tc.want, syDescribe(tb, ws))
			for _, w := range ws {
				require.Equal(t, "sy-items-"+w.Index, w.Table, "physical index table")
				require.Equal(t, &types.AttributeValueMemberN{Value: "42"}, w.Item["_ver"], "every entry carries the change's version")
				if w.Tombstone {
					require.Equal(t, &types.AttributeValueMemberBOOL{Value: true}, w.Item["_deleted"])
					require.Equal(t, &types.AttributeValueMemberN{Value: strconv.FormatInt(syNow.Add(syRetention).Unix(), 10)}, w.Item["_ttl"])
				} else {
					require.NotContains(t, w.Item, "_deleted")
					require.NotContains(t, w.Item, "_ttl")
				}
			}
		})
	}
}

func TestIndexWritesEntryContents(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	ws, err := tb.IndexWrites(Change{New: syImage(t, tb, syBase()), Version: "7"})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, w := range ws {
		got[w.Index] = slices.Sorted(maps.Keys(w.Item))
	}
	// Entries hold the base key, the index key, the key fields of the index
	// and of the base table (so they unmarshal into a model that knows its
	// keys, as a GSI's KEYS_ONLY projection would), the projection, and the
	// version. Not the key fields of other indexes: a change to those must
	// not rewrite this index's entries.
	require.Equal(t, map[string][]string{
		"by_status": {"PK", "SK", "_sk", "_ver", "body", "id", "owner", "status", "tag", "team", "title"},
		"by_owner":  {"PK", "SK", "_sk", "_ver", "id", "owner", "team"},
		"by_tag":    {"PK", "SK", "_sk", "_ver", "id", "tag", "team", "title"},
	}, got)
	for _, w := range ws {
		require.Equal(t, syKey(t, "TEAM", "T1"), syS(w.Item["PK"]))
	}
}

func TestIndexWritesUnprojectedChangeKeysOnly(t *testing.T) {
	t.Parallel()
	type syKeysOnly struct {
		_     TableSpec `ddbindex:"sy-keys"`
		_     IndexSpec `ddbindex:"by_s,type=table,project=keys"`
		Team  string    `dynamodbav:"team" ddbindex:"pk;by_s.pk"`
		ID    string    `dynamodbav:"id" ddbindex:"sk"`
		S     string    `dynamodbav:"s" ddbindex:"by_s.sk"`
		Title string    `dynamodbav:"title"`
	}
	tb, err := New[syKeysOnly](nil)
	require.NoError(t, err)
	a, err := tb.Marshal(syKeysOnly{Team: "t", ID: "1", S: "x", Title: "one"})
	require.NoError(t, err)
	b, err := tb.Marshal(syKeysOnly{Team: "t", ID: "1", S: "x", Title: "two"})
	require.NoError(t, err)
	ws, err := tb.IndexWrites(Change{Old: a, New: b, Version: "2"})
	require.NoError(t, err)
	require.Empty(t, ws, "an unprojected attribute change writes nothing to a keys-only index table")
	c, err := tb.Marshal(syKeysOnly{Team: "t", ID: "1", S: "y", Title: "two"})
	require.NoError(t, err)
	ws, err = tb.IndexWrites(Change{Old: b, New: c, Version: "3"})
	require.NoError(t, err)
	require.Len(t, ws, 2)
	require.NotContains(t, ws[0].Item, "title")
}

func TestIndexWritesNoIndexTables(t *testing.T) {
	t.Parallel()
	type syGSIOnly struct {
		_    TableSpec `ddbindex:"sy-gsi"`
		_    IndexSpec `ddbindex:"by_s,type=gsi"`
		Team string    `dynamodbav:"team" ddbindex:"pk"`
		ID   string    `dynamodbav:"id" ddbindex:"sk"`
		S    string    `dynamodbav:"s" ddbindex:"by_s.pk"`
	}
	tb, err := New[syGSIOnly](nil)
	require.NoError(t, err)
	img, err := tb.Marshal(syGSIOnly{Team: "t", ID: "1", S: "x"})
	require.NoError(t, err)
	ws, err := tb.IndexWrites(Change{New: img, Version: "1"})
	require.NoError(t, err)
	require.Empty(t, ws, "a GSI is DynamoDB's to keep")
}

func TestIndexWritesVersionValidation(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	img := syImage(t, tb, syBase())
	for _, v := range []string{"", "abc", "-1", "1.5", "1e3", " 1", "0x10", strings.Repeat("9", 41)} {
		_, err := tb.IndexWrites(Change{New: img, Version: v})
		require.ErrorIs(t, err, ErrInvalidWrite, "version %q", v)
		require.Equal(t, "DDBX-603", Code(err))
	}
	for _, v := range []string{"0", "1", "000123", strings.Repeat("9", 38), strings.Repeat("9", 39), strings.Repeat("9", 40), "49039859058234095823409580234958"} {
		_, err := tb.IndexWrites(Change{New: img, Version: v})
		require.NoError(t, err, "version %q", v)
	}
}

func TestIndexWritesBadImages(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	good := syImage(t, tb, syBase())
	wrongType := maps.Clone(good)
	wrongType["status"] = &types.AttributeValueMemberBOOL{Value: true}
	emptyKey := maps.Clone(good)
	emptyKey["team"] = &types.AttributeValueMemberS{Value: ""}
	for name, img := range map[string]map[string]types.AttributeValue{"wrong type": wrongType, "empty key value": emptyKey} {
		// Every error of IndexWrites says the change can never be written.
		_, err := tb.IndexWrites(Change{Old: img, New: good, Version: "1"})
		require.ErrorIs(t, err, ErrInvalidWrite, "old image: %s", name)
		_, err = tb.IndexWrites(Change{Old: good, New: img, Version: "1"})
		require.ErrorIs(t, err, ErrInvalidWrite, "new image: %s", name)
		require.Equal(t, "DDBX-603", Code(err))
	}
	_, err := tb.IndexWrites(Change{Old: good, New: wrongType, Version: "1"})
	require.ErrorContains(t, err, "Status")
}

// syTexts covers the stored forms textFromAV reads: numbers, bytes, times,
// NULL for a nil pointer, and values stored in a type the field cannot hold.
func TestIndexWritesStoredForms(t *testing.T) {
	t.Parallel()
	type syForms struct {
		_     TableSpec `ddbindex:"sy-forms,pk=PK,sk=SK"`
		_     IndexSpec `ddbindex:"by_n,type=table"`
		Team  string    `dynamodbav:"team" ddbindex:"pk;by_n.pk"`
		N     int64     `dynamodbav:"n" ddbindex:"sk:0;by_n.sk:0"`
		B     []byte    `dynamodbav:"b" ddbindex:"sk:1;by_n.sk:1"`
		At    time.Time `dynamodbav:"at" ddbindex:"by_n.sk:2"`
		Maybe *int      `dynamodbav:"maybe" ddbindex:"by_n.sk:3"`
	}
	tb, err := New[syForms](nil)
	require.NoError(t, err)
	one := 1
	it := syForms{Team: "t", N: -42, B: []byte{0, 1, '#'}, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Maybe: &one}
	img, err := tb.Marshal(it)
	require.NoError(t, err)
	ws, err := tb.IndexWrites(Change{New: img, Version: "1"})
	require.NoError(t, err)
	require.Len(t, ws, 1)
	// Every base key component is already in the index key: no suffix.
	want := syKey(t, int64(-42), []byte{0, 1, '#'}, it.At, 1)
	require.Equal(t, want, syS(ws[0].Item["_sk"]))

	it.Maybe = nil // marshals as NULL: leaves the index
	img2, err := tb.Marshal(it)
	require.NoError(t, err)
	require.IsType(t, &types.AttributeValueMemberNULL{}, img2["maybe"])
	ws, err = tb.IndexWrites(Change{Old: img, New: img2, Version: "2"})
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.True(t, ws[0].Tombstone)

	bad := maps.Clone(img)
	bad["n"] = &types.AttributeValueMemberN{Value: "1.5"}
	_, err = tb.IndexWrites(Change{New: bad, Version: "3"})
	require.Error(t, err, "a non-integer number in an integer component")
	bad["n"] = &types.AttributeValueMemberS{Value: "x"}
	_, err = tb.IndexWrites(Change{New: bad, Version: "3"})
	require.ErrorContains(t, err, "n is stored as S, want N")
	require.ErrorIs(t, err, ErrInvalidWrite)
}

// TestApplyRejectsBadVersion: a bad version stops Apply before any write.
func TestApplyRejectsBadVersion(t *testing.T) {
	t.Parallel()
	tb := syTable(t) // nil client: nothing may be sent
	st, err := tb.Apply(t.Context(), []Change{{New: syImage(t, tb, syBase()), Version: "x"}})
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.Zero(t, st)
}

func TestVersionConditionExpression(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	c := tb.versionCondition("17")
	require.True(t, c.IsSet())
	// Built through the expression package, so names and values are placeholders.
	e, err := expression.NewBuilder().WithCondition(c).Build()
	require.NoError(t, err)
	require.Equal(t, "(attribute_not_exists (#0)) OR (#0 < :0)", aws.ToString(e.Condition()))
	require.Equal(t, map[string]string{"#0": "_ver"}, e.Names())
	require.Equal(t, map[string]types.AttributeValue{":0": &types.AttributeValueMemberN{Value: "17"}}, e.Values())
}

func TestApplyStatsAdd(t *testing.T) {
	t.Parallel()
	s := ApplyStats{Changes: 1, Puts: 2, Deletes: 3, Stale: 4}
	s.add(ApplyStats{Changes: 10, Puts: 20, Deletes: 30, Stale: 40})
	require.Equal(t, ApplyStats{Changes: 11, Puts: 22, Deletes: 33, Stale: 44}, s)
}

func TestIndexWritesVersionErrorNamesTheVersion(t *testing.T) {
	t.Parallel()
	tb := syTable(t)
	_, err := tb.IndexWrites(Change{Version: "v1"})
	require.True(t, errors.Is(err, ErrInvalidWrite))
	require.ErrorContains(t, err, `"v1"`)
}

// ---- benchmark -------------------------------------------------------------

type syBench struct {
	_        TableSpec `ddbindex:"sy-bench,pk=PK,sk=SK"`
	_        IndexSpec `ddbindex:"by_status,type=table"`
	Team     string    `dynamodbav:"team" ddbindex:"pk,label=TEAM;by_status.pk"`
	ID       string    `dynamodbav:"id" ddbindex:"sk,label=TICKET"`
	Status   string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created  time.Time `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Title    string    `dynamodbav:"title"`
	Assignee string    `dynamodbav:"assignee"`
	Priority int       `dynamodbav:"priority"`
	Body     string    `dynamodbav:"body"`
	Labels   []string  `dynamodbav:"labels"`
}

// BenchmarkIndexWrites measures the CPU cost per stream record of computing
// the index-table writes: a MODIFY whose index sort key changes (a put and a
// tombstone), with ~240-byte images.
func BenchmarkIndexWrites(b *testing.B) {
	tb, err := New[syBench](nil)
	require.NoError(b, err)
	it := syBench{Team: "TEAM-7", ID: "8842", Status: "open", Created: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC),
		Title: "Printer on floor 3 jams on every second page", Assignee: "user_42", Priority: 2,
		Body: "Since the firmware update the printer jams; paper tray 2 is affected.", Labels: []string{"hardware", "printer"}}
	old, err := tb.Marshal(it)
	require.NoError(b, err)
	it.Status = "pending"
	it.Assignee = "user_7"
	new, err := tb.Marshal(it)
	require.NoError(b, err)
	size := 0
	for k, v := range new {
		size += len(k) + len(avString(v))
	}
	b.ReportMetric(float64(size), "image-bytes")
	c := Change{Old: old, New: new, Version: "49039859058234095823409580234958"}
	ws, err := tb.IndexWrites(c)
	require.NoError(b, err)
	require.Len(b, ws, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := tb.IndexWrites(c); err != nil {
			b.Fatal(err)
		}
	}
}

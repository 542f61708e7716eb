package ddbindex

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// This file tests cursors (cursor.go) and, through them, the parts of the
// read path a cursor crosses: planFor's checks of a decoded position, and the
// pager's guard against a position that does not advance.
//
// The integration tests read two models with the same fields and the same
// logical index names: curxTicket declares them as a GSI (derived keys), a GSI
// with a native Number sort key and an LSI; curxTicketTbl declares all three
// as index tables. A cursor names a logical position, so a cursor minted on
// one must continue on the other.
//
// Strict decoding is tested on a Table whose client fails the test when it is
// called (curxNoCallClient): every rejection happens before any request.

// ---- models -------------------------------------------------------------------

type curxTicket struct {
	_       TableSpec `ddbindex:"curx_tickets"`
	_       IndexSpec `ddbindex:"by_status,type=gsi,pk=gpk,sk=gsk"`
	_       IndexSpec `ddbindex:"by_seq,type=gsi"`
	_       IndexSpec `ddbindex:"by_created,type=lsi,sk=lsk"`
	Team    string    `dynamodbav:"team" ddbindex:"pk;by_status.pk;by_seq.pk"`
	ID      string    `dynamodbav:"id" ddbindex:"sk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created time.Time `dynamodbav:"created" ddbindex:"by_status.sk:1;by_created.sk"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"by_seq.sk"`
	Title   string    `dynamodbav:"title"`
}

// curxTicketTbl is curxTicket with every index an index table (the one-token
// switch; LSI becomes table too). Its fields and markers are identical, so
// the two types convert into each other.
type curxTicketTbl struct {
	_       TableSpec `ddbindex:"curx_tickets_tbl"`
	_       IndexSpec `ddbindex:"by_status,type=table"`
	_       IndexSpec `ddbindex:"by_seq,type=table"`
	_       IndexSpec `ddbindex:"by_created,type=table"`
	Team    string    `dynamodbav:"team" ddbindex:"pk;by_status.pk;by_seq.pk;by_created.pk"`
	ID      string    `dynamodbav:"id" ddbindex:"sk"`
	Status  string    `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created time.Time `dynamodbav:"created" ddbindex:"by_status.sk:1;by_created.sk"`
	Seq     int64     `dynamodbav:"seq" ddbindex:"by_seq.sk"`
	Title   string    `dynamodbav:"title"`
}

// curxOther has an index of the same logical name as curxTicket's, made of
// other fields: cursors must not cross.
type curxOther struct {
	_      TableSpec `ddbindex:"curx_other"`
	_      IndexSpec `ddbindex:"by_status,type=gsi,pk=gpk,sk=gsk"`
	Team   string    `dynamodbav:"team" ddbindex:"pk;by_status.pk"`
	ID     string    `dynamodbav:"id" ddbindex:"sk"`
	Status string    `dynamodbav:"state" ddbindex:"by_status.sk"`
}

// curxScore has native Number (float) and Binary keys.
type curxScore struct {
	_     TableSpec `ddbindex:"curx_scores"`
	_     IndexSpec `ddbindex:"by_blob,type=gsi"`
	ID    string    `dynamodbav:"id" ddbindex:"pk;by_blob.pk"`
	Score float64   `dynamodbav:"score" ddbindex:"sk"`
	Blob  []byte    `dynamodbav:"blob" ddbindex:"by_blob.sk"`
}

// curxSKU is a component type with its own key text, CAT-0042.
type curxSKU struct {
	Cat string
	N   int
}

func (s curxSKU) KeyText() (string, error) {
	if s.N < 0 || s.N > 9999 {
		return "", fmt.Errorf("sku number %d out of range", s.N)
	}
	return fmt.Sprintf("%s-%04d", s.Cat, s.N), nil
}

func (s *curxSKU) ParseKeyText(text string) error {
	cat, num, ok := strings.Cut(text, "-")
	if !ok || cat == "" {
		return fmt.Errorf("%q is not a SKU", text)
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return fmt.Errorf("%q is not a SKU: %w", text, err)
	}
	s.Cat, s.N = cat, n
	return nil
}

// curxLabel has a key text but no parser: its cursor texts cannot be
// checked beyond UTF-8.
type curxLabel string

func (l curxLabel) KeyText() (string, error) { return string(l), nil }

// curxBoom's parser panics on "boom".
type curxBoom struct{ S string }

func (b curxBoom) KeyText() (string, error) { return b.S, nil }

func (b *curxBoom) ParseKeyText(text string) error {
	if text == "boom" {
		panic("curxBoom: boom")
	}
	b.S = text
	return nil
}

type curxCustom2 struct {
	_     TableSpec `ddbindex:"curx_custom2,sk=csk"`
	Bin   string    `dynamodbav:"bin" ddbindex:"pk"`
	Label curxLabel `dynamodbav:"label" ddbindex:"sk:0"`
	Boom  curxBoom  `dynamodbav:"boom" ddbindex:"sk:1"`
}

type curxCustom struct {
	_   TableSpec `ddbindex:"curx_custom,sk=csk"`
	Bin string    `dynamodbav:"bin" ddbindex:"pk"`
	SKU curxSKU   `dynamodbav:"sku" ddbindex:"sk"`
}

// ---- fake clients ---------------------------------------------------------------

// curxNoCallClient fails the test when any request is sent: it proves that a
// rejection happens before any request. It does not answer anything.
type curxNoCallClient struct {
	Client // nil: a method added to Client later panics, which fails too
	t      testing.TB
}

var errCurxNoCall = errors.New("curxNoCallClient: no request expected")

func (c curxNoCallClient) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.t.Errorf("Query sent, but none was expected (ExclusiveStartKey %v)", in.ExclusiveStartKey)
	return nil, errCurxNoCall
}

func (c curxNoCallClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.t.Errorf("GetItem sent, but no request was expected")
	return nil, errCurxNoCall
}

func (c curxNoCallClient) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.t.Errorf("BatchGetItem sent, but no request was expected")
	return nil, errCurxNoCall
}

func (c curxNoCallClient) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.t.Errorf("PutItem sent, but no request was expected")
	return nil, errCurxNoCall
}

func (c curxNoCallClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.t.Errorf("UpdateItem sent, but no request was expected")
	return nil, errCurxNoCall
}

func (c curxNoCallClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.t.Errorf("DeleteItem sent, but no request was expected")
	return nil, errCurxNoCall
}

func (c curxNoCallClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.t.Errorf("TransactWriteItems sent, but no request was expected")
	return nil, errCurxNoCall
}

// curxCountingClient passes requests on and counts the Query calls.
type curxCountingClient struct {
	Client
	queries atomic.Int64
}

func (c *curxCountingClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.Client.Query(ctx, in, optFns...)
}

// curxNoCall returns a Table of T whose client fails t on any request.
func curxNoCall[T any](t testing.TB, optFns ...func(*Options)) *Table[T] {
	t.Helper()
	tb, err := New[T](curxNoCallClient{t: t}, optFns...)
	require.NoError(t, err)
	return tb
}

// curxSameOpts copies the options of an existing Table (its table names).
func curxSameOpts[T any](tb *Table[T]) func(*Options) {
	return func(o *Options) { *o = tb.opts.Options }
}

// ---- data -----------------------------------------------------------------------

var curxEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

var curxStatuses = []string{"closed", "open", "pending"}

// curxItems returns n tickets of team: statuses and creation times repeat so
// that index sort values tie and only the base key suffix orders them; Seq is
// a permutation of 0..n-1 (unique in the partition); some IDs hold the
// separator and escape bytes.
func curxItems(team string, n int) []curxTicket {
	perm := rand.New(rand.NewPCG(uint64(n), 7)).Perm(n)
	out := make([]curxTicket, n)
	for i := range out {
		id := fmt.Sprintf("t%03d", i)
		switch i % 6 {
		case 0:
			id += "#x"
		case 3:
			id += "$y"
		case 4:
			id += "é"
		}
		out[i] = curxTicket{
			Team:    team,
			ID:      id,
			Status:  curxStatuses[(i*7+3)%3],
			Created: curxEpoch.Add(time.Duration((i*11)%5) * time.Hour),
			Seq:     int64(perm[i]),
			Title:   "ticket " + strconv.Itoa(i),
		}
	}
	return out
}

// curxOrder sorts items as the logical index orders them, computed from the
// Go values (not from the key encoding).
func curxOrder(index string, items []curxTicket, desc bool) []curxTicket {
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b curxTicket) int {
		var c int
		switch index {
		case "":
			c = strings.Compare(a.ID, b.ID)
		case "by_status":
			c = cmp.Or(strings.Compare(a.Status, b.Status), a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
		case "by_seq":
			c = cmp.Compare(a.Seq, b.Seq)
		case "by_created":
			c = cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
		default:
			panic("curxOrder: no index " + index)
		}
		if desc {
			c = -c
		}
		return c
	})
	return out
}

// curxPageIDs reads one page of q, descending when desc, and returns its
// items' IDs (empty, not nil, for an empty page).
func curxPageIDs[T any](t testing.TB, q Query[T], desc bool) []string {
	t.Helper()
	if desc {
		q = q.Desc()
	}
	return append([]string{}, curxIDs(curxPage(t, q).Items)...)
}

func curxIDs[T any](items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = reflect.ValueOf(it).FieldByName("ID").String()
	}
	return out
}

func curxFilter(items []curxTicket, keep func(curxTicket) bool) []curxTicket {
	var out []curxTicket
	for _, it := range items {
		if keep == nil || keep(it) {
			out = append(out, it)
		}
	}
	return out
}

// curxEnv is a pair of tables with the same tickets: a written to the base
// table (DynamoDB keeps its GSIs and LSI), b to the base table and, entry by
// entry, to its index tables.
type curxEnv struct {
	a     *Table[curxTicket]
	b     *Table[curxTicketTbl]
	items map[string][]curxTicket
}

func curxSetup(t *testing.T, teams map[string]int, optFns ...func(*Options)) *curxEnv {
	t.Helper()
	a, _ := newTestTable[curxTicket](t, optFns...)
	b, _ := newTestTable[curxTicketTbl](t, optFns...)
	env := &curxEnv{a: a, b: b, items: map[string][]curxTicket{}}
	for team, n := range teams {
		items := curxItems(team, n)
		env.items[team] = items
		putBase(t, a, items...)
		for _, it := range items {
			bt := curxTicketTbl(it)
			putBase(t, b, bt)
			for _, ix := range []string{"by_status", "by_seq", "by_created"} {
				require.True(t, putEntry(t, b, ix, bt, false))
			}
		}
	}
	return env
}

// curxPage reads one page, requiring no error.
func curxPage[T any](t testing.TB, q Query[T]) *Page[T] {
	t.Helper()
	p, err := q.Page(context.Background())
	require.NoError(t, err)
	return p
}

// curxCollect reads every page of q and returns each page's IDs. Only the
// last page may be empty (the page after a full last page).
func curxCollect[T any](t testing.TB, q Query[T]) [][]string {
	t.Helper()
	var pages [][]string
	cursor := ""
	for i := 0; ; i++ {
		require.Less(t, i, 500, "paging does not end")
		p := curxPage(t, q.After(cursor))
		pages = append(pages, curxIDs(p.Items))
		if p.Cursor == "" {
			return pages
		}
		require.NotEmpty(t, p.Items, "a page with a cursor to continue must not be empty")
		require.NotEqual(t, cursor, p.Cursor, "the cursor did not advance")
		cursor = p.Cursor
	}
}

// curxRest returns the IDs of the pages of q after cursor, which is not "".
func curxRest[T any](t testing.TB, q Query[T], cursor string) []string {
	t.Helper()
	require.NotEmpty(t, cursor)
	var ids []string
	for i := 0; cursor != ""; i++ {
		require.Less(t, i, 500, "paging does not end")
		p := curxPage(t, q.After(cursor))
		ids = append(ids, curxIDs(p.Items)...)
		cursor = p.Cursor
	}
	return ids
}

// curxPos is the logical position of item in d.
func curxPos[T any](t testing.TB, tb *Table[T], d *layout, item T) position {
	t.Helper()
	texts, err := tb.s.itemTexts(reflect.ValueOf(item))
	require.NoError(t, err)
	pos := make(position, len(d.slots))
	for i, f := range d.slots {
		text, ok := texts.get(f)
		require.True(t, ok, "item has no %s", f.attr)
		pos[i] = text
	}
	return pos
}

func curxDef[T any](t testing.TB, tb *Table[T], index string) *layout {
	t.Helper()
	d, err := tb.index(index)
	require.NoError(t, err)
	return d
}

// ---- hand-made cursors ------------------------------------------------------------

type curxField struct{ attr, text string }

// curxRaw is the body of a cursor, field by field, to build malformed ones.
type curxRaw struct {
	version, flags byte
	index          string
	count          int // -1: len(fields)
	fields         []curxField
	trailing       []byte
}

func (r curxRaw) bytes() []byte {
	b := []byte{r.version, r.flags}
	b = binary.AppendUvarint(b, uint64(len(r.index)))
	b = append(b, r.index...)
	n := r.count
	if n < 0 {
		n = len(r.fields)
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, f := range r.fields {
		b = binary.AppendUvarint(b, uint64(len(f.attr)))
		b = append(b, f.attr...)
		b = binary.AppendUvarint(b, uint64(len(f.text)))
		b = append(b, f.text...)
	}
	return append(b, r.trailing...)
}

func curxToken(raw []byte) string { return cursorEncoding.EncodeToString(raw) }

// curxRawOf is the raw form of a real cursor for d at pos.
func curxRawOf(d *layout, pos position, desc bool) curxRaw {
	r := curxRaw{version: cursorVersion, index: d.name, count: -1}
	if desc {
		r.flags = flagDesc
	}
	for i, f := range d.slots {
		r.fields = append(r.fields, curxField{f.attr, pos[i]})
	}
	return r
}

// curxRequireInvalid requires err to be a cursor rejection, in every form
// callers use.
func curxRequireInvalid(t testing.TB, err error, msgAndArgs ...any) *Error {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.ErrorIs(t, err, ErrInvalidCursor, msgAndArgs...)
	require.ErrorIs(t, err, ErrInvalidCursor, msgAndArgs...)
	require.Equal(t, "DDBX-300", Code(err), msgAndArgs...)
	var ce *Error
	require.ErrorAs(t, err, &ce, msgAndArgs...)
	require.NotEmpty(t, ce.Reason, msgAndArgs...)
	return ce
}

// curxRejected requires q to fail with ErrInvalidCursor in Page, All and
// Exists, and in plan. q's Table must have a curxNoCallClient, which fails the
// test if a request is sent. It returns the reason.
func curxRejected[T any](t testing.TB, q Query[T], msgAndArgs ...any) string {
	t.Helper()
	_, err := q.plan()
	ce := curxRequireInvalid(t, err, msgAndArgs...)
	page, err := q.Page(context.Background())
	curxRequireInvalid(t, err, msgAndArgs...)
	require.Nil(t, page)
	n := 0
	for _, err := range q.All(context.Background()) {
		n++
		curxRequireInvalid(t, err, msgAndArgs...)
	}
	require.Equal(t, 1, n, "All must yield exactly the error")
	ok, err := q.Exists(context.Background())
	curxRequireInvalid(t, err, msgAndArgs...)
	require.False(t, ok)
	return ce.Reason
}

// curxAccepted requires q to plan without error, and returns the decoded
// start position.
func curxAccepted[T any](t testing.TB, q Query[T], msgAndArgs ...any) position {
	t.Helper()
	p, err := q.plan()
	require.NoError(t, err, msgAndArgs...)
	require.NotNil(t, p.start.at, msgAndArgs...)
	return p.start.at
}

// ---- integration: portability between index types -----------------------------------

type curxCase struct {
	name  string
	index string
	cond  SortCondition
	keep  func(curxTicket) bool
	desc  bool
	limit int
}

var curxPortableCases = []curxCase{
	{name: "derived", index: "by_status", limit: 4},
	{name: "derived/desc", index: "by_status", desc: true, limit: 5},
	{name: "derived/eq", index: "by_status", cond: Eq("open"), keep: func(x curxTicket) bool { return x.Status == "open" }, limit: 2},
	{name: "derived/eq-two", index: "by_status", cond: Eq("open", curxEpoch.Add(2*time.Hour)),
		keep: func(x curxTicket) bool { return x.Status == "open" && x.Created.Equal(curxEpoch.Add(2*time.Hour)) }, limit: 1},
	{name: "derived/between/desc", index: "by_status", cond: Between(K("closed"), K("open")), desc: true,
		keep: func(x curxTicket) bool { return x.Status <= "open" }, limit: 3},
	{name: "native", index: "by_seq", limit: 4},
	{name: "native/desc", index: "by_seq", desc: true, limit: 6},
	{name: "native/gt", index: "by_seq", cond: Gt(int64(5)), keep: func(x curxTicket) bool { return x.Seq > 5 }, limit: 3},
	{name: "native/between/desc", index: "by_seq", cond: Between(int64(3), int64(15)), desc: true,
		keep: func(x curxTicket) bool { return x.Seq >= 3 && x.Seq <= 15 }, limit: 4},
	{name: "lsi", index: "by_created", limit: 5},
	{name: "lsi/ge/desc", index: "by_created", cond: Ge(curxEpoch.Add(time.Hour)), desc: true,
		keep: func(x curxTicket) bool { return !x.Created.Before(curxEpoch.Add(time.Hour)) }, limit: 4},
}

func curxQueries(env *curxEnv, c curxCase, team string) (Query[curxTicket], Query[curxTicketTbl]) {
	qa := env.a.Query(c.index, team).Where(c.cond).Limit(c.limit)
	qb := env.b.Query(c.index, team).Where(c.cond).Limit(c.limit)
	if c.desc {
		qa, qb = qa.Desc(), qb.Desc()
	}
	return qa, qb
}

// TestCursorGSIAndTable: a cursor minted on a GSI (or LSI) continues on the
// same index declared as an index table, and back; both mint the same cursor
// for the same position.
func TestCursorGSIAndTable(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 23, "T2": 3})
	for _, c := range curxPortableCases {
		t.Run(c.name, func(t *testing.T) {
			want := curxIDs(curxOrder(c.index, curxFilter(env.items["T1"], c.keep), c.desc))
			require.GreaterOrEqual(t, len(want), 2*c.limit, "the case needs two pages at least")
			qa, qb := curxQueries(env, c, "T1")

			a1, b1 := curxPage(t, qa), curxPage(t, qb)
			require.Equal(t, want[:c.limit], curxIDs(a1.Items))
			require.Equal(t, want[:c.limit], curxIDs(b1.Items))
			require.NotEmpty(t, a1.Cursor)
			require.Equal(t, a1.Cursor, b1.Cursor, "the same logical position must give the same cursor")

			// GSI cursor → index table, and the GSI's own page 2.
			a2, b2 := curxPage(t, qa.After(a1.Cursor)), curxPage(t, qb.After(a1.Cursor))
			require.Equal(t, want[c.limit:min(2*c.limit, len(want))], curxIDs(a2.Items))
			require.Equal(t, curxIDs(a2.Items), curxIDs(b2.Items))
			require.Equal(t, a2.Cursor, b2.Cursor)

			// Index-table cursor → GSI.
			a2b := curxPage(t, qa.After(b1.Cursor))
			require.Equal(t, curxIDs(b2.Items), curxIDs(a2b.Items))

			// Alternate between the two declarations to the end.
			var got []string
			cursor := ""
			for i := 0; ; i++ {
				require.Less(t, i, 100)
				var ids []string
				if i%2 == 0 {
					p := curxPage(t, qa.After(cursor))
					ids, cursor = curxIDs(p.Items), p.Cursor
				} else {
					p := curxPage(t, qb.After(cursor))
					ids, cursor = curxIDs(p.Items), p.Cursor
				}
				got = append(got, ids...)
				if cursor == "" {
					break
				}
			}
			require.Equal(t, want, got)
		})
	}
}

// TestCursorGSITiesOnTable reads on an index table the cursor of a native
// GSI page whose look-ahead item ties with others: the GSI orders the ties
// as its server does, the index table by base key, so the ties that come
// before the look-ahead item on the table came after it on the GSI and were
// not read. The table's page starts before their sort value and returns
// them all. The GSI's cursor is minted by a real read (on dynalite, which
// orders ties by a hash, its look-ahead item is seldom the lowest ID), and,
// for every server, with the look-ahead item set to each tie in turn.
func TestCursorGSITiesOnTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := newTestTable[curxTicket](t)
	b, _ := newTestTable[curxTicketTbl](t)
	items := []curxTicket{{Team: "T1", ID: "a", Seq: 1}}
	for i := range 10 {
		items = append(items, curxTicket{Team: "T1", ID: fmt.Sprintf("k%d", i), Seq: 2})
	}
	items = append(items, curxTicket{Team: "T1", ID: "z", Seq: 3})
	putBase(t, a, items...)
	for _, it := range items {
		putBase(t, b, curxTicketTbl(it))
		require.True(t, putEntry(t, b, "by_seq", curxTicketTbl(it), false))
	}
	want := curxIDs(items[1:]) // the table's order: ties by ID
	readAhead(t, a.Query("by_seq", "T1"))
	first, err := a.Query("by_seq", "T1").Limit(1).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, curxIDs(first.Items))
	rest, err := b.Query("by_seq", "T1").Limit(100).After(first.Cursor).Page(ctx)
	require.NoError(t, err)
	require.Equal(t, want, curxIDs(rest.Items), "the GSI's cursor read on the index table")

	ga, err := a.index("by_seq")
	require.NoError(t, err)
	gb, err := b.index("by_seq")
	require.NoError(t, err)
	c, err := decodeCursor(ga, first.Cursor, false, &a.opts)
	require.NoError(t, err)
	require.NotNil(t, c.next, "the page read its look-ahead item")
	for _, tie := range items[1:11] {
		c.next = curxPos(t, a, ga, tie)
		tok := encodeCursor(ga, c, false, nil)
		got, err := b.Query("by_seq", "T1").Limit(100).After(tok).Page(ctx)
		require.NoError(t, err)
		require.Equal(t, want, curxIDs(got.Items), "look-ahead item %s", tie.ID)
		// On the GSI itself the page starts before the value too.
		onGSI, err := a.Query("by_seq", "T1").Limit(100).After(tok).Page(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, want, curxIDs(onGSI.Items), "look-ahead item %s, on the GSI", tie.ID)
		// Descending, from z: the ties come after the position.
		d := cursorPos{at: curxPos(t, a, ga, items[11]), next: c.next, digest: c.digest}
		got, err = b.Query("by_seq", "T1").Desc().Limit(100).After(encodeCursor(ga, d, true, nil)).Page(ctx)
		require.NoError(t, err)
		desc := curxIDs(items[:11])
		slices.Reverse(desc)
		require.Equal(t, desc, curxIDs(got.Items), "look-ahead item %s, descending", tie.ID)
	}
	// Minted on the table, the cursor is the GSI's (the same logical
	// position), and the GSI's page starts before the value too.
	tfirst, err := b.Query("by_seq", "T1").Limit(1).Page(ctx)
	require.NoError(t, err)
	tc, err := decodeCursor(gb, tfirst.Cursor, false, &b.opts)
	require.NoError(t, err)
	require.NotNil(t, tc.next)
	got, err := a.Query("by_seq", "T1").Limit(100).After(tfirst.Cursor).Page(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, want, curxIDs(got.Items))
}

// TestCursorSecondAndLaterPages guards against the production bug where the
// encoder and decoder disagreed on field names (SK vs sk), which only shows
// from page two on: pages 2..n of a long partition must be right, on every
// index type.
func TestCursorSecondAndLaterPages(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 23, "T2": 4})
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{5, 7} {
				name := fmt.Sprintf("%s/desc=%v/limit=%d", cmp.Or(index, "base"), desc, limit)
				t.Run(name, func(t *testing.T) {
					want := curxIDs(curxOrder(index, env.items["T1"], desc))
					qa := env.a.Query(index, "T1").Limit(limit)
					qb := env.b.Query(index, "T1").Limit(limit)
					if desc {
						qa, qb = qa.Desc(), qb.Desc()
					}
					for _, pages := range [][][]string{curxCollect(t, qa), curxCollect(t, qb)} {
						require.GreaterOrEqual(t, len(pages), 4)
						var got []string
						for i, p := range pages {
							if i < len(want)/limit {
								require.Len(t, p, limit, "page %d", i+1)
							}
							require.Equal(t, want[min(i*limit, len(want)):min((i+1)*limit, len(want))], p, "page %d", i+1)
							got = append(got, p...)
						}
						require.Equal(t, want, got)
					}
				})
			}
		}
	}
}

// TestCursorLimitOne: Limit 1 through a partition with tombstones (a
// leading run, runs in the middle, a trailing run, in index order) returns
// every live item exactly once, in order, ascending and descending.
func TestCursorLimitOne(t *testing.T) {
	t.Parallel()
	b, _ := newTestTable[curxTicketTbl](t)
	a, _ := newTestTable[curxTicket](t)
	items := curxItems("T3", 17)
	putBase(t, a, items...)
	deadAt := []int{0, 1, 4, 5, 6, 7, 10, 15, 16} // positions in ascending index order
	for _, index := range []string{"by_status", "by_seq"} {
		ordered := curxOrder(index, items, false)
		dead := map[string]bool{}
		for _, k := range deadAt {
			dead[ordered[k].ID] = true
		}
		for _, it := range items {
			require.True(t, putEntry(t, b, index, curxTicketTbl(it), dead[it.ID]))
		}
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/desc=%v", index, desc), func(t *testing.T) {
				var want []string
				for _, it := range curxOrder(index, items, desc) {
					if !dead[it.ID] {
						want = append(want, it.ID)
					}
				}
				require.Len(t, want, len(items)-len(deadAt))
				q := b.Query(index, "T3").Limit(1)
				if desc {
					q = q.Desc()
				}
				var got []string
				for _, p := range curxCollect(t, q) {
					require.LessOrEqual(t, len(p), 1)
					got = append(got, p...)
				}
				require.Equal(t, want, got)
			})
		}
	}
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		t.Run("a/"+cmp.Or(index, "base"), func(t *testing.T) {
			var got []string
			for _, p := range curxCollect(t, a.Query(index, "T3").Limit(1)) {
				require.LessOrEqual(t, len(p), 1)
				got = append(got, p...)
			}
			require.Equal(t, curxIDs(curxOrder(index, items, false)), got)
		})
	}
}

// TestCursorEmptyPartition: an empty partition (or one holding only
// tombstones) gives no items, an empty cursor and no error, at every limit.
func TestCursorEmptyPartition(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 3})
	for _, it := range curxItems("T-dead", 5) {
		bt := curxTicketTbl(it)
		for _, ix := range []string{"by_status", "by_seq", "by_created"} {
			require.True(t, putEntry(t, env.b, ix, bt, true))
		}
	}
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		for _, limit := range []int{0, 1, 5} {
			t.Run(fmt.Sprintf("%s/limit=%d", cmp.Or(index, "base"), limit), func(t *testing.T) {
				for _, p := range []*Page[curxTicket]{
					curxPage(t, env.a.Query(index, "T-none").Limit(limit)),
					curxPage(t, env.a.Query(index, "T-none").Limit(limit).Desc()),
				} {
					require.Empty(t, p.Items)
					require.Empty(t, p.Cursor)
				}
				teams := []string{"T-none"}
				if index != "" {
					teams = append(teams, "T-dead")
				}
				for _, team := range teams {
					for _, p := range []*Page[curxTicketTbl]{
						curxPage(t, env.b.Query(index, team).Limit(limit)),
						curxPage(t, env.b.Query(index, team).Limit(limit).Desc()),
					} {
						require.Empty(t, p.Items, team)
						require.Empty(t, p.Cursor, team)
					}
				}
				for _, team := range teams {
					ok, err := env.b.Query(index, team).Exists(context.Background())
					require.NoError(t, err)
					require.False(t, ok, team)
				}
			})
		}
	}
}

// TestCursorPageAfterLast: the page after the last one. A cursor taken from a
// full last page (DynamoDB still answers with a LastEvaluatedKey when Limit
// is reached exactly at the end) returns zero items and an empty cursor, and
// so does a cursor naming the last item.
func TestCursorPageAfterLast(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 12})
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/desc=%v", cmp.Or(index, "base"), desc), func(t *testing.T) {
				d := curxDef(t, env.a, index)
				ordered := curxOrder(index, env.items["T1"], desc)
				read := func(c string) (*Page[curxTicket], *Page[curxTicketTbl]) {
					qa, qb := env.a.Query(index, "T1").Limit(4).After(c), env.b.Query(index, "T1").Limit(4).After(c)
					if desc {
						qa, qb = qa.Desc(), qb.Desc()
					}
					return curxPage(t, qa), curxPage(t, qb)
				}
				// 12 items in pages of 4: the third page is full and the last.
				cursor := ""
				for i := range 3 {
					pa, pb := read(cursor)
					require.Equal(t, curxIDs(ordered[4*i:4*i+4]), curxIDs(pa.Items))
					require.Equal(t, curxIDs(pa.Items), curxIDs(pb.Items))
					require.Equal(t, pa.Cursor, pb.Cursor)
					if i < 2 {
						require.NotEmpty(t, pa.Cursor)
					}
					cursor = pa.Cursor
				}
				require.Empty(t, cursor, "the last page, full as it is, has no cursor: nothing live follows")
				lastItem := encodeCursor(d, cursorPos{at: curxPos(t, env.a, d, ordered[len(ordered)-1])}, desc, nil)
				for range 2 {
					pa, pb := read(lastItem)
					require.Empty(t, pa.Items)
					require.Empty(t, pa.Cursor)
					require.Empty(t, pb.Items)
					require.Empty(t, pb.Cursor)
				}
			})
		}
	}
}

// TestCursorReuseGivesSamePage: a cursor is a position, not a session: using
// it again gives the same page, and a next cursor that leads to the same
// rest (the token may differ: whether a call reads the item after its page
// depends on what the Table has learnt of the partition).
func TestCursorReuseGivesSamePage(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 15})
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		t.Run(cmp.Or(index, "base"), func(t *testing.T) {
			qa := env.a.Query(index, "T1").Limit(4)
			qb := env.b.Query(index, "T1").Limit(4)
			p1 := curxPage(t, qa)
			p2 := curxPage(t, qa.After(p1.Cursor))
			rest := curxRest(t, qa, p2.Cursor)
			for range 3 {
				again := curxPage(t, qa.After(p1.Cursor))
				require.Equal(t, p2.Items, again.Items)
				require.Equal(t, rest, curxRest(t, qa, again.Cursor))
				onTable := curxPage(t, qb.After(p1.Cursor))
				require.Equal(t, curxIDs(p2.Items), curxIDs(onTable.Items))
				require.Equal(t, rest, curxRest(t, qb, onTable.Cursor))
			}
			require.NotEqual(t, p1.Cursor, p2.Cursor)
			require.Equal(t, curxIDs(curxOrder(index, env.items["T1"], false))[4:8], curxIDs(p2.Items))
		})
	}
}

// TestCursorSigned: with Options.CursorKeys, cursors carry an HMAC: signed
// cursors page through the partition (on a GSI and on the index table
// sharing the key), and unsigned, wrongly signed or otherwise signed cursors
// are rejected before any request.
func TestCursorSigned(t *testing.T) {
	t.Parallel()
	key := []byte("curx-signing-key-0123456789abcdef")
	withKey := func(o *Options) { o.CursorKeys = [][]byte{key} }
	env := curxSetup(t, map[string]int{"T1": 11}, withKey)
	want := curxIDs(curxOrder("by_status", env.items["T1"], false))
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		require.Less(t, i, 50)
		var p *Page[curxTicket]
		if i%2 == 0 {
			p = curxPage(t, env.a.Query("by_status", "T1").Limit(3).After(cursor))
		} else {
			pb := curxPage(t, env.b.Query("by_status", "T1").Limit(3).After(cursor))
			p = &Page[curxTicket]{Items: make([]curxTicket, len(pb.Items)), Cursor: pb.Cursor}
			for j, it := range pb.Items {
				p.Items[j] = curxTicket(it)
			}
		}
		got = append(got, curxIDs(p.Items)...)
		if p.Cursor == "" {
			break
		}
		raw, err := cursorEncoding.DecodeString(p.Cursor)
		require.NoError(t, err)
		d := curxDef(t, env.a, "by_status")
		c, err := decodeCursor(d, p.Cursor, false, &env.a.opts)
		require.NoError(t, err)
		require.Equal(t, curxPos(t, env.a, d, p.Items[len(p.Items)-1]), c.at, "the cursor names the page's last item")
		unsigned := encodeCursor(d, c, false, nil)
		require.Equal(t, unsigned, curxToken(raw[:len(raw)-macSize]), "a signed cursor is the unsigned one plus the MAC")
		cursor = p.Cursor
	}
	require.Equal(t, want, got)

	d := curxDef(t, env.a, "by_status")
	pos := curxPos(t, env.a, d, env.items["T1"][4])
	signed := encodeCursor(d, cursorPos{at: pos}, false, key)
	raw, err := cursorEncoding.DecodeString(signed)
	require.NoError(t, err)
	signedTb := curxNoCall[curxTicket](t, withKey)
	plainTb := curxNoCall[curxTicket](t)
	require.Equal(t, pos, curxAccepted(t, signedTb.Query("by_status", "T1").After(signed)))
	require.Equal(t, pos, curxAccepted(t, curxNoCall[curxTicketTbl](t, withKey).Query("by_status", "T1").After(signed)))

	reject := func(name string, tb *Table[curxTicket], tok string) {
		t.Run(name, func(t *testing.T) {
			tb := &Table[curxTicket]{client: calls{curxNoCallClient{t: t}}, s: tb.s, opts: tb.opts}
			curxRejected(t, tb.Query("by_status", "T1").After(tok))
		})
	}
	reject("unsigned", signedTb, encodeCursor(d, cursorPos{at: pos}, false, nil))
	reject("other-key", signedTb, encodeCursor(d, cursorPos{at: pos}, false, []byte("another key")))
	reject("empty-key-sig", signedTb, encodeCursor(d, cursorPos{at: pos}, false, []byte{}))
	reject("signed-on-unsigned-table", plainTb, signed)
	reject("too-short", signedTb, curxToken(raw[:macSize+1]))
	reject("mac-only", signedTb, curxToken(raw[len(raw)-macSize:]))
	for i := range raw {
		for _, mask := range []byte{0x01, 0x80} {
			bad := slices.Clone(raw)
			bad[i] ^= mask
			reject(fmt.Sprintf("flip-%d-%02x", i, mask), signedTb, curxToken(bad))
		}
	}
	// A correctly signed but otherwise invalid body is still rejected.
	body := curxRawOf(d, pos, false)
	body.version = 2
	reject("signed-bad-version", signedTb, curxToken(curxMAC(body.bytes(), key)))
	other := slices.Clone(pos)
	other[0] = "T2"
	reject("signed-other-partition", signedTb, encodeCursor(d, cursorPos{at: other}, false, key))
}

// TestCursorKeyRotation: cursors are signed with the first of
// Options.CursorKeys and accepted when signed with any: a cursor signed
// before a rotation continues the read after it, and is refused once its key
// is removed, while the cursors minted after the rotation go on working.
func TestCursorKeyRotation(t *testing.T) {
	t.Parallel()
	keyA, keyB := []byte("curx-rotation-key-A"), []byte("curx-rotation-key-B")
	env := curxSetup(t, map[string]int{"T1": 10}, func(o *Options) { o.CursorKeys = [][]byte{keyA} })
	withKeys := func(keys ...[]byte) *Table[curxTicket] {
		tb, err := New[curxTicket](env.a.client, curxSameOpts(env.a), func(o *Options) { o.CursorKeys = keys })
		require.NoError(t, err)
		return tb
	}
	want := curxIDs(curxOrder("by_status", env.items["T1"], false))
	d := curxDef(t, env.a, "by_status")
	signedBy := func(cursor string, key []byte) bool {
		_, err := decodeCursor(d, cursor, false, &settings{Options: Options{CursorKeys: [][]byte{key}, MaxCursorBytes: 4096}})
		return err == nil
	}

	before := curxPage(t, env.a.Query("by_status", "T1").Limit(3))
	require.NotEmpty(t, before.Cursor)
	require.True(t, signedBy(before.Cursor, keyA))

	rotated := withKeys(keyB, keyA)
	got := curxIDs(before.Items)
	after := curxPage(t, rotated.Query("by_status", "T1").Limit(3).After(before.Cursor))
	got = append(got, curxIDs(after.Items)...)
	require.NotEmpty(t, after.Cursor)
	require.True(t, signedBy(after.Cursor, keyB), "a rotated table signs with its first key")
	require.False(t, signedBy(after.Cursor, keyA))
	cursor := after.Cursor
	for i := 0; cursor != ""; i++ {
		require.Less(t, i, 10)
		p := curxPage(t, rotated.Query("by_status", "T1").Limit(3).After(cursor))
		got = append(got, curxIDs(p.Items)...)
		cursor = p.Cursor
	}
	require.Equal(t, want, got, "a read begun before the rotation ends after it, every item once")

	removed := withKeys(keyB)
	noCall := func(tb *Table[curxTicket]) *Table[curxTicket] {
		return &Table[curxTicket]{client: calls{curxNoCallClient{t: t}}, s: tb.s, opts: tb.opts, memo: &memo{}}
	}
	curxRejected(t, noCall(removed).Query("by_status", "T1").Limit(3).After(before.Cursor))
	again := curxPage(t, removed.Query("by_status", "T1").Limit(3).After(after.Cursor))
	require.Equal(t, want[6:9], curxIDs(again.Items), "the cursors signed with the new key still work")

	_, err := New[curxTicket](nil, func(o *Options) { o.CursorKeys = [][]byte{keyB, {}} })
	require.ErrorIs(t, err, ErrDeclaration, "an empty key")
}

// curxMAC appends the HMAC-SHA256 of raw under key, as a signed cursor
// carries it.
func curxMAC(raw, key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(raw)
	return m.Sum(slices.Clone(raw))
}

// ---- strict decoding ---------------------------------------------------------------

// TestCursorStrictDecoding: every check of the decoder, each on a cursor that
// is valid but for that one violation, on a Table that sends nothing.
func TestCursorStrictDecoding(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	d := curxDef(t, tb, "by_status")
	item := curxItems("T1", 5)[1] // status open
	require.Equal(t, "open", item.Status)
	pos := curxPos(t, tb, d, item)
	good := curxRawOf(d, pos, false)
	q := tb.Query("by_status", "T1")
	require.Equal(t, pos, curxAccepted(t, q.After(curxToken(good.bytes()))))
	require.Equal(t, pos, curxAccepted(t, q.Where(Eq("open")).After(curxToken(good.bytes()))))
	require.Equal(t, pos, curxAccepted(t, q.Desc().After(encodeCursor(d, cursorPos{at: pos}, true, nil))))

	mod := func(f func(r *curxRaw)) string {
		r := good
		r.fields = slices.Clone(good.fields)
		f(&r)
		return curxToken(r.bytes())
	}
	goodTok := curxToken(good.bytes())
	cases := []struct {
		name   string
		q      Query[curxTicket]
		token  string
		reason string // a fragment of the Reason
	}{
		{"version-0", q, mod(func(r *curxRaw) { r.version = 0 }), "version"},
		{"version-2", q, mod(func(r *curxRaw) { r.version = 2 }), "version"},
		{"through-without-next", q, mod(func(r *curxRaw) { r.flags = flagThrough }), "flags"},
		{"tied-without-through", q, mod(func(r *curxRaw) { r.flags = flagTied }), "flags"},
		{"unknown-flag", q, mod(func(r *curxRaw) { r.flags = 0x10 }), "flags"},
		{"desc-cursor-asc-query", q, mod(func(r *curxRaw) { r.flags = flagDesc }), "descending"},
		{"asc-cursor-desc-query", q.Desc(), goodTok, "ascending"},
		{"other-index", q, mod(func(r *curxRaw) { r.index = "by_seq" }), "by_seq"},
		{"base-index", q, mod(func(r *curxRaw) { r.index = "" }), "base table"},
		{"count-low", q, mod(func(r *curxRaw) { r.count = 3; r.fields = r.fields[:3] }), "fields"},
		{"count-high", q, mod(func(r *curxRaw) { r.count = 5; r.fields = append(r.fields, curxField{"title", "x"}) }), "fields"},
		{"count-lies", q, mod(func(r *curxRaw) { r.count = 5 }), "fields"},
		{"field-renamed", q, mod(func(r *curxRaw) { r.fields[1].attr = "Status" }), "want \"status\""},
		{"fields-swapped", q, mod(func(r *curxRaw) { r.fields[1], r.fields[2] = r.fields[2], r.fields[1] }), "field 1"},
		{"trailing", q, mod(func(r *curxRaw) { r.trailing = []byte{0} }), "trailing"},
		{"one-byte", q, curxToken([]byte{cursorVersion}), "truncated"},
		{"no-name", q, curxToken([]byte{cursorVersion, 0}), "index name"},
		{"no-count", q, curxToken(append([]byte{cursorVersion, 0}, append(binary.AppendUvarint(nil, uint64(len(d.name))), d.name...)...)), "field count"},
		{"varint-overflow", q, curxToken(append([]byte{cursorVersion, 0}, slices.Repeat([]byte{0xFF}, 11)...)), "index name"},
		{"name-length-huge", q, curxToken(append([]byte{cursorVersion, 0}, binary.AppendUvarint(nil, math.MaxUint64)...)), "index name"},
		{"padded", q, goodTok + "==", "Base64"},
		{"std-alphabet-plus", q, "+" + goodTok[1:], "Base64"},
		{"std-alphabet-slash", q, goodTok[:5] + "/" + goodTok[6:], "Base64"},
		{"not-base64", q, "!!!!", "Base64"},
		{"space", q, " " + goodTok, "Base64"},
		{"newline", q, goodTok[:4] + "\n" + goodTok[4:], "Base64"},
		{"carriage-return", q, goodTok[:8] + "\r\n" + goodTok[8:], "Base64"},
		{"non-minimal-varint", q, curxToken(append([]byte{cursorVersion, 0, 0x89, 0x00}, good.bytes()[3:]...)), "varint"},
		{"bad-utf8", q, mod(func(r *curxRaw) { r.fields[1].text = "op\xffen" }), "UTF-8"},
		{"bad-time", q, mod(func(r *curxRaw) { r.fields[2].text = "2026-12-01" }), "created"},
		{"time-not-utc", q, mod(func(r *curxRaw) { r.fields[2].text = "2026-12-01T00:00:00.000000000+01:00" }), "created"},
		{"other-partition", q, mod(func(r *curxRaw) { r.fields[0].text = "T2" }), "partition"},
		{"partition-prefix", q, mod(func(r *curxRaw) { r.fields[0].text = "T" }), "partition"},
		{"empty-native-key", q, mod(func(r *curxRaw) { r.fields[3].text = "" }), "start key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := &Table[curxTicket]{client: calls{curxNoCallClient{t: t}}, s: tb.s, opts: tb.opts}
			c.q.t = tb
			reason := curxRejected(t, c.q.After(c.token))
			require.Contains(t, reason, c.reason)
		})
	}
	// Names read from a cursor reach the error text quoted and shortened:
	// no log injection, no echo of a long payload.
	for _, hostile := range []func(r *curxRaw){
		func(r *curxRaw) { r.index = "evil\nINFO forged log line " + strings.Repeat("x", 300) },
		func(r *curxRaw) { r.fields[2].attr = "evil\nINFO forged log line " + strings.Repeat("x", 300) },
	} {
		reason := curxRejected(t, q.After(mod(hostile)))
		require.NotContains(t, reason, "\n")
		require.Contains(t, reason, `evil\nINFO`)
		require.Contains(t, reason, `..."`)
		require.Less(t, len(reason), 160)
	}
	// The conditions the position does satisfy.
	for _, c := range []SortCondition{Eq("open"), Le("open"), Ge("open"), Gt("closed"), Lt("pending"),
		Between(K("open"), K("pending")), BeginsWith("op"), Eq("open", item.Created), BeginsWith("")} {
		curxAccepted(t, q.Where(c).After(goodTok), c.String())
	}
}

// TestCursorNativeSortCondition: a position on a native Number sort key is
// checked against the condition as a number.
func TestCursorNativeSortCondition(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	d := curxDef(t, tb, "by_seq")
	at := func(seq int64) string {
		return encodeCursor(d, cursorPos{at: curxPos(t, tb, d, curxTicket{Team: "T1", ID: "x", Seq: seq})}, false, nil)
	}
	q := tb.Query("by_seq", "T1")
	curxAccepted(t, q.Where(Gt(int64(9))).After(at(10)))
	curxAccepted(t, q.Where(Between(int64(-5), int64(100))).After(at(-5)))
	curxAccepted(t, q.Where(Lt(int64(100))).After(at(99)))
	// A position outside the condition's range, compared as a number: one
	// before the range starts at it, one past it leaves nothing to read.
	for _, c := range []struct {
		cond SortCondition
		seq  int64
		past bool
	}{
		{Gt(int64(10)), 10, false}, {Gt(int64(10)), 9, false}, {Lt(int64(100)), 100, true}, {Lt(int64(100)), 1000, true},
		{Between(int64(-5), int64(100)), -6, false}, {Between(int64(-5), int64(100)), 101, true}, {Eq(int64(7)), 70, true},
		{Eq(int64(7)), -70, false}, {Ge(int64(0)), -1, false}, {Le(int64(-1)), 0, true},
	} {
		p, err := q.Where(c.cond).After(at(c.seq)).plan()
		require.NoError(t, err, "%s after %d", c.cond, c.seq)
		require.Nil(t, p.start.at, "%s after %d", c.cond, c.seq)
		require.Equal(t, c.past, p.done, "%s after %d", c.cond, c.seq)
		if c.past {
			// No request: the client here fails the test on any.
			page, err := q.Where(c.cond).After(at(c.seq)).Page(context.Background())
			require.NoError(t, err)
			require.Empty(t, page.Items)
			require.Empty(t, page.Cursor)
		}
	}
}

// TestCursorOtherPartition: a real cursor from one partition is rejected in
// another, on every index type (dynoxide would accept its start key).
func TestCursorOtherPartition(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 6, "T2": 6})
	na, nb := curxNoCall[curxTicket](t), curxNoCall[curxTicketTbl](t)
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		t.Run(cmp.Or(index, "base"), func(t *testing.T) {
			pa := curxPage(t, env.a.Query(index, "T1").Limit(2))
			pb := curxPage(t, env.b.Query(index, "T1").Limit(2))
			for _, c := range []string{pa.Cursor, pb.Cursor} {
				require.NotEmpty(t, c)
				curxAccepted(t, na.Query(index, "T1").After(c))
				curxAccepted(t, nb.Query(index, "T1").After(c))
				for _, team := range []string{"T2", "T", "T10", "t1"} {
					r := curxRejected(t, na.Query(index, team).After(c), team)
					require.Contains(t, r, "partition")
					curxRejected(t, nb.Query(index, team).After(c), team)
				}
			}
		})
	}
}

// TestCursorOtherIndex: a cursor is bound to its logical index: not another
// index of the model, not the base table, not a same-named index of another
// model with other fields, not another sort order.
func TestCursorOtherIndex(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 6})
	na, nb, no := curxNoCall[curxTicket](t), curxNoCall[curxTicketTbl](t), curxNoCall[curxOther](t)
	indexes := []string{"", "by_status", "by_seq", "by_created"}
	for _, from := range indexes {
		c := curxPage(t, env.a.Query(from, "T1").Limit(2)).Cursor
		require.NotEmpty(t, c)
		for _, to := range indexes {
			if to == from {
				curxAccepted(t, na.Query(to, "T1").After(c))
				curxAccepted(t, nb.Query(to, "T1").After(c))
				curxRejected(t, na.Query(to, "T1").Desc().After(c), "order")
				continue
			}
			curxRejected(t, na.Query(to, "T1").After(c), from, to)
			curxRejected(t, nb.Query(to, "T1").After(c), from, to)
		}
		curxRejected(t, no.Query("by_status", "T1").After(c), from)
		if from != "" { // curxOther's base key is also (team, id): the same logical position
			curxRejected(t, no.Query("", "T1").After(c), from)
		}
	}
}

// TestCursorTampered flips bytes of a real cursor in turn (in its decoded
// form and in its Base64 text): every variant is either rejected with
// ErrInvalidCursor before any request, or decodes to a position that makes a
// valid query, whose page is exactly the items after that position. Never
// another error, never a panic.
func TestCursorTampered(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 12, "T2": 3})
	counting := &curxCountingClient{Client: env.a.client}
	tb, err := New[curxTicket](counting, curxSameOpts(env.a))
	require.NoError(t, err)
	for _, index := range []string{"by_status", "by_seq"} {
		t.Run(index, func(t *testing.T) {
			d := curxDef(t, tb, index)
			q := tb.Query(index, "T1").Limit(3)
			page := curxPage(t, q)
			require.NotEmpty(t, page.Cursor)
			raw, err := cursorEncoding.DecodeString(page.Cursor)
			require.NoError(t, err)

			var variants []string
			for i := range raw {
				for _, mask := range []byte{0x01, 0x02, 0x10, 0x20, 0x40, 0x80, 0xFF} {
					v := slices.Clone(raw)
					v[i] ^= mask
					variants = append(variants, curxToken(v))
				}
				v := slices.Clone(raw)
				v[i] = 0
				variants = append(variants, curxToken(v))
			}
			for i := range len(page.Cursor) {
				for _, c := range "AZaz09-_=+/.\n" {
					if rune(page.Cursor[i]) != c {
						variants = append(variants, page.Cursor[:i]+string(c)+page.Cursor[i+1:])
					}
				}
			}
			ordered := curxOrder(index, env.items["T1"], false)
			decoded := 0
			for _, v := range variants {
				before := counting.queries.Load()
				p, err := q.After(v).Page(context.Background())
				if err != nil {
					curxRequireInvalid(t, err, "variant %q", v)
					require.Equal(t, before, counting.queries.Load(), "a rejected cursor must not send a request")
					continue
				}
				decoded++
				// The page holds the first 3 items strictly after the position.
				c, err := decodeCursor(d, v, false, &tb.opts)
				require.NoError(t, err)
				pos := c.at
				got := curxIDs(p.Items)
				if index == "by_seq" {
					// Items whose native sort value equals the position's follow
					// it or not by the server's tie order of base keys: either
					// is right. (Seq is unique, so there is at most one.)
					var seq int64
					require.NoError(t, DecodeKey(pos[1], &seq))
					if len(p.Items) > 0 && p.Items[0].Seq == seq && p.Items[0].ID != pos[2] {
						got = got[1:]
					}
				}
				want := []string{}
				// With a next position the page starts there, on an index
				// whose sort key can express a value just before it; else
				// after the position.
				// Where the sort key may repeat (by_seq, a native GSI sort
				// key), it starts at the first item of next's value.
				from, incl := pos, func(curxTicket) bool { return false }
				if c.next != nil {
					if _, ok := d.startKeyBefore(c.next, c.at, false, nil); ok {
						from, incl = c.next, func(it curxTicket) bool { return slices.Equal(curxPos(t, tb, d, it), c.next) }
						if !d.uniqueSort {
							var seq int64
							require.NoError(t, DecodeKey(c.next[1], &seq))
							incl = func(it curxTicket) bool { return it.Seq == seq }
						}
					}
				}
				for _, it := range ordered {
					if curxAfter(t, index, it, from) || incl(it) {
						want = append(want, it.ID)
					}
				}
				require.Equal(t, want[:min(len(got), len(want))], got, "variant %q at %q", v, pos)
				require.GreaterOrEqual(t, len(got), min(2, len(want)), "variant %q at %q", v, pos)
				if len(p.Items) == len(got) {
					require.Len(t, got, min(3, len(want)), "variant %q at %q", v, pos)
				}
			}
			require.Positive(t, decoded, "some value mutations still decode")
			t.Logf("%d variants, %d decoded to a valid query", len(variants), decoded)
		})
	}
}

// curxAfter reports whether item lies strictly after pos in index order
// (ascending), comparing Go values.
func curxAfter(t testing.TB, index string, it curxTicket, pos position) bool {
	t.Helper()
	switch index {
	case "by_status":
		created, err := time.Parse(time.RFC3339Nano, pos[2])
		require.NoError(t, err)
		return cmp.Or(strings.Compare(it.Status, pos[1]), it.Created.Compare(created), strings.Compare(it.ID, pos[3])) > 0
	case "by_seq":
		var seq int64
		require.NoError(t, DecodeKey(pos[1], &seq))
		return it.Seq > seq
	}
	t.Fatalf("curxAfter: no index %s", index)
	return false
}

// TestCursorTruncated: every proper prefix of a cursor, in Base64 text and in
// decoded bytes, is rejected before any request; signed ones too.
func TestCursorTruncated(t *testing.T) {
	t.Parallel()
	key := []byte("k")
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%v", signed), func(t *testing.T) {
			var opts []func(*Options)
			var k []byte
			if signed {
				k = key
				opts = append(opts, func(o *Options) { o.CursorKeys = [][]byte{key} })
			}
			tb := curxNoCall[curxTicket](t, opts...)
			for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
				d := curxDef(t, tb, index)
				it := curxItems("T1", 3)[2]
				tok := encodeCursor(d, cursorPos{at: curxPos(t, tb, d, it)}, false, k)
				q := tb.Query(index, "T1")
				curxAccepted(t, q.After(tok))
				for n := 1; n < len(tok); n++ {
					curxRejected(t, q.After(tok[:n]), index, n)
				}
				raw, err := cursorEncoding.DecodeString(tok)
				require.NoError(t, err)
				for n := 1; n < len(raw); n++ {
					curxRejected(t, q.After(curxToken(raw[:n])), index, n)
				}
			}
		})
	}
}

// TestCursorOversized: a cursor longer than Options.MaxCursorBytes is
// rejected before it is decoded; the cap is configurable and inclusive.
func TestCursorOversized(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	d := curxDef(t, tb, "by_status")
	// An 800-byte id makes a cursor over 1 KB, which the default cap
	// (4096) accepts.
	long := curxTicket{Team: "T1", ID: strings.Repeat("i", 800), Status: "open", Created: curxEpoch}
	tok := encodeCursor(d, cursorPos{at: curxPos(t, tb, d, long)}, false, nil)
	require.Greater(t, len(tok), 1024)
	curxAccepted(t, tb.Query("by_status", "T1").After(tok))
	r := curxRejected(t, tb.Query("by_status", "T1").After(strings.Repeat("A", 4097)))
	require.Contains(t, r, "4097 bytes is over the 4096-byte cap")
	// Garbage within the cap fails later, for another reason.
	r = curxRejected(t, tb.Query("by_status", "T1").After(strings.Repeat("A", 4096)))
	require.NotContains(t, r, "cap")

	exact := curxNoCall[curxTicket](t, func(o *Options) { o.MaxCursorBytes = len(tok) })
	curxAccepted(t, exact.Query("by_status", "T1").After(tok))
	under := curxNoCall[curxTicket](t, func(o *Options) { o.MaxCursorBytes = len(tok) - 1 })
	curxRejected(t, under.Query("by_status", "T1").After(tok))

	short := encodeCursor(d, cursorPos{at: curxPos(t, tb, d, curxItems("T1", 2)[1])}, false, nil)
	tiny := curxNoCall[curxTicket](t, func(o *Options) { o.MaxCursorBytes = 8 })
	curxRejected(t, tiny.Query("by_status", "T1").After(short))
}

// TestCursorUnknownField: only the index's own attributes, in slot order,
// each once.
func TestCursorUnknownField(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	d := curxDef(t, tb, "by_status")
	pos := curxPos(t, tb, d, curxItems("T1", 3)[1])
	q := tb.Query("by_status", "T1")
	for name, f := range map[string]func(r *curxRaw){
		"model-attr":       func(r *curxRaw) { r.fields[1].attr = "title" },
		"derived-attr":     func(r *curxRaw) { r.fields[1].attr = "gsk" },
		"other-index-attr": func(r *curxRaw) { r.fields[1].attr = "seq" },
		"unknown":          func(r *curxRaw) { r.fields[3].attr = "__proto__" },
		"empty-name":       func(r *curxRaw) { r.fields[0].attr = "" },
		"case":             func(r *curxRaw) { r.fields[3].attr = "ID" },
		"extra":            func(r *curxRaw) { r.count = -1; r.fields = append(r.fields, curxField{"title", "x"}) },
		"duplicate":        func(r *curxRaw) { r.fields[2] = r.fields[1] },
		"missing":          func(r *curxRaw) { r.count = -1; r.fields = slices.Delete(r.fields, 2, 3) },
		"dynamodb-json":    func(r *curxRaw) { r.fields[0].attr = `{"S":"team"}` },
	} {
		r := curxRawOf(d, pos, false)
		f(&r)
		curxRejected(t, q.After(curxToken(r.bytes())), name)
	}
}

// TestCursorWrongType: every value must be the canonical key text of its
// field's declared type.
func TestCursorWrongType(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	seqDef := curxDef(t, tb, "by_seq") // team, seq (int64), id
	seqPos := curxPos(t, tb, seqDef, curxTicket{Team: "T1", ID: "x", Seq: 42})
	require.Equal(t, "b42", seqPos[1])
	for _, text := range []string{"42", "b042", "c42", "b4x", "", "b", "a", "Z", "u12345678901234567890",
		"s9223372036854775808", "H0776627963145224190", "Y99", "b42\x00", " b42", "1e3", "0x2a", "B42"} {
		r := curxRawOf(seqDef, seqPos, false)
		r.fields[1].text = text
		curxRejected(t, tb.Query("by_seq", "T1").After(curxToken(r.bytes())), text)
	}
	for _, n := range []int64{0, -1, math.MaxInt64, math.MinInt64} {
		pos := curxPos(t, tb, seqDef, curxTicket{Team: "T1", ID: "x", Seq: n})
		curxAccepted(t, tb.Query("by_seq", "T1").After(encodeCursor(seqDef, cursorPos{at: pos}, false, nil)), n)
	}
	statusDef := curxDef(t, tb, "by_status")
	statusPos := curxPos(t, tb, statusDef, curxItems("T1", 2)[1])
	for _, text := range []string{"", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00.000000000", "2026-12-01 00:00:00.000000000Z",
		"2026-13-01T00:00:00.000000000Z", "2026-12-01T00:00:00.000000000z", "m1733000000000"} {
		r := curxRawOf(statusDef, statusPos, false)
		r.fields[2].text = text
		curxRejected(t, tb.Query("by_status", "T1").After(curxToken(r.bytes())), text)
	}
}

// TestCursorCustomKeyText: a KeyTexter component's text must parse back
// (ParseKeyText) to a value with exactly that text.
func TestCursorCustomKeyText(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxCustom](t)
	d := curxDef(t, tb, "")
	pos := curxPos(t, tb, d, curxCustom{Bin: "B1", SKU: curxSKU{"CAT", 42}})
	require.Equal(t, position{"B1", "CAT-0042"}, pos)
	curxAccepted(t, tb.Query("", "B1").After(encodeCursor(d, cursorPos{at: pos}, false, nil)))
	for _, text := range []string{"garbage", "CAT-42", "CAT-00042", "-0042", "CAT-0042\xff", "CAT-99999"} {
		curxRejected(t, tb.Query("", "B1").After(encodeCursor(d, cursorPos{at: position{"B1", text}}, false, nil)), text)
	}

	t2 := curxNoCall[curxCustom2](t)
	d2 := curxDef(t, t2, "") // bin, label, boom
	for _, label := range []string{"anything", "", "#$%"} {
		curxAccepted(t, t2.Query("", "B1").After(encodeCursor(d2, cursorPos{at: position{"B1", label, "x"}}, false, nil)), label)
	}
	curxRejected(t, t2.Query("", "B1").After(encodeCursor(d2, cursorPos{at: position{"B1", "bad\xff", "x"}}, false, nil)))
	r := curxRejected(t, t2.Query("", "B1").After(encodeCursor(d2, cursorPos{at: position{"B1", "l", "boom"}}, false, nil)))
	require.Contains(t, r, "boom")
}

// TestCursorVarintSize: the encoder sizes its buffer exactly.
func TestCursorVarintSize(t *testing.T) {
	t.Parallel()
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		require.Len(t, binary.AppendUvarint(nil, v), uvarintSize(v), v)
	}
}

// TestCursorCanonical: an accepted token is exactly the token the encoder
// mints for its position, so one position has one cursor.
func TestCursorCanonical(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	for _, index := range []string{"", "by_status", "by_seq", "by_created"} {
		d := curxDef(t, tb, index)
		for _, it := range curxItems("T1", 8) {
			for _, desc := range []bool{false, true} {
				pos := curxPos(t, tb, d, it)
				tok := encodeCursor(d, cursorPos{at: pos}, desc, nil)
				got, err := decodeCursor(d, tok, desc, &tb.opts)
				require.NoError(t, err)
				require.Equal(t, cursorPos{at: pos}, got)
				require.NotContains(t, tok, "=")
				require.Regexp(t, `^[A-Za-z0-9_-]+$`, tok)
				// With a next position too.
				c := cursorPos{at: pos, next: curxPos(t, tb, d, curxItems("T2", 1)[0])}
				got, err = decodeCursor(d, encodeCursor(d, c, desc, nil), desc, &tb.opts)
				require.NoError(t, err)
				require.Equal(t, c, got)
			}
		}
	}
}

// TestCursorStartKeyLimits: a decoded position must make a start key that
// DynamoDB accepts; one it refuses is the client's bad cursor (HTTP 400), not a
// server error after the request (dynalite answers ValidationException for
// each of these; real DynamoDB too).
func TestCursorStartKeyLimits(t *testing.T) {
	t.Parallel()
	tb := curxNoCall[curxTicket](t)
	d := curxDef(t, tb, "by_status")
	// 600 control bytes are valid UTF-8, and escape to 1800 bytes: over the
	// 1024-byte limit of a sort key, in a cursor under the 1024-byte cap.
	pos := curxPos(t, tb, d, curxTicket{Team: "T1", ID: "x", Status: strings.Repeat("\x01", 600), Created: curxEpoch})
	tok := encodeCursor(d, cursorPos{at: pos}, false, nil)
	require.LessOrEqual(t, len(tok), 1024)
	t.Run("sort-key-over-1024-bytes", func(t *testing.T) {
		tb := curxNoCall[curxTicket](t)
		curxRejected(t, tb.Query("by_status", "T1").After(tok))
	})
	st := curxNoCall[curxScore](t)
	t.Run("empty-binary-key", func(t *testing.T) {
		st := curxNoCall[curxScore](t)
		bd := curxDef(t, st, "by_blob") // id, blob, score
		fs, err := appendFloat(nil, 1.5)
		require.NoError(t, err)
		curxRejected(t, st.Query("by_blob", "i1").After(encodeCursor(bd, cursorPos{at: position{"i1", "", string(fs)}}, false, nil)))
	})
	for _, f := range []float64{math.Inf(1), math.Inf(-1), 1e300, -1e200, 1e-300, math.SmallestNonzeroFloat64} {
		t.Run(fmt.Sprintf("number-%g", f), func(t *testing.T) {
			st := curxNoCall[curxScore](t)
			fs, err := appendFloat(nil, f)
			require.NoError(t, err)
			curxRejected(t, st.Query("", "i1").After(encodeCursor(curxDef(t, st, ""), cursorPos{at: position{"i1", string(fs)}}, false, nil)), f)
		})
	}
	fs, err := appendFloat(nil, 1e125)
	require.NoError(t, err)
	curxAccepted(t, st.Query("", "i1").After(encodeCursor(curxDef(t, st, ""), cursorPos{at: position{"i1", string(fs)}}, false, nil)))
}

// ---- the no-progress guard ---------------------------------------------------------------

// curxStuckClient answers every Query with no items and a LastEvaluatedKey
// equal to the ExclusiveStartKey it was sent (the first, without one, with
// first). A canned response: it tests the pager's loop guard, not DynamoDB.
type curxStuckClient struct {
	curxNoCallClient
	first map[string]types.AttributeValue
	items []map[string]types.AttributeValue
	calls int
}

func (c *curxStuckClient) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls++
	if c.calls > 10 {
		c.t.Errorf("the pager sent %d requests for a position that never advances", c.calls)
		return nil, errors.New("curxStuckClient: looping")
	}
	lek := in.ExclusiveStartKey
	if lek == nil {
		lek = c.first
	}
	n := int32(len(c.items))
	return &dynamodb.QueryOutput{Items: c.items, Count: n, ScannedCount: n, LastEvaluatedKey: lek}, nil
}

// TestCursorNoAdvance: a server answering LastEvaluatedKey equal to the
// ExclusiveStartKey (the production bug of a next cursor equal to the request
// cursor) ends the read with ErrNoProgress instead of looping.
func TestCursorNoAdvance(t *testing.T) {
	t.Parallel()
	for _, index := range []string{"", "by_status", "by_seq"} {
		t.Run(cmp.Or(index, "base"), func(t *testing.T) {
			stuck := &curxStuckClient{curxNoCallClient: curxNoCallClient{t: t}}
			tb, err := New[curxTicket](stuck)
			require.NoError(t, err)
			d := curxDef(t, tb, index)
			items := curxItems("T1", 3)
			stuck.first, err = d.startKey(curxPos(t, tb, d, items[0]))
			require.NoError(t, err)
			cursor := encodeCursor(d, cursorPos{at: curxPos(t, tb, d, items[1])}, false, nil)
			q := tb.Query(index, "T1").Limit(5)
			check := func(name string, wantCalls int, run func() error) {
				t.Helper()
				stuck.calls = 0
				err := run()
				require.ErrorIs(t, err, ErrNoProgress, name)
				require.Equal(t, "DDBX-400", Code(err), name)
				require.NotErrorIs(t, err, ErrInvalidCursor, name)
				require.Equal(t, wantCalls, stuck.calls, name)
			}
			page := func(q Query[curxTicket]) func() error {
				return func() error {
					p, err := q.Page(context.Background())
					require.Nil(t, p)
					return err
				}
			}
			all := func() error {
				var last error
				n := 0
				for _, err := range q.All(context.Background()) {
					n++
					last = err
				}
				require.LessOrEqual(t, n, 2)
				return last
			}
			for _, withItems := range []bool{false, true} {
				stuck.items = nil
				if withItems {
					av, err := tb.Marshal(items[2])
					require.NoError(t, err)
					stuck.items = []map[string]types.AttributeValue{av}
				}
				// From a cursor: the first answer repeats the start key.
				check(fmt.Sprintf("page/cursor/items=%v", withItems), 1, page(q.After(cursor)))
				// From the start: the second answer repeats the first.
				check(fmt.Sprintf("page/start/items=%v", withItems), 2, page(q))
				check(fmt.Sprintf("all/items=%v", withItems), 2, all)
			}
			stuck.items = nil
			check("exists", 2, func() error {
				ok, err := q.Exists(context.Background())
				require.False(t, ok)
				return err
			})
		})
	}
}

// ---- fuzzing and benchmarks -------------------------------------------------------------

// FuzzDecodeCursor: arbitrary strings fed to decodeCursor, and through a
// Query's planFor, never panic; every rejection matches ErrInvalidCursor; an
// accepted token is the canonical encoding of its position (signed with one
// of the keys, on the table whose keys rotated), and a position that planFor
// accepts makes a start key.
func FuzzDecodeCursor(f *testing.F) {
	key, oldKey := []byte("fuzz-key"), []byte("fuzz-key-before-rotation")
	plain, err := New[curxTicket](nil)
	require.NoError(f, err)
	signed, err := New[curxTicket](nil, func(o *Options) { o.CursorKeys = [][]byte{key, oldKey} })
	require.NoError(f, err)
	indexes := []string{"", "by_status", "by_seq", "by_created"}
	conds := map[string][]SortCondition{
		"":           {{}, Ge("t003"), BeginsWith("t00")},
		"by_status":  {{}, Eq("open"), Between(K("closed"), K("open", curxEpoch.Add(2*time.Hour)))},
		"by_seq":     {{}, Gt(int64(3)), Le(int64(-2))},
		"by_created": {{}, Lt(curxEpoch.Add(3 * time.Hour))},
	}
	for i, it := range curxItems("T1", 8) {
		for mode := range 16 {
			tb := plain
			var k []byte
			if mode&8 != 0 {
				tb, k = signed, key
				if i%2 == 1 {
					k = oldKey
				}
			}
			d := curxDef(f, tb, indexes[mode%4])
			tok := encodeCursor(d, cursorPos{at: curxPos(f, tb, d, it)}, mode&4 != 0, k)
			f.Add(tok, uint8(mode))
			if i == 0 {
				raw, _ := cursorEncoding.DecodeString(tok)
				f.Add(tok[:len(tok)/2], uint8(mode))
				f.Add(tok+"A", uint8(mode))
				for j := range raw {
					v := slices.Clone(raw)
					v[j] ^= 0x01
					f.Add(curxToken(v), uint8(mode))
				}
			}
		}
	}
	f.Add("", uint8(0))
	f.Add("AQA", uint8(0))
	f.Add(strings.Repeat("_", 2000), uint8(1))
	f.Fuzz(func(t *testing.T, token string, mode uint8) {
		tb := plain
		if mode&8 != 0 {
			tb = signed
		}
		index := indexes[mode%4]
		desc := mode&4 != 0
		d, err := tb.index(index)
		require.NoError(t, err)
		pos, err := decodeCursor(d, token, desc, &tb.opts)
		if err != nil {
			curxRequireInvalid(t, err)
		} else {
			require.Len(t, pos.at, len(d.slots))
			if pos.next != nil {
				require.Len(t, pos.next, len(d.slots))
			}
			keys := tb.opts.CursorKeys
			if keys == nil {
				keys = [][]byte{nil}
			}
			require.True(t, slices.ContainsFunc(keys, func(k []byte) bool { return token == encodeCursor(d, pos, desc, k) }),
				"an accepted token is canonical")
		}
		cs := conds[index]
		q := tb.Query(index, "T1").Where(cs[int(mode>>4)%len(cs)]).After(token)
		if desc {
			q = q.Desc()
		}
		p, err := q.plan()
		switch {
		case token == "":
			require.NoError(t, err)
		case err != nil:
			curxRequireInvalid(t, err)
		case p.start.at == nil:
			// The position lies before the condition's range (the query
			// starts at the range) or past it, or its next position does
			// (nothing to read).
			require.NotNil(t, p.kc)
			ord, err := d.sk.ordered(d.textOf(pos.at))
			require.NoError(t, err)
			place := p.kc.place(ord, desc)
			if place == 0 {
				require.True(t, p.done)
				require.NotNil(t, pos.next)
			} else {
				require.Equal(t, place > 0, p.done)
			}
		default:
			require.False(t, p.done)
			require.Equal(t, pos, p.start)
			_, err := d.startKey(p.start.at)
			require.NoError(t, err)
		}
	})
}

// BenchmarkCursorRoundTrip: encodeCursor + decodeCursor for a realistic index
// of four slots (string partition, string status, time, string id).
func BenchmarkCursorRoundTrip(b *testing.B) {
	for _, signed := range []bool{false, true} {
		b.Run(fmt.Sprintf("signed=%v", signed), func(b *testing.B) {
			var opts []func(*Options)
			var key []byte
			if signed {
				key = []byte("0123456789abcdef0123456789abcdef")
				opts = append(opts, func(o *Options) { o.CursorKeys = [][]byte{key} })
			}
			tb, err := New[curxTicket](nil, opts...)
			require.NoError(b, err)
			d := curxDef(b, tb, "by_status")
			pos := curxPos(b, tb, d, curxTicket{Team: "TEAM-7", ID: "TICKET-8842", Status: "open",
				Created: time.Date(2026, 12, 2, 13, 54, 41, 0, time.UTC)})
			require.Len(b, pos, 4)
			b.ReportAllocs()
			cpu0, cpuOK := curxProcessCPU()
			for b.Loop() {
				tok := encodeCursor(d, cursorPos{at: pos}, true, key)
				got, err := decodeCursor(d, tok, true, &tb.opts)
				if err != nil || len(got.at) != 4 {
					b.Fatal(err)
				}
			}
			if cpu1, ok := curxProcessCPU(); ok && cpuOK && b.N > 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// curxProcessCPU returns the CPU time (user + system) of this process from
// /proc/self/stat, where there is one: unlike ns/op, other processes
// competing for the CPU hardly change it. Its resolution is a clock tick
// (USER_HZ, 100 on Linux), so it needs a benchtime of a second or more.
func curxProcessCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const userHZ = 100
	return time.Duration(utime+stime) * (time.Second / userHZ), true
}

// TestCursorOtherCondition: a cursor minted under one sort condition goes
// on under any other, narrower or wider, on both forms and in both orders:
// the page holds exactly the items the new condition matches after the
// cursor's position (none when the position lies past the new range, where
// no request is sent), never an error.
func TestCursorOtherCondition(t *testing.T) {
	t.Parallel()
	env := curxSetup(t, map[string]int{"T1": 18})
	items := env.items["T1"]
	var open []curxTicket
	for _, it := range curxOrder("by_status", items, false) {
		if it.Status == "open" {
			open = append(open, it)
		}
	}
	require.GreaterOrEqual(t, len(open), 4)
	type cond struct {
		name  string
		sc    SortCondition
		match func(curxTicket) bool
	}
	conds := []cond{
		{"none", SortCondition{}, func(curxTicket) bool { return true }},
		{"begins_with o", BeginsWith("o"), func(it curxTicket) bool { return strings.HasPrefix(it.Status, "o") }},
		{"< open", Lt("open"), func(it curxTicket) bool { return it.Status < "open" }},
		{"> open", Gt("open"), func(it curxTicket) bool { return it.Status > "open" }},
		{"between closed and open", Between("closed", "open"), func(it curxTicket) bool { return it.Status >= "closed" && it.Status <= "open" }},
	}
	for _, it := range open {
		created := it.Created
		conds = append(conds, cond{"open at " + it.ID, Eq("open", created), func(x curxTicket) bool { return x.Status == "open" && x.Created.Equal(created) }})
	}
	for _, desc := range []bool{false, true} {
		mint := env.a.Query("by_status", "T1").Where(Eq("open")).Limit(2)
		if desc {
			mint = mint.Desc()
		}
		first := curxPage(t, mint)
		require.NotEmpty(t, first.Cursor)
		c, err := decodeCursor(curxDef(t, env.a, "by_status"), first.Cursor, desc, &env.a.opts)
		require.NoError(t, err)
		for _, cd := range conds {
			var want []string
			for _, it := range curxOrder("by_status", items, desc) {
				after := curxAfter(t, "by_status", it, c.at)
				if desc {
					after = !after && !slices.Equal(curxPos(t, env.a, curxDef(t, env.a, "by_status"), it), c.at)
				}
				if after && cd.match(it) {
					want = append(want, it.ID)
				}
			}
			for form, got := range map[string][]string{
				"gsi":   curxPageIDs(t, env.a.Query("by_status", "T1").Where(cd.sc).After(first.Cursor), desc),
				"table": curxPageIDs(t, env.b.Query("by_status", "T1").Where(cd.sc).After(first.Cursor), desc),
			} {
				require.Equal(t, append([]string{}, want...), got, "desc=%v %s on the %s", desc, cd.name, form)
			}
		}
	}
}

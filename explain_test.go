package ddbindex

// Tests of Explain (explain.go). They need no server: every table here has a
// client that fails the test if a request is sent.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// xtNoSort has a GSI without sort components.
type xtNoSort struct {
	_ TableSpec `ddbindex:"xtns"`
	P string    `dynamodbav:"p" ddbindex:"pk"`
	S string    `dynamodbav:"s" ddbindex:"sk"`
	G string    `dynamodbav:"g" ddbindex:"by_g.pk"`
	_ IndexSpec `ddbindex:"by_g,type=gsi"`
}

// xtNoSortT is xtNoSort with the index as an index table: its sort key is
// only the base key suffix.
type xtNoSortT struct {
	_ TableSpec `ddbindex:"xtns"`
	P string    `dynamodbav:"p" ddbindex:"pk"`
	S string    `dynamodbav:"s" ddbindex:"sk"`
	G string    `dynamodbav:"g" ddbindex:"by_g.pk"`
	_ IndexSpec `ddbindex:"by_g,type=table"`
}

// xtOnlyPK has a GSI on its base partition key alone: as an index table it
// has no sort key either.
type xtOnlyPK struct {
	_ TableSpec `ddbindex:"xtop"`
	P string    `dynamodbav:"p" ddbindex:"pk;by_p.pk"`
	_ IndexSpec `ddbindex:"by_p,type=gsi"`
}

// xtWidth has a fixed-width sort component, narrower than its field.
type xtWidth struct {
	_ TableSpec `ddbindex:"xtw"`
	P string    `dynamodbav:"p" ddbindex:"pk"`
	N int64     `dynamodbav:"n" ddbindex:"sk;by_n.sk,width=3"`
	G string    `dynamodbav:"g" ddbindex:"by_n.pk"`
	_ IndexSpec `ddbindex:"by_n,type=gsi,sk=NSK"`
}

// xtForged mints a cursor for an arbitrary position of index (canonical
// texts in slot order), as a tampering client could.
func xtForged[T any](t *testing.T, tb *Table[T], index string, texts ...string) string {
	t.Helper()
	d, err := tb.index(index)
	require.NoError(t, err)
	require.Len(t, texts, len(d.slots))
	return encodeCursor(d, cursorPos{at: position(texts)}, false, tb.opts.signingKey())
}

// xtTable returns a Table for T that must not send anything.
func xtTable[T any](t *testing.T, optFns ...func(*Options)) *Table[T] {
	t.Helper()
	tb, err := New[T](qtNoCall{t: t}, optFns...)
	require.NoError(t, err)
	return tb
}

func xtExplain[T any](t *testing.T, q Query[T]) *Explanation {
	t.Helper()
	ex, err := q.Explain()
	require.NoError(t, err)
	require.NotNil(t, ex)
	return ex
}

// xtCursor mints the cursor of the position of item in index, as a page
// ending at item would.
func xtCursor[T any](t *testing.T, tb *Table[T], index string, item T, desc bool) string {
	t.Helper()
	d, err := tb.index(index)
	require.NoError(t, err)
	av, err := tb.Marshal(item)
	require.NoError(t, err)
	if d.kind == IndexTable {
		_, texts, err := tb.marshal(&item)
		require.NoError(t, err)
		keys, ok, err := d.keyValues(texts)
		require.NoError(t, err)
		require.True(t, ok)
		maps.Copy(av, keys)
	}
	pos, err := d.positionOf(av)
	require.NoError(t, err)
	return encodeCursor(d, cursorPos{at: pos}, desc, tb.opts.signingKey())
}

func xtEnc(t *testing.T, components ...any) string {
	t.Helper()
	s, err := EncodeKey(components...)
	require.NoError(t, err)
	return s
}

const xtLive = `(attribute_not_exists(_deleted)) OR (_deleted <> true)`

func TestExplainGSIAndAlternate(t *testing.T) {
	t.Parallel()
	g := xtTable[qtSwG](t)
	q := g.Query("by_state", "o1").Where(Eq("open")).Desc().Limit(20)
	ex := xtExplain(t, q)

	r := ex.Request
	assert.Equal(t, GSI, r.Kind)
	assert.Equal(t, "qtsw", aws.ToString(r.Input.TableName))
	assert.Equal(t, "by_state", aws.ToString(r.Input.IndexName))
	assert.EqualValues(t, 20, aws.ToInt32(r.Input.Limit), "a first call, which knows no entry's size, reads no item past the page")
	assert.False(t, aws.ToBool(r.Input.ScanIndexForward))
	assert.Nil(t, r.Input.FilterExpression, "a GSI of a model without softdelete has no tombstone filter")
	assert.Nil(t, r.Input.ExclusiveStartKey)
	assert.Nil(t, r.Input.ConsistentRead)
	assert.Equal(t, types.ReturnConsumedCapacityTotal, r.Input.ReturnConsumedCapacity)
	assert.Equal(t, strings.Join([]string{
		"Query table qtsw index by_state (gsi)",
		`  KeyCondition: (org = "o1") AND (begins_with(GSI1SK, "open#"))`,
		"  Limit: 20, ScanIndexForward: false",
	}, "\n"), r.String())

	require.NotNil(t, ex.Alternate)
	a := *ex.Alternate
	assert.Equal(t, IndexTable, a.Kind)
	assert.Equal(t, "qtsw-by_state", aws.ToString(a.Input.TableName))
	assert.Nil(t, a.Input.IndexName)
	assert.Equal(t, strings.Join([]string{
		"Query table qtsw-by_state (table)",
		`  KeyCondition: (org = "o1") AND (begins_with(GSI1SK, "open#"))`,
		"  Filter:       " + xtLive,
		"  Limit: 20, ScanIndexForward: false",
	}, "\n"), a.String())

	// The alternate is exactly what the model declared with type=table
	// sends, and back: the one-token switch.
	et := xtExplain(t, xtTable[qtSwT](t).Query("by_state", "o1").Where(Eq("open")).Desc().Limit(20))
	assert.Equal(t, et.Request, a)
	require.NotNil(t, et.Alternate)
	assert.Equal(t, r, *et.Alternate)

	// Table names go through the TableName option on both sides.
	pre := xtTable[qtSwG](t, func(o *Options) { o.TableName = func(s string) string { return "dev-" + s } })
	ex = xtExplain(t, pre.Query("by_state", "o1"))
	assert.Equal(t, "dev-qtsw", aws.ToString(ex.Request.Input.TableName))
	assert.Equal(t, "dev-qtsw-by_state", aws.ToString(ex.Alternate.Input.TableName))
}

func TestExplainIndexTableAndAlternate(t *testing.T) {
	t.Parallel()
	tb := xtTable[qtEntry](t)
	ex := xtExplain(t, tb.Query("feed", "A").Where(Lt(5)).Limit(3))
	assert.Equal(t, IndexTable, ex.Request.Kind)
	assert.Equal(t, strings.Join([]string{
		"Query table qtent-feed (table)",
		`  KeyCondition: (team = "A") AND (_sk < "` + xtEnc(t, 5) + `#")`,
		"  Filter:       " + xtLive,
		"  Limit: 3, ScanIndexForward: true",
	}, "\n"), ex.Request.String())
	require.NotNil(t, ex.Alternate)
	// As a GSI, the single native-able sort component is the model
	// attribute itself, as `feed,type=gsi` would declare it.
	assert.Equal(t, GSI, ex.Alternate.Kind)
	assert.Equal(t, strings.Join([]string{
		"Query table qtent index feed (gsi)",
		`  KeyCondition: (team = "A") AND (seq < 5)`,
		"  Limit: 3, ScanIndexForward: true",
	}, "\n"), ex.Alternate.String())

	// IncludeDeleted drops the tombstone filter; a caller filter stays, and
	// is combined with it otherwise.
	ex = xtExplain(t, tb.Query("feed", "A").IncludeDeleted())
	assert.Nil(t, ex.Request.Input.FilterExpression)
	red := expression.Name("color").Equal(expression.Value("red"))
	ex = xtExplain(t, tb.Query("feed", "A").Filter(red))
	assert.Contains(t, ex.Request.String(), "  Filter:       ("+xtLive+`) AND (color = "red")`)
	assert.Contains(t, ex.Alternate.String(), `  Filter:       color = "red"`)
	ex = xtExplain(t, tb.Query("feed", "A").Filter(red).IncludeDeleted())
	assert.Contains(t, ex.Request.String(), `  Filter:       color = "red"`)

	// A GSI on the base partition key alone has no sort key as an index
	// table either.
	op := xtExplain(t, xtTable[xtOnlyPK](t).Query("by_p", "p1"))
	require.NotNil(t, op.Alternate)
	assert.Equal(t, strings.Join([]string{
		"Query table xtop-by_p (table)",
		`  KeyCondition: p = "p1"`,
		"  Filter:       " + xtLive,
		"  Limit: 100, ScanIndexForward: true",
	}, "\n"), op.Alternate.String())

	// An index table whose sort key is only the base key suffix is, as a
	// GSI, an index without a sort key; and back.
	nsG, nsT := xtTable[xtNoSort](t), xtTable[xtNoSortT](t)
	it := xtNoSort{P: "p1", S: "s1", G: "x"}
	for _, cur := range []string{"", xtCursor(t, nsG, "by_g", it, false)} {
		g := xtExplain(t, nsG.Query("by_g", "x").After(cur))
		tt := xtExplain(t, nsT.Query("by_g", "x").After(cur))
		assert.Equal(t, tt.Request, *g.Alternate)
		assert.Equal(t, g.Request, *tt.Alternate)
		assert.Equal(t, `  KeyCondition: g = "x"`, strings.Split(tt.Alternate.String(), "\n")[1])
		if cur != "" {
			assert.Contains(t, tt.Alternate.String(), `ExclusiveStartKey: g="x", p="p1", s="s1"`)
			assert.Contains(t, tt.Request.String(), `ExclusiveStartKey: _sk="p1#s1", g="x"`)
		}
	}
}

// TestExplainSwitchSymmetry checks, for native and composite sort keys, every
// operator and a cursor, that a GSI's Alternate is the index table's Request
// and the other way round.
func TestExplainSwitchSymmetry(t *testing.T) {
	t.Parallel()
	ng, nt := xtTable[qtSwNG](t), xtTable[qtSwNT](t)
	cg, ct := xtTable[qtSwG](t), xtTable[qtSwT](t)
	item := qtSwNG{Tenant: "t1", ID: "id1", Org: "o1", Key: "k#1", Num: 7}
	citem := qtSwG{Tenant: "t1", ID: "id1", Org: "o1", Status: "open", Name: "x", Rank: 7}
	check := func(name string, g, tt *Explanation) {
		t.Helper()
		require.NotNil(t, g.Alternate, name)
		require.NotNil(t, tt.Alternate, name)
		assert.Equal(t, tt.Request, *g.Alternate, "%s: GSI alternate vs index table", name)
		assert.Equal(t, g.Request, *tt.Alternate, "%s: index table alternate vs GSI", name)
	}
	for _, c := range []SortCondition{{}, Eq("k#1"), Lt("k#"), Le("k"), Gt("k$"), Ge("k"), Between("k", "k$"), BeginsWith("k#")} {
		for _, desc := range []bool{false, true} {
			name := fmt.Sprintf("by_key %s desc=%v", c, desc)
			qg, qt := ng.Query("by_key", "o1").Where(c).Limit(4), nt.Query("by_key", "o1").Where(c).Limit(4)
			if desc {
				qg, qt = qg.Desc(), qt.Desc()
			}
			check(name, xtExplain(t, qg), xtExplain(t, qt))
			if c.op == opNone {
				cur := xtCursor(t, ng, "by_key", item, desc)
				check(name+" cursor", xtExplain(t, qg.After(cur)), xtExplain(t, qt.After(cur)))
			}
		}
	}
	for _, c := range []SortCondition{Eq(7), Lt(0), Between(-3, 9)} {
		check("by_num "+c.String(), xtExplain(t, ng.Query("by_num", "o1").Where(c)), xtExplain(t, nt.Query("by_num", "o1").Where(c)))
	}
	cur := xtCursor(t, cg, "by_state", citem, false)
	// The cursor's position satisfies some of the conditions and lies
	// before or past the range of others: both forms start alike.
	for _, c := range []SortCondition{
		{}, Eq("open"), Eq("open", "x"), Lt("open"), Le("open", "x"),
		Gt("open"), Ge("open", "x", 7), Between(K("a"), K("open", "x")),
		BeginsWith("op"), BeginsWith("open", "x"),
	} {
		name := "by_state " + c.String()
		qg, qt := cg.Query("by_state", "o1").Where(c), ct.Query("by_state", "o1").Where(c)
		check(name, xtExplain(t, qg), xtExplain(t, qt))
		check(name+" cursor", xtExplain(t, qg.After(cur)), xtExplain(t, qt.After(cur)))
	}

	// The native GSI compares the whole key; the index table uses the
	// bounds for a key that more components follow.
	ex := xtExplain(t, ng.Query("by_key", "o1").Where(Eq("k#1")))
	assert.Contains(t, ex.Request.String(), `(org = "o1") AND (key = "k#1")`)
	assert.Contains(t, ex.Alternate.String(), `(org = "o1") AND (begins_with(_sk, "k$231#"))`)
	ex = xtExplain(t, ng.Query("by_key", "o1").Where(Le("k")))
	assert.Contains(t, ex.Request.String(), `key <= "k"`)
	assert.Contains(t, ex.Alternate.String(), `_sk < "k$"`)
	ex = xtExplain(t, ng.Query("by_num", "o1").Where(Between(-3, 9)))
	assert.Contains(t, ex.Request.String(), `num BETWEEN -3 AND 9`)
	assert.Contains(t, ex.Alternate.String(), fmt.Sprintf(`_sk BETWEEN "%s#" AND "%s$"`, xtEnc(t, -3), xtEnc(t, 9)))
}

func TestExplainLSI(t *testing.T) {
	t.Parallel()
	tb := xtTable[qtLSI](t)
	ex := xtExplain(t, tb.Query("by_prio", "A").Where(Lt(5)))
	assert.Equal(t, LSI, ex.Request.Kind)
	assert.Equal(t, strings.Join([]string{
		"Query table qtlsi index by_prio (lsi)",
		`  KeyCondition: (team = "A") AND (prio < 5)`,
		"  Limit: 100, ScanIndexForward: true",
	}, "\n"), ex.Request.String())
	require.NotNil(t, ex.Alternate)
	assert.Equal(t, IndexTable, ex.Alternate.Kind)
	assert.Equal(t, strings.Join([]string{
		"Query table qtlsi-by_prio (table)",
		`  KeyCondition: (team = "A") AND (_sk < "` + xtEnc(t, 5) + `#")`,
		"  Filter:       " + xtLive,
		"  Limit: 100, ScanIndexForward: true",
	}, "\n"), ex.Alternate.String())

	t1 := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	ex = xtExplain(t, tb.Query("by_sc", "A").Where(Between(K("open", t1), K("open", t2))).Desc().Limit(2).ConsistentRead())
	assert.Equal(t, strings.Join([]string{
		"Query table qtlsi index by_sc (lsi)",
		fmt.Sprintf(`  KeyCondition: (team = "A") AND (LSI2SK BETWEEN "%s#" AND "%s$")`, xtEnc(t, "open", t1), xtEnc(t, "open", t2)),
		"  Limit: 2, ScanIndexForward: false, ConsistentRead: true",
	}, "\n"), ex.Request.String())
	// An index table serves consistent reads: the alternate keeps it.
	assert.Equal(t, "qtlsi-by_sc", aws.ToString(ex.Alternate.Input.TableName))
	assert.True(t, aws.ToBool(ex.Alternate.Input.ConsistentRead))
	assert.Contains(t, ex.Alternate.String(), "LSI2SK BETWEEN")
	assert.True(t, strings.HasSuffix(ex.Alternate.String(), "ConsistentRead: true"))
}

func TestExplainBaseTable(t *testing.T) {
	t.Parallel()
	ex := xtExplain(t, xtTable[qtSwG](t).Query("", "t1").Where(Between("a", "m")).Limit(5000))
	assert.Equal(t, BaseTable, ex.Request.Kind)
	assert.Nil(t, ex.Alternate, "the base table has no other type")
	assert.Nil(t, ex.Request.Input.IndexName)
	assert.Equal(t, strings.Join([]string{
		"Query table qtsw (base)",
		`  KeyCondition: (tenant = "t1") AND (id BETWEEN "a" AND "m")`,
		"  Limit: 5000, ScanIndexForward: true",
	}, "\n"), ex.Request.String(), "a first request asks for the page and the item after it")

	// softdelete puts the tombstone filter on the base table, its GSI and its LSI.
	soft := xtTable[qtSoft](t)
	for _, q := range []Query[qtSoft]{soft.Query("", "A"), soft.Query("by_grp", "g"), soft.Query("by_seq", "A")} {
		ex = xtExplain(t, q)
		assert.Contains(t, ex.Request.String(), "  Filter:       "+xtLive)
		assert.Nil(t, xtExplain(t, q.IncludeDeleted()).Request.Input.FilterExpression)
	}
	ex = xtExplain(t, soft.Query("", "A").ConsistentRead())
	assert.True(t, aws.ToBool(ex.Request.Input.ConsistentRead))
}

func TestExplainCursor(t *testing.T) {
	t.Parallel()
	g := xtTable[qtSwG](t)
	item := qtSwG{Tenant: "t1", ID: "id#1", Org: "o1", Status: "open", Name: "x#y", Rank: -5}
	av, err := g.Marshal(item)
	require.NoError(t, err)
	sk := av["GSI1SK"].(*types.AttributeValueMemberS).Value
	assert.Equal(t, xtEnc(t, "open", "x#y", -5, "t1", "id#1"), sk)

	cur := xtCursor(t, g, "by_state", item, false)
	ex := xtExplain(t, g.Query("by_state", "o1").Where(Eq("open")).After(cur))
	assert.Equal(t, map[string]types.AttributeValue{
		"org": &types.AttributeValueMemberS{Value: "o1"}, "GSI1SK": &types.AttributeValueMemberS{Value: sk},
		"tenant": &types.AttributeValueMemberS{Value: "t1"}, "id": &types.AttributeValueMemberS{Value: "id#1"},
	}, ex.Request.Input.ExclusiveStartKey)
	assert.Contains(t, ex.Request.String(), fmt.Sprintf("\n  ExclusiveStartKey: GSI1SK=%q, id=\"id#1\", org=\"o1\", tenant=\"t1\"\n", sk))
	// The index table's start key holds its own keys only.
	assert.Equal(t, map[string]types.AttributeValue{
		"org": &types.AttributeValueMemberS{Value: "o1"}, "GSI1SK": &types.AttributeValueMemberS{Value: sk},
	}, ex.Alternate.Input.ExclusiveStartKey)
	assert.Contains(t, ex.Alternate.String(), fmt.Sprintf("\n  ExclusiveStartKey: GSI1SK=%q, org=\"o1\"\n", sk))

	// No cursor, no start key.
	assert.NotContains(t, xtExplain(t, g.Query("by_state", "o1")).Request.String(), "ExclusiveStartKey")

	// A descending cursor in a descending query.
	dcur := xtCursor(t, g, "by_state", item, true)
	ex = xtExplain(t, g.Query("by_state", "o1").Desc().After(dcur))
	assert.NotNil(t, ex.Request.Input.ExclusiveStartKey)

	// Signed cursors.
	key := []byte("secret")
	signed := xtTable[qtSwG](t, func(o *Options) { o.CursorKeys = [][]byte{key} })
	scur := xtCursor(t, signed, "by_state", item, false)
	assert.NotNil(t, xtExplain(t, signed.Query("by_state", "o1").After(scur)).Request.Input.ExclusiveStartKey)
	_, err = signed.Query("by_state", "o1").After(cur).Explain()
	assert.ErrorIs(t, err, ErrInvalidCursor, "an unsigned cursor on a signing table")

	// A base table cursor.
	bcur := xtCursor(t, g, "", item, false)
	ex = xtExplain(t, g.Query("", "t1").After(bcur))
	assert.Contains(t, ex.Request.String(), "ExclusiveStartKey: id=\"id#1\", tenant=\"t1\"")
}

// TestExplainInvalid checks that Explain fails exactly as Page, All and
// Exists do, before any request.
func TestExplainInvalid(t *testing.T) {
	t.Parallel()
	g := xtTable[qtSwG](t)
	e := xtTable[qtEntry](t)
	ns := xtTable[xtNoSort](t)
	item := qtSwG{Tenant: "t1", ID: "id1", Org: "o1", Status: "open", Name: "x", Rank: 1}
	cur := xtCursor(t, g, "by_state", item, false)
	dcur := xtCursor(t, g, "by_state", item, true)
	bcur := xtCursor(t, g, "", item, false)
	ecur := xtCursor(t, e, "feed", qtEntry{Team: "A", ID: "a", Seq: 3}, false)
	type outcome struct {
		ex   *Explanation
		errs [4]error // Explain, Page, All, Exists
	}
	type tc struct {
		name string
		run  func() outcome
		want error
	}
	runAll := func(q interface {
		Explain() (*Explanation, error)
	}, page, all, exists func() error) outcome {
		ex, err := q.Explain()
		return outcome{ex, [4]error{err, page(), all(), exists()}}
	}
	mk := func(name string, want error, q Query[qtSwG]) tc {
		return tc{name, func() outcome {
			return runAll(q,
				func() error { _, err := q.Page(context.Background()); return err },
				func() error { _, err := qtAll(q); return err },
				func() error { _, err := q.Exists(context.Background()); return err })
		}, want}
	}
	mkE := func(name string, want error, q Query[qtEntry]) tc {
		return tc{name, func() outcome {
			return runAll(q,
				func() error { _, err := q.Page(context.Background()); return err },
				func() error { _, err := qtAll(q); return err },
				func() error { _, err := q.Exists(context.Background()); return err })
		}, want}
	}
	nsq := ns.Query("by_g", "x").Where(Eq("a"))
	w := xtTable[xtWidth](t)
	canon := func(v int64) string {
		d, err := w.index("by_n")
		require.NoError(t, err)
		s, err := d.slots[1].canon.text(reflect.ValueOf(v))
		require.NoError(t, err)
		return s
	}
	wq := w.Query("by_n", "g").Where(Ge(5)).After(xtForged(t, w, "by_n", "g", canon(1000), "p"))
	cases := []tc{
		mk("unknown index", ErrInvalidQuery, g.Query("nope", "o1")),
		mk("no partition", ErrInvalidQuery, g.Query("by_state")),
		mk("two partition values", ErrInvalidQuery, g.Query("by_state", "o1", "o2")),
		mk("partition of the wrong type", ErrInvalidQuery, g.Query("by_state", 5)),
		mk("nil partition", ErrInvalidQuery, g.Query("by_state", nil)),
		mk("negative limit", ErrInvalidQuery, g.Query("by_state", "o1").Limit(-1)),
		mk("consistent read on a GSI", ErrInvalidQuery, g.Query("by_state", "o1").ConsistentRead()),
		mk("reversed between", ErrInvalidQuery, g.Query("by_state", "o1").Where(Between("p", "o"))),
		mk("too many values", ErrInvalidQuery, g.Query("by_state", "o1").Where(Eq("open", "x", 1, "more"))),
		mk("value of the wrong type", ErrInvalidQuery, g.Query("by_state", "o1").Where(Eq(5))),
		mk("begins_with on a number", ErrInvalidQuery, g.Query("by_state", "o1").Where(BeginsWith("open", "x", "1"))),
		mk("begins_with without a string", ErrInvalidQuery, g.Query("by_state", "o1").Where(BeginsWith(5))),
		mk("empty Eq", ErrInvalidQuery, g.Query("by_state", "o1").Where(Eq())),
		mk("garbage cursor", ErrInvalidCursor, g.Query("by_state", "o1").After("!!not base64!!")),
		mk("cursor of another partition", ErrInvalidCursor, g.Query("by_state", "o2").After(cur)),
		mk("cursor of the other order", ErrInvalidCursor, g.Query("by_state", "o1").After(dcur)),
		mk("descending cursor ascending", ErrInvalidCursor, g.Query("by_state", "o1").Desc().After(cur)),
		mk("cursor of another index", ErrInvalidCursor, g.Query("by_state", "o1").After(bcur)),
		mk("cursor of another model", ErrInvalidCursor, g.Query("by_state", "o1").After(ecur)),
		mk("unset filter", ErrInvalidQuery, g.Query("by_state", "o1").Filter(expression.ConditionBuilder{})),
		mk("empty projection name", ErrInvalidQuery, g.Query("by_state", "o1").Project("")),
		mk("forged empty native key", ErrInvalidCursor, g.Query("", "t1").After(xtForged(t, g, "", "t1", ""))),
		mkE("begins_with on the int sort key", ErrInvalidQuery, e.Query("feed", "A").Where(BeginsWith("1"))),
		{"forged position that does not encode", func() outcome {
			return runAll(wq,
				func() error { _, err := wq.Page(context.Background()); return err },
				func() error { _, err := qtAll(wq); return err },
				func() error { _, err := wq.Exists(context.Background()); return err })
		}, ErrInvalidCursor},
		{"no sort components", func() outcome {
			return runAll(nsq,
				func() error { _, err := nsq.Page(context.Background()); return err },
				func() error { _, err := qtAll(nsq); return err },
				func() error { _, err := nsq.Exists(context.Background()); return err })
		}, ErrInvalidQuery},
	}
	for _, c := range cases {
		o := c.run()
		assert.Nil(t, o.ex, c.name)
		eExplain := o.errs[0]
		require.ErrorIs(t, eExplain, c.want, c.name)
		for i, err := range o.errs[1:] {
			require.ErrorIs(t, err, c.want, "%s: call %d", c.name, i)
			assert.Equal(t, eExplain.Error(), err.Error(), "%s: call %d fails differently from Explain", c.name, i)
		}
		var qe *Error
		var ce *Error
		if errors.Is(c.want, ErrInvalidQuery) {
			assert.ErrorAs(t, eExplain, &qe, c.name)
		} else {
			assert.ErrorAs(t, eExplain, &ce, c.name)
		}
	}
	// The cursor checks hold without a condition too: Lt(3) fails, no
	// condition accepts it.
	assert.NotNil(t, xtExplain(t, e.Query("feed", "A").After(ecur)).Request.Input.ExclusiveStartKey)
	assert.NotNil(t, xtExplain(t, e.Query("feed", "A").Where(Le(3)).After(ecur)).Request.Input.ExclusiveStartKey)
}

// TestExplainPlaceholders checks that String resolves every placeholder
// once, whatever the names and values contain.
func TestExplainPlaceholders(t *testing.T) {
	t.Parallel()
	g := xtTable[qtSwG](t)

	// More than ten names: #1 must not be read inside #10.
	attrs := make([]string, 12)
	for i := range attrs {
		attrs[i] = fmt.Sprintf("a%d", i)
	}
	ex := xtExplain(t, g.Query("by_state", "o1").Where(Eq("open")).Project(attrs...))
	assert.Contains(t, ex.Request.String(), "\n  Projection:   "+strings.Join(attrs, ", ")+", org, GSI1SK, tenant, id\n")
	assert.Contains(t, ex.Alternate.String(), "\n  Projection:   "+strings.Join(attrs, ", ")+", org, GSI1SK, tenant, id\n")
	// A projection naming a key attribute does not repeat it.
	ex = xtExplain(t, g.Query("by_state", "o1").Project("id", "note"))
	assert.Contains(t, ex.Request.String(), "\n  Projection:   id, note, org, GSI1SK, tenant\n")

	// Values and names that look like placeholders.
	ex = xtExplain(t, g.Query("by_state", "o:1").Where(Eq("open:0")).
		Filter(expression.Name("x:0").Equal(expression.Value("v:1 #0"))))
	assert.Equal(t, strings.Join([]string{
		"Query table qtsw index by_state (gsi)",
		`  KeyCondition: (org = "o:1") AND (begins_with(GSI1SK, "open:0#"))`,
		`  Filter:       x:0 = "v:1 #0"`,
		"  Limit: 100, ScanIndexForward: true",
	}, "\n"), ex.Request.String())

	// Hostile bytes are quoted, not written raw.
	ex = xtExplain(t, g.Query("by_state", "o\x00\n").Where(BeginsWith("é\x01")))
	assert.Contains(t, ex.Request.String(), `(org = "o\x00\n") AND (begins_with(GSI1SK, "é$01"))`)

	// Other attribute value kinds.
	ex = xtExplain(t, g.Query("by_state", "o1").Filter(expression.Name("n").GreaterThan(expression.Value(12)).
		And(expression.Name("b").Equal(expression.Value([]byte{1, 2}))).
		And(expression.Name("f").Equal(expression.Value(false))).
		And(expression.Name("l").Size().GreaterThan(expression.Value(1))).
		And(expression.Name("s").Contains("z"))))
	assert.Contains(t, ex.Request.String(), `n > 12`)
	assert.Contains(t, ex.Request.String(), `b = 0x0102`)
	assert.Contains(t, ex.Request.String(), `f = false`)
	assert.Contains(t, ex.Request.String(), `size(l) > 1`)
	assert.Contains(t, ex.Request.String(), `contains(s, "z")`)
	// An unknown placeholder is left as it is.
	r := ex.Request
	in := *r.Input
	in.KeyConditionExpression = aws.String("#nope = :nope AND #0 = :0")
	r.Input = &in
	assert.Contains(t, r.String(), "#nope = :nope AND ")
}

// TestExplainConsistentRead: a GSI refuses it, the alternate of an index
// table drops it (a GSI cannot serve it), every other type keeps it.
func TestExplainConsistentRead(t *testing.T) {
	t.Parallel()
	e := xtTable[qtEntry](t)
	ex := xtExplain(t, e.Query("feed", "A").ConsistentRead())
	assert.True(t, aws.ToBool(ex.Request.Input.ConsistentRead))
	assert.True(t, strings.HasSuffix(ex.Request.String(), ", ConsistentRead: true"))
	require.NotNil(t, ex.Alternate)
	assert.Equal(t, GSI, ex.Alternate.Kind)
	assert.Nil(t, ex.Alternate.Input.ConsistentRead)
	assert.NotContains(t, ex.Alternate.String(), "ConsistentRead")

	l := xtTable[qtLSI](t)
	ex = xtExplain(t, l.Query("by_prio", "A").ConsistentRead())
	assert.True(t, aws.ToBool(ex.Request.Input.ConsistentRead))
	assert.True(t, aws.ToBool(ex.Alternate.Input.ConsistentRead))

	_, err := xtTable[qtSwG](t).Query("by_state", "o1").ConsistentRead().Explain()
	assert.ErrorIs(t, err, ErrInvalidQuery)
}

// xtSameAsPage requires, page after page, that Explain returns exactly the
// first request Page then sends: with a cold memory, with a warm one, and
// with cursors that carry a next position.
func xtSameAsPage[T any](t *testing.T, tb *Table[T], q func(*Table[T]) Query[T], pages int) {
	t.Helper()
	rec := &qtRecorder{Client: tb.client}
	rt := *tb
	rt.client = calls{rec}
	cursor := ""
	for i := 0; i < pages; i++ {
		qq := q(&rt).After(cursor)
		ex, err := qq.Explain()
		require.NoError(t, err, "page %d, query %s desc=%v cursor %q", i+1, qq.index, qq.desc, cursor)
		rec.reset()
		p, err := qq.Page(context.Background())
		require.NoError(t, err)
		in := rec.recorded()
		require.NotEmpty(t, in)
		require.Equal(t, *ex.Request.Input, in[0], "page %d: Explain shows the request Page sends first", i+1)
		if p.Cursor == "" {
			return
		}
		cursor = p.Cursor
	}
}

// TestExplainIsPagesFirstRequest: per index type (base table, GSI, LSI,
// index table; native and derived sort keys), Explain's request is Page's
// first request, built by the same code.
func TestExplainIsPagesFirstRequest(t *testing.T) {
	t.Parallel()
	soft, _ := newTestTable[qtSoft](t)
	lsi, _ := newTestTable[qtLSI](t)
	ent, _ := newTestTable[qtEntry](t)
	gsi, _ := newTestTable[qtSwG](t)
	dead := map[string]types.AttributeValue{"_deleted": &types.AttributeValueMemberBOOL{Value: true}}
	for i := range 40 {
		var extra map[string]types.AttributeValue
		if i%3 != 0 {
			extra = dead
		}
		qtPutBaseRaw(t, soft, qtSoft{Team: "A", ID: fmt.Sprintf("i%02d", i), Grp: "g", Seq: int64(i)}, extra)
		qtPutBaseRaw(t, lsi, qtLSI{Team: "A", ID: fmt.Sprintf("i%02d", i), Prio: int64(i % 7), Status: "open",
			Created: time.Date(2026, 12, 1, 0, i, 0, 0, time.UTC)}, nil)
		require.True(t, putEntry(t, ent, "feed", qtEntry{Team: "A", ID: fmt.Sprintf("i%02d", i), Seq: int64(i)}, i%3 != 0))
		putBase(t, gsi, qtSwG{Tenant: "t", ID: fmt.Sprintf("i%02d", i), Org: "o", Status: "open", Name: "n", Rank: int64(i)})
	}
	for _, desc := range []bool{false, true} {
		order := func(q Query[qtSoft]) Query[qtSoft] {
			if desc {
				return q.Desc()
			}
			return q
		}
		xtSameAsPage(t, soft, func(tb *Table[qtSoft]) Query[qtSoft] { return order(tb.Query("", "A").Limit(3)) }, 6)
		xtSameAsPage(t, soft, func(tb *Table[qtSoft]) Query[qtSoft] { return order(tb.Query("by_grp", "g").Limit(4)) }, 6)
		xtSameAsPage(t, soft, func(tb *Table[qtSoft]) Query[qtSoft] { return order(tb.Query("by_seq", "A").Limit(2)) }, 6)
		xtSameAsPage(t, lsi, func(tb *Table[qtLSI]) Query[qtLSI] {
			q := tb.Query("by_prio", "A").Limit(5)
			if desc {
				q = q.Desc()
			}
			return q
		}, 6)
		xtSameAsPage(t, lsi, func(tb *Table[qtLSI]) Query[qtLSI] {
			q := tb.Query("by_sc", "A").Where(Eq("open")).Limit(5)
			if desc {
				q = q.Desc()
			}
			return q
		}, 6)
		xtSameAsPage(t, ent, func(tb *Table[qtEntry]) Query[qtEntry] {
			q := tb.Query("feed", "A").Where(Ge(3)).Limit(4)
			if desc {
				q = q.Desc()
			}
			return q
		}, 6)
		xtSameAsPage(t, gsi, func(tb *Table[qtSwG]) Query[qtSwG] {
			q := tb.Query("by_state", "o").Where(Eq("open")).Limit(7)
			if desc {
				q = q.Desc()
			}
			return q
		}, 6)
	}
}

// xtMoved is an index on its way back from an index table to a GSI made
// under a new name: every form has a physical name of its own.
type xtMoved struct {
	_      TableSpec `ddbindex:"xtmv"`
	_      IndexSpec `ddbindex:"by_state,type=table,name=xtmv-state-v2,keep=gsi,gsi=by_state_v3"`
	ID     string    `dynamodbav:"id" ddbindex:"pk"`
	Org    string    `dynamodbav:"org" ddbindex:"by_state.pk"`
	Status string    `dynamodbav:"status" ddbindex:"by_state.sk"`
}

// TestExplanationString: String names the form that serves by the physical
// names its request goes to (after Options.TableName), then the other form
// for an index that keeps two; an index of one form has no other form
// (its Alternate, what the other type would send, is not one), and the
// base table none either.
func TestExplanationString(t *testing.T) {
	t.Parallel()
	dev := func(o *Options) { o.TableName = func(s string) string { return "dev-" + s } }
	mv := xtTable[xtMoved](t, dev)
	ex := xtExplain(t, mv.Query("by_state", "o1").Where(Eq("open")).Limit(2))
	assert.Equal(t, strings.Join([]string{
		"the first request, to the index table dev-xtmv-state-v2:",
		"Query table dev-xtmv-state-v2 (table)",
		`  KeyCondition: (org = "o1") AND (begins_with(_sk, "open#"))`,
		"  Filter:       " + xtLive,
		"  Limit: 2, ScanIndexForward: true",
		"the same query on the other form the index keeps, the gsi by_state_v3 of table dev-xtmv:",
		"Query table dev-xtmv index by_state_v3 (gsi)",
		`  KeyCondition: (org = "o1") AND (status = "open")`,
		"  Limit: 2, ScanIndexForward: true",
	}, "\n"), ex.String())
	assert.Equal(t, ex.String(), fmt.Sprint(ex), "fmt prints it the same")

	// The form a read is routed to serves it, under its own names.
	via := xtExplain(t, mv.Query("by_state", "o1").Via(GSI))
	lines := strings.Split(via.String(), "\n")
	assert.Equal(t, "the first request, to the gsi by_state_v3 of table dev-xtmv:", lines[0])
	assert.Contains(t, lines, "the same query on the other form the index keeps, the index table dev-xtmv-state-v2:")

	// One form: no other form, though Alternate shows the other type.
	one := xtExplain(t, xtTable[qtSwG](t, dev).Query("by_state", "o1").Limit(20))
	require.NotNil(t, one.Alternate, "what the index would send declared type=table")
	assert.Equal(t, strings.Join([]string{
		"the first request, to the gsi by_state of table dev-qtsw:",
		"Query table dev-qtsw index by_state (gsi)",
		`  KeyCondition: org = "o1"`,
		"  Limit: 20, ScanIndexForward: true",
		"the index keeps this one form, which serves every read: it has no other",
	}, "\n"), one.String())
	assert.NotContains(t, one.String(), "dev-qtsw-by_state", "the table it is not declared as is not named")

	// The base table has no other form to speak of.
	base := xtExplain(t, xtTable[qtSwG](t).Query("", "t1"))
	assert.Equal(t, strings.Join([]string{
		"the first request, to the base table qtsw:",
		"Query table qtsw (base)",
		`  KeyCondition: tenant = "t1"`,
		"  Limit: 100, ScanIndexForward: true",
	}, "\n"), base.String())

	// A nil or zero Explanation renders without panicking.
	assert.Equal(t, "no explanation", (*Explanation)(nil).String())
	assert.Contains(t, (&Explanation{}).String(), "the first request, to the base table :")
}

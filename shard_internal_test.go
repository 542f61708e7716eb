package ddbindex

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ddbindex/ddbindex/internal/expr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardDeclarationRules: shards= takes 1 to 1024; an LSI cannot be
// sharded (declared or kept); a sharded index's keys are always derived
// (a native partition or sort key becomes _pk/_sk), and its sort key ends
// with the base key, even with no sort component; an index whose key
// holds the whole base key has nothing to merge and is refused.
func TestShardDeclarationRules(t *testing.T) {
	type native struct {
		_    TableSpec `ddbindex:"things"`
		_    IndexSpec `ddbindex:"feed,type=gsi,shards=4"`
		ID   string    `ddbindex:"pk"`
		Feed string    `ddbindex:"feed.pk"`
		At   int64     `ddbindex:"feed.sk"`
	}
	s, err := parseSchema(reflect.TypeFor[native]())
	require.NoError(t, err)
	d := s.byName["feed"]
	require.Equal(t, "_pk", d.pk.attr)
	require.False(t, d.pk.native)
	require.Equal(t, 4, d.pk.shards)
	require.Equal(t, "_sk", d.sk.attr)
	require.False(t, d.sk.native)
	require.Len(t, d.sk.suffix, 1, "the sort key ends with the base key")
	require.True(t, d.uniqueSort)

	type noSort struct {
		_    TableSpec `ddbindex:"things"`
		_    IndexSpec `ddbindex:"feed,type=gsi,shards=8"`
		ID   string    `ddbindex:"pk"`
		Feed string    `ddbindex:"feed.pk"`
	}
	s, err = parseSchema(reflect.TypeFor[noSort]())
	require.NoError(t, err)
	d = s.byName["feed"]
	require.NotNil(t, d.sk, "a sharded GSI without sort components is ordered by the base key")
	require.Empty(t, d.sk.parts)
	require.Len(t, d.sk.suffix, 1)

	type kept struct {
		_    TableSpec `ddbindex:"things"`
		_    IndexSpec `ddbindex:"feed,type=gsi,keep=table,shards=2"`
		ID   string    `ddbindex:"pk"`
		Feed string    `ddbindex:"feed.pk"`
		At   int64     `ddbindex:"feed.sk"`
	}
	s, err = parseSchema(reflect.TypeFor[kept]())
	require.NoError(t, err)
	for _, f := range s.byName["feed"].decl.forms {
		require.Equal(t, 2, f.pk.shards, "every form of a sharded index is sharded (%s)", f.kind)
	}

	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"zero shards", reflect.TypeOf(struct {
			_    TableSpec `ddbindex:"things"`
			_    IndexSpec `ddbindex:"feed,type=gsi,shards=0"`
			ID   string    `ddbindex:"pk"`
			Feed string    `ddbindex:"feed.pk"`
		}{}), "shards=0 is not a number of shards from 1 to 1024"},
		{"too many shards", reflect.TypeOf(struct {
			_    TableSpec `ddbindex:"things"`
			_    IndexSpec `ddbindex:"feed,type=gsi,shards=1025"`
			ID   string    `ddbindex:"pk"`
			Feed string    `ddbindex:"feed.pk"`
		}{}), "shards=1025"},
		{"not a number", reflect.TypeOf(struct {
			_    TableSpec `ddbindex:"things"`
			_    IndexSpec `ddbindex:"feed,type=gsi,shards=many"`
			ID   string    `ddbindex:"pk"`
			Feed string    `ddbindex:"feed.pk"`
		}{}), "shards=many"},
		{"an LSI", reflect.TypeOf(struct {
			_  TableSpec `ddbindex:"things"`
			_  IndexSpec `ddbindex:"by_at,type=lsi,shards=4"`
			ID string    `ddbindex:"pk"`
			K  string    `ddbindex:"sk"`
			At int64     `ddbindex:"by_at.sk"`
		}{}), "an LSI shares the base table's partitions and cannot be sharded"},
		{"a kept LSI", reflect.TypeOf(struct {
			_  TableSpec `ddbindex:"things"`
			_  IndexSpec `ddbindex:"by_at,type=table,keep=lsi,shards=4"`
			ID string    `ddbindex:"pk"`
			K  string    `ddbindex:"sk"`
			At int64     `ddbindex:"by_at.sk"`
		}{}), "cannot be sharded"},
		{"one item per partition", reflect.TypeOf(struct {
			_  TableSpec `ddbindex:"things"`
			_  IndexSpec `ddbindex:"by_id,type=gsi,shards=4"`
			ID string    `ddbindex:"pk;by_id.pk"`
		}{}), "a sharded index needs a sort key to merge its shards in order"},
	} {
		_, err := parseSchema(tc.typ)
		require.ErrorIs(t, err, ErrDeclaration, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
}

// shardRef is shardOf written again from its documented definition: FNV-1a
// 64 over each base key text preceded by its uvarint length, mixed by
// MurmurHash3's fmix64 (its published constants), mod n.
func shardRef(texts []string, n int) int {
	h := fnv.New64a()
	for _, t := range texts {
		h.Write(binary.AppendUvarint(nil, uint64(len(t))))
		h.Write([]byte(t))
	}
	x := h.Sum64()
	x = (x ^ x>>33) * 0xff51afd7ed558ccd
	x = (x ^ x>>33) * 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return int(x % uint64(n))
}

type spreadItem struct {
	_      TableSpec `ddbindex:"spread"`
	_      IndexSpec `ddbindex:"all,type=table,shards=16"`
	Tenant string    `dynamodbav:"tenant" ddbindex:"pk"`
	Seq    int64     `dynamodbav:"seq"    ddbindex:"sk"`
	Scope  string    `dynamodbav:"scope"  ddbindex:"all.pk"`
	At     int64     `dynamodbav:"at"     ddbindex:"all.sk"`
}

// TestShardWriteSpread: over 100,000 base keys (a tenant and a sequence
// number, as a feed's writers make them), the 16 shards' loads are even
// (max/mean ≤ 1.1), and each item's stored partition value is the one the
// documented hash gives.
func TestShardWriteSpread(t *testing.T) {
	tb, err := New[spreadItem](nil)
	require.NoError(t, err)
	d, err := tb.index("all")
	require.NoError(t, err)
	const n, shards = 100_000, 16
	for _, shape := range []struct {
		name string
		key  func(i int) spreadItem
	}{
		{"37 tenants, sequence numbers", func(i int) spreadItem { return spreadItem{Tenant: fmt.Sprintf("tenant-%d", i%37), Seq: int64(i / 37)} }},
		{"one tenant, sequence numbers", func(i int) spreadItem { return spreadItem{Tenant: "t", Seq: int64(i)} }},
		{"random tenants", func(i int) spreadItem {
			return spreadItem{Tenant: fmt.Sprintf("%016x", fmix64(uint64(i)+0x9e3779b97f4a7c15)), Seq: 0}
		}},
	} {
		load := make([]int, shards)
		for i := range n {
			it := shape.key(i)
			it.Scope, it.At = "global", int64(i)
			texts, err := tb.s.itemTexts(reflect.ValueOf(it))
			require.NoError(t, err)
			vals, ok, err := d.keyValues(texts)
			require.NoError(t, err)
			require.True(t, ok)
			pk := vals[d.pk.attr].(*types.AttributeValueMemberS).Value
			head, shard, found := strings.Cut(pk, "#")
			require.True(t, found, pk)
			require.Equal(t, "global", head)
			k, err := strconv.Atoi(shard)
			require.NoError(t, err)
			require.Equal(t, shardRef([]string{texts.text(tb.s.base.pk.parts[0].f), texts.text(tb.s.base.sk.parts[0].f)}, shards), k, "item %d", i)
			load[k]++
		}
		mx := 0
		for _, l := range load {
			mx = max(mx, l)
		}
		ratio := float64(mx) / (float64(n) / shards)
		t.Logf("%s: 16 shards over %d keys: loads %v, max/mean %.4f", shape.name, n, load, ratio)
		require.LessOrEqual(t, ratio, 1.1, shape.name)
	}
}

// TestShardEntryInWrongShard: a key whose stored shard is not its base
// key's (a declaration whose shards= changed without a new index), out of
// range, not in canonical decimal, or missing, does not decode as a
// position: a LastEvaluatedKey or cursor position of that kind is refused.
func TestShardEntryInWrongShard(t *testing.T) {
	tb, err := New[spreadItem](nil)
	require.NoError(t, err)
	d, err := tb.index("all")
	require.NoError(t, err)
	good := spreadItem{Tenant: "a", Seq: 1, Scope: "global", At: 5}
	e, err := tb.entryOf(d, good, "1")
	require.NoError(t, err)
	right := e[d.pk.attr].(*types.AttributeValueMemberS).Value
	head, shard, _ := strings.Cut(right, "#")
	k, _ := strconv.Atoi(shard)
	for _, bad := range []string{
		head + "#" + strconv.Itoa((k+1)%16),
		head + "#16",
		head + "#0" + strconv.Itoa(k),
		head,
	} {
		e[d.pk.attr] = &types.AttributeValueMemberS{Value: bad}
		_, err = d.positionOf(e)
		require.ErrorIs(t, err, errMalformed, bad)
	}
	e[d.pk.attr] = &types.AttributeValueMemberS{Value: right}
	_, err = d.positionOf(e)
	require.NoError(t, err, "the right shard decodes")
}

// TestExplainSharded: Explain shows the request to every shard, alike but
// for the partition value, and the key condition that continues after a
// cursor; the caller's condition and the cursor combine into one range.
func TestExplainSharded(t *testing.T) {
	tb, err := New[spreadItem](nil)
	require.NoError(t, err)
	e, err := tb.Query("all", "global").Where(Ge(int64(5))).Limit(20).Explain()
	require.NoError(t, err)
	r := e.Request
	require.Len(t, r.Shards, 16)
	for i, in := range r.Shards {
		require.Equal(t, &types.AttributeValueMemberS{Value: fmt.Sprint("global#", i)}, in.ExpressionAttributeValues[expr.ShardPKValue])
		require.Equal(t, r.Input.KeyConditionExpression, in.KeyConditionExpression)
	}
	require.Same(t, r.Shards[0], r.Input)
	s := r.String()
	t.Log(s)
	require.Contains(t, s, "(table, 16 shards)")
	require.Contains(t, s, `KeyCondition: _pk = "global#0" AND _sk >= "`)
	require.Contains(t, s, `"global#15" (Limit `)
	require.NotNil(t, e.Alternate)
	require.Len(t, e.Alternate.Shards, 16, "the GSI form is sharded too")

	// After a cursor: the range is the condition's, narrowed to after the
	// cursor's position.
	d, err := tb.index("all")
	require.NoError(t, err)
	it := spreadItem{Tenant: "a", Seq: 1, Scope: "global", At: 9}
	texts, err := tb.s.itemTexts(reflect.ValueOf(it))
	require.NoError(t, err)
	vals, _, err := d.keyValues(texts)
	require.NoError(t, err)
	vals[tb.s.base.pk.attr] = &types.AttributeValueMemberS{Value: "a"}
	vals[tb.s.base.sk.attr] = &types.AttributeValueMemberN{Value: "1"}
	pos, err := d.positionOf(vals)
	require.NoError(t, err)
	cursor := encodeCursor(d, cursorPos{at: pos}, false, nil)
	e, err = tb.Query("all", "global").Where(Between(K(int64(5)), K(int64(20)))).After(cursor).Explain()
	require.NoError(t, err)
	s = e.Request.String()
	t.Log(s)
	at := vals[d.sk.attr].(*types.AttributeValueMemberS).Value
	require.Contains(t, s, fmt.Sprintf(`_sk BETWEEN "%s!" AND "`, at), "after the cursor, up to the condition's end")
	e, err = tb.Query("all", "global").Where(Between(K(int64(5)), K(int64(20)))).Desc().After(encodeCursor(d, cursorPos{at: pos}, true, nil)).Explain()
	require.NoError(t, err)
	require.Contains(t, e.Request.String(), `_sk BETWEEN "`, "descending: from the condition's start to just before the cursor")
}

// TestCheapestBlocks checks the request cheapestBlocks sizes: whole 4 KB
// blocks, never more than the call still wants, 0 (let the tails size) when
// the shard may need too many entries, and sane at the edges of its inputs.
func TestCheapestBlocks(t *testing.T) {
	sizer := func(live, read float64) *sizer { return &sizer{live: live, read: read} }
	// 200 B entries, nothing dead: a block holds 20, the most a shard can
	// need when the call wants 11: one block, every entry it holds.
	assert.Equal(t, 11, cheapestBlocks(sizer(100, 100), 1.3, 11, 200, 1.5))
	assert.Equal(t, 20, cheapestBlocks(sizer(100, 100), 1.3, 30, 200, 1.5))
	// 1 KB entries, half of them dead: one block reads four entries, two
	// of them live on average, for a shard that needs 2.3: it reads whole
	// blocks, at least one.
	n := cheapestBlocks(sizer(50, 100), 1.3, 21, 1000, 1.5)
	assert.Positive(t, n)
	assert.Zero(t, n%4, "whole blocks of four 1 KB entries: %d", n)
	// A refill that costs more makes the first request larger.
	assert.GreaterOrEqual(t, cheapestBlocks(sizer(50, 100), 1.3, 21, 1000, 10), n)
	// 4 KB entries, each a block of its own.
	n = cheapestBlocks(sizer(100, 100), 5, 21, 4000, 1.5)
	assert.GreaterOrEqual(t, n, 1)
	assert.LessOrEqual(t, n, 21)
	// A shard that may need more than cheapestMaxLive entries.
	assert.Zero(t, cheapestBlocks(sizer(100, 100), 500, 1001, 200, 1.5))
	// Edges: no entry expected; a partition almost all tombstones; entries
	// larger than many blocks; no evidence at all.
	assert.Positive(t, cheapestBlocks(sizer(100, 100), 0, 21, 200, 1.5))
	assert.Positive(t, cheapestBlocks(sizer(0, 100000), 1, 21, 200, 1.5))
	assert.Positive(t, cheapestBlocks(sizer(100, 100), 1, 21, 400*1024, 1.5))
	assert.Positive(t, cheapestBlocks(sizer(0, 0), 1, 21, 1000, 1.5))
	// A live ratio a hair below 1 (a memo that saw one tombstone long ago)
	// sizes as a ratio of 1 does: (1-ratio)^n must not underflow to a law
	// that never needs a refill.
	almost := sizer(0, 0)
	almost.prior, almost.weight = 1-1e-12, priorWeight
	require.Less(t, almost.ratio(), 1.0)
	assert.Equal(t, cheapestBlocks(sizer(100, 100), 38, 1000, 133, 1.5), cheapestBlocks(almost, 38, 1000, 133, 1.5))
}

// TestShardEvidencePooled: before a round, each shard's sizer takes as its
// prior what the other shards read in the call, with the memo's ratio (or,
// with none, the optimistic one live entry of one a sizer starts with); a
// merge passes one ratio, over every shard, to later calls.
func TestShardEvidencePooled(t *testing.T) {
	tb := &Table[struct{}]{memo: &memo{}}
	stream := func(live, read float64, runs int, runLen float64) *shardStream[struct{}] {
		st := &shardStream[struct{}]{pg: &pager[struct{}]{}}
		st.pg.size.live, st.pg.size.read = live, read
		st.pg.size.runs, st.pg.size.runLen = runs, runLen
		return st
	}
	m := &merger[struct{}]{q: Query[struct{}]{t: tb}, p: &plan{memoKey: "k"}, memo: true,
		streams: []*shardStream[struct{}]{stream(1, 10, 0, 0), stream(5, 10, 1, 30), stream(9, 10, 3, 10)}}
	m.pool()
	assert.InDelta(t, 15.0/21, m.streams[0].pg.size.prior, 1e-12)
	assert.InDelta(t, 21.0, m.streams[0].pg.size.weight, 1e-12)
	assert.InDelta(t, 7.0/21, m.streams[2].pg.size.prior, 1e-12)
	// With the memo's ratio, the others' entries add to its items.
	m.basePrior, m.baseWeight = 0.5, 40
	m.pool()
	assert.InDelta(t, (14+20)/60.0, m.streams[0].pg.size.prior, 1e-12)
	assert.InDelta(t, 60.0, m.streams[0].pg.size.weight, 1e-12)

	// The memo's weight counts for at most priorWeight items.
	m.baseWeight = 10 * priorWeight
	m.pool()
	assert.InDelta(t, (14+0.5*priorWeight)/(20+priorWeight), m.streams[0].pg.size.prior, 1e-12)
	assert.InDelta(t, 20+priorWeight, m.streams[0].pg.size.weight, 1e-12)

	m.remember()
	ratio, weight := tb.memo.get("k")
	assert.InDelta(t, 15.0/30, ratio, 1e-12)
	assert.InDelta(t, 30.0, weight, 1e-12)
	// The stretches' mean length, weighed by how many each shard crossed.
	e, _ := tb.memo.entry("k")
	assert.InDelta(t, (30+3*10)/4.0, e.runLen, 1e-12)
}

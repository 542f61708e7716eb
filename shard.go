package ddbindex

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ddbindex/ddbindex/internal/expr"
)

// This file reads a sharded index (shards=N). A logical partition is N
// physical ones, one per shard (see shardOf). A query reads every shard
// with its own page fill (a pager) under one sort key range, and merges
// them: the sort key of a sharded index is derived and ends with the base
// key components it lacks, so it is unique in the logical partition and the
// merge yields exactly the order of the unsharded index. A cursor is one
// logical position, as for any index: every shard continues after it
// through the key condition, never through an ExclusiveStartKey.

// defaultShardFanout is Options.ShardFanout's default.
const defaultShardFanout = 16

// shardPlan is what a query of a sharded index adds to its plan.
type shardPlan struct {
	keys []types.AttributeValue // each shard's partition key value
	// cond is the condition on the sort key every shard reads (the zero
	// value for none): the caller's condition narrowed to what follows the
	// cursor.
	cond expr.SortCond
	// empty: the range holds nothing, so no request is needed.
	empty bool
	// after is the exclusive lower bound of the range (the caller's or,
	// ascending, the cursor's) when the condition could not exclude it (its
	// successor is over DynamoDB's size limit), so the range read starts at
	// it: the merge drops entries at or below it, in either order. "" for
	// none.
	after string
	// from is where every shard of a sharded NativeGSI starts, after the
	// cursor's position (nil: at the start). Its key condition cannot
	// express "after a position" (a range goes on one attribute), so each
	// shard starts from an ExclusiveStartKey at from in that shard: the sort
	// attributes end with the base key, so from has one place in every
	// shard's order.
	from   position
	starts []map[string]types.AttributeValue // each shard's ExclusiveStartKey at from
}

// skBound is one end of a sort key range, in ordered form.
type skBound struct {
	set  bool
	v    string
	incl bool
}

// tighter returns the tighter of two lower (lower true) or upper bounds.
func tighter(a, b skBound, lower bool) skBound {
	switch {
	case !a.set:
		return b
	case !b.set:
		return a
	case a.v == b.v:
		return skBound{true, a.v, a.incl && b.incl}
	case (a.v > b.v) == lower:
		return a
	}
	return b
}

// shardPlan makes the shard plan of a query of d, a sharded layout, whose
// partition texts are pkTexts, under the key condition kc, starting after
// the cursor position start (desc: descending).
func (d *layout) shardPlan(pkTexts []string, kc *keyCond, start cursorPos, desc bool) (*shardPlan, error) {
	sp := &shardPlan{keys: make([]types.AttributeValue, d.pk.shards)}
	if d.pk.attrs != nil {
		for i := range sp.keys {
			sp.keys[i] = shardValue(i)
		}
		sp.from = start.at
		if start.next != nil && start.through && !start.tied {
			// Everything up to next was read dead, on a form that orders
			// ties as this one does (by the base key).
			sp.from = start.next
		}
		if sp.from == nil {
			return sp, nil
		}
		esk, err := d.startKey(sp.from)
		if err != nil {
			return nil, cursorErr(err, "position does not make a start key")
		}
		sh := d.shardAttr().attr
		sp.starts = make([]map[string]types.AttributeValue, len(sp.keys))
		for i := range sp.starts {
			sp.starts[i] = maps.Clone(esk)
			sp.starts[i][sh] = sp.keys[i]
		}
		return sp, nil
	}
	byField := d.schema.newKeyTexts()
	for i, c := range d.pk.parts {
		byField.put(c.f, pkTexts[i])
	}
	for i := range sp.keys {
		av, err := d.pk.inShard(byField.text, i)
		if err != nil {
			return nil, queryErr(d.name, "partition: %v", err)
		}
		sp.keys[i] = av
	}
	// The caller's condition as a range of stored sort keys.
	var lo, hi skBound
	prefix := false
	if kc != nil {
		switch kc.op {
		case opEq:
			lo, hi = skBound{true, kc.oa, true}, skBound{true, kc.oa, true}
		case opLt:
			hi = skBound{true, kc.oa, false}
		case opLe:
			hi = skBound{true, kc.oa, true}
		case opGt:
			lo = skBound{true, kc.oa, false}
		case opGe:
			lo = skBound{true, kc.oa, true}
		case opBetween:
			lo, hi = skBound{true, kc.oa, true}, skBound{true, kc.ob, true}
		case opBeginsWith:
			lo, hi = skBound{true, kc.oa, true}, skBound{true, prefixCeiling(kc.oa), true}
			prefix = true
		}
	}
	// What follows the cursor: after its position, and from its next
	// position on when it has one (nothing live lies between the two; a
	// through position was itself read dead).
	if start.at != nil {
		at, err := d.sk.ordered(d.textOf(start.at))
		if err != nil {
			return nil, cursorErr(err, "position does not encode")
		}
		from := skBound{true, at, false}
		if start.next != nil {
			if n, err := d.sk.ordered(d.textOf(start.next)); err == nil && (n > at) != desc && n != at {
				from = skBound{true, n, !start.through} // a through position was read dead itself
			}
		}
		if desc {
			hi = tighter(hi, from, false)
		} else {
			lo = tighter(lo, from, true)
		}
		prefix = false
	}
	switch {
	case prefix:
		sp.cond = expr.SortBeginsWith(kc.oa)
	case lo.set && hi.set:
		l, h := lo.v, hi.v
		if !lo.incl {
			if l = compositeSuccessor(l); len(l) > maxSortKeyBytes {
				l, sp.after = lo.v, lo.v // the merge drops the entry at lo.v
			}
		}
		if !hi.incl {
			h = predecessor(h, false)
		}
		switch {
		case h == "" || l > h:
			sp.empty = true
		case l == h:
			sp.cond = expr.SortEqual(l)
		default:
			sp.cond = expr.SortBetween(l, h)
		}
	case lo.set:
		sp.cond = expr.SortAbove(lo.v, lo.incl)
	case hi.set:
		sp.cond = expr.SortBelow(hi.v, hi.incl)
	}
	return sp, nil
}

// shardInput is the request of shard i, without Limit or ExclusiveStartKey.
func (p *plan) shardInput(i int) dynamodb.QueryInput {
	in := p.input
	names := maps.Clone(in.ExpressionAttributeNames)
	if names == nil {
		names = map[string]string{}
	}
	values := maps.Clone(in.ExpressionAttributeValues)
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	if sh := p.def.shardAttr(); sh != nil {
		in.KeyConditionExpression = aws.String(expr.ShardAttrCondition(names, values, sh.attr, p.shard.keys[i], aws.ToString(in.KeyConditionExpression)))
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = names, values
		return in
	}
	var sk string
	if p.def.sk != nil {
		sk = p.def.sk.attr
	}
	in.KeyConditionExpression = aws.String(expr.ShardKeyCondition(names, values, p.def.pk.attr, p.shard.keys[i], sk, p.shard.cond))
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = names, values
	return in
}

// shardStream is one shard's page fill in a merge.
type shardStream[T any] struct {
	pg  *pager[T]
	buf []map[string]types.AttributeValue // live entries read and not yet merged
	ord []string                          // the mergeKey of each entry of buf
	// lastOrd is the mergeKey of the last entry the shard evaluated (its
	// LastEvaluatedKey; "" before a request).
	lastOrd string
	more    bool // the shard has entries after those read
	sent    bool // a request was sent
}

// mergeKey returns the sort key of an entry (or a key) of a sharded index
// in ordered form, unique in the logical partition: the stored String of a
// derived sort key, or the composite encoding of a sharded NativeGSI's sort
// attributes (which end with the base key), whose byte order is DynamoDB's
// order of the attribute tuples.
func (d *layout) mergeKey(item map[string]types.AttributeValue) (string, error) {
	if d.sk.attrs == nil {
		v, _ := item[d.sk.attr].(*types.AttributeValueMemberS)
		if v == nil {
			return "", fmt.Errorf("%w: an entry of %s has no String sort key %s", ErrMalformedItem, indexLabel(d.name), d.sk.attr)
		}
		return v.Value, nil
	}
	pos, err := d.positionOf(item)
	if err != nil {
		return "", fmt.Errorf("%w: an entry of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(d.name), err)
	}
	return d.sk.ordered(d.textOf(pos))
}

// head returns the sort key of the stream's first buffered entry.
func (s *shardStream[T]) head() string { return s.ord[0] }

// last returns the sort key of the last entry the shard evaluated: no
// unread entry of the shard lies at or before it.
func (s *shardStream[T]) last() string { return s.lastOrd }

// pop removes the stream's first buffered entry and returns it with its
// sort key.
func (s *shardStream[T]) pop() (map[string]types.AttributeValue, string) {
	item, ord := s.buf[0], s.ord[0]
	s.buf, s.ord = s.buf[1:], s.ord[1:]
	return item, ord
}

// merger yields the live entries of a sharded query in the index's order.
type merger[T any] struct {
	q       Query[T]
	p       *plan
	streams []*shardStream[T]
	fanout  int
	desc    bool
	emitted int                             // entries yielded
	lastOut map[string]types.AttributeValue // the last entry yielded
	lastOrd string                          // its mergeKey
	memo    bool                            // see newPager
	bytes   float64                         // the memo's entry size (0: none)
	sizing  shardSizing
	// basePrior and baseWeight are the memo's live ratio and its weight
	// in items, as each shard's sizer started with (weight 0: none).
	basePrior, baseWeight float64
	probed                bool // a request was sent alone to learn the entries' size (see round)
}

// newMerger starts the shards' page fills of a query of a sharded index.
func newMerger[T any](q Query[T], p *plan, memo bool, optFns []func(*dynamodb.Options)) *merger[T] {
	m := &merger[T]{q: q, p: p, desc: q.desc, fanout: q.t.opts.ShardFanout, memo: memo, sizing: defaultShardSizing}
	if q.t.shardSizing != nil {
		m.sizing = *q.t.shardSizing
	}
	if memo {
		m.bytes = q.t.memo.itemBytes(p.memoKey)
		m.basePrior, m.baseWeight = q.t.memo.get(p.memoKey)
	}
	if m.fanout <= 0 {
		m.fanout = defaultShardFanout
	}
	if p.shard.empty {
		return m
	}
	m.streams = make([]*shardStream[T], len(p.shard.keys))
	for i := range m.streams {
		sp := *p
		sp.input = p.shardInput(i)
		sp.start = cursorPos{}
		st := &shardStream[T]{pg: newPager(q, &sp, memo, optFns), more: true}
		st.pg.size.shard = true
		if from := p.shard.from; from != nil {
			st.pg.esk, st.pg.pos = p.shard.starts[i], from
		}
		m.streams[i] = st
	}
	return m
}

// stats sums the shards' costs.
func (m *merger[T]) stats() Stats {
	var s Stats
	for _, st := range m.streams {
		s.add(st.pg.total)
	}
	return s
}

// pool gives each shard's sizer, as its prior, the live ratio of what
// every other shard has read in the call, with the memo's counted as a
// sizer counts its prior (priorCounts): a stable hash
// spreads tombstones over the shards as evenly as live entries, so what the
// others read says more about a shard's next entries than its own few.
func (m *merger[T]) pool() {
	live, read := m.evidence()
	bl, br := priorCounts(m.basePrior, m.baseWeight)
	for _, st := range m.streams {
		sz := &st.pg.size
		l, r := sz.evidence()
		ol, or := live-l+bl, read-r+br
		sz.prior, sz.weight = ol/or, or
	}
}

// evidence sums the shards' evidence of the live ratio in the call.
func (m *merger[T]) evidence() (live, read float64) {
	for _, st := range m.streams {
		l, r := st.pg.size.evidence()
		live, read = live+l, read+r
	}
	return live, read
}

// remember passes what the shards read to later calls, as one call's
// evidence: the live ratio over every shard's entries, the mean length of
// the stretches without a live entry they crossed, and the entries' size.
// (Passed shard by shard, each would halve the weight of those before it,
// and the memo would hold the last few shards' ratio.)
func (m *merger[T]) remember() {
	if !m.memo {
		return
	}
	live, read := m.evidence()
	var runLen float64
	runs := 0
	for _, st := range m.streams {
		if n := st.pg.size.runs; n > 0 {
			runLen += st.pg.size.runLen * float64(n)
			runs += n
		}
	}
	if read > 0 {
		m.q.t.memo.put(m.p.memoKey, live, read, false, 0)
	}
	if runs > 0 {
		m.q.t.memo.putRunLen(m.p.memoKey, runLen/float64(runs))
	}
	if b := m.itemBytes(); b > 0 && b != m.bytes {
		m.q.t.memo.putItemBytes(m.p.memoKey, b)
	}
}

// before reports whether sort key a comes before b in the query's order.
func (m *merger[T]) before(a, b string) bool {
	if m.desc {
		return a > b
	}
	return a < b
}

// capped returns an ErrCapReached *Error when the caps forbid a round of n requests;
// the cursor continues after the last entry yielded.
func (m *merger[T]) capped(n int) error {
	ce := m.q.capHit(m.stats(), n)
	if ce == nil {
		return nil
	}
	var err error
	if ce.Cursor, err = m.cursor(m.resume()); err != nil {
		return err
	}
	return ce
}

// resume is where a call stopped now continues: after the entries every
// shard has evaluated when they reach past the last entry yielded (see
// evaluated), else after the last entry yielded, else where it started. A
// call that a cap stops in a run of tombstones thus still makes progress,
// as an unsharded one does from its LastEvaluatedKey.
func (m *merger[T]) resume() cursorPos {
	if pos := m.evaluated(); pos != nil {
		return cursorPos{at: pos}
	}
	if m.lastOut == nil {
		return m.p.start
	}
	pos, err := m.p.def.positionOf(m.lastOut)
	if err != nil {
		return m.p.start // unreachable: every yielded entry's position was read
	}
	return cursorPos{at: pos}
}

// evaluated returns the position of the first of the shards' last
// evaluated entries, in the query's order, when every shard that has more
// entries has been read, and that position lies after the last entry
// yielded and before every entry read and not yet yielded: no live entry
// between the two remains to be yielded, since each shard has evaluated
// every entry up to its own last one. It returns nil otherwise.
func (m *merger[T]) evaluated() position {
	var at *shardStream[T]
	for _, s := range m.streams {
		switch {
		case !s.more:
			continue // every entry of the shard has been read
		case !s.sent || s.pg.pos == nil:
			return nil
		case at == nil || m.before(s.last(), at.last()):
			at = s
		}
	}
	if at == nil {
		return nil
	}
	k := at.last()
	if m.lastOut != nil && !m.before(m.lastOrd, k) {
		return nil
	}
	for _, s := range m.streams {
		if len(s.buf) > 0 && !m.before(k, s.head()) {
			return nil
		}
	}
	return at.pg.pos
}

// cursor mints the cursor for c, as a pager does.
func (m *merger[T]) cursor(c cursorPos) (string, error) {
	pg := &pager[T]{q: m.q, p: m.p}
	return pg.cursor(c)
}

// next yields the next live entry, reading the shards it needs; want is
// how many entries the call still wants (0: all there are). ok is false at
// the end.
func (m *merger[T]) next(ctx context.Context, want int) (map[string]types.AttributeValue, bool, error) {
	for {
		best := -1
		for i, s := range m.streams {
			if len(s.buf) > 0 && (best < 0 || m.before(s.head(), m.streams[best].head())) {
				best = i
			}
		}
		// A shard whose buffer is empty but that has more entries holds
		// back the merge while its next entry may come before the best
		// head: it has none up to the last key it evaluated.
		var fetch []int
		active := 0
		for i, s := range m.streams {
			if len(s.buf) > 0 || s.more {
				active++
			}
			if len(s.buf) == 0 && s.more && (!s.sent || best < 0 || !m.before(m.streams[best].head(), s.last())) {
				fetch = append(fetch, i)
			}
		}
		if len(fetch) > 0 {
			if err := m.round(ctx, m.lookahead(fetch, want, active), len(fetch), want); err != nil {
				return nil, false, err
			}
			continue
		}
		if best < 0 {
			return nil, false, nil
		}
		item, ord := m.streams[best].pop()
		if m.p.shard.after != "" && ord <= m.p.shard.after {
			continue // the lower bound's own entry, which the condition could not exclude
		}
		m.emitted++
		m.lastOut, m.lastOrd = item, ord
		return item, true, nil
	}
}

// shardFetch is one request of a round: the shard, and how many of its
// live entries the call is expected to need before the page is full (0 when
// the call wants all there are).
type shardFetch struct {
	shard    int
	expected float64
}

// lookahead returns the requests of the round that the blocked shards
// (fetch) call for, theirs first. Each blocked shard may hold about
// rest/active of the rest entries the call still wants. The round also asks
// every shard whose buffer the merge would drain before the call has what
// it wants, as far as the buffered entries tell: the merge would block on
// it at once, one round later. Such a shard, drained after w more entries,
// may hold about (rest-w)/active of those still wanted then.
func (m *merger[T]) lookahead(fetch []int, want, active int) []shardFetch {
	out := make([]shardFetch, 0, len(fetch))
	if want <= 0 {
		for _, i := range fetch {
			out = append(out, shardFetch{shard: i})
		}
		return out
	}
	rest := max(1, want-m.emitted)
	per := float64(rest) / float64(max(1, active))
	for _, i := range fetch {
		out = append(out, shardFetch{shard: i, expected: per})
	}
	if m.sizing.noLookahead {
		return out
	}
	at := make([]int, len(m.streams)) // entries of each buffer the walk has passed
	for w := 1; w < rest; w++ {
		next := -1
		for i, s := range m.streams {
			if at[i] < len(s.buf) && (next < 0 || m.before(s.ord[at[i]], m.streams[next].ord[at[next]])) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		if at[next]++; at[next] == len(m.streams[next].buf) && m.streams[next].more {
			out = append(out, shardFetch{shard: next, expected: float64(rest-w) / float64(max(1, active))})
		}
	}
	return out
}

// shardSizing is how a merge sizes its rounds (see lookahead and size).
// Tests and benchmarks compare variants through Table.shardSizing.
type shardSizing struct {
	// A shard's first request of a call brings every live entry of the
	// shard that the call needs, and the one after them, with probability
	// 1-firstTail; a later request with 1-refillTail.
	firstTail, refillTail float64
	// Entries of at least bigBytes (0: none) take the tails bigFirst and
	// bigRefill instead: each entry asked for beyond need costs a read unit
	// of its own, so asking for fewer, and more often again, costs less.
	bigBytes, bigFirst, bigRefill float64
	// roundBlocks, when above 0 and the entries' size is known, replaces
	// the tails: each request reads the number of 4 KB blocks that makes
	// the shard's expected cost least, counting what it reads beyond the
	// shard's need and, when it falls short, the blocks of the refill and
	// roundBlocks more for the extra request (see cheapestBlocks).
	roundBlocks float64
	// probe: while the entries' size is unknown, a round that asks several
	// shards for a part of a page sends one request first, and sizes the
	// others from the entries it returns.
	probe bool
	// noPool: each shard's sizer rests on its own entries and the memo
	// alone, not on what the other shards read (see pool).
	noPool      bool
	noFill      bool // requests do not fill the 4 KB blocks they pay for
	noLookahead bool // a round asks the blocked shards alone
	// whole: every request asks for all the call still wants (and one
	// more), as a merge that knows nothing of the spread would: the
	// baseline BenchmarkShardedPage measures the sizing against.
	whole bool
	// onRound, if set, is called before each send of concurrent requests
	// (a round that probes sends twice) with their number.
	onRound func(requests int)
}

// defaultShardSizing is the sizing of every Table's merges. Once the
// entries' size is known, each request reads the blocks whose expected cost,
// a refill priced at its blocks and one block more, is least
// (cheapestBlocks): in the model's feeds, warm pages stay within 1.25x the
// read units of a merge that knows every shard's entries. Pricing the
// refill's round trip higher saves rounds, but reads a block more on every
// shard whose share ends a few entries past a block (600 B entries at S=4:
// 1.47x that merge at one and a half blocks, 1.05x at one). Before that (while
// the Table has read no live entry of the partition; see probe), for
// shards inside a stretch of tombstones, and for shards that may need more
// entries than cheapestBlocks weighs, tails size the requests:
// later requests cost one round trip more, so they aim higher than first
// ones, and entries of 2 KB or more, a read unit each, are asked for
// sparingly. Chosen with TestShardedPageCostModel and
// BenchmarkShardedSizing.
var defaultShardSizing = shardSizing{firstTail: 0.4, refillTail: 0.1, bigBytes: 2048, bigFirst: 0.6, bigRefill: 0.4, roundBlocks: 1, probe: true}

// round sends the requests fetch lists, at most fanout at a time, for a
// call that wants want entries (0: all there are). The first blocked ones
// are those of the shards that block the merge: when a cap forbids the
// others, the round sends these alone.
func (m *merger[T]) round(ctx context.Context, fetch []shardFetch, blocked, want int) error {
	if err := m.capped(len(fetch)); err != nil {
		if blocked == len(fetch) || m.capped(blocked) != nil {
			return err
		}
		fetch = fetch[:blocked]
	}
	b := m.itemBytes()
	if b == 0 && want > 0 && len(fetch) > 1 && m.sizing.probe && m.memo && !m.probed {
		// Nothing tells the entries' size yet (the Table has not read a
		// live entry of the partition): one request may show it, and the
		// others then read the blocks it makes cheapest instead of a share
		// sized blind. It costs a round trip, and no request; once a call
		// (Exists, which stops at the first live entry, goes without).
		m.probed = true
		if err := m.send(ctx, fetch[:1], want, b); err != nil {
			return err
		}
		fetch, b = fetch[1:], m.itemBytes()
	}
	return m.send(ctx, fetch, want, b)
}

// send sends the requests fetch lists, concurrently (at most fanout at a
// time), for a call that wants want entries, where entries are about b
// bytes (0: unknown).
func (m *merger[T]) send(ctx context.Context, fetch []shardFetch, want int, b float64) error {
	if m.sizing.onRound != nil {
		m.sizing.onRound(len(fetch))
	}
	if !m.sizing.noPool {
		m.pool()
	}
	// The sizes read the shards' sizers, which the requests update: all
	// are chosen before any is sent.
	sizes := make([]int, len(fetch))
	for j, f := range fetch {
		sizes[j] = m.limit(f, want, b)
	}
	errs := make([]error, len(fetch))
	sem := make(chan struct{}, m.fanout)
	var wg sync.WaitGroup
	for j, f := range fetch {
		s, size := m.streams[f.shard], sizes[j]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			items, more, err := s.pg.next(ctx, size)
			if err != nil {
				errs[j] = err
				return
			}
			for _, it := range items {
				ord, err := m.p.def.mergeKey(it)
				if err != nil {
					errs[j] = err
					return
				}
				s.ord = append(s.ord, ord)
			}
			if more {
				if s.lastOrd, err = m.p.def.mergeKey(s.pg.esk); err != nil {
					errs[j] = err
					return
				}
			}
			s.sent, s.more = true, more
			s.buf = append(s.buf, items...)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// limit is the Limit of request f (0: none): its size, and one more when
// the shard's first request of an ascending call may return the range's
// excluded lower bound (see shardPlan.after), which the merge drops. The
// one shard that holds that entry thus reads past it, so every shard that
// has more has evaluated past where the call began after one round, and a
// call that a cap stops after that round still makes progress (see
// evaluated) whatever the sizing.
func (m *merger[T]) limit(f shardFetch, want int, b float64) int {
	n := m.size(f, want, b)
	if n > 0 && !m.desc && m.p.shard.after != "" && !m.streams[f.shard].sent {
		n++
	}
	return n
}

// size is the Limit of request f (0: none, when the call wants all there
// is), where entries are about b bytes (0: unknown). The shard's live
// entries among those the call still needs are about Poisson with mean
// f.expected (a stable hash spreads entries evenly), and the request must
// read one past them to show that the shard holds no more before the page
// ends. Once b is known, and unless the shard's last request found no live
// entry, the request reads the number of 4 KB blocks whose expected cost is
// least (cheapestBlocks, unless the shard may need more entries than it
// weighs, or the sizing is whole or noFill). Else it asks for the quantile at the tail
// probability, plus one, never more than the call still wants plus one, and
// the shard's sizer turns live entries into a Limit through its expected
// live ratio (growing it while the shard finds none). Every request costs
// at least one 4 KB block of read units, and costs them whole: a request
// whose entries fill its blocks only partly asks for as many more as fit,
// since they are free and may spare the shard a round.
func (m *merger[T]) size(f shardFetch, want int, b float64) int {
	rest := want - m.emitted
	if want <= 0 || rest <= 0 {
		return 0
	}
	s := m.streams[f.shard]
	tail := m.sizing.refillTail
	if !s.sent {
		tail = m.sizing.firstTail
	}
	if big := m.sizing.bigBytes; big > 0 && b >= big {
		tail = m.sizing.bigRefill
		if !s.sent {
			tail = m.sizing.bigFirst
		}
	}
	live := min(rest+1, poissonQuantile(f.expected, tail)+1)
	if m.sizing.whole {
		live = rest + 1
	}
	if b > 0 {
		// Dead entries are larger by the tombstone's marks.
		b += (1 - s.pg.size.ratio()) * float64(s.pg.size.deadExtra)
	}
	if b > 0 && m.sizing.roundBlocks > 0 && !m.sizing.whole && !m.sizing.noFill && s.pg.size.streak == 0 {
		// Not inside a stretch of tombstones, which the sizer crosses
		// growing its requests geometrically.
		if n := cheapestBlocks(&s.pg.size, f.expected, rest+1, b, m.sizing.roundBlocks); n > 0 {
			return n
		}
	}
	size := s.pg.size.next(live)
	if b > 0 && !m.sizing.noFill {
		blocks := math.Ceil(float64(size) * b / 4096)
		fill := int(blocks * 4096 / b)
		size = max(size, min(fill, s.pg.size.next(rest+1)))
	}
	return size
}

// cheapestBlocks returns the Limit of a request to a shard whose live
// entries among those the call still needs are about Poisson with mean
// mean, and which must read one live entry past them (at most most live
// entries in all), where an entry is about b bytes and sz expects each to be
// live with its ratio: the Limit of a number of whole 4 KB blocks, or 0 when
// the shard may need too many entries for the sum below to be cheap (the
// caller then sizes from a tail probability). A request of k blocks reads the
// n entries they hold, of which Y ~ Binomial(n, ratio) are live, and costs k
// blocks; when the shard needs X+1 > Y live entries, a refill costs about the
// blocks those take plus round, the price of the request and round more. The
// request reads the k whose expected cost is least (the smallest on ties).
// The binomial law is computed in log space: a ratio a hair below 1 (a memo
// that once saw a tombstone) would make (1-ratio)^n underflow.
func cheapestBlocks(sz *sizer, mean float64, most int, b, round float64) int {
	perBlock := 4096 / b
	top := min(most, poissonQuantile(mean, 1e-4)+1) // fewer than 1 in 10,000 shards need more
	if top > cheapestMaxLive {
		return 0
	}
	ratio := min(1, max(sz.ratio(), 1.0/maxRequestItems))
	// pmf[x] is P(X = x) for x < top.
	pmf := make([]float64, top)
	p := math.Exp(-mean)
	for x := range pmf {
		pmf[x] = p
		p *= mean / float64(x+1)
	}
	upTo := sz.next(most) // never more than what the call still wants
	bin := make([]float64, top+1)
	refill := make([]float64, top+1)
	for m := 1; m <= top; m++ {
		refill[m] = math.Ceil(float64(m)/ratio/perBlock) + round
	}
	odds := math.Log(ratio) - math.Log1p(-ratio)
	best, bestCost := 0, math.Inf(1)
	first := max(1, int(math.Ceil(b/4096))) // the blocks one entry takes
	for k := first; k < first+cheapestMaxBlocks; k++ {
		n := max(1, min(int(float64(k)*perBlock), upTo))
		// bin[y] is P(Y = y) for y <= top; the refill needs x+1-y live
		// entries more, which only y <= x < top leave.
		clear(bin)
		if ratio == 1 {
			if n <= top {
				bin[n] = 1
			}
		} else {
			lq := float64(n) * math.Log1p(-ratio)
			for y := 0; y <= min(n, top); y++ {
				bin[y] = math.Exp(lq)
				lq += math.Log(float64(n-y)/float64(y+1)) + odds
			}
		}
		cost := float64(k)
		for x := range top {
			for y := 0; y <= x && y <= n; y++ {
				cost += pmf[x] * bin[y] * refill[x+1-y]
			}
		}
		if cost < bestCost {
			best, bestCost = n, cost
		}
		if n >= upTo || float64(k) > bestCost {
			break
		}
	}
	return best
}

// cheapestMaxLive bounds the live entries cheapestBlocks weighs, and
// cheapestMaxBlocks the request sizes it tries: past them, a tail
// probability sizes as well, for less arithmetic (at most about
// 64·64·64/2 steps a request).
const (
	cheapestMaxLive   = 64
	cheapestMaxBlocks = 64
)

// firstLimit is the Limit of shard i's first request in a call that wants
// want entries, as round sends it.
func (m *merger[T]) firstLimit(i, want int) int {
	return m.limit(shardFetch{shard: i, expected: float64(want) / float64(max(1, len(m.streams)))}, want, m.itemBytes())
}

// poissonQuantile returns the least k with P(X <= k) >= 1-tail for X
// Poisson with mean mean; from mean 50 on, that of the normal law with the
// same mean and variance.
func poissonQuantile(mean, tail float64) int {
	if mean >= 50 {
		z := math.Sqrt2 * math.Erfinv(1-2*tail)
		return int(min(math.Ceil(mean+z*math.Sqrt(mean)-0.5), maxRequestItems))
	}
	p := math.Exp(-mean)
	cdf, k := p, 0
	for cdf < 1-tail && k < maxRequestItems {
		k++
		p *= mean / float64(k)
		cdf += p
	}
	return k
}

// itemBytes is the size of an entry the fill of a request assumes (0:
// unknown): the mean size of the entries the shards returned, or when the
// query projects attributes (its items are smaller than what DynamoDB
// reads) the tightest bound the read units gave; else the memo's.
func (m *merger[T]) itemBytes() float64 {
	n, sum, bound := 0, 0, 0.0
	for _, st := range m.streams {
		n += st.pg.size.sampled[0]
		sum += st.pg.size.sampled[1]
		if u := st.pg.size.unitBytes; u > 0 && (bound == 0 || u < bound) {
			bound = u
		}
	}
	switch {
	case len(m.q.project) > 0 && bound > 0:
		return bound
	case len(m.q.project) == 0 && n > 0:
		return float64(sum) / float64(n)
	}
	return m.bytes
}

// fillSharded reads one page of up to limit live entries of a sharded
// index, with the item after it when peek (so that the cursor is "" exactly
// when nothing live follows, as for any index).
func fillSharded[T any](ctx context.Context, q Query[T], p *plan, limit int, peek bool, optFns []func(*dynamodb.Options)) (_ *Page[T], err error) {
	m := newMerger(q, p, peek, optFns)
	defer m.remember()
	defer func() { q.failedFill(ctx, err, m.stats()) }()
	limit = min(limit, maxPageItems)
	want := pageWant(limit, peek)
	var raw []map[string]types.AttributeValue
	var capErr error
	var end cursorPos
	exhausted := false
	for len(raw) < want {
		item, ok, err := m.next(ctx, want)
		if err != nil {
			if asKind(err, ErrCapReached) == nil {
				return nil, err
			}
			if len(raw) < limit {
				capErr, end = err, m.resume()
			}
			break
		}
		if !ok {
			exhausted = true
			break
		}
		raw = append(raw, item)
	}
	p.end = fillEnd(len(raw), limit, exhausted, capErr)
	if len(raw) > limit || (len(raw) == limit && !exhausted && capErr == nil) {
		end.digest = p.digest
		var err error
		if end.at, err = p.def.positionOf(raw[limit-1]); err != nil {
			return nil, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(p.def.name), err)
		}
		if len(raw) > limit {
			if end.next, err = p.def.positionOf(raw[limit]); err != nil {
				return nil, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(p.def.name), err)
			}
		}
		raw = raw[:limit]
	}
	page := &Page[T]{Items: make([]T, len(raw))}
	for i := range raw {
		if err := q.t.unmarshalItem(raw[i], &page.Items[i]); err != nil {
			return nil, err
		}
	}
	if p.keepRaw {
		p.raw = raw
	}
	page.Stats = m.stats()
	page.Stats.Returned = len(page.Items)
	page.Stats.Dropped = page.Stats.Read - page.Stats.Filtered - len(page.Items)
	if page.Cursor, err = m.cursor(end); err != nil {
		return nil, err
	}
	return page, capErr
}

// allSharded is All on a sharded index: the merge, read as far as the
// caller iterates (at most Limit entries when Limit is set). pages, when
// not nil, observes it a page's worth of entries at a time.
func (q Query[T]) allSharded(ctx context.Context, p *plan, optFns []func(*dynamodb.Options), yield func(T, error) bool, pages *allPages[T]) {
	var zero T
	m := newMerger(q, p, true, optFns)
	yielded := 0
	var observedStats Stats // m.stats() when the last page was observed
	flush := func(end int) {
		if pages.flush(ctx, statsSince(m.stats(), observedStats), end) {
			observedStats = m.stats()
		}
	}
	end := endUnknown
	defer func() {
		if pages != nil && (len(pages.raw) > 0 || end == endNone) {
			flush(end)
		}
	}()
	defer func() {
		m.remember()
		s := m.stats()
		s.Returned = yielded
		s.Dropped = s.Read - s.Filtered - yielded
		if q.report != nil {
			q.report.add(s)
		}
		callFrom(ctx).readStats(s)
	}()
	for q.limit == 0 || yielded < q.limit {
		item, ok, err := m.next(ctx, q.limit)
		if err != nil {
			yield(zero, err)
			return
		}
		if !ok {
			end = endNone
			return
		}
		var v T
		if err := q.t.unmarshalItem(item, &v); err != nil {
			yield(zero, err)
			return
		}
		yielded++
		if pages != nil {
			pages.add(item)
			if len(pages.raw) == defaultPageSize {
				flush(endUnknown)
			}
		}
		if !yield(v, nil) {
			return
		}
	}
}

package ddbindex

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// This file owns the page-fill loop. DynamoDB applies Limit before the
// filter, so one request may return fewer live items than asked, or none
// with a LastEvaluatedKey: the loop reads on until the page is full or the
// partition ends.
//
// A Query's cost is the size it reads, rounded up to 4 KB once per request,
// so the loop sizes each request from the live ratio it expects (a sizer,
// fed by what the call has read and by what earlier calls read in the same
// partition), and grows requests geometrically while they find no live
// item, so a run of R tombstones is crossed in O(log R) requests. Items read
// beyond the page are dropped and come again on the next page; the cursor
// names the page's last item and the first live item after it, so the next
// page starts there and never reads again what this one found dead.

// maxRequestItems caps the Limit of one request. DynamoDB stops a response
// at 1 MB whatever the Limit; the cap bounds what one request can read
// beyond a page when the expected live ratio is wrong.
const maxRequestItems = 20000

// maxPageItems caps how many items a page (or an All) can be asked for, so
// that the look-ahead and the size arithmetic can never overflow.
const maxPageItems = math.MaxInt32 - 1

// The sizer's constants, chosen with BenchmarkPageFill and the cost model of
// TestPageFillCostModel (pagefill_model_test.go):
const (
	// growth is the factor by which a request grows over the last one while
	// requests return no live item: any run of R dead items is crossed in
	// about log(R)/log(growth) requests, and the items read past the run's
	// end are at most (growth-1) times the run.
	growth = 1.2
	// margin is how many standard deviations of the expected number of
	// items a request reads beyond the mean: fewer second requests, at the
	// price of items read past the page.
	margin = 0.5
	// runEvidence decides whether a run of requests without a live item was
	// a cluster of tombstones or bad luck in a sparse partition: it is a
	// cluster when the live ratio after it predicts at least this many live
	// items in it. A cluster does not lower the expected live ratio; bad
	// luck does.
	runEvidence = 5.0
	// priorWeight caps how many items' worth of evidence the memory of
	// earlier calls weighs against what the call reads itself.
	priorWeight = 200.0
	// upperZ is how many standard deviations above the live items read
	// upperRatio places the live ratio.
	upperZ = 1.0
	// reach bounds a request sized from the live ratio to this many times
	// the items the call has read before it: where a sparse stretch ends in
	// a dense one, the items read past the page are at most that many times
	// what the naive loop read too, at the price of a request more per
	// factor reach in a partition sparse throughout.
	reach = 3.0
)

// pager sends the requests of one call and tracks its position and costs.
type pager[T any] struct {
	q       Query[T]
	p       *plan
	esk     map[string]types.AttributeValue
	alt     map[string]types.AttributeValue // the start key to fall back to if the server refuses esk
	pos     position                        // the position the next request starts after; nil at the start
	seen    map[string]struct{}             // every position of this call, to catch cycles
	size    sizer
	memo    bool   // see newPager
	memoKey string // the memo entry the call adds what it read to (see newPager)
	base    uint64 // a call from a cursor: the last change first pages had found when it started (see newPager)
	total   Stats
	opts    []func(*dynamodb.Options) // the caller's per-call SDK options
}

// newPager starts a call. With memo, its requests are sized from what earlier
// calls read in the partition, and it tells later calls what it read; Exists
// goes without (it starts with the smallest read, and stops at the first
// live item, which says little about the live ratio).
func newPager[T any](q Query[T], p *plan, memo bool, optFns []func(*dynamodb.Options)) *pager[T] {
	pg := &pager[T]{q: q, p: p, pos: p.start.at, memo: memo, opts: optFns}
	pg.size.deadExtra = q.t.opts.tombstoneMarkBytes()
	pg.size.projected = len(q.project) > 0
	if memo {
		// Calls that start at the beginning of the partition (first pages)
		// and calls that go on from a cursor keep apart what they learn:
		// where tombstones gather at one end, the first page's density
		// differs from the later pages'. A call from a cursor with nothing
		// of its own yet takes what the first pages read, the stretch it
		// most likely goes on from.
		pg.memoKey = p.memoKey
		first, _ := q.t.memo.entry(p.memoKey)
		e := first
		if p.start.at != nil {
			pg.memoKey, pg.base = p.memoOnward, first.changed
			switch on, _ := q.t.memo.entry(pg.memoKey); {
			case on.read > 0 && on.base < first.changed:
				// A first page has found the partition changed (see
				// contradicts) since this entry last started afresh:
				// size from what first pages read since, but let the
				// first request read no more than this entry calls for
				// (where the two differ for where they lie, a request
				// sized from the wrong one would read far past the
				// page). The entry starts afresh when the call adds
				// what it read (see memo.put).
				pg.size.firstRatio, _ = on.ratio()
			case on.read > 0:
				e = on
			}
		}
		// An entry's size does not depend on where it lies, nor much a
		// stretch's length: what the first pages' entry knows fills a gap.
		if e.bytes == 0 {
			e.bytes = first.bytes
		}
		if e.runLen == 0 {
			e.runLen = first.runLen
		}
		pg.size.prior, pg.size.weight = e.ratio()
		if !pg.size.projected {
			pg.size.priorBytes = e.bytes
		}
		pg.size.runLen = e.runLen
	}
	if p.start.at == nil {
		return pg
	}
	// Both were checked when the cursor was decoded.
	pg.esk, _ = p.def.startKey(p.start.at)
	if p.start.next != nil && p.start.through {
		// Everything up to next was read dead: start exactly after it, on a
		// form that orders ties as the one that read it did. That may be
		// inside a stretch without a live item: the last call read its
		// start, past the page, in the request that filled the page, so a
		// jump to where a stretch of the remembered length ends reads past
		// it at most what that request read dead.
		if p.start.tied == !p.def.uniqueSort {
			if esk, err := p.def.startKey(p.start.next); err == nil {
				pg.esk, pg.pos = esk, p.start.next
			}
		}
		return pg
	}
	if p.start.next != nil && !q.t.memo.noStartBefore.Load() {
		if esk, ok := p.def.startKeyBefore(p.start.next, p.start.at, q.desc, p.kc); ok {
			pg.esk, pg.alt = esk, pg.esk
		}
	}
	return pg
}

// capped returns an ErrCapReached *Error when a per-call cap forbids another request.
func (pg *pager[T]) capped() error {
	ce := pg.q.capHit(pg.total, 1)
	if ce == nil {
		return nil
	}
	var err error
	if ce.Cursor, err = pg.cursor(pg.resume()); err != nil {
		return err
	}
	return ce
}

// capHit returns the per-call cap (MaxRequests, MaxReadUnits) that sending
// more requests would break, after the call sent and read what used
// counts; nil when none would. The caller sets the error's Cursor.
func (q Query[T]) capHit(used Stats, more int) *Error {
	switch {
	case q.maxRequests > 0 && used.Requests+more > q.maxRequests:
		return &Error{Sentinel: ErrCapReached, Op: "MaxRequests", Limit: float64(q.maxRequests), Used: float64(used.Requests)}
	case q.maxUnits > 0 && used.ReadUnits >= q.maxUnits:
		return &Error{Sentinel: ErrCapReached, Op: "MaxReadUnits", Limit: q.maxUnits, Used: used.ReadUnits}
	}
	return nil
}

// resume is where a call stopped now would continue: the cursor it started
// from when it has sent nothing, else the last position DynamoDB evaluated.
func (pg *pager[T]) resume() cursorPos {
	if pg.total.Requests == 0 {
		return pg.p.start
	}
	return cursorPos{at: pg.pos}
}

// request builds the request that asks for limit items (0: no Limit) from
// the pager's position. Explain shows the first one.
func (pg *pager[T]) request(limit int) *dynamodb.QueryInput {
	in := pg.p.input
	if limit > 0 {
		in.Limit = aws.Int32(int32(min(limit, maxRequestItems)))
	}
	in.ExclusiveStartKey = pg.esk
	return &in
}

// next sends one request asking for limit items (0: no Limit) and returns the
// items and whether DynamoDB has more.
func (pg *pager[T]) next(ctx context.Context, limit int) ([]map[string]types.AttributeValue, bool, error) {
	in := pg.request(limit)
	ctx = withStats(ctx, &pg.total) // the requests' throttles (throttles.go)
	out, err := pg.q.t.client.Query(ctx, in, pg.opts...)
	if err != nil && pg.alt != nil && isValidation(err) {
		// The server refused the start key built before the cursor's next
		// item (DynamoDB accepts any key value in the query's range, but a
		// server may not): start after the page's last item instead, as a
		// cursor without a next item does, now and on later pages.
		pg.q.t.memo.noStartBefore.Store(true)
		pg.total.Requests++
		pg.esk, pg.alt = pg.alt, nil
		in = pg.request(limit)
		out, err = pg.q.t.client.Query(ctx, in, pg.opts...)
	}
	pg.alt = nil
	if err != nil {
		return nil, false, fmt.Errorf("ddbindex: query %s: %w", indexLabel(pg.p.def.name), err)
	}
	last := Stats{Requests: 1, Read: int(out.ScannedCount), Filtered: int(out.ScannedCount - out.Count)}
	if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
		last.ReadUnits = *out.ConsumedCapacity.CapacityUnits
	}
	pg.total.add(last)
	// A response whose last evaluated item was not returned ended in dead
	// items: the next request may be the start of a run.
	tailDead := out.Count > 0 && len(out.LastEvaluatedKey) > 0 &&
		!sameKey(pg.p.def, out.Items[len(out.Items)-1], out.LastEvaluatedKey)
	pg.size.observe(int(out.ScannedCount), int(out.Count), last.ReadUnits, aws.ToBool(in.ConsistentRead), tailDead)
	pg.size.sample(out.Items)
	if len(out.LastEvaluatedKey) == 0 {
		return out.Items, false, nil
	}
	pos, err := pg.p.def.positionOf(out.LastEvaluatedKey)
	if err != nil {
		return nil, false, fmt.Errorf("%w: LastEvaluatedKey of %s does not decode: %v", ErrNoProgress, indexLabel(pg.p.def.name), err)
	}
	if pg.pos != nil && slices.Equal(pos, pg.pos) {
		return nil, false, fmt.Errorf("%w: %s answered with LastEvaluatedKey equal to the ExclusiveStartKey it was sent", ErrNoProgress, indexLabel(pg.p.def.name))
	}
	// A position met before means a cycle (A, B, A, ...): as endless as
	// standing still.
	if pg.seen == nil {
		pg.seen = map[string]struct{}{}
		if pg.pos != nil {
			pg.seen[positionKey(pg.pos)] = struct{}{}
		}
	}
	k := positionKey(pos)
	if _, again := pg.seen[k]; again {
		return nil, false, fmt.Errorf("%w: %s answered with a LastEvaluatedKey it had already answered in this call", ErrNoProgress, indexLabel(pg.p.def.name))
	}
	pg.seen[k] = struct{}{}
	pg.pos, pg.esk = pos, out.LastEvaluatedKey
	return out.Items, true, nil
}

// positionKey is a position as one map key (texts length-prefixed, since
// they may hold any byte).
func positionKey(pos position) string {
	var b []byte
	for _, t := range pos {
		b = appendString(b, t)
	}
	return string(b)
}

// cursor mints the cursor for c, or "" for none. A cursor whose next
// position would make it longer than Options.MaxCursorBytes is minted
// without it.
func (pg *pager[T]) cursor(c cursorPos) (string, error) {
	if c.at == nil {
		return "", nil
	}
	d, o := pg.p.def, &pg.q.t.opts
	if o.PlainCursors {
		c.next = nil
	}
	if c.next != nil {
		if tok := encodeCursor(d, c, pg.q.desc, o.signingKey()); len(tok) <= o.MaxCursorBytes {
			return tok, nil
		}
		c.next = nil
	}
	tok := encodeCursor(d, c, pg.q.desc, o.signingKey())
	if len(tok) > o.MaxCursorBytes {
		// Minting it would hand the caller a cursor the next call refuses.
		return "", queryErr(d.name, "the cursor after this page is %d bytes, over Options.MaxCursorBytes (%d): raise it for keys this long", len(tok), o.MaxCursorBytes)
	}
	return tok, nil
}

// startsBefore reports whether the next page of a cursor at c can start just
// before c.next, skipping everything between c.at and it.
func (pg *pager[T]) startsBefore(c cursorPos) bool {
	if pg.q.t.memo.noStartBefore.Load() {
		return false
	}
	_, ok := pg.p.def.startKeyBefore(c.next, c.at, pg.q.desc, pg.p.kc)
	return ok
}

// pageWant is how many live items a call reads for a page of limit: one more
// with peek, so that the cursor is "" when nothing live follows (fill drops
// the extra item where it may cost another read unit: see sizer.request).
func pageWant(limit int, peek bool) int {
	limit = min(limit, maxPageItems)
	if peek {
		return limit + 1
	}
	return limit
}

// failedFill reports what a page fill that failed with err (nil: did not
// fail) had read, s, to ReportTo's Stats and to the call's telemetry: the
// caller has no Page to take them from, and a read that fails part way
// (throttled, ErrNoProgress) is when costs matter most. A fill that stops
// at a cap returns its Page, which reports them.
func (q Query[T]) failedFill(ctx context.Context, err error, s Stats) {
	if err == nil || asKind(err, ErrCapReached) != nil {
		return
	}
	if q.report != nil {
		q.report.add(s)
	}
	callFrom(ctx).readStats(s)
}

// fill reads one page of up to limit live items (of a sharded index: see
// fillSharded).
func fill[T any](ctx context.Context, q Query[T], p *plan, limit int, peek bool, optFns []func(*dynamodb.Options)) (_ *Page[T], err error) {
	if p.done {
		p.end = endNone
		return &Page[T]{Items: []T{}}, nil
	}
	if p.shard != nil {
		return fillSharded(ctx, q, p, limit, peek, optFns)
	}
	pg := newPager(q, p, peek, optFns)
	defer pg.remember()
	defer func() { q.failedFill(ctx, err, pg.total) }()
	limit = min(limit, maxPageItems)
	// One live item beyond the page tells whether another page exists: the
	// cursor is then "" exactly when nothing live follows, unless the
	// request that fills the page leaves it out (it may cost another read
	// unit: see sizer.request), when the cursor may lead to an empty page.
	// Page boundaries depend on the live items alone (a GSI and an index
	// table agree on them).
	want := pageWant(limit, peek)
	var raw []map[string]types.AttributeValue
	var capErr error
	var end cursorPos
	// through is the last position evaluated while the page held exactly
	// limit items: everything after the page's last item up to it was read
	// dead (nil: none past that item).
	var through position
	blind := false // the look-ahead was left out because no size was known
	more := true
	for len(raw) < want && more {
		if err := pg.capped(); err != nil {
			if len(raw) < limit {
				capErr, end = err, pg.resume()
			}
			break
		}
		size, ahead := pg.size.request(len(raw), limit, want)
		if want > limit && !ahead {
			// Without the look-ahead item the cursor may lead to an empty
			// page, as DynamoDB's own LastEvaluatedKey does. Decided blind
			// (no size known), a request that may still fill the page
			// decides again once a response shows the items' size.
			want, blind = limit, pg.size.addedBytes() == 0
		}
		var items []map[string]types.AttributeValue
		var err error
		items, more, err = pg.next(ctx, size)
		if err != nil {
			return nil, err
		}
		raw = append(raw, items...)
		if len(raw) == limit && more {
			through = pg.pos
		}
		if blind && len(raw) < limit {
			want, blind = pageWant(limit, peek), false
		}
		if len(raw) >= limit {
			// The page is full. The look-ahead item came with it or does
			// not come: a request for it alone would cost a request and
			// at least half a read unit, more than the empty page its
			// absence may cost.
			break
		}
	}
	p.end = fillEnd(len(raw), limit, !more, capErr)
	if len(raw) > limit || (len(raw) == limit && more && capErr == nil) {
		end.digest = p.digest
		var err error
		if end.at, err = p.def.positionOf(raw[limit-1]); err != nil {
			return nil, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(p.def.name), err)
		}
		if len(raw) > limit {
			// The look-ahead item: live, and everything between it and the
			// page's last item was read and found dead.
			if end.next, err = p.def.positionOf(raw[limit]); err != nil {
				return nil, fmt.Errorf("%w: an item of %s has unreadable keys: %w", ErrMalformedItem, indexLabel(p.def.name), err)
			}
		}
		if through != nil && !slices.Equal(through, end.at) && (end.next == nil || !pg.startsBefore(end)) {
			// No start key just before the next live item (or no such item
			// read): the next page starts after the last position read.
			end.next, end.through, end.tied = through, true, !p.def.uniqueSort
		}
		pg.total.Dropped += len(raw) - limit
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
	pg.total.Returned = len(page.Items)
	page.Stats = pg.total
	if page.Cursor, err = pg.cursor(end); err != nil {
		return nil, err
	}
	return page, capErr
}

// fillEnd is what a page fill that read n live items for a page of limit
// found after its page (observe.go): a live item when it read more than
// the page, none when the index had nothing more (ended) and no cap cut it
// short, else unknown.
func fillEnd(n, limit int, ended bool, capErr error) int {
	switch {
	case n > limit:
		return endMore
	case ended && capErr == nil:
		return endNone
	}
	return endUnknown
}

// remember passes what the call learnt about the partition's live ratio to
// later calls.
func (pg *pager[T]) remember() {
	if !pg.memo {
		return
	}
	if live, read := pg.size.evidence(); read > 0 {
		// Calls from the partition's beginning (first pages, and All
		// without a cursor) all start at its head: one that plainly
		// contradicts what they remember finds the partition changed.
		// Calls from a cursor start at a different place each time, and
		// their entry is what those places hold in all.
		stale := pg.memoKey == pg.p.memoKey && contradicts(pg.size.prior, pg.size.weight, live, read)
		pg.q.t.memo.put(pg.memoKey, live, read, stale, pg.base)
	}
	if b := pg.size.liveBytes(); b > 0 && !pg.size.projected {
		pg.q.t.memo.putItemBytes(pg.memoKey, b)
		if pg.memoKey != pg.p.memoKey {
			// First pages learn the entries' size from later pages too.
			pg.q.t.memo.putItemBytes(pg.p.memoKey, b)
		}
	}
	if pg.size.runs > 0 {
		pg.q.t.memo.putRunLen(pg.memoKey, pg.size.runLen)
	}
}

// unmarshalItem reads an entry into a model value, and shows on it whether
// the entry is a tombstone (see showTombstone).
func (t *Table[T]) unmarshalItem(item map[string]types.AttributeValue, v *T) error {
	if err := itemDecoder.Decode(&types.AttributeValueMemberM{Value: item}, v); err != nil {
		return fmt.Errorf("%w: unmarshal %s: %w", ErrMalformedItem, t.s.model, err)
	}
	t.showTombstone(item, v)
	return nil
}

// itemDecoder decodes items as attributevalue.UnmarshalMap does, without
// making a decoder per item: a Decoder holds its options alone, and Decode
// changes nothing in it, so one serves every call at once.
var itemDecoder = attributevalue.NewDecoder()

// ---- request sizing ----------------------------------------------------------

// sizer chooses the Limit of each request of one call.
//
// It expects a live ratio p: what the call has read so far, blended with a
// prior from earlier calls in the same partition (the memo), and sizes a
// request so that it most often brings what is still needed:
//
//	need/p + margin·sqrt(need·(1-p))/p   (the negative binomial's mean, plus a margin)
//
// With no prior and nothing read, p is 1: the first request asks for what the
// page needs, as the naive loop does.
//
// A run of requests that return no live item (a streak) grows each request
// by the factor growth over the last, rounded up to fill the 4 KB read units
// it pays for anyway. When a streak ends, the sizer does not yet know whether
// it was a cluster of tombstones in a live partition or a stretch of a
// sparse one: it decides once the live ratio after the streak says whether
// it could have produced the streak by chance (see runEvidence). A cluster
// leaves the expected ratio as it was around it; a sparse stretch lowers it.
// Until then, no request grows by more than the factor growth over the last,
// so a wrong guess costs at most that much reading beyond the page, unless
// the last request ended in tombstones: then it may grow to what a live ratio
// about one standard deviation above the one read calls for (upperRatio),
// so that a sparse partition is read in a few requests.
//
// It also remembers how long the stretches without a live item were (runLen,
// from the call and the memo). Once a streak is too long to be chance at the
// expected ratio, the next request reads to where a stretch that long would
// end, plus what the page still needs: a partition whose runs of tombstones
// repeat (deletes in bursts, a feed pruned page by page) crosses each in two
// or three requests instead of O(log R). A stretch longer than remembered
// goes on growing from what the streak has read; one shorter costs the live
// items read past it, which the next page reads again.
type sizer struct {
	prior, weight float64 // the memo's live ratio and its weight in items (weight 0: none)
	live, read    float64 // settled evidence: what the call read, clusters of tombstones left out
	streak        int     // items read by the current streak
	pending       int     // items of the last streak, not yet judged
	after         [2]int  // live and read items since the pending streak ended
	exitDead      int     // dead items of the request that ended it
	exitLive      int     // and its live items
	exitRun       int     // of those, how many the remembered stretch length expected (see runLen)
	lastRead      int     // items the last request read
	total         int     // items the call read
	shard         bool    // one shard's stream of a merge: its prior pools every shard's reads, so its own reads do not bound it (see reach)
	tailDead      bool    // the last request returned live items, then read dead ones
	unitBytes     float64 // an item's size as the read units bound it (0: unknown)
	deadExtra     int     // the bytes a tombstone's two attributes add to an item
	sampled       [2]int  // items sized, and their bytes
	priorBytes    float64 // the mean live item size earlier calls read (0: unknown)
	projected     bool    // the query projects attributes: returned items are smaller than what is read
	runLen        float64 // the expected length of a stretch without a live item, once one was met (0: none known)
	runs          int     // stretches the call crossed
	jumped        bool    // the current streak read to where the remembered length ended
	firstRatio    float64 // the first request reads no more than this live ratio calls for (0: no bound; see newPager)
}

// itemBytes is the size the 4 KB fill assumes for an item: the tighter of
// two upper bounds, the one the read units give and the average of the live
// items returned plus what a tombstone adds to an item. 0 while neither is
// known. With a projection the items returned are smaller than the items
// read, so only the read units bound an item's size.
func (s *sizer) itemBytes() float64 {
	b := s.unitBytes
	if live := s.liveBytes(); live > 0 && !s.projected {
		if avg := live + float64(s.deadExtra); b == 0 || avg < b {
			b = avg
		}
	}
	return b
}

// liveBytes is the mean size of the live items the call sampled (0: none).
func (s *sizer) liveBytes() float64 {
	if s.sampled[0] == 0 {
		return 0
	}
	return float64(s.sampled[1]) / float64(s.sampled[0])
}

// request returns the Limit of a request of a call that holds have live
// items of a page of limit and wants want (limit+1 with the look-ahead
// item), and whether it reads for the look-ahead item. A request that may
// fill the page reads for it only where it costs no more read units than
// the page alone (see moreUnits).
func (s *sizer) request(have, limit, want int) (int, bool) {
	size := s.next(want - have)
	if want > limit && have < limit {
		if plain := s.next(limit - have); s.moreUnits(size, plain) {
			return plain, false
		}
	}
	return size, want > limit
}

// moreUnits reports whether a request of n items may pay more 4 KB read
// units than one of m, judged on addedBytes. While no size is known, it may
// whenever n > m: a first call in a partition then reads what the naive
// loop reads.
func (s *sizer) moreUnits(n, m int) bool {
	b := s.addedBytes()
	if b == 0 {
		return n > m
	}
	return math.Ceil(float64(n)*b/4096) > math.Ceil(float64(m)*b/4096)
}

// addedBytes is the size an item a longer request would add is expected to
// have: the live items' mean size (the items it would add are live ones),
// or with a projection the size the read units bound; 0 while unknown.
func (s *sizer) addedBytes() float64 {
	switch {
	case s.projected:
		return s.unitBytes // the items returned are smaller than what is read
	case s.liveBytes() > 0:
		return s.liveBytes()
	}
	return s.priorBytes
}

// maxSampled is how many items of a response sample sizes.
const maxSampled = 8

// sample sizes a few of the items a response returned.
func (s *sizer) sample(items []map[string]types.AttributeValue) {
	step := max(1, len(items)/maxSampled)
	for i := 0; i < len(items); i += step {
		s.sampled[0]++
		s.sampled[1] += av.ItemSize(items[i])
	}
}

// evidence is what the call has read, with the pending streak judged on
// what is known now: live and read items.
func (s *sizer) evidence() (live, read float64) {
	live, read = s.live, s.read
	if s.pending > 0 {
		l, r := s.judge()
		live, read = live+l, read+r
	}
	if s.streak > 0 && (read == 0 || float64(s.streak)*live/read < runEvidence) {
		read += float64(s.streak) // a final streak counts when the ratio explains it
	}
	return live, read
}

// judge decides whether the pending streak was a cluster, and returns the
// evidence it and what followed it add: a cluster's dead items (and the dead
// items of the request that ended it, most likely the cluster's end) do not
// count.
func (s *sizer) judge() (live, read float64) {
	l, r := float64(s.after[0]), float64(s.after[1])
	if s.exitRun > 0 {
		// The request that ended the streak was sized to read the rest of
		// a stretch as long as the earlier ones: the dead items it read,
		// up to that rest, belong to the stretch.
		run, r := float64(s.pending+s.exitRun), r-float64(s.exitRun)
		if run*l/r >= runEvidence {
			return l, r
		}
		return l, r + float64(s.pending+s.exitRun)
	}
	if float64(s.pending)*l/r >= runEvidence {
		return l, r - float64(s.exitTail())
	}
	return l, r + float64(s.pending)
}

// exitTail is how many of the dead items of the request that ended the
// pending streak were the streak's end rather than tombstones among its
// live items: its dead items less as many as the live ratio before the
// streak puts among that many live ones. Where tombstones are common
// around a cluster, leaving all its dead items out would count the request
// as all live, and later requests, sized for that ratio, would read too
// little.
func (s *sizer) exitTail() int {
	live, read := priorCounts(s.prior, s.weight)
	live, read = live+s.live, read+s.read
	if live <= 0 || live >= read {
		return s.exitDead
	}
	among := float64(s.exitLive) * (read - live) / live
	return max(0, s.exitDead-int(math.Round(among)))
}

// counts returns the live and read items the expected live ratio rests
// on: what the call read, the pending streak judged on what is known now,
// and the prior's items (see priorCounts: with no prior, one live item of
// one, optimistic, so a first request asks for what the page needs).
func (s *sizer) counts() (live, read float64) {
	live, read = s.live, s.read
	if s.pending > 0 {
		l, r := s.judge()
		live, read = live+l, read+r
	}
	pl, pr := priorCounts(s.prior, s.weight)
	return live + pl, read + pr
}

// priorCounts returns the live and read items a prior ratio of weight
// items counts for: at most priorWeight items, and with no prior (weight
// 0) one live item of one.
func priorCounts(prior, weight float64) (live, read float64) {
	w := min(weight, priorWeight)
	if w == 0 {
		return 1, 1
	}
	return prior * w, w
}

// ratio is the expected live ratio.
func (s *sizer) ratio() float64 {
	live, read := s.counts()
	return live / read
}

// upperRatio is a live ratio the partition most likely does not exceed: the
// live items counted raised by upperZ standard deviations of a Poisson
// count, and by upperZ² more (so that a count of 0 or 1 is raised too),
// over the items read. Sized for it, a request reads past the page
// only when the ratio is that much above what was read.
func (s *sizer) upperRatio() float64 {
	live, read := s.counts()
	return min(1, (live+upperZ*math.Sqrt(live)+upperZ*upperZ)/read)
}

// next returns the Limit for a request that still needs need live items.
func (s *sizer) next(need int) int {
	need = min(need, maxRequestItems)
	p := max(s.ratio(), 1.0/maxRequestItems)
	n := float64(need)
	size := sizeFor(n, p)
	if s.total == 0 && s.firstRatio > 0 {
		size = min(size, sizeFor(n, s.firstRatio))
	}
	if s.total > 0 && !s.shard {
		// However low the live ratio read so far, the partition may turn
		// dense right after it: after the call's first request, the size
		// the ratio calls for is at most reach times what the call has
		// read. (A streak's growth and a jump, below, rest on what the
		// streak and earlier stretches read instead.)
		size = min(size, max(n, reach*float64(s.total)))
	}
	switch {
	case s.streak > 0 && s.jumped:
		// The jump found no live item: the stretch is longer than the
		// remembered ones. Go on growing as the streak would have, not
		// from the jump.
		size = max(size, (growth-1)*float64(s.streak)+n)
	case s.streak > 0:
		size = max(size, growth*float64(s.lastRead))
		if rest := s.jumpRest(); rest > 0 {
			// Earlier stretches without a live item were this long: read
			// to where this one is expected to end, and on to what the
			// page still needs.
			size = max(size, rest+n)
		}
	case s.lastRead > 0 && s.pending > 0:
		// The streak may have been a cluster of tombstones before a denser
		// stretch: grow by the factor growth at most, or, when the last
		// request ended in tombstones (its live items did not come last,
		// as they do where a cluster just ended), to what a live ratio as
		// high as upperRatio calls for, whichever is more (in a sparse
		// partition, the live items read soon make that the larger).
		limit := growth * float64(s.lastRead)
		if s.tailDead {
			if pu := s.upperRatio(); pu < 1 {
				limit = max(limit, sizeFor(n, pu))
			}
		}
		size = min(size, max(n, limit))
	}
	if b := s.itemBytes(); (s.streak > 0 || s.tailDead) && b > 0 {
		// Expecting dead items: fill the read units this request pays for
		// anyway.
		units := math.Ceil(size * b / 4096)
		size = max(size, math.Floor(units*4096/b))
	}
	return max(need, int(min(math.Ceil(size), maxRequestItems)))
}

// sizeFor is how many items bring n live ones at the live ratio p: the
// negative binomial's mean, plus margin standard deviations.
func sizeFor(n, p float64) float64 {
	return (n + margin*math.Sqrt(n*(1-p))) / p
}

// observe takes in a response: items read, items returned (live), read
// units consumed, and whether it ended in dead items.
func (s *sizer) observe(read, live int, units float64, consistent, tailDead bool) {
	s.lastRead = read
	s.total += read
	defer func() { s.tailDead = tailDead }()
	if units > 0 && read > 0 {
		// Read units are whole 4 KB blocks (half a unit each when eventually
		// consistent), so units·4096/read bounds an item's size from above;
		// the smallest bound seen is the closest.
		per4K := 0.5
		if consistent {
			per4K = 1
		}
		b := units / per4K * 4096 / float64(read)
		if s.unitBytes == 0 || b < s.unitBytes {
			s.unitBytes = b
		}
	}
	switch {
	case live == 0:
		if s.streak == 0 && s.pending > 0 {
			s.settle() // a new streak: the last one is judged on what followed it
		}
		if !s.jumped && s.jumpRest() > 0 {
			s.jumped = true
		}
		s.streak += read
	case s.streak > 0:
		rest := s.jumpRest() // what next sized this request by
		if s.pending > 0 {
			s.settle()
		}
		s.exitRun = 0
		// The dead items of the request that ended the streak lie before
		// its live items, and after them too when it ended in dead items.
		run := float64(s.streak + read - live)
		if tailDead {
			run = float64(s.streak) + float64(read-live)/2
		}
		if rest > 0 {
			// Sized to read the rest of a stretch as long as the earlier
			// ones and what the page needed after it: the live items beyond
			// that need came where the stretch was expected to go on.
			s.exitRun = max(0, min(int(rest), read-live)-max(0, live-(read-int(rest))))
			run = float64(s.streak + s.exitRun)
		}
		s.noteRun(run)
		s.pending, s.streak, s.jumped = s.streak, 0, false
		s.after = [2]int{live, read}
		s.exitDead, s.exitLive = read-live, live
	case s.pending > 0:
		s.after[0] += live
		s.after[1] += read
	default:
		s.live += float64(live)
		s.read += float64(read)
	}
}

// noteRun takes in the length of a stretch without a live item that a
// request ended.
func (s *sizer) noteRun(n float64) {
	if s.runLen == 0 {
		s.runLen = n
	} else {
		s.runLen = s.runLen*memoDecay + n*(1-memoDecay)
	}
	s.runs++
}

// jumpWaste bounds, in items, what a jump is expected to read in vain: the
// chance of the streak at the expected live ratio times the remembered
// stretch length, which a wrong jump reads past the page. A longer
// remembered stretch thus asks for a longer streak: where half the entries
// are live, a streak of ten is common enough over five pages that jumping
// 500 entries on it would read some 250 live ones twice.
const jumpWaste = 0.1

// jumpRest is how many more dead items the current streak is expected to
// hold: what remains of the remembered stretch length, once the streak is
// itself too unlikely to be chance at the expected live ratio for what a
// wrong jump would cost (see jumpWaste; 0: none).
func (s *sizer) jumpRest() float64 {
	if s.streak == 0 || s.runLen <= float64(s.streak) || math.Pow(1-s.ratio(), float64(s.streak))*s.runLen > jumpWaste {
		return 0
	}
	return max(0, math.Floor(s.runLen)-float64(s.streak))
}

// settle makes the judgement of the pending streak final.
func (s *sizer) settle() {
	l, r := s.judge()
	s.live += l
	s.read += r
	s.pending, s.after, s.exitDead, s.exitLive, s.exitRun = 0, [2]int{}, 0, 0, 0
}

// ---- memo ------------------------------------------------------------------

// memoCap bounds the entries a Table remembers.
const memoCap = 4096

// memoShards is how many parts, each with its own lock, a memo has: a call
// locks only the part its key falls in, so calls on different indexes and
// partitions of one Table do not wait on one lock.
const memoShards = 16

// memoSeed spreads keys over a memo's parts.
var memoSeed = maphash.MakeSeed()

// memoDecay is how much an entry's evidence counts once a newer call adds
// its own.
const memoDecay = 0.5

// memoOnward ends the memo key of calls that go on from a cursor (see
// newPager).
const memoOnward = "\x00onward"

// memo remembers, per index, partition, sort condition, order and filter
// (and, on an unsharded index, whether the calls started from a cursor: see
// newPager), the live ratio earlier calls read, so that the first request of
// a call, page 1 included, is sized for it, and the entries' mean size
// (see merger.size). It is bounded (memoCap entries:
// memoCap/memoShards in each of its parts, the part's oldest forgotten
// first). It changes request sizes and, once the server has refused a
// start key placed just before a cursor's next position (noStartBefore),
// where later calls start; never results. Its zero value is empty and
// ready.
type memo struct {
	// noStartBefore is set once the server refused a start key built
	// before a cursor's next item: later pages start after the last item.
	noStartBefore atomic.Bool

	// changes numbers the changes calls found in partitions (see
	// memo.put), so that an entry can tell whether it started afresh
	// since another's last change.
	changes atomic.Uint64

	parts [memoShards]memoPart
}

// memoPart is the part of a memo that holds the keys that hash to it.
type memoPart struct {
	mu    sync.Mutex
	m     map[string]memoEntry
	order []string // keys, oldest first
}

type memoEntry struct {
	live, read float64
	bytes      float64 // the mean size of the entries read (0: unknown)
	runLen     float64 // the expected length of a stretch without a live item (0: unknown)
	changed    uint64  // first pages' entry: the last change a call found in it (see memo.changes; 0: none)
	base       uint64  // a cursor calls' entry: the first pages' change it last started afresh after (0: none)
}

// part returns the part of m that holds key.
func (m *memo) part(key string) *memoPart {
	return &m.parts[maphash.String(memoSeed, key)%memoShards]
}

// entry returns key's entry, if m has one.
func (m *memo) entry(key string) (memoEntry, bool) {
	if m == nil {
		return memoEntry{}, false
	}
	p := m.part(key)
	p.mu.Lock()
	e, ok := p.m[key]
	p.mu.Unlock()
	return e, ok
}

func (m *memo) get(key string) (ratio, weight float64) {
	e, _ := m.entry(key)
	return e.ratio()
}

// ratio returns the entry's live ratio and its weight in items (0, 0: no
// reads yet).
func (e memoEntry) ratio() (ratio, weight float64) {
	if e.read == 0 {
		return 0, 0
	}
	return e.live / e.read, e.read
}

// put adds what a call read to key's entry. What the entry held counts
// for priorWeight items at most, and then for memoDecay of that: a call
// that reads far more than the earlier ones, after the partition changed,
// outweighs them (a sizer weighs the prior at priorWeight items at most
// anyway, see priorCounts).
//
// With stale (the call found the partition changed, see contradicts), the
// live ratio and the stretch length the entry held are dropped, and the
// entry records the change. A call from a cursor passes base, the first
// pages' last change when it started: an entry that started afresh before
// that starts afresh now, once (a later call with the same base adds to
// what the first one read). The stretch length the call puts after (see
// putRunLen) blends what the call crossed with what it started from.
func (m *memo) put(key string, live, read float64, stale bool, base uint64) {
	if m == nil {
		return
	}
	p, e := m.edit(key)
	afresh := stale
	if stale {
		e.changed = m.changes.Add(1)
	}
	if base > e.base {
		afresh, e.base = true, base
	}
	switch {
	case afresh:
		e.live, e.read, e.runLen = 0, 0, 0
	case e.read > priorWeight:
		e.live, e.read = e.live*priorWeight/e.read, priorWeight
	}
	e.live, e.read = e.live*memoDecay+live, e.read*memoDecay+read
	p.m[key] = e
	p.mu.Unlock()
}

// Thresholds of contradicts.
const (
	// staleZ is how many standard deviations of the live count the prior
	// predicts a call's count must lie from it.
	staleZ = 3.0
	// staleFactor is how many times more, or fewer, live items than the
	// prior predicts a call must read: tombstones that gather in runs
	// spread the count far more than a binomial does.
	staleFactor = 4.0
)

// contradicts reports whether a call that read live items of read
// contradicts the prior live ratio (of weight items, 0: none) it was sized
// from so plainly that the partition most likely changed since the calls
// that made it: the count lies more than staleZ binomial standard
// deviations (plus one item) from what the prior predicts, and is over
// staleFactor times as many or under 1/staleFactor as many. Sized from a
// stale prior, the first request of every later call reads far too much
// (a prior from a sparse stretch now dense) or far too little: a
// contradicted prior is dropped rather than blended.
func contradicts(prior, weight, live, read float64) bool {
	if weight == 0 || read == 0 {
		return false
	}
	want := prior * read
	sd := math.Sqrt(want * (1 - prior))
	return math.Abs(live-want) > staleZ*sd+1 && (live > staleFactor*want || live*staleFactor < want)
}

// itemBytes returns the entry size remembered for key (0: none).
func (m *memo) itemBytes(key string) float64 {
	e, _ := m.entry(key)
	return e.bytes
}

// putItemBytes remembers the mean size of the entries a call read.
func (m *memo) putItemBytes(key string, bytes float64) {
	if m == nil {
		return
	}
	p, e := m.edit(key)
	e.bytes = bytes
	p.m[key] = e
	p.mu.Unlock()
}

// putRunLen remembers the expected stretch length a call ended with.
func (m *memo) putRunLen(key string, n float64) {
	if m == nil {
		return
	}
	p, e := m.edit(key)
	e.runLen = n
	p.m[key] = e
	p.mu.Unlock()
}

// edit locks the part of m that holds key and returns it with key's entry,
// adding the entry (and forgetting the part's oldest when it is full) if it
// is new. The caller stores the changed entry and unlocks the part. (A
// callback that changed the entry in place would move it to the heap.)
func (m *memo) edit(key string) (*memoPart, memoEntry) {
	p := m.part(key)
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]memoEntry{}
	}
	e, ok := p.m[key]
	if !ok {
		if len(p.order) >= memoCap/memoShards {
			delete(p.m, p.order[0])
			p.order = p.order[1:]
		}
		p.order = append(p.order, key)
	}
	return p, e
}

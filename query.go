package ddbindex

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the query builder and planFor, which turns a query into
// its DynamoDB request; the page fill that sends it is in pagefill.go.

// Query is one read of an index (or of the base table) of model T. It is an
// immutable builder: each method returns a changed copy, and errors wait for
// the call that runs it (Page, All, Exists, Explain). The zero Limit means
// "every item" for All and a page of 100 for Page.
//
//	page, err := tickets.Query("by_status", "TEAM-7").
//		Where(ddbindex.Eq("open")).Desc().Limit(20).After(cursor).Page(ctx)
type Query[T any] struct {
	t           *Table[T]
	index       string
	partition   []any
	cond        SortCondition
	desc        bool
	limit       int
	cursor      string
	filter      *expression.ConditionBuilder
	project     []string
	consistent  bool
	maxRequests int
	maxUnits    float64
	deleted     bool // include tombstones
	report      *Stats
	via         Kind // the form Via chose, when hasVia
	hasVia      bool
}

// defaultPageSize is the Limit of a Page call that sets none.
const defaultPageSize = 100

// Query starts a read of the named index ("" reads the base table) in the
// partition given by the partition key component values, in declaration
// order.
func (t *Table[T]) Query(index string, partition ...any) Query[T] {
	return Query[T]{t: t, index: index, partition: partition}
}

// Where sets the condition on leading sort components.
func (q Query[T]) Where(c SortCondition) Query[T] { q.cond = c; return q }

// Desc reads in descending sort order. A query that does not call it reads
// in ascending order.
func (q Query[T]) Desc() Query[T] { q.desc = true; return q }

// Limit sets how many live items a page holds (Page), the most items an
// iteration yields (All), and is ignored by Exists. Tombstones and items the
// filter rejects do not count. A Page without a Limit (or with Limit 0)
// holds up to 100 items.
func (q Query[T]) Limit(n int) Query[T] { q.limit = n; return q }

// After continues after the position a previous page's Cursor names. An
// empty cursor starts at the beginning.
func (q Query[T]) After(cursor string) Query[T] { q.cursor = cursor; return q }

// Filter adds a condition on non-key attributes, evaluated by DynamoDB after
// the key condition. Each call ANDs its condition with those of earlier
// calls, and the whole with the tombstone filter:
//
//	q.Filter(expression.Name("prio").GreaterThan(expression.Value(2))).
//		Filter(expression.Name("assignee").AttributeExists())
//
// filters a softdelete model's index with
//
//	((attribute_not_exists(_deleted)) OR (_deleted <> true)) AND
//	((prio > 2) AND (attribute_exists(assignee)))
//
// The condition's names are the caller's: expression.Name reads "a.b" as
// the path a, then b; an attribute whose name holds a dot is
// expression.NameNoDotSplit("a.b"). A condition on a key attribute of the
// index read fails with ErrInvalidQuery before any request (DynamoDB
// refuses it): put it in Where instead. So does a value DynamoDB would
// refuse or change, checked as a write's values are (see [Table.Marshal]).
func (q Query[T]) Filter(c expression.ConditionBuilder) Query[T] {
	if q.filter != nil {
		c = q.filter.And(c)
	}
	q.filter = &c
	return q
}

// Project reads only the named attributes, and the key attributes, which
// cursors need (and the tombstone marker, when the model has a field tagged
// ddbindex:"deleted", which reads it). Each call adds its attributes to those of earlier calls, in
// the order first named, each once: Project("title").Project("prio",
// "title") reads title, prio and the keys. A Query without Project reads
// every attribute. Each name is an attribute's, taken whole, never a path:
// Project("user.id") reads the attribute named user.id. A name with "[" or
// "]" in it, which DynamoDB expressions read as a list index, fails with
// ErrInvalidQuery.
func (q Query[T]) Project(attrs ...string) Query[T] {
	names := slices.Clip(q.project) // a copy shares the array: append copies
	for _, a := range attrs {
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	q.project = names
	return q
}

// ConsistentRead asks for strongly consistent reads. A GSI cannot serve
// them: the query then fails before any request.
func (q Query[T]) ConsistentRead() Query[T] { q.consistent = true; return q }

// MaxRequests caps the requests one call sends. When the cap stops a call,
// it returns what it read with a cursor to continue, and an error matching
// [ErrCapReached].
func (q Query[T]) MaxRequests(n int) Query[T] { q.maxRequests = n; return q }

// MaxReadUnits caps the read capacity units one call consumes, as DynamoDB
// reports them; like MaxRequests, reaching it returns the items so far, a
// cursor, and [ErrCapReached]. The request that crosses the cap completes.
func (q Query[T]) MaxReadUnits(units float64) Query[T] { q.maxUnits = units; return q }

// IncludeDeleted returns tombstones too: for administrative reads only. The
// model's field tagged ddbindex:"deleted", if it has one, is true for them.
func (q Query[T]) IncludeDeleted() Query[T] { q.deleted = true; return q }

// ReportTo adds each call's costs to *s (for All and Exists, which return no
// Page, and for a call that fails part way, which returns none either).
func (q Query[T]) ReportTo(s *Stats) Query[T] { q.report = s; return q }

// Page is one page of a query.
type Page[T any] struct {
	// Items are the live items of the page, in index order.
	Items []T
	// Cursor continues after the last item; it is "" when no live item
	// follows. The request that fills the page asks for one live item more
	// to tell, unless that item would cost another 4 KB read unit by the
	// item sizes read so far, or no size is known yet (a first call in a
	// partition): then the cursor may lead to an empty page, as DynamoDB's
	// LastEvaluatedKey may. It also names how far the reads went past the
	// last item (the next live item, or the last position evaluated), all
	// of it dead: the next page, read with the same filter, starts there
	// rather than reading again the tombstones and filtered items between,
	// so an item that only becomes live between the two after this page was
	// read is not returned, as an item inserted before a LastEvaluatedKey is
	// not. A page cut short by a cap has a cursor too (see ErrCapReached).
	Cursor string
	// Stats is what the page cost.
	Stats Stats
}

// Stats is what a call cost.
type Stats struct {
	Requests  int     // Query requests sent
	Read      int     // items DynamoDB read (ScannedCount)
	Returned  int     // live items returned to the caller
	Filtered  int     // items DynamoDB read and filtered out: tombstones, and items the Filter rejected
	Dropped   int     // live items read beyond the page; the next page returns them again
	ReadUnits float64 // read capacity units consumed, as DynamoDB reports them
	// Throttled counts the throttling reasons DynamoDB gave the requests'
	// attempts, the SDK's retries included: one per reason of each
	// throttled attempt (one for a throttle without reasons). Throttles
	// lists each distinct reason and resource once, in the order met: the
	// reason (such as IndexReadKeyRangeThroughputExceeded) and the ARN of
	// the table or index DynamoDB throttled (see [Error]). Attempts the
	// SDK made count only with a client that runs per-call options (a
	// *dynamodb.Client does); with another, the reasons of a failed
	// request's error alone.
	Throttled int
	Throttles []types.ThrottlingReason
}

func (s *Stats) add(o Stats) {
	s.Requests += o.Requests
	s.Read += o.Read
	s.Returned += o.Returned
	s.Filtered += o.Filtered
	s.Dropped += o.Dropped
	s.ReadUnits += o.ReadUnits
	s.Throttled += o.Throttled
	s.Throttles = distinctThrottles(s.Throttles, o.Throttles)
}

// plan is a query translated for one index: everything a request needs but
// its Limit and ExclusiveStartKey.
type plan struct {
	def        *layout
	input      dynamodb.QueryInput
	kc         *keyCond
	start      cursorPos  // from the cursor; zero at the beginning
	digest     readDigest // what the query counts as live (see readDigest)
	memoKey    string     // the page fill's memo entry
	memoOnward string     // the memo entry of page fills that start from a cursor (see newPager)
	shard      *shardPlan // for a sharded index; nil otherwise
	route      string     // how the form was chosen (see form)
	// keepRaw makes the page fill keep the items of the page it read in
	// raw, for a ReadObserver (observe.go).
	keepRaw bool
	raw     []map[string]types.AttributeValue
	// done: the cursor lies past the sort condition's range, so nothing
	// follows it and no request is sent.
	done bool
	// end is what the page fill found after its page (endUnknown, endMore,
	// endNone: observe.go): a page whose cursor is not "" may be followed
	// by nothing live when its fill did not read the look-ahead item.
	end int
}

// readDigest digests what the query counts as live, for the next position
// of its cursors: the caller's filter, with its names and values, and
// IncludeDeleted. The tombstone rule is left out: each layout applies its
// own, and each form of an index takes the other's cursors.
func (q Query[T]) readDigest() (readDigest, error) {
	h := sha256.New()
	if q.deleted {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	if q.filter != nil {
		expr, err := expression.NewBuilder().WithFilter(*q.filter).Build()
		if err != nil {
			return readDigest{}, err
		}
		b := appendString(nil, aws.ToString(expr.Filter()))
		for _, k := range slices.Sorted(maps.Keys(expr.Names())) {
			b = appendString(appendString(b, k), expr.Names()[k])
		}
		for _, k := range slices.Sorted(maps.Keys(expr.Values())) {
			b = appendAV(appendString(b, k), expr.Values()[k])
		}
		h.Write(b)
	}
	var d readDigest
	copy(d[:], h.Sum(nil))
	return d, nil
}

// appendAV appends a canonical encoding of an attribute value: a type letter,
// then its content, lengths prefixed, map keys sorted.
func appendAV(b []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendString(append(b, 'S'), v.Value)
	case *types.AttributeValueMemberN:
		return appendString(append(b, 'N'), v.Value)
	case *types.AttributeValueMemberB:
		return appendString(append(b, 'B'), string(v.Value))
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(b, 'T')
		}
		return append(b, 'F')
	case *types.AttributeValueMemberNULL:
		return append(b, '0')
	case *types.AttributeValueMemberSS:
		b = binary.AppendUvarint(append(b, 's'), uint64(len(v.Value)))
		for _, e := range v.Value {
			b = appendString(b, e)
		}
		return b
	case *types.AttributeValueMemberNS:
		b = binary.AppendUvarint(append(b, 'n'), uint64(len(v.Value)))
		for _, e := range v.Value {
			b = appendString(b, e)
		}
		return b
	case *types.AttributeValueMemberBS:
		b = binary.AppendUvarint(append(b, 'b'), uint64(len(v.Value)))
		for _, e := range v.Value {
			b = appendString(b, string(e))
		}
		return b
	case *types.AttributeValueMemberL:
		b = binary.AppendUvarint(append(b, 'L'), uint64(len(v.Value)))
		for _, e := range v.Value {
			b = appendAV(b, e)
		}
		return b
	case *types.AttributeValueMemberM:
		b = binary.AppendUvarint(append(b, 'M'), uint64(len(v.Value)))
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			b = appendAV(appendString(b, k), v.Value[k])
		}
		return b
	}
	return append(b, '?')
}

// plan validates q and translates it for its index, decoding the cursor. It
// sends nothing.
func (q Query[T]) plan() (*plan, error) {
	d, err := q.t.index(q.index)
	if err != nil {
		return nil, err
	}
	d, route, err := q.form(d)
	if err != nil {
		return nil, err
	}
	p, err := q.planFor(d)
	if err == nil {
		p.route = route
	}
	return p, err
}

// tombstoneOnly reports whether the tombstone rule is the only filter of
// q's reads of d: then the items filtered out are the tombstones read.
func (q Query[T]) tombstoneOnly(d *layout) bool {
	return d.filtersTombstones() && !q.deleted && q.filter == nil
}

// instrument starts q's call state (telemetry.go) for operation o, on the
// index as declared until the plan picks its form.
func (q Query[T]) instrument(ctx context.Context, o op) (context.Context, *call) {
	if q.t.tel == nil {
		return ctx, nil
	}
	d, _ := q.t.index(q.index)
	return q.t.tel.start(ctx, o, d)
}

// planFor translates q for d. It is the only code that turns a logical query
// into a DynamoDB request but for two additions: the page fill
// (pager.request) sets each request's Limit and ExclusiveStartKey, and a
// sharded index's read (plan.shardInput) gives each shard's request its
// partition value and the sort key range after the cursor. What differs
// between the kinds of index, it reads from the layout d.
func (q Query[T]) planFor(d *layout) (*plan, error) {
	if q.limit < 0 {
		return nil, queryErr(d.name, "Limit %d is negative", q.limit)
	}
	if q.maxRequests < 0 || q.maxUnits < 0 || math.IsNaN(q.maxUnits) {
		return nil, queryErr(d.name, "MaxRequests %d and MaxReadUnits %g must not be negative", q.maxRequests, q.maxUnits)
	}
	if q.consistent && !d.consistent {
		return nil, queryErr(d.name, "a GSI cannot serve consistent reads; read the base table, or make the index an index table")
	}
	pkVal, pkTexts, err := d.partition(q.partition)
	if err != nil {
		return nil, err
	}
	kc, err := d.sortCond(q.cond)
	if err != nil {
		return nil, err
	}
	b := expression.NewBuilder()
	sharded := d.pk.shards > 0
	if sharded && q.maxRequests > 0 && q.maxRequests < d.pk.shards {
		return nil, queryErr(d.name, "MaxRequests %d is below the %d requests (one per shard) that any page of a sharded index needs", q.maxRequests, d.pk.shards)
	}
	// A derived sharded key's condition is written per shard (shardInput);
	// a sharded NativeGSI's is this one and its shard's.
	built := !sharded || d.pk.attrs != nil
	if built {
		b = b.WithKeyCondition(d.keyCondition(pkVal, pkTexts, kc))
	}
	var filter *expression.ConditionBuilder
	if d.filtersTombstones() && !q.deleted {
		live := liveCondition(&q.t.opts)
		filter = &live
	}
	if q.filter != nil {
		if err := d.checkFilter(*q.filter); err != nil {
			return nil, err
		}
	}
	if q.filter != nil {
		if filter == nil {
			filter = q.filter
		} else {
			both := filter.And(*q.filter)
			filter = &both
		}
	}
	if filter != nil {
		b, built = b.WithFilter(*filter), true
	}
	if len(q.project) > 0 {
		for _, n := range q.project {
			if strings.ContainsAny(n, "[]") {
				return nil, queryErr(d.name, "Project(%q): a projection names whole attributes, and DynamoDB expressions read a bracket as a list index, so no projection can name an attribute whose name holds one", n)
			}
		}
		names := q.t.withTombstoneMarker(slices.Clone(q.project))
		for _, k := range d.readKeys {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
		p := expression.NamesList(expression.NameNoDotSplit(names[0]))
		for _, n := range names[1:] {
			p = p.AddNames(expression.NameNoDotSplit(n))
		}
		b, built = b.WithProjection(p), true
	}
	var expr expression.Expression
	if built { // a Builder with no expression set does not build
		if expr, err = b.Build(); err != nil {
			return nil, queryErr(d.name, "%v", err)
		}
	}
	digest, err := q.readDigest()
	if err != nil {
		return nil, queryErr(d.name, "%v", err)
	}
	p := &plan{def: d, kc: kc, digest: digest}
	// The memo's entry: the index, the partition, the sort condition, the
	// order (a partition's two ends may hold tombstones very differently)
	// and what counts as live.
	order := "a"
	if q.desc {
		order = "d"
	}
	// One string holds both keys: the key of calls that start from a
	// cursor is the first pages' key with memoOnward appended.
	both := string(appendString(appendString([]byte(d.name), positionKey(pkTexts)), fmt.Sprint(kc))) + order + string(digest[:]) + memoOnward
	p.memoKey, p.memoOnward = both[:len(both)-len(memoOnward)], both
	p.input = dynamodb.QueryInput{
		TableName:                 aws.String(q.t.tableOf(d)),
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(!q.desc),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if q.consistent {
		p.input.ConsistentRead = aws.Bool(true)
	}
	if d.index != "" {
		p.input.IndexName = aws.String(d.index)
	}
	if q.cursor != "" {
		c, err := decodeCursor(d, q.cursor, q.desc, &q.t.opts)
		if err != nil {
			return nil, err
		}
		at, err := p.checkPosition(c.at, pkTexts, q.desc, "")
		if err != nil {
			return nil, err
		}
		if c.next != nil && c.digest != digest {
			// Another filter, or tombstones included: what lies between the
			// position and next may be live for this read.
			c.next = nil
		}
		next := 0
		if c.next != nil {
			if next, err = p.checkPosition(c.next, pkTexts, q.desc, "next position: "); err != nil {
				return nil, err
			}
			if !d.follows(c.next, c.at, q.desc) {
				return nil, cursorErr(nil, "the next position does not follow the position")
			}
		}
		// A cursor minted under another sort condition goes on under this
		// one: a position before its range starts at the range, one after
		// it (or a next position after it: nothing between the two was
		// live) leaves nothing to read.
		switch {
		case at < 0:
			c = cursorPos{}
		case at > 0 || next > 0:
			c, p.done = cursorPos{}, true
		}
		p.start = c
	}
	if sharded {
		if p.shard, err = d.shardPlan(pkTexts, kc, p.start, q.desc); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkPosition verifies that a cursor's position lies in the query's
// partition and makes a valid ExclusiveStartKey, and says where it lies
// against the sort condition's range in the query's order: -1 before it, 0
// inside, 1 after it (see keyCond.place). what prefixes the reasons.
func (p *plan) checkPosition(pos position, partition []string, desc bool, what string) (int, error) {
	d := p.def
	for i, c := range d.pk.parts {
		if pos[d.slot(c.f)] != partition[i] {
			return 0, cursorErr(nil, "%sminted for another partition", what)
		}
	}
	if _, err := d.startKey(pos); err != nil {
		return 0, cursorErr(err, "%sposition does not make a start key", what)
	}
	if p.kc == nil {
		return 0, nil
	}
	ord, err := d.sk.ordered(d.textOf(pos))
	if err != nil {
		return 0, cursorErr(err, "%sposition does not encode", what)
	}
	return p.kc.place(ord, desc), nil
}

// Page reads one page: up to Limit live items (100 when unset) and the
// cursor that continues after them. It reads on through tombstones
// and filtered items until the page is full or the partition ends.
//
// If a cap set with MaxRequests or MaxReadUnits stops it first, Page returns
// the page read so far, with a cursor that continues after it, and an error
// matching [ErrCapReached].
//
// optFns are applied to every request Page sends, as the SDK's own per-call
// options; so it is for All and Exists.
func (q Query[T]) Page(ctx context.Context, optFns ...func(*dynamodb.Options)) (page *Page[T], err error) {
	if err := q.t.callable(ctx, "Page", ErrInvalidQuery, optFns...); err != nil {
		return nil, err
	}
	ctx, c := q.instrument(ctx, opPage)
	defer func() { endPage(ctx, c, page, err) }()
	p, err := q.plan()
	if err != nil {
		return nil, err
	}
	c.planned(ctx, p, q.tombstoneOnly(p.def))
	limit := q.limit
	if limit == 0 {
		limit = defaultPageSize
	}
	observe := q.observing(p)
	p.keepRaw = observe
	page, err = fill[T](ctx, q, p, limit, true, optFns)
	if q.report != nil && page != nil {
		q.report.add(page.Stats)
	}
	if page != nil {
		c.cursor(page.Cursor != "")
	}
	if observe && err == nil {
		q.observePage(ctx, p, page, limit, true)
	}
	return page, err
}

// All iterates over every live item from the cursor on (at most Limit items
// when Limit is set), reading page after page until DynamoDB returns no
// LastEvaluatedKey. An error ends the iteration as its last element.
//
// Without a Limit each request reads as much as DynamoDB returns (1 MB); with
// one, it asks for what is still needed, growing through tombstones as Page
// does, so a small Limit does not read the whole partition.
func (q Query[T]) All(ctx context.Context, optFns ...func(*dynamodb.Options)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := q.t.callable(ctx, "All", ErrInvalidQuery, optFns...); err != nil {
			yield(zero, err)
			return
		}
		ctx, c := q.instrument(ctx, opAll)
		if c != nil {
			var failed error
			defer func() { c.end(ctx, failed) }()
			caller := yield
			yield = func(v T, err error) bool {
				if err != nil {
					failed = err
				}
				return caller(v, err)
			}
		}
		p, err := q.plan()
		if err != nil {
			yield(zero, err)
			return
		}
		c.planned(ctx, p, q.tombstoneOnly(p.def))
		var pages *allPages[T] // nil: not observed
		if q.observing(p) {
			pages = &allPages[T]{q: q, p: p}
		}
		if p.done {
			// The cursor lies past the sort condition's range: nothing
			// follows it, and no request is sent, as for Page. (The plan
			// starts at the range, which would yield what precedes the
			// cursor.)
			pages.flush(ctx, Stats{}, endNone)
			c.readStats(Stats{})
			return
		}
		if p.shard != nil {
			q.allSharded(ctx, p, optFns, yield, pages)
			return
		}
		pager := newPager(q, p, true, optFns)
		yielded := 0
		var observedStats Stats // pager.total when the last page was observed
		flush := func(end int) {
			if pages.flush(ctx, statsSince(pager.total, observedStats), end) {
				observedStats = pager.total
			}
		}
		defer func() {
			pager.remember()
			// Each request counts once, also when the next one failed;
			// live items read but not yielded (beyond Limit, or after the
			// caller stopped) are dropped.
			s := pager.total
			s.Returned = yielded
			s.Dropped = s.Read - s.Filtered - yielded
			if q.report != nil {
				q.report.add(s)
			}
			c.readStats(s)
		}()
		for q.limit == 0 || yielded < q.limit {
			if err := pager.capped(); err != nil {
				yield(zero, err)
				return
			}
			size := 0
			if q.limit > 0 {
				size = pager.size.next(min(q.limit, maxPageItems) - yielded)
			}
			items, more, err := pager.next(ctx, size)
			if err != nil {
				yield(zero, err)
				return
			}
			if pages != nil {
				// The page: the items of this request that the iteration
				// yields (Limit may cut it), observed before they are.
				n := len(items)
				if q.limit > 0 {
					n = min(n, q.limit-yielded)
				}
				pages.add(items[:n]...)
				end := endUnknown
				if !more && n == len(items) {
					end = endNone
				}
				flush(end)
			}
			for i := range items {
				if q.limit > 0 && yielded == q.limit {
					return
				}
				var v T
				if err := q.t.unmarshalItem(items[i], &v); err != nil {
					yield(zero, err)
					return
				}
				yielded++
				if !yield(v, nil) {
					return
				}
			}
			if !more {
				return
			}
		}
	}
}

// Exists reports whether the query has at least one live item. It starts
// with the smallest read (Limit 1) and reads on through tombstones, growing
// the request as it learns how many there are.
func (q Query[T]) Exists(ctx context.Context, optFns ...func(*dynamodb.Options)) (_ bool, err error) {
	if err := q.t.callable(ctx, "Exists", ErrInvalidQuery, optFns...); err != nil {
		return false, err
	}
	ctx, c := q.instrument(ctx, opExists)
	var page *Page[T]
	defer func() { endPage(ctx, c, page, err) }()
	p, err := q.plan()
	if err != nil {
		return false, err
	}
	c.planned(ctx, p, q.tombstoneOnly(p.def))
	observe := q.observing(p)
	p.keepRaw = observe
	page, err = fill[T](ctx, q, p, 1, false, optFns)
	if q.report != nil && page != nil {
		q.report.add(page.Stats)
	}
	if observe && err == nil {
		q.observePage(ctx, p, page, 1, false)
	}
	if page != nil && len(page.Items) > 0 {
		return true, nil
	}
	return false, err
}

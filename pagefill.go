package ddbindex

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file owns the page-fill loop. DynamoDB applies Limit before the
// filter, so one request may return fewer live items than asked, or none
// with a LastEvaluatedKey: the loop reads on until the page is full or the
// partition ends. A Query's cost is the size it reads, rounded up to 4 KB once
// per request, so when tombstones are dense the loop asks for more than it
// still needs and drops what it read beyond the page: fewer, larger requests
// cost fewer round trips and no more read units. The cursor is rebuilt from
// the last item returned, so dropped items come again on the next page.

// maxRequestItems caps the Limit of one request. At a few hundred bytes an
// item, it stays well below the 1 MB DynamoDB reads per request.
const maxRequestItems = 1000

// maxGrowth caps a request at this many times the items the call has read so
// far. While few items have been read the live ratio is a guess; a request
// sized on a guess that is too pessimistic reads, and pays for, items far
// beyond the page. Growing by a bounded factor keeps that cost in proportion
// to what the call has already spent, and still crosses any run of
// tombstones in a few requests (1000 items from a page of 20 in three).
const maxGrowth = 10

// The live ratio a request is sized with is (live + priorLive) / (read +
// priorRead): what the call has seen, plus a pessimistic prior of half a live
// item in ten. It keeps the first estimate, made from as few items as the
// page holds, from trusting a lucky sample, and lets a call that has seen no
// live item yet still size its next request.
const (
	priorLive = 0.5
	priorRead = 10
)

// pager sends the requests of one call and tracks its position and costs.
type pager[T any] struct {
	q     Query[T]
	p     *plan
	esk   map[string]types.AttributeValue
	pos   position            // the position the next request starts after; nil at the start
	seen  map[string]struct{} // every position of this call, to catch cycles
	total Stats
	last  Stats // the costs of the last request
}

func newPager[T any](q Query[T], p *plan) *pager[T] {
	pg := &pager[T]{q: q, p: p, pos: p.start}
	if p.start != nil {
		pg.esk, _ = p.def.startKey(p.start) // checked when the cursor was decoded
	}
	return pg
}

// capped returns a *CapError when a per-call cap forbids another request.
func (pg *pager[T]) capped() error {
	q := pg.q
	var ce *CapError
	switch {
	case q.maxRequests > 0 && pg.total.Requests >= q.maxRequests:
		ce = &CapError{Cap: "MaxRequests", Limit: float64(q.maxRequests), Used: float64(pg.total.Requests)}
	case q.maxUnits > 0 && pg.total.ReadUnits >= q.maxUnits:
		ce = &CapError{Cap: "MaxReadUnits", Limit: q.maxUnits, Used: pg.total.ReadUnits}
	default:
		return nil
	}
	var err error
	if ce.Cursor, err = pg.cursor(pg.pos); err != nil {
		return err
	}
	return ce
}

// requestSize picks the Limit for a request that still needs need live
// items.
//
// The first request asks for need itself, so a page without tombstones costs
// exactly what the naive loop costs. Each later one asks for need divided by
// the estimated live ratio (see priorLive), at most maxGrowth times what the
// call has read so far, and at most maxRequestItems.
//
// Why not less, or more: a Query costs the bytes it reads, rounded up to 4 KB
// once per request. Asking for what the estimate says the page needs makes
// the page take about two requests where the naive loop (Limit = need) takes
// one per run of tombstones, and each saved request also saves its rounding.
// Asking for more only adds items read beyond the page, which this page pays
// for and the next reads again: a margin over the estimate saved a third
// request now and then and cost more read units than that saved (measured
// with BenchmarkPageFill, and over many tombstone patterns with a model of
// its costs).
func (pg *pager[T]) requestSize(need int) int {
	need = min(need, maxRequestItems)
	read := pg.total.Read
	if read == 0 {
		return need
	}
	size := float64(need) * (float64(read) + priorRead) / (float64(pg.liveSoFar()) + priorLive)
	size = min(size, float64(maxGrowth*read), maxRequestItems)
	return max(int(math.Ceil(size)), need)
}

// liveSoFar is the number of live items the requests so far returned.
func (pg *pager[T]) liveSoFar() int { return pg.total.Read - pg.total.Filtered }

// next sends one request asking for limit items (0: no Limit) and returns the
// items and whether DynamoDB has more.
func (pg *pager[T]) next(ctx context.Context, limit int) ([]map[string]types.AttributeValue, bool, error) {
	in := pg.p.input
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	in.ExclusiveStartKey = pg.esk
	out, err := pg.q.t.client.Query(ctx, &in)
	if err != nil {
		return nil, false, fmt.Errorf("ddbindex: query %s: %w", indexLabel(pg.p.def.name), err)
	}
	pg.last = Stats{Requests: 1, Read: int(out.ScannedCount), Filtered: int(out.ScannedCount - out.Count)}
	if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
		pg.last.ReadUnits = *out.ConsumedCapacity.CapacityUnits
	}
	pg.total.add(pg.last)
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

// cursor mints the cursor for a position, or "" for none.
func (pg *pager[T]) cursor(pos position) (string, error) {
	if pos == nil {
		return "", nil
	}
	c := encodeCursor(pg.p.def, pos, pg.q.desc, pg.q.t.opts.CursorKey)
	if max := pg.q.t.opts.MaxCursorBytes; len(c) > max {
		// Minting it would hand the caller a cursor the next call refuses.
		return "", queryErr(pg.p.def.name, "the cursor after this page is %d bytes, over Options.MaxCursorBytes (%d): raise it for keys this long", len(c), max)
	}
	return c, nil
}

// fill reads one page of up to limit live items.
func fill[T any](ctx context.Context, q Query[T], p *plan, limit int, peek bool) (*Page[T], error) {
	pg := newPager(q, p)
	want := limit
	if peek {
		// One live item beyond the page tells whether another page exists:
		// the cursor is then "" exactly when nothing live follows, so no
		// call ends on an empty page, and page boundaries depend on the
		// live items alone (a GSI and an index table agree on them).
		want++
	}
	var raw []map[string]types.AttributeValue
	var capErr error
	var end position
	more := true
	for len(raw) < want && more {
		if err := pg.capped(); err != nil {
			if len(raw) < limit {
				capErr, end = err, pg.pos
			}
			break
		}
		var items []map[string]types.AttributeValue
		var err error
		items, more, err = pg.next(ctx, pg.requestSize(want-len(raw)))
		if err != nil {
			return nil, err
		}
		raw = append(raw, items...)
	}
	if len(raw) > limit || (len(raw) == limit && more && capErr == nil) {
		pg.total.Dropped += len(raw) - limit
		raw = raw[:limit]
		var err error
		if end, err = p.def.positionOf(raw[limit-1]); err != nil {
			return nil, fmt.Errorf("ddbindex: an item of %s has unreadable keys: %w", indexLabel(p.def.name), err)
		}
	}
	page := &Page[T]{Items: make([]T, 0, len(raw))}
	if err := attributevalue.UnmarshalListOfMaps(raw, &page.Items); err != nil {
		return nil, fmt.Errorf("ddbindex: unmarshal %s: %w", q.t.s.model, err)
	}
	pg.total.Returned = len(page.Items)
	page.Stats = pg.total
	var err error
	if page.Cursor, err = pg.cursor(end); err != nil {
		return nil, err
	}
	return page, capErr
}

func unmarshalItem[T any](item map[string]types.AttributeValue, v *T) error {
	if err := attributevalue.UnmarshalMap(item, v); err != nil {
		var zero T
		return fmt.Errorf("ddbindex: unmarshal %T: %w", zero, err)
	}
	return nil
}

// CapError reports that a per-call cap stopped a read. It matches
// [ErrCapReached]. The items read before the cap are returned (in the Page,
// or yielded by All), and Cursor continues after them.
type CapError struct {
	Cap    string  // "MaxRequests" or "MaxReadUnits"
	Limit  float64 // the cap
	Used   float64 // what the call used when it stopped
	Cursor string  // continues after what was returned
}

// Error implements the error interface.
func (e *CapError) Error() string {
	return fmt.Sprintf("ddbindex: %s cap of %g reached (used %g); continue with the returned cursor [%s]", e.Cap, e.Limit, e.Used, ErrCapReached.code)
}

// Is makes CapError match ErrCapReached.
func (e *CapError) Is(target error) bool { return target == ErrCapReached }

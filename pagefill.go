package ddbindex

import (
	"context"
	"fmt"
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

// maxRequestItems caps the Limit the loop grows a request to.
const maxRequestItems = 1000

// growthWhenNoneLive multiplies the request size while no live item has been
// seen yet.
const growthWhenNoneLive = 4

// pager sends the requests of one call and tracks its position and costs.
type pager[T any] struct {
	q     Query[T]
	p     *plan
	esk   map[string]types.AttributeValue
	pos   position // the position the next request starts after; nil at the start
	size  int      // the Limit of the last request
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
	switch {
	case q.maxRequests > 0 && pg.total.Requests >= q.maxRequests:
		return &CapError{Cap: "MaxRequests", Limit: float64(q.maxRequests), Used: float64(pg.total.Requests), Cursor: pg.cursor(pg.pos)}
	case q.maxUnits > 0 && pg.total.ReadUnits >= q.maxUnits:
		return &CapError{Cap: "MaxReadUnits", Limit: q.maxUnits, Used: pg.total.ReadUnits, Cursor: pg.cursor(pg.pos)}
	}
	return nil
}

// requestSize picks the Limit for a request that still needs need live
// items: need itself at first (so a page without tombstones costs what the
// naive loop costs), then need scaled by the observed read-to-live ratio with
// a 20% margin, growing geometrically while nothing live has been seen.
func (pg *pager[T]) requestSize(need int) int {
	size := need
	switch live := pg.liveSoFar(); {
	case pg.total.Read == 0:
	case live == 0:
		size = pg.size * growthWhenNoneLive
	default:
		// need × read/live × 1.2, rounded up.
		size = (need*pg.total.Read*6 + live*5 - 1) / (live * 5)
	}
	return min(max(size, need), maxRequestItems)
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
	pg.size = limit
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
	pg.pos, pg.esk = pos, out.LastEvaluatedKey
	return out.Items, true, nil
}

// cursor mints the cursor for a position, or "" for none.
func (pg *pager[T]) cursor(pos position) string {
	if pos == nil {
		return ""
	}
	return encodeCursor(pg.p.def, pos, pg.q.desc, pg.q.t.opts.CursorKey)
}

// fill reads one page of up to limit live items.
func fill[T any](ctx context.Context, q Query[T], p *plan, limit int) (*Page[T], error) {
	pg := newPager(q, p)
	var raw []map[string]types.AttributeValue
	var capErr error
	var end position
	for {
		if err := pg.capped(); err != nil {
			capErr, end = err, pg.pos
			break
		}
		need := limit - len(raw)
		items, more, err := pg.next(ctx, pg.requestSize(need))
		if err != nil {
			return nil, err
		}
		if len(items) >= need {
			raw = append(raw, items[:need]...)
			pg.total.Dropped += len(items) - need
			if len(items) > need || more {
				if end, err = p.def.positionOf(raw[len(raw)-1]); err != nil {
					return nil, fmt.Errorf("ddbindex: an item of %s has unreadable keys: %w", indexLabel(p.def.name), err)
				}
			}
			break
		}
		raw = append(raw, items...)
		if !more {
			break
		}
	}
	page := &Page[T]{Items: make([]T, 0, len(raw))}
	if err := attributevalue.UnmarshalListOfMaps(raw, &page.Items); err != nil {
		return nil, fmt.Errorf("ddbindex: unmarshal %s: %w", q.t.s.model, err)
	}
	pg.total.Returned = len(page.Items)
	page.Stats = pg.total
	page.Cursor = pg.cursor(end)
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

func (e *CapError) Error() string {
	return fmt.Sprintf("ddbindex: %s cap of %g reached (used %g); continue with the returned cursor [%s]", e.Cap, e.Limit, e.Used, ErrCapReached.code)
}

// Is makes CapError match ErrCapReached.
func (e *CapError) Is(target error) bool { return target == ErrCapReached }

package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file backs a GSI-to-index-table migration, in the write-up's steps:
// fill the index table from the base table (Backfill) while the stream
// consumer runs, compare both paths' answers side by side (Compare), widen,
// and once GSI reads reach zero, drop the GSI and flip the declaration.

// ScanAPI is the part of the DynamoDB client that Backfill needs.
// *dynamodb.Client implements it.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// backfillVersion is the version of entries a backfill writes: older than
// every change the stream brings.
var backfillVersion = &types.AttributeValueMemberN{Value: "0"}

// BackfillOptions configure [Table.Backfill]; the zero value of each field
// means its default.
type BackfillOptions struct {
	// Segment and TotalSegments split the scan for parallel workers
	// (TotalSegments 0 or 1: one worker reads everything).
	Segment, TotalSegments int32
	// PageSize is the Limit of each Scan request. Default 500.
	PageSize int32
	// Progress, if set, is called after every Scan page with the totals so far.
	Progress func(BackfillStats)
	// Retry bounds Backfill's retries of each Scan and each write that fails
	// with a transient error (throttling, 5xx, connection errors, the SDK's
	// retry quota used up). Retrying is safe: the scan re-reads the same page,
	// and a write whose first attempt was applied fails its condition and
	// counts as Skipped.
	Retry RetryOptions
	// ClientOptions are applied to every request Backfill sends (each Scan
	// and each PutItem), as the SDK's own per-call options.
	ClientOptions []func(*dynamodb.Options)
}

// BackfillStats counts what a backfill did.
type BackfillStats struct {
	Scanned int // base items read
	Written int // index entries written
	Skipped int // entries already written by the stream (or an earlier backfill), left as they were
	Sparse  int // base items not in the index
}

// Backfill fills an index table from the base table: the index's kept form
// during a migration (keep=table), else its declared form. It scans the base table
// and writes every item's entry, conditioned on no entry being there yet, so
// it never overwrites what the stream consumer (which should already run)
// has written. Entries it writes carry version 0, below every stream change.
// Run it again, or in parallel segments, safely. An index that is not an
// index table is refused with [ErrUnsupported]; a base item it cannot index
// stops it with [ErrMalformedItem].
//
//	st, err := tickets.Backfill(ctx, client, "by_status", func(o *ddbindex.BackfillOptions) {
//		o.Segment, o.TotalSegments = 2, 8
//	})
func (t *Table[T]) Backfill(ctx context.Context, api ScanAPI, index string, optFns ...func(*BackfillOptions)) (BackfillStats, error) {
	var st BackfillStats
	if err := t.writable("Backfill"); err != nil {
		return st, err
	}
	var opts BackfillOptions
	for _, fn := range optFns {
		fn(&opts)
	}
	d, err := t.index(index)
	if err != nil {
		return st, err
	}
	d = d.backfilled()
	if !d.ownTable {
		return st, fmt.Errorf("%w: Backfill fills index tables; %s is a %s", ErrUnsupported, indexLabel(index), d.kind)
	}
	api = scanCalls{api}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	opts.Retry = opts.Retry.withDefaults()
	in := &dynamodb.ScanInput{TableName: aws.String(t.TableName()), Limit: aws.Int32(opts.PageSize)}
	if opts.TotalSegments > 1 {
		in.Segment, in.TotalSegments = aws.Int32(opts.Segment), aws.Int32(opts.TotalSegments)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.Name(t.opts.VersionAttr).AttributeNotExists()).Build()
	if err != nil {
		return st, writeErr("%w", err)
	}
	for {
		out, err := retryCall(ctx, opts.Retry, "Scan", func() (*dynamodb.ScanOutput, error) { return api.Scan(ctx, in, opts.ClientOptions...) })
		if err != nil {
			return st, fmt.Errorf("ddbindex: scan %s: %w", t.TableName(), err)
		}
		for _, img := range out.Items {
			st.Scanned++
			live := t.liveImage(img)
			if live == nil {
				st.Sparse++
				continue
			}
			texts, err := t.s.imageTexts(live, nil, nil)
			if err != nil {
				return st, fmt.Errorf("%w: %w", ErrMalformedItem, err)
			}
			e, err := t.imageEntry(d, live, texts, backfillVersion, 0)
			if err != nil {
				return st, fmt.Errorf("%w: %w", ErrMalformedItem, err)
			}
			if e == nil {
				st.Sparse++
				continue
			}
			put := &dynamodb.PutItemInput{
				TableName: aws.String(t.tableOf(d)), Item: e, ConditionExpression: cond.Condition(),
				ExpressionAttributeNames: cond.Names(),
			}
			_, err = retryCall(ctx, opts.Retry, "PutItem", func() (*dynamodb.PutItemOutput, error) { return t.client.PutItem(ctx, put, opts.ClientOptions...) })
			var ccf *types.ConditionalCheckFailedException
			switch {
			case errors.As(err, &ccf):
				st.Skipped++
			case err != nil:
				return st, fmt.Errorf("ddbindex: backfill %s: %w", t.tableOf(d), err)
			default:
				st.Written++
			}
		}
		if opts.Progress != nil {
			opts.Progress(st)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return st, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Comparison is the result of [Query.Compare]: the same query read through
// an index as declared and as the other index type, page by page.
type Comparison struct {
	Pages       int      // pages compared (the longer side's count)
	Items       int      // items read through the declared index
	Differences []string // empty when both paths agree on items, order and page boundaries
}

// Equal reports whether both paths gave the same answer.
func (c *Comparison) Equal() bool { return len(c.Differences) == 0 }

// maxDifferences bounds the differences a Comparison lists.
const maxDifferences = 20

// Compare runs the query to its end (following cursors, Limit items a page)
// through its index as declared and through the other index type — a GSI
// and the index table that replaces it — and reports every difference in
// items, order, page boundaries and tombstone exclusion: step two of a
// GSI-to-table migration. alternateTable names the index table when it is
// not the default (TABLE-INDEX); it is ignored when the declared index is
// itself the index table.
func (q Query[T]) Compare(ctx context.Context, alternateTable string, optFns ...func(*dynamodb.Options)) (*Comparison, error) {
	d, err := q.t.index(q.index)
	if err != nil {
		return nil, err
	}
	alt, err := d.alternate()
	if err != nil {
		return nil, queryErr(q.index, "no other index type to compare with: %v", err)
	}
	if alt == nil {
		return nil, queryErr(q.index, "the base table has no other index type to compare with")
	}
	if alt.ownTable && alternateTable != "" {
		alt.table = alternateTable
	}
	read := func(d *layout) ([][]T, error) {
		var pages [][]T
		cq := q
		if !d.consistent {
			cq.consistent = false
		}
		limit := cq.limit
		if limit == 0 {
			limit = DefaultPageSize
		}
		for {
			p, err := cq.planFor(d)
			if err != nil {
				return nil, err
			}
			page, err := fill(ctx, cq, p, limit, true, optFns)
			if err != nil {
				return nil, err
			}
			pages = append(pages, page.Items)
			if page.Cursor == "" {
				return pages, nil
			}
			cq.cursor = page.Cursor
		}
	}
	a, err := read(d)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: compare, reading %s as a %s: %w", indexLabel(q.index), d.kind, err)
	}
	b, err := read(alt)
	if err != nil {
		return nil, fmt.Errorf("ddbindex: compare, reading %s as a %s: %w", indexLabel(q.index), alt.kind, err)
	}
	c := &Comparison{Pages: max(len(a), len(b))}
	add := func(format string, args ...any) {
		if len(c.Differences) < maxDifferences {
			c.Differences = append(c.Differences, fmt.Sprintf(format, args...))
		}
	}
	for i := 0; i < c.Pages; i++ {
		var pa, pb []T
		if i < len(a) {
			pa = a[i]
			c.Items += len(pa)
		}
		if i < len(b) {
			pb = b[i]
		}
		if len(pa) != len(pb) {
			add("page %d: %d items as a %s, %d as a %s", i+1, len(pa), d.kind, len(pb), alt.kind)
		}
		for j := 0; j < min(len(pa), len(pb)); j++ {
			if !reflect.DeepEqual(pa[j], pb[j]) {
				add("page %d item %d: %s as a %s, %s as a %s", i+1, j+1, q.t.keyOfItem(&pa[j]), d.kind, q.t.keyOfItem(&pb[j]), alt.kind)
			}
		}
	}
	return c, nil
}

// keyOfItem renders an item's base key for messages.
func (t *Table[T]) keyOfItem(item *T) string {
	texts, err := t.s.itemTexts(reflect.ValueOf(item).Elem())
	if err != nil {
		return "(" + err.Error() + ")"
	}
	key, err := t.baseKey(texts)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return keyString(key)
}

// backfilled is the form of d's index that Backfill fills: the kept form of
// an index in migration (the form being introduced, in either direction),
// else the declared one.
func (d *layout) backfilled() *layout {
	return d.decl.forms[len(d.decl.forms)-1]
}

package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/time/rate"

	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file fills the form of an index that a migration introduces, from
// the items already in the base table: an index table's entries, or a GSI's
// or LSI's derived key attributes on the base items. Each scan segment runs
// in its own goroutine, writes are paced by a rate limit, every call is
// retried on transient errors, and each segment's position is saved after
// every page, so a killed backfill resumes where it stopped.

// ScanAPI is the part of the DynamoDB client that Backfill reads with.
// *dynamodb.Client implements it. When the value also has DescribeTable
// (as *dynamodb.Client does), Backfill reads the table's item count from it
// for [BackfillProgress]'s estimate.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// describeAPI is what Backfill uses of a ScanAPI that can also describe
// tables.
type describeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// maxSegments is the largest TotalSegments DynamoDB accepts.
const maxSegments = 1000000

// backfillVersion is the version of entries a backfill writes: older than
// every change the stream brings.
var backfillVersion = &types.AttributeValueMemberN{Value: "0"}

// BackfillOptions configure [Table.Backfill]. The zero value of each field
// means its default.
type BackfillOptions struct {
	// Segment and TotalSegments split the scan as DynamoDB's parallel scan
	// does: TotalSegments is the number of segments of the whole scan, and
	// this call scans the Workers segments from Segment on (Segment,
	// Segment+1, ..., Segment+Workers-1), each in its own goroutine. To
	// split a backfill across P processes of W workers each, give every
	// process TotalSegments = P×W, Workers = W and Segment = i×W for process
	// i (0 to P-1). TotalSegments 0 or 1 with one worker scans the table as
	// one segment; TotalSegments 0 or 1 with W workers splits it into W.
	// Resume with the same TotalSegments: checkpoints are per segment of a
	// given total.
	Segment, TotalSegments int32
	// Workers is the number of segments this call scans in parallel.
	// Default 1.
	Workers int
	// PageSize is the Limit of each Scan request. Default 500.
	PageSize int32
	// WriteUnitsPerSecond caps the write units the backfill's writes
	// consume, for this call's workers together: each write waits for the
	// units DynamoDB charges it (one per started KB of the item written;
	// for a GSI or LSI, of the base item updated). 0: no cap. The cap is
	// per call: split it between processes yourself.
	WriteUnitsPerSecond float64
	// Retry bounds Backfill's retries of each Scan, each write and each
	// checkpoint call that fails with a transient error (throttling, 5xx,
	// connection errors, the SDK's retry quota used up), with exponential
	// backoff and full jitter. Retrying is safe: the scan re-reads the same
	// page, an index-table entry whose first attempt was applied fails its
	// condition and counts as Skipped, and a GSI update whose first attempt
	// was applied writes the same values again.
	Retry RetryOptions
	// ClientOptions are applied to every request Backfill sends (each
	// Scan, PutItem, UpdateItem and DescribeTable), as the SDK's own
	// per-call options. The checkpoint store's requests are its own.
	ClientOptions []func(*dynamodb.Options)
	// Checkpoint, if set, stores each segment's position after every page
	// whose writes were all made, and is read when the call starts: a
	// segment with a saved position resumes after it, a finished segment is
	// not scanned again. [MemoryBackfillCheckpoints] keeps positions for the
	// life of the process, [DynamoDBBackfillCheckpoints] in the control
	// table, across crashes. To backfill again from the start, clear the
	// store's positions for the backfill's key (see BackfillCheckpoints).
	Checkpoint BackfillCheckpoints
	// Progress, if set, is called after every Scan page with the totals so
	// far. Calls are made one at a time, from the workers' goroutines; a
	// slow Progress slows the backfill.
	Progress func(BackfillProgress)

	// now and sleep replace the clock and the wait of the rate limit and
	// the progress reports, in tests.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// BackfillStats counts what a backfill did. Every scanned item is counted
// once, in Written, Skipped, Unchanged, Sparse or Tombstones.
type BackfillStats struct {
	Scanned int // base items read
	// Written counts the writes made: index-table entries put, or, for a
	// GSI or LSI, base items whose derived key attributes were set (or, on
	// an item that is not in the index, stale ones removed).
	Written int
	// Skipped counts writes whose condition failed: an index-table entry
	// already there (the stream's, or an earlier backfill's), left as it
	// was; a base item changed since the scan (its writer wins).
	Skipped int
	// Unchanged counts the base items of a GSI or LSI whose derived key
	// attributes already held the right values: nothing to write. For a
	// GSI or LSI keyed by model attributes alone, every live item in it.
	Unchanged int
	// Sparse counts the live base items not in the index.
	Sparse int
	// Tombstones counts the soft-deleted base items: no entry is written
	// for them and they are left alone.
	Tombstones int
	// Resumed counts the segments that continued from a saved position,
	// AlreadyDone those a checkpoint marked finished (not scanned again).
	Resumed, AlreadyDone int
	// OtherTotals lists, in increasing order, the TotalSegments of saved
	// positions this call could not use because it splits the scan
	// differently: a segment of another split covers other items, so the
	// call scanned its segments from their start. To resume those
	// positions, call again with that TotalSegments.
	OtherTotals []int32
}

func (s *BackfillStats) add(o BackfillStats) {
	s.Scanned += o.Scanned
	s.Written += o.Written
	s.Skipped += o.Skipped
	s.Unchanged += o.Unchanged
	s.Sparse += o.Sparse
	s.Tombstones += o.Tombstones
	s.Resumed += o.Resumed
	s.AlreadyDone += o.AlreadyDone
}

// BackfillProgress is what [BackfillOptions].Progress receives after each
// page.
type BackfillProgress struct {
	// BackfillStats are the call's totals so far, every worker's together.
	BackfillStats
	// Elapsed is the time since the call started.
	Elapsed time.Duration
	// ItemsPerSecond is the rate of items scanned since the call started.
	ItemsPerSecond float64
	// Estimate is the number of items the call scans: for each finished
	// segment the items it scanned, for each other one its share of the
	// table's ItemCount (from DescribeTable, which DynamoDB updates about
	// every six hours), or the items it scanned so far when more. -1 when
	// unknown: Progress is not set, the ScanAPI has no DescribeTable, or it
	// failed. A segment resumed from a checkpoint counts its whole share,
	// so the estimate is high until it finishes.
	Estimate int64
	// ETA is the time left to scan the Estimate at the rate so far; -1 when
	// the estimate is unknown.
	ETA time.Duration
}

// Backfill fills the form of an index that a migration introduces from the
// items already in the base table: the index's kept form while it keeps two
// (keep= in its IndexSpec), else its declared form. It scans the base table
// through api and writes through the Table's client:
//
//   - An index table: every live item's entry, with a PutItem conditioned
//     on no entry being there yet (attribute_not_exists of the version
//     attribute), so it never overwrites what the stream consumer (which
//     should already run) or a write-through writer has written. Entries it
//     writes carry version 0, below every change.
//   - A GSI or LSI whose key attributes are derived (_pk, _sk, or those
//     pk= and sk= name): every live item's derived key attributes, with an
//     UpdateItem conditioned on the item being as scanned — its version
//     attribute equal when the model has one and the item holds it, and
//     every attribute the key is derived from equal (or absent, as it was),
//     since an item deleted and created again may start at the same
//     version — and still live. A writer that changed the item since the
//     scan wins: the update counts as Skipped. Items whose attributes are
//     already right are not written (Unchanged); stale derived attributes
//     on an item that is not in the index are removed. A GSI or LSI keyed by
//     model attributes alone needs no backfill: DynamoDB indexes the items
//     as they are, and Backfill only counts them.
//
// Soft-deleted items get nothing (Tombstones). Run Backfill once every
// writer keeps the form (the declaration with keep=): an item a writer
// changes during the backfill is then that writer's to index. Running it
// again, in parallel segments or processes, or after it was killed, is
// safe; with a checkpoint store it resumes from the last saved page of each
// segment (see [BackfillOptions]).
//
// An index that is not declared fails with [ErrInvalidQuery], the base
// table and a table made by [NewReadOnly] with [ErrUnsupported], options out of range with [ErrInvalidWrite]
// (all before any request), a base item whose keys cannot be derived with
// [ErrMalformedItem], and a failed call (a canceled context included) with
// a [*CallError]. The stats count what was done up to the error.
//
//	st, err := tickets.Backfill(ctx, client, "by_status", func(o *ddbindex.BackfillOptions) {
//		o.Workers = 8
//		o.WriteUnitsPerSecond = 500
//		o.Checkpoint = &ddbindex.DynamoDBBackfillCheckpoints{Client: client, Table: "control"}
//	})
func (t *Table[T]) Backfill(ctx context.Context, api ScanAPI, index string, optFns ...func(*BackfillOptions)) (BackfillStats, error) {
	if err := t.writable("Backfill"); err != nil {
		return BackfillStats{}, err
	}
	var o BackfillOptions
	for _, fn := range optFns {
		fn(&o)
	}
	d, err := t.index(index)
	if err != nil {
		return BackfillStats{}, err
	}
	if d.kind == BaseTable {
		return BackfillStats{}, fmt.Errorf("%w: Backfill fills an index; %s has nothing to fill", ErrUnsupported, indexLabel(index))
	}
	b, err := t.newBackfill(d.backfilled(), api, o)
	if err != nil {
		return BackfillStats{}, err
	}
	return b.run(ctx)
}

// Validate reports whether Backfill takes o's Segment, TotalSegments,
// Workers, PageSize and WriteUnitsPerSecond, as Backfill checks them before
// any request: nil, or an error matching [ErrInvalidWrite] that names the
// option, its value, and the rule it breaks. Callers that take these
// options from elsewhere (a command line) check them with it before
// anything else.
func (o BackfillOptions) Validate() error {
	_, _, err := o.check()
	return err
}

// check validates o's numbers, and returns o with its defaults filled in
// and the TotalSegments of the scan.
func (o BackfillOptions) check() (BackfillOptions, int32, error) {
	bad := func(format string, args ...any) (BackfillOptions, int32, error) {
		return o, 0, fmt.Errorf("%w: Backfill: "+format, append([]any{ErrInvalidWrite}, args...)...)
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.PageSize == 0 {
		o.PageSize = 500
	}
	total := o.TotalSegments
	switch {
	case o.Workers < 0 || o.Workers > maxSegments:
		return bad("Workers %d: want 1 to %d, a segment each (0: the default, 1)", o.Workers, maxSegments)
	case o.PageSize < 0:
		return bad("PageSize %d: want 1 or more (0: the default, 500)", o.PageSize)
	case o.TotalSegments < 0 || o.TotalSegments > maxSegments:
		return bad("TotalSegments %d: want 0 to %d, as DynamoDB's parallel scan (0 or 1: as many as Workers)", o.TotalSegments, maxSegments)
	case o.WriteUnitsPerSecond < 0 || math.IsNaN(o.WriteUnitsPerSecond) || math.IsInf(o.WriteUnitsPerSecond, 0):
		return bad("WriteUnitsPerSecond %g: want a finite number, 0 (no cap) or more", o.WriteUnitsPerSecond)
	case total <= 1 && o.Segment != 0:
		return bad("Segment %d without TotalSegments: a Segment other than 0 needs a TotalSegments of 2 or more", o.Segment)
	}
	if total <= 1 {
		total = int32(o.Workers)
	}
	if o.Segment < 0 || int64(o.Segment)+int64(o.Workers) > int64(total) {
		return bad("Segment %d with Workers %d scans segments %d to %d, not all within TotalSegments %d: want Segment at least 0 and Segment+Workers at most TotalSegments",
			o.Segment, o.Workers, o.Segment, int64(o.Segment)+int64(o.Workers)-1, total)
	}
	return o, total, nil
}

// backfilled is the form of d's index that Backfill fills: the kept form of
// an index in migration (the form being introduced, in either direction),
// else the declared one.
func (d *layout) backfilled() *layout {
	return d.decl.forms[len(d.decl.forms)-1]
}

// backfill is one call of Backfill.
type backfill[T any] struct {
	t        *Table[T]
	d        *layout
	api      ScanAPI
	describe describeAPI // nil when api cannot describe tables
	o        BackfillOptions
	key      string // the checkpoint key
	total    int32  // TotalSegments of the scan (1: no segments)
	limiter  *rate.Limiter

	// For an index table: the condition of every put.
	putCond expression.Expression
	// For a GSI or LSI: the derived key attributes to write (none for
	// native keys), and the attributes its key is derived from, sorted.
	derived []*keyAttr
	sources []string

	mu      sync.Mutex // guards st and the segments, and serialises Progress
	st      BackfillStats
	start   time.Time
	share   float64        // the items of one segment by ItemCount; -1: unknown
	scanned map[int32]int  // items scanned by each segment of the call
	done    map[int32]bool // the call's segments that are finished (before the call, or in it)
}

// newBackfill checks the options and prepares what every item needs.
func (t *Table[T]) newBackfill(d *layout, api ScanAPI, o BackfillOptions) (*backfill[T], error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: Backfill: "+format, append([]any{ErrInvalidWrite}, args...)...)
	}
	if api == nil {
		return nil, bad("no ScanAPI to read the base table with")
	}
	o, total, err := o.check()
	if err != nil {
		return nil, err
	}
	o.Retry = o.Retry.withDefaults()
	if o.now == nil {
		o.now = time.Now
	}
	if o.sleep == nil {
		o.sleep = retry.Sleep
	}
	b := &backfill[T]{t: t, d: d, api: scanCalls{api}, o: o, total: total, share: -1,
		scanned: map[int32]int{}, done: map[int32]bool{},
		key: t.TableName() + "#" + d.name + "#" + d.kind.String(),
	}
	if dt, ok := api.(describeAPI); ok {
		b.describe = describeCalls{dt}
	}
	if o.Checkpoint != nil {
		b.o.Checkpoint = checkpointCalls{o.Checkpoint}
	}
	if o.WriteUnitsPerSecond > 0 {
		// The bucket holds one second's units: a write larger than that
		// waits for its units in parts.
		b.limiter = rate.NewLimiter(rate.Limit(o.WriteUnitsPerSecond), int(max(1, min(math.Ceil(o.WriteUnitsPerSecond), 1<<30))))
	}
	if d.ownTable {
		cond, err := expression.NewBuilder().WithCondition(expression.Name(t.opts.VersionAttr).AttributeNotExists()).Build()
		if err != nil {
			return nil, writeErr("%w", err)
		}
		b.putCond = cond
		return b, nil
	}
	for _, k := range []*keyAttr{d.pk, d.sk} {
		if k == nil || k.native || k == t.s.base.pk || k == t.s.base.sk {
			continue // a model attribute, or the base key an LSI shares
		}
		b.derived = append(b.derived, k)
		for _, c := range k.components() {
			if !slices.Contains(b.sources, c.f.attr) {
				b.sources = append(b.sources, c.f.attr)
			}
		}
	}
	slices.Sort(b.sources)
	return b, nil
}

// segmentStart is one scan segment's work: the segment, and the position
// it resumes after (nil: its start).
type segmentStart struct {
	seg  BackfillSegment
	from map[string]types.AttributeValue
}

// run scans the call's segments, one goroutine each.
func (b *backfill[T]) run(ctx context.Context) (BackfillStats, error) {
	var saved map[BackfillSegment]BackfillCheckpoint
	if b.o.Checkpoint != nil {
		var err error
		saved, err = retryCall(ctx, b.o.Retry, "LoadBackfillCheckpoint", func() (map[BackfillSegment]BackfillCheckpoint, error) {
			return b.o.Checkpoint.Load(ctx, b.key)
		})
		if err != nil {
			return BackfillStats{}, fmt.Errorf("ddbindex: backfill of %s: reading checkpoints: %w", b.key, err)
		}
	}
	for seg := range saved {
		if seg.Total != b.total && !slices.Contains(b.st.OtherTotals, seg.Total) {
			b.st.OtherTotals = append(b.st.OtherTotals, seg.Total)
		}
	}
	slices.Sort(b.st.OtherTotals)
	var todo []segmentStart
	for i := range int32(b.o.Workers) {
		seg := BackfillSegment{Segment: b.o.Segment + i, Total: b.total}
		cp, ok := saved[seg]
		switch {
		case ok && cp.Done:
			b.st.AlreadyDone++
			b.done[seg.Segment] = true
		case ok && len(cp.LastEvaluatedKey) > 0:
			b.st.Resumed++
			todo = append(todo, segmentStart{seg: seg, from: cp.LastEvaluatedKey})
		default:
			todo = append(todo, segmentStart{seg: seg})
		}
	}
	b.start = b.o.now()
	if b.describe != nil && b.o.Progress != nil && len(todo) > 0 {
		out, err := retryCall(ctx, b.o.Retry, "DescribeTable", func() (*dynamodb.DescribeTableOutput, error) {
			return b.describe.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.t.TableName())}, b.o.ClientOptions...)
		})
		if err == nil && out.Table != nil && out.Table.ItemCount != nil {
			// The estimate is progress information only: without it the
			// backfill runs the same.
			b.share = float64(*out.Table.ItemCount) / float64(b.total)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for _, s := range todo {
		wg.Go(func() {
			if err := b.scan(ctx, s); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		})
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st, firstErr
}

// scan backfills one segment, page by page, from where it starts.
func (b *backfill[T]) scan(ctx context.Context, s segmentStart) error {
	in := &dynamodb.ScanInput{TableName: aws.String(b.t.TableName()), Limit: aws.Int32(b.o.PageSize), ExclusiveStartKey: s.from}
	if b.total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(s.seg.Segment), aws.Int32(s.seg.Total)
	}
	for {
		out, err := retryCall(ctx, b.o.Retry, "Scan", func() (*dynamodb.ScanOutput, error) { return b.api.Scan(ctx, in, b.o.ClientOptions...) })
		if err != nil {
			return fmt.Errorf("ddbindex: backfill, scanning %s: %w", b.t.TableName(), err)
		}
		var page BackfillStats
		for _, img := range out.Items {
			page.Scanned++
			if err := b.item(ctx, img, &page); err != nil {
				page.Scanned-- // counted nowhere else: it was not backfilled
				b.report(s.seg, page, false, false)
				return err
			}
		}
		if b.o.Checkpoint != nil {
			_, err := retryCall(ctx, b.o.Retry, "SaveBackfillCheckpoint", func() (struct{}, error) {
				return struct{}{}, b.o.Checkpoint.Save(ctx, b.key, s.seg, out.LastEvaluatedKey)
			})
			if err != nil {
				b.report(s.seg, page, false, false)
				return fmt.Errorf("ddbindex: backfill of %s: saving the checkpoint of segment %d/%d: %w", b.key, s.seg.Segment, s.seg.Total, err)
			}
		}
		b.report(s.seg, page, len(out.LastEvaluatedKey) == 0, true)
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// report adds a page of segment seg to the totals, and whether it was the
// segment's last; when progress is true, it calls Progress.
func (b *backfill[T]) report(seg BackfillSegment, page BackfillStats, last, progress bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.add(page)
	b.scanned[seg.Segment] += page.Scanned
	if last {
		b.done[seg.Segment] = true
	}
	if !progress || b.o.Progress == nil {
		return
	}
	p := BackfillProgress{BackfillStats: b.st, Elapsed: b.o.now().Sub(b.start), Estimate: -1, ETA: -1}
	if p.Elapsed > 0 {
		p.ItemsPerSecond = float64(p.Scanned) / p.Elapsed.Seconds()
	}
	if b.share >= 0 {
		est := 0.0
		for i := range int32(b.o.Workers) {
			n := b.o.Segment + i
			if b.done[n] {
				est += float64(b.scanned[n]) // 0 for a segment finished before the call
			} else {
				est += max(b.share, float64(b.scanned[n]))
			}
		}
		p.Estimate = int64(math.Round(est))
		if p.ItemsPerSecond > 0 {
			p.ETA = time.Duration(float64(max(0, p.Estimate-int64(p.Scanned))) / p.ItemsPerSecond * float64(time.Second))
		}
	}
	b.o.Progress(p)
}

// item backfills one scanned base item, counting it in st.
func (b *backfill[T]) item(ctx context.Context, img map[string]types.AttributeValue, st *BackfillStats) error {
	t := b.t
	live := t.liveImage(img)
	if live == nil {
		st.Tombstones++
		return nil
	}
	texts, err := t.s.imageTexts(live, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	if b.d.ownTable {
		return b.entry(ctx, live, texts, st)
	}
	return b.attributes(ctx, live, texts, st)
}

// entry puts an item's index-table entry unless one is there.
func (b *backfill[T]) entry(ctx context.Context, img map[string]types.AttributeValue, texts keyTexts, st *BackfillStats) error {
	t := b.t
	e, err := t.imageEntry(b.d, img, texts, backfillVersion, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	if e == nil {
		st.Sparse++
		return nil
	}
	table := t.tableOf(b.d)
	if err := b.wait(ctx, "PutItem", table, itemSize(e)); err != nil {
		return err
	}
	put := &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: e, ConditionExpression: b.putCond.Condition(),
		ExpressionAttributeNames: b.putCond.Names(),
	}
	_, err = retryCall(ctx, b.o.Retry, "PutItem", func() (*dynamodb.PutItemOutput, error) { return t.client.PutItem(ctx, put, b.o.ClientOptions...) })
	return b.count(st, err, table)
}

// attributes sets an item's derived key attributes of a GSI or LSI where
// they are not right, and removes stale ones from an item not in it.
func (b *backfill[T]) attributes(ctx context.Context, img map[string]types.AttributeValue, texts keyTexts, st *BackfillStats) error {
	t := b.t
	want, in, err := b.d.keyValues(texts)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	var x flatExpr
	var set, remove []string
	added, removed := 0, 0
	for _, k := range b.derived {
		have, has := img[k.attr]
		switch {
		case in && (!has || !avEqual(have, want[k.attr])):
			set = append(set, x.name(k.attr)+" = "+x.value(want[k.attr]))
			added += len(k.attr) + valueSize(want[k.attr])
		case !in && has:
			remove = append(remove, x.name(k.attr))
			removed += len(k.attr) + valueSize(have)
		}
	}
	switch {
	case len(set)+len(remove) == 0 && in:
		st.Unchanged++
		return nil
	case len(set)+len(remove) == 0:
		st.Sparse++
		return nil
	}
	var update string
	if len(set) > 0 {
		update = "SET " + strings.Join(set, ", ")
	}
	if len(remove) > 0 {
		update = strings.TrimSpace(update + " REMOVE " + strings.Join(remove, ", "))
	}
	cond := b.unchanged(&x, img)
	key := map[string]types.AttributeValue{}
	for _, k := range []*keyAttr{t.s.base.pk, t.s.base.sk} {
		if k != nil {
			key[k.attr] = img[k.attr]
		}
	}
	table := t.TableName()
	size := itemSize(img)
	if err := b.wait(ctx, "UpdateItem", table, max(size, size+added-removed)); err != nil {
		return err
	}
	req := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key, UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	}
	_, err = retryCall(ctx, b.o.Retry, "UpdateItem", func() (*dynamodb.UpdateItemOutput, error) { return t.client.UpdateItem(ctx, req, b.o.ClientOptions...) })
	return b.count(st, err, table)
}

// unchanged is the condition that a base item is still as scanned in img,
// and live: it exists, is not soft-deleted, holds the version it had (when
// the model has a version attribute and the item held it), and every
// attribute the index key is derived from as it was. The version alone
// does not do: an item deleted for good and created again starts at
// version 1 again, with other values, and the derived keys written are
// right for the stored item only when those attributes are. It is one flat
// AND, which every server parses fast (deeply nested parentheses, as the
// SDK's expression builder writes them, cost some local servers time
// exponential in the depth).
func (b *backfill[T]) unchanged(x *flatExpr, img map[string]types.AttributeValue) string {
	t := b.t
	deleted := x.name(t.opts.DeletedAttr)
	conds := []string{
		"attribute_exists(" + x.name(t.s.base.pk.attr) + ")",
		"(attribute_not_exists(" + deleted + ") OR " + deleted + " <> " + x.value(&types.AttributeValueMemberBOOL{Value: true}) + ")",
	}
	if v := t.s.version; v != nil {
		if have, ok := img[v.attr]; ok {
			conds = append(conds, x.name(v.attr)+" = "+x.value(have))
		}
	}
	for _, a := range b.sources {
		if have, ok := img[a]; ok {
			conds = append(conds, x.name(a)+" = "+x.value(have))
		} else {
			conds = append(conds, "attribute_not_exists("+x.name(a)+")")
		}
	}
	return strings.Join(conds, " AND ")
}

// flatExpr collects the placeholders of a hand-written expression.
type flatExpr struct {
	names  map[string]string
	values map[string]types.AttributeValue
	byName map[string]string
}

// name returns the placeholder of attribute a.
func (x *flatExpr) name(a string) string {
	if p, ok := x.byName[a]; ok {
		return p
	}
	if x.names == nil {
		x.names, x.byName = map[string]string{}, map[string]string{}
	}
	p := "#n" + strconv.Itoa(len(x.names))
	x.names[p], x.byName[a] = a, p
	return p
}

// value returns a new placeholder for v.
func (x *flatExpr) value(v types.AttributeValue) string {
	if x.values == nil {
		x.values = map[string]types.AttributeValue{}
	}
	p := ":v" + strconv.Itoa(len(x.values))
	x.values[p] = v
	return p
}

// count counts a conditional write's outcome.
func (b *backfill[T]) count(st *BackfillStats, err error, table string) error {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		st.Skipped++
	case err != nil:
		return fmt.Errorf("ddbindex: backfill of %s: %w", table, err)
	default:
		st.Written++
	}
	return nil
}

// wait takes the write units of a write of an item of size bytes from the
// rate limit, waiting as long as it says.
func (b *backfill[T]) wait(ctx context.Context, op, table string, size int) error {
	if b.limiter == nil {
		return nil
	}
	units := max(1, (size+1023)/1024)
	for units > 0 {
		n := min(units, b.limiter.Burst())
		units -= n
		r := b.limiter.ReserveN(b.o.now(), n) // n <= burst: always ok
		if err := b.o.sleep(ctx, r.DelayFrom(b.o.now())); err != nil {
			r.Cancel()
			return &CallError{Op: op, Table: table, Err: err}
		}
	}
	return nil
}

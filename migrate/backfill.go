package migrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/time/rate"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file fills the form of an index that a migration introduces, from
// the items already in the base table: an index table's entries, or a GSI's
// or LSI's derived key attributes on the base items. Each scan segment runs
// in its own goroutine, writes are paced by a rate limit, every call is
// retried on transient errors, and each segment's position is saved after
// every page, so a killed backfill resumes where it stopped.
//
// What each scanned item needs written, and the conditions that keep a
// writer's newer work, are the core's (package ddbindex, backfill.go): it
// alone knows each form's physical layout and write rules. This package
// reaches it through internal/bridge (bridge.Backfiller), and owns the
// rest: the scan, its segments and workers, the write-rate limit, progress,
// and checkpoints.

// ScanAPI is the part of the DynamoDB client that Backfill reads with.
// *dynamodb.Client implements it. When the value also has DescribeTable (as
// *dynamodb.Client does), Backfill reads the table's item count from it for
// [BackfillProgress]'s estimate.
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

// BackfillOptions configure [Backfill]. The zero value of each field means
// its default.
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
	Retry ddbindex.RetryOptions
	// ClientOptions are applied to every request Backfill sends (each
	// Scan, PutItem, UpdateItem and DescribeTable), as the SDK's own
	// per-call options. The checkpoint store's requests are its own.
	ClientOptions []func(*dynamodb.Options)
	// Checkpoint, if set, stores each segment's position after every page
	// whose writes were all made, and is read when the call starts: a
	// segment with a saved position resumes after it, a finished segment is
	// not scanned again. [MemoryCheckpoints] keeps positions for the life
	// of the process, [DynamoDBCheckpoints] in the control table, across
	// crashes. To backfill again from the start, clear the store's
	// positions for the backfill's key (see [Checkpoints]).
	Checkpoint Checkpoints
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

// count counts one item's outcome.
func (s *BackfillStats) count(o bridge.Outcome) {
	switch o {
	case bridge.Written:
		s.Written++
	case bridge.Skipped:
		s.Skipped++
	case bridge.Unchanged:
		s.Unchanged++
	case bridge.Sparse:
		s.Sparse++
	case bridge.Tombstone:
		s.Tombstones++
	}
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

// Backfill fills the form of an index of t that a migration introduces
// from the items already in the base table: the index's kept form while it
// keeps two (keep= in its ddbindex.IndexSpec), else its declared form. It
// scans the base table through api and writes through the Table's client:
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
// An index that is not declared fails with [ddbindex.ErrInvalidQuery], the
// base table and a table made by ddbindex.NewReadOnly with
// [ddbindex.ErrUnsupported], options it cannot honour (a nil option
// function, a nil entry of ClientOptions, a value negative, NaN or out of
// range; see [BackfillOptions.Validate]) with [ddbindex.ErrDeclaration], a
// nil t or api with [ddbindex.ErrInvalidWrite] (all before any request), a
// base item whose
// keys cannot be derived with [ddbindex.ErrMalformedItem], and a failed call
// (a canceled context included) with a [*ddbindex.Error]. The stats
// count what was done up to the error.
//
//	st, err := migrate.Backfill(ctx, tickets, client, "by_status", func(o *migrate.BackfillOptions) {
//		o.Workers = 8
//		o.WriteUnitsPerSecond = 500
//		o.Checkpoint = &migrate.DynamoDBCheckpoints{Client: client, Table: "control"}
//	})
func Backfill[T any](ctx context.Context, t *ddbindex.Table[T], api ScanAPI, index string, optFns ...func(*BackfillOptions)) (BackfillStats, error) {
	var o BackfillOptions
	for i, fn := range optFns {
		if fn == nil {
			return BackfillStats{}, declarationErr("Backfill", "option function %d is nil", i)
		}
		fn(&o)
	}
	core, err := bridge.Backfiller(t, index)
	if err != nil {
		return BackfillStats{}, err
	}
	b, err := newBackfill(core, api, o)
	if err != nil {
		return BackfillStats{}, err
	}
	st, err := b.run(ctx)
	if store, ok := o.Checkpoint.(*DynamoDBCheckpoints); ok && err == nil {
		err = b.recordIfFinished(ctx, store, t.Indexes()[0].Forms[0].Declared, index)
	}
	return st, err
}

// recordIfFinished records in the control table that the backfill finished
// when every segment of its total is done, by this call or by others (the
// other processes of a split backfill): Shadows made with
// ShadowOptions.Router compare an index table only from then on.
func (b *backfill) recordIfFinished(ctx context.Context, store *DynamoDBCheckpoints, table, index string) error {
	key := b.core.Key()
	var saved map[Segment]Checkpoint
	err := b.call(ctx, "LoadBackfillCheckpoint", func() (err error) {
		saved, err = store.Load(ctx, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("ddbindex: backfill of %s: reading checkpoints: %w", key, err)
	}
	for seg := range b.total {
		if cp, ok := saved[Segment{Segment: seg, Total: b.total}]; !ok || !cp.Done {
			return nil // another process's segments are still to do
		}
	}
	form, ok := formKind(key[strings.LastIndexByte(key, '#')+1:])
	if !ok {
		return nil
	}
	return b.call(ctx, "PutItem", func() error {
		return recordBackfilled(ctx, store.Client, store.Table, table, index, form, store.ClientOptions)
	})
}

// Validate reports whether Backfill takes o's Segment, TotalSegments,
// Workers, PageSize, WriteUnitsPerSecond, Retry and ClientOptions, as
// Backfill checks them before any request: nil, or an error matching
// [ddbindex.ErrDeclaration] (code DDBX-100) that names the option, its
// value, and the rule it breaks. Callers that take
// these options from elsewhere (a command line) check them with it before
// anything else.
func (o BackfillOptions) Validate() error {
	_, _, err := o.check()
	return err
}

// invalid is an error of Backfill's arguments other than its options: a
// nil client (ddbindex.ErrInvalidWrite).
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: Backfill: "+format, append([]any{ddbindex.ErrInvalidWrite}, args...)...)
}

// declarationErr is an error of a function's options: an ErrDeclaration
// *ddbindex.Error, as the root's New returns; fn is the function, such as
// "NewRouter".
func declarationErr(fn, format string, args ...any) error {
	return &ddbindex.Error{Sentinel: ddbindex.ErrDeclaration, Reason: "migrate." + fn + ": " + fmt.Sprintf(format, args...)}
}

// check validates o's numbers, and returns o with its defaults filled in
// and the TotalSegments of the scan.
func (o BackfillOptions) check() (BackfillOptions, int32, error) {
	bad := func(format string, args ...any) (BackfillOptions, int32, error) {
		return o, 0, declarationErr("Backfill", "BackfillOptions."+format, args...)
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
	case o.Retry.MaxAttempts < 0:
		return bad("Retry.MaxAttempts %d: it cannot be negative (0: the default, %d)", o.Retry.MaxAttempts, retry.DefaultAttempts)
	case o.Retry.BaseDelay < 0:
		return bad("Retry.BaseDelay %v: it cannot be negative (0: the default, %v)", o.Retry.BaseDelay, retry.DefaultBaseDelay)
	case o.Retry.MaxDelay < 0:
		return bad("Retry.MaxDelay %v: it cannot be negative (0: the default, %v)", o.Retry.MaxDelay, retry.DefaultMaxDelay)
	}
	if i := slices.IndexFunc(o.ClientOptions, func(fn func(*dynamodb.Options)) bool { return fn == nil }); i >= 0 {
		return bad("ClientOptions[%d] is nil", i)
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

// backfill is one call of Backfill.
type backfill struct {
	core     bridge.Backfill // the writes of each item, and the tables
	api      ScanAPI
	describe describeAPI // nil when api cannot describe tables
	o        BackfillOptions
	item     bridge.ItemOptions // what every item's write is given
	total    int32              // TotalSegments of the scan (1: no segments)
	limiter  *rate.Limiter

	mu      sync.Mutex // guards st and the segments, and serialises Progress
	st      BackfillStats
	start   time.Time
	share   float64        // the items of one segment by ItemCount; -1: unknown
	scanned map[int32]int  // items scanned by each segment of the call
	done    map[int32]bool // the call's segments that are finished (before the call, or in it)
}

// newBackfill checks the client and the options, and prepares the call.
func newBackfill(core bridge.Backfill, api ScanAPI, o BackfillOptions) (*backfill, error) {
	if api == nil {
		return nil, invalid("no ScanAPI to read the base table with")
	}
	o, total, err := o.check()
	if err != nil {
		return nil, err
	}
	o.Retry = ddbindex.RetryOptions(retry.Options(o.Retry).WithDefaults())
	if o.now == nil {
		o.now = time.Now
	}
	if o.sleep == nil {
		o.sleep = retry.Sleep
	}
	b := &backfill{core: core, api: scanCalls{api}, o: o, total: total, share: -1,
		scanned: map[int32]int{}, done: map[int32]bool{},
		item: bridge.ItemOptions{ClientOptions: o.ClientOptions, Retry: retry.Options(o.Retry)},
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
		b.item.Wait = b.wait
	}
	return b, nil
}

// call calls fn with Backfill's retries.
func (b *backfill) call(ctx context.Context, op string, fn func() error) error {
	_, err := retry.Call(ctx, retry.Options(b.o.Retry), op, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// segmentStart is one scan segment's work: the segment, and the position
// it resumes after (nil: its start).
type segmentStart struct {
	seg  Segment
	from map[string]types.AttributeValue
}

// run scans the call's segments, one goroutine each.
func (b *backfill) run(ctx context.Context) (BackfillStats, error) {
	key := b.core.Key()
	var saved map[Segment]Checkpoint
	if b.o.Checkpoint != nil {
		err := b.call(ctx, "LoadBackfillCheckpoint", func() (err error) {
			saved, err = b.o.Checkpoint.Load(ctx, key)
			return err
		})
		if err != nil {
			return BackfillStats{}, fmt.Errorf("ddbindex: backfill of %s: reading checkpoints: %w", key, err)
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
		seg := Segment{Segment: b.o.Segment + i, Total: b.total}
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
		var out *dynamodb.DescribeTableOutput
		err := b.call(ctx, "DescribeTable", func() (err error) {
			out, err = b.describe.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.core.Table())}, b.o.ClientOptions...)
			return err
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
func (b *backfill) scan(ctx context.Context, s segmentStart) error {
	table, key := b.core.Table(), b.core.Key()
	in := &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(b.o.PageSize), ExclusiveStartKey: s.from}
	if b.total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(s.seg.Segment), aws.Int32(s.seg.Total)
	}
	for {
		var out *dynamodb.ScanOutput
		err := b.call(ctx, "Scan", func() (err error) {
			out, err = b.api.Scan(ctx, in, b.o.ClientOptions...)
			return err
		})
		if err != nil {
			return fmt.Errorf("ddbindex: backfill, scanning %s: %w", table, err)
		}
		var page BackfillStats
		for _, img := range out.Items {
			outcome, err := b.core.Item(ctx, img, b.item)
			if err != nil {
				b.report(s.seg, page, false, false) // the item is counted nowhere: it was not backfilled
				return err
			}
			page.Scanned++
			page.count(outcome)
		}
		if b.o.Checkpoint != nil {
			err := b.call(ctx, "SaveBackfillCheckpoint", func() error {
				return b.o.Checkpoint.Save(ctx, key, s.seg, out.LastEvaluatedKey)
			})
			if err != nil {
				b.report(s.seg, page, false, false)
				return fmt.Errorf("ddbindex: backfill of %s: saving the checkpoint of segment %d/%d: %w", key, s.seg.Segment, s.seg.Total, err)
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
func (b *backfill) report(seg Segment, page BackfillStats, last, progress bool) {
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

// wait takes units write units from the rate limit, waiting as long as it
// says: the bridge's ItemOptions.Wait.
func (b *backfill) wait(ctx context.Context, units int) error {
	for units > 0 {
		n := min(units, b.limiter.Burst())
		units -= n
		r := b.limiter.ReserveN(b.o.now(), n) // n <= burst: always ok
		if err := b.o.sleep(ctx, r.DelayFrom(b.o.now())); err != nil {
			r.Cancel()
			return err
		}
	}
	return nil
}

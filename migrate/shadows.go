package migrate

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file holds Shadows, the shadow reads of a migration: a sampled share
// of the pages read from indexes that keep two forms are read again, in the
// background, on the form that did not serve them, and the two compared.
// The read that served the page returns as soon as it is read; its shadow
// read waits for nothing of it.

// ShadowOptions configure [Shadows]. The zero value of each field but Rate
// means its default.
type ShadowOptions struct {
	// Rate is the share of the pages read from indexes that keep two forms
	// that are shadowed, from 0 (none) to 1 (every page).
	Rate float64
	// MaxConcurrent bounds the shadow comparisons in flight; a page sampled
	// while they are all busy is skipped. Default 4.
	MaxConcurrent int
	// MaxReadUnits bounds the read units shadow comparisons spend per
	// second, as estimated by the served page's own cost: a page is
	// compared only when the budget left holds that many units, else it is
	// skipped. The estimate does not count a comparison's re-check (both
	// forms read again after Recheck) nor the base-table reads it makes for
	// items that look deleted: budget for up to three times the pages'
	// cost when mismatches are frequent. Default: no bound.
	MaxReadUnits float64
	// Recheck is how long a mismatch waits before the page is read again on
	// both forms: a GSI is eventually consistent, so a mismatch that is
	// gone then was a GSI catching up (transient). The mismatch is
	// persistent only when the same items still differ in the same way
	// (see [Shadows]); a difference the re-check finds on other items (a
	// write made just before it, still in the lag) does not confirm it.
	// The comparison sees which items differ, not their versions: an item
	// rewritten more often than Recheck, each write still in the lag when
	// a read comes, looks the same at both reads. Default 1 second.
	Recheck time.Duration
	// Timeout bounds one comparison, re-check included. Default 30 seconds.
	Timeout time.Duration
	// Router, when set, makes the shadows follow the control table at run
	// time: an index's shadow rate there (set with [SetShadow], read by
	// the Router's refreshes) replaces Rate for that index, and a page is
	// compared with an index table only once the control table records
	// that its backfill finished (Backfill with [DynamoDBCheckpoints]
	// records it): before, the comparison would report every entry not
	// yet written. Such pages count as Waiting. Rate then applies to the
	// indexes the control table sets no rate for.
	Router *Router
	// OnMismatch receives each mismatch the re-check confirms (persistent),
	// on the comparison's goroutine.
	OnMismatch func(Mismatch)
	// OnError receives the error of each shadow read that failed (the
	// comparison's read of the other form, or its re-check), on the
	// comparison's goroutine: a form that was dropped, a table that does
	// not exist, throttling the SDK's retries did not overcome. The error
	// is a [*ddbindex.Error] as the Table's own reads return them (a failed
	// call to DynamoDB matches [ddbindex.ErrDynamoDB]). A read cut short
	// because Shadows was closed is no failure and does not reach it.
	OnError func(error)
	// MeterProvider receives the metrics ddbindex.migration.shadow_reads and
	// ddbindex.migration.mismatches. Default: none.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span ddbindex.ShadowCompare per comparison,
	// linked to the span of the read it shadows. Default: none.
	TracerProvider trace.TracerProvider
}

// ShadowStats count what [Shadows] did with the pages it sampled.
type ShadowStats struct {
	// Compared counts the pages compared: Equal found the forms equal,
	// Transient found a mismatch that the re-check no longer found (a GSI
	// catching up), Persistent one it found again (OnMismatch received
	// it); the rest could not be re-checked (the re-check's read failed,
	// which Failed counts too, or Shadows was closed meanwhile).
	Compared, Equal, Transient, Persistent int64
	// Skipped counts the pages sampled but not compared: for want of
	// concurrency or read units, or because Shadows was closed.
	Skipped int64
	// Waiting counts the pages sampled but not compared because the
	// control table does not record yet that the index table's backfill
	// finished (see ShadowOptions.Router).
	Waiting int64
	// Failed counts the shadow reads that failed (OnError received each
	// error): a page whose read of the other form failed, which is not
	// compared, and a compared page whose re-check failed. A read that
	// fails on every page says the other form cannot be read: dropped, not
	// yet created, or refused.
	Failed int64
}

// Shadows is a [ddbindex.ReadObserver] that shadows a sampled share of the
// reads of indexes that keep two forms: it reads each sampled page again on
// the other form, on a goroutine of its own, and when the forms differ,
// waits Recheck, reads the page on both forms again, and reports a mismatch
// found again to OnMismatch ([Mismatch]): found again means the same items
// differing in the same way (the same kind of mismatch, on items the first
// comparison named too; the same two items out of order; the same page
// boundary), not any difference on the page. It compares only the
// [ddbindex.ReadEvent]s a Table made. Reads a query
// sent to a form of its choice ([ddbindex.Query.Via]: tests, admin reads,
// comparisons) are not shadowed.
//
// Shadows owns its goroutines: [Shadows.Close] stops taking pages and waits
// for the comparisons in flight. It is safe for concurrent use.
type Shadows struct {
	o     ShadowOptions
	units *rate.Limiter // nil: no read-unit budget

	shadowReads, mismatches metric.Int64Counter // nil: no meter
	tracer                  trace.Tracer        // nil: no tracing

	// sleep waits for the re-check; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	closed   bool
	inflight int
	idle     chan struct{} // closed while no comparison is in flight
	base     context.Context
	cancel   context.CancelFunc
	stats    ShadowStats
}

// NewShadows returns the Shadows that o configures. A Rate that is not a
// number from 0 to 1 (NaN included), a negative MaxConcurrent, Recheck or
// Timeout, or a MaxReadUnits that is negative, NaN or infinite, fails with
// an error matching [ddbindex.ErrDeclaration] (code DDBX-100) that names the
// option; 0 means the default.
func NewShadows(o ShadowOptions) (*Shadows, error) {
	bad := func(format string, args ...any) (*Shadows, error) {
		return nil, declarationErr("NewShadows", format, args...)
	}
	switch {
	case !(o.Rate >= 0 && o.Rate <= 1):
		return bad("ShadowOptions.Rate is %g; want 0 to 1", o.Rate)
	case o.MaxConcurrent < 0:
		return bad("ShadowOptions.MaxConcurrent is %d; it cannot be negative (0 means the default, 4)", o.MaxConcurrent)
	case !(o.MaxReadUnits >= 0) || math.IsInf(o.MaxReadUnits, 1):
		return bad("ShadowOptions.MaxReadUnits is %g; want a number of read units a second (0 means no bound)", o.MaxReadUnits)
	case o.Recheck < 0:
		return bad("ShadowOptions.Recheck is %v; it cannot be negative (0 means the default, 1s)", o.Recheck)
	case o.Timeout < 0:
		return bad("ShadowOptions.Timeout is %v; it cannot be negative (0 means the default, 30s)", o.Timeout)
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = 4
	}
	if o.Recheck == 0 {
		o.Recheck = time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	s := &Shadows{o: o, sleep: retry.Sleep, idle: make(chan struct{}),
		shadowReads: counter(o.MeterProvider, "ddbindex.migration.shadow_reads", "{read}", "Shadow reads sampled: compared, skipped, or failed"),
		mismatches:  counter(o.MeterProvider, "ddbindex.migration.mismatches", "{mismatch}", "Shadow comparisons that found the forms different"),
		tracer:      tracer(o.TracerProvider),
	}
	close(s.idle)
	s.base, s.cancel = context.WithCancel(context.Background())
	if o.MaxReadUnits > 0 {
		s.units = rate.NewLimiter(rate.Limit(o.MaxReadUnits), int(max(1, min(math.Ceil(o.MaxReadUnits), 1<<30))))
	}
	return s, nil
}

// made reports whether s was made by NewShadows: a nil or zero Shadows
// compares nothing and has nothing to wait for.
func (s *Shadows) made() bool { return s != nil && s.idle != nil }

// ObserveRead implements [ddbindex.ReadObserver]: it samples the page, and
// starts its comparison on a goroutine of its own when the concurrency and
// the read-unit budget allow.
func (s *Shadows) ObserveRead(ctx context.Context, ev ddbindex.ReadEvent) {
	if !s.made() {
		return
	}
	rate := s.rate(ev.Table, ev.Index)
	if ev.Admin || rate <= 0 {
		return
	}
	compare := comparison(ev)
	if compare == nil || rand.Float64() >= rate {
		return
	}
	if r := s.o.Router; r != nil && (ev.Form == ddbindex.IndexTable || ev.Other == ddbindex.IndexTable) &&
		!r.backfilled(ev.Table, ev.Index, ddbindex.IndexTable) {
		s.count(func(st *ShadowStats) { st.Waiting++ })
		s.record(ctx, ev, "waiting")
		return
	}
	// The comparison costs about what the read did; the re-check, when
	// needed, twice that again.
	if s.units != nil && !s.units.AllowN(time.Now(), max(1, int(math.Ceil(ev.Stats.ReadUnits)))) {
		s.skip(ctx, ev)
		return
	}
	s.mu.Lock()
	if s.closed || s.inflight >= s.o.MaxConcurrent {
		s.stats.Skipped++
		s.mu.Unlock()
		s.record(ctx, ev, "skipped")
		return
	}
	if s.inflight == 0 {
		s.idle = make(chan struct{})
	}
	s.inflight++
	base := s.base
	s.mu.Unlock()
	link := trace.SpanContextFromContext(ctx)
	go func() {
		defer s.done()
		ctx, cancel := context.WithTimeout(base, s.o.Timeout)
		defer cancel()
		ctx, span := s.span(ctx, ev, link)
		outcome := s.compare(ctx, ev, compare)
		if span != nil {
			span.SetAttributes(attrShadow.String(outcome))
			span.End()
		}
	}()
}

// rate is the share of an index's pages that are shadowed: the control
// table's rate with a Router, when it sets one, else Rate.
func (s *Shadows) rate(table, index string) float64 {
	if s.o.Router != nil {
		if r, ok := s.o.Router.shadowRate(table, index); ok {
			return r
		}
	}
	return s.o.Rate
}

// shadows reports whether an index's pages are shadowed at all.
func (s *Shadows) shadows(table, index string) bool {
	return s.made() && s.rate(table, index) > 0
}

// done ends a comparison.
func (s *Shadows) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 {
		close(s.idle)
	}
}

// skip counts a sampled page that is not compared.
func (s *Shadows) skip(ctx context.Context, ev ddbindex.ReadEvent) {
	s.mu.Lock()
	s.stats.Skipped++
	s.mu.Unlock()
	s.record(ctx, ev, "skipped")
}

// compare compares the page, and re-checks a mismatch after Recheck. It
// returns the outcome, for the comparison's span: "skipped", "failed" (the
// read of the other form, or the re-check's, failed), "equal",
// "transient", "persistent", or "unconfirmed" when Shadows was closed
// before the re-check ended.
func (s *Shadows) compare(ctx context.Context, ev ddbindex.ReadEvent, compare func(context.Context, bool) (*Mismatch, error)) string {
	first, err := compare(ctx, false)
	if err != nil {
		if s.closing() {
			s.skip(ctx, ev)
			return "skipped"
		}
		s.fail(ctx, ev, err)
		return "failed"
	}
	s.count(func(st *ShadowStats) { st.Compared++ })
	s.record(ctx, ev, "compared")
	if first == nil {
		s.count(func(st *ShadowStats) { st.Equal++ })
		return "equal"
	}
	if s.sleep(ctx, s.o.Recheck) != nil {
		return "unconfirmed"
	}
	again, err := compare(ctx, true)
	if err != nil {
		if s.closing() {
			return "unconfirmed"
		}
		s.fail(ctx, ev, err)
		return "failed"
	}
	confirmed := persists(first, again)
	if confirmed == nil {
		s.count(func(st *ShadowStats) { st.Transient++ })
		s.mismatch(ctx, ev, first.Kind, "transient")
		return "transient"
	}
	s.count(func(st *ShadowStats) { st.Persistent++ })
	s.mismatch(ctx, ev, confirmed.Kind, "persistent")
	if s.o.OnMismatch != nil {
		s.o.OnMismatch(*confirmed)
	}
	return "persistent"
}

// persists returns the part of a page's first mismatch that its re-check
// found again, nil when there is none. The re-check reads the whole page on
// both forms again, and under steady writes it may find a difference of its
// own: a write made in the lag window just before it. That is no evidence
// that the first difference stays, so a mismatch persists only when the
// same items still differ in the same way: the same kind, and for a
// missing, extra or leaked item the items both reads name (the confirmed
// mismatch names those alone); for an order, the same two items; for a
// page boundary, the same page and ends. A difference of another kind, or
// on other items, makes the first one transient.
func persists(first, again *Mismatch) *Mismatch {
	if first == nil || again == nil || first.Kind != again.Kind {
		return nil
	}
	switch first.Kind {
	case MismatchOrder:
		if !slices.Equal(first.Keys, again.Keys) {
			return nil
		}
		return again
	case MismatchPageBoundary:
		if first.Detail != again.Detail || !slices.Equal(first.Keys, again.Keys) {
			return nil
		}
		return again
	}
	var shared []string
	for _, k := range again.Keys {
		if slices.Contains(first.Keys, k) && !slices.Contains(shared, k) {
			shared = append(shared, k)
		}
	}
	if len(shared) == 0 {
		return nil
	}
	m := *again
	m.Keys = shared
	return &m
}

// closing reports whether Close canceled the comparisons: a read that
// failed then was cut short, and did not fail on its own.
func (s *Shadows) closing() bool { return s.base.Err() != nil }

// fail counts a shadow read that failed, and hands its error to OnError.
func (s *Shadows) fail(ctx context.Context, ev ddbindex.ReadEvent, err error) {
	s.count(func(st *ShadowStats) { st.Failed++ })
	add(ctx, s.shadowReads, attrTable.String(ev.Table), attrIndex.String(ev.Index), attrForm.String(ev.Other.String()),
		attrOperation.String("Shadow"), attrShadow.String("failed"), attrErrorType.String(errorType(err)))
	if s.o.OnError != nil {
		s.o.OnError(err)
	}
}

func (s *Shadows) count(fn func(*ShadowStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.stats)
}

// Stats returns what Shadows did so far.
func (s *Shadows) Stats() ShadowStats {
	if !s.made() {
		return ShadowStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Wait waits until no comparison is in flight, or ctx is done, and then
// returns ctx.Err() as it is (no code: the caller's own context ended);
// Shadows goes on taking pages.
func (s *Shadows) Wait(ctx context.Context) error {
	if !s.made() {
		return nil
	}
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking pages (they count as skipped) and waits until the
// comparisons in flight have ended. When ctx is done first, it cancels
// them, waits until they have ended all the same, and returns ctx's error.
// No goroutine of Shadows runs once Close has returned; calling it again
// waits for nothing.
func (s *Shadows) Close(ctx context.Context) error {
	if !s.made() {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		<-idle
		return ctx.Err()
	}
}

// record counts a shadow read in ddbindex.migration.shadow_reads; the form
// is the shadow form.
func (s *Shadows) record(ctx context.Context, ev ddbindex.ReadEvent, outcome string) {
	add(ctx, s.shadowReads, attrTable.String(ev.Table), attrIndex.String(ev.Index), attrForm.String(ev.Other.String()),
		attrOperation.String("Shadow"), attrShadow.String(outcome))
}

// mismatch counts a mismatch in ddbindex.migration.mismatches; the form is
// the shadow form.
func (s *Shadows) mismatch(ctx context.Context, ev ddbindex.ReadEvent, kind MismatchKind, persistence string) {
	add(ctx, s.mismatches, attrTable.String(ev.Table), attrIndex.String(ev.Index), attrForm.String(ev.Other.String()),
		attrOperation.String("Shadow"), attrMismatch.String(string(kind)), attrPersistence.String(persistence))
}

// span starts the span of a comparison, linked to the span of the read it
// shadows; nil when nothing traces.
func (s *Shadows) span(ctx context.Context, ev ddbindex.ReadEvent, link trace.SpanContext) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	var opts []trace.SpanStartOption
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	ctx, span := s.tracer.Start(ctx, "ddbindex.ShadowCompare", opts...)
	if !span.IsRecording() {
		return ctx, nil
	}
	span.SetAttributes(attrDBSystem.String("aws.dynamodb"), attrTable.String(ev.Table), attrIndex.String(ev.Index),
		attrForm.String(ev.Form.String()), attrShadowForm.String(ev.Other.String()), attribute.String("ddbindex.query", ev.Query))
	return ctx, span
}

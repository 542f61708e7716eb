package ddbindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	_ "time/tzdata" // the property test's named zones, the same on every machine

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of time keys: a time.Time key component has one key,
// whichever path derives it. A GSI key is derived from the value when the
// item is marshalled; an index-table key from the stored attribute (stream,
// Apply, Backfill, write-through). The library refuses, before any
// request, a time whose stored text does not read back as the same instant,
// so the two keys cannot differ.

// tkGSI keys three GSIs by a time: RFC 3339 (the default), unixms, and a
// dynamodbav:",unixtime" field (stored as epoch seconds), in the default format.
// Note holds a nested time that is no key at all.
type tkGSI struct {
	_    TableSpec `ddbindex:"tk-events"`
	_    IndexSpec `ddbindex:"by_at,type=gsi,pk=GPK,sk=GSK"`
	_    IndexSpec `ddbindex:"by_ms,type=gsi,pk=MPK,sk=MSK"`
	_    IndexSpec `ddbindex:"by_sec,type=gsi,pk=SPK,sk=SSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"by_at.pk;by_ms.pk;by_sec.pk"`
	At   time.Time `dynamodbav:"at" ddbindex:"by_at.sk"`
	Ms   time.Time `dynamodbav:"ms" ddbindex:"by_ms.sk,format=unixms"`
	Sec  time.Time `dynamodbav:"sec,unixtime" ddbindex:"by_sec.sk"`
	Note tkNote    `dynamodbav:"note"`
}

type tkNote struct {
	When time.Time `dynamodbav:"when"`
}

// tkTable is the same model with the three indexes as index tables, one
// token apart, keyed by the same attribute names.
type tkTable struct {
	_    TableSpec `ddbindex:"tk-events"`
	_    IndexSpec `ddbindex:"by_at,type=table,pk=GPK,sk=GSK"`
	_    IndexSpec `ddbindex:"by_ms,type=table,pk=MPK,sk=MSK"`
	_    IndexSpec `ddbindex:"by_sec,type=table,pk=SPK,sk=SSK"`
	ID   string    `dynamodbav:"id" ddbindex:"pk"`
	Feed string    `dynamodbav:"feed" ddbindex:"by_at.pk;by_ms.pk;by_sec.pk"`
	At   time.Time `dynamodbav:"at" ddbindex:"by_at.sk"`
	Ms   time.Time `dynamodbav:"ms" ddbindex:"by_ms.sk,format=unixms"`
	Sec  time.Time `dynamodbav:"sec,unixtime" ddbindex:"by_sec.sk"`
	Note tkNote    `dynamodbav:"note"`
}

var tkIndexes = []struct{ name, pk, sk string }{{"by_at", "GPK", "GSK"}, {"by_ms", "MPK", "MSK"}, {"by_sec", "SPK", "SSK"}}

// tkZones are zones with offsets that RFC 3339 cannot write (seconds: local
// mean time before standard zones), that change a date (far east and west),
// and that are ordinary.
func tkZones(t testing.TB) []*time.Location {
	t.Helper()
	zones := []*time.Location{time.UTC, time.FixedZone("LMT", 19*60+32), time.FixedZone("IST", 5*3600+30*60),
		time.FixedZone("EST", -5*3600), time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600)}
	for _, name := range []string{"Europe/Amsterdam", "Africa/Monrovia", "America/New_York", "Asia/Kolkata",
		"Asia/Kathmandu", "Australia/Lord_Howe", "Pacific/Kiritimati", "America/St_Johns", "Europe/Dublin"} {
		loc, err := time.LoadLocation(name)
		require.NoError(t, err)
		zones = append(zones, loc)
	}
	return zones
}

// tkInstant returns a random instant, often at the edges of the documented
// range (years 0000-9999 UTC) or in the era of local mean time.
func tkInstant(r *rand.Rand) time.Time {
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	near := func(at time.Time) time.Time {
		return at.Add(time.Duration(r.Int64N(4*24*int64(time.Hour))) - 2*24*time.Hour)
	}
	switch r.IntN(6) {
	case 0:
		return near(lo)
	case 1:
		return near(hi)
	case 2:
		return []time.Time{{}, lo, hi, time.Date(1900, 1, 1, 12, 0, 0, 0, time.UTC), time.Unix(0, 0).UTC()}[r.IntN(5)]
	case 3: // local mean time and early standard zones
		return time.Date(1850+r.IntN(130), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e9), time.UTC)
	}
	return time.Unix(lo.Unix()+r.Int64N(hi.Unix()-lo.Unix()), r.Int64N(1e9)).UTC()
}

// tkRoundTrips is the rule, stated independently: attributevalue's text of
// x reads back as x.
func tkRoundTrips(x time.Time) bool {
	back, err := time.Parse(time.RFC3339, x.Format(time.RFC3339Nano))
	return err == nil && back.Equal(x)
}

func tkInRange(x time.Time) bool { y := x.UTC().Year(); return y >= 0 && y <= 9999 }

// tkCapture is a Client and scanAPI without a server: Scan returns items,
// PutItem records what it was asked to write.
type tkCapture struct {
	wrNoClient
	items []map[string]types.AttributeValue
	puts  []*dynamodb.PutItemInput
}

func (c *tkCapture) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{Items: c.items}, nil
}

func (c *tkCapture) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts = append(c.puts, in)
	return &dynamodb.PutItemOutput{}, nil
}

// TestTimeKeysSameFromEveryPath is the property: for random instants in
// random zones, either the library refuses the item before any request
// (ErrInvalidWrite), exactly when attributevalue's text does not read back
// as the same instant (or a key cannot hold it), or the GSI key from
// Marshal, the index-table key that IndexWrites derives from the stored
// image, and the key Backfill writes from the scanned image are one string,
// and the stored item reads back as the same instants.
func TestTimeKeysSameFromEveryPath(t *testing.T) {
	t.Parallel()
	g := newKBGen(t)
	zones := tkZones(t)
	gsi, err := New[tkGSI](nil)
	require.NoError(t, err)
	refused, accepted := 0, 0
	for i := range 4000 {
		tm := tkInstant(g.r).In(zones[g.r.IntN(len(zones))])
		ev := tkGSI{ID: fmt.Sprint("e", i), Feed: "f", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			Ms: time.UnixMilli(1733000000000).UTC(), Sec: time.Unix(1733000000, 0).UTC(), Note: tkNote{When: time.Unix(0, 0).UTC()}}
		// The zoned time goes into one or more fields, precision matched
		// to the field most of the time.
		switch g.r.IntN(5) {
		case 0:
			ev.At = tm
		case 1:
			ev.Ms = tm.Truncate(time.Millisecond)
			if g.r.IntN(4) == 0 {
				ev.Ms = tm
			}
		case 2:
			ev.Sec = tm.Truncate(time.Second)
			if g.r.IntN(4) == 0 {
				ev.Sec = tm
			}
		case 3:
			ev.Note.When = tm
		default:
			ev.At, ev.Ms, ev.Sec, ev.Note.When = tm, tm.Truncate(time.Millisecond), tm.Truncate(time.Second), tm
		}
		want := tkRoundTrips(ev.At) && tkRoundTrips(ev.Ms) && tkRoundTrips(ev.Note.When) &&
			tkInRange(ev.At) && tkInRange(ev.Ms) && tkInRange(ev.Sec) &&
			ev.Ms.Nanosecond()%int(time.Millisecond) == 0 && ev.Sec.Nanosecond() == 0

		img, err := gsi.Marshal(ev)
		if !want {
			require.ErrorIs(t, err, ErrInvalidWrite, "item %d: %+v", i, ev)
			refused++
			for _, wt := range []bool{false, true} {
				cl := &wrNoClient{}
				tb, err := New[tkGSI](cl, func(o *Options) { o.WriteThrough = wt })
				require.NoError(t, err)
				_, err = tb.Put(t.Context(), ev)
				require.ErrorIs(t, err, ErrInvalidWrite)
				tt, err := New[tkTable](cl, func(o *Options) { o.WriteThrough = wt })
				require.NoError(t, err)
				_, err = tt.Put(t.Context(), tkTable(ev))
				require.ErrorIs(t, err, ErrInvalidWrite)
				require.Zero(t, cl.calls.Load(), "refused before any request")
			}
			continue
		}
		require.NoError(t, err, "item %d: %+v", i, ev)
		accepted++

		var back tkGSI
		require.NoError(t, attributevalue.UnmarshalMap(img, &back))
		require.True(t, back.At.Equal(ev.At) && back.Ms.Equal(ev.Ms) && back.Sec.Equal(ev.Sec) && back.Note.When.Equal(ev.Note.When),
			"item %d reads back as other instants: %+v, stored %+v", i, back, ev)

		cl := &tkCapture{items: []map[string]types.AttributeValue{img}}
		tab, err := New[tkTable](cl)
		require.NoError(t, err)
		writes, err := tab.IndexWrites(Change{New: img, Version: "1"})
		require.NoError(t, err)
		require.Len(t, writes, len(tkIndexes))
		byIndex := map[string]IndexWrite{}
		for _, w := range writes {
			byIndex[w.Index] = w
		}
		for _, ix := range tkIndexes {
			cl.puts = nil
			st, err := fillIndex(t.Context(), tab, cl, ix.name)
			require.NoError(t, err)
			require.Equal(t, 1, st.Written)
			for _, attr := range []string{ix.pk, ix.sk} {
				require.Equal(t, img[attr], byIndex[ix.name].Item[attr], "item %d %s.%s: GSI (Marshal) and index table (IndexWrites)", i, ix.name, attr)
				require.Equal(t, img[attr], cl.puts[0].Item[attr], "item %d %s.%s: GSI (Marshal) and index table (Backfill)", i, ix.name, attr)
			}
		}
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
	require.Positive(t, refused)
	require.Positive(t, accepted)
}

// TestTimeKeysRefusalNamesTheCause checks the messages of the examples in
// the issue: an offset with seconds, and years that leave 0000-9999 in the
// value's zone.
func TestTimeKeysRefusalNamesTheCause(t *testing.T) {
	t.Parallel()
	gsi, err := New[tkGSI](nil)
	require.NoError(t, err)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	base := tkGSI{ID: "e", Feed: "f", At: time.Unix(0, 0).UTC(), Ms: time.Unix(0, 0).UTC(), Sec: time.Unix(0, 0).UTC()}
	for _, tc := range []struct {
		name string
		set  func(*tkGSI)
		want []string
	}{
		{"offset with seconds", func(e *tkGSI) { e.At = time.Date(1900, 1, 1, 12, 0, 0, 0, time.FixedZone("LMT", 19*60+32)) },
			[]string{`"1900-01-01T12:00:00+00:19"`, "reads back as 1900-01-01T11:41:00Z, another instant", "offset has seconds", "convert it to UTC"}},
		{"time.Time{} in New York", func(e *tkGSI) { e.Note.When = time.Time{}.In(ny) }, // not a key: still refused
			[]string{"another instant", "convert it to UTC"}},
		{"year 10000 in +05:30", func(e *tkGSI) {
			e.At = time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("IST", 5*3600+1800))
		},
			[]string{`"10000-01-01T04:30:00+05:30"`, "years 0000-9999", "convert it to UTC"}},
		{"year -1 in -05:00", func(e *tkGSI) { e.Ms = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).In(time.FixedZone("EST", -5*3600)) },
			[]string{`"-0001-12-31T19:00:00-05:00"`, "years 0000-9999", "convert it to UTC"}},
		{"year 10000 in UTC", func(e *tkGSI) { e.Note.When = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
			[]string{"UTC year 10000 is outside that range too"}},
		{"unixtime with nanoseconds", func(e *tkGSI) { e.Sec = time.Unix(1733000000, 5).UTC() },
			[]string{"tkGSI.Sec is stored as whole epoch seconds", "truncate it to the second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := base
			tc.set(&ev)
			_, err := gsi.Marshal(ev)
			require.ErrorIs(t, err, ErrInvalidWrite)
			require.Equal(t, "DDBX-603", Code(err))
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// TestTimeKeysGSIAndIndexTableAgree writes items whose times are in
// awkward but storable zones (offsets of 5:45 and -9:30, the date line,
// one instant in several zones, the edges of the year range) through the
// GSI model, fills the index tables from the stored items (Backfill, the
// index-table path), and compares every index through both types: items,
// order, Eq, Exists and page boundaries (cursors) agree. Times the library
// cannot store are refused and leave nothing behind.
func TestTimeKeysGSIAndIndexTableAgree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	gsi, c := newTestTable[tkGSI](t)
	table, err := New[tkTable](c, func(o *Options) { o.TableName = gsi.opts.TableName })
	require.NoError(t, err)
	for _, in := range tableInputs(table, false)[1:] {
		ddbtest.CreateTable(t, c, in)
	}
	zones := []*time.Location{time.UTC, time.FixedZone("NPT", 5*3600+45*60), time.FixedZone("MART", -(9*3600 + 30*60)),
		time.FixedZone("LINT", 14*3600), time.FixedZone("west", -12*3600)}
	noon := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	instants := []time.Time{
		noon, noon.Add(time.Nanosecond), noon.Add(-time.Nanosecond), noon.Add(time.Millisecond), noon.Add(time.Second),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1900, 1, 1, 11, 40, 28, 0, time.UTC), // the LMT instant, in UTC as the error asks
	}
	var items []tkGSI
	for i, at := range instants {
		for j, z := range zones {
			tm := at.In(z)
			if !tkRoundTrips(tm) {
				continue // the year range edges leave 0000-9999 in far zones: refused, below
			}
			ev := tkGSI{ID: fmt.Sprintf("e%02d-%d", i, j), Feed: "f", At: tm, Ms: tm.Truncate(time.Millisecond), Sec: tm.Truncate(time.Second), Note: tkNote{When: tm}}
			_, err := gsi.Put(ctx, ev)
			require.NoError(t, err, "%v", tm)
			items = append(items, ev)
		}
	}
	require.Greater(t, len(items), 30)
	for _, bad := range []time.Time{
		time.Date(1900, 1, 1, 12, 0, 0, 0, time.FixedZone("LMT", 19*60+32)),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("IST", 5*3600+1800)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).In(time.FixedZone("EST", -5*3600)),
	} {
		_, err := gsi.Put(ctx, tkGSI{ID: "bad", Feed: "f", At: bad, Ms: bad, Sec: bad, Note: tkNote{When: bad}})
		require.ErrorIs(t, err, ErrInvalidWrite, "%v", bad)
	}
	for _, ix := range tkIndexes {
		st, err := fillIndex(ctx, table, c, ix.name)
		require.NoError(t, err)
		require.Equal(t, fillStats{Scanned: len(items), Written: len(items)}, st, "nothing refused was stored")
	}

	var queries []Query[tkGSI]
	for _, ix := range tkIndexes {
		q := gsi.Query(ix.name, "f")
		queries = append(queries, q.Limit(4), q.Desc().Limit(3), q.Limit(1))
	}
	other := noon.In(time.FixedZone("NPT", 5*3600+45*60)) // the same instant, another zone
	queries = append(queries,
		gsi.Query("by_at", "f").Where(Eq(other)).Limit(2),
		gsi.Query("by_at", "f").Where(Lt(noon)).Desc().Limit(2),
		gsi.Query("by_at", "f").Where(Between(noon.Add(-time.Nanosecond), noon.Add(time.Nanosecond))).Limit(2),
		gsi.Query("by_ms", "f").Where(Ge(noon.Add(time.Millisecond))).Limit(2),
		gsi.Query("by_sec", "f").Where(Eq(noon)).Limit(3),
	)
	for i, q := range queries {
		cmp := mgCompare(t, q, table, func(e tkTable) tkGSI { return tkGSI(e) })
		require.True(t, cmp.Equal(), "query %d: %v", i, cmp.Differences)
		require.Positive(t, cmp.Items, "query %d", i)
	}

	// Eq by the instant in any zone finds every item stored at it, in
	// either index type.
	want := 0
	for _, it := range items {
		if it.At.Equal(noon) {
			want++
		}
	}
	for _, tq := range []Query[tkTable]{table.Query("by_at", "f").Where(Eq(other))} {
		var got []tkTable
		for it, err := range tq.All(ctx) {
			require.NoError(t, err)
			require.True(t, it.At.Equal(noon))
			got = append(got, it)
		}
		require.Len(t, got, want)
		ok, err := tq.Exists(ctx)
		require.NoError(t, err)
		require.True(t, ok)
	}
	var got []tkGSI
	for it, err := range gsi.Query("by_at", "f").Where(Eq(other)).All(ctx) {
		require.NoError(t, err)
		got = append(got, it)
	}
	require.Len(t, got, want)
}

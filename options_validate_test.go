package ddbindex

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBackfillOptionsValidate: Validate is the check Backfill makes, each
// rule stated with the option and its value.
func TestBackfillOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []BackfillOptions{{}, {Workers: 8}, {Segment: 4, TotalSegments: 8, Workers: 4}, {TotalSegments: 1000000},
		{Workers: 1000000}, {WriteUnitsPerSecond: 0.5}, {PageSize: 1}} {
		require.NoError(t, ok.Validate(), "%+v", ok)
	}
	for _, bad := range []struct {
		o    BackfillOptions
		want string
	}{
		{BackfillOptions{Workers: -1}, "Workers -1: want 1 to 1000000"},
		{BackfillOptions{Workers: 1000001}, "Workers 1000001: want 1 to 1000000"},
		{BackfillOptions{PageSize: -1}, "PageSize -1: want 1 or more"},
		{BackfillOptions{TotalSegments: -1}, "TotalSegments -1: want 0 to 1000000"},
		{BackfillOptions{TotalSegments: 1000001}, "TotalSegments 1000001: want 0 to 1000000"},
		{BackfillOptions{WriteUnitsPerSecond: math.NaN()}, "WriteUnitsPerSecond NaN: want a finite number"},
		{BackfillOptions{WriteUnitsPerSecond: math.Inf(1)}, "WriteUnitsPerSecond +Inf: want a finite number"},
		{BackfillOptions{WriteUnitsPerSecond: -5}, "WriteUnitsPerSecond -5: want a finite number, 0 (no cap) or more"},
		{BackfillOptions{Segment: 3}, "Segment 3 without TotalSegments"},
		{BackfillOptions{Segment: 5, TotalSegments: 2}, "Segment 5 with Workers 1 scans segments 5 to 5, not all within TotalSegments 2"},
		{BackfillOptions{Segment: -1, TotalSegments: 4}, "Segment -1 with Workers 1"},
	} {
		err := bad.o.Validate()
		require.ErrorIs(t, err, ErrInvalidWrite, "%+v", bad.o)
		require.ErrorContains(t, err, bad.want)
	}
}

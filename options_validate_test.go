package ddbindex

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRouteValidate: Validate is the check SetRoute makes, each rule
// stated with the field and its value. (Backfill's options are checked in
// package migrate.)
func TestRouteValidate(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, Route{To: GSI, Percent: math.NaN()}.Validate(), ErrInvalidQuery)
	require.ErrorContains(t, Route{To: GSI, Percent: 101}.Validate(), "Percent 101: want 0 to 100")
	require.NoError(t, Route{To: IndexTable, Percent: 100}.Validate())
}

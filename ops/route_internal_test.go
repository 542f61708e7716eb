package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
)

// TestRouteTextOneForm: routeText, which route show and route set print,
// never reads a second form an index does not keep: an index of one form
// (or, from a caller's value, of none) is said to have nothing to route,
// whatever route is given.
func TestRouteTextOneForm(t *testing.T) {
	t.Parallel()
	one := ddbindex.IndexInfo{Name: "by_author", Forms: []ddbindex.IndexForm{{Kind: ddbindex.GSI, Table: "notes", Index: "by_author"}}}
	for _, r := range []migrate.Route{{}, {To: ddbindex.GSI, Percent: 100}, {To: ddbindex.IndexTable, Partitions: []string{"a"}}} {
		for _, ok := range []bool{false, true} {
			require.Equal(t, "type=gsi; it keeps one form, which every read uses: nothing to route", routeText(one, r, ok, "control"))
			require.Equal(t, "it keeps no form: nothing to route", routeText(ddbindex.IndexInfo{}, r, ok, "control"))
		}
	}
	two := ddbindex.IndexInfo{Name: "by_status", Forms: []ddbindex.IndexForm{{Kind: ddbindex.GSI}, {Kind: ddbindex.IndexTable}}}
	require.Equal(t, "type=gsi, keep=table; route: every partition reads the table",
		routeText(two, migrate.Route{To: ddbindex.IndexTable, Percent: 100}, true, "control"))
}

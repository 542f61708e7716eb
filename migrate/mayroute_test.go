package migrate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// opaqueRouter is a Router that cannot say where it sends reads.
type opaqueRouter struct{}

func (opaqueRouter) Route(string, string, string, [2]ddbindex.Kind) (ddbindex.Kind, bool) {
	return 0, false
}

// MayRoute says whether any partition's read may go to a form: a route
// that names one of the index's forms decides; without one, the declared
// type serves (static Routes, a Router without Fallback), or the Fallback
// decides (true when it cannot say).
func TestMayRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	forms := [2]ddbindex.Kind{ddbindex.IndexTable, ddbindex.GSI} // type=table,keep=gsi
	cases := []struct {
		name  string
		route *Route
		gsi   bool // may a read go to the GSI
		table bool // may a read go to the table
	}{
		{"no route: the declared table", nil, false, true},
		{"a route to a form the index does not keep", &Route{To: ddbindex.LSI, Percent: 100}, false, true},
		{"every partition to the table", &Route{To: ddbindex.IndexTable, Percent: 100}, false, true},
		{"half to the table", &Route{To: ddbindex.IndexTable, Percent: 50}, true, true},
		{"one partition to the GSI", &Route{To: ddbindex.GSI, Partitions: []string{"TEAM-1"}}, true, true},
		{"nothing selected for the GSI: all to the table", &Route{To: ddbindex.GSI}, false, true},
		{"every partition to the GSI", &Route{To: ddbindex.GSI, Percent: 100}, true, false},
	}
	for _, tc := range cases {
		rs := Routes{}
		if tc.route != nil {
			rs["tickets/by_status"] = *tc.route
		}
		for _, want := range []struct {
			form ddbindex.Kind
			may  bool
		}{{ddbindex.GSI, tc.gsi}, {ddbindex.IndexTable, tc.table}} {
			got, err := rs.MayRoute(ctx, "tickets", "by_status", want.form, forms)
			require.NoError(t, err)
			assert.Equal(t, want.may, got, "Routes, %s: %s", tc.name, want.form)

			fc := &fakeControl{}
			r, err := NewRouter(fc, RouterOptions{ControlTable: "control"})
			require.NoError(t, err)
			if tc.route != nil && tc.route.To != ddbindex.LSI {
				require.NoError(t, r.put(ctx, "tickets", "by_status", *tc.route, nil))
			}
			got, err = r.MayRoute(ctx, "tickets", "by_status", want.form, forms)
			require.NoError(t, err)
			assert.Equal(t, want.may, got, "Router, %s: %s", tc.name, want.form)
		}
	}

	// Without a route in the control table, the Fallback decides.
	r, err := NewRouter(&fakeControl{}, RouterOptions{ControlTable: "control", Fallback: Routes{"tickets/by_status": {To: ddbindex.GSI, Percent: 100}}})
	require.NoError(t, err)
	may, err := r.MayRoute(ctx, "tickets", "by_status", ddbindex.IndexTable, forms)
	require.NoError(t, err)
	assert.False(t, may, "the static Fallback sends every read to the GSI")
	r, err = NewRouter(&fakeControl{}, RouterOptions{ControlTable: "control", Fallback: opaqueRouter{}})
	require.NoError(t, err)
	may, err = r.MayRoute(ctx, "tickets", "by_status", ddbindex.GSI, forms)
	require.NoError(t, err)
	assert.True(t, may, "a Fallback that cannot say may send reads anywhere")
}

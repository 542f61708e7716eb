package migrate

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
)

// TestRouteValidate: Validate is the check SetRoute and Routes.Validate
// make, each rule stated with its value, matching ErrInvalidQuery.
func TestRouteValidate(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, Route{To: ddbindex.GSI, Percent: math.NaN()}.Validate(), ddbindex.ErrInvalidQuery)
	require.ErrorContains(t, Route{To: ddbindex.GSI, Percent: 101}.Validate(), "Percent 101: want 0 to 100")
	require.ErrorContains(t, Route{To: ddbindex.GSI, Percent: -1}.Validate(), "Percent -1: want 0 to 100")
	require.ErrorContains(t, Route{To: ddbindex.BaseTable}.Validate(), "To is base; want GSI, LSI, IndexTable or NativeGSI")
	require.ErrorContains(t, Route{To: ddbindex.GSI, Partitions: []string{"a", ""}}.Validate(), "an empty partition key")
	require.Equal(t, "DDBX-200", ddbindex.Code(Route{To: 9}.Validate()))
	require.NoError(t, Route{To: ddbindex.IndexTable, Percent: 100}.Validate())
	require.NoError(t, Route{To: ddbindex.LSI, Partitions: []string{"a"}}.Validate())

	require.NoError(t, Routes{}.Validate())
	require.NoError(t, Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable}}.Validate())
	for key, want := range map[string]string{
		"by_status":   "the key must be TABLE/INDEX",
		"/by_status":  "the key must be TABLE/INDEX",
		"kp-tickets/": "the key must be TABLE/INDEX",
	} {
		err := Routes{key: {To: ddbindex.IndexTable}}.Validate()
		require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, key)
		require.ErrorContains(t, err, want, key)
	}
	err := Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Percent: 120}}.Validate()
	require.ErrorIs(t, err, ddbindex.ErrInvalidQuery)
	require.ErrorContains(t, err, `Routes["kp-tickets/by_status"]: route: Percent 120: want 0 to 100`)
}

// Static routes: one tenant first, a stable share that widening keeps,
// Via before the routes, and routes that name forms, so that they mean the
// same at step 1 and step 2, and nothing to a step that does not keep the
// form. (Explain sends nothing: no server needed.)
func TestRoutes(t *testing.T) {
	t.Parallel()
	open := func(rs Routes) *ddbindex.Table[kpStep1] {
		t.Helper()
		require.NoError(t, rs.Validate())
		tb, err := ddbindex.New[kpStep1](nil, func(o *ddbindex.Options) { o.Router = rs })
		require.NoError(t, err)
		return tb
	}
	acme := Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"acme"}}}
	static := open(acme)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, static, "acme"))
	assert.Equal(t, ddbindex.GSI, formOf(t, static, "globex"))
	e, err := static.Query("by_status", "acme").Via(ddbindex.GSI).Explain()
	require.NoError(t, err)
	assert.Equal(t, ddbindex.GSI, e.Request.Kind, "Via overrides the routes")
	assert.Equal(t, ddbindex.GSI, formOf(t, open(Routes{"other-table/by_status": acme["kp-tickets/by_status"]}), "acme"),
		"a route of another table's index does not apply")
	assert.Equal(t, ddbindex.GSI, formOf(t, open(nil), "acme"), "no routes: the declared type")

	// Percent: a stable share, and widening keeps the partitions already moved.
	share := func(p float64) map[string]bool {
		tb := open(Routes{"kp-tickets/by_status": {To: ddbindex.IndexTable, Percent: p}})
		moved := map[string]bool{}
		for i := range 2000 {
			team := fmt.Sprintf("team-%d", i)
			if formOf(t, tb, team) == ddbindex.IndexTable {
				moved[team] = true
			}
		}
		return moved
	}
	ten, fifty, all := share(10), share(50), share(100)
	assert.InDelta(t, 200, len(ten), 60, "10%% of 2000 partitions")
	assert.InDelta(t, 1000, len(fifty), 100, "50%% of 2000 partitions")
	assert.Len(t, all, 2000)
	for team := range ten {
		assert.True(t, fifty[team], "%s moved at 10%% but not at 50%%", team)
	}
	assert.Empty(t, share(0))

	// Step 2 reads the same routes: the unselected partitions read the
	// other form, the GSI.
	s2, err := ddbindex.New[kpStep2](nil, func(o *ddbindex.Options) { o.Router = acme })
	require.NoError(t, err)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s2, "acme"))
	assert.Equal(t, ddbindex.GSI, formOf(t, s2, "globex"), "step 2 sends the unselected partitions to the other form, the GSI")

	// Step 3 keeps no GSI: a route to the GSI cannot apply.
	toGSI := Routes{"kp-tickets/by_status": {To: ddbindex.GSI, Percent: 100}}
	s3, err := ddbindex.New[kpStep3](nil, func(o *ddbindex.Options) { o.Router = toGSI })
	require.NoError(t, err)
	assert.Equal(t, ddbindex.IndexTable, formOf(t, s3, "acme"), "a route to a form not kept is ignored")
	assert.Equal(t, ddbindex.GSI, formOf(t, open(toGSI), "acme"))
	lsi := open(Routes{"kp-tickets/by_status": {To: ddbindex.LSI, Percent: 100}})
	assert.Equal(t, ddbindex.GSI, formOf(t, lsi, "acme"), "an LSI is not kept either: the declared type")
}
